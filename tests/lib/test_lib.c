/* SPDX-License-Identifier: MIT */
/*
 * libweft tests on the sim backend (one thread drives two simulated
 * adapters, WEFT_SIMNET_F_SOLO).  Each test is a TAP point named after what
 * it checked; a failed check ends the program with the reason (weft_test.h).
 *
 *   fifo      FIFO ping-pong, every payload size 0..1920 checked
 *   rdma      RDMA write/read ping-pong, completion selection
 *             none/source/target/both, cookies, tids, data
 *   tids      per-window tids strictly increase on every rCxt
 *   rel       10,000 messages exactly once, in order, 5% loss + reordering
 *   mrc       lazy deregistration: second transfer skips registration,
 *             remap after the mapping changed, idle aging
 *   maps      the kernel backend's mapping identity (/proc/self/maps) tells
 *             a new memfd mapping at an old address from the old one
 *   post-list reliable ops posted as lists: one doorbell each
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include <unistd.h>

#include "libweft.h"
#include "backend.h"    /* the kernel backend's mapping lookup and memfd memory */
#include "weft_test.h"

#define JOB 0x1234u

struct pair {
	struct weft_simnet *net;
	struct weft_dev *d[2];
	struct weft_win *w[2];
};

static int pair_open(struct pair *p, uint32_t drop_ppm, uint32_t routes, uint64_t jitter)
{
	char err[256];
	memset(p, 0, sizeof(*p));
	struct weft_simnet_attr a = { .nodes = 2, .seed = 7, .drop_ppm = drop_ppm,
				      .routes = routes, .delay_ns = 1000, .jitter_ns = jitter,
				      .flags = WEFT_SIMNET_F_SOLO };
	p->net = weft_simnet_new(&a, err, sizeof(err));
	REQUIRE(p->net, "sim backend not available: %s", err);
	for (int i = 0; i < 2; i++) {
		p->d[i] = weft_simnet_open(p->net, i, err, sizeof(err));
		REQUIRE(p->d[i], "open sim adapter %d: %s", i, err);
		struct weft_win_attr wa = { .job_id = JOB, .recv_log2 = 8 };
		int r;
		p->w[i] = weft_win_open(p->d[i], &wa, &r);
		REQUIRE(p->w[i], "open window on node %d: %s", i, strerror(-r));
	}
	return 0;
}

static void pair_close(struct pair *p)
{
	for (int i = 0; i < 2; i++)
		weft_dev_close(p->d[i]);        /* closes its windows */
	weft_simnet_free(p->net);
}

/* Poll w until an entry arrives (waiting on the device clock); 1 = got. */
static int get_entry(struct weft_win *w, struct weft_entry *e, int timeout_ms)
{
	for (int i = 0; i < 1000000; i++) {
		int r = weft_win_poll(w, e);
		if (r)
			return r;
		r = weft_win_wait(w, timeout_ms);
		if (r <= 0)
			return r;
	}
	return 0;
}

static int test_fifo(void)
{
	struct pair p;
	if (pair_open(&p, 0, 1, 0))
		return -1;
	static uint8_t buf[WEFT_LIB_MAX_PAYLOAD];
	static struct weft_entry e;
	uint16_t n1 = weft_win_node(p.w[1]), n0 = weft_win_node(p.w[0]);
	unsigned int trips = 0;
	for (unsigned int len = 0; len <= WEFT_LIB_MAX_PAYLOAD; len += (len < 130 ? 1 : 61)) {
		for (unsigned int i = 0; i < len; i++)
			buf[i] = (uint8_t)(i * 7 + len);
		REQUIRE(weft_win_send(p.w[0], n1, weft_win_id(p.w[1]), buf, len) == 0, "send %u", len);
		REQUIRE(get_entry(p.w[1], &e, 100) == 1, "no packet of %u bytes at node 1", len);
		CHECK(e.type == WEFT_ENT_PACKET && e.length == len && e.src_node == n0 &&
		      e.src_window == weft_win_id(p.w[0]), "packet header (type %d len %" PRIu64 ")",
		      e.type, e.length);
		CHECK(memcmp(e.data, buf, len) == 0, "payload of %u bytes differs", len);
		/* echo it back */
		REQUIRE(weft_win_send(p.w[1], e.src_node, e.src_window, e.data, len) == 0, "echo");
		REQUIRE(get_entry(p.w[0], &e, 100) == 1, "no echo of %u bytes", len);
		CHECK(e.length == len && memcmp(e.data, buf, len) == 0, "echo payload differs");
		trips++;
	}
	CHECK(weft_win_send(p.w[0], n1, 0, buf, WEFT_LIB_MAX_PAYLOAD + 1) == -EMSGSIZE,
	      "oversize send accepted");
	/* Many packets back to back: the receive FIFO (256 frames) is
	 * recycled several times through slot returns. */
	unsigned int got = 0, sent = 0;
	while (got < 2000) {
		while (sent < 2000 && sent - got < 128) {
			uint32_t v = sent;
			int r = weft_win_send(p.w[0], n1, weft_win_id(p.w[1]), &v, sizeof(v));
			if (r == -EAGAIN)
				break;
			REQUIRE(r == 0, "burst send: %s", strerror(-r));
			sent++;
		}
		int r = get_entry(p.w[1], &e, 100);
		REQUIRE(r == 1, "burst: packet %u missing", got);
		uint32_t v;
		memcpy(&v, e.data, sizeof(v));
		CHECK(e.length == 4 && v == got, "burst: got %u, want %u (no loss configured)", v, got);
		got++;
		while (weft_win_poll(p.w[0], &e) > 0)
			;
	}
	struct weft_win_stats st;
	weft_win_get_stats(p.w[1], &st);
	CHECK(st.slots_returned + 256 >= st.rx_packets, "slots not returned");
	t_point("fifo: %u round trips (0..1920 B) and a 2000-packet burst verified; "
	       "%" PRIu64 " slots returned in %" PRIu64 " doorbells",
	       trips, st.slots_returned, st.return_doorbells);
	pair_close(&p);
	return 0;
}

