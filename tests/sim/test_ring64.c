/* SPDX-License-Identifier: MIT */
/*
 * The largest sim: 64 nodes.  Every node sends a FIFO packet to the next
 * one (node 63 to node 0) and an RDMA write of 4 KiB to the one after;
 * checks each packet's payload and source and every written byte.
 */
#include <stdio.h>
#include <string.h>

#include "simtest.h"

#define NODES   WEFT_SIM_MAX_NODES

int main(void)
{
	struct weft_sim_config cfg = {
		.nr_nodes = NODES, .mem_size = 4u << 20, .seed = 64,
		.faults = { .routes = 2, .delay_ns = 800, .jitter_ns = 800 },
	};
	struct weft_sim *s = st_sim(&cfg);
	static struct st_node n[NODES];
	struct rel *r;
	unsigned int i;
	char msg[32], got[32];
	struct weft_recv_hdr h;

	for (i = 0; i < NODES; i++) {
		st_node_setup(s, i, 64, 16384, 4, false, &n[i]);
		st_fill(weft_sim_ptr(s, i, n[i].buf, 4096), 4096, 640 + i);
	}
	r = rel_new(s, 1000000, NULL, NULL);
	REQUIRE(r, "rel_new");
	for (i = 0; i < NODES; i++) {
		rel_set_region(r, i, n[i].buf, n[i].len, n[i].pvo);
		snprintf(msg, sizeof(msg), "hello %u", i);
		REQUIRE(weft_sim_post_fifo(&n[i].win, (uint16_t)((i + 1) % NODES), 0, msg,
					 strlen(msg) + 1) == 0, "post %u", i);
	}
	for (i = 0; i < NODES; i++) {
		int ch = rel_channel(r, &n[i].win, &n[(i + 2) % NODES].win);

		REQUIRE(ch >= 0, "channel %u: %d", i, ch);
		rel_submit(r, ch, REL_WRITE, 0, 8192, 4096);
	}
	/* The FIFO packets are consumed by rel_run's polling: take them first. */
	weft_sim_run_idle(s, 0);
	for (i = 0; i < NODES; i++) {
		unsigned int from = (i + NODES - 1) % NODES;
		int k;

		snprintf(msg, sizeof(msg), "hello %u", from);
		for (k = 0; k < 4; k++) {
			REQUIRE(weft_sim_poll_recv(&n[i].win, &h, got, sizeof(got)) == 1,
			      "node %u: FIFO packet missing", i);
			if (h.type == WEFT_RF_FIFO)
				break;
		}
		CHECK(h.type == WEFT_RF_FIFO && h.src_node == from && !strcmp(got, msg),
		      "node %u: got '%s' from %u", i, got, h.src_node);
	}
	REQUIRE(rel_run(r, weft_sim_now(s) + 1000000000ull), "%llu writes pending",
	      (unsigned long long)rel_pending(r));
	for (i = 0; i < NODES; i++) {
		unsigned int from = (i + NODES - 2) % NODES;

		CHECK(!memcmp(weft_sim_ptr(s, from, n[from].buf, 4096),
			      weft_sim_ptr(s, i, n[i].buf + 8192, 4096), 4096),
		      "node %u: data from node %u differs", i, from);
	}
	t_point("ring64: %u nodes, %u FIFO packets and %u RDMA writes checked", NODES, NODES,
	       NODES);
	rel_free(r);
	weft_sim_free(s);
	return 0;
}
