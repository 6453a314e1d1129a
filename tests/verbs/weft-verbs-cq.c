// SPDX-License-Identifier: MIT
/*
 * ibv_resize_cq under traffic (issue 20, docs/rdma-provider.md "Tests"):
 * node1 resizes the CQ of its RDMA WRITEs to node0 while completions are
 * waiting in it and while writes are in flight; every completion comes
 * once and in order, a resize below the completions outstanding is
 * EINVAL, and the CQ raises its event after the resizes.  Then
 * ibv_modify_cq (issue 23, hw-spec 16.7 "Moderation"): with a count of 4
 * the armed CQ raises one event per 4 completions instead of one per
 * completion, with a period alone the event comes that long after the
 * first completion, the caps are those of the adapter, bad values are
 * EINVAL, and 0/0 is one event per completion again; a stream of writes
 * with an event-driven consumer prints its events with and without
 * moderation (a figure, not a check).  node0 checks that every write
 * landed.
 *
 * Usage: weft-verbs-cq -s -g GIDX (node0) | -c NODE0_ADDR -g GIDX (node1)
 */
#include <poll.h>

#include "vt.h"

#define N1 12			/* writes before the first resize */
#define N2 40			/* writes in flight at the second */
#define N3 3			/* after shrinking to 4 entries */
#define NW (N1 + N2 + N3 + 1)	/* the last one raises the event */
#define SZ 64
#define BUF (NW * SZ)
#define SEED 0x4d

static void server(struct vt *v)
{
	struct vt_msg me = {}, peer;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint8_t *buf;

	vt_open(v);
	vt_sock(v);
	pd = ibv_alloc_pd(v->ctx);
	cq = ibv_create_cq(v->ctx, 4, NULL, NULL, 0);
	buf = aligned_alloc(4096, 4096);
	if (!pd || !cq || !buf)
		t_bail("PD, CQ or buffer: errno %d", errno);
	memset(buf, 0, 4096);
	mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		t_bail("ibv_reg_mr: errno %d", errno);
	qp = vt_connect(v, pd, cq, IBV_ACCESS_REMOTE_WRITE);
	me.addr = (uintptr_t)buf;
	me.rkey = mr->rkey;
	vt_xchg(v, &me, &peer);
	vt_sync(v, 1);
	t_begin("node0: node1's %d writes", NW);
	CHECK(vt_diff(buf, BUF, SEED, 0) < 0, "write data differs at %ld", vt_diff(buf, BUF, SEED, 0));
	t_checked("node0: node1's %d RDMA WRITEs across its CQ resizes landed byte-exact", NW);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(v->ctx);
}

/* Posts writes first .. first + n - 1 (signaled); write i goes to slot
 * i mod NW of the buffer, whose bytes it writes again. */
static void writes(struct ibv_qp *qp, struct ibv_mr *mr, uint8_t *buf, const struct vt_msg *peer,
		   unsigned int first, unsigned int n)
{
	unsigned int i;

	for (i = first; i < first + n; i++) {
		struct ibv_sge sge = { (uintptr_t)buf + (i % NW) * SZ, SZ, mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = peer->addr + (i % NW) * SZ, .rkey = peer->rkey },
		}, *bad;
		int r = ibv_post_send(qp, &wr, &bad);

		if (r)
			t_bail("ibv_post_send %u: %s", i, vt_en(r));
	}
}

/* Polls completions until *next reaches upto (10 s at most); each must be
 * the next wr_id, successful.  Returns false at the first that is not. */
static bool take(struct ibv_cq *cq, unsigned int *next, unsigned int upto)
{
	struct ibv_wc wc;

	while (*next < upto) {
		if (!vt_poll(cq, &wc)) {
			CHECK(0, "no completion for write %u", *next);
			return false;
		}
		if (wc.wr_id != *next || wc.status != IBV_WC_SUCCESS) {
			CHECK(0, "completion wr_id %llu %s, expected write %u",
			      (unsigned long long)wc.wr_id, vt_status(wc.status), *next);
			return false;
		}
		++*next;
	}
	return true;
}

/* An event on the channel within ms (0 = just look): taken, acknowledged,
 * the CQ armed again.  Returns 1, or 0 when none came. */
