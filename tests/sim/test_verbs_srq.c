/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues in the verbs engine (docs/hw-spec.md 16.14): RC
 * and UD QPs that take their receive WQEs from one SRQ, RNR while it is
 * empty, the limit event, the flush of a QP in error, and the commands
 * and doorbells a hostile driver can send.  Usage: sim-verbs-srq CASE
 * (meson runs each case as its own test).
 */
#include "vt.h"

#define MS              1000000ull
#define SRQN            7u
#define SLOT            8192u   /* bytes of receive buffer per SRQ WQE */
#define NMSG            8u

static void run_for(struct weft_sim *s, uint64_t ns)
{
	weft_sim_run_until(s, NULL, NULL, weft_sim_now(s) + ns);
}

struct ctx {
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_srq srq;             /* on node b */
	struct wsv_qp qa[2], qb[2];     /* a's QPs 2 and 4, b's QPs 3 and 5 on the SRQ */
};

/* Two nodes; b has an SRQ of 16 WQEs (limit armed as given) and two RC
 * QPs attached to it, connected to two plain QPs of a. */
static void setup(struct ctx *x, uint32_t limit)
{
	unsigned int i;
	int st;

	memset(x, 0, sizeof(*x));
	x->s = vt_sim(2, 48u << 20, 5, 0, 0);
	vt_node(x->s, 0, 1u << 20, 8, &x->a);
	vt_node(x->s, 1, 1u << 20, 8, &x->b);
	st = wsv_srq_create(x->s, 1, SRQN, VT_PD, 4, limit, &x->srq);
	REQUIRE(st == 0, "create SRQ: %d", st);
	for (i = 0; i < 2; i++) {
		st = wsv_qp_create(x->s, 0, 2 + 2 * i, WEFT_VQPT_RC, VT_PD, VT_CQ, VT_CQ, 5, 5, 0,
				   &x->qa[i]);
		REQUIRE(st == 0, "create a's QP: %d", st);
		st = wsv_qp_create_srq(x->s, 1, 3 + 2 * i, WEFT_VQPT_RC, VT_PD, VT_CQ, VT_CQ, 5,
				       SRQN, 0, &x->qb[i]);
		REQUIRE(st == 0, "create b's QP on the SRQ: %d", st);
		REQUIRE(wsv_connect(x->s, &x->qa[i], &x->qb[i], NULL) == 0, "connect");
	}
	vt_fill(x->a.mem, 1u << 20, 9);
	memset(x->b.mem, 0, 1u << 20);
}

static void srq_recv(struct ctx *x, uint64_t wr_id)
{
	struct weft_vsge sg = { .addr = x->b.buf + wr_id * SLOT, .length = SLOT, .lkey = VT_MR };

	REQUIRE(wsv_post_srq_recv(x->s, &x->srq, wr_id, &sg, 1) == 0, "post SRQ recv %llu",
	       (unsigned long long)wr_id);
}

/* Message i: (i + 1) * 700 bytes from a's buffer at i * SLOT. */
static uint32_t msg_len(unsigned int i)
{
	return (i + 1) * 700u;
}

static void send_msg(struct ctx *x, unsigned int i)
{
	vt_post(&x->a, &x->qa[i & 1], 100 + i, WEFT_VWR_SEND, (uint64_t)i * SLOT, msg_len(i), 0,
		0, 0, 0);
}

static struct weft_vsrqc query(struct ctx *x)
{
	struct weft_vcmd k = { .op = WEFT_VCMD_QUERY_SRQ, .handle = SRQN };
	uint64_t a = weft_sim_alloc(x->s, 1, 64, 64);
	struct weft_vsrqc d;

	k.u.query.addr = a;
	REQUIRE(a && wsv_cmd(x->s, 1, &k, NULL) == 0, "QUERY_SRQ");
	memcpy(&d, weft_sim_ptr(x->s, 1, a, sizeof(d)), sizeof(d));
	return d;
}

/* Eight messages over two QPs into one SRQ: every WQE is used once, each
 * CQE names its SRQ slot and the data lands byte-exact. */
