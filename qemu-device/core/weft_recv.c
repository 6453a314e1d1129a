/* SPDX-License-Identifier: MIT */
/*
 * Weft adapter model: receive engine.
 *
 * Every packet is checked (header, destination, window, key) before it
 * touches anything.  Packet-mode packets and completions go to the
 * window's receive FIFO, payload first and header line last; a full FIFO
 * drops them silently (counted).  RDMA payload is placed through the TCE
 * tables under the rCxt/tid rules; RDMA read requests are queued on the
 * window's LMT RDMA send queue for the send engine.
 */
#include <stdlib.h>
#include <string.h>

#include "weft/names.h"
#include "weft_core_int.h"
#include "weft_match.h"

static uint64_t nchunks_of(uint64_t total)
{
	return (total + WEFT_MAX_PAYLOAD - 1) / WEFT_MAX_PAYLOAD;
}

bool weft_track_start(struct weft_core *c, uint32_t r, uint32_t tid, uint64_t total)
{
	struct weft_track *t = &c->track[r];
	uint64_t n = nchunks_of(total), words = (n + 63) / 64;

	weft_track_free(c, r);
	if (c->track_bytes + words * 8 > WEFT_TRACK_BUDGET)
		return false;
	t->bits = calloc(words ? words : 1, sizeof(uint64_t));
	if (!t->bits)
		return false;
	t->nchunks = n;
	t->tid = tid;
	c->track_bytes += words * 8;
	return true;
}

void weft_track_free(struct weft_core *c, uint32_t r)
{
	struct weft_track *t = &c->track[r];

	if (!t->bits)
		return;
	c->track_bytes -= (t->nchunks + 63) / 64 * 8;
	free(t->bits);
	t->bits = NULL;
	t->nchunks = 0;
	t->tid = 0;
}

void weft_rcxt_cancel(struct weft_core *c, uint32_t r, unsigned int reason)
{
	struct weft_rcxt *x = weft_rcxt(c, r);
	unsigned int w = x->local_window;

	switch (x->rcxt_state) {
	case WEFT_RCXT_SEND_QUEUED:
	case WEFT_RCXT_SENDING:
		if (w < c->cfg.nr_windows && !(c->win[w].fop.busy &&
					      c->win[w].fop.line.rdma.local_rcxt == r))
			weft_tx_rcxt_unlink(c, w, r);
		x->complete_status = (uint8_t)reason;
		break;
	case WEFT_RCXT_RECEIVING:
		x->complete_status = (uint8_t)reason;
		break;
	default:
		break;
	}
	/* A transmit in progress on r notices FREE at its next chunk. */
	x->rcxt_state = WEFT_RCXT_FREE;
	x->next = WEFT_RCXT_NONE;
	weft_track_free(c, r);
}

unsigned int weft_rx_fifo_deliver(struct weft_core *c, unsigned int w,
				  struct weft_recv_hdr *rh,
				  const void *payload, size_t len)
{
	struct weft_lmt *l = weft_lmt(c, w);
	uint64_t addr, cnt = l->recv_current_cnt;
	uint32_t thr = l->recv_int_threshold;
	bool early, hit;

	if (l->recv_fifo_avail_slots > l->recv_mask + 1) {
		weft_guest_error(c, "window %u: recv_fifo_avail_slots %u exceeds the FIFO",
				 w, l->recv_fifo_avail_slots);
		l->recv_fifo_avail_slots = l->recv_mask + 1;
	}
	if (l->recv_fifo_avail_slots == 0) {
		l->recv_dropped++;
		weft_drop(c, NULL, w, WEFT_R_FIFO_FULL);
		return WEFT_R_FIFO_FULL;
	}
	addr = l->recv_fifo_real_address + (cnt & l->recv_mask) * (uint64_t)WEFT_FRAME_SIZE;
	rh->seq = (uint32_t)cnt;
	early = (l->flags & WEFT_LMT_F_EARLY_INT) || (c->int_config & WEFT_INT_CONFIG_EARLY);
	hit = thr != WEFT_THRESHOLD_OFF0 && thr != WEFT_THRESHOLD_OFF1 &&
	      (uint32_t)(cnt + 1) == thr;
	if (len && weft_dma_write(c, addr + WEFT_FRAME_HDR_SIZE, payload, len) != 0) {
		weft_drop(c, NULL, w, WEFT_R_DMA_ERROR);
		return WEFT_R_DMA_ERROR;
	}
	l->recv_current_cnt = cnt + 1;
	l->recv_fifo_avail_slots--;
	if (early && hit)
		weft_event(c, WEFT_EV_RECV_THRESHOLD, w, WEFT_RCXT_NONE, 0, cnt + 1);
	if (c->rx_batch && c->cfg.rx_overlap > 1) {
		struct weft_rx_pend *p;

		if (c->rx_npend == c->cfg.rx_overlap)
			weft_rx_flush(c);
		p = &c->rx_pend[c->rx_npend++];
		p->addr = addr;
		p->rh = *rh;
		p->count = cnt + 1;
		p->window = w;
		p->event = !early && hit;
		return WEFT_R_OK;
	}
	if (weft_dma_write(c, addr, rh, sizeof(*rh)) != 0) {
		weft_drop(c, NULL, w, WEFT_R_DMA_ERROR);
		return WEFT_R_DMA_ERROR;
	}
	if (!early && hit)
		weft_event(c, WEFT_EV_RECV_THRESHOLD, w, WEFT_RCXT_NONE, 0, cnt + 1);
	return WEFT_R_OK;
}

