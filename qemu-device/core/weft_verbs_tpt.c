/* SPDX-License-Identifier: MIT */
/*
 * Weft verbs engine: the memory TPT (seed 002): STag lookup, the
 * protection checks a-g, address translation through direct, one- and
 * two-level ATTs, registration, invalidation, window binding and
 * one-touch windows (docs/hw-spec.md 16.5).
 */
#include <string.h>

#include "weft_verbs_int.h"

static struct vq_tpt *tpt_lookup(struct weft_core *c, uint32_t stag, unsigned int *why)
{
	struct weft_verbs *v = c->verbs;
	uint32_t idx = WEFT_STAG_INDEX(stag);
	struct vq_tpt *t;

	if (idx >= v->nr_tpt || v->tpt[idx].e.type == WEFT_TPT_FREE) {
		*why = WEFT_R_STAG_INDEX;
		return NULL;
	}
	t = &v->tpt[idx];
	if (WEFT_STAG_INSTANCE(t->e.stag) != WEFT_STAG_INSTANCE(stag)) {
		*why = WEFT_R_STAG_INSTANCE;
		return NULL;
	}
	*why = WEFT_R_OK;
	return t;
}

static bool in_bounds(const struct weft_tpt_entry *e, uint64_t va, uint64_t len)
{
	return va >= e->va && va - e->va <= e->length && len <= e->length - (va - e->va);
}

/* The region behind a window, checked again at each use. */
static struct vq_tpt *window_region(struct weft_core *c, const struct vq_tpt *w,
				    unsigned int *why)
{
	struct vq_tpt *r = tpt_lookup(c, w->e.parent, why);

	if (!r)
		return NULL;
	if (r->e.type != WEFT_TPT_MR || !(r->e.flags & WEFT_TPTF_VALID)) {
		*why = WEFT_R_STAG_INVALID;
		return NULL;
	}
	return r;
}

unsigned int vq_tpt_check(struct weft_core *c, uint32_t pd, uint32_t qpn, uint32_t stag,
			  uint64_t va, uint64_t len, unsigned int need, bool remote,
			  bool priv)
{
	unsigned int why;
	struct vq_tpt *t = tpt_lookup(c, stag, &why);
	const struct weft_tpt_entry *e;

	if (!t)
		return why;
	e = &t->e;
	if (!(e->flags & WEFT_TPTF_VALID))
		return WEFT_R_STAG_INVALID;
	if (!remote && e->type != WEFT_TPT_MR)
		return WEFT_R_STAG_TYPE;        /* local segments name regions */
	if (remote && e->type == WEFT_TPT_MR && !(e->access & WEFT_VACC_REMOTE))
		return WEFT_R_STAG_TYPE;        /* a region without remote rights */
	if (e->pd != pd)
		return WEFT_R_PD_MISMATCH;
	if (e->type == WEFT_TPT_MW2 && e->qpn != qpn)
		return WEFT_R_PD_MISMATCH;
	if (!in_bounds(e, va, len))
		return WEFT_R_BOUNDS;
	if ((e->access & need) != need)
		return WEFT_R_ACCESS;
	if (e->att_level == WEFT_ATT_PHYS && e->type == WEFT_TPT_MR && !priv)
		return WEFT_R_ACCESS;
	if (e->type != WEFT_TPT_MR) {
		struct vq_tpt *r = window_region(c, t, &why);

		if (!r)
			return why;
		if (!in_bounds(&r->e, va, len))
			return WEFT_R_BOUNDS;
	}
	return WEFT_R_OK;
}

/* Read u64 entry i of the table at addr; false if not guest RAM. */
static bool att_get(struct weft_core *c, uint64_t addr, uint64_t i, uint64_t *out)
{
	return weft_dma_read(c, addr + i * 8, out, 8) == 0;
}

/* Guest-physical address of byte off (from the start of page 0's first
 * byte, first_offset included) of a region.  Returns a reason. */
