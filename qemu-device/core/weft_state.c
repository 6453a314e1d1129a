// SPDX-License-Identifier: MIT
/*
 * Saving and loading the adapter's whole state (weft_core_save and
 * weft_core_load, docs/qemu-device.md "Migration and snapshots"): the
 * record writer and reader of weft_state.h, and the core's own records.
 * The engines' records are their files' (weft_verbs_obj.c, weft_match.c,
 * weft_cnt.c).
 *
 * Loading builds a second core with the same configuration, reads the
 * stream into it, checks every index and length the engines use without
 * checking again, and only then swaps it with the live one: a refused
 * stream leaves the live core as it was.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft_core_int.h"
#include "weft_state.h"

/* ---- writer -------------------------------------------------------------- */

void weft_state_put(struct weft_state_w *w, const void *p, size_t n)
{
	if (w->oom || !n)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 65536;
		uint8_t *b;

		while (cap < w->len + n)
			cap *= 2;
		b = realloc(w->buf, cap);
		if (!b) {
			w->oom = true;
			return;
		}
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

void weft_state_put_u32(struct weft_state_w *w, uint32_t v)
{
	weft_state_put(w, &v, sizeof(v));
}

void weft_state_put_u64(struct weft_state_w *w, uint64_t v)
{
	weft_state_put(w, &v, sizeof(v));
}

/* FNV-1a of a record name: the record's tag. */
static uint32_t name_tag(const char *name)
{
	uint32_t h = 2166136261u;

	while (*name)
		h = (h ^ (uint8_t)*name++) * 16777619u;
	return h;
}

/* An element as it goes into the stream: pointers 0, deadlines as time
 * left.  True when all of it is zero. */
static bool out_element(const struct weft_state_w *w, uint8_t *tmp, const void *p, size_t size,
			const struct weft_state_layout *lay)
{
	size_t i;

	memcpy(tmp, p, size);
	for (i = 0; lay && i < lay->nptr; i++)
		memset(tmp + lay->ptr[i], 0, sizeof(void *));
	for (i = 0; lay && i < lay->ndl; i++) {
		uint64_t d;

		memcpy(&d, tmp + lay->dl[i], sizeof(d));
		if (d)
			d = d > w->now ? d - w->now + 1 : 1;
		memcpy(tmp + lay->dl[i], &d, sizeof(d));
	}
	for (i = 0; i < size; i++)
		if (tmp[i])
			return false;
	return true;
}

static void put_head(struct weft_state_w *w, const char *name, size_t esize, uint32_t n)
{
	weft_state_put_u32(w, name_tag(name));
	weft_state_put_u32(w, (uint32_t)esize);
	weft_state_put_u32(w, n);
}

void weft_state_put_struct(struct weft_state_w *w, const char *name, const void *p,
			   size_t size, const struct weft_state_layout *lay)
{
	uint8_t *tmp = malloc(size);

	if (!tmp) {
		w->oom = true;
		return;
	}
	put_head(w, name, size, 1);
	out_element(w, tmp, p, size, lay);
	weft_state_put(w, tmp, size);
	free(tmp);
}

void weft_state_put_table(struct weft_state_w *w, const char *name, const void *base,
			  uint32_t n, size_t esize, const struct weft_state_layout *lay)
{
	uint8_t *tmp = malloc(esize);
	size_t at;
	uint32_t i, used = 0;

	if (!tmp) {
		w->oom = true;
		return;
	}
	put_head(w, name, esize, n);
	at = w->len;
	weft_state_put_u32(w, 0);
	for (i = 0; i < n; i++) {
		if (out_element(w, tmp, (const uint8_t *)base + (size_t)i * esize, esize, lay))
			continue;
		weft_state_put_u32(w, i);
		weft_state_put(w, tmp, esize);
		used++;
	}
	if (!w->oom)
		memcpy(w->buf + at, &used, sizeof(used));
	free(tmp);
}

/* ---- reader -------------------------------------------------------------- */

bool weft_state_fail(struct weft_state_r *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->bad && r->err && r->errlen) {
		va_start(ap, fmt);
		vsnprintf(r->err, r->errlen, fmt, ap);
		va_end(ap);
	}
	r->bad = true;
	return false;
}

