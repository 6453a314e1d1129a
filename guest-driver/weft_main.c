// SPDX-License-Identifier: GPL-2.0
/*
 * weft.ko: PCI probe and remove, interrupts and the event queue,
 * privileged commands and adapter recovery.
 */
#include <linux/bitops.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/iopoll.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "weft_drv.h"
#include "weft_verbs.h"

unsigned int weft_max_fifo_log2 = 12;
module_param_named(max_fifo_log2, weft_max_fifo_log2, uint, 0444);
MODULE_PARM_DESC(max_fifo_log2, "largest FIFO a window may ask for, log2(2 KiB frames), 1..15 (default 12)");

unsigned int weft_evq_log2 = 10;
module_param_named(evq_log2, weft_evq_log2, uint, 0444);
MODULE_PARM_DESC(evq_log2, "event queue entries, log2, 4..16 (default 10)");

unsigned int weft_tce_4k_entries = 16384;
module_param_named(tce_4k_entries, weft_tce_4k_entries, uint, 0444);
MODULE_PARM_DESC(tce_4k_entries, "TCEs per 4 KiB-page table (default 16384 = 64 MiB)");

unsigned int weft_tce_16m_entries = 64;
module_param_named(tce_16m_entries, weft_tce_16m_entries, uint, 0444);
MODULE_PARM_DESC(tce_16m_entries, "TCEs per 16 MiB-page table (default 64 = 1 GiB)");

unsigned int weft_tce_64k_tables = WEFT_SLOT_TABLES_64K_DEF;
module_param_named(tce_64k_tables, weft_tce_64k_tables, uint, 0444);
MODULE_PARM_DESC(tce_64k_tables, "16 MiB-page tables of each job slot that hold 64 KiB pages instead, 0..3 (default 1)");

unsigned int weft_tce_64k_entries = 1024;
module_param_named(tce_64k_entries, weft_tce_64k_entries, uint, 0444);
MODULE_PARM_DESC(tce_64k_entries, "TCEs per 64 KiB-page table (default 1024 = 64 MiB)");

bool weft_rereg_on_fatal;
module_param_named(rereg_on_fatal, weft_rereg_on_fatal, bool, 0444);
MODULE_PARM_DESC(rereg_on_fatal, "re-register on MP_FATAL: rCxt key 0, a stale PVO on incoming data is a window fatal error (default off)");

static unsigned int weft_handlers;
module_param_named(handlers, weft_handlers, uint, 0444);
MODULE_PARM_DESC(handlers, "interrupt handlers (MSI-X vectors) to use, 0 = all the adapter offers");

static unsigned int weft_irq_mod_us;
module_param_named(irq_mod_us, weft_irq_mod_us, uint, 0444);
MODULE_PARM_DESC(irq_mod_us, "interrupt moderation: each handler's interrupts at least this many microseconds apart, 0..1000, 0 = off (default 0)");

static unsigned int weft_irq_mod_count = 32;
module_param_named(irq_mod_count, weft_irq_mod_count, uint, 0444);
MODULE_PARM_DESC(irq_mod_count, "interrupt moderation: an interrupt without waiting once this many events wait, 0..65535, 0 = no count (default 32)");

struct weft_res weft_res;

static DEFINE_IDA(weft_ida);

void *weft_coherent_alloc(struct weft_dev *wdev, size_t size, dma_addr_t *dma)
{
	void *va = dma_alloc_coherent(&wdev->pdev->dev, size, dma, GFP_KERNEL);

	if (!va)
		return NULL;
	/* Never hand stale kernel data to the device or to user space. */
	memset(va, 0, size);
	atomic64_add(size, &weft_res.coherent_bytes);
	return va;
}

void weft_coherent_free(struct weft_dev *wdev, size_t size, void *va,
			dma_addr_t dma)
{
	if (!va)
		return;
	dma_free_coherent(&wdev->pdev->dev, size, va, dma);
	atomic64_sub(size, &weft_res.coherent_bytes);
}

