// SPDX-License-Identifier: MIT
/*
 * RDM endpoints: bindings, enabling (the verbs CQ, the tag-matching SRQ,
 * the registered bounce and SRQ buffers, the listener), names, options.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "wfi.h"

static int bind_cntr(struct wfi_ep *ep, struct fid_cntr *c, uint64_t flags)
{
	struct fid_cntr **slot[6] = { &ep->tx_cntr, &ep->rx_cntr, &ep->rd_cntr, &ep->wr_cntr,
				      &ep->rrd_cntr, &ep->rwr_cntr };
	const uint64_t bit[6] = { FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ,
				  FI_REMOTE_WRITE };
	int i, ret;

	if ((flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)) && !(ep->info->caps & FI_RMA_EVENT))
		return -FI_ENOSYS;	/* needs FI_RMA_EVENT */
	if (!flags || (flags & ~(uint64_t)(FI_SEND | FI_RECV | FI_READ | FI_WRITE |
					  FI_REMOTE_READ | FI_REMOTE_WRITE)))
		return -FI_EBADFLAGS;
	for (i = 0; i < 6; i++)
		if ((flags & bit[i]) && *slot[i])
			return -FI_EINVAL;
	for (i = 0; i < 6; i++)
		if (flags & bit[i]) {
			ret = wfi_cntr_bind_ep(c, ep, bit[i]);
			if (ret)
				return ret;
			*slot[i] = c;
		}
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct wfi_ep *ep = container_of(fid, struct wfi_ep, ep_fid.fid);
	struct wfi_cq *cq;

	if (!bfid)
		return -FI_EINVAL;
	if (ep->enabled)
		return -FI_EOPBADSTATE;
	switch (bfid->fclass) {
	case FI_CLASS_AV:
		if (flags)
			return -FI_EBADFLAGS;
		if (ep->av)
			return -FI_EINVAL;
		ep->av = container_of(bfid, struct wfi_av, av_fid.fid);
		ep->av->refs++;
		return 0;
	case FI_CLASS_CQ:
		if (flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
			return -FI_EBADFLAGS;
		if (!(flags & (FI_TRANSMIT | FI_RECV)))
			return -FI_EINVAL;
		cq = container_of(bfid, struct wfi_cq, cq_fid.fid);
		if ((flags & FI_TRANSMIT && ep->tx_cq) || (flags & FI_RECV && ep->rx_cq))
			return -FI_EINVAL;
		if (cq->neps == (int)(sizeof(cq->eps) / sizeof(cq->eps[0])))
			return -FI_ENOSPC;
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = cq;
			ep->tx_sel = !!(flags & FI_SELECTIVE_COMPLETION);
		}
		if (flags & FI_RECV) {
			ep->rx_cq = cq;
			ep->rx_sel = !!(flags & FI_SELECTIVE_COMPLETION);
		}
		if (!(cq->neps && cq->eps[cq->neps - 1] == ep))
			cq->eps[cq->neps++] = ep;
		cq->refs += !!(flags & FI_TRANSMIT) + !!(flags & FI_RECV);
		return 0;
	case FI_CLASS_EQ:
		return 0;		/* RDM endpoints report no events */
	case FI_CLASS_CNTR:
		return bind_cntr(ep, container_of(bfid, struct fid_cntr, fid), flags);
	default:
		return -FI_EINVAL;
	}
}

