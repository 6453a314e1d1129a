/* SPDX-License-Identifier: MIT */
/*
 * Weft MPI header matching (seed 001, docs/matching.md): header queues,
 * the match word, operation blocks, completion entries, registers and the
 * matching wire header.
 *
 * The adapter holds 128 header queues; each is a pair of lists, the
 * posted-receive queue (PRQ) and the unexpected queue (UEQ), whose
 * entries come from one header store shared by all queues.  Unexpected
 * eager payloads live in the unexpected message buffer (UMB), split into
 * fragments, or in host temporary buffers the driver lends to the adapter.
 *
 * Software talks to the engine with 64-byte operation blocks in guest
 * memory: writing a block's address to MATCH_DOORBELL queues it (the
 * block is copied at once).  The engine answers with 64-byte completion
 * entries in one ring in guest memory (MATCH_CQ_*).
 */
#ifndef WEFT_MATCH_H
#define WEFT_MATCH_H

#include "weft/types.h"
#include "weft/hw.h"

/* ---- Sizes and defaults ------------------------------------------------ */
#define WEFT_MATCH_NR_QUEUES    128u    /* PRQ/UEQ pairs per adapter */
#define WEFT_MATCH_HDR_BYTES    32u     /* header-store bytes per entry */
#define WEFT_MATCH_DEF_STORE    (1u << 20)      /* header store bytes */
#define WEFT_MATCH_MAX_STORE    (16u << 20)
#define WEFT_MATCH_DEF_UMB      (512u << 10)    /* UMB bytes */
#define WEFT_MATCH_MAX_UMB      (64u << 20)
#define WEFT_MATCH_DEF_FRAG     128u    /* UMB fragment bytes: 64 or 128 */
#define WEFT_MATCH_DEF_MATCHERS 8u
#define WEFT_MATCH_MAX_MATCHERS 64u
#define WEFT_MATCH_DEF_STEP     32u     /* entries one matcher compares per unit */
#define WEFT_MATCH_PENDING      256u    /* queued operations and arrivals */
#define WEFT_MATCH_POOL_MAX     256u    /* host temporary buffers held */
#define WEFT_MATCH_RNDV_SLOTS   64u     /* rendezvous slots per side */
#define WEFT_MATCH_DEF_RNDV_THRESHOLD (64u << 10) /* small/large rendezvous */
#define WEFT_MATCH_MAX_MSG      (1ull << 28)    /* longest message */
#define WEFT_MATCH_CAM          8u      /* recent unexpected entries (item 109) */
#define WEFT_MATCH_ANY_SOURCE   0xffffu /* source filter: any node */
/* Reliable delivery of matching packets (docs/matching.md). */
#define WEFT_MATCH_PEERS        64u     /* peer channels per adapter */
#define WEFT_MATCH_FRAMES       128u    /* unacknowledged frames, all peers */
#define WEFT_MATCH_RTO_NS       1000000ull /* first resend after 1 ms */
#define WEFT_MATCH_RTO_MAX_SHIFT 7u     /* backoff doubles up to 128 ms */
#define WEFT_MATCH_RETRIES      12u     /* resends without progress: peer dead */

/*
 * ---- Match word (64 bits) ---------------------------------------------
 * 63:62 WC (posted receives; reserved on incoming words), 61:48
 * Type/Comm/App context, 47:32 source rank, 31:0 tag.  A word whose bits
 * 61:0 are all zero is invalid and never matches (item 101).  WC = 01
 * hides the queue's tag mask, 10 its rank mask, 11 both; the masks are
 * per-queue registers (defaults WEFT_MW_TAG_MASK / WEFT_MW_RANK_MASK).
 * An entry also carries its own ignore mask (Portals, libfabric).  A posted
 * entry P matches an incoming word I from node S when
 *   ((I ^ P.match) & ~(P.ignore | WC masks | WEFT_MW_WC_MASK)) == 0
 * and P.src is WEFT_MATCH_ANY_SOURCE or S.
 */
#define WEFT_MW_WC_SHIFT        62
#define WEFT_MW_WC_MASK         (3ull << 62)
#define WEFT_MW_WC_TAG          1u
#define WEFT_MW_WC_RANK         2u
#define WEFT_MW_CTX_SHIFT       48
#define WEFT_MW_CTX_MASK        (0x3fffull << 48)
#define WEFT_MW_RANK_SHIFT      32
#define WEFT_MW_RANK_MASK       (0xffffull << 32)
#define WEFT_MW_TAG_MASK        0xffffffffull
#define WEFT_MW(wc, ctx, rank, tag) \
	(((uint64_t)((wc) & 3) << 62) | ((uint64_t)((ctx) & 0x3fff) << 48) | \
	 ((uint64_t)((rank) & 0xffff) << 32) | (uint64_t)(uint32_t)(tag))

