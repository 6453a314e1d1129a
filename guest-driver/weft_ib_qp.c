// SPDX-License-Identifier: GPL-2.0
/*
 * weft_ib.ko: queue pairs (RC, UD, GSI) and the kernel's post_send and
 * post_recv on the adapter's rings (hw-spec 16.4, 16.6).
 */
#include <linux/slab.h>
#include <rdma/ib_addr.h>
#include <rdma/uverbs_ioctl.h>

#include "weft_ib.h"

#define WEFT_IB_QP_MASK_HW	(IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS | \
				 IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY | IB_QP_AV | \
				 IB_QP_PATH_MTU | IB_QP_TIMEOUT | IB_QP_RETRY_CNT | \
				 IB_QP_RNR_RETRY | IB_QP_RQ_PSN | IB_QP_MAX_QP_RD_ATOMIC | \
				 IB_QP_MIN_RNR_TIMER | IB_QP_SQ_PSN | \
				 IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_DEST_QPN)

u8 weft_ib_access(int a)
{
	u8 v = 0;

	if (a & IB_ACCESS_LOCAL_WRITE)
		v |= WEFT_VACC_LOCAL_WRITE;
	if (a & IB_ACCESS_REMOTE_WRITE)
		v |= WEFT_VACC_REMOTE_WRITE;
	if (a & IB_ACCESS_REMOTE_READ)
		v |= WEFT_VACC_REMOTE_READ;
	if (a & IB_ACCESS_REMOTE_ATOMIC)
		v |= WEFT_VACC_REMOTE_ATOMIC;
	if (a & IB_ACCESS_MW_BIND)
		v |= WEFT_VACC_MW_BIND;
	return v | WEFT_VACC_LOCAL_READ;
}

/* Smallest stride (log2 bytes) of header + nsge SGEs in [lo, hi]. */
static int weft_stride(u32 hdr, u32 nsge, u32 lo, u32 hi)
{
	u32 s = max_t(u32, lo, order_base_2(hdr + nsge * sizeof(struct weft_vsge)));

	return s > hi ? -EINVAL : s;
}

/*
 * A QP number, taken in rotation from 2 up as hardware does: the lowest
 * free one would give a new QP the number of one just destroyed, and a
 * peer's CM that has not yet finished with the old connection refuses
 * the new one as stale (IB_CM_REJ_STALE_CONN; docs/verbs-linux.md).
 * qp_next is only a hint, so racing creates need no lock for it.
 */
static int weft_ib_qpn_alloc(struct weft_ibdev *dev)
{
	u32 last = dev->caps.nr_qp - 1, from = READ_ONCE(dev->qp_next);
	int ret;

	if (from < 2 || from > last)
		from = 2;
	ret = ida_alloc_range(&dev->qp_ida, from, last, GFP_KERNEL);
	if (ret == -ENOSPC && from > 2)
		ret = ida_alloc_range(&dev->qp_ida, 2, from - 1, GFP_KERNEL);
	if (ret == -ENOSPC)
		return -ENOMEM;
	if (ret >= 0)
		WRITE_ONCE(dev->qp_next, ret + 1);
	return ret;
}

/* The SQ and, unless the QP receives from an SRQ (srq), the RQ. */
static int weft_ib_qp_rings(struct weft_ibdev *dev, struct weft_ibqp *qp,
			    struct ib_qp_cap *cap, bool srq)
{
	int ss, rs;
	u32 sl, rl;
	int ret;

