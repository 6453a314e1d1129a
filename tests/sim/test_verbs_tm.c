/* SPDX-License-Identifier: MIT */
/*
 * Tag-matching SRQs (docs/matching.md "Tag-matching verbs", hw-spec
 * 16.15): the verbs engine's IBV_SRQT_TM on the seed 001 matching engine.
 * Eager messages matched into tagged buffers (one and several packets),
 * unexpected messages with the phase sync (items 108, 109), NO_TAG, a
 * TAG_DEL that loses the race with an arrival (TM_ERR), random tags and
 * masks against a reference, hostile tag operations and headers, and the
 * adapter's RVH rendezvous (READ, FIN, lossy fabric, refusals, races).
 * Usage: sim-verbs-tm CASE (meson runs each case as its own test).
 */
#include "vt.h"
#include "weft/match.h"

#define MS              1000000ull
#define SRQN            7u
#define TMCQ            2u
#define SLOT            8192u   /* bytes per buffer */
#define MAXTAGS         64u

struct ctx {
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_srq srq;             /* on node b, plain WQEs */
	struct wsv_cq tcq;              /* b's CQ of every TM completion */
	struct wsv_qp qa, qb;
	uint64_t ops;                   /* tag-operation ring on b */
	uint32_t op_prod, op_log2;
};

static void run_for(struct weft_sim *s, uint64_t ns)
{
	weft_sim_run_until(s, NULL, NULL, weft_sim_now(s) + ns);
}

/* TM SRQ command on b; returns the CMD status, reason in *why. */
static int tm_srq_create(struct ctx *x, uint32_t srqn, uint32_t max_tags, uint32_t cq,
			 uint8_t log2, unsigned int *why)
{
	struct weft_vcmd k = { .op = WEFT_VCMD_CREATE_SRQ, .handle = srqn };
	struct weft_vcmd_resp r;
	int st;

	memset(&x->srq, 0, sizeof(x->srq));
	x->srq.node = 1;
	x->srq.srqn = srqn;
	x->srq.log2 = 5;
	x->srq.stride = 8;
	x->srq.ring = weft_sim_alloc(x->s, 1, 1ull << 13, 4096);
	x->srq.ci_addr = weft_sim_alloc(x->s, 1, 64, 64);
	x->ops = weft_sim_alloc(x->s, 1, 64ull << 8, 4096);
	REQUIRE(x->srq.ring && x->srq.ci_addr && x->ops, "alloc");
	k.u.srq.ring_addr = x->srq.ring;
	k.u.srq.ci_addr = x->srq.ci_addr;
	k.u.srq.pd = VT_PD;
	k.u.srq.log2 = 5;
	k.u.srq.stride_log2 = 8;
	k.u.srq.flags = WEFT_VSRQF_TM;
	k.u.srq.tm_log2 = log2;
	k.u.srq.tm_cq = cq;
	k.u.srq.tm_max_tags = max_tags;
	k.u.srq.tm_ring = x->ops;
	memset(&r, 0, sizeof(r));
	st = wsv_cmd(x->s, 1, &k, &r);
	if (why)
		*why = r.reason;
	x->op_prod = 0;
	x->op_log2 = log2;
	return st;
}

/* Nodes a (8 MiB) and b (8 MiB) over a fabric dropping drop_ppm of the
 * packets and delaying each by up to jitter_ns (reordering). */
static void setup_net(struct ctx *x, uint32_t drop_ppm, uint64_t jitter_ns)
{
	int st;

	memset(x, 0, sizeof(*x));
	x->s = vt_sim(2, 48u << 20, 11, drop_ppm, jitter_ns);
	vt_node(x->s, 0, 8u << 20, 8, &x->a);
	vt_node(x->s, 1, 8u << 20, 8, &x->b);
	REQUIRE(wsv_cq_create(x->s, 1, TMCQ, 12, 0, &x->tcq) == 0, "TM CQ");
	REQUIRE(tm_srq_create(x, SRQN, MAXTAGS, TMCQ, 8, NULL) == 0, "create TM SRQ");
	st = wsv_qp_create(x->s, 0, 2, WEFT_VQPT_RC, VT_PD, VT_CQ, VT_CQ, 8, 5, 0, &x->qa);
	REQUIRE(st == 0, "a's QP: %d", st);
	st = wsv_qp_create_srq(x->s, 1, 3, WEFT_VQPT_RC, VT_PD, VT_CQ, VT_CQ, 5, SRQN, 0, &x->qb);
	REQUIRE(st == 0, "b's QP on the TM SRQ: %d", st);
	REQUIRE(wsv_connect(x->s, &x->qa, &x->qb, NULL) == 0, "connect");
	memset(x->b.mem, 0, x->b.len);
}

static void setup(struct ctx *x)
{
	setup_net(x, 0, 0);
}

/* Post one tag operation (not rung when ring is false). */
static void tm_op(struct ctx *x, const struct weft_vtmop *op, bool ring)
{
	uint64_t a = x->ops + (uint64_t)(x->op_prod & ((1u << x->op_log2) - 1)) * sizeof(*op);

	memcpy(weft_sim_ptr(x->s, 1, a, sizeof(*op)), op, sizeof(*op));
	x->op_prod++;
	if (ring)
		wsv_uar_write(x->s, 1, 0, WEFT_UAR_SRQ_TM_DB, WEFT_UAR_DB(SRQN, x->op_prod));
}

/* TAG_ADD of handle h: buffer slot h of b's memory (from 1 MiB). */
static void tag_add(struct ctx *x, uint32_t h, uint64_t tag, uint64_t mask, uint8_t flags,
		    uint32_t cnt, bool ring)
{
	struct weft_vtmop op = {
		.wr_id = 1000 + h, .opcode = WEFT_VTM_ADD, .flags = flags, .num_sge = 1,
		.unexpected_cnt = cnt, .handle = h, .tag = tag, .mask = mask,
		.sge = { .addr = x->b.buf + (1u << 20) + (uint64_t)h * SLOT, .length = SLOT,
			 .lkey = VT_MR },
	};

	tm_op(x, &op, ring);
}

static void tag_del(struct ctx *x, uint32_t h)
{
	struct weft_vtmop op = {
		.wr_id = 2000 + h, .opcode = WEFT_VTM_DEL, .flags = WEFT_VTMF_SIGNALED, .handle = h,
	};

	tm_op(x, &op, true);
}

static void tag_sync(struct ctx *x, uint32_t cnt)
{
	struct weft_vtmop op = {
		.wr_id = 3000, .opcode = WEFT_VTM_SYNC,
		.flags = WEFT_VTMF_SIGNALED | WEFT_VTMF_SYNC, .unexpected_cnt = cnt,
	};

	tm_op(x, &op, true);
}

static void srq_recv(struct ctx *x, uint64_t wr_id)
{
	struct weft_vsge sg = { .addr = x->b.buf + wr_id * SLOT, .length = SLOT, .lkey = VT_MR };

	REQUIRE(wsv_post_srq_recv(x->s, &x->srq, wr_id, &sg, 1) == 0, "post SRQ recv");
}

static void put_be(uint8_t *p, uint64_t v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

/* Message i from a: TMH (op, app_ctx, tag) then len - 16 pattern bytes,
 * at i * SLOT of a's buffer. */
static void send_tm(struct ctx *x, unsigned int i, uint8_t op, uint64_t tag, uint32_t len)
{
	uint8_t *p = x->a.mem + (uint64_t)i * SLOT;

	vt_fill(p, len, 100 + i);
	if (len >= 16) {
		p[0] = op;
		p[1] = p[2] = p[3] = 0;
		put_be(p + 4, 0xc0000000u + i, 4);
		put_be(p + 8, tag, 8);
	}
	vt_post(&x->a, &x->qa, 500 + i, WEFT_VWR_SEND, (uint64_t)i * SLOT, len, 0, 0, 0, 0);
}

static struct weft_vcqe tm_cqe(struct ctx *x)
{
	struct weft_vcqe e;

	REQUIRE(wsv_wait(x->s, &x->tcq, &e, 1, 200 * MS) == 1, "no TM CQE");
	return e;
}

static const uint8_t *tagged(struct ctx *x, uint32_t h)
{
	return x->b.mem + (1u << 20) + (uint64_t)h * SLOT;
}

static void drain_send_cqes(struct ctx *x, unsigned int n)
{
	struct weft_vcqe e[64];

	REQUIRE(wsv_wait(x->s, &x->a.cq, e, n, 200 * MS) == n, "sender CQEs");
}

/* Eager, one packet: the payload (TMH skipped) in the tagged buffer, one
 * TM_RECV with MATCH|DATA_VALID, tag, app_ctx and handle. */
static void case_eager(void)
{
	struct ctx x;
	struct weft_vcqe e;

	setup(&x);
	tag_add(&x, 5, 0x1234, 0xffff, WEFT_VTMF_SIGNALED, 0, true);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_ADD && e.status == 0 && e.wr_id == 1005 &&
		e.wqe_index == 5 && !(e.flags & WEFT_VCQE_TM_SYNC_REQ),
		"TM_ADD CQE: opcode 0x%x status %u flags 0x%x", e.opcode, e.status, e.flags);
	send_tm(&x, 0, WEFT_TMH_EAGER, 0xabcd00001234ull, 600);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && e.status == 0, "opcode 0x%x status %u",
		e.opcode, e.status);
	REQUIRE(e.flags == (WEFT_VCQE_TM_MATCH | WEFT_VCQE_TM_DATA_VALID),
		"flags 0x%x", e.flags);
	REQUIRE(e.wr_id == 0xabcd00001234ull && e.imm_inv == 0xc0000000u && e.wqe_index == 5 &&
		e.byte_len == 584 && e.qpn == x.qb.qpn, "tag 0x%llx ctx 0x%x handle %u len %u",
		(unsigned long long)e.wr_id, e.imm_inv, e.wqe_index, e.byte_len);
	REQUIRE(memcmp(tagged(&x, 5), x.a.mem + 16, 584) == 0, "payload differs");
	REQUIRE(tagged(&x, 5)[584] == 0, "written beyond the payload");
	drain_send_cqes(&x, 1);
	REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_TM_MATCHED) == 1, "V_TM_MATCHED");
	t_checked("eager matched: 584 B after the TMH into the tagged buffer, byte-exact; one TM_RECV MATCH|DATA_VALID with tag 0x%llx, app_ctx, handle 5",
		  (unsigned long long)e.wr_id);
	weft_sim_free(x.s);
}

