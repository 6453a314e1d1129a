/* SPDX-License-Identifier: MIT */
/*
 * Weft sim, layer 2: the sim driver.  It does what weft.ko does, through
 * the adapter's MMIO only (registers, SRAM aperture, doorbells) and the
 * node's guest memory, never through core internals.  See docs/sim.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

#define SIM_CMD_SPIN            1000u
#define SIM_CLOSE_ROUNDS        1000000u

static uint64_t rd(struct sim_node *n, uint64_t off)
{
	return weft_core_reg_read(n->core, off, 8);
}

static void wr(struct sim_node *n, uint64_t off, uint64_t val)
{
	weft_core_reg_write(n->core, off, val, 8);
}

/* Issue a privileged command and wait for its task to finish; returns
 * CMD_STATUS. */
static unsigned int drv_cmd(struct weft_sim *s, struct sim_node *n, uint64_t reg, uint64_t val)
{
	const uint64_t cmd_tasks = ((1ull << WEFT_NR_CMD_TASKS) - 1) << WEFT_CMD_TASK_BASE;
	unsigned int i;

	wr(n, reg, val);
	for (i = 0; i < SIM_CMD_SPIN && (rd(n, WEFT_REG_LIVE_TASK_VIEW) & cmd_tasks); i++)
		sim_poll_node(s, n);
	return (unsigned int)rd(n, WEFT_REG_CMD_STATUS);
}

static int status_errno(unsigned int st)
{
	switch (st) {
	case WEFT_CMD_OK: return 0;
	case WEFT_CMD_EBUSY: return -EBUSY;
	case WEFT_CMD_EINVAL: return -EINVAL;
	default: return -EIO;
	}
}

/* ---- boot ------------------------------------------------------------------ */

static uint64_t epoch_read(void *opaque)
{
	return rd(opaque, WEFT_REG_KEY_EPOCH);
}

static void epoch_next(void *opaque)
{
	wr(opaque, WEFT_REG_KEY_EPOCH_NEXT, WEFT_EPOCH_MAGIC);
}

static const struct weft_epoch_ops sim_epoch_ops = {
	.read = epoch_read,
	.next = epoch_next,
};

/* Program table t of adapter a with the guest's node-global ownership. */
static void tce_program(struct sim_node *a, unsigned int t)
{
	uint32_t slot = t / WEFT_SLOT_TABLES;
	uint32_t job = a->host->slot_job[slot];

	wr(a, WEFT_REG_TCE_BASE(t), a->tce_addr[t]);
	wr(a, WEFT_REG_TCE_CFG(t), WEFT_TCE_CFG(a->tce_nr[t], a->tce_shift[t]));
	wr(a, WEFT_REG_TCE_OWNER(t), job ? (job | WEFT_TCE_OWNER_VALID) : 0);
}

void sim_guest_adapters(const struct weft_sim *s, const struct sim_node *n,
			unsigned int *first, unsigned int *end)
{
	*first = n->host->id;
	*end = *first + s->adapters;
}

void sim_drv_free(struct sim_node *n)
{
	unsigned int t;

	for (t = 0; t < SIM_NR_TABLES; t++) {
		free(n->tce_used[t]);
		n->tce_used[t] = NULL;
	}
	free(n->mr);
	n->mr = NULL;
	n->nr_mr = n->mr_cap = 0;
	free(n->ring_ids);
	n->ring_ids = NULL;
	free(n->rcxt_owner);
	n->rcxt_owner = NULL;
}

