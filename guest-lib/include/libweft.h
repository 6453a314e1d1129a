/* SPDX-License-Identifier: MIT */
/*
 * libweft: the HAL-level user API of the Weft RDMA switch adapter.
 *
 * The fast path never enters the kernel: packets and RDMA requests are
 * written into the window's send FIFO and started with a doorbell store,
 * packets and RDMA completions are polled from the receive FIFO.  The
 * kernel (or the in-process simulator) is only asked to open windows,
 * hand out rCxts and register memory.
 *
 * Objects:
 *   weft_dev      an opened adapter (a backend: kernel /dev/weftN or sim)
 *   weft_win      a window: send FIFO + receive FIFO + doorbell page
 *   weft_mrc      the lazy deregistration cache of one job
 *   weft_rel      a reliable, exactly-once message channel on one window
 *
 * Conventions: functions returning int return 0 (or a count) on success
 * and a negative errno on failure.  Nothing here is thread-safe: use one
 * thread per window (several threads may use different windows of the
 * same weft_dev only with the kernel backend; the sim backend serialises
 * every call internally).
 *
 * docs/libweft.md describes the API in prose.
 */
#ifndef LIBWEFT_H
#define LIBWEFT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_LIB_VERSION        "0.1.0"
#define WEFT_LIB_MAX_PAYLOAD    1920u   /* bytes in one FIFO packet */

/* ---- Adapter ------------------------------------------------------------ */

struct weft_dev;

struct weft_dev_info {
	const char *backend;    /* "kernel" or "sim" */
	char name[64];          /* device path or sim node name */
	uint16_t node_id;
	uint16_t nr_windows;
	uint32_t nr_rcxt;
	uint32_t recovery_count;
	uint32_t nr_handlers;
	uint32_t max_payload;
	uint64_t hw_id;
};

/*
 * Open an adapter.  name is "weftN", "/dev/weftN" or "kernel:/dev/weftN"
 * (kernel backend), or NULL for "/dev/weft0".  A simulated adapter is
 * opened with weft_simnet_open() instead.  On failure returns NULL, sets
 * errno and writes a message into err (if not NULL).
 */
struct weft_dev *weft_dev_open(const char *name, char *err, size_t errlen);
void weft_dev_close(struct weft_dev *dev);
int weft_dev_query(struct weft_dev *dev, struct weft_dev_info *info);

/* Attach the calling process to a job (the protection key of its windows
 * and the owner of its registered memory).  Windows opened with a job id
 * attach it themselves; attaching twice is not an error. */
int weft_dev_job_attach(struct weft_dev *dev, uint32_t job_id);

/* Adapter counter c (weft/counters.h numbering).  -ENOTSUP when the
 * backend cannot read counters (kernel backend without access to the
 * PCI BAR, e.g. not root). */
int weft_dev_counter(struct weft_dev *dev, unsigned int c, uint64_t *val);
/* Active windows bit vector of the adapter (windows 0..127). */
int weft_dev_active_windows(struct weft_dev *dev, uint64_t bits[2]);

/* Number of adapter counters and their names ("TX_PACKETS",
 * "DROP_KEY_MISMATCH", ...). */
unsigned int weft_nr_counters(void);
const char *weft_counter_label(unsigned int c);
/* Name and text of a completion / send status (enum weft_reason). */
const char *weft_status_name(unsigned int status);
const char *weft_status_text(unsigned int status);

/* Monotonic clock of the device (simulated time for the sim backend). */
uint64_t weft_dev_now_ns(struct weft_dev *dev);

/* ---- Simulator backend --------------------------------------------------- */

struct weft_simnet;

struct weft_simnet_attr {
	unsigned int nodes;         /* adapters, 1..64 */
	uint64_t seed;              /* fabric randomness and driver keys */
	uint64_t mem_size;          /* simulated guest memory per node, 0 = 128 MiB */
	uint32_t drop_ppm;          /* fabric loss, parts per million */
	uint32_t routes;            /* routes per node pair (reordering), >= 1 */
	uint64_t delay_ns;          /* one-way delay (virtual time) */
	uint64_t jitter_ns;         /* random extra delay per frame */
	uint32_t flags;             /* WEFT_SIMNET_F_* */
	/* Adapters per node (0 = 1): indexes a*k .. a*k + a - 1 are the
	 * adapters of one node, sharing its memory, job slots and
	 * registrations (node-global tables, docs/driver.md). */
	unsigned int adapters;
};
/* One thread drives every weft_dev of the simnet: a wait lets the
 * virtual clock jump to its own deadline whenever the sim is idle,
 * without waiting for the other weft_devs to block. */
#define WEFT_SIMNET_F_SOLO      (1u << 0)

/* Create an in-process simulated cluster (qemu-device/sim), running on a
 * virtual clock.  Returns NULL (with err) when libweft was built without
 * the sim backend. */
