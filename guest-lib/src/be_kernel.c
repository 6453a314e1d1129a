/* SPDX-License-Identifier: MIT */
/*
 * Kernel backend: /dev/weftN of weft.ko (include/weft/uapi.h).
 * Windows are mmap()ed (doorbell page, send FIFO, receive FIFO); events
 * are read() from the fd; adapter counters come from the PCI BAR 0
 * resource file in sysfs (read-only, root only).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "backend.h"
#include "weft/hw.h"
#include "weft/counters.h"
#include "libweft.h"

struct kbe {
	struct weft_be be;
	int fd;
	char path[64];
	volatile uint64_t *bar0;        /* read-only mapping, or NULL */
	size_t bar0_len;
	int bar0_tried;
	struct weft_uevent evq[16];     /* events read but not yet taken */
	unsigned int evq_head, evq_n;
};

static struct kbe *K(struct weft_be *be) { return (struct kbe *)be; }

static int k_ioctl(struct kbe *k, unsigned long req, void *arg)
{
	int r;
	do {
		r = ioctl(k->fd, req, arg);
	} while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : 0;
}

static int k_query(struct weft_be *be, struct weft_ioc_query *q)
{
	memset(q, 0, sizeof(*q));
	return k_ioctl(K(be), WEFT_IOC_QUERY, q);
}

static int k_job_attach(struct weft_be *be, uint32_t job_id)
{
	struct weft_ioc_job j = { .job_id = job_id };
	int r = k_ioctl(K(be), WEFT_IOC_JOB_ATTACH, &j);
	return (r == -EEXIST || r == -EALREADY) ? 0 : r;
}

static int k_open_window(struct weft_be *be, const struct weft_ioc_open_window *req,
			 struct weft_be_win *out)
{
	struct kbe *k = K(be);
	struct weft_ioc_open_window o = *req;
	int r = k_ioctl(k, WEFT_IOC_OPEN_WINDOW, &o);
	if (r)
		return r;
	uint64_t want_send = (uint64_t)WEFT_FRAME_SIZE << req->send_log2;
	uint64_t want_recv = (uint64_t)WEFT_FRAME_SIZE << req->recv_log2;
	struct weft_ioc_window cw = { .window = o.window };
	/* The driver's answer is checked like any other untrusted value. */
	if (o.send_size < want_send || o.recv_size < want_recv ||
	    o.send_size > want_send + WEFT_DB_PAGE_SIZE || o.recv_size > want_recv + WEFT_DB_PAGE_SIZE) {
		k_ioctl(k, WEFT_IOC_CLOSE_WINDOW, &cw);
		return -EPROTO;
	}
	void *db = mmap(NULL, WEFT_DB_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
			k->fd, (off_t)o.db_offset);
	/* The driver maps exactly the FIFO sizes it reported. */
	want_send = o.send_size;
	want_recv = o.recv_size;
	void *sf = mmap(NULL, want_send, PROT_READ | PROT_WRITE, MAP_SHARED,
			k->fd, (off_t)o.send_offset);
	void *rf = mmap(NULL, want_recv, PROT_READ | PROT_WRITE, MAP_SHARED,
			k->fd, (off_t)o.recv_offset);
	if (db == MAP_FAILED || sf == MAP_FAILED || rf == MAP_FAILED) {
		r = -errno;
		if (db != MAP_FAILED)
			munmap(db, WEFT_DB_PAGE_SIZE);
		if (sf != MAP_FAILED)
			munmap(sf, want_send);
		if (rf != MAP_FAILED)
			munmap(rf, want_recv);
		k_ioctl(k, WEFT_IOC_CLOSE_WINDOW, &cw);
		return r ? r : -ENOMEM;
	}
	memset(out, 0, sizeof(*out));
	out->window = o.window;
	out->send_log2 = req->send_log2;
	out->recv_log2 = req->recv_log2;
	out->send_fifo = sf;
	out->recv_fifo = rf;
	out->send_size = want_send;
	out->recv_size = want_recv;
	out->db = db;
	return 0;
}

static int k_close_window(struct weft_be *be, struct weft_be_win *w)
{
	struct kbe *k = K(be);
	struct weft_ioc_window cw = { .window = w->window, .timeout_ms = 0 };
	if (w->db)
		munmap((void *)w->db, WEFT_DB_PAGE_SIZE);
	if (w->send_fifo)
		munmap(w->send_fifo, w->send_size);
	if (w->recv_fifo)
		munmap(w->recv_fifo, w->recv_size);
	w->db = NULL;
	w->send_fifo = w->recv_fifo = NULL;
	return k_ioctl(k, WEFT_IOC_CLOSE_WINDOW, &cw);
}