static void case_rc_shared(void)
{
	struct ctx x;
	struct weft_vcqe e[2 * NMSG];
	uint32_t seen = 0;
	unsigned int i, n, m;
	struct weft_vsrqc d;

	setup(&x, 0);
	for (i = 0; i < NMSG; i++)
		srq_recv(&x, i);
	for (i = 0; i < NMSG; i++)
		send_msg(&x, i);
	n = wsv_wait(x.s, &x.b.cq, e, NMSG, 200 * MS);
	REQUIRE(n == NMSG, "b got %u receive CQEs of %u", n, NMSG);
	for (i = 0; i < n; i++) {
		REQUIRE(e[i].status == WEFT_VWC_SUCCESS && e[i].opcode == WEFT_VWC_RECV,
		       "CQE %u: status %u opcode %u", i, e[i].status, e[i].opcode);
		REQUIRE(e[i].wr_id < NMSG && !(seen & (1u << e[i].wr_id)), "wr_id %llu twice",
		       (unsigned long long)e[i].wr_id);
		REQUIRE(e[i].wqe_index == e[i].wr_id, "CQE slot %u for WQE %llu", e[i].wqe_index,
		       (unsigned long long)e[i].wr_id);
		seen |= 1u << e[i].wr_id;
		m = e[i].byte_len / 700u - 1;
		REQUIRE(m < NMSG && msg_len(m) == e[i].byte_len, "byte_len %u", e[i].byte_len);
		REQUIRE(e[i].qpn == x.qb[m & 1].qpn, "message %u completed on QP %u", m, e[i].qpn);
		REQUIRE(memcmp(x.b.mem + e[i].wr_id * SLOT, x.a.mem + (uint64_t)m * SLOT,
			      msg_len(m)) == 0, "message %u in WQE %llu differs", m,
		       (unsigned long long)e[i].wr_id);
	}
	REQUIRE(wsv_srq_ci(x.s, &x.srq) == NMSG, "published consumer index %u",
	       wsv_srq_ci(x.s, &x.srq));
	d = query(&x);
	REQUIRE(d.created && d.ci == NMSG && d.prod == NMSG && d.refs == 2 && d.log2 == 4,
	       "QUERY_SRQ: created %u ci %u prod %u refs %u", d.created, d.ci, d.prod, d.refs);
	n = wsv_wait(x.s, &x.a.cq, e, NMSG, 50 * MS);
	REQUIRE(n == NMSG, "a got %u send CQEs", n);
	t_checked("SRQ: %u messages (700..5600 B) over 2 RC QPs into one SRQ: each WQE used once, CQE slot = WQE, byte-exact; consumer index %u published; QUERY_SRQ ci %u refs %u",
		  NMSG, wsv_srq_ci(x.s, &x.srq), d.ci, d.refs);
	weft_sim_free(x.s);
}

/* An empty SRQ makes the responder RNR-NAK; a later post lets the retry in. */
static void case_rnr(void)
{
	struct ctx x;
	struct weft_vcqe e;
	uint64_t rnr;

	setup(&x, 0);
	rnr = vt_drops(x.s, 1, WEFT_R_RNR);
	send_msg(&x, 0);
	run_for(x.s, 2 * MS);
	REQUIRE(vt_drops(x.s, 1, WEFT_R_RNR) > rnr, "no RNR drop counted with the SRQ empty");
	REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_RNR_NAKS_TX) > 0, "no RNR NAK sent");
	vt_no_cqe(&x.b, MS);
	srq_recv(&x, 3);
	vt_cqe(&x.b, &e, 200 * MS);
	REQUIRE(e.status == WEFT_VWC_SUCCESS && e.wr_id == 3 && e.byte_len == msg_len(0),
	       "CQE wr_id %llu status %u len %u", (unsigned long long)e.wr_id, e.status,
	       e.byte_len);
	REQUIRE(memcmp(x.b.mem + 3 * SLOT, x.a.mem, msg_len(0)) == 0, "data differs");
	t_checked("SRQ empty: RNR NAK (drop RNR %llu), no CQE; after one post the retried send completes in it, byte-exact",
		  (unsigned long long)(vt_drops(x.s, 1, WEFT_R_RNR) - rnr));
	weft_sim_free(x.s);
}

static uint64_t srq_events(struct ctx *x, uint32_t *obj, uint32_t *what)
{
	run_for(x->s, MS);
	weft_sim_last_async(x->s, 1, obj, what);
	return weft_sim_event_count(x->s, 1, WEFT_EV_VERBS_ASYNC);
}

/* The limit event: once, when the WQEs left fall below the armed limit;
 * arming below the current count raises it at once. */
