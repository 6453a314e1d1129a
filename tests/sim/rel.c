/* SPDX-License-Identifier: MIT */
/* Retrying RDMA layer over the Weft sim; see rel.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rel.h"

struct rel_op {
	int ch;
	enum rel_kind kind;
	uint64_t local_off, remote_off, len;
	uint32_t tid;           /* tid of the latest post */
	int64_t next;           /* next op index on the channel, -1 = none */
	bool done, delivered;
};

struct rel_chan {
	struct weft_sim_window *a, *b;
	uint32_t ra, rb;
	uint16_t kb;
	bool have_ra, have_rb;
	uint32_t tid;
	int64_t head, tail;     /* op queue; head is the current op */
	bool inflight;          /* head posted, waiting for its completion */
	bool need_post;
	uint64_t deadline;
};

struct rel_region {
	uint64_t addr, len, pvo;
};

struct rel {
	struct weft_sim *sim;
	uint64_t timeout;
	rel_deliver_fn deliver;
	void *opaque;
	bool paused;
	struct rel_op *ops;
	uint64_t nr_ops, cap_ops, pending;
	struct rel_chan ch[REL_MAX_CHANNELS];
	unsigned int nr_ch;
	struct weft_sim_window *win[REL_MAX_WINDOWS];
	unsigned int nr_win;
	struct rel_region region[WEFT_SIM_MAX_NODES];
	uint32_t *map[WEFT_SIM_MAX_NODES];  /* rCxt -> (ch << 1 | side) + 1 */
	uint32_t map_len;
	struct rel_stats st;
};

struct rel *rel_new(struct weft_sim *s, uint64_t timeout_ns, rel_deliver_fn fn, void *opaque)
{
	struct rel *r = calloc(1, sizeof(*r));
	unsigned int i;

	if (!r)
		return NULL;
	r->sim = s;
	r->timeout = timeout_ns;
	r->deliver = fn;
	r->opaque = opaque;
	r->map_len = (uint32_t)weft_sim_reg_read(s, 0, WEFT_REG_NR_RCXT);
	for (i = 0; i < weft_sim_nr_nodes(s); i++) {
		r->map[i] = calloc(r->map_len, sizeof(uint32_t));
		if (!r->map[i]) {
			rel_free(r);
			return NULL;
		}
	}
	return r;
}

void rel_free(struct rel *r)
{
	unsigned int i;

	if (!r)
		return;
	for (i = 0; i < WEFT_SIM_MAX_NODES; i++)
		free(r->map[i]);
	free(r->ops);
	free(r);
}

void rel_set_region(struct rel *r, unsigned int node, uint64_t addr, uint64_t len, uint64_t pvo)
{
	if (node >= WEFT_SIM_MAX_NODES)
		return;
	r->region[node].addr = addr;
	r->region[node].len = len;
	r->region[node].pvo = pvo;
}

static void add_window(struct rel *r, struct weft_sim_window *w)
{
	unsigned int i;

	for (i = 0; i < r->nr_win; i++)
		if (r->win[i] == w)
			return;
	if (r->nr_win < REL_MAX_WINDOWS)
		r->win[r->nr_win++] = w;
}

static void map_set(struct rel *r, unsigned int node, uint32_t rcxt, uint32_t v)
{
	if (rcxt < r->map_len)
		r->map[node][rcxt] = v;
}

static int chan_acquire(struct rel *r, int ci)
{
	struct rel_chan *c = &r->ch[ci];
	uint16_t ka;
	int rc;

	if (!c->have_ra) {
		rc = weft_sim_rcxt_alloc(r->sim, c->a->node, c->a->window, &c->ra, &ka);
		if (rc)
			return rc;
		c->have_ra = true;
		map_set(r, c->a->node, c->ra, ((uint32_t)ci << 1 | 0) + 1);
	}
	if (!c->have_rb) {
		rc = weft_sim_rcxt_alloc(r->sim, c->b->node, c->b->window, &c->rb, &c->kb);
		if (rc)
			return rc;
		c->have_rb = true;
		map_set(r, c->b->node, c->rb, ((uint32_t)ci << 1 | 1) + 1);
	}
	return 0;
}

