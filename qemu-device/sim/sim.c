/* SPDX-License-Identifier: MIT */
/*
 * Weft sim, layer 1: nodes, guest memory, fabric glue, virtual clock and
 * the run loop.  See weft_sim.h and docs/sim.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

/* ---- deterministic random numbers (splitmix64) ------------------------ */

uint64_t sim_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- core ops ----------------------------------------------------------- */

static bool mem_range_ok(const struct weft_sim *s, uint64_t addr, size_t len)
{
	return addr <= s->mem_size && len <= s->mem_size - addr;
}

/* dma_at with a DMA hook: out of line, so that the common path (every
 * payload and TCE access of the core, about six a packet) needs no stack
 * frame. */
static __attribute__((noinline)) uint8_t *dma_hooked(struct sim_node *n, uint64_t addr,
						     size_t len, bool is_write)
{
	struct weft_sim *s = n->sim;

	s->dma_hook(s->dma_hook_opaque, n->id, addr, len, is_write);
	return n->mem + addr;
}

/* The host address of a DMA of len bytes at guest address addr, after
 * the DMA hook has seen it; NULL when the range is not all guest memory. */
static uint8_t *dma_at(struct sim_node *n, uint64_t addr, size_t len, bool is_write)
{
	const struct weft_sim *s = n->sim;

	if (!mem_range_ok(s, addr, len))
		return NULL;
	if (s->dma_hook)
		return dma_hooked(n, addr, len, is_write);
	return n->mem + addr;
}

static int op_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
	const uint8_t *p = dma_at(opaque, addr, len, false);

	if (!p)
		return -1;
	memcpy(buf, p, len);
	return 0;
}

static int op_dma_write(void *opaque, uint64_t addr, const void *buf, size_t len)
{
	uint8_t *p = dma_at(opaque, addr, len, true);

	if (!p)
		return -1;
	memcpy(p, buf, len);
	return 0;
}

static void *op_dma_map(void *opaque, uint64_t addr, size_t len, bool write)
{
	return dma_at(opaque, addr, len, write);
}

static void op_irq(void *opaque, unsigned int vector)
{
	struct sim_node *n = opaque;

	if (vector < 32)
		n->irq_pending |= 1u << vector;
	n->kicked = true;       /* serviced at the next round, also when raised by a command */
}

/* The core builds its packets in a fabric frame, which the fabric then
 * queues without a copy. */
static void *op_tx_buf(void *opaque)
{
	struct sim_node *n = opaque;

	if (!n->tx_frame)
		n->tx_frame = weft_fabric_frame_alloc(n->sim->fabric);
	return n->tx_frame;
}

static int op_xmit(void *opaque, const void *pkt, size_t len)
{
	struct sim_node *n = opaque;
	struct weft_sim *s = n->sim;
	int rc;

	if (pkt != n->tx_frame)
		return weft_fabric_submit(s->fabric, (uint16_t)n->id, pkt, len, s->now);
	rc = weft_fabric_submit_frame(s->fabric, (uint16_t)n->id, n->tx_frame, len, s->now);
	if (rc != -EAGAIN)
		n->tx_frame = NULL;
	return rc;
}

/* A frame the core kept (fabric_deliver) is done with. */
static void op_rx_release(void *opaque, const void *pkt)
{
	struct sim_node *n = opaque;

	weft_fabric_frame_release(n->sim->fabric, pkt);
}

static uint64_t op_now(void *opaque)
{
	struct sim_node *n = opaque;

	return n->sim->now;
}

static void op_kick(void *opaque)
{
	struct sim_node *n = opaque;

	n->kicked = true;
}

static void op_timer_arm(void *opaque, uint64_t deadline)
{
	struct sim_node *n = opaque;

	n->timer = deadline;
}

static void op_trace(void *opaque, const struct weft_trace *ev)
{
	struct sim_node *n = opaque;
	struct weft_sim *s = n->sim;

	if (s->cfg.trace)
		s->cfg.trace(s->cfg.trace_opaque, n->id, ev);
}