static void case_limit(void)
{
	struct weft_vcmd k = { .op = WEFT_VCMD_MODIFY_SRQ, .handle = SRQN };
	struct weft_vcqe e;
	struct ctx x;
	uint64_t ev0, ev;
	uint32_t obj, what;
	unsigned int i;

	setup(&x, 0);
	for (i = 0; i < 4; i++)
		srq_recv(&x, i);
	k.u.srq.limit = 3;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == 0, "MODIFY_SRQ limit 3");
	ev0 = srq_events(&x, &obj, &what);
	send_msg(&x, 0);
	vt_cqe(&x.b, &e, 100 * MS);
	ev = srq_events(&x, &obj, &what);
	REQUIRE(ev == ev0, "event with 3 WQEs left, limit 3");
	send_msg(&x, 2);
	vt_cqe(&x.b, &e, 100 * MS);
	ev = srq_events(&x, &obj, &what);
	REQUIRE(ev == ev0 + 1 && obj == SRQN && what == WEFT_VASYNC_SRQ_LIMIT,
	       "events %llu -> %llu, last obj %u what %u", (unsigned long long)ev0,
	       (unsigned long long)ev, obj, what);
	REQUIRE(query(&x).limit == 0, "limit still armed after the event");
	send_msg(&x, 4);
	vt_cqe(&x.b, &e, 100 * MS);
	REQUIRE(srq_events(&x, &obj, &what) == ev0 + 1, "a second event without re-arming");
	k.u.srq.limit = 5;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == 0, "MODIFY_SRQ limit 5");
	ev = srq_events(&x, &obj, &what);
	REQUIRE(ev == ev0 + 2 && what == WEFT_VASYNC_SRQ_LIMIT,
	       "arming above the count: events %llu -> %llu, what %u", (unsigned long long)ev0,
	       (unsigned long long)ev, what);
	k.u.srq.limit = 17;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == WEFT_CMD_EINVAL, "limit 17 of 16 accepted");
	t_checked("SRQ limit 3 of 4 WQEs: no event at 3 left, SRQ_LIMIT(srq %u) at 2, disarmed after; arming 5 with 1 left raises it at once; limit > size EINVAL",
		  SRQN);
	weft_sim_free(x.s);
}

/* A QP on the SRQ in error: the WQE it holds completes flushed, the SRQ's
 * others stay for the other QP, and LAST_WQE is raised. */
static void case_flush(void)
{
	struct weft_vcmd k;
	struct weft_vhdr h;
	struct weft_vcqe e;
	uint8_t buf[WEFT_WIRE_MAX_FRAME];
	uint32_t obj, what;
	struct ctx x;
	size_t n;
	uint64_t ev;

	setup(&x, 0);
	srq_recv(&x, 0);
	srq_recv(&x, 1);
	/* The FIRST segment of a send to b's first QP: it takes WQE 0. */
	memset(&h, 0, sizeof(h));
	h.opcode = WEFT_VOP_SEND;
	h.flags = WEFT_VF_FIRST;
	h.dst_qpn = x.qb[0].qpn;
	h.src_qpn = x.qa[0].qpn;
	n = wsv_forge(buf, 0, 1, &h, x.a.mem, WEFT_VERBS_MTU);
	REQUIRE(weft_core_receive(weft_sim_core(x.s, 1), buf, n) == 0, "inject");
	run_for(x.s, MS);
	REQUIRE(wsv_srq_ci(x.s, &x.srq) == 1, "FIRST segment did not take a WQE");
	ev = srq_events(&x, &obj, &what);
	memset(&k, 0, sizeof(k));
	k.u.mod.state = WEFT_VQPS_ERR;
	REQUIRE(wsv_modify(x.s, 1, x.qb[0].qpn, WEFT_VQPA_STATE, &k) == 0, "QP to ERR");
	vt_cqe(&x.b, &e, 50 * MS);
	REQUIRE(e.wr_id == 0 && e.status == WEFT_VWC_WR_FLUSH_ERR && e.qpn == x.qb[0].qpn,
	       "CQE wr_id %llu status %u qpn %u", (unsigned long long)e.wr_id, e.status, e.qpn);
	vt_no_cqe(&x.b, 5 * MS);
	REQUIRE(srq_events(&x, &obj, &what) > ev && what == WEFT_VASYNC_LAST_WQE &&
	       obj == x.qb[0].qpn, "no LAST_WQE event (last obj %u what %u)", obj, what);
	REQUIRE(wsv_srq_ci(x.s, &x.srq) == 1, "the SRQ was flushed");
	send_msg(&x, 1);
	vt_cqe(&x.b, &e, 100 * MS);
	REQUIRE(e.wr_id == 1 && e.status == WEFT_VWC_SUCCESS && e.qpn == x.qb[1].qpn &&
	       memcmp(x.b.mem + SLOT, x.a.mem + SLOT, msg_len(1)) == 0,
	       "other QP: wr_id %llu status %u", (unsigned long long)e.wr_id, e.status);
	t_checked("QP on the SRQ to ERR mid-message: its WQE completes WR_FLUSH_ERR, LAST_WQE event, the SRQ's other WQE not flushed and used by the other QP byte-exact");
	weft_sim_free(x.s);
}

