/* SPDX-License-Identifier: MIT */
/*
 * Sim-level failover campaign, test size: 2 nodes and 3 nodes, 1500
 * randomized reboot/recovery events each, 24 captured frames replayed
 * after every event.  Fails unless no stale frame was accepted, no
 * message was lost or delivered twice, target memory holds exactly the
 * data of the delivered messages, the counters agree, and both reboot
 * (TCE_KEY) and recovery (RCXT_KEY) protections actually fired.  Also
 * checks that the same seed gives the same run.
 */
#include <string.h>

#include "simtest.h"

static void one(unsigned int nodes, uint64_t events, uint64_t seed)
{
	struct failover_cfg cfg = { .nodes = nodes, .events = events, .seed = seed, .replay = 24 };
	struct failover_report rep;
	int rc = failover_run(&cfg, &rep);
	char prefix[32];

	snprintf(prefix, sizeof(prefix), "# [%u nodes] ", nodes);
	failover_print(prefix, &rep);
	REQUIRE(rc == 0, "campaign failed (see the figures above)");
	CHECK(rep.events == events, "only %llu events", (unsigned long long)rep.events);
	REQUIRE(rep.reboots > 0 && rep.recoveries > 0, "both event kinds must occur");
	REQUIRE(rep.drop_tce_key > 0, "no replayed frame was stopped by the TCE key check");
	REQUIRE(rep.drop_rcxt_key > 0, "no replayed frame was stopped by the rCxt key check");
	CHECK(rep.messages > 0 && rep.delivered == rep.messages, "delivered %llu of %llu",
		(unsigned long long)rep.delivered, (unsigned long long)rep.messages);
	t_point("failover, %u nodes: %llu events, no stale frame accepted, all %llu messages "
		"delivered once; TCE_KEY and RCXT_KEY drops both seen", nodes,
		(unsigned long long)rep.events, (unsigned long long)rep.messages);
}

/* The sim is deterministic: the same seed gives the same run, bit for
 * bit; another seed gives another run. */
static void determinism(void)
{
	struct failover_cfg cfg = { .nodes = 2, .events = 300, .seed = 77, .replay = 24 };
	struct failover_report a, b, c;

	REQUIRE(failover_run(&cfg, &a) == 0, "run a");
	REQUIRE(failover_run(&cfg, &b) == 0, "run b");
	cfg.seed = 78;
	REQUIRE(failover_run(&cfg, &c) == 0, "run c");
	CHECK(!memcmp(&a, &b, sizeof(a)), "two runs with seed 77 differ");
	CHECK(memcmp(&a, &c, sizeof(a)), "seeds 77 and 78 gave the same run");
	t_point("failover: seed 77 twice gives identical reports (%llu messages, %.6f s virtual); "
	       "seed 78 differs (%llu messages)", (unsigned long long)a.messages,
	       a.virt_seconds, (unsigned long long)c.messages);
}

int main(void)
{
	one(2, 1500, 1);
	one(3, 1500, 2);
	determinism();
	return t_done();
}
