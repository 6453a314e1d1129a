// SPDX-License-Identifier: MIT
/*
 * Weft provider: posting work requests.  WQEs are written into the mapped
 * SQ and RQ rings (struct weft_vwqe, struct weft_vrwqe of weft/verbs.h) and
 * the producer index is rung on the context's UAR page; no system call.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <util/mmio.h>
#include <util/udma_barrier.h>

#include "weft.h"
#include "weft-abi.h"

/* Bit 31 of a UD work request's Q_Key asks for the QP's own Q_Key. */
#define WEFT_QKEY_USE_QP 0x80000000u

/*
 * Maps a ring the kernel allocated (include/weft/ib-abi.h), after checking
 * that its geometry is one the adapter accepts and fits the mapping.
 */
int weft_wq_map(struct weft_wq *wq, int cmd_fd, uint64_t offset,
		uint32_t map_len, uint32_t log2, uint32_t stride_log2)
{
	if (log2 > WEFT_VERBS_WQ_MAX_LOG2 || stride_log2 < 5 ||
	    stride_log2 > 9 || ((size_t)1 << (log2 + stride_log2)) > map_len)
		return EPROTO;
	wq->buf = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       cmd_fd, offset);
	if (wq->buf == MAP_FAILED) {
		wq->buf = NULL;
		return errno;
	}
	wq->map_len = map_len;
	wq->log2 = log2;
	wq->stride_log2 = stride_log2;
	wq->max_sge = 0;
	weft_wq_reset(wq);
	return 0;
}

void weft_wq_unmap(struct weft_wq *wq)
{
	if (wq->buf)
		munmap(wq->buf, wq->map_len);
	wq->buf = NULL;
}

/* A QP moved to RESET starts its queues over (docs/hw-spec.md 16.4). */
void weft_wq_reset(struct weft_wq *wq)
{
	__atomic_store_n(&wq->head, 0, __ATOMIC_RELAXED);
	atomic_store_explicit(&wq->tail, 0, memory_order_relaxed);
}

/*
 * A completion names its slot by the low 16 bits of the WQE index; every
 * slot up to that one is free again (unsignaled WQEs retire this way).
 * Rings hold at most 1 << WEFT_VERBS_WQ_MAX_LOG2 < 65536 WQEs, so the low
 * bits identify the index among those outstanding.
 */
void weft_wq_retire(struct weft_wq *wq, uint16_t wqe_index)
{
	uint32_t t = atomic_load_explicit(&wq->tail, memory_order_relaxed);
	uint32_t done = (uint16_t)(wqe_index - (uint16_t)t) + 1;

	/* A completion for a slot never posted (a stale one after a reset to
	 * RESET) must not free slots. */
	if (done > __atomic_load_n(&wq->head, __ATOMIC_RELAXED) - t)
		return;
	atomic_store_explicit(&wq->tail, t + done, memory_order_relaxed);
}

static int wq_full(struct weft_wq *wq)
{
	uint32_t tail = atomic_load_explicit(&wq->tail, memory_order_relaxed);

	return wq->head - tail >= (1u << wq->log2);
}

static void *wq_slot(struct weft_wq *wq, uint32_t index)
{
	uint32_t mask = (1u << wq->log2) - 1;

	return wq->buf + ((size_t)(index & mask) << wq->stride_log2);
}

static void copy_sges(struct weft_vsge *dst, const struct ibv_sge *src, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		dst[i].addr = htole64(src[i].addr);
		dst[i].length = htole32(src[i].length);
		dst[i].lkey = htole32(src[i].lkey);
	}
}

/*
 * A BIND_MW WQE (hw-spec 16.5 "Windows"): the window takes new_rkey and
 * the remote rights of access; length 0 unbinds.  IBV_ACCESS_LOCAL_WRITE
 * may come with them (IB lets a bind name it, and UCX and rxe users do):
 * a window grants remote rights only, so it is dropped here, and the
 * adapter checks that the region has local write when the window grants
 * remote write or atomic.  Zero-based windows are not supported.
 */
