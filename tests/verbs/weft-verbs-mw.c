// SPDX-License-Identifier: MIT
/*
 * Memory windows through libibverbs (issue 15, docs/rdma-provider.md
 * "Tests"): node0 binds a type 1 window (ibv_bind_mw) and a type 2 window
 * (IBV_WR_BIND_MW) over parts of one MR; node1 writes and reads through
 * the windows' rkeys.  Inside a window with the right: success,
 * byte-exact.  Outside it, without the right, through another QP (type
 * 2), after invalidation (IBV_WR_LOCAL_INV, send with invalidate) or after
 * ibv_dealloc_mw: IBV_WC_REM_ACCESS_ERR, and node0's memory unchanged.
 * The MR cannot be deregistered while a window is bound to it (EINVAL,
 * as rxe), nor the PD freed (EBUSY).
 *
 * Usage: weft-verbs-mw -s -g GIDX (node0) | -c NODE0_ADDR -g GIDX (node1)
 */
#include "vt.h"

#define BUF 16384
#define W1 4096			/* the type 1 window: [W1, W1 + WLEN) */
#define W2 8192			/* the type 2 window */
#define WLEN 4096
#define RECV_OFF 12288		/* node0's receive buffer */
#define SEND_LEN 8
#define SEED_S 0x5e		/* node0's memory */
#define SEED_1 0x71		/* what node1 writes through the type 1 window */
#define SEED_2 0x82		/* ... through the type 2 window */
#define SEED_X 0x93		/* writes that must not land */
#define SEED_M 0xa4		/* the send with invalidate */
#define QP_ACC (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* What node0 tells node1 at each step. */
struct win {
	uint64_t addr;		/* the window's start */
	uint32_t rkey;
};

/* ---- node0 -------------------------------------------------------------------- */

struct srv {
	struct vt *v;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

/* One send completion on node0: its status, and its opcode in *op. */
static int s_wc(struct srv *s, enum ibv_wc_opcode *op)
{
	struct ibv_wc wc;

	if (!vt_poll(s->cq, &wc))
		return -1;
	*op = wc.opcode;
	return wc.status;
}

static void s_bind1(struct srv *s, struct ibv_qp *qp, struct ibv_mw *mw, int access,
		    const char *what)
{
	struct ibv_mw_bind b = {
		.wr_id = 11, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = s->mr, .addr = (uintptr_t)s->buf + W1, .length = WLEN,
			       .mw_access_flags = (unsigned int)access },
	};
	enum ibv_wc_opcode op = 0;
	uint32_t old = mw->rkey;
	int r, st;

	t_begin("node0: ibv_bind_mw (type 1, %s)", what);
	r = ibv_bind_mw(qp, mw, &b);
	CHECK(!r, "ibv_bind_mw: %s", vt_en(r));
	st = s_wc(s, &op);
	CHECK(st == IBV_WC_SUCCESS && op == IBV_WC_BIND_MW, "completion %s, opcode %d",
	      vt_status(st), op);
	CHECK(mw->rkey != old, "the rkey did not change (0x%x)", old);
	t_checked("node0: ibv_bind_mw type 1 window [%d, %d) of the MR, %s: IBV_WC_BIND_MW success, rkey 0x%x -> 0x%x",
		  W1, W1 + WLEN, what, old, mw->rkey);
}

static uint32_t s_bind2(struct srv *s, struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey)
{
	struct ibv_send_wr wr = {
		.wr_id = 12, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
		.bind_mw = { .mw = mw, .rkey = ibv_inc_rkey(rkey),
			     .bind_info = { .mr = s->mr, .addr = (uintptr_t)s->buf + W2,
					    .length = WLEN, .mw_access_flags = QP_ACC } },
	}, *bad = NULL;
	enum ibv_wc_opcode op = 0;
	int r, st;

	t_begin("node0: IBV_WR_BIND_MW (type 2)");
	r = ibv_post_send(qp, &wr, &bad);
	CHECK(!r, "ibv_post_send(BIND_MW): %s", vt_en(r));
	st = s_wc(s, &op);
	CHECK(st == IBV_WC_SUCCESS && op == IBV_WC_BIND_MW, "completion %s, opcode %d",
	      vt_status(st), op);
	t_checked("node0: IBV_WR_BIND_MW type 2 window [%d, %d) on QP %u, remote write and read: IBV_WC_BIND_MW success, rkey 0x%x",
		  W2, W2 + WLEN, qp->qp_num, wr.bind_mw.rkey);
	return wr.bind_mw.rkey;
}

