/* SPDX-License-Identifier: MIT */
/*
 * Sim backend: adapters of the in-process simulator (qemu-device/sim),
 * driven through its host-side driver layer (windows, TCEs, rCxts and
 * registration through MMIO).  The FIFOs and buffers live in the
 * simulated node memory; the library reads and writes them directly, as
 * it does with the kernel backend's mappings.
 *
 * Threads: the simulator is single-threaded, so one recursive mutex per
 * simnet serialises every call (the library also holds it around its
 * FIFO accesses).  Virtual time only jumps ahead while every open
 * weft_dev of the simnet is blocked in a wait, so one thread cannot make
 * another's timers fire by running the clock while it is busy.  A
 * weft_dev counts as blocked too while the thread that last used it is
 * blocked on another one (one thread driving the windows of several
 * adapters, as striping does, waits on one of them at a time).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "priv.h"
#include "weft_sim.h"
#include "weft_sim_cnt.h"

struct simnet_waiter {
	int active;                     /* a weft_dev is open on this slot */
	int waiting;
	uint64_t deadline;
	int has_user;
	pthread_t user;                 /* the thread that last used it */
};

struct weft_simnet {
	struct weft_sim *sim;
	pthread_mutex_t mu;
	unsigned int nodes;
	int solo;
	struct simnet_waiter wt[WEFT_SIM_MAX_NODES * 4];
	uint64_t serial;
};

struct sim_alloc {
	uint64_t gaddr, len, serial;
	struct sim_alloc *next;
};

struct sbe {
	struct weft_be be;
	struct weft_simnet *net;
	unsigned int node;
	unsigned int slot;              /* index in net->wt */
	uint64_t ev_seen;               /* events_of() when s_lock last took the lock */
	char name[32];
	struct sim_alloc *allocs;
	struct weft_sim_window *wins[WEFT_MAX_WINDOWS];
	uint64_t fatal_seen[WEFT_MAX_WINDOWS];
	/* Counter objects and exposures: the sim driver's page lists. */
	struct sim_cobj {
		bool used;
		uint16_t gen;
		uint64_t block;
		struct wsc_buf buf;
	} cobj[WEFT_CNT_NR_OBJ];
	struct sim_cexp {
		bool used;
		uint16_t gen;
		struct wsc_buf buf;
	} cexp[WEFT_CNT_NR_EXP];
};

static struct sbe *S(struct weft_be *be) { return (struct sbe *)be; }
static void net_lock(struct weft_simnet *n) { pthread_mutex_lock(&n->mu); }
static void net_unlock(struct weft_simnet *n) { pthread_mutex_unlock(&n->mu); }

static int s_query(struct weft_be *be, struct weft_ioc_query *q)
{
	struct sbe *b = S(be);
	struct weft_sim *s = b->net->sim;
	memset(q, 0, sizeof(*q));
	net_lock(b->net);
	q->abi_version = WEFT_UAPI_VERSION;
	q->node_id = (uint16_t)weft_sim_reg_read(s, b->node, WEFT_REG_NODE_ID);
	q->nr_windows = (uint16_t)WEFT_CAPS_WINDOWS(weft_sim_reg_read(s, b->node, WEFT_REG_CAPS));
	q->nr_handlers = WEFT_CAPS_HANDLERS(weft_sim_reg_read(s, b->node, WEFT_REG_CAPS));
	q->nr_rcxt = (uint32_t)weft_sim_reg_read(s, b->node, WEFT_REG_NR_RCXT);
	q->recovery_count = weft_sim_recovery_count(s, b->node);
	q->max_payload = WEFT_MAX_PAYLOAD;
	q->hw_id = weft_sim_reg_read(s, b->node, WEFT_REG_ID);
	net_unlock(b->net);
	return 0;
}

static int s_job_attach(struct weft_be *be, uint32_t job)
{
	struct sbe *b = S(be);
	net_lock(b->net);
	int r = weft_sim_job_attach(b->net->sim, b->node, job);
	net_unlock(b->net);
	return (r >= 0 || r == -EEXIST) ? 0 : r;
}

