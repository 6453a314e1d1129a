/* SPDX-License-Identifier: MIT */
/*
 * What the Linux RDMA stack's kernel users need from the verbs engine
 * (docs/hw-spec.md 16.5-16.8): the NVMe over RDMA memory-key flow (fast
 * registration through the SQ, remote invalidation by SEND_WITH_INV, local
 * invalidation), ib_drain_qp's flush completions, CQ overflow, a lone
 * LOCAL_INV and packets for QPs that adapter recovery destroyed.
 * Usage: sim-verbs-kernel CASE (meson runs each case as its own test).
 */
#include "vt.h"

#define MS              1000000ull
#define QA              2u
#define QB              3u
#define FR_INDEX        40u     /* fast-registration entry on a (the NVMe host) */

struct ctx {
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
};

static void setup(struct ctx *x)
{
	memset(x, 0, sizeof(*x));
	x->s = vt_sim(2, 32u << 20, 5, 0, 0);
	vt_node(x->s, 0, 4u << 20, 8, &x->a);
	vt_node(x->s, 1, 4u << 20, 8, &x->b);
	vt_rc(&x->a, QA, &x->b, QB, 6, NULL, &x->qa, &x->qb);
}

static void expect(struct vt_node *n, uint64_t wr_id, uint8_t status, uint8_t opcode,
		   const char *what)
{
	struct weft_vcqe e;

	vt_cqe(n, &e, 50 * MS);
	REQUIRE(e.wr_id == wr_id && e.status == status && e.opcode == opcode,
	       "%s: CQE wr_id %llu status %u (reason %u) opcode 0x%x, want %llu %u 0x%x", what,
	       (unsigned long long)e.wr_id, e.status, e.byte_len, e.opcode,
	       (unsigned long long)wr_id, status, opcode);
}

static bool entry_valid(struct ctx *x, unsigned int node, uint32_t index)
{
	struct weft_tpt_entry t;

	REQUIRE(wsv_query_tpt(x->s, node, index, &t) == 0, "query TPT %u", index);
	return (t.flags & WEFT_TPTF_VALID) != 0;
}

/* An unsignaled fast registration of [off, off + len) of a's buffer as
 * stag, as ib_map_mr_sg + IB_WR_REG_MR do. */
static void fast_reg(struct ctx *x, uint64_t wr_id, uint32_t stag, uint64_t off, uint64_t len)
{
	struct weft_vwqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = WEFT_VWR_REG_MR;
	w.u.reg.stag = stag;
	w.u.reg.va = x->a.buf + off;
	w.u.reg.length = len;
	w.u.reg.att_addr = wsv_att(x->s, 0, x->a.buf + off, len, WEFT_ATT_DIRECT, 12);
	w.u.reg.access = WEFT_VACC_LOCAL_WRITE | WEFT_VACC_REMOTE_READ | WEFT_VACC_REMOTE_WRITE;
	w.u.reg.page_shift = 12;
	w.u.reg.att_level = WEFT_ATT_DIRECT;
	REQUIRE(w.u.reg.att_addr, "page list");
	REQUIRE(wsv_post_send(x->s, &x->qa, &w, NULL, 0, false) == 0, "post REG_MR");
}

static void local_inv(struct vt_node *n, struct wsv_qp *q, uint64_t wr_id, uint32_t stag,
		      bool signaled)
{
	struct weft_vwqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = WEFT_VWR_LOCAL_INV;
	w.flags = signaled ? WEFT_VWQE_SIGNALED : 0;
	w.imm_inv = stag;
	REQUIRE(wsv_post_send(n->s, q, &w, NULL, 0, true) == 0, "post LOCAL_INV");
}

/* The nvme-rdma host (a) and nvmet-rdma target (b): the host registers its
 * data buffer through the SQ and sends a command; the target writes the
 * data and answers with SEND_WITH_INV of the host's key; the next command
 * uses a new key, served by an RDMA read, and the host invalidates that
 * one itself with LOCAL_INV. */