void weft_rx_flush(struct weft_core *c)
{
	while (c->rx_npend > 0) {
		struct weft_rx_pend *p = &c->rx_pend[--c->rx_npend];

		if (weft_dma_write(c, p->addr, &p->rh, sizeof(p->rh)) != 0) {
			weft_drop(c, NULL, p->window, WEFT_R_DMA_ERROR);
			continue;
		}
		if (p->event)
			weft_event(c, WEFT_EV_RECV_THRESHOLD, p->window, WEFT_RCXT_NONE, 0,
				   p->count);
	}
}

/* rCxt checks shared by every packet naming a receiver rCxt. */
unsigned int weft_rx_rcxt_check(struct weft_core *c, unsigned int w, uint32_t r,
				uint16_t key)
{
	unsigned int reason = weft_rcxt_owned(c, w, r);

	if (reason != WEFT_R_OK)
		return reason;
	if (weft_rcxt(c, r)->rcxt_key != key)
		return WEFT_R_RCXT_KEY;
	return WEFT_R_OK;
}

/* Start the operation of packet h on rCxt x: the fields every incoming
 * RDMA operation sets alike. */
static void rcxt_load_op(struct weft_rcxt *x, const struct weft_wire_hdr *h,
			 uint8_t state, uint8_t direction)
{
	x->tid = h->tid;
	x->pkt_type = h->type;
	x->rcxt_direction = direction;
	x->rcxt_state = state;
	x->complete_status = WEFT_R_OK;
	x->notify_on_completion = h->notify & WEFT_NOTIFY_BOTH;
	x->payload_size = WEFT_MAX_PAYLOAD;
	x->total_rdma_size = h->total_length;
	x->data_to_snd_rcv = h->total_length;
	x->rdma_protocol_cookie = h->protocol_cookie;
	x->rdma_usr_cookie = h->user_cookie;
}

void weft_rx_accept(struct weft_core *c, const struct weft_wire_hdr *h,
		    unsigned int w, size_t len)
{
	struct weft_trace t = { .kind = WEFT_TR_PKT_RX, .hdr = h, .len = len, .window = w };

	weft_count(c, WEFT_CNT_RX_PACKETS, 1);
	weft_count(c, WEFT_CNT_RX_BYTES, len);
	weft_trace(c, &t);
}

/*
 * An incoming packet failed a protection check: discard it (the caller
 * counted the drop) and tell the ULP.  A stale PVO (TCE key mismatch) on
 * a window opened in the re-register on MP_FATAL mode (LMT flag
 * PVO_FATAL, seed 1.5.17 solution 2) raises a window fatal error instead.
 */
