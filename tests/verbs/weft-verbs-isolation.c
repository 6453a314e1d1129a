// SPDX-License-Identifier: MIT
/*
 * Isolation between verbs users (issue 15, docs/rdma-provider.md "Tests"):
 *
 * - node1 posts RDMA WRITEs and READs to node0 with keys node0's process
 *   did not give it: a valid rkey's index with another key byte, the rkey
 *   of an MR of another PD of the same process, and the rkey of an MR of
 *   another process.  Each completes with IBV_WC_REM_ACCESS_ERR, node1's
 *   queue pair goes to ERR, and node0's memory is unchanged; a READ leaves
 *   node1's buffer unchanged.  A good READ and a good WRITE before and
 *   after show the connection itself works.
 * - On node0, a second process given the first one's handle values (QP,
 *   CQ, MR, PD) and QP number cannot query, modify or destroy them
 *   through its own verbs context: every call fails, and the owner's
 *   objects stay as they were.
 *
 * Usage: weft-verbs-isolation -s -g GIDX (node0) | -c NODE0_ADDR -g GIDX (node1)
 */
#include <signal.h>
#include <sys/wait.h>

#include "vt.h"

#define BUF 8192
#define SEED_A 0xa5		/* node0, PD 1 */
#define SEED_B 0xb6		/* node0, PD 2 of the same process */
#define SEED_C 0xc7		/* node0, another process */
#define SEED_W 0x3c		/* what node1 writes */
#define GOOD_OFF 4096		/* where the good WRITE goes in buffer A */
#define GOOD_LEN 256

enum { K_A, K_A_GUESS, K_B, K_C, K_NR };

static const char *const key_name[K_NR] = {
	[K_A] = "the rkey node0 gave",
	[K_A_GUESS] = "a guessed rkey (the index of node0's rkey, another key byte)",
	[K_B] = "the rkey of an MR in another PD of node0's process",
	[K_C] = "the rkey of an MR of another process on node0",
};

/* The owner's handle values, sent to the other process. */
struct handles {
	uint32_t pd, mr, cq, qp, qpn, lkey;
};

struct region {
	uint64_t addr;
	uint32_t rkey;
};

static void xwrite(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		t_bail("pipe write: errno %d", errno);
}

static void xread(int fd, void *p, size_t n)
{
	if (read(fd, p, n) != (ssize_t)n)
		t_bail("pipe read: errno %d", errno);
}

/* A zeroed object larger than any provider's, for a handle we do not own. */
static void *fake(void)
{
	void *o = calloc(1, 4096);

	if (!o)
		t_bail("out of memory");
	return o;
}

/* ib_core looks a handle up in the caller's own context only: none there. */
static int lookup_err(int e)
{
	return e == ENOENT;
}

/*
 * The other process on node0: opens its own context, tries the owner's
 * handles, then exposes an MR of its own that node1 must not reach.
 */
