// SPDX-License-Identifier: MIT
/*
 * Counters (fi_cntr, docs/libfabric.md "Counters"): the adapter's event
 * counters (docs/counters.md "Event counters", hwcntr.c) where the
 * adapter sees the completion, software where only software does.  A
 * counter bound for FI_SEND, FI_READ, FI_WRITE, FI_REMOTE_READ or
 * FI_REMOTE_WRITE gets an adapter counter when bound; each endpoint's QPs
 * bind it to a slot as they are made: its own connections (out) for the
 * WQEs that name the slot (eager sends, RDMA, atomics), the connections
 * it accepted (in) for the peers' WRITEs, atomics and READs they serve.
 * An operation is counted by the adapter or by software, chosen when it
 * is posted (its WQE names the slot or not) or, at the target, by the QP
 * it came on: never by both.  The value is the adapter's block plus a
 * software part (its own counts); errors likewise.  fi_cntr_set/add and
 * their error forms, and deferred FI_OP_CNTR_SET/ADD, move the block in
 * the adapter (EV_SET, docs/counters.md "Event counters"), which releases
 * the WAIT_CNTs the new count reaches: the counter stays exact for the
 * triggers it holds.  Where the kernel has no such method they move
 * software's part instead, as software counts do.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wfi.h"
#include "weft/cnt.h"

#define WFI_CNTR_MAX_EPS 8
#define WFI_HW_SYNC_MS 100	/* longest wait for the block to show what the CQ showed */

struct wfi_cntr {
	struct fid_cntr cntr_fid;
	struct wfi_domain *dom;
	uint64_t value, err;		/* software's part (mod 2^64) */
	struct wfi_hwcntr hw;		/* the adapter's counter (hw.blk NULL: none) */
	bool hw_tried;
	int hw_err;			/* errno of its CREATE that failed */
	int set_err;			/* errno of an EV_SET that failed: set/add in software */
	uint64_t hw_done;		/* the block's sum once it shows what software saw end */
	uint64_t qp_binds, bind_failed;
	/* Triggers (trigger.c "In the adapter"): a WAIT_CNT compares the
	 * block alone, so it stands for the counter only while software's
	 * part is 0 and cannot move. */
	bool sw_moved;			/* software counted on it (or set, added: no EV_SET) */
	bool sw_bound;			/* bound for FI_RECV (software counts receives) */
	int trig_held;			/* WAIT_CNTs on it the adapter holds now */
	uint64_t serial;		/* unique in the process (a trigger QP's counter) */
	uint64_t trig_hw, trig_sw, trig_recalled;
	struct wfi_ep *eps[WFI_CNTR_MAX_EPS];
	int neps, refs;
};

static uint64_t cntr_serial;

static struct wfi_cntr *to_cntr(struct fid_cntr *c)
{
	return container_of(c, struct wfi_cntr, cntr_fid);
}

/* c's serial: a closed counter's memory may be another's later, its
 * serial never is. */
