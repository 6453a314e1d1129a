/* SPDX-License-Identifier: MIT */
/*
 * Weft sim: verbs driver and user layer (weft_sim_verbs.h): command
 * blocks, CQ and QP rings, ATT page lists and WQEs in node memory,
 * UAR doorbells through BAR 4.
 */
#include <errno.h>
#include <string.h>

#include "weft_sim_verbs.h"

static uint64_t uar_off(struct weft_sim *s, unsigned int node, uint32_t uar, uint64_t reg)
{
	return weft_sim_reg_read(s, node, WEFT_REG_VERBS_UAR_OFF) +
	       (uint64_t)uar * WEFT_DB_PAGE_SIZE + reg;
}

static void uar_write(struct weft_sim *s, unsigned int node, uint32_t uar, uint64_t reg,
		      uint64_t val)
{
	uint64_t off = uar_off(s, node, uar, reg);

	weft_sim_db_write(s, node, (unsigned int)(off / WEFT_DB_PAGE_SIZE),
			  off % WEFT_DB_PAGE_SIZE, val);
}

int wsv_cmd(struct weft_sim *s, unsigned int node, const struct weft_vcmd *k,
	    struct weft_vcmd_resp *resp)
{
	uint64_t a = weft_sim_alloc(s, node, WEFT_VCMD_BLOCK_SIZE, 64);
	uint8_t *p;
	int st;

	if (!a)
		return -ENOMEM;
	p = weft_sim_ptr(s, node, a, WEFT_VCMD_BLOCK_SIZE);
	memcpy(p, k, sizeof(*k));
	weft_sim_reg_write(s, node, WEFT_REG_VERBS_CMD, a);
	st = (int)weft_sim_reg_read(s, node, WEFT_REG_VERBS_CMD_STATUS);
	if (resp)
		memcpy(resp, p + sizeof(*k), sizeof(*resp));
	weft_sim_free_mem(s, node, a);
	return st;
}

int wsv_pd(struct weft_sim *s, unsigned int node, uint32_t pdn)
{
	struct weft_vcmd k = { .op = WEFT_VCMD_CREATE_PD, .handle = pdn };

	return wsv_cmd(s, node, &k, NULL);
}

void wsv_uar_write(struct weft_sim *s, unsigned int node, uint32_t uar, uint64_t reg,
		   uint64_t val)
{
	uar_write(s, node, uar, reg, val);
}

int wsv_cq_create(struct weft_sim *s, unsigned int node, uint32_t cqn, uint32_t log2,
		  uint32_t vector, struct wsv_cq *out)
{
	struct weft_vcmd k = { .op = WEFT_VCMD_CREATE_CQ, .handle = cqn };

	memset(out, 0, sizeof(*out));
	out->node = node;
	out->cqn = cqn;
	out->log2 = log2;
	out->ring = weft_sim_alloc(s, node, (uint64_t)sizeof(struct weft_vcqe) << log2, 4096);
	out->ci_addr = weft_sim_alloc(s, node, 64, 64);
	if (!out->ring || !out->ci_addr)
		return -ENOMEM;
	k.u.cq.ring_addr = out->ring;
	k.u.cq.ci_addr = out->ci_addr;
	k.u.cq.log2_entries = log2;
	k.u.cq.vector = vector;
	return wsv_cmd(s, node, &k, NULL);
}

int wsv_cq_resize(struct weft_sim *s, struct wsv_cq *cq, uint32_t log2, uint64_t *prod)
{
	struct weft_vcmd k = { .op = WEFT_VCMD_RESIZE_CQ, .handle = cq->cqn };
	struct weft_vcmd_resp resp = { 0 };
	uint64_t size = (uint64_t)sizeof(struct weft_vcqe) << (log2 < 32 ? log2 : 0);
	uint64_t ring = weft_sim_alloc(s, cq->node, size, 4096);
	uint64_t ci_addr = weft_sim_alloc(s, cq->node, 64, 64);
	struct weft_vcqe *r;
	uint32_t i, *ci;
	int st;

	if (!ring || !ci_addr)
		return -ENOMEM;
	r = weft_sim_ptr(s, cq->node, ring, size);
	ci = weft_sim_ptr(s, cq->node, ci_addr, 4);
	for (i = 0; log2 < 32 && i < (1u << log2); i++)
		r[(cq->ci + i) & ((1u << log2) - 1)].owner = (uint8_t)(((cq->ci + i) >> log2) & 1);
	*ci = cq->ci;
	k.u.cq.ring_addr = ring;
	k.u.cq.ci_addr = ci_addr;
	k.u.cq.log2_entries = log2;
	st = wsv_cmd(s, cq->node, &k, &resp);
	if (st) {
		weft_sim_free_mem(s, cq->node, ring);
		weft_sim_free_mem(s, cq->node, ci_addr);
		return st;
	}
	cq->ring = ring;
	cq->ci_addr = ci_addr;
	cq->log2 = log2;
	if (prod)
		*prod = resp.out[0];
	return 0;
}