static int k_alloc_rcxt(struct weft_be *be, uint32_t window, uint32_t *rcxt, uint16_t *key)
{
	struct weft_ioc_rcxt a = { .window = window };
	int r = k_ioctl(K(be), WEFT_IOC_ALLOC_RCXT, &a);
	if (r)
		return r;
	*rcxt = a.rcxt;
	*key = a.key;
	return 0;
}

static int k_free_rcxt(struct weft_be *be, uint32_t window, uint32_t rcxt)
{
	struct weft_ioc_rcxt a = { .window = window, .rcxt = rcxt };
	return k_ioctl(K(be), WEFT_IOC_FREE_RCXT, &a);
}

static int k_reg_mr(struct weft_be *be, uint32_t job_id, uint64_t addr, uint64_t len,
		    unsigned int page_shift, uint64_t *pvo, uint32_t *handle)
{
	struct weft_ioc_reg_mr m = { .addr = addr, .length = len, .job_id = job_id,
				     .page_shift = page_shift };
	int r = k_ioctl(K(be), WEFT_IOC_REG_MR, &m);
	if (r)
		return r;
	*pvo = m.pvo;
	*handle = m.handle;
	return 0;
}

static int k_dereg_mr(struct weft_be *be, uint32_t handle)
{
	struct weft_ioc_dereg_mr d = { .handle = handle };
	return k_ioctl(K(be), WEFT_IOC_DEREG_MR, &d);
}

/* Refill the local event queue with whatever read() returns now. */
static int k_fill_events(struct kbe *k)
{
	if (k->evq_n)
		return 1;
	struct weft_uevent buf[16];
	ssize_t n = read(k->fd, buf, sizeof(buf));
	if (n < 0)
		return (errno == EAGAIN || errno == EINTR) ? 0 : -errno;
	size_t cnt = (size_t)n / sizeof(buf[0]);
	memcpy(k->evq, buf, cnt * sizeof(buf[0]));
	k->evq_head = 0;
	k->evq_n = (unsigned int)cnt;
	return cnt > 0;
}

static int k_wait(struct weft_be *be, int timeout_ms)
{
	struct kbe *k = K(be);
	if (k->evq_n)
		return 1;
	struct pollfd p = { .fd = k->fd, .events = POLLIN };
	int r;
	do {
		r = poll(&p, 1, timeout_ms);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return r > 0;
}

static int k_read_event(struct weft_be *be, struct weft_uevent *ev)
{
	struct kbe *k = K(be);
	int r = k_fill_events(k);
	if (r <= 0)
		return r;
	*ev = k->evq[k->evq_head++];
	k->evq_n--;
	return 1;
}

static int k_event_fd(struct weft_be *be)
{
	return K(be)->fd;
}

/* Find the PCI function behind /dev/weftN: first through the char
 * device's sysfs node, else the Nth Weft function on the PCI bus. */
static int k_find_bar0(struct kbe *k, char *out, size_t outlen)
{
	const char *base = strrchr(k->path, '/');
	base = base ? base + 1 : k->path;
	struct stat st;
	if (stat(k->path, &st) == 0 && S_ISCHR(st.st_mode)) {
		snprintf(out, outlen, "/sys/dev/char/%u:%u/device/resource0",
			 major(st.st_rdev), minor(st.st_rdev));
		if (access(out, R_OK) == 0)
			return 0;
	}
	unsigned int idx = 0;
	if (sscanf(base, "weft%u", &idx) != 1)
		idx = 0;
	DIR *d = opendir("/sys/bus/pci/devices");
	if (!d)
		return -ENOENT;
	/* Sort order of readdir is unspecified: collect and pick the idx-th
	 * name in lexical (bus address) order. */
	char names[32][64];
	unsigned int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < 32) {
		if (de->d_name[0] == '.')
			continue;
		char p[320];
		unsigned int ven = 0, dev = 0;
		snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/vendor", de->d_name);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		int ok = fscanf(f, "%x", &ven) == 1;
		fclose(f);
		snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/device", de->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		ok = ok && fscanf(f, "%x", &dev) == 1;
		fclose(f);
		if (ok && ven == WEFT_PCI_VENDOR_ID && dev == WEFT_PCI_DEVICE_ID)
			snprintf(names[n++], sizeof(names[0]), "%.60s", de->d_name);
	}
	closedir(d);
	if (idx >= n)
		return -ENOENT;
	for (unsigned int i = 0; i < n; i++)
		for (unsigned int j = i + 1; j < n; j++)
			if (strcmp(names[j], names[i]) < 0) {
				char t[64];
				memcpy(t, names[i], sizeof(t));
				memcpy(names[i], names[j], sizeof(t));
				memcpy(names[j], t, sizeof(t));
			}
	snprintf(out, outlen, "/sys/bus/pci/devices/%s/resource0", names[idx]);
	return 0;
}

