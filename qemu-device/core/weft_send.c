/* SPDX-License-Identifier: MIT */
/*
 * Weft adapter model: send engine.
 *
 * Transmit tasks serve the windows of the active-window vector round
 * robin, switching window every send_quanta_size packets.  Per window the
 * send FIFO (packet-mode frames and RDMA pseudo packets) and the LMT RDMA
 * send queue (rCxts queued by incoming RDMA read requests) take turns.
 * Every transmitted packet carries the window key from the LMT, never a
 * value from the send frame.  An RDMA operation is sent one packet per
 * step and keeps its transmit task across polls.
 */
#include <errno.h>
#include <string.h>

#include "weft/names.h"
#include "weft_core_int.h"

#define TX_NO_TASK      (-EBUSY)

static uint64_t send_frame_addr(const struct weft_lmt *l, uint64_t idx)
{
	return l->send_fifo_real_address + (idx & l->send_mask) * (uint64_t)WEFT_FRAME_SIZE;
}

static struct weft_wire_hdr *hdr_init(struct weft_core *c, unsigned int w,
				      const struct weft_lmt *l, uint8_t type)
{
	struct weft_wire_hdr *h;

	c->tx = c->ops.tx_buf ? c->ops.tx_buf(c->opaque) : NULL;
	if (!c->tx)
		c->tx = c->txbuf.data;
	h = (struct weft_wire_hdr *)c->tx;

	memset(h, 0, sizeof(*h));
	h->version = WEFT_WIRE_VERSION;
	h->type = type;
	h->src_node = c->cfg.node_id;
	h->src_window = (uint16_t)w;
	h->key = l->window_key;
	return h;
}

/* Transmit a packet.  0 = taken, -EAGAIN = link busy (nothing changed),
 * -ENOTCONN = dropped and counted. */
static int do_xmit(struct weft_core *c, unsigned int w, const void *pkt, size_t len)
{
	struct weft_wire_hdr copy;
	struct weft_trace t = { .kind = WEFT_TR_PKT_TX, .len = len, .window = w };
	int rc;

	/* Once taken, an embedder's buffer (ops.tx_buf) is no longer ours:
	 * the traces get a copy of the header. */
	if (c->ops.trace) {
		memcpy(&copy, pkt, sizeof(copy));
		t.hdr = &copy;
	}
	rc = c->ops.xmit(c->opaque, pkt, len);
	if (rc == -EAGAIN)
		return -EAGAIN;
	if (rc != 0) {
		weft_drop(c, t.hdr, w, WEFT_R_NO_LINK);
		return -ENOTCONN;
	}
	weft_count(c, WEFT_CNT_TX_PACKETS, 1);
	weft_count(c, WEFT_CNT_TX_BYTES, len);
	weft_trace(c, &t);
	return 0;
}

static bool dest_ok(const struct weft_lmt *l, uint16_t node, bool unicast_only,
		    unsigned int *reason)
{
	if (node <= WEFT_NODE_MAX_UNICAST)
		return true;
	if (node == WEFT_NODE_BROADCAST ||
	    (node >= WEFT_NODE_MCAST_BASE && node < WEFT_NODE_MCAST_BASE + WEFT_NR_MCAST_GROUPS)) {
		if (unicast_only) {
			*reason = WEFT_R_BAD_HEADER;
			return false;
		}
		if (l->config_parm_bcast != 1) {
			*reason = WEFT_R_BCAST_DISABLED;
			return false;
		}
		return true;
	}
	*reason = WEFT_R_BAD_HEADER;
	return false;
}

static bool window_has_send_work(struct weft_core *c, unsigned int w)
{
	const struct weft_lmt *l = weft_lmt(c, w);

	return c->win[w].fop.busy || l->send_fifo_ready_slots > 0 || l->rcxt_count > 0 ||
	       c->win[w].cond_ready;
}

/* The frame at send_current_cnt has been processed: rewrite its header
 * line with DONE and the status, then advance the counters. */
static void frame_done(struct weft_core *c, unsigned int w, struct weft_send_line *line,
		       unsigned int status)
{
	struct weft_lmt *l = weft_lmt(c, w);

	line->hdr.flags |= WEFT_SF_DONE;
	line->hdr.status = (uint16_t)status;
	if (status != WEFT_R_OK && status != WEFT_R_NO_LINK)
		weft_drop(c, NULL, w, status);
	weft_dma_write(c, send_frame_addr(l, l->send_current_cnt), line, sizeof(*line));
	l->send_current_cnt++;
	if (l->send_fifo_ready_slots > 0)
		l->send_fifo_ready_slots--;
	weft_count(c, WEFT_CNT_SEND_FRAMES, 1);
	if (l->send_int_threshold_hi != WEFT_THRESHOLD_OFF0 &&
	    l->send_int_threshold_hi != WEFT_THRESHOLD_OFF1 &&
	    (uint32_t)l->send_current_cnt == l->send_int_threshold_hi)
		weft_event(c, WEFT_EV_SEND_THRESHOLD, w, WEFT_RCXT_NONE, 0, l->send_current_cnt);
	if (!window_has_send_work(c, w))
		weft_set_active(c, w, false);
}

