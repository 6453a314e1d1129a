// SPDX-License-Identifier: GPL-2.0
/*
 * weft.ko: the /dev/weftN character device: windows, rCxts, events and
 * the mmap of a window's doorbell page and FIFOs.
 */
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "weft_drv.h"

/* ---- user events -------------------------------------------------------- */

void weft_ctx_event(struct weft_ctx *ctx, u32 type, u32 window, u32 rcxt,
		    u32 reason, u64 info)
{
	struct weft_uevent *ev;
	unsigned long flags;

	spin_lock_irqsave(&ctx->evlock, flags);
	if (ctx->ev_count == WEFT_UEV_RING) {
		atomic64_inc(&weft_res.uevents_dropped);
	} else {
		ev = &ctx->ev[(ctx->ev_head + ctx->ev_count) % WEFT_UEV_RING];
		ev->type = type;
		ev->window = window;
		ev->rcxt = rcxt;
		ev->reason = reason;
		ev->info = info;
		ctx->ev_count++;
	}
	spin_unlock_irqrestore(&ctx->evlock, flags);
	wake_up_interruptible(&ctx->wq);
}

/* ---- rCxt pool: round robin, allocate at the head, free to the tail ---- */

static void weft_rcxt_put(struct weft_dev *wdev, struct weft_window *win, u32 r)
{
	wdev->rcxt_win[r] = 0;
	weft_ring_push(&wdev->rcxt_ring, r);
	win->nr_rcxt--;
	atomic_dec(&weft_res.rcxts);
}

/* Give back every rCxt of a window, with Release commands if cmd. */
void weft_rcxt_release_window(struct weft_dev *wdev, struct weft_window *win,
			      bool cmd)
{
	u32 r;

	for (r = 0; r < wdev->nr_rcxt && win->nr_rcxt; r++) {
		if (wdev->rcxt_win[r] != win->idx + 1)
			continue;
		if (cmd)
			weft_cmd(wdev, WEFT_REG_CMD_RELEASE_RCXT, r);
		weft_rcxt_put(wdev, win, r);
	}
}

/* ---- windows ------------------------------------------------------------ */

static struct weft_window *weft_ctx_window(struct weft_ctx *ctx, u32 w)
{
	struct weft_dev *wdev = ctx->wdev;
	struct weft_window *win;

	if (w >= wdev->nr_windows)
		return NULL;
	win = wdev->win[w];
	return win && win->ctx == ctx ? win : NULL;
}

/* Remove every user mapping of the window (doorbell page and FIFOs). */
void weft_window_zap(struct weft_window *win)
{
	if (win->ctx)
		unmap_mapping_range(win->ctx->mapping, WEFT_MMAP_WIN(win->idx),
				    1ull << WEFT_MMAP_WIN_SHIFT, 1);
}

/* Forget a window whose memory the adapter no longer uses. */
void weft_window_free(struct weft_window *win)
{
	struct weft_dev *wdev = win->wdev;
	unsigned long flags;

	weft_window_zap(win);
	if (win->nr_rcxt)
		weft_rcxt_release_window(wdev, win, false);
	spin_lock_irqsave(&wdev->evlock, flags);
	if (wdev->win[win->idx] == win)
		wdev->win[win->idx] = NULL;
	list_del(&win->node);
	spin_unlock_irqrestore(&wdev->evlock, flags);
	weft_coherent_free(wdev, win->send_size, win->send_va, win->send_dma);
	weft_coherent_free(wdev, win->recv_size, win->recv_va, win->recv_dma);
	if (!win->ctx)
		atomic_dec(&weft_res.windows_zombie);
	atomic_dec(&weft_res.windows);
	dev_dbg(&wdev->pdev->dev, "window %u freed\n", win->idx);
	kfree(win);
}

/*
 * Close Window, then wait for Snapshot View to clear before the memory
 * is released.  On a timeout the window stays CLOSING (memory kept, the
 * number not reused) and -ETIMEDOUT is returned; closing again retries.
 */
