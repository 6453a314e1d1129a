/* SPDX-License-Identifier: MIT */
/*
 * Weft sim, layer 3: what a user process does with its window: frames in
 * the send FIFO + StartTransmit, polling the receive FIFO header-last
 * aware, returning slots.  Only FIFO memory and the window's doorbell
 * page are used.
 */
#include <errno.h>
#include <string.h>

#include "sim_int.h"

static uint8_t *send_frame(struct weft_sim_window *win, uint64_t i)
{
	return win->send_fifo + (i & (win->send_frames - 1)) * WEFT_FRAME_SIZE;
}

static uint8_t *recv_frame(struct weft_sim_window *win, uint64_t i)
{
	return win->recv_fifo + (i & (win->recv_frames - 1)) * WEFT_FRAME_SIZE;
}

uint32_t weft_sim_send_space(struct weft_sim_window *win)
{
	while (win->send_reaped < win->send_posted) {
		struct weft_send_hdr h;

		memcpy(&h, send_frame(win, win->send_reaped), sizeof(h));
		if (!(h.flags & WEFT_SF_DONE))
			break;
		win->send_reaped++;
	}
	return win->send_frames - (uint32_t)(win->send_posted - win->send_reaped);
}

static void start(struct weft_sim_window *win)
{
	win->send_posted++;
	weft_sim_db_write(win->sim, win->node, win->window, WEFT_DB_START_TRANSMIT, 1);
}

int weft_sim_post_fifo(struct weft_sim_window *win, uint16_t dest_node, uint16_t dest_window,
		       const void *data, size_t len)
{
	struct weft_send_line line;
	uint8_t *f;

	if (len > WEFT_MAX_PAYLOAD)
		return -EINVAL;
	if (!weft_sim_send_space(win))
		return -EAGAIN;
	f = send_frame(win, win->send_posted);
	if (len)
		memcpy(f + WEFT_FRAME_HDR_SIZE, data, len);
	memset(&line, 0, sizeof(line));
	line.hdr.dest_node = dest_node;
	line.hdr.dest_window = dest_window;
	line.hdr.length = (uint16_t)len;
	line.hdr.type = WEFT_SF_FIFO;
	memcpy(f, &line, sizeof(line));
	start(win);
	return 0;
}

int weft_sim_post_rdma(struct weft_sim_window *win, enum weft_sf_type type,
		       uint16_t dest_node, uint16_t dest_window,
		       const struct weft_rdma_req *req)
{
	struct weft_send_line line;

	if (type != WEFT_SF_RDMAW && type != WEFT_SF_RDMAR && type != WEFT_SF_TP_RDMAR)
		return -EINVAL;
	if (!weft_sim_send_space(win))
		return -EAGAIN;
	memset(&line, 0, sizeof(line));
	line.hdr.dest_node = dest_node;
	line.hdr.dest_window = dest_window;
	line.hdr.type = (uint8_t)type;
	line.rdma = *req;
	memcpy(send_frame(win, win->send_posted), &line, sizeof(line));
	start(win);
	return 0;
}

int weft_sim_poll_recv(struct weft_sim_window *win, struct weft_recv_hdr *hdr,
		       void *payload, size_t cap)
{
	uint8_t *f = recv_frame(win, win->recv_next);
	struct weft_recv_hdr h;

	memcpy(&h, f, sizeof(h));
	if (!(h.flags & WEFT_RF_VALID))
		return 0;
	if (payload && cap) {
		size_t n = h.length < WEFT_MAX_PAYLOAD ? h.length : WEFT_MAX_PAYLOAD;

		memcpy(payload, f + WEFT_FRAME_HDR_SIZE, n < cap ? n : cap);
	}
	if (hdr)
		*hdr = h;
	/* Consumed: zero the header line, return the slot. */
	memset(f, 0, WEFT_FRAME_HDR_SIZE);
	win->recv_next++;
	weft_sim_db_write(win->sim, win->node, win->window, WEFT_DB_RETURN_SLOTS, 1);
	return 1;
}
