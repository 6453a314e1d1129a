/* SPDX-License-Identifier: MIT */
/*
 * Weft core fuzz engine, shared by the seeded random driver (a test) and
 * the libFuzzer target.  Each action is one of: a register, SRAM or
 * doorbell write (or read), a random or mutated-valid wire packet, or a
 * few rounds of adapter work.  Every DMA write of every adapter is checked
 * against an oracle built from the adapter's current state (LMT FIFOs, the
 * event queue, pages mapped by valid TCEs, verbs CQ rings of created
 * CQs, command responses and dumps, pages named by the ATT of a valid
 * region with a write right, status blocks and pages of live counter
 * objects and exposures); memory outside the set-up's
 * areas holds canaries, checked at the end.  See docs/sim.md.
 */
#ifndef WEFT_FUZZ_ENGINE_H
#define WEFT_FUZZ_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuzz_src.h"

struct fz;

struct fz_stats {
	uint64_t actions, reg_writes, sram_writes, db_writes, packets, mutated, polls;
	uint64_t dma_writes, dma_fifo, dma_evq, dma_tce, violations, canary_hits;
	uint64_t dma_verbs_cq, dma_verbs_mr, dma_verbs_cmd, verbs_cmds, verbs_wqes, verbs_dbs;
	uint64_t dma_verbs_srq;         /* SRQ consumer-index writes (WQEs taken) */
	uint64_t resets;
	uint64_t dma_cnt, cnt_cmds, cnt_pkts;   /* counter engine */
	uint64_t tm_actions, tm_ops, tm_matched, tm_unexpected; /* tag-matching SRQ */
	uint64_t tm_rndv;               /* rendezvous the device started */
	uint64_t hq_tags, hq_refused;   /* QUERY_HQ: TM tags dumped, commands refused */
	/* Frames handed over shared (weft_core_receive_shared), and bytes
	 * changed in kept ones after their header was taken. */
	uint64_t rx_shared, rx_shared_changed;
};

/* A two-node sim; node 0 is set up (job, windows, buffers, rCxts), a pool
 * of valid wire frames is captured from real traffic, canaries are laid. */
struct fz *fz_new(uint64_t seed, bool quiet);
void fz_free(struct fz *f);
void fz_action(struct fz *f, struct fz_src *src);
/* Re-establish a valid set-up (node reboot + set-up), as a driver would. */
void fz_reset(struct fz *f);
/* Run the adapters until idle (bounded) and check the canaries.
 * Returns the number of violations found so far (0 = fine). */
uint64_t fz_finish(struct fz *f);
const struct fz_stats *fz_stats(const struct fz *f);

#endif /* WEFT_FUZZ_ENGINE_H */
