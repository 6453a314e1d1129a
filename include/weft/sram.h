/* SPDX-License-Identifier: MIT */
/*
 * Adapter SRAM layout: one LMT (Local Mapping Table) per window and the
 * pool of rCxt RDMA contexts.  The SRAM is reachable by privileged code
 * through the SRAM aperture (BAR 2); the adapter re-validates every field
 * it uses, because the SRAM is writable by the driver at any time.
 *
 *   0x00000  LMT[0..WEFT_MAX_WINDOWS-1], 256 bytes each (CB0 + CB1)
 *   0x10000  rCxt[0..nr_rcxt-1], 128 bytes each
 *
 * The aperture size is the next power of two of the used size.
 */
#ifndef WEFT_SRAM_H
#define WEFT_SRAM_H

#include "weft/types.h"

#define WEFT_SRAM_LMT_BASE      0x0u
#define WEFT_LMT_SIZE           256u
#define WEFT_SRAM_RCXT_BASE     0x10000u
#define WEFT_RCXT_SIZE          128u
#define WEFT_SRAM_LMT_OFF(w)    (WEFT_SRAM_LMT_BASE + (uint64_t)(w) * WEFT_LMT_SIZE)
#define WEFT_SRAM_RCXT_OFF(r)   (WEFT_SRAM_RCXT_BASE + (uint64_t)(r) * WEFT_RCXT_SIZE)

/* Window_state */
enum weft_window_state {
	WEFT_WIN_INVALID = 0,   /* never opened, or reset: everything discarded */
	WEFT_WIN_VALID = 1,     /* open: sends and receives are processed */
	WEFT_WIN_CLOSED = 2,    /* Close Window issued: everything discarded */
	WEFT_WIN_FATAL = 3,     /* window fatal error: everything discarded */
};

/*
 * LMT: every field of the seed's LMT listing, in seed order where the
 * widths allow, plus the fields the model needs (marked "model").
 * FIFO sizes are encoded as log2(number of 2 KiB frames); the masks must
 * equal frames - 1.  FIFO addresses are guest-physical, 2 KiB aligned,
 * physically contiguous, and are not translated through TCEs.
 */
struct weft_lmt {
	uint64_t recv_fifo_real_address;  /* 0x00 */
	uint32_t window_state;            /* 0x08 enum weft_window_state */
	uint32_t recv_fifo_size;          /* 0x0c log2(frames) */
	uint32_t window_id;               /* 0x10 must equal the LMT index */
	uint32_t recv_mask;               /* 0x14 frames - 1 */
	uint64_t recv_current_cnt;        /* 0x18 entries written, free-running */
	uint32_t recv_fifo_avail_slots;   /* 0x20 0 = full, packets dropped */
	uint32_t recv_int_threshold;      /* 0x24 interrupt when cnt reaches it */
	uint32_t window_key;              /* 0x28 protection key = job id */
	uint32_t rcxt_id;                 /* 0x2c rCxt of the last window fatal error */
	uint32_t int_vect_data;           /* 0x30 handler for this window's events */
	uint32_t fatal_reason;            /* 0x34 model: enum weft_reason of the fatal error */
	uint64_t send_fifo_real_address;  /* 0x38 */
	uint32_t config_parm_bcast;       /* 0x40 1 = may send broadcast/multicast */
	uint32_t send_fifo_size;          /* 0x44 log2(frames) */
	uint32_t send_quanta_value;       /* 0x48 packets left in the current quantum */
	uint32_t send_mask;               /* 0x4c frames - 1 */
	uint64_t send_current_cnt;        /* 0x50 send frames completed, free-running */
	uint32_t send_fifo_ready_slots;   /* 0x58 readyToSend */
	uint32_t send_int_threshold_hi;   /* 0x5c send interrupt threshold */
	uint32_t rcxt_head;               /* 0x60 RDMA send queue (RDMAR data source) */
	uint32_t rcxt_tail;               /* 0x64 */
	uint32_t rcxt_count;              /* 0x68 */
	uint32_t send_quanta_size;        /* 0x6c model: k, packets per quantum (>= 1) */
	uint64_t send_progress;           /* 0x70 model: bytes of the current RDMAW frame sent */
	uint32_t send_rcxt;               /* 0x78 model: rCxt of the current RDMAW frame */
	uint32_t flags;                   /* 0x7c model: WEFT_LMT_F_* */
	uint64_t recv_dropped;            /* 0x80 model: packets dropped on a full FIFO */
	uint8_t  reserved[0x100 - 0x88];
};
WEFT_STATIC_ASSERT(sizeof(struct weft_lmt) == WEFT_LMT_SIZE, "LMT size");