/* Local rCxt of an RDMA request: assigned to w, idle, tid increasing. */
static unsigned int local_rcxt_check(struct weft_core *c, unsigned int w, uint32_t r,
				     uint32_t tid)
{
	unsigned int reason = weft_rcxt_owned(c, w, r);
	const struct weft_rcxt *x;

	if (reason != WEFT_R_OK)
		return reason;
	x = weft_rcxt(c, r);
	if (x->rcxt_state == WEFT_RCXT_SENDING || x->rcxt_state == WEFT_RCXT_SEND_QUEUED)
		return WEFT_R_RCXT_BUSY;
	if (tid <= x->tid)
		return WEFT_R_TID_STALE;
	return WEFT_R_OK;
}

static void fop_end(struct weft_core *c, unsigned int w)
{
	struct weft_fop *f = &c->win[w].fop;
	struct weft_lmt *l = weft_lmt(c, w);

	weft_task_free(c, f->task);
	f->task = WEFT_NO_TASK;
	f->busy = false;
	f->checking = false;
	c->win[w].fop_signal = false;
	l->send_rcxt = WEFT_RCXT_NONE;
	l->send_progress = 0;
}

/* The RDMA write of the fop is over: mark its frame, unless it is a
 * conditional signal, whose frame was marked when it was held. */
static void fop_finish(struct weft_core *c, unsigned int w, unsigned int status)
{
	struct weft_send_line line = c->win[w].fop.line;
	bool signal = c->win[w].fop_signal;

	fop_end(c, w);
	if (!signal)
		frame_done(c, w, &line, status);
	else if (status != WEFT_R_OK)
		weft_drop(c, NULL, w, status);
	else if (!window_has_send_work(c, w))
		weft_set_active(c, w, false);
}

/* One packet of the RDMA write in progress on window w. */
static int fop_chunk(struct weft_core *c, unsigned int w)
{
	struct weft_fop *f = &c->win[w].fop;
	struct weft_lmt *l = weft_lmt(c, w);
	const struct weft_rdma_req *q = &f->line.rdma;
	struct weft_rcxt *x = weft_rcxt(c, q->local_rcxt);
	struct weft_wire_hdr *h;
	uint64_t n = q->length - f->sent;
	unsigned int r;
	int rc;

	if (!x->rcxt_assigned || x->local_window != w || x->tid != q->tid ||
	    x->rcxt_state != WEFT_RCXT_SENDING) {
		/* Cancelled or released while sending. */
		fop_finish(c, w, WEFT_R_CANCELLED);
		return 1;
	}
	if (n > WEFT_MAX_PAYLOAD)
		n = WEFT_MAX_PAYLOAD;
	h = hdr_init(c, w, l, WEFT_PKT_RDMAW);
	r = weft_xlate_read(c, l->window_key, q->local_pvo + f->sent,
			    c->tx + sizeof(*h), n);
	if (r != WEFT_R_OK) {
		/* Local protection violation: window fatal error. */
		uint32_t lr = q->local_rcxt;

		x->rcxt_state = WEFT_RCXT_FREE;
		x->complete_status = (uint8_t)r;
		fop_finish(c, w, r);
		weft_window_fatal(c, w, lr, r);
		return 1;
	}
	if (f->line.hdr.type == WEFT_SF_RDMAW_FIFO)
		h->type = WEFT_PKT_FIFO_DATA;   /* half-RDMA: no completions */
	else
		h->notify = q->notify;
	h->flags = f->sent + n == q->length ? WEFT_WF_LAST : 0;
	h->dst_node = f->line.hdr.dest_node;
	h->dst_window = f->line.hdr.dest_window;
	h->length = (uint32_t)n;
	h->rcxt = q->remote_rcxt;
	h->rcxt_key = q->remote_rcxt_key;
	h->src_rcxt = q->local_rcxt;
	h->src_rcxt_key = x->rcxt_key;
	h->tid = q->tid;
	h->pvo = q->remote_pvo + f->sent;
	h->total_length = q->length;
	h->offset = f->sent;
	h->protocol_cookie = q->protocol_cookie;
	h->user_cookie = q->user_cookie;
	rc = do_xmit(c, w, c->tx, sizeof(*h) + n);
	if (rc == -EAGAIN)
		return -EAGAIN;
	f->sent += n;
	x->data_to_snd_rcv = q->length - f->sent;
	l->send_progress = f->sent;
	if (f->sent == q->length) {
		x->rcxt_state = WEFT_RCXT_FREE;
		fop_finish(c, w, WEFT_R_OK);
	}
	return 1;
}

