/* SPDX-License-Identifier: MIT */
/*
 * Weft adapter model: configuration, privileged registers, SRAM and
 * doorbell MMIO decode, commands, tasks with Live Task View / Snapshot
 * View, interrupts and the event queue, reset and recovery, poll loop.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/names.h"
#include "weft_core_int.h"
#include "weft_match.h"

/* ---- helpers shared by the engines ------------------------------------ */

void weft_count(struct weft_core *c, unsigned int counter, uint64_t n)
{
	if (counter < WEFT_CNT__COUNT)
		c->cnt[counter] += n;
}

void weft_trace(struct weft_core *c, const struct weft_trace *t)
{
	if (c->ops.trace)
		c->ops.trace(c->opaque, t);
}

void weft_guest_error(struct weft_core *c, const char *fmt, ...)
{
	struct weft_trace t = { .kind = WEFT_TR_GUEST_ERROR };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->msgbuf, sizeof(c->msgbuf), fmt, ap);
	va_end(ap);
	weft_count(c, WEFT_CNT_GUEST_ERRORS, 1);
	t.msg = c->msgbuf;
	weft_trace(c, &t);
}

void weft_drop(struct weft_core *c, const struct weft_wire_hdr *h,
	       unsigned int window, unsigned int reason)
{
	struct weft_trace t = {
		.kind = WEFT_TR_PKT_DROP, .hdr = h, .window = window,
		.reason = reason, .msg = weft_reason_text(reason),
	};

	if (reason < WEFT_R__COUNT)
		weft_count(c, WEFT_CNT_DROP(reason), 1);
	weft_trace(c, &t);
}

int weft_dma_read_op(struct weft_core *c, uint64_t addr, void *buf, size_t len)
{
	if (len == 0)
		return 0;
	if (addr + len < addr || c->ops.dma_read(c->opaque, addr, buf, len) != 0) {
		weft_guest_error(c, "DMA read of %zu bytes at 0x%llx outside guest RAM",
				 len, (unsigned long long)addr);
		return -1;
	}
	return 0;
}

int weft_dma_write_op(struct weft_core *c, uint64_t addr, const void *buf, size_t len)
{
	if (len == 0)
		return 0;
	if (addr + len < addr || c->ops.dma_write(c->opaque, addr, buf, len) != 0) {
		weft_guest_error(c, "DMA write of %zu bytes at 0x%llx outside guest RAM",
				 len, (unsigned long long)addr);
		return -1;
	}
	return 0;
}

bool weft_window_valid(struct weft_core *c, unsigned int w)
{
	return w < c->cfg.nr_windows &&
	       weft_lmt(c, w)->window_state == WEFT_WIN_VALID;
}

/* The LMT check proper (weft_lmt_check): the window's result is kept
 * until an SRAM write touches its LMT. */
static unsigned int lmt_fields_check(const struct weft_lmt *l, unsigned int w)
{
	if (l->window_id != w)
		return WEFT_R_WINDOW_INVALID;
	if (l->recv_fifo_size < WEFT_FIFO_MIN_LOG2 || l->recv_fifo_size > WEFT_FIFO_MAX_LOG2 ||
	    l->send_fifo_size < WEFT_FIFO_MIN_LOG2 || l->send_fifo_size > WEFT_FIFO_MAX_LOG2)
		return WEFT_R_LENGTH;
	if (l->recv_mask != (1u << l->recv_fifo_size) - 1 ||
	    l->send_mask != (1u << l->send_fifo_size) - 1)
		return WEFT_R_LENGTH;
	if ((l->recv_fifo_real_address & (WEFT_FRAME_SIZE - 1)) ||
	    (l->send_fifo_real_address & (WEFT_FRAME_SIZE - 1)) ||
	    l->recv_fifo_real_address == 0 || l->send_fifo_real_address == 0)
		return WEFT_R_DMA_ERROR;
	if (l->window_key == 0)
		return WEFT_R_KEY_MISMATCH;
	if (l->send_quanta_size == 0)
		return WEFT_R_LENGTH;
	return WEFT_R_OK;
}

unsigned int weft_lmt_recheck(struct weft_core *c, unsigned int w)
{
	unsigned int why = lmt_fields_check(weft_lmt(c, w), w);

	c->lmt_ok[w] = why == WEFT_R_OK;
	return why;
}

/* ---- tasks, Live Task View and Snapshot View --------------------------- */

unsigned int weft_task_alloc(struct weft_core *c, enum weft_task_kind kind,
			     unsigned int window)
{
	unsigned int base, n, i;

	switch (kind) {
	case WEFT_TASK_RX:
		base = 0;
		n = WEFT_NR_RX_TASKS;
		break;
	case WEFT_TASK_TX:
		base = WEFT_TX_TASK_BASE;
		n = WEFT_NR_TX_TASKS;
		break;
	default:
		base = WEFT_CMD_TASK_BASE;
		n = WEFT_NR_CMD_TASKS;
		break;
	}
	for (i = base; i < base + n; i++) {
		if (c->task_kind[i] == WEFT_TASK_FREE) {
			c->task_kind[i] = (uint8_t)kind;
			c->task_win[i] = (uint16_t)window;
			c->ltv |= 1u << i;
			return i;
		}
	}
	return WEFT_NO_TASK;
}

void weft_task_free(struct weft_core *c, unsigned int task)
{
	bool had_snap;

	if (task >= WEFT_NR_TASKS || c->task_kind[task] == WEFT_TASK_FREE)
		return;
	c->task_kind[task] = WEFT_TASK_FREE;
	c->task_win[task] = WEFT_NO_WINDOW;
	had_snap = c->snapshot != 0;
	c->ltv &= ~(1u << task);
	c->snapshot &= ~(1u << task);
	if (had_snap && c->snapshot == 0)
		weft_event(c, WEFT_EV_SNAPSHOT_CLEAR, WEFT_NO_WINDOW, WEFT_RCXT_NONE, 0, 0);
}

/* ---- active-window vector --------------------------------------------- */

void weft_set_active(struct weft_core *c, unsigned int w, bool on)
{
	uint64_t bit = 1ull << (w & 63);

	if (w >= WEFT_MAX_WINDOWS)
		return;
	if (on)
		c->active[w >> 6] |= bit;
	else
		c->active[w >> 6] &= ~bit;
}

bool weft_is_active(const struct weft_core *c, unsigned int w)
{
	return w < WEFT_MAX_WINDOWS && (c->active[w >> 6] >> (w & 63)) & 1;
}

/* ---- interrupts and events -------------------------------------------- */

static unsigned int nr_handlers(const struct weft_core *c)
{
	unsigned int n = WEFT_INT_CONFIG_HANDLERS(c->int_config);

	if (n == 0 || n > c->cfg.nr_handlers)
		n = c->cfg.nr_handlers;
	return n;
}

static bool evq_enabled(const struct weft_core *c)
{
	return c->evq_size >= WEFT_EVQ_MIN_LOG2 && c->evq_size <= WEFT_EVQ_MAX_LOG2 &&
	       c->evq_base != 0;
}

/* Pending: unconsumed entries in the event queue, or an event that was
 * not queued (no queue, queue full) and not presented yet. */
static bool events_pending(const struct weft_core *c)
{
	return c->irq_unpresented || (evq_enabled(c) && c->evq_prod != c->evq_cons);
}

/*
 * Interrupt moderation (INT_MOD, hw-spec 8.1).  True when handler h must
 * not be interrupted yet: its period since the last interrupt has not
 * ended and fewer than its count of events wait.  The first hold arms the
 * due time at the period's end, so a held event waits at most a period.
 */
static bool imod_hold(struct weft_core *c, unsigned int h, bool event)
{
	struct weft_imod *m = &c->imod[h];
	uint32_t count = WEFT_INT_MOD_COUNT(m->reg);

	if (WEFT_INT_MOD_US(m->reg) == 0 || !c->ops.now_ns)
		return false;
	if (event && m->waiting < UINT32_MAX)
		m->waiting++;
	if ((count && m->waiting >= count) || c->ops.now_ns(c->opaque) >= m->gap_end)
		return false;
	if (!m->due) {
		m->due = m->gap_end;
		weft_count(c, WEFT_CNT_INT_HELD, 1);
		weft_timer_sync(c);
	}
	return true;
}

