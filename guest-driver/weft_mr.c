// SPDX-License-Identifier: GPL-2.0
/*
 * weft.ko: job slots, TCE tables and memory registration.
 *
 * The seed's preferred layout: 5 job slots, each with 4 tables of
 * 16 MiB pages and 2 tables of 4 KiB pages (30 of the adapter's 32
 * tables), of which tce_64k_tables 16 MiB tables per slot serve 64 KiB
 * pages instead (the policy's weft_slot_tables).  All tables are
 * registered at probe with ownership invalid; attaching a job to a slot
 * makes the job id the owner of its tables.
 */
#include <linux/dma-mapping.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "weft_drv.h"

static u32 weft_hw_table(u32 slot, u32 t)
{
	return slot * WEFT_SLOT_TABLES + t;
}

/* TCEs per table of 2^shift-byte pages (module parameters). */
static u32 weft_tce_entries(u32 shift)
{
	u32 nr;

	switch (shift) {
	case WEFT_PAGE_SHIFT_16M:
		nr = weft_tce_16m_entries;
		break;
	case WEFT_PAGE_SHIFT_64K:
		nr = weft_tce_64k_entries;
		break;
	default:
		nr = weft_tce_4k_entries;
		break;
	}
	return clamp(nr, 1u, WEFT_TCE_MAX_ENTRIES);
}

int weft_slots_init(struct weft_dev *wdev)
{
	u32 s, t;

	for (s = 0; s < WEFT_NR_JOB_SLOTS; s++) {
		for (t = 0; t < WEFT_SLOT_TABLES; t++) {
			struct weft_tce_table *tbl = &wdev->slots[s].tbl[t];

			tbl->shift = weft_slot_table_shift(t, weft_tce_64k_tables);
			tbl->nr = weft_tce_entries(tbl->shift);
			tbl->used = kcalloc(WEFT_TCE_MAP_WORDS(tbl->nr), sizeof(u64),
					    GFP_KERNEL);
			tbl->va = weft_coherent_alloc(wdev, (size_t)tbl->nr * 8, &tbl->dma);
			if (!tbl->used || !tbl->va) {
				weft_slots_fini(wdev);
				return -ENOMEM;
			}
		}
	}
	return 0;
}

void weft_slots_fini(struct weft_dev *wdev)
{
	u32 s, t;

	for (s = 0; s < WEFT_NR_JOB_SLOTS; s++) {
		for (t = 0; t < WEFT_SLOT_TABLES; t++) {
			struct weft_tce_table *tbl = &wdev->slots[s].tbl[t];

			weft_coherent_free(wdev, (size_t)tbl->nr * 8, tbl->va, tbl->dma);
			kfree(tbl->used);
			tbl->va = NULL;
			tbl->used = NULL;
		}
	}
}

static void weft_slot_owner(struct weft_dev *wdev, u32 s)
{
	u64 owner = wdev->slots[s].job_id ?
		    WEFT_TCE_OWNER_VALID | wdev->slots[s].job_id : 0;
	u32 t;

	for (t = 0; t < WEFT_SLOT_TABLES; t++)
		weft_wr(wdev, WEFT_REG_TCE_OWNER(weft_hw_table(s, t)), owner);
}

/* ---- PVO keys: the policy's generator on the adapter's key epoch ---------- */

static u64 weft_epoch_read(void *opaque)
{
	return weft_rd(opaque, WEFT_REG_KEY_EPOCH);
}

static void weft_epoch_next(void *opaque)
{
	weft_wr(opaque, WEFT_REG_KEY_EPOCH_NEXT, WEFT_EPOCH_MAGIC);
}

static const struct weft_epoch_ops weft_epoch_ops = {
	.read = weft_epoch_read,
	.next = weft_epoch_next,
};

/* Probe: take a new key epoch, so no key of an earlier boot comes back. */
int weft_keys_start(struct weft_dev *wdev)
{
	weft_keygen_init(&wdev->keys, &weft_epoch_ops, wdev);
	if (!weft_keygen_take(&wdev->keys)) {
		dev_err(&wdev->pdev->dev, "the adapter did not advance its key epoch (%llu)\n",
			weft_rd(wdev, WEFT_REG_KEY_EPOCH));
		return -EIO;
	}
	dev_dbg(&wdev->pdev->dev, "key epoch %llu: PVO key block %u\n", wdev->keys.epoch,
		weft_key_block(wdev->keys.epoch));
	return 0;
}

