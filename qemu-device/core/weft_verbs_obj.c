/* SPDX-License-Identifier: MIT */
/*
 * Weft verbs engine: object tables (PD, CQ, QP, TPT), the command block,
 * the QP state machine, UAR doorbells, the work scheduler and the entry
 * points the core calls (docs/hw-spec.md 16.1-16.4).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "weft/names.h"
#include "weft_match.h"
#include "weft_state.h"
#include "weft_verbs_int.h"

/* ---- life cycle ------------------------------------------------------------ */

static void tables_free(struct weft_verbs *v)
{
	uint32_t i;

	if (v->qp)
		for (i = 0; i < v->nr_qp; i++)
			free(v->qp[i].sw);
	free(v->qp);
	free(v->cq);
	free(v->pd);
	free(v->tpt);
	free(v->srq);
	v->srq = NULL;
	free(v->tq);
	v->tq = NULL;
	v->ntq = 0;
	free(v->ctq);
	v->ctq = NULL;
	v->nctq = 0;
	v->qp = NULL;
	v->cq = NULL;
	v->pd = NULL;
	v->tpt = NULL;
}

static bool tables_alloc(struct weft_verbs *v)
{
	v->qp = calloc(v->nr_qp, sizeof(*v->qp));
	v->cq = calloc(v->nr_cq, sizeof(*v->cq));
	v->pd = calloc(v->nr_pd, sizeof(*v->pd));
	v->tpt = calloc(v->nr_tpt, sizeof(*v->tpt));
	v->srq = calloc(v->nr_srq, sizeof(*v->srq));
	v->tq = calloc(v->nr_qp, sizeof(*v->tq));
	v->ntq = 0;
	v->ctq = calloc(v->nr_cq ? v->nr_cq : 1, sizeof(*v->ctq));
	v->nctq = 0;
	v->sw_bytes = 0;
	v->work_head = v->work_tail = VQ_NONE;
	v->tm_head = v->tm_tail = VQ_NONE;
	v->pend = false;
	v->timer_armed = 0;
	return v->qp && v->cq && v->pd && v->tpt && v->srq && v->tq && v->ctq;
}

const char *weft_verbs_config(const struct weft_core_config *cfg, uint32_t out[5])
{
	out[0] = cfg->verbs_qps ? cfg->verbs_qps : WEFT_VERBS_DEF_QP;
	out[1] = cfg->verbs_cqs ? cfg->verbs_cqs : WEFT_VERBS_DEF_CQ;
	out[2] = cfg->verbs_pds ? cfg->verbs_pds : WEFT_VERBS_DEF_PD;
	out[3] = cfg->verbs_tpt ? cfg->verbs_tpt : WEFT_VERBS_DEF_TPT;
	out[4] = cfg->verbs_uars ? cfg->verbs_uars : WEFT_VERBS_DEF_UAR;
	if (out[0] < 2 || out[0] > WEFT_VERBS_MAX_QP)
		return "verbs_qps must be 2..1048576";
	if (out[1] > WEFT_VERBS_MAX_CQ)
		return "verbs_cqs must be 1..1048576";
	if (out[2] > WEFT_VERBS_MAX_PD)
		return "verbs_pds must be 1..1048576";
	if (out[3] > WEFT_VERBS_MAX_TPT)
		return "verbs_tpt must be 1..16777216";
	if (out[4] > WEFT_VERBS_MAX_UAR)
		return "verbs_uars must be 1..4096";
	return NULL;
}

struct weft_verbs *weft_verbs_new(const struct weft_core_config *cfg)
{
	struct weft_verbs *v = calloc(1, sizeof(*v));
	uint32_t n[5];

	if (!v || weft_verbs_config(cfg, n)) {
		free(v);
		return NULL;
	}
	v->nr_qp = n[0];
	v->nr_srq = n[0];
	v->nr_cq = n[1];
	v->nr_pd = n[2];
	v->nr_tpt = n[3];
	v->nr_uar = n[4];
	if (!tables_alloc(v)) {
		weft_verbs_free(v);
		return NULL;
	}
	return v;
}

void weft_verbs_free(struct weft_verbs *v)
{
	if (!v)
		return;
	tables_free(v);
	free(v);
}

/* Reset and adapter recovery destroy every verbs object.  The tables are
 * reallocated (zero pages) rather than cleared, and only if a command can
 * have written them: a reset costs nothing for an engine never used. */
void weft_verbs_reset(struct weft_core *c)
{
	struct weft_verbs *v = c->verbs;

	weft_match_tm_close_all(c);
	if (v->used) {
		tables_free(v);
		if (!tables_alloc(v)) {
			/* Out of host memory: leave an engine with no objects. */
			tables_free(v);
			v->nr_qp = v->nr_cq = v->nr_pd = v->nr_tpt = v->nr_srq = 0;
		}
		v->used = false;
	}
	memset(v->gid, 0, sizeof(v->gid));
	v->cmd_status = WEFT_CMD_OK;
	v->timer_armed = 0;
	weft_timer_sync(c);
}

uint64_t weft_verbs_deadline(const struct weft_core *c)
{
	return c->verbs ? c->verbs->timer_armed : 0;
}

uint64_t weft_verbs_uar_off(void)
{
	return (uint64_t)WEFT_MAX_WINDOWS * WEFT_DB_PAGE_SIZE;
}

uint64_t weft_verbs_db_size(const struct weft_core_config *cfg)
{
	uint32_t n[5];

	weft_verbs_config(cfg, n);
	return weft_verbs_uar_off() + (uint64_t)n[4] * WEFT_DB_PAGE_SIZE;
}

uint64_t weft_verbs_reg_read(struct weft_core *c, uint64_t reg)
{
	struct weft_verbs *v = c->verbs;

	switch (reg) {
	case WEFT_REG_VERBS_NR_QP: return v->nr_qp;
	case WEFT_REG_VERBS_NR_CQ: return v->nr_cq;
	case WEFT_REG_VERBS_NR_PD: return v->nr_pd;
	case WEFT_REG_VERBS_NR_TPT: return v->nr_tpt;
	case WEFT_REG_VERBS_NR_UAR: return v->nr_uar;
	case WEFT_REG_VERBS_UAR_OFF: return weft_verbs_uar_off();
	case WEFT_REG_VERBS_CMD_STATUS: return v->cmd_status;
	default:
		weft_guest_error(c, "regs: 0x%llx is no verbs register",
				 (unsigned long long)reg);
		return 0;
	}
}

/* ---- scheduling ---------------------------------------------------------- */

void vq_work(struct weft_core *c, struct vq_qp *qp)
{
	struct weft_verbs *v = c->verbs;
	uint32_t n = vq_qpn(c, qp);

	if (qp->in_work)
		return;
	qp->in_work = true;
	qp->work_next = VQ_NONE;
	if (v->work_tail == VQ_NONE)
		v->work_head = n;
	else
		v->qp[v->work_tail].work_next = n;
	v->work_tail = n;
	if (c->ops.kick)
		c->ops.kick(c->opaque);
}

static struct vq_qp *work_pop(struct weft_verbs *v)
{
	struct vq_qp *qp;

	if (v->work_head == VQ_NONE)
		return NULL;
	qp = &v->qp[v->work_head];
	v->work_head = qp->work_next;
	if (v->work_head == VQ_NONE)
		v->work_tail = VQ_NONE;
	qp->in_work = false;
	return qp;
}

bool weft_verbs_has_work(const struct weft_core *c)
{
	return c->verbs->work_head != VQ_NONE || c->verbs->pend || c->verbs->tm_head != VQ_NONE;
}

/* After a step that did something (did), is there more to do now?  A
 * send queue blocked by its window or by max_rd_atomic waits for the ACK,
 * response, timer or doorbell that requeues it. */
static bool qp_has_work(struct weft_core *c, struct vq_qp *qp, bool did)
{
	return qp->created && (qp->flushing || qp->ack_owed || qp->rrq_count ||
			       (did && vq_sq_has_work(c, qp)));
}

