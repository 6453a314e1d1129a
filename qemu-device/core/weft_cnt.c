/* SPDX-License-Identifier: MIT */
/*
 * Weft counter engine: counter-bearing RDMA objects (seed 003,
 * docs/counters.md, include/weft/cnt.h).
 *
 * Initiator side: objects (a status block and a pinned region copied from
 * the driver's page list), operations posted on them, the requests, the
 * write data, resends on a timer, and the counter decrement per applied
 * chunk with a bitmap so that each chunk counts once.  Responder side: the
 * exposure table the driver fills, the read jobs that stream data back,
 * and the placement of write data with an acknowledgement per chunk.
 *
 * Event counters (WEFT_CNT_MODE_EVENT): objects without a region that the
 * verbs engine moves up, through the counter slots of its QPs (BIND_QP),
 * one event per call and one status-block write each.
 *
 * Every packet is checked field by field; a refusal is a drop with a
 * named reason (counted and traced) or, for a request, a CNT_ERROR packet
 * with the cause.  One weft_cnt_poll() sends at most one packet.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "weft/cnt.h"
#include "weft/names.h"
#include "weft/verbs.h"
#include "weft_core_int.h"
#include "weft_state.h"
#include "weft_verbs_int.h"

#define CTLQ_LEN        256u
#define CNT_BUDGET      (96ull << 20) /* host bytes of page copies and bitmaps */

struct cnt_op {
	uint8_t state;                  /* enum weft_cnt_op_state */
	uint8_t dir;
	uint16_t node;
	uint32_t seq;
	uint64_t off, len, rva;         /* region offset, bytes, remote VA */
	uint64_t applied;
	uint32_t nchunks;
	uint32_t una;                   /* first chunk of the op not applied */
	uint32_t next;                  /* write: next chunk to send */
	uint32_t inflight;              /* write: chunks sent, not acknowledged */
	bool need_req;
	bool granted;                   /* write: the peer said go */
	bool in_tx;                     /* counted in cnt->ntx */
	uint32_t retries;
	uint32_t reason;
	uint64_t deadline;
};

struct cnt_obj {
	bool live;
	bool notified;
	uint8_t mode, flags, vector;
	uint16_t gen;
	uint64_t block_addr;
	uint64_t length;
	uint32_t first_off;
	uint32_t npages;
	uint64_t count;
	uint64_t errors;                /* EVENT mode: events completed in error */
	uint32_t wait_head;             /* EVENT mode: first QP waiting (WAIT_CNT), 0 none */
	uint32_t error;
	uint16_t failed;
	uint32_t ops_total;             /* OPS mode: operations the counter covers */
	uint32_t ops_done;
	uint64_t *pages;
	uint64_t *done;                 /* chunk applied */
	uint64_t *posted;               /* chunk covered by a live operation */
	uint64_t host_bytes;
	struct cnt_op op[WEFT_CNT_MAX_OPS];
};

struct cnt_exp {
	bool live;
	uint8_t rights;
	uint16_t gen;
	uint16_t peer;
	uint64_t va, length;
	uint32_t first_off;
	uint32_t npages;
	uint64_t *pages;
	uint64_t served;
};

struct cnt_job {
	bool live;
	uint16_t node;
	uint8_t exp;
	uint16_t exp_gen;
	struct weft_cnt_hdr h;
	uint64_t pos, end;
};

struct cnt_ctl {
	uint8_t type;
	uint16_t node;
	struct weft_cnt_hdr h;
};

struct weft_cnt {
	struct cnt_obj obj[WEFT_CNT_NR_OBJ];
	struct cnt_exp exp[WEFT_CNT_NR_EXP];
	struct cnt_job job[WEFT_CNT_RESP_JOBS];
	struct cnt_ctl ctl[CTLQ_LEN];
	uint32_t ctl_head, ctl_count;
	uint32_t njobs, job_cur;
	uint32_t ntx, tx_cur;
	bool turn;
	uint32_t seq;
	uint64_t deadline;              /* earliest op deadline, 0 = none */
	uint64_t host_bytes;
	uint64_t cmd_status;
	_Alignas(8) uint8_t pkt[WEFT_WIRE_MAX_FRAME];
};

/* ---- helpers ------------------------------------------------------------ */

static uint64_t now_ns(struct weft_core *c)
{
	return c->ops.now_ns ? c->ops.now_ns(c->opaque) : 0;
}

static bool bit_get(const uint64_t *b, uint64_t i)
{
	return (b[i >> 6] >> (i & 63)) & 1;
}

static void bit_set(uint64_t *b, uint64_t i)
{
	b[i >> 6] |= 1ull << (i & 63);
}

static void bit_clear(uint64_t *b, uint64_t i)
{
	b[i >> 6] &= ~(1ull << (i & 63));
}

static uint64_t chunks_of(uint64_t len)
{
	return (len + WEFT_CNT_CHUNK - 1) / WEFT_CNT_CHUNK;
}

static uint32_t npages_of(uint32_t first_off, uint64_t len)
{
	return (uint32_t)((first_off + len + WEFT_CNT_PAGE - 1) >> WEFT_CNT_PAGE_SHIFT);
}

/* Copy between guest memory named by a page list and buf.  Every piece
 * stays inside the list (the caller checked the range). */
