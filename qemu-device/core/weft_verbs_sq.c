/* SPDX-License-Identifier: MIT */
/*
 * Weft verbs engine: the send queue (requester): WQE fetch and local
 * validation (seed 002 ¶113-120), segmentation into packets, local
 * operations (fast registration, local invalidate, window bind) and SQ
 * completions in order, including flushes (docs/hw-spec.md 16.6-16.8).
 */
#include <errno.h>
#include <string.h>

#include "weft_verbs_int.h"

static inline struct vq_sw *sw_of(struct vq_qp *qp, uint32_t idx)
{
	return &qp->sw[idx & ((1u << qp->sq_log2) - 1)];
}

static uint64_t sq_slot(const struct vq_qp *qp, uint32_t idx)
{
	return qp->sq_addr + ((uint64_t)(idx & ((1u << qp->sq_log2) - 1)) << qp->sq_stride);
}

unsigned int vq_wqe_load(struct weft_core *c, struct vq_qp *qp, uint32_t idx,
			 struct vq_wqe *w)
{
	uint64_t a = sq_slot(qp, idx);
	unsigned int max = ((1u << qp->sq_stride) - sizeof(w->h)) / sizeof(struct weft_vsge);

	if (weft_dma_read(c, a, &w->h, sizeof(w->h)) != 0)
		return WEFT_R_DMA_ERROR;
	if (w->h.opcode >= WEFT_VWR__COUNT || w->h.num_sge > max || w->h.num_sge > VQ_MAX_SGE)
		return WEFT_R_BAD_WQE;
	if (w->h.flags & WEFT_VWQE_INLINE) {
		struct weft_vinline in;
		unsigned int op = w->h.opcode;

		if (w->h.num_sge || (op != WEFT_VWR_SEND && op != WEFT_VWR_SEND_IMM &&
				     op != WEFT_VWR_SEND_INV && op != WEFT_VWR_WRITE &&
				     op != WEFT_VWR_WRITE_IMM))
			return WEFT_R_BAD_WQE;
		if (weft_dma_read(c, a + sizeof(w->h), &in, sizeof(in)) != 0)
			return WEFT_R_DMA_ERROR;
		if (in.length > (1u << qp->sq_stride) - sizeof(w->h) - sizeof(in))
			return WEFT_R_LENGTH;
		w->inl_len = in.length;
		if (weft_dma_read(c, a + sizeof(w->h) + sizeof(in), w->inl, in.length) != 0)
			return WEFT_R_DMA_ERROR;
		return WEFT_R_OK;
	}
	if (weft_dma_read(c, a + sizeof(w->h), w->sge, w->h.num_sge * sizeof(w->sge[0])) != 0)
		return WEFT_R_DMA_ERROR;
	return WEFT_R_OK;
}

/* The local data of a loaded WQE: its SGEs checked for need, or its
 * inline bytes.  Sets w->total; returns a reason. */
static unsigned int wqe_check(struct weft_core *c, struct vq_qp *qp, struct vq_wqe *w,
			      unsigned int need)
{
	if (w->h.flags & WEFT_VWQE_INLINE) {
		w->total = w->inl_len;
		return WEFT_R_OK;
	}
	return vq_sge_check(c, qp, w->sge, w->h.num_sge, need, &w->total);
}

static bool is_rd(unsigned int op)
{
	return op == WEFT_VWR_READ || op == WEFT_VWR_CAS || op == WEFT_VWR_FAA;
}

static bool is_local(unsigned int op)
{
	return op == WEFT_VWR_REG_MR || op == WEFT_VWR_LOCAL_INV || op == WEFT_VWR_BIND_MW;
}

