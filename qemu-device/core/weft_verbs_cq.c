/* SPDX-License-Identifier: MIT */
/*
 * Weft verbs engine: completion queues: CQE writing (body first, owner
 * byte last), overflow, arming for the next or a solicited completion,
 * the event + MSI-X vector that an armed CQ raises, and its moderation
 * (MODIFY_CQ) (docs/hw-spec.md 16.7).
 */
#include <string.h>

#include "weft_verbs_int.h"

void vq_cq_error(struct weft_core *c, uint32_t cqn, struct vq_cq *cq, unsigned int reason)
{
	if (!cq->error)
		vq_async(c, cqn, WEFT_VASYNC_CQ_ERR, reason, cq->vector);
	cq->error = true;
}

/* The armed CQ raises its event; the arm and the held CQEs are spent. */
static void cq_event(struct weft_core *c, uint32_t cqn, struct vq_cq *cq)
{
	cq->arm = 0;
	cq->mod_cqes = 0;
	cq->mod_due = 0;
	weft_count(c, WEFT_CNT_V_CQ_EVENTS, 1);
	weft_event_vec(c, WEFT_EV_VERBS_CQ, cq->vector, cqn, 0, cq->prod);
}

/*
 * A CQE matched the arm of a moderated CQ: the event goes out at the
 * mod_count-th such CQE, or mod_period us after the first (the CQ joins
 * the timer list), whichever comes first.  Without a clock the period
 * cannot run and the event goes out at once.
 */
static void cq_moderate(struct weft_core *c, uint32_t cqn, struct vq_cq *cq)
{
	struct weft_verbs *v = c->verbs;

	cq->mod_cqes++;
	if (cq->mod_count && cq->mod_cqes >= cq->mod_count) {
		cq_event(c, cqn, cq);
		return;
	}
	if (cq->mod_cqes > 1)
		return;
	if (cq->mod_period && !c->ops.now_ns) {
		cq_event(c, cqn, cq);
		return;
	}
	weft_count(c, WEFT_CNT_V_CQ_HELD, 1);
	if (!cq->mod_period)
		return;
	cq->mod_due = c->ops.now_ns(c->opaque) + cq->mod_period * 1000ull;
	if (!cq->in_tq && v->nctq < v->nr_cq) {
		v->ctq[v->nctq++] = cqn;
		cq->in_tq = true;
	}
	vq_timer_arm(c, cq->mod_due);
}

uint64_t vq_cq_timers(struct weft_core *c, uint64_t now)
{
	struct weft_verbs *v = c->verbs;
	uint64_t next = 0;
	uint32_t i, j;

	for (i = 0, j = 0; i < v->nctq; i++) {
		uint32_t cqn = v->ctq[i];
		struct vq_cq *cq = &v->cq[cqn];

		if (cq->created && cq->mod_due && now >= cq->mod_due)
			cq_event(c, cqn, cq);
		if (!cq->created || !cq->mod_due) {
			cq->in_tq = false;
			continue;
		}
		v->ctq[j++] = cqn;
		if (!next || cq->mod_due < next)
			next = cq->mod_due;
	}
	v->nctq = j;
	return next;
}

/*
 * MODIFY_CQ: the moderation of the CQ's next events.  An event the old
 * values held goes out now (as a write of INT_MOD releases a held
 * interrupt), so the new values start with the next arm.
 */
unsigned int vq_cmd_modify_cq(struct weft_core *c, const struct weft_vcmd *k,
			      unsigned int *reason)
{
	struct weft_verbs *v = c->verbs;
	struct vq_cq *cq;

	*reason = WEFT_R_CQ_INVALID;
	if (k->handle >= v->nr_cq || !v->cq[k->handle].created)
		return WEFT_CMD_EINVAL;
	cq = &v->cq[k->handle];
	if (k->u.cq_mod.uar != cq->uar) {
		*reason = WEFT_R_UAR_MISMATCH;
		return WEFT_CMD_EINVAL;
	}
	if (k->u.cq_mod.count > WEFT_VERBS_CQ_MOD_MAX_COUNT ||
	    k->u.cq_mod.period_us > WEFT_VERBS_CQ_MOD_MAX_US) {
		*reason = WEFT_R_CQ_MODERATION;
		return WEFT_CMD_EINVAL;
	}
	cq->mod_count = (uint16_t)k->u.cq_mod.count;
	cq->mod_period = (uint16_t)k->u.cq_mod.period_us;
	if (cq->mod_cqes)
		cq_event(c, k->handle, cq);
	*reason = WEFT_R_OK;
	return WEFT_CMD_OK;
}

bool vq_cqe(struct weft_core *c, uint32_t cqn, struct weft_vcqe *e, bool solicited)
{
	struct weft_verbs *v = c->verbs;
	struct vq_cq *cq;
	uint32_t size, slot;
	uint64_t addr;
	uint8_t owner;

	if (cqn >= v->nr_cq || !v->cq[cqn].created || v->cq[cqn].error) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_CQ_INVALID);
		return false;
	}
	cq = &v->cq[cqn];
	size = 1u << cq->log2;
	if (cq->prod - cq->ci >= size) {
		uint32_t ci;

		/* Looks full: read the driver's consumer index. */
		if (weft_dma_read(c, cq->ci_addr, &ci, 4) == 0 &&
		    cq->prod - ci <= size)
			cq->ci = ci;
		if (cq->prod - cq->ci >= size) {
			weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_CQ_OVERFLOW);
			vq_cq_error(c, cqn, cq, WEFT_R_CQ_OVERFLOW);
			return false;
		}
	}
	slot = cq->prod & (size - 1);
	addr = cq->ring + (uint64_t)slot * sizeof(*e);
	owner = (uint8_t)(((cq->prod >> cq->log2) & 1) ^ 1);
	e->owner = 0;
	if (weft_dma_write(c, addr, e, offsetof(struct weft_vcqe, owner)) != 0 ||
	    weft_dma_write(c, addr + offsetof(struct weft_vcqe, owner), &owner, 1) != 0) {
		vq_cq_error(c, cqn, cq, WEFT_R_DMA_ERROR);
		return false;
	}
	cq->prod++;
	weft_count(c, WEFT_CNT_V_CQES, 1);
	if (e->status != WEFT_VWC_SUCCESS)
		weft_count(c, WEFT_CNT_V_CQE_ERRORS, 1);
	if (cq->arm == WEFT_CQ_ARM_NEXT ||
	    (cq->arm == WEFT_CQ_ARM_SOLICITED && (solicited || e->status != WEFT_VWC_SUCCESS))) {
		if (cq->mod_count || cq->mod_period)
			cq_moderate(c, cqn, cq);
		else
			cq_event(c, cqn, cq);
	}
	return true;
}

void vq_cq_arm(struct weft_core *c, uint32_t cqn, unsigned int flags, uint32_t ci)
{
	struct vq_cq *cq = &c->verbs->cq[cqn];

	if (flags != WEFT_CQ_ARM_NEXT && flags != WEFT_CQ_ARM_SOLICITED) {
		weft_guest_error(c, "CQ_ARM: cq %u: bad flags 0x%x", cqn, flags);
		return;
	}
	if (cq->prod - ci <= (1u << cq->log2))
		cq->ci = ci;
	/* NEXT overrides SOLICITED, as on IB. */
	if (cq->arm != WEFT_CQ_ARM_NEXT)
		cq->arm = (uint8_t)flags;
}