static unsigned int att_page(struct weft_core *c, const struct weft_tpt_entry *e,
			     uint64_t page, uint64_t *pa)
{
	uint64_t a = e->att_addr, x;

	switch (e->att_level) {
	case WEFT_ATT_DIRECT:
		break;
	case WEFT_ATT_IND1:
		if (!att_get(c, a, page / WEFT_ATT_FANOUT, &x) || (x & 7))
			return WEFT_R_ATT;
		a = x;
		page %= WEFT_ATT_FANOUT;
		break;
	case WEFT_ATT_IND2:
		if (!att_get(c, a, page / (WEFT_ATT_FANOUT * WEFT_ATT_FANOUT), &x) || (x & 7))
			return WEFT_R_ATT;
		page %= WEFT_ATT_FANOUT * WEFT_ATT_FANOUT;
		if (!att_get(c, x, page / WEFT_ATT_FANOUT, &a) || (a & 7))
			return WEFT_R_ATT;
		page %= WEFT_ATT_FANOUT;
		break;
	default:
		return WEFT_R_ATT;
	}
	if (!att_get(c, a, page, pa))
		return WEFT_R_ATT;
	return WEFT_R_OK;
}

static unsigned int region_copy(struct weft_core *c, const struct weft_tpt_entry *e,
				uint64_t va, uint8_t *buf, uint64_t len, enum vq_dir dir)
{
	uint64_t psize = 1ull << e->page_shift, first = 0, off;

	if (e->att_level == WEFT_ATT_PHYS) {
		int rc = dir == VQ_TO_MEM ? weft_dma_write(c, va, buf, len)
					  : weft_dma_read(c, va, buf, len);

		return rc ? WEFT_R_DMA_ERROR : WEFT_R_OK;
	}
	if (len) {
		uint64_t p0;
		unsigned int why = att_page(c, e, 0, &p0);

		if (why)
			return why;
		first = p0 & (psize - 1);
	}
	off = va - e->va + first;
	while (len) {
		uint64_t page = off >> e->page_shift, in = off & (psize - 1);
		uint64_t n = psize - in, pa;
		unsigned int why = att_page(c, e, page, &pa);
		int rc;

		if (why)
			return why;
		if (page && (pa & (psize - 1)))
			return WEFT_R_ATT;
		if (n > len)
			n = len;
		pa = (pa & ~(psize - 1)) + in;
		rc = dir == VQ_TO_MEM ? weft_dma_write(c, pa, buf, n) : weft_dma_read(c, pa, buf, n);
		if (rc)
			return WEFT_R_ATT;
		buf += n;
		off += n;
		len -= n;
	}
	return WEFT_R_OK;
}

unsigned int vq_tpt_copy(struct weft_core *c, uint32_t pd, uint32_t qpn, uint32_t stag,
			 uint64_t va, void *buf, uint64_t len, unsigned int need,
			 bool remote, bool priv, enum vq_dir dir)
{
	unsigned int why = vq_tpt_check(c, pd, qpn, stag, va, len, need, remote, priv);
	struct vq_tpt *t;

	if (why)
		return why;
	t = &c->verbs->tpt[WEFT_STAG_INDEX(stag)];
	if (t->e.type != WEFT_TPT_MR) {
		t = window_region(c, t, &why);
		if (!t)
			return why;
	}
	return region_copy(c, &t->e, va, buf, len, dir);
}

unsigned int vq_sge_check(struct weft_core *c, const struct vq_qp *qp,
			  const struct weft_vsge *sge, unsigned int n, unsigned int need,
			  uint64_t *total)
{
	uint64_t sum = 0;
	unsigned int i, why;

	for (i = 0; i < n; i++) {
		why = vq_tpt_check(c, qp->pd, vq_qpn(c, qp), sge[i].lkey, sge[i].addr,
				   sge[i].length, need, false, qp->flags & WEFT_VQPF_PRIV);
		if (why)
			return why;
		sum += sge[i].length;
	}
	if (sum > WEFT_VERBS_MAX_MSG)
		return WEFT_R_LENGTH;
	*total = sum;
	return WEFT_R_OK;
}

