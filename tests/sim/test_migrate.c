/* SPDX-License-Identifier: MIT */
/*
 * Adapter state save and load (weft_core_save / weft_core_load, the
 * device's VMState; docs/qemu-device.md "Migration and snapshots").
 *
 * continue: two nodes with a connected RC QP pair (RDMA writes and reads,
 * 0.3% of frames lost, so retransmission timers are live) and a Weft
 * window each (FIFO packets) run the same traffic twice; in the second
 * run each node's core is saved, freed and replaced by a fresh core that
 * loads the state, eight times, every time with work in flight.  Both
 * runs must end with the same bytes in both nodes' memory, the same
 * completions in the same order and the same FIFO packets.
 *
 * refuse: streams that are truncated, of another version, of a build
 * whose struct differs, of another configuration, or with an index out
 * of range are refused with a message, and the core is left unchanged.
 */
#include <errno.h>
#include <string.h>

#include "simtest.h"
#include "vt.h"

#define ROUNDS          48u
#define BUF             (1u << 20)
#define HALF            (BUF / 2)

struct outcome {
	uint64_t mem[2];
	uint64_t cqe[2];        /* hash of (wr_id, status, opcode) in order */
	unsigned int ncqe[2];
	uint64_t fifo;          /* hash of the FIFO payloads in order */
	unsigned int nfifo;
	unsigned int reloads, busy_reloads;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void take_cqes(struct weft_sim *s, struct vt_node *n, struct outcome *o, unsigned int i)
{
	struct weft_vcqe e;

	while (wsv_poll(s, &n->cq, &e) == 1) {
		CHECK(e.status == WEFT_VWC_SUCCESS, "node %u wr %llu: status %u", i,
		      (unsigned long long)e.wr_id, e.status);
		o->cqe[i] = fnv(o->cqe[i], &e.wr_id, sizeof(e.wr_id));
		o->cqe[i] = fnv(o->cqe[i], &e.status, sizeof(e.status));
		o->ncqe[i]++;
	}
}

static void take_fifo(struct st_node *w, struct outcome *o)
{
	static uint8_t in[WEFT_MAX_PAYLOAD];
	struct weft_recv_hdr h;

	while (weft_sim_poll_recv(&w->win, &h, in, sizeof(in)) == 1) {
		o->fifo = fnv(o->fifo, &h.seq, sizeof(h.seq));
		o->fifo = fnv(o->fifo, in, h.length);
		o->nfifo++;
	}
}

static void run(bool reload, struct outcome *o)
{
	struct weft_sim *s = vt_sim(2, 16u << 20, 11, 3000, 700);
	static uint8_t msg[WEFT_MAX_PAYLOAD];
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct st_node wa, wb;
	unsigned int r, k, posted = 0;
	char err[200];

	memset(o, 0, sizeof(*o));
	vt_node(s, 0, BUF, 10, &a);
	vt_node(s, 1, BUF, 10, &b);
	vt_rc(&a, 2, &b, 2, 7, NULL, &qa, &qb);
	st_node_setup(s, 0, 9, 0, 4, false, &wa);
	st_node_setup(s, 1, 9, 0, 4, false, &wb);
	vt_fill(a.mem, BUF, 1);
	vt_fill(b.mem, BUF, 2);
	for (r = 0; r < ROUNDS; r++) {
		uint64_t off = (r * 40961u) % (HALF - 65536), len = 1 + (r * 7919u) % 65536;

		/* a writes into b's lower half; b reads a's upper half into
		 * its upper half. */
		vt_post(&a, &qa, r, WEFT_VWR_WRITE, off, len, b.buf + off, VT_MR, 0, 0);
		vt_post(&b, &qb, 1000 + r, WEFT_VWR_READ, HALF + off, len, a.buf + HALF + off,
			VT_MR, 0, 0);
		posted += 2;
		st_fill(msg, r % WEFT_MAX_PAYLOAD, r);
		REQUIRE(weft_sim_post_fifo(&wa.win, 1, 0, msg, r % WEFT_MAX_PAYLOAD) == 0,
			"round %u: FIFO post", r);
		for (k = 0; k < 12; k++)
			weft_sim_progress(s);
		if (reload && r % 6 == 3) {
			unsigned int node = (r / 6) % 2;

			if (posted > o->ncqe[0] + o->ncqe[1])
				o->busy_reloads++;
			REQUIRE(weft_sim_core_reload(s, node, err, sizeof(err)) == 0,
				"round %u: reload node %u: %s", r, node, err);
			o->reloads++;
		}
		take_cqes(s, &a, o, 0);
		take_cqes(s, &b, o, 1);
		take_fifo(&wb, o);
	}
	for (k = 0; k < 200 && o->ncqe[0] + o->ncqe[1] < posted; k++) {
		weft_sim_run_until(s, NULL, NULL, weft_sim_now(s) + 1000000);
		take_cqes(s, &a, o, 0);
		take_cqes(s, &b, o, 1);
	}
	weft_sim_run_idle(s, 0);
	take_fifo(&wb, o);
	o->mem[0] = fnv(0, a.mem, BUF);
	o->mem[1] = fnv(0, b.mem, BUF);
	weft_sim_free(s);
}

static void test_continue(void)
{
	struct outcome ref, mig;

	run(false, &ref);
	run(true, &mig);
	CHECK_EQ(ref.ncqe[0], ROUNDS, "reference: write completions");
	CHECK_EQ(ref.ncqe[1], ROUNDS, "reference: read completions");
	CHECK_EQ(ref.nfifo, ROUNDS, "reference: FIFO packets");
	CHECK_EQ(mig.reloads, ROUNDS / 6, "reloads");
	CHECK(mig.busy_reloads >= mig.reloads / 2, "only %u of %u reloads with work in flight",
	      mig.busy_reloads, mig.reloads);
	CHECK_EQ(mig.ncqe[0], ref.ncqe[0], "write completions after reloads");
	CHECK_EQ(mig.ncqe[1], ref.ncqe[1], "read completions after reloads");
	CHECK(mig.cqe[0] == ref.cqe[0] && mig.cqe[1] == ref.cqe[1],
	      "completions differ after reloads");
	CHECK_EQ(mig.nfifo, ref.nfifo, "FIFO packets after reloads");
	CHECK(mig.fifo == ref.fifo, "FIFO payloads differ after reloads");
	CHECK(mig.mem[0] == ref.mem[0] && mig.mem[1] == ref.mem[1],
	      "guest memory differs after reloads");
	t_checked("%u reloads (%u with work in flight): memory, completions and FIFO packets "
		  "byte-exact", mig.reloads, mig.busy_reloads);
}

/* A load of buf must fail with a message, the core unchanged. */
static void refused(struct weft_core *c, const uint8_t *good, size_t glen, const uint8_t *buf,
		    size_t len, const char *what)
{
	char err[200] = "";
	uint8_t *after;
	size_t alen;

	CHECK(weft_core_load(c, buf, len, err, sizeof(err)) < 0, "%s: loaded", what);
	CHECK(err[0] != 0, "%s: no message", what);
	REQUIRE(weft_core_save(c, &after, &alen) == 0, "save");
	CHECK(alen == glen && !memcmp(after, good, glen), "%s: the core changed", what);
	free(after);
	t_diag("%s: %s", what, err);
}

static void test_refuse(void)
{
	struct weft_sim *s = vt_sim(2, 16u << 20, 5, 0, 0);
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_sim_config cf2 = { .nr_nodes = 1, .mem_size = 4u << 20, .nr_rcxt = 32 };
	struct weft_sim *s2;
	struct weft_core *c;
	uint8_t *good, *bad;
	size_t len, i;
	char err[200] = "";

	vt_node(s, 0, BUF, 10, &a);
	vt_node(s, 1, BUF, 10, &b);
	vt_rc(&a, 2, &b, 2, 7, NULL, &qa, &qb);
	vt_post(&a, &qa, 1, WEFT_VWR_WRITE, 0, 65536, b.buf, VT_MR, 0, 0);
	weft_sim_progress(s);
	c = weft_sim_core(s, 0);
	REQUIRE(weft_core_save(c, &good, &len) == 0, "save");
	bad = malloc(len);
	REQUIRE(bad, "memory");
	refused(c, good, len, good, len / 2, "truncated");
	refused(c, good, len, good, len - 1, "one byte short");
	memcpy(bad, good, len);
	bad[8]++;
	refused(c, good, len, bad, len, "another version");
	/* The size field of the first struct record after the header and
	 * the configuration: the weft_core record. */
	memcpy(bad, good, len);
	i = 12 + 12 + sizeof(struct weft_core_config) + 4;
	bad[i] ^= 8;
	refused(c, good, len, bad, len, "a struct of another size");
	memcpy(bad, good, len);
	bad[len - 1] ^= 1;
	refused(c, good, len, bad, len, "no end mark");
	/* A byte of every position flipped in turn, in the records after
	 * the header: each either loads or is refused, never crashes. */
	for (i = 12; i < len; i += len / 200 + 1) {
		memcpy(bad, good, len);
		bad[i] ^= 0xff;
		if (weft_core_load(c, bad, len, err, sizeof(err)) == 0)
			REQUIRE(weft_core_load(c, good, len, err, sizeof(err)) == 0, "reload: %s", err);
	}
	t_checked("stream mutations at every %zu bytes: loaded or refused", len / 200 + 1);
	s2 = st_sim(&cf2);
	CHECK(weft_core_load(weft_sim_core(s2, 0), good, len, err, sizeof(err)) == -EINVAL,
	      "another configuration: loaded");
	t_diag("another configuration: %s", err);
	weft_sim_free(s2);
	CHECK(weft_core_load(c, good, len, err, sizeof(err)) == 0, "the good stream: %s", err);
	free(bad);
	free(good);
	weft_sim_free(s);
	t_checked("bad streams refused with a message, the core unchanged");
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "continue", test_continue },
		{ "refuse", test_refuse },
	};

	return vt_main("migrate", cases, 2, argc, argv);
}
