/* SPDX-License-Identifier: MIT */
/*
 * Reliable, exactly-once messages over the unreliable fabric (seed 1.5.6):
 * the adapter gives at-most-once per tid; this layer re-issues with a
 * larger tid after a timeout (with back-off) until the receiver
 * acknowledges, and the receiver drops what it already has.
 *
 * Sender: message seq goes to slot seq % slots: copied into the local
 * staging slot, RDMA-written (BOTH completions, user cookie = seq) into
 * the peer's ring slot through the peer's rCxt of that slot, as a
 * reliable op of the window (weft_win_rop_post: retries with larger tids
 * until a completion of one of its tids arrives).  A slot is reused only
 * after the cumulative acknowledgement covers its message; if the
 * acknowledgement does not come within ack timeout after the source
 * completion (the target's completion entry may have been dropped on a
 * full receive FIFO), the write is issued again.
 *
 * Receiver: a target completion whose cookie names a sequence in
 * [expected, expected + slots) marks that slot arrived; older sequences
 * are duplicates (acknowledged again), anything else is dropped.
 * weft_rel_recv() hands messages out in order and acknowledges with a
 * FIFO packet carrying the next expected sequence.
 *
 * Stale tids: a late packet of an old tid cannot overwrite a newer
 * message in the same slot, because the adapter drops tids older than
 * the rCxt's (at-most-once); a late completion of an old tid is ignored
 * by the window (stale) or by sequence here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"
#include "weft/sram.h"

#define REL_MAGIC       0x4c455257u     /* "WREL" */
#define REL_COOKIE      0x57524c0000000000ull
#define REL_COOKIE_MASK 0xffffff0000000000ull

struct rel_ack {
	uint32_t magic;
	uint32_t kind;                  /* 1 = ack */
	uint64_t next;                  /* next expected sequence */
};

struct rel_tx {
	struct weft_rop rop;
	uint64_t seq;
	uint32_t len;
	int busy;                       /* holds an unacknowledged message */
	int done;                       /* source completion seen */
	uint64_t ack_deadline;
};

struct rel_rx {
	int arrived;
	uint64_t seq;
	uint32_t len;
};

struct weft_rel {
	struct weft_win *win;
	struct weft_rel_attr a;
	struct weft_rel_info peer;
	int connected;
	int error;
	uint8_t *ring, *stage;          /* slots * slot_size each */
	size_t ring_len;
	uint64_t ring_pvo, stage_pvo;
	uint32_t ring_h, stage_h;
	uint32_t rx_rcxt[WEFT_REL_MAX_SLOTS];
	uint16_t rx_key[WEFT_REL_MAX_SLOTS];
	uint32_t tx_rcxt[WEFT_REL_MAX_SLOTS];
	struct rel_tx tx[WEFT_REL_MAX_SLOTS];
	struct rel_rx rx[WEFT_REL_MAX_SLOTS];
	uint64_t seq_next, acked;       /* sender */
	uint64_t expected;              /* receiver */
	int need_ack;
	void (*pkt_fn)(void *arg, const struct weft_entry *e);
	void *pkt_arg;
	uint64_t rop_retries0;          /* window's rop retries at creation */
	struct weft_rel_stats st;
};

void weft_rel_free(struct weft_rel *rel)
{
	if (!rel)
		return;
	struct weft_win *w = rel->win;
	for (uint32_t i = 0; i < rel->a.slots; i++)
		if (rel->tx[i].rop.state == WEFT_ROP_POSTED)
			weft_win_rop_abandon(w, &rel->tx[i].rop);
	for (uint32_t i = 0; i < rel->a.slots; i++) {
		if (rel->rx_rcxt[i] != WEFT_RCXT_NONE)
			weft_rcxt_free(w, rel->rx_rcxt[i]);
		if (rel->tx_rcxt[i] != WEFT_RCXT_NONE)
			weft_rcxt_free(w, rel->tx_rcxt[i]);
	}
	if (rel->ring_h)
		weft_mr_dereg(w->dev, rel->ring_h);
	if (rel->stage_h)
		weft_mr_dereg(w->dev, rel->stage_h);
	weft_dev_free(w->dev, rel->ring, rel->ring_len);
	weft_dev_free(w->dev, rel->stage, rel->ring_len);
	free(rel);
}

