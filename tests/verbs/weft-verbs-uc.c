// SPDX-License-Identifier: MIT
/*
 * UC queue pairs (issue 20, docs/rdma-provider.md "Tests"): node1 sends
 * to node0 over a UC QP a SEND of several packets, a SEND with immediate,
 * an RDMA WRITE of several packets and a WRITE with immediate; node0
 * finds them byte-exact with their completions.  RDMA READ, the atomics
 * and SEND with invalidate on UC are refused by ibv_post_send (EINVAL,
 * bad_wr set, as rxe), and the QP goes on working.
 *
 * Usage: weft-verbs-uc -s -g GIDX (node0) | -c NODE0_ADDR -g GIDX (node1)
 */
#include "vt.h"

#define BUF 262144
#define RSLOT 16384		/* bytes per receive WQE */
#define S_LEN 10000		/* SEND, 3 packets of 4096 (hw-spec 16.9) */
#define SI_LEN 16
#define W_OFF 65536
#define W_LEN 32768		/* WRITE, 8 packets */
#define WI_OFF 131072
#define WI_LEN 700
#define IMM_S 0xa1b2c3d4u
#define IMM_W 0x01020304u
#define SEED 0x5a

/* A UC QP of pd on cq, connected to the peer's (both sides call it at the
 * same step): INIT, RTR (AV, PATH_MTU, DEST_QPN, RQ_PSN), RTS (SQ_PSN). */
static struct ibv_qp *uc_connect(struct vt *v, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct vt_msg mine = {}, peer;
	struct ibv_qp_attr a = {};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		t_bail("ibv_create_qp(IBV_QPT_UC): errno %d", errno);
	mine.qpn = qp->qp_num;
	mine.psn = v->next_psn;
	memcpy(mine.gid, v->gid.raw, 16);
	vt_xchg(v, &mine, &peer);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		t_bail("UC INIT: errno %d", errno);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = peer.qpn;
	a.rq_psn = peer.psn;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = (uint8_t)v->gidx;
	a.ah_attr.grh.hop_limit = 64;
	memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN))
		t_bail("UC RTR: errno %d", errno);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = mine.psn;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		t_bail("UC RTS: errno %d", errno);
	vt_sync(v, 0x0c);
	return qp;
}

/* The device, the exchange socket, a PD, a CQ of 16 and a BUF-byte buffer. */
static void uc_open(struct vt *v, struct ibv_pd **pd, struct ibv_cq **cq, uint8_t **buf)
{
	vt_open(v);
	vt_sock(v);
	*pd = ibv_alloc_pd(v->ctx);
	*cq = ibv_create_cq(v->ctx, 16, NULL, NULL, 0);
	*buf = aligned_alloc(4096, BUF);
	if (!*pd || !*cq || !*buf)
		t_bail("PD, CQ or buffer");
}

static void server(struct vt *v)
{
	struct vt_msg me = {}, peer;
	struct ibv_wc wc[3];
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint8_t *buf;
	int i, n = 0;

	uc_open(v, &pd, &cq, &buf);
	memset(buf, 0, BUF);
	mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		t_bail("ibv_reg_mr: errno %d", errno);
	qp = uc_connect(v, pd, cq);
	for (i = 0; i < 3; i++) {
		struct ibv_sge sge = { (uintptr_t)buf + (uint64_t)i * RSLOT, RSLOT, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 10u + (unsigned int)i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(qp, &wr, &bad))
			t_bail("ibv_post_recv");
	}
	me.addr = (uintptr_t)buf;
	me.rkey = mr->rkey;
	vt_xchg(v, &me, &peer);
	vt_sync(v, 1);
	t_begin("node0: UC receives");
	for (i = 0; i < 3 && n < 3; i++)
		n += vt_poll(cq, &wc[n]);
	CHECK(n == 3, "%d receive completions of 3", n);
	if (n == 3) {
		CHECK(wc[0].wr_id == 10 && wc[0].status == IBV_WC_SUCCESS &&
		      wc[0].opcode == IBV_WC_RECV && wc[0].byte_len == S_LEN &&
		      !(wc[0].wc_flags & IBV_WC_WITH_IMM), "SEND: id %llu %s op %d len %u",
		      (unsigned long long)wc[0].wr_id, vt_status(wc[0].status), wc[0].opcode,
		      wc[0].byte_len);
		CHECK(wc[1].wr_id == 11 && wc[1].status == IBV_WC_SUCCESS &&
		      wc[1].byte_len == SI_LEN && (wc[1].wc_flags & IBV_WC_WITH_IMM) &&
		      be32toh(wc[1].imm_data) == IMM_S, "SEND_IMM: id %llu %s len %u imm %#x",
		      (unsigned long long)wc[1].wr_id, vt_status(wc[1].status), wc[1].byte_len,
		      be32toh(wc[1].imm_data));
		CHECK(wc[2].wr_id == 12 && wc[2].status == IBV_WC_SUCCESS &&
		      wc[2].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
		      (wc[2].wc_flags & IBV_WC_WITH_IMM) && be32toh(wc[2].imm_data) == IMM_W,
		      "WRITE_IMM: id %llu %s op %d imm %#x", (unsigned long long)wc[2].wr_id,
		      vt_status(wc[2].status), wc[2].opcode, be32toh(wc[2].imm_data));
	}
	CHECK(vt_diff(buf, S_LEN, SEED, 0) < 0, "SEND data at %ld", vt_diff(buf, S_LEN, SEED, 0));
	CHECK(vt_diff(buf + RSLOT, SI_LEN, SEED, 100) < 0, "SEND_IMM data");
	CHECK(vt_diff(buf + W_OFF, W_LEN, SEED, W_OFF) < 0, "WRITE data at %ld",
	      vt_diff(buf + W_OFF, W_LEN, SEED, W_OFF));
	CHECK(vt_diff(buf + WI_OFF, WI_LEN, SEED, WI_OFF) < 0, "WRITE_IMM data");
	t_checked("node0: over UC, a SEND of %d B (3 packets), a SEND_IMM, a WRITE of %d B (8 packets) and a WRITE_IMM landed byte-exact with their receive completions (opcode, length, immediate)",
		  S_LEN, W_LEN);
	vt_sync(v, 2);
	t_begin("node0: UC after the refused requests");
	/* A UC sender completes once it has sent: the bytes may still be on
	 * their way. */
	for (i = 0; i < 500 && vt_diff(buf + WI_OFF + WI_LEN, 64, SEED, 7) >= 0; i++)
		usleep(10000);
	CHECK(vt_diff(buf + WI_OFF + WI_LEN, 64, SEED, 7) < 0, "the last WRITE");
	n = ibv_poll_cq(cq, 1, wc);
	CHECK(n == 0, "a completion after them: %llu", (unsigned long long)wc[0].wr_id);
	t_checked("node0: a WRITE posted after node1's refused READ, atomics and SEND with invalidate landed");
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(v->ctx);
}

