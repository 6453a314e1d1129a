/* SPDX-License-Identifier: MIT */
/*
 * weft-sim-bench: figures of the in-process sim (not a test).
 *
 *   weft-sim-bench [--messages N] [--failover-events N] [--failover-nodes N]
 *                  [--no-throughput] [--no-failover] [--no-verbs] [--json]
 *
 * 1. RDMA-write throughput of 1 MiB messages from node 0 to node 1 (one
 *    RDMAW pseudo packet per message, 4 rCxt pairs in flight, wall clock,
 *    after one untimed message per pair), once at the benchmark's poll
 *    budget of 256 and once at the sim's default (WEFT_SIM_DEF_BUDGET);
 *    a plain memcpy of the same bytes measured in the same run, once over
 *    4 MiB buffers (in cache) and once over buffers as large as the
 *    transfer (out of cache), and the ratios.  A second baseline: the
 *    sim's own two copies of every payload byte (into a frame buffer,
 *    out of it) with no per-packet work, through as many frame buffers
 *    as each run had in flight on average and through 16.  The last
 *    message of each channel is checked.  With --json, one JSON line of
 *    these figures follows the text: "sim_gbps", "memcpy_cached_gbps",
 *    "memcpy_uncached_gbps", the wall-time ratios, "frames_in_flight",
 *    "two_copies_gbps" and "ratio_two_copies_cached" at budget 256;
 *    "two_copies_16_gbps"; "sim_default_budget_gbps",
 *    "ratio_cached_default_budget", "frames_in_flight_default_budget"
 *    and "two_copies_default_budget_gbps" at the default budget.
 * 2. Verbs RC RDMA-write throughput at 1 MiB and 4 KiB (one RC QP pair,
 *    up to 64 WQEs in flight, lossless fabric, wall clock) next to a
 *    memcpy of the same sizes between the same two guest buffers, reused
 *    in the same order, and the ratio.  The data is checked.
 * 3. The failover campaign's long mode (docs/failover.md), by default
 *    100,000 reboot/recovery events, with its report line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simtest.h"
#include "weft_sim_verbs.h"

#define MIB     (1u << 20)
#define PAIRS   4u

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

static double cpu_s(void)
{
	return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

/* The sim's two copies of every payload byte without its per-packet
 * work: each 1,920-byte chunk of the same messages, between the same
 * buffers, copied from the source into a frame buffer and, frames chunks
 * later, from that buffer to the destination.  The ring of frame buffers
 * is laid out as the fabric's (the payload 128 bytes into a buffer of a
 * whole frame).  Returns wall seconds; *cpu gets CPU seconds. */
#define FRAME_STRIDE 4352u
#define PAYLOAD_OFF  128u
static double store_forward(const uint8_t *src, uint8_t *dst, unsigned int messages,
			    size_t frames, double *cpu)
{
	uint8_t *ring = aligned_alloc(64, frames * FRAME_STRIDE);
	struct { uint8_t *to; size_t len; } *slot = calloc(frames, sizeof(*slot));
	size_t j = 0, k;
	unsigned int i;
	double t0, c0, t;

	CHECK(ring && slot, "out of memory");
	memset(ring, 0, frames * FRAME_STRIDE);
	t0 = now_s();
	c0 = cpu_s();
	for (i = 0; i < messages; i++) {
		size_t off = (size_t)(i % PAIRS) * MIB, done;

		for (done = 0; done < MIB; done += WEFT_MAX_PAYLOAD, j++) {
			uint8_t *fr = ring + (j % frames) * FRAME_STRIDE + PAYLOAD_OFF;
			size_t len = MIB - done < WEFT_MAX_PAYLOAD ? MIB - done : WEFT_MAX_PAYLOAD;

			if (slot[j % frames].to)
				memcpy(slot[j % frames].to, fr, slot[j % frames].len);
			memcpy(fr, src + off + done, len);
			slot[j % frames].to = dst + off + done;
			slot[j % frames].len = len;
		}
	}
	for (k = 0; k < frames; k++, j++)
		if (slot[j % frames].to)
			memcpy(slot[j % frames].to,
			       ring + (j % frames) * FRAME_STRIDE + PAYLOAD_OFF, slot[j % frames].len);
	t = now_s() - t0;
	*cpu = cpu_s() - c0;
	free(ring);
	free(slot);
	return t;
}

/* One timed run of the sim's 1 MiB writes at a poll budget. */
struct sim_run {
	unsigned int budget;
	double t, c;            /* wall and CPU seconds */
	size_t in_flight;       /* frames in the fabric on average */
	double t_sf, c_sf;      /* the two copies alone through in_flight frames */
};