uint64_t wfi_cntr_serial(struct fid_cntr *c)
{
	return to_cntr(c)->serial;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The block as it is, once it shows the adapter-counted operations whose
 * completions software has already seen (the adapter writes it just after
 * their CQE), waiting WFI_HW_SYNC_MS at most: a block that does not catch
 * up (events the adapter dropped) is taken as it is from then on. */
static void hw_now(struct wfi_cntr *k, uint64_t *count, uint64_t *errors)
{
	uint64_t end = 0;
	unsigned int n = 0;

	for (;;) {
		wfi_hw_read(&k->hw, count, errors);
		/* Mod 2^64: a set may take the block below 0's side. */
		if (!k->hw.blk || (int64_t)(*count + *errors - k->hw_done) >= 0)
			return;
		if (!(++n & 1023)) {
			if (!end) {
				end = now_ms() + WFI_HW_SYNC_MS;
			} else if (now_ms() >= end) {
				k->hw_done = *count + *errors;
				return;
			}
		}
	}
}

static uint64_t value_of(struct wfi_cntr *k, uint64_t *errs)
{
	uint64_t c, e;

	hw_now(k, &c, &e);
	if (errs)
		*errs = k->err + e;
	return k->value + c;
}

uint64_t wfi_cntr_value(struct fid_cntr *c)
{
	return value_of(to_cntr(c), NULL);
}

/* The adapter's success count alone (what a WAIT_CNT compares). */
uint64_t wfi_cntr_block(struct fid_cntr *c)
{
	uint64_t n, e;

	wfi_hw_read(&to_cntr(c)->hw, &n, &e);
	return n;
}

/* Software's part of k's value moved (a software count, or a set or add
 * where the kernel has no EV_SET): its WAIT_CNTs the adapter holds no
 * longer stand for it, so they are taken back into software (trigger.c),
 * and it gets no more. */
static void sw_move(struct wfi_cntr *k)
{
	k->sw_moved = true;
	if (k->trig_held)
		wfi_trig_recall(k->dom, &k->cntr_fid);
}

/* Software counts one completion (or error) on c. */
void wfi_cntr_inc(struct fid_cntr *c, bool err)
{
	if (!c)
		return;
	if (err) {
		to_cntr(c)->err++;
		return;
	}
	to_cntr(c)->value++;
	sw_move(to_cntr(c));
}

/* n operations on c (n < 0: -n fewer) that the adapter will flush, and
 * count as errors, though they are not over (a recalled trigger's,
 * posted again by software): software's part takes the errors back, and
 * reads wait for the block to show them as for any operation software
 * saw end. */
void wfi_cntr_hw_flushed(struct fid_cntr *c, int n)
{
	if (!c)
		return;
	to_cntr(c)->hw_done += (uint64_t)(int64_t)n;
	to_cntr(c)->err -= (uint64_t)(int64_t)n;
}

/* Can a WAIT_CNT on c's block hold an operation of domain d exactly?
 * NULL when it can, else why not: only a counter of the domain backed by
 * an adapter counter, never moved by software, not bound for FI_RECV
 * (software counts every receive) and with every slot bind taken, so that
 * its value is its block.  A later software move (a rendezvous send's
 * FIN on an FI_SEND counter, the completion of deferred work counted on
 * it) recalls what is held; a set or add does not: the adapter makes it
 * (hw_move). */
const char *wfi_cntr_trig_exact(struct fid_cntr *c, struct wfi_domain *d)
{
	struct wfi_cntr *k = to_cntr(c);

	if (k->dom != d)
		return "a counter of another domain";
	if (!k->hw.blk)
		return "no adapter counter";
	if (k->sw_moved || k->value)
		return "software moved it (a software count)";
	if (k->sw_bound)
		return "bound for FI_RECV (receives counted in software)";
	if (k->bind_failed)
		return "a QP slot bind refused (counted in software there)";
	return NULL;
}

/* A triggered operation on c: held by the adapter (WFI_TRIG_HW), kept in
 * software (WFI_TRIG_SW), its WAIT_CNT ended (WFI_TRIG_ENDED) or taken
 * back into software (WFI_TRIG_RECALLED). */
void wfi_cntr_trig_count(struct fid_cntr *c, enum wfi_trig_ev ev)
{
	struct wfi_cntr *k = to_cntr(c);

	switch (ev) {
	case WFI_TRIG_HW:
		k->trig_held++;
		k->trig_hw++;
		break;
	case WFI_TRIG_SW:
		k->trig_sw++;
		break;
	case WFI_TRIG_RECALLED:
		k->trig_recalled++;
		/* fallthrough */
	default:
		k->trig_held--;
		break;
	}
}

/* Software saw an operation complete that the adapter counts on c. */
void wfi_cntr_hw_done(struct fid_cntr *c)
{
	if (c)
		to_cntr(c)->hw_done++;
}

/* The adapter's counter for k, made once: false when there is none (its
 * CREATE failed: the 256 objects are taken, ...), and k counts in
 * software. */
static bool hw_get(struct wfi_cntr *k)
{
	if (!k->hw_tried) {
		k->hw_tried = true;
		k->hw_err = wfi_hw_create(k->dom->ctx, &k->hw);
		if (k->hw_err && getenv("WEFT_FI_LOG"))
			fprintf(stderr, "weft: fi_cntr: no adapter counter (%s): counted in software\n",
				strerror(k->hw_err));
	}
	return k->hw.blk != NULL;
}

int wfi_cntr_bind_ep(struct fid_cntr *c, struct wfi_ep *ep, uint64_t flag)
{
	struct wfi_cntr *k = to_cntr(c);
	int i;

	if (flag & (FI_SEND | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE))
		hw_get(k);
	if (flag & FI_RECV)
		k->sw_bound = true;
	for (i = 0; i < k->neps; i++)
		if (k->eps[i] == ep) {
			k->refs++;
			return 0;
		}
	if (k->neps == WFI_CNTR_MAX_EPS)
		return -FI_ENOSPC;
	k->eps[k->neps++] = ep;
	k->refs++;
	return 0;
}

void wfi_cntr_unbind_ep(struct fid_cntr *c, struct wfi_ep *ep)
{
	struct wfi_cntr *k = to_cntr(c);
	int i, j;

	k->refs--;
	for (i = j = 0; i < k->neps; i++)
		if (k->eps[i] != ep)
			k->eps[j++] = k->eps[i];
	k->neps = j;
}

/* The counters of ep the adapter counts on a QP, by slot: on its own
 * connections (in false) those of its FI_SEND, FI_WRITE and FI_READ
 * operations, on those it accepted (in true) its FI_REMOTE_WRITE and
 * FI_REMOTE_READ counters with their events.  c[s] and ev[s] for slots
 * 1 .. the number returned; a counter without an adapter counter, or
 * beyond the slots, has none. */
static int plan(struct wfi_ep *ep, bool in, struct fid_cntr **c, uint8_t *ev)
{
	struct fid_cntr *role[3] = { ep->tx_cntr, ep->wr_cntr, ep->rd_cntr };
	uint8_t rev[3] = { 0, 0, 0 };
	int i, s, n = 0;

	if (in) {
		role[0] = ep->rwr_cntr;
		role[1] = ep->rrd_cntr;
		role[2] = NULL;
		rev[0] = WFI_CNT_EV_WRITE;
		rev[1] = WFI_CNT_EV_READ;
	}
	for (i = 0; i < 3; i++) {
		if (!role[i] || !to_cntr(role[i])->hw.blk)
			continue;
		for (s = 1; s <= n && c[s] != role[i]; s++)
			;
		if (s > n) {
			if (n == WFI_CNT_SLOTS)
				continue;
			s = ++n;
			c[s] = role[i];
			ev[s] = 0;
		}
		ev[s] |= rev[i];
	}
	return n;
}

/* Binds ep's counters to the slots of its new QP qp (before it connects
 * or is accepted): the slots bound, bit s for slot s.  A refused bind
 * leaves that slot unnamed and its counter counting in software on this
 * QP. */
uint8_t wfi_cntr_qp(struct wfi_ep *ep, struct ibv_qp *qp, bool in)
{
	struct fid_cntr *c[WFI_CNT_SLOTS + 1];
	uint8_t ev[WFI_CNT_SLOTS + 1], mask = 0;
	int s, n = plan(ep, in, c, ev), e;

	for (s = 1; s <= n; s++) {
		struct wfi_cntr *k = to_cntr(c[s]);

		e = wfi_hw_bind(ep->dom->ctx, &k->hw, qp, (uint32_t)s, ev[s]);
		if (!e) {
			mask |= (uint8_t)(1u << s);
			k->qp_binds++;
			continue;
		}
		k->bind_failed++;
		if (ep->log)
			fprintf(stderr, "weft: fi_cntr: binding QP %u slot %d refused (%s): counted in "
				"software\n", qp->qp_num, s, strerror(e));
	}
	return mask;
}

/* The slot of trigger QP qp (bound like ep's own QPs: mask) whose
 * WAIT_CNT waits on c: c's slot when it has one, else the next free slot
 * bound to it with no events (its count moves on the QPs where the
 * events happen: one adapter counter bound to slots of several QPs).
 * 0: none (slots all taken, bind refused). */
int wfi_cntr_qp_wait(struct wfi_ep *ep, struct ibv_qp *qp, uint8_t mask, struct fid_cntr *c)
{
	struct fid_cntr *cs[WFI_CNT_SLOTS + 1];
	uint8_t ev[WFI_CNT_SLOTS + 1];
	struct wfi_cntr *k = to_cntr(c);
	int s, n = plan(ep, false, cs, ev);

	for (s = 1; s <= n; s++)
		if (cs[s] == c)
			return mask & (1u << s) ? s : 0;
	if (n == WFI_CNT_SLOTS || wfi_hw_bind(ep->dom->ctx, &k->hw, qp, (uint32_t)(n + 1), 0))
		return 0;
	k->qp_binds++;
	return n + 1;
}

/* The send_flags that make a WQE on one of ep's own QPs (slots bound:
 * mask) count on c in the adapter; 0 when software counts it. */
unsigned int wfi_cntr_send_flags(struct wfi_ep *ep, uint8_t mask, struct fid_cntr *c)
{
	struct fid_cntr *cs[WFI_CNT_SLOTS + 1];
	uint8_t ev[WFI_CNT_SLOTS + 1];
	int s, n;

	if (!c)
		return 0;
	n = plan(ep, false, cs, ev);
	for (s = 1; s <= n; s++)
		if (cs[s] == c && (mask & (1u << s)))
			return wfi_hw_send_flags(s);
	return 0;
}

/* A peer's RDMA (event ev) on connection qpn, told by its FI_RMA_EVENT or
 * remote CQ data note: software counts it on c unless the adapter did,
 * at that QP's slot. */
void wfi_cntr_remote(struct wfi_ep *ep, struct fid_cntr *c, uint32_t qpn, unsigned int ev)
{
	struct fid_cntr *cs[WFI_CNT_SLOTS + 1];
	uint8_t evs[WFI_CNT_SLOTS + 1], mask = 0;
	int i, s, n;

	if (!c)
		return;
	for (i = 0; i < ep->nin; i++)
		if (ep->in[i]->qp && ep->in[i]->qp->qp_num == qpn) {
			mask = ep->in_hw[i];
			break;
		}
	n = plan(ep, true, cs, evs);
	for (s = 1; s <= n; s++)
		if (cs[s] == c && (evs[s] & ev) && (mask & (1u << s)))
			return;
	wfi_cntr_inc(c, false);
}

/* Word (WEFT_CNT_EV_COUNT or _ERRORS) of k's block set to or added
 * value (op WEFT_CNT_EV_SET or _ADD) by the adapter, which releases the
 * WAIT_CNTs the new count reaches: true when done.  hw_done follows the
 * block: a set moves it by what the set moved the word (the block's lead
 * over hw_done, operations the adapter counted before software saw them
 * end, is kept), or every read would wait WFI_HW_SYNC_MS for a block set
 * lower.  False when k has no adapter counter, or its kernel has no
 * EV_SET (logged once per counter): software's part moves then. */
static bool hw_move(struct wfi_cntr *k, uint32_t op, uint32_t word, uint64_t value)
{
	uint64_t c = 0, e = 0, r;

	if (!k->hw.blk || k->set_err)
		return false;
	if (op == WEFT_CNT_EV_SET)
		hw_now(k, &c, &e);
	k->set_err = wfi_hw_set(k->dom->ctx, &k->hw, op, word, value, &r);
	if (k->set_err) {
		if (getenv("WEFT_FI_LOG"))
			fprintf(stderr, "weft: fi_cntr: adapter set/add refused (%s): moved in "
				"software from now\n", strerror(k->set_err));
		return false;
	}
	k->hw_done += op == WEFT_CNT_EV_ADD ? value : r - (word == WEFT_CNT_EV_COUNT ? c : e);
	return true;
}

/* fi_cntr_add (set false) or fi_cntr_set of value on k's count (err
 * false) or its errors.  The adapter's part takes what software's does
 * not: a set writes value less software's part. */
static void move(struct wfi_cntr *k, bool set, bool err, uint64_t value)
{
	uint64_t *part = err ? &k->err : &k->value;
	uint64_t c, e;

	if (hw_move(k, set ? WEFT_CNT_EV_SET : WEFT_CNT_EV_ADD,
		    err ? WEFT_CNT_EV_ERRORS : WEFT_CNT_EV_COUNT, set ? value - *part : value))
		return;
	if (set) {
		hw_now(k, &c, &e);
		*part = value - (err ? e : c);
	} else {
		*part += value;
	}
	if (!err)
		sw_move(k);
}

/* FI_OP_CNTR_SET and FI_OP_CNTR_ADD of deferred work. */
void wfi_cntr_move(struct fid_cntr *c, bool set, uint64_t value)
{
	move(to_cntr(c), set, false, value);
}

/* The bound endpoints; a counter bound to none (a deferred work's
 * completion or target counter) is moved by any endpoint of its domain. */
static void progress(struct wfi_cntr *k)
{
	int i;

	if (!k->neps) {
		for (i = 0; i < k->dom->neps; i++)
			wfi_progress(k->dom->eps[i]);
		return;
	}
	for (i = 0; i < k->neps; i++)
		wfi_progress(k->eps[i]);
}

static uint64_t c_read(struct fid_cntr *c)
{
	struct wfi_cntr *k = to_cntr(c);
	uint64_t v;

	pthread_mutex_lock(&k->dom->lock);
	progress(k);
	v = value_of(k, NULL);
	pthread_mutex_unlock(&k->dom->lock);
	return v;
}

static uint64_t c_readerr(struct fid_cntr *c)
{
	struct wfi_cntr *k = to_cntr(c);
	uint64_t v;

	pthread_mutex_lock(&k->dom->lock);
	progress(k);
	value_of(k, &v);
	pthread_mutex_unlock(&k->dom->lock);
	return v;
}

static int c_add(struct fid_cntr *c, uint64_t value)
{
	struct wfi_cntr *k = to_cntr(c);

	pthread_mutex_lock(&k->dom->lock);
	move(k, false, false, value);
	pthread_mutex_unlock(&k->dom->lock);
	return 0;
}

static int c_set(struct fid_cntr *c, uint64_t value)
{
	struct wfi_cntr *k = to_cntr(c);

	pthread_mutex_lock(&k->dom->lock);
	move(k, true, false, value);
	pthread_mutex_unlock(&k->dom->lock);
	return 0;
}

static int c_adderr(struct fid_cntr *c, uint64_t value)
{
	struct wfi_cntr *k = to_cntr(c);

	pthread_mutex_lock(&k->dom->lock);
	move(k, false, true, value);
	pthread_mutex_unlock(&k->dom->lock);
	return 0;
}

static int c_seterr(struct fid_cntr *c, uint64_t value)
{
	struct wfi_cntr *k = to_cntr(c);

	pthread_mutex_lock(&k->dom->lock);
	move(k, true, true, value);
	pthread_mutex_unlock(&k->dom->lock);
	return 0;
}

/* Until value >= threshold (0), a change of the error count (-FI_EAVAIL)
 * or the timeout in ms, -1 for none (-FI_ETIMEDOUT). */
static int c_wait(struct fid_cntr *c, uint64_t threshold, int timeout)
{
	struct wfi_cntr *k = to_cntr(c);
	uint64_t end = timeout < 0 ? UINT64_MAX : now_ms() + (uint64_t)timeout;
	uint64_t err0;
	int ret;

	uint64_t err;

	pthread_mutex_lock(&k->dom->lock);
	value_of(k, &err0);
	pthread_mutex_unlock(&k->dom->lock);
	for (;;) {
		pthread_mutex_lock(&k->dom->lock);
		progress(k);
		ret = value_of(k, &err) >= threshold ? 0 : err != err0 ? -FI_EAVAIL : -FI_EAGAIN;
		pthread_mutex_unlock(&k->dom->lock);
		if (ret != -FI_EAGAIN)
			return ret;
		if (now_ms() >= end)
			return -FI_ETIMEDOUT;
		sched_yield();
	}
}

static int c_close(struct fid *fid)
{
	struct wfi_cntr *k = container_of(fid, struct wfi_cntr, cntr_fid.fid);

	/* Its object destroyed under a held WAIT_CNT would fail it. */
	if (k->refs || k->trig_held)
		return -FI_EBUSY;
	wfi_hw_destroy(k->dom->ctx, &k->hw);
	k->dom->refs--;
	free(k);
	return 0;
}

static int c_control(struct fid *fid, int command, void *arg)
{
	(void)fid;
	(void)arg;
	return command == FI_GETWAIT ? -FI_ENODATA : -FI_ENOSYS;
}

static int c_stats(struct fid_cntr *c, struct fi_weft_cntr_stats *st)
{
	struct wfi_cntr *k;

	if (!c || c->fid.fclass != FI_CLASS_CNTR || !st)
		return -FI_EINVAL;
	k = to_cntr(c);
	pthread_mutex_lock(&k->dom->lock);
	memset(st, 0, sizeof(*st));
	wfi_hw_read(&k->hw, &st->hw_count, &st->hw_errors);
	st->sw_value = k->value;
	st->sw_errors = k->err;
	st->qp_binds = k->qp_binds;
	st->bind_failed = k->bind_failed;
	st->create_err = k->hw_err;
	st->hw = k->hw.blk != NULL;
	st->trig_hw = k->trig_hw;
	st->trig_sw = k->trig_sw;
	st->trig_recalled = k->trig_recalled;
	st->trig_held = (uint64_t)k->trig_held;
	pthread_mutex_unlock(&k->dom->lock);
	return 0;
}

static struct fi_weft_cntr_ops weft_cntr_ops = {
	.size = sizeof(struct fi_weft_cntr_ops),
	.stats = c_stats,
};

/* fi_open_ops on a counter: FI_WEFT_CNTR_OPS (fi_weft.h). */
static int c_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *ctx)
{
	(void)ctx;
	return wfi_ops_named(fid, name, flags, ops, FI_WEFT_CNTR_OPS, &weft_cntr_ops);
}

static struct fi_ops cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = c_close,
	.bind = wfi_no_bind,
	.control = c_control,
	.ops_open = c_ops_open,
};

static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = c_read,
	.readerr = c_readerr,
	.add = c_add,
	.set = c_set,
	.wait = c_wait,
	.adderr = c_adderr,
	.seterr = c_seterr,
};

int wfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
		  void *context)
{
	struct wfi_domain *d = container_of(domain, struct wfi_domain, domain_fid);
	struct wfi_cntr *k;

	if (!attr || !cntr)
		return -FI_EINVAL;
	if (attr->events != FI_CNTR_EVENTS_COMP)
		return -FI_ENOSYS;
	if (attr->flags)
		return -FI_EBADFLAGS;
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC &&
	    attr->wait_obj != FI_WAIT_YIELD)
		return -FI_ENOSYS;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -FI_ENOMEM;
	k->dom = d;
	k->serial = __atomic_add_fetch(&cntr_serial, 1, __ATOMIC_RELAXED);
	k->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	k->cntr_fid.fid.context = context;
	k->cntr_fid.fid.ops = &cntr_fi_ops;
	k->cntr_fid.ops = &cntr_ops;
	d->refs++;
	*cntr = &k->cntr_fid;
	return 0;
}