unsigned int vq_sge_copy(struct weft_core *c, const struct vq_qp *qp,
			 const struct weft_vsge *sge, unsigned int n, uint64_t off,
			 void *buf, uint64_t len, unsigned int need, enum vq_dir dir)
{
	uint8_t *p = buf;
	unsigned int i;

	for (i = 0; i < n && len; i++) {
		uint64_t l = sge[i].length, k;
		unsigned int why;

		if (off >= l) {
			off -= l;
			continue;
		}
		k = l - off < len ? l - off : len;
		why = vq_tpt_copy(c, qp->pd, vq_qpn(c, qp), sge[i].lkey, sge[i].addr + off, p, k,
				  need, false, qp->flags & WEFT_VQPF_PRIV, dir);
		if (why)
			return why;
		p += k;
		len -= k;
		off = 0;
	}
	return len ? WEFT_R_LENGTH : WEFT_R_OK;
}

/* ---- registration ------------------------------------------------------- */

static unsigned int reg_fields(const struct weft_tpt_entry *old, uint32_t stag, uint64_t va,
			       uint64_t len, uint64_t att, unsigned int access,
			       unsigned int shift, unsigned int level, bool priv)
{
	if (access & ~WEFT_VACC_ALL)
		return WEFT_R_ACCESS;
	if ((access & (WEFT_VACC_REMOTE_WRITE | WEFT_VACC_REMOTE_ATOMIC)) &&
	    !(access & WEFT_VACC_LOCAL_WRITE))
		return WEFT_R_ACCESS;   /* IB: remote write needs local write */
	if (level > WEFT_ATT_PHYS || (level == WEFT_ATT_PHYS && !priv))
		return WEFT_R_ATT;
	if (level != WEFT_ATT_PHYS && (shift < WEFT_ATT_MIN_SHIFT || shift > WEFT_ATT_MAX_SHIFT ||
				       (att & 7) || att == 0))
		return WEFT_R_ATT;
	if (va + len < va || len > (1ull << 40))
		return WEFT_R_LENGTH;
	if (old && WEFT_STAG_INSTANCE(stag) == WEFT_STAG_INSTANCE(old->stag))
		return WEFT_R_INSTANCE_REUSED;
	return WEFT_R_OK;
}

static void reg_set(struct vq_tpt *t, uint32_t stag, uint32_t pd, uint64_t va, uint64_t len,
		    uint64_t att, unsigned int access, unsigned int shift, unsigned int level)
{
	struct weft_tpt_entry *e = &t->e;

	e->stag = stag;
	e->pd = pd;
	e->type = WEFT_TPT_MR;
	e->flags = (uint8_t)((e->flags & WEFT_TPTF_FAST_REG) | WEFT_TPTF_VALID);
	e->access = (uint8_t)access;
	e->page_shift = (uint8_t)(level == WEFT_ATT_PHYS ? 12 : shift);
	e->att_level = (uint8_t)level;
	e->va = va;
	e->length = len;
	e->att_addr = att;
	e->stored_psn = 0;
	t->last_instance = (uint8_t)WEFT_STAG_INSTANCE(stag);
	t->registered_once = true;
}

