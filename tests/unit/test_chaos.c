/* SPDX-License-Identifier: MIT */
/*
 * Seeded chaos between two adapters that are set up correctly: random
 * FIFO, RDMA, half-RDMA and conditional frames (good and bad PVOs,
 * lengths, rCxts, tids, offsets and queue commands),
 * packets dropped, duplicated, reordered and corrupted on the way, rCxt
 * cancel/release/re-acquire, windows closed and re-opened, adapter
 * recoveries.  Invariants checked after every step:
 *  - the adapter writes guest memory only inside the current FIFOs, the
 *    event queue and the buffer its TCEs map for the window's job; never
 *    into a buffer mapped by a table of another job, never into the
 *    FIFOs of a closed window once Snapshot View read 0;
 *  - the core never stops answering, and goes idle when traffic stops.
 */
#include <string.h>

#include "harness.h"

#define JOB     0x4242u
#define OTHER   0x5151u
#define KEY     0x777u
#define BUF     (128u * 1024u)
#define NRCXT   8u
#define STEPS   200000u

struct region {
	uint64_t start, len;
};

struct cnode {
	struct h_node n;
	uint64_t buf, pvo;              /* job's buffer (table 0) */
	uint64_t other, other_pvo;      /* another job's buffer (table 1) */
	uint32_t tid;
	struct region fifo[2][2];       /* current send/receive FIFO per window */
	uint64_t sf[2][2], rf[2][2];    /* two FIFO sets per window */
	unsigned int set[2];
	uint32_t returned[2];
	size_t wlog_checked;
};

static uint64_t rs = 0x0123456789abcdefull;

static uint64_t rnd(uint64_t n)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return n ? rs % n : rs;
}

static unsigned int violations;

static void check_writes(struct cnode *c);

/* Each window alternates between two FIFO sets, so writes into the set
 * of a closed window are recognisable. */
static void open_win(struct cnode *c, unsigned int w)
{
	struct weft_lmt l;
	unsigned int set = c->set[w] ^= 1;
	uint64_t bytes = (uint64_t)WEFT_FRAME_SIZE << 3;

	if (!c->sf[w][set]) {
		c->sf[w][set] = h_alloc(&c->n, bytes, WEFT_FRAME_SIZE);
		c->rf[w][set] = h_alloc(&c->n, bytes, WEFT_FRAME_SIZE);
	}
	memset(h_ptr(&c->n, c->sf[w][set]), 0, bytes);
	memset(h_ptr(&c->n, c->rf[w][set]), 0, bytes);
	memset(&l, 0, sizeof(l));
	l.window_id = w;
	l.window_key = JOB;
	l.send_fifo_real_address = c->sf[w][set];
	l.send_fifo_size = 3;
	l.send_mask = 7;
	l.recv_fifo_real_address = c->rf[w][set];
	l.recv_fifo_size = 3;
	l.recv_mask = 7;
	l.send_quanta_size = 1 + w;
	l.recv_int_threshold = (uint32_t)rnd(4);
	l.int_vect_data = w;
	h_lmt_write(&c->n, w, &l);
	CHECK_EQ(h_cmd(&c->n, WEFT_REG_CMD_OPEN_WINDOW, w), WEFT_CMD_OK, "open");
	c->n.sfifo[w] = c->sf[w][set];
	c->n.rfifo[w] = c->rf[w][set];
	c->n.sprod[w] = 0;
	c->fifo[w][0] = (struct region){ c->sf[w][set], bytes };
	c->fifo[w][1] = (struct region){ c->rf[w][set], bytes };
	c->returned[w] = 0;
}

/* Close (if needed), wait for Snapshot View to clear, re-open. */
static void reopen(struct cnode *c, unsigned int w)
{
	unsigned int polls = 0;

	if (h_db_r(&c->n, w, WEFT_DB_STATE) != WEFT_WIN_INVALID)
		h_reg_w(&c->n, WEFT_REG_CMD_CLOSE_WINDOW, w);
	while (h_reg_r(&c->n, WEFT_REG_SNAPSHOT_VIEW) != 0 && polls++ < 1000)
		weft_core_poll(c->n.c, 8);
	CHECK_EQ(h_reg_r(&c->n, WEFT_REG_SNAPSHOT_VIEW), 0, "snapshot clears");
	check_writes(c);
	open_win(c, w);
}