struct weft_simnet *weft_simnet_new(const struct weft_simnet_attr *attr, char *err,
				    size_t errlen);
void weft_simnet_free(struct weft_simnet *net);
/* Open adapter index i of the cluster.  Every weft_dev of one simnet may
 * be used from its own thread; the virtual clock only jumps ahead when
 * every open weft_dev is blocked in weft_win_wait(). */
struct weft_dev *weft_simnet_open(struct weft_simnet *net, unsigned int index,
				  char *err, size_t errlen);
/* Change the fabric's loss and reordering while it runs. */
int weft_simnet_set_faults(struct weft_simnet *net, uint32_t drop_ppm, uint32_t routes,
			   uint64_t delay_ns, uint64_t jitter_ns);
/* Switch fault: take adapter index's fabric port down (frames from and to
 * it are dropped) or up again. */
int weft_simnet_set_port_up(struct weft_simnet *net, unsigned int index, int up);
/* Make adapter index a member of multicast group (0..255, node id
 * 0xF000 + group). */
int weft_simnet_mcast_join(struct weft_simnet *net, unsigned int group, unsigned int index);
/* 1 if libweft was built with the sim backend. */
int weft_simnet_available(void);

/* ---- Memory for RDMA ------------------------------------------------------ */

/* Allocate len bytes that can be registered (page aligned; for the sim
 * backend, inside the simulated node's memory).  Each allocation is its
 * own mapping, so the lazy deregistration cache sees a new allocation at
 * an old address as a changed mapping. */
void *weft_dev_alloc(struct weft_dev *dev, size_t len);
void weft_dev_free(struct weft_dev *dev, void *p, size_t len);

/* ---- Windows and FIFO mode ---------------------------------------------- */

struct weft_win;

struct weft_win_attr {
	uint32_t job_id;        /* window key; nonzero */
	uint32_t send_log2;     /* log2(send frames), 0 = 6 */
	uint32_t recv_log2;     /* log2(receive frames), 0 = 8 */
	uint32_t flags;         /* WEFT_WIN_F_* */
	uint32_t quantum;       /* send quantum, 0 = adapter default */
	uint32_t return_batch;  /* receive slots returned per doorbell, 0 = frames/4 */
};
#define WEFT_WIN_F_BCAST        (1u << 0)
#define WEFT_WIN_F_EARLY_INT    (1u << 1)

struct weft_win *weft_win_open(struct weft_dev *dev, const struct weft_win_attr *attr,
			       int *error);
int weft_win_close(struct weft_win *win);
uint32_t weft_win_id(const struct weft_win *win);
uint16_t weft_win_node(const struct weft_win *win);
struct weft_dev *weft_win_dev(const struct weft_win *win);

/* Post a FIFO-mode packet (len <= WEFT_LIB_MAX_PAYLOAD) to node/window.
 * -EAGAIN when the send FIFO is full (poll, then try again). */
int weft_win_send(struct weft_win *win, uint16_t node, uint16_t window,
		  const void *buf, size_t len);

/* ---- RDMA ----------------------------------------------------------------- */

#define WEFT_COMP_NONE          0u  /* no completion */
#define WEFT_COMP_SOURCE        1u  /* completion to the initiator */
#define WEFT_COMP_TARGET        2u  /* completion to the remote window */
#define WEFT_COMP_BOTH          3u

struct weft_rdma {
	uint16_t node;          /* remote node */
	uint16_t window;        /* remote window */
	uint32_t local_rcxt;    /* this window's rCxt */
	uint32_t remote_rcxt;   /* the remote window's rCxt */
	uint16_t remote_rcxt_key;
	uint8_t  notify;        /* WEFT_COMP_* */
	uint8_t  reserved;
	uint64_t local_pvo;     /* local buffer */
	uint64_t remote_pvo;    /* remote buffer */
	uint64_t length;        /* bytes, > 0 */
	uint32_t tid;           /* in: 0 = next tid; out: tid used */
	uint64_t protocol_cookie;
	uint64_t user_cookie;
};

/* Post an RDMA write (local -> remote) or read (remote -> local).  Raw:
 * no retry.  -EAGAIN when the send FIFO is full. */
int weft_win_rdma_write(struct weft_win *win, struct weft_rdma *op);
int weft_win_rdma_read(struct weft_win *win, struct weft_rdma *op);

/*
 * Reliable RDMA operation: posted with SOURCE notification (plus TARGET
 * if asked), re-issued with a larger tid after timeout_ns (doubling per
 * try up to max_timeout_ns) until a completion of one of its tids
 * arrives.  Completions carrying a tid this operation never used are
 * stale and ignored.  Storage belongs to the caller and must stay valid
 * until its WEFT_ENT_ROP entry has been taken from weft_win_poll(): state
 * can turn DONE or FAILED inside weft_win_wait(), with the entry, which
 * points at the op, still to come.
 */
