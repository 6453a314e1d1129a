// SPDX-License-Identifier: MIT
/*
 * FI_RMA (docs/libfabric.md "RMA"): fi_read and fi_write are RDMA READ and
 * WRITE on the connection to the target, with the target's virtual
 * address and provider key (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, the verbs
 * rkey).  The local buffer is the descriptor's MR when the application
 * gives one that covers it, else the registration cache's (mrcache.c);
 * fi_inject_write copies into a bounce slot.  Completion at the verbs
 * completion (the target's adapter has placed the data).  fi_writedata
 * follows the WRITE with a 16-byte [TMH NO_TAG, app_ctx WDATA, tag = the
 * data] on the same QP, from which the target's progress makes its
 * remote CQ data completion once RC order has placed the data.
 */
#include <string.h>

#include "wfi.h"

#define WFI_RMA_FLAGS (FI_COMPLETION | FI_INJECT | FI_TRIGGER | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | \
		       FI_INJECT_COMPLETE | FI_MORE | FI_FENCE | FI_REMOTE_CQ_DATA)

static struct wfi_ep *to_ep(struct fid_ep *fep)
{
	return wfi_ep_of(fep);
}

/* Chains after wr, the op of send slot i, a 16-byte SEND [TMH NO_TAG,
 * app_ctx = kind, tag = data (WDATA) or 0] from the slot's tail, signalled in its
 * place: the target's progress sees it once RC order has placed the op
 * (FI_RMA_EVENT, remote CQ data), and its completion completes both. */
void wfi_note_after(struct wfi_ep *ep, int i, struct ibv_send_wr *wr, struct ibv_send_wr *nwr,
		    struct ibv_sge *nsge, uint32_t kind, uint64_t data)
{
	struct wfi_wire_msg note = { .kind = WFI_MSG_NOTE, .note = kind, .data = (uint32_t)data };

	wfi_wire_encode(wfi_tx_slot(ep, i) + WFI_EAGER, WFI_HDR, &note);
	*nsge = (struct ibv_sge){ (uintptr_t)wfi_tx_slot(ep, i) + WFI_EAGER, WFI_HDR,
				  ep->slots_mr->lkey };
	*nwr = (struct ibv_send_wr){ .wr_id = wr->wr_id, .sg_list = nsge, .num_sge = 1,
				     .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	wr->send_flags = 0;
	wr->next = nwr;
}

/* The counter c of the operation in send slot t, whose WQEs are wr and
 * what is chained to it, counted by the adapter when its QP (slots bound:
 * mask) has c's slot: the last WQE, whose completion completes the
 * operation, names it (an error before it flushes it, which counts the
 * error once). */
void wfi_rma_count(struct wfi_ep *ep, uint8_t mask, struct wfi_tx *t, struct ibv_send_wr *wr,
		   struct fid_cntr *c)
{
	unsigned int cnt = wfi_cntr_send_flags(ep, mask, c);

