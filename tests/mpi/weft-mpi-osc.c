// SPDX-License-Identifier: GPL-2.0-only
/*
 * weft-mpi-osc: MPI one-sided communication on a Weft cluster (docs/mpi.md
 * "One-sided").  Every rank runs every check; each ends with an agreement
 * among the ranks, and rank 0 prints "ok NAME: DETAIL" or "FAIL NAME: see
 * the ranks' messages" (the rank that saw the failure prints its reason).
 *
 *   fence-put        MPI_Put to the next rank between fences, 1 B .. max
 *   fence-get        MPI_Get from the next rank between fences, 1 B .. max
 *   lock-put-get     passive target: MPI_Win_lock exclusive, MPI_Put,
 *                    unlock; then shared, MPI_Get, unlock, 1 B .. max
 *   win-create       the same puts and gets on MPI_Win_create memory
 *   accumulate       MPI_Accumulate MPI_SUM on one int64 of rank 0 from
 *                    every rank under MPI_Win_lock_all
 *   fetch-and-op     MPI_Fetch_and_op MPI_SUM 1 from every rank: the values
 *                    fetched are exactly 0 .. n-1 (each once: atomic)
 *   compare-and-swap MPI_Compare_and_swap -1 -> rank on rank 0: exactly one
 *                    rank wins, the others fetch the winner
 *
 * Every transfer is checked byte for byte.  Exits 0 when every check held,
 * 1 otherwise, 2 on bad arguments.
 *
 * Usage: weft-mpi-osc [--max-size BYTES] [--iters N]
 *   --max-size  largest transfer (default 4 MiB)
 *   --iters     atomic operations per rank (default 50)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEFT_MPI_PROG "weft-mpi-osc"
#include "weft-mpi-report.h"

/* Byte i of the data that rank `from` sends in round `round`. */
static inline uint8_t byte_of(int from, int round, size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u + (uint32_t)from * 40503u + (uint32_t)round * 977u;

	return (uint8_t)(x >> 13 ^ x);
}

static void pattern(uint8_t *b, size_t n, int from, int round)
{
	for (size_t i = 0; i < n; i++)
		b[i] = byte_of(from, round, i);
}

/* True when b holds the data of (from, round); else says where it differs. */
static int matches(const uint8_t *b, size_t n, int from, int round, const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != byte_of(from, round, i)) {
			fail("%s %zu B from rank %d: byte %zu is 0x%02x, not 0x%02x", what, n, from, i,
			     b[i], byte_of(from, round, i));
			return 0;
		}
	return 1;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "weft-mpi-osc: rank %d: out of memory (%zu B)\n", rank, n);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	return p;
}

/* The transfer sizes: 1, 7, 64, 4 KiB + 3, 64 KiB, 1 MiB, max. */
static size_t sizes[8];
static int nsizes;

static void set_sizes(size_t max)
{
	static const size_t s[] = { 1, 7, 64, 4099, 65536, 1u << 20 };

	nsizes = 0;
	for (unsigned int i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		if (s[i] < max)
			sizes[nsizes++] = s[i];
	sizes[nsizes++] = max;
}

/* MPI_Put to the next rank between fences; each target checks. */
static void fence_put(MPI_Win win, uint8_t *base, uint8_t *src, const char *name)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	size_t total = 0;

	for (int k = 0; k < nsizes; k++) {
		size_t n = sizes[k];

		memset(base, 0, n);
		pattern(src, n, rank, k);
		MPI_Win_fence(0, win);
		MPI_Put(src, (int)n, MPI_BYTE, next, 0, (int)n, MPI_BYTE, win);
		MPI_Win_fence(0, win);
		matches(base, n, prev, k, "MPI_Put");
		total += n;
	}
	verdict(name, "%d sizes 1 B .. %zu B (%zu B per rank) put to the next rank, byte-exact",
		nsizes, sizes[nsizes - 1], total);
}

