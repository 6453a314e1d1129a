// SPDX-License-Identifier: GPL-2.0
/*
 * weft.ko: job slots, TCE tables and memory registration, node-global
 * (seed item 24, docs/driver.md "Node-global tables").
 *
 * The seed's preferred layout: 5 job slots, each with 4 tables of
 * 16 MiB pages and 2 tables of 4 KiB pages (30 of the adapter's 32
 * tables), of which tce_64k_tables 16 MiB tables per slot serve 64 KiB
 * pages instead (the policy's weft_slot_tables).
 *
 * One state per guest (weft_node, under its lock): the slots and their
 * owners, the TCE-in-use maps, the registrations and the PVO key
 * generator (on the key epoch of the node's first adapter).  Each adapter
 * holds a copy of the 30 tables in its own DMA memory, registered at
 * probe; a registration's pages are DMA-mapped for every adapter and its
 * entries written into every copy, so one PVO works through all of them.
 * Lock order: wdev->lock, then weft_node.lock.
 */
#include <linux/dma-mapping.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "weft_drv.h"

/* A slot's table geometry and TCE-in-use map. */
struct weft_tce_map {
	u32 nr;			/* entries */
	u32 shift;		/* page shift: 12, 16 or 24 */
	u64 *used;		/* bitmap of entries in use (policy) */
};

struct weft_slot {
	u32 job_id;		/* 0 = free */
	u32 refs;		/* fds attached, through any adapter */
	struct weft_tce_map map[WEFT_SLOT_TABLES];
};

static struct {
	struct mutex lock;		/* everything below */
	struct list_head devs;		/* adapters, in probe order */
	struct list_head mrs;		/* registrations */
	struct weft_slot slots[WEFT_NR_JOB_SLOTS];
	struct weft_dev *key_dev;	/* whose key epoch keys uses */
	struct weft_keygen keys;	/* PVO keys (policy) */
} weft_node = {
	.lock = __MUTEX_INITIALIZER(weft_node.lock),
	.devs = LIST_HEAD_INIT(weft_node.devs),
	.mrs = LIST_HEAD_INIT(weft_node.mrs),
};

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

void weft_node_fini(void)
{
	u32 s, t;

	for (s = 0; s < WEFT_NR_JOB_SLOTS; s++) {
		for (t = 0; t < WEFT_SLOT_TABLES; t++) {
			kfree(weft_node.slots[s].map[t].used);
			weft_node.slots[s].map[t].used = NULL;
		}
	}
}

/* Module load: the node's table geometry and TCE-in-use maps. */
int weft_node_init(void)
{
	u32 s, t;

	for (s = 0; s < WEFT_NR_JOB_SLOTS; s++) {
		for (t = 0; t < WEFT_SLOT_TABLES; t++) {
			struct weft_tce_map *map = &weft_node.slots[s].map[t];

			map->shift = weft_slot_table_shift(t, weft_tce_64k_tables);
			map->nr = weft_tce_entries(map->shift);
			map->used = kcalloc(WEFT_TCE_MAP_WORDS(map->nr), sizeof(u64),
					    GFP_KERNEL);
			if (!map->used) {
				weft_node_fini();
				return -ENOMEM;
			}
		}
	}
	return 0;
}

