/* SPDX-License-Identifier: MIT */
/*
 * libweft: the seed's further RDMA operations on top of the send FIFO:
 * third-party read, the four half-RDMA modes, conditional RDMA, and
 * broadcast/multicast RDMA with the ULP's unicast acknowledgements and
 * per-target retry.  Frame formats: docs/hw-spec.md 5.1, 5.3, 5.4.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"
#include "weft/counters.h"
#include "weft/sram.h"

#define BCAST_ACK_MAGIC         0x4b414257u     /* "WBAK" */
#define BCAST_DEF_TIMEOUT       2000000ull      /* 2 ms */
#define BCAST_DEF_TRIES         8u

/* The tid of op on this window: the next one, or the caller's, which is
 * then recorded so that later tids stay larger. */
static uint32_t op_tid(struct weft_win *w, struct weft_rdma *op)
{
	if (op->tid == 0) {
		op->tid = weft_rcxt_next_tid(w, op->local_rcxt);
	} else {
		struct weft_rcxt_ent *e = weft_rcxt_find(w, op->local_rcxt);

		if (e && e->last_tid < op->tid)
			e->last_tid = op->tid;
		if (w->next_tid <= op->tid)
			w->next_tid = op->tid + 1;
	}
	return op->tid;
}

static void line_init(struct weft_send_line *l, uint8_t type, const struct weft_rdma *op)
{
	memset(l, 0, sizeof(*l));
	l->hdr.type = type;
	l->hdr.dest_node = op->node;
	l->hdr.dest_window = op->window;
	l->rdma.local_pvo = op->local_pvo;
	l->rdma.remote_pvo = op->remote_pvo;
	l->rdma.length = op->length;
	l->rdma.local_rcxt = op->local_rcxt;
	l->rdma.remote_rcxt = op->remote_rcxt;
	l->rdma.remote_rcxt_key = op->remote_rcxt_key;
	l->rdma.notify = op->notify;
	l->rdma.protocol_cookie = op->protocol_cookie;
	l->rdma.user_cookie = op->user_cookie;
}

/* One request frame of type for op. */
static int post_req(struct weft_win *w, uint8_t type, struct weft_rdma *op,
		    const struct weft_tp_read *tp)
{
	struct weft_send_line l;
	int r;

	if (op->length == 0 || op->length > WEFT_RDMA_MAX_LENGTH || op->notify > WEFT_COMP_BOTH)
		return -EINVAL;
	line_init(&l, type, op);
	l.rdma.tid = op_tid(w, op);
	if (tp) {
		l.rdma.tp_node = tp->tp_node;
		l.rdma.tp_window = tp->tp_window;
		l.rdma.tp_rcxt = tp->tp_rcxt;
		l.rdma.tp_rcxt_key = tp->tp_rcxt_key;
	}
	r = weft_win_post_line(w, &l, NULL, 0);
	if (r == 0)
		w->st.tx_rdma++;
	return r;
}

int weft_win_tp_read(struct weft_win *w, struct weft_tp_read *op)
{
	return post_req(w, WEFT_SF_TP_RDMAR, &op->rdma, op);
}

int weft_win_write_fifo(struct weft_win *w, struct weft_rdma *op)
{
	return post_req(w, WEFT_SF_RDMAW_FIFO, op, NULL);
}

int weft_win_read_fifo(struct weft_win *w, struct weft_rdma *op)
{
	return post_req(w, WEFT_SF_RDMAR_FIFO, op, NULL);
}

int weft_win_read_put(struct weft_win *w, struct weft_rdma *op)
{
	return post_req(w, WEFT_SF_RDMAR_PUT, op, NULL);
}

