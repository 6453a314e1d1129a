// SPDX-License-Identifier: GPL-2.0
/*
 * weft_ib.ko: an ib_device per Weft adapter (docs/verbs-linux.md), bound
 * to weft.ko's auxiliary device "weft.rdma.N".  This file: registration,
 * the RoCE port on the weftN netdev, user contexts and mmap, PDs, AHs,
 * rings and events.
 */
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/uverbs_ioctl.h>

#include "weft_drv.h"
#include "weft_ib.h"

/* ---- helpers shared by the weft_ib files -------------------------------- */

int weft_ib_cmd(struct weft_ibdev *dev, struct weft_vcmd *cmd)
{
	if (dev->fatal)
		return -EIO;
	return weft_vcmd(dev->wdev, cmd, NULL);
}

void weft_ib_doorbell(struct weft_ibdev *dev, u32 reg, u64 val)
{
	writeq(val, dev->uar0 + reg);
}

/* A Weft MAC 02:57:46:AA:NN:NN names node NN:NN (docs/net.md). */
int weft_ib_node_from_mac(const u8 *mac, u16 *node)
{
	if (mac[0] != 0x02 || mac[1] != 0x57 || mac[2] != 0x46)
		return -EINVAL;
	*node = (u16)(mac[4] << 8 | mac[5]);
	return 0;
}