	if (cap->max_send_wr > (1u << WEFT_VERBS_WQ_MAX_LOG2) ||
	    cap->max_recv_wr > (1u << WEFT_VERBS_WQ_MAX_LOG2) ||
	    cap->max_send_sge > WEFT_IB_MAX_SEND_SGE ||
	    cap->max_recv_sge > WEFT_IB_MAX_RECV_SGE ||
	    cap->max_inline_data > WEFT_VERBS_MAX_INLINE)
		return -EINVAL;
	/* The slot holds the SGEs, or the inline header and bytes (16.6). */
	ss = weft_stride(sizeof(struct weft_vwqe),
			 max3(cap->max_send_sge, 1u,
			      DIV_ROUND_UP(sizeof(struct weft_vinline) + cap->max_inline_data,
					   sizeof(struct weft_vsge))),
			 WEFT_IB_SQ_STRIDE_MIN, WEFT_IB_SQ_STRIDE_MAX);
	rs = weft_stride(sizeof(struct weft_vrwqe), max(cap->max_recv_sge, 1u),
			 WEFT_IB_RQ_STRIDE_MIN, WEFT_IB_RQ_STRIDE_MAX);
	if (ss < 0 || rs < 0)
		return -EINVAL;
	sl = max_t(u32, 1, order_base_2(max(cap->max_send_wr, 1u)));
	rl = max_t(u32, 1, order_base_2(max(cap->max_recv_wr, 1u)));
	if ((1ull << (sl + ss)) > WEFT_IB_MAX_RING || (1ull << (rl + rs)) > WEFT_IB_MAX_RING)
		return -EINVAL;
	qp->sq_log2 = sl;
	qp->sq_stride = ss;
	qp->rq_log2 = srq ? 0 : rl;
	qp->rq_stride = srq ? 0 : rs;
	ret = weft_ib_ring_alloc(dev, 1ull << (sl + ss), &qp->sq);
	if (ret)
		return ret;
	ret = srq ? 0 : weft_ib_ring_alloc(dev, 1ull << (rl + rs), &qp->rq);
	if (ret) {
		weft_ib_ring_free(dev, &qp->sq);
		return ret;
	}
	cap->max_send_wr = 1u << sl;
	cap->max_recv_wr = srq ? 0 : 1u << rl;
	cap->max_send_sge = ((1u << ss) - sizeof(struct weft_vwqe)) / sizeof(struct weft_vsge);
	cap->max_recv_sge = srq ? 0 :
			    ((1u << rs) - sizeof(struct weft_vrwqe)) / sizeof(struct weft_vsge);
	cap->max_inline_data = (1u << ss) - sizeof(struct weft_vwqe) - sizeof(struct weft_vinline);
	return 0;
}

static int weft_ib_qp_publish(struct weft_ibdev *dev, struct weft_ibqp *qp,
			      struct weft_ibucontext *uc, struct ib_udata *udata)
{
	struct weft_ib_create_qp_resp resp = {};
	u64 soff, roff;
	int ret;

	ret = weft_ib_ring_publish(dev, &uc->ibuc, &qp->sq, &qp->sq_entry, &soff);
	if (ret)
		return ret;
	roff = 0;
	ret = qp->ibqp.srq ? 0 :
	      weft_ib_ring_publish(dev, &uc->ibuc, &qp->rq, &qp->rq_entry, &roff);
	if (ret)
		return ret;
	resp.qpn = qp->qpn;
	resp.uar_index = qp->uar;
	resp.sq_log2 = qp->sq_log2;
	resp.sq_stride_log2 = qp->sq_stride;
	resp.rq_log2 = qp->rq_log2;
	resp.rq_stride_log2 = qp->rq_stride;
	resp.sq_mmap_offset = soff;
	resp.rq_mmap_offset = roff;
	resp.sq_mmap_size = qp->sq.size;
	resp.rq_mmap_size = qp->rq.size;
	return ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
}

static void weft_ib_qp_free_rings(struct weft_ibdev *dev, struct weft_ibqp *qp)
{
	weft_ib_ring_retire(dev, &qp->sq, qp->sq_entry);
	weft_ib_ring_retire(dev, &qp->rq, qp->rq_entry);
	qp->sq_entry = NULL;
	qp->rq_entry = NULL;
}

