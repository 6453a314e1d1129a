/* SPDX-License-Identifier: MIT */
/*
 * Weft verbs engine: the adapter's second personality (seeds 002 and 004,
 * docs/hw-spec.md section "Verbs engine").
 *
 * Objects (PDs, CQs, QPs and the memory TPT of MR/MW entries) live in
 * adapter memory, sized by device properties; the driver creates and
 * destroys them with commands and can dump each entry with a query
 * command.  Work queues (SQ, RQ) and completion queues are rings in guest
 * memory.  Doorbells are in UAR pages of BAR 4, after the seed 000 window
 * pages; each QP and CQ belongs to one UAR page, so a driver can map one
 * page into one user context (kernel bypass, as pvrdma and mlx do).
 *
 * Every value read from guest memory (commands, WQEs, page lists, the CQ
 * consumer index) is copied once and checked before use.
 *
 * All fields are little-endian.
 */
#ifndef WEFT_VERBS_H
#define WEFT_VERBS_H

#include "weft/types.h"
#include "weft/field.h"

/* ---- Object counts (device properties) ----------------------------------- */
#define WEFT_VERBS_DEF_QP       4096u
#define WEFT_VERBS_DEF_CQ       4096u
#define WEFT_VERBS_DEF_PD       1024u
#define WEFT_VERBS_DEF_TPT      65536u
#define WEFT_VERBS_DEF_UAR      512u
#define WEFT_VERBS_MAX_QP       (1u << 20)
#define WEFT_VERBS_MAX_CQ       (1u << 20)
#define WEFT_VERBS_MAX_PD       (1u << 20)
#define WEFT_VERBS_MAX_TPT      (1u << 24)   /* Tag_Index is 24 bits */
#define WEFT_VERBS_MAX_UAR      4096u

/* ---- Fixed limits ---------------------------------------------------------- */
#define WEFT_VERBS_MTU          4096u   /* payload bytes per packet (IB_MTU_4096) */
#define WEFT_VERBS_MAX_MSG      (1u << 31) /* bytes of one message */
#define WEFT_VERBS_WQ_MAX_LOG2  15u     /* 32768 WQEs per SQ or RQ */
#define WEFT_VERBS_CQ_MAX_LOG2  17u     /* 131072 CQEs */
#define WEFT_VERBS_MAX_RD_ATOMIC 16u    /* read-request queue depth */
#define WEFT_VERBS_GSI_QPN      1u      /* QP1: the GSI (UD) */
#define WEFT_VERBS_GSI_QKEY     0x80010000u
#define WEFT_VERBS_GRH_SIZE     40u     /* header before every UD receive */
#define WEFT_VERBS_PORT         1u      /* the adapter's one port (IB numbering) */
#define WEFT_VERBS_GID_TBL      32u     /* GID table entries of the port */
#define WEFT_VERBS_PSN_MASK     0xffffffu /* PSNs are 24 bits */
#define WEFT_VERBS_RX_WINDOW    64u     /* PSNs a responder places ahead of order */

/* ---- STag -------------------------------------------------------------------- */
/* STag = Tag_Index (24 bits, entry number) << 8 | Tag_Instance (8 bits). */
WEFT_FIELD(WEFT_STAG, TAG_INSTANCE, 0, 8);
WEFT_FIELD(WEFT_STAG, TAG_INDEX, 8, 24);
#define WEFT_STAG(index, inst) \
	((uint32_t)(WEFT_FIELD_PREP(WEFT_STAG, TAG_INDEX, index) | \
		    WEFT_FIELD_PREP(WEFT_STAG, TAG_INSTANCE, inst)))
#define WEFT_STAG_INDEX(s)      ((uint32_t)WEFT_FIELD_GET(WEFT_STAG, TAG_INDEX, (uint32_t)(s)))
#define WEFT_STAG_INSTANCE(s)   ((uint32_t)WEFT_FIELD_GET(WEFT_STAG, TAG_INSTANCE, s))

/* ---- BAR 0 registers (in WEFT_REG_LIST of weft/hw.h) ------------------------- */
/*   VERBS_NR_QP .. VERBS_NR_UAR  RO  object counts of this adapter
 *   VERBS_UAR_OFF                RO  offset of UAR page 0 in BAR 4
 *   VERBS_CMD                    WO  guest address of a command block
 *                                    (128 bytes, 64-byte aligned): runs it
 *   VERBS_CMD_STATUS             RO  enum weft_cmd_status of the last one */

/* ---- UAR doorbell pages (BAR 4, from VERBS_UAR_OFF, 4 KiB each) ----------- */
/* X(name, offset, access); all write-only, 8-byte writes. */
#define WEFT_UAR_LIST(X) \
	X(SQ_DB,   0x000, WO) /* qpn 23:0, SQ producer index 63:32 */     \
	X(RQ_DB,   0x008, WO) /* qpn 23:0, RQ producer index 63:32 */     \
	X(CQ_ARM,  0x010, WO) /* cqn 23:0, WEFT_CQ_ARM_* 31:24, ci 63:32 */  \
	X(SRQ_DB,  0x018, WO) /* srqn 23:0, SRQ producer index 63:32 */     \
	X(SRQ_TM_DB, 0x020, WO) /* srqn 23:0, tag-op producer index 63:32 */

enum weft_uar_reg {
#define WEFT_UAR_ENUM(name, off, acc) WEFT_UAR_##name = (off),
	WEFT_UAR_LIST(WEFT_UAR_ENUM)
#undef WEFT_UAR_ENUM
};

