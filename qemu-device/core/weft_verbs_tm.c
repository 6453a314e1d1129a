/* SPDX-License-Identifier: MIT */
/*
 * Weft verbs engine: tag-matching SRQs, rdma-core's IBV_SRQT_TM
 * (docs/matching.md "Tag-matching verbs", docs/hw-spec.md 16.15).
 *
 * The tag list lives in one header queue of the seed 001 matching engine
 * (weft_match.c), lent to the SRQ in software-UEQ mode: tags are PRQ
 * entries of the shared header store, matched in list order; a message no
 * tag takes is unexpected, goes whole into an ordinary SRQ WQE and
 * advances the queue's unexpected sequence, and tags software adds before
 * it has seen every unexpected message stay inactive unless the CAM of
 * recent unexpected headers clears them (items 108, 109), until software
 * reports the count (IBV_OPS_TM_SYNC).
 *
 * Tag operations come from a ring in guest memory (SRQ_TM_DB); each poll
 * step runs at most VQ_TM_STEP of them for one SRQ.  A search compares at
 * most the SRQ's tm_max_tags entries.
 *
 * A matched RNDV takes one of the QP's WEFT_VERBS_TM_RNDV_MAX rendezvous
 * slots (docs/matching.md "Device rendezvous"): its READ phase is an RDMA
 * READ of the RVH's range into the tagged buffer, its FIN phase a
 * one-packet SEND of a TMH FIN.  Each phase takes PSNs from the QP's send
 * stream when it starts, only between two messages of the SQ with nothing
 * started after it (the frontier), and is placed before SQ WQE "anchor":
 * the requester machinery (window, max_rd_atomic, ACK/NAK, go-back-N,
 * timers, retry limits, Terminate) treats it like a WQE at that place,
 * and the guest's WQEs keep their order and completions.  Work per call:
 * one packet, and scans of at most WEFT_VERBS_TM_RNDV_MAX slots.
 */
#include <errno.h>
#include <string.h>

#include "weft/match.h"
#include "weft_match.h"
#include "weft_verbs_int.h"

#define VQ_TM_STEP      4u      /* tag operations per poll step */

static uint64_t be64(uint64_t v)
{
	const uint8_t *b = (const uint8_t *)&v;
	uint64_t r = 0;
	unsigned int i;

	for (i = 0; i < 8; i++)
		r = r << 8 | b[i];
	return r;
}