/* One adapter of a guest whose node-global state is set up. */
static int adapter_boot(struct weft_sim *s, struct sim_node *n)
{
	uint64_t id, caps;
	unsigned int t, h, i;

	memset(n->win, 0, sizeof(n->win));
	n->rereg_on_fatal = s->cfg.rereg_on_fatal;
	wr(n, WEFT_REG_RESET, WEFT_RESET_MAGIC);
	for (i = 0; i < SIM_CMD_SPIN && sim_poll_node(s, n); i++)
		;
	id = rd(n, WEFT_REG_ID);
	if ((uint32_t)id != WEFT_ID_MAGIC)
		return -ENODEV;
	caps = rd(n, WEFT_REG_CAPS);
	n->nr_windows = WEFT_CAPS_WINDOWS(caps);
	n->nr_handlers = WEFT_CAPS_HANDLERS(caps);
	n->nr_rcxt = (uint32_t)rd(n, WEFT_REG_NR_RCXT);
	if (!n->nr_windows || !n->nr_handlers || n->nr_rcxt < WEFT_MIN_RCXT)
		return -ENODEV;
	n->gen++;

	/* Event queue and interrupt handlers. */
	n->evq_addr = sim_alloc(s, n, 32ull << WEFT_SIM_EVQ_LOG2, 64, true);
	if (!n->evq_addr)
		return -ENOMEM;
	n->evq_cons = 0;
	wr(n, WEFT_REG_EVQ_BASE, n->evq_addr);
	wr(n, WEFT_REG_EVQ_SIZE, WEFT_SIM_EVQ_LOG2);
	wr(n, WEFT_REG_EVQ_CONS, 0);
	wr(n, WEFT_REG_INT_CONFIG, n->nr_handlers);
	for (h = 0; h < n->nr_handlers; h++)
		wr(n, WEFT_REG_INT_READY, h);

	/*
	 * This adapter's copy of the 30 TCE tables of the 5 job slots,
	 * ownership invalid.  The sim has no IOMMU: an adapter's DMA address
	 * of a page is its guest address, so the entries are the same in
	 * every copy (weft.ko writes each adapter's own).
	 */
	for (t = 0; t < SIM_NR_TABLES; t++) {
		uint32_t shift = weft_slot_table_shift(t % WEFT_SLOT_TABLES, s->tce_64k);
		uint64_t nr = s->mem_size >> shift;

		if (nr < 1)
			nr = 1;
		if (nr > WEFT_TCE_MAX_ENTRIES)
			nr = WEFT_TCE_MAX_ENTRIES;
		n->tce_shift[t] = (uint8_t)shift;
		n->tce_nr[t] = (uint32_t)nr;
		n->tce_addr[t] = sim_alloc(s, n, nr * 8, 4096, true);
		if (!n->tce_addr[t])
			return -ENOMEM;
		tce_program(n, t);
	}

	/* rCxt pool, in id order. */
	n->ring_ids = malloc(n->nr_rcxt * sizeof(*n->ring_ids));
	n->rcxt_owner = calloc(n->nr_rcxt, sizeof(*n->rcxt_owner));
	if (!n->ring_ids || !n->rcxt_owner)
		return -ENOMEM;
	weft_ring_init(&n->ring, n->ring_ids, n->nr_rcxt);
	return 0;
}

int sim_drv_boot(struct weft_sim *s, struct sim_node *host)
{
	unsigned int a, end, t;
	int rc;

	sim_guest_adapters(s, host, &a, &end);
	for (; a < end; a++)
		sim_drv_free(&s->node[a]);
	sim_free_drv(host);
	memset(host->slot_job, 0, sizeof(host->slot_job));

	/*
	 * Node-global: one TCE-in-use map per table and one PVO key
	 * generator for the whole guest, on its first adapter's key epoch.
	 */
	for (t = 0; t < SIM_NR_TABLES; t++) {
		uint64_t nr = s->mem_size >> weft_slot_table_shift(t % WEFT_SLOT_TABLES, s->tce_64k);

		nr = nr < 1 ? 1 : nr > WEFT_TCE_MAX_ENTRIES ? WEFT_TCE_MAX_ENTRIES : nr;
		host->tce_used[t] = calloc(WEFT_TCE_MAP_WORDS(nr), sizeof(uint64_t));
		if (!host->tce_used[t])
			return -ENOMEM;
	}
	sim_guest_adapters(s, host, &a, &end);
	for (; a < end; a++) {
		rc = adapter_boot(s, &s->node[a]);
		if (rc)
			return rc;
	}
	weft_keygen_init(&host->keys, &sim_epoch_ops, host);
	if (!weft_keygen_take(&host->keys))
		return -EIO;
	return 0;
}

/* ---- interrupts and the event queue ----------------------------------------- */