static bool weft_dev_broken(struct weft_dev *wdev)
{
	u64 st = weft_rd(wdev, WEFT_REG_STATUS);

	return st == ~0ull || (st & WEFT_STATUS_FATAL);
}

/*
 * Issue a privileged command and wait until the command tasks are idle,
 * then return the command status as an errno.  Called with wdev->lock.
 */
int weft_cmd(struct weft_dev *wdev, u32 reg, u64 val)
{
	const u64 cmd_tasks = GENMASK_ULL(WEFT_CMD_TASK_BASE + WEFT_NR_CMD_TASKS - 1,
					  WEFT_CMD_TASK_BASE);
	u64 live, st;
	int ret;

	lockdep_assert_held(&wdev->lock);
	weft_wr(wdev, reg, val);
	ret = readq_poll_timeout(wdev->regs + WEFT_REG_LIVE_TASK_VIEW, live,
				 !(live & cmd_tasks) || live == ~0ull, 10,
				 WEFT_CMD_TIMEOUT_MS * 1000);
	if (ret || live == ~0ull) {
		dev_err(&wdev->pdev->dev, "command 0x%x (0x%llx) never completed\n",
			reg, val);
		if (!wdev->recovering)
			schedule_work(&wdev->recover_work);
		return -EIO;
	}
	st = weft_rd(wdev, WEFT_REG_CMD_STATUS);
	dev_dbg(&wdev->pdev->dev, "cmd 0x%x val 0x%llx status %llu\n", reg, val, st);
	switch (st) {
	case WEFT_CMD_OK:
		return 0;
	case WEFT_CMD_EBUSY:
		return -EBUSY;
	case WEFT_CMD_EINVAL:
	case WEFT_CMD_EBADLMT:
		return -EINVAL;
	default:
		return -EIO;
	}
}

/* Poll Read Snapshot until it returns 0 (seed section 1.5.15). */
int weft_wait_snapshot(struct weft_dev *wdev, unsigned int timeout_ms)
{
	u64 snap;
	int ret;

	ret = readq_poll_timeout(wdev->regs + WEFT_REG_SNAPSHOT_VIEW, snap,
				 !snap || snap == ~0ull, 20,
				 (u64)timeout_ms * 1000);
	if (!ret && snap == ~0ull)
		ret = -EIO;
	if (ret)
		dev_warn(&wdev->pdev->dev, "Snapshot View not clear after %u ms (0x%llx)\n",
			 timeout_ms, snap);
	return ret;
}

/* ---- interrupts and events -------------------------------------------- */

static void weft_dispatch(struct weft_dev *wdev, const struct weft_event *ev)
{
	struct weft_window *win;
	u32 type = 0;

	dev_dbg(&wdev->pdev->dev, "event seq %u type %u win %u rcxt %u reason %u info 0x%llx\n",
		ev->seq, ev->type, ev->window, ev->rcxt, ev->reason, ev->info);
	if (weft_net_event(wdev, ev) || weft_verbs_event(wdev, ev) || weft_cnt_event(wdev, ev))
		return;
	switch (ev->type) {
	case WEFT_EV_RECV_THRESHOLD:
		type = WEFT_UEV_RECV;
		break;
	case WEFT_EV_SEND_THRESHOLD:
		type = WEFT_UEV_SEND;
		break;
	case WEFT_EV_WINDOW_FATAL:
		type = WEFT_UEV_FATAL;
		break;
	case WEFT_EV_PROTECTION:
		type = WEFT_UEV_PROTECTION;
		break;
	case WEFT_EV_SNAPSHOT_CLEAR:
		return;
	case WEFT_EV_LINK:
		dev_info(&wdev->pdev->dev, "link %s\n", ev->info ? "up" : "down");
		return;
	case WEFT_EV_ADAPTER_FATAL:
		/* STATUS.FATAL: weft_irq schedules the recovery. */
		dev_err_ratelimited(&wdev->pdev->dev, "adapter fatal error\n");
		return;
	default:
		dev_warn_ratelimited(&wdev->pdev->dev, "unknown event type %u\n",
				     ev->type);
		return;
	}
	if (ev->window >= wdev->nr_windows)
		return;
	win = wdev->win[ev->window];
	if (!win || !win->ctx)
		return;
	if (type == WEFT_UEV_FATAL && win->state == WEFT_WS_OPEN) {
		win->state = WEFT_WS_FATAL;
		dev_info_ratelimited(&wdev->pdev->dev,
				     "window %u fatal error: %u (rCxt %u)\n",
				     ev->window, ev->reason, ev->rcxt);
	}
	weft_ctx_event(win->ctx, type, ev->window, ev->rcxt, ev->reason, ev->info);
}