static void rx_protection(struct weft_core *c, unsigned int w, uint32_t r,
			  unsigned int reason, uint32_t tid)
{
	if (reason == WEFT_R_DMA_ERROR)
		return;
	if (reason == WEFT_R_TCE_KEY && (weft_lmt(c, w)->flags & WEFT_LMT_F_PVO_FATAL))
		weft_window_fatal(c, w, r, reason);
	else
		weft_event(c, WEFT_EV_PROTECTION, w, r, reason, tid);
}

static void rx_fifo(struct weft_core *c, unsigned int w, const struct weft_wire_hdr *h,
		    const uint8_t *payload, size_t len)
{
	struct weft_recv_hdr rh;

	memset(&rh, 0, sizeof(rh));
	rh.type = WEFT_RF_FIFO;
	rh.flags = WEFT_RF_VALID | (h->dst_node == WEFT_NODE_BROADCAST ? WEFT_RF_BROADCAST : 0);
	rh.length = (uint16_t)h->length;
	rh.src_node = h->src_node;
	rh.src_window = h->src_window;
	if (weft_rx_fifo_deliver(c, w, &rh, payload, h->length) == WEFT_R_OK) {
		weft_rx_accept(c, h, w, len);
		weft_count(c, WEFT_CNT_RX_FIFO_PACKETS, 1);
	}
}

/* The RDMA operation on rCxt r is complete: notify as requested. */
static void rdma_complete(struct weft_core *c, unsigned int w, uint32_t r,
			  const struct weft_wire_hdr *h)
{
	struct weft_rcxt *x = weft_rcxt(c, r);
	bool read = h->flags & WEFT_WF_READ_RESP;
	bool tp = h->type == WEFT_PKT_TP_RDMAW;
	uint8_t local_bit = read ? WEFT_NOTIFY_SOURCE : WEFT_NOTIFY_TARGET;
	uint8_t remote_bit = read ? WEFT_NOTIFY_TARGET : WEFT_NOTIFY_SOURCE;
	uint8_t notify = x->notify_on_completion;

	x->rcxt_state = WEFT_RCXT_FREE;
	x->complete_status = WEFT_R_OK;
	weft_track_free(c, r);
	weft_count(c, read || tp ? WEFT_CNT_RDMAR_DONE : WEFT_CNT_RDMAW_DONE, 1);
	if (notify & local_bit) {
		struct weft_recv_hdr rh;

		memset(&rh, 0, sizeof(rh));
		rh.type = WEFT_RF_COMPLETION;
		rh.flags = WEFT_RF_VALID |
			   (local_bit == WEFT_NOTIFY_SOURCE ? WEFT_RF_AS_SOURCE : WEFT_RF_AS_TARGET) |
			   (read || tp ? WEFT_RF_READ : 0);
		rh.src_node = h->src_node;
		rh.src_window = h->src_window;
		rh.rcxt = r;
		rh.tid = x->tid;
		rh.total_length = x->total_rdma_size;
		rh.protocol_cookie = x->rdma_protocol_cookie;
		rh.user_cookie = x->rdma_usr_cookie;
		if (weft_rx_fifo_deliver(c, w, &rh, NULL, 0) == WEFT_R_OK)
			weft_count(c, WEFT_CNT_RX_COMPLETIONS, 1);
	}
	if (notify & remote_bit) {
		struct weft_wire_hdr ch;

		memset(&ch, 0, sizeof(ch));
		ch.type = WEFT_PKT_COMPLETION;
		ch.notify = remote_bit;
		ch.flags = read || tp ? WEFT_WF_READ_RESP : 0;
		ch.dst_node = tp ? h->ctl_node : h->src_node;
		ch.dst_window = tp ? h->ctl_window : h->src_window;
		ch.rcxt = tp ? h->ctl_rcxt : h->src_rcxt;
		ch.rcxt_key = tp ? h->ctl_rcxt_key : h->src_rcxt_key;
		ch.src_rcxt = r;
		ch.src_rcxt_key = x->rcxt_key;
		ch.tid = x->tid;
		ch.total_length = x->total_rdma_size;
		ch.protocol_cookie = x->rdma_protocol_cookie;
		ch.user_cookie = x->rdma_usr_cookie;
		if (!weft_tx_ctl(c, w, &ch))
			weft_drop(c, &ch, w, WEFT_R_RX_QUEUE_FULL);
	}
}