/* Eager over several packets: MATCH at the first, DATA_VALID at the last. */
static void case_split(void)
{
	struct ctx x;
	struct weft_vcqe e;

	setup(&x);
	tag_add(&x, 1, 7, ~0ull, 0, 0, true);
	run_for(x.s, MS);
	send_tm(&x, 0, WEFT_TMH_EAGER, 7, 5000);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && e.flags == WEFT_VCQE_TM_MATCH && e.wr_id == 7 &&
		e.wqe_index == 1, "first CQE: opcode 0x%x flags 0x%x", e.opcode, e.flags);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && e.flags == WEFT_VCQE_TM_DATA_VALID &&
		e.wr_id == 7 && e.byte_len == 4984 && e.status == 0,
		"second CQE: flags 0x%x len %u", e.flags, e.byte_len);
	REQUIRE(memcmp(tagged(&x, 1), x.a.mem + 16, 4984) == 0, "payload differs");
	t_checked("eager over 5 packets: TM_RECV MATCH at the first packet, DATA_VALID with 4984 B at the last, byte-exact");
	weft_sim_free(x.s);
}

/* Unexpected: whole message into an SRQ WQE, counted; a tag added before
 * the sync that the unexpected message would have matched stays inactive
 * (SYNC_REQ) while one it would not have matched is cleared by the CAM;
 * TAG_SYNC with the count activates the first. */
static void case_unexpected_sync(void)
{
	struct ctx x;
	struct weft_vcqe e;
	struct weft_vsrqc d;
	struct weft_vcmd k = { .op = WEFT_VCMD_QUERY_SRQ, .handle = SRQN };
	uint64_t qa;

	setup(&x);
	srq_recv(&x, 0);
	srq_recv(&x, 1);
	send_tm(&x, 0, WEFT_TMH_EAGER, 42, 300);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && !(e.flags & (WEFT_VCQE_TM_MATCH |
		WEFT_VCQE_TM_DATA_VALID)) && e.wr_id == 0 && e.byte_len == 300,
		"unexpected CQE: opcode 0x%x flags 0x%x wr_id %llu len %u", e.opcode, e.flags,
		(unsigned long long)e.wr_id, e.byte_len);
	REQUIRE(memcmp(x.b.mem, x.a.mem, 300) == 0, "unexpected message (with TMH) differs");
	/* Software had seen 0 unexpected messages when it added these. */
	tag_add(&x, 2, 42, ~0ull, WEFT_VTMF_SIGNALED, 0, false);
	tag_add(&x, 3, 43, ~0ull, WEFT_VTMF_SIGNALED, 0, true);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_ADD && (e.flags & WEFT_VCQE_TM_SYNC_REQ), "SYNC_REQ");
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_ADD && e.wqe_index == 3, "second ADD");
	/* Tag 42 is inactive: a second message 42 is unexpected too; 43 matches. */
	send_tm(&x, 1, WEFT_TMH_EAGER, 43, 200);
	e = tm_cqe(&x);
	REQUIRE(e.flags & WEFT_VCQE_TM_MATCH && e.wqe_index == 3, "tag 43 cleared by the CAM");
	send_tm(&x, 2, WEFT_TMH_EAGER, 42, 200);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && !(e.flags & WEFT_VCQE_TM_MATCH) && e.wr_id == 1,
		"inactive tag 42 matched (flags 0x%x)", e.flags);
	qa = weft_sim_alloc(x.s, 1, 64, 64);
	k.u.query.addr = qa;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == 0, "QUERY_SRQ");
	memcpy(&d, weft_sim_ptr(x.s, 1, qa, sizeof(d)), sizeof(d));
	REQUIRE(d.tm_unexpected == 2 && d.tm_sw == 0 && d.tm_tags == 1, "query: unexp %u sw %u tags %u",
		d.tm_unexpected, d.tm_sw, d.tm_tags);
	tag_sync(&x, 2);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_SYNC && e.status == 0 && !(e.flags & WEFT_VCQE_TM_SYNC_REQ),
		"TM_SYNC CQE flags 0x%x", e.flags);
	send_tm(&x, 3, WEFT_TMH_EAGER, 42, 200);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && (e.flags & WEFT_VCQE_TM_MATCH) && e.wqe_index == 2,
		"tag 42 after the sync: flags 0x%x", e.flags);
	REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_TM_UNEXPECTED) == 2, "V_TM_UNEXPECTED");
	t_checked("unexpected: whole message with TMH into SRQ WQE 0, TM_RECV without MATCH; a tag added behind the phase that the message matches stays off (SYNC_REQ, next 42 unexpected), one it does not is cleared by the CAM (item 109); TAG_SYNC 2 turns it on (item 108)");
	weft_sim_free(x.s);
}

/* Order across the phase (item 99): a tag added behind the phase (tag
 * 0x10, bit 0 ignored) and a later one the CAM clears (exact 0x11).  A
 * message 0x11 matches both: the later tag must not take it ahead of the
 * older one; it is unexpected, for software to give to the older
 * receive.  After the sync the older tag takes the next 0x11. */
static void case_inactive_order(void)
{
	struct ctx x;
	struct weft_vcqe e;

	setup(&x);
	srq_recv(&x, 0);
	srq_recv(&x, 1);
	send_tm(&x, 0, WEFT_TMH_EAGER, 0x10, 200);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && !(e.flags & WEFT_VCQE_TM_MATCH) && e.wr_id == 0,
		"first 0x10 unexpected: opcode 0x%x flags 0x%x", e.opcode, e.flags);
	/* Software had seen 0 unexpected messages when it added these. */
	tag_add(&x, 2, 0x10, ~1ull, WEFT_VTMF_SIGNALED, 0, false);
	tag_add(&x, 3, 0x11, ~0ull, WEFT_VTMF_SIGNALED, 0, true);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_ADD && (e.flags & WEFT_VCQE_TM_SYNC_REQ), "SYNC_REQ");
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_ADD && e.wqe_index == 3, "second ADD");
	send_tm(&x, 1, WEFT_TMH_EAGER, 0x11, 200);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && !(e.flags & WEFT_VCQE_TM_MATCH) && e.wr_id == 1,
		"0x11 taken by the later tag ahead of the inactive older one (flags 0x%x, index %u)",
		e.flags, e.wqe_index);
	tag_sync(&x, 2);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_SYNC && e.status == 0, "TM_SYNC CQE");
	send_tm(&x, 2, WEFT_TMH_EAGER, 0x11, 200);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && (e.flags & WEFT_VCQE_TM_MATCH) && e.wqe_index == 2,
		"0x11 after the sync: flags 0x%x index %u (want the older tag 2)", e.flags,
		e.wqe_index);
	t_checked("a message that an inactive tag matches is unexpected, not taken by a later active tag (item 99 across the phase); after TAG_SYNC the older tag takes it");
	weft_sim_free(x.s);
}

/* A message that an inactive tag holds back turns off every later tag it
 * matches.  Tag 2 (0x10, bit 0 ignored) is added behind the phase and
 * stays off; tag 3 (low nibble 1) is cleared by the CAM.  Message 0x11
 * matches both: unexpected, and software, which may give tag 2 to an
 * earlier message, gives it to tag 3.  Message 0x21, later, matches tag 3
 * only: it must not take tag 3 ahead of 0x11, so it is unexpected too, and
 * software's DEL of tag 3 for 0x11 succeeds. */
static void case_inactive_later(void)
{
	struct ctx x;
	struct weft_vcqe e;
	unsigned int i;

	setup(&x);
	for (i = 0; i < 4; i++)
		srq_recv(&x, i);
	send_tm(&x, 0, WEFT_TMH_EAGER, 0x10, 200);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && !(e.flags & WEFT_VCQE_TM_MATCH), "0x10 unexpected");
	tag_add(&x, 2, 0x10, ~1ull, WEFT_VTMF_SIGNALED | WEFT_VTMF_SYNC, 0, false);
	tag_add(&x, 3, 0x01, 0x0f, WEFT_VTMF_SIGNALED | WEFT_VTMF_SYNC, 0, true);
	for (i = 0; i < 2; i++) {
		e = tm_cqe(&x);
		REQUIRE(e.opcode == WEFT_VWC_TM_ADD && e.status == 0, "ADD %u", i);
	}
	send_tm(&x, 1, WEFT_TMH_EAGER, 0x11, 200);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && !(e.flags & WEFT_VCQE_TM_MATCH) && e.wr_id == 1,
		"0x11 taken by tag %u ahead of the inactive tag 2 (flags 0x%x)", e.wqe_index, e.flags);
	send_tm(&x, 2, WEFT_TMH_EAGER, 0x21, 200);
	e = tm_cqe(&x);
	CHECK(e.opcode == WEFT_VWC_TM_RECV && !(e.flags & WEFT_VCQE_TM_MATCH) && e.wr_id == 2,
	      "0x21 took tag %u (flags 0x%x) ahead of 0x11, which software gives that tag",
	      e.wqe_index, e.flags);
	/* Software saw the three: 0x10 to tag 2, 0x11 to tag 3. */
	tag_del(&x, 2);
	tag_del(&x, 3);
	for (i = 0; i < 2; i++) {
		e = tm_cqe(&x);
		CHECK(e.opcode == WEFT_VWC_TM_DEL && e.status == 0 && e.wr_id == 2002 + i,
		      "DEL of tag %u: status %u", 2 + i, e.status);
	}
	t_checked("a message an inactive tag holds back turns off the later tags it matches: a later message that only tag 3 matches is unexpected too, and software's DEL of tag 3 for the earlier one succeeds");
	weft_sim_free(x.s);
}

/* NO_TAG, FIN and a message shorter than a TMH: SRQ WQE, TM_NO_TAG, not
 * counted as unexpected even with a matching tag listed. */
static void case_no_tag(void)
{
	struct ctx x;
	struct weft_vcqe e;
	unsigned int i;

	setup(&x);
	for (i = 0; i < 3; i++)
		srq_recv(&x, i);
	tag_add(&x, 4, 9, ~0ull, 0, 0, true);
	send_tm(&x, 0, WEFT_TMH_NO_TAG, 9, 100);
	send_tm(&x, 1, WEFT_TMH_FIN, 9, 40);
	send_tm(&x, 2, 0, 0, 10);
	for (i = 0; i < 3; i++) {
		e = tm_cqe(&x);
		REQUIRE(e.opcode == WEFT_VWC_TM_NO_TAG && e.status == 0 && e.wr_id == i &&
			e.flags == 0, "CQE %u: opcode 0x%x flags 0x%x", i, e.opcode, e.flags);
		REQUIRE(memcmp(x.b.mem + i * SLOT, x.a.mem + i * SLOT, e.byte_len) == 0,
			"message %u differs", i);
	}
	REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_TM_UNEXPECTED) == 0, "counted as unexpected");
	send_tm(&x, 3, WEFT_TMH_EAGER, 9, 100);
	e = tm_cqe(&x);
	REQUIRE(e.flags & WEFT_VCQE_TM_MATCH, "tag 9 still listed and active");
	t_checked("NO_TAG, FIN and a 10-byte message go whole to SRQ WQEs as TM_NO_TAG, not counted; tag 9 stays listed and matches the next EAGER");
	weft_sim_free(x.s);
}

