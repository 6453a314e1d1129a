// SPDX-License-Identifier: GPL-2.0
/*
 * weft_ib.ko: shared receive queues (hw-spec 16.14).  The ring of receive
 * WQEs is followed by a page holding the consumer index the adapter
 * writes each time a QP takes a WQE; kernel SRQs are posted here, user
 * SRQs by the provider.  A tag-matching SRQ (IB_SRQT_TM, hw-spec 16.15,
 * user space only) also maps a ring of tag operations that the provider
 * fills and announces with SRQ_TM_DB.
 */
#include <linux/slab.h>
#include <rdma/uverbs_ioctl.h>

#include "weft_ib.h"

static void weft_ib_srq_attr(struct weft_ibsrq *srq, struct ib_srq_attr *a)
{
	a->max_wr = 1u << srq->log2;
	a->max_sge = srq->max_sge;
}

int weft_ib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		       struct ib_udata *udata)
{
	struct weft_ibdev *dev = to_wdev(ibsrq->device);
	struct weft_ibsrq *srq = to_wsrq(ibsrq);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_CREATE_SRQ };
	struct weft_ib_create_srq_resp resp = {};
	struct weft_ib_create_srq_req req = {};
	bool tm = init->srq_type == IB_SRQT_TM;
	struct weft_ibucontext *uc = NULL;
	size_t ring_bytes, tm_bytes = 0;
	int stride, ret;
	u32 log2;

	/* Tag matching is driven from user space only (no kernel tag ops). */
	if (init->srq_type != IB_SRQT_BASIC && !(tm && udata))
		return -EOPNOTSUPP;
	if (init->attr.max_wr > WEFT_IB_MAX_SRQ_WR || init->attr.max_sge > WEFT_IB_MAX_RECV_SGE ||
	    init->attr.srq_limit > init->attr.max_wr)
		return -EINVAL;
	if (udata) {
		uc = rdma_udata_to_drv_context(udata, struct weft_ibucontext, ibuc);
		if (udata->inlen > sizeof(req) &&
		    !ib_is_udata_cleared(udata, sizeof(req), udata->inlen - sizeof(req)))
			return -EINVAL;
		ret = ib_copy_from_udata(&req, udata, min(udata->inlen, sizeof(req)));
		if (ret)
			return ret;
		if (req.reserved || (!tm && req.tm_log2))
			return -EINVAL;
	}
	if (tm) {
		if (!init->ext.cq || init->ext.tag_matching.max_num_tags < 1 ||
		    init->ext.tag_matching.max_num_tags > WEFT_VERBS_TM_MAX_TAGS ||
		    req.tm_log2 > WEFT_VERBS_TM_OPS_LOG2)
			return -EINVAL;
		tm_bytes = PAGE_ALIGN(sizeof(struct weft_vtmop) << req.tm_log2);
	}
	stride = max_t(u32, WEFT_IB_RQ_STRIDE_MIN,
		       order_base_2(sizeof(struct weft_vrwqe) +
				    max(init->attr.max_sge, 1u) * sizeof(struct weft_vsge)));
	log2 = max_t(u32, 1, order_base_2(max(init->attr.max_wr, 1u)));
	ring_bytes = (size_t)1 << (log2 + stride);
	if (PAGE_ALIGN(ring_bytes) + PAGE_SIZE + tm_bytes > WEFT_IB_MAX_RING)
		return -EINVAL;
	srq->log2 = log2;
	srq->stride = stride;
	srq->max_sge = ((1u << stride) - sizeof(struct weft_vrwqe)) / sizeof(struct weft_vsge);
	srq->uar = uc ? uc->uar : WEFT_IB_KERNEL_UAR;
	srq->user = !!uc;
	spin_lock_init(&srq->lock);
	ret = weft_ib_ring_alloc(dev, PAGE_ALIGN(ring_bytes) + PAGE_SIZE + tm_bytes, &srq->ring);
	if (ret)
		return ret;
	srq->ci_ptr = (u32 *)((u8 *)srq->ring.va + PAGE_ALIGN(ring_bytes));
	/* SRQ numbers share the QP number range of the adapter (hw-spec 16.14). */
	ret = ida_alloc_range(&dev->srq_ida, 1, dev->caps.nr_qp - 1, GFP_KERNEL);
	if (ret < 0) {
		ret = ret == -ENOSPC ? -ENOMEM : ret;
		goto err_ring;
	}
	srq->srqn = ret;
	cmd.handle = srq->srqn;
	cmd.u.srq.ring_addr = srq->ring.dma;
	cmd.u.srq.ci_addr = srq->ring.dma + PAGE_ALIGN(ring_bytes);
	cmd.u.srq.pd = to_wpd(ibsrq->pd)->pdn;
	cmd.u.srq.uar = srq->uar;
	cmd.u.srq.vector = 0;
	cmd.u.srq.limit = init->attr.srq_limit;
	cmd.u.srq.log2 = log2;
	cmd.u.srq.stride_log2 = stride;
	cmd.u.srq.flags = uc ? 0 : WEFT_VSRQF_PRIV;
	if (tm) {
		srq->tm_cqn = to_wcq(init->ext.cq)->cqn;
		cmd.u.srq.flags |= WEFT_VSRQF_TM;
		cmd.u.srq.tm_log2 = req.tm_log2;
		cmd.u.srq.tm_cq = srq->tm_cqn;
		cmd.u.srq.tm_max_tags = init->ext.tag_matching.max_num_tags;
		cmd.u.srq.tm_ring = srq->ring.dma + PAGE_ALIGN(ring_bytes) + PAGE_SIZE;
	}
	ret = xa_insert_irq(&dev->srqs, srq->srqn, srq, GFP_KERNEL);
	if (ret)
		goto err_ida;
	ret = weft_ib_cmd(dev, &cmd);
	if (ret)
		goto err_xa;
	weft_ib_srq_attr(srq, &init->attr);
	if (!uc)
		return 0;
	/* From here on a failure undoes everything as destroy_srq does. */
	ret = weft_ib_ring_publish(dev, &uc->ibuc, &srq->ring, &srq->entry,
				   &resp.ring_mmap_offset);
	if (!ret) {
		resp.srqn = srq->srqn;
		resp.log2 = log2;
		resp.stride_log2 = stride;
		resp.ring_mmap_size = srq->ring.size;
		resp.ci_offset = PAGE_ALIGN(ring_bytes);
		if (tm) {
			resp.tm_ops_offset = PAGE_ALIGN(ring_bytes) + PAGE_SIZE;
			resp.tm_log2 = req.tm_log2;
		}
		ret = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	}
	if (ret)
		weft_ib_destroy_srq(ibsrq, udata);
	return ret;

