// SPDX-License-Identifier: MIT
/*
 * weft-fi-check: the weft libfabric provider's argument checks
 * (docs/libfabric.md "Tests").  Every call gets arguments the libfabric
 * manual pages call invalid and must answer the error they name, without
 * crashing; then one endpoint sends to itself (loopback over an RC QP to
 * its own listener) eager, unexpected and rendezvous tagged messages and
 * checks the bytes; the registration cache's checks (a buffer unmapped and
 * mapped again with other pages at the same address must send and receive
 * the new bytes; hits, misses, evictions); 4096 receives posted at once
 * (software-listed beyond the adapter's tags) that must each take the
 * earliest-posted match; a second endpoint with FI_ATOMIC | FI_RMA |
 * FI_TRIGGER checks the adapter's atomics on its own memory (fi_atomic,
 * fi_fetch_atomic, fi_compare_atomic, inject, the valid and query calls,
 * their bad arguments), deferred work (fi_control FI_QUEUE_WORK) and a
 * triggered send; and a second process on the node, with receives that
 * take any tag, never receives, peeks or completes any of the first
 * endpoint's messages; counters backed by the adapter's event counters
 * (cntr_checks); a new endpoint's write to a target that a closed
 * endpoint of this process wrote to (reconnect_checks); and a new
 * endpoint at a closed one's very address and port (same_name_checks).  With --trigger,
 * alone in a process of its own (so that the adapter's WAIT_CNT counters
 * move for it alone): triggered writes the adapter holds behind a
 * WAIT_CNT and fires with no call on the poster (on the peer's writes or
 * on fi_cntr_add, which moves the counter in the adapter), and those that
 * stay in software or are taken back into it (trig_checks).  Prints "ok N - ..." / "not ok N - ..." and
 * exits non-zero when a check failed.
 *
 * With --peer-death, two processes on two nodes: the server (the
 * survivor) and a client that kills itself (SIGKILL) as soon as a 256 MiB
 * rendezvous between them is under way, client to server (recv) or
 * server to client (send).  The server checks that its transfer and a
 * receive directed to the client fail with error completions within 60 s
 * and that a later send to the client fails, then exits.
 *
 * A new endpoint bound to a closed endpoint's very address and port is
 * a new peer of a target that knew the closed one, while the target's
 * operations to the closed one fail (same_name_checks).
 *
 * With --reconnect, only reconnect_checks; with --same-name, only
 * same_name_checks; with --trigger, only trig_checks.
 *
 * Usage: weft-fi-check [--no-loopback]
 *        weft-fi-check --reconnect
 *        weft-fi-check --same-name
 *        weft-fi-check --trigger
 *        weft-fi-check --peer-death server PORT recv|send
 *        weft-fi-check --peer-death client SERVER PORT recv|send
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "../fi_weft.h"
#include "fi_check.h"

static void getinfo_checks(void)
{
	struct fi_info *h, *info = NULL;
	int ret;

	h = hints_rdm();
	h->ep_attr->type = FI_EP_MSG;
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info);
	CHECK(ret == -FI_ENODATA, "fi_getinfo FI_EP_MSG: %d (-FI_ENODATA)", ret);
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_TAGGED | FI_ATOMIC;
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info);
	CHECK(ret == -FI_ENODATA, "fi_getinfo FI_ATOMIC with mr_mode 0: %d (-FI_ENODATA)", ret);
	h->caps = FI_TAGGED;
	h->tx_attr->inject_size = 1 << 20;
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info);
	CHECK(ret == -FI_ENODATA, "fi_getinfo inject_size 1 MiB: %d (-FI_ENODATA)", ret);
	h->tx_attr->inject_size = 0;
	h->domain_attr->name = strdup("mlx5_0");
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info);
	CHECK(ret == -FI_ENODATA, "fi_getinfo domain mlx5_0: %d (-FI_ENODATA)", ret);
	fi_freeinfo(h);
}

static int poll_one(struct fid_cq *cq, struct fi_cq_tagged_entry *e)
{
	int i;

	for (i = 0; i < 2000000; i++) {
		ssize_t r = fi_cq_read(cq, e, 1);

		if (r == 1)
			return 0;
		if (r != -FI_EAGAIN)
			return (int)r;
	}
	return -FI_ETIMEDOUT;
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static bool same(const uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (uint8_t)(seed + i * 7))
			return false;
	return true;
}

/* A tagged message with remote CQ data to ourselves: the receive's
 * completion carries FI_REMOTE_CQ_DATA and the data. */
static void loop_data(struct fid_ep *ep, struct fid_cq *cq, fi_addr_t self, size_t n,
		      bool recv_first, uint64_t tag)
{
	uint8_t *s = calloc(1, n), *r = calloc(1, n);
	struct fi_cq_tagged_entry e;
	int ctx_s, ctx_r, i, ok = 0;
	ssize_t a = 0, b;

	if (recv_first)
		a = fi_trecv(ep, r, n, NULL, FI_ADDR_UNSPEC, tag, 0, &ctx_r);
	b = fi_tsenddata(ep, s, n, NULL, 0xabcd1234, self, tag, &ctx_s);
	if (!recv_first)
		a = fi_trecv(ep, r, n, NULL, FI_ADDR_UNSPEC, tag, 0, &ctx_r);
	for (i = 0; i < 2 && !a && !b && !poll_one(cq, &e); i++)
		if (e.op_context == &ctx_r && (e.flags & FI_REMOTE_CQ_DATA) && e.data == 0xabcd1234 &&
		    e.tag == tag && e.len == n)
			ok = 1;
	CHECK(ok, "fi_tsenddata %zu B %s: the receive completes with FI_REMOTE_CQ_DATA 0xabcd1234",
	      n, recv_first ? "receive first" : "unexpected");
	free(s);
	free(r);
}

/* One tagged message to ourselves: receive first (listed in the adapter)
 * or send first (unexpected), n bytes. */
static void loop_msg(struct fid_ep *ep, struct fid_cq *cq, fi_addr_t self, size_t n,
		     bool recv_first, uint64_t tag)
{
	uint8_t *s = malloc(n ? n : 1), *r = calloc(1, n ? n : 1);
	struct fi_cq_tagged_entry e[2];
	int ctx_s, ctx_r, got = 0, ret = 0, i;
	ssize_t a = 0, b = 0;

	fill(s, n, (uint8_t)tag);
	if (recv_first)
		a = fi_trecv(ep, r, n, NULL, FI_ADDR_UNSPEC, tag, 0, &ctx_r);
	b = fi_tsend(ep, s, n, NULL, self, tag, &ctx_s);
	if (!recv_first)
		a = fi_trecv(ep, r, n, NULL, FI_ADDR_UNSPEC, tag, 0, &ctx_r);
	for (i = 0; i < 2 && !a && !b; i++) {
		ret = poll_one(cq, &e[i]);
		if (ret)
			break;
		got |= e[i].op_context == &ctx_s ? 1 : e[i].op_context == &ctx_r ? 2 : 4;
	}
	CHECK(!a && !b && !ret && got == 3 && same(r, n, (uint8_t)tag),
	      "loopback %zu B tag 0x%llx %s: post %zd/%zd, completions 0x%x (%d), data %s", n,
	      (unsigned long long)tag, recv_first ? "receive first" : "unexpected", a, b, got,
	      ret, same(r, n, (uint8_t)tag) ? "byte-exact" : "differs");
	free(s);
	free(r);
}

#define ANY_TAG 0x0000ffffffffffffull	/* mem_tag_format: ignore every tag bit */

/* A completion or an error entry within secs seconds: 0 or the error
 * (err->err, its context in e->op_context); -FI_ETIMEDOUT. */
static int wait_one(struct fid_cq *cq, struct fi_cq_tagged_entry *e, double secs)
{
	double end = now() + secs;
	struct fi_cq_err_entry err;

	while (now() < end) {
		ssize_t r = fi_cq_read(cq, e, 1);

		if (r == 1)
			return 0;
		if (r == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(cq, &err, 0) != 1)
				return -FI_EIO;
			e->op_context = err.op_context;
			return err.err ? err.err : FI_EIO;
		}
		if (r != -FI_EAGAIN)
			return (int)r;
	}
	return -FI_ETIMEDOUT;
}

/* The second process on the node: its own endpoint, 8 tagged receives
 * that take any tag (4 of 64 KiB, listed with their own buffers, 4 of
 * 64 B) and an FI_MSG receive.  It polls its CQ until the parent writes
 * to `done`, peeks for any tag, and writes to `out` what it got. */
static void intruder(int out, int done)
{
	static uint8_t big[4][65536], small[5][64];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct side s;
	int ctx[10], got = 0, ret, i;
	char c;

	ret = side_open(&s, NULL, NULL, 0);
	for (i = 0; !ret && i < 8; i++)
		ret = (int)fi_trecv(s.ep, i < 4 ? big[i] : small[i - 4], i < 4 ? sizeof(big[0]) : sizeof(small[0]),
				    NULL, FI_ADDR_UNSPEC, 0, ANY_TAG, &ctx[i]);
	if (!ret)
		ret = (int)fi_recv(s.ep, small[4], sizeof(small[4]), NULL, FI_ADDR_UNSPEC, &ctx[8]);
	if (write(out, &ret, sizeof(ret)) != sizeof(ret))
		_exit(2);
	fcntl(done, F_SETFL, O_NONBLOCK);
	while (!ret) {
		ssize_t r = read(done, &c, 1);

		if (r == 1 || r == 0)
			break;
		r = fi_cq_read(s.cq, &e, 1);
		if (r == 1)
			got++;
		else if (r == -FI_EAVAIL && fi_cq_readerr(s.cq, &err, 0) == 1)
			got++;
		else
			usleep(1000);
	}
	if (!ret) {
		struct fi_msg_tagged m = { .addr = FI_ADDR_UNSPEC, .tag = 0, .ignore = ANY_TAG,
					   .context = &ctx[9] };

		/* A peek for any tag sees nothing: FI_ENOMSG. */
		ret = (int)fi_trecvmsg(s.ep, &m, FI_PEEK);
		if (!ret && wait_one(s.cq, &e, 10) != FI_ENOMSG)
			got++;
	}
	got = ret ? -1 : got;
	if (write(out, &got, sizeof(got)) != sizeof(got))
		_exit(2);
	side_close(&s);
	_exit(0);
}

/* One rendezvous-sized (or any) tagged message to ourselves, receive
 * first: both completions came. */
static bool xfer(struct fid_ep *ep, struct fid_cq *cq, fi_addr_t self, void *s, void *r,
		 size_t n, uint64_t tag)
{
	struct fi_cq_tagged_entry e;
	int cs, cr, got = 0, i;

	if (fi_trecv(ep, r, n, NULL, FI_ADDR_UNSPEC, tag, 0, &cr) ||
	    fi_tsend(ep, s, n, NULL, self, tag, &cs))
		return false;
	for (i = 0; i < 2; i++) {
		if (poll_one(cq, &e))
			return false;
		got |= e.op_context == &cs ? 1 : e.op_context == &cr ? 2 : 4;
	}
	return got == 3;
}

/* Software-listed receives (docs/libfabric.md "Posted receives beyond the
 * adapter"): SPILL_N tagged receives posted at once, exact tags, tags with
 * ignored bits (13 masks: more than the provider buckets) and wildcards,
 * then SPILL_N messages; each must land in the earliest-posted receive
 * that takes it (a reference model says which), across the adapter's
 * tags and the software list (the endpoint's FI_WEFT_RX_OPS counters say
 * how many software took).  The messages no receive took are held in arrival
 * order; the receives nothing took are cancelled.  Then exact tags beyond
 * the adapter: found in their buckets, not by walking the list. */
#define SPILL_N 4096
#define BUCKET_N 2000

struct spill {
	struct fid_ep *ep;
	struct fid_cq *cq;
	int ctx[SPILL_N];
	uint32_t rb[SPILL_N][2];
	uint64_t rtag[SPILL_N], rign[SPILL_N];
	int want[SPILL_N];		/* the message receive i must get (-1: none) */
	int got[SPILL_N];		/* the message it got (-1: none yet; -2: error) */
	uint64_t mtag[SPILL_N];
	int sends, recvs, errs;
};

/* Reads what the CQ holds: send completions counted, receive completions
 * noted by their context. */
static void spill_reap(struct spill *sp)
{
	struct fi_cq_tagged_entry e[32];
	struct fi_cq_err_entry err;
	ssize_t n, j;

	n = fi_cq_read(sp->cq, e, 32);
	if (n == -FI_EAVAIL && fi_cq_readerr(sp->cq, &err, 0) == 1) {
		sp->errs++;
		if (err.op_context >= (void *)sp->ctx && err.op_context < (void *)(sp->ctx + SPILL_N))
			sp->got[(int *)err.op_context - sp->ctx] = -2;
		return;
	}
	for (j = 0; j < n; j++) {
		int i = (int *)e[j].op_context - sp->ctx;

		if (e[j].flags & FI_SEND) {
			sp->sends++;
			continue;
		}
		sp->recvs++;
		if (i >= 0 && i < SPILL_N)
			sp->got[i] = e[j].tag == sp->mtag[sp->rb[i][0] % SPILL_N] && e[j].len == 4 ?
				     (int)sp->rb[i][0] : -3;
	}
}

static bool spill_wait(struct spill *sp, int sends, int recvs)
{
	double t0 = now();

	while ((sp->sends < sends || sp->recvs < recvs) && now() - t0 < 120)
		spill_reap(sp);
	return sp->sends >= sends && sp->recvs >= recvs;
}

/* The endpoint's receive counters (fi_weft.h); all zero when refused. */
static int rx_stats(struct fid_ep *ep, struct fi_weft_rx_stats *st)
{
	struct fi_weft_rx_ops *ops;
	int ret;

	memset(st, 0, sizeof(*st));
	ret = fi_open_ops(&ep->fid, FI_WEFT_RX_OPS, 0, (void **)&ops, NULL);
	return ret ? ret : ops->stats(ep, st);
}

/* BUCKET_N receives of distinct exact tags listed in software behind 256
 * that never match (the adapter's), then their messages in reverse post
 * order: each arrival finds its receive in its bucket, so the receives
 * compared stay near one per message where a walk of the list would
 * compare about BUCKET_N / 2. */
static void bucket_checks(struct spill *sp, fi_addr_t self)
{
	struct fi_weft_rx_stats a, b;
	int fill_ctx[256], i, k, bad = 0, nfill = 0;
	uint32_t sb[BUCKET_N];
	ssize_t ret = 0;
	uint64_t cmp;

	memset(sp->got, -1, sizeof(sp->got));
	sp->sends = sp->recvs = sp->errs = 0;
	for (i = 0; i < 256 && !ret; i++, nfill++)
		ret = fi_trecv(sp->ep, sp->rb[SPILL_N - 1], 8, NULL, FI_ADDR_UNSPEC, 0x900, 0,
			       &fill_ctx[i]);
	for (i = 0; i < BUCKET_N && !ret; i++) {
		sp->mtag[BUCKET_N - 1 - i] = 0xa000 + (uint64_t)i;
		ret = fi_trecv(sp->ep, sp->rb[i], sizeof(sp->rb[i]), NULL, FI_ADDR_UNSPEC,
			       0xa000 + (uint64_t)i, 0, &sp->ctx[i]);
	}
	rx_stats(sp->ep, &a);
	for (k = 0; k < BUCKET_N && !ret; k++) {
		sb[k] = (uint32_t)k;
		while ((ret = fi_tsend(sp->ep, &sb[k], 4, NULL, self, sp->mtag[k], NULL)) == -FI_EAGAIN)
			spill_reap(sp);
	}
	spill_wait(sp, BUCKET_N, BUCKET_N);
	rx_stats(sp->ep, &b);
	for (i = 0; i < BUCKET_N; i++)
		bad += sp->got[i] != BUCKET_N - 1 - i;
	cmp = b.sw_compares - a.sw_compares;
	printf("# %d exact-tag receives in software: %llu taken there, %llu receives compared "
	       "(%.2f per message)\n", BUCKET_N, (unsigned long long)(b.sw_matched - a.sw_matched),
	       (unsigned long long)cmp, (double)cmp / BUCKET_N);
	CHECK(!ret && !bad && !sp->errs && b.sw_matched - a.sw_matched == BUCKET_N &&
	      cmp <= 4 * BUCKET_N,
	      "%d exact-tag receives listed in software, messages in reverse order: %d wrong, %d "
	      "errors, %llu taken in software, %llu receives compared (at most %d)", BUCKET_N, bad,
	      sp->errs, (unsigned long long)(b.sw_matched - a.sw_matched),
	      (unsigned long long)cmp, 4 * BUCKET_N);
	for (bad = 0, i = 0; i < nfill; i++) {
		struct fi_cq_err_entry err;
		struct fi_cq_tagged_entry e;

		ret = fi_cancel(&sp->ep->fid, &fill_ctx[i]);
		ret = ret ? ret : poll_one(sp->cq, &e);
		bad += ret != -FI_EAVAIL || fi_cq_readerr(sp->cq, &err, 0) != 1 ||
		       err.err != FI_ECANCELED;
	}
	CHECK(!bad && nfill == 256, "and the %d receives ahead of them cancelled (%d wrong)", nfill,
	      bad);
}

