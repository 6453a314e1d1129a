/* SPDX-License-Identifier: MIT */
/*
 * Unit test of the fabric model (qemu-device/switch/fabric.c): routing,
 * broadcast, multicast, reordering across routes, seeded drops, bounded
 * queue, port down/up, hold across detach, capture and replay, bad frames,
 * drop rules, zero-copy frames.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"
#include "weft_test.h"
#include "wire_io.h"

#define MAXREC 4096

struct rec {
	uint16_t dst;
	uint32_t tid;
	uint16_t src;
	uint8_t flags;
	size_t len;
};

struct sink {
	struct rec r[MAXREC];
	size_t n;
	int refuse;             /* refuse (-EAGAIN) while nonzero */
	uint16_t refuse_node;   /* only this node refuses, 0xffff = all */
	unsigned char last[WEFT_WIRE_MAX_FRAME];
};

static int deliver(void *opaque, uint16_t dst, const void *frame, size_t len)
{
	struct sink *s = opaque;
	struct weft_wire_hdr h;

	if (s->refuse && (s->refuse_node == 0xffff || s->refuse_node == dst))
		return -EAGAIN;
	memcpy(&h, frame, sizeof(h));
	if (s->n < MAXREC) {
		s->r[s->n].dst = dst;
		s->r[s->n].tid = h.tid;
		s->r[s->n].src = h.src_node;
		s->r[s->n].flags = h.flags;
		s->r[s->n].len = len;
		s->n++;
	}
	memcpy(s->last, frame, len);
	return 0;
}

static size_t mkframe(unsigned char *buf, uint16_t src, uint16_t dst, uint32_t tid,
		      uint32_t paylen)
{
	struct weft_wire_hdr h = wire_hdr(WEFT_PKT_FIFO, src, dst, tid, paylen);

	memcpy(buf, &h, sizeof(h));
	memset(buf + sizeof(h), (int)(tid & 0xff), paylen);
	return sizeof(h) + paylen;
}

static struct weft_fabric *mkfab(uint64_t seed, size_t maxq, size_t cap, int nodes)
{
	struct weft_fabric *f = weft_fabric_new(seed, maxq, cap);
	int i;

	if (!f)
		t_bail("weft_fabric_new failed");
	for (i = 1; i <= nodes; i++)
		CHECK(weft_fabric_attach(f, (uint16_t)i) == 0);
	return f;
}

static size_t count_dst(const struct sink *s, uint16_t dst)
{
	size_t i, n = 0;

	for (i = 0; i < s->n; i++)
		n += s->r[i].dst == dst;
	return n;
}

static void test_routing(void)
{
	struct weft_fabric *f = mkfab(1, 64, 0, 3);
	static struct sink s;
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	size_t len = mkframe(b, 1, 2, 7, 100);
	const struct weft_fabric_port_stats *p1, *p2;

	memset(&s, 0, sizeof(s));
	CHECK(weft_fabric_attach(f, 2) == -EBUSY);
	CHECK(weft_fabric_attach(f, WEFT_NODE_BROADCAST) == -EINVAL);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	CHECK(weft_fabric_queued(f) == 1);
	CHECK(weft_fabric_next_due(f) == 0);
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 1);
	CHECK(s.n == 1 && s.r[0].dst == 2 && s.r[0].tid == 7 && s.r[0].len == len);
	CHECK(memcmp(s.last, b, len) == 0);
	CHECK(weft_fabric_queued(f) == 0);
	CHECK(weft_fabric_next_due(f) == UINT64_MAX);
	p1 = weft_fabric_port_stats(f, 1);
	p2 = weft_fabric_port_stats(f, 2);
	CHECK(p1 && p1->rx_frames == 1 && p1->rx_bytes == len && p1->tx_frames == 0);
	CHECK(p2 && p2->tx_frames == 1 && p2->tx_bytes == len && p2->rx_frames == 0);
	CHECK(weft_fabric_port_stats(f, 99) == NULL);

	/* Delay: not due before now + delay. */
	weft_fabric_set_faults(f, &(struct weft_fabric_faults){ .routes = 1, .delay_ns = 500 });
	CHECK(weft_fabric_submit(f, 1, b, len, 1000) == 0);
	CHECK(weft_fabric_next_due(f) == 1500);
	CHECK(weft_fabric_poll(f, 1499, deliver, &s) == 0);
	CHECK(weft_fabric_poll(f, 1500, deliver, &s) == 1);

	/* Huge delays saturate instead of wrapping around. */
	weft_fabric_set_faults(f, &(struct weft_fabric_faults){
		.routes = 2, .delay_ns = UINT64_MAX - 10, .route_skew_ns = UINT64_MAX / 2 });
	CHECK(weft_fabric_submit(f, 1, b, len, 1000) == 0);
	CHECK(weft_fabric_submit(f, 1, b, len, 1000) == 0);
	CHECK(weft_fabric_next_due(f) == UINT64_MAX - 1);
	CHECK(weft_fabric_poll(f, UINT64_MAX - 2, deliver, &s) == 0);
	CHECK(weft_fabric_poll(f, UINT64_MAX - 1, deliver, &s) == 2);
	weft_fabric_set_faults(f, &(struct weft_fabric_faults){ .routes = 1 });

	/* Unknown destination. */
	len = mkframe(b, 1, 40, 8, 0);
	CHECK(weft_fabric_submit(f, 1, b, len, 2000) == 0);
	CHECK(weft_fabric_queued(f) == 0);
	CHECK(p1->drops[WEFT_FABRIC_DROP_NO_ROUTE] == 1);
	/* Loopback to oneself is a valid unicast. */
	len = mkframe(b, 3, 3, 9, 0);
	CHECK(weft_fabric_submit(f, 3, b, len, 2000) == 0);
	CHECK(weft_fabric_poll(f, 5000, deliver, &s) == 1);
	CHECK(s.r[s.n - 1].dst == 3);
	weft_fabric_free(f);
}