int weft_ib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		      struct ib_udata *udata)
{
	struct weft_ibdev *dev = to_wdev(ibqp->device);
	struct weft_ibqp *qp = to_wqp(ibqp);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_CREATE_QP };
	struct weft_ibucontext *uc = NULL;
	bool gsi = init->qp_type == IB_QPT_GSI;
	int ret;

	if (init->qp_type != IB_QPT_RC && init->qp_type != IB_QPT_UD &&
	    init->qp_type != IB_QPT_UC && !gsi)
		return -EOPNOTSUPP;
	/* A UC message dropped midway would use up an SRQ WQE (hw-spec 16.16). */
	if (init->srq && init->qp_type == IB_QPT_UC)
		return -EOPNOTSUPP;
	if (init->create_flags || init->rwq_ind_tbl)
		return -EOPNOTSUPP;
	/* The adapter takes an SRQ's WQEs with the QP's PD (hw-spec 16.14). */
	if (init->srq && (gsi || init->srq->pd != ibqp->pd))
		return -EOPNOTSUPP;
	/* Tag matching is for RC QPs (IB_TM_CAP_RNDV_RC, hw-spec 16.15). */
	if (init->srq && init->srq->srq_type == IB_SRQT_TM && init->qp_type != IB_QPT_RC)
		return -EOPNOTSUPP;
	if (udata) {
		if (gsi)
			return -EINVAL;
		uc = rdma_udata_to_drv_context(udata, struct weft_ibucontext, ibuc);
		if (udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
			return -EINVAL;
	}
	qp->user = !!uc;
	qp->uar = uc ? uc->uar : WEFT_IB_KERNEL_UAR;
	qp->hw_type = init->qp_type == IB_QPT_RC ? WEFT_VQPT_RC :
		      init->qp_type == IB_QPT_UC ? WEFT_VQPT_UC : WEFT_VQPT_UD;
	qp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	mutex_init(&qp->mod_lock);
	ret = weft_ib_qp_rings(dev, qp, &init->cap, !!init->srq);
	if (ret)
		return ret;
	qp->cap = init->cap;
	ret = weft_ib_cq_charge(qp, init);
	if (ret)
		goto err_rings;

	if (gsi) {
		mutex_lock(&dev->gsi_lock);
		ret = dev->gsi_used ? -EBUSY : WEFT_VERBS_GSI_QPN;
		dev->gsi_used = true;
		mutex_unlock(&dev->gsi_lock);
	} else {
		ret = weft_ib_qpn_alloc(dev);
	}
	if (ret < 0)
		goto err_charge;
	qp->qpn = ret;
	ibqp->qp_num = qp->qpn;

	cmd.handle = qp->qpn;
	cmd.u.qp.sq_addr = qp->sq.dma;
	cmd.u.qp.rq_addr = qp->rq.dma;
	cmd.u.qp.type = qp->hw_type;
	cmd.u.qp.pd = to_wpd(ibqp->pd)->pdn;
	cmd.u.qp.send_cq = to_wcq(init->send_cq)->cqn;
	cmd.u.qp.recv_cq = to_wcq(init->recv_cq)->cqn;
	cmd.u.qp.uar = qp->uar;
	cmd.u.qp.sq_log2 = qp->sq_log2;
	cmd.u.qp.sq_stride_log2 = qp->sq_stride;
	cmd.u.qp.rq_log2 = qp->rq_log2;
	cmd.u.qp.rq_stride_log2 = qp->rq_stride;
	cmd.u.qp.flags = WEFT_VQPF_SQ_REG | (uc ? 0 : WEFT_VQPF_PRIV);
	cmd.u.qp.srq = init->srq ? to_wsrq(init->srq)->srqn : 0;
	ret = xa_insert_irq(&dev->qps, qp->qpn, qp, GFP_KERNEL);
	if (ret)
		goto err_num;
	ret = weft_ib_cmd(dev, &cmd);
	if (ret)
		goto err_xa;
	qp->attr.qp_state = IB_QPS_RESET;
	qp->attr.port_num = init->port_num ? init->port_num : 1;
	qp->attr.path_mtu = IB_MTU_4096;
	if (gsi)
		qp->attr.qkey = WEFT_VERBS_GSI_QKEY;
	if (uc) {
		ret = weft_ib_qp_publish(dev, qp, uc, udata);
		if (ret)
			goto err_cmd;
	}
	return 0;

err_cmd:
	cmd.op = WEFT_VCMD_DESTROY_QP;
	weft_ib_cmd(dev, &cmd);
err_xa:
	xa_erase_irq(&dev->qps, qp->qpn);
	weft_verbs_sync(dev->wdev);
err_num:
	if (gsi) {
		mutex_lock(&dev->gsi_lock);
		dev->gsi_used = false;
		mutex_unlock(&dev->gsi_lock);
	} else {
		ida_free(&dev->qp_ida, qp->qpn);
	}
err_charge:
	weft_ib_cq_uncharge(qp);
err_rings:
	weft_ib_qp_free_rings(dev, qp);
	return ret;
}

