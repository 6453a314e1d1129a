// SPDX-License-Identifier: GPL-2.0
/*
 * weft.ko: counter-bearing RDMA objects (docs/counters.md).  The driver
 * pins and translates the caller's ranges, builds the page lists the
 * adapter copies, runs the CNT_CMD commands, maps each object's status
 * block read-only into its owner and wakes waiters on the zero event.
 * Processes never see a physical address.
 */
#include <linux/dma-mapping.h>
#include <linux/kref.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "weft_drv.h"
#include "weft_verbs.h"
#include "weft/cnt.h"
#include "weft/names.h"
#include "weft/verbs.h"

/* Pinned pages of a user range and their list for the adapter. */
struct weft_cpin {
	struct page **pages;
	unsigned long npages;
	struct mm_struct *mm;
	struct sg_table sgt;
	bool mapped;
	__le64 *list;
	dma_addr_t list_dma;
	size_t list_size;
	u32 first_off;
};

struct weft_cobj {
	struct kref ref;	/* the table's, and a waiter's */
	struct weft_dev *wdev;
	struct weft_ctx *ctx;
	u32 id;
	u16 gen;
	bool stale;		/* the adapter forgot it (recovery) */
	struct weft_cnt_block *blk;	/* one page, mapped read-only */
	dma_addr_t blk_dma;
	struct weft_cpin pin;
};

struct weft_cexp {
	struct weft_ctx *ctx;
	u32 idx;
	u16 gen;
	bool stale;
	u64 va, len;
	struct weft_cpin pin;
};

struct weft_cnt_drv {
	void *cmd;		/* command block, then the dump area */
	dma_addr_t cmd_dma;
	struct weft_cobj *obj[WEFT_CNT_NR_OBJ];
	struct weft_cexp *exp[WEFT_CNT_NR_EXP];
	DECLARE_BITMAP(ev, WEFT_CNT_NR_OBJ);	/* ids of weft_ib's event counters */
	wait_queue_head_t wq;
};

#define WEFT_CNT_CMD_AREA	PAGE_SIZE	/* block (128) + dump (<= 424) */

/* ---- pinning ----------------------------------------------------------- */

static void weft_cpin_release(struct weft_dev *wdev, struct weft_cpin *p)
{
	if (p->mapped)
		dma_unmap_sgtable(&wdev->pdev->dev, &p->sgt, DMA_BIDIRECTIONAL, 0);
	if (p->sgt.sgl)
		sg_free_table(&p->sgt);
	if (p->list)
		weft_coherent_free(wdev, p->list_size, p->list, p->list_dma);
	if (p->npages) {
		unpin_user_pages_dirty_lock(p->pages, p->npages, true);
		atomic64_sub(p->npages, &weft_res.pages_pinned);
	}
	if (p->mm) {
		atomic64_sub(p->npages, &p->mm->pinned_vm);
		mmdrop(p->mm);
	}
	kvfree(p->pages);
	memset(p, 0, sizeof(*p));
}