static void acquire_all(struct cnode *c)
{
	uint32_t r;
	uint16_t key = (uint16_t)h_reg_r(&c->n, WEFT_REG_RECOVERY_COUNT);

	for (r = 0; r < NRCXT; r++)
		h_acquire(&c->n, r, r % 2, key);
}

static void cnode_init(struct cnode *c, uint16_t id)
{
	memset(c, 0, sizeof(*c));
	h_init(&c->n, id, 2, 64, 2, 16);
	h_evq_setup(&c->n);
	open_win(c, 0);
	open_win(c, 1);
	acquire_all(c);
	h_tce_table(&c->n, 0, 64, 12, JOB);
	h_tce_table(&c->n, 1, 64, 12, OTHER);
	c->buf = h_alloc(&c->n, BUF, 4096);
	c->other = h_alloc(&c->n, BUF, 4096);
	c->pvo = h_map(&c->n, 0, 0, KEY, c->buf, BUF);
	c->other_pvo = h_map(&c->n, 1, 0, KEY, c->other, BUF);
	c->tid = 1;
}

static bool in(const struct region *r, uint64_t a, size_t len)
{
	return a >= r->start && a + len <= r->start + r->len;
}

static void check_writes(struct cnode *c)
{
	struct region evq = { c->n.evq, sizeof(struct weft_event) << H_EVQ_LOG2 };
	struct region buf = { c->buf, BUF };
	size_t i;

	for (i = c->wlog_checked; i < c->n.nwlog; i++) {
		uint64_t a = c->n.wlog[i].addr;
		size_t len = c->n.wlog[i].len;
		bool ok = in(&evq, a, len) || in(&buf, a, len) ||
			  in(&c->fifo[0][0], a, len) || in(&c->fifo[0][1], a, len) ||
			  in(&c->fifo[1][0], a, len) || in(&c->fifo[1][1], a, len);

		if (!ok) {
			violations++;
			CHECK(ok, "node %u wrote %zu bytes at 0x%llx outside the allowed regions",
			      c->n.id, len, (unsigned long long)a);
		}
	}
	if (c->n.nwlog >= H_MAX_WLOG - 64) {
		c->n.nwlog = 0;
		c->wlog_checked = 0;
	} else {
		c->wlog_checked = c->n.nwlog;
	}
}

static uint64_t pick_pvo(struct cnode *c, uint64_t len)
{
	switch (rnd(8)) {
	case 0:
		return c->other_pvo + rnd(BUF);                 /* other job's table */
	case 1:
		return weft_pvo_make(KEY + 1, 0, rnd(BUF));     /* stale key */
	case 2:
		return c->pvo + BUF - rnd(4096);                /* runs off the end */
	case 3:
		return rnd(0);                                  /* garbage */
	default:
		return c->pvo + rnd(len < BUF ? BUF - len : 1);
	}
}

