/* SPDX-License-Identifier: MIT */
/* Fake-ops harness for the core unit tests (see harness.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

static uint64_t h_mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void h_spin(uint64_t iterations)
{
	volatile uint64_t x = 0;

	while (iterations--)
		x++;
}

/* Busy-wait about ns nanoseconds without reading the clock (which can
 * cost a microsecond here): a loop calibrated once, at its fastest of
 * five runs, so that a preemption during calibration cannot shorten it. */
void h_spin_ns(uint64_t ns)
{
	static double per_ns;
	unsigned int i;

	if (!per_ns) {
		for (i = 0; i < 5; i++) {
			uint64_t t0 = h_mono_ns(), t;

			h_spin(2000000);
			t = h_mono_ns() - t0;
			if (t && 2000000.0 / (double)t > per_ns)
				per_ns = 2000000.0 / (double)t;
		}
	}
	h_spin((uint64_t)(per_ns * (double)ns));
}

static int op_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
	struct h_node *n = opaque;

	if (addr < H_MEM_BASE || addr - H_MEM_BASE > H_MEM_SIZE ||
	    len > H_MEM_SIZE - (addr - H_MEM_BASE))
		return -1;
	memcpy(buf, n->mem + (addr - H_MEM_BASE), len);
	n->dma_reads++;
	if (n->dma_read_ns)
		h_spin_ns(n->dma_read_ns);
	return 0;
}

static int op_dma_write(void *opaque, uint64_t addr, const void *buf, size_t len)
{
	struct h_node *n = opaque;

	if (addr < H_MEM_BASE || addr - H_MEM_BASE > H_MEM_SIZE ||
	    len > H_MEM_SIZE - (addr - H_MEM_BASE))
		return -1;
	memcpy(n->mem + (addr - H_MEM_BASE), buf, len);
	if (n->nwlog < H_MAX_WLOG) {
		n->wlog[n->nwlog].addr = addr;
		n->wlog[n->nwlog].len = len;
		n->nwlog++;
	}
	return 0;
}

static void op_irq(void *opaque, unsigned int vector)
{
	struct h_node *n = opaque;

	if (n->nirq < H_MAX_IRQ) {
		n->irq_wlog[n->nirq] = n->nwlog;
		n->irq[n->nirq++] = vector;
	}
}

static int op_xmit(void *opaque, const void *pkt, size_t len)
{
	struct h_node *n = opaque;

	if (n->xmit_rc)
		return n->xmit_rc;
	if (n->ntx >= H_MAX_TX)
		return -EAGAIN;
	if (len > WEFT_WIRE_MAX_FRAME) {
		CHECK(0, "core transmitted %zu bytes, more than a frame", len);
		return -EAGAIN;
	}
	memcpy(n->tx[n->ntx].data, pkt, len);
	n->tx[n->ntx].len = len;
	n->ntx++;
	if (pkt == n->own->data)
		n->own_xmits++;
	return 0;
}

static void *op_tx_buf(void *opaque)
{
	struct h_node *n = opaque;

	n->tx_bufs++;
	return n->own_tx ? n->own->data : NULL;
}

static void op_rx_release(void *opaque, const void *pkt)
{
	struct h_node *n = opaque;

	if (n->nreleased < sizeof(n->released) / sizeof(n->released[0]))
		n->released[n->nreleased] = pkt;
	n->nreleased++;
}

static uint64_t op_now(void *opaque)
{
	struct h_node *n = opaque;

	return n->now;
}

static void op_kick(void *opaque)
{
	struct h_node *n = opaque;

	n->kicks++;
}

static void op_trace(void *opaque, const struct weft_trace *t)
{
	struct h_node *n = opaque;

	switch (t->kind) {
	case WEFT_TR_GUEST_ERROR:
		n->guest_errors++;
		break;
	case WEFT_TR_REG_READ:
	case WEFT_TR_REG_WRITE:
	case WEFT_TR_SRAM_READ:
	case WEFT_TR_SRAM_WRITE:
	case WEFT_TR_DB_READ:
	case WEFT_TR_DB_WRITE:
		n->reg_traces++;
		if (t->name)
			n->named_reg_traces++;
		break;
	default:
		break;
	}
}