/* TAG_DEL after the message consumed the tag: TM_ERR; a DEL before: OK. */
static void case_del_race(void)
{
	struct ctx x;
	struct weft_vcqe e;
	bool got_recv = false, got_del = false;
	unsigned int i;

	setup(&x);
	tag_add(&x, 6, 77, ~0ull, 0, 0, false);
	tag_add(&x, 8, 78, ~0ull, 0, 0, true);
	run_for(x.s, MS);
	send_tm(&x, 0, WEFT_TMH_EAGER, 77, 64);
	drain_send_cqes(&x, 1);
	tag_del(&x, 6);
	for (i = 0; i < 2; i++) {
		e = tm_cqe(&x);
		if (e.opcode == WEFT_VWC_TM_RECV) {
			REQUIRE(e.wqe_index == 6 && (e.flags & WEFT_VCQE_TM_MATCH), "recv");
			got_recv = true;
		} else {
			REQUIRE(e.opcode == WEFT_VWC_TM_DEL && e.status == WEFT_VWC_TM_ERR &&
				e.wr_id == 2006 && e.byte_len == WEFT_R_TM_TAG_GONE,
				"DEL: opcode 0x%x status %u", e.opcode, e.status);
			got_del = true;
		}
	}
	REQUIRE(got_recv && got_del, "both CQEs");
	tag_del(&x, 8);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_DEL && e.status == 0, "DEL of a listed tag: %u", e.status);
	srq_recv(&x, 0);
	send_tm(&x, 1, WEFT_TMH_EAGER, 78, 64);
	e = tm_cqe(&x);
	REQUIRE(!(e.flags & WEFT_VCQE_TM_MATCH), "deleted tag matched");
	REQUIRE(vt_drops(x.s, 1, WEFT_R_TM_TAG_GONE) == 1, "TM_TAG_GONE counter");
	t_checked("TAG_DEL losing the race with its message: TM_RECV for handle 6, TAG_DEL TM_ERR (TM_TAG_GONE); TAG_DEL of a listed tag succeeds and the tag no longer matches");
	weft_sim_free(x.s);
}

/* Random tags and masks against a reference: each message goes to the
 * first listed tag that matches it, else unexpected; byte-exact. */
static void case_random(void)
{
	struct ctx x;
	struct { bool live; uint64_t tag, mask; } ref[MAXTAGS];
	uint32_t order[MAXTAGS], n = 0, unexp = 0, matched = 0;
	uint64_t rnd = 0x9e3779b97f4a7c15ull;
	unsigned int round, i, j;

	setup(&x);
	memset(ref, 0, sizeof(ref));
	for (round = 0; round < 40; round++) {
		/* Fill the list to MAXTAGS with tags drawn from a small space. */
		for (i = 0; i < MAXTAGS; i++) {
			if (ref[i].live)
				continue;
			rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
			ref[i].mask = (rnd >> 7) & 1 ? ~0ull : 0x3cull;
			ref[i].tag = ((rnd >> 20) & 0x3full) & ref[i].mask;
			ref[i].live = true;
			order[n++] = i;
			tag_add(&x, i, ref[i].tag, ref[i].mask, WEFT_VTMF_SYNC, unexp, false);
		}
		wsv_uar_write(x.s, 1, 0, WEFT_UAR_SRQ_TM_DB, WEFT_UAR_DB(SRQN, x.op_prod));
		run_for(x.s, MS);
		for (j = 0; j < 16; j++) {
			struct weft_vcqe e;
			uint64_t tag;
			uint32_t want = MAXTAGS, k;

			rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
			tag = ((rnd >> 24) & 0x3full) | (rnd & 0xc000000000000000ull);
			for (k = 0; k < n; k++)
				if ((tag & ref[order[k]].mask) == ref[order[k]].tag) {
					want = order[k];
					break;
				}
			if (want == MAXTAGS)
				srq_recv(&x, j);
			send_tm(&x, j, WEFT_TMH_EAGER, tag, 200 + j);
			e = tm_cqe(&x);
			if (want == MAXTAGS) {
				REQUIRE(e.opcode == WEFT_VWC_TM_RECV && !(e.flags & WEFT_VCQE_TM_MATCH),
					"tag 0x%llx matched handle %u, reference: none",
					(unsigned long long)tag, e.wqe_index);
				REQUIRE(memcmp(x.b.mem + j * SLOT, x.a.mem + j * SLOT, 200 + j) == 0,
					"unexpected data");
				unexp++;
				/* Software took it at once and reports the count. */
				tag_sync(&x, unexp);
				e = tm_cqe(&x);
				REQUIRE(e.opcode == WEFT_VWC_TM_SYNC, "sync");
				continue;
			}
			REQUIRE(e.opcode == WEFT_VWC_TM_RECV && (e.flags & WEFT_VCQE_TM_MATCH) &&
				e.wqe_index == want && e.wr_id == tag,
				"tag 0x%llx took handle %u flags 0x%x, reference %u",
				(unsigned long long)tag, e.wqe_index, e.flags, want);
			REQUIRE(memcmp(tagged(&x, want), x.a.mem + j * SLOT + 16, 200 + j - 16) == 0,
				"data of handle %u", want);
			ref[want].live = false;
			for (k = 0; k < n; k++)
				if (order[k] == want)
					break;
			memmove(&order[k], &order[k + 1], (n - k - 1) * sizeof(order[0]));
			n--;
			matched++;
		}
		drain_send_cqes(&x, 16);
	}
	REQUIRE(matched > 100 && unexp > 20, "matched %u unexpected %u", matched, unexp);
	t_checked("%u random messages against %u-tag lists of random tags and masks: %u matched the reference's first tag (byte-exact), %u unexpected",
		  40u * 16u, MAXTAGS, matched, unexp);
	weft_sim_free(x.s);
}

/* Hostile tag operations, TM SRQ commands and headers. */
static void case_hostile(void)
{
	struct ctx x;
	struct weft_vcqe e;
	struct weft_vtmop op;
	unsigned int why = 0;
	int st;

	setup(&x);
	/* Creation: bad sizes, CQ, ring. */
	st = tm_srq_create(&x, 9, 0, TMCQ, 4, &why);
	REQUIRE(st == WEFT_CMD_EINVAL && why == WEFT_R_TM_BAD_OP, "0 tags: %d %u", st, why);
	st = tm_srq_create(&x, 9, WEFT_VERBS_TM_MAX_TAGS + 1, TMCQ, 4, &why);
	REQUIRE(st == WEFT_CMD_EINVAL, "too many tags");
	st = tm_srq_create(&x, 9, 8, 77, 4, &why);
	REQUIRE(st == WEFT_CMD_EINVAL && why == WEFT_R_CQ_INVALID, "bad CQ: %d %u", st, why);
	st = tm_srq_create(&x, 9, 8, TMCQ, WEFT_VERBS_TM_OPS_LOG2 + 1, &why);
	REQUIRE(st == WEFT_CMD_EINVAL, "ring too big");
	/* Recreate SRQN with 4 tags and a ring of 8 operations. */
	{
		struct weft_vcmd k = { .op = WEFT_VCMD_DESTROY_QP, .handle = x.qb.qpn };

		REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == 0, "destroy QP");
		k.op = WEFT_VCMD_DESTROY_SRQ;
		k.handle = SRQN;
		REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == 0, "destroy TM SRQ");
		REQUIRE(tm_srq_create(&x, SRQN, 4, TMCQ, 3, NULL) == 0, "recreate");
	}
	/* Bad operations: opcode, flags, handle, sge count, reserved, sync ahead. */
	memset(&op, 0, sizeof(op));
	op.opcode = 9;
	tm_op(&x, &op, true);
	e = tm_cqe(&x);
	REQUIRE(e.status == WEFT_VWC_LOC_QP_OP_ERR && e.byte_len == WEFT_R_TM_BAD_OP, "opcode");
	tag_add(&x, 4, 1, ~0ull, 0, 0, true);
	e = tm_cqe(&x);
	REQUIRE(e.status && e.byte_len == WEFT_R_TM_HANDLE, "handle beyond max_tags");
	tag_add(&x, 1, 1, ~0ull, 0, 0, false);
	tag_add(&x, 1, 2, ~0ull, 0, 0, true);
	e = tm_cqe(&x);
	REQUIRE(e.status && e.byte_len == WEFT_R_TM_HANDLE && e.wr_id == 1001, "handle twice");
	tag_add(&x, 0, 1, ~0ull, 0, 0, false);
	tag_add(&x, 2, 1, ~0ull, 0, 0, false);
	tag_add(&x, 3, 1, ~0ull, 0, 0, true);
	run_for(x.s, MS);
	REQUIRE(wsv_poll(x.s, &x.tcq, &e) == 0, "unsignaled ADDs completed");
	memset(&op, 0, sizeof(op));
	op.opcode = WEFT_VTM_ADD;
	op.num_sge = 2;
	tm_op(&x, &op, true);
	e = tm_cqe(&x);
	REQUIRE(e.byte_len == WEFT_R_TM_BAD_OP, "2 SGEs");
	op.num_sge = 0;
	op.reserved2 = 1;
	tm_op(&x, &op, true);
	e = tm_cqe(&x);
	REQUIRE(e.byte_len == WEFT_R_TM_BAD_OP, "reserved");
	tag_sync(&x, 5);
	e = tm_cqe(&x);
	REQUIRE(e.byte_len == WEFT_R_TM_SYNC_AHEAD, "sync ahead");
	/* Doorbells: producer beyond the ring, a plain SRQ, wrong UAR. */
	wsv_uar_write(x.s, 1, 0, WEFT_UAR_SRQ_TM_DB, WEFT_UAR_DB(SRQN, x.op_prod + 9));
	REQUIRE(vt_drops(x.s, 1, WEFT_R_BAD_WQE) >= 1, "producer beyond the ring");
	wsv_uar_write(x.s, 1, 0, WEFT_UAR_SRQ_TM_DB, WEFT_UAR_DB(SRQN + 1, 1));
	REQUIRE(vt_drops(x.s, 1, WEFT_R_SRQ_INVALID) >= 1, "missing SRQ");
	wsv_uar_write(x.s, 1, 1, WEFT_UAR_SRQ_TM_DB, WEFT_UAR_DB(SRQN, x.op_prod));
	REQUIRE(vt_drops(x.s, 1, WEFT_R_UAR_MISMATCH) >= 1, "foreign UAR");
	/* A forged TMH opcode fails the QP (NAK, TM_BAD_TMH). */
	st = wsv_qp_create_srq(x.s, 1, 3, WEFT_VQPT_RC, VT_PD, VT_CQ, VT_CQ, 5, SRQN, 0, &x.qb);
	REQUIRE(st == 0, "QP on the new TM SRQ");
	{
		struct weft_vcmd k = { .op = WEFT_VCMD_DESTROY_QP, .handle = x.qa.qpn };

		REQUIRE(wsv_cmd(x.s, 0, &k, NULL) == 0, "destroy a's QP");
		REQUIRE(wsv_qp_create(x.s, 0, 2, WEFT_VQPT_RC, VT_PD, VT_CQ, VT_CQ, 8, 5, 0,
				      &x.qa) == 0, "a's QP");
		REQUIRE(wsv_connect(x.s, &x.qa, &x.qb, NULL) == 0, "connect");
	}
	send_tm(&x, 0, 0x77, 1, 64);
	run_for(x.s, 20 * MS);
	REQUIRE(vt_drops(x.s, 1, WEFT_R_TM_BAD_TMH) == 1, "TM_BAD_TMH");
	REQUIRE(vt_qp_state(&x.b, x.qb.qpn) == WEFT_VQPS_ERR, "QP not in error");
	/* The CQ of a TM SRQ cannot go while the SRQ holds it. */
	{
		struct weft_vcmd k = { .op = WEFT_VCMD_DESTROY_CQ, .handle = TMCQ };

		REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == WEFT_CMD_EBUSY, "CQ of a TM SRQ destroyed");
	}
	t_checked("hostile: TM SRQs with 0 or too many tags, a missing CQ, a too-big ring refused; tag operations with a bad opcode, handle beyond max_tags or listed twice, 2 SGEs, reserved bits, unexpected_cnt ahead refused with their reasons; SRQ_TM_DB beyond the ring, for a missing SRQ, from a foreign UAR refused; a forged TMH opcode NAKed (TM_BAD_TMH) and the QP failed; its CQ held");
	weft_sim_free(x.s);
}

