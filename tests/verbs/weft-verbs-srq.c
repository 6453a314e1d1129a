// SPDX-License-Identifier: MIT
/*
 * Shared receive queues and inline data through libibverbs (issue 20,
 * docs/rdma-provider.md "Tests").  node0 creates an SRQ and two RC QPs
 * on it; node1 sends over two QPs, one of them with inline data.  node0
 * checks: the device's SRQ limits, every message in some SRQ WQE
 * byte-exact and completed on the QP it came over, the limit event once
 * the WQEs left fall below the armed limit, post_recv refused on an SRQ
 * QP, the last-WQE event when a QP on the SRQ goes to ERR while the SRQ's
 * other WQEs stay for the other QP, and the destroy order (EBUSY while a
 * QP is attached).  node1 checks max_inline_data and that an inline
 * buffer may be reused as soon as ibv_post_send returns, and reads its
 * completions through the extended CQ API (ibv_create_cq_ex,
 * ibv_start_poll / ibv_next_poll / ibv_end_poll, ibv_wc_read_*); its
 * first QP is made with ibv_create_qp_ex and posts through the extended
 * QP API (ibv_wr_start, ibv_wr_send, ibv_wr_set_sge, ibv_wr_complete).
 *
 * Usage: weft-verbs-srq -s -g GIDX (node0) | -c NODE0_ADDR -g GIDX (node1)
 */
#include <poll.h>

#include "vt.h"

#define NWQE 16			/* WQEs node0 posts first */
#define SLOT 4096		/* bytes of each WQE's buffer */
#define NMSG 10			/* messages of the first round */
#define LIMIT 8			/* the armed SRQ limit */
#define INL 128			/* inline bytes node1 sends */
#define QP_ACC (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* Message i: (i + 1) * 333 bytes of pattern 0x20 + i; the inline one is
 * INL bytes of pattern 0x77, the last one 512 bytes of pattern 0x66. */
static uint32_t msg_len(unsigned int i)
{
	return (i + 1) * 333u;
}

/* The next asynchronous event within 5 s: its type, or -1. */
static int async_event(struct ibv_context *ctx, void **elem)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int type;

	if (poll(&p, 1, 5000) != 1 || ibv_get_async_event(ctx, &ev))
		return -1;
	type = ev.event_type;
	*elem = type == IBV_EVENT_SRQ_LIMIT_REACHED ? (void *)ev.element.srq :
		(void *)ev.element.qp;
	ibv_ack_async_event(&ev);
	return type;
}

static struct ibv_qp *srq_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &a);

	if (!qp)
		t_bail("ibv_create_qp (RC on the SRQ): errno %d", errno);
	return qp;
}

static void post_srq(struct ibv_srq *srq, struct ibv_mr *mr, uint8_t *buf, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)buf + wr_id * SLOT, SLOT, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;
	int r = ibv_post_srq_recv(srq, &wr, &bad);

	if (r)
		t_bail("ibv_post_srq_recv: %s", vt_en(r));
}

/* The message of byte_len len and pattern seed in WQE wr_id's buffer. */
static int holds(const uint8_t *buf, uint64_t wr_id, uint32_t len, uint8_t seed)
{
	return vt_diff(buf + wr_id * SLOT, len, seed, 0) < 0;
}