static void test_broadcast_mcast(void)
{
	struct weft_fabric *f = mkfab(2, 64, 0, 4);
	static struct sink s;
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	size_t len;
	uint16_t mem[8];

	memset(&s, 0, sizeof(s));
	len = mkframe(b, 2, WEFT_NODE_BROADCAST, 1, 10);
	CHECK(weft_fabric_submit(f, 2, b, len, 0) == 0);
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 3);
	CHECK(count_dst(&s, 1) == 1 && count_dst(&s, 3) == 1 && count_dst(&s, 4) == 1);
	CHECK(count_dst(&s, 2) == 0);

	memset(&s, 0, sizeof(s));
	CHECK(weft_fabric_mcast_join(f, 5, 1) == 0);
	CHECK(weft_fabric_mcast_join(f, 5, 3) == 0);
	CHECK(weft_fabric_mcast_join(f, 5, 3) == -EEXIST);
	CHECK(weft_fabric_mcast_join(f, 256, 3) == -EINVAL);
	CHECK(weft_fabric_mcast_members(f, 5, mem, 8) == 2);
	len = mkframe(b, 2, WEFT_NODE_MCAST_BASE + 5, 2, 10);
	CHECK(weft_fabric_submit(f, 2, b, len, 0) == 0);
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 2);
	CHECK(count_dst(&s, 1) == 1 && count_dst(&s, 3) == 1);
	/* A member sending to its group does not get its own frame. */
	len = mkframe(b, 1, WEFT_NODE_MCAST_BASE + 5, 3, 10);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 1);
	CHECK(s.r[2].dst == 3);
	CHECK(weft_fabric_mcast_leave(f, 5, 3) == 0);
	CHECK(weft_fabric_mcast_leave(f, 5, 3) == -ENOENT);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	CHECK(weft_fabric_queued(f) == 0);
	CHECK(weft_fabric_port_stats(f, 1)->drops[WEFT_FABRIC_DROP_NO_ROUTE] == 1);
	/* Unused multicast range above the groups. */
	len = mkframe(b, 1, WEFT_NODE_MCAST_BASE + 300, 4, 0);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	CHECK(weft_fabric_port_stats(f, 1)->drops[WEFT_FABRIC_DROP_NO_ROUTE] == 2);
	weft_fabric_free(f);
}

static void test_routes_reorder(void)
{
	struct weft_fabric *f = mkfab(3, 64, 0, 2);
	static struct sink s;
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	int seen[16] = { 0 };
	size_t i, inversions = 0;

	memset(&s, 0, sizeof(s));
	weft_fabric_set_faults(f, &(struct weft_fabric_faults){
		.routes = 4, .delay_ns = 100, .route_skew_ns = 1000 });
	for (i = 0; i < 16; i++) {
		size_t len = mkframe(b, 1, 2, (uint32_t)i, 64);

		CHECK(weft_fabric_submit(f, 1, b, len, i * 10) == 0);
	}
	CHECK(weft_fabric_poll(f, 1000000, deliver, &s) == 16);
	CHECK(s.n == 16);
	for (i = 0; i < s.n; i++) {
		CHECK(s.r[i].tid < 16);
		if (s.r[i].tid < 16)
			seen[s.r[i].tid]++;
		if (i && s.r[i].tid < s.r[i - 1].tid)
			inversions++;
	}
	for (i = 0; i < 16; i++)
		CHECK(seen[i] == 1);
	CHECK(inversions > 0);
	/* Route 0 frames (0, 4, 8, 12) keep their order among themselves. */
	CHECK(s.r[0].tid == 0 && s.r[1].tid == 4 && s.r[2].tid == 8 && s.r[3].tid == 12);
	weft_fabric_free(f);
}