/* The match rule, shared by the engine and every test oracle. */
static inline int weft_mw_match(uint64_t incoming, uint64_t posted, uint64_t ignore,
				uint64_t tag_mask, uint64_t rank_mask)
{
	unsigned int wc = (unsigned int)(posted >> WEFT_MW_WC_SHIFT);
	uint64_t hide = ignore | WEFT_MW_WC_MASK;

	if ((incoming & ~WEFT_MW_WC_MASK) == 0 || (posted & ~WEFT_MW_WC_MASK) == 0)
		return 0;
	if (wc & WEFT_MW_WC_TAG)
		hide |= tag_mask;
	if (wc & WEFT_MW_WC_RANK)
		hide |= rank_mask;
	return ((incoming ^ posted) & ~hide) == 0;
}

/*
 * The rule of rdma-core's tag-matching verbs (weft/verbs.h WEFT_VSRQF_TM):
 * an incoming 64-bit tag matches a listed tag when (incoming & mask) == tag;
 * mask holds the bits that must match.  Every bit counts (no WC bits) and a
 * zero tag is a tag like any other.
 */
static inline int weft_tm_match(uint64_t incoming, uint64_t tag, uint64_t mask)
{
	return (incoming & mask) == tag;
}

/*
 * ---- Registers (BAR 0) --------------------------------------------------
 * X(name, offset, access), as WEFT_REG_LIST.
 */
#define WEFT_MATCH_REG_LIST(X) \
	X(MATCH_CAPS,      0x1000, RO) /* WEFT_MATCH_CAPS_* */                \
	X(MATCH_UMB,       0x1008, RO) /* UMB bytes 31:0, fragment bytes 47:32 */ \
	X(MATCH_CQ_BASE,   0x1010, RW) /* completion ring guest address, 64 B aligned */ \
	X(MATCH_CQ_SIZE,   0x1018, RW) /* log2(entries) 4..16; 0 disables */  \
	X(MATCH_CQ_PROD,   0x1020, RO) /* completions written (free-running) */ \
	X(MATCH_CQ_CONS,   0x1028, RW) /* completions consumed by software */ \
	X(MATCH_DOORBELL,  0x1030, WO) /* guest address of an operation block */ \
	X(MATCH_DB_STATUS, 0x1038, RO) /* WEFT_CMD_* of the last doorbell, reason 47:32 */ \
	X(MATCH_STORE_FREE,0x1040, RO) /* free header-store entries */        \
	X(MATCH_UMB_FREE,  0x1048, RO) /* free UMB fragments */               \
	X(MATCH_STOPPED0,  0x1050, RO) /* bit per stopped queue 0..63 */      \
	X(MATCH_STOPPED1,  0x1058, RO) /* queues 64..127 */                   \
	X(MATCH_POOL_FREE, 0x1060, RO) /* host temporary buffers held */      \
	X(MATCH_IRQ,       0x1068, RW) /* interrupt handler of queue events */

enum weft_match_reg {
#define WEFT_MATCH_REG_ENUM(name, off, acc) WEFT_REG_##name = (off),
	WEFT_MATCH_REG_LIST(WEFT_MATCH_REG_ENUM)
#undef WEFT_MATCH_REG_ENUM
};

#define WEFT_MATCH_REG_FIRST    0x1000u

/* CAPS: queues 7:0 (128 reads 0x80), matchers 15:8, store entries 63:32. */
#define WEFT_MATCH_CAPS_QUEUES(v)   ((uint32_t)(v) & 0xff)
#define WEFT_MATCH_CAPS_MATCHERS(v) (((uint32_t)(v) >> 8) & 0xff)
#define WEFT_MATCH_CAPS_STORE(v)    ((uint32_t)((v) >> 32))

/*
 * Header-queue descriptors: 128 of 0x20 bytes from 0x1400 (privileged).
 *   QCFG   RW  WEFT_QCFG_*
 *   QTAG   RW  bits hidden by WC tag (default WEFT_MW_TAG_MASK)
 *   QRANK  RW  bits hidden by WC rank (default WEFT_MW_RANK_MASK)
 *   QSTAT  RW  WEFT_QSTAT_*; write 1 to STOPPED to restart the queue
 */