int rel_channel(struct rel *r, struct weft_sim_window *a, struct weft_sim_window *b)
{
	int ci, rc;

	if (r->nr_ch >= REL_MAX_CHANNELS)
		return -ENOSPC;
	ci = (int)r->nr_ch++;
	memset(&r->ch[ci], 0, sizeof(r->ch[ci]));
	r->ch[ci].a = a;
	r->ch[ci].b = b;
	r->ch[ci].head = r->ch[ci].tail = -1;
	add_window(r, a);
	add_window(r, b);
	rc = chan_acquire(r, ci);
	return rc ? rc : ci;
}

int rel_node_reset(struct rel *r, unsigned int node)
{
	unsigned int i;
	int rc, first = 0;

	/* Forget every rCxt of node first: the new ids may equal old ones. */
	for (i = 0; i < r->nr_ch; i++) {
		struct rel_chan *c = &r->ch[i];

		if (c->a->node == node && c->have_ra) {
			map_set(r, node, c->ra, 0);
			c->have_ra = false;
		}
		if (c->b->node == node && c->have_rb) {
			map_set(r, node, c->rb, 0);
			c->have_rb = false;
		}
	}
	for (i = 0; i < r->nr_ch; i++) {
		struct rel_chan *c = &r->ch[i];

		if (c->a->node != node && c->b->node != node)
			continue;
		if (c->have_ra)
			weft_sim_rcxt_cancel(r->sim, c->a->node, c->ra);
		if (c->have_rb)
			weft_sim_rcxt_cancel(r->sim, c->b->node, c->rb);
		if (c->head >= 0) {
			c->inflight = false;
			c->need_post = true;
		}
		rc = chan_acquire(r, (int)i);
		if (rc && !first)
			first = rc;
	}
	return first;
}

uint64_t rel_submit(struct rel *r, int ci, enum rel_kind kind, uint64_t local_off,
		    uint64_t remote_off, uint64_t len)
{
	struct rel_chan *c = &r->ch[ci];
	struct rel_op *op;
	uint64_t idx;

	if (r->nr_ops == r->cap_ops) {
		uint64_t nc = r->cap_ops ? r->cap_ops * 2 : 256;
		struct rel_op *n = realloc(r->ops, nc * sizeof(*n));

		if (!n)
			abort();
		r->ops = n;
		r->cap_ops = nc;
	}
	idx = r->nr_ops++;
	op = &r->ops[idx];
	memset(op, 0, sizeof(*op));
	op->ch = ci;
	op->kind = kind;
	op->local_off = local_off;
	op->remote_off = remote_off;
	op->len = len;
	op->next = -1;
	if (c->tail >= 0)
		r->ops[c->tail].next = (int64_t)idx;
	else {
		c->head = (int64_t)idx;
		c->need_post = true;
	}
	c->tail = (int64_t)idx;
	r->pending++;
	return idx + 1;
}

void rel_pause(struct rel *r, bool paused)
{
	unsigned int i;

	r->paused = paused;
	if (paused)
		return;
	for (i = 0; i < r->nr_ch; i++)
		if (r->ch[i].inflight)
			r->ch[i].deadline = weft_sim_now(r->sim) + r->timeout;
}

static void op_finish(struct rel *r, struct rel_op *op)
{
	if (op->done && op->delivered)
		r->pending--;
}

static void deliver(struct rel *r, uint64_t idx)
{
	struct rel_op *op = &r->ops[idx];

	op->delivered = true;
	r->st.delivered++;
	if (r->deliver)
		r->deliver(r->opaque, idx + 1);
	op_finish(r, op);
}

static void chan_next(struct rel *r, struct rel_chan *c)
{
	struct rel_op *op = &r->ops[c->head];

	c->head = op->next;
	if (c->head < 0)
		c->tail = -1;
	c->inflight = false;
	c->need_post = c->head >= 0;
}

