/* SPDX-License-Identifier: MIT */
/*
 * libweft operations beyond write/read, on the sim backend (one thread,
 * WEFT_SIMNET_F_SOLO).  Each test is one TAP point named after what it
 * checked; a failed check ends the program with the reason (weft_test.h).
 *
 *   tp       third-party read: B asks C to write into A; A's TARGET and
 *            B's SOURCE completions, C gets none; data byte-exact
 *   half     the four half-RDMA modes through the library calls
 *   cond     a conditional RDMA: the signal's completion reaches the
 *            target after the three member writes'; COND results
 *   redrive  item 90: an RDMA write that gets no completion is cancelled
 *            and redriven over the FIFO path; the data arrives once
 *   bcast    item 77: a broadcast to 3 targets, one target's
 *            acknowledgement dropped by a switch fault: that target alone
 *            is re-sent to, the others get the data exactly once
 *   mcast    a multicast to a group of 2 out of 3 nodes reaches only them
 *   slots    item 15: receive entries that become valid out of slot order
 *            (a later slot's header line written before an earlier one's)
 *            are taken per slot, in slot order, each once
 *   mr64k    item 21: weft_mr_reg_pages with 64 KiB pages takes exactly the
 *            64 KiB-aligned start of a buffer (-EINVAL elsewhere); an RDMA
 *            write into it, mid-page and across pages, is byte-exact
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libweft.h"
#include "priv.h"       /* item 15 reaches the window's receive FIFO */
#include "weft/xlate.h"
#include "weft_test.h"

#define JOB     0x4242u
#define MAXN    4
#define BUFSZ   (128u * 1024u)

struct net {
	struct weft_simnet *sn;
	unsigned int n;
	struct weft_dev *d[MAXN];
	struct weft_win *w[MAXN];
	uint8_t *buf[MAXN];
	uint64_t pvo[MAXN];
	uint32_t mr[MAXN];
	uint32_t rc[MAXN];
	uint16_t rk[MAXN];
};

static int net_open(struct net *t, unsigned int n, uint32_t bcast_from)
{
	char err[256];

	memset(t, 0, sizeof(*t));
	struct weft_simnet_attr a = { .nodes = n, .seed = 11, .delay_ns = 1000,
				      .flags = WEFT_SIMNET_F_SOLO };
	t->sn = weft_simnet_new(&a, err, sizeof(err));
	REQUIRE(t->sn, "sim backend: %s", err);
	t->n = n;
	for (unsigned int i = 0; i < n; i++) {
		t->d[i] = weft_simnet_open(t->sn, i, err, sizeof(err));
		REQUIRE(t->d[i], "open %u: %s", i, err);
		struct weft_win_attr wa = { .job_id = JOB, .recv_log2 = 8,
					    .flags = (bcast_from >> i) & 1 ? WEFT_WIN_F_BCAST : 0 };
		int r;
		t->w[i] = weft_win_open(t->d[i], &wa, &r);
		REQUIRE(t->w[i], "window %u: %s", i, strerror(-r));
		t->buf[i] = weft_dev_alloc(t->d[i], BUFSZ);
		REQUIRE(t->buf[i], "alloc");
		REQUIRE(weft_mr_reg(t->d[i], JOB, t->buf[i], BUFSZ, &t->pvo[i], &t->mr[i]) == 0, "reg");
		REQUIRE(weft_rcxt_alloc(t->w[i], &t->rc[i], &t->rk[i]) == 0, "rcxt");
	}
	return 0;
}

static void net_close(struct net *t)
{
	for (unsigned int i = 0; i < t->n; i++)
		weft_dev_close(t->d[i]);
	weft_simnet_free(t->sn);
}

static void pattern(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 13 + seed + (i >> 10));
}

/* Poll node i for one entry, waiting on the device clock up to ms. */
static int next_entry(struct net *t, unsigned int i, struct weft_entry *e, int ms)
{
	for (int k = 0; k < 100000; k++) {
		int r = weft_win_poll(t->w[i], e);

		if (r)
			return r;
		r = weft_win_wait(t->w[i], ms);
		if (r <= 0)
			return r;
	}
	return 0;
}

