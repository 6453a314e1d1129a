// SPDX-License-Identifier: GPL-2.0
/*
 * weft_ib.ko: memory regions and windows in the adapter's TPT
 * (hw-spec 16.5): the kernel's DMA MR (physical addressing, privileged
 * QPs only), user MRs with a page list, fast-registration MRs, MWs.
 */
#include <linux/dma-mapping.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>
#include <rdma/iter.h>

#include "weft_ib.h"

#define WEFT_IB_MAX_USER_PAGES	(WEFT_IB_MAX_RING / sizeof(u64))

/* A free Tag_Index and a Tag_Instance it has not had last time. */
static int weft_ib_stag_alloc(struct weft_ibdev *dev, u32 *index, u32 *stag)
{
	int ret;
	u8 inst;

	ret = ida_alloc_range(&dev->tpt_ida, 1, dev->caps.nr_tpt - 1, GFP_KERNEL);
	if (ret < 0)
		return ret == -ENOSPC ? -ENOMEM : ret;
	spin_lock(&dev->gen_lock);
	inst = ++dev->tpt_gen[ret];
	spin_unlock(&dev->gen_lock);
	*index = ret;
	*stag = WEFT_STAG(ret, inst);
	return 0;
}

/*
 * Frees a TPT entry in the adapter.  Its STag may have moved on (fast
 * registration, window binds) since the driver last saw it: the entry's
 * own is asked, and left in *stag.  Returns -EBUSY for a region that
 * windows are bound to (the entry stays); any other failure leaves no
 * entry to free.
 */
static int weft_ib_stag_dereg(struct weft_ibdev *dev, u32 index, u32 *stag)
{
	struct weft_vcmd cmd = { .op = WEFT_VCMD_DEREG_STAG, .handle = *stag };
	struct weft_tpt_entry *e;
	dma_addr_t dma;
	int ret;

	ret = weft_ib_cmd(dev, &cmd);
	if (!ret || ret == -EBUSY || dev->fatal)
		return ret == -EBUSY ? ret : 0;
	e = dma_alloc_coherent(&dev->pdev->dev, sizeof(*e), &dma, GFP_KERNEL);
	if (!e)
		return 0;
	cmd = (struct weft_vcmd){ .op = WEFT_VCMD_QUERY_TPT, .handle = index };
	cmd.u.query.addr = dma;
	if (!weft_ib_cmd(dev, &cmd) && e->stag != *stag) {
		*stag = e->stag;
		cmd = (struct weft_vcmd){ .op = WEFT_VCMD_DEREG_STAG, .handle = *stag };
		ret = weft_ib_cmd(dev, &cmd);
	}
	dma_free_coherent(&dev->pdev->dev, sizeof(*e), e, dma);
	return ret == -EBUSY ? ret : 0;
}

/* Returns a Tag_Index whose entry the adapter no longer holds. */
static void weft_ib_stag_release(struct weft_ibdev *dev, u32 index, u32 stag)
{
	spin_lock(&dev->gen_lock);
	dev->tpt_gen[index] = (u8)WEFT_STAG_INSTANCE(stag);
	spin_unlock(&dev->gen_lock);
	ida_free(&dev->tpt_ida, index);
}

static void weft_ib_stag_free(struct weft_ibdev *dev, u32 index, u32 stag)
{
	weft_ib_stag_dereg(dev, index, &stag);
	weft_ib_stag_release(dev, index, stag);
}