/* Every header queue lent: the next TM SRQ is refused; native operations
 * on a lent queue are refused (TM_QUEUE_LENT). */
static void case_queues(void)
{
	struct ctx x;
	unsigned int why = 0, n = 1;
	int st;

	setup(&x);
	while ((st = tm_srq_create(&x, 10 + n, 4, TMCQ, 2, &why)) == 0)
		n++;
	REQUIRE(n == WEFT_MATCH_NR_QUEUES && st == WEFT_CMD_EBUSY && why == WEFT_R_TM_NO_QUEUE,
		"TM SRQs: %u, then %d %u", n, st, why);
	{
		struct weft_vcmd k = { .op = WEFT_VCMD_DESTROY_SRQ, .handle = 11 };

		REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == 0, "destroy one");
		REQUIRE(tm_srq_create(&x, 11, 4, TMCQ, 2, NULL) == 0, "its queue is free again");
	}
	t_checked("%u TM SRQs take every header queue; the next is refused (TM_NO_QUEUE); a destroyed one gives its queue back", n);
	weft_sim_free(x.s);
}

/* QUERY_HQ on b: status, the response in *r. */
static int hq_query(struct ctx *x, uint32_t q, uint64_t addr, uint32_t len, uint32_t flags,
		    struct weft_vcmd_resp *r)
{
	struct weft_vcmd k = { .op = WEFT_VCMD_QUERY_HQ, .handle = q };

	k.u.hq.addr = addr;
	k.u.hq.len = len;
	k.u.hq.flags = flags;
	memset(r, 0, sizeof(*r));
	return wsv_cmd(x->s, 1, &k, r);
}

/* The lent header queue's tags through QUERY_HQ (hw-spec 17.4): tag,
 * mask, handle, buffer length, lkey and the phase state, in list order,
 * written before the command returns; a short buffer bounds the entries;
 * every refusal with its reason and drop counter. */
static void case_dump(void)
{
	static const struct { uint32_t h; uint64_t tag, mask; } want[3] = {
		{ 2, 42, ~0ull }, { 3, 43, ~0ull }, { 9, 0x1234, 0xffff },
	};
	struct weft_vcmd k = { .op = WEFT_VCMD_QUERY_SRQ, .handle = SRQN };
	struct weft_vcmd_resp r;
	struct weft_match_dump d[4];
	struct weft_vsrqc sq;
	struct ctx x;
	struct weft_vcqe e;
	uint64_t buf, qa, drops;
	unsigned int i, q;
	int st;

	setup(&x);
	/* One unexpected message (tag 42), then three tags added by software
	 * that had seen none: 42 stays inactive, the CAM clears 43 and
	 * 0x1234/0xffff. */
	srq_recv(&x, 0);
	send_tm(&x, 0, WEFT_TMH_EAGER, 42, 300);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && !(e.flags & WEFT_VCQE_TM_MATCH), "unexpected");
	tag_add(&x, 2, 42, ~0ull, 0, 0, false);
	tag_add(&x, 3, 43, ~0ull, 0, 0, false);
	tag_add(&x, 9, 0x1234, 0xffff, WEFT_VTMF_SIGNALED, 0, true);
	/* The first two complete with SYNC_REQ (software is behind). */
	for (i = 0; i < 3; i++) {
		e = tm_cqe(&x);
		REQUIRE(e.opcode == WEFT_VWC_TM_ADD && e.status == 0 && e.wqe_index == want[i].h,
			"ADD %u: opcode 0x%x status %u handle %u", i, e.opcode, e.status,
			e.wqe_index);
	}
	qa = weft_sim_alloc(x.s, 1, 64, 64);
	buf = weft_sim_alloc(x.s, 1, sizeof(d), 64);
	REQUIRE(qa && buf, "alloc");
	k.u.query.addr = qa;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == 0, "QUERY_SRQ");
	memcpy(&sq, weft_sim_ptr(x.s, 1, qa, sizeof(sq)), sizeof(sq));
	q = sq.tm_queue;
	REQUIRE(q < WEFT_MATCH_NR_QUEUES, "tm_queue %u", q);

	memset(weft_sim_ptr(x.s, 1, buf, sizeof(d)), 0xee, sizeof(d));
	st = hq_query(&x, q, buf, sizeof(d), 0, &r);
	REQUIRE(st == WEFT_CMD_OK && r.status == WEFT_CMD_OK, "QUERY_HQ: %d", st);
	CHECK_EQ(r.out[0], 3, "entries written");
	CHECK_EQ(r.out[1], 3, "tags listed");
	CHECK_EQ(r.out[2], WEFT_HQS_TM, "lent to a TM SRQ");
	memcpy(d, weft_sim_ptr(x.s, 1, buf, sizeof(d)), sizeof(d));
	for (i = 0; i < 3; i++) {
		CHECK_EQ(d[i].kind, WEFT_MDUMP_TAG, "kind");
		CHECK_EQ(d[i].id, want[i].h, "handle, in list order");
		CHECK_EQ(d[i].match, want[i].tag, "tag");
		CHECK_EQ(d[i].ignore, want[i].mask, "mask");
		CHECK_EQ(d[i].len, SLOT, "buffer length");
		CHECK_EQ(d[i].aux, VT_MR, "lkey");
		CHECK_EQ(d[i].flags, i == 0 ? WEFT_MDUMPF_INACTIVE : 0, "phase state");
	}
	CHECK_EQ(d[3].match, 0xeeeeeeeeeeeeeeeeull, "nothing written past the list");
	/* The UEQ of a lent queue is software's: empty. */
	st = hq_query(&x, q, buf, sizeof(d), WEFT_HQF_UEQ, &r);
	CHECK(st == WEFT_CMD_OK && r.out[0] == 0 && r.out[1] == 0, "UEQ: %d %llu", st,
	      (unsigned long long)r.out[1]);
	/* Room for two: two written, three listed, the third slot untouched. */
	memset(weft_sim_ptr(x.s, 1, buf, sizeof(d)), 0xee, sizeof(d));
	st = hq_query(&x, q, buf, 2 * sizeof(d[0]) + 31, 0, &r);
	CHECK(st == WEFT_CMD_OK && r.out[0] == 2 && r.out[1] == 3, "bounded: %d %llu %llu", st,
	      (unsigned long long)r.out[0], (unsigned long long)r.out[1]);
	memcpy(d, weft_sim_ptr(x.s, 1, buf, sizeof(d)), sizeof(d));
	CHECK(d[1].id == 3 && d[2].match == 0xeeeeeeeeeeeeeeeeull, "third entry written");
	/* A tag taken by a message leaves the snapshot. */
	send_tm(&x, 1, WEFT_TMH_EAGER, 0xab1234, 100);
	e = tm_cqe(&x);
	REQUIRE(e.flags & WEFT_VCQE_TM_MATCH && e.wqe_index == 9, "0x1234 matched");
	st = hq_query(&x, q, buf, sizeof(d), 0, &r);
	CHECK(st == WEFT_CMD_OK && r.out[0] == 2, "after the match: %llu",
	      (unsigned long long)r.out[0]);

	/* Refusals: nothing written, a reason, its drop counter. */
	memset(weft_sim_ptr(x.s, 1, buf, sizeof(d)), 0xee, sizeof(d));
	drops = vt_drops(x.s, 1, WEFT_R_HQ_QUEUE);
	st = hq_query(&x, WEFT_MATCH_NR_QUEUES, buf, sizeof(d), 0, &r);
	CHECK(st == WEFT_CMD_EINVAL && r.reason == WEFT_R_HQ_QUEUE, "queue 128: %d %u", st,
	      r.reason);
	CHECK_EQ(vt_drops(x.s, 1, WEFT_R_HQ_QUEUE), drops + 1, "HQ_QUEUE counted");
	st = hq_query(&x, 0xffffffffu, buf, sizeof(d), 0, &r);
	CHECK(st == WEFT_CMD_EINVAL && r.reason == WEFT_R_HQ_QUEUE, "queue ~0: %d", st);
	st = hq_query(&x, q, buf, sizeof(d[0]) - 1, 0, &r);
	CHECK(st == WEFT_CMD_EINVAL && r.reason == WEFT_R_HQ_SHORT, "31 bytes: %d %u", st,
	      r.reason);
	st = hq_query(&x, q, buf, 0, 0, &r);
	CHECK(st == WEFT_CMD_EINVAL && r.reason == WEFT_R_HQ_SHORT, "0 bytes: %d", st);
	CHECK_EQ(vt_drops(x.s, 1, WEFT_R_HQ_SHORT), 2, "HQ_SHORT counted");
	st = hq_query(&x, q, 1ull << 44, sizeof(d), 0, &r);
	CHECK(st == WEFT_CMD_EFAULT && r.reason == WEFT_R_HQ_BUF, "outside RAM: %d %u", st,
	      r.reason);
	st = hq_query(&x, q, 0, sizeof(d), 0, &r);
	CHECK(st == WEFT_CMD_EFAULT && r.reason == WEFT_R_HQ_BUF, "address 0: %d", st);
	st = hq_query(&x, q, buf + 4, sizeof(d), 0, &r);
	CHECK(st == WEFT_CMD_EFAULT && r.reason == WEFT_R_HQ_BUF, "misaligned: %d", st);
	st = hq_query(&x, q, 0xfffffffffffffff8ull, sizeof(d), 0, &r);
	CHECK(st == WEFT_CMD_EFAULT && r.reason == WEFT_R_HQ_BUF, "wrapping: %d", st);
	st = hq_query(&x, q, (48ull << 20) - 32, sizeof(d), 0, &r);
	CHECK(st == WEFT_CMD_EFAULT && r.reason == WEFT_R_HQ_BUF, "past the end of RAM: %d", st);
	CHECK_EQ(vt_drops(x.s, 1, WEFT_R_HQ_BUF), 5, "HQ_BUF counted");
	drops = vt_drops(x.s, 1, WEFT_R_MATCH_BAD_OP);
	st = hq_query(&x, q, buf, sizeof(d), 0x2, &r);
	CHECK(st == WEFT_CMD_EINVAL && r.reason == WEFT_R_MATCH_BAD_OP, "unknown flag: %d", st);
	{
		struct weft_vcmd bad = { .op = WEFT_VCMD_QUERY_HQ, .handle = q };

		bad.u.hq.addr = buf;
		bad.u.hq.len = sizeof(d);
		bad.u.hq.reserved[4] = 1;
		st = wsv_cmd(x.s, 1, &bad, &r);
		CHECK(st == WEFT_CMD_EINVAL && r.reason == WEFT_R_MATCH_BAD_OP, "reserved: %d", st);
	}
	CHECK_EQ(vt_drops(x.s, 1, WEFT_R_MATCH_BAD_OP), drops + 2, "MATCH_BAD_OP counted");
	memcpy(d, weft_sim_ptr(x.s, 1, buf, sizeof(d)), sizeof(d));
	CHECK(d[0].match == 0xeeeeeeeeeeeeeeeeull, "a refused query wrote");
	t_checked("QUERY_HQ of TM queue %u: tags 42 (inactive), 43, 0x1234/0xffff with handle, length, lkey and state in list order, before the command returns; bounded by the buffer; a matched tag leaves it; queue >= 128 (HQ_QUEUE), short buffers (HQ_SHORT), address 0, outside RAM, misaligned, wrapping or past RAM (HQ_BUF), unknown flags and reserved fields (MATCH_BAD_OP) refused, counted, nothing written",
		  q);
	weft_sim_free(x.s);
}

