// SPDX-License-Identifier: MIT
/*
 * Sends (docs/libfabric.md "Protocol"): up to WFI_EAGER bytes an eager
 * SEND of [TMH EAGER | data] from a registered bounce buffer; above it
 * rdma-core's rendezvous, a SEND of [TMH RNDV (app_ctx = the send's slot)
 * | RVH (the user buffer, registered for remote reads through the
 * registration cache)], completed when
 * the receiver's FIN (TMH FIN, the same app_ctx) arrives, whoever (its
 * software or its adapter) did the READ.
 */
#include <string.h>

#include "wfi.h"

int wfi_tx_slot_find(struct wfi_ep *ep, int first, int end)
{
	int i;

	for (i = first; i < end; i++)
		if (!ep->tx[i].busy)
			return i;
	return -1;
}

/* The connection to dest and a free send slot (progressing once when
 * none) set up for an operation of len bytes: its index, or a negative
 * error.  The caller marks it busy once posted. */
int wfi_tx_begin(struct wfi_ep *ep, fi_addr_t dest, size_t len, void *ctx, uint64_t cflags,
		 uint64_t flags, struct wfi_peer **peer)
{
	struct wfi_tx *t;
	int i, ret;

	ret = wfi_conn_get(ep, dest, peer);
	if (ret)
		return ret;
	i = wfi_tx_slot_find(ep, 0, WFI_TX_USER);
	if (i < 0) {
		wfi_progress(ep);
		i = wfi_tx_slot_find(ep, 0, WFI_TX_USER);
		if (i < 0)
			return -FI_EAGAIN;
	}
	t = &ep->tx[i];
	memset(t, 0, sizeof(*t));
	t->ctx = ctx;
	t->len = len;
	t->cflags = cflags;
	t->ccntr = ep->work_cntr;
	t->signal = !(flags & FI_INJECT) && (!ep->tx_sel || (flags & FI_COMPLETION));
	return i;
}

/* A SEND of send slot i's first bytes on connection id; cnt: the counter
 * slot's send_flags (wfi_cntr_send_flags) or 0. */
static int post(struct wfi_ep *ep, struct rdma_cm_id *id, int i, uint32_t bytes, unsigned int cnt)
{
	struct ibv_sge sge = { (uintptr_t)wfi_tx_slot(ep, i), bytes, ep->slots_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = WFI_WR(WFI_WR_TX, i), .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED | cnt,
	}, *bad;

	return ibv_post_send(id->qp, &wr, &bad) ? -FI_EAGAIN : 0;
}

/* Message m (wire.c) into send slot i, posted on connection id. */
static int post_msg(struct wfi_ep *ep, struct rdma_cm_id *id, int i, const struct wfi_wire_msg *m,
		    unsigned int cnt)
{
	size_t n = wfi_wire_encode(wfi_tx_slot(ep, i), WFI_SLOT, m);

	return n ? post(ep, id, i, (uint32_t)n, cnt) : -FI_EINVAL;
}

ssize_t wfi_send(struct wfi_ep *ep, const void *buf, size_t len, fi_addr_t dest, uint64_t tag,
		 uint64_t data, void *ctx, uint64_t flags, bool msg)
{
	struct wfi_peer *peer;
	struct wfi_tx *t;
	uint64_t wire;
	bool dev;
	int i, ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if ((!buf && len) || len > WFI_MAX_MSG || (!msg && (tag & ~WFI_TAG_MASK)))
		return -FI_EINVAL;
	if ((flags & FI_INJECT) && len > WFI_EAGER)
		return -FI_EINVAL;
	i = wfi_tx_begin(ep, dest, len, ctx, FI_SEND | (msg ? FI_MSG : FI_TAGGED), flags, &peer);
	if (i < 0)
		return i;
	t = &ep->tx[i];
	t->tag = tag;
	wire = (msg ? WFI_MSG_BIT : tag) | ((uint64_t)peer->my_id << WFI_SRC_SHIFT);
	if (flags & FI_REMOTE_CQ_DATA)
		wire |= WFI_DATA_BIT;
	if (len <= WFI_EAGER) {
		/* app_ctx carries the remote CQ data (tm_info.priv at the receiver). */
		struct wfi_wire_msg m = { .kind = WFI_MSG_EAGER, .app_ctx = (uint32_t)data,
					  .tag = wire, .payload = buf, .plen = (uint32_t)len };
		/* One SEND WQE: the adapter counts it on FI_SEND's counter
		 * (a rendezvous completes at the FIN: software counts it). */
		unsigned int cnt = wfi_cntr_send_flags(ep, peer->hw_out, ep->tx_cntr);

		t->hw = cnt != 0;
		ret = post_msg(ep, peer->out, i, &m, cnt);
	} else {
		struct wfi_wire_msg m = { .kind = WFI_MSG_RNDV };

		t->reg = wfi_reg_get(ep->dom, (void *)buf, len, IBV_ACCESS_REMOTE_READ);
		if (!t->reg)
			return -FI_ENOMEM;
		t->rndv = true;
		t->qpn = peer->out->qp->qp_num;
		m.rvh = (struct wfi_wire_rvh){ (uintptr_t)buf, t->reg->mr->rkey, (uint32_t)len };
		/* rdma-core's RNDV (by default), which the adapter matches in
		 * order with the eager messages and reads itself; its app_ctx
		 * names the send for the FIN (bits 7..0) and carries remote CQ
		 * data below 2^24 (bits 31..8, wire bits 62 and 61), since the
		 * adapter delivers no byte after the RVH.  Else the same header
		 * in an EAGER message flagged WFI_RNDV_BIT alone, the data after
		 * the RVH (docs/libfabric.md "Protocol"). */
		dev = ep->rvh && (!(flags & FI_REMOTE_CQ_DATA) || data < (1ull << 24));
		t->app_ctx = (uint32_t)i;
		if (dev && (flags & FI_REMOTE_CQ_DATA)) {
			t->app_ctx |= (uint32_t)data << 8;
			wire |= WFI_RNDV_BIT;
		} else if (!dev) {
			wire = (wire & ~WFI_DATA_BIT) | WFI_RNDV_BIT;
		}
		m.op = dev ? WFI_OP_RNDV : WFI_OP_EAGER;
		m.app_ctx = t->app_ctx;
		m.tag = wire;
		/* The remote CQ data after the RVH, when there is some. */
		m.has_data = flags & FI_REMOTE_CQ_DATA;
		m.data = (uint32_t)data;
		ret = post_msg(ep, peer->out, i, &m, 0);
		if (ret) {
			wfi_reg_put(ep->dom, t->reg);
			t->reg = NULL;
		}
	}
	if (ret)
		return ret;
	t->busy = true;
	return 0;
}