static int weft_ib_check_access(int access)
{
	access &= ~IB_ACCESS_OPTIONAL;
	if (access & ~(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
		       IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_MW_BIND))
		return -EOPNOTSUPP;
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

static struct weft_ibmr *weft_ib_mr_new(struct weft_ibdev *dev, u32 *stag)
{
	struct weft_ibmr *mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	int ret;

	if (!mr)
		return ERR_PTR(-ENOMEM);
	ret = weft_ib_stag_alloc(dev, &mr->index, stag);
	if (ret) {
		kfree(mr);
		return ERR_PTR(ret);
	}
	mr->ibmr.lkey = *stag;
	mr->ibmr.rkey = *stag;
	return mr;
}

struct ib_mr *weft_ib_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct weft_ibdev *dev = to_wdev(ibpd->device);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_REG_MR };
	struct weft_ibmr *mr;
	u32 stag;
	int ret;

	ret = weft_ib_check_access(access);
	if (ret)
		return ERR_PTR(ret);
	mr = weft_ib_mr_new(dev, &stag);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	cmd.handle = stag;
	cmd.u.mr.va = 0;
	cmd.u.mr.length = 1ull << 40;
	cmd.u.mr.pd = to_wpd(ibpd)->pdn;
	cmd.u.mr.access = weft_ib_access(access);
	cmd.u.mr.page_shift = WEFT_ATT_MIN_SHIFT;
	cmd.u.mr.att_level = WEFT_ATT_PHYS;
	ret = weft_ib_cmd(dev, &cmd);
	if (ret) {
		weft_ib_stag_free(dev, mr->index, stag);
		kfree(mr);
		return ERR_PTR(ret);
	}
	return &mr->ibmr;
}

static int weft_ib_pages_alloc(struct weft_ibdev *dev, struct weft_ibmr *mr, u32 n)
{
	mr->pages_size = PAGE_ALIGN(n * sizeof(u64));
	mr->pages = dma_alloc_coherent(&dev->pdev->dev, mr->pages_size, &mr->pages_dma,
				       GFP_KERNEL);
	if (!mr->pages)
		return -ENOMEM;
	mr->max_pages = n;
	return 0;
}

static void weft_ib_pages_free(struct weft_ibdev *dev, struct weft_ibmr *mr)
{
	if (mr->pages)
		dma_free_coherent(&dev->pdev->dev, mr->pages_size, mr->pages, mr->pages_dma);
	mr->pages = NULL;
}

struct ib_mr *weft_ib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				  u64 virt, int access, struct ib_udata *udata)
{
	struct weft_ibdev *dev = to_wdev(ibpd->device);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_REG_MR };
	struct ib_block_iter biter;
	struct weft_ibmr *mr;
	struct ib_umem *umem;
	size_t n, i = 0;
	u32 stag;
	int ret;

	ret = weft_ib_check_access(access);
	if (ret)
		return ERR_PTR(ret);
	if (!length || length > (1ull << 40))
		return ERR_PTR(-EINVAL);
	umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(umem))
		return ERR_CAST(umem);
	n = ib_umem_num_dma_blocks(umem, PAGE_SIZE);
	if (!n || n > WEFT_IB_MAX_USER_PAGES) {
		ret = -EINVAL;
		goto err_umem;
	}
	mr = weft_ib_mr_new(dev, &stag);
	if (IS_ERR(mr)) {
		ret = PTR_ERR(mr);
		goto err_umem;
	}
	mr->umem = umem;
	ret = weft_ib_pages_alloc(dev, mr, n);
	if (ret)
		goto err_mr;
	rdma_umem_for_each_dma_block(umem, &biter, PAGE_SIZE)
		mr->pages[i++] = (rdma_block_iter_dma_address(&biter));
	mr->pages[0] |= (ib_umem_offset(umem));
	mr->npages = n;
	cmd.handle = stag;
	cmd.u.mr.va = virt;
	cmd.u.mr.length = length;
	cmd.u.mr.att_addr = mr->pages_dma;
	cmd.u.mr.pd = to_wpd(ibpd)->pdn;
	cmd.u.mr.access = weft_ib_access(access);
	cmd.u.mr.page_shift = PAGE_SHIFT;
	cmd.u.mr.att_level = WEFT_ATT_DIRECT;
	ret = weft_ib_cmd(dev, &cmd);
	if (ret)
		goto err_pages;
	mr->ibmr.iova = virt;
	mr->ibmr.length = length;
	return &mr->ibmr;

err_pages:
	weft_ib_pages_free(dev, mr);
