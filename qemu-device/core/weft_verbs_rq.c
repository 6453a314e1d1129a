/* SPDX-License-Identifier: MIT */
/*
 * Weft verbs engine: the responder: receive WQEs, incoming sends, RDMA
 * writes (placed ahead of order inside the receive window), read requests
 * into the bounded read-request queue with MSN checks, atomics with a
 * replay cache, UD receives with Q_Key, remote protection violations
 * (Terminate) and RQ flushes (docs/hw-spec.md 16.5-16.9).  A QP attached
 * to a shared receive queue takes its receive WQEs from it instead
 * (weft_verbs_srq.c).
 */
#include <errno.h>
#include <string.h>

#include "weft_verbs_int.h"

static uint64_t rq_slot(const struct vq_qp *qp, uint32_t idx)
{
	return qp->rq_addr + ((uint64_t)(idx & ((1u << qp->rq_log2) - 1)) << qp->rq_stride);
}

unsigned int vq_rwqe_read(struct weft_core *c, struct vq_qp *qp, uint64_t a,
			  unsigned int stride, uint32_t idx, struct vq_rwqe *r)
{
	unsigned int max = ((1u << stride) - sizeof(r->h)) / sizeof(struct weft_vsge);

	memset(&r->h, 0, sizeof(r->h));
	r->index = idx;
	if (weft_dma_read(c, a, &r->h, sizeof(r->h)) != 0)
		return WEFT_R_DMA_ERROR;
	if (r->h.num_sge > max || r->h.num_sge > VQ_MAX_SGE)
		return WEFT_R_BAD_WQE;
	if (weft_dma_read(c, a + sizeof(r->h), r->sge, r->h.num_sge * sizeof(r->sge[0])) != 0)
		return WEFT_R_DMA_ERROR;
	return vq_sge_check(c, qp, r->sge, r->h.num_sge, WEFT_VACC_LOCAL_WRITE, &r->total);
}

/* No receive WQE for qp's next message. */
static bool rq_empty(struct weft_core *c, const struct vq_qp *qp)
{
	return qp->srq ? vq_srq_empty(c, qp->srq) : qp->rq_ci == qp->rq_prod;
}

/* Copy and check the next receive WQE: RQ slot rq_ci (consumed at its
 * completion) or the SRQ's next one (consumed now).  Returns a reason. */
static unsigned int rwqe_load(struct weft_core *c, struct vq_qp *qp, struct vq_rwqe *r)
{
	if (qp->srq)
		return vq_srq_take(c, qp, r);
	return vq_rwqe_read(c, qp, rq_slot(qp, qp->rq_ci), qp->rq_stride, qp->rq_ci, r);
}

