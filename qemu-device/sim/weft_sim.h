/* SPDX-License-Identifier: MIT */
/*
 * Weft in-process multi-node simulator.
 *
 * N adapter cores (weft_core) joined by one weft_fabric, each with its own
 * guest memory, driven by a virtual clock, all in one thread and fully
 * deterministic for a given seed.  docs/sim.md describes it in prose.
 *
 * Three layers, each built only on the one below:
 *
 *  1. Machine: nodes, guest memory (bounds-checked DMA), the fabric, the
 *     virtual clock and the run loop (weft_sim_progress / weft_sim_run*),
 *     MMIO access to the three BARs of every node.
 *  2. Sim driver: what weft.ko does, through MMIO only: reset, event
 *     queue, TCE tables and job slots in guest memory, memory
 *     registration (first-fit TCEs, PVO keys from the adapter's key
 *     epoch: the driver policy of guest-driver/policy/, shared with weft.ko),
 *     windows (FIFOs in guest memory, LMT through the SRAM aperture,
 *     CMD_OPEN_WINDOW / CMD_CLOSE_WINDOW + Snapshot View), the round-robin
 *     rCxt pool keyed with RECOVERY_COUNT, node reboot and adapter
 *     recovery.
 *  3. User level: post FIFO packets and RDMA pseudo packets into a
 *     window's send FIFO and ring StartTransmit, poll the receive FIFO
 *     (header-last aware) and return slots.
 *
 * Node ids equal node indexes (0 .. nr_nodes - 1).  Every function that
 * can fail returns 0 or a negative errno value.
 */
#ifndef WEFT_SIM_H
#define WEFT_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/hw.h"
#include "weft/sram.h"
#include "weft/fifo.h"
#include "weft/wire.h"
#include "weft/xlate.h"
#include "weft/counters.h"
#include "weft_core.h"
#include "fabric.h"

#define WEFT_SIM_MAX_NODES      64u
#define WEFT_SIM_DEF_MEM        (64ull << 20)
#define WEFT_SIM_DEF_RCXT       1024u
#define WEFT_SIM_DEF_QUEUED     65536u
#define WEFT_SIM_DEF_TICK_NS    100u
#define WEFT_SIM_DEF_BUDGET     64u
#define WEFT_SIM_EVQ_LOG2       10u     /* 1024 events per node */

struct weft_sim;

/* Called for every DMA the adapter of node makes into its guest memory,
 * before it happens (is_write: adapter writes guest memory).  Used by the
 * fuzz target and by tests that log memory writes. */
typedef void (*weft_sim_dma_hook)(void *opaque, unsigned int node, uint64_t addr,
				  size_t len, bool is_write);
/* Every core trace event of every node (may be NULL). */
typedef void (*weft_sim_trace_fn)(void *opaque, unsigned int node,
				  const struct weft_trace *ev);

#define WEFT_SIM_NO_64K         0xffffffffu

struct weft_sim_config {
	uint32_t nr_nodes;          /* 1 .. WEFT_SIM_MAX_NODES */
	/*
	 * Adapters per guest (0 = 1).  Sim nodes are adapters: nodes
	 * a*k .. a*k + a - 1 are the adapters of one guest, which share its
	 * memory and its node-global job slots and registrations (seed item
	 * 24, docs/driver.md "Node-global tables").  nr_nodes must be a
	 * multiple of it.
	 */
	uint32_t adapters;
	uint64_t mem_size;          /* guest memory per node; 0 = 64 MiB; >= 4 MiB */
	uint64_t seed;              /* fabric faults, adapters' first key epochs */
	struct weft_fabric_faults faults; /* routes 0 is taken as 1 */
	uint32_t nr_windows;        /* per adapter; 0 = WEFT_DEF_WINDOWS */
	uint32_t nr_rcxt;           /* per adapter; 0 = WEFT_SIM_DEF_RCXT */
	uint32_t nr_handlers;       /* interrupt handlers; 0 = 1 */
	uint32_t rx_queue_len;      /* core receive queue; 0 = core default */
	uint32_t rx_overlap;        /* core rx_overlap: entries valid out of slot order */
	uint32_t verbs_qps, verbs_cqs, verbs_pds, verbs_tpt; /* 0 = core defaults */
	/* Header matching (weft_core_config), 0 = core defaults. */
	uint32_t match_store, umb_size, umb_frag, matchers, match_step;
	uint64_t rndv_threshold;
	size_t max_queued;          /* fabric frames; 0 = WEFT_SIM_DEF_QUEUED */
	size_t capture_frames;      /* fabric capture ring; 0 = none */
	uint64_t tick_ns;           /* virtual time of one busy round; 0 = 100 */
	unsigned int poll_budget;   /* weft_core_poll budget; 0 = 64 */
	uint64_t reboot_ns;         /* virtual time a node reboot takes; 0 = 1 ms */
	/* Driver options, as weft.ko's module parameters (docs/driver.md):
	 * 64 KiB tables per job slot (0 = WEFT_SLOT_TABLES_64K_DEF,
	 * WEFT_SIM_NO_64K = none, the seed's layout) and the re-register on
	 * MP_FATAL mode. */
	uint32_t tce_64k_tables;
	bool rereg_on_fatal;
	weft_sim_trace_fn trace;
	void *trace_opaque;
};

