/* SPDX-License-Identifier: MIT */
/*
 * Weft counter engine: counter-bearing RDMA objects (seed 003,
 * docs/counters.md, docs/hw-spec.md section "Counter engine").
 *
 * The initiator's driver creates an object: a 16-byte status block in
 * guest memory (the counter word and an error word) and the pinned pages
 * of a local region.  It posts operations on the object; each names a
 * peer node and a remote virtual address.  "DMA write op" requests make
 * the peer send data into the region (an RDMA read); "DMA read op"
 * requests make the peer take data from the region (an RDMA write).  The
 * adapter moves the data in chunks of WEFT_CNT_CHUNK bytes and decrements
 * the counter word by the bytes of every chunk it applies (placed, for a
 * read; acknowledged by the peer, for a write), each chunk exactly once.
 * At zero it notifies once: an event on the object's vector, or nothing
 * (the process polls the word).  In completion-count mode the counter
 * drops by one per finished operation instead.
 *
 * The peer translates the remote VA through its exposure table, which its
 * driver fills (EXPOSE): a range, its pages, its rights and the peer node
 * allowed.  A request it cannot serve gets a CNT_ERROR packet with a
 * cause (enum weft_reason); the operation then fails and can be posted
 * again.
 *
 * Event counters (WEFT_CNT_MODE_EVENT, docs/counters.md "Event
 * counters"): an object without a region whose status block (struct
 * weft_cnt_ev_block) counts up: the verbs engine adds one per completion
 * of a send WQE that names one of its QP's counter slots, and one per
 * RDMA WRITE, atomic or READ served at a QP bound with the matching event
 * bits, after the data is placed (the completion generated, the last
 * response sent); software adds to or sets either word with EV_SET.
 * This is what libfabric's fi_cntr counts.
 *
 * Only BAR 0 (the kernel driver) reaches these commands: requests that
 * name physical addresses are privileged.  All fields little-endian.
 */
#ifndef WEFT_CNT_H
#define WEFT_CNT_H

#include "weft/types.h"

/* ---- Sizes and limits -------------------------------------------------- */
#define WEFT_CNT_NR_OBJ         256u    /* objects per adapter */
#define WEFT_CNT_NR_EXP         64u     /* exposure entries per adapter */
#define WEFT_CNT_MAX_OPS        8u      /* operations in flight per object */
#define WEFT_CNT_CHUNK          1024u   /* data bytes per CNT_DATA packet */
#define WEFT_CNT_PAGE_SHIFT     12u     /* page lists name 4 KiB pages */
#define WEFT_CNT_PAGE           (1u << WEFT_CNT_PAGE_SHIFT)
#define WEFT_CNT_MAX_LEN        (64ull << 20) /* bytes of one object or exposure */
#define WEFT_CNT_MAX_PAGES      ((uint32_t)(WEFT_CNT_MAX_LEN >> WEFT_CNT_PAGE_SHIFT) + 1u)
#define WEFT_CNT_WINDOW         64u     /* write chunks in flight per operation */
#define WEFT_CNT_RTO_NS         5000000ull /* no progress for this long: resend */
#define WEFT_CNT_RETRIES        8u      /* resends before the operation fails */
#define WEFT_CNT_RESP_JOBS      32u     /* read requests a responder serves at once */
#define WEFT_CNT_ANY_PEER       0xffffu /* exposure: any node may use it */
#define WEFT_CNT_QP_SLOTS       4u      /* counter slots per verbs QP; slot 0 is "none" */

/* ---- BAR 0 registers (in WEFT_REG_LIST of weft/hw.h) -------------------- */
/*   CNT_NR_OBJ      RO  WEFT_CNT_NR_OBJ
 *   CNT_NR_EXP      RO  WEFT_CNT_NR_EXP
 *   CNT_CMD         WO  guest address of a command block (128 bytes,
 *                       64-byte aligned): runs it
 *   CNT_CMD_STATUS  RO  enum weft_cmd_status of the last one */

