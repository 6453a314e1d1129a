/* SPDX-License-Identifier: MIT */
/*
 * Checklist item 24, node-global TCE tables: two nodes with two adapters
 * each (adapters 0, 1 and 2, 3).  One job slot per node, taken through
 * one adapter, holds for both; one registration per buffer gives one PVO
 * that works through both adapters at both ends; a deregistration made
 * through the other adapter invalidates it on both (later writes through
 * either are dropped as TCE_KEY and touch no memory), and so does
 * detaching the job.  docs/driver.md, "Node-global tables".
 */
#include <errno.h>
#include <string.h>

#include "simtest.h"

#define LEN     (256u << 10)
#define JOB     24u

struct ad {
	struct weft_sim_window win;
	uint32_t rcxt;
	uint16_t key;
};

static void open_adapter(struct weft_sim *s, unsigned int node, struct ad *a)
{
	struct weft_sim_window_cfg wc = { .job = JOB, .window = 0 };

	REQUIRE(weft_sim_open_window(s, node, &wc, &a->win) == 0, "adapter %u: window", node);
	REQUIRE(weft_sim_rcxt_alloc(s, node, 0, &a->rcxt, &a->key) == 0, "adapter %u: rcxt", node);
}

/* RDMA write of len bytes from src (PVO) through adapter a to the target
 * PVO dst through adapter b; returns the target completions. */
static unsigned int write_via(struct weft_sim *s, struct ad *a, struct ad *b, uint64_t src,
			      uint64_t dst, uint64_t len, uint32_t tid)
{
	struct weft_rdma_req q = {
		.local_pvo = src, .remote_pvo = dst, .length = len,
		.local_rcxt = a->rcxt, .remote_rcxt = b->rcxt, .remote_rcxt_key = b->key,
		.notify = WEFT_NOTIFY_TARGET, .tid = tid,
	};
	struct weft_recv_hdr h;
	unsigned int k = 0;

	REQUIRE(weft_sim_post_rdma(&a->win, WEFT_SF_RDMAW, (uint16_t)b->win.node,
				 (uint16_t)b->win.window, &q) == 0, "post");
	weft_sim_run_idle(s, 0);
	while (weft_sim_poll_recv(&b->win, &h, NULL, 0) == 1)
		if (h.type == WEFT_RF_COMPLETION && h.status == 0)
			k++;
	return k;
}

static uint64_t tce_key_drops(struct weft_sim *s, unsigned int a0)
{
	return weft_sim_counter(s, a0, WEFT_CNT_DROP(WEFT_R_TCE_KEY)) +
	       weft_sim_counter(s, a0 + 1, WEFT_CNT_DROP(WEFT_R_TCE_KEY));
}