void sim_drv_service(struct weft_sim *s, struct sim_node *n)
{
	uint64_t prod, mask = (1ull << WEFT_SIM_EVQ_LOG2) - 1;
	uint32_t pend;
	unsigned int h;

	(void)s;
	if (!n->evq_addr || (!n->irq_pending && rd(n, WEFT_REG_EVQ_PROD) == n->evq_cons))
		return;
	prod = rd(n, WEFT_REG_EVQ_PROD);
	while (n->evq_cons != prod) {
		struct weft_event ev;

		memcpy(&ev, n->mem + n->evq_addr + (n->evq_cons & mask) * sizeof(ev), sizeof(ev));
		if (ev.seq != (uint32_t)(n->evq_cons + 1))
			break;
		if (ev.type < SIM_NR_EVENT_TYPES)
			n->ev_count[ev.type]++;
		if (ev.type == WEFT_EV_VERBS_ASYNC) {
			n->async_obj = ev.rcxt;
			n->async_what = (uint32_t)ev.info;
		}
		if (ev.type == WEFT_EV_WINDOW_FATAL && ev.window < WEFT_MAX_WINDOWS)
			n->win[ev.window].fatals++;
		n->evq_cons++;
	}
	wr(n, WEFT_REG_EVQ_CONS, n->evq_cons);
	pend = n->irq_pending;
	n->irq_pending = 0;
	for (h = 0; h < n->nr_handlers && h < 32; h++)
		if (pend & (1u << h))
			wr(n, WEFT_REG_INT_READY, h);
}

uint64_t weft_sim_event_count(const struct weft_sim *s, unsigned int node, unsigned int type)
{
	if (node >= s->nr_nodes || type >= SIM_NR_EVENT_TYPES)
		return 0;
	return s->node[node].ev_count[type];
}

void weft_sim_last_async(const struct weft_sim *s, unsigned int node, uint32_t *obj,
			 uint32_t *what)
{
	*obj = node < s->nr_nodes ? s->node[node].async_obj : 0;
	*what = node < s->nr_nodes ? s->node[node].async_what : 0;
}

uint64_t weft_sim_window_fatals(const struct weft_sim *s, unsigned int node, unsigned int w)
{
	if (node >= s->nr_nodes || w >= WEFT_MAX_WINDOWS)
		return 0;
	return s->node[node].win[w].fatals;
}

/* ---- job slots and memory registration --------------------------------------- */

/*
 * Job slots and registrations are node-global (seed item 24): they live
 * in the guest's first adapter (n->host) and are programmed into every
 * adapter of the guest, so one PVO is valid through all of them.
 */
static int slot_of(struct sim_node *h, uint32_t job)
{
	int i;

	for (i = 0; i < (int)WEFT_NR_JOB_SLOTS; i++)
		if (h->slot_job[i] == job)
			return i;
	return -1;
}

static void slot_program(struct weft_sim *s, struct sim_node *h, int slot)
{
	unsigned int a, end, t;

	sim_guest_adapters(s, h, &a, &end);
	for (; a < end; a++)
		for (t = (unsigned int)slot * WEFT_SLOT_TABLES;
		     t < (unsigned int)(slot + 1) * WEFT_SLOT_TABLES; t++)
			tce_program(&s->node[a], t);
}

int weft_sim_job_attach(struct weft_sim *s, unsigned int node, uint32_t job)
{
	struct sim_node *h;
	int slot;

	if (node >= s->nr_nodes || !job)
		return -EINVAL;
	h = s->node[node].host;
	if (slot_of(h, job) >= 0)
		return -EEXIST;
	slot = slot_of(h, 0);
	if (slot < 0)
		return -ENOSPC;
	h->slot_job[slot] = job;
	slot_program(s, h, slot);
	return slot;
}

/* Write n TCEs from entry first of table t in every adapter of the guest
 * (tce NULL: zero them). */
static void tce_write(struct weft_sim *s, struct sim_node *h, unsigned int t, uint32_t first,
		      uint32_t n, const uint64_t *tce)
{
	unsigned int a, end;
	uint32_t i;

	sim_guest_adapters(s, h, &a, &end);
	for (; a < end; a++) {
		struct sim_node *ad = &s->node[a];

		for (i = 0; i < n; i++) {
			uint64_t v = tce ? tce[i] : 0;

			memcpy(ad->mem + ad->tce_addr[t] + (uint64_t)(first + i) * 8, &v, 8);
		}
	}
}

static void mr_clear(struct weft_sim *s, struct sim_node *h, struct sim_mr *m)
{
	tce_write(s, h, m->table, m->first, m->npages, NULL);
	weft_tce_mark(h->tce_used[m->table], m->first, m->npages, false);
	m->live = false;
}