static uint8_t wc_op(unsigned int op)
{
	switch (op) {
	case WEFT_VWR_WRITE:
	case WEFT_VWR_WRITE_IMM: return WEFT_VWC_RDMA_WRITE;
	case WEFT_VWR_READ: return WEFT_VWC_RDMA_READ;
	case WEFT_VWR_CAS: return WEFT_VWC_COMP_SWAP;
	case WEFT_VWR_FAA: return WEFT_VWC_FETCH_ADD;
	case WEFT_VWR_REG_MR: return WEFT_VWC_REG_MR;
	case WEFT_VWR_LOCAL_INV: return WEFT_VWC_LOCAL_INV;
	case WEFT_VWR_BIND_MW: return WEFT_VWC_BIND_MW;
	case WEFT_VWR_WAIT_CNT: return WEFT_VWC_WAIT_CNT;
	default: return WEFT_VWC_SEND;
	}
}

bool vq_sq_has_work(struct weft_core *c, const struct vq_qp *qp)
{
	(void)c;
	if (qp->sq_ci != qp->sq_next && qp->sw[qp->sq_ci & ((1u << qp->sq_log2) - 1)].state == SW_DONE)
		return true;
	if (qp->state != WEFT_VQPS_RTS || qp->rnr_until)
		return false;
	return qp->sq_next != qp->sq_prod || vq_rvh_has_work(qp);
}

void vq_sq_complete(struct weft_core *c, struct vq_qp *qp, unsigned int max)
{
	bool flush = qp->state == WEFT_VQPS_ERR || qp->state == WEFT_VQPS_SQE;
	unsigned int n = 0;

	while (n < max && qp->sq_ci != qp->sq_prod) {
		struct vq_sw *sw = sw_of(qp, qp->sq_ci);
		struct weft_vcqe e;

		memset(&e, 0, sizeof(e));
		e.qpn = vq_qpn(c, qp);
		e.wqe_index = (uint16_t)qp->sq_ci;
		e.flags = WEFT_VCQE_IS_SQ;
		if (sw->state == SW_DONE) {
			e.wr_id = sw->wr_id;
			e.opcode = wc_op(sw->op);
			e.status = sw->status;
			e.byte_len = sw->status ? sw->reason : sw->byte_len;
			if (sw->signaled || sw->status)
				vq_cqe(c, qp->scq, &e, false);
			/* After the completion, so never ahead of the data. */
			if (sw->cnt_slot)
				vq_cnt_slot_event(c, qp, sw->cnt_slot, sw->status != 0);
		} else if (flush) {
			struct weft_vwqe h;
			unsigned int slot;

			if (sw->state == SW_IDLE) {
				memset(&h, 0, sizeof(h));
				weft_dma_read(c, sq_slot(qp, qp->sq_ci), &h, sizeof(h));
				e.wr_id = h.wr_id;
				e.opcode = wc_op(h.opcode);
				/* A WAIT_CNT's slot is the one it waits on. */
				slot = h.opcode == WEFT_VWR_WAIT_CNT ? 0 : h.cnt_slot;
			} else {
				e.wr_id = sw->wr_id;
				e.opcode = wc_op(sw->op);
				slot = sw->cnt_slot;
			}
			e.status = WEFT_VWC_WR_FLUSH_ERR;
			e.byte_len = WEFT_R_FLUSHED;
			vq_cqe(c, qp->scq, &e, false);
			if (slot)
				vq_cnt_slot_event(c, qp, slot, true);
		} else {
			break;
		}
		memset(sw, 0, sizeof(*sw));
		qp->sq_ci++;
		if ((int32_t)(qp->sq_next - qp->sq_ci) < 0) {
			qp->sq_next = qp->sq_ci;
			qp->cur_valid = false;
			qp->cur_pkt = 0;
		}
		n++;
	}
	if (!vq_sq_outstanding(qp))
		qp->rto = 0;
}

bool vq_sq_outstanding(struct vq_qp *qp)
{
	if (qp->sq_ci != qp->sq_next || vq_rvh_outstanding(qp))
		return true;
	return qp->sq_next != qp->sq_prod && sw_of(qp, qp->sq_next)->state == SW_STARTED;
}

