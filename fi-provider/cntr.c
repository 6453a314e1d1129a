// SPDX-License-Identifier: MIT
/*
 * Counters (fi_cntr, docs/libfabric.md "Counters"): a completion count and
 * an error count in software, moved by the progress of the endpoints
 * bound to the counter.  Seed 003's counter objects (docs/counters.md) do
 * not fit: they count only their own engine's transfers, down from a
 * total announced in advance, for one pinned region; fi_cntr counts up,
 * without a total, the completions of SENDs, RECVs and RDMA of the verbs
 * QPs this provider uses.
 */
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "wfi.h"

#define WFI_CNTR_MAX_EPS 8

struct wfi_cntr {
	struct fid_cntr cntr_fid;
	struct wfi_domain *dom;
	uint64_t value, err;
	struct wfi_ep *eps[WFI_CNTR_MAX_EPS];
	int neps, refs;
};

static struct wfi_cntr *to_cntr(struct fid_cntr *c)
{
	return container_of(c, struct wfi_cntr, cntr_fid);
}

uint64_t wfi_cntr_value(struct fid_cntr *c)
{
	return to_cntr(c)->value;
}

void wfi_cntr_inc(struct fid_cntr *c, bool err)
{
	if (!c)
		return;
	if (err)
		to_cntr(c)->err++;
	else
		to_cntr(c)->value++;
}

int wfi_cntr_bind_ep(struct fid_cntr *c, struct wfi_ep *ep)
{
	struct wfi_cntr *k = to_cntr(c);
	int i;

	for (i = 0; i < k->neps; i++)
		if (k->eps[i] == ep) {
			k->refs++;
			return 0;
		}
	if (k->neps == WFI_CNTR_MAX_EPS)
		return -FI_ENOSPC;
	k->eps[k->neps++] = ep;
	k->refs++;
	return 0;
}

void wfi_cntr_unbind_ep(struct fid_cntr *c, struct wfi_ep *ep)
{
	struct wfi_cntr *k = to_cntr(c);
	int i, j;

	k->refs--;
	for (i = j = 0; i < k->neps; i++)
		if (k->eps[i] != ep)
			k->eps[j++] = k->eps[i];
	k->neps = j;
}

/* FI_OP_CNTR_SET and FI_OP_CNTR_ADD of deferred work. */
void wfi_cntr_move(struct fid_cntr *c, bool set, uint64_t value)
{
	struct wfi_cntr *k = to_cntr(c);

	k->value = set ? value : k->value + value;
}

/* The bound endpoints; a counter bound to none (a deferred work's
 * completion or target counter) is moved by any endpoint of its domain. */
static void progress(struct wfi_cntr *k)
{
	int i;

	if (!k->neps) {
		for (i = 0; i < k->dom->neps; i++)
			wfi_progress(k->dom->eps[i]);
		return;
	}
	for (i = 0; i < k->neps; i++)
		wfi_progress(k->eps[i]);
}

static uint64_t c_read(struct fid_cntr *c)
{
	struct wfi_cntr *k = to_cntr(c);
	uint64_t v;

	pthread_mutex_lock(&k->dom->lock);
	progress(k);
	v = k->value;
	pthread_mutex_unlock(&k->dom->lock);
	return v;
}

static uint64_t c_readerr(struct fid_cntr *c)
{
	struct wfi_cntr *k = to_cntr(c);
	uint64_t v;

	pthread_mutex_lock(&k->dom->lock);
	progress(k);
	v = k->err;
	pthread_mutex_unlock(&k->dom->lock);
	return v;
}

static int c_add(struct fid_cntr *c, uint64_t value)
{
	struct wfi_cntr *k = to_cntr(c);

	pthread_mutex_lock(&k->dom->lock);
	k->value += value;
	pthread_mutex_unlock(&k->dom->lock);
	return 0;
}

static int c_set(struct fid_cntr *c, uint64_t value)
{
	struct wfi_cntr *k = to_cntr(c);

	pthread_mutex_lock(&k->dom->lock);
	k->value = value;
	pthread_mutex_unlock(&k->dom->lock);
	return 0;
}

static int c_adderr(struct fid_cntr *c, uint64_t value)
{
	struct wfi_cntr *k = to_cntr(c);

	pthread_mutex_lock(&k->dom->lock);
	k->err += value;
	pthread_mutex_unlock(&k->dom->lock);
	return 0;
}

static int c_seterr(struct fid_cntr *c, uint64_t value)
{
	struct wfi_cntr *k = to_cntr(c);

	pthread_mutex_lock(&k->dom->lock);
	k->err = value;
	pthread_mutex_unlock(&k->dom->lock);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Until value >= threshold (0), a change of the error count (-FI_EAVAIL)
 * or the timeout in ms, -1 for none (-FI_ETIMEDOUT). */
static int c_wait(struct fid_cntr *c, uint64_t threshold, int timeout)
{
	struct wfi_cntr *k = to_cntr(c);
	uint64_t end = timeout < 0 ? UINT64_MAX : now_ms() + (uint64_t)timeout;
	uint64_t err0;
	int ret;

	pthread_mutex_lock(&k->dom->lock);
	err0 = k->err;
	pthread_mutex_unlock(&k->dom->lock);
	for (;;) {
		pthread_mutex_lock(&k->dom->lock);
		progress(k);
		ret = k->value >= threshold ? 0 : k->err != err0 ? -FI_EAVAIL : -FI_EAGAIN;
		pthread_mutex_unlock(&k->dom->lock);
		if (ret != -FI_EAGAIN)
			return ret;
		if (now_ms() >= end)
			return -FI_ETIMEDOUT;
		sched_yield();
	}
}

static int c_close(struct fid *fid)
{
	struct wfi_cntr *k = container_of(fid, struct wfi_cntr, cntr_fid.fid);

	if (k->refs)
		return -FI_EBUSY;
	k->dom->refs--;
	free(k);
	return 0;
}

static int c_control(struct fid *fid, int command, void *arg)
{
	(void)fid;
	(void)arg;
	return command == FI_GETWAIT ? -FI_ENODATA : -FI_ENOSYS;
}

static struct fi_ops cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = c_close,
	.bind = wfi_no_bind,
	.control = c_control,
	.ops_open = wfi_no_ops_open,
};

static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = c_read,
	.readerr = c_readerr,
	.add = c_add,
	.set = c_set,
	.wait = c_wait,
	.adderr = c_adderr,
	.seterr = c_seterr,
};

int wfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
		  void *context)
{
	struct wfi_domain *d = container_of(domain, struct wfi_domain, domain_fid);
	struct wfi_cntr *k;

	if (!attr || !cntr)
		return -FI_EINVAL;
	if (attr->events != FI_CNTR_EVENTS_COMP)
		return -FI_ENOSYS;
	if (attr->flags)
		return -FI_EBADFLAGS;
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC &&
	    attr->wait_obj != FI_WAIT_YIELD)
		return -FI_ENOSYS;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -FI_ENOMEM;
	k->dom = d;
	k->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	k->cntr_fid.fid.context = context;
	k->cntr_fid.fid.ops = &cntr_fi_ops;
	k->cntr_fid.ops = &cntr_ops;
	d->refs++;
	*cntr = &k->cntr_fid;
	return 0;
}
