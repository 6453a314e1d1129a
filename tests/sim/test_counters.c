/* SPDX-License-Identifier: MIT */
/*
 * Counter-bearing RDMA objects (seed 003, docs/counters.md) over a lossy,
 * reordering fabric: 5% of the frames dropped and a delay jitter 25 times
 * the base delay.  One case per checklist item (57, 58, 59, 60, 71) and a
 * hostile case.
 *
 * A DMA hook watches every guest memory access of every node: before each
 * one, the counter word plus the bytes that have landed must cover the
 * transfer (the counter is never ahead of the data); writes outside the
 * data buffer and the status block are stray.  At the zero event every
 * byte must be in place.
 */
#include "vt.h"
#include "weft_sim_cnt.h"

#define MIB             (1ull << 20)
#define SEC             1000000000ull
#define RVA_BASE        0x7f1200000000ull
#define A               0u
#define B               1u
#define C               2u

/* What the hook and the trace callback check. */
static struct watch {
	bool on;
	unsigned int block_node, data_node;
	uint64_t block;
	const struct wsc_buf *data;
	bool scatter;
	uint8_t mode;
	uint64_t total;
	uint8_t *landed;            /* per byte of data */
	uint64_t nlanded;
	uint64_t early;             /* counter ahead of the data */
	uint64_t stray;             /* writes outside data and block */
	uint64_t writes;            /* all writes, every node */
	const uint8_t *expect;
	uint64_t zero_events, zero_bad, err_events;
	unsigned int zero_vector;   /* vector of the interrupt after the zero event */
	bool want_irq;
	/* Requests seen on the wire from A. */
	struct weft_cnt_hdr req;
	uint8_t req_type;
	uint64_t reqs;
	uint64_t evq[WEFT_SIM_MAX_NODES], evq_len;
} W;

static uint64_t data_off(const struct watch *w, uint64_t pa, bool *in)
{
	const struct wsc_buf *b = w->data;
	uint64_t p, i, a;

	*in = false;
	if (pa < b->base || pa >= b->base + (uint64_t)b->npages * WEFT_CNT_PAGE)
		return 0;
	p = (pa - b->base) / WEFT_CNT_PAGE;
	i = w->scatter ? b->npages - 1 - p : p;
	a = i * WEFT_CNT_PAGE + pa % WEFT_CNT_PAGE;
	if (a < b->first_off || a - b->first_off >= b->len)
		return 0;
	*in = true;
	return a - b->first_off;
}

static void hook(void *opaque, unsigned int node, uint64_t addr, size_t len, bool is_write)
{
	struct weft_sim *s = opaque;
	struct weft_cnt_block blk;
	uint64_t k;

	if (!is_write)
		return;
	W.writes++;
	if (!W.on)
		return;
	memcpy(&blk, weft_sim_ptr(s, W.block_node, W.block, sizeof(blk)), sizeof(blk));
	if (W.mode == WEFT_CNT_MODE_BYTES && blk.count + W.nlanded < W.total)
		W.early++;
	if (W.mode == WEFT_CNT_MODE_OPS && blk.count == 0 && W.nlanded < W.total)
		W.early++;
	if (node == W.block_node && addr == W.block && len == sizeof(blk))
		return;
	if (addr >= W.evq[node] && addr + len <= W.evq[node] + W.evq_len)
		return;         /* the driver's event queue */
	if (node != W.data_node) {
		W.stray++;
		return;
	}
	for (k = 0; k < len; k++) {
		bool in;
		uint64_t o = data_off(&W, addr + k, &in);

		if (!in) {
			W.stray++;
			return;
		}
		if (!W.landed[o]) {
			W.landed[o] = 1;
			W.nlanded++;
		}
	}
}

static void trace(void *opaque, unsigned int node, const struct weft_trace *ev)
{
	struct weft_sim *s = opaque;

	if (ev->kind == WEFT_TR_PKT_TX && node == A && ev->hdr &&
	    (ev->hdr->type == WEFT_PKT_CNT_WRITE_OP || ev->hdr->type == WEFT_PKT_CNT_READ_OP)) {
		memcpy(&W.req, (const uint8_t *)ev->hdr + sizeof(*ev->hdr), sizeof(W.req));
		W.req_type = ev->hdr->type;
		W.reqs++;
	}
	if (ev->kind == WEFT_TR_EVENT && node == W.block_node && ev->val == WEFT_EV_CNT_ERROR)
		W.err_events++;
	if (!W.on)
		return;
	if (ev->kind == WEFT_TR_EVENT && node == W.block_node && ev->val == WEFT_EV_CNT_ZERO) {
		uint8_t *got = malloc(W.total);

		W.zero_events++;
		wsc_buf_read(s, W.data, 0, got, W.total);
		if (W.nlanded != W.total || memcmp(got, W.expect, W.total))
			W.zero_bad++;
		free(got);
		W.want_irq = true;
	}
	if (ev->kind == WEFT_TR_IRQ && node == W.block_node && W.want_irq) {
		W.zero_vector = (unsigned int)ev->val;
		W.want_irq = false;
	}
}