void vq_sq_fail(struct weft_core *c, struct vq_qp *qp, uint32_t idx, uint8_t status,
		unsigned int reason)
{
	struct vq_sw *sw = sw_of(qp, idx);

	sw->state = SW_DONE;
	sw->status = status;
	sw->reason = (uint8_t)reason;
	(void)c;
}

/* Start WQE idx: copy, check, take PSNs.  Returns a CQE status (0 ok). */
static uint8_t wqe_start(struct weft_core *c, struct vq_qp *qp, uint32_t idx,
			 unsigned int *reason)
{
	struct vq_wqe *w = &qp->cur;
	struct vq_sw *sw = sw_of(qp, idx);
	unsigned int op = w->h.opcode, need;
	bool ud = qp->type == WEFT_VQPT_UD;

	sw->wr_id = w->h.wr_id;
	sw->op = (uint8_t)op;
	sw->signaled = (w->h.flags & WEFT_VWQE_SIGNALED) != 0;
	/* A counter slot must be bound when the WQE starts (weft/cnt.h). */
	if (w->h.cnt_slot && (w->h.cnt_slot >= WEFT_CNT_QP_SLOTS || !qp->cnt[w->h.cnt_slot].gen)) {
		*reason = WEFT_R_CNT_SLOT;
		return WEFT_VWC_LOC_QP_OP_ERR;
	}
	sw->cnt_slot = w->h.cnt_slot;
	*reason = WEFT_R_QP_TYPE;
	if (ud && op != WEFT_VWR_SEND && op != WEFT_VWR_SEND_IMM && op != WEFT_VWR_REG_MR &&
	    op != WEFT_VWR_LOCAL_INV)
		return WEFT_VWC_LOC_QP_OP_ERR;
	/* UC: no READ, atomics, windows or SEND with invalidate (16.16). */
	if (qp->type == WEFT_VQPT_UC && op != WEFT_VWR_SEND && op != WEFT_VWR_SEND_IMM &&
	    op != WEFT_VWR_WRITE && op != WEFT_VWR_WRITE_IMM && op != WEFT_VWR_REG_MR &&
	    op != WEFT_VWR_LOCAL_INV)
		return WEFT_VWC_LOC_QP_OP_ERR;
	if (is_local(op))
		return WEFT_VWC_SUCCESS;
	need = op == WEFT_VWR_READ || op == WEFT_VWR_CAS || op == WEFT_VWR_FAA ?
	       WEFT_VACC_LOCAL_WRITE : WEFT_VACC_LOCAL_READ;
	*reason = wqe_check(c, qp, w, need);
	if (*reason)
		return *reason == WEFT_R_LENGTH ? WEFT_VWC_LOC_LEN_ERR : WEFT_VWC_LOC_PROT_ERR;
	if ((op == WEFT_VWR_CAS || op == WEFT_VWR_FAA) &&
	    (w->h.num_sge != 1 || w->total != 8 || (w->h.u.rdma.remote_addr & 7))) {
		*reason = WEFT_R_ALIGN;
		return WEFT_VWC_LOC_LEN_ERR;
	}
	if (ud && w->total > WEFT_VERBS_MTU) {
		*reason = WEFT_R_LENGTH;
		return WEFT_VWC_LOC_LEN_ERR;
	}
	if (ud) {
		struct weft_vaddr addr;

		*reason = vq_gid_addr(c, &w->h, &addr);
		if (*reason)
			return WEFT_VWC_LOC_QP_OP_ERR;
	}
	sw->byte_len = (uint32_t)w->total;
	sw->psn = qp->snd_psn;
	sw->npkt = (op == WEFT_VWR_CAS || op == WEFT_VWR_FAA) ? 1 : vq_npkt(w->total);
	if (is_rd(op)) {
		sw->msn = qp->rd_msn;
		qp->rd_msn += op == WEFT_VWR_READ ? (sw->npkt + VQ_CHUNK - 1) / VQ_CHUNK : 1;
	}
	if (!ud)
		qp->snd_psn = psn_add(qp->snd_psn, sw->npkt);
	*reason = WEFT_R_OK;
	return WEFT_VWC_SUCCESS;
}

