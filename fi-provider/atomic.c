// SPDX-License-Identifier: MIT
/*
 * FI_ATOMIC (docs/libfabric.md "Atomics"): the adapter's verbs atomics,
 * IBV_WR_ATOMIC_FETCH_AND_ADD and IBV_WR_ATOMIC_CMP_AND_SWP, on one
 * naturally aligned 8-byte element at the target (FI_MR_VIRT_ADDR, the
 * verbs rkey).  Only what the adapter does atomically is offered:
 *
 *   fi_atomic          FI_SUM                  FETCH_AND_ADD, result dropped
 *   fi_fetch_atomic    FI_SUM, FI_ATOMIC_READ  FETCH_AND_ADD (of 0 to read)
 *   fi_compare_atomic  FI_CSWAP                CMP_AND_SWP
 *
 * on FI_INT64 and FI_UINT64, count 1.  Everything else answers
 * -FI_EOPNOTSUPP from the valid/query calls and from the operations:
 * nothing is emulated with a read and a write.  The 8-byte response lands
 * in the operation's bounce slot and is copied to the result buffer at
 * the completion.
 */
#include <string.h>

#include "wfi.h"

#define WFI_ATOMIC_FLAGS (FI_COMPLETION | FI_INJECT | FI_TRIGGER | FI_TRANSMIT_COMPLETE | \
			  FI_DELIVERY_COMPLETE | FI_INJECT_COMPLETE | FI_MORE | FI_FENCE)

/* 0 when the adapter does (kind, dt, op) atomically; count is 1. */
int wfi_atomic_valid(int kind, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	if ((unsigned int)op >= FI_ATOMIC_OP_LAST)
		return -FI_EINVAL;
	if (dt != FI_INT64 && dt != FI_UINT64)
		return -FI_EOPNOTSUPP;
	switch (kind) {
	case WFI_ATOMIC_BASE:
		if (op != FI_SUM)
			return -FI_EOPNOTSUPP;
		break;
	case WFI_ATOMIC_FETCH:
		if (op != FI_SUM && op != FI_ATOMIC_READ)
			return -FI_EOPNOTSUPP;
		break;
	case WFI_ATOMIC_COMPARE:
		if (op != FI_CSWAP)
			return -FI_EOPNOTSUPP;
		break;
	default:
		return -FI_EINVAL;
	}
	if (count)
		*count = 1;
	return 0;
}

/* An atomic; held (a triggered one the adapter holds, entry idx of the
 * tables, trigger.c): posted on its trigger connection behind a WAIT_CNT
 * on its counter slot, as rma.c posts RMA. */