static void post(struct cnode *c, struct cnode *peer)
{
	unsigned int w = (unsigned int)rnd(2);
	uint8_t payload[WEFT_MAX_PAYLOAD];
	struct weft_rdma_req q;
	uint8_t type = (uint8_t)(1 + rnd(WEFT_SF_COND_CTL));   /* every frame type */

	if (h_db_r(&c->n, w, WEFT_DB_SEND_READY) >= 8)
		return;
	if (type == WEFT_SF_FIFO) {
		uint16_t len = (uint16_t)rnd(WEFT_MAX_PAYLOAD + 1);

		memset(payload, (int)rnd(256), sizeof(payload));
		h_put_fifo(&c->n, w, rnd(10) ? peer->n.id : (uint16_t)rnd(0), (uint16_t)rnd(3),
			   payload, len, (uint32_t)rnd(0));
	} else {
		memset(&q, 0, sizeof(q));
		q.length = rnd(10) ? 1 + rnd(20000) : rnd(0);
		q.local_pvo = rnd(8) ? c->pvo + rnd(BUF - (q.length < BUF ? q.length : 0) + 1) :
			      pick_pvo(c, q.length);
		q.remote_pvo = pick_pvo(peer, q.length);
		q.local_rcxt = (uint32_t)rnd(NRCXT + 2);
		q.remote_rcxt = (uint32_t)rnd(NRCXT + 2);
		q.remote_rcxt_key = (uint16_t)h_reg_r(&peer->n, WEFT_REG_RECOVERY_COUNT);
		q.notify = (uint8_t)rnd(4);
		q.tid = rnd(20) ? c->tid++ : (uint32_t)rnd(c->tid + 1);
		q.tp_node = c->n.id;
		q.tp_window = (uint16_t)rnd(2);
		q.tp_rcxt = (uint32_t)rnd(NRCXT);
		q.offset = (uint32_t)(rnd(4) ? rnd(12) * WEFT_MAX_PAYLOAD : rnd(0));
		q.xflags = (uint16_t)rnd(3);
		if (type == WEFT_SF_PUT) {
			memset(payload, (int)rnd(256), sizeof(payload));
			h_put_put(&c->n, w, peer->n.id, (uint16_t)rnd(2), &q, payload,
				  (uint16_t)(rnd(4) ? WEFT_MAX_PAYLOAD : rnd(WEFT_MAX_PAYLOAD + 1)));
		} else {
			h_put_rdma(&c->n, w, type, peer->n.id, (uint16_t)rnd(2), &q);
		}
	}
	h_start(&c->n, w, 1);
}

/* Move packets from a to b with loss, duplication, corruption, reorder. */
static void wire(struct cnode *a, struct cnode *b)
{
	size_t n = a->n.ntx, i;
	static struct h_pkt pk[H_MAX_TX];

	memcpy(pk, a->n.tx, n * sizeof(pk[0]));
	a->n.ntx = 0;
	for (i = n; i > 1; i--) {
		size_t j = (size_t)rnd(i);
		struct h_pkt t;

		if (rnd(3))
			continue;
		t = pk[i - 1];
		pk[i - 1] = pk[j];
		pk[j] = t;
	}
	for (i = 0; i < n; i++) {
		unsigned int copies = rnd(20) == 0 ? 0 : rnd(25) == 0 ? 2 : 1, k;

		if (rnd(12) == 0)
			pk[i].data[rnd(WEFT_WIRE_HDR_SIZE)] ^= (uint8_t)(1u << rnd(8));
		for (k = 0; k < copies; k++)
			if (weft_core_receive(b->n.c, pk[i].data, pk[i].len) != 0)
				break;          /* backpressure: the fabric would drop */
	}
}

static void consume(struct cnode *c)
{
	unsigned int w;

	for (w = 0; w < 2; w++) {
		uint64_t cnt = h_db_r(&c->n, w, WEFT_DB_RECV_COUNT);

		if (cnt > c->returned[w] && rnd(2)) {
			h_db_w(&c->n, w, WEFT_DB_RETURN_SLOTS, cnt - c->returned[w]);
			c->returned[w] = (uint32_t)cnt;
		}
	}
}

static void disrupt(struct cnode *c)
{
	unsigned int w = (unsigned int)rnd(2);
	struct weft_event ev;

	switch (rnd(4)) {
	case 0:
		h_reg_w(&c->n, WEFT_REG_CMD_CANCEL_RCXT, rnd(NRCXT));
		break;
	case 1: {
		uint32_t r = (uint32_t)rnd(NRCXT);

		h_reg_w(&c->n, WEFT_REG_CMD_RELEASE_RCXT, r);
		h_acquire(&c->n, r, r % 2, (uint16_t)h_reg_r(&c->n, WEFT_REG_RECOVERY_COUNT));
		break;
	}
	case 2:
		reopen(c, w);
		break;
	default:
		if (rnd(4))
			break;
		h_reg_w(&c->n, WEFT_REG_RECOVER, WEFT_RECOVER_MAGIC);
		reopen(c, 0);
		reopen(c, 1);
		acquire_all(c);
		break;
	}
	while (h_evq_next(&c->n, &ev))
		;
	h_reg_w(&c->n, WEFT_REG_INT_READY, 0);
	h_reg_w(&c->n, WEFT_REG_INT_READY, 1);
}

