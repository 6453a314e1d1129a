/* SPDX-License-Identifier: MIT */
/*
 * Weft verbs engine: completion queues: CQE writing (body first, owner
 * byte last), overflow, arming for the next or a solicited completion and
 * the event + MSI-X vector that an armed CQ raises (docs/hw-spec.md 16.7).
 */
#include <string.h>

#include "weft_verbs_int.h"

void vq_cq_error(struct weft_core *c, uint32_t cqn, struct vq_cq *cq, unsigned int reason)
{
	if (!cq->error)
		vq_async(c, cqn, WEFT_VASYNC_CQ_ERR, reason, cq->vector);
	cq->error = true;
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
		cq->arm = 0;
		weft_count(c, WEFT_CNT_V_CQ_EVENTS, 1);
		weft_event_vec(c, WEFT_EV_VERBS_CQ, cq->vector, cqn, 0, cq->prod);
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