/* One signaled request on qp: 0 and its completion status in *st, or the
 * errno ibv_post_send returned. */
static int post(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_send_wr *wr, int *st)
{
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc;
	int r = ibv_post_send(qp, wr, &bad);

	if (r)
		return bad == wr ? r : -1;
	*st = vt_poll(cq, &wc) ? (int)wc.status : -1;
	if (*st >= 0 && wc.wr_id != wr->wr_id)
		*st = -3;
	return 0;
}

static void client(struct vt *v)
{
	struct vt_msg me = {}, peer;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint8_t *buf;
	int r, st = -1, i;

	uc_open(v, &pd, &cq, &buf);
	vt_fill(buf, BUF, SEED);
	mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		t_bail("ibv_reg_mr: errno %d", errno);
	qp = uc_connect(v, pd, cq);
	vt_xchg(v, &me, &peer);

	t_begin("node1: UC SEND, SEND_IMM, WRITE, WRITE_IMM");
	{
		struct ibv_sge sg[4] = {
			{ (uintptr_t)buf, S_LEN, mr->lkey },
			{ (uintptr_t)buf + 100, SI_LEN, mr->lkey },
			{ (uintptr_t)buf + W_OFF, W_LEN, mr->lkey },
			{ (uintptr_t)buf + WI_OFF, WI_LEN, mr->lkey },
		};
		struct ibv_send_wr wr[4] = {
			{ .wr_id = 1, .sg_list = &sg[0], .num_sge = 1, .opcode = IBV_WR_SEND },
			{ .wr_id = 2, .sg_list = &sg[1], .num_sge = 1,
			  .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htobe32(IMM_S) },
			{ .wr_id = 3, .sg_list = &sg[2], .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			  .wr.rdma = { peer.addr + W_OFF, peer.rkey } },
			{ .wr_id = 4, .sg_list = &sg[3], .num_sge = 1,
			  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .imm_data = htobe32(IMM_W),
			  .wr.rdma = { peer.addr + WI_OFF, peer.rkey } },
		};

		for (i = 0; i < 4; i++) {
			wr[i].send_flags = IBV_SEND_SIGNALED;
			r = post(qp, cq, &wr[i], &st);
			CHECK(!r && st == IBV_WC_SUCCESS, "request %d: post %s, completion %s", i + 1,
			      vt_en(r), vt_status(st));
		}
	}
	t_checked("node1: UC SEND (%d B), SEND_IMM, WRITE (%d B) and WRITE_IMM: each completes successfully without an ACK",
		  S_LEN, W_LEN);
	vt_sync(v, 1);

	t_begin("node1: RDMA READ, atomics and SEND with invalidate on UC");
	{
		uint64_t *word = (uint64_t *)(buf + 60000);
		struct ibv_sge sge = { (uintptr_t)word, 8, mr->lkey };
		static const enum ibv_wr_opcode ops[] = { IBV_WR_RDMA_READ,
			IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_SEND_WITH_INV };

		for (i = 0; i < 4; i++) {
			struct ibv_send_wr wr = { .wr_id = 20u + (unsigned int)i, .sg_list = &sge,
						  .num_sge = 1, .opcode = ops[i],
						  .send_flags = IBV_SEND_SIGNALED };

			wr.wr.atomic.remote_addr = peer.addr;
			wr.wr.atomic.rkey = peer.rkey;
			r = post(qp, cq, &wr, &st);
			CHECK(r == EINVAL, "opcode %d: %s", ops[i], vt_en(r));
		}
		{
			struct ibv_sge s2 = { (uintptr_t)buf + 7, 64, mr->lkey };
			struct ibv_send_wr wr = { .wr_id = 30, .sg_list = &s2, .num_sge = 1,
						  .opcode = IBV_WR_RDMA_WRITE,
						  .send_flags = IBV_SEND_SIGNALED,
						  .wr.rdma = { peer.addr + WI_OFF + WI_LEN, peer.rkey } };

			r = post(qp, cq, &wr, &st);
			CHECK(!r && st == IBV_WC_SUCCESS, "a WRITE after them: %s, %s", vt_en(r),
			      vt_status(st));
		}
	}
	t_checked("node1: ibv_post_send of RDMA READ, CMP_SWP, FETCH_ADD and SEND_WITH_INV on UC: EINVAL with bad_wr set; a WRITE after them succeeds");
	vt_sync(v, 2);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(v->ctx);
}

int main(int argc, char **argv)
{
	return vt_run(argc, argv, server, client);
}
