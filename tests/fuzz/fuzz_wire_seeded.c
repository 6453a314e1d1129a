/* SPDX-License-Identifier: MIT */
/*
 * Seeded random driver of the wire decoder fuzz target (suite 'fuzz'):
 *   weft-fuzz-wire [INPUTS [SEED]]       default 200000 inputs, seed 1
 * Fails on a broken invariant (fuzz_wire.h), or when a decoder's refusal
 * reason was never reached (the inputs did not reach every check).
 */
#include <inttypes.h>
#include <stdlib.h>

#include "fuzz_wire.h"
#include "weft_test.h"

int main(int argc, char **argv)
{
	uint64_t inputs = argc > 1 ? strtoull(argv[1], NULL, 0) : 200000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	struct fz_src src = { .rng = seed };
	struct fw_stats st = { 0 };
	uint64_t i, refused = 0;
	int r, missed = 0;

	for (i = 0; i < inputs; i++)
		fw_input(&st, &src);
	for (r = 1; r < WFI_WIRE_DECODE_END; r++) {
		refused += st.refused[r];
		t_diag("fuzz-wire: %-11s %" PRIu64, wfi_wire_reason_name(r), st.refused[r]);
		if (!st.refused[r])
			missed++;
	}
	t_diag("fuzz-wire: %" PRIu64 " inputs (seed %" PRIu64 "): %" PRIu64 " valid, %" PRIu64
	       " mutated, %" PRIu64 " random, %" PRIu64 " connection data; %" PRIu64
	       " accepted, %" PRIu64 " refused", inputs, seed, st.valid, st.mutated, st.random,
	       st.cm, st.accepted, refused);
	CHECK(st.violations == 0, "%" PRIu64 " broken invariants (stderr)", st.violations);
	t_point("fuzz-wire: every input accepted within its bytes and encoding back to them, "
		"or refused with a named reason; valid messages round-trip");
	CHECK(missed == 0, "%d decoder reasons never reached", missed);
	CHECK(st.accepted > inputs / 10, "few inputs accepted");
	t_point("fuzz-wire: every decoder refusal reached (%d reasons) and inputs accepted",
		WFI_WIRE_DECODE_END - 1);
	return t_done();
}
