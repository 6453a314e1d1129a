/* SPDX-License-Identifier: MIT */
/*
 * RoCE v2 addressing of UD and GSI QPs (docs/hw-spec.md 16.13): the GID
 * table command, the addresses a UD send carries, and the 40-byte network
 * header (IPv4 or IPv6) at the start of every UD receive, as a RoCE v2
 * receiver sees it.  Usage: sim-verbs-ud CASE (meson runs each case as
 * its own test).
 */
#include "vt.h"

#define MS              1000000ull
#define UQ              5u      /* node 0's UD QP; node 1 receives on QP1 (GSI) */

struct ctx {
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp ua, gsi;
};

/* ::ffff:10.0.0.n and fd00::n */
static void gid4(uint8_t g[16], uint8_t n)
{
	memset(g, 0, 16);
	g[10] = 0xff;
	g[11] = 0xff;
	g[12] = 10;
	g[15] = n;
}

static void gid6(uint8_t g[16], uint8_t n)
{
	memset(g, 0, 16);
	g[0] = 0xfd;
	g[15] = n;
}

/* Two nodes, each with GID 0 = fd00::(node + 1) and GID 1 =
 * ::ffff:10.0.0.(node + 1); a UD QP on a and the GSI on b. */
static void setup(struct ctx *x)
{
	uint8_t g[16];
	unsigned int n;

	memset(x, 0, sizeof(*x));
	x->s = vt_sim(2, 32u << 20, 11, 0, 0);
	vt_node(x->s, 0, 1u << 20, 6, &x->a);
	vt_node(x->s, 1, 1u << 20, 6, &x->b);
	for (n = 0; n < 2; n++) {
		gid6(g, (uint8_t)(n + 1));
		REQUIRE(wsv_gid(x->s, n, 0, g, WEFT_VGID_IPV6) == 0, "node %u: set IPv6 GID", n);
		gid4(g, (uint8_t)(n + 1));
		REQUIRE(wsv_gid(x->s, n, 1, g, WEFT_VGID_IPV4) == 0, "node %u: set IPv4 GID", n);
	}
	REQUIRE(wsv_qp_create(x->s, 0, UQ, WEFT_VQPT_UD, VT_PD, VT_CQ, VT_CQ, 4, 4, 0, &x->ua) == 0,
	       "UD QP");
	REQUIRE(wsv_ud_ready(x->s, &x->ua, WEFT_VERBS_GSI_QKEY) == 0, "UD QP to RTS");
	REQUIRE(wsv_qp_create(x->s, 1, WEFT_VERBS_GSI_QPN, WEFT_VQPT_UD, VT_PD, VT_CQ, VT_CQ, 4, 4,
			     0, &x->gsi) == 0, "GSI QP");
	REQUIRE(wsv_ud_ready(x->s, &x->gsi, WEFT_VERBS_GSI_QKEY) == 0, "GSI to RTS");
	vt_fill(x->a.mem, 4096, 3);
}

/* A UD send of len bytes from a's buffer to b's GSI. */
static void ud_send(struct ctx *x, uint64_t wr_id, uint32_t len, uint8_t sgid_index,
		    const uint8_t dgid[16], unsigned int op, uint32_t imm)
{
	struct weft_vwqe w;
	struct weft_vsge sg = { .addr = x->a.buf, .length = len, .lkey = VT_MR };

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = (uint8_t)op;
	w.flags = WEFT_VWQE_SIGNALED;
	w.imm_inv = imm;
	w.u.ud.dest_qpn = WEFT_VERBS_GSI_QPN;
	w.u.ud.qkey = WEFT_VERBS_GSI_QKEY;
	w.u.ud.dest_node = 1;
	w.u.ud.sgid_index = sgid_index;
	w.u.ud.hop_limit = 64;
	w.u.ud.traffic_class = 0x28;
	w.u.ud.flow_label = 0xabcde;
	memcpy(w.u.ud.dgid, dgid, 16);
	REQUIRE(wsv_post_send(x->s, &x->ua, &w, &sg, len ? 1 : 0, true) == 0, "post UD send");
}