static uint32_t be32(uint32_t v)
{
	const uint8_t *b = (const uint8_t *)&v;

	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static struct vq_srq *tm_srq(struct weft_core *c, uint32_t srqn)
{
	struct vq_srq *s = vq_srq(c, srqn);

	return s && (s->flags & WEFT_VSRQF_TM) ? s : NULL;
}

bool vq_srq_is_tm(struct weft_core *c, const struct vq_qp *qp)
{
	return qp->srq && tm_srq(c, qp->srq) != NULL;
}

/* ---- create, destroy, the work list --------------------------------------- */

unsigned int vq_tm_create(struct weft_core *c, struct vq_srq *s, const struct weft_vcmd *k)
{
	struct weft_verbs *v = c->verbs;
	uint32_t cqn = k->u.srq.tm_cq;
	int q;

	if (k->u.srq.tm_max_tags == 0 || k->u.srq.tm_max_tags > WEFT_VERBS_TM_MAX_TAGS ||
	    k->u.srq.tm_log2 > WEFT_VERBS_TM_OPS_LOG2 || (k->u.srq.ci_addr & 7) ||
	    k->u.srq.reserved)
		return WEFT_R_TM_BAD_OP;
	if (cqn >= v->nr_cq || !v->cq[cqn].created)
		return WEFT_R_CQ_INVALID;
	if (!vq_ring_ok(c, k->u.srq.tm_ring, (uint64_t)sizeof(struct weft_vtmop) << k->u.srq.tm_log2))
		return WEFT_R_DMA_ERROR;
	q = weft_match_tm_open(c, k->u.srq.tm_max_tags);
	if (q < 0)
		return WEFT_R_TM_NO_QUEUE;
	s->tm_queue = (uint16_t)q;
	s->tm_cq = cqn;
	s->tm_max = k->u.srq.tm_max_tags;
	s->tm_log2 = k->u.srq.tm_log2;
	s->tm_ring = k->u.srq.tm_ring;
	v->cq[cqn].refs++;
	return WEFT_R_OK;
}

void vq_tm_destroy(struct weft_core *c, struct vq_srq *s)
{
	struct weft_verbs *v = c->verbs;
	uint32_t n = (uint32_t)(s - v->srq), *link = &v->tm_head, prev = VQ_NONE;

	/* Out of the work list (at most one entry per lent queue). */
	while (s->tm_queued && *link != VQ_NONE) {
		if (*link == n) {
			*link = s->tm_next;
			if (v->tm_tail == n)
				v->tm_tail = prev;
			break;
		}
		prev = *link;
		link = &v->srq[*link].tm_next;
	}
	weft_match_tm_close(c, s->tm_queue);
	if (v->cq[s->tm_cq].refs)
		v->cq[s->tm_cq].refs--;
}

static void tm_queue(struct weft_core *c, struct vq_srq *s)
{
	struct weft_verbs *v = c->verbs;
	uint32_t n = (uint32_t)(s - v->srq);

	if (s->tm_queued)
		return;
	s->tm_queued = true;
	s->tm_next = VQ_NONE;
	if (v->tm_tail == VQ_NONE)
		v->tm_head = n;
	else
		v->srq[v->tm_tail].tm_next = n;
	v->tm_tail = n;
	if (c->ops.kick)
		c->ops.kick(c->opaque);
}

unsigned int vq_tm_doorbell(struct weft_core *c, uint32_t uar, uint64_t val)
{
	struct vq_srq *s = c->verbs->srq ? tm_srq(c, WEFT_UAR_OBJ(val)) : NULL;
	uint32_t idx = WEFT_UAR_IDX(val);

	if (!s)
		return WEFT_R_SRQ_INVALID;
	if (s->uar != uar)
		return WEFT_R_UAR_MISMATCH;
	if ((int32_t)(idx - s->tm_prod) < 0 || idx - s->tm_ci > (1u << s->tm_log2)) {
		weft_guest_error(c, "SRQ_TM_DB: srq %u: producer %u outside [%u, %u]",
				 WEFT_UAR_OBJ(val), idx, s->tm_prod, s->tm_ci + (1u << s->tm_log2));
		return WEFT_R_BAD_WQE;
	}
	s->tm_prod = idx;
	if (s->tm_prod != s->tm_ci)
		tm_queue(c, s);
	return WEFT_R_OK;
}

/* ---- tag operations ------------------------------------------------------------- */

static void op_cqe(struct weft_core *c, struct vq_srq *s, const struct weft_vtmop *op,
		   uint8_t status, unsigned int reason, uint8_t flags)
{
	struct weft_vcqe e;

	if (reason)
		weft_drop(c, NULL, WEFT_NO_WINDOW, reason);
	if (status == WEFT_VWC_SUCCESS && !(op->flags & WEFT_VTMF_SIGNALED) && !flags)
		return;
	memset(&e, 0, sizeof(e));
	e.wr_id = op->wr_id;
	e.qpn = (uint32_t)(s - c->verbs->srq);
	e.byte_len = status == WEFT_VWC_SUCCESS ? 0 : reason;
	e.wqe_index = (uint16_t)op->handle;
	e.opcode = op->opcode == WEFT_VTM_ADD ? WEFT_VWC_TM_ADD :
		   op->opcode == WEFT_VTM_DEL ? WEFT_VWC_TM_DEL : WEFT_VWC_TM_SYNC;
	e.status = status;
	e.flags = flags;
	vq_cqe(c, s->tm_cq, &e, false);
}

static void tm_op(struct weft_core *c, struct vq_srq *s, const struct weft_vtmop *op)
{
	unsigned int q = s->tm_queue, why = WEFT_R_OK;
	uint32_t seq = weft_match_tm_seq(c, q);
	uint8_t status = WEFT_VWC_SUCCESS, flags = 0;

	weft_count(c, WEFT_CNT_V_TM_OPS, 1);
	if (op->opcode < WEFT_VTM_ADD || op->opcode > WEFT_VTM_SYNC ||
	    (op->flags & ~WEFT_VTMF_VALID) || op->reserved0 || op->reserved1 || op->reserved2 ||
	    (op->opcode == WEFT_VTM_ADD && op->num_sge > WEFT_VERBS_TM_MAX_SGE)) {
		op_cqe(c, s, op, WEFT_VWC_LOC_QP_OP_ERR, WEFT_R_TM_BAD_OP, 0);
		return;
	}
	if (op->opcode != WEFT_VTM_SYNC && op->handle >= s->tm_max) {
		op_cqe(c, s, op, WEFT_VWC_LOC_QP_OP_ERR, WEFT_R_TM_HANDLE, 0);
		return;
	}
	if (op->flags & WEFT_VTMF_SYNC) {
		if ((int32_t)(seq - op->unexpected_cnt) < 0) {
			op_cqe(c, s, op, WEFT_VWC_LOC_QP_OP_ERR, WEFT_R_TM_SYNC_AHEAD, 0);
			return;
		}
		s->tm_sw = op->unexpected_cnt;
		if (s->tm_sw == seq)
			weft_match_tm_activate(c, q);
	}
	if (op->opcode == WEFT_VTM_ADD) {
		struct weft_match_tm_tag t = {
			.tag = op->tag, .mask = op->mask, .handle = op->handle,
			.addr = op->num_sge ? op->sge.addr : 0,
			.len = op->num_sge ? op->sge.length : 0,
			.lkey = op->num_sge ? op->sge.lkey : 0,
		};

		why = weft_match_tm_add(c, q, &t, weft_match_tm_current(c, q, s->tm_sw, op->tag,
									  op->mask));
		if (why)
			status = WEFT_VWC_LOC_QP_OP_ERR;
	} else if (op->opcode == WEFT_VTM_DEL && !weft_match_tm_del(c, q, op->handle)) {
		/* The tag was consumed by a message first (rdma-core TM_ERR). */
		why = WEFT_R_TM_TAG_GONE;
		status = WEFT_VWC_TM_ERR;
	}
	if (s->tm_sw != seq) {
		flags |= WEFT_VCQE_TM_SYNC_REQ;
		weft_count(c, WEFT_CNT_V_TM_SYNC_REQS, 1);
	}
	op_cqe(c, s, op, status, why, flags);
}

int vq_tm_poll(struct weft_core *c)
{
	struct weft_verbs *v = c->verbs;
	struct vq_srq *s;
	uint32_t n, k, ci;

	if (v->tm_head == VQ_NONE)
		return 0;
	n = v->tm_head;
	s = &v->srq[n];
	v->tm_head = s->tm_next;
	if (v->tm_head == VQ_NONE)
		v->tm_tail = VQ_NONE;
	s->tm_queued = false;
	for (k = 0; k < VQ_TM_STEP && s->tm_ci != s->tm_prod; k++) {
		struct weft_vtmop op;
		uint64_t a = s->tm_ring +
			     ((uint64_t)(s->tm_ci & ((1u << s->tm_log2) - 1)) * sizeof(op));

		s->tm_ci++;
		if (weft_dma_read(c, a, &op, sizeof(op)) != 0) {
			memset(&op, 0, sizeof(op));
			op.opcode = WEFT_VTM_SYNC;
			op_cqe(c, s, &op, WEFT_VWC_LOC_QP_OP_ERR, WEFT_R_DMA_ERROR, 0);
			continue;
		}
		tm_op(c, s, &op);
	}
	ci = s->tm_ci;
	if (weft_dma_write(c, s->ci_addr + 4, &ci, sizeof(ci)) != 0)
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_DMA_ERROR);
	if (s->tm_ci != s->tm_prod)
		tm_queue(c, s);
	return 1;
}

