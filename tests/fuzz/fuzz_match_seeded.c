/* SPDX-License-Identifier: MIT */
/*
 * Seeded random driver of the header-matching fuzz target (suite 'fuzz'):
 *   weft-fuzz-match [INPUTS [SEED]]       default 1000000 inputs, seed 1
 * Each input is one action (fuzz_match.h).  Fails on any adapter memory
 * write outside a range the guest named.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "fuzz_match.h"
#include "weft_test.h"

int main(int argc, char **argv)
{
	uint64_t inputs = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	struct fz_src src = { .rng = seed };
	struct fm *f = fm_new(seed);
	struct fm_stats st;
	uint64_t i, bad;

	if (!f)
		t_bail("fuzz-match: cannot set up the sim");
	for (i = 0; i < inputs; i++)
		fm_action(f, &src);
	bad = fm_finish(f);
	st = *fm_stats(f);
	fm_free(f);
	t_diag("fuzz-match: %" PRIu64 " inputs (seed %" PRIu64 "): %" PRIu64 " register writes, %"
	       PRIu64 " doorbells, %" PRIu64 " forged packets, %" PRIu64 " sends, %" PRIu64
	       " posts, %" PRIu64 " overflow runs, %" PRIu64 " polls, %" PRIu64 " completions",
	       inputs, seed, st.reg_writes, st.doorbells, st.forged, st.sends, st.posts,
	       st.overflow_runs, st.polls, st.cqes);
	CHECK(bad == 0, "%" PRIu64 " writes outside named ranges", bad);
	t_point("fuzz-match: %" PRIu64 " adapter DMA writes, all inside named ranges",
		st.dma_writes);
	t_diag("fuzz-match: channel drops: %" PRIu64 " duplicates, %" PRIu64
	       " out of sequence, %" PRIu64 " bad ACKs", st.dups, st.seqs, st.bad_acks);
	CHECK(st.dups && st.seqs && st.bad_acks, "replays and forgeries reached the channels");
	CHECK(st.cqes > inputs / 100, "the run produced completions");
	t_point("fuzz-match: the run reached the engine (%" PRIu64 " completions)", st.cqes);
	t_diag("fuzz-match: QUERY_HQ: %" PRIu64 " answered with %" PRIu64 " entries, %" PRIu64
	       " refused", st.hq_ok, st.hq_entries, st.hq_refused);
	CHECK(st.hq_entries > 0 && st.hq_refused > 0,
	      "QUERY_HQ never wrote an entry or was never refused");
	t_point("fuzz-match: QUERY_HQ snapshots written and hostile ones refused");
	return t_done();
}