/* The trace callback gets the sim through this (set once per case). */
static struct weft_sim *S;

static void trace_sim(void *opaque, unsigned int node, const struct weft_trace *ev)
{
	(void)opaque;
	trace(S, node, ev);
}

static struct weft_sim *case_sim(unsigned int nodes, uint32_t drop_ppm)
{
	struct weft_sim_config cfg = {
		.nr_nodes = nodes, .mem_size = 192 * MIB, .seed = 57,
		.faults = { .routes = 1, .delay_ns = 2000, .drop_ppm = drop_ppm,
			    .jitter_ns = 50000 },
		.nr_rcxt = 16, .nr_handlers = 4,
		.trace = trace_sim,
	};
	char err[160] = "";

	memset(&W, 0, sizeof(W));
	S = weft_sim_new(&cfg, err, sizeof(err));
	REQUIRE(S != NULL, "weft_sim_new: %s", err);
	weft_sim_set_dma_hook(S, hook, S);
	return S;
}

struct zero_arg {
	struct weft_sim *s;
	unsigned int node;
	uint64_t block;
};

static bool block_zero(void *arg)
{
	struct zero_arg *z = arg;

	return wsc_block(z->s, z->node, z->block).count == 0;
}

static bool block_failed(void *arg)
{
	struct zero_arg *z = arg;

	return wsc_block(z->s, z->node, z->block).failed != 0;
}

/* One transfer of n bytes between a fresh object on A and a fresh
 * exposure on B, with every check of items 57/58/71. */
struct xfer {
	uint8_t dir;
	uint64_t n;
	uint32_t a_off, b_off;      /* page offsets of the two buffers */
	uint8_t mode, flags, vector;
	uint8_t rights;
	uint16_t peer;
};

static void run_xfer(struct weft_sim *s, const struct xfer *x, uint32_t id)
{
	struct wsc_buf a, b;
	uint8_t *src = malloc(x->n), *zero = calloc(1, x->n);
	uint64_t blk = weft_sim_alloc(s, A, 16, 16);
	uint64_t rva = RVA_BASE + x->b_off, resend0 = vt_cnt(s, A, WEFT_CNT_C_RESEND);
	struct zero_arg z = { s, A, blk };
	struct weft_cnt_obj_dump d;
	uint64_t t0, t1;
	uint16_t gen, egen;
	uint32_t seq;
	int st;

	REQUIRE(src && zero && blk, "host memory");
	REQUIRE(wsc_buf_new(s, A, x->n, x->a_off, true, &a) == 0, "A buffer");
	REQUIRE(wsc_buf_new(s, B, x->n, x->b_off, true, &b) == 0, "B buffer");
	vt_fill(src, x->n, x->n + x->dir);
	if (x->dir == WEFT_CNT_READ) {
		wsc_buf_write(s, &b, 0, src, x->n);
		wsc_buf_write(s, &a, 0, zero, x->n);
	} else {
		wsc_buf_write(s, &a, 0, src, x->n);
		wsc_buf_write(s, &b, 0, zero, x->n);
	}
	st = wsc_expose(s, B, 0, rva, &b, x->rights, x->peer, &egen);
	REQUIRE(st == 0, "expose: %d", st);
	st = wsc_create(s, A, id, blk, &a, x->mode, x->flags, x->vector, 1, &gen);
	REQUIRE(st == 0, "create: %d", st);
	REQUIRE(wsc_block(s, A, blk).count == (x->mode == WEFT_CNT_MODE_BYTES ? x->n : 1),
	       "size %llu: counter starts at %llu", (unsigned long long)x->n,
	       (unsigned long long)wsc_block(s, A, blk).count);
	REQUIRE(wsc_block(s, A, blk).gen == gen, "block carries the generation");

	memset(&W, 0, sizeof(W));
	W.block_node = A;
	W.block = blk;
	W.data_node = x->dir == WEFT_CNT_READ ? A : B;
	W.data = x->dir == WEFT_CNT_READ ? &a : &b;
	W.scatter = true;
	W.mode = x->mode;
	W.total = x->n;
	W.landed = calloc(1, x->n);
	W.expect = src;
	W.zero_vector = 0xff;
	W.evq[A] = weft_sim_reg_read(s, A, WEFT_REG_EVQ_BASE);
	W.evq[B] = weft_sim_reg_read(s, B, WEFT_REG_EVQ_BASE);
	W.evq_len = sizeof(struct weft_event) << weft_sim_reg_read(s, A, WEFT_REG_EVQ_SIZE);
	REQUIRE(W.landed, "host memory");
	st = wsc_post(s, A, id, gen, 0, x->dir, B, 0, x->n, rva, &seq);
	REQUIRE(st == 0, "post: %d", st);
	W.on = true;    /* after the command block's response was written */
	t0 = weft_sim_now(s);
	REQUIRE(weft_sim_run_until(s, block_zero, &z, weft_sim_now(s) + 120 * SEC),
	       "size %llu dir %u: counter reached 0 (left %llu)", (unsigned long long)x->n,
	       x->dir, (unsigned long long)wsc_block(s, A, blk).count);
	t1 = weft_sim_now(s);
	weft_sim_run_idle(s, 0);
	W.on = false;
	REQUIRE(W.nlanded == x->n, "size %llu: %llu of %llu bytes landed",
	       (unsigned long long)x->n, (unsigned long long)W.nlanded, (unsigned long long)x->n);
	{
		uint8_t *got = malloc(x->n);

		wsc_buf_read(s, W.data, 0, got, x->n);
		REQUIRE(memcmp(got, src, x->n) == 0, "size %llu: data byte-exact",
		       (unsigned long long)x->n);
		free(got);
	}
	REQUIRE(W.early == 0, "size %llu: counter ahead of the data %llu times",
	       (unsigned long long)x->n, (unsigned long long)W.early);
	REQUIRE(W.stray == 0, "size %llu: %llu stray writes", (unsigned long long)x->n,
	       (unsigned long long)W.stray);
	if (x->flags & WEFT_CNTF_IRQ) {
		REQUIRE(W.zero_events == 1, "size %llu: %llu zero events, want 1",
		       (unsigned long long)x->n, (unsigned long long)W.zero_events);
		REQUIRE(W.zero_bad == 0, "size %llu: zero event before the last byte",
		       (unsigned long long)x->n);
		REQUIRE(W.zero_vector == x->vector, "size %llu: interrupt on vector %u, want %u",
		       (unsigned long long)x->n, W.zero_vector, x->vector);
	} else {
		REQUIRE(W.zero_events == 0, "poll mode: %llu zero events",
		       (unsigned long long)W.zero_events);
	}
	REQUIRE(wsc_query(s, A, id, &d) == 0 && d.notified == 1 &&
	       d.op[0].state == WEFT_CNT_OP_DONE && d.op[0].applied == x->n && d.op[0].seq == seq,
	       "size %llu: dump says done, %llu applied, notified %u", (unsigned long long)x->n,
	       (unsigned long long)d.op[0].applied, d.notified);
	t_diag("size %llu dir %s: %llu resends, %.3f ms of virtual time", (unsigned long long)x->n,
	       x->dir == WEFT_CNT_READ ? "read" : "write",
	       (unsigned long long)(vt_cnt(s, A, WEFT_CNT_C_RESEND) - resend0),
	       (double)(t1 - t0) / 1e6);
	REQUIRE(wsc_destroy(s, A, id, gen) == 0, "destroy");
	REQUIRE(wsc_unexpose(s, B, 0, egen) == 0, "unexpose");
	free(W.landed);
	W.landed = NULL;
	wsc_buf_free(s, &a);
	wsc_buf_free(s, &b);
	weft_sim_free_mem(s, A, blk);
	free(src);
	free(zero);
}