static void weft_drain_evq(struct weft_dev *wdev)
{
	struct weft_event ev;
	u64 prod;
	u32 n = 0;

	prod = weft_rd(wdev, WEFT_REG_EVQ_PROD);
	if (prod == ~0ull)
		return;
	if (prod - wdev->evq_cons > wdev->evq_entries) {
		/* Overflowed: the oldest entries were overwritten. */
		dev_warn_ratelimited(&wdev->pdev->dev, "event queue overflow (%llu lost)\n",
				     prod - wdev->evq_cons - wdev->evq_entries);
		wdev->evq_cons = prod - wdev->evq_entries;
	}
	dma_rmb();
	while (wdev->evq_cons != prod) {
		memcpy(&ev, &wdev->evq[wdev->evq_cons & (wdev->evq_entries - 1)],
		       sizeof(ev));
		if (ev.seq != (u32)(wdev->evq_cons + 1)) {
			wdev->evq_stale++;
			dev_warn_ratelimited(&wdev->pdev->dev, "stale event at %llu (seq %u)\n",
					     wdev->evq_cons, ev.seq);
		} else {
			weft_dispatch(wdev, &ev);
			n++;
		}
		wdev->evq_cons++;
	}
	atomic64_add(n, &weft_res.events);
	weft_wr(wdev, WEFT_REG_EVQ_CONS, wdev->evq_cons);
}

static irqreturn_t weft_irq(int irq, void *data)
{
	struct weft_handler *hdl = data;
	struct weft_dev *wdev = hdl->wdev;
	unsigned long flags;

	spin_lock_irqsave(&wdev->evlock, flags);
	hdl->count++;
	weft_drain_evq(wdev);
	spin_unlock_irqrestore(&wdev->evlock, flags);
	if (weft_dev_broken(wdev)) {
		dev_err_ratelimited(&wdev->pdev->dev, "adapter reports an error\n");
		schedule_work(&wdev->recover_work);
	}
	/* Not ready as soon as presented; ready again now (seed 1.5.14). */
	weft_wr(wdev, WEFT_REG_INT_READY, hdl->idx);
	return IRQ_HANDLED;
}

/* ---- adapter set-up ----------------------------------------------------- */

/*
 * INT_MOD from the module parameters, clamped to what the adapter takes
 * (docs/hw-spec.md 8.1): a count needs a period.
 */
static u64 weft_int_mod(void)
{
	u32 us = min_t(u32, weft_irq_mod_us, WEFT_INT_MOD_MAX_US);
	u32 count = min_t(u32, weft_irq_mod_count, 0xffff);

	return us ? WEFT_INT_MOD(us, count) : 0;
}

/*
 * Program the interrupt handlers, the event queue and the TCE tables.
 * Used at probe and after recovery.  Called with wdev->lock held (or
 * before the device is visible).
 */