/* Without the BAR (not root, or the kernel forbids mapping a claimed
 * region): the driver's debugfs dumps, "NAME 0xOFF 0xVALUE" lines in
 * regs and "NAME VALUE" lines in counters. */
static int k_debugfs_read(struct kbe *k, uint64_t off, uint64_t *val)
{
	const char *base = strrchr(k->path, '/');
	base = base ? base + 1 : k->path;
	int is_cnt = off >= WEFT_REG_CNT_BASE && off < WEFT_REG_CNT(WEFT_CNT__COUNT);
	char p[160], line[256];
	snprintf(p, sizeof(p), "/sys/kernel/debug/weft/%.32s/%s", base, is_cnt ? "counters" : "regs");
	FILE *f = fopen(p, "re");
	if (!f)
		return -ENOTSUP;
	const char *want = is_cnt ? weft_counter_label((unsigned int)((off - WEFT_REG_CNT_BASE) / 8)) : NULL;
	int r = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		char name[48];
		unsigned long long a, b;
		if (is_cnt) {
			if (sscanf(line, "%47s %llu", name, &a) == 2 && !strcmp(name, want)) {
				*val = a;
				r = 0;
				break;
			}
		} else if (sscanf(line, "%47s 0x%llx 0x%llx", name, &a, &b) == 3 && a == off) {
			*val = b;
			r = 0;
			break;
		}
	}
	fclose(f);
	return r;
}

static int k_reg_read(struct weft_be *be, uint64_t off, uint64_t *val)
{
	struct kbe *k = K(be);
	if (off >= WEFT_REGS_SIZE || (off & 7))
		return -EINVAL;
	if (!k->bar0 && !k->bar0_tried) {
		char p[128];
		k->bar0_tried = 1;
		if (k_find_bar0(k, p, sizeof(p)) == 0) {
			int fd = open(p, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				void *m = mmap(NULL, WEFT_REGS_SIZE, PROT_READ, MAP_SHARED, fd, 0);
				close(fd);
				if (m != MAP_FAILED) {
					k->bar0 = m;
					k->bar0_len = WEFT_REGS_SIZE;
				}
			}
		}
	}
	if (k->bar0) {
		*val = k->bar0[off / 8];
		return 0;
	}
	return k_debugfs_read(k, off, val);
}

static uint64_t k_now_ns(struct weft_be *be)
{
	(void)be;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *k_dev_name(struct weft_be *be)
{
	return K(be)->path;
}

void *weft_be_memfd_alloc(size_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t sz = (len + (size_t)pg - 1) & ~((size_t)pg - 1);
	if (!sz)
		return NULL;
	int fd = memfd_create("weft-buffer", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)sz) < 0) {
		close(fd);
		return NULL;
	}
	void *p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

void weft_be_memfd_free(void *p, size_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t sz = (len + (size_t)pg - 1) & ~((size_t)pg - 1);
	if (p && sz)
		munmap(p, sz);
}

/* Parse /proc/self/maps for the line covering addr. */
int weft_be_proc_map_lookup(uint64_t addr, struct weft_be_map *m)
{
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	char line[512];
	int r = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off, ino;
		unsigned int maj, min;
		char perms[8];
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &s, &e, perms, &off, &maj,
			   &min, &ino) != 7)
			continue;
		if (addr < s || addr >= e)
			continue;
		memset(m, 0, sizeof(*m));
		m->start = s;
		m->end = e;
		m->off = off;
		m->dev = ((uint64_t)maj << 32) | min;
		m->ino = ino;
		r = 0;
		break;
	}
	fclose(f);
	return r;
}

static void *k_alloc(struct weft_be *be, size_t len)
{
	(void)be;
	return weft_be_memfd_alloc(len);
}

static void k_free(struct weft_be *be, void *p, size_t len)
{
	(void)be;
	weft_be_memfd_free(p, len);
}

static int k_map_lookup(struct weft_be *be, uint64_t addr, struct weft_be_map *m)
{
	(void)be;
	return weft_be_proc_map_lookup(addr, m);
}

static void k_close(struct weft_be *be)
{
	struct kbe *k = K(be);
	if (k->bar0)
		munmap((void *)k->bar0, k->bar0_len);
	close(k->fd);
	free(k);
}