static void expect_send(struct ctx *x, uint64_t wr_id, uint8_t status, unsigned int reason)
{
	struct weft_vcqe e;

	vt_cqe(&x->a, &e, 20 * MS);
	REQUIRE(e.wr_id == wr_id && e.qpn == UQ, "send CQE wr_id %llu qpn %u",
	       (unsigned long long)e.wr_id, e.qpn);
	REQUIRE(e.status == status, "send CQE status %u (reason %u), want %u", e.status,
	       e.byte_len, status);
	if (status)
		REQUIRE(e.byte_len == reason, "reason %s, want %s", weft_reason_name(e.byte_len),
		       weft_reason_name(reason));
}

/* The receive CQE on b: GRH, network type, source QP and node, length. */
static void expect_recv(struct ctx *x, uint64_t wr_id, uint32_t len, uint8_t net)
{
	struct weft_vcqe e;

	vt_cqe(&x->b, &e, 20 * MS);
	REQUIRE(e.wr_id == wr_id && e.status == 0 && e.opcode == WEFT_VWC_RECV,
	       "receive CQE wr_id %llu status %u", (unsigned long long)e.wr_id, e.status);
	REQUIRE(e.qpn == WEFT_VERBS_GSI_QPN && e.src_qpn == UQ && e.src_node == 0,
	       "receive names QP %u, source QP %u node %u", e.qpn, e.src_qpn, e.src_node);
	REQUIRE(e.byte_len == WEFT_VERBS_GRH_SIZE + len, "byte_len %u, want 40 + %u",
	       e.byte_len, len);
	REQUIRE((e.flags & WEFT_VCQE_GRH) && (e.flags & (WEFT_VCQE_NET_IPV4 |
						       WEFT_VCQE_NET_IPV6)) == net,
	       "CQE flags 0x%x", e.flags);
	REQUIRE(!memcmp(x->b.mem + 65536 + WEFT_VERBS_GRH_SIZE, x->a.mem, len), "payload");
}

