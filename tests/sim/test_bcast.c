/* SPDX-License-Identifier: MIT */
/*
 * Broadcast and multicast FIFO packets over 5 nodes.
 *  - node 0 (Config_parm_bcast = 1) broadcasts: nodes 1..4 get it once,
 *    flagged WEFT_RF_BROADCAST, node 0 does not;
 *  - multicast group 5 = {1, 3}: only nodes 1 and 3 get it;
 *  - node 2 (broadcast not enabled) broadcasts: nobody gets it, its send
 *    frame is marked done with status BCAST_DISABLED.
 */
#include <string.h>

#include "simtest.h"

#define NODES 5u

static unsigned int drain(struct weft_sim *s, struct st_node *n, unsigned int node,
			  const char *want, uint16_t flags_want)
{
	struct weft_recv_hdr h;
	char buf[64];
	unsigned int got = 0;

	(void)s;
	while (weft_sim_poll_recv(&n[node].win, &h, buf, sizeof(buf)) == 1) {
		CHECK(h.type == WEFT_RF_FIFO, "node %u: type %u", node, h.type);
		CHECK(h.length == strlen(want) && !memcmp(buf, want, h.length),
		      "node %u: wrong payload", node);
		CHECK((h.flags & WEFT_RF_BROADCAST) == flags_want, "node %u: flags 0x%x", node,
		      h.flags);
		got++;
	}
	return got;
}

int main(void)
{
	struct weft_sim_config cfg = {
		.nr_nodes = NODES, .mem_size = 4u << 20, .seed = 9,
		.faults = { .routes = 2, .delay_ns = 1000, .jitter_ns = 500 },
	};
	struct weft_sim *s = st_sim(&cfg);
	struct st_node n[NODES];
	const char *b1 = "broadcast from node 0", *m1 = "multicast to group 5",
		   *b2 = "broadcast from node 2";
	struct weft_send_hdr sh;
	unsigned int i, got;

	for (i = 0; i < NODES; i++)
		st_node_setup(s, i, 21, 0, 4, i != 2, &n[i]);

	REQUIRE(weft_sim_post_fifo(&n[0].win, WEFT_NODE_BROADCAST, 0, b1, strlen(b1)) == 0, "post");
	weft_sim_run_idle(s, 0);
	REQUIRE(drain(s, n, 0, b1, WEFT_RF_BROADCAST) == 0, "sender got its own broadcast");
	for (i = 1; i < NODES; i++) {
		got = drain(s, n, i, b1, WEFT_RF_BROADCAST);
		REQUIRE(got == 1, "node %u got the broadcast %u times", i, got);
	}
	t_point("bcast: broadcast from node 0 delivered once to each of nodes 1..%u", NODES - 1);

	REQUIRE(weft_fabric_mcast_join(weft_sim_fabric(s), 5, 1) == 0, "join 1");
	REQUIRE(weft_fabric_mcast_join(weft_sim_fabric(s), 5, 3) == 0, "join 3");
	REQUIRE(weft_sim_post_fifo(&n[0].win, WEFT_NODE_MCAST_BASE + 5, 0, m1, strlen(m1)) == 0,
	      "post mcast");
	weft_sim_run_idle(s, 0);
	for (i = 0; i < NODES; i++) {
		got = drain(s, n, i, m1, 0);
		CHECK(got == (i == 1 || i == 3), "node %u got the multicast %u times", i, got);
	}
	t_point("bcast: multicast to group 5 = {1, 3} reached exactly nodes 1 and 3");

	REQUIRE(weft_sim_post_fifo(&n[2].win, WEFT_NODE_BROADCAST, 0, b2, strlen(b2)) == 0, "post 2");
	weft_sim_run_idle(s, 0);
	for (i = 0; i < NODES; i++)
		REQUIRE(drain(s, n, i, b2, WEFT_RF_BROADCAST) == 0, "node %u got a broadcast from a "
		      "window without Config_parm_bcast", i);
	memcpy(&sh, n[2].win.send_fifo, sizeof(sh));
	CHECK((sh.flags & WEFT_SF_DONE) && sh.status == WEFT_R_BCAST_DISABLED,
	      "send frame flags 0x%x status %u", sh.flags, sh.status);
	REQUIRE(weft_sim_counter(s, 2, WEFT_CNT_DROP(WEFT_R_BCAST_DISABLED)) == 1,
	      "BCAST_DISABLED counter %llu",
	      (unsigned long long)weft_sim_counter(s, 2, WEFT_CNT_DROP(WEFT_R_BCAST_DISABLED)));
	t_point("bcast: broadcast from a window without Config_parm_bcast not transmitted, "
	       "frame status BCAST_DISABLED, counted");
	weft_sim_free(s);
	return t_done();
}
