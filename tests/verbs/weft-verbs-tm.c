// SPDX-License-Identifier: MIT
/*
 * rdma-core's tag-matching verbs (issue 20; docs/matching.md
 * "Tag-matching verbs", docs/rdma-provider.md "Tests").  node0 creates a
 * tag-matching SRQ (ibv_create_srq_ex, IBV_SRQT_TM) with its CQ
 * (ibv_create_cq_ex, IBV_WC_EX_WITH_TM_INFO) and an RC QP on it; node1
 * sends it SENDs that start with a TMH (infiniband/tm_types.h) over a
 * plain RC QP.  node0 checks, through ibv_post_srq_ops and the extended
 * CQ: an eager message matched into its tagged buffer (one and several
 * packets), an unexpected message in an SRQ buffer followed by the sync,
 * NO_TAG, a TAG_DEL that loses the race with its message (IBV_WC_TM_ERR),
 * the tags it holds in weft.ko's debugfs match file, a 16 MiB rendezvous
 * (TMH RNDV + RVH) that node0's adapter reads into the tagged buffer and
 * answers with a FIN that node1 receives, and 10,000 random tags and
 * masks against a reference, all byte-exact.
 *
 * Usage: weft-verbs-tm -s -g GIDX (node0) | -c NODE0_ADDR -g GIDX (node1)
 */
#include <endian.h>
#include <infiniband/tm_types.h>

#include "vt.h"

#define NWQE 64			/* SRQ buffers */
#define SLOT 16384		/* bytes per buffer, tagged or not */
#define NTAGS 64		/* tags per round of the random phase */
#define ROUNDS 157		/* 157 * 64 = 10,048 tags */
#define SPACE 48u		/* message tags of the random phase: 0 .. SPACE - 1 */
#define QP_ACC (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define RNDV_LEN (16u << 20)	/* the rendezvous the adapter reads */
#define RNDV_TAG 0x6666ull
#define RNDV_SEED 0x38

/* What node1 sends at one step: n messages (op, tag, len, pattern). */
struct tm_msg {
	uint8_t op;
	uint8_t seed;
	uint16_t len;
	uint32_t reserved;
	uint64_t tag;
};

/* The random phase's generator, the same on both nodes. */
static uint64_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 17;
}

/* ---- node0 --------------------------------------------------------------- */

struct srv {
	struct vt *v;
	struct ibv_pd *pd;
	struct ibv_cq_ex *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;			/* NWQE SRQ slots, then NTAGS tagged slots */
	uint32_t unexp;			/* unexpected messages taken */
	uint64_t srq_next;		/* next SRQ buffer (wr_id) to post */
};

struct cqe {
	uint64_t wr_id;
	int status;
	enum ibv_wc_opcode op;
	unsigned int flags;
	uint32_t len;
	struct ibv_wc_tm_info tm;
};

static int next_cqe(struct srv *s, struct cqe *c)
{
	struct ibv_poll_cq_attr pa = {};
	uint64_t end = vt_ms() + 10000;
	int r;

	while ((r = ibv_start_poll(s->cq, &pa)) == ENOENT && vt_ms() < end)
		;
	if (r)
		return 0;
	c->wr_id = s->cq->wr_id;
	c->status = s->cq->status;
	c->op = ibv_wc_read_opcode(s->cq);
	c->flags = ibv_wc_read_wc_flags(s->cq);
	c->len = ibv_wc_read_byte_len(s->cq);
	memset(&c->tm, 0, sizeof(c->tm));
	ibv_wc_read_tm_info(s->cq, &c->tm);
	ibv_end_poll(s->cq);
	return 1;
}

static uint8_t *tagged(struct srv *s, uint32_t slot)
{
	return s->buf + (size_t)(NWQE + slot) * SLOT;
}

static void srq_post(struct srv *s)
{
	uint64_t id = s->srq_next++;
	struct ibv_sge sge = { (uintptr_t)s->buf + (id % NWQE) * SLOT, SLOT, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_srq_recv(s->srq, &wr, &bad))
		t_bail("ibv_post_srq_recv: errno %d", errno);
}

