/* SPDX-License-Identifier: MIT */
/*
 * Weft adapter hardware interface: PCI identity, BARs, register map,
 * per-window doorbell pages and privileged commands.
 *
 * This header is the single source of truth for the device, the switch,
 * the guest driver, the user library and the tests.  It is plain C that
 * compiles both in user space (C11) and in the Linux kernel.
 * docs/hw-spec.md describes every register in prose.
 *
 * All registers are 64 bits wide, little-endian, at 8-byte aligned offsets.
 * 4-byte accesses are accepted and address the low or the high half.
 */
#ifndef WEFT_HW_H
#define WEFT_HW_H

#include "weft/types.h"
#include "weft/field.h"

/* ---- PCI identity ---------------------------------------------------- */
#define WEFT_PCI_VENDOR_ID      0x1234  /* QEMU's experimental vendor id */
#define WEFT_PCI_DEVICE_ID      0x7765  /* "we" */
#define WEFT_PCI_REVISION       0x01
#define WEFT_PCI_CLASS          0x0207  /* network controller, InfiniBand */

#define WEFT_ID_MAGIC           0x54464557u /* "WEFT" in the low 32 bits of ID */
#define WEFT_HW_VERSION         0x00010000u /* major 1, minor 0: high 32 bits */

/* ---- BARs --------------------------------------------------------------- */
#define WEFT_BAR_REGS           0   /* privileged registers, 64 KiB */
#define WEFT_BAR_MSIX           1   /* MSI-X table and PBA */
#define WEFT_BAR_SRAM           2   /* privileged adapter SRAM aperture */
#define WEFT_BAR_DOORBELL       4   /* 64-bit, one 4 KiB page per window, then
					     * the verbs UAR pages (weft/verbs.h) */

#define WEFT_REGS_SIZE          0x10000u
#define WEFT_DB_PAGE_SIZE       0x1000u

/* ---- Limits and fixed sizes --------------------------------------------- */
#define WEFT_CACHE_LINE         128u
#define WEFT_FRAME_SIZE         2048u   /* FIFO frame = max switch packet */
#define WEFT_FRAME_LINES        (WEFT_FRAME_SIZE / WEFT_CACHE_LINE)
#define WEFT_FRAME_HDR_SIZE     WEFT_CACHE_LINE /* header line of a frame */
#define WEFT_MAX_PAYLOAD        (WEFT_FRAME_SIZE - WEFT_FRAME_HDR_SIZE) /* 1920 */

#define WEFT_MAX_WINDOWS        128u    /* two 64-bit active-window registers */
#define WEFT_DEF_WINDOWS        16u
#define WEFT_NR_TASKS           16u     /* Live Task View / Snapshot View width */
#define WEFT_NR_RX_TASKS        4u      /* tasks 0..3 receive */
#define WEFT_NR_TX_TASKS        4u      /* tasks 4..7 transmit */
#define WEFT_TX_TASK_BASE       4u
#define WEFT_CMD_TASK_BASE      8u      /* tasks 8..15 commands */
#define WEFT_NR_CMD_TASKS       8u
#define WEFT_MIN_RCXT           16u
#define WEFT_MAX_RCXT           131072u
#define WEFT_DEF_RCXT           16384u
#define WEFT_NR_TCE_TABLES      32u
#define WEFT_MAX_HANDLERS       16u     /* interrupt handlers = MSI-X vectors */
#define WEFT_DEF_HANDLERS       4u
#define WEFT_FIFO_MIN_LOG2      1u      /* FIFO size code = log2(frames) */
#define WEFT_FIFO_MAX_LOG2      15u     /* 32768 frames = 64 MiB */
#define WEFT_DEF_QUANTUM        4u      /* default Send_quanta_value */
#define WEFT_EVQ_MIN_LOG2       4u
#define WEFT_EVQ_MAX_LOG2       16u
#define WEFT_RDMA_MAX_LENGTH    (1ull << 28) /* bytes of one RDMA operation */

/* ---- Node ids ------------------------------------------------------------ */
#define WEFT_NODE_MAX_UNICAST   0xEFFFu
#define WEFT_NODE_MCAST_BASE    0xF000u /* 0xF000 + group, group < 256 */
#define WEFT_NR_MCAST_GROUPS    256u
#define WEFT_NODE_BROADCAST     0xFFFFu

/*
 * ---- Privileged register BAR (BAR 0) ----------------------------------
 * X(name, offset, access) where access is RO, RW or WO.
 * Writes to RO registers and reads of WO registers are guest errors:
 * they are logged, and reads return 0.
 */