static const struct weft_core_ops h_ops = {
	.dma_read = op_dma_read,
	.dma_write = op_dma_write,
	.irq = op_irq,
	.xmit = op_xmit,
	.now_ns = op_now,
	.kick = op_kick,
	.trace = op_trace,
	.tx_buf = op_tx_buf,
	.rx_release = op_rx_release,
};

void h_init(struct h_node *n, uint16_t id, uint32_t nr_windows, uint32_t nr_rcxt,
	    uint32_t handlers, uint32_t rxq)
{
	struct weft_core_config cfg = {
		.node_id = id, .nr_windows = nr_windows, .nr_rcxt = nr_rcxt,
		.nr_handlers = handlers, .rx_queue_len = rxq,
	};
	char err[128] = "";

	memset(n, 0, sizeof(*n));
	n->id = id;
	n->mem = calloc(1, H_MEM_SIZE);
	n->wlog = calloc(H_MAX_WLOG, sizeof(*n->wlog));
	n->tx = calloc(H_MAX_TX, sizeof(*n->tx));
	n->own = calloc(1, sizeof(*n->own));
	n->brk = H_MEM_BASE + 0x10000;
	n->c = weft_core_new(&cfg, &h_ops, n, err, sizeof(err));
	if (!n->mem || !n->wlog || !n->tx || !n->own || !n->c)
		t_bail("cannot create test node: %s", err);
	/* Link up raises a LINK event on handler 0: consume it. */
	weft_core_set_link(n->c, true);
	h_reg_w(n, WEFT_REG_INT_READY, 0);
	n->nirq = 0;
}

void h_fini(struct h_node *n)
{
	weft_core_free(n->c);
	free(n->mem);
	free(n->wlog);
	free(n->tx);
	free(n->own);
	memset(n, 0, sizeof(*n));
}

void h_pair_init(struct h_pair *g, const struct h_pair_cfg *cfg)
{
	h_init(&g->a, 1, cfg->windows, cfg->rcxts, cfg->handlers, 0);
	h_init(&g->b, 2, cfg->windows, cfg->rcxts, cfg->handlers, 0);
	if (cfg->evq) {
		h_evq_setup(&g->a);
		h_evq_setup(&g->b);
	}
	CHECK_EQ(h_open(&g->a, 0, cfg->job, cfg->slog2, cfg->rlog2, cfg->quantum), WEFT_CMD_OK,
		 "open a");
	CHECK_EQ(h_open(&g->b, 0, cfg->job, cfg->slog2, cfg->rlog2, cfg->quantum), WEFT_CMD_OK,
		 "open b");
	h_tce_table(&g->a, 0, cfg->tce_entries, 12, cfg->job);
	h_tce_table(&g->b, 0, cfg->tce_entries, 12, cfg->job);
	g->abuf = h_alloc(&g->a, cfg->bufsz, 4096);
	g->bbuf = h_alloc(&g->b, cfg->bufsz, 4096);
	g->apvo = h_map(&g->a, 0, 0, cfg->key_a, g->abuf, cfg->bufsz);
	g->bpvo = h_map(&g->b, 0, 0, cfg->key_b, g->bbuf, cfg->bufsz);
}

void h_pair_fini(struct h_pair *g)
{
	h_fini(&g->a);
	h_fini(&g->b);
}

uint64_t h_alloc(struct h_node *n, uint64_t size, uint64_t align)
{
	uint64_t a = (n->brk + align - 1) & ~(align - 1);

	if (a + size > H_MEM_BASE + H_MEM_SIZE)
		t_bail("test guest memory exhausted");
	n->brk = a + size;
	memset(h_ptr(n, a), 0, size);
	return a;
}

