/* SPDX-License-Identifier: MIT */
/*
 * UC queue pairs (docs/hw-spec.md 16.16): SEND and RDMA WRITE (with
 * immediate) without ACKs; a lost or reordered packet drops the message
 * being received, and the next message lands in the same receive WQE;
 * READ and atomics are refused.  Usage: sim-verbs-uc CASE (meson runs
 * each case as its own test).
 */
#include "vt.h"

#define MS              1000000ull
#define QA              2u
#define QB              3u

static void run_for(struct weft_sim *s, uint64_t ns)
{
	weft_sim_run_until(s, NULL, NULL, weft_sim_now(s) + ns);
}

/* One side of a UC connection: INIT, RTR (AV, DEST_QPN, RQ_PSN), RTS. */
static void uc_side(struct weft_sim *s, struct wsv_qp *q, const struct wsv_qp *peer, uint32_t psn)
{
	struct weft_vcmd k;

	memset(&k, 0, sizeof(k));
	k.u.mod.state = WEFT_VQPS_INIT;
	k.u.mod.access = WEFT_VACC_REMOTE_WRITE;
	REQUIRE(wsv_modify(s, q->node, q->qpn, WEFT_VQPA_STATE | WEFT_VQPA_ACCESS, &k) == 0, "INIT");
	k.u.mod.state = WEFT_VQPS_RTR;
	REQUIRE(wsv_modify(s, q->node, q->qpn, WEFT_VQPA_STATE | WEFT_VQPA_DEST_QPN, &k) ==
		WEFT_CMD_EINVAL, "UC RTR without AV and RQ_PSN was accepted");
	k.u.mod.dest_node = (uint16_t)peer->node;
	k.u.mod.dest_qpn = peer->qpn;
	k.u.mod.rq_psn = psn;
	REQUIRE(wsv_modify(s, q->node, q->qpn, WEFT_VQPA_STATE | WEFT_VQPA_AV |
			   WEFT_VQPA_DEST_QPN | WEFT_VQPA_RQ_PSN, &k) == 0, "RTR");
	k.u.mod.state = WEFT_VQPS_RTS;
	k.u.mod.sq_psn = psn;
	REQUIRE(wsv_modify(s, q->node, q->qpn, WEFT_VQPA_STATE | WEFT_VQPA_SQ_PSN, &k) == 0, "RTS");
}

/* Two nodes, UC QP QA on a and QB on b, connected with PSN 100 both ways. */
static struct weft_sim *setup(struct vt_node *a, struct vt_node *b, struct wsv_qp *qa,
			      struct wsv_qp *qb)
{
	struct weft_sim *s = vt_sim(2, 32u << 20, 9, 0, 0);

	vt_node(s, 0, 1u << 20, 6, a);
	vt_node(s, 1, 1u << 20, 6, b);
	REQUIRE(wsv_qp_create(s, 0, QA, WEFT_VQPT_UC, VT_PD, VT_CQ, VT_CQ, 5, 5, 0, qa) == 0,
		"create UC QP on a");
	REQUIRE(wsv_qp_create(s, 1, QB, WEFT_VQPT_UC, VT_PD, VT_CQ, VT_CQ, 5, 5, 0, qb) == 0,
		"create UC QP on b");
	uc_side(s, qa, qb, 100);
	uc_side(s, qb, qa, 100);
	vt_fill(a->mem, 1u << 20, 31);
	memset(b->mem, 0, 1u << 20);
	return s;
}

static void expect(struct vt_node *n, uint64_t wr_id, uint8_t op, uint8_t status, uint32_t len,
		   const char *what)
{
	struct weft_vcqe e;

	vt_cqe(n, &e, 100 * MS);
	REQUIRE(e.wr_id == wr_id && e.opcode == op && e.status == status && e.byte_len == len,
	       "%s: CQE wr_id %llu op %u status %u len %u, want %llu %u %u %u", what,
	       (unsigned long long)e.wr_id, e.opcode, e.status, e.byte_len,
	       (unsigned long long)wr_id, op, status, len);
}

/* SEND (3 packets), SEND with immediate, WRITE (5 packets) and WRITE with
 * immediate land byte-exact; the sender completes them with no ACK sent. */