	while (wr->next)
		wr = wr->next;
	wr->send_flags |= cnt;
	t->hw = cnt != 0;
}

/* Held trigger t (entry idx, trigger.c): wait, a WAIT_CNT(its counter's
 * slot, threshold) chained before wr, holds its trigger QP's send queue;
 * its completion (signaled) says it passed.  The QP to post on. */
struct ibv_qp *wfi_wait_before(struct wfi_trig *t, int idx, struct ibv_send_wr *wait,
			       struct ibv_send_wr *wr)
{
	*wait = (struct ibv_send_wr){
		.wr_id = WFI_WR(WFI_WR_TRIG, idx), .next = wr, .opcode = IBV_WR_DRIVER1,
		.send_flags = IBV_SEND_SIGNALED | wfi_hw_send_flags(t->tq->slot),
		.wr.atomic.compare_add = t->threshold,
	};
	return t->tq->id->qp;
}

/* Send slot i's operation (wr, and a note after it when wr->next) posted
 * behind held trigger t's WAIT_CNT: its flushes, until the WAIT passed,
 * go back to trigger.c. */
void wfi_tx_held(struct wfi_tx *x, int i, struct wfi_trig *t, int idx, const struct ibv_send_wr *wr)
{
	x->trig = idx + 1;
	x->flushes = wr->next ? 2 : 1;
	t->tx = i;
}

/* An RMA operation; held (a triggered one the adapter holds, entry idx
 * of the endpoint's table): posted on the peer's trigger connection
 * behind a WAIT_CNT on its counter slot (trigger.c). */
static ssize_t rma_post(struct wfi_ep *ep, bool write, void *buf, size_t len, void *desc,
			fi_addr_t peer_addr, uint64_t addr, uint64_t key, uint64_t data, void *ctx,
			uint64_t flags, struct wfi_trig *held, int idx)
{
	struct wfi_mr *m = desc;
	struct wfi_peer *peer;
	struct wfi_tx *t;
	struct ibv_sge sge;
	struct ibv_sge nsge;
	struct ibv_send_wr nwr, wr = { .sg_list = &sge, .num_sge = 1,
				       .send_flags = IBV_SEND_SIGNALED }, *bad, wait, *first = &wr;
	struct ibv_qp *qp;
	int i;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!(ep->info->caps & FI_RMA))
		return -FI_EOPNOTSUPP;
	if ((!buf && len) || len > WFI_MAX_MSG)
		return -FI_EINVAL;
	if ((flags & FI_INJECT) && (!write || len > WFI_EAGER))
		return -FI_EINVAL;
	if ((flags & FI_REMOTE_CQ_DATA) && (!write || data > UINT32_MAX))
		return -FI_EINVAL;	/* cq_data_size 4 */
	i = wfi_key_target(ep, peer_addr, len, &addr, &key);
	if (i)
		return i;
	i = wfi_tx_begin(ep, peer_addr, len, ctx, FI_RMA | (write ? FI_WRITE : FI_READ), flags,
			 &peer);
	if (i < 0)
		return i;
	t = &ep->tx[i];
	if (flags & FI_INJECT) {
		memcpy(wfi_tx_slot(ep, i), buf, len);
		sge = (struct ibv_sge){ (uintptr_t)wfi_tx_slot(ep, i), (uint32_t)len,
					ep->slots_mr->lkey };
	} else if (m && m->mr && (uint8_t *)buf >= (uint8_t *)m->mr->addr &&
		   (uint8_t *)buf + len <= (uint8_t *)m->mr->addr + m->mr->length) {
		sge = (struct ibv_sge){ (uintptr_t)buf, (uint32_t)len, m->mr->lkey };
	} else if (len) {
		t->reg = wfi_reg_get(ep->dom, buf, len, IBV_ACCESS_LOCAL_WRITE);
		if (!t->reg)
			return -FI_ENOMEM;
		sge = (struct ibv_sge){ (uintptr_t)buf, (uint32_t)len, t->reg->mr->lkey };
	} else {
		sge = (struct ibv_sge){ (uintptr_t)wfi_tx_slot(ep, i), 0, ep->slots_mr->lkey };
	}
	wr.wr_id = WFI_WR(WFI_WR_TX, i);
	wr.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = (uint32_t)key;
	/* FI_RMA_EVENT: a note after the op, which the target counts (its
	 * FI_REMOTE_* counter); with remote CQ data the note carries it (and
	 * counts as well). */
	if ((ep->info->caps & FI_RMA_EVENT) || (flags & FI_REMOTE_CQ_DATA))
		wfi_note_after(ep, i, &wr, &nwr, &nsge,
			       flags & FI_REMOTE_CQ_DATA ? WFI_NOTE_WDATA :
			       write ? WFI_NOTE_WRITE : WFI_NOTE_READ, data);
	qp = peer->out->qp;
	if (held) {
		qp = wfi_wait_before(held, idx, &wait, &wr);
		first = &wait;
	}
	wfi_rma_count(ep, held ? held->tq->hw : peer->hw_out, t, &wr,
		      write ? ep->wr_cntr : ep->rd_cntr);
	if (ibv_post_send(qp, first, &bad)) {
		wfi_reg_put(ep->dom, t->reg);
		t->reg = NULL;
		return -FI_EAGAIN;
	}
	t->busy = true;
	if (held)
		wfi_tx_held(t, i, held, idx, &wr);
	return 0;
}

ssize_t wfi_rma(struct wfi_ep *ep, bool write, void *buf, size_t len, void *desc,
		fi_addr_t peer_addr, uint64_t addr, uint64_t key, uint64_t data, void *ctx,
		uint64_t flags)
{
	return rma_post(ep, write, buf, len, desc, peer_addr, addr, key, data, ctx, flags, NULL, 0);
}

/* Triggered operation t (entry idx) posted behind its WAIT_CNT on its
 * trigger connection (t->tq, connected). */
ssize_t wfi_rma_held(struct wfi_ep *ep, struct wfi_trig *t, int idx)
{
	return rma_post(ep, t->type == FI_OP_WRITE, t->buf, t->len, t->desc, t->dest, t->addr,
			t->key, t->data, t->ctx, t->flags, t, idx);
}

