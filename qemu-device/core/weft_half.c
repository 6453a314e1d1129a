/* SPDX-License-Identifier: MIT */
/*
 * Weft adapter model: half-RDMA / half-FIFO operations (seed 1.5.7,
 * hw-spec 5.3).  One end of the transfer is an RDMA (the adapter moves
 * the bytes through the TCEs), the other end is a FIFO that software
 * fills or drains:
 *
 *   RDMAW_FIFO  write, RDMA at the sender: FIFO_DATA packets land in the
 *               target's receive FIFO (the send side is the RDMAW engine
 *               of weft_send.c).
 *   PUT         write, RDMA at the receiver: the payload of a send frame
 *               goes out as an RDMAW packet and is placed at a PVO.
 *   RDMAR_FIFO  read, RDMA at the data source: the data source sends
 *               FIFO_DATA packets (its RDMA send queue serves them) into
 *               this window's receive FIFO.
 *   RDMAR_PUT   read, RDMA at the destination: the request lands in the
 *               data source's receive FIFO; its program answers with PUT
 *               frames (READ_RESP) that are placed here.
 *
 * Every FIFO_DATA entry carries its offset and the total, because the
 * packets of one transfer can arrive in any order.
 */
#include <errno.h>
#include <string.h>

#include "weft/names.h"
#include "weft_core_int.h"

/* Payload length of the chunk at offset of a total-byte transfer: the
 * RDMA chunking rule (hw-spec 6), or 0 when offset breaks it. */
static uint64_t chunk_len(uint64_t total, uint64_t offset)
{
	uint64_t n;

	if (total == 0 || total > WEFT_RDMA_MAX_LENGTH || offset >= total ||
	    offset % WEFT_MAX_PAYLOAD)
		return 0;
	n = total - offset;
	return n > WEFT_MAX_PAYLOAD ? WEFT_MAX_PAYLOAD : n;
}

/* The local rCxt of a PUT frame: the first frame (offset 0) starts the
 * operation on it like an RDMA request; later frames must name the same
 * operation.  No rCxt (WEFT_RCXT_NONE) means no completion comes back. */
static unsigned int put_rcxt(struct weft_core *c, unsigned int w,
			     const struct weft_send_line *line, uint8_t type)
{
	const struct weft_rdma_req *q = &line->rdma;
	const struct weft_rcxt *x;
	unsigned int reason;

	if (q->local_rcxt == WEFT_RCXT_NONE)
		return WEFT_R_OK;
	if (q->offset == 0)
		return weft_tx_req_check(c, w, line, true);
	reason = weft_rcxt_owned(c, w, q->local_rcxt);
	if (reason != WEFT_R_OK)
		return reason;
	x = weft_rcxt(c, q->local_rcxt);
	return x->tid == q->tid && x->pkt_type == type ? WEFT_R_OK : WEFT_R_TID_STALE;
}

