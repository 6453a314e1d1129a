/* SPDX-License-Identifier: MIT */
/*
 * Checklist item 89 (seed 1.5.17 solution 2, 000 ¶159): the "re-register
 * on MP_FATAL" driver mode (weft.ko rereg_on_fatal, the sim's
 * rereg_on_fatal; docs/driver.md, docs/failover.md), with the shipped
 * driver policy:
 *  - in the mode, rCxts carry key 0 before and after an adapter recovery
 *    (the rCxt key is not what stops stale packets);
 *  - after the recovery the protocol re-registers its buffer and gets a
 *    new PVO key; a write with the new PVO completes byte-exact;
 *  - a stale-PVO packet (the PVO of before the recovery) is discarded at
 *    the TCE key check, memory is untouched, no completion is sent, and
 *    the adapter raises a window fatal error (LMT state FATAL, reason
 *    TCE_KEY, the driver sees WINDOW_FATAL);
 *  - without the mode the same stale PVO is only discarded and reported
 *    as a protection event: the window stays valid (item 23).
 */
#include <string.h>

#include "simtest.h"
#include "weft_policy.h"

#define JOB     300u
#define LEN     4000u

static void write_wait(struct weft_sim *s, struct st_node *a, struct st_node *b, uint64_t pvo,
		       uint32_t ra, uint32_t rb, uint16_t kb, uint32_t tid)
{
	struct weft_rdma_req q = {
		.local_pvo = a->pvo, .remote_pvo = pvo, .length = LEN,
		.local_rcxt = ra, .remote_rcxt = rb, .remote_rcxt_key = kb,
		.notify = WEFT_NOTIFY_BOTH, .tid = tid,
	};

	REQUIRE(weft_sim_post_rdma(&a->win, WEFT_SF_RDMAW, (uint16_t)b->win.node,
				 (uint16_t)b->win.window, &q) == 0, "post");
	weft_sim_run_idle(s, 0);
}

static uint64_t win_state(struct weft_sim *s, unsigned int node, unsigned int w)
{
	return weft_core_db_read(weft_sim_core(s, node),
				 (uint64_t)w * WEFT_DB_PAGE_SIZE + WEFT_DB_STATE, 8);
}

static uint32_t fatal_reason(struct weft_sim *s, unsigned int node, unsigned int w)
{
	struct weft_lmt l;
	uint64_t q[sizeof(l) / 8];
	unsigned int i;

	for (i = 0; i < sizeof(l) / 8; i++)
		q[i] = weft_core_sram_read(weft_sim_core(s, node), WEFT_SRAM_LMT_OFF(w) + 8 * i, 8);
	memcpy(&l, q, sizeof(l));
	return l.fatal_reason;
}

/* Set up, recover node 1, re-register its buffer: returns the stale PVO. */
static uint64_t scenario(struct weft_sim *s, struct st_node *n, uint32_t *ra, uint32_t *rb,
			 uint16_t *kb, bool mode)
{
	uint64_t old_pvo;
	uint16_t ka;

	st_node_setup(s, 0, JOB, 1u << 16, 6, false, &n[0]);
	st_node_setup(s, 1, JOB, 1u << 16, 6, false, &n[1]);
	st_fill(weft_sim_ptr(s, 0, n[0].buf, LEN), LEN, 89);
	REQUIRE(weft_sim_rcxt_alloc(s, 0, 0, ra, &ka) == 0, "rcxt");
	REQUIRE(weft_sim_rcxt_alloc(s, 1, 0, rb, kb) == 0, "rcxt");
	CHECK(mode ? *kb == 0 : *kb == (uint16_t)weft_sim_recovery_count(s, 1),
	      "rCxt key %u before recovery", *kb);
	write_wait(s, &n[0], &n[1], n[1].pvo, *ra, *rb, *kb, 1);
	REQUIRE(st_completions(&n[1]) == 1 && st_completions(&n[0]) == 1, "write before recovery");
	old_pvo = n[1].pvo;

	if (mode) {
		/* MP_FATAL: the adapter recovers, the protocol re-acquires its
		 * rCxts and re-registers its memory with new keys. */
		REQUIRE(weft_sim_node_recover(s, 1) == 0, "recover");
		REQUIRE(weft_sim_window_refresh(&n[1].win) == 1, "window not re-opened");
		REQUIRE(weft_sim_rcxt_alloc(s, 1, 0, rb, kb) == 0, "rcxt after recovery");
		CHECK(*kb == 0, "rCxt key %u after recovery in the mode", *kb);
	}
	REQUIRE(weft_sim_dereg_mr(s, 1, n[1].mr) == 0, "dereg");
	n[1].mr = weft_sim_reg_mr(s, 1, JOB, n[1].buf, n[1].len, 0, &n[1].pvo);
	REQUIRE(n[1].mr > 0, "re-register");
	CHECK(weft_pvo_key(n[1].pvo) != weft_pvo_key(old_pvo), "same PVO key after re-registration");
	return old_pvo;
}

