/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the adapter state loader, built by
 * tests/fuzz/run-libfuzzer.sh (WEFT_FUZZ_TARGET=state).  A valid state
 * refused after a mutated one was loaded aborts.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_state.h"

static struct fs *fs;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_src src = { .data = data, .len = size, .from_data = true };

	if (!fs) {
		fs = fs_new(1);
		if (!fs)
			abort();
	}
	fs_input(fs, &src);
	if (fs_stats(fs)->violations)
		abort();
	return 0;
}