static int event(struct ibv_comp_channel *ch, struct ibv_cq *cq, int ms)
{
	struct pollfd pf = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *ecq;
	void *ectx;

	if (poll(&pf, 1, ms) != 1)
		return 0;
	if (ibv_get_cq_event(ch, &ecq, &ectx) || ecq != cq)
		t_bail("ibv_get_cq_event: errno %d", errno);
	ibv_ack_cq_events(cq, 1);
	if (ibv_req_notify_cq(cq, 0))
		t_bail("ibv_req_notify_cq: errno %d", errno);
	return 1;
}

static int moderate(struct ibv_cq *cq, unsigned int count, unsigned int period)
{
	struct ibv_modify_cq_attr a = {
		.attr_mask = IBV_CQ_ATTR_MODERATE,
		.moderate = { .cq_count = count, .cq_period = period },
	};

	return ibv_modify_cq(cq, &a);
}

#define MOD_K 16		/* writes of the count check */
#define MOD_N 4			/* its count */
#define MOD_P 4000		/* us: the period check */
#define STREAM 1024		/* writes of the figure */
#define DEPTH 32		/* their window */

/*
 * MOD_K writes one after the other, the armed CQ counting: after each
 * completion the channel is looked at (an event taken re-arms the CQ);
 * with count MOD_N the event must come after the MOD_N-th completion since
 * the arm and not before.  Returns the events taken.
 */
static unsigned int count_events(struct ibv_comp_channel *ch, struct ibv_cq *cq,
				 struct ibv_qp *qp, struct ibv_mr *mr, uint8_t *buf,
				 const struct vt_msg *peer, unsigned int *next, unsigned int n)
{
	unsigned int i, ev = 0;

	for (i = 0; i < MOD_K; i++) {
		writes(qp, mr, buf, peer, *next, 1);
		if (!take(cq, next, *next + 1))
			break;
		if (n > 1 && (i + 1) % n) {
			/* Not the n-th: no event may come. */
			CHECK(!event(ch, cq, 20), "an event after completion %u with count %u", i + 1,
			      n);
			continue;
		}
		if (event(ch, cq, 10000))
			ev++;
		else
			CHECK(0, "no event in 10 s after completion %u (count %u)", i + 1, n);
	}
	return ev;
}

/*
 * STREAM writes, DEPTH in flight, the consumer sleeping on the channel:
 * each event re-arms the CQ, takes every completion and posts as many
 * writes.  Prints the events and the time per write (a figure).
 */
static void stream(struct ibv_comp_channel *ch, struct ibv_cq *cq, struct ibv_qp *qp,
		   struct ibv_mr *mr, uint8_t *buf, const struct vt_msg *peer, unsigned int *next,
		   const char *what)
{
	unsigned int posted = 0, done = 0, ev = 0, first = *next;
	uint64_t t0 = vt_ms();
	struct ibv_wc wc[DEPTH];
	int n;

	writes(qp, mr, buf, peer, first, DEPTH);
	posted = DEPTH;
	while (done < STREAM) {
		if (!event(ch, cq, 10000)) {
			CHECK(0, "%s: no event in 10 s with %u of %u writes done", what, done, STREAM);
			return;
		}
		ev++;
		while ((n = ibv_poll_cq(cq, DEPTH, wc)) > 0) {
			int i;

			for (i = 0; i < n; i++)
				CHECK(wc[i].status == IBV_WC_SUCCESS && wc[i].wr_id == first + done + i,
				      "%s: completion %llu %s", what, (unsigned long long)wc[i].wr_id,
				      vt_status(wc[i].status));
			done += n;
			if (posted < STREAM) {
				unsigned int more = STREAM - posted < (unsigned int)n ?
						    STREAM - posted : (unsigned int)n;

				writes(qp, mr, buf, peer, first + posted, more);
				posted += more;
			}
		}
	}
	*next = first + STREAM;
	t_diag("figure: %s: %u events for %u 64-byte writes (%.1f completions per event), %.1f us per write",
	       what, ev, STREAM, (double)STREAM / ev, (vt_ms() - t0) * 1000.0 / STREAM);
}

