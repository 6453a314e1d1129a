/* SPDX-License-Identifier: MIT */
/*
 * The sim driver's seed rules, end to end through the adapter:
 *  - 5 job slots, a 6th job is refused (checklist 25);
 *  - first-fit TCE allocation: a freed run is reused first (26);
 *  - a buffer in a 16 MiB-page table translates (21);
 *  - round-robin rCxts: free then allocate gives another id (86);
 *  - rCxt key = recovery count; after recovery a packet with the old key
 *    is dropped as RCXT_KEY, with no window fatal error (84, 85);
 *  - re-registering after a reboot gives a new PVO key (87); an RDMA write
 *    with the pre-reboot PVO is dropped as TCE_KEY and memory is untouched (88).
 */
#include <errno.h>
#include <string.h>

#include "simtest.h"

static void write_and_wait(struct weft_sim *s, struct st_node *a, struct st_node *b,
			   uint64_t local_pvo, uint64_t remote_pvo, uint64_t len,
			   uint32_t ra, uint32_t rb, uint16_t kb, uint32_t tid)
{
	struct weft_rdma_req q = {
		.local_pvo = local_pvo, .remote_pvo = remote_pvo, .length = len,
		.local_rcxt = ra, .remote_rcxt = rb, .remote_rcxt_key = kb,
		.notify = WEFT_NOTIFY_BOTH, .tid = tid,
	};

	REQUIRE(weft_sim_post_rdma(&a->win, WEFT_SF_RDMAW, (uint16_t)b->win.node,
				 (uint16_t)b->win.window, &q) == 0, "post");
	weft_sim_run_idle(s, 0);
}

