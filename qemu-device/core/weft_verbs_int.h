/* SPDX-License-Identifier: MIT */
/*
 * Weft verbs engine: private state shared by weft_verbs_*.c
 * (docs/hw-spec.md section 16).  Nothing here is part of the API.
 */
#ifndef WEFT_VERBS_INT_H
#define WEFT_VERBS_INT_H

#include "weft/cnt.h"
#include "weft/verbs.h"
#include "weft_core_int.h"

#define VQ_NONE         0xffffffffu
#define VQ_WINDOW       WEFT_VERBS_RX_WINDOW    /* PSNs in flight / placed ahead */
#define VQ_CHUNK        32u                     /* response packets per read request */
#define VQ_MAX_SGE      28u
#define VQ_ATOMIC_CACHE 16u
#define VQ_TOUCHED      4u                      /* early one-touch entries per QP */
#define VQ_BUDGET       (64ull << 20)           /* adapter memory for SQ slot state */
#define VQ_FLUSH_STEP   64u                     /* flush CQEs per poll step */

WEFT_STATIC_ASSERT(sizeof(struct weft_vhdr) + sizeof(struct weft_vaddr) + WEFT_VERBS_MTU <=
		   WEFT_WIRE_MAX_PAYLOAD, "a verbs packet fits a wire frame");

/* In-flight record of one SQ slot. */
enum { SW_IDLE = 0, SW_STARTED, SW_DONE };

struct vq_sw {
	uint64_t wr_id;
	uint32_t psn;           /* first PSN */
	uint32_t npkt;          /* PSNs taken (0 for local operations) */
	uint32_t msn;           /* read MSN of its first request */
	uint32_t byte_len;
	uint8_t  op;            /* enum weft_vwqe_op */
	uint8_t  state;
	uint8_t  status;        /* enum weft_vwc_status once DONE */
	uint8_t  reason;
	uint8_t  signaled;
	uint8_t  chunks_sent;   /* read: requests sent so far (capped 255) */
	uint8_t  cnt_slot;      /* counter slot its completion counts on, 0 = none */
	uint8_t  reserved;
};

/* A copied, checked WQE. */
struct vq_wqe {
	struct weft_vwqe h;
	struct weft_vsge sge[VQ_MAX_SGE];
	uint64_t total;
	uint32_t inl_len;                       /* WEFT_VWQE_INLINE: bytes in inl */
	uint8_t inl[WEFT_VERBS_MAX_INLINE];
};

struct vq_rwqe {
	struct weft_vrwqe h;
	struct weft_vsge sge[VQ_MAX_SGE];
	uint64_t total;
	uint32_t index;
};

struct vq_rrq {
	uint32_t psn, npkt, sent;
	uint32_t rkey;
	uint64_t va;
	uint32_t len;
	uint8_t  atomic;        /* response is an ATOMIC_RESP with value */
	uint8_t  counted;       /* a new READ (not a duplicate): counts when served */
	uint64_t value;
};

/* A rendezvous the adapter performs for a matched RNDV (weft_verbs_tm.c):
 * phase READ, the RDMA READ of the RVH's [va, va + len) into the tagged
 * buffer, then phase FIN, the TMH FIN SEND back; each phase takes PSNs of
 * the QP's send stream when it starts, placed before SQ WQE anchor.
 * Plain data, no pointers. */
enum { VQ_RVH_FREE = 0, VQ_RVH_READ, VQ_RVH_FIN };

struct vq_rvh {
	uint8_t  phase;         /* VQ_RVH_* */
	uint8_t  reserved[3];
	uint32_t seq;           /* arrival order on the QP */
	uint32_t handle, app_ctx;
	uint64_t tag;
	uint64_t va;            /* RVH: the sender's data */
	uint32_t rkey, len;
	struct weft_vsge sge;   /* the tagged buffer (len <= sge.length) */
	uint32_t anchor;        /* SQ index this phase precedes in PSN order */
	uint32_t psn, npkt;     /* PSNs of the phase; npkt 0: not started */
	uint32_t sent;          /* PSNs of the phase transmitted */
	uint32_t msn;           /* READ: read MSN of its first request */
	uint32_t resp_psn;      /* READ: next response PSN expected */
	uint64_t resp_bits;     /* READ: responses received ahead of resp_psn */
};