struct weft_rel *weft_rel_new(struct weft_win *win, const struct weft_rel_attr *attr,
			      int *error)
{
	int dummy;
	if (!error)
		error = &dummy;
	struct weft_rel *rel = calloc(1, sizeof(*rel));
	if (!rel) {
		*error = -ENOMEM;
		return NULL;
	}
	rel->win = win;
	rel->a = *attr;
	if (!rel->a.slots)
		rel->a.slots = 16;
	if (!rel->a.slot_size)
		rel->a.slot_size = 4096;
	if (!rel->a.timeout_ns)
		rel->a.timeout_ns = 2000000;
	if (!rel->a.max_timeout_ns)
		rel->a.max_timeout_ns = 256 * rel->a.timeout_ns;
	if (!rel->a.max_tries)
		rel->a.max_tries = 1000;
	for (uint32_t i = 0; i < WEFT_REL_MAX_SLOTS; i++)
		rel->rx_rcxt[i] = rel->tx_rcxt[i] = WEFT_RCXT_NONE;
	if (rel->a.slots > WEFT_REL_MAX_SLOTS || rel->a.slot_size > (1u << 30)) {
		free(rel);
		*error = -EINVAL;
		return NULL;
	}
	int r = 0;
	rel->ring_len = (size_t)rel->a.slots * rel->a.slot_size;
	rel->ring = weft_dev_alloc(win->dev, rel->ring_len);
	rel->stage = weft_dev_alloc(win->dev, rel->ring_len);
	if (!rel->ring || !rel->stage)
		r = -ENOMEM;
	if (!r)
		r = weft_mr_reg(win->dev, win->job_id, rel->ring, rel->ring_len, &rel->ring_pvo,
				&rel->ring_h);
	if (!r)
		r = weft_mr_reg(win->dev, win->job_id, rel->stage, rel->ring_len, &rel->stage_pvo,
				&rel->stage_h);
	for (uint32_t i = 0; !r && i < rel->a.slots; i++) {
		uint16_t k;
		r = weft_rcxt_alloc(win, &rel->rx_rcxt[i], &rel->rx_key[i]);
		if (!r)
			r = weft_rcxt_alloc(win, &rel->tx_rcxt[i], &k);
	}
	if (r) {
		weft_rel_free(rel);
		*error = r;
		return NULL;
	}
	rel->rop_retries0 = win->st.rop_retries;
	weft_win_set_retry(win, rel->a.timeout_ns, rel->a.max_timeout_ns, rel->a.max_tries);
	*error = 0;
	return rel;
}

void weft_rel_local_info(const struct weft_rel *rel, struct weft_rel_info *info)
{
	memset(info, 0, sizeof(*info));
	info->node = weft_win_node(rel->win);
	info->window = (uint16_t)weft_win_id(rel->win);
	info->slots = rel->a.slots;
	info->slot_size = rel->a.slot_size;
	info->ring_pvo = rel->ring_pvo;
	for (uint32_t i = 0; i < rel->a.slots; i++) {
		info->rcxt[i] = rel->rx_rcxt[i];
		info->rcxt_key[i] = rel->rx_key[i];
	}
}

int weft_rel_connect(struct weft_rel *rel, const struct weft_rel_info *peer)
{
	/* The peer's description is untrusted input. */
	if (peer->slots != rel->a.slots || peer->slot_size != rel->a.slot_size)
		return -EINVAL;
	rel->peer = *peer;
	rel->connected = 1;
	return 0;
}