unsigned int vq_cmd_alloc_stag(struct weft_core *c, const struct weft_vcmd *k, bool reg,
			       unsigned int *reason)
{
	struct weft_verbs *v = c->verbs;
	uint32_t stag = k->handle, idx = WEFT_STAG_INDEX(stag);
	struct vq_tpt *t;
	unsigned int why, type = reg ? WEFT_TPT_MR : k->u.mr.type;

	if (idx >= v->nr_tpt || k->u.mr.pd >= v->nr_pd || !v->pd[k->u.mr.pd].created ||
	    type < WEFT_TPT_MR || type > WEFT_TPT_MW2) {
		*reason = WEFT_R_STAG_INDEX;
		return WEFT_CMD_EINVAL;
	}
	t = &v->tpt[idx];
	if (t->e.type != WEFT_TPT_FREE) {
		/* REG_MR may register an allocated, invalid region of its PD. */
		if (!reg || t->e.type != WEFT_TPT_MR || (t->e.flags & WEFT_TPTF_VALID) ||
		    t->e.pd != k->u.mr.pd) {
			*reason = WEFT_R_STAG_BUSY;
			return WEFT_CMD_EBUSY;
		}
	}
	if (reg) {
		why = reg_fields(t->registered_once ? &t->e : NULL, stag, k->u.mr.va,
				 k->u.mr.length, k->u.mr.att_addr, k->u.mr.access,
				 k->u.mr.page_shift, k->u.mr.att_level, true);
		if (why) {
			*reason = why;
			return WEFT_CMD_EINVAL;
		}
		if (t->e.type == WEFT_TPT_FREE) {
			t->e.flags = k->u.mr.flags & WEFT_TPTF_FAST_REG;
			v->pd[k->u.mr.pd].refs++;
		}
		reg_set(t, stag, k->u.mr.pd, k->u.mr.va, k->u.mr.length, k->u.mr.att_addr,
			k->u.mr.access, k->u.mr.page_shift, k->u.mr.att_level);
	} else {
		if (t->registered_once && WEFT_STAG_INSTANCE(stag) == t->last_instance) {
			*reason = WEFT_R_INSTANCE_REUSED;
			return WEFT_CMD_EINVAL;
		}
		memset(&t->e, 0, sizeof(t->e));
		t->e.stag = stag;
		t->e.pd = k->u.mr.pd;
		t->e.type = (uint8_t)type;
		t->e.flags = type == WEFT_TPT_MR ? (k->u.mr.flags & WEFT_TPTF_FAST_REG) : 0;
		t->last_instance = (uint8_t)WEFT_STAG_INSTANCE(stag);
		t->registered_once = true;
		v->pd[k->u.mr.pd].refs++;
	}
	*reason = WEFT_R_OK;
	return WEFT_CMD_OK;
}

static void unbind(struct weft_core *c, struct vq_tpt *w)
{
	unsigned int why;
	struct vq_tpt *r;

	if (w->e.type == WEFT_TPT_MR || !w->e.parent)
		return;
	r = tpt_lookup(c, w->e.parent, &why);
	if (r && r->e.bind_count)
		r->e.bind_count--;
	w->e.parent = 0;
	w->e.qpn = 0;
}

unsigned int vq_cmd_dereg(struct weft_core *c, uint32_t stag, unsigned int *reason)
{
	struct weft_verbs *v = c->verbs;
	unsigned int why;
	struct vq_tpt *t = tpt_lookup(c, stag, &why);

	if (!t) {
		*reason = why;
		return WEFT_CMD_EINVAL;
	}
	if (t->e.type == WEFT_TPT_MR && t->e.bind_count) {
		*reason = WEFT_R_STAG_BUSY;
		return WEFT_CMD_EBUSY;
	}
	unbind(c, t);
	if (t->e.pd < v->nr_pd && v->pd[t->e.pd].refs)
		v->pd[t->e.pd].refs--;
	memset(&t->e, 0, sizeof(t->e));
	t->e.stag = WEFT_STAG(WEFT_STAG_INDEX(stag), t->last_instance);
	*reason = WEFT_R_OK;
	return WEFT_CMD_OK;
}

/* Type 2 windows bound to a destroyed QP become invalid. */
void vq_tpt_release_qp(struct weft_core *c, uint32_t qpn)
{
	struct weft_verbs *v = c->verbs;
	uint32_t i;

	for (i = 0; i < v->nr_tpt; i++) {
		struct vq_tpt *t = &v->tpt[i];

		if (t->e.type == WEFT_TPT_MW2 && t->e.qpn == qpn && (t->e.flags & WEFT_TPTF_VALID)) {
			unbind(c, t);
			t->e.flags &= (uint8_t)~WEFT_TPTF_VALID;
		}
	}
}