/* A UAR doorbell word: object 23:0, arm flags 31:24, index 63:32. */
WEFT_FIELD(WEFT_UAR, OBJ_NR, 0, 24);
WEFT_FIELD(WEFT_UAR, ARM_FLAGS, 24, 8);
WEFT_FIELD(WEFT_UAR, PROD_IDX, 32, 32);
#define WEFT_UAR_DB(obj, idx) \
	(WEFT_FIELD_PREP(WEFT_UAR, OBJ_NR, obj) | WEFT_FIELD_PREP(WEFT_UAR, PROD_IDX, idx))
#define WEFT_UAR_ARM(cqn, flags, ci) \
	(WEFT_FIELD_PREP(WEFT_UAR, OBJ_NR, cqn) | WEFT_FIELD_PREP(WEFT_UAR, ARM_FLAGS, flags) | \
	 WEFT_FIELD_PREP(WEFT_UAR, PROD_IDX, ci))
#define WEFT_UAR_OBJ(v)         ((uint32_t)WEFT_FIELD_GET(WEFT_UAR, OBJ_NR, v))
#define WEFT_UAR_FLAGS(v)       ((uint32_t)WEFT_FIELD_GET(WEFT_UAR, ARM_FLAGS, v))
#define WEFT_UAR_IDX(v)         ((uint32_t)WEFT_FIELD_GET(WEFT_UAR, PROD_IDX, v))

enum weft_cq_arm {
	WEFT_CQ_ARM_NEXT = 1,       /* event on the next CQE */
	WEFT_CQ_ARM_SOLICITED = 2,  /* event on a solicited or error CQE */
};

/* ---- Commands ---------------------------------------------------------------- */
/*
 * A command block is 128 bytes in guest memory: the request (struct
 * weft_vcmd, 64 bytes) followed by the response (struct weft_vcmd_resp,
 * 64 bytes), which the adapter writes before VERBS_CMD returns.  The
 * object number (handle) is chosen by the driver.
 */
/* Commands, X(NAME, value); new ones go at the end. */
#define WEFT_VCMD_LIST(X) \
	X(CREATE_PD, 1)   /* handle = pdn */ \
	X(DESTROY_PD, 2) \
	X(CREATE_CQ, 3)   /* handle = cqn, u.cq */ \
	X(DESTROY_CQ, 4) \
	X(CREATE_QP, 5)   /* handle = qpn, u.qp */ \
	X(MODIFY_QP, 6)   /* handle = qpn, u.mod */ \
	X(DESTROY_QP, 7) \
	X(ALLOC_STAG, 8)  /* handle = STag, u.mr (type, pd, flags) */ \
	X(REG_MR, 9)      /* handle = STag, u.mr */ \
	X(DEREG_STAG, 10) /* handle = STag: frees the entry */ \
	X(QUERY_QP, 11)   /* handle = qpn: struct weft_vqpc at u.query.addr */ \
	X(QUERY_CQ, 12)   /* handle = cqn: struct weft_vcqc */ \
	X(QUERY_TPT, 13)  /* handle = Tag_Index: struct weft_tpt_entry */ \
	X(QUERY_PD, 14)   /* handle = pdn: resp.out[0] = 1 if created, out[1] = refs */ \
	X(SET_GID, 15)    /* handle = GID index, u.gid */ \
	X(CLEAR_GID, 16)  /* handle = GID index, u.gid.port */ \
	X(QUERY_GID, 17)  /* handle = GID index: struct weft_vgid_entry at u.query.addr */ \
	X(CREATE_SRQ, 18) /* handle = srqn (1 .. VERBS_NR_QP - 1), u.srq */ \
	X(MODIFY_SRQ, 19) /* handle = srqn, u.srq.limit: arms the limit event */ \
	X(QUERY_SRQ, 20)  /* handle = srqn: struct weft_vsrqc at u.query.addr */ \
	X(DESTROY_SRQ, 21) /* handle = srqn */ \
	X(RESIZE_CQ, 22)  /* handle = cqn, u.cq ring_addr, ci_addr, log2_entries: resp.out[0] = prod */ \
	X(QUERY_HQ, 23)   /* handle = header queue, u.hq: struct weft_match_dump entries; out[0..2] */ \
	X(MODIFY_CQ, 24)  /* handle = cqn, u.cq_mod: event moderation (count, period) */

enum weft_vcmd_op {
#define WEFT_VCMD_ENUM(name, val) WEFT_VCMD_##name = (val),
	WEFT_VCMD_LIST(WEFT_VCMD_ENUM)
#undef WEFT_VCMD_ENUM
};

/*
 * CQ event moderation (MODIFY_CQ, docs/hw-spec.md 16.7 "Moderation"): the
 * event an armed CQ raises waits until count CQEs that match the arm have
 * been written, or period_us microseconds have passed since the first of
 * them, whichever comes first; 0 turns each bound off, both 0 (the state
 * at CREATE_CQ) raise the event at the first matching CQE.
 */
#define WEFT_VERBS_CQ_MOD_MAX_COUNT 65535u  /* cq_caps.max_cq_moderation_count */
#define WEFT_VERBS_CQ_MOD_MAX_US    4095u   /* cq_caps.max_cq_moderation_period */

/*
 * Shared receive queues: a ring of receive WQEs (struct weft_vrwqe, as an
 * RQ) in guest memory, taken in ring order by every QP created with its
 * number.  The adapter copies a WQE when a message starts and then
 * writes its consumer index (u32, free-running) at ci_addr, so the
 * driver reuses slots up to it.  SRQs are numbered 1 .. VERBS_NR_QP - 1.
 */
