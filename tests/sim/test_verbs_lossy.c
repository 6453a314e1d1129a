/* SPDX-License-Identifier: MIT */
/*
 * Verbs RC over a lossy, reordering fabric (docs/hw-spec.md 16.9): 10%
 * of the frames dropped and a delay jitter 25 times the base delay, so
 * frames arrive in any order.  For every size from 1 byte to 16 MiB, one
 * batch of send (with a posted receive), RDMA write, write with
 * immediate, RDMA read, compare-and-swap and fetch-and-add: every byte
 * must arrive exactly, every WQE must end in exactly one good CQE, in
 * posting order, and retransmissions must show in the counters.
 */
#include "vt.h"

#define MIB             (1ull << 20)
#define REGION          (16 * MIB)

static const uint64_t sizes[] = {
	1, 7, 1023, 1024, 1025, 4096, 65539, 1 * MIB + 17, 16 * MIB,
};

int main(void)
{
	struct weft_sim *s = vt_sim(2, 160 * MIB, 11, 100000, 50000);
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_vcqe e[8];
	uint64_t wr = 1, atom_a = 3 * REGION, atom_b = 3 * REGION, old = 0x1000;
	unsigned int i, k;
	t_begin("RC over 10%% loss and reordering, 1 B to 16 MiB, every operation");

	vt_node(s, 0, 3 * REGION + 4096, 12, &a);
	vt_node(s, 1, 3 * REGION + 4096, 12, &b);
	vt_rc(&a, 2, &b, 5, 8, NULL, &qa, &qb);
	memcpy(b.mem + atom_b, &old, 8);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = sizes[i], first = wr, v;

		/* A: [0,16M) send source, [16M,32M) write source, [32M,48M) read target.
		 * B: [0,16M) receive target, [16M,32M) write target, [32M,48M) read source. */
		vt_fill(a.mem, n, 10 * i + 1);
		vt_fill(a.mem + REGION, n, 10 * i + 2);
		vt_fill(b.mem + 2 * REGION, n, 10 * i + 3);
		memset(b.mem, 0, n);
		memset(b.mem + REGION, 0, n);
		memset(a.mem + 2 * REGION, 0, n);
		vt_recv(&b, &qb, 1000 + wr, 0, n);
		vt_recv(&b, &qb, 2000 + wr, 0, 0);
		vt_post(&a, &qa, wr++, WEFT_VWR_SEND, 0, n, 0, 0, 0, 0);
		vt_post(&a, &qa, wr++, WEFT_VWR_WRITE, REGION, n, b.buf + REGION, VT_MR, 0, 0);
		vt_post(&a, &qa, wr++, WEFT_VWR_WRITE_IMM, REGION, n, b.buf + REGION, VT_MR,
			0xabc0 + i, 0);
		vt_post(&a, &qa, wr++, WEFT_VWR_READ, 2 * REGION, n, b.buf + 2 * REGION, VT_MR, 0, 0);
		{
			struct weft_vwqe w;
			struct weft_vsge sg = { .addr = a.buf + atom_a, .length = 8, .lkey = VT_MR };

			memset(&w, 0, sizeof(w));
			w.wr_id = wr++;
			w.opcode = WEFT_VWR_CAS;
			w.flags = WEFT_VWQE_SIGNALED;
			w.u.rdma.remote_addr = b.buf + atom_b;
			w.u.rdma.rkey = VT_MR;
			w.u.rdma.compare_add = old;
			w.u.rdma.swap = old + 5;
			REQUIRE(wsv_post_send(s, &qa, &w, &sg, 1, true) == 0, "post CAS");
			w.wr_id = wr++;
			w.opcode = WEFT_VWR_FAA;
			w.u.rdma.compare_add = 3;
			sg.addr += 8;
			REQUIRE(wsv_post_send(s, &qa, &w, &sg, 1, true) == 0, "post FAA");
		}
		k = wsv_wait(s, &a.cq, e, 6, 60ull * 1000000000ull);
		REQUIRE(k == 6, "size %llu: %u of 6 requester CQEs", (unsigned long long)n, k);
		for (k = 0; k < 6; k++) {
			REQUIRE(e[k].wr_id == first + k, "size %llu: CQE %u has wr_id %llu, want %llu",
			       (unsigned long long)n, k, (unsigned long long)e[k].wr_id,
			       (unsigned long long)(first + k));
			REQUIRE(e[k].status == WEFT_VWC_SUCCESS && e[k].qpn == 2,
			       "size %llu: CQE %u status %u reason %u", (unsigned long long)n, k,
			       e[k].status, e[k].byte_len);
		}
		REQUIRE(wsv_wait(s, &b.cq, e, 2, 1000000000ull) == 2, "responder CQEs");
		REQUIRE(e[0].wr_id == first + 1000 - 0 && e[0].opcode == WEFT_VWC_RECV &&
		       e[0].byte_len == n && e[0].status == 0, "receive CQE of the send");
		REQUIRE(e[1].wr_id == 2000 + first && e[1].opcode == WEFT_VWC_RECV_RDMA_IMM &&
		       (e[1].flags & WEFT_VCQE_WITH_IMM) && e[1].imm_inv == 0xabc0 + i &&
		       e[1].byte_len == n, "receive CQE of the write with immediate");
		REQUIRE(!memcmp(a.mem, b.mem, n), "size %llu: send data", (unsigned long long)n);
		REQUIRE(!memcmp(a.mem + REGION, b.mem + REGION, n), "size %llu: write data",
		       (unsigned long long)n);
		REQUIRE(!memcmp(a.mem + 2 * REGION, b.mem + 2 * REGION, n), "size %llu: read data",
		       (unsigned long long)n);
		memcpy(&v, a.mem + atom_a, 8);
		REQUIRE(v == old, "CAS returned %llu, want %llu", (unsigned long long)v,
		       (unsigned long long)old);
		memcpy(&v, a.mem + atom_a + 8, 8);
		REQUIRE(v == old + 5, "FAA returned %llu, want %llu", (unsigned long long)v,
		       (unsigned long long)(old + 5));
		old += 8;
		memcpy(&v, b.mem + atom_b, 8);
		REQUIRE(v == old, "remote word %llu, want %llu", (unsigned long long)v,
		       (unsigned long long)old);
		t_checked("size %llu: send, write, write+imm, read, CAS, FAA byte-exact, "
		       "8 CQEs in order", (unsigned long long)n);
	}
	REQUIRE(vt_cnt(s, 0, WEFT_CNT_V_RETRANSMITS) + vt_cnt(s, 1, WEFT_CNT_V_RETRANSMITS) > 0,
	       "no retransmission counted");
	REQUIRE(vt_cnt(s, 1, WEFT_CNT_V_NAKS_TX) > 0 && vt_cnt(s, 0, WEFT_CNT_V_TIMEOUTS) > 0,
	       "no NAK or timeout counted");
	t_checked("retransmitted %llu packets, %llu NAKs, %llu timeouts, %llu placed ahead,"
	       " %llu duplicate reads served",
	       (unsigned long long)vt_cnt(s, 0, WEFT_CNT_V_RETRANSMITS),
	       (unsigned long long)vt_cnt(s, 1, WEFT_CNT_V_NAKS_TX),
	       (unsigned long long)vt_cnt(s, 0, WEFT_CNT_V_TIMEOUTS),
	       (unsigned long long)vt_cnt(s, 1, WEFT_CNT_V_OOO_PLACED),
	       (unsigned long long)vt_cnt(s, 1, WEFT_CNT_V_DUP_READS));
	weft_sim_free(s);
	return t_done();
}