static size_t run_drops(uint64_t seed, uint32_t *tids, uint64_t *drops)
{
	struct weft_fabric *f = mkfab(seed, 2048, 0, 2);
	static struct sink s;
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	uint32_t i;

	memset(&s, 0, sizeof(s));
	weft_fabric_set_faults(f, &(struct weft_fabric_faults){
		.routes = 2, .drop_ppm = 300000, .jitter_ns = 5000, .route_skew_ns = 700 });
	for (i = 0; i < 1000; i++) {
		size_t len = mkframe(b, 1, 2, i, 32);

		CHECK(weft_fabric_submit(f, 1, b, len, (uint64_t)i * 100) == 0);
	}
	weft_fabric_poll(f, UINT64_MAX - 1, deliver, &s);
	for (i = 0; i < s.n; i++)
		tids[i] = s.r[i].tid;
	*drops = weft_fabric_port_stats(f, 2)->drops[WEFT_FABRIC_DROP_RANDOM];
	weft_fabric_free(f);
	return s.n;
}

static void test_seeded_drop(void)
{
	static uint32_t a[1000], b[1000], c[1000];
	static unsigned char seen[1000];
	uint64_t da, db, dc;
	size_t na, nb, nc, i;

	na = run_drops(42, a, &da);
	nb = run_drops(42, b, &db);
	nc = run_drops(43, c, &dc);
	CHECK(na + da == 1000);
	CHECK(nc + dc == 1000);
	CHECK(na == nb && da == db && memcmp(a, b, na * sizeof(a[0])) == 0);
	CHECK(na != nc || memcmp(a, c, na * sizeof(a[0])) != 0);
	/* About 30 % dropped. */
	CHECK(da > 200 && da < 400);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < na; i++) {
		CHECK(a[i] < 1000 && !seen[a[i]]);
		if (a[i] < 1000)
			seen[a[i]] = 1;
	}
}

static void test_bounded(void)
{
	struct weft_fabric *f = mkfab(4, 8, 0, 3);
	static struct sink s;
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	size_t len, i;

	memset(&s, 0, sizeof(s));
	for (i = 0; i < 8; i++) {
		len = mkframe(b, 1, 2, (uint32_t)i, 16);
		CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	}
	len = mkframe(b, 1, 2, 8, 16);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == -EAGAIN);
	CHECK(weft_fabric_port_stats(f, 1)->rx_frames == 8);
	/* The sink refuses: frames stay, in order, and still count. */
	s.refuse = 1;
	s.refuse_node = 0xffff;
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 0);
	CHECK(weft_fabric_queued(f) == 8 && weft_fabric_parked(f) == 8);
	CHECK(weft_fabric_port_held(f, 2) == 8);
	CHECK(weft_fabric_next_due(f) == UINT64_MAX);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == -EAGAIN);
	s.refuse = 0;
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 8);
	for (i = 0; i < 8; i++)
		CHECK(s.r[i].tid == i);
	CHECK(weft_fabric_queued(f) == 0);
	/* A broadcast needing more slots than free waits as a whole. */
	for (i = 0; i < 7; i++) {
		len = mkframe(b, 1, 2, (uint32_t)i, 16);
		CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	}
	len = mkframe(b, 1, WEFT_NODE_BROADCAST, 99, 16);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == -EAGAIN);
	weft_fabric_free(f);
}