int wsv_poll(struct weft_sim *s, struct wsv_cq *cq, struct weft_vcqe *e)
{
	uint32_t size = 1u << cq->log2;
	uint64_t a = cq->ring + (uint64_t)(cq->ci & (size - 1)) * sizeof(*e);
	const struct weft_vcqe *p = weft_sim_ptr(s, cq->node, a, sizeof(*e));
	uint8_t want = (uint8_t)(((cq->ci >> cq->log2) & 1) ^ 1);
	uint32_t *ci;

	if (!p || (p->owner & 1) != want)
		return 0;
	memcpy(e, p, sizeof(*e));
	cq->ci++;
	ci = weft_sim_ptr(s, cq->node, cq->ci_addr, 4);
	*ci = cq->ci;
	return 1;
}

int wsv_cq_modify(struct weft_sim *s, struct wsv_cq *cq, uint32_t count, uint32_t period_us)
{
	struct weft_vcmd k = { .op = WEFT_VCMD_MODIFY_CQ, .handle = cq->cqn };

	k.u.cq_mod.count = count;
	k.u.cq_mod.period_us = period_us;
	return wsv_cmd(s, cq->node, &k, NULL);
}

void wsv_arm(struct weft_sim *s, struct wsv_cq *cq, unsigned int flags)
{
	uar_write(s, cq->node, 0, WEFT_UAR_CQ_ARM, WEFT_UAR_ARM(cq->cqn, flags, cq->ci));
}

static int qp_create(struct weft_sim *s, unsigned int node, uint32_t qpn, uint32_t type,
		     uint32_t pd, uint32_t scq, uint32_t rcq, uint32_t sq_log2, uint32_t rq_log2,
		     uint32_t srqn, uint32_t flags, struct wsv_qp *out)
{
	struct weft_vcmd k = { .op = WEFT_VCMD_CREATE_QP, .handle = qpn };

	memset(out, 0, sizeof(*out));
	out->node = node;
	out->qpn = qpn;
	out->type = type;
	out->sq_log2 = sq_log2;
	out->rq_log2 = rq_log2;
	out->sq_stride = 8;     /* 256 bytes: 12 SGEs */
	out->rq_stride = 8;
	out->sq = weft_sim_alloc(s, node, 1ull << (sq_log2 + out->sq_stride), 4096);
	out->rq = weft_sim_alloc(s, node, 1ull << (rq_log2 + out->rq_stride), 4096);
	if (!out->sq || !out->rq)
		return -ENOMEM;
	k.u.qp.sq_addr = out->sq;
	k.u.qp.rq_addr = out->rq;
	k.u.qp.type = type;
	k.u.qp.pd = pd;
	k.u.qp.send_cq = scq;
	k.u.qp.recv_cq = rcq;
	k.u.qp.sq_log2 = (uint8_t)sq_log2;
	k.u.qp.sq_stride_log2 = (uint8_t)out->sq_stride;
	/* A QP on an SRQ names no RQ (as weft_ib does). */
	k.u.qp.rq_log2 = srqn ? 0 : (uint8_t)rq_log2;
	k.u.qp.rq_stride_log2 = srqn ? 0 : (uint8_t)out->rq_stride;
	k.u.qp.rq_addr = srqn ? 0 : out->rq;
	k.u.qp.flags = flags;
	k.u.qp.srq = srqn;
	return wsv_cmd(s, node, &k, NULL);
}

int wsv_qp_create(struct weft_sim *s, unsigned int node, uint32_t qpn, uint32_t type,
		  uint32_t pd, uint32_t scq, uint32_t rcq, uint32_t sq_log2, uint32_t rq_log2,
		  uint32_t flags, struct wsv_qp *out)
{
	return qp_create(s, node, qpn, type, pd, scq, rcq, sq_log2, rq_log2, 0, flags, out);
}

