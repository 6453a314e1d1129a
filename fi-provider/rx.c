// SPDX-License-Identifier: MIT
/*
 * Receives (docs/libfabric.md "Matching").  A receive first looks at the
 * unexpected messages the adapter handed to software (held in their SRQ
 * buffers, in arrival order); when none matches it is listed in the
 * adapter with TAG_ADD, which then matches arrivals itself.  An
 * unexpected arrival that matches a listed receive (one listed after the
 * adapter passed the message on, or a rendezvous, which the adapter does
 * not match) takes that receive back with TAG_DEL first; if the adapter
 * matched the receive meanwhile (the DEL fails), the message is matched
 * again.  Rendezvous data is read by software when the adapter did not.
 * FI_PEEK, FI_CLAIM, FI_DISCARD and fi_cancel of a posted receive are
 * done here: the tag-matching verbs have no peek.
 *
 * Beyond the adapter's tags (hw_rx of them) receives are listed in
 * software, in post order; while any is, every new receive is too, so each
 * receive listed in the adapter is older than each one listed in software
 * and the adapter's own match is the earliest.  An unexpected arrival that
 * no receive listed in the adapter takes goes to the oldest matching
 * software-listed one, found in the buckets of (mask, tag) rather than by
 * a walk of the list; rendezvous data of those is read by software.  As
 * the adapter's tags free up, the oldest software-listed receives move
 * into them (wfi_rx_promote), which keeps that order.
 */
#include <stdlib.h>
#include <string.h>

#include "wfi.h"