static const struct weft_core_ops sim_core_ops = {
	.dma_read = op_dma_read,
	.dma_write = op_dma_write,
	.irq = op_irq,
	.xmit = op_xmit,
	.now_ns = op_now,
	.kick = op_kick,
	.timer_arm = op_timer_arm,
	.trace = op_trace,
	.dma_map = op_dma_map,
	.tx_buf = op_tx_buf,
	.rx_release = op_rx_release,
};

static int fabric_deliver(void *opaque, uint16_t dst, const void *frame, size_t len)
{
	struct weft_sim *s = opaque;
	struct sim_node *n;
	int rc;

	if (dst >= s->nr_nodes)
		return 0;
	n = &s->node[dst];
	n->kicked = true;
	/* The core keeps the fabric's frame until it has processed it
	 * (op_rx_release gives it back). */
	weft_fabric_frame_hold(frame);
	rc = weft_core_receive_shared(n->core, frame, len);
	if (rc == 1)
		return 0;
	weft_fabric_frame_release(s->fabric, frame);
	return rc;
}

/* ---- life cycle ---------------------------------------------------------- */

static void set_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

struct weft_sim *weft_sim_new(const struct weft_sim_config *cfg, char *err, size_t errlen)
{
	struct weft_sim *s;
	struct weft_fabric_faults ft;
	unsigned int i;

	if (!cfg || cfg->nr_nodes < 1 || cfg->nr_nodes > WEFT_SIM_MAX_NODES) {
		set_err(err, errlen, "nr_nodes must be 1..64");
		return NULL;
	}
	if (cfg->adapters && (cfg->adapters > cfg->nr_nodes || cfg->nr_nodes % cfg->adapters)) {
		set_err(err, errlen, "nr_nodes must be a multiple of adapters");
		return NULL;
	}
	if (cfg->mem_size && (cfg->mem_size < (4ull << 20) || (cfg->mem_size & 0xfff))) {
		set_err(err, errlen, "mem_size must be >= 4 MiB and a multiple of 4 KiB");
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		set_err(err, errlen, "out of memory");
		return NULL;
	}
	s->cfg = *cfg;
	s->nr_nodes = cfg->nr_nodes;
	s->adapters = cfg->adapters ? cfg->adapters : 1;
	s->mem_size = cfg->mem_size ? cfg->mem_size : WEFT_SIM_DEF_MEM;
	s->tick_ns = cfg->tick_ns ? cfg->tick_ns : WEFT_SIM_DEF_TICK_NS;
	s->budget = cfg->poll_budget ? cfg->poll_budget : WEFT_SIM_DEF_BUDGET;
	s->reboot_ns = cfg->reboot_ns ? cfg->reboot_ns : 1000000u;
	s->tce_64k = cfg->tce_64k_tables == WEFT_SIM_NO_64K ? 0 :
		     cfg->tce_64k_tables ? cfg->tce_64k_tables : WEFT_SLOT_TABLES_64K_DEF;
	s->fabric = weft_fabric_new(cfg->seed ^ 0x5157u,
				    cfg->max_queued ? cfg->max_queued : WEFT_SIM_DEF_QUEUED,
				    cfg->capture_frames);
	if (!s->fabric) {
		set_err(err, errlen, "cannot create the fabric");
		free(s);
		return NULL;
	}
	ft = cfg->faults;
	if (!ft.routes)
		ft.routes = 1;
	weft_fabric_set_faults(s->fabric, &ft);
	for (i = 0; i < s->nr_nodes; i++) {
		struct sim_node *n = &s->node[i];
		struct weft_core_config cc = {
			.node_id = (uint16_t)i,
			.nr_windows = cfg->nr_windows ? cfg->nr_windows : WEFT_DEF_WINDOWS,
			.nr_rcxt = cfg->nr_rcxt ? cfg->nr_rcxt : WEFT_SIM_DEF_RCXT,
			.nr_handlers = cfg->nr_handlers ? cfg->nr_handlers : 1,
			.rx_queue_len = cfg->rx_queue_len,
			.rx_overlap = cfg->rx_overlap,
			.verbs_qps = cfg->verbs_qps,
			.verbs_cqs = cfg->verbs_cqs,
			.verbs_pds = cfg->verbs_pds,
			.verbs_tpt = cfg->verbs_tpt,
			.match_store = cfg->match_store,
			.umb_size = cfg->umb_size,
			.umb_frag = cfg->umb_frag,
			.matchers = cfg->matchers,
			.match_step = cfg->match_step,
			.rndv_threshold = cfg->rndv_threshold,
			.match_epoch = (uint32_t)(cfg->seed * 0x2545f491u),
		};
		struct weft_core_ops ops = sim_core_ops;
		char cerr[128] = "";

		n->sim = s;
		n->id = i;
		n->host = &s->node[i - i % s->adapters];
		n->rng = cfg->seed * 0x100000001b3ull + i + 1;
		/* The adapter's stored key epoch at power-on: any value. */
		cc.key_epoch = sim_rand(&n->rng) % 100000u;
		n->mem = n->host == n ? calloc(1, s->mem_size) : n->host->mem;
		/* Without a trace callback the cores build no trace events. */
		if (!cfg->trace)
			ops.trace = NULL;
		n->cc = cc;
		n->ops = ops;
		n->core = n->mem ? weft_core_new(&cc, &ops, n, cerr, sizeof(cerr)) : NULL;
		if (!n->core) {
			if (err && errlen)
				snprintf(err, errlen, "node %u: %s", i,
					 n->mem ? cerr : "out of guest memory");
			weft_sim_free(s);
			return NULL;
		}
		if (weft_fabric_attach(s->fabric, (uint16_t)i) != 0) {
			set_err(err, errlen, "fabric attach failed");
			weft_sim_free(s);
			return NULL;
		}
		weft_core_set_link(n->core, true);
	}
	for (i = 0; i < s->nr_nodes; i += s->adapters) {
		if (sim_drv_boot(s, &s->node[i]) != 0) {
			if (err && errlen)
				snprintf(err, errlen, "node %u: driver boot failed", i);
			weft_sim_free(s);
			return NULL;
		}
	}
	return s;
}