static void spill_checks(struct fid_ep *ep, struct fid_cq *cq, fi_addr_t self, size_t rx_size)
{
	struct spill *sp = calloc(1, sizeof(*sp));
	uint32_t sb[SPILL_N];
	int i, k, matched = 0, bad = 0, left[SPILL_N], nleft = 0, ncancel = 0, posted = 0;
	bool used[SPILL_N] = { false };
	ssize_t ret = 0;
	int *big_ctx;
	uint8_t *big_s, *big_r;
	struct fi_weft_rx_stats st0, st1;
	int stret;

	if (!sp)
		return;
	sp->ep = ep;
	sp->cq = cq;
	for (i = 0; i < SPILL_N; i++) {
		switch (i % 4) {
		case 0: sp->rtag[i] = (uint64_t)(i / 4) % 8; sp->rign[i] = 0; break;
		case 1: sp->rtag[i] = 0; sp->rign[i] = 7 | 0x10ull << (i / 4 % 10); break;
		case 2: sp->rtag[i] = (uint64_t)(i / 4) % 8 & 6; sp->rign[i] = 1; break;
		default: sp->rtag[i] = 8 + (uint64_t)i % 5; sp->rign[i] = 0; break;
		}
		sp->want[i] = sp->got[i] = -1;
	}
	/* The model: message k goes to the earliest receive not yet taken. */
	for (k = 0; k < SPILL_N; k++) {
		sp->mtag[k] = (uint64_t)(k * 5 + 3) % 13;
		sb[k] = (uint32_t)k;
		for (i = 0; i < SPILL_N; i++)
			if (!used[i] && (sp->mtag[k] | sp->rign[i]) == (sp->rtag[i] | sp->rign[i]))
				break;
		if (i < SPILL_N) {
			used[i] = true;
			sp->want[i] = k;
			matched++;
		} else {
			left[nleft++] = k;
		}
	}
	stret = rx_stats(ep, &st0);
	for (i = 0; i < SPILL_N && !ret; i++, posted++)
		ret = fi_trecv(ep, sp->rb[i], sizeof(sp->rb[i]), NULL, FI_ADDR_UNSPEC, sp->rtag[i],
			       sp->rign[i], &sp->ctx[i]);
	CHECK(!ret, "%d tagged receives posted at once (beyond the adapter's 256 tags): %zd",
	      posted, ret);
	for (k = 0; k < SPILL_N && !ret; k++) {
		while ((ret = fi_tsend(ep, &sb[k], 4, NULL, self, sp->mtag[k], NULL)) == -FI_EAGAIN)
			spill_reap(sp);
	}
	spill_wait(sp, SPILL_N, matched);
	stret = stret ? stret : rx_stats(ep, &st1);
	for (i = 0; i < SPILL_N; i++) {
		if (sp->got[i] == sp->want[i])
			continue;
		if (bad++ < 8)
			printf("# receive %d (tag 0x%llx, ignore 0x%llx) got message %d (tag 0x%llx), the "
			       "model names %d\n", i, (unsigned long long)sp->rtag[i],
			       (unsigned long long)sp->rign[i], sp->got[i],
			       (unsigned long long)(sp->got[i] >= 0 ? sp->mtag[sp->got[i]] : 0),
			       sp->want[i]);
	}
	printf("# receives: %llu listed in the adapter and %llu in software when posted; %llu "
	       "moved from software into the adapter's free tags; %llu messages taken in software "
	       "(%llu receives compared), %llu left in software; %llu tag operations refused by a "
	       "full op ring\n",
	       (unsigned long long)(st1.hw_posted - st0.hw_posted),
	       (unsigned long long)(st1.sw_posted - st0.sw_posted),
	       (unsigned long long)(st1.promoted - st0.promoted),
	       (unsigned long long)(st1.sw_matched - st0.sw_matched),
	       (unsigned long long)(st1.sw_compares - st0.sw_compares),
	       (unsigned long long)st1.sw_now,
	       (unsigned long long)(st1.ops_refused - st0.ops_refused));
	CHECK(!ret && !bad && !sp->errs && sp->recvs == matched,
	      "%d messages to %d receives with overlapping tags and wildcards: %d receives took the "
	      "message the earliest-posted-receive model names (%d), %d wrong, %d errors",
	      SPILL_N, SPILL_N, sp->recvs - bad, matched, bad, sp->errs);
	CHECK(!stret && st1.hw_posted - st0.hw_posted + st1.sw_posted - st0.sw_posted == SPILL_N &&
	      st1.sw_matched > st0.sw_matched && st1.promoted > st0.promoted,
	      "fi_open_ops(%s): %d; the endpoint's counters: %d receives posted, messages taken by "
	      "software-listed receives: %llu, software-listed receives moved into the adapter: "
	      "%llu", FI_WEFT_RX_OPS, stret, SPILL_N,
	      (unsigned long long)(st1.sw_matched - st0.sw_matched),
	      (unsigned long long)(st1.promoted - st0.promoted));
	/* The messages no receive took, in arrival order. */
	bad = 0;
	for (k = 0; k < nleft; k++) {
		uint32_t v[2] = { 0 };
		int c;
		struct fi_cq_tagged_entry e;

		ret = fi_trecv(ep, v, sizeof(v), NULL, FI_ADDR_UNSPEC, 0, ~0ull, &c);
		ret = ret ? ret : poll_one(cq, &e);
		bad += ret || e.op_context != &c || v[0] != (uint32_t)left[k];
	}
	CHECK(!bad, "the %d messages no receive took: held, and taken by any-tag receives in "
	      "arrival order (%d wrong)", nleft, bad);
	/* The receives nothing took, adapter- and software-listed, cancelled. */
	bad = 0;
	for (i = 0; i < SPILL_N; i++) {
		struct fi_cq_err_entry err;
		struct fi_cq_tagged_entry e;

		if (sp->want[i] >= 0)
			continue;
		ncancel++;
		ret = fi_cancel(&ep->fid, &sp->ctx[i]);
		ret = ret ? ret : poll_one(cq, &e);
		bad += ret != -FI_EAVAIL || fi_cq_readerr(cq, &err, 0) != 1 ||
		       err.err != FI_ECANCELED || err.op_context != &sp->ctx[i];
	}
	CHECK(!bad, "fi_cancel of the %d receives no message took: FI_ECANCELED each (%d wrong)",
	      ncancel, bad);
	bucket_checks(sp, self);
	/* A rendezvous taken by a software-listed receive: read by software. */
	big_ctx = calloc(300, sizeof(*big_ctx));
	big_s = calloc(1, 100000);
	big_r = calloc(1, 100000);
	memset(sp->got, -1, sizeof(sp->got));
	sp->sends = sp->recvs = sp->errs = 0;
	ret = 0;
	for (i = 0; i < 300 && !ret; i++) {
		sp->mtag[i] = 0x600;
		ret = fi_trecv(ep, sp->rb[i], sizeof(sp->rb[i]), NULL, FI_ADDR_UNSPEC, 0x600, 0,
			       &sp->ctx[i]);
	}
	fill(big_s, 100000, 0x61);
	ret = ret ? ret : fi_trecv(ep, big_r, 100000, NULL, FI_ADDR_UNSPEC, 0x601, 0, big_ctx);
	ret = ret ? ret : fi_tsend(ep, big_s, 100000, NULL, self, 0x601, NULL);
	for (k = 0; k < 300 && !ret; k++) {
		sb[k] = (uint32_t)k;
		while ((ret = fi_tsend(ep, &sb[k], 4, NULL, self, 0x600, NULL)) == -FI_EAGAIN)
			spill_reap(sp);
	}
	spill_wait(sp, 301, 301);
	bad = 0;
	for (i = 0; i < 300; i++)
		bad += sp->got[i] != i;
	CHECK(!ret && !bad && !sp->errs && same(big_r, 100000, 0x61),
	      "300 receives of one tag and a 100000 B receive listed after them: the "
	      "rendezvous lands whole (%s), the 300 messages in post order (%d wrong, %d errors)",
	      same(big_r, 100000, 0x61) ? "yes" : "no", bad, sp->errs);
	/* The bound: rx_size receives, then -FI_EAGAIN. */
	for (i = 0, ret = 0; (size_t)i < rx_size && !ret; i++)
		ret = fi_trecv(ep, sp->rb[0], 8, NULL, FI_ADDR_UNSPEC, 0x777, 0, big_ctx + 1);
	k = (int)fi_trecv(ep, sp->rb[0], 8, NULL, FI_ADDR_UNSPEC, 0x777, 0, big_ctx + 1);
	CHECK(!ret && i == (int)rx_size && k == -FI_EAGAIN,
	      "fi_info rx_size %zu receives posted (%d: %zd), one more: %d (-FI_EAGAIN)", rx_size, i,
	      ret, k);
	for (bad = 0, i = 0; (size_t)i < rx_size; i++) {
		struct fi_cq_err_entry err;
		struct fi_cq_tagged_entry e;

		ret = fi_cancel(&ep->fid, big_ctx + 1);
		ret = ret ? ret : poll_one(cq, &e);
		bad += ret != -FI_EAVAIL || fi_cq_readerr(cq, &err, 0) != 1 ||
		       err.err != FI_ECANCELED;
	}
	CHECK(!bad, "and all %zu cancelled (%d wrong)", rx_size, bad);
	free(big_ctx);
	free(big_s);
	free(big_r);
	free(sp);
}

