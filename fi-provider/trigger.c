// SPDX-License-Identifier: MIT
/*
 * Triggered operations (FI_TRIGGER, docs/libfabric.md "Triggered
 * operations"): an RMA operation posted with FI_TRIGGER and a
 * struct fi_triggered_context of type FI_TRIGGER_THRESHOLD waits, in a
 * bounded table, until its counter reaches the threshold; the progress
 * loop then posts it.  In software: seed 000's conditional-RDMA engine is
 * not reachable through verbs.
 */
#include "wfi.h"

int wfi_trig_add(struct wfi_ep *ep, bool write, void *buf, size_t len, void *desc, fi_addr_t dest,
		 uint64_t addr, uint64_t key, void *ctx, uint64_t flags)
{
	struct fi_triggered_context *tc = ctx;
	int i;

	if (!(ep->info->caps & FI_TRIGGER))
		return -FI_EOPNOTSUPP;
	if (!tc || tc->event_type != FI_TRIGGER_THRESHOLD || !tc->trigger.threshold.cntr)
		return -FI_EINVAL;
	for (i = 0; i < WFI_TRIG_MAX; i++)
		if (!ep->trig[i].used)
			break;
	if (i == WFI_TRIG_MAX)
		return -FI_EAGAIN;
	ep->trig[i] = (struct wfi_trig){
		.used = true, .write = write, .buf = buf, .desc = desc, .ctx = ctx, .len = len,
		.dest = dest, .addr = addr, .key = key, .flags = flags & ~(uint64_t)FI_TRIGGER,
		.threshold = tc->trigger.threshold.threshold, .cntr = tc->trigger.threshold.cntr,
	};
	ep->ntrig++;
	return 0;
}

/* Posts the operations whose counter reached its threshold, in table
 * order; one that cannot be posted yet (-FI_EAGAIN) stays. */
void wfi_trig_progress(struct wfi_ep *ep)
{
	int i;

	for (i = 0; ep->ntrig && i < WFI_TRIG_MAX; i++) {
		struct wfi_trig *t = &ep->trig[i];
		ssize_t ret;

		if (!t->used || wfi_cntr_value(t->cntr) < t->threshold)
			continue;
		ret = wfi_rma(ep, t->write, t->buf, t->len, t->desc, t->dest, t->addr, t->key,
			      t->ctx, t->flags);
		if (ret == -FI_EAGAIN)
			continue;
		if (ret)
			wfi_cq_err(ep->tx_cq, t->ctx, FI_RMA | (t->write ? FI_WRITE : FI_READ),
				   (int)-ret, t->len, 0, 0);
		t->used = false;
		ep->ntrig--;
	}
}
