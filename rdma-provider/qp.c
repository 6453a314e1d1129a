// SPDX-License-Identifier: MIT
/*
 * Weft provider: queue pairs.  The kernel creates the QP (RC or UD) with
 * its SQ and RQ rings (no RQ when the QP receives from an SRQ) and maps them; the provider keeps the producer and
 * consumer indexes (wq.c) and a qpn table for completions (cq.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "weft.h"
#include "weft-abi.h"

struct weft_qp *weft_find_qp(struct weft_context *ctx, uint32_t qpn)
{
	struct weft_qp **leaf;

	if (qpn >> 24)
		return NULL;
	leaf = __atomic_load_n(&ctx->qp_table[qpn >> WEFT_QP_TABLE_SHIFT],
			       __ATOMIC_ACQUIRE);
	if (!leaf)
		return NULL;
	return __atomic_load_n(&leaf[qpn & (WEFT_QP_TABLE_LEAF - 1)],
			       __ATOMIC_ACQUIRE);
}

static int store_qp(struct weft_context *ctx, uint32_t qpn, struct weft_qp *qp)
{
	struct weft_qp ***slot = &ctx->qp_table[qpn >> WEFT_QP_TABLE_SHIFT];
	int ret = 0;

	if (qpn >> 24)
		return EINVAL;
	pthread_mutex_lock(&ctx->qp_table_lock);
	if (!*slot) {
		struct weft_qp **leaf = calloc(WEFT_QP_TABLE_LEAF, sizeof(*leaf));

		if (leaf)
			__atomic_store_n(slot, leaf, __ATOMIC_RELEASE);
		else
			ret = ENOMEM;
	}
	if (!ret)
		__atomic_store_n(&(*slot)[qpn & (WEFT_QP_TABLE_LEAF - 1)], qp,
				 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->qp_table_lock);
	return ret;
}

/* Maps the SQ and RQ rings the kernel made; the SGEs follow each header. */
static int map_rings(struct weft_qp *qp, int cmd_fd,
		     const struct weft_create_qp_resp *resp, bool srq)
{
	int err;

	if (resp->sq_stride_log2 < 7)
		return EPROTO;
	err = weft_wq_map(&qp->sq, cmd_fd, resp->sq_mmap_offset,
			  resp->sq_mmap_size, resp->sq_log2,
			  resp->sq_stride_log2);
	if (err)
		return err;
	qp->sq.max_sge = ((1u << resp->sq_stride_log2) -
			  sizeof(struct weft_vwqe)) / sizeof(struct weft_vsge);
	if (srq)
		return 0;
	err = weft_wq_map(&qp->rq, cmd_fd, resp->rq_mmap_offset,
			  resp->rq_mmap_size, resp->rq_log2,
			  resp->rq_stride_log2);
	if (err) {
		weft_wq_unmap(&qp->sq);
		return err;
	}
	qp->rq.max_sge = ((1u << resp->rq_stride_log2) -
			  sizeof(struct weft_vrwqe)) / sizeof(struct weft_vsge);
	return 0;
}

/* ibv_create_qp (attr) or ibv_create_qp_ex (ax): one of them is NULL. */
static struct weft_qp *qp_new(struct ibv_pd *pd, struct ibv_qp_init_attr *attr,
			      struct ibv_qp_init_attr_ex *ax)
{
	struct weft_context *ctx = to_wctx(pd->context);
	struct weft_create_qp_resp resp = {};
	struct ibv_create_qp cmd = {};
	enum ibv_qp_type type = ax ? ax->qp_type : attr->qp_type;
	struct ibv_srq *srq = ax ? ax->srq : attr->srq;
	struct weft_qp *qp;
	int err;

	if (type != IBV_QPT_RC && type != IBV_QPT_UD && type != IBV_QPT_UC) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	if (pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE))
		goto err_free;
	if (pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE))
		goto err_sq_lock;
	if (ax ? ibv_cmd_create_qp_ex(pd->context, &qp->vqp, ax, &cmd, sizeof(cmd),
				      &resp.ibv_resp, sizeof(resp)) :
	    ibv_cmd_create_qp(pd, &qp->vqp.qp, attr, &cmd, sizeof(cmd),
			      &resp.ibv_resp, sizeof(resp)))
		goto err_rq_lock;
	err = resp.qpn == qp->vqp.qp.qp_num &&
		resp.uar_index == ctx->uar_index ? 0 : EPROTO;
	if (!err)
		err = map_rings(qp, pd->context->cmd_fd, &resp, srq != NULL);
	if (!err) {
		err = store_qp(ctx, qp->vqp.qp.qp_num, qp);
		if (err) {
			weft_wq_unmap(&qp->rq);
			weft_wq_unmap(&qp->sq);
		}
	}
	if (err) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		errno = err;
		goto err_rq_lock;
	}
	qp->sq_sig_all = ax ? ax->sq_sig_all : attr->sq_sig_all;
	return qp;