static int s_open_window(struct weft_be *be, const struct weft_ioc_open_window *req,
			 struct weft_be_win *out)
{
	struct sbe *b = S(be);
	struct weft_sim_window *sw = calloc(1, sizeof(*sw));
	if (!sw)
		return -ENOMEM;
	struct weft_sim_window_cfg cfg = {
		.job = req->job_id, .send_log2 = req->send_log2, .recv_log2 = req->recv_log2,
		.quantum = req->quantum, .bcast = !!(req->flags & WEFT_OPEN_F_BCAST),
		.early_int = !!(req->flags & WEFT_OPEN_F_EARLY_INT), .window = -1,
	};
	net_lock(b->net);
	int r = weft_sim_open_window(b->net->sim, b->node, &cfg, sw);
	if (r == 0 && (sw->window >= WEFT_MAX_WINDOWS || !sw->send_fifo || !sw->recv_fifo ||
		       sw->send_frames != (1u << req->send_log2) ||
		       sw->recv_frames != (1u << req->recv_log2))) {
		weft_sim_close_window(sw);
		r = -EPROTO;
	}
	if (r == 0) {
		b->wins[sw->window] = sw;
		b->fatal_seen[sw->window] = weft_sim_window_fatals(b->net->sim, b->node, sw->window);
	}
	net_unlock(b->net);
	if (r) {
		free(sw);
		return r;
	}
	memset(out, 0, sizeof(*out));
	out->window = sw->window;
	out->send_log2 = req->send_log2;
	out->recv_log2 = req->recv_log2;
	out->send_fifo = sw->send_fifo;
	out->recv_fifo = sw->recv_fifo;
	out->send_size = (uint64_t)sw->send_frames * WEFT_FRAME_SIZE;
	out->recv_size = (uint64_t)sw->recv_frames * WEFT_FRAME_SIZE;
	out->db = NULL;
	out->priv = sw;
	return 0;
}

static int s_close_window(struct weft_be *be, struct weft_be_win *w)
{
	struct sbe *b = S(be);
	struct weft_sim_window *sw = w->priv;
	net_lock(b->net);
	int r = weft_sim_close_window(sw);
	if (sw->window < WEFT_MAX_WINDOWS)
		b->wins[sw->window] = NULL;
	net_unlock(b->net);
	free(sw);
	w->priv = NULL;
	return r;
}

static int s_alloc_rcxt(struct weft_be *be, uint32_t window, uint32_t *rcxt, uint16_t *key)
{
	struct sbe *b = S(be);
	net_lock(b->net);
	int r = weft_sim_rcxt_alloc(b->net->sim, b->node, window, rcxt, key);
	net_unlock(b->net);
	return r;
}

static int s_free_rcxt(struct weft_be *be, uint32_t window, uint32_t rcxt)
{
	(void)window;
	struct sbe *b = S(be);
	net_lock(b->net);
	int r = weft_sim_rcxt_free(b->net->sim, b->node, rcxt);
	net_unlock(b->net);
	return r;
}

/* Host pointer -> guest address of this node, bounds-checked. */
static int to_guest(struct sbe *b, uint64_t addr, uint64_t len, uint64_t *g)
{
	uint64_t base = (uint64_t)(uintptr_t)weft_sim_mem(b->net->sim, b->node);
	uint64_t size = weft_sim_mem_size(b->net->sim);
	if (addr < base || len > size || addr - base > size - len)
		return -EFAULT;
	*g = addr - base;
	return 0;
}

static int s_reg_mr(struct weft_be *be, uint32_t job, uint64_t addr, uint64_t len,
		    unsigned int page_shift, uint64_t *pvo, uint32_t *handle)
{
	struct sbe *b = S(be);
	uint64_t g;
	int r = to_guest(b, addr, len, &g);
	if (r)
		return r;
	net_lock(b->net);
	if (page_shift) {
		r = weft_sim_reg_mr(b->net->sim, b->node, job, g, len, page_shift, pvo);
	} else {
		r = weft_sim_reg_mr(b->net->sim, b->node, job, g, len, 0, pvo);
		if (r < 0 && r != -ENOENT)
			r = weft_sim_reg_mr(b->net->sim, b->node, job, g, len,
					    WEFT_PAGE_SHIFT_4K, pvo);
	}
	net_unlock(b->net);
	if (r < 0)
		return r;
	*handle = (uint32_t)r;
	return 0;
}

static int s_dereg_mr(struct weft_be *be, uint32_t handle)
{
	struct sbe *b = S(be);
	net_lock(b->net);
	int r = weft_sim_dereg_mr(b->net->sim, b->node, (int)handle);
	net_unlock(b->net);
	return r;
}