int weft_ib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct weft_ibdev *dev = to_wdev(ibqp->device);
	struct weft_ibqp *qp = to_wqp(ibqp);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_DESTROY_QP, .handle = qp->qpn };

	weft_ib_cmd(dev, &cmd);
	xa_erase_irq(&dev->qps, qp->qpn);
	weft_verbs_sync(dev->wdev);
	if (qp->qpn == WEFT_VERBS_GSI_QPN) {
		mutex_lock(&dev->gsi_lock);
		dev->gsi_used = false;
		mutex_unlock(&dev->gsi_lock);
	} else {
		ida_free(&dev->qp_ida, qp->qpn);
	}
	weft_ib_cq_uncharge(qp);
	weft_ib_qp_free_rings(dev, qp);
	return 0;
}

int weft_ib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		      struct ib_udata *udata)
{
	struct weft_ibdev *dev = to_wdev(ibqp->device);
	struct weft_ibqp *qp = to_wqp(ibqp);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_MODIFY_QP, .handle = qp->qpn };
	enum ib_qp_state cur, next;
	int ret = -EINVAL;

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	if (udata && udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	mutex_lock(&qp->mod_lock);
	cur = mask & IB_QP_CUR_STATE ? attr->cur_qp_state : qp->attr.qp_state;
	next = mask & IB_QP_STATE ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask))
		goto out;
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		goto out;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index)
		goto out;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		goto out;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > WEFT_VERBS_MAX_RD_ATOMIC)
		goto out;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > WEFT_VERBS_MAX_RD_ATOMIC)
		goto out;
	if (mask & IB_QP_AV) {
		const struct rdma_ah_attr *ah = &attr->ah_attr;

		if (ah->type != RDMA_AH_ATTR_TYPE_ROCE ||
		    weft_ib_node_from_mac(ah->roce.dmac, &cmd.u.mod.dest_node))
			goto out;
	}
	cmd.u.mod.mask = mask & WEFT_IB_QP_MASK_HW;
	/* The adapter keeps the port and pkey it has (one of each). */
	cmd.u.mod.mask &= ~(IB_QP_PORT | IB_QP_PKEY_INDEX);
	cmd.u.mod.state = next;		/* enum ib_qp_state == enum weft_vqp_state */
	cmd.u.mod.cur_state = cur;
	cmd.u.mod.access = mask & IB_QP_ACCESS_FLAGS ?
			   weft_ib_access(attr->qp_access_flags) & WEFT_VACC_REMOTE : 0;
	/* Kept for query_qp: the adapter segments at its own MTU (4096). */
	cmd.u.mod.path_mtu = mask & IB_QP_PATH_MTU ? attr->path_mtu : 0;
	cmd.u.mod.qkey = attr->qkey;
	cmd.u.mod.dest_qpn = attr->dest_qp_num;
	cmd.u.mod.timeout = attr->timeout;
	cmd.u.mod.retry_cnt = attr->retry_cnt;
	cmd.u.mod.rnr_retry = attr->rnr_retry;
	cmd.u.mod.min_rnr_timer = attr->min_rnr_timer;
	cmd.u.mod.max_rd_atomic = attr->max_rd_atomic;
	cmd.u.mod.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	cmd.u.mod.sq_psn = attr->sq_psn & WEFT_VERBS_PSN_MASK;
	cmd.u.mod.rq_psn = attr->rq_psn & WEFT_VERBS_PSN_MASK;
	/* GSI and UD QPs in RESET -> INIT need a qkey (ib_mad gives it). */
	if (next == IB_QPS_INIT && cur == IB_QPS_RESET && qp->hw_type == WEFT_VQPT_UD &&
	    !(mask & IB_QP_QKEY)) {
		cmd.u.mod.mask |= IB_QP_QKEY;
		cmd.u.mod.qkey = qp->attr.qkey;
	}
	ret = weft_ib_cmd(dev, &cmd);
	if (ret)
		goto out;
	if (next == IB_QPS_RESET) {
		spin_lock_irq(&qp->sq_lock);
		qp->sq_prod = 0;
		qp->sq_ci = 0;
		spin_unlock_irq(&qp->sq_lock);
		spin_lock_irq(&qp->rq_lock);
		qp->rq_prod = 0;
		qp->rq_ci = 0;
		spin_unlock_irq(&qp->rq_lock);
	}
	qp->attr.qp_state = next;
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_QKEY)
		qp->attr.qkey = attr->qkey;
	if (mask & IB_QP_AV)
		qp->attr.ah_attr = attr->ah_attr;
	if (mask & IB_QP_PATH_MTU)
		qp->attr.path_mtu = cmd.u.mod.path_mtu;
	if (mask & IB_QP_TIMEOUT)
		qp->attr.timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		qp->attr.retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->attr.rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_SQ_PSN)
		qp->attr.sq_psn = attr->sq_psn;
	if (mask & IB_QP_RQ_PSN)
		qp->attr.rq_psn = attr->rq_psn;
	if (mask & IB_QP_DEST_QPN)
		qp->attr.dest_qp_num = attr->dest_qp_num;