static void rx_rdmaw(struct weft_core *c, unsigned int w, const struct weft_wire_hdr *h,
		     const uint8_t *payload, size_t len)
{
	struct weft_lmt *l = weft_lmt(c, w);
	struct weft_rcxt *x;
	struct weft_track *t;
	uint64_t chunk, want;
	unsigned int reason;

	reason = weft_rx_rcxt_check(c, w, h->rcxt, h->rcxt_key);
	if (reason != WEFT_R_OK) {
		weft_drop(c, h, w, reason);
		return;
	}
	x = weft_rcxt(c, h->rcxt);
	if (h->length == 0 || h->total_length == 0 || h->total_length > WEFT_RDMA_MAX_LENGTH ||
	    h->offset >= h->total_length || h->offset % WEFT_MAX_PAYLOAD) {
		weft_drop(c, h, w, WEFT_R_LENGTH);
		return;
	}
	want = h->total_length - h->offset;
	if (want > WEFT_MAX_PAYLOAD)
		want = WEFT_MAX_PAYLOAD;
	if (h->length != want) {
		weft_drop(c, h, w, WEFT_R_LENGTH);
		return;
	}
	if (h->tid < x->tid) {
		weft_drop(c, h, w, WEFT_R_TID_STALE);
		return;
	}
	if (h->tid > x->tid) {
		/* First packet of a new operation: restart the rCxt, but only
		 * for a packet that passes the protection checks, so a stale
		 * packet cannot disturb the rCxt. */
		if (x->rcxt_state == WEFT_RCXT_SENDING || x->rcxt_state == WEFT_RCXT_SEND_QUEUED) {
			weft_drop(c, h, w, WEFT_R_RCXT_BUSY);
			return;
		}
		reason = weft_xlate_check(c, l->window_key, h->pvo, h->length);
		if (reason != WEFT_R_OK) {
			weft_drop(c, h, w, reason);
			rx_protection(c, w, h->rcxt, reason, h->tid);
			return;
		}
		if (!weft_track_start(c, h->rcxt, h->tid, h->total_length)) {
			weft_drop(c, h, w, WEFT_R_LENGTH);
			return;
		}
		if (x->rcxt_state == WEFT_RCXT_RECEIVING)
			weft_count(c, WEFT_CNT_RDMA_RESTARTS, 1);
		rcxt_load_op(x, h, WEFT_RCXT_RECEIVING, WEFT_RCXT_DIR_RECV);
		x->outstanding_dma = 0;
		x->lid = h->src_node;
		x->remote_window = h->src_window;
		x->data_source_rcxt = h->src_rcxt;
		x->data_target_rcxt = h->rcxt;
		x->remote_rcxt_key = h->src_rcxt_key;
		x->remote_pvo = h->pvo - h->offset;
		x->initiator_node = h->type == WEFT_PKT_TP_RDMAW ? h->ctl_node : h->src_node;
		x->initiator_window = h->type == WEFT_PKT_TP_RDMAW ? h->ctl_window : h->src_window;
		x->ctl_node = h->ctl_node;
		x->ctl_window = h->ctl_window;
		x->ctl_rcxt = h->ctl_rcxt;
		x->ctl_rcxt_key = h->ctl_rcxt_key;
	} else if (x->rcxt_state != WEFT_RCXT_RECEIVING) {
		/* Same tid after completion or cancel: a late packet. */
		weft_drop(c, h, w, WEFT_R_TID_STALE);
		return;
	}
	t = &c->track[h->rcxt];
	if (!t->bits || t->tid != h->tid || x->total_rdma_size != h->total_length ||
	    t->nchunks != nchunks_of(h->total_length) ||
	    x->data_to_snd_rcv > x->total_rdma_size) {
		weft_drop(c, h, w, WEFT_R_LENGTH);
		return;
	}
	chunk = h->offset / WEFT_MAX_PAYLOAD;
	if (t->bits[chunk / 64] & (1ull << (chunk % 64))) {
		weft_drop(c, h, w, WEFT_R_DUPLICATE);
		return;
	}
	reason = weft_xlate_write(c, l->window_key, h->pvo, payload, h->length,
				  &x->outstanding_dma);
	if (reason != WEFT_R_OK) {
		/* Incoming protection violation: discard and notify; this
		 * chunk is never counted, so the tid never completes. */
		x->complete_status = (uint8_t)reason;
		weft_drop(c, h, w, reason);
		rx_protection(c, w, h->rcxt, reason, h->tid);
		return;
	}
	weft_rx_accept(c, h, w, len);
	t->bits[chunk / 64] |= 1ull << (chunk % 64);
	x->data_to_snd_rcv -= h->length;
	if (x->data_to_snd_rcv == 0 && x->outstanding_dma == 0)
		rdma_complete(c, w, h->rcxt, h);
}