static void s_tell(struct srv *s, uint64_t off, uint32_t rkey)
{
	struct win w = { (uintptr_t)s->buf + off, rkey };

	vt_send(s->v, &w, sizeof(w));
}

/* node0's memory: [off, off + len) holds pattern seed from its start. */
static int s_holds(struct srv *s, size_t off, size_t len, uint8_t seed, size_t from)
{
	return vt_diff(s->buf + off, len, seed, from) < 0;
}

/*
 * 9: an MR registered with local write and window binding only; a type 1
 * and a type 2 window over it grant remote write, with
 * IBV_ACCESS_LOCAL_WRITE in their flags as IB allows: both binds succeed
 * and node1's writes through them land (the window gives the remote
 * right, the region needs only local write).
 */
static void s_local_write(struct srv *s)
{
	const unsigned int acc = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	struct ibv_mw *m1, *m2;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint8_t *buf = aligned_alloc(4096, 2 * WLEN);
	struct ibv_mw_bind b1 = { .wr_id = 15, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr wr = { .wr_id = 16, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad = NULL;
	enum ibv_wc_opcode op = 0;
	int r, st, st2;

	if (!buf)
		t_bail("buffer");
	vt_fill(buf, 2 * WLEN, SEED_S);
	mr = ibv_reg_mr(s->pd, buf, 2 * WLEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	m1 = ibv_alloc_mw(s->pd, IBV_MW_TYPE_1);
	m2 = ibv_alloc_mw(s->pd, IBV_MW_TYPE_2);
	if (!mr || !m1 || !m2)
		t_bail("session 9 MR or windows: errno %d", errno);
	qp = vt_connect(s->v, s->pd, s->cq, QP_ACC);
	b1.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)buf,
						  .length = WLEN, .mw_access_flags = acc };
	t_begin("node0: type 1 bind of remote and local write over a local-write MR");
	r = ibv_bind_mw(qp, m1, &b1);
	st = r ? -1 : s_wc(s, &op);
	CHECK(!r && st == IBV_WC_SUCCESS && op == IBV_WC_BIND_MW, "ibv_bind_mw %s, completion %s",
	      vt_en(r), vt_status(st));
	t_checked("node0: ibv_bind_mw type 1, REMOTE_WRITE|LOCAL_WRITE over an MR registered LOCAL_WRITE|MW_BIND: success");
	wr.bind_mw.mw = m2;
	wr.bind_mw.rkey = ibv_inc_rkey(m2->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)buf + WLEN,
							  .length = WLEN, .mw_access_flags = acc };
	t_begin("node0: type 2 bind of remote and local write over a local-write MR");
	r = ibv_post_send(qp, &wr, &bad);
	st2 = r ? -1 : s_wc(s, &op);
	CHECK(!r && st2 == IBV_WC_SUCCESS && op == IBV_WC_BIND_MW, "post %s, completion %s",
	      vt_en(r), vt_status(st2));
	t_checked("node0: IBV_WR_BIND_MW type 2, REMOTE_WRITE|LOCAL_WRITE over the same MR: success");
	if (st != IBV_WC_SUCCESS || st2 != IBV_WC_SUCCESS)
		t_abort();
	vt_send(s->v, &(struct win){ (uintptr_t)buf, m1->rkey }, sizeof(struct win));
	vt_send(s->v, &(struct win){ (uintptr_t)buf + WLEN, wr.bind_mw.rkey }, sizeof(struct win));
	vt_sync(s->v, 26);	/* node1 wrote through both */
	t_begin("node0: memory after session 9");
	CHECK(vt_diff(buf, WLEN, SEED_1, 0) < 0 && vt_diff(buf + WLEN, WLEN, SEED_2, 0) < 0,
	      "the windows do not hold node1's writes");
	t_checked("node0: both windows over the local-write MR hold node1's %d B byte-exact", WLEN);
	ibv_destroy_qp(qp);
	t_begin("node0: session 9 teardown");
	CHECK(!ibv_dealloc_mw(m1) && !ibv_dealloc_mw(m2) && !ibv_dereg_mr(mr), "errno %d", errno);
	t_checked("node0: ibv_dealloc_mw (both) and ibv_dereg_mr of the local-write MR: success");
	free(buf);
}

