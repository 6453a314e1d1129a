/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the provider's wire decoders, built by
 * tests/fuzz/run-libfuzzer.sh (WEFT_FUZZ_TARGET=wire).  A broken
 * invariant aborts; so does any read beyond an input (ASan).
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_src src = { .data = data, .len = size, .from_data = true };
	struct fw_stats st = { 0 };
	unsigned int i;

	for (i = 0; i < 16 && src.pos < src.len; i++)
		fw_input(&st, &src);
	if (st.violations)
		abort();
	return 0;
}
