/* SPDX-License-Identifier: MIT */
/*
 * Wire format between adapters and weft-switch.
 *
 * Transport: a UNIX stream socket.  Each frame is a 4-byte little-endian
 * length (of what follows, WEFT_WIRE_HDR_SIZE .. WEFT_WIRE_MAX_FRAME) and
 * then one packet: a struct weft_wire_hdr followed by hdr.length payload
 * bytes.  All fields are little-endian.
 *
 * After connecting, an adapter sends a HELLO packet (src_node = its node
 * id, key = WEFT_WIRE_HELLO_MAGIC, and as payload either nothing or the
 * node's WEFT_WIRE_TOKEN_SIZE-byte secret token); the switch answers with
 * HELLO_ACK (status 0 = accepted, otherwise enum weft_sw_status) and from
 * then on routes packets to it by destination node id.  A switch with a
 * token table accepts a node id only with that node's token.
 *
 * Nothing in a packet is trusted by a receiver: every field is checked.
 */
#ifndef WEFT_WIRE_H
#define WEFT_WIRE_H

#include "weft/types.h"
#include "weft/hw.h"

#define WEFT_WIRE_VERSION       1u
#define WEFT_WIRE_HDR_SIZE      104u
/*
 * The largest payload of any packet type: a verbs UD_SEND, its 64-byte
 * transport header, 40-byte address block and WEFT_VERBS_MTU (4096) data
 * bytes (include/weft/verbs.h).  Every other type carries at most
 * WEFT_MAX_PAYLOAD (1920) bytes, and a receiver drops a longer one.
 */
#define WEFT_WIRE_MAX_PAYLOAD   4200u
#define WEFT_WIRE_MAX_FRAME     (WEFT_WIRE_HDR_SIZE + WEFT_WIRE_MAX_PAYLOAD)
#define WEFT_WIRE_LEN_PREFIX    4u
#define WEFT_WIRE_HELLO_MAGIC   0x57465357u /* "WSFW" */
#define WEFT_WIRE_TOKEN_SIZE    32u         /* HELLO payload: the node's token */

/*
 * Packet types, X(NAME, value, rule): WEFT_PKT_<NAME>, its name in traces
 * (weft/names.h) and its name in weft-switch drop rules (docs/switch.md).
 * New types go at the end of the list.
 */
#define WEFT_PKT_LIST(X) \
	X(FIFO,           1,    "fifo")           /* packet mode: payload to the FIFO */ \
	X(RDMAW,          2,    "rdmaw")          /* RDMA write payload, read response */ \
	X(RDMAR_REQ,      3,    "rdmar-req")      /* RDMA read request, to the source */ \
	X(COMPLETION,     4,    "completion")     /* RDMA completion, header only */ \
	X(TP_RDMAR_REQ,   5,    "tp-rdmar-req")   /* third-party read, manager -> source */ \
	X(TP_RDMAW,       6,    "tp-rdmaw")       /* third-party payload, source -> target */ \
	X(FIFO_DATA,      7,    "fifo-data")      /* half-RDMA payload for the FIFO */ \
	X(RDMAR_FIFO_REQ, 8,    "rdmar-fifo-req") /* half-RDMA read, data into the FIFO */ \
	X(RDMAR_PUT_REQ,  9,    "rdmar-put-req")  /* half-RDMA read for the source's program */ \
	X(VERBS,          0x10, "verbs")          /* verbs engine: weft_vhdr + data (verbs.h) */ \
	X(CNT_WRITE_OP,   0x11, "cnt-write-op")   /* counters (cnt.h): "DMA write op", a read */ \
	X(CNT_READ_OP,    0x12, "cnt-read-op")    /* "DMA read op" request: an RDMA write */ \
	X(CNT_DATA,       0x13, "cnt-data")       /* one chunk of data */ \
	X(CNT_ACK,        0x14, "cnt-ack")        /* write: chunk placed, or go (span 0) */ \
	X(CNT_ERROR,      0x15, "cnt-error")      /* request cannot be serviced: cause */ \
	X(MATCH,          0x20, "match")          /* header matching: weft_match_whdr (match.h) */

/* Switch control, never delivered to an adapter's FIFO (nor named in rules). */
#define WEFT_PKT_CTL_LIST(X) \
	X(HELLO,          0x80, "hello") \
	X(HELLO_ACK,      0x81, "hello-ack")

enum weft_pkt_type {
#define WEFT_PKT_ENUM(name, val, rule) WEFT_PKT_##name = (val),
	WEFT_PKT_LIST(WEFT_PKT_ENUM)
	WEFT_PKT_CTL_LIST(WEFT_PKT_ENUM)
#undef WEFT_PKT_ENUM
};

/* weft_wire_hdr.flags */
#define WEFT_WF_READ_RESP       0x01u /* RDMAW payload answering an RDMAR */
#define WEFT_WF_LAST            0x02u /* last packet of the operation (informative) */
#define WEFT_WF_HALF            0x04u /* RDMAW payload taken from a send FIFO frame */
#define WEFT_WF_REPLAYED        0x80u /* set by weft-switch on replayed frames (capture only) */

/*
 * rcxt/rcxt_key name the receiver's rCxt; src_rcxt/src_rcxt_key the
 * sender's.  For RDMAW payload, pvo is the destination PVO of this
 * packet's first byte and offset its byte offset in the transfer; for
 * RDMAR_REQ, pvo is the source PVO at the data source and aux_pvo the
 * destination PVO at the initiator.  ctl_* name the node that gets the
 * completion in third-party operations (and the data target in a
 * TP_RDMAR_REQ).
 */
struct weft_wire_hdr {
	uint8_t  version;       /* WEFT_WIRE_VERSION */
	uint8_t  type;          /* enum weft_pkt_type */
	uint8_t  notify;        /* WEFT_NOTIFY_* */
	uint8_t  flags;         /* WEFT_WF_* */
	uint16_t dst_node;
	uint16_t src_node;
	uint16_t dst_window;
	uint16_t src_window;
	uint32_t key;           /* sender window key, stamped by the adapter */
	uint32_t length;        /* payload bytes that follow */
	uint32_t rcxt;
	uint32_t src_rcxt;
	uint16_t rcxt_key;
	uint16_t src_rcxt_key;
	uint32_t tid;
	uint32_t reserved0;
	uint64_t pvo;
	uint64_t aux_pvo;
	uint64_t total_length;
	uint64_t offset;
	uint64_t protocol_cookie;
	uint64_t user_cookie;
	uint16_t ctl_node;
	uint16_t ctl_window;
	uint32_t ctl_rcxt;
	uint16_t ctl_rcxt_key;
	uint16_t status;        /* completion / HELLO_ACK status */
	uint32_t reserved1;
};
WEFT_STATIC_ASSERT(sizeof(struct weft_wire_hdr) == WEFT_WIRE_HDR_SIZE, "wire header");

enum weft_sw_status {
	WEFT_SW_OK = 0,
	WEFT_SW_NODE_IN_USE = 1,  /* another live client has this node id */
	WEFT_SW_BAD_NODE = 2,     /* node id out of the unicast range */
	WEFT_SW_BAD_HELLO = 3,
	WEFT_SW_AUTH_FAILED = 4,  /* no token, or not this node's token */
};

/* pcap link type used by weft-switch captures (LINKTYPE_USER0): each
 * record is one packet, weft_wire_hdr + payload, without the length prefix. */
#define WEFT_PCAP_LINKTYPE      147u

#endif /* WEFT_WIRE_H */