int weft_sim_job_detach(struct weft_sim *s, unsigned int node, uint32_t job)
{
	struct sim_node *h;
	int slot;
	size_t i;

	if (node >= s->nr_nodes || !job)
		return -EINVAL;
	h = s->node[node].host;
	slot = slot_of(h, job);
	if (slot < 0)
		return -ENOENT;
	for (i = 0; i < h->nr_mr; i++)
		if (h->mr[i].live && h->mr[i].job == job)
			mr_clear(s, h, &h->mr[i]);
	h->slot_job[slot] = 0;
	slot_program(s, h, slot);
	return 0;
}

int weft_sim_reg_mr(struct weft_sim *s, unsigned int node, uint32_t job, uint64_t addr,
		    uint64_t len, unsigned int page_shift, uint64_t *pvo)
{
	struct sim_node *n;
	struct sim_mr *m;
	uint64_t page, first_page, last_page, npages;
	unsigned int t, t0;
	uint32_t key, first_t, end_t;
	bool explicit_shift;
	int slot;
	size_t i;

	if (node >= s->nr_nodes || !len || addr >= s->mem_size || len > s->mem_size - addr)
		return -EINVAL;
	explicit_shift = page_shift != 0;
	if (!page_shift)
		page_shift = len >= (1ull << WEFT_PAGE_SHIFT_16M) ? WEFT_PAGE_SHIFT_16M
								   : WEFT_PAGE_SHIFT_4K;
	if (!weft_slot_tables(page_shift, s->tce_64k, &first_t, &end_t))
		return -EINVAL;
	/* An explicit page size follows weft.ko's rule; 0 (the sim's own
	 * choice) maps the pages around the range. */
	if (explicit_shift && !weft_mr_aligned(page_shift, addr, len))
		return -EINVAL;
	n = s->node[node].host;
	slot = slot_of(n, job);
	if (!job || slot < 0)
		return -ENOENT;
	page = 1ull << page_shift;
	first_page = addr >> page_shift;
	last_page = (addr + len - 1) >> page_shift;
	npages = last_page - first_page + 1;
	t0 = (unsigned int)slot * WEFT_SLOT_TABLES;
	for (t = t0 + first_t; t < t0 + end_t; t++) {
		uint64_t *tce;
		int64_t first;

		if (npages > n->tce_nr[t])
			continue;
		first = weft_tce_first_fit(n->tce_used[t], n->tce_nr[t], (uint32_t)npages);
		if (first < 0)
			continue;
		key = weft_keygen_next(&n->keys);
		if (!key)
			return -EIO;
		for (i = 0; i < n->nr_mr && n->mr[i].live; i++)
			;
		if (i == n->mr_cap) {
			size_t nc = n->mr_cap ? n->mr_cap * 2 : 32;
			struct sim_mr *nm = realloc(n->mr, nc * sizeof(*nm));

			if (!nm)
				return -ENOMEM;
			n->mr = nm;
			n->mr_cap = nc;
		}
		tce = malloc(npages * sizeof(*tce));
		if (!tce)
			return -ENOMEM;
		if (i == n->nr_mr)
			n->nr_mr++;
		m = &n->mr[i];
		m->live = true;
		m->job = job;
		m->table = t;
		m->first = (uint32_t)first;
		m->npages = (uint32_t)npages;
		for (uint32_t p = 0; p < npages; p++)
			tce[p] = weft_tce_make((key << WEFT_PVO_TABLE_LEN) | t, first_page + p);
		tce_write(s, n, t, (uint32_t)first, (uint32_t)npages, tce);
		free(tce);
		weft_tce_mark(n->tce_used[t], (uint32_t)first, (uint32_t)npages, true);
		if (pvo)
			*pvo = weft_pvo_make(key, t,
					     ((uint64_t)first << page_shift) | (addr & (page - 1)));
		return (int)i + 1;
	}
	return -ENOSPC;
}

int weft_sim_dereg_mr(struct weft_sim *s, unsigned int node, int handle)
{
	struct sim_node *h;

	if (node >= s->nr_nodes)
		return -EINVAL;
	h = s->node[node].host;
	if (handle < 1 || (size_t)handle > h->nr_mr || !h->mr[handle - 1].live)
		return -ENOENT;
	mr_clear(s, h, &h->mr[handle - 1]);
	return 0;
}

/* ---- windows ------------------------------------------------------------------- */