/* PUT frames for [0, op->length) of buf, all or nothing. */
static int post_put(struct weft_win *w, struct weft_rdma *op, const void *buf, uint16_t xflags)
{
	uint64_t frames = (op->length + WEFT_MAX_PAYLOAD - 1) / WEFT_MAX_PAYLOAD, off;
	struct weft_send_line l;

	if (!buf || op->length == 0 || op->notify > WEFT_COMP_BOTH)
		return -EINVAL;
	if (frames > w->send_frames)
		return -EMSGSIZE;
	if (w->fatal)
		return w->fatal;
	if (weft_win_tx_room(w) < frames)
		return -EAGAIN;
	line_init(&l, WEFT_SF_PUT, op);
	if (op->local_rcxt == WEFT_RCXT_NONE && op->tid == 0)
		op->tid = w->next_tid++;
	l.rdma.tid = op->local_rcxt == WEFT_RCXT_NONE ? op->tid : op_tid(w, op);
	l.rdma.xflags = xflags;
	for (off = 0; off < op->length; off += WEFT_MAX_PAYLOAD) {
		uint64_t n = op->length - off;
		int r;

		if (n > WEFT_MAX_PAYLOAD)
			n = WEFT_MAX_PAYLOAD;
		l.rdma.offset = (uint32_t)off;
		l.hdr.length = (uint16_t)n;
		r = weft_win_post_line(w, &l, (const uint8_t *)buf + off, n);
		if (r)
			return r;       /* only when the window died meanwhile */
		w->st.tx_packets++;
	}
	return 0;
}

int weft_win_put(struct weft_win *w, struct weft_rdma *op, const void *buf)
{
	return post_put(w, op, buf, 0);
}

int weft_win_put_reply(struct weft_win *w, const struct weft_entry *req, const void *buf,
		       uint32_t local_rcxt, uint8_t notify)
{
	struct weft_rdma op;

	if (!req || req->type != WEFT_ENT_READ_REQ)
		return -EINVAL;
	memset(&op, 0, sizeof(op));
	op.node = req->src_node;
	op.window = req->src_window;
	op.local_rcxt = local_rcxt;
	op.remote_rcxt = req->rcxt;
	op.remote_rcxt_key = req->rcxt_key;
	op.notify = notify;
	op.remote_pvo = req->pvo;
	op.length = req->total;
	op.tid = req->tid;      /* the requester's operation */
	op.protocol_cookie = req->protocol_cookie;
	op.user_cookie = req->user_cookie;
	if (local_rcxt != WEFT_RCXT_NONE) {
		/* The tid names the requester's read; it must also be new on
		 * our rCxt. */
		if (weft_rcxt_last_tid(w, local_rcxt) >= req->tid)
			return -ESTALE;
		op_tid(w, &op);
	}
	return post_put(w, &op, buf, WEFT_RQ_READ_RESP);
}

/* ---- receive side ------------------------------------------------------ */

int weft_ops_rx_entry(struct weft_win *w, const struct weft_recv_hdr *h,
		      const uint8_t *payload, struct weft_entry *e)
{
	if (h->type != WEFT_RF_DATA && h->type != WEFT_RF_READ_REQ)
		return 0;
	if (h->type == WEFT_RF_DATA && (h->length == 0 || h->length > WEFT_MAX_PAYLOAD ||
					h->offset >= h->total_length ||
					h->total_length - h->offset < h->length))
		return 0;
	memset(e, 0, offsetof(struct weft_entry, data));
	e->src_node = h->src_node;
	e->src_window = h->src_window;
	e->rcxt = h->rcxt;
	e->tid = h->tid;
	e->total = h->total_length;
	e->pvo = h->pvo;
	e->protocol_cookie = h->protocol_cookie;
	e->user_cookie = h->user_cookie;
	if (h->type == WEFT_RF_DATA) {
		e->type = WEFT_ENT_DATA;
		e->flags = h->flags & (WEFT_RF_READ | WEFT_RF_BROADCAST | WEFT_RF_LAST);
		e->length = h->length;
		e->offset = h->offset;
		memcpy(e->data, payload, h->length);
		w->st.rx_packets++;
	} else {
		e->type = WEFT_ENT_READ_REQ;
		e->length = h->total_length;
		e->src_pvo = h->src_pvo;
		e->rcxt_key = h->rcxt_key;
	}
	return 1;
}