static void rq_cqe(struct weft_core *c, struct vq_qp *qp, const struct vq_rwqe *r,
		   uint8_t opcode, uint8_t status, uint32_t len, uint8_t flags, uint32_t imm,
		   bool se)
{
	struct weft_vcqe e;

	if (qp->tm_kind) {
		vq_tm_cqe(c, qp, status, len, se);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.wr_id = r->h.wr_id;
	e.qpn = vq_qpn(c, qp);
	e.byte_len = len;
	e.imm_inv = imm;
	e.wqe_index = (uint16_t)r->index;
	e.opcode = opcode;
	e.status = status;
	e.flags = flags;
	vq_cqe(c, qp->rcq, &e, se);
	if (!qp->srq)
		qp->rq_ci++;
}

void vq_rq_flush(struct weft_core *c, struct vq_qp *qp, unsigned int max)
{
	unsigned int n = 0;

	if (qp->state != WEFT_VQPS_ERR)
		return;
	if (qp->srq) {
		/* The WQE it took completes; the SRQ's others stay for the
		 * other QPs.  Then IB's last-WQE-reached event. */
		if (qp->rcv_active)
			rq_cqe(c, qp, &qp->rcv, WEFT_VWC_RECV, WEFT_VWC_WR_FLUSH_ERR, WEFT_R_FLUSHED,
			       0, 0, false);
		qp->rcv_active = false;
		if (!qp->last_wqe) {
			qp->last_wqe = true;
			vq_async(c, vq_qpn(c, qp), WEFT_VASYNC_LAST_WQE, WEFT_R_OK,
				 qp->rcq < c->verbs->nr_cq ? c->verbs->cq[qp->rcq].vector : 0);
		}
		return;
	}
	while (n++ < max && qp->rq_ci != qp->rq_prod) {
		struct vq_rwqe r;

		memset(&r, 0, sizeof(r));
		r.index = qp->rq_ci;
		weft_dma_read(c, rq_slot(qp, qp->rq_ci), &r.h, sizeof(r.h));
		rq_cqe(c, qp, &r, WEFT_VWC_RECV, WEFT_VWC_WR_FLUSH_ERR, WEFT_R_FLUSHED, 0, 0, false);
	}
	qp->rcv_active = false;
}

/* A remote violation: Terminate to the requester, the receive WQE in use
 * (if any) completes with status, the QP goes to ERR. */
static void violation(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h,
		      unsigned int reason, uint8_t rq_status)
{
	if (qp->rcv_active && rq_status) {
		rq_cqe(c, qp, &qp->rcv, WEFT_VWC_RECV, rq_status, reason, 0, 0, false);
		qp->rcv_active = false;
	}
	weft_drop(c, NULL, WEFT_NO_WINDOW, reason);
	vq_send_terminate(c, qp, reason, h->psn);
	vq_qp_error(c, qp, reason);
}

static bool rq_take(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h)
{
	unsigned int why;

	if (rq_empty(c, qp)) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_RNR);
		weft_count(c, WEFT_CNT_V_RNR_NAKS_TX, 1);
		vq_send_ack(c, qp, WEFT_VACK_NAK_RNR, h->psn, qp->min_rnr_timer);
		return false;
	}
	why = rwqe_load(c, qp, &qp->rcv);
	qp->rcv_active = true;
	qp->rcv_off = 0;
	if (why) {
		violation(c, qp, h, why, why == WEFT_R_LENGTH ? WEFT_VWC_LOC_LEN_ERR :
			  why == WEFT_R_BAD_WQE || why == WEFT_R_DMA_ERROR ?
			  WEFT_VWC_LOC_QP_OP_ERR : WEFT_VWC_LOC_PROT_ERR);
		return false;
	}
	return true;
}

bool vq_rq_take(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h)
{
	return rq_take(c, qp, h);
}

void vq_violation(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h,
		  unsigned int reason, uint8_t rq_status)
{
	violation(c, qp, h, reason, rq_status);
}

/* Moves epsn past n packets and the ones placed ahead of order right
 * after them; true when it jumped over any of those. */
static bool advance(struct weft_core *c, struct vq_qp *qp, uint32_t n)
{
	bool jumped = false;

	qp->epsn = psn_add(qp->epsn, n);
	qp->rx_bits = n >= 64 ? 0 : qp->rx_bits >> n;
	qp->rx_last = n >= 64 ? 0 : qp->rx_last >> n;
	while (qp->rx_bits & 1) {
		/* The last packet of a WRITE placed ahead: now every packet of
		 * it is placed. */
		if (qp->rx_last & 1)
			vq_cnt_qp_event(c, qp, WEFT_CNT_EV_REMOTE_WRITE);
		qp->epsn = psn_add(qp->epsn, 1);
		qp->rx_bits >>= 1;
		qp->rx_last >>= 1;
		jumped = true;
	}
	qp->nak_sent = false;
	vq_one_touch_catch_up(c, qp);
	return jumped;
}

static void owe_ack(struct weft_core *c, struct vq_qp *qp)
{
	qp->ack_owed = true;
	vq_work(c, qp);
}

/* A send or write segment taken in order: an ACK is owed when the
 * requester asked for one (ACKREQ: the last packet of a message and every
 * 16th) or when epsn jumped over packets placed ahead of order, which may
 * have asked. */
static void took_segment(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h)
{
	if (advance(c, qp, 1) || (h->flags & WEFT_VF_ACKREQ))
		owe_ack(c, qp);
}