static void sim_write(unsigned int messages, struct sim_run *o)
{
	struct weft_sim_config cfg = {
		.nr_nodes = 2, .mem_size = 64u << 20, .seed = 1,
		.faults = { .routes = 1, .delay_ns = 1000 },
		.max_queued = 1u << 16, .rx_queue_len = 256, .poll_budget = o->budget,
	};
	struct weft_sim *s = st_sim(&cfg);
	struct st_node n[2];
	struct rel *r;
	int ch[PAIRS];
	unsigned int i;
	double t0, c0, gb = (double)messages * MIB / 1e9;
	uint64_t v0, p0, pkts;
	uint8_t *src, *dst;

	st_node_setup(s, 0, 3, PAIRS * MIB, 8, false, &n[0]);
	st_node_setup(s, 1, 3, PAIRS * MIB, 8, false, &n[1]);
	src = weft_sim_ptr(s, 0, n[0].buf, PAIRS * MIB);
	dst = weft_sim_ptr(s, 1, n[1].buf, PAIRS * MIB);
	st_fill(src, PAIRS * MIB, 99);
	r = rel_new(s, 1000000000ull, NULL, NULL);
	CHECK(r, "rel_new");
	rel_set_region(r, 0, n[0].buf, n[0].len, n[0].pvo);
	rel_set_region(r, 1, n[1].buf, n[1].len, n[1].pvo);
	for (i = 0; i < PAIRS; i++) {
		ch[i] = rel_channel(r, &n[0].win, &n[1].win);
		CHECK(ch[i] >= 0, "channel %d", ch[i]);
	}
	/* One untimed message per channel first, as memcpy below gets one
	 * untimed copy: the destination's pages and the fabric's frame
	 * buffers are then allocated and faulted in before the clock runs. */
	for (i = 0; i < PAIRS; i++)
		rel_submit(r, ch[i], REL_WRITE, (uint64_t)i * MIB, (uint64_t)i * MIB, MIB);
	CHECK(rel_run(r, UINT64_MAX / 2), "warm-up: %llu messages pending",
	      (unsigned long long)rel_pending(r));
	memset(dst, 0, PAIRS * MIB);
	p0 = weft_sim_counter(s, 0, WEFT_CNT_TX_PACKETS);
	for (i = 0; i < messages; i++)
		rel_submit(r, ch[i % PAIRS], REL_WRITE, (uint64_t)(i % PAIRS) * MIB,
			   (uint64_t)(i % PAIRS) * MIB, MIB);
	v0 = weft_sim_now(s);
	t0 = now_s();
	c0 = cpu_s();
	CHECK(rel_run(r, UINT64_MAX / 2), "%llu messages pending",
	      (unsigned long long)rel_pending(r));
	o->t = now_s() - t0;
	o->c = cpu_s() - c0;
	CHECK(!memcmp(src, dst, PAIRS * MIB), "received data differs");
	CHECK(rel_stats(r)->retries == 0, "retries without loss");
	pkts = weft_sim_counter(s, 0, WEFT_CNT_TX_PACKETS) - p0;
	printf("sim RDMA write, %u x 1 MiB, node 0 -> node 1, poll budget %u: %.3f GB/s wall "
	       "(%.3f s), %.3f GB/s CPU time; %llu packets, %.3f ms virtual\n", messages,
	       o->budget, gb / o->t, o->t, gb / o->c, (unsigned long long)pkts,
	       (double)(weft_sim_now(s) - v0) / 1e6);
	/* The sim's frames in flight on average (Little's law: packets
	 * times the fabric's delay over the virtual time), then its two
	 * copies alone through that many frames. */
	o->in_flight = (size_t)((double)pkts * (double)cfg.faults.delay_ns /
				(double)(weft_sim_now(s) - v0) + 0.5);
	o->in_flight = o->in_flight ? o->in_flight : 1;
	memset(dst, 0, PAIRS * MIB);
	o->t_sf = store_forward(src, dst, messages, o->in_flight, &o->c_sf);
	CHECK(!memcmp(src, dst, PAIRS * MIB), "store-and-forward copy differs");
	printf("two copies through %5zu frames (no per-packet work): %.3f GB/s wall, "
	       "%.3f GB/s CPU time; ratio sim / these: %.3f wall\n", o->in_flight,
	       gb / o->t_sf, gb / o->c_sf, o->t_sf / o->t);
	rel_free(r);
	weft_sim_free(s);
}

/* The benchmark's poll budget of 256 (each poll moves up to 490 KB, more
 * than a core's L2 between a frame's two copies), then the sim's
 * default; two copies through 16 frames; memcpy. */
