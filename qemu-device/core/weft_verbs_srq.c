/* SPDX-License-Identifier: MIT */
/*
 * Weft verbs engine: shared receive queues (docs/hw-spec.md 16.14).  An
 * SRQ is a ring of receive WQEs in guest memory; the QPs attached to it
 * take WQEs in ring order, one per incoming message, and the adapter
 * publishes its consumer index at ci_addr.  The limit event fires once
 * when the WQEs left fall below the armed limit.
 */
#include <string.h>

#include "weft_match.h"
#include "weft_verbs_int.h"

struct vq_srq *vq_srq(struct weft_core *c, uint32_t srqn)
{
	struct weft_verbs *v = c->verbs;

	if (!v->srq || srqn == 0 || srqn >= v->nr_srq || !v->srq[srqn].created)
		return NULL;
	return &v->srq[srqn];
}

static void limit_check(struct weft_core *c, struct vq_srq *s, uint32_t srqn)
{
	if (s->limit && s->prod - s->ci < s->limit) {
		s->limit = 0;
		vq_async(c, srqn, WEFT_VASYNC_SRQ_LIMIT, WEFT_R_OK, s->vector);
	}
}

bool vq_srq_empty(struct weft_core *c, uint32_t srqn)
{
	struct vq_srq *s = vq_srq(c, srqn);

	return !s || s->ci == s->prod;
}

unsigned int vq_srq_take(struct weft_core *c, struct vq_qp *qp, struct vq_rwqe *r)
{
	struct vq_srq *s = vq_srq(c, qp->srq);
	unsigned int why;
	uint32_t ci;

	if (!s || s->ci == s->prod)
		return WEFT_R_RNR;
	why = vq_rwqe_read(c, qp, s->ring + ((uint64_t)(s->ci & ((1u << s->log2) - 1)) << s->stride),
			   s->stride, s->ci, r);
	ci = ++s->ci;
	if (weft_dma_write(c, s->ci_addr, &ci, sizeof(ci)) != 0)
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_DMA_ERROR);
	limit_check(c, s, qp->srq);
	return why;
}

void vq_srq_detach(struct weft_core *c, uint32_t srqn)
{
	struct vq_srq *s = vq_srq(c, srqn);

	if (s && s->refs)
		s->refs--;
}

unsigned int vq_srq_attach(struct weft_core *c, uint32_t srqn, uint32_t pd, unsigned int qpflags)
{
	struct vq_srq *s = vq_srq(c, srqn);

	if (!s || s->pd != pd ||
	    !(qpflags & WEFT_VQPF_PRIV) != !(s->flags & WEFT_VSRQF_PRIV))
		return WEFT_R_SRQ_INVALID;
	s->refs++;
	return WEFT_R_OK;
}

static void dump(const struct weft_core *c, const struct vq_srq *s, uint32_t srqn,
		 struct weft_vsrqc *d)
{
	memset(d, 0, sizeof(*d));
	d->srqn = srqn;
	d->created = s->created;
	d->log2 = s->log2;
	d->stride_log2 = s->stride;
	d->flags = s->flags;
	d->ring_addr = s->ring;
	d->ci_addr = s->ci_addr;
	d->prod = s->prod;
	d->ci = s->ci;
	d->pd = s->pd;
	d->uar = s->uar;
	d->vector = s->vector;
	d->limit = s->limit;
	d->refs = s->refs;
	if (s->flags & WEFT_VSRQF_TM) {
		d->tm_queue = s->tm_queue;
		d->tm_tags = (uint16_t)weft_match_tm_count(c, s->tm_queue);
		d->tm_unexpected = weft_match_tm_seq(c, s->tm_queue);
		d->tm_sw = s->tm_sw;
	}
}