/* Called with the lock held by the library. */
static void s_db_write(struct weft_be *be, struct weft_be_win *w, uint32_t off, uint64_t val)
{
	struct sbe *b = S(be);
	weft_sim_db_write(b->net->sim, b->node, w->window, off, val);
}

static uint64_t s_db_read(struct weft_be *be, struct weft_be_win *w, uint32_t off)
{
	struct sbe *b = S(be);
	return weft_sim_db_read(b->net->sim, b->node, w->window, off);
}

static uint64_t events_of(struct sbe *b)
{
	struct weft_sim *s = b->net->sim;
	uint64_t n = 0;
	for (unsigned int t = WEFT_EV_RECV_THRESHOLD; t <= WEFT_EV_LINK; t++)
		n += weft_sim_event_count(s, b->node, t);
	return n;
}

/* Slot i's user thread is blocked in a wait on some slot. */
static int user_waits(struct weft_simnet *n, unsigned int i)
{
	if (!n->wt[i].has_user)
		return 0;
	for (unsigned int j = 0; j < sizeof(n->wt) / sizeof(n->wt[0]); j++)
		if (n->wt[j].active && n->wt[j].waiting && n->wt[j].has_user &&
		    pthread_equal(n->wt[j].user, n->wt[i].user))
			return 1;
	return 0;
}

static int all_waiting(struct weft_simnet *n, uint64_t *min_deadline)
{
	uint64_t m = UINT64_MAX;
	for (unsigned int i = 0; i < sizeof(n->wt) / sizeof(n->wt[0]); i++) {
		if (!n->wt[i].active)
			continue;
		if (!n->wt[i].waiting) {
			if (user_waits(n, i))
				continue;
			return 0;
		}
		if (n->wt[i].deadline < m)
			m = n->wt[i].deadline;
	}
	*min_deadline = m;
	return 1;
}

static int s_wait(struct weft_be *be, int timeout_ms)
{
	struct sbe *b = S(be);
	struct weft_simnet *n = b->net;
	struct weft_sim *s = n->sim;
	net_lock(n);
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX :
			    weft_sim_now(s) + (uint64_t)timeout_ms * 1000000ull;
	/* Events since the library last held the lock (and looked at its
	 * FIFOs) wake at once: another thread may have moved the sim between
	 * that look and this wait. */
	uint64_t base = b->ev_seen;
	n->wt[b->slot].waiting = 1;
	n->wt[b->slot].deadline = deadline;
	n->wt[b->slot].user = pthread_self();
	n->wt[b->slot].has_user = 1;
	int ret = 0;
	unsigned int yields = 0;
	for (;;) {
		unsigned int rounds = 0;
		bool busy = false;
		while (rounds++ < 256 && (busy = weft_sim_progress(s)))
			if (events_of(b) != base)
				break;
		if (events_of(b) != base) {
			ret = 1;
			break;
		}
		if (weft_sim_now(s) >= deadline) {
			ret = 0;
			break;
		}
		if (busy)
			continue;
		uint64_t m = deadline;
		if (n->solo || all_waiting(n, &m)) {
			if (m == UINT64_MAX) {
				ret = -EDEADLK; /* everyone waits forever */
				break;
			}
			if (m > weft_sim_now(s)) {
				weft_sim_advance_to(s, m);
				continue;
			}
			/* Another waiter's deadline passed: let it return. */
		}
		/* Someone else is still working: let it run. */
		net_unlock(n);
		if (++yields < 64) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 20000 };
			nanosleep(&ts, NULL);
		}
		net_lock(n);
	}
	n->wt[b->slot].waiting = 0;
	net_unlock(n);
	return ret;
}

static int s_read_event(struct weft_be *be, struct weft_uevent *ev)
{
	struct sbe *b = S(be);
	int got = 0;
	net_lock(b->net);
	for (unsigned int w = 0; w < WEFT_MAX_WINDOWS && !got; w++) {
		if (!b->wins[w])
			continue;
		uint64_t f = weft_sim_window_fatals(b->net->sim, b->node, w);
		if (f != b->fatal_seen[w]) {
			b->fatal_seen[w] = f;
			memset(ev, 0, sizeof(*ev));
			ev->type = WEFT_UEV_FATAL;
			ev->window = w;
			got = 1;
		}
	}
	net_unlock(b->net);
	return got;
}