/* One scheduling step: a QP's owed ACK, a read response, a flush batch or
 * one SQ packet.  Returns 1 when something was done. */
static int qp_step(struct weft_core *c, struct vq_qp *qp)
{
	int r = 0;

	if (qp->ack_owed) {
		vq_send_ack(c, qp, WEFT_VACK_ACK, psn_add(qp->epsn, WEFT_VERBS_PSN_MASK), qp->msn);
		if (c->verbs->pend)
			return -EAGAIN;
		return 1;
	}
	if (qp->flushing) {
		vq_sq_complete(c, qp, VQ_FLUSH_STEP);
		vq_rq_flush(c, qp, VQ_FLUSH_STEP);
		if (qp->sq_ci == qp->sq_prod && qp->rq_ci == qp->rq_prod)
			qp->flushing = false;
		return 1;
	}
	if (qp->rrq_count) {
		r = vq_rrq_step(c, qp);
		if (r)
			return r;
	}
	return vq_sq_step(c, qp);
}

int weft_verbs_poll(struct weft_core *c)
{
	struct weft_verbs *v = c->verbs;
	struct vq_qp *qp;
	uint32_t i;
	int r, tm;

	if (v->pend) {
		int rc = vq_link_xmit(c, v->pend_pkt, v->pend_len);

		if (rc == -EAGAIN)
			return -EAGAIN;
		v->pend = false;
		if (rc)
			weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_NO_LINK);
		return 1;
	}
	tm = vq_tm_poll(c);
	/* Round robin: take the head QP, do one step, requeue if it has more. */
	for (i = 0; i < 4 && (qp = work_pop(v)) != NULL; i++) {
		if (!qp->created)
			continue;
		r = qp_step(c, qp);
		if (qp_has_work(c, qp, r != 0))
			vq_work(c, qp);
		if (r < 0)
			return r;
		if (r > 0)
			return 1;
	}
	return tm;
}

/* ---- errors ---------------------------------------------------------------- */

void vq_async(struct weft_core *c, uint32_t obj, unsigned int what, unsigned int reason,
	      unsigned int vector)
{
	weft_event_vec(c, WEFT_EV_VERBS_ASYNC, vector, obj, reason, what);
}

static unsigned int qp_vector(struct weft_core *c, const struct vq_qp *qp)
{
	struct weft_verbs *v = c->verbs;

	return qp->scq < v->nr_cq ? v->cq[qp->scq].vector : 0;
}

void vq_qp_error(struct weft_core *c, struct vq_qp *qp, unsigned int reason)
{
	if (qp->state == WEFT_VQPS_ERR || qp->state == WEFT_VQPS_RESET)
		return;
	qp->state = WEFT_VQPS_ERR;
	qp->last_reason = reason;
	vq_cnt_unwait(c, qp);
	vq_rvh_flush(c, qp);
	qp->rto = qp->rnr_until = 0;
	qp->rrq_count = 0;
	qp->ack_owed = false;
	qp->flushing = true;
	vq_async(c, vq_qpn(c, qp), WEFT_VASYNC_QP_FATAL, reason, qp_vector(c, qp));
	vq_work(c, qp);
}

void vq_qp_sq_error(struct weft_core *c, struct vq_qp *qp, unsigned int reason)
{
	if (qp->state != WEFT_VQPS_RTS && qp->state != WEFT_VQPS_SQD)
		return;
	qp->state = WEFT_VQPS_SQE;
	qp->last_reason = reason;
	vq_cnt_unwait(c, qp);
	vq_rvh_flush(c, qp);
	qp->rto = qp->rnr_until = 0;
	qp->flushing = true;
	vq_async(c, vq_qpn(c, qp), WEFT_VASYNC_SQ_DRAINED, reason, qp_vector(c, qp));
	vq_work(c, qp);
}

/* ---- commands ---------------------------------------------------------------- */

bool vq_ring_ok(struct weft_core *c, uint64_t addr, uint64_t bytes)
{
	uint8_t b;

	return addr && !(addr & 63) && addr + bytes > addr &&
	       c->ops.dma_read(c->opaque, addr, &b, 1) == 0 &&
	       c->ops.dma_read(c->opaque, addr + bytes - 1, &b, 1) == 0;
}

static unsigned int cmd_cq(struct weft_core *c, const struct weft_vcmd *k, bool create,
			   unsigned int *reason)
{
	struct weft_verbs *v = c->verbs;
	struct vq_cq *cq;
	bool tq;

	*reason = WEFT_R_CQ_INVALID;
	if (k->handle >= v->nr_cq)
		return WEFT_CMD_EINVAL;
	cq = &v->cq[k->handle];
	if (!create) {
		if (!cq->created)
			return WEFT_CMD_ESTATE;
		if (cq->refs) {
			*reason = WEFT_R_STAG_BUSY;
			return WEFT_CMD_EBUSY;
		}
		/* Still in the timer list until the next timer drops it. */
		tq = cq->in_tq;
		memset(cq, 0, sizeof(*cq));
		cq->in_tq = tq;
		*reason = WEFT_R_OK;
		return WEFT_CMD_OK;
	}
	if (cq->created)
		return WEFT_CMD_EBUSY;
	tq = cq->in_tq;
	if (k->u.cq.log2_entries < 1 || k->u.cq.log2_entries > WEFT_VERBS_CQ_MAX_LOG2 ||
	    k->u.cq.vector >= c->cfg.nr_handlers || k->u.cq.uar >= v->nr_uar ||
	    (k->u.cq.ci_addr & 3))
		return WEFT_CMD_EINVAL;
	if (!vq_ring_ok(c, k->u.cq.ring_addr,
		     (uint64_t)sizeof(struct weft_vcqe) << k->u.cq.log2_entries) ||
	    !vq_ring_ok(c, k->u.cq.ci_addr & ~63ull, 64)) {
		*reason = WEFT_R_DMA_ERROR;
		return WEFT_CMD_EFAULT;
	}
	memset(cq, 0, sizeof(*cq));
	cq->in_tq = tq;
	cq->created = true;
	cq->log2 = (uint8_t)k->u.cq.log2_entries;
	cq->ring = k->u.cq.ring_addr;
	cq->ci_addr = k->u.cq.ci_addr;
	cq->vector = k->u.cq.vector;
	cq->uar = k->u.cq.uar;
	*reason = WEFT_R_OK;
	return WEFT_CMD_OK;
}

/*
 * RESIZE_CQ (hw-spec 16.7, "Resizing"): the CQ moves to a new ring and
 * consumer-index word.  The consumer index is read from the new word
 * (the driver stores its own there first); the CQEs written and not yet
 * consumed, [ci, prod), are copied into the new ring at the same indexes
 * with the new ring's owner bits, so none is lost or duplicated, and the
 * next CQE goes to index prod of the new ring.  A new ring too small for
 * the CQEs outstanding is refused (CQ_OVERFLOW); resp.out[0] = prod.
 */
static unsigned int cmd_resize_cq(struct weft_core *c, const struct weft_vcmd *k,
				  struct weft_vcmd_resp *resp, unsigned int *reason)
{
	struct weft_verbs *v = c->verbs;
	uint32_t log2 = k->u.cq.log2_entries, ci, i;
	uint64_t old_ring;
	uint8_t old_log2;
	struct weft_vcqe e;
	struct vq_cq *cq;