int weft_half_put(struct weft_core *c, unsigned int w, struct weft_send_line *line)
{
	const struct weft_rdma_req *q = &line->rdma;
	bool resp = q->xflags & WEFT_RQ_READ_RESP;
	uint8_t type = resp ? WEFT_PKT_RDMAR_REQ : WEFT_PKT_RDMAW;
	uint8_t back = resp ? WEFT_NOTIFY_TARGET : WEFT_NOTIFY_SOURCE;
	uint16_t len = line->hdr.length;
	struct weft_wire_hdr *h;
	unsigned int reason = WEFT_R_OK;
	uint16_t key = 0;
	int rc;

	if (len == 0 || len != chunk_len(q->length, q->offset) ||
	    weft_pvo_offset(q->remote_pvo) + q->length > WEFT_PVO_OFFSET_MASK + 1)
		reason = WEFT_R_LENGTH;
	else if (line->hdr.dest_node > WEFT_NODE_MAX_UNICAST || (q->xflags & ~WEFT_RQ_READ_RESP))
		reason = WEFT_R_BAD_HEADER;
	else
		reason = put_rcxt(c, w, line, type);
	if (reason != WEFT_R_OK) {
		weft_tx_frame_done(c, w, line, reason);
		return 1;
	}
	h = weft_tx_hdr(c, w, WEFT_PKT_RDMAW);
	if (weft_dma_read(c, weft_tx_frame_addr(c, w) + WEFT_FRAME_HDR_SIZE,
			  c->tx + sizeof(*h), len) != 0) {
		weft_window_fatal(c, w, WEFT_RCXT_NONE, WEFT_R_DMA_ERROR);
		return 1;
	}
	if (q->local_rcxt != WEFT_RCXT_NONE)
		key = weft_rcxt(c, q->local_rcxt)->rcxt_key;
	h->notify = q->local_rcxt == WEFT_RCXT_NONE ? q->notify & ~back : q->notify;
	h->flags = WEFT_WF_HALF | (resp ? WEFT_WF_READ_RESP : 0) |
		   (q->offset + len == q->length ? WEFT_WF_LAST : 0);
	h->dst_node = line->hdr.dest_node;
	h->dst_window = line->hdr.dest_window;
	h->length = len;
	h->rcxt = q->remote_rcxt;
	h->rcxt_key = q->remote_rcxt_key;
	h->src_rcxt = q->local_rcxt;
	h->src_rcxt_key = key;
	h->tid = q->tid;
	h->pvo = q->remote_pvo + q->offset;
	h->total_length = q->length;
	h->offset = q->offset;
	h->protocol_cookie = q->protocol_cookie;
	h->user_cookie = q->user_cookie;
	rc = weft_tx_xmit(c, w, sizeof(*h) + len);
	if (rc == -EAGAIN)
		return -EAGAIN;
	if (q->local_rcxt != WEFT_RCXT_NONE && q->offset == 0) {
		weft_track_free(c, q->local_rcxt);
		weft_tx_load_req(c, w, line, type, WEFT_RCXT_FREE, WEFT_RCXT_DIR_SEND);
		weft_count(c, WEFT_CNT_RDMAW_STARTED, 1);
	}
	weft_tx_frame_done(c, w, line, rc == 0 ? WEFT_R_OK : WEFT_R_NO_LINK);
	return 1;
}

int weft_half_read(struct weft_core *c, unsigned int w, struct weft_send_line *line)
{
	const struct weft_rdma_req *q = &line->rdma;
	bool fifo = line->hdr.type == WEFT_SF_RDMAR_FIFO;
	struct weft_lmt *l = weft_lmt(c, w);
	unsigned int reason = weft_tx_req_check(c, w, line, true);
	struct weft_wire_hdr *h;
	int rc;

	if (reason == WEFT_R_OK && !fifo) {
		/* Data is placed here: the destination is checked at set-up,
		 * and a bad one is a window fatal error as for RDMAR. */
		reason = weft_xlate_check(c, l->window_key, q->local_pvo, q->length);
		if (reason != WEFT_R_OK) {
			weft_rcxt(c, q->local_rcxt)->complete_status = (uint8_t)reason;
			weft_tx_frame_done(c, w, line, reason);
			weft_window_fatal(c, w, q->local_rcxt, reason);
			return 1;
		}
	}
	if (reason == WEFT_R_OK && !weft_track_start(c, q->local_rcxt, q->tid, q->length))
		reason = WEFT_R_LENGTH;
	if (reason != WEFT_R_OK) {
		weft_tx_frame_done(c, w, line, reason);
		return 1;
	}
	h = weft_tx_hdr(c, w, fifo ? WEFT_PKT_RDMAR_FIFO_REQ : WEFT_PKT_RDMAR_PUT_REQ);
	/* Into a FIFO there is only the local completion entry. */
	h->notify = fifo ? q->notify & WEFT_NOTIFY_SOURCE : q->notify;
	h->dst_node = line->hdr.dest_node;
	h->dst_window = line->hdr.dest_window;
	h->rcxt = q->remote_rcxt;
	h->rcxt_key = q->remote_rcxt_key;
	h->src_rcxt = q->local_rcxt;
	h->src_rcxt_key = weft_rcxt(c, q->local_rcxt)->rcxt_key;
	h->tid = q->tid;
	h->pvo = q->remote_pvo;
	h->aux_pvo = q->local_pvo;
	h->total_length = q->length;
	h->protocol_cookie = q->protocol_cookie;
	h->user_cookie = q->user_cookie;
	rc = weft_tx_xmit(c, w, sizeof(*h));
	if (rc == -EAGAIN) {
		weft_track_free(c, q->local_rcxt);
		return -EAGAIN;
	}
	weft_tx_load_req(c, w, line, h->type, WEFT_RCXT_RECEIVING, WEFT_RCXT_DIR_RECV);
	weft_rcxt(c, q->local_rcxt)->notify_on_completion = h->notify;
	weft_count(c, WEFT_CNT_RDMAR_STARTED, 1);
	weft_tx_frame_done(c, w, line, rc == 0 ? WEFT_R_OK : WEFT_R_NO_LINK);
	return 1;
}