/* TAG_ADD of tag/mask into tagged slot; returns the handle. */
static uint32_t tag_add(struct srv *s, uint64_t tag, uint64_t mask, uint32_t slot,
			uint64_t recv_wr_id, int flags)
{
	struct ibv_sge sge = { (uintptr_t)tagged(s, slot), SLOT, s->mr->lkey };
	struct ibv_ops_wr wr = {
		.wr_id = 0xadd00000 + slot, .opcode = IBV_WR_TAG_ADD,
		.flags = flags | IBV_OPS_TM_SYNC,
		.tm = { .unexpected_cnt = s->unexp,
			.add = { .recv_wr_id = recv_wr_id, .sg_list = &sge, .num_sge = 1,
				 .tag = tag, .mask = mask } },
	}, *bad;
	int r = ibv_post_srq_ops(s->srq, &wr, &bad);

	if (r)
		t_bail("ibv_post_srq_ops(TAG_ADD): %s", vt_en(r));
	return wr.tm.handle;
}

static int tag_op(struct srv *s, enum ibv_ops_wr_opcode op, uint32_t handle, uint64_t wr_id)
{
	struct ibv_ops_wr wr = {
		.wr_id = wr_id, .opcode = op, .flags = IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC,
		.tm = { .unexpected_cnt = s->unexp, .handle = handle },
	}, *bad;

	return ibv_post_srq_ops(s->srq, &wr, &bad);
}

/* The message body after the TMH: pattern seed from TMH offset. */
static int body_ok(const uint8_t *p, uint32_t len, uint8_t seed)
{
	return vt_diff(p, len, seed, sizeof(struct ibv_tmh)) < 0;
}

static void phase_eager(struct srv *s)
{
	struct cqe c;
	uint32_t h;

	t_begin("node0: eager messages matched");
	h = tag_add(s, 0x1111, ~0ull, 0, 0xe1, IBV_OPS_SIGNALED);
	CHECK(next_cqe(s, &c) && c.op == IBV_WC_TM_ADD && c.status == IBV_WC_SUCCESS &&
	      c.wr_id == 0xadd00000, "TAG_ADD completion: op %d status %d", c.op, c.status);
	tag_add(s, 0x2000, 0xff00, 1, 0xe2, 0);
	vt_sync(s->v, 10);		/* node1: EAGER 0x1111 (1000 B), EAGER 0x20ab (10000 B) */
	CHECK(next_cqe(s, &c) && c.op == IBV_WC_TM_RECV && c.status == IBV_WC_SUCCESS &&
	      c.flags == (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID) && c.wr_id == 0xe1 &&
	      c.tm.tag == 0x1111 && c.tm.priv == 0x1234 && c.len == 1000 - 16,
	      "one-packet eager: op %d flags 0x%x wr_id 0x%llx tag 0x%llx priv 0x%x len %u",
	      c.op, c.flags, (unsigned long long)c.wr_id, (unsigned long long)c.tm.tag,
	      c.tm.priv, c.len);
	CHECK(body_ok(tagged(s, 0), 1000 - 16, 0x31), "one-packet eager: data differs");
	CHECK(next_cqe(s, &c) && c.op == IBV_WC_TM_RECV && c.flags == IBV_WC_TM_MATCH &&
	      c.wr_id == 0xe2 && c.tm.tag == 0x20ab, "several packets, first CQE: flags 0x%x",
	      c.flags);
	CHECK(next_cqe(s, &c) && c.op == IBV_WC_TM_RECV && c.flags == IBV_WC_TM_DATA_VALID &&
	      c.wr_id == 0xe2 && c.len == 10000 - 16 && body_ok(tagged(s, 1), 10000 - 16, 0x32),
	      "several packets, second CQE: flags 0x%x len %u", c.flags, c.len);
	(void)h;
	t_checked("node0: EAGER tag 0x1111, 1000 B: one TM_RECV MATCH|DATA_VALID with recv_wr_id, tag, app_ctx, 984 B byte-exact; EAGER 0x20ab (mask 0xff00), 10000 B (3 packets): MATCH then DATA_VALID, byte-exact");
}