int weft_ib_ring_alloc(struct weft_ibdev *dev, size_t size, struct weft_ring *r)
{
	size = PAGE_ALIGN(size);
	if (!size || size > WEFT_IB_MAX_RING)
		return -EINVAL;
	r->va = alloc_pages_exact(size, GFP_KERNEL | __GFP_ZERO);
	if (!r->va)
		return -ENOMEM;
	r->size = size;
	r->dma = dma_map_single(&dev->pdev->dev, r->va, size, DMA_BIDIRECTIONAL);
	if (dma_mapping_error(&dev->pdev->dev, r->dma)) {
		free_pages_exact(r->va, size);
		r->va = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* The adapter no longer uses the ring (its object is destroyed). */
void weft_ib_ring_unmap(struct weft_ibdev *dev, struct weft_ring *r)
{
	if (r->dma)
		dma_unmap_single(&dev->pdev->dev, r->dma, r->size, DMA_BIDIRECTIONAL);
	r->dma = 0;
}

void weft_ib_ring_free(struct weft_ibdev *dev, struct weft_ring *r)
{
	weft_ib_ring_unmap(dev, r);
	if (r->va)
		free_pages_exact(r->va, r->size);
	r->va = NULL;
}

/*
 * Hands a ring to a user context: from now on the mmap entry owns the
 * pages, which are freed in mmap_free once the object is gone and no
 * mapping is left.
 */
int weft_ib_ring_publish(struct weft_ibdev *dev, struct ib_ucontext *uctx,
			 struct weft_ring *r, struct rdma_user_mmap_entry **entry,
			 u64 *offset)
{
	struct weft_mmap_entry *e;
	int ret;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	e->type = WEFT_MMAP_RING;
	e->ring = *r;
	e->dev = dev;
	ret = rdma_user_mmap_entry_insert(uctx, &e->rdma, r->size);
	if (ret) {
		kfree(e);
		return ret;
	}
	*entry = &e->rdma;
	*offset = rdma_user_mmap_get_offset(&e->rdma);
	return 0;
}

/* Destroy path of a user object's ring: DMA stops, pages follow the entry. */
void weft_ib_ring_retire(struct weft_ibdev *dev, struct weft_ring *r,
			 struct rdma_user_mmap_entry *entry)
{
	weft_ib_ring_unmap(dev, r);
	if (entry) {
		container_of(entry, struct weft_mmap_entry, rdma)->ring.dma = 0;
		rdma_user_mmap_entry_remove(entry);
	} else {
		weft_ib_ring_free(dev, r);
	}
}

/* ---- device and port queries ---------------------------------------------- */

static int weft_ib_query_device(struct ib_device *ibdev, struct ib_device_attr *a,
				struct ib_udata *udata)
{
	struct weft_ibdev *dev = to_wdev(ibdev);
	const struct weft_verbs_caps *c = &dev->caps;

	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->sys_image_guid = ibdev->node_guid;
	a->max_mr_size = 1ull << 40;
	a->page_size_cap = GENMASK(WEFT_ATT_MAX_SHIFT, WEFT_ATT_MIN_SHIFT);
	a->vendor_id = WEFT_PCI_VENDOR_ID;
	a->vendor_part_id = WEFT_PCI_DEVICE_ID;
	a->hw_ver = dev->pdev->revision;
	a->max_qp = c->nr_qp > 2 ? c->nr_qp - 2 : 0;
	a->max_qp_wr = 1 << WEFT_VERBS_WQ_MAX_LOG2;
	a->device_cap_flags = IB_DEVICE_MEM_MGT_EXTENSIONS | IB_DEVICE_MEM_WINDOW |
			      IB_DEVICE_MEM_WINDOW_TYPE_2B | IB_DEVICE_SYS_IMAGE_GUID |
			      IB_DEVICE_RC_RNR_NAK_GEN;
	a->max_send_sge = WEFT_IB_MAX_SEND_SGE;
	a->max_recv_sge = WEFT_IB_MAX_RECV_SGE;
	a->max_sge_rd = WEFT_IB_MAX_SEND_SGE;
	a->max_cq = c->nr_cq;
	a->max_cqe = WEFT_IB_MAX_CQE;
	a->cq_caps.max_cq_moderation_count = WEFT_VERBS_CQ_MOD_MAX_COUNT;
	a->cq_caps.max_cq_moderation_period = WEFT_VERBS_CQ_MOD_MAX_US;
	a->max_mr = c->nr_tpt > 1 ? c->nr_tpt - 1 : 0;
	a->max_mw = a->max_mr;
	a->max_pd = c->nr_pd;
	a->max_qp_rd_atom = WEFT_VERBS_MAX_RD_ATOMIC;
	a->max_qp_init_rd_atom = WEFT_VERBS_MAX_RD_ATOMIC;
	a->max_res_rd_atom = a->max_qp * WEFT_VERBS_MAX_RD_ATOMIC;
	a->atomic_cap = IB_ATOMIC_HCA;
	a->max_ah = INT_MAX;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
	a->max_fast_reg_page_list_len = WEFT_IB_FRMR_PAGES;
	a->max_srq = c->nr_qp > 1 ? c->nr_qp - 1 : 0;
	a->max_srq_wr = WEFT_IB_MAX_SRQ_WR;
	a->max_srq_sge = WEFT_IB_MAX_RECV_SGE;
	/*
	 * Tag-matching SRQs (hw-spec 16.15): tags, operations and SGEs the
	 * adapter holds; the longest RNDV message whose rendezvous it does.
	 */
	a->tm_caps.max_num_tags = WEFT_VERBS_TM_MAX_TAGS;
	a->tm_caps.max_ops = 1u << WEFT_VERBS_TM_OPS_LOG2;
	a->tm_caps.max_sge = WEFT_VERBS_TM_MAX_SGE;
	a->tm_caps.max_rndv_hdr_size = WEFT_VERBS_TM_RNDV_HDR;
	a->tm_caps.flags = IB_TM_CAP_RNDV_RC;
	a->max_pi_fast_reg_page_list_len = 0;
	return 0;
}

static bool weft_ib_port_up(struct weft_ibdev *dev)
{
	return netif_running(dev->ndev) && netif_carrier_ok(dev->ndev) && !dev->fatal;
}

static int weft_ib_query_port(struct ib_device *ibdev, u32 port, struct ib_port_attr *a)
{
	struct weft_ibdev *dev = to_wdev(ibdev);
	bool up = weft_ib_port_up(dev);
	int ret;

	/* The core zeroed *a. */
	a->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	a->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP : IB_PORT_PHYS_STATE_DISABLED;
	a->max_mtu = IB_MTU_4096;
	a->active_mtu = min(IB_MTU_4096, iboe_get_mtu(READ_ONCE(dev->ndev->mtu)));
	a->gid_tbl_len = WEFT_VERBS_GID_TBL;
	a->port_cap_flags = IB_PORT_CM_SUP;
	a->max_msg_sz = WEFT_VERBS_MAX_MSG;
	a->pkey_tbl_len = 1;
	a->bad_pkey_cntr = 0;
	a->qkey_viol_cntr = 0;
	ret = ib_get_eth_speed(ibdev, port, &a->active_speed, &a->active_width);
	return ret;
}

static int weft_ib_port_immutable(struct ib_device *ibdev, u32 port,
				  struct ib_port_immutable *im)
{
	struct ib_port_attr a = {};
	int ret;

	ret = ib_query_port(ibdev, port, &a);
	if (ret)
		return ret;
	im->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	im->pkey_tbl_len = a.pkey_tbl_len;
	im->gid_tbl_len = a.gid_tbl_len;
	im->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer weft_ib_link_layer(struct ib_device *ibdev, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int weft_ib_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	if (index)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

/* The kernel's GID cache (roce_gid_mgmt) programs the adapter's table. */
static int weft_ib_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct weft_ibdev *dev = to_wdev(attr->device);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_SET_GID, .handle = attr->index };

	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP || attr->index >= WEFT_VERBS_GID_TBL)
		return -EINVAL;
	memcpy(cmd.u.gid.gid, attr->gid.raw, sizeof(cmd.u.gid.gid));
	cmd.u.gid.type = ipv6_addr_v4mapped((const struct in6_addr *)attr->gid.raw) ?
			 WEFT_VGID_IPV4 : WEFT_VGID_IPV6;
	cmd.u.gid.port = WEFT_VERBS_PORT;
	return weft_ib_cmd(dev, &cmd);
}

static int weft_ib_del_gid(const struct ib_gid_attr *attr, void **context)
{
	struct weft_vcmd cmd = { .op = WEFT_VCMD_CLEAR_GID, .handle = attr->index };

	cmd.u.gid.port = WEFT_VERBS_PORT;
	weft_ib_cmd(to_wdev(attr->device), &cmd);
	return 0;
}

static void weft_ib_port_event(struct weft_ibdev *dev)
{
	enum ib_port_state st = weft_ib_port_up(dev) ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	struct ib_event ev = {};

	if (st == dev->port_state)
		return;
	dev->port_state = st;
	ev.device = &dev->ibdev;
	ev.element.port_num = 1;
	ev.event = st == IB_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR;
	ib_dispatch_event(&ev);
}

static int weft_ib_netdev_event(struct notifier_block *nb, unsigned long what, void *ptr)
{
	struct weft_ibdev *dev = container_of(nb, struct weft_ibdev, nb);
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);

	if (ndev != dev->ndev)
		return NOTIFY_DONE;
	switch (what) {
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		weft_ib_port_event(dev);
		break;
	default:
		break;
	}
	return NOTIFY_DONE;
}

