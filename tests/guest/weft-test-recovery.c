// SPDX-License-Identifier: MIT
/*
 * Adapter recovery through sysfs and through debugfs: the recovery count
 * goes up, every user gets WEFT_UEV_RECOVERY, and the old windows, rCxts
 * and registrations no longer work (ioctls on them fail with ESTALE, the
 * old window reads INVALID, closing it releases it, the adapter's rCxt is
 * unassigned and the TCEs are invalid), while new ones work and carry the
 * new key.
 */
#include <poll.h>

#include "wt.h"

#define JOB	0x7ec0u

static int trigger(int how)
{
	char path[256];

	if (how == 0)
		snprintf(path, sizeof(path), "/sys/class/misc/%s/device/recover", wt_devname());
	else
		wt_dbg_path(path, sizeof(path), "recover");
	t_diag("recovery through %s", path);
	return wt_write_file(path, "1");
}

int main(void)
{
	int fd = wt_open(), fd2 = wt_open(), how;
	struct weft_ioc_job j = { .job_id = JOB };
	struct wt_res base;
	char path[256], *t;
	static uint8_t buf[16384] __attribute__((aligned(4096)));

	if (ioctl(fd, WEFT_IOC_JOB_ATTACH, &j))
		wt_fatal("JOB_ATTACH: %s", strerror(errno));
	/* Events are queued before the recovery request returns: never block. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	fcntl(fd2, F_SETFL, fcntl(fd2, F_GETFL) | O_NONBLOCK);
	base = wt_res();
	for (how = 0; how < 2; how++) {
		struct weft_ioc_query q0 = wt_query(fd), q1;
		struct weft_ioc_rcxt r, r2;
		struct weft_ioc_reg_mr m;
		struct weft_ioc_dereg_mr d;
		struct weft_ioc_window cw;
		struct weft_uevent ev[4];
		struct pollfd pfd = { .fd = fd2, .events = POLLIN };
		struct wt_win win, win2;
		struct wt_res now;
		char want[96];
		uint64_t old_pvo;
		ssize_t n;
		int ret;

		if (wt_open_window(fd, JOB, 3, &win))
			wt_fatal("open window: %s", strerror(errno));
		wt_rcxt_mr(fd, JOB, &win, buf, sizeof(buf), &r, &m, "");

		old_pvo = m.pvo;
		ret = trigger(how);
		WT_CHECK(ret == 0, "recovery %d requested (%s)", how, ret ? strerror(-ret) : "ok");
		if (ret)
			return wt_done("weft-test-recovery");
		q1 = wt_query(fd);
		WT_CHECK(q1.recovery_count == q0.recovery_count + 1, "recovery count %u -> %u",
			 q0.recovery_count, q1.recovery_count);

		n = read(fd, ev, sizeof(ev));
		WT_CHECK(n >= (ssize_t)sizeof(ev[0]) && ev[0].type == WEFT_UEV_RECOVERY &&
			 ev[0].info == q1.recovery_count,
			 "owner reads WEFT_UEV_RECOVERY with the new count (n %zd type %u info %llu)",
			 n, n > 0 ? ev[0].type : 0, n > 0 ? (unsigned long long)ev[0].info : 0);
		WT_CHECK(poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN),
			 "an idle second fd is told too (poll POLLIN)");
		n = read(fd2, ev, sizeof(ev));
		WT_CHECK(n == (ssize_t)sizeof(ev[0]) && ev[0].type == WEFT_UEV_RECOVERY,
			 "second fd reads WEFT_UEV_RECOVERY");

		WT_CHECK(win.db[WEFT_DB_STATE / 8] != WEFT_WIN_VALID,
			 "old window still mapped, reads state %" PRIu64 " (not VALID)",
			 (uint64_t)win.db[WEFT_DB_STATE / 8]);
		r2 = r;
		WT_EXPECT_ERR(fd, WEFT_IOC_FREE_RCXT, &r2, ESTALE, "old rCxt is stale");
		WT_EXPECT_ERR(fd, WEFT_IOC_ALLOC_RCXT, &r2, ESTALE, "no rCxt on the old window");
		d.handle = m.handle;
		d.reserved = 0;
		WT_EXPECT_ERR(fd, WEFT_IOC_DEREG_MR, &d, ESTALE, "old registration is stale");
		WT_EXPECT_ERR(fd, WEFT_IOC_DEREG_MR, &d, ENOENT, "and then forgotten");
		memset(&cw, 0, sizeof(cw));
		cw.window = win.o.window;
		WT_EXPECT_OK(fd, WEFT_IOC_CLOSE_WINDOW, &cw, "closing the old window releases it");
		WT_EXPECT_ERR(fd, WEFT_IOC_CLOSE_WINDOW, &cw, ENOENT, "old window is gone");
		snprintf(want, sizeof(want), "%u", r.rcxt);
		wt_write_file(wt_dbg_path(path, sizeof(path), "rcxt_first"), want);
		t = wt_read_file(wt_dbg_path(path, sizeof(path), "rcxt"));
		snprintf(want, sizeof(want), "rCxt %u: assigned 0 ", r.rcxt);
		WT_CHECK(t && strstr(t, want), "adapter rCxt %u is unassigned", r.rcxt);
		t = wt_read_file(wt_dbg_path(path, sizeof(path), "tce"));
		snprintf(want, sizeof(want), "key 0x%06x",
			 (weft_pvo_key(m.pvo) << WEFT_PVO_TABLE_LEN) | weft_pvo_table(m.pvo));
		WT_CHECK(t && !strstr(t, want), "no TCE carries the old key (%s)", want);
		now = wt_res();
		WT_CHECK(now.windows_open == base.windows_open && now.rcxts_held == base.rcxts_held &&
			 now.mrs == base.mrs && now.pages_pinned == base.pages_pinned,
			 "driver holds no window, rCxt, MR or pinned page of before");
		wt_unmap_window(&win);

		/* New resources work and use the new key. */
		WT_CHECK(wt_open_window(fd, JOB, 3, &win2) == 0, "a new window opens");
		WT_CHECK(win2.db[WEFT_DB_STATE / 8] == WEFT_WIN_VALID, "new window is VALID");
		memset(&r, 0, sizeof(r));
		r.window = win2.o.window;
		WT_EXPECT_OK(fd, WEFT_IOC_ALLOC_RCXT, &r, "new rCxt");
		WT_CHECK(r.key == (uint16_t)q1.recovery_count, "new rCxt key %u = recovery count %u",
			 r.key, q1.recovery_count);
		memset(&m, 0, sizeof(m));
		m.addr = (uintptr_t)buf;
		m.length = sizeof(buf);
		m.job_id = JOB;
		WT_EXPECT_OK(fd, WEFT_IOC_REG_MR, &m, "new registration");
		d.handle = m.handle;
		WT_EXPECT_OK(fd, WEFT_IOC_DEREG_MR, &d, "deregister it");

		/* On the adapter: the old rCxt id is refused, the old PVO faults. */
		{
			volatile struct weft_send_line *f;
			uint64_t produced = 0;
			int st;

			f = wt_post_rdmaw(&win2, &produced, q1.node_id, (uint16_t)win2.o.window,
					  r2.rcxt, 1, m.pvo, m.pvo, 64);
			st = wt_wait_done(f);
			WT_CHECK(st == WEFT_R_RCXT_INVALID || st == WEFT_R_RCXT_FOREIGN,
				 "RDMA write on the old rCxt %u refused: %s", r2.rcxt, wt_reason(st));
			f = wt_post_rdmaw(&win2, &produced, q1.node_id, (uint16_t)win2.o.window,
					  r.rcxt, 1, old_pvo, old_pvo, 64);
			st = wt_wait_done(f);
			WT_CHECK(st == WEFT_R_TCE_KEY || st == WEFT_R_TCE_BOUNDS,
				 "RDMA write from the old PVO 0x%" PRIx64 " refused: %s", old_pvo,
				 wt_reason(st));
			/* The status line is written before the fatal interrupt
			 * reaches the driver: wait for the event (5 s at most). */
			{
				struct pollfd pf = { .fd = fd, .events = POLLIN };

				WT_CHECK(poll(&pf, 1, 5000) == 1 && (pf.revents & POLLIN),
					 "the owner's fd is readable after the fault (poll POLLIN)");
			}
			n = read(fd, ev, sizeof(ev));
			WT_CHECK(n >= (ssize_t)sizeof(ev[0]) && ev[0].type == WEFT_UEV_FATAL,
				 "the owner is told the window is fatal");
		}
		cw.window = win2.o.window;
		cw.timeout_ms = 0;
		WT_EXPECT_OK(fd, WEFT_IOC_CLOSE_WINDOW, &cw, "close the new window");
		wt_unmap_window(&win2);
	}
	close(fd);
	close(fd2);
	return wt_done("weft-test-recovery");
}