out:
	mutex_unlock(&qp->mod_lock);
	return ret;
}

int weft_ib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		     struct ib_qp_init_attr *init)
{
	struct weft_ibqp *qp = to_wqp(ibqp);

	mutex_lock(&qp->mod_lock);
	*attr = qp->attr;
	mutex_unlock(&qp->mod_lock);
	attr->cur_qp_state = attr->qp_state;
	attr->cap = qp->cap;
	attr->port_num = 1;
	memset(init, 0, sizeof(*init));
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = qp->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	init->port_num = 1;
	return 0;
}

/* A CQE retired the slot wqe_index (and every unsignaled one before it). */
void weft_ib_qp_retire(struct weft_ibqp *qp, bool sq, u16 wqe_index)
{
	spinlock_t *lock = sq ? &qp->sq_lock : &qp->rq_lock;
	u32 *ci = sq ? &qp->sq_ci : &qp->rq_ci;
	unsigned long flags;

	if (qp->user || (!sq && qp->ibqp.srq))
		return;
	spin_lock_irqsave(lock, flags);
	*ci += (u16)(wqe_index - (u16)*ci) + 1;
	spin_unlock_irqrestore(lock, flags);
}

/* Kernel UD QPs: the DMA address of RQ slot wqe_index's first SGE. */
void weft_ib_qp_event(struct weft_ibdev *dev, u32 qpn, enum ib_event_type type)
{
	struct weft_ibqp *qp = xa_load(&dev->qps, qpn);
	struct ib_event ev = { .device = &dev->ibdev, .event = type };

	if (!qp || !qp->ibqp.event_handler)
		return;
	if (type == IB_EVENT_QP_FATAL)
		qp->attr.qp_state = IB_QPS_ERR;
	ev.element.qp = &qp->ibqp;
	qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

static void weft_sges(struct weft_vsge *dst, const struct ib_sge *sg, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		dst[i].addr = sg[i].addr;
		dst[i].length = sg[i].length;
		dst[i].lkey = sg[i].lkey;
	}
}

