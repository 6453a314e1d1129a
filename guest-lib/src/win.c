/* SPDX-License-Identifier: MIT */
/*
 * libweft windows: FIFO-mode send and receive, RDMA posting, receive
 * polling with the seed's slot-return and threshold rules, rCxts and
 * tids, reliable (retried) RDMA operations.
 *
 * Send FIFO: frame i is written at (i & mask); the header line goes in
 * after the payload, then one START_TRANSMIT doorbell.  The adapter marks
 * a processed frame by rewriting its header line with WEFT_SF_DONE; the
 * adapter finishes frames in FIFO order (hw-spec 5.1), so they are
 * reclaimed in order from the tail and their header line is zeroed for
 * reuse.
 *
 * Receive FIFO: entry i is at (i & mask); it is ready when its header
 * line has WEFT_RF_VALID (the adapter writes the header line last).  The
 * consumer copies it out, zeroes the header line and returns the slot
 * with RETURN_SLOTS, in batches of return_batch (and whenever the FIFO
 * is found empty, so the adapter never starves).  Blocking waits arm the
 * receive threshold at the next entry's count and sleep on the event fd.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"
#include "weft/counters.h"
#include "weft/sram.h"

#define DEF_SEND_LOG2   6u
#define DEF_RECV_LOG2   8u
#define DEF_TIMEOUT_NS  (2ull * 1000 * 1000)
#define DEF_BUDGET_NS   (30ull * 1000 * 1000 * 1000)
#define STATE_CHECK_POLLS 1024u  /* empty polls between two STATE reads */

/* ---- doorbells -------------------------------------------------------- */

static void db_write(struct weft_win *w, uint32_t off, uint64_t val)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (w->bw.db)
		w->bw.db[off / 8] = val;
	else
		w->dev->be->ops->db_write(w->dev->be, &w->bw, off, val);
}

static uint64_t db_read(struct weft_win *w, uint32_t off)
{
	if (w->bw.db)
		return w->bw.db[off / 8];
	return w->dev->be->ops->db_read(w->dev->be, &w->bw, off);
}

/*
 * The adapter's view of the window: anything but VALID means it no longer
 * sends or receives (FATAL: window fatal error; INVALID or CLOSED: the
 * adapter recovered and forgot it).  After a recovery weft.ko keeps the
 * doorbell page and FIFOs mapped, so reading it is harmless.  Lock held.
 */
static int state_check(struct weft_win *w)
{
	if (w->fatal)
		return w->fatal;
	uint64_t st = db_read(w, WEFT_DB_STATE);
	if (st == WEFT_WIN_VALID)
		return 0;
	w->fatal = st == WEFT_WIN_FATAL ? -EPIPE : -ESTALE;
	return w->fatal;
}

static uint8_t *tx_frame(struct weft_win *w, uint64_t i)
{
	return w->bw.send_fifo + (size_t)(i & w->send_mask) * WEFT_FRAME_SIZE;
}

static uint8_t *rx_frame(struct weft_win *w, uint64_t i)
{
	return w->bw.recv_fifo + (size_t)(i & w->recv_mask) * WEFT_FRAME_SIZE;
}

static void tx_reclaim(struct weft_win *w);
static int drain_events(struct weft_win *w);

/* ---- open / close ----------------------------------------------------- */