/* Load the local rCxt of an RDMA pseudo packet with its request: the
 * rCxt holds the data source end for an RDMA write, the data target end
 * for a read. */
static void rcxt_load_req(struct weft_core *c, unsigned int w,
			  const struct weft_send_line *line, uint8_t type,
			  uint8_t state, uint8_t direction)
{
	const struct weft_rdma_req *q = &line->rdma;
	struct weft_rcxt *x = weft_rcxt(c, q->local_rcxt);
	bool source = type == WEFT_PKT_RDMAW || type == WEFT_PKT_FIFO_DATA;

	x->tid = q->tid;
	x->pkt_type = type;
	x->rcxt_direction = direction;
	x->rcxt_state = state;
	x->complete_status = WEFT_R_OK;
	x->notify_on_completion = q->notify;
	x->payload_size = WEFT_MAX_PAYLOAD;
	x->total_rdma_size = q->length;
	x->data_to_snd_rcv = q->length;
	x->lid = line->hdr.dest_node;
	x->remote_window = line->hdr.dest_window;
	x->data_source_rcxt = source ? q->local_rcxt : q->remote_rcxt;
	x->data_target_rcxt = source ? q->remote_rcxt : q->local_rcxt;
	x->remote_rcxt_key = q->remote_rcxt_key;
	x->rdma_protocol_cookie = q->protocol_cookie;
	x->rdma_usr_cookie = q->user_cookie;
	x->local_pvo = q->local_pvo;
	x->remote_pvo = q->remote_pvo;
	x->initiator_node = c->cfg.node_id;
	x->initiator_window = (uint16_t)w;
}

/* Common checks of an RDMA pseudo packet.  Returns a reason. */
static unsigned int rdma_req_check(struct weft_core *c, unsigned int w,
				   const struct weft_send_line *line, bool unicast_only)
{
	const struct weft_rdma_req *q = &line->rdma;
	const struct weft_lmt *l = weft_lmt(c, w);
	unsigned int reason = WEFT_R_OK;

	if (q->length == 0 || q->length > WEFT_RDMA_MAX_LENGTH ||
	    weft_pvo_offset(q->remote_pvo) + q->length > WEFT_PVO_OFFSET_MASK + 1)
		return WEFT_R_LENGTH;
	if (!dest_ok(l, line->hdr.dest_node, unicast_only, &reason))
		return reason;
	return local_rcxt_check(c, w, q->local_rcxt, q->tid);
}

static int rdmaw_start(struct weft_core *c, unsigned int w, unsigned int task,
		       struct weft_send_line *line)
{
	struct weft_fop *f = &c->win[w].fop;
	struct weft_lmt *l = weft_lmt(c, w);
	const struct weft_rdma_req *q = &line->rdma;
	unsigned int reason = rdma_req_check(c, w, line, false);

	if (reason != WEFT_R_OK) {
		frame_done(c, w, line, reason);
		weft_task_free(c, task);
		return 1;
	}
	weft_track_free(c, q->local_rcxt);
	rcxt_load_req(c, w, line, line->hdr.type == WEFT_SF_RDMAW_FIFO ?
		      WEFT_PKT_FIFO_DATA : WEFT_PKT_RDMAW, WEFT_RCXT_SENDING, WEFT_RCXT_DIR_SEND);
	f->busy = true;
	f->task = (uint8_t)task;
	f->line = *line;
	f->sent = 0;
	l->send_rcxt = q->local_rcxt;
	l->send_progress = 0;
	weft_count(c, WEFT_CNT_RDMAW_STARTED, 1);
	return fop_chunk(c, w);
}

/* Send the request packet of an RDMA read or third-party read.  Returns
 * -EAGAIN (link busy, nothing changed) or the frame's status. */