/* RDMA write segment: checks and placement.  Returns a reason. */
static unsigned int place_write(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h,
				const uint8_t *data, uint32_t dlen, bool in_order)
{
	unsigned int why;

	if (!(qp->access & WEFT_VACC_REMOTE_WRITE))
		return WEFT_R_ACCESS;
	/* A zero-length RDMA WRITE names no memory: its R_Key and VA are not
	 * checked, as on IB (hw-spec 16.9); UCX flushes with rkey 0. */
	if ((h->flags & WEFT_VF_FIRST) && (h->flags & WEFT_VF_LAST) && !dlen)
		return WEFT_R_OK;
	if ((h->flags & WEFT_VF_LAST) && vq_touched(c, h->rkey) &&
	    c->verbs->tpt[WEFT_STAG_INDEX(h->rkey)].e.stored_psn != h->psn)
		return WEFT_R_ONE_TOUCH;        /* second message to a touched window */
	why = vq_tpt_copy(c, qp->pd, vq_qpn(c, qp), h->rkey, h->va, (void *)data, dlen,
			  WEFT_VACC_REMOTE_WRITE, true, false, VQ_TO_MEM);
	if (why)
		return why;
	if (h->flags & WEFT_VF_LAST)
		return vq_one_touch(c, qp, h->rkey, h->psn, in_order);
	return WEFT_R_OK;
}

static void rx_send(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h,
		    const uint8_t *data, uint32_t dlen)
{
	unsigned int why;
	uint8_t flags = 0;

	if (h->flags & WEFT_VF_FIRST) {
		if (qp->rcv_active) {
			violation(c, qp, h, WEFT_R_BAD_HEADER, WEFT_VWC_REM_INV_REQ_ERR);
			return;
		}
		if (!(vq_srq_is_tm(c, qp) ? vq_tm_first(c, qp, h, &data, &dlen) :
		      rq_take(c, qp, h)))
			return;
	} else if (!qp->rcv_active) {
		violation(c, qp, h, WEFT_R_BAD_HEADER, 0);
		return;
	}
	if (dlen > qp->rcv.total - qp->rcv_off) {
		violation(c, qp, h, WEFT_R_LENGTH, WEFT_VWC_LOC_LEN_ERR);
		return;
	}
	why = vq_sge_copy(c, qp, qp->rcv.sge, qp->rcv.h.num_sge, qp->rcv_off, (void *)data, dlen,
			  WEFT_VACC_LOCAL_WRITE, VQ_TO_MEM);
	if (why) {
		violation(c, qp, h, why, WEFT_VWC_LOC_PROT_ERR);
		return;
	}
	qp->rcv_off += dlen;
	if (h->flags & WEFT_VF_LAST) {
		if (h->flags & WEFT_VF_INV) {
			why = vq_remote_inv(c, qp, h->imm_inv);
			if (why) {
				violation(c, qp, h, why, WEFT_VWC_REM_INV_REQ_ERR);
				return;
			}
			flags |= WEFT_VCQE_WITH_INV;
		}
		if (h->flags & WEFT_VF_IMM)
			flags |= WEFT_VCQE_WITH_IMM;
		if (h->flags & WEFT_VF_SE)
			flags |= WEFT_VCQE_SOLICITED;
		qp->rcv_active = false;
		rq_cqe(c, qp, &qp->rcv, WEFT_VWC_RECV, WEFT_VWC_SUCCESS, (uint32_t)qp->rcv_off,
		       flags, h->imm_inv, (h->flags & WEFT_VF_SE) != 0);
		qp->msn++;
	}
	took_segment(c, qp, h);
}

static void rx_write(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h,
		     const uint8_t *data, uint32_t dlen)
{
	bool imm = (h->flags & (WEFT_VF_IMM | WEFT_VF_LAST)) == (WEFT_VF_IMM | WEFT_VF_LAST);
	unsigned int why;

	if (imm && !rq_take(c, qp, h))
		return;
	why = place_write(c, qp, h, data, dlen, true);
	if (why) {
		violation(c, qp, h, why, imm ? WEFT_VWC_REM_ACCESS_ERR : 0);
		return;
	}
	if (h->flags & WEFT_VF_LAST) {
		qp->msn++;
		vq_cnt_qp_event(c, qp, WEFT_CNT_EV_REMOTE_WRITE);
	}
	if (imm) {
		qp->rcv_active = false;
		rq_cqe(c, qp, &qp->rcv, WEFT_VWC_RECV_RDMA_IMM, WEFT_VWC_SUCCESS, h->dma_len,
		       WEFT_VCQE_WITH_IMM, h->imm_inv, false);
	}
	took_segment(c, qp, h);
}

/* UC: the message being received fails locally: its receive WQE (if
 * taken) completes with status, the QP goes to ERR; no Terminate. */