int weft_window_close(struct weft_window *win, unsigned int timeout_ms)
{
	struct weft_dev *wdev = win->wdev;
	int ret;

	if (win->state == WEFT_WS_STALE) {
		/* The adapter forgot it at the recovery: only the memory is left. */
		weft_window_free(win);
		return 0;
	}
	if (win->state != WEFT_WS_CLOSING) {
		weft_window_zap(win);
		ret = weft_cmd(wdev, WEFT_REG_CMD_CLOSE_WINDOW, win->idx);
		if (ret)
			dev_warn(&wdev->pdev->dev, "Close Window %u: %d\n", win->idx, ret);
		win->state = WEFT_WS_CLOSING;
		wdev->close_snapshot = weft_rd(wdev, WEFT_REG_SNAPSHOT_VIEW);
		wdev->closes++;
		if (wdev->close_snapshot)
			wdev->closes_waited++;
	}
	ret = weft_wait_snapshot(wdev, timeout_ms);
	if (ret)
		return -ETIMEDOUT;
	weft_rcxt_release_window(wdev, win, true);
	weft_window_free(win);
	return 0;
}

static void weft_lmt_write(struct weft_dev *wdev, u32 w, const struct weft_lmt *lmt)
{
	const u64 *q = (const u64 *)lmt;
	u32 i;

	for (i = 0; i < sizeof(*lmt) / 8; i++)
		writeq(q[i], wdev->sram + WEFT_SRAM_LMT_OFF(w) + 8 * i);
}

static int weft_open_window(struct weft_ctx *ctx, struct weft_ioc_open_window *a)
{
	struct weft_dev *wdev = ctx->wdev;
	struct weft_lmt_params lp = { 0 };
	struct weft_window *win;
	struct weft_lmt lmt;
	unsigned long flags;
	u32 w, quantum;
	u64 state;
	int ret;

	if (!a->job_id || a->send_log2 < WEFT_FIFO_MIN_LOG2 ||
	    a->send_log2 > weft_max_fifo_log2 || a->send_log2 > WEFT_FIFO_MAX_LOG2 ||
	    a->recv_log2 < WEFT_FIFO_MIN_LOG2 ||
	    a->recv_log2 > weft_max_fifo_log2 || a->recv_log2 > WEFT_FIFO_MAX_LOG2 ||
	    (a->flags & ~(WEFT_OPEN_F_BCAST | WEFT_OPEN_F_EARLY_INT)) ||
	    a->quantum > 0xffff)
		return -EINVAL;
	if (weft_job_slot(ctx, a->job_id) < 0)
		return -ENOENT;
	quantum = a->quantum ? a->quantum : WEFT_DEF_QUANTUM;
	for (w = 0; w < wdev->nr_windows; w++)
		if (!wdev->win[w])
			break;
	if (w == wdev->nr_windows)
		return -EBUSY;

	win = kzalloc(sizeof(*win), GFP_KERNEL);
	if (!win)
		return -ENOMEM;
	win->wdev = wdev;
	win->ctx = ctx;
	win->idx = w;
	win->job_id = a->job_id;
	win->send_size = (size_t)WEFT_FRAME_SIZE << a->send_log2;
	win->recv_size = (size_t)WEFT_FRAME_SIZE << a->recv_log2;
	win->send_va = weft_coherent_alloc(wdev, win->send_size, &win->send_dma);
	win->recv_va = weft_coherent_alloc(wdev, win->recv_size, &win->recv_dma);
	if (!win->send_va || !win->recv_va) {
		ret = -ENOMEM;
		goto err_mem;
	}

	lp.window = w;
	lp.job = a->job_id;
	lp.send_addr = win->send_dma;
	lp.recv_addr = win->recv_dma;
	lp.send_log2 = a->send_log2;
	lp.recv_log2 = a->recv_log2;
	lp.quantum = quantum;
	lp.handler = w % wdev->nr_handlers;
	lp.bcast = a->flags & WEFT_OPEN_F_BCAST;
	lp.early_int = a->flags & WEFT_OPEN_F_EARLY_INT;
	lp.pvo_fatal = weft_rereg_on_fatal;
	weft_lmt_init(&lmt, &lp);
	weft_lmt_write(wdev, w, &lmt);

	/* Visible to the interrupt path before the adapter can raise events. */
	spin_lock_irqsave(&wdev->evlock, flags);
	wdev->win[w] = win;
	list_add_tail(&win->node, &ctx->windows);
	spin_unlock_irqrestore(&wdev->evlock, flags);
	atomic_inc(&weft_res.windows);

	ret = weft_cmd(wdev, WEFT_REG_CMD_OPEN_WINDOW, w);
	state = readq(wdev->sram + WEFT_SRAM_LMT_OFF(w) +
		      offsetof(struct weft_lmt, window_state)) & 0xffffffffull;
	if (!ret && state != WEFT_WIN_VALID)
		ret = -EIO;
	if (ret) {
		dev_warn(&wdev->pdev->dev, "Open Window %u failed: %d (state %llu)\n",
			 w, ret, state);
		/* The adapter never took the window: nothing can touch it. */
		weft_window_free(win);
		return ret == -EBUSY ? -EIO : ret;
	}
	win->state = WEFT_WS_OPEN;
	a->window = w;
	a->db_offset = WEFT_MMAP_WIN(w) + WEFT_MMAP_DB;
	a->send_offset = WEFT_MMAP_WIN(w) + WEFT_MMAP_SEND;
	a->recv_offset = WEFT_MMAP_WIN(w) + WEFT_MMAP_RECV;
	a->send_size = win->send_size;
	a->recv_size = win->recv_size;
	dev_dbg(&wdev->pdev->dev, "window %u open: job %u send %zu recv %zu\n",
		w, a->job_id, win->send_size, win->recv_size);
	return 0;

err_mem:
	weft_coherent_free(wdev, win->send_size, win->send_va, win->send_dma);
	weft_coherent_free(wdev, win->recv_size, win->recv_va, win->recv_dma);
	kfree(win);
	return ret;
}