static void test_port_limit(void)
{
	struct weft_fabric *f = mkfab(9, 64, 0, 4);
	static struct sink s;
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	size_t len, i;

	memset(&s, 0, sizeof(s));
	weft_fabric_set_port_limit(f, 4);
	s.refuse = 1;
	s.refuse_node = 2;
	for (i = 0; i < 4; i++) {
		len = mkframe(b, 1, 2, (uint32_t)i, 16);
		CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	}
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 0);
	/* Node 2 is at its limit: frames to it wait, others pass. */
	len = mkframe(b, 1, 2, 4, 16);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == -EAGAIN);
	len = mkframe(b, 1, WEFT_NODE_BROADCAST, 5, 16);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == -EAGAIN);
	len = mkframe(b, 1, 3, 6, 16);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	len = mkframe(b, 4, 3, 7, 16);
	CHECK(weft_fabric_submit(f, 4, b, len, 0) == 0);
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 2);
	/* A detached node is not congested: its frames are held or, beyond
	 * its quota (in flight plus held), dropped as ABSENT. */
	weft_fabric_detach(f, 2);
	len = mkframe(b, 1, 2, 8, 16);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	CHECK(weft_fabric_port_stats(f, 2)->drops[WEFT_FABRIC_DROP_ABSENT] == 1);
	CHECK(weft_fabric_attach(f, 2) == 0);
	s.refuse = 0;
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 4);
	for (i = 0; i < 4; i++)
		CHECK(s.r[2 + i].dst == 2 && s.r[2 + i].tid == i);
	/* Below the quota again: held while away, delivered on return. */
	weft_fabric_detach(f, 2);
	len = mkframe(b, 1, 2, 8, 16);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 0);
	CHECK(weft_fabric_attach(f, 2) == 0);
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 1);
	CHECK(s.r[6].tid == 8);
	len = mkframe(b, 1, 2, 9, 16);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	weft_fabric_free(f);
}

static void test_port_down_up(void)
{
	struct weft_fabric *f = mkfab(5, 64, 0, 2);
	static struct sink s;
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	size_t len = mkframe(b, 1, 2, 1, 16);
	const struct weft_fabric_port_stats *p2;

	memset(&s, 0, sizeof(s));
	CHECK(weft_fabric_set_port_up(f, 2, false) == 0);
	CHECK(!weft_fabric_port_is_up(f, 2));
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	p2 = weft_fabric_port_stats(f, 2);
	CHECK(p2->drops[WEFT_FABRIC_DROP_PORT_DOWN] == 1);
	CHECK(weft_fabric_poll(f, 10, deliver, &s) == 0);
	CHECK(weft_fabric_set_port_up(f, 2, true) == 0);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	CHECK(weft_fabric_poll(f, 10, deliver, &s) == 1);
	/* In flight when the port goes down: lost. */
	weft_fabric_set_faults(f, &(struct weft_fabric_faults){ .routes = 1, .delay_ns = 100 });
	CHECK(weft_fabric_submit(f, 1, b, len, 20) == 0);
	CHECK(weft_fabric_set_port_up(f, 2, false) == 0);
	CHECK(weft_fabric_poll(f, 1000, deliver, &s) == 0);
	CHECK(p2->drops[WEFT_FABRIC_DROP_PORT_DOWN] == 2);
	/* A down port's own frames are dropped too. */
	len = mkframe(b, 2, 1, 2, 16);
	CHECK(weft_fabric_submit(f, 2, b, len, 1000) == 0);
	CHECK(p2->drops[WEFT_FABRIC_DROP_PORT_DOWN] == 3);
	CHECK(weft_fabric_queued(f) == 0);
	CHECK(weft_fabric_set_port_up(f, 2, true) == 0);
	CHECK(weft_fabric_submit(f, 2, b, len, 1000) == 0);
	CHECK(weft_fabric_poll(f, 2000, deliver, &s) == 1);
	CHECK(s.r[s.n - 1].dst == 1);
	weft_fabric_free(f);
}

static void test_detach_hold(void)
{
	struct weft_fabric *f = mkfab(6, 64, 0, 3);
	static struct sink s;
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	size_t len, i;

	memset(&s, 0, sizeof(s));
	weft_fabric_detach(f, 2);
	CHECK(!weft_fabric_port_attached(f, 2));
	weft_fabric_set_hold_limit(f, 3);
	for (i = 0; i < 5; i++) {
		len = mkframe(b, 1, 2, (uint32_t)i, 16);
		CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	}
	len = mkframe(b, 1, 3, 100, 16);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 1);
	CHECK(s.r[0].dst == 3);
	CHECK(weft_fabric_port_held(f, 2) == 3);
	CHECK(weft_fabric_port_stats(f, 2)->drops[WEFT_FABRIC_DROP_ABSENT] == 2);
	/* Frames from a detached node are refused as not registered. */
	len = mkframe(b, 2, 1, 7, 16);
	CHECK(weft_fabric_submit(f, 2, b, len, 0) == 0);
	CHECK(weft_fabric_port_stats(f, 2)->drops[WEFT_FABRIC_DROP_NOT_REGISTERED] == 1);
	CHECK(weft_fabric_attach(f, 2) == 0);
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 3);
	for (i = 0; i < 3; i++)
		CHECK(s.r[1 + i].dst == 2 && s.r[1 + i].tid == i);
	CHECK(weft_fabric_queued(f) == 0);
	weft_fabric_free(f);
}

