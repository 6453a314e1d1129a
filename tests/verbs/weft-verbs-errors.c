// SPDX-License-Identifier: MIT
/*
 * Bad arguments to the verbs (issue 15, docs/rdma-provider.md "Tests"):
 * each call fails with the errno a real HCA's provider or driver gives
 * (rxe, efa, or ib_core's own checks, which every device shares), and
 * nothing leaks: ib_core's object counts (`rdma resource show`) are the
 * start plus exactly what the process holds, before and after.  One
 * process on one node; no peer.
 *
 * Usage: weft-verbs-errors -s -g GIDX
 */
#include <sys/mman.h>

#include "vt.h"

#define ACC_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static struct vt v;
static long base[VT_NRES];

/* The counts are the start plus what the process holds now. */
static void held(const char *when, long pd, long cq, long qp, long mr)
{
	long now[VT_NRES], want[VT_NRES] = { pd, cq, qp, mr, 1 };
	int i;

	vt_res(&v, now);
	t_begin("ib_core object counts %s", when);
	for (i = 0; i < VT_NRES; i++)
		CHECK(now[i] == base[i] + want[i], "%s: %ld, expected %ld + %ld", vt_res_name[i],
		      now[i], base[i], want[i]);
	t_checked("ib_core object counts %s: pd %ld cq %ld qp %ld mr %ld ctx %ld = the start + what the process holds",
		  when, now[VT_PD], now[VT_CQ], now[VT_QP], now[VT_MR], now[VT_CTX]);
}

/* A create call that must fail with errno WANT (NULL result). */
#define EXPECT_NULL(call, want, what) do { \
	void *o_; \
	errno = 0; \
	o_ = (void *)(call); \
	t_begin("%s", what); \
	CHECK(!o_ && errno == (want), "got %p, errno %s", o_, vt_en(errno)); \
	t_checked("%s -> NULL, errno %s", what, vt_en(want)); \
} while (0)

/* A call returning an errno that must be WANT. */
#define EXPECT_RET(call, want, what) do { \
	int r_ = (call); \
	t_begin("%s", what); \
	CHECK(r_ == (want), "returned %s", vt_en(r_)); \
	t_checked("%s -> %s", what, vt_en(want)); \
} while (0)

static struct ibv_qp *try_qp(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type type,
			     struct ibv_qp_cap cap, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .srq = srq,
				      .qp_type = type, .cap = cap };

	return ibv_create_qp(pd, &a);
}

static void cq_and_qp_limits(struct ibv_pd *pd, struct ibv_cq *cq)
{
	const struct ibv_qp_cap ok = { 4, 4, 1, 1, 0 };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_qp_cap c;
	int max_wr = v.attr.max_qp_wr, max_sge = v.attr.max_sge;

	EXPECT_NULL(ibv_create_cq(v.ctx, 0, NULL, NULL, 0), EINVAL, "ibv_create_cq(cqe 0)");
	EXPECT_NULL(ibv_create_cq(v.ctx, -1, NULL, NULL, 0), EINVAL, "ibv_create_cq(cqe -1)");
	EXPECT_NULL(ibv_create_cq(v.ctx, v.attr.max_cqe + 1, NULL, NULL, 0), EINVAL,
		    "ibv_create_cq(cqe max_cqe + 1)");
	c = ok;
	c.max_send_wr = (uint32_t)max_wr + 1;
	EXPECT_NULL(try_qp(pd, cq, IBV_QPT_RC, c, NULL), EINVAL, "ibv_create_qp(max_send_wr max_qp_wr + 1)");
	c = ok;
	c.max_recv_wr = (uint32_t)max_wr + 1;
	EXPECT_NULL(try_qp(pd, cq, IBV_QPT_RC, c, NULL), EINVAL, "ibv_create_qp(max_recv_wr max_qp_wr + 1)");
	c = ok;
	c.max_send_sge = (uint32_t)max_sge + 1;
	EXPECT_NULL(try_qp(pd, cq, IBV_QPT_RC, c, NULL), EINVAL, "ibv_create_qp(max_send_sge max_sge + 1)");
	c = ok;
	c.max_recv_sge = 32;
	EXPECT_NULL(try_qp(pd, cq, IBV_QPT_RC, c, NULL), EINVAL, "ibv_create_qp(max_recv_sge 32)");
	c = ok;
	c.max_inline_data = 433;
	EXPECT_NULL(try_qp(pd, cq, IBV_QPT_RC, c, NULL), EINVAL,
		    "ibv_create_qp(max_inline_data 433, one more than a 512-byte slot holds)");
	EXPECT_NULL(try_qp(pd, cq, IBV_QPT_RAW_PACKET, ok, NULL), EOPNOTSUPP,
		    "ibv_create_qp(IBV_QPT_RAW_PACKET)");
	sa.attr.max_sge = (uint32_t)v.attr.max_srq_sge + 1;
	EXPECT_NULL(ibv_create_srq(pd, &sa), EINVAL, "ibv_create_srq(max_sge max_srq_sge + 1)");
	{
		struct ibv_srq *srq;

		sa.attr.max_sge = 1;
		srq = ibv_create_srq(pd, &sa);
		if (!srq)
			t_bail("ibv_create_srq: errno %d", errno);
		EXPECT_NULL(try_qp(pd, cq, IBV_QPT_UC, ok, srq), EOPNOTSUPP,
			    "ibv_create_qp(IBV_QPT_UC on an SRQ)");
		ibv_destroy_srq(srq);
	}
}