int main(void)
{
	struct weft_sim_config cfg = {
		.nr_nodes = 4, .adapters = 2, .mem_size = 16u << 20, .seed = 24,
		.faults = { .routes = 2, .delay_ns = 1000, .jitter_ns = 500 },
	};
	struct weft_sim *s = st_sim(&cfg);
	struct ad ad[4];
	uint64_t src, dst, ps, pd, drops;
	uint8_t *sp, *dp;
	unsigned int i;
	int hs, hd;

	/* Both adapters of a node see its memory and its job slot. */
	CHECK(weft_sim_mem(s, 0) == weft_sim_mem(s, 1), "adapters 0 and 1 do not share memory");
	REQUIRE(weft_sim_job_attach(s, 0, JOB) >= 0, "attach on node 0");
	CHECK(weft_sim_job_attach(s, 1, JOB) == -EEXIST, "adapter 1 has a slot of its own");
	REQUIRE(weft_sim_job_attach(s, 3, JOB) >= 0, "attach on node 1");
	CHECK(weft_sim_job_attach(s, 2, JOB) == -EEXIST, "adapter 2 has a slot of its own");
	for (i = 0; i < 4; i++)
		open_adapter(s, i, &ad[i]);
	t_point("item 24: a job attached through one adapter owns its slot on both");

	/* One registration per buffer, one PVO each. */
	src = weft_sim_alloc(s, 1, LEN, 4096);
	dst = weft_sim_alloc(s, 2, LEN, 4096);
	REQUIRE(src && dst, "buffers");
	hs = weft_sim_reg_mr(s, 1, JOB, src, LEN, 12, &ps);
	hd = weft_sim_reg_mr(s, 2, JOB, dst, LEN, 12, &pd);
	REQUIRE(hs > 0 && hd > 0, "reg");
	sp = weft_sim_ptr(s, 0, src, LEN);
	dp = weft_sim_ptr(s, 2, dst, LEN);
	st_fill(sp, LEN, 24);
	memset(dp, 0, LEN);

	/* First half through adapters 0 -> 2, second half through 1 -> 3,
	 * with the same two PVOs. */
	REQUIRE(write_via(s, &ad[0], &ad[2], ps, pd, LEN / 2, 1) == 1, "no completion via 0 -> 2");
	REQUIRE(write_via(s, &ad[1], &ad[3], ps + LEN / 2, pd + LEN / 2, LEN / 2, 1) == 1,
	      "no completion via 1 -> 3");
	CHECK(st_diff(sp, dp, LEN) < 0, "data differs at %lld", st_diff(sp, dp, LEN));
	/* And crosswise: 1 -> 2 and 0 -> 3, whole buffer again. */
	st_fill(sp, LEN, 25);
	REQUIRE(write_via(s, &ad[1], &ad[2], ps, pd, LEN, 2) == 1, "no completion via 1 -> 2");
	CHECK(st_diff(sp, dp, LEN) < 0, "data differs (1 -> 2)");
	st_fill(sp, LEN, 26);
	REQUIRE(write_via(s, &ad[0], &ad[3], ps, pd, LEN, 2) == 1, "no completion via 0 -> 3");
	CHECK(st_diff(sp, dp, LEN) < 0, "data differs (0 -> 3)");
	REQUIRE(tce_key_drops(s, 0) + tce_key_drops(s, 2) == 0, "TCE_KEY drops with valid PVOs");
	t_point("item 24: one registration per node, PVO 0x%llx used through both adapters "
		"at both ends, byte-exact", (unsigned long long)pd);

	/* Deregistration through the other adapter (3) invalidates the PVO on
	 * both adapters of node 1. */
	REQUIRE(weft_sim_dereg_mr(s, 3, hd) == 0, "dereg via adapter 3");
	CHECK(weft_sim_dereg_mr(s, 2, hd) == -ENOENT, "registration still known via adapter 2");
	memset(dp, 0x5a, LEN);
	drops = tce_key_drops(s, 2);
	REQUIRE(write_via(s, &ad[0], &ad[2], ps, pd, 8192, 3) == 0, "completion after dereg (2)");
	CHECK(tce_key_drops(s, 2) > drops, "adapter 2 did not drop as TCE_KEY");
	drops = tce_key_drops(s, 2);
	REQUIRE(write_via(s, &ad[1], &ad[3], ps, pd, 8192, 3) == 0, "completion after dereg (3)");
	CHECK(tce_key_drops(s, 2) > drops, "adapter 3 did not drop as TCE_KEY");
	for (i = 0; i < LEN; i++)
		CHECK(dp[i] == 0x5a, "byte %u written after dereg", i);
	t_point("item 24: deregistration through adapter 3 invalidates the PVO on adapters 2 and 3");

	/* Detaching the job through adapter 1 frees the slot of both. */
	REQUIRE(weft_sim_dereg_mr(s, 0, hs) == 0, "dereg source");
	REQUIRE(weft_sim_job_detach(s, 1, JOB) == 0, "detach via adapter 1");
	CHECK(weft_sim_job_detach(s, 0, JOB) == -ENOENT, "slot still held via adapter 0");
	CHECK(weft_sim_job_attach(s, 0, JOB + 1) >= 0 && weft_sim_job_attach(s, 1, JOB + 1) == -EEXIST,
	      "slot not node-global after detach");
	t_point("item 24: detaching through adapter 1 frees the slot for both adapters");
	weft_sim_free(s);
	return t_done();
}