bool weft_state_get(struct weft_state_r *r, void *p, size_t n)
{
	if (r->bad)
		return false;
	if (n > r->len - r->off)
		return weft_state_fail(r, "the stream ends at byte %zu inside a record", r->len);
	memcpy(p, r->buf + r->off, n);
	r->off += n;
	return true;
}

bool weft_state_get_u32(struct weft_state_r *r, uint32_t *v)
{
	return weft_state_get(r, v, sizeof(*v));
}

bool weft_state_get_u64(struct weft_state_r *r, uint64_t *v)
{
	return weft_state_get(r, v, sizeof(*v));
}

bool weft_state_bools(struct weft_state_r *r, const char *what, const void *base, size_t count,
		      size_t stride, const size_t *off, unsigned int n)
{
	const uint8_t *p = base;
	size_t i;
	unsigned int k;

	for (i = 0; i < count; i++, p += stride)
		for (k = 0; k < n; k++)
			if (p[off[k]] > 1)
				return weft_state_fail(r, "%s %zu: a flag holds %u", what, i,
						       p[off[k]]);
	return true;
}

bool weft_state_get_count(struct weft_state_r *r, const char *what, uint64_t *v, uint64_t max)
{
	if (!weft_state_get_u64(r, v))
		return false;
	if (*v > max)
		return weft_state_fail(r, "%s: %llu, more than %llu", what,
				       (unsigned long long)*v, (unsigned long long)max);
	return true;
}

static bool get_head(struct weft_state_r *r, const char *name, size_t esize, uint32_t n)
{
	uint32_t tag, size, count;

	if (!weft_state_get_u32(r, &tag) || !weft_state_get_u32(r, &size) ||
	    !weft_state_get_u32(r, &count))
		return false;
	if (tag != name_tag(name))
		return weft_state_fail(r, "record %s expected at byte %zu: another record is there "
				       "(a stream of another build)", name, r->off - 12);
	if (size != esize)
		return weft_state_fail(r, "record %s: %u bytes per element in the stream, %zu in "
				       "this build (the struct changed)", name, size, esize);
	if (count != n)
		return weft_state_fail(r, "record %s: %u elements in the stream, %u here "
				       "(another configuration)", name, count, n);
	return true;
}

/* An element from the stream into dst: pointers keep dst's, deadlines
 * become absolute. */
static bool in_element(struct weft_state_r *r, uint8_t *dst, size_t size,
		       const struct weft_state_layout *lay)
{
	void *keep[8];
	size_t i;

	if (lay && lay->nptr > 8)
		return weft_state_fail(r, "internal: more than 8 pointer fields");
	for (i = 0; lay && i < lay->nptr; i++)
		memcpy(&keep[i], dst + lay->ptr[i], sizeof(void *));
	if (!weft_state_get(r, dst, size))
		return false;
	for (i = 0; lay && i < lay->nptr; i++)
		memcpy(dst + lay->ptr[i], &keep[i], sizeof(void *));
	for (i = 0; lay && i < lay->ndl; i++) {
		uint64_t d;

		memcpy(&d, dst + lay->dl[i], sizeof(d));
		if (d)
			d = r->now + d - 1;
		memcpy(dst + lay->dl[i], &d, sizeof(d));
	}
	return true;
}

bool weft_state_get_struct(struct weft_state_r *r, const char *name, void *p, size_t size,
			   const struct weft_state_layout *lay)
{
	return get_head(r, name, size, 1) && in_element(r, p, size, lay);
}

/* Elements [from, to) of a table all zero.  Only those that are not are
 * written: the fresh tables' untouched pages stay unallocated. */