static unsigned int create(struct weft_core *c, struct vq_srq *s, const struct weft_vcmd *k,
			   unsigned int *reason)
{
	struct weft_verbs *v = c->verbs;

	if (s->created)
		return WEFT_CMD_EBUSY;
	if (k->u.srq.pd >= v->nr_pd || !v->pd[k->u.srq.pd].created ||
	    k->u.srq.uar >= v->nr_uar || k->u.srq.vector >= c->cfg.nr_handlers ||
	    k->u.srq.log2 > WEFT_VERBS_WQ_MAX_LOG2 ||
	    k->u.srq.stride_log2 < 5 || k->u.srq.stride_log2 > 9 ||
	    (k->u.srq.flags & ~(WEFT_VSRQF_PRIV | WEFT_VSRQF_TM)) || (k->u.srq.ci_addr & 3) ||
	    k->u.srq.limit > (1u << k->u.srq.log2))
		return WEFT_CMD_EINVAL;
	if (!vq_ring_ok(c, k->u.srq.ring_addr, 1ull << (k->u.srq.log2 + k->u.srq.stride_log2)) ||
	    !vq_ring_ok(c, k->u.srq.ci_addr & ~63ull, 64)) {
		*reason = WEFT_R_DMA_ERROR;
		return WEFT_CMD_EFAULT;
	}
	memset(s, 0, sizeof(*s));
	s->created = true;
	s->log2 = k->u.srq.log2;
	s->stride = k->u.srq.stride_log2;
	s->flags = k->u.srq.flags;
	s->ring = k->u.srq.ring_addr;
	s->ci_addr = k->u.srq.ci_addr;
	s->pd = k->u.srq.pd;
	s->uar = k->u.srq.uar;
	s->vector = k->u.srq.vector;
	s->limit = k->u.srq.limit;
	if (s->flags & WEFT_VSRQF_TM) {
		*reason = vq_tm_create(c, s, k);
		if (*reason) {
			memset(s, 0, sizeof(*s));
			return *reason == WEFT_R_DMA_ERROR ? WEFT_CMD_EFAULT :
			       *reason == WEFT_R_TM_NO_QUEUE ? WEFT_CMD_EBUSY : WEFT_CMD_EINVAL;
		}
	}
	v->pd[s->pd].refs++;
	*reason = WEFT_R_OK;
	return WEFT_CMD_OK;
}

unsigned int vq_cmd_srq(struct weft_core *c, const struct weft_vcmd *k, unsigned int *reason)
{
	struct weft_verbs *v = c->verbs;
	struct weft_vsrqc d;
	struct vq_srq *s;

	*reason = WEFT_R_SRQ_INVALID;
	if (k->handle == 0 || k->handle >= v->nr_srq)
		return WEFT_CMD_EINVAL;
	s = &v->srq[k->handle];
	if (k->op == WEFT_VCMD_CREATE_SRQ)
		return create(c, s, k, reason);
	if (!s->created)
		return WEFT_CMD_ESTATE;
	switch (k->op) {
	case WEFT_VCMD_MODIFY_SRQ:
		if (k->u.srq.limit > (1u << s->log2)) {
			*reason = WEFT_R_LENGTH;
			return WEFT_CMD_EINVAL;
		}
		s->limit = k->u.srq.limit;
		limit_check(c, s, k->handle);
		break;
	case WEFT_VCMD_QUERY_SRQ:
		dump(c, s, k->handle, &d);
		if (weft_dma_write(c, k->u.query.addr, &d, sizeof(d)) != 0) {
			*reason = WEFT_R_DMA_ERROR;
			return WEFT_CMD_EFAULT;
		}
		break;
	default: /* DESTROY_SRQ */
		if (s->refs) {
			*reason = WEFT_R_STAG_BUSY;
			return WEFT_CMD_EBUSY;
		}
		if (v->pd[s->pd].refs)
			v->pd[s->pd].refs--;
		if (s->flags & WEFT_VSRQF_TM)
			vq_tm_destroy(c, s);
		memset(s, 0, sizeof(*s));
		break;
	}
	*reason = WEFT_R_OK;
	return WEFT_CMD_OK;
}

unsigned int vq_srq_doorbell(struct weft_core *c, uint32_t uar, uint64_t val)
{
	struct vq_srq *s = vq_srq(c, WEFT_UAR_OBJ(val));
	uint32_t idx = WEFT_UAR_IDX(val);

	if (!s)
		return WEFT_R_SRQ_INVALID;
	if (s->uar != uar)
		return WEFT_R_UAR_MISMATCH;
	if ((int32_t)(idx - s->prod) < 0 || idx - s->ci > (1u << s->log2)) {
		weft_guest_error(c, "SRQ_DB: srq %u: producer %u outside [%u, %u]",
				 WEFT_UAR_OBJ(val), idx, s->prod, s->ci + (1u << s->log2));
		return WEFT_R_BAD_WQE;
	}
	s->prod = idx;
	return WEFT_R_OK;
}

bool weft_core_verbs_srq(const struct weft_core *c, uint32_t srqn, struct weft_vsrqc *q)
{
	const struct weft_verbs *v = c->verbs;

	if (!v->srq || srqn >= v->nr_srq)
		return false;
	dump(c, &v->srq[srqn], srqn, q);
	return true;
}