/* ---- messages ------------------------------------------------------------------- */

/* A TM_RECV CQE of a matched message: wr_id = its tag, imm_inv = its
 * app_ctx, wqe_index = the tag's handle. */
static void recv_cqe(struct weft_core *c, struct vq_qp *qp, uint32_t cq, uint64_t tag,
		     uint32_t app_ctx, uint32_t handle, uint8_t status, uint32_t len,
		     uint8_t flags, bool se)
{
	struct weft_vcqe e;

	memset(&e, 0, sizeof(e));
	e.wr_id = tag;
	e.qpn = vq_qpn(c, qp);
	e.byte_len = len;
	e.imm_inv = app_ctx;
	e.wqe_index = (uint16_t)handle;
	e.opcode = WEFT_VWC_TM_RECV;
	e.status = status;
	e.flags = flags;
	vq_cqe(c, cq, &e, se);
}

static void match_cqe(struct weft_core *c, struct vq_qp *qp, struct vq_srq *s, uint8_t status,
		      uint32_t len, uint8_t flags, bool se)
{
	recv_cqe(c, qp, s->tm_cq, qp->tm_tag, qp->tm_app_ctx, qp->tm_handle, status, len, flags,
		 se);
}

/* A matched RNDV (tag t consumed, qp->rcv set to the tagged buffer):
 * the adapter performs the rendezvous, or leaves it to software
 * (RNDV_INCOMPLETE) with a named reason.  data/dlen: the message. */