int weft_fifo_rx_add(struct weft_fifo_rx *rx, const struct weft_entry *e)
{
	uint64_t chunk;

	if (e->type != WEFT_ENT_DATA || e->total > rx->cap || e->offset >= e->total ||
	    e->offset % WEFT_MAX_PAYLOAD || e->length > e->total - e->offset)
		return -EINVAL;
	if (!rx->seen || rx->tid != e->tid || rx->total != e->total) {
		weft_fifo_rx_reset(rx);
		rx->nchunks = (e->total + WEFT_MAX_PAYLOAD - 1) / WEFT_MAX_PAYLOAD;
		rx->seen = calloc((rx->nchunks + 63) / 64, sizeof(uint64_t));
		if (!rx->seen)
			return -ENOMEM;
		rx->tid = e->tid;
		rx->total = e->total;
	}
	chunk = e->offset / WEFT_MAX_PAYLOAD;
	if (!(rx->seen[chunk / 64] & (1ull << (chunk % 64)))) {
		rx->seen[chunk / 64] |= 1ull << (chunk % 64);
		memcpy(rx->buf + e->offset, e->data, e->length);
		rx->got += e->length;
	}
	return rx->got == rx->total;
}

void weft_fifo_rx_reset(struct weft_fifo_rx *rx)
{
	free(rx->seen);
	rx->seen = NULL;
	rx->got = rx->total = rx->nchunks = 0;
	rx->tid = 0;
}

/* ---- conditional RDMA --------------------------------------------------- */

static int post_cond(struct weft_win *w, uint8_t type, unsigned int op, unsigned int cond,
		     uint32_t value)
{
	struct weft_send_line l;
	struct weft_cond_req c;

	if (cond >= WEFT_NR_COND || op > WEFT_COND_OP_SET)
		return -EINVAL;
	memset(&l, 0, sizeof(l));
	memset(&c, 0, sizeof(c));
	l.hdr.type = type;
	c.op = (uint8_t)op;
	c.cond = (uint8_t)cond;
	c.value = value;
	memcpy(&l.rdma, &c, sizeof(c));
	return weft_win_post_line(w, &l, NULL, 0);
}

int weft_win_cond(struct weft_win *w, unsigned int cond, unsigned int n)
{
	if (n == 0 || n > WEFT_COND_MAX_MEMBERS)
		return -EINVAL;
	return post_cond(w, WEFT_SF_COND, 0, cond, n);
}

int weft_win_cond_ctl(struct weft_win *w, unsigned int op, unsigned int cond, uint32_t value)
{
	return post_cond(w, WEFT_SF_COND_CTL, op, cond, value);
}

void weft_ops_cond_done(struct weft_win *w, const uint8_t *f, unsigned int status)
{
	struct weft_send_line l;
	struct weft_cond_req c;
	struct weft_entry e;

	memcpy(&l, f, sizeof(l));
	memcpy(&c, &l.rdma, sizeof(c));
	memset(&e, 0, offsetof(struct weft_entry, data));
	e.type = WEFT_ENT_COND;
	e.status = status < WEFT_R__COUNT ? status : WEFT_R_BAD_TYPE;
	e.rcxt = c.cond;
	e.cond.state = c.q_state;
	e.cond.expect = c.q_expect;
	e.cond.done = c.q_done;
	e.cond.tagged = c.q_tagged;
	e.cond.fired = c.q_fired;
	weft_win_pend_push(w, &e);
}

/* ---- broadcast / multicast with acknowledgements ----------------------- */

struct bcast_ack {
	uint32_t magic;
	uint32_t tid;
	uint64_t user_cookie;
};

static int bcast_send(struct weft_win *w, const struct weft_bcast *b, struct weft_rdma *op)
{
	return b->fifo ? weft_win_write_fifo(w, op) : weft_win_post_rdma_raw(w, op, 0, NULL);
}