static uint8_t local_status(unsigned int op)
{
	return op == WEFT_VWR_BIND_MW ? WEFT_VWC_MW_BIND_ERR : WEFT_VWC_LOC_PROT_ERR;
}

/* Run a local WQE (fast registration, invalidate, bind). */
static void wqe_local(struct weft_core *c, struct vq_qp *qp, uint32_t idx)
{
	const struct weft_vwqe *h = &qp->cur.h;
	unsigned int why;

	switch (h->opcode) {
	case WEFT_VWR_REG_MR:
		why = vq_fast_reg(c, qp, h);
		break;
	case WEFT_VWR_LOCAL_INV:
		why = vq_local_inv(c, qp, h->imm_inv);
		break;
	default:
		why = qp->type == WEFT_VQPT_RC ? vq_bind(c, qp, h) : WEFT_R_QP_TYPE;
		break;
	}
	if (why == WEFT_R_OK) {
		sw_of(qp, idx)->state = SW_DONE;
		return;
	}
	vq_sq_fail(c, qp, idx, local_status(h->opcode), why);
	if (h->opcode == WEFT_VWR_REG_MR && !(qp->flags & WEFT_VQPF_REG_OPT_B)) {
		vq_qp_sq_error(c, qp, why);     /* option A: SQ drained */
	} else {
		if (h->opcode == WEFT_VWR_REG_MR && qp->type == WEFT_VQPT_RC)
			vq_send_terminate(c, qp, why, qp->snd_psn);     /* option B */
		vq_qp_error(c, qp, why);
	}
}

unsigned int vq_rd_outstanding(struct vq_qp *qp)
{
	unsigned int n = vq_rvh_rd_outstanding(qp);
	uint32_t i;

	for (i = qp->sq_ci; i != qp->sq_next + 1; i++) {
		struct vq_sw *sw = sw_of(qp, i);

		if (sw->state == SW_STARTED && is_rd(sw->op)) {
			unsigned int k = sw->chunks_sent;

			/* Chunks of the head read whose responses are all in. */
			if (i == qp->resp_wqe && sw->op == WEFT_VWR_READ)
				k -= (unsigned int)psn_diff(qp->resp_psn, sw->psn) / VQ_CHUNK <= k ?
				     (unsigned int)psn_diff(qp->resp_psn, sw->psn) / VQ_CHUNK : k;
			n += k;
		}
		if (i == qp->sq_next)
			break;
	}
	return n;
}

/* Any earlier read or atomic still outstanding (for FENCE). */
static bool rd_before(struct vq_qp *qp, uint32_t idx)
{
	uint32_t i;

	for (i = qp->sq_ci; i != idx; i++) {
		struct vq_sw *sw = sw_of(qp, i);

		if (sw->state != SW_DONE && is_rd(sw->op))
			return true;
	}
	return false;
}