int wsv_qp_create_srq(struct weft_sim *s, unsigned int node, uint32_t qpn, uint32_t type,
		      uint32_t pd, uint32_t scq, uint32_t rcq, uint32_t sq_log2, uint32_t srqn,
		      uint32_t flags, struct wsv_qp *out)
{
	return qp_create(s, node, qpn, type, pd, scq, rcq, sq_log2, 0, srqn, flags, out);
}

int wsv_srq_create(struct weft_sim *s, unsigned int node, uint32_t srqn, uint32_t pd,
		   uint32_t log2, uint32_t limit, struct wsv_srq *out)
{
	struct weft_vcmd k = { .op = WEFT_VCMD_CREATE_SRQ, .handle = srqn };

	memset(out, 0, sizeof(*out));
	out->node = node;
	out->srqn = srqn;
	out->log2 = log2;
	out->stride = 8;
	out->ring = weft_sim_alloc(s, node, 1ull << (log2 + out->stride), 4096);
	out->ci_addr = weft_sim_alloc(s, node, 64, 64);
	if (!out->ring || !out->ci_addr)
		return -ENOMEM;
	k.u.srq.ring_addr = out->ring;
	k.u.srq.ci_addr = out->ci_addr;
	k.u.srq.pd = pd;
	k.u.srq.log2 = (uint8_t)log2;
	k.u.srq.stride_log2 = (uint8_t)out->stride;
	k.u.srq.limit = limit;
	return wsv_cmd(s, node, &k, NULL);
}

int wsv_post_srq_recv(struct weft_sim *s, struct wsv_srq *q, uint64_t wr_id,
		      const struct weft_vsge *sge, unsigned int n)
{
	uint64_t a = q->ring + ((uint64_t)(q->prod & ((1u << q->log2) - 1)) << q->stride);
	uint8_t *p = weft_sim_ptr(s, q->node, a, 1u << q->stride);
	struct weft_vrwqe h = { .wr_id = wr_id, .num_sge = (uint8_t)n };

	if (!p || sizeof(h) + n * sizeof(*sge) > (1u << q->stride) ||
	    q->prod - wsv_srq_ci(s, q) >= (1u << q->log2))
		return -EINVAL;
	memcpy(p, &h, sizeof(h));
	if (n)
		memcpy(p + sizeof(h), sge, n * sizeof(*sge));
	q->prod++;
	uar_write(s, q->node, q->uar, WEFT_UAR_SRQ_DB, WEFT_UAR_DB(q->srqn, q->prod));
	return 0;
}

uint32_t wsv_srq_ci(struct weft_sim *s, const struct wsv_srq *q)
{
	const uint32_t *ci = weft_sim_ptr(s, q->node, q->ci_addr, 4);

	return ci ? *ci : 0;
}

int wsv_modify(struct weft_sim *s, unsigned int node, uint32_t qpn, uint32_t mask,
	       const struct weft_vcmd *mod)
{
	struct weft_vcmd k = *mod;

	k.op = WEFT_VCMD_MODIFY_QP;
	k.handle = qpn;
	k.u.mod.mask = mask;
	return wsv_cmd(s, node, &k, NULL);
}

