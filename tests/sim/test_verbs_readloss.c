/* SPDX-License-Identifier: MIT */
/*
 * A stream of RDMA READs over a lossy, reordering fabric, as perftest's
 * ib_read_bw posts them (docs/hw-spec.md 16.9): many READs outstanding at
 * once, max_rd_atomic 16, each READ one or more response chunks; and the
 * same mixed with WRITEs and FAAs, which break the run of READs whose
 * responses may be placed ahead.  Every WQE must complete with success,
 * in posting order, byte-exact (an FAA returns the count before it).
 *
 * A NAK (sequence error) for a later request acknowledges every PSN
 * before it, reads whose responses are still on their way included; the
 * responses that then complete those reads are progress for the retry
 * count and the timer.  When they were not, the timer went off while
 * reads completed and the QP failed with RETRY_EXCEEDED (perftest's
 * ib_read_bw -s 65536 in the verbs-lossy scenario).
 *
 * Responses that overtake the head read's last ones are placed, not
 * dropped: with reordering and no loss no timer goes off (before, every
 * READ after a reordered response waited for one).
 */
#include "vt.h"

#define KIB             1024ull

struct run {
	uint64_t seed;
	uint32_t drop_ppm;
	uint64_t jitter_ns;
	uint64_t size;
	unsigned int reads, depth;
	bool mixed;             /* every 4th WQE a WRITE, every 8th (from the 6th) an FAA */
};

enum { OP_READ, OP_WRITE, OP_FAA };

static unsigned int op_of(const struct run *r, unsigned int i)
{
	if (!r->mixed)
		return OP_READ;
	return i % 4 == 3 ? OP_WRITE : i % 8 == 5 ? OP_FAA : OP_READ;
}