#define WEFT_VSRQF_PRIV         0x01u /* kernel SRQ: only WEFT_VQPF_PRIV QPs attach */
#define WEFT_VSRQF_TM           0x02u /* tag-matching SRQ (rdma-core IBV_SRQT_TM) */

/*
 * Tag-matching SRQs (docs/matching.md "Tag-matching verbs"): an SRQ with
 * WEFT_VSRQF_TM also holds a tag list of at most tm_max_tags entries, kept
 * in one header queue of the matching engine (weft/match.h) lent to it, and
 * a ring of 2^tm_log2 tag operations (struct weft_vtmop) in guest memory
 * that software fills and announces with SRQ_TM_DB (kernel bypass).  The
 * adapter publishes its tag-operation consumer index (u32) at ci_addr + 4
 * (ci_addr 8-byte aligned).  Every completion of the SRQ (tag operations,
 * matched, unexpected and NO_TAG messages) goes to CQ tm_cq.  An RC SEND
 * arriving on a QP attached to it starts with a TMH (struct weft_vtmh).
 */
#define WEFT_VERBS_TM_MAX_TAGS  8192u   /* tags per SRQ (tm_caps.max_num_tags) */
#define WEFT_VERBS_TM_OPS_LOG2  10u     /* tag-operation ring (tm_caps.max_ops) */
#define WEFT_VERBS_TM_MAX_SGE   1u      /* SGEs per tagged buffer */
/* RVH rendezvous done by the adapter (docs/matching.md "Device
 * rendezvous"): an RNDV message of at most WEFT_VERBS_TM_RNDV_HDR bytes
 * (TMH, RVH and software's bytes after them; tm_caps.max_rndv_hdr_size)
 * that matches a tag is read from the sender with an RDMA READ on the
 * same QP, then answered with a FIN; at most WEFT_VERBS_TM_RNDV_MAX of
 * them per QP at a time. */
#define WEFT_VERBS_TM_RNDV_HDR  64u
#define WEFT_VERBS_TM_RNDV_MAX  8u

/* GID entry types (RoCE v2): the network header a UD packet from or to
 * the GID carries. */
enum weft_vgid_type {
	WEFT_VGID_IPV4 = 1,         /* ::ffff:a.b.c.d, IPv4 header */
	WEFT_VGID_IPV6 = 2,         /* any other non-zero GID, IPv6 header */
};

enum weft_vqp_type {
	WEFT_VQPT_RC = 1,
	WEFT_VQPT_UD = 2,           /* also QP1 (GSI) */
	WEFT_VQPT_UC = 3,           /* SEND and WRITE, no ACK (16.16) */
};

/* Create-QP flags */
#define WEFT_VQPF_SQ_REG        0x01u /* SQ-based registration allowed (fast reg) */
#define WEFT_VQPF_REG_OPT_B     0x02u /* registration error: option B (ERR + Terminate) */
#define WEFT_VQPF_PRIV          0x04u /* kernel QP: may name physical (ATT_PHYS) regions */

enum weft_vqp_state {
	WEFT_VQPS_RESET = 0,
	WEFT_VQPS_INIT = 1,
	WEFT_VQPS_RTR = 2,
	WEFT_VQPS_RTS = 3,
	WEFT_VQPS_SQD = 4,
	WEFT_VQPS_SQE = 5,  /* send queue error (seed 002 option A "SQ drained") */
	WEFT_VQPS_ERR = 6,
};

/* MODIFY_QP attribute mask: the bit values of IB's enum ib_qp_attr_mask. */
#define WEFT_VQPA_STATE         (1u << 0)
#define WEFT_VQPA_CUR_STATE     (1u << 1)
#define WEFT_VQPA_ACCESS        (1u << 3)
#define WEFT_VQPA_PKEY_INDEX    (1u << 4)
#define WEFT_VQPA_PORT          (1u << 5)
#define WEFT_VQPA_QKEY          (1u << 6)
#define WEFT_VQPA_AV            (1u << 7)
#define WEFT_VQPA_PATH_MTU      (1u << 8)
#define WEFT_VQPA_TIMEOUT       (1u << 9)
#define WEFT_VQPA_RETRY_CNT     (1u << 10)
#define WEFT_VQPA_RNR_RETRY     (1u << 11)
#define WEFT_VQPA_RQ_PSN        (1u << 12)
#define WEFT_VQPA_MAX_QP_RD_ATOMIC (1u << 13)
#define WEFT_VQPA_MIN_RNR_TIMER (1u << 15)
#define WEFT_VQPA_SQ_PSN        (1u << 16)
#define WEFT_VQPA_MAX_DEST_RD_ATOMIC (1u << 17)
#define WEFT_VQPA_DEST_QPN      (1u << 20)

/* Access bits of TPT entries and of QP remote access (MODIFY_QP access). */
#define WEFT_VACC_LOCAL_READ    0x01u
#define WEFT_VACC_LOCAL_WRITE   0x02u
#define WEFT_VACC_REMOTE_READ   0x04u
#define WEFT_VACC_REMOTE_WRITE  0x08u
#define WEFT_VACC_REMOTE_ATOMIC 0x10u
#define WEFT_VACC_MW_BIND       0x20u /* Window Binding: windows may bind to this region */
#define WEFT_VACC_REMOTE        (WEFT_VACC_REMOTE_READ | WEFT_VACC_REMOTE_WRITE | \
				 WEFT_VACC_REMOTE_ATOMIC)
#define WEFT_VACC_ALL           0x3fu