static int weft_alloc_rcxt(struct weft_ctx *ctx, struct weft_ioc_rcxt *a)
{
	struct weft_dev *wdev = ctx->wdev;
	struct weft_window *win;
	u16 key;
	u32 r;
	int ret;

	if (a->reserved[0] || a->reserved[1] || a->reserved[2])
		return -EINVAL;
	if (a->window >= wdev->nr_windows)
		return -EINVAL;
	win = weft_ctx_window(ctx, a->window);
	if (!win)
		return -ENOENT;
	if (win->state == WEFT_WS_STALE)
		return -ESTALE;
	if (win->state != WEFT_WS_OPEN)
		return -EPIPE;
	if (!weft_ring_pop(&wdev->rcxt_ring, &r))
		return -ENOSPC;
	key = weft_rcxt_key(wdev->recovery_count, weft_rereg_on_fatal);
	ret = weft_cmd(wdev, WEFT_REG_CMD_ACQUIRE_RCXT, WEFT_ACQ(r, win->idx, key));
	if (ret) {
		/* Back to the tail: the next caller gets another rCxt. */
		weft_ring_push(&wdev->rcxt_ring, r);
		dev_warn(&wdev->pdev->dev, "Acquire rCxt %u: %d\n", r, ret);
		return -EIO;
	}
	wdev->rcxt_win[r] = win->idx + 1;
	win->nr_rcxt++;
	atomic_inc(&weft_res.rcxts);
	a->rcxt = r;
	a->key = key;
	dev_dbg(&wdev->pdev->dev, "rCxt %u key %u -> window %u\n", r, key, win->idx);
	return 0;
}