/* Pin [addr, addr + len) of the caller, map it for DMA and list its pages. */
static int weft_cpin(struct weft_dev *wdev, struct weft_cpin *p, u64 addr, u64 len)
{
	unsigned long start = addr & PAGE_MASK, n, i = 0;
	struct sg_dma_page_iter it;
	u64 end, limit;
	int ret;

	memset(p, 0, sizeof(*p));
	if (!len || len > WEFT_CNT_MAX_LEN || check_add_overflow(addr, len, &end))
		return -EINVAL;
	if (!access_ok((void __user *)(uintptr_t)addr, len))
		return -EFAULT;
	n = (PAGE_ALIGN(end) - start) >> PAGE_SHIFT;
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	if (atomic64_add_return(n, &current->mm->pinned_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		atomic64_sub(n, &current->mm->pinned_vm);
		return -ENOMEM;
	}
	mmgrab(current->mm);
	p->mm = current->mm;
	p->first_off = addr & ~PAGE_MASK;
	p->pages = kvmalloc_array(n, sizeof(*p->pages), GFP_KERNEL);
	if (!p->pages) {
		ret = -ENOMEM;
		goto err;
	}
	while (p->npages < n) {
		ret = pin_user_pages_fast(start + p->npages * PAGE_SIZE,
					  min_t(unsigned long, n - p->npages, 4096),
					  FOLL_WRITE | FOLL_LONGTERM, p->pages + p->npages);
		if (ret <= 0) {
			ret = ret ? ret : -EFAULT;
			goto err;
		}
		p->npages += ret;
		atomic64_add(ret, &weft_res.pages_pinned);
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err;
		}
	}
	ret = sg_alloc_table_from_pages(&p->sgt, p->pages, n, 0, n << PAGE_SHIFT, GFP_KERNEL);
	if (ret)
		goto err;
	ret = dma_map_sgtable(&wdev->pdev->dev, &p->sgt, DMA_BIDIRECTIONAL, 0);
	if (ret)
		goto err;
	p->mapped = true;
	p->list_size = PAGE_ALIGN(n * sizeof(__le64));
	p->list = weft_coherent_alloc(wdev, p->list_size, &p->list_dma);
	if (!p->list) {
		ret = -ENOMEM;
		goto err;
	}
	for_each_sgtable_dma_page(&p->sgt, &it, 0) {
		if (i == n)
			break;
		p->list[i++] = cpu_to_le64(sg_page_iter_dma_address(&it));
	}
	if (i != n) {
		ret = -EIO;
		goto err;
	}
	return 0;
err:
	/* pinned_vm was charged for all n pages: give back the rest. */
	atomic64_sub(n - p->npages, &p->mm->pinned_vm);
	weft_cpin_release(wdev, p);
	return ret;
}

/* ---- commands ------------------------------------------------------------ */

static int weft_cnt_status(u64 st)
{
	return st == WEFT_CMD_ESTATE ? -EALREADY : weft_vcmd_errno(st);
}

/* Run one command; wdev->lock held.  out0 gets resp.out[0]. */
static int weft_cnt_cmd(struct weft_dev *wdev, const struct weft_cnt_cmd *m, u64 *out0)
{
	struct weft_cnt_drv *cd = wdev->cnt;
	struct weft_vcmd_resp *r = cd->cmd + sizeof(*m);
	u64 st;

	lockdep_assert_held(&wdev->lock);
	memcpy(cd->cmd, m, sizeof(*m));
	memset(r, 0, sizeof(*r));
	/* The adapter runs the block during the register write. */
	weft_wr(wdev, WEFT_REG_CNT_CMD, cd->cmd_dma);
	st = weft_rd(wdev, WEFT_REG_CNT_CMD_STATUS);
	if (out0)
		*out0 = r->out[0];
	dev_dbg(&wdev->pdev->dev, "%s handle %u: status %llu\n", weft_cnt_cmd_name(m->op),
		m->handle, st);
	return weft_cnt_status(st);
}

static struct weft_cobj *weft_ctx_cobj(struct weft_ctx *ctx, u32 id)
{
	struct weft_cnt_drv *cd = ctx->wdev->cnt;

	if (id >= WEFT_CNT_NR_OBJ || !cd->obj[id] || cd->obj[id]->ctx != ctx)
		return NULL;
	return cd->obj[id];
}

static void weft_cobj_release(struct kref *ref)
{
	struct weft_cobj *o = container_of(ref, struct weft_cobj, ref);

	weft_cpin_release(o->wdev, &o->pin);
	weft_coherent_free(o->wdev, PAGE_SIZE, o->blk, o->blk_dma);
	kfree(o);
}

/* DESTROY, out of the table, unmapped; freed with the last reference. */
static void weft_cobj_free(struct weft_dev *wdev, struct weft_cobj *o)
{
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_DESTROY, .handle = o->id };

	m.u.obj.gen = o->gen;
	if (!o->stale && !wdev->dead)
		weft_cnt_cmd(wdev, &m, NULL);
	wdev->cnt->obj[o->id] = NULL;
	unmap_mapping_range(o->ctx->mapping, WEFT_MMAP_CNT + (u64)o->id * PAGE_SIZE,
			    PAGE_SIZE, 1);
	WRITE_ONCE(o->stale, true);
	wake_up_interruptible_all(&wdev->cnt->wq);
	kref_put(&o->ref, weft_cobj_release);
}