static int rdmar_request(struct weft_core *c, unsigned int w, const struct weft_send_line *line,
			 bool tp)
{
	struct weft_lmt *l = weft_lmt(c, w);
	const struct weft_rdma_req *q = &line->rdma;
	struct weft_rcxt *x = weft_rcxt(c, q->local_rcxt);
	struct weft_wire_hdr *h;
	int rc;

	h = hdr_init(c, w, l, tp ? WEFT_PKT_TP_RDMAR_REQ : WEFT_PKT_RDMAR_REQ);
	h->notify = q->notify;
	h->dst_node = line->hdr.dest_node;
	h->dst_window = line->hdr.dest_window;
	h->rcxt = q->remote_rcxt;
	h->rcxt_key = q->remote_rcxt_key;
	h->src_rcxt = q->local_rcxt;
	h->src_rcxt_key = x->rcxt_key;
	h->tid = q->tid;
	h->pvo = q->remote_pvo;
	h->aux_pvo = q->local_pvo;
	h->total_length = q->length;
	h->protocol_cookie = q->protocol_cookie;
	h->user_cookie = q->user_cookie;
	if (tp) {
		h->ctl_node = q->tp_node;
		h->ctl_window = q->tp_window;
		h->ctl_rcxt = q->tp_rcxt;
		h->ctl_rcxt_key = q->tp_rcxt_key;
	}
	rc = do_xmit(c, w, c->tx, sizeof(*h));
	if (rc == -EAGAIN)
		return -EAGAIN;
	/* A third-party read brings no data here: the rCxt stays FREE. */
	if (tp)
		rcxt_load_req(c, w, line, WEFT_PKT_TP_RDMAR_REQ, WEFT_RCXT_FREE,
			      WEFT_RCXT_DIR_SEND);
	else
		rcxt_load_req(c, w, line, WEFT_PKT_RDMAR_REQ, WEFT_RCXT_RECEIVING,
			      WEFT_RCXT_DIR_RECV);
	weft_count(c, WEFT_CNT_RDMAR_STARTED, 1);
	return rc == 0 ? WEFT_R_OK : WEFT_R_NO_LINK;
}

/* Third-party read: one request packet (no local buffer to check). */
static int tp_rdmar_send(struct weft_core *c, unsigned int w, struct weft_send_line *line)
{
	unsigned int reason = rdma_req_check(c, w, line, true);
	int rc;

	if (reason == WEFT_R_OK && line->rdma.tp_node > WEFT_NODE_MAX_UNICAST)
		reason = WEFT_R_BAD_HEADER;
	if (reason != WEFT_R_OK) {
		frame_done(c, w, line, reason);
		return 1;
	}
	rc = rdmar_request(c, w, line, true);
	if (rc == -EAGAIN)
		return -EAGAIN;
	frame_done(c, w, line, (unsigned int)rc);
	return 1;
}

/*
 * One step of an RDMA read: check at most WEFT_CHECK_PAGES_PER_STEP pages
 * of the destination buffer (seed 1.5.18: a bad page is a window fatal
 * error with its reason, and no request goes out), or, once every page
 * passed, send the request.  The task is kept across polls, so every poll
 * does bounded work whatever the buffer's size.
 */
static int rdmar_step(struct weft_core *c, unsigned int w)
{
	struct weft_fop *f = &c->win[w].fop;
	struct weft_lmt *l = weft_lmt(c, w);
	const struct weft_rdma_req *q = &f->line.rdma;
	struct weft_send_line line;
	unsigned int reason;
	int rc;

	if (f->sent < q->length) {
		reason = weft_xlate_check_step(c, l->window_key, q->local_pvo, q->length,
					       &f->sent, WEFT_CHECK_PAGES_PER_STEP);
		if (reason != WEFT_R_OK) {
			line = f->line;
			weft_rcxt(c, line.rdma.local_rcxt)->complete_status = (uint8_t)reason;
			fop_end(c, w);
			frame_done(c, w, &line, reason);
			weft_window_fatal(c, w, line.rdma.local_rcxt, reason);
			return 1;
		}
		if (f->sent < q->length)
			return 1;
	}
	/* The rCxt may have been released or reused while the pages were
	 * checked: the request checks run again. */
	reason = rdma_req_check(c, w, &f->line, true);
	if (reason == WEFT_R_OK && !weft_track_start(c, q->local_rcxt, q->tid, q->length))
		reason = WEFT_R_LENGTH;
	if (reason == WEFT_R_OK) {
		rc = rdmar_request(c, w, &f->line, false);
		if (rc == -EAGAIN)
			return -EAGAIN;
		reason = (unsigned int)rc;
	}
	line = f->line;
	fop_end(c, w);
	frame_done(c, w, &line, reason);
	return 1;
}

static int rdmar_start(struct weft_core *c, unsigned int w, unsigned int task,
		       struct weft_send_line *line)
{
	struct weft_fop *f = &c->win[w].fop;
	unsigned int reason = rdma_req_check(c, w, line, true);

	if (reason != WEFT_R_OK) {
		frame_done(c, w, line, reason);
		weft_task_free(c, task);
		return 1;
	}
	f->busy = true;
	f->checking = true;
	f->task = (uint8_t)task;
	f->line = *line;
	f->sent = 0;
	return rdmar_step(c, w);
}