static void case_nvme_keys(void)
{
	struct ctx x;
	struct weft_vcqe e;
	uint32_t k1 = WEFT_STAG(FR_INDEX, 1), k2 = WEFT_STAG(FR_INDEX, 2);
	uint64_t tpt_ops;

	setup(&x);
	REQUIRE(wsv_alloc_stag(x.s, 0, WEFT_STAG(FR_INDEX, 0), VT_PD, WEFT_TPT_MR,
			      WEFT_TPTF_FAST_REG) == 0, "ib_alloc_mr(IB_MR_TYPE_MEM_REG)");
	REQUIRE(!entry_valid(&x, 0, FR_INDEX), "allocated entry valid before registration");
	/* Command 1: REG_MR (unsignaled) + SEND; the target's answer. */
	vt_recv(&x.a, &x.qa, 100, 0, 64);
	vt_recv(&x.b, &x.qb, 200, 0, 64);
	fast_reg(&x, 1, k1, 65536, 3 * 4096 + 100);
	vt_post(&x.a, &x.qa, 2, WEFT_VWR_SEND, 4096, 64, 0, 0, 0, 0);
	expect(&x.a, 2, 0, WEFT_VWC_SEND, "command send (after the unsignaled REG_MR)");
	expect(&x.b, 200, 0, WEFT_VWC_RECV, "command received");
	REQUIRE(entry_valid(&x, 0, FR_INDEX), "fast registration did not validate the entry");
	vt_fill(x.b.mem + 131072, 3 * 4096 + 100, 9);
	vt_post(&x.b, &x.qb, 201, WEFT_VWR_WRITE, 131072, 3 * 4096 + 100, x.a.buf + 65536, k1,
		0, 0);
	vt_post(&x.b, &x.qb, 202, WEFT_VWR_SEND_INV, 8192, 16, 0, 0, k1, 0);
	expect(&x.b, 201, 0, WEFT_VWC_RDMA_WRITE, "target's data write");
	expect(&x.b, 202, 0, WEFT_VWC_SEND, "target's response with invalidate");
	vt_cqe(&x.a, &e, 50 * MS);
	REQUIRE(e.wr_id == 100 && e.status == 0 && (e.flags & WEFT_VCQE_WITH_INV) &&
	       e.imm_inv == k1 && e.byte_len == 16,
	       "response CQE: flags 0x%x imm_inv 0x%x (want WITH_INV of 0x%x)", e.flags,
	       e.imm_inv, k1);
	REQUIRE(!memcmp(x.a.mem + 65536, x.b.mem + 131072, 3 * 4096 + 100), "data landed");
	REQUIRE(!entry_valid(&x, 0, FR_INDEX), "remote invalidation left the key valid");
	/* Command 2: the same entry with the next key; the target reads. */
	tpt_ops = vt_cnt(x.s, 0, WEFT_CNT_V_WQES);
	vt_recv(&x.b, &x.qb, 203, 0, 64);
	vt_recv(&x.a, &x.qa, 101, 0, 64);
	fast_reg(&x, 3, k2, 262144, 8192);
	vt_post(&x.a, &x.qa, 4, WEFT_VWR_SEND, 4096, 64, 0, 0, 0, 0);
	expect(&x.a, 4, 0, WEFT_VWC_SEND, "second command");
	REQUIRE(vt_cnt(x.s, 0, WEFT_CNT_V_WQES) == tpt_ops + 2, "REG_MR and SEND both ran");
	expect(&x.b, 203, 0, WEFT_VWC_RECV, "second command received");
	vt_fill(x.a.mem + 262144, 8192, 10);
	vt_post(&x.b, &x.qb, 204, WEFT_VWR_READ, 196608, 8192, x.a.buf + 262144, k2, 0, 0);
	expect(&x.b, 204, 0, WEFT_VWC_RDMA_READ, "target's read with the new key");
	REQUIRE(!memcmp(x.b.mem + 196608, x.a.mem + 262144, 8192), "read data");
	/* The response without invalidate: the host invalidates locally. */
	vt_post(&x.b, &x.qb, 205, WEFT_VWR_SEND, 8192, 16, 0, 0, 0, 0);
	expect(&x.b, 205, 0, WEFT_VWC_SEND, "plain response");
	vt_cqe(&x.a, &e, 50 * MS);
	REQUIRE(e.wr_id == 101 && e.status == 0 && !(e.flags & WEFT_VCQE_WITH_INV),
	       "plain response CQE");
	REQUIRE(entry_valid(&x, 0, FR_INDEX), "key 2 invalid before LOCAL_INV");
	local_inv(&x.a, &x.qa, 5, k2, true);
	expect(&x.a, 5, 0, WEFT_VWC_LOCAL_INV, "LOCAL_INV");
	REQUIRE(!entry_valid(&x, 0, FR_INDEX), "LOCAL_INV left the key valid");
	/* The stale first key fails on the wire. */
	vt_post(&x.b, &x.qb, 206, WEFT_VWR_WRITE, 0, 64, x.a.buf + 65536, k1, 0, 0);
	expect(&x.b, 206, WEFT_VWC_REM_ACCESS_ERR, WEFT_VWC_RDMA_WRITE, "write with a stale key");
	t_checked("NVMe keys: fast registration through the SQ, SEND_WITH_INV names the "
		  "invalidated STag, re-registration with a new key, LOCAL_INV, stale key refused");
	weft_sim_free(x.s);
}