#define WEFT_MATCH_QD_BASE      0x1400u
#define WEFT_MATCH_QD_STRIDE    0x20u
#define WEFT_MATCH_QD_END       (WEFT_MATCH_QD_BASE + WEFT_MATCH_NR_QUEUES * WEFT_MATCH_QD_STRIDE)
#define WEFT_REG_MATCH_QCFG(q)  (WEFT_MATCH_QD_BASE + (q) * WEFT_MATCH_QD_STRIDE + 0x00)
#define WEFT_REG_MATCH_QTAG(q)  (WEFT_MATCH_QD_BASE + (q) * WEFT_MATCH_QD_STRIDE + 0x08)
#define WEFT_REG_MATCH_QRANK(q) (WEFT_MATCH_QD_BASE + (q) * WEFT_MATCH_QD_STRIDE + 0x10)
#define WEFT_REG_MATCH_QSTAT(q) (WEFT_MATCH_QD_BASE + (q) * WEFT_MATCH_QD_STRIDE + 0x18)

#define WEFT_QCFG_ENABLE        (1ull << 0)     /* header matching on */
#define WEFT_QCFG_TRUNCATE      (1ull << 1)     /* small buffer: truncate, else NAK */
#define WEFT_QCFG_NO_COPY       (1ull << 2)     /* host-buffered match: NO_COPY */
#define WEFT_QCFG_SW_UEQ        (1ull << 3)     /* software keeps the UEQ (108) */
#define WEFT_QCFG_PRQ_MAX(v)    ((uint32_t)((v) >> 16) & 0xffff) /* 0 = store */
#define WEFT_QCFG_UEQ_MAX(v)    ((uint32_t)((v) >> 32) & 0xffff) /* 0 = store */
#define WEFT_QCFG(flags, prq_max, ueq_max) \
	((uint64_t)(flags) | ((uint64_t)((prq_max) & 0xffff) << 16) | \
	 ((uint64_t)((ueq_max) & 0xffff) << 32))
#define WEFT_QCFG_VALID_MASK    0x0000ffffffff000full

#define WEFT_QSTAT_STOPPED      (1ull << 0)     /* overflow: RNR NAK until reset */
#define WEFT_QSTAT_SYNC         (1ull << 1)     /* software-UEQ sync in force (RO) */
#define WEFT_QSTAT_PRQ(v)       ((uint32_t)((v) >> 16) & 0xffff) /* RO lengths */
#define WEFT_QSTAT_UEQ(v)       ((uint32_t)((v) >> 32) & 0xffff)
#define WEFT_QSTAT_SEQ(v)       ((uint32_t)((v) >> 48) & 0xffff) /* unexpected count */

/* ---- Operation block (64 bytes, guest memory) -------------------------- */
enum weft_match_opcode {
	WEFT_MOP_POST = 1,      /* add a posted receive (UEQ searched first) */
	WEFT_MOP_REMOVE = 2,    /* remove the posted receive match_id */
	WEFT_MOP_SEND = 3,      /* tagged send to node src_node, queue queue */
	WEFT_MOP_SYNC = 4,      /* software-UEQ: stop unexpected deliveries */
	WEFT_MOP_POOL_ADD = 5,  /* lend a host temporary buffer (addr, len) */
	WEFT_MOP_DUMP = 6,      /* dump PRQ (or UEQ with F_UEQ) to addr, len bytes */
	WEFT_MOP_RNDV_PUT = 7,  /* large rendezvous: write send slot match_id now */
};

#define WEFT_MOPF_CR            0x01u   /* POST/REMOVE: completion when done (106) */
#define WEFT_MOPF_MULTI         0x02u   /* POST: claim flag at claim (item 82) */
#define WEFT_MOPF_OPTIMISTIC    0x04u   /* POST: seen = last unexpected seq (109) */
#define WEFT_MOPF_RNDV          0x08u   /* SEND: rendezvous even when it fits */
#define WEFT_MOPF_UEQ           0x10u   /* DUMP: the UEQ instead of the PRQ */
#define WEFT_MOPF_VALID         0x1fu

struct weft_match_op {
	uint8_t  opcode;        /* enum weft_match_opcode */
	uint8_t  flags;         /* WEFT_MOPF_* */
	uint16_t queue;         /* header queue (SEND: the receiver's) */
	uint32_t len;           /* buffer / message bytes */
	uint64_t match;         /* POST: word with WC; SEND: incoming word */
	uint64_t ignore;        /* POST: bits ignored by this entry */
	uint64_t addr;          /* buffer (POST, SEND, POOL_ADD, DUMP) */
	uint32_t match_id;      /* POST: Match Compl ID; REMOVE: id; RNDV_PUT: slot */
	uint32_t req_id;        /* Req Compl ID, echoed in this op's completions */
	uint16_t node;          /* POST: source filter; SEND: destination node */
	uint16_t reserved0;
	uint32_t seen;          /* POST with OPTIMISTIC: unexpected seq seen */
	uint64_t claim;         /* POST with MULTI: 8-byte claim flag address */
	uint64_t reserved1;
};
WEFT_STATIC_ASSERT(sizeof(struct weft_match_op) == 64, "match op");