static void weft_cexp_free(struct weft_dev *wdev, struct weft_cexp *e)
{
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_UNEXPOSE, .handle = e->idx };

	m.u.obj.gen = e->gen;
	if (!e->stale && !wdev->dead)
		weft_cnt_cmd(wdev, &m, NULL);
	wdev->cnt->exp[e->idx] = NULL;
	weft_cpin_release(wdev, &e->pin);
	kfree(e);
}

/* ---- ioctls ---------------------------------------------------------------- */

int weft_cnt_create(struct weft_ctx *ctx, struct weft_ioc_cnt_create *a)
{
	struct weft_dev *wdev = ctx->wdev;
	struct weft_cnt_drv *cd = wdev->cnt;
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_CREATE };
	struct weft_cobj *o;
	u64 gen;
	u32 id;
	int ret;

	if (a->reserved || a->mode > WEFT_CNT_MODE_OPS || (a->flags & ~WEFT_CNTF_IRQ) ||
	    (a->mode == WEFT_CNT_MODE_OPS && (!a->ops || a->ops > 0xffff)))
		return -EINVAL;
	o = kzalloc(sizeof(*o), GFP_KERNEL);
	if (!o)
		return -ENOMEM;
	kref_init(&o->ref);
	o->wdev = wdev;
	/* Pins user pages: not under wdev->lock (mmap_lock order). */
	ret = weft_cpin(wdev, &o->pin, a->addr, a->length);
	if (ret)
		goto err_free;
	o->blk = weft_coherent_alloc(wdev, PAGE_SIZE, &o->blk_dma);
	if (!o->blk) {
		ret = -ENOMEM;
		goto err_pin;
	}
	mutex_lock(&wdev->lock);
	ret = -ENODEV;
	if (wdev->dead)
		goto err_unlock;
	ret = -ENOSPC;
	for (id = 0; id < WEFT_CNT_NR_OBJ; id++)
		if (!cd->obj[id] && !test_bit(id, cd->ev))
			break;
	if (id == WEFT_CNT_NR_OBJ)
		goto err_unlock;
	m.handle = id;
	m.u.create.block_addr = o->blk_dma;
	m.u.create.pages_addr = o->pin.list_dma;
	m.u.create.length = a->length;
	m.u.create.first_off = o->pin.first_off;
	m.u.create.mode = a->mode;
	m.u.create.flags = a->flags;
	m.u.create.vector = 0;
	m.u.create.ops = a->ops;
	ret = weft_cnt_cmd(wdev, &m, &gen);
	if (ret)
		goto err_unlock;
	o->ctx = ctx;
	o->id = id;
	o->gen = gen;
	cd->obj[id] = o;
	mutex_unlock(&wdev->lock);
	a->id = id;
	a->gen = o->gen;
	a->block_offset = WEFT_MMAP_CNT + (u64)id * PAGE_SIZE;
	return 0;

err_unlock:
	mutex_unlock(&wdev->lock);
	weft_coherent_free(wdev, PAGE_SIZE, o->blk, o->blk_dma);
err_pin:
	weft_cpin_release(wdev, &o->pin);
err_free:
	kfree(o);
	return ret;
}

/* The rest run with wdev->lock held. */
int weft_cnt_post(struct weft_ctx *ctx, struct weft_ioc_cnt_post *a)
{
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_POST };
	struct weft_cobj *o = weft_ctx_cobj(ctx, a->id);
	u64 seq;
	int ret;

	if (!o)
		return -ENOENT;
	if (o->stale)
		return -ESTALE;
	if (a->reserved || a->slot >= WEFT_CNT_MAX_OPS || a->node > WEFT_NODE_MAX_UNICAST ||
	    (a->dir != WEFT_CNT_READ && a->dir != WEFT_CNT_WRITE))
		return -EINVAL;
	m.handle = o->id;
	m.u.post.gen = o->gen;
	m.u.post.slot = a->slot;
	m.u.post.dir = a->dir;
	m.u.post.node = a->node;
	m.u.post.offset = a->offset;
	m.u.post.length = a->length;
	m.u.post.remote_va = a->remote_va;
	ret = weft_cnt_cmd(ctx->wdev, &m, &seq);
	if (!ret)
		a->seq = seq;
	return ret;
}