/* FIN for app_ctx on the connection a rendezvous came on (reserved slots). */
int wfi_post_fin(struct wfi_ep *ep, struct rdma_cm_id *id, uint32_t app_ctx)
{
	struct wfi_wire_msg m = { .kind = WFI_MSG_FIN, .app_ctx = app_ctx };
	int i = wfi_tx_slot_find(ep, WFI_TX_USER, WFI_TX_SIZE);

	if (i < 0 || !id || !id->qp)
		return -FI_EAGAIN;
	memset(&ep->tx[i], 0, sizeof(ep->tx[i]));
	if (post_msg(ep, id, i, &m, 0))
		return -FI_EAGAIN;
	ep->tx[i].busy = true;
	ep->tx[i].internal = true;
	return 0;
}

/* The endpoint counter that counts send slot t's operation. */
static struct fid_cntr *tx_cntr(struct wfi_ep *ep, const struct wfi_tx *t)
{
	return t->cflags & FI_SEND ? ep->tx_cntr : t->cflags & FI_WRITE ? ep->wr_cntr : ep->rd_cntr;
}

void wfi_tx_finish(struct wfi_ep *ep, struct wfi_tx *t, int status)
{
	uint64_t fl = t->cflags;
	struct fid_cntr *c = tx_cntr(ep, t);

	wfi_reg_put(ep->dom, t->reg);
	t->reg = NULL;
	t->busy = false;
	if (t->internal)
		return;
	if (t->result && !status)
		memcpy(t->result, wfi_tx_slot(ep, (int)(t - ep->tx)), 8);
	wfi_cntr_inc(t->ccntr, status != 0);
	/* Counted once: by the adapter when its WQE named the slot. */
	if (t->hw)
		wfi_cntr_hw_done(c);
	else
		wfi_cntr_inc(c, status != 0);
	if (status)
		wfi_cq_err(ep->tx_cq, t->ctx, fl, status, t->len, t->tag, 0);
	else if (t->signal)
		wfi_cq_put(ep->tx_cq, t->ctx, fl, 0, NULL, 0, 0, FI_ADDR_NOTAVAIL);
}

/* The send's verbs completion. */
void wfi_tx_done(struct wfi_ep *ep, int i, int status)
{
	struct wfi_tx *t;

	if (i < 0 || i >= WFI_TX_SIZE || !ep->tx[i].busy)
		return;
	t = &ep->tx[i];
	if (t->recalled) {
		/* Flushed behind a recalled WAIT_CNT: its trigger is back in
		 * software (trigger.c), the error the adapter counts for it
		 * taken back when it was recalled.  Freed at its last WQE's
		 * flush. */
		if (--t->flushes > 0)
			return;
		wfi_reg_put(ep->dom, t->reg);
		t->reg = NULL;
		t->busy = false;
		return;
	}
	if (status) {
		wfi_tx_finish(ep, t, FI_EIO);
		return;
	}
	t->sent = true;
	if (t->rndv && !t->fin && wfi_qpn_dead(ep, t->qpn))
		wfi_tx_finish(ep, t, FI_ECONNRESET);	/* no FIN will come */
	else if (!t->rndv || t->fin)
		wfi_tx_finish(ep, t, 0);
}

/* The peer of connection qpn went away: its rendezvous sends already
 * sent will get no FIN.  (Those not sent yet get their flush error.) */
void wfi_tx_peer_dead(struct wfi_ep *ep, uint32_t qpn)
{
	int i;

	for (i = 0; i < WFI_TX_USER; i++) {
		struct wfi_tx *t = &ep->tx[i];

		if (t->busy && t->rndv && t->sent && !t->fin && t->qpn == qpn)
			wfi_tx_finish(ep, t, FI_ECONNRESET);
	}
}

/* A FIN: the receiver has the rendezvous data of the send app_ctx names
 * (its slot in bits 7..0). */
void wfi_tx_fin(struct wfi_ep *ep, uint32_t app_ctx, uint32_t qpn)
{
	uint32_t i = app_ctx & 0xff;
	struct wfi_tx *t;

	/* Only the connection the rendezvous went on may finish it. */
	if (i >= WFI_TX_USER || !ep->tx[i].busy || !ep->tx[i].rndv || ep->tx[i].qpn != qpn ||
	    ep->tx[i].fin || ep->tx[i].app_ctx != app_ctx) {
		wfi_refuse(ep, WFI_WIRE_FIN_STRAY, qpn);
		return;
	}
	t = &ep->tx[i];
	t->fin = true;
	if (t->sent)
		wfi_tx_finish(ep, t, 0);
}