enum weft_rop_state { WEFT_ROP_IDLE, WEFT_ROP_POSTED, WEFT_ROP_DONE, WEFT_ROP_FAILED };

struct weft_rop {
	struct weft_rdma rdma;
	int is_read;
	uint64_t timeout_ns;    /* 0 = window default */
	unsigned int max_tries; /* 0 = window default */
	/* outputs */
	int state;              /* enum weft_rop_state */
	int error;              /* FAILED: negative errno */
	unsigned int status;    /* completion / send status (enum weft_reason) */
	unsigned int tries;
	uint32_t first_tid;
};

int weft_win_rop_post(struct weft_win *win, struct weft_rop *rop);
/* Post n reliable ops in order with one doorbell for all their frames.
 * Returns how many were posted (1..n), or, when the first could not be,
 * its negative errno (-EAGAIN: send FIFO full; as weft_win_rop_post). */
int weft_win_rop_post_list(struct weft_win *win, struct weft_rop *const *rops, unsigned int n);
/* Default timeout/back-off of reliable operations on this window. */
void weft_win_set_retry(struct weft_win *win, uint64_t timeout_ns,
			uint64_t max_timeout_ns, unsigned int max_tries);
/* Retry budget of reliable operations on this window: an operation with
 * no completion budget_ns after its first post fails with -ETIMEDOUT
 * (whatever tries are left).  Default 30 s of device time; 0 = none. */
void weft_win_set_retry_budget(struct weft_win *win, uint64_t budget_ns);

/* ---- Polling the receive FIFO ------------------------------------------- */

enum weft_entry_type {
	WEFT_ENT_PACKET = 1,        /* FIFO-mode packet, data[0..length) */
	WEFT_ENT_COMPLETION = 2,    /* RDMA completion */
	WEFT_ENT_SEND_ERROR = 3,    /* a posted frame failed: status, tid */
	WEFT_ENT_ROP = 4,           /* a reliable operation finished: rop */
	WEFT_ENT_DATA = 5,          /* half-RDMA chunk: data[0..length) at offset of total */
	WEFT_ENT_READ_REQ = 6,      /* half-RDMA read request: answer with weft_win_put_reply */
	WEFT_ENT_COND = 7,          /* a COND / COND_CTL command finished: cond */
};
#define WEFT_ENT_F_SOURCE       0x02u   /* completion: this window initiated */
#define WEFT_ENT_F_TARGET       0x04u   /* completion: this window was remote */
#define WEFT_ENT_F_READ         0x08u   /* completion of an RDMA read */
#define WEFT_ENT_F_BROADCAST    0x10u
#define WEFT_ENT_F_LAST         0x20u   /* DATA: the chunk that ends the transfer */

struct weft_entry {
	int type;               /* enum weft_entry_type */
	unsigned int flags;     /* WEFT_ENT_F_* */
	uint16_t src_node;
	uint16_t src_window;
	uint32_t rcxt;          /* completion: this window's rCxt */
	uint32_t tid;
	unsigned int status;    /* enum weft_reason, 0 = success */
	uint64_t length;        /* packet bytes or RDMA bytes */
	uint64_t protocol_cookie;
	uint64_t user_cookie;
	struct weft_rop *rop;   /* WEFT_ENT_ROP */
	uint64_t offset;        /* DATA: offset of data[] in the transfer */
	uint64_t total;         /* DATA, READ_REQ: bytes of the whole transfer */
	uint64_t pvo;           /* DATA: sender's hint; READ_REQ: requester's destination */
	uint64_t src_pvo;       /* READ_REQ: what the requester asks for */
	uint16_t rcxt_key;      /* READ_REQ: the requester's rCxt key */
	struct {                /* COND: the queue after the command */
		uint32_t state, expect, done, tagged, fired;
	} cond;
	uint8_t data[WEFT_LIB_MAX_PAYLOAD];
};

/* Take one entry: 1 = *e filled, 0 = nothing ready, < 0 = error
 * (-EPIPE: the window went fatal; -ESTALE: the adapter recovered and the
 * window is invalid, close it).  Also reclaims finished send frames,
 * returns receive slots and re-issues timed-out reliable operations. */
int weft_win_poll(struct weft_win *win, struct weft_entry *e);
/* Block until an entry may be ready or timeout_ms passes (-1 = forever):
 * poll for up to the window's spin time first (real hardware only), then
 * arm the receive threshold and sleep on the driver's event fd.
 * 1 = ready, 0 = timeout, -EPIPE / -ESTALE as weft_win_poll once nothing
 * is left to take (window fatal / adapter recovered). */
int weft_win_wait(struct weft_win *win, int timeout_ms);
/* Window state as the adapter sees it (doorbell page reads): LMT
 * window_state (1 = valid, 3 = fatal, 0 = invalid: the adapter recovered),
 * receive and send counts. */