static int throughput(unsigned int messages, bool json)
{
	struct sim_run run[2] = { { .budget = 256 }, { .budget = WEFT_SIM_DEF_BUDGET } };
	unsigned int i, pass;
	double t0, c0, t_cpy, c_cpy, gb = (double)messages * MIB / 1e9, cpy[2], t16, c16;
	uint8_t *a, *b;
	volatile uint8_t sink = 0;

	for (i = 0; i < 2; i++)
		sim_write(messages, &run[i]);
	a = malloc(PAIRS * MIB);
	b = malloc(PAIRS * MIB);
	CHECK(a && b, "out of memory");
	st_fill(a, PAIRS * MIB, 99);
	t16 = store_forward(a, b, messages, 16, &c16);
	CHECK(!memcmp(a, b, PAIRS * MIB), "store-and-forward copy differs");
	printf("two copies through    16 frames (no per-packet work): %.3f GB/s wall, "
	       "%.3f GB/s CPU time\n", gb / t16, gb / c16);
	free(a);
	free(b);
	/* memcpy of the same bytes, same run: over 4 MiB buffers like the
	 * sim's (they stay in cache) and over buffers as large as the
	 * transfer, every message from and to its own MiB (out of cache). */
	for (pass = 0; pass < 2; pass++) {
		size_t span = pass ? (size_t)messages * MIB : PAIRS * MIB;

		a = malloc(span);
		b = malloc(span);
		CHECK(a && b, "out of memory");
		/* One untimed copy of everything first: no page faults (guest
		 * or host) in the timed loop, which only the cache helps. */
		memset(a, 0x5a, span);
		memset(b, 0, span);
		memcpy(b, a, span);
		t0 = now_s();
		c0 = cpu_s();
		for (i = 0; i < messages; i++) {
			size_t off = (size_t)(i % (span / MIB)) * MIB;

			memcpy(b + off, a + off, MIB);
			sink ^= b[off + (i & (MIB - 1))];
		}
		t_cpy = now_s() - t0;
		c_cpy = cpu_s() - c0;
		printf("memcpy of the same bytes, %-9s %.3f GB/s wall (%.3f s), %.3f GB/s CPU time\n",
		       pass ? "uncached:" : "cached:", gb / t_cpy, t_cpy, gb / c_cpy);
		for (i = 0; i < 2; i++)
			printf("ratio sim (poll budget %u) / %s memcpy: %.3f wall, %.3f CPU time\n",
			       run[i].budget, pass ? "uncached" : "cached", t_cpy / run[i].t,
			       c_cpy / run[i].c);
		cpy[pass] = gb / t_cpy;
		free(a);
		free(b);
	}
	(void)sink;
	if (json)
		printf("{\"messages\": %u, \"sim_gbps\": %.4f, \"memcpy_cached_gbps\": %.4f, "
		       "\"memcpy_uncached_gbps\": %.4f, \"ratio_cached\": %.4f, "
		       "\"ratio_uncached\": %.4f, \"frames_in_flight\": %zu, "
		       "\"two_copies_gbps\": %.4f, \"ratio_two_copies_cached\": %.4f, "
		       "\"two_copies_16_gbps\": %.4f, \"default_budget\": %u, "
		       "\"sim_default_budget_gbps\": %.4f, \"ratio_cached_default_budget\": %.4f, "
		       "\"frames_in_flight_default_budget\": %zu, "
		       "\"two_copies_default_budget_gbps\": %.4f}\n",
		       messages, gb / run[0].t, cpy[0], cpy[1], gb / run[0].t / cpy[0],
		       gb / run[0].t / cpy[1], run[0].in_flight, gb / run[0].t_sf,
		       gb / run[0].t_sf / cpy[0], gb / t16, run[1].budget, gb / run[1].t,
		       gb / run[1].t / cpy[0], run[1].in_flight, gb / run[1].t_sf);
	return 0;
}

/* Verbs RC RDMA writes of size bytes from node 0 to node 1, count of them,
 * cycling over a 4 MiB buffer; then memcpy of the same. */