static int pages_io(struct weft_core *c, const uint64_t *pages, uint32_t first_off,
		    uint64_t off, void *buf, size_t len, bool write)
{
	uint8_t *p = buf;

	while (len > 0) {
		uint64_t a = first_off + off;
		uint64_t in = a & (WEFT_CNT_PAGE - 1);
		size_t n = WEFT_CNT_PAGE - in;
		uint64_t pa = pages[a >> WEFT_CNT_PAGE_SHIFT] + in;
		int rc;

		if (n > len)
			n = len;
		rc = write ? weft_dma_write(c, pa, p, n) : weft_dma_read(c, pa, p, n);
		if (rc)
			return -1;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static void cnt_drop(struct weft_core *c, const struct weft_wire_hdr *h, unsigned int reason)
{
	weft_drop(c, h, WEFT_NO_WINDOW, reason);
}

/* Read a page list of n entries; every entry 4 KiB aligned. */
static uint64_t *pages_load(struct weft_core *c, uint64_t addr, uint32_t n, unsigned int *st)
{
	uint64_t *p;
	uint32_t i;

	if (addr & 7) {
		*st = WEFT_CMD_EINVAL;
		return NULL;
	}
	p = malloc((size_t)n * sizeof(*p));
	if (!p) {
		*st = WEFT_CMD_ENOMEM;
		return NULL;
	}
	if (weft_dma_read(c, addr, p, (size_t)n * sizeof(*p))) {
		free(p);
		*st = WEFT_CMD_EFAULT;
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (p[i] & (WEFT_CNT_PAGE - 1) || p[i] + WEFT_CNT_PAGE < p[i]) {
			free(p);
			*st = WEFT_CMD_EINVAL;
			return NULL;
		}
	}
	return p;
}

/* ---- transmit ------------------------------------------------------------ */

/* 0 sent (or dropped for want of a link, counted), -EAGAIN link busy. */
static int cnt_xmit(struct weft_core *c, uint8_t type, uint16_t node,
		    const struct weft_cnt_hdr *ch, const void *data, size_t dlen)
{
	struct weft_cnt *k = c->ctr;
	struct weft_wire_hdr *wh = (struct weft_wire_hdr *)k->pkt;
	struct weft_trace t = { .kind = WEFT_TR_PKT_TX, .window = WEFT_NO_WINDOW };
	size_t len = sizeof(*wh) + sizeof(*ch) + dlen;
	int rc;

	memset(wh, 0, sizeof(*wh));
	wh->version = WEFT_WIRE_VERSION;
	wh->type = type;
	wh->dst_node = node;
	wh->src_node = c->cfg.node_id;
	wh->length = (uint32_t)(sizeof(*ch) + dlen);
	memcpy(k->pkt + sizeof(*wh), ch, sizeof(*ch));
	if (dlen)
		memcpy(k->pkt + sizeof(*wh) + sizeof(*ch), data, dlen);
	rc = c->ops.xmit(c->opaque, k->pkt, len);
	if (rc == -EAGAIN) {
		weft_count(c, WEFT_CNT_TX_BLOCKED, 1);
		return -EAGAIN;
	}
	if (rc) {
		cnt_drop(c, wh, WEFT_R_NO_LINK);
		return 0;
	}
	weft_count(c, WEFT_CNT_TX_PACKETS, 1);
	weft_count(c, WEFT_CNT_TX_BYTES, len);
	switch (type) {
	case WEFT_PKT_CNT_WRITE_OP:
	case WEFT_PKT_CNT_READ_OP:
		weft_count(c, WEFT_CNT_C_REQ_TX, 1);
		break;
	case WEFT_PKT_CNT_DATA:
		weft_count(c, WEFT_CNT_C_DATA_TX, 1);
		break;
	case WEFT_PKT_CNT_ERROR:
		weft_count(c, WEFT_CNT_C_ERR_TX, 1);
		break;
	default:
		break;
	}
	t.hdr = wh;
	t.len = len;
	t.name = weft_pkt_type_name(type);
	weft_trace(c, &t);
	return 0;
}

/* A header-only answer from the receive path: sent now, or queued. */
static void cnt_answer(struct weft_core *c, uint8_t type, uint16_t node,
		       const struct weft_cnt_hdr *ch)
{
	struct weft_cnt *k = c->ctr;
	struct cnt_ctl *q;

	if (k->ctl_count == 0 && cnt_xmit(c, type, node, ch, NULL, 0) == 0)
		return;
	if (k->ctl_count >= CTLQ_LEN) {
		struct weft_wire_hdr h = {
			.version = WEFT_WIRE_VERSION, .type = type, .dst_node = node,
			.src_node = c->cfg.node_id,
		};

		cnt_drop(c, &h, WEFT_R_RX_QUEUE_FULL);
		return;
	}
	q = &k->ctl[(k->ctl_head + k->ctl_count) % CTLQ_LEN];
	q->type = type;
	q->node = node;
	q->h = *ch;
	k->ctl_count++;
	if (c->ops.kick)
		c->ops.kick(c->opaque);
}

static void cnt_error(struct weft_core *c, uint16_t node, const struct weft_cnt_hdr *req,
		      unsigned int cause)
{
	struct weft_cnt_hdr e = *req;

	e.cause = (uint16_t)cause;
	e.span = 0;
	cnt_answer(c, WEFT_PKT_CNT_ERROR, node, &e);
}

/* ---- timer ------------------------------------------------------------- */

static void deadline_set(struct weft_core *c, struct cnt_op *op, uint64_t d)
{
	struct weft_cnt *k = c->ctr;

	op->deadline = d;
	if (!k->deadline || d < k->deadline) {
		k->deadline = d;
		weft_timer_sync(c);
	}
}

uint64_t weft_cnt_deadline(const struct weft_core *c)
{
	return c->ctr ? c->ctr->deadline : 0;
}

/* ---- objects and operations ---------------------------------------------- */

static void op_tx_update(struct weft_cnt *k, struct cnt_op *op)
{
	bool want = false;

	if (op->state == WEFT_CNT_OP_REQ || op->state == WEFT_CNT_OP_RUN) {
		want = op->need_req;
		if (op->dir == WEFT_CNT_WRITE && op->granted && op->next < op->nchunks &&
		    op->inflight < WEFT_CNT_WINDOW)
			want = true;
	}
	if (want != op->in_tx) {
		op->in_tx = want;
		if (want)
			k->ntx++;
		else
			k->ntx--;
	}
}

static void block_write(struct weft_core *c, struct cnt_obj *o)
{
	struct weft_cnt_block b = {
		.count = o->count, .error = o->error, .gen = o->gen, .failed = o->failed,
	};
	struct weft_cnt_ev_block e = { .count = o->count, .errors = o->errors };
	int ret;

	if (o->mode == WEFT_CNT_MODE_EVENT)
		ret = weft_dma_write(c, o->block_addr, &e, sizeof(e));
	else
		ret = weft_dma_write(c, o->block_addr, &b, sizeof(b));
	if (ret)
		weft_guest_error(c, "counter block 0x%llx not in guest RAM",
				 (unsigned long long)o->block_addr);
}

static void obj_notify(struct weft_core *c, unsigned int id, struct cnt_obj *o)
{
	if (o->count != 0 || o->notified)
		return;
	o->notified = true;
	weft_count(c, WEFT_CNT_C_NOTIFY, 1);
	if (o->flags & WEFT_CNTF_IRQ)
		weft_event_vec(c, WEFT_EV_CNT_ZERO, o->vector, id, 0, o->gen);
}

static void op_stop(struct weft_cnt *k, struct cnt_op *op, uint8_t state)
{
	op->state = state;
	op->need_req = false;
	op->deadline = 0;
	op_tx_update(k, op);
}

static void op_fail(struct weft_core *c, unsigned int id, unsigned int slot,
		    unsigned int reason)
{
	struct cnt_obj *o = &c->ctr->obj[id];
	struct cnt_op *op = &o->op[slot];
	uint64_t i;

	op_stop(c->ctr, op, WEFT_CNT_OP_FAILED);
	op->reason = reason;
	/* Its chunks may be posted again; those applied stay applied. */
	for (i = 0; i < op->nchunks; i++)
		bit_clear(o->posted, op->off / WEFT_CNT_CHUNK + i);
	o->error = reason;
	o->failed++;
	block_write(c, o);
	if (o->flags & WEFT_CNTF_IRQ)
		weft_event_vec(c, WEFT_EV_CNT_ERROR, o->vector, id, reason,
			       o->gen | ((uint64_t)slot << 16));
}

/* One chunk of op became applied: counter, progress, completion. */
static void chunk_applied(struct weft_core *c, unsigned int id, struct cnt_obj *o,
			  struct cnt_op *op, uint64_t bytes)
{
	uint64_t base = op->off / WEFT_CNT_CHUNK;

	op->applied += bytes;
	if (o->mode == WEFT_CNT_MODE_BYTES)
		o->count -= bytes;
	while (op->una < op->nchunks && bit_get(o->done, base + op->una))
		op->una++;
	op->retries = 0;
	if (op->una >= op->nchunks) {
		op_stop(c->ctr, op, WEFT_CNT_OP_DONE);
		o->ops_done++;
		if (o->mode == WEFT_CNT_MODE_OPS)
			o->count--;
	} else {
		op->state = WEFT_CNT_OP_RUN;
		deadline_set(c, op, now_ns(c) + WEFT_CNT_RTO_NS);
		op_tx_update(c->ctr, op);
	}
	block_write(c, o);
	obj_notify(c, id, o);
}

/* ---- WAIT_CNT: send queues waiting on an EVENT object -------------------- */
/*
 * Each EVENT object lists the QPs whose SQ waits on it, sorted by
 * threshold and linked by qpn through vq_qp.cw_next (qpn 0 is never a
 * QP, so 0 ends the list): a success event wakes exactly the QPs it lets
 * pass and looks at one more; a QP waits on at most one object.
 */
static void wait_link(struct weft_core *c, struct cnt_obj *o, struct vq_qp *qp)
{
	struct vq_qp *t = c->verbs->qp;
	uint32_t *at = &o->wait_head;

	while (*at && t[*at].cw_thr <= qp->cw_thr)
		at = &t[*at].cw_next;
	qp->cw_next = *at;
	*at = vq_qpn(c, qp);
}

void vq_cnt_unwait(struct weft_core *c, struct vq_qp *qp)
{
	struct vq_qp *t = c->verbs->qp;
	uint32_t n = vq_qpn(c, qp), *at;

	if (!qp->cw_slot)
		return;
	for (at = &c->ctr->obj[qp->cw_obj].wait_head; *at; at = &t[*at].cw_next) {
		if (*at == n) {
			*at = qp->cw_next;
			break;
		}
	}
	qp->cw_slot = 0;
	qp->cw_next = 0;
}

unsigned int vq_cnt_wait(struct weft_core *c, struct vq_qp *qp, unsigned int slot,
			 uint64_t thr, uint32_t idx, bool *passed)
{
	bool again = qp->cw_slot && qp->cw_idx == idx;    /* looked at again */
	const struct vq_cnt_slot *b;
	struct cnt_obj *o;

	vq_cnt_unwait(c, qp);
	*passed = false;
	if (slot == 0 || slot >= WEFT_CNT_QP_SLOTS)
		return WEFT_R_WAIT_SLOT;
	b = &qp->cnt[slot];
	o = b->obj < WEFT_CNT_NR_OBJ ? &c->ctr->obj[b->obj] : NULL;
	if (!b->gen || !o || !o->live || o->mode != WEFT_CNT_MODE_EVENT || o->gen != b->gen)
		return WEFT_R_WAIT_SLOT;
	if (o->count >= thr) {
		*passed = true;
		return WEFT_R_OK;
	}
	qp->cw_slot = (uint8_t)slot;
	qp->cw_obj = b->obj;
	qp->cw_idx = idx;
	qp->cw_thr = thr;
	wait_link(c, o, qp);
	if (!again)
		weft_count(c, WEFT_CNT_V_WAIT_HELD, 1);
	return WEFT_R_OK;
}

/* The counter qp waits on goes away (unbound, rebound, destroyed): its
 * WAIT_CNT completes in error and the QP goes to ERR, which flushes the
 * WQEs it held back. */
static void wait_fail(struct weft_core *c, struct vq_qp *qp)
{
	uint32_t idx = qp->cw_idx;

	vq_cnt_unwait(c, qp);
	weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_WAIT_GONE);
	vq_sq_fail(c, qp, idx, WEFT_VWC_LOC_QP_OP_ERR, WEFT_R_WAIT_GONE);
	vq_qp_error(c, qp, WEFT_R_WAIT_GONE);   /* only RC QPs have slots */
}

/* o counted a success: the waiters it lets pass go back to work. */
static void wait_wake(struct weft_core *c, struct cnt_obj *o)
{
	while (o->wait_head) {
		struct vq_qp *qp = &c->verbs->qp[o->wait_head];

		if (qp->cw_thr > o->count)
			break;
		o->wait_head = qp->cw_next;
		qp->cw_next = 0;
		qp->cw_slot = 0;
		weft_count(c, WEFT_CNT_V_WAIT_WAKES, 1);
		vq_work(c, qp);
	}
}

static void obj_free(struct weft_core *c, struct cnt_obj *o)
{
	unsigned int s;

	while (o->wait_head)
		wait_fail(c, &c->verbs->qp[o->wait_head]);

	for (s = 0; s < WEFT_CNT_MAX_OPS; s++)
		op_stop(c->ctr, &o->op[s], WEFT_CNT_OP_FREE);
	free(o->pages);
	free(o->done);
	free(o->posted);
	c->ctr->host_bytes -= o->host_bytes;
	o->pages = o->done = o->posted = NULL;
	o->host_bytes = 0;
	o->live = false;
}

static void exp_free(struct weft_core *c, struct cnt_exp *e)
{
	c->ctr->host_bytes -= (uint64_t)e->npages * sizeof(uint64_t);
	free(e->pages);
	e->pages = NULL;
	e->live = false;
}

/* ---- commands ------------------------------------------------------------ */

/* CREATE of an EVENT object: a status block, nothing else. */
static unsigned int create_event(struct weft_core *c, struct cnt_obj *o,
				 const struct weft_cnt_cmd *m, struct weft_vcmd_resp *r)
{
	uint16_t gen = o->gen;

	if (m->u.create.length || m->u.create.pages_addr || m->u.create.first_off ||
	    m->u.create.flags || m->u.create.ops || !m->u.create.block_addr ||
	    (m->u.create.block_addr & 7)) {
		r->reason = WEFT_R_CNT_MODE;
		return WEFT_CMD_EINVAL;
	}
	memset(o, 0, offsetof(struct cnt_obj, op));
	o->live = true;
	o->gen = (uint16_t)(gen + 1);
	o->mode = WEFT_CNT_MODE_EVENT;
	o->block_addr = m->u.create.block_addr;
	block_write(c, o);
	r->out[0] = o->gen;
	return WEFT_CMD_OK;
}

static unsigned int cmd_create(struct weft_core *c, const struct weft_cnt_cmd *m,
			       struct weft_vcmd_resp *r)
{
	struct weft_cnt *k = c->ctr;
	uint32_t id = m->handle;
	struct cnt_obj *o;
	uint64_t len = m->u.create.length, nch, words, bytes;
	unsigned int st = WEFT_CMD_OK;
	uint16_t gen;
	uint32_t np;

	if (id >= WEFT_CNT_NR_OBJ)
		return WEFT_CMD_EINVAL;
	o = &k->obj[id];
	if (o->live)
		return WEFT_CMD_EBUSY;
	if (m->u.create.mode == WEFT_CNT_MODE_EVENT)
		return create_event(c, o, m, r);
	if (len == 0 || len > WEFT_CNT_MAX_LEN || m->u.create.first_off >= WEFT_CNT_PAGE ||
	    !m->u.create.block_addr || (m->u.create.block_addr & 7) ||
	    m->u.create.mode > WEFT_CNT_MODE_OPS || (m->u.create.flags & ~WEFT_CNTF_IRQ) ||
	    m->u.create.vector >= c->cfg.nr_handlers ||
	    (m->u.create.mode == WEFT_CNT_MODE_OPS &&
	     (m->u.create.ops == 0 || m->u.create.ops > 0xffff)))
		return WEFT_CMD_EINVAL;
	np = npages_of(m->u.create.first_off, len);
	nch = chunks_of(len);
	words = (nch + 63) / 64;
	bytes = (uint64_t)np * 8 + words * 16;
	if (k->host_bytes + bytes > CNT_BUDGET)
		return WEFT_CMD_ENOMEM;
	gen = o->gen;
	memset(o, 0, offsetof(struct cnt_obj, op));
	o->gen = gen;
	o->pages = pages_load(c, m->u.create.pages_addr, np, &st);
	if (!o->pages)
		return st;
	o->done = calloc(words, sizeof(uint64_t));
	o->posted = calloc(words, sizeof(uint64_t));
	if (!o->done || !o->posted) {
		free(o->pages);
		free(o->done);
		free(o->posted);
		o->pages = o->done = o->posted = NULL;
		return WEFT_CMD_ENOMEM;
	}
	o->host_bytes = bytes;
	k->host_bytes += bytes;
	o->live = true;
	o->gen = (uint16_t)(gen + 1);
	o->mode = m->u.create.mode;
	o->flags = m->u.create.flags;
	o->vector = m->u.create.vector;
	o->block_addr = m->u.create.block_addr;
	o->length = len;
	o->first_off = m->u.create.first_off;
	o->npages = np;
	o->ops_total = m->u.create.ops;
	o->count = o->mode == WEFT_CNT_MODE_BYTES ? len : m->u.create.ops;
	block_write(c, o);
	r->out[0] = o->gen;
	return WEFT_CMD_OK;
}

static unsigned int cmd_post(struct weft_core *c, const struct weft_cnt_cmd *m,
			     struct weft_vcmd_resp *r)
{
	struct weft_cnt *k = c->ctr;
	uint32_t id = m->handle;
	struct cnt_obj *o;
	struct cnt_op *op;
	uint64_t off = m->u.post.offset, len = m->u.post.length, i, base;
	uint32_t s, running = 0;

	if (id >= WEFT_CNT_NR_OBJ || !k->obj[id].live)
		return WEFT_CMD_EINVAL;
	o = &k->obj[id];
	if (m->u.post.gen != o->gen || m->u.post.slot >= WEFT_CNT_MAX_OPS ||
	    (m->u.post.dir != WEFT_CNT_READ && m->u.post.dir != WEFT_CNT_WRITE) ||
	    m->u.post.node > WEFT_NODE_MAX_UNICAST || len == 0 || off % WEFT_CNT_CHUNK ||
	    off >= o->length || len > o->length - off ||
	    (len % WEFT_CNT_CHUNK && off + len != o->length) ||
	    m->u.post.remote_va + len < m->u.post.remote_va)
		return WEFT_CMD_EINVAL;
	op = &o->op[m->u.post.slot];
	if (op->state == WEFT_CNT_OP_REQ || op->state == WEFT_CNT_OP_RUN)
		return WEFT_CMD_EBUSY;
	if (o->mode == WEFT_CNT_MODE_OPS) {
		for (s = 0; s < WEFT_CNT_MAX_OPS; s++)
			running += o->op[s].state == WEFT_CNT_OP_REQ ||
				   o->op[s].state == WEFT_CNT_OP_RUN;
		if (o->ops_done + running >= o->ops_total)
			return WEFT_CMD_ESTATE;
	}
	base = off / WEFT_CNT_CHUNK;
	for (i = 0; i < chunks_of(len); i++)
		if (bit_get(o->posted, base + i))
			return WEFT_CMD_EBUSY;
	for (i = 0; i < chunks_of(len); i++)
		bit_set(o->posted, base + i);
	memset(op, 0, sizeof(*op));
	op->dir = m->u.post.dir;
	op->node = m->u.post.node;
	op->seq = ++k->seq;
	op->off = off;
	op->len = len;
	op->rva = m->u.post.remote_va;
	op->nchunks = (uint32_t)chunks_of(len);
	for (i = 0; i < op->nchunks; i++)
		if (bit_get(o->done, base + i))
			op->applied += (i + 1 == op->nchunks) ? len - i * WEFT_CNT_CHUNK
							      : WEFT_CNT_CHUNK;
	op->state = WEFT_CNT_OP_REQ;
	r->out[0] = op->seq;
	/* A re-post whose chunks were all applied before is done at once. */
	op->una = 0;
	while (op->una < op->nchunks && bit_get(o->done, base + op->una))
		op->una++;
	if (op->una >= op->nchunks) {
		op_stop(k, op, WEFT_CNT_OP_DONE);
		o->ops_done++;
		if (o->mode == WEFT_CNT_MODE_OPS)
			o->count--;
		block_write(c, o);
		obj_notify(c, id, o);
		return WEFT_CMD_OK;
	}
	op->next = op->una;
	op->need_req = true;
	op_tx_update(k, op);
	deadline_set(c, op, now_ns(c) + WEFT_CNT_RTO_NS);
	if (c->ops.kick)
		c->ops.kick(c->opaque);
	return WEFT_CMD_OK;
}

static unsigned int cmd_expose(struct weft_core *c, const struct weft_cnt_cmd *m,
			       struct weft_vcmd_resp *r)
{
	struct weft_cnt *k = c->ctr;
	uint32_t idx = m->handle;
	struct cnt_exp *e;
	uint64_t len = m->u.expose.length;
	unsigned int st = WEFT_CMD_OK;
	uint32_t np;

	if (idx >= WEFT_CNT_NR_EXP)
		return WEFT_CMD_EINVAL;
	e = &k->exp[idx];
	if (e->live)
		return WEFT_CMD_EBUSY;
	if (len == 0 || len > WEFT_CNT_MAX_LEN || m->u.expose.first_off >= WEFT_CNT_PAGE ||
	    m->u.expose.va + len < m->u.expose.va ||
	    !m->u.expose.rights || (m->u.expose.rights & ~(WEFT_CNT_R_READ | WEFT_CNT_R_WRITE)) ||
	    (m->u.expose.peer > WEFT_NODE_MAX_UNICAST && m->u.expose.peer != WEFT_CNT_ANY_PEER))
		return WEFT_CMD_EINVAL;
	np = npages_of(m->u.expose.first_off, len);
	if (k->host_bytes + (uint64_t)np * 8 > CNT_BUDGET)
		return WEFT_CMD_ENOMEM;
	e->pages = pages_load(c, m->u.expose.pages_addr, np, &st);
	if (!e->pages)
		return st;
	k->host_bytes += (uint64_t)np * 8;
	e->live = true;
	e->gen++;
	e->rights = m->u.expose.rights;
	e->peer = m->u.expose.peer;
	e->va = m->u.expose.va;
	e->length = len;
	e->first_off = m->u.expose.first_off;
	e->npages = np;
	e->served = 0;
	r->out[0] = e->gen;
	return WEFT_CMD_OK;
}

static void obj_dump(const struct cnt_obj *o, struct weft_cnt_obj_dump *d)
{
	unsigned int s;

	memset(d, 0, sizeof(*d));
	d->live = o->live;
	d->mode = o->mode;
	d->flags = o->flags;
	d->vector = o->vector;
	d->gen = o->gen;
	d->notified = o->notified;
	d->block_addr = o->block_addr;
	d->length = o->length;
	d->count = o->count;
	d->first_off = o->first_off;
	d->ops_done = o->ops_done;
	for (s = 0; o->live && s < WEFT_CNT_MAX_OPS; s++) {
		const struct cnt_op *op = &o->op[s];

		d->op[s] = (struct weft_cnt_op_dump){
			.state = op->state, .dir = op->dir, .node = op->node, .seq = op->seq,
			.reason = op->reason, .retries = op->retries, .offset = op->off,
			.length = op->len, .remote_va = op->rva, .applied = op->applied,
		};
	}
}

static unsigned int cmd_query(struct weft_core *c, const struct weft_cnt_cmd *m,
			      struct weft_vcmd_resp *r)
{
	struct weft_cnt_obj_dump d;

	(void)r;
	if (m->handle >= WEFT_CNT_NR_OBJ)
		return WEFT_CMD_EINVAL;
	obj_dump(&c->ctr->obj[m->handle], &d);
	return weft_dma_write(c, m->u.query.addr, &d, sizeof(d)) ? WEFT_CMD_EFAULT : WEFT_CMD_OK;
}

static unsigned int cmd_query_exp(struct weft_core *c, const struct weft_cnt_cmd *m,
				  struct weft_vcmd_resp *r)
{
	struct weft_cnt_exp_dump d;
	const struct cnt_exp *e;

	(void)r;
	if (m->handle >= WEFT_CNT_NR_EXP)
		return WEFT_CMD_EINVAL;
	e = &c->ctr->exp[m->handle];
	memset(&d, 0, sizeof(d));
	d.live = e->live;
	d.rights = e->rights;
	d.gen = e->gen;
	d.peer = e->peer;
	d.va = e->va;
	d.length = e->length;
	d.served = e->served;
	return weft_dma_write(c, m->u.query.addr, &d, sizeof(d)) ? WEFT_CMD_EFAULT : WEFT_CMD_OK;
}

static unsigned int cmd_destroy(struct weft_core *c, const struct weft_cnt_cmd *m,
				struct weft_vcmd_resp *r)
{
	struct weft_cnt *k = c->ctr;

	(void)r;
	if (m->handle >= WEFT_CNT_NR_OBJ || !k->obj[m->handle].live ||
	    k->obj[m->handle].gen != m->u.obj.gen)
		return WEFT_CMD_EINVAL;
	obj_free(c, &k->obj[m->handle]);
	return WEFT_CMD_OK;
}

static unsigned int cmd_unexpose(struct weft_core *c, const struct weft_cnt_cmd *m,
				 struct weft_vcmd_resp *r)
{
	struct weft_cnt *k = c->ctr;

	(void)r;
	if (m->handle >= WEFT_CNT_NR_EXP || !k->exp[m->handle].live ||
	    k->exp[m->handle].gen != m->u.obj.gen)
		return WEFT_CMD_EINVAL;
	exp_free(c, &k->exp[m->handle]);
	return WEFT_CMD_OK;
}

/* Object handle of generation gen, live; NULL with the reason in r. */
static struct cnt_obj *live_obj(struct weft_core *c, uint32_t handle, uint16_t gen,
				struct weft_vcmd_resp *r)
{
	struct weft_cnt *k = c->ctr;

	if (handle >= WEFT_CNT_NR_OBJ || !k->obj[handle].live) {
		r->reason = WEFT_R_CNT_OBJ_INVALID;
		return NULL;
	}
	if (k->obj[handle].gen != gen) {
		r->reason = WEFT_R_CNT_OBJ_STALE;
		return NULL;
	}
	return &k->obj[handle];
}

/* BIND_QP: slot of an RC QP counts on EVENT object handle. */
static unsigned int cmd_bind_qp(struct weft_core *c, const struct weft_cnt_cmd *m,
				struct weft_vcmd_resp *r)
{
	struct vq_qp *qp = vq_qp(c, m->u.bind.qpn);
	const struct cnt_obj *o = live_obj(c, m->handle, m->u.bind.gen, r);

	if (!o)
		return WEFT_CMD_EINVAL;
	if (o->mode != WEFT_CNT_MODE_EVENT || (m->u.bind.events & ~WEFT_CNT_EV_ALL)) {
		r->reason = WEFT_R_CNT_MODE;
		return WEFT_CMD_EINVAL;
	}
	if (!qp || qp->type != WEFT_VQPT_RC) {
		r->reason = WEFT_R_QP_INVALID;
		return WEFT_CMD_EINVAL;
	}
	if (m->u.bind.slot == 0 || m->u.bind.slot >= WEFT_CNT_QP_SLOTS) {
		r->reason = WEFT_R_CNT_SLOT;
		return WEFT_CMD_EINVAL;
	}
	if (qp->cw_slot == m->u.bind.slot)
		wait_fail(c, qp);
	qp->cnt[m->u.bind.slot] = (struct vq_cnt_slot){
		.obj = (uint16_t)m->handle, .gen = o->gen, .events = m->u.bind.events,
	};
	return WEFT_CMD_OK;
}

static unsigned int cmd_unbind_qp(struct weft_core *c, const struct weft_cnt_cmd *m,
				  struct weft_vcmd_resp *r)
{
	struct vq_qp *qp = vq_qp(c, m->u.bind.qpn);

	if (!qp) {
		r->reason = WEFT_R_QP_INVALID;
		return WEFT_CMD_EINVAL;
	}
	if (m->u.bind.slot == 0 || m->u.bind.slot >= WEFT_CNT_QP_SLOTS) {
		r->reason = WEFT_R_CNT_SLOT;
		return WEFT_CMD_EINVAL;
	}
	if (qp->cw_slot == m->u.bind.slot)
		wait_fail(c, qp);
	memset(&qp->cnt[m->u.bind.slot], 0, sizeof(qp->cnt[0]));
	return WEFT_CMD_OK;
}

/*
 * EV_SET: software adds to or sets a word of an EVENT counter.  The block is
 * written first, then the waiters the new count lets pass are released, as
 * after an event; a count set lower releases nothing and recalls nothing.
 */
static unsigned int cmd_ev_set(struct weft_core *c, const struct weft_cnt_cmd *m,
			       struct weft_vcmd_resp *r)
{
	struct cnt_obj *o = live_obj(c, m->handle, m->u.ev.gen, r);
	uint64_t *w;

	if (!o)
		return WEFT_CMD_EINVAL;
	if (o->mode != WEFT_CNT_MODE_EVENT ||
	    (m->u.ev.op != WEFT_CNT_EV_ADD && m->u.ev.op != WEFT_CNT_EV_SET) ||
	    (m->u.ev.word != WEFT_CNT_EV_COUNT && m->u.ev.word != WEFT_CNT_EV_ERRORS)) {
		r->reason = WEFT_R_CNT_MODE;
		return WEFT_CMD_EINVAL;
	}
	w = m->u.ev.word == WEFT_CNT_EV_COUNT ? &o->count : &o->errors;
	*w = m->u.ev.op == WEFT_CNT_EV_ADD ? *w + m->u.ev.value : m->u.ev.value;
	r->out[0] = *w;
	block_write(c, o);
	if (m->u.ev.word == WEFT_CNT_EV_COUNT)
		wait_wake(c, o);
	return WEFT_CMD_OK;
}

void vq_cnt_slot_event(struct weft_core *c, struct vq_qp *qp, unsigned int slot, bool err)
{
	const struct vq_cnt_slot *b;
	struct cnt_obj *o;

	if (slot == 0 || slot >= WEFT_CNT_QP_SLOTS) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_CNT_SLOT);
		return;
	}
	b = &qp->cnt[slot];
	o = b->obj < WEFT_CNT_NR_OBJ ? &c->ctr->obj[b->obj] : NULL;
	if (!b->gen || !o || !o->live || o->mode != WEFT_CNT_MODE_EVENT || o->gen != b->gen) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_CNT_SLOT);
		return;
	}
	if (err) {
		o->errors++;
		weft_count(c, WEFT_CNT_C_EVENT_ERRS, 1);
	} else {
		o->count++;
		weft_count(c, WEFT_CNT_C_EVENTS, 1);
	}
	block_write(c, o);
	/* After the block: a released WQE never runs ahead of the count. */
	if (!err)
		wait_wake(c, o);
}