/* A QP counter slot: an EVENT counter object and the responder events it
 * counts (weft/cnt.h BIND_QP).  Checked against the object at each event. */
struct vq_cnt_slot {
	uint16_t obj, gen;      /* gen 0: unbound */
	uint8_t  events;        /* WEFT_CNT_EV_* */
	uint8_t  reserved[3];
};

struct vq_qp {
	bool created;
	uint8_t type, state, access, flags;
	uint32_t pd, scq, rcq, uar;
	uint32_t srq;           /* 0, or the SRQ its receives come from */
	uint64_t sq_addr, rq_addr;
	uint8_t sq_log2, sq_stride, rq_log2, rq_stride;
	/* attributes */
	uint32_t qkey, dest_qpn;
	uint16_t dest_node;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic, max_dest_rd_atomic;
	uint32_t last_reason;
	/* SQ */
	uint32_t sq_prod, sq_ci, sq_next;
	struct vq_sw *sw;
	struct vq_wqe cur;      /* copy of WQE sq_next while it is sent */
	bool cur_valid;
	uint32_t cur_pkt;       /* PSNs of WQE sq_next already sent */
	uint32_t snd_psn;       /* next new PSN */
	uint32_t sent_hi;       /* one past the highest PSN transmitted */
	uint32_t acked_psn;     /* every PSN before this one is acknowledged */
	uint32_t rd_msn;        /* next read MSN to assign */
	uint32_t resp_psn;      /* next response PSN expected for the head read */
	uint64_t resp_bits;     /* responses received ahead of resp_psn */
	uint32_t resp_wqe;      /* SQ index whose responses are expected */
	struct vq_wqe rcur;     /* copy of that read WQE */
	bool rcur_valid;
	uint32_t retries_left, rnr_left;
	uint64_t rto;           /* retransmission deadline, 0 = off */
	uint64_t rnr_until;     /* RNR wait deadline, 0 = off */
	/* RQ */
	uint32_t rq_prod, rq_ci;
	struct vq_rwqe rcv;     /* receive WQE being filled */
	bool rcv_active;
	bool uc_drop;           /* UC: dropping until a message's first packet */
	bool last_wqe;          /* on an SRQ: LAST_WQE event sent since ERR */
	uint64_t rcv_off;
	uint8_t tm_kind;        /* message being received on a TM SRQ: VQ_TM_* */
	uint32_t tm_app_ctx, tm_handle;
	uint64_t tm_tag;
	struct vq_rvh rvh[WEFT_VERBS_TM_RNDV_MAX];     /* device rendezvous */
	uint32_t rvh_seq;
	/* responder */
	uint32_t epsn, msn, rd_emsn;
	uint64_t rx_bits;       /* write packets placed ahead of epsn */
	uint64_t rx_last;       /* those of rx_bits that end a WRITE (event counters) */
	bool nak_sent, ack_owed, ack_now;
	struct vq_rrq rrq[WEFT_VERBS_MAX_RD_ATOMIC];
	uint32_t rrq_head, rrq_count;
	uint32_t atom_psn[VQ_ATOMIC_CACHE];
	uint64_t atom_val[VQ_ATOMIC_CACHE];
	uint32_t atom_next;
	uint32_t touched[VQ_TOUCHED];   /* TPT index + 1 of early one-touch entries */
	struct vq_cnt_slot cnt[WEFT_CNT_QP_SLOTS];     /* event counters (weft_cnt.c) */
	/* WAIT_CNT at cw_idx holds the SQ: the QP is in the waiter list of
	 * counter object cw_obj (through slot cw_slot, 0 = not waiting),
	 * sorted by cw_thr and linked by qpn in cw_next (0 ends it). */
	uint8_t cw_slot;
	uint16_t cw_obj;
	uint32_t cw_next, cw_idx;
	uint64_t cw_thr;
	/* scheduling */
	bool in_tq;
	bool in_work;
	uint32_t work_next;
	bool flushing;
};