static void s_progress(struct weft_be *be)
{
	struct sbe *b = S(be);
	net_lock(b->net);
	weft_sim_progress(b->net->sim);
	net_unlock(b->net);
}

static void s_lock(struct weft_be *be)
{
	struct sbe *b = S(be);

	net_lock(b->net);
	b->net->wt[b->slot].user = pthread_self();
	b->net->wt[b->slot].has_user = 1;
	b->ev_seen = events_of(b);
}

static void s_unlock(struct weft_be *be) { net_unlock(S(be)->net); }

static int s_reg_read(struct weft_be *be, uint64_t off, uint64_t *val)
{
	struct sbe *b = S(be);
	if (off >= WEFT_REGS_SIZE || (off & 7))
		return -EINVAL;
	net_lock(b->net);
	*val = weft_sim_reg_read(b->net->sim, b->node, off);
	net_unlock(b->net);
	return 0;
}

static uint64_t s_now_ns(struct weft_be *be)
{
	struct sbe *b = S(be);
	net_lock(b->net);
	uint64_t t = weft_sim_now(b->net->sim);
	net_unlock(b->net);
	return t;
}

static const char *s_dev_name(struct weft_be *be)
{
	return S(be)->name;
}

static void *s_alloc(struct weft_be *be, size_t len)
{
	struct sbe *b = S(be);
	struct sim_alloc *a = calloc(1, sizeof(*a));
	if (!a || !len) {
		free(a);
		return NULL;
	}
	net_lock(b->net);
	uint64_t g = weft_sim_alloc(b->net->sim, b->node, len, 4096);
	void *p = g ? weft_sim_ptr(b->net->sim, b->node, g, len) : NULL;
	if (p) {
		a->gaddr = g;
		a->len = len;
		a->serial = ++b->net->serial;
		a->next = b->allocs;
		b->allocs = a;
	} else {
		if (g)
			weft_sim_free_mem(b->net->sim, b->node, g);
		free(a);
	}
	net_unlock(b->net);
	return p;
}

static void s_free(struct weft_be *be, void *p, size_t len)
{
	(void)len;
	struct sbe *b = S(be);
	uint64_t g;
	if (to_guest(b, (uint64_t)(uintptr_t)p, 1, &g))
		return;
	net_lock(b->net);
	for (struct sim_alloc **pp = &b->allocs; *pp; pp = &(*pp)->next)
		if ((*pp)->gaddr == g) {
			struct sim_alloc *a = *pp;
			*pp = a->next;
			weft_sim_free_mem(b->net->sim, b->node, g);
			free(a);
			break;
		}
	net_unlock(b->net);
}

static int s_map_lookup(struct weft_be *be, uint64_t addr, struct weft_be_map *m)
{
	struct sbe *b = S(be);
	uint64_t g;
	int r = to_guest(b, addr, 1, &g);
	if (r)
		return r;
	uint64_t base = addr - g;
	memset(m, 0, sizeof(*m));
	net_lock(b->net);
	r = -ENOENT;
	for (struct sim_alloc *a = b->allocs; a; a = a->next)
		if (g >= a->gaddr && g - a->gaddr < a->len) {
			m->start = base + a->gaddr;
			m->end = m->start + a->len;
			m->serial = a->serial;
			r = 0;
			break;
		}
	net_unlock(b->net);
	return r;
}

static void s_cnt_release_all(struct sbe *b);

static void s_close(struct weft_be *be)
{
	struct sbe *b = S(be);
	net_lock(b->net);
	s_cnt_release_all(b);
	while (b->allocs) {
		struct sim_alloc *a = b->allocs;
		b->allocs = a->next;
		weft_sim_free_mem(b->net->sim, b->node, a->gaddr);
		free(a);
	}
	b->net->wt[b->slot].active = 0;
	b->net->wt[b->slot].waiting = 0;
	net_unlock(b->net);
	free(b);
}

/* ---- counter objects: the sim driver's pinning is a page list of the
 * guest pages under the user's range ---------------------------------------- */

