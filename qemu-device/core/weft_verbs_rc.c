/* SPDX-License-Identifier: MIT */
/*
 * Weft verbs engine: the reliable-connection transport on the requester
 * side: packet transmission, coalesced ACKs, NAK (sequence and RNR),
 * read and atomic responses placed in PSN windows, go-back-N on timeout
 * and NAK, retry and RNR retry limits, Terminate, and the timers the core
 * gets through its ops table (docs/hw-spec.md 16.8-16.9).
 */
#include <errno.h>
#include <string.h>

#include "weft/names.h"
#include "weft_verbs_int.h"

static inline struct vq_sw *sw_of(struct vq_qp *qp, uint32_t idx)
{
	return &qp->sw[idx & ((1u << qp->sq_log2) - 1)];
}

/* Packets for this adapter's own node loop back inside the adapter. */
int vq_link_xmit(struct weft_core *c, const void *pkt, size_t len)
{
	const struct weft_wire_hdr *wh = pkt;

	if (wh->dst_node == c->cfg.node_id)
		return weft_core_receive(c, pkt, len);
	return c->ops.xmit(c->opaque, pkt, len);
}

int vq_xmit(struct weft_core *c, const struct vq_qp *qp, uint16_t dst_node,
	    const struct weft_vhdr *h, const void *data, uint32_t dlen)
{
	struct weft_verbs *v = c->verbs;
	struct weft_wire_hdr *wh = (struct weft_wire_hdr *)v->pkt;
	uint8_t *p = v->pkt + sizeof(*wh);
	size_t len = sizeof(*wh) + sizeof(*h) + dlen;
	struct weft_trace t = { .kind = WEFT_TR_PKT_TX, .window = WEFT_NO_WINDOW };
	int rc;

	(void)qp;
	if (v->pend) {
		weft_count(c, WEFT_CNT_TX_BLOCKED, 1);
		return -EAGAIN;
	}
	memset(wh, 0, sizeof(*wh));
	wh->version = WEFT_WIRE_VERSION;
	wh->type = WEFT_PKT_VERBS;
	wh->dst_node = dst_node;
	wh->src_node = c->cfg.node_id;
	wh->length = (uint32_t)(sizeof(*h) + dlen);
	memcpy(p, h, sizeof(*h));
	if (dlen && data != p + sizeof(*h))
		memcpy(p + sizeof(*h), data, dlen);
	weft_count(c, WEFT_CNT_V_TX_PKTS, 1);
	weft_count(c, WEFT_CNT_V_TX_BYTES, dlen);
	t.hdr = wh;
	t.len = len;
	t.name = weft_vop_name(h->opcode);
	weft_trace(c, &t);
	rc = vq_link_xmit(c, v->pkt, len);
	if (rc == -EAGAIN) {
		memcpy(v->pend_pkt, v->pkt, len);
		v->pend_len = len;
		v->pend = true;
		weft_count(c, WEFT_CNT_TX_BLOCKED, 1);
	} else if (rc) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_NO_LINK);
	}
	return 0;
}

void vq_send_ack(struct weft_core *c, struct vq_qp *qp, unsigned int syndrome,
		 uint32_t psn, uint32_t msn)
{
	struct weft_vhdr h;

	memset(&h, 0, sizeof(h));
	h.opcode = WEFT_VOP_ACK;
	h.dst_qpn = qp->dest_qpn;
	h.src_qpn = vq_qpn(c, qp);
	h.psn = psn & WEFT_VERBS_PSN_MASK;
	h.msn = msn;
	h.syndrome = syndrome;
	if (vq_xmit(c, qp, qp->dest_node, &h, NULL, 0) == 0 && syndrome == WEFT_VACK_ACK) {
		qp->ack_owed = false;
		weft_count(c, WEFT_CNT_V_ACKS_TX, 1);
	}
}

void vq_send_terminate(struct weft_core *c, struct vq_qp *qp, unsigned int reason,
		       uint32_t psn)
{
	struct weft_vhdr h;

	memset(&h, 0, sizeof(h));
	h.opcode = WEFT_VOP_TERMINATE;
	h.dst_qpn = qp->dest_qpn;
	h.src_qpn = vq_qpn(c, qp);
	h.psn = psn & WEFT_VERBS_PSN_MASK;
	h.syndrome = reason;
	weft_count(c, WEFT_CNT_V_TERMINATES_TX, 1);
	vq_xmit(c, qp, qp->dest_node, &h, NULL, 0);
}