struct vq_cq {
	bool created, error;
	uint8_t log2, arm;
	uint64_t ring, ci_addr;
	uint32_t prod, ci;
	uint32_t vector, uar, refs;
	/* Event moderation (MODIFY_CQ, weft_verbs_cq.c): the event of the arm
	 * waits for mod_count matching CQEs or until mod_due (0 = none). */
	uint16_t mod_count, mod_period;
	uint32_t mod_cqes;      /* matching CQEs held since the arm */
	uint64_t mod_due;
	bool in_tq;             /* in the timer list of CQs (ctq) */
};

struct vq_srq {
	bool created;
	uint8_t log2, stride, flags;
	uint32_t pd, uar, vector, refs;
	uint32_t limit;         /* armed limit, 0 = none */
	uint64_t ring, ci_addr;
	uint32_t prod, ci;
	/* tag matching (WEFT_VSRQF_TM, weft_verbs_tm.c) */
	uint32_t tm_cq, tm_max, tm_sw;
	uint16_t tm_queue;
	uint8_t tm_log2;
	bool tm_queued;
	uint64_t tm_ring;
	uint32_t tm_prod, tm_ci, tm_next;
};

/* What a message on a tag-matching SRQ turned out to be. */
enum {
	VQ_TM_NONE = 0,
	VQ_TM_MATCHED,          /* into a tagged buffer, one CQE at the end */
	VQ_TM_MATCHED_SPLIT,    /* the same, MATCH CQE sent at the first packet */
	VQ_TM_UNEXPECTED,       /* whole into an SRQ WQE, counted */
	VQ_TM_NO_TAG,           /* whole into an SRQ WQE, not counted */
	VQ_TM_RNDV,             /* RNDV taken by a device rendezvous: no CQE at the end */
	VQ_TM_RNDV_SW,          /* matched RNDV left to software, whole into the tagged
				 * buffer, one CQE RNDV_INCOMPLETE */
	VQ_TM_RNDV_SW_SPLIT,    /* the same, MATCH CQE sent at the first packet */
};

struct vq_pd {
	bool created;
	uint32_t refs;
};

struct vq_tpt {
	struct weft_tpt_entry e;
	uint8_t last_instance;  /* instance of the last registration */
	bool registered_once;
};

struct vq_gid {
	bool valid;
	uint8_t type;           /* enum weft_vgid_type */
	uint8_t gid[16];
};

struct weft_verbs {
	uint32_t nr_qp, nr_cq, nr_pd, nr_tpt, nr_uar;
	uint32_t nr_srq;        /* = nr_qp */
	struct vq_gid gid[WEFT_VERBS_GID_TBL];
	struct vq_qp *qp;
	struct vq_cq *cq;
	struct vq_pd *pd;
	struct vq_tpt *tpt;
	struct vq_srq *srq;
	uint64_t sw_bytes;
	bool used;              /* a command ran since the tables were allocated */
	uint64_t cmd_status;
	/* QPs with transmit or flush work: a FIFO of qpns */
	uint32_t work_head, work_tail;
	/* one packet the link refused */
	bool pend;
	size_t pend_len;
	_Alignas(8) uint8_t pkt[WEFT_WIRE_MAX_FRAME];
	_Alignas(8) uint8_t pend_pkt[WEFT_WIRE_MAX_FRAME];
	uint64_t timer_armed;   /* deadline last given to ops->timer_arm */
	uint32_t *tq;           /* qpns that have a deadline set */
	uint32_t ntq;
	uint32_t *ctq;          /* cqns that hold a moderated event with a deadline */
	uint32_t nctq;
	uint32_t tm_head, tm_tail;      /* TM SRQs with tag operations to run */
};

static inline uint32_t psn_add(uint32_t a, uint32_t b)
{
	return (a + b) & WEFT_VERBS_PSN_MASK;
}

/* Signed distance a - b in 24-bit PSN space. */
static inline int32_t psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static inline struct vq_qp *vq_qp(struct weft_core *c, uint32_t qpn)
{
	struct weft_verbs *v = c->verbs;

	if (qpn == 0 || qpn >= v->nr_qp || !v->qp[qpn].created)
		return NULL;
	return &v->qp[qpn];
}

