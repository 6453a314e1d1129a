/* SPDX-License-Identifier: MIT */
/*
 * 1 MiB RDMA write and 1 MiB RDMA read between two sim nodes with 10%
 * loss and full reordering (4 routes with skew and jitter).  The retrying
 * layer (rel.c) splits each MiB into 16 KiB operations on 8 rCxt pairs;
 * a lost packet makes its operation time out on the virtual clock, and
 * it is posted again with a larger tid.  The 15 us timeout is close to
 * the round trip, so completions and packets of old tids also arrive late.
 * Checks: byte-exact data, every operation delivered exactly once and
 * finished by exactly one completion for its accepted tid; lost frames,
 * retries and late old-tid traffic actually happened.
 */
#include <string.h>

#include "simtest.h"

#define MIB             (1u << 20)
#define SEG             (16u << 10)
#define CHANNELS        8

static uint64_t *deliveries;

static void on_deliver(void *opaque, uint64_t op)
{
	(void)opaque;
	deliveries[op - 1]++;
}

/* Returns how much late traffic of old tids the run saw (stale completions
 * ignored by rel + packets the adapters dropped as TID_STALE). */
static uint64_t run(struct weft_sim *s, struct st_node *n, enum rel_kind kind)
{
	const char *name = kind == REL_WRITE ? "write" : "read";
	uint64_t nops = MIB / SEG, i, t0 = weft_sim_now(s);
	uint8_t *src, *dst;
	struct rel *r;
	const struct rel_stats *st;
	uint64_t drops0 = weft_fabric_total_stats(weft_sim_fabric(s))->drops[WEFT_FABRIC_DROP_RANDOM];
	uint64_t tid_stale0 = st_counter_sum(s, WEFT_CNT_DROP(WEFT_R_TID_STALE));
	int ch[CHANNELS];
	long long d;
	bool ok;
	uint64_t late;

	/* write: node 0 [0, 1 MiB) -> node 1 [1 MiB, 2 MiB)
	 * read:  node 0 reads node 1 [0, 1 MiB) into node 0 [1 MiB, 2 MiB) */
	deliveries = calloc(nops, sizeof(*deliveries));
	REQUIRE(deliveries, "oom");
	r = rel_new(s, 15000, on_deliver, NULL);
	REQUIRE(r, "rel_new");
	rel_set_region(r, 0, n[0].buf, n[0].len, n[0].pvo);
	rel_set_region(r, 1, n[1].buf, n[1].len, n[1].pvo);
	for (i = 0; i < CHANNELS; i++) {
		ch[i] = rel_channel(r, &n[0].win, &n[1].win);
		REQUIRE(ch[i] >= 0, "channel: %d", ch[i]);
	}
	if (kind == REL_WRITE) {
		src = weft_sim_ptr(s, 0, n[0].buf, MIB);
		dst = weft_sim_ptr(s, 1, n[1].buf + MIB, MIB);
	} else {
		src = weft_sim_ptr(s, 1, n[1].buf, MIB);
		dst = weft_sim_ptr(s, 0, n[0].buf + MIB, MIB);
	}
	st_fill(src, MIB, kind == REL_WRITE ? 11 : 12);
	memset(dst, 0, MIB);
	for (i = 0; i < nops; i++) {
		uint64_t off = i * SEG;

		if (kind == REL_WRITE)
			rel_submit(r, ch[i % CHANNELS], REL_WRITE, off, MIB + off, SEG);
		else
			rel_submit(r, ch[i % CHANNELS], REL_READ, MIB + off, off, SEG);
	}
	ok = rel_run(r, weft_sim_now(s) + 10000000000ull);
	st = rel_stats(r);
	REQUIRE(ok, "%s: %llu ops still pending", name, (unsigned long long)rel_pending(r));
	d = st_diff(src, dst, MIB);
	CHECK(d < 0, "%s: first wrong byte at %lld", name, d);
	for (i = 0; i < nops; i++)
		CHECK(deliveries[i] == 1, "%s: op %llu delivered %llu times", name,
		      (unsigned long long)i, (unsigned long long)deliveries[i]);
	CHECK(st->cpl_src == nops, "%s: %llu initiator completions for %llu ops", name,
	      (unsigned long long)st->cpl_src, (unsigned long long)nops);
	CHECK(st->cpl_error == 0, "%s: %llu error completions", name,
	      (unsigned long long)st->cpl_error);
	REQUIRE(st->retries > 0, "%s: no retry was needed: the loss did not bite", name);
	t_point("rdma %s 1 MiB (%llu ops of %u KiB, %d rCxt pairs): byte-exact, "
	       "each op delivered once, %llu initiator completions, %llu target, "
	       "%llu duplicate target completions ignored, %llu stale, %llu retries with a "
	       "larger tid, %llu frames lost, %llu stale-tid drops, %.3f ms virtual",
	       name, (unsigned long long)nops, SEG >> 10, CHANNELS,
	       (unsigned long long)st->cpl_src, (unsigned long long)st->cpl_dst,
	       (unsigned long long)st->cpl_dup, (unsigned long long)st->cpl_stale,
	       (unsigned long long)st->retries,
	       (unsigned long long)(weft_fabric_total_stats(weft_sim_fabric(s))->drops[WEFT_FABRIC_DROP_RANDOM] - drops0),
	       (unsigned long long)(st_counter_sum(s, WEFT_CNT_DROP(WEFT_R_TID_STALE)) - tid_stale0),
	       (double)(weft_sim_now(s) - t0) / 1e6);
	late = st->cpl_stale + st_counter_sum(s, WEFT_CNT_DROP(WEFT_R_TID_STALE)) - tid_stale0;
	rel_free(r);
	free(deliveries);
	return late;
}

int main(void)
{
	struct weft_sim_config cfg = {
		.nr_nodes = 2, .mem_size = 16u << 20, .seed = 42,
		.faults = { .drop_ppm = 100000, .routes = 4, .delay_ns = 2000,
			    .jitter_ns = 3000, .route_skew_ns = 1500 },
	};
	struct weft_sim *s = st_sim(&cfg);
	struct st_node n[2];
	uint64_t late;

	st_node_setup(s, 0, 77, 2 * MIB, 7, false, &n[0]);
	st_node_setup(s, 1, 77, 2 * MIB, 7, false, &n[1]);
	late = run(s, n, REL_WRITE);
	late += run(s, n, REL_READ);
	/* The timeout is short enough that completions and packets of old
	 * tids arrive after the retry: they must have had no effect. */
	REQUIRE(late > 0, "no late traffic of an old tid: the retry path is not exercised");
	weft_sim_free(s);
	return t_done();
}