static void case_send_write(void)
{
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_sim *s = setup(&a, &b, &qa, &qb);
	uint32_t m = WEFT_VERBS_MTU;

	vt_recv(&b, &qb, 50, 0, 4 * m);
	vt_recv(&b, &qb, 51, 4 * m, m);
	vt_recv(&b, &qb, 52, 5 * m, m);
	vt_post(&a, &qa, 1, WEFT_VWR_SEND, 0, 3 * m - 7, 0, 0, 0, 0);
	vt_post(&a, &qa, 2, WEFT_VWR_SEND_IMM, 3 * m, 10, 0, 0, 0x1234, 0);
	vt_post(&a, &qa, 3, WEFT_VWR_WRITE, 8 * m, 5 * m, b.buf + 8 * m, VT_MR, 0, 0);
	vt_post(&a, &qa, 4, WEFT_VWR_WRITE_IMM, 16 * m, 100, b.buf + 16 * m, VT_MR, 0x5678, 0);
	expect(&a, 1, WEFT_VWC_SEND, WEFT_VWC_SUCCESS, 3 * m - 7, "SEND");
	expect(&a, 2, WEFT_VWC_SEND, WEFT_VWC_SUCCESS, 10, "SEND_IMM");
	expect(&a, 3, WEFT_VWC_RDMA_WRITE, WEFT_VWC_SUCCESS, 5 * m, "WRITE");
	expect(&a, 4, WEFT_VWC_RDMA_WRITE, WEFT_VWC_SUCCESS, 100, "WRITE_IMM");
	expect(&b, 50, WEFT_VWC_RECV, WEFT_VWC_SUCCESS, 3 * m - 7, "receive of the SEND");
	expect(&b, 51, WEFT_VWC_RECV, WEFT_VWC_SUCCESS, 10, "receive of the SEND_IMM");
	expect(&b, 52, WEFT_VWC_RECV_RDMA_IMM, WEFT_VWC_SUCCESS, 100, "receive of the WRITE_IMM");
	REQUIRE(memcmp(b.mem, a.mem, 3 * m - 7) == 0, "SEND data");
	REQUIRE(memcmp(b.mem + 4 * m, a.mem + 3 * m, 10) == 0, "SEND_IMM data");
	REQUIRE(memcmp(b.mem + 8 * m, a.mem + 8 * m, 5 * m) == 0, "WRITE data");
	REQUIRE(memcmp(b.mem + 16 * m, a.mem + 16 * m, 100) == 0, "WRITE_IMM data");
	REQUIRE(vt_cnt(s, 1, WEFT_CNT_V_ACKS_TX) == 0, "the UC responder sent %llu ACKs",
		(unsigned long long)vt_cnt(s, 1, WEFT_CNT_V_ACKS_TX));
	vt_no_cqe(&a, 5 * MS);
	vt_no_cqe(&b, 5 * MS);
	t_checked("UC SEND of 3 packets, SEND_IMM, WRITE of 5 packets, WRITE_IMM: byte-exact, 4 send and 3 receive completions, no ACK sent");
	weft_sim_free(s);
}

/* A forged UC packet from a's QP to b's. */
static void inject(struct weft_sim *s, const struct wsv_qp *qa, const struct wsv_qp *qb,
		   uint32_t psn, uint8_t flags, const void *data, uint32_t len)
{
	static uint8_t buf[WEFT_VERBS_MTU + 256];
	struct weft_vhdr h;
	size_t n;

	memset(&h, 0, sizeof(h));
	h.opcode = WEFT_VOP_SEND;
	h.flags = flags;
	h.dst_qpn = qb->qpn;
	h.src_qpn = qa->qpn;
	h.psn = psn;
	n = wsv_forge(buf, 0, 1, &h, data, len);
	REQUIRE(weft_core_receive(weft_sim_core(s, 1), buf, n) == 0, "inject");
	run_for(s, MS);
}

/* A SEND whose last packet is lost, and one whose middle packet comes
 * after the last: each is dropped without a completion, and the next
 * message lands in the same receive WQE. */