int weft_cnt_destroy(struct weft_ctx *ctx, u32 id)
{
	struct weft_cobj *o = weft_ctx_cobj(ctx, id);

	if (!o)
		return -ENOENT;
	weft_cobj_free(ctx->wdev, o);
	return 0;
}

int weft_cnt_expose(struct weft_ctx *ctx, struct weft_ioc_cnt_expose *a)
{
	struct weft_dev *wdev = ctx->wdev;
	struct weft_cnt_drv *cd = wdev->cnt;
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_EXPOSE };
	struct weft_cexp *e;
	u64 gen;
	u32 idx;
	int ret;

	if (a->reserved || !a->rights || (a->rights & ~(WEFT_CNT_R_READ | WEFT_CNT_R_WRITE)) ||
	    (a->peer > WEFT_NODE_MAX_UNICAST && a->peer != WEFT_CNT_ANY_PEER))
		return -EINVAL;
	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	ret = weft_cpin(wdev, &e->pin, a->addr, a->length);
	if (ret)
		goto err_free;
	mutex_lock(&wdev->lock);
	ret = -ENODEV;
	if (wdev->dead)
		goto err_unlock;
	ret = -ENOSPC;
	for (idx = 0; idx < WEFT_CNT_NR_EXP; idx++)
		if (!cd->exp[idx])
			break;
	if (idx == WEFT_CNT_NR_EXP)
		goto err_unlock;
	m.handle = idx;
	m.u.expose.va = a->addr;
	m.u.expose.length = a->length;
	m.u.expose.pages_addr = e->pin.list_dma;
	m.u.expose.first_off = e->pin.first_off;
	m.u.expose.peer = a->peer;
	m.u.expose.rights = a->rights;
	ret = weft_cnt_cmd(wdev, &m, &gen);
	if (ret)
		goto err_unlock;
	e->ctx = ctx;
	e->idx = idx;
	e->gen = gen;
	e->va = a->addr;
	e->len = a->length;
	cd->exp[idx] = e;
	mutex_unlock(&wdev->lock);
	a->index = idx;
	return 0;

err_unlock:
	mutex_unlock(&wdev->lock);
	weft_cpin_release(wdev, &e->pin);
err_free:
	kfree(e);
	return ret;
}

int weft_cnt_unexpose(struct weft_ctx *ctx, u32 idx)
{
	struct weft_cnt_drv *cd = ctx->wdev->cnt;

	if (idx >= WEFT_CNT_NR_EXP || !cd->exp[idx] || cd->exp[idx]->ctx != ctx)
		return -ENOENT;
	weft_cexp_free(ctx->wdev, cd->exp[idx]);
	return 0;
}

static bool weft_cnt_settled(struct weft_cobj *o, u32 failed)
{
	return !READ_ONCE(o->blk->count) || READ_ONCE(o->blk->failed) != failed ||
	       READ_ONCE(o->stale);
}

/* Sleeps without wdev->lock, holding a reference on the object. */
int weft_cnt_wait(struct weft_ctx *ctx, struct weft_ioc_cnt_wait *a)
{
	struct weft_dev *wdev = ctx->wdev;
	struct weft_cobj *o;
	long left = 1;
	int ret = 0;

	if (a->error || a->count)
		return -EINVAL;
	mutex_lock(&wdev->lock);
	o = weft_ctx_cobj(ctx, a->id);
	if (o)
		kref_get(&o->ref);
	mutex_unlock(&wdev->lock);
	if (!o)
		return -ENOENT;
	if (a->timeout_ms)
		left = wait_event_interruptible_timeout(wdev->cnt->wq,
							weft_cnt_settled(o, a->failed),
							msecs_to_jiffies(a->timeout_ms));
	if (left < 0) {
		ret = left;
	} else if (READ_ONCE(o->stale)) {
		ret = -ESTALE;
	} else {
		a->count = READ_ONCE(o->blk->count);
		a->error = READ_ONCE(o->blk->error);
		if (a->count && READ_ONCE(o->blk->failed) == a->failed && a->timeout_ms)
			ret = -ETIMEDOUT;
		a->failed = READ_ONCE(o->blk->failed);
	}
	kref_put(&o->ref, weft_cobj_release);
	return ret;
}

