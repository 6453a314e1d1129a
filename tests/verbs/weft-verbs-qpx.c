// SPDX-License-Identifier: MIT
/*
 * The extended QP API (issue 20, docs/rdma-provider.md "Tests"): node1
 * makes its RC and UD queue pairs with ibv_create_qp_ex and posts every
 * operation the provider builds through ibv_wr_start / ibv_wr_* /
 * ibv_wr_complete: RDMA WRITE (an SGE list, and through a type 2 window
 * node0 bound with ibv_wr_bind_mw), WRITE with immediate, SEND, SEND with
 * immediate (inline data), SEND with invalidate (an inline data list),
 * RDMA READ, both atomics, a UD SEND (ibv_wr_set_ud_addr); ibv_wr_abort
 * and an ibv_wr_complete that fails post nothing.  node0 checks every byte
 * that lands and reads its completions with the extended CQ API; it
 * invalidates a second window with ibv_wr_local_inv, after which node1's
 * write through it fails with IBV_WC_REM_ACCESS_ERR.
 *
 * Usage: weft-verbs-qpx -s -g GIDX (node0) | -c NODE0_ADDR -g GIDX (node1)
 */
#include "vt.h"

#define BUF 65536
/* node0's buffer */
#define OFF_WIN 0		/* the type 2 window, 4 KiB */
#define OFF_W 4096		/* RDMA WRITE from 3 SGEs, W_LEN bytes */
#define OFF_WI 8192		/* RDMA WRITE with immediate, WI_LEN bytes */
#define OFF_R 12288		/* read by node1, R_LEN bytes */
#define OFF_ATOM 16384		/* the atomics' 64-bit word */
#define OFF_ABORT 20480		/* written by an aborted batch: must not change */
#define OFF_FAIL 24576		/* written by a failed batch: must not change */
#define OFF_RECV 32768		/* receive buffers, RECV_SZ each */
#define OFF_UD 49152		/* the UD receive: 40 B network header + UD_LEN */
#define WIN_LEN 4096
#define W_LEN 3000
#define WI_LEN 1000
#define R_LEN 2048
#define S_LEN 500
#define SI_LEN 100
#define UD_LEN 256
#define RECV_SZ 1024
#define NRECV 3
#define ATOM0 100ull
#define IMM_WI 0x11223344u
#define IMM_SI 0x55667788u
#define QKEY 0x1234567u
/* pattern seeds */
#define SEED_S 0x3c		/* node0's memory */
#define SEED_WIN 0x41
#define SEED_W 0x52
#define SEED_WI 0x63
#define SEED_SEND 0x74
#define SEED_SI 0x85
#define SEED_INV 0x96
#define SEED_UD 0xa7
#define SEED_WIN2 0xb8
#define SEED_X 0xc9		/* what must not land */
#define SEED_C 0xda		/* node1's memory */
#define QP_ACC (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
/* node1's buffer: the sources, at the same offsets as their targets */
#define C_READ 57344		/* the READ's destination */
#define C_ATOM 61440		/* the atomics' results */

/* What node0 tells node1. */
#define AUX_WIN 0		/* the window's rkey */
#define AUX_UDQPN 1		/* node0's UD QP */

/* ---- both --------------------------------------------------------------------- */

/* Up to n completions of cq (10 s at most) read with the extended CQ API:
 * wr_id, status, opcode, byte_len, wc_flags, imm_data (or invalidated
 * rkey), qp_num and src_qp of each.  Returns how many came. */
struct xwc {
	uint64_t id;
	int status;
	enum ibv_wc_opcode op;
	uint32_t len, flags, imm, qpn, src_qp;
};

static int xpoll(struct ibv_cq_ex *cq, struct xwc *w, int n)
{
	struct ibv_poll_cq_attr pa = {};
	uint64_t end = vt_ms() + 10000;
	int got = 0, r;

	while (got < n && vt_ms() < end) {
		r = ibv_start_poll(cq, &pa);
		if (r == ENOENT)
			continue;
		if (r)
			t_bail("ibv_start_poll: %d", r);
		do {
			struct xwc *x = &w[got++];

			x->id = cq->wr_id;
			x->status = cq->status;
			x->op = ibv_wc_read_opcode(cq);
			x->len = ibv_wc_read_byte_len(cq);
			x->flags = (uint32_t)ibv_wc_read_wc_flags(cq);
			x->imm = x->flags & IBV_WC_WITH_INV ? ibv_wc_read_invalidated_rkey(cq) :
				be32toh(ibv_wc_read_imm_data(cq));
			x->qpn = ibv_wc_read_qp_num(cq);
			x->src_qp = ibv_wc_read_src_qp(cq);
		} while (got < n && !(r = ibv_next_poll(cq)));
		if (r && r != ENOENT)
			t_bail("ibv_next_poll: %d", r);
		ibv_end_poll(cq);
	}
	return got;
}