static void *map(void *at, size_t n)
{
	void *p = mmap(at, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* The registration cache (docs/libfabric.md "Registration cache"), with
 * 256 KiB rendezvous messages to ourselves. */
static void mrc_checks(struct fid_domain *dom, struct fid_ep *ep, struct fid_cq *cq, fi_addr_t self)
{
	struct fi_weft_mrc_ops *ops = NULL;
	struct fi_weft_mrc_stats a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };
	size_t n = 256 << 10, k;
	uint8_t *s, *r, *many, *at_s, *at_r;
	bool ok;
	int ret;

	ret = fi_open_ops(&dom->fid, FI_WEFT_MRC_OPS, 0, (void **)&ops, NULL);
	ret = ret ? ret : ops->stats(dom, &a);
	CHECK(!ret && a.enabled, "fi_open_ops(%s): %d, the registration cache is %s", FI_WEFT_MRC_OPS,
	      ret, a.enabled ? "on" : "off");
	ret = fi_open_ops(&dom->fid, "no_such_ops", 0, (void **)&ops, NULL);
	CHECK(ret == -FI_ENOSYS, "fi_open_ops(no_such_ops): %d (-FI_ENOSYS)", ret);
	ops = NULL;
	if (fi_open_ops(&dom->fid, FI_WEFT_MRC_OPS, 0, (void **)&ops, NULL) || !a.enabled)
		return;
	s = map(NULL, n);
	r = map(NULL, n);
	if (!s || !r) {
		CHECK(0, "mmap of 2 x 256 KiB");
		return;
	}
	fill(s, n, 0x21);
	ok = xfer(ep, cq, self, s, r, n, 0x31) && same(r, n, 0x21);
	ops->stats(dom, &a);
	fill(s, n, 0x22);
	memset(r, 0, n);
	ok = ok && xfer(ep, cq, self, s, r, n, 0x32) && same(r, n, 0x22);
	ops->stats(dom, &b);
	CHECK(ok && b.hits >= a.hits + 2,
	      "256 KiB twice from and into the same buffers: byte-exact, cache hits +%llu (sender and receiver)",
	      (unsigned long long)(b.hits - a.hits));
	/* Freed and mapped again at the same addresses: other pages, other
	 * bytes.  A cache that trusted the address would move the old ones. */
	at_s = s;
	at_r = r;
	munmap(s, n);
	munmap(r, n);
	s = map(at_s, n);
	r = map(at_r, n);
	if (s != at_s || r != at_r) {
		CHECK(0, "mmap MAP_FIXED at the old addresses");
		return;
	}
	fill(s, n, 0x23);
	ok = xfer(ep, cq, self, s, r, n, 0x33) && same(r, n, 0x23);
	ops->stats(dom, &c);
	CHECK(ok && c.invalidations >= b.invalidations + 2,
	      "both buffers munmapped, other pages mapped at the same addresses: the receiver got the new "
	      "bytes (%s), %llu cached registrations invalidated", ok ? "byte-exact" : "differs",
	      (unsigned long long)(c.invalidations - b.invalidations));
	/* More buffers than the cache holds (64): the least recently used go. */
	many = map(NULL, 80 * (size_t)(16 << 10));
	ok = many != NULL;
	for (k = 0; ok && k < 80; k++) {
		fill(many + k * (16 << 10), 16 << 10, (uint8_t)k);
		ok = xfer(ep, cq, self, many + k * (16 << 10), r, 16 << 10, 0x40 + k) &&
		     same(r, 16 << 10, (uint8_t)k);
	}
	ops->stats(dom, &d);
	CHECK(ok && d.evictions >= 16 && d.entries <= 64,
	      "80 send buffers of 16 KiB: byte-exact, %llu evictions, %llu entries cached (<= 64)",
	      (unsigned long long)d.evictions, (unsigned long long)d.entries);
	printf("# registration cache: %llu hits, %llu misses, %llu evictions, %llu invalidations, "
	       "%llu uncached; %llu entries, %llu bytes\n", (unsigned long long)d.hits,
	       (unsigned long long)d.misses, (unsigned long long)d.evictions,
	       (unsigned long long)d.invalidations, (unsigned long long)d.uncached,
	       (unsigned long long)d.entries, (unsigned long long)d.bytes);
	munmap(s, n);
	munmap(r, n);
	if (many)
		munmap(many, 80 * (size_t)(16 << 10));
}

#define BIG (256u << 20)

/* --peer-death client SERVER PORT MODE: connects, sends its name, waits
 * for the server's go, then (recv) sends 256 MiB or (send) lets the
 * server send 256 MiB into its listed receive, says so, and waits to be
 * killed. */
static int death_client(const char *host, const char *port, bool send)
{
	uint8_t name[64], go[8], *buf = malloc(BIG);
	struct fi_cq_tagged_entry e;
	struct side s;
	fi_addr_t srv;
	size_t len = sizeof(name);
	int c1, c2, c3, ret;

	ret = side_open(&s, host, port, 0);
	if (ret || !buf || fi_av_insert(s.av, s.info->dest_addr, 1, &srv, 0, NULL) != 1) {
		printf("client: setup failed: %d\n", ret);
		return 2;
	}
	memset(buf, 0x5a, BIG);
	ret = send ? (int)fi_trecv(s.ep, buf, BIG, NULL, srv, 3, 0, &c3) : 0;
	ret = ret ? ret : (int)fi_trecv(s.ep, go, sizeof(go), NULL, srv, 2, 0, &c2);
	ret = ret ? ret : fi_getname(&s.ep->fid, name, &len);
	ret = ret ? ret : (int)fi_tsend(s.ep, name, len, NULL, srv, 1, &c1);
	while (!ret && !(ret = wait_one(s.cq, &e, 60)) && e.op_context != &c2)
		;
	if (ret) {
		printf("client: no go from the server: %d\n", ret);
		return 2;
	}
	if (!send && fi_tsend(s.ep, buf, BIG, NULL, srv, 3, &c3)) {
		printf("client: fi_tsend 256 MiB failed\n");
		return 2;
	}
	printf("client: 256 MiB transfer under way (%s)\n", send ? "server to client" : "client to server");
	fflush(stdout);
	/* Dies at once: a kill from outside, however prompt, could come
	 * after a 256 MiB transfer that takes 0.2 s on a quiet host. */
	raise(SIGKILL);
	return 3;
}

/* --peer-death server PORT MODE: the survivor. */
static int death_server(const char *port, bool send)
{
	uint8_t name[64] = { 0 }, go[8] = { 0 }, small[8], *buf = malloc(BIG);
	struct fi_cq_tagged_entry e;
	struct side s;
	fi_addr_t cli;
	int c1, c2, c3, c4, c5, ret, e3 = 0, e4 = 0;
	double t0, t3 = 0, t4 = 0, t;

	ret = side_open(&s, NULL, port, FI_SOURCE);
	if (ret || !buf) {
		printf("server: setup failed: %d\n", ret);
		return 2;
	}
	memset(buf, 0xa5, BIG);
	printf("server: listening on port %s\n", port);
	fflush(stdout);
	ret = (int)fi_trecv(s.ep, name, sizeof(name), NULL, FI_ADDR_UNSPEC, 1, 0, &c1);
	while (!ret && !(ret = wait_one(s.cq, &e, 90)) && e.op_context != &c1)
		;
	if (ret || fi_av_insert(s.av, name, 1, &cli, 0, NULL) != 1) {
		printf("server: no client: %d\n", ret);
		return 2;
	}
	ret = (int)fi_trecv(s.ep, small, sizeof(small), NULL, cli, 4, 0, &c4);
	ret = ret ? ret : send ? 0 : (int)fi_trecv(s.ep, buf, BIG, NULL, cli, 3, 0, &c3);
	ret = ret ? ret : (int)fi_tsend(s.ep, go, sizeof(go), NULL, cli, 2, &c2);
	ret = ret ? ret : send ? (int)fi_tsend(s.ep, buf, BIG, NULL, cli, 3, &c3) : 0;
	CHECK(!ret, "server: a receive directed to the client posted, 256 MiB %s under way: %d",
	      send ? "send to it" : "receive from it", ret);
	if (ret)
		return 1;
	fflush(stdout);
	t0 = now();
	while ((!e3 || !e4) && now() < t0 + 60) {
		ret = wait_one(s.cq, &e, t0 + 60 - now());
		t = now() - t0;
		if (e.op_context == &c3 && !e3) {
			e3 = ret ? ret : -1;	/* -1: it finished */
			t3 = t;
		} else if (e.op_context == &c4 && !e4) {
			e4 = ret ? ret : -1;
			t4 = t;
		}
		e.op_context = NULL;
	}
	CHECK(e3 > 0, "the 256 MiB %s ended with an error completion: %s after %.1f s",
	      send ? "send to the killed client" : "receive from the killed client",
	      e3 > 0 ? fi_strerror(e3) : e3 < 0 ? "no: it finished before the kill" : "none in 60 s", t3);
	CHECK(e4 > 0, "the receive directed to the killed client ended with an error completion: %s after %.1f s",
	      e4 > 0 ? fi_strerror(e4) : e4 < 0 ? "no: it got a message" : "none in 60 s", t4);
	ret = (int)fi_tsend(s.ep, small, sizeof(small), NULL, cli, 5, &c5);
	if (!ret) {
		while (!(ret = wait_one(s.cq, &e, 30)) && e.op_context != &c5)
			;
		ret = ret ? -ret : 0;
	}
	CHECK(ret < 0, "a later send to the killed client fails: %s", ret < 0 ? fi_strerror(-ret) : "it succeeded");
	side_close(&s);
	free(buf);
	printf("1..%d\n%d of %d checks failed\n", n_checks, n_failed, n_checks);
	return n_failed ? 1 : 0;
}

static int peer_death(int argc, char **argv)
{
	bool server = argc == 5 && !strcmp(argv[2], "server");
	bool client = argc == 6 && !strcmp(argv[2], "client");
	const char *mode = argv[argc - 1];

	if ((!server && !client) || (strcmp(mode, "recv") && strcmp(mode, "send"))) {
		fprintf(stderr, "usage: weft-fi-check --peer-death server PORT recv|send\n"
			"       weft-fi-check --peer-death client SERVER PORT recv|send\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	return server ? death_server(argv[3], !strcmp(mode, "send")) :
			death_client(argv[3], argv[4], !strcmp(mode, "send"));
}

/* Waits for one completion on cq with context ctx (others are errors). */
static bool done(struct fid_cq *cq, void *ctx, uint64_t flags)
{
	struct fi_cq_tagged_entry e;

	return !poll_one(cq, &e) && e.op_context == ctx && (e.flags & flags) == flags;
}

static void valid_checks(struct fid_domain *dom, struct fid_ep *ep)
{
	struct fi_atomic_attr attr = { 0 };
	size_t count = 0;
	int ret;

	ret = fi_query_atomic(dom, FI_UINT64, FI_SUM, &attr, 0);
	CHECK(!ret && attr.count == 1 && attr.size == 8,
	      "fi_query_atomic UINT64 SUM: %d, count %zu, size %zu (0, 1, 8)", ret, attr.count,
	      attr.size);
	ret = fi_query_atomic(dom, FI_INT64, FI_ATOMIC_READ, &attr, FI_FETCH_ATOMIC);
	CHECK(!ret, "fi_query_atomic INT64 ATOMIC_READ FI_FETCH_ATOMIC: %d (0)", ret);
	ret = fi_query_atomic(dom, FI_UINT64, FI_CSWAP, &attr, FI_COMPARE_ATOMIC);
	CHECK(!ret, "fi_query_atomic UINT64 CSWAP FI_COMPARE_ATOMIC: %d (0)", ret);
	ret = fi_query_atomic(dom, FI_UINT8, FI_BOR, &attr, 0);
	CHECK(ret == -FI_EOPNOTSUPP, "fi_query_atomic UINT8 BOR (not atomic in the adapter): %d "
	      "(-FI_EOPNOTSUPP)", ret);
	ret = fi_query_atomic(dom, FI_UINT64, FI_MIN, &attr, FI_FETCH_ATOMIC);
	CHECK(ret == -FI_EOPNOTSUPP, "fi_query_atomic UINT64 MIN fetch: %d (-FI_EOPNOTSUPP)", ret);
	ret = fi_query_atomic(dom, FI_UINT64, FI_CSWAP, &attr, 0);
	CHECK(ret == -FI_EOPNOTSUPP, "fi_query_atomic CSWAP without FI_COMPARE_ATOMIC: %d "
	      "(-FI_EOPNOTSUPP)", ret);
	ret = fi_query_atomic(dom, FI_UINT64, FI_SUM, &attr, FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC);
	CHECK(ret == -FI_EINVAL, "fi_query_atomic FETCH|COMPARE: %d (-FI_EINVAL)", ret);
	ret = fi_query_atomic(dom, FI_UINT64, (enum fi_op)1000, &attr, 0);
	CHECK(ret == -FI_EINVAL, "fi_query_atomic op 1000: %d (-FI_EINVAL)", ret);
	ret = fi_query_atomic(dom, FI_UINT64, FI_SUM, &attr, 1ull << 44);
	CHECK(ret == -FI_EBADFLAGS, "fi_query_atomic flag 1<<44: %d (-FI_EBADFLAGS)", ret);
	ret = fi_atomicvalid(ep, FI_UINT64, FI_SUM, &count);
	CHECK(!ret && count == 1, "fi_atomicvalid UINT64 SUM: %d, count %zu (0, 1)", ret, count);
	ret = fi_atomicvalid(ep, FI_UINT64, FI_SUM, NULL);
	CHECK(ret == -FI_EINVAL, "fi_atomicvalid NULL count: %d (-FI_EINVAL)", ret);
	ret = fi_atomicvalid(ep, FI_DOUBLE, FI_SUM, &count);
	CHECK(ret == -FI_EOPNOTSUPP, "fi_atomicvalid DOUBLE SUM: %d (-FI_EOPNOTSUPP)", ret);
	ret = fi_fetch_atomicvalid(ep, FI_UINT64, FI_ATOMIC_WRITE, &count);
	CHECK(ret == -FI_EOPNOTSUPP, "fi_fetch_atomicvalid ATOMIC_WRITE (swap): %d (-FI_EOPNOTSUPP)",
	      ret);
	ret = fi_compare_atomicvalid(ep, FI_UINT64, FI_CSWAP, &count);
	CHECK(!ret && count == 1, "fi_compare_atomicvalid UINT64 CSWAP: %d (0)", ret);
	ret = fi_compare_atomicvalid(ep, FI_UINT8, FI_CSWAP_LE, &count);
	CHECK(ret == -FI_EOPNOTSUPP, "fi_compare_atomicvalid UINT8 CSWAP_LE: %d (-FI_EOPNOTSUPP)",
	      ret);
}

/* Atomics on our own registered memory through the adapter (loopback). */
static void atomic_ops(struct fid_ep *ep, struct fid_cq *cq, fi_addr_t self, uint64_t *tgt,
		       uint64_t key)
{
	uint64_t addr = (uintptr_t)tgt, v, res = 0, cmp;
	int c1, c2, c3, c4, c5;
	ssize_t r;

	*tgt = 100;
	v = 5;
	r = fi_atomic(ep, &v, 1, NULL, self, addr, key, FI_UINT64, FI_SUM, &c1);
	CHECK(!r && done(cq, &c1, FI_ATOMIC | FI_WRITE) && *tgt == 105,
	      "fi_atomic UINT64 SUM 5 on 100: %zd, target %llu (105)", r, (unsigned long long)*tgt);
	v = 10;
	r = fi_fetch_atomic(ep, &v, 1, NULL, &res, NULL, self, addr, key, FI_UINT64, FI_SUM, &c2);
	CHECK(!r && done(cq, &c2, FI_ATOMIC | FI_READ) && res == 105 && *tgt == 115,
	      "fi_fetch_atomic SUM 10: %zd, fetched %llu (105), target %llu (115)", r,
	      (unsigned long long)res, (unsigned long long)*tgt);
	res = 0;
	r = fi_fetch_atomic(ep, NULL, 1, NULL, &res, NULL, self, addr, key, FI_INT64, FI_ATOMIC_READ,
			    &c3);
	CHECK(!r && done(cq, &c3, FI_ATOMIC | FI_READ) && res == 115 && *tgt == 115,
	      "fi_fetch_atomic ATOMIC_READ: %zd, fetched %llu (115)", r, (unsigned long long)res);
	v = 7;
	cmp = 115;
	r = fi_compare_atomic(ep, &v, 1, NULL, &cmp, NULL, &res, NULL, self, addr, key, FI_UINT64,
			      FI_CSWAP, &c4);
	CHECK(!r && done(cq, &c4, FI_ATOMIC | FI_READ) && res == 115 && *tgt == 7,
	      "fi_compare_atomic CSWAP 115 -> 7: %zd, fetched %llu (115), target %llu (7)", r,
	      (unsigned long long)res, (unsigned long long)*tgt);
	v = 9;
	cmp = 1;
	r = fi_compare_atomic(ep, &v, 1, NULL, &cmp, NULL, &res, NULL, self, addr, key, FI_UINT64,
			      FI_CSWAP, &c5);
	CHECK(!r && done(cq, &c5, FI_ATOMIC | FI_READ) && res == 7 && *tgt == 7,
	      "fi_compare_atomic CSWAP that does not match: %zd, fetched %llu (7), target %llu (7)",
	      r, (unsigned long long)res, (unsigned long long)*tgt);
	v = 1ull << 40;
	r = fi_inject_atomic(ep, &v, 1, self, addr, key, FI_UINT64, FI_SUM);
	res = 0;
	if (!r)
		r = fi_fetch_atomic(ep, NULL, 1, NULL, &res, NULL, self, addr, key, FI_UINT64,
				    FI_ATOMIC_READ, &c1);
	CHECK(!r && done(cq, &c1, FI_ATOMIC) && res == (1ull << 40) + 7,
	      "fi_inject_atomic SUM 2^40, then read: %zd, %llu (2^40 + 7)", r,
	      (unsigned long long)res);
	r = fi_atomic(ep, &v, 1, NULL, self, addr + 1, key, FI_UINT64, FI_SUM, &c1);
	CHECK(r == -FI_EINVAL, "fi_atomic unaligned target: %zd (-FI_EINVAL)", r);
	r = fi_atomic(ep, &v, 2, NULL, self, addr, key, FI_UINT64, FI_SUM, &c1);
	CHECK(r == -FI_EINVAL, "fi_atomic count 2 (count limit 1): %zd (-FI_EINVAL)", r);
	r = fi_atomic(ep, &v, 1, NULL, self, addr, key, FI_UINT32, FI_SUM, &c1);
	CHECK(r == -FI_EOPNOTSUPP, "fi_atomic UINT32: %zd (-FI_EOPNOTSUPP)", r);
	r = fi_atomic(ep, &v, 1, NULL, self, addr, key, FI_UINT64, FI_BAND, &c1);
	CHECK(r == -FI_EOPNOTSUPP, "fi_atomic BAND (not emulated): %zd (-FI_EOPNOTSUPP)", r);
	r = fi_fetch_atomic(ep, &v, 1, NULL, NULL, NULL, self, addr, key, FI_UINT64, FI_SUM, &c1);
	CHECK(r == -FI_EINVAL, "fi_fetch_atomic NULL result: %zd (-FI_EINVAL)", r);
	r = fi_atomic(ep, &v, 1, NULL, self, addr, 1ull << 40, FI_UINT64, FI_SUM, &c1);
	CHECK(r == -FI_EINVAL, "fi_atomic key 2^40 (mr_key_size 4): %zd (-FI_EINVAL)", r);
	r = fi_atomic(ep, &v, 1, NULL, 4000, addr, key, FI_UINT64, FI_SUM, &c1);
	CHECK(r == -FI_EINVAL, "fi_atomic to fi_addr 4000: %zd (-FI_EINVAL)", r);
	{
		struct fi_ioc ioc = { &v, 1 };
		struct fi_rma_ioc rioc = { addr, 1, key };
		struct fi_msg_atomic m = { .msg_iov = &ioc, .iov_count = 1, .addr = self,
					   .rma_iov = &rioc, .rma_iov_count = 1,
					   .datatype = FI_UINT64, .op = FI_SUM };

		r = fi_atomicmsg(ep, &m, 1ull << 57);
		CHECK(r == -FI_EBADFLAGS, "fi_atomicmsg flag 1<<57: %zd (-FI_EBADFLAGS)", r);
		m.iov_count = 2;
		r = fi_atomicmsg(ep, &m, 0);
		CHECK(r == -FI_EINVAL, "fi_atomicmsg 2 iocs: %zd (-FI_EINVAL)", r);
		r = fi_atomicmsg(ep, NULL, 0);
		CHECK(r == -FI_EINVAL, "fi_atomicmsg NULL msg: %zd (-FI_EINVAL)", r);
	}
}

/* fi_writedata to ourselves: the data lands, the initiator's completion
 * and the target's remote CQ data completion (context NULL) both come. */
static void writedata(struct fid_ep *ep, struct fid_cq *cq, fi_addr_t self, uint64_t *tgt,
		      uint64_t key)
{
	struct fi_cq_tagged_entry e[2];
	uint64_t v = 0x1122334455667788ull;
	int c, got = 0, i;
	ssize_t r;

	*tgt = 0;
	r = fi_writedata(ep, &v, 8, NULL, 0xfeedbeef, self, (uintptr_t)tgt, key, &c);
	for (i = 0; i < 2 && !r && !poll_one(cq, &e[i]); i++)
		got |= e[i].op_context == &c && (e[i].flags & (FI_RMA | FI_WRITE)) == (FI_RMA | FI_WRITE) ? 1 :
		       !e[i].op_context && (e[i].flags & FI_REMOTE_CQ_DATA) && (e[i].flags & FI_REMOTE_WRITE) &&
		       e[i].data == 0xfeedbeef ? 2 : 4;
	CHECK(!r && got == 3 && *tgt == v,
	      "fi_writedata 8 B with data 0xfeedbeef: %zd, completions 0x%x (3: ours and the remote CQ data), "
	      "data %s", r, got, *tgt == v ? "placed" : "missing");
	r = fi_writedata(ep, &v, 8, NULL, 1ull << 40, self, (uintptr_t)tgt, key, &c);
	CHECK(r == -FI_EINVAL, "fi_writedata data 2^40 (cq_data_size 4): %zd (-FI_EINVAL)", r);
}

/* fi_control(FI_QUEUE_WORK): a counter set and a fetching atomic fire
 * when their triggering counter reaches its threshold, counting on the
 * completion counter; and a triggered tagged send (FI_TRIGGER). */
static void deferred(struct fid_domain *dom, struct fid_ep *ep, struct fid_cq *cq, fi_addr_t self,
		     uint64_t *tgt, uint64_t key)
{
	struct fid_cntr *trig, *comp, *target;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_deferred_work w;
	struct fi_op_cntr oc;
	struct fi_op_fetch_atomic fa;
	struct fi_ioc ioc, fioc;
	struct fi_rma_ioc rioc;
	struct fi_triggered_context tc;
	uint64_t v = 3, res = 0;
	uint8_t s[32], r[32] = { 0 };
	int rc;
	int ret;

	if (fi_cntr_open(dom, &ca, &trig, NULL) || fi_cntr_open(dom, &ca, &comp, NULL) ||
	    fi_cntr_open(dom, &ca, &target, NULL)) {
		CHECK(0, "fi_cntr_open x3");
		return;
	}
	ret = fi_control(&dom->fid, FI_QUEUE_WORK, NULL);
	CHECK(ret == -FI_EINVAL, "fi_control FI_QUEUE_WORK NULL: %d (-FI_EINVAL)", ret);
	memset(&w, 0, sizeof(w));
	w.op_type = (enum fi_op_type)99;
	w.triggering_cntr = trig;
	ret = fi_control(&dom->fid, FI_QUEUE_WORK, &w);
	CHECK(ret == -FI_EINVAL, "fi_control FI_QUEUE_WORK op_type 99: %d (-FI_EINVAL)", ret);
	oc = (struct fi_op_cntr){ .cntr = target, .value = 5 };
	w = (struct fi_deferred_work){ .threshold = 2, .triggering_cntr = trig,
				       .completion_cntr = comp, .op_type = FI_OP_CNTR_SET,
				       .op.cntr = &oc };
	ret = fi_control(&dom->fid, FI_QUEUE_WORK, &w);
	*tgt = 40;
	ioc = (struct fi_ioc){ &v, 1 };
	fioc = (struct fi_ioc){ &res, 1 };
	rioc = (struct fi_rma_ioc){ (uintptr_t)tgt, 1, key };
	fa = (struct fi_op_fetch_atomic){
		.ep = ep, .msg = { .msg_iov = &ioc, .iov_count = 1, .addr = self, .rma_iov = &rioc,
				   .rma_iov_count = 1, .datatype = FI_UINT64, .op = FI_SUM,
				   .context = &w.context },
		.fetch = { .msg_iov = &fioc, .iov_count = 1 },
	};
	w.op_type = FI_OP_FETCH_ATOMIC;
	w.op.fetch_atomic = &fa;
	ret = ret ? ret : fi_control(&dom->fid, FI_QUEUE_WORK, &w);
	CHECK(!ret, "fi_control FI_QUEUE_WORK CNTR_SET and FETCH_ATOMIC at threshold 2: %d", ret);
	/* The work's structures are copied: scribbling on them changes nothing. */
	memset(&fa, 0, sizeof(fa));
	oc.value = 77;
	ret = fi_cntr_wait(comp, 1, 50);
	CHECK(ret == -FI_ETIMEDOUT && *tgt == 40 && fi_cntr_read(target) == 0,
	      "below the threshold nothing ran: wait %d (-FI_ETIMEDOUT), target %llu (40)", ret,
	      (unsigned long long)*tgt);
	fi_cntr_add(trig, 2);
	ret = fi_cntr_wait(comp, 2, 5000);
	CHECK(!ret && fi_cntr_read(target) == 5 && res == 40 && *tgt == 43 &&
	      done(cq, &w.context, FI_ATOMIC | FI_READ),
	      "at the threshold: completion counter %d, counter set to %llu (5), fetched %llu (40), "
	      "target %llu (43)", ret, (unsigned long long)fi_cntr_read(target),
	      (unsigned long long)res, (unsigned long long)*tgt);
	/* A triggered tagged send (FI_TRIGGER), matched by a plain receive. */
	fill(s, sizeof(s), 0x5a);
	tc = (struct fi_triggered_context){ .event_type = FI_TRIGGER_THRESHOLD,
					    .trigger.threshold = { .cntr = trig, .threshold = 3 } };
	ret = fi_tsendmsg(ep, &(struct fi_msg_tagged){
		.msg_iov = &(struct iovec){ s, sizeof(s) }, .iov_count = 1, .addr = self,
		.tag = 0x77, .context = &tc }, FI_TRIGGER | FI_COMPLETION);
	ret = ret ? ret : (int)fi_trecv(ep, r, sizeof(r), NULL, FI_ADDR_UNSPEC, 0x77, 0, &rc);
	{
		struct fi_cq_tagged_entry e;

		ssize_t n = -FI_EAGAIN;
		int i;

		for (i = 0; i < 2000 && n == -FI_EAGAIN; i++)
			n = fi_cq_read(cq, &e, 1);
		CHECK(!ret && n == -FI_EAGAIN,
		      "triggered fi_tsendmsg below its threshold: %d, nothing completes in 2000 reads (%zd)",
		      ret, n);
		fi_cntr_add(trig, 1);
		CHECK(!poll_one(cq, &e) && !poll_one(cq, &e) && same(r, sizeof(r), 0x5a),
		      "triggered fi_tsendmsg at its threshold: sent and received byte-exact");
	}
	fi_close(&trig->fid);
	fi_close(&comp->fid);
	fi_close(&target->fid);
}

static void atomic_checks(void)
{
	struct fi_info *h = hints_rdm(), *info = NULL;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_mr *mr;
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
	uint8_t name[64];
	uint64_t *tgt = aligned_alloc(64, 64);
	size_t len = sizeof(name);
	fi_addr_t self;
	int ret;

	h->caps = FI_TAGGED | FI_RMA | FI_ATOMIC | FI_TRIGGER;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info);
	CHECK(!ret && (info->caps & FI_ATOMIC) && info->domain_attr->mr_mode ==
	      (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED),
	      "fi_getinfo FI_ATOMIC with FI_MR_VIRT_ADDR|PROV_KEY|ALLOCATED: %d", ret);
	if (ret || !tgt || fi_fabric(info->fabric_attr, &fab, NULL) ||
	    fi_domain(fab, info, &dom, NULL) || fi_av_open(dom, &ava, &av, NULL) ||
	    fi_cq_open(dom, &cqa, &cq, NULL) || fi_endpoint(dom, info, &ep, NULL) ||
	    fi_ep_bind(ep, &av->fid, 0) || fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_enable(ep) || fi_getname(&ep->fid, name, &len) ||
	    fi_av_insert(av, name, 1, &self, 0, NULL) != 1 ||
	    fi_mr_reg(dom, tgt, 64, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL)) {
		CHECK(0, "atomic endpoint set up");
		return;
	}
	valid_checks(dom, ep);
	atomic_ops(ep, cq, self, tgt, fi_mr_key(mr));
	writedata(ep, cq, self, tgt, fi_mr_key(mr));
	deferred(dom, ep, cq, self, tgt, fi_mr_key(mr));
	fi_close(&ep->fid);
	fi_close(&mr->fid);
	fi_close(&cq->fid);
	fi_close(&av->fid);
	ret = fi_close(&dom->fid);
	CHECK(!ret, "fi_close atomic domain: %d", ret);
	fi_close(&fab->fid);
	fi_freeinfo(info);
	fi_freeinfo(h);
	free(tgt);
}

static void cntr_checks(void);
static void reconnect_checks(void);
static void trig_checks(void);
static void trig_more_checks(void);
static void trig_atomic_err_checks(void);
static void same_name_checks(void);

int main(int argc, char **argv)
{
	bool loopback = !(argc > 1 && !strcmp(argv[1], "--no-loopback"));
	struct fi_info *h = hints_rdm(), *info = NULL;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq, *bad_cq;
	struct fid_ep *ep;
	struct fid_cntr *cntr;
	struct fi_av_attr ava = { .type = FI_AV_MAP };
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cq_err_entry err;
	struct fi_cntr_attr cna = { 0 };
	struct fi_cq_tagged_entry ent;
	uint8_t name[64], buf[64] = { 0 };
	size_t len;
	fi_addr_t self = FI_ADDR_NOTAVAIL, a;
	int ret, up[2] = { -1, -1 }, down[2] = { -1, -1 }, got = -1;
	pid_t pid = -1;

	if (argc > 1 && !strcmp(argv[1], "--peer-death"))
		return peer_death(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "--reconnect")) {
		reconnect_checks();
		printf("1..%d\n%d of %d checks failed\n", n_checks, n_failed, n_checks);
		return n_failed ? 1 : 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--same-name")) {
		same_name_checks();
		printf("1..%d\n%d of %d checks failed\n", n_checks, n_failed, n_checks);
		return n_failed ? 1 : 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--trigger")) {
		trig_checks();
		trig_more_checks();
		trig_atomic_err_checks();
		printf("1..%d\n%d of %d checks failed\n", n_checks, n_failed, n_checks);
		return n_failed ? 1 : 0;
	}
	/* The second process forks before either touches libfabric. */
	if (loopback && !pipe(up) && !pipe(down)) {
		pid = fork();
		if (pid == 0) {
			close(up[0]);
			close(down[1]);
			intruder(up[1], down[0]);
		}
		close(up[1]);
		close(down[0]);
	}
	getinfo_checks();
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info);
	CHECK(!ret && info && !strcmp(info->fabric_attr->prov_name, "weft"),
	      "fi_getinfo -p weft: %d", ret);
	if (ret)
		return 1;
	if (fi_fabric(info->fabric_attr, &fab, NULL) || fi_domain(fab, info, &dom, NULL)) {
		CHECK(0, "fi_fabric, fi_domain");
		return 1;
	}
	ava.type = (enum fi_av_type)77;
	ret = fi_av_open(dom, &ava, &av, NULL);
	CHECK(ret == -FI_EINVAL, "fi_av_open type 77: %d (-FI_EINVAL)", ret);
	ava.type = FI_AV_MAP;
	ret = fi_av_open(dom, &ava, &av, NULL);
	CHECK(!ret, "fi_av_open FI_AV_MAP: %d", ret);
	cqa.format = (enum fi_cq_format)77;
	ret = fi_cq_open(dom, &cqa, &bad_cq, NULL);
	CHECK(ret == -FI_ENOSYS, "fi_cq_open format 77: %d (-FI_ENOSYS)", ret);
	cqa.format = FI_CQ_FORMAT_TAGGED;
	cqa.size = 1 << 30;
	ret = fi_cq_open(dom, &cqa, &bad_cq, NULL);
	CHECK(ret == -FI_EINVAL, "fi_cq_open size 2^30: %d (-FI_EINVAL)", ret);
	cqa.size = 0;
	ret = fi_cq_open(dom, &cqa, &cq, NULL);
	CHECK(!ret, "fi_cq_open: %d", ret);
	cna.events = (enum fi_cntr_events)77;
	ret = fi_cntr_open(dom, &cna, &cntr, NULL);
	CHECK(ret == -FI_ENOSYS, "fi_cntr_open events 77: %d (-FI_ENOSYS)", ret);
	cna.events = FI_CNTR_EVENTS_COMP;
	cna.flags = 1;
	ret = fi_cntr_open(dom, &cna, &cntr, NULL);
	CHECK(ret == -FI_EBADFLAGS, "fi_cntr_open flags 1: %d (-FI_EBADFLAGS)", ret);
	cna.flags = 0;
	ret = fi_cntr_open(dom, &cna, &cntr, NULL);
	CHECK(!ret, "fi_cntr_open: %d", ret);
	ret = fi_endpoint(dom, info, &ep, NULL);
	CHECK(!ret, "fi_endpoint: %d", ret);
	ret = fi_enable(ep);
	CHECK(ret == -FI_ENOAV, "fi_enable unbound: %d (-FI_ENOAV)", ret);
	ret = fi_tsend(ep, buf, 8, NULL, 0, 1, NULL);
	CHECK(ret == -FI_EOPBADSTATE, "fi_tsend before fi_enable: %d (-FI_EOPBADSTATE)", ret);
	ret = fi_ep_bind(ep, &cq->fid, 1ull << 60);
	CHECK(ret == -FI_EBADFLAGS, "fi_ep_bind CQ flag 1<<60: %d (-FI_EBADFLAGS)", ret);
	ret = fi_ep_bind(ep, &cq->fid, 0);
	CHECK(ret == -FI_EINVAL, "fi_ep_bind CQ no direction: %d (-FI_EINVAL)", ret);
	ret = fi_ep_bind(ep, &cntr->fid, FI_REMOTE_WRITE);
	CHECK(ret == -FI_ENOSYS, "fi_ep_bind counter FI_REMOTE_WRITE (no FI_RMA_EVENT): %d (-FI_ENOSYS)",
	      ret);
	if (fi_ep_bind(ep, &av->fid, 0) || fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_ep_bind(ep, &cntr->fid, FI_SEND | FI_RECV) || fi_enable(ep)) {
		CHECK(0, "bind and enable");
		return 1;
	}
	len = 4;
	ret = fi_getname(&ep->fid, name, &len);
	CHECK(ret == -FI_ETOOSMALL && len == 16, "fi_getname 4 B: %d, len %zu (-FI_ETOOSMALL, 16)",
	      ret, len);
	len = sizeof(name);
	ret = fi_getname(&ep->fid, name, &len);
	CHECK(!ret, "fi_getname: %d", ret);
	memset(buf, 0, 16);
	ret = fi_av_insert(av, buf, 1, &a, 0, NULL);
	CHECK(ret == 0 && a == FI_ADDR_NOTAVAIL, "fi_av_insert zero address: %d inserted", ret);
	ret = fi_av_insert(av, name, 1, &a, 1ull << 62, NULL);
	CHECK(ret == -FI_EBADFLAGS, "fi_av_insert flag 1<<62: %d (-FI_EBADFLAGS)", ret);
	ret = fi_av_insert(av, name, 1, &self, 0, NULL);
	CHECK(ret == 1 && self != FI_ADDR_NOTAVAIL, "fi_av_insert own name: %d", ret);
	len = sizeof(buf);
	ret = fi_av_lookup(av, 4000, buf, &len);
	CHECK(ret == -FI_EINVAL, "fi_av_lookup 4000: %d (-FI_EINVAL)", ret);
	ret = fi_tsend(ep, buf, 8, NULL, 1234, 1, NULL);
	CHECK(ret == -FI_EINVAL, "fi_tsend to fi_addr 1234: %d (-FI_EINVAL)", ret);
	ret = fi_tsend(ep, buf, 8, NULL, self, 1ull << 50, NULL);
	CHECK(ret == -FI_EINVAL, "fi_tsend tag 1<<50 (beyond mem_tag_format): %d (-FI_EINVAL)", ret);
	ret = fi_tinject(ep, buf, info->tx_attr->inject_size + 1, self, 1);
	CHECK(ret == -FI_EINVAL, "fi_tinject inject_size + 1: %d (-FI_EINVAL)", ret);
	ret = fi_trecv(ep, NULL, 8, NULL, FI_ADDR_UNSPEC, 1, 0, NULL);
	CHECK(ret == -FI_EINVAL, "fi_trecv NULL buffer: %d (-FI_EINVAL)", ret);
	{
		struct iovec iov[2] = { { buf, 8 }, { buf + 8, 8 } };
		struct fi_msg_tagged m = { .msg_iov = iov, .iov_count = 2, .addr = self, .tag = 1 };

		ret = fi_tsendmsg(ep, &m, 0);
		CHECK(ret == -FI_EINVAL, "fi_tsendmsg 2 iovecs (iov_limit 1): %d (-FI_EINVAL)", ret);
		m.iov_count = 1;
		ret = fi_trecvmsg(ep, &m, FI_DISCARD);
		CHECK(ret == -FI_EINVAL, "fi_trecvmsg FI_DISCARD alone: %d (-FI_EINVAL)", ret);
		ret = fi_trecvmsg(ep, &m, 1ull << 61);
		CHECK(ret == -FI_EBADFLAGS, "fi_trecvmsg flag 1<<61: %d (-FI_EBADFLAGS)", ret);
	}
	ret = fi_cancel(&ep->fid, &ret);
	CHECK(ret == -FI_ENOENT, "fi_cancel unknown context: %d (-FI_ENOENT)", ret);
	ret = (int)fi_cq_read(cq, &ent, 1);
	CHECK(ret == -FI_EAGAIN, "fi_cq_read empty: %d (-FI_EAGAIN)", ret);
	ret = (int)fi_cq_readerr(cq, &err, 5);
	CHECK(ret == -FI_EBADFLAGS, "fi_cq_readerr flags 5: %d (-FI_EBADFLAGS)", ret);
	ret = (int)fi_cq_sread(cq, &ent, 1, NULL, 10);
	CHECK(ret == -FI_EAGAIN, "fi_cq_sread empty, 10 ms: %d (-FI_EAGAIN)", ret);
	ret = fi_close(&dom->fid);
	CHECK(ret == -FI_EBUSY, "fi_close domain with objects open: %d (-FI_EBUSY)", ret);
	if (loopback) {
		ret = -1;
		if (pid > 0 && read(up[0], &ret, sizeof(ret)) != sizeof(ret))
			ret = -1;
		CHECK(!ret, "a second process on the node: its own endpoint with 8 tagged receives for any tag "
		      "and an FI_MSG receive posted: %d", ret);
		loop_msg(ep, cq, self, 100, true, 0x11);
		loop_msg(ep, cq, self, 100, false, 0x12);
		loop_msg(ep, cq, self, 0, true, 0x13);
		loop_msg(ep, cq, self, 65536, true, 0x14);
		loop_msg(ep, cq, self, 65536, false, 0x15);
		loop_data(ep, cq, self, 64, true, 0x16);
		loop_data(ep, cq, self, 64, false, 0x17);
		loop_data(ep, cq, self, 100000, false, 0x18);
		{
			int c;

			ret = fi_trecv(ep, buf, 8, NULL, FI_ADDR_UNSPEC, 0x99, 0, &c);
			ret = ret ? ret : fi_cancel(&ep->fid, &c);
			ret = ret ? ret : poll_one(cq, &ent);
			CHECK(ret == -FI_EAVAIL && fi_cq_readerr(cq, &err, 0) == 1 &&
			      err.err == FI_ECANCELED && err.op_context == &c,
			      "fi_cancel of a listed receive: FI_ECANCELED (%d, err %d)", ret,
			      err.err);
		}
		CHECK(fi_cntr_read(cntr) == 16 && fi_cntr_readerr(cntr) == 1,
		      "fi_cntr bound FI_SEND|FI_RECV: %llu completions (16), %llu errors (1: the cancel)",
		      (unsigned long long)fi_cntr_read(cntr), (unsigned long long)fi_cntr_readerr(cntr));
		ret = fi_cntr_wait(cntr, 17, 20);
		CHECK(ret == -FI_ETIMEDOUT, "fi_cntr_wait 17, 20 ms: %d (-FI_ETIMEDOUT)", ret);
		mrc_checks(dom, ep, cq, self);
		spill_checks(ep, cq, self, info->rx_attr->size);
		atomic_checks();
		cntr_checks();
		reconnect_checks();
		same_name_checks();
		if (pid > 0 && (write(down[1], "x", 1) != 1 || read(up[0], &got, sizeof(got)) != sizeof(got)))
			got = -1;
		CHECK(got == 0, "the second process's any-tag receives, FI_MSG receive and FI_PEEK got %d of "
		      "this endpoint's messages (0): tags and queues belong to their endpoint", got);
	}
	if (pid > 0) {
		close(down[1]);
		waitpid(pid, NULL, 0);
	}
	fi_close(&ep->fid);
	fi_close(&cntr->fid);
	fi_close(&cq->fid);
	fi_close(&av->fid);
	ret = fi_close(&dom->fid);
	CHECK(!ret, "fi_close domain: %d", ret);
	fi_close(&fab->fid);
	fi_freeinfo(info);
	fi_freeinfo(h);
	printf("1..%d\n%d of %d checks failed\n", n_checks, n_failed, n_checks);
	return n_failed ? 1 : 0;
}