/* Let the whole net run until quiet; the entries of every node are kept
 * in order in ents[i][0..nents[i]). */
#define MAXE 256
static struct weft_entry ents[MAXN][MAXE];
static unsigned int nents[MAXN];

static void drain_all(struct net *t)
{
	for (int quiet = 0; quiet < 3;) {
		int any = 0;

		for (unsigned int i = 0; i < t->n; i++) {
			while (nents[i] < MAXE && weft_win_poll(t->w[i], &ents[i][nents[i]]) > 0) {
				nents[i]++;
				any = 1;
			}
		}
		if (any) {
			quiet = 0;
		} else {
			quiet++;
			weft_win_wait(t->w[0], 2);
		}
	}
}

static void clear_ents(void)
{
	memset(nents, 0, sizeof(nents));
}

static unsigned int count(unsigned int i, int type, unsigned int flags)
{
	unsigned int k = 0;

	for (unsigned int j = 0; j < nents[i]; j++)
		if (ents[i][j].type == type && (ents[i][j].flags & flags) == flags)
			k++;
	return k;
}

static int test_tp(void)
{
	struct net t;

	if (net_open(&t, 3, 0))
		return -1;
	/* A = 0 (data target), B = 1 (manager), C = 2 (data source). */
	pattern(t.buf[2], 50000, 5);
	memset(t.buf[0], 0, 50000);
	struct weft_tp_read op = {
		.rdma = { .node = weft_win_node(t.w[2]), .window = (uint16_t)weft_win_id(t.w[2]),
			  .local_rcxt = t.rc[1], .remote_rcxt = t.rc[2], .remote_rcxt_key = t.rk[2],
			  .notify = WEFT_COMP_BOTH, .local_pvo = t.pvo[0], .remote_pvo = t.pvo[2],
			  .length = 50000, .user_cookie = 0x7b },
		.tp_node = weft_win_node(t.w[0]), .tp_window = (uint16_t)weft_win_id(t.w[0]),
		.tp_rcxt = t.rc[0], .tp_rcxt_key = t.rk[0],
	};
	clear_ents();
	REQUIRE(weft_win_tp_read(t.w[1], &op) == 0, "post third-party read");
	drain_all(&t);
	REQUIRE(memcmp(t.buf[0], t.buf[2], 50000) == 0, "A holds C's data");
	REQUIRE(count(0, WEFT_ENT_COMPLETION, WEFT_ENT_F_TARGET) == 1, "A: one TARGET completion");
	REQUIRE(count(1, WEFT_ENT_COMPLETION, WEFT_ENT_F_SOURCE | WEFT_ENT_F_READ) == 1,
	      "B (the manager): one SOURCE completion");
	REQUIRE(nents[2] == 0, "C: no entry (%u)", nents[2]);
	REQUIRE(ents[1][0].tid == op.rdma.tid && ents[1][0].user_cookie == 0x7b, "B's fields");
	t_point("tp: B asked C to write 50000 B into A: A's TARGET and B's SOURCE completion, "
	       "none at C, data byte-exact");
	net_close(&t);
	return 0;
}

