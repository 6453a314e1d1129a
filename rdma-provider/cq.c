// SPDX-License-Identifier: MIT
/*
 * Weft provider: completion queues.  The kernel creates the CQ and maps
 * its ring; polling reads CQEs (struct weft_vcqe) by their owner bit and
 * arming rings CQ_ARM on the UAR page, both without a system call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <util/mmio.h>
#include <util/udma_barrier.h>

#include "weft.h"
#include "weft-abi.h"

enum ibv_wc_status weft_wc_status(uint8_t status)
{
	switch (status) {
	case WEFT_VWC_SUCCESS: return IBV_WC_SUCCESS;
	case WEFT_VWC_LOC_LEN_ERR: return IBV_WC_LOC_LEN_ERR;
	case WEFT_VWC_LOC_QP_OP_ERR: return IBV_WC_LOC_QP_OP_ERR;
	case WEFT_VWC_LOC_PROT_ERR: return IBV_WC_LOC_PROT_ERR;
	case WEFT_VWC_WR_FLUSH_ERR: return IBV_WC_WR_FLUSH_ERR;
	case WEFT_VWC_MW_BIND_ERR: return IBV_WC_MW_BIND_ERR;
	case WEFT_VWC_BAD_RESP_ERR: return IBV_WC_BAD_RESP_ERR;
	case WEFT_VWC_LOC_ACCESS_ERR: return IBV_WC_LOC_ACCESS_ERR;
	case WEFT_VWC_REM_INV_REQ_ERR: return IBV_WC_REM_INV_REQ_ERR;
	case WEFT_VWC_REM_ACCESS_ERR: return IBV_WC_REM_ACCESS_ERR;
	case WEFT_VWC_REM_OP_ERR: return IBV_WC_REM_OP_ERR;
	case WEFT_VWC_RETRY_EXC_ERR: return IBV_WC_RETRY_EXC_ERR;
	case WEFT_VWC_RNR_RETRY_EXC_ERR: return IBV_WC_RNR_RETRY_EXC_ERR;
	case WEFT_VWC_REM_ABORT_ERR: return IBV_WC_REM_ABORT_ERR;
	default: return IBV_WC_GENERAL_ERR;
	}
}

static enum ibv_wc_opcode wc_opcode(uint8_t op)
{
	switch (op) {
	case WEFT_VWC_RDMA_WRITE: return IBV_WC_RDMA_WRITE;
	case WEFT_VWC_RDMA_READ: return IBV_WC_RDMA_READ;
	case WEFT_VWC_COMP_SWAP: return IBV_WC_COMP_SWAP;
	case WEFT_VWC_FETCH_ADD: return IBV_WC_FETCH_ADD;
	case WEFT_VWC_BIND_MW: return IBV_WC_BIND_MW;
	case WEFT_VWC_LOCAL_INV: return IBV_WC_LOCAL_INV;
	case WEFT_VWC_WAIT_CNT: return IBV_WC_DRIVER1;
	case WEFT_VWC_RECV: return IBV_WC_RECV;
	case WEFT_VWC_RECV_RDMA_IMM: return IBV_WC_RECV_RDMA_WITH_IMM;
	default: return IBV_WC_SEND;
	}
}

/* The CQE at the consumer index, or NULL while the adapter has not written it. */
static struct weft_vcqe *next_cqe(struct weft_cq *cq)
{
	uint32_t mask = (1u << cq->log2_entries) - 1;
	struct weft_vcqe *cqe = &cq->ring[cq->ci & mask];
	uint8_t pass = (cq->ci >> cq->log2_entries) & 1;
	uint8_t owner = *(volatile uint8_t *)&cqe->owner;

	if ((owner & 1) == pass)
		return NULL;
	/* Read the body only after the owner byte said it is complete. */
	udma_from_device_barrier();
	return cqe;
}

/* false: a completion the application did not ask for (skip it). */
static bool fill_wc(struct weft_cq *cq, const struct weft_vcqe *cqe,
		    struct ibv_wc *wc)
{
	struct weft_context *ctx = to_wctx(cq->vcq.cq.context);
	uint32_t qpn = le32toh(cqe->qpn);
	uint8_t flags = cqe->flags;
	struct weft_qp *qp;