static inline uint32_t vq_qpn(struct weft_core *c, const struct vq_qp *qp)
{
	return (uint32_t)(qp - c->verbs->qp);
}

static inline uint32_t vq_npkt(uint64_t len)
{
	return len ? (uint32_t)((len + WEFT_VERBS_MTU - 1) / WEFT_VERBS_MTU) : 1u;
}

/* ---- weft_verbs_obj.c: objects, commands, doorbells, scheduling --------- */
void vq_qp_error(struct weft_core *c, struct vq_qp *qp, unsigned int reason);
void vq_qp_sq_error(struct weft_core *c, struct vq_qp *qp, unsigned int reason);
void vq_work(struct weft_core *c, struct vq_qp *qp);
void vq_async(struct weft_core *c, uint32_t obj, unsigned int what, unsigned int reason,
	      unsigned int vector);
/* A ring of bytes at addr is 64-byte aligned guest RAM. */
bool vq_ring_ok(struct weft_core *c, uint64_t addr, uint64_t bytes);

/* ---- weft_verbs_tpt.c: STags, checks and translation -------------------- */
enum vq_dir { VQ_TO_MEM, VQ_FROM_MEM };
/* Check [va, va + len) of stag for a QP (pd, qpn) with the access bits
 * need; remote = incoming RDMA (windows or regions with remote rights).
 * Returns a reason. */
unsigned int vq_tpt_check(struct weft_core *c, uint32_t pd, uint32_t qpn, uint32_t stag,
			  uint64_t va, uint64_t len, unsigned int need, bool remote,
			  bool priv);
/* Copy between buf and [va, va + len) of stag, after vq_tpt_check. */
unsigned int vq_tpt_copy(struct weft_core *c, uint32_t pd, uint32_t qpn, uint32_t stag,
			 uint64_t va, void *buf, uint64_t len, unsigned int need,
			 bool remote, bool priv, enum vq_dir dir);
/* SGE list: check all, then copy at byte offset off of the list. */
unsigned int vq_sge_check(struct weft_core *c, const struct vq_qp *qp,
			  const struct weft_vsge *sge, unsigned int n, unsigned int need,
			  uint64_t *total);
unsigned int vq_sge_copy(struct weft_core *c, const struct vq_qp *qp,
			 const struct weft_vsge *sge, unsigned int n, uint64_t off,
			 void *buf, uint64_t len, unsigned int need, enum vq_dir dir);
/* Work-request TPT operations; return a reason. */
unsigned int vq_fast_reg(struct weft_core *c, struct vq_qp *qp, const struct weft_vwqe *w);
unsigned int vq_local_inv(struct weft_core *c, struct vq_qp *qp, uint32_t stag);
unsigned int vq_remote_inv(struct weft_core *c, struct vq_qp *qp, uint32_t stag);
unsigned int vq_bind(struct weft_core *c, struct vq_qp *qp, const struct weft_vwqe *w);
/* One-touch bookkeeping after placing a LAST write segment at psn. */
unsigned int vq_one_touch(struct weft_core *c, struct vq_qp *qp, uint32_t stag,
			  uint32_t psn, bool in_order);
void vq_one_touch_catch_up(struct weft_core *c, struct vq_qp *qp);
/* The window of stag is Touched (its Last segment came early). */
bool vq_touched(struct weft_core *c, uint32_t stag);
/* Command-path registration. */
unsigned int vq_cmd_alloc_stag(struct weft_core *c, const struct weft_vcmd *k, bool reg,
			       unsigned int *reason);
unsigned int vq_cmd_dereg(struct weft_core *c, uint32_t stag, unsigned int *reason);
void vq_tpt_release_qp(struct weft_core *c, uint32_t qpn);