/* ---- Completion entry (64 bytes, the MATCH_CQ ring) --------------------- */
enum weft_match_cqe_type {
	WEFT_MCQE_MATCH_COPY = 1,   /* SUCCESSFUL_MATCH_COPY_COMPLETE (96, 98) */
	WEFT_MCQE_COPY = 2,         /* COPY_COMPLETE: copied from a host buffer (103) */
	WEFT_MCQE_NO_COPY = 3,      /* SUCCESSFUL_MATCH_NO_COPY: addr = host buffer */
	WEFT_MCQE_POSTED = 4,       /* CR: receive added to the PRQ (106) */
	WEFT_MCQE_REMOVED = 5,      /* REMOVE done (status NOT_FOUND if absent) */
	WEFT_MCQE_SYNC = 6,         /* SYNC in force; seq = unexpected count */
	WEFT_MCQE_UNEXPECTED = 7,   /* software-UEQ: message in host buffer addr */
	WEFT_MCQE_SEND_DONE = 8,    /* send complete, buffer reusable */
	WEFT_MCQE_SEND_PENDING = 9, /* rendezvous queued unmatched: keep the buffer */
	WEFT_MCQE_RNDV_MATCHED = 10, /* large rendezvous matched: RNDV_PUT slot */
	WEFT_MCQE_RNDV_CTS = 11,    /* large rendezvous matched later: RNDV_PUT slot */
	WEFT_MCQE_DUMP = 12,        /* DUMP done: length = entries written */
	WEFT_MCQE_OP_ERROR = 13,    /* operation refused: status */
	WEFT_MCQE_NAK = 14,         /* the receiver NAKed a send: status */
};

#define WEFT_MCQEF_TRUNCATED    0x01u   /* written up to the buffer size (105) */
#define WEFT_MCQEF_LOOPBACK     0x02u   /* intra-node send (81) */
#define WEFT_MCQEF_RNDV         0x04u   /* a rendezvous transfer */
#define WEFT_MCQEF_RNR          0x08u   /* NAK: receiver not ready (104) */

struct weft_match_cqe {
	uint8_t  type;          /* enum weft_match_cqe_type */
	uint8_t  flags;         /* WEFT_MCQEF_* */
	uint16_t queue;
	uint32_t status;        /* enum weft_reason, 0 = success */
	uint64_t match;         /* the message's incoming word */
	uint32_t match_id;      /* Match Compl ID of the posted receive */
	uint32_t req_id;        /* Req Compl ID of the operation */
	uint64_t length;        /* message bytes (DUMP: entries) */
	uint64_t written;       /* bytes placed in the buffer */
	uint64_t addr;          /* NO_COPY / UNEXPECTED: host buffer */
	uint16_t src_node;
	uint16_t reserved0;
	uint32_t seq;           /* unexpected seq, or rendezvous slot */
	uint64_t reserved1;
};
WEFT_STATIC_ASSERT(sizeof(struct weft_match_cqe) == 64, "match cqe");

/*
 * ---- Queue dump entry (32 bytes, one header, in list order) -------------
 * Written by the DUMP operation and by the verbs command QUERY_HQ
 * (weft/verbs.h), which snapshots any queue, a tag-matching SRQ's too.
 */
struct weft_match_dump {
	uint64_t match;         /* TAG: the tag */
	uint64_t ignore;        /* PRQ: ignore mask; TAG: mask (bits that must match); UEQ: 0 */
	uint32_t len;           /* PRQ, TAG: buffer bytes; UEQ: message bytes */
	uint32_t id;            /* PRQ: Match Compl ID; TAG: handle; UEQ: its seq */
	uint16_t node;          /* PRQ: source filter; UEQ: source node; TAG: 0 */
	uint8_t  kind;          /* WEFT_MDUMP_* */
	uint8_t  flags;         /* WEFT_MDUMPF_* */
	uint32_t aux;           /* UEQ rendezvous: sender slot; TAG: lkey */
};
WEFT_STATIC_ASSERT(sizeof(struct weft_match_dump) == WEFT_MATCH_HDR_BYTES, "match dump");

