// SPDX-License-Identifier: MIT
/*
 * Close Window with traffic in flight: the ioctl waits for Snapshot View
 * to clear and returns 0; then the window, its rCxts and its FIFOs are
 * gone and Snapshot View reads 0.
 */
#include "wt.h"

#define JOB	0xc105eu

int main(void)
{
	int fd = wt_open(), round;
	struct weft_ioc_job j = { .job_id = JOB };
	struct weft_ioc_query q = wt_query(fd);
	struct wt_res base = wt_res(), now;
	char path[256], *t;

	if (ioctl(fd, WEFT_IOC_JOB_ATTACH, &j))
		wt_fatal("JOB_ATTACH: %s", strerror(errno));
	base = wt_res();
	for (round = 0; round < 5; round++) {
		struct weft_ioc_window cw;
		struct weft_ioc_rcxt r;
		struct wt_win win;
		uint64_t produced = 0;
		int ret;

		if (wt_open_window(fd, JOB, 7, &win))
			wt_fatal("open window: %s", strerror(errno));
		memset(&r, 0, sizeof(r));
		r.window = win.o.window;
		if (ioctl(fd, WEFT_IOC_ALLOC_RCXT, &r))
			wt_fatal("ALLOC_RCXT: %s", strerror(errno));
		/* Fill the whole send FIFO (128 frames) and close at once. */
		wt_send_frames(&win, q.node_id, (uint16_t)win.o.window, &produced, 128);
		memset(&cw, 0, sizeof(cw));
		cw.window = win.o.window;
		cw.timeout_ms = 5000;
		errno = 0;
		ret = ioctl(fd, WEFT_IOC_CLOSE_WINDOW, &cw);
		WT_CHECK(ret == 0, "round %d: CLOSE_WINDOW with %" PRIu64 " frames queued returns 0 (%s)",
			 round, produced, ret ? strerror(errno) : "ok");
		t = wt_read_file(wt_dbg_path(path, sizeof(path), "regs"));
		WT_CHECK(t && strstr(t, "SNAPSHOT_VIEW      0x058 0x0000000000000000"),
			 "round %d: Snapshot View is 0 after the close", round);
		now = wt_res();
		WT_CHECK(now.windows_open == base.windows_open && now.rcxts_held == base.rcxts_held &&
			 now.coherent_bytes == base.coherent_bytes,
			 "round %d: window, rCxt and FIFO memory released", round);
		wt_unmap_window(&win);
	}
	t = wt_read_file(wt_dbg_path(path, sizeof(path), "state"));
	t = t ? strstr(t, "closes ") : NULL;
	printf("      driver: %.*s", t ? (int)(strchr(t, '\n') - t + 1) : 0, t ? t : "");
	close(fd);
	return wt_done("weft-test-close");
}