/* ---- Status block (16 bytes, 8-byte aligned, in guest memory) ------------ */
/* The adapter writes the whole block on every change: at CREATE, after
 * every decrement, and when an operation fails. */
struct weft_cnt_block {
	uint64_t count;                 /* bytes (or operations) still to go */
	uint32_t error;                 /* enum weft_reason of the last failed op, 0 */
	uint16_t gen;                   /* the object's generation */
	uint16_t failed;                /* operations failed so far */
};
WEFT_STATIC_ASSERT(sizeof(struct weft_cnt_block) == 16, "counter block");

/* EVENT mode's status block: both words count up from 0 (CREATE writes
 * zeros); the adapter writes the whole block after every event and every
 * EV_SET.  The driver never writes it: it moves the words with EV_SET. */
struct weft_cnt_ev_block {
	uint64_t count;                 /* successful events */
	uint64_t errors;                /* events that completed in error */
};
WEFT_STATIC_ASSERT(sizeof(struct weft_cnt_ev_block) == 16, "event counter block");

enum weft_cnt_mode {
	WEFT_CNT_MODE_BYTES = 0,        /* count = region length, minus bytes applied */
	WEFT_CNT_MODE_OPS = 1,          /* count = ops given at CREATE, minus ops done */
	WEFT_CNT_MODE_EVENT = 2,        /* counts verbs events up (no region, no ops) */
};

/* Event bits of a QP counter slot (BIND_QP): what the QP serves as the
 * responder.  Send WQEs name the slot themselves (weft_vwqe.cnt_slot). */
#define WEFT_CNT_EV_REMOTE_WRITE 0x01u /* an RDMA WRITE placed, an atomic applied */
#define WEFT_CNT_EV_REMOTE_READ  0x02u /* an RDMA READ served (last response sent) */
#define WEFT_CNT_EV_ALL          0x03u

/* CREATE flags */
#define WEFT_CNTF_IRQ           0x01u /* at zero: WEFT_EV_CNT_ZERO on the vector */

enum weft_cnt_dir {
	WEFT_CNT_READ = 1,              /* RDMA read: DMA write op request, data in */
	WEFT_CNT_WRITE = 2,             /* RDMA write: DMA read op request, data out */
};

/* Exposure rights */
#define WEFT_CNT_R_READ         0x01u /* peers may read the range (their RDMA read) */
#define WEFT_CNT_R_WRITE        0x02u /* peers may write the range */

/* ---- Commands --------------------------------------------------------- */
enum weft_cnt_cmd_op {
	WEFT_CNT_CMD_CREATE = 1,        /* handle = object id, u.create; out[0] = gen */
	WEFT_CNT_CMD_DESTROY = 2,       /* handle = object id, u.obj.gen */
	WEFT_CNT_CMD_POST = 3,          /* handle = object id, u.post; out[0] = seq */
	WEFT_CNT_CMD_EXPOSE = 4,        /* handle = exposure index, u.expose; out[0] = gen */
	WEFT_CNT_CMD_UNEXPOSE = 5,      /* handle = exposure index, u.obj.gen */
	WEFT_CNT_CMD_QUERY = 6,         /* handle = object id: struct weft_cnt_obj_dump
					 * at u.query.addr */
	WEFT_CNT_CMD_QUERY_EXP = 7,     /* handle = exposure index: struct
					 * weft_cnt_exp_dump at u.query.addr */
	WEFT_CNT_CMD_BIND_QP = 8,       /* handle = EVENT object id, u.bind */
	WEFT_CNT_CMD_UNBIND_QP = 9,     /* handle = 0, u.bind.qpn and slot */
	WEFT_CNT_CMD_EV_SET = 10,       /* handle = EVENT object id, u.ev; out[0] = the
					 * word's new value */
};

/* EV_SET: software moves an EVENT counter in the adapter (fi_cntr_add,
 * fi_cntr_set; Portals' PtlCTInc, PtlCTSet), so that the block stays the
 * counter's whole value and WAIT_CNT sees every move. */
