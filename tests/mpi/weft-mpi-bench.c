// SPDX-License-Identifier: GPL-2.0-only
/*
 * weft-mpi-bench: an MPI benchmark between ranks 0 and 1 (docs/mpi.md);
 * the other ranks only wait.  Prints, on rank 0:
 *   latency: half round trip of a ping-pong, per message size;
 *   bandwidth: a window of 16 messages then a 1-byte acknowledgement;
 *   message rate: windows of 64 messages of 8 B;
 *   depth: ping-pong latency (8 B) with D receives that never match posted
 *          first on both ranks (the matching cost of a posted-receive queue
 *          of depth D), by source and tag, and with MPI_ANY_SOURCE.
 * Each figure is one line "KIND PARAM: VALUE UNIT", and the last line is all
 * of them as one JSON object (scripts/weft-mpi-bench sets the transports
 * side by side).  Figures only: nothing here is a pass/fail check, but
 * every message's size is checked, and the exit status is 1 if a transfer
 * failed.
 *
 * Usage: weft-mpi-bench [--iters N] [--max-depth D]
 *   --iters      ping-pong round trips per figure (default 200)
 *   --max-depth  deepest posted-receive queue, in powers of 4 from 16
 *                (default 4096)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, iters = 200, bad;
static char json[8192];
static size_t jlen;

static void figure(const char *kind, const char *param, double v, const char *unit)
{
	if (rank != 0)
		return;
	printf("%s %s: %.2f %s\n", kind, param, v, unit);
	fflush(stdout);
	jlen += (size_t)snprintf(json + jlen, sizeof(json) - jlen, "%s\"%s %s\": %.3f", jlen > 1 ? ", " : "",
				 kind, param, v);
	if (jlen >= sizeof(json))
		jlen = sizeof(json) - 1;
}

static void check_count(const MPI_Status *st, int want)
{
	int n;

	MPI_Get_count(st, MPI_BYTE, &n);
	if (n != want && !bad) {
		fprintf(stderr, "weft-mpi-bench: rank %d: got %d B, expected %d\n", rank, n, want);
		bad = 1;
	}
}

/* Half round trip in microseconds; SRC is the receive source for rank 1. */
static double pingpong(char *buf, int n, int src)
{
	MPI_Status st;
	double t0 = 0;

	for (int i = -10; i < iters; i++) {
		if (i == 0)
			t0 = MPI_Wtime();
		if (rank == 0) {
			MPI_Send(buf, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &st);
			check_count(&st, n);
		} else if (rank == 1) {
			MPI_Recv(buf, n, MPI_BYTE, src, 1, MPI_COMM_WORLD, &st);
			check_count(&st, n);
			MPI_Send(buf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - t0) / iters / 2 * 1e6;
}

/* Bytes per second with windows of W messages of N bytes. */
static double stream(char *buf, int n, int w, int reps)
{
	MPI_Request rq[64];
	MPI_Status st[64];
	char ack = 0;
	double t0 = 0;

	for (int r = -1; r < reps; r++) {
		if (r == 0)
			t0 = MPI_Wtime();
		if (rank == 0) {
			for (int k = 0; k < w; k++)
				MPI_Isend(buf + (size_t)k * (size_t)n, n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &rq[k]);
			MPI_Waitall(w, rq, MPI_STATUSES_IGNORE);
			MPI_Recv(&ack, 1, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			for (int k = 0; k < w; k++)
				MPI_Irecv(buf + (size_t)k * (size_t)n, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &rq[k]);
			MPI_Waitall(w, rq, st);
			for (int k = 0; k < w; k++)
				check_count(&st[k], n);
			MPI_Send(&ack, 1, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
		}
	}
	return (double)n * w * reps / (MPI_Wtime() - t0);
}

int main(int argc, char **argv)
{
	static const int lat_sizes[] = { 0, 8, 64, 512, 4096, 32768 };
	static const int bw_sizes[] = { 4096, 65536, 1 << 20, 4 << 20 };
	int max_depth = 4096;
	char param[64];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 1; i < argc; i++) {
		char *end = NULL;
		long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;

		if (!end || *end || v < 1 || v > 1 << 20 ||
		    (strcmp(argv[i], "--iters") && strcmp(argv[i], "--max-depth"))) {
			if (rank == 0)
				fprintf(stderr, "usage: weft-mpi-bench [--iters N] [--max-depth D]\n");
			MPI_Finalize();
			return 2;
		}
		if (!strcmp(argv[i], "--iters"))
			iters = (int)v;
		else
			max_depth = (int)v;
		i++;
	}
	if (size < 2) {
		fprintf(stderr, "weft-mpi-bench: needs 2 ranks or more\n");
		MPI_Finalize();
		return 2;
	}
	char *buf = calloc(16, 4 << 20);

	if (!buf) {
		fprintf(stderr, "weft-mpi-bench: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	json[0] = '{';
	jlen = 1;
	if (rank == 0) {
		char n0[MPI_MAX_PROCESSOR_NAME], n1[MPI_MAX_PROCESSOR_NAME];
		int l;

		MPI_Get_processor_name(n0, &l);
		MPI_Recv(n1, sizeof(n1), MPI_CHAR, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		printf("weft-mpi-bench: rank 0 on %s, rank 1 on %s, %d iterations\n", n0, n1, iters);
	} else if (rank == 1) {
		char n1[MPI_MAX_PROCESSOR_NAME] = "";
		int l;

		MPI_Get_processor_name(n1, &l);
		MPI_Send(n1, (int)sizeof(n1), MPI_CHAR, 0, 9, MPI_COMM_WORLD);
	}
	for (size_t k = 0; k < sizeof(lat_sizes) / sizeof(lat_sizes[0]); k++) {
		snprintf(param, sizeof(param), "%d B", lat_sizes[k]);
		figure("latency", param, pingpong(buf, lat_sizes[k], 0), "us");
	}
	for (size_t k = 0; k < sizeof(bw_sizes) / sizeof(bw_sizes[0]); k++) {
		int reps = bw_sizes[k] >= 1 << 20 ? 4 : 20;

		snprintf(param, sizeof(param), "%d B", bw_sizes[k]);
		figure("bandwidth", param, stream(buf, bw_sizes[k], 16, reps) / 1e6, "MB/s");
	}
	figure("rate", "8 B", stream(buf, 8, 64, iters / 4 + 1) / 8, "msg/s");

	/* Posted-receive depth: D receives from rank 0 (or any source) with
	 * a tag that never comes, posted before the ping-pong. */
	MPI_Request *deep = malloc(sizeof(MPI_Request) * (size_t)max_depth);
	char *sink = malloc((size_t)max_depth);

	if (!deep || !sink)
		MPI_Abort(MPI_COMM_WORLD, 3);
	for (int any = 0; any < 2; any++) {
		for (int d = 0; d <= max_depth; d = d ? d * 4 : 16) {
			int posted = rank <= 1 ? d : 0;

			for (int k = 0; k < posted; k++)
				MPI_Irecv(sink + k, 1, MPI_BYTE, any ? MPI_ANY_SOURCE : 1 - rank, 999,
					  MPI_COMM_WORLD, &deep[k]);
			MPI_Barrier(MPI_COMM_WORLD);
			snprintf(param, sizeof(param), "%d%s", d, any ? " any-source" : "");
			figure("depth", param, pingpong(buf, 8, any ? MPI_ANY_SOURCE : 0), "us");
			for (int k = 0; k < posted; k++) {
				MPI_Cancel(&deep[k]);
				MPI_Wait(&deep[k], MPI_STATUS_IGNORE);
			}
			MPI_Barrier(MPI_COMM_WORLD);
			if (d * 4 > max_depth && d)
				break;
		}
	}
	if (rank == 0)
		printf("%s}\n", json);
	free(deep);
	free(sink);
	free(buf);
	MPI_Finalize();
	return bad;
}