/* Register every table with the adapter (probe, recovery). */
void weft_slots_program(struct weft_dev *wdev)
{
	u32 s, t, hw;

	for (s = 0; s < WEFT_NR_JOB_SLOTS; s++) {
		for (t = 0; t < WEFT_SLOT_TABLES; t++) {
			struct weft_tce_table *tbl = &wdev->slots[s].tbl[t];

			hw = weft_hw_table(s, t);
			weft_wr(wdev, WEFT_REG_TCE_BASE(hw), tbl->dma);
			weft_wr(wdev, WEFT_REG_TCE_CFG(hw), WEFT_TCE_CFG(tbl->nr, tbl->shift));
		}
		weft_slot_owner(wdev, s);
	}
	for (hw = WEFT_NR_JOB_SLOTS * WEFT_SLOT_TABLES; hw < wdev->nr_tce_tables; hw++) {
		weft_wr(wdev, WEFT_REG_TCE_OWNER(hw), 0);
		weft_wr(wdev, WEFT_REG_TCE_CFG(hw), 0);
		weft_wr(wdev, WEFT_REG_TCE_BASE(hw), 0);
	}
}

int weft_job_slot(struct weft_ctx *ctx, u32 job_id)
{
	struct weft_dev *wdev = ctx->wdev;
	u32 s;

	if (!job_id)
		return -EINVAL;
	for (s = 0; s < WEFT_NR_JOB_SLOTS; s++)
		if ((ctx->slots & BIT(s)) && wdev->slots[s].job_id == job_id)
			return s;
	return -ENOENT;
}

int weft_job_attach(struct weft_ctx *ctx, struct weft_ioc_job *job)
{
	struct weft_dev *wdev = ctx->wdev;
	int s, free = -1;

	if (!job->job_id)
		return -EINVAL;
	if (weft_job_slot(ctx, job->job_id) >= 0)
		return -EALREADY;
	for (s = 0; s < WEFT_NR_JOB_SLOTS; s++) {
		if (wdev->slots[s].job_id == job->job_id)
			break;
		if (!wdev->slots[s].job_id && free < 0)
			free = s;
	}
	if (s == WEFT_NR_JOB_SLOTS) {
		if (free < 0)
			return -EBUSY;
		s = free;
		wdev->slots[s].job_id = job->job_id;
		weft_slot_owner(wdev, s);
		dev_dbg(&wdev->pdev->dev, "job %u owns slot %d\n", job->job_id, s);
	}
	wdev->slots[s].refs++;
	ctx->slots |= BIT(s);
	job->slot = s;
	return 0;
}

static void weft_slot_put(struct weft_dev *wdev, u32 s)
{
	if (--wdev->slots[s].refs)
		return;
	dev_dbg(&wdev->pdev->dev, "job %u leaves slot %u\n", wdev->slots[s].job_id, s);
	wdev->slots[s].job_id = 0;
	weft_slot_owner(wdev, s);
}

int weft_job_detach(struct weft_ctx *ctx, struct weft_ioc_job *job)
{
	struct weft_dev *wdev = ctx->wdev;
	struct weft_window *win;
	struct weft_mr *mr;
	unsigned long idx;
	int s = weft_job_slot(ctx, job->job_id);

	if (s < 0)
		return s;
	list_for_each_entry(win, &ctx->windows, node)
		if (win->job_id == job->job_id)
			return -EBUSY;
	xa_for_each(&ctx->mrs, idx, mr)
		if (!xa_is_value(mr) && mr->slot == s)
			return -EBUSY;
	ctx->slots &= ~BIT(s);
	weft_slot_put(wdev, s);
	job->slot = s;
	return 0;
}

void weft_job_detach_all(struct weft_ctx *ctx)
{
	u32 s;

	for (s = 0; s < WEFT_NR_JOB_SLOTS; s++)
		if (ctx->slots & BIT(s))
			weft_slot_put(ctx->wdev, s);
	ctx->slots = 0;
}

/* ---- memory registration ------------------------------------------------ */

static void weft_mr_unpin(struct weft_dev *wdev, struct weft_mr *mr, bool mapped)
{
	if (mapped)
		dma_unmap_sgtable(&wdev->pdev->dev, &mr->sgt, DMA_BIDIRECTIONAL, 0);
	if (mr->sgt.sgl)
		sg_free_table(&mr->sgt);
	if (mr->npages) {
		unpin_user_pages_dirty_lock(mr->pages, mr->npages, true);
		atomic64_sub(mr->npages, &weft_res.pages_pinned);
	}
	if (mr->mm) {
		atomic64_sub(mr->npages, &mr->mm->pinned_vm);
		mmdrop(mr->mm);
	}
	kvfree(mr->pages);
	kfree(mr);
}

