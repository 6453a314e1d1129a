/* SPDX-License-Identifier: MIT */
/*
 * Weft verbs engine: the adapter's side of rdma-core's RVH rendezvous on a
 * tag-matching SRQ (docs/matching.md "Device rendezvous", hw-spec 16.15).
 *
 * A matched RNDV message (weft_verbs_tm.c) takes one of the QP's
 * WEFT_VERBS_TM_RNDV_MAX slots.  Its READ phase is an RDMA READ of the
 * RVH's range into the tagged buffer, its FIN phase a one-packet SEND of
 * a TMH FIN.  Each phase takes PSNs from the QP's send stream when it
 * starts, only between two messages of the SQ with nothing started after
 * it (the frontier), and is placed before SQ WQE "anchor": the requester
 * machinery (window, max_rd_atomic, ACK/NAK, go-back-N, timers, retry
 * limits, Terminate) treats it like a WQE at that place, and the guest's
 * WQEs keep their order and completions.  Work per call: one packet, and
 * scans of at most WEFT_VERBS_TM_RNDV_MAX slots.
 */
#include <errno.h>
#include <string.h>

#include "weft_verbs_int.h"

static uint32_t be32(uint32_t v)
{
	const uint8_t *b = (const uint8_t *)&v;

	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static uint64_t be64(uint64_t v)
{
	const uint8_t *b = (const uint8_t *)&v;
	uint64_t r = 0;
	unsigned int i;

	for (i = 0; i < 8; i++)
		r = r << 8 | b[i];
	return r;
}

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
	struct vq_srq *s = vq_srq(c, qp->srq);
	struct weft_vcqe e;

	if (!s || !(s->flags & WEFT_VSRQF_TM))
		return;
	memset(&e, 0, sizeof(e));
	e.wr_id = r->tag;
	e.qpn = vq_qpn(c, qp);
	e.byte_len = len;
	e.imm_inv = r->app_ctx;
	e.wqe_index = (uint16_t)r->handle;
	e.opcode = WEFT_VWC_TM_RECV;
	e.status = status;
	e.flags = flags;
	vq_cqe(c, s->tm_cq, &e, false);
}

static bool started(const struct vq_rvh *r)
{
	return r->phase != VQ_RVH_FREE && r->npkt;
}

bool vq_rvh_has_work(const struct vq_qp *qp)
{
	unsigned int i;

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

	for (i = 0; i < WEFT_VERBS_TM_RNDV_MAX; i++)
		if (started(&qp->rvh[i]))
			return true;
	return false;
}

unsigned int vq_rvh_rd_outstanding(const struct vq_qp *qp)
{
	unsigned int i, n = 0;

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

/* The started phase due next: placed at or before sq_next, packets left,
 * lowest PSN. */
static struct vq_rvh *due(struct vq_qp *qp)
{
	struct vq_rvh *best = NULL;
	unsigned int i;

	for (i = 0; i < WEFT_VERBS_TM_RNDV_MAX; i++) {
		struct vq_rvh *r = &qp->rvh[i];

		if (!started(r) || r->sent >= r->npkt || (int32_t)(r->anchor - qp->sq_next) > 0)
			continue;
		if (!best || psn_diff(r->psn, best->psn) < 0)
			best = r;
	}
	return best;
}

/* The phase waiting to start that arrived first. */
static struct vq_rvh *waiting(struct vq_qp *qp)
{
	struct vq_rvh *best = NULL;
	unsigned int i;

	for (i = 0; i < WEFT_VERBS_TM_RNDV_MAX; i++) {
		struct vq_rvh *r = &qp->rvh[i];

		if (r->phase == VQ_RVH_FREE || r->npkt)
			continue;
		if (!best || (int32_t)(r->seq - best->seq) < 0)
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
	r = due(qp);
	if (!r) {
		/* Start one only at the frontier: nothing started after it. */
		if (qp->sq_next != qp->sq_prod &&
		    qp->sw[qp->sq_next & ((1u << qp->sq_log2) - 1)].state != SW_IDLE)
			return 0;
		r = waiting(qp);
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
	struct vq_rvh *best = NULL;
	unsigned int i;

	for (i = 0; i < WEFT_VERBS_TM_RNDV_MAX; i++) {
		struct vq_rvh *r = &qp->rvh[i];

		if (started(r) && (!best || psn_diff(r->psn, best->psn) < 0))
			best = r;
	}
	return best;
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
		vq_acked(c, qp, last);
	} else {
		vq_acked(c, qp, psn_add(r->resp_psn, WEFT_VERBS_PSN_MASK));
	}
	return true;
}