static int test_half(void)
{
	struct net t;
	static uint8_t got[BUFSZ];
	struct weft_fifo_rx rx = { .buf = got, .cap = sizeof(got) };
	struct weft_entry e;

	if (net_open(&t, 2, 0))
		return -1;
	uint16_t n1 = weft_win_node(t.w[1]), w1 = (uint16_t)weft_win_id(t.w[1]);
	/* 1. write, RDMA at the sender, into node 1's receive FIFO */
	pattern(t.buf[0], 20000, 1);
	struct weft_rdma op = { .node = n1, .window = w1, .local_rcxt = t.rc[0],
				.local_pvo = t.pvo[0], .length = 20000, .user_cookie = 1 };
	REQUIRE(weft_win_write_fifo(t.w[0], &op) == 0, "write_fifo");
	int done = 0, entries = 0;
	while (!done) {
		REQUIRE(next_entry(&t, 1, &e, 100) == 1, "DATA entry %d missing", entries);
		REQUIRE(e.type == WEFT_ENT_DATA && e.total == 20000 && e.tid == op.tid,
		      "DATA entry (type %d)", e.type);
		done = weft_fifo_rx_add(&rx, &e);
		REQUIRE(done >= 0, "reassembly refused an entry");
		entries++;
	}
	REQUIRE(entries == 11 && memcmp(got, t.buf[0], 20000) == 0,
	      "write_fifo: %d entries, data", entries);
	weft_fifo_rx_reset(&rx);
	/* 2. write, RDMA at the receiver: PUT */
	pattern(got, 30000, 2);
	memset(t.buf[1], 0, 30000);
	op = (struct weft_rdma){ .node = n1, .window = w1, .local_rcxt = t.rc[0],
				 .remote_rcxt = t.rc[1], .remote_rcxt_key = t.rk[1],
				 .notify = WEFT_COMP_BOTH, .remote_pvo = t.pvo[1], .length = 30000 };
	clear_ents();
	REQUIRE(weft_win_put(t.w[0], &op, got) == 0, "put");
	drain_all(&t);
	REQUIRE(memcmp(t.buf[1], got, 30000) == 0, "put: placed byte-exact");
	REQUIRE(count(0, WEFT_ENT_COMPLETION, WEFT_ENT_F_SOURCE) == 1 &&
	      count(1, WEFT_ENT_COMPLETION, WEFT_ENT_F_TARGET) == 1, "put: completions");
	/* 3. read, RDMA at the data source, into our receive FIFO */
	pattern(t.buf[1], 9000, 3);
	op = (struct weft_rdma){ .node = n1, .window = w1, .local_rcxt = t.rc[0],
				 .remote_rcxt = t.rc[1], .remote_rcxt_key = t.rk[1],
				 .notify = WEFT_COMP_SOURCE, .remote_pvo = t.pvo[1], .length = 9000 };
	clear_ents();
	REQUIRE(weft_win_read_fifo(t.w[0], &op) == 0, "read_fifo");
	drain_all(&t);
	for (unsigned int j = 0; j < nents[0]; j++)
		if (ents[0][j].type == WEFT_ENT_DATA)
			REQUIRE(weft_fifo_rx_add(&rx, &ents[0][j]) >= 0, "add");
	REQUIRE(rx.got == 9000 && memcmp(got, t.buf[1], 9000) == 0, "read_fifo: data");
	REQUIRE(nents[0] == 6 && ents[0][5].type == WEFT_ENT_COMPLETION &&
	      (ents[0][5].flags & WEFT_ENT_F_READ), "read_fifo: 5 DATA then the completion");
	weft_fifo_rx_reset(&rx);
	/* 4. read, RDMA at the destination: node 1's program answers */
	memset(t.buf[0], 0, 12000);
	op = (struct weft_rdma){ .node = n1, .window = w1, .local_rcxt = t.rc[0],
				 .notify = WEFT_COMP_BOTH, .local_pvo = t.pvo[0],
				 .remote_pvo = 0x5eed, .length = 12000 };
	REQUIRE(weft_win_read_put(t.w[0], &op) == 0, "read_put");
	REQUIRE(next_entry(&t, 1, &e, 100) == 1 && e.type == WEFT_ENT_READ_REQ,
	      "READ_REQ at the data source");
	REQUIRE(e.src_pvo == 0x5eed && e.total == 12000, "request fields");
	pattern(got, 12000, 4);
	REQUIRE(weft_win_put_reply(t.w[1], &e, got, t.rc[1], WEFT_COMP_TARGET) == 0, "put_reply");
	clear_ents();
	drain_all(&t);
	REQUIRE(memcmp(t.buf[0], got, 12000) == 0, "read_put: placed byte-exact");
	REQUIRE(count(0, WEFT_ENT_COMPLETION, WEFT_ENT_F_SOURCE | WEFT_ENT_F_READ) == 1 &&
	      count(1, WEFT_ENT_COMPLETION, WEFT_ENT_F_TARGET | WEFT_ENT_F_READ) == 1,
	      "read_put: completions at both ends");
	t_point("half: write_fifo (11 DATA entries), put, read_fifo (5 DATA + completion), "
	       "read_put (READ_REQ answered by put_reply): data byte-exact, completions");
	net_close(&t);
	return 0;
}