static int test_rdma(void)
{
	struct pair p;
	if (pair_open(&p, 0, 1, 0))
		return -1;
	const size_t len = 256 * 1024;
	uint8_t *b0 = weft_dev_alloc(p.d[0], len), *b1 = weft_dev_alloc(p.d[1], len);
	REQUIRE(b0 && b1, "weft_dev_alloc");
	uint64_t pvo0, pvo1;
	uint32_t h0, h1;
	REQUIRE(weft_mr_reg(p.d[0], JOB, b0, len, &pvo0, &h0) == 0, "reg 0");
	REQUIRE(weft_mr_reg(p.d[1], JOB, b1, len, &pvo1, &h1) == 0, "reg 1");
	uint32_t r0, r1;
	uint16_t k0, k1;
	REQUIRE(weft_rcxt_alloc(p.w[0], &r0, &k0) == 0, "rcxt 0");
	REQUIRE(weft_rcxt_alloc(p.w[1], &r1, &k1) == 0, "rcxt 1");
	static struct weft_entry e;
	unsigned int checks = 0;
	for (unsigned int notify = 0; notify <= WEFT_COMP_BOTH; notify++) {
		for (int is_read = 0; is_read < 2; is_read++) {
			size_t n = 1000 + notify * 4099 + (size_t)is_read * 77777;
			uint8_t *src = is_read ? b1 : b0, *dst = is_read ? b0 : b1;
			for (size_t i = 0; i < n; i++)
				src[i] = (uint8_t)(i ^ (i >> 8) ^ notify ^ is_read);
			memset(dst, 0, n);
			struct weft_rdma op = {
				.node = weft_win_node(p.w[1]), .window = (uint16_t)weft_win_id(p.w[1]),
				.local_rcxt = r0, .remote_rcxt = r1, .remote_rcxt_key = k1,
				.notify = (uint8_t)notify, .local_pvo = pvo0, .remote_pvo = pvo1,
				.length = n, .protocol_cookie = 0xabc0 + notify,
				.user_cookie = 0x1000 + notify * 2 + (uint64_t)is_read,
			};
			int r = is_read ? weft_win_rdma_read(p.w[0], &op) : weft_win_rdma_write(p.w[0], &op);
			REQUIRE(r == 0 && op.tid != 0, "post: %s", strerror(-r));
			int want_src = notify & WEFT_COMP_SOURCE, want_tgt = notify & WEFT_COMP_TARGET;
			int got_src = 0, got_tgt = 0;
			/* Run until both sides are quiet: a completion that should
			 * not come must not come. */
			for (int quiet = 0; quiet < 3;) {
				int any = 0;
				for (int s = 0; s < 2; s++) {
					while ((r = weft_win_poll(p.w[s], &e)) > 0) {
						any = 1;
						CHECK(e.type == WEFT_ENT_COMPLETION, "entry type %d", e.type);
						CHECK(e.status == 0, "status %s", weft_status_name(e.status));
						CHECK(e.tid == op.tid && e.user_cookie == op.user_cookie &&
						      e.protocol_cookie == op.protocol_cookie && e.length == n,
						      "completion fields (tid %u/%u cookie %" PRIx64 ")",
						      e.tid, op.tid, e.user_cookie);
						CHECK(!!(e.flags & WEFT_ENT_F_READ) == is_read, "READ flag");
						if (s == 0) {
							CHECK(e.flags & WEFT_ENT_F_SOURCE && e.rcxt == r0, "source flags");
							got_src++;
						} else {
							CHECK(e.flags & WEFT_ENT_F_TARGET && e.rcxt == r1, "target flags");
							got_tgt++;
						}
					}
					REQUIRE(r == 0, "poll error %d", r);
				}
				if (any)
					quiet = 0;
				else {
					quiet++;
					weft_win_wait(p.w[0], 2);
				}
			}
			CHECK(got_src == !!want_src && got_tgt == !!want_tgt,
			      "notify %u %s: %d source, %d target completions", notify,
			      is_read ? "read" : "write", got_src, got_tgt);
			CHECK(memcmp(src, dst, n) == 0, "data of %s (notify %u) differs",
			      is_read ? "read" : "write", notify);
			checks++;
		}
	}
	uint32_t last = weft_rcxt_last_tid(p.w[0], r0);
	CHECK(last >= 8, "tids were not recorded on the rCxt (%u)", last);
	weft_mr_dereg(p.d[0], h0);
	weft_mr_dereg(p.d[1], h1);
	t_point("rdma: write and read with completion none/source/target/both: %u cases, data, "
	       "cookies, tids and flags verified", checks);
	pair_close(&p);
	return 0;
}

