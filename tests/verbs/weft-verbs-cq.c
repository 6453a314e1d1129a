// SPDX-License-Identifier: MIT
/*
 * ibv_resize_cq under traffic (issue 20, docs/rdma-provider.md "Tests"):
 * node1 resizes the CQ of its RDMA WRITEs to node0 while completions are
 * waiting in it and while writes are in flight; every completion comes
 * once and in order, a resize below the completions outstanding is
 * EINVAL, and the CQ raises its event after the resizes.  node0 checks
 * that every write landed.
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

/* Posts writes first .. first + n - 1 (signaled). */
static void writes(struct ibv_qp *qp, struct ibv_mr *mr, uint8_t *buf, const struct vt_msg *peer,
		   unsigned int first, unsigned int n)
{
	unsigned int i;

	for (i = first; i < first + n; i++) {
		struct ibv_sge sge = { (uintptr_t)buf + i * SZ, SZ, mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = peer->addr + i * SZ, .rkey = peer->rkey },
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