struct tapctx {
	size_t n, replayed;
	int flag_ok;
};

static void tap(void *opaque, uint16_t src, const void *frame, size_t len, bool replayed)
{
	struct tapctx *t = opaque;
	struct weft_wire_hdr h;

	(void)src;
	if (len < sizeof(h))
		return;
	memcpy(&h, frame, sizeof(h));
	t->n++;
	if (replayed) {
		t->replayed++;
		if (!(h.flags & WEFT_WF_REPLAYED))
			t->flag_ok = 0;
	} else if (h.flags & WEFT_WF_REPLAYED) {
		t->flag_ok = 0;
	}
}

static void test_replay(void)
{
	struct weft_fabric *f = mkfab(7, 64, 4, 2);
	static struct sink s;
	struct tapctx t = { 0, 0, 1 };
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	uint64_t mark;
	size_t len, i;

	memset(&s, 0, sizeof(s));
	weft_fabric_set_tap(f, tap, &t);
	for (i = 0; i < 6; i++) {
		len = mkframe(b, 1, 2, (uint32_t)i, 16);
		CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	}
	mark = weft_fabric_capture_mark(f);
	CHECK(mark == 6);
	len = mkframe(b, 1, 2, 6, 16);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 7);
	/* Ring of 4 holds 3..6; before the mark: 3, 4, 5. */
	CHECK(weft_fabric_replay(f, mark, 10, 100) == 3);
	CHECK(weft_fabric_poll(f, 100, deliver, &s) == 3);
	CHECK(s.n == 10);
	CHECK(s.r[7].tid == 3 && s.r[8].tid == 4 && s.r[9].tid == 5);
	for (i = 7; i < 10; i++)
		CHECK(!(s.r[i].flags & WEFT_WF_REPLAYED));
	CHECK(weft_fabric_port_stats(f, 2)->replayed == 3);
	CHECK(t.n == 10 && t.replayed == 3 && t.flag_ok);
	/* No limit, at most 2. */
	CHECK(weft_fabric_replay(f, 0, 2, 200) == 2);
	CHECK(weft_fabric_poll(f, 200, deliver, &s) == 2);
	CHECK(s.r[10].tid == 3 && s.r[11].tid == 4);
	weft_fabric_free(f);

	f = mkfab(7, 64, 0, 2);
	CHECK(weft_fabric_replay(f, 0, 10, 0) == 0);
	weft_fabric_free(f);
}

static void test_bad_frames(void)
{
	struct weft_fabric *f = mkfab(8, 64, 0, 2);
	unsigned char b[WEFT_WIRE_MAX_FRAME + 8];
	struct weft_wire_hdr h;
	const struct weft_fabric_port_stats *p1;
	size_t len;

	len = mkframe(b, 1, 2, 1, 16);
	CHECK(weft_fabric_submit(f, 1, b, 50, 0) == 0);            /* short */
	CHECK(weft_fabric_submit(f, 1, b, len - 1, 0) == 0);       /* length field */
	CHECK(weft_fabric_submit(f, 1, b, WEFT_WIRE_MAX_FRAME + 8, 0) == 0);
	CHECK(weft_fabric_submit(f, 2, b, len, 0) == 0);           /* spoofed src */
	memcpy(&h, b, sizeof(h));
	h.type = WEFT_PKT_HELLO;
	memcpy(b, &h, sizeof(h));
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	h.type = WEFT_PKT_FIFO;
	h.version = 9;
	memcpy(b, &h, sizeof(h));
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	CHECK(weft_fabric_submit(f, 77, b, len, 0) == 0);          /* unregistered */
	p1 = weft_fabric_port_stats(f, 1);
	CHECK(p1->drops[WEFT_FABRIC_DROP_BAD_FRAME] == 5);
	CHECK(weft_fabric_port_stats(f, 2)->drops[WEFT_FABRIC_DROP_BAD_FRAME] == 1);
	CHECK(weft_fabric_total_stats(f)->drops[WEFT_FABRIC_DROP_NOT_REGISTERED] == 1);
	CHECK(weft_fabric_total_stats(f)->drops[WEFT_FABRIC_DROP_BAD_FRAME] == 6);
	CHECK(weft_fabric_queued(f) == 0);
	CHECK(strcmp(weft_fabric_drop_name(WEFT_FABRIC_DROP_PORT_DOWN), "PORT_DOWN") == 0);
	CHECK(strcmp(weft_fabric_drop_name(99), "UNKNOWN") == 0);
	weft_fabric_free(f);
}