/* ---- event counters, for weft_ib.ko (docs/counters.md "Event counters") --- */

/*
 * An EVENT object over the status block at block (16 bytes, 8-aligned, the
 * caller's DMA address): its id and generation.  The caller owns the block
 * and destroys the object before freeing it.
 */
int weft_cnt_ev_create(struct weft_dev *wdev, dma_addr_t block, u32 *id, u16 *gen)
{
	struct weft_cnt_drv *cd = wdev->cnt;
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_CREATE };
	u64 g;
	u32 i;
	int ret;

	if (!cd || (block & 7))
		return -EINVAL;
	mutex_lock(&wdev->lock);
	ret = -ENODEV;
	if (wdev->dead || !cd->cmd)
		goto out;
	ret = -ENOSPC;
	for (i = 0; i < WEFT_CNT_NR_OBJ; i++)
		if (!cd->obj[i] && !test_bit(i, cd->ev))
			break;
	if (i == WEFT_CNT_NR_OBJ)
		goto out;
	m.handle = i;
	m.u.create.block_addr = block;
	m.u.create.mode = WEFT_CNT_MODE_EVENT;
	ret = weft_cnt_cmd(wdev, &m, &g);
	if (ret)
		goto out;
	set_bit(i, cd->ev);
	*id = i;
	*gen = g;
out:
	mutex_unlock(&wdev->lock);
	return ret;
}
EXPORT_SYMBOL_GPL(weft_cnt_ev_create);

/* Command m on this driver's event counter id, while the adapter lives. */
static int weft_cnt_ev_cmd(struct weft_dev *wdev, u32 id, const struct weft_cnt_cmd *m, u64 *out0)
{
	int ret;

	mutex_lock(&wdev->lock);
	if (wdev->dead || !wdev->cnt->cmd || !test_bit(id, wdev->cnt->ev))
		ret = -ENODEV;
	else
		ret = weft_cnt_cmd(wdev, m, out0);
	mutex_unlock(&wdev->lock);
	return ret;
}

/* Slot 1..3 of verbs QP qpn counts on event counter (id, gen). */
int weft_cnt_ev_bind(struct weft_dev *wdev, u32 id, u16 gen, u32 qpn, u8 slot, u8 events)
{
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_BIND_QP, .handle = id };

	if (!wdev->cnt || id >= WEFT_CNT_NR_OBJ || !slot || slot >= WEFT_CNT_QP_SLOTS ||
	    (events & ~WEFT_CNT_EV_ALL))
		return -EINVAL;
	m.u.bind.gen = gen;
	m.u.bind.slot = slot;
	m.u.bind.events = events;
	m.u.bind.qpn = qpn;
	return weft_cnt_ev_cmd(wdev, id, &m, NULL);
}
EXPORT_SYMBOL_GPL(weft_cnt_ev_bind);

/*
 * EV_SET: op (WEFT_CNT_EV_ADD, _SET) on word (WEFT_CNT_EV_COUNT, _ERRORS) of
 * event counter (id, gen); the word's new value in *val.  The adapter
 * releases the WAIT_CNTs the new count lets pass (docs/counters.md).
 */
int weft_cnt_ev_set(struct weft_dev *wdev, u32 id, u16 gen, u8 op, u8 word, u64 *val)
{
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_EV_SET, .handle = id };

	if (!wdev->cnt || id >= WEFT_CNT_NR_OBJ ||
	    (op != WEFT_CNT_EV_ADD && op != WEFT_CNT_EV_SET) ||
	    (word != WEFT_CNT_EV_COUNT && word != WEFT_CNT_EV_ERRORS))
		return -EINVAL;
	m.u.ev.gen = gen;
	m.u.ev.op = op;
	m.u.ev.word = word;
	m.u.ev.value = *val;
	return weft_cnt_ev_cmd(wdev, id, &m, val);
}
EXPORT_SYMBOL_GPL(weft_cnt_ev_set);

