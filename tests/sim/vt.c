/* SPDX-License-Identifier: MIT */
#include "vt.h"

struct weft_sim *vt_sim(unsigned int nodes, uint64_t mem, uint64_t seed,
			uint32_t drop_ppm, uint64_t jitter_ns)
{
	struct weft_sim_config cfg = {
		.nr_nodes = nodes, .mem_size = mem, .seed = seed,
		.faults = { .routes = 1, .delay_ns = 2000, .drop_ppm = drop_ppm,
			    .jitter_ns = jitter_ns },
		.nr_rcxt = 16,
	};
	char err[160] = "";
	struct weft_sim *s = weft_sim_new(&cfg, err, sizeof(err));

	REQUIRE(s != NULL, "weft_sim_new: %s", err);
	return s;
}

void vt_node(struct weft_sim *s, unsigned int id, uint64_t len, uint32_t cq_log2,
	     struct vt_node *out)
{
	int st;

	memset(out, 0, sizeof(*out));
	out->s = s;
	out->id = id;
	REQUIRE(wsv_pd(s, id, VT_PD) == 0, "node %u: create PD", id);
	st = wsv_cq_create(s, id, VT_CQ, cq_log2, 0, &out->cq);
	REQUIRE(st == 0, "node %u: create CQ: %d", id, st);
	out->len = len;
	out->buf = weft_sim_alloc(s, id, len, 4096);
	REQUIRE(out->buf, "node %u: buffer of %llu bytes", id, (unsigned long long)len);
	out->mem = weft_sim_ptr(s, id, out->buf, len);
	st = wsv_reg_mr(s, id, VT_MR, VT_PD, out->buf, out->buf, len,
			WEFT_VACC_ALL, WEFT_ATT_DIRECT, 12);
	REQUIRE(st == 0, "node %u: register the buffer: %d", id, st);
}

void vt_rc(struct vt_node *a, uint32_t qa, struct vt_node *b, uint32_t qb, uint32_t log2,
	   const struct wsv_rc_params *p, struct wsv_qp *oa, struct wsv_qp *ob)
{
	int st;

	st = wsv_qp_create(a->s, a->id, qa, WEFT_VQPT_RC, VT_PD, VT_CQ, VT_CQ, log2, log2,
			   WEFT_VQPF_SQ_REG, oa);
	REQUIRE(st == 0, "create QP %u on node %u: %d", qa, a->id, st);
	st = wsv_qp_create(b->s, b->id, qb, WEFT_VQPT_RC, VT_PD, VT_CQ, VT_CQ, log2, log2,
			   WEFT_VQPF_SQ_REG, ob);
	REQUIRE(st == 0, "create QP %u on node %u: %d", qb, b->id, st);
	st = wsv_connect(a->s, oa, ob, p);
	REQUIRE(st == 0, "connect: %d", st);
}

void vt_post(struct vt_node *n, struct wsv_qp *q, uint64_t wr_id, unsigned int op,
	     uint64_t off, uint64_t len, uint64_t raddr, uint32_t rkey, uint32_t imm_inv,
	     unsigned int flags)
{
	struct weft_vwqe w;
	struct weft_vsge sg = { .addr = n->buf + off, .length = (uint32_t)len, .lkey = VT_MR };

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = (uint8_t)op;
	w.flags = (uint8_t)(flags | WEFT_VWQE_SIGNALED);
	w.imm_inv = imm_inv;
	w.u.rdma.remote_addr = raddr;
	w.u.rdma.rkey = rkey;
	REQUIRE(wsv_post_send(n->s, q, &w, &sg, len || op == WEFT_VWR_CAS ||
			     op == WEFT_VWR_FAA ? 1 : 0, true) == 0, "post");
}

void vt_recv(struct vt_node *n, struct wsv_qp *q, uint64_t wr_id, uint64_t off, uint64_t len)
{
	struct weft_vsge sg = { .addr = n->buf + off, .length = (uint32_t)len, .lkey = VT_MR };

	REQUIRE(wsv_post_recv(n->s, q, wr_id, &sg, 1) == 0, "post recv");
}

void vt_cqe(struct vt_node *n, struct weft_vcqe *e, uint64_t deadline_ns)
{
	REQUIRE(wsv_wait(n->s, &n->cq, e, 1, deadline_ns) == 1, "node %u: no CQE in time", n->id);
}

void vt_no_cqe(struct vt_node *n, uint64_t ns)
{
	struct weft_vcqe e = { 0 };

	REQUIRE(wsv_wait(n->s, &n->cq, &e, 1, ns) == 0,
	       "node %u: unexpected CQE wr_id %llu status %u", n->id,
	       (unsigned long long)e.wr_id, e.status);
}

void vt_fill(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

uint64_t vt_cnt(struct weft_sim *s, unsigned int node, unsigned int counter)
{
	return weft_sim_counter(s, node, counter);
}

uint64_t vt_drops(struct weft_sim *s, unsigned int node, unsigned int reason)
{
	return weft_sim_counter(s, node, WEFT_CNT_DROP(reason));
}

unsigned int vt_qp_state(struct vt_node *n, uint32_t qpn)
{
	struct weft_vqpc q;

	REQUIRE(wsv_query_qp(n->s, n->id, qpn, &q) == 0, "query QP %u", qpn);
	return q.state;
}

int vt_main(const char *kind, const struct vt_case *cases, unsigned int n, int argc,
	    char **argv)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (argc < 2 || !strcmp(argv[1], cases[i].name)) {
			t_begin("%s %s", kind, cases[i].name);
			cases[i].fn();
			if (argc >= 2)
				return t_done();
		}
	}
	if (argc >= 2)
		t_bail("unknown case %s", argv[1]);
	return t_done();
}