/*
 * A deep CQ, asked for more CQEs than the largest ring (2 x max_qp_wr),
 * admits QPs only while that ring holds every slot of its QPs, and no QP
 * with an SRQ (docs/verbs-linux.md, "Deep CQs").
 */
static void deep_cq(struct ibv_pd *pd)
{
	uint32_t half = (uint32_t)v.attr.max_qp_wr / 2;
	const struct ibv_qp_cap big = { half, half, 1, 1, 0 }, small = { 4, 4, 1, 1, 0 };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_qp *a, *b, *c;
	struct ibv_srq *srq;
	struct ibv_cq *cq;

	cq = ibv_create_cq(v.ctx, v.attr.max_cqe, NULL, NULL, 0);
	t_begin("ibv_create_cq(cqe max_cqe)");
	CHECK(cq && cq->cqe >= v.attr.max_cqe, "cq %p errno %s", (void *)cq, vt_en(errno));
	t_checked("ibv_create_cq(cqe max_cqe %d) -> a CQ of %d CQEs", v.attr.max_cqe, cq ? cq->cqe : 0);
	srq = ibv_create_srq(pd, &sa);
	if (!cq || !srq)
		t_bail("deep CQ or SRQ: errno %d", errno);
	a = try_qp(pd, cq, IBV_QPT_RC, big, NULL);
	b = try_qp(pd, cq, IBV_QPT_RC, big, NULL);
	t_begin("two QPs that fill the deep CQ's ring");
	CHECK(a && b, "a %p b %p errno %s", (void *)a, (void *)b, vt_en(errno));
	t_checked("2 QPs of %u send and %u receive WRs (2 x max_qp_wr slots) on the deep CQ", half, half);
	EXPECT_NULL(try_qp(pd, cq, IBV_QPT_RC, small, NULL), ENOMEM,
		    "ibv_create_qp(a third QP, on a deep CQ whose ring is taken)");
	if (b && ibv_destroy_qp(b))
		t_bail("ibv_destroy_qp: errno %d", errno);
	EXPECT_NULL(try_qp(pd, cq, IBV_QPT_RC, small, srq), EOPNOTSUPP,
		    "ibv_create_qp(with an SRQ, receiving on a deep CQ)");
	c = try_qp(pd, cq, IBV_QPT_RC, small, NULL);
	t_begin("a QP on the deep CQ once a QP went");
	CHECK(c != NULL, "errno %s", vt_en(errno));
	t_checked("after one of the 2 QPs was destroyed, a new QP is admitted on the deep CQ");
	if ((a && ibv_destroy_qp(a)) || (c && ibv_destroy_qp(c)) || ibv_destroy_srq(srq) ||
	    ibv_destroy_cq(cq))
		t_bail("deep CQ teardown: errno %d", errno);
}