static int s_cnt_pin(struct sbe *b, uint64_t addr, uint64_t len, struct wsc_buf *w)
{
	uint64_t g, *list;
	uint32_t i;
	int r = to_guest(b, addr, len, &g);

	if (r)
		return r;
	if (!len || len > WEFT_CNT_MAX_LEN)
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	w->node = b->node;
	w->len = len;
	w->first_off = (uint32_t)(g % WEFT_CNT_PAGE);
	w->npages = (uint32_t)((w->first_off + len + WEFT_CNT_PAGE - 1) / WEFT_CNT_PAGE);
	w->pages = calloc(w->npages, sizeof(uint64_t));
	w->list = weft_sim_alloc(b->net->sim, b->node, (uint64_t)w->npages * 8, 8);
	if (!w->pages || !w->list) {
		free(w->pages);
		if (w->list)
			weft_sim_free_mem(b->net->sim, b->node, w->list);
		return -ENOMEM;
	}
	list = weft_sim_ptr(b->net->sim, b->node, w->list, (uint64_t)w->npages * 8);
	for (i = 0; i < w->npages; i++)
		list[i] = w->pages[i] = (g - w->first_off) + (uint64_t)i * WEFT_CNT_PAGE;
	return 0;
}

static void s_cnt_unpin(struct sbe *b, struct wsc_buf *w)
{
	if (w->list)
		weft_sim_free_mem(b->net->sim, b->node, w->list);
	free(w->pages);
	memset(w, 0, sizeof(*w));
}

static int s_cnt_create(struct weft_be *be, struct weft_ioc_cnt_create *req,
			const volatile void **block)
{
	struct sbe *b = S(be);
	struct sim_cobj *o = NULL;
	uint16_t gen;
	uint32_t id;
	int r;

	net_lock(b->net);
	for (id = 0; id < WEFT_CNT_NR_OBJ && !o; id++)
		if (!b->cobj[id].used)
			o = &b->cobj[id];
	r = o ? s_cnt_pin(b, req->addr, req->length, &o->buf) : -ENOSPC;
	if (!r) {
		o->block = weft_sim_alloc(b->net->sim, b->node, 16, 16);
		r = o->block ? wsc_create(b->net->sim, b->node, id - 1, o->block, &o->buf,
					  (uint8_t)req->mode, (uint8_t)req->flags, 0, req->ops,
					  &gen) : -ENOMEM;
		if (r > 0)
			r = -EINVAL;
		if (r) {
			if (o->block)
				weft_sim_free_mem(b->net->sim, b->node, o->block);
			s_cnt_unpin(b, &o->buf);
		} else {
			o->used = true;
			o->gen = gen;
			req->id = id - 1;
			req->gen = gen;
			*block = weft_sim_ptr(b->net->sim, b->node, o->block, 16);
		}
	}
	net_unlock(b->net);
	return r;
}

static int s_cnt_post(struct weft_be *be, struct weft_ioc_cnt_post *req)
{
	struct sbe *b = S(be);
	uint32_t seq = 0;
	int r = -ENOENT;

	net_lock(b->net);
	if (req->id < WEFT_CNT_NR_OBJ && b->cobj[req->id].used) {
		r = wsc_post(b->net->sim, b->node, req->id, b->cobj[req->id].gen,
			     (uint8_t)req->slot, (uint8_t)req->dir, (uint16_t)req->node,
			     req->offset, req->length, req->remote_va, &seq);
		r = r == WEFT_CMD_EBUSY ? -EBUSY : r == WEFT_CMD_ESTATE ? -EALREADY :
		    r > 0 ? -EINVAL : r;
		req->seq = seq;
	}
	net_unlock(b->net);
	return r;
}

struct s_cnt_arg {
	struct weft_sim *s;
	unsigned int node;
	uint64_t block;
	uint32_t failed;
};

static bool s_cnt_settled(void *arg)
{
	struct s_cnt_arg *a = arg;
	struct weft_cnt_block k = wsc_block(a->s, a->node, a->block);

	return k.count == 0 || k.failed != a->failed;
}

static int s_cnt_wait(struct weft_be *be, struct weft_ioc_cnt_wait *req)
{
	struct sbe *b = S(be);
	struct weft_cnt_block k;
	struct s_cnt_arg a;
	int r = 0;

	net_lock(b->net);
	if (req->id >= WEFT_CNT_NR_OBJ || !b->cobj[req->id].used) {
		net_unlock(b->net);
		return -ENOENT;
	}
	a = (struct s_cnt_arg){ b->net->sim, b->node, b->cobj[req->id].block, req->failed };
	if (req->timeout_ms)
		weft_sim_run_until(a.s, s_cnt_settled, &a,
				   weft_sim_now(a.s) + (uint64_t)req->timeout_ms * 1000000ull);
	k = wsc_block(a.s, a.node, a.block);
	net_unlock(b->net);
	req->count = k.count;
	req->error = k.error;
	if (k.count && k.failed == req->failed && req->timeout_ms)
		r = -ETIMEDOUT;
	req->failed = k.failed;
	return r;
}