/* ---- 1. Machine ------------------------------------------------------- */

/* Create and boot every node (the sim driver is loaded on each: adapter
 * reset, event queue, TCE tables registered with invalid ownership).
 * Returns NULL with a message in err on failure. */
struct weft_sim *weft_sim_new(const struct weft_sim_config *cfg, char *err, size_t errlen);
void weft_sim_free(struct weft_sim *s);

unsigned int weft_sim_nr_nodes(const struct weft_sim *s);
struct weft_fabric *weft_sim_fabric(struct weft_sim *s);
/* The core of a node, for counters and test instrumentation only: the
 * sim's own driver and user layers use MMIO. */
struct weft_core *weft_sim_core(struct weft_sim *s, unsigned int node);

/* Migrate node's adapter: its core's state saved (weft_core_save), the
 * core replaced by a new one of the same configuration and key epoch that
 * loads it (weft_core_load).  0, or a negative errno value with a message
 * in err (the node keeps its core then). */
int weft_sim_core_reload(struct weft_sim *s, unsigned int node, char *err, size_t errlen);

/* Guest memory of a node: host pointer to byte 0 and its size. */
uint8_t *weft_sim_mem(struct weft_sim *s, unsigned int node);
uint64_t weft_sim_mem_size(const struct weft_sim *s);
/* Host pointer of [addr, addr + len) in node memory, NULL if outside. */
void *weft_sim_ptr(struct weft_sim *s, unsigned int node, uint64_t addr, uint64_t len);
void weft_sim_set_dma_hook(struct weft_sim *s, weft_sim_dma_hook fn, void *opaque);

/* Guest memory allocator of a node (first fit).  Returns the guest
 * address, or 0 when out of memory (address 0 is never handed out).
 * align is a power of two (0 = 64). */
uint64_t weft_sim_alloc(struct weft_sim *s, unsigned int node, uint64_t size, uint64_t align);
void weft_sim_free_mem(struct weft_sim *s, unsigned int node, uint64_t addr);

/* Virtual clock, nanoseconds. */
uint64_t weft_sim_now(const struct weft_sim *s);

/* One round: deliver the fabric frames due now, poll every core once,
 * service interrupts.  If nothing was runnable, the clock jumps to the
 * next due frame; otherwise it moves by tick_ns.  Returns false when the
 * whole sim is idle (no core work, no frame in the fabric): the clock did
 * not move then. */
bool weft_sim_progress(struct weft_sim *s);
/* Progress until done(arg) is true, or until the clock reaches deadline
 * (absolute ns).  When the sim goes idle before, the clock jumps to the
 * deadline (that is what makes ULP timeouts fire).  Returns done(arg).
 * done may be NULL (run to the deadline or to idle, whichever is first;
 * returns true when idle). */
bool weft_sim_run_until(struct weft_sim *s, bool (*done)(void *arg), void *arg,
			uint64_t deadline);
/* Run until idle, at most max_rounds rounds (0 = no limit).  Returns true
 * when idle was reached. */
bool weft_sim_run_idle(struct weft_sim *s, uint64_t max_rounds);
/* Move the clock forward to t (no effect if t <= now); nothing runs. */
void weft_sim_advance_to(struct weft_sim *s, uint64_t t);