/* A port at its quota that takes nothing for stall_ns stalls: frames for
 * it are dropped (STALLED) instead of holding senders, no wake-up is
 * reported for it again, and it recovers when it takes a frame.  Held
 * frames and ports of absent nodes expire. */
static void test_stall_expiry(void)
{
	struct weft_fabric *f = mkfab(1, 64, 0, 3);
	struct sink s = { .refuse = 1, .refuse_node = 2 };
	unsigned char b[256];
	size_t len;
	int i;

	weft_fabric_set_port_limit(f, 2);
	weft_fabric_set_stall_ns(f, 100);
	for (i = 0; i < 2; i++) {
		len = mkframe(b, 1, 2, (uint32_t)i, 16);
		CHECK(weft_fabric_submit(f, 1, b, len, 10) == 0);
	}
	CHECK(weft_fabric_poll(f, 10, deliver, &s) == 0);
	len = mkframe(b, 1, 2, 2, 16);
	CHECK(weft_fabric_submit(f, 1, b, len, 50) == -EAGAIN);
	CHECK(weft_fabric_next_due(f) == 110);
	/* Stalled: dropped, counted, the sender goes on. */
	CHECK(weft_fabric_submit(f, 1, b, len, 110) == 0);
	CHECK(weft_fabric_port_stats(f, 2)->drops[WEFT_FABRIC_DROP_STALLED] == 1);
	CHECK(weft_fabric_poll(f, 110, deliver, &s) == 0);
	CHECK(weft_fabric_next_due(f) == UINT64_MAX);
	/* A broadcast reaches the others and is dropped for node 2 only. */
	len = mkframe(b, 1, WEFT_NODE_BROADCAST, 3, 16);
	CHECK(weft_fabric_submit(f, 1, b, len, 120) == 0);
	CHECK(weft_fabric_poll(f, 120, deliver, &s) == 1 && s.r[0].dst == 3);
	CHECK(weft_fabric_port_stats(f, 2)->drops[WEFT_FABRIC_DROP_STALLED] == 2);
	/* It reads again: its frames flow, in order, and senders wait again. */
	s.refuse = 0;
	CHECK(weft_fabric_poll(f, 130, deliver, &s) == 2 && s.r[1].tid == 0 && s.r[2].tid == 1);
	len = mkframe(b, 1, 2, 4, 16);
	CHECK(weft_fabric_submit(f, 1, b, len, 130) == 0);
	CHECK(weft_fabric_poll(f, 130, deliver, &s) == 1 && s.r[3].tid == 4);

	/* Expiry: node 3 leaves, a frame is held for it, both expire. */
	weft_fabric_set_expiry_ns(f, 1000);
	weft_fabric_detach(f, 3);
	len = mkframe(b, 1, 3, 5, 16);
	CHECK(weft_fabric_submit(f, 1, b, len, 200) == 0);
	CHECK(weft_fabric_next_due(f) == 0);    /* the departure is not stamped yet */
	CHECK(weft_fabric_poll(f, 200, deliver, &s) == 0);
	CHECK(weft_fabric_port_held(f, 3) == 1);
	CHECK(weft_fabric_next_due(f) == 1200);
	CHECK(weft_fabric_poll(f, 1199, deliver, &s) == 0 && weft_fabric_port_held(f, 3) == 1);
	CHECK(weft_fabric_poll(f, 1200, deliver, &s) == 0);
	CHECK(weft_fabric_port_stats(f, 3) == NULL);
	CHECK(weft_fabric_total_stats(f)->drops[WEFT_FABRIC_DROP_EXPIRED] == 1);
	CHECK(weft_fabric_queued(f) == 0);
	CHECK(weft_fabric_next_due(f) == UINT64_MAX);
	/* A port that is down is kept; a frame for a forgotten node has no route. */
	weft_fabric_set_port_up(f, 1, false);
	weft_fabric_detach(f, 1);
	CHECK(weft_fabric_poll(f, 5000, deliver, &s) == 0);
	CHECK(weft_fabric_port_stats(f, 1) != NULL);
	CHECK(weft_fabric_next_due(f) == UINT64_MAX);
	len = mkframe(b, 2, 3, 6, 16);
	CHECK(weft_fabric_submit(f, 2, b, len, 5000) == 0);
	CHECK(weft_fabric_port_stats(f, 2)->drops[WEFT_FABRIC_DROP_NO_ROUTE] == 1);
	weft_fabric_free(f);
}