/* ---- the adapter's RVH rendezvous (docs/matching.md "Device rendezvous") ---- */

#define RV_SRC          (4u << 20)      /* a: rendezvous source data */
#define RV_DST          (3u << 20)      /* b: big tagged buffers */
#define RV_FIN          (2u << 20)      /* a: receive buffers (FIN, b's SENDs) */
#define RV_RBUF         (64u << 10)
#define RV_GUEST        (7u << 20)      /* b: its own SENDs' data */

/* TAG_ADD of handle h over [off, off + len) of b's memory. */
static void tag_add_at(struct ctx *x, uint32_t h, uint64_t tag, uint64_t off, uint32_t len,
		       bool ring)
{
	struct weft_vtmop op = {
		.wr_id = 1000 + h, .opcode = WEFT_VTM_ADD, .num_sge = 1, .handle = h,
		.tag = tag, .mask = ~0ull,
		.sge = { .addr = x->b.buf + off, .length = len, .lkey = VT_MR },
	};

	tm_op(x, &op, ring);
}

/* RNDV message i from a: TMH (RNDV, app_ctx 0xd0000000 + i, tag), RVH
 * (va, rkey, len), then extra bytes of software data; at i * SLOT of a. */
static void send_rndv(struct ctx *x, unsigned int i, uint64_t tag, uint64_t va, uint32_t rkey,
		      uint32_t len, uint32_t extra)
{
	uint8_t *p = x->a.mem + (uint64_t)i * SLOT;

	memset(p, 0, 32);
	p[0] = WEFT_TMH_RNDV;
	put_be(p + 4, 0xd0000000u + i, 4);
	put_be(p + 8, tag, 8);
	put_be(p + 16, va, 8);
	put_be(p + 24, rkey, 4);
	put_be(p + 28, len, 4);
	vt_fill(p + 32, extra, 7 + i);
	vt_post(&x->a, &x->qa, 600 + i, WEFT_VWR_SEND, (uint64_t)i * SLOT, 32 + extra, 0, 0, 0, 0);
}

static void a_recv(struct ctx *x, unsigned int j)
{
	vt_recv(&x->a, &x->qa, 5000 + j, RV_FIN + (uint64_t)j * RV_RBUF, RV_RBUF);
}

/* A receive CQE on a is the FIN of rendezvous i (tag). */
static bool is_fin(struct ctx *x, const struct weft_vcqe *e, unsigned int i, uint64_t tag)
{
	const uint8_t *p = x->a.mem + RV_FIN + (e->wr_id - 5000) * RV_RBUF;
	uint8_t want[16] = { WEFT_TMH_FIN };

	put_be(want + 4, 0xd0000000u + i, 4);
	put_be(want + 8, tag, 8);
	return e->opcode == WEFT_VWC_RECV && e->status == 0 && e->byte_len == 16 &&
	       memcmp(p, want, 16) == 0;
}

/* Matched RNDV: the adapter READs len bytes into the tagged buffer (MATCH
 * CQE, DATA_VALID when they landed, byte_len = len) and sends the FIN. */
static void case_rndv(void)
{
	struct ctx x;
	struct weft_vcqe e;
	const uint32_t len = (1u << 20) + 17;
	unsigned int got_send = 0, got_fin = 0;

	setup(&x);
	vt_fill(x.a.mem + RV_SRC, len, 31);
	tag_add_at(&x, 3, 0x5151, RV_DST, (3u << 19), true);
	run_for(x.s, MS);
	a_recv(&x, 0);
	send_rndv(&x, 0, 0x5151, x.a.buf + RV_SRC, VT_MR, len, 20);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && e.status == 0 && e.flags == WEFT_VCQE_TM_MATCH &&
		e.wr_id == 0x5151 && e.imm_inv == 0xd0000000u && e.wqe_index == 3 &&
		e.byte_len == len, "MATCH CQE: opcode 0x%x status %u flags 0x%x len %u",
		e.opcode, e.status, e.flags, e.byte_len);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && e.status == 0 &&
		e.flags == WEFT_VCQE_TM_DATA_VALID && e.wr_id == 0x5151 && e.wqe_index == 3 &&
		e.byte_len == len, "DATA_VALID CQE: status %u flags 0x%x len %u", e.status, e.flags,
		e.byte_len);
	REQUIRE(memcmp(x.b.mem + RV_DST, x.a.mem + RV_SRC, len) == 0, "rendezvous data differs");
	REQUIRE(x.b.mem[RV_DST + len] == 0 && x.b.mem[RV_DST - 1] == 0, "written outside");
	while (got_send + got_fin < 2) {
		vt_cqe(&x.a, &e, weft_sim_now(x.s) + 200 * MS);
		if (e.flags & WEFT_VCQE_IS_SQ) {
			REQUIRE(e.wr_id == 600 && e.status == 0, "RNDV send CQE");
			got_send++;
		} else {
			REQUIRE(is_fin(&x, &e, 0, 0x5151), "not the FIN: opcode 0x%x len %u",
				e.opcode, e.byte_len);
			got_fin++;
		}
	}
	run_for(x.s, MS);
	REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_TM_RNDV) == 1 && vt_cnt(x.s, 1, WEFT_CNT_V_TM_RNDV_DONE) == 1,
		"V_TM_RNDV %llu DONE %llu", (unsigned long long)vt_cnt(x.s, 1, WEFT_CNT_V_TM_RNDV),
		(unsigned long long)vt_cnt(x.s, 1, WEFT_CNT_V_TM_RNDV_DONE));
	REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_TM_UNEXPECTED) == 0, "went unexpected");
	t_checked("matched RNDV of %u B: TM_RECV MATCH (byte_len %u, tag, app_ctx, handle 3), the adapter's READ lands byte-exact, then DATA_VALID; nothing written outside; the sender gets its FIN (TMH FIN, app_ctx, tag) as a message",
		  len, len);
	weft_sim_free(x.s);
}

/* Three rendezvous at once over a lossy, reordering fabric while b's own
 * SENDs run on the same QP: every byte right, b's SENDs in order. */
