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
	X(ADAPTER_FATAL,   "adapter stopped by an internal fatal error")

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
	X(TX_BLOCKED)      X(RECOVERIES)      X(RESETS)          X(RDMA_RESTARTS)

enum weft_counter {
#define WEFT_CNT_ENUM(name) WEFT_CNT_##name,
	WEFT_CNT_LIST(WEFT_CNT_ENUM)
#undef WEFT_CNT_ENUM
	WEFT_CNT_DROP_BASE,
	WEFT_CNT__COUNT = WEFT_CNT_DROP_BASE + WEFT_R__COUNT
};

#define WEFT_CNT_DROP(reason)   (WEFT_CNT_DROP_BASE + (reason))
#define WEFT_REG_CNT(c)         (0x800u + 8u * (unsigned int)(c))

WEFT_STATIC_ASSERT(WEFT_CNT__COUNT <= 128, "counters fit 0x800..0xbff");

#endif /* WEFT_COUNTERS_H */
