/* SPDX-License-Identifier: MIT */
/*
 * Reasons and counters.  Every discarded packet, discarded command and
 * error has one reason; every reason has a counter readable at
 * WEFT_REG_CNT_BASE + 8 * WEFT_CNT_<name>.
 */
#ifndef WEFT_COUNTERS_H
#define WEFT_COUNTERS_H

#include "weft/types.h"

/* Reasons: used for drops, window fatal errors, completion status and
 * send-frame status.  0 is success. */
#define WEFT_REASON_LIST(X) \
	X(OK,              "success")                                        \
	X(BAD_HEADER,      "malformed packet header or length")              \
	X(BAD_TYPE,        "unknown packet or frame type")                   \
	X(NOT_FOR_US,      "destination node is not this adapter")          \
	X(WINDOW_INVALID,  "window number out of range or window not valid") \
	X(KEY_MISMATCH,    "protection key differs from the window key")    \
	X(FIFO_FULL,       "receive FIFO has no available slot")            \
	X(RCXT_INVALID,    "rCxt out of range or not assigned")             \
	X(RCXT_FOREIGN,    "rCxt owned by another window")                   \
	X(RCXT_KEY,        "rCxt key differs (stale after adapter recovery)") \
	X(TID_STALE,       "tid older than the rCxt's tid")                 \
	X(RCXT_BUSY,       "rCxt busy with another operation")              \
	X(TCE_TABLE,       "PVO names an unconfigured TCE table")            \
	X(TCE_OWNER,       "TCE table not owned by the window's job")       \
	X(TCE_BOUNDS,      "PVO offset beyond the TCE table")               \
	X(TCE_KEY,         "TCE key differs from the PVO key (stale PVO)")  \
	X(DMA_ERROR,       "guest memory access failed")                    \
	X(LENGTH,          "length too large or inconsistent")              \
	X(BCAST_DISABLED,  "broadcast not enabled for this window")         \
	X(NO_LINK,         "no link to the switch")                         \
	X(RX_QUEUE_FULL,   "adapter receive queue full")                    \
	X(CANCELLED,       "operation cancelled")                           \
	X(WINDOW_CLOSED,   "window closed while the operation ran")         \
	X(RESET,           "adapter reset or recovered")                    \
	X(DUPLICATE,       "payload already received for this tid")          \
	X(COND_BUSY,       "conditional queue busy or not collecting")        \
	X(ADAPTER_FATAL,   "adapter stopped by an internal fatal error")  \
	X(QP_INVALID,      "verbs: QP number out of range or not created")  \
	X(QP_STATE,        "verbs: QP state does not allow it")             \
	X(QP_TYPE,         "verbs: operation not valid for the QP type")    \
	X(PSN_DUP,         "verbs: duplicate PSN, already received")        \
	X(PSN_OOS,         "verbs: PSN beyond the expected one")            \
	X(PSN_WINDOW,      "verbs: PSN outside the receive window")         \
	X(QKEY,            "verbs: UD Q_Key mismatch")                      \
	X(STAG_INDEX,      "verbs: STag index out of range or entry free")  \
	X(STAG_INSTANCE,   "verbs: Tag_Instance differs from the entry")    \
	X(STAG_INVALID,    "verbs: TPT entry not valid")                    \
	X(PD_MISMATCH,     "verbs: QP PD differs from the entry PD")        \
	X(STAG_TYPE,       "verbs: region where a window is needed, or the reverse") \
	X(BOUNDS,          "verbs: access outside the entry bounds")        \
	X(ACCESS,          "verbs: access right missing in the entry")      \
	X(BIND_DISABLED,   "verbs: region does not allow window binding")   \
	X(ONE_TOUCH,       "verbs: one-touch entry already used")           \
	X(ATT,             "verbs: address translation entry invalid")      \
	X(RNR,             "verbs: no receive WQE posted")                  \
	X(MSN,             "verbs: read request MSN not the expected one")  \
	X(RRQ_FULL,        "verbs: read-request queue overflow")            \
	X(TERMINATED,      "verbs: connection terminated by the peer")      \
	X(RETRY_EXCEEDED,  "verbs: transport retry count exhausted")        \
	X(RNR_EXCEEDED,    "verbs: RNR retry count exhausted")              \
	X(FLUSHED,         "verbs: work request flushed, QP in error")      \
	X(BAD_WQE,         "verbs: malformed work request")                 \
	X(CQ_INVALID,      "verbs: CQ out of range, not created or in error") \
	X(CQ_OVERFLOW,     "verbs: completion queue full")                  \
	X(UAR_MISMATCH,    "verbs: doorbell from a UAR page that does not own it") \
	X(INV_REFUSED,     "verbs: invalidation refused for this entry")    \
	X(ALIGN,           "verbs: atomic address not 8-byte aligned")      \
	X(STAG_BUSY,       "verbs: entry has windows bound or is in use")   \
	X(INSTANCE_REUSED, "verbs: registration reuses the previous Tag_Instance") \
	X(GID_INVALID,     "verbs: GID index out of range or entry not set") \
	X(GID_TYPE,        "verbs: GID zero or of another type than the entry") \
	X(DGID_UNKNOWN,    "verbs: destination GID not in the GID table") \
	X(SRQ_INVALID,     "verbs: SRQ out of range, not created, or not usable by the QP") \
	/* header matching (weft/match.h, docs/matching.md) */                 \
	X(MATCH_QUEUE,     "match: header queue out of range or matching off") \
	X(MATCH_STOPPED,   "match: header queue stopped after an overflow (RNR NAK)") \
	X(MATCH_STORE_FULL,"match: header store or queue quota full: queue stopped") \
	X(MATCH_NO_BUFFER, "match: UMB full and no host temporary buffer (RNR NAK)") \
	X(MATCH_TOO_SMALL, "match: posted buffer smaller than the message (NAK)") \
	X(MATCH_BAD_OP,    "match: malformed operation or matching header")  \
	X(MATCH_STALE_POST,"match: optimistic post older than the unexpected list") \
	X(MATCH_NOT_FOUND, "match: no posted receive with that id")          \
	X(MATCH_BUSY,      "match: operation and arrival queue full")        \
	X(MATCH_RNDV_SLOT, "match: rendezvous slot invalid, busy or exhausted") \
	X(MATCH_CLAIMED,   "match: posted receive taken by another adapter") \
	X(MATCH_ZERO_WORD, "match: all-zero match word (invalid header)")     \
	X(MATCH_CQ,        "match: completion ring off or not in guest memory") \
	X(MATCH_MODE,      "match: operation not valid in the queue's mode") \
	X(CNT_OBJ_INVALID, "counter: object id out of range or not live")   \
	X(CNT_OBJ_STALE,   "counter: object generation differs (destroyed or reused)") \
	X(CNT_OP_MISMATCH, "counter: no posted operation of this node, slot, sequence and addresses") \
	X(CNT_OUTSIDE,     "counter: chunk outside the operation or the object's pages") \
	X(CNT_NOT_EXPOSED, "counter: remote VA range not inside an exposed range") \
	X(CNT_RIGHTS,      "counter: exposed range lacks the right or excludes the peer") \
	X(CNT_DUP,         "counter: chunk already applied")                \
	X(CNT_TIMEOUT,     "counter: no progress after every resend")     \
	X(TM_BAD_OP,       "tm: malformed tag operation")                  \
	X(TM_HANDLE,       "tm: tag handle out of range or already listed") \
	X(TM_TAGS_FULL,    "tm: tag list quota or header store full")     \
	X(TM_TAG_GONE,     "tm: TAG_DEL of a tag no longer listed (TM_ERR)") \
	X(TM_SYNC_AHEAD,   "tm: unexpected_cnt ahead of the adapter's count") \
	X(TM_BAD_TMH,      "tm: tag-matching header with an unknown opcode") \
	X(TM_NO_QUEUE,     "tm: no free header queue for a tag-matching SRQ") \
	X(TM_QUEUE_LENT,   "match: header queue lent to a tag-matching SRQ") \
	X(TM_RNDV_HDR,     "tm: matched RNDV longer than max_rndv_hdr_size or not one packet: software rendezvous") \
	X(TM_RVH_LEN,      "tm: RVH length above the largest message: refused, software rendezvous") \
	X(TM_RVH_SHORT,    "tm: tagged buffer shorter than the RVH length: software rendezvous") \
	X(TM_RNDV_BUSY,    "tm: every device rendezvous of the QP in use: software rendezvous") \
	X(MATCH_DUP,       "match: duplicate packet or stale ack (re-acknowledged)") \
	X(MATCH_SEQ,       "match: packet out of sequence or of an unknown incarnation (resent)") \
	X(MATCH_BAD_ACK,   "match: ack beyond what was sent or for another incarnation") \
	X(MATCH_NO_ROOM,   "match: no room for a packet's answers: not acknowledged (resent)") \
	X(MATCH_PEER_DEAD, "match: peer did not acknowledge after every resend") \
	X(MATCH_PEERS,     "match: peer channel table full") \
	X(HQ_QUEUE,        "match: QUERY_HQ of a header queue >= 128") \
	X(HQ_BUF,          "match: QUERY_HQ buffer misaligned or not in guest memory") \
	X(HQ_SHORT,        "match: QUERY_HQ buffer shorter than one entry") \
	X(CNT_SLOT,        "counter: QP counter slot out of range or bound to no live event counter") \
	X(CNT_MODE,        "counter: object is not an event counter, or an event bit, EV_SET op or word unknown") \
	X(WAIT_SLOT,       "wait: WAIT_CNT names a slot bound to no live event counter, or its WQE is malformed") \
	X(WAIT_GONE,       "wait: the counter a WAIT_CNT waited on was unbound, rebound or destroyed") \
	X(CQ_MODERATION,   "verbs: MODIFY_CQ count or period above the maximum")