err_mr:
	weft_ib_stag_free(dev, mr->index, stag);
	kfree(mr);
err_umem:
	ib_umem_release(umem);
	return ERR_PTR(ret);
}

struct ib_mr *weft_ib_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type, u32 max_num_sg)
{
	struct weft_ibdev *dev = to_wdev(ibpd->device);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_ALLOC_STAG };
	struct weft_ibmr *mr;
	u32 stag;
	int ret;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > WEFT_IB_FRMR_PAGES)
		return ERR_PTR(-EINVAL);
	mr = weft_ib_mr_new(dev, &stag);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	ret = weft_ib_pages_alloc(dev, mr, max_num_sg);
	if (ret)
		goto err_mr;
	cmd.handle = stag;
	cmd.u.mr.pd = to_wpd(ibpd)->pdn;
	cmd.u.mr.type = WEFT_TPT_MR;
	cmd.u.mr.flags = WEFT_TPTF_FAST_REG;
	ret = weft_ib_cmd(dev, &cmd);
	if (ret)
		goto err_pages;
	return &mr->ibmr;

err_pages:
	weft_ib_pages_free(dev, mr);
err_mr:
	weft_ib_stag_free(dev, mr->index, stag);
	kfree(mr);
	return ERR_PTR(ret);
}

static int weft_ib_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct weft_ibmr *mr = to_wmr(ibmr);

	if (mr->npages >= mr->max_pages)
		return -ENOMEM;
	mr->pages[mr->npages++] = addr;
	return 0;
}

int weft_ib_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int nents,
		      unsigned int *offset)
{
	struct weft_ibmr *mr = to_wmr(ibmr);
	int n;

	if (ibmr->page_size < (1u << WEFT_ATT_MIN_SHIFT) ||
	    ibmr->page_size > (1u << WEFT_ATT_MAX_SHIFT))
		return -EINVAL;
	mr->npages = 0;
	n = ib_sg_to_pages(ibmr, sg, nents, offset, weft_ib_set_page);
	/* The first entry carries the offset of iova in its page (16.5). */
	if (mr->npages)
		mr->pages[0] |= (ibmr->iova & (ibmr->page_size - 1));
	return n;
}

int weft_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct weft_ibdev *dev = to_wdev(ibmr->device);
	struct weft_ibmr *mr = to_wmr(ibmr);
	u32 stag = ibmr->lkey;

	/*
	 * A region with windows bound to it stays registered (IBA
	 * 10.6.7.2.6); EINVAL, as rxe.  ib_uverbs retries it at close,
	 * after the windows are gone.
	 */
	if (weft_ib_stag_dereg(dev, mr->index, &stag) == -EBUSY)
		return -EINVAL;
	weft_ib_stag_release(dev, mr->index, stag);
	weft_ib_pages_free(dev, mr);
	if (mr->umem)
		ib_umem_release(mr->umem);
	kfree(mr);
	return 0;
}

int weft_ib_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct weft_ibdev *dev = to_wdev(ibmw->device);
	struct weft_ibmw *mw = to_wmw(ibmw);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_ALLOC_STAG };
	u32 stag;
	int ret;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	ret = weft_ib_stag_alloc(dev, &mw->index, &stag);
	if (ret)
		return ret;
	cmd.handle = stag;
	cmd.u.mr.pd = to_wpd(ibmw->pd)->pdn;
	cmd.u.mr.type = ibmw->type == IB_MW_TYPE_1 ? WEFT_TPT_MW1 : WEFT_TPT_MW2;
	ret = weft_ib_cmd(dev, &cmd);
	if (ret) {
		weft_ib_stag_free(dev, mw->index, stag);
		return ret;
	}
	ibmw->rkey = stag;
	return 0;
}

int weft_ib_dealloc_mw(struct ib_mw *ibmw)
{
	struct weft_ibmw *mw = to_wmw(ibmw);

	weft_ib_stag_free(to_wdev(ibmw->device), mw->index, ibmw->rkey);
	return 0;
}
