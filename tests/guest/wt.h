/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the in-guest driver tests (tests/guest/weft-test-NAME.c).
 * Checks come from tests/common/weft_test.h: each check is a TAP point,
 * and the program exits non-zero if any failed.
 *
 * Environment: WEFT_DEV (default /dev/weft0).  The tests need root,
 * debugfs on /sys/kernel/debug and weft.ko loaded.
 */
#ifndef WEFT_GUEST_WT_H
#define WEFT_GUEST_WT_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "weft/hw.h"
#include "weft/fifo.h"
#include "weft/sram.h"
#include "weft/xlate.h"
#include "weft/uapi.h"
#include "weft/names.h"
#include "weft_test.h"

/* The guest tests' names for weft_test.h: every check is its own TAP
 * point, wt_fatal bails out, wt_done ends the TAP. */
#define WT_CHECK(cond, ...) OK(cond, __VA_ARGS__)
#define wt_fatal t_bail
#define wt_failures ((int)t_failures())

/*
 * Load one byte of a mapping in this process and return the signal the
 * load raised (SIGBUS, SIGSEGV) or 0.  In-process, because the driver's
 * mappings are VM_DONTCOPY: a forked child would not have them at all.
 */
static sigjmp_buf wt_touch_env;

static inline void wt_touch_fault(int sig)
{
	siglongjmp(wt_touch_env, sig);
}

static inline int wt_touch(const volatile void *p)
{
	struct sigaction sa, old_bus, old_segv;
	int sig;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = wt_touch_fault;
	sigaction(SIGBUS, &sa, &old_bus);
	sigaction(SIGSEGV, &sa, &old_segv);
	sig = sigsetjmp(wt_touch_env, 1);
	if (!sig)
		(void)*(const volatile uint8_t *)p;
	sigaction(SIGBUS, &old_bus, NULL);
	sigaction(SIGSEGV, &old_segv, NULL);
	return sig;
}

static inline int wt_done(const char *name)
{
	t_diag("%s", name);
	return t_done();
}

/* An ioctl that must fail with errno e. */
#define WT_EXPECT_ERR(fd, req, arg, e, what)                                   \
	do {                                                                   \
		errno = 0;                                                     \
		int r_ = ioctl((fd), (req), (arg));                            \
		int e_ = errno;                                                \
		WT_CHECK(r_ == -1 && e_ == (e), "%s -> %s (got %d, %s)", what, \
			 strerror(e), r_, strerror(e_));                       \
	} while (0)

#define WT_EXPECT_OK(fd, req, arg, what)                                       \
	do {                                                                   \
		errno = 0;                                                     \
		int r_ = ioctl((fd), (req), (arg));                            \
		int e_ = errno;                                                \
		WT_CHECK(r_ == 0, "%s -> 0 (got %d, %s)", what, r_,            \
			 r_ ? strerror(e_) : "ok");                            \
	} while (0)

static inline const char *wt_reason(int r)
{
	return r < 0 ? "none (never completed)" : weft_reason_name((unsigned int)r);
}

static inline const char *wt_dev(void)
{
	const char *d = getenv("WEFT_DEV");

	return d && *d ? d : "/dev/weft0";
}

static inline int wt_open(void)
{
	int fd = open(wt_dev(), O_RDWR | O_CLOEXEC);

	if (fd < 0)
		wt_fatal("cannot open %s: %s (is weft.ko loaded and an adapter present?)",
			 wt_dev(), strerror(errno));
	return fd;
}

/* "weft0" from "/dev/weft0" */
static inline const char *wt_devname(void)
{
	const char *d = wt_dev(), *s = strrchr(d, '/');

	return s ? s + 1 : d;
}