	if (cqe->opcode >= WEFT_VWC_TM_ADD)
		return weft_tm_fill_wc(cq, cqe, wc);
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = le64toh(cqe->wr_id);
	wc->status = weft_wc_status(cqe->status);
	wc->opcode = wc_opcode(cqe->opcode);
	wc->qp_num = qpn;
	if (wc->status == IBV_WC_SUCCESS)
		wc->byte_len = le32toh(cqe->byte_len);
	else
		wc->vendor_err = le32toh(cqe->byte_len); /* enum weft_reason */
	if (flags & WEFT_VCQE_WITH_IMM) {
		wc->wc_flags |= IBV_WC_WITH_IMM;
		memcpy(&wc->imm_data, &cqe->imm_inv, sizeof(wc->imm_data));
	} else if (flags & WEFT_VCQE_WITH_INV) {
		wc->wc_flags |= IBV_WC_WITH_INV;
		wc->invalidated_rkey = le32toh(cqe->imm_inv);
	}
	if (flags & WEFT_VCQE_GRH)
		wc->wc_flags |= IBV_WC_GRH;
	/* RoCE has no service level: a UD receive's sl says which network
	 * header the 40 GRH bytes hold, as mlx5 reports it (bits 2:0, 1 IPv6,
	 * 2 IPv4).  UCX's ud_verbs reads it to find the destination address
	 * there, and drops every packet whose address it does not find. */
	if (flags & WEFT_VCQE_NET_IPV4)
		wc->sl = 2;
	else if (flags & WEFT_VCQE_NET_IPV6)
		wc->sl = 1;
	wc->src_qp = le32toh(cqe->src_qpn);

	/* Free the ring slots this completion retires. */
	qp = weft_find_qp(ctx, qpn);
	if (qp && ((flags & WEFT_VCQE_IS_SQ) || !qp->vqp.qp.srq))
		weft_wq_retire((flags & WEFT_VCQE_IS_SQ) ? &qp->sq : &qp->rq,
			       le16toh(cqe->wqe_index));
	return true;
}

int weft_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct weft_cq *cq = to_wcq(ibcq);
	struct weft_vcqe *cqe;
	int n;

	pthread_spin_lock(&cq->lock);
	for (n = 0; n < ne;) {
		cqe = next_cqe(cq);
		if (!cqe)
			break;
		cq->ci++;
		if (fill_wc(cq, cqe, &wc[n]))
			n++;
	}
	if (cq->ci != le32toh(*cq->ci_ptr)) {
		/* The CQEs are read before the adapter may reuse their slots. */
		udma_to_device_barrier();
		*cq->ci_ptr = htole32(cq->ci);
	}
	pthread_spin_unlock(&cq->lock);
	return n;
}

int weft_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct weft_cq *cq = to_wcq(ibcq);
	struct weft_context *ctx = to_wctx(ibcq->context);
	uint32_t ci;

	pthread_spin_lock(&cq->lock);
	ci = cq->ci;
	pthread_spin_unlock(&cq->lock);
	mmio_write64_le((uint8_t *)ctx->uar + WEFT_UAR_CQ_ARM,
			htole64(WEFT_UAR_ARM(cq->cqn, solicited_only ?
					     WEFT_CQ_ARM_SOLICITED :
					     WEFT_CQ_ARM_NEXT, ci)));
	return 0;
}

/* Checks the kernel's answer and maps the ring and the consumer index. */
static int cq_map(struct weft_cq *cq, struct ibv_context *context,
		  const struct weft_ib_create_cq_resp *resp)
{
	/* The ring, then the consumer index word, inside the mapping. */
	if (resp->log2_entries < 1 || resp->log2_entries > WEFT_VERBS_CQ_MAX_LOG2 ||
	    resp->ci_offset % sizeof(uint32_t) ||
	    resp->ci_offset < (sizeof(struct weft_vcqe) << resp->log2_entries) ||
	    (uint64_t)resp->ci_offset + sizeof(uint32_t) > resp->ring_mmap_size)
		return EPROTO;
	cq->map_len = resp->ring_mmap_size;
	cq->map = mmap(NULL, cq->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       context->cmd_fd, resp->ring_mmap_offset);
	if (cq->map == MAP_FAILED)
		return errno;
	cq->cqn = resp->cqn;
	cq->log2_entries = resp->log2_entries;
	cq->ring = cq->map;
	cq->ci_ptr = (volatile uint32_t *)((uint8_t *)cq->map + resp->ci_offset);
	return 0;
}