static int test_cond(void)
{
	struct net t;
	uint32_t mrc[3], tr[3];
	uint16_t mk[3], tk[3];

	if (net_open(&t, 2, 0))
		return -1;
	for (int i = 0; i < 3; i++) {
		REQUIRE(weft_rcxt_alloc(t.w[0], &mrc[i], &mk[i]) == 0, "member rcxt");
		REQUIRE(weft_rcxt_alloc(t.w[1], &tr[i], &tk[i]) == 0, "target rcxt");
	}
	uint16_t n1 = weft_win_node(t.w[1]), w1 = (uint16_t)weft_win_id(t.w[1]);
	pattern(t.buf[0], BUFSZ, 6);
	clear_ents();
	REQUIRE(weft_win_cond(t.w[0], 3, 3) == 0, "cond");
	for (int i = 0; i < 3; i++) {
		struct weft_rdma m = { .node = n1, .window = w1, .local_rcxt = mrc[i],
				       .remote_rcxt = tr[i], .remote_rcxt_key = tk[i],
				       .notify = WEFT_COMP_BOTH,
				       .local_pvo = t.pvo[0] + (uint64_t)i * 32768,
				       .remote_pvo = t.pvo[1] + (uint64_t)i * 32768,
				       .length = 30000, .user_cookie = 100u + (unsigned)i };
		REQUIRE(weft_win_rdma_write(t.w[0], &m) == 0, "member %d", i);
	}
	struct weft_rdma sig = { .node = n1, .window = w1, .local_rcxt = t.rc[0],
				 .remote_rcxt = t.rc[1], .remote_rcxt_key = t.rk[1],
				 .notify = WEFT_COMP_TARGET, .local_pvo = t.pvo[0] + 98304,
				 .remote_pvo = t.pvo[1] + 98304, .length = 64, .user_cookie = 999 };
	REQUIRE(weft_win_rdma_write(t.w[0], &sig) == 0, "signal");
	REQUIRE(weft_win_cond_ctl(t.w[0], WEFT_COND_OP_QUERY, 3, 0) == 0, "query");
	drain_all(&t);
	int sig_at = -1, last_member = -1;
	for (unsigned int j = 0; j < nents[1]; j++) {
		if (ents[1][j].type != WEFT_ENT_COMPLETION)
			continue;
		if (ents[1][j].user_cookie == 999)
			sig_at = (int)j;
		else
			last_member = (int)j;
	}
	REQUIRE(count(1, WEFT_ENT_COMPLETION, WEFT_ENT_F_TARGET) == 4, "four TARGET completions");
	REQUIRE(sig_at > last_member && last_member >= 0, "signal after the members (%d, %d)",
	      sig_at, last_member);
	for (int i = 0; i < 3; i++)
		REQUIRE(memcmp(t.buf[1] + i * 32768, t.buf[0] + i * 32768, 30000) == 0,
		      "member %d placed", i);
	REQUIRE(memcmp(t.buf[1] + 98304, t.buf[0] + 98304, 64) == 0, "signal placed");
	REQUIRE(count(0, WEFT_ENT_COND, 0) == 2, "two COND entries");
	REQUIRE(count(0, WEFT_ENT_COMPLETION, WEFT_ENT_F_SOURCE) == 3, "member SOURCE completions");
	struct weft_entry *q = NULL;
	for (unsigned int j = 0; j < nents[0]; j++)
		if (ents[0][j].type == WEFT_ENT_COND)
			q = &ents[0][j];
	REQUIRE(q && q->cond.expect == 3 && q->cond.tagged == 3, "query: 3 members tagged");
	t_point("cond: 3 member writes and a signal; the signal's completion came after the "
	       "members' at the target; query: expect %u tagged %u done %u state %u",
	       q->cond.expect, q->cond.tagged, q->cond.done, q->cond.state);
	net_close(&t);
	return 0;
}

