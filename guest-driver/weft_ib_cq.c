// SPDX-License-Identifier: GPL-2.0
/*
 * weft_ib.ko: completion queues (hw-spec 16.7).  The ring is followed by
 * a page holding the consumer index the adapter reads when the ring looks
 * full; kernel CQs are polled here, user CQs by the provider.
 *
 * A CQ may be asked for more CQEs than the largest ring holds, up to
 * WEFT_IB_MAX_CQE (libfabric's ofi_rxm sizes its CQ for a whole job, not
 * for the QPs it makes): such a deep CQ gets the largest ring, and it
 * cannot overflow because QPs are admitted on it only while the SQ and RQ
 * slots of all its QPs fit in that ring.  Each WQE completes at most once
 * and its slot is free again only when that CQE is polled, so a QP cannot
 * have more CQEs outstanding than it has slots.  An SRQ has no such bound
 * (the adapter frees its slots as it takes them): QPs with an SRQ are not
 * admitted on a deep receive CQ.
 */
#include <linux/slab.h>
#include <rdma/ib_addr.h>
#include <rdma/rdma_netlink.h>
#include <rdma/uverbs_ioctl.h>

#include "weft_ib.h"

static struct weft_vcqe *weft_cqe(struct weft_ibcq *cq, u32 i)
{
	return (struct weft_vcqe *)cq->ring.va + (i & ((1u << cq->log2) - 1));
}

static bool weft_cqe_valid(struct weft_ibcq *cq, u32 i)
{
	u8 owner = READ_ONCE(weft_cqe(cq, i)->owner);

	return (owner & 1) == !((i >> cq->log2) & 1);
}

#ifdef WEFT_HAVE_CREATE_CQ_ATTRS
int weft_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		      struct uverbs_attr_bundle *attrs)
{
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
#else
int weft_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		      struct ib_udata *udata)
{
#endif
	struct weft_ibdev *dev = to_wdev(ibcq->device);
	struct weft_ibcq *cq = to_wcq(ibcq);
	struct weft_ib_create_cq_resp resp = {};
	struct weft_vcmd cmd = { .op = WEFT_VCMD_CREATE_CQ };
	struct weft_ibucontext *uc = NULL;
	size_t ring_bytes;
	u32 log2;
	int ret;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > WEFT_IB_MAX_CQE)
		return -EINVAL;
	if (udata) {
		uc = rdma_udata_to_drv_context(udata, struct weft_ibucontext, ibuc);
		if (udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
			return -EINVAL;
	}
	log2 = clamp_t(u32, order_base_2(attr->cqe), 1, WEFT_IB_MAX_CQ_LOG2);
	ring_bytes = (size_t)sizeof(struct weft_vcqe) << log2;
	cq->log2 = log2;
	cq->deep = attr->cqe > (1 << log2);
	cq->uar = uc ? uc->uar : WEFT_IB_KERNEL_UAR;
	spin_lock_init(&cq->lock);
	mutex_init(&cq->resize_lock);
	ret = weft_ib_ring_alloc(dev, PAGE_ALIGN(ring_bytes) + PAGE_SIZE, &cq->ring);
	if (ret)
		return ret;
	cq->ci_ptr = (u32 *)((u8 *)cq->ring.va + PAGE_ALIGN(ring_bytes));
	ret = ida_alloc_max(&dev->cq_ida, dev->caps.nr_cq - 1, GFP_KERNEL);
	if (ret < 0) {
		ret = ret == -ENOSPC ? -ENOMEM : ret;
		goto err_ring;
	}
	cq->cqn = ret;
	cmd.handle = cq->cqn;
	cmd.u.cq.ring_addr = cq->ring.dma;
	cmd.u.cq.ci_addr = cq->ring.dma + PAGE_ALIGN(ring_bytes);
	cmd.u.cq.log2_entries = log2;
	cmd.u.cq.vector = 0;
	cmd.u.cq.uar = cq->uar;
	ret = xa_insert_irq(&dev->cqs, cq->cqn, cq, GFP_KERNEL);
	if (ret)
		goto err_ida;
	ret = weft_ib_cmd(dev, &cmd);
	if (ret)
		goto err_xa;
	ibcq->cqe = cq->deep ? attr->cqe : 1 << log2;
	if (uc) {
		u64 off;

		ret = weft_ib_ring_publish(dev, &uc->ibuc, &cq->ring, &cq->entry, &off);
		if (ret)
			goto err_cmd;
		resp.cqn = cq->cqn;
		resp.log2_entries = log2;
		resp.ring_mmap_offset = off;
		resp.ring_mmap_size = cq->ring.size;
		resp.ci_offset = PAGE_ALIGN(ring_bytes);
		ret = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
		if (ret)
			goto err_entry;
	}
	return 0;

err_entry:
	rdma_user_mmap_entry_remove(cq->entry);
	cq->entry = NULL;
	cmd.op = WEFT_VCMD_DESTROY_CQ;
	weft_ib_cmd(dev, &cmd);
	xa_erase_irq(&dev->cqs, cq->cqn);
	weft_verbs_sync(dev->wdev);
	ida_free(&dev->cq_ida, cq->cqn);
	weft_ib_ring_unmap(dev, &cq->ring);	/* the entry frees the pages */
	return ret;
err_cmd:
	cmd.op = WEFT_VCMD_DESTROY_CQ;
	weft_ib_cmd(dev, &cmd);
err_xa:
	xa_erase_irq(&dev->cqs, cq->cqn);
	weft_verbs_sync(dev->wdev);
err_ida:
	ida_free(&dev->cq_ida, cq->cqn);
err_ring:
	weft_ib_ring_free(dev, &cq->ring);
	return ret;
}