/* Invalidate the TCEs, then give the pages back.  wdev->lock held. */
static void weft_mr_free(struct weft_dev *wdev, struct weft_mr *mr)
{
	struct weft_tce_table *tbl = &wdev->slots[mr->slot].tbl[mr->table];
	u32 i;

	for (i = 0; i < mr->nr_tce; i++)
		WRITE_ONCE(tbl->va[mr->first + i], 0);
	dma_wmb();
	/*
	 * The adapter checks the TCE at every page boundary; a register read
	 * orders this invalidation before the pages are unpinned.
	 */
	weft_rd(wdev, WEFT_REG_STATUS);
	weft_tce_mark(tbl->used, mr->first, mr->nr_tce, false);
	atomic_dec(&weft_res.mrs);
	dev_dbg(&wdev->pdev->dev, "MR %u (PVO 0x%llx) deregistered\n", mr->handle, mr->pvo);
	weft_mr_unpin(wdev, mr, true);
}

int weft_dereg_mr(struct weft_ctx *ctx, u32 handle)
{
	struct weft_mr *mr = xa_erase(&ctx->mrs, handle);

	if (!mr)
		return -ENOENT;
	/* Invalidated by a recovery: the handle is forgotten now. */
	if (xa_is_value(mr))
		return -ESTALE;
	weft_mr_free(ctx->wdev, mr);
	return 0;
}

/*
 * Deregister everything.  With stale (recovery) each handle stays reserved
 * as a marker, so deregistering it later says ESTALE, not ENOENT.
 */
void weft_mr_release_all(struct weft_ctx *ctx, bool stale)
{
	struct weft_mr *mr;
	unsigned long idx;

	xa_for_each(&ctx->mrs, idx, mr) {
		if (xa_is_value(mr)) {
			if (!stale)
				xa_erase(&ctx->mrs, idx);
			continue;
		}
		if (stale)
			xa_store(&ctx->mrs, idx, xa_mk_value(0), GFP_KERNEL);
		else
			xa_erase(&ctx->mrs, idx);
		weft_mr_free(ctx->wdev, mr);
	}
}

/* Pin and DMA-map [addr, addr + len); fill mr->pages/npages/sgt. */
static int weft_mr_pin(struct weft_dev *wdev, struct weft_mr *mr, u64 addr, u64 len)
{
	unsigned long start = addr & PAGE_MASK, n, done = 0;
	u64 limit, pinned;
	int ret;

	n = (PAGE_ALIGN(addr + len) - start) >> PAGE_SHIFT;
	/* RLIMIT_MEMLOCK, counted without mmap_lock (as pinned_vm). */
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	mmgrab(current->mm);
	mr->mm = current->mm;
	pinned = atomic64_add_return(n, &mr->mm->pinned_vm);
	mr->npages = 0;
	if (pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(n, &mr->mm->pinned_vm);
		mmdrop(mr->mm);
		mr->mm = NULL;
		return -ENOMEM;
	}
	mr->pages = kvmalloc_array(n, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages) {
		ret = -ENOMEM;
		goto err;
	}
	while (done < n) {
		ret = pin_user_pages_fast(start + done * PAGE_SIZE,
					  min_t(unsigned long, n - done, 4096),
					  FOLL_WRITE | FOLL_LONGTERM, mr->pages + done);
		if (ret <= 0) {
			ret = ret ? ret : -EFAULT;
			goto err;
		}
		done += ret;
		mr->npages = done;
		atomic64_add(ret, &weft_res.pages_pinned);
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err;
		}
	}
	ret = sg_alloc_table_from_pages(&mr->sgt, mr->pages, n, 0,
					(u64)n << PAGE_SHIFT, GFP_KERNEL);
	if (ret)
		goto err;
	ret = dma_map_sgtable(&wdev->pdev->dev, &mr->sgt, DMA_BIDIRECTIONAL, 0);
	if (ret)
		goto err;
	return 0;
err:
	/* The pinned_vm charge is for all n pages; unpin only those pinned. */
	atomic64_sub(n - mr->npages, &mr->mm->pinned_vm);
	return ret;
}

/*
 * Fill TCEs: 4 KiB tables map each page; 64 KiB and 16 MiB tables need
 * each of their pages physically contiguous and aligned.
 */