static int wqe_packet(struct weft_core *c, struct vq_qp *qp, uint32_t idx)
{
	struct weft_verbs *v = c->verbs;
	struct vq_wqe *w = &qp->cur;
	struct vq_sw *sw = sw_of(qp, idx);
	struct weft_vhdr h;
	uint32_t pkt = qp->cur_pkt, adv = 1, psn = psn_add(sw->psn, pkt), dlen = 0;
	uint64_t off = (uint64_t)pkt * WEFT_VERBS_MTU;
	unsigned int op = w->h.opcode, why;
	uint8_t *data = v->pkt + WEFT_WIRE_HDR_SIZE + sizeof(h);
	uint32_t pre = qp->type == WEFT_VQPT_UD ? sizeof(struct weft_vaddr) : 0;

	if (qp->type == WEFT_VQPT_RC && psn_diff(psn, qp->acked_psn) >= (int32_t)VQ_WINDOW)
		return 0;
	if (is_rd(op) && vq_rd_outstanding(qp) >= (qp->max_rd_atomic ? qp->max_rd_atomic : 1u) &&
	    !(op == WEFT_VWR_READ && pkt % VQ_CHUNK))
		return 0;
	memset(&h, 0, sizeof(h));
	h.dst_qpn = qp->dest_qpn;
	h.src_qpn = vq_qpn(c, qp);
	h.psn = psn;
	switch (op) {
	case WEFT_VWR_SEND:
	case WEFT_VWR_SEND_IMM:
	case WEFT_VWR_SEND_INV:
	case WEFT_VWR_WRITE:
	case WEFT_VWR_WRITE_IMM:
		dlen = (uint32_t)(w->total - off < WEFT_VERBS_MTU ? w->total - off : WEFT_VERBS_MTU);
		if (w->h.flags & WEFT_VWQE_INLINE) {
			memcpy(data + pre, w->inl + off, dlen);     /* total <= inl_len */
			why = WEFT_R_OK;
		} else {
			why = vq_sge_copy(c, qp, w->sge, w->h.num_sge, off, data + pre, dlen,
					  WEFT_VACC_LOCAL_READ, VQ_FROM_MEM);
		}
		if (!why && pre) {
			struct weft_vaddr addr;

			why = vq_gid_addr(c, &w->h, &addr);
			if (!why)
				memcpy(data, &addr, sizeof(addr));
		}
		if (why) {
			vq_sq_fail(c, qp, idx, why == WEFT_R_GID_INVALID || why == WEFT_R_GID_TYPE ?
				   WEFT_VWC_LOC_QP_OP_ERR : WEFT_VWC_LOC_PROT_ERR, why);
			if (pre)
				vq_qp_sq_error(c, qp, why);
			else
				vq_qp_error(c, qp, why);
			return 1;
		}
		h.opcode = op >= WEFT_VWR_WRITE ? WEFT_VOP_WRITE : WEFT_VOP_SEND;
		if (qp->type == WEFT_VQPT_UD)
			h.opcode = WEFT_VOP_UD_SEND;
		if (pkt == 0)
			h.flags |= WEFT_VF_FIRST;
		if (pkt + 1 >= sw->npkt)
			h.flags |= WEFT_VF_LAST | WEFT_VF_ACKREQ;
		else if ((pkt & 15) == 15)
			h.flags |= WEFT_VF_ACKREQ;
		if (op == WEFT_VWR_SEND_IMM || op == WEFT_VWR_WRITE_IMM)
			h.flags |= WEFT_VF_IMM;
		if (op == WEFT_VWR_SEND_INV)
			h.flags |= WEFT_VF_INV;
		if ((w->h.flags & WEFT_VWQE_SOLICITED) && op != WEFT_VWR_WRITE)
			h.flags |= WEFT_VF_SE;
		h.imm_inv = w->h.imm_inv;
		h.va = w->h.u.rdma.remote_addr + off;
		h.rkey = w->h.u.rdma.rkey;
		h.dma_len = (uint32_t)w->total;
		if (qp->type == WEFT_VQPT_UD) {
			h.dst_qpn = w->h.u.ud.dest_qpn;
			h.qkey = (w->h.u.ud.qkey & 0x80000000u) ? qp->qkey : w->h.u.ud.qkey;
			h.va = 0;
			h.rkey = 0;
		}
		break;
	case WEFT_VWR_READ: {
		uint32_t end = (pkt / VQ_CHUNK + 1) * VQ_CHUNK;

		if (end > sw->npkt)
			end = sw->npkt;
		adv = end - pkt;
		h.opcode = WEFT_VOP_READ_REQ;
		h.va = w->h.u.rdma.remote_addr + off;
		h.rkey = w->h.u.rdma.rkey;
		h.dma_len = (uint32_t)(w->total - off < (uint64_t)adv * WEFT_VERBS_MTU ?
				       w->total - off : (uint64_t)adv * WEFT_VERBS_MTU);
		h.msn = sw->msn + pkt / VQ_CHUNK;
		h.flags = WEFT_VF_FIRST | WEFT_VF_LAST;
		break;
	}
	default: /* CAS, FAA */
		h.opcode = op == WEFT_VWR_CAS ? WEFT_VOP_CAS : WEFT_VOP_FAA;
		h.va = w->h.u.rdma.remote_addr;
		h.rkey = w->h.u.rdma.rkey;
		h.compare = w->h.u.rdma.compare_add;
		h.swap_add = op == WEFT_VWR_CAS ? w->h.u.rdma.swap : w->h.u.rdma.compare_add;
		h.msn = sw->msn;
		h.dma_len = 8;
		h.flags = WEFT_VF_FIRST | WEFT_VF_LAST;
		break;
	}
	if (vq_xmit(c, qp, qp->type == WEFT_VQPT_UD ? w->h.u.ud.dest_node : qp->dest_node,
		    &h, data, pre + dlen) != 0)
		return -EAGAIN;
	if (qp->type == WEFT_VQPT_RC) {
		if (psn_diff(psn, qp->sent_hi) < 0)
			weft_count(c, WEFT_CNT_V_RETRANSMITS, 1);
		if (psn_diff(psn_add(psn, adv), qp->sent_hi) > 0)
			qp->sent_hi = psn_add(psn, adv);
	}
	if (is_rd(op)) {
		unsigned int k = op == WEFT_VWR_READ ? pkt / VQ_CHUNK + 1 : 1;

		if (k > sw->chunks_sent)
			sw->chunks_sent = (uint8_t)(k > 255 ? 255 : k);
	}
	qp->cur_pkt += adv;
	if (qp->cur_pkt >= sw->npkt) {
		qp->sq_next++;
		qp->cur_valid = false;
		qp->cur_pkt = 0;
		/* No ACK will come for UD and UC: done once sent. */
		if (qp->type != WEFT_VQPT_RC)
			sw->state = SW_DONE;
	}
	if (qp->type == WEFT_VQPT_RC && !qp->rto && qp->timeout) {
		qp->rto = c->ops.now_ns(c->opaque) + vq_rto_ns(qp);
		vq_timer_set(c, qp, qp->rto);
	}
	return 1;
}