void vq_cnt_qp_event(struct weft_core *c, struct vq_qp *qp, unsigned int ev)
{
	unsigned int s;

	for (s = 1; s < WEFT_CNT_QP_SLOTS; s++)
		if (qp->cnt[s].gen && (qp->cnt[s].events & ev))
			vq_cnt_slot_event(c, qp, s, false);
}

/* The commands, by enum weft_cnt_cmd_op. */
static unsigned int (*const cmd_fn[])(struct weft_core *c, const struct weft_cnt_cmd *m,
				      struct weft_vcmd_resp *r) = {
	[WEFT_CNT_CMD_CREATE] = cmd_create,
	[WEFT_CNT_CMD_DESTROY] = cmd_destroy,
	[WEFT_CNT_CMD_POST] = cmd_post,
	[WEFT_CNT_CMD_EXPOSE] = cmd_expose,
	[WEFT_CNT_CMD_UNEXPOSE] = cmd_unexpose,
	[WEFT_CNT_CMD_QUERY] = cmd_query,
	[WEFT_CNT_CMD_QUERY_EXP] = cmd_query_exp,
	[WEFT_CNT_CMD_BIND_QP] = cmd_bind_qp,
	[WEFT_CNT_CMD_UNBIND_QP] = cmd_unbind_qp,
	[WEFT_CNT_CMD_EV_SET] = cmd_ev_set,
};