static void lmt_write(struct sim_node *n, unsigned int w)
{
	struct sim_win *dw = &n->win[w];
	const struct weft_lmt_params p = {
		.window = w, .job = dw->job,
		.send_addr = dw->send_addr, .recv_addr = dw->recv_addr,
		.send_log2 = dw->send_log2, .recv_log2 = dw->recv_log2,
		.quantum = dw->quantum, .handler = w % n->nr_handlers,
		.bcast = dw->bcast, .early_int = dw->early,
		.pvo_fatal = n->rereg_on_fatal,
	};
	struct weft_lmt l;
	uint64_t q[sizeof(l) / 8];
	unsigned int i;

	weft_lmt_init(&l, &p);
	memcpy(q, &l, sizeof(l));
	for (i = 0; i < sizeof(l) / 8; i++)
		weft_core_sram_write(n->core, WEFT_SRAM_LMT_OFF(w) + 8 * i, q[i], 8);
}

static int window_start(struct weft_sim *s, struct sim_node *n, unsigned int w)
{
	struct sim_win *dw = &n->win[w];
	unsigned int st;

	memset(n->mem + dw->send_addr, 0, (uint64_t)WEFT_FRAME_SIZE << dw->send_log2);
	memset(n->mem + dw->recv_addr, 0, (uint64_t)WEFT_FRAME_SIZE << dw->recv_log2);
	lmt_write(n, w);
	st = drv_cmd(s, n, WEFT_REG_CMD_OPEN_WINDOW, w);
	if (st != WEFT_CMD_OK)
		return status_errno(st);
	dw->open_seq++;
	return 0;
}

static void fill_window(struct weft_sim *s, struct sim_node *n, unsigned int w,
			struct weft_sim_window *out)
{
	struct sim_win *dw = &n->win[w];

	memset(out, 0, sizeof(*out));
	out->sim = s;
	out->node = n->id;
	out->window = w;
	out->job = dw->job;
	out->boot = n->gen;
	out->open_seq = dw->open_seq;
	out->send_addr = dw->send_addr;
	out->recv_addr = dw->recv_addr;
	out->send_fifo = n->mem + dw->send_addr;
	out->recv_fifo = n->mem + dw->recv_addr;
	out->send_frames = 1u << dw->send_log2;
	out->recv_frames = 1u << dw->recv_log2;
}

int weft_sim_open_window(struct weft_sim *s, unsigned int node,
			 const struct weft_sim_window_cfg *cfg, struct weft_sim_window *out)
{
	struct sim_node *n;
	struct sim_win *dw;
	unsigned int w;
	uint32_t sl, rl;
	int rc;

	if (node >= s->nr_nodes || !cfg || !out || !cfg->job)
		return -EINVAL;
	n = &s->node[node];
	sl = cfg->send_log2 ? cfg->send_log2 : 6;
	rl = cfg->recv_log2 ? cfg->recv_log2 : 6;
	if (sl < WEFT_FIFO_MIN_LOG2 || sl > WEFT_FIFO_MAX_LOG2 ||
	    rl < WEFT_FIFO_MIN_LOG2 || rl > WEFT_FIFO_MAX_LOG2)
		return -EINVAL;
	if (cfg->window >= 0) {
		w = (unsigned int)cfg->window;
		if (w >= n->nr_windows)
			return -EINVAL;
		if (n->win[w].open)
			return -EBUSY;
	} else {
		for (w = 0; w < n->nr_windows && n->win[w].open; w++)
			;
		if (w == n->nr_windows)
			return -ENOSPC;
	}
	dw = &n->win[w];
	memset(dw, 0, sizeof(*dw));
	dw->job = cfg->job;
	dw->send_log2 = sl;
	dw->recv_log2 = rl;
	dw->quantum = cfg->quantum ? cfg->quantum : WEFT_DEF_QUANTUM;
	dw->bcast = cfg->bcast;
	dw->early = cfg->early_int;
	dw->send_addr = sim_alloc(s, n, (uint64_t)WEFT_FRAME_SIZE << sl, WEFT_FRAME_SIZE, true);
	dw->recv_addr = sim_alloc(s, n, (uint64_t)WEFT_FRAME_SIZE << rl, WEFT_FRAME_SIZE, true);
	if (!dw->send_addr || !dw->recv_addr) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = window_start(s, n, w);
	if (rc)
		goto fail;
	dw->open = true;
	fill_window(s, n, w, out);
	return 0;
fail:
	if (dw->send_addr)
		sim_free_addr(n, dw->send_addr);
	if (dw->recv_addr)
		sim_free_addr(n, dw->recv_addr);
	memset(dw, 0, sizeof(*dw));
	return rc;
}