enum weft_tpt_type {
	WEFT_TPT_FREE = 0,
	WEFT_TPT_MR = 1,        /* region */
	WEFT_TPT_MW1 = 2,       /* window, type 1 (bound by any QP of its PD) */
	WEFT_TPT_MW2 = 3,       /* window, type 2 (bound to one QP) */
};

/* TPT entry flags */
#define WEFT_TPTF_VALID         0x01u
#define WEFT_TPTF_ONE_TOUCH     0x02u /* One Touch Enabled */
#define WEFT_TPTF_TOUCHED       0x04u /* early Last segment seen, stored_psn set */
#define WEFT_TPTF_FAST_REG      0x08u /* may be (re)registered by a REG_MR WQE */

/* Address translation control. */
enum weft_att_level {
	WEFT_ATT_DIRECT = 0,    /* att_addr -> page list (u64 per page) */
	WEFT_ATT_IND1 = 1,      /* att_addr -> 512 pointers -> page lists of 512 */
	WEFT_ATT_IND2 = 2,      /* att_addr -> 512 -> 512 -> page lists of 512 */
	WEFT_ATT_PHYS = 3,      /* VA = guest-physical address (privileged QPs only) */
};
#define WEFT_ATT_FANOUT         512u    /* u64 per indirect page */
/* Page shifts a region may use. */
#define WEFT_ATT_MIN_SHIFT      12u
#define WEFT_ATT_MAX_SHIFT      28u

struct weft_vcmd {
	uint8_t  op;                    /* enum weft_vcmd_op */
	uint8_t  reserved0[3];
	uint32_t handle;
	union {
		struct {                /* CREATE_CQ */
			uint64_t ring_addr;     /* 64-byte aligned */
			uint64_t ci_addr;       /* u32 consumer index, 4-byte aligned */
			uint32_t log2_entries;  /* 1 .. WEFT_VERBS_CQ_MAX_LOG2 */
			uint32_t vector;        /* interrupt handler for events */
			uint32_t uar;
			uint32_t reserved[7];
		} cq;
		struct {                /* CREATE_QP */
			uint64_t sq_addr, rq_addr;      /* 64-byte aligned */
			uint32_t type;          /* enum weft_vqp_type */
			uint32_t pd, send_cq, recv_cq, uar;
			uint8_t  sq_log2, sq_stride_log2; /* stride 7..9 */
			uint8_t  rq_log2, rq_stride_log2; /* stride 5..9 */
			uint32_t flags;         /* WEFT_VQPF_* */
			uint32_t srq;           /* 0, or the SRQ receives come from (no RQ) */
			uint32_t reserved[2];
		} qp;
		struct {                /* MODIFY_QP */
			uint32_t mask;          /* WEFT_VQPA_* */
			uint8_t  state, cur_state, access, path_mtu; /* mtu: 1..5 */
			uint32_t qkey;
			uint32_t dest_qpn;
			uint16_t dest_node;
			uint8_t  timeout;       /* 4.096 us << timeout; 0 = none */
			uint8_t  retry_cnt;     /* 0..7 */
			uint8_t  rnr_retry;     /* 0..7, 7 = infinite */
			uint8_t  min_rnr_timer; /* 0..31 */
			uint8_t  max_rd_atomic, max_dest_rd_atomic;
			uint32_t sq_psn, rq_psn;
			uint32_t reserved[6];
		} mod;
		struct {                /* ALLOC_STAG, REG_MR */
			uint64_t va;
			uint64_t length;
			uint64_t att_addr;
			uint32_t pd;
			uint8_t  type;          /* enum weft_tpt_type (ALLOC_STAG) */
			uint8_t  access;        /* WEFT_VACC_* */
			uint8_t  page_shift;
			uint8_t  att_level;     /* enum weft_att_level */
			uint8_t  flags;         /* WEFT_TPTF_FAST_REG */
			uint8_t  reserved[15];
		} mr;
		struct {                /* CREATE_SRQ, MODIFY_SRQ (limit only) */
			uint64_t ring_addr;     /* 64-byte aligned */
			uint64_t ci_addr;       /* u32 consumer index, 4-byte aligned: the
						 * adapter writes it at each take (the driver
						 * starts it at 0) */
			uint32_t pd;            /* the QPs attached have this PD */
			uint32_t uar;
			uint32_t vector;        /* interrupt handler for its async events */
			uint32_t limit;         /* 0 = disarmed; else event when fewer WQEs */
			uint8_t  log2;          /* 0 .. WEFT_VERBS_WQ_MAX_LOG2 */
			uint8_t  stride_log2;   /* 5 .. 9, as an RQ */
			uint8_t  flags;         /* WEFT_VSRQF_* */
			uint8_t  tm_log2;       /* TM: tag-operation ring 2^n, 0..10 */
			uint32_t tm_cq;         /* TM: CQ of all its completions */
			uint32_t tm_max_tags;   /* TM: 1 .. WEFT_VERBS_TM_MAX_TAGS */
			uint32_t reserved;
			uint64_t tm_ring;       /* TM: tag-operation ring, 64-byte aligned */
		} srq;
		struct {                /* SET_GID, CLEAR_GID */
			uint8_t  gid[16];       /* network byte order, as in union ib_gid */
			uint8_t  type;          /* enum weft_vgid_type (SET_GID) */
			uint8_t  port;          /* WEFT_VERBS_PORT */
			uint8_t  reserved[38];
		} gid;
		struct {                /* MODIFY_CQ */
			uint32_t count;         /* 0 .. WEFT_VERBS_CQ_MOD_MAX_COUNT CQEs */
			uint32_t period_us;     /* 0 .. WEFT_VERBS_CQ_MOD_MAX_US */
			uint32_t uar;           /* the CQ's UAR page (its owner) */
			uint32_t reserved[11];
		} cq_mod;
		struct {                /* QUERY_* */
			uint64_t addr;          /* where the entry is written */
			uint64_t reserved[6];
		} query;
		struct {                /* QUERY_HQ: a snapshot of one list of a header queue */
			uint64_t addr;          /* 8-byte aligned, [addr, addr + len) guest RAM */
			uint32_t len;           /* bytes: at least one entry (32) */
			uint32_t flags;         /* WEFT_HQF_UEQ */
			uint64_t reserved[5];
		} hq;
		uint8_t raw[56];
	} u;
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vcmd) == 64, "verbs command");

