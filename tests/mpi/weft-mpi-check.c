// SPDX-License-Identifier: GPL-2.0-only
/*
 * weft-mpi-check: an MPI correctness program for Weft clusters (docs/mpi.md).
 *
 * Every rank runs every check; each check ends with an agreement among the
 * ranks, and rank 0 prints "ok NAME: DETAIL" or "FAIL NAME: REASON" (a
 * rank that sees a failure also prints its own reason, prefixed with its
 * rank).  The checks: the layout (ranks per node), ANY_SOURCE and ANY_TAG,
 * non-overtaking order (eager and rendezvous sizes mixed, also with
 * ANY_TAG), probe, iprobe, mprobe and improbe, cancel of a posted receive,
 * messages of 0 B to 64 MiB byte-exact between nodes and within a node
 * (above 1 MiB only in the pairs that hold rank 0),
 * floods of unexpected messages (to one partner, searched in reverse
 * order, and from every rank to rank 0 with ANY_SOURCE), and barrier,
 * bcast, allreduce and alltoall.  Exits 0 when every check held, 1
 * otherwise, 2 on bad arguments.
 *
 * Usage: weft-mpi-check [--max-size BYTES] [--per-node K] [--flood N]
 *   --max-size  largest message of the sizes check (default 64 MiB); the
 *               check within a node runs where each node holds an even
 *               number of ranks
 *   --per-node  fail unless every node holds exactly K ranks
 *   --flood     messages of each unexpected flood (default 2000)
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEFT_MPI_PROG "weft-mpi-check"
#include "weft-mpi-report.h"

/* The 8 bytes at 8 * W of a message identified by SEED. */
static inline uint64_t pattern_word(uint64_t seed, size_t w)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + w;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ULL;
	return x ^ (x >> 32);
}

static void fill(uint8_t *b, size_t n, uint64_t seed)
{
	size_t w;

	for (w = 0; w < n / 8; w++) {
		uint64_t x = pattern_word(seed, w);

		memcpy(b + w * 8, &x, 8);
	}
	if (n % 8) {
		uint64_t x = pattern_word(seed, w);

		memcpy(b + w * 8, &x, n % 8);
	}
}

/* Index of the first wrong byte, or -1. */
static long long verify(const uint8_t *b, size_t n, uint64_t seed)
{
	for (size_t w = 0; w * 8 < n; w++) {
		uint64_t x = pattern_word(seed, w);
		size_t len = n - w * 8 < 8 ? n - w * 8 : 8;

		if (memcmp(b + w * 8, &x, len))
			for (size_t i = 0; i < len; i++)
				if (b[w * 8 + i] != ((const uint8_t *)&x)[i])
					return (long long)(w * 8 + i);
	}
	return -1;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "weft-mpi-check: rank %d: out of memory (%zu B)\n", rank, n);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	return p;
}

/* ---- layout ---------------------------------------------------------- */
static MPI_Comm node_comm;
static int node_rank, node_size, nodes;

