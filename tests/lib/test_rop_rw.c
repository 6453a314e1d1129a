/* SPDX-License-Identifier: MIT */
/*
 * Reliable RDMA reads after writes on the same rCxt pairs, deep pipeline,
 * lossy reordering fabric: weft-bw's pattern (docs/tools.md) in one
 * thread on the sim backend, so that every run is one seed's exact
 * sequence.
 *
 * Per seed: writes of 4, 8 and 16 KiB with 64, 32 and 16 reliable ops in
 * flight (256 ops each, one rCxt pair per op in flight), then reads of the
 * same sizes on the same pairs; after each size one write of a pattern and
 * a read back on pair 0, compared byte for byte.  5% loss, 4 routes with
 * jitter, and a 30 us retry timeout close to the round trip: retries race
 * with their operation's late packets and completions, so a write retry
 * often reaches the target after the initiator took an earlier try's
 * completion, and a read follows on that pair (docs/hw-spec.md 6.2, 6.3).
 * Every operation must complete within its retry budget.  Between the
 * client's calls the server's window is polled a seed-chosen number of
 * times, which moves where the adapters' work falls between them.
 *
 * Usage: test-rop-rw [seeds [first]] (default 40 seeds from 1).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libweft.h"
#include "weft/counters.h"
#include "weft_test.h"

#define JOB             0x1234u
#define PAIRS           64u
#define MAX_SIZE        (16u << 10)
#define OPS             256u
#define SLOTS_BYTES     (8u * MAX_SIZE)     /* weft-bw's slots; ops share them */
#define BUF_BYTES       (SLOTS_BYTES + 2u * MAX_SIZE)
#define TIMEOUT_NS      30000ull
#define BUDGET_NS       2000000000ull

struct run {
	struct weft_simnet *net;
	struct weft_dev *d[2];          /* 0: client, 1: server */
	struct weft_win *w[2];
	uint8_t *buf[2];
	uint64_t pvo[2];
	uint32_t mr[2];
	uint32_t rc[2][PAIRS];
	uint16_t key[2][PAIRS];
	uint64_t rng;
	uint64_t retries;
};

/* Poll the server's window 0..3 times, now and then up to 63. */
static void stir(struct run *r)
{
	struct weft_entry e;
	unsigned int k;

	r->rng = r->rng * 6364136223846793005ull + 1442695040888963407ull;
	k = (unsigned int)(r->rng >> 33);
	k = (r->rng >> 60) & 3 ? k % 4 : k % 64;
	while (k--)
		REQUIRE(weft_win_poll(r->w[1], &e) >= 0, "server window error");
}

static void rop_init(struct run *r, struct weft_rop *rop, int is_read, unsigned int pair,
		     uint64_t local_off, uint64_t remote_off, uint64_t size)
{
	memset(rop, 0, sizeof(*rop));
	rop->is_read = is_read;
	rop->rdma = (struct weft_rdma){
		.node = weft_win_node(r->w[1]), .window = (uint16_t)weft_win_id(r->w[1]),
		.local_rcxt = r->rc[0][pair], .remote_rcxt = r->rc[1][pair],
		.remote_rcxt_key = r->key[1][pair], .notify = WEFT_COMP_SOURCE,
		.local_pvo = r->pvo[0] + local_off, .remote_pvo = r->pvo[1] + remote_off,
		.length = size,
	};
}

/* Wait for rop's own WEFT_ENT_ROP entry (rop stays valid until then). */
static int rop_wait(struct run *r, const struct weft_rop *rop)
{
	struct weft_entry e;

	for (;;) {
		stir(r);
		int p = weft_win_poll(r->w[0], &e);

		if (p < 0)
			return p;
		if (p == 0) {
			p = weft_win_wait(r->w[0], 1000);
			if (p < 0)
				return p;
			continue;
		}
		if (e.type == WEFT_ENT_ROP && e.rop == rop)
			return rop->state == WEFT_ROP_DONE ? 0 : rop->error ? rop->error : -EIO;
	}
}