/* The object goes; its block is the caller's again once this returns. */
void weft_cnt_ev_destroy(struct weft_dev *wdev, u32 id, u16 gen)
{
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_DESTROY, .handle = id };

	if (!wdev->cnt || id >= WEFT_CNT_NR_OBJ)
		return;
	m.u.obj.gen = gen;
	mutex_lock(&wdev->lock);
	if (test_and_clear_bit(id, wdev->cnt->ev) && !wdev->dead && wdev->cnt->cmd)
		weft_cnt_cmd(wdev, &m, NULL);
	mutex_unlock(&wdev->lock);
}
EXPORT_SYMBOL_GPL(weft_cnt_ev_destroy);

/* ---- mmap: the status page, read-only ------------------------------------ */

int weft_cnt_mmap(struct weft_ctx *ctx, struct vm_area_struct *vma, u64 off)
{
	struct weft_dev *wdev = ctx->wdev;
	struct weft_cobj *o;
	unsigned long pgoff;
	int ret;

	if (off % PAGE_SIZE || vma->vm_end - vma->vm_start != PAGE_SIZE ||
	    (vma->vm_flags & VM_WRITE))
		return -EINVAL;
	mutex_lock(&wdev->lock);
	o = weft_ctx_cobj(ctx, off / PAGE_SIZE);
	if (!o) {
		ret = -EACCES;
		goto out;
	}
#ifdef WEFT_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, VM_DONTCOPY);
	vm_flags_clear(vma, VM_MAYEXEC | VM_MAYWRITE);
#else
	vma->vm_flags = (vma->vm_flags | VM_DONTCOPY) & ~(VM_MAYEXEC | VM_MAYWRITE);
#endif
	pgoff = vma->vm_pgoff;
	vma->vm_pgoff = 0;
	ret = dma_mmap_coherent(&wdev->pdev->dev, vma, o->blk, o->blk_dma, PAGE_SIZE);
	vma->vm_pgoff = pgoff;
out:
	mutex_unlock(&wdev->lock);
	return ret;
}

/* ---- events, teardown, recovery ------------------------------------------- */

/* From weft_dispatch, evlock held: true if the event was a counter one. */
bool weft_cnt_event(struct weft_dev *wdev, const struct weft_event *ev)
{
	if (ev->type != WEFT_EV_CNT_ZERO && ev->type != WEFT_EV_CNT_ERROR)
		return false;
	if (wdev->cnt)
		wake_up_interruptible_all(&wdev->cnt->wq);
	return true;
}

/* Everything a context holds; wdev->lock held. */
void weft_cnt_teardown(struct weft_ctx *ctx)
{
	struct weft_dev *wdev = ctx->wdev;
	struct weft_cnt_drv *cd = wdev->cnt;
	u32 i;

	if (!cd)
		return;
	for (i = 0; i < WEFT_CNT_NR_OBJ; i++)
		if (cd->obj[i] && cd->obj[i]->ctx == ctx)
			weft_cobj_free(wdev, cd->obj[i]);
	for (i = 0; i < WEFT_CNT_NR_EXP; i++)
		if (cd->exp[i] && cd->exp[i]->ctx == ctx)
			weft_cexp_free(wdev, cd->exp[i]);
}

/* The adapter forgot every object and exposure; wdev->lock held. */
void weft_cnt_recover(struct weft_dev *wdev)
{
	struct weft_cnt_drv *cd = wdev->cnt;
	u32 i;

	if (!cd)
		return;
	for (i = 0; i < WEFT_CNT_NR_OBJ; i++)
		if (cd->obj[i])
			WRITE_ONCE(cd->obj[i]->stale, true);
	for (i = 0; i < WEFT_CNT_NR_EXP; i++)
		if (cd->exp[i])
			cd->exp[i]->stale = true;
	wake_up_interruptible_all(&cd->wq);
}

int weft_cnt_add(struct weft_dev *wdev)
{
	struct weft_cnt_drv *cd = kzalloc(sizeof(*cd), GFP_KERNEL);

	if (!cd)
		return -ENOMEM;
	cd->cmd = weft_coherent_alloc(wdev, WEFT_CNT_CMD_AREA, &cd->cmd_dma);
	if (!cd->cmd) {
		kfree(cd);
		return -ENOMEM;
	}
	init_waitqueue_head(&cd->wq);
	wdev->cnt = cd;
	return 0;
}

