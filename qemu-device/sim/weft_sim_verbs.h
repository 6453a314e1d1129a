/* SPDX-License-Identifier: MIT */
/*
 * Weft sim: a verbs driver and user layer for the sim's nodes, through
 * MMIO and guest memory only, as weft.ko and an rdma-core provider would
 * drive the verbs engine (docs/hw-spec.md section 16, docs/sim.md).
 *
 * Object numbers are the caller's.  Every node uses UAR page 0 unless a
 * QP or CQ asks for another.  Functions return 0 or a WEFT_CMD_* status
 * (positive), or a negative errno value for sim-side failures.
 */
#ifndef WEFT_SIM_VERBS_H
#define WEFT_SIM_VERBS_H

#include "weft_sim.h"
#include "weft/verbs.h"

struct wsv_cq {
	unsigned int node;
	uint32_t cqn;
	uint64_t ring, ci_addr;
	uint32_t log2, ci;
};

struct wsv_srq {
	unsigned int node;
	uint32_t srqn;
	uint32_t uar;
	uint64_t ring, ci_addr;
	uint32_t log2, stride, prod;
};

struct wsv_qp {
	unsigned int node;
	uint32_t qpn;
	uint32_t type;
	uint32_t uar;
	uint64_t sq, rq;
	uint32_t sq_log2, rq_log2, sq_stride, rq_stride;
	uint32_t sq_prod, rq_prod;
};

/* RC connection parameters; 0 fields take the defaults in brackets. */
struct wsv_rc_params {
	uint8_t timeout;            /* [10: 4 ms] */
	uint8_t retry_cnt;          /* [7] */
	uint8_t rnr_retry;          /* [7 = forever] */
	uint8_t min_rnr_timer;      /* [1: 10 us] */
	uint8_t max_rd_atomic;      /* [4] */
	uint8_t access;             /* [all remote rights] */
	uint32_t psn_a, psn_b;      /* [0] */
};

/* Run one command; fills resp if not NULL.  Returns the CMD status. */
int wsv_cmd(struct weft_sim *s, unsigned int node, const struct weft_vcmd *k,
	    struct weft_vcmd_resp *resp);
int wsv_pd(struct weft_sim *s, unsigned int node, uint32_t pdn);
/* Write a UAR doorbell register (WEFT_UAR_*) of UAR page uar. */
void wsv_uar_write(struct weft_sim *s, unsigned int node, uint32_t uar, uint64_t reg,
		   uint64_t val);
int wsv_cq_create(struct weft_sim *s, unsigned int node, uint32_t cqn, uint32_t log2,
		  uint32_t vector, struct wsv_cq *out);
/* RESIZE_CQ to a new ring of 2^log2 CQEs, as a driver does it (hw-spec
 * 16.7 "Resizing"): the new ring's owner bytes set "not valid" for the
 * indexes it will hold next, the consumer index stored in a new word,
 * then the command; on success cq takes the new ring and *prod (if not
 * NULL) the CQEs written so far.  Returns the CMD status. */
int wsv_cq_resize(struct weft_sim *s, struct wsv_cq *cq, uint32_t log2, uint64_t *prod);
/* MODIFY_CQ: event moderation of cq (UAR page 0).  Returns the CMD status. */
int wsv_cq_modify(struct weft_sim *s, struct wsv_cq *cq, uint32_t count, uint32_t period_us);
/* Next CQE (returns 1 and copies it, 0 when none). */
int wsv_poll(struct weft_sim *s, struct wsv_cq *cq, struct weft_vcqe *e);
void wsv_arm(struct weft_sim *s, struct wsv_cq *cq, unsigned int flags);
int wsv_qp_create(struct weft_sim *s, unsigned int node, uint32_t qpn, uint32_t type,
		  uint32_t pd, uint32_t scq, uint32_t rcq, uint32_t sq_log2, uint32_t rq_log2,
		  uint32_t flags, struct wsv_qp *out);
/* The same, receiving from SRQ srqn (no RQ ring). */
int wsv_qp_create_srq(struct weft_sim *s, unsigned int node, uint32_t qpn, uint32_t type,
		      uint32_t pd, uint32_t scq, uint32_t rcq, uint32_t sq_log2, uint32_t srqn,
		      uint32_t flags, struct wsv_qp *out);