static ssize_t atomic_post(struct wfi_ep *ep, int kind, const void *operand, size_t count,
			   const void *compare, void *result, fi_addr_t dest, uint64_t addr,
			   uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx,
			   uint64_t flags, struct wfi_trig *held, int idx)
{
	struct wfi_peer *peer;
	struct wfi_tx *t;
	struct ibv_sge sge, nsge;
	struct ibv_send_wr nwr, wr = { .sg_list = &sge, .num_sge = 1,
				       .send_flags = IBV_SEND_SIGNALED }, *bad, wait, *first = &wr;
	struct ibv_qp *qp;
	uint64_t v = 0, c = 0;
	int i, ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!(ep->info->caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	ret = wfi_atomic_valid(kind, dt, op, NULL);
	if (ret)
		return ret;
	if (count != 1 || (!operand && op != FI_ATOMIC_READ) ||
	    (kind != WFI_ATOMIC_BASE && !result) || (kind == WFI_ATOMIC_COMPARE && !compare))
		return -FI_EINVAL;
	if ((flags & FI_INJECT) && kind != WFI_ATOMIC_BASE)
		return -FI_EINVAL;
	ret = wfi_key_target(ep, dest, 8, &addr, &key);
	if (ret)
		return ret;
	if (addr & 7)
		return -FI_EINVAL;
	if (operand && op != FI_ATOMIC_READ)
		memcpy(&v, operand, 8);
	if (compare)
		memcpy(&c, compare, 8);
	i = wfi_tx_begin(ep, dest, 8, ctx,
			 FI_ATOMIC | (kind == WFI_ATOMIC_BASE ? FI_WRITE : FI_READ), flags, &peer);
	if (i < 0)
		return i;
	t = &ep->tx[i];
	t->result = kind == WFI_ATOMIC_BASE ? NULL : result;
	sge = (struct ibv_sge){ (uintptr_t)wfi_tx_slot(ep, i), 8, ep->slots_mr->lkey };
	wr.wr_id = WFI_WR(WFI_WR_TX, i);
	wr.wr.atomic.remote_addr = addr;
	wr.wr.atomic.rkey = (uint32_t)key;
	if (kind == WFI_ATOMIC_COMPARE) {
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = c;
		wr.wr.atomic.swap = v;
	} else {
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.compare_add = v;
	}
	/* The target counts the update (FI_REMOTE_WRITE) as an RDMA WRITE. */
	if (ep->info->caps & FI_RMA_EVENT)
		wfi_note_after(ep, i, &wr, &nwr, &nsge, WFI_NOTE_WRITE, 0);
	qp = peer->out->qp;
	if (held) {
		qp = wfi_wait_before(held, idx, &wait, &wr);
		first = &wait;
	}
	wfi_rma_count(ep, held ? held->tq->hw : peer->hw_out, t, &wr,
		      kind == WFI_ATOMIC_BASE ? ep->wr_cntr : ep->rd_cntr);
	if (ibv_post_send(qp, first, &bad))
		return -FI_EAGAIN;
	t->busy = true;
	if (held)
		wfi_tx_held(t, i, held, idx, &wr);
	return 0;
}

ssize_t wfi_atomic_post(struct wfi_ep *ep, int kind, const void *operand, size_t count,
			const void *compare, void *result, fi_addr_t dest, uint64_t addr,
			uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx,
			uint64_t flags)
{
	return atomic_post(ep, kind, operand, count, compare, result, dest, addr, key, dt, op, ctx,
			   flags, NULL, 0);
}

/* The kind of a triggered atomic (FI_OP_ATOMIC, _FETCH_, _COMPARE_). */
int wfi_atomic_kind(enum fi_op_type type)
{
	return type == FI_OP_ATOMIC ? WFI_ATOMIC_BASE : type == FI_OP_FETCH_ATOMIC ?
	       WFI_ATOMIC_FETCH : WFI_ATOMIC_COMPARE;
}

/* Triggered atomic t (entry idx) posted behind its WAIT_CNT on its
 * trigger connection (t->tq, connected). */
ssize_t wfi_atomic_held(struct wfi_ep *ep, struct wfi_trig *t, int idx)
{
	return atomic_post(ep, wfi_atomic_kind(t->type), &t->operand, t->len, &t->compare,
			   t->result, t->dest, t->addr, t->key, t->dt, t->op, t->ctx, t->flags, t,
			   idx);
}

static ssize_t locked(struct fid_ep *fep, int kind, const void *buf, size_t count,
		      const void *compare, void *result, fi_addr_t dest, uint64_t addr,
		      uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx, uint64_t flags)
{
	struct wfi_ep *ep;
	ssize_t ret;

	if (!fep)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)WFI_ATOMIC_FLAGS)
		return -FI_EBADFLAGS;
	ep = wfi_ep_of(fep);
	pthread_mutex_lock(&ep->dom->lock);
	if (flags & FI_TRIGGER) {
		struct wfi_trig w = {
			.type = kind == WFI_ATOMIC_BASE ? FI_OP_ATOMIC : kind == WFI_ATOMIC_FETCH ?
				FI_OP_FETCH_ATOMIC : FI_OP_COMPARE_ATOMIC,
			.buf = (void *)buf, .len = count, .dest = dest, .addr = addr, .key = key,
			.ctx = ctx, .flags = flags, .dt = dt, .op = op, .result = result,
		};

		ret = wfi_atomic_valid(kind, dt, op, NULL);
		if (!ret && (count != 1 || (!buf && op != FI_ATOMIC_READ) ||
			     (kind == WFI_ATOMIC_COMPARE && !compare)))
			ret = -FI_EINVAL;
		if (!ret) {
			if (buf && op != FI_ATOMIC_READ)
				memcpy(&w.operand, buf, 8);
			if (compare)
				memcpy(&w.compare, compare, 8);
			ret = wfi_trig_add(ep, &w);
		}
	} else {
		ret = wfi_atomic_post(ep, kind, buf, count, compare, result, dest, addr, key, dt, op,
				      ctx, flags);
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

/* One fi_ioc (count elements at addr) from an iovec array of one entry. */
static int one_ioc(const struct fi_ioc *iov, size_t n, const void **addr, size_t *count)
{
	if (!iov || n != 1)
		return -FI_EINVAL;
	*addr = iov[0].addr;
	*count = iov[0].count;
	return 0;
}

static ssize_t a_write(struct fid_ep *ep, const void *buf, size_t count, void *desc,
		       fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
		       enum fi_op op, void *ctx)
{
	(void)desc;
	return locked(ep, WFI_ATOMIC_BASE, buf, count, NULL, NULL, dest, addr, key, dt, op, ctx,
		      ep ? wfi_op_flags(ep, FI_TRANSMIT) : 0);
}

static ssize_t a_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
			fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
			enum fi_op op, void *ctx)
{
	const void *buf;
	size_t n;

