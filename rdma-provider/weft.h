/* SPDX-License-Identifier: MIT */
/*
 * Weft rdma-core provider: the user-space half of the Weft ib_device
 * (docs/rdma-provider.md).  Objects are created through the kernel
 * (ib_uverbs); the data path (post_send, post_recv, poll_cq and arming)
 * runs in user space on the rings and the doorbell page the kernel maps
 * into the process (docs/hw-spec.md section 16).
 */
#ifndef WEFT_PROVIDER_H
#define WEFT_PROVIDER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <infiniband/driver.h>

#include "weft/verbs.h"

struct weft_device {
	struct verbs_device ibv_dev;
};

/* qpn -> QP, for completions: two levels, leaves allocated on demand. */
#define WEFT_QP_TABLE_SHIFT 12
#define WEFT_QP_TABLE_LEAF (1u << WEFT_QP_TABLE_SHIFT)
#define WEFT_QP_TABLE_TOP ((1u << 24) >> WEFT_QP_TABLE_SHIFT)

struct weft_context {
	struct verbs_context ibv_ctx;
	void *uar;			/* this context's UAR doorbell page */
	uint32_t uar_index;
	pthread_mutex_t qp_table_lock;
	struct weft_qp **qp_table[WEFT_QP_TABLE_TOP];
};

struct weft_cq {
	struct verbs_cq vcq;		/* ibv_cq, and ibv_cq_ex for the extended API */
	pthread_spinlock_t lock;
	uint32_t cqn;
	uint32_t log2_entries;
	uint32_t ci;			/* consumer index, free-running */
	struct weft_vcqe *ring;
	volatile uint32_t *ci_ptr;	/* read by the adapter when the ring looks full */
	void *map;
	size_t map_len;
	struct ibv_wc cur;		/* extended API: the completion being read */
	struct ibv_wc_tm_info cur_tm;	/* its tag-matching information */
	struct weft_srq *tm_srq;	/* the tag-matching SRQ completing here */
};

/* A send or receive queue: a ring of 1 << log2 slots of 1 << stride_log2 bytes. */
struct weft_wq {
	pthread_spinlock_t lock;
	uint8_t *buf;			/* the mapped ring */
	size_t map_len;
	uint32_t log2;
	uint32_t stride_log2;
	uint32_t max_sge;
	uint32_t head;			/* producer index, free-running */
	_Atomic(uint32_t) tail;		/* consumer index, advanced by completions */
};

/* Inline bytes one work request of the extended QP API may carry. */
#define WEFT_XWR_INLINE (512 - 64 - 16)

struct weft_qp {
	struct verbs_qp vqp;		/* ibv_qp, and ibv_qp_ex for the extended API */
	struct weft_wq sq;
	struct weft_wq rq;
	int sq_sig_all;
	uint32_t qkey;			/* UD: the QP's own Q_Key */
	/* Extended API (qpx.c): the work request being built, posted when
	 * the next one starts or at ibv_wr_complete. */
	struct ibv_send_wr xwr;
	struct ibv_sge xsge[28];
	uint8_t xinl[WEFT_XWR_INLINE];
	bool xpending;
	int xerr;
	uint32_t xstart;
};

struct weft_srq {
	union {
		struct ibv_srq ibv_srq;
		struct verbs_srq vsrq;	/* ibv_create_srq_ex */
	};
	struct weft_wq wq;		/* the ring and its producer index */
	volatile uint32_t *ci_ptr;	/* consumer index, written by the adapter */
	uint32_t srqn;
	struct weft_tm *tm;		/* IBV_SRQT_TM (tm.c), else NULL */
};

struct weft_ah {
	struct ibv_ah ibv_ah;
	uint16_t dest_node;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint32_t flow_label;
	uint8_t dgid[16];
};

static inline struct weft_context *to_wctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct weft_context, ibv_ctx.context);
}

static inline struct weft_cq *to_wcq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct weft_cq, vcq.cq);
}