static const uint64_t sizes[] = {
	1, 1000, 1024, 1025, 4101, 65539, 1 * MIB + 17, 16 * MIB,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void sizes_case(uint8_t dir)
{
	struct weft_sim *s = case_sim(2, 50000);
	unsigned int i;

	for (i = 0; i < NSIZES; i++) {
		struct xfer x = {
			.dir = dir, .n = sizes[i], .a_off = 0x88 * (i & 1), .b_off = 0x321,
			.mode = WEFT_CNT_MODE_BYTES, .flags = WEFT_CNTF_IRQ, .vector = 0,
			.rights = dir == WEFT_CNT_READ ? WEFT_CNT_R_READ : WEFT_CNT_R_WRITE,
			.peer = A,
		};

		run_xfer(s, &x, i);
	}
	REQUIRE(vt_cnt(s, A, WEFT_CNT_C_RESEND) > 0, "loss made the initiator resend");
	REQUIRE(vt_cnt(s, A, WEFT_CNT_C_NOTIFY) == NSIZES, "one notification per object: %llu",
	       (unsigned long long)vt_cnt(s, A, WEFT_CNT_C_NOTIFY));
	t_checked("%s 1 B .. 16 MiB over 5%% loss: byte-exact, counter never ahead, one "
		  "interrupt per object at the last byte, %llu resends",
		  dir == WEFT_CNT_READ ? "reads" : "writes",
		  (unsigned long long)vt_cnt(s, A, WEFT_CNT_C_RESEND));
	weft_sim_free(s);
}

static void item57(void)
{
	sizes_case(WEFT_CNT_READ);
}

static void item58(void)
{
	sizes_case(WEFT_CNT_WRITE);
}

/* The request carries A's physical addresses and B's virtual address;
 * B translates through its exposures (scattered pages, unaligned VAs). */
static void item59(void)
{
	struct weft_sim *s = case_sim(2, 50000);
	struct wsc_buf a, b1, b2;
	const uint64_t n = 300000, n2 = 299008; /* n2: a whole number of chunks */
	uint8_t *p1 = malloc(n), *p2 = malloc(n), *got = malloc(n);
	uint64_t blk = weft_sim_alloc(s, A, 16, 16);
	uint64_t va1 = RVA_BASE + 0x10, va2 = RVA_BASE + 0x40000777;
	struct zero_arg z = { s, A, blk };
	uint16_t gen, g1, g2;

	REQUIRE(p1 && p2 && got && blk, "host memory");
	REQUIRE(wsc_buf_new(s, A, n2 + n, 0x40, true, &a) == 0, "A buffer");
	REQUIRE(wsc_buf_new(s, B, n, 0x10, true, &b1) == 0, "B buffer 1");
	REQUIRE(wsc_buf_new(s, B, n, 0x777, false, &b2) == 0, "B buffer 2");
	vt_fill(p1, n, 591);
	vt_fill(p2, n, 592);
	wsc_buf_write(s, &b1, 0, p1, n);
	wsc_buf_write(s, &b2, 0, p2, n);
	REQUIRE(wsc_expose(s, B, 3, va1, &b1, WEFT_CNT_R_READ, WEFT_CNT_ANY_PEER, &g1) == 0,
	       "expose 1");
	REQUIRE(wsc_expose(s, B, 9, va2, &b2, WEFT_CNT_R_READ, A, &g2) == 0, "expose 2");
	REQUIRE(wsc_create(s, A, 7, blk, &a, WEFT_CNT_MODE_BYTES, 0, 0, 0, &gen) == 0, "create");
	REQUIRE(wsc_post(s, A, 7, gen, 1, WEFT_CNT_READ, B, 0, n2, va2, NULL) == 0,
	       "post from exposure 2");
	weft_sim_run_until(s, NULL, NULL, weft_sim_now(s) + 1000);
	REQUIRE(W.reqs >= 1 && W.req_type == WEFT_PKT_CNT_WRITE_OP,
	       "a DMA write op request went out");
	REQUIRE(W.req.region_pa == wsc_buf_pa(&a, 0) && W.req.block_pa == blk &&
	       W.req.remote_va == va2 && W.req.length == n2 && W.req.obj == 7 &&
	       W.req.gen == gen,
	       "request carries A's region PA 0x%llx (want 0x%llx), block PA, remote VA",
	       (unsigned long long)W.req.region_pa, (unsigned long long)wsc_buf_pa(&a, 0));
	REQUIRE(wsc_post(s, A, 7, gen, 2, WEFT_CNT_READ, B, n2, n, va1, NULL) == 0,
	       "post from exposure 1");
	weft_sim_run_until(s, NULL, NULL, weft_sim_now(s) + 1000);
	REQUIRE(W.req.region_pa == wsc_buf_pa(&a, n2), "second request: PA of its first byte");
	REQUIRE(weft_sim_run_until(s, block_zero, &z, weft_sim_now(s) + 60 * SEC), "counter 0");
	weft_sim_run_idle(s, 0);
	wsc_buf_read(s, &a, 0, got, n2);
	REQUIRE(memcmp(got, p2, n2) == 0, "range from exposure 2 byte-exact");
	wsc_buf_read(s, &a, n2, got, n);
	REQUIRE(memcmp(got, p1, n) == 0,
	       "range from exposure 1 byte-exact (scattered pages, unaligned VA)");
	REQUIRE(vt_cnt(s, B, WEFT_CNT_C_REQ_RX) >= 2, "B served the requests");
	t_checked("the wire carries A's physical addresses; B translated two VAs through two "
		  "exposures (scattered and identity pages)");
	wsc_buf_free(s, &a);
	wsc_buf_free(s, &b1);
	wsc_buf_free(s, &b2);
	weft_sim_free(s);
	free(p1);
	free(p2);
	free(got);
}

/* Wait for an operation of the object on A to fail; returns the block. */
static struct weft_cnt_block wait_failed(struct weft_sim *s, uint64_t blk)
{
	struct zero_arg z = { s, A, blk };
	struct weft_cnt_block k;

	REQUIRE(weft_sim_run_until(s, block_failed, &z, weft_sim_now(s) + 60 * SEC),
	       "the operation failed");
	k = wsc_block(s, A, blk);
	return k;
}

/* A request the peer cannot serve gets CNT_ERROR with a cause; the
 * counter stays; a retry after exposure succeeds. */
static void item60(void)
{
	struct weft_sim *s = case_sim(2, 50000);
	struct wsc_buf a, b;
	const uint64_t n = 200000;
	uint8_t *src = malloc(n), *got = malloc(n);
	uint64_t blk = weft_sim_alloc(s, A, 16, 16), rva = RVA_BASE + 0x123;
	struct zero_arg z = { s, A, blk };
	struct weft_cnt_block k;
	struct weft_cnt_obj_dump d;
	uint16_t gen, eg;
	uint32_t s1, s2;

	REQUIRE(src && got && blk, "host memory");
	REQUIRE(wsc_buf_new(s, A, n, 0, true, &a) == 0, "A buffer");
	REQUIRE(wsc_buf_new(s, B, n, 0x123, true, &b) == 0, "B buffer");
	vt_fill(src, n, 60);
	wsc_buf_write(s, &b, 0, src, n);
	REQUIRE(wsc_create(s, A, 1, blk, &a, WEFT_CNT_MODE_BYTES, WEFT_CNTF_IRQ, 0, 0, &gen) == 0,
	       "create");
	memset(&W, 0, sizeof(W));
	W.block_node = A;

	/* 1. Nothing exposed at B. */
	REQUIRE(wsc_post(s, A, 1, gen, 0, WEFT_CNT_READ, B, 0, n, rva, &s1) == 0, "post");
	k = wait_failed(s, blk);
	REQUIRE(k.error == WEFT_R_CNT_NOT_EXPOSED && k.count == n && k.failed == 1,
	       "error %s, counter %llu of %llu, failed %u", weft_reason_name(k.error),
	       (unsigned long long)k.count, (unsigned long long)n, k.failed);
	REQUIRE(vt_drops(s, B, WEFT_R_CNT_NOT_EXPOSED) >= 1 &&
	       vt_cnt(s, B, WEFT_CNT_C_ERR_TX) >= 1 && vt_cnt(s, A, WEFT_CNT_C_ERR_RX) == 1,
	       "B refused with a named reason and sent the error message; A took it once");
	REQUIRE(W.err_events == 1, "one error event at A: %llu", (unsigned long long)W.err_events);
	REQUIRE(wsc_query(s, A, 1, &d) == 0 && d.op[0].state == WEFT_CNT_OP_FAILED &&
	       d.op[0].reason == WEFT_R_CNT_NOT_EXPOSED, "op dump: failed, cause kept");

	/* 2. Exposed for writing only, or for another peer: rights. */
	REQUIRE(wsc_expose(s, B, 5, rva, &b, WEFT_CNT_R_WRITE, A, &eg) == 0, "expose write-only");
	REQUIRE(wsc_post(s, A, 1, gen, 0, WEFT_CNT_READ, B, 0, n, rva, &s2) == 0 && s2 != s1,
	       "post again on the slot, new sequence");
	weft_sim_run_until(s, NULL, NULL, weft_sim_now(s) + 10 * SEC);
	k = wsc_block(s, A, blk);
	REQUIRE(k.error == WEFT_R_CNT_RIGHTS && k.failed == 2 && k.count == n,
	       "write-only exposure: %s, failed %u", weft_reason_name(k.error), k.failed);
	REQUIRE(wsc_unexpose(s, B, 5, eg) == 0, "unexpose");
	REQUIRE(wsc_expose(s, B, 5, rva, &b, WEFT_CNT_R_READ, C, &eg) == 0, "expose to node 2");
	REQUIRE(wsc_post(s, A, 1, gen, 0, WEFT_CNT_READ, B, 0, n, rva, NULL) == 0, "post");
	weft_sim_run_until(s, NULL, NULL, weft_sim_now(s) + 20 * SEC);
	k = wsc_block(s, A, blk);
	REQUIRE(k.error == WEFT_R_CNT_RIGHTS && k.failed == 3 && k.count == n,
	       "exposure for another peer: %s, failed %u", weft_reason_name(k.error), k.failed);
	REQUIRE(wsc_unexpose(s, B, 5, eg) == 0, "unexpose");

	/* 3. The range runs past the exposure's end. */
	REQUIRE(wsc_expose(s, B, 5, rva + 1, &b, WEFT_CNT_R_READ, A, &eg) == 0, "expose shifted");
	REQUIRE(wsc_post(s, A, 1, gen, 0, WEFT_CNT_READ, B, 0, n, rva, NULL) == 0, "post");
	weft_sim_run_until(s, NULL, NULL, weft_sim_now(s) + 20 * SEC);
	k = wsc_block(s, A, blk);
	REQUIRE(k.error == WEFT_R_CNT_NOT_EXPOSED && k.failed == 4 && k.count == n,
	       "range starting before the exposure: %s", weft_reason_name(k.error));
	REQUIRE(wsc_unexpose(s, B, 5, eg) == 0, "unexpose");
	REQUIRE(wsc_block(s, A, blk).count == n, "the counter never moved");

	/* 4. Exposed: the retry succeeds. */
	REQUIRE(wsc_expose(s, B, 5, rva, &b, WEFT_CNT_R_READ, A, &eg) == 0, "expose");
	REQUIRE(wsc_post(s, A, 1, gen, 0, WEFT_CNT_READ, B, 0, n, rva, NULL) == 0, "retry");
	REQUIRE(weft_sim_run_until(s, block_zero, &z, weft_sim_now(s) + 60 * SEC),
	       "retry reached 0");
	wsc_buf_read(s, &a, 0, got, n);
	REQUIRE(memcmp(got, src, n) == 0, "retried read byte-exact");
	REQUIRE(wsc_post(s, A, 1, gen, 1, WEFT_CNT_READ, B, 0, 1024, rva, NULL) == WEFT_CMD_EBUSY,
	       "a post over chunks of another operation is refused");
	t_checked("not exposed, missing right, other peer and out-of-range requests answered "
		  "with CNT_ERROR and their cause; counter unchanged; retry after exposure "
		  "succeeded");
	wsc_buf_free(s, &a);
	wsc_buf_free(s, &b);
	weft_sim_free(s);
	free(src);
	free(got);
}

/* Poll mode, interrupt mode on a chosen vector, completion-count mode. */
static void item71(void)
{
	struct weft_sim *s = case_sim(2, 50000);
	struct xfer poll = {
		.dir = WEFT_CNT_READ, .n = 100000, .a_off = 8, .b_off = 0x10,
		.mode = WEFT_CNT_MODE_BYTES, .flags = 0, .vector = 0,
		.rights = WEFT_CNT_R_READ, .peer = A,
	};
	struct xfer irq = poll;
	struct wsc_buf a, b;
	uint64_t blk, rva = RVA_BASE, seen[8], nseen = 0, last;
	const uint64_t n = 3 * 8192;
	uint8_t *src = malloc(n), *got = malloc(n);
	struct zero_arg z;
	uint16_t gen, eg;
	unsigned int i;

	/* Poll: the zero is seen in the word, and no event comes. */
	run_xfer(s, &poll, 10);
	REQUIRE(weft_sim_event_count(s, A, WEFT_EV_CNT_ZERO) == 0, "poll mode: no zero event");
	/* Interrupt on vector 3 of 4. */
	irq.flags = WEFT_CNTF_IRQ;
	irq.vector = 3;
	irq.dir = WEFT_CNT_WRITE;
	irq.rights = WEFT_CNT_R_WRITE;
	run_xfer(s, &irq, 11);
	REQUIRE(weft_sim_event_count(s, A, WEFT_EV_CNT_ZERO) == 1,
	       "interrupt mode: the driver took one zero event");

	/* Completion count: 3 operations, counter 3 -> 0, one per op. */
	REQUIRE(src && got, "host memory");
	blk = weft_sim_alloc(s, A, 16, 16);
	z = (struct zero_arg){ s, A, blk };
	REQUIRE(wsc_buf_new(s, A, n, 0, false, &a) == 0, "A buffer");
	REQUIRE(wsc_buf_new(s, B, n, 0, true, &b) == 0, "B buffer");
	vt_fill(src, n, 71);
	wsc_buf_write(s, &b, 0, src, 8192);
	wsc_buf_write(s, &a, 8192, src + 8192, n - 8192);
	REQUIRE(wsc_expose(s, B, 1, rva, &b, WEFT_CNT_R_READ | WEFT_CNT_R_WRITE, A, &eg) == 0,
	       "expose");
	REQUIRE(wsc_create(s, A, 12, blk, &a, WEFT_CNT_MODE_OPS, WEFT_CNTF_IRQ, 1, 3, &gen) == 0,
	       "create, 3 operations");
	REQUIRE(wsc_block(s, A, blk).count == 3, "counter starts at 3");
	REQUIRE(wsc_post(s, A, 12, gen, 0, WEFT_CNT_READ, B, 0, 8192, rva, NULL) == 0, "op 1");
	REQUIRE(wsc_post(s, A, 12, gen, 1, WEFT_CNT_WRITE, B, 8192, 8192, rva + 8192, NULL) == 0,
	       "op 2");
	REQUIRE(wsc_post(s, A, 12, gen, 2, WEFT_CNT_WRITE, B, 16384, 8192, rva + 16384, NULL) == 0,
	       "op 3");
	REQUIRE(wsc_post(s, A, 12, gen, 3, WEFT_CNT_WRITE, B, 16384, 8192, rva, NULL) ==
	       WEFT_CMD_ESTATE, "a fourth operation while three run is refused");
	last = 3;
	while (wsc_block(s, A, blk).count != 0 && weft_sim_progress(s)) {
		uint64_t c = wsc_block(s, A, blk).count;

		if (c != last && nseen < 8)
			seen[nseen++] = c;
		REQUIRE(c <= last, "counter went up: %llu after %llu", (unsigned long long)c,
		       (unsigned long long)last);
		last = c;
	}
	REQUIRE(wsc_block(s, A, blk).count == 0 || weft_sim_run_until(s, block_zero, &z,
	       weft_sim_now(s) + 60 * SEC), "ops counter reached 0");
	weft_sim_run_idle(s, 0);
	REQUIRE(nseen >= 1, "the counter was seen between 3 and 0");
	for (i = 0; i < nseen; i++)
		REQUIRE(seen[i] == 2 - i, "count %u seen as %llu", i, (unsigned long long)seen[i]);
	wsc_buf_read(s, &a, 0, got, 8192);
	REQUIRE(memcmp(got, src, 8192) == 0, "op 1 data");
	wsc_buf_read(s, &b, 8192, got + 8192, n - 8192);
	REQUIRE(memcmp(got + 8192, src + 8192, n - 8192) == 0, "ops 2 and 3 data");
	REQUIRE(weft_sim_event_count(s, A, WEFT_EV_CNT_ZERO) == 2, "one more zero event");
	REQUIRE(wsc_post(s, A, 12, gen, 3, WEFT_CNT_READ, B, 0, 8192, rva, NULL) == WEFT_CMD_ESTATE,
	       "a fourth operation is refused");
	t_checked("poll mode: zero in the word, no event; interrupt mode: one event on vector 3; "
		  "completion count 3 -> 2 -> 1 -> 0 with one event");
	wsc_buf_free(s, &a);
	wsc_buf_free(s, &b);
	weft_sim_free(s);
	free(src);
	free(got);
}

/* Build and inject a counter packet into node's core, as if from src. */
static void inject(struct weft_sim *s, unsigned int node, uint16_t src, uint8_t type,
		   const struct weft_cnt_hdr *h, const void *data, size_t dlen)
{
	_Alignas(8) uint8_t pkt[WEFT_WIRE_MAX_FRAME];
	struct weft_wire_hdr wh;

	memset(&wh, 0, sizeof(wh));
	wh.version = WEFT_WIRE_VERSION;
	wh.type = type;
	wh.dst_node = (uint16_t)node;
	wh.src_node = src;
	wh.length = (uint32_t)(sizeof(*h) + dlen);
	memcpy(pkt, &wh, sizeof(wh));
	memcpy(pkt + sizeof(wh), h, sizeof(*h));
	if (dlen)
		memcpy(pkt + sizeof(wh) + sizeof(*h), data, dlen);
	REQUIRE(weft_core_receive(weft_sim_core(s, node), pkt, sizeof(wh) + sizeof(*h) + dlen) == 0,
	       "inject");
	weft_core_poll(weft_sim_core(s, node), 4);
}

/* Forged and stale packets never write guest memory. */
static void hostile(void)
{
	struct weft_sim *s = case_sim(3, 0);
	struct wsc_buf a, b;
	const uint64_t n = 4 * MIB;
	uint8_t *src = malloc(n), *got = malloc(n), junk[WEFT_CNT_CHUNK];
	uint64_t blk = weft_sim_alloc(s, A, 16, 16), rva = RVA_BASE;
	struct zero_arg z = { s, A, blk };
	struct weft_cnt_hdr real, h;
	struct weft_cnt_obj_dump d;
	uint16_t gen, eg;
	uint64_t w0, stale0;
	unsigned int i;

	REQUIRE(src && got && blk, "host memory");
	memset(junk, 0xEE, sizeof(junk));
	REQUIRE(wsc_buf_new(s, A, n, 0, true, &a) == 0, "A buffer");
	REQUIRE(wsc_buf_new(s, B, n, 0, true, &b) == 0, "B buffer");
	vt_fill(src, n, 99);
	wsc_buf_write(s, &b, 0, src, n);
	REQUIRE(wsc_expose(s, B, 0, rva, &b, WEFT_CNT_R_READ | WEFT_CNT_R_WRITE, A, &eg) == 0,
	       "expose to A only");
	REQUIRE(wsc_create(s, A, 4, blk, &a, WEFT_CNT_MODE_BYTES, WEFT_CNTF_IRQ, 0, 0, &gen) == 0,
	       "create");
	REQUIRE(wsc_post(s, A, 4, gen, 0, WEFT_CNT_READ, B, 0, n, rva, NULL) == 0, "post");
	weft_sim_run_until(s, NULL, NULL, weft_sim_now(s) + 20000);
	REQUIRE(W.reqs >= 1, "request seen");
	real = W.req;
	REQUIRE(wsc_block(s, A, blk).count > 0, "transfer under way");

	/* Forged data chunks at A, each with valid-looking ids and PAs. */
	w0 = W.writes;
	h = real;
	h.offset = n - WEFT_CNT_CHUNK;
	h.span = WEFT_CNT_CHUNK;
	inject(s, A, C, WEFT_PKT_CNT_DATA, &h, junk, sizeof(junk));
	REQUIRE(vt_drops(s, A, WEFT_R_CNT_OP_MISMATCH) == 1, "data from node 2: OP_MISMATCH");
	h.seq++;
	inject(s, A, B, WEFT_PKT_CNT_DATA, &h, junk, sizeof(junk));
	REQUIRE(vt_drops(s, A, WEFT_R_CNT_OP_MISMATCH) == 2, "wrong sequence: OP_MISMATCH");
	h = real;
	h.offset = n - WEFT_CNT_CHUNK;
	h.span = WEFT_CNT_CHUNK;
	h.region_pa = b.base;
	inject(s, A, B, WEFT_PKT_CNT_DATA, &h, junk, sizeof(junk));
	REQUIRE(vt_drops(s, A, WEFT_R_CNT_OP_MISMATCH) == 3, "another PA: OP_MISMATCH");
	h = real;
	h.offset = n;
	h.span = WEFT_CNT_CHUNK;
	inject(s, A, B, WEFT_PKT_CNT_DATA, &h, junk, sizeof(junk));
	REQUIRE(vt_drops(s, A, WEFT_R_CNT_OUTSIDE) == 1, "offset past the op: OUTSIDE");
	h.offset = 100;
	inject(s, A, B, WEFT_PKT_CNT_DATA, &h, junk, sizeof(junk));
	REQUIRE(vt_drops(s, A, WEFT_R_CNT_OUTSIDE) == 2, "unaligned offset: OUTSIDE");
	h = real;
	h.obj = 5;
	inject(s, A, B, WEFT_PKT_CNT_DATA, &h, junk, sizeof(junk));
	REQUIRE(vt_drops(s, A, WEFT_R_CNT_OBJ_INVALID) == 1, "object not live: OBJ_INVALID");
	h.obj = 9999;
	inject(s, A, B, WEFT_PKT_CNT_DATA, &h, junk, sizeof(junk));
	REQUIRE(vt_drops(s, A, WEFT_R_CNT_OBJ_INVALID) == 2, "object out of range: OBJ_INVALID");
	h = real;
	h.gen++;
	inject(s, A, B, WEFT_PKT_CNT_DATA, &h, junk, sizeof(junk));
	REQUIRE(vt_drops(s, A, WEFT_R_CNT_OBJ_STALE) == 1, "other generation: OBJ_STALE");
	h = real;
	inject(s, A, C, WEFT_PKT_CNT_ERROR, &h, NULL, 0);
	inject(s, A, C, WEFT_PKT_CNT_ACK, &h, NULL, 0);
	REQUIRE(vt_drops(s, A, WEFT_R_CNT_OP_MISMATCH) == 5, "error and ack from node 2 dropped");
	REQUIRE(wsc_block(s, A, blk).failed == 0, "the forged error failed nothing");
	REQUIRE(W.writes == w0, "no guest write at A from forged packets (%llu)",
	       (unsigned long long)(W.writes - w0));

	/* Forged write data at B from node 2 and outside the exposure. */
	h = real;
	h.dir = WEFT_CNT_WRITE;
	h.offset = 0;
	h.span = WEFT_CNT_CHUNK;
	inject(s, B, C, WEFT_PKT_CNT_DATA, &h, junk, sizeof(junk));
	REQUIRE(vt_drops(s, B, WEFT_R_CNT_RIGHTS) == 1, "write data from node 2: RIGHTS");
	h.remote_va = rva + n;
	h.length = WEFT_CNT_CHUNK;
	inject(s, B, A, WEFT_PKT_CNT_DATA, &h, junk, sizeof(junk));
	REQUIRE(vt_drops(s, B, WEFT_R_CNT_NOT_EXPOSED) == 1, "write past the exposure: NOT_EXPOSED");
	h = real;
	inject(s, B, C, WEFT_PKT_CNT_WRITE_OP, &h, NULL, 0);
	REQUIRE(vt_drops(s, B, WEFT_R_CNT_RIGHTS) == 2, "read request from node 2: RIGHTS");
	REQUIRE(W.writes == w0, "no guest write at B from forged packets");

	REQUIRE(weft_sim_run_until(s, block_zero, &z, weft_sim_now(s) + 60 * SEC), "counter 0");
	wsc_buf_read(s, &a, 0, got, n);
	REQUIRE(memcmp(got, src, n) == 0, "the real transfer is byte-exact");

	/* A process dies mid-transfer: its object is destroyed; late chunks
	 * are stale and never land. */
	REQUIRE(wsc_destroy(s, A, 4, gen) == 0, "destroy");
	memset(got, 0, n);
	wsc_buf_write(s, &a, 0, got, n);
	REQUIRE(wsc_create(s, A, 4, blk, &a, WEFT_CNT_MODE_BYTES, WEFT_CNTF_IRQ, 0, 0, &gen) == 0,
	       "create again");
	REQUIRE(wsc_post(s, A, 4, gen, 0, WEFT_CNT_READ, B, 0, n, rva, NULL) == 0, "post");
	for (i = 0; i < 2000 && wsc_block(s, A, blk).count > n / 2; i++)
		weft_sim_progress(s);
	REQUIRE(wsc_block(s, A, blk).count > 0 && wsc_block(s, A, blk).count < n, "mid-transfer");
	REQUIRE(wsc_destroy(s, A, 4, gen) == 0, "destroy mid-transfer");
	stale0 = vt_drops(s, A, WEFT_R_CNT_OBJ_STALE) + vt_drops(s, A, WEFT_R_CNT_OBJ_INVALID);
	w0 = W.writes;
	weft_sim_run_idle(s, 0);
	REQUIRE(W.writes == w0, "no write at A after the destroy (%llu)",
	       (unsigned long long)(W.writes - w0));
	stale0 = vt_drops(s, A, WEFT_R_CNT_OBJ_STALE) + vt_drops(s, A, WEFT_R_CNT_OBJ_INVALID) -
		 stale0;
	REQUIRE(stale0 > 0, "late chunks dropped (object gone): %llu", (unsigned long long)stale0);
	REQUIRE(wsc_query(s, A, 4, &d) == 0 && !d.live, "no live object left");
	t_checked("forged chunks, acks, errors and requests with valid-looking ids and PAs "
		  "from node 2 and stale ones are dropped with named reasons and never write "
		  "guest memory; a destroyed object gets no late write");
	wsc_buf_free(s, &a);
	wsc_buf_free(s, &b);
	weft_sim_free(s);
	free(src);
	free(got);
}

static const struct vt_case cases[] = {
	{ "57-counter-read", item57 },
	{ "58-counter-write", item58 },
	{ "59-remote-va-translation", item59 },
	{ "60-unserviceable-request", item60 },
	{ "71-notification-modes", item71 },
	{ "counter-hostile", hostile },
};

int main(int argc, char **argv)
{
	return vt_main("counter", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