static void case_rndv_lossy(void)
{
	static const uint32_t lens[3] = { (1u << 20) + 17, 3 * 4096 + 5, 70000 };
	static const uint32_t dst[3] = { RV_DST, RV_DST + (3u << 19), RV_DST + (2u << 20) };
	static const uint32_t src[3] = { RV_SRC, RV_SRC + (3u << 19), RV_SRC + (2u << 20) };
	struct ctx x;
	struct weft_vcqe e;
	unsigned int i, match = 0, valid = 0, fins = 0, guest = 0, a_sends = 0, b_sends = 0;
	const unsigned int nguest = 8;

	setup_net(&x, 100000, 50000);
	for (i = 0; i < 3; i++) {
		vt_fill(x.a.mem + src[i], lens[i], 40 + i);
		tag_add_at(&x, i, 0x700 + i, dst[i], (1u << 20) + 4096, i == 2);
	}
	for (i = 0; i < nguest; i++)
		vt_fill(x.b.mem + RV_GUEST + (uint64_t)i * RV_RBUF, RV_RBUF - 100 * i, 60 + i);
	run_for(x.s, MS);
	for (i = 0; i < nguest + 3; i++)
		a_recv(&x, i);
	for (i = 0; i < 3; i++)
		send_rndv(&x, i, 0x700 + i, x.a.buf + src[i], VT_MR, lens[i], 8 * i);
	for (i = 0; i < nguest; i++)
		vt_post(&x.b, &x.qb, 900 + i, WEFT_VWR_SEND, RV_GUEST + (uint64_t)i * RV_RBUF,
			RV_RBUF - 100 * i, 0, 0, 0, 0);
	while (valid < 3) {
		e = tm_cqe(&x);
		REQUIRE(e.opcode == WEFT_VWC_TM_RECV && e.status == 0 && e.wr_id >= 0x700 &&
			e.wr_id < 0x703 && e.wqe_index == e.wr_id - 0x700 &&
			e.byte_len == lens[e.wqe_index], "TM CQE: status %u tag 0x%llx len %u",
			e.status, (unsigned long long)e.wr_id, e.byte_len);
		if (e.flags == WEFT_VCQE_TM_MATCH) {
			match++;
		} else {
			REQUIRE(e.flags == WEFT_VCQE_TM_DATA_VALID, "flags 0x%x", e.flags);
			REQUIRE(memcmp(x.b.mem + dst[e.wqe_index], x.a.mem + src[e.wqe_index],
				       lens[e.wqe_index]) == 0, "rendezvous %u data", e.wqe_index);
			REQUIRE(x.b.mem[dst[e.wqe_index] + lens[e.wqe_index]] == 0, "written beyond");
			valid++;
		}
	}
	while (fins < 3 || guest < nguest || a_sends < 3) {
		vt_cqe(&x.a, &e, weft_sim_now(x.s) + 2000 * MS);
		REQUIRE(e.status == 0, "a's CQE status %u", e.status);
		if (e.flags & WEFT_VCQE_IS_SQ) {
			a_sends++;
		} else if (e.byte_len == 16 && x.a.mem[RV_FIN + (e.wr_id - 5000) * RV_RBUF] ==
			   WEFT_TMH_FIN) {
			unsigned int k = x.a.mem[RV_FIN + (e.wr_id - 5000) * RV_RBUF + 7] & 3;

			REQUIRE(k < 3 && is_fin(&x, &e, k, 0x700 + k), "FIN %u", k);
			fins++;
		} else {
			/* b's SENDs arrive in their order, byte-exact. */
			REQUIRE(e.byte_len == RV_RBUF - 100 * guest &&
				memcmp(x.a.mem + RV_FIN + (e.wr_id - 5000) * RV_RBUF,
				       x.b.mem + RV_GUEST + (uint64_t)guest * RV_RBUF, e.byte_len) == 0,
				"b's SEND %u: %u B", guest, e.byte_len);
			guest++;
		}
	}
	while (b_sends < nguest) {
		struct weft_vcqe f;

		REQUIRE(wsv_wait(x.s, &x.b.cq, &f, 1, 2000 * MS) == 1, "b's send CQE");
		REQUIRE(f.status == 0 && f.wr_id == 900 + b_sends, "b's SEND %u completed as %llu",
			b_sends, (unsigned long long)f.wr_id);
		b_sends++;
	}
	run_for(x.s, 50 * MS);
	REQUIRE(match == 3 && vt_cnt(x.s, 1, WEFT_CNT_V_TM_RNDV_DONE) == 3, "DONE %llu",
		(unsigned long long)vt_cnt(x.s, 1, WEFT_CNT_V_TM_RNDV_DONE));
	REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_RETRANSMITS) > 0, "the fabric lost nothing");
	t_checked("3 rendezvous (1 MiB + 17, 12293, 70000 B) over 10%% loss and reordering, with 8 SENDs of b's own on the same QP: every READ byte-exact with MATCH then DATA_VALID, 3 FINs, b's SENDs arrive and complete in order (%llu retransmissions by b)",
		  (unsigned long long)vt_cnt(x.s, 1, WEFT_CNT_V_RETRANSMITS));
	weft_sim_free(x.s);
}

/* An RVH naming memory the sender does not own fails the READ's R_Key
 * check: the TM_RECV CQE has REM_ACCESS_ERR, nothing is written. */
static void case_rndv_bad_rkey(void)
{
	static const char *what[2] = { "bad R_Key", "outside the sender's region" };
	unsigned int k;

	for (k = 0; k < 2; k++) {
		struct ctx x;
		struct weft_vcqe e;
		uint64_t va;
		uint32_t rkey;
		size_t i = 0;

		setup(&x);
		va = k == 0 ? x.a.buf + RV_SRC : x.a.buf + x.a.len - 4096;
		rkey = k == 0 ? VT_MR + 0x100 : VT_MR;
		vt_fill(x.a.mem + RV_SRC, 65536, 3);
		tag_add_at(&x, 1, 0x99, RV_DST, 1u << 20, true);
		run_for(x.s, MS);
		send_rndv(&x, 0, 0x99, va, rkey, 65536, 0);
		e = tm_cqe(&x);
		REQUIRE(e.flags == WEFT_VCQE_TM_MATCH && e.status == 0, "%s: MATCH", what[k]);
		e = tm_cqe(&x);
		REQUIRE(e.opcode == WEFT_VWC_TM_RECV && e.status == WEFT_VWC_REM_ACCESS_ERR &&
			!(e.flags & WEFT_VCQE_TM_DATA_VALID) && e.wr_id == 0x99 && e.wqe_index == 1,
			"%s: CQE status %u flags 0x%x", what[k], e.status, e.flags);
		while (i < (1u << 20) && x.b.mem[RV_DST + i] == 0)
			i++;
		REQUIRE(i == (1u << 20), "%s: tagged buffer written at %zu", what[k], i);
		run_for(x.s, 10 * MS);
		REQUIRE(vt_qp_state(&x.b, x.qb.qpn) == WEFT_VQPS_ERR, "%s: b's QP not in error",
			what[k]);
		REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_TM_RNDV_ERR) == 1, "%s: V_TM_RNDV_ERR", what[k]);
		REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_TERMINATES_RX) == 1, "%s: no Terminate", what[k]);
		weft_sim_free(x.s);
	}
	t_checked("an RVH with a bad R_Key, and one past the end of the sender's region: the sender's adapter refuses the READ (Terminate), the receiver's TM_RECV completes with REM_ACCESS_ERR after its MATCH, the 1 MiB tagged buffer stays untouched, the QP goes to error");
}

/* Rendezvous the adapter refuses to do: a huge length, a short tagged
 * buffer, a too-long RNDV message, every slot busy: each ends in its
 * reason and a TM_RECV RNDV_INCOMPLETE with the message in the buffer. */
static void sw_rndv(struct ctx *x, unsigned int i, uint32_t h, uint32_t len, uint32_t extra,
		    unsigned int reason)
{
	uint64_t before = vt_drops(x->s, 1, reason);
	struct weft_vcqe e;

	tag_add(x, h, 0x4000 + i, ~0ull, 0, 0, true);
	run_for(x->s, MS);
	send_rndv(x, i, 0x4000 + i, x->a.buf + RV_SRC, VT_MR, len, extra);
	e = tm_cqe(x);
	if (32 + extra > WEFT_VERBS_MTU) {
		REQUIRE(e.flags == WEFT_VCQE_TM_MATCH && e.status == 0, "first CQE flags 0x%x",
			e.flags);
		e = tm_cqe(x);
		REQUIRE(e.flags == WEFT_VCQE_TM_DATA_VALID, "last CQE flags 0x%x", e.flags);
	} else {
		REQUIRE(e.flags == (WEFT_VCQE_TM_MATCH | WEFT_VCQE_TM_DATA_VALID), "flags 0x%x",
			e.flags);
	}
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && e.status == WEFT_VWC_TM_RNDV_INCOMPLETE &&
		e.wqe_index == h && e.byte_len == 32 + extra && e.wr_id == 0x4000 + i,
		"reason %u: status %u len %u", reason, e.status, e.byte_len);
	REQUIRE(memcmp(tagged(x, h), x->a.mem + (uint64_t)i * SLOT, 32 + extra) == 0,
		"reason %u: the message is not in the tagged buffer", reason);
	REQUIRE(vt_drops(x->s, 1, reason) == before + 1, "reason %u not counted", reason);
}

static void case_rndv_refused(void)
{
	struct ctx x;
	struct weft_vcqe e;
	unsigned int i, fins = 0;

	setup(&x);
	sw_rndv(&x, 0, 0, 0xffffffffu, 4, WEFT_R_TM_RVH_LEN);
	sw_rndv(&x, 1, 1, SLOT + 1, 0, WEFT_R_TM_RVH_SHORT);
	sw_rndv(&x, 2, 2, 100, WEFT_VERBS_TM_RNDV_HDR - 31, WEFT_R_TM_RNDV_HDR);
	sw_rndv(&x, 3, 3, 100, 5000, WEFT_R_TM_RNDV_HDR);
	REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_TM_RNDV) == 0, "a READ was started");
	/* 9 RNDV in a burst while the READs of the first 8 run: the 9th
	 * finds every slot busy. */
	for (i = 0; i < WEFT_VERBS_TM_RNDV_MAX; i++) {
		vt_fill(x.a.mem + RV_SRC + i * 65536, 65536, i);
		tag_add_at(&x, 8 + i, 0x800 + i, RV_DST + i * 65536, 65536, false);
	}
	tag_add(&x, 4, 0x4000 + 30, ~0ull, 0, 0, true);
	for (i = 0; i < 16; i++)
		a_recv(&x, i);
	run_for(x.s, MS);
	for (i = 0; i < WEFT_VERBS_TM_RNDV_MAX; i++)
		send_rndv(&x, 10 + i, 0x800 + i, x.a.buf + RV_SRC + i * 65536, VT_MR, 65536, 0);
	send_rndv(&x, 30, 0x4000 + 30, x.a.buf + RV_SRC, VT_MR, 100, 0);
	for (i = 0; i < 2 * WEFT_VERBS_TM_RNDV_MAX + 1; i++) {
		e = tm_cqe(&x);
		if (e.wqe_index == 4) {
			REQUIRE(e.status == WEFT_VWC_TM_RNDV_INCOMPLETE && e.byte_len == 32 &&
				e.flags == (WEFT_VCQE_TM_MATCH | WEFT_VCQE_TM_DATA_VALID),
				"9th: status %u flags 0x%x", e.status, e.flags);
			REQUIRE(memcmp(tagged(&x, 4), x.a.mem + 30 * SLOT, 32) == 0, "9th message");
		} else {
			REQUIRE(e.status == 0 && e.wqe_index >= 8 && e.wqe_index < 16, "CQE %u: %u",
				i, e.status);
		}
	}
	REQUIRE(vt_drops(x.s, 1, WEFT_R_TM_RNDV_BUSY) == 1, "TM_RNDV_BUSY");
	REQUIRE(memcmp(x.b.mem + RV_DST, x.a.mem + RV_SRC, 8 * 65536) == 0, "8 rendezvous data");
	while (fins < WEFT_VERBS_TM_RNDV_MAX) {
		vt_cqe(&x.a, &e, weft_sim_now(x.s) + 500 * MS);
		if (!(e.flags & WEFT_VCQE_IS_SQ))
			fins++;
	}
	run_for(x.s, 10 * MS);
	REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_TM_RNDV_DONE) == WEFT_VERBS_TM_RNDV_MAX &&
		vt_cnt(x.s, 1, WEFT_CNT_V_TM_RNDV_SW) == 5, "DONE %llu SW %llu",
		(unsigned long long)vt_cnt(x.s, 1, WEFT_CNT_V_TM_RNDV_DONE),
		(unsigned long long)vt_cnt(x.s, 1, WEFT_CNT_V_TM_RNDV_SW));
	/* A slot is free again: the next one is the adapter's. */
	vt_fill(x.a.mem + RV_SRC, 3000, 77);
	tag_add_at(&x, 20, 0x900, RV_DST, 3000, true);
	run_for(x.s, MS);
	send_rndv(&x, 40, 0x900, x.a.buf + RV_SRC, VT_MR, 3000, 0);
	e = tm_cqe(&x);
	e = tm_cqe(&x);
	REQUIRE(e.flags == WEFT_VCQE_TM_DATA_VALID && memcmp(x.b.mem + RV_DST, x.a.mem + RV_SRC,
		3000) == 0, "rendezvous after the slots freed");
	REQUIRE(vt_qp_state(&x.b, x.qb.qpn) == WEFT_VQPS_RTS, "b's QP left RTS");
	t_checked("refused rendezvous end as TM_RECV MATCH|DATA_VALID RNDV_INCOMPLETE with the whole RNDV message in the tagged buffer: RVH length 2^32-1 (TM_RVH_LEN), longer than the tagged buffer (TM_RVH_SHORT), a %u-byte and a 5032-byte RNDV (TM_RNDV_HDR), the 9th of a burst while %u READs run (TM_RNDV_BUSY); 8 FINs, then a slot serves again",
		  WEFT_VERBS_TM_RNDV_HDR + 1, WEFT_VERBS_TM_RNDV_MAX);
	weft_sim_free(x.s);
}

