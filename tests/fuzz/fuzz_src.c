/* SPDX-License-Identifier: MIT */
/* The fuzz targets' decision source (fuzz_src.h). */
#include "fuzz_src.h"

uint64_t fz_src_u64(struct fz_src *src)
{
	uint64_t v = 0;

	if (src->from_data) {
		size_t i;

		for (i = 0; i < 8; i++)
			v |= (uint64_t)(src->pos < src->len ? src->data[src->pos++] : 0) << (8 * i);
		return v;
	}
	v = (src->rng += 0x9e3779b97f4a7c15ull);
	v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ull;
	v = (v ^ (v >> 27)) * 0x94d049bb133111ebull;
	return v ^ (v >> 31);
}

uint64_t fz_src_below(struct fz_src *src, uint64_t n)
{
	if (src->from_data) {
		uint64_t v = 0;

		if (n <= 256)
			v = src->pos < src->len ? src->data[src->pos++] : 0;
		else
			v = fz_src_u64(src);
		return n ? v % n : 0;
	}
	return n ? fz_src_u64(src) % n : 0;
}