static void server(struct vt *v)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 2 * NWQE, .max_sge = 1 } };
	struct ibv_srq_attr q, lim = { .srq_limit = LIMIT };
	struct ibv_recv_wr rwr = { .wr_id = 99 }, *rbad;
	struct ibv_qp *qp[2];
	struct ibv_wc wc;
	struct ibv_srq *srq, *big;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint32_t used = 0;
	void *elem = NULL;
	unsigned int i, m, on[2] = { 0, 0 };
	int r, ev;

	vt_open(v);
	t_diag("device %s: max_srq %d, max_srq_wr %d, max_srq_sge %d",
	       ibv_get_device_name(v->ctx->device), v->attr.max_srq, v->attr.max_srq_wr,
	       v->attr.max_srq_sge);
	t_begin("node0: the device's SRQ limits");
	CHECK(v->attr.max_srq > 0 && v->attr.max_srq_wr >= 1024 && v->attr.max_srq_sge >= 1,
	      "max_srq %d, max_srq_wr %d, max_srq_sge %d", v->attr.max_srq, v->attr.max_srq_wr,
	      v->attr.max_srq_sge);
	t_checked("node0: ibv_query_device: max_srq %d, max_srq_wr %d, max_srq_sge %d",
		  v->attr.max_srq, v->attr.max_srq_wr, v->attr.max_srq_sge);
	pd = ibv_alloc_pd(v->ctx);
	cq = ibv_create_cq(v->ctx, 64, NULL, NULL, 0);
	buf = aligned_alloc(4096, 2 * NWQE * SLOT);
	if (!pd || !cq || !buf)
		t_bail("PD, CQ or buffer");
	memset(buf, 0, 2 * NWQE * SLOT);
	mr = ibv_reg_mr(pd, buf, 2 * NWQE * SLOT, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		t_bail("ibv_reg_mr: errno %d", errno);

	t_begin("node0: ibv_create_srq and ibv_query_srq");
	srq = ibv_create_srq(pd, &sa);
	if (!srq)
		t_bail("ibv_create_srq: errno %d", errno);
	r = ibv_query_srq(srq, &q);
	CHECK(!r && q.max_wr >= 2 * NWQE && q.srq_limit == 0, "ibv_query_srq %s: max_wr %u limit %u",
	      vt_en(r), q.max_wr, q.srq_limit);
	sa.attr.max_wr = (uint32_t)v->attr.max_srq_wr + 1;
	errno = 0;
	big = ibv_create_srq(pd, &sa);
	CHECK(!big && errno == EINVAL, "an SRQ above max_srq_wr: errno %s", vt_en(errno));
	t_checked("node0: SRQ of %u WQEs, ibv_query_srq max_wr %u limit 0; max_srq_wr + 1 WQEs -> EINVAL",
		  2 * NWQE, q.max_wr);
	for (i = 0; i < NWQE; i++)
		post_srq(srq, mr, buf, i);
	t_begin("node0: arming the limit");
	r = ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT);
	CHECK(!r, "ibv_modify_srq(IBV_SRQ_LIMIT %d): %s", LIMIT, vt_en(r));
	q.max_wr = 64;
	r = ibv_modify_srq(srq, &q, IBV_SRQ_MAX_WR);
	CHECK(r == EOPNOTSUPP, "ibv_modify_srq(IBV_SRQ_MAX_WR): %s", vt_en(r));
	t_checked("node0: ibv_modify_srq limit %d with %d WQEs posted: success; resize -> EOPNOTSUPP",
		  LIMIT, NWQE);

	vt_sock(v);
	qp[0] = vt_connect_qp(v, srq_qp(pd, cq, srq), QP_ACC);
	qp[1] = vt_connect_qp(v, srq_qp(pd, cq, srq), QP_ACC);
	t_begin("node0: ibv_post_recv on a QP of the SRQ");
	r = ibv_post_recv(qp[0], &rwr, &rbad);
	CHECK(r == EINVAL, "ibv_post_recv: %s", vt_en(r));
	t_checked("node0: ibv_post_recv on a QP attached to an SRQ -> EINVAL");

	vt_sync(v, 1);		/* node1 sends NMSG messages, then the inline one */
	t_begin("node0: %d messages over 2 QPs into the SRQ", NMSG + 1);
	for (i = 0; i < NMSG + 1; i++) {
		if (!vt_poll(cq, &wc)) {
			CHECK(0, "message %u: no completion", i);
			break;
		}
		CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id < NWQE,
		      "completion %s, opcode %d, wr_id %llu", ibv_wc_status_str(wc.status),
		      wc.opcode, (unsigned long long)wc.wr_id);
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id >= NWQE)
			continue;
		CHECK(!(used & (1u << wc.wr_id)), "WQE %llu used twice", (unsigned long long)wc.wr_id);
		used |= 1u << wc.wr_id;
		CHECK(wc.qp_num == qp[0]->qp_num || wc.qp_num == qp[1]->qp_num, "qp_num %u",
		      wc.qp_num);
		on[wc.qp_num == qp[1]->qp_num]++;
		if (wc.byte_len == INL) {
			CHECK(holds(buf, wc.wr_id, INL, 0x77), "the inline message differs");
			continue;
		}
		m = wc.byte_len / 333u - 1;
		CHECK(m < NMSG && msg_len(m) == wc.byte_len && holds(buf, wc.wr_id, wc.byte_len,
								     (uint8_t)(0x20 + m)),
		      "WQE %llu: %u bytes, not message %u byte-exact", (unsigned long long)wc.wr_id,
		      wc.byte_len, m);
	}
	CHECK(on[0] && on[1], "completions on QP %u: %u, QP %u: %u", qp[0]->qp_num, on[0],
	      qp[1]->qp_num, on[1]);
	t_checked("node0: %d messages (333..3330 B and %d B inline) in %d distinct SRQ WQEs byte-exact, %u on QP %u and %u on QP %u",
		  NMSG + 1, INL, NMSG + 1, on[0], qp[0]->qp_num, on[1], qp[1]->qp_num);

	t_begin("node0: the SRQ limit event");
	ev = async_event(v->ctx, &elem);
	CHECK(ev == IBV_EVENT_SRQ_LIMIT_REACHED && elem == srq, "event %d (%s)", ev,
	      ev >= 0 ? ibv_event_type_str((enum ibv_event_type)ev) : "none in 5 s");
	r = ibv_query_srq(srq, &q);
	CHECK(!r && q.srq_limit == 0, "limit after the event: %u", q.srq_limit);
	t_checked("node0: IBV_EVENT_SRQ_LIMIT_REACHED once fewer than %d of %d WQEs were left; the limit reads 0 after it",
		  LIMIT, NWQE);

	t_begin("node0: a QP of the SRQ in ERR");
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		r = ibv_modify_qp(qp[0], &a, IBV_QP_STATE);
		CHECK(!r, "ibv_modify_qp(ERR): %s", vt_en(r));
	}
	ev = async_event(v->ctx, &elem);
	CHECK(ev == IBV_EVENT_QP_LAST_WQE_REACHED && elem == qp[0], "event %d (%s)", ev,
	      ev >= 0 ? ibv_event_type_str((enum ibv_event_type)ev) : "none in 5 s");
	t_checked("node0: QP %u to ERR: IBV_EVENT_QP_LAST_WQE_REACHED", qp[0]->qp_num);
	vt_sync(v, 2);		/* node1 sends once more over the other QP */
	t_begin("node0: the other QP still receives from the SRQ");
	r = vt_poll(cq, &wc);
	CHECK(r && wc.status == IBV_WC_SUCCESS && wc.qp_num == qp[1]->qp_num && wc.wr_id < NWQE &&
	      !(used & (1u << wc.wr_id)) && wc.byte_len == 512 &&
	      holds(buf, wc.wr_id, 512, 0x66),
	      "completion %s on QP %u, wr_id %llu, %u B",
	      r ? ibv_wc_status_str(wc.status) : "none", wc.qp_num,
	      (unsigned long long)wc.wr_id, wc.byte_len);
	t_checked("node0: after QP %u went to ERR, QP %u received 512 B byte-exact in an unused SRQ WQE (not flushed)",
		  qp[0]->qp_num, qp[1]->qp_num);
	vt_sync(v, 3);

	t_begin("node0: destroy order");
	r = ibv_destroy_srq(srq);
	CHECK(r == EBUSY, "ibv_destroy_srq with QPs attached: %s", vt_en(r));
	CHECK(!ibv_destroy_qp(qp[0]) && !ibv_destroy_qp(qp[1]), "ibv_destroy_qp: errno %d", errno);
	r = ibv_destroy_srq(srq);
	CHECK(!r, "ibv_destroy_srq: %s", vt_en(r));
	CHECK(!ibv_dereg_mr(mr) && !ibv_destroy_cq(cq) && !ibv_dealloc_pd(pd), "teardown errno %d",
	      errno);
	t_checked("node0: ibv_destroy_srq with QPs attached -> EBUSY; after the QPs, success; teardown clean");
	ibv_close_device(v->ctx);
}