void weft_sim_free(struct weft_sim *s)
{
	unsigned int i;

	if (!s)
		return;
	for (i = 0; i < s->nr_nodes; i++) {
		struct sim_node *n = &s->node[i];

		/* The core gives back the frames it keeps. */
		weft_core_free(n->core);
		if (n->tx_frame)
			weft_fabric_frame_release(s->fabric, n->tx_frame);
		sim_drv_free(n);
		if (n->host != n)
			continue;
		free(n->ext);
		free(n->mem);
	}
	weft_fabric_free(s->fabric);
	free(s);
}

unsigned int weft_sim_nr_nodes(const struct weft_sim *s)
{
	return s->nr_nodes;
}

struct weft_fabric *weft_sim_fabric(struct weft_sim *s)
{
	return s->fabric;
}

int weft_sim_core_reload(struct weft_sim *s, unsigned int node, char *err, size_t errlen)
{
	struct sim_node *n;
	struct weft_core *fresh;
	uint8_t *buf;
	size_t len;
	int rc;

	if (node >= s->nr_nodes)
		return -EINVAL;
	n = &s->node[node];
	rc = weft_core_save(n->core, &buf, &len);
	if (rc)
		return rc;
	/* The adapter's non-volatile store: the epoch it had. */
	n->cc.key_epoch = weft_core_reg_read(n->core, WEFT_REG_KEY_EPOCH, 8);
	fresh = weft_core_new(&n->cc, &n->ops, n, err, errlen);
	if (!fresh) {
		free(buf);
		return -ENOMEM;
	}
	weft_core_set_link(fresh, true);
	rc = weft_core_load(fresh, buf, len, err, errlen);
	free(buf);
	if (rc) {
		weft_core_free(fresh);
		return rc;
	}
	/* The load armed the timer (n->timer) through the same hooks. */
	weft_core_free(n->core);
	n->core = fresh;
	return 0;
}