static void phase_unexpected(struct srv *s)
{
	struct cqe c;

	t_begin("node0: an unexpected message, then the sync");
	vt_sync(s->v, 20);		/* node1: EAGER 0x2222, 500 B, no tag listed */
	CHECK(next_cqe(s, &c) && c.op == IBV_WC_TM_RECV && c.status == IBV_WC_SUCCESS &&
	      !(c.flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID)) && c.len == 500,
	      "unexpected: op %d flags 0x%x len %u", c.op, c.flags, c.len);
	if (c.wr_id < s->srq_next) {
		const uint8_t *p = s->buf + (c.wr_id % NWQE) * SLOT;
		const struct ibv_tmh *t = (const void *)p;

		CHECK(t->opcode == IBV_TMH_EAGER && be64toh(t->tag) == 0x2222 &&
		      body_ok(p + 16, 500 - 16, 0x33), "the message with its TMH differs");
	}
	s->unexp++;
	srq_post(s);
	CHECK(!tag_op(s, IBV_WR_TAG_SYNC, 0, 0x5c) && next_cqe(s, &c) &&
	      c.op == IBV_WC_TM_SYNC && c.status == IBV_WC_SUCCESS && c.wr_id == 0x5c &&
	      !(c.flags & IBV_WC_TM_SYNC_REQ), "TAG_SYNC: op %d status %d flags 0x%x", c.op,
	      c.status, c.flags);
	tag_add(s, 0x2222, ~0ull, 2, 0xe3, 0);
	vt_sync(s->v, 21);		/* node1: EAGER 0x2222 again, 600 B */
	CHECK(next_cqe(s, &c) && c.op == IBV_WC_TM_RECV &&
	      (c.flags & IBV_WC_TM_MATCH) && c.wr_id == 0xe3 &&
	      body_ok(tagged(s, 2), 600 - 16, 0x34), "after the sync: flags 0x%x", c.flags);
	t_checked("node0: EAGER 0x2222 with no tag: TM_RECV without MATCH in an SRQ buffer, TMH and data byte-exact; TAG_SYNC unexpected_cnt 1 completes without SYNC_REQ; the next 0x2222 matches the new tag");
}

static void phase_no_tag(struct srv *s)
{
	struct cqe c;

	t_begin("node0: NO_TAG");
	tag_add(s, 0x4444, ~0ull, 3, 0xe4, 0);
	vt_sync(s->v, 30);		/* node1: NO_TAG 0x4444 400 B, then EAGER 0x4444 400 B */
	CHECK(next_cqe(s, &c) && c.op == IBV_WC_TM_NO_TAG && c.status == IBV_WC_SUCCESS &&
	      c.len == 400 && body_ok(s->buf + (c.wr_id % NWQE) * SLOT + 16, 400 - 16, 0x35),
	      "NO_TAG: op %d flags 0x%x len %u", c.op, c.flags, c.len);
	srq_post(s);
	CHECK(next_cqe(s, &c) && c.op == IBV_WC_TM_RECV && (c.flags & IBV_WC_TM_MATCH) &&
	      c.wr_id == 0xe4, "the EAGER after it: op %d flags 0x%x", c.op, c.flags);
	t_checked("node0: NO_TAG with tag 0x4444 listed: TM_NO_TAG in an SRQ buffer byte-exact, not matched; the following EAGER 0x4444 matches");
}

static void phase_del_race(struct srv *s)
{
	struct cqe c;
	uint32_t h;
	int got_recv = 0, got_err = 0, i;

	t_begin("node0: TAG_DEL racing its message");
	h = tag_add(s, 0x5555, ~0ull, 4, 0xe5, 0);
	vt_sync(s->v, 40);		/* node1: EAGER 0x5555, completed at node1 */
	vt_sync(s->v, 41);
	CHECK(!tag_op(s, IBV_WR_TAG_DEL, h, 0xde1), "TAG_DEL posted");
	for (i = 0; i < 2 && next_cqe(s, &c); i++) {
		if (c.op == IBV_WC_TM_RECV && c.wr_id == 0xe5)
			got_recv = 1;
		if (c.op == IBV_WC_TM_DEL && c.wr_id == 0xde1 && c.status == IBV_WC_TM_ERR)
			got_err = 1;
	}
	CHECK(got_recv && got_err, "TM_RECV %d, TAG_DEL IBV_WC_TM_ERR %d", got_recv, got_err);
	h = tag_add(s, 0x5556, ~0ull, 5, 0xe6, 0);
	CHECK(!tag_op(s, IBV_WR_TAG_DEL, h, 0xde2) && next_cqe(s, &c) && c.op == IBV_WC_TM_DEL &&
	      c.status == IBV_WC_SUCCESS, "TAG_DEL of a listed tag: %d", c.status);
	t_checked("node0: TAG_DEL after its message arrived: TM_RECV for the tag and TAG_DEL IBV_WC_TM_ERR; TAG_DEL of a listed tag: success");
}