static int weft_free_rcxt(struct weft_ctx *ctx, struct weft_ioc_rcxt *a)
{
	struct weft_dev *wdev = ctx->wdev;
	struct weft_window *win;
	int ret;

	if (a->reserved[0] || a->reserved[1] || a->reserved[2])
		return -EINVAL;
	if (a->window >= wdev->nr_windows || a->rcxt >= wdev->nr_rcxt)
		return -EINVAL;
	win = weft_ctx_window(ctx, a->window);
	if (win && win->state == WEFT_WS_STALE)
		return -ESTALE;
	if (!win || wdev->rcxt_win[a->rcxt] != win->idx + 1)
		return -ENOENT;
	ret = weft_cmd(wdev, WEFT_REG_CMD_RELEASE_RCXT, a->rcxt);
	if (ret == -EBUSY) {
		/* Still busy with an operation: cancel it, then release. */
		weft_cmd(wdev, WEFT_REG_CMD_CANCEL_RCXT, a->rcxt);
		ret = weft_cmd(wdev, WEFT_REG_CMD_RELEASE_RCXT, a->rcxt);
	}
	if (ret)
		return ret == -EBUSY ? -EBUSY : -EIO;
	weft_rcxt_put(wdev, win, a->rcxt);
	return 0;
}

/* Release everything a context holds.  Called with wdev->lock held. */
void weft_ctx_teardown(struct weft_ctx *ctx)
{
	struct weft_dev *wdev = ctx->wdev;
	struct weft_window *win, *tmp;
	unsigned long flags;

	lockdep_assert_held(&wdev->lock);
	list_for_each_entry_safe(win, tmp, &ctx->windows, node) {
		if (!weft_window_close(win, WEFT_CLOSE_DEF_MS))
			continue;
		/* Never cleared: park the memory until reset or recovery. */
		dev_err(&wdev->pdev->dev, "window %u kept: Snapshot View never cleared\n",
			win->idx);
		weft_rcxt_release_window(wdev, win, false);
		spin_lock_irqsave(&wdev->evlock, flags);
		win->ctx = NULL;
		list_move_tail(&win->node, &wdev->zombies);
		spin_unlock_irqrestore(&wdev->evlock, flags);
		atomic_inc(&weft_res.windows_zombie);
	}
	weft_mr_release_all(ctx, false);
	weft_cnt_teardown(ctx);
	weft_job_detach_all(ctx);
}

/* ---- file operations ---------------------------------------------------- */

static int weft_open(struct inode *inode, struct file *filp)
{
	struct miscdevice *misc = filp->private_data;
	struct weft_dev *wdev = container_of(misc, struct weft_dev, misc);
	struct weft_ctx *ctx;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	ctx->mapping = filp->f_mapping;
	INIT_LIST_HEAD(&ctx->windows);
	xa_init_flags(&ctx->mrs, XA_FLAGS_ALLOC1);
	spin_lock_init(&ctx->evlock);
	init_waitqueue_head(&ctx->wq);

	mutex_lock(&wdev->lock);
	if (wdev->dead) {
		mutex_unlock(&wdev->lock);
		kfree(ctx);
		return -ENODEV;
	}
	kref_get(&wdev->kref);
	ctx->wdev = wdev;
	list_add_tail(&ctx->node, &wdev->ctxs);
	mutex_unlock(&wdev->lock);
	atomic_inc(&weft_res.ctxs);
	filp->private_data = ctx;
	return stream_open(inode, filp);
}

static int weft_release(struct inode *inode, struct file *filp)
{
	struct weft_ctx *ctx = filp->private_data;
	struct weft_dev *wdev = ctx->wdev;

	mutex_lock(&wdev->lock);
	if (!wdev->dead)
		weft_ctx_teardown(ctx);
	list_del(&ctx->node);
	mutex_unlock(&wdev->lock);
	xa_destroy(&ctx->mrs);
	kfree(ctx);
	atomic_dec(&weft_res.ctxs);
	weft_dev_put(wdev);
	return 0;
}

