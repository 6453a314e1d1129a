/* SPDX-License-Identifier: MIT */
/*
 * Sim-level failover campaign, test size: 2 nodes and 3 nodes, 1500
 * randomized reboot/recovery events each, 24 captured frames replayed
 * after every event.  Fails unless no stale frame was accepted, no
 * message was lost or delivered twice, target memory holds exactly the
 * data of the delivered messages, the counters agree, and both reboot
 * (TCE_KEY) and recovery (RCXT_KEY) protections actually fired.
 */
#include "simtest.h"

static void one(unsigned int nodes, uint64_t events, uint64_t seed)
{
	struct failover_cfg cfg = { .nodes = nodes, .events = events, .seed = seed, .replay = 24 };
	struct failover_report rep;
	int rc = failover_run(&cfg, &rep);

	printf("[%u nodes] ", nodes);
	failover_print(&rep);
	CHECK(rc == 0, "campaign failed (see the figures above)");
	CHECK(rep.events == events, "only %llu events", (unsigned long long)rep.events);
	CHECK(rep.reboots > 0 && rep.recoveries > 0, "both event kinds must occur");
	CHECK(rep.drop_tce_key > 0, "no replayed frame was stopped by the TCE key check");
	CHECK(rep.drop_rcxt_key > 0, "no replayed frame was stopped by the rCxt key check");
	CHECK(rep.messages > 0 && rep.delivered == rep.messages, "delivered %llu of %llu",
	      (unsigned long long)rep.delivered, (unsigned long long)rep.messages);
}

int main(void)
{
	one(2, 1500, 1);
	one(3, 1500, 2);
	return 0;
}