/* TAG_DEL while the adapter reads: TM_ERR, the rendezvous completes;
 * TAG_DEL before the RNDV: it goes unexpected. */
static void case_rndv_del_race(void)
{
	struct ctx x;
	struct weft_vcqe e;
	const uint32_t len = 2u << 20;
	bool del = false, valid = false;

	setup(&x);
	vt_fill(x.a.mem + RV_SRC, len, 5);
	tag_add_at(&x, 6, 77, RV_DST, len, false);
	tag_add(&x, 7, 78, ~0ull, 0, 0, true);
	run_for(x.s, MS);
	a_recv(&x, 0);
	send_rndv(&x, 0, 77, x.a.buf + RV_SRC, VT_MR, len, 0);
	e = tm_cqe(&x);
	REQUIRE(e.flags == WEFT_VCQE_TM_MATCH && e.wqe_index == 6, "MATCH");
	tag_del(&x, 6);
	while (!del || !valid) {
		e = tm_cqe(&x);
		if (e.opcode == WEFT_VWC_TM_DEL) {
			REQUIRE(e.status == WEFT_VWC_TM_ERR && e.byte_len == WEFT_R_TM_TAG_GONE,
				"DEL status %u", e.status);
			REQUIRE(!valid, "DEL completed after the data: no race");
			del = true;
		} else {
			REQUIRE(e.opcode == WEFT_VWC_TM_RECV && e.status == 0 &&
				e.flags == WEFT_VCQE_TM_DATA_VALID, "DATA_VALID: status %u", e.status);
			valid = true;
		}
	}
	REQUIRE(memcmp(x.b.mem + RV_DST, x.a.mem + RV_SRC, len) == 0, "data after the DEL race");
	tag_del(&x, 7);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_DEL && e.status == 0, "DEL of tag 78");
	srq_recv(&x, 0);
	send_rndv(&x, 1, 78, x.a.buf + RV_SRC, VT_MR, 4096, 0);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && !(e.flags & WEFT_VCQE_TM_MATCH) && e.wr_id == 0 &&
		e.byte_len == 32, "RNDV after its tag's DEL: flags 0x%x", e.flags);
	REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_TM_RNDV) == 1, "V_TM_RNDV");
	t_checked("TAG_DEL racing a 2 MiB device rendezvous: TM_ERR (TM_TAG_GONE) while the READ runs, then DATA_VALID byte-exact; a RNDV after its tag's DEL goes unexpected");
	weft_sim_free(x.s);
}

/* No tag: the RNDV goes whole to an SRQ WQE (software's rendezvous). */
static void case_rndv_unexpected(void)
{
	struct ctx x;
	struct weft_vcqe e;

	setup(&x);
	srq_recv(&x, 0);
	send_rndv(&x, 0, 0x1234, x.a.buf + RV_SRC, VT_MR, 100000, 12);
	e = tm_cqe(&x);
	REQUIRE(e.opcode == WEFT_VWC_TM_RECV && !(e.flags & (WEFT_VCQE_TM_MATCH |
		WEFT_VCQE_TM_DATA_VALID)) && e.status == 0 && e.wr_id == 0 && e.byte_len == 44,
		"unexpected RNDV CQE: flags 0x%x len %u", e.flags, e.byte_len);
	REQUIRE(memcmp(x.b.mem, x.a.mem, 44) == 0, "RNDV message (TMH, RVH, data) differs");
	run_for(x.s, 5 * MS);
	REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_TM_UNEXPECTED) == 1 && vt_cnt(x.s, 1, WEFT_CNT_V_TM_RNDV) == 0,
		"counted: unexpected %llu rndv %llu",
		(unsigned long long)vt_cnt(x.s, 1, WEFT_CNT_V_TM_UNEXPECTED),
		(unsigned long long)vt_cnt(x.s, 1, WEFT_CNT_V_TM_RNDV));
	t_checked("an RNDV no tag matches goes whole (TMH, RVH, 12 B) to SRQ WQE 0 as unexpected TM_RECV; the adapter reads nothing");
	weft_sim_free(x.s);
}

/* ---- promotion: software-listed receives moved into free tags ------------ */

#define PR_RX   512u            /* receives posted at once */
#define PR_MSG  512u            /* messages */
#define PR_MAX  32u             /* TAG_ADDs per promotion round */

enum { PR_SW, PR_LISTED, PR_WAIT_ADD, PR_DEL, PR_DONE };

struct pr {
	struct ctx x;
	bool naive;             /* the lost try: an in-flight ADD's receive is nowhere */
	uint64_t rtag[PR_RX], rign[PR_RX], mtag[PR_MSG];
	int want[PR_RX], got[PR_RX], del_msg[PR_RX];
	uint8_t st[PR_RX];
	uint32_t owner[MAXTAGS], hfree[MAXTAGS], nhfree;
	uint32_t unexp, sync_sent, sw_head, sent, acked, accounted, held, pending_db;
	uint32_t raced, promoted, hq_checks;
	bool sync_req;
	uint64_t rnd;
};

static uint32_t pr_rand(struct pr *p, uint32_t n)
{
	p->rnd = p->rnd * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)((p->rnd >> 33) % n);
}

static bool pr_takes(const struct pr *p, unsigned int r, uint64_t t)
{
	return (t & ~p->rign[r]) == (p->rtag[r] & ~p->rign[r]);
}

/* A tag operation carrying software's unexpected count (IBV_OPS_TM_SYNC). */
static void pr_op(struct pr *p, uint8_t opcode, uint32_t h, unsigned int r, bool ring)
{
	struct weft_vtmop op = {
		.opcode = opcode, .flags = WEFT_VTMF_SYNC, .unexpected_cnt = p->unexp, .handle = h,
	};

	if (opcode == WEFT_VTM_ADD) {
		op.wr_id = 1000 + h;
		op.num_sge = 1;
		op.tag = p->rtag[r] & ~p->rign[r];
		op.mask = ~p->rign[r];
		op.sge.addr = p->x.b.buf + (1u << 20) + (uint64_t)h * SLOT;
		op.sge.length = SLOT;
		op.sge.lkey = VT_MR;
		/* The lost try learnt that its ADD ran from the ADD's CQE. */
		if (p->naive)
			op.flags |= WEFT_VTMF_SIGNALED;
	} else if (opcode == WEFT_VTM_DEL) {
		op.wr_id = 2000 + h;
		op.flags |= WEFT_VTMF_SIGNALED;
	} else {
		op.wr_id = 3000;
	}
	p->sync_sent = p->unexp;
	tm_op(&p->x, &op, ring);
	if (!ring)
		p->pending_db++;
	else
		p->pending_db = 0;
}

/* The provider's routing of an unexpected message k (rx.c ux_route): the
 * oldest listed receive that takes it is taken back with a DEL, else the
 * oldest software-listed one takes it, else it is held. */
static void pr_route(struct pr *p, uint32_t k)
{
	unsigned int r;

	for (r = 0; r < PR_RX; r++) {
		if (p->st[r] == PR_LISTED && pr_takes(p, r, p->mtag[k])) {
			uint32_t h;

			for (h = 0; h < MAXTAGS && p->owner[h] != r; h++)
				;
			REQUIRE(h < MAXTAGS, "receive %u listed without a handle", r);
			p->st[r] = PR_DEL;
			p->del_msg[r] = (int)k;
			p->raced++;
			pr_op(p, WEFT_VTM_DEL, h, r, pr_rand(p, 2));
			return;
		}
	}
	for (r = 0; r < PR_RX; r++) {
		if (p->st[r] == PR_SW && pr_takes(p, r, p->mtag[k])) {
			p->st[r] = PR_DONE;
			p->got[r] = (int)k;
			p->accounted++;
			return;
		}
	}
	p->held++;
	p->accounted++;
}

static void pr_handle_free(struct pr *p, uint32_t h)
{
	p->owner[h] = PR_RX;
	p->hfree[p->nhfree++] = h;
}

static void pr_cqe(struct pr *p, const struct weft_vcqe *e)
{
	uint32_t h = e->wqe_index, k;
	unsigned int r;

	if (e->flags & WEFT_VCQE_TM_SYNC_REQ)
		p->sync_req = true;
	switch (e->opcode) {
	case WEFT_VWC_TM_RECV:
		REQUIRE(e->status == WEFT_VWC_SUCCESS, "TM_RECV status %u", e->status);
		if (!(e->flags & WEFT_VCQE_TM_MATCH)) {
			/* Unexpected: [TMH | k] in SRQ WQE wr_id, counted. */
			REQUIRE(e->wr_id < 32 && e->byte_len == 20, "unexpected wr_id %llu len %u",
				(unsigned long long)e->wr_id, e->byte_len);
			memcpy(&k, p->x.b.mem + e->wr_id * SLOT + 16, 4);
			p->unexp++;
			srq_recv(&p->x, e->wr_id);
			pr_route(p, k);
			return;
		}
		REQUIRE(h < MAXTAGS && p->owner[h] < PR_RX, "TM_RECV for handle %u", h);
		r = p->owner[h];
		memcpy(&k, tagged(&p->x, h), 4);
		REQUIRE(k < PR_MSG && pr_takes(p, r, p->mtag[k]), "message %u in receive %u", k, r);
		p->got[r] = (int)k;
		p->accounted++;
		if (p->st[r] == PR_DEL) {
			/* The DEL will fail: its message is routed again then. */
			p->st[r] = PR_DONE;
			return;
		}
		p->st[r] = PR_DONE;
		pr_handle_free(p, h);
		return;
	case WEFT_VWC_TM_DEL:
		REQUIRE(h < MAXTAGS && p->owner[h] < PR_RX, "DEL CQE for handle %u", h);
		r = p->owner[h];
		k = (uint32_t)p->del_msg[r];
		pr_handle_free(p, h);
		if (e->status == WEFT_VWC_SUCCESS) {
			REQUIRE(p->st[r] == PR_DEL, "DEL of receive %u in state %u", r, p->st[r]);
			p->st[r] = PR_DONE;
			p->got[r] = (int)k;
			p->accounted++;
			return;
		}
		REQUIRE(e->status == WEFT_VWC_TM_ERR, "DEL status %u", e->status);
		pr_route(p, k);
		return;
	case WEFT_VWC_TM_ADD:
		REQUIRE(e->status == WEFT_VWC_SUCCESS, "ADD status %u reason %u", e->status,
			e->byte_len);
		if (p->naive && h < MAXTAGS && p->owner[h] < PR_RX &&
		    p->st[p->owner[h]] == PR_WAIT_ADD)
			p->st[p->owner[h]] = PR_LISTED;
		return;
	default:
		REQUIRE(e->opcode == WEFT_VWC_TM_SYNC && e->status == WEFT_VWC_SUCCESS,
			"op CQE 0x%x status %u", e->opcode, e->status);
	}
}

