/* SPDX-License-Identifier: MIT */
/* libweft internals shared by its source files. */
#ifndef WEFT_LIB_PRIV_H
#define WEFT_LIB_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include "libweft.h"
#include "backend.h"
#include "weft/hw.h"
#include "weft/fifo.h"

struct weft_dev {
	struct weft_be *be;
	char name[64];
	struct weft_ioc_query q;
	uint32_t jobs[8];               /* jobs attached through this handle */
	unsigned int nr_jobs;
	struct weft_win *wins;          /* open windows */
};

/* rCxts of a window, in a small open-addressed table keyed by id. */
struct weft_rcxt_ent {
	uint32_t id;                    /* WEFT_RCXT_NONE = empty */
	uint16_t key;
	uint32_t last_tid;
	uint32_t rop_tid_hi;            /* highest tid a reliable op used */
	/* The reliable op in flight on it (one per rCxt) and its retry
	 * state, which the caller's struct weft_rop does not carry. */
	struct weft_rop *rop;
	uint64_t rop_deadline;          /* device time of the next re-issue */
	uint64_t rop_timeout;           /* current timeout, doubled per retry */
	uint64_t rop_start;             /* first post: the retry budget counts from here */
	bool rop_frame_pending;         /* the frame of the current tid is still queued */
	bool rop_done_pending;          /* completed while a retry's frame was queued */
};

/* What each posted send frame was, so that its completion marking can
 * be attributed. */
struct weft_tx_slot {
	struct weft_rop *rop;           /* reliable op, or NULL */
	uint32_t tid;
	uint32_t rcxt;
	uint8_t type;
};

#define WEFT_PENDQ 64u

struct weft_win {
	struct weft_dev *dev;
	struct weft_win *next;
	struct weft_be_win bw;
	uint32_t job_id;
	uint32_t send_frames, recv_frames;
	uint32_t send_mask, recv_mask;
	uint64_t tx_head;               /* frames posted */
	uint64_t tx_tail;               /* frames reclaimed (seen done) */
	struct weft_tx_slot *tx_slots;
	uint64_t rx_head;               /* receive entries consumed */
	uint32_t ret_pending;           /* consumed, not yet returned */
	uint32_t return_batch;
	uint32_t next_tid;
	struct weft_rcxt_ent *rcxts;
	uint32_t rcxt_cap;              /* power of two */
	uint32_t rcxt_n;
	/* entries produced internally (send errors, finished rops) */
	struct weft_entry *pend;
	unsigned int pend_head, pend_n;
	uint64_t rop_timeout, rop_max_timeout;
	unsigned int rop_max_tries;
	uint64_t rop_budget;            /* ns, 0 = none */
	struct weft_rop **rops;         /* reliable ops waiting for retry */
	unsigned int nr_rops, cap_rops;
	/* Device time before which no reliable op is due for re-issue: at
	 * most the earliest deadline of the ops whose frame is done, so a
	 * poll looks at the list only when one may be due. */
	uint64_t rops_due;
	/* Send frames committed and not yet rung; while db_hold is set (a
	 * list being posted) they wait for one START_TRANSMIT of them all. */
	uint32_t tx_unrung;
	bool db_hold;
	int fatal;                      /* 0, or -EPIPE (window fatal), -ESTALE (recovered) */
	unsigned int idle_polls;        /* empty polls since the last STATE check */
	uint64_t spin_ns;
	struct weft_rdv_memo *rdv_memo; /* last replies, answered again on repeats */
	struct weft_win_stats st;
};

#define WEFT_RDV_MEMOS 4
struct weft_rdv_memo {
	uint32_t tag;
	uint32_t len;
	uint8_t blob[WEFT_RDV_MAX];
};

/* Backend helpers. */
static inline void weft_be_progress(struct weft_dev *d)
{
	if (d->be->ops->progress)
		d->be->ops->progress(d->be);
}
static inline void weft_be_lock(struct weft_dev *d)
{
	if (d->be->ops->lock)
		d->be->ops->lock(d->be);
}
static inline void weft_be_unlock(struct weft_dev *d)
{
	if (d->be->ops->unlock)
		d->be->ops->unlock(d->be);
}

struct weft_dev *weft_dev_from_be(struct weft_be *be, char *err, size_t errlen);
struct weft_rcxt_ent *weft_rcxt_find(struct weft_win *w, uint32_t id);
int weft_win_post_rdma_raw(struct weft_win *w, struct weft_rdma *op, int is_read,
			   struct weft_rop *rop);
/* Stop tracking a posted reliable op (its result is known otherwise);
 * later completions of its tids count as stale. */
void weft_win_rop_abandon(struct weft_win *w, struct weft_rop *rop);
void weft_win_pend_push(struct weft_win *w, const struct weft_entry *e);
/* Post one send frame (header line as given, key stamped, payload after
 * it); -EAGAIN when the send FIFO is full.  Lock not held. */
int weft_win_post_line(struct weft_win *w, const struct weft_send_line *line,
		       const void *payload, size_t len);
/* Free send frames after reclaiming finished ones.  Lock not held. */
unsigned int weft_win_tx_room(struct weft_win *w);

/* ops.c: receive entries of the half-RDMA modes (DATA, READ_REQ) into
 * *e (1) or 0 if h is none of them; a finished COND/COND_CTL frame f
 * becomes a WEFT_ENT_COND entry.  Lock held. */
int weft_ops_rx_entry(struct weft_win *w, const struct weft_recv_hdr *h,
		      const uint8_t *payload, struct weft_entry *e);
void weft_ops_cond_done(struct weft_win *w, const uint8_t *f, unsigned int status);

#endif /* WEFT_LIB_PRIV_H */