/* A reliable op whose peer never answers gives up when its retry budget
 * is spent, long before max_tries. */
static int test_budget(void)
{
	struct pair p;
	if (pair_open(&p, 1000000, 1, 0))      /* the fabric drops everything */
		return -1;
	const size_t len = 4096;
	uint8_t *b0 = weft_dev_alloc(p.d[0], len), *b1 = weft_dev_alloc(p.d[1], len);
	REQUIRE(b0 && b1, "weft_dev_alloc");
	uint64_t pvo0, pvo1;
	uint32_t h0, h1, r0, r1;
	uint16_t k0, k1;
	REQUIRE(weft_mr_reg(p.d[0], JOB, b0, len, &pvo0, &h0) == 0, "reg 0");
	REQUIRE(weft_mr_reg(p.d[1], JOB, b1, len, &pvo1, &h1) == 0, "reg 1");
	REQUIRE(weft_rcxt_alloc(p.w[0], &r0, &k0) == 0, "rcxt 0");
	REQUIRE(weft_rcxt_alloc(p.w[1], &r1, &k1) == 0, "rcxt 1");
	const uint64_t budget = 50ull * 1000 * 1000;
	weft_win_set_retry(p.w[0], 1000000, 8000000, 0);
	weft_win_set_retry_budget(p.w[0], budget);
	static struct weft_rop rop;
	memset(&rop, 0, sizeof(rop));
	rop.rdma = (struct weft_rdma){
		.node = weft_win_node(p.w[1]), .window = (uint16_t)weft_win_id(p.w[1]),
		.local_rcxt = r0, .remote_rcxt = r1, .remote_rcxt_key = k1,
		.local_pvo = pvo0, .remote_pvo = pvo1, .length = len,
	};
	uint64_t t0 = weft_dev_now_ns(p.d[0]);
	REQUIRE(weft_win_rop_post(p.w[0], &rop) == 0, "post");
	static struct weft_entry e;
	int r = 0;
	do
		r = get_entry(p.w[0], &e, 1000);
	while (r > 0 && e.type != WEFT_ENT_ROP);
	uint64_t spent = weft_dev_now_ns(p.d[0]) - t0;
	CHECK(r > 0 && e.rop == &rop, "the op finished (poll %d)", r);
	CHECK(rop.state == WEFT_ROP_FAILED && rop.error == -ETIMEDOUT, "state %d error %d",
	      rop.state, rop.error);
	CHECK(rop.tries >= 3 && rop.tries < rop.max_tries, "%u tries of %u", rop.tries,
	      rop.max_tries);
	CHECK(spent >= budget && spent < 4 * budget, "gave up after %" PRIu64 " ns", spent);
	t_point("budget: op to a silent peer failed with ETIMEDOUT after %u tries, %.1f ms of "
	       "device time (budget %.1f ms)", rop.tries, spent / 1e6, budget / 1e6);
	weft_mr_dereg(p.d[0], h0);
	weft_mr_dereg(p.d[1], h1);
	pair_close(&p);
	return 0;
}

/* weft_win_rop_post_list: one doorbell per list, a partial post when the
 * send FIFO fills, none and the errno when the first op cannot go; every
 * op posted completes and its bytes land. */