struct weft_vcmd_resp {
	uint32_t status;                /* enum weft_cmd_status */
	uint32_t reason;                /* enum weft_reason */
	uint64_t out[7];
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vcmd_resp) == 64, "verbs command response");
#define WEFT_VCMD_BLOCK_SIZE    128u

/* ---- Work queue entries ---------------------------------------------------- */
enum weft_vwqe_op {
	WEFT_VWR_SEND = 0,
	WEFT_VWR_SEND_IMM = 1,
	WEFT_VWR_SEND_INV = 2,      /* imm_inv = STag invalidated at the responder */
	WEFT_VWR_WRITE = 3,
	WEFT_VWR_WRITE_IMM = 4,
	WEFT_VWR_READ = 5,
	WEFT_VWR_CAS = 6,           /* 8 bytes at remote_addr; one 8-byte SGE gets the old value */
	WEFT_VWR_FAA = 7,
	WEFT_VWR_REG_MR = 8,        /* fast registration: u.reg */
	WEFT_VWR_LOCAL_INV = 9,     /* imm_inv = STag to invalidate */
	WEFT_VWR_BIND_MW = 10,      /* u.bind */
	WEFT_VWR_WAIT_CNT = 11,     /* hold the SQ until the event counter bound to
				     * cnt_slot counts u.wait.threshold successes
				     * (docs/counters.md "Waiting on a counter") */
	WEFT_VWR__COUNT
};

#define WEFT_VWQE_SIGNALED      0x01u
#define WEFT_VWQE_SOLICITED     0x02u
#define WEFT_VWQE_FENCE         0x04u
#define WEFT_VWQE_INLINE        0x08u /* SEND* and WRITE*: the data is in the slot
				       * (struct weft_vinline), num_sge is 0 */

struct weft_vsge {
	uint64_t addr;                  /* VA inside the region named by lkey */
	uint32_t length;
	uint32_t lkey;                  /* STag of a region */
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vsge) == 16, "sge");

/*
 * SQ WQE: this 64-byte header, then num_sge SGEs; the slot size is
 * 1 << sq_stride_log2 (128, 256 or 512 bytes: 4, 12 or 28 SGEs).
 */
struct weft_vwqe {
	uint64_t wr_id;
	uint8_t  opcode;                /* enum weft_vwqe_op */
	uint8_t  flags;                 /* WEFT_VWQE_* */
	uint8_t  num_sge;
	uint8_t  cnt_slot;              /* 0, or the QP's counter slot (weft/cnt.h BIND_QP)
					 * that counts this WQE's completion; WAIT_CNT:
					 * the slot whose counter it waits on */
	uint32_t imm_inv;               /* immediate data or STag */
	union {
		struct {                /* WRITE*, READ, CAS, FAA */
			uint64_t remote_addr;
			uint32_t rkey;
			uint32_t reserved;
			uint64_t compare_add;   /* CAS: compare; FAA: add */
			uint64_t swap;
			uint64_t reserved2[2];
		} rdma;
		struct {                /* UD SEND* (the address handle) */
			uint32_t dest_qpn;
			uint32_t qkey;          /* bit 31 set: the QP's own qkey */
			uint16_t dest_node;
			uint8_t  sgid_index;    /* entry of the GID table: source GID */
			uint8_t  hop_limit;
			uint8_t  traffic_class;
			uint8_t  reserved[3];
			uint8_t  dgid[16];      /* destination GID, same type as the source */
			uint32_t flow_label;    /* 20 bits */
			uint32_t reserved2[3];
		} ud;
		struct {                /* REG_MR */
			uint64_t va;
			uint64_t length;
			uint64_t att_addr;
			uint32_t stag;          /* new STag: new Tag_Instance */
			uint8_t  access;
			uint8_t  page_shift;
			uint8_t  att_level;
			uint8_t  reserved;
			uint64_t reserved2;
		} reg;
		struct {                /* BIND_MW */
			uint64_t va;            /* window start, inside the region */
			uint64_t length;        /* 0 unbinds */
			uint32_t mw_stag;       /* new STag of the window */
			uint32_t mr_stag;       /* region it binds to */
			uint8_t  access;        /* remote bits only */
			uint8_t  one_touch;     /* 1 = One Touch Enabled */
			uint8_t  reserved[6];
			uint64_t reserved2;
		} bind;
		struct {                /* WAIT_CNT */
			uint64_t threshold;     /* passes when the success count >= this */
			uint64_t reserved[5];
		} wait;
	} u;
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vwqe) == 64, "send wqe");

/*
 * Inline data of a WQE with WEFT_VWQE_INLINE: this 16-byte header right
 * after struct weft_vwqe, then length bytes, all inside the slot, so at
 * most (1 << sq_stride_log2) - 80 bytes (48, 176 or 432).  The adapter
 * reads them when it sends the WQE (again after a go-back), so the slot
 * holds them until the WQE completes.
 */