static int test_redrive(void)
{
	struct net t;
	static uint8_t got[BUFSZ];
	struct weft_fifo_rx rx = { .buf = got, .cap = sizeof(got) };
	struct weft_rop rop;
	struct weft_entry e;

	if (net_open(&t, 2, 0))
		return -1;
	uint16_t n1 = weft_win_node(t.w[1]), w1 = (uint16_t)weft_win_id(t.w[1]);
	pattern(t.buf[0], 40000, 9);
	/* The target's rCxt is gone: RDMA packets for it are dropped, no
	 * completion can come. */
	REQUIRE(weft_rcxt_free(t.w[1], t.rc[1]) == 0, "free target rcxt");
	memset(&rop, 0, sizeof(rop));
	rop.rdma = (struct weft_rdma){ .node = n1, .window = w1, .local_rcxt = t.rc[0],
				       .remote_rcxt = t.rc[1], .remote_rcxt_key = t.rk[1],
				       .local_pvo = t.pvo[0], .remote_pvo = t.pvo[1],
				       .length = 40000, .user_cookie = 0xfeed };
	rop.timeout_ns = 200000;
	rop.max_tries = 1000;
	REQUIRE(weft_win_rop_post(t.w[0], &rop) == 0, "rop");
	clear_ents();
	drain_all(&t);
	REQUIRE(rop.state == WEFT_ROP_POSTED && rop.tries > 1, "retried without a completion (%u)",
	      rop.tries);
	REQUIRE(weft_win_rop_cancel(t.w[0], &rop) == 0, "cancel");
	REQUIRE(rop.state == WEFT_ROP_FAILED && rop.error == -ECANCELED, "cancelled");
	REQUIRE(weft_win_rop_cancel(t.w[0], &rop) == -EINVAL, "second cancel refused");
	/* Redrive over the FIFO path: no rCxt needed at the target. */
	struct weft_rdma op = rop.rdma;
	op.tid = 0;
	REQUIRE(weft_win_write_fifo(t.w[0], &op) == 0, "redrive");
	int done = 0, transfers = 0;
	clear_ents();
	drain_all(&t);
	for (unsigned int j = 0; j < nents[1]; j++) {
		REQUIRE(ents[1][j].type == WEFT_ENT_DATA && ents[1][j].user_cookie == 0xfeed,
		      "only the redriven data arrives (type %d)", ents[1][j].type);
		done = weft_fifo_rx_add(&rx, &ents[1][j]);
		transfers += done == 1;
	}
	REQUIRE(transfers == 1 && memcmp(got, t.buf[0], 40000) == 0, "data arrived once, byte-exact");
	REQUIRE(count(0, WEFT_ENT_ROP, 0) == 1, "one ROP entry");
	for (unsigned int j = 0; j < nents[0]; j++)
		if (ents[0][j].type == WEFT_ENT_ROP)
			REQUIRE(ents[0][j].rop == &rop && !strcmp(weft_status_name(ents[0][j].status), "CANCELLED"),
			      "ROP entry: cancelled (%u)", ents[0][j].status);
	REQUIRE(weft_win_poll(t.w[0], &e) == 0, "nothing left at the source");
	struct weft_win_stats st;
	weft_win_get_stats(t.w[0], &st);
	t_point("redrive: RDMA write retried %u times without completion, cancelled, redriven "
	       "over the FIFO path: 40000 B once (rop failed %" PRIu64 ")", rop.tries,
	       st.rop_failed);
	weft_fifo_rx_reset(&rx);
	net_close(&t);
	return 0;
}

/* Target side of a FIFO broadcast: reassemble, acknowledge each complete
 * transfer, count distinct transfers by cookie. */
