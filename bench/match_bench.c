/* SPDX-License-Identifier: MIT */
/*
 * weft-match-bench: matching cost against queue depth (not a test).
 *
 *   weft-match-bench [--messages N] [--matchers M] [--step S]
 *
 * For each depth D in 0, 1, 4, 16, 64, 256, 1024, 4096: a fresh two-node
 * sim; D never-matching entries sit ahead in the list searched (posted
 * receives for the PRQ series, unexpected messages for the UEQ series);
 * then N times: node 0 posts a receive and node 1 sends a 64-byte
 * message that matches it, run to idle, completions taken.  Prints sim
 * matched messages per CPU second, CPU time per message, compares per
 * message, and the rate against depth 0 measured in the same run (the
 * baseline).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mt.h"
#include "simtest.h"

/* Process CPU time: the machine may be shared, the sim is one thread. */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Matched messages per second at depth d; *cmp = compares per message. */
static double run(unsigned int d, bool ueq, unsigned int n, unsigned int matchers,
		  unsigned int step, double *cmp)
{
	struct weft_sim_config cfg = {
		.matchers = matchers, .match_step = step, .seed = 1,
		.match_store = 8192 * WEFT_MATCH_HDR_BYTES, .umb_size = 8192 * 128,
		.faults = { .routes = 1, .delay_ns = 100 },
	};
	struct mt t;
	uint64_t r, s, c0;
	unsigned int k;
	double t0, t1;

	mt_init(&t, 2, &cfg);
	mt_qcfg(&t, 0, 0, WEFT_QCFG(WEFT_QCFG_ENABLE, 0, 0));
	r = mt_alloc(&t, 0, 64);
	s = mt_alloc(&t, 1, 64);
	for (k = 0; k < d; k++) {
		if (ueq)
			REQUIRE(mt_send(&t, 1, 0, 0, WEFT_MW(0, 1, 2, 100000 + k), s, 64, k, 0) == 0);
		else
			REQUIRE(mt_post(&t, 0, 0, WEFT_MW(0, 1, 2, 100000 + k), 0,
					WEFT_MATCH_ANY_SOURCE, r, 64, k, 0) == 0);
		if (k % 32 == 31) {
			mt_run(&t);
			mt_drain(&t, 0, 0);
			mt_drain(&t, 1, 0);
		}
	}
	mt_run(&t);
	mt_drain(&t, 0, 0);
	mt_drain(&t, 1, 0);
	REQUIRE((ueq ? WEFT_QSTAT_UEQ(mt_reg(&t, 0, WEFT_REG_MATCH_QSTAT(0))) :
		 WEFT_QSTAT_PRQ(mt_reg(&t, 0, WEFT_REG_MATCH_QSTAT(0)))) == (d > 0xffff ? 0xffff : d),
		"depth %u set up", d);
	c0 = mt_cnt(&t, 0, WEFT_CNT_M_COMPARES);
	t0 = now_s();
	for (k = 0; k < n; k++) {
		uint64_t w = WEFT_MW(0, 1, 2, 7);

		if (ueq) {
			/* The message waits unexpected behind d others; the post finds it. */
			REQUIRE(mt_send(&t, 1, 0, 0, w, s, 64, k, 0) == 0);
			mt_run(&t);
			REQUIRE(mt_post(&t, 0, 0, w, 0, WEFT_MATCH_ANY_SOURCE, r, 64, k, 0) == 0);
		} else {
			REQUIRE(mt_post(&t, 0, 0, w, 0, WEFT_MATCH_ANY_SOURCE, r, 64, k, 0) == 0);
			REQUIRE(mt_send(&t, 1, 0, 0, w, s, 64, k, 0) == 0);
		}
		mt_run(&t);
		REQUIRE(mt_drain(&t, 0, WEFT_MCQE_MATCH_COPY) == 1, "message %u matched", k);
		mt_drain(&t, 1, 0);
	}
	t1 = now_s();
	*cmp = (double)(mt_cnt(&t, 0, WEFT_CNT_M_COMPARES) - c0) / n;
	mt_fini(&t);
	return n / (t1 - t0);
}

int main(int argc, char **argv)
{
	static const unsigned int depths[] = { 0, 1, 4, 16, 64, 256, 1024, 4096 };
	static const struct option opts[] = {
		{ "messages", required_argument, NULL, 'n' },
		{ "matchers", required_argument, NULL, 'm' },
		{ "step", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int n = 20000, matchers = 8, step = 32, i, pass;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'n': n = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'm': matchers = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 's': step = (unsigned int)strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: %s [--messages N] [--matchers M] [--step S]\n",
				argv[0]);
			return 2;
		}
	}
	if (n == 0)
		n = 1;
	printf("weft-match-bench: %u matched 64 B messages per depth, %u matchers, "
	       "%u compares per unit\n", n, matchers, step);
	for (pass = 0; pass < 2; pass++) {
		double base = 0;

		printf("%s series (never-matching entries ahead in the %s)\n",
		       pass ? "UEQ" : "PRQ", pass ? "unexpected list" : "posted list");
		printf("  %6s %14s %10s %10s %10s\n", "depth", "messages/s", "us/msg", "compares",
		       "vs depth 0");
		for (i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
			double cmp, rate = run(depths[i], pass == 1, n, matchers, step, &cmp);

			if (i == 0)
				base = rate;
			printf("  %6u %14.0f %10.2f %10.1f %9.2fx\n", depths[i], rate, 1e6 / rate, cmp,
			       rate / base);
			fflush(stdout);
		}
	}
	return 0;
}