/* Counters on the adapter's event counters (docs/libfabric.md
 * "Counters"), between endpoints of two domains of this process: A1..A4
 * write to B.  W, bound FI_WRITE on the 4 initiators (more endpoints than
 * a QP has slots), and RD, bound FI_READ on a fifth, are counted by the
 * adapter alone; R, bound
 * FI_REMOTE_WRITE on B, moves with no progress call on B, and B's
 * progress, which takes the initiators' FI_RMA_EVENT notes, does not count
 * them again; fi_cntr_set/add move the block in the adapter; and once the
 * adapter's counter objects are all taken, a counter falls back to
 * software and counts the same. */
struct cn_side {
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
};

static volatile int cn_stop;

static void *cn_progress(void *arg)
{
	struct fid_cntr *c = arg;

	while (!cn_stop)
		fi_cntr_read(c);
	return NULL;
}

static int cn_stats(struct fid_cntr *c, struct fi_weft_cntr_stats *st)
{
	struct fi_weft_cntr_ops *ops = NULL;
	int ret = fi_open_ops(&c->fid, FI_WEFT_CNTR_OPS, 0, (void **)&ops, NULL);

	memset(st, 0, sizeof(*st));
	return ret ? ret : ops->stats(c, st);
}

/* The adapter's count of c, polled without progress until it reaches
 * want or 10 s pass. */
static uint64_t cn_block(struct fid_cntr *c, uint64_t want)
{
	struct fi_weft_cntr_stats st;
	double end = now() + 10;

	do {
		if (cn_stats(c, &st))
			return 0;
	} while (st.hw_count < want && now() < end);
	return st.hw_count;
}

static int cn_side_open(struct fid_fabric *fab, struct fi_info *info, struct cn_side *s)
{
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };

	return fi_domain(fab, info, &s->dom, NULL) || fi_av_open(s->dom, &ava, &s->av, NULL) ||
	       fi_cq_open(s->dom, &cqa, &s->cq, NULL);
}

static void cn_side_close(struct cn_side *s)
{
	struct fid *f[3] = { s->cq ? &s->cq->fid : NULL, s->av ? &s->av->fid : NULL,
			     s->dom ? &s->dom->fid : NULL };
	int i;

	for (i = 0; i < 3; i++)
		if (f[i])
			fi_close(f[i]);
}

/* An enabled endpoint of s with counter c bound for flags (c NULL: none). */
static struct fid_ep *cn_ep(struct cn_side *s, struct fi_info *info, struct fid_cntr *c,
			    uint64_t flags)
{
	struct fid_ep *ep;

	if (fi_endpoint(s->dom, info, &ep, NULL))
		return NULL;
	if (fi_ep_bind(ep, &s->av->fid, 0) || fi_ep_bind(ep, &s->cq->fid, FI_TRANSMIT | FI_RECV) ||
	    (c && fi_ep_bind(ep, &c->fid, flags)) || fi_enable(ep)) {
		fi_close(&ep->fid);
		return NULL;
	}
	return ep;
}

/* n RDMA operations of 8 B from ep to b (the first connects: b's counter
 * is progressed meanwhile by another thread when prog is set); 0 when all
 * completed. */
static int cn_rma(struct fid_ep *ep, struct fid_cq *cq, fi_addr_t b, bool write, int n,
		  uint64_t *src, uint64_t addr, uint64_t key, struct fid_cntr *prog)
{
	struct fi_cq_tagged_entry e;
	pthread_t th;
	int i, ret = 0;

	cn_stop = 0;
	if (prog && pthread_create(&th, NULL, cn_progress, prog))
		return -1;
	for (i = 0; i < n && !ret; i++) {
		ret = write ? (int)fi_write(ep, src, 8, NULL, b, addr, key, &e) :
			      (int)fi_read(ep, src, 8, NULL, b, addr, key, &e);
		ret = ret ? ret : wait_one(cq, &e, 20);
	}
	cn_stop = 1;
	if (prog)
		pthread_join(th, NULL);
	return ret;
}