struct weft_core *weft_sim_core(struct weft_sim *s, unsigned int node)
{
	return node < s->nr_nodes ? s->node[node].core : NULL;
}

uint8_t *weft_sim_mem(struct weft_sim *s, unsigned int node)
{
	return node < s->nr_nodes ? s->node[node].mem : NULL;
}

uint64_t weft_sim_mem_size(const struct weft_sim *s)
{
	return s->mem_size;
}

void *weft_sim_ptr(struct weft_sim *s, unsigned int node, uint64_t addr, uint64_t len)
{
	if (node >= s->nr_nodes || !mem_range_ok(s, addr, len))
		return NULL;
	return s->node[node].mem + addr;
}

void weft_sim_set_dma_hook(struct weft_sim *s, weft_sim_dma_hook fn, void *opaque)
{
	s->dma_hook = fn;
	s->dma_hook_opaque = opaque;
}

/* ---- guest memory allocator (first fit over sorted extents) ------------ */

#define SIM_ALLOC_BASE  0x1000u /* address 0 is never handed out */

uint64_t sim_alloc(struct weft_sim *s, struct sim_node *n, uint64_t size, uint64_t align,
		   bool drv)
{
	uint64_t cand;
	size_t i;

	n = n->host;
	if (!align)
		align = 64;
	if (!size || (align & (align - 1)) || size > s->mem_size)
		return 0;
	cand = SIM_ALLOC_BASE;
	for (i = 0; i <= n->next; i++) {
		uint64_t limit = i < n->next ? n->ext[i].addr : s->mem_size;

		cand = (cand + align - 1) & ~(align - 1);
		if (cand <= limit && size <= limit - cand)
			break;
		if (i == n->next)
			return 0;
		cand = n->ext[i].addr + n->ext[i].size;
	}
	if (n->next == n->ncap) {
		size_t nc = n->ncap ? n->ncap * 2 : 64;
		struct sim_ext *e = realloc(n->ext, nc * sizeof(*e));

		if (!e)
			return 0;
		n->ext = e;
		n->ncap = nc;
	}
	memmove(&n->ext[i + 1], &n->ext[i], (n->next - i) * sizeof(*n->ext));
	n->ext[i].addr = cand;
	n->ext[i].size = size;
	n->ext[i].drv = drv;
	n->next++;
	memset(n->mem + cand, 0, size);
	return cand;
}

void sim_free_addr(struct sim_node *n, uint64_t addr)
{
	size_t i;

	n = n->host;
	for (i = 0; i < n->next; i++) {
		if (n->ext[i].addr == addr) {
			memmove(&n->ext[i], &n->ext[i + 1], (n->next - i - 1) * sizeof(*n->ext));
			n->next--;
			return;
		}
	}
}

void sim_free_drv(struct sim_node *n)
{
	size_t i, j = 0;

	n = n->host;
	for (i = 0; i < n->next; i++)
		if (!n->ext[i].drv)
			n->ext[j++] = n->ext[i];
	n->next = j;
}

uint64_t weft_sim_alloc(struct weft_sim *s, unsigned int node, uint64_t size, uint64_t align)
{
	if (node >= s->nr_nodes)
		return 0;
	return sim_alloc(s, &s->node[node], size, align, false);
}

void weft_sim_free_mem(struct weft_sim *s, unsigned int node, uint64_t addr)
{
	if (node < s->nr_nodes)
		sim_free_addr(&s->node[node], addr);
}

/* ---- clock and run loop -------------------------------------------------- */

uint64_t weft_sim_now(const struct weft_sim *s)
{
	return s->now;
}

