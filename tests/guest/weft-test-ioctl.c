// SPDX-License-Identifier: MIT
/*
 * Every /dev/weftN ioctl with good and bad arguments.  A bad argument
 * must fail with the documented errno and change nothing (the driver's
 * debugfs resource counters are compared around each bad call).
 */
#include "wt.h"

#define JOB	0x5eed01u

static struct wt_res base;

/* A bad call must leave every driver counter as it was. */
#define WT_BAD(fd, req, arg, e, what)                                            \
	do {                                                                     \
		struct wt_res b_ = wt_res(), a_;                                 \
		WT_EXPECT_ERR(fd, req, arg, e, what);                            \
		a_ = wt_res();                                                   \
		if (!wt_res_equal(&a_, &b_)) {                                   \
			WT_CHECK(0, "%s changed the driver's resources", what);  \
			wt_res_print("before", &b_);                             \
			wt_res_print("after ", &a_);                             \
		}                                                                \
	} while (0)

int main(void)
{
	int fd, fd2;
	struct weft_ioc_query q;
	struct weft_ioc_job j;
	struct weft_ioc_open_window o;
	struct weft_ioc_window cw;
	struct weft_ioc_rcxt r, r1, r2, r3;
	struct weft_ioc_reg_mr m;
	struct weft_ioc_dereg_mr d;
	struct weft_uevent ev;
	struct wt_win win;
	struct wt_res now;
	size_t len = 64 * 1024;
	uint8_t *buf;
	char path[256], *t;
	void *p;
	size_t i;
	int zero;

	base = wt_res();
	wt_res_print("start", &base);
	fd = wt_open();

	/* ---- QUERY ---- */
	memset(&q, 0xff, sizeof(q));
	WT_EXPECT_OK(fd, WEFT_IOC_QUERY, &q, "QUERY");
	WT_CHECK(q.abi_version == WEFT_UAPI_VERSION, "QUERY abi_version %u", q.abi_version);
	WT_CHECK(q.max_payload == WEFT_MAX_PAYLOAD, "QUERY max_payload %u", q.max_payload);
	WT_CHECK(q.nr_windows >= 1 && q.nr_windows <= WEFT_MAX_WINDOWS, "QUERY nr_windows %u",
		 q.nr_windows);
	WT_CHECK(q.nr_rcxt >= WEFT_MIN_RCXT, "QUERY nr_rcxt %u", q.nr_rcxt);
	WT_CHECK((uint32_t)q.hw_id == WEFT_ID_MAGIC, "QUERY hw_id 0x%llx",
		 (unsigned long long)q.hw_id);
	WT_CHECK(q.nr_handlers >= 1, "QUERY nr_handlers %u", q.nr_handlers);
	WT_BAD(fd, WEFT_IOC_QUERY, (void *)8, EFAULT, "QUERY to a bad pointer");
	WT_BAD(fd, _IOR(WEFT_IOC_MAGIC, 0x7f, struct weft_ioc_query), &q, ENOTTY,
	       "unknown ioctl number");
	WT_BAD(fd, _IOWR(WEFT_IOC_MAGIC, 0x03, uint32_t), &q, ENOTTY,
	       "OPEN_WINDOW with a wrong size");

	/* ---- JOB_ATTACH / DETACH ---- */
	memset(&j, 0, sizeof(j));
	WT_BAD(fd, WEFT_IOC_JOB_ATTACH, &j, EINVAL, "JOB_ATTACH job 0");
	WT_BAD(fd, WEFT_IOC_JOB_ATTACH, (void *)8, EFAULT, "JOB_ATTACH bad pointer");
	j.job_id = JOB;
	WT_BAD(fd, WEFT_IOC_JOB_DETACH, &j, ENOENT, "JOB_DETACH of a job not attached");
	WT_EXPECT_OK(fd, WEFT_IOC_JOB_ATTACH, &j, "JOB_ATTACH");
	WT_CHECK(j.slot < WEFT_NR_JOB_SLOTS, "JOB_ATTACH slot %u", j.slot);
	WT_BAD(fd, WEFT_IOC_JOB_ATTACH, &j, EALREADY, "JOB_ATTACH twice on one fd");
	t = wt_read_file(wt_dbg_path(path, sizeof(path), "regs"));
	{
		char want[64];

		snprintf(want, sizeof(want), "owner 0x%016llx",
			 (unsigned long long)(WEFT_TCE_OWNER_VALID | JOB));
		WT_CHECK(t && strstr(t, want), "TCE tables of the slot owned by job 0x%x (%s)",
			 JOB, want);
	}

	/* ---- OPEN_WINDOW ---- */
	memset(&o, 0, sizeof(o));
	o.job_id = JOB;
	o.send_log2 = 0;
	o.recv_log2 = 4;
	WT_BAD(fd, WEFT_IOC_OPEN_WINDOW, &o, EINVAL, "OPEN_WINDOW send_log2 0");
	o.send_log2 = 16;
	WT_BAD(fd, WEFT_IOC_OPEN_WINDOW, &o, EINVAL, "OPEN_WINDOW send_log2 16");
	o.send_log2 = 4;
	o.recv_log2 = 99;
	WT_BAD(fd, WEFT_IOC_OPEN_WINDOW, &o, EINVAL, "OPEN_WINDOW recv_log2 99");
	o.recv_log2 = 4;
	o.flags = 0x80;
	WT_BAD(fd, WEFT_IOC_OPEN_WINDOW, &o, EINVAL, "OPEN_WINDOW unknown flag");
	o.flags = 0;
	o.quantum = 70000;
	WT_BAD(fd, WEFT_IOC_OPEN_WINDOW, &o, EINVAL, "OPEN_WINDOW quantum 70000");
	o.quantum = 0;
	o.job_id = 0;
	WT_BAD(fd, WEFT_IOC_OPEN_WINDOW, &o, EINVAL, "OPEN_WINDOW job 0");
	o.job_id = JOB + 1;
	WT_BAD(fd, WEFT_IOC_OPEN_WINDOW, &o, ENOENT, "OPEN_WINDOW job not attached");
	WT_BAD(fd, WEFT_IOC_OPEN_WINDOW, (void *)8, EFAULT, "OPEN_WINDOW bad pointer");

	WT_CHECK(wt_open_window(fd, JOB, 4, &win) == 0, "OPEN_WINDOW + mmap (window %u)",
		 win.o.window);
	WT_CHECK(win.o.send_size == (uint64_t)WEFT_FRAME_SIZE << 4 &&
		 win.o.recv_size == (uint64_t)WEFT_FRAME_SIZE << 4,
		 "FIFO sizes %llu/%llu", (unsigned long long)win.o.send_size,
		 (unsigned long long)win.o.recv_size);
	now = wt_res();
	WT_CHECK(now.windows_open == base.windows_open + 1, "windows_open %lld -> %lld",
		 base.windows_open, now.windows_open);
	zero = 1;
	for (i = 0; i < win.o.send_size; i++)
		zero &= win.send[i] == 0;
	for (i = 0; i < win.o.recv_size; i++)
		zero &= win.recv[i] == 0;
	WT_CHECK(zero, "fresh FIFOs are zero-filled (no kernel data exposed)");
	WT_CHECK(win.db[WEFT_DB_STATE / 8] == WEFT_WIN_VALID,
		 "doorbell page STATE reads VALID (%" PRIu64 ")", win.db[WEFT_DB_STATE / 8]);

	/* ---- mmap with bad arguments ---- */
	errno = 0;
	p = mmap(NULL, 2 * WEFT_DB_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)win.o.db_offset);
	WT_CHECK(p == MAP_FAILED && errno == EINVAL, "mmap of 2 doorbell pages -> EINVAL (%s)",
		 strerror(errno));
	errno = 0;
	p = mmap(NULL, WEFT_DB_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd,
		 (off_t)win.o.db_offset);
	WT_CHECK(p == MAP_FAILED && errno == EINVAL, "private mmap -> EINVAL (%s)",
		 strerror(errno));
	errno = 0;
	p = mmap(NULL, win.o.send_size * 2, PROT_READ, MAP_SHARED, fd, (off_t)win.o.send_offset);
	WT_CHECK(p == MAP_FAILED && errno == EINVAL, "mmap larger than the FIFO -> EINVAL (%s)",
		 strerror(errno));
	errno = 0;
	p = mmap(NULL, WEFT_DB_PAGE_SIZE, PROT_READ, MAP_SHARED, fd,
		 (off_t)((uint64_t)((win.o.window + 1) % q.nr_windows) << 28));
	WT_CHECK(p == MAP_FAILED && errno == EACCES, "mmap of a window not ours -> EACCES (%s)",
		 strerror(errno));
	errno = 0;
	p = mmap(NULL, WEFT_DB_PAGE_SIZE, PROT_READ, MAP_SHARED, fd,
		 (off_t)(win.o.db_offset + 0x1000));
	WT_CHECK(p == MAP_FAILED && errno == EINVAL, "mmap at an unused offset -> EINVAL (%s)",
		 strerror(errno));

	/* ---- ALLOC_RCXT / FREE_RCXT ---- */
	memset(&r, 0, sizeof(r));
	r.window = WEFT_MAX_WINDOWS + 5;
	WT_BAD(fd, WEFT_IOC_ALLOC_RCXT, &r, EINVAL, "ALLOC_RCXT window out of range");
	r.window = (win.o.window + 1) % q.nr_windows;
	if (r.window != win.o.window)
		WT_BAD(fd, WEFT_IOC_ALLOC_RCXT, &r, ENOENT, "ALLOC_RCXT window not ours");
	r.window = win.o.window;
	r.reserved[1] = 1;
	WT_BAD(fd, WEFT_IOC_ALLOC_RCXT, &r, EINVAL, "ALLOC_RCXT reserved field set");
	memset(&r1, 0, sizeof(r1));
	r1.window = win.o.window;
	r2 = r3 = r1;
	WT_EXPECT_OK(fd, WEFT_IOC_ALLOC_RCXT, &r1, "ALLOC_RCXT 1");
	WT_EXPECT_OK(fd, WEFT_IOC_ALLOC_RCXT, &r2, "ALLOC_RCXT 2");
	WT_CHECK(r1.rcxt != r2.rcxt, "distinct rCxts %u %u", r1.rcxt, r2.rcxt);
	WT_CHECK(r1.key == (uint16_t)q.recovery_count, "rCxt key %u = recovery count %u",
		 r1.key, q.recovery_count);
	now = wt_res();
	WT_CHECK(now.rcxts_held == base.rcxts_held + 2, "rcxts_held +2 (%lld)", now.rcxts_held);
	r = r1;
	WT_EXPECT_OK(fd, WEFT_IOC_FREE_RCXT, &r, "FREE_RCXT 1");
	WT_EXPECT_OK(fd, WEFT_IOC_ALLOC_RCXT, &r3, "ALLOC_RCXT after a free");
	WT_CHECK(r3.rcxt != r1.rcxt, "round robin: freed rCxt %u not handed out again at once (got %u)",
		 r1.rcxt, r3.rcxt);
	WT_BAD(fd, WEFT_IOC_FREE_RCXT, &r, ENOENT, "FREE_RCXT twice");
	r = r2;
	r.rcxt = q.nr_rcxt;
	WT_BAD(fd, WEFT_IOC_FREE_RCXT, &r, EINVAL, "FREE_RCXT id out of range");
	r = r2;
	r.window = WEFT_MAX_WINDOWS;
	WT_BAD(fd, WEFT_IOC_FREE_RCXT, &r, EINVAL, "FREE_RCXT window out of range");
	r = r2;
	r.reserved[0] = 3;
	WT_BAD(fd, WEFT_IOC_FREE_RCXT, &r, EINVAL, "FREE_RCXT reserved field set");
	WT_BAD(fd, WEFT_IOC_FREE_RCXT, (void *)8, EFAULT, "FREE_RCXT bad pointer");
	snprintf(path, sizeof(path), "%u", r2.rcxt);
	wt_write_file(wt_dbg_path((char[256]){0}, 256, "rcxt_first"), path);
	t = wt_read_file(wt_dbg_path(path, sizeof(path), "rcxt"));
	{
		char want[96];

		snprintf(want, sizeof(want), "rCxt %u: assigned 1 win %u key %u", r2.rcxt,
			 win.o.window, r2.key);
		WT_CHECK(t && strstr(t, want), "debugfs rcxt shows '%s'", want);
	}

	/* ---- REG_MR / DEREG_MR ---- */
	buf = mmap(NULL, len + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		wt_fatal("mmap: %s", strerror(errno));
	munmap(buf + len, 4096); /* a hole after the buffer */
	memset(buf, 0x5a, len);
	memset(&m, 0, sizeof(m));
	m.addr = (uintptr_t)buf;
	m.length = 0;
	m.job_id = JOB;
	WT_BAD(fd, WEFT_IOC_REG_MR, &m, EINVAL, "REG_MR length 0");
	m.length = len;
	m.page_shift = 20;
	WT_BAD(fd, WEFT_IOC_REG_MR, &m, EINVAL, "REG_MR page_shift 20");
	m.page_shift = 16;
	/* 4 KiB past buf, or 8 KiB if that happens to be 64 KiB aligned. */
	m.addr = (uintptr_t)buf + 4096;
	if (!(m.addr & 0xffff))
		m.addr += 4096;
	WT_BAD(fd, WEFT_IOC_REG_MR, &m, EINVAL, "REG_MR 64 KiB pages, unaligned");
	m.addr = (uintptr_t)buf;
	m.page_shift = 24;
	WT_BAD(fd, WEFT_IOC_REG_MR, &m, EINVAL, "REG_MR 16 MiB pages, unaligned");
	m.page_shift = 0;
	m.job_id = JOB + 1;
	WT_BAD(fd, WEFT_IOC_REG_MR, &m, ENOENT, "REG_MR job not attached");
	m.job_id = JOB;
	m.reserved = 1;
	WT_BAD(fd, WEFT_IOC_REG_MR, &m, EINVAL, "REG_MR reserved field set");
	m.reserved = 0;
	m.addr = ~0ull - 100;
	WT_BAD(fd, WEFT_IOC_REG_MR, &m, EINVAL, "REG_MR address wraps");
	m.addr = (uintptr_t)buf;
	m.length = len + 4096;
	WT_BAD(fd, WEFT_IOC_REG_MR, &m, EFAULT, "REG_MR over unmapped memory");
	m.length = (1ull << 40);
	WT_BAD(fd, WEFT_IOC_REG_MR, &m, ENOSPC, "REG_MR larger than the TCE tables");
	WT_BAD(fd, WEFT_IOC_REG_MR, (void *)8, EFAULT, "REG_MR bad pointer");
	m.length = len - 100;
	m.addr = (uintptr_t)buf + 100;
	WT_EXPECT_OK(fd, WEFT_IOC_REG_MR, &m, "REG_MR 64 KiB at offset 100");
	WT_CHECK(weft_pvo_table(m.pvo) / WEFT_SLOT_TABLES == j.slot &&
		 weft_pvo_table(m.pvo) % WEFT_SLOT_TABLES >= WEFT_SLOT_TABLES_16M,
		 "PVO 0x%llx is in a 4 KiB table of slot %u", (unsigned long long)m.pvo,
		 j.slot);
	WT_CHECK((weft_pvo_offset(m.pvo) & 4095) == 100, "PVO keeps the offset in the page");
	WT_CHECK(weft_pvo_key(m.pvo) != 0, "PVO key nonzero (%u)", weft_pvo_key(m.pvo));
	now = wt_res();
	WT_CHECK(now.mrs == base.mrs + 1 && now.pages_pinned == base.pages_pinned + 16,
		 "mrs +1, pages_pinned +16 (%lld, %lld)", now.mrs - base.mrs,
		 now.pages_pinned - base.pages_pinned);
	t = wt_read_file(wt_dbg_path(path, sizeof(path), "tce"));
	{
		char want[64];

		snprintf(want, sizeof(want), "key 0x%06x",
			 (weft_pvo_key(m.pvo) << WEFT_PVO_TABLE_LEN) | weft_pvo_table(m.pvo));
		WT_CHECK(t && strstr(t, want), "debugfs tce shows TCEs with %s", want);
	}
	{
		struct weft_ioc_reg_mr m2 = m;

		m2.addr = (uintptr_t)buf;
		m2.length = 4096;
		WT_EXPECT_OK(fd, WEFT_IOC_REG_MR, &m2, "REG_MR a second, overlapping region");
		WT_CHECK(m2.handle != m.handle && m2.pvo != m.pvo, "distinct handle and PVO");
		d.handle = m2.handle;
		d.reserved = 0;
		WT_EXPECT_OK(fd, WEFT_IOC_DEREG_MR, &d, "DEREG_MR second region");
	}
	memset(&j, 0, sizeof(j));
	j.job_id = JOB;
	WT_BAD(fd, WEFT_IOC_JOB_DETACH, &j, EBUSY, "JOB_DETACH with a window and an MR");
	d.handle = m.handle + 1000;
	d.reserved = 0;
	WT_BAD(fd, WEFT_IOC_DEREG_MR, &d, ENOENT, "DEREG_MR unknown handle");
	d.handle = m.handle;
	d.reserved = 7;
	WT_BAD(fd, WEFT_IOC_DEREG_MR, &d, EINVAL, "DEREG_MR reserved field set");
	d.reserved = 0;
	fd2 = wt_open();
	WT_BAD(fd2, WEFT_IOC_DEREG_MR, &d, ENOENT, "DEREG_MR through another fd");
	close(fd2);
	WT_EXPECT_OK(fd, WEFT_IOC_DEREG_MR, &d, "DEREG_MR");
	WT_BAD(fd, WEFT_IOC_DEREG_MR, &d, ENOENT, "DEREG_MR twice");
	now = wt_res();
	WT_CHECK(now.mrs == base.mrs && now.pages_pinned == base.pages_pinned,
		 "mrs and pages_pinned back to start");
	WT_CHECK(buf[200] == 0x5a, "registered memory kept its contents");

	/* ---- events: read() and poll() ---- */
	errno = 0;
	WT_CHECK(read(fd, &ev, sizeof(ev) - 1) == -1 && errno == EINVAL,
		 "read() shorter than an event -> EINVAL");
	{
		int fl = fcntl(fd, F_GETFL);

		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
		errno = 0;
		WT_CHECK(read(fd, &ev, sizeof(ev)) == -1 && errno == EAGAIN,
			 "non-blocking read() with no event -> EAGAIN");
		fcntl(fd, F_SETFL, fl);
	}

	/* ---- CLOSE_WINDOW ---- */
	memset(&cw, 0, sizeof(cw));
	cw.window = WEFT_MAX_WINDOWS;
	WT_BAD(fd, WEFT_IOC_CLOSE_WINDOW, &cw, EINVAL, "CLOSE_WINDOW out of range");
	cw.window = win.o.window;
	cw.timeout_ms = 3600000;
	WT_BAD(fd, WEFT_IOC_CLOSE_WINDOW, &cw, EINVAL, "CLOSE_WINDOW timeout too long");
	cw.timeout_ms = 0;
	fd2 = wt_open();
	WT_BAD(fd2, WEFT_IOC_CLOSE_WINDOW, &cw, ENOENT, "CLOSE_WINDOW through another fd");
	close(fd2);
	WT_EXPECT_OK(fd, WEFT_IOC_CLOSE_WINDOW, &cw, "CLOSE_WINDOW");
	WT_CHECK(wt_touch(win.db) == SIGBUS,
		 "the doorbell mapping is gone after close (access -> SIGBUS)");
	WT_BAD(fd, WEFT_IOC_CLOSE_WINDOW, &cw, ENOENT, "CLOSE_WINDOW twice");
	r = r2;
	WT_BAD(fd, WEFT_IOC_FREE_RCXT, &r, ENOENT, "FREE_RCXT after its window closed");
	now = wt_res();
	WT_CHECK(now.windows_open == base.windows_open && now.rcxts_held == base.rcxts_held,
		 "close released the window and its rCxts");
	wt_unmap_window(&win);
	WT_EXPECT_OK(fd, WEFT_IOC_JOB_DETACH, &j, "JOB_DETACH");
	WT_BAD(fd, WEFT_IOC_JOB_DETACH, &j, ENOENT, "JOB_DETACH twice");

	/* Job slots: 5, the 6th concurrent job is refused. */
	{
		int fds[WEFT_NR_JOB_SLOTS + 1], k, busy = 0, n_ok = 0;
		t = wt_read_file(wt_dbg_path(path, sizeof(path), "tce"));
		for (k = 0; t && k < WEFT_NR_JOB_SLOTS; k++) {
			char want[32];

			snprintf(want, sizeof(want), "slot %d: job 0 ", k);
			busy += !strstr(t, want);
		}
		for (k = 0; k <= WEFT_NR_JOB_SLOTS; k++) {
			fds[k] = wt_open();
			memset(&j, 0, sizeof(j));
			j.job_id = 0x777000 + k;
			if (ioctl(fds[k], WEFT_IOC_JOB_ATTACH, &j) == 0)
				n_ok++;
			else if (k >= WEFT_NR_JOB_SLOTS - busy)
				WT_CHECK(errno == EBUSY, "job %d refused with EBUSY (%s)", k,
					 strerror(errno));
		}
		WT_CHECK(n_ok == WEFT_NR_JOB_SLOTS - busy,
			 "%d free job slots, %d jobs attached", WEFT_NR_JOB_SLOTS - busy, n_ok);
		for (k = 0; k <= WEFT_NR_JOB_SLOTS; k++)
			close(fds[k]);
	}

	close(fd);
	now = wt_res();
	wt_res_print("end", &now);
	WT_CHECK(wt_res_equal(&now, &base), "all resources released after close()");
	return wt_done("weft-test-ioctl");
}