/* ---- timers ---------------------------------------------------------------- */

uint64_t vq_rto_ns(const struct vq_qp *qp)
{
	return 4096ull << qp->timeout;  /* IB: 4.096 us * 2^timeout */
}

static uint64_t rnr_ns(unsigned int code)
{
	static const uint32_t us[32] = {
		655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280,
		1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440,
		81920, 122880, 163840, 245760, 327680, 491520,
	};

	return (uint64_t)us[code & 31] * 1000;
}

void vq_timer_arm(struct weft_core *c, uint64_t deadline)
{
	struct weft_verbs *v = c->verbs;

	if (!v->timer_armed || deadline < v->timer_armed) {
		v->timer_armed = deadline;
		weft_timer_sync(c);
	}
}

void vq_timer_set(struct weft_core *c, struct vq_qp *qp, uint64_t deadline)
{
	struct weft_verbs *v = c->verbs;

	if (!qp->in_tq && v->ntq < v->nr_qp) {
		v->tq[v->ntq++] = vq_qpn(c, qp);
		qp->in_tq = true;
	}
	vq_timer_arm(c, deadline);
}

/* The oldest unfinished request fails: a WQE, or a device rendezvous
 * placed before it. */
static void fail_head(struct weft_core *c, struct vq_qp *qp, uint8_t status, unsigned int reason)
{
	struct vq_rvh *r = vq_rvh_oldest(qp);
	uint32_t i;

	for (i = qp->sq_ci; i != qp->sq_prod; i++) {
		struct vq_sw *sw = sw_of(qp, i);

		if (sw->state == SW_STARTED && sw->npkt && r && psn_diff(r->psn, sw->psn) < 0)
			break;
		if (sw->state == SW_STARTED) {
			sw->state = SW_DONE;
			sw->status = status;
			sw->reason = (uint8_t)reason;
			r = NULL;
			break;
		}
	}
	if (r)
		vq_rvh_fail(c, qp, r, status, reason);
	weft_drop(c, NULL, WEFT_NO_WINDOW, reason);
	vq_qp_error(c, qp, reason);
}

static void qp_timer(struct weft_core *c, struct vq_qp *qp, uint64_t now)
{
	if (qp->rnr_until && now >= qp->rnr_until) {
		qp->rnr_until = 0;
		vq_go_back(c, qp);
	}
	if (qp->rto && now >= qp->rto) {
		qp->rto = 0;
		weft_count(c, WEFT_CNT_V_TIMEOUTS, 1);
		if (qp->retries_left == 0) {
			fail_head(c, qp, WEFT_VWC_RETRY_EXC_ERR, WEFT_R_RETRY_EXCEEDED);
			return;
		}
		qp->retries_left--;
		vq_go_back(c, qp);
	}
}

void vq_timers(struct weft_core *c, uint64_t now)
{
	struct weft_verbs *v = c->verbs;
	uint64_t next;
	uint32_t i, j;

	v->timer_armed = 0;
	next = vq_cq_timers(c, now);
	for (i = 0; i < v->ntq; i++) {
		struct vq_qp *qp = &v->qp[v->tq[i]];

		if (qp->created && qp->state != WEFT_VQPS_ERR)
			qp_timer(c, qp, now);
	}
	for (i = 0, j = 0; i < v->ntq; i++) {
		struct vq_qp *qp = &v->qp[v->tq[i]];
		uint64_t d = 0;

		if (qp->created && qp->state != WEFT_VQPS_ERR) {
			d = qp->rto;
			if (qp->rnr_until && (!d || qp->rnr_until < d))
				d = qp->rnr_until;
		}
		if (!d) {
			qp->in_tq = false;
			continue;
		}
		v->tq[j++] = v->tq[i];
		if (!next || d < next)
			next = d;
	}
	v->ntq = j;
	v->timer_armed = next;
	weft_timer_sync(c);
}

/* ---- go-back-N ------------------------------------------------------------- */

static bool is_rd(unsigned int op)
{
	return op == WEFT_VWR_READ || op == WEFT_VWR_CAS || op == WEFT_VWR_FAA;
}