static inline struct weft_qp *to_wqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct weft_qp, vqp.qp);
}

static inline struct weft_srq *to_wsrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct weft_srq, ibv_srq);
}

static inline struct weft_ah *to_wah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct weft_ah, ibv_ah);
}

/* verbs.c: object creation through the kernel */
int weft_query_device_ex(struct ibv_context *context,
			 const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size);
int weft_query_port(struct ibv_context *context, uint8_t port,
		    struct ibv_port_attr *attr);
struct ibv_pd *weft_alloc_pd(struct ibv_context *context);
int weft_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *weft_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			   uint64_t hca_va, int access);
int weft_dereg_mr(struct verbs_mr *vmr);
struct ibv_mw *weft_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int weft_dealloc_mw(struct ibv_mw *mw);
int weft_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);
int weft_bind_wqe(const struct ibv_mw_bind_info *b, uint32_t new_rkey,
		  struct weft_vwqe *wqe);
struct ibv_ah *weft_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int weft_destroy_ah(struct ibv_ah *ah);

/* cq.c */
struct ibv_cq *weft_create_cq(struct ibv_context *context, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector);
int weft_destroy_cq(struct ibv_cq *cq);
int weft_resize_cq(struct ibv_cq *cq, int cqe);
int weft_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
int weft_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int weft_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_cq_ex *weft_create_cq_ex(struct ibv_context *context,
				    struct ibv_cq_init_attr_ex *attr);

/* qp.c */
struct ibv_qp *weft_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
int weft_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int weft_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init_attr);
int weft_destroy_qp(struct ibv_qp *qp);
struct ibv_qp *weft_create_qp_ex(struct ibv_context *context,
				 struct ibv_qp_init_attr_ex *attr);
/* qpx.c: the extended QP API's work-request builders on qp. */
void weft_qpx_init(struct weft_qp *qp, uint64_t send_ops);
struct weft_qp *weft_find_qp(struct weft_context *ctx, uint32_t qpn);

/* srq.c */
struct weft_ib_create_srq_resp;
int weft_srq_map(struct weft_srq *srq, int cmd_fd, const struct weft_ib_create_srq_resp *resp);
/* Create helpers shared with tm.c: a zeroed SRQ with its lock, and the
 * undoing of a failed create (err 0: the kernel refused it). */
struct weft_srq *weft_srq_alloc(void);
struct ibv_srq *weft_srq_abort(struct weft_srq *srq, int err);
struct ibv_srq *weft_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
int weft_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int weft_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int weft_destroy_srq(struct ibv_srq *srq);
int weft_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);

/* tm.c: tag-matching SRQs */
struct ibv_srq *weft_create_srq_ex(struct ibv_context *context,
				   struct ibv_srq_init_attr_ex *attr);
int weft_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *wr,
		      struct ibv_ops_wr **bad_wr);
void weft_tm_destroy(struct weft_srq *srq);
/* A WEFT_VWC_TM_* CQE into wc and cq->cur_tm; false when the application
 * did not ask for it (an unsignaled TAG_DEL that succeeded). */
/* The ibv_wc status of a CQE status (cq.c). */
enum ibv_wc_status weft_wc_status(uint8_t status);
bool weft_tm_fill_wc(struct weft_cq *cq, const struct weft_vcqe *cqe, struct ibv_wc *wc);

/* wq.c: the work queues' data path */
int weft_wq_map(struct weft_wq *wq, int cmd_fd, uint64_t offset,
		uint32_t map_len, uint32_t log2, uint32_t stride_log2);
void weft_wq_unmap(struct weft_wq *wq);
void weft_wq_reset(struct weft_wq *wq);
int weft_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
int weft_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);
void weft_wq_retire(struct weft_wq *wq, uint16_t wqe_index);
int weft_post_one(struct weft_qp *qp, const struct ibv_send_wr *wr);
void weft_ring_sq(struct weft_qp *qp);

#endif /* WEFT_PROVIDER_H */