static ssize_t locked(struct fid_ep *fep, bool write, void *buf, size_t len, void *desc,
		      fi_addr_t a, uint64_t addr, uint64_t key, uint64_t data, void *ctx,
		      uint64_t flags)
{
	struct wfi_ep *ep = to_ep(fep);
	ssize_t ret;

	if (flags & ~(uint64_t)WFI_RMA_FLAGS)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&ep->dom->lock);
	if (flags & FI_TRIGGER) {
		struct wfi_trig w = { .type = write ? FI_OP_WRITE : FI_OP_READ, .buf = buf,
				      .len = len, .desc = desc, .dest = a, .addr = addr, .key = key,
				      .data = data, .ctx = ctx, .flags = flags };

		ret = wfi_trig_add(ep, &w);
	} else
		ret = wfi_rma(ep, write, buf, len, desc, a, addr, key, data, ctx, flags);
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static ssize_t r_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
		      uint64_t addr, uint64_t key, void *ctx)
{
	return locked(ep, false, buf, len, desc, src, addr, key, 0, ctx,
		      wfi_op_flags(ep, FI_TRANSMIT));
}

static ssize_t r_readv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, uint64_t addr, uint64_t key, void *ctx)
{
	if (count != 1 || !iov)
		return -FI_EINVAL;
	return r_read(ep, iov[0].iov_base, iov[0].iov_len, desc ? desc[0] : NULL, src, addr, key,
		      ctx);
}

static ssize_t r_readmsg(struct fid_ep *ep, const struct fi_msg_rma *m, uint64_t flags)
{
	if (!m || m->iov_count != 1 || !m->msg_iov || m->rma_iov_count != 1 || !m->rma_iov ||
	    m->rma_iov[0].len != m->msg_iov[0].iov_len)
		return -FI_EINVAL;
	if (flags & FI_REMOTE_CQ_DATA)
		return -FI_EBADFLAGS;
	return locked(ep, false, m->msg_iov[0].iov_base, m->msg_iov[0].iov_len,
		      m->desc ? m->desc[0] : NULL, m->addr, m->rma_iov[0].addr, m->rma_iov[0].key, 0,
		      m->context, flags);
}

static ssize_t r_write(struct fid_ep *ep, const void *buf, size_t len, void *desc,
		       fi_addr_t dest, uint64_t addr, uint64_t key, void *ctx)
{
	return locked(ep, true, (void *)buf, len, desc, dest, addr, key, 0, ctx,
		      wfi_op_flags(ep, FI_TRANSMIT));
}

static ssize_t r_writev(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			fi_addr_t dest, uint64_t addr, uint64_t key, void *ctx)
{
	if (count != 1 || !iov)
		return -FI_EINVAL;
	return r_write(ep, iov[0].iov_base, iov[0].iov_len, desc ? desc[0] : NULL, dest, addr, key,
		       ctx);
}

static ssize_t r_writemsg(struct fid_ep *ep, const struct fi_msg_rma *m, uint64_t flags)
{
	if (!m || m->iov_count != 1 || !m->msg_iov || m->rma_iov_count != 1 || !m->rma_iov ||
	    m->rma_iov[0].len != m->msg_iov[0].iov_len)
		return -FI_EINVAL;
	return locked(ep, true, m->msg_iov[0].iov_base, m->msg_iov[0].iov_len,
		      m->desc ? m->desc[0] : NULL, m->addr, m->rma_iov[0].addr, m->rma_iov[0].key,
		      m->data, m->context, flags);
}

static ssize_t r_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest,
			uint64_t addr, uint64_t key)
{
	return locked(ep, true, (void *)buf, len, NULL, dest, addr, key, 0, NULL, FI_INJECT);
}

static ssize_t r_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			   uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key, void *ctx)
{
	return locked(ep, true, (void *)buf, len, desc, dest, addr, key, data, ctx,
		      wfi_op_flags(ep, FI_TRANSMIT) | FI_REMOTE_CQ_DATA);
}

static ssize_t r_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest, uint64_t addr, uint64_t key)
{
	return locked(ep, true, (void *)buf, len, NULL, dest, addr, key, data, NULL,
		      FI_INJECT | FI_REMOTE_CQ_DATA);
}

/* A NO_TAG note (decoded by wire.c) that is not an FI_RMA_EVENT count: a
 * key's query or answer (key.c), or the remote CQ data of an
 * fi_writedata, whose completion goes to the receive CQ once the write is
 * placed. */
void wfi_rma_note(struct wfi_ep *ep, const struct wfi_wire_msg *m, uint32_t qpn)
{
	if (m->note != WFI_NOTE_WDATA) {
		wfi_key_note(ep, m, qpn);
		return;
	}
	wfi_cntr_remote(ep, ep->rwr_cntr, qpn, WFI_CNT_EV_WRITE);
	wfi_cq_put(ep->rx_cq, NULL, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, 0, NULL,
		   m->data, 0, FI_ADDR_NOTAVAIL);
}

struct fi_ops_rma wfi_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = r_read,
	.readv = r_readv,
	.readmsg = r_readmsg,
	.write = r_write,
	.writev = r_writev,
	.writemsg = r_writemsg,
	.inject = r_inject,
	.writedata = r_writedata,
	.injectdata = r_injectdata,
};
