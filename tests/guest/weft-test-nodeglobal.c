// SPDX-License-Identifier: MIT
/*
 * Node-global registrations (seed item 24, docs/driver.md "Node-global
 * tables"), on a node with two adapters (cluster scenario
 * stripe-2adapters): a buffer registered once, through either adapter,
 * is usable with the same PVO through both, as the source and as the
 * target of RDMA writes between the two adapters; its deregistration,
 * through either adapter, invalidates it on both: a write to the old PVO
 * is dropped with a protection event at the target and the memory stays
 * untouched.  Then the hot paths: a recovery of the second adapter
 * invalidates the registrations made through it (on both adapters) and
 * keeps those made through the first; unbinding the second adapter
 * leaves the first working; binding it again writes the existing
 * registrations into its tables, so their PVOs work through it at once.
 *
 * Environment: WEFT_DEV (first adapter, default /dev/weft0) and
 * WEFT_DEV2 (second adapter, default /dev/weft1).
 */
#include <poll.h>

#include "wt.h"

#define JOB	0x6e67u
#define LEN	8192u
#define WAIT_S	10

static uint8_t src[LEN] __attribute__((aligned(4096)));
static uint8_t dst[LEN] __attribute__((aligned(4096)));

struct ad {
	const char *name;
	int fd;
	uint16_t node;
	struct wt_win win;
	struct weft_ioc_rcxt r;	/* sends */
	struct weft_ioc_rcxt t;	/* receives */
	uint64_t produced;
};

/* A window with its two rCxts on a's fd. */
static void ad_window(struct ad *a)
{
	if (wt_open_window(a->fd, JOB, 3, &a->win))
		t_bail("%s: open window: %s", a->name, strerror(errno));
	a->produced = 0;
	memset(&a->r, 0, sizeof(a->r));
	a->r.window = a->win.o.window;
	a->t = a->r;
	if (ioctl(a->fd, WEFT_IOC_ALLOC_RCXT, &a->r) || ioctl(a->fd, WEFT_IOC_ALLOC_RCXT, &a->t))
		t_bail("%s: rCxt: %s", a->name, strerror(errno));
}

static void ad_open(struct ad *a, const char *path)
{
	struct weft_ioc_job j = { .job_id = JOB };

	a->name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	a->fd = open(path, O_RDWR | O_CLOEXEC);
	if (a->fd < 0)
		t_bail("cannot open %s: %s (a node with 2 adapters is needed)", path,
		       strerror(errno));
	a->node = wt_query(a->fd).node_id;
	if (ioctl(a->fd, WEFT_IOC_JOB_ATTACH, &j))
		t_bail("%s: attach: %s", a->name, strerror(errno));
	ad_window(a);
}

static int reg(struct ad *a, void *buf, struct weft_ioc_reg_mr *m)
{
	memset(m, 0, sizeof(*m));
	m->addr = (uintptr_t)buf;
	m->length = LEN;
	m->job_id = JOB;
	return ioctl(a->fd, WEFT_IOC_REG_MR, m) ? -errno : 0;
}

static int dereg(struct ad *a, uint32_t handle)
{
	struct weft_ioc_dereg_mr d = { .handle = handle };

	return ioctl(a->fd, WEFT_IOC_DEREG_MR, &d) ? -errno : 0;
}

/*
 * RDMA write of LEN bytes through from's window, from PVO lpvo to PVO
 * rpvo at to's window through its rCxt; returns the sender's frame
 * status.  Every operation gets a larger tid than any before, so it is a
 * new one for both rCxts.
 */
static int rdma_write(struct ad *from, const struct ad *to, uint64_t lpvo, uint64_t rpvo)
{
	static uint32_t tid;
	uint32_t frames = 1u << from->win.o.send_log2;
	uint8_t *f = from->win.send + (from->produced & (frames - 1)) * WEFT_FRAME_SIZE;
	struct weft_send_line line;

	memset(&line, 0, sizeof(line));
	line.hdr.dest_node = to->node;
	line.hdr.dest_window = (uint16_t)to->win.o.window;
	line.hdr.type = WEFT_SF_RDMAW;
	line.rdma.local_pvo = lpvo;
	line.rdma.remote_pvo = rpvo;
	line.rdma.length = LEN;
	line.rdma.local_rcxt = from->r.rcxt;
	line.rdma.remote_rcxt = to->t.rcxt;
	line.rdma.remote_rcxt_key = to->t.key;
	line.rdma.tid = ++tid;
	memcpy(f, &line, sizeof(line));
	__sync_synchronize();
	from->win.db[WEFT_DB_START_TRANSMIT / 8] = 1;
	from->produced++;
	return wt_wait_done((volatile struct weft_send_line *)f);
}

