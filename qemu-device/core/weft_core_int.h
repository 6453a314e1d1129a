/* SPDX-License-Identifier: MIT */
/*
 * Weft adapter model: private state shared by weft_core.c, weft_send.c,
 * weft_recv.c and weft_xlate.c.  Nothing here is part of the API.
 */
#ifndef WEFT_CORE_INT_H
#define WEFT_CORE_INT_H

#include <string.h>

#include "weft_core.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the Weft core model assumes a little-endian host"
#endif

#define WEFT_RXQ_DEFAULT        64u
#define WEFT_CTLQ_LEN           64u     /* queued completion packets */
#define WEFT_NO_TASK            0xffu
#define WEFT_NO_WINDOW          0xffffu
/* Memory for per-rCxt duplicate tracking (one bit per payload chunk). */
#define WEFT_TRACK_BUDGET       (64ull << 20)

enum weft_task_kind {
	WEFT_TASK_FREE = 0,
	WEFT_TASK_RX,
	WEFT_TASK_TX,
	WEFT_TASK_CMD,
};

/* An RDMA send frame being turned into packets (RDMAW payload). */
/*
 * The send FIFO frame a transmit task works on across polls: an RDMA
 * write being sent, or (checking) the destination of an RDMA read being
 * checked page by page before its request goes out.
 */
struct weft_fop {
	bool busy;
	bool checking;                  /* RDMA read: destination check */
	uint8_t task;
	struct weft_send_line line;     /* copy of the frame's header line */
	uint64_t sent;                  /* bytes transmitted, or checked */
};

/* TCEs an RDMA read's destination check reads per poll budget unit: the
 * work of about one packet (hw-spec 7.1). */
#define WEFT_CHECK_PAGES_PER_STEP 2u
/* A conditional queue (hw-spec 5.4): counters and the held signal. */
struct weft_condq {
	uint8_t state;                  /* enum weft_cond_state */
	uint32_t expect, done, tagged, fired;
	struct weft_send_line signal;   /* copy of the held signal frame */
};

/* Private per-window state (the LMT in SRAM holds the rest). */
struct weft_win {
	struct weft_fop fop;
	bool fop_signal;                /* the fop is a conditional signal */
	uint8_t rop_task;               /* task serving the rCxt queue head */
	bool rop_turn;                  /* alternate send FIFO / rCxt queue */
	uint8_t cond_collect;           /* queue + 1 tagging members, 0 none */
	uint8_t cond_ready;             /* bit per queue whose signal may go */
	struct weft_condq cond[WEFT_NR_COND];
};

/* A received packet: its first ncopy bytes in data, the rest at the same
 * offsets in lent (the embedder's packet).  ncopy is len (copied), 0 (lent
 * whole: memory only the embedder writes) or WEFT_WIRE_HDR_SIZE (the header
 * copied, the payload lent in memory a peer may change meanwhile: only
 * placed or read once, weft_core_receive_shared). */
struct weft_pkt {
	uint32_t len;
	uint32_t ncopy;
	const uint8_t *lent;            /* the embedder's packet, or NULL */
	_Alignas(8) uint8_t data[WEFT_WIRE_MAX_FRAME];
};

/* Received-chunk bitmap of an rCxt in the RECEIVING state. */
struct weft_track {
	uint64_t *bits;
	uint64_t nchunks;
	uint32_t tid;
};

/* TCE table t as its registers describe it (steps 1 and 2 of hw-spec 10),
 * recomputed by weft_xlate_table_update() at every TCE register write and
 * at reset, so a translation does not decode the registers again.  The
 * TCEs themselves live in guest memory and are read at every use. */
struct weft_xtab {
	uint64_t base;
	uint32_t nr;
	uint32_t shift;
	bool ok;                        /* configured: else TCE_TABLE */
	bool owned;                     /* TCE_OWNER valid */
	uint32_t job;                   /* TCE_OWNER job id */
};

struct weft_verbs;
struct weft_match;
struct weft_cnt;

/* Interrupt moderation of one handler (INT_MOD, hw-spec 8.1). */
struct weft_imod {
	uint64_t reg;                   /* INT_MOD as written */
	uint64_t gap_end;               /* deadline: no interrupt before it */
	uint64_t due;                   /* deadline: a held interrupt goes out, 0 = none */
	uint32_t waiting;               /* events held for it since its last interrupt */
	uint32_t pad;
};