static void mr_errors(struct ibv_pd *pd, uint8_t *buf)
{
	void *gone;

	EXPECT_NULL(ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE), EINVAL,
		    "ibv_reg_mr(REMOTE_WRITE without LOCAL_WRITE)");
	EXPECT_NULL(ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_ATOMIC), EINVAL,
		    "ibv_reg_mr(REMOTE_ATOMIC without LOCAL_WRITE)");
	EXPECT_NULL(ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND),
		    EOPNOTSUPP, "ibv_reg_mr(ON_DEMAND; no ODP)");
	gone = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (gone == MAP_FAILED || munmap(gone, 65536))
		t_bail("mmap/munmap");
	EXPECT_NULL(ibv_reg_mr(pd, gone, 65536, IBV_ACCESS_LOCAL_WRITE), EFAULT,
		    "ibv_reg_mr(an unmapped address)");
}

static int modify(struct ibv_qp *qp, enum ibv_qp_state st, int mask, uint8_t port)
{
	struct ibv_qp_attr a = { .qp_state = st, .port_num = port,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	return ibv_modify_qp(qp, &a, mask);
}

#define INIT_MASK (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)

static void qp_errors(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_mr *mr, uint8_t *buf)
{
	struct ibv_qp *qp = vt_rc_qp(pd, cq);
	struct ibv_sge sg[64];
	struct ibv_send_wr s1 = {}, s2 = {}, *sbad;
	struct ibv_recv_wr r1 = {}, *rbad;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr qa;
	struct ibv_wc wc;
	int i, n, flushed;

	for (i = 0; i < 64; i++)
		sg[i] = (struct ibv_sge){ (uintptr_t)buf + 64 * i, 64, mr->lkey };
	if (ibv_query_qp(qp, &qa, IBV_QP_CAP, &init))
		t_bail("ibv_query_qp: errno %d", errno);

	EXPECT_RET(modify(qp, IBV_QPS_RTS, IBV_QP_STATE, 1), EINVAL,
		   "ibv_modify_qp(RESET -> RTS: not a legal transition)");
	EXPECT_RET(modify(qp, IBV_QPS_INIT, IBV_QP_STATE, 1), EINVAL,
		   "ibv_modify_qp(RESET -> INIT without PKEY_INDEX, PORT, ACCESS_FLAGS)");
	EXPECT_RET(modify(qp, IBV_QPS_INIT, INIT_MASK | IBV_QP_SQ_PSN, 1), EINVAL,
		   "ibv_modify_qp(RESET -> INIT with SQ_PSN, not allowed there)");
	EXPECT_RET(modify(qp, IBV_QPS_INIT, INIT_MASK, 2), EINVAL,
		   "ibv_modify_qp(RESET -> INIT on port 2 of a 1-port device)");
	EXPECT_RET(modify(qp, (enum ibv_qp_state)42, IBV_QP_STATE, 1), EINVAL,
		   "ibv_modify_qp(qp_state 42)");
	t_begin("the QP after the refused transitions");
	CHECK_EQ(vt_qp_state(qp), IBV_QPS_RESET, "state after the refused modify_qp calls");
	t_checked("the QP is still in RESET after the refused ibv_modify_qp calls");

	/* Posting in RESET and INIT (IBA C10-97.2.1 for receives in RESET). */
	s1 = (struct ibv_send_wr){ .wr_id = 1, .sg_list = sg, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	r1 = (struct ibv_recv_wr){ .wr_id = 2, .sg_list = sg, .num_sge = 1 };
	sbad = NULL;
	t_begin("ibv_post_send on a RESET QP");
	CHECK_EQ(ibv_post_send(qp, &s1, &sbad), EINVAL, "ibv_post_send in RESET");
	CHECK(sbad == &s1, "bad_wr not set");
	t_checked("ibv_post_send on a RESET QP -> EINVAL, bad_wr = the request");
	rbad = NULL;
	t_begin("ibv_post_recv on a RESET QP");
	CHECK_EQ(ibv_post_recv(qp, &r1, &rbad), EINVAL, "ibv_post_recv in RESET");
	CHECK(rbad == &r1, "bad_wr not set");
	t_checked("ibv_post_recv on a RESET QP -> EINVAL, bad_wr = the request");
	if (modify(qp, IBV_QPS_INIT, INIT_MASK, 1))
		t_bail("RESET -> INIT: errno %d", errno);
	EXPECT_RET(modify(qp, IBV_QPS_RTR, IBV_QP_STATE, 1), EINVAL,
		   "ibv_modify_qp(INIT -> RTR without AV, PATH_MTU, DEST_QPN, RQ_PSN, ...)");
	sbad = NULL;
	t_begin("ibv_post_send on an INIT QP");
	CHECK_EQ(ibv_post_send(qp, &s1, &sbad), EINVAL, "ibv_post_send in INIT");
	CHECK(sbad == &s1, "bad_wr not set");
	t_checked("ibv_post_send on an INIT QP -> EINVAL, bad_wr = the request");
	EXPECT_RET(ibv_post_recv(qp, &r1, &rbad), 0, "ibv_post_recv on an INIT QP (allowed)");

	/* In ERR, requests are accepted and flushed; bad ones refused. */
	if (modify(qp, IBV_QPS_ERR, IBV_QP_STATE, 1))
		t_bail("INIT -> ERR: errno %d", errno);
	s2 = s1;
	s1.next = &s2;
	s2.wr_id = 3;
	s2.num_sge = (int)qa.cap.max_send_sge + 1;
	sbad = NULL;
	t_begin("ibv_post_send, second request with too many SGEs");
	CHECK_EQ(ibv_post_send(qp, &s1, &sbad), EINVAL, "two requests, the second bad");
	CHECK(sbad == &s2, "bad_wr is not the second request");
	t_checked("ibv_post_send of [good, %d SGEs (max_send_sge %u)] -> EINVAL, bad_wr = the second",
		  s2.num_sge, qa.cap.max_send_sge);
	s2 = s1;
	s2.next = NULL;
	s2.send_flags |= IBV_SEND_INLINE;
	s2.opcode = IBV_WR_RDMA_READ;
	s2.wr_id = 4;
	sbad = NULL;
	t_begin("ibv_post_send of an inline RDMA READ");
	CHECK_EQ(ibv_post_send(qp, &s2, &sbad), EINVAL, "inline READ");
	CHECK(sbad == &s2, "bad_wr not set");
	t_checked("ibv_post_send of an IBV_SEND_INLINE RDMA READ (inline is for sends and writes) -> EINVAL, bad_wr = the request");
	s2.send_flags = IBV_SEND_SIGNALED;
	s2.opcode = (enum ibv_wr_opcode)0x7f;
	sbad = NULL;
	t_begin("ibv_post_send with an unknown opcode");
	CHECK_EQ(ibv_post_send(qp, &s2, &sbad), EINVAL, "opcode 0x7f");
	CHECK(sbad == &s2, "bad_wr not set");
	t_checked("ibv_post_send with opcode 0x7f -> EINVAL, bad_wr = the request");
	r1.num_sge = (int)qa.cap.max_recv_sge + 1;
	r1.wr_id = 5;
	rbad = NULL;
	t_begin("ibv_post_recv with too many SGEs");
	CHECK_EQ(ibv_post_recv(qp, &r1, &rbad), EINVAL, "recv SGEs");
	CHECK(rbad == &r1, "bad_wr not set");
	t_checked("ibv_post_recv with %d SGEs (max_recv_sge %u) -> EINVAL, bad_wr = the request",
		  r1.num_sge, qa.cap.max_recv_sge);
	/* Exactly the two accepted requests complete, flushed. */
	flushed = 0;
	t_begin("completions of the accepted requests");
	for (i = 0; i < 2 && vt_poll(cq, &wc); i++) {
		CHECK(wc.status == IBV_WC_WR_FLUSH_ERR, "wr %" PRIu64 ": %s", wc.wr_id,
		      ibv_wc_status_str(wc.status));
		flushed |= 1 << wc.wr_id;
	}
	usleep(200000);
	n = ibv_poll_cq(cq, 1, &wc);
	CHECK(flushed == ((1 << 1) | (1 << 2)) && n == 0, "flushed 0x%x, then %d more", flushed, n);
	t_checked("exactly the 2 accepted requests (the receive posted in INIT, the first send of the pair) completed, IBV_WC_WR_FLUSH_ERR");

	/* A CQ a QP uses and a PD with objects cannot go (ib_core). */
	EXPECT_RET(ibv_destroy_cq(cq), EBUSY, "ibv_destroy_cq(a CQ a QP uses)");
	EXPECT_RET(ibv_dealloc_pd(pd), EBUSY, "ibv_dealloc_pd(a PD with a QP and an MR)");
	held("with 1 PD, 1 CQ, 1 QP and 1 MR held, after the refused calls", 1, 1, 1, 1);
	if (ibv_destroy_qp(qp))
		t_bail("ibv_destroy_qp: errno %d", errno);
	EXPECT_RET(ibv_dealloc_pd(pd), EBUSY, "ibv_dealloc_pd(a PD with a live MR)");
}

/*
 * A QP destroyed and created again gets a new number (weft_ib numbers
 * QPs in rotation, docs/verbs-linux.md): a peer's CM still holding the
 * old connection would refuse a reused number as stale.
 */
static void qpn_rotation(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_cap cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
				  .max_recv_sge = 1 };
	uint32_t num[4];
	struct ibv_qp *qp;
	int i, j;

	t_begin("QP numbers after destroy");
	for (i = 0; i < 4; i++) {
		qp = try_qp(pd, cq, IBV_QPT_RC, cap, NULL);
		if (!qp)
			t_bail("ibv_create_qp %d: errno %d", i, errno);
		num[i] = qp->qp_num;
		if (ibv_destroy_qp(qp))
			t_bail("ibv_destroy_qp: errno %d", errno);
	}
	for (i = 0; i < 4; i++)
		for (j = 0; j < i; j++)
			CHECK(num[i] != num[j], "QP %d got number %u again (QP %d's)", i, num[i], j);
	t_checked("4 RC QPs, each created after the last was destroyed: numbers %u %u %u %u, none reused",
		  num[0], num[1], num[2], num[3]);
}

int main(int argc, char **argv)
{
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;

	vt_args(&v, argc, argv);
	if (!v.server)
		vt_usage(argv[0]);
	vt_open(&v);
	/* The start: this process's context alone. */
	vt_res(&v, base);
	base[VT_CTX]--;
	pd = ibv_alloc_pd(v.ctx);
	cq = ibv_create_cq(v.ctx, 16, NULL, NULL, 0);
	buf = aligned_alloc(4096, 65536);
	if (!pd || !cq || !buf)
		t_bail("PD, CQ or buffer");
	mr = ibv_reg_mr(pd, buf, 65536, ACC_ALL);
	if (!mr)
		t_bail("ibv_reg_mr: errno %d", errno);
	t_diag("device %s: max_cqe %d, max_qp_wr %d, max_sge %d, max_srq %d",
	       ibv_get_device_name(v.ctx->device), v.attr.max_cqe, v.attr.max_qp_wr,
	       v.attr.max_sge, v.attr.max_srq);

	cq_and_qp_limits(pd, cq);
	deep_cq(pd);
	mr_errors(pd, buf);
	held("after the refused creations", 1, 1, 0, 1);
	qp_errors(pd, cq, mr, buf);
	qpn_rotation(pd, cq);

	t_begin("teardown");
	CHECK(!ibv_dereg_mr(mr) && !ibv_destroy_cq(cq) && !ibv_dealloc_pd(pd), "errno %d", errno);
	t_checked("teardown: dereg_mr, destroy_cq, dealloc_pd succeed");
	held("after the teardown", 0, 0, 0, 0);
	ibv_close_device(v.ctx);
	return t_done();
}