int wfi_srq_post(struct wfi_ep *ep, int slot)
{
	struct ibv_sge sge = { (uintptr_t)wfi_ux_slot(ep, slot), WFI_SLOT, ep->slots_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WFI_WR(WFI_WR_UX, slot), .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(ep->srq, &wr, &bad) ? -FI_EIO : 0;
}

int wfi_ux_init(struct wfi_ep *ep)
{
	int i;

	ep->ux = calloc(WFI_UX_MAX, sizeof(*ep->ux));
	ep->ux_free = calloc(WFI_UX_MAX, sizeof(*ep->ux_free));
	if (!ep->ux || !ep->ux_free)
		return -FI_ENOMEM;
	for (i = 0; i < WFI_UX_MAX; i++)
		ep->ux_free[i] = WFI_UX_MAX - 1 - i;
	ep->ux_nfree = WFI_UX_MAX;
	ep->ux_head = ep->ux_tail = -1;
	return 0;
}

void wfi_ux_fini(struct wfi_ep *ep)
{
	int i;

	for (i = 0; ep->ux && i < WFI_UX_MAX; i++)
		free(ep->ux[i].buf);
	free(ep->ux);
	free(ep->ux_free);
}

/* Room for one more unexpected message (checked before each completion). */
bool wfi_ux_room(struct wfi_ep *ep)
{
	return ep->ux_nfree > 0 && ep->ux_bytes + WFI_SLOT <= WFI_UX_BYTES;
}

static int ux_alloc(struct wfi_ep *ep)
{
	int i;

	if (!ep->ux_nfree)
		return -1;
	i = ep->ux_free[--ep->ux_nfree];
	memset(&ep->ux[i], 0, sizeof(ep->ux[i]));
	ep->ux[i].used = true;
	ep->ux[i].seq = ++ep->ux_seq;
	ep->ux[i].prev = ep->ux_tail;
	ep->ux[i].next = -1;
	if (ep->ux_tail >= 0)
		ep->ux[ep->ux_tail].next = i;
	else
		ep->ux_head = i;
	ep->ux_tail = i;
	return i;
}

static void ux_release(struct wfi_ep *ep, int i)
{
	struct wfi_ux *u = &ep->ux[i];

	if (!u->used)
		return;
	if (u->prev >= 0)
		ep->ux[u->prev].next = u->next;
	else
		ep->ux_head = u->next;
	if (u->next >= 0)
		ep->ux[u->next].prev = u->prev;
	else
		ep->ux_tail = u->prev;
	if (u->buf)
		ep->ux_bytes -= u->len;
	free(u->buf);
	memset(u, 0, sizeof(*u));
	ep->ux_free[ep->ux_nfree++] = i;
}

void wfi_rx_init(struct wfi_ep *ep, uint32_t max_tags)
{
	int i;

	ep->hw_rx = (int)(max_tags < WFI_HW_RX ? max_tags : WFI_HW_RX);
	ep->sw_nfree = 0;
	for (i = WFI_RX_SIZE - 1; i >= ep->hw_rx; i--)
		ep->sw_free[ep->sw_nfree++] = i;
	ep->sw_head = ep->sw_tail = -1;
	ep->nsw = 0;
	for (i = 0; i < WFI_SW_BUCKETS; i++)
		ep->sw_bhead[i] = ep->sw_btail[i] = -1;
	for (i = 0; i < WFI_SW_CLASSES; i++)
		ep->sw_cref[i] = 0;
	ep->sw_ohead = ep->sw_otail = -1;
}

static void rx_free(struct wfi_ep *ep, struct wfi_rx *r)
{
	int i = (int)(r - ep->rx);

	wfi_reg_put(ep->dom, r->reg);
	memset(r, 0, sizeof(*r));
	if (i >= ep->hw_rx)
		ep->sw_free[ep->sw_nfree++] = i;
}

/* The bucket of key (the wire tag's bits under class c's mask). */
static unsigned int sw_bucket(int c, uint64_t key)
{
	return (unsigned int)(((key ^ ((uint64_t)c << 56)) * 0x9e3779b97f4a7c15ull) >>
			      (64 - WFI_SW_BUCKET_BITS));
}

/* The head and tail of the chain receive i is on: its bucket's, or the
 * unbucketed list's. */
static int *sw_chain(struct wfi_ep *ep, int i, int **tail)
{
	struct wfi_rx *r = &ep->rx[i];
	unsigned int b;

	if (r->sw_class < 0) {
		*tail = &ep->sw_otail;
		return &ep->sw_ohead;
	}
	b = sw_bucket(r->sw_class, r->tag);
	*tail = &ep->sw_btail[b];
	return &ep->sw_bhead[b];
}

/* The class of mask m: the one that has it, else a free one, else -1
 * (more than WFI_SW_CLASSES masks in use: the receive is unbucketed). */
static int sw_class(struct wfi_ep *ep, uint64_t m)
{
	int c, free = -1;

	for (c = 0; c < WFI_SW_CLASSES; c++) {
		if (ep->sw_cref[c] && ep->sw_cmask[c] == m)
			return c;
		if (!ep->sw_cref[c] && free < 0)
			free = c;
	}
	if (free >= 0)
		ep->sw_cmask[free] = m;
	return free;
}

/* Software list: append receive i (the newest: its chain stays in post
 * order too), or take it off. */
static void sw_append(struct wfi_ep *ep, int i)
{
	struct wfi_rx *r = &ep->rx[i];
	int *head, *tail;

	r->state = WFI_RX_SW;
	r->sw_prev = ep->sw_tail;
	r->sw_next = -1;
	if (ep->sw_tail >= 0)
		ep->rx[ep->sw_tail].sw_next = i;
	else
		ep->sw_head = i;
	ep->sw_tail = i;
	ep->nsw++;
	r->sw_class = sw_class(ep, r->mask);
	if (r->sw_class >= 0)
		ep->sw_cref[r->sw_class]++;
	head = sw_chain(ep, i, &tail);
	r->bk_prev = *tail;
	r->bk_next = -1;
	if (*tail >= 0)
		ep->rx[*tail].bk_next = i;
	else
		*head = i;
	*tail = i;
}

static void sw_unlink(struct wfi_ep *ep, int i)
{
	struct wfi_rx *r = &ep->rx[i];
	int *head, *tail;

	if (r->sw_prev >= 0)
		ep->rx[r->sw_prev].sw_next = r->sw_next;
	else
		ep->sw_head = r->sw_next;
	if (r->sw_next >= 0)
		ep->rx[r->sw_next].sw_prev = r->sw_prev;
	else
		ep->sw_tail = r->sw_prev;
	head = sw_chain(ep, i, &tail);
	if (r->bk_prev >= 0)
		ep->rx[r->bk_prev].bk_next = r->bk_next;
	else
		*head = r->bk_next;
	if (r->bk_next >= 0)
		ep->rx[r->bk_next].bk_prev = r->bk_prev;
	else
		*tail = r->bk_prev;
	if (r->sw_class >= 0)
		ep->sw_cref[r->sw_class]--;
	r->sw_next = r->sw_prev = r->bk_next = r->bk_prev = -1;
	r->state = WFI_RX_MATCHED;
	ep->nsw--;
}

/* The oldest software-listed receive that takes wire tag t: in each
 * class, the first receive of the bucket of (class, t under its mask)
 * whose mask and tag are that key (a bucket is in post order), then the
 * unbucketed receives up to the oldest found.  At most WFI_SW_CLASSES
 * buckets; every software-listed receive compared is counted. */
static int sw_find(struct wfi_ep *ep, uint64_t t)
{
	int c, i, best = -1;

	for (c = 0; c < WFI_SW_CLASSES; c++) {
		uint64_t m = ep->sw_cmask[c];

		if (!ep->sw_cref[c])
			continue;
		for (i = ep->sw_bhead[sw_bucket(c, t & m)]; i >= 0; i = ep->rx[i].bk_next) {
			ep->rx_st.sw_compares++;
			if (ep->rx[i].sw_class == c && ep->rx[i].tag == (t & m))
				break;
		}
		if (i >= 0 && (best < 0 || ep->rx[i].seq < ep->rx[best].seq))
			best = i;
	}
	for (i = ep->sw_ohead; i >= 0; i = ep->rx[i].bk_next) {
		if (best >= 0 && ep->rx[i].seq > ep->rx[best].seq)
			break;
		ep->rx_st.sw_compares++;
		if ((t & ep->rx[i].mask) == ep->rx[i].tag)
			return i;
	}
	return best;
}

static void complete(struct wfi_ep *ep, struct wfi_rx *r, int err)
{
	uint64_t fl = FI_RECV | (r->msg ? FI_MSG : FI_TAGGED) |
		      (r->got_tag & WFI_DATA_BIT ? FI_REMOTE_CQ_DATA : 0);
	uint64_t tag = r->msg ? 0 : r->got_tag & WFI_TAG_MASK;
	size_t n = r->got_len < r->len ? r->got_len : r->len;

	if (r->bounce && n && !err)
		memcpy(r->buf, wfi_rx_slot(ep, (int)(r - ep->rx)), n);
	wfi_cntr_inc(ep->rx_cntr, err || r->got_len > r->len);
	wfi_cntr_inc(r->ccntr, err || r->got_len > r->len);
	if (!err && r->got_len > r->len)
		wfi_cq_err(ep->rx_cq, r->ctx, fl, FI_ETRUNC, n, tag, r->got_len - r->len);
	else if (err)
		wfi_cq_err(ep->rx_cq, r->ctx, fl, err, 0, tag, 0);
	else if (!ep->rx_sel || (r->flags & FI_COMPLETION))
		wfi_cq_put(ep->rx_cq, r->ctx, fl, n, r->buf,
			   r->got_tag & WFI_DATA_BIT ? r->got_data : 0, tag,
			   wfi_peer_fi_addr(ep, r->got_tag));
	if (r->del_pending) {
		r->state = WFI_RX_DONE;	/* freed by its DEL's completion */
		return;
	}
	rx_free(ep, r);
}

/* The oldest unexpected message that (wire tag & mask) == tag takes. */
static int ux_find(struct wfi_ep *ep, uint64_t tag, uint64_t mask, bool claimed, void *ctx)
{
	int i;

	for (i = ep->ux_head; i >= 0; i = ep->ux[i].next) {
		struct wfi_ux *u = &ep->ux[i];

		if (u->taken || u->claimed != claimed || (u->tag & mask) != tag)
			continue;
		if (claimed && u->claim_ctx != ctx)
			continue;
		return i;
	}
	return -1;
}

/* The oldest receive listed in the adapter that takes wire tag t. */
static int rx_find(struct wfi_ep *ep, uint64_t t)
{
	int i, best = -1;

	for (i = 0; i < ep->hw_rx; i++) {
		struct wfi_rx *r = &ep->rx[i];

		if (r->state != WFI_RX_HW || (t & r->mask) != r->tag)
			continue;
		if (best < 0 || r->seq < ep->rx[best].seq)
			best = i;
	}
	return best;
}

/* Posts tag operation wr, which carries software's count of unexpected
 * messages (IBV_OPS_TM_SYNC). */
int wfi_tag_post(struct wfi_ep *ep, struct ibv_ops_wr *wr)
{
	struct ibv_ops_wr *bad;

	wr->tm.unexpected_cnt = ep->unexp_cnt;
	if (ibv_post_srq_ops(ep->srq, wr, &bad)) {
		ep->rx_st.ops_refused++;
		return -FI_EAGAIN;
	}
	ep->sync_sent = ep->unexp_cnt;
	return 0;
}

static int tag_op(struct wfi_ep *ep, int i, enum ibv_ops_wr_opcode op)
{
	struct ibv_ops_wr wr = {
		.wr_id = WFI_WR(WFI_WR_OP, i), .opcode = op,
		.flags = IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC,
		.tm = { .handle = ep->rx[i].handle },
	};

	return wfi_tag_post(ep, &wr);
}

/* Whether another posted receive's buffer overlaps receive r's: its
 * READ, or the copy of its message, may then write over what the adapter
 * places in r's buffer.  Beyond the adapter's receives, only as many as
 * are in use are looked for; a receive being promoted is in two slots,
 * with one post order. */
static bool rx_shared(struct wfi_ep *ep, const struct wfi_rx *r)
{
	int i, beyond = WFI_RX_SIZE - ep->hw_rx - ep->sw_nfree;

	for (i = 0; i < WFI_RX_SIZE && (i < ep->hw_rx || beyond > 0); i++) {
		const struct wfi_rx *o = &ep->rx[i];

		if (o->state == WFI_RX_FREE)
			continue;
		if (i >= ep->hw_rx)
			beyond--;
		if (o->seq != r->seq && o->len && o->buf < r->buf + r->len && r->buf < o->buf + o->len)
			return true;
	}
	return false;
}

/* The local buffer of receive r: its bounce slot or the user's buffer,
 * registered. */
static int rx_sge(struct wfi_ep *ep, struct wfi_rx *r, struct ibv_sge *sge, bool listing)
{
	int i = (int)(r - ep->rx);

	/* Listed in the adapter, every receive gets its bounce slot: a
	 * rendezvous header the adapter leaves to software
	 * (IBV_WC_TM_RNDV_INCOMPLETE) must not land in a user buffer that
	 * other receives share, where their READs or copies overwrite it
	 * before software reads it.  In RVH mode a large receive whose
	 * buffer no other posted receive shares is listed with that buffer,
	 * which the adapter then READs into itself.  Software-listed
	 * receives have no bounce slot. */
	r->bounce = i < WFI_HW_RX &&
		    (r->len <= WFI_EAGER || (listing && (!ep->rvh || rx_shared(ep, r))));
	if (r->bounce) {
		*sge = (struct ibv_sge){ (uintptr_t)wfi_rx_slot(ep, i), WFI_EAGER,
					 ep->slots_mr->lkey };
		return 0;
	}
	if (!r->reg)
		r->reg = wfi_reg_get(ep->dom, r->buf, r->len, IBV_ACCESS_LOCAL_WRITE);
	if (!r->reg)
		return -FI_ENOMEM;
	*sge = (struct ibv_sge){ (uintptr_t)r->buf, (uint32_t)r->len, r->reg->mr->lkey };
	return 0;
}

/* Unexpected message u goes to receive r (which is not listed). */
static void read_rndv(struct wfi_ep *ep, struct wfi_rx *r, const struct wfi_wire_rvh *rvh);

static void take(struct wfi_ep *ep, struct wfi_rx *r, int ui)
{
	struct wfi_ux *u = &ep->ux[ui];
	struct wfi_wire_rvh rvh;

	r->got_tag = u->tag;
	r->got_len = u->len;
	r->got_data = u->data;
	if (!u->rndv) {
		uint64_t c = u->len < r->len ? u->len : r->len;

		if (c)
			memcpy(r->buf, u->buf, c);
		r->bounce = false;
		ux_release(ep, ui);
		complete(ep, r, 0);
		return;
	}
	r->from = u->from;
	r->fin_ctx = u->app_ctx;
	rvh = u->rvh;
	ux_release(ep, ui);
	read_rndv(ep, r, &rvh);
}

/* Receive r takes a rendezvous (r->got_len, from, fin_ctx set): READ the
 * data into its buffer, then FIN (wfi_rx_read_done). */
static void read_rndv(struct wfi_ep *ep, struct wfi_rx *r, const struct wfi_wire_rvh *rvh)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
				  .sg_list = &sge, .num_sge = 1 }, *bad;
	uint64_t n = r->got_len < r->len ? r->got_len : r->len;

	wr.wr_id = WFI_WR(WFI_WR_READ, (int)(r - ep->rx));
	wr.wr.rdma.remote_addr = rvh->va;
	wr.wr.rdma.rkey = rvh->rkey;
	r->state = WFI_RX_READ;
	if (!n) {
		wfi_rx_read_done(ep, (int)(r - ep->rx), 0);
		return;
	}
	if (rx_sge(ep, r, &sge, false) || !r->from || !r->from->qp) {
		complete(ep, r, FI_EIO);
		return;
	}
	sge.length = (uint32_t)n;
	if (ibv_post_send(r->from->qp, &wr, &bad))
		complete(ep, r, FI_EIO);
}