static void mode_on(void)
{
	struct weft_sim_config cfg = {
		.nr_nodes = 2, .mem_size = 16u << 20, .seed = 89, .rereg_on_fatal = true,
	};
	struct weft_sim *s = st_sim(&cfg);
	struct st_node n[2];
	uint64_t stale, drops;
	uint32_t ra, rb;
	uint16_t kb;
	uint8_t *dst;

	stale = scenario(s, n, &ra, &rb, &kb, true);
	dst = weft_sim_ptr(s, 1, n[1].buf, LEN);
	memset(dst, 0, LEN);
	write_wait(s, &n[0], &n[1], n[1].pvo, ra, rb, kb, 2);
	CHECK(!memcmp(dst, weft_sim_ptr(s, 0, n[0].buf, LEN), LEN), "new PVO: data differs");
	REQUIRE(st_completions(&n[1]) == 1, "new PVO: no completion");
	t_point("item 89: in the mode rCxt keys stay 0 across a recovery; the re-registered "
		"buffer (new PVO key) is written byte-exact");

	memset(dst, 0xa5, LEN);
	drops = weft_sim_counter(s, 1, WEFT_CNT_DROP(WEFT_R_TCE_KEY));
	write_wait(s, &n[0], &n[1], stale, ra, rb, kb, 3);
	CHECK(weft_sim_counter(s, 1, WEFT_CNT_DROP(WEFT_R_TCE_KEY)) == drops + 1,
	      "TCE_KEY drops %llu",
	      (unsigned long long)(weft_sim_counter(s, 1, WEFT_CNT_DROP(WEFT_R_TCE_KEY)) - drops));
	CHECK(dst[0] == 0xa5 && !memcmp(dst, dst + 1, LEN - 1), "stale PVO wrote memory");
	REQUIRE(st_completions(&n[1]) == 0, "stale PVO completed");
	CHECK(win_state(s, 1, n[1].win.window) == WEFT_WIN_FATAL, "window state %llu",
	      (unsigned long long)win_state(s, 1, n[1].win.window));
	CHECK(fatal_reason(s, 1, n[1].win.window) == WEFT_R_TCE_KEY, "fatal reason %u",
	      fatal_reason(s, 1, n[1].win.window));
	REQUIRE(weft_sim_window_fatals(s, 1, n[1].win.window) == 1, "driver saw %llu fatals",
	      (unsigned long long)weft_sim_window_fatals(s, 1, n[1].win.window));
	t_point("item 89: a stale-PVO packet after re-registration is discarded (TCE_KEY, memory "
		"untouched, no completion) and raises a window fatal error (reason TCE_KEY)");
	weft_sim_free(s);
}

static void mode_off(void)
{
	struct weft_sim_config cfg = { .nr_nodes = 2, .mem_size = 16u << 20, .seed = 90 };
	struct weft_sim *s = st_sim(&cfg);
	struct st_node n[2];
	uint64_t stale, drops, prot;
	uint32_t ra, rb;
	uint16_t kb;

	stale = scenario(s, n, &ra, &rb, &kb, false);
	drops = weft_sim_counter(s, 1, WEFT_CNT_DROP(WEFT_R_TCE_KEY));
	prot = weft_sim_event_count(s, 1, WEFT_EV_PROTECTION);
	write_wait(s, &n[0], &n[1], stale, ra, rb, kb, 2);
	CHECK(weft_sim_counter(s, 1, WEFT_CNT_DROP(WEFT_R_TCE_KEY)) > drops, "no TCE_KEY drop");
	CHECK(weft_sim_event_count(s, 1, WEFT_EV_PROTECTION) > prot, "no protection event");
	CHECK(win_state(s, 1, n[1].win.window) == WEFT_WIN_VALID, "window state %llu",
	      (unsigned long long)win_state(s, 1, n[1].win.window));
	REQUIRE(weft_sim_window_fatals(s, 1, n[1].win.window) == 0, "window fatal without the mode");
	write_wait(s, &n[0], &n[1], n[1].pvo, ra, rb, kb, 3);
	REQUIRE(st_completions(&n[1]) == 1, "window unusable after the stale packet");
	t_point("item 89: without the mode the same stale PVO is discarded with a protection "
		"event and the window stays valid");
	weft_sim_free(s);
}

int main(void)
{
	mode_on();
	mode_off();
	return t_done();
}