/*
 * After every context was torn down and the adapter reset: the command
 * area goes; the wait queue stays for waiters until weft_cnt_free().
 */
void weft_cnt_del(struct weft_dev *wdev)
{
	struct weft_cnt_drv *cd = wdev->cnt;

	if (!cd || !cd->cmd)
		return;
	weft_coherent_free(wdev, WEFT_CNT_CMD_AREA, cd->cmd, cd->cmd_dma);
	cd->cmd = NULL;
}

/* The device structure is released. */
void weft_cnt_free(struct weft_dev *wdev)
{
	kfree(wdev->cnt);
	wdev->cnt = NULL;
}

/* ---- debugfs: weftN/cnt ------------------------------------------------------ */

static const char *const weft_cnt_op_state[] = {
	"free", "req", "run", "done", "failed",
};

int weft_cnt_show(struct seq_file *m, struct weft_dev *wdev)
{
	struct weft_cnt_drv *cd = wdev->cnt;
	struct weft_cnt_obj_dump *d;
	struct weft_cnt_exp_dump *x;
	struct weft_cnt_cmd q = { .op = WEFT_CNT_CMD_QUERY };
	u32 i, s;

	if (!cd || !cd->cmd)
		return 0;
	mutex_lock(&wdev->lock);
	d = cd->cmd + WEFT_CNT_CMD_BLOCK_SIZE;
	x = cd->cmd + WEFT_CNT_CMD_BLOCK_SIZE;
	q.u.query.addr = cd->cmd_dma + WEFT_CNT_CMD_BLOCK_SIZE;
	for (i = 0; i < WEFT_CNT_NR_OBJ && !wdev->dead; i++) {
		struct weft_cobj *o = cd->obj[i];

		if (!o)
			continue;
		q.op = WEFT_CNT_CMD_QUERY;
		q.handle = i;
		seq_printf(m, "object %u gen %u%s pages %lu first_off %u count %llu error %s failed %u\n",
			   i, o->gen, o->stale ? " stale" : "", o->pin.npages, o->pin.first_off,
			   READ_ONCE(o->blk->count), weft_reason_name(READ_ONCE(o->blk->error)),
			   READ_ONCE(o->blk->failed));
		if (o->stale || weft_cnt_cmd(wdev, &q, NULL))
			continue;
		seq_printf(m, "  adapter: live %u mode %u flags 0x%x gen %u count %llu notified %u ops_done %u\n",
			   d->live, d->mode, d->flags, d->gen, d->count, d->notified, d->ops_done);
		for (s = 0; s < WEFT_CNT_MAX_OPS; s++) {
			struct weft_cnt_op_dump *op = &d->op[s];

			if (op->state == WEFT_CNT_OP_FREE || op->state > WEFT_CNT_OP_FAILED)
				continue;
			seq_printf(m, "  op %u %s %s node %u seq %u offset %llu length %llu va 0x%llx applied %llu retries %u reason %s\n",
				   s, weft_cnt_op_state[op->state],
				   op->dir == WEFT_CNT_READ ? "read" : "write", op->node, op->seq,
				   op->offset, op->length, op->remote_va, op->applied,
				   op->retries, weft_reason_name(op->reason));
		}
	}
	for (i = 0; i < WEFT_CNT_NR_EXP && !wdev->dead; i++) {
		struct weft_cexp *e = cd->exp[i];

		if (!e)
			continue;
		q.op = WEFT_CNT_CMD_QUERY_EXP;
		q.handle = i;
		seq_printf(m, "exposure %u gen %u%s va 0x%llx length %llu pages %lu\n", i, e->gen,
			   e->stale ? " stale" : "", e->va, e->len, e->pin.npages);
		if (e->stale || weft_cnt_cmd(wdev, &q, NULL))
			continue;
		seq_printf(m, "  adapter: live %u rights 0x%x peer %u served %llu\n",
			   x->live, x->rights, x->peer, x->served);
	}
	mutex_unlock(&wdev->lock);
	return 0;
}
