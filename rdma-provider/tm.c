// SPDX-License-Identifier: MIT
/*
 * Weft provider: tag-matching SRQs (IBV_SRQT_TM; docs/hw-spec.md 16.15,
 * docs/matching.md).  The kernel creates the SRQ and maps, after its WQE
 * ring and consumer index, a ring of tag operations: ibv_post_srq_ops()
 * writes them there and rings SRQ_TM_DB, with no system call.  The
 * provider chooses the handles and remembers each tag's recv_wr_id: the
 * adapter's completions carry the handle, the message's tag and app_ctx.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <util/mmio.h>
#include <util/udma_barrier.h>

#include "weft.h"
#include "weft-abi.h"

enum { TAG_FREE = 0, TAG_LISTED, TAG_DELETING };

struct weft_tm_tag {
	uint64_t wr_id;			/* recv_wr_id of TAG_ADD */
	uint64_t tag;			/* the message's, while the adapter reads it */
	uint8_t state;
	bool del_signaled;		/* the application asked for the DEL's CQE */
	bool reading;			/* matched an RNDV: DATA_VALID or an error to come */
};

struct weft_tm {
	uint32_t max_tags, log2;
	uint32_t prod;			/* tag operations written, free-running */
	uint8_t *ops;			/* the mapped operation ring */
	volatile uint32_t *ci_ptr;	/* operations the adapter took */
	struct weft_tm_tag *tags;
	uint32_t *free;			/* stack of free handles */
	uint32_t nfree;
	struct weft_cq *cq;
};

static uint32_t log2_up(uint32_t v)
{
	uint32_t l = 0;

	while ((1u << l) < v)
		l++;
	return l;
}

static int tm_init(struct weft_srq *srq, const struct ibv_srq_init_attr_ex *attr,
		   const struct weft_ib_create_srq_resp *resp, uint32_t log2)
{
	struct weft_tm *tm;
	uint32_t i;

	if (resp->tm_log2 != log2 || resp->tm_ops_offset % 64 ||
	    resp->tm_ops_offset < (uint64_t)resp->ci_offset + 2 * sizeof(uint32_t) ||
	    (uint64_t)resp->tm_ops_offset + (sizeof(struct weft_vtmop) << log2) >
	    resp->ring_mmap_size)
		return EPROTO;
	tm = calloc(1, sizeof(*tm));
	if (!tm)
		return ENOMEM;
	tm->tags = calloc(attr->tm_cap.max_num_tags, sizeof(*tm->tags));
	tm->free = calloc(attr->tm_cap.max_num_tags, sizeof(*tm->free));
	if (!tm->tags || !tm->free) {
		free(tm->tags);
		free(tm->free);
		free(tm);
		return ENOMEM;
	}
	tm->max_tags = attr->tm_cap.max_num_tags;
	tm->log2 = log2;
	tm->ops = srq->wq.buf + resp->tm_ops_offset;
	tm->ci_ptr = srq->ci_ptr + 1;
	for (i = 0; i < tm->max_tags; i++)
		tm->free[tm->nfree++] = tm->max_tags - 1 - i;
	tm->cq = to_wcq(attr->cq);
	tm->cq->tm_srq = srq;
	srq->tm = tm;
	return 0;
}

void weft_tm_destroy(struct weft_srq *srq)
{
	struct weft_tm *tm = srq->tm;

	if (!tm)
		return;
	if (tm->cq->tm_srq == srq)
		tm->cq->tm_srq = NULL;
	free(tm->tags);
	free(tm->free);
	free(tm);
	srq->tm = NULL;
}

/*
 * ibv_create_srq_ex: only tag-matching SRQs come here (libibverbs sends
 * basic ones to ibv_create_srq); XRC SRQs, and a second tag-matching SRQ
 * on one CQ, are not supported (EOPNOTSUPP).
 */
struct ibv_srq *weft_create_srq_ex(struct ibv_context *context,
				   struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t need = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			      IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
	struct weft_create_srq_ex_resp resp = {};
	struct weft_create_srq_ex cmd = {};
	struct weft_srq *srq;
	uint32_t log2;
	int err;

	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) || attr->srq_type != IBV_SRQT_TM ||
	    (attr->comp_mask & ~need) || (attr->cq && to_wcq(attr->cq)->tm_srq)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & need) != need || !attr->cq ||
	    attr->tm_cap.max_num_tags < 1 ||
	    attr->tm_cap.max_num_tags > WEFT_VERBS_TM_MAX_TAGS ||
	    attr->tm_cap.max_ops > (1u << WEFT_VERBS_TM_OPS_LOG2)) {
		errno = EINVAL;
		return NULL;
	}
	log2 = log2_up(attr->tm_cap.max_ops ? attr->tm_cap.max_ops : 1);
	srq = weft_srq_alloc();
	if (!srq)
		return NULL;
	cmd.tm_log2 = log2;
	if (ibv_cmd_create_srq_ex(context, &srq->vsrq, attr, &cmd.ibv_cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp)))
		return weft_srq_abort(srq, 0);
	err = weft_srq_map(srq, context->cmd_fd, &resp.drv_payload);
	if (err)
		return weft_srq_abort(srq, err);
	err = tm_init(srq, attr, &resp.drv_payload, log2);
	if (err) {
		weft_wq_unmap(&srq->wq);
		return weft_srq_abort(srq, err);
	}
	return &srq->ibv_srq;
}