static void to_err(struct ctx *x, unsigned int node, uint32_t qpn)
{
	struct weft_vcmd k;

	memset(&k, 0, sizeof(k));
	k.u.mod.state = WEFT_VQPS_ERR;
	REQUIRE(wsv_modify(x->s, node, qpn, WEFT_VQPA_STATE, &k) == 0, "QP %u to ERR", qpn);
}

/* ib_drain_qp: ERR, then an unsignaled RDMA_WRITE and a receive, both of
 * which must complete with WR_FLUSH_ERR, after everything posted before. */
static void case_drain(void)
{
	struct ctx x;
	struct weft_vcqe e[8];
	struct weft_vwqe w;
	struct weft_vsge sg;
	unsigned int n, i;

	setup(&x);
	/* b's receives posted before ERR, a's sends that b will never see. */
	vt_recv(&x.b, &x.qb, 10, 0, 64);
	vt_recv(&x.b, &x.qb, 11, 0, 64);
	to_err(&x, 1, QB);
	memset(&w, 0, sizeof(w));
	w.wr_id = 12;
	w.opcode = WEFT_VWR_WRITE;
	w.u.rdma.remote_addr = x.a.buf;
	w.u.rdma.rkey = VT_MR;
	sg = (struct weft_vsge){ .addr = x.b.buf, .length = 0, .lkey = VT_MR };
	REQUIRE(wsv_post_send(x.s, &x.qb, &w, &sg, 0, true) == 0, "drain write (unsignaled)");
	vt_recv(&x.b, &x.qb, 13, 0, 64);
	n = wsv_wait(x.s, &x.b.cq, e, 5, 20 * MS);
	REQUIRE(n == 4, "%u flush CQEs, want 4", n);
	for (i = 0; i < n; i++) {
		REQUIRE(e[i].status == WEFT_VWC_WR_FLUSH_ERR && e[i].qpn == QB &&
		       e[i].byte_len == WEFT_R_FLUSHED, "CQE %u: status %u qpn %u", i, e[i].status,
		       e[i].qpn);
		if (e[i].wr_id == 12)
			REQUIRE((e[i].flags & WEFT_VCQE_IS_SQ) && e[i].opcode == WEFT_VWC_RDMA_WRITE,
			       "drain write CQE: flags 0x%x opcode %u", e[i].flags, e[i].opcode);
		else
			REQUIRE(!(e[i].flags & WEFT_VCQE_IS_SQ) && e[i].opcode == WEFT_VWC_RECV,
			       "receive flush CQE");
	}
	REQUIRE(e[0].wr_id + e[1].wr_id + e[2].wr_id + e[3].wr_id == 46, "each WR once");
	/* The receive flushes keep their order. */
	{
		uint64_t last = 0;

		for (i = 0; i < n; i++) {
			if (e[i].wr_id == 12)
				continue;
			REQUIRE(e[i].wr_id > last, "receive flushes out of order");
			last = e[i].wr_id;
		}
	}
	/* More posts in ERR flush too; and a UD QP drains the same way. */
	vt_post(&x.b, &x.qb, 14, WEFT_VWR_READ, 0, 64, x.a.buf, VT_MR, 0, 0);
	expect(&x.b, 14, WEFT_VWC_WR_FLUSH_ERR, WEFT_VWC_RDMA_READ, "read posted in ERR");
	{
		struct wsv_qp u;

		REQUIRE(wsv_qp_create(x.s, 0, 9, WEFT_VQPT_UD, VT_PD, VT_CQ, VT_CQ, 4, 4, 0, &u) == 0,
		       "UD QP");
		REQUIRE(wsv_ud_ready(x.s, &u, 7) == 0, "UD QP ready");
		to_err(&x, 0, 9);
		memset(&w, 0, sizeof(w));
		w.wr_id = 15;
		w.opcode = WEFT_VWR_SEND;
		REQUIRE(wsv_post_send(x.s, &u, &w, NULL, 0, true) == 0, "UD drain send");
		vt_recv(&x.a, &u, 16, 0, 64);
		n = wsv_wait(x.s, &x.a.cq, e, 3, 20 * MS);
		REQUIRE(n == 2 && e[0].status == WEFT_VWC_WR_FLUSH_ERR &&
		       e[1].status == WEFT_VWC_WR_FLUSH_ERR && e[0].wr_id + e[1].wr_id == 31,
		       "UD drain: %u CQEs", n);
	}
	t_checked("ib_drain_qp: in ERR every WR, signaled or not, posted before or after, "
		  "gets one WR_FLUSH_ERR CQE; RC and UD");
	weft_sim_free(x.s);
}