static void uc_fail(struct weft_core *c, struct vq_qp *qp, const struct weft_wire_hdr *wh,
		    unsigned int reason, uint8_t status)
{
	if (qp->rcv_active)
		rq_cqe(c, qp, &qp->rcv, WEFT_VWC_RECV, status, reason, 0, 0, false);
	qp->rcv_active = false;
	weft_drop(c, wh, WEFT_NO_WINDOW, reason);
	vq_qp_error(c, qp, reason);
}

/* UC: the message being received is dropped (and, until_first, the
 * packets after it up to the first packet of a new message); its receive WQE (consumed only at
 * completion: UC QPs have no SRQ) serves the next message. */
static void uc_lose(struct weft_core *c, struct vq_qp *qp, const struct weft_wire_hdr *wh,
		    unsigned int reason, bool until_first)
{
	qp->rcv_active = false;
	qp->uc_drop = until_first;
	weft_drop(c, wh, WEFT_NO_WINDOW, reason);
}

/*
 * UC requests (16.16): no ACK, NAK, RNR NAK or Terminate.  A packet out
 * of sequence that does not start a message drops the message being
 * received; the first packet of a message is taken whatever its PSN,
 * which becomes the expected one.  A WRITE the TPT refuses and a SEND
 * with no receive WQE are dropped; a SEND that does not fit its receive
 * WQE completes it in error and the QP goes to ERR.
 */
void vq_rx_uc(struct weft_core *c, struct vq_qp *qp, const struct weft_wire_hdr *wh,
	      const struct weft_vhdr *h, const uint8_t *data, uint32_t dlen)
{
	bool first = (h->flags & WEFT_VF_FIRST) != 0, last = (h->flags & WEFT_VF_LAST) != 0;
	unsigned int why;
	uint8_t flags = 0;

	if (!first && (h->psn != qp->epsn || qp->uc_drop)) {
		qp->epsn = psn_add(h->psn, 1);
		uc_lose(c, qp, wh, WEFT_R_PSN_OOS, !last);
		return;
	}
	qp->epsn = psn_add(h->psn, 1);
	qp->uc_drop = false;
	if (first && qp->rcv_active) {
		/* the previous SEND lost its last packet */
		qp->rcv_active = false;
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_PSN_OOS);
	}
	if (h->opcode == WEFT_VOP_WRITE) {
		bool imm = (h->flags & WEFT_VF_IMM) && last;

		if (imm && rq_empty(c, qp)) {
			uc_lose(c, qp, wh, WEFT_R_RNR, false);
			return;
		}
		why = place_write(c, qp, h, data, dlen, true);
		if (why) {
			uc_lose(c, qp, wh, why, !last);
			return;
		}
		if (imm) {
			qp->rcv_active = true;
			why = rwqe_load(c, qp, &qp->rcv);
			if (why) {
				uc_fail(c, qp, wh, why, WEFT_VWC_LOC_QP_OP_ERR);
				return;
			}
			qp->rcv_active = false;
			rq_cqe(c, qp, &qp->rcv, WEFT_VWC_RECV_RDMA_IMM, WEFT_VWC_SUCCESS, h->dma_len,
			       WEFT_VCQE_WITH_IMM, h->imm_inv, false);
		}
		if (last)
			qp->msn++;
		return;
	}
	if (h->flags & WEFT_VF_INV) {           /* UC has no SEND with invalidate */
		uc_lose(c, qp, wh, WEFT_R_BAD_HEADER, !last);
		return;
	}
	if (first) {
		if (rq_empty(c, qp)) {
			uc_lose(c, qp, wh, WEFT_R_RNR, !last);
			return;
		}
		qp->rcv_active = true;
		qp->rcv_off = 0;
		why = rwqe_load(c, qp, &qp->rcv);
		if (why) {
			uc_fail(c, qp, wh, why, why == WEFT_R_LENGTH ? WEFT_VWC_LOC_LEN_ERR :
				why == WEFT_R_BAD_WQE || why == WEFT_R_DMA_ERROR ?
				WEFT_VWC_LOC_QP_OP_ERR : WEFT_VWC_LOC_PROT_ERR);
			return;
		}
	} else if (!qp->rcv_active) {
		uc_lose(c, qp, wh, WEFT_R_BAD_HEADER, !last);
		return;
	}
	if (dlen > qp->rcv.total - qp->rcv_off) {
		uc_fail(c, qp, wh, WEFT_R_LENGTH, WEFT_VWC_LOC_LEN_ERR);
		return;
	}
	why = vq_sge_copy(c, qp, qp->rcv.sge, qp->rcv.h.num_sge, qp->rcv_off, (void *)data, dlen,
			  WEFT_VACC_LOCAL_WRITE, VQ_TO_MEM);
	if (why) {
		uc_fail(c, qp, wh, why, WEFT_VWC_LOC_PROT_ERR);
		return;
	}
	qp->rcv_off += dlen;
	if (!last)
		return;
	if (h->flags & WEFT_VF_IMM)
		flags |= WEFT_VCQE_WITH_IMM;
	if (h->flags & WEFT_VF_SE)
		flags |= WEFT_VCQE_SOLICITED;
	qp->rcv_active = false;
	rq_cqe(c, qp, &qp->rcv, WEFT_VWC_RECV, WEFT_VWC_SUCCESS, (uint32_t)qp->rcv_off, flags,
	       h->imm_inv, (h->flags & WEFT_VF_SE) != 0);
	qp->msn++;
}

