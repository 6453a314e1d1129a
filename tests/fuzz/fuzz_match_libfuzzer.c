/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the header-matching engine, built by
 * tests/fuzz/run-libfuzzer.sh (WEFT_FUZZ_TARGET=match).  A write outside
 * the named ranges aborts.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_match.h"

static struct fm *fm;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_src src = { .data = data, .len = size, .from_data = true };
	unsigned int i;

	if (!fm) {
		fm = fm_new(1);
		if (!fm)
			abort();
	}
	for (i = 0; i < 64 && src.pos < src.len; i++)
		fm_action(fm, &src);
	if (fm_stats(fm)->violations)
		abort();
	return 0;
}