/* Present the pending events to a ready handler, preferring pref.  event:
 * a new event asks (otherwise only when events are pending). */
static void irq_present(struct weft_core *c, unsigned int pref, bool event)
{
	unsigned int n = nr_handlers(c), h = WEFT_MAX_HANDLERS, i;
	struct weft_trace t = { .kind = WEFT_TR_IRQ };
	struct weft_imod *m;

	if (!event && !events_pending(c))
		return;
	if (pref < n && (c->int_ready & (1u << pref))) {
		h = pref;
	} else {
		for (i = 0; i < n; i++) {
			unsigned int cand = (c->irq_rr + i) % n;

			if (c->int_ready & (1u << cand)) {
				h = cand;
				break;
			}
		}
	}
	if (h >= n)
		return; /* presented when a handler writes INT_READY */
	if (imod_hold(c, h, event))
		return; /* presented when its due time comes (weft_core_timer) */
	m = &c->imod[h];
	m->waiting = 0;
	if (m->due) {
		m->due = 0;
		weft_timer_sync(c);
	}
	if (WEFT_INT_MOD_US(m->reg) && c->ops.now_ns)
		m->gap_end = c->ops.now_ns(c->opaque) + WEFT_INT_MOD_US(m->reg) * 1000ull;
	c->irq_rr = (h + 1) % n;
	c->int_ready &= ~(1u << h);
	c->int_pending |= 1u << h;
	c->irq_unpresented = false;
	weft_count(c, WEFT_CNT_INTERRUPTS, 1);
	t.val = h;
	weft_trace(c, &t);
	c->ops.irq(c->opaque, h);
}

/* The earliest due time of a held interrupt, 0 = none. */
static uint64_t imod_deadline(const struct weft_core *c)
{
	uint64_t d = 0;
	unsigned int h;

	for (h = 0; h < WEFT_MAX_HANDLERS; h++)
		if (c->imod[h].due && (!d || c->imod[h].due < d))
			d = c->imod[h].due;
	return d;
}

/* Held interrupts whose due time has come go out (to another ready
 * handler if INT_CONFIG dropped theirs); nothing when a handler that
 * interrupted meanwhile had the driver drain the events. */
static void imod_timer(struct weft_core *c, uint64_t now)
{
	unsigned int h;

	for (h = 0; h < WEFT_MAX_HANDLERS; h++) {
		struct weft_imod *m = &c->imod[h];

		if (!m->due || m->due > now)
			continue;
		m->due = 0;
		if (events_pending(c))
			irq_present(c, h, false);
		else
			m->waiting = 0;
	}
}

/* INT_MOD(h) write: a new setting starts a new period (the next event
 * interrupts at once); an interrupt it held goes out now. */
static void int_mod_write(struct weft_core *c, unsigned int h, uint64_t v)
{
	struct weft_imod *m = &c->imod[h];

	if (h >= nr_handlers(c)) {
		weft_guest_error(c, "INT_MOD: handler %u beyond the %u in use", h, nr_handlers(c));
		return;
	}
	if (v >> 32) {
		weft_guest_error(c, "INT_MOD(%u): reserved bits set in 0x%llx", h,
				 (unsigned long long)v);
		return;
	}
	if (WEFT_INT_MOD_US(v) > WEFT_INT_MOD_MAX_US) {
		weft_guest_error(c, "INT_MOD(%u): period %u us above the maximum %u us", h,
				 WEFT_INT_MOD_US(v), WEFT_INT_MOD_MAX_US);
		return;
	}
	if (WEFT_INT_MOD_COUNT(v) && !WEFT_INT_MOD_US(v)) {
		weft_guest_error(c, "INT_MOD(%u): count %u without a period", h,
				 WEFT_INT_MOD_COUNT(v));
		return;
	}
	m->reg = v;
	m->gap_end = 0;
	m->waiting = 0;
	if (m->due) {
		m->due = 0;
		weft_timer_sync(c);
		irq_present(c, h, false);
	}
}

static void event_post(struct weft_core *c, unsigned int type, unsigned int window,
		       unsigned int pref, uint32_t rcxt, unsigned int reason, uint64_t info)
{
	struct weft_trace t = {
		.kind = WEFT_TR_EVENT, .val = type, .window = window, .reason = reason,
	};
	bool queued = false;

	weft_trace(c, &t);
	if (!evq_enabled(c)) {
		weft_count(c, WEFT_CNT_EVQ_OVERFLOW, 1);
	} else if (c->evq_prod - c->evq_cons >= (1ull << c->evq_size)) {
		weft_count(c, WEFT_CNT_EVQ_OVERFLOW, 1);
	} else {
		struct weft_event ev = {
			.seq = (uint32_t)(c->evq_prod + 1), .type = (uint16_t)type,
			.window = (uint16_t)window, .rcxt = rcxt, .reason = reason,
			.info = info,
		};
		uint64_t mask = (1ull << c->evq_size) - 1;
		uint64_t addr = c->evq_base + (c->evq_prod & mask) * sizeof(ev);

		if (weft_dma_write(c, addr, &ev, sizeof(ev)) == 0) {
			c->evq_prod++;
			weft_count(c, WEFT_CNT_EVENTS, 1);
			queued = true;
		} else {
			weft_count(c, WEFT_CNT_EVQ_OVERFLOW, 1);
		}
	}
	if (!queued)
		c->irq_unpresented = true;
	irq_present(c, pref, true);
}

void weft_event(struct weft_core *c, unsigned int type, unsigned int window,
		uint32_t rcxt, unsigned int reason, uint64_t info)
{
	unsigned int pref = WEFT_MAX_HANDLERS;

	if (window < c->cfg.nr_windows)
		pref = weft_lmt(c, window)->int_vect_data;
	event_post(c, type, window, pref, rcxt, reason, info);
}

void weft_event_vec(struct weft_core *c, unsigned int type, unsigned int vector,
		    uint32_t obj, unsigned int reason, uint64_t info)
{
	event_post(c, type, WEFT_NO_WINDOW, vector, obj, reason, info);
}

void weft_window_fatal(struct weft_core *c, unsigned int w, uint32_t rcxt,
		       unsigned int reason)
{
	struct weft_trace t = {
		.kind = WEFT_TR_WINDOW_FATAL, .window = w, .reason = reason, .val = rcxt,
	};
	struct weft_lmt *l;

	if (w >= c->cfg.nr_windows)
		return;
	l = weft_lmt(c, w);
	if (l->window_state != WEFT_WIN_VALID)
		return;
	l->window_state = WEFT_WIN_FATAL;
	l->rcxt_id = rcxt;
	l->fatal_reason = reason;
	weft_count(c, WEFT_CNT_WINDOW_FATAL, 1);
	weft_trace(c, &t);
	weft_tx_window_stop(c, w);
	weft_event(c, WEFT_EV_WINDOW_FATAL, w, rcxt, reason, 0);
}

/* ---- configuration ----------------------------------------------------- */