#define WEFT_REG_LIST(X) \
	X(ID,              0x000, RO) /* WEFT_ID_MAGIC | HW_VERSION << 32 */ \
	X(CAPS,            0x008, RO) /* see WEFT_CAPS_* */                  \
	X(NR_RCXT,         0x010, RO) /* rCxts in the pool */                \
	X(NODE_ID,         0x018, RO) /* this adapter's node id */           \
	X(STATUS,          0x020, RO) /* WEFT_STATUS_* */                    \
	X(RESET,           0x028, WO) /* write WEFT_RESET_MAGIC */           \
	X(RECOVER,         0x030, WO) /* write WEFT_RECOVER_MAGIC */         \
	X(RECOVERY_COUNT,  0x038, RO) /* adapter recoveries so far */        \
	X(ACTIVE_WIN0,     0x040, RO) /* active windows 0..63 */             \
	X(ACTIVE_WIN1,     0x048, RO) /* active windows 64..127 */           \
	X(LIVE_TASK_VIEW,  0x050, RO) /* bit per busy task */                \
	X(SNAPSHOT_VIEW,   0x058, RO) /* Read Snapshot */                    \
	X(CMD_STATUS,      0x060, RO) /* result of last command, WEFT_CMD_* */ \
	X(INT_CONFIG,      0x068, RW) /* WEFT_INT_CONFIG_* */                \
	X(INT_READY,       0x070, WO) /* data = handler: handler is ready */ \
	X(INT_PENDING,     0x078, RO) /* bit per handler with an interrupt presented */ \
	X(EVQ_BASE,        0x080, RW) /* event queue guest address, 64 B aligned */ \
	X(EVQ_SIZE,        0x088, RW) /* log2(entries); 0 disables */        \
	X(EVQ_PROD,        0x090, RO) /* events written (free-running) */    \
	X(EVQ_CONS,        0x098, RW) /* events consumed by the driver */    \
	X(KEY_EPOCH,       0x0a0, RO) /* non-volatile PVO key epoch */       \
	X(KEY_EPOCH_NEXT,  0x0a8, WO) /* write WEFT_EPOCH_MAGIC: epoch + 1 */ \
	X(CMD_OPEN_WINDOW, 0x100, WO) /* data = window */                    \
	X(CMD_CLOSE_WINDOW,0x108, WO) /* data = window */                    \
	X(CMD_ACQUIRE_RCXT,0x110, WO) /* WEFT_ACQ_* packing */               \
	X(CMD_RELEASE_RCXT,0x118, WO) /* data = rCxt id */                   \
	X(CMD_CANCEL_RCXT, 0x120, WO) /* data = rCxt id */                   \
	X(VERBS_NR_QP,     0x140, RO) /* verbs engine (weft/verbs.h): QPs */ \
	X(VERBS_NR_CQ,     0x148, RO) /* CQs */                              \
	X(VERBS_NR_PD,     0x150, RO) /* PDs */                              \
	X(VERBS_NR_TPT,    0x158, RO) /* MR/MW entries */                    \
	X(VERBS_NR_UAR,    0x160, RO) /* UAR doorbell pages */               \
	X(VERBS_UAR_OFF,   0x168, RO) /* BAR 4 offset of UAR page 0 */       \
	X(VERBS_CMD,       0x170, WO) /* guest address of a command block */ \
	X(VERBS_CMD_STATUS,0x178, RO) /* WEFT_CMD_* of the last VERBS_CMD */ \
	X(DEBUG_INJECT,    0x180, WO) /* WEFT_INJECT_*: adapter error injection */ \
	X(CNT_NR_OBJ,      0x1c0, RO) /* counter engine (weft/cnt.h): objects */ \
	X(CNT_NR_EXP,      0x1c8, RO) /* exposure entries */                \
	X(CNT_CMD,         0x1d0, WO) /* guest address of a command block */ \
	X(CNT_CMD_STATUS,  0x1d8, RO) /* WEFT_CMD_* of the last CNT_CMD */

enum weft_reg {
#define WEFT_REG_ENUM(name, off, acc) WEFT_REG_##name = (off),
	WEFT_REG_LIST(WEFT_REG_ENUM)
#undef WEFT_REG_ENUM
};

/* TCE table descriptors: 32 tables of 0x20 bytes from 0x400. */
#define WEFT_REG_TCE_BASE_OFF   0x400u
#define WEFT_REG_TCE_STRIDE     0x20u
#define WEFT_REG_TCE_BASE(t)    (WEFT_REG_TCE_BASE_OFF + (t) * WEFT_REG_TCE_STRIDE + 0x00) /* RW */
#define WEFT_REG_TCE_CFG(t)     (WEFT_REG_TCE_BASE_OFF + (t) * WEFT_REG_TCE_STRIDE + 0x08) /* RW */
#define WEFT_REG_TCE_OWNER(t)   (WEFT_REG_TCE_BASE_OFF + (t) * WEFT_REG_TCE_STRIDE + 0x10) /* RW */
#define WEFT_REG_TCE_END        (WEFT_REG_TCE_BASE_OFF + WEFT_NR_TCE_TABLES * WEFT_REG_TCE_STRIDE)