/* weft.ko's debugfs match file lists each live header queue's entries
 * (QUERY_HQ, docs/matching.md "Traces and counters"): while the TM SRQ
 * holds three tags it lists, under a queue marked "tm", each with its
 * handle, tag, mask, buffer length, lkey and state. */
#define DBG_MATCH "/sys/kernel/debug/weft/weft0/match"

static void phase_debugfs(struct srv *s)
{
	static const struct { uint64_t tag, mask; } want[3] = {
		{ 0xfeed0001, ~0ull }, { 0xfeed0200, 0xffffff00 },
		{ 0x7eadbeef00000003ull, 0x7fffffff0000ffffull },
	};
	char line[256], exp[3][160];
	int found[3] = { 0 }, in_tm = 0, tm_queues = 0, i;
	uint32_t h[3];
	struct cqe c;
	FILE *f;

	t_begin("node0: debugfs shows the TM SRQ's tags");
	for (i = 0; i < 3; i++) {
		h[i] = tag_add(s, want[i].tag, want[i].mask, 8 + i, 0xd00 + i, IBV_OPS_SIGNALED);
		CHECK(next_cqe(s, &c) && c.op == IBV_WC_TM_ADD && c.status == IBV_WC_SUCCESS,
		      "TAG_ADD %d: op %d status %d", i, c.op, c.status);
		snprintf(exp[i], sizeof(exp[i]),
			 "  tag %u: tag 0x%016llx mask 0x%016llx len %u lkey 0x%x active", h[i],
			 (unsigned long long)want[i].tag, (unsigned long long)want[i].mask, SLOT,
			 s->mr->lkey);
	}
	f = fopen(DBG_MATCH, "r");
	CHECK(f != NULL, "open %s: %s", DBG_MATCH, strerror(errno));
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "queue ", 6)) {
			in_tm = strlen(line) > 3 && !strcmp(line + strlen(line) - 3, " tm");
			tm_queues += in_tm;
		}
		for (i = 0; i < 3; i++)
			if (in_tm && !strcmp(line, exp[i]))
				found[i]++;
	}
	if (f)
		fclose(f);
	CHECK(tm_queues >= 1, "no queue marked tm in %s", DBG_MATCH);
	for (i = 0; i < 3; i++)
		CHECK(found[i] == 1, "%d times: \"%s\"", found[i], exp[i]);
	for (i = 0; i < 3; i++)
		CHECK(!tag_op(s, IBV_WR_TAG_DEL, h[i], 0xdd0 + i) && next_cqe(s, &c) &&
		      c.op == IBV_WC_TM_DEL && c.status == IBV_WC_SUCCESS, "TAG_DEL %d: %d", i,
		      c.status);
	t_checked("node0: " DBG_MATCH " lists the 3 tags the TM SRQ holds (handles %u %u %u) with tag, mask, length %u, lkey and state, under a queue marked tm",
		  h[0], h[1], h[2], SLOT);
}

/* A 16 MiB rendezvous: node0's adapter matches the RNDV, READs node1's
 * buffer into the tagged one (MATCH, then DATA_VALID when it landed)
 * and sends node1 the FIN. */