struct target {
	struct weft_fifo_rx rx;
	uint8_t buf[16384];
	unsigned int delivered, acks;
	uint64_t last_cookie;
};

static int target_step(struct net *t, unsigned int i, struct target *tg, int ack)
{
	struct weft_entry e;

	while (weft_win_poll(t->w[i], &e) > 0) {
		if (e.type != WEFT_ENT_DATA)
			continue;
		int r = weft_fifo_rx_add(&tg->rx, &e);
		REQUIRE(r >= 0, "reassembly");
		if (r != 1)
			continue;
		if (tg->last_cookie != e.user_cookie) {
			tg->delivered++;
			tg->last_cookie = e.user_cookie;
		}
		if (ack) {
			REQUIRE(weft_bcast_ack(t->w[i], &e) == 0, "ack");
			tg->acks++;
		}
	}
	return 0;
}

static int run_bcast(unsigned int nodes, uint16_t dest, unsigned int group_mask, int drop_one)
{
	struct net t;
	static struct target tg[MAXN];
	static struct weft_bcast b;
	struct weft_entry e;

	if (net_open(&t, nodes, 1))
		return -1;
	memset(tg, 0, sizeof(tg));
	for (unsigned int i = 0; i < nodes; i++) {
		tg[i].rx.buf = tg[i].buf;
		tg[i].rx.cap = sizeof(tg[i].buf);
		if (dest != WEFT_BCAST_NODE && ((group_mask >> i) & 1))
			REQUIRE(weft_simnet_mcast_join(t.sn, dest - 0xF000u, i) == 0, "join");
	}
	pattern(t.buf[0], 10000, 8);
	memset(&b, 0, sizeof(b));
	b.fifo = 1;
	b.rdma = (struct weft_rdma){ .node = dest, .window = (uint16_t)weft_win_id(t.w[1]),
				     .local_rcxt = t.rc[0], .local_pvo = t.pvo[0],
				     .length = 10000, .user_cookie = 0xb0b };
	for (unsigned int i = 1; i < nodes; i++)
		if ((group_mask >> i) & 1)
			b.targets[b.nr_targets++] = weft_win_node(t.w[i]);
	b.timeout_ns = 10000000;        /* 10 ms */
	REQUIRE(weft_bcast_post(t.w[0], &b) == 0, "post");
	unsigned int last = nodes - 1;
	/* Every target gets the data; the last one's acknowledgement is lost
	 * on the switch (its port is down while it answers). */
	for (int round = 0; round < 200 && b.state == WEFT_BCAST_POSTED; round++) {
		weft_win_wait(t.w[0], 1);
		for (unsigned int i = 1; i < nodes; i++) {
			int fault = drop_one && i == last && tg[i].acks == 0 && tg[i].delivered == 0;

			if (fault && target_step(&t, i, &tg[i], 0))
				return -1;
			if (fault && tg[i].delivered) {
				REQUIRE(weft_simnet_set_port_up(t.sn, i, 0) == 0, "port down");
				REQUIRE(weft_bcast_ack(t.w[i], &(struct weft_entry){
					.type = WEFT_ENT_DATA, .src_node = weft_win_node(t.w[0]),
					.src_window = (uint16_t)weft_win_id(t.w[0]), .tid = b.first_tid,
					.user_cookie = 0xb0b }) == 0, "ack into the fault");
				tg[i].acks++;
				weft_win_wait(t.w[i], 1);
				REQUIRE(weft_simnet_set_port_up(t.sn, i, 1) == 0, "port up");
				continue;
			}
			if (!fault && target_step(&t, i, &tg[i], 1))
				return -1;
		}
		while (weft_win_poll(t.w[0], &e) > 0)
			weft_bcast_progress(t.w[0], &b, &e);
		weft_bcast_progress(t.w[0], &b, NULL);
	}
	REQUIRE(b.state == WEFT_BCAST_DONE, "broadcast acknowledged by all (state %d, %u/%u)",
	      b.state, b.acked, b.nr_targets);
	/* Let anything late arrive, then count. */
	for (int k = 0; k < 20; k++) {
		weft_win_wait(t.w[0], 1);
		for (unsigned int i = 1; i < nodes; i++)
			if (target_step(&t, i, &tg[i], 1))
				return -1;
	}
	for (unsigned int i = 1; i < nodes; i++) {
		int member = (group_mask >> i) & 1;

		REQUIRE(tg[i].delivered == (unsigned int)member, "node %u delivered %u", i,
		      tg[i].delivered);
		if (member)
			REQUIRE(memcmp(tg[i].buf, t.buf[0], 10000) == 0, "node %u data", i);
		REQUIRE(b.tries[0] >= 1, "tries");
	}
	if (drop_one) {
		REQUIRE(b.retries >= 1, "the silent target was re-sent to");
		for (unsigned int k = 0; k + 1 < b.nr_targets; k++)
			REQUIRE(b.tries[k] == 1, "target %u was not re-sent to (%u)", k, b.tries[k]);
		REQUIRE(b.tries[b.nr_targets - 1] >= 2, "the last target was");
		REQUIRE(tg[last].acks >= 2, "it acknowledged again");
	} else {
		REQUIRE(b.retries == 0, "no retry without a fault");
	}
	t_point("%s: %u targets acknowledged, %u unicast re-send(s) (only to the target whose "
	       "acknowledgement the switch dropped: %s), each member delivered once%s",
	       dest == WEFT_BCAST_NODE ? "bcast" : "mcast", b.acked, b.retries,
	       drop_one ? "yes" : "none dropped",
	       dest == WEFT_BCAST_NODE ? "" : ", the non-member nothing");
	for (unsigned int i = 0; i < nodes; i++)
		weft_fifo_rx_reset(&tg[i].rx);
	net_close(&t);
	return 0;
}

