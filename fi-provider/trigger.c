// SPDX-License-Identifier: MIT
/*
 * Triggered operations and the deferred work queue (docs/libfabric.md
 * "Triggered operations").
 *
 * In the adapter: an RMA write or read or an atomic, posted with
 * FI_TRIGGER or queued as deferred work, whose counter's value is its
 * adapter block alone, for good (wfi_cntr_trig_exact), goes to the
 * trigger connection of its peer and counter, a second RC QP made on the
 * first such operation (WFI_TQ_MAX per peer, one per counter) and
 * carrying nothing else: a WAIT_CNT (the verbs form of seed 000's
 * conditional RDMA, docs/counters.md "Waiting on a counter") on the
 * counter's slot of that QP, then the operation, which the adapter sends
 * when the block reaches the threshold, with no software step.  A
 * WAIT_CNT holds every later WQE of its send queue, so each QP waits on
 * one counter, in non-decreasing threshold order; an operation that
 * would break the order, needs a fifth counter's connection to the peer,
 * or finds the QP full stays in software.  The entry stays in its table
 * until its WAIT_CNT's completion says it passed; a software count on
 * the counter (fi_cntr_set/add are the adapter's: cntr.c) stops the
 * trigger QPs waiting on it below the threshold (wfi_trig_recall); an entry whose WAIT_CNT fails
 * or is flushed, by a recall, the peer's death or any error of the QP,
 * goes back to software, its flushed operation completing nothing
 * (wfi_trig_wait_done).  Deferred work's completion counter is counted
 * in software when its held operation completes.
 *
 * In software: any other RMA, atomic or send operation posted with
 * FI_TRIGGER and a struct fi_triggered_context of type
 * FI_TRIGGER_THRESHOLD waits in its endpoint's bounded table until its
 * counter reaches the threshold.
 * fi_control(domain, FI_QUEUE_WORK) queues any fi_op_type (sends, tagged
 * sends, receives, tagged receives, RMA, the three atomics, counter set
 * and add) in the domain's bounded table, copied in full (the caller's
 * fi_deferred_work and its op may be reused at once); its completion also
 * counts on the work's completion counter.  The progress of any endpoint
 * of the domain posts what is ready, in table order; an operation that
 * cannot be posted yet (-FI_EAGAIN) stays, one that fails is reported as
 * an error completion (and an error on the completion counter).
 */
#include <stdio.h>
#include <string.h>

#include "wfi.h"

/* w copied into a free entry of tab: its index, or -FI_EAGAIN. */
static int slot_add(struct wfi_trig *tab, int *n, const struct wfi_trig *w)
{
	int i;

	for (i = 0; i < WFI_TRIG_MAX; i++)
		if (!tab[i].used)
			break;
	if (i == WFI_TRIG_MAX)
		return -FI_EAGAIN;
	tab[i] = *w;
	tab[i].used = true;
	(*n)++;
	return i;
}

/* Can the adapter hold an operation of type ty? */
static bool hw_type(enum fi_op_type ty)
{
	return ty == FI_OP_WRITE || ty == FI_OP_READ || ty == FI_OP_ATOMIC ||
	       ty == FI_OP_FETCH_ATOMIC || ty == FI_OP_COMPARE_ATOMIC;
}

/* Peer p's trigger connection for counter c: the one c has, else a free
 * one taken for c; NULL when the WFI_TQ_MAX are taken by other counters. */
static struct wfi_tq *tq_for(struct wfi_peer *p, struct fid_cntr *c)
{
	uint64_t serial = wfi_cntr_serial(c);
	struct wfi_tq *q;
	int i;

	for (i = 0; i < WFI_TQ_MAX; i++)
		if (p->tq[i].used && p->tq[i].serial == serial)
			return &p->tq[i];
	for (i = 0; i < WFI_TQ_MAX; i++) {
		q = &p->tq[i];
		if (!q->used) {
			*q = (struct wfi_tq){ .used = true, .cntr = c, .serial = serial };
			return q;
		}
	}
	return NULL;
}

/* Why triggered operation t cannot be held by the adapter on the trigger
 * connection of its peer and counter, or NULL once that is connected
 * (t->peer, t->tq set). */