/* TCE_CFG: number of TCEs and the table's page shift (12, 16 or 24). */
WEFT_FIELD(WEFT_TCE_CFG, NR, 0, 32);
WEFT_FIELD(WEFT_TCE_CFG, PAGE_SHIFT, 32, 8);
#define WEFT_TCE_CFG(nr, shift) \
	(WEFT_FIELD_PREP(WEFT_TCE_CFG, NR, nr) | WEFT_FIELD_PREP(WEFT_TCE_CFG, PAGE_SHIFT, shift))
#define WEFT_TCE_CFG_NR(v)      ((uint32_t)WEFT_FIELD_GET(WEFT_TCE_CFG, NR, v))
#define WEFT_TCE_CFG_SHIFT(v)   ((uint32_t)WEFT_FIELD_GET(WEFT_TCE_CFG, PAGE_SHIFT, v))
#define WEFT_TCE_MAX_ENTRIES    (1u << 20)
/* TCE_OWNER: job id in bits 31:0, bit 63 = ownership valid. */
#define WEFT_TCE_OWNER_VALID    (1ull << 63)

/* Counters: read-only, 8 bytes each, from 0x800 (see weft/counters.h). */
#define WEFT_REG_CNT_BASE       0x800u

/* CAPS */
WEFT_FIELD(WEFT_CAPS, WINDOWS, 0, 8);           /* 1..128 (0 = 256 never) */
WEFT_FIELD(WEFT_CAPS, TASKS, 8, 8);
WEFT_FIELD(WEFT_CAPS, TCE_TABLES, 16, 8);
WEFT_FIELD(WEFT_CAPS, HANDLERS, 24, 8);
#define WEFT_CAPS_WINDOWS(v)    ((uint32_t)WEFT_FIELD_GET(WEFT_CAPS, WINDOWS, v))
#define WEFT_CAPS_TASKS(v)      ((uint32_t)WEFT_FIELD_GET(WEFT_CAPS, TASKS, v))
#define WEFT_CAPS_TCE_TABLES(v) ((uint32_t)WEFT_FIELD_GET(WEFT_CAPS, TCE_TABLES, v))
#define WEFT_CAPS_HANDLERS(v)   ((uint32_t)WEFT_FIELD_GET(WEFT_CAPS, HANDLERS, v))
#define WEFT_CAPS_MAKE(w, t, tt, h) \
	(WEFT_FIELD_PREP(WEFT_CAPS, WINDOWS, w) | WEFT_FIELD_PREP(WEFT_CAPS, TASKS, t) | \
	 WEFT_FIELD_PREP(WEFT_CAPS, TCE_TABLES, tt) | WEFT_FIELD_PREP(WEFT_CAPS, HANDLERS, h))

/* STATUS */
#define WEFT_STATUS_READY       (1ull << 0)
#define WEFT_STATUS_LINK_UP     (1ull << 1)
#define WEFT_STATUS_FATAL       (1ull << 2)

#define WEFT_RESET_MAGIC        0x52455345ull /* "ESER" */
#define WEFT_RECOVER_MAGIC      0x52564352ull /* "RCVR" */
#define WEFT_EPOCH_MAGIC        0x48435045ull /* "EPCH" */
/* DEBUG_INJECT: an adapter-internal fatal error (STATUS.FATAL until
 * RECOVER or RESET). */
#define WEFT_INJECT_FATAL       0x4c544146ull /* "FATL" */

/* INT_CONFIG: number of handlers in bits 7:0 (1..WEFT_MAX_HANDLERS,
 * limited by the MSI-X vectors), bit 8 = early interrupt mode. */
WEFT_FIELD(WEFT_INT_CONFIG, NR_HANDLERS, 0, 8);
WEFT_FIELD(WEFT_INT_CONFIG, EARLY_MODE, 8, 1);
#define WEFT_INT_CONFIG_HANDLERS(v) ((uint32_t)WEFT_FIELD_GET(WEFT_INT_CONFIG, NR_HANDLERS, v))
#define WEFT_INT_CONFIG_EARLY       WEFT_FIELD_PREP(WEFT_INT_CONFIG, EARLY_MODE, 1)

/*
 * INT_MOD(h): interrupt moderation of handler h (docs/hw-spec.md 8.1), RW,
 * 0 after reset (every event interrupts at once).  Period in
 * microseconds in bits 15:0 (0..WEFT_INT_MOD_MAX_US): the handler's
 * interrupts are at least that far apart; an event held back goes out
 * when the period since the handler's last interrupt ends, so no event
 * waits longer than the period.  Count in bits 31:16 (0 = no count): an
 * interrupt goes out without waiting once that many events wait for the
 * handler.  A count needs a period; bits 63:32 must be 0.
 */