/* ---- user contexts and mmap ----------------------------------------------- */

static int weft_ib_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	struct weft_ibdev *dev = to_wdev(ibuc->device);
	struct weft_ibucontext *uc = to_wuc(ibuc);
	struct weft_ib_alloc_ucontext_resp resp = {};
	struct weft_mmap_entry *e;
	int ret;

	if (dev->fatal)
		return -EIO;
	if (dev->caps.nr_uar < 2)
		return -ENOMEM;
	ret = ida_alloc_range(&dev->uar_ida, 1, dev->caps.nr_uar - 1, GFP_KERNEL);
	if (ret < 0)
		return ret == -ENOSPC ? -ENOMEM : ret;
	uc->uar = ret;
	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e) {
		ret = -ENOMEM;
		goto err_uar;
	}
	e->type = WEFT_MMAP_UAR;
	e->phys = weft_verbs_uar_phys(dev->wdev, uc->uar);
	e->dev = dev;
	ret = rdma_user_mmap_entry_insert(ibuc, &e->rdma, PAGE_SIZE);
	if (ret) {
		kfree(e);
		goto err_uar;
	}
	uc->db_entry = &e->rdma;
	resp.ring_format = WEFT_IB_RING_FORMAT;
	resp.uar_index = uc->uar;
	resp.db_mmap_offset = rdma_user_mmap_get_offset(&e->rdma);
	resp.db_mmap_size = PAGE_SIZE;
	resp.cqe_size = sizeof(struct weft_vcqe);
	resp.sq_stride_min_log2 = WEFT_IB_SQ_STRIDE_MIN;
	resp.sq_stride_max_log2 = WEFT_IB_SQ_STRIDE_MAX;
	resp.rq_stride_min_log2 = WEFT_IB_RQ_STRIDE_MIN;
	resp.rq_stride_max_log2 = WEFT_IB_RQ_STRIDE_MAX;
	resp.max_wq_log2 = WEFT_VERBS_WQ_MAX_LOG2;
	resp.max_cq_log2 = WEFT_IB_MAX_CQ_LOG2;
	resp.max_ring_bytes = WEFT_IB_MAX_RING;
	resp.grh_size = WEFT_VERBS_GRH_SIZE;
	ret = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (ret)
		goto err_entry;
	return 0;