/* SRQ srqn of 2^log2 WQEs (stride 256 bytes) on PD pd, limit armed. */
int wsv_srq_create(struct weft_sim *s, unsigned int node, uint32_t srqn, uint32_t pd,
		   uint32_t log2, uint32_t limit, struct wsv_srq *out);
/* Post one WQE to the SRQ and ring SRQ_DB. */
int wsv_post_srq_recv(struct weft_sim *s, struct wsv_srq *q, uint64_t wr_id,
		      const struct weft_vsge *sge, unsigned int n);
/* The consumer index the adapter published. */
uint32_t wsv_srq_ci(struct weft_sim *s, const struct wsv_srq *q);
int wsv_modify(struct weft_sim *s, unsigned int node, uint32_t qpn, uint32_t mask,
	       const struct weft_vcmd *mod);
/* RESET -> INIT -> RTR -> RTS on both sides. */
int wsv_connect(struct weft_sim *s, struct wsv_qp *a, struct wsv_qp *b,
		const struct wsv_rc_params *p);
/* UD QP to RTS with qkey. */
int wsv_ud_ready(struct weft_sim *s, struct wsv_qp *q, uint32_t qkey);

/* Set (type WEFT_VGID_IPV4/IPV6) or, with type 0, clear GID table entry
 * index of node's port. */
int wsv_gid(struct weft_sim *s, unsigned int node, uint32_t index, const uint8_t gid[16],
	    unsigned int type);

/* Register [addr, addr + len) of node memory with an ATT of the given
 * level built in guest memory (page_shift 12..); first_off shifts the
 * start inside the first page (the region starts at addr either way: addr
 * must be first_off into a page).  va is the region's start VA. */
int wsv_reg_mr(struct weft_sim *s, unsigned int node, uint32_t stag, uint32_t pd, uint64_t va,
	       uint64_t addr, uint64_t len, unsigned int access, unsigned int level,
	       unsigned int page_shift);
/* Build a page list (level DIRECT/IND1/IND2) for [addr, addr + len) and
 * return the ATT root address (0 on failure). */
uint64_t wsv_att(struct weft_sim *s, unsigned int node, uint64_t addr, uint64_t len,
		 unsigned int level, unsigned int page_shift);
int wsv_alloc_stag(struct weft_sim *s, unsigned int node, uint32_t stag, uint32_t pd,
		   unsigned int type, unsigned int flags);
int wsv_dereg(struct weft_sim *s, unsigned int node, uint32_t stag);
int wsv_query_tpt(struct weft_sim *s, unsigned int node, uint32_t index,
		  struct weft_tpt_entry *e);
int wsv_query_qp(struct weft_sim *s, unsigned int node, uint32_t qpn, struct weft_vqpc *q);

/* Post a send WQE with n SGEs (not rung) / ring the SQ doorbell. */
int wsv_post_send(struct weft_sim *s, struct wsv_qp *q, const struct weft_vwqe *w,
		  const struct weft_vsge *sge, unsigned int n, bool ring);
void wsv_ring_sq(struct weft_sim *s, struct wsv_qp *q);
/* Post w with WEFT_VWQE_INLINE and len bytes of data in the slot (at most
 * what the slot holds is copied; the header says len). */
int wsv_post_inline(struct weft_sim *s, struct wsv_qp *q, const struct weft_vwqe *w,
		    const void *data, uint32_t len, bool ring);
int wsv_post_recv(struct weft_sim *s, struct wsv_qp *q, uint64_t wr_id,
		  const struct weft_vsge *sge, unsigned int n);

/* Run the sim until cq has n CQEs more to poll, or until deadline ns of
 * virtual time pass; copies them into out.  Returns the number got. */
unsigned int wsv_wait(struct weft_sim *s, struct wsv_cq *cq, struct weft_vcqe *out,
		      unsigned int n, uint64_t deadline_ns);

/* Build a verbs packet (wire header + transport header + data) into buf;
 * returns its length.  For tests that forge packets. */
size_t wsv_forge(void *buf, uint16_t src_node, uint16_t dst_node, const struct weft_vhdr *h,
		 const void *data, uint32_t dlen);

#endif /* WEFT_SIM_VERBS_H */