enum weft_cnt_ev_op {
	WEFT_CNT_EV_ADD = 1,            /* word += value (modulo 2^64) */
	WEFT_CNT_EV_SET = 2,            /* word = value */
};
enum weft_cnt_ev_word {
	WEFT_CNT_EV_COUNT = 0,          /* weft_cnt_ev_block.count: successes */
	WEFT_CNT_EV_ERRORS = 1,         /* weft_cnt_ev_block.errors */
};

struct weft_cnt_cmd {
	uint8_t  op;                    /* enum weft_cnt_cmd_op */
	uint8_t  reserved0[3];
	uint32_t handle;
	union {
		struct {                /* CREATE */
			uint64_t block_addr;    /* struct weft_cnt_block, 8-byte aligned */
			uint64_t pages_addr;    /* u64 page addresses, 8-byte aligned */
			uint64_t length;        /* region bytes, 1 .. WEFT_CNT_MAX_LEN */
			uint32_t first_off;     /* region offset in its first page */
			uint8_t  mode;          /* enum weft_cnt_mode */
			uint8_t  flags;         /* WEFT_CNTF_* */
			uint8_t  vector;        /* interrupt handler of the events */
			uint8_t  reserved;
			uint32_t ops;           /* OPS mode: 1 .. 0xffff operations */
			uint32_t reserved2[5];
		} create;
		struct {                /* POST */
			uint16_t gen;
			uint8_t  slot;          /* 0 .. WEFT_CNT_MAX_OPS - 1 */
			uint8_t  dir;           /* enum weft_cnt_dir */
			uint16_t node;          /* the peer */
			uint16_t reserved;
			uint64_t offset;        /* in the region, a multiple of WEFT_CNT_CHUNK */
			uint64_t length;        /* 1 .. region length - offset */
			uint64_t remote_va;
			uint64_t reserved2[3];
		} post;
		struct {                /* EXPOSE */
			uint64_t va;
			uint64_t length;        /* 1 .. WEFT_CNT_MAX_LEN */
			uint64_t pages_addr;    /* u64 page addresses */
			uint32_t first_off;     /* va's offset in its first page */
			uint16_t peer;          /* node allowed, WEFT_CNT_ANY_PEER */
			uint8_t  rights;        /* WEFT_CNT_R_* */
			uint8_t  reserved;
			uint64_t reserved2[3];
		} expose;
		struct {                /* DESTROY, UNEXPOSE */
			uint16_t gen;
			uint8_t  reserved[54];
		} obj;
		struct {                /* BIND_QP, UNBIND_QP */
			uint16_t gen;           /* BIND_QP: the object's */
			uint8_t  slot;          /* 1 .. WEFT_CNT_QP_SLOTS - 1 */
			uint8_t  events;        /* BIND_QP: WEFT_CNT_EV_* (0: WQEs only) */
			uint32_t qpn;           /* a created RC or UC QP */
			uint64_t reserved[6];
		} bind;
		struct {                /* EV_SET */
			uint16_t gen;
			uint8_t  op;            /* enum weft_cnt_ev_op */
			uint8_t  word;          /* enum weft_cnt_ev_word */
			uint32_t reserved;
			uint64_t value;
			uint64_t reserved2[5];
		} ev;
		struct {                /* QUERY, QUERY_EXP */
			uint64_t addr;
			uint64_t reserved[6];
		} query;
		uint8_t raw[56];
	} u;
};
WEFT_STATIC_ASSERT(sizeof(struct weft_cnt_cmd) == 64, "counter command");
/* The response is struct weft_vcmd_resp (weft/verbs.h) right after it. */
#define WEFT_CNT_CMD_BLOCK_SIZE 128u

/* Operation states (dumps). */
enum weft_cnt_op_state {
	WEFT_CNT_OP_FREE = 0,
	WEFT_CNT_OP_REQ = 1,            /* request sent, nothing heard yet */
	WEFT_CNT_OP_RUN = 2,            /* data moving */
	WEFT_CNT_OP_DONE = 3,
	WEFT_CNT_OP_FAILED = 4,         /* error message or retries exhausted */
};