void weft_hw_setup(struct weft_dev *wdev)
{
	unsigned long flags;
	u32 h;

	spin_lock_irqsave(&wdev->evlock, flags);
	weft_wr(wdev, WEFT_REG_EVQ_SIZE, 0);
	memset(wdev->evq, 0, wdev->evq_entries * sizeof(*wdev->evq));
	weft_wr(wdev, WEFT_REG_INT_CONFIG, wdev->nr_handlers);
	for (h = 0; h < wdev->nr_handlers; h++)
		weft_wr(wdev, WEFT_REG_INT_MOD(h), weft_int_mod());
	weft_wr(wdev, WEFT_REG_EVQ_BASE, wdev->evq_dma);
	wdev->evq_cons = weft_rd(wdev, WEFT_REG_EVQ_PROD);
	if (wdev->evq_cons == ~0ull)
		wdev->evq_cons = 0;
	weft_wr(wdev, WEFT_REG_EVQ_CONS, wdev->evq_cons);
	weft_wr(wdev, WEFT_REG_EVQ_SIZE, ilog2(wdev->evq_entries));
	spin_unlock_irqrestore(&wdev->evlock, flags);
	weft_slots_program(wdev);
	for (h = 0; h < wdev->nr_handlers; h++)
		weft_wr(wdev, WEFT_REG_INT_READY, h);
}

static int weft_wait_ready(struct weft_dev *wdev)
{
	u64 st;

	return readq_poll_timeout(wdev->regs + WEFT_REG_STATUS, st,
				  st != ~0ull && (st & WEFT_STATUS_READY) &&
				  !(st & WEFT_STATUS_FATAL),
				  10, WEFT_CMD_TIMEOUT_MS * 1000);
}

static int weft_hw_reset(struct weft_dev *wdev)
{
	weft_wr(wdev, WEFT_REG_RESET, WEFT_RESET_MAGIC);
	if (weft_wait_ready(wdev)) {
		dev_err(&wdev->pdev->dev, "adapter not ready after reset (status 0x%llx)\n",
			weft_rd(wdev, WEFT_REG_STATUS));
		return -EIO;
	}
	return 0;
}

/* ---- adapter recovery --------------------------------------------------- */

/*
 * Adapter recovery: windows, rCxts and registrations are invalidated,
 * the adapter bumps its recovery count (the key of every rCxt acquired
 * from now on, so stale packets are discarded) and every user is told
 * with WEFT_UEV_RECOVERY.
 */
int weft_recover(struct weft_dev *wdev, const char *why)
{
	struct weft_window *win, *tmp;
	struct weft_ctx *ctx;
	u64 cnt;

	mutex_lock(&wdev->lock);
	if (wdev->dead) {
		mutex_unlock(&wdev->lock);
		return -ENODEV;
	}
	dev_warn(&wdev->pdev->dev, "adapter recovery: %s\n", why);
	wdev->recovering = true;
	weft_verbs_recover(wdev, true);
	weft_net_recover_begin(wdev);
	/*
	 * The adapter forgets every window and rCxt.  User mappings stay:
	 * the doorbell page of an invalid window is discarded by the adapter
	 * (and reads STATE INVALID), the FIFO pages stay allocated, so a
	 * process still touching them gets no signal.  The window number is
	 * kept by its owner until it closes the window or the fd.
	 */
	list_for_each_entry(ctx, &wdev->ctxs, node) {
		list_for_each_entry(win, &ctx->windows, node) {
			if (win->state == WEFT_WS_STALE)
				continue;
			weft_cmd(wdev, WEFT_REG_CMD_CLOSE_WINDOW, win->idx);
			weft_rcxt_release_window(wdev, win, true);
		}
	}
	weft_wr(wdev, WEFT_REG_RECOVER, WEFT_RECOVER_MAGIC);
	if (weft_wait_ready(wdev)) {
		dev_err(&wdev->pdev->dev, "adapter still failing after recovery, resetting it\n");
		weft_hw_reset(wdev);
	}
	weft_wait_snapshot(wdev, WEFT_CMD_TIMEOUT_MS);
	cnt = weft_rd(wdev, WEFT_REG_RECOVERY_COUNT);
	wdev->recovery_count = cnt;

	list_for_each_entry(ctx, &wdev->ctxs, node) {
		list_for_each_entry_safe(win, tmp, &ctx->windows, node) {
			if (win->state == WEFT_WS_CLOSING) {
				weft_window_free(win);
				continue;
			}
			win->state = WEFT_WS_STALE;
		}
		weft_mr_release_all(ctx, true);
	}
	weft_cnt_recover(wdev);
	list_for_each_entry_safe(win, tmp, &wdev->zombies, node)
		weft_window_free(win);
	weft_hw_setup(wdev);
	weft_net_recover_end(wdev);
	weft_verbs_recover(wdev, false);
	list_for_each_entry(ctx, &wdev->ctxs, node)
		weft_ctx_event(ctx, WEFT_UEV_RECOVERY, ~0u, WEFT_RCXT_NONE,
			       WEFT_R_RESET, cnt);
	wdev->recovering = false;
	atomic64_inc(&weft_res.recoveries);
	dev_info(&wdev->pdev->dev, "adapter recovered, recovery count %llu\n", cnt);
	mutex_unlock(&wdev->lock);
	return 0;
}