/* Unexpected message ui: the oldest receive listed in the adapter that
 * it matches is taken back (DEL); else the oldest software-listed one
 * takes it (all of them are newer); else it waits for a receive. */
static void ux_route(struct wfi_ep *ep, int ui)
{
	int ri = rx_find(ep, ep->ux[ui].tag);

	if (ri < 0) {
		ri = ep->nsw ? sw_find(ep, ep->ux[ui].tag) : -1;
		if (ri >= 0) {
			ep->rx_st.sw_matched++;
			sw_unlink(ep, ri);
			take(ep, &ep->rx[ri], ui);
		}
		return;
	}
	if (tag_op(ep, ri, IBV_WR_TAG_DEL))
		return;			/* the op ring is full: stays unexpected */
	ep->ux[ui].taken = true;
	ep->rx[ri].state = WFI_RX_DEL;
	ep->rx[ri].del_pending = true;
	ep->rx[ri].ux = ui;
}

/* The message in SRQ buffer slot (len bytes with its TMH), decoded by
 * wire.c: a FIN, a note, or an unexpected message, copied out; the buffer
 * is posted again at once.  The caller checked wfi_ux_room(). */
void wfi_rx_unexpected(struct wfi_ep *ep, int slot, uint32_t len, uint32_t qp_num)
{
	enum wfi_wire_reason why;
	struct wfi_wire_msg m;
	struct wfi_ux *u;
	int ui;

	if (slot < 0 || slot >= WFI_SRQ_WQES)
		return;
	why = wfi_wire_decode(wfi_ux_slot(ep, slot), len, &m);
	/* The adapter counts every EAGER or RNDV it hands over as
	 * unexpected, whatever software makes of it: so does the TM sync. */
	if (m.op == WFI_OP_EAGER || m.op == WFI_OP_RNDV)
		ep->unexp_cnt++;
	if (why) {
		wfi_refuse(ep, why, qp_num);
		goto repost;
	}
	if (m.kind == WFI_MSG_FIN) {
		wfi_tx_fin(ep, m.app_ctx, qp_num);
		goto repost;
	}
	if (m.kind == WFI_MSG_NOTE) {	/* an FI_RMA_EVENT count, or rma.c's */
		if (m.note == WFI_NOTE_WRITE)
			wfi_cntr_remote(ep, ep->rwr_cntr, qp_num, WFI_CNT_EV_WRITE);
		else if (m.note == WFI_NOTE_READ)
			wfi_cntr_remote(ep, ep->rrd_cntr, qp_num, WFI_CNT_EV_READ);
		else
			wfi_rma_note(ep, &m, qp_num);
		goto repost;
	}
	/* The source id the message names is its connection's peer. */
	if (!wfi_conn_of_peer(ep, wfi_conn_by_qpn(ep, qp_num), wfi_wire_src(m.tag))) {
		wfi_refuse(ep, WFI_WIRE_SRC_FORGED, qp_num);
		goto repost;
	}
	ui = ux_alloc(ep);
	if (ui < 0)
		goto repost;		/* not reached: wfi_ux_room() */
	u = &ep->ux[ui];
	u->tag = m.tag;
	u->from = wfi_conn_by_qpn(ep, qp_num);
	if (m.kind == WFI_MSG_RNDV) {
		u->rvh = m.rvh;
		/* Remote CQ data: the 4 bytes after the RVH, when sent. */
		u->tag &= ~WFI_DATA_BIT;
		if (m.has_data) {
			u->data = m.data;
			u->tag |= WFI_DATA_BIT;
		}
		u->rndv = true;
		u->len = m.rvh.len;
		u->app_ctx = m.app_ctx;
	} else {
		u->len = m.plen;
		u->data = m.data;
		if (u->len) {
			u->buf = malloc(u->len);
			if (!u->buf) {
				/* Out of memory: the message is lost (counted). */
				ep->ux_dropped++;
				ux_release(ep, ui);
				goto repost;
			}
			memcpy(u->buf, m.payload, u->len);
			ep->ux_bytes += u->len;
		}
	}
	ux_route(ep, ui);
repost:
	wfi_srq_post(ep, slot);
}