static int enable(struct wfi_ep *ep)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = WFI_VCQ_SIZE,
		.wc_flags = IBV_WC_EX_WITH_TM_INFO | IBV_WC_EX_WITH_BYTE_LEN |
			    IBV_WC_EX_WITH_QP_NUM,
	};
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = WFI_SRQ_WQES, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM,
		.srq_type = IBV_SRQT_TM,
		.tm_cap = { .max_num_tags = WFI_HW_RX, .max_ops = 4 * WFI_HW_RX },
	};
	size_t bytes = (size_t)WFI_NSLOTS * WFI_SLOT;
	uint64_t inc;
	int i, ret;

	if (!ep->av || (!ep->tx_cq && !ep->rx_cq && !ep->tx_cntr && !ep->rx_cntr))
		return -FI_ENOAV;
	if (ep->dom->max_tags < WFI_HW_RX)
		sa.tm_cap.max_num_tags = ep->dom->max_tags;
	wfi_rx_init(ep, sa.tm_cap.max_num_tags);
	ep->vcq = ibv_create_cq_ex(ep->dom->ctx, &ca);
	if (!ep->vcq)
		return -FI_ENOMEM;
	sa.pd = ep->dom->pd;
	sa.cq = ibv_cq_ex_to_cq(ep->vcq);
	ep->srq = ibv_create_srq_ex(ep->dom->ctx, &sa);
	if (!ep->srq)
		return -FI_ENOMEM;
	ep->slots = aligned_alloc(4096, bytes);
	if (!ep->slots)
		return -FI_ENOMEM;
	memset(ep->slots, 0, bytes);
	ep->slots_mr = ibv_reg_mr(ep->dom->pd, ep->slots, bytes, IBV_ACCESS_LOCAL_WRITE);
	if (!ep->slots_mr)
		return -FI_ENOMEM;
	ret = wfi_ux_init(ep);
	if (ret)
		return ret;
	for (i = 0; i < WFI_SRQ_WQES; i++) {
		ret = wfi_srq_post(ep, i);
		if (ret)
			return ret;
	}
	/* A new incarnation (docs/libfabric.md "Names"): a later endpoint at
	 * this address and port is another peer. */
	do {
		if (getrandom(&inc, sizeof(inc), 0) != sizeof(inc))
			return -FI_EIO;
	} while (!inc);
	wfi_name_set_inc(&ep->name.sin, inc);
	ret = wfi_conn_listen(ep);
	if (ret)
		return ret;
	ep->rvh = !getenv("WEFT_FI_RNDV") || strcmp(getenv("WEFT_FI_RNDV"), "eager");
	ep->log = getenv("WEFT_FI_LOG") != NULL;
	ep->enabled = true;
	return 0;
}

static int alias_close(struct fid *fid)
{
	free(container_of(fid, struct wfi_alias, ep_fid.fid));
	return 0;
}

static struct fi_ops alias_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = alias_close,
	.bind = wfi_no_bind,
	.control = wfi_no_control,
	.ops_open = wfi_no_ops_open,
};

/* The endpoint behind an endpoint or an alias of it. */
struct wfi_ep *wfi_ep_of(struct fid_ep *fep)
{
	if (fep->fid.ops == &alias_fi_ops)
		return container_of(fep, struct wfi_alias, ep_fid)->ep;
	return container_of(fep, struct wfi_ep, ep_fid);
}

/* The default op flags of fep for direction dir (FI_TRANSMIT or FI_RECV):
 * the endpoint's, or its alias's. */
uint64_t wfi_op_flags(struct fid_ep *fep, uint64_t dir)
{
	struct wfi_ep *ep = wfi_ep_of(fep);

	if (fep->fid.ops == &alias_fi_ops) {
		struct wfi_alias *a = container_of(fep, struct wfi_alias, ep_fid);

		if (a->flags & dir)
			return a->flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV);
	}
	return dir == FI_TRANSMIT ? ep->tx_op_flags : ep->rx_op_flags;
}

