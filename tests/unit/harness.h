/* SPDX-License-Identifier: MIT */
/*
 * Fake-ops harness for the core unit tests: guest memory array, a log of
 * DMA writes (for header-last checks), captured transmitted packets that
 * can be fed into a second core, and an interrupt log.  It drives the core
 * only through its MMIO entry points, as a driver would.
 */
#ifndef WEFT_TEST_HARNESS_H
#define WEFT_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "weft_core.h"
#include "weft_test.h"

#define H_MEM_BASE      0x100000ull     /* guest RAM starts here */
#define H_MEM_SIZE      (16ull << 20)
#define H_MAX_TX        4096u
#define H_MAX_WLOG      65536u
#define H_MAX_IRQ       1024u
#define H_EVQ_LOG2      6u

struct h_wlog {
	uint64_t addr;
	size_t len;
};

struct h_pkt {
	size_t len;
	_Alignas(8) uint8_t data[WEFT_WIRE_MAX_FRAME];
};

struct h_node {
	struct weft_core *c;
	uint16_t id;
	uint8_t *mem;
	uint64_t brk;                   /* bump allocator, guest address */
	struct h_wlog *wlog;
	size_t nwlog;
	struct h_pkt *tx;
	size_t ntx;
	int xmit_rc;                    /* forced xmit result (0 = take) */
	/* ops.tx_buf: with own_tx, the core builds packets in own (a
	 * buffer the harness hands out until xmit takes it) */
	bool own_tx;
	struct h_pkt *own;
	unsigned int tx_bufs, own_xmits;        /* tx_buf calls, xmits of own */
	/* ops.rx_release: lent packets given back, in order */
	const void *released[64];
	unsigned int nreleased;
	uint64_t dma_read_ns;           /* modelled cost of a DMA read (busy wait), 0 = none */
	uint64_t dma_reads;             /* DMA reads the core made so far */
	unsigned int irq[H_MAX_IRQ];
	size_t irq_wlog[H_MAX_IRQ];     /* DMA writes logged when it fired */
	size_t nirq;
	unsigned int kicks;
	uint64_t now;                   /* the core's clock (ns); the test moves it */
	unsigned int guest_errors;      /* GUEST_ERROR traces */
	unsigned int named_reg_traces;  /* register traces with a name */
	unsigned int reg_traces;
	uint64_t evq;                   /* event queue guest address */
	uint64_t evq_seen;
	/* per window: FIFOs and the user's producer/consumer indexes */
	uint64_t sfifo[WEFT_MAX_WINDOWS], rfifo[WEFT_MAX_WINDOWS];
	uint32_t sprod[WEFT_MAX_WINDOWS], rcons[WEFT_MAX_WINDOWS];
};

/* Busy-waits about ns nanoseconds of CPU work (the dma_read_ns model).
 * Its first call calibrates the spin loop for some milliseconds: call it
 * once before timing anything that uses the model. */
void h_spin_ns(uint64_t ns);

void h_init(struct h_node *n, uint16_t id, uint32_t nr_windows, uint32_t nr_rcxt,
	    uint32_t handlers, uint32_t rxq);
void h_fini(struct h_node *n);
uint64_t h_alloc(struct h_node *n, uint64_t size, uint64_t align);
void *h_ptr(struct h_node *n, uint64_t addr);

uint64_t h_reg_r(struct h_node *n, uint64_t off);
void h_reg_w(struct h_node *n, uint64_t off, uint64_t val);
uint64_t h_cnt(struct h_node *n, unsigned int counter);
uint64_t h_drops(struct h_node *n, unsigned int reason);
void h_db_w(struct h_node *n, unsigned int w, uint64_t op, uint64_t val);
uint64_t h_db_r(struct h_node *n, unsigned int w, uint64_t op);

/* LMT/rCxt through the SRAM aperture. */
void h_lmt_read(struct h_node *n, unsigned int w, struct weft_lmt *l);
void h_lmt_write(struct h_node *n, unsigned int w, const struct weft_lmt *l);
void h_rcxt_read(struct h_node *n, uint32_t r, struct weft_rcxt *x);

/* Fill a valid LMT (FIFOs allocated in guest memory) without opening. */
void h_lmt_prepare(struct h_node *n, unsigned int w, uint32_t key, unsigned int slog2,
		   unsigned int rlog2, uint32_t quantum, struct weft_lmt *l);