static void other_process(struct vt *v, int rd, int wr)
{
	struct handles h;
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct ibv_qp_init_attr qi;
	struct ibv_qp *fq;
	struct ibv_cq *fc;
	struct ibv_mr *fm, *mr;
	struct ibv_pd *fp, *pd;
	struct region r;
	uint8_t *buf;
	int e[6], i, all = 1;
	char done;

	t_child();
	vt_open(v);
	xread(rd, &h, sizeof(h));

	fq = fake();
	fq->context = v->ctx;
	fq->handle = h.qp;
	fq->qp_num = h.qpn;
	fq->qp_type = IBV_QPT_RC;
	fq->state = IBV_QPS_INIT;
	e[0] = ibv_query_qp(fq, &qa, IBV_QP_STATE, &qi);
	e[1] = ibv_modify_qp(fq, &qa, IBV_QP_STATE);
	e[2] = ibv_destroy_qp(fq);
	fc = fake();
	fc->context = v->ctx;
	fc->handle = h.cq;
	e[3] = ibv_destroy_cq(fc);
	fm = fake();
	fm->context = v->ctx;
	fm->handle = h.mr;
	fm->lkey = fm->rkey = h.lkey;
	e[4] = ibv_dereg_mr(fm);
	fp = fake();
	fp->context = v->ctx;
	fp->handle = h.pd;
	e[5] = ibv_dealloc_pd(fp);
	t_begin("node0, another process: the owner's QP %u (handle %u), CQ, MR and PD handles", h.qpn, h.qp);
	for (i = 0; i < 6; i++)
		CHECK(lookup_err(e[i]), "call %d returned %d", i, e[i]);
	t_checked("node0, another process: with the owner's handles, ibv_query_qp -> %s, ibv_modify_qp(ERR) -> %s, ibv_destroy_qp -> %s, ibv_destroy_cq -> %s, ibv_dereg_mr -> %s, ibv_dealloc_pd -> %s",
		  vt_en(e[0]), vt_en(e[1]), vt_en(e[2]),
		  vt_en(e[3]), vt_en(e[4]), vt_en(e[5]));
	/* This process owns no QP: no handle value reaches one. */
	t_begin("node0, another process: QP handles 0..63 all refused");
	for (i = 0; i < 64; i++) {
		fq->handle = (uint32_t)i;
		if (!lookup_err(ibv_query_qp(fq, &qa, IBV_QP_STATE, &qi)) ||
		    !lookup_err(ibv_modify_qp(fq, &qa, IBV_QP_STATE)))
			all = 0;
	}
	CHECK(all, "a QP handle of this process's context reached a QP");
	t_checked("node0, another process: ibv_query_qp and ibv_modify_qp(ERR) fail for every QP handle 0..63");
	free(fq);
	free(fc);
	free(fm);
	free(fp);
	xwrite(wr, "A", 1);

	/* An MR with remote rights that node1 is never given. */
	pd = ibv_alloc_pd(v->ctx);
	buf = aligned_alloc(4096, BUF);
	if (!pd || !buf)
		t_bail("other process: PD or buffer");
	vt_fill(buf, BUF, SEED_C);
	mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ);
	if (!mr)
		t_bail("other process: ibv_reg_mr: errno %d", errno);
	r.addr = (uintptr_t)buf;
	r.rkey = mr->rkey;
	xwrite(wr, &r, sizeof(r));
	xread(rd, &done, 1);
	t_begin("node0, another process: its memory after node1's attempts");
	CHECK(vt_diff(buf, BUF, SEED_C, 0) < 0, "byte %ld changed", vt_diff(buf, BUF, SEED_C, 0));
	CHECK(!ibv_dereg_mr(mr) && !ibv_dealloc_pd(pd) && !ibv_close_device(v->ctx),
	      "teardown");
	t_checked("node0, another process: its %d bytes unchanged after node1's WRITEs with its rkey 0x%x", BUF, r.rkey);
	exit(t_failures() != 0);
}

/* The attempts, each on a connection of its own: a failed one leaves
 * both queue pairs in ERR. */