/*
 * ibv_resize_cq (hw-spec 16.7, "Resizing"): a new ring whose owner bytes
 * say "not valid" for the indexes it will hold next and whose word holds
 * the consumer index, then RESIZE_CQ, which copies the CQEs not yet
 * polled into it at the same indexes.  The provider holds its CQ lock
 * through the call, so its consumer index does not move; the old mapping
 * stays valid until it unmaps it.  Kernel CQs are polled from interrupt
 * context and are not resized.
 */
int weft_ib_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct weft_ibdev *dev = to_wdev(ibcq->device);
	struct weft_ibcq *cq = to_wcq(ibcq);
	struct weft_ib_resize_cq_resp resp = {};
	struct weft_vcmd cmd = { .op = WEFT_VCMD_RESIZE_CQ, .handle = cq->cqn };
	struct rdma_user_mmap_entry *entry;
	struct weft_ibucontext *uc;
	struct weft_ring ring;
	struct weft_vcqe *e;
	size_t ring_bytes;
	u32 log2, ci, i;
	u64 off;
	int ret;

	/* A deep CQ already has the largest ring, which its QPs are charged to. */
	if (!udata || !cq->entry || cq->deep)
		return -EOPNOTSUPP;
	if (cqe < 1 || cqe > (1 << WEFT_IB_MAX_CQ_LOG2))
		return -EINVAL;
	if (udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	uc = rdma_udata_to_drv_context(udata, struct weft_ibucontext, ibuc);
	log2 = max_t(u32, 1, order_base_2(cqe));
	ring_bytes = (size_t)sizeof(struct weft_vcqe) << log2;
	mutex_lock(&cq->resize_lock);
	ret = weft_ib_ring_alloc(dev, PAGE_ALIGN(ring_bytes) + PAGE_SIZE, &ring);
	if (ret)
		goto out;
	ci = READ_ONCE(*cq->ci_ptr);
	e = ring.va;
	for (i = 0; i < (1u << log2); i++)
		e[(ci + i) & ((1u << log2) - 1)].owner = ((ci + i) >> log2) & 1;
	*(u32 *)((u8 *)ring.va + PAGE_ALIGN(ring_bytes)) = ci;
	dma_sync_single_for_device(&dev->pdev->dev, ring.dma, ring.size, DMA_BIDIRECTIONAL);
	ret = weft_ib_ring_publish(dev, &uc->ibuc, &ring, &entry, &off);
	if (ret) {
		weft_ib_ring_free(dev, &ring);
		goto out;
	}
	cmd.u.cq.ring_addr = ring.dma;
	cmd.u.cq.ci_addr = ring.dma + PAGE_ALIGN(ring_bytes);
	cmd.u.cq.log2_entries = log2;
	ret = weft_ib_cmd(dev, &cmd);
	if (ret) {
		weft_ib_ring_retire(dev, &ring, entry);
		goto out;
	}
	weft_ib_ring_retire(dev, &cq->ring, cq->entry);
	cq->ring = ring;
	cq->entry = entry;
	cq->ci_ptr = (u32 *)((u8 *)ring.va + PAGE_ALIGN(ring_bytes));
	cq->log2 = log2;
	ibcq->cqe = 1 << log2;
	resp.log2_entries = log2;
	resp.ci_offset = PAGE_ALIGN(ring_bytes);
	resp.ring_mmap_offset = off;
	resp.ring_mmap_size = ring.size;
	ret = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
out:
	mutex_unlock(&cq->resize_lock);
	return ret;
}