	*reason = WEFT_R_CQ_INVALID;
	if (k->handle >= v->nr_cq || !v->cq[k->handle].created)
		return WEFT_CMD_EINVAL;
	cq = &v->cq[k->handle];
	if (cq->error)
		return WEFT_CMD_ESTATE;
	if (log2 < 1 || log2 > WEFT_VERBS_CQ_MAX_LOG2 || (k->u.cq.ci_addr & 3))
		return WEFT_CMD_EINVAL;
	if (!vq_ring_ok(c, k->u.cq.ring_addr, (uint64_t)sizeof(e) << log2) ||
	    !vq_ring_ok(c, k->u.cq.ci_addr & ~63ull, 64) ||
	    weft_dma_read(c, k->u.cq.ci_addr, &ci, 4) != 0) {
		*reason = WEFT_R_DMA_ERROR;
		return WEFT_CMD_EFAULT;
	}
	/* A consumer index ahead of prod, or more than a ring behind it,
	 * is the driver's error: the CQEs it names do not exist. */
	if (cq->prod - ci > (1u << cq->log2))
		return WEFT_CMD_EINVAL;
	if (cq->prod - ci > (1u << log2)) {
		*reason = WEFT_R_CQ_OVERFLOW;
		return WEFT_CMD_EINVAL;
	}
	/* The CQ takes the new ring first: a DMA error while copying leaves
	 * it in error, as one while writing a CQE does (CQ_ERR). */
	old_ring = cq->ring;
	old_log2 = cq->log2;
	cq->ring = k->u.cq.ring_addr;
	cq->ci_addr = k->u.cq.ci_addr;
	cq->log2 = (uint8_t)log2;
	cq->ci = ci;
	for (i = ci; i != cq->prod; i++) {
		uint64_t from = old_ring + (uint64_t)(i & ((1u << old_log2) - 1)) * sizeof(e);
		uint64_t to = cq->ring + (uint64_t)(i & ((1u << log2) - 1)) * sizeof(e);

		e.owner = (uint8_t)(((i >> log2) & 1) ^ 1);
		if (weft_dma_read(c, from, &e, offsetof(struct weft_vcqe, owner)) != 0 ||
		    weft_dma_write(c, to, &e, sizeof(e)) != 0) {
			vq_cq_error(c, k->handle, cq, WEFT_R_DMA_ERROR);
			*reason = WEFT_R_DMA_ERROR;
			return WEFT_CMD_EFAULT;
		}
	}
	resp->out[0] = cq->prod;
	*reason = WEFT_R_OK;
	return WEFT_CMD_OK;
}

static bool cq_ok(struct weft_verbs *v, uint32_t n)
{
	return n < v->nr_cq && v->cq[n].created;
}

static void qp_release(struct weft_core *c, struct vq_qp *qp)
{
	struct weft_verbs *v = c->verbs;

	vq_cnt_unwait(c, qp);
	vq_rvh_flush(c, qp);
	if (qp->sw) {
		v->sw_bytes -= sizeof(*qp->sw) << qp->sq_log2;
		free(qp->sw);
	}
	if (qp->pd < v->nr_pd && v->pd[qp->pd].refs)
		v->pd[qp->pd].refs--;
	if (qp->scq < v->nr_cq && v->cq[qp->scq].refs)
		v->cq[qp->scq].refs--;
	if (qp->rcq < v->nr_cq && v->cq[qp->rcq].refs)
		v->cq[qp->rcq].refs--;
	vq_srq_detach(c, qp->srq);
	vq_tpt_release_qp(c, vq_qpn(c, qp));
	/* Left in the work list: qp_step skips it (created is false). */
	{
		bool in = qp->in_work, tq = qp->in_tq;
		uint32_t next = qp->work_next;

		memset(qp, 0, sizeof(*qp));
		qp->in_tq = tq;
		qp->in_work = in;
		qp->work_next = next;
	}
}

static unsigned int cmd_create_qp(struct weft_core *c, const struct weft_vcmd *k,
				  unsigned int *reason)
{
	struct weft_verbs *v = c->verbs;
	struct vq_qp *qp;
	uint64_t swb;

	*reason = WEFT_R_QP_INVALID;
	if (k->handle == 0 || k->handle >= v->nr_qp)
		return WEFT_CMD_EINVAL;
	qp = &v->qp[k->handle];
	if (qp->created)
		return WEFT_CMD_EBUSY;
	if ((k->u.qp.type != WEFT_VQPT_RC && k->u.qp.type != WEFT_VQPT_UD &&
	     k->u.qp.type != WEFT_VQPT_UC) ||
	    (k->handle == WEFT_VERBS_GSI_QPN && k->u.qp.type != WEFT_VQPT_UD) ||
	    /* a UC message dropped midway would consume an SRQ WQE (16.16) */
	    (k->u.qp.type == WEFT_VQPT_UC && k->u.qp.srq) ||
	    k->u.qp.pd >= v->nr_pd || !v->pd[k->u.qp.pd].created ||
	    !cq_ok(v, k->u.qp.send_cq) || !cq_ok(v, k->u.qp.recv_cq) ||
	    k->u.qp.uar >= v->nr_uar ||
	    k->u.qp.sq_log2 > WEFT_VERBS_WQ_MAX_LOG2 ||
	    k->u.qp.sq_stride_log2 < 7 || k->u.qp.sq_stride_log2 > 9 ||
	    /* a QP on an SRQ has no RQ: its RQ fields are ignored (16.14) */
	    (!k->u.qp.srq && (k->u.qp.rq_log2 > WEFT_VERBS_WQ_MAX_LOG2 ||
			      k->u.qp.rq_stride_log2 < 5 || k->u.qp.rq_stride_log2 > 9)) ||
	    (k->u.qp.flags & ~(WEFT_VQPF_SQ_REG | WEFT_VQPF_REG_OPT_B | WEFT_VQPF_PRIV)))
		return WEFT_CMD_EINVAL;
	if (!vq_ring_ok(c, k->u.qp.sq_addr, 1ull << (k->u.qp.sq_log2 + k->u.qp.sq_stride_log2)) ||
	    (!k->u.qp.srq &&
	     !vq_ring_ok(c, k->u.qp.rq_addr, 1ull << (k->u.qp.rq_log2 + k->u.qp.rq_stride_log2)))) {
		*reason = WEFT_R_DMA_ERROR;
		return WEFT_CMD_EFAULT;
	}
	swb = sizeof(struct vq_sw) << k->u.qp.sq_log2;
	if (v->sw_bytes + swb > VQ_BUDGET) {
		*reason = WEFT_R_LENGTH;
		return WEFT_CMD_ENOMEM;
	}
	if (k->u.qp.srq) {
		*reason = vq_srq_attach(c, k->u.qp.srq, k->u.qp.pd, k->u.qp.flags);
		if (*reason)
			return WEFT_CMD_EINVAL;
	}
	memset(qp, 0, sizeof(*qp));
	qp->sw = calloc(1u << k->u.qp.sq_log2, sizeof(*qp->sw));
	if (!qp->sw) {
		vq_srq_detach(c, k->u.qp.srq);
		*reason = WEFT_R_LENGTH;
		return WEFT_CMD_ENOMEM;
	}
	qp->srq = k->u.qp.srq;
	v->sw_bytes += swb;
	qp->created = true;
	qp->type = (uint8_t)k->u.qp.type;
	qp->state = WEFT_VQPS_RESET;
	qp->flags = (uint8_t)k->u.qp.flags;
	qp->pd = k->u.qp.pd;
	qp->scq = k->u.qp.send_cq;
	qp->rcq = k->u.qp.recv_cq;
	qp->uar = k->u.qp.uar;
	qp->sq_addr = k->u.qp.sq_addr;
	qp->rq_addr = k->u.qp.rq_addr;
	qp->sq_log2 = k->u.qp.sq_log2;
	qp->sq_stride = k->u.qp.sq_stride_log2;
	qp->rq_log2 = k->u.qp.rq_log2;
	qp->rq_stride = k->u.qp.rq_stride_log2;
	qp->work_next = VQ_NONE;
	v->pd[qp->pd].refs++;
	v->cq[qp->scq].refs++;
	v->cq[qp->rcq].refs++;
	*reason = WEFT_R_OK;
	return WEFT_CMD_OK;
}

static bool transition_ok(unsigned int from, unsigned int to)
{
	if (to == WEFT_VQPS_RESET || to == WEFT_VQPS_ERR)
		return true;
	switch (from) {
	case WEFT_VQPS_RESET: return to == WEFT_VQPS_INIT;
	case WEFT_VQPS_INIT: return to == WEFT_VQPS_INIT || to == WEFT_VQPS_RTR;
	case WEFT_VQPS_RTR: return to == WEFT_VQPS_RTS;
	case WEFT_VQPS_RTS: return to == WEFT_VQPS_RTS || to == WEFT_VQPS_SQD;
	case WEFT_VQPS_SQD: return to == WEFT_VQPS_SQD || to == WEFT_VQPS_RTS;
	case WEFT_VQPS_SQE: return to == WEFT_VQPS_RTS;
	default: return false;
	}
}

