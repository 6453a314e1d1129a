/* SPDX-License-Identifier: MIT */
/*
 * RESIZE_CQ (docs/hw-spec.md 16.7, "Resizing"): a CQ moves to a larger or
 * smaller ring while completions are outstanding and while work is in
 * flight, and no CQE is lost or duplicated.  Usage: sim-verbs-resize CASE
 * (meson runs each case as its own test).
 */
#include "vt.h"

#define MS              1000000ull
#define QA              2u
#define QB              3u

static void setup(struct weft_sim **s, struct vt_node *a, struct vt_node *b, struct wsv_qp *qa,
		  struct wsv_qp *qb, uint32_t cq_log2)
{
	*s = vt_sim(2, 32u << 20, 5, 0, 0);
	vt_node(*s, 0, 1u << 20, cq_log2, a);
	vt_node(*s, 1, 1u << 20, 6, b);
	vt_rc(a, QA, b, QB, 7, NULL, qa, qb);
}

/* n signaled 64-byte RDMA WRITEs from a to b, wr_id first .. first + n - 1. */
static void writes(struct vt_node *a, struct vt_node *b, struct wsv_qp *qa, uint64_t first,
		   unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		vt_post(a, qa, first + i, WEFT_VWR_WRITE, (first + i) * 64, 64,
			b->buf + (first + i) * 64, VT_MR, 0, WEFT_VWQE_SIGNALED);
}

/* The next CQE is wr_id's, successful. */
static void expect(struct vt_node *n, uint64_t wr_id)
{
	struct weft_vcqe e;

	vt_cqe(n, &e, 100 * MS);
	REQUIRE(e.wr_id == wr_id && e.status == WEFT_VWC_SUCCESS,
	       "CQE wr_id %llu status %u, want %llu", (unsigned long long)e.wr_id, e.status,
	       (unsigned long long)wr_id);
}

/* Grow with 9 CQEs outstanding (copied into the new ring), grow again
 * and shrink while 40 writes are in flight, shrink below what is
 * outstanding (refused, the CQ keeps working), shrink to 4 entries when
 * empty: every CQE once, in order, then none. */
static void case_traffic(void)
{
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	uint64_t prod = 0, i;
	int st;

	setup(&s, &a, &b, &qa, &qb, 4);
	vt_fill(a.mem, 64 * 55, 7);
	writes(&a, &b, &qa, 0, 12);
	weft_sim_run_idle(s, 100000);
	for (i = 0; i < 3; i++)
		expect(&a, i);
	st = wsv_cq_resize(s, &a.cq, 6, &prod);
	REQUIRE(st == 0 && prod == 12, "grow 16 -> 64 with 9 outstanding: status %d prod %llu", st,
	       (unsigned long long)prod);
	writes(&a, &b, &qa, 12, 40);
	for (i = 3; i < 8; i++)
		expect(&a, i);
	st = wsv_cq_resize(s, &a.cq, 7, &prod);
	REQUIRE(st == 0, "grow 64 -> 128 in flight: status %d", st);
	st = wsv_cq_resize(s, &a.cq, 1, NULL);
	REQUIRE(st == WEFT_CMD_EINVAL, "shrink to 2 below the %llu outstanding: status %d",
	       (unsigned long long)(prod - 8), st);
	REQUIRE(vt_drops(s, 0, WEFT_R_CQ_OVERFLOW) == 0, "a refused resize counted a CQ overflow");
	for (i = 8; i < 52; i++)
		expect(&a, i);
	vt_no_cqe(&a, 5 * MS);
	st = wsv_cq_resize(s, &a.cq, 2, &prod);
	REQUIRE(st == 0 && prod == 52, "shrink to 4 when empty: status %d prod %llu", st,
	       (unsigned long long)prod);
	writes(&a, &b, &qa, 52, 3);
	for (i = 52; i < 55; i++)
		expect(&a, i);
	vt_no_cqe(&a, 5 * MS);
	REQUIRE(memcmp(a.mem, b.mem, 64 * 55) == 0, "the 55 writes did not land byte-exact");
	REQUIRE(vt_qp_state(&a, QA) == WEFT_VQPS_RTS, "QP A left RTS");
	t_checked("CQ resized 16 -> 64 with 9 CQEs outstanding (prod 12), 64 -> 128 with 40 writes in flight, 128 -> 2 refused while more are outstanding, then 4 when empty: 55 CQEs, each once and in order, then none");
	weft_sim_free(s);
}

/* Bad RESIZE_CQ commands are refused and change nothing. */
static void case_hostile(void)
{
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_vcmd k = { .op = WEFT_VCMD_RESIZE_CQ, .handle = 9 };
	struct wsv_cq saved;
	uint32_t *ci;
	int st;

	setup(&s, &a, &b, &qa, &qb, 4);
	st = wsv_cmd(s, 0, &k, NULL);
	REQUIRE(st == WEFT_CMD_EINVAL, "CQ 9 was never created: %d", st);
	k.handle = 1u << 30;
	st = wsv_cmd(s, 0, &k, NULL);
	REQUIRE(st == WEFT_CMD_EINVAL, "CQ out of range: %d", st);
	st = wsv_cq_resize(s, &a.cq, 0, NULL);
	REQUIRE(st == WEFT_CMD_EINVAL, "log2 0: %d", st);
	st = wsv_cq_resize(s, &a.cq, WEFT_VERBS_CQ_MAX_LOG2 + 1, NULL);
	REQUIRE(st == WEFT_CMD_EINVAL, "log2 above the maximum: %d", st);
	k.handle = VT_CQ;
	k.u.cq.ring_addr = 1ull << 40;
	k.u.cq.ci_addr = a.cq.ci_addr;
	k.u.cq.log2_entries = 5;
	st = wsv_cmd(s, 0, &k, NULL);
	REQUIRE(st == WEFT_CMD_EFAULT, "a ring outside guest RAM: %d", st);
	k.u.cq.ring_addr = a.cq.ring;
	k.u.cq.ci_addr = a.cq.ci_addr | 2;
	st = wsv_cmd(s, 0, &k, NULL);
	REQUIRE(st == WEFT_CMD_EINVAL, "a misaligned consumer-index word: %d", st);
	/* A consumer index ahead of the producer names CQEs that do not exist. */
	saved = a.cq;
	a.cq.ci += 3;
	st = wsv_cq_resize(s, &a.cq, 5, NULL);
	REQUIRE(st == WEFT_CMD_EINVAL, "a consumer index ahead of prod: %d", st);
	a.cq = saved;
	ci = weft_sim_ptr(s, 0, a.cq.ci_addr, 4);
	*ci = a.cq.ci;
	writes(&a, &b, &qa, 0, 4);
	expect(&a, 0);
	expect(&a, 1);
	expect(&a, 2);
	expect(&a, 3);
	vt_no_cqe(&a, 5 * MS);
	t_checked("RESIZE_CQ of a CQ never created or out of range, log2 0 or above %u, a ring outside RAM, a misaligned CI word, a CI ahead of prod: refused; the CQ works on unchanged",
		  WEFT_VERBS_CQ_MAX_LOG2);
	weft_sim_free(s);
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "traffic", case_traffic },
		{ "hostile", case_hostile },
	};

	return vt_main("verbs-resize", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
