/* SPDX-License-Identifier: MIT */
/*
 * libweft: counter-bearing RDMA objects (docs/counters.md) over the
 * backend's WEFT_IOC_CNT_* calls; the counter is read from the status
 * block the backend mapped read-only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "priv.h"
#include "weft/cnt.h"
#include "weft/names.h"

struct weft_cnt {
	struct weft_dev *dev;
	uint32_t id, gen;
	unsigned int flags;
	const volatile struct weft_cnt_block *blk;
};

WEFT_STATIC_ASSERT(WEFT_CNT_CHUNK_BYTES == WEFT_CNT_CHUNK, "chunk size");
WEFT_STATIC_ASSERT(WEFT_CNT_SLOTS == WEFT_CNT_MAX_OPS, "slots");

int weft_cnt_create(struct weft_dev *dev, void *buf, size_t len, unsigned int flags,
		    unsigned int ops, struct weft_cnt **out)
{
	struct weft_ioc_cnt_create req;
	const volatile void *blk = NULL;
	struct weft_cnt *c;
	int r;

	if (!dev || !buf || !out || (flags & ~(WEFT_CNT_F_IRQ | WEFT_CNT_F_OPS)))
		return -EINVAL;
	if (!dev->be->ops->cnt_create)
		return -EOPNOTSUPP;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	memset(&req, 0, sizeof(req));
	req.addr = (uint64_t)(uintptr_t)buf;
	req.length = len;
	req.mode = (flags & WEFT_CNT_F_OPS) ? WEFT_CNT_MODE_OPS : WEFT_CNT_MODE_BYTES;
	req.ops = ops;
	req.flags = (flags & WEFT_CNT_F_IRQ) ? WEFT_CNTF_IRQ : 0;
	r = dev->be->ops->cnt_create(dev->be, &req, &blk);
	if (r) {
		free(c);
		return r;
	}
	c->dev = dev;
	c->id = req.id;
	c->gen = req.gen;
	c->flags = flags;
	c->blk = blk;
	*out = c;
	return 0;
}

static int post(struct weft_cnt *c, uint32_t dir, unsigned int slot, uint16_t node,
		uint64_t offset, uint64_t len, uint64_t remote_va)
{
	struct weft_ioc_cnt_post req;

	if (!c)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	req.id = c->id;
	req.slot = slot;
	req.dir = dir;
	req.node = node;
	req.offset = offset;
	req.length = len;
	req.remote_va = remote_va;
	return c->dev->be->ops->cnt_post(c->dev->be, &req);
}

int weft_cnt_read(struct weft_cnt *c, unsigned int slot, uint16_t node, uint64_t offset,
		  uint64_t len, uint64_t remote_va)
{
	return post(c, WEFT_CNT_READ, slot, node, offset, len, remote_va);
}

int weft_cnt_write(struct weft_cnt *c, unsigned int slot, uint16_t node, uint64_t offset,
		   uint64_t len, uint64_t remote_va)
{
	return post(c, WEFT_CNT_WRITE, slot, node, offset, len, remote_va);
}

uint64_t weft_cnt_value(const struct weft_cnt *c)
{
	return c->blk->count;
}

unsigned int weft_cnt_failures(const struct weft_cnt *c, unsigned int *reason)
{
	if (reason)
		*reason = c->blk->error;
	return c->blk->failed;
}

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int weft_cnt_wait(struct weft_cnt *c, unsigned int failed, int timeout_ms)
{
	struct weft_ioc_cnt_wait req;
	uint64_t end;
	int r;

	if (!c || timeout_ms < 0)
		return -EINVAL;
	if (!(c->flags & WEFT_CNT_F_IRQ) && !c->dev->be->ops->progress) {
		/* Poll mode: the status block, no system call. */
		end = mono_ns() + (uint64_t)timeout_ms * 1000000ull;
		for (;;) {
			if (c->blk->count == 0)
				return 0;
			if (c->blk->failed != failed)
				return -EIO;
			if (mono_ns() >= end)
				return -ETIMEDOUT;
		}
	}
	memset(&req, 0, sizeof(req));
	req.id = c->id;
	req.timeout_ms = (uint32_t)timeout_ms;
	req.failed = failed;
	r = c->dev->be->ops->cnt_wait(c->dev->be, &req);
	if (r)
		return r;
	if (req.count == 0)
		return 0;
	return req.failed != failed ? -EIO : -ETIMEDOUT;
}

int weft_cnt_destroy(struct weft_cnt *c)
{
	int r;

	if (!c)
		return -EINVAL;
	r = c->dev->be->ops->cnt_destroy(c->dev->be, c->id, c->blk);
	free(c);
	return r;
}

int weft_cnt_expose(struct weft_dev *dev, void *buf, size_t len, unsigned int rights,
		    int node, uint32_t *index)
{
	struct weft_ioc_cnt_expose req;
	int r;

	if (!dev || !buf || !index || node < WEFT_CNT_ANY_NODE || node > (int)WEFT_NODE_MAX_UNICAST)
		return -EINVAL;
	if (!dev->be->ops->cnt_expose)
		return -EOPNOTSUPP;
	memset(&req, 0, sizeof(req));
	req.addr = (uint64_t)(uintptr_t)buf;
	req.length = len;
	req.rights = rights;
	req.peer = node == WEFT_CNT_ANY_NODE ? WEFT_CNT_ANY_PEER : (uint32_t)node;
	r = dev->be->ops->cnt_expose(dev->be, &req);
	if (!r)
		*index = req.index;
	return r;
}

int weft_cnt_unexpose(struct weft_dev *dev, uint32_t index)
{
	if (!dev || !dev->be->ops->cnt_unexpose)
		return -EINVAL;
	return dev->be->ops->cnt_unexpose(dev->be, index);
}

const char *weft_cnt_reason_name(unsigned int reason)
{
	return weft_reason_name(reason);
}
