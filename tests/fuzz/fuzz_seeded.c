/* SPDX-License-Identifier: MIT */
/*
 * Seeded random fuzz driver for the Weft core (suite 'fuzz'):
 *   weft-fuzz-seeded [INPUTS [SEED]]      default 100000 inputs, seed 1
 * Each input is one action (register/SRAM/doorbell access, random or
 * mutated-valid wire packet, user FIFO consumption, adapter rounds); every
 * 1000 inputs node 0 is rebooted and set up again.  Fails on any adapter
 * memory write outside a FIFO, the event queue or a TCE-mapped page, and
 * on any changed canary.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_engine.h"

int main(int argc, char **argv)
{
	uint64_t inputs = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	struct fz_src src = { .rng = seed };
	struct fz *f = fz_new(seed, false);
	struct fz_stats stats, *st = &stats;
	uint64_t i, bad;

	if (!f) {
		fprintf(stderr, "fuzz: cannot set up the sim\n");
		return 1;
	}
	for (i = 0; i < inputs; i++) {
		if (i && i % 1000 == 0)
			fz_reset(f);
		fz_action(f, &src);
	}
	bad = fz_finish(f);
	stats = *fz_stats(f);
	printf("fuzz: %" PRIu64 " inputs (seed %" PRIu64 "): %" PRIu64 " register, %" PRIu64
	       " SRAM, %" PRIu64 " doorbell writes, %" PRIu64 " packets (%" PRIu64
	       " mutated-valid), %" PRIu64 " resets; adapter DMA writes checked: %" PRIu64
	       " (FIFO %" PRIu64 ", event queue %" PRIu64 ", TCE pages %" PRIu64
	       "; verbs CQ %" PRIu64 ", command/dump %" PRIu64 ", region pages %" PRIu64
	       "); verbs: %" PRIu64 " WQEs, %" PRIu64 " commands, %" PRIu64 " UAR doorbells"
	       "; violations %" PRIu64 ", canary bytes hit %" PRIu64 "\n",
	       inputs, seed, st->reg_writes, st->sram_writes, st->db_writes, st->packets,
	       st->mutated, st->resets, st->dma_writes, st->dma_fifo, st->dma_evq, st->dma_tce,
	       st->dma_verbs_cq, st->dma_verbs_cmd, st->dma_verbs_mr, st->verbs_wqes,
	       st->verbs_cmds, st->verbs_dbs, st->violations, st->canary_hits);
	fz_free(f);
	if (bad) {
		fprintf(stderr, "fuzz: FAIL: %" PRIu64 " violations\n", bad);
		return 1;
	}
	if (st->dma_tce == 0 || st->dma_fifo == 0 || st->dma_verbs_cq == 0 ||
	    st->dma_verbs_mr == 0) {
		fprintf(stderr, "fuzz: FAIL: the run never reached RDMA placement, FIFO delivery, "
			"a verbs CQE or verbs placement\n");
		return 1;
	}
	return 0;
}