static bool rrq_room(struct vq_qp *qp)
{
	unsigned int depth = qp->max_dest_rd_atomic ? qp->max_dest_rd_atomic : 1;

	return qp->rrq_count < depth;
}

static void rrq_push(struct weft_core *c, struct vq_qp *qp, const struct vq_rrq *e)
{
	qp->rrq[(qp->rrq_head + qp->rrq_count) % WEFT_VERBS_MAX_RD_ATOMIC] = *e;
	qp->rrq_count++;
	vq_work(c, qp);
}

/* Read request or atomic in PSN order (new) or a duplicate (dup). */
static void rx_read(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h, bool dup)
{
	struct vq_rrq e;
	unsigned int why;

	memset(&e, 0, sizeof(e));
	if (!dup) {
		/* Seed 002 ¶149-153: the MSN indexes the read-request queue. */
		if (h->msn != qp->rd_emsn) {
			violation(c, qp, h, WEFT_R_MSN, 0);
			return;
		}
		if (!rrq_room(qp)) {
			violation(c, qp, h, WEFT_R_RRQ_FULL, 0);
			return;
		}
	} else if (!rrq_room(qp)) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_RRQ_FULL);
		return;
	}
	e.psn = h->psn;
	e.rkey = h->rkey;
	e.va = h->va;
	if (h->opcode == WEFT_VOP_READ_REQ) {
		e.len = h->dma_len;
		e.npkt = vq_npkt(h->dma_len);
		why = !(qp->access & WEFT_VACC_REMOTE_READ) ? WEFT_R_ACCESS :
		      e.npkt > VQ_CHUNK ? WEFT_R_LENGTH :
		      vq_tpt_check(c, qp->pd, vq_qpn(c, qp), h->rkey, h->va, h->dma_len,
				   WEFT_VACC_REMOTE_READ, true, false);
		if (why) {
			violation(c, qp, h, why, 0);
			return;
		}
		if (dup)
			weft_count(c, WEFT_CNT_V_DUP_READS, 1);
		e.counted = !dup;
	} else {
		uint64_t old = 0, nv;
		unsigned int i;

		e.atomic = 1;
		e.npkt = 1;
		if (dup) {
			for (i = 0; i < VQ_ATOMIC_CACHE; i++)
				if (qp->atom_psn[i] == h->psn + 1)
					break;
			if (i == VQ_ATOMIC_CACHE) {
				weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_PSN_DUP);
				return;
			}
			e.value = qp->atom_val[i];
			rrq_push(c, qp, &e);
			return;
		}
		why = !(qp->access & WEFT_VACC_REMOTE_ATOMIC) ? WEFT_R_ACCESS :
		      (h->va & 7) ? WEFT_R_ALIGN :
		      vq_tpt_copy(c, qp->pd, vq_qpn(c, qp), h->rkey, h->va, &old, 8,
				  WEFT_VACC_REMOTE_ATOMIC, true, false, VQ_FROM_MEM);
		if (!why) {
			nv = h->opcode == WEFT_VOP_FAA ? old + h->swap_add :
			     old == h->compare ? h->swap_add : old;
			if (nv != old || h->opcode == WEFT_VOP_FAA)
				why = vq_tpt_copy(c, qp->pd, vq_qpn(c, qp), h->rkey, h->va, &nv, 8,
						  WEFT_VACC_REMOTE_ATOMIC, true, false, VQ_TO_MEM);
		}
		if (why) {
			violation(c, qp, h, why, 0);
			return;
		}
		e.value = old;
		qp->atom_psn[qp->atom_next] = h->psn + 1;
		qp->atom_val[qp->atom_next] = old;
		qp->atom_next = (qp->atom_next + 1) % VQ_ATOMIC_CACHE;
		vq_cnt_qp_event(c, qp, WEFT_CNT_EV_REMOTE_WRITE);
	}
	rrq_push(c, qp, &e);
	if (!dup) {
		qp->rd_emsn++;
		qp->msn++;
		advance(c, qp, e.npkt);
	}
}