static void tm_rndv(struct weft_core *c, struct vq_qp *qp, struct vq_srq *s,
		    const struct weft_vhdr *h, const struct weft_match_tm_tag *t,
		    const uint8_t **data, uint32_t *dlen)
{
	struct weft_vrvh rvh;
	struct vq_rvh *r = NULL;
	unsigned int why;
	uint32_t len;
	bool one = (h->flags & (WEFT_VF_FIRST | WEFT_VF_LAST)) == (WEFT_VF_FIRST | WEFT_VF_LAST);

	memcpy(&rvh, *data + sizeof(struct weft_vtmh), sizeof(rvh));
	len = be32(rvh.len);
	why = !one || *dlen > WEFT_VERBS_TM_RNDV_HDR ? WEFT_R_TM_RNDV_HDR :
	      len > WEFT_VERBS_MAX_MSG ? WEFT_R_TM_RVH_LEN :
	      len > t->len ? WEFT_R_TM_RVH_SHORT :
	      (r = vq_rvh_alloc(qp)) == NULL ? WEFT_R_TM_RNDV_BUSY : WEFT_R_OK;
	if (why) {
		/* Software's rendezvous: the whole message (TMH, RVH, its
		 * bytes) into the tagged buffer, TM_RECV RNDV_INCOMPLETE. */
		weft_drop(c, NULL, WEFT_NO_WINDOW, why);
		weft_count(c, WEFT_CNT_V_TM_RNDV_SW, 1);
		qp->tm_kind = VQ_TM_RNDV_SW;
		if (!(h->flags & WEFT_VF_LAST)) {
			match_cqe(c, qp, s, WEFT_VWC_SUCCESS, 0, WEFT_VCQE_TM_MATCH, false);
			qp->tm_kind = VQ_TM_RNDV_SW_SPLIT;
		}
		return;
	}
	memset(r, 0, sizeof(*r));
	r->phase = len ? VQ_RVH_READ : VQ_RVH_FIN;
	r->seq = qp->rvh_seq++;
	r->handle = t->handle;
	r->app_ctx = qp->tm_app_ctx;
	r->tag = qp->tm_tag;
	r->va = be64(rvh.va);
	r->rkey = be32(rvh.rkey);
	r->len = len;
	r->sge = qp->rcv.sge[0];
	weft_count(c, WEFT_CNT_V_TM_RNDV, 1);
	vq_rvh_cqe(c, qp, r, WEFT_VWC_SUCCESS, WEFT_VCQE_TM_MATCH, len);
	if (!len)
		vq_rvh_cqe(c, qp, r, WEFT_VWC_SUCCESS, WEFT_VCQE_TM_DATA_VALID, 0);
	/* The message itself is taken: nothing of it is placed. */
	qp->tm_kind = VQ_TM_RNDV;
	qp->rcv.h.num_sge = 0;
	qp->rcv.total = 0;
	*dlen = 0;
	vq_work(c, qp);
}