static const char *hw_refusal(struct wfi_ep *ep, struct wfi_trig *t)
{
	const char *why;
	struct wfi_peer *p;
	struct wfi_tq *q;

	if (!hw_type(t->type))
		return "not an RMA or atomic operation";
	if (!ep->enabled)
		return "the endpoint is not enabled";
	why = wfi_cntr_trig_exact(t->cntr, ep->dom);
	if (why)
		return why;
	if (wfi_conn_get(ep, t->dest, &p))
		return "no connection to the peer";
	q = tq_for(p, t->cntr);
	if (!q)
		return "the peer's trigger connections (4, one per counter) are taken by other counters";
	if (q->off)
		return "the trigger connection for this counter failed or was stopped";
	if (t->threshold < q->last)
		return "a threshold below one already held for the peer on this counter";
	if (wfi_conn_trig(ep, p, q))
		return "the trigger connection could not be made (or has no slot for the counter)";
	t->peer = p;
	t->tq = q;
	return NULL;
}

/* Posts t (entry i of the endpoint's table, or i - WFI_TRIG_MAX of the
 * domain's work) behind a WAIT_CNT when the adapter can hold it: true
 * then.  Deferred work's completion counter is counted in software when
 * the operation completes (wfi_tx_finish). */
static bool hw_post(struct wfi_ep *ep, struct wfi_trig *t, int i)
{
	const char *why = hw_refusal(ep, t);
	ssize_t ret = 0;

	if (!why) {
		ep->work_cntr = t->comp;
		ret = t->type == FI_OP_WRITE || t->type == FI_OP_READ ? wfi_rma_held(ep, t, i) :
		      wfi_atomic_held(ep, t, i);
		ep->work_cntr = NULL;
	}
	if (ret)
		why = "posting behind a WAIT_CNT failed (the trigger connection's queue is full, or "
		      "the operation was refused)";
	if (why) {
		if (ep->log)
			fprintf(stderr, "weft: FI_TRIGGER: in software: %s\n", why);
		return false;
	}
	if (ep->log)
		fprintf(stderr, "weft: FI_TRIGGER: held by the adapter: WAIT_CNT(slot %d, %llu) on QP %u\n",
			t->tq->slot, (unsigned long long)t->threshold, t->tq->id->qp->qp_num);
	t->hw = true;
	t->tq->last = t->threshold;
	wfi_cntr_trig_count(t->cntr, WFI_TRIG_HW);
	/* Connecting and posting progressed the endpoint: had software
	 * moved the counter meanwhile, the WAIT_CNT is taken back at once. */
	if (wfi_cntr_trig_exact(t->cntr, ep->dom))
		wfi_trig_recall(ep->dom, t->cntr);
	return true;
}

/* Table entry t (idx: its index in the wr_ids, hw_post) to the adapter
 * when it can hold it, else counted as kept in software. */
static void hold(struct wfi_ep *ep, struct wfi_trig *t, int idx)
{
	/* Connecting progresses the endpoint: the entry must not fire
	 * from the table meanwhile. */
	ep->dom->working = true;
	if (!hw_post(ep, t, idx))
		wfi_cntr_trig_count(t->cntr, WFI_TRIG_SW);
	ep->dom->working = false;
}

/* FI_TRIGGER: w's ctx is the struct fi_triggered_context. */
int wfi_trig_add(struct wfi_ep *ep, const struct wfi_trig *w)
{
	struct fi_triggered_context *tc = w->ctx;
	struct wfi_trig t = *w;
	int i;

	if (!(ep->info->caps & FI_TRIGGER))
		return -FI_EOPNOTSUPP;
	if (!tc || tc->event_type != FI_TRIGGER_THRESHOLD || !tc->trigger.threshold.cntr)
		return -FI_EINVAL;
	t.ep = ep;
	t.flags &= ~(uint64_t)FI_TRIGGER;
	t.threshold = tc->trigger.threshold.threshold;
	t.cntr = tc->trigger.threshold.cntr;
	i = slot_add(ep->trig, &ep->ntrig, &t);
	if (i < 0)
		return i;
	hold(ep, &ep->trig[i], i);
	return 0;
}

static int one_iov(const struct iovec *iov, size_t n, void **buf, size_t *len)
{
	if (n > 1 || (n && !iov))
		return -FI_EINVAL;
	*buf = n ? iov[0].iov_base : NULL;
	*len = n ? iov[0].iov_len : 0;
	return 0;
}