unsigned int vq_fast_reg(struct weft_core *c, struct vq_qp *qp, const struct weft_vwqe *w)
{
	struct weft_verbs *v = c->verbs;
	uint32_t stag = w->u.reg.stag, idx = WEFT_STAG_INDEX(stag);
	struct vq_tpt *t;
	unsigned int why;

	if (!(qp->flags & WEFT_VQPF_SQ_REG))
		return WEFT_R_QP_STATE;
	if (idx >= v->nr_tpt || v->tpt[idx].e.type != WEFT_TPT_MR)
		return WEFT_R_STAG_INDEX;
	t = &v->tpt[idx];
	if (!(t->e.flags & WEFT_TPTF_FAST_REG))
		return WEFT_R_ACCESS;
	if (t->e.flags & WEFT_TPTF_VALID)
		return WEFT_R_STAG_BUSY;    /* no room: the entry is in use */
	if (t->e.pd != qp->pd)
		return WEFT_R_PD_MISMATCH;
	why = reg_fields(&t->e, stag, w->u.reg.va, w->u.reg.length, w->u.reg.att_addr,
			 w->u.reg.access, w->u.reg.page_shift, w->u.reg.att_level,
			 qp->flags & WEFT_VQPF_PRIV);
	if (why)
		return why;
	reg_set(t, stag, qp->pd, w->u.reg.va, w->u.reg.length, w->u.reg.att_addr,
		w->u.reg.access, w->u.reg.page_shift, w->u.reg.att_level);
	return WEFT_R_OK;
}

static unsigned int invalidate(struct weft_core *c, struct vq_qp *qp, uint32_t stag,
			       bool remote)
{
	unsigned int why;
	struct vq_tpt *t = tpt_lookup(c, stag, &why);

	if (!t)
		return why;
	if (t->e.pd != qp->pd)
		return WEFT_R_PD_MISMATCH;
	if (!(t->e.flags & WEFT_TPTF_VALID))
		return WEFT_R_STAG_INVALID;
	if (remote && (t->e.type == WEFT_TPT_MW1 || !(t->e.access & WEFT_VACC_REMOTE)))
		return WEFT_R_INV_REFUSED;
	if (t->e.type == WEFT_TPT_MW2 && t->e.qpn != vq_qpn(c, qp) && remote)
		return WEFT_R_INV_REFUSED;
	if (t->e.type == WEFT_TPT_MR && t->e.bind_count)
		return WEFT_R_STAG_BUSY;
	unbind(c, t);
	t->e.flags &= (uint8_t)~(WEFT_TPTF_VALID | WEFT_TPTF_TOUCHED);
	return WEFT_R_OK;
}

unsigned int vq_local_inv(struct weft_core *c, struct vq_qp *qp, uint32_t stag)
{
	return invalidate(c, qp, stag, false);
}

unsigned int vq_remote_inv(struct weft_core *c, struct vq_qp *qp, uint32_t stag)
{
	return invalidate(c, qp, stag, true);
}