static void phase_rndv(struct srv *s)
{
	uint8_t *big = aligned_alloc(4096, RNDV_LEN);
	struct ibv_mr *mr;
	struct ibv_sge sge;
	struct ibv_ops_wr wr = {
		.wr_id = 0xadd0000f, .opcode = IBV_WR_TAG_ADD, .flags = IBV_OPS_TM_SYNC,
		.tm = { .add = { .recv_wr_id = 0xe7, .sg_list = &sge, .num_sge = 1,
				 .tag = RNDV_TAG, .mask = ~0ull } },
	}, *bad;
	struct cqe c;
	long d;
	int r;

	t_begin("node0: a 16 MiB rendezvous the adapter reads");
	if (!big)
		t_bail("16 MiB buffer");
	memset(big, 0, RNDV_LEN);
	mr = ibv_reg_mr(s->pd, big, RNDV_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		t_bail("ibv_reg_mr of 16 MiB: errno %d", errno);
	sge = (struct ibv_sge){ (uintptr_t)big, RNDV_LEN, mr->lkey };
	wr.tm.unexpected_cnt = s->unexp;
	r = ibv_post_srq_ops(s->srq, &wr, &bad);
	if (r)
		t_bail("ibv_post_srq_ops(TAG_ADD 16 MiB): %s", vt_en(r));
	vt_sync(s->v, 50);		/* node1: RNDV 0x6666, RVH over its 16 MiB */
	CHECK(next_cqe(s, &c) && c.op == IBV_WC_TM_RECV && c.status == IBV_WC_SUCCESS &&
	      c.flags == IBV_WC_TM_MATCH && c.wr_id == 0xe7 && c.tm.tag == RNDV_TAG &&
	      c.tm.priv == 0x1234 && c.len == RNDV_LEN,
	      "RNDV, first CQE: op %d status %d flags 0x%x wr_id 0x%llx tag 0x%llx len %u",
	      c.op, c.status, c.flags, (unsigned long long)c.wr_id,
	      (unsigned long long)c.tm.tag, c.len);
	CHECK(next_cqe(s, &c) && c.op == IBV_WC_TM_RECV && c.status == IBV_WC_SUCCESS &&
	      c.flags == IBV_WC_TM_DATA_VALID && c.wr_id == 0xe7 && c.len == RNDV_LEN,
	      "RNDV, second CQE: op %d status %d flags 0x%x len %u", c.op, c.status, c.flags,
	      c.len);
	d = vt_diff(big, RNDV_LEN, RNDV_SEED, 0);
	CHECK(d < 0, "the 16 MiB read differ at byte %ld", d);
	vt_sync(s->v, 51);		/* node1 has its FIN */
	ibv_dereg_mr(mr);
	free(big);
	t_checked("node0: RNDV tag 0x6666 with an RVH over node1's 16 MiB: TM_RECV MATCH (recv_wr_id, tag, app_ctx, byte_len 16777216), the adapter's RDMA READ lands byte-exact, then TM_RECV DATA_VALID");
}

static void phase_random(struct srv *s)
{
	uint64_t seed = 0x7e57, want_tag[NTAGS], mask[NTAGS];
	uint32_t handle[NTAGS], total = 0, matched = 0, unexpected = 0, round, i, k;
	uint8_t live[NTAGS];
	struct cqe c;

	t_begin("node0: %d random tags and masks", ROUNDS * NTAGS);
	for (round = 0; round < ROUNDS; round++) {
		for (i = 0; i < NTAGS; i++) {
			uint64_t r = rnd(&seed);

			mask[i] = r & 1 ? ~0ull : 0x3c;
			want_tag[i] = (r >> 8) % SPACE & mask[i];
			handle[i] = tag_add(s, want_tag[i], mask[i], i, 0x10000 + i, 0);
			live[i] = 1;
			total++;
		}
		vt_sync(s->v, 100 + round);	/* node1 sends NTAGS messages */
		for (k = 0; k < NTAGS; k++) {
			uint64_t tag = rnd(&seed) % SPACE;
			uint32_t len = 64 + (uint32_t)(rnd(&seed) % 900), want = NTAGS;
			uint8_t pat = (uint8_t)(round * 7 + k);

			for (i = 0; i < NTAGS; i++)
				if (live[i] && (tag & mask[i]) == want_tag[i]) {
					want = i;
					break;
				}
			if (!next_cqe(s, &c)) {
				CHECK(0, "round %u message %u: no completion", round, k);
				t_abort();
			}
			if (want == NTAGS) {
				CHECK(c.op == IBV_WC_TM_RECV && !(c.flags & IBV_WC_TM_MATCH) &&
				      c.len == len && body_ok(s->buf + (c.wr_id % NWQE) * SLOT + 16,
							      len - 16, pat),
				      "round %u tag %llu: op %d flags 0x%x wr_id 0x%llx, reference: unexpected",
				      round, (unsigned long long)tag, c.op, c.flags,
				      (unsigned long long)c.wr_id);
				s->unexp++;
				unexpected++;
				srq_post(s);
				continue;
			}
			CHECK(c.op == IBV_WC_TM_RECV && c.flags == (IBV_WC_TM_MATCH |
			      IBV_WC_TM_DATA_VALID) && c.wr_id == 0x10000 + want &&
			      c.tm.tag == tag && c.len == len - 16 &&
			      body_ok(tagged(s, want), len - 16, pat),
			      "round %u tag %llu: wr_id 0x%llx flags 0x%x, reference handle %u",
			      round, (unsigned long long)tag, (unsigned long long)c.wr_id,
			      c.flags, want);
			live[want] = 0;
			matched++;
		}
		/* The tags left: delete them (every DEL succeeds: no message is due). */
		for (i = 0; i < NTAGS; i++)
			if (live[i]) {
				CHECK(!tag_op(s, IBV_WR_TAG_DEL, handle[i], 0xd0000 + i) &&
				      next_cqe(s, &c) && c.op == IBV_WC_TM_DEL &&
				      c.status == IBV_WC_SUCCESS, "round %u: TAG_DEL %u: %d", round,
				      i, c.status);
			}
		if (t_failures())
			t_abort();
	}
	t_checked("node0: %u random tags and masks (exact or 0x3c) against %u messages of %u tags: %u matched the reference's first listed tag, %u unexpected, all byte-exact",
		  total, ROUNDS * NTAGS, SPACE, matched, unexpected);
}

static void server(struct vt *v)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 1024, .wc_flags = IBV_WC_EX_WITH_TM_INFO |
					  IBV_WC_EX_WITH_BYTE_LEN };
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = NWQE, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM,
		.srq_type = IBV_SRQT_TM, .tm_cap = { .max_num_tags = NTAGS, .max_ops = 128 },
	};
	struct ibv_device_attr_ex dx;
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_send_sge = 1 } };
	struct srv s = { .v = v };
	unsigned int i;
	int r;

	vt_open(v);
	t_begin("node0: tm_caps");
	r = ibv_query_device_ex(v->ctx, NULL, &dx);
	CHECK(!r && (dx.tm_caps.flags & IBV_TM_CAP_RC) && dx.tm_caps.max_num_tags >= NTAGS &&
	      dx.tm_caps.max_ops >= 128 && dx.tm_caps.max_sge >= 1,
	      "ibv_query_device_ex %s: tm_caps flags 0x%x tags %u ops %u sge %u", vt_en(r),
	      dx.tm_caps.flags, dx.tm_caps.max_num_tags, dx.tm_caps.max_ops, dx.tm_caps.max_sge);
	t_checked("node0: tm_caps: IBV_TM_CAP_RC, max_num_tags %u, max_ops %u, max_sge %u, max_rndv_hdr_size %u",
		  dx.tm_caps.max_num_tags, dx.tm_caps.max_ops, dx.tm_caps.max_sge,
		  dx.tm_caps.max_rndv_hdr_size);
	s.pd = ibv_alloc_pd(v->ctx);
	s.buf = aligned_alloc(4096, (size_t)(NWQE + NTAGS) * SLOT);
	if (!s.pd || !s.buf)
		t_bail("PD or buffer");
	memset(s.buf, 0, (size_t)(NWQE + NTAGS) * SLOT);
	s.mr = ibv_reg_mr(s.pd, s.buf, (size_t)(NWQE + NTAGS) * SLOT, IBV_ACCESS_LOCAL_WRITE);
	if (!s.mr)
		t_bail("ibv_reg_mr: errno %d", errno);

	t_begin("node0: ibv_create_cq_ex and ibv_create_srq_ex (IBV_SRQT_TM)");
	s.cq = ibv_create_cq_ex(v->ctx, &ca);
	CHECK(s.cq != NULL, "ibv_create_cq_ex(TM_INFO): errno %s", vt_en(errno));
	if (!s.cq)
		t_abort();
	sa.pd = s.pd;
	sa.cq = ibv_cq_ex_to_cq(s.cq);
	s.srq = ibv_create_srq_ex(v->ctx, &sa);
	CHECK(s.srq != NULL, "ibv_create_srq_ex(IBV_SRQT_TM): errno %s", vt_en(errno));
	if (!s.srq)
		t_abort();
	{
		struct ibv_srq_init_attr_ex two = sa;
		struct ibv_srq *again;

		errno = 0;
		again = ibv_create_srq_ex(v->ctx, &two);
		CHECK(!again && errno == EOPNOTSUPP, "a second TM SRQ on the CQ: errno %s",
		      vt_en(errno));
	}
	t_checked("node0: CQ with IBV_WC_EX_WITH_TM_INFO and a TM SRQ of %d tags: success; a second TM SRQ on that CQ -> EOPNOTSUPP",
		  NTAGS);
	for (i = 0; i < NWQE; i++)
		srq_post(&s);
	qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(s.cq);
	qa.srq = s.srq;
	s.qp = ibv_create_qp(s.pd, &qa);
	if (!s.qp)
		t_bail("ibv_create_qp on the TM SRQ: errno %d", errno);
	vt_sock(v);
	vt_connect_qp(v, s.qp, QP_ACC);
	phase_eager(&s);
	phase_unexpected(&s);
	phase_no_tag(&s);
	phase_del_race(&s);
	phase_debugfs(&s);
	phase_rndv(&s);
	phase_random(&s);
	vt_sync(v, 9999);
	ibv_destroy_qp(s.qp);
	CHECK(!ibv_destroy_srq(s.srq), "ibv_destroy_srq: errno %d", errno);
	ibv_destroy_cq(ibv_cq_ex_to_cq(s.cq));
	ibv_dereg_mr(s.mr);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(v->ctx);
}