/* A TAG_ADD/DEL/SYNC completion. */
void wfi_rx_op_done(struct wfi_ep *ep, uint64_t wr_id, int status)
{
	int i = WFI_WR_IDX(wr_id);
	struct wfi_rx *r;
	int ui;

	if (i < 0 || i >= WFI_RX_SIZE)
		return;
	r = &ep->rx[i];
	/* A TAG_ADD completes when it failed or asks for a sync (a receive
	 * listed behind the phase): never the completion of a DEL posted
	 * for that receive since. */
	if (wr_id & WFI_WR_ADD) {
		if (status && r->state == WFI_RX_HW)
			complete(ep, r, FI_EIO);
		return;
	}
	if (!r->del_pending)
		return;
	r->del_pending = false;
	if (r->state == WFI_RX_DONE) {		/* the adapter matched it first */
		if (r->ux >= 0 && r->ux < WFI_UX_MAX && ep->ux[r->ux].taken) {
			ui = r->ux;
			ep->ux[ui].taken = false;
			rx_free(ep, r);
			ux_route(ep, ui);
			return;
		}
		rx_free(ep, r);
		return;
	}
	if (status) {
		/* Its message is on the way in a completion of its own. */
		r->state = WFI_RX_MATCHED;
		if (r->ux >= 0 && ep->ux[r->ux].taken) {
			ui = r->ux;
			ep->ux[ui].taken = false;
			ux_route(ep, ui);
		}
		return;
	}
	if (r->state == WFI_RX_CANCEL) {
		wfi_cntr_inc(ep->rx_cntr, true);
		wfi_cq_err(ep->rx_cq, r->ctx, FI_RECV | (r->msg ? FI_MSG : FI_TAGGED),
			   r->err ? r->err : FI_ECANCELED, 0, 0, 0);
		rx_free(ep, r);
		return;
	}
	ui = r->ux;
	ep->ux[ui].taken = false;
	take(ep, r, ui);
}