/* OPS ops of size bytes, depth in flight, each finished one posted again. */
static int run_size(struct run *r, int is_read, uint64_t size, unsigned int depth,
		    char *why, size_t whylen)
{
	static struct weft_rop rops[PAIRS];
	struct weft_rop *ready[PAIRS];
	unsigned int nr = 0, posted = 0, done = 0, i;
	struct weft_entry e;

	for (i = 0; i < depth; i++, posted++) {
		uint64_t off = (uint64_t)i * size % SLOTS_BYTES;

		rop_init(r, &rops[i], is_read, i, off, off, size);
		ready[nr++] = &rops[i];
	}
	while (done < OPS) {
		stir(r);
		int p = weft_win_poll(r->w[0], &e);

		if (p < 0) {
			snprintf(why, whylen, "client window: %s", strerror(-p));
			return p;
		}
		if (nr && (p == 0 || nr >= 16)) {
			/* The finished ops again, one doorbell (as weft-bw). */
			int k = weft_win_rop_post_list(r->w[0], ready, nr);

			if (k == -EAGAIN)
				k = 0;
			if (k < 0) {
				snprintf(why, whylen, "post: %s", strerror(-k));
				return k;
			}
			nr -= (unsigned int)k;
			memmove(ready, ready + k, nr * sizeof(ready[0]));
			if (p == 0)
				continue;
		} else if (p == 0) {
			p = weft_win_wait(r->w[0], 1000);
			if (p < 0) {
				snprintf(why, whylen, "wait: %s", strerror(-p));
				return p;
			}
			continue;
		}
		if (e.type != WEFT_ENT_ROP)
			continue;
		REQUIRE(e.rop >= rops && e.rop < rops + depth, "an entry for an op of this size");
		if (e.rop->state != WEFT_ROP_DONE) {
			snprintf(why, whylen, "pair %td: %s after %u tries (tids %u..%u), status %s",
				 e.rop - rops, strerror(-e.rop->error), e.rop->tries,
				 e.rop->first_tid, e.rop->rdma.tid, weft_status_name(e.rop->status));
			return e.rop->error ? e.rop->error : -EIO;
		}
		r->retries += e.rop->tries - 1;
		done++;
		if (posted < OPS) {
			ready[nr++] = e.rop;
			posted++;
		}
	}
	return 0;
}

/* A pattern from the client's first spare area to the server's, then
 * read back into the client's second, on pair 0; -EBADMSG if it differs. */
static int check_size(struct run *r, uint64_t size, uint32_t pat, char *why, size_t whylen)
{
	uint8_t *src = r->buf[0] + SLOTS_BYTES, *back = src + MAX_SIZE;
	struct weft_rop rop;
	int rc;

	for (uint64_t i = 0; i < size; i++)
		src[i] = (uint8_t)((i * 131u + pat) >> 3);
	memset(back, 0, size);
	for (int rd = 0; rd < 2; rd++) {
		rop_init(r, &rop, rd, 0, SLOTS_BYTES + (rd ? MAX_SIZE : 0), SLOTS_BYTES, size);
		rc = weft_win_rop_post(r->w[0], &rop);
		if (!rc)
			rc = rop_wait(r, &rop);
		if (rc) {
			snprintf(why, whylen, "check %s: %s after %u tries", rd ? "read" : "write",
				 strerror(-rc), rop.tries);
			return rc;
		}
	}
	if (memcmp(src, back, size)) {
		snprintf(why, whylen, "check of %" PRIu64 " B: data differs", size);
		return -EBADMSG;
	}
	return 0;
}

static uint64_t counter(struct weft_dev *d, unsigned int c)
{
	uint64_t v = 0;

	REQUIRE(weft_dev_counter(d, c, &v) == 0, "counter %u", c);
	return v;
}