static long weft_ioctl_locked(struct weft_ctx *ctx, unsigned int cmd, void *arg)
{
	struct weft_dev *wdev = ctx->wdev;
	struct weft_window *win;

	switch (cmd) {
	case WEFT_IOC_QUERY: {
		struct weft_ioc_query *q = arg;

		q->abi_version = WEFT_UAPI_VERSION;
		q->node_id = wdev->node_id;
		q->nr_windows = wdev->nr_windows;
		q->nr_rcxt = wdev->nr_rcxt;
		q->recovery_count = wdev->recovery_count;
		q->nr_handlers = wdev->nr_handlers;
		q->max_payload = WEFT_MAX_PAYLOAD;
		q->hw_id = wdev->hw_id;
		return 0;
	}
	case WEFT_IOC_JOB_ATTACH:
		return weft_job_attach(ctx, arg);
	case WEFT_IOC_JOB_DETACH:
		return weft_job_detach(ctx, arg);
	case WEFT_IOC_OPEN_WINDOW:
		return weft_open_window(ctx, arg);
	case WEFT_IOC_CLOSE_WINDOW: {
		struct weft_ioc_window *a = arg;

		if (a->window >= wdev->nr_windows || a->timeout_ms > WEFT_CLOSE_MAX_MS)
			return -EINVAL;
		win = weft_ctx_window(ctx, a->window);
		if (!win)
			return -ENOENT;
		return weft_window_close(win, a->timeout_ms ? a->timeout_ms :
					 WEFT_CLOSE_DEF_MS);
	}
	case WEFT_IOC_ALLOC_RCXT:
		return weft_alloc_rcxt(ctx, arg);
	case WEFT_IOC_FREE_RCXT:
		return weft_free_rcxt(ctx, arg);
	case WEFT_IOC_DEREG_MR: {
		struct weft_ioc_dereg_mr *a = arg;

		if (a->reserved)
			return -EINVAL;
		return weft_dereg_mr(ctx, a->handle);
	}
	case WEFT_IOC_CNT_POST:
		return weft_cnt_post(ctx, arg);
	case WEFT_IOC_CNT_DESTROY:
	case WEFT_IOC_CNT_UNEXPOSE: {
		struct weft_ioc_cnt_id *a = arg;

		if (a->reserved)
			return -EINVAL;
		return cmd == WEFT_IOC_CNT_DESTROY ? weft_cnt_destroy(ctx, a->id) :
						     weft_cnt_unexpose(ctx, a->id);
	}
	default:
		return -ENOTTY;
	}
}