static void zero_elements(void *base, uint32_t from, uint32_t to, size_t esize)
{
	uint8_t *p = (uint8_t *)base + (size_t)from * esize;
	uint8_t *end = (uint8_t *)base + (size_t)to * esize;
	size_t i;

	for (; p < end; p += esize)
		for (i = 0; i < esize; i++)
			if (p[i]) {
				memset(p, 0, esize);
				break;
			}
}

bool weft_state_get_table(struct weft_state_r *r, const char *name, void *base, uint32_t n,
			  size_t esize, const struct weft_state_layout *lay)
{
	uint32_t used, i, idx = 0, prev = 0;

	if (!get_head(r, name, esize, n) || !weft_state_get_u32(r, &used))
		return false;
	if (used > n)
		return weft_state_fail(r, "record %s: %u elements used of %u", name, used, n);
	for (i = 0; i < used; i++) {
		if (!weft_state_get_u32(r, &idx))
			return false;
		if (idx >= n || (i && idx <= prev))
			return weft_state_fail(r, "record %s: element index %u out of order or "
					       "beyond %u", name, idx, n);
		zero_elements(base, i ? prev + 1 : 0, idx, esize);
		prev = idx;
		if (!in_element(r, (uint8_t *)base + (size_t)idx * esize, esize, lay))
			return false;
	}
	zero_elements(base, used ? prev + 1 : 0, n, esize);
	return true;
}

/* ---- the core's records ------------------------------------------------------ */

/* A change of struct weft_core stops here: its author checks that a new
 * field is no pointer, deadline or embedder's value (core_scrub and
 * core_load) nor an index used unchecked (core_check). */
WEFT_STATIC_ASSERT(sizeof(struct weft_core) == 184352, "weft_core changed: see core_scrub");

/* The deadlines of struct weft_core: each handler's interrupt moderation. */
#define IMOD_DL(h) offsetof(struct weft_core, imod[h].gap_end), \
		   offsetof(struct weft_core, imod[h].due)
static const size_t core_dl[] = {
	IMOD_DL(0), IMOD_DL(1), IMOD_DL(2), IMOD_DL(3), IMOD_DL(4), IMOD_DL(5),
	IMOD_DL(6), IMOD_DL(7), IMOD_DL(8), IMOD_DL(9), IMOD_DL(10), IMOD_DL(11),
	IMOD_DL(12), IMOD_DL(13), IMOD_DL(14), IMOD_DL(15),
};
WEFT_STATIC_ASSERT(WEFT_STATE_N(core_dl) == 2 * WEFT_MAX_HANDLERS, "a deadline pair per handler");
static const struct weft_state_layout core_lay = { .dl = core_dl, .ndl = WEFT_STATE_N(core_dl) };

/* The fields of struct weft_core that are not carried: the configuration
 * (the loading core's own, compared), the embedder's hooks, the key
 * epoch (non-volatile: the loading adapter's store holds its own), the
 * link (the embedder's connection), and the owned memory (its records
 * follow). */
static void core_scrub(struct weft_core *x)
{
	memset(&x->cfg, 0, sizeof(x->cfg));
	memset(&x->ops, 0, sizeof(x->ops));
	x->opaque = NULL;
	x->verbs = NULL;
	x->match = NULL;
	x->ctr = NULL;
	x->sram = NULL;
	x->rxq = NULL;
	x->ctlq = NULL;
	x->track = NULL;
	x->cmpl_tid = NULL;
	x->cond_tag = NULL;
	x->lmt_ok = NULL;
	x->tx = NULL;
	x->key_epoch = 0;
	x->link_up = false;
}

static void put_pkts(struct weft_state_w *w, const char *name, const struct weft_pkt *q,
		     uint32_t qlen, uint32_t head, uint32_t count)
{
	uint32_t i;

	put_head(w, name, 0, count);
	for (i = 0; i < count; i++) {
		const struct weft_pkt *p = &q[(head + i) % qlen];

		weft_state_put_u32(w, p->len);
		if (p->lent) {
			weft_state_put(w, p->data, p->ncopy);
			weft_state_put(w, p->lent + p->ncopy, p->len - p->ncopy);
		} else {
			weft_state_put(w, p->data, p->len);
		}
	}
}