/* A rendezvous header of receive r, n bytes at h ([RVH | remote CQ data
 * when sent]) in a buffer with cap bytes from h, from the connection of
 * QP qp_num, whose FIN names fin_ctx: software reads the data. */
static void rndv_hdr(struct wfi_ep *ep, struct wfi_rx *r, const uint8_t *h, uint32_t n,
		     uint64_t cap, uint32_t fin_ctx, uint32_t qp_num)
{
	enum wfi_wire_reason why = n > cap ? WFI_WIRE_LONG : WFI_WIRE_OK;
	struct wfi_wire_rvh rvh;
	uint32_t data;
	bool has_data;

	if (!why)
		why = wfi_wire_rndv_decode(h, n, &rvh, &has_data, &data);
	if (why) {
		wfi_refuse(ep, why, qp_num);
		complete(ep, r, FI_EIO);
		return;
	}
	r->got_tag &= ~WFI_DATA_BIT;
	if (has_data) {
		r->got_data = data;
		r->got_tag |= WFI_DATA_BIT;
	}
	r->fin_ctx = fin_ctx;
	r->got_len = rvh.len;
	r->from = wfi_conn_by_qpn(ep, qp_num);
	read_rndv(ep, r, &rvh);
}

/* The adapter matched receive wr_id (the first completion MATCH, the data
 * with DATA_VALID; both in one for a one-packet message). */
