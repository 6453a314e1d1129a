/* SPDX-License-Identifier: MIT */
/*
 * The weft provider's own wire messages (docs/libfabric.md "Wire
 * messages"): what one provider sends another over RC verbs and rdma_cm,
 * encoded and decoded here in plain C (no libfabric, no verbs), so that
 * the decoders are fuzzed on the host (tests/fuzz/fuzz_wire.h).  A decoder
 * takes bytes and their length, reads nothing beyond them, and returns a
 * validated structure or a named refusal reason.
 */
#ifndef WFI_WIRE_H
#define WFI_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Wire tag (docs/libfabric.md "Tags on the wire"): bit 63 marks FI_MSG,
 * bit 62 remote CQ data, bit 61 a rendezvous header sent as an eager
 * message (alone) or an RNDV with remote CQ data in its app_ctx (with bit
 * 62), bits 60..48 the sender's id at the receiver (FI_DIRECTED_RECV),
 * 47..0 the application's tag. */
#define WFI_TAG_BITS 48
#define WFI_TAG_MASK ((1ull << WFI_TAG_BITS) - 1)
#define WFI_SRC_SHIFT WFI_TAG_BITS
#define WFI_SRC_MASK (0x1fffull << WFI_SRC_SHIFT)
#define WFI_DATA_BIT (1ull << 62)
#define WFI_RNDV_BIT (1ull << 61)
#define WFI_MSG_BIT (1ull << 63)
#define WFI_MAX_PEERS 1024		/* ids 1 .. 1024 (13 bits on the wire) */

#define WFI_HDR 16u			/* the TMH */
#define WFI_RVH 16u			/* the rendezvous header */
#define WFI_RNDV_HDR (WFI_RVH + 4)	/* RVH and the remote CQ data */
#define WFI_SLOT 8192u			/* bounce and SRQ buffer size */
#define WFI_EAGER (WFI_SLOT - WFI_HDR)	/* largest eager message, inject size */
#define WFI_MAX_MSG (1ull << 30)

/* TMH opcodes (the values of rdma-core's enum ibv_tmh_op). */
enum { WFI_OP_NO_TAG = 0, WFI_OP_RNDV = 1, WFI_OP_FIN = 2, WFI_OP_EAGER = 3 };

/* NO_TAG notes, by their app_ctx: FI_RMA_EVENT counts after an RDMA op,
 * a key's query and its answer (key.c), fi_writedata's remote CQ data. */
enum {
	WFI_NOTE_READ = 1, WFI_NOTE_WRITE = 2, WFI_NOTE_KEYQ = 3, WFI_NOTE_KEYA = 4,
	WFI_NOTE_WDATA = 5,
};
#define WFI_KEYQ_LEN 8u			/* the key */
#define WFI_KEYA_LEN 32u		/* key, va, length, rkey, found */

/* rdma_cm private data: the connect's, the accept's and the reject's.
 * An endpoint's name is its IPv4 address, its listening port and its
 * incarnation, a random 64-bit number drawn when it is enabled (0 in a
 * name: whoever listens at that address and port). */
#define WFI_CM_MAGIC 0x57464933u	/* "WFI3" */
#define WFI_CM_REQ_LEN 28u		/* magic, IPv4 address, port, 2 zero bytes,
					 * incarnation, the target's incarnation */
#define WFI_CM_REP_LEN 16u		/* magic, id, 2 zero bytes, incarnation */
#define WFI_CM_REJ_LEN 8u		/* magic, why, 3 zero bytes */
/* Why a connect was rejected (the reject's "why"). */
enum {
	WFI_CM_REJ_STALE = 1,		/* it named another incarnation of the target */
	WFI_CM_REJ_GONE = 2,		/* the target holds the connecting name as dead */
};

/* Why a peer's message was refused.  The decoders return the first
 * group; the provider finds the second against its own state.  Each has
 * a counter per endpoint and a rate-limited line on stderr. */
