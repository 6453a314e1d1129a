// SPDX-License-Identifier: MIT
/* Completion queues: a bounded ring of completions and one of errors,
 * filled by the progress of the endpoints bound to the queue (manual
 * progress: fi_cq_read and fi_cq_sread drive it). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wfi.h"

static size_t entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT: return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG: return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA: return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED: return sizeof(struct fi_cq_tagged_entry);
	default: return 0;
	}
}

bool wfi_cq_room(struct wfi_cq *cq)
{
	return !cq || (cq->count + 2 <= cq->size && cq->ecount + 2 <= cq->size);
}

void wfi_cq_put(struct wfi_cq *cq, void *ctx, uint64_t flags, size_t len, void *buf,
		uint64_t data, uint64_t tag, fi_addr_t src)
{
	struct wfi_cq_ent *e;

	if (!cq || cq->count == cq->size)
		return;
	e = &cq->ring[(cq->head + cq->count) % cq->size];
	e->e = (struct fi_cq_tagged_entry){ .op_context = ctx, .flags = flags, .len = len,
					    .buf = buf, .data = data, .tag = tag };
	e->src = src;
	cq->count++;
}

void wfi_cq_err(struct wfi_cq *cq, void *ctx, uint64_t flags, int err, size_t len, uint64_t tag,
		size_t olen)
{
	struct fi_cq_err_entry *e;

	if (!cq || cq->ecount == cq->size)
		return;
	e = &cq->err[(cq->ehead + cq->ecount) % cq->size];
	memset(e, 0, sizeof(*e));
	e->op_context = ctx;
	e->flags = flags;
	e->len = len;
	e->tag = tag;
	e->olen = olen;
	e->err = err;
	e->prov_errno = err;
	cq->ecount++;
}

static void progress(struct wfi_cq *cq)
{
	int i;

	for (i = 0; i < cq->neps; i++)
		wfi_progress(cq->eps[i]);
}

static ssize_t take(struct wfi_cq *cq, void *buf, size_t count, fi_addr_t *src)
{
	size_t n = 0, sz = entry_size(cq->format);

	if (cq->ecount)
		return -FI_EAVAIL;
	while (n < count && cq->count) {
		struct wfi_cq_ent *e = &cq->ring[cq->head];

		memcpy((uint8_t *)buf + n * sz, &e->e, sz);
		if (src)
			src[n] = e->src;
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
		n++;
	}
	return n ? (ssize_t)n : -FI_EAGAIN;
}

static ssize_t cq_readfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src)
{
	struct wfi_cq *cq = container_of(fcq, struct wfi_cq, cq_fid);
	ssize_t ret;

	if (!buf && count)
		return -FI_EINVAL;
	pthread_mutex_lock(&cq->dom->lock);
	progress(cq);
	ret = take(cq, buf, count, src);
	pthread_mutex_unlock(&cq->dom->lock);
	return ret;
}

static ssize_t cq_read(struct fid_cq *fcq, void *buf, size_t count)
{
	return cq_readfrom(fcq, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct wfi_cq *cq = container_of(fcq, struct wfi_cq, cq_fid);
	void *err_data;

	if (!buf)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&cq->dom->lock);
	if (!cq->ecount) {
		pthread_mutex_unlock(&cq->dom->lock);
		return -FI_EAGAIN;
	}
	err_data = buf->err_data;
	*buf = cq->err[cq->ehead];
	buf->err_data = err_data;
	buf->err_data_size = 0;
	cq->ehead = (cq->ehead + 1) % cq->size;
	cq->ecount--;
	pthread_mutex_unlock(&cq->dom->lock);
	return 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static ssize_t cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src,
			    const void *cond, int timeout)
{
	struct wfi_cq *cq = container_of(fcq, struct wfi_cq, cq_fid);
	uint64_t end = timeout < 0 ? UINT64_MAX : now_ms() + (uint64_t)timeout;
	ssize_t ret;

	(void)cond;
	for (;;) {
		ret = cq_readfrom(fcq, buf, count, src);
		if (ret != -FI_EAGAIN)
			return ret;
		if (__atomic_exchange_n(&cq->signaled, 0, __ATOMIC_ACQ_REL))
			return -FI_EAGAIN;
		if (now_ms() >= end)
			return -FI_EAGAIN;
		sched_yield();
	}
}

static ssize_t cq_sread(struct fid_cq *fcq, void *buf, size_t count, const void *cond,
			int timeout)
{
	return cq_sreadfrom(fcq, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *fcq)
{
	struct wfi_cq *cq = container_of(fcq, struct wfi_cq, cq_fid);

	__atomic_store_n(&cq->signaled, 1, __ATOMIC_RELEASE);
	return 0;
}

static const char *cq_strerror(struct fid_cq *fcq, int prov_errno, const void *err_data,
			       char *buf, size_t len)
{
	const char *s = fi_strerror(prov_errno);

	(void)fcq;
	(void)err_data;
	if (buf && len) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	return s;
}

static int cq_close(struct fid *fid)
{
	struct wfi_cq *cq = container_of(fid, struct wfi_cq, cq_fid.fid);

	if (cq->refs)
		return -FI_EBUSY;
	cq->dom->refs--;
	free(cq->ring);
	free(cq->err);
	free(cq);
	return 0;
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	(void)fid;
	(void)arg;
	return command == FI_GETWAIT ? -FI_ENODATA : -FI_ENOSYS;
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = wfi_no_bind,
	.control = cq_control,
	.ops_open = wfi_no_ops_open,
};

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

int wfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **fcq,
		void *context)
{
	struct wfi_domain *d = container_of(domain, struct wfi_domain, domain_fid);
	enum fi_cq_format format;
	struct wfi_cq *cq;
	size_t size;

	if (!attr || !fcq)
		return -FI_EINVAL;
	if (attr->flags & ~(uint64_t)FI_AFFINITY)
		return -FI_EBADFLAGS;
	format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
	if (!entry_size(format))
		return -FI_ENOSYS;
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
		return -FI_ENOSYS;
	if (attr->wait_cond != FI_CQ_COND_NONE)
		return -FI_ENOSYS;
	size = attr->size ? attr->size : WFI_CQ_SIZE;
	if (size > 65536)
		return -FI_EINVAL;
	if (size < 16)
		size = 16;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->ring = calloc(size, sizeof(*cq->ring));
	cq->err = calloc(size, sizeof(*cq->err));
	if (!cq->ring || !cq->err) {
		free(cq->ring);
		free(cq->err);
		free(cq);
		return -FI_ENOMEM;
	}
	cq->size = size;
	cq->format = format;
	cq->dom = d;
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &cq_fi_ops;
	cq->cq_fid.ops = &cq_ops;
	d->refs++;
	*fcq = &cq->cq_fid;
	return 0;
}