/* A 4-entry CQ that nobody polls: the fifth CQE puts it in error with an
 * async event, and nothing is written past the ring. */
static void case_cq_overflow(void)
{
	struct ctx x;
	struct weft_vcmd k;
	struct weft_vcqc q;
	uint64_t ring, ci, qa, ev, d;
	uint8_t *mem, copy[4 * sizeof(struct weft_vcqe)];
	struct wsv_qp u;
	unsigned int i;

	setup(&x);
	ring = weft_sim_alloc(x.s, 0, 4096, 4096);
	ci = weft_sim_alloc(x.s, 0, 64, 64);
	qa = weft_sim_alloc(x.s, 0, 64, 64);
	REQUIRE(ring && ci && qa, "memory");
	mem = weft_sim_ptr(x.s, 0, ring, 4096);
	memset(mem, 0xa5, 4096);
	memset(mem, 0, 4 * sizeof(struct weft_vcqe));
	memset(weft_sim_ptr(x.s, 0, ci, 4), 0, 4);
	memset(&k, 0, sizeof(k));
	k.op = WEFT_VCMD_CREATE_CQ;
	k.handle = 7;
	k.u.cq.ring_addr = ring;
	k.u.cq.ci_addr = ci;
	k.u.cq.log2_entries = 2;
	REQUIRE(wsv_cmd(x.s, 0, &k, NULL) == 0, "CQ of 4");
	REQUIRE(wsv_qp_create(x.s, 0, 9, WEFT_VQPT_RC, VT_PD, 7, VT_CQ, 4, 4, 0, &u) == 0,
	       "QP on it");
	{
		struct wsv_qp peer;

		REQUIRE(wsv_qp_create(x.s, 1, 9, WEFT_VQPT_RC, VT_PD, VT_CQ, VT_CQ, 4, 4, 0,
				     &peer) == 0, "peer");
		REQUIRE(wsv_connect(x.s, &u, &peer, NULL) == 0, "connect");
	}
	ev = weft_sim_event_count(x.s, 0, WEFT_EV_VERBS_ASYNC);
	d = vt_drops(x.s, 0, WEFT_R_CQ_OVERFLOW);
	for (i = 0; i < 6; i++)
		vt_post(&x.a, &u, 300 + i, WEFT_VWR_WRITE, 0, 64, x.b.buf, VT_MR, 0, 0);
	weft_sim_run_until(x.s, NULL, NULL, weft_sim_now(x.s) + 20 * MS);
	for (i = 4 * sizeof(struct weft_vcqe); i < 4096 && mem[i] == 0xa5; i++)
		;
	REQUIRE(i == 4096, "byte %u past the ring written", i);
	for (i = 0; i < 4; i++) {
		struct weft_vcqe e;

		memcpy(&e, mem + i * sizeof(e), sizeof(e));
		REQUIRE(e.wr_id == 300 + i && e.owner == 1 && e.status == 0, "CQE %u: wr_id %llu",
		       i, (unsigned long long)e.wr_id);
	}
	REQUIRE(vt_drops(x.s, 0, WEFT_R_CQ_OVERFLOW) == d + 1, "CQ_OVERFLOW counted %llu times",
	       (unsigned long long)(vt_drops(x.s, 0, WEFT_R_CQ_OVERFLOW) - d));
	REQUIRE(weft_sim_event_count(x.s, 0, WEFT_EV_VERBS_ASYNC) == ev + 1,
	       "no async event for the overflow");
	memset(&k, 0, sizeof(k));
	k.op = WEFT_VCMD_QUERY_CQ;
	k.handle = 7;
	k.u.query.addr = qa;
	REQUIRE(wsv_cmd(x.s, 0, &k, NULL) == 0, "QUERY_CQ");
	memcpy(&q, weft_sim_ptr(x.s, 0, qa, sizeof(q)), sizeof(q));
	REQUIRE(q.error == 1 && q.prod == 4, "CQ context: error %u prod %u", q.error, q.prod);
	/* Polling now does not bring it back: it stays in error, the ring
	 * is left as it is. */
	memcpy(copy, mem, sizeof(copy));
	memset(weft_sim_ptr(x.s, 0, ci, 4), 4, 1);
	vt_post(&x.a, &u, 310, WEFT_VWR_WRITE, 0, 64, x.b.buf, VT_MR, 0, 0);
	weft_sim_run_until(x.s, NULL, NULL, weft_sim_now(x.s) + 10 * MS);
	REQUIRE(!memcmp(copy, mem, sizeof(copy)), "a CQ in error was written");
	REQUIRE(weft_sim_event_count(x.s, 0, WEFT_EV_VERBS_ASYNC) == ev + 1, "a second CQ event");
	t_checked("CQ overflow: 4 CQEs written, the 5th dropped (CQ_OVERFLOW), one CQ_ERR async "
		  "event, nothing past the ring, the CQ stays in error");
	weft_sim_free(x.s);
}