static void release_window_rcxts(struct weft_sim *s, struct sim_node *n, unsigned int w)
{
	uint32_t r;

	for (r = 0; r < n->nr_rcxt; r++)
		if (n->rcxt_owner[r] == w + 1)
			weft_sim_rcxt_free(s, n->id, r);
}

/* The node and driver state of the window a handle names, or NULL when
 * the handle names no window of the sim. */
static struct sim_win *handle_win(const struct weft_sim_window *win, struct sim_node **np)
{
	struct weft_sim *s = win->sim;
	struct sim_node *n;

	if (!s || win->node >= s->nr_nodes)
		return NULL;
	n = &s->node[win->node];
	if (win->window >= n->nr_windows)
		return NULL;
	*np = n;
	return &n->win[win->window];
}

int weft_sim_close_window(struct weft_sim_window *win)
{
	struct weft_sim *s = win->sim;
	struct sim_node *n;
	struct sim_win *dw = handle_win(win, &n);
	unsigned int st, i;

	if (!dw)
		return -EINVAL;
	if (!dw->open || win->boot != n->gen)
		return -ENODEV;
	release_window_rcxts(s, n, win->window);
	st = drv_cmd(s, n, WEFT_REG_CMD_CLOSE_WINDOW, win->window);
	if (st != WEFT_CMD_OK && st != WEFT_CMD_ESTATE)
		return status_errno(st);
	/* Wait until no task that existed at Close Window still runs. */
	for (i = 0; i < SIM_CLOSE_ROUNDS && rd(n, WEFT_REG_SNAPSHOT_VIEW); i++)
		weft_sim_progress(s);
	if (rd(n, WEFT_REG_SNAPSHOT_VIEW))
		return -ETIMEDOUT;
	sim_free_addr(n, dw->send_addr);
	sim_free_addr(n, dw->recv_addr);
	memset(dw, 0, sizeof(*dw));
	win->boot = 0;
	return 0;
}

bool weft_sim_window_ok(const struct weft_sim_window *win)
{
	struct sim_node *n;
	const struct sim_win *dw = handle_win(win, &n);

	if (!dw || !dw->open || win->boot != n->gen)
		return false;
	return weft_core_db_read(n->core, (uint64_t)win->window * WEFT_DB_PAGE_SIZE +
				 WEFT_DB_STATE, 8) == WEFT_WIN_VALID;
}

int weft_sim_window_refresh(struct weft_sim_window *win)
{
	struct sim_node *n;
	struct sim_win *dw = handle_win(win, &n);

	if (!dw)
		return -EINVAL;
	if (!dw->open || dw->job != win->job || dw->send_addr != win->send_addr)
		return -ENODEV;
	if (dw->open_seq == win->open_seq && win->boot == n->gen)
		return 0;
	fill_window(win->sim, n, win->window, win);
	return 1;
}

/* ---- rCxt pool ---------------------------------------------------------------------- */

uint32_t weft_sim_recovery_count(struct weft_sim *s, unsigned int node)
{
	return node < s->nr_nodes ? (uint32_t)rd(&s->node[node], WEFT_REG_RECOVERY_COUNT) : 0;
}

uint32_t weft_sim_node_gen(const struct weft_sim *s, unsigned int node)
{
	return node < s->nr_nodes ? s->node[node].gen : 0;
}

int weft_sim_rcxt_alloc(struct weft_sim *s, unsigned int node, unsigned int window,
			uint32_t *rcxt, uint16_t *key)
{
	struct sim_node *n;
	uint32_t r;
	uint16_t k;
	unsigned int st;

	if (node >= s->nr_nodes)
		return -EINVAL;
	n = &s->node[node];
	if (window >= n->nr_windows || !n->win[window].open)
		return -EINVAL;
	if (!weft_ring_pop(&n->ring, &r))
		return -ENOSPC;
	k = weft_rcxt_key(rd(n, WEFT_REG_RECOVERY_COUNT), n->rereg_on_fatal);
	st = drv_cmd(s, n, WEFT_REG_CMD_ACQUIRE_RCXT, WEFT_ACQ(r, window, k));
	if (st != WEFT_CMD_OK) {
		weft_ring_push(&n->ring, r);
		return status_errno(st);
	}
	n->rcxt_owner[r] = (uint16_t)(window + 1);
	if (rcxt)
		*rcxt = r;
	if (key)
		*key = k;
	return 0;
}

