// SPDX-License-Identifier: MIT
/*
 * Interrupt-driven events through the adapter's event queue, the MSI-X
 * handlers and the fd: a send threshold and a receive threshold each
 * produce one event, read() returns it on the owning fd and poll() wakes
 * up; another fd sees nothing.  Needs the adapter's link to the switch
 * (a packet is sent to this node's own window).
 */
#include <poll.h>

#include "wt.h"

#define JOB	0xe7e7u

static int next_event(int fd, struct weft_uevent *ev, uint32_t type)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	/* Hang guard only: the event is normally already queued. */
	while (poll(&p, 1, 30000) == 1) {
		if (read(fd, ev, sizeof(*ev)) != sizeof(*ev))
			return -1;
		if (ev->type == type)
			return 0;
		t_diag("(other event type %u window %u reason %s)", ev->type, ev->window,
		       wt_reason((int)ev->reason));
	}
	return -1;
}

/* The adapter's INTERRUPTS counter (debugfs), 0 if it cannot be read. */
static unsigned long long irq_count(void)
{
	char path[256];
	const char *t = wt_read_file(wt_dbg_path(path, sizeof(path), "counters"));
	const char *p = t ? strstr(t, "\nINTERRUPTS ") : NULL;

	return p ? strtoull(p + 12, NULL, 10) : 0;
}

int main(void)
{
	struct wt_res base = wt_res(), now;
	int fd = wt_open(), other = wt_open(), st;
	struct weft_ioc_query q = wt_query(fd);
	struct pollfd pfd = { .fd = other, .events = POLLIN };
	struct weft_uevent ev;
	struct wt_win win;
	volatile struct weft_recv_hdr *rh;
	uint64_t produced = 0;
	char path[256], *t;
	unsigned long long irq_before, irq_after;
	const char *p;

	wt_attach_open(fd, JOB, 3, &win, "");
	irq_before = irq_count();

	win.db[WEFT_DB_SEND_THRESHOLD / 8] = 1;
	win.db[WEFT_DB_RECV_THRESHOLD / 8] = 1;
	wt_send_frames(&win, q.node_id, (uint16_t)win.o.window, &produced, 1);
	st = wt_wait_done((volatile struct weft_send_line *)win.send);
	WT_CHECK(st == WEFT_R_OK, "a packet to this node's window was sent: %s%s", wt_reason(st),
		 st == WEFT_R_NO_LINK ? " (no link to the switch: this test needs one)" : "");
	WT_CHECK(next_event(fd, &ev, WEFT_UEV_SEND) == 0 && ev.window == win.o.window,
		 "send threshold: WEFT_UEV_SEND for window %u", win.o.window);
	rh = (volatile struct weft_recv_hdr *)win.recv;
	WT_CHECK(next_event(fd, &ev, WEFT_UEV_RECV) == 0 && ev.window == win.o.window,
		 "receive threshold: WEFT_UEV_RECV for window %u", win.o.window);
	WT_CHECK((rh->flags & WEFT_RF_VALID) && rh->type == WEFT_RF_FIFO && rh->length == 1024 &&
		 rh->src_node == q.node_id,
		 "the packet is in the receive FIFO (type %u flags 0x%x length %u from node %u)",
		 rh->type, rh->flags, rh->length, rh->src_node);
	WT_CHECK(poll(&pfd, 1, 0) == 0, "another fd has no event");
	irq_after = irq_count();
	WT_CHECK(irq_after > irq_before, "adapter INTERRUPTS counter %llu -> %llu", irq_before,
		 irq_after);
	t = wt_read_file(wt_dbg_path(path, sizeof(path), "state"));
	p = t ? strstr(t, "handler ") : NULL;
	t_diag("%.*s", p ? (int)(strstr(p, "window") ? strstr(p, "window") - p :
				   (long)strlen(p)) : 0, p ? p : "");

	wt_close_window(fd, &win, "close");
	close(fd);
	close(other);
	now = wt_res();
	WT_CHECK(wt_res_equal(&now, &base), "everything released");
	return wt_done("weft-test-events");
}