#define WEFT_MDUMP_POSTED       1u
#define WEFT_MDUMP_UMB          2u      /* unexpected eager in UMB fragments */
#define WEFT_MDUMP_HOST         3u      /* unexpected eager in a host buffer */
#define WEFT_MDUMP_RNDV         4u      /* unexpected rendezvous request */
#define WEFT_MDUMP_TAG          5u      /* a tag of a tag-matching SRQ (lent queue) */

#define WEFT_MDUMPF_MULTI       0x01u   /* POSTED: with a claim flag (item 82) */
#define WEFT_MDUMPF_INACTIVE    0x02u   /* TAG: added behind the phase, off until a sync (109) */

/* QUERY_HQ writes at most this many entries per command (32 KiB). */
#define WEFT_MATCH_QUERY_MAX    1024u
#define WEFT_HQF_UEQ            0x01u   /* QUERY_HQ: the UEQ instead of the PRQ */
#define WEFT_HQS_TM             0x01u   /* QUERY_HQ out[2]: lent to a tag-matching SRQ */
#define WEFT_HQS_STOPPED        0x02u   /* QUERY_HQ out[2]: stopped after an overflow */

/*
 * ---- Wire: WEFT_PKT_MATCH (weft_wire_hdr + this header + data) ----------
 * Eager: EAGER with the whole message.  Rendezvous (items 110, 111): the
 * sender's RNDV_REQ (the seed's ATOMIC fetch-add request) gets a RNDV_ACK
 * with status MATCHED (rslot, size), PENDING (small, queued) or NOT_FOUND
 * (large, queued).  Data moves in DATA packets into the receiver's slot,
 * pushed by the sender (PUT) or pulled by the receiver (PULL); FIN closes
 * the transfer; CTS gives a large unmatched sender the slot once a
 * receive matched.  NAK answers any of them with a reason.
 *
 * Every packet but ACK travels on a reliable channel per ordered pair of
 * nodes (docs/matching.md "Reliable delivery"): weft_wire_hdr.tid is its
 * sequence number (PSN, one space per channel) and protocol_cookie the
 * sender's incarnation (epoch, new at each adapter reset).  The receiver
 * takes a packet only with the next PSN of that epoch, or with SYN (a
 * sequence start: the sender has nothing unacknowledged before it) at or
 * after it, and answers with ACK: offset = next PSN expected (cumulative),
 * total = the epoch acknowledged.  The sender resends what is not
 * acknowledged (go-back-N) and gives up after WEFT_MATCH_RETRIES.
 */
enum weft_match_wop {
	WEFT_MWOP_EAGER = 1,
	WEFT_MWOP_RNDV_REQ = 2,
	WEFT_MWOP_RNDV_ACK = 3,
	WEFT_MWOP_DATA = 4,
	WEFT_MWOP_PULL = 5,
	WEFT_MWOP_FIN = 6,
	WEFT_MWOP_CTS = 7,
	WEFT_MWOP_NAK = 8,
	WEFT_MWOP_ACK = 9,      /* channel acknowledgement, not sequenced */
};

#define WEFT_MACK_MATCHED       1u
#define WEFT_MACK_PENDING       2u
#define WEFT_MACK_NOT_FOUND     3u

#define WEFT_MWF_RNR            0x01u   /* NAK: receiver not ready */
#define WEFT_MWF_TO_SENDER      0x02u   /* FIN: receiver -> sender (after PULL) */
#define WEFT_MWF_SYN            0x04u   /* any sequenced packet: sequence start */

struct weft_match_whdr {
	uint8_t  op;            /* enum weft_match_wop */
	uint8_t  flags;         /* WEFT_MWF_* */
	uint16_t queue;         /* receiver's header queue */
	uint32_t len;           /* data bytes in this packet */
	uint64_t match;         /* incoming match word */
	uint64_t total;         /* message bytes (ACK: accepted bytes) */
	uint64_t offset;        /* DATA: byte offset of the data */
	uint32_t sslot;         /* sender's rendezvous slot */
	uint32_t rslot;         /* receiver's rendezvous slot */
	uint32_t status;        /* ACK: WEFT_MACK_*; NAK: enum weft_reason */
	uint32_t req_id;        /* sender's Req Compl ID (NAK: echoed) */
};
WEFT_STATIC_ASSERT(sizeof(struct weft_match_whdr) == 48, "match wire header");

/* Eager data bytes in one WEFT_PKT_MATCH packet: 1872. */
#define WEFT_MATCH_EAGER_MAX    (WEFT_MAX_PAYLOAD - 48u)

#endif /* WEFT_MATCH_H */