void vq_go_back(struct weft_core *c, struct vq_qp *qp)
{
	struct vq_rvh *r = vq_rvh_oldest(qp);
	uint32_t i, from = VQ_NONE, k = 0;

	if (qp->state != WEFT_VQPS_RTS && qp->state != WEFT_VQPS_SQD)
		return;
	/* The oldest WQE not finished (index order is PSN order). */
	for (i = qp->sq_ci; i != qp->sq_prod; i++) {
		struct vq_sw *sw = sw_of(qp, i);
		int32_t d;

		if (sw->state != SW_STARTED || !sw->npkt)
			continue;
		if (is_rd(sw->op))
			d = i == qp->resp_wqe ? psn_diff(qp->resp_psn, sw->psn) : 0;
		else
			d = psn_diff(qp->acked_psn, sw->psn);
		if (d < 0 || (uint32_t)d >= sw->npkt)
			d = 0;
		from = i;
		k = (uint32_t)d;
		break;
	}
	if (r && (from == VQ_NONE || psn_diff(r->psn, sw_of(qp, from)->psn) < 0)) {
		/* A device rendezvous is older: from its place on. */
		vq_rvh_rewind(qp, vq_rvh_restart_psn(r));
		from = (int32_t)(r->anchor - qp->sq_ci) > 0 ? r->anchor : qp->sq_ci;
		k = 0;
	} else if (from != VQ_NONE) {
		struct vq_sw *sw = sw_of(qp, from);

		vq_rvh_rewind(qp, psn_add(sw->psn, k));
		/* Requests from here on are sent again: not outstanding now. */
		if (sw->chunks_sent > k / VQ_CHUNK)
			sw->chunks_sent = (uint8_t)(k / VQ_CHUNK);
	} else {
		return;
	}
	qp->sq_next = from;
	qp->cur_pkt = k;
	qp->cur_valid = false;
	for (i = from + (k ? 1 : 0); i != qp->sq_prod; i++)
		sw_of(qp, i)->chunks_sent = 0;
	if (qp->timeout) {
		qp->rto = c->ops.now_ns(c->opaque) + vq_rto_ns(qp);
		vq_timer_set(c, qp, qp->rto);
	}
	vq_work(c, qp);
}

/* ---- acknowledgements -------------------------------------------------------- */

void vq_acked(struct weft_core *c, struct vq_qp *qp, uint32_t a, bool resp)
{
	uint32_t n = psn_add(a, 1), i;
	bool progress = resp;

	if (psn_diff(n, qp->sent_hi) > 0)
		return;         /* acknowledges what was never sent: ignore */
	if (psn_diff(n, qp->acked_psn) > 0) {
		qp->acked_psn = n;
		progress = true;
	}
	for (i = qp->sq_ci; i != qp->sq_next; i++) {
		struct vq_sw *sw = sw_of(qp, i);

		if (sw->state != SW_STARTED || is_rd(sw->op))
			continue;
		if (psn_diff(psn_add(sw->psn, sw->npkt), n) > 0)
			break;
		sw->state = SW_DONE;
		progress = true;
	}
	if (vq_rvh_acked(c, qp, n))
		progress = true;
	if (progress) {
		qp->retries_left = qp->retry_cnt;
		qp->rnr_left = qp->rnr_retry;
		qp->rto = 0;
		if (qp->timeout && vq_sq_outstanding(qp)) {
			qp->rto = c->ops.now_ns(c->opaque) + vq_rto_ns(qp);
			vq_timer_set(c, qp, qp->rto);
		}
	}
	vq_sq_complete(c, qp, VQ_FLUSH_STEP);
	vq_work(c, qp);
}

/* The oldest read or atomic that is not complete, or VQ_NONE. */
static uint32_t resp_head(struct vq_qp *qp)
{
	uint32_t i;

	for (i = qp->sq_ci; i != qp->sq_next + 1; i++) {
		struct vq_sw *sw = sw_of(qp, i);

		if (sw->state == SW_STARTED && is_rd(sw->op))
			return i;
		if (i == qp->sq_next)
			break;
	}
	return VQ_NONE;
}

/* The READ WQE after the head whose PSNs hold psn, or VQ_NONE: every WQE
 * from the head up to it is started and each after the head is a READ
 * whose PSNs follow the one before, so one window from resp_psn covers
 * them all (a response that overtook the head's last ones). */