static int rc_side(struct weft_sim *s, struct wsv_qp *q, const struct wsv_qp *peer,
		   const struct wsv_rc_params *p, uint32_t sq_psn, uint32_t rq_psn)
{
	struct weft_vcmd k;
	int st;

	memset(&k, 0, sizeof(k));
	k.u.mod.state = WEFT_VQPS_INIT;
	k.u.mod.access = p->access ? p->access : WEFT_VACC_REMOTE;
	st = wsv_modify(s, q->node, q->qpn, WEFT_VQPA_STATE | WEFT_VQPA_ACCESS, &k);
	if (st)
		return st;
	k.u.mod.state = WEFT_VQPS_RTR;
	k.u.mod.dest_node = (uint16_t)peer->node;
	k.u.mod.dest_qpn = peer->qpn;
	k.u.mod.rq_psn = rq_psn;
	k.u.mod.max_dest_rd_atomic = WEFT_VERBS_MAX_RD_ATOMIC;
	k.u.mod.min_rnr_timer = p->min_rnr_timer ? p->min_rnr_timer : 1;
	k.u.mod.path_mtu = 3;
	st = wsv_modify(s, q->node, q->qpn, WEFT_VQPA_STATE | WEFT_VQPA_AV | WEFT_VQPA_DEST_QPN |
			WEFT_VQPA_RQ_PSN | WEFT_VQPA_MAX_DEST_RD_ATOMIC |
			WEFT_VQPA_MIN_RNR_TIMER | WEFT_VQPA_PATH_MTU, &k);
	if (st)
		return st;
	k.u.mod.state = WEFT_VQPS_RTS;
	k.u.mod.sq_psn = sq_psn;
	k.u.mod.timeout = p->timeout ? p->timeout : 10;
	k.u.mod.retry_cnt = p->retry_cnt ? p->retry_cnt : 7;
	k.u.mod.rnr_retry = p->rnr_retry ? p->rnr_retry : 7;
	k.u.mod.max_rd_atomic = p->max_rd_atomic ? p->max_rd_atomic : 4;
	return wsv_modify(s, q->node, q->qpn, WEFT_VQPA_STATE | WEFT_VQPA_SQ_PSN |
			  WEFT_VQPA_TIMEOUT | WEFT_VQPA_RETRY_CNT | WEFT_VQPA_RNR_RETRY |
			  WEFT_VQPA_MAX_QP_RD_ATOMIC, &k);
}

int wsv_connect(struct weft_sim *s, struct wsv_qp *a, struct wsv_qp *b,
		const struct wsv_rc_params *p)
{
	struct wsv_rc_params def = { 0 };
	int st;

	if (!p)
		p = &def;
	st = rc_side(s, a, b, p, p->psn_a, p->psn_b);
	return st ? st : rc_side(s, b, a, p, p->psn_b, p->psn_a);
}

int wsv_ud_ready(struct weft_sim *s, struct wsv_qp *q, uint32_t qkey)
{
	struct weft_vcmd k;
	int st;

	memset(&k, 0, sizeof(k));
	k.u.mod.state = WEFT_VQPS_INIT;
	k.u.mod.qkey = qkey;
	st = wsv_modify(s, q->node, q->qpn, WEFT_VQPA_STATE | WEFT_VQPA_QKEY, &k);
	if (st)
		return st;
	k.u.mod.state = WEFT_VQPS_RTR;
	st = wsv_modify(s, q->node, q->qpn, WEFT_VQPA_STATE, &k);
	if (st)
		return st;
	k.u.mod.state = WEFT_VQPS_RTS;
	return wsv_modify(s, q->node, q->qpn, WEFT_VQPA_STATE | WEFT_VQPA_SQ_PSN, &k);
}

int wsv_gid(struct weft_sim *s, unsigned int node, uint32_t index, const uint8_t gid[16],
	    unsigned int type)
{
	struct weft_vcmd k;

	memset(&k, 0, sizeof(k));
	k.op = type ? WEFT_VCMD_SET_GID : WEFT_VCMD_CLEAR_GID;
	k.handle = index;
	k.u.gid.port = WEFT_VERBS_PORT;
	k.u.gid.type = (uint8_t)type;
	if (gid)
		memcpy(k.u.gid.gid, gid, sizeof(k.u.gid.gid));
	return wsv_cmd(s, node, &k, NULL);
}

/* ---- memory registration ---------------------------------------------------- */

static uint64_t *u64_at(struct weft_sim *s, unsigned int node, uint64_t a)
{
	return weft_sim_ptr(s, node, a, 8);
}