static uint64_t pow2_ceil(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

struct weft_core *weft_core_new(const struct weft_core_config *cfg,
				const struct weft_core_ops *ops, void *opaque,
				char *err, size_t errlen)
{
	struct weft_core *c;
	const char *why = NULL;
	struct weft_core_config cf;
	uint32_t vsize[5];

	if (!cfg || !ops)
		why = "missing configuration or ops";
	else if (!ops->dma_read || !ops->dma_write || !ops->irq || !ops->xmit)
		why = "ops table needs dma_read, dma_write, irq and xmit";
	else if (cfg->node_id > WEFT_NODE_MAX_UNICAST)
		why = "node_id beyond the unicast range";
	else if (cfg->nr_windows < 1 || cfg->nr_windows > WEFT_MAX_WINDOWS)
		why = "nr_windows must be 1..128";
	else if (cfg->nr_rcxt < WEFT_MIN_RCXT || cfg->nr_rcxt > WEFT_MAX_RCXT)
		why = "nr_rcxt must be 16..131072";
	else if (cfg->nr_handlers < 1 || cfg->nr_handlers > WEFT_MAX_HANDLERS)
		why = "nr_handlers must be 1..16";
	else if (cfg->rx_queue_len > 65536)
		why = "rx_queue_len must be at most 65536";
	else if (cfg->rx_overlap > WEFT_NR_RX_TASKS)
		why = "rx_overlap must be at most 4";
	else
		why = weft_verbs_config(cfg, vsize);
	if (!why && cfg) {
		cf = *cfg;
		why = weft_match_config(&cf);
	}
	if (why) {
		if (err && errlen)
			snprintf(err, errlen, "%s", why);
		return NULL;
	}
	if (cf.rx_queue_len == 0)
		cf.rx_queue_len = WEFT_RXQ_DEFAULT;

	c = calloc(1, sizeof(*c));
	if (!c)
		goto nomem;
	c->cfg = cf;
	c->ops = *ops;
	c->opaque = opaque;
	c->key_epoch = cf.key_epoch;
	c->sram_used = WEFT_SRAM_RCXT_OFF(cf.nr_rcxt);
	c->sram_size = pow2_ceil(c->sram_used);
	c->db_size = pow2_ceil(weft_verbs_db_size(&cf));
	c->sram = aligned_alloc(4096, c->sram_size);
	c->rxq_len = cf.rx_queue_len;
	c->rxq = calloc(c->rxq_len, sizeof(*c->rxq));
	c->ctlq = calloc(WEFT_CTLQ_LEN, sizeof(*c->ctlq));
	c->track = calloc(cf.nr_rcxt, sizeof(*c->track));
	c->cmpl_tid = calloc(cf.nr_rcxt ? cf.nr_rcxt : 1, sizeof(*c->cmpl_tid));
	c->verbs = weft_verbs_new(&cf);
	c->match = weft_match_new(&cf);
	c->ctr = weft_cnt_new();
	c->cond_tag = calloc(cf.nr_rcxt ? cf.nr_rcxt : 1, sizeof(*c->cond_tag));
	c->lmt_ok = calloc(cf.nr_windows ? cf.nr_windows : 1, sizeof(*c->lmt_ok));
	if (!c->sram || !c->rxq || !c->ctlq || !c->track || !c->cmpl_tid || !c->verbs ||
	    !c->cond_tag || !c->lmt_ok || !c->match || !c->ctr) {
		weft_core_free(c);
		goto nomem;
	}
	weft_core_reset(c);
	c->cnt[WEFT_CNT_RESETS] = 0;
	return c;
nomem:
	if (err && errlen)
		snprintf(err, errlen, "out of memory");
	return NULL;
}

/* Take the oldest received packet off the queue: its bytes stay valid
 * until rxq_done(). */
static struct weft_pkt *rxq_pop(struct weft_core *c)
{
	struct weft_pkt *p = &c->rxq[c->rxq_head];

	c->rxq_head = (c->rxq_head + 1) % c->rxq_len;
	c->rxq_count--;
	return p;
}

/* Byte off of a queued packet: from the copy or from the lent packet. */
static const uint8_t *rxq_at(const struct weft_pkt *p, uint32_t off)
{
	return off < p->ncopy ? p->data + off : p->lent + off;
}

/* The core is done with a packet: a lent one goes back. */
static void rxq_done(struct weft_core *c, struct weft_pkt *p)
{
	if (p->lent) {
		const uint8_t *b = p->lent;

		p->lent = NULL;
		c->ops.rx_release(c->opaque, b);
	}
}

/* Discard every queued packet (each counted and traced with reason). */
static void rxq_discard(struct weft_core *c, unsigned int reason)
{
	while (c->rxq_count > 0) {
		struct weft_pkt *p = rxq_pop(c);
		struct weft_wire_hdr h;

		memcpy(&h, rxq_at(p, 0), sizeof(h));
		weft_drop(c, &h, h.dst_window, reason);
		rxq_done(c, p);
	}
}

void weft_core_free(struct weft_core *c)
{
	uint32_t r;

	if (!c)
		return;
	if (c->rxq)
		while (c->rxq_count > 0)
			rxq_done(c, rxq_pop(c));
	if (c->track)
		for (r = 0; r < c->cfg.nr_rcxt; r++)
			free(c->track[r].bits);
	free(c->track);
	free(c->cmpl_tid);
	weft_verbs_free(c->verbs);
	weft_match_free(c->match);
	weft_cnt_free(c->ctr);
	free(c->cond_tag);
	free(c->lmt_ok);
	free(c->ctlq);
	free(c->rxq);
	free(c->sram);
	free(c);
}

static void clear_work(struct weft_core *c)
{
	unsigned int i;
	uint32_t r;

	for (r = 0; r < c->cfg.nr_rcxt; r++)
		weft_track_free(c, r);
	/* Not counted as drops (a reset clears the counters). */
	while (c->rxq_count > 0)
		rxq_done(c, rxq_pop(c));
	c->rxq_head = 0;
	c->ctlq_head = c->ctlq_count = 0;
	for (i = 0; i < WEFT_NR_TASKS; i++) {
		c->task_kind[i] = WEFT_TASK_FREE;
		c->task_win[i] = WEFT_NO_WINDOW;
	}
	c->ltv = 0;
	c->snapshot = 0;
	for (i = 0; i < WEFT_MAX_WINDOWS; i++) {
		memset(&c->win[i], 0, sizeof(c->win[i]));
		c->win[i].fop.task = WEFT_NO_TASK;
		c->win[i].rop_task = WEFT_NO_TASK;
	}
	c->active[0] = c->active[1] = 0;
	c->tx_have_cur = false;
	c->tx_cur = 0;
	c->fatal = false;
}

/* DEBUG_INJECT FATAL: the adapter stops as on an internal error (hw-spec
 * 9.1): all work is dropped, STATUS.FATAL is set and the driver is told;
 * until RECOVER or RESET nothing is sent, received or rung. */
static void core_fatal(struct weft_core *c)
{
	unsigned int w;

	if (c->fatal)
		return;
	for (w = 0; w < c->cfg.nr_windows; w++)
		weft_tx_window_stop(c, w);
	c->ctlq_head = c->ctlq_count = 0;
	c->fatal = true;
	weft_event(c, WEFT_EV_ADAPTER_FATAL, WEFT_NO_WINDOW, WEFT_RCXT_NONE,
		   WEFT_R_ADAPTER_FATAL, 0);
}

void weft_core_reset(struct weft_core *c)
{
	uint64_t resets = c->cnt[WEFT_CNT_RESETS];
	unsigned int t;

	clear_work(c);
	memset(c->sram, 0, c->sram_size);
	memset(c->lmt_ok, 0, c->cfg.nr_windows ? c->cfg.nr_windows : 1);
	memset(c->cmpl_tid, 0, (c->cfg.nr_rcxt ? c->cfg.nr_rcxt : 1) * sizeof(*c->cmpl_tid));
	memset(c->cond_tag, 0, (c->cfg.nr_rcxt ? c->cfg.nr_rcxt : 1) * sizeof(*c->cond_tag));
	memset(c->cnt, 0, sizeof(c->cnt));
	c->cnt[WEFT_CNT_RESETS] = resets + 1;
	memset(c->tce_base, 0, sizeof(c->tce_base));
	memset(c->tce_cfg, 0, sizeof(c->tce_cfg));
	memset(c->tce_owner, 0, sizeof(c->tce_owner));
	for (t = 0; t < WEFT_NR_TCE_TABLES; t++)
		weft_xlate_table_update(c, t);
	c->cmd_status = WEFT_CMD_OK;
	c->int_config = c->cfg.nr_handlers;
	c->int_ready = (uint32_t)((1ull << c->cfg.nr_handlers) - 1);
	c->int_pending = 0;
	c->irq_rr = 0;
	c->irq_unpresented = false;
	memset(c->imod, 0, sizeof(c->imod));
	c->evq_base = c->evq_size = c->evq_prod = c->evq_cons = 0;
	weft_verbs_reset(c);
	weft_match_reset(c);
	weft_cnt_reset(c);
}

static void core_recover(struct weft_core *c)
{
	unsigned int w;
	uint32_t r;

	c->recovery_count++;
	/* Packets still queued are discarded: count and trace each. */
	rxq_discard(c, WEFT_R_RESET);
	clear_work(c);
	for (w = 0; w < c->cfg.nr_windows; w++) {
		struct weft_lmt *l = weft_lmt(c, w);

		l->window_state = WEFT_WIN_INVALID;
		l->rcxt_head = l->rcxt_tail = WEFT_RCXT_NONE;
		l->rcxt_count = 0;
		l->send_fifo_ready_slots = 0;
	}
	for (r = 0; r < c->cfg.nr_rcxt; r++) {
		struct weft_rcxt *x = weft_rcxt(c, r);

		x->rcxt_assigned = 0;
		x->rcxt_state = WEFT_RCXT_FREE;
		x->next = WEFT_RCXT_NONE;
	}
	weft_verbs_reset(c);
	weft_cnt_reset(c);
	weft_count(c, WEFT_CNT_RECOVERIES, 1);
}

/* ---- commands ---------------------------------------------------------- */

static void cmd_done(struct weft_core *c, const char *name, uint64_t off, uint64_t val,
		     unsigned int status, unsigned int reason)
{
	struct weft_trace t = {
		.kind = WEFT_TR_CMD, .name = name, .val = val, .reason = reason,
		.size = status, .window = WEFT_NO_WINDOW,
	};

	if (off == WEFT_REG_CMD_OPEN_WINDOW || off == WEFT_REG_CMD_CLOSE_WINDOW)
		t.window = val < WEFT_NO_WINDOW ? (unsigned int)val : WEFT_NO_WINDOW;
	else if (off == WEFT_REG_CMD_ACQUIRE_RCXT)
		t.window = WEFT_ACQ_WINDOW(val);

	c->cmd_status = status;
	if (status != WEFT_CMD_OK)
		t.msg = "command refused";
	weft_trace(c, &t);
}

static unsigned int cmd_open(struct weft_core *c, uint64_t val, unsigned int *reason)
{
	struct weft_lmt *l;
	unsigned int w = (unsigned int)val, why;

	if (val >= c->cfg.nr_windows) {
		*reason = WEFT_R_WINDOW_INVALID;
		return WEFT_CMD_EINVAL;
	}
	l = weft_lmt(c, w);
	if (l->window_state == WEFT_WIN_VALID) {
		*reason = WEFT_R_OK;
		return WEFT_CMD_EBUSY;
	}
	why = weft_lmt_check(c, w);
	if (why != WEFT_R_OK) {
		*reason = why;
		return WEFT_CMD_EBADLMT;
	}
	memset(&c->win[w], 0, sizeof(c->win[w]));
	c->win[w].fop.task = WEFT_NO_TASK;
	c->win[w].rop_task = WEFT_NO_TASK;
	weft_set_active(c, w, false);
	l->recv_current_cnt = 0;
	l->recv_fifo_avail_slots = 1u << l->recv_fifo_size;
	l->send_current_cnt = 0;
	l->send_fifo_ready_slots = 0;
	l->send_quanta_value = l->send_quanta_size;
	l->rcxt_head = l->rcxt_tail = WEFT_RCXT_NONE;
	l->rcxt_count = 0;
	l->rcxt_id = WEFT_RCXT_NONE;
	l->fatal_reason = 0;
	l->send_progress = 0;
	l->send_rcxt = WEFT_RCXT_NONE;
	l->recv_dropped = 0;
	l->window_state = WEFT_WIN_VALID;
	*reason = WEFT_R_OK;
	return WEFT_CMD_OK;
}

static unsigned int cmd_close(struct weft_core *c, uint64_t val, unsigned int self,
			      unsigned int *reason)
{
	struct weft_lmt *l;
	unsigned int w = (unsigned int)val;

	if (val >= c->cfg.nr_windows) {
		*reason = WEFT_R_WINDOW_INVALID;
		return WEFT_CMD_EINVAL;
	}
	l = weft_lmt(c, w);
	if (l->window_state != WEFT_WIN_VALID && l->window_state != WEFT_WIN_FATAL) {
		*reason = WEFT_R_WINDOW_INVALID;
		return WEFT_CMD_ESTATE;
	}
	l->window_state = WEFT_WIN_CLOSED;
	/* Snapshot: every task busy now, except this command task. */
	c->snapshot = c->ltv & ~(1u << self);
	weft_set_active(c, w, false);
	*reason = WEFT_R_OK;
	return WEFT_CMD_OK;
}

static unsigned int cmd_acquire(struct weft_core *c, uint64_t val, unsigned int *reason)
{
	uint32_t r = WEFT_ACQ_RCXT(val);
	unsigned int w = WEFT_ACQ_WINDOW(val);
	struct weft_rcxt *x;

	if (r >= c->cfg.nr_rcxt) {
		*reason = WEFT_R_RCXT_INVALID;
		return WEFT_CMD_EINVAL;
	}
	if (w >= c->cfg.nr_windows) {
		*reason = WEFT_R_WINDOW_INVALID;
		return WEFT_CMD_EINVAL;
	}
	x = weft_rcxt(c, r);
	if (x->rcxt_assigned) {
		*reason = WEFT_R_RCXT_BUSY;
		return WEFT_CMD_EBUSY;
	}
	weft_track_free(c, r);
	c->cmpl_tid[r] = 0;
	c->cond_tag[r] = 0;
	memset(x, 0, sizeof(*x));
	x->rcxt_assigned = 1;
	x->local_window = (uint16_t)w;
	x->rcxt_key = WEFT_ACQ_KEY(val);
	x->tid = 0;
	x->rcxt_state = WEFT_RCXT_FREE;
	x->next = WEFT_RCXT_NONE;
	x->data_source_rcxt = x->data_target_rcxt = WEFT_RCXT_NONE;
	*reason = WEFT_R_OK;
	return WEFT_CMD_OK;
}

static unsigned int cmd_rcxt(struct weft_core *c, uint64_t val, bool release,
			     unsigned int *reason)
{
	struct weft_rcxt *x;

	if (val >= c->cfg.nr_rcxt) {
		*reason = WEFT_R_RCXT_INVALID;
		return WEFT_CMD_EINVAL;
	}
	x = weft_rcxt(c, (uint32_t)val);
	if (!x->rcxt_assigned) {
		*reason = WEFT_R_RCXT_INVALID;
		return WEFT_CMD_ESTATE;
	}
	weft_rcxt_cancel(c, (uint32_t)val, WEFT_R_CANCELLED);
	if (release) {
		memset(x, 0, sizeof(*x));
		x->next = WEFT_RCXT_NONE;
	}
	*reason = WEFT_R_OK;
	return WEFT_CMD_OK;
}

static void run_command(struct weft_core *c, uint64_t off, const char *name, uint64_t val)
{
	unsigned int task, status = WEFT_CMD_EINVAL, reason = WEFT_R_OK;

	task = weft_task_alloc(c, WEFT_TASK_CMD, WEFT_NO_WINDOW);
	switch (off) {
	case WEFT_REG_CMD_OPEN_WINDOW:
		status = cmd_open(c, val, &reason);
		break;
	case WEFT_REG_CMD_CLOSE_WINDOW:
		status = cmd_close(c, val, task, &reason);
		break;
	case WEFT_REG_CMD_ACQUIRE_RCXT:
		status = cmd_acquire(c, val, &reason);
		break;
	case WEFT_REG_CMD_RELEASE_RCXT:
		status = cmd_rcxt(c, val, true, &reason);
		break;
	case WEFT_REG_CMD_CANCEL_RCXT:
		status = cmd_rcxt(c, val, false, &reason);
		break;
	}
	if (status != WEFT_CMD_OK)
		weft_count(c, WEFT_CNT_CMD_DISCARDED, 1);
	cmd_done(c, name, off, val, status, reason);
	weft_task_free(c, task);
	if (status == WEFT_CMD_OK && off == WEFT_REG_CMD_CLOSE_WINDOW && c->ops.kick)
		c->ops.kick(c->opaque);
}

/* ---- BAR 0: privileged registers -------------------------------------- */

static bool access_ok(struct weft_core *c, const char *bar, uint64_t off,
		      unsigned int size, bool write)
{
	if ((size != 4 && size != 8) || (off & (size - 1))) {
		weft_guest_error(c, "%s: bad %s of size %u at 0x%llx", bar,
				 write ? "write" : "read", size,
				 (unsigned long long)off);
		return false;
	}
	return true;
}

static uint64_t sub_read(uint64_t reg, uint64_t off, unsigned int size)
{
	if (size == 8)
		return reg;
	return (off & 4) ? reg >> 32 : reg & 0xffffffffu;
}

static uint64_t sub_merge(uint64_t old, uint64_t off, uint64_t val, unsigned int size)
{
	if (size == 8)
		return val;
	if (off & 4)
		return (old & 0xffffffffu) | (val << 32);
	return (old & ~0xffffffffull) | (val & 0xffffffffu);
}

static const char *tce_reg_name(uint64_t off)
{
	switch ((off - WEFT_REG_TCE_BASE_OFF) % WEFT_REG_TCE_STRIDE) {
	case 0x00: return "TCE_BASE";
	case 0x08: return "TCE_CFG";
	case 0x10: return "TCE_OWNER";
	default: return NULL;
	}
}

static uint64_t *tce_reg(struct weft_core *c, uint64_t off)
{
	unsigned int t = (unsigned int)((off - WEFT_REG_TCE_BASE_OFF) / WEFT_REG_TCE_STRIDE);

	switch ((off - WEFT_REG_TCE_BASE_OFF) % WEFT_REG_TCE_STRIDE) {
	case 0x00: return &c->tce_base[t];
	case 0x08: return &c->tce_cfg[t];
	case 0x10: return &c->tce_owner[t];
	default: return NULL;
	}
}

static void reg_trace(struct weft_core *c, enum weft_trace_kind k, const char *name,
		      uint64_t off, uint64_t val, unsigned int size)
{
	struct weft_trace t = {
		.kind = k, .name = name, .addr = off, .val = val, .size = size,
	};

	weft_trace(c, &t);
}

static uint64_t fixed_reg_value(struct weft_core *c, uint64_t reg)
{
	switch (reg) {
	case WEFT_REG_ID:
		return WEFT_ID_MAGIC | ((uint64_t)WEFT_HW_VERSION << 32);
	case WEFT_REG_CAPS:
		return WEFT_CAPS_MAKE(c->cfg.nr_windows, WEFT_NR_TASKS,
				      WEFT_NR_TCE_TABLES, c->cfg.nr_handlers);
	case WEFT_REG_NR_RCXT:
		return c->cfg.nr_rcxt;
	case WEFT_REG_NODE_ID:
		return c->cfg.node_id;
	case WEFT_REG_STATUS:
		return WEFT_STATUS_READY | (c->link_up ? WEFT_STATUS_LINK_UP : 0) |
		       (c->fatal ? WEFT_STATUS_FATAL : 0);
	case WEFT_REG_RECOVERY_COUNT:
		return c->recovery_count;
	case WEFT_REG_KEY_EPOCH:
		return c->key_epoch;
	case WEFT_REG_ACTIVE_WIN0:
		return c->active[0];
	case WEFT_REG_ACTIVE_WIN1:
		return c->active[1];
	case WEFT_REG_LIVE_TASK_VIEW:
		return c->ltv;
	case WEFT_REG_SNAPSHOT_VIEW:
		return c->snapshot;
	case WEFT_REG_CMD_STATUS:
		return c->cmd_status;
	case WEFT_REG_INT_CONFIG:
		return c->int_config;
	case WEFT_REG_INT_PENDING:
		return c->int_pending;
	case WEFT_REG_EVQ_BASE:
		return c->evq_base;
	case WEFT_REG_EVQ_SIZE:
		return c->evq_size;
	case WEFT_REG_EVQ_PROD:
		return c->evq_prod;
	case WEFT_REG_EVQ_CONS:
		return c->evq_cons;
	case WEFT_REG_CNT_NR_OBJ:
	case WEFT_REG_CNT_NR_EXP:
	case WEFT_REG_CNT_CMD_STATUS:
		return weft_cnt_reg_read(c, reg);
	case WEFT_REG_VERBS_NR_QP:
	case WEFT_REG_VERBS_NR_CQ:
	case WEFT_REG_VERBS_NR_PD:
	case WEFT_REG_VERBS_NR_TPT:
	case WEFT_REG_VERBS_NR_UAR:
	case WEFT_REG_VERBS_UAR_OFF:
	case WEFT_REG_VERBS_CMD_STATUS:
		return weft_verbs_reg_read(c, reg);
	default:
		/* A readable register in WEFT_REG_LIST without a case here. */
		weft_guest_error(c, "regs: read of %s, which has no read handler",
				 weft_reg_name(reg));
		return 0;
	}
}

uint64_t weft_core_reg_read(struct weft_core *c, uint64_t off, unsigned int size)
{
	uint64_t reg = off & ~7ull, val = 0;
	const char *name = NULL;

	if (!access_ok(c, "regs", off, size, false)) {
		reg_trace(c, WEFT_TR_REG_READ, NULL, off, 0, size);
		return 0;
	}
	if (reg >= WEFT_REG_INT_MOD_BASE && reg < WEFT_REG_INT_MOD_END) {
		name = "INT_MOD";
		val = c->imod[(reg - WEFT_REG_INT_MOD_BASE) / 8].reg;
	} else if (reg < WEFT_REG_TCE_BASE_OFF) {
		char acc = weft_reg_access(reg);

		name = weft_reg_name(reg);
		if (!name)
			weft_guest_error(c, "regs: read of unknown offset 0x%llx",
					 (unsigned long long)off);
		else if (acc == 'W')
			weft_guest_error(c, "regs: read of write-only %s", name);
		else
			val = fixed_reg_value(c, reg);
	} else if (reg < WEFT_REG_TCE_END) {
		uint64_t *p = tce_reg(c, reg);

		name = tce_reg_name(reg);
		if (p)
			val = *p;
		else
			weft_guest_error(c, "regs: read of reserved TCE offset 0x%llx",
					 (unsigned long long)off);
	} else if (reg >= WEFT_REG_CNT_BASE && reg < WEFT_REG_CNT(WEFT_CNT__COUNT)) {
		unsigned int i = (unsigned int)((reg - WEFT_REG_CNT_BASE) / 8);

		name = weft_counter_name(i);
		val = c->cnt[i];
	} else if ((name = weft_match_reg_name(reg)) != NULL) {
		if (weft_match_reg_access(reg) == 'W')
			weft_guest_error(c, "regs: read of write-only %s", name);
		else
			val = weft_match_reg_read(c, reg);
	} else {
		weft_guest_error(c, "regs: read of unknown offset 0x%llx",
				 (unsigned long long)off);
	}
	val = sub_read(val, off, size);
	reg_trace(c, WEFT_TR_REG_READ, name, off, val, size);
	return val;
}

/* The next key epoch is stored before it can be read: a driver never
 * sees an epoch that a power cycle could hand out again.  If the store
 * fails the epoch stays put, which the driver sees (hw-spec 9). */
static void key_epoch_next(struct weft_core *c)
{
	uint64_t e = c->key_epoch + 1;

	if (c->ops.epoch_store && c->ops.epoch_store(c->opaque, e) != 0)
		return;
	c->key_epoch = e;
}

static void int_ready(struct weft_core *c, uint64_t h)
{
	if (h >= nr_handlers(c)) {
		weft_guest_error(c, "INT_READY: handler %llu out of range",
				 (unsigned long long)h);
		return;
	}
	c->int_ready |= 1u << h;
	c->int_pending &= ~(1u << h);
	irq_present(c, (unsigned int)h, false);
}

static void fixed_reg_write(struct weft_core *c, uint64_t reg, const char *name,
			    uint64_t off, uint64_t val, unsigned int size)
{
	uint64_t v;

	switch (reg) {
	case WEFT_REG_RESET:
		if (val != WEFT_RESET_MAGIC) {
			weft_guest_error(c, "RESET: wrong magic 0x%llx", (unsigned long long)val);
			return;
		}
		weft_core_reset(c);
		return;
	case WEFT_REG_RECOVER:
		if (val != WEFT_RECOVER_MAGIC) {
			weft_guest_error(c, "RECOVER: wrong magic 0x%llx", (unsigned long long)val);
			return;
		}
		core_recover(c);
		return;
	case WEFT_REG_KEY_EPOCH_NEXT:
		if (val != WEFT_EPOCH_MAGIC) {
			weft_guest_error(c, "KEY_EPOCH_NEXT: wrong magic 0x%llx",
					 (unsigned long long)val);
			return;
		}
		key_epoch_next(c);
		return;
	case WEFT_REG_DEBUG_INJECT:
		if (val != WEFT_INJECT_FATAL) {
			weft_guest_error(c, "DEBUG_INJECT: unknown 0x%llx", (unsigned long long)val);
			return;
		}
		core_fatal(c);
		return;
	case WEFT_REG_INT_CONFIG:
		v = sub_merge(c->int_config, off, val, size);
		if (WEFT_INT_CONFIG_HANDLERS(v) < 1 ||
		    WEFT_INT_CONFIG_HANDLERS(v) > c->cfg.nr_handlers ||
		    (v & ~(0xffull | WEFT_INT_CONFIG_EARLY))) {
			weft_guest_error(c, "INT_CONFIG: bad value 0x%llx", (unsigned long long)v);
			return;
		}
		c->int_config = v;
		c->int_ready &= (uint32_t)((1ull << WEFT_INT_CONFIG_HANDLERS(v)) - 1);
		c->int_pending &= (uint32_t)((1ull << WEFT_INT_CONFIG_HANDLERS(v)) - 1);
		return;
	case WEFT_REG_INT_READY:
		int_ready(c, val);
		return;
	case WEFT_REG_EVQ_BASE:
		v = sub_merge(c->evq_base, off, val, size);
		if (v & 63) {
			weft_guest_error(c, "EVQ_BASE: 0x%llx not 64-byte aligned",
					 (unsigned long long)v);
			return;
		}
		c->evq_base = v;
		c->evq_prod = c->evq_cons = 0;
		return;
	case WEFT_REG_EVQ_SIZE:
		if (val != 0 && (val < WEFT_EVQ_MIN_LOG2 || val > WEFT_EVQ_MAX_LOG2)) {
			weft_guest_error(c, "EVQ_SIZE: %llu not 0 or %u..%u",
					 (unsigned long long)val, WEFT_EVQ_MIN_LOG2,
					 WEFT_EVQ_MAX_LOG2);
			return;
		}
		c->evq_size = val;
		c->evq_prod = c->evq_cons = 0;
		return;
	case WEFT_REG_EVQ_CONS:
		v = sub_merge(c->evq_cons, off, val, size);
		if (v > c->evq_prod || (c->evq_size && c->evq_prod - v > (1ull << c->evq_size))) {
			weft_guest_error(c, "EVQ_CONS: %llu outside the produced range",
					 (unsigned long long)v);
			return;
		}
		c->evq_cons = v;
		return;
	case WEFT_REG_VERBS_CMD:
		weft_verbs_cmd(c, val);
		return;
	case WEFT_REG_CNT_CMD:
		weft_cnt_cmd(c, val);
		return;
	case WEFT_REG_CMD_OPEN_WINDOW:
	case WEFT_REG_CMD_CLOSE_WINDOW:
	case WEFT_REG_CMD_ACQUIRE_RCXT:
	case WEFT_REG_CMD_RELEASE_RCXT:
	case WEFT_REG_CMD_CANCEL_RCXT:
		run_command(c, reg, name, val);
		return;
	default:
		/* A writable register in WEFT_REG_LIST without a case here. */
		weft_guest_error(c, "regs: write to %s, which has no write handler", name);
		return;
	}
}

void weft_core_reg_write(struct weft_core *c, uint64_t off, uint64_t val, unsigned int size)
{
	uint64_t reg = off & ~7ull;
	const char *name = NULL;

	if (!access_ok(c, "regs", off, size, true)) {
		reg_trace(c, WEFT_TR_REG_WRITE, NULL, off, val, size);
		return;
	}
	if (size == 4)
		val &= 0xffffffffu;
	if (reg >= WEFT_REG_INT_MOD_BASE && reg < WEFT_REG_INT_MOD_END) {
		unsigned int h = (unsigned int)((reg - WEFT_REG_INT_MOD_BASE) / 8);

		reg_trace(c, WEFT_TR_REG_WRITE, "INT_MOD", off, val, size);
		int_mod_write(c, h, sub_merge(c->imod[h].reg, off, val, size));
		return;
	}
	if (reg < WEFT_REG_TCE_BASE_OFF) {
		char acc = weft_reg_access(reg);

		name = weft_reg_name(reg);
		reg_trace(c, WEFT_TR_REG_WRITE, name, off, val, size);
		if (!name) {
			weft_guest_error(c, "regs: write to unknown offset 0x%llx",
					 (unsigned long long)off);
		} else if (acc == 'R') {
			weft_guest_error(c, "regs: write to read-only %s", name);
		} else if (acc == 'W' && (off & 4)) {
			weft_guest_error(c, "regs: 4-byte write to the high half of %s", name);
		} else {
			fixed_reg_write(c, reg, name, off, val, size);
		}
		return;
	}
	if (reg < WEFT_REG_TCE_END) {
		uint64_t *p = tce_reg(c, reg);

		name = tce_reg_name(reg);
		reg_trace(c, WEFT_TR_REG_WRITE, name, off, val, size);
		if (!p) {
			weft_guest_error(c, "regs: write to reserved TCE offset 0x%llx",
					 (unsigned long long)off);
			return;
		}
		*p = sub_merge(*p, off, val, size);
		weft_xlate_table_update(c, (unsigned int)((reg - WEFT_REG_TCE_BASE_OFF) /
							  WEFT_REG_TCE_STRIDE));
		return;
	}
	if (reg >= WEFT_REG_CNT_BASE && reg < WEFT_REG_CNT(WEFT_CNT__COUNT)) {
		name = weft_counter_name((unsigned int)((reg - WEFT_REG_CNT_BASE) / 8));
		reg_trace(c, WEFT_TR_REG_WRITE, name, off, val, size);
		weft_guest_error(c, "regs: write to read-only counter %s", name);
		return;
	}
	if ((name = weft_match_reg_name(reg)) != NULL) {
		char acc = weft_match_reg_access(reg);

		reg_trace(c, WEFT_TR_REG_WRITE, name, off, val, size);
		if (acc == 'R') {
			weft_guest_error(c, "regs: write to read-only %s", name);
		} else if (size == 4 && acc == 'W') {
			weft_guest_error(c, "regs: 4-byte write to %s", name);
		} else {
			/* QSTAT is write-1-to-act: a half write merges with 0. */
			bool w1 = reg >= WEFT_MATCH_QD_BASE &&
				  (reg - WEFT_MATCH_QD_BASE) % WEFT_MATCH_QD_STRIDE == 0x18;
			uint64_t old = acc == 'B' && !w1 ? weft_match_reg_read(c, reg) : 0;

			weft_match_reg_write(c, reg, sub_merge(old, off, val, size));
		}
		return;
	}
	reg_trace(c, WEFT_TR_REG_WRITE, NULL, off, val, size);
	weft_guest_error(c, "regs: write to unknown offset 0x%llx", (unsigned long long)off);
}

/* ---- BAR 2: SRAM aperture ---------------------------------------------- */

static const char *sram_name(const struct weft_core *c, uint64_t off)
{
	if (off < WEFT_SRAM_LMT_OFF(c->cfg.nr_windows))
		return "LMT";
	if (off >= WEFT_SRAM_RCXT_BASE && off < c->sram_used)
		return "RCXT";
	return NULL;
}

uint64_t weft_core_sram_read(struct weft_core *c, uint64_t off, unsigned int size)
{
	uint64_t val = 0;
	const char *name = NULL;

	if (access_ok(c, "sram", off, size, false)) {
		name = sram_name(c, off);
		if (off >= c->sram_used || size > c->sram_used - off)
			weft_guest_error(c, "sram: read beyond the used SRAM at 0x%llx",
					 (unsigned long long)off);
		else
			memcpy(&val, c->sram + off, size);
	}
	reg_trace(c, WEFT_TR_SRAM_READ, name, off, val, size);
	return val;
}

_Static_assert(WEFT_SRAM_LMT_BASE == 0, "the LMTs start the SRAM");

/* A driver store into the SRAM: the LMTs it touches are checked again
 * at their next use. */
static void sram_store(struct weft_core *c, uint64_t off, uint64_t val, unsigned int size)
{
	uint64_t w, last = (off + size - 1) / WEFT_LMT_SIZE;

	memcpy(c->sram + off, &val, size);
	for (w = off / WEFT_LMT_SIZE; w <= last && w < c->cfg.nr_windows; w++)
		c->lmt_ok[w] = 0;
}

void weft_core_sram_write(struct weft_core *c, uint64_t off, uint64_t val, unsigned int size)
{
	const char *name = NULL;

	if (access_ok(c, "sram", off, size, true)) {
		name = sram_name(c, off);
		if (off >= c->sram_used || size > c->sram_used - off)
			weft_guest_error(c, "sram: write beyond the used SRAM at 0x%llx",
					 (unsigned long long)off);
		else
			sram_store(c, off, val, size);
	}
	reg_trace(c, WEFT_TR_SRAM_WRITE, name, off, val, size);
}

uint64_t weft_core_sram_bar_size(const struct weft_core *c)
{
	return c->sram_size;
}

uint64_t weft_core_db_bar_size(const struct weft_core *c)
{
	return c->db_size;
}

/* ---- BAR 4: doorbell pages ---------------------------------------------- */

static void db_trace(struct weft_core *c, enum weft_trace_kind k, const char *name,
		     unsigned int w, uint64_t off, uint64_t val, unsigned int size)
{
	struct weft_trace t = {
		.kind = k, .name = name, .window = w, .addr = off, .val = val, .size = size,
	};

	weft_trace(c, &t);
}

uint64_t weft_core_db_read(struct weft_core *c, uint64_t off, unsigned int size)
{
	unsigned int w = (unsigned int)(off / WEFT_DB_PAGE_SIZE);
	uint64_t op = off % WEFT_DB_PAGE_SIZE, reg = op & ~7ull, val = 0;
	const char *name = NULL;
	struct weft_lmt *l;

	if (!access_ok(c, "doorbell", off, size, false))
		goto out;
	if (off >= (uint64_t)c->cfg.nr_windows * WEFT_DB_PAGE_SIZE) {
		weft_guest_error(c, "doorbell: read beyond the last window at 0x%llx",
				 (unsigned long long)off);
		goto out;
	}
	name = weft_db_name(reg);
	if (!name) {
		weft_guest_error(c, "doorbell: read of unknown offset 0x%llx in window %u",
				 (unsigned long long)op, w);
		goto out;
	}
	if (weft_db_access(reg) == 'W') {
		weft_guest_error(c, "doorbell: read of write-only %s", name);
		goto out;
	}
	l = weft_lmt(c, w);
	switch (reg) {
	case WEFT_DB_STATE:
		val = l->window_state;
		break;
	case WEFT_DB_SEND_READY:
		val = l->send_fifo_ready_slots;
		break;
	case WEFT_DB_RECV_AVAIL:
		val = l->recv_fifo_avail_slots;
		break;
	case WEFT_DB_RECV_COUNT:
		val = l->recv_current_cnt;
		break;
	case WEFT_DB_SEND_COUNT:
		val = l->send_current_cnt;
		break;
	}
	val = sub_read(val, op, size);
out:
	db_trace(c, WEFT_TR_DB_READ, name, w, off, val, size);
	return val;
}

static void db_command(struct weft_core *c, unsigned int w, uint64_t reg,
		       const char *name, uint64_t val)
{
	struct weft_lmt *l = weft_lmt(c, w);
	unsigned int task, why;
	uint64_t frames;

	task = weft_task_alloc(c, WEFT_TASK_CMD, w);
	why = l->window_state == WEFT_WIN_VALID ? weft_lmt_check(c, w) : WEFT_R_WINDOW_INVALID;
	if (why != WEFT_R_OK) {
		struct weft_trace t = {
			.kind = WEFT_TR_CMD, .name = name, .window = w, .val = val,
			.reason = why, .size = WEFT_CMD_ESTATE,
			.msg = "doorbell discarded: window not valid",
		};

		weft_count(c, WEFT_CNT_CMD_DISCARDED, 1);
		weft_trace(c, &t);
		weft_task_free(c, task);
		return;
	}
	switch (reg) {
	case WEFT_DB_START_TRANSMIT:
		frames = 1ull << l->send_fifo_size;
		if (val > frames - l->send_fifo_ready_slots) {
			weft_guest_error(c, "StartTransmit: window %u: %llu frames exceed the free send FIFO",
					 w, (unsigned long long)val);
			val = frames - l->send_fifo_ready_slots;
		}
		l->send_fifo_ready_slots += (uint32_t)val;
		if (l->send_fifo_ready_slots > 0)
			weft_set_active(c, w, true);
		if (val && c->ops.kick)
			c->ops.kick(c->opaque);
		break;
	case WEFT_DB_RETURN_SLOTS:
		frames = 1ull << l->recv_fifo_size;
		if (val > frames - l->recv_fifo_avail_slots) {
			weft_guest_error(c, "ReturnSlots: window %u: %llu slots exceed the FIFO",
					 w, (unsigned long long)val);
			val = frames - l->recv_fifo_avail_slots;
		}
		l->recv_fifo_avail_slots += (uint32_t)val;
		break;
	case WEFT_DB_RECV_THRESHOLD:
		l->recv_int_threshold = (uint32_t)val;
		break;
	case WEFT_DB_SEND_THRESHOLD:
		l->send_int_threshold_hi = (uint32_t)val;
		break;
	}
	weft_task_free(c, task);
}

void weft_core_db_write(struct weft_core *c, uint64_t off, uint64_t val, unsigned int size)
{
	unsigned int w = (unsigned int)(off / WEFT_DB_PAGE_SIZE);
	uint64_t op = off % WEFT_DB_PAGE_SIZE, reg = op & ~7ull;
	const char *name = NULL;

	if (!access_ok(c, "doorbell", off, size, true)) {
		db_trace(c, WEFT_TR_DB_WRITE, NULL, w, off, val, size);
		return;
	}
	if (size == 4)
		val &= 0xffffffffu;
	if (off >= weft_verbs_uar_off()) {
		uint64_t u = off - weft_verbs_uar_off();

		db_trace(c, WEFT_TR_DB_WRITE, weft_uar_name(u % WEFT_DB_PAGE_SIZE),
			 (unsigned int)(u / WEFT_DB_PAGE_SIZE), off, val, size);
		if (size != 8)
			weft_guest_error(c, "UAR: %u-byte write at 0x%llx", size,
					 (unsigned long long)off);
		else
			weft_verbs_uar_write(c, u, val);
		return;
	}
	name = weft_db_name(reg);
	db_trace(c, WEFT_TR_DB_WRITE, name, w, off, val, size);
	if (off >= (uint64_t)c->cfg.nr_windows * WEFT_DB_PAGE_SIZE) {
		weft_guest_error(c, "doorbell: write beyond the last window at 0x%llx",
				 (unsigned long long)off);
		return;
	}
	if (!name) {
		weft_guest_error(c, "doorbell: write to unknown offset 0x%llx in window %u",
				 (unsigned long long)op, w);
		return;
	}
	if (weft_db_access(reg) == 'R') {
		weft_guest_error(c, "doorbell: write to read-only %s", name);
		return;
	}
	if (op & 4) {
		weft_guest_error(c, "doorbell: 4-byte write to the high half of %s", name);
		return;
	}
	if (c->fatal) {
		weft_count(c, WEFT_CNT_CMD_DISCARDED, 1);
		weft_drop(c, NULL, w, WEFT_R_ADAPTER_FATAL);
		return;
	}
	db_command(c, w, reg, name, val);
}

/* ---- receive entry point and poll loop --------------------------------- */

enum rx_mode { RX_COPY, RX_LEND, RX_SHARED };

/* Packet types whose payload the core only places, or reads its own
 * sub-headers from once into a copy (weft_verbs_rx): theirs may stay in
 * memory a peer changes meanwhile. */
static bool payload_placed_only(uint8_t type)
{
	return type == WEFT_PKT_FIFO || type == WEFT_PKT_RDMAW ||
	       type == WEFT_PKT_TP_RDMAW || type == WEFT_PKT_VERBS;
}

/* Queue a packet, lent (kept by reference, whole or its payload) or
 * copied.  Returns 1 when lent and kept, 0 when copied or dropped,
 * -EAGAIN when full. */
static int rx_enqueue(struct weft_core *c, const void *pkt, size_t len, enum rx_mode mode)
{
	struct weft_pkt *slot;

	if (!pkt || len < WEFT_WIRE_HDR_SIZE || len > WEFT_WIRE_MAX_FRAME) {
		weft_drop(c, NULL, WEFT_NO_WINDOW, WEFT_R_BAD_HEADER);
		return 0;
	}
	if (c->rxq_count >= c->rxq_len)
		return -EAGAIN;
	slot = &c->rxq[(c->rxq_head + c->rxq_count) % c->rxq_len];
	slot->len = (uint32_t)len;
	slot->lent = NULL;
	slot->ncopy = (uint32_t)len;
	if (mode == RX_LEND) {
		slot->lent = pkt;
		slot->ncopy = 0;
	} else if (mode == RX_SHARED) {
		/* The header once, then only the copy: its type decides. */
		memcpy(slot->data, pkt, WEFT_WIRE_HDR_SIZE);
		if (payload_placed_only(((const struct weft_wire_hdr *)slot->data)->type) &&
		    len > WEFT_WIRE_HDR_SIZE) {
			slot->lent = pkt;
			slot->ncopy = WEFT_WIRE_HDR_SIZE;
		} else {
			memcpy(slot->data + WEFT_WIRE_HDR_SIZE,
			       (const uint8_t *)pkt + WEFT_WIRE_HDR_SIZE, len - WEFT_WIRE_HDR_SIZE);
		}
	} else {
		memcpy(slot->data, pkt, len);
	}
	c->rxq_count++;
	if (c->ops.kick)
		c->ops.kick(c->opaque);
	return slot->lent ? 1 : 0;
}

int weft_core_receive(struct weft_core *c, const void *pkt, size_t len)
{
	return rx_enqueue(c, pkt, len, RX_COPY);
}

int weft_core_receive_lent(struct weft_core *c, const void *pkt, size_t len)
{
	return rx_enqueue(c, pkt, len,
			  c->ops.rx_release && !((uintptr_t)pkt & 7) ? RX_LEND : RX_COPY);
}

int weft_core_receive_shared(struct weft_core *c, const void *pkt, size_t len)
{
	return rx_enqueue(c, pkt, len, c->ops.rx_release ? RX_SHARED : RX_COPY);
}

void weft_core_rx_unlend(struct weft_core *c)
{
	uint32_t i;

	for (i = 0; i < c->rxq_count; i++) {
		struct weft_pkt *p = &c->rxq[(c->rxq_head + i) % c->rxq_len];

		if (!p->lent)
			continue;
		memcpy(p->data + p->ncopy, p->lent + p->ncopy, p->len - p->ncopy);
		p->ncopy = p->len;
		rxq_done(c, p);
	}
}

bool weft_core_can_receive(const struct weft_core *c)
{
	return c->rxq_count < c->rxq_len;
}

/* Whether a received packet may give the matching, verbs or counter
 * engine work: every type but the window engines' own (weft_rx_process),
 * which reach none of them. */
static bool rx_for_engines(const uint8_t *pkt, size_t len)
{
	if (len < sizeof(struct weft_wire_hdr))
		return true;
	switch (pkt[offsetof(struct weft_wire_hdr, type)]) {
	case WEFT_PKT_FIFO:
	case WEFT_PKT_RDMAW:
	case WEFT_PKT_TP_RDMAW:
	case WEFT_PKT_RDMAR_REQ:
	case WEFT_PKT_TP_RDMAR_REQ:
	case WEFT_PKT_RDMAR_FIFO_REQ:
	case WEFT_PKT_FIFO_DATA:
	case WEFT_PKT_RDMAR_PUT_REQ:
	case WEFT_PKT_COMPLETION:
		return false;
	default:
		return true;
	}
}

/* Process one received packet; *engines is set when it may have given
 * the other engines work.  Returns false when there was none. */
static bool rx_one(struct weft_core *c, bool *engines)
{
	struct weft_pkt *p;
	unsigned int task;
	const uint8_t *pkt;

	/* A received packet may queue one completion packet: keep room. */
	if (c->rxq_count == 0 || c->ctlq_count >= WEFT_CTLQ_LEN)
		return false;
	task = weft_task_alloc(c, WEFT_TASK_RX, WEFT_NO_WINDOW);
	p = rxq_pop(c);
	pkt = rxq_at(p, 0);
	if (rx_for_engines(pkt, p->len))
		*engines = true;
	weft_rx_process(c, pkt, rxq_at(p, WEFT_WIRE_HDR_SIZE), p->len);
	rxq_done(c, p);
	weft_task_free(c, task);
	return true;
}

bool weft_core_poll(struct weft_core *c, unsigned int budget)
{
	bool blocked = false, engines = true;

	weft_tx_reap(c);
	if (!c->ops.timer_arm) {
		if (c->ops.now_ns && imod_deadline(c))
			imod_timer(c, c->ops.now_ns(c->opaque));
		weft_verbs_poll_timer(c);
		weft_cnt_poll_timer(c);
		weft_match_timer(c);
	}
	if (c->fatal)
		rxq_discard(c, WEFT_R_ADAPTER_FATAL);
	c->rx_batch = true;
	/* The matching, verbs and counter engines are asked for work while
	 * one of them did some or a packet for them was received since they
	 * last had none: within a poll nothing else gives them work (the
	 * window engines' packets and sends do not), and what comes
	 * meanwhile from elsewhere is in the return value.  Saves three
	 * calls per packet on a window stream. */
	while (budget > 0 && !c->fatal) {
		bool did = false, busy = false;

		if (rx_one(c, &engines)) {
			did = true;
			budget--;
		}
		if (budget > 0 && !blocked) {
			int r = weft_tx_one(c);

			if (r > 0) {
				did = true;
				budget--;
			} else if (r == -EAGAIN) {
				blocked = true;
				weft_count(c, WEFT_CNT_TX_BLOCKED, 1);
			}
		}
		if (budget > 0 && !blocked && engines && weft_match_has_work(c)) {
			int r = weft_match_poll(c);

			if (r > 0) {
				did = busy = true;
				budget--;
			} else if (r == -EAGAIN) {
				blocked = true;
			}
		}
		if (budget > 0 && !blocked && engines && weft_verbs_has_work(c)) {
			int r = weft_verbs_poll(c);

			if (r > 0) {
				did = busy = true;
				budget--;
			} else if (r == -EAGAIN) {
				blocked = true;
			}
		}
		if (budget > 0 && !blocked && engines && weft_cnt_has_work(c)) {
			int r = weft_cnt_poll(c);

			if (r > 0) {
				did = busy = true;
				budget--;
			} else if (r == -EAGAIN) {
				blocked = true;
			}
		}
		if (!blocked && !busy)
			engines = false;
		if (!did)
			break;
	}
	/* Overlapping receive tasks finish before the poll returns. */
	weft_rx_flush(c);
	c->rx_batch = false;
	weft_tx_reap(c);
	return (c->rxq_count > 0 && c->ctlq_count < WEFT_CTLQ_LEN) ||
	       weft_tx_has_work(c) || weft_verbs_has_work(c) || weft_match_has_work(c) ||
	       weft_cnt_has_work(c) || blocked;
}

void weft_timer_sync(struct weft_core *c)
{
	uint64_t d = weft_verbs_deadline(c), k = weft_cnt_deadline(c);
	uint64_t mt = c->match ? weft_match_deadline(c) : 0, im = imod_deadline(c);

	if (k && (!d || k < d))
		d = k;
	if (mt && (!d || mt < d))
		d = mt;
	if (im && (!d || im < d))
		d = im;
	if (c->ops.timer_arm)
		c->ops.timer_arm(c->opaque, d);
}

void weft_core_timer(struct weft_core *c)
{
	if (c->ops.now_ns)
		imod_timer(c, c->ops.now_ns(c->opaque));
	weft_verbs_timer(c);
	weft_cnt_timer(c);
	weft_match_timer(c);
}

void weft_core_set_link(struct weft_core *c, bool up)
{
	if (c->link_up == up)
		return;
	c->link_up = up;
	weft_event(c, WEFT_EV_LINK, WEFT_NO_WINDOW, WEFT_RCXT_NONE, 0, up ? 1 : 0);
}

uint64_t weft_core_counter(const struct weft_core *c, unsigned int counter)
{
	return counter < WEFT_CNT__COUNT ? c->cnt[counter] : 0;
}
