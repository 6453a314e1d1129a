/* SPDX-License-Identifier: MIT */
/*
 * FIFO formats.  Send and receive FIFOs are physically contiguous guest
 * memory made of 2 KiB frames.  A frame is a 128-byte header line followed
 * by up to 15 payload lines (WEFT_MAX_PAYLOAD = 1920 bytes).
 *
 * Send frame i lives at send_fifo_real_address + (i & send_mask) * 2 KiB,
 * receive frame i at recv_fifo_real_address + (i & recv_mask) * 2 KiB.
 */
#ifndef WEFT_FIFO_H
#define WEFT_FIFO_H

#include "weft/types.h"
#include "weft/hw.h"

/* Send frame types (weft_send_hdr.type) */
enum weft_sf_type {
	WEFT_SF_FIFO = 1,     /* packet mode: payload follows the header line */
	WEFT_SF_RDMAW = 2,    /* RDMA write pseudo packet (weft_rdma_req) */
	WEFT_SF_RDMAR = 3,    /* RDMA read pseudo packet */
	WEFT_SF_TP_RDMAR = 4, /* third-party RDMA read request */
	/* Half-RDMA / half-FIFO (hw-spec 5.3, seed 1.5.7) */
	WEFT_SF_RDMAW_FIFO = 5, /* write: RDMA at the sender, data into the target's receive FIFO */
	WEFT_SF_PUT = 6,        /* write: payload follows, placed at a PVO by the target adapter */
	WEFT_SF_RDMAR_FIFO = 7, /* read: RDMA at the data source, data into this receive FIFO */
	WEFT_SF_RDMAR_PUT = 8,  /* read: the data source's program answers with PUT frames */
	/* Conditional RDMA (hw-spec 5.4, seed 1.5.12) */
	WEFT_SF_COND = 9,       /* the next count RDMAW frames gate the RDMAW after them */
	WEFT_SF_COND_CTL = 10,  /* clear / set / query a conditional queue */
};

/* Notification selection.  SOURCE = the initiator (the window that posted
 * the request); TARGET = the remote window named in the request. */
#define WEFT_NOTIFY_NONE        0u
#define WEFT_NOTIFY_SOURCE      1u
#define WEFT_NOTIFY_TARGET      2u
#define WEFT_NOTIFY_BOTH        3u

/* weft_send_hdr.flags */
#define WEFT_SF_DONE            0x80u /* set by the adapter when processed */

/*
 * The seed's 16-byte send header, at the start of a send frame's header
 * line.  The adapter never uses the key field: it stamps the window key
 * from the LMT into the wire packet.  When the frame has been processed,
 * the adapter rewrites the header line with flags |= WEFT_SF_DONE and
 * status = enum weft_reason.
 */
struct weft_send_hdr {
	uint16_t dest_node;     /* node id, WEFT_NODE_BROADCAST or a multicast id */
	uint16_t dest_window;
	uint16_t length;        /* FIFO payload bytes (<= WEFT_MAX_PAYLOAD) */
	uint8_t  type;          /* enum weft_sf_type */
	uint8_t  flags;         /* WEFT_SF_DONE */
	uint32_t key;           /* ignored by the adapter (user value never sent) */
	uint16_t status;        /* written by the adapter: enum weft_reason */
	uint16_t reserved;
};
WEFT_STATIC_ASSERT(sizeof(struct weft_send_hdr) == 16, "send header");

/*
 * RDMA request, following the send header in the header line of an
 * RDMAW / RDMAR / TP_RDMAR pseudo packet.
 *
 * RDMAW: copy length bytes from local_pvo (this node) to remote_pvo at
 *        dest_node/dest_window, through remote_rcxt/remote_rcxt_key.
 * RDMAR: copy length bytes from remote_pvo at dest_node to local_pvo;
 *        the data arrives on local_rcxt; remote_rcxt is the data source's.
 * TP_RDMAR: like RDMAR, but the data goes to tp_node/tp_window (the data
 *        target), placed at local_pvo through tp_rcxt/tp_rcxt_key there;
 *        the completion goes to this (the controlling) node.
 * tid must be larger than the last tid used on the rCxts concerned.
 */