/* A LOCAL_INV work request alone on an idle QP: signaled, unsignaled, and
 * one for an STag the QP may not invalidate. */
static void case_lone_local_inv(void)
{
	struct ctx x;
	struct weft_vcqe e;
	uint64_t tx = 0;

	setup(&x);
	REQUIRE(wsv_reg_mr(x.s, 0, WEFT_STAG(50, 1), VT_PD, x.a.buf, x.a.buf, 65536,
			  WEFT_VACC_ALL, WEFT_ATT_DIRECT, 12) == 0, "region 50");
	REQUIRE(wsv_reg_mr(x.s, 0, WEFT_STAG(51, 1), VT_PD, x.a.buf, x.a.buf, 65536,
			  WEFT_VACC_ALL, WEFT_ATT_DIRECT, 12) == 0, "region 51");
	tx = vt_cnt(x.s, 0, WEFT_CNT_V_TX_PKTS);
	local_inv(&x.a, &x.qa, 1, WEFT_STAG(50, 1), true);
	vt_cqe(&x.a, &e, 20 * MS);
	REQUIRE(e.wr_id == 1 && e.status == 0 && e.opcode == WEFT_VWC_LOCAL_INV && e.qpn == QA &&
	       (e.flags & WEFT_VCQE_IS_SQ), "LOCAL_INV CQE: status %u opcode %u", e.status,
	       e.opcode);
	REQUIRE(!entry_valid(&x, 0, 50), "entry 50 still valid");
	local_inv(&x.a, &x.qa, 2, WEFT_STAG(51, 1), false);
	vt_no_cqe(&x.a, 5 * MS);
	REQUIRE(!entry_valid(&x, 0, 51), "unsignaled LOCAL_INV did not run");
	REQUIRE(vt_cnt(x.s, 0, WEFT_CNT_V_TX_PKTS) == tx, "a LOCAL_INV sent a packet");
	/* An STag with the wrong instance: error CQE, QP to ERR. */
	local_inv(&x.a, &x.qa, 3, WEFT_STAG(VT_MR_INDEX, 9), false);
	vt_cqe(&x.a, &e, 20 * MS);
	REQUIRE(e.wr_id == 3 && e.status == WEFT_VWC_LOC_PROT_ERR &&
	       e.byte_len == WEFT_R_STAG_INSTANCE, "bad LOCAL_INV: status %u reason %u", e.status,
	       e.byte_len);
	REQUIRE(entry_valid(&x, 0, VT_MR_INDEX), "a refused LOCAL_INV invalidated the region");
	REQUIRE(vt_qp_state(&x.a, QA) == WEFT_VQPS_ERR, "QP not in ERR");
	t_checked("lone LOCAL_INV: signaled gives one LOCAL_INV CQE, unsignaled none, both "
		  "invalidate; a stale STag gives LOC_PROT_ERR and leaves the entry");
	weft_sim_free(x.s);
}