/* Drop rules: only the matching copies go, and only as many as asked. */
static void test_rules(void)
{
	struct weft_fabric *f = mkfab(4, 64, 0, 4);
	static struct sink s;
	struct weft_fabric_rule r = { .src_node = 3, .src_window = 2, .dst_node = 1,
				      .type = WEFT_PKT_FIFO, .left = 1 }, out[WEFT_FABRIC_MAX_RULES];
	struct weft_wire_hdr h;
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	size_t len;
	int i;

	memset(&s, 0, sizeof(s));
	CHECK(weft_fabric_add_rule(f, &(struct weft_fabric_rule){ .src_node = 1 }) == -EINVAL);
	CHECK(weft_fabric_add_rule(f, &(struct weft_fabric_rule){ .src_node = 0xF000,
								  .left = 1 }) == -EINVAL);
	CHECK(weft_fabric_add_rule(f, &r) == 0);
	/* Not matching: another type, another source window, another
	 * destination, another source. */
	len = mkframe(b, 3, 1, 1, 8);
	memcpy(&h, b, sizeof(h));
	h.type = WEFT_PKT_FIFO_DATA;
	h.src_window = 2;
	memcpy(b, &h, sizeof(h));
	CHECK(weft_fabric_submit(f, 3, b, len, 0) == 0);
	h.type = WEFT_PKT_FIFO;
	h.src_window = 1;
	h.tid = 2;
	memcpy(b, &h, sizeof(h));
	CHECK(weft_fabric_submit(f, 3, b, len, 0) == 0);
	h.src_window = 2;
	h.dst_node = 4;
	h.tid = 3;
	memcpy(b, &h, sizeof(h));
	CHECK(weft_fabric_submit(f, 3, b, len, 0) == 0);
	len = mkframe(b, 2, 1, 4, 8);
	memcpy(&h, b, sizeof(h));
	h.src_window = 2;
	memcpy(b, &h, sizeof(h));
	CHECK(weft_fabric_submit(f, 2, b, len, 0) == 0);
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 4);
	/* Matching: the first is dropped, the second goes through. */
	len = mkframe(b, 3, 1, 5, 8);
	memcpy(&h, b, sizeof(h));
	h.src_window = 2;
	memcpy(b, &h, sizeof(h));
	CHECK(weft_fabric_submit(f, 3, b, len, 0) == 0);
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 0);
	h.tid = 6;
	memcpy(b, &h, sizeof(h));
	CHECK(weft_fabric_submit(f, 3, b, len, 0) == 0);
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 1 && s.r[4].tid == 6);
	CHECK(weft_fabric_port_stats(f, 1)->drops[WEFT_FABRIC_DROP_RULE] == 1);
	CHECK(weft_fabric_rules(f, out, WEFT_FABRIC_MAX_RULES) == 1);
	CHECK(out[0].left == 0 && out[0].dropped == 1);
	/* A broadcast: only the copy for the rule's destination is dropped. */
	r.src_window = WEFT_FABRIC_ANY;
	r.dst_node = 2;
	r.left = 5;
	CHECK(weft_fabric_add_rule(f, &r) == 1);
	len = mkframe(b, 3, WEFT_NODE_BROADCAST, 7, 8);
	CHECK(weft_fabric_submit(f, 3, b, len, 0) == 0);
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 2);
	CHECK(count_dst(&s, 2) == 0 && s.r[5].tid == 7 && s.r[6].tid == 7);
	CHECK(weft_fabric_rules(f, out, WEFT_FABRIC_MAX_RULES) == 2 && out[1].left == 4);
	/* Full table; clear. */
	for (i = 2; i < (int)WEFT_FABRIC_MAX_RULES; i++)
		CHECK(weft_fabric_add_rule(f, &r) == i);
	CHECK(weft_fabric_add_rule(f, &r) == -ENOSPC);
	weft_fabric_clear_rules(f);
	CHECK(weft_fabric_rules(f, out, WEFT_FABRIC_MAX_RULES) == 0);
	CHECK(weft_fabric_submit(f, 3, b, len, 0) == 0);
	CHECK(weft_fabric_poll(f, 0, deliver, &s) == 3);
	weft_fabric_free(f);
}

/* A sink that keeps every frame's buffer (weft_fabric_frame_hold). */
struct keeper {
	const void *kept[16];
	size_t n;
};

static int keep(void *opaque, uint16_t dst, const void *frame, size_t len)
{
	struct keeper *k = opaque;

	(void)dst;
	(void)len;
	if (k->n == sizeof(k->kept) / sizeof(k->kept[0]))
		return -EAGAIN;
	k->kept[k->n++] = frame;
	weft_fabric_frame_hold(frame);
	return 0;
}