/* Wait until dst holds LEN bytes of pattern c. */
static int dst_is(uint8_t c)
{
	time_t start = time(NULL);
	uint32_t i;

	for (;;) {
		for (i = 0; i < LEN && ((volatile uint8_t *)dst)[i] == c; i++)
			;
		if (i == LEN)
			return 1;
		if (time(NULL) - start > WAIT_S)
			return 0;
		sched_yield();
	}
}

/* The TCE key of pvo is in the "tce" debugfs file of adapter a. */
static int tce_has(const struct ad *a, uint64_t pvo)
{
	char path[256], want[32], *t;

	snprintf(path, sizeof(path), "/sys/kernel/debug/weft/%s/tce", a->name);
	snprintf(want, sizeof(want), "key 0x%06x",
		 (weft_pvo_key(pvo) << WEFT_PVO_TABLE_LEN) | weft_pvo_table(pvo));
	t = wt_read_file(path);
	return t && strstr(t, want);
}

/* The next event of a's fd is a protection event for TCE_KEY. */
static int protection_event(const struct ad *a)
{
	struct pollfd pfd = { .fd = a->fd, .events = POLLIN };
	struct weft_uevent ev;

	if (poll(&pfd, 1, WAIT_S * 1000) != 1 || read(a->fd, &ev, sizeof(ev)) != sizeof(ev))
		return 0;
	return ev.type == WEFT_UEV_PROTECTION && ev.reason == WEFT_R_TCE_KEY &&
	       ev.window == a->win.o.window;
}

/* A write of pattern c to the deregistered PVO rpvo, from 'from' to 'to':
 * dropped at 'to', dst keeps pattern keep. */
static void stale_write(struct ad *from, struct ad *to, uint64_t spvo, uint64_t rpvo,
			uint8_t c, uint8_t keep, const char *how)
{
	int st;

	memset(src, c, LEN);
	st = rdma_write(from, to, spvo, rpvo);
	OK(st >= 0, "%s: %s -> %s write to the old PVO 0x%" PRIx64 " sent (%s)", how, from->name,
	   to->name, rpvo, wt_reason(st));
	OK(protection_event(to), "%s: %s drops it: protection event TCE_KEY on its window", how,
	   to->name);
	OK(dst_is(keep), "%s: the buffer is untouched (still 0x%02x)", how, keep);
}

static int pci_driver_write(const char *file, const char *bdf)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/bus/pci/drivers/weft/%s", file);
	return wt_write_file(path, bdf);
}

/* Recovery of a[1], unbind and bind of a[1], with the source ms and a
 * target registered through a[0]. */
static void hot_paths(struct ad *a, const struct weft_ioc_reg_mr *ms, const char *path2)
{
	static uint8_t xb[LEN] __attribute__((aligned(4096)));
	char path[256], link[256], bdf[256];
	struct weft_ioc_reg_mr md, mx;
	ssize_t n;
	int st;

	OK(reg(&a[0], dst, &md) == 0 && reg(&a[1], xb, &mx) == 0,
	   "target registered through %s, another buffer through %s", a[0].name, a[1].name);
	snprintf(path, sizeof(path), "/sys/kernel/debug/weft/%s/recover", a[1].name);
	OK(wt_write_file(path, "1") == 0, "%s recovered", a[1].name);
	OK(dereg(&a[1], mx.handle) == -ESTALE && !tce_has(&a[0], mx.pvo) &&
	   !tce_has(&a[1], mx.pvo),
	   "the registration made through %s is stale (ESTALE) and gone from both tables",
	   a[1].name);
	OK(tce_has(&a[0], md.pvo) && tce_has(&a[1], md.pvo),
	   "the one made through %s is still in both tables", a[0].name);
	wt_close_window(a[1].fd, &a[1].win, "close the stale window");
	ad_window(&a[1]);
	memset(src, 0xf6, LEN);
	st = rdma_write(&a[1], &a[0], ms->pvo, md.pvo);
	OK(st == WEFT_R_OK && dst_is(0xf6),
	   "after the recovery %s uses the PVOs given by %s: %s, data landed", a[1].name,
	   a[0].name, wt_reason(st));

	snprintf(path, sizeof(path), "/sys/class/misc/%s/device", a[1].name);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		t_bail("readlink %s: %s", path, strerror(errno));
	link[n] = 0;
	snprintf(bdf, sizeof(bdf), "%s", strrchr(link, '/') ? strrchr(link, '/') + 1 : link);
	OK(pci_driver_write("unbind", bdf) == 0, "%s (%s) unbound", a[1].name, bdf);
	wt_unmap_window(&a[1].win);
	close(a[1].fd);
	memset(src, 0x17, LEN);
	st = rdma_write(&a[0], &a[0], ms->pvo, md.pvo);
	OK(st == WEFT_R_OK && dst_is(0x17) && tce_has(&a[0], md.pvo),
	   "%s alone still uses its registrations: %s, data landed", a[0].name, wt_reason(st));

	OK(pci_driver_write("bind", bdf) == 0, "%s bound again", bdf);
	ad_open(&a[1], path2);
	OK(tce_has(&a[1], md.pvo),
	   "the new %s's tables hold the registration made before it came", a[1].name);
	memset(src, 0x28, LEN);
	st = rdma_write(&a[1], &a[0], ms->pvo, md.pvo);
	OK(st == WEFT_R_OK && dst_is(0x28), "%s -> %s with the same PVOs: %s, data landed",
	   a[1].name, a[0].name, wt_reason(st));
	memset(src, 0x39, LEN);
	st = rdma_write(&a[0], &a[1], ms->pvo, md.pvo);
	OK(st == WEFT_R_OK && dst_is(0x39), "%s -> %s with the same PVOs: %s, data landed",
	   a[0].name, a[1].name, wt_reason(st));
	OK(dereg(&a[0], md.handle) == 0, "target deregistered");
}