err_entry:
	rdma_user_mmap_entry_remove(uc->db_entry);
err_uar:
	ida_free(&dev->uar_ida, uc->uar);
	return ret;
}

static void weft_ib_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct weft_ibdev *dev = to_wdev(ibuc->device);
	struct weft_ibucontext *uc = to_wuc(ibuc);

	rdma_user_mmap_entry_remove(uc->db_entry);
	ida_free(&dev->uar_ida, uc->uar);
}

static int weft_ib_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *re;
	struct weft_mmap_entry *e;
	int ret;

	re = rdma_user_mmap_entry_get(ibuc, vma);
	if (!re)
		return -EINVAL;
	e = container_of(re, struct weft_mmap_entry, rdma);
	if (e->type == WEFT_MMAP_CNTR && (vma->vm_flags & VM_WRITE)) {
		ret = -EPERM;		/* the adapter's block: read-only */
		goto out;
	}
	if (e->type == WEFT_MMAP_CNTR) {
#ifdef WEFT_HAVE_VM_FLAGS_SET
		vm_flags_clear(vma, VM_MAYWRITE);
#else
		vma->vm_flags &= ~VM_MAYWRITE;
#endif
	}
	if (e->type == WEFT_MMAP_UAR) {
		if (vma->vm_flags & VM_READ) {
			ret = -EPERM;
			goto out;
		}
		ret = rdma_user_mmap_io(ibuc, vma, PHYS_PFN(e->phys), PAGE_SIZE,
					pgprot_noncached(vma->vm_page_prot), re);
	} else {
		ret = rdma_user_mmap_io(ibuc, vma, PHYS_PFN(virt_to_phys(e->ring.va)),
					e->ring.size, vma->vm_page_prot, re);
	}
out:
	rdma_user_mmap_entry_put(re);
	return ret;
}

/*
 * ib_core unregisters the device with user contexts still open (adapter
 * recovery, unbind): it zaps their mappings, all made by
 * rdma_user_mmap_io(), and destroys their objects; nothing else to do.
 */
static void weft_ib_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

static void weft_ib_mmap_free(struct rdma_user_mmap_entry *re)
{
	struct weft_mmap_entry *e = container_of(re, struct weft_mmap_entry, rdma);

	if (e->type != WEFT_MMAP_UAR)
		weft_ib_ring_free(e->dev, &e->ring);
	kfree(e);
}

/* ---- PDs and AHs ------------------------------------------------------------ */

static int weft_ib_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct weft_ibdev *dev = to_wdev(ibpd->device);
	struct weft_ibpd *pd = to_wpd(ibpd);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_CREATE_PD };
	int ret;

	ret = ida_alloc_max(&dev->pd_ida, dev->caps.nr_pd - 1, GFP_KERNEL);
	if (ret < 0)
		return ret == -ENOSPC ? -ENOMEM : ret;
	pd->pdn = ret;
	cmd.handle = pd->pdn;
	ret = weft_ib_cmd(dev, &cmd);
	if (ret) {
		ida_free(&dev->pd_ida, pd->pdn);
		return ret;
	}
	return 0;
}

static int weft_ib_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct weft_ibdev *dev = to_wdev(ibpd->device);
	struct weft_ibpd *pd = to_wpd(ibpd);
	struct weft_vcmd cmd = { .op = WEFT_VCMD_DESTROY_PD, .handle = pd->pdn };

	weft_ib_cmd(dev, &cmd);
	ida_free(&dev->pd_ida, pd->pdn);
	return 0;
}

/* Never sleeps: ib_cm calls it under a spinlock (flags without SLEEPABLE). */
static int weft_ib_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
			     struct ib_udata *udata)
{
	struct weft_ibah *ah = to_wah(ibah);
	struct rdma_ah_attr *a = init->ah_attr;
	struct weft_ib_create_ah_resp resp = {};
	const struct ib_global_route *grh;
	int ret;