#define WEFT_REG_INT_MOD_BASE   0x200u
#define WEFT_REG_INT_MOD(h)     (WEFT_REG_INT_MOD_BASE + 8u * (unsigned int)(h))
#define WEFT_REG_INT_MOD_END    WEFT_REG_INT_MOD(WEFT_MAX_HANDLERS)
#define WEFT_INT_MOD_MAX_US     1000u
WEFT_FIELD(WEFT_INT_MOD, PERIOD_US, 0, 16);
WEFT_FIELD(WEFT_INT_MOD, COUNT, 16, 16);
#define WEFT_INT_MOD(us, count) \
	(WEFT_FIELD_PREP(WEFT_INT_MOD, PERIOD_US, us) | WEFT_FIELD_PREP(WEFT_INT_MOD, COUNT, count))
#define WEFT_INT_MOD_US(v)      ((uint32_t)WEFT_FIELD_GET(WEFT_INT_MOD, PERIOD_US, v))
#define WEFT_INT_MOD_COUNT(v)   ((uint32_t)WEFT_FIELD_GET(WEFT_INT_MOD, COUNT, v))

/* CMD_ACQUIRE_RCXT data: rCxt id 31:0, window 47:32, key 63:48. */
WEFT_FIELD(WEFT_ACQ, RCXT_ID, 0, 32);
WEFT_FIELD(WEFT_ACQ, WINDOW_NR, 32, 16);
WEFT_FIELD(WEFT_ACQ, RCXT_KEY, 48, 16);
#define WEFT_ACQ(rcxt, win, key) \
	(WEFT_FIELD_PREP(WEFT_ACQ, RCXT_ID, rcxt) | WEFT_FIELD_PREP(WEFT_ACQ, WINDOW_NR, win) | \
	 WEFT_FIELD_PREP(WEFT_ACQ, RCXT_KEY, key))
#define WEFT_ACQ_RCXT(v)        ((uint32_t)WEFT_FIELD_GET(WEFT_ACQ, RCXT_ID, v))
#define WEFT_ACQ_WINDOW(v)      ((uint32_t)WEFT_FIELD_GET(WEFT_ACQ, WINDOW_NR, v))
#define WEFT_ACQ_KEY(v)         ((uint16_t)WEFT_FIELD_GET(WEFT_ACQ, RCXT_KEY, v))

/* CMD_STATUS values */
enum weft_cmd_status {
	WEFT_CMD_OK = 0,
	WEFT_CMD_EINVAL = 1,      /* bad window / rCxt index */
	WEFT_CMD_EBADLMT = 2,     /* OPEN_WINDOW: LMT fields inconsistent */
	WEFT_CMD_EBUSY = 3,       /* window already valid / rCxt assigned */
	WEFT_CMD_ESTATE = 4,      /* command not allowed in this state */
	WEFT_CMD_ENOMEM = 5,      /* verbs: adapter memory budget exhausted */
	WEFT_CMD_EFAULT = 6,      /* verbs: command block or ring not in guest RAM */
};

/*
 * ---- Doorbell BAR (BAR 4): page w belongs to window w ------------------
 * A user process maps exactly its window's page.  The address selects the
 * window (page number) and the operation (offset); the data is the operand.
 */
#define WEFT_DB_LIST(X) \
	X(START_TRANSMIT,   0x000, WO) /* data = frames added to readyToSend */ \
	X(RETURN_SLOTS,     0x008, WO) /* data = receive slots returned */   \
	X(RECV_THRESHOLD,   0x010, WO) /* data = recv count to interrupt at */ \
	X(SEND_THRESHOLD,   0x018, WO) /* data = send count to interrupt at */ \
	X(STATE,            0x020, RO) /* LMT window_state */                \
	X(SEND_READY,       0x028, RO) /* send_fifo_ready_slots */           \
	X(RECV_AVAIL,       0x030, RO) /* recv_fifo_avail_slots */           \
	X(RECV_COUNT,       0x038, RO) /* recv_current_cnt */                \
	X(SEND_COUNT,       0x040, RO) /* send_current_cnt */

enum weft_db_reg {
#define WEFT_DB_ENUM(name, off, acc) WEFT_DB_##name = (off),
	WEFT_DB_LIST(WEFT_DB_ENUM)
#undef WEFT_DB_ENUM
};

/* Threshold values that disable the interrupt. */
#define WEFT_THRESHOLD_OFF0     0u
#define WEFT_THRESHOLD_OFF1     0xffffffffu

#endif /* WEFT_HW_H */