#define CN_FILL 300		/* counters opened to take the adapter's 256 objects */
#define CN_ROLES 5

static void cn_fallback(struct fid_fabric *fab, struct fi_info *info, struct fid_ep *b_ep,
			struct fid_cntr *r, uint64_t *src, uint64_t addr, uint64_t key, uint64_t r_hw)
{
	static const uint64_t role[CN_ROLES] = { FI_SEND, FI_READ, FI_WRITE, FI_REMOTE_READ,
						 FI_REMOTE_WRITE };
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr **fc = calloc(CN_FILL, sizeof(*fc)), *f = NULL;
	struct fid_ep *feps[CN_FILL / CN_ROLES] = { NULL }, *a5 = NULL;
	struct fi_weft_cntr_stats st, fst;
	struct cn_side c = { 0 }, a = { 0 };
	int i, nhw = 0, nsw = 0, bad = 0, ret;
	uint8_t name[64];
	size_t len = sizeof(name);
	fi_addr_t bb;

	if (!fc || cn_side_open(fab, info, &c) || cn_side_open(fab, info, &a) ||
	    fi_getname(&b_ep->fid, name, &len) || fi_av_insert(a.av, name, 1, &bb, 0, NULL) != 1) {
		CHECK(0, "fi_cntr fallback: domains set up");
		goto out;
	}
	for (i = 0; i < CN_FILL; i++) {
		if (i % CN_ROLES == 0 && fi_endpoint(c.dom, info, &feps[i / CN_ROLES], NULL))
			break;
		if (fi_cntr_open(c.dom, &ca, &fc[i], NULL) ||
		    fi_ep_bind(feps[i / CN_ROLES], &fc[i]->fid, role[i % CN_ROLES]))
			break;
		if (cn_stats(fc[i], &st))
			break;
		if (st.hw)
			nhw++;
		else if (st.create_err)
			nsw++;
		else
			bad++;
	}
	CHECK(i == CN_FILL && nsw > 0 && !bad && nhw <= 252,
	      "fi_cntr fallback: %d counters bound on %d endpoints: %d with an adapter counter (<= 252: "
	      "256 per adapter, 4 in use in this process), %d in software for lack of one, each with its "
	      "CREATE's errno (%d without)", i, CN_FILL / CN_ROLES, nhw, nsw, bad);
	/* A counter bound while the objects are taken: software for good. */
	ret = fi_cntr_open(a.dom, &ca, &f, NULL);
	ret = ret ? ret : fi_endpoint(a.dom, info, &a5, NULL);
	ret = ret ? ret : fi_ep_bind(a5, &a.av->fid, 0);
	ret = ret ? ret : fi_ep_bind(a5, &a.cq->fid, FI_TRANSMIT | FI_RECV);
	ret = ret ? ret : fi_ep_bind(a5, &f->fid, FI_WRITE);
	ret = ret ? ret : cn_stats(f, &fst);
	/* The objects given back before it is used: it stays in software. */
	for (i = 0; i < CN_FILL / CN_ROLES; i++)
		if (feps[i])
			fi_close(&feps[i]->fid);
	for (i = 0; i < CN_FILL; i++)
		if (fc[i])
			fi_close(&fc[i]->fid);
	ret = ret ? ret : fi_enable(a5);
	ret = ret ? ret : cn_rma(a5, a.cq, bb, true, 3, src, addr, key, r);
	CHECK(!ret && !fst.hw && fst.create_err && !cn_stats(f, &st) && !st.hw &&
	      fi_cntr_read(f) == 3 && st.sw_value == 3 && cn_block(r, r_hw + 3) == r_hw + 3,
	      "fi_cntr fallback: a counter bound with the adapter's objects taken (CREATE errno %d) "
	      "counts 3 writes in software (%d): %llu (3); the target's adapter counter counts them: "
	      "%llu (%llu)", fst.create_err, ret, (unsigned long long)(f ? fi_cntr_read(f) : 0),
	      (unsigned long long)cn_block(r, r_hw + 3), (unsigned long long)(r_hw + 3));
out:
	if (a5)
		fi_close(&a5->fid);
	if (f)
		fi_close(&f->fid);
	free(fc);
	cn_side_close(&c);
	cn_side_close(&a);
}

#define CN_EPS 4
#define CN_N 5

static void cntr_checks(void)
{
	struct fi_info *h = hints_rdm(), *info = NULL;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_fabric *fab = NULL;
	struct cn_side a = { 0 }, b = { 0 };
	struct fid_cntr *w = NULL, *rd = NULL, *r = NULL;
	struct fid_ep *aep[CN_EPS] = { NULL }, *bep = NULL, *re = NULL;
	struct fid_mr *mr = NULL;
	struct fi_weft_cntr_stats sw, sr, srd;
	uint64_t *tgt = aligned_alloc(64, 64), src = 0x0123456789abcdefull, key, hw, want;
	uint8_t name[64];
	size_t len = sizeof(name);
	fi_addr_t baddr;
	int i, ret = 0;

	h->caps = FI_TAGGED | FI_MSG | FI_RMA | FI_RMA_EVENT;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	if (!tgt || fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info) ||
	    fi_fabric(info->fabric_attr, &fab, NULL) || cn_side_open(fab, info, &a) ||
	    cn_side_open(fab, info, &b) || fi_cntr_open(a.dom, &ca, &w, NULL) ||
	    fi_cntr_open(a.dom, &ca, &rd, NULL) || fi_cntr_open(b.dom, &ca, &r, NULL) ||
	    !(bep = cn_ep(&b, info, r, FI_REMOTE_WRITE)) ||
	    fi_mr_reg(b.dom, tgt, 64, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) ||
	    fi_getname(&bep->fid, name, &len) || fi_av_insert(a.av, name, 1, &baddr, 0, NULL) != 1) {
		CHECK(0, "fi_cntr: FI_RMA | FI_RMA_EVENT endpoints set up");
		goto out;
	}
	key = fi_mr_key(mr);
	for (i = 0; i < CN_EPS; i++) {
		aep[i] = cn_ep(&a, info, w, FI_WRITE);
		if (!aep[i])
			break;
	}
	if (i < CN_EPS) {
		CHECK(0, "fi_cntr: %d initiators with the counter bound", CN_EPS);
		goto out;
	}
	/* Connect each initiator, B progressing on another thread meanwhile. */
	for (i = 0; i < CN_EPS && !ret; i++)
		ret = cn_rma(aep[i], a.cq, baddr, true, 1, &src, (uintptr_t)tgt, key, r);
	/* From here nothing progresses B. */
	for (i = 0; i < CN_EPS && !ret; i++)
		ret = cn_rma(aep[i], a.cq, baddr, true, CN_N, &src, (uintptr_t)tgt + 8, key, NULL);
	want = CN_EPS * (CN_N + 1);
	CHECK(!ret && !cn_stats(w, &sw) && sw.hw && sw.hw_count == want && !sw.sw_value &&
	      sw.qp_binds >= CN_EPS && fi_cntr_read(w) == want,
	      "fi_cntr FI_WRITE on %d endpoints (one slot on each one's QP): %d writes counted %llu by "
	      "the adapter's block, %llu by software (0), fi_cntr_read %llu (%llu)", CN_EPS, (int)want,
	      (unsigned long long)sw.hw_count, (unsigned long long)sw.sw_value,
	      (unsigned long long)fi_cntr_read(w), (unsigned long long)want);
	hw = cn_block(r, want);
	CHECK(!ret && hw == want && !cn_stats(r, &sr) && sr.hw && !sr.sw_value && tgt[1] == src,
	      "fi_cntr FI_REMOTE_WRITE at the target: %llu (%llu) in the adapter's block with no progress "
	      "call on the target, software %llu (0), data placed", (unsigned long long)hw,
	      (unsigned long long)want, (unsigned long long)sr.sw_value);
	hw = fi_cntr_read(r);
	CHECK(hw == want && !cn_stats(r, &sr) && !sr.sw_value,
	      "fi_cntr_read on the target (its progress takes the %d FI_RMA_EVENT notes): %llu (%llu), "
	      "nothing counted twice", (int)want, (unsigned long long)hw, (unsigned long long)want);
	fi_cntr_set(r, 100);
	ret = cn_rma(aep[0], a.cq, baddr, true, 3, &src, (uintptr_t)tgt, key, NULL);
	hw = cn_block(r, 103);
	fi_cntr_add(r, 5);
	fi_cntr_adderr(r, 2);
	CHECK(!ret && hw == 103 && fi_cntr_read(r) == 108 && fi_cntr_readerr(r) == 2 &&
	      !cn_stats(r, &sr) && sr.hw_count == 108 && sr.hw_errors == 2 && !sr.sw_value &&
	      !sr.sw_errors,
	      "fi_cntr_set 100, 3 writes, fi_cntr_add 5, fi_cntr_adderr 2: %llu (108), errors %llu (2); "
	      "all in the adapter's block (EV_SET): %llu after the writes (103), then %llu and errors "
	      "%llu, software's part %llu and %llu (0 0)",
	      (unsigned long long)fi_cntr_read(r), (unsigned long long)fi_cntr_readerr(r),
	      (unsigned long long)hw, (unsigned long long)sr.hw_count,
	      (unsigned long long)sr.hw_errors, (unsigned long long)sr.sw_value,
	      (unsigned long long)sr.sw_errors);
	fi_cntr_set(r, 40);
	fi_cntr_seterr(r, 0);
	ret = ret ? ret : cn_rma(aep[1], a.cq, baddr, true, 2, &src, (uintptr_t)tgt, key, NULL);
	hw = cn_block(r, 42);
	CHECK(!ret && hw == 42 && fi_cntr_read(r) == 42 && fi_cntr_readerr(r) == 0 &&
	      !cn_stats(r, &sr) && !sr.hw_errors && !sr.sw_value,
	      "fi_cntr_set 40 (lower), fi_cntr_seterr 0, 2 writes: the block %llu (42), "
	      "fi_cntr_read %llu (42), errors %llu (0), software's part %llu (0)",
	      (unsigned long long)hw, (unsigned long long)fi_cntr_read(r),
	      (unsigned long long)fi_cntr_readerr(r), (unsigned long long)sr.sw_value);
	re = cn_ep(&a, info, rd, FI_READ);
	tgt[2] = 0x5a5a5a5a5a5a5a5aull;
	src = 0;
	ret = re ? cn_rma(re, a.cq, baddr, false, 2, &src, (uintptr_t)(tgt + 2), key, r) : -1;
	CHECK(!ret && src == tgt[2] && !cn_stats(rd, &srd) && srd.hw && srd.hw_count == 2 &&
	      !srd.sw_value && fi_cntr_read(rd) == 2,
	      "fi_cntr FI_READ: 2 reads counted %llu by the adapter, %llu by software, data read",
	      (unsigned long long)srd.hw_count, (unsigned long long)srd.sw_value);
	/* The initiators closed: the fallback's endpoint connects to B after them. */
	for (i = 0; i < CN_EPS; i++) {
		fi_close(&aep[i]->fid);
		aep[i] = NULL;
	}
	if (re)
		fi_close(&re->fid);
	re = NULL;
	cn_fallback(fab, info, bep, r, &src, (uintptr_t)tgt, key, 42);
out:
	for (i = 0; i < CN_EPS; i++)
		if (aep[i])
			fi_close(&aep[i]->fid);
	if (re)
		fi_close(&re->fid);
	if (bep)
		fi_close(&bep->fid);
	if (mr)
		fi_close(&mr->fid);
	if (w)
		fi_close(&w->fid);
	if (rd)
		fi_close(&rd->fid);
	if (r)
		fi_close(&r->fid);
	cn_side_close(&a);
	cn_side_close(&b);
	if (fab)
		fi_close(&fab->fid);
	fi_freeinfo(info);
	fi_freeinfo(h);
	free(tgt);
}

/* A peer that closed its endpoint, then a new one (docs/libfabric.md "A
 * peer that goes away"): A writes twice to the target T and is closed;
 * then B, in a new domain or in A's, writes to T: its first write must
 * connect and complete, and its data arrive.  T is progressed by another
 * thread during the writes only (nothing progresses it when A closes),
 * from `late` seconds into them, its CQ read as an application's would. */
struct rc_prog {
	struct fid_cq *cq;
	double late;
	volatile int stop;
};

static void *rc_progress(void *arg)
{
	struct rc_prog *p = arg;
	struct fi_cq_tagged_entry e;

	usleep((useconds_t)(p->late * 1e6));
	while (!p->stop)
		fi_cq_read(p->cq, &e, 1);
	return NULL;
}

/* n writes of 8 B (*src) from ep to t at addr, t progressed meanwhile
 * from `late` s on: 0 when all completed, else the first error. */
static int rc_write(struct fid_ep *ep, struct fid_cq *cq, fi_addr_t t, struct fid_cq *tcq,
		    double late, int n, uint64_t *src, uint64_t addr, uint64_t key)
{
	struct rc_prog p = { .cq = tcq, .late = late };
	struct fi_cq_tagged_entry e;
	pthread_t th;
	int i, ret = 0;

	if (pthread_create(&th, NULL, rc_progress, &p))
		return -FI_ENOMEM;
	for (i = 0; i < n && !ret; i++) {
		ret = (int)fi_write(ep, src, 8, NULL, t, addr, key, &e);
		ret = ret ? ret : wait_one(cq, &e, 30);
	}
	p.stop = 1;
	pthread_join(th, NULL);
	return ret;
}

static void reconnect_check(struct fid_fabric *fab, struct fi_info *info, bool same_domain,
			    double pause, double late)
{
	struct cn_side t = { 0 }, a = { 0 }, b = { 0 }, *bs = same_domain ? &a : &b;
	struct fid_ep *ep[3] = { NULL };	/* A, B, the target */
	struct fid_mr *mr = NULL;
	uint64_t *tgt = aligned_alloc(64, 64), va = 0x1111111111111111ull, vb = 0x2222222222222222ull;
	uint8_t name[64];
	size_t len = sizeof(name);
	fi_addr_t ta, tb;
	int i, ra = -1, rb = -1;
	double t0 = 0;

	if (!tgt || cn_side_open(fab, info, &t) || cn_side_open(fab, info, &a) ||
	    (!same_domain && cn_side_open(fab, info, &b)) || !(ep[2] = cn_ep(&t, info, NULL, 0)) ||
	    fi_mr_reg(t.dom, tgt, 64, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) ||
	    fi_getname(&ep[2]->fid, name, &len) || fi_av_insert(a.av, name, 1, &ta, 0, NULL) != 1 ||
	    (!same_domain && fi_av_insert(b.av, name, 1, &tb, 0, NULL) != 1) ||
	    !(ep[0] = cn_ep(&a, info, NULL, 0))) {
		CHECK(0, "reconnect: endpoints set up");
		goto out;
	}
	if (same_domain)
		tb = ta;
	memset(tgt, 0, 64);
	ra = rc_write(ep[0], a.cq, ta, t.cq, 0, 2, &va, (uintptr_t)tgt, fi_mr_key(mr));
	fi_close(&ep[0]->fid);
	ep[0] = NULL;
	if (pause > 0)
		usleep((useconds_t)(pause * 1e6));
	ep[1] = cn_ep(bs, info, NULL, 0);
	t0 = now();
	rb = ep[1] ? rc_write(ep[1], bs->cq, tb, t.cq, late, 1, &vb, (uintptr_t)(tgt + 1),
			      fi_mr_key(mr)) : -1;
	t0 = now() - t0;
	CHECK(!ra && tgt[0] == va && !rb && tgt[1] == vb,
	      "reconnect: A wrote twice to a target and was closed; %.1f s later a new endpoint in %s "
	      "writes to it, the target progressed from %.1f s into the write: %d (0) in %.1f s, data "
	      "placed: %s (A's writes: %d)", pause, same_domain ? "A's domain" : "a new domain", late,
	      rb, t0, tgt[1] == vb ? "yes" : "no", ra);
out:
	for (i = 0; i < 3; i++)
		if (ep[i])
			fi_close(&ep[i]->fid);
	if (mr)
		fi_close(&mr->fid);
	cn_side_close(&t);
	cn_side_close(&a);
	cn_side_close(&b);
	free(tgt);
}

static void reconnect_checks(void)
{
	struct fi_info *h = hints_rdm(), *info = NULL;
	struct fid_fabric *fab = NULL;

	h->caps = FI_TAGGED | FI_MSG | FI_RMA;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	if (fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info) ||
	    fi_fabric(info->fabric_attr, &fab, NULL)) {
		CHECK(0, "reconnect: fi_getinfo FI_RMA, fi_fabric");
	} else {
		reconnect_check(fab, info, false, 0, 0);
		reconnect_check(fab, info, true, 0, 0);
		reconnect_check(fab, info, false, 2, 0);
		/* B's first REQs come before T's progress has taken A's
		 * DISCONNECTED: refused as stale, tried again. */
		reconnect_check(fab, info, false, 0, 1);
	}
	if (fab)
		fi_close(&fab->fid);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

/* Triggered operations in the adapter (docs/libfabric.md "Triggered
 * operations"), between two domains of this process: A (the poster) and
 * B (the target).  A posts a triggered fi_writemsg to B on A's
 * FI_REMOTE_WRITE counter, which only the adapter counts: it goes behind
 * a WAIT_CNT on A's trigger connection to B.  From then on A's endpoint
 * gets no call at all: B's own writes to A move A's counter, the adapter
 * sends the held write, and B finds the data in its memory and its
 * FI_REMOTE_WRITE counter's block moved; A's FI_WRITE counter's block
 * counted it too, before A's progress ran.  A second held trigger is
 * released by fi_cntr_add, which the adapter makes (EV_SET), again with
 * no progress call on A and nothing taken back.  Then a trigger on a
 * counter software has counted on (the completion of deferred work, with
 * that counter as its completion counter) stays in software and fires at
 * A's progress; and a held trigger whose counter software then counts on
 * is taken back into software and fires once, when fi_cntr_add takes the
 * counter to its threshold. */
#define TG_N 3