static bool get_pkts(struct weft_state_r *r, const char *name, struct weft_pkt *q,
		     uint32_t qlen, uint32_t *count)
{
	uint32_t tag, size, n, i;

	if (!weft_state_get_u32(r, &tag) || !weft_state_get_u32(r, &size) ||
	    !weft_state_get_u32(r, &n))
		return false;
	if (tag != name_tag(name) || size != 0)
		return weft_state_fail(r, "record %s expected at byte %zu", name, r->off - 12);
	if (n > qlen)
		return weft_state_fail(r, "record %s: %u packets for a queue of %u", name, n, qlen);
	for (i = 0; i < n; i++) {
		if (!weft_state_get_u32(r, &q[i].len))
			return false;
		if (q[i].len < sizeof(struct weft_wire_hdr) || q[i].len > WEFT_WIRE_MAX_FRAME)
			return weft_state_fail(r, "record %s: packet of %u bytes", name, q[i].len);
		if (!weft_state_get(r, q[i].data, q[i].len))
			return false;
		q[i].ncopy = q[i].len;
	}
	*count = n;
	return true;
}

/* Pages of the SRAM that are not all zero. */
#define SRAM_PAGE 4096u

static void core_save(const struct weft_core *c, struct weft_state_w *w)
{
	struct weft_core *x = malloc(sizeof(*x));
	struct weft_core_config cf = c->cfg;
	uint32_t r, ntrack = 0;

	if (!x) {
		w->oom = true;
		return;
	}
	weft_state_put_u64(w, WEFT_STATE_MAGIC);
	weft_state_put_u32(w, WEFT_STATE_VERSION);
	cf.node_id = 0;
	cf.key_epoch = 0;
	cf.match_epoch = 0;
	weft_state_put_struct(w, "weft_core_config", &cf, sizeof(cf), NULL);
	*x = *c;
	core_scrub(x);
	/* Work inside weft_core_poll only: never pending between calls. */
	x->rx_npend = 0;
	x->rx_batch = false;
	weft_state_put_struct(w, "weft_core", x, sizeof(*x), &core_lay);
	free(x);
	weft_state_put_table(w, "sram", c->sram, (uint32_t)(c->sram_size / SRAM_PAGE), SRAM_PAGE,
			     NULL);
	put_pkts(w, "rxq", c->rxq, c->rxq_len, c->rxq_head, c->rxq_count);
	put_pkts(w, "ctlq", c->ctlq, WEFT_CTLQ_LEN, c->ctlq_head, c->ctlq_count);
	for (r = 0; r < c->cfg.nr_rcxt; r++)
		ntrack += c->track[r].bits != NULL;
	put_head(w, "track", sizeof(uint64_t), ntrack);
	for (r = 0; r < c->cfg.nr_rcxt; r++) {
		const struct weft_track *t = &c->track[r];

		if (!t->bits)
			continue;
		weft_state_put_u32(w, r);
		weft_state_put_u32(w, t->tid);
		weft_state_put_u64(w, t->nchunks);
		weft_state_put(w, t->bits, (t->nchunks + 63) / 64 * 8);
	}
	weft_state_put_table(w, "cmpl_tid", c->cmpl_tid, c->cfg.nr_rcxt, sizeof(uint32_t), NULL);
	weft_state_put_table(w, "cond_tag", c->cond_tag, c->cfg.nr_rcxt, sizeof(uint8_t), NULL);
}