err_rq_lock:
	pthread_spin_destroy(&qp->rq.lock);
err_sq_lock:
	pthread_spin_destroy(&qp->sq.lock);
err_free:
	free(qp);
	return NULL;
}

struct ibv_qp *weft_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct weft_qp *qp = qp_new(pd, attr, NULL);

	return qp ? &qp->vqp.qp : NULL;
}

/* The send operations the extended QP API builds (qpx.c). */
#define WEFT_QPX_OPS (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
		      IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
		      IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
		      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV | \
		      IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_BIND_MW)

/*
 * ibv_create_qp_ex: a PD, send_ops_flags among WEFT_QPX_OPS; XRC,
 * creation flags, RSS and the other send operations (TSO, flush, atomic
 * write) are EOPNOTSUPP.
 */
struct ibv_qp *weft_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *ax)
{
	struct weft_qp *qp;

	if (!(ax->comp_mask & IBV_QP_INIT_ATTR_PD) ||
	    (ax->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
					 IBV_QP_INIT_ATTR_CREATE_FLAGS)) ||
	    ((ax->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && ax->create_flags) ||
	    ((ax->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     (ax->send_ops_flags & ~(uint64_t)WEFT_QPX_OPS))) {
		errno = ax->comp_mask & IBV_QP_INIT_ATTR_PD ? EOPNOTSUPP : EINVAL;
		return NULL;
	}
	qp = qp_new(ax->pd, NULL, ax);
	if (!qp)
		return NULL;
	if (ax->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		weft_qpx_init(qp, ax->send_ops_flags);
	return &qp->vqp.qp;
}

int weft_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct weft_qp *qp = to_wqp(ibqp);
	struct ibv_modify_qp cmd = {};
	int ret;

	ret = ibv_cmd_modify_qp(ibqp, attr, mask, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	if (mask & IBV_QP_QKEY)
		qp->qkey = attr->qkey;
	if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET) {
		pthread_spin_lock(&qp->sq.lock);
		weft_wq_reset(&qp->sq);
		pthread_spin_unlock(&qp->sq.lock);
		pthread_spin_lock(&qp->rq.lock);
		weft_wq_reset(&qp->rq);
		pthread_spin_unlock(&qp->rq.lock);
	}
	return 0;
}

int weft_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(ibqp, attr, mask, init_attr, &cmd, sizeof(cmd));
}

/* Both CQs of a QP, the lower address first so that two callers agree. */
static void lock_cqs(struct ibv_qp *ibqp)
{
	struct weft_cq *a = to_wcq(ibqp->send_cq), *b = to_wcq(ibqp->recv_cq);

	if (a == b) {
		pthread_spin_lock(&a->lock);
		return;
	}
	pthread_spin_lock(a < b ? &a->lock : &b->lock);
	pthread_spin_lock(a < b ? &b->lock : &a->lock);
}

static void unlock_cqs(struct ibv_qp *ibqp)
{
	struct weft_cq *a = to_wcq(ibqp->send_cq), *b = to_wcq(ibqp->recv_cq);

	pthread_spin_unlock(&a->lock);
	if (a != b)
		pthread_spin_unlock(&b->lock);
}

int weft_destroy_qp(struct ibv_qp *ibqp)
{
	struct weft_context *ctx = to_wctx(ibqp->context);
	struct weft_qp *qp = to_wqp(ibqp);
	uint32_t qpn = ibqp->qp_num;
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	/* No poll_cq may still be looking at the QP when it is freed. */
	lock_cqs(ibqp);
	store_qp(ctx, qpn, NULL);
	unlock_cqs(ibqp);
	weft_wq_unmap(&qp->rq);
	weft_wq_unmap(&qp->sq);
	pthread_spin_destroy(&qp->rq.lock);
	pthread_spin_destroy(&qp->sq.lock);
	free(qp);
	return 0;
}