static void qp_to_reset(struct weft_core *c, struct vq_qp *qp)
{
	struct vq_qp keep;

	vq_cnt_unwait(c, qp);
	vq_rvh_flush(c, qp);
	keep = *qp;
	memset(&qp->sq_prod, 0, sizeof(*qp) - offsetof(struct vq_qp, sq_prod));
	qp->sw = keep.sw;
	qp->in_tq = keep.in_tq;
	qp->in_work = keep.in_work;
	qp->work_next = keep.work_next;
	memset(qp->sw, 0, sizeof(*qp->sw) << qp->sq_log2);
	qp->state = WEFT_VQPS_RESET;
}

static unsigned int cmd_modify_qp(struct weft_core *c, const struct weft_vcmd *k,
				  unsigned int *reason)
{
	struct vq_qp *qp = vq_qp(c, k->handle);
	uint32_t m = k->u.mod.mask;
	unsigned int to;

	*reason = WEFT_R_QP_INVALID;
	if (!qp)
		return WEFT_CMD_EINVAL;
	*reason = WEFT_R_QP_STATE;
	to = (m & WEFT_VQPA_STATE) ? k->u.mod.state : qp->state;
	if (to > WEFT_VQPS_ERR || !transition_ok(qp->state, to) ||
	    ((m & WEFT_VQPA_CUR_STATE) && k->u.mod.cur_state != qp->state))
		return WEFT_CMD_ESTATE;
	/* Required attributes (IB qp_state_table). */
	if (qp->state == WEFT_VQPS_RESET && to == WEFT_VQPS_INIT && qp->type == WEFT_VQPT_UD &&
	    !(m & WEFT_VQPA_QKEY))
		return WEFT_CMD_EINVAL;
	if (qp->state == WEFT_VQPS_INIT && to == WEFT_VQPS_RTR && qp->type == WEFT_VQPT_RC &&
	    (m & (WEFT_VQPA_AV | WEFT_VQPA_DEST_QPN | WEFT_VQPA_RQ_PSN |
		  WEFT_VQPA_MAX_DEST_RD_ATOMIC | WEFT_VQPA_MIN_RNR_TIMER)) !=
	    (WEFT_VQPA_AV | WEFT_VQPA_DEST_QPN | WEFT_VQPA_RQ_PSN |
	     WEFT_VQPA_MAX_DEST_RD_ATOMIC | WEFT_VQPA_MIN_RNR_TIMER))
		return WEFT_CMD_EINVAL;
	if (qp->state == WEFT_VQPS_INIT && to == WEFT_VQPS_RTR && qp->type == WEFT_VQPT_UC &&
	    (m & (WEFT_VQPA_AV | WEFT_VQPA_DEST_QPN | WEFT_VQPA_RQ_PSN)) !=
	    (WEFT_VQPA_AV | WEFT_VQPA_DEST_QPN | WEFT_VQPA_RQ_PSN))
		return WEFT_CMD_EINVAL;
	if (qp->state == WEFT_VQPS_RTR && to == WEFT_VQPS_RTS &&
	    (qp->type == WEFT_VQPT_RC ?
	     (m & (WEFT_VQPA_SQ_PSN | WEFT_VQPA_TIMEOUT | WEFT_VQPA_RETRY_CNT |
		   WEFT_VQPA_RNR_RETRY | WEFT_VQPA_MAX_QP_RD_ATOMIC)) !=
	     (WEFT_VQPA_SQ_PSN | WEFT_VQPA_TIMEOUT | WEFT_VQPA_RETRY_CNT |
	      WEFT_VQPA_RNR_RETRY | WEFT_VQPA_MAX_QP_RD_ATOMIC) :
	     !(m & WEFT_VQPA_SQ_PSN)))
		return WEFT_CMD_EINVAL;
	*reason = WEFT_R_LENGTH;
	if (((m & WEFT_VQPA_PATH_MTU) && (k->u.mod.path_mtu < 1 || k->u.mod.path_mtu > 5)) ||
	    ((m & WEFT_VQPA_RETRY_CNT) && k->u.mod.retry_cnt > 7) ||
	    ((m & WEFT_VQPA_RNR_RETRY) && k->u.mod.rnr_retry > 7) ||
	    ((m & WEFT_VQPA_MIN_RNR_TIMER) && k->u.mod.min_rnr_timer > 31) ||
	    ((m & WEFT_VQPA_TIMEOUT) && k->u.mod.timeout > 31) ||
	    ((m & WEFT_VQPA_MAX_QP_RD_ATOMIC) && k->u.mod.max_rd_atomic > WEFT_VERBS_MAX_RD_ATOMIC) ||
	    ((m & WEFT_VQPA_MAX_DEST_RD_ATOMIC) &&
	     k->u.mod.max_dest_rd_atomic > WEFT_VERBS_MAX_RD_ATOMIC) ||
	    ((m & WEFT_VQPA_AV) && k->u.mod.dest_node > WEFT_NODE_MAX_UNICAST) ||
	    ((m & WEFT_VQPA_DEST_QPN) && (k->u.mod.dest_qpn == 0 ||
					   k->u.mod.dest_qpn > WEFT_VERBS_PSN_MASK)) ||
	    ((m & WEFT_VQPA_ACCESS) && (k->u.mod.access & ~WEFT_VACC_REMOTE)))
		return WEFT_CMD_EINVAL;
	if (to == WEFT_VQPS_RESET) {
		qp_to_reset(c, qp);
		*reason = WEFT_R_OK;
		return WEFT_CMD_OK;
	}
	if (m & WEFT_VQPA_ACCESS) qp->access = k->u.mod.access;
	if (m & WEFT_VQPA_QKEY) qp->qkey = k->u.mod.qkey;
	if (m & WEFT_VQPA_AV) qp->dest_node = k->u.mod.dest_node;
	if (m & WEFT_VQPA_DEST_QPN) qp->dest_qpn = k->u.mod.dest_qpn;
	if (m & WEFT_VQPA_TIMEOUT) qp->timeout = k->u.mod.timeout;
	if (m & WEFT_VQPA_RETRY_CNT) qp->retry_cnt = k->u.mod.retry_cnt;
	if (m & WEFT_VQPA_RNR_RETRY) qp->rnr_retry = k->u.mod.rnr_retry;
	if (m & WEFT_VQPA_MIN_RNR_TIMER) qp->min_rnr_timer = k->u.mod.min_rnr_timer;
	if (m & WEFT_VQPA_MAX_QP_RD_ATOMIC) qp->max_rd_atomic = k->u.mod.max_rd_atomic;
	if (m & WEFT_VQPA_MAX_DEST_RD_ATOMIC) qp->max_dest_rd_atomic = k->u.mod.max_dest_rd_atomic;
	if (m & WEFT_VQPA_RQ_PSN) {
		qp->epsn = k->u.mod.rq_psn & WEFT_VERBS_PSN_MASK;
		qp->uc_drop = false;
		qp->rd_emsn = 1;
	}
	if (m & WEFT_VQPA_SQ_PSN) {
		qp->snd_psn = qp->acked_psn = qp->resp_psn = qp->sent_hi =
			k->u.mod.sq_psn & WEFT_VERBS_PSN_MASK;
		qp->resp_wqe = VQ_NONE;
		qp->rd_msn = 1;
	}
	qp->retries_left = qp->retry_cnt;
	qp->rnr_left = qp->rnr_retry;
	if (to == WEFT_VQPS_ERR) {
		vq_qp_error(c, qp, WEFT_R_OK);
	} else {
		if (qp->state == WEFT_VQPS_SQE && to == WEFT_VQPS_RTS)
			qp->flushing = false;
		qp->state = (uint8_t)to;
		vq_work(c, qp);
	}
	*reason = WEFT_R_OK;
	return WEFT_CMD_OK;
}