void *h_ptr(struct h_node *n, uint64_t addr)
{
	return n->mem + (addr - H_MEM_BASE);
}

uint64_t h_reg_r(struct h_node *n, uint64_t off)
{
	return weft_core_reg_read(n->c, off, 8);
}

void h_reg_w(struct h_node *n, uint64_t off, uint64_t val)
{
	weft_core_reg_write(n->c, off, val, 8);
}

uint64_t h_cnt(struct h_node *n, unsigned int counter)
{
	return weft_core_reg_read(n->c, WEFT_REG_CNT(counter), 8);
}

uint64_t h_drops(struct h_node *n, unsigned int reason)
{
	return h_cnt(n, WEFT_CNT_DROP(reason));
}

void h_db_w(struct h_node *n, unsigned int w, uint64_t op, uint64_t val)
{
	weft_core_db_write(n->c, (uint64_t)w * WEFT_DB_PAGE_SIZE + op, val, 8);
}

uint64_t h_db_r(struct h_node *n, unsigned int w, uint64_t op)
{
	return weft_core_db_read(n->c, (uint64_t)w * WEFT_DB_PAGE_SIZE + op, 8);
}

void h_lmt_read(struct h_node *n, unsigned int w, struct weft_lmt *l)
{
	uint64_t p[sizeof(*l) / 8];
	unsigned int i;

	for (i = 0; i < sizeof(*l) / 8; i++)
		p[i] = weft_core_sram_read(n->c, WEFT_SRAM_LMT_OFF(w) + 8 * i, 8);
	memcpy(l, p, sizeof(*l));
}

void h_lmt_write(struct h_node *n, unsigned int w, const struct weft_lmt *l)
{
	uint64_t p[sizeof(*l) / 8];
	unsigned int i;

	memcpy(p, l, sizeof(*l));
	for (i = 0; i < sizeof(*l) / 8; i++)
		weft_core_sram_write(n->c, WEFT_SRAM_LMT_OFF(w) + 8 * i, p[i], 8);
}

void h_rcxt_read(struct h_node *n, uint32_t r, struct weft_rcxt *x)
{
	uint64_t p[sizeof(*x) / 8];
	unsigned int i;

	for (i = 0; i < sizeof(*x) / 8; i++)
		p[i] = weft_core_sram_read(n->c, WEFT_SRAM_RCXT_OFF(r) + 8 * i, 8);
	memcpy(x, p, sizeof(*x));
}

void h_lmt_prepare(struct h_node *n, unsigned int w, uint32_t key, unsigned int slog2,
		   unsigned int rlog2, uint32_t quantum, struct weft_lmt *l)
{
	memset(l, 0, sizeof(*l));
	n->sfifo[w] = h_alloc(n, (uint64_t)WEFT_FRAME_SIZE << slog2, WEFT_FRAME_SIZE);
	n->rfifo[w] = h_alloc(n, (uint64_t)WEFT_FRAME_SIZE << rlog2, WEFT_FRAME_SIZE);
	n->sprod[w] = 0;
	n->rcons[w] = 0;
	l->window_id = w;
	l->window_key = key;
	l->send_fifo_real_address = n->sfifo[w];
	l->send_fifo_size = slog2;
	l->send_mask = (1u << slog2) - 1;
	l->recv_fifo_real_address = n->rfifo[w];
	l->recv_fifo_size = rlog2;
	l->recv_mask = (1u << rlog2) - 1;
	l->send_quanta_size = quantum;
	l->int_vect_data = 0;
}

uint64_t h_cmd(struct h_node *n, uint64_t reg, uint64_t val)
{
	h_reg_w(n, reg, val);
	return h_reg_r(n, WEFT_REG_CMD_STATUS);
}