int main(void)
{
	struct weft_sim_config cfg = {
		.nr_nodes = 2, .mem_size = 64u << 20, .seed = 11,
		.faults = { .routes = 2, .delay_ns = 1000, .jitter_ns = 1000 },
	};
	struct weft_sim *s = st_sim(&cfg);
	struct st_node n[2];
	uint64_t pa, pb, pc, pvo16, big, old_pvo, new_pvo, before;
	uint32_t r1, r2, ra, rb, rb2;
	uint16_t k1, k2, ka, kb, kb2;
	int ha, hb, hc, j, rc;
	uint8_t *p;

	st_node_setup(s, 0, 100, 1u << 20, 6, false, &n[0]);
	st_node_setup(s, 1, 100, 1u << 20, 6, false, &n[1]);

	/* Job slots: the test's job holds one; 4 more fit, the next does not. */
	for (j = 1; j <= 4; j++)
		REQUIRE(weft_sim_job_attach(s, 1, 100 + j) >= 0, "job %d", 100 + j);
	rc = weft_sim_job_attach(s, 1, 200);
	REQUIRE(rc == -ENOSPC, "6th job: %d", rc);
	REQUIRE(weft_sim_job_detach(s, 1, 104) == 0, "detach");
	REQUIRE(weft_sim_job_attach(s, 1, 200) >= 0, "attach after detach");
	t_point("driver: 5 job slots, the 6th job refused, a detached slot reused");

	/* First fit. */
	ha = weft_sim_reg_mr(s, 1, 100, n[1].buf, 3 * 4096, 12, &pa);
	hb = weft_sim_reg_mr(s, 1, 100, n[1].buf, 2 * 4096, 12, &pb);
	REQUIRE(ha > 0 && hb > 0, "reg");
	CHECK(weft_pvo_offset(pb) == weft_pvo_offset(pa) + 3 * 4096, "B not right after A");
	REQUIRE(weft_sim_dereg_mr(s, 1, ha) == 0, "dereg");
	hc = weft_sim_reg_mr(s, 1, 100, n[1].buf, 2 * 4096, 12, &pc);
	CHECK(hc > 0 && weft_pvo_offset(pc) == weft_pvo_offset(pa), "freed run not reused first");
	CHECK(weft_pvo_key(pc) != weft_pvo_key(pa), "same key for a new registration");
	t_point("driver: first-fit TCEs (freed run reused, new key)");

	/* 16 MiB pages: a buffer at a 16 MiB boundary, written through RDMA. */
	big = weft_sim_alloc(s, 1, 16u << 20, 16u << 20);
	REQUIRE(big, "16 MiB buffer");
	REQUIRE(weft_sim_reg_mr(s, 1, 100, big, 16u << 20, 0, &pvo16) > 0, "reg 16M");
	CHECK(weft_pvo_table(pvo16) % WEFT_SLOT_TABLES < WEFT_SLOT_TABLES_16M, "not a 16M table");
	REQUIRE(weft_sim_rcxt_alloc(s, 0, 0, &ra, &ka) == 0, "rcxt");
	REQUIRE(weft_sim_rcxt_alloc(s, 1, 0, &rb, &kb) == 0, "rcxt");
	st_fill(weft_sim_ptr(s, 0, n[0].buf, 65536), 65536, 5);
	write_and_wait(s, &n[0], &n[1], n[0].pvo, pvo16 + 5000000, 65536, ra, rb, kb, 1);
	CHECK(!memcmp(weft_sim_ptr(s, 0, n[0].buf, 65536), weft_sim_ptr(s, 1, big + 5000000, 65536),
		      65536), "16 MiB page data differs");
	REQUIRE(st_completions(&n[1]) == 1, "no target completion");
	t_point("driver: RDMA write into a 16 MiB-page table, byte-exact");

	/* Round robin. */
	REQUIRE(weft_sim_rcxt_alloc(s, 1, 0, &r1, &k1) == 0, "alloc");
	REQUIRE(weft_sim_rcxt_free(s, 1, r1) == 0, "free");
	REQUIRE(weft_sim_rcxt_alloc(s, 1, 0, &r2, &k2) == 0, "alloc");
	CHECK(r2 != r1, "round robin gave rCxt %u again", r1);
	t_point("driver: round-robin rCxts (%u freed, %u next)", r1, r2);

	/* Recovery: the key moves, the old key is refused without a fatal. */
	REQUIRE(weft_sim_node_recover(s, 1) == 0, "recover");
	REQUIRE(weft_sim_window_refresh(&n[1].win) == 1, "window not re-opened");
	REQUIRE(weft_sim_rcxt_alloc(s, 1, 0, &rb2, &kb2) == 0, "alloc after recovery");
	CHECK(kb2 == (uint16_t)(kb + 1), "key %u after recovery, was %u", kb2, kb);
	CHECK(kb2 == (uint16_t)weft_sim_recovery_count(s, 1), "key is not the recovery count");
	before = weft_sim_counter(s, 1, WEFT_CNT_DROP(WEFT_R_RCXT_KEY));
	write_and_wait(s, &n[0], &n[1], n[0].pvo, n[1].pvo, 4000, ra, rb2, kb, 2);
	CHECK(weft_sim_counter(s, 1, WEFT_CNT_DROP(WEFT_R_RCXT_KEY)) == before + 3,
	      "RCXT_KEY drops %llu, expected 3 more",
	      (unsigned long long)(weft_sim_counter(s, 1, WEFT_CNT_DROP(WEFT_R_RCXT_KEY)) - before));
	REQUIRE(weft_sim_window_fatals(s, 1, 0) == 0, "window fatal error after a stale key");
	REQUIRE(st_completions(&n[1]) == 0, "a stale-key write completed");
	write_and_wait(s, &n[0], &n[1], n[0].pvo, n[1].pvo, 4000, ra, rb2, kb2, 3);
	REQUIRE(st_completions(&n[1]) == 1, "the new key does not work");
	t_point("driver: recovery bumps the rCxt key to %u; old key dropped as RCXT_KEY, "
	       "no window fatal", kb2);

	/* Reboot: new PVO key; the old PVO is refused, memory untouched. */
	old_pvo = n[1].pvo;
	REQUIRE(weft_sim_node_reboot(s, 1) == 0, "reboot");
	st_node_reattach(s, 1, &n[1], 6);
	new_pvo = n[1].pvo;
	CHECK(weft_pvo_key(new_pvo) != weft_pvo_key(old_pvo), "same PVO key after reboot");
	REQUIRE(weft_sim_rcxt_alloc(s, 1, 0, &rb, &kb) == 0, "alloc after reboot");
	p = weft_sim_ptr(s, 1, n[1].buf, 4000);
	memset(p, 0x5a, 4000);
	before = weft_sim_counter(s, 1, WEFT_CNT_DROP(WEFT_R_TCE_KEY));
	write_and_wait(s, &n[0], &n[1], n[0].pvo, old_pvo, 4000, ra, rb, kb, 4);
	CHECK(weft_sim_counter(s, 1, WEFT_CNT_DROP(WEFT_R_TCE_KEY)) > before, "no TCE_KEY drop");
	for (j = 0; j < 4000; j++)
		CHECK(p[j] == 0x5a, "byte %d written through a pre-reboot PVO", j);
	write_and_wait(s, &n[0], &n[1], n[0].pvo, new_pvo, 4000, ra, rb, kb, 5);
	CHECK(!memcmp(p, weft_sim_ptr(s, 0, n[0].buf, 4000), 4000), "new PVO write differs");
	t_point("driver: reboot gives PVO key 0x%x (was 0x%x); the old PVO is dropped as TCE_KEY, "
	       "memory untouched; the new one works", weft_pvo_key(new_pvo),
	       weft_pvo_key(old_pvo));
	weft_sim_free(s);
	return t_done();
}