int weft_win_state(struct weft_win *win, uint64_t *state, uint64_t *recv_count,
		   uint64_t *send_count);
/* Busy-poll time of weft_win_wait before it sleeps (default 50 us). */
void weft_win_set_spin(struct weft_win *win, uint64_t spin_ns);
/* File descriptor that becomes readable on window events (-1 if the
 * backend has none). */
int weft_win_event_fd(struct weft_win *win);

struct weft_win_stats {
	uint64_t tx_frames, tx_packets, tx_rdma;
	uint64_t tx_full;               /* sends refused: send FIFO full */
	uint64_t tx_errors;             /* frames finished with a bad status */
	uint64_t rx_packets, rx_completions;
	uint64_t rx_bad;                /* malformed receive entries dropped */
	uint64_t slots_returned, return_doorbells;
	uint64_t rop_posted, rop_retries, rop_done, rop_failed;
	uint64_t stale_completions;     /* completions with an old tid, ignored */
	uint64_t waits, events;
	uint64_t tx_doorbells;          /* START_TRANSMIT stores (tx_frames in all) */
};
void weft_win_get_stats(const struct weft_win *win, struct weft_win_stats *s);

/* ---- Striping over several adapters (seed 1.5.8, item 73) ---------------- */

/*
 * One RDMA write striped over the adapters of a node: the message is cut
 * into chunks, chunk i goes over path i mod n, each path (a local
 * window on one adapter and the peer's window on one of its adapters)
 * runs its chunks one after another as reliable operations on its own
 * rCxt pair, all paths at once.  The packets are self-describing, so the
 * target places them wherever they arrive; the user gets one completion
 * for the whole message.  docs/libweft.md, "Striping".
 */
#define WEFT_STRIPE_MAX         8u

struct weft_stripe_path {
	struct weft_win *win;       /* local window, one adapter */
	uint16_t node, window;      /* the peer's window on one of its adapters */
	uint32_t local_rcxt;        /* an rCxt of win */
	uint32_t remote_rcxt;
	uint16_t remote_rcxt_key;
	uint64_t local_pvo;         /* the buffers as this path's adapters see them */
	uint64_t remote_pvo;        /* (the same PVOs on every path with node-global tables) */
	/* outputs */
	struct weft_rop rop;        /* this path's current chunk (WEFT_ENT_ROP entries carry &rop) */
	uint64_t bytes;             /* bytes done on this path */
};

struct weft_stripe {
	unsigned int nr_paths;      /* 1 .. WEFT_STRIPE_MAX */
	struct weft_stripe_path path[WEFT_STRIPE_MAX];
	uint64_t length;            /* bytes, > 0 */
	uint64_t chunk;             /* bytes per chunk; 0 = 256 KiB */
	uint8_t notify;             /* WEFT_COMP_TARGET: also to the peer, per chunk */
	uint64_t timeout_ns;        /* first retry timeout of a chunk; 0 = window default */
	/* outputs */
	int state;                  /* enum weft_rop_state of the whole message */
	int error;                  /* FAILED: the first failed chunk's error */
	uint64_t chunks;            /* chunks completed */
};

/* Post the first chunk of every path. */
int weft_stripe_write(struct weft_stripe *st);
/* Feed an entry polled from one of the paths' windows.  1: the entry
 * finished the message (st->state DONE or FAILED; given once), 0: it
 * was one of the stripe's, not the last; -ENOENT: not the stripe's. */
int weft_stripe_entry(struct weft_stripe *st, const struct weft_entry *e);
/* Poll (and wait on) every path's window until the message finishes
 * (1), timeout_ms passes (0; -1 = no limit) or a window fails (< 0).
 * Entries that are not the stripe's are dropped. */
int weft_stripe_wait(struct weft_stripe *st, int timeout_ms);

/* ---- Cancel and redrive (seed 1.5.6, item 90) ----------------------------- */

/* Cancel a posted reliable op: no more retries, it finishes FAILED with
 * -ECANCELED (a WEFT_ENT_ROP entry); completions of any tid it used are
 * counted stale afterwards.  The adapter drops late packets of its tids
 * once the rCxt runs a newer tid, or at once after weft_rcxt_free. */
int weft_win_rop_cancel(struct weft_win *win, struct weft_rop *rop);

/* ---- Third-party read (seed 1.5.9) ---------------------------------------- */

/* This window (the manager) asks data source node/window (remote_rcxt,
 * remote_pvo) to write length bytes into data target tp_node/tp_window
 * at local_pvo through tp_rcxt/tp_rcxt_key.  The SOURCE completion comes
 * here on local_rcxt (with WEFT_COMP_SOURCE), the TARGET one to the data
 * target.  tid 0 = next tid; it must also be newer than the data source
 * rCxt's last tid. */