static int test_post_list(void)
{
	enum { OPS = 96, LEN = 4096 };
	struct pair p;
	if (pair_open(&p, 0, 1, 0))
		return -1;
	uint8_t *b0 = weft_dev_alloc(p.d[0], OPS * LEN), *b1 = weft_dev_alloc(p.d[1], OPS * LEN);
	REQUIRE(b0 && b1, "weft_dev_alloc");
	for (size_t i = 0; i < OPS * LEN; i++)
		b0[i] = (uint8_t)(i * 7 + i / LEN);
	memset(b1, 0, OPS * LEN);
	uint64_t pvo0, pvo1;
	uint32_t h0, h1;
	REQUIRE(weft_mr_reg(p.d[0], JOB, b0, OPS * LEN, &pvo0, &h0) == 0, "reg 0");
	REQUIRE(weft_mr_reg(p.d[1], JOB, b1, OPS * LEN, &pvo1, &h1) == 0, "reg 1");
	static struct weft_rop rops[OPS];
	static struct weft_rop *list[OPS];
	for (unsigned int i = 0; i < OPS; i++) {
		uint32_t r0, r1;
		uint16_t k0, k1;
		REQUIRE(weft_rcxt_alloc(p.w[0], &r0, &k0) == 0, "rcxt 0.%u", i);
		REQUIRE(weft_rcxt_alloc(p.w[1], &r1, &k1) == 0, "rcxt 1.%u", i);
		memset(&rops[i], 0, sizeof(rops[i]));
		rops[i].rdma = (struct weft_rdma){
			.node = weft_win_node(p.w[1]), .window = (uint16_t)weft_win_id(p.w[1]),
			.local_rcxt = r0, .remote_rcxt = r1, .remote_rcxt_key = k1,
			.local_pvo = pvo0 + (uint64_t)i * LEN, .remote_pvo = pvo1 + (uint64_t)i * LEN,
			.length = LEN,
		};
		list[i] = &rops[i];
	}
	struct weft_win_stats s0, s1;
	weft_win_get_stats(p.w[0], &s0);
	int k = weft_win_rop_post_list(p.w[0], list, 16);
	weft_win_get_stats(p.w[0], &s1);
	CHECK_EQ(k, 16, "ops posted by a list of 16");
	CHECK_EQ(s1.tx_doorbells - s0.tx_doorbells, 1, "doorbells for a list of 16");
	CHECK_EQ(s1.tx_frames - s0.tx_frames, 16, "frames for a list of 16");
	/* The rest do not fit the 64-frame send FIFO: a part goes, one doorbell. */
	int k2 = weft_win_rop_post_list(p.w[0], list + 16, OPS - 16);
	weft_win_get_stats(p.w[0], &s0);
	CHECK(k2 > 0 && k2 < OPS - 16, "a list larger than the free send FIFO posted %d", k2);
	CHECK_EQ(s0.tx_doorbells - s1.tx_doorbells, 1, "doorbells for the partial list");
	CHECK_EQ(s0.tx_frames - s1.tx_frames, (uint64_t)(k2 > 0 ? k2 : 0), "frames of the partial list");
	/* An op already in flight cannot be posted: nothing goes, no doorbell. */
	int k3 = weft_win_rop_post_list(p.w[0], list, 4);
	weft_win_get_stats(p.w[0], &s1);
	CHECK_EQ(k3, -EBUSY, "a list whose first op is in flight");
	CHECK_EQ(s1.tx_doorbells - s0.tx_doorbells, 0, "doorbells for a refused list");
	unsigned int posted = 16 + (unsigned int)(k2 > 0 ? k2 : 0), done = 0;
	static struct weft_entry e;
	while (done < posted) {
		int r = get_entry(p.w[0], &e, 1000);
		REQUIRE(r > 0, "completion %u of %u (poll %d)", done, posted, r);
		if (e.type != WEFT_ENT_ROP)
			continue;
		CHECK(e.rop->state == WEFT_ROP_DONE, "op %td state %d", e.rop - rops, e.rop->state);
		done++;
	}
	CHECK(memcmp(b0, b1, (size_t)posted * LEN) == 0, "the %u ops' bytes landed", posted);
	t_point("post list: one doorbell for 16 ops; %d of %d posted when the send FIFO filled, "
		"one doorbell; a busy first op refused with EBUSY; %u ops done, data checked",
		k2, OPS - 16, posted);
	weft_mr_dereg(p.d[0], h0);
	weft_mr_dereg(p.d[1], h1);
	pair_close(&p);
	return 0;
}

static int test_tids(void)
{
	struct pair p;
	if (pair_open(&p, 0, 1, 0))
		return -1;
	uint32_t rc[4];
	uint16_t k;
	for (int i = 0; i < 4; i++)
		REQUIRE(weft_rcxt_alloc(p.w[0], &rc[i], &k) == 0, "alloc");
	uint32_t prev = 0;
	for (int i = 0; i < 100; i++) {
		uint32_t t = weft_rcxt_next_tid(p.w[0], rc[i % 4]);
		CHECK(t > prev, "tid %u after %u", t, prev);
		CHECK(weft_rcxt_last_tid(p.w[0], rc[i % 4]) == t, "last tid");
		prev = t;
	}
	CHECK(weft_rcxt_free(p.w[0], rc[0]) == 0 && weft_rcxt_free(p.w[0], rc[0]) == -ENOENT,
	      "free twice");
	t_point("tids: 100 tids strictly increasing over 4 rCxts");
	pair_close(&p);
	return 0;
}