/*
 * WQE idx is refused for reason why before it touched memory: it completes
 * with status st, and the QP goes to ERROR (RC) or only its send queue
 * does (UD, to SQE; hw-spec 16.6).
 */
static void wqe_refuse(struct weft_core *c, struct vq_qp *qp, uint32_t idx,
		       uint8_t st, unsigned int why)
{
	vq_sq_fail(c, qp, idx, st, why);
	if (qp->type == WEFT_VQPT_UD)
		vq_qp_sq_error(c, qp, why);
	else
		vq_qp_error(c, qp, why);
}

/*
 * WAIT_CNT at the SQ head (docs/counters.md "Waiting on a counter"): it
 * passes when the success count of the EVENT counter bound to its slot
 * reaches the threshold, then the WQEs after it go.  Until then the QP is
 * in the counter's waiter list and the WQE stays idle (no PSN, no timer):
 * nothing runs for this QP until the counter moves far enough.
 */
static int wqe_wait(struct weft_core *c, struct vq_qp *qp, uint32_t idx)
{
	const struct weft_vwqe *h = &qp->cur.h;
	struct vq_sw *sw = sw_of(qp, idx);
	unsigned int why = WEFT_R_WAIT_SLOT;
	bool passed = false;

	sw->wr_id = h->wr_id;
	sw->op = WEFT_VWR_WAIT_CNT;
	sw->signaled = (h->flags & WEFT_VWQE_SIGNALED) != 0;
	if (!h->num_sge && !(h->flags & WEFT_VWQE_INLINE))
		why = vq_cnt_wait(c, qp, h->cnt_slot, h->u.wait.threshold, idx, &passed);
	if (why == WEFT_R_OK && !passed)
		return 0;
	weft_count(c, WEFT_CNT_V_WQES, 1);
	weft_count(c, WEFT_CNT_V_WAITS, 1);
	if (why) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, why);
		wqe_refuse(c, qp, idx, WEFT_VWC_LOC_QP_OP_ERR, why);
		return 1;
	}
	sw->state = SW_DONE;
	qp->sq_next++;
	qp->cur_valid = false;
	qp->cur_pkt = 0;
	vq_sq_complete(c, qp, VQ_FLUSH_STEP);
	return 1;
}