enum wfi_wire_reason {
	WFI_WIRE_OK = 0,
	WFI_WIRE_SHORT,			/* shorter than a TMH */
	WFI_WIRE_LONG,			/* longer than the buffer it came in */
	WFI_WIRE_RESERVED,		/* the TMH's reserved bytes not zero */
	WFI_WIRE_OPCODE,		/* an unknown TMH opcode */
	WFI_WIRE_FIN_LEN,		/* a FIN with bytes after its TMH */
	WFI_WIRE_NOTE_KIND,		/* a NO_TAG note of an unknown kind */
	WFI_WIRE_NOTE_LEN,		/* a note's payload not its kind's length */
	WFI_WIRE_NOTE_TAG,		/* a note's tag: not 0, or CQ data beyond 32 bits */
	WFI_WIRE_KEYA_FOUND,		/* a key answer's found neither 0 nor 1 */
	WFI_WIRE_KEYA_RANGE,		/* its region wraps, or "not found" with a region */
	WFI_WIRE_TAG_SRC,		/* a message's source id 0 or above 1024 */
	WFI_WIRE_TAG_BITS,		/* tag bits no sender sets together */
	WFI_WIRE_RNDV_LEN,		/* a rendezvous header neither RVH nor RVH + data */
	WFI_WIRE_RNDV_SIZE,		/* a rendezvous length above WFI_MAX_MSG */
	WFI_WIRE_CM_LEN,		/* connection private data too short */
	WFI_WIRE_CM_MAGIC,		/* its magic not WFI_CM_MAGIC */
	WFI_WIRE_CM_NAME,		/* a connect's name zero, or reserved bytes set */
	WFI_WIRE_CM_ID,			/* an accept's id 0 or above 1024 */
	WFI_WIRE_CM_WHY,		/* a reject's why unknown, or reserved bytes set */
	WFI_WIRE_DECODE_END,		/* the provider's own reasons follow */
	WFI_WIRE_FIN_STRAY = WFI_WIRE_DECODE_END, /* a FIN no rendezvous on its QP waits for */
	WFI_WIRE_KEYQ_MODE,		/* a key query to a domain without keys of its own */
	WFI_WIRE_KEYA_STRAY,		/* a key answer the endpoint did not ask on that QP */
	WFI_WIRE_SRC_FORGED,		/* a source id not the connection's peer */
	WFI_WIRE_CM_ADDR,		/* a connect's name not the connection's address */
	WFI_WIRE_CM_STALE,		/* a connect or accept naming another incarnation */
	WFI_WIRE_CM_GONE,		/* a connect from a name held as dead (replayed) */
	WFI_WIRE_NREASONS
};

struct wfi_wire_rvh {
	uint64_t va;
	uint32_t rkey, len;
};

struct wfi_wire_keya {
	uint64_t key, va, len;
	uint32_t rkey;
	bool found;
};

enum wfi_wire_kind { WFI_MSG_EAGER, WFI_MSG_RNDV, WFI_MSG_FIN, WFI_MSG_NOTE };

/* A message as it lands in an SRQ buffer: [TMH | payload]. */
struct wfi_wire_msg {
	enum wfi_wire_kind kind;
	uint8_t op;			/* the TMH: opcode, app_ctx, tag */
	uint32_t app_ctx;
	uint64_t tag;
	const uint8_t *payload;		/* EAGER: its data (within the buffer) */
	uint32_t plen;
	struct wfi_wire_rvh rvh;	/* RNDV (TMH RNDV, or EAGER with bit 61 alone) */
	bool has_data;			/* RNDV: remote CQ data after the RVH */
	uint32_t data;
	uint32_t note;			/* NOTE: its kind (app_ctx) */
	uint64_t key;			/* NOTE KEYQ */
	struct wfi_wire_keya keya;	/* NOTE KEYA */
};

struct wfi_wire_cm_req {
	uint32_t addr;			/* IPv4, network order (sin_addr.s_addr) */
	uint16_t port;			/* network order (sin_port) */
	uint64_t inc;			/* the connecting endpoint's incarnation */
	uint64_t dst_inc;		/* the target's as the connector knows it, or 0 */
};

struct wfi_wire_cm_rep {
	uint16_t id;			/* the connector's id at the acceptor */
	uint64_t inc;			/* the acceptor's incarnation */
};

const char *wfi_wire_reason_name(enum wfi_wire_reason r);

/* len bytes at buf, one SRQ buffer's message.  Refused, m's op, app_ctx
 * and tag are the TMH's when there was a whole TMH (else 0), and its other
 * fields mean nothing. */
enum wfi_wire_reason wfi_wire_decode(const uint8_t *buf, size_t len, struct wfi_wire_msg *m);
/* Encodes m into buf (cap bytes): its length, or 0 when it does not fit.
 * An EAGER copies plen bytes from payload. */
size_t wfi_wire_encode(uint8_t *buf, size_t cap, const struct wfi_wire_msg *m);

/* A rendezvous header that the adapter placed in a tagged buffer,
 * n bytes at h: [RVH | remote CQ data when sent]. */
enum wfi_wire_reason wfi_wire_rndv_decode(const uint8_t *h, size_t n, struct wfi_wire_rvh *rvh,
					  bool *has_data, uint32_t *data);

/* The source id a message's wire tag names (0: none). */
static inline int wfi_wire_src(uint64_t tag)
{
	return (int)((tag & WFI_SRC_MASK) >> WFI_SRC_SHIFT);
}

/* Connection private data (n bytes; rdma_cm may pad it). */
enum wfi_wire_reason wfi_wire_cm_req_decode(const uint8_t *p, size_t n, struct wfi_wire_cm_req *r);
void wfi_wire_cm_req_encode(uint8_t p[WFI_CM_REQ_LEN], const struct wfi_wire_cm_req *r);
enum wfi_wire_reason wfi_wire_cm_rep_decode(const uint8_t *p, size_t n, struct wfi_wire_cm_rep *r);
void wfi_wire_cm_rep_encode(uint8_t p[WFI_CM_REP_LEN], const struct wfi_wire_cm_rep *r);
enum wfi_wire_reason wfi_wire_cm_rej_decode(const uint8_t *p, size_t n, uint8_t *why);
void wfi_wire_cm_rej_encode(uint8_t p[WFI_CM_REJ_LEN], uint8_t why);

#endif