static void weft_recover_work(struct work_struct *work)
{
	struct weft_dev *wdev = container_of(work, struct weft_dev, recover_work);

	weft_recover(wdev, "device error");
}

static ssize_t recover_store(struct device *dev, struct device_attribute *attr,
			     const char *buf, size_t count)
{
	struct weft_dev *wdev = dev_get_drvdata(dev);
	bool v;
	int ret;

	if (!wdev)
		return -ENODEV;
	ret = kstrtobool(buf, &v);
	if (ret)
		return ret;
	if (!v)
		return -EINVAL;
	ret = weft_recover(wdev, "requested through sysfs");
	return ret ? ret : count;
}
static DEVICE_ATTR_WO(recover);

static ssize_t recovery_count_show(struct device *dev,
				   struct device_attribute *attr, char *buf)
{
	struct weft_dev *wdev = dev_get_drvdata(dev);

	if (!wdev)
		return -ENODEV;
	return sysfs_emit(buf, "%u\n", wdev->recovery_count);
}
static DEVICE_ATTR_RO(recovery_count);

static struct attribute *weft_attrs[] = {
	&dev_attr_recover.attr,
	&dev_attr_recovery_count.attr,
	NULL,
};
ATTRIBUTE_GROUPS(weft);

/* ---- probe and remove --------------------------------------------------- */

static void weft_dev_release(struct kref *kref)
{
	struct weft_dev *wdev = container_of(kref, struct weft_dev, kref);

	weft_cnt_free(wdev);
	kvfree(wdev->rcxt_win);
	kvfree(wdev->rcxt_ids);
	pci_dev_put(wdev->pdev);
	kfree(wdev);
}

void weft_dev_put(struct weft_dev *wdev)
{
	kref_put(&wdev->kref, weft_dev_release);
}

