/* SPDX-License-Identifier: MIT */
/*
 * Seeded random driver of the state loader fuzz target (suite 'fuzz'):
 *   weft-fuzz-state [INPUTS [SEED]]       default 2000 inputs, seed 1
 * Each input is one mutated stream (fuzz_state.h).
 */
#include <inttypes.h>
#include <stdlib.h>

#include "fuzz_state.h"
#include "weft_test.h"

int main(int argc, char **argv)
{
	uint64_t inputs = argc > 1 ? strtoull(argv[1], NULL, 0) : 2000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	struct fz_src src = { .rng = seed };
	struct fs *f = fs_new(seed);
	struct fs_stats st;
	uint64_t i;

	if (!f)
		t_bail("fuzz-state: cannot set up the sim and save a state");
	for (i = 0; i < inputs; i++)
		fs_input(f, &src);
	st = *fs_stats(f);
	fs_free(f);
	t_diag("fuzz-state: %" PRIu64 " mutated streams of %" PRIu64 " bytes (seed %" PRIu64
	       "): %" PRIu64 " loaded and run, %" PRIu64 " refused", st.inputs, st.stream_bytes,
	       seed, st.loaded, st.refused);
	CHECK(st.violations == 0, "%" PRIu64 " times the valid state was refused after a load",
	      st.violations);
	t_point("fuzz-state: the valid state loads again after every accepted mutation");
	CHECK(st.loaded > 0 && st.refused > 0, "both outcomes reached (%" PRIu64 " loaded, %"
	      PRIu64 " refused)", st.loaded, st.refused);
	t_point("fuzz-state: mutations both loaded and refused");
	return t_done();
}