static uint32_t resp_ahead(struct vq_qp *qp, uint32_t head, uint32_t psn)
{
	struct vq_sw *sw = sw_of(qp, head);
	uint32_t i, end = psn_add(sw->psn, sw->npkt);

	for (i = head + 1; i != qp->sq_next + 1 && i != qp->sq_prod; i++) {
		sw = sw_of(qp, i);
		if (sw->state != SW_STARTED || sw->op != WEFT_VWR_READ || sw->psn != end)
			return VQ_NONE;
		end = psn_add(sw->psn, sw->npkt);
		if (psn_diff(psn, end) < 0)
			return i;
	}
	return VQ_NONE;
}

/* Place a READ response for WQE idx (w its checked copy).  0 or a reason. */
static unsigned int resp_place(struct weft_core *c, struct vq_qp *qp, const struct vq_wqe *w,
			       const struct vq_sw *sw, const struct weft_vhdr *h,
			       const uint8_t *data, uint32_t dlen)
{
	uint64_t off = (uint64_t)psn_diff(h->psn, sw->psn) * WEFT_VERBS_MTU;

	if (dlen != (sw->byte_len - off < WEFT_VERBS_MTU ? sw->byte_len - off : WEFT_VERBS_MTU))
		return WEFT_R_LENGTH;
	return vq_sge_copy(c, qp, w->sge, w->h.num_sge, off, (void *)data, dlen,
			   WEFT_VACC_LOCAL_WRITE, VQ_TO_MEM);
}

/* Copy and check the WQE of a started read or atomic.  0 or a reason. */
static unsigned int resp_wqe_load(struct weft_core *c, struct vq_qp *qp, uint32_t idx,
				  struct vq_wqe *w)
{
	const struct vq_sw *sw = sw_of(qp, idx);
	unsigned int why = vq_wqe_load(c, qp, idx, w);

	if (!why)
		why = vq_sge_check(c, qp, w->sge, w->h.num_sge, WEFT_VACC_LOCAL_WRITE, &w->total);
	if (!why && (w->h.opcode != sw->op || w->total != sw->byte_len))
		why = WEFT_R_BAD_WQE;
	return why;
}

/* vq_acked for a response that moved resp_psn (from before) inside the
 * head read sw and completed nothing: the window, the retries and the
 * timer move; the send queue is scheduled only when its next request is
 * inside the window now or a request of the head was fully answered
 * (max_rd_atomic), the two things a response can unblock. */
static void resp_progress(struct weft_core *c, struct vq_qp *qp, const struct vq_sw *sw,
			  uint32_t from)
{
	const struct vq_sw *nx = sw_of(qp, qp->sq_next);
	uint32_t next = nx->state == SW_STARTED ? psn_add(nx->psn, qp->cur_pkt) : qp->snd_psn;

	if (psn_diff(qp->resp_psn, qp->acked_psn) > 0)
		qp->acked_psn = qp->resp_psn;
	qp->retries_left = qp->retry_cnt;
	qp->rnr_left = qp->rnr_retry;
	qp->rto = 0;
	if (qp->timeout) {
		qp->rto = c->ops.now_ns(c->opaque) + vq_rto_ns(qp);
		vq_timer_set(c, qp, qp->rto);
	}
	if (qp->sq_next != qp->sq_prod &&
	    (psn_diff(next, qp->acked_psn) < (int32_t)VQ_WINDOW ||
	     (uint32_t)psn_diff(from, sw->psn) / VQ_CHUNK !=
	     (uint32_t)psn_diff(qp->resp_psn, sw->psn) / VQ_CHUNK))
		vq_work(c, qp);
}

