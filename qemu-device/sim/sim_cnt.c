/* SPDX-License-Identifier: MIT */
/*
 * Weft sim: counter-engine driver (weft_sim_cnt.h): command blocks, page
 * lists and status blocks in node memory, CNT_CMD through BAR 0.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "weft_sim_cnt.h"

int wsc_buf_new(struct weft_sim *s, unsigned int node, uint64_t len, uint32_t first_off,
		bool scatter, struct wsc_buf *b)
{
	uint32_t i;
	void *list;

	memset(b, 0, sizeof(*b));
	if (len == 0 || first_off >= WEFT_CNT_PAGE)
		return -EINVAL;
	b->node = node;
	b->len = len;
	b->first_off = first_off;
	b->npages = (uint32_t)((first_off + len + WEFT_CNT_PAGE - 1) / WEFT_CNT_PAGE);
	b->pages = calloc(b->npages, sizeof(uint64_t));
	b->base = weft_sim_alloc(s, node, (uint64_t)b->npages * WEFT_CNT_PAGE, WEFT_CNT_PAGE);
	b->list = weft_sim_alloc(s, node, (uint64_t)b->npages * 8, 8);
	if (!b->pages || !b->base || !b->list) {
		wsc_buf_free(s, b);
		return -ENOMEM;
	}
	for (i = 0; i < b->npages; i++)
		b->pages[i] = b->base + (uint64_t)(scatter ? b->npages - 1 - i : i) * WEFT_CNT_PAGE;
	list = weft_sim_ptr(s, node, b->list, (uint64_t)b->npages * 8);
	memcpy(list, b->pages, (size_t)b->npages * 8);
	return 0;
}

void wsc_buf_free(struct weft_sim *s, struct wsc_buf *b)
{
	if (b->base)
		weft_sim_free_mem(s, b->node, b->base);
	if (b->list)
		weft_sim_free_mem(s, b->node, b->list);
	free(b->pages);
	memset(b, 0, sizeof(*b));
}

uint64_t wsc_buf_pa(const struct wsc_buf *b, uint64_t off)
{
	uint64_t a = b->first_off + off;

	return b->pages[a / WEFT_CNT_PAGE] + a % WEFT_CNT_PAGE;
}

static void buf_io(struct weft_sim *s, const struct wsc_buf *b, uint64_t off, void *p,
		   uint64_t n, bool write)
{
	uint8_t *q = p;

	while (n > 0) {
		uint64_t in = (b->first_off + off) % WEFT_CNT_PAGE, k = WEFT_CNT_PAGE - in;
		uint8_t *m;

		if (k > n)
			k = n;
		m = weft_sim_ptr(s, b->node, wsc_buf_pa(b, off), k);
		if (write)
			memcpy(m, q, k);
		else
			memcpy(q, m, k);
		q += k;
		off += k;
		n -= k;
	}
}

void wsc_buf_write(struct weft_sim *s, const struct wsc_buf *b, uint64_t off, const void *src,
		   uint64_t n)
{
	buf_io(s, b, off, (void *)src, n, true);
}

void wsc_buf_read(struct weft_sim *s, const struct wsc_buf *b, uint64_t off, void *dst,
		  uint64_t n)
{
	buf_io(s, b, off, dst, n, false);
}

int wsc_cmd(struct weft_sim *s, unsigned int node, const struct weft_cnt_cmd *m,
	    struct weft_vcmd_resp *resp)
{
	uint64_t a = weft_sim_alloc(s, node, WEFT_CNT_CMD_BLOCK_SIZE, 64);
	uint8_t *p;
	int st;

	if (!a)
		return -ENOMEM;
	p = weft_sim_ptr(s, node, a, WEFT_CNT_CMD_BLOCK_SIZE);
	memcpy(p, m, sizeof(*m));
	weft_sim_reg_write(s, node, WEFT_REG_CNT_CMD, a);
	st = (int)weft_sim_reg_read(s, node, WEFT_REG_CNT_CMD_STATUS);
	if (resp)
		memcpy(resp, p + sizeof(*m), sizeof(*resp));
	weft_sim_free_mem(s, node, a);
	return st;
}

int wsc_create(struct weft_sim *s, unsigned int node, uint32_t id, uint64_t block,
	       const struct wsc_buf *b, uint8_t mode, uint8_t flags, uint8_t vector,
	       uint32_t ops, uint16_t *gen)
{
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_CREATE, .handle = id };
	struct weft_vcmd_resp r;
	int st;

	m.u.create.block_addr = block;
	m.u.create.pages_addr = b->list;
	m.u.create.length = b->len;
	m.u.create.first_off = b->first_off;
	m.u.create.mode = mode;
	m.u.create.flags = flags;
	m.u.create.vector = vector;
	m.u.create.ops = ops;
	st = wsc_cmd(s, node, &m, &r);
	if (st == 0 && gen)
		*gen = (uint16_t)r.out[0];
	return st;
}

int wsc_destroy(struct weft_sim *s, unsigned int node, uint32_t id, uint16_t gen)
{
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_DESTROY, .handle = id };

	m.u.obj.gen = gen;
	return wsc_cmd(s, node, &m, NULL);
}

int wsc_post(struct weft_sim *s, unsigned int node, uint32_t id, uint16_t gen, uint8_t slot,
	     uint8_t dir, uint16_t peer, uint64_t off, uint64_t len, uint64_t remote_va,
	     uint32_t *seq)
{
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_POST, .handle = id };
	struct weft_vcmd_resp r;
	int st;

	m.u.post.gen = gen;
	m.u.post.slot = slot;
	m.u.post.dir = dir;
	m.u.post.node = peer;
	m.u.post.offset = off;
	m.u.post.length = len;
	m.u.post.remote_va = remote_va;
	st = wsc_cmd(s, node, &m, &r);
	if (st == 0 && seq)
		*seq = (uint32_t)r.out[0];
	return st;
}

int wsc_expose(struct weft_sim *s, unsigned int node, uint32_t idx, uint64_t va,
	       const struct wsc_buf *b, uint8_t rights, uint16_t peer, uint16_t *gen)
{
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_EXPOSE, .handle = idx };
	struct weft_vcmd_resp r;
	int st;

	m.u.expose.va = va;
	m.u.expose.length = b->len;
	m.u.expose.pages_addr = b->list;
	m.u.expose.first_off = b->first_off;
	m.u.expose.rights = rights;
	m.u.expose.peer = peer;
	st = wsc_cmd(s, node, &m, &r);
	if (st == 0 && gen)
		*gen = (uint16_t)r.out[0];
	return st;
}

int wsc_unexpose(struct weft_sim *s, unsigned int node, uint32_t idx, uint16_t gen)
{
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_UNEXPOSE, .handle = idx };

	m.u.obj.gen = gen;
	return wsc_cmd(s, node, &m, NULL);
}

int wsc_query(struct weft_sim *s, unsigned int node, uint32_t id, struct weft_cnt_obj_dump *d)
{
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_QUERY, .handle = id };
	uint64_t a = weft_sim_alloc(s, node, sizeof(*d), 64);
	int st;

	if (!a)
		return -ENOMEM;
	m.u.query.addr = a;
	st = wsc_cmd(s, node, &m, NULL);
	if (st == 0)
		memcpy(d, weft_sim_ptr(s, node, a, sizeof(*d)), sizeof(*d));
	weft_sim_free_mem(s, node, a);
	return st;
}

struct weft_cnt_block wsc_block(struct weft_sim *s, unsigned int node, uint64_t addr)
{
	struct weft_cnt_block b;

	memcpy(&b, weft_sim_ptr(s, node, addr, sizeof(b)), sizeof(b));
	return b;
}