void vq_rx_request(struct weft_core *c, struct vq_qp *qp, const struct weft_wire_hdr *wh,
		   const struct weft_vhdr *h, const uint8_t *data, uint32_t dlen)
{
	int32_t d = psn_diff(h->psn, qp->epsn);

	(void)wh;
	if (d < 0) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_PSN_DUP);
		if (h->opcode == WEFT_VOP_READ_REQ || h->opcode == WEFT_VOP_CAS ||
		    h->opcode == WEFT_VOP_FAA)
			rx_read(c, qp, h, true);
		else
			owe_ack(c, qp);
		return;
	}
	if (d > 0) {
		bool ooo_write = h->opcode == WEFT_VOP_WRITE && d < (int32_t)VQ_WINDOW &&
				 !((h->flags & WEFT_VF_IMM) && (h->flags & WEFT_VF_LAST));

		if (ooo_write && !((qp->rx_bits >> d) & 1)) {
			unsigned int why = place_write(c, qp, h, data, dlen, false);

			if (why == WEFT_R_OK) {
				qp->rx_bits |= 1ull << d;
				weft_count(c, WEFT_CNT_V_OOO_PLACED, 1);
				if (h->flags & WEFT_VF_LAST) {
					qp->msn++;
					qp->rx_last |= 1ull << d;
				}
			} else {
				/* Checked again when it arrives in order. */
				weft_drop(c, wh, WEFT_NO_WINDOW, why);
			}
		} else {
			weft_drop(c, wh, WEFT_NO_WINDOW,
				  d < (int32_t)VQ_WINDOW ? WEFT_R_PSN_OOS : WEFT_R_PSN_WINDOW);
		}
		if (!qp->nak_sent) {
			qp->nak_sent = true;
			weft_count(c, WEFT_CNT_V_NAKS_TX, 1);
			vq_send_ack(c, qp, WEFT_VACK_NAK_SEQ, qp->epsn, qp->msn);
		}
		return;
	}
	switch (h->opcode) {
	case WEFT_VOP_SEND:
		rx_send(c, qp, h, data, dlen);
		break;
	case WEFT_VOP_WRITE:
		rx_write(c, qp, h, data, dlen);
		break;
	default:
		rx_read(c, qp, h, false);
		break;
	}
}

int vq_rrq_step(struct weft_core *c, struct vq_qp *qp)
{
	struct weft_verbs *v = c->verbs;
	struct vq_rrq *e = &qp->rrq[qp->rrq_head];
	struct weft_vhdr h;
	uint8_t *data = v->pkt + WEFT_WIRE_HDR_SIZE + sizeof(h);
	uint32_t dlen = 0;
	uint64_t off = (uint64_t)e->sent * WEFT_VERBS_MTU;

	if (v->pend)
		return -EAGAIN;
	memset(&h, 0, sizeof(h));
	h.dst_qpn = qp->dest_qpn;
	h.src_qpn = vq_qpn(c, qp);
	h.psn = psn_add(e->psn, e->sent);
	h.msn = qp->msn;
	if (e->atomic) {
		h.opcode = WEFT_VOP_ATOMIC_RESP;
		h.swap_add = e->value;
	} else {
		unsigned int why;

		dlen = (uint32_t)(e->len - off < WEFT_VERBS_MTU ? e->len - off : WEFT_VERBS_MTU);
		why = vq_tpt_copy(c, qp->pd, vq_qpn(c, qp), e->rkey, e->va + off, data, dlen,
				  WEFT_VACC_REMOTE_READ, true, false, VQ_FROM_MEM);
		if (why) {
			struct weft_vhdr t = { .psn = e->psn };

			qp->rrq_count = 0;
			violation(c, qp, &t, why, 0);
			return 1;
		}
		h.opcode = WEFT_VOP_READ_RESP;
		h.va = off;             /* offset in this request */
		h.dma_len = e->len;
		if (e->sent == 0)
			h.flags |= WEFT_VF_FIRST;
		if (e->sent + 1 == e->npkt)
			h.flags |= WEFT_VF_LAST;
	}
	if (vq_xmit(c, qp, qp->dest_node, &h, data, dlen) != 0)
		return -EAGAIN;
	if (++e->sent >= e->npkt) {
		if (e->counted)
			vq_cnt_qp_event(c, qp, WEFT_CNT_EV_REMOTE_READ);
		qp->rrq_head = (qp->rrq_head + 1) % WEFT_VERBS_MAX_RD_ATOMIC;
		qp->rrq_count--;
	}
	return 1;
}

