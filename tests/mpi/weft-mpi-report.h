/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The checks' reporting shared by the MPI programs of tests/mpi
 * (docs/mpi.md): every rank runs every check, fail() records and prints a
 * rank's reason, verdict() makes the ranks agree on the outcome and rank
 * 0 prints "ok NAME: DETAIL (T s)" or "FAIL NAME: ...".  The program
 * defines WEFT_MPI_PROG, its name, before including it.
 */
#ifndef WEFT_MPI_REPORT_H
#define WEFT_MPI_REPORT_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>

static int rank, size;
static int local_fail;      /* this rank saw a failure in the current check */
static int failed_checks;   /* rank 0: checks that failed */
static int checks;
static double t_check;      /* MPI_Wtime at the start of the current check */

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, WEFT_MPI_PROG ": rank %d: ", rank);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	local_fail = 1;
}

/* All ranks agree on the check's outcome; rank 0 prints it. */
static void verdict(const char *name, const char *fmt, ...)
{
	int any = 0;
	char detail[256];
	va_list ap;

	MPI_Allreduce(&local_fail, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	checks++;
	if (rank == 0) {
		if (any)
			printf("FAIL %s: see the ranks' messages above\n", name);
		else
			printf("ok %s: %s (%.1f s)\n", name, detail, MPI_Wtime() - t_check);
		fflush(stdout);
	}
	failed_checks += any;
	local_fail = 0;
	t_check = MPI_Wtime();
}

#endif
