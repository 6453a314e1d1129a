// SPDX-License-Identifier: MIT
/*
 * VM-to-VM tag latency against the depth of the tag list (issue 20's
 * benchmark; a benchmark, not a test: it asserts nothing about time).
 * Written against rdma-core's tag-matching verbs, like weft-verbs-tm:
 * each node has a tag-matching SRQ (IBV_SRQT_TM) with its extended CQ
 * (IBV_WC_EX_WITH_TM_INFO) and an RC QP on it.  For each depth D (0, 1, 4,
 * 16, 64, 256, 1024, 4096, up to the device's tm_caps.max_num_tags less
 * the one tag of the ping-pong, which is then the last depth), both nodes
 * list D tags that never match, then run a tagged ping-pong: every EAGER
 * message's tag is listed after the D others, so the adapter searches
 * past them.  node1 (the client) times each round trip and prints, per
 * depth, the p50 and p99 of half a round trip and their ratio to depth
 * 0's, measured in the same run, then the figures as one JSON line.
 *
 * Usage: weft-verbs-tm-bench [-n ITERS] -s -g GIDX        (node0)
 *        weft-verbs-tm-bench [-n ITERS] -c NODE0_ADDR -g GIDX (node1)
 * ITERS: timed round trips per depth (default 1000), after ITERS/10
 * untimed ones.
 */
#include <endian.h>
#include <infiniband/tm_types.h>

#include "vt.h"

#define NWQE 16			/* SRQ buffers (unexpected messages: none due) */
#define SLOT 256		/* bytes per buffer */
#define BODY 8			/* payload after the TMH */
#define MAX_OPS 1024u		/* the tag-operation ring asked for */
#define DECOY 0xdec0000000000000ull	/* never-matching tags: DECOY | i */

static const uint32_t depths[] = { 0, 1, 4, 16, 64, 256, 1024, 4096 };
#define NDEPTH (sizeof(depths) / sizeof(depths[0]) + 1)

struct bench {
	struct vt *v;
	struct ibv_pd *pd;
	struct ibv_cq_ex *cq;		/* the SRQ's: tag operations, receives */
	struct ibv_cq *scq;		/* sends */
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;			/* NWQE SRQ slots, the tagged slot, the decoys' slot, the send slot */
	uint32_t listed;		/* decoys listed */
};