static int fifo_send(struct weft_core *c, unsigned int w, struct weft_send_line *line)
{
	struct weft_lmt *l = weft_lmt(c, w);
	unsigned int reason = WEFT_R_OK;
	struct weft_wire_hdr *h;
	uint16_t len = line->hdr.length;
	int rc;

	if (len > WEFT_MAX_PAYLOAD) {
		frame_done(c, w, line, WEFT_R_LENGTH);
		return 1;
	}
	if (!dest_ok(l, line->hdr.dest_node, false, &reason)) {
		frame_done(c, w, line, reason);
		return 1;
	}
	h = hdr_init(c, w, l, WEFT_PKT_FIFO);
	h->dst_node = line->hdr.dest_node;
	h->dst_window = line->hdr.dest_window;
	h->length = len;
	if (weft_dma_read(c, send_frame_addr(l, l->send_current_cnt) + WEFT_FRAME_HDR_SIZE,
			  c->tx + sizeof(*h), len) != 0) {
		weft_window_fatal(c, w, WEFT_RCXT_NONE, WEFT_R_DMA_ERROR);
		return 1;
	}
	rc = do_xmit(c, w, c->tx, sizeof(*h) + len);
	if (rc == -EAGAIN)
		return -EAGAIN;
	if (rc == 0)
		weft_count(c, WEFT_CNT_TX_FIFO_PACKETS, 1);
	frame_done(c, w, line, rc == 0 ? WEFT_R_OK : WEFT_R_NO_LINK);
	return 1;
}

/* Next entry of window w's send FIFO. */
static int serve_fifo(struct weft_core *c, unsigned int w)
{
	struct weft_lmt *l = weft_lmt(c, w);
	struct weft_send_line line;
	unsigned int task;
	int rc;

	if (c->win[w].fop.busy)
		return c->win[w].fop.checking ? rdmar_step(c, w) : fop_chunk(c, w);
	task = weft_task_alloc(c, WEFT_TASK_TX, w);
	if (task == WEFT_NO_TASK)
		return TX_NO_TASK;
	if (weft_cond_take(c, w, &line)) {
		/* A held conditional signal goes before the next frame. */
		unsigned int reason = rdma_req_check(c, w, &line, false);

		if (reason != WEFT_R_OK) {
			weft_drop(c, NULL, w, reason);
			weft_task_free(c, task);
			return 1;
		}
		c->win[w].fop_signal = true;
		return rdmaw_start(c, w, task, &line);
	}
	if (l->send_fifo_ready_slots == 0) {
		weft_task_free(c, task);
		return 0;
	}
	if (weft_dma_read(c, send_frame_addr(l, l->send_current_cnt), &line, sizeof(line)) != 0) {
		weft_task_free(c, task);
		weft_window_fatal(c, w, WEFT_RCXT_NONE, WEFT_R_DMA_ERROR);
		return 1;
	}
	switch (line.hdr.type) {
	case WEFT_SF_FIFO:
		rc = fifo_send(c, w, &line);
		break;
	case WEFT_SF_RDMAW:
		if (weft_cond_hold(c, w, &line)) {
			rc = 1;
			break;
		}
		return rdmaw_start(c, w, task, &line);
	case WEFT_SF_RDMAW_FIFO:
		return rdmaw_start(c, w, task, &line);
	case WEFT_SF_PUT:
		rc = weft_half_put(c, w, &line);
		break;
	case WEFT_SF_RDMAR_FIFO:
	case WEFT_SF_RDMAR_PUT:
		rc = weft_half_read(c, w, &line);
		break;
	case WEFT_SF_COND:
	case WEFT_SF_COND_CTL:
		rc = weft_cond_frame(c, w, &line);
		break;
	case WEFT_SF_RDMAR:
		return rdmar_start(c, w, task, &line);
	case WEFT_SF_TP_RDMAR:
		rc = tp_rdmar_send(c, w, &line);
		break;
	default:
		frame_done(c, w, &line, WEFT_R_BAD_TYPE);
		rc = 1;
		break;
	}
	weft_task_free(c, task);
	return rc;
}

static void rq_reset(struct weft_core *c, unsigned int w)
{
	struct weft_lmt *l = weft_lmt(c, w);
	uint32_t r = l->rcxt_head, n = 0;

	while (r < c->cfg.nr_rcxt && n < l->rcxt_count && n < c->cfg.nr_rcxt) {
		struct weft_rcxt *x = weft_rcxt(c, r);

		if (x->local_window != w || (x->rcxt_state != WEFT_RCXT_SEND_QUEUED &&
					     x->rcxt_state != WEFT_RCXT_SENDING))
			break;
		x->rcxt_state = WEFT_RCXT_FREE;
		r = x->next;
		x->next = WEFT_RCXT_NONE;
		n++;
	}
	l->rcxt_head = l->rcxt_tail = WEFT_RCXT_NONE;
	l->rcxt_count = 0;
}