/*
 * ib_modify_cq / ibv_modify_cq (hw-spec 16.7, "Moderation"): the event of
 * an armed CQ waits for cq_count completions, or cq_period microseconds
 * after the first of them, whichever comes first; 0 turns each bound off.
 * The adapter holds the values, and raises at once an event it held.
 */
int weft_ib_modify_cq(struct ib_cq *ibcq, u16 cq_count, u16 cq_period)
{
	struct weft_ibdev *dev = to_wdev(ibcq->device);
	struct weft_ibcq *cq = to_wcq(ibcq);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_MODIFY_CQ, .handle = cq->cqn };

	BUILD_BUG_ON(WEFT_VERBS_CQ_MOD_MAX_COUNT < U16_MAX);
	if (cq_period > WEFT_VERBS_CQ_MOD_MAX_US)
		return -EINVAL;
	cmd.u.cq_mod.count = cq_count;
	cmd.u.cq_mod.period_us = cq_period;
	cmd.u.cq_mod.uar = cq->uar;
	return weft_ib_cmd(dev, &cmd);
}

/*
 * `rdma resource show cq -dd`: the adapter's own view of the CQ (QUERY_CQ,
 * struct weft_vcqc), so that the moderation a user or the kernel's DIM set
 * can be read back from the device rather than from the driver's memory.
 */
int weft_ib_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	struct weft_ibdev *dev = to_wdev(ibcq->device);
	struct weft_ibcq *cq = to_wcq(ibcq);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_QUERY_CQ, .handle = cq->cqn };
	struct nlattr *table;
	struct weft_vcqc *c;
	dma_addr_t dma;
	int ret;

	c = dma_alloc_coherent(&dev->pdev->dev, sizeof(*c), &dma, GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	cmd.u.query.addr = dma;
	ret = weft_ib_cmd(dev, &cmd);
	if (ret)
		goto out;
	ret = -EMSGSIZE;
	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		goto out;
	if (rdma_nl_put_driver_u32(msg, "cqn", c->cqn) ||
	    rdma_nl_put_driver_u32(msg, "mod_count", c->mod_count) ||
	    rdma_nl_put_driver_u32(msg, "mod_period_us", c->mod_period_us) ||
	    rdma_nl_put_driver_u32(msg, "cqes", c->prod) ||
	    rdma_nl_put_driver_u32(msg, "armed", c->arm)) {
		nla_nest_cancel(msg, table);
		goto out;
	}
	nla_nest_end(msg, table);
	ret = 0;
out:
	dma_free_coherent(&dev->pdev->dev, sizeof(*c), c, dma);
	return ret;
}

int weft_ib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct weft_ibdev *dev = to_wdev(ibcq->device);
	struct weft_ibcq *cq = to_wcq(ibcq);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_DESTROY_CQ, .handle = cq->cqn };

	weft_ib_cmd(dev, &cmd);
	xa_erase_irq(&dev->cqs, cq->cqn);
	weft_verbs_sync(dev->wdev);
	ida_free(&dev->cq_ida, cq->cqn);
	weft_ib_ring_retire(dev, &cq->ring, cq->entry);
	return 0;
}

/* Admits SLOTS more outstanding CQEs on a deep CQ while its ring holds them. */
static int weft_ib_cq_take(struct weft_ibcq *cq, u32 slots)
{
	unsigned long flags;
	int ret = 0;

	if (!cq->deep)
		return 0;
	spin_lock_irqsave(&cq->lock, flags);
	if (slots > (1u << cq->log2) - cq->charged)
		ret = -ENOMEM;
	else
		cq->charged += slots;
	spin_unlock_irqrestore(&cq->lock, flags);
	return ret;
}

static void weft_ib_cq_give(struct weft_ibcq *cq, u32 slots)
{
	unsigned long flags;

	if (!cq->deep)
		return;
	spin_lock_irqsave(&cq->lock, flags);
	cq->charged -= slots;
	spin_unlock_irqrestore(&cq->lock, flags);
}

/*
 * Admits a new QP, its rings sized, on the CQs of INIT: -ENOMEM when a deep
 * CQ's ring cannot hold its slots too, -EOPNOTSUPP for an SRQ on a deep
 * receive CQ.
 */
int weft_ib_cq_charge(struct weft_ibqp *qp, const struct ib_qp_init_attr *init)
{
	struct weft_ibcq *scq = to_wcq(init->send_cq);
	struct weft_ibcq *rcq = to_wcq(init->recv_cq);
	int ret;

	if (init->srq && rcq->deep)
		return -EOPNOTSUPP;
	ret = weft_ib_cq_take(scq, 1u << qp->sq_log2);
	if (ret || init->srq)
		return ret;
	ret = weft_ib_cq_take(rcq, 1u << qp->rq_log2);
	if (ret)
		weft_ib_cq_give(scq, 1u << qp->sq_log2);
	return ret;
}