static inline char *wt_read_file(const char *path)
{
	static char buf[1 << 20];
	ssize_t n, got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	while ((n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	close(fd);
	buf[got] = 0;
	return buf;
}

static inline int wt_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	n = n < 0 ? -errno : 0;
	close(fd);
	return (int)n;
}

/* The driver's resource counters (debugfs weft/driver). */
struct wt_res {
	long long devices, contexts, windows_open, windows_zombie, rcxts_held;
	long long mrs, pages_pinned, coherent_bytes, recoveries;
};

static inline long long wt_field(const char *text, const char *name)
{
	size_t l = strlen(name);
	const char *p = text;

	while (p && *p) {
		if (!strncmp(p, name, l) && p[l] == ' ')
			return strtoll(p + l + 1, NULL, 0);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	wt_fatal("no '%s' in the driver's debugfs counters", name);
	return -1;
}

static inline struct wt_res wt_res(void)
{
	struct wt_res r;
	char *t = wt_read_file("/sys/kernel/debug/weft/driver");

	if (!t)
		wt_fatal("cannot read /sys/kernel/debug/weft/driver: %s (debugfs mounted? weft.ko loaded?)",
			 strerror(errno));
	r.devices = wt_field(t, "devices");
	r.contexts = wt_field(t, "contexts");
	r.windows_open = wt_field(t, "windows_open");
	r.windows_zombie = wt_field(t, "windows_zombie");
	r.rcxts_held = wt_field(t, "rcxts_held");
	r.mrs = wt_field(t, "mrs");
	r.pages_pinned = wt_field(t, "pages_pinned");
	r.coherent_bytes = wt_field(t, "coherent_bytes");
	r.recoveries = wt_field(t, "recoveries");
	return r;
}

static inline int wt_res_equal(const struct wt_res *a, const struct wt_res *b)
{
	return a->contexts == b->contexts && a->windows_open == b->windows_open &&
	       a->windows_zombie == b->windows_zombie && a->rcxts_held == b->rcxts_held &&
	       a->mrs == b->mrs && a->pages_pinned == b->pages_pinned &&
	       a->coherent_bytes == b->coherent_bytes;
}

static inline void wt_res_print(const char *what, const struct wt_res *r)
{
	t_diag("%s: contexts %lld windows %lld zombie %lld rcxts %lld mrs %lld pinned %lld coherent %lld",
	       what, r->contexts, r->windows_open, r->windows_zombie, r->rcxts_held,
	       r->mrs, r->pages_pinned, r->coherent_bytes);
}

static inline char *wt_dbg_path(char *buf, size_t len, const char *file)
{
	snprintf(buf, len, "/sys/kernel/debug/weft/%s/%s", wt_devname(), file);
	return buf;
}

static inline struct weft_ioc_query wt_query(int fd)
{
	struct weft_ioc_query q;

	memset(&q, 0, sizeof(q));
	if (ioctl(fd, WEFT_IOC_QUERY, &q))
		wt_fatal("WEFT_IOC_QUERY: %s", strerror(errno));
	return q;
}

/* A window with its mappings. */
struct wt_win {
	struct weft_ioc_open_window o;
	volatile uint64_t *db;
	uint8_t *send, *recv;
};

static inline int wt_open_window(int fd, uint32_t job, uint32_t log2, struct wt_win *w)
{
	memset(w, 0, sizeof(*w));
	w->o.job_id = job;
	w->o.send_log2 = log2;
	w->o.recv_log2 = log2;
	if (ioctl(fd, WEFT_IOC_OPEN_WINDOW, &w->o))
		return -errno;
	w->db = mmap(NULL, WEFT_DB_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		     (off_t)w->o.db_offset);
	w->send = mmap(NULL, w->o.send_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       (off_t)w->o.send_offset);
	w->recv = mmap(NULL, w->o.recv_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       (off_t)w->o.recv_offset);
	if (w->db == MAP_FAILED || w->send == MAP_FAILED || w->recv == MAP_FAILED)
		return -errno;
	return 0;
}

static inline void wt_unmap_window(struct wt_win *w)
{
	munmap((void *)w->db, WEFT_DB_PAGE_SIZE);
	munmap(w->send, w->o.send_size);
	munmap(w->recv, w->o.recv_size);
}

/* Attach fd to job and open a window of 2^log2 frames in it; exits on
 * failure, the message led by pfx. */
static inline void wt_attach_open(int fd, uint32_t job, uint32_t log2, struct wt_win *w,
				  const char *pfx)
{
	struct weft_ioc_job j = { .job_id = job };

	if (ioctl(fd, WEFT_IOC_JOB_ATTACH, &j) || wt_open_window(fd, job, log2, w))
		wt_fatal("%sattach/open: %s", pfx, strerror(errno));
}

/* Allocate an rCxt (into *r) on window w and register len bytes at buf
 * for job (into *m); exits on failure, the message led by pfx. */
static inline void wt_rcxt_mr(int fd, uint32_t job, const struct wt_win *w, void *buf,
			      size_t len, struct weft_ioc_rcxt *r, struct weft_ioc_reg_mr *m,
			      const char *pfx)
{
	memset(r, 0, sizeof(*r));
	r->window = w->o.window;
	memset(m, 0, sizeof(*m));
	m->addr = (uintptr_t)buf;
	m->length = len;
	m->job_id = job;
	if (ioctl(fd, WEFT_IOC_ALLOC_RCXT, r) || ioctl(fd, WEFT_IOC_REG_MR, m))
		wt_fatal("%srCxt/MR: %s", pfx, strerror(errno));
}

/* Close window w (a check named what) and unmap it. */
static inline void wt_close_window(int fd, struct wt_win *w, const char *what)
{
	struct weft_ioc_window cw;

	memset(&cw, 0, sizeof(cw));
	cw.window = w->o.window;
	WT_EXPECT_OK(fd, WEFT_IOC_CLOSE_WINDOW, &cw, what);
	wt_unmap_window(w);
}

/*
 * Queue packet-mode frames to (node, window) until n frames were handed
 * to the adapter, never overrunning the send FIFO.  Returns frames queued.
 */
static inline uint64_t wt_send_frames(struct wt_win *w, uint16_t node, uint16_t window,
				      uint64_t *produced, uint64_t n)
{
	uint32_t frames = 1u << w->o.send_log2, i;
	uint64_t queued = 0;

	while (queued < n) {
		uint64_t ready = w->db[WEFT_DB_SEND_READY / 8];
		uint32_t room = ready >= frames ? 0 : frames - (uint32_t)ready;

		if (!room)
			continue;
		if (room > n - queued)
			room = (uint32_t)(n - queued);
		for (i = 0; i < room; i++) {
			uint8_t *f = w->send + ((*produced + i) & (frames - 1)) * WEFT_FRAME_SIZE;
			struct weft_send_hdr h;

			memset(&h, 0, sizeof(h));
			h.dest_node = node;
			h.dest_window = window;
			h.length = 1024;
			h.type = WEFT_SF_FIFO;
			memset(f + WEFT_FRAME_HDR_SIZE, (int)(*produced + i), 1024);
			memcpy(f, &h, sizeof(h));
		}
		__sync_synchronize();
		w->db[WEFT_DB_START_TRANSMIT / 8] = room;
		*produced += room;
		queued += room;
	}
	return queued;
}

/* Post one RDMA write frame; returns the frame in the send FIFO. */
static inline volatile struct weft_send_line *
wt_post_rdmaw(struct wt_win *w, uint64_t *produced, uint16_t node, uint16_t window,
	      uint32_t rcxt, uint32_t tid, uint64_t local_pvo, uint64_t remote_pvo,
	      uint64_t len)
{
	uint32_t frames = 1u << w->o.send_log2;
	uint8_t *f = w->send + (*produced & (frames - 1)) * WEFT_FRAME_SIZE;
	struct weft_send_line line;

	memset(&line, 0, sizeof(line));
	line.hdr.dest_node = node;
	line.hdr.dest_window = window;
	line.hdr.type = WEFT_SF_RDMAW;
	line.rdma.local_pvo = local_pvo;
	line.rdma.remote_pvo = remote_pvo;
	line.rdma.length = len;
	line.rdma.local_rcxt = rcxt;
	line.rdma.remote_rcxt = WEFT_RCXT_NONE;
	line.rdma.tid = tid;
	memcpy(f, &line, sizeof(line));
	__sync_synchronize();
	w->db[WEFT_DB_START_TRANSMIT / 8] = 1;
	(*produced)++;
	return (volatile struct weft_send_line *)f;
}

/*
 * Wait until the adapter marks the frame done; returns its status
 * (enum weft_reason), or -1 if it never does (a hang guard of 30 s of
 * wall time, reported as a failure, not a performance assertion).
 */
static inline int wt_wait_done(volatile struct weft_send_line *f)
{
	time_t start = time(NULL);

	while (!(f->hdr.flags & WEFT_SF_DONE)) {
		if (time(NULL) - start > 30)
			return -1;
		sched_yield();
	}
	return f->hdr.status;
}

#endif /* WEFT_GUEST_WT_H */