static void dump_qp(struct weft_core *c, const struct vq_qp *qp, uint32_t qpn,
		    struct weft_vqpc *d)
{
	(void)c;
	memset(d, 0, sizeof(*d));
	d->qpn = qpn;
	d->type = qp->type;
	d->state = qp->state;
	d->access = qp->access;
	d->flags = qp->flags;
	d->pd = qp->pd;
	d->send_cq = qp->scq;
	d->recv_cq = qp->rcq;
	d->uar = qp->uar;
	d->qkey = qp->qkey;
	d->dest_qpn = qp->dest_qpn;
	d->dest_node = qp->dest_node;
	d->retry_cnt = qp->retry_cnt;
	d->rnr_retry = qp->rnr_retry;
	d->timeout = qp->timeout;
	d->min_rnr_timer = qp->min_rnr_timer;
	d->max_rd_atomic = qp->max_rd_atomic;
	d->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	d->sq_prod = qp->sq_prod;
	d->sq_ci = qp->sq_ci;
	d->sq_next = qp->sq_next;
	d->rq_prod = qp->rq_prod;
	d->rq_ci = qp->rq_ci;
	d->snd_psn = qp->snd_psn;
	d->snd_una = qp->acked_psn;
	d->epsn = qp->epsn;
	d->msn = qp->msn;
	d->rd_emsn = qp->rd_emsn;
	d->retries_left = qp->retries_left;
	d->rnr_left = qp->rnr_left;
	d->rrq_count = qp->rrq_count;
	d->last_reason = qp->last_reason;
	d->sq_addr = qp->sq_addr;
	d->rq_addr = qp->rq_addr;
	d->sq_log2 = qp->sq_log2;
	d->sq_stride_log2 = qp->sq_stride;
	d->rq_log2 = qp->rq_log2;
	d->rq_stride_log2 = qp->rq_stride;
	d->srq = qp->srq;
}

static void dump_cq(const struct vq_cq *cq, uint32_t cqn, struct weft_vcqc *d)
{
	memset(d, 0, sizeof(*d));
	d->cqn = cqn;
	d->created = cq->created;
	d->arm = cq->arm;
	d->error = cq->error;
	d->log2_entries = cq->log2;
	d->ring_addr = cq->ring;
	d->ci_addr = cq->ci_addr;
	d->prod = cq->prod;
	d->ci = cq->ci;
	d->vector = cq->vector;
	d->uar = cq->uar;
	d->refs = cq->refs;
	d->mod_count = cq->mod_count;
	d->mod_period_us = cq->mod_period;
	d->mod_cqes = cq->mod_cqes;
}

bool weft_core_verbs_tpt(const struct weft_core *c, uint32_t index, struct weft_tpt_entry *e)
{
	const struct weft_verbs *v = c->verbs;

	if (!v->tpt || index >= v->nr_tpt)
		return false;
	*e = v->tpt[index].e;
	return true;
}

bool weft_core_verbs_cq(const struct weft_core *c, uint32_t cqn, struct weft_vcqc *q)
{
	const struct weft_verbs *v = c->verbs;

	if (!v->cq || cqn >= v->nr_cq)
		return false;
	dump_cq(&v->cq[cqn], cqn, q);
	return true;
}

static unsigned int cmd_query(struct weft_core *c, const struct weft_vcmd *k,
			      struct weft_vcmd_resp *resp, unsigned int *reason)
{
	struct weft_verbs *v = c->verbs;
	union {
		struct weft_vqpc qp;
		struct weft_vcqc cq;
		struct weft_tpt_entry tpt;
	} d;
	size_t len;

	memset(&d, 0, sizeof(d));
	*reason = WEFT_R_OK;
	switch (k->op) {
	case WEFT_VCMD_QUERY_QP:
		if (k->handle >= v->nr_qp || !v->qp[k->handle].created) {
			*reason = WEFT_R_QP_INVALID;
			return WEFT_CMD_EINVAL;
		}
		dump_qp(c, &v->qp[k->handle], k->handle, &d.qp);
		len = sizeof(d.qp);
		break;
	case WEFT_VCMD_QUERY_CQ:
		if (k->handle >= v->nr_cq) {
			*reason = WEFT_R_CQ_INVALID;
			return WEFT_CMD_EINVAL;
		}
		dump_cq(&v->cq[k->handle], k->handle, &d.cq);
		len = sizeof(d.cq);
		break;
	case WEFT_VCMD_QUERY_TPT:
		if (k->handle >= v->nr_tpt) {
			*reason = WEFT_R_STAG_INDEX;
			return WEFT_CMD_EINVAL;
		}
		d.tpt = v->tpt[k->handle].e;
		len = sizeof(d.tpt);
		break;
	default: /* QUERY_PD */
		if (k->handle >= v->nr_pd) {
			*reason = WEFT_R_STAG_INDEX;
			return WEFT_CMD_EINVAL;
		}
		resp->out[0] = v->pd[k->handle].created;
		resp->out[1] = v->pd[k->handle].refs;
		return WEFT_CMD_OK;
	}
	if (weft_dma_write(c, k->u.query.addr, &d, len) != 0) {
		*reason = WEFT_R_DMA_ERROR;
		return WEFT_CMD_EFAULT;
	}
	return WEFT_CMD_OK;
}

static unsigned int cmd_pd(struct weft_core *c, const struct weft_vcmd *k, bool create,
			   unsigned int *reason)
{
	struct weft_verbs *v = c->verbs;
	struct vq_pd *pd;

	*reason = WEFT_R_PD_MISMATCH;
	if (k->handle >= v->nr_pd)
		return WEFT_CMD_EINVAL;
	pd = &v->pd[k->handle];
	if (create) {
		if (pd->created)
			return WEFT_CMD_EBUSY;
		pd->created = true;
		pd->refs = 0;
	} else {
		if (!pd->created)
			return WEFT_CMD_ESTATE;
		if (pd->refs) {
			*reason = WEFT_R_STAG_BUSY;
			return WEFT_CMD_EBUSY;
		}
		pd->created = false;
	}
	*reason = WEFT_R_OK;
	return WEFT_CMD_OK;
}

static unsigned int run_cmd(struct weft_core *c, const struct weft_vcmd *k,
			    struct weft_vcmd_resp *resp, unsigned int *reason)
{
	struct vq_qp *qp;

	c->verbs->used = true;
	switch (k->op) {
	case WEFT_VCMD_CREATE_PD: return cmd_pd(c, k, true, reason);
	case WEFT_VCMD_DESTROY_PD: return cmd_pd(c, k, false, reason);
	case WEFT_VCMD_CREATE_CQ: return cmd_cq(c, k, true, reason);
	case WEFT_VCMD_DESTROY_CQ: return cmd_cq(c, k, false, reason);
	case WEFT_VCMD_RESIZE_CQ: return cmd_resize_cq(c, k, resp, reason);
	case WEFT_VCMD_MODIFY_CQ: return vq_cmd_modify_cq(c, k, reason);
	case WEFT_VCMD_CREATE_QP: return cmd_create_qp(c, k, reason);
	case WEFT_VCMD_MODIFY_QP: return cmd_modify_qp(c, k, reason);
	case WEFT_VCMD_DESTROY_QP:
		qp = vq_qp(c, k->handle);
		if (!qp) {
			*reason = WEFT_R_QP_INVALID;
			return WEFT_CMD_EINVAL;
		}
		qp_release(c, qp);
		*reason = WEFT_R_OK;
		return WEFT_CMD_OK;
	case WEFT_VCMD_ALLOC_STAG: return vq_cmd_alloc_stag(c, k, false, reason);
	case WEFT_VCMD_REG_MR: return vq_cmd_alloc_stag(c, k, true, reason);
	case WEFT_VCMD_DEREG_STAG: return vq_cmd_dereg(c, k->handle, reason);
	case WEFT_VCMD_QUERY_QP:
	case WEFT_VCMD_QUERY_CQ:
	case WEFT_VCMD_QUERY_TPT:
	case WEFT_VCMD_QUERY_PD:
		return cmd_query(c, k, resp, reason);
	case WEFT_VCMD_SET_GID:
	case WEFT_VCMD_CLEAR_GID:
	case WEFT_VCMD_QUERY_GID:
		return vq_cmd_gid(c, k, reason);
	case WEFT_VCMD_CREATE_SRQ:
	case WEFT_VCMD_MODIFY_SRQ:
	case WEFT_VCMD_QUERY_SRQ:
	case WEFT_VCMD_DESTROY_SRQ:
		return vq_cmd_srq(c, k, reason);
	default:
		*reason = WEFT_R_BAD_TYPE;
		return WEFT_CMD_EINVAL;
	}
}