	if (a->type != RDMA_AH_ATTR_TYPE_ROCE || !(rdma_ah_get_ah_flags(a) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(a);
	if (grh->sgid_index >= WEFT_VERBS_GID_TBL)
		return -EINVAL;
	ah->sgid_index = grh->sgid_index;
	ah->hop_limit = grh->hop_limit;
	ah->traffic_class = grh->traffic_class;
	ah->flow_label = grh->flow_label & 0xfffff;
	memcpy(ah->dgid, grh->dgid.raw, sizeof(ah->dgid));
	if (is_multicast_ether_addr(a->roce.dmac))
		ah->dest_node = 0xffff;
	else if (weft_ib_node_from_mac(a->roce.dmac, &ah->dest_node))
		return -EINVAL;
	if (udata && udata->outlen) {
		resp.dest_node = ah->dest_node;
		ret = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
		if (ret)
			return ret;
	}
	return 0;
}

static int weft_ib_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}

/* ---- events and recovery ------------------------------------------------------ */

static void weft_ib_event(void *priv, const struct weft_event *ev)
{
	struct weft_ibdev *dev = priv;

	if (ev->type == WEFT_EV_VERBS_CQ) {
		weft_ib_cq_event(dev, ev->rcxt);
		return;
	}
	switch (ev->info) {
	case WEFT_VASYNC_QP_FATAL:
		/* Reason OK: the driver's own MODIFY_QP to ERR, not an error. */
		if (ev->reason != WEFT_R_OK)
			weft_ib_qp_event(dev, ev->rcxt, IB_EVENT_QP_FATAL);
		break;
	case WEFT_VASYNC_SQ_DRAINED:
		weft_ib_qp_event(dev, ev->rcxt, IB_EVENT_SQ_DRAINED);
		break;
	case WEFT_VASYNC_LAST_WQE:
		weft_ib_qp_event(dev, ev->rcxt, IB_EVENT_QP_LAST_WQE_REACHED);
		break;
	case WEFT_VASYNC_SRQ_LIMIT:
		weft_ib_srq_event(dev, ev->rcxt);
		break;
	case WEFT_VASYNC_CQ_ERR: {
		struct weft_ibcq *cq = xa_load(&dev->cqs, ev->rcxt);
		struct ib_event e = { .device = &dev->ibdev, .event = IB_EVENT_CQ_ERR };

		if (cq && cq->ibcq.event_handler) {
			e.element.cq = &cq->ibcq;
			cq->ibcq.event_handler(&e, cq->ibcq.cq_context);
		}
		break;
	}
	default:
		break;
	}
}

/*
 * Adapter recovery forgets every verbs object (hw-spec 16.1): every QP is
 * reported in error, the device is fatal for its users (ib_core tells
 * ib_uverbs, rdma_cm and the ULPs, which tear their objects down) and
 * the port goes down.  Commands fail from here on; destroy paths still
 * free what the driver holds.  After the recovery weft.ko binds weft_ib
 * again (weft_verbs_reprobe), which brings a new ib_device up.
 */
static void weft_ib_recover(void *priv, bool begin)
{
	struct weft_ibdev *dev = priv;
	struct ib_event ev = { .device = &dev->ibdev };
	struct weft_ibqp *qp;
	unsigned long i;

	if (!begin || dev->fatal)
		return;
	dev->fatal = true;
	xa_for_each(&dev->qps, i, qp)
		qp->attr.qp_state = IB_QPS_ERR;
	xa_for_each(&dev->qps, i, qp)
		weft_ib_qp_event(dev, i, IB_EVENT_QP_FATAL);
	weft_ib_port_event(dev);
	ev.event = IB_EVENT_DEVICE_FATAL;
	ev.element.port_num = 1;
	ib_dispatch_event(&ev);
}

static const struct weft_verbs_ops weft_ib_vops = {
	.event = weft_ib_event,
	.recover = weft_ib_recover,
};

/* ---- registration ---------------------------------------------------------- */

static const struct ib_device_ops weft_ib_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = WEFT_IB_UVERBS_ABI_VERSION,