void weft_ib_cq_uncharge(struct weft_ibqp *qp)
{
	weft_ib_cq_give(to_wcq(qp->ibqp.send_cq), 1u << qp->sq_log2);
	if (!qp->ibqp.srq)
		weft_ib_cq_give(to_wcq(qp->ibqp.recv_cq), 1u << qp->rq_log2);
}

/* From the interrupt path: the armed CQ got a matching CQE. */
void weft_ib_cq_event(struct weft_ibdev *dev, u32 cqn)
{
	struct weft_ibcq *cq = xa_load(&dev->cqs, cqn);

	if (cq && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

static enum ib_wc_opcode weft_wc_opcode(u8 op)
{
	switch (op) {
	case WEFT_VWC_RDMA_WRITE: return IB_WC_RDMA_WRITE;
	case WEFT_VWC_RDMA_READ: return IB_WC_RDMA_READ;
	case WEFT_VWC_COMP_SWAP: return IB_WC_COMP_SWAP;
	case WEFT_VWC_FETCH_ADD: return IB_WC_FETCH_ADD;
	case WEFT_VWC_BIND_MW: return IB_WC_BIND_MW;
	case WEFT_VWC_LOCAL_INV: return IB_WC_LOCAL_INV;
	case WEFT_VWC_REG_MR: return IB_WC_REG_MR;
	case WEFT_VWC_RECV: return IB_WC_RECV;
	case WEFT_VWC_RECV_RDMA_IMM: return IB_WC_RECV_RDMA_WITH_IMM;
	default: return IB_WC_SEND;
	}
}

static void weft_ib_cqe_to_wc(struct weft_ibdev *dev, const struct weft_vcqe *e,
			      struct ib_wc *wc)
{
	struct weft_ibqp *qp = xa_load(&dev->qps, e->qpn);

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = e->wr_id;
	wc->status = e->status;
	wc->opcode = weft_wc_opcode(e->opcode);
	wc->qp = qp ? &qp->ibqp : NULL;
	wc->port_num = 1;
	if (e->status != WEFT_VWC_SUCCESS)
		wc->vendor_err = e->byte_len;
	else
		wc->byte_len = e->byte_len;
	if (e->flags & WEFT_VCQE_WITH_IMM) {
		wc->wc_flags |= IB_WC_WITH_IMM;
		wc->ex.imm_data = (__force __be32)e->imm_inv;
	}
	if (e->flags & WEFT_VCQE_WITH_INV) {
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = e->imm_inv;
	}
	if (e->flags & WEFT_VCQE_GRH) {
		wc->wc_flags |= IB_WC_GRH;
		wc->src_qp = e->src_qpn;
		/* The adapter wrote the network header itself (hw-spec 16.13). */
		if (e->flags & (WEFT_VCQE_NET_IPV4 | WEFT_VCQE_NET_IPV6)) {
			wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
			wc->network_hdr_type = e->flags & WEFT_VCQE_NET_IPV4 ?
					       RDMA_NETWORK_IPV4 : RDMA_NETWORK_IPV6;
		}
	}
	if (qp)
		weft_ib_qp_retire(qp, e->flags & WEFT_VCQE_IS_SQ, e->wqe_index);
}

int weft_ib_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct weft_ibdev *dev = to_wdev(ibcq->device);
	struct weft_ibcq *cq = to_wcq(ibcq);
	struct weft_vcqe e;
	unsigned long flags;
	int n = 0;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num && weft_cqe_valid(cq, cq->ci)) {
		dma_rmb();
		memcpy(&e, weft_cqe(cq, cq->ci), sizeof(e));
		cq->ci++;
		weft_ib_cqe_to_wc(dev, &e, &wc[n++]);
	}
	if (n)
		WRITE_ONCE(*cq->ci_ptr, cq->ci);
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int weft_ib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct weft_ibdev *dev = to_wdev(ibcq->device);
	struct weft_ibcq *cq = to_wcq(ibcq);
	u32 arm = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
		  WEFT_CQ_ARM_SOLICITED : WEFT_CQ_ARM_NEXT;
	unsigned long lf;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, lf);
	weft_ib_doorbell(dev, WEFT_UAR_CQ_ARM, WEFT_UAR_ARM(cq->cqn, arm, cq->ci));
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && weft_cqe_valid(cq, cq->ci))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, lf);
	return ret;
}
