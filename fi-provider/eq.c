// SPDX-License-Identifier: MIT
/* Event queues: RDM endpoints report no connection events (connections
 * are the provider's own), so an event queue only ever holds what the
 * application wrote to it, in a bounded ring. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wfi.h"

#define WFI_EQ_MAX 64
#define WFI_EQ_LEN 256

struct wfi_eq {
	struct fid_eq eq_fid;
	pthread_mutex_t lock;
	size_t head, count;
	struct {
		uint32_t event;
		size_t len;
		uint8_t data[WFI_EQ_LEN];
	} ev[WFI_EQ_MAX];
};

static ssize_t eq_read(struct fid_eq *feq, uint32_t *event, void *buf, size_t len,
		       uint64_t flags)
{
	struct wfi_eq *eq = container_of(feq, struct wfi_eq, eq_fid);
	ssize_t ret;

	if (!event || (!buf && len))
		return -FI_EINVAL;
	if (flags & ~(uint64_t)FI_PEEK)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&eq->lock);
	if (!eq->count) {
		ret = -FI_EAGAIN;
	} else if (len < eq->ev[eq->head].len) {
		ret = -FI_ETOOSMALL;
	} else {
		*event = eq->ev[eq->head].event;
		memcpy(buf, eq->ev[eq->head].data, eq->ev[eq->head].len);
		ret = (ssize_t)eq->ev[eq->head].len;
		if (!(flags & FI_PEEK)) {
			eq->head = (eq->head + 1) % WFI_EQ_MAX;
			eq->count--;
		}
	}
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t eq_readerr(struct fid_eq *feq, struct fi_eq_err_entry *buf, uint64_t flags)
{
	(void)feq;
	(void)buf;
	return flags ? -FI_EBADFLAGS : -FI_EAGAIN;
}

static ssize_t eq_write(struct fid_eq *feq, uint32_t event, const void *buf, size_t len,
			uint64_t flags)
{
	struct wfi_eq *eq = container_of(feq, struct wfi_eq, eq_fid);
	size_t i;

	if ((!buf && len) || len > WFI_EQ_LEN)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)FI_PEEK)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&eq->lock);
	if (eq->count == WFI_EQ_MAX) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}
	i = (eq->head + eq->count++) % WFI_EQ_MAX;
	eq->ev[i].event = event;
	eq->ev[i].len = len;
	memcpy(eq->ev[i].data, buf, len);
	pthread_mutex_unlock(&eq->lock);
	return (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *feq, uint32_t *event, void *buf, size_t len,
			int timeout, uint64_t flags)
{
	int spins = timeout < 0 ? -1 : timeout * 100;
	ssize_t ret;

	for (;;) {
		ret = eq_read(feq, event, buf, len, flags);
		if (ret != -FI_EAGAIN || !spins)
			return ret;
		if (spins > 0)
			spins--;
		sched_yield();
	}
}

static const char *eq_strerror(struct fid_eq *feq, int prov_errno, const void *err_data,
			       char *buf, size_t len)
{
	const char *s = fi_strerror(prov_errno);

	(void)feq;
	(void)err_data;
	if (buf && len) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	return s;
}

static int eq_close(struct fid *fid)
{
	struct wfi_eq *eq = container_of(fid, struct wfi_eq, eq_fid.fid);

	pthread_mutex_destroy(&eq->lock);
	free(eq);
	return 0;
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	(void)fid;
	(void)arg;
	return command == FI_GETWAIT ? -FI_ENODATA : -FI_ENOSYS;
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = wfi_no_bind,
	.control = eq_control,
	.ops_open = wfi_no_ops_open,
};

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

int wfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **feq,
		void *context)
{
	struct wfi_eq *eq;

	(void)fabric;
	if (!attr || !feq)
		return -FI_EINVAL;
	if (attr->flags & ~(uint64_t)FI_WRITE)
		return -FI_EBADFLAGS;
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
		return -FI_ENOSYS;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	pthread_mutex_init(&eq->lock, NULL);
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = &eq_fi_ops;
	eq->eq_fid.ops = &eq_ops;
	*feq = &eq->eq_fid;
	return 0;
}