/* Prepare + CMD_OPEN_WINDOW; returns CMD_STATUS. */
uint64_t h_open(struct h_node *n, unsigned int w, uint32_t key, unsigned int slog2,
		unsigned int rlog2, uint32_t quantum);
uint64_t h_cmd(struct h_node *n, uint64_t reg, uint64_t val);
uint64_t h_acquire(struct h_node *n, uint32_t r, unsigned int w, uint16_t key);

/* Send FIFO frames: written at the user's producer index, not rung. */
uint64_t h_frame_addr(struct h_node *n, unsigned int w, uint32_t idx);
void h_put_fifo(struct h_node *n, unsigned int w, uint16_t dest, uint16_t dwin,
		const void *payload, uint16_t len, uint32_t forged_key);
void h_put_rdma(struct h_node *n, unsigned int w, uint8_t type, uint16_t dest,
		uint16_t dwin, const struct weft_rdma_req *q);
/* A half-RDMA PUT frame: q plus len payload bytes (hw-spec 5.3). */
void h_put_put(struct h_node *n, unsigned int w, uint16_t dest, uint16_t dwin,
	       const struct weft_rdma_req *q, const void *payload, uint16_t len);
void h_start(struct h_node *n, unsigned int w, uint32_t frames);
/* Header line of send frame idx. */
void h_send_line(struct h_node *n, unsigned int w, uint32_t idx, struct weft_send_line *s);

/* Receive FIFO entry idx (frame = idx & mask). */
void h_recv_hdr(struct h_node *n, unsigned int w, uint32_t idx, struct weft_recv_hdr *rh);
const uint8_t *h_recv_payload(struct h_node *n, unsigned int w, uint32_t idx);

/* TCE: table t with nr entries of 2^shift pages, owned by job. */
void h_tce_table(struct h_node *n, unsigned int t, uint32_t nr, uint32_t shift, uint32_t job);
/* Map [addr, addr + len) into table t from entry first with PVO key;
 * returns the PVO of addr. */
uint64_t h_map(struct h_node *n, unsigned int t, uint32_t first, uint32_t key17,
	       uint64_t addr, uint64_t len);
void h_set_tce(struct h_node *n, unsigned int t, uint32_t idx, uint64_t tce);

/* Event queue. */
void h_evq_setup(struct h_node *n);
/* Next unread event; false if none. */
bool h_evq_next(struct h_node *n, struct weft_event *ev);

/* Two nodes (ids 1 and 2) with window 0 open on both, a TCE table 0 of
 * the job and one buffer each mapped into it: the set-up the RDMA tests
 * share.  rCxts are left to the test. */
struct h_pair {
	struct h_node a, b;
	uint64_t abuf, bbuf, apvo, bpvo;
};

struct h_pair_cfg {
	uint32_t windows, rcxts, handlers;
	bool evq;                       /* set up both event queues */
	uint32_t job;
	unsigned int slog2, rlog2;
	uint32_t quantum;
	uint32_t tce_entries;           /* 4 KiB pages */
	uint32_t key_a, key_b;          /* PVO keys of the two buffers */
	uint64_t bufsz;
};

void h_pair_init(struct h_pair *g, const struct h_pair_cfg *cfg);
void h_pair_fini(struct h_pair *g);

/* Poll until idle (bounded); returns the number of polls. */
unsigned int h_poll(struct h_node *n, unsigned int budget);
/* Feed captured packets of from into to (all of them); returns count. */
size_t h_deliver(struct h_node *from, struct h_node *to);
/* Run two nodes until both are idle and no packet is left. */
void h_run2(struct h_node *a, struct h_node *b);

const struct weft_wire_hdr *h_txhdr(struct h_node *n, size_t i);

/* The harness's program structure, on weft_test.h: h_begin names the
 * program (a "#" line), each h_section is a TAP point, h_end ends the TAP
 * and gives main's exit status. */
static inline void h_begin(const char *name)
{
	t_diag("%s", name);
}

static inline void h_section(const char *what)
{
	t_begin("%s", what);
}

static inline int h_end(void)
{
	return t_done();
}

#endif /* WEFT_TEST_HARNESS_H */