static int weft_read_caps(struct weft_dev *wdev)
{
	struct device *dev = &wdev->pdev->dev;
	u64 caps, nr_rcxt, max_rcxt;

	wdev->hw_id = weft_rd(wdev, WEFT_REG_ID);
	if ((u32)wdev->hw_id != WEFT_ID_MAGIC ||
	    (wdev->hw_id >> 48) != (WEFT_HW_VERSION >> 16)) {
		dev_err(dev, "not a Weft adapter or unsupported version (ID 0x%llx)\n",
			wdev->hw_id);
		return -ENODEV;
	}
	caps = weft_rd(wdev, WEFT_REG_CAPS);
	wdev->nr_windows = WEFT_CAPS_WINDOWS(caps);
	wdev->nr_tce_tables = WEFT_CAPS_TCE_TABLES(caps);
	wdev->nr_handlers = WEFT_CAPS_HANDLERS(caps);
	wdev->node_id = weft_rd(wdev, WEFT_REG_NODE_ID);
	nr_rcxt = weft_rd(wdev, WEFT_REG_NR_RCXT);
	if (!wdev->nr_windows || wdev->nr_windows > WEFT_MAX_WINDOWS ||
	    !wdev->nr_handlers || wdev->nr_handlers > WEFT_MAX_HANDLERS ||
	    wdev->nr_tce_tables < WEFT_NR_JOB_SLOTS * WEFT_SLOT_TABLES ||
	    wdev->nr_tce_tables > WEFT_NR_TCE_TABLES ||
	    nr_rcxt < WEFT_MIN_RCXT || nr_rcxt > WEFT_MAX_RCXT) {
		dev_err(dev, "bad capabilities 0x%llx, %llu rCxts\n", caps, nr_rcxt);
		return -ENODEV;
	}
	if (wdev->db_len < (u64)wdev->nr_windows * WEFT_DB_PAGE_SIZE ||
	    wdev->sram_len < WEFT_SRAM_RCXT_BASE) {
		dev_err(dev, "BARs too small for %u windows\n", wdev->nr_windows);
		return -ENODEV;
	}
	max_rcxt = (wdev->sram_len - WEFT_SRAM_RCXT_BASE) / WEFT_RCXT_SIZE;
	if (nr_rcxt > max_rcxt) {
		dev_warn(dev, "SRAM aperture holds only %llu of %llu rCxts\n",
			 max_rcxt, nr_rcxt);
		nr_rcxt = max_rcxt;
	}
	wdev->nr_rcxt = nr_rcxt;
	return 0;
}

static int weft_setup_irqs(struct weft_dev *wdev)
{
	struct pci_dev *pdev = wdev->pdev;
	int nvec, ret;
	u32 h, want = wdev->nr_handlers;

	if (weft_handlers && weft_handlers < want)
		want = weft_handlers;
	nvec = pci_alloc_irq_vectors(pdev, 1, want, PCI_IRQ_MSIX);
	if (nvec < 0) {
		dev_err(&pdev->dev, "no MSI-X vectors: %d\n", nvec);
		return nvec;
	}
	wdev->nr_handlers = nvec;
	for (h = 0; h < nvec; h++) {
		struct weft_handler *hdl = &wdev->hdl[h];

		hdl->wdev = wdev;
		hdl->idx = h;
		hdl->irq = pci_irq_vector(pdev, h);
		ret = request_irq(hdl->irq, weft_irq, 0, WEFT_DRV_NAME, hdl);
		if (ret) {
			dev_err(&pdev->dev, "request_irq %d: %d\n", hdl->irq, ret);
			hdl->irq = 0;
			goto err;
		}
	}
	return 0;
err:
	while (h--)
		free_irq(wdev->hdl[h].irq, &wdev->hdl[h]);
	pci_free_irq_vectors(pdev);
	return ret;
}

static void weft_free_irqs(struct weft_dev *wdev)
{
	u32 h;

	for (h = 0; h < wdev->nr_handlers; h++)
		if (wdev->hdl[h].irq)
			free_irq(wdev->hdl[h].irq, &wdev->hdl[h]);
	pci_free_irq_vectors(wdev->pdev);
}