static void one(const struct run *r)
{
	struct weft_sim *s = vt_sim(2, 64ull << 20, r->seed, r->drop_ppm, r->jitter_ns);
	struct wsv_rc_params p = { .timeout = 10, .retry_cnt = 7, .max_rd_atomic = 16 };
	uint64_t region = r->size * r->depth;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_vcqe e;
	unsigned int posted = 0, done = 0, k;
	uint64_t faa = 0, off, v;

	vt_node(s, 0, region, 12, &a);
	vt_node(s, 1, 2 * region + 8, 12, &b);
	memset(b.mem + 2 * region, 0, 8);
	vt_rc(&a, 2, &b, 5, 8, &p, &qa, &qb);
	vt_fill(b.mem, region, r->seed);
	while (done < r->reads) {
		while (posted < r->reads && posted - done < r->depth) {
			uint64_t off = (posted % r->depth) * r->size;

			if (op_of(r, posted) == OP_WRITE) {
				vt_fill(a.mem + off, r->size, r->seed + posted);
				memset(b.mem + region + off, 0, r->size);
				vt_post(&a, &qa, posted, WEFT_VWR_WRITE, off, r->size,
					b.buf + region + off, VT_MR, 0, 0);
			} else if (op_of(r, posted) == OP_FAA) {
				struct weft_vwqe w;
				struct weft_vsge sg = { .addr = a.buf + off, .length = 8, .lkey = VT_MR };

				memset(a.mem + off, 0xff, 8);
				memset(&w, 0, sizeof(w));
				w.wr_id = posted;
				w.opcode = WEFT_VWR_FAA;
				w.flags = WEFT_VWQE_SIGNALED;
				w.u.rdma.remote_addr = b.buf + 2 * region;
				w.u.rdma.rkey = VT_MR;
				w.u.rdma.compare_add = 1;
				REQUIRE(wsv_post_send(s, &qa, &w, &sg, 1, true) == 0, "post FAA");
			} else {
				memset(a.mem + off, 0, r->size);
				vt_post(&a, &qa, posted, WEFT_VWR_READ, off, r->size, b.buf + off,
					VT_MR, 0, 0);
			}
			posted++;
		}
		k = wsv_wait(s, &a.cq, &e, 1, 60ull * 1000000000ull);
		REQUIRE(k == 1, "seed %llu: READ %u of %u: no CQE (%llu timeouts)",
			(unsigned long long)r->seed, done, r->reads,
			(unsigned long long)vt_cnt(s, 0, WEFT_CNT_V_TIMEOUTS));
		REQUIRE(e.wr_id == done && e.status == WEFT_VWC_SUCCESS,
			"seed %llu: CQE %u: wr_id %llu status %u reason %u (%s), %llu timeouts",
			(unsigned long long)r->seed, done, (unsigned long long)e.wr_id, e.status,
			e.byte_len, e.status ? weft_reason_name(e.byte_len) : "",
			(unsigned long long)vt_cnt(s, 0, WEFT_CNT_V_TIMEOUTS));
		off = (done % r->depth) * r->size;
		if (op_of(r, done) == OP_WRITE) {
			REQUIRE(!memcmp(a.mem + off, b.mem + region + off, r->size),
				"seed %llu: WRITE %u data", (unsigned long long)r->seed, done);
		} else if (op_of(r, done) == OP_FAA) {
			uint64_t v;

			memcpy(&v, a.mem + off, 8);
			REQUIRE(v == faa, "seed %llu: FAA %u returned %llu, want %llu",
				(unsigned long long)r->seed, done, (unsigned long long)v,
				(unsigned long long)faa);
			faa++;
		} else {
			REQUIRE(!memcmp(a.mem + off, b.mem + off, r->size),
				"seed %llu: READ %u data", (unsigned long long)r->seed, done);
		}
		done++;
	}
	if (!r->drop_ppm && !r->mixed)
		CHECK(vt_cnt(s, 0, WEFT_CNT_V_TIMEOUTS) == 0,
		      "seed %llu: %llu timeouts with reordering and no loss",
		      (unsigned long long)r->seed,
		      (unsigned long long)vt_cnt(s, 0, WEFT_CNT_V_TIMEOUTS));
	memcpy(&v, b.mem + 2 * region, 8);
	CHECK(v == faa, "seed %llu: remote word %llu after %llu FAAs", (unsigned long long)r->seed,
	      (unsigned long long)v, (unsigned long long)faa);
	t_checked("seed %llu, %u ppm loss, jitter %llu ns: %u %s of %llu bytes, %u outstanding, "
		  "byte-exact and in order (%llu timeouts, %llu duplicate reads served)",
		  (unsigned long long)r->seed, r->drop_ppm, (unsigned long long)r->jitter_ns,
		  r->reads, r->mixed ? "READs, WRITEs and FAAs" : "READs", (unsigned long long)r->size, r->depth,
		  (unsigned long long)vt_cnt(s, 0, WEFT_CNT_V_TIMEOUTS),
		  (unsigned long long)vt_cnt(s, 1, WEFT_CNT_V_DUP_READS));
	weft_sim_free(s);
}

int main(void)
{
	static const struct run runs[] = {
		{ 6, 0, 50000, 64 * KIB, 100, 32, false },
		{ 1, 10000, 50000, 64 * KIB, 100, 32, false },
		{ 2, 10000, 50000, 64 * KIB, 100, 32, false },
		{ 3, 50000, 50000, 64 * KIB, 100, 32, false },
		{ 4, 50000, 50000, 1024 * KIB, 20, 8, false },
		{ 5, 10000, 50000, 4 * KIB, 400, 64, false },
		{ 7, 0, 50000, 64 * KIB, 200, 32, true },
		{ 8, 10000, 50000, 64 * KIB, 200, 32, true },
		{ 9, 50000, 50000, 256 * KIB, 60, 16, true },
	};
	unsigned int i;

	for (i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		t_begin("READ stream, seed %llu", (unsigned long long)runs[i].seed);
		one(&runs[i]);
	}
	return t_done();
}