struct weft_rdma_req {
	uint64_t local_pvo;
	uint64_t remote_pvo;
	uint64_t length;
	uint32_t local_rcxt;
	uint32_t remote_rcxt;
	uint16_t remote_rcxt_key;
	uint8_t  notify;        /* WEFT_NOTIFY_* */
	uint8_t  reserved0;
	uint32_t tid;
	uint64_t protocol_cookie;
	uint64_t user_cookie;
	uint16_t tp_node;
	uint16_t tp_window;
	uint32_t tp_rcxt;
	uint16_t tp_rcxt_key;
	uint16_t xflags;        /* PUT: WEFT_RQ_READ_RESP */
	uint32_t offset;        /* PUT: byte offset of this frame's payload */
};

/* weft_rdma_req.xflags */
#define WEFT_RQ_READ_RESP       0x0001u /* PUT frame answering an RDMAR_PUT request */

/*
 * Conditional RDMA (seed 1.5.12).  A COND frame arms conditional queue
 * cond of the window: the next count RDMAW frames of the window are its
 * members (each must ask for a SOURCE completion) and the RDMAW frame
 * after them is its signal.  The adapter sends the signal only once the
 * SOURCE completions of all members have reached it.  A COND_CTL frame
 * runs op on queue cond; every COND and COND_CTL frame gets the queue's
 * state written back into its header line (q_*) when it is marked done.
 */
#define WEFT_NR_COND            8u      /* conditional queues per window */
#define WEFT_COND_MAX_MEMBERS   64u

enum weft_cond_op {
	WEFT_COND_QUERY = 0,    /* only report */
	WEFT_COND_CLEAR = 1,    /* back to IDLE; a held signal is discarded */
	WEFT_COND_SET = 2,      /* q_done = value (may release a held signal) */
};

enum weft_cond_state {
	WEFT_COND_IDLE = 0,
	WEFT_COND_COLLECTING = 1, /* tagging member frames */
	WEFT_COND_WAITING = 2,    /* members tagged, signal frame not seen yet */
	WEFT_COND_HELD = 3,       /* signal held until q_done == q_expect */
	WEFT_COND_FIRED = 4,      /* signal handed to the transmit engine */
};

struct weft_cond_req {
	uint8_t  op;            /* COND_CTL: enum weft_cond_op */
	uint8_t  cond;          /* queue, < WEFT_NR_COND */
	uint16_t reserved0;
	uint32_t value;         /* COND: members (1..64); COND_CTL SET: completions */
	/* written back by the adapter */
	uint32_t q_state;       /* enum weft_cond_state */
	uint32_t q_expect;      /* members of the current round */
	uint32_t q_done;        /* member completions received */
	uint32_t q_tagged;      /* member frames tagged so far */
	uint32_t q_fired;       /* signals sent since the last CLEAR */
	uint32_t reserved1;
};
WEFT_STATIC_ASSERT(sizeof(struct weft_cond_req) == 32, "conditional request");
WEFT_STATIC_ASSERT(sizeof(struct weft_rdma_req) == 72, "rdma request");

/* A whole send header line. */
struct weft_send_line {
	struct weft_send_hdr hdr;
	struct weft_rdma_req rdma;      /* meaningful for RDMA frame types */
	uint8_t pad[WEFT_FRAME_HDR_SIZE - 16 - 72];
};
WEFT_STATIC_ASSERT(sizeof(struct weft_send_line) == WEFT_FRAME_HDR_SIZE, "send line");

/* Receive entry types (weft_recv_hdr.type) */
enum weft_rf_type {
	WEFT_RF_EMPTY = 0,      /* the ULP zeroes the header line when consumed */
	WEFT_RF_FIFO = 1,       /* packet-mode packet, payload follows */
	WEFT_RF_COMPLETION = 2, /* RDMA completion, header only */
	WEFT_RF_DATA = 3,       /* half-RDMA payload (RDMA-sourced), offset/total */
	WEFT_RF_READ_REQ = 4,   /* half-RDMA read request for this window's program */
};