struct weft_tp_read {
	struct weft_rdma rdma;
	uint16_t tp_node, tp_window;
	uint32_t tp_rcxt;
	uint16_t tp_rcxt_key;
};
int weft_win_tp_read(struct weft_win *win, struct weft_tp_read *op);

/* ---- Half-RDMA / half-FIFO (seed 1.5.7, docs/hw-spec.md 5.3) ------------- */

/* Write, RDMA at the sender: length bytes from local_pvo arrive as
 * WEFT_ENT_DATA entries in the target window's receive FIFO (remote_rcxt
 * unused, remote_pvo passed to the receiver as a hint, no completions). */
int weft_win_write_fifo(struct weft_win *win, struct weft_rdma *op);
/* Write, RDMA at the receiver: buf (op->length bytes) is copied into send
 * frames and placed at remote_pvo by the target adapter through
 * remote_rcxt; completions as for an RDMA write.  local_rcxt may be
 * WEFT_RCXT_NONE (no SOURCE completion).  -EAGAIN (nothing posted) when
 * the send FIFO lacks room for all frames. */
int weft_win_put(struct weft_win *win, struct weft_rdma *op, const void *buf);
/* Read, RDMA at the data source: remote_pvo at node arrives as
 * WEFT_ENT_DATA entries (flag READ) here, then, with WEFT_COMP_SOURCE, a
 * completion entry. */
int weft_win_read_fifo(struct weft_win *win, struct weft_rdma *op);
/* Read, RDMA at the destination: the data source's program gets a
 * WEFT_ENT_READ_REQ entry (src_pvo = remote_pvo) and answers with
 * weft_win_put_reply; the data is placed at local_pvo here. */
int weft_win_read_put(struct weft_win *win, struct weft_rdma *op);
/* Answer READ_REQ entry req with req->total bytes of buf, through
 * local_rcxt (WEFT_RCXT_NONE: no completion here; otherwise a TARGET
 * completion arrives when notify has WEFT_COMP_TARGET). */
int weft_win_put_reply(struct weft_win *win, const struct weft_entry *req, const void *buf,
		       uint32_t local_rcxt, uint8_t notify);
#define WEFT_RCXT_NONE_ID       0xffffffffu

/* Reassembly of DATA entries: feed every DATA entry of one transfer;
 * returns 1 when all total bytes are in buf (each chunk counted once),
 * 0 while some are missing, -EINVAL for an entry that does not fit. */
struct weft_fifo_rx {
	uint8_t *buf;
	uint64_t cap;           /* bytes of buf */
	uint64_t got, total;
	uint32_t tid;
	uint64_t *seen;         /* bitmap of chunks, allocated on first use */
	uint64_t nchunks;
};
int weft_fifo_rx_add(struct weft_fifo_rx *rx, const struct weft_entry *e);
void weft_fifo_rx_reset(struct weft_fifo_rx *rx);

/* ---- Conditional RDMA (seed 1.5.12, docs/hw-spec.md 5.4) ----------------- */

/* Queue cond (0..7): the next n RDMA writes of this window (posted with
 * SOURCE notification) gate the RDMA write after them, which the adapter
 * sends only once all n completions are back.  Every command's result
 * arrives as a WEFT_ENT_COND entry. */
#define WEFT_COND_OP_QUERY      0u
#define WEFT_COND_OP_CLEAR      1u
#define WEFT_COND_OP_SET        2u
int weft_win_cond(struct weft_win *win, unsigned int cond, unsigned int n);
int weft_win_cond_ctl(struct weft_win *win, unsigned int op, unsigned int cond,
		      uint32_t value);

/* ---- Broadcast and multicast RDMA with acknowledgements (seed 1.5.10, 1.5.11)
 *
 * The source posts one RDMA write to WEFT_BCAST_NODE or a multicast id
 * (0xF000 + group).  Two data paths:
 *   fifo = 0  an RDMA write with TARGET notification: every target has the
 *             same rCxt id and PVO set up (the seed's broadcast
 *             configuration); a target acknowledges its completion entry;
 *   fifo = 1  a half-RDMA write into the targets' receive FIFOs
 *             (weft_win_write_fifo): no set-up at the targets; a target
 *             acknowledges the DATA entry that completed its reassembly.
 * A target's ULP answers with weft_bcast_ack (a unicast FIFO packet).  The
 * source feeds entries to weft_bcast_progress, which counts the
 * acknowledgements of the listed targets and, after timeout_ns, re-sends
 * by unicast to the targets that did not acknowledge, and only to them
 * (item 77).  A target may see a re-sent transfer it already has (its
 * acknowledgement was lost): it acknowledges again and ignores the data
 * (same user_cookie).
 */