struct ibv_cq *weft_create_cq(struct ibv_context *context, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector)
{
	struct weft_create_cq_resp resp = {};
	struct ibv_create_cq cmd = {};
	struct weft_cq *cq;
	int err;

	/* The kernel refuses depths above max_cqe, which may exceed the ring. */
	if (cqe < 1) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	if (pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE))
		goto err_free;
	if (ibv_cmd_create_cq(context, cqe, channel, comp_vector, &cq->vcq.cq,
			      &cmd, sizeof(cmd), &resp.ibv_resp, sizeof(resp)))
		goto err_lock;
	err = cq_map(cq, context, &resp.drv_payload);
	if (err) {
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		errno = err;
		goto err_lock;
	}
	return &cq->vcq.cq;

err_lock:
	pthread_spin_destroy(&cq->lock);
err_free:
	free(cq);
	return NULL;
}

/* ---- The extended CQ API (ibv_create_cq_ex, ibv_start_poll, ...) --------- */

static struct weft_cq *ex_cq(struct ibv_cq_ex *ibcq)
{
	return container_of(ibcq, struct weft_cq, vcq.cq_ex);
}

/* The next CQE into cq->cur, or ENOENT. */
static int ex_take(struct weft_cq *cq)
{
	struct weft_vcqe *cqe;

	do {
		cqe = next_cqe(cq);
		if (!cqe)
			return ENOENT;
		cq->ci++;
	} while (!fill_wc(cq, cqe, &cq->cur));
	cq->vcq.cq_ex.wr_id = cq->cur.wr_id;
	cq->vcq.cq_ex.status = cq->cur.status;
	return 0;
}

static int ex_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct weft_cq *cq = ex_cq(ibcq);
	int err;

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	err = ex_take(cq);
	if (err)
		pthread_spin_unlock(&cq->lock);
	return err;
}

/* ENOENT keeps the lock: ibv_end_poll follows every successful start. */
static int ex_next_poll(struct ibv_cq_ex *ibcq)
{
	return ex_take(ex_cq(ibcq));
}

static void ex_end_poll(struct ibv_cq_ex *ibcq)
{
	struct weft_cq *cq = ex_cq(ibcq);

	/* The CQEs are read before the adapter may reuse their slots. */
	udma_to_device_barrier();
	*cq->ci_ptr = htole32(cq->ci);
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode ex_opcode(struct ibv_cq_ex *ibcq)
{
	return ex_cq(ibcq)->cur.opcode;
}

static uint32_t ex_vendor_err(struct ibv_cq_ex *ibcq)
{
	return ex_cq(ibcq)->cur.vendor_err;
}

static uint32_t ex_byte_len(struct ibv_cq_ex *ibcq)
{
	return ex_cq(ibcq)->cur.byte_len;
}

static __be32 ex_imm_data(struct ibv_cq_ex *ibcq)
{
	return ex_cq(ibcq)->cur.imm_data;
}

static uint32_t ex_qp_num(struct ibv_cq_ex *ibcq)
{
	return ex_cq(ibcq)->cur.qp_num;
}

static uint32_t ex_src_qp(struct ibv_cq_ex *ibcq)
{
	return ex_cq(ibcq)->cur.src_qp;
}

static unsigned int ex_wc_flags(struct ibv_cq_ex *ibcq)
{
	return ex_cq(ibcq)->cur.wc_flags;
}

/* RoCE: no LIDs (they read 0, as on rxe); sl: see fill_wc. */
static uint32_t ex_slid(struct ibv_cq_ex *ibcq)
{
	return ex_cq(ibcq)->cur.slid;
}

static uint8_t ex_sl(struct ibv_cq_ex *ibcq)
{
	return ex_cq(ibcq)->cur.sl;
}

static uint8_t ex_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	return ex_cq(ibcq)->cur.dlid_path_bits;
}

static void ex_tm_info(struct ibv_cq_ex *ibcq, struct ibv_wc_tm_info *info)
{
	*info = ex_cq(ibcq)->cur_tm;
}

#define WEFT_CQ_EX_WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
			     IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | \
			     IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
			     IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_TM_INFO)

