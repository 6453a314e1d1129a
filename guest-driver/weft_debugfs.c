// SPDX-License-Identifier: GPL-2.0
/*
 * weft.ko debugfs: /sys/kernel/debug/weft/
 *   driver            module-wide resource counters (leak checks)
 *   weftN/regs        privileged registers
 *   weftN/lmt         every window's LMT
 *   weftN/rcxt        rCxts rcxt_first .. rcxt_first + rcxt_count - 1
 *   weftN/rcxt_first, weftN/rcxt_count  the range shown (writable)
 *   weftN/tce         job slots and the TCEs in use
 *   weftN/counters    adapter counters by name
 *   weftN/match       header matching: registers, every live queue and its
 *                     entries (QUERY_HQ), tag-matching SRQs' tags included
 *   weftN/state       driver state of this adapter (windows, rCxt pool, irqs)
 *   weftN/recover     write 1: adapter recovery
 *   weftN/cnt         counter objects and exposures, driver and adapter view
 */
#include <linux/debugfs.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

#include "weft_drv.h"
#include "weft_verbs.h"
#include "weft/match.h"
#include "weft/names.h"

#define WEFT_DBG_RCXT_MAX	4096

static struct dentry *weft_dbg_root;

static int weft_driver_show(struct seq_file *m, void *v)
{
	seq_printf(m, "devices %d\n", atomic_read(&weft_res.devices));
	seq_printf(m, "contexts %d\n", atomic_read(&weft_res.ctxs));
	seq_printf(m, "windows_open %d\n", atomic_read(&weft_res.windows));
	seq_printf(m, "windows_zombie %d\n", atomic_read(&weft_res.windows_zombie));
	seq_printf(m, "rcxts_held %d\n", atomic_read(&weft_res.rcxts));
	seq_printf(m, "mrs %d\n", atomic_read(&weft_res.mrs));
	seq_printf(m, "pages_pinned %lld\n", atomic64_read(&weft_res.pages_pinned));
	seq_printf(m, "coherent_bytes %lld\n", atomic64_read(&weft_res.coherent_bytes));
	seq_printf(m, "recoveries %lld\n", atomic64_read(&weft_res.recoveries));
	seq_printf(m, "events %lld\n", atomic64_read(&weft_res.events));
	seq_printf(m, "uevents_dropped %lld\n", atomic64_read(&weft_res.uevents_dropped));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(weft_driver);

static int weft_regs_show(struct seq_file *m, void *v)
{
	struct weft_dev *wdev = m->private;
	u32 off, t;

	/* Write-only registers are commands: reading them is a guest error. */
	for (off = 0; off < WEFT_REG_TCE_BASE_OFF; off += 8)
		if (weft_reg_name(off) && weft_reg_access(off) != 'W')
			seq_printf(m, "%-18s 0x%03x 0x%016llx\n", weft_reg_name(off), off,
				   weft_rd(wdev, off));
	for (t = 0; t < wdev->nr_tce_tables; t++)
		seq_printf(m, "TCE%-2u base 0x%016llx cfg 0x%016llx owner 0x%016llx\n", t,
			   weft_rd(wdev, WEFT_REG_TCE_BASE(t)),
			   weft_rd(wdev, WEFT_REG_TCE_CFG(t)),
			   weft_rd(wdev, WEFT_REG_TCE_OWNER(t)));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(weft_regs);

static void weft_sram_read(struct weft_dev *wdev, u64 off, void *buf, size_t len)
{
	u64 *q = buf;
	size_t i;

	for (i = 0; i < len / 8; i++)
		q[i] = readq(wdev->sram + off + 8 * i);
}

static int weft_lmt_show(struct seq_file *m, void *v)
{
	struct weft_dev *wdev = m->private;
	struct weft_lmt l;
	u32 w;

	for (w = 0; w < wdev->nr_windows; w++) {
		weft_sram_read(wdev, WEFT_SRAM_LMT_OFF(w), &l, sizeof(l));
		seq_printf(m, "LMT %u: state %u id %u key %u vect %u fatal %s rcxt 0x%x flags 0x%x\n",
			   w, l.window_state, l.window_id, l.window_key, l.int_vect_data,
			   weft_reason_name(l.fatal_reason), l.rcxt_id, l.flags);
		seq_printf(m, "  recv 0x%llx size %u mask 0x%x cnt %llu avail %u thr %u dropped %llu\n",
			   l.recv_fifo_real_address, l.recv_fifo_size, l.recv_mask,
			   l.recv_current_cnt, l.recv_fifo_avail_slots,
			   l.recv_int_threshold, l.recv_dropped);
		seq_printf(m, "  send 0x%llx size %u mask 0x%x cnt %llu ready %u thr %u bcast %u\n",
			   l.send_fifo_real_address, l.send_fifo_size, l.send_mask,
			   l.send_current_cnt, l.send_fifo_ready_slots,
			   l.send_int_threshold_hi, l.config_parm_bcast);
		seq_printf(m, "  quanta %u/%u rdma head 0x%x tail 0x%x count %u cur 0x%x progress %llu\n",
			   l.send_quanta_value, l.send_quanta_size, l.rcxt_head,
			   l.rcxt_tail, l.rcxt_count, l.send_rcxt, l.send_progress);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(weft_lmt);

static int weft_rcxt_show(struct seq_file *m, void *v)
{
	struct weft_dev *wdev = m->private;
	u32 r, first = READ_ONCE(wdev->dbg_rcxt_first);
	u32 count = min_t(u32, READ_ONCE(wdev->dbg_rcxt_count), WEFT_DBG_RCXT_MAX);
	struct weft_rcxt c;

	for (r = first; r < wdev->nr_rcxt && r - first < count; r++) {
		weft_sram_read(wdev, WEFT_SRAM_RCXT_OFF(r), &c, sizeof(c));
		seq_printf(m, "rCxt %u: assigned %u win %u key %u state %u dir %u type %u tid %u status %s\n",
			   r, c.rcxt_assigned, c.local_window, c.rcxt_key, c.rcxt_state,
			   c.rcxt_direction, c.pkt_type, c.tid,
			   weft_reason_name(c.complete_status));
		seq_printf(m, "  peer %u/%u left %llu total %llu next 0x%x lpvo 0x%llx rpvo 0x%llx drv-owner %d\n",
			   c.lid, c.remote_window, c.data_to_snd_rcv, c.total_rdma_size,
			   c.next, c.local_pvo, c.remote_pvo,
			   (int)wdev->rcxt_win[r] - 1);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(weft_rcxt);

static int weft_tce_show(struct seq_file *m, void *v)
{
	weft_tce_show_dev(m, m->private);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(weft_tce);

static int weft_counters_show(struct seq_file *m, void *v)
{
	struct weft_dev *wdev = m->private;
	u32 c;

	for (c = 0; c < WEFT_CNT__COUNT; c++)
		seq_printf(m, "%s%s %llu\n", c >= WEFT_CNT_DROP_BASE ? "DROP_" : "",
			   weft_counter_name(c), weft_rd(wdev, WEFT_REG_CNT(c)));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(weft_counters);

#define WEFT_DBG_HQ_BYTES	(WEFT_MATCH_QUERY_MAX * sizeof(struct weft_match_dump))

static const char *weft_mdump_kind(u8 kind)
{
	switch (kind) {
	case WEFT_MDUMP_UMB:
		return "umb";
	case WEFT_MDUMP_HOST:
		return "host";
	case WEFT_MDUMP_RNDV:
		return "rndv";
	default:
		return "?";
	}
}

static void weft_mdump_show(struct seq_file *m, const char *list, u32 n,
			    const struct weft_match_dump *d)
{
	switch (d->kind) {
	case WEFT_MDUMP_TAG:
		seq_printf(m, "  tag %u: tag 0x%016llx mask 0x%016llx len %u lkey 0x%x %s\n",
			   d->id, d->match, d->ignore, d->len, d->aux,
			   d->flags & WEFT_MDUMPF_INACTIVE ? "inactive" : "active");
		break;
	case WEFT_MDUMP_POSTED:
		seq_printf(m, "  %s %u: match 0x%016llx ignore 0x%016llx id %u len %u src 0x%x%s\n",
			   list, n, d->match, d->ignore, d->id, d->len, d->node,
			   d->flags & WEFT_MDUMPF_MULTI ? " multi" : "");
		break;
	default:
		seq_printf(m, "  %s %u: match 0x%016llx seq %u len %u src %u %s", list, n,
			   d->match, d->id, d->len, d->node, weft_mdump_kind(d->kind));
		if (d->kind == WEFT_MDUMP_RNDV)
			seq_printf(m, " slot %u", d->aux);
		seq_putc(m, '\n');
		break;
	}
}

/*
 * One list of queue q with QUERY_HQ (hw-spec 17.4): the adapter writes the
 * entries at dma before the command returns.
 */
static int weft_hq_query(struct weft_dev *wdev, u32 q, bool ueq, dma_addr_t dma,
			 struct weft_vcmd_resp *r)
{
	struct weft_vcmd cmd = { .op = WEFT_VCMD_QUERY_HQ, .handle = q };

	cmd.u.hq.addr = dma;
	cmd.u.hq.len = WEFT_DBG_HQ_BYTES;
	cmd.u.hq.flags = ueq ? WEFT_HQF_UEQ : 0;
	memset(r, 0, sizeof(*r));
	return weft_vcmd(wdev, &cmd, r);
}

static void weft_match_list_show(struct seq_file *m, const char *list, int ret,
				 const struct weft_vcmd_resp *r,
				 const struct weft_match_dump *buf)
{
	struct weft_match_dump d;
	u32 n, i;

	if (ret) {
		seq_printf(m, "  %s: QUERY_HQ failed: %d (%s)\n", list, ret,
			   weft_reason_name(r->reason));
		return;
	}
	n = min_t(u64, r->out[0], WEFT_MATCH_QUERY_MAX);
	for (i = 0; i < n; i++) {
		memcpy(&d, &buf[i], sizeof(d));
		weft_mdump_show(m, list, i, &d);
	}
	if (r->out[1] > n)
		seq_printf(m, "  %s: %llu more not shown\n", list, r->out[1] - n);
}

/*
 * Header matching (docs/matching.md): the engine's registers and every
 * queue that is enabled or holds entries, then its entries: posted
 * receives and unexpected headers, or the tags of the tag-matching SRQ
 * the queue is lent to ("tm").
 */
static int weft_match_show(struct seq_file *m, void *v)
{
	struct weft_dev *wdev = m->private;
	u64 caps = weft_rd(wdev, WEFT_REG_MATCH_CAPS);
	struct weft_match_dump *buf;
	struct weft_vcmd_resp r;
	dma_addr_t dma;
	int ret = 0;
	u32 q;

	seq_printf(m, "queues %u matchers %u store %u free %llu umb_free %llu pool %llu\n",
		   WEFT_MATCH_CAPS_QUEUES(caps), WEFT_MATCH_CAPS_MATCHERS(caps),
		   WEFT_MATCH_CAPS_STORE(caps), weft_rd(wdev, WEFT_REG_MATCH_STORE_FREE),
		   weft_rd(wdev, WEFT_REG_MATCH_UMB_FREE), weft_rd(wdev, WEFT_REG_MATCH_POOL_FREE));
	seq_printf(m, "cq base 0x%llx log2 %llu prod %llu cons %llu stopped 0x%llx 0x%llx\n",
		   weft_rd(wdev, WEFT_REG_MATCH_CQ_BASE), weft_rd(wdev, WEFT_REG_MATCH_CQ_SIZE),
		   weft_rd(wdev, WEFT_REG_MATCH_CQ_PROD), weft_rd(wdev, WEFT_REG_MATCH_CQ_CONS),
		   weft_rd(wdev, WEFT_REG_MATCH_STOPPED0), weft_rd(wdev, WEFT_REG_MATCH_STOPPED1));
	buf = weft_coherent_alloc(wdev, WEFT_DBG_HQ_BYTES, &dma);
	if (!buf)
		seq_puts(m, "no memory for the queue entries\n");
	for (q = 0; q < WEFT_MATCH_NR_QUEUES; q++) {
		u64 cfg = weft_rd(wdev, WEFT_REG_MATCH_QCFG(q));
		u64 st = weft_rd(wdev, WEFT_REG_MATCH_QSTAT(q));

		if (!(cfg & WEFT_QCFG_ENABLE) && !WEFT_QSTAT_PRQ(st) && !WEFT_QSTAT_UEQ(st))
			continue;
		if (buf)
			ret = weft_hq_query(wdev, q, false, dma, &r);
		seq_printf(m, "queue %u: cfg 0x%llx prq %u ueq %u seq %u%s%s%s\n", q, cfg,
			   WEFT_QSTAT_PRQ(st), WEFT_QSTAT_UEQ(st), WEFT_QSTAT_SEQ(st),
			   st & WEFT_QSTAT_STOPPED ? " stopped" : "",
			   st & WEFT_QSTAT_SYNC ? " sync" : "",
			   buf && !ret && (r.out[2] & WEFT_HQS_TM) ? " tm" : "");
		if (!buf)
			continue;
		weft_match_list_show(m, "prq", ret, &r, buf);
		if (ret || (r.out[2] & WEFT_HQS_TM))
			continue;
		ret = weft_hq_query(wdev, q, true, dma, &r);
		weft_match_list_show(m, "ueq", ret, &r, buf);
	}
	if (buf)
		weft_coherent_free(wdev, WEFT_DBG_HQ_BYTES, buf, dma);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(weft_match);

static int weft_state_show(struct seq_file *m, void *v)
{
	struct weft_dev *wdev = m->private;
	struct weft_window *win;
	u32 w, h;

	mutex_lock(&wdev->lock);
	seq_printf(m, "node %u windows %u rcxts %u handlers %u recovery_count %u\n",
		   wdev->node_id, wdev->nr_windows, wdev->nr_rcxt, wdev->nr_handlers,
		   wdev->recovery_count);
	seq_printf(m, "rcxt_free %u rcxt_head %u evq_entries %u evq_cons %llu evq_stale %llu\n",
		   wdev->rcxt_ring.count, wdev->rcxt_ring.head, wdev->evq_entries, wdev->evq_cons,
		   wdev->evq_stale);
	weft_keys_show(m);
	seq_printf(m, "closes %llu closes_waited %llu close_snapshot 0x%llx\n",
		   wdev->closes, wdev->closes_waited, wdev->close_snapshot);
	for (h = 0; h < wdev->nr_handlers; h++)
		seq_printf(m, "handler %u irq %d interrupts %llu\n", h, wdev->hdl[h].irq,
			   wdev->hdl[h].count);
	for (w = 0; w < wdev->nr_windows; w++) {
		win = wdev->win[w];
		if (!win)
			continue;
		seq_printf(m, "window %u: job %u state %d rcxts %u send %zu recv %zu%s\n",
			   w, win->job_id, win->state, win->nr_rcxt, win->send_size,
			   win->recv_size, win->ctx ? "" : " zombie");
	}
	mutex_unlock(&wdev->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(weft_state);

/* The trigger files accept only a true boolean ("1", "y", "on"). */
static int weft_dbg_trigger(const char __user *buf, size_t count)
{
	bool v;
	int ret;

	ret = kstrtobool_from_user(buf, count, &v);
	if (ret)
		return ret;
	return v ? 0 : -EINVAL;
}

static ssize_t weft_recover_write(struct file *file, const char __user *buf,
				  size_t count, loff_t *ppos)
{
	struct weft_dev *wdev = file->private_data;
	int ret;

	ret = weft_dbg_trigger(buf, count);
	if (ret)
		return ret;
	ret = weft_recover(wdev, "requested through debugfs");
	return ret ? ret : count;
}

static const struct file_operations weft_recover_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = weft_recover_write,
};

/*
 * Inject an adapter-internal fatal error (DEBUG_INJECT, docs/hw-spec.md
 * 9.1).  The driver does not recover here: the adapter raises
 * STATUS.FATAL and an interrupt, and weft_irq starts the recovery.
 */
static ssize_t weft_inject_fatal_write(struct file *file, const char __user *buf,
				       size_t count, loff_t *ppos)
{
	struct weft_dev *wdev = file->private_data;
	int ret;

	ret = weft_dbg_trigger(buf, count);
	if (ret)
		return ret;
	dev_warn(&wdev->pdev->dev, "injecting an adapter fatal error through debugfs\n");
	weft_wr(wdev, WEFT_REG_DEBUG_INJECT, WEFT_INJECT_FATAL);
	return count;
}

static const struct file_operations weft_inject_fatal_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = weft_inject_fatal_write,
};

static int weft_cnt_dbg_show(struct seq_file *m, void *v)
{
	return weft_cnt_show(m, m->private);
}
DEFINE_SHOW_ATTRIBUTE(weft_cnt_dbg);

void weft_debugfs_add(struct weft_dev *wdev)
{
	char name[16];

	if (!weft_dbg_root)
		return;
	snprintf(name, sizeof(name), WEFT_DRV_NAME "%d", wdev->id);
	wdev->dbg = debugfs_create_dir(name, weft_dbg_root);
	wdev->dbg_rcxt_count = 16;
	debugfs_create_file("regs", 0400, wdev->dbg, wdev, &weft_regs_fops);
	debugfs_create_file("lmt", 0400, wdev->dbg, wdev, &weft_lmt_fops);
	debugfs_create_file("rcxt", 0400, wdev->dbg, wdev, &weft_rcxt_fops);
	debugfs_create_u32("rcxt_first", 0600, wdev->dbg, &wdev->dbg_rcxt_first);
	debugfs_create_u32("rcxt_count", 0600, wdev->dbg, &wdev->dbg_rcxt_count);
	debugfs_create_file("tce", 0400, wdev->dbg, wdev, &weft_tce_fops);
	debugfs_create_file("counters", 0400, wdev->dbg, wdev, &weft_counters_fops);
	debugfs_create_file("match", 0400, wdev->dbg, wdev, &weft_match_fops);
	debugfs_create_file("state", 0400, wdev->dbg, wdev, &weft_state_fops);
	debugfs_create_file("recover", 0200, wdev->dbg, wdev, &weft_recover_fops);
	debugfs_create_file("inject_fatal", 0200, wdev->dbg, wdev, &weft_inject_fatal_fops);
	debugfs_create_file("cnt", 0400, wdev->dbg, wdev, &weft_cnt_dbg_fops);
}

void weft_debugfs_del(struct weft_dev *wdev)
{
	debugfs_remove_recursive(wdev->dbg);
	wdev->dbg = NULL;
}

void weft_debugfs_init(void)
{
	weft_dbg_root = debugfs_create_dir(WEFT_DRV_NAME, NULL);
	if (IS_ERR(weft_dbg_root)) {
		weft_dbg_root = NULL;
		return;
	}
	debugfs_create_file("driver", 0444, weft_dbg_root, NULL, &weft_driver_fops);
}

void weft_debugfs_exit(void)
{
	debugfs_remove_recursive(weft_dbg_root);
	weft_dbg_root = NULL;
}