static int weft_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct weft_dev *wdev;
	u32 evq_log2;
	int ret;

	BUILD_BUG_ON(IS_ENABLED(CONFIG_CPU_BIG_ENDIAN));
	if (PAGE_SIZE != WEFT_DB_PAGE_SIZE)
		return -EOPNOTSUPP;

	wdev = kzalloc(sizeof(*wdev), GFP_KERNEL);
	if (!wdev)
		return -ENOMEM;
	kref_init(&wdev->kref);
	wdev->pdev = pci_dev_get(pdev);
	mutex_init(&wdev->lock);
	spin_lock_init(&wdev->evlock);
	INIT_LIST_HEAD(&wdev->ctxs);
	INIT_LIST_HEAD(&wdev->zombies);
	INIT_WORK(&wdev->recover_work, weft_recover_work);
	wdev->id = -1;

	ret = pci_enable_device(pdev);
	if (ret)
		goto err_put;
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		goto err_disable;
	ret = pci_request_regions(pdev, WEFT_DRV_NAME);
	if (ret)
		goto err_disable;
	if (pci_resource_len(pdev, WEFT_BAR_REGS) < WEFT_REGS_SIZE ||
	    !(pci_resource_flags(pdev, WEFT_BAR_SRAM) & IORESOURCE_MEM) ||
	    !(pci_resource_flags(pdev, WEFT_BAR_DOORBELL) & IORESOURCE_MEM)) {
		dev_err(&pdev->dev, "unexpected BAR layout\n");
		ret = -ENODEV;
		goto err_regions;
	}
	wdev->regs = pci_iomap(pdev, WEFT_BAR_REGS, WEFT_REGS_SIZE);
	wdev->sram = pci_iomap(pdev, WEFT_BAR_SRAM, 0);
	wdev->sram_len = pci_resource_len(pdev, WEFT_BAR_SRAM);
	wdev->db_phys = pci_resource_start(pdev, WEFT_BAR_DOORBELL);
	wdev->db_len = pci_resource_len(pdev, WEFT_BAR_DOORBELL);
	if (!wdev->regs || !wdev->sram) {
		ret = -ENOMEM;
		goto err_iomap;
	}
	ret = weft_read_caps(wdev);
	if (ret)
		goto err_iomap;
	ret = weft_hw_reset(wdev);
	if (ret)
		goto err_iomap;
	wdev->recovery_count = weft_rd(wdev, WEFT_REG_RECOVERY_COUNT);

	ret = ida_alloc_max(&weft_ida, WEFT_MAX_DEVS - 1, GFP_KERNEL);
	if (ret < 0)
		goto err_iomap;
	wdev->id = ret;

	ret = -ENOMEM;
	wdev->rcxt_win = kvcalloc(wdev->nr_rcxt, sizeof(*wdev->rcxt_win), GFP_KERNEL);
	wdev->rcxt_ids = kvcalloc(wdev->nr_rcxt, sizeof(*wdev->rcxt_ids), GFP_KERNEL);
	if (!wdev->rcxt_win || !wdev->rcxt_ids)
		goto err_ida;
	weft_ring_init(&wdev->rcxt_ring, wdev->rcxt_ids, wdev->nr_rcxt);

	evq_log2 = clamp(weft_evq_log2, WEFT_EVQ_MIN_LOG2, WEFT_EVQ_MAX_LOG2);
	wdev->evq_entries = 1u << evq_log2;
	wdev->evq = weft_coherent_alloc(wdev, wdev->evq_entries * sizeof(*wdev->evq),
					&wdev->evq_dma);
	if (!wdev->evq)
		goto err_ida;
	ret = weft_slots_init(wdev);
	if (ret)
		goto err_evq;
	ret = weft_node_add(wdev);
	if (ret)
		goto err_slots;
	ret = weft_setup_irqs(wdev);
	if (ret)
		goto err_node;
	weft_hw_setup(wdev);
	pci_set_drvdata(pdev, wdev);
	ret = weft_net_add(wdev);
	if (ret)
		goto err_irqs;
	ret = weft_chr_add(wdev);
	if (ret)
		goto err_net;
	ret = weft_cnt_add(wdev);
	if (ret)
		goto err_chr;
	ret = weft_verbs_add(wdev);
	if (ret)
		goto err_cnt;
	weft_debugfs_add(wdev);
	atomic_inc(&weft_res.devices);
	dev_info(&pdev->dev, "weft%d: node %u, %u windows, %u rCxts, %u handlers, recovery count %u\n",
		 wdev->id, wdev->node_id, wdev->nr_windows, wdev->nr_rcxt,
		 wdev->nr_handlers, wdev->recovery_count);
	return 0;

