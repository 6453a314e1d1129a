// SPDX-License-Identifier: MIT
/*
 * Removing the adapter (driver unbind) while a process uses it: its
 * window, rCxts, registration and pinned pages are released at once, its
 * mappings are gone (SIGBUS, no access to freed memory), every call fails
 * with ENODEV and poll() reports POLLHUP; binding again gives a working
 * /dev/weftN.
 */
#include <poll.h>

#include "wt.h"

#define JOB	0xb1du

static int sysfs_write(const char *file, const char *bdf)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/bus/pci/drivers/weft/%s", file);
	return wt_write_file(path, bdf);
}

int main(void)
{
	struct wt_res base = wt_res(), now;
	int fd = wt_open(), fd2, ret;
	struct weft_ioc_rcxt r;
	struct weft_ioc_reg_mr m;
	struct weft_ioc_query q;
	struct weft_uevent ev;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	static uint8_t buf[32768] __attribute__((aligned(4096)));
	struct wt_win win;
	char link[256], path[256], bdf[256];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/misc/%s/device", wt_devname());
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		wt_fatal("readlink %s: %s", path, strerror(errno));
	link[n] = 0;
	snprintf(bdf, sizeof(bdf), "%s", strrchr(link, '/') ? strrchr(link, '/') + 1 : link);
	t_diag("adapter %s", bdf);

	wt_attach_open(fd, JOB, 4, &win, "");
	wt_rcxt_mr(fd, JOB, &win, buf, sizeof(buf), &r, &m, "");
	WT_CHECK(wt_touch(win.recv) == 0, "receive FIFO readable before the unbind");

	ret = sysfs_write("unbind", bdf);
	WT_CHECK(ret == 0, "unbind %s (%s)", bdf, ret ? strerror(-ret) : "ok");
	now = wt_res();
	WT_CHECK(now.windows_open == base.windows_open && now.rcxts_held == base.rcxts_held &&
		 now.mrs == base.mrs && now.pages_pinned == base.pages_pinned &&
		 now.devices == base.devices - 1,
		 "window, rCxt, MR and pinned pages released while the fd is still open");
	WT_CHECK(wt_touch(win.db) == SIGBUS, "doorbell mapping gone (SIGBUS)");
	WT_CHECK(wt_touch(win.recv) == SIGBUS, "receive FIFO mapping gone (SIGBUS)");
	WT_CHECK(wt_touch(win.send) == SIGBUS, "send FIFO mapping gone (SIGBUS)");
	memset(&q, 0, sizeof(q));
	WT_EXPECT_ERR(fd, WEFT_IOC_QUERY, &q, ENODEV, "QUERY after removal");
	WT_EXPECT_ERR(fd, WEFT_IOC_REG_MR, &m, ENODEV, "REG_MR after removal");
	WT_CHECK(poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP), "poll reports POLLHUP");
	n = read(fd, &ev, sizeof(ev));
	WT_CHECK(n == 0, "read returns 0 (end of file), got %zd", n);
	{
		void *p;
		int e;

		errno = 0;
		p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
		e = errno;
		WT_CHECK(p == MAP_FAILED && e == ENODEV, "mmap after removal -> ENODEV (%s)",
			 strerror(e));
	}
	wt_unmap_window(&win);
	close(fd);
	now = wt_res();
	WT_CHECK(now.contexts == base.contexts, "context freed at close (%lld)", now.contexts);

	ret = sysfs_write("bind", bdf);
	WT_CHECK(ret == 0, "bind %s again (%s)", bdf, ret ? strerror(-ret) : "ok");
	fd2 = open(wt_dev(), O_RDWR);
	WT_CHECK(fd2 >= 0, "%s opens again", wt_dev());
	if (fd2 >= 0) {
		WT_EXPECT_OK(fd2, WEFT_IOC_QUERY, &q, "QUERY on the new device");
		close(fd2);
	}
	now = wt_res();
	WT_CHECK(wt_res_equal(&now, &base) && now.devices == base.devices,
		 "driver counters back to the start");
	return wt_done("weft-test-unbind");
}