static void moderation(struct ibv_comp_channel *ch, struct ibv_cq *cq, struct ibv_qp *qp,
		       struct ibv_mr *mr, uint8_t *buf, const struct vt_msg *peer,
		       struct ibv_context *ctx, unsigned int *next)
{
	struct ibv_device_attr_ex dx = {};
	unsigned int off, mod;
	uint64_t t0, dt;
	int r;

	t_begin("node1: ibv_modify_cq: caps, refusals, one event per %d completions", MOD_N);
	r = ibv_query_device_ex(ctx, NULL, &dx);
	CHECK(!r && dx.cq_mod_caps.max_cq_count == 65535 && dx.cq_mod_caps.max_cq_period == 4095,
	      "ibv_query_device_ex: %s, cq_mod_caps %u/%u", vt_en(r), dx.cq_mod_caps.max_cq_count,
	      dx.cq_mod_caps.max_cq_period);
	r = ibv_resize_cq(cq, 64);
	CHECK(!r, "ibv_resize_cq(64): %s", vt_en(r));
	r = moderate(cq, 1, 4096);
	CHECK(r == EINVAL, "a period of 4096 us: %s", vt_en(r));
	{
		struct ibv_modify_cq_attr a = { .attr_mask = 0 };

		r = ibv_modify_cq(cq, &a);
		CHECK(r == EINVAL, "no attribute: %s", vt_en(r));
	}
	r = ibv_req_notify_cq(cq, 0);
	CHECK(!r, "ibv_req_notify_cq: %s", vt_en(r));
	off = count_events(ch, cq, qp, mr, buf, peer, next, 1);
	CHECK(off == MOD_K, "no moderation: %u events for %d completions", off, MOD_K);
	r = moderate(cq, MOD_N, 0);
	CHECK(!r, "ibv_modify_cq(count %d): %s", MOD_N, vt_en(r));
	mod = count_events(ch, cq, qp, mr, buf, peer, next, MOD_N);
	CHECK(mod == MOD_K / MOD_N, "count %d: %u events for %d completions", MOD_N, mod, MOD_K);
	t_checked("node1: cq_mod_caps 65535/4095; a period of 4096 us and no attribute EINVAL; %u events for %d completions, then with ibv_modify_cq(count %d) %u, none before the %d-th since the arm",
		  off, MOD_K, MOD_N, mod, MOD_N);

	t_begin("node1: ibv_modify_cq: a period of %d us", MOD_P);
	r = moderate(cq, 0, MOD_P);
	CHECK(!r, "ibv_modify_cq(period %d): %s", MOD_P, vt_en(r));
	/* The event comes a period after the first completion, so at
	 * least that long after the post (a late look only adds to it). */
	t0 = vt_ms();
	writes(qp, mr, buf, peer, *next, 2);
	CHECK(event(ch, cq, 10000), "no event in 10 s with a period of %d us", MOD_P);
	dt = vt_ms() - t0;
	CHECK(dt + 1 >= MOD_P / 1000, "the event came %llu ms after the post, the period is %d us",
	      (unsigned long long)dt, MOD_P);
	take(cq, next, *next + 2);
	r = moderate(cq, 0, 0);
	CHECK(!r, "ibv_modify_cq(0, 0): %s", vt_en(r));
	off = count_events(ch, cq, qp, mr, buf, peer, next, 1);
	CHECK(off == MOD_K, "moderation off again: %u events for %d completions", off, MOD_K);
	t_checked("node1: with a period of %d us the event of 2 completions came %llu ms after their post; ibv_modify_cq(0, 0): %u events for %d completions again",
		  MOD_P, (unsigned long long)dt, off, MOD_K);

	t_begin("node1: a stream with an event-driven consumer (figure)");
	stream(ch, cq, qp, mr, buf, peer, next, "no moderation");
	r = moderate(cq, 16, 100);
	CHECK(!r, "ibv_modify_cq(count 16, period 100): %s", vt_en(r));
	stream(ch, cq, qp, mr, buf, peer, next, "count 16, period 100 us");
	r = moderate(cq, 0, 0);
	CHECK(!r, "ibv_modify_cq(0, 0): %s", vt_en(r));
	t_checked("node1: 2 x %d writes, %d in flight, every completion in order through the channel, with and without moderation",
		  STREAM, DEPTH);
}

