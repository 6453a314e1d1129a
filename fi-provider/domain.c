// SPDX-License-Identifier: MIT
/* The domain: weft_ib0's verbs context (librdmacm's, so that the
 * connections' QPs share it) and one protection domain. */
#include <stdlib.h>
#include <string.h>

#include "wfi.h"

static int domain_close(struct fid *fid)
{
	struct wfi_domain *d = container_of(fid, struct wfi_domain, domain_fid.fid);

	if (d->refs)
		return -FI_EBUSY;
	wfi_mrc_fini(d);
	ibv_dealloc_pd(d->pd);
	free(d->keyed);
	pthread_mutex_destroy(&d->lock);
	free(d);
	return 0;
}

static int no_sep(struct fid_domain *d, struct fi_info *info, struct fid_ep **sep, void *ctx)
{
	(void)d;
	(void)info;
	(void)sep;
	(void)ctx;
	return -FI_ENOSYS;
}

static int no_poll(struct fid_domain *d, struct fi_poll_attr *attr, struct fid_poll **p)
{
	(void)d;
	(void)attr;
	(void)p;
	return -FI_ENOSYS;
}

static int no_stx(struct fid_domain *d, struct fi_tx_attr *attr, struct fid_stx **stx, void *ctx)
{
	(void)d;
	(void)attr;
	(void)stx;
	(void)ctx;
	return -FI_ENOSYS;
}

static int no_srx(struct fid_domain *d, struct fi_rx_attr *attr, struct fid_ep **rx, void *ctx)
{
	(void)d;
	(void)attr;
	(void)rx;
	(void)ctx;
	return -FI_ENOSYS;
}

static int no_coll(struct fid_domain *d, enum fi_collective_op coll,
		   struct fi_collective_attr *attr, uint64_t flags)
{
	(void)d;
	(void)coll;
	(void)attr;
	(void)flags;
	return -FI_ENOSYS;
}

static int endpoint2(struct fid_domain *d, struct fi_info *info, struct fid_ep **ep,
		     uint64_t flags, void *ctx)
{
	if (flags)
		return -FI_EINVAL;
	return wfi_ep_open(d, info, ep, ctx);
}

/* FI_QUEUE_WORK (trigger.c); FI_FLUSH_WORK is not offered. */
static int domain_control(struct fid *fid, int command, void *arg)
{
	struct wfi_domain *d;
	int ret;

	if (!fid)
		return -FI_EINVAL;
	if (command != FI_QUEUE_WORK)
		return -FI_ENOSYS;
	d = container_of(fid, struct wfi_domain, domain_fid.fid);
	pthread_mutex_lock(&d->lock);
	ret = wfi_queue_work(d, arg);
	pthread_mutex_unlock(&d->lock);
	return ret;
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = wfi_no_bind,
	.control = domain_control,
	.ops_open = wfi_domain_ops_open,
};

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = wfi_av_open,
	.cq_open = wfi_cq_open,
	.endpoint = wfi_ep_open,
	.scalable_ep = no_sep,
	.cntr_open = wfi_cntr_open,
	.poll_open = no_poll,
	.stx_ctx = no_stx,
	.srx_ctx = no_srx,
	.query_atomic = wfi_query_atomic,
	.query_collective = no_coll,
	.endpoint2 = endpoint2,
};

static struct fi_ops_mr mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = wfi_mr_reg,
	.regv = wfi_mr_regv,
	.regattr = wfi_mr_regattr,
};

/* weft_ib0 among librdmacm's verbs contexts. */
static struct ibv_context *find_ctx(void)
{
	struct ibv_context **list, *ctx = NULL;
	int n, i;

	list = rdma_get_devices(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n; i++)
		if (!strncmp(ibv_get_device_name(list[i]->device), "weft_ib", 7)) {
			ctx = list[i];
			break;
		}
	rdma_free_devices(list);
	return ctx;
}

int wfi_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
		    void *context)
{
	struct ibv_device_attr_ex dx;
	struct wfi_domain *d;

	if (!fabric || !info || !dom)
		return -FI_EINVAL;
	if (info->domain_attr && info->domain_attr->name &&
	    strcmp(info->domain_attr->name, "weft_ib0"))
		return -FI_EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -FI_ENOMEM;
	d->ctx = find_ctx();
	if (!d->ctx) {
		free(d);
		return -FI_ENODEV;
	}
	if (ibv_query_device_ex(d->ctx, NULL, &dx) || !(dx.tm_caps.flags & IBV_TM_CAP_RC) ||
	    dx.tm_caps.max_sge < 1) {
		free(d);
		return -FI_EOPNOTSUPP;
	}
	d->max_tags = dx.tm_caps.max_num_tags;
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd) {
		free(d);
		return -FI_ENOMEM;
	}
	pthread_mutex_init(&d->lock, NULL);
	wfi_mrc_init(d);
	d->fabric = container_of(fabric, struct wfi_fabric, fabric_fid);
	d->mr_mode = info->domain_attr ? (uint64_t)info->domain_attr->mr_mode : 0;
	d->keyed_mode = (info->caps & (FI_RMA | FI_ATOMIC)) && !(d->mr_mode & FI_MR_PROV_KEY);
	d->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	d->domain_fid.fid.context = context;
	d->domain_fid.fid.ops = &domain_fi_ops;
	d->domain_fid.ops = &domain_ops;
	d->domain_fid.mr = &mr_ops;
	*dom = &d->domain_fid;
	return 0;
}