/*
 * node1's completions through the extended API: the next one within
 * 10 s, its status (-1: none); opcode and QP number read back too.
 */
static int ex_poll(struct ibv_cq_ex *cq, uint64_t *wr_id, enum ibv_wc_opcode *op, uint32_t *qpn)
{
	struct ibv_poll_cq_attr pa = {};
	uint64_t end = vt_ms() + 10000;
	int r, st;

	while ((r = ibv_start_poll(cq, &pa)) == ENOENT && vt_ms() < end)
		;
	if (r)
		return -1;
	*wr_id = cq->wr_id;
	st = cq->status;
	*op = ibv_wc_read_opcode(cq);
	*qpn = ibv_wc_read_qp_num(cq);
	/* One completion at a time: the next one is not there yet. */
	r = ibv_next_poll(cq);
	ibv_end_poll(cq);
	return r == ENOENT ? st : -1;
}

/* A send over qp, read through the extended CQ API: its status. */
static int ex_send(struct ibv_qp *qp, struct ibv_cq_ex *cq, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	enum ibv_wc_opcode op = 0;
	uint64_t id = 0;
	uint32_t qpn = 0;
	int st;

	if (ibv_post_send(qp, wr, &bad))
		return -2;
	st = ex_poll(cq, &id, &op, &qpn);
	CHECK(st < 0 || (id == wr->wr_id && op == IBV_WC_SEND && qpn == qp->qp_num),
	      "extended CQ: wr_id %llu opcode %d qp %u, want %llu, SEND, %u",
	      (unsigned long long)id, op, qpn, (unsigned long long)wr->wr_id, qp->qp_num);
	return st;
}

