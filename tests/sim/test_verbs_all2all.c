/* SPDX-License-Identifier: MIT */
/*
 * Verbs RC all-to-all among 16 sim nodes: every node has one RC QP to
 * every other node (15 per node, one shared CQ) and RDMA-writes a
 * distinct 96 KiB pattern into its own slot of every peer's buffer, all
 * at once over a fabric that drops 1% and reorders; every slot must be
 * byte-exact and every write must complete once, successfully.
 */
#include "vt.h"

#define NODES   16u
#define SLOT    (96u * 1024u)
#define MS      1000000ull

int main(void)
{
	struct weft_sim *s = vt_sim(NODES, 16u << 20, 9, 10000, 5000);
	static struct vt_node n[NODES];
	static struct wsv_qp q[NODES][NODES];
	struct weft_vcqe e[NODES];
	unsigned int i, j, got;
	t_begin("16-node all-to-all RC writes");

	for (i = 0; i < NODES; i++)
		vt_node(s, i, 2u * NODES * SLOT, 8, &n[i]);
	for (i = 0; i < NODES; i++)
		for (j = i + 1; j < NODES; j++)
			vt_rc(&n[i], 100 + j, &n[j], 100 + i, 4, NULL, &q[i][j], &q[j][i]);
	for (i = 0; i < NODES; i++) {
		/* Source: [NODES * SLOT + j * SLOT) holds what i writes to j. */
		for (j = 0; j < NODES; j++)
			vt_fill(n[i].mem + (NODES + j) * SLOT, SLOT, i * 100 + j);
	}
	for (i = 0; i < NODES; i++)
		for (j = 0; j < NODES; j++)
			if (i != j)
				vt_post(&n[i], &q[i][j], j, WEFT_VWR_WRITE, (NODES + j) * SLOT,
					SLOT, n[j].buf + i * SLOT, VT_MR, 0, 0);
	for (i = 0; i < NODES; i++) {
		uint32_t seen = 0;

		got = wsv_wait(s, &n[i].cq, e, NODES - 1, 5000 * MS);
		REQUIRE(got == NODES - 1, "node %u: %u CQEs of %u", i, got, NODES - 1);
		for (j = 0; j < got; j++) {
			REQUIRE(e[j].status == 0, "node %u: status %u", i, e[j].status);
			REQUIRE(!(seen & (1u << e[j].wr_id)), "node %u: two CQEs for one write", i);
			seen |= 1u << e[j].wr_id;
		}
	}
	for (j = 0; j < NODES; j++)
		for (i = 0; i < NODES; i++)
			if (i != j)
				REQUIRE(!memcmp(n[j].mem + i * SLOT, n[i].mem + (NODES + j) * SLOT, SLOT),
				       "slot of %u at %u differs", i, j);
	t_checked("16 nodes, 240 RC writes of 96 KiB, byte-exact, one CQE each "
	       "(%llu retransmissions)", (unsigned long long)vt_cnt(s, 0, WEFT_CNT_V_RETRANSMITS));
	weft_sim_free(s);
	return t_done();
}
