/* SPDX-License-Identifier: MIT */
/*
 * The decision source every fuzz target draws from: a seeded generator
 * (the suite's deterministic runners) or the bytes libFuzzer gives
 * (exhausted bytes read as zeros).
 */
#ifndef WEFT_FUZZ_SRC_H
#define WEFT_FUZZ_SRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fz_src {
	const uint8_t *data;
	size_t len, pos;
	uint64_t rng;
	bool from_data;
};

/* The next decision from src: 64 random bits, or a value below n. */
uint64_t fz_src_u64(struct fz_src *src);
uint64_t fz_src_below(struct fz_src *src, uint64_t n);

#endif /* WEFT_FUZZ_SRC_H */