/* A UD QP on the SRQ: datagrams take WQEs with their 40-byte header. */
static void case_ud(void)
{
	static const uint8_t g1[16] = { 0xfd, [15] = 1 }, g2[16] = { 0xfd, [15] = 2 };
	struct weft_vsge sg;
	struct weft_vwqe w;
	struct weft_vcqe e;
	struct wsv_qp ua, ub;
	struct ctx x;
	unsigned int i;

	setup(&x, 0);
	REQUIRE(wsv_gid(x.s, 0, 0, g1, WEFT_VGID_IPV6) == 0 &&
	       wsv_gid(x.s, 1, 0, g2, WEFT_VGID_IPV6) == 0, "GIDs");
	REQUIRE(wsv_qp_create(x.s, 0, 9, WEFT_VQPT_UD, VT_PD, VT_CQ, VT_CQ, 4, 4, 0, &ua) == 0 &&
	       wsv_qp_create_srq(x.s, 1, 9, WEFT_VQPT_UD, VT_PD, VT_CQ, VT_CQ, 4, SRQN, 0,
				 &ub) == 0, "UD QPs");
	REQUIRE(wsv_ud_ready(x.s, &ua, 0x1234) == 0 && wsv_ud_ready(x.s, &ub, 0x1234) == 0, "RTS");
	for (i = 0; i < 3; i++)
		srq_recv(&x, i);
	for (i = 0; i < 3; i++) {
		memset(&w, 0, sizeof(w));
		w.wr_id = 50 + i;
		w.opcode = WEFT_VWR_SEND;
		w.flags = WEFT_VWQE_SIGNALED;
		w.u.ud.dest_qpn = 9;
		w.u.ud.qkey = 0x1234;
		w.u.ud.dest_node = 1;
		w.u.ud.hop_limit = 64;
		memcpy(w.u.ud.dgid, g2, 16);
		sg = (struct weft_vsge){ x.a.buf + i * 1000u, 300 + i, VT_MR };
		REQUIRE(wsv_post_send(x.s, &ua, &w, &sg, 1, true) == 0, "post UD");
	}
	for (i = 0; i < 3; i++) {
		vt_cqe(&x.b, &e, 50 * MS);
		REQUIRE(e.status == WEFT_VWC_SUCCESS && e.wr_id == i && e.qpn == 9 &&
		       e.byte_len == WEFT_VERBS_GRH_SIZE + 300 + i && (e.flags & WEFT_VCQE_GRH) &&
		       e.src_qpn == 9,
		       "UD CQE %u: wr_id %llu status %u len %u", i, (unsigned long long)e.wr_id,
		       e.status, e.byte_len);
		REQUIRE(memcmp(x.b.mem + i * SLOT + WEFT_VERBS_GRH_SIZE, x.a.mem + i * 1000u,
			      300 + i) == 0, "UD data %u differs", i);
	}
	t_checked("UD QP on the SRQ: 3 datagrams take WQEs 0..2 in order, 40-byte header + data byte-exact");
	weft_sim_free(x.s);
}

static uint64_t refused(struct ctx *x, unsigned int reason)
{
	return vt_drops(x->s, 1, reason);
}

/* What a hostile driver can do: every command and doorbell refused with
 * its reason, nothing changed. */