	.add_gid = weft_ib_add_gid,
	.alloc_mr = weft_ib_alloc_mr,
	.alloc_mw = weft_ib_alloc_mw,
	.alloc_pd = weft_ib_alloc_pd,
	.alloc_ucontext = weft_ib_alloc_ucontext,
	.create_ah = weft_ib_create_ah,
	.create_cq = weft_ib_create_cq,
	.create_qp = weft_ib_create_qp,
	.create_srq = weft_ib_create_srq,
	.create_user_ah = weft_ib_create_ah,
	.dealloc_mw = weft_ib_dealloc_mw,
	.dealloc_pd = weft_ib_dealloc_pd,
	.dealloc_ucontext = weft_ib_dealloc_ucontext,
	.dereg_mr = weft_ib_dereg_mr,
	.del_gid = weft_ib_del_gid,
	.destroy_ah = weft_ib_destroy_ah,
	.destroy_cq = weft_ib_destroy_cq,
	.resize_cq = weft_ib_resize_cq,
	.destroy_qp = weft_ib_destroy_qp,
	.destroy_srq = weft_ib_destroy_srq,
	.disassociate_ucontext = weft_ib_disassociate_ucontext,
	.fill_res_cq_entry = weft_ib_fill_res_cq_entry,
	.get_dma_mr = weft_ib_get_dma_mr,
	.get_link_layer = weft_ib_link_layer,
	.get_port_immutable = weft_ib_port_immutable,
	.map_mr_sg = weft_ib_map_mr_sg,
	.mmap = weft_ib_mmap,
	.mmap_free = weft_ib_mmap_free,
	.modify_cq = weft_ib_modify_cq,
	.modify_qp = weft_ib_modify_qp,
	.modify_srq = weft_ib_modify_srq,
	.poll_cq = weft_ib_poll_cq,
	.post_recv = weft_ib_post_recv,
	.post_send = weft_ib_post_send,
	.post_srq_recv = weft_ib_post_srq_recv,
	.query_device = weft_ib_query_device,
	.query_pkey = weft_ib_query_pkey,
	.query_port = weft_ib_query_port,
	.query_qp = weft_ib_query_qp,
	.query_srq = weft_ib_query_srq,
	.reg_user_mr = weft_ib_reg_user_mr,
	.req_notify_cq = weft_ib_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, weft_ibah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, weft_ibcq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, weft_ibmw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, weft_ibpd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, weft_ibqp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, weft_ibsrq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, weft_ibucontext, ibuc),
};