static void rq_pop(struct weft_core *c, unsigned int w)
{
	struct weft_lmt *l = weft_lmt(c, w);
	struct weft_rcxt *x = weft_rcxt(c, l->rcxt_head);

	l->rcxt_head = x->next;
	x->next = WEFT_RCXT_NONE;
	x->rcxt_state = WEFT_RCXT_FREE;
	l->rcxt_count--;
	if (l->rcxt_count == 0 || l->rcxt_head >= c->cfg.nr_rcxt) {
		l->rcxt_head = l->rcxt_tail = WEFT_RCXT_NONE;
		l->rcxt_count = 0;
	}
	weft_task_free(c, c->win[w].rop_task);
	c->win[w].rop_task = WEFT_NO_TASK;
}

/* One payload packet of the RDMA read being served from the queue head. */
static int serve_rq(struct weft_core *c, unsigned int w)
{
	struct weft_win *win = &c->win[w];
	struct weft_lmt *l = weft_lmt(c, w);
	uint32_t r = l->rcxt_head;
	struct weft_rcxt *x;
	struct weft_wire_hdr *h;
	uint64_t sent, n;
	unsigned int reason;
	bool tp;
	int rc;

	if (r >= c->cfg.nr_rcxt) {
		weft_guest_error(c, "window %u: RDMA send queue head %u invalid", w, r);
		rq_reset(c, w);
		return 1;
	}
	x = weft_rcxt(c, r);
	if (!x->rcxt_assigned || x->local_window != w ||
	    (x->rcxt_state != WEFT_RCXT_SEND_QUEUED && x->rcxt_state != WEFT_RCXT_SENDING) ||
	    x->data_to_snd_rcv == 0 || x->data_to_snd_rcv > x->total_rdma_size ||
	    x->total_rdma_size > WEFT_RDMA_MAX_LENGTH) {
		weft_guest_error(c, "window %u: rCxt %u on the RDMA send queue is inconsistent",
				 w, r);
		rq_reset(c, w);
		return 1;
	}
	if (win->rop_task == WEFT_NO_TASK) {
		unsigned int task = weft_task_alloc(c, WEFT_TASK_TX, w);

		if (task == WEFT_NO_TASK)
			return TX_NO_TASK;
		win->rop_task = (uint8_t)task;
	}
	x->rcxt_state = WEFT_RCXT_SENDING;
	tp = x->pkt_type == WEFT_PKT_TP_RDMAR_REQ;
	sent = x->total_rdma_size - x->data_to_snd_rcv;
	n = x->data_to_snd_rcv < WEFT_MAX_PAYLOAD ? x->data_to_snd_rcv : WEFT_MAX_PAYLOAD;
	h = hdr_init(c, w, l, tp ? WEFT_PKT_TP_RDMAW :
		     x->pkt_type == WEFT_PKT_RDMAR_FIFO_REQ ? WEFT_PKT_FIFO_DATA : WEFT_PKT_RDMAW);
	reason = weft_xlate_read(c, l->window_key, x->local_pvo + sent,
				 c->tx + sizeof(*h), n);
	if (reason != WEFT_R_OK) {
		/* The request came from the wire: discard and notify. */
		x->complete_status = (uint8_t)reason;
		weft_drop(c, NULL, w, reason);
		rq_pop(c, w);
		weft_event(c, WEFT_EV_PROTECTION, w, r, reason, x->tid);
		return 1;
	}
	h->notify = x->notify_on_completion;
	h->flags = (tp ? 0 : WEFT_WF_READ_RESP) | (n == x->data_to_snd_rcv ? WEFT_WF_LAST : 0);
	h->dst_node = x->lid;
	h->dst_window = x->remote_window;
	h->length = (uint32_t)n;
	h->rcxt = x->data_target_rcxt;
	h->rcxt_key = x->remote_rcxt_key;
	h->src_rcxt = r;
	h->src_rcxt_key = x->rcxt_key;
	h->tid = x->tid;
	h->pvo = x->remote_pvo + sent;
	h->total_length = x->total_rdma_size;
	h->offset = sent;
	h->protocol_cookie = x->rdma_protocol_cookie;
	h->user_cookie = x->rdma_usr_cookie;
	h->ctl_node = x->ctl_node;
	h->ctl_window = x->ctl_window;
	h->ctl_rcxt = x->ctl_rcxt;
	h->ctl_rcxt_key = x->ctl_rcxt_key;
	rc = do_xmit(c, w, c->tx, sizeof(*h) + n);
	if (rc == -EAGAIN)
		return -EAGAIN;
	x->data_to_snd_rcv -= n;
	if (x->data_to_snd_rcv == 0) {
		weft_count(c, WEFT_CNT_RDMAR_SERVED, 1);
		rq_pop(c, w);
		if (!window_has_send_work(c, w))
			weft_set_active(c, w, false);
	}
	return 1;
}