/* Probe: this adapter's copy of the 30 tables, zeroed. */
int weft_slots_init(struct weft_dev *wdev)
{
	u32 s, t;

	for (s = 0; s < WEFT_NR_JOB_SLOTS; s++) {
		for (t = 0; t < WEFT_SLOT_TABLES; t++) {
			struct weft_tce_table *tbl = &wdev->tbl[s][t];

			u32 nr = weft_node.slots[s].map[t].nr;

			tbl->va = weft_coherent_alloc(wdev, (size_t)nr * 8, &tbl->dma);
			if (!tbl->va) {
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
			struct weft_tce_table *tbl = &wdev->tbl[s][t];

			weft_coherent_free(wdev, (size_t)weft_node.slots[s].map[t].nr * 8,
					   tbl->va, tbl->dma);
			tbl->va = NULL;
		}
	}
}

/* Make slot s's owner (or none) the owner of its tables on every adapter. */
static void weft_slot_owner(u32 s)
{
	u64 owner = weft_node.slots[s].job_id ?
		    WEFT_TCE_OWNER_VALID | weft_node.slots[s].job_id : 0;
	struct weft_dev *wdev;
	u32 t;

	lockdep_assert_held(&weft_node.lock);
	list_for_each_entry(wdev, &weft_node.devs, node_link)
		for (t = 0; t < WEFT_SLOT_TABLES; t++)
			weft_wr(wdev, WEFT_REG_TCE_OWNER(weft_hw_table(s, t)), owner);
}

/* ---- PVO keys: the policy's generator on the first adapter's key epoch ---- */

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

/*
 * The generator moves to wdev's key epoch and takes a new epoch there,
 * so no key of an earlier boot comes back.
 */
static int weft_keys_start(struct weft_dev *wdev)
{
	lockdep_assert_held(&weft_node.lock);
	weft_node.key_dev = wdev;
	weft_keygen_init(&weft_node.keys, &weft_epoch_ops, wdev);
	if (!weft_keygen_take(&weft_node.keys)) {
		dev_err(&wdev->pdev->dev, "the adapter did not advance its key epoch (%llu)\n",
			weft_rd(wdev, WEFT_REG_KEY_EPOCH));
		weft_node.key_dev = NULL;
		return -EIO;
	}
	dev_dbg(&wdev->pdev->dev, "key epoch %llu: PVO key block %u\n", weft_node.keys.epoch,
		weft_key_block(weft_node.keys.epoch));
	return 0;
}

/* ---- per-adapter DMA mappings of a registration ------------------------ */

static void weft_mr_unmap(struct weft_dev *wdev, struct weft_mr *mr)
{
	struct weft_mr_map *map = &mr->map[wdev->id];

	if (map->mapped)
		dma_unmap_sgtable(&wdev->pdev->dev, &map->sgt, DMA_BIDIRECTIONAL, 0);
	if (map->sgt.sgl)
		sg_free_table(&map->sgt);
	memset(map, 0, sizeof(*map));
}

static int weft_mr_map(struct weft_dev *wdev, struct weft_mr *mr)
{
	struct weft_mr_map *map = &mr->map[wdev->id];
	int ret;

	ret = sg_alloc_table_from_pages(&map->sgt, mr->pages, mr->npages, 0,
					(u64)mr->npages << PAGE_SHIFT, GFP_KERNEL);
	if (ret)
		return ret;
	ret = dma_map_sgtable(&wdev->pdev->dev, &map->sgt, DMA_BIDIRECTIONAL, 0);
	if (ret) {
		weft_mr_unmap(wdev, mr);
		return ret;
	}
	map->mapped = true;
	return 0;
}

/*
 * Write mr's TCEs into wdev's copy: 4 KiB tables map each page; 64 KiB
 * and 16 MiB tables need each of their pages contiguous and aligned in
 * the adapter's DMA space.  key22 is the TCE key (PVO key and table).
 */
static int weft_mr_fill(struct weft_dev *wdev, struct weft_mr *mr, u32 key22,
			bool dry_run)
{
	struct weft_tce_table *tbl = &wdev->tbl[mr->slot][mr->table];
	u32 shift = weft_node.slots[mr->slot].map[mr->table].shift;
	u32 per = 1u << (shift - PAGE_SHIFT);
	struct sg_dma_page_iter it;
	dma_addr_t base = 0, d;
	unsigned long k = 0;

	for_each_sgtable_dma_page(&mr->map[wdev->id].sgt, &it, 0) {
		d = sg_page_iter_dma_address(&it);
		if (k % per == 0) {
			if (d & ((1ull << shift) - 1))
				return -EINVAL;
			base = d;
			if (!dry_run)
				WRITE_ONCE(tbl->va[mr->first + k / per],
					   cpu_to_le64(weft_tce_make(key22, d >> shift)));
		} else if (d != base + (u64)(k % per) * PAGE_SIZE) {
			return -EINVAL;
		}
		k++;
	}
	return 0;
}

static u32 weft_mr_key22(const struct weft_mr *mr)
{
	return (mr->key << WEFT_PVO_TABLE_LEN) | weft_hw_table(mr->slot, mr->table);
}

/* ---- adapters joining and leaving the node ------------------------------ */

/*
 * Probe, after weft_slots_init: the adapter joins the node.  The existing
 * registrations are mapped for it and written into its copy (the slots'
 * owners and the table registers follow in weft_slots_program).
 */
int weft_node_add(struct weft_dev *wdev)
{
	struct weft_mr *mr, *done;
	int ret = 0;

	mutex_lock(&weft_node.lock);
	if (list_empty(&weft_node.devs)) {
		ret = weft_keys_start(wdev);
		if (ret)
			goto out;
	}
	list_for_each_entry(mr, &weft_node.mrs, node) {
		ret = weft_mr_map(wdev, mr);
		if (!ret) {
			ret = weft_mr_fill(wdev, mr, 0, true);
			if (ret)
				weft_mr_unmap(wdev, mr);
		}
		if (ret) {
			dev_err(&wdev->pdev->dev, "cannot map registration %u (PVO 0x%llx): %d\n",
				mr->handle, mr->pvo, ret);
			list_for_each_entry(done, &weft_node.mrs, node) {
				if (done == mr)
					break;
				weft_mr_unmap(wdev, done);
			}
			if (weft_node.key_dev == wdev)
				weft_node.key_dev = NULL;
			goto out;
		}
		weft_mr_fill(wdev, mr, weft_mr_key22(mr), false);
	}
	dma_wmb();
	list_add_tail(&wdev->node_link, &weft_node.devs);
out:
	mutex_unlock(&weft_node.lock);
	return ret;
}

/*
 * Remove (after the adapter was reset, so it does no more DMA): the
 * adapter leaves the node; its mappings go, the other adapters keep
 * theirs.  If it held the key generator, the next adapter takes it.
 */
void weft_node_del(struct weft_dev *wdev)
{
	struct weft_mr *mr;

	mutex_lock(&weft_node.lock);
	list_del(&wdev->node_link);
	list_for_each_entry(mr, &weft_node.mrs, node)
		weft_mr_unmap(wdev, mr);
	if (weft_node.key_dev == wdev) {
		weft_node.key_dev = NULL;
		if (!list_empty(&weft_node.devs))
			weft_keys_start(list_first_entry(&weft_node.devs, struct weft_dev,
							 node_link));
	}
	mutex_unlock(&weft_node.lock);
}

/* Register every table with the adapter (probe, recovery). */
void weft_slots_program(struct weft_dev *wdev)
{
	u32 s, t, hw;
	u64 owner;

	mutex_lock(&weft_node.lock);
	for (s = 0; s < WEFT_NR_JOB_SLOTS; s++) {
		owner = weft_node.slots[s].job_id ?
			WEFT_TCE_OWNER_VALID | weft_node.slots[s].job_id : 0;
		for (t = 0; t < WEFT_SLOT_TABLES; t++) {
			struct weft_tce_map *map = &weft_node.slots[s].map[t];

			hw = weft_hw_table(s, t);
			weft_wr(wdev, WEFT_REG_TCE_BASE(hw), wdev->tbl[s][t].dma);
			weft_wr(wdev, WEFT_REG_TCE_CFG(hw), WEFT_TCE_CFG(map->nr, map->shift));
			weft_wr(wdev, WEFT_REG_TCE_OWNER(hw), owner);
		}
	}
	mutex_unlock(&weft_node.lock);
	for (hw = WEFT_NR_JOB_SLOTS * WEFT_SLOT_TABLES; hw < wdev->nr_tce_tables; hw++) {
		weft_wr(wdev, WEFT_REG_TCE_OWNER(hw), 0);
		weft_wr(wdev, WEFT_REG_TCE_CFG(hw), 0);
		weft_wr(wdev, WEFT_REG_TCE_BASE(hw), 0);
	}
}

/* ---- job slots ------------------------------------------------------------ */

static int weft_job_slot_locked(struct weft_ctx *ctx, u32 job_id)
{
	u32 s;

	lockdep_assert_held(&weft_node.lock);
	if (!job_id)
		return -EINVAL;
	for (s = 0; s < WEFT_NR_JOB_SLOTS; s++)
		if ((ctx->slots & BIT(s)) && weft_node.slots[s].job_id == job_id)
			return s;
	return -ENOENT;
}

int weft_job_slot(struct weft_ctx *ctx, u32 job_id)
{
	int s;

	mutex_lock(&weft_node.lock);
	s = weft_job_slot_locked(ctx, job_id);
	mutex_unlock(&weft_node.lock);
	return s;
}

/* wdev->lock held; the slot is the node's, whichever adapter ctx is on. */
int weft_job_attach(struct weft_ctx *ctx, struct weft_ioc_job *job)
{
	int s, free = -1, ret = 0;

	lockdep_assert_held(&ctx->wdev->lock);
	if (!job->job_id)
		return -EINVAL;
	mutex_lock(&weft_node.lock);
	if (weft_job_slot_locked(ctx, job->job_id) >= 0) {
		ret = -EALREADY;
		goto out;
	}
	for (s = 0; s < WEFT_NR_JOB_SLOTS; s++) {
		if (weft_node.slots[s].job_id == job->job_id)
			break;
		if (!weft_node.slots[s].job_id && free < 0)
			free = s;
	}
	if (s == WEFT_NR_JOB_SLOTS) {
		if (free < 0) {
			ret = -EBUSY;
			goto out;
		}
		s = free;
		weft_node.slots[s].job_id = job->job_id;
		weft_slot_owner(s);
		dev_dbg(&ctx->wdev->pdev->dev, "job %u owns slot %d\n", job->job_id, s);
	}
	weft_node.slots[s].refs++;
	ctx->slots |= BIT(s);
	job->slot = s;
out:
	mutex_unlock(&weft_node.lock);
	return ret;
}

static void weft_slot_put(u32 s)
{
	lockdep_assert_held(&weft_node.lock);
	if (--weft_node.slots[s].refs)
		return;
	weft_node.slots[s].job_id = 0;
	weft_slot_owner(s);
}

int weft_job_detach(struct weft_ctx *ctx, struct weft_ioc_job *job)
{
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
	mutex_lock(&weft_node.lock);
	ctx->slots &= ~BIT(s);
	weft_slot_put(s);
	mutex_unlock(&weft_node.lock);
	job->slot = s;
	return 0;
}

void weft_job_detach_all(struct weft_ctx *ctx)
{
	u32 s;

	mutex_lock(&weft_node.lock);
	for (s = 0; s < WEFT_NR_JOB_SLOTS; s++)
		if (ctx->slots & BIT(s))
			weft_slot_put(s);
	ctx->slots = 0;
	mutex_unlock(&weft_node.lock);
}

/* ---- memory registration ------------------------------------------------ */

/* Give the pages back (every mapping already gone). */
static void weft_mr_unpin(struct weft_mr *mr)
{
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

static void weft_mr_unmap_all(struct weft_mr *mr)
{
	struct weft_dev *wdev;

	lockdep_assert_held(&weft_node.lock);
	list_for_each_entry(wdev, &weft_node.devs, node_link)
		weft_mr_unmap(wdev, mr);
}

/*
 * Invalidate the TCEs in every adapter's copy, then give the pages back.
 * wdev->lock of the caller's adapter held.
 */
static void weft_mr_free(struct weft_mr *mr)
{
	struct weft_tce_map *map = &weft_node.slots[mr->slot].map[mr->table];
	struct weft_dev *wdev;
	u32 i;

	mutex_lock(&weft_node.lock);
	list_for_each_entry(wdev, &weft_node.devs, node_link)
		for (i = 0; i < mr->nr_tce; i++)
			WRITE_ONCE(wdev->tbl[mr->slot][mr->table].va[mr->first + i], 0);
	dma_wmb();
	/*
	 * Each adapter checks the TCE at every page boundary; a register read
	 * of each orders this invalidation before the pages are unmapped and
	 * unpinned.
	 */
	list_for_each_entry(wdev, &weft_node.devs, node_link)
		weft_rd(wdev, WEFT_REG_STATUS);
	weft_tce_mark(map->used, mr->first, mr->nr_tce, false);
	list_del(&mr->node);
	weft_mr_unmap_all(mr);
	mutex_unlock(&weft_node.lock);
	atomic_dec(&weft_res.mrs);
	pr_debug("weft: MR %u (PVO 0x%llx) deregistered\n", mr->handle, mr->pvo);
	weft_mr_unpin(mr);
}

int weft_dereg_mr(struct weft_ctx *ctx, u32 handle)
{
	struct weft_mr *mr = xa_erase(&ctx->mrs, handle);

	if (!mr)
		return -ENOENT;
	/* Invalidated by a recovery: the handle is forgotten now. */
	if (xa_is_value(mr))
		return -ESTALE;
	weft_mr_free(mr);
	return 0;
}

/*
 * Deregister everything of ctx, on every adapter.  With stale (recovery
 * of ctx's adapter) each handle stays reserved as a marker, so
 * deregistering it later says ESTALE, not ENOENT.
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
		weft_mr_free(mr);
	}
}

/* Pin [addr, addr + len); fill mr->pages/npages. */
static int weft_mr_pin(struct weft_mr *mr, u64 addr, u64 len)
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
	return 0;
err:
	/* The pinned_vm charge is for all n pages; unpin only those pinned. */
	atomic64_sub(n - mr->npages, &mr->mm->pinned_vm);
	return ret;
}

int weft_reg_mr(struct weft_ctx *ctx, struct weft_ioc_reg_mr *a)
{
	struct weft_dev *wdev = ctx->wdev, *ad;
	struct weft_tce_map *map = NULL;
	u32 shift, t, t0, t1, ntce, key;
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
	ret = weft_mr_pin(mr, a->addr, a->length);
	if (ret) {
		weft_mr_unpin(mr);
		return ret;
	}

	mutex_lock(&wdev->lock);
	if (wdev->dead) {
		mutex_unlock(&wdev->lock);
		weft_mr_unpin(mr);
		return -ENODEV;
	}
	mutex_lock(&weft_node.lock);
	s = weft_job_slot_locked(ctx, a->job_id);
	if (s < 0) {
		ret = s;
		goto err_unlock;
	}
	/* The pages as every adapter of the node addresses them. */
	list_for_each_entry(ad, &weft_node.devs, node_link) {
		ret = weft_mr_map(ad, mr);
		if (ret)
			goto err_unmap;
	}
	for (t = t0; t < t1; t++) {
		map = &weft_node.slots[s].map[t];
		first = weft_tce_first_fit(map->used, map->nr, ntce);
		if (first >= 0)
			break;
	}
	if (t == t1) {
		ret = -ENOSPC;
		goto err_unmap;
	}
	mr->slot = s;
	mr->table = t;
	mr->first = first;
	mr->nr_tce = ntce;
	list_for_each_entry(ad, &weft_node.devs, node_link) {
		ret = weft_mr_fill(ad, mr, 0, true);
		if (ret)
			goto err_unmap;
	}
	key = weft_node.key_dev ? weft_keygen_next(&weft_node.keys) : 0;
	if (!key) {
		dev_err(&wdev->pdev->dev, "the key adapter did not advance its key epoch\n");
		ret = -EIO;
		goto err_unmap;
	}
	mr->key = key;
	ret = xa_alloc(&ctx->mrs, &mr->handle, mr, xa_limit_31b, GFP_KERNEL);
	if (ret)
		goto err_unmap;
	weft_tce_mark(map->used, first, ntce, true);
	list_for_each_entry(ad, &weft_node.devs, node_link)
		weft_mr_fill(ad, mr, weft_mr_key22(mr), false);
	dma_wmb();
	mr->pvo = weft_pvo_make(key, weft_hw_table(s, t), ((u64)first << shift) |
				(a->addr & ((1ull << shift) - 1)));
	list_add_tail(&mr->node, &weft_node.mrs);
	atomic_inc(&weft_res.mrs);
	mutex_unlock(&weft_node.lock);
	mutex_unlock(&wdev->lock);
	a->pvo = mr->pvo;
	a->handle = mr->handle;
	dev_dbg(&wdev->pdev->dev, "MR %u: 0x%llx+0x%llx -> PVO 0x%llx (table %u, TCE %lld..+%u)\n",
		mr->handle, a->addr, a->length, mr->pvo, weft_hw_table(s, t), first, ntce);
	return 0;

err_unmap:
	weft_mr_unmap_all(mr);
err_unlock:
	mutex_unlock(&weft_node.lock);
	mutex_unlock(&wdev->lock);
	weft_mr_unpin(mr);
	return ret;
}

/* ---- debugfs ---------------------------------------------------------------- */

/* The node's slots and the TCEs in use, as wdev's copy holds them. */
void weft_tce_show_dev(struct seq_file *m, struct weft_dev *wdev)
{
	u32 s, t, i, k, used;

	mutex_lock(&weft_node.lock);
	for (s = 0; s < WEFT_NR_JOB_SLOTS; s++) {
		seq_printf(m, "slot %u: job %u refs %u\n", s, weft_node.slots[s].job_id,
			   weft_node.slots[s].refs);
		for (t = 0; t < WEFT_SLOT_TABLES; t++) {
			struct weft_tce_map *map = &weft_node.slots[s].map[t];
			struct weft_tce_table *tbl = &wdev->tbl[s][t];

			if (!tbl->va)
				continue;
			used = 0;
			for (k = 0; k < WEFT_TCE_MAP_WORDS(map->nr); k++)
				used += hweight64(map->used[k]);
			seq_printf(m, "  table %u: shift %u entries %u used %u dma 0x%llx\n",
				   s * WEFT_SLOT_TABLES + t, map->shift, map->nr, used,
				   (u64)tbl->dma);
			for (i = 0; i < map->nr; i++) {
				u64 tce = le64_to_cpu(READ_ONCE(tbl->va[i]));

				if (tce)
					seq_printf(m, "    [%u] key 0x%06x rpn 0x%llx\n", i,
						   weft_tce_key(tce), weft_tce_rpn(tce));
			}
		}
	}
	mutex_unlock(&weft_node.lock);
}

void weft_keys_show(struct seq_file *m)
{
	mutex_lock(&weft_node.lock);
	seq_printf(m, "key_epoch %llu key_block %u keys_used %u key_adapter %s\n",
		   weft_node.keys.epoch, weft_key_block(weft_node.keys.epoch),
		   weft_node.keys.seq,
		   weft_node.key_dev ? weft_node.key_dev->name : "none");
	mutex_unlock(&weft_node.lock);
}