int weft_bcast_post(struct weft_win *w, struct weft_bcast *b)
{
	int r;

	if (b->nr_targets == 0 || b->nr_targets > WEFT_BCAST_MAX_TARGETS ||
	    b->rdma.node <= WEFT_NODE_MAX_UNICAST)
		return -EINVAL;
	b->rdma.notify = WEFT_COMP_TARGET;
	b->rdma.tid = 0;
	r = bcast_send(w, b, &b->rdma);
	if (r)
		return r;
	b->first_tid = b->last_tid = b->rdma.tid;
	b->acked_mask = 0;
	b->acked = 0;
	b->retries = 0;
	memset(b->tries, 0, sizeof(b->tries));
	for (unsigned int i = 0; i < b->nr_targets; i++)
		b->tries[i] = 1;
	b->resend_ns = weft_dev_now_ns(w->dev) + (b->timeout_ns ? b->timeout_ns : BCAST_DEF_TIMEOUT);
	b->state = WEFT_BCAST_POSTED;
	return 0;
}

/* Re-send the write by unicast to every target that has not acknowledged. */
static void bcast_retry(struct weft_win *w, struct weft_bcast *b)
{
	unsigned int max = b->max_tries ? b->max_tries : BCAST_DEF_TRIES, i;
	bool left = false;

	for (i = 0; i < b->nr_targets; i++) {
		struct weft_rdma op = b->rdma;

		if (b->acked_mask & (1ull << i))
			continue;
		if (b->tries[i] >= max)
			continue;
		op.node = b->targets[i];
		op.tid = 0;
		if (bcast_send(w, b, &op) != 0)
			return;         /* send FIFO full: again on a later call */
		b->tries[i]++;
		b->retries++;
		b->last_tid = op.tid;
		left = true;
	}
	if (!left) {
		for (i = 0; i < b->nr_targets; i++)
			if (!(b->acked_mask & (1ull << i)) && b->tries[i] < max)
				return;
		b->state = WEFT_BCAST_FAILED;
		return;
	}
	b->resend_ns = weft_dev_now_ns(w->dev) + (b->timeout_ns ? b->timeout_ns : BCAST_DEF_TIMEOUT);
}

int weft_bcast_progress(struct weft_win *w, struct weft_bcast *b, const struct weft_entry *e)
{
	int taken = 0;

	if (b->state != WEFT_BCAST_POSTED)
		return 0;
	if (e && e->type == WEFT_ENT_PACKET && e->length == sizeof(struct bcast_ack)) {
		struct bcast_ack a;

		memcpy(&a, e->data, sizeof(a));
		if (a.magic == BCAST_ACK_MAGIC && a.user_cookie == b->rdma.user_cookie &&
		    a.tid >= b->first_tid && a.tid <= b->last_tid) {
			taken = 1;
			for (unsigned int i = 0; i < b->nr_targets; i++) {
				if (b->targets[i] != e->src_node || (b->acked_mask & (1ull << i)))
					continue;
				b->acked_mask |= 1ull << i;
				b->acked++;
			}
			if (b->acked == b->nr_targets) {
				b->state = WEFT_BCAST_DONE;
				return taken;
			}
		}
	}
	if (weft_dev_now_ns(w->dev) >= b->resend_ns)
		bcast_retry(w, b);
	return taken;
}

int weft_bcast_ack(struct weft_win *w, const struct weft_entry *e)
{
	struct bcast_ack a = { .magic = BCAST_ACK_MAGIC, .tid = e->tid,
			       .user_cookie = e->user_cookie };

	if (!(e->type == WEFT_ENT_COMPLETION && (e->flags & WEFT_ENT_F_TARGET)) &&
	    e->type != WEFT_ENT_DATA)
		return -EINVAL;
	return weft_win_send(w, e->src_node, e->src_window, &a, sizeof(a));
}