void weft_verbs_cmd(struct weft_core *c, uint64_t addr)
{
	struct weft_verbs *v = c->verbs;
	struct weft_vcmd k;
	struct weft_vcmd_resp resp;
	unsigned int status, reason = WEFT_R_OK;
	struct weft_trace t = { .kind = WEFT_TR_CMD, .window = WEFT_NO_WINDOW, .val = addr };

	memset(&resp, 0, sizeof(resp));
	weft_count(c, WEFT_CNT_V_CMDS, 1);
	if ((addr & 63) || weft_dma_read(c, addr, &k, sizeof(k)) != 0) {
		v->cmd_status = WEFT_CMD_EFAULT;
		weft_count(c, WEFT_CNT_CMD_DISCARDED, 1);
		t.name = "VERBS_CMD";
		t.size = WEFT_CMD_EFAULT;
		t.reason = WEFT_R_DMA_ERROR;
		t.msg = "command block not in guest RAM";
		weft_trace(c, &t);
		return;
	}
	if (k.op == WEFT_VCMD_QUERY_HQ) {
		/* The matching engine's: there with or without verbs objects. */
		status = weft_match_query(c, &k, &resp, &reason);
	} else if (!v->qp) {
		status = WEFT_CMD_ENOMEM;
		reason = WEFT_R_LENGTH;
	} else {
		status = run_cmd(c, &k, &resp, &reason);
	}
	resp.status = status;
	resp.reason = reason;
	if (weft_dma_write(c, addr + sizeof(k), &resp, sizeof(resp)) != 0)
		status = WEFT_CMD_EFAULT;
	v->cmd_status = status;
	if (status != WEFT_CMD_OK)
		weft_count(c, WEFT_CNT_CMD_DISCARDED, 1);
	t.name = weft_vcmd_name(k.op);
	t.size = status;
	t.reason = reason;
	t.addr = k.handle;
	if (status != WEFT_CMD_OK)
		t.msg = "verbs command refused";
	weft_trace(c, &t);
}

/* ---- UAR doorbells --------------------------------------------------------- */

static void db_refuse(struct weft_core *c, const char *name, uint64_t val, unsigned int reason)
{
	struct weft_trace t = {
		.kind = WEFT_TR_CMD, .name = name, .val = val, .reason = reason,
		.size = WEFT_CMD_ESTATE, .window = WEFT_NO_WINDOW,
		.msg = "doorbell discarded",
	};

	weft_count(c, WEFT_CNT_CMD_DISCARDED, 1);
	weft_count(c, WEFT_CNT_DROP(reason), 1);
	weft_trace(c, &t);
}

static void wq_doorbell(struct weft_core *c, uint32_t uar, uint64_t reg, const char *name,
			uint64_t val)
{
	struct vq_qp *qp = vq_qp(c, WEFT_UAR_OBJ(val));
	uint32_t idx = WEFT_UAR_IDX(val), *prod, ci, log2;

	if (!c->verbs->qp || !qp) {
		db_refuse(c, name, val, WEFT_R_QP_INVALID);
		return;
	}
	if (qp->uar != uar) {
		db_refuse(c, name, val, WEFT_R_UAR_MISMATCH);
		return;
	}
	if (qp->state == WEFT_VQPS_RESET) {
		db_refuse(c, name, val, WEFT_R_QP_STATE);
		return;
	}
	if (reg == WEFT_UAR_RQ_DB && qp->srq) {
		db_refuse(c, name, val, WEFT_R_SRQ_INVALID);  /* its receives are the SRQ's */
		return;
	}
	if (reg == WEFT_UAR_SQ_DB) {
		prod = &qp->sq_prod;
		ci = qp->sq_ci;
		log2 = qp->sq_log2;
	} else {
		prod = &qp->rq_prod;
		ci = qp->rq_ci;
		log2 = qp->rq_log2;
	}
	if ((int32_t)(idx - *prod) < 0 || idx - ci > (1u << log2)) {
		weft_guest_error(c, "%s: qp %u: producer %u outside [%u, %u]", name,
				 WEFT_UAR_OBJ(val), idx, *prod, ci + (1u << log2));
		db_refuse(c, name, val, WEFT_R_BAD_WQE);
		return;
	}
	*prod = idx;
	if (qp->state == WEFT_VQPS_ERR || (reg == WEFT_UAR_SQ_DB && qp->state == WEFT_VQPS_SQE))
		qp->flushing = true;
	vq_work(c, qp);
}

void weft_verbs_uar_write(struct weft_core *c, uint64_t off, uint64_t val)
{
	struct weft_verbs *v = c->verbs;
	uint32_t uar = (uint32_t)(off / WEFT_DB_PAGE_SIZE);
	uint64_t reg = off % WEFT_DB_PAGE_SIZE;
	const char *name = weft_uar_name(reg);

	weft_count(c, WEFT_CNT_V_DOORBELLS, 1);
	if (uar >= v->nr_uar || !name) {
		weft_guest_error(c, "UAR: write to unknown offset 0x%llx",
				 (unsigned long long)off);
		return;
	}
	if (reg == WEFT_UAR_CQ_ARM) {
		uint32_t cqn = WEFT_UAR_OBJ(val);

		if (cqn >= v->nr_cq || !v->cq[cqn].created) {
			db_refuse(c, name, val, WEFT_R_CQ_INVALID);
			return;
		}
		if (v->cq[cqn].uar != uar) {
			db_refuse(c, name, val, WEFT_R_UAR_MISMATCH);
			return;
		}
		vq_cq_arm(c, cqn, WEFT_UAR_FLAGS(val), WEFT_UAR_IDX(val));
		return;
	}
	if (reg == WEFT_UAR_SRQ_DB || reg == WEFT_UAR_SRQ_TM_DB) {
		unsigned int why = !v->srq ? WEFT_R_SRQ_INVALID : reg == WEFT_UAR_SRQ_DB ?
				   vq_srq_doorbell(c, uar, val) : vq_tm_doorbell(c, uar, val);

		if (why)
			db_refuse(c, name, val, why);
		return;
	}
	wq_doorbell(c, uar, reg, name, val);
}

/* ---- packets from the wire ------------------------------------------------- */

static bool rc_request(unsigned int op)
{
	return op == WEFT_VOP_SEND || op == WEFT_VOP_WRITE || op == WEFT_VOP_READ_REQ ||
	       op == WEFT_VOP_CAS || op == WEFT_VOP_FAA;
}