int main(void)
{
	const char *d2 = getenv("WEFT_DEV2"), *path2;
	struct weft_ioc_reg_mr ms, md;
	struct wt_res base = wt_res();
	struct ad a[2];
	int st;

	ad_open(&a[0], wt_dev());
	path2 = d2 && *d2 ? d2 : "/dev/weft1";
	ad_open(&a[1], path2);
	OK(a[0].node != a[1].node, "%s (node id %u) and %s (node id %u)", a[0].name, a[0].node,
	   a[1].name, a[1].node);

	/* Registered once, through the first adapter. */
	OK(reg(&a[0], src, &ms) == 0 && reg(&a[0], dst, &md) == 0,
	   "source and target registered once, through %s", a[0].name);
	OK(tce_has(&a[0], md.pvo) && tce_has(&a[1], md.pvo),
	   "the target's TCEs (key of PVO 0x%llx) are in the tables of both adapters",
	   (unsigned long long)md.pvo);
	memset(src, 0xa1, LEN);
	memset(dst, 0, LEN);
	st = rdma_write(&a[1], &a[0], ms.pvo, md.pvo);
	OK(st == WEFT_R_OK && dst_is(0xa1),
	   "%s reads the source's PVO, %s writes the target's PVO: %s, data landed", a[1].name,
	   a[0].name, wt_reason(st));
	memset(src, 0xb2, LEN);
	st = rdma_write(&a[0], &a[1], ms.pvo, md.pvo);
	OK(st == WEFT_R_OK && dst_is(0xb2),
	   "%s reads the source's PVO, %s writes the target's PVO: %s, data landed", a[0].name,
	   a[1].name, wt_reason(st));

	/* Deregistered through the first adapter: gone on the second too. */
	OK(dereg(&a[0], md.handle) == 0, "target deregistered through %s", a[0].name);
	OK(!tce_has(&a[0], md.pvo) && !tce_has(&a[1], md.pvo),
	   "its TCEs are zeroed in the tables of both adapters");
	stale_write(&a[0], &a[1], ms.pvo, md.pvo, 0xc3, 0xb2, "dereg through the first");

	/* Registered and deregistered through the second adapter. */
	OK(reg(&a[1], dst, &md) == 0, "target registered again, through %s", a[1].name);
	memset(src, 0xd4, LEN);
	st = rdma_write(&a[1], &a[0], ms.pvo, md.pvo);
	OK(st == WEFT_R_OK && dst_is(0xd4), "%s writes the PVO %s gave: %s, data landed",
	   a[0].name, a[1].name, wt_reason(st));
	OK(dereg(&a[1], md.handle) == 0, "target deregistered through %s", a[1].name);
	stale_write(&a[1], &a[0], ms.pvo, md.pvo, 0xe5, 0xd4, "dereg through the second");

	hot_paths(a, &ms, path2);

	OK(dereg(&a[0], ms.handle) == 0, "source deregistered");
	wt_close_window(a[0].fd, &a[0].win, "close the first adapter's window");
	wt_close_window(a[1].fd, &a[1].win, "close the second adapter's window");
	close(a[0].fd);
	close(a[1].fd);
	{
		struct wt_res now = wt_res();

		OK(wt_res_equal(&now, &base), "everything released");
	}
	return t_done();
}