static int one_ioc(const struct fi_ioc *ioc, size_t n, void **addr)
{
	if (n != 1 || !ioc || ioc[0].count != 1)
		return -FI_EINVAL;
	*addr = ioc[0].addr;
	return 0;
}

/* The endpoint an operation names, checked. */
static int work_ep(struct wfi_domain *d, struct fid_ep *fep, struct wfi_ep **ep)
{
	if (!fep)
		return -FI_EINVAL;
	*ep = wfi_ep_of(fep);
	return (*ep)->dom == d ? 0 : -FI_EINVAL;
}

static int atomic_work(struct wfi_domain *d, const struct fi_deferred_work *w, struct wfi_trig *t)
{
	const struct fi_msg_atomic *m;
	struct fid_ep *fep;
	void *p = NULL, *cmp = NULL, *res = NULL;
	int kind, ret;

	switch (w->op_type) {
	case FI_OP_ATOMIC:
		if (!w->op.atomic)
			return -FI_EINVAL;
		m = &w->op.atomic->msg;
		fep = w->op.atomic->ep;
		t->flags = w->op.atomic->flags;
		kind = WFI_ATOMIC_BASE;
		break;
	case FI_OP_FETCH_ATOMIC:
		if (!w->op.fetch_atomic)
			return -FI_EINVAL;
		m = &w->op.fetch_atomic->msg;
		fep = w->op.fetch_atomic->ep;
		t->flags = w->op.fetch_atomic->flags;
		kind = WFI_ATOMIC_FETCH;
		if (one_ioc(w->op.fetch_atomic->fetch.msg_iov,
			    w->op.fetch_atomic->fetch.iov_count, &res))
			return -FI_EINVAL;
		break;
	default:
		if (!w->op.compare_atomic)
			return -FI_EINVAL;
		m = &w->op.compare_atomic->msg;
		fep = w->op.compare_atomic->ep;
		t->flags = w->op.compare_atomic->flags;
		kind = WFI_ATOMIC_COMPARE;
		if (one_ioc(w->op.compare_atomic->fetch.msg_iov,
			    w->op.compare_atomic->fetch.iov_count, &res) ||
		    one_ioc(w->op.compare_atomic->compare.msg_iov,
			    w->op.compare_atomic->compare.iov_count, &cmp))
			return -FI_EINVAL;
		break;
	}
	ret = work_ep(d, fep, &t->ep);
	if (ret)
		return ret;
	if (!(t->ep->info->caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	ret = wfi_atomic_valid(kind, m->datatype, m->op, NULL);
	if (ret)
		return ret;
	if (m->rma_iov_count != 1 || !m->rma_iov || (m->op != FI_ATOMIC_READ &&
						      one_ioc(m->msg_iov, m->iov_count, &p)))
		return -FI_EINVAL;
	if (p)
		memcpy(&t->operand, p, 8);
	if (cmp)
		memcpy(&t->compare, cmp, 8);
	t->result = res;
	t->len = 1;
	t->dt = m->datatype;
	t->op = m->op;
	t->dest = m->addr;
	t->addr = m->rma_iov[0].addr;
	t->key = m->rma_iov[0].key;
	t->ctx = m->context;
	return 0;
}

/* Copies the fi_deferred_work into a table entry. */
static int work_copy(struct wfi_domain *d, const struct fi_deferred_work *w, struct wfi_trig *t)
{
	int ret;

	*t = (struct wfi_trig){ .type = w->op_type, .threshold = w->threshold,
				.cntr = w->triggering_cntr, .comp = w->completion_cntr };
	switch (w->op_type) {
	case FI_OP_SEND:
	case FI_OP_RECV:
		if (!w->op.msg)
			return -FI_EINVAL;
		ret = work_ep(d, w->op.msg->ep, &t->ep);
		if (!ret)
			ret = one_iov(w->op.msg->msg.msg_iov, w->op.msg->msg.iov_count, &t->buf,
				      &t->len);
		t->dest = w->op.msg->msg.addr;
		t->ctx = w->op.msg->msg.context;
		t->data = w->op.msg->msg.data;
		t->flags = w->op.msg->flags;
		return ret;
	case FI_OP_TSEND:
	case FI_OP_TRECV:
		if (!w->op.tagged)
			return -FI_EINVAL;
		ret = work_ep(d, w->op.tagged->ep, &t->ep);
		if (!ret)
			ret = one_iov(w->op.tagged->msg.msg_iov, w->op.tagged->msg.iov_count,
				      &t->buf, &t->len);
		if (!ret && !(t->ep->info->caps & FI_TAGGED))
			ret = -FI_EOPNOTSUPP;
		t->dest = w->op.tagged->msg.addr;
		t->ctx = w->op.tagged->msg.context;
		t->data = w->op.tagged->msg.data;
		t->tag = w->op.tagged->msg.tag;
		t->ignore = w->op.tagged->msg.ignore;
		t->flags = w->op.tagged->flags;
		return ret;
	case FI_OP_READ:
	case FI_OP_WRITE:
		if (!w->op.rma)
			return -FI_EINVAL;
		ret = work_ep(d, w->op.rma->ep, &t->ep);
		if (!ret)
			ret = one_iov(w->op.rma->msg.msg_iov, w->op.rma->msg.iov_count, &t->buf,
				      &t->len);
		if (!ret && (w->op.rma->msg.rma_iov_count != 1 || !w->op.rma->msg.rma_iov ||
			     w->op.rma->msg.rma_iov[0].len != t->len))
			ret = -FI_EINVAL;
		if (!ret && !(t->ep->info->caps & FI_RMA))
			ret = -FI_EOPNOTSUPP;
		if (ret)
			return ret;
		t->desc = w->op.rma->msg.desc ? w->op.rma->msg.desc[0] : NULL;
		t->dest = w->op.rma->msg.addr;
		t->addr = w->op.rma->msg.rma_iov[0].addr;
		t->key = w->op.rma->msg.rma_iov[0].key;
		t->ctx = w->op.rma->msg.context;
		t->data = w->op.rma->msg.data;
		t->flags = w->op.rma->flags;
		return 0;
	case FI_OP_ATOMIC:
	case FI_OP_FETCH_ATOMIC:
	case FI_OP_COMPARE_ATOMIC:
		return atomic_work(d, w, t);
	case FI_OP_CNTR_SET:
	case FI_OP_CNTR_ADD:
		if (!w->op.cntr || !w->op.cntr->cntr)
			return -FI_EINVAL;
		t->target = w->op.cntr->cntr;
		t->value = w->op.cntr->value;
		return 0;
	default:
		return -FI_EINVAL;
	}
}

int wfi_queue_work(struct wfi_domain *d, const struct fi_deferred_work *w)
{
	struct wfi_trig t;
	int ret;

	if (!w || !w->triggering_cntr)
		return -FI_EINVAL;
	ret = work_copy(d, w, &t);
	if (ret)
		return ret;
	if (t.ep && !(t.ep->info->caps & FI_TRIGGER))
		return -FI_EOPNOTSUPP;
	if (t.flags & FI_TRIGGER)
		return -FI_EINVAL;
	ret = slot_add(d->work, &d->nwork, &t);
	if (ret < 0)
		return ret;
	/* RMA and atomics on an exact counter go to the adapter, as
	 * FI_TRIGGER operations do; counter set and add have no endpoint. */
	if (t.ep)
		hold(t.ep, &d->work[ret], WFI_TRIG_MAX + ret);
	else
		wfi_cntr_trig_count(t.cntr, WFI_TRIG_SW);
	return 0;
}

static uint64_t fail_flags(const struct wfi_trig *t)
{
	switch (t->type) {
	case FI_OP_SEND:
		return FI_SEND | FI_MSG;
	case FI_OP_TSEND:
		return FI_SEND | FI_TAGGED;
	case FI_OP_RECV:
		return FI_RECV | FI_MSG;
	case FI_OP_TRECV:
		return FI_RECV | FI_TAGGED;
	case FI_OP_READ:
		return FI_RMA | FI_READ;
	case FI_OP_WRITE:
		return FI_RMA | FI_WRITE;
	case FI_OP_ATOMIC:
		return FI_ATOMIC | FI_WRITE;
	default:
		return FI_ATOMIC | FI_READ;
	}
}

static ssize_t run(struct wfi_trig *t)
{
	struct wfi_ep *ep = t->ep;

	switch (t->type) {
	case FI_OP_SEND:
	case FI_OP_TSEND:
		return wfi_send(ep, t->buf, t->len, t->dest, t->tag, t->data, t->ctx, t->flags,
				t->type == FI_OP_SEND);
	case FI_OP_RECV:
	case FI_OP_TRECV:
		return wfi_recv(ep, t->buf, t->len, t->dest, t->tag, t->ignore, t->ctx, t->flags,
				t->type == FI_OP_RECV);
	case FI_OP_READ:
	case FI_OP_WRITE:
		return wfi_rma(ep, t->type == FI_OP_WRITE, t->buf, t->len, t->desc, t->dest,
			       t->addr, t->key, t->data, t->ctx, t->flags);
	case FI_OP_CNTR_SET:
	case FI_OP_CNTR_ADD:
		wfi_cntr_move(t->target, t->type == FI_OP_CNTR_SET, t->value);
		wfi_cntr_inc(t->comp, false);
		return 0;
	default:
		return wfi_atomic_post(ep, wfi_atomic_kind(t->type), &t->operand, t->len,
				       &t->compare, t->result, t->dest, t->addr, t->key, t->dt, t->op,
				       t->ctx, t->flags);
	}
}

static void table_progress(struct wfi_trig *tab, int *n)
{
	int i;

	for (i = 0; *n && i < WFI_TRIG_MAX; i++) {
		struct wfi_trig *t = &tab[i];
		ssize_t ret;

		if (!t->used || t->hw || wfi_cntr_value(t->cntr) < t->threshold)
			continue;
		if (t->ep)
			t->ep->work_cntr = t->target ? NULL : t->comp;
		ret = run(t);
		if (t->ep)
			t->ep->work_cntr = NULL;
		if (ret == -FI_EAGAIN)
			continue;
		if (ret && t->ep) {
			struct wfi_cq *cq = t->type == FI_OP_RECV || t->type == FI_OP_TRECV ?
					    t->ep->rx_cq : t->ep->tx_cq;

			wfi_cntr_inc(t->comp, true);
			wfi_cq_err(cq, t->ctx, fail_flags(t), (int)-ret, t->len, t->tag, 0);
		}
		t->used = false;
		(*n)--;
	}
}

/* Posts the triggered operations and the deferred work whose counter
 * reached its threshold (not from within a post that runs progress). */
void wfi_trig_progress(struct wfi_ep *ep)
{
	struct wfi_domain *d = ep->dom;

	if (d->working || (!ep->ntrig && !d->nwork))
		return;
	d->working = true;
	table_progress(ep->trig, &ep->ntrig);
	table_progress(d->work, &d->nwork);
	d->working = false;
}

/* A closing endpoint leaves its domain: its queued work goes with it. */
void wfi_dom_forget_ep(struct wfi_domain *d, struct wfi_ep *ep)
{
	int i, j;

	for (i = j = 0; i < d->neps; i++)
		if (d->eps[i] != ep)
			d->eps[j++] = d->eps[i];
	d->neps = j;
	for (i = 0; i < WFI_TRIG_MAX; i++)
		if (d->work[i].used && d->work[i].ep == ep) {
			d->work[i].used = false;
			d->nwork--;
		}
}

/* The counter that counts held entry t's operation. */
static struct fid_cntr *op_cntr(struct wfi_ep *ep, const struct wfi_trig *t)
{
	return t->type == FI_OP_WRITE || t->type == FI_OP_ATOMIC ? ep->wr_cntr : ep->rd_cntr;
}

/* The error the adapter will count for held entry t's operation when its
 * recall flushes it, owed (n 1) or not after all (n -1, it passed). */
static void recall_owed(struct wfi_ep *ep, struct wfi_trig *t, int n)
{
	if (ep->tx[t->tx].hw)
		wfi_cntr_hw_flushed(op_cntr(ep, t), n);
}

/* The held entry of ep that wr_id index i names: i of the endpoint's
 * table, or i - WFI_TRIG_MAX of its domain's work (n: that table's
 * count); NULL when there is none. */
static struct wfi_trig *held_entry(struct wfi_ep *ep, int i, int **n)
{
	struct wfi_trig *t;

	if (i < 0 || i >= 2 * WFI_TRIG_MAX)
		return NULL;
	if (i < WFI_TRIG_MAX) {
		t = &ep->trig[i];
		*n = &ep->ntrig;
	} else {
		t = &ep->dom->work[i - WFI_TRIG_MAX];
		*n = &ep->dom->nwork;
	}
	return t->used && t->hw && t->ep == ep ? t : NULL;
}

/* The completion of held entry i's WAIT_CNT.  Passed: the adapter sent
 * the operation, whose own completion completes it as any other; the
 * entry is done.  Failed or flushed (a recall, the peer gone, the QP in
 * error, WAIT_SLOT/WAIT_GONE): the operation after it never started, so
 * the entry goes back to software, where it fires at its threshold as
 * any software trigger (and fails there as one does when the peer is
 * gone); its flushed operation completes nothing, the error the adapter
 * counts for it taken back; the later triggers to that peer on that
 * counter stay in software. */
void wfi_trig_wait_done(struct wfi_ep *ep, int i, int status)
{
	struct wfi_trig *t;
	struct wfi_tx *x;
	int *n;

	t = held_entry(ep, i, &n);
	if (!t)
		return;
	t->hw = false;
	x = t->tx >= 0 && t->tx < WFI_TX_SIZE && ep->tx[t->tx].trig == i + 1 ? &ep->tx[t->tx] : NULL;
	if (x) {
		x->trig = 0;
		x->recalled = status != 0;
		/* A recall owed the error already; released after all, the
		 * operation counts as any other. */
		if (status && !t->recall)
			recall_owed(ep, t, 1);
		else if (!status && t->recall)
			recall_owed(ep, t, -1);
	}
	if (status) {
		t->tq->off = true;
		wfi_cntr_trig_count(t->cntr, WFI_TRIG_RECALLED);
		return;		/* in software now: table_progress posts it */
	}
	wfi_cntr_trig_count(t->cntr, WFI_TRIG_ENDED);
	t->used = false;
	(*n)--;
}

/* Trigger connection q stopped: every entry it holds, in the endpoints'
 * tables and the domain's work, goes back to software at its flush. */
static void recall_tq(struct wfi_domain *d, struct wfi_tq *q)
{
	int e, i;

	wfi_conn_trig_stop(q);
	for (e = 0; e <= d->neps; e++) {
		struct wfi_trig *tab = e < d->neps ? d->eps[e]->trig : d->work;

		for (i = 0; i < WFI_TRIG_MAX; i++)
			if (tab[i].used && tab[i].hw && tab[i].tq == q) {
				tab[i].recall = true;
				recall_owed(tab[i].ep, &tab[i], 1);
			}
	}
}

/* Software's part of counter c moved: every trigger connection holding a
 * WAIT_CNT on c that the block has not reached is stopped, and those
 * entries are marked to go back to software when their flush comes
 * (wfi_trig_wait_done).  An entry whose threshold the block had reached
 * is the adapter's already; an operation released in the instant before
 * the stop is flushed and completes in error (docs/libfabric.md). */
void wfi_trig_recall(struct wfi_domain *d, struct fid_cntr *c)
{
	uint64_t block = wfi_cntr_block(c);
	int e, i;

	for (e = 0; e <= d->neps; e++) {
		struct wfi_trig *tab = e < d->neps ? d->eps[e]->trig : d->work;

		for (i = 0; i < WFI_TRIG_MAX; i++) {
			struct wfi_trig *t = &tab[i];

			if (t->used && t->hw && t->cntr == c && t->threshold > block && !t->tq->off)
				recall_tq(d, t->tq);
		}
	}
}

/* A closing endpoint's held triggers and deferred work: its QPs are gone
 * with their WAITs (wfi_dom_forget_ep drops the work). */
void wfi_trig_close(struct wfi_ep *ep)
{
	struct wfi_trig *w = ep->dom->work;
	int i;

	for (i = 0; i < WFI_TRIG_MAX; i++) {
		if (ep->trig[i].used && ep->trig[i].hw)
			wfi_cntr_trig_count(ep->trig[i].cntr, WFI_TRIG_ENDED);
		if (w[i].used && w[i].hw && w[i].ep == ep)
			wfi_cntr_trig_count(w[i].cntr, WFI_TRIG_ENDED);
	}
}