void weft_cnt_cmd(struct weft_core *c, uint64_t addr)
{
	struct weft_cnt *k = c->ctr;
	struct weft_cnt_cmd m;
	struct weft_vcmd_resp r;
	struct weft_trace t = { .kind = WEFT_TR_CMD, .window = WEFT_NO_WINDOW, .val = addr };
	unsigned int st;

	memset(&r, 0, sizeof(r));
	if (addr & 63 || weft_dma_read(c, addr, &m, sizeof(m))) {
		k->cmd_status = WEFT_CMD_EFAULT;
		t.name = "CNT_CMD";
		t.size = WEFT_CMD_EFAULT;
		t.msg = "command block not 64-byte aligned guest RAM";
		weft_guest_error(c, "CNT_CMD: block 0x%llx not 64-byte aligned guest RAM",
				 (unsigned long long)addr);
		weft_trace(c, &t);
		return;
	}
	if (m.op < sizeof(cmd_fn) / sizeof(cmd_fn[0]) && cmd_fn[m.op])
		st = cmd_fn[m.op](c, &m, &r);
	else
		st = WEFT_CMD_EINVAL;
	r.status = st;
	k->cmd_status = st;
	t.name = weft_cnt_cmd_name(m.op);
	t.size = st;
	if (st != WEFT_CMD_OK) {
		t.msg = "counter command refused";
		weft_count(c, WEFT_CNT_CMD_DISCARDED, 1);
	}
	weft_trace(c, &t);
	if (weft_dma_write(c, addr + sizeof(m), &r, sizeof(r)))
		weft_guest_error(c, "CNT_CMD: response at 0x%llx not guest RAM",
				 (unsigned long long)(addr + sizeof(m)));
}