struct weft_vinline {
	uint32_t length;
	uint32_t reserved[3];
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vinline) == 16, "inline header");
#define WEFT_VERBS_MAX_INLINE   (512u - 64u - 16u)

/* RQ WQE: this 16-byte header, then num_sge SGEs; slot 1 << rq_stride_log2. */
struct weft_vrwqe {
	uint64_t wr_id;
	uint8_t  num_sge;
	uint8_t  reserved[7];
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vrwqe) == 16, "recv wqe");

/* ---- Completion queue entry (32 bytes) --------------------------------------- */
enum weft_vwc_status {      /* numbered like IB's enum ib_wc_status */
	WEFT_VWC_SUCCESS = 0,
	WEFT_VWC_LOC_LEN_ERR = 1,
	WEFT_VWC_LOC_QP_OP_ERR = 2,
	WEFT_VWC_LOC_PROT_ERR = 4,
	WEFT_VWC_WR_FLUSH_ERR = 5,
	WEFT_VWC_MW_BIND_ERR = 6,
	WEFT_VWC_BAD_RESP_ERR = 7,
	WEFT_VWC_LOC_ACCESS_ERR = 8,
	WEFT_VWC_REM_INV_REQ_ERR = 9,
	WEFT_VWC_REM_ACCESS_ERR = 10,
	WEFT_VWC_REM_OP_ERR = 11,
	WEFT_VWC_RETRY_EXC_ERR = 12,
	WEFT_VWC_RNR_RETRY_EXC_ERR = 13,
	WEFT_VWC_REM_ABORT_ERR = 17,
	WEFT_VWC_GENERAL_ERR = 21,
	WEFT_VWC_TM_ERR = 22,           /* TAG_DEL of a tag already consumed */
	WEFT_VWC_TM_RNDV_INCOMPLETE = 23,
};

enum weft_vwc_op {
	WEFT_VWC_SEND = 0,
	WEFT_VWC_RDMA_WRITE = 1,
	WEFT_VWC_RDMA_READ = 2,
	WEFT_VWC_COMP_SWAP = 3,
	WEFT_VWC_FETCH_ADD = 4,
	WEFT_VWC_BIND_MW = 5,
	WEFT_VWC_LOCAL_INV = 6,
	WEFT_VWC_REG_MR = 7,
	WEFT_VWC_WAIT_CNT = 8,          /* a WAIT_CNT passed (rdma-core IBV_WC_DRIVER1) */
	WEFT_VWC_RECV = 0x80,
	WEFT_VWC_RECV_RDMA_IMM = 0x81,
	WEFT_VWC_TM_ADD = 0x82,         /* tag-matching SRQ: tag operations */
	WEFT_VWC_TM_DEL = 0x83,
	WEFT_VWC_TM_SYNC = 0x84,
	WEFT_VWC_TM_RECV = 0x85,        /* a tagged message (matched or unexpected) */
	WEFT_VWC_TM_NO_TAG = 0x86,      /* a NO_TAG message in an SRQ buffer */
};

#define WEFT_VCQE_WITH_IMM      0x01u
#define WEFT_VCQE_WITH_INV      0x02u
#define WEFT_VCQE_GRH           0x04u
#define WEFT_VCQE_SOLICITED     0x08u
#define WEFT_VCQE_IS_SQ         0x10u
#define WEFT_VCQE_NET_IPV4      0x20u   /* UD receive: the 40 bytes are 20 zeros + IPv4 header */
#define WEFT_VCQE_NET_IPV6      0x40u   /* UD receive: the 40 bytes are an IPv6 header */
/* Flags of WEFT_VWC_TM_* CQEs (bits 0x01 and 0x02 mean these there). */
#define WEFT_VCQE_TM_MATCH      0x01u   /* a tag matched: wqe_index = its handle */
#define WEFT_VCQE_TM_DATA_VALID 0x02u   /* the data is in the tagged buffer */
#define WEFT_VCQE_TM_SYNC_REQ   0x80u   /* software must report unexpected_cnt */

/*
 * The adapter writes bytes 0..30 first, then owner: owner bit 0 is 1 in
 * the first pass over the ring, 0 in the second, and so on; CQE i is
 * valid when (owner & 1) == !((i >> log2_entries) & 1).
 */
struct weft_vcqe {
	uint64_t wr_id;
	uint32_t qpn;
	uint32_t byte_len;              /* error CQE: the enum weft_reason instead */
	uint32_t imm_inv;               /* immediate (WITH_IMM) or invalidated STag (WITH_INV) */
	uint32_t src_qpn;               /* UD receives: source QP */
	uint16_t src_node;              /* UD receives: source node */
	uint16_t wqe_index;             /* SQ/RQ slot (low 16 bits of the index) */
	uint8_t  opcode;                /* enum weft_vwc_op */
	uint8_t  status;                /* enum weft_vwc_status */
	uint8_t  flags;                 /* WEFT_VCQE_* */
	uint8_t  owner;
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vcqe) == 32, "cqe");

/*
 * WEFT_VWC_TM_* CQEs of a tag-matching SRQ:
 *   TM_ADD/DEL/SYNC  wr_id = the operation's, qpn = the srqn, wqe_index =
 *                    its handle; an
 *                    error status has the enum weft_reason in byte_len.
 *   TM_RECV, TM_MATCH set: wr_id = the message's 64-bit tag, imm_inv = the
 *                    TMH app_ctx, wqe_index = the tag's handle (software
 *                    knows the tag's recv_wr_id by it), byte_len = payload
 *                    bytes without the TMH.  One CQE with MATCH|DATA_VALID
 *                    for a one-packet message; else MATCH at the first
 *                    packet and DATA_VALID alone at the last.
 *   TM_RECV without TM_MATCH: unexpected: the whole message (TMH included)
 *                    in the SRQ WQE wr_id, slot wqe_index.
 *   TM_NO_TAG        a NO_TAG or FIN message, or one shorter than a TMH,
 *                    whole in an SRQ WQE; not counted as unexpected.
 */