/* weft_recv_hdr.flags */
#define WEFT_RF_VALID           0x01u
#define WEFT_RF_AS_SOURCE       0x02u /* completion: this window initiated */
#define WEFT_RF_AS_TARGET       0x04u /* completion: this window was the remote */
#define WEFT_RF_READ            0x08u /* completion of an RDMA read */
#define WEFT_RF_BROADCAST       0x10u /* packet was sent to the broadcast id */
#define WEFT_RF_LAST            0x20u /* DATA: the transfer's last chunk (by offset) */

/*
 * Receive header line.  Written last (after all payload lines), so a
 * poller that sees flags & WEFT_RF_VALID sees the whole payload.
 */
struct weft_recv_hdr {
	uint8_t  type;          /* enum weft_rf_type */
	uint8_t  flags;         /* WEFT_RF_* */
	uint16_t length;        /* payload bytes (FIFO) */
	uint16_t src_node;
	uint16_t src_window;
	uint32_t seq;           /* low 32 bits of recv_current_cnt for this entry */
	uint32_t rcxt;          /* completion: this window's rCxt */
	uint32_t tid;           /* completion: transaction id */
	uint16_t status;        /* completion: enum weft_reason */
	uint16_t rcxt_key;      /* READ_REQ: the requester's rCxt key */
	uint64_t total_length;  /* completion, DATA, READ_REQ: bytes of the transfer */
	uint64_t protocol_cookie;
	uint64_t user_cookie;
	uint64_t offset;        /* DATA: byte offset of this payload in the transfer */
	uint64_t pvo;           /* DATA: the sender's remote_pvo; READ_REQ: destination PVO */
	uint64_t src_pvo;       /* READ_REQ: the requester's remote_pvo (what to send) */
	uint8_t  pad[WEFT_FRAME_HDR_SIZE - 72];
};
WEFT_STATIC_ASSERT(sizeof(struct weft_recv_hdr) == WEFT_FRAME_HDR_SIZE, "recv header");

/*
 * Event queue entry (32 bytes), written by the adapter into the driver's
 * event queue (EVQ_BASE/EVQ_SIZE) before it presents an interrupt to a
 * ready handler.  seq = index + 1 of the entry, so a stale entry is
 * recognisable after wrap.
 */
enum weft_event_type {
	WEFT_EV_RECV_THRESHOLD = 1, /* window's receive count reached the threshold */
	WEFT_EV_SEND_THRESHOLD = 2, /* window's send count reached the threshold */
	WEFT_EV_WINDOW_FATAL = 3,   /* window moved to FATAL; rcxt/reason set */
	WEFT_EV_PROTECTION = 4,     /* incoming packet discarded on a protection check */
	WEFT_EV_SNAPSHOT_CLEAR = 5, /* Snapshot View became 0 */
	WEFT_EV_LINK = 6,           /* link to the switch went up (info=1) or down (0) */
	WEFT_EV_ADAPTER_FATAL = 7,  /* STATUS.FATAL: the driver must recover the adapter */
	WEFT_EV_VERBS_CQ = 8,       /* verbs: armed CQ rcxt = cqn has a matching CQE */
	WEFT_EV_VERBS_ASYNC = 9,    /* verbs: rcxt = qpn/cqn, info = enum weft_vasync */
	WEFT_EV_CNT_ZERO = 10,      /* counter object rcxt reached 0 (weft/cnt.h) */
	WEFT_EV_CNT_ERROR = 11,     /* counter op failed: rcxt = object, reason = cause */
	WEFT_EV_MATCH_STOPPED = 0x20, /* matching: header queue rcxt stopped on overflow */
};

struct weft_event {
	uint32_t seq;
	uint16_t type;          /* enum weft_event_type */
	uint16_t window;
	uint32_t rcxt;
	uint32_t reason;        /* enum weft_reason */
	uint64_t info;
	uint64_t reserved;
};
WEFT_STATIC_ASSERT(sizeof(struct weft_event) == 32, "event");

#endif /* WEFT_FIFO_H */