static int s_cnt_destroy(struct weft_be *be, uint32_t id, const volatile void *block)
{
	struct sbe *b = S(be);
	int r = -ENOENT;

	(void)block;
	net_lock(b->net);
	if (id < WEFT_CNT_NR_OBJ && b->cobj[id].used) {
		struct sim_cobj *o = &b->cobj[id];

		r = wsc_destroy(b->net->sim, b->node, id, o->gen) ? -EIO : 0;
		weft_sim_free_mem(b->net->sim, b->node, o->block);
		s_cnt_unpin(b, &o->buf);
		o->used = false;
	}
	net_unlock(b->net);
	return r;
}

static int s_cnt_expose(struct weft_be *be, struct weft_ioc_cnt_expose *req)
{
	struct sbe *b = S(be);
	struct sim_cexp *e = NULL;
	uint32_t i;
	int r;

	net_lock(b->net);
	for (i = 0; i < WEFT_CNT_NR_EXP && !e; i++)
		if (!b->cexp[i].used)
			e = &b->cexp[i];
	r = e ? s_cnt_pin(b, req->addr, req->length, &e->buf) : -ENOSPC;
	if (!r) {
		r = wsc_expose(b->net->sim, b->node, i - 1, req->addr, &e->buf,
			       (uint8_t)req->rights, (uint16_t)req->peer, &e->gen);
		if (r) {
			s_cnt_unpin(b, &e->buf);
			r = r > 0 ? -EINVAL : r;
		} else {
			e->used = true;
			req->index = i - 1;
		}
	}
	net_unlock(b->net);
	return r;
}

static int s_cnt_unexpose(struct weft_be *be, uint32_t index)
{
	struct sbe *b = S(be);
	int r = -ENOENT;

	net_lock(b->net);
	if (index < WEFT_CNT_NR_EXP && b->cexp[index].used) {
		r = wsc_unexpose(b->net->sim, b->node, index, b->cexp[index].gen) ? -EIO : 0;
		s_cnt_unpin(b, &b->cexp[index].buf);
		b->cexp[index].used = false;
	}
	net_unlock(b->net);
	return r;
}

/* The process closes its device: what it still holds goes (lock held). */
static void s_cnt_release_all(struct sbe *b)
{
	uint32_t i;

	for (i = 0; i < WEFT_CNT_NR_OBJ; i++) {
		struct sim_cobj *o = &b->cobj[i];

		if (!o->used)
			continue;
		wsc_destroy(b->net->sim, b->node, i, o->gen);
		weft_sim_free_mem(b->net->sim, b->node, o->block);
		s_cnt_unpin(b, &o->buf);
		o->used = false;
	}
	for (i = 0; i < WEFT_CNT_NR_EXP; i++) {
		if (!b->cexp[i].used)
			continue;
		wsc_unexpose(b->net->sim, b->node, i, b->cexp[i].gen);
		s_cnt_unpin(b, &b->cexp[i].buf);
		b->cexp[i].used = false;
	}
}

static const struct weft_be_ops sim_ops = {
	.name = "sim",
	.query = s_query,
	.job_attach = s_job_attach,
	.open_window = s_open_window,
	.close_window = s_close_window,
	.alloc_rcxt = s_alloc_rcxt,
	.free_rcxt = s_free_rcxt,
	.reg_mr = s_reg_mr,
	.dereg_mr = s_dereg_mr,
	.db_write = s_db_write,
	.db_read = s_db_read,
	.wait = s_wait,
	.read_event = s_read_event,
	.progress = s_progress,
	.lock = s_lock,
	.unlock = s_unlock,
	.reg_read = s_reg_read,
	.now_ns = s_now_ns,
	.dev_name = s_dev_name,
	.alloc = s_alloc,
	.free = s_free,
	.map_lookup = s_map_lookup,
	.close = s_close,
	.cnt_create = s_cnt_create,
	.cnt_post = s_cnt_post,
	.cnt_wait = s_cnt_wait,
	.cnt_destroy = s_cnt_destroy,
	.cnt_expose = s_cnt_expose,
	.cnt_unexpose = s_cnt_unexpose,
};