/* MMIO: BAR 0 registers, BAR 2 SRAM aperture, BAR 4 doorbells (window w's
 * page, off within the page).  All 8-byte accesses. */
uint64_t weft_sim_reg_read(struct weft_sim *s, unsigned int node, uint64_t off);
void weft_sim_reg_write(struct weft_sim *s, unsigned int node, uint64_t off, uint64_t val);
uint64_t weft_sim_sram_read(struct weft_sim *s, unsigned int node, uint64_t off);
void weft_sim_sram_write(struct weft_sim *s, unsigned int node, uint64_t off, uint64_t val);
uint64_t weft_sim_db_read(struct weft_sim *s, unsigned int node, unsigned int w, uint64_t off);
void weft_sim_db_write(struct weft_sim *s, unsigned int node, unsigned int w, uint64_t off,
		       uint64_t val);
/* Counter register of a node (MMIO read of WEFT_REG_CNT(c)). */
uint64_t weft_sim_counter(struct weft_sim *s, unsigned int node, unsigned int c);

/* ---- 2. Sim driver ----------------------------------------------------- */

/* Reserve a job slot for job id (nonzero): its 6 TCE tables become owned
 * by job.  Returns the slot (>= 0), -EEXIST if the job has one, -ENOSPC
 * if all WEFT_NR_JOB_SLOTS are taken. */
int weft_sim_job_attach(struct weft_sim *s, unsigned int node, uint32_t job);
/* Release the slot: ownership invalid, its TCEs cleared, its MRs gone. */
int weft_sim_job_detach(struct weft_sim *s, unsigned int node, uint32_t job);

/* Register [addr, addr + len) of node memory for job: first-fit TCEs in
 * one of the job's tables of that page size (page_shift 12, 16 or 24, and
 * then, as weft.ko, addr and len aligned to the page; 0 picks 24 for
 * len >= 16 MiB, else 12, and maps the pages around the range).  Writes
 * the PVO of addr.  Returns a handle (> 0) or -EINVAL (bad or misaligned
 * page size, no 64 KiB tables), -ENOENT (job has no slot), -ENOSPC. */
int weft_sim_reg_mr(struct weft_sim *s, unsigned int node, uint32_t job, uint64_t addr,
		    uint64_t len, unsigned int page_shift, uint64_t *pvo);
int weft_sim_dereg_mr(struct weft_sim *s, unsigned int node, int handle);

struct weft_sim_window_cfg {
	uint32_t job;               /* window key; needs a job slot for RDMA */
	uint32_t send_log2;         /* 1 .. WEFT_FIFO_MAX_LOG2; 0 = 6 */
	uint32_t recv_log2;         /* 0 = 6 */
	uint32_t quantum;           /* send quantum k; 0 = WEFT_DEF_QUANTUM */
	bool bcast;                 /* Config_parm_bcast */
	bool early_int;
	int window;                 /* window number, or -1 = first free */
};

/*
 * An open window as a user process sees it: its doorbell page (through
 * weft_sim_db_*), its FIFOs (host pointers into node memory) and the
 * user-level cursors of layer 3.  Filled by weft_sim_open_window; the
 * caller owns the struct.
 */
struct weft_sim_window {
	struct weft_sim *sim;
	unsigned int node;
	unsigned int window;
	uint32_t job;
	uint32_t boot;              /* driver generation at open */
	uint32_t open_seq;          /* adapter open count of the window */
	uint64_t send_addr, recv_addr;  /* guest-physical FIFO bases */
	uint8_t *send_fifo, *recv_fifo; /* host pointers to the FIFOs */
	uint32_t send_frames, recv_frames;
	/* layer 3 cursors */
	uint64_t send_posted;       /* frames written and started */
	uint64_t send_reaped;       /* frames seen WEFT_SF_DONE, in order */
	uint64_t recv_next;         /* next receive frame to poll */
};

int weft_sim_open_window(struct weft_sim *s, unsigned int node,
			 const struct weft_sim_window_cfg *cfg, struct weft_sim_window *out);
