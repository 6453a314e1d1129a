/* SPDX-License-Identifier: MIT */
/*
 * Snapshot across nodes: close windows while traffic is in flight.
 *
 * 1. Node 0 posts a 4 MiB RDMA write to node 1 and, while its transmit
 *    task is busy, closes its window: Snapshot View must read non-zero
 *    right after Close Window and reach 0 (weft_sim_close_window waits for
 *    it); after that, the adapter never touches the freed send FIFO.
 * 2. Node 2 streams RDMA writes into node 1; node 1 closes its window
 *    with packets still in the fabric: once the close returned, node 1's
 *    adapter writes no guest memory at all, and the late packets are
 *    dropped as WINDOW_INVALID (or as RCXT_INVALID: the driver released
 *    the window's rCxts).
 */
#include <string.h>

#include "simtest.h"

struct watch {
	unsigned int node;
	uint64_t lo, hi;        /* watched range, [lo, hi) */
	bool armed;
	uint64_t hits;
	bool any;               /* count every write of the node */
};

static struct watch watch;

static void hook(void *opaque, unsigned int node, uint64_t addr, size_t len, bool is_write)
{
	(void)opaque;
	if (!watch.armed || node != watch.node || !is_write)
		return;
	if (watch.any || (addr < watch.hi && addr + len > watch.lo))
		watch.hits++;
}

/* An RDMA write (tid 1, both notified) of len bytes from node from's
 * buffer to node to's, each end on a fresh rCxt of window 0. */
static void post_write(struct weft_sim *s, struct st_node *n, unsigned int from,
		       unsigned int to, uint64_t len)
{
	struct weft_rdma_req q;
	uint32_t rl, rr;
	uint16_t kl, kr;

	REQUIRE(weft_sim_rcxt_alloc(s, from, 0, &rl, &kl) == 0, "rcxt node %u", from);
	REQUIRE(weft_sim_rcxt_alloc(s, to, 0, &rr, &kr) == 0, "rcxt node %u", to);
	memset(&q, 0, sizeof(q));
	q.local_pvo = n[from].pvo;
	q.remote_pvo = n[to].pvo;
	q.length = len;
	q.local_rcxt = rl;
	q.remote_rcxt = rr;
	q.remote_rcxt_key = kr;
	q.notify = WEFT_NOTIFY_BOTH;
	q.tid = 1;
	REQUIRE(weft_sim_post_rdma(&n[from].win, WEFT_SF_RDMAW, (uint16_t)to, 0, &q) == 0,
	      "post from node %u", from);
}

int main(void)
{
	struct weft_sim_config cfg = {
		.nr_nodes = 3, .mem_size = 16u << 20, .seed = 5,
		.faults = { .routes = 3, .delay_ns = 20000, .jitter_ns = 5000,
			    .route_skew_ns = 3000 },
	};
	struct weft_sim *s = st_sim(&cfg);
	struct st_node n[3];
	uint64_t snap, drops0, drops1, rx0, i;
	int rc;

	weft_sim_set_dma_hook(s, hook, NULL);
	for (i = 0; i < 3; i++)
		st_node_setup(s, (unsigned int)i, 31, 4u << 20, 6, false, &n[i]);

	/* 1: close the sending window in the middle of a 4 MiB write. */
	post_write(s, n, 0, 1, 4u << 20);
	for (i = 0; i < 20; i++)
		weft_sim_progress(s);
	CHECK(weft_sim_reg_read(s, 0, WEFT_REG_LIVE_TASK_VIEW) != 0,
	      "no adapter task busy on node 0 after 20 rounds of a 4 MiB write");
	weft_sim_reg_write(s, 0, WEFT_REG_CMD_CLOSE_WINDOW, 0);
	snap = weft_sim_reg_read(s, 0, WEFT_REG_SNAPSHOT_VIEW);
	REQUIRE(snap != 0, "Snapshot View is 0 right after Close Window with a busy transmit task");
	watch = (struct watch){ .node = 0, .lo = n[0].win.send_addr,
				.hi = n[0].win.send_addr + (uint64_t)n[0].win.send_frames * WEFT_FRAME_SIZE };
	rc = weft_sim_close_window(&n[0].win);
	REQUIRE(rc == 0, "close window 0 on node 0: %d", rc);
	REQUIRE(weft_sim_reg_read(s, 0, WEFT_REG_SNAPSHOT_VIEW) == 0, "snapshot not clear");
	watch.armed = true;
	weft_sim_run_idle(s, 0);
	CHECK(watch.hits == 0, "%llu adapter writes into the freed send FIFO of node 0",
	      (unsigned long long)watch.hits);
	t_point("snapshot: sender closed mid-transfer, Snapshot View 0x%llx -> 0, "
	       "no write into the freed send FIFO afterwards", (unsigned long long)snap);

	/* 2: close the receiving window with frames in flight towards it. */
	watch.armed = false;
	post_write(s, n, 2, 1, 2u << 20);
	rx0 = weft_sim_counter(s, 1, WEFT_CNT_RX_PACKETS);
	drops0 = weft_sim_counter(s, 1, WEFT_CNT_DROP(WEFT_R_WINDOW_INVALID)) +
		 weft_sim_counter(s, 1, WEFT_CNT_DROP(WEFT_R_RCXT_INVALID));
	for (i = 0; i < 100000 && weft_sim_counter(s, 1, WEFT_CNT_RX_PACKETS) <= rx0; i++)
		weft_sim_progress(s);
	CHECK(weft_sim_counter(s, 1, WEFT_CNT_RX_PACKETS) > rx0, "node 1 received nothing");
	REQUIRE(weft_fabric_queued(weft_sim_fabric(s)) > 0, "nothing in flight any more");
	rc = weft_sim_close_window(&n[1].win);
	REQUIRE(rc == 0, "close window 0 on node 1: %d", rc);
	watch = (struct watch){ .node = 1, .any = true, .armed = true };
	weft_sim_run_idle(s, 0);
	drops1 = weft_sim_counter(s, 1, WEFT_CNT_DROP(WEFT_R_WINDOW_INVALID)) +
		 weft_sim_counter(s, 1, WEFT_CNT_DROP(WEFT_R_RCXT_INVALID));
	CHECK(watch.hits == 0, "%llu adapter writes into node 1 memory after its window closed",
	      (unsigned long long)watch.hits);
	CHECK(drops1 > drops0, "late packets were not dropped as WINDOW_INVALID/RCXT_INVALID");
	t_point("snapshot: receiver closed with frames in flight, %llu late packets dropped, "
	       "no adapter write into node 1 memory afterwards",
	       (unsigned long long)(drops1 - drops0));
	weft_sim_free(s);
	return t_done();
}
