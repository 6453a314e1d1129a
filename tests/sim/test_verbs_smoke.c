/* SPDX-License-Identifier: MIT */
#include "vt.h"

int main(void)
{
	struct weft_sim *s = vt_sim(2, 64u << 20, 1, 0, 0);
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_vcqe e;

	vt_node(s, 0, 1 << 20, 10, &a);
	vt_node(s, 1, 1 << 20, 10, &b);
	vt_rc(&a, 2, &b, 3, 8, NULL, &qa, &qb);
	vt_fill(a.mem, 1 << 20, 1);
	vt_recv(&b, &qb, 77, 0, 8192);
	vt_post(&a, &qa, 1, WEFT_VWR_SEND, 0, 5000, 0, 0, 0, 0);
	vt_cqe(&a, &e, 10000000);
	printf("a cqe wr %llu st %u op %u len %u\n", (unsigned long long)e.wr_id, e.status, e.opcode, e.byte_len);
	vt_cqe(&b, &e, 10000000);
	printf("b cqe wr %llu st %u op %u len %u\n", (unsigned long long)e.wr_id, e.status, e.opcode, e.byte_len);
	VCHECK(!memcmp(a.mem, b.mem, 5000), "send data");
	vt_post(&a, &qa, 2, WEFT_VWR_WRITE, 8192, 100000, b.buf + 8192, VT_MR, 0, 0);
	vt_cqe(&a, &e, 10000000);
	printf("a cqe wr %llu st %u op %u len %u\n", (unsigned long long)e.wr_id, e.status, e.opcode, e.byte_len);
	VCHECK(!memcmp(a.mem + 8192, b.mem + 8192, 100000), "write data");
	vt_fill(b.mem + 200000, 70000, 5);
	vt_post(&a, &qa, 3, WEFT_VWR_READ, 200000, 70000, b.buf + 200000, VT_MR, 0, 0);
	weft_sim_run_until(s, NULL, NULL, weft_sim_now(s) + 1000000);
	{ struct weft_vqpc q; wsv_query_qp(s, 0, 2, &q); printf("A st %u sq %u/%u/%u snd %u una %u reason %u\n", q.state, q.sq_prod, q.sq_ci, q.sq_next, q.snd_psn, q.snd_una, q.last_reason);
	wsv_query_qp(s, 1, 3, &q); printf("B st %u epsn %u rrq %u emsn %u reason %u\n", q.state, q.epsn, q.rrq_count, q.rd_emsn, q.last_reason); }
	for (unsigned r = 0; r < WEFT_R__COUNT; r++) if (vt_drops(s,0,r)||vt_drops(s,1,r)) printf("drop %u: %llu %llu\n", r, (unsigned long long)vt_drops(s,0,r), (unsigned long long)vt_drops(s,1,r));
	vt_cqe(&a, &e, 10000000);
	printf("a cqe wr %llu st %u op %u len %u\n", (unsigned long long)e.wr_id, e.status, e.opcode, e.byte_len);
	VCHECK(!memcmp(a.mem + 200000, b.mem + 200000, 70000), "read data");
	weft_sim_free(s);
	return 0;
}
