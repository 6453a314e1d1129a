// SPDX-License-Identifier: MIT
/*
 * Weft provider: the extended QP API (ibv_wr_start, ibv_wr_send,
 * ibv_wr_rdma_write, ..., ibv_wr_set_sge, ibv_wr_complete).  Each builder
 * fills one struct ibv_send_wr, which is written into the SQ by the same
 * code as ibv_post_send (weft_post_one) when the next request starts or
 * at ibv_wr_complete; the doorbell is rung once, at ibv_wr_complete.  A
 * request that fails makes ibv_wr_complete return its error with none of
 * the batch posted.
 */
#include <errno.h>
#include <string.h>

#include "weft.h"

static struct weft_qp *xqp(struct ibv_qp_ex *ibqp)
{
	return container_of(ibqp, struct weft_qp, vqp.qp_ex);
}

/* Writes the request being built, if any, into the SQ. */
static void flush(struct weft_qp *qp)
{
	if (qp->xpending && !qp->xerr)
		qp->xerr = weft_post_one(qp, &qp->xwr);
	qp->xpending = false;
}

/* A new request of opcode: the previous one goes to the SQ first. */
static struct ibv_send_wr *begin(struct ibv_qp_ex *ibqp, enum ibv_wr_opcode opcode)
{
	struct weft_qp *qp = xqp(ibqp);

	flush(qp);
	memset(&qp->xwr, 0, sizeof(qp->xwr));
	qp->xwr.wr_id = ibqp->wr_id;
	qp->xwr.send_flags = ibqp->wr_flags;
	qp->xwr.opcode = opcode;
	qp->xwr.sg_list = qp->xsge;
	qp->xpending = true;
	return &qp->xwr;
}

static void x_start(struct ibv_qp_ex *ibqp)
{
	struct weft_qp *qp = xqp(ibqp);

	pthread_spin_lock(&qp->sq.lock);
	qp->xstart = qp->sq.head;
	qp->xpending = false;
	/* No sends before RTS, as ibv_post_send. */
	qp->xerr = qp->vqp.qp.state < IBV_QPS_RTS ? EINVAL : 0;
}

static int x_complete(struct ibv_qp_ex *ibqp)
{
	struct weft_qp *qp = xqp(ibqp);
	int err;

	flush(qp);
	err = qp->xerr;
	if (err)
		qp->sq.head = qp->xstart;       /* nothing of the batch is posted */
	else if (qp->sq.head != qp->xstart)
		weft_ring_sq(qp);
	pthread_spin_unlock(&qp->sq.lock);
	return err;
}

static void x_abort(struct ibv_qp_ex *ibqp)
{
	struct weft_qp *qp = xqp(ibqp);

	qp->xpending = false;
	qp->sq.head = qp->xstart;
	pthread_spin_unlock(&qp->sq.lock);
}

static void x_send(struct ibv_qp_ex *ibqp)
{
	begin(ibqp, IBV_WR_SEND);
}

static void x_send_imm(struct ibv_qp_ex *ibqp, __be32 imm)
{
	begin(ibqp, IBV_WR_SEND_WITH_IMM)->imm_data = imm;
}

static void x_send_inv(struct ibv_qp_ex *ibqp, uint32_t rkey)
{
	begin(ibqp, IBV_WR_SEND_WITH_INV)->invalidate_rkey = rkey;
}

static void rdma(struct ibv_qp_ex *ibqp, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr)
{
	struct ibv_send_wr *wr = begin(ibqp, op);

	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = addr;
}

static void x_write(struct ibv_qp_ex *ibqp, uint32_t rkey, uint64_t addr)
{
	rdma(ibqp, IBV_WR_RDMA_WRITE, rkey, addr);
}

static void x_write_imm(struct ibv_qp_ex *ibqp, uint32_t rkey, uint64_t addr, __be32 imm)
{
	rdma(ibqp, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr);
	xqp(ibqp)->xwr.imm_data = imm;
}

static void x_read(struct ibv_qp_ex *ibqp, uint32_t rkey, uint64_t addr)
{
	rdma(ibqp, IBV_WR_RDMA_READ, rkey, addr);
}

static void atomic(struct ibv_qp_ex *ibqp, enum ibv_wr_opcode op, uint32_t rkey,
		   uint64_t addr, uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *wr = begin(ibqp, op);

	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = addr;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
}