/* ---- counter objects ---------------------------------------------------- */

static int k_cnt_create(struct weft_be *be, struct weft_ioc_cnt_create *req,
			const volatile void **block)
{
	struct kbe *k = K(be);
	struct weft_ioc_cnt_id d;
	void *p;
	int r = k_ioctl(k, WEFT_IOC_CNT_CREATE, req);

	if (r)
		return r;
	p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, k->fd,
		 (off_t)req->block_offset);
	if (p == MAP_FAILED) {
		r = -errno;
		memset(&d, 0, sizeof(d));
		d.id = req->id;
		k_ioctl(k, WEFT_IOC_CNT_DESTROY, &d);
		return r;
	}
	*block = p;
	return 0;
}

static int k_cnt_post(struct weft_be *be, struct weft_ioc_cnt_post *req)
{
	return k_ioctl(K(be), WEFT_IOC_CNT_POST, req);
}

static int k_cnt_wait(struct weft_be *be, struct weft_ioc_cnt_wait *req)
{
	return k_ioctl(K(be), WEFT_IOC_CNT_WAIT, req);
}

static int k_cnt_destroy(struct weft_be *be, uint32_t id, const volatile void *block)
{
	struct weft_ioc_cnt_id d;

	munmap((void *)(uintptr_t)block, (size_t)sysconf(_SC_PAGESIZE));
	memset(&d, 0, sizeof(d));
	d.id = id;
	return k_ioctl(K(be), WEFT_IOC_CNT_DESTROY, &d);
}

static int k_cnt_expose(struct weft_be *be, struct weft_ioc_cnt_expose *req)
{
	return k_ioctl(K(be), WEFT_IOC_CNT_EXPOSE, req);
}

static int k_cnt_unexpose(struct weft_be *be, uint32_t index)
{
	struct weft_ioc_cnt_id d;

	memset(&d, 0, sizeof(d));
	d.id = index;
	return k_ioctl(K(be), WEFT_IOC_CNT_UNEXPOSE, &d);
}

static const struct weft_be_ops kernel_ops = {
	.name = "kernel",
	.query = k_query,
	.job_attach = k_job_attach,
	.open_window = k_open_window,
	.close_window = k_close_window,
	.alloc_rcxt = k_alloc_rcxt,
	.free_rcxt = k_free_rcxt,
	.reg_mr = k_reg_mr,
	.dereg_mr = k_dereg_mr,
	.wait = k_wait,
	.read_event = k_read_event,
	.event_fd = k_event_fd,
	.reg_read = k_reg_read,
	.now_ns = k_now_ns,
	.dev_name = k_dev_name,
	.alloc = k_alloc,
	.free = k_free,
	.map_lookup = k_map_lookup,
	.close = k_close,
	.cnt_create = k_cnt_create,
	.cnt_post = k_cnt_post,
	.cnt_wait = k_cnt_wait,
	.cnt_destroy = k_cnt_destroy,
	.cnt_expose = k_cnt_expose,
	.cnt_unexpose = k_cnt_unexpose,
};

struct weft_be *weft_be_kernel_open(const char *path, char *err, size_t errlen)
{
	struct kbe *k = calloc(1, sizeof(*k));
	if (!k) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	snprintf(k->path, sizeof(k->path), "%s", path);
	k->fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (k->fd < 0) {
		int e = errno;
		if (e == ENOENT)
			snprintf(err, errlen, "%s: no such device (is weft.ko loaded and an adapter present?)", path);
		else if (e == EACCES || e == EPERM)
			snprintf(err, errlen, "%s: permission denied", path);
		else
			snprintf(err, errlen, "%s: %s", path, strerror(e));
		free(k);
		errno = e;
		return NULL;
	}
	k->be.ops = &kernel_ops;
	struct weft_ioc_query q;
	int r = k_query(&k->be, &q);
	if (r || q.abi_version != WEFT_UAPI_VERSION) {
		if (r == -ENOTTY)       /* QUERY has another number before version 2 */
			snprintf(err, errlen, "%s: driver ABI older than %u", path,
				 WEFT_UAPI_VERSION);
		else if (r)
			snprintf(err, errlen, "%s: query failed: %s", path, strerror(-r));
		else
			snprintf(err, errlen, "%s: driver ABI %u, libweft needs %u", path,
				 q.abi_version, WEFT_UAPI_VERSION);
		close(k->fd);
		free(k);
		errno = r ? -r : EPROTO;
		return NULL;
	}
	return &k->be;
}