#define WEFT_BCAST_NODE         0xffffu
#define WEFT_BCAST_MAX_TARGETS  64u
enum weft_bcast_state { WEFT_BCAST_IDLE, WEFT_BCAST_POSTED, WEFT_BCAST_DONE, WEFT_BCAST_FAILED };
struct weft_bcast {
	struct weft_rdma rdma;  /* node = broadcast or multicast id */
	int fifo;               /* 1: data into the targets' receive FIFOs */
	uint16_t targets[WEFT_BCAST_MAX_TARGETS];
	unsigned int nr_targets;
	uint64_t timeout_ns;    /* 0 = 2 ms */
	unsigned int max_tries; /* per target, 0 = 8 */
	/* outputs */
	int state;              /* enum weft_bcast_state */
	unsigned int acked;
	unsigned int retries;   /* unicast re-sends */
	unsigned int tries[WEFT_BCAST_MAX_TARGETS];
	uint64_t acked_mask;    /* bit i: targets[i] acknowledged */
	uint32_t first_tid, last_tid;   /* tids used; acknowledgements outside are stale */
	uint64_t resend_ns;     /* device time of the next unicast re-send */
};
int weft_bcast_post(struct weft_win *win, struct weft_bcast *b);
/* Source: 1 if e was an acknowledgement of b (consumed), 0 otherwise;
 * with e == NULL only re-sends to the targets past their timeout. */
int weft_bcast_progress(struct weft_win *win, struct weft_bcast *b, const struct weft_entry *e);
/* Target: acknowledge to its source completion entry e (AS_TARGET), or the
 * DATA entry e that completed a FIFO transfer. */
int weft_bcast_ack(struct weft_win *win, const struct weft_entry *e);

/* ---- rCxts --------------------------------------------------------------- */

/* Allocate an rCxt owned by the window; key is the rCxt key to give to
 * peers.  Tids are handed out per window, strictly increasing, so a tid
 * is never reused on the window and is always larger than the last tid
 * of any of its rCxts. */
int weft_rcxt_alloc(struct weft_win *win, uint32_t *rcxt, uint16_t *key);
int weft_rcxt_free(struct weft_win *win, uint32_t rcxt);
uint32_t weft_rcxt_next_tid(struct weft_win *win, uint32_t rcxt);
/* Last tid used on an rCxt of this window (0 if none or not ours). */
uint32_t weft_rcxt_last_tid(const struct weft_win *win, uint32_t rcxt);

/* ---- Memory registration ------------------------------------------------- */

/* Direct registration (one PVO for the whole range), in 4 KiB TCE pages. */
int weft_mr_reg(struct weft_dev *dev, uint32_t job_id, const void *addr, size_t len,
		uint64_t *pvo, uint32_t *handle);
/*
 * The same in the job's tables of 2^page_shift-byte pages: 12 (4 KiB),
 * 16 (64 KiB) or 24 (16 MiB); 0 is weft_mr_reg.  With 64 KiB or 16 MiB
 * pages addr and len must be multiples of the page and every page
 * physically contiguous (e.g. hugetlbfs or transparent huge pages):
 * -EINVAL otherwise, or when the driver has no tables of that size
 * (docs/driver.md, WEFT_IOC_REG_MR).
 */
int weft_mr_reg_pages(struct weft_dev *dev, uint32_t job_id, const void *addr, size_t len,
		      unsigned int page_shift, uint64_t *pvo, uint32_t *handle);
int weft_mr_dereg(struct weft_dev *dev, uint32_t handle);

/*
 * Lazy deregistration cache (seed section 1.5.20).  The address space is
 * cut into fragments (16 MiB by default), grouped into 4 GiB segments; a
 * hash table maps a segment to its bit vector of mapped fragments and the
 * per-fragment records (PVO, handle, idle_count, use_count, the identity
 * of the mapping behind it).  A transfer maps each fragment it touches:
 * an already mapped fragment is reused (hit) unless the mapping behind
 * it changed, which is detected from /proc/self/maps (device, inode and
 * file offset of the range) and costs a deregistration and a new
 * registration (remap).  Idle fragments age one tick per second and are
 * deregistered after idle_limit ticks when not in use.
 */
struct weft_mrc;

struct weft_mrc_attr {
	uint32_t job_id;
	uint32_t frag_shift;    /* log2(fragment size), 0 = 24 (16 MiB) */
	uint32_t idle_limit;    /* ticks (seconds), 0 = 60 */
	uint32_t max_frags;     /* mapped fragments kept at most, 0 = 1024 */
};

struct weft_mrc_stats {
	uint64_t hits, misses, remaps, evictions;
	uint64_t registrations, deregistrations, failures;
	uint64_t mapped;        /* fragments mapped now */
};

/* A piece of a transfer: PVO and length.  A transfer is cut at fragment
 * boundaries (one registration per fragment). */