/* MPI_Get from the next rank between fences. */
static void fence_get(MPI_Win win, uint8_t *base, uint8_t *dst, const char *name)
{
	int next = (rank + 1) % size;

	for (int k = 0; k < nsizes; k++) {
		size_t n = sizes[k];

		pattern(base, n, rank, 100 + k);
		memset(dst, 0, n);
		MPI_Win_fence(0, win);
		MPI_Get(dst, (int)n, MPI_BYTE, next, 0, (int)n, MPI_BYTE, win);
		MPI_Win_fence(0, win);
		matches(dst, n, next, 100 + k, "MPI_Get");
	}
	verdict(name, "%d sizes 1 B .. %zu B got from the next rank, byte-exact", nsizes,
		sizes[nsizes - 1]);
}

/* Passive target: each rank writes the next rank's window under an
 * exclusive lock, then (after a barrier) reads it back under a shared
 * lock; the target also checks what landed. */
static void lock_put_get(MPI_Win win, uint8_t *base, uint8_t *buf)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;

	for (int k = 0; k < nsizes; k++) {
		size_t n = sizes[k];

		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
		memset(base, 0, n);
		MPI_Win_unlock(rank, win);
		MPI_Barrier(MPI_COMM_WORLD);
		pattern(buf, n, rank, 200 + k);
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win);
		MPI_Put(buf, (int)n, MPI_BYTE, next, 0, (int)n, MPI_BYTE, win);
		MPI_Win_unlock(next, win);
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
		matches(base, n, prev, 200 + k, "locked MPI_Put (at the target)");
		MPI_Win_unlock(rank, win);
		memset(buf, 0, n);
		MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win);
		MPI_Get(buf, (int)n, MPI_BYTE, next, 0, (int)n, MPI_BYTE, win);
		MPI_Win_unlock(next, win);
		matches(buf, n, rank, 200 + k, "locked MPI_Get of our own MPI_Put");
		MPI_Barrier(MPI_COMM_WORLD);
	}
	verdict("lock-put-get", "%d sizes 1 B .. %zu B: exclusive-lock MPI_Put, shared-lock MPI_Get, "
		"byte-exact at both ends", nsizes, sizes[nsizes - 1]);
}

static void accumulate(int iters)
{
	int64_t *cnt, one, want = 0;
	MPI_Win win;

	MPI_Win_allocate(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &cnt, &win);
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
	*cnt = 0;
	MPI_Win_unlock(rank, win);
	MPI_Barrier(MPI_COMM_WORLD);
	one = rank + 1;
	MPI_Win_lock_all(0, win);
	for (int i = 0; i < iters; i++) {
		MPI_Accumulate(&one, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, MPI_SUM, win);
		MPI_Win_flush(0, win);
	}
	MPI_Win_unlock_all(win);
	MPI_Barrier(MPI_COMM_WORLD);
	for (int r = 0; r < size; r++)
		want += (int64_t)iters * (r + 1);
	if (rank == 0) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
		if (*cnt != want)
			fail("MPI_Accumulate: the counter is %lld, not %lld", (long long)*cnt,
			     (long long)want);
		MPI_Win_unlock(0, win);
	}
	MPI_Win_free(&win);
	verdict("accumulate", "%d ranks x %d MPI_Accumulate MPI_SUM on one int64 of rank 0: %lld",
		size, iters, (long long)want);
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void fetch_and_op(int iters)
{
	int64_t *cnt, one = 1, *got = xmalloc(sizeof(int64_t) * (size_t)iters), *all = NULL;
	MPI_Win win;

	MPI_Win_allocate(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &cnt, &win);
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
	*cnt = 0;
	MPI_Win_unlock(rank, win);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock_all(0, win);
	for (int i = 0; i < iters; i++) {
		MPI_Fetch_and_op(&one, &got[i], MPI_INT64_T, 0, 0, MPI_SUM, win);
		MPI_Win_flush(0, win);
	}
	MPI_Win_unlock_all(win);
	if (rank == 0)
		all = xmalloc(sizeof(int64_t) * (size_t)iters * (size_t)size);
	MPI_Gather(got, iters, MPI_INT64_T, all, iters, MPI_INT64_T, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		qsort(all, (size_t)iters * (size_t)size, sizeof(int64_t), cmp64);
		for (int64_t i = 0; i < (int64_t)iters * size; i++)
			if (all[i] != i) {
				fail("MPI_Fetch_and_op: the %lld-th smallest value fetched is %lld "
				     "(a lost or repeated update)", (long long)i, (long long)all[i]);
				break;
			}
	}
	free(all);
	free(got);
	MPI_Win_free(&win);
	verdict("fetch-and-op", "%d ranks x %d MPI_Fetch_and_op MPI_SUM 1: each value 0 .. %d "
		"fetched exactly once", size, iters, iters * size - 1);
}