err_xa:
	xa_erase_irq(&dev->srqs, srq->srqn);
	weft_verbs_sync(dev->wdev);
err_ida:
	ida_free(&dev->srq_ida, srq->srqn);
err_ring:
	weft_ib_ring_free(dev, &srq->ring);
	return ret;
}

int weft_ib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		       enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct weft_ibdev *dev = to_wdev(ibsrq->device);
	struct weft_ibsrq *srq = to_wsrq(ibsrq);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_MODIFY_SRQ, .handle = srq->srqn };

	if (udata && udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;	/* no SRQ resize */
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit > (1u << srq->log2))
		return -EINVAL;
	cmd.u.srq.limit = attr->srq_limit;
	return weft_ib_cmd(dev, &cmd);
}

int weft_ib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct weft_ibdev *dev = to_wdev(ibsrq->device);
	struct weft_ibsrq *srq = to_wsrq(ibsrq);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_QUERY_SRQ, .handle = srq->srqn };
	struct weft_vsrqc *d;
	dma_addr_t dma;
	int ret;

	d = dma_alloc_coherent(&dev->pdev->dev, sizeof(*d), &dma, GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	cmd.u.query.addr = dma;
	ret = weft_ib_cmd(dev, &cmd);
	if (!ret) {
		weft_ib_srq_attr(srq, attr);
		attr->srq_limit = d->limit;
	}
	dma_free_coherent(&dev->pdev->dev, sizeof(*d), d, dma);
	return ret;
}

int weft_ib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct weft_ibdev *dev = to_wdev(ibsrq->device);
	struct weft_ibsrq *srq = to_wsrq(ibsrq);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_DESTROY_SRQ, .handle = srq->srqn };

	weft_ib_cmd(dev, &cmd);
	xa_erase_irq(&dev->srqs, srq->srqn);
	weft_verbs_sync(dev->wdev);
	ida_free(&dev->srq_ida, srq->srqn);
	weft_ib_ring_retire(dev, &srq->ring, srq->entry);
	return 0;
}

int weft_ib_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			  const struct ib_recv_wr **bad)
{
	struct weft_ibdev *dev = to_wdev(ibsrq->device);
	struct weft_ibsrq *srq = to_wsrq(ibsrq);
	u32 n = 1u << srq->log2;
	unsigned long flags;
	bool rang = false;
	int ret = 0;

	spin_lock_irqsave(&srq->lock, flags);
	for (; wr; wr = wr->next) {
		u8 *slot = (u8 *)srq->ring.va + ((srq->prod & (n - 1)) << srq->stride);
		struct weft_vrwqe w = {};
		int i;

		if (srq->prod - READ_ONCE(*srq->ci_ptr) >= n) {
			ret = -ENOMEM;
			*bad = wr;
			break;
		}
		if (wr->num_sge < 0 || wr->num_sge > srq->max_sge) {
			ret = -EINVAL;
			*bad = wr;
			break;
		}
		w.wr_id = wr->wr_id;
		w.num_sge = wr->num_sge;
		memcpy(slot, &w, sizeof(w));
		for (i = 0; i < wr->num_sge; i++) {
			struct weft_vsge *s = (struct weft_vsge *)(slot + sizeof(w)) + i;

			s->addr = wr->sg_list[i].addr;
			s->length = wr->sg_list[i].length;
			s->lkey = wr->sg_list[i].lkey;
		}
		srq->prod++;
		rang = true;
	}
	if (rang) {
		dma_wmb();
		weft_ib_doorbell(dev, WEFT_UAR_SRQ_DB, WEFT_UAR_DB(srq->srqn, srq->prod));
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	return ret;
}

/* From the interrupt path: the SRQ's WQEs fell below the armed limit. */
void weft_ib_srq_event(struct weft_ibdev *dev, u32 srqn)
{
	struct weft_ibsrq *srq = xa_load(&dev->srqs, srqn);
	struct ib_event ev = { .device = &dev->ibdev, .event = IB_EVENT_SRQ_LIMIT_REACHED };

	if (!srq || !srq->ibsrq.event_handler)
		return;
	ev.element.srq = &srq->ibsrq;
	srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
}