static struct ibv_cq_ex *xcq(struct vt *v)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 64, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
				       IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP,
	};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(v->ctx, &ca);

	if (!cq)
		t_bail("ibv_create_cq_ex: errno %d", errno);
	return cq;
}

/* A UD QP of pd on cq, in RTS. */
static int ud_ready(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* ---- node0 -------------------------------------------------------------------- */

struct srv {
	struct vt *v;
	struct ibv_pd *pd;
	struct ibv_cq_ex *cqx;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_qp_ex *x;
	struct ibv_mw *mw;
	uint8_t *buf;
};

/* Binds the type 2 window over [OFF_WIN, +WIN_LEN) with REMOTE_WRITE |
 * LOCAL_WRITE through ibv_wr_bind_mw; its new rkey. */
static uint32_t s_bind(struct srv *s, uint32_t rkey)
{
	struct ibv_mw_bind_info bi = {
		.mr = s->mr, .addr = (uintptr_t)s->buf + OFF_WIN, .length = WIN_LEN,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE,
	};
	struct xwc w = { .status = -1 };
	int r;

	t_begin("node0: ibv_wr_bind_mw (type 2)");
	rkey = ibv_inc_rkey(rkey);
	ibv_wr_start(s->x);
	s->x->wr_id = 21;
	s->x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(s->x, s->mw, rkey, &bi);
	r = ibv_wr_complete(s->x);
	CHECK(!r, "ibv_wr_complete: %s", vt_en(r));
	CHECK(xpoll(s->cqx, &w, 1) == 1 && w.id == 21 && w.status == IBV_WC_SUCCESS &&
	      w.op == IBV_WC_BIND_MW, "completion %llu %s opcode %d", (unsigned long long)w.id,
	      vt_status(w.status), w.op);
	t_checked("node0: ibv_wr_bind_mw of a type 2 window granting REMOTE_WRITE | LOCAL_WRITE over an MR with LOCAL_WRITE: IBV_WC_BIND_MW success, rkey 0x%x",
		  rkey);
	return rkey;
}

static void s_recv(struct srv *s, uint64_t id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;
	int r = ibv_post_recv(s->qp, &wr, &bad);

	if (r)
		t_bail("ibv_post_recv: %s", vt_en(r));
}

static void server(struct vt *v)
{
	struct ibv_qp_init_attr_ex xa = {
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_init_attr ua = { .qp_type = IBV_QPT_UD,
				       .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
						.max_recv_sge = 1 } };
	struct vt_msg me = {}, peer;
	struct srv s = { .v = v };
	struct ibv_qp *ud;
	struct xwc w[NRECV + 1] = {};
	uint32_t wrkey;
	uint64_t atom;
	int n, i;

	vt_open(v);
	vt_sock(v);
	s.pd = ibv_alloc_pd(v->ctx);
	s.cqx = xcq(v);
	s.buf = aligned_alloc(4096, BUF);
	if (!s.pd || !s.buf)
		t_bail("PD or buffer");
	vt_fill(s.buf, BUF, SEED_S);
	atom = ATOM0;
	memcpy(s.buf + OFF_ATOM, &atom, 8);
	s.mr = ibv_reg_mr(s.pd, s.buf, BUF, IBV_ACCESS_LOCAL_WRITE | QP_ACC | IBV_ACCESS_MW_BIND);
	s.mw = ibv_alloc_mw(s.pd, IBV_MW_TYPE_2);
	if (!s.mr || !s.mw)
		t_bail("ibv_reg_mr or ibv_alloc_mw: errno %d", errno);
	xa.pd = s.pd;
	xa.send_cq = xa.recv_cq = ua.send_cq = ua.recv_cq = ibv_cq_ex_to_cq(s.cqx);
	s.qp = ibv_create_qp_ex(v->ctx, &xa);
	s.x = s.qp ? ibv_qp_to_qp_ex(s.qp) : NULL;
	if (!s.x)
		t_bail("ibv_create_qp_ex (BIND_MW | LOCAL_INV): errno %d, qp %p", errno, (void *)s.qp);
	ud = ibv_create_qp(s.pd, &ua);
	if (!ud || ud_ready(ud))
		t_bail("UD QP: errno %d", errno);
	{
		struct ibv_sge sge = { (uintptr_t)s.buf + OFF_UD, 40 + UD_LEN, s.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 40, .sg_list = &sge, .num_sge = 1 }, *bad;

		i = ibv_post_recv(ud, &wr, &bad);
		if (i)
			t_bail("ibv_post_recv (UD): %s", vt_en(i));
	}
	vt_connect_qp(v, s.qp, QP_ACC);
	/* node1 sends nothing before the exchange below. */
	for (i = 0; i < NRECV; i++)
		s_recv(&s, 30 + i, OFF_RECV + i * RECV_SZ, RECV_SZ);
	wrkey = s_bind(&s, s.mw->rkey);
	memcpy(me.gid, v->gid.raw, 16);
	me.addr = (uintptr_t)s.buf;
	me.rkey = s.mr->rkey;
	me.aux[AUX_WIN] = wrkey;
	me.aux[AUX_UDQPN] = ud->qp_num;
	vt_xchg(v, &me, &peer);

	/* node1's first batch: window write, WRITE (3 SGEs), WRITE_IMM,
	 * SEND, SEND_IMM (inline), SEND_INV (inline list), and a UD SEND. */
	vt_sync(v, 1);
	t_begin("node0: the receives of node1's first batch");
	n = xpoll(s.cqx, w, NRECV + 1);
	CHECK(n == NRECV + 1, "%d completions of %d", n, NRECV + 1);
	if (n == NRECV + 1) {
		/* The UD one may come first: it travels on its own QP. */
		struct xwc *ud_wc = w[0].id == 40 ? &w[0] : &w[NRECV];
		struct xwc *rc = w[0].id == 40 ? &w[1] : &w[0];

		CHECK(rc[0].id == 30 && rc[0].status == IBV_WC_SUCCESS &&
		      rc[0].op == IBV_WC_RECV_RDMA_WITH_IMM && rc[0].len == WI_LEN &&
		      (rc[0].flags & IBV_WC_WITH_IMM) && rc[0].imm == IMM_WI &&
		      rc[0].qpn == s.qp->qp_num,
		      "WRITE_IMM: id %llu %s op %d len %u flags %#x imm %#x qp %u",
		      (unsigned long long)rc[0].id, vt_status(rc[0].status), rc[0].op, rc[0].len,
		      rc[0].flags, rc[0].imm, rc[0].qpn);
		CHECK(rc[1].id == 31 && rc[1].status == IBV_WC_SUCCESS && rc[1].op == IBV_WC_RECV &&
		      rc[1].len == S_LEN && !(rc[1].flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV)),
		      "SEND: id %llu %s op %d len %u flags %#x", (unsigned long long)rc[1].id,
		      vt_status(rc[1].status), rc[1].op, rc[1].len, rc[1].flags);
		CHECK(rc[2].id == 32 && rc[2].status == IBV_WC_SUCCESS && rc[2].op == IBV_WC_RECV &&
		      rc[2].len == SI_LEN && (rc[2].flags & IBV_WC_WITH_IMM) && rc[2].imm == IMM_SI,
		      "SEND_IMM: id %llu %s len %u flags %#x imm %#x", (unsigned long long)rc[2].id,
		      vt_status(rc[2].status), rc[2].len, rc[2].flags, rc[2].imm);
		CHECK(ud_wc->id == 40 && ud_wc->status == IBV_WC_SUCCESS &&
		      ud_wc->len == 40 + UD_LEN && ud_wc->src_qp == peer.aux[AUX_UDQPN] &&
		      ud_wc->qpn == ud->qp_num,
		      "UD: id %llu %s len %u src_qp %u (node1's %u)", (unsigned long long)ud_wc->id,
		      vt_status(ud_wc->status), ud_wc->len, ud_wc->src_qp, peer.aux[AUX_UDQPN]);
	}
	/* The SEND_INV's receive: the invalidated rkey is the window's. */
	s_recv(&s, 33, OFF_RECV + NRECV * RECV_SZ, RECV_SZ);
	vt_sync(v, 2);
	n = xpoll(s.cqx, w, 1);
	CHECK(n == 1 && w[0].id == 33 && w[0].status == IBV_WC_SUCCESS && w[0].op == IBV_WC_RECV &&
	      w[0].len == 60 && (w[0].flags & IBV_WC_WITH_INV) && w[0].imm == wrkey,
	      "SEND_INV: %d, id %llu %s len %u flags %#x rkey %#x (the window's %#x)", n,
	      (unsigned long long)w[0].id, vt_status(w[0].status), w[0].len, w[0].flags,
	      w[0].imm, wrkey);
	CHECK(vt_diff(s.buf + OFF_WIN, 1024, SEED_WIN, 0) < 0, "window write at %ld",
	      vt_diff(s.buf + OFF_WIN, 1024, SEED_WIN, 0));
	CHECK(vt_diff(s.buf + OFF_WIN + 1024, WIN_LEN - 1024, SEED_S, OFF_WIN + 1024) < 0,
	      "the rest of the window changed");
	CHECK(vt_diff(s.buf + OFF_W, W_LEN, SEED_W, 0) < 0, "WRITE (3 SGEs) at %ld",
	      vt_diff(s.buf + OFF_W, W_LEN, SEED_W, 0));
	CHECK(vt_diff(s.buf + OFF_W + W_LEN, 16, SEED_S, OFF_W + W_LEN) < 0, "past the WRITE");
	CHECK(vt_diff(s.buf + OFF_WI, WI_LEN, SEED_WI, 0) < 0, "WRITE_IMM at %ld",
	      vt_diff(s.buf + OFF_WI, WI_LEN, SEED_WI, 0));
	/* Receive 30 took the WRITE_IMM (no bytes), 31 the SEND, 32 the
	 * SEND_IMM, 33 the SEND_INV. */
	CHECK(vt_diff(s.buf + OFF_RECV + RECV_SZ, S_LEN, SEED_SEND, 0) < 0, "SEND at %ld",
	      vt_diff(s.buf + OFF_RECV + RECV_SZ, S_LEN, SEED_SEND, 0));
	CHECK(vt_diff(s.buf + OFF_RECV + 2 * RECV_SZ, SI_LEN, SEED_SI, 0) < 0, "SEND_IMM (inline)");
	CHECK(vt_diff(s.buf + OFF_RECV + 3 * RECV_SZ, 60, SEED_INV, 0) < 0,
	      "SEND_INV (inline list) at %ld", vt_diff(s.buf + OFF_RECV + 3 * RECV_SZ, 60, SEED_INV, 0));
	CHECK(vt_diff(s.buf + OFF_RECV, RECV_SZ, SEED_S, OFF_RECV) < 0,
	      "the WRITE_IMM's receive buffer changed");
	CHECK(vt_diff(s.buf + OFF_UD + 40, UD_LEN, SEED_UD, 0) < 0, "UD SEND at %ld",
	      vt_diff(s.buf + OFF_UD + 40, UD_LEN, SEED_UD, 0));
	t_checked("node0: node1's ibv_wr_* batch landed byte-exact: WRITE through the window, WRITE from 3 SGEs (%d B), WRITE_IMM (%d B, imm 0x%x), SEND (%d B), SEND_IMM inline (%d B), SEND_INV from an inline list (60 B, IBV_WC_WITH_INV, the window's rkey), UD SEND (%d B, src_qp); each read with ibv_start_poll / ibv_next_poll / ibv_wc_read_*",
		  W_LEN, WI_LEN, IMM_WI, S_LEN, SI_LEN, UD_LEN);

	/* node1's READ, atomics, abort and failed batch. */
	vt_sync(v, 3);
	t_begin("node0: after node1's READ, atomics, aborted and failed batches");
	memcpy(&atom, s.buf + OFF_ATOM, 8);
	CHECK(atom == 777, "the atomic word is %llu, not 777", (unsigned long long)atom);
	CHECK(vt_diff(s.buf + OFF_ABORT, 1024, SEED_S, OFF_ABORT) < 0, "the aborted WRITE landed");
	CHECK(vt_diff(s.buf + OFF_FAIL, 1024, SEED_S, OFF_FAIL) < 0,
	      "the failed batch's first WRITE landed");
	t_checked("node0: the atomic word is 777 after FETCH_ADD 5 and CMP_SWP(105, 777); the aborted and the failed batches wrote nothing");

	/* A second binding, invalidated by ibv_wr_local_inv. */
	wrkey = s_bind(&s, wrkey);
	vt_send(v, &wrkey, sizeof(wrkey));
	vt_sync(v, 4);
	t_begin("node0: ibv_wr_local_inv of the window");
	CHECK(vt_diff(s.buf + OFF_WIN, 512, SEED_WIN2, 0) < 0, "the write through the new binding");
	ibv_wr_start(s.x);
	s.x->wr_id = 22;
	s.x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(s.x, wrkey);
	i = ibv_wr_complete(s.x);
	CHECK(!i, "ibv_wr_complete: %s", vt_en(i));
	n = xpoll(s.cqx, w, 1);
	CHECK(n == 1 && w[0].id == 22 && w[0].status == IBV_WC_SUCCESS && w[0].op == IBV_WC_LOCAL_INV,
	      "completion: %d, %s op %d", n, vt_status(w[0].status), w[0].op);
	vt_sync(v, 5);
	vt_sync(v, 6);
	CHECK(vt_diff(s.buf + OFF_WIN + 512, 512, SEED_WIN, 512) < 0,
	      "the write after LOCAL_INV landed");
	t_checked("node0: ibv_wr_local_inv(rkey 0x%x): IBV_WC_LOCAL_INV success; node1's write through it afterwards did not land",
		  wrkey);

	ibv_destroy_qp(ud);
	ibv_destroy_qp(s.qp);
	ibv_dealloc_mw(s.mw);
	ibv_dereg_mr(s.mr);
	ibv_destroy_cq(ibv_cq_ex_to_cq(s.cqx));
	ibv_dealloc_pd(s.pd);
	ibv_close_device(v->ctx);
}

