// SPDX-License-Identifier: MIT
/*
 * Window fatal errors reach the owning process: an RDMA write from a
 * stale PVO (a deregistered region) is a local protection violation; the
 * owner reads WEFT_UEV_FATAL with the reason and rCxt, another process
 * gets nothing, the window reads FATAL and refuses new rCxts, and it can
 * still be closed.
 */
#include <poll.h>

#include "wt.h"

#define JOB	0xfa7a1u

int main(void)
{
	struct wt_res base = wt_res(), now;
	int fd = wt_open(), other = wt_open(), st;
	struct weft_ioc_query q = wt_query(fd);
	struct weft_ioc_rcxt r;
	struct weft_ioc_reg_mr m;
	struct weft_ioc_dereg_mr d;
	struct weft_uevent ev;
	struct pollfd pfd = { .fd = other, .events = POLLIN };
	volatile struct weft_send_line *f;
	static uint8_t buf[8192] __attribute__((aligned(4096)));
	struct wt_win win;
	uint64_t produced = 0;
	ssize_t n;

	wt_attach_open(fd, JOB, 3, &win, "");
	wt_rcxt_mr(fd, JOB, &win, buf, sizeof(buf), &r, &m, "");
	d.handle = m.handle;
	d.reserved = 0;
	WT_EXPECT_OK(fd, WEFT_IOC_DEREG_MR, &d, "deregister the region (its PVO is now stale)");

	f = wt_post_rdmaw(&win, &produced, q.node_id, (uint16_t)win.o.window, r.rcxt, 1,
			  m.pvo, m.pvo, 4096);
	st = wt_wait_done(f);
	WT_CHECK(st > 0, "RDMA write from the stale PVO fails: status %s", wt_reason(st));
	n = read(fd, &ev, sizeof(ev));
	WT_CHECK(n == sizeof(ev) && ev.type == WEFT_UEV_FATAL && ev.window == win.o.window,
		 "owner reads WEFT_UEV_FATAL for window %u (type %u window %u)", win.o.window,
		 n > 0 ? ev.type : 0, n > 0 ? ev.window : 0);
	WT_CHECK(n == sizeof(ev) && ev.reason == (uint32_t)st && ev.rcxt == r.rcxt,
		 "event carries the reason %s and rCxt %u", wt_reason(n > 0 ? (int)ev.reason : -1),
		 n > 0 ? ev.rcxt : 0);
	WT_CHECK(poll(&pfd, 1, 0) == 0, "another process' fd has no event");
	WT_CHECK(win.db[WEFT_DB_STATE / 8] == WEFT_WIN_FATAL, "window state reads FATAL (%" PRIu64 ")",
		 win.db[WEFT_DB_STATE / 8]);
	r.rcxt = 0;
	WT_EXPECT_ERR(fd, WEFT_IOC_ALLOC_RCXT, &r, EPIPE, "ALLOC_RCXT on a fatal window");
	wt_close_window(fd, &win, "close the fatal window");
	close(fd);
	close(other);
	now = wt_res();
	WT_CHECK(wt_res_equal(&now, &base), "everything released");
	return wt_done("weft-test-fatal");
}