/* Header of a receive entry for packet h. */
static void entry_init(struct weft_recv_hdr *rh, const struct weft_wire_hdr *h, uint8_t type)
{
	memset(rh, 0, sizeof(*rh));
	rh->type = type;
	rh->flags = WEFT_RF_VALID;
	rh->src_node = h->src_node;
	rh->src_window = h->src_window;
	rh->tid = h->tid;
	rh->total_length = h->total_length;
	rh->protocol_cookie = h->protocol_cookie;
	rh->user_cookie = h->user_cookie;
}

/* The read into the FIFO on rCxt r has all its data: end it, and write
 * the local completion entry when the request asked for one. */
static void fifo_read_done(struct weft_core *c, unsigned int w, uint32_t r,
			   const struct weft_wire_hdr *h)
{
	struct weft_rcxt *x = weft_rcxt(c, r);
	struct weft_recv_hdr rh;

	x->rcxt_state = WEFT_RCXT_FREE;
	x->complete_status = WEFT_R_OK;
	weft_track_free(c, r);
	weft_count(c, WEFT_CNT_RDMAR_DONE, 1);
	if (!(x->notify_on_completion & WEFT_NOTIFY_SOURCE))
		return;
	entry_init(&rh, h, WEFT_RF_COMPLETION);
	rh.flags |= WEFT_RF_AS_SOURCE | WEFT_RF_READ;
	rh.rcxt = r;
	rh.tid = x->tid;
	rh.total_length = x->total_rdma_size;
	rh.protocol_cookie = x->rdma_protocol_cookie;
	rh.user_cookie = x->rdma_usr_cookie;
	if (weft_rx_fifo_deliver(c, w, &rh, NULL, 0) == WEFT_R_OK)
		weft_count(c, WEFT_CNT_RX_COMPLETIONS, 1);
}

/* A read response for the FIFO: it must continue the read that rCxt
 * h->rcxt holds, and each chunk is taken once.  Returns a reason. */
static unsigned int fifo_read_check(struct weft_core *c, unsigned int w,
				    const struct weft_wire_hdr *h)
{
	unsigned int reason = weft_rx_rcxt_check(c, w, h->rcxt, h->rcxt_key);
	const struct weft_rcxt *x;
	const struct weft_track *t;
	uint64_t chunk = h->offset / WEFT_MAX_PAYLOAD;

	if (reason != WEFT_R_OK)
		return reason;
	x = weft_rcxt(c, h->rcxt);
	if (x->tid != h->tid || x->rcxt_state != WEFT_RCXT_RECEIVING ||
	    x->pkt_type != WEFT_PKT_RDMAR_FIFO_REQ)
		return WEFT_R_TID_STALE;
	t = &c->track[h->rcxt];
	if (!t->bits || t->tid != h->tid || x->total_rdma_size != h->total_length ||
	    x->data_to_snd_rcv < h->length)
		return WEFT_R_LENGTH;
	if (t->bits[chunk / 64] & (1ull << (chunk % 64)))
		return WEFT_R_DUPLICATE;
	return WEFT_R_OK;
}

