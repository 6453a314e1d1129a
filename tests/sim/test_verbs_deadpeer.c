/* SPDX-License-Identifier: MIT */
/*
 * Verbs RC with a peer that goes silent (its fabric port down): the
 * requester retransmits retry_cnt times, then the oldest WQE completes
 * with RETRY_EXC_ERR, the QP goes to ERR and every other posted WQE and
 * receive flushes; the sim then goes idle (nothing hangs, no timer left).
 */
#include "vt.h"

#define MS      1000000ull

int main(void)
{
	struct weft_sim *s = vt_sim(2, 32u << 20, 5, 0, 0);
	struct wsv_rc_params p = { .timeout = 8, .retry_cnt = 3 };
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_vcqe e[8];
	unsigned int n, i;
	t_begin("a silent peer ends in retry-exceeded and flushes");

	vt_node(s, 0, 1u << 20, 8, &a);
	vt_node(s, 1, 1u << 20, 8, &b);
	vt_rc(&a, 2, &b, 3, 6, &p, &qa, &qb);
	vt_post(&a, &qa, 1, WEFT_VWR_WRITE, 0, 4096, b.buf, VT_MR, 0, 0);
	REQUIRE(wsv_wait(s, &a.cq, e, 1, 50 * MS) == 1 && e[0].status == 0, "write while alive");
	REQUIRE(weft_fabric_set_port_up(weft_sim_fabric(s), 1, false) == 0, "port down");
	vt_recv(&a, &qa, 9, 0, 64);
	vt_post(&a, &qa, 2, WEFT_VWR_WRITE, 0, 100000, b.buf, VT_MR, 0, 0);
	vt_post(&a, &qa, 3, WEFT_VWR_READ, 0, 4096, b.buf, VT_MR, 0, 0);
	vt_post(&a, &qa, 4, WEFT_VWR_SEND, 0, 64, 0, 0, 0, 0);
	n = wsv_wait(s, &a.cq, e, 4, 2000 * MS);
	REQUIRE(n == 4, "%u CQEs of 4", n);
	for (i = 0; i < 4; i++) {
		if (e[i].wr_id == 2)
			REQUIRE(e[i].status == WEFT_VWC_RETRY_EXC_ERR &&
			       e[i].byte_len == WEFT_R_RETRY_EXCEEDED, "oldest: status %u", e[i].status);
		else
			REQUIRE(e[i].status == WEFT_VWC_WR_FLUSH_ERR, "wr %llu: status %u",
			       (unsigned long long)e[i].wr_id, e[i].status);
	}
	REQUIRE(vt_qp_state(&a, 2) == WEFT_VQPS_ERR, "QP not in ERR");
	REQUIRE(vt_cnt(s, 0, WEFT_CNT_V_TIMEOUTS) == 4, "timeouts %llu, want retry_cnt + 1",
	       (unsigned long long)vt_cnt(s, 0, WEFT_CNT_V_TIMEOUTS));
	REQUIRE(weft_sim_run_idle(s, 1000000), "the sim did not go idle");
	t_checked("silent peer: %llu timeouts, RETRY_EXC_ERR, 3 flushes, QP in ERR, idle at "
	       "%.3f ms", (unsigned long long)vt_cnt(s, 0, WEFT_CNT_V_TIMEOUTS),
	       weft_sim_now(s) / 1e6);
	weft_sim_free(s);
	return t_done();
}