static void compare_and_swap(void)
{
	int64_t *slot, mine = rank, minus1 = -1, old = 0, winners = 0, w;
	MPI_Win win;

	MPI_Win_allocate(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &slot, &win);
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
	*slot = -1;
	MPI_Win_unlock(rank, win);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
	MPI_Compare_and_swap(&mine, &minus1, &old, MPI_INT64_T, 0, 0, win);
	MPI_Win_unlock(0, win);
	w = old == -1;
	MPI_Allreduce(&w, &winners, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	{
		int64_t final = -2;

		MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
		MPI_Get(&final, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win);
		MPI_Win_unlock(0, win);
		if (winners != 1)
			fail("MPI_Compare_and_swap: %lld ranks saw -1, not exactly one", (long long)winners);
		else if (old != -1 && old != final)
			fail("MPI_Compare_and_swap: fetched %lld, the winner wrote %lld", (long long)old,
			     (long long)final);
		else if (final < 0 || final >= size)
			fail("MPI_Compare_and_swap: the slot holds %lld", (long long)final);
	}
	MPI_Win_free(&win);
	verdict("compare-and-swap", "%d ranks swap -1 for their rank on rank 0: one winner, the others "
		"fetched its rank", size);
}

int main(int argc, char **argv)
{
	size_t max = 4u << 20;
	int iters = 50;
	uint8_t *base, *buf, *mem;
	MPI_Win win;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--max-size") && i + 1 < argc) {
			max = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
			iters = atoi(argv[++i]);
		} else {
			if (rank == 0)
				fprintf(stderr, "usage: weft-mpi-osc [--max-size BYTES] [--iters N]\n");
			MPI_Finalize();
			return 2;
		}
	}
	if (!max || max > (1u << 30) || iters < 1 || iters > 100000) {
		if (rank == 0)
			fprintf(stderr, "weft-mpi-osc: --max-size 1 .. 1 GiB, --iters 1 .. 100000\n");
		MPI_Finalize();
		return 2;
	}
	set_sizes(max);
	buf = xmalloc(max);
	t_check = MPI_Wtime();
	MPI_Win_allocate((MPI_Aint)max, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
	fence_put(win, base, buf, "fence-put");
	fence_get(win, base, buf, "fence-get");
	lock_put_get(win, base, buf);
	MPI_Win_free(&win);
	mem = xmalloc(max);
	MPI_Win_create(mem, (MPI_Aint)max, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	fence_put(win, mem, buf, "win-create-put");
	fence_get(win, mem, buf, "win-create-get");
	MPI_Win_free(&win);
	free(mem);
	accumulate(iters);
	fetch_and_op(iters);
	compare_and_swap();
	free(buf);
	if (rank == 0) {
		if (failed_checks)
			printf("weft-mpi-osc: FAIL: %d of %d checks failed (%d ranks)\n", failed_checks,
			       checks, size);
		else
			printf("weft-mpi-osc: PASS: %d checks (%d ranks)\n", checks, size);
	}
	MPI_Finalize();
	return failed_checks ? 1 : 0;
}