static void rx_rdmar(struct weft_core *c, unsigned int w, const struct weft_wire_hdr *h,
		     size_t len)
{
	struct weft_lmt *l = weft_lmt(c, w);
	bool tp = h->type == WEFT_PKT_TP_RDMAR_REQ;
	struct weft_rcxt *x;
	unsigned int reason;
	uint32_t r = h->rcxt;
	bool restart;

	if (h->length != 0) {
		weft_drop(c, h, w, WEFT_R_BAD_HEADER);
		return;
	}
	reason = weft_rx_rcxt_check(c, w, r, h->rcxt_key);
	if (reason != WEFT_R_OK) {
		weft_drop(c, h, w, reason);
		return;
	}
	x = weft_rcxt(c, r);
	/* A larger tid abandons a RECEIVING operation, as a write's does
	 * (6.2): else a write retry that arrived after its operation was
	 * done at the initiator, short of a lost packet, holds the rCxt. */
	restart = x->rcxt_state == WEFT_RCXT_RECEIVING && h->tid > x->tid;
	if (x->rcxt_state != WEFT_RCXT_FREE && !restart) {
		weft_drop(c, h, w, WEFT_R_RCXT_BUSY);
		return;
	}
	if (h->tid <= x->tid) {
		weft_drop(c, h, w, WEFT_R_TID_STALE);
		return;
	}
	if (h->total_length == 0 || h->total_length > WEFT_RDMA_MAX_LENGTH ||
	    weft_pvo_offset(h->pvo) + h->total_length > WEFT_PVO_OFFSET_MASK + 1 ||
	    weft_pvo_offset(h->aux_pvo) + h->total_length > WEFT_PVO_OFFSET_MASK + 1) {
		weft_drop(c, h, w, WEFT_R_LENGTH);
		return;
	}
	if (tp && h->ctl_node > WEFT_NODE_MAX_UNICAST) {
		weft_drop(c, h, w, WEFT_R_BAD_HEADER);
		return;
	}
	/* The source buffer's first page is checked now, so a stale request
	 * is refused at once; later pages are checked as they are sent. */
	reason = weft_xlate_check(c, l->window_key, h->pvo, 1);
	if (reason != WEFT_R_OK) {
		weft_drop(c, h, w, reason);
		rx_protection(c, w, r, reason, h->tid);
		return;
	}
	if (l->rcxt_count > 0 && (l->rcxt_tail >= c->cfg.nr_rcxt ||
				  l->rcxt_count >= c->cfg.nr_rcxt)) {
		weft_guest_error(c, "window %u: RDMA send queue corrupted, reset", w);
		weft_tx_window_stop(c, w);
	}
	weft_rx_accept(c, h, w, len);
	if (restart)
		weft_count(c, WEFT_CNT_RDMA_RESTARTS, 1);
	weft_track_free(c, r);
	rcxt_load_op(x, h, WEFT_RCXT_SEND_QUEUED, WEFT_RCXT_DIR_SEND);
	x->local_pvo = h->pvo;
	x->remote_pvo = h->aux_pvo;
	x->initiator_node = h->src_node;
	x->initiator_window = h->src_window;
	x->data_source_rcxt = r;
	if (tp) {
		x->lid = h->ctl_node;
		x->remote_window = h->ctl_window;
		x->data_target_rcxt = h->ctl_rcxt;
		x->remote_rcxt_key = h->ctl_rcxt_key;
		x->ctl_node = h->src_node;
		x->ctl_window = h->src_window;
		x->ctl_rcxt = h->src_rcxt;
		x->ctl_rcxt_key = h->src_rcxt_key;
	} else {
		x->lid = h->src_node;
		x->remote_window = h->src_window;
		x->data_target_rcxt = h->src_rcxt;
		x->remote_rcxt_key = h->src_rcxt_key;
		x->ctl_node = 0;
		x->ctl_window = 0;
		x->ctl_rcxt = 0;
		x->ctl_rcxt_key = 0;
	}
	x->next = WEFT_RCXT_NONE;
	if (l->rcxt_count == 0)
		l->rcxt_head = r;
	else
		weft_rcxt(c, l->rcxt_tail)->next = r;
	l->rcxt_tail = r;
	l->rcxt_count++;
	weft_set_active(c, w, true);
	if (c->ops.kick)
		c->ops.kick(c->opaque);
}