uint64_t weft_cnt_reg_read(struct weft_core *c, uint64_t reg)
{
	switch (reg) {
	case WEFT_REG_CNT_NR_OBJ:
		return WEFT_CNT_NR_OBJ;
	case WEFT_REG_CNT_NR_EXP:
		return WEFT_CNT_NR_EXP;
	case WEFT_REG_CNT_CMD_STATUS:
		return c->ctr->cmd_status;
	default:
		return 0;
	}
}

/* ---- responder ----------------------------------------------------------- */

static bool exp_covers(const struct cnt_exp *e, uint64_t va, uint64_t len)
{
	return e->live && va >= e->va && va - e->va < e->length &&
	       len <= e->length - (va - e->va);
}

static bool exp_allows(const struct cnt_exp *e, uint16_t node, uint8_t right)
{
	return (e->rights & right) && (e->peer == WEFT_CNT_ANY_PEER || e->peer == node);
}

/* The exposure holding [va, va + len) with right for node; its index or
 * -1 with the reason. */
static int exp_find(struct weft_core *c, uint16_t node, uint64_t va, uint64_t len,
		    uint8_t right, unsigned int *reason)
{
	struct weft_cnt *k = c->ctr;
	unsigned int i;

	*reason = WEFT_R_CNT_NOT_EXPOSED;
	if (len == 0 || va + len < va)
		return -1;
	for (i = 0; i < WEFT_CNT_NR_EXP; i++) {
		const struct cnt_exp *e = &k->exp[i];

		if (!exp_covers(e, va, len))
			continue;
		if (!exp_allows(e, node, right)) {
			*reason = WEFT_R_CNT_RIGHTS;
			continue;
		}
		return (int)i;
	}
	return -1;
}

static bool op_shape_ok(const struct weft_cnt_hdr *h)
{
	return h->length && h->length <= WEFT_CNT_MAX_LEN && h->offset < h->length &&
	       h->offset % WEFT_CNT_CHUNK == 0 && h->remote_va + h->length >= h->remote_va &&
	       (h->dir == WEFT_CNT_READ || h->dir == WEFT_CNT_WRITE);
}

static bool same_op(const struct cnt_job *j, uint16_t node, const struct weft_cnt_hdr *h)
{
	return j->node == node && j->h.obj == h->obj && j->h.gen == h->gen &&
	       j->h.slot == h->slot && j->h.seq == h->seq;
}

static void rx_write_op(struct weft_core *c, const struct weft_wire_hdr *wh,
			const struct weft_cnt_hdr *h)
{
	struct weft_cnt *k = c->ctr;
	unsigned int reason, i;
	struct cnt_job *j = NULL;
	int e;

	if (!op_shape_ok(h) || h->dir != WEFT_CNT_READ || h->span == 0 ||
	    h->span > h->length - h->offset) {
		cnt_drop(c, wh, WEFT_R_BAD_HEADER);
		return;
	}
	e = exp_find(c, wh->src_node, h->remote_va, h->length, WEFT_CNT_R_READ, &reason);
	if (e < 0) {
		cnt_drop(c, wh, reason);
		cnt_error(c, wh->src_node, h, reason);
		return;
	}
	for (i = 0; i < WEFT_CNT_RESP_JOBS; i++)
		if (k->job[i].live && same_op(&k->job[i], wh->src_node, h))
			j = &k->job[i];
	for (i = 0; !j && i < WEFT_CNT_RESP_JOBS; i++)
		if (!k->job[i].live) {
			j = &k->job[i];
			k->njobs++;
		}
	if (!j) {
		/* The initiator resends when its timer runs out. */
		cnt_drop(c, wh, WEFT_R_RX_QUEUE_FULL);
		return;
	}
	j->live = true;
	j->node = wh->src_node;
	j->exp = (uint8_t)e;
	j->exp_gen = k->exp[e].gen;
	j->h = *h;
	j->pos = h->offset;
	j->end = h->offset + h->span;
	if (c->ops.kick)
		c->ops.kick(c->opaque);
}

static void rx_read_op(struct weft_core *c, const struct weft_wire_hdr *wh,
		       const struct weft_cnt_hdr *h)
{
	struct weft_cnt_hdr a = *h;
	unsigned int reason;

	if (!op_shape_ok(h) || h->dir != WEFT_CNT_WRITE) {
		cnt_drop(c, wh, WEFT_R_BAD_HEADER);
		return;
	}
	if (exp_find(c, wh->src_node, h->remote_va, h->length, WEFT_CNT_R_WRITE, &reason) < 0) {
		cnt_drop(c, wh, reason);
		cnt_error(c, wh->src_node, h, reason);
		return;
	}
	a.span = 0;
	a.offset = 0;
	cnt_answer(c, WEFT_PKT_CNT_ACK, wh->src_node, &a);
}

/* Write data arriving at the target: placed through the exposure. */
static void rx_write_data(struct weft_core *c, const struct weft_wire_hdr *wh,
			  const struct weft_cnt_hdr *h, const uint8_t *data, size_t dlen)
{
	struct weft_cnt_hdr a = *h;
	unsigned int reason;
	struct cnt_exp *ex;
	uint64_t va;
	int e;

	if (!op_shape_ok(h) || dlen == 0 || dlen > WEFT_CNT_CHUNK || h->span != dlen ||
	    dlen != (h->length - h->offset < WEFT_CNT_CHUNK ? h->length - h->offset
							    : WEFT_CNT_CHUNK)) {
		cnt_drop(c, wh, WEFT_R_CNT_OUTSIDE);
		return;
	}
	va = h->remote_va + h->offset;
	e = exp_find(c, wh->src_node, va, dlen, WEFT_CNT_R_WRITE, &reason);
	if (e < 0) {
		cnt_drop(c, wh, reason);
		return;
	}
	ex = &c->ctr->exp[e];
	if (pages_io(c, ex->pages, ex->first_off, va - ex->va, (void *)data, dlen, true)) {
		cnt_drop(c, wh, WEFT_R_DMA_ERROR);
		return;
	}
	ex->served += dlen;
	weft_count(c, WEFT_CNT_C_DATA_RX, 1);
	weft_rx_accept(c, wh, WEFT_NO_WINDOW, sizeof(*wh) + wh->length);
	cnt_answer(c, WEFT_PKT_CNT_ACK, wh->src_node, &a);
}

/* A read job cannot go on: its request's drop is counted with reason,
 * and the initiator gets CNT_ERROR with it. */