static uint8_t *slot(struct bench *b, uint32_t i)
{
	return b->buf + (size_t)i * SLOT;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* TAG_ADD of TAG (exact) into slot SL, unsignaled; waits while the
 * tag-operation ring is full. */
static void tag_add(struct bench *b, uint64_t tag, uint32_t sl, uint64_t recv_wr_id)
{
	struct ibv_sge sge = { (uintptr_t)slot(b, sl), SLOT, b->mr->lkey };
	struct ibv_ops_wr wr = {
		.wr_id = recv_wr_id, .opcode = IBV_WR_TAG_ADD, .flags = IBV_OPS_TM_SYNC,
		.tm = { .unexpected_cnt = 0,
			.add = { .recv_wr_id = recv_wr_id, .sg_list = &sge, .num_sge = 1,
				 .tag = tag, .mask = ~0ull } },
	}, *bad;
	uint64_t end = vt_ms() + 10000;
	int r;

	while ((r = ibv_post_srq_ops(b->srq, &wr, &bad)) == ENOMEM && vt_ms() < end)
		usleep(100);
	if (r)
		t_bail("ibv_post_srq_ops(TAG_ADD 0x%llx): %s", (unsigned long long)tag, vt_en(r));
}

/* The next receive completion: the message with tag TAG, matched into
 * the tagged slot in one CQE. */
static void recv_tagged(struct bench *b, uint64_t tag)
{
	struct ibv_poll_cq_attr pa = {};
	struct ibv_wc_tm_info tm = { 0 };
	uint64_t end = vt_ms() + 10000;
	unsigned int flags;
	uint32_t len;
	int r, status, op;
	uint64_t wr_id;

	while ((r = ibv_start_poll(b->cq, &pa)) == ENOENT && vt_ms() < end)
		;
	if (r)
		t_bail("no completion for tag %llu in 10 s (ibv_start_poll %d)",
		       (unsigned long long)tag, r);
	wr_id = b->cq->wr_id;
	status = b->cq->status;
	op = ibv_wc_read_opcode(b->cq);
	flags = ibv_wc_read_wc_flags(b->cq);
	len = ibv_wc_read_byte_len(b->cq);
	ibv_wc_read_tm_info(b->cq, &tm);
	ibv_end_poll(b->cq);
	if (op == IBV_WC_TM_RECV && !(flags & IBV_WC_TM_MATCH))
		t_bail("tag %llu arrived before its TAG_ADD took effect (unexpected)",
		       (unsigned long long)tag);
	if (status != IBV_WC_SUCCESS || op != IBV_WC_TM_RECV ||
	    flags != (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID) || wr_id != tag || tm.tag != tag ||
	    len != BODY)
		t_bail("tag %llu: status %s op %d flags 0x%x wr_id %llu tag %llu len %u",
		       (unsigned long long)tag, ibv_wc_status_str((enum ibv_wc_status)status), op, flags,
		       (unsigned long long)wr_id, (unsigned long long)tm.tag, len);
}

/* An EAGER message with TAG and BODY bytes, over the RC QP; waits for its
 * completion. */
static void send_tagged(struct bench *b, uint64_t tag)
{
	uint8_t *p = slot(b, NWQE + 2);
	struct ibv_tmh *t = (struct ibv_tmh *)p;
	struct ibv_sge sge = { (uintptr_t)p, sizeof(*t) + BODY, b->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = tag, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	memset(t, 0, sizeof(*t));
	t->opcode = IBV_TMH_EAGER;
	t->tag = htobe64(tag);
	memcpy(p + sizeof(*t), &tag, BODY);
	if (ibv_post_send(b->qp, &wr, &bad))
		t_bail("ibv_post_send: errno %d", errno);
	if (!vt_poll(b->scq, &wc) || wc.status != IBV_WC_SUCCESS)
		t_bail("send of tag %llu: %s", (unsigned long long)tag, vt_status(wc.status));
}

/* Lists decoys until D are listed (the list only grows). */
static void list_decoys(struct bench *b, uint32_t d)
{
	for (; b->listed < d; b->listed++)
		tag_add(b, DECOY | b->listed, NWQE + 1, DECOY | b->listed);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void setup(struct bench *b, struct vt *v, uint32_t max_tags)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 256, .wc_flags = IBV_WC_EX_WITH_TM_INFO |
					  IBV_WC_EX_WITH_BYTE_LEN };
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = NWQE, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM,
		.srq_type = IBV_SRQT_TM, .tm_cap = { .max_num_tags = max_tags, .max_ops = MAX_OPS },
	};
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 16, .max_send_sge = 1 } };
	size_t size = (size_t)(NWQE + 3) * SLOT;
	uint32_t i;

	b->v = v;
	b->pd = ibv_alloc_pd(v->ctx);
	b->buf = aligned_alloc(4096, 4096 * ((size + 4095) / 4096));
	if (!b->pd || !b->buf)
		t_bail("PD or buffer");
	memset(b->buf, 0, size);
	b->mr = ibv_reg_mr(b->pd, b->buf, size, IBV_ACCESS_LOCAL_WRITE);
	b->cq = ibv_create_cq_ex(v->ctx, &ca);
	b->scq = ibv_create_cq(v->ctx, 32, NULL, NULL, 0);
	if (!b->mr || !b->cq || !b->scq)
		t_bail("MR, CQ or send CQ: errno %d", errno);
	sa.pd = b->pd;
	sa.cq = ibv_cq_ex_to_cq(b->cq);
	b->srq = ibv_create_srq_ex(v->ctx, &sa);
	if (!b->srq)
		t_bail("ibv_create_srq_ex(IBV_SRQT_TM, %u tags, %u ops): %s", max_tags, MAX_OPS,
		       vt_en(errno));
	for (i = 0; i < NWQE; i++) {
		struct ibv_sge sge = { (uintptr_t)slot(b, i), SLOT, b->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

		if (ibv_post_srq_recv(b->srq, &wr, &bad))
			t_bail("ibv_post_srq_recv: errno %d", errno);
	}
	qa.send_cq = b->scq;
	qa.recv_cq = ibv_cq_ex_to_cq(b->cq);
	qa.srq = b->srq;
	b->qp = ibv_create_qp(b->pd, &qa);
	if (!b->qp)
		t_bail("ibv_create_qp on the TM SRQ: errno %d", errno);
	vt_connect_qp(v, b->qp, 0);
}

static void teardown(struct bench *b)
{
	vt_sync(b->v, 0xe9d);
	ibv_destroy_qp(b->qp);
	ibv_destroy_srq(b->srq);
	ibv_destroy_cq(ibv_cq_ex_to_cq(b->cq));
	ibv_destroy_cq(b->scq);
	ibv_dereg_mr(b->mr);
	ibv_dealloc_pd(b->pd);
	ibv_close_device(b->v->ctx);
}

/*
 * The depths of this run: those of the table up to LIMIT, plus LIMIT
 * itself when it lies between two of them.  Returns how many.
 */
static uint32_t plan(uint32_t limit, uint32_t out[NDEPTH])
{
	uint32_t n = 0, i;

	for (i = 0; i < NDEPTH - 1 && depths[i] <= limit; i++)
		out[n++] = depths[i];
	if (out[n - 1] != limit && i < NDEPTH - 1)
		out[n++] = limit;
	return n;
}