/* Release the window's rCxts, Close Window, wait (running the sim) for
 * Snapshot View to read 0, then free the FIFOs.  -ETIMEDOUT if the
 * snapshot never cleared (the FIFOs are then leaked on purpose, as the
 * driver must not free them); -ENODEV if the window is gone (node
 * rebooted) or the struct is stale (call weft_sim_window_refresh after a
 * recovery). */
int weft_sim_close_window(struct weft_sim_window *win);
/* True while the window is open in the driver and in the adapter
 * (doorbell STATE reads WEFT_WIN_VALID). */
bool weft_sim_window_ok(const struct weft_sim_window *win);
/* After weft_sim_node_recover: the driver re-opened the window on the
 * same FIFOs; this resets the user cursors (returns 1), or returns 0 if
 * nothing changed, -ENODEV if the window is gone (closed, or rebooted). */
int weft_sim_window_refresh(struct weft_sim_window *win);

/* rCxt pool: allocate at the head, free to the tail.  The key is the
 * adapter's RECOVERY_COUNT (low 16 bits) at acquisition. */
int weft_sim_rcxt_alloc(struct weft_sim *s, unsigned int node, unsigned int window,
			uint32_t *rcxt, uint16_t *key);
int weft_sim_rcxt_free(struct weft_sim *s, unsigned int node, uint32_t rcxt);
/* CMD_CANCEL_RCXT: abandon what the rCxt is doing; it stays assigned and
 * keeps its tid, so late packets of the cancelled tid are dropped. */
int weft_sim_rcxt_cancel(struct weft_sim *s, unsigned int node, uint32_t rcxt);
uint32_t weft_sim_recovery_count(struct weft_sim *s, unsigned int node);
/* Driver generation of a node: bumped by every reboot and recovery.
 * A window, rCxt or MR obtained in an older generation is gone. */
uint32_t weft_sim_node_gen(const struct weft_sim *s, unsigned int node);

/* Node (LPAR) reboot: RESET of every adapter of the node's guest, which
 * is off the fabric for reboot_ns of virtual time, then the driver loads
 * again and takes a new key epoch.  Every window, MR, rCxt and job slot of
 * the guest is gone; the
 * node's memory contents are kept (persistent subsystems re-register). */
int weft_sim_node_reboot(struct weft_sim *s, unsigned int node);
/* Adapter recovery: write RECOVER; the recovery count (rCxt key) is
 * bumped.  The driver re-opens the windows that the adapter dropped
 * (same FIFOs, cursors restart), keeps job slots and MRs (PVOs stay
 * valid), and forgets every rCxt: the user must re-acquire. */
int weft_sim_node_recover(struct weft_sim *s, unsigned int node);

/* Events the driver took from the node's event queue, by type. */
uint64_t weft_sim_event_count(const struct weft_sim *s, unsigned int node, unsigned int type);
/* Object (rcxt) and enum weft_vasync (info) of the last verbs async event. */
void weft_sim_last_async(const struct weft_sim *s, unsigned int node, uint32_t *obj,
			 uint32_t *what);
/* Window fatal errors seen by the driver for window w since it opened. */
uint64_t weft_sim_window_fatals(const struct weft_sim *s, unsigned int node, unsigned int w);

/* ---- 3. User level ------------------------------------------------------ */

/* Free send frames (reaps the frames the adapter marked done). */
uint32_t weft_sim_send_space(struct weft_sim_window *win);
/* Post one FIFO packet and ring StartTransmit(1).  -EAGAIN if the send
 * FIFO is full, -EINVAL if len > WEFT_MAX_PAYLOAD. */
int weft_sim_post_fifo(struct weft_sim_window *win, uint16_t dest_node, uint16_t dest_window,
		       const void *data, size_t len);
/* Post an RDMA pseudo packet (WEFT_SF_RDMAW / RDMAR / TP_RDMAR). */
int weft_sim_post_rdma(struct weft_sim_window *win, enum weft_sf_type type,
		       uint16_t dest_node, uint16_t dest_window,
		       const struct weft_rdma_req *req);
/* Poll the next receive frame.  Returns 1 and copies the header (and up
 * to cap payload bytes) when its header line is valid, then zeroes the
 * header line and returns the slot; 0 when nothing is there. */
int weft_sim_poll_recv(struct weft_sim_window *win, struct weft_recv_hdr *hdr,
		       void *payload, size_t cap);

#endif /* WEFT_SIM_H */