/* IB_SEND_INLINE: the bytes of the SGEs (kernel addresses) into the slot. */
static int weft_inline(struct weft_ibqp *qp, const struct ib_send_wr *wr, u8 *slot)
{
	struct weft_vinline in = {};
	u8 *p = slot + sizeof(struct weft_vwqe) + sizeof(in);
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		if (wr->sg_list[i].length > qp->cap.max_inline_data - in.length)
			return -EINVAL;
		memcpy(p + in.length, (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		in.length += wr->sg_list[i].length;
	}
	memcpy(slot + sizeof(struct weft_vwqe), &in, sizeof(in));
	return 0;
}

static int weft_build_wqe(struct weft_ibqp *qp, const struct ib_send_wr *wr,
			  struct weft_vwqe *w)
{
	u8 op;

	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	if ((wr->send_flags & IB_SEND_SIGNALED) || qp->sig_all)
		w->flags |= WEFT_VWQE_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		w->flags |= WEFT_VWQE_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		w->flags |= WEFT_VWQE_FENCE;
	if (wr->num_sge < 0)
		return -EINVAL;
	/* UC: SEND and WRITE (with immediate) and local operations (16.16). */
	if (qp->hw_type == WEFT_VQPT_UC && wr->opcode != IB_WR_SEND &&
	    wr->opcode != IB_WR_SEND_WITH_IMM && wr->opcode != IB_WR_RDMA_WRITE &&
	    wr->opcode != IB_WR_RDMA_WRITE_WITH_IMM && wr->opcode != IB_WR_LOCAL_INV &&
	    wr->opcode != IB_WR_REG_MR)
		return -EINVAL;
	if (wr->send_flags & IB_SEND_INLINE) {
		switch (wr->opcode) {
		case IB_WR_SEND:
		case IB_WR_SEND_WITH_IMM:
		case IB_WR_SEND_WITH_INV:
		case IB_WR_RDMA_WRITE:
		case IB_WR_RDMA_WRITE_WITH_IMM:
			break;
		default:
			return -EINVAL;
		}
		w->flags |= WEFT_VWQE_INLINE;
	} else {
		if (wr->num_sge > qp->cap.max_send_sge)
			return -EINVAL;
		w->num_sge = wr->num_sge;
	}
	switch (wr->opcode) {
	case IB_WR_SEND:
		op = WEFT_VWR_SEND;
		break;
	case IB_WR_SEND_WITH_IMM:
		op = WEFT_VWR_SEND_IMM;
		w->imm_inv = ((__force u32)wr->ex.imm_data);
		break;
	case IB_WR_SEND_WITH_INV:
		op = WEFT_VWR_SEND_INV;
		w->imm_inv = wr->ex.invalidate_rkey;
		break;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		op = wr->opcode == IB_WR_RDMA_READ ? WEFT_VWR_READ :
		     wr->opcode == IB_WR_RDMA_WRITE ? WEFT_VWR_WRITE : WEFT_VWR_WRITE_IMM;
		if (wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM)
			w->imm_inv = ((__force u32)wr->ex.imm_data);
		w->u.rdma.remote_addr = (rdma_wr(wr)->remote_addr);
		w->u.rdma.rkey = (rdma_wr(wr)->rkey);
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		op = wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ? WEFT_VWR_CAS : WEFT_VWR_FAA;
		w->u.rdma.remote_addr = (atomic_wr(wr)->remote_addr);
		w->u.rdma.rkey = (atomic_wr(wr)->rkey);
		w->u.rdma.compare_add = (atomic_wr(wr)->compare_add);
		w->u.rdma.swap = (atomic_wr(wr)->swap);
		break;
	case IB_WR_LOCAL_INV:
		op = WEFT_VWR_LOCAL_INV;
		w->imm_inv = wr->ex.invalidate_rkey;
		w->num_sge = 0;
		break;
	case IB_WR_REG_MR: {
		const struct ib_reg_wr *r = reg_wr(wr);
		struct weft_ibmr *mr = to_wmr(r->mr);

		op = WEFT_VWR_REG_MR;
		w->num_sge = 0;
		if (!mr->pages)
			return -EINVAL;
		w->u.reg.va = mr->ibmr.iova;
		w->u.reg.length = mr->ibmr.length;
		w->u.reg.att_addr = mr->pages_dma;
		w->u.reg.stag = r->key;
		w->u.reg.access = weft_ib_access(r->access);
		w->u.reg.page_shift = ilog2(mr->ibmr.page_size);
		w->u.reg.att_level = WEFT_ATT_DIRECT;
		break;
	}
	default:
		return -EINVAL;
	}
	if (qp->hw_type == WEFT_VQPT_UD) {
		if (op != WEFT_VWR_SEND && op != WEFT_VWR_SEND_IMM &&
		    op != WEFT_VWR_REG_MR && op != WEFT_VWR_LOCAL_INV)
			return -EINVAL;
		if (op == WEFT_VWR_SEND || op == WEFT_VWR_SEND_IMM) {
			const struct ib_ud_wr *ud = ud_wr(wr);
			const struct weft_ibah *ah = to_wah(ud->ah);

			w->u.ud.dest_qpn = ud->remote_qpn;
			w->u.ud.qkey = ud->remote_qkey & 0x80000000u ? qp->attr.qkey :
					 ud->remote_qkey;	/* bit 31: the QP's own */
			w->u.ud.dest_node = ah->dest_node;
			w->u.ud.sgid_index = ah->sgid_index;
			w->u.ud.hop_limit = ah->hop_limit;
			w->u.ud.traffic_class = ah->traffic_class;
			w->u.ud.flow_label = ah->flow_label;
			memcpy(w->u.ud.dgid, ah->dgid, sizeof(w->u.ud.dgid));
		}
	}
	w->opcode = op;
	return 0;
}

int weft_ib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		      const struct ib_send_wr **bad)
{
	struct weft_ibdev *dev = to_wdev(ibqp->device);
	struct weft_ibqp *qp = to_wqp(ibqp);
	u32 n = 1u << qp->sq_log2;
	unsigned long flags;
	int ret = 0;
	bool rang = false;

	spin_lock_irqsave(&qp->sq_lock, flags);
	if (qp->attr.qp_state == IB_QPS_RESET || qp->attr.qp_state == IB_QPS_INIT ||
	    qp->attr.qp_state == IB_QPS_RTR) {
		ret = -EINVAL;
		*bad = wr;
		goto out;
	}
	for (; wr; wr = wr->next) {
		u8 *slot = (u8 *)qp->sq.va + ((qp->sq_prod & (n - 1)) << qp->sq_stride);
		struct weft_vwqe w;

		if (qp->sq_prod - qp->sq_ci >= n) {
			ret = -ENOMEM;
			*bad = wr;
			break;
		}
		ret = weft_build_wqe(qp, wr, &w);
		if (ret) {
			*bad = wr;
			break;
		}
		if (w.flags & WEFT_VWQE_INLINE)
			ret = weft_inline(qp, wr, slot);
		if (ret) {
			*bad = wr;
			break;
		}
		memcpy(slot, &w, sizeof(w));
		if (!(w.flags & WEFT_VWQE_INLINE))
			weft_sges((struct weft_vsge *)(slot + sizeof(w)), wr->sg_list, w.num_sge);
		qp->sq_prod++;
		rang = true;
	}
	if (rang) {
		dma_wmb();
		weft_ib_doorbell(dev, WEFT_UAR_SQ_DB, WEFT_UAR_DB(qp->qpn, qp->sq_prod));
	}
out:
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	return ret;
}

