/* SPDX-License-Identifier: MIT */
/*
 * FIFO ping-pong between two nodes: 2000 round trips with payload sizes
 * 0..1920 bytes, every payload checked on both sides, source node and
 * window checked, sequence numbers consecutive, counters consistent.
 */
#include <string.h>

#include "simtest.h"

#define ROUNDS  2000u

static int wait_recv(struct weft_sim *s, struct weft_sim_window *w, struct weft_recv_hdr *h,
		     uint8_t *buf)
{
	int i;

	for (i = 0; i < 100000; i++) {
		if (weft_sim_poll_recv(w, h, buf, WEFT_MAX_PAYLOAD) == 1)
			return 1;
		if (!weft_sim_progress(s) &&
		    weft_sim_poll_recv(w, h, buf, WEFT_MAX_PAYLOAD) != 1)
			return 0;
	}
	return 0;
}

int main(void)
{
	struct weft_sim_config cfg = {
		.nr_nodes = 2, .mem_size = 4u << 20, .seed = 3,
		.faults = { .routes = 1, .delay_ns = 1500 },
	};
	struct weft_sim *s = st_sim(&cfg);
	struct st_node n[2];
	uint8_t out[WEFT_MAX_PAYLOAD], in[WEFT_MAX_PAYLOAD];
	struct weft_recv_hdr h;
	unsigned int i, side;
	uint64_t t0, bytes = 0;

	st_node_setup(s, 0, 9, 0, 4, false, &n[0]);
	st_node_setup(s, 1, 9, 0, 4, false, &n[1]);
	t0 = weft_sim_now(s);
	for (i = 0; i < ROUNDS; i++) {
		size_t len = (i * 97u) % (WEFT_MAX_PAYLOAD + 1);

		for (side = 0; side < 2; side++) {
			struct st_node *from = &n[side], *to = &n[!side];

			st_fill(out, len, i * 2 + side);
			REQUIRE(weft_sim_post_fifo(&from->win, (uint16_t)!side, 0, out, len) == 0,
			      "round %u: post", i);
			REQUIRE(wait_recv(s, &to->win, &h, in), "round %u side %u: nothing arrived", i,
			      side);
			CHECK(h.type == WEFT_RF_FIFO, "round %u: type %u", i, h.type);
			CHECK(h.length == len, "round %u: length %u, sent %zu", i, h.length, len);
			CHECK(h.src_node == side && h.src_window == 0, "round %u: from %u/%u", i,
			      h.src_node, h.src_window);
			CHECK(h.seq == i, "round %u: seq %u", i, h.seq);
			CHECK(!memcmp(in, out, len), "round %u side %u: payload differs", i, side);
			bytes += len;
		}
	}
	CHECK(weft_sim_counter(s, 0, WEFT_CNT_TX_FIFO_PACKETS) == ROUNDS &&
	      weft_sim_counter(s, 1, WEFT_CNT_RX_FIFO_PACKETS) == ROUNDS,
	      "counters: tx0 %llu rx1 %llu", (unsigned long long)weft_sim_counter(s, 0, WEFT_CNT_TX_FIFO_PACKETS),
	      (unsigned long long)weft_sim_counter(s, 1, WEFT_CNT_RX_FIFO_PACKETS));
	CHECK(weft_sim_send_space(&n[0].win) == n[0].win.send_frames, "send frames not all done");
	t_point("pingpong: %u round trips, %llu payload bytes checked, seq and source checked, "
	       "%.2f us virtual per round trip", ROUNDS, (unsigned long long)bytes,
	       (double)(weft_sim_now(s) - t0) / ROUNDS / 1000.0);
	weft_sim_free(s);
	return t_done();
}