static void test_zero_copy(void)
{
	struct weft_fabric *f = mkfab(10, 2, 0, 3);
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	struct keeper k = { .n = 0 };
	unsigned char *fr, *fr2;
	size_t len = mkframe(b, 1, 2, 21, 300), i;

	/* Submitted in the caller's buffer, delivered in the same one. */
	fr = weft_fabric_frame_alloc(f);
	CHECK(fr && !((uintptr_t)fr & 7), "an aligned buffer");
	memcpy(fr, b, len);
	CHECK(weft_fabric_submit_frame(f, 1, fr, len, 0) == 0);
	CHECK(weft_fabric_queued(f) == 1);
	CHECK(weft_fabric_poll(f, 0, keep, &k) == 1);
	CHECK(k.n == 1 && k.kept[0] == fr, "the sink got the submitted buffer itself");
	CHECK(weft_fabric_queued(f) == 0, "a kept frame is no longer queued");
	CHECK(weft_fabric_port_stats(f, 2)->tx_frames == 1);
	CHECK(memcmp(fr, b, len) == 0, "bytes intact while kept");
	weft_fabric_frame_release(f, fr);
	CHECK(weft_fabric_frame_alloc(f) == fr, "released into the frame cache");

	/* -EAGAIN (fabric full) leaves the buffer with the caller. */
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	CHECK(weft_fabric_submit(f, 1, b, len, 0) == 0);
	memcpy(fr, b, len);
	CHECK(weft_fabric_submit_frame(f, 1, fr, len, 0) == -EAGAIN);
	CHECK(weft_fabric_queued(f) == 2);
	k.n = 0;
	CHECK(weft_fabric_poll(f, 0, keep, &k) == 2);
	CHECK(k.n == 2 && k.kept[0] != fr && k.kept[1] != fr, "copies of submit");
	CHECK(weft_fabric_submit_frame(f, 1, fr, len, 0) == 0, "retried");
	CHECK(weft_fabric_poll(f, 0, keep, &k) == 1 && k.kept[2] == fr);
	for (i = 0; i < k.n; i++)
		weft_fabric_frame_release(f, k.kept[i]);

	/* A broadcast: both copies share the buffer, read-only (each sink
	 * holds a reference until it releases it). */
	len = mkframe(b, 1, WEFT_NODE_BROADCAST, 22, 64);
	fr = weft_fabric_frame_alloc(f);
	memcpy(fr, b, len);
	CHECK(weft_fabric_submit_frame(f, 1, fr, len, 0) == 0);
	k.n = 0;
	CHECK(weft_fabric_poll(f, 0, keep, &k) == 2);
	CHECK(k.n == 2 && k.kept[0] == fr && k.kept[1] == fr, "both copies are the buffer");
	CHECK(k.n == 2 && !memcmp(k.kept[0], b, len) && !memcmp(k.kept[1], b, len));
	for (i = 0; i < k.n; i++)
		weft_fabric_frame_release(f, k.kept[i]);

	/* Dropped at submit (no route): the fabric takes the buffer back. */
	len = mkframe(b, 1, 40, 23, 0);
	fr = weft_fabric_frame_alloc(f);
	memcpy(fr, b, len);
	CHECK(weft_fabric_submit_frame(f, 1, fr, len, 0) == 0);
	CHECK(weft_fabric_port_stats(f, 1)->drops[WEFT_FABRIC_DROP_NO_ROUTE] == 1);
	fr2 = weft_fabric_frame_alloc(f);
	CHECK(fr2 == fr, "recycled");
	weft_fabric_frame_release(f, fr2);
	weft_fabric_free(f);
}

int main(void)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
		{ "routing", test_routing },
		{ "broadcast and multicast", test_broadcast_mcast },
		{ "reordering across routes", test_routes_reorder },
		{ "seeded drops", test_seeded_drop },
		{ "bounded queue", test_bounded },
		{ "per-port limit", test_port_limit },
		{ "port down and up", test_port_down_up },
		{ "frames held across a detach", test_detach_hold },
		{ "capture and replay", test_replay },
		{ "bad frames", test_bad_frames },
		{ "stalled ports and expiry", test_stall_expiry },
		{ "drop rules", test_rules },
		{ "zero-copy frames (submit_frame, hold, release)", test_zero_copy },
	};
	size_t i;

	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		t_begin("%s", tests[i].name);
		tests[i].fn();
	}
	return t_done();
}