static long weft_ioctl(struct file *filp, unsigned int cmd, unsigned long uarg)
{
	struct weft_ctx *ctx = filp->private_data;
	struct weft_dev *wdev = ctx->wdev;
	void __user *up = (void __user *)uarg;
	union {
		struct weft_ioc_query q;
		struct weft_ioc_job j;
		struct weft_ioc_open_window o;
		struct weft_ioc_window w;
		struct weft_ioc_rcxt r;
		struct weft_ioc_reg_mr m;
		struct weft_ioc_dereg_mr d;
		struct weft_ioc_cnt_create cc;
		struct weft_ioc_cnt_post cp;
		struct weft_ioc_cnt_wait cw;
		struct weft_ioc_cnt_expose ce;
		struct weft_ioc_cnt_id ci;
	} a;
	unsigned int size = _IOC_SIZE(cmd);
	long ret;

	switch (cmd) {
	case WEFT_IOC_QUERY:
	case WEFT_IOC_JOB_ATTACH:
	case WEFT_IOC_JOB_DETACH:
	case WEFT_IOC_OPEN_WINDOW:
	case WEFT_IOC_CLOSE_WINDOW:
	case WEFT_IOC_ALLOC_RCXT:
	case WEFT_IOC_FREE_RCXT:
	case WEFT_IOC_REG_MR:
	case WEFT_IOC_DEREG_MR:
	case WEFT_IOC_CNT_CREATE:
	case WEFT_IOC_CNT_POST:
	case WEFT_IOC_CNT_WAIT:
	case WEFT_IOC_CNT_DESTROY:
	case WEFT_IOC_CNT_EXPOSE:
	case WEFT_IOC_CNT_UNEXPOSE:
		break;
	default:
		return -ENOTTY;
	}
	if (WARN_ON_ONCE(size > sizeof(a)))
		return -ENOTTY;
	/* Descriptors are copied once, before any use and before locking. */
	memset(&a, 0, sizeof(a));
	if ((_IOC_DIR(cmd) & _IOC_WRITE) && copy_from_user(&a, up, size))
		return -EFAULT;
	dev_dbg(&wdev->pdev->dev, "ioctl 0x%x pid %d\n", cmd, task_pid_nr(current));

	if (cmd == WEFT_IOC_REG_MR) {
		/* Pins user pages: must not hold wdev->lock (mmap_lock order). */
		ret = weft_reg_mr(ctx, &a.m);
	} else if (cmd == WEFT_IOC_CNT_CREATE) {
		ret = weft_cnt_create(ctx, &a.cc);	/* pins, locks itself */
	} else if (cmd == WEFT_IOC_CNT_EXPOSE) {
		ret = weft_cnt_expose(ctx, &a.ce);	/* pins, locks itself */
	} else if (cmd == WEFT_IOC_CNT_WAIT) {
		ret = weft_cnt_wait(ctx, &a.cw);	/* sleeps, locks itself */
	} else {
		mutex_lock(&wdev->lock);
		ret = wdev->dead ? -ENODEV : weft_ioctl_locked(ctx, cmd, &a);
		mutex_unlock(&wdev->lock);
	}
	if (ret || !(_IOC_DIR(cmd) & _IOC_READ))
		return ret;
	if (copy_to_user(up, &a, size)) {
		/* Undo what the caller can no longer learn about. */
		mutex_lock(&wdev->lock);
		if (!wdev->dead) {
			struct weft_window *win;

			if (cmd == WEFT_IOC_OPEN_WINDOW) {
				win = weft_ctx_window(ctx, a.o.window);
				if (win && weft_window_close(win, WEFT_CLOSE_DEF_MS))
					dev_warn(&wdev->pdev->dev, "window %u left closing\n",
						 a.o.window);
			} else if (cmd == WEFT_IOC_ALLOC_RCXT) {
				weft_free_rcxt(ctx, &a.r);
			} else if (cmd == WEFT_IOC_REG_MR) {
				weft_dereg_mr(ctx, a.m.handle);
			} else if (cmd == WEFT_IOC_CNT_CREATE) {
				weft_cnt_destroy(ctx, a.cc.id);
			} else if (cmd == WEFT_IOC_CNT_EXPOSE) {
				weft_cnt_unexpose(ctx, a.ce.index);
			}
		}
		mutex_unlock(&wdev->lock);
		return -EFAULT;
	}
	return 0;
}

/*
 * A device mapping is never inherited by fork (a child that touches it
 * faults) and can never become executable (mprotect(PROT_EXEC) fails).
 */
static void weft_vma_protect(struct vm_area_struct *vma)
{
#ifdef WEFT_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, VM_DONTCOPY);
	vm_flags_clear(vma, VM_MAYEXEC);
#else
	vma->vm_flags = (vma->vm_flags | VM_DONTCOPY) & ~VM_MAYEXEC;
#endif
}