static void server(struct vt *v)
{
	struct srv s = { .v = v };
	struct ibv_qp *qp, *qp2;
	struct ibv_mw *mw1, *mw2, *mw9;
	struct ibv_mw_bind zb, b9;
	struct ibv_pd *pd9;
	struct ibv_cq *cq9;
	struct ibv_mr *mr9;
	uint8_t *buf9;
	struct ibv_send_wr inv = { .wr_id = 13, .opcode = IBV_WR_LOCAL_INV,
				   .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_recv_wr rwr = { .wr_id = 14, .num_sge = 1 }, *rbad;
	struct ibv_sge rsge;
	struct ibv_wc wc;
	enum ibv_wc_opcode op = 0;
	uint32_t rk2;
	int r, st;

	vt_open(v);
	s.pd = ibv_alloc_pd(v->ctx);
	s.cq = ibv_create_cq(v->ctx, 64, NULL, NULL, 0);
	s.buf = aligned_alloc(4096, BUF);
	if (!s.pd || !s.cq || !s.buf)
		t_bail("PD, CQ or buffer");
	vt_fill(s.buf, BUF, SEED_S);
	s.mr = ibv_reg_mr(s.pd, s.buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	if (!s.mr)
		t_bail("ibv_reg_mr(MW_BIND): errno %d", errno);
	t_diag("device %s: max_mw %d, device_cap_flags 0x%x", ibv_get_device_name(v->ctx->device),
	       v->attr.max_mw, v->attr.device_cap_flags);
	t_begin("node0: window allocation");
	CHECK(v->attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW, "no IBV_DEVICE_MEM_WINDOW");
	mw1 = ibv_alloc_mw(s.pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(s.pd, IBV_MW_TYPE_2);
	CHECK(mw1 && mw2, "ibv_alloc_mw: errno %d", errno);
	if (!mw1 || !mw2)
		t_abort();
	t_checked("node0: ibv_alloc_mw type 1 (rkey 0x%x) and type 2 (rkey 0x%x)", mw1->rkey, mw2->rkey);
	errno = 0;
	t_begin("node0: ibv_alloc_mw(type 3)");
	CHECK(!ibv_alloc_mw(s.pd, (enum ibv_mw_type)3) && errno == EINVAL, "errno %s", vt_en(errno));
	t_checked("node0: ibv_alloc_mw(type 3) -> NULL, errno EINVAL");
	vt_sock(v);

	/* 1: type 1 window, read-write: inside works, across its end fails. */
	qp = vt_connect(v, s.pd, s.cq, QP_ACC);
	zb = (struct ibv_mw_bind){ .bind_info = { .mr = s.mr, .addr = (uintptr_t)s.buf + W1,
						  .length = WLEN,
						  .mw_access_flags = QP_ACC | IBV_ACCESS_ZERO_BASED } };
	r = ibv_bind_mw(qp, mw1, &zb);
	t_begin("node0: zero-based bind");
	CHECK(r == EINVAL, "returned %s", vt_en(r));
	t_checked("node0: ibv_bind_mw with IBV_ACCESS_ZERO_BASED -> EINVAL (zero-based windows not supported)");
	r = ibv_bind_mw(qp, mw2, &zb);
	t_begin("node0: ibv_bind_mw of a type 2 window");
	CHECK(r == EINVAL, "returned %s", vt_en(r));
	t_checked("node0: ibv_bind_mw of a type 2 window -> EINVAL (type 2 binds by IBV_WR_BIND_MW)");
	s_bind1(&s, qp, mw1, QP_ACC, "remote write and read");
	t_begin("node0: the MR and PD while a window is bound");
	r = ibv_dereg_mr(s.mr);
	CHECK(r == EINVAL, "ibv_dereg_mr: %s", vt_en(r));
	st = ibv_dealloc_pd(s.pd);
	CHECK(st == EBUSY, "ibv_dealloc_pd: %s", vt_en(st));
	t_checked("node0: with a window bound, ibv_dereg_mr(the MR) -> %s, ibv_dealloc_pd -> %s", vt_en(r), vt_en(st));
	s_tell(&s, W1, mw1->rkey);
	vt_sync(v, 1);		/* node1: write, read back, write across the end */
	t_begin("node0: memory after session 1");
	CHECK(s_holds(&s, 0, W1, SEED_S, 0) && s_holds(&s, W1 + WLEN, BUF - W1 - WLEN, SEED_S, W1 + WLEN),
	      "memory outside the window changed");
	CHECK(s_holds(&s, W1, WLEN, SEED_1, 0), "the window does not hold node1's write");
	t_checked("node0: the type 1 window holds node1's %d B byte-exact; the MR outside it unchanged (the write across the end wrote nothing)", WLEN);
	ibv_destroy_qp(qp);

	/* 2: the same window rebound read-only: reads work, writes fail. */
	qp = vt_connect(v, s.pd, s.cq, QP_ACC);
	s_bind1(&s, qp, mw1, IBV_ACCESS_REMOTE_READ, "remote read only");
	s_tell(&s, W1, mw1->rkey);
	vt_sync(v, 2);
	ibv_destroy_qp(qp);
	/* 3: below the window, inside the MR. */
	qp = vt_connect(v, s.pd, s.cq, QP_ACC);
	vt_sync(v, 3);
	ibv_destroy_qp(qp);
	/* 4: the window deallocated: its rkey fails. */
	qp = vt_connect(v, s.pd, s.cq, QP_ACC);
	vt_sync(v, 4);		/* node1 read through it */
	t_begin("node0: ibv_dealloc_mw (type 1, bound)");
	r = ibv_dealloc_mw(mw1);
	CHECK(!r, "ibv_dealloc_mw: %s", vt_en(r));
	t_checked("node0: ibv_dealloc_mw of the bound type 1 window: success");
	vt_sync(v, 5);		/* node1 reads with the old rkey */
	vt_sync(v, 21);		/* ... and has its completion */
	ibv_destroy_qp(qp);
	t_begin("node0: memory after sessions 2-4");
	CHECK(s_holds(&s, W1, WLEN, SEED_1, 0), "the read-only window changed");
	t_checked("node0: the read-only window unchanged by node1's refused write");

	/* 5: type 2 window: inside works, then LOCAL_INV kills the rkey. */
	qp = vt_connect(v, s.pd, s.cq, QP_ACC);
	rk2 = s_bind2(&s, qp, mw2, mw2->rkey);
	s_tell(&s, W2, rk2);
	vt_sync(v, 6);		/* node1 wrote and read back */
	inv.invalidate_rkey = rk2;
	bad = NULL;
	t_begin("node0: IBV_WR_LOCAL_INV of the type 2 window");
	r = ibv_post_send(qp, &inv, &bad);
	st = s_wc(&s, &op);
	CHECK(!r && st == IBV_WC_SUCCESS && op == IBV_WC_LOCAL_INV, "post %s, completion %s, opcode %d",
	      vt_en(r), vt_status(st), op);
	t_checked("node0: IBV_WR_LOCAL_INV of rkey 0x%x: IBV_WC_LOCAL_INV success", rk2);
	vt_sync(v, 7);		/* node1 writes with the invalidated rkey */
	vt_sync(v, 22);
	ibv_destroy_qp(qp);
	t_begin("node0: memory after session 5");
	CHECK(s_holds(&s, W2, WLEN, SEED_2, 0), "the type 2 window does not hold node1's write");
	t_checked("node0: the type 2 window holds node1's %d B byte-exact; the write after LOCAL_INV wrote nothing", WLEN);

	/* 6: type 2 bound to QP A: not through QP B; outside it fails. */
	qp = vt_connect(v, s.pd, s.cq, QP_ACC);
	qp2 = vt_connect(v, s.pd, s.cq, QP_ACC);
	rk2 = s_bind2(&s, qp, mw2, rk2);
	s_tell(&s, W2, rk2);
	vt_sync(v, 8);
	ibv_destroy_qp(qp2);
	ibv_destroy_qp(qp);

	/* 7: send with invalidate. */
	qp = vt_connect(v, s.pd, s.cq, QP_ACC);
	rsge = (struct ibv_sge){ (uintptr_t)s.buf + RECV_OFF, 256, s.mr->lkey };
	rwr.sg_list = &rsge;
	if (ibv_post_recv(qp, &rwr, &rbad))
		t_bail("ibv_post_recv: errno %d", errno);
	rk2 = s_bind2(&s, qp, mw2, rk2);
	s_tell(&s, W2, rk2);
	vt_sync(v, 9);		/* node1 read, then sent with invalidate */
	t_begin("node0: the send with invalidate");
	st = vt_poll(s.cq, &wc) ? (int)wc.status : -1;
	CHECK(st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && (wc.wc_flags & IBV_WC_WITH_INV) &&
	      wc.invalidated_rkey == rk2 && wc.byte_len == SEND_LEN,
	      "completion %s, opcode %d, flags 0x%x, invalidated 0x%x, %u B", vt_status(st),
	      wc.opcode, wc.wc_flags, wc.invalidated_rkey, wc.byte_len);
	CHECK(s_holds(&s, RECV_OFF, SEND_LEN, SEED_M, 0), "received data wrong");
	t_checked("node0: receive with IBV_WC_WITH_INV, invalidated_rkey 0x%x, %d B byte-exact", rk2, SEND_LEN);
	vt_sync(v, 10);		/* node1 reads with the invalidated rkey */
	vt_sync(v, 23);
	ibv_destroy_qp(qp);

	/* 8: type 2 deallocated. */
	qp = vt_connect(v, s.pd, s.cq, QP_ACC);
	rk2 = s_bind2(&s, qp, mw2, rk2);
	s_tell(&s, W2, rk2);
	vt_sync(v, 11);		/* node1 read through it */
	t_begin("node0: ibv_dealloc_mw (type 2, bound)");
	r = ibv_dealloc_mw(mw2);
	CHECK(!r, "ibv_dealloc_mw: %s", vt_en(r));
	t_checked("node0: ibv_dealloc_mw of the bound type 2 window: success");
	vt_sync(v, 12);		/* node1 reads with the old rkey */
	vt_sync(v, 24);
	ibv_destroy_qp(qp);

	s_local_write(&s);

	/*
	 * 10: the process ends with a window bound to an MR registered after
	 * the window: at close, ib_uverbs destroys the newer MR first, which
	 * the driver refuses while the window is bound, and again after the
	 * window is gone (the scenario checks the counts and kernel log).
	 */
	pd9 = ibv_alloc_pd(v->ctx);
	cq9 = ibv_create_cq(v->ctx, 16, NULL, NULL, 0);
	mw9 = pd9 ? ibv_alloc_mw(pd9, IBV_MW_TYPE_1) : NULL;
	buf9 = aligned_alloc(4096, 4096);
	mr9 = pd9 && buf9 ? ibv_reg_mr(pd9, buf9, 4096, IBV_ACCESS_LOCAL_WRITE |
					 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND) : NULL;
	if (!cq9 || !mw9 || !mr9)
		t_bail("session 10 objects: errno %d", errno);
	qp = vt_connect(v, pd9, cq9, QP_ACC);
	b9 = (struct ibv_mw_bind){ .wr_id = 19, .send_flags = IBV_SEND_SIGNALED,
				   .bind_info = { .mr = mr9, .addr = (uintptr_t)buf9, .length = 4096,
						  .mw_access_flags = IBV_ACCESS_REMOTE_READ } };
	t_begin("node0: a window bound to an MR registered after it");
	r = ibv_bind_mw(qp, mw9, &b9);
	st = vt_poll(cq9, &wc) ? (int)wc.status : -1;
	CHECK(!r && st == IBV_WC_SUCCESS, "bind %s, completion %s", vt_en(r), vt_status(st));
	r = ibv_dereg_mr(mr9);
	CHECK(r == EINVAL, "ibv_dereg_mr: %s", vt_en(r));
	t_checked("node0: a type 1 window bound to an MR registered after it: ibv_dereg_mr -> %s; both left to the close with their QP, CQ and PD", vt_en(r));
	vt_sync(v, 25);

	t_begin("node0: final memory");
	CHECK(s_holds(&s, 0, W1, SEED_S, 0), "[0, W1) changed");
	CHECK(s_holds(&s, W1, WLEN, SEED_1, 0) && s_holds(&s, W2, WLEN, SEED_2, 0), "a window changed");
	CHECK(s_holds(&s, RECV_OFF + SEND_LEN, BUF - RECV_OFF - SEND_LEN, SEED_S, RECV_OFF + SEND_LEN),
	      "the tail changed");
	t_checked("node0: all %d B as expected: only the two good writes and the received message changed memory", BUF);
	t_begin("node0: teardown");
	r = ibv_dereg_mr(s.mr);
	CHECK(!r && !ibv_destroy_cq(s.cq) && !ibv_dealloc_pd(s.pd), "ibv_dereg_mr %s", vt_en(r));
	t_checked("node0: with no window bound any more, ibv_dereg_mr, ibv_destroy_cq and ibv_dealloc_pd succeed");
	t_begin("node0: close with objects left");
	CHECK(!ibv_close_device(v->ctx), "ibv_close_device: errno %d", errno);
	t_checked("node0: ibv_close_device with session 9's QP, CQ, MR, bound window and PD left: success");
}

/* ---- node1 -------------------------------------------------------------------- */

struct cli {
	struct vt *v;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

/* An operation that must succeed (a READ must bring SEED from FROM). */
static void c_ok(struct cli *c, struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t raddr,
		 uint32_t rkey, uint32_t len, uint8_t seed, const char *what)
{
	int st;

	if (op == IBV_WR_RDMA_WRITE)
		vt_fill(c->buf, len, seed);
	else
		memset(c->buf, 0, len);
	t_begin("node1: %s", what);
	st = vt_rdma(qp, c->cq, op, c->mr, c->buf, len, raddr, rkey);
	CHECK(st == IBV_WC_SUCCESS, "status %s", vt_status(st));
	if (op == IBV_WR_RDMA_READ)
		CHECK(vt_diff(c->buf, len, seed, 0) < 0, "READ data wrong at %ld",
		      vt_diff(c->buf, len, seed, 0));
	t_checked("node1: %s (rkey 0x%x, %u B): success%s", what, rkey, len,
		  op == IBV_WR_RDMA_READ ? ", byte-exact" : "");
}

/* An operation that must fail with IBV_WC_REM_ACCESS_ERR, QP to ERR. */
static void c_refused(struct cli *c, struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t raddr,
		      uint32_t rkey, uint32_t len, const char *what)
{
	size_t j;
	int st;

	if (op == IBV_WR_RDMA_WRITE)
		vt_fill(c->buf, len, SEED_X);
	else
		memset(c->buf, 0xee, len);
	t_begin("node1: %s", what);
	st = vt_rdma(qp, c->cq, op, c->mr, c->buf, len, raddr, rkey);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "status %s", vt_status(st));
	CHECK_EQ(vt_qp_wait(qp, IBV_QPS_ERR), IBV_QPS_ERR, "node1's QP state");
	for (j = 0; op == IBV_WR_RDMA_READ && j < len && c->buf[j] == 0xee; j++)
		;
	CHECK(op != IBV_WR_RDMA_READ || j == len, "the failed READ wrote byte %zu", j);
	t_checked("node1: %s (rkey 0x%x): IBV_WC_REM_ACCESS_ERR, QP in ERR", what, rkey);
}

static void client(struct vt *v)
{
	struct cli c = { .v = v };
	struct ibv_pd *pd;
	struct ibv_qp *qp, *qp2;
	struct win w;
	struct ibv_sge sge;
	struct ibv_send_wr swr = { .wr_id = 21, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND_WITH_INV,
				   .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int st;

	vt_open(v);
	pd = ibv_alloc_pd(v->ctx);
	c.cq = ibv_create_cq(v->ctx, 64, NULL, NULL, 0);
	c.buf = aligned_alloc(4096, BUF);
	if (!pd || !c.cq || !c.buf)
		t_bail("PD, CQ or buffer");
	c.mr = ibv_reg_mr(pd, c.buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	if (!c.mr)
		t_bail("ibv_reg_mr: errno %d", errno);
	vt_sock(v);

	qp = vt_connect(v, pd, c.cq, 0);
	vt_recv(v, &w, sizeof(w));
	c_ok(&c, qp, IBV_WR_RDMA_WRITE, w.addr, w.rkey, WLEN, SEED_1,
	     "RDMA WRITE filling the type 1 window");
	c_ok(&c, qp, IBV_WR_RDMA_READ, w.addr, w.rkey, WLEN, SEED_1,
	     "RDMA READ of the type 1 window");
	c_refused(&c, qp, IBV_WR_RDMA_WRITE, w.addr + WLEN - 16, w.rkey, 32,
		  "RDMA WRITE of 32 B across the type 1 window's end");
	vt_sync(v, 1);
	ibv_destroy_qp(qp);

	qp = vt_connect(v, pd, c.cq, 0);
	vt_recv(v, &w, sizeof(w));
	c_ok(&c, qp, IBV_WR_RDMA_READ, w.addr, w.rkey, WLEN, SEED_1,
	     "RDMA READ of the read-only type 1 window");
	c_refused(&c, qp, IBV_WR_RDMA_WRITE, w.addr, w.rkey, 64,
		  "RDMA WRITE into the read-only type 1 window (no remote write right)");
	vt_sync(v, 2);
	ibv_destroy_qp(qp);
	qp = vt_connect(v, pd, c.cq, 0);
	c_refused(&c, qp, IBV_WR_RDMA_READ, w.addr - 64, w.rkey, 128,
		  "RDMA READ starting 64 B below the type 1 window (inside the MR)");
	vt_sync(v, 3);
	ibv_destroy_qp(qp);
	qp = vt_connect(v, pd, c.cq, 0);
	c_ok(&c, qp, IBV_WR_RDMA_READ, w.addr, w.rkey, 256, SEED_1,
	     "RDMA READ of the type 1 window before ibv_dealloc_mw");
	vt_sync(v, 4);
	vt_sync(v, 5);
	c_refused(&c, qp, IBV_WR_RDMA_READ, w.addr, w.rkey, 256,
		  "RDMA READ with the type 1 window's rkey after ibv_dealloc_mw");
	vt_sync(v, 21);
	ibv_destroy_qp(qp);

	qp = vt_connect(v, pd, c.cq, 0);
	vt_recv(v, &w, sizeof(w));
	c_ok(&c, qp, IBV_WR_RDMA_WRITE, w.addr, w.rkey, WLEN, SEED_2,
	     "RDMA WRITE filling the type 2 window");
	c_ok(&c, qp, IBV_WR_RDMA_READ, w.addr, w.rkey, WLEN, SEED_2,
	     "RDMA READ of the type 2 window");
	vt_sync(v, 6);
	vt_sync(v, 7);
	c_refused(&c, qp, IBV_WR_RDMA_WRITE, w.addr, w.rkey, 64,
		  "RDMA WRITE with the type 2 window's rkey after IBV_WR_LOCAL_INV");
	vt_sync(v, 22);
	ibv_destroy_qp(qp);

	qp = vt_connect(v, pd, c.cq, 0);
	qp2 = vt_connect(v, pd, c.cq, 0);
	vt_recv(v, &w, sizeof(w));
	c_refused(&c, qp2, IBV_WR_RDMA_READ, w.addr, w.rkey, 256,
		  "RDMA READ of the type 2 window through a QP it is not bound to");
	c_ok(&c, qp, IBV_WR_RDMA_READ, w.addr, w.rkey, 256, SEED_2,
	     "RDMA READ of the type 2 window through the QP it is bound to");
	c_refused(&c, qp, IBV_WR_RDMA_READ, w.addr + WLEN - 8, w.rkey, 16,
		  "RDMA READ of 16 B across the type 2 window's end");
	vt_sync(v, 8);
	ibv_destroy_qp(qp2);
	ibv_destroy_qp(qp);

	qp = vt_connect(v, pd, c.cq, 0);
	vt_recv(v, &w, sizeof(w));
	c_ok(&c, qp, IBV_WR_RDMA_READ, w.addr, w.rkey, 256, SEED_2,
	     "RDMA READ of the rebound type 2 window");
	vt_fill(c.buf, SEND_LEN, SEED_M);
	sge = (struct ibv_sge){ (uintptr_t)c.buf, SEND_LEN, c.mr->lkey };
	swr.invalidate_rkey = w.rkey;
	bad = NULL;
	t_begin("node1: send with invalidate");
	st = ibv_post_send(qp, &swr, &bad);
	CHECK(!st, "ibv_post_send(SEND_WITH_INV): %s", vt_en(st));
	st = vt_poll(c.cq, &wc) ? (int)wc.status : -1;
	CHECK(st == IBV_WC_SUCCESS, "completion %s", vt_status(st));
	t_checked("node1: IBV_WR_SEND_WITH_INV of rkey 0x%x: success", w.rkey);
	vt_sync(v, 9);
	vt_sync(v, 10);
	c_refused(&c, qp, IBV_WR_RDMA_READ, w.addr, w.rkey, 256,
		  "RDMA READ with the type 2 window's rkey after the send with invalidate");
	vt_sync(v, 23);
	ibv_destroy_qp(qp);

	qp = vt_connect(v, pd, c.cq, 0);
	vt_recv(v, &w, sizeof(w));
	c_ok(&c, qp, IBV_WR_RDMA_READ, w.addr, w.rkey, 256, SEED_2,
	     "RDMA READ of the type 2 window before ibv_dealloc_mw");
	vt_sync(v, 11);
	vt_sync(v, 12);
	c_refused(&c, qp, IBV_WR_RDMA_READ, w.addr, w.rkey, 256,
		  "RDMA READ with the type 2 window's rkey after ibv_dealloc_mw");
	vt_sync(v, 24);
	ibv_destroy_qp(qp);

	qp = vt_connect(v, pd, c.cq, 0);
	vt_recv(v, &w, sizeof(w));
	c_ok(&c, qp, IBV_WR_RDMA_WRITE, w.addr, w.rkey, WLEN, SEED_1,
	     "RDMA WRITE through the type 1 window over the local-write MR");
	vt_recv(v, &w, sizeof(w));
	c_ok(&c, qp, IBV_WR_RDMA_WRITE, w.addr, w.rkey, WLEN, SEED_2,
	     "RDMA WRITE through the type 2 window over the local-write MR");
	vt_sync(v, 26);
	ibv_destroy_qp(qp);

	qp = vt_connect(v, pd, c.cq, 0);
	vt_sync(v, 25);
	ibv_destroy_qp(qp);

	t_begin("node1: teardown");
	CHECK(!ibv_dereg_mr(c.mr) && !ibv_destroy_cq(c.cq) && !ibv_dealloc_pd(pd), "errno %d", errno);
	t_checked("node1: teardown without error");
	ibv_close_device(v->ctx);
}

int main(int argc, char **argv)
{
	return vt_run(argc, argv, server, client);
}