static void check_layout(int per_node)
{
	char name[MPI_MAX_PROCESSOR_NAME];
	int len, leaders, min, max;

	MPI_Get_processor_name(name, &len);
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_comm);
	MPI_Comm_rank(node_comm, &node_rank);
	MPI_Comm_size(node_comm, &node_size);
	leaders = node_rank == 0;
	MPI_Allreduce(&leaders, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(&node_size, &min, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	MPI_Allreduce(&node_size, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (per_node && node_size != per_node)
		fail("%s holds %d ranks, not %d (--per-node)", name, node_size, per_node);
	verdict("layout", "%d ranks on %d nodes, %d..%d ranks per node", size, nodes, min, max);
}

/* ---- ANY_SOURCE and ANY_TAG ------------------------------------------ */
static void check_any_source_tag(void)
{
	for (int root = 0; root < size; root += size - 1 > 0 ? size - 1 : 1) {
		if (rank != root) {
			int v[2] = { rank, 1000 + rank };

			MPI_Send(v, 2, MPI_INT, root, 1000 + rank, MPI_COMM_WORLD);
		} else {
			char *seen = xmalloc((size_t)size);

			memset(seen, 0, (size_t)size);
			for (int k = 0; k < size - 1; k++) {
				int v[2];
				MPI_Status st;

				MPI_Recv(v, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
				if (st.MPI_SOURCE != v[0] || st.MPI_TAG != v[1] || st.MPI_TAG != 1000 + st.MPI_SOURCE)
					fail("ANY_SOURCE/ANY_TAG: status source %d tag %d for a message from %d with tag %d",
					     st.MPI_SOURCE, st.MPI_TAG, v[0], v[1]);
				else if (seen[st.MPI_SOURCE]++)
					fail("ANY_SOURCE: two messages from rank %d", st.MPI_SOURCE);
			}
			free(seen);
		}
		if (size == 1)
			break;
	}
	verdict("any-source-any-tag", "rank 0 and rank %d each took one message from every other rank, "
		"status right", size - 1);
}

/* ---- non-overtaking --------------------------------------------------- */
#define NO_MSGS 200
static void check_non_overtaking(void)
{
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	static const int sizes[] = { 8, 70000, 0, 4096, 65536, 17 };
	uint8_t *sbuf[NO_MSGS];
	MPI_Request req[NO_MSGS];

	/* Sizes mixed so that eager messages follow rendezvous ones; tags 1
	 * and 2 alternate.  The first half is received by tag and source,
	 * the second half with ANY_TAG: order must be the send order. */
	for (int i = 0; i < NO_MSGS; i++) {
		size_t n = (size_t)sizes[i % 6] + 8;

		sbuf[i] = xmalloc(n);
		memcpy(sbuf[i], &i, sizeof(i));
		fill(sbuf[i] + 8, n - 8, (uint64_t)rank << 32 | (uint64_t)i);
		MPI_Isend(sbuf[i], (int)n, MPI_BYTE, to, 1 + (i & 1), MPI_COMM_WORLD, &req[i]);
	}
	uint8_t *rbuf = xmalloc(70000 + 8);

	for (int i = 0; i < NO_MSGS; i++) {
		MPI_Status st;
		int got, count;
		int tag = i < NO_MSGS / 2 ? 1 + (i & 1) : MPI_ANY_TAG;

		/* By tag, a message of tag 2 may pass one of tag 1 only in the
		 * first half, where receives name the tag: receive in send
		 * order there too. */
		MPI_Recv(rbuf, 70000 + 8, MPI_BYTE, from, tag, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_BYTE, &count);
		memcpy(&got, rbuf, sizeof(got));
		/* Every message is received even after a failure (the
		 * senders wait for theirs); the first failure is reported. */
		if (local_fail)
			continue;
		if (got != i)
			fail("non-overtaking: message %d from rank %d arrived as number %d (%s)", got, from, i,
			     tag == MPI_ANY_TAG ? "ANY_TAG" : "by tag");
		else if (count != sizes[i % 6] + 8 || verify(rbuf + 8, (size_t)count - 8,
								(uint64_t)from << 32 | (uint64_t)i) >= 0)
			fail("non-overtaking: message %d from rank %d has %d B or wrong bytes", i, from, count);
	}
	MPI_Waitall(NO_MSGS, req, MPI_STATUSES_IGNORE);
	for (int i = 0; i < NO_MSGS; i++)
		free(sbuf[i]);
	free(rbuf);
	verdict("non-overtaking", "%d messages to the next rank (8 B..68 KiB mixed, tags 1 and 2), "
		"received in send order by tag and with ANY_TAG", NO_MSGS);
}

/* ---- probes ----------------------------------------------------------- */
static void probe_recv(const char *how, int from, int want_tag, int want_n)
{
	MPI_Status st;
	MPI_Message msg;
	MPI_Request r;
	int flag = 0, n = 0, iter = 0;
	uint8_t *b;

	if (!strcmp(how, "probe")) {
		MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
		/* A probe does not take the message: probe it again. */
		MPI_Status st2;

		MPI_Probe(from, want_tag, MPI_COMM_WORLD, &st2);
		if (st2.MPI_SOURCE != st.MPI_SOURCE || st2.MPI_TAG != st.MPI_TAG)
			fail("probe: a second probe saw another message (%d/%d, then %d/%d)",
			     st.MPI_SOURCE, st.MPI_TAG, st2.MPI_SOURCE, st2.MPI_TAG);
	} else if (!strcmp(how, "iprobe")) {
		while (!flag) {
			MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
			iter++;
		}
	} else if (!strcmp(how, "mprobe")) {
		MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st);
	} else {
		while (!flag)
			MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st);
	}
	MPI_Get_count(&st, MPI_BYTE, &n);
	if (st.MPI_SOURCE != from || st.MPI_TAG != want_tag || n != want_n) {
		fail("%s: saw source %d tag %d %d B, expected %d/%d %d B", how, st.MPI_SOURCE, st.MPI_TAG, n, from,
		     want_tag, want_n);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	b = xmalloc((size_t)n);
	if (!strcmp(how, "mprobe"))
		MPI_Mrecv(b, n, MPI_BYTE, &msg, &st);
	else if (!strcmp(how, "improbe")) {
		MPI_Imrecv(b, n, MPI_BYTE, &msg, &r);
		MPI_Wait(&r, &st);
	} else
		MPI_Recv(b, n, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st);
	if (verify(b, (size_t)n, (uint64_t)from << 16 | (uint64_t)want_tag) >= 0)
		fail("%s: the message from rank %d tag %d is not byte-exact", how, from, want_tag);
	free(b);
}

static void check_probes(void)
{
	static const char *const how[] = { "probe", "iprobe", "mprobe", "improbe" };
	int to = (rank + 1) % size, from = (rank + size - 1) % size;

	for (int k = 0; k < 4; k++) {
		int n = k & 1 ? 100000 : 1000, tag = 50 + k;
		uint8_t *b = xmalloc((size_t)n);
		MPI_Request r;

		fill(b, (size_t)n, (uint64_t)rank << 16 | (uint64_t)tag);
		MPI_Isend(b, n, MPI_BYTE, to, tag, MPI_COMM_WORLD, &r);
		probe_recv(how[k], from, tag, n);
		MPI_Wait(&r, MPI_STATUS_IGNORE);
		free(b);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	/* A message taken by mprobe is out of reach of receives: with A (tag
	 * 60) mprobed, a receive with ANY_TAG gets B (tag 61). */
	int a = 60, bval = 61, got;
	MPI_Message msg;
	MPI_Status st;
	MPI_Request rs[2];

	MPI_Isend(&a, 1, MPI_INT, to, 60, MPI_COMM_WORLD, &rs[0]);
	MPI_Isend(&bval, 1, MPI_INT, to, 61, MPI_COMM_WORLD, &rs[1]);
	MPI_Mprobe(from, 60, MPI_COMM_WORLD, &msg, &st);
	MPI_Recv(&got, 1, MPI_INT, from, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
	if (got != 61 || st.MPI_TAG != 61)
		fail("mprobe: a receive after mprobe got tag %d (value %d), not the other message (61)", st.MPI_TAG, got);
	MPI_Mrecv(&got, 1, MPI_INT, &msg, &st);
	if (got != 60)
		fail("mprobe: MPI_Mrecv got %d, not the mprobed message (60)", got);
	MPI_Waitall(2, rs, MPI_STATUSES_IGNORE);
	verdict("probe", "probe (twice, same message), iprobe, mprobe+mrecv, improbe+imrecv with ANY_SOURCE and "
		"ANY_TAG, 1000 B and 100000 B byte-exact; an mprobed message is out of reach of receives");
}

/* ---- cancel ----------------------------------------------------------- */
static void check_cancel(void)
{
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	int v = -1, cancelled = 0, out = rank;
	MPI_Request r;
	MPI_Status st;

	MPI_Irecv(&v, 1, MPI_INT, from, 77, MPI_COMM_WORLD, &r);
	MPI_Cancel(&r);
	MPI_Wait(&r, &st);
	MPI_Test_cancelled(&st, &cancelled);
	if (!cancelled)
		fail("cancel: a posted receive with no sender was not cancelled (got %d)", v);
	MPI_Barrier(MPI_COMM_WORLD);
	/* The cancelled receive takes nothing: a message with its tag goes to
	 * the next receive. */
	MPI_Sendrecv(&out, 1, MPI_INT, to, 77, &v, 1, MPI_INT, from, 77, MPI_COMM_WORLD, &st);
	if (v != from)
		fail("cancel: after the cancel, the message with tag 77 carried %d, not %d", v, from);
	verdict("cancel", "MPI_Cancel of a posted receive: MPI_Test_cancelled true; a later message with its tag "
		"went to the next receive");
}

/* ---- sizes ------------------------------------------------------------ */
/* One exchange of M bytes with PARTNER, checked; 0 if it held. */
static int exchange(uint8_t *s, uint8_t *r, size_t m, int partner, const char *where)
{
	MPI_Status st;
	int count;
	long long bad;

	fill(s, m, (uint64_t)rank << 40 | m);
	memset(r, 0xa5, m);
	MPI_Sendrecv(s, (int)m, MPI_BYTE, partner, 5, r, (int)m, MPI_BYTE, partner, 5, MPI_COMM_WORLD, &st);
	MPI_Get_count(&st, MPI_BYTE, &count);
	bad = verify(r, m, (uint64_t)partner << 40 | m);
	if ((size_t)count == m && bad < 0)
		return 0;
	fail("sizes (%s): %zu B from rank %d: got %d B, first wrong byte at %lld", where, m, partner, count, bad);
	return -1;
}

/* 0 B, each power of 4 from 1 B to 64 KiB less one, itself and plus one,
 * then the larger powers of 4 up to MAX, and MAX: the number of sizes that
 * held (the first failure ends the pass). */
static int sizes_pass(int partner, size_t max, const char *where)
{
	uint8_t *s = xmalloc(max), *r = xmalloc(max);
	int k = 0;

	if (exchange(s, r, 0, partner, where))
		goto out;
	k++;
	for (size_t n = 1; n < max; n *= 4) {
		size_t lo = n > 1 && n <= 65536 ? n - 1 : n, hi = n <= 65536 ? n + 1 : n;

		for (size_t m = lo; m <= hi && m <= max; m++) {
			if (exchange(s, r, m, partner, where))
				goto out;
			k++;
		}
	}
	if (!exchange(s, r, max, partner, where))
		k++;
out:
	free(s);
	free(r);
	return k;
}

/* Messages above 1 MiB only in the pairs that hold rank 0: under TCG,
 * filling and checking them costs more than moving them. */
#define SIZES_OTHERS (1u << 20)

static void check_sizes(size_t max)
{
	/* Between nodes: the rank as far as can be; within a node: the
	 * neighbour on the same node (ranks are placed node by node). */
	int far = (rank + size / 2) % size;
	size_t small = max < SIZES_OTHERS ? max : SIZES_OTHERS;
	int k;

	if (size % 2 == 0) {
		k = sizes_pass(far, rank == 0 || far == 0 ? max : small, "between ranks size/2 apart");
		verdict("sizes", "0 B to %zu B byte-exact between rank 0 and rank %d (%d sizes), to %zu B between the "
			"other ranks size/2 apart", max, size / 2, k, small);
	}
	if (node_size % 2 == 0) {
		int peer;

		MPI_Group wg, ng;
		int nr = node_rank ^ 1;

		MPI_Comm_group(MPI_COMM_WORLD, &wg);
		MPI_Comm_group(node_comm, &ng);
		MPI_Group_translate_ranks(ng, 1, &nr, wg, &peer);
		MPI_Group_free(&wg);
		MPI_Group_free(&ng);
		k = sizes_pass(peer, rank == 0 || peer == 0 ? max : small, "within a node");
		verdict("sizes-intra-node", "0 B to %zu B byte-exact between rank 0 and its neighbour on its node, to %zu B "
			"between the other pairs of ranks of a node", max, small);
	}
}

/* ---- unexpected floods ------------------------------------------------ */
static void check_floods(int flood)
{
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	int *sv = xmalloc(sizeof(int) * (size_t)flood);
	MPI_Request *rq = xmalloc(sizeof(MPI_Request) * (size_t)flood);

	/* All sent before any receive is posted (the barrier), then received
	 * by tag from the last to the first: every receive searches the
	 * unexpected queue. */
	for (int i = 0; i < flood; i++) {
		sv[i] = i * 7 + rank;
		MPI_Isend(&sv[i], 1, MPI_INT, to, i, MPI_COMM_WORLD, &rq[i]);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = flood - 1; i >= 0; i--) {
		int v;

		MPI_Recv(&v, 1, MPI_INT, from, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (v != i * 7 + from && !local_fail)
			fail("flood: tag %d from rank %d carried %d, not %d", i, from, v, i * 7 + from);
	}
	MPI_Waitall(flood, rq, MPI_STATUSES_IGNORE);
	verdict("unexpected-flood", "%d messages to the next rank before any receive, received by tag in reverse "
		"order", flood);

	/* Every rank floods rank 0, which takes them with ANY_SOURCE and
	 * ANY_TAG: each source's messages in its send order. */
	int per = flood / (size > 1 ? size - 1 : 1);

	if (per < 1)
		per = 1;
	if (rank != 0) {
		for (int i = 0; i < per; i++) {
			sv[i] = i;
			MPI_Isend(&sv[i], 1, MPI_INT, 0, 300 + (i % 3), MPI_COMM_WORLD, &rq[i]);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Waitall(per, rq, MPI_STATUSES_IGNORE);
	} else {
		int *next = xmalloc(sizeof(int) * (size_t)size);

		memset(next, 0, sizeof(int) * (size_t)size);
		MPI_Barrier(MPI_COMM_WORLD);
		for (int k = 0; k < per * (size - 1); k++) {
			int v;
			MPI_Status st;

			MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
			if ((v != next[st.MPI_SOURCE] || st.MPI_TAG != 300 + v % 3) && !local_fail)
				fail("flood to rank 0: from rank %d got message %d (tag %d), expected %d",
				     st.MPI_SOURCE, v, st.MPI_TAG, next[st.MPI_SOURCE]);
			next[st.MPI_SOURCE]++;
		}
		free(next);
	}
	free(sv);
	free(rq);
	verdict("unexpected-flood-any-source", "%d messages from each other rank to rank 0, taken with ANY_SOURCE "
		"and ANY_TAG in each sender's order", per);
}

/* ---- collectives ------------------------------------------------------ */
static void check_collectives(void)
{
	const int nb = 1 << 20, nv = 1000, blk = 4096;

	MPI_Barrier(MPI_COMM_WORLD);
	uint8_t *b = xmalloc((size_t)nb);

	for (int root = 0; root < size; root++) {
		if (rank == root)
			fill(b, (size_t)nb, 0xbc000000u + (unsigned int)root);
		else
			memset(b, 0, (size_t)nb);
		MPI_Bcast(b, nb, MPI_BYTE, root, MPI_COMM_WORLD);
		if (verify(b, (size_t)nb, 0xbc000000u + (unsigned int)root) >= 0) {
			fail("bcast: 1 MiB from root %d is not byte-exact", root);
			break;
		}
	}
	free(b);
	verdict("bcast", "1 MiB from each of the %d roots, byte-exact", size);

	long long *v = xmalloc(sizeof(long long) * (size_t)nv), *sum = xmalloc(sizeof(long long) * (size_t)nv);

	for (int i = 0; i < nv; i++)
		v[i] = (long long)rank * 1000003 + i;
	MPI_Allreduce(v, sum, nv, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < nv; i++) {
		long long want = (long long)size * (size - 1) / 2 * 1000003 + (long long)size * i;

		if (sum[i] != want) {
			fail("allreduce: element %d is %lld, not %lld", i, sum[i], want);
			break;
		}
	}
	double d = rank + 0.5, dmax;

	MPI_Allreduce(&d, &dmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	if (dmax != size - 0.5)
		fail("allreduce: MAX of rank + 0.5 is %g, not %g", dmax, size - 0.5);
	free(v);
	free(sum);
	verdict("allreduce", "SUM of %d long longs and MAX of a double over %d ranks", nv, size);

	uint8_t *s = xmalloc((size_t)blk * (size_t)size), *r = xmalloc((size_t)blk * (size_t)size);

	for (int j = 0; j < size; j++)
		fill(s + (size_t)j * blk, (size_t)blk, (uint64_t)rank << 20 | (uint64_t)j);
	MPI_Alltoall(s, blk, MPI_BYTE, r, blk, MPI_BYTE, MPI_COMM_WORLD);
	for (int j = 0; j < size; j++)
		if (verify(r + (size_t)j * blk, (size_t)blk, (uint64_t)j << 20 | (uint64_t)rank) >= 0) {
			fail("alltoall: the block from rank %d is not byte-exact", j);
			break;
		}
	free(s);
	free(r);
	MPI_Barrier(MPI_COMM_WORLD);
	verdict("alltoall", "%d B blocks between all %d ranks, byte-exact; barrier", blk, size);
}

static long parse(const char *opt, const char *v, long lo, long hi)
{
	char *end;
	long x = strtol(v ? v : "", &end, 0);

	if (!v || *end || x < lo || x > hi) {
		if (rank == 0)
			fprintf(stderr, "weft-mpi-check: %s needs a number %ld..%ld\n", opt, lo, hi);
		MPI_Finalize();
		exit(2);
	}
	return x;
}

int main(int argc, char **argv)
{
	size_t max = 64u << 20;
	int per_node = 0, flood = 2000;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--max-size"))
			max = (size_t)parse(argv[i], argv[i + 1], 1, 1L << 30), i++;
		else if (!strcmp(argv[i], "--per-node"))
			per_node = (int)parse(argv[i], argv[i + 1], 1, 64), i++;
		else if (!strcmp(argv[i], "--flood"))
			flood = (int)parse(argv[i], argv[i + 1], 1, 100000), i++;
		else {
			if (rank == 0)
				fprintf(stderr, "usage: weft-mpi-check [--max-size BYTES] [--per-node K] [--flood N]\n");
			MPI_Finalize();
			return 2;
		}
	}
	t_check = MPI_Wtime();
	check_layout(per_node);
	check_any_source_tag();
	check_non_overtaking();
	check_probes();
	check_cancel();
	check_sizes(max);
	check_floods(flood);
	check_collectives();
	if (rank == 0) {
		if (failed_checks)
			printf("weft-mpi-check: FAIL: %d of %d checks failed (%d ranks)\n", failed_checks, checks, size);
		else
			printf("weft-mpi-check: PASS: %d checks (%d ranks)\n", checks, size);
	}
	MPI_Comm_free(&node_comm);
	MPI_Finalize();
	return failed_checks ? 1 : 0;
}