int weft_simnet_available(void)
{
	return 1;
}

struct weft_simnet *weft_simnet_new(const struct weft_simnet_attr *attr, char *err,
				    size_t errlen)
{
	char dummy[8];
	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	if (!attr->nodes || attr->nodes > WEFT_SIM_MAX_NODES) {
		snprintf(err, errlen, "nodes must be 1..%u", WEFT_SIM_MAX_NODES);
		errno = EINVAL;
		return NULL;
	}
	struct weft_simnet *n = calloc(1, sizeof(*n));
	if (!n) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	struct weft_sim_config cfg = {
		.nr_nodes = attr->nodes,
		.adapters = attr->adapters,
		.mem_size = attr->mem_size ? attr->mem_size : (128ull << 20),
		.seed = attr->seed,
		.faults = { .drop_ppm = attr->drop_ppm, .routes = attr->routes ? attr->routes : 1,
			    .delay_ns = attr->delay_ns, .jitter_ns = attr->jitter_ns },
	};
	n->sim = weft_sim_new(&cfg, err, errlen);
	if (!n->sim) {
		free(n);
		errno = EINVAL;
		return NULL;
	}
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&n->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	n->nodes = attr->nodes;
	n->solo = !!(attr->flags & WEFT_SIMNET_F_SOLO);
	return n;
}

void weft_simnet_free(struct weft_simnet *n)
{
	if (!n)
		return;
	weft_sim_free(n->sim);
	pthread_mutex_destroy(&n->mu);
	free(n);
}

int weft_simnet_set_faults(struct weft_simnet *n, uint32_t drop_ppm, uint32_t routes,
			   uint64_t delay_ns, uint64_t jitter_ns)
{
	struct weft_fabric_faults ft;
	net_lock(n);
	struct weft_fabric *f = weft_sim_fabric(n->sim);
	weft_fabric_get_faults(f, &ft);
	ft.drop_ppm = drop_ppm;
	ft.routes = routes ? routes : 1;
	ft.delay_ns = delay_ns;
	ft.jitter_ns = jitter_ns;
	weft_fabric_set_faults(f, &ft);
	net_unlock(n);
	return 0;
}

/* The fabric port (node id) of adapter index; 0 if there is none. */
static uint16_t simnet_node(struct weft_simnet *n, unsigned int index)
{
	if (index >= n->nodes)
		return 0;
	return (uint16_t)weft_sim_reg_read(n->sim, index, WEFT_REG_NODE_ID);
}

int weft_simnet_set_port_up(struct weft_simnet *n, unsigned int index, int up)
{
	if (index >= n->nodes)
		return -EINVAL;
	net_lock(n);
	int r = weft_fabric_set_port_up(weft_sim_fabric(n->sim), simnet_node(n, index), up != 0);
	net_unlock(n);
	return r;
}

int weft_simnet_mcast_join(struct weft_simnet *n, unsigned int group, unsigned int index)
{
	if (index >= n->nodes)
		return -EINVAL;
	net_lock(n);
	int r = weft_fabric_mcast_join(weft_sim_fabric(n->sim), group, simnet_node(n, index));
	net_unlock(n);
	return r;
}

struct weft_dev *weft_simnet_open(struct weft_simnet *n, unsigned int index, char *err,
				  size_t errlen)
{
	char dummy[8];
	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	if (index >= n->nodes) {
		snprintf(err, errlen, "sim node %u does not exist (%u nodes)", index, n->nodes);
		errno = ENODEV;
		return NULL;
	}
	struct sbe *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	net_lock(n);
	unsigned int slot = 0;
	while (slot < sizeof(n->wt) / sizeof(n->wt[0]) && n->wt[slot].active)
		slot++;
	if (slot == sizeof(n->wt) / sizeof(n->wt[0])) {
		net_unlock(n);
		free(b);
		snprintf(err, errlen, "too many open sim adapters");
		errno = EMFILE;
		return NULL;
	}
	n->wt[slot].active = 1;
	n->wt[slot].waiting = 0;
	n->wt[slot].has_user = 0;
	net_unlock(n);
	b->be.ops = &sim_ops;
	b->net = n;
	b->node = index;
	b->slot = slot;
	snprintf(b->name, sizeof(b->name), "sim:%u", index);
	return weft_dev_from_be(&b->be, err, errlen);
}