struct weft_mr_seg {
	uint64_t pvo;
	uint64_t len;
	uint64_t offset;        /* offset of this piece in the transfer */
};

struct weft_mrc *weft_mrc_new(struct weft_dev *dev, const struct weft_mrc_attr *attr);
void weft_mrc_free(struct weft_mrc *c);
/* Map [addr, addr+len) and take a use reference on every fragment.
 * Returns the number of segments written (<= max), or < 0. */
int weft_mrc_get(struct weft_mrc *c, const void *addr, size_t len,
		 struct weft_mr_seg *segs, unsigned int max);
/* Drop the use references taken by weft_mrc_get (the RDMA completed). */
void weft_mrc_put(struct weft_mrc *c, const void *addr, size_t len);
/* Forget the mappings of a range (the application unmapped it). */
void weft_mrc_invalidate(struct weft_mrc *c, const void *addr, size_t len);
/* Age every fragment by ticks (normally done once per second from
 * weft_mrc_get); returns the fragments deregistered. */
unsigned int weft_mrc_age(struct weft_mrc *c, unsigned int ticks);
void weft_mrc_get_stats(const struct weft_mrc *c, struct weft_mrc_stats *s);

/* ---- Reliable messaging --------------------------------------------------- */

/*
 * An exactly-once message channel between two windows.  Each message is
 * RDMA-written (BOTH completions) into one of `slots` receive slots of
 * the peer, each slot with its own target rCxt, carrying its sequence
 * number as user cookie; the sender re-issues with a larger tid and
 * back-off until the receiver acknowledges (FIFO packet with the next
 * expected sequence).  The receiver delivers in order, once, and drops
 * duplicates and stale completions.  The channel owns its window: do not
 * poll that window yourself.
 */
struct weft_rel;

struct weft_rel_attr {
	uint32_t slots;         /* messages in flight, 1..64, 0 = 16 */
	uint32_t slot_size;     /* bytes per message at most, 0 = 4096 */
	uint64_t timeout_ns;    /* first retry timeout, 0 = 2 ms */
	uint64_t max_timeout_ns;/* back-off cap, 0 = 256 * timeout */
	uint32_t max_tries;     /* give up after, 0 = 1000 */
};

#define WEFT_REL_MAX_SLOTS      64u

/* What the peer needs to know to connect (exchange it out of band or
 * with weft_rdv_*). */
struct weft_rel_info {
	uint16_t node;
	uint16_t window;
	uint32_t slots;
	uint32_t slot_size;
	uint32_t reserved;
	uint64_t ring_pvo;
	uint32_t rcxt[WEFT_REL_MAX_SLOTS];
	uint16_t rcxt_key[WEFT_REL_MAX_SLOTS];
};

struct weft_rel_stats {
	uint64_t sent, delivered, retries, failed;
	uint64_t duplicates;            /* messages received again, dropped */
	uint64_t stale;                 /* stale completions ignored */
	uint64_t acks_sent, acks_received;
};

struct weft_rel *weft_rel_new(struct weft_win *win, const struct weft_rel_attr *attr,
			      int *error);
void weft_rel_free(struct weft_rel *rel);
void weft_rel_local_info(const struct weft_rel *rel, struct weft_rel_info *info);
int weft_rel_connect(struct weft_rel *rel, const struct weft_rel_info *peer);
/* Queue a message (len <= slot_size).  -EAGAIN: all slots in flight,
 * call weft_rel_progress() and try again. */
int weft_rel_send(struct weft_rel *rel, const void *buf, size_t len);
/* Take the next message in order: 1 = got one (*len set), 0 = none. */
int weft_rel_recv(struct weft_rel *rel, void *buf, size_t cap, size_t *len);
/* Poll the window, retry, acknowledge.  < 0 on a fatal error
 * (-ETIMEDOUT when a message ran out of tries). */
int weft_rel_progress(struct weft_rel *rel);
/* FIFO packets on the channel's window that are not the channel's own go
 * to fn (they are dropped without one). */
void weft_rel_set_packet_handler(struct weft_rel *rel,
				 void (*fn)(void *arg, const struct weft_entry *e), void *arg);
/* Block until the channel's window may have work (see weft_win_wait). */
int weft_rel_wait(struct weft_rel *rel, int timeout_ms);
/* Messages sent but not yet acknowledged. */
unsigned int weft_rel_unacked(const struct weft_rel *rel);
void weft_rel_get_stats(const struct weft_rel *rel, struct weft_rel_stats *s);

/* ---- Rendezvous over FIFO packets ---------------------------------------- */

/*
 * Two-node tools exchange a blob (node, window, rCxts, PVOs, keys) with
 * FIFO packets: the server waits on its window, the client sends its
 * blob to (peer node, peer window) until the server answers with its
 * own.  Blobs are at most WEFT_RDV_MAX bytes.
 */