static int tm_op(struct weft_tm *tm, struct ibv_ops_wr *wr, struct weft_vtmop *op)
{
	uint32_t h;

	memset(op, 0, sizeof(*op));
	op->wr_id = htole64(wr->wr_id);
	if (wr->flags & ~(IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC))
		return EINVAL;
	op->flags = (wr->flags & IBV_OPS_SIGNALED ? WEFT_VTMF_SIGNALED : 0) |
		    (wr->flags & IBV_OPS_TM_SYNC ? WEFT_VTMF_SYNC : 0);
	op->unexpected_cnt = htole32(wr->tm.unexpected_cnt);
	switch (wr->opcode) {
	case IBV_WR_TAG_ADD:
		if (wr->tm.add.num_sge < 0 || wr->tm.add.num_sge > WEFT_VERBS_TM_MAX_SGE)
			return EINVAL;
		if (!tm->nfree)
			return ENOMEM;
		h = tm->free[--tm->nfree];
		tm->tags[h].wr_id = wr->tm.add.recv_wr_id;
		tm->tags[h].reading = false;
		tm->tags[h].state = TAG_LISTED;
		wr->tm.handle = h;
		op->opcode = WEFT_VTM_ADD;
		op->handle = htole32(h);
		op->tag = htole64(wr->tm.add.tag);
		op->mask = htole64(wr->tm.add.mask);
		op->num_sge = (uint8_t)wr->tm.add.num_sge;
		if (wr->tm.add.num_sge) {
			op->sge.addr = htole64(wr->tm.add.sg_list[0].addr);
			op->sge.length = htole32(wr->tm.add.sg_list[0].length);
			op->sge.lkey = htole32(wr->tm.add.sg_list[0].lkey);
		}
		return 0;
	case IBV_WR_TAG_DEL:
		h = wr->tm.handle;
		if (h >= tm->max_tags || tm->tags[h].state != TAG_LISTED)
			return EINVAL;
		/* Always completed by the adapter: its CQE frees the handle. */
		tm->tags[h].state = TAG_DELETING;
		tm->tags[h].del_signaled = wr->flags & IBV_OPS_SIGNALED;
		op->opcode = WEFT_VTM_DEL;
		op->flags |= WEFT_VTMF_SIGNALED;
		op->handle = htole32(h);
		return 0;
	case IBV_WR_TAG_SYNC:
		op->opcode = WEFT_VTM_SYNC;
		return 0;
	default:
		return EINVAL;
	}
}

int weft_post_srq_ops(struct ibv_srq *ibsrq, struct ibv_ops_wr *wr,
		      struct ibv_ops_wr **bad_wr)
{
	struct weft_context *ctx = to_wctx(ibsrq->context);
	struct weft_srq *srq = to_wsrq(ibsrq);
	struct weft_tm *tm = srq->tm;
	uint32_t start;
	int err = 0;

	if (!tm) {
		*bad_wr = wr;
		return EOPNOTSUPP;
	}
	pthread_spin_lock(&srq->wq.lock);
	start = tm->prod;
	for (; wr; wr = wr->next) {
		struct weft_vtmop op;

		if (tm->prod - le32toh(*tm->ci_ptr) >= (1u << tm->log2)) {
			err = ENOMEM;
			break;
		}
		err = tm_op(tm, wr, &op);
		if (err)
			break;
		memcpy(tm->ops + (size_t)(tm->prod & ((1u << tm->log2) - 1)) * sizeof(op), &op,
		       sizeof(op));
		tm->prod++;
	}
	if (err)
		*bad_wr = wr;
	if (tm->prod != start) {
		/* The operations must be visible before the adapter sees the index. */
		udma_to_device_barrier();
		mmio_write64_le((uint8_t *)ctx->uar + WEFT_UAR_SRQ_TM_DB,
				htole64(WEFT_UAR_DB(srq->srqn, tm->prod)));
	}
	pthread_spin_unlock(&srq->wq.lock);
	return err;
}

static void tag_release(struct weft_tm *tm, uint32_t h)
{
	if (h >= tm->max_tags || tm->tags[h].state == TAG_FREE)
		return;
	tm->tags[h].state = TAG_FREE;
	tm->free[tm->nfree++] = h;
}