int weft_bind_wqe(const struct ibv_mw_bind_info *b, uint32_t new_rkey,
		  struct weft_vwqe *wqe)
{
	uint8_t acc = 0;

	if (b->mw_access_flags & ~(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	if (b->length && !b->mr)
		return EINVAL;
	if (b->mw_access_flags & IBV_ACCESS_REMOTE_WRITE)
		acc |= WEFT_VACC_REMOTE_WRITE;
	if (b->mw_access_flags & IBV_ACCESS_REMOTE_READ)
		acc |= WEFT_VACC_REMOTE_READ;
	if (b->mw_access_flags & IBV_ACCESS_REMOTE_ATOMIC)
		acc |= WEFT_VACC_REMOTE_ATOMIC;
	wqe->opcode = WEFT_VWR_BIND_MW;
	wqe->u.bind.va = htole64(b->addr);
	wqe->u.bind.length = htole64(b->length);
	wqe->u.bind.mw_stag = htole32(new_rkey);
	wqe->u.bind.mr_stag = htole32(b->mr ? b->mr->lkey : 0);
	wqe->u.bind.access = acc;
	return 0;
}

/*
 * IBV_SEND_INLINE (hw-spec 16.6): the bytes the SGEs name are copied
 * into the slot after a struct weft_vinline, so the caller may reuse its
 * buffers at once; SEND* and RDMA WRITE* only, at most what the slot
 * holds (the QP's max_inline_data).
 */
static int inline_data(struct weft_wq *sq, const struct ibv_send_wr *wr,
		       struct weft_vwqe *wqe)
{
	size_t room = ((size_t)1 << sq->stride_log2) - sizeof(*wqe) - sizeof(struct weft_vinline);
	uint8_t *p = (uint8_t *)(wqe + 1) + sizeof(struct weft_vinline);
	struct weft_vinline in = {};
	int i;

	switch (wqe->opcode) {
	case WEFT_VWR_SEND:
	case WEFT_VWR_SEND_IMM:
	case WEFT_VWR_SEND_INV:
	case WEFT_VWR_WRITE:
	case WEFT_VWR_WRITE_IMM:
		break;
	default:
		return EINVAL;
	}
	for (i = 0; i < wr->num_sge; i++) {
		if (wr->sg_list[i].length > room - in.length)
			return EINVAL;
		memcpy(p + in.length, (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		in.length += wr->sg_list[i].length;
	}
	in.length = htole32(in.length);
	memcpy(wqe + 1, &in, sizeof(in));
	wqe->flags |= WEFT_VWQE_INLINE;
	return 0;
}

static int rc_opcode(const struct ibv_send_wr *wr, struct weft_vwqe *wqe)
{
	switch (wr->opcode) {
	case IBV_WR_SEND:
		wqe->opcode = WEFT_VWR_SEND;
		return 0;
	case IBV_WR_SEND_WITH_IMM:
		wqe->opcode = WEFT_VWR_SEND_IMM;
		/* imm_data travels as the bytes the caller gave */
		memcpy(&wqe->imm_inv, &wr->imm_data, sizeof(wqe->imm_inv));
		return 0;
	case IBV_WR_SEND_WITH_INV:
		wqe->opcode = WEFT_VWR_SEND_INV;
		wqe->imm_inv = htole32(wr->invalidate_rkey);
		return 0;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		memcpy(&wqe->imm_inv, &wr->imm_data, sizeof(wqe->imm_inv));
		wqe->opcode = WEFT_VWR_WRITE_IMM;
		break;
	case IBV_WR_RDMA_WRITE:
		wqe->opcode = WEFT_VWR_WRITE;
		break;
	case IBV_WR_RDMA_READ:
		wqe->opcode = WEFT_VWR_READ;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wqe->opcode = wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
			WEFT_VWR_CAS : WEFT_VWR_FAA;
		wqe->u.rdma.remote_addr = htole64(wr->wr.atomic.remote_addr);
		wqe->u.rdma.rkey = htole32(wr->wr.atomic.rkey);
		wqe->u.rdma.compare_add = htole64(wr->wr.atomic.compare_add);
		wqe->u.rdma.swap = htole64(wr->wr.atomic.swap);
		return 0;
	case IBV_WR_LOCAL_INV:
		wqe->opcode = WEFT_VWR_LOCAL_INV;
		wqe->imm_inv = htole32(wr->invalidate_rkey);
		return 0;
	case IBV_WR_BIND_MW:
		/* type 2 windows; ibv_bind_mw (type 1) comes through weft_bind_mw */
		if (wr->num_sge)
			return EINVAL;
		return weft_bind_wqe(&wr->bind_mw.bind_info, wr->bind_mw.rkey, wqe);
	case IBV_WR_DRIVER1:
		/* WAIT_CNT (weft/ib-abi.h): a counter slot, no data */
		if (wr->num_sge || (wr->send_flags & IBV_SEND_INLINE) ||
		    !WEFT_IB_SEND_CNT_SLOT_GET(wr->send_flags))
			return EINVAL;
		wqe->opcode = WEFT_VWR_WAIT_CNT;
		wqe->u.wait.threshold = htole64(wr->wr.atomic.compare_add);
		return 0;
	default:
		return EINVAL;
	}
	wqe->u.rdma.remote_addr = htole64(wr->wr.rdma.remote_addr);
	wqe->u.rdma.rkey = htole32(wr->wr.rdma.rkey);
	return 0;
}

/* UC: SEND and RDMA WRITE (with immediate) and LOCAL_INV; READ, atomics,
 * windows and SEND with invalidate are refused (hw-spec 16.16), as rxe. */
static bool uc_opcode_ok(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE ||
	       op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_LOCAL_INV;
}

static int ud_opcode(struct weft_qp *qp, const struct ibv_send_wr *wr,
		     struct weft_vwqe *wqe)
{
	uint32_t qkey = wr->wr.ud.remote_qkey;
	struct weft_ah *ah;

	switch (wr->opcode) {
	case IBV_WR_SEND:
		wqe->opcode = WEFT_VWR_SEND;
		break;
	case IBV_WR_SEND_WITH_IMM:
		wqe->opcode = WEFT_VWR_SEND_IMM;
		memcpy(&wqe->imm_inv, &wr->imm_data, sizeof(wqe->imm_inv));
		break;
	default:
		return EINVAL;
	}
	if (!wr->wr.ud.ah)
		return EINVAL;
	if (qkey & WEFT_QKEY_USE_QP)
		qkey = qp->qkey;
	wqe->u.ud.dest_qpn = htole32(wr->wr.ud.remote_qpn & 0xffffff);
	wqe->u.ud.qkey = htole32(qkey);
	ah = to_wah(wr->wr.ud.ah);
	wqe->u.ud.dest_node = htole16(ah->dest_node);
	wqe->u.ud.sgid_index = ah->sgid_index;
	wqe->u.ud.hop_limit = ah->hop_limit;
	wqe->u.ud.traffic_class = ah->traffic_class;
	wqe->u.ud.flow_label = htole32(ah->flow_label);
	memcpy(wqe->u.ud.dgid, ah->dgid, sizeof(wqe->u.ud.dgid));
	return 0;
}

static void ring(struct weft_qp *qp, unsigned int reg, uint32_t head)
{
	struct weft_context *ctx = to_wctx(qp->vqp.qp.context);

	/* The WQEs must be visible before the adapter sees the index. */
	udma_to_device_barrier();
	mmio_write64_le((uint8_t *)ctx->uar + reg,
			htole64(WEFT_UAR_DB(qp->vqp.qp.qp_num, head)));
}

void weft_ring_sq(struct weft_qp *qp)
{
	ring(qp, WEFT_UAR_SQ_DB, qp->sq.head);
}

/* One send work request into the SQ slot at head (the caller holds the
 * SQ lock and rings the doorbell).  Returns 0 or an errno. */
int weft_post_one(struct weft_qp *qp, const struct ibv_send_wr *wr)
{
	struct weft_wq *sq = &qp->sq;
	struct weft_vwqe *wqe;
	int err;

	if (wq_full(sq))
		return ENOMEM;
	if (wr->num_sge < 0 || (!(wr->send_flags & IBV_SEND_INLINE) &&
				(uint32_t)wr->num_sge > sq->max_sge))
		return EINVAL;
	wqe = wq_slot(sq, sq->head);
	memset(wqe, 0, sizeof(*wqe));
	if (qp->vqp.qp.qp_type == IBV_QPT_UD)
		err = ud_opcode(qp, wr, wqe);
	else if (qp->vqp.qp.qp_type == IBV_QPT_UC && !uc_opcode_ok(wr->opcode))
		err = EINVAL;
	else
		err = rc_opcode(wr, wqe);
	if (!err && (wr->send_flags & IBV_SEND_INLINE))
		err = inline_data(sq, wr, wqe);
	if (err)
		return err;
	wqe->wr_id = htole64(wr->wr_id);
	if (!(wr->send_flags & IBV_SEND_INLINE))
		wqe->num_sge = wr->num_sge;
	if ((wr->send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		wqe->flags |= WEFT_VWQE_SIGNALED;
	if (wr->send_flags & IBV_SEND_SOLICITED)
		wqe->flags |= WEFT_VWQE_SOLICITED;
	if (wr->send_flags & IBV_SEND_FENCE)
		wqe->flags |= WEFT_VWQE_FENCE;
	/* The event-counter slot its completion counts on (weft/ib-abi.h). */
	wqe->cnt_slot = WEFT_IB_SEND_CNT_SLOT_GET(wr->send_flags);
	if (!(wr->send_flags & IBV_SEND_INLINE))
		copy_sges((struct weft_vsge *)(wqe + 1), wr->sg_list, wr->num_sge);
	__atomic_store_n(&sq->head, sq->head + 1, __ATOMIC_RELAXED);
	return 0;
}

int weft_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	struct weft_qp *qp = to_wqp(ibqp);
	struct weft_wq *sq = &qp->sq;
	uint32_t start;
	int err = 0;

	/* No sends before RTS (IBA: RESET, INIT and RTR), as rxe. */
	if (ibqp->state < IBV_QPS_RTS) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&sq->lock);
	start = sq->head;
	for (; wr; wr = wr->next) {
		err = weft_post_one(qp, wr);
		if (err)
			break;
	}
	if (err)
		*bad_wr = wr;
	if (sq->head != start)
		ring(qp, WEFT_UAR_SQ_DB, sq->head);
	pthread_spin_unlock(&sq->lock);
	return err;
}

int weft_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	struct weft_qp *qp = to_wqp(ibqp);
	struct weft_wq *rq = &qp->rq;
	uint32_t start;
	int err = 0;

	/* No receives in RESET (IBA C10-97.2.1), as rxe; none on a QP whose
	 * receives come from an SRQ. */
	if (ibqp->state == IBV_QPS_RESET || ibqp->srq) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&rq->lock);
	start = rq->head;
	for (; wr; wr = wr->next) {
		struct weft_vrwqe *wqe;

		if (wq_full(rq))
			err = ENOMEM;
		else if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge)
			err = EINVAL;
		if (err)
			break;
		wqe = wq_slot(rq, rq->head);
		memset(wqe, 0, sizeof(*wqe));
		wqe->wr_id = htole64(wr->wr_id);
		wqe->num_sge = wr->num_sge;
		copy_sges((struct weft_vsge *)(wqe + 1), wr->sg_list, wr->num_sge);
		__atomic_store_n(&rq->head, rq->head + 1, __ATOMIC_RELAXED);
	}
	if (err)
		*bad_wr = wr;
	if (rq->head != start)
		ring(qp, WEFT_UAR_RQ_DB, rq->head);
	pthread_spin_unlock(&rq->lock);
	return err;
}