int vq_sq_step(struct weft_core *c, struct vq_qp *qp)
{
	uint32_t idx = qp->sq_next;
	struct vq_sw *sw;
	unsigned int why;
	uint8_t st;
	bool hold;
	int r;

	vq_sq_complete(c, qp, VQ_FLUSH_STEP);
	if (qp->state != WEFT_VQPS_RTS || qp->rnr_until)
		return 0;
	sw = sw_of(qp, idx);
	if (idx != qp->sq_prod && sw->state == SW_DONE) {      /* passed again after a go-back */
		qp->sq_next++;
		qp->cur_valid = false;
		qp->cur_pkt = 0;
		return 1;
	}
	/* A device rendezvous placed before this WQE goes first. */
	r = vq_rvh_step(c, qp, &hold);
	if (r || hold || idx == qp->sq_prod)
		return r;
	if (!qp->cur_valid) {
		why = vq_wqe_load(c, qp, idx, &qp->cur);
		if (why) {
			sw->wr_id = qp->cur.h.wr_id;
			vq_sq_fail(c, qp, idx, WEFT_VWC_LOC_QP_OP_ERR, why);
			vq_qp_error(c, qp, why);
			return 1;
		}
		qp->cur_valid = true;
		if (sw->state == SW_STARTED) {
			/* Resent after a go-back: the SGEs are checked again. */
			why = wqe_check(c, qp, &qp->cur, is_rd(sw->op) ? WEFT_VACC_LOCAL_WRITE :
					WEFT_VACC_LOCAL_READ);
			if (why || qp->cur.h.opcode != sw->op || qp->cur.total != sw->byte_len) {
				vq_sq_fail(c, qp, idx, WEFT_VWC_LOC_PROT_ERR,
					   why ? why : WEFT_R_BAD_WQE);
				vq_qp_error(c, qp, why ? why : WEFT_R_BAD_WQE);
				return 1;
			}
		}
	}
	if (qp->cur.h.opcode == WEFT_VWR_WAIT_CNT)
		return wqe_wait(c, qp, idx);
	if (sw->state == SW_IDLE) {
		if ((qp->cur.h.flags & WEFT_VWQE_FENCE) && rd_before(qp, idx))
			return 0;
		weft_count(c, WEFT_CNT_V_WQES, 1);
		st = wqe_start(c, qp, idx, &why);
		sw->state = SW_STARTED;
		if (st != WEFT_VWC_SUCCESS) {
			/* Local violation: error CQE, no memory touched. */
			wqe_refuse(c, qp, idx, st, why);
			return 1;
		}
		if (is_local(qp->cur.h.opcode)) {
			wqe_local(c, qp, idx);
			qp->sq_next++;
			qp->cur_valid = false;
			vq_sq_complete(c, qp, VQ_FLUSH_STEP);
			return 1;
		}
	}
	return wqe_packet(c, qp, idx);
}