static bool get_track(struct weft_core *c, struct weft_state_r *r)
{
	uint32_t tag, size, n, i, idx = 0, prev = 0;

	if (!weft_state_get_u32(r, &tag) || !weft_state_get_u32(r, &size) ||
	    !weft_state_get_u32(r, &n))
		return false;
	if (tag != name_tag("track") || size != sizeof(uint64_t) || n > c->cfg.nr_rcxt)
		return weft_state_fail(r, "record track: bad head");
	c->track_bytes = 0;
	for (i = 0; i < n; i++) {
		struct weft_track *t;
		uint64_t words;

		if (!weft_state_get_u32(r, &idx))
			return false;
		if (idx >= c->cfg.nr_rcxt || (i && idx <= prev))
			return weft_state_fail(r, "record track: rCxt %u", idx);
		prev = idx;
		t = &c->track[idx];
		if (!weft_state_get_u32(r, &t->tid) ||
		    !weft_state_get_count(r, "track chunks", &t->nchunks,
					  WEFT_TRACK_BUDGET * 8))
			return false;
		words = (t->nchunks + 63) / 64;
		if (c->track_bytes + words * 8 > WEFT_TRACK_BUDGET)
			return weft_state_fail(r, "record track: over the tracking budget");
		t->bits = calloc(words ? words : 1, sizeof(uint64_t));
		if (!t->bits)
			return weft_state_fail(r, "out of memory");
		c->track_bytes += words * 8;
		if (!weft_state_get(r, t->bits, words * 8))
			return false;
	}
	return true;
}

static bool task_ok(uint8_t t)
{
	return t < WEFT_NR_TASKS || t == WEFT_NO_TASK;
}

/* The indexes in the core's own struct that the engines use unchecked. */
static bool core_check(struct weft_core *c, struct weft_state_r *r)
{
	unsigned int i, q;

	if (!WEFT_STATE_BOOLS(r, "core", c, 1, struct weft_core,
			      offsetof(struct weft_core, irq_unpresented),
			      offsetof(struct weft_core, fatal),
			      offsetof(struct weft_core, tx_have_cur),
			      offsetof(struct weft_core, rx_batch)) ||
	    !WEFT_STATE_BOOLS(r, "window", c->win, WEFT_MAX_WINDOWS, struct weft_win,
			      offsetof(struct weft_win, fop.busy),
			      offsetof(struct weft_win, fop.checking),
			      offsetof(struct weft_win, fop_signal),
			      offsetof(struct weft_win, rop_turn)))
		return false;

	for (i = 0; i < WEFT_NR_TASKS; i++)
		if (c->task_kind[i] > WEFT_TASK_CMD ||
		    (c->task_win[i] >= c->cfg.nr_windows && c->task_win[i] != WEFT_NO_WINDOW))
			return weft_state_fail(r, "task %u: kind %u window %u", i,
					       c->task_kind[i], c->task_win[i]);
	for (i = 0; i < WEFT_MAX_WINDOWS; i++) {
		const struct weft_win *w = &c->win[i];

		if (!task_ok(w->fop.task) || !task_ok(w->rop_task) ||
		    w->cond_collect > WEFT_NR_COND)
			return weft_state_fail(r, "window %u: bad task or queue index", i);
		for (q = 0; q < WEFT_NR_COND; q++)
			if (w->cond[q].state > WEFT_COND_FIRED)
				return weft_state_fail(r, "window %u queue %u: state %u", i, q,
						       w->cond[q].state);
	}
	if (c->rx_npend || c->rx_batch)
		return weft_state_fail(r, "receive entries pending outside a poll");
	if (c->tx_cur >= c->cfg.nr_windows || c->irq_rr >= WEFT_MAX_HANDLERS)
		return weft_state_fail(r, "window %u or handler %u out of range", c->tx_cur,
				       c->irq_rr);
	for (i = 0; i < WEFT_MAX_HANDLERS; i++) {
		uint64_t m = c->imod[i].reg;

		if ((m >> 32) || WEFT_INT_MOD_US(m) > WEFT_INT_MOD_MAX_US ||
		    (WEFT_INT_MOD_COUNT(m) && !WEFT_INT_MOD_US(m)) ||
		    (c->imod[i].due && !WEFT_INT_MOD_US(m)))
			return weft_state_fail(r, "handler %u: INT_MOD 0x%llx, due %llu", i,
					       (unsigned long long)m,
					       (unsigned long long)c->imod[i].due);
	}
	if (c->evq_size > WEFT_EVQ_MAX_LOG2 || c->evq_cons > c->evq_prod ||
	    (c->evq_size && c->evq_prod - c->evq_cons > (1ull << c->evq_size)))
		return weft_state_fail(r, "event queue: size %llu prod %llu cons %llu",
				       (unsigned long long)c->evq_size,
				       (unsigned long long)c->evq_prod,
				       (unsigned long long)c->evq_cons);
	for (i = 0; i < c->cfg.nr_rcxt; i++)
		if (c->cond_tag[i] > WEFT_NR_COND)
			return weft_state_fail(r, "rCxt %u: conditional queue %u", i, c->cond_tag[i]);
	for (i = 0; i < WEFT_NR_TCE_TABLES; i++)
		weft_xlate_table_update(c, i);
	return true;
}