	if (one_ioc(iov, count, &buf, &n))
		return -FI_EINVAL;
	return a_write(ep, buf, n, desc ? desc[0] : NULL, dest, addr, key, dt, op, ctx);
}

static int msg_ok(const struct fi_msg_atomic *m)
{
	return m && m->iov_count == 1 && m->msg_iov && m->rma_iov_count == 1 && m->rma_iov &&
	       m->rma_iov[0].count == m->msg_iov[0].count;
}

static ssize_t a_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *m, uint64_t flags)
{
	if (!msg_ok(m))
		return -FI_EINVAL;
	if (flags & FI_REMOTE_CQ_DATA)
		return -FI_EBADFLAGS;
	return locked(ep, WFI_ATOMIC_BASE, m->msg_iov[0].addr, m->msg_iov[0].count, NULL, NULL,
		      m->addr, m->rma_iov[0].addr, m->rma_iov[0].key, m->datatype, m->op,
		      m->context, flags);
}

static ssize_t a_inject(struct fid_ep *ep, const void *buf, size_t count, fi_addr_t dest,
			uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op)
{
	return locked(ep, WFI_ATOMIC_BASE, buf, count, NULL, NULL, dest, addr, key, dt, op, NULL,
		      FI_INJECT);
}

static ssize_t a_readwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			   void *result, void *result_desc, fi_addr_t dest, uint64_t addr,
			   uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)desc;
	(void)result_desc;
	return locked(ep, WFI_ATOMIC_FETCH, buf, count, NULL, result, dest, addr, key, dt, op, ctx,
		      ep ? wfi_op_flags(ep, FI_TRANSMIT) : 0);
}

static ssize_t a_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
			    size_t count, struct fi_ioc *resultv, void **result_desc,
			    size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
			    enum fi_datatype dt, enum fi_op op, void *ctx)
{
	const void *buf, *res;
	size_t n, rn;

	/* FI_ATOMIC_READ may come without a source buffer. */
	if (!iov && !count && op == FI_ATOMIC_READ) {
		buf = NULL;
		n = 1;
	} else if (one_ioc(iov, count, &buf, &n)) {
		return -FI_EINVAL;
	}
	if (one_ioc(resultv, result_count, &res, &rn) || rn != n)
		return -FI_EINVAL;
	return a_readwrite(ep, buf, n, desc ? desc[0] : NULL, (void *)res,
			   result_desc ? result_desc[0] : NULL, dest, addr, key, dt, op, ctx);
}

static ssize_t a_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *m,
			      struct fi_ioc *resultv, void **result_desc, size_t result_count,
			      uint64_t flags)
{
	const void *res;
	size_t rn;

	(void)result_desc;
	if (!msg_ok(m) || one_ioc(resultv, result_count, &res, &rn) || rn != m->msg_iov[0].count)
		return -FI_EINVAL;
	if (flags & FI_REMOTE_CQ_DATA)
		return -FI_EBADFLAGS;
	return locked(ep, WFI_ATOMIC_FETCH, m->msg_iov[0].addr, m->msg_iov[0].count, NULL,
		      (void *)res, m->addr, m->rma_iov[0].addr, m->rma_iov[0].key, m->datatype,
		      m->op, m->context, flags);
}

