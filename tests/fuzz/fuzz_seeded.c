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
#include "weft_test.h"

int main(int argc, char **argv)
{
	uint64_t inputs = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	struct fz_src src = { .rng = seed };
	struct fz *f = fz_new(seed, false);
	struct fz_stats stats, *st = &stats;
	uint64_t i, bad;

	if (!f)
		t_bail("fuzz: cannot set up the sim");
	for (i = 0; i < inputs; i++) {
		if (i && i % 1000 == 0)
			fz_reset(f);
		fz_action(f, &src);
	}
	bad = fz_finish(f);
	stats = *fz_stats(f);
	fz_free(f);
	t_diag("fuzz: %" PRIu64 " inputs (seed %" PRIu64 "): %" PRIu64 " register, %" PRIu64
	       " SRAM, %" PRIu64 " doorbell writes, %" PRIu64 " packets (%" PRIu64
	       " mutated-valid), %" PRIu64 " resets", inputs, seed, st->reg_writes,
	       st->sram_writes, st->db_writes, st->packets, st->mutated, st->resets);
	CHECK(bad == 0, "%" PRIu64 " violations, %" PRIu64 " canary bytes hit", st->violations,
	      st->canary_hits);
	t_point("fuzz: every adapter DMA write inside a FIFO, the event queue, a TCE-mapped "
		"page, a verbs CQ ring, an SRQ consumer index, a named command block or a writable region's page, "
		"canaries intact: %" PRIu64 " writes (FIFO %" PRIu64 ", event queue %" PRIu64
		", TCE pages %" PRIu64 ")", st->dma_writes, st->dma_fifo, st->dma_evq, st->dma_tce);
	CHECK(st->dma_tce > 0, "the run never reached RDMA placement");
	CHECK(st->dma_fifo > 0, "the run never reached FIFO delivery");
	t_point("fuzz: the run reached RDMA placement and FIFO delivery");
	t_diag("fuzz: verbs: %" PRIu64 " WQEs, %" PRIu64 " commands, %" PRIu64
		" UAR doorbells; writes to CQ rings %" PRIu64 ", command responses/dumps %" PRIu64
		", writable-region pages %" PRIu64 ", SRQ consumer indexes %" PRIu64,
		st->verbs_wqes, st->verbs_cmds, st->verbs_dbs, st->dma_verbs_cq, st->dma_verbs_cmd,
		st->dma_verbs_mr, st->dma_verbs_srq);
	CHECK(st->dma_verbs_cq > 0, "the run never wrote a verbs CQE");
	CHECK(st->dma_verbs_mr > 0, "the run never placed verbs data in a region");
	CHECK(st->dma_verbs_srq > 0, "the run never took a WQE from an SRQ");
	t_point("fuzz: the run reached verbs CQEs, verbs placement and SRQ takes");
	t_diag("fuzz: %" PRIu64 " frames handed over shared, %" PRIu64
	       " bytes of kept ones changed after the header was taken", st->rx_shared,
	       st->rx_shared_changed);
	CHECK(st->rx_shared_changed > 0, "no kept frame was changed after its header was taken");
	t_point("fuzz: the run changed frames the core kept after taking their header");
	t_diag("fuzz: counters: %" PRIu64 " commands, %" PRIu64 " forged packets; writes to "
	       "status blocks, responses and object or exposure pages %" PRIu64, st->cnt_cmds,
	       st->cnt_pkts, st->dma_cnt);
	CHECK(st->dma_cnt > 0, "the run never wrote a counter block or placed counter data");
	t_point("fuzz: the run reached counter blocks and counter placement");
	t_diag("fuzz: tag matching: %" PRIu64 " actions, %" PRIu64 " tag operations run, %"
	       PRIu64 " messages matched, %" PRIu64 " unexpected, %" PRIu64 " device rendezvous",
	       st->tm_actions, st->tm_ops, st->tm_matched, st->tm_unexpected, st->tm_rndv);
	CHECK(st->tm_ops > 0 && st->tm_matched > 0 && st->tm_unexpected > 0 && st->tm_rndv > 0,
	      "the run never ran tag operations, matched, took an unexpected tagged message or "
	      "started a device rendezvous");
	t_point("fuzz: the run reached tag operations, tag matches, unexpected messages and device rendezvous");
	t_diag("fuzz: QUERY_HQ: %" PRIu64 " tags of the TM SRQ dumped, %" PRIu64 " commands refused",
	       st->hq_tags, st->hq_refused);
	CHECK(st->hq_tags > 0 && st->hq_refused > 0,
	      "QUERY_HQ never dumped a tag of the TM SRQ's queue or was never refused");
	t_point("fuzz: QUERY_HQ dumped the TM SRQ's tags and refused hostile commands");
	return t_done();
}