static bool core_load(struct weft_core *c, struct weft_state_r *r)
{
	struct weft_core *x = malloc(sizeof(*x));
	struct weft_core_config cf, mine = c->cfg;
	uint64_t magic;
	uint32_t version;

	if (!x)
		return weft_state_fail(r, "out of memory");
	if (!weft_state_get_u64(r, &magic) || !weft_state_get_u32(r, &version))
		goto out;
	if (magic != WEFT_STATE_MAGIC) {
		weft_state_fail(r, "not a Weft adapter state");
		goto out;
	}
	if (version != WEFT_STATE_VERSION) {
		weft_state_fail(r, "state version %u, this build reads version %u", version,
				WEFT_STATE_VERSION);
		goto out;
	}
	/* Not compared: the adapter's own identity and incarnations. */
	mine.node_id = 0;
	mine.key_epoch = 0;
	mine.match_epoch = 0;
	if (!weft_state_get_struct(r, "weft_core_config", &cf, sizeof(cf), NULL))
		goto out;
	if (memcmp(&cf, &mine, sizeof(cf))) {
		weft_state_fail(r, "the state is of an adapter with another configuration "
				"(windows, rCxts, handlers, verbs or matching sizes)");
		goto out;
	}
	*x = *c;
	if (!weft_state_get_struct(r, "weft_core", c, sizeof(*c), &core_lay))
		goto out;
	/* Back what is not carried, from the fresh core. */
	c->cfg = x->cfg;
	c->ops = x->ops;
	c->opaque = x->opaque;
	c->verbs = x->verbs;
	c->match = x->match;
	c->ctr = x->ctr;
	c->sram = x->sram;
	c->rxq = x->rxq;
	c->ctlq = x->ctlq;
	c->track = x->track;
	c->cmpl_tid = x->cmpl_tid;
	c->cond_tag = x->cond_tag;
	c->lmt_ok = x->lmt_ok;
	memset(c->lmt_ok, 0, c->cfg.nr_windows ? c->cfg.nr_windows : 1);
	c->tx = c->txbuf.data;
	c->key_epoch = x->key_epoch;
	c->link_up = x->link_up;
	c->rxq_len = x->rxq_len;
	c->sram_size = x->sram_size;
	c->sram_used = x->sram_used;
	c->db_size = x->db_size;
	c->rxq_head = c->rxq_count = 0;
	c->ctlq_head = c->ctlq_count = 0;
	c->track_bytes = 0;
	if (weft_state_get_table(r, "sram", c->sram, (uint32_t)(c->sram_size / SRAM_PAGE),
				 SRAM_PAGE, NULL) &&
	    get_pkts(r, "rxq", c->rxq, c->rxq_len, &c->rxq_count) &&
	    get_pkts(r, "ctlq", c->ctlq, WEFT_CTLQ_LEN, &c->ctlq_count) &&
	    get_track(c, r) &&
	    weft_state_get_table(r, "cmpl_tid", c->cmpl_tid, c->cfg.nr_rcxt, sizeof(uint32_t),
				 NULL) &&
	    weft_state_get_table(r, "cond_tag", c->cond_tag, c->cfg.nr_rcxt, sizeof(uint8_t),
				 NULL))
		core_check(c, r);
out:
	free(x);
	return !r->bad;
}