struct weft_win *weft_win_open(struct weft_dev *dev, const struct weft_win_attr *attr,
			       int *error)
{
	int dummy;
	if (!error)
		error = &dummy;
	struct weft_win_attr a = *attr;
	if (a.job_id == 0) {
		*error = -EINVAL;
		return NULL;
	}
	if (a.send_log2 == 0)
		a.send_log2 = DEF_SEND_LOG2;
	if (a.recv_log2 == 0)
		a.recv_log2 = DEF_RECV_LOG2;
	if (a.send_log2 > WEFT_FIFO_MAX_LOG2 || a.recv_log2 > WEFT_FIFO_MAX_LOG2) {
		*error = -EINVAL;
		return NULL;
	}
	int r = weft_dev_job_attach(dev, a.job_id);
	if (r) {
		*error = r;
		return NULL;
	}
	struct weft_win *w = calloc(1, sizeof(*w));
	if (!w) {
		*error = -ENOMEM;
		return NULL;
	}
	w->dev = dev;
	w->job_id = a.job_id;
	struct weft_ioc_open_window req = {
		.job_id = a.job_id, .send_log2 = a.send_log2, .recv_log2 = a.recv_log2,
		.flags = (a.flags & WEFT_WIN_F_BCAST ? WEFT_OPEN_F_BCAST : 0) |
			 (a.flags & WEFT_WIN_F_EARLY_INT ? WEFT_OPEN_F_EARLY_INT : 0),
		.quantum = a.quantum,
	};
	r = dev->be->ops->open_window(dev->be, &req, &w->bw);
	if (r) {
		free(w);
		*error = r;
		return NULL;
	}
	w->send_frames = 1u << w->bw.send_log2;
	w->recv_frames = 1u << w->bw.recv_log2;
	w->send_mask = w->send_frames - 1;
	w->recv_mask = w->recv_frames - 1;
	w->return_batch = a.return_batch ? a.return_batch : w->recv_frames / 4;
	if (w->return_batch == 0)
		w->return_batch = 1;
	if (w->return_batch > w->recv_frames)
		w->return_batch = w->recv_frames;
	w->next_tid = 1;
	w->spin_ns = 50000;
	w->rop_timeout = DEF_TIMEOUT_NS;
	w->rop_max_timeout = 256 * DEF_TIMEOUT_NS;
	w->rop_max_tries = 1000;
	w->rop_budget = DEF_BUDGET_NS;
	w->tx_slots = calloc(w->send_frames, sizeof(*w->tx_slots));
	w->pend = calloc(WEFT_PENDQ, sizeof(*w->pend));
	if (!w->tx_slots || !w->pend) {
		dev->be->ops->close_window(dev->be, &w->bw);
		free(w->tx_slots);
		free(w->pend);
		free(w);
		*error = -ENOMEM;
		return NULL;
	}
	/* Disable the thresholds until a wait arms one. */
	weft_be_lock(dev);
	db_write(w, WEFT_DB_RECV_THRESHOLD, WEFT_THRESHOLD_OFF0);
	db_write(w, WEFT_DB_SEND_THRESHOLD, WEFT_THRESHOLD_OFF0);
	weft_be_unlock(dev);
	w->next = dev->wins;
	dev->wins = w;
	*error = 0;
	return w;
}

int weft_win_close(struct weft_win *w)
{
	if (!w)
		return 0;
	struct weft_dev *dev = w->dev;
	/* Let the adapter send what was posted (e.g. a last acknowledgement)
	 * before the window goes away; bounded to about a second. */
	uint64_t start = dev->be->ops->now_ns(dev->be);
	while (!w->fatal) {
		weft_be_progress(dev);
		weft_be_lock(dev);
		tx_reclaim(w);
		int empty = w->tx_head == w->tx_tail;
		weft_be_unlock(dev);
		if (empty || dev->be->ops->now_ns(dev->be) - start > 1000000000ull)
			break;
		if (dev->be->ops->wait(dev->be, 1) > 0)
			drain_events(w);        /* else a queued event keeps poll() ready */
	}
	for (struct weft_win **p = &dev->wins; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			break;
		}
	for (uint32_t i = 0; i < w->rcxt_n; i++)
		dev->be->ops->free_rcxt(dev->be, w->bw.window, w->rcxts[i].id);
	int r = dev->be->ops->close_window(dev->be, &w->bw);
	free(w->rcxts);
	free(w->tx_slots);
	free(w->pend);
	free(w->rops);
	free(w->rdv_memo);
	free(w);
	return r;
}

uint32_t weft_win_id(const struct weft_win *w) { return w->bw.window; }
uint16_t weft_win_node(const struct weft_win *w) { return w->dev->q.node_id; }
struct weft_dev *weft_win_dev(const struct weft_win *w) { return w->dev; }

void weft_win_get_stats(const struct weft_win *w, struct weft_win_stats *s)
{
	*s = w->st;
}

void weft_win_set_retry(struct weft_win *w, uint64_t timeout_ns, uint64_t max_timeout_ns,
			unsigned int max_tries)
{
	if (timeout_ns)
		w->rop_timeout = timeout_ns;
	w->rop_max_timeout = max_timeout_ns ? max_timeout_ns : 256 * w->rop_timeout;
	if (w->rop_max_timeout < w->rop_timeout)
		w->rop_max_timeout = w->rop_timeout;
	if (max_tries)
		w->rop_max_tries = max_tries;
}

void weft_win_set_retry_budget(struct weft_win *w, uint64_t budget_ns)
{
	w->rop_budget = budget_ns;
}

int weft_win_state(struct weft_win *w, uint64_t *state, uint64_t *recv_count,
		   uint64_t *send_count)
{
	weft_be_lock(w->dev);
	*state = db_read(w, WEFT_DB_STATE);
	*recv_count = db_read(w, WEFT_DB_RECV_COUNT);
	*send_count = db_read(w, WEFT_DB_SEND_COUNT);
	weft_be_unlock(w->dev);
	return 0;
}

void weft_win_set_spin(struct weft_win *w, uint64_t spin_ns)
{
	w->spin_ns = spin_ns;
}

int weft_win_event_fd(struct weft_win *w)
{
	if (!w->dev->be->ops->event_fd)
		return -1;
	return w->dev->be->ops->event_fd(w->dev->be);
}