struct tg_side {
	struct cn_side s;
	struct fid_ep *ep;
	struct fid_cntr *rw, *wr;	/* FI_REMOTE_WRITE, FI_WRITE */
	struct fid_mr *mr;
	uint64_t *buf;			/* 8 words, registered */
	fi_addr_t peer;
};

static int tg_open(struct fid_fabric *fab, struct fi_info *info, struct tg_side *t)
{
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };

	t->buf = aligned_alloc(64, 64);
	if (!t->buf || cn_side_open(fab, info, &t->s) || fi_cntr_open(t->s.dom, &ca, &t->rw, NULL) ||
	    fi_cntr_open(t->s.dom, &ca, &t->wr, NULL) ||
	    fi_endpoint(t->s.dom, info, &t->ep, NULL) || fi_ep_bind(t->ep, &t->s.av->fid, 0) ||
	    fi_ep_bind(t->ep, &t->s.cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_ep_bind(t->ep, &t->rw->fid, FI_REMOTE_WRITE) ||
	    fi_ep_bind(t->ep, &t->wr->fid, FI_WRITE) || fi_enable(t->ep))
		return -1;
	memset(t->buf, 0, 64);
	return fi_mr_reg(t->s.dom, t->buf, 64, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &t->mr,
			 NULL);
}

static void tg_close(struct tg_side *t)
{
	struct fid *f[4] = { t->ep ? &t->ep->fid : NULL, t->mr ? &t->mr->fid : NULL,
			     t->rw ? &t->rw->fid : NULL, t->wr ? &t->wr->fid : NULL };
	int i;

	for (i = 0; i < 4; i++)
		if (f[i])
			fi_close(f[i]);
	cn_side_close(&t->s);
	free(t->buf);
}

/* b's name in a's AV (a->peer), and a's in b's (b->peer) when both. */
static int tg_link(struct tg_side *a, struct tg_side *b, bool both)
{
	uint8_t name[64];
	size_t len = sizeof(name);

	if (fi_getname(&b->ep->fid, name, &len) || fi_av_insert(a->s.av, name, 1, &a->peer, 0, NULL) != 1)
		return -1;
	len = sizeof(name);
	return both && (fi_getname(&a->ep->fid, name, &len) ||
			fi_av_insert(b->s.av, name, 1, &b->peer, 0, NULL) != 1) ? -1 : 0;
}

/* A write of v from `from` into word w of to's buffer, completed. */
static int tg_write(struct tg_side *from, struct tg_side *to, uint64_t *v, int w)
{
	struct fi_cq_tagged_entry e;
	int ret = (int)fi_write(from->ep, v, 8, NULL, from->peer, (uintptr_t)(to->buf + w),
				fi_mr_key(to->mr), &e);

	return ret ? ret : wait_one(from->s.cq, &e, 20);
}

/* A triggered fi_writemsg of *v from a into word w of b at a->rw >= thr,
 * b's endpoint progressed meanwhile (the connections are made). */
static int tg_trigger(struct tg_side *a, struct tg_side *b, struct fi_triggered_context *tc,
		      uint64_t *v, int w, uint64_t thr)
{
	struct iovec iov = { v, 8 };
	struct fi_rma_iov rma = { (uintptr_t)(b->buf + w), 8, fi_mr_key(b->mr) };
	struct fi_msg_rma m = { .msg_iov = &iov, .iov_count = 1, .addr = a->peer,
				.rma_iov = &rma, .rma_iov_count = 1, .context = tc };
	pthread_t th;
	int ret;

	*tc = (struct fi_triggered_context){ .event_type = FI_TRIGGER_THRESHOLD,
					     .trigger.threshold = { .cntr = a->rw, .threshold = thr } };
	cn_stop = 0;
	if (pthread_create(&th, NULL, cn_progress, b->rw))
		return -1;
	ret = (int)fi_writemsg(a->ep, &m, FI_TRIGGER | FI_COMPLETION);
	cn_stop = 1;
	pthread_join(th, NULL);
	return ret;
}

/* b's word w polled (no call) until it holds v, secs at most. */
static bool tg_arrives(struct tg_side *b, int w, uint64_t v, double secs)
{
	double end = now() + secs;

	while (__atomic_load_n(&b->buf[w], __ATOMIC_ACQUIRE) != v && now() < end)
		;
	return __atomic_load_n(&b->buf[w], __ATOMIC_ACQUIRE) == v;
}

/* A software count on a's counter c: deferred work at threshold 0 (a
 * counter add on a counter of its own, t) with c as its completion
 * counter, run by the progress of a's domain.  0 when it ran and c's
 * software part moved by 1. */
static int tg_sw_count(struct tg_side *a, struct fid_cntr *c)
{
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_weft_cntr_stats s0, s1;
	struct fi_deferred_work w;
	struct fi_op_cntr oc;
	struct fid_cntr *t;
	int ret;

	if (cn_stats(c, &s0) || fi_cntr_open(a->s.dom, &ca, &t, NULL))
		return -1;
	oc = (struct fi_op_cntr){ .cntr = t, .value = 1 };
	w = (struct fi_deferred_work){ .threshold = 0, .triggering_cntr = t, .completion_cntr = c,
				       .op_type = FI_OP_CNTR_ADD, .op.cntr = &oc };
	ret = fi_control(&a->s.dom->fid, FI_QUEUE_WORK, &w);
	ret = ret ? ret : fi_cntr_wait(t, 1, 10000);
	ret = ret || cn_stats(c, &s1) || s1.sw_value != s0.sw_value + 1 ? -1 : 0;
	fi_close(&t->fid);
	return ret;
}

/* A4 holds a trigger to C, whose endpoint then closes: A4's progress
 * must take the flushed WAIT_CNT back into software, complete nothing
 * yet, and once the counter reaches the threshold give the error
 * completion a software trigger to a gone peer gives (FI_ECONNRESET),
 * with no error left on A4's FI_WRITE counter. */
static void peer_gone(struct fid_fabric *fab, struct fi_info *info)
{
	struct tg_side a4 = { 0 }, cs = { 0 }, *c = &cs;
	struct fi_triggered_context tc;
	struct fi_weft_cntr_stats st = { 0 };
	struct fi_cq_tagged_entry e;
	uint64_t v = 0xdead5;
	double end;
	int ret, got;

	ret = tg_open(fab, info, &a4) || tg_open(fab, info, c) || tg_link(&a4, c, false) ? -1 :
	      tg_trigger(&a4, c, &tc, &v, 5, 1);
	ret = ret ? ret : fi_close(&c->ep->fid);
	c->ep = NULL;
	for (end = now() + 10; !ret && now() < end;) {
		fi_cntr_read(a4.wr);
		if (cn_stats(a4.rw, &st) || !st.trig_held)
			break;
	}
	got = (int)fi_cq_read(a4.s.cq, &e, 1);
	CHECK(!ret && st.trig_hw == 1 && !st.trig_held && st.trig_recalled == 1 && got == -FI_EAGAIN,
	      "the peer of a held trigger closes its endpoint: the WAIT_CNT flushed and taken back "
	      "into software (held %llu, taken back %llu), nothing completed (%d)",
	      (unsigned long long)st.trig_held, (unsigned long long)st.trig_recalled, got);
	fi_cntr_add(a4.rw, 1);
	got = wait_one(a4.s.cq, &e, 20);
	CHECK(!ret && got == FI_ECONNRESET && e.op_context == &tc && fi_cntr_readerr(a4.wr) == 0,
	      "at its threshold it fails as a software trigger to a gone peer: %d (FI_ECONNRESET %d), "
	      "its context, errors on the FI_WRITE counter %llu (0)", got, FI_ECONNRESET,
	      (unsigned long long)fi_cntr_readerr(a4.wr));
	tg_close(&a4);
	tg_close(c);
}

static void trig_checks(void)
{
	struct fi_info *h = hints_rdm(), *info = NULL;
	struct fid_fabric *fab = NULL;
	struct tg_side a = { 0 }, b = { 0 }, a2 = { 0 }, a3 = { 0 };
	struct fi_triggered_context tc, tc2, tc3, tc4, tc5;
	struct fi_weft_cntr_stats st, sw;
	struct fi_cq_tagged_entry e;
	uint64_t one = 1, v = 0x7419a11e5dull, v2 = 0x50f7ull, v3 = 0x2ecal, v4 = 0xc105e;
	uint64_t v5 = 0xadd5e7, base, bw;
	double end;
	int i, ret;

	h->caps = FI_MSG | FI_RMA | FI_RMA_EVENT | FI_TRIGGER;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	if (fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info) ||
	    fi_fabric(info->fabric_attr, &fab, NULL) || tg_open(fab, info, &a) ||
	    tg_open(fab, info, &b) || tg_open(fab, info, &a2) || tg_link(&a, &b, true) ||
	    tg_link(&a2, &b, false)) {
		CHECK(0, "FI_TRIGGER: FI_RMA | FI_RMA_EVENT | FI_TRIGGER endpoints set up");
		goto out;
	}
	/* B connects to A while A's progress runs on another thread. */
	cn_stop = 0;
	{
		pthread_t th;

		ret = pthread_create(&th, NULL, cn_progress, a.rw) ? -1 : tg_write(&b, &a, &one, 0);
		cn_stop = 1;
		if (!ret)
			pthread_join(th, NULL);
	}
	base = fi_cntr_read(a.rw);
	ret = ret ? ret : tg_trigger(&a, &b, &tc, &v, 1, base + TG_N);
	CHECK(!ret && !cn_stats(a.rw, &st) && st.trig_hw == 1 && st.trig_held == 1 && !st.trig_sw &&
	      b.buf[1] == 0,
	      "FI_TRIGGER fi_writemsg at A's FI_REMOTE_WRITE counter >= %llu: %d, held by the adapter "
	      "(triggers in hardware %llu, held %llu, in software %llu), nothing written yet",
	      (unsigned long long)(base + TG_N), ret, (unsigned long long)st.trig_hw,
	      (unsigned long long)st.trig_held, (unsigned long long)st.trig_sw);
	/* From here A's endpoint gets no call until the data is at B. */
	bw = cn_block(b.rw, 0);
	for (i = 0; i < TG_N - 1 && !ret; i++)
		ret = tg_write(&b, &a, &one, 0);
	CHECK(!ret && !tg_arrives(&b, 1, v, 1) && cn_block(b.rw, bw) == bw,
	      "%d of B's writes to A (A's counter one short): the triggered write is still held",
	      TG_N - 1);
	ret = ret ? ret : tg_write(&b, &a, &one, 0);
	CHECK(!ret && tg_arrives(&b, 1, v, 10) && cn_block(b.rw, bw + 1) == bw + 1 &&
	      cn_block(a.wr, 1) == 1,
	      "B's write %d of %d to A fired A's triggered write with no call on A: its data at B, B's "
	      "FI_REMOTE_WRITE block %llu (%llu), A's FI_WRITE block %llu (1, the adapter counted it)",
	      TG_N, TG_N, (unsigned long long)cn_block(b.rw, bw + 1), (unsigned long long)(bw + 1),
	      (unsigned long long)cn_block(a.wr, 1));
	ret = wait_one(a.s.cq, &e, 20);
	CHECK(!ret && e.op_context == &tc && (e.flags & FI_WRITE) && fi_cntr_read(a.wr) == 1 &&
	      !cn_stats(a.rw, &st) && st.trig_held == 0 && !cn_stats(a.wr, &sw) && !sw.sw_value,
	      "A's progress: the triggered write's completion (its triggered context, FI_WRITE) %d, "
	      "A's FI_WRITE counter %llu (1, software %llu), WAIT_CNTs held %llu (0)", ret,
	      (unsigned long long)fi_cntr_read(a.wr), (unsigned long long)sw.sw_value,
	      (unsigned long long)st.trig_held);
	/* A second held trigger, released by fi_cntr_add: the adapter moves
	 * the block (EV_SET) and lets its WAIT_CNT pass.  From the post
	 * until the data is at B, A's endpoint gets no call. */
	base = fi_cntr_read(a.rw);
	ret = tg_trigger(&a, &b, &tc5, &v5, 6, base + 2);
	CHECK(!ret && !cn_stats(a.rw, &st) && st.trig_hw == 2 && st.trig_held == 1,
	      "FI_TRIGGER fi_writemsg at A's counter >= %llu (now %llu): %d, held by the adapter "
	      "(in hardware %llu, held %llu)", (unsigned long long)(base + 2),
	      (unsigned long long)base, ret, (unsigned long long)st.trig_hw,
	      (unsigned long long)st.trig_held);
	ret = ret ? ret : fi_cntr_add(a.rw, 1);
	CHECK(!ret && !tg_arrives(&b, 6, v5, 1) && !cn_stats(a.rw, &st) && st.trig_held == 1 &&
	      st.hw_count == base + 1 && !st.sw_value,
	      "fi_cntr_add 1 (one short): A's block %llu (%llu), software's part %llu (0), the write "
	      "still held (%llu)", (unsigned long long)st.hw_count, (unsigned long long)(base + 1),
	      (unsigned long long)st.sw_value, (unsigned long long)st.trig_held);
	ret = ret ? ret : fi_cntr_add(a.rw, 1);
	CHECK(!ret && tg_arrives(&b, 6, v5, 10) && cn_block(a.wr, 2) == 2 && !cn_stats(a.rw, &st) &&
	      st.hw_count == base + 2 && !st.sw_value && !st.trig_recalled,
	      "fi_cntr_add 1 more released the held write in the adapter with no progress call on A: "
	      "its data at B, A's block %llu (%llu), A's FI_WRITE block %llu (2), taken back %llu (0)",
	      (unsigned long long)st.hw_count, (unsigned long long)(base + 2),
	      (unsigned long long)cn_block(a.wr, 2), (unsigned long long)st.trig_recalled);
	ret = ret ? ret : wait_one(a.s.cq, &e, 20);
	CHECK(!ret && e.op_context == &tc5 && fi_cq_read(a.s.cq, &e, 1) == -FI_EAGAIN &&
	      fi_cntr_read(a.wr) == 2 && !cn_stats(a.rw, &st) && !st.trig_held && !st.trig_recalled &&
	      !st.trig_sw,
	      "A's progress: its one completion (its triggered context) %d, A's FI_WRITE counter %llu "
	      "(2), held %llu (0), taken back %llu (0), in software %llu (0)", ret,
	      (unsigned long long)fi_cntr_read(a.wr), (unsigned long long)st.trig_held,
	      (unsigned long long)st.trig_recalled, (unsigned long long)st.trig_sw);
	/* A software count on A's counter: software from now. */
	ret = tg_sw_count(&a, a.rw);
	base = fi_cntr_read(a.rw);
	ret = ret ? ret : tg_trigger(&a, &b, &tc2, &v2, 2, base + 2);
	for (i = 0; i < 2 && !ret; i++)
		ret = tg_write(&b, &a, &one, 0);
	CHECK(!ret && !cn_stats(a.rw, &st) && st.trig_sw == 1 && st.trig_hw == 2 &&
	      !tg_arrives(&b, 2, v2, 1) && fi_cntr_wait(a.wr, 3, 10000) == 0 && tg_arrives(&b, 2, v2, 10) &&
	      !wait_one(a.s.cq, &e, 20) && e.op_context == &tc2,
	      "after a software count on it (deferred work's completion counter) the counter's "
	      "triggered write stays in software (in software %llu, in hardware %llu): not sent "
	      "without A's progress, sent by it once the counter reached %llu, completed with its "
	      "context", (unsigned long long)st.trig_sw, (unsigned long long)st.trig_hw,
	      (unsigned long long)(base + 2));
	/* A2: held, then software counts on its counter: taken back. */
	ret = tg_trigger(&a2, &b, &tc3, &v3, 3, 5);
	CHECK(!ret && !cn_stats(a2.rw, &st) && st.trig_held == 1 && !tg_arrives(&b, 3, v3, 1),
	      "A2's triggered write at 5 on a counter at 0: held by the adapter (%llu), not sent",
	      (unsigned long long)st.trig_held);
	ret = ret ? ret : tg_sw_count(&a2, a2.rw);
	/* A2's progress sees the flushed WAIT_CNT. */
	for (end = now() + 10; !ret && now() < end;) {
		fi_cntr_read(a2.wr);
		if (cn_stats(a2.rw, &st) || !st.trig_held)
			break;
	}
	CHECK(!ret && !cn_stats(a2.rw, &st) && st.trig_recalled == 1 && !st.trig_held &&
	      !tg_arrives(&b, 3, v3, 1) && fi_cq_read(a2.s.cq, &e, 1) == -FI_EAGAIN &&
	      fi_cntr_read(a2.rw) == 1,
	      "a software count on A2's counter (deferred work's completion) takes the held WAIT_CNT "
	      "back (taken back %llu, held %llu), nothing sent or completed below the threshold "
	      "(counter %llu)", (unsigned long long)st.trig_recalled,
	      (unsigned long long)st.trig_held, (unsigned long long)fi_cntr_read(a2.rw));
	ret = ret ? ret : fi_cntr_add(a2.rw, 4);
	ret = ret ? ret : fi_cntr_wait(a2.wr, 1, 10000);
	i = wait_one(a2.s.cq, &e, 20);
	CHECK(!ret && !i && e.op_context == &tc3 && tg_arrives(&b, 3, v3, 10) &&
	      fi_cq_read(a2.s.cq, &e, 1) == -FI_EAGAIN && !cn_stats(a2.rw, &st) &&
	      st.trig_recalled == 1 && st.trig_held == 0 && fi_cntr_read(a2.wr) == 1 &&
	      fi_cntr_readerr(a2.wr) == 0,
	      "fi_cntr_add 4 takes it to 5: the write sent by software once, completed once with its "
	      "context (wait %d, cq %d), A2's FI_WRITE counter %llu (1), errors %llu (0: the flush "
	      "the adapter counted is taken back)", ret, i, (unsigned long long)fi_cntr_read(a2.wr),
	      (unsigned long long)fi_cntr_readerr(a2.wr));
	/* A3 closes its endpoint with a trigger held: no hang, nothing sent,
	 * its counter closes.  Its trigger and A4's go first: every
	 * connection of these checks is made before any endpoint closes. */
	ret = tg_open(fab, info, &a3) || tg_link(&a3, &b, false) ? -1 :
	      tg_trigger(&a3, &b, &tc4, &v4, 4, 100);
	peer_gone(fab, info);
	i = ret || cn_stats(a3.rw, &st) ? -1 : (int)st.trig_held;
	ret = ret ? ret : fi_close(&a3.ep->fid);
	a3.ep = NULL;
	CHECK(!ret && i == 1 && !tg_arrives(&b, 4, v4, 1) && !fi_close(&a3.rw->fid),
	      "fi_close of an endpoint with a triggered write held (%d): %d, the write never sent, "
	      "its counter then closes", i, ret);
	a3.rw = NULL;