uint64_t wsv_att(struct weft_sim *s, unsigned int node, uint64_t addr, uint64_t len,
		 unsigned int level, unsigned int page_shift)
{
	uint64_t psize = 1ull << page_shift, first = addr & ~(psize - 1);
	uint64_t npages = (addr + (len ? len : 1) - first + psize - 1) >> page_shift, i;
	uint64_t list, root;

	/* Page lists of WEFT_ATT_FANOUT entries (one big list for DIRECT). */
	if (level == WEFT_ATT_DIRECT) {
		list = weft_sim_alloc(s, node, npages * 8, 4096);
		if (!list)
			return 0;
		for (i = 0; i < npages; i++)
			*u64_at(s, node, list + i * 8) = i ? first + i * psize : addr;
		return list;
	}
	root = weft_sim_alloc(s, node, 4096, 4096);
	if (!root)
		return 0;
	for (i = 0; i < npages; i++) {
		uint64_t l1 = i / WEFT_ATT_FANOUT, slot, l0;

		if (level == WEFT_ATT_IND1) {
			slot = root + l1 * 8;
		} else {
			uint64_t top = i / (WEFT_ATT_FANOUT * WEFT_ATT_FANOUT);
			uint64_t *tp = u64_at(s, node, root + top * 8);

			if (!*tp) {
				*tp = weft_sim_alloc(s, node, 4096, 4096);
				if (!*tp)
					return 0;
			}
			slot = *tp + (l1 % WEFT_ATT_FANOUT) * 8;
		}
		if (!*u64_at(s, node, slot)) {
			l0 = weft_sim_alloc(s, node, 4096, 4096);
			if (!l0)
				return 0;
			*u64_at(s, node, slot) = l0;
		}
		l0 = *u64_at(s, node, slot);
		*u64_at(s, node, l0 + (i % WEFT_ATT_FANOUT) * 8) = i ? first + i * psize : addr;
	}
	return root;
}

int wsv_reg_mr(struct weft_sim *s, unsigned int node, uint32_t stag, uint32_t pd, uint64_t va,
	       uint64_t addr, uint64_t len, unsigned int access, unsigned int level,
	       unsigned int page_shift)
{
	struct weft_vcmd k = { .op = WEFT_VCMD_REG_MR, .handle = stag };

	if (level != WEFT_ATT_PHYS) {
		k.u.mr.att_addr = wsv_att(s, node, addr, len, level, page_shift);
		if (!k.u.mr.att_addr)
			return -ENOMEM;
	}
	k.u.mr.va = va;
	k.u.mr.length = len;
	k.u.mr.pd = pd;
	k.u.mr.access = (uint8_t)access;
	k.u.mr.page_shift = (uint8_t)page_shift;
	k.u.mr.att_level = (uint8_t)level;
	return wsv_cmd(s, node, &k, NULL);
}

int wsv_alloc_stag(struct weft_sim *s, unsigned int node, uint32_t stag, uint32_t pd,
		   unsigned int type, unsigned int flags)
{
	struct weft_vcmd k = { .op = WEFT_VCMD_ALLOC_STAG, .handle = stag };

	k.u.mr.pd = pd;
	k.u.mr.type = (uint8_t)type;
	k.u.mr.flags = (uint8_t)flags;
	return wsv_cmd(s, node, &k, NULL);
}

int wsv_dereg(struct weft_sim *s, unsigned int node, uint32_t stag)
{
	struct weft_vcmd k = { .op = WEFT_VCMD_DEREG_STAG, .handle = stag };

	return wsv_cmd(s, node, &k, NULL);
}

static int query(struct weft_sim *s, unsigned int node, unsigned int op, uint32_t h,
		 void *out, size_t len)
{
	struct weft_vcmd k = { .op = (uint8_t)op, .handle = h };
	uint64_t a = weft_sim_alloc(s, node, 256, 64);
	int st;

	if (!a)
		return -ENOMEM;
	k.u.query.addr = a;
	st = wsv_cmd(s, node, &k, NULL);
	memcpy(out, weft_sim_ptr(s, node, a, len), len);
	weft_sim_free_mem(s, node, a);
	return st;
}

int wsv_query_tpt(struct weft_sim *s, unsigned int node, uint32_t index,
		  struct weft_tpt_entry *e)
{
	return query(s, node, WEFT_VCMD_QUERY_TPT, index, e, sizeof(*e));
}

int wsv_query_qp(struct weft_sim *s, unsigned int node, uint32_t qpn, struct weft_vqpc *q)
{
	return query(s, node, WEFT_VCMD_QUERY_QP, qpn, q, sizeof(*q));
}

/* ---- posting --------------------------------------------------------------- */

