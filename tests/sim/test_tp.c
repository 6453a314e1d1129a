/* SPDX-License-Identifier: MIT */
/*
 * Third-party RDMA across three sim nodes (seed 1.5.9, checklist 74/75):
 * the manager B (node 1) posts a TP_RDMAR to the data source C (node 2);
 * C sends the data straight to the data target A (node 0), which places it
 * and sends the completion to B, not to C.  Then a TP request with a stale
 * rCxt key at C causes no transfer.
 */
#include <string.h>

#include "simtest.h"

#define LEN     20000u

static unsigned int completions(struct st_node *n, uint32_t tid)
{
	struct weft_recv_hdr h;
	unsigned int k = 0;

	while (weft_sim_poll_recv(&n->win, &h, NULL, 0) == 1)
		if (h.type == WEFT_RF_COMPLETION && h.status == 0 && h.tid == tid)
			k++;
	return k;
}

int main(void)
{
	struct weft_sim_config cfg = {
		.nr_nodes = 3, .mem_size = 8u << 20, .seed = 13,
		.faults = { .routes = 3, .delay_ns = 1000, .jitter_ns = 2000, .route_skew_ns = 500 },
	};
	struct weft_sim *s = st_sim(&cfg);
	struct st_node n[3];
	uint32_t rb, rc, ra;
	uint16_t kb, kc, ka;
	struct weft_rdma_req q;
	unsigned int ca, cb, cc;
	uint8_t *dst;

	for (unsigned int i = 0; i < 3; i++)
		st_node_setup(s, i, 8, 1u << 20, 6, false, &n[i]);
	REQUIRE(weft_sim_rcxt_alloc(s, 0, 0, &ra, &ka) == 0, "rcxt A");
	REQUIRE(weft_sim_rcxt_alloc(s, 1, 0, &rb, &kb) == 0, "rcxt B");
	REQUIRE(weft_sim_rcxt_alloc(s, 2, 0, &rc, &kc) == 0, "rcxt C");
	st_fill(weft_sim_ptr(s, 2, n[2].buf + 4096, LEN), LEN, 2024);
	dst = weft_sim_ptr(s, 0, n[0].buf + 65536, LEN);
	memset(dst, 0, LEN);

	memset(&q, 0, sizeof(q));
	q.local_pvo = n[0].pvo + 65536;         /* at the data target A */
	q.remote_pvo = n[2].pvo + 4096;         /* at the data source C */
	q.length = LEN;
	q.local_rcxt = rb;
	q.remote_rcxt = rc;
	q.remote_rcxt_key = kc;
	q.notify = WEFT_NOTIFY_SOURCE;
	q.tid = 1;
	q.tp_node = 0;
	q.tp_window = 0;
	q.tp_rcxt = ra;
	q.tp_rcxt_key = ka;
	REQUIRE(weft_sim_post_rdma(&n[1].win, WEFT_SF_TP_RDMAR, 2, 0, &q) == 0, "post TP");
	weft_sim_run_idle(s, 0);
	CHECK(!memcmp(dst, weft_sim_ptr(s, 2, n[2].buf + 4096, LEN), LEN),
	      "data at A differs from C's");
	ca = completions(&n[0], 1);
	cb = completions(&n[1], 1);
	cc = completions(&n[2], 1);
	CHECK(cb == 1, "manager B got %u completions", cb);
	CHECK(cc == 0, "data source C got %u completions", cc);
	t_point("tp: B -> C -> A third-party read of %u bytes byte-exact; completion at B (%u), "
	       "none at C; A got %u", LEN, cb, ca);

	/* A stale key at the data source: nothing moves. */
	memset(dst, 0, LEN);
	q.tid = 2;
	q.remote_rcxt_key = (uint16_t)(kc + 1);
	REQUIRE(weft_sim_post_rdma(&n[1].win, WEFT_SF_TP_RDMAR, 2, 0, &q) == 0, "post TP 2");
	weft_sim_run_idle(s, 0);
	for (unsigned int i = 0; i < LEN; i++)
		CHECK(dst[i] == 0, "byte %u moved on a stale key", i);
	REQUIRE(completions(&n[1], 2) == 0, "completion for a stale-key TP request");
	CHECK(weft_sim_counter(s, 2, WEFT_CNT_DROP(WEFT_R_RCXT_KEY)) >= 1, "no RCXT_KEY drop at C");
	t_point("tp: a TP request with a stale rCxt key at C moves nothing (RCXT_KEY)");
	weft_sim_free(s);
	return t_done();
}
