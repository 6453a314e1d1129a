// SPDX-License-Identifier: MIT
/*
 * Weft provider: shared receive queues (docs/hw-spec.md 16.14).  The
 * kernel creates the SRQ and maps its ring, followed by the consumer index
 * the adapter writes each time a QP takes a WQE; posting writes WQEs into
 * the ring and rings SRQ_DB, with no system call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <util/mmio.h>
#include <util/udma_barrier.h>

#include "weft.h"
#include "weft-abi.h"

/* Checks the kernel's answer and maps the ring and the consumer index. */
int weft_srq_map(struct weft_srq *srq, int cmd_fd, const struct weft_ib_create_srq_resp *resp)
{
	int err;

	/* The ring, then the consumer index word, inside the mapping. */
	if (resp->ci_offset % sizeof(uint32_t) || resp->log2 > WEFT_VERBS_WQ_MAX_LOG2 ||
	    resp->stride_log2 < 5 || resp->stride_log2 > 9 ||
	    resp->ci_offset < ((uint64_t)1 << (resp->log2 + resp->stride_log2)) ||
	    (uint64_t)resp->ci_offset + sizeof(uint32_t) > resp->ring_mmap_size)
		return EPROTO;
	err = weft_wq_map(&srq->wq, cmd_fd, resp->ring_mmap_offset, resp->ring_mmap_size,
			  resp->log2, resp->stride_log2);
	if (err)
		return err;
	srq->wq.max_sge = ((1u << resp->stride_log2) - sizeof(struct weft_vrwqe)) /
			  sizeof(struct weft_vsge);
	srq->ci_ptr = (volatile uint32_t *)(srq->wq.buf + resp->ci_offset);
	srq->srqn = resp->srqn;
	return 0;
}

/* A zeroed SRQ with its lock initialised, or NULL. */
struct weft_srq *weft_srq_alloc(void)
{
	struct weft_srq *srq = calloc(1, sizeof(*srq));

	if (!srq)
		return NULL;
	if (pthread_spin_init(&srq->wq.lock, PTHREAD_PROCESS_PRIVATE)) {
		free(srq);
		return NULL;
	}
	return srq;
}

/*
 * Undoes a create that failed after weft_srq_alloc (basic and
 * tag-matching SRQs alike).  err is 0 when the kernel refused the SRQ
 * (errno already says why); otherwise the kernel's SRQ is destroyed and
 * errno = err.  Returns NULL, the create's answer.
 */
struct ibv_srq *weft_srq_abort(struct weft_srq *srq, int err)
{
	if (err) {
		ibv_cmd_destroy_srq(&srq->ibv_srq);
		errno = err;
	}
	pthread_spin_destroy(&srq->wq.lock);
	free(srq);
	return NULL;
}

struct ibv_srq *weft_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct weft_create_srq_resp resp = {};
	struct ibv_create_srq cmd = {};
	struct weft_srq *srq;
	int err;

	srq = weft_srq_alloc();
	if (!srq)
		return NULL;
	if (ibv_cmd_create_srq(pd, &srq->ibv_srq, attr, &cmd, sizeof(cmd),
			       &resp.ibv_resp, sizeof(resp)))
		return weft_srq_abort(srq, 0);
	err = weft_srq_map(srq, pd->context->cmd_fd, &resp.drv_payload);
	if (err)
		return weft_srq_abort(srq, err);
	return &srq->ibv_srq;
}

int weft_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct ibv_modify_srq cmd;

	/* The ring is not resized (the kernel says EOPNOTSUPP too). */
	if (mask & IBV_SRQ_MAX_WR)
		return EOPNOTSUPP;
	return ibv_cmd_modify_srq(srq, attr, mask, &cmd, sizeof(cmd));
}

int weft_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

int weft_destroy_srq(struct ibv_srq *ibsrq)
{
	struct weft_srq *srq = to_wsrq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	weft_tm_destroy(srq);
	weft_wq_unmap(&srq->wq);
	pthread_spin_destroy(&srq->wq.lock);
	free(srq);
	return 0;
}

int weft_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	struct weft_context *ctx = to_wctx(ibsrq->context);
	struct weft_srq *srq = to_wsrq(ibsrq);
	struct weft_wq *wq = &srq->wq;
	uint32_t start, mask = (1u << wq->log2) - 1;
	int err = 0;

	pthread_spin_lock(&wq->lock);
	start = wq->head;
	for (; wr; wr = wr->next) {
		struct weft_vrwqe *wqe;
		struct weft_vsge *sge;
		int i;

		/* Slots before the adapter's consumer index are free. */
		if (wq->head - le32toh(*srq->ci_ptr) >= (1u << wq->log2))
			err = ENOMEM;
		else if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge)
			err = EINVAL;
		if (err)
			break;
		wqe = (struct weft_vrwqe *)(wq->buf + ((size_t)(wq->head & mask) << wq->stride_log2));
		memset(wqe, 0, sizeof(*wqe));
		wqe->wr_id = htole64(wr->wr_id);
		wqe->num_sge = wr->num_sge;
		sge = (struct weft_vsge *)(wqe + 1);
		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = htole64(wr->sg_list[i].addr);
			sge[i].length = htole32(wr->sg_list[i].length);
			sge[i].lkey = htole32(wr->sg_list[i].lkey);
		}
		wq->head++;
	}
	if (err)
		*bad_wr = wr;
	if (wq->head != start) {
		/* The WQEs must be visible before the adapter sees the index. */
		udma_to_device_barrier();
		mmio_write64_le((uint8_t *)ctx->uar + WEFT_UAR_SRQ_DB,
				htole64(WEFT_UAR_DB(srq->srqn, wq->head)));
	}
	pthread_spin_unlock(&wq->lock);
	return err;
}