/* ---- Tag operations (tag-matching SRQ ring, 64 bytes) ------------------------ */
enum weft_vtm_op {
	WEFT_VTM_ADD = 1,           /* add tag handle (software-chosen, < tm_max_tags) */
	WEFT_VTM_DEL = 2,           /* remove tag handle (TM_ERR if consumed) */
	WEFT_VTM_SYNC = 3,          /* only report unexpected_cnt */
};

#define WEFT_VTMF_SIGNALED      0x01u   /* completion even on success */
#define WEFT_VTMF_SYNC          0x02u   /* unexpected_cnt is valid (IBV_OPS_TM_SYNC) */
#define WEFT_VTMF_VALID         0x03u

struct weft_vtmop {
	uint64_t wr_id;
	uint8_t  opcode;                /* enum weft_vtm_op */
	uint8_t  flags;                 /* WEFT_VTMF_* */
	uint8_t  num_sge;               /* ADD: 0 or 1 */
	uint8_t  reserved0;
	uint32_t unexpected_cnt;        /* with SYNC: unexpected messages software took */
	uint32_t handle;
	uint32_t reserved1;
	uint64_t tag;                   /* ADD: match when (msg tag & mask) == tag */
	uint64_t mask;
	uint64_t reserved2;
	struct weft_vsge sge;           /* ADD: the tagged buffer */
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vtmop) == 64, "tag operation");

/* Tag-matching header at the start of a SEND (rdma-core tm_types.h: struct
 * ibv_tmh, big-endian), and the rendezvous header after it. */
enum weft_vtmh_op {
	WEFT_TMH_NO_TAG = 0,
	WEFT_TMH_RNDV = 1,
	WEFT_TMH_FIN = 2,
	WEFT_TMH_EAGER = 3,
};

struct weft_vtmh {
	uint8_t  opcode;                /* enum weft_vtmh_op */
	uint8_t  reserved[3];
	uint32_t app_ctx;               /* big-endian */
	uint64_t tag;                   /* big-endian */
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vtmh) == 16, "tmh");

struct weft_vrvh {
	uint64_t va;                    /* big-endian */
	uint32_t rkey;
	uint32_t len;
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vrvh) == 16, "rvh");

/* Event queue entries for verbs (struct weft_event of weft/fifo.h):
 *   WEFT_EV_VERBS_CQ:    rcxt = cqn; an armed CQ got a matching CQE.
 *   WEFT_EV_VERBS_ASYNC: rcxt = qpn or cqn, reason, info = enum weft_vasync. */
enum weft_vasync {
	WEFT_VASYNC_QP_FATAL = 1,       /* QP went to ERR (reason says why) */
	WEFT_VASYNC_CQ_ERR = 2,         /* CQ overflow or ring DMA error */
	WEFT_VASYNC_SQ_DRAINED = 3,     /* QP went to SQE (option A) */
	WEFT_VASYNC_SRQ_LIMIT = 4,      /* rcxt = srqn: fewer WQEs than the armed limit */
	WEFT_VASYNC_LAST_WQE = 5,       /* QP on an SRQ in ERR: its last WQE completed */
};

/* ---- Dumps (QUERY_* commands) ------------------------------------------------ */
/* TPT entry, as the adapter holds it (64 bytes). */
struct weft_tpt_entry {
	uint32_t stag;                  /* Tag_Index << 8 | Tag_Instance */
	uint32_t pd;
	uint8_t  type;                  /* enum weft_tpt_type */
	uint8_t  flags;                 /* WEFT_TPTF_* */
	uint8_t  access;                /* WEFT_VACC_* */
	uint8_t  page_shift;
	uint8_t  att_level;             /* enum weft_att_level */
	uint8_t  reserved0[3];
	uint64_t va;                    /* start VA (TO of byte 0) */
	uint64_t length;
	uint64_t att_addr;              /* region: ATT root */
	uint32_t parent;                /* window: STag of the bound region */
	uint32_t qpn;                   /* type 2 window: the QP it is bound to */
	uint32_t bind_count;            /* region: windows bound to it */
	uint32_t stored_psn;            /* one-touch: PSN of the early Last segment */
	uint64_t reserved1;
};
WEFT_STATIC_ASSERT(sizeof(struct weft_tpt_entry) == 64, "tpt entry");

/* QP context dump (128 bytes). */
struct weft_vqpc {
	uint32_t qpn;
	uint8_t  type, state, access, flags;
	uint32_t pd, send_cq, recv_cq, uar;
	uint32_t qkey, dest_qpn;
	uint16_t dest_node;
	uint8_t  retry_cnt, rnr_retry, timeout, min_rnr_timer, max_rd_atomic, max_dest_rd_atomic;
	uint32_t sq_prod, sq_ci, sq_next;
	uint32_t rq_prod, rq_ci;
	uint32_t snd_psn, snd_una;      /* requester: next PSN, oldest unacknowledged */
	uint32_t epsn, msn, rd_emsn;    /* responder: expected PSN, MSN, read MSN */
	uint32_t retries_left, rnr_left;
	uint32_t rrq_count;
	uint32_t last_reason;           /* enum weft_reason that moved it to ERR/SQE */
	uint64_t sq_addr, rq_addr;
	uint8_t  sq_log2, sq_stride_log2, rq_log2, rq_stride_log2;
	uint32_t srq;                   /* 0 or the SRQ it receives from */
	uint32_t reserved[2];
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vqpc) == 128, "qp context");