/*
 * ibv_create_cq_ex: the same CQ as ibv_create_cq, read through the
 * extended API, with tag-matching information (tm.c).  Completion
 * timestamps, CVLAN and flow tags are not supported (EOPNOTSUPP), nor are
 * CQ flags.
 */
struct ibv_cq_ex *weft_create_cq_ex(struct ibv_context *context,
				    struct ibv_cq_init_attr_ex *attr)
{
	struct weft_create_cq_ex_resp resp = {};
	struct ibv_create_cq_ex cmd = {};
	struct ibv_cq_ex *ex;
	struct weft_cq *cq;
	int err;

	if (attr->wc_flags & ~(uint64_t)WEFT_CQ_EX_WC_FLAGS ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && attr->flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cqe < 1) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	if (pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE))
		goto err_free;
	if (ibv_cmd_create_cq_ex(context, attr, &cq->vcq, &cmd, sizeof(cmd),
				 &resp.ibv_resp, sizeof(resp), 0))
		goto err_lock;
	err = cq_map(cq, context, &resp.drv_payload);
	if (err) {
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		errno = err;
		goto err_lock;
	}
	ex = &cq->vcq.cq_ex;
	ex->start_poll = ex_start_poll;
	ex->next_poll = ex_next_poll;
	ex->end_poll = ex_end_poll;
	ex->read_opcode = ex_opcode;
	ex->read_vendor_err = ex_vendor_err;
	ex->read_wc_flags = ex_wc_flags;
	ex->read_byte_len = ex_byte_len;
	ex->read_imm_data = ex_imm_data;
	ex->read_qp_num = ex_qp_num;
	ex->read_src_qp = ex_src_qp;
	ex->read_slid = ex_slid;
	ex->read_sl = ex_sl;
	ex->read_dlid_path_bits = ex_dlid_path_bits;
	ex->read_tm_info = ex_tm_info;
	return ex;

err_lock:
	pthread_spin_destroy(&cq->lock);
err_free:
	free(cq);
	return NULL;
}

/*
 * ibv_resize_cq (hw-spec 16.7, "Resizing"): under the CQ's lock, so the
 * consumer index the kernel reads from its word does not move.  The
 * adapter copies the CQEs not yet polled into the new ring at the same
 * indexes, so polling goes on at the same consumer index in the new
 * mapping; the old one is unmapped.
 */
int weft_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct weft_cq *cq = to_wcq(ibcq);
	struct weft_resize_cq_resp resp = {};
	struct weft_ib_create_cq_resp layout;
	struct ibv_resize_cq cmd = {};
	void *old = cq->map;
	size_t old_len = cq->map_len;
	int err;

	if (cqe < 1 || cqe > (1 << WEFT_VERBS_CQ_MAX_LOG2))
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	*cq->ci_ptr = htole32(cq->ci);
	err = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (!err) {
		layout = (struct weft_ib_create_cq_resp){
			.cqn = cq->cqn,
			.log2_entries = resp.drv_payload.log2_entries,
			.ring_mmap_offset = resp.drv_payload.ring_mmap_offset,
			.ring_mmap_size = resp.drv_payload.ring_mmap_size,
			.ci_offset = resp.drv_payload.ci_offset,
		};
		err = cq_map(cq, ibcq->context, &layout);
		if (!err)
			munmap(old, old_len);
	}
	pthread_spin_unlock(&cq->lock);
	return err;
}

/*
 * ibv_modify_cq (hw-spec 16.7, "Moderation"): the kernel gives the CQ's
 * count and period to the adapter, which holds the event an armed CQ
 * raises until that many completions or that many microseconds after the
 * first; ibv_req_notify_cq arms it as before.
 */
int weft_modify_cq(struct ibv_cq *ibcq, struct ibv_modify_cq_attr *attr)
{
	struct ibv_modify_cq cmd = {};

	if (attr->attr_mask != IBV_CQ_ATTR_MODERATE)
		return EINVAL;
	return ibv_cmd_modify_cq(ibcq, attr, &cmd, sizeof(cmd));
}

int weft_destroy_cq(struct ibv_cq *ibcq)
{
	struct weft_cq *cq = to_wcq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	munmap(cq->map, cq->map_len);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}