#define WEFT_LMT_F_EARLY_INT    (1u << 0) /* raise the receive interrupt before the header line */
#define WEFT_LMT_F_PVO_FATAL    (1u << 1) /* incoming data with a stale PVO: window fatal error */

#define WEFT_RCXT_NONE          0xffffffffu /* end of an rCxt chain */

/* Rcxt_state */
enum weft_rcxt_state {
	WEFT_RCXT_FREE = 0,       /* idle (assigned or not) */
	WEFT_RCXT_SEND_QUEUED = 1,/* on the window's LMT RDMA send queue */
	WEFT_RCXT_RECEIVING = 2,  /* at least one packet received, not complete */
	WEFT_RCXT_SENDING = 3,    /* local RDMAW or queued RDMAR payload being sent */
};

enum weft_rcxt_dir {
	WEFT_RCXT_DIR_SEND = 0,
	WEFT_RCXT_DIR_RECV = 1,
};

/*
 * rCxt: every field of the seed's rCxt listing plus the fields the text
 * uses but the listing omits (tid, outstanding DMA count, the two PVOs and
 * the initiator), marked "model".
 */
struct weft_rcxt {
	uint16_t lid;                     /* 0x00 remote (source/target) node id */
	uint16_t remote_window;           /* 0x02 */
	uint16_t local_window;            /* 0x04 owning window */
	uint8_t  rcxt_assigned;           /* 0x06 1 = assigned to local_window */
	uint8_t  pkt_type;                /* 0x07 enum weft_pkt_type of the operation */
	uint16_t rcxt_key;                /* 0x08 recovery count at acquisition */
	uint8_t  complete_status;         /* 0x0a enum weft_reason, 0 = success */
	uint8_t  rcxt_direction;          /* 0x0b enum weft_rcxt_dir */
	uint8_t  rcxt_state;              /* 0x0c enum weft_rcxt_state */
	uint8_t  notify_on_completion;    /* 0x0d WEFT_NOTIFY_* */
	uint16_t payload_size;            /* 0x0e payload bytes per packet */
	uint32_t tid;                     /* 0x10 model: current transaction id */
	uint32_t outstanding_dma;         /* 0x14 model: DMAs issued, not yet done */
	uint64_t data_to_snd_rcv;         /* 0x18 bytes remaining */
	uint64_t total_rdma_size;         /* 0x20 */
	uint64_t rdma_protocol_cookie;    /* 0x28 */
	uint64_t rdma_usr_cookie;         /* 0x30 */
	uint32_t data_source_rcxt;        /* 0x38 */
	uint32_t data_target_rcxt;        /* 0x3c */
	uint32_t next;                    /* 0x40 next rCxt in the send chain */
	uint16_t remote_rcxt_key;         /* 0x44 model: key of the peer's rCxt */
	uint16_t initiator_node;          /* 0x46 model: node that posted the request */
	uint64_t local_pvo;               /* 0x48 model: local buffer (source when sending) */
	uint64_t remote_pvo;              /* 0x50 model: remote buffer */
	uint16_t initiator_window;        /* 0x58 model */
	uint16_t ctl_node;                /* 0x5a model: completion node (third party) */
	uint16_t ctl_window;              /* 0x5c model */
	uint16_t reserved0;               /* 0x5e */
	uint32_t ctl_rcxt;                /* 0x60 model: completion rCxt (third party) */
	uint16_t ctl_rcxt_key;            /* 0x64 model */
	uint8_t  reserved[WEFT_RCXT_SIZE - 0x66];
};
WEFT_STATIC_ASSERT(sizeof(struct weft_rcxt) == WEFT_RCXT_SIZE, "rCxt size");

#endif /* WEFT_SRAM_H */