/* Both nodes agree on the device limit: the smaller max_num_tags. */
static uint32_t agree(struct vt *v)
{
	struct ibv_device_attr_ex dx;
	uint32_t mine, theirs;
	int r = ibv_query_device_ex(v->ctx, NULL, &dx);

	if (r || !(dx.tm_caps.flags & IBV_TM_CAP_RC) || dx.tm_caps.max_num_tags < 2)
		t_bail("no tag matching on RC: ibv_query_device_ex %s, tm_caps flags 0x%x, %u tags",
		       vt_en(r), dx.tm_caps.flags, dx.tm_caps.max_num_tags);
	mine = dx.tm_caps.max_num_tags;
	vt_send(v, &mine, sizeof(mine));
	vt_recv(v, &theirs, sizeof(theirs));
	return mine < theirs ? mine : theirs;
}

static void server(struct vt *v, uint32_t iters)
{
	uint32_t limit, dep[NDEPTH], n, k, i, total = iters + iters / 10;
	struct bench b = { 0 };

	vt_open(v);
	vt_sock(v);
	limit = agree(v);
	setup(&b, v, limit);
	n = plan(limit - 1, dep);
	for (k = 0; k < n; k++) {
		list_decoys(&b, dep[k]);
		tag_add(&b, 1, NWQE, 1);
		vt_sync(v, 0x1000 + dep[k]);
		for (i = 1; i <= total; i++) {
			recv_tagged(&b, i);
			if (i < total)
				tag_add(&b, i + 1, NWQE, i + 1);
			send_tagged(&b, i);
		}
		vt_sync(v, 0x2000 + dep[k]);
	}
	teardown(&b);
}

static void client(struct vt *v, uint32_t iters)
{
	uint32_t limit, dep[NDEPTH], n, k, i, total = iters + iters / 10;
	uint64_t *half = calloc(iters, sizeof(*half)), p50[NDEPTH], p99[NDEPTH];
	struct bench b = { 0 };

	if (!half)
		t_bail("memory");
	vt_open(v);
	vt_sock(v);
	limit = agree(v);
	setup(&b, v, limit);
	n = plan(limit - 1, dep);
	printf("weft-verbs-tm-bench: tm_caps.max_num_tags %u on both nodes; %u timed round trips per depth after %u untimed; EAGER %u B + the 16 B TMH\n",
	       limit, iters, iters / 10, BODY);
	for (k = 0; k < n; k++) {
		list_decoys(&b, dep[k]);
		vt_sync(v, 0x1000 + dep[k]);
		for (i = 1; i <= total; i++) {
			uint64_t t0;

			tag_add(&b, i, NWQE, i);
			t0 = now_ns();
			send_tagged(&b, i);
			recv_tagged(&b, i);
			if (i > total - iters)
				half[i - (total - iters) - 1] = (now_ns() - t0) / 2;
		}
		vt_sync(v, 0x2000 + dep[k]);
		qsort(half, iters, sizeof(*half), cmp_u64);
		p50[k] = half[iters / 2];
		p99[k] = half[(uint64_t)iters * 99 / 100];
		printf("depth %4u: half round trip p50 %8.1f us  p99 %8.1f us  p50 vs depth 0 %.2fx  p99 vs depth 0 %.2fx\n",
		       dep[k], p50[k] / 1e3, p99[k] / 1e3, (double)p50[k] / (double)p50[0],
		       (double)p99[k] / (double)p99[0]);
		fflush(stdout);
	}
	printf("{\"bench\": \"weft-verbs-tm-bench\", \"max_num_tags\": %u, \"iters\": %u, \"depths\": [", limit,
	       iters);
	for (k = 0; k < n; k++)
		printf("%s{\"depth\": %u, \"p50_us\": %.1f, \"p99_us\": %.1f, \"p50_ratio\": %.3f}",
		       k ? ", " : "", dep[k], p50[k] / 1e3, p99[k] / 1e3, (double)p50[k] / (double)p50[0]);
	printf("]}\n");
	free(half);
	teardown(&b);
}

int main(int argc, char **argv)
{
	char *args[8];
	uint32_t iters = 1000;
	int i, n = 0;
	struct vt v;

	/* -n ITERS, then the options of every two-node program (vt.h). */
	for (i = 0; i < argc; i++) {
		if (i > 0 && !strcmp(argv[i], "-n") && i + 1 < argc) {
			char *end;
			unsigned long x = strtoul(argv[++i], &end, 10);

			if (*end || x < 10 || x > 1000000)
				vt_usage(argv[0]);
			iters = (uint32_t)x;
		} else if (n < 8) {
			args[n++] = argv[i];
		} else {
			vt_usage(argv[0]);
		}
	}
	vt_args(&v, n, args);
	if (v.server)
		server(&v, iters);
	else
		client(&v, iters);
	return 0;
}