static void x_cas(struct ibv_qp_ex *ibqp, uint32_t rkey, uint64_t addr, uint64_t compare,
		  uint64_t swap)
{
	atomic(ibqp, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void x_faa(struct ibv_qp_ex *ibqp, uint32_t rkey, uint64_t addr, uint64_t add)
{
	atomic(ibqp, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static void x_local_inv(struct ibv_qp_ex *ibqp, uint32_t rkey)
{
	begin(ibqp, IBV_WR_LOCAL_INV)->invalidate_rkey = rkey;
}

static void x_bind_mw(struct ibv_qp_ex *ibqp, struct ibv_mw *mw, uint32_t rkey,
		      const struct ibv_mw_bind_info *info)
{
	struct ibv_send_wr *wr = begin(ibqp, IBV_WR_BIND_MW);

	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	wr->bind_mw.bind_info = *info;
}

static void x_ud_addr(struct ibv_qp_ex *ibqp, struct ibv_ah *ah, uint32_t remote_qpn,
		      uint32_t remote_qkey)
{
	struct ibv_send_wr *wr = &xqp(ibqp)->xwr;

	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = remote_qpn;
	wr->wr.ud.remote_qkey = remote_qkey;
}

static void x_sge(struct ibv_qp_ex *ibqp, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct weft_qp *qp = xqp(ibqp);

	qp->xsge[0] = (struct ibv_sge){ .addr = addr, .length = length, .lkey = lkey };
	qp->xwr.num_sge = 1;
}

static void x_sge_list(struct ibv_qp_ex *ibqp, size_t n, const struct ibv_sge *sg)
{
	struct weft_qp *qp = xqp(ibqp);

	if (n > sizeof(qp->xsge) / sizeof(qp->xsge[0])) {
		qp->xerr = qp->xerr ? qp->xerr : EINVAL;
		return;
	}
	memcpy(qp->xsge, sg, n * sizeof(*sg));
	qp->xwr.num_sge = (int)n;
}

/* Inline data is copied now: the caller may reuse its buffers at once. */
static void x_inline_list(struct ibv_qp_ex *ibqp, size_t n, const struct ibv_data_buf *buf)
{
	struct weft_qp *qp = xqp(ibqp);
	size_t i, len = 0;

	for (i = 0; i < n; i++) {
		if (buf[i].length > sizeof(qp->xinl) - len) {
			qp->xerr = qp->xerr ? qp->xerr : EINVAL;
			return;
		}
		memcpy(qp->xinl + len, buf[i].addr, buf[i].length);
		len += buf[i].length;
	}
	qp->xsge[0] = (struct ibv_sge){ .addr = (uintptr_t)qp->xinl, .length = (uint32_t)len };
	qp->xwr.num_sge = 1;
	qp->xwr.send_flags |= IBV_SEND_INLINE;
}

static void x_inline(struct ibv_qp_ex *ibqp, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	x_inline_list(ibqp, 1, &b);
}

void weft_qpx_init(struct weft_qp *qp, uint64_t ops)
{
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;

	qp->vqp.comp_mask |= VERBS_QP_EX;
	x->wr_start = x_start;
	x->wr_complete = x_complete;
	x->wr_abort = x_abort;
	if (ops & IBV_QP_EX_WITH_SEND)
		x->wr_send = x_send;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		x->wr_send_imm = x_send_imm;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_INV)
		x->wr_send_inv = x_send_inv;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE)
		x->wr_rdma_write = x_write;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		x->wr_rdma_write_imm = x_write_imm;
	if (ops & IBV_QP_EX_WITH_RDMA_READ)
		x->wr_rdma_read = x_read;
	if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		x->wr_atomic_cmp_swp = x_cas;
	if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		x->wr_atomic_fetch_add = x_faa;
	if (ops & IBV_QP_EX_WITH_LOCAL_INV)
		x->wr_local_inv = x_local_inv;
	if (ops & IBV_QP_EX_WITH_BIND_MW)
		x->wr_bind_mw = x_bind_mw;
	x->wr_set_ud_addr = x_ud_addr;
	x->wr_set_sge = x_sge;
	x->wr_set_sge_list = x_sge_list;
	x->wr_set_inline_data = x_inline;
	x->wr_set_inline_data_list = x_inline_list;
}