void weft_sim_advance_to(struct weft_sim *s, uint64_t t)
{
	if (t > s->now)
		s->now = t;
}

/* Poll one node's core once; returns true if it has work left. */
bool sim_poll_node(struct weft_sim *s, struct sim_node *n)
{
	bool more;

	n->kicked = false;
	more = weft_core_poll(n->core, s->budget);
	n->busy = more;
	sim_drv_service(s, n);
	return more || n->kicked;
}

bool weft_sim_progress(struct weft_sim *s)
{
	bool work = false;
	uint64_t next;
	unsigned int i;

	if (weft_fabric_poll(s->fabric, s->now, fabric_deliver, s))
		work = true;
	for (i = 0; i < s->nr_nodes; i++) {
		struct sim_node *n = &s->node[i];

		if (n->timer && n->timer <= s->now) {
			n->timer = 0;
			weft_core_timer(n->core);
			work = true;
		}
		if (!n->kicked && !n->busy)
			continue;
		work = true;
		sim_poll_node(s, n);
	}
	if (work) {
		s->now += s->tick_ns;
		return true;
	}
	if (weft_fabric_parked(s->fabric))
		return true;
	next = weft_fabric_next_due(s->fabric);
	for (i = 0; i < s->nr_nodes; i++)
		if (s->node[i].timer && s->node[i].timer < next)
			next = s->node[i].timer;
	if (next == UINT64_MAX)
		return false;
	if (next > s->now)
		s->now = next;
	return true;
}

bool weft_sim_run_until(struct weft_sim *s, bool (*done)(void *arg), void *arg,
			uint64_t deadline)
{
	for (;;) {
		if (done && done(arg))
			return true;
		if (s->now >= deadline)
			return done ? done(arg) : false;
		if (!weft_sim_progress(s)) {
			if (!done)
				return true;
			s->now = deadline;
			return done(arg);
		}
	}
}

bool weft_sim_run_idle(struct weft_sim *s, uint64_t max_rounds)
{
	uint64_t r;

	for (r = 0; !max_rounds || r < max_rounds; r++)
		if (!weft_sim_progress(s))
			return true;
	return false;
}

/* ---- MMIO ------------------------------------------------------------------ */

uint64_t weft_sim_reg_read(struct weft_sim *s, unsigned int node, uint64_t off)
{
	return node < s->nr_nodes ? weft_core_reg_read(s->node[node].core, off, 8) : 0;
}

void weft_sim_reg_write(struct weft_sim *s, unsigned int node, uint64_t off, uint64_t val)
{
	if (node < s->nr_nodes)
		weft_core_reg_write(s->node[node].core, off, val, 8);
}

uint64_t weft_sim_sram_read(struct weft_sim *s, unsigned int node, uint64_t off)
{
	return node < s->nr_nodes ? weft_core_sram_read(s->node[node].core, off, 8) : 0;
}

void weft_sim_sram_write(struct weft_sim *s, unsigned int node, uint64_t off, uint64_t val)
{
	if (node < s->nr_nodes)
		weft_core_sram_write(s->node[node].core, off, val, 8);
}

uint64_t weft_sim_db_read(struct weft_sim *s, unsigned int node, unsigned int w, uint64_t off)
{
	if (node >= s->nr_nodes)
		return 0;
	return weft_core_db_read(s->node[node].core, (uint64_t)w * WEFT_DB_PAGE_SIZE + off, 8);
}

void weft_sim_db_write(struct weft_sim *s, unsigned int node, unsigned int w, uint64_t off,
		       uint64_t val)
{
	if (node < s->nr_nodes)
		weft_core_db_write(s->node[node].core, (uint64_t)w * WEFT_DB_PAGE_SIZE + off, val, 8);
}

uint64_t weft_sim_counter(struct weft_sim *s, unsigned int node, unsigned int c)
{
	if (c >= WEFT_CNT__COUNT)
		return 0;
	return weft_sim_reg_read(s, node, WEFT_REG_CNT(c));
}