static void client(struct vt *v)
{
	struct ibv_comp_channel *ch;
	struct vt_msg me = {}, peer;
	unsigned int next = 0;
	struct ibv_cq *cq, *ecq;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_wc wc = {};
	void *ectx;
	uint8_t *buf;
	int r;

	vt_open(v);
	vt_sock(v);
	pd = ibv_alloc_pd(v->ctx);
	ch = ibv_create_comp_channel(v->ctx);
	cq = ch ? ibv_create_cq(v->ctx, 16, NULL, ch, 0) : NULL;
	buf = aligned_alloc(4096, 4096);
	if (!pd || !cq || !buf)
		t_bail("PD, channel, CQ or buffer: errno %d", errno);
	vt_fill(buf, BUF, SEED);
	mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		t_bail("ibv_reg_mr: errno %d", errno);
	{
		struct ibv_qp_init_attr a = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 64, .max_recv_wr = 1, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};

		qp = ibv_create_qp(pd, &a);
		if (!qp)
			t_bail("ibv_create_qp: errno %d", errno);
	}
	vt_connect_qp(v, qp, 0);
	vt_xchg(v, &me, &peer);

	t_begin("node1: ibv_resize_cq 16 -> 64 with completions waiting");
	writes(qp, mr, buf, &peer, 0, N1);
	usleep(500000);		/* all N1 complete into the 16-entry ring */
	take(cq, &next, 3);
	r = ibv_resize_cq(cq, 64);
	CHECK(!r && cq->cqe >= 64, "ibv_resize_cq(64): %s, cqe %d", vt_en(r), cq->cqe);
	take(cq, &next, N1);
	t_checked("node1: ibv_resize_cq(16 -> 64) with %d completions waiting: success, cqe %d; they come after it, once and in order",
		  N1 - 3, cq->cqe);

	t_begin("node1: ibv_resize_cq while writes are in flight");
	writes(qp, mr, buf, &peer, N1, N2);
	take(cq, &next, N1 + 5);
	r = ibv_resize_cq(cq, 128);
	CHECK(!r && cq->cqe >= 128, "ibv_resize_cq(128): %s, cqe %d", vt_en(r), cq->cqe);
	r = ibv_resize_cq(cq, 2);
	CHECK(r == EINVAL, "ibv_resize_cq(2) below the completions outstanding: %s", vt_en(r));
	take(cq, &next, N1 + N2);
	CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "a completion more: wr_id %llu",
	      (unsigned long long)wc.wr_id);
	t_checked("node1: ibv_resize_cq(128) with %d writes in flight: success; ibv_resize_cq(2) below the completions outstanding: EINVAL; all %d completions once and in order, then none",
		  N2 - 5, N1 + N2);

	t_begin("node1: ibv_resize_cq to 4 when empty, then the CQ's event");
	r = ibv_resize_cq(cq, 4);
	CHECK(!r && cq->cqe >= 4 && cq->cqe < 16, "ibv_resize_cq(4): %s, cqe %d", vt_en(r), cq->cqe);
	writes(qp, mr, buf, &peer, N1 + N2, N3);
	take(cq, &next, N1 + N2 + N3);
	r = ibv_req_notify_cq(cq, 0);
	CHECK(!r, "ibv_req_notify_cq: %s", vt_en(r));
	writes(qp, mr, buf, &peer, N1 + N2 + N3, 1);
	{
		struct pollfd pf = { .fd = ch->fd, .events = POLLIN };

		r = poll(&pf, 1, 10000);
		CHECK(r == 1, "no CQ event in 10 s");
		if (r == 1) {
			CHECK(!ibv_get_cq_event(ch, &ecq, &ectx) && ecq == cq, "ibv_get_cq_event");
			ibv_ack_cq_events(cq, 1);
		}
	}
	take(cq, &next, NW);
	t_checked("node1: ibv_resize_cq(4) of an empty CQ: success, cqe %d; %d more writes complete, and an armed CQ raises its event on the completion channel",
		  cq->cqe, N3 + 1);
	moderation(ch, cq, qp, mr, buf, &peer, v->ctx, &next);
	vt_sync(v, 1);

	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_destroy_comp_channel(ch);
	ibv_dealloc_pd(pd);
	ibv_close_device(v->ctx);
}

int main(int argc, char **argv)
{
	return vt_run(argc, argv, server, client);
}