/* ---- weft_verbs_gid.c: GID table, RoCE v2 network headers ---------------- */
/* WEFT_VGID_IPV4 or _IPV6 by the address, 0 for the zero GID. */
unsigned int vq_gid_type(const uint8_t gid[16]);
const struct vq_gid *vq_gid_get(struct weft_core *c, unsigned int index);
/* gid is a valid entry of the table. */
bool vq_gid_local(struct weft_core *c, const uint8_t gid[16]);
/* SET_GID, CLEAR_GID, QUERY_GID. */
unsigned int vq_cmd_gid(struct weft_core *c, const struct weft_vcmd *k, unsigned int *reason);
/* The wire address block of a UD send WQE; returns a reason. */
unsigned int vq_gid_addr(struct weft_core *c, const struct weft_vwqe *w, struct weft_vaddr *a);
/* The 40 bytes a UD receive of dlen data bytes starts with; returns the
 * network type (WEFT_VGID_*), 0 if the addresses do not make a header. */
unsigned int vq_gid_grh(const struct weft_vaddr *a, uint32_t dlen, bool imm,
			uint8_t out[WEFT_VERBS_GRH_SIZE]);

/* ---- weft_verbs_cq.c ------------------------------------------------------ */
/* Write one CQE to cq; returns false if it was dropped (CQ error). */
bool vq_cqe(struct weft_core *c, uint32_t cqn, struct weft_vcqe *e, bool solicited);
/* The CQ goes to error (CQ_ERR async event, once). */
void vq_cq_error(struct weft_core *c, uint32_t cqn, struct vq_cq *cq, unsigned int reason);
void vq_cq_arm(struct weft_core *c, uint32_t cqn, unsigned int flags, uint32_t ci);
/* MODIFY_CQ (event moderation). */
unsigned int vq_cmd_modify_cq(struct weft_core *c, const struct weft_vcmd *k,
			      unsigned int *reason);
/* Raise the held events whose period ended by now; returns the earliest
 * deadline still held (0 = none). */
uint64_t vq_cq_timers(struct weft_core *c, uint64_t now);

/* ---- weft_verbs_sq.c: requester ----------------------------------------- */
/* Transmit one packet or run one local WQE for qp; 1 done, 0 nothing,
 * -EAGAIN link busy. */
int vq_sq_step(struct weft_core *c, struct vq_qp *qp);
/* Retire finished WQEs at the SQ head into CQEs (flushes when in error). */
void vq_sq_complete(struct weft_core *c, struct vq_qp *qp, unsigned int max);
bool vq_sq_has_work(struct weft_core *c, const struct vq_qp *qp);
/* Read requests and atomics outstanding (each read chunk counts). */
unsigned int vq_rd_outstanding(struct vq_qp *qp);
/* Some WQE or rendezvous phase was started and is not complete. */
bool vq_sq_outstanding(struct vq_qp *qp);
void vq_sq_fail(struct weft_core *c, struct vq_qp *qp, uint32_t idx, uint8_t status,
		unsigned int reason);
/* Reload the copy of WQE idx from the ring; returns a reason. */
unsigned int vq_wqe_load(struct weft_core *c, struct vq_qp *qp, uint32_t idx,
			 struct vq_wqe *w);

/* ---- weft_verbs_rq.c: responder ------------------------------------------ */
void vq_rx_request(struct weft_core *c, struct vq_qp *qp, const struct weft_wire_hdr *wh,
		   const struct weft_vhdr *h, const uint8_t *data, uint32_t dlen);
/* UC SEND and WRITE packets (16.16). */
void vq_rx_uc(struct weft_core *c, struct vq_qp *qp, const struct weft_wire_hdr *wh,
	      const struct weft_vhdr *h, const uint8_t *data, uint32_t dlen);
void vq_rx_ud(struct weft_core *c, struct vq_qp *qp, const struct weft_wire_hdr *wh,
	      const struct weft_vhdr *h, const uint8_t *data, uint32_t dlen);
void vq_rq_flush(struct weft_core *c, struct vq_qp *qp, unsigned int max);
/* Serve one read response packet; 1 done, 0 nothing, -EAGAIN. */
int vq_rrq_step(struct weft_core *c, struct vq_qp *qp);

/* Copy and check the receive WQE at addr (slot 1 << stride) into r, with
 * index idx for its CQE.  Returns a reason. */
unsigned int vq_rwqe_read(struct weft_core *c, struct vq_qp *qp, uint64_t addr,
			  unsigned int stride, uint32_t idx, struct vq_rwqe *r);