struct weft_core {
	struct weft_core_config cfg;
	struct weft_verbs *verbs;       /* second personality (weft_verbs_*.c) */
	struct weft_match *match;       /* header matching (weft_match.c) */
	struct weft_cnt *ctr;           /* counter engine (weft_cnt.c) */
	struct weft_core_ops ops;
	void *opaque;

	uint8_t *sram;
	uint64_t sram_used;
	uint64_t sram_size;
	uint64_t db_size;

	/* registers */
	uint64_t recovery_count;
	uint64_t key_epoch;             /* non-volatile: kept by RESET */
	uint64_t active[2];
	uint64_t cmd_status;
	uint64_t int_config;
	uint64_t evq_base;
	uint64_t evq_size;
	uint64_t evq_prod;
	uint64_t evq_cons;
	uint32_t ltv;
	uint32_t snapshot;
	uint32_t int_ready;
	uint32_t int_pending;
	unsigned int irq_rr;
	bool irq_unpresented;
	struct weft_imod imod[WEFT_MAX_HANDLERS];
	bool link_up;
	bool fatal;                     /* STATUS.FATAL: adapter-internal error */
	uint64_t tce_base[WEFT_NR_TCE_TABLES];
	uint64_t tce_cfg[WEFT_NR_TCE_TABLES];
	uint64_t tce_owner[WEFT_NR_TCE_TABLES];
	struct weft_xtab xtab[WEFT_NR_TCE_TABLES];
	uint64_t cnt[WEFT_CNT__COUNT];

	/* tasks */
	uint8_t task_kind[WEFT_NR_TASKS];
	uint16_t task_win[WEFT_NR_TASKS];

	struct weft_win win[WEFT_MAX_WINDOWS];
	unsigned int tx_cur;            /* window being served */
	bool tx_have_cur;

	/* receive queue and outgoing completion queue */
	struct weft_pkt *rxq;
	uint32_t rxq_len;
	uint32_t rxq_head;
	uint32_t rxq_count;
	struct weft_pkt *ctlq;
	uint32_t ctlq_head;
	uint32_t ctlq_count;

	struct weft_track *track;
	uint64_t track_bytes;
	/* Per rCxt: tid of the last completion packet accepted (0 = none),
	 * for at-most-once completion delivery (hw-spec 6.2). */
	uint32_t *cmpl_tid;
	/* Per rCxt: conditional queue + 1 its current RDMA write is a
	 * member of (0 = none), cleared when its completion counts. */
	uint8_t *cond_tag;
	/* Per window: 1 while its LMT is known to pass weft_lmt_check, that
	 * is since it passed and no SRAM write has touched it (cleared by
	 * weft_core_sram_write, reset and a state load). */
	uint8_t *lmt_ok;

	/* Receive entries whose header line is still to be written
	 * (cfg.rx_overlap), only inside weft_core_poll (rx_batch). */
	struct weft_rx_pend {
		uint64_t addr;
		struct weft_recv_hdr rh;
		uint64_t count;         /* recv_current_cnt after the entry */
		uint32_t window;
		bool event;             /* receive threshold after the header */
	} rx_pend[WEFT_NR_RX_TASKS];
	unsigned int rx_npend;
	bool rx_batch;

	struct weft_pkt txbuf;          /* scratch for building a packet */
	uint8_t *tx;                    /* the packet being built: txbuf.data
					 * or the embedder's (ops.tx_buf) */
	char msgbuf[160];
};

/* ---- weft_core.c ------------------------------------------------------ */
static inline struct weft_lmt *weft_lmt(struct weft_core *c, unsigned int w)
{
	return (struct weft_lmt *)(c->sram + WEFT_SRAM_LMT_OFF(w));
}

static inline struct weft_rcxt *weft_rcxt(struct weft_core *c, uint32_t r)
{
	return (struct weft_rcxt *)(c->sram + WEFT_SRAM_RCXT_OFF(r));
}