static ssize_t a_compwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			   const void *compare, void *compare_desc, void *result,
			   void *result_desc, fi_addr_t dest, uint64_t addr, uint64_t key,
			   enum fi_datatype dt, enum fi_op op, void *ctx)
{
	(void)desc;
	(void)compare_desc;
	(void)result_desc;
	return locked(ep, WFI_ATOMIC_COMPARE, buf, count, compare, result, dest, addr, key, dt, op,
		      ctx, ep ? wfi_op_flags(ep, FI_TRANSMIT) : 0);
}

static ssize_t a_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
			    size_t count, const struct fi_ioc *comparev, void **compare_desc,
			    size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			    size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
			    enum fi_datatype dt, enum fi_op op, void *ctx)
{
	const void *buf, *cmp, *res;
	size_t n, cn, rn;

	if (one_ioc(iov, count, &buf, &n) || one_ioc(comparev, compare_count, &cmp, &cn) ||
	    one_ioc(resultv, result_count, &res, &rn) || cn != n || rn != n)
		return -FI_EINVAL;
	return a_compwrite(ep, buf, n, desc ? desc[0] : NULL, cmp,
			   compare_desc ? compare_desc[0] : NULL, (void *)res,
			   result_desc ? result_desc[0] : NULL, dest, addr, key, dt, op, ctx);
}

static ssize_t a_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *m,
			      const struct fi_ioc *comparev, void **compare_desc,
			      size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			      size_t result_count, uint64_t flags)
{
	const void *cmp, *res;
	size_t cn, rn;

	(void)compare_desc;
	(void)result_desc;
	if (!msg_ok(m) || one_ioc(comparev, compare_count, &cmp, &cn) ||
	    one_ioc(resultv, result_count, &res, &rn) || cn != m->msg_iov[0].count ||
	    rn != m->msg_iov[0].count)
		return -FI_EINVAL;
	if (flags & FI_REMOTE_CQ_DATA)
		return -FI_EBADFLAGS;
	return locked(ep, WFI_ATOMIC_COMPARE, m->msg_iov[0].addr, m->msg_iov[0].count, cmp,
		      (void *)res, m->addr, m->rma_iov[0].addr, m->rma_iov[0].key, m->datatype,
		      m->op, m->context, flags);
}

static int ep_valid(struct fid_ep *fep, int kind, enum fi_datatype dt, enum fi_op op,
		    size_t *count)
{
	if (!fep || !count)
		return -FI_EINVAL;
	if (!(wfi_ep_of(fep)->info->caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	return wfi_atomic_valid(kind, dt, op, count);
}

static int a_writevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	return ep_valid(ep, WFI_ATOMIC_BASE, dt, op, count);
}

static int a_readwritevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	return ep_valid(ep, WFI_ATOMIC_FETCH, dt, op, count);
}

static int a_compwritevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	return ep_valid(ep, WFI_ATOMIC_COMPARE, dt, op, count);
}

/* fi_query_atomic: flags 0, FI_FETCH_ATOMIC or FI_COMPARE_ATOMIC
 * (FI_TAGGED, atomics on tagged buffers, is not offered). */
int wfi_query_atomic(struct fid_domain *d, enum fi_datatype dt, enum fi_op op,
		     struct fi_atomic_attr *attr, uint64_t flags)
{
	size_t count;
	int kind, ret;

	if (!d || !attr)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC | FI_TAGGED))
		return -FI_EBADFLAGS;
	if ((flags & FI_FETCH_ATOMIC) && (flags & FI_COMPARE_ATOMIC))
		return -FI_EINVAL;
	if (flags & FI_TAGGED)
		return -FI_EOPNOTSUPP;
	kind = flags & FI_FETCH_ATOMIC ? WFI_ATOMIC_FETCH :
	       flags & FI_COMPARE_ATOMIC ? WFI_ATOMIC_COMPARE : WFI_ATOMIC_BASE;
	ret = wfi_atomic_valid(kind, dt, op, &count);
	if (ret)
		return ret;
	attr->count = count;
	attr->size = 8;
	return 0;
}

struct fi_ops_atomic wfi_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = a_write,
	.writev = a_writev,
	.writemsg = a_writemsg,
	.inject = a_inject,
	.readwrite = a_readwrite,
	.readwritev = a_readwritev,
	.readwritemsg = a_readwritemsg,
	.compwrite = a_compwrite,
	.compwritev = a_compwritev,
	.compwritemsg = a_compwritemsg,
	.writevalid = a_writevalid,
	.readwritevalid = a_readwritevalid,
	.compwritevalid = a_compwritevalid,
};
