/* SPDX-License-Identifier: MIT */
/*
 * Weft adapter model, free of QEMU types.
 *
 * The core owns registers, SRAM (LMTs and rCxts), tasks, the send and
 * receive engines, translation, snapshot and interrupts.  It reaches the
 * outside world only through struct weft_core_ops.  It is single-threaded:
 * the embedder calls every entry point from one thread (QEMU's main loop,
 * or the sim's loop).
 *
 * Work model: MMIO writes and weft_core_receive() only record work and
 * call ops->kick(); weft_core_poll() runs the adapter tasks for a bounded
 * budget, so no single call does unbounded work.
 */
#ifndef WEFT_CORE_H
#define WEFT_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/hw.h"
#include "weft/sram.h"
#include "weft/fifo.h"
#include "weft/wire.h"
#include "weft/xlate.h"
#include "weft/counters.h"

struct weft_core;

enum weft_trace_kind {
	WEFT_TR_REG_READ,       /* BAR 0: name, addr, val, size */
	WEFT_TR_REG_WRITE,
	WEFT_TR_SRAM_READ,      /* BAR 2 */
	WEFT_TR_SRAM_WRITE,
	WEFT_TR_DB_READ,        /* BAR 4: window, name, addr, val */
	WEFT_TR_DB_WRITE,
	WEFT_TR_PKT_TX,         /* hdr, len (a Weft packet: hdr is a copy of
				 * its header only; verbs: the packet) */
	WEFT_TR_PKT_RX,         /* hdr, len: accepted and processed */
	WEFT_TR_PKT_DROP,       /* hdr (may be NULL), reason */
	WEFT_TR_CMD,            /* command or doorbell: name, window, val,
				 * size = CMD_STATUS, reason; msg is set when
				 * it was refused or discarded */
	WEFT_TR_IRQ,            /* val = vector */
	WEFT_TR_EVENT,          /* val = event type, window, reason */
	WEFT_TR_WINDOW_FATAL,   /* window, reason, val = rCxt */
	WEFT_TR_GUEST_ERROR,    /* msg: guest misuse (also counted) */
};

struct weft_trace {
	enum weft_trace_kind kind;
	const char *name;       /* register name, or NULL */
	uint64_t addr;
	uint64_t val;
	unsigned int size;
	unsigned int window;
	unsigned int reason;    /* enum weft_reason */
	const struct weft_wire_hdr *hdr;
	size_t len;
	const char *msg;
};

struct weft_core_ops {
	/* Guest memory access.  Return 0, or -1 if any byte of the range is
	 * not guest RAM (nothing is written then). */
	int (*dma_read)(void *opaque, uint64_t addr, void *buf, size_t len);
	int (*dma_write)(void *opaque, uint64_t addr, const void *buf, size_t len);
	/* Raise MSI-X vector (= interrupt handler index). */
	void (*irq)(void *opaque, unsigned int vector);
	/* Transmit one packet (weft_wire_hdr + payload, no length prefix).
	 * Return 0 when taken, -EAGAIN when the link is busy (the core keeps
	 * the packet and retries on a later poll), -ENOTCONN when there is no
	 * link (the packet is dropped and counted as NO_LINK). */
	int (*xmit)(void *opaque, const void *pkt, size_t len);
	/* Monotonic clock in nanoseconds. */
	uint64_t (*now_ns)(void *opaque);
	/* The core has work: call weft_core_poll() soon. */
	void (*kick)(void *opaque);
	/* Arm the core's one timer for an absolute now_ns() deadline (0 =
	 * cancel); the embedder calls weft_core_timer() once it is reached.
	 * May be NULL: weft_core_poll() then checks the deadline itself. */
	void (*timer_arm)(void *opaque, uint64_t deadline_ns);
	/* Observability, may be NULL. */
	void (*trace)(void *opaque, const struct weft_trace *ev);
	/* The adapter's non-volatile store: KEY_EPOCH_NEXT calls it with the
	 * new key epoch before the write completes; the embedder keeps the
	 * value across power cycles and hands it back in
	 * weft_core_config.key_epoch.  Returns 0, or -1 if the value could
	 * not be stored (the epoch then does not advance).  NULL: the epoch
	 * lives as long as the core. */
	int (*epoch_store)(void *opaque, uint64_t epoch);
	/* Zero-copy transmit, may be NULL.  A buffer of WEFT_WIRE_MAX_FRAME
	 * bytes, 8-byte aligned, that the core builds its next packet in and
	 * then passes to xmit (whose return value says who owns it: 0 or
	 * -ENOTCONN, the embedder took it back; -EAGAIN, the embedder keeps
	 * it for the next call).  The core may call tx_buf again without
	 * transmitting (a packet abandoned): the embedder hands back the same
	 * buffer.  NULL from tx_buf: the core uses its own buffer. */
	void *(*tx_buf)(void *opaque);
	/* Direct guest memory access, may be NULL.  The host address of the
	 * guest range [addr, addr + len) if all of it is guest RAM that the
	 * core may read (write) with a plain memory copy right away: the
	 * embedder treats the call as the DMA itself (it may observe it as
	 * one).  NULL: the core uses dma_read/dma_write for this access. */
	void *(*dma_map)(void *opaque, uint64_t addr, size_t len, bool write);
	/* A packet lent with weft_core_receive_lent() is no longer used by
	 * the core (processed or discarded).  Needed for lending. */
	void (*rx_release)(void *opaque, const void *pkt);
};