enum weft_reason {
#define WEFT_REASON_ENUM(name, text) WEFT_R_##name,
	WEFT_REASON_LIST(WEFT_REASON_ENUM)
#undef WEFT_REASON_ENUM
	WEFT_R__COUNT
};

/* Counters.  The first block counts traffic; then one drop counter per
 * reason (drop_<reason>, including drop_ok which stays 0). */
#define WEFT_CNT_LIST(X) \
	X(TX_PACKETS)      X(TX_BYTES)        X(RX_PACKETS)      X(RX_BYTES)  \
	X(RX_FIFO_PACKETS) X(RX_COMPLETIONS)  X(TX_FIFO_PACKETS) X(TX_COMPLETIONS) \
	X(SEND_FRAMES)     X(RDMAW_STARTED)   X(RDMAW_DONE)      X(RDMAR_STARTED) \
	X(RDMAR_SERVED)    X(RDMAR_DONE)      X(INTERRUPTS)      X(EVENTS)    \
	X(EVQ_OVERFLOW)    X(WINDOW_FATAL)    X(GUEST_ERRORS)    X(CMD_DISCARDED) \
	X(TX_BLOCKED)      X(RECOVERIES)      X(RESETS)          X(RDMA_RESTARTS) \
	X(V_CMDS)          X(V_DOORBELLS)     X(V_TX_PKTS)       X(V_RX_PKTS) \
	X(V_TX_BYTES)      X(V_RX_BYTES)      X(V_ACKS_TX)       X(V_ACKS_RX) \
	X(V_NAKS_TX)       X(V_NAKS_RX)       X(V_RNR_NAKS_TX)   X(V_RNR_NAKS_RX) \
	X(V_RETRANSMITS)   X(V_TIMEOUTS)      X(V_TERMINATES_TX) X(V_TERMINATES_RX) \
	X(V_CQES)          X(V_CQE_ERRORS)    X(V_CQ_EVENTS)     X(V_OOO_PLACED) \
	X(V_DUP_READS)     X(V_WQES)                                          \
	/* header matching (weft/match.h) */                                  \
	X(M_OPS)           X(M_POSTS)         X(M_ARRIVALS)      X(M_MATCHES) \
	X(M_UNEXPECTED)    X(M_UMB_STORES)    X(M_HOST_STORES)   X(M_OVERFLOWS) \
	X(M_RNR_NAKS)      X(M_NAKS)          X(M_CQES)          X(M_COMPARES) \
	X(M_RNDV)          X(M_LOOPBACK)      X(M_DUMPS)         X(M_SYNCS)  \
	X(M_CLAIMS_LOST)   X(M_REMOVES)                                      \
	/* counter engine (weft/cnt.h) */                                     \
	X(C_REQ_TX)        X(C_REQ_RX)        X(C_DATA_TX)       X(C_DATA_RX) \
	X(C_ERR_TX)        X(C_ERR_RX)        X(C_NOTIFY)        X(C_RESEND) \
	/* tag-matching SRQs (weft/verbs.h) */                                \
	X(V_TM_OPS)        X(V_TM_MATCHED)    X(V_TM_UNEXPECTED) X(V_TM_NO_TAG) \
	X(V_TM_SYNC_REQS)  X(V_TM_RNDV)       X(V_TM_RNDV_DONE)  X(V_TM_RNDV_SW) \
	X(V_TM_RNDV_ERR)                                                      \
	/* interrupt moderation (INT_MOD, docs/hw-spec.md 8.1) */             \
	X(INT_HELD)                                                           \
	/* event counters (weft/cnt.h WEFT_CNT_MODE_EVENT) */                 \
	X(C_EVENTS)        X(C_EVENT_ERRS)                                   \
	/* WAIT_CNT, the verbs form of conditional RDMA (weft/verbs.h) */      \
	X(V_WAITS)         X(V_WAIT_HELD)     X(V_WAIT_WAKES)                   \
	/* CQ event moderation (MODIFY_CQ, weft/verbs.h) */                   \
	X(V_CQ_HELD)

enum weft_counter {
#define WEFT_CNT_ENUM(name) WEFT_CNT_##name,
	WEFT_CNT_LIST(WEFT_CNT_ENUM)
#undef WEFT_CNT_ENUM
	WEFT_CNT_DROP_BASE,
	WEFT_CNT__COUNT = WEFT_CNT_DROP_BASE + WEFT_R__COUNT
};

#define WEFT_CNT_DROP(reason)   (WEFT_CNT_DROP_BASE + (reason))
#define WEFT_REG_CNT(c)         (0x800u + 8u * (unsigned int)(c))

WEFT_STATIC_ASSERT(WEFT_CNT__COUNT <= 256, "counters fit 0x800..0xfff");

#endif /* WEFT_COUNTERS_H */