static int weft_ib_probe(struct auxiliary_device *adev,
			 const struct auxiliary_device_id *id)
{
	struct weft_adev *wa = container_of(adev, struct weft_adev, adev);
	struct weft_dev *wdev = wa->wdev;
	struct weft_ibdev *dev;
	struct ib_device *ibdev;
	int ret;

	dev = ib_alloc_device(weft_ibdev, ibdev);
	if (!dev)
		return -ENOMEM;
	ibdev = &dev->ibdev;
	dev->wdev = wdev;
	dev->pdev = weft_verbs_pdev(wdev);
	dev->ndev = weft_verbs_netdev(wdev);
	weft_verbs_get_caps(wdev, &dev->caps);
	ret = -ENODEV;
	if (!dev->ndev || !dev->caps.nr_uar || !dev->caps.nr_pd || !dev->caps.nr_cq ||
	    dev->caps.nr_qp < 2 || dev->caps.nr_tpt < 2)
		goto err_free;
	ida_init(&dev->pd_ida);
	ida_init(&dev->cq_ida);
	ida_init(&dev->qp_ida);
	ida_init(&dev->tpt_ida);
	ida_init(&dev->uar_ida);
	ida_init(&dev->srq_ida);
	xa_init_flags(&dev->cqs, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->qps, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->srqs, XA_FLAGS_LOCK_IRQ);
	spin_lock_init(&dev->gen_lock);
	mutex_init(&dev->gsi_lock);
	ret = -ENOMEM;
	dev->tpt_gen = vzalloc(dev->caps.nr_tpt);
	if (!dev->tpt_gen)
		goto err_free;
	dev->uar0 = ioremap(weft_verbs_uar_phys(wdev, WEFT_IB_KERNEL_UAR), PAGE_SIZE);
	if (!dev->uar0)
		goto err_gen;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = 1;
	ibdev->dev.parent = &dev->pdev->dev;
	ibdev->dma_device = &dev->pdev->dev;
	ibdev->local_dma_lkey = 0;
	strscpy(ibdev->node_desc, "Weft adapter", sizeof(ibdev->node_desc));
	addrconf_addr_eui48((u8 *)&ibdev->node_guid, dev->ndev->dev_addr);
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_POLL_CQ) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	ib_set_device_ops(ibdev, &weft_ib_ops);
	ibdev->driver_def = weft_ib_cntr_defs;
	/*
	 * Adaptive moderation (DIM) for the kernel's ib_alloc_cq users (NVMe
	 * over RDMA, for one): ib_core tunes each such CQ through modify_cq.
	 * `rdma dev set weft_ibN adaptive-moderation off` turns it off.
	 */
	ibdev->use_cq_dim = 1;
	ret = ib_device_set_netdev(ibdev, dev->ndev, 1);
	if (ret)
		goto err_uar;
	dev->port_state = weft_ib_port_up(dev) ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	weft_verbs_set_ops(wdev, &weft_ib_vops, dev);
	ret = ib_register_device(ibdev, "weft_ib%d", &dev->pdev->dev);
	if (ret)
		goto err_ops;
	dev->nb.notifier_call = weft_ib_netdev_event;
	ret = register_netdevice_notifier(&dev->nb);
	if (ret)
		goto err_unreg;
	auxiliary_set_drvdata(adev, dev);
	weft_ib_debugfs_add(dev);
	dev_info(&adev->dev, "%s: node %u, %u QPs, %u CQs, %u PDs, %u TPT entries, %u UARs\n",
		 dev_name(&ibdev->dev), dev->caps.node_id, dev->caps.nr_qp,
		 dev->caps.nr_cq, dev->caps.nr_pd, dev->caps.nr_tpt, dev->caps.nr_uar);
	return 0;

err_unreg:
	ib_unregister_device(ibdev);
err_ops:
	weft_verbs_set_ops(wdev, NULL, NULL);
	ib_device_set_netdev(ibdev, NULL, 1);
err_uar:
	iounmap(dev->uar0);
err_gen:
	vfree(dev->tpt_gen);
err_free:
	ib_dealloc_device(ibdev);
	return ret;
}

static void weft_ib_remove(struct auxiliary_device *adev)
{
	struct weft_ibdev *dev = auxiliary_get_drvdata(adev);

	weft_ib_debugfs_del(dev);
	unregister_netdevice_notifier(&dev->nb);
	ib_unregister_device(&dev->ibdev);
	weft_verbs_set_ops(dev->wdev, NULL, NULL);
	ib_device_set_netdev(&dev->ibdev, NULL, 1);
	iounmap(dev->uar0);
	vfree(dev->tpt_gen);
	ida_destroy(&dev->pd_ida);
	ida_destroy(&dev->cq_ida);
	ida_destroy(&dev->qp_ida);
	ida_destroy(&dev->tpt_ida);
	ida_destroy(&dev->uar_ida);
	ida_destroy(&dev->srq_ida);
	ib_dealloc_device(&dev->ibdev);
}

static const struct auxiliary_device_id weft_ib_ids[] = {
	{ .name = "weft.rdma" },
	{ }
};
MODULE_DEVICE_TABLE(auxiliary, weft_ib_ids);

static struct auxiliary_driver weft_ib_driver = {
	.name = "ib",
	.probe = weft_ib_probe,
	.remove = weft_ib_remove,
	.id_table = weft_ib_ids,
};

static int __init weft_ib_init(void)
{
	int ret;

	weft_ib_debugfs_init();
	ret = auxiliary_driver_register(&weft_ib_driver);
	if (ret)
		weft_ib_debugfs_exit();
	return ret;
}

static void __exit weft_ib_exit(void)
{
	auxiliary_driver_unregister(&weft_ib_driver);
	weft_ib_debugfs_exit();
}

module_init(weft_ib_init);
module_exit(weft_ib_exit);

MODULE_DESCRIPTION("Weft adapter: ib_device (RDMA core) companion of weft.ko");
MODULE_AUTHOR("The Weft project");
MODULE_LICENSE("GPL");