static void completion(struct rel *r, struct weft_sim_window *w, const struct weft_recv_hdr *h)
{
	uint32_t v, ci;
	unsigned int side;
	struct rel_chan *c;
	struct rel_op *op;
	uint64_t idx;

	if (h->rcxt >= r->map_len || !(v = r->map[w->node][h->rcxt])) {
		r->st.cpl_stale++;
		return;
	}
	v--;
	ci = v >> 1;
	side = v & 1;
	c = &r->ch[ci];
	if (h->status) {
		r->st.cpl_error++;
		return;
	}
	if (h->user_cookie < 1 || h->user_cookie > r->nr_ops) {
		r->st.cpl_stale++;
		return;
	}
	idx = h->user_cookie - 1;
	op = &r->ops[idx];
	if (side == 0) {
		if (c->inflight && c->head == (int64_t)idx && h->tid == op->tid) {
			r->st.cpl_src++;
			op->done = true;
			r->st.done++;
			chan_next(r, c);
			if (op->kind == REL_READ && !op->delivered)
				deliver(r, idx);
			else
				op_finish(r, op);
		} else {
			r->st.cpl_stale++;
		}
		return;
	}
	/* Target side: the data of a write is complete there. */
	if (op->kind == REL_WRITE) {
		if (op->delivered) {
			r->st.cpl_dup++;
		} else {
			r->st.cpl_dst++;
			deliver(r, idx);
		}
	} else {
		r->st.cpl_dst++;
	}
}

static void post(struct rel *r, struct rel_chan *c)
{
	struct rel_op *op = &r->ops[c->head];
	struct weft_rdma_req q;
	unsigned int an = c->a->node, bn = c->b->node;
	int rc;

	if (!c->have_ra || !c->have_rb)
		return;
	memset(&q, 0, sizeof(q));
	q.local_pvo = r->region[an].pvo + op->local_off;
	q.remote_pvo = r->region[bn].pvo + op->remote_off;
	q.length = op->len;
	q.local_rcxt = c->ra;
	q.remote_rcxt = c->rb;
	q.remote_rcxt_key = c->kb;
	q.notify = WEFT_NOTIFY_BOTH;
	q.tid = c->tid + 1;
	q.protocol_cookie = (uint64_t)(c - r->ch);
	q.user_cookie = (uint64_t)c->head + 1;
	rc = weft_sim_post_rdma(c->a, op->kind == REL_WRITE ? WEFT_SF_RDMAW : WEFT_SF_RDMAR,
				(uint16_t)bn, (uint16_t)c->b->window, &q);
	if (rc)
		return;
	c->tid++;
	op->tid = c->tid;
	c->inflight = true;
	c->need_post = false;
	c->deadline = weft_sim_now(r->sim) + r->timeout;
	r->st.posted++;
}

bool rel_poll(struct rel *r)
{
	struct weft_recv_hdr h;
	uint64_t now = weft_sim_now(r->sim);
	unsigned int i;

	for (i = 0; i < r->nr_win; i++) {
		struct weft_sim_window *w = r->win[i];

		if (!w->recv_fifo)
			continue;
		while (weft_sim_poll_recv(w, &h, NULL, 0) == 1)
			if (h.type == WEFT_RF_COMPLETION)
				completion(r, w, &h);
	}
	if (r->paused)
		return r->pending == 0;
	for (i = 0; i < r->nr_ch; i++) {
		struct rel_chan *c = &r->ch[i];

		if (c->inflight && now >= c->deadline) {
			c->inflight = false;
			c->need_post = true;
			r->st.retries++;
		}
		if (c->need_post && c->head >= 0)
			post(r, c);
	}
	return r->pending == 0;
}

bool rel_run(struct rel *r, uint64_t deadline)
{
	for (;;) {
		if (rel_poll(r))
			return true;
		if (weft_sim_now(r->sim) > deadline)
			return false;
		if (!weft_sim_progress(r->sim)) {
			uint64_t next = UINT64_MAX;
			unsigned int i;

			for (i = 0; i < r->nr_ch; i++)
				if (r->ch[i].inflight && r->ch[i].deadline < next)
					next = r->ch[i].deadline;
			if (next == UINT64_MAX) {
				/* Nothing in flight: post what can be posted. */
				if (rel_poll(r))
					return true;
				for (i = 0; i < r->nr_ch; i++)
					if (r->ch[i].inflight)
						break;
				if (i == r->nr_ch)
					return false;
				continue;
			}
			weft_sim_advance_to(r->sim, next);
		}
	}
}

uint64_t rel_pending(const struct rel *r)
{
	return r->pending;
}

const struct rel_stats *rel_stats(const struct rel *r)
{
	return &r->st;
}