static int test_bcast(void)
{
	return run_bcast(4, WEFT_BCAST_NODE, 0xe, 1);
}

static int test_mcast(void)
{
	return run_bcast(4, 0xF000u + 9, 0xa, 0);
}

static int test_slots(void)
{
	struct net t;
	struct weft_entry e;
	struct weft_recv_hdr saved;
	uint64_t state, rc, sc;

	if (net_open(&t, 2, 0))
		return -1;
	uint16_t n1 = weft_win_node(t.w[1]), w1 = (uint16_t)weft_win_id(t.w[1]);
	for (uint32_t v = 0; v < 3; v++)
		REQUIRE(weft_win_send(t.w[0], n1, w1, &v, sizeof(v)) == 0, "send %u", v);
	/* Let the three packets land without taking them. */
	for (int k = 0; k < 50; k++) {
		REQUIRE(weft_win_state(t.w[1], &state, &rc, &sc) == 0, "state");
		if (rc == 3)
			break;
		weft_win_wait(t.w[0], 1);
	}
	REQUIRE(rc == 3, "three entries written (%" PRIu64 ")", rc);
	/* Slot 0's header line is "not yet written" while slots 1 and 2 are
	 * valid, as when receive tasks finish out of order. */
	uint8_t *slot0 = t.w[1]->bw.recv_fifo;
	memcpy(&saved, slot0, sizeof(saved));
	REQUIRE(saved.flags & WEFT_RF_VALID, "slot 0 was valid");
	memset(slot0, 0, sizeof(saved));
	for (int k = 0; k < 5; k++)
		REQUIRE(weft_win_poll(t.w[1], &e) == 0,
			"an entry was taken while slot 0 is not valid (type %d)", e.type);
	/* Slot 0's header line lands: all three come, in slot order. */
	memcpy(slot0, &saved, sizeof(saved));
	for (uint32_t v = 0; v < 3; v++) {
		uint32_t got;

		REQUIRE(weft_win_poll(t.w[1], &e) == 1, "entry %u", v);
		memcpy(&got, e.data, sizeof(got));
		REQUIRE(e.type == WEFT_ENT_PACKET && e.length == 4 && got == v,
			"slot order: got %u, want %u", got, v);
	}
	REQUIRE(weft_win_poll(t.w[1], &e) == 0, "each entry once");
	t_point("slots (item 15): slots 1 and 2 valid before slot 0: nothing taken, even though "
		"RECV_COUNT read 3; once slot 0 is valid the three come in slot order, once each");
	net_close(&t);
	return 0;
}