/* ---- API --------------------------------------------------------------------- */

int weft_core_save(const struct weft_core *c, uint8_t **buf, size_t *len)
{
	struct weft_state_w w = { .now = c->ops.now_ns ? c->ops.now_ns(c->opaque) : 0 };

	core_save(c, &w);
	weft_verbs_save(c, &w);
	weft_match_save(c, &w);
	weft_cnt_save(c, &w);
	weft_state_put_u64(&w, WEFT_STATE_MAGIC);
	if (w.oom) {
		free(w.buf);
		return -ENOMEM;
	}
	*buf = w.buf;
	*len = w.len;
	return 0;
}

/* The hooks of the core a load builds: they reach nothing. */
static int quiet_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
	(void)opaque, (void)addr, (void)buf, (void)len;
	return -1;
}

static int quiet_dma_write(void *opaque, uint64_t addr, const void *buf, size_t len)
{
	(void)opaque, (void)addr, (void)buf, (void)len;
	return -1;
}

static void quiet_irq(void *opaque, unsigned int vector)
{
	(void)opaque, (void)vector;
}

static int quiet_xmit(void *opaque, const void *pkt, size_t len)
{
	(void)opaque, (void)pkt, (void)len;
	return -ENOTCONN;
}

static void quiet_kick(void *opaque)
{
	(void)opaque;
}

static const struct weft_core_ops quiet_ops = {
	.dma_read = quiet_dma_read,
	.dma_write = quiet_dma_write,
	.irq = quiet_irq,
	.xmit = quiet_xmit,
	.kick = quiet_kick,
};

int weft_core_load(struct weft_core *c, const void *buf, size_t len, char *err, size_t errlen)
{
	struct weft_state_r r = {
		.now = c->ops.now_ns ? c->ops.now_ns(c->opaque) : 0,
		.buf = buf, .len = len, .err = err, .errlen = errlen,
	};
	struct weft_core *t, tmp;
	uint64_t end;
	char why[128] = "";

	/* The new state is built in a core of its own that reaches nothing
	 * outside while it is: no trace, interrupt, timer or transmission. */
	t = weft_core_new(&c->cfg, &quiet_ops, NULL, why, sizeof(why));
	if (!t) {
		weft_state_fail(&r, "cannot make a core to load into: %s", why);
		return -ENOMEM;
	}
	t->key_epoch = c->key_epoch;
	t->link_up = c->link_up;
	if (core_load(t, &r) && weft_verbs_load(t, &r) && weft_match_load(t, &r) &&
	    weft_cnt_load(t, &r) && weft_state_get_u64(&r, &end)) {
		if (end != WEFT_STATE_MAGIC)
			weft_state_fail(&r, "the stream's end mark is missing");
		else if (r.off != r.len)
			weft_state_fail(&r, "%zu bytes after the end of the state", r.len - r.off);
	}
	if (r.bad) {
		weft_core_free(t);
		return -EINVAL;
	}
	/* Swap: c gets the loaded state and keeps its hooks; t takes the
	 * old state and the hooks to free it with (lent packets go back). */
	tmp = *c;
	*c = *t;
	*t = tmp;
	c->ops = t->ops;
	c->opaque = t->opaque;
	c->tx = c->txbuf.data;
	t->tx = t->txbuf.data;
	weft_core_free(t);
	weft_timer_sync(c);
	c->ops.kick(c->opaque);
	return 0;
}