bool vq_tm_first(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h,
		 const uint8_t **data, uint32_t *dlen)
{
	struct vq_srq *s = tm_srq(c, qp->srq);
	struct weft_match_tm_tag t;
	struct weft_vtmh tmh = { .opcode = WEFT_TMH_NO_TAG };
	uint64_t tag = 0;
	unsigned int why;
	uint8_t kind = VQ_TM_NO_TAG;
	bool rndv;

	if (*dlen >= sizeof(tmh)) {
		memcpy(&tmh, *data, sizeof(tmh));
		tag = be64(tmh.tag);
		switch (tmh.opcode) {
		case WEFT_TMH_NO_TAG:
		case WEFT_TMH_FIN:
			break;
		case WEFT_TMH_EAGER:
		case WEFT_TMH_RNDV:
			kind = VQ_TM_UNEXPECTED;
			break;
		default:
			vq_violation(c, qp, h, WEFT_R_TM_BAD_TMH, 0);
			return false;
		}
	}
	/* An RNDV is matched only with its whole RVH (else unexpected). */
	rndv = tmh.opcode == WEFT_TMH_RNDV;
	if (kind == VQ_TM_UNEXPECTED &&
	    (!rndv || *dlen >= sizeof(tmh) + sizeof(struct weft_vrvh)) &&
	    weft_match_tm_find(c, s->tm_queue, tag, &t)) {
		memset(&qp->rcv, 0, sizeof(qp->rcv));
		qp->rcv.h.num_sge = t.len ? 1 : 0;
		qp->rcv.sge[0].addr = t.addr;
		qp->rcv.sge[0].length = t.len;
		qp->rcv.sge[0].lkey = t.lkey;
		qp->rcv.index = t.handle;
		qp->rcv_active = true;
		qp->rcv_off = 0;
		qp->tm_kind = VQ_TM_MATCHED;
		qp->tm_tag = tag;
		qp->tm_app_ctx = be32(tmh.app_ctx);
		qp->tm_handle = t.handle;
		weft_count(c, WEFT_CNT_V_TM_MATCHED, 1);
		why = vq_sge_check(c, qp, qp->rcv.sge, qp->rcv.h.num_sge, WEFT_VACC_LOCAL_WRITE,
				   &qp->rcv.total);
		if (why) {
			vq_violation(c, qp, h, why, WEFT_VWC_LOC_PROT_ERR);
			return false;
		}
		if (rndv) {
			tm_rndv(c, qp, s, h, &t, data, dlen);
			return true;
		}
		*data += sizeof(tmh);
		*dlen -= (uint32_t)sizeof(tmh);
		if (!(h->flags & WEFT_VF_LAST)) {
			/* More packets follow: MATCH now, DATA_VALID at the last. */
			match_cqe(c, qp, s, WEFT_VWC_SUCCESS, 0, WEFT_VCQE_TM_MATCH, false);
			qp->tm_kind = VQ_TM_MATCHED_SPLIT;
		}
		return true;
	}
	qp->tm_kind = kind;
	if (!vq_rq_take(c, qp, h)) {
		qp->tm_kind = VQ_TM_NONE;
		return false;
	}
	if (kind == VQ_TM_UNEXPECTED) {
		weft_match_tm_unexpected(c, s->tm_queue, tag);
		weft_count(c, WEFT_CNT_V_TM_UNEXPECTED, 1);
	} else {
		weft_count(c, WEFT_CNT_V_TM_NO_TAG, 1);
	}
	return true;
}