static int weft_mr_fill(struct weft_mr *mr, struct weft_tce_table *tbl, u32 key22,
			bool dry_run)
{
	struct sg_dma_page_iter it;
	dma_addr_t base = 0, d;
	unsigned long k = 0;
	u32 per = 1u << (tbl->shift - PAGE_SHIFT);

	for_each_sgtable_dma_page(&mr->sgt, &it, 0) {
		d = sg_page_iter_dma_address(&it);
		if (k % per == 0) {
			if (d & ((1ull << tbl->shift) - 1))
				return -EINVAL;
			base = d;
			if (!dry_run)
				WRITE_ONCE(tbl->va[mr->first + k / per],
					   cpu_to_le64(weft_tce_make(key22, d >> tbl->shift)));
		} else if (d != base + (u64)(k % per) * PAGE_SIZE) {
			return -EINVAL;
		}
		k++;
	}
	return 0;
}

int weft_reg_mr(struct weft_ctx *ctx, struct weft_ioc_reg_mr *a)
{
	struct weft_dev *wdev = ctx->wdev;
	struct weft_tce_table *tbl = NULL;
	u32 shift, t, t0, t1, ntce, key, hw;
	struct weft_mr *mr;
	s64 first = -1;
	u64 end, span;
	int ret, s;

	shift = a->page_shift ? a->page_shift : WEFT_PAGE_SHIFT_4K;
	if (a->reserved || !a->length || !a->job_id ||
	    check_add_overflow(a->addr, a->length, &end) ||
	    !weft_slot_tables(shift, weft_tce_64k_tables, &t0, &t1) ||
	    !weft_mr_aligned(shift, a->addr, a->length))
		return -EINVAL;
	span = ((end + (1ull << shift) - 1) >> shift) - (a->addr >> shift);
	if (span > weft_tce_entries(shift))
		return -ENOSPC;
	ntce = span;
	if (!access_ok((void __user *)(uintptr_t)a->addr, a->length))
		return -EFAULT;

	mutex_lock(&wdev->lock);
	ret = wdev->dead ? -ENODEV : weft_job_slot(ctx, a->job_id);
	mutex_unlock(&wdev->lock);
	if (ret < 0)
		return ret;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return -ENOMEM;
	/* Pinning takes mmap_lock: never under wdev->lock. */
	ret = weft_mr_pin(wdev, mr, a->addr, a->length);
	if (ret) {
		weft_mr_unpin(wdev, mr, false);
		return ret;
	}

	mutex_lock(&wdev->lock);
	s = wdev->dead ? -ENODEV : weft_job_slot(ctx, a->job_id);
	if (s < 0) {
		ret = s;
		goto err_unlock;
	}
	for (t = t0; t < t1; t++) {
		tbl = &wdev->slots[s].tbl[t];
		first = weft_tce_first_fit(tbl->used, tbl->nr, ntce);
		if (first >= 0)
			break;
	}
	if (t == t1) {
		ret = -ENOSPC;
		goto err_unlock;
	}
	hw = weft_hw_table(s, t);
	ret = weft_mr_fill(mr, tbl, 0, true);
	if (ret)
		goto err_unlock;
	key = weft_keygen_next(&wdev->keys);
	if (!key) {
		dev_err(&wdev->pdev->dev, "the adapter did not advance its key epoch\n");
		ret = -EIO;
		goto err_unlock;
	}
	mr->slot = s;
	mr->table = t;
	mr->first = first;
	mr->nr_tce = ntce;
	mr->key = key;
	ret = xa_alloc(&ctx->mrs, &mr->handle, mr, xa_limit_31b, GFP_KERNEL);
	if (ret)
		goto err_unlock;
	weft_tce_mark(tbl->used, first, ntce, true);
	weft_mr_fill(mr, tbl, (key << WEFT_PVO_TABLE_BITS) | hw, false);
	dma_wmb();
	mr->pvo = weft_pvo_make(key, hw, ((u64)first << shift) |
				(a->addr & ((1ull << shift) - 1)));
	atomic_inc(&weft_res.mrs);
	mutex_unlock(&wdev->lock);
	a->pvo = mr->pvo;
	a->handle = mr->handle;
	dev_dbg(&wdev->pdev->dev, "MR %u: 0x%llx+0x%llx -> PVO 0x%llx (table %u, TCE %lld..+%u)\n",
		mr->handle, a->addr, a->length, mr->pvo, hw, first, ntce);
	return 0;

err_unlock:
	mutex_unlock(&wdev->lock);
	weft_mr_unpin(wdev, mr, true);
	return ret;
}