void wfi_rx_tm(struct wfi_ep *ep, uint64_t wr_id, int status, unsigned int wc_flags,
	       uint32_t len, uint32_t qp_num, const struct ibv_wc_tm_info *tm)
{
	int i = WFI_WR_IDX(wr_id);
	struct wfi_rx *r;
	uint64_t cap;

	if (i < 0 || i >= WFI_RX_SIZE)
		return;
	r = &ep->rx[i];
	if (r->state == WFI_RX_FREE || r->state == WFI_RX_DONE)
		return;
	cap = r->bounce ? WFI_EAGER : r->len;	/* the tagged buffer's bytes */
	if (wc_flags & IBV_WC_TM_MATCH) {
		r->got_tag = tm->tag;
		r->got_data = tm->priv;
		if (r->state == WFI_RX_HW)
			r->state = WFI_RX_MATCHED;
	}
	if (status == IBV_WC_TM_RNDV_INCOMPLETE && len >= WFI_HDR) {
		/* An RNDV the adapter left to software (docs/matching.md): the
		 * whole request, TMH included, is in the tagged buffer. */
		rndv_hdr(ep, r, (r->bounce ? wfi_rx_slot(ep, i) : r->buf) + WFI_HDR, len - WFI_HDR,
			 cap < WFI_HDR ? 0 : cap - WFI_HDR, r->got_data, qp_num);
		return;
	}
	if (status) {
		complete(ep, r, status == IBV_WC_LOC_LEN_ERR ? FI_ETRUNC : FI_EIO);
		return;
	}
	if (!(wc_flags & IBV_WC_TM_DATA_VALID))
		return;
	if ((r->got_tag & (WFI_RNDV_BIT | WFI_DATA_BIT)) == WFI_RNDV_BIT) {
		/* A rendezvous header in an eager message (its app_ctx the FIN's). */
		rndv_hdr(ep, r, r->bounce ? wfi_rx_slot(ep, i) : r->buf, len, cap, r->got_data,
			 qp_num);
		return;
	}
	if (r->got_tag & WFI_RNDV_BIT)
		r->got_data >>= 8;	/* an RNDV the adapter read: the data in its app_ctx */
	r->got_len = len;
	complete(ep, r, 0);
}

void wfi_rx_read_done(struct wfi_ep *ep, int i, int status)
{
	struct wfi_rx *r;

	if (i < 0 || i >= WFI_RX_SIZE || ep->rx[i].state != WFI_RX_READ)
		return;
	r = &ep->rx[i];
	if (wfi_post_fin(ep, r->from, r->fin_ctx) && !status) {
		r->state = WFI_RX_FIN;		/* retried by the progress loop */
		ep->nfin++;
		return;
	}
	complete(ep, r, status ? FI_EIO : 0);
}

/* Receives whose FIN found no free slot. */
void wfi_rx_retry_fin(struct wfi_ep *ep)
{
	int i;

	for (i = 0; ep->nfin && i < WFI_RX_SIZE; i++)
		if (ep->rx[i].state == WFI_RX_FIN &&
		    !wfi_post_fin(ep, ep->rx[i].from, ep->rx[i].fin_ctx)) {
			ep->nfin--;
			complete(ep, &ep->rx[i], 0);
		}
}

/* The peer a directed receive names (0: any source). */
static int rx_source(const struct wfi_rx *r)
{
	return r->mask & WFI_SRC_MASK ? (int)((r->tag & WFI_SRC_MASK) >> WFI_SRC_SHIFT) : 0;
}

static bool source_dead(struct wfi_ep *ep, const struct wfi_rx *r)
{
	int id = rx_source(r);

	return id >= 1 && id <= ep->npeers && ep->peers[id - 1].gone;
}

/* Listed receives directed to a peer that went away are taken back from
 * the adapter (DEL) and fail with FI_ECONNRESET; one that lost the DEL
 * to a message of that peer gets it.  Software-listed ones fail at once
 * (what the peer sent before is taken: wfi_conn_settle).  Called when a
 * peer goes away and by the progress loop while a DEL found the op ring
 * full or the CQ no room. */
void wfi_rx_peer_dead(struct wfi_ep *ep)
{
	int i, next;

	for (i = ep->ndead ? ep->sw_head : -1; i >= 0 && wfi_cq_room(ep->rx_cq); i = next) {
		next = ep->rx[i].sw_next;
		if (!source_dead(ep, &ep->rx[i]))
			continue;
		sw_unlink(ep, i);
		complete(ep, &ep->rx[i], FI_ECONNRESET);
	}
	for (i = 0; ep->ndead && i < ep->hw_rx; i++) {
		struct wfi_rx *r = &ep->rx[i];

		if (r->state != WFI_RX_HW || !source_dead(ep, r) || tag_op(ep, i, IBV_WR_TAG_DEL))
			continue;
		r->state = WFI_RX_CANCEL;
		r->err = FI_ECONNRESET;
		r->del_pending = true;
	}
}

/* A free receive that may be listed in the adapter (hw), or one that
 * may not (-1: none). */
static int rx_alloc(struct wfi_ep *ep, bool hw)
{
	int i;

	if (!hw)
		return ep->sw_nfree ? ep->sw_free[--ep->sw_nfree] : -1;
	for (i = 0; i < ep->hw_rx; i++)
		if (ep->rx[i].state == WFI_RX_FREE)
			return i;
	return -1;
}

/* A receive slot for a new posted receive: listable in the adapter while
 * no receive is software-listed. */
static int rx_post_alloc(struct wfi_ep *ep)
{
	int i = ep->nsw ? -1 : rx_alloc(ep, true);

	return i >= 0 ? i : rx_alloc(ep, false);
}