#define WEFT_RDV_MAX            1024u

int weft_rdv_serve(struct weft_win *win, uint32_t tag, const void *mine, size_t mine_len,
		   void *peer, size_t peer_cap, size_t *peer_len,
		   uint16_t *peer_node, uint16_t *peer_window, int timeout_ms);
int weft_rdv_connect(struct weft_win *win, uint32_t tag, uint16_t node, uint16_t window,
		     const void *mine, size_t mine_len, void *peer, size_t peer_cap,
		     size_t *peer_len, int timeout_ms);
/* Answer repeated hellos of the same client (its earlier answer was
 * lost) while waiting for something else: call on each packet entry;
 * returns 1 when e was a hello of tag, or of any tag this window served
 * before (the window remembers its last replies; the rendezvous calls
 * answer those too while they wait). */
int weft_rdv_handle(struct weft_win *win, uint32_t tag, const struct weft_entry *e,
		    const void *mine, size_t mine_len);
/* Two-phase goodbye: the client sends BYE until acknowledged. */
int weft_rdv_bye(struct weft_win *win, uint32_t tag, uint16_t node, uint16_t window,
		 int timeout_ms);
/* 1 if e is a BYE for tag (it is acknowledged). */
int weft_rdv_is_bye(struct weft_win *win, uint32_t tag, const struct weft_entry *e);

/* ---- Counter objects (docs/counters.md) ----------------------------------- */
/*
 * A counter object is a buffer of this process and a counter that the
 * adapter moves as data lands: counter RDMA reads fill parts of the
 * buffer from a peer's exposed memory, counter RDMA writes copy parts of
 * it there.  The counter starts at the buffer length (or at ops with
 * WEFT_CNT_F_OPS) and reaches 0 exactly when the last byte (or the last
 * operation) is done.  The buffer comes from weft_dev_alloc() or any
 * memory of the process (the kernel pins it).  offset is a multiple of
 * WEFT_CNT_CHUNK_BYTES; len too unless the part ends the buffer.  Up to
 * WEFT_CNT_SLOTS operations run at once on one object, each on its own
 * slot; a failed operation may be posted again on its slot.
 */
struct weft_cnt;

#define WEFT_CNT_F_IRQ          0x1u    /* weft_cnt_wait sleeps on an interrupt */
#define WEFT_CNT_F_OPS          0x2u    /* count operations, not bytes */
#define WEFT_CNT_CHUNK_BYTES    1024u
#define WEFT_CNT_SLOTS          8u
#define WEFT_CNT_EXPOSE_READ    0x1u    /* peers may read the range */
#define WEFT_CNT_EXPOSE_WRITE   0x2u    /* peers may write it */
#define WEFT_CNT_ANY_NODE       (-1)

int weft_cnt_create(struct weft_dev *dev, void *buf, size_t len, unsigned int flags,
		    unsigned int ops, struct weft_cnt **out);
/* Read [offset, offset + len) of the buffer from remote_va on node. */
int weft_cnt_read(struct weft_cnt *c, unsigned int slot, uint16_t node, uint64_t offset,
		  uint64_t len, uint64_t remote_va);
/* Write [offset, offset + len) of the buffer to remote_va on node. */
int weft_cnt_write(struct weft_cnt *c, unsigned int slot, uint16_t node, uint64_t offset,
		   uint64_t len, uint64_t remote_va);
/* The counter, read from the mapped status block (no system call). */
uint64_t weft_cnt_value(const struct weft_cnt *c);
/* Operations failed so far; *reason (may be NULL) gets the adapter's
 * reason of the last one (0 = none), e.g. the peer's cause. */
unsigned int weft_cnt_failures(const struct weft_cnt *c, unsigned int *reason);
/* Wait up to timeout_ms for the counter to reach 0 (returns 0) or for
 * more than `failed` operations to have failed (-EIO); -ETIMEDOUT.
 * With WEFT_CNT_F_IRQ the kernel sleeps until the adapter's interrupt;
 * without, the call polls the status block. */
int weft_cnt_wait(struct weft_cnt *c, unsigned int failed, int timeout_ms);
int weft_cnt_destroy(struct weft_cnt *c);
/* Let peers reach [buf, buf + len) of this process by its virtual
 * address: rights WEFT_CNT_EXPOSE_*, node a peer or WEFT_CNT_ANY_NODE. */
int weft_cnt_expose(struct weft_dev *dev, void *buf, size_t len, unsigned int rights,
		    int node, uint32_t *index);
int weft_cnt_unexpose(struct weft_dev *dev, uint32_t index);
/* The reason name of weft_cnt_failures (e.g. "CNT_NOT_EXPOSED"). */
const char *weft_cnt_reason_name(unsigned int reason);

#ifdef __cplusplus
}
#endif

#endif /* LIBWEFT_H */