static int job_abort(struct weft_core *c, struct cnt_job *j, unsigned int reason)
{
	struct weft_wire_hdr wh = {
		.version = WEFT_WIRE_VERSION, .type = WEFT_PKT_CNT_WRITE_OP,
		.dst_node = c->cfg.node_id, .src_node = j->node,
	};

	cnt_drop(c, &wh, reason);
	cnt_error(c, j->node, &j->h, reason);
	j->live = false;
	c->ctr->njobs--;
	return 1;
}

/* One data packet of a read job. 1 sent, 0 nothing, -EAGAIN. */
static int job_step(struct weft_core *c, struct cnt_job *j)
{
	struct weft_cnt *k = c->ctr;
	struct cnt_exp *e = &k->exp[j->exp];
	uint8_t buf[WEFT_CNT_CHUNK];
	struct weft_cnt_hdr h = j->h;
	uint64_t n = j->end - j->pos;
	int rc;

	if (n > WEFT_CNT_CHUNK)
		n = WEFT_CNT_CHUNK;
	/* The exposure may have gone since the request: check again. */
	if (e->gen != j->exp_gen || !exp_covers(e, j->h.remote_va + j->pos, n) ||
	    !exp_allows(e, j->node, WEFT_CNT_R_READ))
		return job_abort(c, j, WEFT_R_CNT_NOT_EXPOSED);
	if (pages_io(c, e->pages, e->first_off, j->h.remote_va + j->pos - e->va, buf, n, false))
		return job_abort(c, j, WEFT_R_DMA_ERROR);
	h.offset = j->pos;
	h.span = n;
	rc = cnt_xmit(c, WEFT_PKT_CNT_DATA, j->node, &h, buf, n);
	if (rc)
		return rc;
	e->served += n;
	j->pos += n;
	if (j->pos >= j->end) {
		j->live = false;
		k->njobs--;
	}
	return 1;
}

/* ---- initiator receive ----------------------------------------------------- */

/* The operation a packet from node names, or NULL with the reason. */
static struct cnt_op *op_match(struct weft_core *c, uint16_t node, const struct weft_cnt_hdr *h,
			       unsigned int *reason)
{
	struct cnt_obj *o;
	struct cnt_op *op;

	if (h->obj >= WEFT_CNT_NR_OBJ) {
		*reason = WEFT_R_CNT_OBJ_INVALID;
		return NULL;
	}
	o = &c->ctr->obj[h->obj];
	if (!o->live) {
		*reason = WEFT_R_CNT_OBJ_INVALID;
		return NULL;
	}
	if (h->gen != o->gen) {
		*reason = WEFT_R_CNT_OBJ_STALE;
		return NULL;
	}
	*reason = WEFT_R_CNT_OP_MISMATCH;
	if (h->slot >= WEFT_CNT_MAX_OPS)
		return NULL;
	op = &o->op[h->slot];
	if (op->state == WEFT_CNT_OP_FREE || op->seq != h->seq || op->node != node ||
	    op->dir != h->dir || op->len != h->length || op->rva != h->remote_va ||
	    h->block_pa != o->block_addr ||
	    h->region_pa != o->pages[(o->first_off + op->off) >> WEFT_CNT_PAGE_SHIFT] +
			    ((o->first_off + op->off) & (WEFT_CNT_PAGE - 1)))
		return NULL;
	if (op->state != WEFT_CNT_OP_REQ && op->state != WEFT_CNT_OP_RUN) {
		*reason = WEFT_R_CNT_DUP;
		return NULL;
	}
	return op;
}

static uint64_t chunk_len(const struct cnt_op *op, uint64_t offset)
{
	return op->len - offset < WEFT_CNT_CHUNK ? op->len - offset : WEFT_CNT_CHUNK;
}

static void rx_read_data(struct weft_core *c, const struct weft_wire_hdr *wh,
			 const struct weft_cnt_hdr *h, const uint8_t *data, size_t dlen)
{
	unsigned int reason;
	struct cnt_op *op = op_match(c, wh->src_node, h, &reason);
	struct cnt_obj *o;
	uint64_t ch;

	if (!op) {
		cnt_drop(c, wh, reason);
		return;
	}
	o = &c->ctr->obj[h->obj];
	if (h->offset >= op->len || h->offset % WEFT_CNT_CHUNK || h->span != dlen ||
	    dlen != chunk_len(op, h->offset)) {
		cnt_drop(c, wh, WEFT_R_CNT_OUTSIDE);
		return;
	}
	ch = (op->off + h->offset) / WEFT_CNT_CHUNK;
	if (bit_get(o->done, ch)) {
		cnt_drop(c, wh, WEFT_R_CNT_DUP);
		return;
	}
	if (pages_io(c, o->pages, o->first_off, op->off + h->offset, (void *)data, dlen, true)) {
		cnt_drop(c, wh, WEFT_R_DMA_ERROR);
		return;
	}
	bit_set(o->done, ch);
	weft_count(c, WEFT_CNT_C_DATA_RX, 1);
	weft_rx_accept(c, wh, WEFT_NO_WINDOW, sizeof(*wh) + wh->length);
	chunk_applied(c, h->obj, o, op, dlen);
}

static void rx_ack(struct weft_core *c, const struct weft_wire_hdr *wh,
		   const struct weft_cnt_hdr *h)
{
	unsigned int reason;
	struct cnt_op *op = op_match(c, wh->src_node, h, &reason);
	struct cnt_obj *o;
	uint64_t ch, n;

	if (!op || op->dir != WEFT_CNT_WRITE) {
		cnt_drop(c, wh, op ? WEFT_R_CNT_OP_MISMATCH : reason);
		return;
	}
	o = &c->ctr->obj[h->obj];
	if (h->span == 0) {             /* go */
		weft_rx_accept(c, wh, WEFT_NO_WINDOW, sizeof(*wh) + wh->length);
		if (!op->granted) {
			op->granted = true;
			op->need_req = false;
			op->state = WEFT_CNT_OP_RUN;
			op->retries = 0;
			deadline_set(c, op, now_ns(c) + WEFT_CNT_RTO_NS);
			op_tx_update(c->ctr, op);
		}
		return;
	}
	if (h->offset >= op->len || h->offset % WEFT_CNT_CHUNK ||
	    h->span != (n = chunk_len(op, h->offset))) {
		cnt_drop(c, wh, WEFT_R_CNT_OUTSIDE);
		return;
	}
	ch = (op->off + h->offset) / WEFT_CNT_CHUNK;
	if (bit_get(o->done, ch)) {
		cnt_drop(c, wh, WEFT_R_CNT_DUP);
		return;
	}
	bit_set(o->done, ch);
	if (op->inflight)
		op->inflight--;
	weft_rx_accept(c, wh, WEFT_NO_WINDOW, sizeof(*wh) + wh->length);
	chunk_applied(c, h->obj, o, op, n);
}

static void rx_error(struct weft_core *c, const struct weft_wire_hdr *wh,
		     const struct weft_cnt_hdr *h)
{
	unsigned int reason;
	struct cnt_op *op = op_match(c, wh->src_node, h, &reason);
	unsigned int cause = h->cause;

	if (!op) {
		cnt_drop(c, wh, reason);
		return;
	}
	weft_count(c, WEFT_CNT_C_ERR_RX, 1);
	weft_rx_accept(c, wh, WEFT_NO_WINDOW, sizeof(*wh) + wh->length);
	if (cause == WEFT_R_OK || cause >= WEFT_R__COUNT)
		cause = WEFT_R_BAD_HEADER;
	op_fail(c, h->obj, h->slot, cause);
}

void weft_cnt_rx(struct weft_core *c, const struct weft_wire_hdr *wh, const uint8_t *payload,
		 size_t plen)
{
	struct weft_cnt_hdr h;

	/* Counter packets are unicast: a broadcast or multicast one is bad. */
	if (plen < sizeof(h) || (wh->type != WEFT_PKT_CNT_DATA && plen != sizeof(h)) ||
	    wh->src_node > WEFT_NODE_MAX_UNICAST || wh->dst_node != c->cfg.node_id) {
		cnt_drop(c, wh, WEFT_R_BAD_HEADER);
		return;
	}
	memcpy(&h, payload, sizeof(h));
	switch (wh->type) {
	case WEFT_PKT_CNT_WRITE_OP:
		weft_count(c, WEFT_CNT_C_REQ_RX, 1);
		rx_write_op(c, wh, &h);
		break;
	case WEFT_PKT_CNT_READ_OP:
		weft_count(c, WEFT_CNT_C_REQ_RX, 1);
		rx_read_op(c, wh, &h);
		break;
	case WEFT_PKT_CNT_DATA:
		if (h.dir == WEFT_CNT_WRITE)
			rx_write_data(c, wh, &h, payload + sizeof(h), plen - sizeof(h));
		else
			rx_read_data(c, wh, &h, payload + sizeof(h), plen - sizeof(h));
		break;
	case WEFT_PKT_CNT_ACK:
		rx_ack(c, wh, &h);
		break;
	case WEFT_PKT_CNT_ERROR:
		rx_error(c, wh, &h);
		break;
	default:
		cnt_drop(c, wh, WEFT_R_BAD_TYPE);
		break;
	}
}

/* ---- initiator transmit ---------------------------------------------------- */