/* rCxt r exists, is acquired and belongs to window w.  Returns a reason. */
static inline unsigned int weft_rcxt_owned(struct weft_core *c, unsigned int w, uint32_t r)
{
	const struct weft_rcxt *x;

	if (r >= c->cfg.nr_rcxt)
		return WEFT_R_RCXT_INVALID;
	x = weft_rcxt(c, r);
	if (!x->rcxt_assigned)
		return WEFT_R_RCXT_INVALID;
	if (x->local_window != w)
		return WEFT_R_RCXT_FOREIGN;
	return WEFT_R_OK;
}

void weft_count(struct weft_core *c, unsigned int counter, uint64_t n);
void weft_trace(struct weft_core *c, const struct weft_trace *t);
void weft_guest_error(struct weft_core *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void weft_drop(struct weft_core *c, const struct weft_wire_hdr *h,
	       unsigned int window, unsigned int reason);
bool weft_window_valid(struct weft_core *c, unsigned int w);
unsigned int weft_lmt_recheck(struct weft_core *c, unsigned int w);

/* Every LMT field the engines rely on, valid for window w (< nr_windows).
 * Checked again after any SRAM write to the window's LMT, because the
 * driver can rewrite it at any time.  Returns a reason. */
static inline unsigned int weft_lmt_check(struct weft_core *c, unsigned int w)
{
	return c->lmt_ok[w] ? WEFT_R_OK : weft_lmt_recheck(c, w);
}
unsigned int weft_task_alloc(struct weft_core *c, enum weft_task_kind kind,
			     unsigned int window);
void weft_task_free(struct weft_core *c, unsigned int task);
void weft_event(struct weft_core *c, unsigned int type, unsigned int window,
		uint32_t rcxt, unsigned int reason, uint64_t info);
/* Event for a preferred interrupt handler (verbs objects name theirs). */
void weft_event_vec(struct weft_core *c, unsigned int type, unsigned int vector,
		    uint32_t obj, unsigned int reason, uint64_t info);
void weft_window_fatal(struct weft_core *c, unsigned int w, uint32_t rcxt,
		       unsigned int reason);
void weft_set_active(struct weft_core *c, unsigned int w, bool on);
bool weft_is_active(const struct weft_core *c, unsigned int w);
int weft_dma_read_op(struct weft_core *c, uint64_t addr, void *buf, size_t len);
int weft_dma_write_op(struct weft_core *c, uint64_t addr, const void *buf, size_t len);

/* Guest memory access: 0, or -1 (a guest error) when any byte is not
 * guest RAM.  Through ops.dma_map when the embedder has it. */
static inline int weft_dma_read(struct weft_core *c, uint64_t addr, void *buf, size_t len)
{
	const void *p;

	if (c->ops.dma_map && len && addr + len > addr &&
	    (p = c->ops.dma_map(c->opaque, addr, len, false))) {
		memcpy(buf, p, len);
		return 0;
	}
	return weft_dma_read_op(c, addr, buf, len);
}

static inline int weft_dma_write(struct weft_core *c, uint64_t addr, const void *buf,
				 size_t len)
{
	void *p;

	if (c->ops.dma_map && len && addr + len > addr &&
	    (p = c->ops.dma_map(c->opaque, addr, len, true))) {
		memcpy(p, buf, len);
		return 0;
	}
	return weft_dma_write_op(c, addr, buf, len);
}

/* ---- weft_send.c ------------------------------------------------------ */
/* Transmit one packet or process one send action.  Returns 1 when
 * something was done, 0 when there is nothing to send, -EAGAIN when the
 * link is busy. */
int weft_tx_one(struct weft_core *c);
bool weft_tx_has_work(struct weft_core *c);
/* Release transmit tasks whose window is no longer valid. */
void weft_tx_reap(struct weft_core *c);
/* Queue a header-only packet (completion) for transmission; stamps key
 * and source from window w.  Returns false when the queue is full. */
bool weft_tx_ctl(struct weft_core *c, unsigned int w, struct weft_wire_hdr *h);
/* Abandon every transmit activity of window w (close, recovery). */
void weft_tx_window_stop(struct weft_core *c, unsigned int w);
/* Remove rCxt r from window w's RDMA send queue (cancel/release). */
void weft_tx_rcxt_unlink(struct weft_core *c, unsigned int w, uint32_t r);
/* Helpers for the half-RDMA and conditional frames (weft_half.c,
 * weft_cond.c): mark the current frame done, start a packet in txbuf,
 * transmit it, check and load an RDMA request's local rCxt. */
void weft_tx_frame_done(struct weft_core *c, unsigned int w, struct weft_send_line *line,
			unsigned int status);
uint64_t weft_tx_frame_addr(struct weft_core *c, unsigned int w);
struct weft_wire_hdr *weft_tx_hdr(struct weft_core *c, unsigned int w, uint8_t type);
int weft_tx_xmit(struct weft_core *c, unsigned int w, size_t len);
unsigned int weft_tx_req_check(struct weft_core *c, unsigned int w,
			       const struct weft_send_line *line, bool unicast_only);
void weft_tx_load_req(struct weft_core *c, unsigned int w, const struct weft_send_line *line,
		      uint8_t type, uint8_t state, uint8_t direction);

/* ---- weft_recv.c ------------------------------------------------------ */
/* Process one received packet of len bytes (at least a wire header): its
 * header at hdr (8-byte aligned, memory no peer writes), its len -
 * WEFT_WIRE_HDR_SIZE payload bytes at payload.  The payload may lie in
 * memory a peer changes meanwhile: it is only placed, or read once into a
 * copy where a packet type looks inside it (weft_core_receive_shared). */
void weft_rx_process(struct weft_core *c, const uint8_t *hdr, const uint8_t *payload,
		     size_t len);
/* Deliver a receive entry into window w's FIFO, header line last.
 * Returns enum weft_reason (0 = delivered).  With cfg.rx_overlap > 1,
 * inside a poll, the header line waits in rx_pend for weft_rx_flush. */
unsigned int weft_rx_fifo_deliver(struct weft_core *c, unsigned int w,
				  struct weft_recv_hdr *rh,
				  const void *payload, size_t len);
/* Write the pending header lines, newest first (end of a poll). */
void weft_rx_flush(struct weft_core *c);
/* Set up rCxt r to receive operation tid of total bytes (restart). */
bool weft_track_start(struct weft_core *c, uint32_t r, uint32_t tid, uint64_t total);
void weft_track_free(struct weft_core *c, uint32_t r);
/* Cancel whatever rCxt r is doing (state FREE, tid kept). */
void weft_rcxt_cancel(struct weft_core *c, uint32_t r, unsigned int reason);
/* Count and trace an accepted packet. */
void weft_rx_accept(struct weft_core *c, const struct weft_wire_hdr *h,
		    unsigned int w, size_t len);
/* rCxt r is acquired by window w with key.  Returns a reason. */
unsigned int weft_rx_rcxt_check(struct weft_core *c, unsigned int w, uint32_t r,
				uint16_t key);

/* ---- weft_half.c (half-RDMA / half-FIFO, hw-spec 5.3) ----------------- */
/* Send frames PUT, RDMAR_FIFO and RDMAR_PUT.  Returns 1 or -EAGAIN. */
int weft_half_put(struct weft_core *c, unsigned int w, struct weft_send_line *line);
int weft_half_read(struct weft_core *c, unsigned int w, struct weft_send_line *line);
/* Received FIFO_DATA and RDMAR_PUT_REQ packets. */
void weft_half_rx(struct weft_core *c, unsigned int w, const struct weft_wire_hdr *h,
		  const uint8_t *payload, size_t len);

/* ---- weft_cond.c (conditional RDMA, hw-spec 5.4) ---------------------- */
/* COND and COND_CTL frames.  Returns 1. */
int weft_cond_frame(struct weft_core *c, unsigned int w, struct weft_send_line *line);
/* An RDMAW frame about to start: tags members; returns true when the
 * frame is a signal that was held (and marked done). */
bool weft_cond_hold(struct weft_core *c, unsigned int w, struct weft_send_line *line);
/* A held signal of window w may go now: copies it into line. */
bool weft_cond_take(struct weft_core *c, unsigned int w, struct weft_send_line *line);
/* The SOURCE completion of rCxt r's current operation was accepted. */
void weft_cond_completion(struct weft_core *c, unsigned int w, uint32_t r);
/* Window w stops (close, fatal, recovery): every queue back to IDLE. */
void weft_cond_reset(struct weft_core *c, unsigned int w);

/* ---- weft_xlate.c ----------------------------------------------------- */
/* TCE table t's registers changed (or were reset): refresh c->xtab[t]. */
void weft_xlate_table_update(struct weft_core *c, unsigned int t);
/* Check every page of [pvo, pvo + len) for job.  Returns enum
 * weft_reason. */
unsigned int weft_xlate_check(struct weft_core *c, uint32_t job, uint64_t pvo,
			      uint64_t len);
/* The same check, resumable: at most max_pages pages from byte *done of
 * the range, advancing *done (== len once every page passed). */
unsigned int weft_xlate_check_step(struct weft_core *c, uint32_t job, uint64_t pvo,
				   uint64_t len, uint64_t *done, unsigned int max_pages);
/* Copy between guest memory named by a PVO range and buf.  Every page is
 * translated and checked before any byte moves. */
unsigned int weft_xlate_read(struct weft_core *c, uint32_t job, uint64_t pvo,
			     void *buf, size_t len);
unsigned int weft_xlate_write(struct weft_core *c, uint32_t job, uint64_t pvo,
			      const void *buf, size_t len, uint32_t *outstanding);

/* ---- weft_verbs_obj.c: the verbs engine's entry points ----------------- */
/* Sizes from the configuration; returns a message when out of range. */
const char *weft_verbs_config(const struct weft_core_config *cfg, uint32_t out[5]);
struct weft_verbs *weft_verbs_new(const struct weft_core_config *cfg);
void weft_verbs_free(struct weft_verbs *v);
/* Destroy every verbs object (reset, adapter recovery). */
void weft_verbs_reset(struct weft_core *c);
uint64_t weft_verbs_reg_read(struct weft_core *c, uint64_t reg);
void weft_verbs_cmd(struct weft_core *c, uint64_t addr);
/* BAR 4 offset of UAR page 0, and the BAR size with the UAR pages. */
uint64_t weft_verbs_uar_off(void);
uint64_t weft_verbs_db_size(const struct weft_core_config *cfg);
/* off is relative to UAR page 0. */
void weft_verbs_uar_write(struct weft_core *c, uint64_t off, uint64_t val);
void weft_verbs_rx(struct weft_core *c, const struct weft_wire_hdr *h, const uint8_t *payload,
		   size_t plen);
/* One transmit step: 1 done, 0 nothing, -EAGAIN link busy. */
int weft_verbs_poll(struct weft_core *c);
bool weft_verbs_has_work(const struct weft_core *c);
void weft_verbs_timer(struct weft_core *c);
/* Without ops->timer_arm: run the timers whose deadline has passed. */
void weft_verbs_poll_timer(struct weft_core *c);

/* Deadline of the verbs timers (0 = none), for weft_timer_sync(). */
uint64_t weft_verbs_deadline(const struct weft_core *c);

/* ---- weft_core.c: the one embedder timer, shared by the engines ---------- */
/* Arm ops->timer_arm for the earliest deadline of the verbs and counter
 * engines (0 cancels); called whenever one of them changes its own. */
void weft_timer_sync(struct weft_core *c);

/* ---- weft_cnt.c: counter engine (weft/cnt.h, docs/counters.md) ---------- */
struct weft_cnt *weft_cnt_new(void);
void weft_cnt_free(struct weft_cnt *k);
/* Destroy every object and exposure (reset, adapter recovery). */
void weft_cnt_reset(struct weft_core *c);
uint64_t weft_cnt_reg_read(struct weft_core *c, uint64_t reg);
void weft_cnt_cmd(struct weft_core *c, uint64_t addr);
void weft_cnt_rx(struct weft_core *c, const struct weft_wire_hdr *h, const uint8_t *payload,
		 size_t plen);
/* One transmit step: 1 done, 0 nothing, -EAGAIN link busy. */
int weft_cnt_poll(struct weft_core *c);
bool weft_cnt_has_work(const struct weft_core *c);
uint64_t weft_cnt_deadline(const struct weft_core *c);
void weft_cnt_timer(struct weft_core *c);
/* Without ops->timer_arm: run the timer when its deadline has passed. */
void weft_cnt_poll_timer(struct weft_core *c);

#endif /* WEFT_CORE_INT_H */