/* Adapter recovery on b destroys its QPs: a's packets to them are dropped
 * (QP_INVALID), counted, and a ends in retry-exceeded and flushes. */
static void case_recovery_drops(void)
{
	struct ctx x;
	struct weft_vcqe e[4];
	struct wsv_rc_params p = { .timeout = 8, .retry_cnt = 2 };
	struct weft_vqpc q;
	uint64_t d, rx;
	unsigned int n;

	memset(&x, 0, sizeof(x));
	x.s = vt_sim(2, 32u << 20, 5, 0, 0);
	vt_node(x.s, 0, 1u << 20, 6, &x.a);
	vt_node(x.s, 1, 1u << 20, 6, &x.b);
	vt_rc(&x.a, QA, &x.b, QB, 4, &p, &x.qa, &x.qb);
	vt_fill(x.a.mem, 4096, 2);
	vt_post(&x.a, &x.qa, 1, WEFT_VWR_WRITE, 0, 64, x.b.buf, VT_MR, 0, 0);
	vt_cqe(&x.a, e, 20 * MS);
	REQUIRE(e[0].status == 0, "write before recovery");
	REQUIRE(weft_sim_node_recover(x.s, 1) == 0, "recover b");
	REQUIRE(wsv_query_qp(x.s, 1, QB, &q) != 0, "QP survived recovery");
	d = vt_drops(x.s, 1, WEFT_R_QP_INVALID);
	rx = vt_cnt(x.s, 1, WEFT_CNT_V_RX_PKTS);
	vt_post(&x.a, &x.qa, 2, WEFT_VWR_WRITE, 0, 2 * WEFT_VERBS_MTU + 952, x.b.buf, VT_MR, 0, 0);
	vt_post(&x.a, &x.qa, 3, WEFT_VWR_SEND, 0, 64, 0, 0, 0, 0);
	n = wsv_wait(x.s, &x.a.cq, e, 2, 2000 * MS);
	REQUIRE(n == 2, "%u CQEs", n);
	REQUIRE(e[0].wr_id == 2 && e[0].status == WEFT_VWC_RETRY_EXC_ERR, "first: status %u",
	       e[0].status);
	REQUIRE(e[1].wr_id == 3 && e[1].status == WEFT_VWC_WR_FLUSH_ERR, "second: status %u",
	       e[1].status);
	/* 3 packets per try, retry_cnt + 1 tries. */
	REQUIRE(vt_drops(x.s, 1, WEFT_R_QP_INVALID) - d >= 3 * 3,
	       "QP_INVALID counted %llu times", (unsigned long long)(vt_drops(x.s, 1,
	       WEFT_R_QP_INVALID) - d));
	REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_RX_PKTS) == rx, "a packet for a destroyed QP accepted");
	REQUIRE(!memcmp(x.b.mem, x.a.mem, 64), "write before recovery lost");
	REQUIRE(memcmp(x.b.mem + 64, x.a.mem + 64, 64) != 0, "a write after recovery landed");
	t_checked("after recovery, packets for destroyed QPs are dropped as QP_INVALID and "
		  "counted; the requester ends in RETRY_EXC_ERR and flushes");
	weft_sim_free(x.s);
}

static const struct vt_case cases[] = {
	{ "nvme-keys", case_nvme_keys },
	{ "drain", case_drain },
	{ "cq-overflow", case_cq_overflow },
	{ "lone-local-inv", case_lone_local_inv },
	{ "recovery-drops", case_recovery_drops },
};

int main(int argc, char **argv)
{
	return vt_main("kernel", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