void weft_verbs_rx(struct weft_core *c, const struct weft_wire_hdr *wh, const uint8_t *payload,
		   size_t plen)
{
	struct weft_vhdr h;
	struct vq_qp *qp;
	uint32_t dlen;

	if (plen < sizeof(h)) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_BAD_HEADER);
		return;
	}
	memcpy(&h, payload, sizeof(h));
	if (plen - sizeof(h) > WEFT_VERBS_MTU +
	    (h.opcode == WEFT_VOP_UD_SEND ? sizeof(struct weft_vaddr) : 0)) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_BAD_HEADER);
		return;
	}
	dlen = (uint32_t)(plen - sizeof(h));
	qp = c->verbs->qp ? vq_qp(c, h.dst_qpn) : NULL;
	if (!qp) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_QP_INVALID);
		return;
	}
	if ((h.opcode == WEFT_VOP_UD_SEND) != (qp->type == WEFT_VQPT_UD) ||
	    h.opcode < WEFT_VOP_SEND || h.opcode > WEFT_VOP_UD_SEND) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_QP_TYPE);
		return;
	}
	weft_count(c, WEFT_CNT_V_RX_PKTS, 1);
	weft_count(c, WEFT_CNT_V_RX_BYTES, dlen);
	{
		struct weft_trace t = {
			.kind = WEFT_TR_PKT_RX, .hdr = wh, .len = sizeof(*wh) + plen,
			.window = WEFT_NO_WINDOW, .name = weft_vop_name(h.opcode),
		};

		weft_trace(c, &t);
	}
	if (qp->type == WEFT_VQPT_UD) {
		vq_rx_ud(c, qp, wh, &h, payload + sizeof(h), dlen);
		return;
	}
	if (wh->src_node != qp->dest_node || h.src_qpn != qp->dest_qpn ||
	    qp->state < WEFT_VQPS_RTR) {
		weft_drop(c, wh, WEFT_NO_WINDOW,
			  qp->state < WEFT_VQPS_RTR ? WEFT_R_QP_STATE : WEFT_R_QP_INVALID);
		return;
	}
	if (qp->state == WEFT_VQPS_ERR) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_QP_STATE);
		return;
	}
	if (qp->type == WEFT_VQPT_UC) {
		if (h.opcode == WEFT_VOP_SEND || h.opcode == WEFT_VOP_WRITE)
			vq_rx_uc(c, qp, wh, &h, payload + sizeof(h), dlen);
		else
			weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_QP_TYPE);
		return;
	}
	if (rc_request(h.opcode))
		vq_rx_request(c, qp, wh, &h, payload + sizeof(h), dlen);
	else
		vq_rx_response(c, qp, &h, payload + sizeof(h), dlen);
}

void weft_verbs_timer(struct weft_core *c)
{
	if (c->verbs->qp)
		vq_timers(c, c->ops.now_ns ? c->ops.now_ns(c->opaque) : 0);
}

void weft_verbs_poll_timer(struct weft_core *c)
{
	struct weft_verbs *v = c->verbs;

	if (v->qp && v->timer_armed && c->ops.now_ns &&
	    c->ops.now_ns(c->opaque) >= v->timer_armed)
		vq_timers(c, c->ops.now_ns(c->opaque));
}

/* ---- saved state (weft_state.h) ------------------------------------------------ */

/*
 * A field added to these structs is carried as it is; these sizes make a
 * change stop here so that its author checks that it is no pointer (add
 * it to the layout) nor an index used unchecked (add it to vq_state_check).
 */
WEFT_STATIC_ASSERT(sizeof(struct vq_qp) == 4296, "vq_qp changed: see weft_verbs_save");
WEFT_STATIC_ASSERT(sizeof(struct weft_verbs) == 9344, "weft_verbs changed: see weft_verbs_save");
WEFT_STATIC_ASSERT(sizeof(struct vq_cq) == 72, "vq_cq changed: see weft_verbs_save");

static const size_t vq_verbs_ptr[] = {
	offsetof(struct weft_verbs, qp), offsetof(struct weft_verbs, cq),
	offsetof(struct weft_verbs, pd), offsetof(struct weft_verbs, tpt),
	offsetof(struct weft_verbs, srq), offsetof(struct weft_verbs, tq),
	offsetof(struct weft_verbs, ctq),
};
static const size_t vq_verbs_dl[] = { offsetof(struct weft_verbs, timer_armed) };
static const struct weft_state_layout vq_verbs_lay = {
	vq_verbs_ptr, WEFT_STATE_N(vq_verbs_ptr), vq_verbs_dl, WEFT_STATE_N(vq_verbs_dl),
};
static const size_t vq_qp_ptr[] = { offsetof(struct vq_qp, sw) };
static const size_t vq_qp_dl[] = { offsetof(struct vq_qp, rto), offsetof(struct vq_qp, rnr_until) };
static const struct weft_state_layout vq_qp_lay = {
	vq_qp_ptr, WEFT_STATE_N(vq_qp_ptr), vq_qp_dl, WEFT_STATE_N(vq_qp_dl),
};
static const size_t vq_cq_dl[] = { offsetof(struct vq_cq, mod_due) };
static const struct weft_state_layout vq_cq_lay = {
	NULL, 0, vq_cq_dl, WEFT_STATE_N(vq_cq_dl),
};

void weft_verbs_save(const struct weft_core *c, struct weft_state_w *w)
{
	const struct weft_verbs *v = c->verbs;
	uint32_t i, n = 0;

	weft_state_put_struct(w, "weft_verbs", v, sizeof(*v), &vq_verbs_lay);
	weft_state_put_table(w, "vq_qp", v->qp, v->qp ? v->nr_qp : 0, sizeof(*v->qp), &vq_qp_lay);
	weft_state_put_table(w, "vq_cq", v->cq, v->cq ? v->nr_cq : 0, sizeof(*v->cq), &vq_cq_lay);
	weft_state_put_table(w, "vq_pd", v->pd, v->pd ? v->nr_pd : 0, sizeof(*v->pd), NULL);
	weft_state_put_table(w, "vq_tpt", v->tpt, v->tpt ? v->nr_tpt : 0, sizeof(*v->tpt), NULL);
	weft_state_put_table(w, "vq_srq", v->srq, v->srq ? v->nr_srq : 0, sizeof(*v->srq), NULL);
	weft_state_put_table(w, "vq_tq", v->tq, v->ntq, sizeof(*v->tq), NULL);
	weft_state_put_table(w, "vq_ctq", v->ctq, v->nctq, sizeof(*v->ctq), NULL);
	for (i = 0; v->qp && i < v->nr_qp; i++)
		n += v->qp[i].sw != NULL;
	weft_state_put_u32(w, n);
	for (i = 0; v->qp && i < v->nr_qp; i++) {
		if (!v->qp[i].sw)
			continue;
		weft_state_put_u32(w, i);
		weft_state_put(w, v->qp[i].sw, sizeof(*v->qp[i].sw) << v->qp[i].sq_log2);
	}
}

static bool vq_idx(uint32_t x, uint32_t n)
{
	return x < n || x == VQ_NONE;
}

/* The flags of the loaded tables hold 0 or 1, before any is read. */
static bool vq_state_bools(struct weft_core *c, struct weft_state_r *r)
{
	struct weft_verbs *v = c->verbs;

	if (!WEFT_STATE_BOOLS(r, "verbs", v, 1, struct weft_verbs,
			      offsetof(struct weft_verbs, used), offsetof(struct weft_verbs, pend)) ||
	    !WEFT_STATE_BOOLS(r, "GID", v->gid, WEFT_VERBS_GID_TBL, struct vq_gid,
			      offsetof(struct vq_gid, valid)) ||
	    !WEFT_STATE_BOOLS(r, "QP", v->qp, v->nr_qp, struct vq_qp,
			      offsetof(struct vq_qp, created), offsetof(struct vq_qp, cur_valid),
			      offsetof(struct vq_qp, rcur_valid), offsetof(struct vq_qp, rcv_active),
			      offsetof(struct vq_qp, uc_drop), offsetof(struct vq_qp, last_wqe),
			      offsetof(struct vq_qp, nak_sent), offsetof(struct vq_qp, ack_owed),
			      offsetof(struct vq_qp, ack_now), offsetof(struct vq_qp, in_tq),
			      offsetof(struct vq_qp, in_work), offsetof(struct vq_qp, flushing)) ||
	    !WEFT_STATE_BOOLS(r, "CQ", v->cq, v->nr_cq, struct vq_cq,
			      offsetof(struct vq_cq, created), offsetof(struct vq_cq, error),
			      offsetof(struct vq_cq, in_tq)) ||
	    !WEFT_STATE_BOOLS(r, "PD", v->pd, v->nr_pd, struct vq_pd,
			      offsetof(struct vq_pd, created)) ||
	    !WEFT_STATE_BOOLS(r, "TPT entry", v->tpt, v->nr_tpt, struct vq_tpt,
			      offsetof(struct vq_tpt, registered_once)) ||
	    !WEFT_STATE_BOOLS(r, "SRQ", v->srq, v->nr_srq, struct vq_srq,
			      offsetof(struct vq_srq, created), offsetof(struct vq_srq, tm_queued)))
		return false;
	return true;
}

