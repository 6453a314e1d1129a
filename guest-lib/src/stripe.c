/* SPDX-License-Identifier: MIT */
/*
 * libweft: one RDMA write striped over several adapters of a node (seed
 * 1.5.8).  Chunk i of the message goes over path i mod n; each path runs
 * its chunks as reliable operations, one at a time on its rCxt (seed
 * 1.5.6), and the paths run side by side.  docs/libweft.md, "Striping".
 */
#include <errno.h>
#include <string.h>

#include "libweft.h"

#define STRIPE_DEF_CHUNK        (256u << 10)

static uint64_t chunk_of(const struct weft_stripe *st)
{
	return st->chunk ? st->chunk : STRIPE_DEF_CHUNK;
}

/* Post path p's chunk at offset off, if any is left. */
static int path_post(struct weft_stripe *st, struct weft_stripe_path *p, uint64_t off)
{
	uint64_t c = chunk_of(st), len;

	if (off >= st->length)
		return 0;
	len = st->length - off < c ? st->length - off : c;
	memset(&p->rop, 0, sizeof(p->rop));
	p->rop.rdma.node = p->node;
	p->rop.rdma.window = p->window;
	p->rop.rdma.local_rcxt = p->local_rcxt;
	p->rop.rdma.remote_rcxt = p->remote_rcxt;
	p->rop.rdma.remote_rcxt_key = p->remote_rcxt_key;
	p->rop.rdma.notify = st->notify & WEFT_COMP_TARGET;
	p->rop.rdma.local_pvo = p->local_pvo + off;
	p->rop.rdma.remote_pvo = p->remote_pvo + off;
	p->rop.rdma.length = len;
	p->rop.timeout_ns = st->timeout_ns;
	return weft_win_rop_post(p->win, &p->rop);
}

static int stripe_busy(const struct weft_stripe *st)
{
	for (unsigned int i = 0; i < st->nr_paths; i++)
		if (st->path[i].rop.state == WEFT_ROP_POSTED)
			return 1;
	return 0;
}

int weft_stripe_write(struct weft_stripe *st)
{
	uint64_t c = chunk_of(st);

	if (!st->nr_paths || st->nr_paths > WEFT_STRIPE_MAX || !st->length)
		return -EINVAL;
	for (unsigned int i = 0; i < st->nr_paths; i++)
		if (!st->path[i].win)
			return -EINVAL;
	st->state = WEFT_ROP_POSTED;
	st->error = 0;
	st->chunks = 0;
	for (unsigned int i = 0; i < st->nr_paths; i++) {
		struct weft_stripe_path *p = &st->path[i];

		memset(&p->rop, 0, sizeof(p->rop));
		p->bytes = 0;
		int r = path_post(st, p, (uint64_t)i * c);
		if (r) {
			st->state = stripe_busy(st) ? WEFT_ROP_POSTED : WEFT_ROP_FAILED;
			st->error = r;
			return r;
		}
	}
	return 0;
}

int weft_stripe_entry(struct weft_stripe *st, const struct weft_entry *e)
{
	struct weft_stripe_path *p = NULL;

	if (e->type != WEFT_ENT_ROP || st->state != WEFT_ROP_POSTED)
		return -ENOENT;
	for (unsigned int i = 0; i < st->nr_paths && !p; i++)
		if (e->rop == &st->path[i].rop)
			p = &st->path[i];
	if (!p)
		return -ENOENT;
	if (p->rop.state == WEFT_ROP_DONE && !st->error) {
		st->chunks++;
		/* The next chunk of this path is nr_paths chunks further on. */
		uint64_t off = p->rop.rdma.local_pvo - p->local_pvo +
			       (uint64_t)st->nr_paths * chunk_of(st);

		p->bytes += p->rop.rdma.length;
		int r = path_post(st, p, off);
		if (r)
			st->error = r;
	} else if (!st->error) {
		st->error = p->rop.error ? p->rop.error : -EIO;
	}
	/* A failed message finishes once no chunk is in flight any more. */
	if (stripe_busy(st))
		return 0;
	st->state = st->error ? WEFT_ROP_FAILED : WEFT_ROP_DONE;
	return 1;
}

int weft_stripe_wait(struct weft_stripe *st, int timeout_ms)
{
	struct weft_win *w0 = st->path[0].win;
	uint64_t t0 = weft_dev_now_ns(weft_win_dev(w0));
	struct weft_entry e;

	while (st->state == WEFT_ROP_POSTED) {
		int got = 0;

		for (unsigned int i = 0; i < st->nr_paths; i++) {
			int r;

			while ((r = weft_win_poll(st->path[i].win, &e)) == 1) {
				got = 1;
				if (weft_stripe_entry(st, &e) == 1)
					return 1;
			}
			if (r < 0)
				return r;
		}
		if (got)
			continue;
		if (timeout_ms >= 0 &&
		    weft_dev_now_ns(weft_win_dev(w0)) - t0 >= (uint64_t)timeout_ms * 1000000u)
			return 0;
		/* Wait on the path whose chunk is in flight, briefly, so the
		 * other paths are polled again soon. */
		for (unsigned int i = 0; i < st->nr_paths; i++) {
			if (st->path[i].rop.state != WEFT_ROP_POSTED)
				continue;
			int r = weft_win_wait(st->path[i].win, 1);
			if (r < 0)
				return r;
			break;
		}
	}
	return 1;
}