err_cnt:
	weft_cnt_del(wdev);
err_chr:
	weft_chr_del(wdev);
err_net:
	weft_net_del(wdev);
err_irqs:
	pci_set_drvdata(pdev, NULL);
	weft_wr(wdev, WEFT_REG_RESET, WEFT_RESET_MAGIC);
	weft_free_irqs(wdev);
err_node:
	weft_node_del(wdev);
err_slots:
	weft_slots_fini(wdev);
err_evq:
	weft_coherent_free(wdev, wdev->evq_entries * sizeof(*wdev->evq),
			   wdev->evq, wdev->evq_dma);
err_ida:
	ida_free(&weft_ida, wdev->id);
err_iomap:
	if (wdev->sram)
		pci_iounmap(pdev, wdev->sram);
	if (wdev->regs)
		pci_iounmap(pdev, wdev->regs);
err_regions:
	pci_release_regions(pdev);
err_disable:
	pci_disable_device(pdev);
err_put:
	weft_dev_put(wdev);
	return ret;
}

static void weft_remove(struct pci_dev *pdev)
{
	struct weft_dev *wdev = pci_get_drvdata(pdev);
	struct weft_window *win, *tmp;
	struct weft_ctx *ctx;

	weft_verbs_del(wdev);
	weft_net_del(wdev);
	weft_chr_del(wdev);
	weft_debugfs_del(wdev);
	mutex_lock(&wdev->lock);
	list_for_each_entry(ctx, &wdev->ctxs, node)
		weft_ctx_teardown(ctx);
	wdev->dead = true;
	mutex_unlock(&wdev->lock);
	cancel_work_sync(&wdev->recover_work);

	/* Stop all DMA, then free what the adapter could still touch. */
	weft_wr(wdev, WEFT_REG_RESET, WEFT_RESET_MAGIC);
	weft_free_irqs(wdev);
	weft_cnt_del(wdev);
	list_for_each_entry_safe(win, tmp, &wdev->zombies, node)
		weft_window_free(win);
	weft_node_del(wdev);
	weft_slots_fini(wdev);
	weft_coherent_free(wdev, wdev->evq_entries * sizeof(*wdev->evq),
			   wdev->evq, wdev->evq_dma);
	pci_set_drvdata(pdev, NULL);
	pci_iounmap(pdev, wdev->sram);
	pci_iounmap(pdev, wdev->regs);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
	ida_free(&weft_ida, wdev->id);
	atomic_dec(&weft_res.devices);
	dev_info(&pdev->dev, "removed\n");
	weft_dev_put(wdev);
}

static const struct pci_device_id weft_pci_ids[] = {
	{ PCI_DEVICE(WEFT_PCI_VENDOR_ID, WEFT_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, weft_pci_ids);

static struct pci_driver weft_pci_driver = {
	.name = WEFT_DRV_NAME,
	.id_table = weft_pci_ids,
	.probe = weft_probe,
	.remove = weft_remove,
	.dev_groups = weft_groups,
};

static int __init weft_init(void)
{
	int ret;

	ret = weft_node_init();
	if (ret)
		return ret;
	weft_debugfs_init();
	ret = pci_register_driver(&weft_pci_driver);
	if (ret) {
		weft_debugfs_exit();
		weft_node_fini();
	}
	return ret;
}

static void __exit weft_exit(void)
{
	pci_unregister_driver(&weft_pci_driver);
	weft_debugfs_exit();
	weft_node_fini();
	ida_destroy(&weft_ida);
}

module_init(weft_init);
module_exit(weft_exit);

MODULE_DESCRIPTION("Weft emulated RDMA switch adapter");
MODULE_AUTHOR("The Weft project");
MODULE_LICENSE("GPL");