/* One seed; 0 or a negative errno with why filled. */
static int run_seed(uint64_t seed, uint64_t *retries, uint64_t *restarts, char *why,
		    size_t whylen)
{
	struct weft_simnet_attr a = { .nodes = 2, .seed = seed, .drop_ppm = 50000, .routes = 4,
				      .delay_ns = 1000, .jitter_ns = 20000,
				      .flags = WEFT_SIMNET_F_SOLO, .mem_size = 64ull << 20 };
	struct run r;
	char err[256];
	int rc = 0;

	memset(&r, 0, sizeof(r));
	r.rng = seed;
	r.net = weft_simnet_new(&a, err, sizeof(err));
	REQUIRE(r.net, "sim backend: %s", err);
	for (int n = 0; n < 2; n++) {
		struct weft_win_attr wa = { .job_id = JOB };
		int e;

		r.d[n] = weft_simnet_open(r.net, (unsigned int)n, err, sizeof(err));
		REQUIRE(r.d[n], "open adapter %d: %s", n, err);
		r.w[n] = weft_win_open(r.d[n], &wa, &e);
		REQUIRE(r.w[n], "window on node %d: %s", n, strerror(-e));
		weft_win_set_retry(r.w[n], TIMEOUT_NS, 8 * TIMEOUT_NS, 1000000);
		weft_win_set_retry_budget(r.w[n], BUDGET_NS);
		r.buf[n] = weft_dev_alloc(r.d[n], BUF_BYTES);
		REQUIRE(r.buf[n], "buffer on node %d", n);
		REQUIRE(weft_mr_reg(r.d[n], JOB, r.buf[n], BUF_BYTES, &r.pvo[n], &r.mr[n]) == 0,
			"register on node %d", n);
		for (unsigned int i = 0; i < PAIRS; i++)
			REQUIRE(weft_rcxt_alloc(r.w[n], &r.rc[n][i], &r.key[n][i]) == 0,
				"rCxt %u on node %d", i, n);
	}
	for (int rd = 0; rd < 2 && !rc; rd++)
		for (uint64_t size = 4096; size <= MAX_SIZE && !rc; size *= 2) {
			char detail[160];

			rc = run_size(&r, rd, size, (unsigned int)((256u << 10) / size), detail,
				      sizeof(detail));
			if (!rc)
				rc = check_size(&r, size, (uint32_t)(seed + size + (uint64_t)rd),
						detail, sizeof(detail));
			if (rc)
				snprintf(why, whylen, "%ss of %" PRIu64 " B: %s", rd ? "read" : "write",
					 size, detail);
		}
	*retries += r.retries;
	*restarts += counter(r.d[1], WEFT_CNT_RDMA_RESTARTS);
	weft_dev_close(r.d[0]);
	weft_dev_close(r.d[1]);
	weft_simnet_free(r.net);
	return rc;
}

int main(int argc, char **argv)
{
	uint64_t seeds = argc > 1 ? strtoull(argv[1], NULL, 0) : 40;
	uint64_t first = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	uint64_t retries = 0, restarts = 0, failed = 0;
	char why[256];

	if (!weft_simnet_available())
		t_bail("libweft was built without the sim backend (qemu-device/sim missing)");
	REQUIRE(seeds > 0, "at least one seed");
	for (uint64_t s = first; s < first + seeds; s++) {
		why[0] = 0;
		if (run_seed(s, &retries, &restarts, why, sizeof(why))) {
			failed++;
			CHECK(0, "seed %" PRIu64 ": %s", s, why);
		}
	}
	t_diag("%" PRIu64 " seeds from %" PRIu64 ": %" PRIu64 " retries, %" PRIu64
	       " abandoned operations restarted (RDMA_RESTARTS)", seeds, first, retries, restarts);
	CHECK(retries > 0, "no op was retried: the loss did not act");
	CHECK(restarts > 0, "no rCxt was restarted: the late-retry sequence never happened");
	t_point("reads after writes on the same rCxt pairs, 64/32/16 reliable ops in flight, "
		"5%% loss, 4 routes, 30 us retry timeout: %" PRIu64 " seeds, %" PRIu64
		" failed, %" PRIu64 " retries, %" PRIu64 " restarts", seeds, failed, retries,
		restarts);
	return t_done();
}