static void op_hdr(const struct cnt_obj *o, unsigned int id, unsigned int slot,
		   const struct cnt_op *op, struct weft_cnt_hdr *h)
{
	uint64_t a = o->first_off + op->off;

	memset(h, 0, sizeof(*h));
	h->obj = (uint16_t)id;
	h->gen = o->gen;
	h->slot = (uint8_t)slot;
	h->dir = op->dir;
	h->seq = op->seq;
	h->region_pa = o->pages[a >> WEFT_CNT_PAGE_SHIFT] + (a & (WEFT_CNT_PAGE - 1));
	h->block_pa = o->block_addr;
	h->remote_va = op->rva;
	h->length = op->len;
}

static int op_step(struct weft_core *c, unsigned int id, unsigned int slot)
{
	struct weft_cnt *k = c->ctr;
	struct cnt_obj *o = &k->obj[id];
	struct cnt_op *op = &o->op[slot];
	struct weft_cnt_hdr h;
	uint8_t buf[WEFT_CNT_CHUNK];
	uint64_t off, n;
	int rc;

	op_hdr(o, id, slot, op, &h);
	if (op->need_req) {
		h.offset = (uint64_t)op->una * WEFT_CNT_CHUNK;
		h.span = op->dir == WEFT_CNT_READ ? op->len - h.offset : 0;
		if (op->dir == WEFT_CNT_WRITE)
			h.offset = 0;
		rc = cnt_xmit(c, op->dir == WEFT_CNT_READ ? WEFT_PKT_CNT_WRITE_OP
							   : WEFT_PKT_CNT_READ_OP,
			      op->node, &h, NULL, 0);
		if (rc)
			return rc;
		op->need_req = false;
		op_tx_update(k, op);
		return 1;
	}
	/* Write data: the next chunk not applied yet. */
	while (op->next < op->nchunks && bit_get(o->done, op->off / WEFT_CNT_CHUNK + op->next))
		op->next++;
	if (op->next >= op->nchunks) {
		op_tx_update(k, op);
		return 0;
	}
	off = (uint64_t)op->next * WEFT_CNT_CHUNK;
	n = chunk_len(op, off);
	if (pages_io(c, o->pages, o->first_off, op->off + off, buf, n, false)) {
		weft_guest_error(c, "counter object %u: region page not guest RAM", id);
		op_fail(c, id, slot, WEFT_R_DMA_ERROR);
		return 1;
	}
	h.offset = off;
	h.span = n;
	rc = cnt_xmit(c, WEFT_PKT_CNT_DATA, op->node, &h, buf, n);
	if (rc)
		return rc;
	op->next++;
	op->inflight++;
	op_tx_update(k, op);
	return 1;
}

/* ---- poll, timer, reset ---------------------------------------------------- */

bool weft_cnt_has_work(const struct weft_core *c)
{
	const struct weft_cnt *k = c->ctr;

	return k->ctl_count || k->njobs || k->ntx;
}

static int jobs_step(struct weft_core *c)
{
	struct weft_cnt *k = c->ctr;
	uint32_t i;

	for (i = 0; k->njobs && i < WEFT_CNT_RESP_JOBS; i++) {
		struct cnt_job *j = &k->job[(k->job_cur + i) % WEFT_CNT_RESP_JOBS];

		if (j->live) {
			k->job_cur = (k->job_cur + i + 1) % WEFT_CNT_RESP_JOBS;
			return job_step(c, j);
		}
	}
	return 0;
}