static int weft_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct weft_ctx *ctx = filp->private_data;
	struct weft_dev *wdev = ctx->wdev;
	unsigned long size = vma->vm_end - vma->vm_start;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	u64 part = off & ((1ull << WEFT_MMAP_WIN_SHIFT) - 1);
	u64 w = off >> WEFT_MMAP_WIN_SHIFT;
	struct weft_window *win;
	unsigned long pgoff;
	int ret;

	if (!(vma->vm_flags & VM_SHARED) || (vma->vm_flags & VM_EXEC))
		return -EINVAL;
	if (off >= WEFT_MMAP_CNT)
		return weft_cnt_mmap(ctx, vma, off - WEFT_MMAP_CNT);
	if (w >= WEFT_MAX_WINDOWS)
		return -EINVAL;
	mutex_lock(&wdev->lock);
	if (wdev->dead) {
		ret = -ENODEV;
		goto out;
	}
	win = weft_ctx_window(ctx, w);
	if (!win || win->state == WEFT_WS_CLOSING) {
		ret = -EACCES;
		goto out;
	}
	if (win->state == WEFT_WS_STALE) {
		ret = -ESTALE;
		goto out;
	}
	/* Both remap paths set VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP. */
	weft_vma_protect(vma);
	switch (part) {
	case WEFT_MMAP_DB:
		if (size != PAGE_SIZE) {
			ret = -EINVAL;
			break;
		}
		vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
		ret = io_remap_pfn_range(vma, vma->vm_start,
					 (wdev->db_phys + (u64)w * WEFT_DB_PAGE_SIZE) >> PAGE_SHIFT,
					 PAGE_SIZE, vma->vm_page_prot);
		break;
	case WEFT_MMAP_SEND:
	case WEFT_MMAP_RECV: {
		bool send = part == WEFT_MMAP_SEND;
		size_t len = send ? win->send_size : win->recv_size;

		if (size != len) {
			ret = -EINVAL;
			break;
		}
		/* dma_mmap_coherent() reads vm_pgoff as the buffer offset. */
		pgoff = vma->vm_pgoff;
		vma->vm_pgoff = 0;
		ret = dma_mmap_coherent(&wdev->pdev->dev, vma,
					send ? win->send_va : win->recv_va,
					send ? win->send_dma : win->recv_dma, len);
		vma->vm_pgoff = pgoff;
		break;
	}
	default:
		ret = -EINVAL;
	}
	dev_dbg(&wdev->pdev->dev, "mmap window %llu part 0x%llx size %lu: %d\n",
		w, part, size, ret);
out:
	mutex_unlock(&wdev->lock);
	return ret;
}

static ssize_t weft_read(struct file *filp, char __user *buf, size_t count,
			 loff_t *ppos)
{
	struct weft_ctx *ctx = filp->private_data;
	struct weft_uevent ev[16];
	unsigned long flags;
	size_t n, i;
	int ret;

	if (count < sizeof(ev[0]))
		return -EINVAL;
	n = min_t(size_t, count / sizeof(ev[0]), ARRAY_SIZE(ev));
	for (;;) {
		spin_lock_irqsave(&ctx->evlock, flags);
		if (ctx->ev_count)
			break;
		spin_unlock_irqrestore(&ctx->evlock, flags);
		if (READ_ONCE(ctx->wdev->dead))
			return 0;
		if (filp->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(ctx->wq, READ_ONCE(ctx->ev_count) ||
					       READ_ONCE(ctx->wdev->dead));
		if (ret)
			return ret;
	}
	n = min_t(size_t, n, ctx->ev_count);
	for (i = 0; i < n; i++) {
		ev[i] = ctx->ev[ctx->ev_head];
		ctx->ev_head = (ctx->ev_head + 1) % WEFT_UEV_RING;
		ctx->ev_count--;
	}
	spin_unlock_irqrestore(&ctx->evlock, flags);
	if (copy_to_user(buf, ev, n * sizeof(ev[0])))
		return -EFAULT;
	return n * sizeof(ev[0]);
}

static __poll_t weft_poll(struct file *filp, poll_table *wait)
{
	struct weft_ctx *ctx = filp->private_data;
	__poll_t mask = 0;

	poll_wait(filp, &ctx->wq, wait);
	if (READ_ONCE(ctx->ev_count))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (READ_ONCE(ctx->wdev->dead))
		mask |= EPOLLHUP | EPOLLERR;
	return mask;
}

static const struct file_operations weft_fops = {
	.owner = THIS_MODULE,
	.open = weft_open,
	.release = weft_release,
	.unlocked_ioctl = weft_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = weft_mmap,
	.read = weft_read,
	.poll = weft_poll,
};

int weft_chr_add(struct weft_dev *wdev)
{
	snprintf(wdev->name, sizeof(wdev->name), WEFT_DRV_NAME "%d", wdev->id);
	wdev->misc.minor = MISC_DYNAMIC_MINOR;
	wdev->misc.name = wdev->name;
	wdev->misc.fops = &weft_fops;
	wdev->misc.parent = &wdev->pdev->dev;
	return misc_register(&wdev->misc);
}

void weft_chr_del(struct weft_dev *wdev)
{
	misc_deregister(&wdev->misc);
}