void vq_rx_ud(struct weft_core *c, struct vq_qp *qp, const struct weft_wire_hdr *wh,
	      const struct weft_vhdr *h, const uint8_t *data, uint32_t dlen)
{
	uint8_t grh[WEFT_VERBS_GRH_SIZE];
	struct weft_vaddr addr;
	struct vq_rwqe r;
	unsigned int why, net;
	uint32_t src = h->src_qpn & 0xffffffu;

	if (qp->state < WEFT_VQPS_RTR || qp->state == WEFT_VQPS_ERR) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_QP_STATE);
		return;
	}
	if (dlen < sizeof(addr)) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_BAD_HEADER);
		return;
	}
	memcpy(&addr, data, sizeof(addr));
	data += sizeof(addr);
	dlen -= (uint32_t)sizeof(addr);
	if (!vq_gid_local(c, addr.dgid)) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_DGID_UNKNOWN);
		return;
	}
	net = vq_gid_grh(&addr, dlen, (h->flags & WEFT_VF_IMM) != 0, grh);
	if (!net) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_GID_TYPE);
		return;
	}
	if (h->qkey != qp->qkey) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_QKEY);
		return;
	}
	if (rq_empty(c, qp)) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_RNR);
		return;
	}
	why = rwqe_load(c, qp, &r);
	if (!why && r.total < WEFT_VERBS_GRH_SIZE + (uint64_t)dlen)
		why = WEFT_R_LENGTH;
	if (!why)
		why = vq_sge_copy(c, qp, r.sge, r.h.num_sge, 0, grh, sizeof(grh),
				  WEFT_VACC_LOCAL_WRITE, VQ_TO_MEM);
	if (!why)
		why = vq_sge_copy(c, qp, r.sge, r.h.num_sge, sizeof(grh), (void *)data, dlen,
				  WEFT_VACC_LOCAL_WRITE, VQ_TO_MEM);
	if (why) {
		rq_cqe(c, qp, &r, WEFT_VWC_RECV, why == WEFT_R_LENGTH ? WEFT_VWC_LOC_LEN_ERR :
		       WEFT_VWC_LOC_PROT_ERR, why, 0, 0, false);
		return;
	}
	{
		struct weft_vcqe e;

		memset(&e, 0, sizeof(e));
		e.wr_id = r.h.wr_id;
		e.qpn = vq_qpn(c, qp);
		e.byte_len = WEFT_VERBS_GRH_SIZE + dlen;
		e.imm_inv = h->imm_inv;
		e.src_qpn = src;
		e.src_node = wh->src_node;
		e.wqe_index = (uint16_t)r.index;
		e.opcode = WEFT_VWC_RECV;
		e.flags = WEFT_VCQE_GRH | ((h->flags & WEFT_VF_IMM) ? WEFT_VCQE_WITH_IMM : 0) |
			  (net == WEFT_VGID_IPV4 ? WEFT_VCQE_NET_IPV4 : WEFT_VCQE_NET_IPV6) |
			  ((h->flags & WEFT_VF_SE) ? WEFT_VCQE_SOLICITED : 0);
		vq_cqe(c, qp->rcq, &e, (h->flags & WEFT_VF_SE) != 0);
		if (!qp->srq)
			qp->rq_ci++;
	}
}