static int list_hw(struct wfi_ep *ep, int i)
{
	struct wfi_rx *r = &ep->rx[i];
	struct ibv_sge sge;
	struct ibv_ops_wr wr = {
		.wr_id = WFI_WR(WFI_WR_OP, i) | WFI_WR_ADD, .opcode = IBV_WR_TAG_ADD,
		.flags = IBV_OPS_TM_SYNC,
		.tm = { .add = { .recv_wr_id = WFI_WR(WFI_WR_RX, i), .sg_list = &sge, .num_sge = 1,
				 .tag = r->tag, .mask = r->mask } },
	};
	int ret = rx_sge(ep, r, &sge, true);

	if (ret)
		return ret;
	ret = wfi_tag_post(ep, &wr);
	if (ret)
		return ret;
	r->handle = wr.tm.handle;
	r->state = WFI_RX_HW;
	return 0;
}

/* Software-listed receives move into the adapter's free tags, the oldest
 * first and at most WFI_PROMOTE_MAX per call (docs/libfabric.md
 * "Promotion"), so each receive the adapter lists stays older than each
 * one software lists.  The receive is listed (state HW) from the moment
 * its TAG_ADD is posted: until the adapter executes it, an arrival the
 * adapter hands over as unexpected is routed by software to it (a DEL
 * queued behind the ADD), and the ADD's unexpected count leaves the tag
 * inactive while the adapter holds unexpected messages software has not
 * seen that it matches.  A TAG_ADD the full op ring refuses leaves the
 * receive in software. */
void wfi_rx_promote(struct wfi_ep *ep)
{
	int h = 0, n;

	for (n = 0; ep->nsw && n < WFI_PROMOTE_MAX; n++, h++) {
		int i = ep->sw_head;
		struct wfi_rx *r;

		while (h < ep->hw_rx && ep->rx[h].state != WFI_RX_FREE)
			h++;
		if (h >= ep->hw_rx)
			return;
		r = &ep->rx[h];
		*r = ep->rx[i];
		r->sw_next = r->sw_prev = r->bk_next = r->bk_prev = -1;
		r->sw_class = -1;
		if (list_hw(ep, h)) {
			if (r->reg != ep->rx[i].reg)
				wfi_reg_put(ep->dom, r->reg);
			memset(r, 0, sizeof(*r));
			return;
		}
		ep->rx[i].reg = NULL;	/* now the listed receive's */
		sw_unlink(ep, i);
		rx_free(ep, &ep->rx[i]);
		ep->rx_st.promoted++;
	}
}

/* FI_PEEK (with FI_CLAIM or FI_DISCARD) and FI_CLAIM: software only. */
static ssize_t peek(struct wfi_ep *ep, uint64_t wt, uint64_t wm, void *ctx, void *buf,
		    size_t len, uint64_t flags, bool msg)
{
	uint64_t fl = FI_RECV | (msg ? FI_MSG : FI_TAGGED);
	int ui, i;

	wfi_progress(ep);
	if (flags & FI_PEEK) {
		ui = ux_find(ep, wt, wm, false, NULL);
		if (ui < 0) {
			wfi_cq_err(ep->rx_cq, ctx, fl, FI_ENOMSG, 0, 0, 0);
			return 0;
		}
		wfi_cq_put(ep->rx_cq, ctx, fl | (ep->ux[ui].tag & WFI_DATA_BIT ? FI_REMOTE_CQ_DATA : 0),
			   ep->ux[ui].len, NULL, ep->ux[ui].tag & WFI_DATA_BIT ? ep->ux[ui].data : 0,
			   ep->ux[ui].tag & WFI_TAG_MASK, wfi_peer_fi_addr(ep, ep->ux[ui].tag));
		if (flags & FI_DISCARD) {
			ux_release(ep, ui);
		} else if (flags & FI_CLAIM) {
			ep->ux[ui].claimed = true;
			ep->ux[ui].claim_ctx = ctx;
		}
		return 0;
	}
	ui = ux_find(ep, 0, 0, true, ctx);
	if (ui < 0)
		return -FI_EINVAL;
	if (flags & FI_DISCARD) {
		wfi_cq_put(ep->rx_cq, ctx, fl, 0, NULL, 0, ep->ux[ui].tag & WFI_TAG_MASK,
			   wfi_peer_fi_addr(ep, ep->ux[ui].tag));
		ux_release(ep, ui);
		return 0;
	}
	i = rx_alloc(ep, false);
	if (i < 0)
		i = rx_alloc(ep, true);
	if (i < 0)
		return -FI_EAGAIN;
	ep->rx[i] = (struct wfi_rx){ .ctx = ctx, .buf = buf, .len = len, .flags = flags | FI_COMPLETION,
				     .msg = msg, .seq = ++ep->rx_seq, .ux = -1,
				     .state = WFI_RX_MATCHED };
	take(ep, &ep->rx[i], ui);
	return 0;
}

