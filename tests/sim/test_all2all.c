/* SPDX-License-Identifier: MIT */
/*
 * 16-node all-to-all RDMA writes: every node writes 64 KiB of its own
 * pattern into a slot of every other node's buffer, through 240 channels
 * at once, over 2 reordering routes.  Checks every byte of every slot.
 */
#include <string.h>

#include "simtest.h"

#define NODES   16u
#define CHUNK   (64u << 10)

int main(void)
{
	struct weft_sim_config cfg = {
		.nr_nodes = NODES, .mem_size = 8u << 20, .seed = 7,
		.faults = { .routes = 2, .delay_ns = 1000, .jitter_ns = 2000,
			    .route_skew_ns = 700 },
	};
	struct weft_sim *s = st_sim(&cfg);
	static struct st_node n[NODES];
	uint64_t len = CHUNK * (NODES + 1);
	unsigned int a, b, nch = 0;
	struct rel *r;
	const struct rel_stats *st;

	for (a = 0; a < NODES; a++) {
		st_node_setup(s, a, 500, len, 8, false, &n[a]);
		st_fill(weft_sim_ptr(s, a, n[a].buf, CHUNK), CHUNK, 1000 + a);
	}
	r = rel_new(s, 2000000, NULL, NULL);
	REQUIRE(r, "rel_new");
	for (a = 0; a < NODES; a++)
		rel_set_region(r, a, n[a].buf, n[a].len, n[a].pvo);
	for (a = 0; a < NODES; a++) {
		for (b = 0; b < NODES; b++) {
			int ch;

			if (a == b)
				continue;
			ch = rel_channel(r, &n[a].win, &n[b].win);
			REQUIRE(ch >= 0, "channel %u->%u: %d", a, b, ch);
			rel_submit(r, ch, REL_WRITE, 0, CHUNK * (1 + a), CHUNK);
			nch++;
		}
	}
	REQUIRE(rel_run(r, weft_sim_now(s) + 60000000000ull), "%llu writes pending",
	      (unsigned long long)rel_pending(r));
	st = rel_stats(r);
	for (b = 0; b < NODES; b++) {
		for (a = 0; a < NODES; a++) {
			const uint8_t *want = weft_sim_ptr(s, a, n[a].buf, CHUNK);
			const uint8_t *got = weft_sim_ptr(s, b, n[b].buf + CHUNK * (1 + a), CHUNK);
			long long d;

			if (a == b)
				continue;
			d = st_diff(want, got, CHUNK);
			CHECK(d < 0, "slot %u on node %u: first wrong byte at %lld", a, b, d);
		}
	}
	CHECK(st->delivered == nch && st->cpl_src == nch, "delivered %llu, completed %llu of %u",
	      (unsigned long long)st->delivered, (unsigned long long)st->cpl_src, nch);
	t_point("all-to-all: %u nodes, %u RDMA writes of %u KiB byte-exact, %llu completions "
	       "each side, %llu retries, %llu packets, %.3f ms virtual",
	       NODES, nch, CHUNK >> 10, (unsigned long long)st->cpl_src,
	       (unsigned long long)st->retries,
	       (unsigned long long)st_counter_sum(s, WEFT_CNT_TX_PACKETS),
	       (double)weft_sim_now(s) / 1e6);
	rel_free(r);
	weft_sim_free(s);
	return t_done();
}