/* The rCxt's operation was sent to a broadcast or multicast id: every
 * target sends its own completion for the one tid. */
static bool bcast_op(const struct weft_rcxt *x)
{
	return x->pkt_type == WEFT_PKT_RDMAW && x->lid > WEFT_NODE_MAX_UNICAST;
}

/* At-most-once completion delivery (hw-spec 6.2): a completion packet is
 * accepted only for the operation the rCxt currently holds, in the role
 * that operation expects a completion packet in, and once per tid.  The
 * rCxt key was checked by the caller. */
static unsigned int completion_check(struct weft_core *c, const struct weft_wire_hdr *h)
{
	const struct weft_rcxt *x = weft_rcxt(c, h->rcxt);
	bool read = h->flags & WEFT_WF_READ_RESP;
	uint8_t role;

	/* tid 0 is no operation; older tids are finished operations; newer
	 * tids are operations this rCxt never started. */
	if (x->tid == 0 || h->tid != x->tid)
		return WEFT_R_TID_STALE;
	/* The role in which the current operation expects a completion
	 * packet: the initiator of an RDMA write (SOURCE), the data source
	 * of an RDMA read (TARGET, READ), the controlling rCxt of a
	 * third-party read (SOURCE, READ). */
	if (x->rcxt_direction != WEFT_RCXT_DIR_SEND)
		return WEFT_R_TID_STALE;
	switch (x->pkt_type) {
	case WEFT_PKT_RDMAW:
		role = read ? 0 : WEFT_NOTIFY_SOURCE;
		break;
	case WEFT_PKT_RDMAR_REQ:
		role = read ? WEFT_NOTIFY_TARGET : 0;
		break;
	case WEFT_PKT_TP_RDMAR_REQ:
		role = read ? WEFT_NOTIFY_SOURCE : 0;
		break;
	default:
		role = 0;
		break;
	}
	if (!role || h->notify != role || !(x->notify_on_completion & role))
		return WEFT_R_TID_STALE;
	if (c->cmpl_tid[h->rcxt] == h->tid)
		return WEFT_R_DUPLICATE;
	return WEFT_R_OK;
}

static void rx_completion(struct weft_core *c, unsigned int w, const struct weft_wire_hdr *h,
			  size_t len)
{
	struct weft_recv_hdr rh;
	unsigned int reason;

	if (h->length != 0) {
		weft_drop(c, h, w, WEFT_R_BAD_HEADER);
		return;
	}
	reason = weft_rx_rcxt_check(c, w, h->rcxt, h->rcxt_key);
	if (reason == WEFT_R_OK)
		reason = completion_check(c, h);
	if (reason != WEFT_R_OK) {
		weft_drop(c, h, w, reason);
		return;
	}
	if (h->notify == WEFT_NOTIFY_SOURCE)
		weft_cond_completion(c, w, h->rcxt);
	memset(&rh, 0, sizeof(rh));
	rh.type = WEFT_RF_COMPLETION;
	rh.flags = WEFT_RF_VALID |
		   (h->notify == WEFT_NOTIFY_SOURCE ? WEFT_RF_AS_SOURCE : WEFT_RF_AS_TARGET) |
		   (h->flags & WEFT_WF_READ_RESP ? WEFT_RF_READ : 0);
	rh.src_node = h->src_node;
	rh.src_window = h->src_window;
	rh.rcxt = h->rcxt;
	rh.tid = h->tid;
	rh.status = h->status;
	rh.total_length = h->total_length;
	rh.protocol_cookie = h->protocol_cookie;
	rh.user_cookie = h->user_cookie;
	if (weft_rx_fifo_deliver(c, w, &rh, NULL, 0) == WEFT_R_OK) {
		/* Only a delivered completion uses up its tid: one dropped on a
		 * full FIFO may still be delivered by a later copy. */
		if (!bcast_op(weft_rcxt(c, h->rcxt)))
			c->cmpl_tid[h->rcxt] = h->tid;
		weft_rx_accept(c, h, w, len);
		weft_count(c, WEFT_CNT_RX_COMPLETIONS, 1);
	}
}