/* Message i over qp[i & 1]: qp[0] through the extended QP API. */
static int send_msg(struct ibv_qp **qp, struct ibv_cq_ex *cq, unsigned int i, uint64_t addr,
		    uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { addr, len, lkey };
	struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp[0]);
	enum ibv_wc_opcode op = 0;
	uint32_t qpn = 0;
	uint64_t id = 0;
	int r, st;

	if (i & 1)
		return ex_send(qp[1], cq, &wr);
	ibv_wr_start(x);
	x->wr_id = i;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, lkey, addr, len);
	r = ibv_wr_complete(x);
	if (r)
		return -2;
	st = ex_poll(cq, &id, &op, &qpn);
	CHECK(st < 0 || (id == i && op == IBV_WC_SEND && qpn == qp[0]->qp_num),
	      "extended QP: wr_id %llu opcode %d qp %u", (unsigned long long)id, op, qpn);
	return st;
}

static void client(struct vt *v)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 1,
						.max_send_sge = 1, .max_recv_sge = 1,
						.max_inline_data = INL } };
	struct ibv_cq_init_attr_ex ca = { .cqe = 64, .wc_flags = IBV_WC_EX_WITH_QP_NUM |
					  IBV_WC_EX_WITH_BYTE_LEN };
	struct ibv_qp *qp[2], *huge;
	struct ibv_cq_ex *cqx, *bad_cq;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf, inl[INL];
	uint32_t granted;
	unsigned int i;

	vt_open(v);
	pd = ibv_alloc_pd(v->ctx);
	t_begin("node1: ibv_create_cq_ex");
	cqx = ibv_create_cq_ex(v->ctx, &ca);
	CHECK(cqx != NULL, "ibv_create_cq_ex(QP_NUM | BYTE_LEN): errno %s", vt_en(errno));
	if (!cqx)
		t_abort();
	ca.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	errno = 0;
	bad_cq = ibv_create_cq_ex(v->ctx, &ca);
	CHECK(!bad_cq && errno == EOPNOTSUPP, "completion timestamps: errno %s", vt_en(errno));
	t_checked("node1: ibv_create_cq_ex with QP_NUM and BYTE_LEN: success; with COMPLETION_TIMESTAMP -> EOPNOTSUPP");
	cq = ibv_cq_ex_to_cq(cqx);
	buf = aligned_alloc(4096, NMSG * SLOT);
	if (!pd || !buf)
		t_bail("PD or buffer");
	for (i = 0; i < NMSG; i++)
		vt_fill(buf + i * SLOT, SLOT, (uint8_t)(0x20 + i));
	mr = ibv_reg_mr(pd, buf, NMSG * SLOT, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		t_bail("ibv_reg_mr: errno %d", errno);
	ia.send_cq = ia.recv_cq = cq;
	t_begin("node1: ibv_create_qp_ex");
	{
		struct ibv_qp_init_attr_ex xa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .pd = pd,
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE,
			.cap = { .max_send_wr = 16, .max_recv_wr = 1, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		struct ibv_qp *tso;

		qp[0] = ibv_create_qp_ex(v->ctx, &xa);
		CHECK(qp[0] && ibv_qp_to_qp_ex(qp[0]), "ibv_create_qp_ex(SEND | RDMA_WRITE): errno %s",
		      vt_en(errno));
		if (!qp[0])
			t_abort();
		xa.send_ops_flags |= IBV_QP_EX_WITH_TSO;
		errno = 0;
		tso = ibv_create_qp_ex(v->ctx, &xa);
		CHECK(!tso && errno == EOPNOTSUPP, "IBV_QP_EX_WITH_TSO: errno %s", vt_en(errno));
		t_checked("node1: ibv_create_qp_ex with send_ops_flags SEND | RDMA_WRITE: success, ibv_qp_to_qp_ex works; with TSO -> EOPNOTSUPP");
	}
	t_begin("node1: max_inline_data");
	qp[1] = ibv_create_qp(pd, &ia);
	if (!qp[1])
		t_bail("ibv_create_qp with max_inline_data %d: errno %d", INL, errno);
	granted = ia.cap.max_inline_data;
	CHECK(granted >= INL, "max_inline_data %u", granted);
	ia.cap.max_inline_data = 4096;
	errno = 0;
	huge = ibv_create_qp(pd, &ia);
	CHECK(!huge && errno == EINVAL, "max_inline_data 4096: errno %s", vt_en(errno));
	t_checked("node1: ibv_create_qp with max_inline_data %d: success, %u granted; 4096 -> EINVAL",
		  INL, granted);
	vt_sock(v);
	vt_connect_qp(v, qp[0], 0);
	vt_connect_qp(v, qp[1], 0);
	vt_sync(v, 1);
	t_begin("node1: %d sends and one inline send", NMSG);
	for (i = 0; i < NMSG; i++) {
		int st = send_msg(qp, cqx, i, (uintptr_t)buf + i * SLOT, msg_len(i), mr->lkey);

		CHECK(st == IBV_WC_SUCCESS, "send %u: %s", i, vt_status(st));
	}
	{
		/* Inline: the bytes come from an unregistered buffer, which
		 * is overwritten as soon as ibv_post_send returns. */
		struct ibv_sge sge = { (uintptr_t)inl, INL, 0 };
		struct ibv_send_wr wr = { .wr_id = 50, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE }, *bad;
		enum ibv_wc_opcode op;
		uint32_t qpn;
		uint64_t id;
		int r, st;

		vt_fill(inl, INL, 0x77);
		r = ibv_post_send(qp[1], &wr, &bad);
		memset(inl, 0xee, INL);
		st = r ? -2 : ex_poll(cqx, &id, &op, &qpn);
		CHECK(st == IBV_WC_SUCCESS && id == 50, "inline send: post %s, %s", vt_en(r),
		      vt_status(st));
	}
	t_checked("node1: %d sends over 2 QPs and an IBV_SEND_INLINE send of %d B from an unregistered buffer overwritten after the post: success; the even ones posted with ibv_wr_start / ibv_wr_send / ibv_wr_set_sge / ibv_wr_complete; each completion read with ibv_start_poll / ibv_wc_read_opcode / ibv_wc_read_qp_num / ibv_end_poll",
		  NMSG, INL);
	vt_sync(v, 2);
	{
		struct ibv_sge sge = { (uintptr_t)buf, 512, mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 60, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
		int st;

		vt_fill(buf, 512, 0x66);
		t_begin("node1: a send over the QP whose peer is still up");
		st = ex_send(qp[1], cqx, &wr);
		CHECK(st == IBV_WC_SUCCESS, "send: %s", vt_status(st));
		t_checked("node1: 512 B send over QP %u: success", qp[1]->qp_num);
	}
	vt_sync(v, 3);
	ibv_destroy_qp(qp[0]);
	ibv_destroy_qp(qp[1]);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(v->ctx);
}

int main(int argc, char **argv)
{
	return vt_run(argc, argv, server, client);
}