unsigned int weft_rel_unacked(const struct weft_rel *rel)
{
	return (unsigned int)(rel->seq_next - rel->acked);
}

void weft_rel_get_stats(const struct weft_rel *rel, struct weft_rel_stats *s)
{
	*s = rel->st;
	s->retries += rel->win->st.rop_retries - rel->rop_retries0;
}

static int tx_post(struct weft_rel *rel, struct rel_tx *t)
{
	uint32_t slot = (uint32_t)(t->seq % rel->a.slots);
	uint64_t off = (uint64_t)slot * rel->a.slot_size;
	memset(&t->rop, 0, sizeof(t->rop));
	t->rop.rdma.node = rel->peer.node;
	t->rop.rdma.window = rel->peer.window;
	t->rop.rdma.local_rcxt = rel->tx_rcxt[slot];
	t->rop.rdma.remote_rcxt = rel->peer.rcxt[slot];
	t->rop.rdma.remote_rcxt_key = rel->peer.rcxt_key[slot];
	t->rop.rdma.notify = WEFT_COMP_BOTH;
	t->rop.rdma.local_pvo = rel->stage_pvo + off;
	t->rop.rdma.remote_pvo = rel->peer.ring_pvo + off;
	t->rop.rdma.length = t->len ? t->len : 1;
	t->rop.rdma.protocol_cookie = REL_COOKIE | t->len;
	t->rop.rdma.user_cookie = t->seq;
	t->done = 0;
	return weft_win_rop_post(rel->win, &t->rop);
}

int weft_rel_send(struct weft_rel *rel, const void *buf, size_t len)
{
	if (!rel->connected)
		return -ENOTCONN;
	if (rel->error)
		return rel->error;
	if (len > rel->a.slot_size)
		return -EMSGSIZE;
	if (rel->seq_next - rel->acked >= rel->a.slots)
		return -EAGAIN;
	uint32_t slot = (uint32_t)(rel->seq_next % rel->a.slots);
	struct rel_tx *t = &rel->tx[slot];
	if (t->busy)
		return -EAGAIN;
	memcpy(rel->stage + (size_t)slot * rel->a.slot_size, buf, len);
	t->seq = rel->seq_next;
	t->len = (uint32_t)len;
	int r = tx_post(rel, t);
	if (r)
		return r;
	t->busy = 1;
	rel->seq_next++;
	rel->st.sent++;
	return 0;
}

static void send_ack(struct weft_rel *rel)
{
	struct rel_ack a = { REL_MAGIC, 1, rel->expected };
	if (weft_win_send(rel->win, rel->peer.node, rel->peer.window, &a, sizeof(a)) == 0) {
		rel->need_ack = 0;
		rel->st.acks_sent++;
	} else {
		rel->need_ack = 1;
	}
}

static void on_ack(struct weft_rel *rel, uint64_t next)
{
	rel->st.acks_received++;
	if (next > rel->seq_next)
		return;                 /* acknowledges what was never sent: bogus */
	while (rel->acked < next) {
		struct rel_tx *t = &rel->tx[rel->acked % rel->a.slots];
		if (t->busy && t->seq == rel->acked) {
			if (t->rop.state == WEFT_ROP_POSTED)
				weft_win_rop_abandon(rel->win, &t->rop);
			t->busy = 0;
		}
		rel->acked++;
	}
}

static void on_target_completion(struct weft_rel *rel, const struct weft_entry *e)
{
	if ((e->protocol_cookie & REL_COOKIE_MASK) != REL_COOKIE || e->status != 0)
		return;
	uint32_t len = (uint32_t)(e->protocol_cookie & 0xffffffffu);
	uint64_t seq = e->user_cookie;
	if (len > rel->a.slot_size)
		return;
	uint32_t slot = (uint32_t)(seq % rel->a.slots);
	if (rel->rx_rcxt[slot] != e->rcxt)
		return;                 /* wrong slot for this sequence */
	if (seq < rel->expected) {
		rel->st.duplicates++;
		rel->need_ack = 1;      /* our ack was lost: say it again */
		return;
	}
	if (seq >= rel->expected + rel->a.slots)
		return;
	struct rel_rx *x = &rel->rx[slot];
	if (x->arrived && x->seq == seq) {
		rel->st.duplicates++;
		return;
	}
	x->arrived = 1;
	x->seq = seq;
	x->len = len;
}