static void case_loss(void)
{
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_sim *s = setup(&a, &b, &qa, &qb);
	uint32_t m = WEFT_VERBS_MTU;
	uint64_t oos = vt_drops(s, 1, WEFT_R_PSN_OOS);

	vt_recv(&b, &qb, 60, 0, 8 * m);
	/* Message 1: FIRST 100, MIDDLE 101, LAST 102 lost. */
	inject(s, &qa, &qb, 100, WEFT_VF_FIRST, a.mem, m);
	inject(s, &qa, &qb, 101, 0, a.mem + m, m);
	/* Message 2: FIRST 103 (drops message 1), LAST 105, MIDDLE 104 late. */
	inject(s, &qa, &qb, 103, WEFT_VF_FIRST, a.mem + 2 * m, m);
	inject(s, &qa, &qb, 105, WEFT_VF_LAST, a.mem + 4 * m, m);
	inject(s, &qa, &qb, 104, 0, a.mem + 3 * m, m);
	vt_no_cqe(&b, 5 * MS);
	REQUIRE(vt_drops(s, 1, WEFT_R_PSN_OOS) >= oos + 3, "PSN_OOS drops %llu, want %llu more",
		(unsigned long long)vt_drops(s, 1, WEFT_R_PSN_OOS), (unsigned long long)(oos + 3));
	/* Message 3: ONLY 106, into the WQE the others did not complete. */
	inject(s, &qa, &qb, 106, WEFT_VF_FIRST | WEFT_VF_LAST, a.mem + 5 * m, 77);
	expect(&b, 60, WEFT_VWC_RECV, WEFT_VWC_SUCCESS, 77, "message 3");
	REQUIRE(memcmp(b.mem, a.mem + 5 * m, 77) == 0, "message 3's data");
	/* Then a's own SEND, from PSN 100 of its SQ, which b (expecting 107)
	 * takes: a FIRST packet starts a message whatever its PSN. */
	vt_recv(&b, &qb, 61, 8 * m, 2 * m);
	vt_post(&a, &qa, 7, WEFT_VWR_SEND, 9 * m, 2 * m, 0, 0, 0, 0);
	expect(&a, 7, WEFT_VWC_SEND, WEFT_VWC_SUCCESS, 2 * m, "the SEND after");
	expect(&b, 61, WEFT_VWC_RECV, WEFT_VWC_SUCCESS, 2 * m, "its receive");
	REQUIRE(memcmp(b.mem + 8 * m, a.mem + 9 * m, 2 * m) == 0, "its data");
	REQUIRE(vt_qp_state(&b, QB) == WEFT_VQPS_RTS, "b left RTS");
	t_checked("UC: a SEND missing its last packet and one with its middle packet late are dropped (PSN_OOS, no completion); the next message fills the same receive WQE; a FIRST packet resynchronises the PSN; the QP stays in RTS");
	weft_sim_free(s);
}

/* READ, CAS, FAA and SEND with invalidate on UC complete in error
 * (LOC_QP_OP_ERR); a SEND with no receive WQE is dropped (RNR, no RNR
 * NAK); a WRITE with a bad rkey is dropped and the QP stays in RTS. */
static void case_refused(void)
{
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_sim *s = setup(&a, &b, &qa, &qb);
	struct weft_vcqe e;
	uint64_t rnr;

	vt_post(&a, &qa, 1, WEFT_VWR_READ, 0, 64, b.buf, VT_MR, 0, 0);
	vt_cqe(&a, &e, 100 * MS);
	REQUIRE(e.wr_id == 1 && e.status == WEFT_VWC_LOC_QP_OP_ERR && e.byte_len == WEFT_R_QP_TYPE,
	       "READ on UC: status %u reason %u", e.status, e.byte_len);
	weft_sim_free(s);

	s = setup(&a, &b, &qa, &qb);
	rnr = vt_drops(s, 1, WEFT_R_RNR);
	vt_post(&a, &qa, 2, WEFT_VWR_SEND, 0, 64, 0, 0, 0, 0);
	expect(&a, 2, WEFT_VWC_SEND, WEFT_VWC_SUCCESS, 64, "SEND with no receive WQE");
	run_for(s, 5 * MS);
	REQUIRE(vt_drops(s, 1, WEFT_R_RNR) == rnr + 1, "RNR drops");
	REQUIRE(vt_cnt(s, 1, WEFT_CNT_V_RNR_NAKS_TX) == 0, "an RNR NAK on UC");
	vt_post(&a, &qa, 3, WEFT_VWR_WRITE, 0, 64, b.buf, WEFT_STAG(7, 1), 0, 0);
	expect(&a, 3, WEFT_VWC_RDMA_WRITE, WEFT_VWC_SUCCESS, 64, "WRITE with a bad rkey");
	vt_recv(&b, &qb, 70, 0, 64);
	vt_post(&a, &qa, 4, WEFT_VWR_SEND, 128, 64, 0, 0, 0, 0);
	expect(&a, 4, WEFT_VWC_SEND, WEFT_VWC_SUCCESS, 64, "SEND after");
	expect(&b, 70, WEFT_VWC_RECV, WEFT_VWC_SUCCESS, 64, "receive after");
	REQUIRE(memcmp(b.mem, a.mem + 128, 64) == 0, "data after");
	REQUIRE(vt_qp_state(&b, QB) == WEFT_VQPS_RTS, "b left RTS");
	t_checked("UC: READ completes LOC_QP_OP_ERR (QP_TYPE); a SEND with no receive WQE and a WRITE with a bad rkey are dropped without NAK, the QP stays in RTS and the next SEND lands");
	weft_sim_free(s);
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "send-write", case_send_write },
		{ "loss", case_loss },
		{ "refused", case_refused },
	};

	return vt_main("verbs-uc", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