struct weft_cnt_op_dump {
	uint8_t  state;                 /* enum weft_cnt_op_state */
	uint8_t  dir;
	uint16_t node;
	uint32_t seq;
	uint32_t reason;                /* why it failed */
	uint32_t retries;
	uint64_t offset, length;
	uint64_t remote_va;
	uint64_t applied;               /* bytes applied */
};
WEFT_STATIC_ASSERT(sizeof(struct weft_cnt_op_dump) == 48, "counter op dump");

struct weft_cnt_obj_dump {
	uint8_t  live;
	uint8_t  mode, flags, vector;
	uint16_t gen;
	uint16_t notified;              /* 1 once the zero was notified */
	uint64_t block_addr;
	uint64_t length;
	uint64_t count;
	uint32_t first_off;
	uint32_t ops_done;
	struct weft_cnt_op_dump op[WEFT_CNT_MAX_OPS];
};
WEFT_STATIC_ASSERT(sizeof(struct weft_cnt_obj_dump) == 40 + 48 * WEFT_CNT_MAX_OPS,
		   "counter object dump");

struct weft_cnt_exp_dump {
	uint8_t  live;
	uint8_t  rights;
	uint16_t gen;
	uint16_t peer;
	uint16_t reserved;
	uint64_t va;
	uint64_t length;
	uint64_t served;                /* bytes read or written through it */
};
WEFT_STATIC_ASSERT(sizeof(struct weft_cnt_exp_dump) == 32, "exposure dump");

/* ---- Events (struct weft_event of weft/fifo.h) ---------------------------- */
/*   WEFT_EV_CNT_ZERO:  rcxt = object id, info = gen: the counter is 0
 *   WEFT_EV_CNT_ERROR: rcxt = object id, reason = cause, info = gen | slot << 16 */

/* ---- Wire --------------------------------------------------------------- */
/*
 * A counter packet is a struct weft_wire_hdr of type WEFT_PKT_CNT_* (the
 * seed 000 fields dst_window .. reserved1 are 0), then this 64-byte
 * header, then (CNT_DATA only) up to WEFT_CNT_CHUNK data bytes.
 *
 * (obj, gen, slot, seq) name the initiator's operation; every packet of
 * either direction carries them and the initiator's physical addresses
 * region_pa (its first byte) and block_pa (the counter block), as the
 * seed's requests do.  The responder never writes either: it echoes them,
 * and the initiator drops a packet whose echo differs.
 *
 *   CNT_WRITE_OP  initiator -> peer: send [offset, offset + span) of the
 *                 op from remote_va + offset (an RDMA read)
 *   CNT_READ_OP   initiator -> peer: take the op's data to remote_va (an
 *                 RDMA write); the peer answers CNT_ACK with span 0 (go)
 *   CNT_DATA      data at op offset `offset`, `span` bytes (read: peer ->
 *                 initiator; write: initiator -> peer, with remote_va)
 *   CNT_ACK       peer -> initiator: a write's chunk at offset was placed
 *   CNT_ERROR     peer -> initiator: cannot be serviced, cause = reason
 */
struct weft_cnt_hdr {
	uint16_t obj;
	uint16_t gen;
	uint8_t  slot;
	uint8_t  dir;                   /* enum weft_cnt_dir */
	uint16_t cause;                 /* CNT_ERROR: enum weft_reason */
	uint32_t seq;
	uint32_t reserved0;
	uint64_t region_pa;
	uint64_t block_pa;
	uint64_t remote_va;             /* the op's first byte at the peer */
	uint64_t length;                /* the op's bytes */
	uint64_t offset;                /* in the op */
	uint64_t span;                  /* bytes from offset */
};
WEFT_STATIC_ASSERT(sizeof(struct weft_cnt_hdr) == 64, "counter header");

#endif /* WEFT_CNT_H */
