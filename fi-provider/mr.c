// SPDX-License-Identifier: MIT
/* Memory registration: fi_mr_reg over ibv_reg_mr (one iovec).  The
 * provider itself needs no descriptors (mr_mode 0): eager data goes
 * through its registered bounce buffers and rendezvous buffers are
 * registered for the transfer (docs/libfabric.md "Memory"). */
#include <stdlib.h>

#include "wfi.h"

static int mr_close(struct fid *fid)
{
	struct wfi_mr *m = container_of(fid, struct wfi_mr, mr_fid.fid);
	int ret;

	if (m->dom->keyed_mode) {	/* no key answer may read m->mr from now on */
		pthread_mutex_lock(&m->dom->lock);
		wfi_key_del(m->dom, m);
		pthread_mutex_unlock(&m->dom->lock);
	}
	ret = ibv_dereg_mr(m->mr);
	if (ret)
		return -ret;
	m->dom->refs--;
	free(m);
	return 0;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = wfi_no_bind,
	.control = wfi_no_control,
	.ops_open = wfi_no_ops_open,
};

#define WFI_MR_ACCESS (FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

int wfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		   struct fid_mr **mr)
{
	struct wfi_domain *d;
	struct wfi_mr *m;
	int access = IBV_ACCESS_LOCAL_WRITE;

	if (!fid || fid->fclass != FI_CLASS_DOMAIN || !attr || !mr)
		return -FI_EINVAL;
	d = container_of(fid, struct wfi_domain, domain_fid.fid);
	if (flags)
		return -FI_EBADFLAGS;
	if (attr->iov_count != 1 || !attr->mr_iov || (attr->access & ~(uint64_t)WFI_MR_ACCESS))
		return -FI_EINVAL;
	if (attr->offset || attr->auth_key_size)
		return -FI_EINVAL;
	if (attr->access & FI_REMOTE_READ)
		access |= IBV_ACCESS_REMOTE_READ;
	if (attr->access & FI_REMOTE_WRITE)
		access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;	/* FI_ATOMIC targets */
	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->mr = ibv_reg_mr(d->pd, attr->mr_iov[0].iov_base, attr->mr_iov[0].iov_len ?
			   attr->mr_iov[0].iov_len : 1, access);
	if (!m->mr) {
		free(m);
		return -FI_ENOMEM;
	}
	m->dom = d;
	if (d->keyed_mode) {		/* the application's key (key.c) */
		int ret;

		pthread_mutex_lock(&d->lock);
		ret = wfi_key_add(d, m, attr->requested_key);
		pthread_mutex_unlock(&d->lock);
		if (ret) {
			ibv_dereg_mr(m->mr);
			free(m);
			return ret;
		}
	}
	m->mr_fid.fid.fclass = FI_CLASS_MR;
	m->mr_fid.fid.context = attr->context;
	m->mr_fid.fid.ops = &mr_fi_ops;
	m->mr_fid.mem_desc = m;
	m->mr_fid.key = d->keyed_mode ? attr->requested_key : m->mr->rkey;
	d->refs++;
	*mr = &m->mr_fid;
	return 0;
}

int wfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov, .iov_count = count, .access = access, .offset = offset,
		.requested_key = requested_key, .context = context,
	};

	return wfi_mr_regattr(fid, &attr, flags, mr);
}

int wfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
	       uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return wfi_mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}