/* The oldest software-listed receives into the free tags, at most PR_MAX
 * (rx.c wfi_rx_promote); the doorbell now or after the next arrivals. */
static void pr_promote(struct pr *p)
{
	unsigned int n = 0;
	bool ring = pr_rand(p, 2);

	while (p->nhfree && n < PR_MAX) {
		uint32_t h;

		while (p->sw_head < PR_RX && p->st[p->sw_head] != PR_SW)
			p->sw_head++;
		if (p->sw_head >= PR_RX)
			break;
		h = p->hfree[--p->nhfree];
		p->owner[h] = p->sw_head;
		p->st[p->sw_head] = p->naive ? PR_WAIT_ADD : PR_LISTED;
		pr_op(p, WEFT_VTM_ADD, h, p->sw_head, false);
		p->promoted++;
		n++;
	}
	if (p->pending_db && ring)
		wsv_uar_write(p->x.s, 1, 0, WEFT_UAR_SRQ_TM_DB, WEFT_UAR_DB(SRQN, p->x.op_prod));
	if (ring)
		p->pending_db = 0;
}

/* The adapter's tag list (QUERY_HQ) is in post order at every step. */
static void pr_check_list(struct pr *p, unsigned int q, uint64_t buf)
{
	struct weft_match_dump d[MAXTAGS];
	struct weft_vcmd_resp resp;
	unsigned int i, last = 0;

	REQUIRE(hq_query(&p->x, q, buf, sizeof(d), 0, &resp) == WEFT_CMD_OK, "QUERY_HQ");
	REQUIRE(resp.out[0] <= MAXTAGS, "%llu tags", (unsigned long long)resp.out[0]);
	memcpy(d, weft_sim_ptr(p->x.s, 1, buf, sizeof(d)), sizeof(d));
	for (i = 0; i < resp.out[0]; i++) {
		unsigned int r = d[i].id < MAXTAGS ? p->owner[d[i].id] : PR_RX;

		REQUIRE(r < PR_RX && (i == 0 || r > last),
			"adapter's list out of post order: entry %u handle %u receive %u after %u", i,
			d[i].id, r, last);
		last = r;
	}
	p->hq_checks++;
}

/* One run of weft-fi-check's model check, scaled to MAXTAGS tags: PR_RX
 * receives (exact tags, 13 masks, wildcards) posted at once, MAXTAGS in
 * the adapter and the rest in software, then PR_MSG messages; software
 * routes unexpected ones as rx.c does and promotes the oldest
 * software-listed receives into the tags that free up, its doorbell rung
 * at once or only after more arrivals (the ADD in flight).  Returns the
 * receives that did not get the message the earliest-posted model names. */
static unsigned int pr_run(struct pr *p, bool naive, uint64_t seed)
{
	struct weft_vsrqc sq;
	struct weft_vcmd k = { .op = WEFT_VCMD_QUERY_SRQ, .handle = SRQN };
	bool used[PR_RX] = { false };
	unsigned int i, m, wrong = 0, q;
	uint64_t qa, buf;
	int guard = 0;

	memset(p, 0, sizeof(*p));
	setup(&p->x);
	p->naive = naive;
	p->rnd = seed;
	for (i = 0; i < PR_RX; i++) {
		switch (i % 4) {
		case 0: p->rtag[i] = (i / 4) % 8; p->rign[i] = 0; break;
		case 1: p->rtag[i] = 0; p->rign[i] = 7 | 0x10ull << (i / 4 % 10); break;
		case 2: p->rtag[i] = (i / 4) % 8 & 6; p->rign[i] = 1; break;
		default: p->rtag[i] = 8 + i % 5; p->rign[i] = 0; break;
		}
		p->want[i] = p->got[i] = p->del_msg[i] = -1;
		p->st[i] = PR_SW;
	}
	for (m = 0; m < PR_MSG; m++) {
		p->mtag[m] = (m * 5 + 3) % 13;
		for (i = 0; i < PR_RX && (used[i] || !pr_takes(p, i, p->mtag[m])); i++)
			;
		if (i < PR_RX) {
			used[i] = true;
			p->want[i] = (int)m;
		}
	}
	qa = weft_sim_alloc(p->x.s, 1, 64, 64);
	buf = weft_sim_alloc(p->x.s, 1, sizeof(struct weft_match_dump) * MAXTAGS, 64);
	REQUIRE(qa && buf, "alloc");
	k.u.query.addr = qa;
	REQUIRE(wsv_cmd(p->x.s, 1, &k, NULL) == 0, "QUERY_SRQ");
	memcpy(&sq, weft_sim_ptr(p->x.s, 1, qa, sizeof(sq)), sizeof(sq));
	q = sq.tm_queue;
	for (i = 0; i < 30; i++)
		srq_recv(&p->x, i);
	/* The first MAXTAGS receives listed with their ADDs run, the rest in
	 * software. */
	for (i = 0; i < MAXTAGS; i++) {
		p->owner[i] = i;
		p->st[i] = PR_LISTED;
		pr_op(p, WEFT_VTM_ADD, i, i, i == MAXTAGS - 1);
	}
	run_for(p->x.s, MS);
	for (;;) {
		struct weft_vcqe e[64];
		unsigned int n, burst = 1 + pr_rand(p, 24);

		REQUIRE(++guard < 100000, "no progress: %u sent, %u accounted", p->sent,
			p->accounted);
		for (n = 0; n < burst && p->sent < PR_MSG && p->sent - p->acked < 64; n++, p->sent++) {
			uint8_t *b = p->x.a.mem + (uint64_t)p->sent * 64;

			memset(b, 0, 20);
			b[0] = WEFT_TMH_EAGER;
			put_be(b + 8, p->mtag[p->sent], 8);
			memcpy(b + 16, &p->sent, 4);
			vt_post(&p->x.a, &p->x.qa, p->sent, WEFT_VWR_SEND, (uint64_t)p->sent * 64, 20,
				0, 0, 0, 0);
		}
		run_for(p->x.s, 20000 + pr_rand(p, 40000));
		/* An ADD held back meanwhile runs now, behind those arrivals. */
		if (p->pending_db) {
			wsv_uar_write(p->x.s, 1, 0, WEFT_UAR_SRQ_TM_DB,
				      WEFT_UAR_DB(SRQN, p->x.op_prod));
			p->pending_db = 0;
		}
		while (wsv_poll(p->x.s, &p->x.tcq, e))
			pr_cqe(p, e);
		while (wsv_poll(p->x.s, &p->x.a.cq, e)) {
			REQUIRE(e[0].status == WEFT_VWC_SUCCESS, "send status %u", e[0].status);
			p->acked++;
		}
		if (p->sync_req && p->sync_sent != p->unexp)
			pr_op(p, WEFT_VTM_SYNC, 0, 0, true);
		p->sync_req = false;
		pr_check_list(p, q, buf);
		pr_promote(p);
		if (p->acked == PR_MSG && p->accounted == PR_MSG)
			break;
	}
	for (i = 0; i < PR_RX; i++)
		wrong += p->got[i] != p->want[i];
	weft_sim_free(p->x.s);
	return wrong;
}

/* The lost promotion try (docs/libfabric.md "Promotion"): a receive taken
 * off the software list for its TAG_ADD was in neither list until the
 * ADD's completion, so a message the adapter handed over as unexpected
 * meanwhile (the ADD not run yet, or run behind the phase: inactive) was
 * given to a later receive.  Reproduced with the lost protocol, then the
 * provider's: the receive is routable from the moment its ADD is posted
 * (a DEL queued behind the ADD takes it back), and every receive gets the
 * message the earliest-posted model names. */
static void case_promote(void)
{
	static struct pr p;
	unsigned int wrong_naive = 0, wrong = 0, raced = 0, promoted = 0, checks = 0, seed;

	for (seed = 1; seed <= 8; seed++) {
		wrong_naive += pr_run(&p, true, seed);
		wrong += pr_run(&p, false, seed);
		raced += p.raced;
		promoted += p.promoted;
		checks += p.hq_checks;
	}
	CHECK(wrong_naive > 0, "the lost protocol gave %u wrong receives", wrong_naive);
	CHECK(wrong == 0 && raced > 0 && promoted > 0,
	      "promotion: %u wrong, %u arrivals routed to a listed receive, %u promoted", wrong,
	      raced, promoted);
	t_checked("8 runs of %u receives (13 masks) and %u messages over %u tags: the lost protocol (receive nowhere while its ADD is in flight) gives %u wrong; the provider's gives 0 with %u receives promoted, %u arrivals taken back from a listed receive with DEL, the adapter's list in post order at %u QUERY_HQ snapshots",
		  PR_RX, PR_MSG, MAXTAGS, wrong_naive, promoted, raced, checks);
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "eager", case_eager },
		{ "split", case_split },
		{ "unexpected-sync", case_unexpected_sync },
		{ "inactive-order", case_inactive_order },
		{ "inactive-later", case_inactive_later },
		{ "no-tag", case_no_tag },
		{ "del-race", case_del_race },
		{ "random", case_random },
		{ "hostile", case_hostile },
		{ "queues", case_queues },
		{ "dump", case_dump },
		{ "rndv", case_rndv },
		{ "rndv-lossy", case_rndv_lossy },
		{ "rndv-bad-rkey", case_rndv_bad_rkey },
		{ "rndv-refused", case_rndv_refused },
		{ "rndv-del-race", case_rndv_del_race },
		{ "rndv-unexpected", case_rndv_unexpected },
		{ "promote", case_promote },
	};

	return vt_main("tm", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