static int test_mr64k(void)
{
	const size_t page = 64u * 1024u, len = 2 * page;
	struct net t;
	struct weft_entry e;
	uint64_t pvo = 0;
	uint32_t h = 0;
	uint8_t *big, *at = NULL;
	int accepted = 0;

	if (net_open(&t, 2, 0))
		return -1;
	/* The sim backend's memory is 4 KiB aligned: of the 16 candidate
	 * starts in one 64 KiB span exactly one is 64 KiB aligned. */
	big = weft_dev_alloc(t.d[1], len + page);
	REQUIRE(big, "alloc");
	for (size_t off = 0; off < page; off += 4096) {
		uint64_t p;
		uint32_t hh;
		int r = weft_mr_reg_pages(t.d[1], JOB, big + off, len, 16, &p, &hh);

		if (r == 0) {
			accepted++;
			at = big + off;
			pvo = p;
			h = hh;
		} else {
			REQUIRE(r == -EINVAL, "offset %zu: %d, not -EINVAL", off, r);
		}
	}
	REQUIRE(accepted == 1 && at, "%d aligned starts accepted", accepted);
	REQUIRE((weft_pvo_offset(pvo) & (page - 1)) == 0, "PVO 0x%" PRIx64 " mid-page", pvo);
	uint64_t p20;
	uint32_t h20;
	REQUIRE(weft_mr_reg_pages(t.d[1], JOB, at, len, 20, &p20, &h20) == -EINVAL,
		"page_shift 20 refused");
	pattern(t.buf[0], 70000, 21);
	memset(at, 0, len);
	struct weft_rdma op = { .node = weft_win_node(t.w[1]),
				.window = (uint16_t)weft_win_id(t.w[1]),
				.local_rcxt = t.rc[0], .remote_rcxt = t.rc[1],
				.remote_rcxt_key = t.rk[1], .local_pvo = t.pvo[0],
				.remote_pvo = pvo + 50000, .length = 70000,
				.notify = WEFT_COMP_TARGET };
	REQUIRE(weft_win_rdma_write(t.w[0], &op) == 0, "write");
	REQUIRE(next_entry(&t, 1, &e, 100) == 1 && e.type == WEFT_ENT_COMPLETION &&
		e.status == 0, "target completion");
	REQUIRE(memcmp(at + 50000, t.buf[0], 70000) == 0, "data differs");
	size_t changed = 0;
	for (size_t i = 0; i < len; i++)
		changed += (i < 50000 || i >= 120000) && at[i] != 0;
	REQUIRE(changed == 0, "%zu bytes outside the write changed", changed);
	REQUIRE(weft_mr_dereg(t.d[1], h) == 0, "dereg");
	t_point("mr64k (item 21): weft_mr_reg_pages(16) accepted 1 of 16 starts (the 64 KiB "
		"aligned one, -EINVAL for the others); a 70000 B RDMA write at in-page offset "
		"50000, across two 64 KiB pages, is byte-exact");
	net_close(&t);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int (*fn)(void); } tests[] = {
		{ "tp", test_tp }, { "half", test_half }, { "cond", test_cond },
		{ "redrive", test_redrive }, { "bcast", test_bcast }, { "mcast", test_mcast },
		{ "slots", test_slots }, { "mr64k", test_mr64k },
	};
	if (!weft_simnet_available())
		t_bail("libweft was built without the sim backend");
	int ran = 0;
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (argc > 1 && strcmp(argv[1], tests[i].name))
			continue;
		ran++;
		if (tests[i].fn())
			t_abort();
	}
	if (!ran)
		t_bail("no test named %s", argc > 1 ? argv[1] : "");
	return t_done();
}
