// SPDX-License-Identifier: MIT
/*
 * Load and unload weft.ko 20 times, using every resource kind in each
 * load; the driver's counters must come back to zero every time and the
 * kernel's slab and free memory must not grow with the number of cycles.
 *
 * Usage: weft-test-modload [PATH/weft.ko] [cycles]
 * (default /lib/weft/weft.ko, 20 cycles).  No /dev/weft* may be open.
 */
#include <sys/syscall.h>

#include "wt.h"

#define JOB	0x10adu

static long meminfo(const char *key)
{
	char *t = wt_read_file("/proc/meminfo"), *p;
	size_t l = strlen(key);

	for (p = t; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, l) && p[l] == ':')
			return strtol(p + l + 1, NULL, 10);
	wt_fatal("no %s in /proc/meminfo", key);
	return -1;
}

static void drop_caches(void)
{
	sync();
	wt_write_file("/proc/sys/vm/drop_caches", "3");
}

static int load(const char *ko)
{
	int fd = open(ko, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = (int)syscall(SYS_finit_module, fd, "", 0);
	r = r ? -errno : 0;
	close(fd);
	return r;
}

static int unload(void)
{
	return syscall(SYS_delete_module, "weft", O_NONBLOCK) ? -errno : 0;
}

static void workload(int cycle)
{
	int fd = wt_open();
	struct weft_ioc_rcxt r;
	struct weft_ioc_reg_mr m;
	struct wt_win win;
	static uint8_t buf[65536] __attribute__((aligned(4096)));
	struct wt_res mid, end;
	char pfx[32];

	snprintf(pfx, sizeof(pfx), "cycle %d: ", cycle);
	wt_attach_open(fd, JOB, 4, &win, pfx);
	wt_rcxt_mr(fd, JOB, &win, buf, sizeof(buf), &r, &m, pfx);
	mid = wt_res();
	CHECK(mid.windows_open == 1 && mid.rcxts_held == 1 && mid.mrs == 1 &&
	      mid.pages_pinned == 16, "cycle %d: resources in use are counted", cycle);
	wt_unmap_window(&win);
	close(fd);
	end = wt_res();
	if (!CHECK(!end.contexts && !end.windows_open && !end.windows_zombie &&
		   !end.rcxts_held && !end.mrs && !end.pages_pinned,
		   "cycle %d: everything released before unload", cycle))
		wt_res_print("left", &end);
}

int main(int argc, char **argv)
{
	const char *ko = argc > 1 ? argv[1] : "/lib/weft/weft.ko";
	int cycles = argc > 2 ? atoi(argv[2]) : 20, i, r;
	long slab0 = 0, free0 = 0, slab1, free1, coherent0 = -1;
	struct stat st;

	if (stat(ko, &st))
		wt_fatal("%s: %s (give the module path as the first argument)", ko, strerror(errno));
	/* Start from a loaded module so that one cycle is unload + load. */
	r = load(ko);
	if (r && r != -EEXIST)
		wt_fatal("insmod %s: %s", ko, strerror(-r));
	t_begin("%d load/unload cycles, each with every resource used and released", cycles);
	for (i = 0; i <= cycles; i++) {
		struct wt_res res = wt_res();

		if (coherent0 < 0)
			coherent0 = res.coherent_bytes;
		CHECK(res.coherent_bytes == coherent0,
		      "cycle %d: coherent memory after load %lld, first load %lld", i,
		      res.coherent_bytes, (long long)coherent0);
		workload(i);
		if (i == 1) {
			/* Baseline after one full cycle (first-use allocations). */
			drop_caches();
			slab0 = meminfo("Slab");
			free0 = meminfo("MemFree");
		}
		if (i == cycles)
			break;
		r = unload();
		if (r)
			wt_fatal("cycle %d: rmmod weft: %s", i, strerror(-r));
		CHECK(stat("/sys/kernel/debug/weft", &st) != 0,
		      "cycle %d: debugfs folder removed at unload", i);
		r = load(ko);
		if (r)
			wt_fatal("cycle %d: insmod %s: %s", i, ko, strerror(-r));
		CHECK(stat(wt_dev(), &st) == 0, "cycle %d: %s back after load", i, wt_dev());
	}
	drop_caches();
	slab1 = meminfo("Slab");
	free1 = meminfo("MemFree");
	t_diag("Slab %ld kB -> %ld kB, MemFree %ld kB -> %ld kB over %d cycles",
	       slab0, slab1, free0, free1, cycles - 1);
	/* A leak of one window's FIFOs, the TCE tables or the EVQ per cycle
	 * is at least 64 KiB; allow 1 MiB of unrelated kernel noise. */
	WT_CHECK(slab1 - slab0 < 1024, "slab growth %ld kB < 1024 kB", slab1 - slab0);
	WT_CHECK(free0 - free1 < 4096, "free memory loss %ld kB < 4096 kB", free0 - free1);
	return wt_done("weft-test-modload");
}
