/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the Weft core, built by tests/fuzz/run-libfuzzer.sh
 * when clang's -fsanitize=fuzzer works.  The input bytes drive the same
 * engine as the seeded driver; a violation aborts (a libFuzzer crash).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_engine.h"

static struct fz *fz;
static uint64_t runs;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_src src = { .data = data, .len = size, .from_data = true };
	unsigned int i;

	if (!fz) {
		fz = fz_new(1, false);
		if (!fz)
			abort();
	}
	if (++runs % 256 == 0)
		fz_reset(fz);
	for (i = 0; i < 64 && src.pos < src.len; i++)
		fz_action(fz, &src);
	if (fz_stats(fz)->violations)
		abort();
	return 0;
}