static int test_rel(void)
{
	struct pair p;
	/* 5% loss; 4 routes with 20 us skew and jitter reorder packets. */
	if (pair_open(&p, 50000, 4, 20000))
		return -1;
	struct weft_rel_attr ra = { .slots = 16, .slot_size = 4096, .timeout_ns = 200000 };
	int r;
	struct weft_rel *a = weft_rel_new(p.w[0], &ra, &r);
	REQUIRE(a, "rel a: %s", strerror(-r));
	struct weft_rel *b = weft_rel_new(p.w[1], &ra, &r);
	REQUIRE(b, "rel b: %s", strerror(-r));
	struct weft_rel_info ia, ib;
	weft_rel_local_info(a, &ia);
	weft_rel_local_info(b, &ib);
	REQUIRE(weft_rel_connect(a, &ib) == 0 && weft_rel_connect(b, &ia) == 0, "connect");
	const uint64_t N = 10000;
	uint64_t sent = 0, got = 0;
	static uint8_t msg[4096], in[4096];
	uint64_t idle = 0;
	while (got < N) {
		int progress = 0;
		while (sent < N) {
			size_t len = 8 + (sent * 37) % 3000;
			memcpy(msg, &sent, 8);
			for (size_t i = 8; i < len; i++)
				msg[i] = (uint8_t)(sent + i);
			r = weft_rel_send(a, msg, len);
			if (r == -EAGAIN)
				break;
			REQUIRE(r == 0, "send %" PRIu64 ": %s", sent, strerror(-r));
			sent++;
			progress = 1;
		}
		REQUIRE(weft_rel_progress(a) == 0, "progress a");
		REQUIRE(weft_rel_progress(b) == 0, "progress b");
		size_t len;
		while ((r = weft_rel_recv(b, in, sizeof(in), &len)) == 1) {
			uint64_t seq;
			memcpy(&seq, in, 8);
			CHECK(seq == got, "message %" PRIu64 " delivered where %" PRIu64 " was due", seq, got);
			CHECK(len == 8 + (seq * 37) % 3000, "length of %" PRIu64, seq);
			for (size_t i = 8; i < len; i++)
				CHECK(in[i] == (uint8_t)(seq + i), "byte %zu of message %" PRIu64, i, seq);
			got++;
			progress = 1;
		}
		REQUIRE(r == 0, "recv: %s", strerror(-r));
		if (!progress) {
			REQUIRE(++idle < 2000000, "no progress: sent %" PRIu64 " got %" PRIu64, sent, got);
			weft_rel_wait(weft_rel_unacked(a) ? a : b, 1);
		}
	}
	/* Drain: every message acknowledged, and nothing delivered twice. */
	for (int i = 0; i < 100000 && weft_rel_unacked(a); i++) {
		REQUIRE(weft_rel_progress(a) == 0 && weft_rel_progress(b) == 0, "drain");
		size_t len;
		REQUIRE(weft_rel_recv(b, in, sizeof(in), &len) == 0, "extra message delivered");
		weft_rel_wait(a, 1);
	}
	REQUIRE(weft_rel_unacked(a) == 0, "%u messages never acknowledged", weft_rel_unacked(a));
	struct weft_rel_stats sa, sb;
	weft_rel_get_stats(a, &sa);
	weft_rel_get_stats(b, &sb);
	CHECK(sb.delivered == N && sa.sent == N, "delivered %" PRIu64, sb.delivered);
	REQUIRE(sa.retries > 0, "5%% loss but no retry: the loss was not exercised");
	t_point("rel: %" PRIu64 " messages exactly once in order with 5%% loss and reordering; "
	       "%" PRIu64 " retries, %" PRIu64 " duplicates dropped, %" PRIu64 " stale completions "
	       "ignored, %" PRIu64 " acks",
	       sb.delivered, sa.retries, sb.duplicates, sa.stale + sb.stale, sb.acks_sent);
	weft_rel_free(a);
	weft_rel_free(b);
	pair_close(&p);
	return 0;
}