static void case_hostile(void)
{
	struct weft_vcmd k;
	struct weft_vcmd_resp r;
	struct weft_vsge sg;
	struct weft_vcqe e;
	struct wsv_qp q;
	struct ctx x;
	uint64_t d;
	uint32_t ci;
	uint8_t *slot;

	setup(&x, 0);
	/* CREATE_SRQ: bad numbers, sizes, strides, flags, PD, ring. */
	memset(&k, 0, sizeof(k));
	k.op = WEFT_VCMD_CREATE_SRQ;
	k.handle = 0;
	k.u.srq.ring_addr = x.srq.ring;
	k.u.srq.ci_addr = x.srq.ci_addr;
	k.u.srq.pd = VT_PD;
	k.u.srq.log2 = 4;
	k.u.srq.stride_log2 = 8;
	REQUIRE(wsv_cmd(x.s, 1, &k, &r) == WEFT_CMD_EINVAL && r.reason == WEFT_R_SRQ_INVALID,
	       "srqn 0");
	k.handle = 1u << 24;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == WEFT_CMD_EINVAL, "srqn out of range");
	k.handle = SRQN;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == WEFT_CMD_EBUSY, "SRQ created twice");
	k.handle = 8;
	k.u.srq.log2 = WEFT_VERBS_WQ_MAX_LOG2 + 1;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == WEFT_CMD_EINVAL, "log2 too big");
	k.u.srq.log2 = 4;
	k.u.srq.stride_log2 = 4;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == WEFT_CMD_EINVAL, "stride 16");
	k.u.srq.stride_log2 = 8;
	k.u.srq.flags = 0x80;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == WEFT_CMD_EINVAL, "unknown flag");
	k.u.srq.flags = 0;
	k.u.srq.pd = 99;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == WEFT_CMD_EINVAL, "PD not created");
	k.u.srq.pd = VT_PD;
	k.u.srq.ring_addr = 1ull << 40;
	REQUIRE(wsv_cmd(x.s, 1, &k, &r) == WEFT_CMD_EFAULT && r.reason == WEFT_R_DMA_ERROR,
	       "ring outside guest RAM");
	k.u.srq.ring_addr = x.srq.ring + 8;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == WEFT_CMD_EFAULT, "unaligned ring");
	/* CREATE_QP on an SRQ that does not exist, of another PD, or privileged. */
	REQUIRE(wsv_qp_create_srq(x.s, 1, 20, WEFT_VQPT_RC, VT_PD, VT_CQ, VT_CQ, 4, 8, 0, &q) ==
	       WEFT_CMD_EINVAL, "QP on SRQ 8 (not created)");
	REQUIRE(wsv_pd(x.s, 1, 2) == 0, "PD 2");
	REQUIRE(wsv_qp_create_srq(x.s, 1, 20, WEFT_VQPT_RC, 2, VT_CQ, VT_CQ, 4, SRQN, 0, &q) ==
	       WEFT_CMD_EINVAL, "QP of PD 2 on an SRQ of PD 1");
	REQUIRE(wsv_qp_create_srq(x.s, 1, 20, WEFT_VQPT_RC, VT_PD, VT_CQ, VT_CQ, 4, SRQN,
				 WEFT_VQPF_PRIV, &q) == WEFT_CMD_EINVAL,
	       "privileged QP on a user SRQ");
	/* Doorbells. */
	d = refused(&x, WEFT_R_SRQ_INVALID);
	wsv_uar_write(x.s, 1, 0, WEFT_UAR_SRQ_DB, WEFT_UAR_DB(8, 1));
	REQUIRE(refused(&x, WEFT_R_SRQ_INVALID) == d + 1, "SRQ_DB of SRQ 8 not refused");
	wsv_uar_write(x.s, 1, 0, WEFT_UAR_RQ_DB, WEFT_UAR_DB(x.qb[0].qpn, 1));
	REQUIRE(refused(&x, WEFT_R_SRQ_INVALID) == d + 2, "RQ_DB of a QP on an SRQ not refused");
	d = refused(&x, WEFT_R_UAR_MISMATCH);
	wsv_uar_write(x.s, 1, 1, WEFT_UAR_SRQ_DB, WEFT_UAR_DB(SRQN, 1));
	REQUIRE(refused(&x, WEFT_R_UAR_MISMATCH) == d + 1, "SRQ_DB from UAR 1 not refused");
	d = refused(&x, WEFT_R_BAD_WQE);
	wsv_uar_write(x.s, 1, 0, WEFT_UAR_SRQ_DB, WEFT_UAR_DB(SRQN, 17));
	wsv_uar_write(x.s, 1, 0, WEFT_UAR_SRQ_DB, WEFT_UAR_DB(SRQN, 0xfffffff0u));
	REQUIRE(refused(&x, WEFT_R_BAD_WQE) == d + 2, "producer beyond the ring not refused");
	REQUIRE(query(&x).prod == 0, "a refused doorbell moved the producer");
	/* A WQE with too many SGEs: the QP that takes it fails, the slot is used. */
	slot = weft_sim_ptr(x.s, 1, x.srq.ring, 256);
	memset(slot, 0, 256);
	slot[8] = 200;                  /* num_sge */
	x.srq.prod = 1;
	wsv_uar_write(x.s, 1, 0, WEFT_UAR_SRQ_DB, WEFT_UAR_DB(SRQN, 1));
	send_msg(&x, 0);
	vt_cqe(&x.b, &e, 50 * MS);
	REQUIRE(e.status == WEFT_VWC_LOC_QP_OP_ERR && e.byte_len == WEFT_R_BAD_WQE,
	       "bad SRQ WQE: status %u reason %u", e.status, e.byte_len);
	ci = wsv_srq_ci(x.s, &x.srq);
	REQUIRE(ci == 1, "bad WQE not consumed (ci %u)", ci);
	/* A WQE naming memory of another PD's region. */
	REQUIRE(wsv_reg_mr(x.s, 1, WEFT_STAG(5, 1), 2, x.b.buf, x.b.buf, 4096, WEFT_VACC_ALL,
			  WEFT_ATT_DIRECT, 12) == 0, "region of PD 2");
	sg = (struct weft_vsge){ x.b.buf, 4096, WEFT_STAG(5, 1) };
	REQUIRE(wsv_post_srq_recv(x.s, &x.srq, 77, &sg, 1) == 0, "post");
	send_msg(&x, 1);
	vt_cqe(&x.b, &e, 50 * MS);
	REQUIRE(e.wr_id == 77 && e.status == WEFT_VWC_LOC_PROT_ERR && e.byte_len == WEFT_R_PD_MISMATCH,
	       "foreign-PD WQE: wr_id %llu status %u reason %u", (unsigned long long)e.wr_id,
	       e.status, e.byte_len);
	/* Destroy while in use. */
	memset(&k, 0, sizeof(k));
	k.op = WEFT_VCMD_DESTROY_SRQ;
	k.handle = SRQN;
	REQUIRE(wsv_cmd(x.s, 1, &k, &r) == WEFT_CMD_EBUSY && r.reason == WEFT_R_STAG_BUSY,
	       "SRQ with QPs destroyed");
	k.op = WEFT_VCMD_DESTROY_QP;
	k.handle = x.qb[0].qpn;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == 0, "destroy QP 3");
	k.handle = x.qb[1].qpn;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == 0, "destroy QP 5");
	k.op = WEFT_VCMD_DESTROY_PD;
	k.handle = VT_PD;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == WEFT_CMD_EBUSY, "PD of an SRQ destroyed");
	k.op = WEFT_VCMD_DESTROY_SRQ;
	k.handle = SRQN;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == 0, "destroy the SRQ");
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == WEFT_CMD_ESTATE, "destroyed twice");
	k.op = WEFT_VCMD_MODIFY_SRQ;
	REQUIRE(wsv_cmd(x.s, 1, &k, NULL) == WEFT_CMD_ESTATE, "modify after destroy");
	t_checked("hostile SRQ commands and doorbells: srqn 0/out of range, twice, sizes, stride, flag, PD, ring refused; QPs on a missing SRQ, of another PD, privileged on a user SRQ refused; SRQ_DB of a missing SRQ, RQ_DB of an SRQ QP (SRQ_INVALID), wrong UAR (UAR_MISMATCH), producer beyond the ring (BAD_WQE) refused; bad and foreign-PD WQEs fail their QP and are consumed; destroy while attached EBUSY");
	weft_sim_free(x.s);
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "rc-shared", case_rc_shared },
		{ "rnr", case_rnr },
		{ "limit", case_limit },
		{ "flush", case_flush },
		{ "ud", case_ud },
		{ "hostile", case_hostile },
	};

	return vt_main("srq", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
