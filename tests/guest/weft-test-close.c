// SPDX-License-Identifier: MIT
/*
 * Close Window with traffic in flight: the ioctl waits for Snapshot View
 * to clear and returns 0; then the window, its rCxts and its FIFOs are
 * gone and Snapshot View reads 0.  Rounds 0-4 close with a full send
 * FIFO of packets queued, rounds 5-9 in the middle of an 8 MiB RDMA write
 * (the adapter's transmit task is then busy, so the driver has to wait
 * for the snapshot; the driver's close statistics are printed).
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
	size_t len = 8u << 20;
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (buf == MAP_FAILED)
		wt_fatal("mmap: %s", strerror(errno));
	memset(buf, 0x33, len);
	for (round = 0; round < 10; round++) {
		struct weft_ioc_window cw;
		struct weft_ioc_rcxt r;
		struct wt_win win;
		uint64_t produced = 0;
		uint32_t mr_handle = 0;
		int ret;

		if (wt_open_window(fd, JOB, 7, &win))
			wt_fatal("open window: %s", strerror(errno));
		memset(&r, 0, sizeof(r));
		r.window = win.o.window;
		if (ioctl(fd, WEFT_IOC_ALLOC_RCXT, &r))
			wt_fatal("ALLOC_RCXT: %s", strerror(errno));
		if (round < 5) {
			/* Fill the whole send FIFO (128 frames) and close at once. */
			wt_send_frames(&win, q.node_id, (uint16_t)win.o.window, &produced, 128);
		} else {
			struct weft_ioc_rcxt tr = r;
			struct weft_ioc_reg_mr m;

			memset(&m, 0, sizeof(m));
			m.addr = (uintptr_t)buf;
			m.length = len;
			m.job_id = JOB;
			if (ioctl(fd, WEFT_IOC_ALLOC_RCXT, &tr) || ioctl(fd, WEFT_IOC_REG_MR, &m))
				wt_fatal("rCxt/MR: %s", strerror(errno));
			mr_handle = m.handle;
			{
				uint32_t frames = 1u << win.o.send_log2;
				uint8_t *f = win.send + (produced & (frames - 1)) * WEFT_FRAME_SIZE;
				struct weft_send_line line;

				memset(&line, 0, sizeof(line));
				line.hdr.dest_node = q.node_id;
				line.hdr.dest_window = (uint16_t)win.o.window;
				line.hdr.type = WEFT_SF_RDMAW;
				line.rdma.local_pvo = m.pvo;
				line.rdma.remote_pvo = m.pvo;
				line.rdma.length = len;
				line.rdma.local_rcxt = r.rcxt;
				line.rdma.remote_rcxt = tr.rcxt;
				line.rdma.remote_rcxt_key = tr.key;
				line.rdma.notify = WEFT_NOTIFY_BOTH;
				line.rdma.tid = 1;
				memcpy(f, &line, sizeof(line));
				__sync_synchronize();
				win.db[WEFT_DB_START_TRANSMIT / 8] = 1;
				produced++;
			}
		}
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
			 "round %d: window, rCxts and FIFO memory released", round);
		if (round >= 5) {
			struct weft_ioc_dereg_mr d = { .handle = mr_handle };

			/* The registration outlives the window; drop it now. */
			WT_EXPECT_OK(fd, WEFT_IOC_DEREG_MR, &d, "deregister the 8 MiB region");
			now = wt_res();
			WT_CHECK(now.mrs == base.mrs && now.pages_pinned == base.pages_pinned,
				 "round %d: registration released", round);
		}
		wt_unmap_window(&win);
	}
	t = wt_read_file(wt_dbg_path(path, sizeof(path), "state"));
	t = t ? strstr(t, "closes ") : NULL;
	t_diag("driver: %.*s", t ? (int)(strchr(t, '\n') - t) : 0, t ? t : "");
	close(fd);
	return wt_done("weft-test-close");
}