/* The indexes and lengths of the loaded tables that the engine uses
 * without checking them again. */
static bool vq_state_check(struct weft_core *c, struct weft_state_r *r)
{
	struct weft_verbs *v = c->verbs;
	uint32_t i, k;

	if (!vq_idx(v->work_head, v->nr_qp) || !vq_idx(v->work_tail, v->nr_qp) ||
	    !vq_idx(v->tm_head, v->nr_srq) || !vq_idx(v->tm_tail, v->nr_srq) ||
	    v->pend_len > WEFT_WIRE_MAX_FRAME || v->ntq > v->nr_qp)
		return weft_state_fail(r, "verbs: work lists or pending packet out of range");
	for (i = 0; i < v->ntq; i++)
		if (!v->tq[i] || v->tq[i] >= v->nr_qp)
			return weft_state_fail(r, "verbs: timer QP %u", v->tq[i]);
	for (i = 0; i < v->nctq; i++)
		if (v->ctq[i] >= v->nr_cq)
			return weft_state_fail(r, "verbs: timer CQ %u", v->ctq[i]);
	for (i = 0; i < v->nr_qp; i++) {
		const struct vq_qp *q = &v->qp[i];

		if (!q->created) {
			if (q->sw)
				return weft_state_fail(r, "verbs: QP %u not created has SQ state", i);
			continue;
		}
		if (!q->sw || q->pd >= v->nr_pd || q->scq >= v->nr_cq || q->rcq >= v->nr_cq ||
		    q->srq >= v->nr_srq || q->uar >= v->nr_uar ||
		    q->sq_log2 > WEFT_VERBS_WQ_MAX_LOG2 || q->rq_log2 > WEFT_VERBS_WQ_MAX_LOG2 ||
		    q->sq_stride > 9 || q->rq_stride > 9 ||
		    !vq_idx(q->work_next, v->nr_qp) || q->rrq_head >= WEFT_VERBS_MAX_RD_ATOMIC ||
		    q->rrq_count > WEFT_VERBS_MAX_RD_ATOMIC || q->atom_next >= VQ_ATOMIC_CACHE ||
		    q->cur.h.num_sge > VQ_MAX_SGE || q->rcur.h.num_sge > VQ_MAX_SGE ||
		    q->rcv.h.num_sge > VQ_MAX_SGE || q->cur.inl_len > WEFT_VERBS_MAX_INLINE ||
		    q->rcur.inl_len > WEFT_VERBS_MAX_INLINE)
			return weft_state_fail(r, "verbs: QP %u has an index out of range", i);
		if (q->tm_kind > VQ_TM_RNDV_SW_SPLIT)
			return weft_state_fail(r, "verbs: QP %u message kind %u", i, q->tm_kind);
		for (k = 0; k < WEFT_VERBS_TM_RNDV_MAX; k++)
			if (q->rvh[k].phase > VQ_RVH_FIN)
				return weft_state_fail(r, "verbs: QP %u rendezvous %u phase %u", i, k,
						       q->rvh[k].phase);
		for (k = 0; k < VQ_TOUCHED; k++)
			if (q->touched[k] > v->nr_tpt)
				return weft_state_fail(r, "verbs: QP %u touched entry %u", i,
						       q->touched[k]);
	}
	for (i = 0; i < v->nr_cq; i++) {
		const struct vq_cq *q = &v->cq[i];

		if (q->created && (q->log2 > WEFT_VERBS_CQ_MAX_LOG2 || q->uar >= v->nr_uar ||
				   q->vector >= WEFT_MAX_HANDLERS ||
				   q->mod_period > WEFT_VERBS_CQ_MOD_MAX_US))
			return weft_state_fail(r, "verbs: CQ %u has an index out of range", i);
	}
	for (i = 0; i < v->nr_srq; i++) {
		const struct vq_srq *q = &v->srq[i];

		if (q->created && (q->log2 > WEFT_VERBS_WQ_MAX_LOG2 || q->stride > 9 ||
				   q->pd >= v->nr_pd || q->uar >= v->nr_uar ||
				   q->tm_cq >= v->nr_cq || q->tm_queue >= WEFT_MATCH_NR_QUEUES ||
				   q->tm_log2 > WEFT_VERBS_TM_OPS_LOG2 ||
				   !vq_idx(q->tm_next, v->nr_srq)))
			return weft_state_fail(r, "verbs: SRQ %u has an index out of range", i);
	}
	return true;
}

bool weft_verbs_load(struct weft_core *c, struct weft_state_r *r)
{
	struct weft_verbs *v = c->verbs;
	uint32_t n[6] = { v->nr_qp, v->nr_cq, v->nr_pd, v->nr_tpt, v->nr_uar, v->nr_srq };
	uint32_t i, nsw, qpn = 0, prev = 0;

	if (!v->qp)
		return weft_state_fail(r, "verbs: no tables to load into (out of memory)");
	if (!weft_state_get_struct(r, "weft_verbs", v, sizeof(*v), &vq_verbs_lay))
		return false;
	if (v->nr_qp != n[0] || v->nr_cq != n[1] || v->nr_pd != n[2] || v->nr_tpt != n[3] ||
	    v->nr_uar != n[4] || v->nr_srq != n[5])
		return weft_state_fail(r, "verbs: table sizes differ from this adapter's");
	v->sw_bytes = 0;
	if (v->ntq > v->nr_qp)
		return weft_state_fail(r, "verbs: %u timer QPs", v->ntq);
	if (v->nctq > v->nr_cq)
		return weft_state_fail(r, "verbs: %u timer CQs", v->nctq);
	if (!weft_state_get_table(r, "vq_qp", v->qp, v->nr_qp, sizeof(*v->qp), &vq_qp_lay) ||
	    !weft_state_get_table(r, "vq_cq", v->cq, v->nr_cq, sizeof(*v->cq), &vq_cq_lay) ||
	    !weft_state_get_table(r, "vq_pd", v->pd, v->nr_pd, sizeof(*v->pd), NULL) ||
	    !weft_state_get_table(r, "vq_tpt", v->tpt, v->nr_tpt, sizeof(*v->tpt), NULL) ||
	    !weft_state_get_table(r, "vq_srq", v->srq, v->nr_srq, sizeof(*v->srq), NULL) ||
	    !weft_state_get_table(r, "vq_tq", v->tq, v->ntq, sizeof(*v->tq), NULL) ||
	    !weft_state_get_table(r, "vq_ctq", v->ctq, v->nctq, sizeof(*v->ctq), NULL) ||
	    !vq_state_bools(c, r) || !weft_state_get_u32(r, &nsw))
		return false;
	for (i = 0; i < nsw; i++) {
		struct vq_qp *q;
		size_t bytes;

		if (!weft_state_get_u32(r, &qpn))
			return false;
		if (qpn >= v->nr_qp || (i && qpn <= prev) || !v->qp[qpn].created ||
		    v->qp[qpn].sq_log2 > WEFT_VERBS_WQ_MAX_LOG2)
			return weft_state_fail(r, "verbs: SQ state of QP %u", qpn);
		prev = qpn;
		q = &v->qp[qpn];
		bytes = sizeof(*q->sw) << q->sq_log2;
		if (v->sw_bytes + bytes > VQ_BUDGET)
			return weft_state_fail(r, "verbs: SQ state over the budget");
		q->sw = malloc(bytes);
		if (!q->sw)
			return weft_state_fail(r, "out of memory");
		v->sw_bytes += bytes;
		if (!weft_state_get(r, q->sw, bytes))
			return false;
	}
	return vq_state_check(c, r);
}
