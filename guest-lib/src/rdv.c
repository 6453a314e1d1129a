/* SPDX-License-Identifier: MIT */
/*
 * Rendezvous over FIFO packets, for two-node tools: no TCP inside guests.
 * Packet: struct rdv_hdr then the blob.  The client repeats HELLO every
 * 100 ms until the server's REPLY arrives (either may be lost); the
 * server answers every HELLO of the tag, also later through
 * weft_rdv_handle().  BYE/BYE_ACK end a session the same way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"

#define RDV_MAGIC       0x56445257u     /* "WRDV" */
enum { RDV_HELLO = 1, RDV_REPLY = 2, RDV_BYE = 3, RDV_BYE_ACK = 4 };

struct rdv_hdr {
	uint32_t magic;
	uint32_t tag;
	uint32_t kind;
	uint32_t len;
};

static int rdv_send(struct weft_win *w, uint32_t tag, uint32_t kind, uint16_t node,
		    uint16_t window, const void *blob, size_t len)
{
	uint8_t pkt[sizeof(struct rdv_hdr) + WEFT_RDV_MAX];
	struct rdv_hdr h = { RDV_MAGIC, tag, kind, (uint32_t)len };
	if (len > WEFT_RDV_MAX)
		return -EMSGSIZE;
	memcpy(pkt, &h, sizeof(h));
	if (len)
		memcpy(pkt + sizeof(h), blob, len);
	int r;
	struct weft_entry e;
	/* A full send FIFO drains as the adapter works: poll and retry. */
	for (int i = 0; i < 1000; i++) {
		r = weft_win_send(w, node, window, pkt, sizeof(h) + len);
		if (r != -EAGAIN)
			return r;
		while (weft_win_poll(w, &e) > 0)
			;
		weft_win_wait(w, 1);
	}
	return r;
}

/* Parse a packet entry; returns the kind, or 0 if not ours. */
static uint32_t rdv_parse(const struct weft_entry *e, uint32_t tag, const uint8_t **blob,
			  size_t *len)
{
	struct rdv_hdr h;
	if (e->type != WEFT_ENT_PACKET || e->length < sizeof(h))
		return 0;
	memcpy(&h, e->data, sizeof(h));
	if (h.magic != RDV_MAGIC || h.tag != tag || h.len > e->length - sizeof(h) ||
	    h.len > WEFT_RDV_MAX)
		return 0;
	*blob = e->data + sizeof(h);
	*len = h.len;
	return h.kind;
}

/* Remember the reply of a tag, so that a repeated hello (our reply was
 * lost) is answered again whatever the window is doing meanwhile. */
static void memo_store(struct weft_win *w, uint32_t tag, const void *blob, size_t len)
{
	if (!w->rdv_memo) {
		w->rdv_memo = calloc(WEFT_RDV_MEMOS, sizeof(*w->rdv_memo));
		if (!w->rdv_memo)
			return;
	}
	unsigned int slot = 0;
	for (unsigned int i = 0; i < WEFT_RDV_MEMOS; i++)
		if (w->rdv_memo[i].tag == tag || w->rdv_memo[i].tag == 0) {
			slot = i;
			break;
		}
	w->rdv_memo[slot].tag = tag;
	w->rdv_memo[slot].len = (uint32_t)len;
	memcpy(w->rdv_memo[slot].blob, blob, len);
}

/* Answer a hello of a remembered tag; 1 if e was one. */
static int memo_answer(struct weft_win *w, const struct weft_entry *e)
{
	struct rdv_hdr h;
	if (!w->rdv_memo || e->type != WEFT_ENT_PACKET || e->length < sizeof(h))
		return 0;
	memcpy(&h, e->data, sizeof(h));
	if (h.magic != RDV_MAGIC || h.kind != RDV_HELLO || h.tag == 0)
		return 0;
	for (unsigned int i = 0; i < WEFT_RDV_MEMOS; i++)
		if (w->rdv_memo[i].tag == h.tag) {
			rdv_send(w, h.tag, RDV_REPLY, e->src_node, e->src_window,
				 w->rdv_memo[i].blob, w->rdv_memo[i].len);
			return 1;
		}
	return 0;
}

static int deadline_passed(struct weft_win *w, uint64_t start, int timeout_ms)
{
	return timeout_ms >= 0 &&
	       weft_dev_now_ns(w->dev) - start >= (uint64_t)timeout_ms * 1000000ull;
}

/* A wait for the next entry of a window, bounded by timeout_ms from start,
 * repeating a request (kind != 0) at once and every 100 ms meanwhile. */
struct rdv_wait {
	uint64_t start;
	int timeout_ms;
	uint32_t tag, kind;
	uint16_t node, window;
	const void *blob;
	size_t len;
	uint64_t last;
	int sent;
};