struct weft_core_config {
	uint16_t node_id;       /* 0..WEFT_NODE_MAX_UNICAST */
	uint32_t nr_windows;    /* 1..WEFT_MAX_WINDOWS */
	uint32_t nr_rcxt;       /* WEFT_MIN_RCXT..WEFT_MAX_RCXT */
	uint32_t nr_handlers;   /* 1..WEFT_MAX_HANDLERS (MSI-X vectors) */
	uint32_t rx_queue_len;  /* packets buffered before backpressure, 0 = 64 */
	uint64_t key_epoch;     /* KEY_EPOCH at power-on (the stored value) */
	/* Receive tasks that overlap (seed item 15, hw-spec 5.2): the header
	 * lines of up to rx_overlap consecutive receive entries written in
	 * one weft_core_poll are written newest first, when the last of
	 * them is done, so entries become valid out of slot order.
	 * 0 or 1: one entry at a time; at most WEFT_NR_RX_TASKS. */
	uint32_t rx_overlap;
	/* Verbs engine object counts (weft/verbs.h), 0 = default. */
	uint32_t verbs_qps, verbs_cqs, verbs_pds, verbs_tpt, verbs_uars;
	/* Header matching (weft/match.h, docs/matching.md), 0 = default:
	 * header-store bytes (32 per entry), UMB bytes and fragment bytes
	 * (64 or 128), matchers, entries a matcher compares per unit of
	 * work, and the small/large rendezvous threshold in bytes. */
	uint32_t match_store, umb_size, umb_frag, matchers, match_step;
	uint64_t rndv_threshold;
	/* First incarnation number of the matching channels (weft/match.h),
	 * different at each power-on of a node: the embedder draws it. */
	uint32_t match_epoch;
};

/* Create a core.  On a bad configuration returns NULL and writes a
 * message into err (if not NULL). */
struct weft_core *weft_core_new(const struct weft_core_config *cfg,
				const struct weft_core_ops *ops, void *opaque,
				char *err, size_t errlen);
void weft_core_free(struct weft_core *c);

/* Device reset (PCI reset / RESET register): everything back to power-on,
 * except the recovery count and the key epoch. */
void weft_core_reset(struct weft_core *c);

/* MMIO.  off is relative to the BAR; size is 4 or 8. */
uint64_t weft_core_reg_read(struct weft_core *c, uint64_t off, unsigned int size);
void weft_core_reg_write(struct weft_core *c, uint64_t off, uint64_t val, unsigned int size);
uint64_t weft_core_sram_read(struct weft_core *c, uint64_t off, unsigned int size);
void weft_core_sram_write(struct weft_core *c, uint64_t off, uint64_t val, unsigned int size);
uint64_t weft_core_db_read(struct weft_core *c, uint64_t off, unsigned int size);
void weft_core_db_write(struct weft_core *c, uint64_t off, uint64_t val, unsigned int size);