unsigned int vq_bind(struct weft_core *c, struct vq_qp *qp, const struct weft_vwqe *w)
{
	struct weft_verbs *v = c->verbs;
	uint32_t ms = w->u.bind.mw_stag, idx = WEFT_STAG_INDEX(ms);
	struct vq_tpt *mw, *mr;
	unsigned int why;

	if (idx >= v->nr_tpt)
		return WEFT_R_STAG_INDEX;
	mw = &v->tpt[idx];
	if (mw->e.type != WEFT_TPT_MW1 && mw->e.type != WEFT_TPT_MW2)
		return WEFT_R_STAG_TYPE;
	if (mw->e.pd != qp->pd)
		return WEFT_R_PD_MISMATCH;
	if (mw->e.type == WEFT_TPT_MW2 && (mw->e.flags & WEFT_TPTF_VALID))
		return WEFT_R_STAG_BUSY;
	if (WEFT_STAG_INSTANCE(ms) == mw->last_instance && mw->e.type == WEFT_TPT_MW2)
		return WEFT_R_INSTANCE_REUSED;
	if (w->u.bind.access & ~WEFT_VACC_REMOTE)
		return WEFT_R_ACCESS;
	if (w->u.bind.length == 0) {            /* unbind (type 1) */
		unbind(c, mw);
		mw->e.flags = 0;
		mw->e.stag = ms;
		mw->last_instance = (uint8_t)WEFT_STAG_INSTANCE(ms);
		return WEFT_R_OK;
	}
	mr = tpt_lookup(c, w->u.bind.mr_stag, &why);
	if (!mr)
		return why;
	if (mr->e.type != WEFT_TPT_MR)
		return WEFT_R_STAG_TYPE;
	if (!(mr->e.flags & WEFT_TPTF_VALID))
		return WEFT_R_STAG_INVALID;
	if (mr->e.pd != qp->pd)
		return WEFT_R_PD_MISMATCH;
	if (!(mr->e.access & WEFT_VACC_MW_BIND))
		return WEFT_R_BIND_DISABLED;
	if (!in_bounds(&mr->e, w->u.bind.va, w->u.bind.length))
		return WEFT_R_BOUNDS;
	if ((w->u.bind.access & (WEFT_VACC_REMOTE_WRITE | WEFT_VACC_REMOTE_ATOMIC)) &&
	    !(mr->e.access & WEFT_VACC_LOCAL_WRITE))
		return WEFT_R_ACCESS;
	unbind(c, mw);
	mw->e.stag = ms;
	mw->e.flags = (uint8_t)(WEFT_TPTF_VALID | (w->u.bind.one_touch ? WEFT_TPTF_ONE_TOUCH : 0));
	mw->e.access = w->u.bind.access;
	mw->e.va = w->u.bind.va;
	mw->e.length = w->u.bind.length;
	mw->e.page_shift = mr->e.page_shift;
	mw->e.att_level = mr->e.att_level;
	mw->e.parent = mr->e.stag;
	mw->e.qpn = mw->e.type == WEFT_TPT_MW2 ? vq_qpn(c, qp) : 0;
	mw->e.stored_psn = 0;
	mw->last_instance = (uint8_t)WEFT_STAG_INSTANCE(ms);
	mr->e.bind_count++;
	return WEFT_R_OK;
}

/* ---- one-touch windows (seed 3.2 ¶154-162) -------------------------------- */

unsigned int vq_one_touch(struct weft_core *c, struct vq_qp *qp, uint32_t stag,
			  uint32_t psn, bool in_order)
{
	struct vq_tpt *t = &c->verbs->tpt[WEFT_STAG_INDEX(stag)];
	unsigned int i;

	if (!(t->e.flags & WEFT_TPTF_ONE_TOUCH))
		return WEFT_R_OK;
	if (in_order) {
		unbind(c, t);
		t->e.flags &= (uint8_t)~(WEFT_TPTF_VALID | WEFT_TPTF_TOUCHED);
		return WEFT_R_OK;
	}
	for (i = 0; i < VQ_TOUCHED; i++) {
		if (!qp->touched[i]) {
			qp->touched[i] = WEFT_STAG_INDEX(stag) + 1;
			t->e.flags |= WEFT_TPTF_TOUCHED;
			t->e.stored_psn = psn;
			return WEFT_R_OK;
		}
	}
	return WEFT_R_PSN_WINDOW;   /* no room to remember it: drop, resent later */
}

void vq_one_touch_catch_up(struct weft_core *c, struct vq_qp *qp)
{
	unsigned int i;

	for (i = 0; i < VQ_TOUCHED; i++) {
		struct vq_tpt *t;

		if (!qp->touched[i])
			continue;
		t = &c->verbs->tpt[qp->touched[i] - 1];
		if (!(t->e.flags & WEFT_TPTF_TOUCHED)) {
			qp->touched[i] = 0;
			continue;
		}
		if (psn_diff(qp->epsn, t->e.stored_psn) > 0) {
			unbind(c, t);
			t->e.flags &= (uint8_t)~(WEFT_TPTF_VALID | WEFT_TPTF_TOUCHED);
			qp->touched[i] = 0;
		}
	}
}

bool vq_touched(struct weft_core *c, uint32_t stag)
{
	uint32_t idx = WEFT_STAG_INDEX(stag);

	return idx < c->verbs->nr_tpt && (c->verbs->tpt[idx].e.flags & WEFT_TPTF_TOUCHED);
}
