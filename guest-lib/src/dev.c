/* SPDX-License-Identifier: MIT */
/* libweft: adapters, counters, memory registration. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"
#include "weft/counters.h"
#include "weft/names.h"
#include "weft/xlate.h"

struct weft_dev *weft_dev_from_be(struct weft_be *be, char *err, size_t errlen)
{
	struct weft_dev *d = calloc(1, sizeof(*d));
	if (!d) {
		be->ops->close(be);
		if (err)
			snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	d->be = be;
	int r = be->ops->query(be, &d->q);
	if (r) {
		if (err)
			snprintf(err, errlen, "adapter query failed: %s", strerror(-r));
		be->ops->close(be);
		free(d);
		errno = -r;
		return NULL;
	}
	if (d->q.max_payload == 0 || d->q.max_payload > WEFT_MAX_PAYLOAD)
		d->q.max_payload = WEFT_MAX_PAYLOAD;
	snprintf(d->name, sizeof(d->name), "%s", be->ops->dev_name(be));
	return d;
}

struct weft_dev *weft_dev_open(const char *name, char *err, size_t errlen)
{
	char path[64];
	char dummy[8];
	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	if (!name || !*name)
		name = "/dev/weft0";
	if (strncmp(name, "kernel:", 7) == 0)
		name += 7;
	if (strncmp(name, "sim:", 4) == 0 || strcmp(name, "sim") == 0) {
		snprintf(err, errlen, "%s: simulated adapters are opened with weft_sim_open()", name);
		errno = EINVAL;
		return NULL;
	}
	if (name[0] == '/')
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "/dev/%s", name);
	struct weft_be *be = weft_be_kernel_open(path, err, errlen);
	if (!be)
		return NULL;
	return weft_dev_from_be(be, err, errlen);
}

void weft_dev_close(struct weft_dev *dev)
{
	if (!dev)
		return;
	while (dev->wins)
		weft_win_close(dev->wins);
	dev->be->ops->close(dev->be);
	free(dev);
}

int weft_dev_query(struct weft_dev *dev, struct weft_dev_info *info)
{
	int r = dev->be->ops->query(dev->be, &dev->q);
	if (r)
		return r;
	memset(info, 0, sizeof(*info));
	info->backend = dev->be->ops->name;
	snprintf(info->name, sizeof(info->name), "%s", dev->name);
	info->node_id = dev->q.node_id;
	info->nr_windows = dev->q.nr_windows;
	info->nr_rcxt = dev->q.nr_rcxt;
	info->recovery_count = dev->q.recovery_count;
	info->nr_handlers = dev->q.nr_handlers;
	info->max_payload = dev->q.max_payload;
	info->hw_id = dev->q.hw_id;
	return 0;
}

int weft_dev_job_attach(struct weft_dev *dev, uint32_t job_id)
{
	if (job_id == 0)
		return -EINVAL;
	for (unsigned int i = 0; i < dev->nr_jobs; i++)
		if (dev->jobs[i] == job_id)
			return 0;
	int r = dev->be->ops->job_attach(dev->be, job_id);
	if (r)
		return r;
	if (dev->nr_jobs < sizeof(dev->jobs) / sizeof(dev->jobs[0]))
		dev->jobs[dev->nr_jobs++] = job_id;
	return 0;
}

int weft_dev_counter(struct weft_dev *dev, unsigned int c, uint64_t *val)
{
	if (c >= WEFT_CNT__COUNT)
		return -EINVAL;
	if (!dev->be->ops->reg_read)
		return -ENOTSUP;
	return dev->be->ops->reg_read(dev->be, WEFT_REG_CNT(c), val);
}

int weft_dev_active_windows(struct weft_dev *dev, uint64_t bits[2])
{
	if (!dev->be->ops->reg_read)
		return -ENOTSUP;
	int r = dev->be->ops->reg_read(dev->be, WEFT_REG_ACTIVE_WIN0, &bits[0]);
	if (!r)
		r = dev->be->ops->reg_read(dev->be, WEFT_REG_ACTIVE_WIN1, &bits[1]);
	return r;
}

uint64_t weft_dev_now_ns(struct weft_dev *dev)
{
	return dev->be->ops->now_ns(dev->be);
}

unsigned int weft_nr_counters(void)
{
	return WEFT_CNT__COUNT;
}

const char *weft_counter_label(unsigned int c)
{
	static const char *const drop_names[] = {
#define WEFT_DROP_LABEL(name, text) "DROP_" #name,
		WEFT_REASON_LIST(WEFT_DROP_LABEL)
#undef WEFT_DROP_LABEL
	};
	if (c < WEFT_CNT_DROP_BASE)
		return weft_counter_name(c);
	if (c >= WEFT_CNT__COUNT)
		return "UNKNOWN";
	return drop_names[c - WEFT_CNT_DROP_BASE];
}

const char *weft_status_name(unsigned int status)
{
	return weft_reason_name(status);
}

const char *weft_status_text(unsigned int status)
{
	return weft_reason_text(status);
}

int weft_mr_reg_pages(struct weft_dev *dev, uint32_t job_id, const void *addr, size_t len,
		      unsigned int page_shift, uint64_t *pvo, uint32_t *handle)
{
	if (!addr || !len || (page_shift && page_shift != WEFT_PAGE_SHIFT_4K &&
			      page_shift != WEFT_PAGE_SHIFT_64K &&
			      page_shift != WEFT_PAGE_SHIFT_16M))
		return -EINVAL;
	int r = weft_dev_job_attach(dev, job_id);
	if (r)
		return r;
	return dev->be->ops->reg_mr(dev->be, job_id, (uint64_t)(uintptr_t)addr, len, page_shift,
				    pvo, handle);
}

int weft_mr_reg(struct weft_dev *dev, uint32_t job_id, const void *addr, size_t len,
		uint64_t *pvo, uint32_t *handle)
{
	return weft_mr_reg_pages(dev, job_id, addr, len, 0, pvo, handle);
}

int weft_mr_dereg(struct weft_dev *dev, uint32_t handle)
{
	return dev->be->ops->dereg_mr(dev->be, handle);
}

void *weft_dev_alloc(struct weft_dev *dev, size_t len)
{
	return dev->be->ops->alloc(dev->be, len);
}

void weft_dev_free(struct weft_dev *dev, void *p, size_t len)
{
	if (p)
		dev->be->ops->free(dev->be, p, len);
}