uint64_t h_open(struct h_node *n, unsigned int w, uint32_t key, unsigned int slog2,
		unsigned int rlog2, uint32_t quantum)
{
	struct weft_lmt l;

	h_lmt_prepare(n, w, key, slog2, rlog2, quantum, &l);
	h_lmt_write(n, w, &l);
	return h_cmd(n, WEFT_REG_CMD_OPEN_WINDOW, w);
}

uint64_t h_acquire(struct h_node *n, uint32_t r, unsigned int w, uint16_t key)
{
	return h_cmd(n, WEFT_REG_CMD_ACQUIRE_RCXT, WEFT_ACQ(r, w, key));
}

uint64_t h_frame_addr(struct h_node *n, unsigned int w, uint32_t idx)
{
	struct weft_lmt l;

	h_lmt_read(n, w, &l);
	return n->sfifo[w] + (uint64_t)(idx & l.send_mask) * WEFT_FRAME_SIZE;
}

/* The next send frame of window w, zeroed, with its header line's type,
 * destination and (ignored by the adapter) key filled in. */
static struct weft_send_line *next_frame(struct h_node *n, unsigned int w, uint8_t type,
					 uint16_t dest, uint16_t dwin, uint32_t key)
{
	struct weft_send_line *s = h_ptr(n, h_frame_addr(n, w, n->sprod[w]++));

	memset(s, 0, sizeof(*s));
	s->hdr.dest_node = dest;
	s->hdr.dest_window = dwin;
	s->hdr.type = type;
	s->hdr.key = key;
	return s;
}

void h_put_fifo(struct h_node *n, unsigned int w, uint16_t dest, uint16_t dwin,
		const void *payload, uint16_t len, uint32_t forged_key)
{
	struct weft_send_line *s = next_frame(n, w, WEFT_SF_FIFO, dest, dwin, forged_key);

	s->hdr.length = len;
	if (len)
		memcpy((uint8_t *)s + WEFT_FRAME_HDR_SIZE, payload,
		       len > WEFT_MAX_PAYLOAD ? WEFT_MAX_PAYLOAD : len);
}

void h_put_rdma(struct h_node *n, unsigned int w, uint8_t type, uint16_t dest,
		uint16_t dwin, const struct weft_rdma_req *q)
{
	next_frame(n, w, type, dest, dwin, 0xdeadbeef)->rdma = *q;
}

void h_put_put(struct h_node *n, unsigned int w, uint16_t dest, uint16_t dwin,
	       const struct weft_rdma_req *q, const void *payload, uint16_t len)
{
	struct weft_send_line *s = next_frame(n, w, WEFT_SF_PUT, dest, dwin, 0xdeadbeef);

	s->rdma = *q;
	s->hdr.length = len;
	memcpy((uint8_t *)s + WEFT_FRAME_HDR_SIZE, payload,
	       len > WEFT_MAX_PAYLOAD ? WEFT_MAX_PAYLOAD : len);
}

void h_start(struct h_node *n, unsigned int w, uint32_t frames)
{
	h_db_w(n, w, WEFT_DB_START_TRANSMIT, frames);
}

void h_send_line(struct h_node *n, unsigned int w, uint32_t idx, struct weft_send_line *s)
{
	memcpy(s, h_ptr(n, h_frame_addr(n, w, idx)), sizeof(*s));
}

void h_recv_hdr(struct h_node *n, unsigned int w, uint32_t idx, struct weft_recv_hdr *rh)
{
	struct weft_lmt l;

	h_lmt_read(n, w, &l);
	memcpy(rh, h_ptr(n, n->rfifo[w] + (uint64_t)(idx & l.recv_mask) * WEFT_FRAME_SIZE),
	       sizeof(*rh));
}

const uint8_t *h_recv_payload(struct h_node *n, unsigned int w, uint32_t idx)
{
	struct weft_lmt l;

	h_lmt_read(n, w, &l);
	return h_ptr(n, n->rfifo[w] + (uint64_t)(idx & l.recv_mask) * WEFT_FRAME_SIZE +
		     WEFT_FRAME_HDR_SIZE);
}

