// SPDX-License-Identifier: MIT
/* The fabric object: opens domains and event queues; wait sets are not
 * offered (progress is manual, docs/libfabric.md). */
#include <stdlib.h>
#include <string.h>

#include "wfi.h"

static int fabric_close(struct fid *fid)
{
	free(container_of(fid, struct wfi_fabric, fabric_fid.fid));
	return 0;
}

static int no_pep(struct fid_fabric *f, struct fi_info *info, struct fid_pep **pep, void *ctx)
{
	(void)f;
	(void)info;
	(void)pep;
	(void)ctx;
	return -FI_ENOSYS;
}

static int no_wait(struct fid_fabric *f, struct fi_wait_attr *attr, struct fid_wait **w)
{
	(void)f;
	(void)attr;
	(void)w;
	return -FI_ENOSYS;
}

static int trywait(struct fid_fabric *f, struct fid **fids, int count)
{
	(void)f;
	(void)fids;
	(void)count;
	return -FI_EAGAIN;
}

static int domain2(struct fid_fabric *f, struct fi_info *info, struct fid_domain **dom,
		   uint64_t flags, void *ctx)
{
	if (flags)
		return -FI_EINVAL;
	return wfi_domain_open(f, info, dom, ctx);
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = wfi_no_bind,
	.control = wfi_no_control,
	.ops_open = wfi_no_ops_open,
};

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = wfi_domain_open,
	.passive_ep = no_pep,
	.eq_open = wfi_eq_open,
	.wait_open = no_wait,
	.trywait = trywait,
	.domain2 = domain2,
};

int wfi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	struct wfi_fabric *f;

	if (!attr || !fabric)
		return -FI_EINVAL;
	if (attr->name && strcmp(attr->name, WFI_NAME))
		return -FI_ENODATA;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -FI_ENOMEM;
	f->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	f->fabric_fid.fid.context = context;
	f->fabric_fid.fid.ops = &fabric_fi_ops;
	f->fabric_fid.ops = &fabric_ops;
	*fabric = &f->fabric_fid;
	return 0;
}
