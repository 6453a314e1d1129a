/* SPDX-License-Identifier: MIT */
/*
 * Inline data in send WQEs (docs/hw-spec.md 16.6, WEFT_VWQE_INLINE): the
 * bytes travel in the SQ slot, so no region backs them.  Usage:
 * sim-verbs-inline CASE (meson runs each case as its own test).
 */
#include "vt.h"

#define MS              1000000ull
#define QA              2u
#define QB              3u

/* The largest inline payload of the sim's 256-byte SQ slots. */
#define ROOM            (256u - sizeof(struct weft_vwqe) - sizeof(struct weft_vinline))

static void setup(struct weft_sim **s, struct vt_node *a, struct vt_node *b, struct wsv_qp *qa,
		  struct wsv_qp *qb)
{
	*s = vt_sim(2, 32u << 20, 3, 0, 0);
	vt_node(*s, 0, 1u << 20, 6, a);
	vt_node(*s, 1, 1u << 20, 6, b);
	vt_rc(a, QA, b, QB, 5, NULL, qa, qb);
	memset(b->mem, 0, 1u << 20);
}

static void expect(struct vt_node *n, uint64_t wr_id, uint8_t status, uint32_t len_or_reason,
		   const char *what)
{
	struct weft_vcqe e;

	vt_cqe(n, &e, 50 * MS);
	REQUIRE(e.wr_id == wr_id && e.status == status && e.byte_len == len_or_reason,
	       "%s: CQE wr_id %llu status %u len/reason %u, want %llu %u %u", what,
	       (unsigned long long)e.wr_id, e.status, e.byte_len, (unsigned long long)wr_id,
	       status, len_or_reason);
}

/* RC: an inline SEND of the slot's room and an inline WRITE land
 * byte-exact; the bytes came from no region (a host array). */
static void case_rc(void)
{
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_vwqe w;
	uint8_t msg[ROOM], wr[100];

	setup(&s, &a, &b, &qa, &qb);
	vt_fill(msg, sizeof(msg), 21);
	vt_fill(wr, sizeof(wr), 22);
	vt_recv(&b, &qb, 7, 0, 4096);
	memset(&w, 0, sizeof(w));
	w.wr_id = 1;
	w.opcode = WEFT_VWR_SEND;
	w.flags = WEFT_VWQE_SIGNALED;
	REQUIRE(wsv_post_inline(s, &qa, &w, msg, sizeof(msg), true) == 0, "post inline send");
	w.wr_id = 2;
	w.opcode = WEFT_VWR_WRITE;
	w.u.rdma.remote_addr = b.buf + 8192;
	w.u.rdma.rkey = VT_MR;
	REQUIRE(wsv_post_inline(s, &qa, &w, wr, sizeof(wr), true) == 0, "post inline write");
	expect(&b, 7, WEFT_VWC_SUCCESS, sizeof(msg), "receive");
	expect(&a, 1, WEFT_VWC_SUCCESS, sizeof(msg), "inline send");
	expect(&a, 2, WEFT_VWC_SUCCESS, sizeof(wr), "inline write");
	REQUIRE(memcmp(b.mem, msg, sizeof(msg)) == 0, "inline send data differs");
	REQUIRE(memcmp(b.mem + 8192, wr, sizeof(wr)) == 0, "inline write data differs");
	t_checked("RC inline SEND of %zu B (the 256-byte slot's room) and inline WRITE of 100 B: byte-exact, no region behind the data",
		  sizeof(msg));
	weft_sim_free(s);
}

