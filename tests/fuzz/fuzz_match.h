/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the header-matching engine (docs/matching.md): random
 * and mutated-valid MATCH register writes, doorbells with hostile
 * operation blocks, forged WEFT_PKT_MATCH packets (every operation, slot,
 * offset, length, sequence number, incarnation and ACK), duplicated and
 * mutated replays of the packets and ACKs the adapters sent, valid traffic
 * between two nodes and through loopback, and overflow sequences.  Every
 * adapter DMA write must fall in a range the guest named (the completion
 * ring, a posted or pool buffer, a dump area, a claim flag, the event
 * queue).
 */
#ifndef WEFT_FUZZ_MATCH_H
#define WEFT_FUZZ_MATCH_H

#include <stdint.h>

#include "fuzz_engine.h"

struct fm;

struct fm_stats {
	uint64_t actions, reg_writes, doorbells, forged, sends, posts, overflow_runs, polls;
	uint64_t dma_writes, violations, cqes;
	/* Channel drops (duplicates, out of sequence, bad ACKs), at the end. */
	uint64_t dups, seqs, bad_acks;
	/* QUERY_HQ commands: answered, entries they wrote, refused. */
	uint64_t hq_ok, hq_entries, hq_refused;
};

struct fm *fm_new(uint64_t seed);
void fm_free(struct fm *f);
void fm_action(struct fm *f, struct fz_src *src);
/* Run until idle (bounded); returns the violations so far. */
uint64_t fm_finish(struct fm *f);
const struct fm_stats *fm_stats(const struct fm *f);

#endif /* WEFT_FUZZ_MATCH_H */