/* ---- weft_verbs_srq.c: shared receive queues ------------------------------ */
struct vq_srq *vq_srq(struct weft_core *c, uint32_t srqn);
bool vq_srq_empty(struct weft_core *c, uint32_t srqn);
/* Take the next WQE of qp's SRQ into r (the slot is consumed even when
 * the WQE is bad).  Returns a reason; WEFT_R_RNR when empty. */
unsigned int vq_srq_take(struct weft_core *c, struct vq_qp *qp, struct vq_rwqe *r);
/* A QP of PD pd and flags qpflags attaches to / detaches from srqn. */
unsigned int vq_srq_attach(struct weft_core *c, uint32_t srqn, uint32_t pd, unsigned int qpflags);
void vq_srq_detach(struct weft_core *c, uint32_t srqn);
/* CREATE/MODIFY/QUERY/DESTROY_SRQ. */
unsigned int vq_cmd_srq(struct weft_core *c, const struct weft_vcmd *k, unsigned int *reason);
/* SRQ_DB from UAR page uar; returns a reason. */
unsigned int vq_srq_doorbell(struct weft_core *c, uint32_t uar, uint64_t val);

/* ---- weft_verbs_rq.c, for weft_verbs_tm.c -------------------------------- */
/* Take the next receive WQE into qp->rcv, or RNR-NAK; false if none. */
bool vq_rq_take(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h);
void vq_violation(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h,
		  unsigned int reason, uint8_t rq_status);

/* ---- weft_verbs_tm.c: tag-matching SRQs -------------------------------------- */
bool vq_srq_is_tm(struct weft_core *c, const struct vq_qp *qp);
/* CREATE_SRQ with WEFT_VSRQF_TM (s is filled but not yet created) and
 * DESTROY_SRQ of a TM SRQ. */
unsigned int vq_tm_create(struct weft_core *c, struct vq_srq *s, const struct weft_vcmd *k);
void vq_tm_destroy(struct weft_core *c, struct vq_srq *s);
/* SRQ_TM_DB from UAR page uar; returns a reason. */
unsigned int vq_tm_doorbell(struct weft_core *c, uint32_t uar, uint64_t val);
/* Run the tag operations of one TM SRQ; 1 if it did work. */
int vq_tm_poll(struct weft_core *c);
/* The first packet of a SEND on a QP of a TM SRQ: read the TMH, match,
 * and set up qp->rcv; data/dlen skip the TMH of a matched message.
 * False when the packet was refused (RNR NAK or violation). */
bool vq_tm_first(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h,
		 const uint8_t **data, uint32_t *dlen);
/* The receive completion of the message on qp (status, byte_len). */
void vq_tm_cqe(struct weft_core *c, struct vq_qp *qp, uint8_t status, uint32_t len, bool se);

/* ---- weft_verbs_tm.c: the device rendezvous (RVH) ------------------------- */
/* A free rendezvous slot of qp, or NULL. */
struct vq_rvh *vq_rvh_alloc(struct vq_qp *qp);
/* The TM_RECV CQE of rendezvous r on qp's TM SRQ. */
void vq_rvh_cqe(struct weft_core *c, struct vq_qp *qp, const struct vq_rvh *r,
		uint8_t status, uint8_t flags, uint32_t len);
/* A phase waits to start or has packets to (re)send. */
bool vq_rvh_has_work(const struct vq_qp *qp);
/* A started phase is not finished (READ unanswered, FIN unacknowledged). */
bool vq_rvh_outstanding(const struct vq_qp *qp);
/* READ requests sent and not fully answered (for max_rd_atomic). */
unsigned int vq_rvh_rd_outstanding(const struct vq_qp *qp);
/* Before SQ WQE sq_next: start or send a rendezvous packet.  1 sent,
 * 0 nothing (*hold: one is due but waits: the WQE must wait too),
 * -EAGAIN link busy. */