int weft_sim_rcxt_free(struct weft_sim *s, unsigned int node, uint32_t rcxt)
{
	struct sim_node *n;
	unsigned int st;

	if (node >= s->nr_nodes)
		return -EINVAL;
	n = &s->node[node];
	if (rcxt >= n->nr_rcxt || !n->rcxt_owner[rcxt])
		return -ENOENT;
	st = drv_cmd(s, n, WEFT_REG_CMD_RELEASE_RCXT, rcxt);
	n->rcxt_owner[rcxt] = 0;
	weft_ring_push(&n->ring, rcxt);
	return status_errno(st);
}

int weft_sim_rcxt_cancel(struct weft_sim *s, unsigned int node, uint32_t rcxt)
{
	struct sim_node *n;

	if (node >= s->nr_nodes)
		return -EINVAL;
	n = &s->node[node];
	if (rcxt >= n->nr_rcxt || !n->rcxt_owner[rcxt])
		return -ENOENT;
	return status_errno(drv_cmd(s, n, WEFT_REG_CMD_CANCEL_RCXT, rcxt));
}

/* ---- reboot and recovery --------------------------------------------------------------- */

int weft_sim_node_reboot(struct weft_sim *s, unsigned int node)
{
	unsigned int a, first, end;

	if (node >= s->nr_nodes)
		return -EINVAL;
	/* The LPAR goes away: its adapters are reset and their ports down. */
	sim_guest_adapters(s, &s->node[node], &first, &end);
	for (a = first; a < end; a++) {
		struct sim_node *n = &s->node[a];

		weft_fabric_set_port_up(s->fabric, (uint16_t)a, false);
		wr(n, WEFT_REG_RESET, WEFT_RESET_MAGIC);
		n->evq_addr = 0;
		n->busy = n->kicked = false;
		n->irq_pending = 0;
	}
	weft_sim_run_until(s, NULL, NULL, s->now + s->reboot_ns);
	weft_sim_advance_to(s, s->now + 1);
	for (a = first; a < end; a++)
		weft_fabric_set_port_up(s->fabric, (uint16_t)a, true);
	return sim_drv_boot(s, s->node[node].host);
}

int weft_sim_node_recover(struct weft_sim *s, unsigned int node)
{
	struct sim_node *n;
	unsigned int w;
	uint32_t r;
	int rc = 0;

	if (node >= s->nr_nodes)
		return -EINVAL;
	n = &s->node[node];
	wr(n, WEFT_REG_RECOVER, WEFT_RECOVER_MAGIC);
	for (w = 0; w < SIM_CMD_SPIN && sim_poll_node(s, n); w++)
		;
	n->gen++;
	/* Every rCxt is gone: the protocols re-acquire (seed 1.5.17). */
	for (r = 0; r < n->nr_rcxt; r++) {
		struct weft_rcxt x;
		uint64_t q[2];

		if (!n->rcxt_owner[r])
			continue;
		q[0] = weft_core_sram_read(n->core, WEFT_SRAM_RCXT_OFF(r), 8);
		q[1] = weft_core_sram_read(n->core, WEFT_SRAM_RCXT_OFF(r) + 8, 8);
		memcpy(&x, q, sizeof(q));
		if (x.rcxt_assigned)
			drv_cmd(s, n, WEFT_REG_CMD_RELEASE_RCXT, r);
		n->rcxt_owner[r] = 0;
		weft_ring_push(&n->ring, r);
	}
	/* Windows the adapter dropped are opened again on the same FIFOs. */
	for (w = 0; w < n->nr_windows; w++) {
		if (!n->win[w].open)
			continue;
		if (weft_core_db_read(n->core, (uint64_t)w * WEFT_DB_PAGE_SIZE + WEFT_DB_STATE, 8) ==
		    WEFT_WIN_VALID)
			continue;
		if (window_start(s, n, w) != 0)
			rc = -EIO;
	}
	return rc;
}