static int verbs_throughput(uint64_t size, unsigned int count)
{
	struct weft_sim_config cfg = {
		.nr_nodes = 2, .mem_size = 64u << 20, .seed = 1,
		.faults = { .routes = 1, .delay_ns = 1000 },
		.max_queued = 1u << 16, .rx_queue_len = 256, .poll_budget = 256,
	};
	struct weft_sim *s = st_sim(&cfg);
	const uint64_t span = PAIRS * MIB, slots = span / size;
	const uint32_t mr = WEFT_STAG(1, 1);
	struct wsv_cq cq[2];
	struct wsv_qp qa, qb;
	struct weft_vcqe e[64];
	uint64_t buf[2];
	uint8_t *src, *dst;
	unsigned int i, posted = 0, done = 0, k;
	double t0, c0, t_v, c_v, t_c, c_c, mb;
	volatile uint8_t sink = 0;

	for (i = 0; i < 2; i++) {
		CHECK(wsv_pd(s, i, 1) == 0, "PD");
		CHECK(wsv_cq_create(s, i, 1, 8, 0, &cq[i]) == 0, "CQ");
		buf[i] = weft_sim_alloc(s, i, span, 4096);
		CHECK(buf[i] && wsv_reg_mr(s, i, mr, 1, buf[i], buf[i], span, WEFT_VACC_ALL,
					   WEFT_ATT_DIRECT, 12) == 0, "MR");
	}
	CHECK(wsv_qp_create(s, 0, 2, WEFT_VQPT_RC, 1, 1, 1, 7, 7, 0, &qa) == 0 &&
	      wsv_qp_create(s, 1, 3, WEFT_VQPT_RC, 1, 1, 1, 7, 7, 0, &qb) == 0 &&
	      wsv_connect(s, &qa, &qb, NULL) == 0, "QPs");
	src = weft_sim_ptr(s, 0, buf[0], span);
	dst = weft_sim_ptr(s, 1, buf[1], span);
	st_fill(src, span, 7);
	t0 = now_s();
	c0 = cpu_s();
	while (done < count) {
		while (posted < count && posted - done < 64) {
			struct weft_vwqe w = { .wr_id = posted, .opcode = WEFT_VWR_WRITE,
					       .flags = WEFT_VWQE_SIGNALED };
			struct weft_vsge sg = { .length = (uint32_t)size, .lkey = mr };
			uint64_t off = (posted % slots) * size;

			sg.addr = buf[0] + off;
			w.u.rdma.remote_addr = buf[1] + off;
			w.u.rdma.rkey = mr;
			CHECK(wsv_post_send(s, &qa, &w, &sg, 1, false) == 0, "post");
			posted++;
		}
		wsv_ring_sq(s, &qa);
		k = wsv_wait(s, &cq[0], e, posted - done < 16 ? posted - done : 16, 1000000000ull);
		CHECK(k > 0, "no completion");
		for (i = 0; i < k; i++)
			CHECK(e[i].status == 0 && e[i].wr_id == done + i, "CQE %u", done + i);
		done += k;
	}
	t_v = now_s() - t0;
	c_v = cpu_s() - c0;
	CHECK(!memcmp(src, dst, count >= slots ? span : count * size), "data differs");
	t0 = now_s();
	c0 = cpu_s();
	for (i = 0; i < count; i++) {
		uint64_t off = (i % slots) * size;

		memcpy(dst + off, src + off, size);
		sink ^= dst[off + (i & (size - 1))];
	}
	t_c = now_s() - t0;
	c_c = cpu_s() - c0;
	mb = (double)count * (double)size / 1e6;
	printf("verbs RC RDMA write, %u x %llu B: %.1f MB/s wall (%.3f s), %.1f MB/s CPU time; "
	       "memcpy, same buffers: %.1f MB/s wall, %.1f MB/s CPU; ratio %.4f wall, %.4f CPU\n",
	       count, (unsigned long long)size, mb / t_v, t_v, mb / c_v, mb / t_c, mb / c_c,
	       t_c / t_v, c_c / c_v);
	(void)sink;
	weft_sim_free(s);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int messages = 512, nodes = 2;
	uint64_t events = 100000;
	bool do_tp = true, do_fo = true, do_verbs = true, json = false;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--messages") && i + 1 < argc)
			messages = (unsigned int)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--failover-events") && i + 1 < argc)
			events = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--failover-nodes") && i + 1 < argc)
			nodes = (unsigned int)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--no-throughput"))
			do_tp = false;
		else if (!strcmp(argv[i], "--no-failover"))
			do_fo = false;
		else if (!strcmp(argv[i], "--no-verbs"))
			do_verbs = false;
		else if (!strcmp(argv[i], "--json"))
			json = true;
		else {
			fprintf(stderr, "usage: %s [--messages N] [--failover-events N] "
				"[--failover-nodes N] [--no-throughput] [--no-failover] "
				"[--no-verbs] [--json]\n", argv[0]);
			return 2;
		}
	}
	if (do_tp && messages)
		throughput(messages, json);
	if (do_verbs) {
		verbs_throughput(MIB, 256);
		verbs_throughput(4096, 16384);
	}
	if (do_fo && events) {
		struct failover_cfg cfg = { .nodes = nodes, .events = events, .seed = 2026,
					    .replay = 24 };
		struct failover_report rep;
		double t0 = now_s();
		int rc = failover_run(&cfg, &rep);

		failover_print("", &rep);
		printf("failover campaign: %u nodes, %.1f s wall, %.0f events/s\n", nodes,
		       now_s() - t0, (double)rep.events / (now_s() - t0));
		if (rc) {
			fprintf(stderr, "failover campaign: a check failed\n");
			return 1;
		}
	}
	return 0;
}