/* One RDMA write of [p, p+n) to the peer through the cache, then back. */
static int mrc_xfer(struct pair *pp, struct weft_mrc *c, uint8_t *p, size_t n, uint64_t rpvo,
		    uint32_t lr, uint32_t rr, uint16_t rk)
{
	struct weft_mr_seg segs[4];
	int ns = weft_mrc_get(c, p, n, segs, 4);
	REQUIRE(ns > 0, "weft_mrc_get: %s", strerror(-ns));
	for (int i = 0; i < ns; i++) {
		struct weft_rop rop;
		memset(&rop, 0, sizeof(rop));
		rop.rdma.node = weft_win_node(pp->w[1]);
		rop.rdma.window = (uint16_t)weft_win_id(pp->w[1]);
		rop.rdma.local_rcxt = lr;
		rop.rdma.remote_rcxt = rr;
		rop.rdma.remote_rcxt_key = rk;
		rop.rdma.local_pvo = segs[i].pvo;
		rop.rdma.remote_pvo = rpvo + segs[i].offset;
		rop.rdma.length = segs[i].len;
		REQUIRE(weft_win_rop_post(pp->w[0], &rop) == 0, "post");
		static struct weft_entry e;
		while (rop.state == WEFT_ROP_POSTED) {
			int r = weft_win_poll(pp->w[0], &e);
			REQUIRE(r >= 0, "poll");
			if (!r)
				weft_win_wait(pp->w[0], 10);
			weft_win_poll(pp->w[1], &e);
		}
		CHECK(rop.state == WEFT_ROP_DONE, "transfer failed: %s", weft_status_name(rop.status));
	}
	weft_mrc_put(c, p, n);
	return 0;
}

/* 16 MiB fragments that [p, p + n) touches. */
static uint64_t frags(const void *p, size_t n)
{
	uint64_t a = (uint64_t)(uintptr_t)p;
	return ((a + n - 1) >> 24) - (a >> 24) + 1;
}

static int test_mrc(void)
{
	struct pair p;
	if (pair_open(&p, 0, 1, 0))
		return -1;
	const size_t n = 1 << 20;
	uint8_t *dst = weft_dev_alloc(p.d[1], n);
	uint64_t dpvo;
	uint32_t dh, lr, rr;
	uint16_t lk, rk;
	REQUIRE(dst && weft_mr_reg(p.d[1], JOB, dst, n, &dpvo, &dh) == 0, "remote buffer");
	REQUIRE(weft_rcxt_alloc(p.w[0], &lr, &lk) == 0 && weft_rcxt_alloc(p.w[1], &rr, &rk) == 0, "rcxt");
	struct weft_mrc_attr ma = { .job_id = JOB, .idle_limit = 5 };
	struct weft_mrc *c = weft_mrc_new(p.d[0], &ma);
	REQUIRE(c, "weft_mrc_new");
	uint8_t *buf = weft_dev_alloc(p.d[0], n);
	REQUIRE(buf, "alloc");
	memset(buf, 0x11, n);
	/* A buffer may straddle a 16 MiB fragment boundary (it lies wherever
	 * the simulated memory was mapped): one registration per fragment. */
	uint64_t f1 = frags(buf, n), f2 = frags(buf + 100, n - 200);
	if (mrc_xfer(&p, c, buf, n, dpvo, lr, rr, rk))
		return -1;
	struct weft_mrc_stats s1, s2, s3, s4;
	weft_mrc_get_stats(c, &s1);
	CHECK(s1.registrations == f1 && s1.misses == f1 && s1.hits == 0, "first transfer: %" PRIu64
	      " registrations %" PRIu64 " misses for %" PRIu64 " fragments", s1.registrations,
	      s1.misses, f1);
	CHECK(dst[0] == 0x11 && dst[n - 1] == 0x11, "data of the first transfer");
	memset(buf, 0x22, n);
	if (mrc_xfer(&p, c, buf + 100, n - 200, dpvo + 100, lr, rr, rk))
		return -1;
	weft_mrc_get_stats(c, &s2);
	CHECK(s2.registrations == f1 && s2.hits == f2, "second transfer from the same buffer "
	      "registered again (%" PRIu64 " registrations, %" PRIu64 " hits)",
	      s2.registrations, s2.hits);
	CHECK(dst[100] == 0x22 && dst[n - 101] == 0x22 && dst[99] == 0x11, "second data");
	/* Replace the mapping: free the buffer, allocate again at the same
	 * address (first fit), transfer: the cache must notice and remap. */
	weft_dev_free(p.d[0], buf, n);
	uint8_t *buf2 = weft_dev_alloc(p.d[0], n);
	CHECK(buf2 == buf, "the new allocation is not at the old address (%p vs %p): the remap "
	      "case cannot be built", (void *)buf2, (void *)buf);
	memset(buf2, 0x33, n);
	if (mrc_xfer(&p, c, buf2, n, dpvo, lr, rr, rk))
		return -1;
	weft_mrc_get_stats(c, &s3);
	CHECK(s3.remaps == f1 && s3.registrations == 2 * f1 && s3.deregistrations == f1,
	      "changed mapping: %" PRIu64 " remaps, %" PRIu64 " registrations", s3.remaps,
	      s3.registrations);
	CHECK(dst[0] == 0x33 && dst[n - 1] == 0x33, "data after remap");
	/* Idle aging: 4 ticks keep it, the 5th unmaps it. */
	REQUIRE(weft_mrc_age(c, 4) == 0, "aged out too early");
	CHECK(weft_mrc_age(c, 1) == f1, "not aged out");
	weft_mrc_get_stats(c, &s4);
	CHECK(s4.mapped == 0 && s4.evictions == f1, "mapped %" PRIu64, s4.mapped);
	/* A fragment in use is never aged out. */
	struct weft_mr_seg seg;
	REQUIRE(weft_mrc_get(c, buf2, 4096, &seg, 1) == 1, "get");
	REQUIRE(weft_mrc_age(c, 100) == 0, "a fragment in use was unmapped");
	weft_mrc_put(c, buf2, 4096);
	REQUIRE(weft_mrc_age(c, 100) == 1, "released fragment not aged out");
	t_point("mrc: second transfer hit the cache (registrations %" PRIu64 ", hits %" PRIu64
	       "), changed mapping remapped (remaps %" PRIu64 "), idle fragments aged out",
	       s2.registrations, s2.hits, s3.remaps);
	weft_mrc_free(c);
	pair_close(&p);
	return 0;
}