/* ---- node1 -------------------------------------------------------------------- */

struct cli {
	struct ibv_cq_ex *cqx;
	struct ibv_qp_ex *x;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint64_t raddr;
	uint32_t rkey;
};

/* The next request's wr_id and flags. */
static void c_wr(struct cli *c, uint64_t id, unsigned int flags)
{
	c->x->wr_id = id;
	c->x->wr_flags = flags;
}

/* One signaled RDMA WRITE of len bytes from buf[off] to node0's buf[off]
 * (or to addr/rkey): its completion status. */
static int c_write(struct cli *c, uint32_t rkey, uint64_t raddr, uint32_t off, uint32_t len,
		   uint64_t id)
{
	struct xwc w = { .status = -1 };
	int r;

	ibv_wr_start(c->x);
	c_wr(c, id, IBV_SEND_SIGNALED);
	ibv_wr_rdma_write(c->x, rkey, raddr);
	ibv_wr_set_sge(c->x, c->mr->lkey, (uintptr_t)c->buf + off, len);
	r = ibv_wr_complete(c->x);
	if (r)
		return -2;
	if (xpoll(c->cqx, &w, 1) != 1)
		return -1;
	return w.id == id ? w.status : -3;
}

static void client(struct vt *v)
{
	struct ibv_qp_init_attr_ex xa = {
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				  IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				  IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_READ |
				  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
		.cap = { .max_send_wr = 16, .max_recv_wr = 1, .max_send_sge = 3, .max_recv_sge = 1,
			 .max_inline_data = 128 },
	};
	struct ibv_qp_init_attr_ex ua = {
		.qp_type = IBV_QPT_UD,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_init_attr plain = { .qp_type = IBV_QPT_RC,
					  .cap = { .max_send_wr = 1, .max_recv_wr = 1,
						   .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *qp, *udqp, *other;
	struct ibv_qp_ex *ux;
	struct vt_msg me = {}, peer;
	struct cli c = {};
	struct ibv_pd *pd;
	struct ibv_ah *ah;
	struct xwc w[8] = {};
	uint8_t inl[SI_LEN], l1[10], l2[20], l3[30];
	struct ibv_data_buf list[3] = { { l1, 10 }, { l2, 20 }, { l3, 30 } };
	uint32_t wrkey;
	uint64_t res[2];
	int r, n, i;

	vt_open(v);
	vt_sock(v);
	pd = ibv_alloc_pd(v->ctx);
	c.cqx = xcq(v);
	c.buf = aligned_alloc(4096, BUF);
	if (!pd || !c.buf)
		t_bail("PD or buffer");
	vt_fill(c.buf, BUF, SEED_C);
	vt_fill(c.buf + OFF_WIN, 1024, SEED_WIN);
	vt_fill(c.buf + OFF_W, W_LEN, SEED_W);
	vt_fill(c.buf + OFF_WI, WI_LEN, SEED_WI);
	vt_fill(c.buf + OFF_RECV, S_LEN, SEED_SEND);
	vt_fill(c.buf + OFF_UD, UD_LEN, SEED_UD);
	vt_fill(c.buf + OFF_ABORT, 1024, SEED_X);
	vt_fill(c.buf + OFF_FAIL, 1024, SEED_X);
	c.mr = ibv_reg_mr(pd, c.buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	if (!c.mr)
		t_bail("ibv_reg_mr: errno %d", errno);
	xa.pd = ua.pd = pd;
	xa.send_cq = xa.recv_cq = ua.send_cq = ua.recv_cq = ibv_cq_ex_to_cq(c.cqx);
	plain.send_cq = plain.recv_cq = ibv_cq_ex_to_cq(c.cqx);

	t_begin("node1: ibv_create_qp_ex");
	qp = ibv_create_qp_ex(v->ctx, &xa);
	c.x = qp ? ibv_qp_to_qp_ex(qp) : NULL;
	CHECK(qp && c.x, "ibv_create_qp_ex: qp %p, errno %s; ibv_qp_to_qp_ex %p", (void *)qp,
	      vt_en(errno), (void *)c.x);
	if (!c.x)
		t_abort();
	other = ibv_create_qp(pd, &plain);
	CHECK(other && !ibv_qp_to_qp_ex(other), "ibv_create_qp: a QP that ibv_qp_to_qp_ex converts");
	if (other)
		ibv_destroy_qp(other);
	xa.send_ops_flags |= IBV_QP_EX_WITH_TSO;
	errno = 0;
	other = ibv_create_qp_ex(v->ctx, &xa);
	CHECK(!other && errno == EOPNOTSUPP, "with TSO: errno %s", vt_en(errno));
	xa.send_ops_flags &= ~(uint64_t)IBV_QP_EX_WITH_TSO;
	t_checked("node1: ibv_create_qp_ex(RC, 8 send operations): ibv_qp_to_qp_ex works (NULL for an ibv_create_qp QP); with TSO -> EOPNOTSUPP");

	t_begin("node1: ibv_wr_* before RTS");
	ibv_wr_start(c.x);
	c_wr(&c, 1, IBV_SEND_SIGNALED);
	ibv_wr_send(c.x);
	ibv_wr_set_sge(c.x, c.mr->lkey, (uintptr_t)c.buf, 8);
	r = ibv_wr_complete(c.x);
	CHECK(r == EINVAL, "ibv_wr_complete in RESET: %s", vt_en(r));
	t_checked("node1: ibv_wr_complete of a SEND in RESET: EINVAL");

	udqp = ibv_create_qp_ex(v->ctx, &ua);
	ux = udqp ? ibv_qp_to_qp_ex(udqp) : NULL;
	if (!ux || ud_ready(udqp))
		t_bail("UD ibv_create_qp_ex: errno %d", errno);
	vt_connect_qp(v, qp, 0);
	me.aux[AUX_UDQPN] = udqp->qp_num;
	vt_xchg(v, &me, &peer);
	c.raddr = peer.addr;
	c.rkey = peer.rkey;
	{
		struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
					  .grh = { .sgid_index = (uint8_t)v->gidx, .hop_limit = 64 } };

		memcpy(aa.grh.dgid.raw, peer.gid, 16);
		ah = ibv_create_ah(pd, &aa);
		if (!ah)
			t_bail("ibv_create_ah: errno %d", errno);
	}

	t_begin("node1: one ibv_wr_start .. ibv_wr_complete batch of 6 requests, and a UD send");
	vt_fill(inl, SI_LEN, SEED_SI);
	vt_fill(l1, 10, SEED_INV);
	for (i = 0; i < 20; i++)
		l2[i] = vt_pat(SEED_INV, 10 + i);
	for (i = 0; i < 30; i++)
		l3[i] = vt_pat(SEED_INV, 30 + i);
	ibv_wr_start(c.x);
	c_wr(&c, 100, IBV_SEND_SIGNALED);
	ibv_wr_rdma_write(c.x, peer.aux[AUX_WIN], c.raddr + OFF_WIN);
	ibv_wr_set_sge(c.x, c.mr->lkey, (uintptr_t)c.buf + OFF_WIN, 1024);
	c_wr(&c, 101, IBV_SEND_SIGNALED);
	ibv_wr_rdma_write(c.x, c.rkey, c.raddr + OFF_W);
	{
		struct ibv_sge sg[3] = {
			{ (uintptr_t)c.buf + OFF_W, 1000, c.mr->lkey },
			{ (uintptr_t)c.buf + OFF_W + 1000, 1500, c.mr->lkey },
			{ (uintptr_t)c.buf + OFF_W + 2500, W_LEN - 2500, c.mr->lkey },
		};

		ibv_wr_set_sge_list(c.x, 3, sg);
	}
	c_wr(&c, 102, IBV_SEND_SIGNALED);
	ibv_wr_rdma_write_imm(c.x, c.rkey, c.raddr + OFF_WI, htobe32(IMM_WI));
	ibv_wr_set_sge(c.x, c.mr->lkey, (uintptr_t)c.buf + OFF_WI, WI_LEN);
	c_wr(&c, 103, IBV_SEND_SIGNALED);
	ibv_wr_send(c.x);
	ibv_wr_set_sge(c.x, c.mr->lkey, (uintptr_t)c.buf + OFF_RECV, S_LEN);
	c_wr(&c, 104, IBV_SEND_SIGNALED);
	ibv_wr_send_imm(c.x, htobe32(IMM_SI));
	ibv_wr_set_inline_data(c.x, inl, SI_LEN);
	memset(inl, 0xee, sizeof(inl));		/* the bytes were copied */
	r = ibv_wr_complete(c.x);
	CHECK(!r, "ibv_wr_complete: %s", vt_en(r));
	n = xpoll(c.cqx, w, 5);
	CHECK(n == 5, "%d completions of 5", n);
	for (i = 0; i < n; i++) {
		static const enum ibv_wc_opcode ops[] = { IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE,
			IBV_WC_RDMA_WRITE, IBV_WC_SEND, IBV_WC_SEND };

		CHECK(w[i].id == 100u + (unsigned int)i && w[i].status == IBV_WC_SUCCESS &&
		      w[i].op == ops[i] && w[i].qpn == qp->qp_num,
		      "completion %d: id %llu %s op %d qp %u", i, (unsigned long long)w[i].id,
		      vt_status(w[i].status), w[i].op, w[i].qpn);
	}
	ibv_wr_start(ux);
	ux->wr_id = 110;
	ux->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(ux);
	ibv_wr_set_ud_addr(ux, ah, peer.aux[AUX_UDQPN], QKEY);
	ibv_wr_set_sge(ux, c.mr->lkey, (uintptr_t)c.buf + OFF_UD, UD_LEN);
	r = ibv_wr_complete(ux);
	CHECK(!r, "ibv_wr_complete (UD): %s", vt_en(r));
	n = xpoll(c.cqx, w, 1);
	CHECK(n == 1 && w[0].id == 110 && w[0].status == IBV_WC_SUCCESS && w[0].op == IBV_WC_SEND &&
	      w[0].qpn == udqp->qp_num, "UD completion: %d, id %llu %s", n,
	      (unsigned long long)w[0].id, vt_status(w[0].status));
	t_checked("node1: ibv_wr_rdma_write (window; 3 SGEs), ibv_wr_rdma_write_imm, ibv_wr_send, ibv_wr_send_imm with ibv_wr_set_inline_data (buffer overwritten before ibv_wr_complete) in one batch: 5 completions in order; UD ibv_wr_send with ibv_wr_set_ud_addr: success");
	vt_sync(v, 1);

	t_begin("node1: ibv_wr_send_inv with ibv_wr_set_inline_data_list");
	vt_sync(v, 2);		/* node0 posted the receive */
	ibv_wr_start(c.x);
	c_wr(&c, 120, IBV_SEND_SIGNALED);
	ibv_wr_send_inv(c.x, peer.aux[AUX_WIN]);
	ibv_wr_set_inline_data_list(c.x, 3, list);
	memset(l2, 0xee, sizeof(l2));
	r = ibv_wr_complete(c.x);
	CHECK(!r, "ibv_wr_complete: %s", vt_en(r));
	n = xpoll(c.cqx, w, 1);
	CHECK(n == 1 && w[0].id == 120 && w[0].status == IBV_WC_SUCCESS && w[0].op == IBV_WC_SEND,
	      "completion: %d, %s", n, vt_status(w[0].status));
	t_checked("node1: ibv_wr_send_inv of 60 inline bytes from 3 buffers: success");

	t_begin("node1: ibv_wr_rdma_read, ibv_wr_atomic_fetch_add, ibv_wr_atomic_cmp_swp");
	vt_fill(c.buf + C_READ, R_LEN, SEED_X);
	memset(res, 0xff, sizeof(res));
	memcpy(c.buf + C_ATOM, res, sizeof(res));
	ibv_wr_start(c.x);
	c_wr(&c, 130, IBV_SEND_SIGNALED);
	ibv_wr_rdma_read(c.x, c.rkey, c.raddr + OFF_R);
	ibv_wr_set_sge(c.x, c.mr->lkey, (uintptr_t)c.buf + C_READ, R_LEN);
	c_wr(&c, 131, IBV_SEND_SIGNALED | IBV_SEND_FENCE);
	ibv_wr_atomic_fetch_add(c.x, c.rkey, c.raddr + OFF_ATOM, 5);
	ibv_wr_set_sge(c.x, c.mr->lkey, (uintptr_t)c.buf + C_ATOM, 8);
	c_wr(&c, 132, IBV_SEND_SIGNALED | IBV_SEND_FENCE);
	ibv_wr_atomic_cmp_swp(c.x, c.rkey, c.raddr + OFF_ATOM, ATOM0 + 5, 777);
	ibv_wr_set_sge(c.x, c.mr->lkey, (uintptr_t)c.buf + C_ATOM + 8, 8);
	r = ibv_wr_complete(c.x);
	CHECK(!r, "ibv_wr_complete: %s", vt_en(r));
	n = xpoll(c.cqx, w, 3);
	CHECK(n == 3, "%d completions of 3", n);
	for (i = 0; i < n; i++) {
		static const enum ibv_wc_opcode ops[] = { IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD,
			IBV_WC_COMP_SWAP };

		CHECK(w[i].id == 130u + (unsigned int)i && w[i].status == IBV_WC_SUCCESS &&
		      w[i].op == ops[i], "completion %d: id %llu %s op %d", i,
		      (unsigned long long)w[i].id, vt_status(w[i].status), w[i].op);
	}
	memcpy(res, c.buf + C_ATOM, sizeof(res));
	CHECK(vt_diff(c.buf + C_READ, R_LEN, SEED_S, OFF_R) < 0, "READ at %ld",
	      vt_diff(c.buf + C_READ, R_LEN, SEED_S, OFF_R));
	CHECK(res[0] == ATOM0 && res[1] == ATOM0 + 5, "atomics returned %llu and %llu",
	      (unsigned long long)res[0], (unsigned long long)res[1]);
	t_checked("node1: ibv_wr_rdma_read of %d B byte-exact; ibv_wr_atomic_fetch_add(5) returned %llu, ibv_wr_atomic_cmp_swp(%llu, 777) returned %llu",
		  R_LEN, ATOM0, ATOM0 + 5, ATOM0 + 5);

	t_begin("node1: ibv_wr_abort, and an ibv_wr_complete that fails");
	ibv_wr_start(c.x);
	c_wr(&c, 140, IBV_SEND_SIGNALED);
	ibv_wr_rdma_write(c.x, c.rkey, c.raddr + OFF_ABORT);
	ibv_wr_set_sge(c.x, c.mr->lkey, (uintptr_t)c.buf + OFF_ABORT, 1024);
	ibv_wr_abort(c.x);
	{
		/* The second request has more SGEs than a request can carry. */
		struct ibv_sge sg[29];
		size_t k = 29;

		for (i = 0; i < 29; i++)
			sg[i] = (struct ibv_sge){ (uintptr_t)c.buf + OFF_FAIL, 8, c.mr->lkey };
		ibv_wr_start(c.x);
		c_wr(&c, 141, IBV_SEND_SIGNALED);
		ibv_wr_rdma_write(c.x, c.rkey, c.raddr + OFF_FAIL);
		ibv_wr_set_sge(c.x, c.mr->lkey, (uintptr_t)c.buf + OFF_FAIL, 1024);
		c_wr(&c, 142, IBV_SEND_SIGNALED);
		ibv_wr_rdma_write(c.x, c.rkey, c.raddr + OFF_FAIL);
		ibv_wr_set_sge_list(c.x, k, sg);
		r = ibv_wr_complete(c.x);
		CHECK(r == EINVAL, "ibv_wr_complete with %zu SGEs: %s", k, vt_en(r));
	}
	/* The QP still works, and the next completion is the next request's. */
	vt_fill(c.buf + OFF_R, 64, SEED_C);
	r = c_write(&c, c.rkey, c.raddr + OFF_R, OFF_R, 64, 143);
	CHECK(r == IBV_WC_SUCCESS, "a WRITE after them: %s", vt_status(r));
	t_checked("node1: ibv_wr_abort and an ibv_wr_complete failing with EINVAL (its second request has 29 SGEs) post nothing; the next request completes alone");
	vt_sync(v, 3);

	vt_recv(v, &wrkey, sizeof(wrkey));
	t_begin("node1: writes through the window node0 invalidates with ibv_wr_local_inv");
	vt_fill(c.buf + OFF_WIN, 1024, SEED_WIN2);
	r = c_write(&c, wrkey, c.raddr + OFF_WIN, OFF_WIN, 512, 150);
	CHECK(r == IBV_WC_SUCCESS, "before: %s", vt_status(r));
	vt_sync(v, 4);
	vt_sync(v, 5);
	r = c_write(&c, wrkey, c.raddr + OFF_WIN + 512, OFF_WIN + 512, 512, 151);
	CHECK(r == IBV_WC_REM_ACCESS_ERR, "after: %s", vt_status(r));
	vt_sync(v, 6);
	t_checked("node1: a WRITE through the rebound window: success; after node0's ibv_wr_local_inv: IBV_WC_REM_ACCESS_ERR");

	ibv_destroy_ah(ah);
	ibv_destroy_qp(udqp);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(c.mr);
	ibv_destroy_cq(ibv_cq_ex_to_cq(c.cqx));
	ibv_dealloc_pd(pd);
	ibv_close_device(v->ctx);
}

int main(int argc, char **argv)
{
	return vt_run(argc, argv, server, client);
}