static void rx_read_resp(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h,
			 const uint8_t *data, uint32_t dlen)
{
	uint32_t idx, k, ahead = VQ_NONE, last = 0, from;
	struct vq_sw *sw;
	int32_t d;
	unsigned int why;
	bool moved, done = false;

	if (vq_rvh_read_resp(c, qp, h, data, dlen))
		return;
	idx = resp_head(qp);
	if (idx == VQ_NONE) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_PSN_DUP);
		return;
	}
	sw = sw_of(qp, idx);
	if (qp->resp_wqe != idx) {
		/* Responses kept ahead of the last head stay if this one
		 * starts where it ended (resp_ahead). */
		if (qp->resp_wqe != VQ_NONE || qp->resp_psn != sw->psn) {
			qp->resp_psn = sw->psn;
			qp->resp_bits = 0;
		}
		qp->resp_wqe = idx;
		qp->rcur_valid = false;
	}
	d = psn_diff(h->psn, qp->resp_psn);
	k = (uint32_t)psn_diff(h->psn, sw->psn);
	if (d >= 0 && d < (int32_t)VQ_WINDOW && k >= sw->npkt &&
	    h->opcode == WEFT_VOP_READ_RESP)
		ahead = resp_ahead(qp, idx, h->psn);
	if (d < 0 || psn_diff(h->psn, sw->psn) < 0 || (k >= sw->npkt && ahead == VQ_NONE)) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, d < 0 ? WEFT_R_PSN_DUP : WEFT_R_PSN_OOS);
		return;
	}
	if (d >= (int32_t)VQ_WINDOW || ((qp->resp_bits >> d) & 1)) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, d >= (int32_t)VQ_WINDOW ? WEFT_R_PSN_WINDOW :
			  WEFT_R_PSN_DUP);
		return;
	}
	if (ahead != VQ_NONE) {
		/* Rare (reordering): that WQE is copied for this packet only. */
		struct vq_wqe w;

		why = resp_wqe_load(c, qp, ahead, &w);
		if (!why)
			why = resp_place(c, qp, &w, sw_of(qp, ahead), h, data, dlen);
		if (why) {
			/* Asked for again, and checked again, once that READ
			 * is the head: its error completes that READ. */
			weft_drop(c, NULL, WEFT_NO_WINDOW, why);
			return;
		}
		weft_count(c, WEFT_CNT_V_OOO_PLACED, 1);
		qp->resp_bits |= 1ull << d;
		return;
	}
	if ((h->opcode == WEFT_VOP_ATOMIC_RESP) != (sw->op != WEFT_VWR_READ)) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_PSN_OOS);
		return;
	}
	if (!qp->rcur_valid) {
		why = resp_wqe_load(c, qp, idx, &qp->rcur);
		if (why) {
			fail_head(c, qp, WEFT_VWC_LOC_PROT_ERR, why);
			return;
		}
		qp->rcur_valid = true;
	}
	if (h->opcode == WEFT_VOP_ATOMIC_RESP) {
		uint64_t val = h->swap_add;

		why = vq_sge_copy(c, qp, qp->rcur.sge, qp->rcur.h.num_sge, 0, &val, 8,
				  WEFT_VACC_LOCAL_WRITE, VQ_TO_MEM);
	} else {
		why = resp_place(c, qp, &qp->rcur, sw, h, data, dlen);
		if (why == WEFT_R_LENGTH) {
			weft_drop(c, NULL, WEFT_NO_WINDOW, why);
			return;
		}
	}
	if (why) {
		fail_head(c, qp, WEFT_VWC_LOC_PROT_ERR, why);
		return;
	}
	qp->resp_bits |= 1ull << d;
	moved = (qp->resp_bits & 1) != 0;
	from = qp->resp_psn;
	while (qp->resp_bits & 1) {
		qp->resp_psn = psn_add(qp->resp_psn, 1);
		qp->resp_bits >>= 1;
	}
	/* Every read whose responses are all in is done: the head, and the
	 * READs after it whose responses came ahead. */
	while (psn_diff(qp->resp_psn, psn_add(sw->psn, sw->npkt)) >= 0) {
		sw->state = SW_DONE;
		qp->resp_wqe = VQ_NONE;
		qp->rcur_valid = false;
		last = psn_add(sw->psn, sw->npkt - 1);
		done = true;
		idx = resp_head(qp);
		if (idx == VQ_NONE || sw_of(qp, idx)->psn != psn_add(last, 1))
			break;
		sw = sw_of(qp, idx);
		qp->resp_wqe = idx;
	}
	if (!done && !qp->srq && psn_diff(qp->acked_psn, sw->psn) > 0 &&
	    psn_diff(qp->resp_psn, qp->sent_hi) <= 0) {
		/* Inside the head read, past its first response: nothing
		 * before it is left to complete. */
		if (moved)
			resp_progress(c, qp, sw, from);
		return;
	}
	/* A response acknowledges every PSN before it.  One that moves
	 * resp_psn is progress even where a NAK moved acked_psn past it. */
	vq_acked(c, qp, done ? last : psn_add(qp->resp_psn, WEFT_VERBS_PSN_MASK), moved);
}

