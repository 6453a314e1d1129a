/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * Weft ib_device user/kernel ABI (docs/verbs-linux.md): the driver data
 * that weft_ib.ko and the rdma-core provider exchange through ib_uverbs'
 * udata, next to the core's own request and response structures.
 *
 * The formats of everything the provider reads and writes afterwards
 * (SQ/RQ WQEs, CQEs, UAR doorbells) are the adapter's, in weft/verbs.h
 * (docs/hw-spec.md section 16); this header only says where they are.
 *
 * Rings are allocated by the kernel (physically contiguous, as the
 * adapter requires) and mapped by the provider with mmap() on the uverbs
 * command fd at the offsets returned here, length exactly the returned
 * size, MAP_SHARED.  The doorbell (UAR) page is one 4 KiB page per
 * ucontext, mapped write-only the same way.
 *
 * Every structure is a multiple of 8 bytes; reserved fields are 0 on
 * input (the kernel refuses anything else with EINVAL) and on output.
 */
#ifndef WEFT_IB_ABI_H
#define WEFT_IB_ABI_H

#include <linux/types.h>

/* ops.uverbs_abi_ver: the provider's match_min/max_abi_version. */
#define WEFT_IB_UVERBS_ABI_VERSION	1
/* Version of the ring, WQE and CQE formats of weft/verbs.h. */
#define WEFT_IB_RING_FORMAT		1

/* The provider matches the PCI function (VERBS_PCI_MATCH) on
 * WEFT_PCI_VENDOR_ID:WEFT_PCI_DEVICE_ID of weft/hw.h, driver_id
 * RDMA_DRIVER_UNKNOWN.
 */

/* ---- ibv_open_device: alloc_ucontext ----------------------------------- */
struct weft_ib_alloc_ucontext_resp {
	__u32 ring_format;	/* WEFT_IB_RING_FORMAT */
	__u32 uar_index;	/* this context's UAR page (QPs, CQs name it) */
	__aligned_u64 db_mmap_offset;	/* mmap offset of the UAR page */
	__u32 db_mmap_size;	/* 4096 */
	__u32 cqe_size;		/* 32: struct weft_vcqe */
	__u32 sq_stride_min_log2;	/* 7 (128-byte slots, 4 SGEs) */
	__u32 sq_stride_max_log2;	/* 9 (512-byte slots, 28 SGEs) */
	__u32 rq_stride_min_log2;	/* 5 */
	__u32 rq_stride_max_log2;	/* 9 */
	__u32 max_wq_log2;	/* largest SQ or RQ: 1 << this slots */
	__u32 max_cq_log2;	/* largest CQ: 1 << this CQEs */
	__u32 max_ring_bytes;	/* no ring is larger than this */
	__u32 grh_size;		/* 40: bytes before every UD receive */
};

/* ---- ibv_create_cq ------------------------------------------------------ */
/* No request data: the ring is sized by the core's cqe (rounded up to a
 * power of two, at least 2 slots).
 */
struct weft_ib_create_cq_resp {
	__u32 cqn;		/* CQ number (weft_vcqe does not carry it) */
	__u32 log2_entries;	/* ring of 1 << log2_entries CQEs */
	__aligned_u64 ring_mmap_offset;
	__u32 ring_mmap_size;	/* page-rounded mapping length */
	__u32 ci_offset;	/* offset in the mapping of the u32 consumer
				 * index the provider writes (free-running)
				 */
};

/* ---- ibv_create_qp (RC, UD) --------------------------------------------- */
/* No request data: the kernel picks the slot stride from max_send_sge and
 * max_recv_sge and the slot counts from max_send_wr/max_recv_wr (powers
 * of two); the core's response carries the resulting capabilities.
 */
struct weft_ib_create_qp_resp {
	__u32 qpn;
	__u32 uar_index;	/* equals the context's */
	__u8  sq_log2, sq_stride_log2;	/* SQ: 1 << sq_log2 slots */
	__u8  rq_log2, rq_stride_log2;	/* RQ: 0/0 when the QP has an SRQ */
	__u32 reserved;
	__aligned_u64 sq_mmap_offset;
	__aligned_u64 rq_mmap_offset;
	__u32 sq_mmap_size;
	__u32 rq_mmap_size;
};

/* ---- ibv_create_srq, ibv_create_srq_ex ----------------------------------- */
/* The kernel sizes the ring from max_wr and max_sge (powers of two) and
 * returns the resulting attributes in the core's response.  The mapping
 * holds the ring, then at ci_offset the u32 consumer index the adapter
 * writes (free-running): the provider may reuse every slot before it.
 * A tag-matching SRQ (IBV_SRQT_TM, hw-spec 16.15) asks for a ring of
 * 1 << tm_log2 tag operations (the request is all zero otherwise); the
 * adapter's tag-operation consumer index is the u32 at ci_offset + 4 and
 * the operation ring starts at tm_ops_offset of the same mapping.
 */
struct weft_ib_create_srq_req {
	__u32 tm_log2;		/* TM: 0 .. WEFT_VERBS_TM_OPS_LOG2 */
	__u32 reserved;
};

struct weft_ib_create_srq_resp {
	__u32 srqn;
	__u8  log2, stride_log2;	/* 1 << log2 slots of 1 << stride_log2 bytes */
	__u16 reserved;
	__aligned_u64 ring_mmap_offset;
	__u32 ring_mmap_size;	/* page-rounded mapping length */
	__u32 ci_offset;
	__u32 tm_ops_offset;	/* TM: the tag-operation ring */
	__u32 tm_log2;
};