static int ops_step(struct weft_core *c)
{
	struct weft_cnt *k = c->ctr;
	uint32_t i, n = WEFT_CNT_NR_OBJ * WEFT_CNT_MAX_OPS;
	int rc;

	for (i = 0; k->ntx && i < n; i++) {
		uint32_t x = (k->tx_cur + i) % n;
		struct cnt_obj *o = &k->obj[x / WEFT_CNT_MAX_OPS];

		if (o->live && o->op[x % WEFT_CNT_MAX_OPS].in_tx) {
			k->tx_cur = (x + 1) % n;
			rc = op_step(c, x / WEFT_CNT_MAX_OPS, x % WEFT_CNT_MAX_OPS);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int weft_cnt_poll(struct weft_core *c)
{
	struct weft_cnt *k = c->ctr;
	int rc;

	if (k->ctl_count) {
		struct cnt_ctl *q = &k->ctl[k->ctl_head];

		rc = cnt_xmit(c, q->type, q->node, &q->h, NULL, 0);
		if (rc)
			return rc;
		k->ctl_head = (k->ctl_head + 1) % CTLQ_LEN;
		k->ctl_count--;
		return 1;
	}
	/* The responder's jobs and our own operations take turns. */
	k->turn = !k->turn;
	rc = k->turn ? jobs_step(c) : ops_step(c);
	if (rc)
		return rc;
	return k->turn ? ops_step(c) : jobs_step(c);
}

void weft_cnt_timer(struct weft_core *c)
{
	struct weft_cnt *k = c->ctr;
	uint64_t now = now_ns(c), next = 0;
	unsigned int id, s;

	if (!k->deadline || now < k->deadline)
		return;
	for (id = 0; id < WEFT_CNT_NR_OBJ; id++) {
		struct cnt_obj *o = &k->obj[id];

		for (s = 0; o->live && s < WEFT_CNT_MAX_OPS; s++) {
			struct cnt_op *op = &o->op[s];

			if (op->state != WEFT_CNT_OP_REQ && op->state != WEFT_CNT_OP_RUN)
				continue;
			if (op->deadline && now >= op->deadline) {
				if (op->retries >= WEFT_CNT_RETRIES) {
					op_fail(c, id, s, WEFT_R_CNT_TIMEOUT);
					continue;
				}
				op->retries++;
				weft_count(c, WEFT_CNT_C_RESEND, 1);
				if (op->dir == WEFT_CNT_READ || !op->granted) {
					op->need_req = true;
				} else {
					op->next = op->una;
					op->inflight = 0;
				}
				op->deadline = now + WEFT_CNT_RTO_NS;
				op_tx_update(k, op);
			}
			if (op->deadline && (!next || op->deadline < next))
				next = op->deadline;
		}
	}
	k->deadline = next;
	weft_timer_sync(c);
	if (k->ntx && c->ops.kick)
		c->ops.kick(c->opaque);
}

void weft_cnt_poll_timer(struct weft_core *c)
{
	if (c->ctr->deadline && c->ops.now_ns && c->ops.now_ns(c->opaque) >= c->ctr->deadline)
		weft_cnt_timer(c);
}

void weft_cnt_reset(struct weft_core *c)
{
	struct weft_cnt *k = c->ctr;
	unsigned int i;

	/* Generations and sequence numbers survive, so that packets of
	 * objects from before the reset stay stale.  The verbs engine was
	 * reset first: no QP waits any more. */
	for (i = 0; i < WEFT_CNT_NR_OBJ; i++) {
		k->obj[i].wait_head = 0;
		if (k->obj[i].live)
			obj_free(c, &k->obj[i]);
	}
	for (i = 0; i < WEFT_CNT_NR_EXP; i++)
		if (k->exp[i].live)
			exp_free(c, &k->exp[i]);
	memset(k->job, 0, sizeof(k->job));
	k->njobs = k->job_cur = 0;
	k->ctl_head = k->ctl_count = 0;
	k->ntx = k->tx_cur = 0;
	k->deadline = 0;
	k->cmd_status = WEFT_CMD_OK;
	weft_timer_sync(c);
}

struct weft_cnt *weft_cnt_new(void)
{
	return calloc(1, sizeof(struct weft_cnt));
}

void weft_cnt_free(struct weft_cnt *k)
{
	unsigned int i;

	if (!k)
		return;
	for (i = 0; i < WEFT_CNT_NR_OBJ; i++) {
		free(k->obj[i].pages);
		free(k->obj[i].done);
		free(k->obj[i].posted);
	}
	for (i = 0; i < WEFT_CNT_NR_EXP; i++)
		free(k->exp[i].pages);
	free(k);
}

bool weft_core_cnt_obj(const struct weft_core *c, uint32_t id, struct weft_cnt_obj_dump *d)
{
	if (id >= WEFT_CNT_NR_OBJ)
		return false;
	obj_dump(&c->ctr->obj[id], d);
	return true;
}

/* ---- saved state (weft_state.h) ------------------------------------------------ */

/* A change of these structs stops here: its author checks that a new
 * field is no pointer or deadline (handle it below) nor an index used
 * unchecked (add it to cnt_state_check). */
WEFT_STATIC_ASSERT(sizeof(struct weft_cnt) == 219144, "weft_cnt changed: see weft_cnt_save");
WEFT_STATIC_ASSERT(sizeof(struct cnt_obj) == 744, "cnt_obj changed: see weft_cnt_save");
WEFT_STATIC_ASSERT(sizeof(struct cnt_op) == 80, "cnt_op changed: see weft_cnt_save");
WEFT_STATIC_ASSERT(sizeof(struct cnt_exp) == 48, "cnt_exp changed: see weft_cnt_save");

static uint64_t obj_words(const struct cnt_obj *o)
{
	return (chunks_of(o->length) + 63) / 64;
}

void weft_cnt_save(const struct weft_core *c, struct weft_state_w *w)
{
	const struct weft_cnt *k = c->ctr;
	struct weft_cnt *x = malloc(sizeof(*x));
	unsigned int i, s;

	if (!x) {
		w->oom = true;
		return;
	}
	*x = *k;
	x->deadline = weft_state_rel(w, x->deadline);
	for (i = 0; i < WEFT_CNT_NR_OBJ; i++) {
		x->obj[i].pages = x->obj[i].done = x->obj[i].posted = NULL;
		for (s = 0; s < WEFT_CNT_MAX_OPS; s++)
			x->obj[i].op[s].deadline = weft_state_rel(w, x->obj[i].op[s].deadline);
	}
	for (i = 0; i < WEFT_CNT_NR_EXP; i++)
		x->exp[i].pages = NULL;
	weft_state_put_struct(w, "weft_cnt", x, sizeof(*x), NULL);
	free(x);
	for (i = 0; i < WEFT_CNT_NR_OBJ; i++) {
		const struct cnt_obj *o = &k->obj[i];

		if (!o->live || o->mode == WEFT_CNT_MODE_EVENT)
			continue;
		weft_state_put(w, o->pages, (size_t)o->npages * sizeof(uint64_t));
		weft_state_put(w, o->done, obj_words(o) * 8);
		weft_state_put(w, o->posted, obj_words(o) * 8);
	}
	for (i = 0; i < WEFT_CNT_NR_EXP; i++)
		if (k->exp[i].live)
			weft_state_put(w, k->exp[i].pages, (size_t)k->exp[i].npages * 8);
}

static bool cnt_region_ok(uint32_t first_off, uint64_t length, uint32_t npages)
{
	if (length == 0)        /* an EVENT object */
		return first_off == 0 && npages == 0;
	return first_off < WEFT_CNT_PAGE && length && length <= WEFT_CNT_MAX_LEN &&
	       npages == npages_of(first_off, length);
}

/* A loaded page list, each entry page aligned (as pages_load checks). */
static uint64_t *cnt_get_pages(struct weft_state_r *r, uint32_t n)
{
	uint64_t *p = malloc((size_t)n * sizeof(*p));
	uint32_t i;

	if (!p) {
		weft_state_fail(r, "out of memory");
		return NULL;
	}
	if (!weft_state_get(r, p, (size_t)n * sizeof(*p))) {
		free(p);
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (p[i] & (WEFT_CNT_PAGE - 1) || p[i] + WEFT_CNT_PAGE < p[i]) {
			free(p);
			weft_state_fail(r, "counters: page %u of a list not page aligned", i);
			return NULL;
		}
	return p;
}

static bool cnt_state_check(struct weft_cnt *k, struct weft_state_r *r)
{
	unsigned int i, s, ntx = 0;

	if (k->ctl_head >= CTLQ_LEN || k->ctl_count > CTLQ_LEN ||
	    k->njobs > WEFT_CNT_RESP_JOBS || k->job_cur >= WEFT_CNT_RESP_JOBS ||
	    k->tx_cur >= WEFT_CNT_NR_OBJ * WEFT_CNT_MAX_OPS)
		return weft_state_fail(r, "counters: queue heads or counts out of range");
	for (i = 0; i < WEFT_CNT_RESP_JOBS; i++) {
		const struct cnt_job *j = &k->job[i];

		if (j->live && (j->exp >= WEFT_CNT_NR_EXP || j->pos > j->end))
			return weft_state_fail(r, "counters: responder job %u", i);
	}
	for (i = 0; i < WEFT_CNT_NR_OBJ; i++) {
		const struct cnt_obj *o = &k->obj[i];

		for (s = 0; s < WEFT_CNT_MAX_OPS; s++) {
			const struct cnt_op *op = &o->op[s];

			ntx += op->in_tx;
			if (op->state == WEFT_CNT_OP_FREE)
				continue;
			if (!o->live || op->state > WEFT_CNT_OP_FAILED || op->off > o->length ||
			    op->len > o->length - op->off || op->nchunks != chunks_of(op->len) ||
			    op->una > op->nchunks || op->next > op->nchunks)
				return weft_state_fail(r, "counters: object %u operation %u", i, s);
		}
	}
	if (ntx != k->ntx)
		return weft_state_fail(r, "counters: %u operations to send, %u counted", ntx, k->ntx);
	return true;
}

/* The waiter lists are built again from the loaded QPs (weft_verbs_load
 * ran first), never taken from the stream. */
static bool cnt_waiters_load(struct weft_core *c, struct weft_state_r *r)
{
	struct weft_verbs *v = c->verbs;
	unsigned int i;

	for (i = 0; i < WEFT_CNT_NR_OBJ; i++)
		c->ctr->obj[i].wait_head = 0;
	for (i = 0; v->qp && i < v->nr_qp; i++) {
		struct vq_qp *qp = &v->qp[i];
		const struct cnt_obj *o;

		qp->cw_next = 0;
		if (!qp->cw_slot)
			continue;
		o = qp->cw_obj < WEFT_CNT_NR_OBJ ? &c->ctr->obj[qp->cw_obj] : NULL;
		if (!qp->created || qp->cw_slot >= WEFT_CNT_QP_SLOTS || !o || !o->live ||
		    o->mode != WEFT_CNT_MODE_EVENT)
			return weft_state_fail(r, "counters: QP %u waits on no event counter", i);
		wait_link(c, &c->ctr->obj[qp->cw_obj], qp);
	}
	return true;
}

bool weft_cnt_load(struct weft_core *c, struct weft_state_r *r)
{
	struct weft_cnt *k = c->ctr;
	unsigned int i, s;

	if (!weft_state_get_struct(r, "weft_cnt", k, sizeof(*k), NULL))
		return false;
	/* The stream's pointer fields (0 when saved) go first: nothing of
	 * the fresh engine's is allocated, so no pointer is lost. */
	k->deadline = weft_state_abs(r, k->deadline);
	k->host_bytes = 0;
	for (i = 0; i < WEFT_CNT_NR_OBJ; i++) {
		struct cnt_obj *o = &k->obj[i];

		o->pages = o->done = o->posted = NULL;
		o->host_bytes = 0;
		for (s = 0; s < WEFT_CNT_MAX_OPS; s++)
			o->op[s].deadline = weft_state_abs(r, o->op[s].deadline);
	}
	for (i = 0; i < WEFT_CNT_NR_EXP; i++)
		k->exp[i].pages = NULL;
	for (i = 0; i < WEFT_CNT_NR_OBJ; i++)
		if (!WEFT_STATE_BOOLS(r, "counter operation", k->obj[i].op, WEFT_CNT_MAX_OPS,
				      struct cnt_op, offsetof(struct cnt_op, need_req),
				      offsetof(struct cnt_op, granted), offsetof(struct cnt_op, in_tx)))
			return false;
	if (!WEFT_STATE_BOOLS(r, "counters", k, 1, struct weft_cnt, offsetof(struct weft_cnt, turn)) ||
	    !WEFT_STATE_BOOLS(r, "counter object", k->obj, WEFT_CNT_NR_OBJ, struct cnt_obj,
			      offsetof(struct cnt_obj, live), offsetof(struct cnt_obj, notified)) ||
	    !WEFT_STATE_BOOLS(r, "exposure", k->exp, WEFT_CNT_NR_EXP, struct cnt_exp,
			      offsetof(struct cnt_exp, live)) ||
	    !WEFT_STATE_BOOLS(r, "responder job", k->job, WEFT_CNT_RESP_JOBS, struct cnt_job,
			      offsetof(struct cnt_job, live)))
		return false;
	for (i = 0; i < WEFT_CNT_NR_OBJ; i++) {
		struct cnt_obj *o = &k->obj[i];
		uint64_t words;

		if (!o->live)
			continue;
		if (o->mode > WEFT_CNT_MODE_EVENT ||
		    (o->mode == WEFT_CNT_MODE_EVENT) != (o->length == 0) ||
		    !cnt_region_ok(o->first_off, o->length, o->npages))
			return weft_state_fail(r, "counters: object %u region", i);
		if (o->mode == WEFT_CNT_MODE_EVENT)
			continue;
		words = obj_words(o);
		o->host_bytes = (uint64_t)o->npages * 8 + words * 16;
		k->host_bytes += o->host_bytes;
		if (k->host_bytes > CNT_BUDGET)
			return weft_state_fail(r, "counters: over the host memory budget");
		o->pages = cnt_get_pages(r, o->npages);
		o->done = calloc(words, 8);
		o->posted = calloc(words, 8);
		if (!o->pages || !o->done || !o->posted)
			return weft_state_fail(r, "out of memory");
		if (!weft_state_get(r, o->done, words * 8) ||
		    !weft_state_get(r, o->posted, words * 8))
			return false;
	}
	for (i = 0; i < WEFT_CNT_NR_EXP; i++) {
		struct cnt_exp *e = &k->exp[i];

		if (!e->live)
			continue;
		if (!cnt_region_ok(e->first_off, e->length, e->npages))
			return weft_state_fail(r, "counters: exposure %u region", i);
		k->host_bytes += (uint64_t)e->npages * 8;
		if (k->host_bytes > CNT_BUDGET)
			return weft_state_fail(r, "counters: over the host memory budget");
		e->pages = cnt_get_pages(r, e->npages);
		if (!e->pages)
			return false;
	}
	return cnt_state_check(k, r) && cnt_waiters_load(c, r);
}