int weft_rel_progress(struct weft_rel *rel)
{
	if (rel->error)
		return rel->error;
	struct weft_win *w = rel->win;
	struct weft_entry e;
	uint64_t stale0 = w->st.stale_completions;
	for (int i = 0; i < 256; i++) {
		int r = weft_win_poll(w, &e);
		if (r < 0)
			return rel->error = r;
		if (r == 0)
			break;
		if (e.type == WEFT_ENT_ROP) {
			struct weft_rop *rop = e.rop;
			for (uint32_t s = 0; s < rel->a.slots; s++) {
				struct rel_tx *t = &rel->tx[s];
				if (&t->rop != rop || !t->busy)
					continue;
				if (rop->state == WEFT_ROP_DONE) {
					t->done = 1;
					t->ack_deadline = weft_dev_now_ns(w->dev) + 4 * rel->a.timeout_ns;
				} else {
					rel->st.failed++;
					rel->error = rop->error ? rop->error : -EIO;
				}
			}
		} else if (e.type == WEFT_ENT_COMPLETION && (e.flags & WEFT_ENT_F_TARGET)) {
			on_target_completion(rel, &e);
		} else if (e.type == WEFT_ENT_PACKET && e.length >= sizeof(struct rel_ack) &&
			   e.src_node == rel->peer.node && e.src_window == rel->peer.window) {
			struct rel_ack a;
			memcpy(&a, e.data, sizeof(a));
			if (a.magic == REL_MAGIC && a.kind == 1)
				on_ack(rel, a.next);
			else if (rel->pkt_fn)
				rel->pkt_fn(rel->pkt_arg, &e);
		} else if (e.type == WEFT_ENT_PACKET) {
			if (rel->pkt_fn)
				rel->pkt_fn(rel->pkt_arg, &e);
		} else if (e.type == WEFT_ENT_COMPLETION) {
			rel->st.stale++;
		}
	}
	rel->st.stale += w->st.stale_completions - stale0;
	/* Delivered but not acknowledged in time: write it again. */
	uint64_t now = weft_dev_now_ns(w->dev);
	for (uint64_t q = rel->acked; q < rel->seq_next; q++) {
		struct rel_tx *t = &rel->tx[q % rel->a.slots];
		if (!t->busy || !t->done || now < t->ack_deadline)
			continue;
		if (tx_post(rel, t) == 0)
			rel->st.retries++;
	}
	if (rel->need_ack && rel->connected)
		send_ack(rel);
	return rel->error;
}

int weft_rel_recv(struct weft_rel *rel, void *buf, size_t cap, size_t *len)
{
	uint32_t slot = (uint32_t)(rel->expected % rel->a.slots);
	struct rel_rx *x = &rel->rx[slot];
	if (!x->arrived || x->seq != rel->expected)
		return 0;
	if (x->len > cap)
		return -EMSGSIZE;
	memcpy(buf, rel->ring + (size_t)slot * rel->a.slot_size, x->len);
	*len = x->len;
	x->arrived = 0;
	rel->expected++;
	rel->st.delivered++;
	if (rel->connected)
		send_ack(rel);
	return 1;
}

void weft_rel_set_packet_handler(struct weft_rel *rel,
				 void (*fn)(void *arg, const struct weft_entry *e), void *arg)
{
	rel->pkt_fn = fn;
	rel->pkt_arg = arg;
}

int weft_rel_wait(struct weft_rel *rel, int timeout_ms)
{
	return weft_win_wait(rel->win, timeout_ms);
}