ssize_t wfi_recv(struct wfi_ep *ep, void *buf, size_t len, fi_addr_t src, uint64_t tag,
		 uint64_t ignore, void *ctx, uint64_t flags, bool msg)
{
	uint64_t wt = msg ? WFI_MSG_BIT : tag & ~ignore & WFI_TAG_MASK;
	uint64_t wm = WFI_MSG_BIT | (msg ? 0 : ~ignore & WFI_TAG_MASK);
	struct wfi_rx *r;
	int i, ui, ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if ((!buf && len && !(flags & (FI_PEEK | FI_DISCARD))) || len > WFI_MAX_MSG)
		return -FI_EINVAL;
	if ((flags & FI_DISCARD) && !(flags & (FI_PEEK | FI_CLAIM)))
		return -FI_EINVAL;
	if (src != FI_ADDR_UNSPEC && (ep->info->caps & FI_DIRECTED_RECV)) {
		struct sockaddr_in sin;
		int id;

		if (wfi_av_get(ep->av, src, &sin))
			return -FI_EINVAL;
		id = wfi_peer_id(ep, &sin);
		if (id < 0)
			return id;
		wt |= (uint64_t)id << WFI_SRC_SHIFT;
		wm |= WFI_SRC_MASK;
	}
	if (flags & (FI_PEEK | FI_CLAIM))
		return peek(ep, wt, wm, ctx, buf, len, flags, msg);
	i = rx_post_alloc(ep);
	if (i < 0) {
		/* All WFI_RX_SIZE receives are posted: the one bound. */
		wfi_progress(ep);
		i = rx_post_alloc(ep);
		if (i < 0)
			return -FI_EAGAIN;
	}
	r = &ep->rx[i];
	*r = (struct wfi_rx){ .ctx = ctx, .buf = buf, .len = len, .tag = wt, .mask = wm,
			      .flags = flags, .msg = msg, .seq = ++ep->rx_seq, .ux = -1,
			      .ccntr = ep->work_cntr, .state = WFI_RX_MATCHED };
	ui = ux_find(ep, wt, wm, false, NULL);
	if (ui >= 0) {
		take(ep, r, ui);
		return 0;
	}
	if (source_dead(ep, r)) {
		/* Nothing of it is held and nothing more will come. */
		complete(ep, r, FI_ECONNRESET);
		return 0;
	}
	if (i >= ep->hw_rx) {
		sw_append(ep, i);
		ep->rx_st.sw_posted++;
		return 0;
	}
	ep->rx_st.hw_posted++;
	ret = list_hw(ep, i);
	if (ret == -FI_EAGAIN) {
		/* The op ring is full: progress may route arrivals meanwhile,
		 * so the receive looks at the unexpected messages again. */
		wfi_progress(ep);
		ui = ux_find(ep, wt, wm, false, NULL);
		if (ui >= 0) {
			take(ep, r, ui);
			return 0;
		}
		ret = list_hw(ep, i);
	}
	if (ret)
		rx_free(ep, r);
	return ret;
}

ssize_t wfi_cancel(fid_t fid, void *context)
{
	struct wfi_ep *ep;
	ssize_t ret = -FI_ENOENT;
	int i;

	if (!fid || fid->fclass != FI_CLASS_EP)
		return -FI_EINVAL;
	ep = wfi_ep_of(container_of(fid, struct fid_ep, fid));
	pthread_mutex_lock(&ep->dom->lock);
	for (i = 0; i < ep->hw_rx; i++) {
		struct wfi_rx *r = &ep->rx[i];

		if (r->state != WFI_RX_HW || r->ctx != context)
			continue;
		ret = tag_op(ep, i, IBV_WR_TAG_DEL);
		if (!ret) {
			r->state = WFI_RX_CANCEL;
			r->del_pending = true;
		}
		break;
	}
	/* A software-listed receive is taken off its list and fails at once. */
	for (i = ret == -FI_ENOENT ? ep->sw_head : -1; i >= 0; i = ep->rx[i].sw_next) {
		struct wfi_rx *r = &ep->rx[i];

		if (r->ctx != context)
			continue;
		if (!wfi_cq_room(ep->rx_cq)) {
			ret = -FI_EAGAIN;
			break;
		}
		sw_unlink(ep, i);
		wfi_cntr_inc(ep->rx_cntr, true);
		wfi_cq_err(ep->rx_cq, r->ctx, FI_RECV | (r->msg ? FI_MSG : FI_TAGGED),
			   FI_ECANCELED, 0, 0, 0);
		rx_free(ep, r);
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static int rx_stats(struct fid_ep *fep, struct fi_weft_rx_stats *st)
{
	struct wfi_ep *ep;

	if (!fep || !st || fep->fid.fclass != FI_CLASS_EP)
		return -FI_EINVAL;
	ep = wfi_ep_of(fep);
	pthread_mutex_lock(&ep->dom->lock);
	*st = ep->rx_st;
	st->sw_now = (uint64_t)ep->nsw;
	pthread_mutex_unlock(&ep->dom->lock);
	return 0;
}

static struct fi_weft_rx_ops rx_ops = {
	.size = sizeof(struct fi_weft_rx_ops),
	.stats = rx_stats,
};

/* fi_open_ops on the endpoint: FI_WEFT_RX_OPS (fi_weft.h). */
int wfi_ep_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *ctx)
{
	(void)ctx;
	return wfi_ops_named(fid, name, flags, ops, FI_WEFT_RX_OPS, &rx_ops);
}