static const struct {
	int key;
	int read;
} cases[] = {
	{ K_A, 1 },		/* the good READ first */
	{ K_A_GUESS, 0 }, { K_A_GUESS, 1 },
	{ K_B, 0 }, { K_B, 1 },
	{ K_C, 0 }, { K_C, 1 },
	{ K_A, 0 },		/* the good WRITE last */
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static void server(struct vt *v)
{
	int p2c[2], c2p[2], status;
	unsigned int i;
	struct ibv_pd *pd, *pd2;
	struct ibv_mr *mra, *mrb;
	struct ibv_cq *cq;
	struct ibv_qp *idle, *qp;
	struct handles h;
	struct region rc;
	struct vt_msg keys = {};
	uint8_t *a, *b;
	pid_t pid;
	char ack;

	/* The other process starts before this one opens the device. */
	if (pipe(p2c) || pipe(c2p))
		t_bail("pipe");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		t_bail("fork");
	if (!pid) {
		close(p2c[1]);
		close(c2p[0]);
		other_process(v, p2c[0], c2p[1]);
	}
	/* Either end sees EOF if the other one dies. */
	close(p2c[0]);
	close(c2p[1]);

	vt_open(v);
	pd = ibv_alloc_pd(v->ctx);
	pd2 = ibv_alloc_pd(v->ctx);
	a = aligned_alloc(4096, BUF);
	b = aligned_alloc(4096, BUF);
	cq = ibv_create_cq(v->ctx, 64, NULL, NULL, 0);
	if (!pd || !pd2 || !a || !b || !cq)
		t_bail("PDs, CQ or buffers");
	vt_fill(a, BUF, SEED_A);
	vt_fill(b, BUF, SEED_B);
	mra = ibv_reg_mr(pd, a, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ);
	mrb = ibv_reg_mr(pd2, b, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ);
	if (!mra || !mrb)
		t_bail("ibv_reg_mr: errno %d", errno);
	/* A QP in INIT that the other process tries to reach. */
	idle = vt_rc_qp(pd, cq);
	if (vt_qp_init(idle, IBV_ACCESS_REMOTE_WRITE))
		t_bail("idle QP to INIT: errno %d", errno);
	h = (struct handles){ pd->handle, mra->handle, cq->handle, idle->handle,
			      idle->qp_num, mra->lkey };
	xwrite(p2c[1], &h, sizeof(h));
	xread(c2p[0], &ack, 1);
	t_begin("node0: the owner's objects after the other process's attempts");
	CHECK_EQ(vt_qp_state(idle), IBV_QPS_INIT, "the idle QP's state");
	t_checked("node0: the owner's QP %u still in INIT after the other process's calls", idle->qp_num);
	xread(c2p[0], &rc, sizeof(rc));

	/* node1 learns only buffer A's address and rkey, and the addresses
	 * of B and C; it is not given their keys. */
	vt_sock(v);
	keys.addr = (uintptr_t)a;
	keys.rkey = mra->rkey;
	keys.aux[0] = mrb->rkey;
	keys.aux[1] = rc.rkey;
	memcpy(&keys.aux[2], &(uint64_t){ (uintptr_t)b }, 8);
	vt_send(v, &keys, sizeof(keys));
	vt_send(v, &rc.addr, sizeof(rc.addr));
	/* One connection per attempt: a failed one leaves the QPs in ERR. */
	for (i = 0; i < NCASES; i++) {
		qp = vt_connect(v, pd, cq, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
		vt_sync(v, 100 + i);	/* node1's operation completed */
		if (ibv_destroy_qp(qp))
			t_bail("destroy QP: errno %d", errno);
	}

	t_begin("node0: memory after node1's attempts");
	CHECK(vt_diff(a, GOOD_OFF, SEED_A, 0) < 0, "A changed below the good write");
	CHECK(vt_diff(a + GOOD_OFF, GOOD_LEN, SEED_W, 0) < 0, "the good WRITE did not land");
	CHECK(vt_diff(a + GOOD_OFF + GOOD_LEN, BUF - GOOD_OFF - GOOD_LEN, SEED_A,
		      GOOD_OFF + GOOD_LEN) < 0, "A changed above the good write");
	CHECK(vt_diff(b, BUF, SEED_B, 0) < 0, "B (other PD) changed at %ld", vt_diff(b, BUF, SEED_B, 0));
	t_checked("node0: buffer A unchanged except the %d bytes of node1's good WRITE (byte-exact); buffer B of the other PD unchanged", GOOD_LEN);
	xwrite(p2c[1], "D", 1);
	t_begin("node0: the other process");
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "status 0x%x", status);
	t_checked("node0: the other process's checks all held");
	t_begin("node0: teardown");
	CHECK(!ibv_destroy_qp(idle) && !ibv_dereg_mr(mra) && !ibv_dereg_mr(mrb) &&
	      !ibv_destroy_cq(cq) && !ibv_dealloc_pd(pd) && !ibv_dealloc_pd(pd2),
	      "errno %d", errno);
	t_checked("node0: every object of the owner destroyed without error (none was touched by the other process)");
	ibv_close_device(v->ctx);
}

static void client(struct vt *v)
{
	struct vt_msg keys;
	uint64_t addr_b, addr_c, raddr;
	uint32_t rkey[K_NR];
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint8_t *buf;
	unsigned int i;
	size_t j;
	int k, st;

	vt_open(v);
	pd = ibv_alloc_pd(v->ctx);
	cq = ibv_create_cq(v->ctx, 64, NULL, NULL, 0);
	buf = aligned_alloc(4096, BUF);
	if (!pd || !cq || !buf)
		t_bail("PD, CQ or buffer");
	mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		t_bail("ibv_reg_mr: errno %d", errno);
	vt_sock(v);
	vt_recv(v, &keys, sizeof(keys));
	vt_recv(v, &addr_c, sizeof(addr_c));
	memcpy(&addr_b, &keys.aux[2], 8);
	rkey[K_A] = keys.rkey;
	/* Same Tag_Index, another key byte (hw-spec 16.5). */
	rkey[K_A_GUESS] = (keys.rkey & ~0xffu) | ((keys.rkey + 0x5b) & 0xffu);
	rkey[K_B] = keys.aux[0];
	rkey[K_C] = keys.aux[1];

	for (i = 0; i < NCASES; i++) {
		enum ibv_wr_opcode op = cases[i].read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
		const char *opn = cases[i].read ? "READ" : "WRITE";

		k = cases[i].key;
		raddr = k == K_B ? addr_b : k == K_C ? addr_c : keys.addr;
		qp = vt_connect(v, pd, cq, 0);
		t_begin("node1: RDMA %s with %s", opn, key_name[k]);
		if (k == K_A && cases[i].read) {
			memset(buf, 0, BUF);
			st = vt_rdma(qp, cq, op, mr, buf, BUF, keys.addr, keys.rkey);
			CHECK(st == IBV_WC_SUCCESS, "status %s", vt_status(st));
			CHECK(vt_diff(buf, BUF, SEED_A, 0) < 0, "READ data wrong at %ld",
			      vt_diff(buf, BUF, SEED_A, 0));
			t_checked("node1: RDMA READ of %d B with %s (0x%x): success, byte-exact",
				  BUF, key_name[k], rkey[k]);
		} else if (k == K_A) {
			vt_fill(buf, GOOD_LEN, SEED_W);
			st = vt_rdma(qp, cq, op, mr, buf, GOOD_LEN, keys.addr + GOOD_OFF, keys.rkey);
			CHECK(st == IBV_WC_SUCCESS, "status %s", vt_status(st));
			t_checked("node1: RDMA WRITE of %d B with %s (0x%x): success", GOOD_LEN,
				  key_name[k], rkey[k]);
		} else {
			if (cases[i].read)
				memset(buf, 0xee, BUF);
			else
				vt_fill(buf, BUF, SEED_W);
			st = vt_rdma(qp, cq, op, mr, buf, 512, raddr, rkey[k]);
			CHECK(st == IBV_WC_REM_ACCESS_ERR, "status %s", vt_status(st));
			CHECK_EQ(vt_qp_wait(qp, IBV_QPS_ERR), IBV_QPS_ERR, "node1's QP state");
			for (j = 0; cases[i].read && j < BUF && buf[j] == 0xee; j++)
				;
			CHECK(!cases[i].read || j == BUF, "the failed READ wrote byte %zu", j);
			t_checked("node1: RDMA %s with %s (0x%x): IBV_WC_REM_ACCESS_ERR, QP in ERR%s",
				  opn, key_name[k], rkey[k],
				  cases[i].read ? ", local buffer untouched" : "");
		}
		vt_sync(v, 100 + i);
		if (ibv_destroy_qp(qp))
			t_bail("destroy QP: errno %d", errno);
	}
	t_begin("node1: teardown");
	CHECK(!ibv_dereg_mr(mr) && !ibv_destroy_cq(cq) && !ibv_dealloc_pd(pd), "errno %d", errno);
	t_checked("node1: teardown without error");
	ibv_close_device(v->ctx);
}

int main(int argc, char **argv)
{
	struct vt v;

	vt_args(&v, argc, argv);
	signal(SIGPIPE, SIG_IGN);
	if (v.server)
		server(&v);
	else
		client(&v);
	return t_done();
}