/* GID table entry dump (32 bytes). */
struct weft_vgid_entry {
	uint8_t  gid[16];
	uint8_t  valid;
	uint8_t  type;                  /* enum weft_vgid_type */
	uint8_t  port;
	uint8_t  reserved[13];
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vgid_entry) == 32, "gid entry");

/* SRQ context dump (64 bytes). */
struct weft_vsrqc {
	uint32_t srqn;
	uint8_t  created, log2, stride_log2, flags;
	uint64_t ring_addr, ci_addr;
	uint32_t prod;                  /* producer index of the last SRQ_DB */
	uint32_t ci;                    /* WQEs taken, free-running */
	uint32_t pd, uar, vector;
	uint32_t limit;                 /* armed limit, 0 after the event */
	uint32_t refs;                  /* QPs attached */
	uint16_t tm_queue;              /* TM: the header queue lent to it */
	uint16_t tm_tags;               /* TM: tags listed */
	uint32_t tm_unexpected;         /* TM: unexpected messages delivered */
	uint32_t tm_sw;                 /* TM: unexpected_cnt software reported */
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vsrqc) == 64, "srq context");

/* CQ context dump (64 bytes). */
struct weft_vcqc {
	uint32_t cqn;
	uint8_t  created, arm, error, log2_entries;
	uint64_t ring_addr, ci_addr;
	uint32_t prod;                  /* CQEs written, free-running */
	uint32_t ci;                    /* consumer index last read */
	uint32_t vector, uar, refs;
	uint16_t mod_count;             /* MODIFY_CQ count, 0 = off */
	uint16_t mod_period_us;         /* MODIFY_CQ period, 0 = off */
	uint32_t mod_cqes;              /* CQEs that matched the arm and wait for the event */
	uint32_t reserved[3];
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vcqc) == 64, "cq context");

/* ---- Wire: verbs packets ------------------------------------------------------ */
/*
 * A verbs packet is a struct weft_wire_hdr with type WEFT_PKT_VERBS (the
 * seed 000 fields dst_window .. reserved1 are 0), then this 64-byte
 * transport header, then up to WEFT_VERBS_MTU data bytes.
 */
/* Transport opcodes, X(NAME, value); new ones go at the end. */
#define WEFT_VOP_LIST(X) \
	X(SEND, 1)        /* RC send (FIRST/LAST segments, IMM, INV, SE) */ \
	X(WRITE, 2)       /* RC RDMA write; every packet carries va/rkey */ \
	X(READ_REQ, 3)    /* va/rkey/dma_len; msn = read MSN; spans n PSNs */ \
	X(READ_RESP, 4)   /* psn = request psn + i; va = offset in the read */ \
	X(CAS, 5)         /* va/rkey, compare, swap_add; msn = read MSN */ \
	X(FAA, 6) \
	X(ATOMIC_RESP, 7) /* swap_add = original value */ \
	X(ACK, 8)         /* syndrome = enum weft_vack; psn = last acked/nakked */ \
	X(TERMINATE, 9)   /* syndrome = enum weft_reason cause; psn = offending */ \
	X(UD_SEND, 10)    /* qkey; struct weft_vaddr then data; one packet */

enum weft_vop {
#define WEFT_VOP_ENUM(name, val) WEFT_VOP_##name = (val),
	WEFT_VOP_LIST(WEFT_VOP_ENUM)
#undef WEFT_VOP_ENUM
};

#define WEFT_VF_FIRST   0x01u
#define WEFT_VF_LAST    0x02u
#define WEFT_VF_SE      0x04u   /* solicited event */
#define WEFT_VF_ACKREQ  0x08u
#define WEFT_VF_IMM     0x10u
#define WEFT_VF_INV     0x20u

enum weft_vack {
	WEFT_VACK_ACK = 0,
	WEFT_VACK_NAK_SEQ = 1,      /* out of sequence: resend from psn */
	WEFT_VACK_NAK_RNR = 2,      /* no receive WQE; msn = RNR timer code */
};

struct weft_vhdr {
	uint8_t  opcode;                /* enum weft_vop */
	uint8_t  flags;                 /* WEFT_VF_* */
	uint16_t reserved0;
	uint32_t dst_qpn;
	uint32_t src_qpn;
	uint32_t psn;                   /* 24 bits */
	uint32_t msn;
	uint32_t imm_inv;
	uint64_t va;
	uint32_t rkey;
	uint32_t dma_len;               /* bytes of the whole message / read */
	uint64_t swap_add;
	uint64_t compare;
	uint32_t syndrome;
	uint32_t qkey;
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vhdr) == 64, "verbs transport header");

/* RoCE v2 addressing of a UD_SEND: follows struct weft_vhdr, before the
 * data (which stays at most WEFT_VERBS_MTU bytes). */
struct weft_vaddr {
	uint8_t  sgid[16];
	uint8_t  dgid[16];
	uint32_t flow_label;            /* 20 bits */
	uint8_t  traffic_class;
	uint8_t  hop_limit;
	uint8_t  reserved[2];
};
WEFT_STATIC_ASSERT(sizeof(struct weft_vaddr) == WEFT_VERBS_GRH_SIZE, "verbs UD address");

#endif /* WEFT_VERBS_H */