void h_tce_table(struct h_node *n, unsigned int t, uint32_t nr, uint32_t shift, uint32_t job)
{
	uint64_t base = h_alloc(n, (uint64_t)nr * 8, 4096);

	h_reg_w(n, WEFT_REG_TCE_BASE(t), base);
	h_reg_w(n, WEFT_REG_TCE_CFG(t), WEFT_TCE_CFG(nr, shift));
	h_reg_w(n, WEFT_REG_TCE_OWNER(t), WEFT_TCE_OWNER_VALID | job);
}

void h_set_tce(struct h_node *n, unsigned int t, uint32_t idx, uint64_t tce)
{
	uint64_t base = h_reg_r(n, WEFT_REG_TCE_BASE(t));

	memcpy(h_ptr(n, base + (uint64_t)idx * 8), &tce, 8);
}

uint64_t h_map(struct h_node *n, unsigned int t, uint32_t first, uint32_t key17,
	       uint64_t addr, uint64_t len)
{
	uint32_t shift = WEFT_TCE_CFG_SHIFT(h_reg_r(n, WEFT_REG_TCE_CFG(t)));
	uint64_t page = 1ull << shift, start = addr & ~(page - 1);
	uint64_t end = addr + len, a;
	uint32_t idx = first;
	uint32_t key22 = (key17 << WEFT_PVO_TABLE_LEN) | t;

	for (a = start; a < end; a += page)
		h_set_tce(n, t, idx++, weft_tce_make(key22, a >> shift));
	return weft_pvo_make(key17, t, ((uint64_t)first << shift) + (addr - start));
}

void h_evq_setup(struct h_node *n)
{
	n->evq = h_alloc(n, sizeof(struct weft_event) << H_EVQ_LOG2, 64);
	h_reg_w(n, WEFT_REG_EVQ_BASE, n->evq);
	h_reg_w(n, WEFT_REG_EVQ_SIZE, H_EVQ_LOG2);
	n->evq_seen = 0;
}

bool h_evq_next(struct h_node *n, struct weft_event *ev)
{
	uint64_t prod = h_reg_r(n, WEFT_REG_EVQ_PROD);

	if (n->evq_seen >= prod)
		return false;
	memcpy(ev, h_ptr(n, n->evq + (n->evq_seen & ((1u << H_EVQ_LOG2) - 1)) * sizeof(*ev)),
	       sizeof(*ev));
	n->evq_seen++;
	h_reg_w(n, WEFT_REG_EVQ_CONS, n->evq_seen);
	return true;
}

unsigned int h_poll(struct h_node *n, unsigned int budget)
{
	unsigned int i;

	for (i = 0; i < 100000; i++)
		if (!weft_core_poll(n->c, budget))
			return i + 1;
	CHECK(0, "core never became idle");
	return i;
}

size_t h_deliver(struct h_node *from, struct h_node *to)
{
	size_t i, n = from->ntx;

	for (i = 0; i < n; i++) {
		while (weft_core_receive(to->c, from->tx[i].data, from->tx[i].len) == -EAGAIN)
			weft_core_poll(to->c, 64);
	}
	from->ntx = 0;
	return n;
}

void h_run2(struct h_node *a, struct h_node *b)
{
	unsigned int i;

	for (i = 0; i < 100000; i++) {
		bool ma = weft_core_poll(a->c, 64);
		bool mb;
		size_t d = h_deliver(a, b);

		mb = weft_core_poll(b->c, 64);
		d += h_deliver(b, a);
		if (!ma && !mb && d == 0 && !weft_core_poll(a->c, 64) && a->ntx == 0)
			return;
	}
	CHECK(0, "two-node run never became idle");
}

const struct weft_wire_hdr *h_txhdr(struct h_node *n, size_t i)
{
	return (const struct weft_wire_hdr *)n->tx[i].data;
}