/* One step for window w: 1 done, 0 nothing to do, -EAGAIN, TX_NO_TASK. */
static int serve_window(struct weft_core *c, unsigned int w)
{
	struct weft_win *win = &c->win[w];
	struct weft_lmt *l = weft_lmt(c, w);
	bool fifo, rq;
	int rc;

	if (!weft_window_valid(c, w) || weft_lmt_check(c, w) != WEFT_R_OK) {
		weft_tx_window_stop(c, w);
		return 0;
	}
	if (l->send_fifo_ready_slots > l->send_mask + 1) {
		weft_guest_error(c, "window %u: send_fifo_ready_slots %u exceeds the FIFO",
				 w, l->send_fifo_ready_slots);
		l->send_fifo_ready_slots = l->send_mask + 1;
	}
	fifo = win->fop.busy || l->send_fifo_ready_slots > 0 || win->cond_ready;
	rq = l->rcxt_count > 0;
	if (!fifo && !rq) {
		weft_set_active(c, w, false);
		return 0;
	}
	if (fifo && rq)
		win->rop_turn = !win->rop_turn;
	else
		win->rop_turn = rq;
	rc = win->rop_turn ? serve_rq(c, w) : serve_fifo(c, w);
	if (rc == TX_NO_TASK && fifo && rq) {
		win->rop_turn = !win->rop_turn;
		rc = win->rop_turn ? serve_rq(c, w) : serve_fifo(c, w);
	}
	return rc;
}

/* The first active window in [from, end), or end: a scan of the
 * active-window vector a word at a time. */
static unsigned int next_active(const struct weft_core *c, unsigned int from,
				unsigned int end)
{
	while (from < end) {
		uint64_t bits = c->active[from >> 6] >> (from & 63);

		if (bits) {
			unsigned int w = from + (unsigned int)__builtin_ctzll(bits);

			return w < end ? w : end;
		}
		from = (from | 63) + 1;
	}
	return end;
}

int weft_tx_one(struct weft_core *c)
{
	unsigned int n = c->cfg.nr_windows, start, pass;
	int rc;

	if (c->ctlq_count > 0) {
		struct weft_pkt *p = &c->ctlq[c->ctlq_head];
		const struct weft_wire_hdr *h = (const struct weft_wire_hdr *)p->data;

		rc = do_xmit(c, h->src_window, p->data, p->len);
		if (rc == -EAGAIN)
			return -EAGAIN;
		if (rc == 0)
			weft_count(c, WEFT_CNT_TX_COMPLETIONS, 1);
		c->ctlq_head = (c->ctlq_head + 1) % WEFT_CTLQ_LEN;
		c->ctlq_count--;
		return 1;
	}
	if (!c->active[0] && !c->active[1])
		return 0;
	if (c->tx_have_cur && c->tx_cur < n && weft_is_active(c, c->tx_cur)) {
		struct weft_lmt *l = weft_lmt(c, c->tx_cur);

		if (l->send_quanta_value > l->send_quanta_size)
			l->send_quanta_value = l->send_quanta_size;
		if (l->send_quanta_value > 0) {
			rc = serve_window(c, c->tx_cur);
			if (rc == -EAGAIN)
				return rc;
			if (rc == 1) {
				if (l->send_quanta_value > 0)
					l->send_quanta_value--;
				return 1;
			}
		}
	}
	/* The active windows after the current one, in index order, then
	 * those up to and including it. */
	start = c->tx_have_cur && c->tx_cur < n ? c->tx_cur : n - 1;
	for (pass = 0; pass < 2; pass++) {
		unsigned int end = pass ? start + 1 : n, w;

		for (w = next_active(c, pass ? 0 : start + 1, end); w < end;
		     w = next_active(c, w + 1, end)) {
			struct weft_lmt *l = weft_lmt(c, w);

			c->tx_cur = w;
			c->tx_have_cur = true;
			l->send_quanta_value = l->send_quanta_size;
			rc = serve_window(c, w);
			if (rc == -EAGAIN)
				return rc;
			if (rc == 1) {
				if (l->send_quanta_value > 0)
					l->send_quanta_value--;
				return 1;
			}
		}
	}
	return 0;
}

