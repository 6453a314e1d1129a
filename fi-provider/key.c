// SPDX-License-Identifier: MIT
/*
 * Keys chosen by the application (docs/libfabric.md "Keys chosen by the
 * application"): a domain whose info has FI_RMA or FI_ATOMIC and an
 * mr_mode without FI_MR_PROV_KEY (FI_MR_ALLOCATED only: fabtests'
 * fi_rdm_deferred_wq) registers each region under its requested key,
 * unique in the domain, and remote addresses are offsets into the region.
 * The RDMA itself still needs the target's verbs rkey and virtual
 * address: the first operation on (peer, key) asks the target for them
 * with a [TMH NO_TAG, app_ctx KEYQ | key] on the connection to it, and
 * waits (progressing the endpoint, bounded) for the answer
 * [TMH NO_TAG, app_ctx KEYA | key, va, length, rkey, found] on the same
 * connection (both encoded and decoded by wire.c); the answer is kept in the endpoint's table of WFI_RKEYS.
 * The target's progress loop answers from its domain's table; a key it
 * does not have is answered "not found" and the operation fails with
 * -FI_EINVAL (an offset beyond the region too).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wfi.h"

#define WFI_KEY_WAIT_MS 5000

int wfi_key_add(struct wfi_domain *d, struct wfi_mr *m, uint64_t key)
{
	size_t i;

	for (i = 0; i < d->nkeyed; i++)
		if (d->keyed[i]->key == key)
			return -FI_ENOKEY;
	if (d->nkeyed == d->capkeyed) {
		size_t cap = d->capkeyed ? 2 * d->capkeyed : 64;
		struct wfi_mr **k = realloc(d->keyed, cap * sizeof(*k));

		if (!k)
			return -FI_ENOMEM;
		d->keyed = k;
		d->capkeyed = cap;
	}
	m->key = key;
	d->keyed[d->nkeyed++] = m;
	return 0;
}

void wfi_key_del(struct wfi_domain *d, struct wfi_mr *m)
{
	size_t i;

	for (i = 0; i < d->nkeyed; i++)
		if (d->keyed[i] == m) {
			d->keyed[i] = d->keyed[--d->nkeyed];
			return;
		}
}

static struct wfi_mr *key_find(struct wfi_domain *d, uint64_t key)
{
	size_t i;

	for (i = 0; i < d->nkeyed; i++)
		if (d->keyed[i]->key == key)
			return d->keyed[i];
	return NULL;
}

/* A key note m from an internal send slot (the slots kept for FINs), on
 * connection id. */
static int post_note(struct wfi_ep *ep, struct rdma_cm_id *id, const struct wfi_wire_msg *m)
{
	int i = wfi_tx_slot_find(ep, WFI_TX_USER, WFI_TX_SIZE);
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	size_t n;

	if (i < 0 || !id || !id->qp)
		return -FI_EAGAIN;
	memset(&ep->tx[i], 0, sizeof(ep->tx[i]));
	n = wfi_wire_encode(wfi_tx_slot(ep, i), WFI_SLOT, m);
	sge = (struct ibv_sge){ (uintptr_t)wfi_tx_slot(ep, i), (uint32_t)n, ep->slots_mr->lkey };
	wr.wr_id = WFI_WR(WFI_WR_TX, i);
	if (ibv_post_send(id->qp, &wr, &bad))
		return -FI_EAGAIN;
	ep->tx[i].busy = true;
	ep->tx[i].internal = true;
	return 0;
}

/* A KEYQ or KEYA note (decoded by wire.c) that came on QP qpn. */
void wfi_key_note(struct wfi_ep *ep, const struct wfi_wire_msg *m, uint32_t qpn)
{
	const struct wfi_wire_keya *a = &m->keya;
	int i;

	if (m->note == WFI_NOTE_KEYQ) {
		struct wfi_wire_msg ans = { .kind = WFI_MSG_NOTE, .note = WFI_NOTE_KEYA,
					    .keya.key = m->key };
		struct wfi_mr *mr;

		if (!ep->dom->keyed_mode) {
			wfi_refuse(ep, WFI_WIRE_KEYQ_MODE, qpn);
			return;
		}
		mr = key_find(ep->dom, m->key);
		if (mr) {
			ans.keya.va = (uintptr_t)mr->mr->addr;
			ans.keya.len = mr->mr->length;
			ans.keya.rkey = mr->mr->rkey;
			ans.keya.found = true;
		}
		/* A lost answer (no slot) leaves the asker to its timeout. */
		post_note(ep, wfi_conn_by_qpn(ep, qpn), &ans);
		return;
	}
	for (i = 0; i < ep->npeers; i++) {
		struct wfi_peer *pr = &ep->peers[i];

		if (!pr->out || !pr->out->qp || pr->out->qp->qp_num != qpn)
			continue;
		/* Only an answer the endpoint is waiting for is taken. */
		if (ep->keyq_peer != i || ep->keyq_key != a->key)
			break;
		ep->rkeys[ep->rkey_next++ % WFI_RKEYS] =
			(struct wfi_rkey){ .used = true, .peer = i, .key = a->key, .va = a->va,
					   .len = a->len, .rkey = a->rkey, .found = a->found };
		ep->keyq_peer = -1;
		return;
	}
	wfi_refuse(ep, WFI_WIRE_KEYA_STRAY, qpn);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct wfi_rkey *cached(struct wfi_ep *ep, int peer, uint64_t key)
{
	int i;

	for (i = 0; i < WFI_RKEYS; i++)
		if (ep->rkeys[i].used && ep->rkeys[i].peer == peer && ep->rkeys[i].key == key)
			return &ep->rkeys[i];
	return NULL;
}

/* The application's (addr, key) for len bytes at dest -> the target's
 * virtual address and rkey.  With provider keys they are already. */
int wfi_key_target(struct wfi_ep *ep, fi_addr_t dest, size_t len, uint64_t *addr,
		   uint64_t *key)
{
	struct wfi_peer *peer;
	struct wfi_rkey *e;
	struct wfi_wire_msg q = { .kind = WFI_MSG_NOTE, .note = WFI_NOTE_KEYQ, .key = *key };
	uint64_t end;
	int pi, ret;

	if (!ep->dom->keyed_mode)
		return *key > UINT32_MAX ? -FI_EINVAL : 0;
	ret = wfi_conn_get(ep, dest, &peer);
	if (ret)
		return ret;
	pi = (int)(peer - ep->peers);
	e = cached(ep, pi, *key);
	if (!e) {
		if (ep->keyq_peer >= 0)
			return -FI_EAGAIN;	/* another query is waiting */
		ret = post_note(ep, peer->out, &q);
		if (ret)
			return ret;
		ep->keyq_peer = pi;
		ep->keyq_key = *key;
		end = now_ms() + WFI_KEY_WAIT_MS;
		while (ep->keyq_peer >= 0 && now_ms() < end)
			wfi_progress(ep);
		if (ep->keyq_peer >= 0) {
			ep->keyq_peer = -1;
			return -FI_ETIMEDOUT;
		}
		e = cached(ep, pi, *key);
		if (!e)
			return -FI_EAGAIN;
	}
	if (!e->found) {
		e->used = false;	/* ask again next time: it may be registered by then */
		return -FI_EINVAL;
	}
	if (*addr > e->len || len > e->len - *addr)
		return -FI_EINVAL;
	*addr += e->va;
	*key = e->rkey;
	return 0;
}