static int make_alias(struct wfi_ep *ep, struct fi_alias *arg)
{
	struct wfi_alias *a;

	if (!arg || !arg->fid || !(arg->flags & (FI_TRANSMIT | FI_RECV)) ||
	    (arg->flags & FI_TRANSMIT && arg->flags & FI_RECV))
		return -FI_EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -FI_ENOMEM;
	a->ep_fid = ep->ep_fid;
	a->ep_fid.fid.ops = &alias_fi_ops;
	a->ep = ep;
	a->flags = arg->flags;
	*arg->fid = &a->ep_fid.fid;
	return 0;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct wfi_ep *ep = container_of(fid, struct wfi_ep, ep_fid.fid);
	int ret;

	switch (command) {
	case FI_ALIAS:
		return make_alias(ep, arg);
	case FI_ENABLE:
		pthread_mutex_lock(&ep->dom->lock);
		ret = ep->enabled ? 0 : enable(ep);
		pthread_mutex_unlock(&ep->dom->lock);
		return ret;
	case FI_GETOPSFLAG:
		if (!arg)
			return -FI_EINVAL;
		if (*(uint64_t *)arg & FI_TRANSMIT)
			*(uint64_t *)arg = ep->tx_op_flags;
		else if (*(uint64_t *)arg & FI_RECV)
			*(uint64_t *)arg = ep->rx_op_flags;
		else
			return -FI_EINVAL;
		return 0;
	case FI_SETOPSFLAG:
		if (!arg)
			return -FI_EINVAL;
		if (*(uint64_t *)arg & FI_TRANSMIT)
			ep->tx_op_flags = *(uint64_t *)arg & ~(uint64_t)FI_TRANSMIT;
		else if (*(uint64_t *)arg & FI_RECV)
			ep->rx_op_flags = *(uint64_t *)arg & ~(uint64_t)FI_RECV;
		else
			return -FI_EINVAL;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static int ep_close(struct fid *fid)
{
	struct wfi_ep *ep = container_of(fid, struct wfi_ep, ep_fid.fid);
	struct wfi_cq *cqs[2] = { ep->tx_cq, ep->rx_cq };
	int i, j, k;

	pthread_mutex_lock(&ep->dom->lock);
	wfi_trig_close(ep);
	wfi_conn_close(ep);
	for (i = 0; i < WFI_TX_SIZE; i++)
		wfi_reg_put(ep->dom, ep->tx[i].reg);
	for (i = 0; i < WFI_RX_SIZE; i++)
		wfi_reg_put(ep->dom, ep->rx[i].reg);
	if (ep->srq)
		ibv_destroy_srq(ep->srq);
	if (ep->vcq)
		ibv_destroy_cq(ibv_cq_ex_to_cq(ep->vcq));
	if (ep->slots_mr)
		ibv_dereg_mr(ep->slots_mr);
	free(ep->slots);
	wfi_ux_fini(ep);
	for (i = 0; i < 2; i++) {
		if (!cqs[i] || (i == 1 && cqs[1] == cqs[0]))
			continue;
		for (j = k = 0; j < cqs[i]->neps; j++)
			if (cqs[i]->eps[j] != ep)
				cqs[i]->eps[k++] = cqs[i]->eps[j];
		cqs[i]->neps = k;
	}
	if (ep->tx_cq)
		ep->tx_cq->refs--;
	if (ep->rx_cq)
		ep->rx_cq->refs--;
	if (ep->av)
		ep->av->refs--;
	{
		struct fid_cntr *c[6] = { ep->tx_cntr, ep->rx_cntr, ep->rd_cntr, ep->wr_cntr,
					  ep->rrd_cntr, ep->rwr_cntr };

		for (i = 0; i < 6; i++)
			if (c[i])
				wfi_cntr_unbind_ep(c[i], ep);
	}
	wfi_dom_forget_ep(ep->dom, ep);
	ep->dom->refs--;
	pthread_mutex_unlock(&ep->dom->lock);
	fi_freeinfo(ep->info);
	free(ep->peers);
	free(ep);
	return 0;
}

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct wfi_ep *ep = wfi_ep_of(container_of(fid, struct fid_ep, fid));
	size_t want = sizeof(ep->name.sin);

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	memcpy(addr, &ep->name.sin, *addrlen < want ? *addrlen : want);
	if (*addrlen < want) {
		*addrlen = want;
		return -FI_ETOOSMALL;
	}
	*addrlen = want;
	return 0;
}

static int ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct wfi_ep *ep = wfi_ep_of(container_of(fid, struct fid_ep, fid));
	const struct sockaddr_in *sin = addr;

	if (!addr || addrlen != sizeof(*sin) || sin->sin_family != AF_INET)
		return -FI_EINVAL;
	if (ep->enabled)
		return -FI_EOPBADSTATE;
	ep->name.sin = *sin;
	wfi_name_set_inc(&ep->name.sin, 0);	/* drawn at fi_enable */
	return 0;
}

static int no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	(void)ep;
	(void)addr;
	(void)addrlen;
	return -FI_ENOSYS;
}

static int no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t len)
{
	(void)ep;
	(void)addr;
	(void)param;
	(void)len;
	return -FI_ENOSYS;
}

static int no_accept(struct fid_ep *ep, const void *param, size_t len)
{
	(void)ep;
	(void)param;
	(void)len;
	return -FI_ENOSYS;
}

static int no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	(void)ep;
	(void)flags;
	return -FI_ENOSYS;
}