/* UD: an inline datagram arrives after its 40-byte header. */
static void case_ud(void)
{
	static const uint8_t g1[16] = { 0xfd, [15] = 1 }, g2[16] = { 0xfd, [15] = 2 };
	struct weft_sim *s = vt_sim(2, 32u << 20, 4, 0, 0);
	struct vt_node a, b;
	struct wsv_qp ua, ub;
	struct weft_vwqe w;
	uint8_t msg[150];

	vt_node(s, 0, 1u << 20, 6, &a);
	vt_node(s, 1, 1u << 20, 6, &b);
	REQUIRE(wsv_gid(s, 0, 0, g1, WEFT_VGID_IPV6) == 0 && wsv_gid(s, 1, 0, g2, WEFT_VGID_IPV6) == 0,
	       "GIDs");
	REQUIRE(wsv_qp_create(s, 0, 5, WEFT_VQPT_UD, VT_PD, VT_CQ, VT_CQ, 4, 4, 0, &ua) == 0 &&
	       wsv_qp_create(s, 1, 5, WEFT_VQPT_UD, VT_PD, VT_CQ, VT_CQ, 4, 4, 0, &ub) == 0, "UD QPs");
	REQUIRE(wsv_ud_ready(s, &ua, 9) == 0 && wsv_ud_ready(s, &ub, 9) == 0, "RTS");
	vt_recv(&b, &ub, 3, 0, 4096);
	vt_fill(msg, sizeof(msg), 23);
	memset(&w, 0, sizeof(w));
	w.wr_id = 4;
	w.opcode = WEFT_VWR_SEND;
	w.flags = WEFT_VWQE_SIGNALED;
	w.u.ud.dest_qpn = 5;
	w.u.ud.qkey = 9;
	w.u.ud.dest_node = 1;
	w.u.ud.hop_limit = 64;
	memcpy(w.u.ud.dgid, g2, 16);
	REQUIRE(wsv_post_inline(s, &ua, &w, msg, sizeof(msg), true) == 0, "post");
	expect(&b, 3, WEFT_VWC_SUCCESS, WEFT_VERBS_GRH_SIZE + sizeof(msg), "UD receive");
	REQUIRE(memcmp(b.mem + WEFT_VERBS_GRH_SIZE, msg, sizeof(msg)) == 0, "UD inline data differs");
	t_checked("UD inline send of 150 B: received after the 40-byte header, byte-exact");
	weft_sim_free(s);
}

/* Inline WQEs the adapter refuses: longer than the slot holds, a READ,
 * SGEs as well.  Each fails its QP with a named reason. */
static void case_bad(void)
{
	static const struct {
		uint8_t op, nsge;
		uint32_t len;
		unsigned int reason;
		const char *what;
	} bad[] = {
		{ WEFT_VWR_SEND, 0, ROOM + 1, WEFT_R_LENGTH, "one byte more than the slot" },
		{ WEFT_VWR_SEND, 0, 0xffffffffu, WEFT_R_LENGTH, "length 2^32-1" },
		{ WEFT_VWR_READ, 0, 8, WEFT_R_BAD_WQE, "inline READ" },
		{ WEFT_VWR_SEND, 1, 8, WEFT_R_BAD_WQE, "inline with one SGE" },
	};
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_vwqe w;
	uint8_t msg[ROOM];
	unsigned int i;

	setup(&s, &a, &b, &qa, &qb);
	memset(msg, 0x5a, sizeof(msg));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&w, 0, sizeof(w));
		w.wr_id = 10 + i;
		w.opcode = bad[i].op;
		w.num_sge = bad[i].nsge;
		w.flags = WEFT_VWQE_SIGNALED;
		REQUIRE(wsv_post_inline(s, &qa, &w, msg, bad[i].len, true) == 0, "post");
		expect(&a, 10 + i, WEFT_VWC_LOC_QP_OP_ERR, bad[i].reason, bad[i].what);
		REQUIRE(vt_qp_state(&a, qa.qpn) == WEFT_VQPS_ERR, "%s: QP not in ERR", bad[i].what);
		vt_rc(&a, 20 + 2 * i, &b, 21 + 2 * i, 5, NULL, &qa, &qb);
	}
	REQUIRE(b.mem[0] == 0, "a refused inline WQE delivered data");
	t_checked("inline WQEs longer than the slot (LENGTH), READ or with SGEs (BAD_WQE): LOC_QP_OP_ERR, QP in ERR, nothing sent");
	weft_sim_free(s);
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "rc", case_rc },
		{ "ud", case_ud },
		{ "bad", case_bad },
	};

	return vt_main("inline", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