static int test_maps(void)
{
	const size_t n = 1 << 20;
	uint8_t *a = weft_be_memfd_alloc(n);
	REQUIRE(a, "memfd allocation");
	struct weft_be_map m1, m2, m3;
	REQUIRE(weft_be_proc_map_lookup((uint64_t)(uintptr_t)(a + 4096), &m1) == 0, "lookup");
	CHECK(m1.start == (uint64_t)(uintptr_t)a && m1.end == m1.start + n && m1.ino != 0,
	      "extent %" PRIx64 "-%" PRIx64 " ino %" PRIu64, m1.start, m1.end, m1.ino);
	CHECK(weft_be_proc_map_lookup((uint64_t)(uintptr_t)(a + n - 1), &m2) == 0 &&
	      m2.ino == m1.ino && m2.start == m1.start, "same mapping, same identity");
	/* Replace the mapping at the same address by another memfd. */
	uint8_t *b = weft_be_memfd_alloc(n);
	REQUIRE(b, "second memfd");
	void *r = mremap(b, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, a);
	CHECK(r == a, "mremap onto the old address: %s", strerror(errno));
	REQUIRE(weft_be_proc_map_lookup((uint64_t)(uintptr_t)(a + 4096), &m3) == 0, "lookup again");
	CHECK(m3.start == m1.start && m3.ino != m1.ino, "the new mapping has the old identity "
	      "(ino %" PRIu64 ")", m3.ino);
	weft_be_memfd_free(a, n);
	struct weft_be_map m4;
	CHECK(weft_be_proc_map_lookup((uint64_t)(uintptr_t)a, &m4) != 0 || m4.ino != m3.ino,
	      "unmapped range still found");
	t_point("maps: /proc/self/maps identity: same mapping matches, a replaced mapping at the "
	       "same address differs (inode %" PRIu64 " -> %" PRIu64 ")", m1.ino, m3.ino);
	return 0;
}

/*
 * A reliable op is done only once none of its frames is left in the send
 * FIFO.  When the completion of the first try arrives while a retry is
 * still queued (here behind a long write that holds the send FIFO), the
 * op must not be handed back yet: the caller may deregister its memory,
 * and the adapter, reading it later for the retry, would find a stale
 * PVO and make the window fatal (seen as TCE_KEY in a 4-node cluster
 * under load).  Sweep the timeout across the round trip, with the long
 * write posted right behind the op, and deregister as each op is done.
 */