static uint8_t term_status(unsigned int cause)
{
	switch (cause) {
	case WEFT_R_MSN:
	case WEFT_R_RRQ_FULL:
	case WEFT_R_LENGTH:
	case WEFT_R_BAD_HEADER:
	case WEFT_R_INV_REFUSED:
		return WEFT_VWC_REM_INV_REQ_ERR;
	case WEFT_R_STAG_INDEX:
	case WEFT_R_STAG_INSTANCE:
	case WEFT_R_STAG_INVALID:
	case WEFT_R_PD_MISMATCH:
	case WEFT_R_STAG_TYPE:
	case WEFT_R_BOUNDS:
	case WEFT_R_ACCESS:
	case WEFT_R_ONE_TOUCH:
	case WEFT_R_ALIGN:
		return WEFT_VWC_REM_ACCESS_ERR;
	default:
		return WEFT_VWC_REM_OP_ERR;
	}
}

static void rx_terminate(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h)
{
	struct vq_rvh *r = vq_rvh_at(qp, h->psn);
	uint32_t i, hit = VQ_NONE;

	weft_count(c, WEFT_CNT_V_TERMINATES_RX, 1);
	if (r) {
		/* A device rendezvous's READ (remote access error) or FIN. */
		vq_rvh_fail(c, qp, r, term_status(h->syndrome),
			    h->syndrome < WEFT_R__COUNT ? h->syndrome : WEFT_R_TERMINATED);
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_TERMINATED);
		vq_qp_error(c, qp, WEFT_R_TERMINATED);
		return;
	}
	for (i = qp->sq_ci; i != qp->sq_prod; i++) {
		struct vq_sw *sw = sw_of(qp, i);

		if (sw->state == SW_STARTED && sw->npkt &&
		    psn_diff(h->psn, sw->psn) >= 0 && psn_diff(h->psn, psn_add(sw->psn, sw->npkt)) < 0) {
			hit = i;
			break;
		}
	}
	if (hit != VQ_NONE) {
		struct vq_sw *sw = sw_of(qp, hit);

		sw->state = SW_DONE;
		sw->status = term_status(h->syndrome);
		sw->reason = (uint8_t)(h->syndrome < WEFT_R__COUNT ? h->syndrome : WEFT_R_TERMINATED);
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_TERMINATED);
		vq_qp_error(c, qp, WEFT_R_TERMINATED);
	} else {
		fail_head(c, qp, term_status(h->syndrome), WEFT_R_TERMINATED);
	}
}

void vq_rx_response(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h,
		    const uint8_t *data, uint32_t dlen)
{
	if (h->opcode == WEFT_VOP_TERMINATE) {
		rx_terminate(c, qp, h);
		return;
	}
	if (qp->state != WEFT_VQPS_RTS && qp->state != WEFT_VQPS_SQD) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_QP_STATE);
		return;
	}
	switch (h->opcode) {
	case WEFT_VOP_ACK:
		if (h->syndrome == WEFT_VACK_ACK) {
			weft_count(c, WEFT_CNT_V_ACKS_RX, 1);
			vq_acked(c, qp, h->psn, false);
		} else if (h->syndrome == WEFT_VACK_NAK_SEQ) {
			weft_count(c, WEFT_CNT_V_NAKS_RX, 1);
			vq_acked(c, qp, psn_add(h->psn, WEFT_VERBS_PSN_MASK), false);
			vq_go_back(c, qp);
		} else if (h->syndrome == WEFT_VACK_NAK_RNR) {
			weft_count(c, WEFT_CNT_V_RNR_NAKS_RX, 1);
			vq_acked(c, qp, psn_add(h->psn, WEFT_VERBS_PSN_MASK), false);
			if (qp->rnr_retry != 7) {
				if (qp->rnr_left == 0) {
					fail_head(c, qp, WEFT_VWC_RNR_RETRY_EXC_ERR,
						  WEFT_R_RNR_EXCEEDED);
					return;
				}
				qp->rnr_left--;
			}
			qp->rto = 0;
			qp->rnr_until = c->ops.now_ns(c->opaque) + rnr_ns(h->msn);
			vq_timer_set(c, qp, qp->rnr_until);
		} else {
			weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_BAD_HEADER);
		}
		break;
	case WEFT_VOP_READ_RESP:
	case WEFT_VOP_ATOMIC_RESP:
		rx_read_resp(c, qp, h, data, dlen);
		break;
	default:
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_BAD_TYPE);
		break;
	}
}