static void rx_fifo_data(struct weft_core *c, unsigned int w, const struct weft_wire_hdr *h,
			 const uint8_t *payload, size_t len)
{
	bool read = h->flags & WEFT_WF_READ_RESP;
	struct weft_recv_hdr rh;
	unsigned int reason = WEFT_R_OK;
	uint64_t chunk = h->offset / WEFT_MAX_PAYLOAD;

	if (h->length == 0 || h->length != chunk_len(h->total_length, h->offset))
		reason = WEFT_R_LENGTH;
	else if (read)
		reason = fifo_read_check(c, w, h);
	if (reason != WEFT_R_OK) {
		weft_drop(c, h, w, reason);
		return;
	}
	entry_init(&rh, h, WEFT_RF_DATA);
	rh.flags |= (read ? WEFT_RF_READ : 0) |
		    (h->dst_node == WEFT_NODE_BROADCAST ? WEFT_RF_BROADCAST : 0) |
		    (h->offset + h->length == h->total_length ? WEFT_RF_LAST : 0);
	rh.length = (uint16_t)h->length;
	rh.rcxt = read ? h->rcxt : h->src_rcxt;
	rh.offset = h->offset;
	rh.pvo = h->pvo - h->offset;
	if (weft_rx_fifo_deliver(c, w, &rh, payload, h->length) != WEFT_R_OK)
		return;         /* FIFO full: counted there; the chunk stays missing */
	weft_rx_accept(c, h, w, len);
	weft_count(c, WEFT_CNT_RX_FIFO_PACKETS, 1);
	if (read) {
		struct weft_rcxt *x = weft_rcxt(c, h->rcxt);

		c->track[h->rcxt].bits[chunk / 64] |= 1ull << (chunk % 64);
		x->data_to_snd_rcv -= h->length;
		if (x->data_to_snd_rcv == 0)
			fifo_read_done(c, w, h->rcxt, h);
	}
}

/* A read request for this window's program: it becomes a receive entry
 * that names the requester's rCxt, tid and destination PVO. */
static void rx_put_req(struct weft_core *c, unsigned int w, const struct weft_wire_hdr *h,
		       size_t len)
{
	struct weft_recv_hdr rh;

	if (h->length != 0) {
		weft_drop(c, h, w, WEFT_R_BAD_HEADER);
		return;
	}
	if (h->total_length == 0 || h->total_length > WEFT_RDMA_MAX_LENGTH) {
		weft_drop(c, h, w, WEFT_R_LENGTH);
		return;
	}
	entry_init(&rh, h, WEFT_RF_READ_REQ);
	rh.rcxt = h->src_rcxt;
	rh.rcxt_key = h->src_rcxt_key;
	rh.pvo = h->aux_pvo;
	rh.src_pvo = h->pvo;
	if (weft_rx_fifo_deliver(c, w, &rh, NULL, 0) == WEFT_R_OK) {
		weft_rx_accept(c, h, w, len);
		weft_count(c, WEFT_CNT_RX_FIFO_PACKETS, 1);
	}
}

void weft_half_rx(struct weft_core *c, unsigned int w, const struct weft_wire_hdr *h,
		  const uint8_t *payload, size_t len)
{
	if (h->type == WEFT_PKT_FIFO_DATA)
		rx_fifo_data(c, w, h, payload, len);
	else
		rx_put_req(c, w, h, len);
}