void weft_rx_process(struct weft_core *c, const uint8_t *hdr, const uint8_t *payload,
		     size_t len)
{
	/* hdr is an 8-byte aligned receive-queue slot (or the embedder's
	 * own packet), payload maybe the shared ring: only placed, or read
	 * once into a copy by the packet type's own parser. */
	const struct weft_wire_hdr *h = (const struct weft_wire_hdr *)hdr;
	struct weft_lmt *l;
	unsigned int w;
	uint16_t d;

	/* Only verbs packets may be longer than a FIFO payload (wire.h). */
	if (h->version != WEFT_WIRE_VERSION || h->length != len - sizeof(*h) ||
	    h->length > (h->type == WEFT_PKT_VERBS ? WEFT_WIRE_MAX_PAYLOAD : WEFT_MAX_PAYLOAD)) {
		weft_drop(c, h, WEFT_NO_WINDOW, WEFT_R_BAD_HEADER);
		return;
	}
	d = h->dst_node;
	if (d != c->cfg.node_id && d != WEFT_NODE_BROADCAST &&
	    !(d >= WEFT_NODE_MCAST_BASE && d < WEFT_NODE_MCAST_BASE + WEFT_NR_MCAST_GROUPS)) {
		weft_drop(c, h, WEFT_NO_WINDOW, WEFT_R_NOT_FOR_US);
		return;
	}
	if (h->type == WEFT_PKT_VERBS) {
		weft_verbs_rx(c, h, payload, h->length);
		return;
	}
	if (h->type == WEFT_PKT_MATCH) {
		if (d != c->cfg.node_id)
			weft_drop(c, h, WEFT_NO_WINDOW, WEFT_R_NOT_FOR_US);
		else
			weft_match_rx(c, h, payload, h->length);
		return;
	}
	if (h->type >= WEFT_PKT_CNT_WRITE_OP && h->type <= WEFT_PKT_CNT_ERROR) {
		if (d != c->cfg.node_id)
			weft_drop(c, h, WEFT_NO_WINDOW, WEFT_R_NOT_FOR_US);
		else
			weft_cnt_rx(c, h, payload, h->length);
		return;
	}
	w = h->dst_window;
	if (w >= c->cfg.nr_windows || !weft_window_valid(c, w) ||
	    weft_lmt_check(c, w) != WEFT_R_OK) {
		weft_drop(c, h, w, WEFT_R_WINDOW_INVALID);
		return;
	}
	l = weft_lmt(c, w);
	if (h->key != l->window_key) {
		weft_drop(c, h, w, WEFT_R_KEY_MISMATCH);
		return;
	}
	switch (h->type) {
	case WEFT_PKT_FIFO:
		rx_fifo(c, w, h, payload, len);
		break;
	case WEFT_PKT_RDMAW:
	case WEFT_PKT_TP_RDMAW:
		rx_rdmaw(c, w, h, payload, len);
		break;
	case WEFT_PKT_RDMAR_REQ:
	case WEFT_PKT_TP_RDMAR_REQ:
	case WEFT_PKT_RDMAR_FIFO_REQ:
		rx_rdmar(c, w, h, len);
		break;
	case WEFT_PKT_FIFO_DATA:
	case WEFT_PKT_RDMAR_PUT_REQ:
		weft_half_rx(c, w, h, payload, len);
		break;
	case WEFT_PKT_COMPLETION:
		rx_completion(c, w, h, len);
		break;
	default:
		weft_drop(c, h, w, WEFT_R_BAD_TYPE);
		break;
	}
}