int wsv_post_send(struct weft_sim *s, struct wsv_qp *q, const struct weft_vwqe *w,
		  const struct weft_vsge *sge, unsigned int n, bool ring)
{
	uint64_t a = q->sq + ((uint64_t)(q->sq_prod & ((1u << q->sq_log2) - 1)) << q->sq_stride);
	uint8_t *p = weft_sim_ptr(s, q->node, a, 1u << q->sq_stride);
	struct weft_vwqe h = *w;

	if (!p || sizeof(h) + n * sizeof(*sge) > (1u << q->sq_stride))
		return -EINVAL;
	h.num_sge = (uint8_t)n;
	memcpy(p, &h, sizeof(h));
	if (n)
		memcpy(p + sizeof(h), sge, n * sizeof(*sge));
	q->sq_prod++;
	if (ring)
		wsv_ring_sq(s, q);
	return 0;
}

int wsv_post_inline(struct weft_sim *s, struct wsv_qp *q, const struct weft_vwqe *w,
		    const void *data, uint32_t len, bool ring)
{
	uint64_t a = q->sq + ((uint64_t)(q->sq_prod & ((1u << q->sq_log2) - 1)) << q->sq_stride);
	uint8_t *p = weft_sim_ptr(s, q->node, a, 1u << q->sq_stride);
	struct weft_vinline in = { .length = len };
	struct weft_vwqe h = *w;
	uint32_t room = (1u << q->sq_stride) - sizeof(h) - sizeof(in);

	if (!p)
		return -EINVAL;
	h.flags |= WEFT_VWQE_INLINE;
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), &in, sizeof(in));
	memcpy(p + sizeof(h) + sizeof(in), data, len < room ? len : room);
	q->sq_prod++;
	if (ring)
		wsv_ring_sq(s, q);
	return 0;
}

void wsv_ring_sq(struct weft_sim *s, struct wsv_qp *q)
{
	uar_write(s, q->node, q->uar, WEFT_UAR_SQ_DB, WEFT_UAR_DB(q->qpn, q->sq_prod));
}

int wsv_post_recv(struct weft_sim *s, struct wsv_qp *q, uint64_t wr_id,
		  const struct weft_vsge *sge, unsigned int n)
{
	uint64_t a = q->rq + ((uint64_t)(q->rq_prod & ((1u << q->rq_log2) - 1)) << q->rq_stride);
	uint8_t *p = weft_sim_ptr(s, q->node, a, 1u << q->rq_stride);
	struct weft_vrwqe h = { .wr_id = wr_id, .num_sge = (uint8_t)n };

	if (!p || sizeof(h) + n * sizeof(*sge) > (1u << q->rq_stride))
		return -EINVAL;
	memcpy(p, &h, sizeof(h));
	if (n)
		memcpy(p + sizeof(h), sge, n * sizeof(*sge));
	q->rq_prod++;
	uar_write(s, q->node, q->uar, WEFT_UAR_RQ_DB, WEFT_UAR_DB(q->qpn, q->rq_prod));
	return 0;
}

struct wait_arg {
	struct weft_sim *s;
	struct wsv_cq *cq;
	struct weft_vcqe *out;
	unsigned int n, got;
};

static bool wait_done(void *arg)
{
	struct wait_arg *w = arg;

	while (w->got < w->n && wsv_poll(w->s, w->cq, &w->out[w->got]))
		w->got++;
	return w->got >= w->n;
}

unsigned int wsv_wait(struct weft_sim *s, struct wsv_cq *cq, struct weft_vcqe *out,
		      unsigned int n, uint64_t deadline_ns)
{
	struct wait_arg w = { .s = s, .cq = cq, .out = out, .n = n };

	weft_sim_run_until(s, wait_done, &w, weft_sim_now(s) + deadline_ns);
	return w.got;
}

size_t wsv_forge(void *buf, uint16_t src_node, uint16_t dst_node, const struct weft_vhdr *h,
		 const void *data, uint32_t dlen)
{
	struct weft_wire_hdr wh;
	uint8_t *p = buf;

	memset(&wh, 0, sizeof(wh));
	wh.version = WEFT_WIRE_VERSION;
	wh.type = WEFT_PKT_VERBS;
	wh.src_node = src_node;
	wh.dst_node = dst_node;
	wh.length = (uint32_t)(sizeof(*h) + dlen);
	memcpy(p, &wh, sizeof(wh));
	memcpy(p + sizeof(wh), h, sizeof(*h));
	if (dlen)
		memcpy(p + sizeof(wh) + sizeof(*h), data, dlen);
	return sizeof(wh) + sizeof(*h) + dlen;
}