/* 0 with the next entry in *ent, else the error (-ETIMEDOUT at the end). */
static int rdv_next(struct weft_win *w, struct rdv_wait *rw, struct weft_entry *ent)
{
	for (;;) {
		uint64_t now = rw->kind ? weft_dev_now_ns(w->dev) : 0;
		if (rw->kind && (!rw->sent || now - rw->last >= 100000000ull)) {
			int r = rdv_send(w, rw->tag, rw->kind, rw->node, rw->window, rw->blob,
					 rw->len);
			if (r)
				return r;
			rw->sent = 1;
			rw->last = now;
		}
		int r = weft_win_poll(w, ent);
		if (r < 0)
			return r;
		if (r > 0)
			return 0;
		if (deadline_passed(w, rw->start, rw->timeout_ms))
			return -ETIMEDOUT;
		r = weft_win_wait(w, 100);
		if (r < 0)
			return r;
	}
}

/* Wait for an entry of the given kind (from rw's peer when from_peer),
 * answering every other entry meanwhile.  0 with the entry and its blob. */
static int rdv_await(struct weft_win *w, struct rdv_wait *rw, uint32_t tag, uint32_t kind,
		     int from_peer, struct weft_entry *ent, const uint8_t **blob, size_t *len)
{
	for (;;) {
		int r = rdv_next(w, rw, ent);
		if (r)
			return r;
		if (rdv_parse(ent, tag, blob, len) == kind &&
		    (!from_peer || (ent->src_node == rw->node && ent->src_window == rw->window)))
			return 0;
		memo_answer(w, ent);
	}
}

int weft_rdv_serve(struct weft_win *w, uint32_t tag, const void *mine, size_t mine_len,
		   void *peer, size_t peer_cap, size_t *peer_len, uint16_t *peer_node,
		   uint16_t *peer_window, int timeout_ms)
{
	struct rdv_wait rw = { .start = weft_dev_now_ns(w->dev), .timeout_ms = timeout_ms };
	struct weft_entry ent;
	const uint8_t *blob;
	size_t len;
	int r = rdv_await(w, &rw, tag, RDV_HELLO, 0, &ent, &blob, &len);
	if (r)
		return r;
	if (len > peer_cap || mine_len > WEFT_RDV_MAX)
		return -EMSGSIZE;
	memcpy(peer, blob, len);
	*peer_len = len;
	*peer_node = ent.src_node;
	*peer_window = ent.src_window;
	memo_store(w, tag, mine, mine_len);
	return rdv_send(w, tag, RDV_REPLY, ent.src_node, ent.src_window, mine, mine_len);
}

int weft_rdv_connect(struct weft_win *w, uint32_t tag, uint16_t node, uint16_t window,
		     const void *mine, size_t mine_len, void *peer, size_t peer_cap,
		     size_t *peer_len, int timeout_ms)
{
	struct rdv_wait rw = { .start = weft_dev_now_ns(w->dev), .timeout_ms = timeout_ms,
			       .tag = tag, .kind = RDV_HELLO, .node = node, .window = window,
			       .blob = mine, .len = mine_len };
	struct weft_entry ent;
	const uint8_t *blob;
	size_t len;
	int r = rdv_await(w, &rw, tag, RDV_REPLY, 1, &ent, &blob, &len);
	if (r)
		return r;
	if (len > peer_cap)
		return -EMSGSIZE;
	memcpy(peer, blob, len);
	*peer_len = len;
	return 0;
}

int weft_rdv_handle(struct weft_win *w, uint32_t tag, const struct weft_entry *e,
		    const void *mine, size_t mine_len)
{
	const uint8_t *blob;
	size_t len;
	if (rdv_parse(e, tag, &blob, &len) != RDV_HELLO)
		return memo_answer(w, e);
	rdv_send(w, tag, RDV_REPLY, e->src_node, e->src_window, mine, mine_len);
	return 1;
}

int weft_rdv_bye(struct weft_win *w, uint32_t tag, uint16_t node, uint16_t window,
		 int timeout_ms)
{
	struct rdv_wait rw = { .start = weft_dev_now_ns(w->dev), .timeout_ms = timeout_ms,
			       .tag = tag, .kind = RDV_BYE, .node = node, .window = window };
	struct weft_entry ent;
	const uint8_t *blob;
	size_t len;
	return rdv_await(w, &rw, tag, RDV_BYE_ACK, 1, &ent, &blob, &len);
}

int weft_rdv_is_bye(struct weft_win *w, uint32_t tag, const struct weft_entry *e)
{
	const uint8_t *blob;
	size_t len;
	if (rdv_parse(e, tag, &blob, &len) != RDV_BYE)
		return 0;
	rdv_send(w, tag, RDV_BYE_ACK, e->src_node, e->src_window, NULL, 0);
	return 1;
}