/* ---- ibv_create_ah (user UD address handles) ---------------------------- */
/* The provider writes dest_node into weft_vwqe.u.ud.dest_node of each
 * UD send; the kernel derived it from the AH's destination MAC (the Weft
 * MAC 02:57:46:AA:NN:NN carries the node id NN:NN, docs/net.md).
 */
struct weft_ib_create_ah_resp {
	__u16 dest_node;
	__u16 reserved0;
	__u32 reserved1;
};

/* ---- ibv_resize_cq ------------------------------------------------------ */
/* No request data.  The kernel gives the CQ a new ring and consumer-index
 * word (hw-spec 16.7, "Resizing"), a new mapping laid out as at create;
 * the old mapping stays valid, unused, until the provider unmaps it.  The
 * consumer index does not change: the CQEs not yet polled are in the new
 * ring at the same indexes.
 */
struct weft_ib_resize_cq_resp {
	__u32 log2_entries;
	__u32 ci_offset;
	__aligned_u64 ring_mmap_offset;
	__u32 ring_mmap_size;
	__u32 reserved;
};

/* ---- Event counters (weftdv_create_counter, docs/counters.md) ------------ */
/* A driver object of ib_uverbs' ioctl interface (the driver namespace,
 * UVERBS_ID_DRIVER_NS = 1 << 12): an EVENT counter of the adapter
 * (weft/cnt.h) whose 16-byte status block (struct weft_cnt_ev_block) is
 * the first bytes of a page the provider maps read-only at the returned
 * offset, length 4096.  BIND names a QP of the same context (its handle)
 * and a counter slot 1..3; events are WEFT_CNT_EV_* (weft/cnt.h).  A send
 * WQE's cnt_slot names the slot (weft/verbs.h).
 */
#define WEFT_IB_NS			(1u << 12)

/* ibv_post_send: bits 29..28 of a work request's send_flags (no
 * IBV_SEND_* flag uses them) name the counter slot 1..3 its completion
 * counts on; the provider copies them into weft_vwqe.cnt_slot.
 */
#define WEFT_IB_SEND_CNT_SHIFT		28
#define WEFT_IB_SEND_CNT_SLOT(n)	((unsigned int)(n) << WEFT_IB_SEND_CNT_SHIFT)
#define WEFT_IB_SEND_CNT_SLOT_GET(f)	(((unsigned int)(f) >> WEFT_IB_SEND_CNT_SHIFT) & 3u)

/* ibv_post_send on an RC QP, opcode IBV_WR_DRIVER1: WAIT_CNT (weft/verbs.h
 * WEFT_VWR_WAIT_CNT, docs/rdma-provider.md "Waiting on a counter").  The
 * slot in send_flags (required) names the counter it waits on, and
 * wr.atomic.compare_add the count of successes it waits for; no SGE, not
 * inline.  The work requests after it wait in the adapter until then; its
 * completion (if signaled, or an error) is IBV_WC_DRIVER1.
 */

enum weft_ib_objects {
	WEFT_IB_OBJECT_CNTR = WEFT_IB_NS,
};

enum weft_ib_cntr_methods {
	WEFT_IB_METHOD_CNTR_CREATE = WEFT_IB_NS,
	WEFT_IB_METHOD_CNTR_DESTROY,
	WEFT_IB_METHOD_CNTR_BIND,
	WEFT_IB_METHOD_CNTR_SET,
};

enum weft_ib_cntr_create_attrs {
	WEFT_IB_ATTR_CNTR_CREATE_HANDLE = WEFT_IB_NS,
	WEFT_IB_ATTR_CNTR_CREATE_MMAP,	/* out: __aligned_u64 mmap offset */
};

enum weft_ib_cntr_destroy_attrs {
	WEFT_IB_ATTR_CNTR_DESTROY_HANDLE = WEFT_IB_NS,
};

enum weft_ib_cntr_bind_attrs {
	WEFT_IB_ATTR_CNTR_BIND_HANDLE = WEFT_IB_NS,
	WEFT_IB_ATTR_CNTR_BIND_QP,	/* the QP's handle */
	WEFT_IB_ATTR_CNTR_BIND_SLOT,	/* in: __u32, 1 .. 3 */
	WEFT_IB_ATTR_CNTR_BIND_EVENTS,	/* in: __u32, WEFT_CNT_EV_* */
};

/* fi_cntr_add / fi_cntr_set in the adapter (weft/cnt.h EV_SET). */
enum weft_ib_cntr_set_attrs {
	WEFT_IB_ATTR_CNTR_SET_HANDLE = WEFT_IB_NS,
	WEFT_IB_ATTR_CNTR_SET_OP,	/* in: __u32, WEFT_CNT_EV_ADD or _SET */
	WEFT_IB_ATTR_CNTR_SET_WORD,	/* in: __u32, WEFT_CNT_EV_COUNT or _ERRORS */
	WEFT_IB_ATTR_CNTR_SET_VALUE,	/* in: __aligned_u64 */
	WEFT_IB_ATTR_CNTR_SET_RESULT,	/* out: __aligned_u64, the word's new value */
};

/* Doorbell offsets within the UAR page (weft/verbs.h WEFT_UAR_LIST):
 * SQ_DB 0x000, RQ_DB 0x008, CQ_ARM 0x010, SRQ_DB 0x018, SRQ_TM_DB 0x020;
 * 8-byte little-endian writes
 * built with WEFT_UAR_DB() and WEFT_UAR_ARM().
 */

#endif /* WEFT_IB_ABI_H */