int vq_rvh_step(struct weft_core *c, struct vq_qp *qp, bool *hold);
/* The oldest started, unfinished phase (lowest PSN), or NULL. */
struct vq_rvh *vq_rvh_oldest(struct vq_qp *qp);
/* The first PSN of r that must be sent again. */
uint32_t vq_rvh_restart_psn(const struct vq_rvh *r);
/* Go back: every phase sends again from psn on. */
void vq_rvh_rewind(struct vq_qp *qp, uint32_t psn);
/* Every PSN before n is acknowledged: FINs there are done.  True if any. */
bool vq_rvh_acked(struct weft_core *c, struct vq_qp *qp, uint32_t n);
/* A read response: true when it belongs to a rendezvous READ (handled). */
bool vq_rvh_read_resp(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h,
		      const uint8_t *data, uint32_t dlen);
/* The phase holding psn, or NULL. */
struct vq_rvh *vq_rvh_at(struct vq_qp *qp, uint32_t psn);
/* Rendezvous r fails with status (an error TM_RECV CQE if its data was
 * not delivered yet) and is freed. */
void vq_rvh_fail(struct weft_core *c, struct vq_qp *qp, struct vq_rvh *r, uint8_t status,
		 unsigned int reason);
/* The QP leaves RTS: every rendezvous ends (flush). */
void vq_rvh_flush(struct weft_core *c, struct vq_qp *qp);

/* ---- weft_verbs_rc.c: reliable transport ---------------------------------- */
/* Every PSN up to and including a is acknowledged; resp: a read response
 * moved the head read's expected PSN (progress for the retry count and
 * the timer even when acked_psn was already past it). */
void vq_acked(struct weft_core *c, struct vq_qp *qp, uint32_t a, bool resp);
void vq_rx_response(struct weft_core *c, struct vq_qp *qp, const struct weft_vhdr *h,
		    const uint8_t *data, uint32_t dlen);
void vq_send_ack(struct weft_core *c, struct vq_qp *qp, unsigned int syndrome,
		 uint32_t psn, uint32_t msn);
void vq_send_terminate(struct weft_core *c, struct vq_qp *qp, unsigned int reason,
		       uint32_t psn);
/* Go back to the oldest unacknowledged PSN (timeout or NAK). */
void vq_go_back(struct weft_core *c, struct vq_qp *qp);
void vq_timers(struct weft_core *c, uint64_t now);
/* A deadline of qp was set: make sure the core timer fires by then. */
void vq_timer_set(struct weft_core *c, struct vq_qp *qp, uint64_t deadline);
/* The core timer fires by deadline (for any object of the engine). */
void vq_timer_arm(struct weft_core *c, uint64_t deadline);
uint64_t vq_rto_ns(const struct vq_qp *qp);
/* Transmit a built packet: to ops->xmit, or looped back to this core. */
int vq_link_xmit(struct weft_core *c, const void *pkt, size_t len);
/* Build and transmit a verbs packet for qp; 0, -EAGAIN (kept for later). */
int vq_xmit(struct weft_core *c, const struct vq_qp *qp, uint16_t dst_node,
	    const struct weft_vhdr *h, const void *data, uint32_t dlen);

/* ---- weft_cnt.c: event counters (weft/cnt.h WEFT_CNT_MODE_EVENT) ------- */
/* Slot of qp counts one event (an error when err): the object's block moves
 * up.  A slot bound to no live EVENT object drops it (CNT_SLOT). */
void vq_cnt_slot_event(struct weft_core *c, struct vq_qp *qp, unsigned int slot, bool err);
/* Every slot of qp bound with event bit ev counts one event. */
void vq_cnt_qp_event(struct weft_core *c, struct vq_qp *qp, unsigned int ev);
/* WAIT_CNT at SQ index idx of qp on slot with threshold thr: sets *passed
 * when the success count reached thr, else links qp to the counter (the
 * QP is queued for work when the count reaches thr).  Returns a reason
 * (WAIT_SLOT: no live EVENT object bound to the slot). */
unsigned int vq_cnt_wait(struct weft_core *c, struct vq_qp *qp, unsigned int slot,
			 uint64_t thr, uint32_t idx, bool *passed);
/* qp stops waiting (error, reset, destroy): unlinked, nothing completes. */
void vq_cnt_unwait(struct weft_core *c, struct vq_qp *qp);

#endif /* WEFT_VERBS_INT_H */