/* ---- rCxts ------------------------------------------------------------ */

struct weft_rcxt_ent *weft_rcxt_find(struct weft_win *w, uint32_t id)
{
	for (uint32_t i = 0; i < w->rcxt_n; i++)
		if (w->rcxts[i].id == id)
			return &w->rcxts[i];
	return NULL;
}

int weft_rcxt_alloc(struct weft_win *w, uint32_t *rcxt, uint16_t *key)
{
	if (w->rcxt_n == w->rcxt_cap) {
		uint32_t cap = w->rcxt_cap ? 2 * w->rcxt_cap : 16;
		struct weft_rcxt_ent *n = realloc(w->rcxts, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		w->rcxts = n;
		w->rcxt_cap = cap;
	}
	uint32_t id;
	uint16_t k;
	int r = w->dev->be->ops->alloc_rcxt(w->dev->be, w->bw.window, &id, &k);
	if (r)
		return r;
	struct weft_rcxt_ent *e = &w->rcxts[w->rcxt_n++];
	memset(e, 0, sizeof(*e));
	e->id = id;
	e->key = k;
	*rcxt = id;
	*key = k;
	return 0;
}

int weft_rcxt_free(struct weft_win *w, uint32_t rcxt)
{
	struct weft_rcxt_ent *e = weft_rcxt_find(w, rcxt);
	if (!e)
		return -ENOENT;
	if (e->rop)
		return -EBUSY;
	int r = w->dev->be->ops->free_rcxt(w->dev->be, w->bw.window, rcxt);
	*e = w->rcxts[--w->rcxt_n];
	return r;
}

uint32_t weft_rcxt_next_tid(struct weft_win *w, uint32_t rcxt)
{
	struct weft_rcxt_ent *e = weft_rcxt_find(w, rcxt);
	uint32_t tid = w->next_tid++;
	if (e && e->last_tid >= tid) {
		tid = e->last_tid + 1;
		w->next_tid = tid + 1;
	}
	if (e)
		e->last_tid = tid;
	return tid;
}

uint32_t weft_rcxt_last_tid(const struct weft_win *w, uint32_t rcxt)
{
	for (uint32_t i = 0; i < w->rcxt_n; i++)
		if (w->rcxts[i].id == rcxt)
			return w->rcxts[i].last_tid;
	return 0;
}

/* ---- internal entry queue --------------------------------------------- */

void weft_win_pend_push(struct weft_win *w, const struct weft_entry *e)
{
	if (w->pend_n == WEFT_PENDQ) {
		/* Full: the oldest entry is lost (counted as bad). */
		w->pend_head = (w->pend_head + 1) % WEFT_PENDQ;
		w->pend_n--;
		w->st.rx_bad++;
	}
	unsigned int slot = (w->pend_head + w->pend_n) % WEFT_PENDQ;
	size_t hdr = offsetof(struct weft_entry, data);
	memcpy(&w->pend[slot], e, hdr);
	w->pend_n++;
}

static int pend_pop(struct weft_win *w, struct weft_entry *e)
{
	if (!w->pend_n)
		return 0;
	memcpy(e, &w->pend[w->pend_head], offsetof(struct weft_entry, data));
	w->pend_head = (w->pend_head + 1) % WEFT_PENDQ;
	w->pend_n--;
	return 1;
}

/* ---- reliable-op bookkeeping ------------------------------------------ */

static int rops_add(struct weft_win *w, struct weft_rop *rop)
{
	if (w->nr_rops == w->cap_rops) {
		unsigned int cap = w->cap_rops ? 2 * w->cap_rops : 16;
		struct weft_rop **n = realloc(w->rops, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		w->rops = n;
		w->cap_rops = cap;
	}
	w->rops[w->nr_rops++] = rop;
	return 0;
}

static void rops_remove(struct weft_win *w, struct weft_rop *rop)
{
	for (unsigned int i = 0; i < w->nr_rops; i++)
		if (w->rops[i] == rop) {
			w->rops[i] = w->rops[--w->nr_rops];
			return;
		}
}

/* The rCxt entry that runs rop (its retry state), or NULL once rop is not
 * in flight on this window. */
static struct weft_rcxt_ent *rop_ent(struct weft_win *w, const struct weft_rop *rop)
{
	struct weft_rcxt_ent *re = weft_rcxt_find(w, rop->rdma.local_rcxt);

	return re && re->rop == rop ? re : NULL;
}

/* Drop every reference the window holds to rop: its rCxt's, the list of
 * rops and its send frame's back pointer (the frame may still be queued). */
static void rop_unlink(struct weft_win *w, struct weft_rop *rop)
{
	struct weft_rcxt_ent *re = rop_ent(w, rop);
	if (re)
		re->rop = NULL;
	rops_remove(w, rop);
	for (uint64_t i = w->tx_tail; i != w->tx_head; i++)
		if (w->tx_slots[i & w->send_mask].rop == rop)
			w->tx_slots[i & w->send_mask].rop = NULL;
}

static void rop_finish(struct weft_win *w, struct weft_rop *rop, int state, int error,
		       unsigned int status)
{
	rop_unlink(w, rop);
	rop->state = state;
	rop->error = error;
	rop->status = status;
	if (state == WEFT_ROP_DONE)
		w->st.rop_done++;
	else
		w->st.rop_failed++;
	struct weft_entry e;
	memset(&e, 0, offsetof(struct weft_entry, data));
	e.type = WEFT_ENT_ROP;
	e.rop = rop;
	e.rcxt = rop->rdma.local_rcxt;
	e.tid = rop->rdma.tid;
	e.status = status;
	e.length = rop->rdma.length;
	e.protocol_cookie = rop->rdma.protocol_cookie;
	e.user_cookie = rop->rdma.user_cookie;
	e.flags = WEFT_ENT_F_SOURCE | (rop->is_read ? WEFT_ENT_F_READ : 0);
	weft_win_pend_push(w, &e);
}

int weft_win_rop_cancel(struct weft_win *w, struct weft_rop *rop)
{
	if (rop->state != WEFT_ROP_POSTED)
		return -EINVAL;
	weft_be_lock(w->dev);
	rop_finish(w, rop, WEFT_ROP_FAILED, -ECANCELED, WEFT_R_CANCELLED);
	weft_be_unlock(w->dev);
	return 0;
}

void weft_win_rop_abandon(struct weft_win *w, struct weft_rop *rop)
{
	if (rop->state != WEFT_ROP_POSTED)
		return;
	weft_be_lock(w->dev);
	rop_unlink(w, rop);
	rop->state = WEFT_ROP_DONE;
	weft_be_unlock(w->dev);
}

/* Send statuses after which a retry can succeed. */
static int status_retryable(unsigned int st)
{
	return st == WEFT_R_RCXT_BUSY || st == WEFT_R_NO_LINK || st == WEFT_R_RX_QUEUE_FULL ||
	       st == WEFT_R_FIFO_FULL;
}

/* ---- send side -------------------------------------------------------- */

/* Reclaim frames the adapter has finished, in order.  Lock held. */
static void tx_reclaim(struct weft_win *w)
{
	uint64_t now = 0;
	while (w->tx_tail != w->tx_head) {
		uint8_t *f = tx_frame(w, w->tx_tail);
		volatile struct weft_send_hdr *vh = (volatile struct weft_send_hdr *)f;
		if (!(vh->flags & WEFT_SF_DONE))
			break;
		atomic_thread_fence(memory_order_acquire);
		unsigned int status = vh->status;
		struct weft_tx_slot *ts = &w->tx_slots[w->tx_tail & w->send_mask];
		if (ts->type == WEFT_SF_COND || ts->type == WEFT_SF_COND_CTL)
			weft_ops_cond_done(w, f, status);
		memset(f, 0, WEFT_FRAME_HDR_SIZE);
		w->tx_tail++;
		if (ts->rop) {
			struct weft_rop *rop = ts->rop;
			ts->rop = NULL;
			struct weft_rcxt_ent *re = rop_ent(w, rop);
			/* Only the frame of the op's current tid counts. */
			if (re && rop->rdma.tid == ts->tid) {
				re->rop_frame_pending = false;
				if (re->rop_done_pending) {
					rop_finish(w, rop, WEFT_ROP_DONE, 0, WEFT_R_OK);
					continue;
				}
				if (!now)
					now = w->dev->be->ops->now_ns(w->dev->be);
				re->rop_deadline = now + re->rop_timeout;
				if (re->rop_deadline < w->rops_due)
					w->rops_due = re->rop_deadline;
				if (status != WEFT_R_OK && !status_retryable(status)) {
					w->st.tx_errors++;
					rop_finish(w, rop, WEFT_ROP_FAILED, -EIO, status);
				}
			}
			continue;
		}
		if (status != WEFT_R_OK) {
			w->st.tx_errors++;
			struct weft_entry e;
			memset(&e, 0, offsetof(struct weft_entry, data));
			e.type = WEFT_ENT_SEND_ERROR;
			e.status = status < WEFT_R__COUNT ? status : WEFT_R_BAD_TYPE;
			e.tid = ts->tid;
			e.rcxt = ts->rcxt;
			e.flags = ts->type == WEFT_SF_RDMAR || ts->type == WEFT_SF_RDMAR_FIFO ||
				  ts->type == WEFT_SF_RDMAR_PUT ? WEFT_ENT_F_READ : 0;
			weft_win_pend_push(w, &e);
		}
	}
}

/* Claim the next send frame; lock held. */
static uint8_t *tx_claim(struct weft_win *w)
{
	if (w->tx_head - w->tx_tail >= w->send_frames)
		tx_reclaim(w);
	if (w->tx_head - w->tx_tail >= w->send_frames) {
		w->st.tx_full++;
		return NULL;
	}
	return tx_frame(w, w->tx_head);
}

/* Ring for the frames committed since the last doorbell; lock held. */
static void tx_ring(struct weft_win *w)
{
	if (!w->tx_unrung)
		return;
	db_write(w, WEFT_DB_START_TRANSMIT, w->tx_unrung);
	w->tx_unrung = 0;
	w->st.tx_doorbells++;
}

static void tx_commit(struct weft_win *w, uint8_t type, uint32_t tid, uint32_t rcxt,
		      struct weft_rop *rop)
{
	struct weft_tx_slot *ts = &w->tx_slots[w->tx_head & w->send_mask];
	ts->rop = rop;
	ts->tid = tid;
	ts->rcxt = rcxt;
	ts->type = type;
	w->tx_head++;
	w->st.tx_frames++;
	w->tx_unrung++;
	if (!w->db_hold)
		tx_ring(w);
}

/* Claim a send frame, fill it with line and payload, ring; lock held. */
static int post_line_locked(struct weft_win *w, const struct weft_send_line *line,
			    const void *payload, size_t len)
{
	uint8_t *f = tx_claim(w);
	if (!f)
		return -EAGAIN;
	if (len)
		memcpy(f + WEFT_FRAME_HDR_SIZE, payload, len);
	memcpy(f, line, sizeof(*line));
	((struct weft_send_line *)f)->hdr.key = w->job_id;
	tx_commit(w, line->hdr.type, line->rdma.tid, line->rdma.local_rcxt, NULL);
	return 0;
}

int weft_win_post_line(struct weft_win *w, const struct weft_send_line *line,
		       const void *payload, size_t len)
{
	if (w->fatal)
		return w->fatal;
	weft_be_lock(w->dev);
	int r = post_line_locked(w, line, payload, len);
	weft_be_unlock(w->dev);
	return r;
}

unsigned int weft_win_tx_room(struct weft_win *w)
{
	weft_be_lock(w->dev);
	tx_reclaim(w);
	unsigned int room = w->send_frames - (unsigned int)(w->tx_head - w->tx_tail);
	weft_be_unlock(w->dev);
	return room;
}

int weft_win_send(struct weft_win *w, uint16_t node, uint16_t window, const void *buf,
		  size_t len)
{
	if (len > w->dev->q.max_payload)
		return -EMSGSIZE;
	if (len && !buf)
		return -EINVAL;
	if (w->fatal)
		return w->fatal;
	struct weft_send_line line;
	memset(&line, 0, sizeof(line));
	line.hdr.dest_node = node;
	line.hdr.dest_window = window;
	line.hdr.length = (uint16_t)len;
	line.hdr.type = WEFT_SF_FIFO;
	weft_be_lock(w->dev);
	int r = post_line_locked(w, &line, buf, len);
	if (!r)
		w->st.tx_packets++;
	weft_be_unlock(w->dev);
	return r;
}

/* Post one RDMA pseudo packet; lock held. */
static int post_rdma_locked(struct weft_win *w, struct weft_rdma *op, int is_read,
			    struct weft_rop *rop)
{
	if (op->length == 0 || op->notify > WEFT_COMP_BOTH)
		return -EINVAL;
	uint8_t *f = tx_claim(w);
	if (!f)
		return -EAGAIN;
	if (op->tid == 0)
		op->tid = weft_rcxt_next_tid(w, op->local_rcxt);
	else {
		struct weft_rcxt_ent *e = weft_rcxt_find(w, op->local_rcxt);
		if (e && e->last_tid < op->tid)
			e->last_tid = op->tid;
		if (w->next_tid <= op->tid)
			w->next_tid = op->tid + 1;
	}
	struct weft_send_line line;
	memset(&line, 0, sizeof(line));
	line.hdr.dest_node = op->node;
	line.hdr.dest_window = op->window;
	line.hdr.type = is_read ? WEFT_SF_RDMAR : WEFT_SF_RDMAW;
	line.hdr.key = w->job_id;
	line.rdma.local_pvo = op->local_pvo;
	line.rdma.remote_pvo = op->remote_pvo;
	line.rdma.length = op->length;
	line.rdma.local_rcxt = op->local_rcxt;
	line.rdma.remote_rcxt = op->remote_rcxt;
	line.rdma.remote_rcxt_key = op->remote_rcxt_key;
	line.rdma.notify = op->notify;
	line.rdma.tid = op->tid;
	line.rdma.protocol_cookie = op->protocol_cookie;
	line.rdma.user_cookie = op->user_cookie;
	memcpy(f, &line, sizeof(line));
	if (rop) {
		struct weft_rcxt_ent *re = weft_rcxt_find(w, op->local_rcxt);
		if (re && re->rop_tid_hi < op->tid)
			re->rop_tid_hi = op->tid;
	}
	tx_commit(w, line.hdr.type, op->tid, op->local_rcxt, rop);
	w->st.tx_rdma++;
	return 0;
}

int weft_win_post_rdma_raw(struct weft_win *w, struct weft_rdma *op, int is_read,
			   struct weft_rop *rop)
{
	if (w->fatal)
		return w->fatal;
	weft_be_lock(w->dev);
	int r = post_rdma_locked(w, op, is_read, rop);
	weft_be_unlock(w->dev);
	return r;
}

int weft_win_rdma_write(struct weft_win *w, struct weft_rdma *op)
{
	return weft_win_post_rdma_raw(w, op, 0, NULL);
}

int weft_win_rdma_read(struct weft_win *w, struct weft_rdma *op)
{
	return weft_win_post_rdma_raw(w, op, 1, NULL);
}

/* Post one reliable op; lock held. */
static int rop_post_locked(struct weft_win *w, struct weft_rop *rop)
{
	struct weft_rcxt_ent *re = weft_rcxt_find(w, rop->rdma.local_rcxt);
	if (!re)
		return -ENOENT;         /* reliable ops need an rCxt of this window */
	if (re->rop)
		return -EBUSY;          /* one transaction per rCxt */
	rop->rdma.notify |= WEFT_COMP_SOURCE;
	rop->rdma.tid = 0;
	if (!rop->max_tries)
		rop->max_tries = w->rop_max_tries;
	rop->tries = 1;
	rop->error = 0;
	rop->status = 0;
	re->rop_timeout = rop->timeout_ns ? rop->timeout_ns : w->rop_timeout;
	re->rop_frame_pending = true;
	re->rop_done_pending = false;
	re->rop_deadline = UINT64_MAX;
	re->rop_start = w->dev->be->ops->now_ns(w->dev->be);
	int r = post_rdma_locked(w, &rop->rdma, rop->is_read, rop);
	if (r == 0) {
		r = rops_add(w, rop);
		if (r == 0) {
			rop->state = WEFT_ROP_POSTED;
			rop->first_tid = rop->rdma.tid;
			re->rop = rop;
			w->st.rop_posted++;
		}
	}
	return r;
}

int weft_win_rop_post(struct weft_win *w, struct weft_rop *rop)
{
	if (w->fatal)
		return w->fatal;
	weft_be_lock(w->dev);
	int r = rop_post_locked(w, rop);
	weft_be_unlock(w->dev);
	return r;
}

int weft_win_rop_post_list(struct weft_win *w, struct weft_rop *const *rops, unsigned int n)
{
	unsigned int i;
	int r = 0;

	if (w->fatal)
		return w->fatal;
	weft_be_lock(w->dev);
	w->db_hold = true;
	for (i = 0; i < n && !r; i++)
		r = rop_post_locked(w, rops[i]);
	if (r)
		i--;
	w->db_hold = false;
	tx_ring(w);
	weft_be_unlock(w->dev);
	return i ? (int)i : r;
}

/* Re-issue timed-out reliable ops with a larger tid; lock held.  Each
 * poll calls this: it walks the list only once w->rops_due has passed,
 * and sets it to the earliest deadline it saw. */
static void rops_check(struct weft_win *w)
{
	if (!w->nr_rops)
		return;
	uint64_t now = w->dev->be->ops->now_ns(w->dev->be);
	if (now < w->rops_due)
		return;
	/* A re-issue below may reclaim frames, which lowers rops_due. */
	w->rops_due = UINT64_MAX;
	uint64_t due = UINT64_MAX;
	for (unsigned int i = 0; i < w->nr_rops; i++) {
		struct weft_rop *rop = w->rops[i];
		struct weft_rcxt_ent *re = rop_ent(w, rop);
		if (!re || re->rop_frame_pending)
			continue;
		if (now < re->rop_deadline) {
			if (re->rop_deadline < due)
				due = re->rop_deadline;
			continue;
		}
		if (rop->tries >= rop->max_tries ||
		    (w->rop_budget && now - re->rop_start >= w->rop_budget)) {
			rop_finish(w, rop, WEFT_ROP_FAILED, -ETIMEDOUT, WEFT_R_CANCELLED);
			i--;
			continue;
		}
		uint32_t old = rop->rdma.tid;
		rop->rdma.tid = 0;
		if (post_rdma_locked(w, &rop->rdma, rop->is_read, rop) != 0) {
			rop->rdma.tid = old;    /* send FIFO full: try on the next poll */
			due = now;
			continue;
		}
		rop->tries++;
		re->rop_frame_pending = true;
		re->rop_timeout *= 2;
		uint64_t cap = w->rop_max_timeout;
		if (rop->timeout_ns && cap < rop->timeout_ns)
			cap = rop->timeout_ns;
		if (re->rop_timeout > cap)
			re->rop_timeout = cap;
		w->st.rop_retries++;
	}
	if (due < w->rops_due)
		w->rops_due = due;
}

/* ---- receive side ----------------------------------------------------- */

static void rx_return(struct weft_win *w)
{
	if (!w->ret_pending)
		return;
	db_write(w, WEFT_DB_RETURN_SLOTS, w->ret_pending);
	w->st.slots_returned += w->ret_pending;
	w->st.return_doorbells++;
	w->ret_pending = 0;
}

static int rx_ready(struct weft_win *w)
{
	volatile struct weft_recv_hdr *vh = (volatile struct weft_recv_hdr *)rx_frame(w, w->rx_head);
	return (vh->flags & WEFT_RF_VALID) != 0;
}

/* A completion for a reliable op?  Returns 1 if it was consumed. */
static int rx_match_rop(struct weft_win *w, const struct weft_recv_hdr *h)
{
	if (!(h->flags & WEFT_RF_AS_SOURCE))
		return 0;
	struct weft_rcxt_ent *re = weft_rcxt_find(w, h->rcxt);
	if (!re)
		return 0;
	struct weft_rop *rop = re->rop;
	if (rop && h->tid >= rop->first_tid && h->tid <= rop->rdma.tid) {
		if (h->status == WEFT_R_OK) {
			/* A retry still queued will read the op's memory:
			 * the op is done when its frame is (tx_reclaim). */
			if (re->rop_frame_pending)
				re->rop_done_pending = true;
			else
				rop_finish(w, rop, WEFT_ROP_DONE, 0, WEFT_R_OK);
		} else if (!status_retryable(h->status) && h->tid == rop->rdma.tid) {
			rop_finish(w, rop, WEFT_ROP_FAILED, -EIO, h->status);
		}
		return 1;
	}
	if (rop || h->tid <= re->rop_tid_hi) {
		/* A tid this rCxt used before the current operation: stale. */
		w->st.stale_completions++;
		return 1;
	}
	return 0;
}

/* Take one receive entry, lock held.  1 = *e filled, 0 = nothing for
 * the caller (empty, or consumed internally). */
static int rx_take(struct weft_win *w, struct weft_entry *e, int *more)
{
	*more = 0;
	uint8_t *f = rx_frame(w, w->rx_head);
	volatile struct weft_recv_hdr *vh = (volatile struct weft_recv_hdr *)f;
	if (!(vh->flags & WEFT_RF_VALID))
		return 0;
	atomic_thread_fence(memory_order_acquire);
	struct weft_recv_hdr h;
	memcpy(&h, f, sizeof(h));
	int got = 0;
	if (h.type == WEFT_RF_FIFO && h.length <= WEFT_MAX_PAYLOAD) {
		memset(e, 0, offsetof(struct weft_entry, data));
		e->type = WEFT_ENT_PACKET;
		e->flags = h.flags & WEFT_RF_BROADCAST;
		e->src_node = h.src_node;
		e->src_window = h.src_window;
		e->length = h.length;
		memcpy(e->data, f + WEFT_FRAME_HDR_SIZE, h.length);
		w->st.rx_packets++;
		got = 1;
	} else if (h.type == WEFT_RF_COMPLETION) {
		w->st.rx_completions++;
		if (!rx_match_rop(w, &h)) {
			memset(e, 0, offsetof(struct weft_entry, data));
			e->type = WEFT_ENT_COMPLETION;
			e->flags = h.flags & (WEFT_RF_AS_SOURCE | WEFT_RF_AS_TARGET | WEFT_RF_READ |
					      WEFT_RF_BROADCAST);
			e->src_node = h.src_node;
			e->src_window = h.src_window;
			e->rcxt = h.rcxt;
			e->tid = h.tid;
			e->status = h.status < WEFT_R__COUNT ? h.status : WEFT_R_BAD_TYPE;
			e->length = h.total_length;
			e->protocol_cookie = h.protocol_cookie;
			e->user_cookie = h.user_cookie;
			got = 1;
		}
	} else if (weft_ops_rx_entry(w, &h, f + WEFT_FRAME_HDR_SIZE, e)) {
		got = 1;
	} else {
		w->st.rx_bad++;
	}
	/* Consume: zero the header line, count the slot for return. */
	memset(f, 0, WEFT_FRAME_HDR_SIZE);
	w->rx_head++;
	if (++w->ret_pending >= w->return_batch)
		rx_return(w);
	*more = 1;
	return got;
}

int weft_win_poll(struct weft_win *w, struct weft_entry *e)
{
	struct weft_dev *d = w->dev;
	weft_be_progress(d);
	weft_be_lock(d);
	tx_reclaim(w);
	rops_check(w);
	int got = pend_pop(w, e);
	while (!got) {
		int more;
		got = rx_take(w, e, &more);
		if (!got && w->pend_n)
			got = pend_pop(w, e);
		if (!more)
			break;
	}
	if (!got) {
		rx_return(w);
		/* No event needed to notice a recovery or a fatal window. */
		if (++w->idle_polls >= STATE_CHECK_POLLS) {
			w->idle_polls = 0;
			state_check(w);
		}
	} else {
		w->idle_polls = 0;
	}
	weft_be_unlock(d);
	if (!got && w->fatal)
		return w->fatal;
	return got;
}

/* Handle the events the backend queued; returns 1 if one concerned w. */
static int drain_events(struct weft_win *w)
{
	struct weft_uevent ev;
	int mine = 0;
	while (w->dev->be->ops->read_event(w->dev->be, &ev) == 1) {
		w->st.events++;
		if (ev.type == WEFT_UEV_RECOVERY) {
			for (struct weft_win *x = w->dev->wins; x; x = x->next)
				x->fatal = -ESTALE;
			mine = 1;
			continue;
		}
		for (struct weft_win *x = w->dev->wins; x; x = x->next)
			if (x->bw.window == ev.window && ev.type == WEFT_UEV_FATAL &&
			    !x->fatal)
				x->fatal = -EPIPE;
		if (ev.window == w->bw.window)
			mine = 1;
	}
	return mine;
}

int weft_win_wait(struct weft_win *w, int timeout_ms)
{
	struct weft_dev *d = w->dev;
	const struct weft_be_ops *ops = d->be->ops;
	uint64_t start = ops->now_ns(d->be);
	w->st.waits++;
	/* Spin first: an answer that is about to land is cheaper to see by
	 * polling than through an interrupt (simulated hardware only moves
	 * when waited on, so no spin there). */
	if (!ops->progress && w->spin_ns) {
		for (unsigned int i = 0;; i++) {
			if (w->pend_n || rx_ready(w))
				return 1;
			if (w->fatal)
				break;
			if ((i & 63) == 63 && ops->now_ns(d->be) - start >= w->spin_ns)
				break;
		}
	}
	for (;;) {
		weft_be_progress(d);
		weft_be_lock(d);
		tx_reclaim(w);
		rops_check(w);
		int ready = w->pend_n || rx_ready(w);
		if (!ready && state_check(w)) {
			weft_be_unlock(d);
			return w->fatal;
		}
		uint32_t thr = (uint32_t)(w->rx_head + 1);
		int armed = 0;
		if (!ready && thr != WEFT_THRESHOLD_OFF0 && thr != WEFT_THRESHOLD_OFF1) {
			rx_return(w);
			db_write(w, WEFT_DB_RECV_THRESHOLD, thr);
			armed = 1;
			/* The entry may have landed before the threshold was set. */
			ready = rx_ready(w);
		}
		/* Reliable ops need a timer: never sleep past their deadline. */
		int64_t slice = -1;
		uint64_t now = ops->now_ns(d->be);
		for (unsigned int i = 0; i < w->nr_rops; i++) {
			const struct weft_rcxt_ent *re = rop_ent(w, w->rops[i]);
			int64_t left = !re || re->rop_frame_pending ? 1000000 :
				       (re->rop_deadline > now ?
					(int64_t)(re->rop_deadline - now) : 0);
			if (slice < 0 || left < slice)
				slice = left;
		}
		if (w->tx_head != w->tx_tail && (slice < 0 || slice > 1000000))
			slice = 1000000;        /* frames to reclaim: look again in 1 ms */
		weft_be_unlock(d);
		if (ready)
			return 1;
		int tmo = timeout_ms;
		if (timeout_ms >= 0) {
			uint64_t spent = (now - start) / 1000000;
			if (spent >= (uint64_t)timeout_ms)
				return 0;
			tmo = timeout_ms - (int)spent;
		}
		if (slice >= 0) {
			int s = (int)((slice + 999999) / 1000000);
			if (tmo < 0 || s < tmo)
				tmo = s;
		}
		if (!armed && (tmo < 0 || tmo > 1))
			tmo = 1;                /* threshold unusable at this count: poll */
		int r = ops->wait(d->be, tmo);
		if (r < 0)
			return r;
		if (r > 0 && drain_events(w))
			return w->fatal && !w->pend_n && !rx_ready(w) ? w->fatal : 1;
	}
}