static int test_rop_drain(void)
{
	struct pair p;
	if (pair_open(&p, 0, 1, 0))
		return -1;
	const size_t len = 4096, big = 4u << 20;
	uint8_t *b0 = weft_dev_alloc(p.d[0], len), *b1 = weft_dev_alloc(p.d[1], len);
	uint8_t *g0 = weft_dev_alloc(p.d[0], big), *g1 = weft_dev_alloc(p.d[1], big);
	REQUIRE(b0 && b1 && g0 && g1, "weft_dev_alloc");
	uint64_t pvo1, gpvo0, gpvo1;
	uint32_t h1, gh0, gh1, r0, r1, rg0, rg1;
	uint16_t k, k1, kg1;
	REQUIRE(weft_mr_reg(p.d[1], JOB, b1, len, &pvo1, &h1) == 0, "reg 1");
	REQUIRE(weft_mr_reg(p.d[0], JOB, g0, big, &gpvo0, &gh0) == 0, "reg big 0");
	REQUIRE(weft_mr_reg(p.d[1], JOB, g1, big, &gpvo1, &gh1) == 0, "reg big 1");
	REQUIRE(weft_rcxt_alloc(p.w[0], &r0, &k) == 0 && weft_rcxt_alloc(p.w[0], &rg0, &k) == 0,
	      "rcxts 0");
	REQUIRE(weft_rcxt_alloc(p.w[1], &r1, &k1) == 0 && weft_rcxt_alloc(p.w[1], &rg1, &kg1) == 0,
	      "rcxts 1");
	static struct weft_rop rop;
	static struct weft_entry e;
	unsigned int ops = 0, retried = 0;
	for (uint64_t t = 500; t <= 20000; t += 500) {
		uint64_t pvo0;
		uint32_t h0;
		memset(b0, (int)(t / 500), len);
		REQUIRE(weft_mr_reg(p.d[0], JOB, b0, len, &pvo0, &h0) == 0, "reg 0");
		weft_win_set_retry(p.w[0], t, t, 64);
		memset(&rop, 0, sizeof(rop));
		rop.rdma = (struct weft_rdma){
			.node = weft_win_node(p.w[1]), .window = (uint16_t)weft_win_id(p.w[1]),
			.local_rcxt = r0, .remote_rcxt = r1, .remote_rcxt_key = k1,
			.local_pvo = pvo0, .remote_pvo = pvo1, .length = len,
		};
		rop.timeout_ns = t;
		REQUIRE(weft_win_rop_post(p.w[0], &rop) == 0, "post (timeout %" PRIu64 " ns)", t);
		struct weft_rdma long_op = {
			.node = weft_win_node(p.w[1]), .window = (uint16_t)weft_win_id(p.w[1]),
			.local_rcxt = rg0, .remote_rcxt = rg1, .remote_rcxt_key = kg1,
			.notify = WEFT_COMP_SOURCE, .local_pvo = gpvo0, .remote_pvo = gpvo1,
			.length = big,
		};
		REQUIRE(weft_win_rdma_write(p.w[0], &long_op) == 0, "post the long write");
		int r, long_done = 0;
		do {
			r = get_entry(p.w[0], &e, 1000);
			long_done += r > 0 && e.type == WEFT_ENT_COMPLETION && e.tid == long_op.tid;
		} while (r > 0 && e.type != WEFT_ENT_ROP);
		CHECK(r > 0 && rop.state == WEFT_ROP_DONE, "timeout %" PRIu64 " ns: op state %d "
		      "status %s (poll %d)", t, rop.state, weft_status_name(rop.status), r);
		/* What a caller may do once its op is done. */
		REQUIRE(weft_mr_dereg(p.d[0], h0) == 0, "dereg 0");
		ops++;
		retried += rop.tries > 1;
		while (!long_done) {
			r = get_entry(p.w[0], &e, 1000);
			REQUIRE(r > 0, "timeout %" PRIu64 " ns, %u tries: window error %s after the op "
			      "was done and its memory deregistered", t, rop.tries, strerror(-r));
			long_done = e.type == WEFT_ENT_COMPLETION && e.tid == long_op.tid;
		}
		CHECK(e.status == 0, "long write: %s", weft_status_name(e.status));
		uint64_t st, rc, sc;
		REQUIRE(weft_win_state(p.w[0], &st, &rc, &sc) == 0 && st == 1,
		      "timeout %" PRIu64 " ns, %u tries: window state %" PRIu64 " after the op was "
		      "done and its memory deregistered", t, rop.tries, st);
		CHECK(memcmp(b1, b0, len) == 0, "timeout %" PRIu64 " ns: data differs", t);
	}
	CHECK(retried >= 2, "only %u of %u ops were retried: the sweep missed the round "
	      "trip", retried, ops);
	t_point("rop drain: %u reliable writes (timeouts 0.5..20 us, %u retried) each followed "
	       "by a 4 MiB write, memory deregistered as each one finished: the window stayed "
	       "valid", ops, retried);
	weft_mr_dereg(p.d[0], gh0);
	weft_mr_dereg(p.d[1], gh1);
	weft_mr_dereg(p.d[1], h1);
	pair_close(&p);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int (*fn)(void); } tests[] = {
		{ "fifo", test_fifo }, { "rdma", test_rdma }, { "tids", test_tids },
		{ "rel", test_rel }, { "mrc", test_mrc }, { "maps", test_maps },
		{ "budget", test_budget }, { "rop-drain", test_rop_drain },
		{ "post-list", test_post_list },
	};
	if (!weft_simnet_available() && !(argc > 1 && !strcmp(argv[1], "maps")))
		t_bail("libweft was built without the sim backend (qemu-device/sim missing); "
		       "these tests need it");
	int ran = 0;
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (argc > 1 && strcmp(argv[1], tests[i].name))
			continue;
		ran++;
		if (tests[i].fn())
			t_abort();
	}
	if (!ran)
		t_bail("no test named %s", argv[1]);
	return t_done();
}