out:
	tg_close(&a3);
	tg_close(&a);
	tg_close(&a2);
	tg_close(&b);
	if (fab)
		fi_close(&fab->fid);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

/* Triggered atomics, deferred work and several counters per peer in the
 * adapter (docs/libfabric.md "Triggered operations"), between A and B of
 * two domains of this process, with FI_ATOMIC: A's triggered fetch-add
 * and compare-swap on its FI_REMOTE_WRITE counter are held behind
 * WAIT_CNTs and fired by B's writes with no call on A, the fetched and
 * target values exact; an RMA write and a fetch-add queued with
 * fi_control(FI_QUEUE_WORK) on that counter are held the same way and
 * count on the work's completion counter; and triggers to B on two
 * counters (A's and that of X0, another endpoint of A's domain) go to two
 * trigger connections and fire independently, each counter's in threshold
 * order, while a fifth counter to the same peer stays in software. */
#define TM_X 4			/* endpoints of A's domain with counters of their own */

/* A write of *v from b through dest into word w of a's buffer,
 * completed; c's endpoints progressed on another thread meanwhile (c
 * NULL: none). */
static int tm_write(struct tg_side *b, fi_addr_t dest, struct tg_side *a, uint64_t *v, int w,
		    struct fid_cntr *c)
{
	struct fi_cq_tagged_entry e;
	pthread_t th;
	int ret;

	cn_stop = 0;
	if (c && pthread_create(&th, NULL, cn_progress, c))
		return -1;
	ret = (int)fi_write(b->ep, v, 8, NULL, dest, (uintptr_t)(a->buf + w), fi_mr_key(a->mr), &e);
	ret = ret ? ret : wait_one(b->s.cq, &e, 20);
	cn_stop = 1;
	if (c)
		pthread_join(th, NULL);
	return ret;
}

/* A triggered atomic from a into word w of b at counter c >= thr (fetch:
 * fi_fetch_atomicmsg FI_SUM of *v; else fi_compare_atomicmsg FI_CSWAP of
 * *v where *cmp), its result in *res, b progressed meanwhile. */
static int tm_atomic(struct tg_side *a, struct tg_side *b, struct fi_triggered_context *tc,
		     struct fid_cntr *c, uint64_t thr, int w, uint64_t *v, uint64_t *cmp,
		     uint64_t *res)
{
	struct fi_ioc ioc = { v, 1 }, rioc = { res, 1 }, cioc = { cmp, 1 };
	struct fi_rma_ioc rma = { (uintptr_t)(b->buf + w), 1, fi_mr_key(b->mr) };
	struct fi_msg_atomic m = { .msg_iov = &ioc, .iov_count = 1, .addr = a->peer,
				   .rma_iov = &rma, .rma_iov_count = 1, .datatype = FI_UINT64,
				   .op = cmp ? FI_CSWAP : FI_SUM, .context = tc };
	pthread_t th;
	int ret;

	*tc = (struct fi_triggered_context){ .event_type = FI_TRIGGER_THRESHOLD,
					     .trigger.threshold = { .cntr = c, .threshold = thr } };
	cn_stop = 0;
	if (pthread_create(&th, NULL, cn_progress, b->rw))
		return -1;
	ret = cmp ? (int)fi_compare_atomicmsg(a->ep, &m, &cioc, NULL, 1, &rioc, NULL, 1,
					      FI_TRIGGER | FI_COMPLETION) :
		    (int)fi_fetch_atomicmsg(a->ep, &m, &rioc, NULL, 1, FI_TRIGGER | FI_COMPLETION);
	cn_stop = 1;
	pthread_join(th, NULL);
	return ret;
}

/* A triggered write of *v from a into word w of b at counter c >= thr. */
static int tm_trigger(struct tg_side *a, struct tg_side *b, struct fi_triggered_context *tc,
		      struct fid_cntr *c, uint64_t thr, int w, uint64_t *v)
{
	struct fid_cntr *rw = a->rw;
	int ret;

	a->rw = c;
	ret = tg_trigger(a, b, tc, v, w, thr);
	a->rw = rw;
	return ret;
}

static uint64_t tm_stat(struct fid_cntr *c, int which)
{
	struct fi_weft_cntr_stats st;

	if (cn_stats(c, &st))
		return ~0ull;
	return which == 0 ? st.trig_hw : which == 1 ? st.trig_held : st.trig_sw;
}

/* The contexts of n completions of cq (20 s at most each) are those of
 * want, in any order; flags of each include fl. */
static bool tm_done(struct fid_cq *cq, void **want, int n, uint64_t fl)
{
	struct fi_cq_tagged_entry e;
	int i, j, seen = 0;

	for (i = 0; i < n; i++) {
		if (wait_one(cq, &e, 20) || (e.flags & fl) != fl)
			return false;
		for (j = 0; j < n; j++)
			if (want[j] == e.op_context && !(seen & (1 << j)))
				break;
		if (j == n)
			return false;
		seen |= 1 << j;
	}
	return fi_cq_read(cq, &e, 1) == -FI_EAGAIN;
}

/* Queues a deferred RMA write of *v into word w of b and a fetch-add of
 * *add into word w + 1 (its result in *res), at A's FI_REMOTE_WRITE
 * counter >= thr, counted on comp. */
static int tm_queue(struct tg_side *a, struct tg_side *b, uint64_t thr, struct fid_cntr *comp,
		    uint64_t *v, uint64_t *add, uint64_t *res, int w, struct fi_deferred_work *dw)
{
	struct iovec iov = { v, 8 };
	struct fi_rma_iov rma = { (uintptr_t)(b->buf + w), 8, fi_mr_key(b->mr) };
	struct fi_ioc ioc = { add, 1 }, rioc = { res, 1 };
	struct fi_rma_ioc arma = { (uintptr_t)(b->buf + w + 1), 1, fi_mr_key(b->mr) };
	struct fi_op_rma op = { .ep = a->ep, .msg = { .msg_iov = &iov, .iov_count = 1,
						      .addr = a->peer, .rma_iov = &rma,
						      .rma_iov_count = 1, .context = &dw[0] },
				.flags = FI_COMPLETION };
	struct fi_op_fetch_atomic fa = {
		.ep = a->ep, .msg = { .msg_iov = &ioc, .iov_count = 1, .addr = a->peer,
				      .rma_iov = &arma, .rma_iov_count = 1, .datatype = FI_UINT64,
				      .op = FI_SUM, .context = &dw[1] },
		.fetch = { .msg_iov = &rioc, .iov_count = 1 }, .flags = FI_COMPLETION,
	};
	pthread_t th;
	int ret;

	dw[0] = (struct fi_deferred_work){ .threshold = thr, .triggering_cntr = a->rw,
					   .completion_cntr = comp, .op_type = FI_OP_WRITE,
					   .op.rma = &op };
	dw[1] = dw[0];
	dw[1].op_type = FI_OP_FETCH_ATOMIC;
	dw[1].op.fetch_atomic = &fa;
	cn_stop = 0;
	if (pthread_create(&th, NULL, cn_progress, b->rw))
		return -1;
	ret = fi_control(&a->s.dom->fid, FI_QUEUE_WORK, &dw[0]);
	ret = ret ? ret : fi_control(&a->s.dom->fid, FI_QUEUE_WORK, &dw[1]);
	cn_stop = 1;
	pthread_join(th, NULL);
	return ret;
}

static void trig_more_checks(void)
{
	struct fi_info *h = hints_rdm(), *info = NULL;
	struct fid_fabric *fab = NULL;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct tg_side a = { 0 }, b = { 0 };
	struct fid_cntr *k[TM_X] = { NULL }, *comp = NULL;
	struct fid_ep *x[TM_X] = { NULL };
	fi_addr_t bx = FI_ADDR_NOTAVAIL;
	struct fi_triggered_context tc[8];
	struct fi_deferred_work dw[2];
	struct fi_cq_tagged_entry e;
	uint64_t one = 1, five = 5, swap = 0x77, cmp = 105, r1 = 0, r2 = 0, add = 1, r3 = 0;
	uint64_t v = 0xdefe44ed, vt[6] = { 0x71, 0x72, 0x73, 0x74, 0x75, 0x76 }, base, kb;
	uint8_t name[64];
	size_t len = sizeof(name);
	void *want[4];
	double end;
	int i, ret;

	h->caps = FI_MSG | FI_RMA | FI_RMA_EVENT | FI_TRIGGER | FI_ATOMIC;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info) ||
	      fi_fabric(info->fabric_attr, &fab, NULL) || tg_open(fab, info, &a) ||
	      tg_open(fab, info, &b) || tg_link(&a, &b, true) ||
	      fi_cntr_open(a.s.dom, &ca, &comp, NULL);
	for (i = 0; i < TM_X && !ret; i++)
		ret = fi_cntr_open(a.s.dom, &ca, &k[i], NULL) ||
		      !(x[i] = cn_ep(&a.s, info, k[i], FI_REMOTE_WRITE));
	ret = ret || fi_getname(&x[0]->fid, name, &len) ||
	      fi_av_insert(b.s.av, name, 1, &bx, 0, NULL) != 1;
	/* B's connections to A and to X0, their progress on another thread. */
	ret = ret || tm_write(&b, b.peer, &a, &one, 0, a.rw) || tm_write(&b, bx, &a, &one, 0, k[0]);
	if (ret) {
		CHECK(0, "FI_TRIGGER | FI_ATOMIC endpoints set up");
		goto out;
	}
	/* Triggered atomics. */
	b.buf[1] = 100;
	base = fi_cntr_read(a.rw);
	ret = tm_atomic(&a, &b, &tc[0], a.rw, base + 2, 1, &five, NULL, &r1);
	CHECK(!ret && tm_stat(a.rw, 0) == 1 && tm_stat(a.rw, 1) == 1 && !tm_stat(a.rw, 2) &&
	      b.buf[1] == 100,
	      "FI_TRIGGER fi_fetch_atomicmsg FI_SUM 5 at A's counter >= %llu: %d, held by the adapter "
	      "(in hardware %llu, held %llu), the target untouched", (unsigned long long)(base + 2), ret,
	      (unsigned long long)tm_stat(a.rw, 0), (unsigned long long)tm_stat(a.rw, 1));
	ret = ret ? ret : tg_write(&b, &a, &one, 0);
	CHECK(!ret && !tg_arrives(&b, 1, 105, 1), "one of B's 2 writes: the fetch-add still held");
	ret = ret ? ret : tg_write(&b, &a, &one, 0);
	CHECK(!ret && tg_arrives(&b, 1, 105, 10),
	      "B's second write fired the held fetch-add with no call on A: the target %llu (105)",
	      (unsigned long long)b.buf[1]);
	ret = ret ? ret : wait_one(a.s.cq, &e, 20);
	CHECK(!ret && e.op_context == &tc[0] && (e.flags & (FI_ATOMIC | FI_READ)) ==
	      (FI_ATOMIC | FI_READ) && r1 == 100 && tm_stat(a.rw, 1) == 0,
	      "its completion (triggered context, FI_ATOMIC | FI_READ): %d, fetched %llu (100), "
	      "WAIT_CNTs held %llu (0)", ret, (unsigned long long)r1,
	      (unsigned long long)tm_stat(a.rw, 1));
	ret = tm_atomic(&a, &b, &tc[1], a.rw, base + 3, 1, &swap, &cmp, &r2);
	CHECK(!ret && tm_stat(a.rw, 0) == 2 && tm_stat(a.rw, 1) == 1 && !tg_arrives(&b, 1, swap, 1),
	      "FI_TRIGGER fi_compare_atomicmsg FI_CSWAP 105 -> 0x77 at %llu: %d, held (in hardware "
	      "%llu)", (unsigned long long)(base + 3), ret, (unsigned long long)tm_stat(a.rw, 0));
	ret = ret ? ret : tg_write(&b, &a, &one, 0);
	CHECK(!ret && tg_arrives(&b, 1, swap, 10) && !wait_one(a.s.cq, &e, 20) &&
	      e.op_context == &tc[1] && r2 == 105,
	      "B's write fired it with no call on A: the target %#llx (0x77), fetched %llu (105)",
	      (unsigned long long)b.buf[1], (unsigned long long)r2);
	/* Deferred work. */
	b.buf[3] = 40;
	base = fi_cntr_read(a.rw);
	ret = tm_queue(&a, &b, base + 1, comp, &v, &add, &r3, 2, dw);
	CHECK(!ret && tm_stat(a.rw, 0) == 4 && tm_stat(a.rw, 1) == 2 && !tg_arrives(&b, 2, v, 1) &&
	      b.buf[3] == 40,
	      "fi_control(FI_QUEUE_WORK) FI_OP_WRITE and FI_OP_FETCH_ATOMIC at A's counter >= %llu: "
	      "%d, both held by the adapter (in hardware %llu, held %llu), nothing sent",
	      (unsigned long long)(base + 1), ret, (unsigned long long)tm_stat(a.rw, 0),
	      (unsigned long long)tm_stat(a.rw, 1));
	ret = ret ? ret : tg_write(&b, &a, &one, 0);
	CHECK(!ret && tg_arrives(&b, 2, v, 10) && tg_arrives(&b, 3, 41, 10),
	      "B's write fired both with no call on A: the written word and the sum 41 at B");
	ret = ret ? ret : fi_cntr_wait(comp, 2, 10000);
	want[0] = &dw[0];
	want[1] = &dw[1];
	CHECK(!ret && fi_cntr_read(comp) == 2 && !fi_cntr_readerr(comp) && r3 == 40 &&
	      tm_done(a.s.cq, want, 2, 0) && tm_stat(a.rw, 1) == 0,
	      "the work's completion counter %llu (2, errors %llu), fetched %llu (40), both "
	      "completions with their contexts, WAIT_CNTs held %llu (0)",
	      (unsigned long long)fi_cntr_read(comp), (unsigned long long)fi_cntr_readerr(comp),
	      (unsigned long long)r3, (unsigned long long)tm_stat(a.rw, 1));
	/* A trigger connection per counter: A's counter twice, X0's, X1's and
	 * X2's (4 connections to B), then X3's stays in software. */
	base = fi_cntr_read(a.rw);
	kb = fi_cntr_read(k[0]);
	ret = tm_trigger(&a, &b, &tc[2], a.rw, base + 1, 4, &vt[0]) ||
	      tm_trigger(&a, &b, &tc[3], a.rw, base + 2, 5, &vt[1]) ||
	      tm_trigger(&a, &b, &tc[4], k[0], kb + 1, 6, &vt[2]) ||
	      tm_trigger(&a, &b, &tc[5], k[1], 100, 7, &vt[3]) ||
	      tm_trigger(&a, &b, &tc[6], k[2], 100, 7, &vt[4]) ||
	      tm_trigger(&a, &b, &tc[7], k[3], 1, 7, &vt[5]);
	CHECK(!ret && tm_stat(a.rw, 0) == 6 && tm_stat(k[0], 0) == 1 && tm_stat(k[1], 0) == 1 &&
	      tm_stat(k[2], 0) == 1 && !tm_stat(k[3], 0) && tm_stat(k[3], 2) == 1,
	      "triggered writes to B on 4 counters of A's domain: held by the adapter (A's counter "
	      "in hardware %llu, X0's %llu, X1's %llu, X2's %llu); a 5th counter to the same peer in "
	      "software (in software %llu, in hardware %llu)", (unsigned long long)tm_stat(a.rw, 0),
	      (unsigned long long)tm_stat(k[0], 0), (unsigned long long)tm_stat(k[1], 0),
	      (unsigned long long)tm_stat(k[2], 0), (unsigned long long)tm_stat(k[3], 2),
	      (unsigned long long)tm_stat(k[3], 0));
	/* No call on A from here until the data is at B. */
	ret = ret ? ret : tm_write(&b, bx, &a, &one, 0, NULL);
	CHECK(!ret && tg_arrives(&b, 6, vt[2], 10) && !b.buf[4] && !b.buf[5],
	      "B's write to X0 fired the trigger on X0's counter, posted after two on A's counter "
	      "still held on their own connection: words %#llx %#llx %#llx (0 0 0x73)",
	      (unsigned long long)b.buf[4], (unsigned long long)b.buf[5], (unsigned long long)b.buf[6]);
	ret = ret ? ret : tg_write(&b, &a, &one, 0);
	CHECK(!ret && tg_arrives(&b, 4, vt[0], 10) && !tg_arrives(&b, 5, vt[1], 1),
	      "B's write to A fired A's first trigger (threshold %llu) and not its second (%llu)",
	      (unsigned long long)(base + 1), (unsigned long long)(base + 2));
	ret = ret ? ret : tg_write(&b, &a, &one, 0);
	CHECK(!ret && tg_arrives(&b, 5, vt[1], 10) && !b.buf[7],
	      "B's next write fired the second, in threshold order; X1's and X2's still held");
	/* A's progress fires the 5th counter's trigger once it is moved. */
	fi_cntr_add(k[3], 1);
	for (end = now() + 10; !ret && b.buf[7] != vt[5] && now() < end;)
		fi_cntr_read(a.wr);
	want[0] = &tc[2];
	want[1] = &tc[3];
	want[2] = &tc[4];
	want[3] = &tc[7];
	CHECK(!ret && tg_arrives(&b, 7, vt[5], 10) && tm_done(a.s.cq, want, 4, FI_WRITE) &&
	      tm_stat(a.rw, 1) == 0 && tm_stat(k[0], 1) == 0 && tm_stat(k[1], 1) == 1,
	      "the 5th counter's trigger fired by software at its threshold; 4 completions with "
	      "their contexts; X1's and X2's WAIT_CNTs still held (%llu %llu)",
	      (unsigned long long)tm_stat(k[1], 1), (unsigned long long)tm_stat(k[2], 1));
