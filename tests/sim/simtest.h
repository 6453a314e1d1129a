/* SPDX-License-Identifier: MIT */
/* Helpers shared by the sim tests, the failover campaign and the bench. */
#ifndef WEFT_SIMTEST_H
#define WEFT_SIMTEST_H

#include <stdio.h>
#include <stdlib.h>

#include "weft_sim.h"
#include "weft_test.h"
#include "rel.h"

/* One node's test set-up: a job slot, an open window and one registered
 * buffer of len bytes at buf. */
struct st_node {
	struct weft_sim_window win;
	uint32_t job;
	uint64_t buf, len, pvo;
	int mr;
};

/* Create a sim, or fail (CHECK) with the reason. */
struct weft_sim *st_sim(const struct weft_sim_config *cfg);
/* Job attach, window open (log2 FIFO sizes, 0 = default), buffer
 * allocation and registration; exits on failure. */
void st_node_setup(struct weft_sim *s, unsigned int node, uint32_t job, uint64_t len,
		   uint32_t fifo_log2, bool bcast, struct st_node *out);
/* Re-open the window and re-register the buffer after a reboot (same
 * buffer address, new PVO). */
void st_node_reattach(struct weft_sim *s, unsigned int node, struct st_node *n,
		      uint32_t fifo_log2);
/* Deterministic byte pattern. */
void st_fill(uint8_t *p, size_t n, uint64_t seed);
/* Offset of the first differing byte, or -1. */
long long st_diff(const uint8_t *a, const uint8_t *b, size_t n);
/* Sum of a core counter over all nodes. */
uint64_t st_counter_sum(struct weft_sim *s, unsigned int c);
/* Drains n's receive FIFO; returns how many successful completions it held. */
unsigned int st_completions(struct st_node *n);

/* The sim-level failover campaign (docs/failover.md). */
struct failover_cfg {
	unsigned int nodes;         /* >= 2 */
	uint64_t events;            /* reboot + recovery events to inject */
	uint64_t seed;
	unsigned int replay;        /* frames replayed after each event */
	bool verbose;
};
struct failover_report {
	uint64_t events, reboots, recoveries;
	uint64_t messages, delivered, lost, duplicated;
	uint64_t replayed, stale_accepted;
	uint64_t drop_tce_key, drop_rcxt_key, drop_tid_stale, drop_rcxt_invalid, drop_duplicate,
		 drop_other;
	uint64_t cpl_filtered;      /* stale completions accepted into a FIFO, ignored by the ULP */
	uint64_t retries, mismatched_bytes;
	uint64_t counter_mismatches;
	double virt_seconds;
};
/* Runs the campaign; returns 0 when every check held. */
int failover_run(const struct failover_cfg *cfg, struct failover_report *rep);
/* The report as two lines, each starting with prefix. */
void failover_print(const char *prefix, const struct failover_report *rep);

#endif /* WEFT_SIMTEST_H */