static int no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		   void *ctx)
{
	(void)ep;
	(void)addr;
	(void)flags;
	(void)mc;
	(void)ctx;
	return -FI_ENOSYS;
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	(void)fid;
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname == FI_OPT_CM_DATA_SIZE) {
		if (!optval || !optlen || *optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		*(size_t *)optval = 0;
		*optlen = sizeof(size_t);
		return 0;
	}
	return -FI_ENOPROTOOPT;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	(void)fid;
	(void)level;
	(void)optname;
	(void)optval;
	(void)optlen;
	return -FI_ENOPROTOOPT;
}

static int no_ctx(struct fid_ep *sep, int index, void *attr, struct fid_ep **ep, void *ctx)
{
	(void)sep;
	(void)index;
	(void)attr;
	(void)ep;
	(void)ctx;
	return -FI_ENOSYS;
}

static int no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **ep,
		     void *ctx)
{
	return no_ctx(sep, index, attr, ep, ctx);
}

static int no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **ep,
		     void *ctx)
{
	return no_ctx(sep, index, attr, ep, ctx);
}

static ssize_t rx_size_left(struct fid_ep *fep)
{
	struct wfi_ep *ep = wfi_ep_of(fep);
	ssize_t n = 0;
	int i;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	for (i = 0; i < WFI_RX_SIZE; i++)
		n += ep->rx[i].state == WFI_RX_FREE;
	return n;
}

static ssize_t tx_size_left(struct fid_ep *fep)
{
	struct wfi_ep *ep = wfi_ep_of(fep);
	ssize_t n = 0;
	int i;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	for (i = 0; i < WFI_TX_USER; i++)
		n += !ep->tx[i].busy;
	return n;
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = wfi_ep_ops_open,
};

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = wfi_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = no_tx_ctx,
	.rx_ctx = no_rx_ctx,
	.rx_size_left = rx_size_left,
	.tx_size_left = tx_size_left,
};

static struct fi_ops_cm cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = ep_setname,
	.getname = ep_getname,
	.getpeer = no_getpeer,
	.connect = no_connect,
	.accept = no_accept,
	.shutdown = no_shutdown,
	.join = no_join,
};

int wfi_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **fep,
		void *context)
{
	struct wfi_domain *d = container_of(domain, struct wfi_domain, domain_fid);
	struct wfi_ep *ep;
	int ret;

	if (!info || !fep)
		return -FI_EINVAL;
	if (info->ep_attr && info->ep_attr->type != FI_EP_RDM)
		return -FI_EINVAL;
	if (info->src_addr && (info->src_addrlen != sizeof(struct sockaddr_in) ||
			       ((struct sockaddr *)info->src_addr)->sa_family != AF_INET))
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->peers = calloc(WFI_MAX_PEERS, sizeof(*ep->peers));
	ep->info = fi_dupinfo(info);
	if (!ep->peers || !ep->info) {
		free(ep->peers);
		fi_freeinfo(ep->info);
		free(ep);
		return -FI_ENOMEM;
	}
	if (info->src_addr) {
		/* Its address and port; the incarnation is drawn at fi_enable. */
		memcpy(&ep->name.sin, info->src_addr, sizeof(ep->name.sin));
		wfi_name_set_inc(&ep->name.sin, 0);
	} else {
		ret = wfi_local_addr(&ep->name.sin);
		if (ret) {
			fi_freeinfo(ep->info);
			free(ep->peers);
			free(ep);
			return ret;
		}
	}
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	ep->dom = d;
	ep->keyq_peer = -1;
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &ep_fi_ops;
	ep->ep_fid.ops = &ep_ops;
	ep->ep_fid.cm = &cm_ops;
	ep->ep_fid.msg = &wfi_msg_ops;
	ep->ep_fid.tagged = &wfi_tagged_ops;
	ep->ep_fid.rma = &wfi_rma_ops;
	ep->ep_fid.atomic = &wfi_atomic_ops;
	pthread_mutex_lock(&d->lock);
	if (d->neps == WFI_DOM_EPS) {
		pthread_mutex_unlock(&d->lock);
		fi_freeinfo(ep->info);
		free(ep->peers);
		free(ep);
		return -FI_ENOSPC;	/* domain_attr ep_cnt */
	}
	d->eps[d->neps++] = ep;
	d->refs++;
	pthread_mutex_unlock(&d->lock);
	*fep = &ep->ep_fid;
	return 0;
}
