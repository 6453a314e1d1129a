// SPDX-License-Identifier: MIT
/*
 * Manual progress: connection events, then at most WFI_POLL completions of
 * the endpoint's verbs CQ, taken only while the bound CQs have room (so a
 * full CQ leaves the rest in the adapter's queue).  A completion is routed
 * by its wr_id, not its opcode (error completions carry no valid opcode).
 */
#include <errno.h>
#include <stdio.h>

#include "wfi.h"

#define WFI_POLL 64

static void one(struct wfi_ep *ep, bool *sync)
{
	struct ibv_cq_ex *cq = ep->vcq;
	uint64_t wr_id = cq->wr_id;
	int status = cq->status;
	/* An RNDV left to software is a status with a valid completion. */
	bool valid = !status || status == IBV_WC_TM_RNDV_INCOMPLETE;
	enum ibv_wc_opcode op = valid ? ibv_wc_read_opcode(cq) : IBV_WC_RECV;
	unsigned int flags = valid ? ibv_wc_read_wc_flags(cq) : 0;
	struct ibv_wc_tm_info tm = { 0 };

	if (flags & IBV_WC_TM_SYNC_REQ)
		*sync = true;
	if (status && ep->log)
		fprintf(stderr, "weft: completion error: wr kind %d slot %d: %s (vendor_err %u)\n",
			WFI_WR_KIND(wr_id), WFI_WR_IDX(wr_id), ibv_wc_status_str(status),
			ibv_wc_read_vendor_err(cq));
	switch (WFI_WR_KIND(wr_id)) {
	case WFI_WR_TX:
		wfi_tx_done(ep, WFI_WR_IDX(wr_id), status);
		break;
	case WFI_WR_READ:
		wfi_rx_read_done(ep, WFI_WR_IDX(wr_id), status);
		break;
	case WFI_WR_TRIG:
		wfi_trig_wait_done(ep, WFI_WR_IDX(wr_id), status);
		break;
	case WFI_WR_OP:
		wfi_rx_op_done(ep, wr_id, status);
		break;
	case WFI_WR_RX:
		if (valid)
			ibv_wc_read_tm_info(cq, &tm);
		wfi_rx_tm(ep, wr_id, status, flags, valid ? ibv_wc_read_byte_len(cq) : 0,
			  valid ? ibv_wc_read_qp_num(cq) : 0, &tm);
		break;
	case WFI_WR_UX:
		if (status || (op != IBV_WC_TM_RECV && op != IBV_WC_TM_NO_TAG && op != IBV_WC_RECV)) {
			if (status != IBV_WC_WR_FLUSH_ERR)
				wfi_srq_post(ep, WFI_WR_IDX(wr_id));
			break;
		}
		wfi_rx_unexpected(ep, WFI_WR_IDX(wr_id), ibv_wc_read_byte_len(cq),
				  ibv_wc_read_qp_num(cq));
		break;
	default:
		break;
	}
}

/* A SYNC only when software's count moved since the last tag operation
 * carried it: one with the same count activates nothing more, and
 * repeated ones would fill the op ring that DELs need. */
static void sync_tags(struct wfi_ep *ep)
{
	struct ibv_ops_wr wr = {
		.wr_id = WFI_WR(WFI_WR_OP, WFI_RX_SIZE), .opcode = IBV_WR_TAG_SYNC,
		.flags = IBV_OPS_TM_SYNC,
	};

	if (ep->sync_sent != ep->unexp_cnt)
		wfi_tag_post(ep, &wr);
}

void wfi_progress(struct wfi_ep *ep)
{
	struct ibv_poll_cq_attr pa = { 0 };
	bool sync = false, empty = false;
	int n = 0, more = 0;

	if (!ep->enabled)
		return;
	wfi_conn_progress(ep);
	if (!wfi_cq_room(ep->tx_cq) || !wfi_cq_room(ep->rx_cq) || !wfi_ux_room(ep))
		goto fins;
	more = ibv_start_poll(ep->vcq, &pa);
	if (more) {
		empty = more == ENOENT;
		goto fins;
	}
	do {
		one(ep, &sync);
		n++;
	} while (n < WFI_POLL && wfi_cq_room(ep->tx_cq) && wfi_cq_room(ep->rx_cq) &&
		 wfi_ux_room(ep) && !(more = ibv_next_poll(ep->vcq)));
	ibv_end_poll(ep->vcq);
	empty = more == ENOENT;
	if (sync)
		sync_tags(ep);
fins:
	if (ep->settle && empty)
		wfi_conn_settle(ep);
	wfi_rx_retry_fin(ep);
	wfi_rx_peer_dead(ep);
	wfi_rx_promote(ep);
	wfi_trig_progress(ep);
}

/* A peer's message refused (docs/libfabric.md "Wire messages"): counted
 * per reason, and a line on stderr at the 1st, 2nd, 4th, 8th ... refusal
 * of each reason, so that a flood costs no more than a few lines. */
void wfi_refuse(struct wfi_ep *ep, enum wfi_wire_reason why, uint32_t qpn)
{
	uint64_t n;

	if ((unsigned int)why >= WFI_WIRE_NREASONS)
		return;
	n = ++ep->wire_refused[why];
	if (!(n & (n - 1)))
		fprintf(stderr, "weft: refused a peer's message (QP %u): %s, %llu so far\n", qpn,
			wfi_wire_reason_name(why), (unsigned long long)n);
}