static enum ibv_wc_status tm_status(uint8_t status)
{
	switch (status) {
	case WEFT_VWC_TM_ERR: return IBV_WC_TM_ERR;
	case WEFT_VWC_TM_RNDV_INCOMPLETE: return IBV_WC_TM_RNDV_INCOMPLETE;
	default: return weft_wc_status(status);
	}
}

bool weft_tm_fill_wc(struct weft_cq *cq, const struct weft_vcqe *cqe, struct ibv_wc *wc)
{
	struct weft_context *ctx = to_wctx(cq->vcq.cq.context);
	uint32_t qpn = le32toh(cqe->qpn), h = le16toh(cqe->wqe_index);
	uint8_t flags = cqe->flags;
	struct weft_srq *srq = NULL;
	struct weft_qp *qp;
	bool visible = true;

	memset(wc, 0, sizeof(*wc));
	memset(&cq->cur_tm, 0, sizeof(cq->cur_tm));
	wc->wr_id = le64toh(cqe->wr_id);
	wc->status = tm_status(cqe->status);
	wc->qp_num = qpn;
	/* RNDV_INCOMPLETE: the RNDV message is in the tagged buffer,
	 * byte_len long; software does the rendezvous (and its FIN). */
	if (wc->status == IBV_WC_SUCCESS || wc->status == IBV_WC_TM_RNDV_INCOMPLETE)
		wc->byte_len = le32toh(cqe->byte_len);
	else
		wc->vendor_err = le32toh(cqe->byte_len);	/* enum weft_reason */
	if (flags & WEFT_VCQE_TM_SYNC_REQ)
		wc->wc_flags |= IBV_WC_TM_SYNC_REQ;
	switch (cqe->opcode) {
	case WEFT_VWC_TM_ADD:
	case WEFT_VWC_TM_DEL:
	case WEFT_VWC_TM_SYNC:
		/* Tag operations name the SRQ in qpn. */
		srq = cq->tm_srq && cq->tm_srq->srqn == qpn ? cq->tm_srq : NULL;
		wc->qp_num = 0;
		wc->opcode = cqe->opcode == WEFT_VWC_TM_ADD ? IBV_WC_TM_ADD :
			     cqe->opcode == WEFT_VWC_TM_DEL ? IBV_WC_TM_DEL : IBV_WC_TM_SYNC;
		if (!srq)
			break;
		if (cqe->opcode == WEFT_VWC_TM_ADD && wc->status != IBV_WC_SUCCESS) {
			tag_release(srq->tm, h);
		} else if (cqe->opcode == WEFT_VWC_TM_DEL && wc->status == IBV_WC_SUCCESS &&
			   h < srq->tm->max_tags) {
			visible = srq->tm->tags[h].del_signaled;
			tag_release(srq->tm, h);
		}
		break;
	case WEFT_VWC_TM_RECV:
		wc->opcode = IBV_WC_TM_RECV;
		qp = weft_find_qp(ctx, qpn);
		if (qp && qp->vqp.qp.srq)
			srq = to_wsrq(qp->vqp.qp.srq);
		if (!(flags & (WEFT_VCQE_TM_MATCH | WEFT_VCQE_TM_DATA_VALID))) {
			/* Unexpected: the SRQ WQE's wr_id.  But a rendezvous
			 * the adapter was reading fails with no flag (a READ
			 * refused, a flush): its handle and tag name the
			 * receive (docs/matching.md, "Device rendezvous"). */
			if (wc->status != IBV_WC_SUCCESS && srq && srq->tm && h < srq->tm->max_tags &&
			    srq->tm->tags[h].state != TAG_FREE && srq->tm->tags[h].reading &&
			    srq->tm->tags[h].tag == le64toh(cqe->wr_id)) {
				wc->wr_id = srq->tm->tags[h].wr_id;
				cq->cur_tm.tag = srq->tm->tags[h].tag;
				cq->cur_tm.priv = le32toh(cqe->imm_inv);
				tag_release(srq->tm, h);
			}
			break;
		}
		if (flags & WEFT_VCQE_TM_MATCH)
			wc->wc_flags |= IBV_WC_TM_MATCH;
		if (flags & WEFT_VCQE_TM_DATA_VALID)
			wc->wc_flags |= IBV_WC_TM_DATA_VALID;
		cq->cur_tm.tag = le64toh(cqe->wr_id);
		cq->cur_tm.priv = le32toh(cqe->imm_inv);
		if (!srq || !srq->tm || h >= srq->tm->max_tags) {
			wc->wr_id = 0;
			break;
		}
		wc->wr_id = srq->tm->tags[h].wr_id;
		if ((flags & WEFT_VCQE_TM_DATA_VALID) || wc->status != IBV_WC_SUCCESS) {
			tag_release(srq->tm, h);
		} else {
			srq->tm->tags[h].reading = true;
			srq->tm->tags[h].tag = cq->cur_tm.tag;
		}
		break;
	default:
		wc->opcode = IBV_WC_TM_NO_TAG;
		break;
	}
	return visible;
}