/* ---- node1 --------------------------------------------------------------- */

struct cli {
	struct vt *v;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint32_t sent;
};

/* Send one message with a TMH (op, app_ctx 0x1234, tag), body pattern
 * seed; counts the sends that completed successfully. */
static void tm_send(struct cli *c, uint8_t op, uint64_t tag, uint32_t len, uint8_t seed)
{
	struct ibv_tmh *t = (struct ibv_tmh *)c->buf;
	struct ibv_sge sge = { (uintptr_t)c->buf, len, c->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = tag, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	vt_fill(c->buf, len, seed);
	memset(t, 0, sizeof(*t));
	t->opcode = op;
	t->app_ctx = htobe32(0x1234);
	t->tag = htobe64(tag);
	if (ibv_post_send(c->qp, &wr, &bad))
		t_bail("ibv_post_send: errno %d", errno);
	if (!vt_poll(c->cq, &wc) || wc.status != IBV_WC_SUCCESS)
		t_bail("send of tag 0x%llx: %s", (unsigned long long)tag,
		       vt_status(wc.status));
	c->sent++;
}

/* The RNDV of phase_rndv: TMH, RVH over a 16 MiB buffer registered for
 * remote reads, 8 bytes of software data; then the FIN node0's adapter
 * sends back arrives as a plain receive. */
static void rndv_send(struct cli *c, struct ibv_pd *pd)
{
	uint8_t *big = aligned_alloc(4096, RNDV_LEN), *fin = c->buf + 8192;
	struct ibv_tmh *t = (struct ibv_tmh *)c->buf;
	struct ibv_rvh *h = (struct ibv_rvh *)(c->buf + sizeof(*t));
	struct ibv_sge sge = { (uintptr_t)c->buf, sizeof(*t) + sizeof(*h) + 8, c->mr->lkey };
	struct ibv_sge rsge = { (uintptr_t)fin, 64, c->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 0x7e, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_recv_wr rwr = { .wr_id = 0xf1, .sg_list = &rsge, .num_sge = 1 }, *rbad;
	const struct ibv_tmh *ft = (const struct ibv_tmh *)fin;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	int sent = 0, got_fin = 0, i;

	if (!big)
		t_bail("16 MiB buffer");
	vt_fill(big, RNDV_LEN, RNDV_SEED);
	mr = ibv_reg_mr(pd, big, RNDV_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		t_bail("ibv_reg_mr of 16 MiB: errno %d", errno);
	memset(c->buf, 0, 64);
	memset(fin, 0, 64);
	t->opcode = IBV_TMH_RNDV;
	t->app_ctx = htobe32(0x1234);
	t->tag = htobe64(RNDV_TAG);
	h->va = htobe64((uintptr_t)big);
	h->rkey = htobe32(mr->rkey);
	h->len = htobe32(RNDV_LEN);
	memcpy(c->buf + sizeof(*t) + sizeof(*h), "rts-data", 8);
	if (ibv_post_recv(c->qp, &rwr, &rbad))
		t_bail("ibv_post_recv for the FIN: errno %d", errno);
	vt_sync(c->v, 50);
	if (ibv_post_send(c->qp, &wr, &bad))
		t_bail("ibv_post_send (RNDV): errno %d", errno);
	for (i = 0; i < 2 && vt_poll(c->cq, &wc); i++) {
		if (wc.opcode == IBV_WC_RECV && wc.wr_id == 0xf1)
			got_fin = wc.status == IBV_WC_SUCCESS && wc.byte_len == sizeof(*ft) &&
				  ft->opcode == IBV_TMH_FIN && be32toh(ft->app_ctx) == 0x1234 &&
				  be64toh(ft->tag) == RNDV_TAG;
		else
			sent = wc.wr_id == 0x7e && wc.status == IBV_WC_SUCCESS;
	}
	CHECK(sent && got_fin, "RNDV send completed %d, FIN received %d (len %u op %u)", sent,
	      got_fin, wc.byte_len, ft->opcode);
	vt_sync(c->v, 51);
	ibv_dereg_mr(mr);
	free(big);
	t_checked("node1: RNDV with RVH over 16 MiB sent; its FIN (TMH FIN, app_ctx 0x1234, tag 0x6666) arrived as a 16-byte receive");
}

static void client(struct vt *v)
{
	uint64_t seed = 0x7e57;
	struct ibv_pd *pd;
	struct cli c = { .v = v };
	uint32_t round, i;

	vt_open(v);
	pd = ibv_alloc_pd(v->ctx);
	c.cq = ibv_create_cq(v->ctx, 64, NULL, NULL, 0);
	c.buf = aligned_alloc(4096, 16384);
	if (!pd || !c.cq || !c.buf)
		t_bail("PD, CQ or buffer");
	c.mr = ibv_reg_mr(pd, c.buf, 16384, IBV_ACCESS_LOCAL_WRITE);
	if (!c.mr)
		t_bail("ibv_reg_mr: errno %d", errno);
	vt_sock(v);
	c.qp = vt_connect(v, pd, c.cq, QP_ACC);
	t_begin("node1: tagged sends");
	vt_sync(v, 10);
	tm_send(&c, IBV_TMH_EAGER, 0x1111, 1000, 0x31);
	tm_send(&c, IBV_TMH_EAGER, 0x20ab, 10000, 0x32);
	vt_sync(v, 20);
	tm_send(&c, IBV_TMH_EAGER, 0x2222, 500, 0x33);
	vt_sync(v, 21);
	tm_send(&c, IBV_TMH_EAGER, 0x2222, 600, 0x34);
	vt_sync(v, 30);
	tm_send(&c, IBV_TMH_NO_TAG, 0x4444, 400, 0x35);
	tm_send(&c, IBV_TMH_EAGER, 0x4444, 400, 0x36);
	vt_sync(v, 40);
	tm_send(&c, IBV_TMH_EAGER, 0x5555, 200, 0x37);
	vt_sync(v, 41);
	rndv_send(&c, pd);
	for (round = 0; round < ROUNDS; round++) {
		for (i = 0; i < NTAGS; i++)
			rnd(&seed);	/* node0's tags */
		vt_sync(v, 100 + round);
		for (i = 0; i < NTAGS; i++) {
			uint64_t tag = rnd(&seed) % SPACE;
			uint32_t len = 64 + (uint32_t)(rnd(&seed) % 900);

			tm_send(&c, IBV_TMH_EAGER, tag, len, (uint8_t)(round * 7 + i));
		}
	}
	CHECK(c.sent == 7 + ROUNDS * NTAGS, "%u of %u sends completed", c.sent,
	      7 + ROUNDS * NTAGS);
	t_checked("node1: %u tagged sends completed successfully", c.sent);
	vt_sync(v, 9999);
	ibv_destroy_qp(c.qp);
	ibv_dereg_mr(c.mr);
	ibv_destroy_cq(c.cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(v->ctx);
}

int main(int argc, char **argv)
{
	return vt_run(argc, argv, server, client);
}