bool weft_tx_has_work(struct weft_core *c)
{
	return c->ctlq_count > 0 || c->active[0] || c->active[1];
}

void weft_tx_reap(struct weft_core *c)
{
	unsigned int w;

	for (w = 0; w < c->cfg.nr_windows; w++) {
		struct weft_win *win = &c->win[w];

		if ((win->fop.busy || win->rop_task != WEFT_NO_TASK) && !weft_window_valid(c, w))
			weft_tx_window_stop(c, w);
	}
}

bool weft_tx_ctl(struct weft_core *c, unsigned int w, struct weft_wire_hdr *h)
{
	struct weft_pkt *p;
	const struct weft_lmt *l = weft_lmt(c, w);

	if (c->ctlq_count >= WEFT_CTLQ_LEN)
		return false;
	h->version = WEFT_WIRE_VERSION;
	h->src_node = c->cfg.node_id;
	h->src_window = (uint16_t)w;
	h->key = l->window_key;
	h->length = 0;
	p = &c->ctlq[(c->ctlq_head + c->ctlq_count) % WEFT_CTLQ_LEN];
	memcpy(p->data, h, sizeof(*h));
	p->len = sizeof(*h);
	c->ctlq_count++;
	if (c->ops.kick)
		c->ops.kick(c->opaque);
	return true;
}

void weft_tx_window_stop(struct weft_core *c, unsigned int w)
{
	struct weft_win *win = &c->win[w];

	if (w >= c->cfg.nr_windows)
		return;
	weft_set_active(c, w, false);
	weft_cond_reset(c, w);
	if (win->fop.busy) {
		uint32_t r = win->fop.line.rdma.local_rcxt;
		struct weft_rcxt *x = weft_rcxt(c, r);

		if (x->rcxt_assigned && x->local_window == w &&
		    x->rcxt_state == WEFT_RCXT_SENDING) {
			x->rcxt_state = WEFT_RCXT_FREE;
			x->complete_status = WEFT_R_WINDOW_CLOSED;
		}
		fop_end(c, w);
	}
	if (win->rop_task != WEFT_NO_TASK) {
		weft_task_free(c, win->rop_task);
		win->rop_task = WEFT_NO_TASK;
	}
	rq_reset(c, w);
}

void weft_tx_rcxt_unlink(struct weft_core *c, unsigned int w, uint32_t r)
{
	struct weft_lmt *l;
	uint32_t cur, prev = WEFT_RCXT_NONE, n = 0;

	if (w >= c->cfg.nr_windows)
		return;
	l = weft_lmt(c, w);
	cur = l->rcxt_head;
	while (cur < c->cfg.nr_rcxt && n < l->rcxt_count && n < c->cfg.nr_rcxt) {
		struct weft_rcxt *x = weft_rcxt(c, cur);

		if (cur == r) {
			if (prev == WEFT_RCXT_NONE) {
				l->rcxt_head = x->next;
				if (c->win[w].rop_task != WEFT_NO_TASK) {
					weft_task_free(c, c->win[w].rop_task);
					c->win[w].rop_task = WEFT_NO_TASK;
				}
			} else {
				weft_rcxt(c, prev)->next = x->next;
			}
			if (l->rcxt_tail == r)
				l->rcxt_tail = prev;
			x->next = WEFT_RCXT_NONE;
			l->rcxt_count--;
			if (l->rcxt_count == 0)
				l->rcxt_head = l->rcxt_tail = WEFT_RCXT_NONE;
			return;
		}
		prev = cur;
		cur = x->next;
		n++;
	}
}

void weft_tx_frame_done(struct weft_core *c, unsigned int w, struct weft_send_line *line,
			unsigned int status)
{
	frame_done(c, w, line, status);
}

uint64_t weft_tx_frame_addr(struct weft_core *c, unsigned int w)
{
	const struct weft_lmt *l = weft_lmt(c, w);

	return send_frame_addr(l, l->send_current_cnt);
}

struct weft_wire_hdr *weft_tx_hdr(struct weft_core *c, unsigned int w, uint8_t type)
{
	return hdr_init(c, w, weft_lmt(c, w), type);
}

int weft_tx_xmit(struct weft_core *c, unsigned int w, size_t len)
{
	return do_xmit(c, w, c->tx, len);
}

unsigned int weft_tx_req_check(struct weft_core *c, unsigned int w,
			       const struct weft_send_line *line, bool unicast_only)
{
	return rdma_req_check(c, w, line, unicast_only);
}

void weft_tx_load_req(struct weft_core *c, unsigned int w, const struct weft_send_line *line,
		      uint8_t type, uint8_t state, uint8_t direction)
{
	rcxt_load_req(c, w, line, type, state, direction);
}