static unsigned int be16(const uint8_t *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

static void case_gid_table(void)
{
	struct ctx x;
	struct weft_vcmd k;
	struct weft_vcmd_resp r;
	struct weft_vgid_entry *q;
	uint64_t qa;
	uint8_t g[16];

	setup(&x);
	qa = weft_sim_alloc(x.s, 0, 64, 64);
	REQUIRE(qa, "query buffer");
	q = weft_sim_ptr(x.s, 0, qa, sizeof(*q));
	memset(&k, 0, sizeof(k));
	k.op = WEFT_VCMD_QUERY_GID;
	k.handle = 1;
	k.u.query.addr = qa;
	REQUIRE(wsv_cmd(x.s, 0, &k, &r) == 0, "QUERY_GID");
	gid4(g, 1);
	REQUIRE(q->valid == 1 && q->type == WEFT_VGID_IPV4 && q->port == WEFT_VERBS_PORT &&
	       !memcmp(q->gid, g, 16), "entry 1 reads back as set");
	REQUIRE(wsv_gid(x.s, 0, WEFT_VERBS_GID_TBL, g, WEFT_VGID_IPV4) == WEFT_CMD_EINVAL,
	       "index beyond the table accepted");
	REQUIRE(wsv_gid(x.s, 0, 2, g, WEFT_VGID_IPV6) == WEFT_CMD_EINVAL,
	       "IPv4-mapped GID accepted as IPv6");
	gid6(g, 9);
	REQUIRE(wsv_gid(x.s, 0, 2, g, WEFT_VGID_IPV4) == WEFT_CMD_EINVAL,
	       "IPv6 GID accepted as IPv4");
	REQUIRE(wsv_gid(x.s, 0, 2, g, 7) == WEFT_CMD_EINVAL, "type 7 accepted");
	memset(g, 0, sizeof(g));
	REQUIRE(wsv_gid(x.s, 0, 2, g, WEFT_VGID_IPV6) == WEFT_CMD_EINVAL, "zero GID accepted");
	gid6(g, 9);
	memset(&k, 0, sizeof(k));
	k.op = WEFT_VCMD_SET_GID;
	k.handle = 2;
	k.u.gid.type = WEFT_VGID_IPV6;
	k.u.gid.port = 2;
	memcpy(k.u.gid.gid, g, 16);
	REQUIRE(wsv_cmd(x.s, 0, &k, &r) == WEFT_CMD_EINVAL && r.reason == WEFT_R_GID_INVALID,
	       "port 2 accepted");
	REQUIRE(wsv_gid(x.s, 0, 2, NULL, 0) == WEFT_CMD_ESTATE, "clearing an empty entry");
	REQUIRE(wsv_gid(x.s, 0, 1, NULL, 0) == 0, "clear entry 1");
	memset(&k, 0, sizeof(k));
	k.op = WEFT_VCMD_QUERY_GID;
	k.handle = 1;
	k.u.query.addr = qa;
	REQUIRE(wsv_cmd(x.s, 0, &k, &r) == 0 && q->valid == 0, "entry 1 still valid");
	REQUIRE(weft_sim_node_recover(x.s, 1) == 0, "recover node 1");
	k.handle = 0;
	qa = weft_sim_alloc(x.s, 1, 64, 64);
	q = weft_sim_ptr(x.s, 1, qa, sizeof(*q));
	k.u.query.addr = qa;
	REQUIRE(qa && wsv_cmd(x.s, 1, &k, &r) == 0 && q->valid == 0,
	       "adapter recovery kept the GID table");
	t_checked("GID table: set, query, clear; index, type, zero GID and port checked; "
		  "recovery clears it");
	weft_sim_free(x.s);
}

static void case_grh_ipv4(void)
{
	struct ctx x;
	const uint8_t *h;
	uint8_t dgid[16];
	unsigned int i, sum = 0;

	setup(&x);
	vt_recv(&x.b, &x.gsi, 7, 65536, 256 + WEFT_VERBS_GRH_SIZE);
	memset(x.b.mem + 65536, 0xee, WEFT_VERBS_GRH_SIZE);
	gid4(dgid, 2);
	ud_send(&x, 1, 256, 1, dgid, WEFT_VWR_SEND, 0);
	expect_send(&x, 1, 0, 0);
	expect_recv(&x, 7, 256, WEFT_VCQE_NET_IPV4);
	h = x.b.mem + 65536;
	for (i = 0; i < 20; i++)
		REQUIRE(h[i] == 0, "byte %u of the first 20 is 0x%02x", i, h[i]);
	h += 20;
	REQUIRE(h[0] == 0x45 && h[1] == 0x28 && h[8] == 64 && h[9] == 17,
	       "version/IHL 0x%02x, TOS 0x%02x, TTL %u, protocol %u", h[0], h[1], h[8], h[9]);
	REQUIRE(be16(h + 2) == 20 + 8 + 12 + 8 + 256 + 4, "IPv4 total length %u", be16(h + 2));
	REQUIRE(h[12] == 10 && h[13] == 0 && h[14] == 0 && h[15] == 1 &&
	       h[16] == 10 && h[17] == 0 && h[18] == 0 && h[19] == 2, "addresses");
	for (i = 0; i < 20; i += 2)
		sum += be16(h + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	REQUIRE(sum == 0xffff, "IPv4 header checksum does not verify (0x%x)", sum);
	t_checked("GSI receive over IPv4: 20 zero bytes + IPv4 header with real addresses, "
		  "byte_len + 40, NET_IPV4, source QP and node");
	weft_sim_free(x.s);
}

static void case_grh_ipv6(void)
{
	struct ctx x;
	const uint8_t *h;
	uint8_t dgid[16], sgid[16];
	struct weft_vcqe e;

	setup(&x);
	vt_recv(&x.b, &x.gsi, 8, 65536, 1024 + WEFT_VERBS_GRH_SIZE);
	gid6(dgid, 2);
	gid6(sgid, 1);
	ud_send(&x, 2, 1024, 0, dgid, WEFT_VWR_SEND_IMM, 0xfeedf00d);
	expect_send(&x, 2, 0, 0);
	expect_recv(&x, 8, 1024, WEFT_VCQE_NET_IPV6);
	h = x.b.mem + 65536;
	REQUIRE(h[0] == 0x62 && h[1] == 0x8a && h[2] == 0xbc && h[3] == 0xde,
	       "version 6, traffic class 0x28, flow label 0xabcde: %02x %02x %02x %02x",
	       h[0], h[1], h[2], h[3]);
	REQUIRE(be16(h + 4) == 8 + 12 + 8 + 4 + 1024 + 4, "payload length %u", be16(h + 4));
	REQUIRE(h[6] == 17 && h[7] == 64, "next header %u, hop limit %u", h[6], h[7]);
	REQUIRE(!memcmp(h + 8, sgid, 16) && !memcmp(h + 24, dgid, 16), "source and destination GID");
	/* An empty send: the receive is the header alone. */
	vt_recv(&x.b, &x.gsi, 9, 65536, WEFT_VERBS_GRH_SIZE);
	ud_send(&x, 3, 0, 0, dgid, WEFT_VWR_SEND_IMM, 5);
	expect_send(&x, 3, 0, 0);
	vt_cqe(&x.b, &e, 20 * MS);
	REQUIRE(e.wr_id == 9 && e.status == 0 && e.byte_len == WEFT_VERBS_GRH_SIZE &&
	       (e.flags & WEFT_VCQE_WITH_IMM) && e.imm_inv == 5, "zero-length UD send with imm");
	t_checked("UD receive over IPv6: real GRH (tclass, flow label, length, hop limit, GIDs), "
		  "NET_IPV6, immediate");
	weft_sim_free(x.s);
}

static void case_gid_errors(void)
{
	struct ctx x;
	uint8_t dgid[16];
	uint64_t d;

	setup(&x);
	vt_recv(&x.b, &x.gsi, 20, 65536, 1024);
	/* Source GID index not set: error CQE, the UD QP drains its SQ. */
	gid6(dgid, 2);
	ud_send(&x, 10, 64, 5, dgid, WEFT_VWR_SEND, 0);
	expect_send(&x, 10, WEFT_VWC_LOC_QP_OP_ERR, WEFT_R_GID_INVALID);
	REQUIRE(vt_qp_state(&x.a, UQ) == WEFT_VQPS_SQE, "UD QP not in SQE");
	{
		struct weft_vcmd k;

		memset(&k, 0, sizeof(k));
		k.u.mod.state = WEFT_VQPS_RTS;
		k.u.mod.cur_state = WEFT_VQPS_SQE;
		REQUIRE(wsv_modify(x.s, 0, UQ, WEFT_VQPA_STATE, &k) == 0, "SQE -> RTS");
	}
	/* An IPv4 source with an IPv6 destination. */
	ud_send(&x, 11, 64, 1, dgid, WEFT_VWR_SEND, 0);
	expect_send(&x, 11, WEFT_VWC_LOC_QP_OP_ERR, WEFT_R_GID_TYPE);
	{
		struct weft_vcmd k;

		memset(&k, 0, sizeof(k));
		k.u.mod.state = WEFT_VQPS_RTS;
		REQUIRE(wsv_modify(x.s, 0, UQ, WEFT_VQPA_STATE, &k) == 0, "SQE -> RTS");
	}
	/* A destination GID the receiver does not own: dropped and counted. */
	d = vt_drops(x.s, 1, WEFT_R_DGID_UNKNOWN);
	gid6(dgid, 77);
	ud_send(&x, 12, 64, 0, dgid, WEFT_VWR_SEND, 0);
	expect_send(&x, 12, 0, 0);
	vt_no_cqe(&x.b, 5 * MS);
	REQUIRE(vt_drops(x.s, 1, WEFT_R_DGID_UNKNOWN) == d + 1, "DGID_UNKNOWN not counted");
	/* The receiver's entry cleared: the same. */
	gid6(dgid, 2);
	REQUIRE(wsv_gid(x.s, 1, 0, NULL, 0) == 0, "clear b's GID 0");
	ud_send(&x, 13, 64, 0, dgid, WEFT_VWR_SEND, 0);
	expect_send(&x, 13, 0, 0);
	vt_no_cqe(&x.b, 5 * MS);
	REQUIRE(vt_drops(x.s, 1, WEFT_R_DGID_UNKNOWN) == d + 2, "cleared GID still matched");
	/* Still delivered to a GID it has. */
	gid4(dgid, 2);
	ud_send(&x, 14, 64, 1, dgid, WEFT_VWR_SEND, 0);
	expect_send(&x, 14, 0, 0);
	expect_recv(&x, 20, 64, WEFT_VCQE_NET_IPV4);
	t_checked("unset source GID and mixed GID types give LOC_QP_OP_ERR with the reason; "
		  "a foreign destination GID is dropped as DGID_UNKNOWN");
	weft_sim_free(x.s);
}

/* A forged UD packet whose address block is short or mixes types. */
static void case_forged(void)
{
	struct ctx x;
	uint8_t buf[WEFT_WIRE_MAX_FRAME];
	struct weft_vhdr h;
	struct weft_vaddr a;
	uint64_t bad = 0, typ;
	size_t n;

	setup(&x);
	vt_recv(&x.b, &x.gsi, 30, 65536, 1024);
	memset(&h, 0, sizeof(h));
	h.opcode = WEFT_VOP_UD_SEND;
	h.dst_qpn = WEFT_VERBS_GSI_QPN;
	h.src_qpn = UQ;
	h.qkey = WEFT_VERBS_GSI_QKEY;
	h.flags = WEFT_VF_FIRST | WEFT_VF_LAST;
	bad = vt_drops(x.s, 1, WEFT_R_BAD_HEADER);
	n = wsv_forge(buf, 0, 1, &h, "short", 5);
	REQUIRE(weft_core_receive(weft_sim_core(x.s, 1), buf, n) == 0, "inject");
	memset(&a, 0, sizeof(a));
	gid4(a.sgid, 1);
	gid6(a.dgid, 2);
	typ = vt_drops(x.s, 1, WEFT_R_GID_TYPE);
	n = wsv_forge(buf, 0, 1, &h, &a, sizeof(a));
	REQUIRE(weft_core_receive(weft_sim_core(x.s, 1), buf, n) == 0, "inject");
	vt_no_cqe(&x.b, 5 * MS);
	REQUIRE(vt_drops(x.s, 1, WEFT_R_BAD_HEADER) == bad + 1, "short address block not counted");
	REQUIRE(vt_drops(x.s, 1, WEFT_R_GID_TYPE) == typ + 1, "mixed GID types not counted");
	t_checked("forged UD packets: short address block (BAD_HEADER), IPv4 source to IPv6 "
		  "destination (GID_TYPE), no receive consumed");
	weft_sim_free(x.s);
}

static const struct vt_case cases[] = {
	{ "gid-table", case_gid_table },
	{ "grh-ipv4", case_grh_ipv4 },
	{ "grh-ipv6", case_grh_ipv6 },
	{ "gid-errors", case_gid_errors },
	{ "forged", case_forged },
};

int main(int argc, char **argv)
{
	return vt_main("ud", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