/* BAR sizes (powers of two). */
uint64_t weft_core_sram_bar_size(const struct weft_core *c);
uint64_t weft_core_db_bar_size(const struct weft_core *c);

/* A packet from the wire (no length prefix); it is copied.  Returns 0 if
 * taken (queued, or dropped and counted), -EAGAIN if the receive queue is
 * full: the caller keeps the packet and offers it again after a poll. */
int weft_core_receive(struct weft_core *c, const void *pkt, size_t len);
bool weft_core_can_receive(const struct weft_core *c);
/* The same without a copy: pkt (8-byte aligned) is lent to the core and
 * must stay unchanged until ops->rx_release(pkt).  Returns 1 when the core
 * keeps it (rx_release follows, at the latest from weft_core_reset,
 * RECOVER or weft_core_free), 0 when it was consumed at once (dropped and
 * counted, or copied: without ops->rx_release or when pkt is not
 * aligned) and the caller has it back, -EAGAIN as weft_core_receive. */
int weft_core_receive_lent(struct weft_core *c, const void *pkt, size_t len);
/* The same for a packet in memory that a peer may change until
 * ops->rx_release(pkt) (a ring shared with a switch).  The core copies the
 * header and checks only its copy; the payload of packet types that only
 * place it or read their own sub-headers from it once (FIFO, RDMA write,
 * verbs) stays lent and is placed straight from pkt, so a change after
 * the checks changes placed bytes, never a decision.  Every other packet
 * is copied whole.  Returns as weft_core_receive_lent. */
int weft_core_receive_shared(struct weft_core *c, const void *pkt, size_t len);
/* Copies the part still lent of every queued packet and gives each back
 * (ops->rx_release): before the embedder unmaps the memory they lie in. */
void weft_core_rx_unlend(struct weft_core *c);

/* Run adapter tasks for at most budget packets/commands.  Returns true
 * when work remains (the caller polls again). */
bool weft_core_poll(struct weft_core *c, unsigned int budget);

/*
 * The adapter's whole state, for migration and snapshots
 * (docs/qemu-device.md, "Migration and snapshots"): registers, SRAM,
 * windows, tasks, queued packets, the verbs, matching and counter
 * engines; deadlines as time left.  Not in it: the configuration (a core
 * loads only the state of one configured like it), the key epoch (the
 * adapter's non-volatile store keeps its own), the link (the embedder's;
 * weft_core_set_link after a load), host pointers.
 *
 * weft_core_save: a malloc'd buffer in *buf (free() it) of *len bytes;
 * 0 or -ENOMEM.  weft_core_load: 0, or -EINVAL / -ENOMEM with a message
 * in err, the core then unchanged.  The stream is untrusted: every index
 * and length is checked, and one from another build or configuration is
 * refused.  A load re-arms the timer (ops->timer_arm) and kicks.
 */
int weft_core_save(const struct weft_core *c, uint8_t **buf, size_t *len);
int weft_core_load(struct weft_core *c, const void *buf, size_t len, char *err, size_t errlen);

/* The deadline given to ops->timer_arm was reached. */
void weft_core_timer(struct weft_core *c);

/* Link state to the switch (reflected in STATUS and a LINK event). */
void weft_core_set_link(struct weft_core *c, bool up);

uint64_t weft_core_counter(const struct weft_core *c, unsigned int counter);

/* Copies of verbs table entries in their public formats (weft/verbs.h),
 * for test oracles and debugging; the driver uses the QUERY_* commands.
 * Return false when the index is out of range. */
struct weft_tpt_entry;
struct weft_vcqc;
struct weft_vsrqc;
bool weft_core_verbs_tpt(const struct weft_core *c, uint32_t index, struct weft_tpt_entry *e);
bool weft_core_verbs_cq(const struct weft_core *c, uint32_t cqn, struct weft_vcqc *q);
bool weft_core_verbs_srq(const struct weft_core *c, uint32_t srqn, struct weft_vsrqc *q);

/* A counter object's state in its dump format (weft/cnt.h), for test
 * oracles; the driver uses CNT_CMD QUERY.  False when id is out of range. */
struct weft_cnt_obj_dump;
bool weft_core_cnt_obj(const struct weft_core *c, uint32_t id, struct weft_cnt_obj_dump *d);

#endif /* WEFT_CORE_H */