void vq_tm_cqe(struct weft_core *c, struct vq_qp *qp, uint8_t status, uint32_t len, bool se)
{
	struct vq_srq *s = tm_srq(c, qp->srq);
	uint8_t kind = qp->tm_kind;
	struct weft_vcqe e;

	qp->tm_kind = VQ_TM_NONE;
	if (!s)
		return;
	if (kind == VQ_TM_RNDV)
		return;         /* the device rendezvous completes it */
	if (kind == VQ_TM_MATCHED || kind == VQ_TM_MATCHED_SPLIT || kind == VQ_TM_RNDV_SW ||
	    kind == VQ_TM_RNDV_SW_SPLIT) {
		bool one = kind == VQ_TM_MATCHED || kind == VQ_TM_RNDV_SW;
		uint8_t flags = status != WEFT_VWC_SUCCESS ? WEFT_VCQE_TM_MATCH :
				one ? WEFT_VCQE_TM_MATCH | WEFT_VCQE_TM_DATA_VALID :
				WEFT_VCQE_TM_DATA_VALID;

		/* Software must do this rendezvous (byte_len: the message). */
		if (status == WEFT_VWC_SUCCESS && kind != VQ_TM_MATCHED &&
		    kind != VQ_TM_MATCHED_SPLIT)
			status = WEFT_VWC_TM_RNDV_INCOMPLETE;
		match_cqe(c, qp, s, status, len, flags | (se ? WEFT_VCQE_SOLICITED : 0), se);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.wr_id = qp->rcv.h.wr_id;
	e.qpn = vq_qpn(c, qp);
	e.byte_len = len;
	e.wqe_index = (uint16_t)qp->rcv.index;
	e.opcode = kind == VQ_TM_UNEXPECTED ? WEFT_VWC_TM_RECV : WEFT_VWC_TM_NO_TAG;
	e.status = status;
	e.flags = se ? WEFT_VCQE_SOLICITED : 0;
	/* Software behind by more than the CAM holds: new tags cannot be
	 * cleared any more, ask for a sync. */
	if (kind == VQ_TM_UNEXPECTED &&
	    weft_match_tm_seq(c, s->tm_queue) - s->tm_sw > WEFT_MATCH_CAM) {
		e.flags |= WEFT_VCQE_TM_SYNC_REQ;
		weft_count(c, WEFT_CNT_V_TM_SYNC_REQS, 1);
	}
	vq_cqe(c, s->tm_cq, &e, se);
}

/* ---- the device rendezvous: requester side ---------------------------------- */

struct vq_rvh *vq_rvh_alloc(struct vq_qp *qp)
{
	unsigned int i;

	for (i = 0; i < WEFT_VERBS_TM_RNDV_MAX; i++)
		if (qp->rvh[i].phase == VQ_RVH_FREE)
			return &qp->rvh[i];
	return NULL;
}

void vq_rvh_cqe(struct weft_core *c, struct vq_qp *qp, const struct vq_rvh *r,
		uint8_t status, uint8_t flags, uint32_t len)
{
	struct vq_srq *s = tm_srq(c, qp->srq);

	if (s)
		recv_cqe(c, qp, s->tm_cq, r->tag, r->app_ctx, r->handle, status, len, flags,
			 false);
}

static bool started(const struct vq_rvh *r)
{
	return r->phase != VQ_RVH_FREE && r->npkt;
}

/* Only a QP that receives from a (tag-matching) SRQ takes a device
 * rendezvous (tm_rndv): the others skip the scans of rvh[] that every
 * packet, ACK and response would make. */
static bool no_rvh(const struct vq_qp *qp)
{
	return !qp->srq;
}

bool vq_rvh_has_work(const struct vq_qp *qp)
{
	unsigned int i;

	if (no_rvh(qp))
		return false;
	for (i = 0; i < WEFT_VERBS_TM_RNDV_MAX; i++) {
		const struct vq_rvh *r = &qp->rvh[i];

		if (r->phase != VQ_RVH_FREE && (!r->npkt || r->sent < r->npkt))
			return true;
	}
	return false;
}

bool vq_rvh_outstanding(const struct vq_qp *qp)
{
	unsigned int i;

	if (no_rvh(qp))
		return false;
	for (i = 0; i < WEFT_VERBS_TM_RNDV_MAX; i++)
		if (started(&qp->rvh[i]))
			return true;
	return false;
}

unsigned int vq_rvh_rd_outstanding(const struct vq_qp *qp)
{
	unsigned int i, n = 0;

	if (no_rvh(qp))
		return 0;
	for (i = 0; i < WEFT_VERBS_TM_RNDV_MAX; i++) {
		const struct vq_rvh *r = &qp->rvh[i];
		uint32_t done;

		if (!started(r) || r->phase != VQ_RVH_READ)
			continue;
		done = (uint32_t)psn_diff(r->resp_psn, r->psn) / VQ_CHUNK;
		n += (r->sent + VQ_CHUNK - 1) / VQ_CHUNK > done ?
		     (r->sent + VQ_CHUNK - 1) / VQ_CHUNK - done : 0;
	}
	return n;
}

enum { RVH_DUE, RVH_WAITING, RVH_OLDEST };

/* RVH_DUE: the started phase to send next (placed at or before sq_next,
 * packets left, lowest PSN); RVH_WAITING: the phase waiting to start that
 * arrived first; RVH_OLDEST: the started, unfinished phase with the lowest
 * PSN.  NULL if none. */
static struct vq_rvh *pick(struct vq_qp *qp, unsigned int what)
{
	struct vq_rvh *best = NULL;
	unsigned int i;

	if (no_rvh(qp))
		return NULL;
	for (i = 0; i < WEFT_VERBS_TM_RNDV_MAX; i++) {
		struct vq_rvh *r = &qp->rvh[i];
		bool ok = what == RVH_WAITING ? r->phase != VQ_RVH_FREE && !r->npkt :
			  what == RVH_OLDEST ? started(r) :
			  started(r) && r->sent < r->npkt &&
			  (int32_t)(r->anchor - qp->sq_next) <= 0;
		int32_t d = !best ? -1 : what == RVH_WAITING ? (int32_t)(r->seq - best->seq) :
			    psn_diff(r->psn, best->psn);

		if (ok && d < 0)
			best = r;
	}
	return best;
}

static void start(struct vq_qp *qp, struct vq_rvh *r)
{
	r->anchor = qp->sq_next;
	r->psn = qp->snd_psn;
	r->sent = 0;
	if (r->phase == VQ_RVH_READ) {
		r->npkt = vq_npkt(r->len);
		r->msn = qp->rd_msn;
		qp->rd_msn += (r->npkt + VQ_CHUNK - 1) / VQ_CHUNK;
		r->resp_psn = r->psn;
		r->resp_bits = 0;
	} else {
		r->npkt = 1;
	}
	qp->snd_psn = psn_add(qp->snd_psn, r->npkt);
}

int vq_rvh_step(struct weft_core *c, struct vq_qp *qp, bool *hold)
{
	struct weft_vhdr h;
	struct weft_vtmh fin;
	struct vq_rvh *r;
	uint32_t pkt, psn, adv = 1, dlen = 0;
	const void *data = NULL;

	*hold = false;
	if (qp->cur_pkt)
		return 0;               /* inside a message of the SQ */
	r = pick(qp, RVH_DUE);
	if (!r) {
		/* Start one only at the frontier: nothing started after it. */
		if (qp->sq_next != qp->sq_prod &&
		    qp->sw[qp->sq_next & ((1u << qp->sq_log2) - 1)].state != SW_IDLE)
			return 0;
		r = pick(qp, RVH_WAITING);
		if (!r)
			return 0;
		if (psn_diff(qp->snd_psn, qp->acked_psn) >= (int32_t)VQ_WINDOW) {
			*hold = true;
			return 0;
		}
		start(qp, r);
	}
	pkt = r->sent;
	psn = psn_add(r->psn, pkt);
	if (psn_diff(psn, qp->acked_psn) >= (int32_t)VQ_WINDOW) {
		*hold = true;
		return 0;
	}
	memset(&h, 0, sizeof(h));
	h.dst_qpn = qp->dest_qpn;
	h.src_qpn = vq_qpn(c, qp);
	h.psn = psn;
	if (r->phase == VQ_RVH_READ) {
		uint64_t off = (uint64_t)pkt * WEFT_VERBS_MTU;
		uint32_t end = (pkt / VQ_CHUNK + 1) * VQ_CHUNK;

		if (!(pkt % VQ_CHUNK) &&
		    vq_rd_outstanding(qp) >= (qp->max_rd_atomic ? qp->max_rd_atomic : 1u)) {
			*hold = true;
			return 0;
		}
		if (end > r->npkt)
			end = r->npkt;
		adv = end - pkt;
		h.opcode = WEFT_VOP_READ_REQ;
		h.va = r->va + off;
		h.rkey = r->rkey;
		h.dma_len = (uint32_t)(r->len - off < (uint64_t)adv * WEFT_VERBS_MTU ?
				       r->len - off : (uint64_t)adv * WEFT_VERBS_MTU);
		h.msn = r->msn + pkt / VQ_CHUNK;
		h.flags = WEFT_VF_FIRST | WEFT_VF_LAST;
	} else {
		memset(&fin, 0, sizeof(fin));
		fin.opcode = WEFT_TMH_FIN;
		fin.app_ctx = be32(r->app_ctx);
		fin.tag = be64(r->tag);
		data = &fin;
		dlen = sizeof(fin);
		h.opcode = WEFT_VOP_SEND;
		h.flags = WEFT_VF_FIRST | WEFT_VF_LAST | WEFT_VF_ACKREQ;
		h.dma_len = dlen;
	}
	if (vq_xmit(c, qp, qp->dest_node, &h, data, dlen) != 0)
		return -EAGAIN;
	if (psn_diff(psn, qp->sent_hi) < 0)
		weft_count(c, WEFT_CNT_V_RETRANSMITS, 1);
	if (psn_diff(psn_add(psn, adv), qp->sent_hi) > 0)
		qp->sent_hi = psn_add(psn, adv);
	r->sent += adv;
	if (!qp->rto && qp->timeout) {
		qp->rto = c->ops.now_ns(c->opaque) + vq_rto_ns(qp);
		vq_timer_set(c, qp, qp->rto);
	}
	return 1;
}

uint32_t vq_rvh_restart_psn(const struct vq_rvh *r)
{
	return r->phase == VQ_RVH_READ ? r->resp_psn : r->psn;
}

struct vq_rvh *vq_rvh_oldest(struct vq_qp *qp)
{
	return pick(qp, RVH_OLDEST);
}

void vq_rvh_rewind(struct vq_qp *qp, uint32_t psn)
{
	unsigned int i;

	for (i = 0; i < WEFT_VERBS_TM_RNDV_MAX; i++) {
		struct vq_rvh *r = &qp->rvh[i];
		int32_t k;

		if (!started(r))
			continue;
		k = psn_diff(psn, r->psn);
		if (k <= 0)
			r->sent = 0;
		else if ((uint32_t)k < r->sent)
			r->sent = (uint32_t)k;
	}
}

struct vq_rvh *vq_rvh_at(struct vq_qp *qp, uint32_t psn)
{
	unsigned int i;

	if (no_rvh(qp))
		return NULL;
	for (i = 0; i < WEFT_VERBS_TM_RNDV_MAX; i++) {
		struct vq_rvh *r = &qp->rvh[i];

		if (started(r) && psn_diff(psn, r->psn) >= 0 &&
		    psn_diff(psn, psn_add(r->psn, r->npkt)) < 0)
			return r;
	}
	return NULL;
}

bool vq_rvh_acked(struct weft_core *c, struct vq_qp *qp, uint32_t n)
{
	bool any = false;
	unsigned int i;

	if (no_rvh(qp))
		return false;
	for (i = 0; i < WEFT_VERBS_TM_RNDV_MAX; i++) {
		struct vq_rvh *r = &qp->rvh[i];

		if (started(r) && r->phase == VQ_RVH_FIN &&
		    psn_diff(psn_add(r->psn, 1), n) <= 0) {
			memset(r, 0, sizeof(*r));
			weft_count(c, WEFT_CNT_V_TM_RNDV_DONE, 1);
			any = true;
		}
	}
	return any;
}

void vq_rvh_fail(struct weft_core *c, struct vq_qp *qp, struct vq_rvh *r, uint8_t status,
		 unsigned int reason)
{
	if (r->phase == VQ_RVH_READ) {
		vq_rvh_cqe(c, qp, r, status, 0, reason);
		weft_count(c, WEFT_CNT_V_TM_RNDV_ERR, 1);
	}
	memset(r, 0, sizeof(*r));
}

void vq_rvh_flush(struct weft_core *c, struct vq_qp *qp)
{
	unsigned int i;

	for (i = 0; i < WEFT_VERBS_TM_RNDV_MAX; i++)
		if (qp->rvh[i].phase != VQ_RVH_FREE)
			vq_rvh_fail(c, qp, &qp->rvh[i], WEFT_VWC_WR_FLUSH_ERR, WEFT_R_FLUSHED);
}

bool vq_rvh_read_resp(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h,
		      const uint8_t *data, uint32_t dlen)
{
	struct vq_rvh *r = vq_rvh_at(qp, h->psn);
	uint32_t k, last;
	uint64_t off;
	unsigned int why;
	int32_t d;
	bool moved;

	if (!r || r->phase != VQ_RVH_READ)
		return false;
	if (h->opcode != WEFT_VOP_READ_RESP) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_PSN_OOS);
		return true;
	}
	d = psn_diff(h->psn, r->resp_psn);
	k = (uint32_t)psn_diff(h->psn, r->psn);
	if (d < 0 || d >= (int32_t)VQ_WINDOW || ((r->resp_bits >> d) & 1)) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, d >= (int32_t)VQ_WINDOW ? WEFT_R_PSN_WINDOW :
			  WEFT_R_PSN_DUP);
		return true;
	}
	off = (uint64_t)k * WEFT_VERBS_MTU;
	if (dlen != (r->len - off < WEFT_VERBS_MTU ? r->len - off : WEFT_VERBS_MTU)) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_LENGTH);
		return true;
	}
	why = vq_sge_copy(c, qp, &r->sge, 1, off, (void *)data, dlen, WEFT_VACC_LOCAL_WRITE,
			  VQ_TO_MEM);
	if (why) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, why);
		vq_rvh_fail(c, qp, r, WEFT_VWC_LOC_PROT_ERR, why);
		vq_qp_error(c, qp, why);
		return true;
	}
	r->resp_bits |= 1ull << d;
	moved = (r->resp_bits & 1) != 0;
	while (r->resp_bits & 1) {
		r->resp_psn = psn_add(r->resp_psn, 1);
		r->resp_bits >>= 1;
	}
	if (psn_diff(r->resp_psn, psn_add(r->psn, r->npkt)) >= 0) {
		/* The data has landed: DATA_VALID, then the FIN. */
		last = psn_add(r->psn, r->npkt - 1);
		vq_rvh_cqe(c, qp, r, WEFT_VWC_SUCCESS, WEFT_VCQE_TM_DATA_VALID, r->len);
		r->phase = VQ_RVH_FIN;
		r->npkt = 0;
		r->sent = 0;
		vq_acked(c, qp, last, true);
	} else {
		vq_acked(c, qp, psn_add(r->resp_psn, WEFT_VERBS_PSN_MASK), moved);
	}
	return true;
}