int weft_ib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad)
{
	struct weft_ibdev *dev = to_wdev(ibqp->device);
	struct weft_ibqp *qp = to_wqp(ibqp);
	u32 n = 1u << qp->rq_log2;
	unsigned long flags;
	bool rang = false;
	int ret = 0;

	spin_lock_irqsave(&qp->rq_lock, flags);
	if (qp->attr.qp_state == IB_QPS_RESET || ibqp->srq) {
		ret = -EINVAL;
		*bad = wr;
		goto out;
	}
	for (; wr; wr = wr->next) {
		u8 *slot = (u8 *)qp->rq.va + ((qp->rq_prod & (n - 1)) << qp->rq_stride);
		struct weft_vrwqe w = {};

		if (qp->rq_prod - qp->rq_ci >= n) {
			ret = -ENOMEM;
			*bad = wr;
			break;
		}
		if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_recv_sge) {
			ret = -EINVAL;
			*bad = wr;
			break;
		}
		w.wr_id = wr->wr_id;
		w.num_sge = wr->num_sge;
		memcpy(slot, &w, sizeof(w));
		weft_sges((struct weft_vsge *)(slot + sizeof(w)), wr->sg_list, wr->num_sge);
		qp->rq_prod++;
		rang = true;
	}
	if (rang) {
		dma_wmb();
		weft_ib_doorbell(dev, WEFT_UAR_RQ_DB, WEFT_UAR_DB(qp->qpn, qp->rq_prod));
	}
out:
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	return ret;
}