int main(void)
{
	struct cnode a, b;
	unsigned int i, k;

	h_section("test_chaos: random traffic, faults and disruptions between two correctly set-up adapters");
	cnode_init(&a, 1);
	cnode_init(&b, 2);
	for (i = 0; i < STEPS; i++) {
		switch (rnd(8)) {
		case 0:
		case 1:
			post(&a, &b);
			break;
		case 2:
			post(&b, &a);
			break;
		case 3:
			consume(rnd(2) ? &a : &b);
			break;
		case 4:
			if (rnd(16) == 0)
				disrupt(rnd(2) ? &a : &b);
			break;
		default:
			break;
		}
		for (k = 0; k < 2; k++) {
			if (h_db_r(&a.n, k, WEFT_DB_STATE) != WEFT_WIN_VALID)
				reopen(&a, k);
			if (h_db_r(&b.n, k, WEFT_DB_STATE) != WEFT_WIN_VALID)
				reopen(&b, k);
		}
		weft_core_poll(a.n.c, (unsigned int)(1 + rnd(16)));
		weft_core_poll(b.n.c, (unsigned int)(1 + rnd(16)));
		wire(&a, &b);
		wire(&b, &a);
		check_writes(&a);
		check_writes(&b);
	}
	/* Traffic stops: everything settles. */
	for (k = 0; k < 200; k++) {
		bool more = weft_core_poll(a.n.c, 64) | weft_core_poll(b.n.c, 64);

		consume(&a);
		consume(&b);
		more |= a.n.ntx || b.n.ntx;
		h_deliver(&a.n, &b.n);
		h_deliver(&b.n, &a.n);
		check_writes(&a);
		check_writes(&b);
		if (!more)
			break;
	}
	CHECK(k < 200, "both adapters go idle");
	CHECK_EQ(h_reg_r(&a.n, WEFT_REG_LIVE_TASK_VIEW), 0, "no task left on a");
	CHECK_EQ(h_reg_r(&b.n, WEFT_REG_LIVE_TASK_VIEW), 0, "no task left on b");
	CHECK_EQ(violations, 0, "writes outside the allowed regions");
	t_diag("%u steps; a: tx %llu rx %llu fatal %llu guest errors %llu; b: tx %llu rx %llu fatal %llu",
	       STEPS,
	       (unsigned long long)h_cnt(&a.n, WEFT_CNT_TX_PACKETS),
	       (unsigned long long)h_cnt(&a.n, WEFT_CNT_RX_PACKETS),
	       (unsigned long long)h_cnt(&a.n, WEFT_CNT_WINDOW_FATAL),
	       (unsigned long long)h_cnt(&a.n, WEFT_CNT_GUEST_ERRORS),
	       (unsigned long long)h_cnt(&b.n, WEFT_CNT_TX_PACKETS),
	       (unsigned long long)h_cnt(&b.n, WEFT_CNT_RX_PACKETS),
	       (unsigned long long)h_cnt(&b.n, WEFT_CNT_WINDOW_FATAL));
	t_diag("completions: a %llu, b %llu; drops on b: tid %llu dup %llu rcxt %llu tce %llu",
	       (unsigned long long)h_cnt(&a.n, WEFT_CNT_RX_COMPLETIONS),
	       (unsigned long long)h_cnt(&b.n, WEFT_CNT_RX_COMPLETIONS),
	       (unsigned long long)h_drops(&b.n, WEFT_R_TID_STALE),
	       (unsigned long long)h_drops(&b.n, WEFT_R_DUPLICATE),
	       (unsigned long long)(h_drops(&b.n, WEFT_R_RCXT_INVALID) +
				    h_drops(&b.n, WEFT_R_RCXT_FOREIGN) + h_drops(&b.n, WEFT_R_RCXT_KEY)),
	       (unsigned long long)(h_drops(&b.n, WEFT_R_TCE_KEY) + h_drops(&b.n, WEFT_R_TCE_OWNER) +
				    h_drops(&b.n, WEFT_R_TCE_BOUNDS)));
	h_fini(&a.n);
	h_fini(&b.n);
	return h_end();
}