out:
	if (a.ep)
		fi_close(&a.ep->fid);
	a.ep = NULL;
	for (i = 0; i < TM_X; i++) {
		if (x[i])
			fi_close(&x[i]->fid);
		if (k[i])
			fi_close(&k[i]->fid);
	}
	if (comp)
		fi_close(&comp->fid);
	tg_close(&a);
	tg_close(&b);
	if (fab)
		fi_close(&fab->fid);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

/* A held triggered atomic's error paths, as a held write's: A's fetch-add
 * held at 5, then a software count on its counter (deferred work's
 * completion), is taken back into software and applied once when
 * fi_cntr_add 4 takes the counter to 5, its fetched value exact; C's fetch-add held to D,
 * whose endpoint then closes, is taken back with no completion and fails
 * at its threshold as a software trigger to a gone peer does. */
static void trig_atomic_err_checks(void)
{
	struct fi_info *h = hints_rdm(), *info = NULL;
	struct fid_fabric *fab = NULL;
	struct tg_side a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };
	struct fi_triggered_context tc, tc2;
	struct fi_weft_cntr_stats st = { 0 };
	struct fi_cq_tagged_entry e;
	uint64_t two = 2, r = 0, r2 = 0;
	double end;
	int ret, got;

	h->caps = FI_MSG | FI_RMA | FI_RMA_EVENT | FI_TRIGGER | FI_ATOMIC;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info) ||
	      fi_fabric(info->fabric_attr, &fab, NULL) || tg_open(fab, info, &a) ||
	      tg_open(fab, info, &b) || tg_open(fab, info, &c) || tg_open(fab, info, &d) ||
	      tg_link(&a, &b, false) || tg_link(&c, &d, false);
	if (ret) {
		CHECK(0, "FI_TRIGGER | FI_ATOMIC endpoints set up (error paths)");
		goto out;
	}
	b.buf[0] = 10;
	ret = tm_atomic(&a, &b, &tc, a.rw, 5, 0, &two, NULL, &r);
	got = ret || cn_stats(a.rw, &st) ? -1 : (int)st.trig_held;
	ret = ret ? ret : tg_sw_count(&a, a.rw);
	ret = ret ? ret : fi_cntr_add(a.rw, 4);
	ret = ret ? ret : wait_one(a.s.cq, &e, 20);
	CHECK(!ret && got == 1 && e.op_context == &tc && r == 10 && b.buf[0] == 12 &&
	      fi_cq_read(a.s.cq, &e, 1) == -FI_EAGAIN && !cn_stats(a.rw, &st) &&
	      st.trig_recalled == 1 && !st.trig_held,
	      "a held triggered fetch-add (held %d) under a software count, then fi_cntr_add 4: taken "
	      "back (recalled %llu), applied once by software at 5: fetched %llu (10), target %llu "
	      "(12), one completion", got,
	      (unsigned long long)st.trig_recalled, (unsigned long long)r,
	      (unsigned long long)b.buf[0]);
	ret = tm_atomic(&c, &d, &tc2, c.rw, 1, 0, &two, NULL, &r2);
	ret = ret ? ret : fi_close(&d.ep->fid);
	d.ep = NULL;
	for (end = now() + 10; !ret && now() < end;) {
		fi_cntr_read(c.wr);
		if (cn_stats(c.rw, &st) || !st.trig_held)
			break;
	}
	got = (int)fi_cq_read(c.s.cq, &e, 1);
	CHECK(!ret && st.trig_hw == 1 && !st.trig_held && st.trig_recalled == 1 && got == -FI_EAGAIN,
	      "the peer of a held fetch-add closes its endpoint: taken back into software (held %llu, "
	      "taken back %llu), nothing completed (%d)", (unsigned long long)st.trig_held,
	      (unsigned long long)st.trig_recalled, got);
	fi_cntr_add(c.rw, 1);
	got = ret ? ret : wait_one(c.s.cq, &e, 20);
	CHECK(got == FI_ECONNRESET && e.op_context == &tc2 && !r2,
	      "at its threshold it fails as a software trigger to a gone peer: %d (FI_ECONNRESET %d), "
	      "its context, nothing fetched", got, FI_ECONNRESET);
out:
	tg_close(&a);
	tg_close(&b);
	tg_close(&c);
	tg_close(&d);
	if (fab)
		fi_close(&fab->fid);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

/* A new endpoint at a dead peer's very name (docs/libfabric.md "Names"):
 * target T holds a peer entry for endpoint A (A wrote to it and sent it a
 * message), T posts a receive directed to A, and A is closed; then B, in
 * a new domain, is bound to A's exact address and port (src_addr, A's
 * name).  B's writes and sends to T and T's to B must succeed, while T's
 * receive directed to A, a second one posted after B connected (with
 * B's message of the same tag waiting) and T's send and write to A fail
 * with FI_ECONNRESET; T's send to A's address and port given as node and
 * service (no incarnation: whoever listens there) reaches B.  Every CQ is read by a thread of its own (sn_prog),
 * as a connecting call waits for its peer's progress. */
#define SN_ENTS 32

struct sn_prog {
	struct fid_cq *cq;
	volatile int stop;
	int n;				/* entries recorded (written by the thread) */
	void *ctx[SN_ENTS];
	int err[SN_ENTS];
	pthread_t th;
	bool on;
};

static void *sn_progress(void *arg)
{
	struct sn_prog *p = arg;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	while (!p->stop) {
		ssize_t r = fi_cq_read(p->cq, &e, 1);
		int n = p->n;

		if (r == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(p->cq, &err, 0) != 1)
				continue;
			e.op_context = err.op_context;
		} else if (r != 1) {
			sched_yield();
			continue;
		}
		if (n == SN_ENTS)
			continue;
		p->ctx[n] = e.op_context;
		p->err[n] = r == 1 ? 0 : err.err ? err.err : FI_EIO;
		__atomic_store_n(&p->n, n + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int sn_start(struct sn_prog *p, struct fid_cq *cq)
{
	memset(p, 0, sizeof(*p));
	p->cq = cq;
	p->on = !pthread_create(&p->th, NULL, sn_progress, p);
	return p->on ? 0 : -1;
}

static void sn_stop(struct sn_prog *p)
{
	if (p->on) {
		p->stop = 1;
		pthread_join(p->th, NULL);
		p->on = false;
	}
}

/* The completion of ctx within secs: 0, its error (positive), or
 * -FI_ETIMEDOUT. */
static int sn_wait(struct sn_prog *p, void *ctx, double secs)
{
	double end = now() + secs;
	int i;

	do {
		int n = __atomic_load_n(&p->n, __ATOMIC_ACQUIRE);

		for (i = 0; i < n; i++)
			if (p->ctx[i] == ctx)
				return p->err[i];
	} while (now() < end && !usleep(1000));
	return -FI_ETIMEDOUT;
}

/* An operation's result: its return, else its completion's (negated). */
static int sn_op(ssize_t posted, struct sn_prog *p, void *ctx)
{
	int ret = posted ? (int)posted : sn_wait(p, ctx, 30);

	return ret > 0 ? -ret : ret;
}

static void same_name_checks(void)
{
	struct fi_info *h = hints_rdm(), *info = NULL, *binfo = NULL;
	struct fid_fabric *fab = NULL;
	struct cn_side t = { 0 }, a = { 0 }, b = { 0 };
	struct fid_ep *ta_ep = NULL, *a_ep = NULL, *b_ep = NULL;	/* T, A, B */
	struct fid_mr *tmr = NULL, *bmr = NULL;
	struct sn_prog pt = { 0 }, pa = { 0 }, pb = { 0 };
	uint64_t *tgt = aligned_alloc(64, 64), *bmem = aligned_alloc(64, 64);
	uint64_t va = 0xa1a1a1a1a1a1a1a1ull, vb = 0xb2b2b2b2b2b2b2b2ull, vt = 0x7373737373737373ull;
	uint8_t tname[64], aname[64], bname[64];
	char fromb[16] = "sent by B", gotb[16] = { 0 }, fromt[16] = "sent by T", gott[16] = { 0 };
	char froma[16] = "sent by A", gota[16] = { 0 }, gota2[16] = { 0 }, small[8] = { 0 };
	size_t tlen = sizeof(tname), alen = sizeof(aname), blen = sizeof(bname);
	fi_addr_t t_at_a, t_at_b, a_at_t, b_at_t;
	struct sockaddr_in place = { .sin_family = AF_INET };
	char host[INET_ADDRSTRLEN] = "", svc[8], astr[96] = "", pstr[96] = "";
	char fromp[20] = "sent to A's port", gotp[20] = { 0 };
	size_t slen = sizeof(astr), plen = sizeof(pstr);
	fi_addr_t t_at_place;
	int rp = -1, rps = -1;
	int c[15], ra = -1, rr = -1, rw = -1, rs = -1, r2 = -1, rbw = -1, rbs = -1, rbr = -1;
	int rts = -1, rtr = -1, rta = -1, rtaw = -1;
	struct sockaddr_in *sa = (struct sockaddr_in *)aname, *sb = (struct sockaddr_in *)bname;

	h->caps = FI_TAGGED | FI_MSG | FI_RMA | FI_DIRECTED_RECV;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	if (!tgt || !bmem || fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info) ||
	    fi_fabric(info->fabric_attr, &fab, NULL) || cn_side_open(fab, info, &t) ||
	    cn_side_open(fab, info, &a) || cn_side_open(fab, info, &b) ||
	    !(ta_ep = cn_ep(&t, info, NULL, 0)) || !(a_ep = cn_ep(&a, info, NULL, 0)) ||
	    fi_mr_reg(t.dom, tgt, 64, FI_REMOTE_WRITE, 0, 0, 0, &tmr, NULL) ||
	    fi_getname(&ta_ep->fid, tname, &tlen) || fi_getname(&a_ep->fid, aname, &alen) ||
	    fi_av_insert(a.av, tname, 1, &a_at_t, 0, NULL) != 1 ||
	    fi_av_insert(b.av, tname, 1, &b_at_t, 0, NULL) != 1 ||
	    fi_av_insert(t.av, aname, 1, &t_at_a, 0, NULL) != 1 ||
	    sn_start(&pt, t.cq) || sn_start(&pa, a.cq)) {
		CHECK(0, "same name: endpoints T and A set up");
		goto out;
	}
	memset(tgt, 0, 64);
	memset(bmem, 0, 64);
	/* T's peer entry for A: A writes to T and sends it a message. */
	rr = (int)fi_trecv(ta_ep, gota, sizeof(gota), NULL, t_at_a, 1, 0, &c[0]);
	ra = sn_op(fi_write(a_ep, &va, 8, NULL, a_at_t, (uintptr_t)tgt, fi_mr_key(tmr), &c[1]),
		   &pa, &c[1]);
	ra = ra ? ra : sn_op(fi_tsend(a_ep, froma, sizeof(froma), NULL, a_at_t, 1, &c[2]), &pa,
			     &c[2]);
	rr = sn_op(rr, &pt, &c[0]);
	CHECK(!ra && !rr && tgt[0] == va && !strcmp(gota, froma),
	      "same name: A wrote to T and sent it a message: %d, T received it: %d (0, 0)", ra, rr);
	/* A receive of T directed to A; then A goes away. */
	r2 = (int)fi_trecv(ta_ep, gota2, sizeof(gota2), NULL, t_at_a, 7, 0, &c[3]);
	sn_stop(&pa);
	fi_close(&a_ep->fid);
	a_ep = NULL;
	r2 = sn_op(r2, &pt, &c[3]);
	CHECK(r2 == -FI_ECONNRESET, "same name: A closed, T's receive directed to A fails: %s "
	      "(FI_ECONNRESET)", fi_strerror(-r2));
	/* B at A's very address and port. */
	binfo = fi_dupinfo(info);
	if (binfo) {
		free(binfo->src_addr);
		binfo->src_addr = malloc(alen);
		if (binfo->src_addr)
			memcpy(binfo->src_addr, aname, alen);
		binfo->src_addrlen = alen;
	}
	if (!binfo || !binfo->src_addr || !(b_ep = cn_ep(&b, binfo, NULL, 0)) ||
	    fi_getname(&b_ep->fid, bname, &blen) || blen != alen ||
	    fi_mr_reg(b.dom, bmem, 64, FI_REMOTE_WRITE, 0, 0, 0, &bmr, NULL) ||
	    fi_av_insert(t.av, bname, 1, &t_at_b, 0, NULL) != 1 || sn_start(&pb, b.cq)) {
		CHECK(0, "same name: endpoint B at A's address and port set up");
		goto out;
	}
	place.sin_addr = sa->sin_addr;
	place.sin_port = sa->sin_port;
	snprintf(svc, sizeof(svc), "%u", ntohs(sa->sin_port));
	CHECK(sa->sin_addr.s_addr == sb->sin_addr.s_addr && sa->sin_port == sb->sin_port &&
	      memcmp(aname, bname, blen), "same name: B is bound to A's address and port (%u), its "
	      "name differs from A's (its incarnation): %s", ntohs(sb->sin_port),
	      memcmp(aname, bname, blen) ? "yes" : "no");
	/* T's second receive directed to A, then one directed to B, then B's
	 * message of that tag: only B's receive may take it. */
	rbr = (int)fi_trecv(ta_ep, gota2, sizeof(gota2), NULL, t_at_a, 7, 0, &c[4]);
	rtr = (int)fi_trecv(ta_ep, gotb, sizeof(gotb), NULL, t_at_b, 7, 0, &c[5]);
	rbw = sn_op(fi_write(b_ep, &vb, 8, NULL, b_at_t, (uintptr_t)(tgt + 1), fi_mr_key(tmr),
			     &c[6]), &pb, &c[6]);
	rbs = sn_op(fi_tsend(b_ep, fromb, sizeof(fromb), NULL, b_at_t, 7, &c[7]), &pb, &c[7]);
	rtr = sn_op(rtr, &pt, &c[5]);
	rbr = sn_op(rbr, &pt, &c[4]);
	CHECK(!rbw && tgt[1] == vb && !rbs && !rtr && !strcmp(gotb, fromb),
	      "same name: B's write to T: %d, data placed: %s; B's send to T: %d, T's receive "
	      "directed to B got it: %d (0: %s)", rbw, tgt[1] == vb ? "yes" : "no", rbs, rtr,
	      !strcmp(gotb, fromb) ? "byte-exact" : "not B's bytes");
	CHECK(rbr == -FI_ECONNRESET && strcmp(gota2, fromb),
	      "same name: T's receive directed to A posted after B came fails: %s (FI_ECONNRESET), "
	      "B's message not delivered to it: %s", fi_strerror(-rbr),
	      strcmp(gota2, fromb) ? "yes" : "no");
	/* T to B: a send and a write. */
	rts = (int)fi_trecv(b_ep, gott, sizeof(gott), NULL, FI_ADDR_UNSPEC, 9, 0, &c[8]);
	rs = sn_op(fi_tsend(ta_ep, fromt, sizeof(fromt), NULL, t_at_b, 9, &c[9]), &pt, &c[9]);
	rts = sn_op(rts, &pb, &c[8]);
	rw = sn_op(fi_write(ta_ep, &vt, 8, NULL, t_at_b, (uintptr_t)bmem, fi_mr_key(bmr), &c[10]),
		   &pt, &c[10]);
	CHECK(!rs && !rts && !strcmp(gott, fromt) && !rw && bmem[0] == vt,
	      "same name: T's send to B: %d, B received it: %d (%s); T's write to B: %d, data "
	      "placed: %s", rs, rts, !strcmp(gott, fromt) ? "byte-exact" : "not T's bytes", rw,
	      bmem[0] == vt ? "yes" : "no");
	/* A's address and port as an application gives them (node and
	 * service): whoever listens there now, B. */
	if (!inet_ntop(AF_INET, &sa->sin_addr, host, sizeof(host)) ||
	    fi_av_insertsvc(t.av, host, svc, &t_at_place, 0, NULL) != 1 ||
	    !fi_av_straddr(t.av, aname, astr, &slen) || !fi_av_straddr(t.av, &place, pstr, &plen)) {
		CHECK(0, "same name: A's address and port inserted as node and service");
	} else {
		rps = (int)fi_trecv(b_ep, gotp, sizeof(gotp), NULL, FI_ADDR_UNSPEC, 10, 0, &c[13]);
		rp = sn_op(fi_tsend(ta_ep, fromp, sizeof(fromp), NULL, t_at_place, 10, &c[14]), &pt,
			   &c[14]);
		rps = sn_op(rps, &pb, &c[13]);
		CHECK(!rp && !rps && !strcmp(gotp, fromp) && strstr(astr, "?inc=") &&
		      !strchr(pstr, '?'), "same name: T's send to A's address and port given as %s:%s "
		      "(%s, A's name %s) reaches whoever listens there, B: %d, %d (0, 0)", host, svc,
		      pstr, astr, rp, rps);
	}
	/* And T's operations to the dead A fail. */
	rta = sn_op(fi_tsend(ta_ep, small, sizeof(small), NULL, t_at_a, 11, &c[11]), &pt, &c[11]);
	rtaw = sn_op(fi_write(ta_ep, &vt, 8, NULL, t_at_a, (uintptr_t)bmem, fi_mr_key(bmr), &c[12]),
		     &pt, &c[12]);
	CHECK(rta == -FI_ECONNRESET && rtaw == -FI_ECONNRESET,
	      "same name: T's send and write to the dead A fail: %s, %s (FI_ECONNRESET)",
	      fi_strerror(-rta), fi_strerror(-rtaw));
out:
	sn_stop(&pa);
	sn_stop(&pb);
	sn_stop(&pt);
	if (a_ep)
		fi_close(&a_ep->fid);
	if (b_ep)
		fi_close(&b_ep->fid);
	if (ta_ep)
		fi_close(&ta_ep->fid);
	if (tmr)
		fi_close(&tmr->fid);
	if (bmr)
		fi_close(&bmr->fid);
	cn_side_close(&t);
	cn_side_close(&a);
	cn_side_close(&b);
	if (fab)
		fi_close(&fab->fid);
	fi_freeinfo(binfo);
	fi_freeinfo(info);
	fi_freeinfo(h);
	free(tgt);
	free(bmem);
}
