// SPDX-License-Identifier: MIT
/*
 * Event counters from user space (docs/counters.md "Event counters",
 * docs/verbs-linux.md): weft_ib's uverbs driver object WEFT_IB_OBJECT_CNTR
 * through the ioctl of the uverbs file, its status block mapped
 * read-only.  node1 (the initiator) counts its WRITEs and READs on slot 1
 * (WEFT_IB_SEND_CNT_SLOT in send_flags, most of them unsignaled); node0
 * (the target) counts the WRITEs and READs that arrive on slots 2 and 3
 * of its QP without polling anything: only the adapter moves its blocks.
 * node0 also posts, before node1 writes, a WAIT_CNT (IBV_WR_DRIVER1,
 * docs/rdma-provider.md "Waiting on a counter") on its REMOTE_WRITE
 * counter for all of node1's WRITEs and an RDMA WRITE after it: the
 * adapter sends that WRITE to node1 once the last WRITE landed, with no
 * call on node0 (the hardware form of a triggered operation).  Then
 * CNTR_SET moves node0's REMOTE_READ counter in the adapter (fi_cntr_add
 * and fi_cntr_set), which releases a second WAIT_CNT exactly at its
 * threshold.
 *
 * Usage: weft-verbs-cntr -s -g GIDX (node0) | -c NODE0_ADDR -g GIDX (node1)
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <rdma/rdma_user_ioctl.h>

#include "vt.h"
#include "weft/cnt.h"
#include "weft/ib-abi.h"

#define BUF 1048576
#define NW 16			/* WRITEs of WLEN */
#define WLEN 32768
#define NR 4			/* READs of WLEN */
#define SEED 0x3c
#define RD_OFF (3 * BUF / 4)	/* the READs' range, after the WRITEs' */
#define TRIG_OFF (BUF - 4096)	/* node1's range the triggered WRITE fills */
#define TRIG_LEN 256

struct cntr {
	uint32_t handle;
	const volatile struct weft_cnt_ev_block *blk;
};

static int cntr_ioctl(struct vt *v, uint16_t method, struct ib_uverbs_attr *a, uint16_t n)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attr[5];
	} c;

	memset(&c, 0, sizeof(c));
	c.hdr.length = (uint16_t)(sizeof(c.hdr) + n * sizeof(c.attr[0]));
	c.hdr.object_id = WEFT_IB_OBJECT_CNTR;
	c.hdr.method_id = method;
	c.hdr.num_attrs = n;
	memcpy(c.attr, a, n * sizeof(*a));
	if (ioctl(v->ctx->cmd_fd, RDMA_VERBS_IOCTL, &c))
		return errno;
	memcpy(a, c.attr, n * sizeof(*a));
	return 0;
}

static void cntr_create(struct vt *v, struct cntr *k)
{
	uint64_t off = 0;
	struct ib_uverbs_attr a[2] = {
		{ .attr_id = WEFT_IB_ATTR_CNTR_CREATE_HANDLE },
		{ .attr_id = WEFT_IB_ATTR_CNTR_CREATE_MMAP, .len = sizeof(off),
		  .data = (uintptr_t)&off },
	};
	void *p;
	int e = cntr_ioctl(v, WEFT_IB_METHOD_CNTR_CREATE, a, 2);

	if (e)
		t_bail("WEFT_IB_METHOD_CNTR_CREATE: %s", vt_en(e));
	k->handle = (uint32_t)a[0].data;
	/* The adapter's block: a writable mapping is refused. */
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, v->ctx->cmd_fd, (off_t)off);
	CHECK(p == MAP_FAILED && errno == EPERM, "a writable mapping of the block: %s",
	      p == MAP_FAILED ? vt_en(errno) : "mapped");
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, v->ctx->cmd_fd, (off_t)off);
	if (p == MAP_FAILED)
		t_bail("mmap of the counter block: %s", vt_en(errno));
	k->blk = p;
}

static int cntr_bind(struct vt *v, struct cntr *k, struct ibv_qp *qp, uint32_t slot,
		     uint32_t events)
{
	struct ib_uverbs_attr a[4] = {
		{ .attr_id = WEFT_IB_ATTR_CNTR_BIND_HANDLE, .data = k->handle },
		{ .attr_id = WEFT_IB_ATTR_CNTR_BIND_QP, .data = qp->handle },
		{ .attr_id = WEFT_IB_ATTR_CNTR_BIND_SLOT, .len = 4, .data = slot },
		{ .attr_id = WEFT_IB_ATTR_CNTR_BIND_EVENTS, .len = 4, .data = events },
	};

	return cntr_ioctl(v, WEFT_IB_METHOD_CNTR_BIND, a, 4);
}

static void cntr_destroy(struct vt *v, struct cntr *k)
{
	struct ib_uverbs_attr a = { .attr_id = WEFT_IB_ATTR_CNTR_DESTROY_HANDLE,
				    .data = k->handle };

	munmap((void *)k->blk, 4096);
	CHECK(cntr_ioctl(v, WEFT_IB_METHOD_CNTR_DESTROY, &a, 1) == 0, "destroy the counter");
}

/* CNTR_SET: op on word of k in the adapter; the word's new value in *val. */
static int cntr_set(struct vt *v, struct cntr *k, uint32_t op, uint32_t word, uint64_t value,
		    uint64_t *val)
{
	struct ib_uverbs_attr a[5] = {
		{ .attr_id = WEFT_IB_ATTR_CNTR_SET_HANDLE, .data = k->handle },
		{ .attr_id = WEFT_IB_ATTR_CNTR_SET_OP, .len = 4, .data = op },
		{ .attr_id = WEFT_IB_ATTR_CNTR_SET_WORD, .len = 4, .data = word },
		{ .attr_id = WEFT_IB_ATTR_CNTR_SET_VALUE, .len = 8, .data = value },
		{ .attr_id = WEFT_IB_ATTR_CNTR_SET_RESULT, .len = 8, .data = (uintptr_t)val },
	};

	return cntr_ioctl(v, WEFT_IB_METHOD_CNTR_SET, a, 5);
}

/* A WAIT_CNT released by software: CNTR_SET's ADD moves the REMOTE_READ
 * counter r (NR by now) in the adapter; a WAIT_CNT(NR + 6) on its slot and
 * a WRITE behind it stay held at NR + 5 and go at NR + 6. */
static void software_moves(struct vt *v, struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr,
			   uint8_t *buf, const struct vt_msg *peer, struct cntr *r)
{
	struct ibv_sge sge = { (uintptr_t)buf + RD_OFF, TRIG_LEN, mr->lkey };
	struct ibv_send_wr wait = {
		.wr_id = 502, .opcode = IBV_WR_DRIVER1,
		.send_flags = IBV_SEND_SIGNALED | WEFT_IB_SEND_CNT_SLOT(3),
		.wr.atomic = { .compare_add = NR + 6 },
	}, wr = {
		.wr_id = 503, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = peer->addr + TRIG_OFF, .rkey = peer->rkey },
	}, *bad;
	struct ibv_wc wc = { 0 };
	uint64_t val = 0, end;
	int held;

	CHECK(cntr_set(v, r, WEFT_CNT_EV_ADD, WEFT_CNT_EV_COUNT, 5, &val) == 0 && val == NR + 5 &&
	      r->blk->count == NR + 5, "CNTR_SET ADD 5: %llu, block %llu, want %d",
	      (unsigned long long)val, (unsigned long long)r->blk->count, NR + 5);
	wait.next = &wr;
	if (ibv_post_send(qp, &wait, &bad))
		t_bail("post WAIT_CNT and WRITE: errno %d", errno);
	for (end = vt_ms() + 300, held = 1; held && vt_ms() < end;)
		held = ibv_poll_cq(cq, 1, &wc) == 0;
	CHECK(held, "WAIT_CNT(%d) passed at %d: wr_id %llu", NR + 6, NR + 5,
	      (unsigned long long)wc.wr_id);
	CHECK(cntr_set(v, r, WEFT_CNT_EV_ADD, WEFT_CNT_EV_COUNT, 1, &val) == 0 && val == NR + 6,
	      "CNTR_SET ADD 1: %llu", (unsigned long long)val);
	CHECK(vt_poll(cq, &wc) && wc.wr_id == 502 && wc.opcode == IBV_WC_DRIVER1 &&
	      wc.status == IBV_WC_SUCCESS, "WAIT_CNT after ADD 1: wr_id %llu status %d",
	      (unsigned long long)wc.wr_id, wc.status);
	CHECK(vt_poll(cq, &wc) && wc.wr_id == 503 && wc.status == IBV_WC_SUCCESS,
	      "its WRITE: wr_id %llu status %d", (unsigned long long)wc.wr_id, wc.status);
	CHECK(cntr_set(v, r, WEFT_CNT_EV_SET, WEFT_CNT_EV_ERRORS, 3, &val) == 0 && val == 3 &&
	      r->blk->errors == 3 && r->blk->count == NR + 6, "CNTR_SET SET errors 3: block %llu/%llu",
	      (unsigned long long)r->blk->count, (unsigned long long)r->blk->errors);
	CHECK(cntr_set(v, r, 3, WEFT_CNT_EV_COUNT, 1, &val) == EINVAL &&
	      cntr_set(v, r, WEFT_CNT_EV_ADD, 7, 1, &val) == EINVAL, "op 3 or word 7 not EINVAL");
	CHECK(r->blk->count == NR + 6 && r->blk->errors == 3, "a refused CNTR_SET moved the block");
	t_checked("node0: CNTR_SET ADD 5 then ADD 1 moved the REMOTE_READ counter to %d in the adapter; a WAIT_CNT(%d) and its WRITE held at %d went at %d; SET errors 3 left the count; op 3 and word 7 EINVAL, the block unchanged",
		  NR + 6, NR + 6, NR + 5, NR + 6);
}

/* Waits up to 10 s for the block to reach count; returns what it holds. */
static uint64_t cntr_wait(const struct cntr *k, uint64_t count)
{
	uint64_t end = vt_ms() + 10000, c;

	do {
		c = __atomic_load_n(&k->blk->count, __ATOMIC_ACQUIRE);
	} while (c < count && vt_ms() < end);
	return c;
}

/* An RC QP connected to the peer's; the buffer's address and rkey swapped. */
static struct ibv_qp *connect_rc(struct vt *v, struct ibv_pd *pd, struct ibv_cq *cq,
				 struct ibv_mr *mr, struct vt_msg *peer)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct vt_msg me = {};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		t_bail("ibv_create_qp: errno %d", errno);
	me.qpn = qp->qp_num;
	me.psn = v->next_psn;
	memcpy(me.gid, v->gid.raw, 16);
	me.addr = (uintptr_t)mr->addr;
	me.rkey = mr->rkey;
	vt_xchg(v, &me, peer);
	if (vt_qp_init(qp, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) ||
	    vt_qp_rtr(v, qp, peer) || vt_qp_rts(qp, me.psn))
		t_bail("connecting the RC QP: errno %d", errno);
	return qp;
}

static void open_all(struct vt *v, struct ibv_pd **pd, struct ibv_cq **cq, struct ibv_mr **mr,
		     uint8_t **buf)
{
	vt_open(v);
	vt_sock(v);
	*pd = ibv_alloc_pd(v->ctx);
	*cq = ibv_create_cq(v->ctx, 128, NULL, NULL, 0);
	*buf = aligned_alloc(4096, BUF);
	if (!*pd || !*cq || !*buf)
		t_bail("PD, CQ or buffer");
	*mr = ibv_reg_mr(*pd, *buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ);
	if (!*mr)
		t_bail("ibv_reg_mr: errno %d", errno);
}

static void close_all(struct vt *v, struct ibv_qp *qp, struct ibv_mr *mr, struct ibv_cq *cq,
		      struct ibv_pd *pd, uint8_t *buf)
{
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(v->ctx);
	free(buf);
}

/* WAIT_CNT on slot 2 (node0's REMOTE_WRITE counter) for all of node1's
 * WRITEs, then a WRITE of TRIG_LEN bytes to node1; the bad forms first. */
static void post_triggered(struct ibv_qp *qp, struct ibv_mr *mr, uint8_t *buf,
			   const struct vt_msg *peer)
{
	struct ibv_sge sge = { (uintptr_t)buf + RD_OFF, TRIG_LEN, mr->lkey };
	struct ibv_send_wr wait = {
		.wr_id = 500, .opcode = IBV_WR_DRIVER1,
		.send_flags = IBV_SEND_SIGNALED | WEFT_IB_SEND_CNT_SLOT(2),
		.wr.atomic = { .compare_add = NW + 1 },
	}, wr = {
		.wr_id = 501, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = peer->addr + TRIG_OFF, .rkey = peer->rkey },
	}, bad_wr = wait, *bad;

	bad_wr.send_flags = IBV_SEND_SIGNALED;
	CHECK(ibv_post_send(qp, &bad_wr, &bad) == EINVAL, "WAIT_CNT without a slot posted");
	bad_wr = wait;
	bad_wr.sg_list = &sge;
	bad_wr.num_sge = 1;
	CHECK(ibv_post_send(qp, &bad_wr, &bad) == EINVAL, "WAIT_CNT with an SGE posted");
	wait.next = &wr;
	if (ibv_post_send(qp, &wait, &bad))
		t_bail("post WAIT_CNT and WRITE: errno %d", errno);
}

static void server(struct vt *v)
{
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct vt_msg peer;
	struct ibv_wc wc;
	struct cntr w, r;
	uint8_t *buf;
	uint64_t nw, nr;

	open_all(v, &pd, &cq, &mr, &buf);
	memset(buf, 0, BUF);
	vt_fill(buf + RD_OFF, (size_t)NR * WLEN, SEED);
	qp = connect_rc(v, pd, cq, mr, &peer);
	t_begin("node0: target counters");
	cntr_create(v, &w);
	cntr_create(v, &r);
	CHECK(cntr_bind(v, &w, qp, 2, WEFT_CNT_EV_REMOTE_WRITE) == 0, "bind REMOTE_WRITE");
	CHECK(cntr_bind(v, &r, qp, 3, WEFT_CNT_EV_REMOTE_READ) == 0, "bind REMOTE_READ");
	CHECK(cntr_bind(v, &w, qp, 4, 0) == EINVAL, "slot 4 is not EINVAL");
	CHECK(cntr_bind(v, &w, qp, 1, 0x80) == EINVAL, "an unknown event is not EINVAL");
	post_triggered(qp, mr, buf, &peer);
	vt_sync(v, 1);
	/* Nothing polls here: only the adapter moves the blocks. */
	nw = cntr_wait(&w, NW + 1);
	nr = cntr_wait(&r, NR);
	CHECK(nw == NW + 1, "REMOTE_WRITE counter %llu, want %d", (unsigned long long)nw, NW + 1);
	CHECK(nr == NR, "REMOTE_READ counter %llu, want %d", (unsigned long long)nr, NR);
	CHECK(w.blk->errors == 0 && r.blk->errors == 0, "error counts moved");
	CHECK(vt_diff(buf, (size_t)NW * WLEN + 100, SEED, 0) < 0, "WRITE data at %ld",
	      vt_diff(buf, (size_t)NW * WLEN + 100, SEED, 0));
	vt_sync(v, 2);
	/* node1 saw the triggered WRITE land; now the two completions. */
	CHECK(vt_poll(cq, &wc) && wc.wr_id == 500 && wc.opcode == IBV_WC_DRIVER1 &&
	      wc.status == IBV_WC_SUCCESS, "WAIT_CNT completion: wr_id %llu opcode %d status %d",
	      (unsigned long long)wc.wr_id, wc.opcode, wc.status);
	CHECK(vt_poll(cq, &wc) && wc.wr_id == 501 && wc.opcode == IBV_WC_RDMA_WRITE &&
	      wc.status == IBV_WC_SUCCESS, "triggered WRITE completion: wr_id %llu status %d",
	      (unsigned long long)wc.wr_id, wc.status);
	CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "a third completion at the target");
	t_checked("node0: %d WRITEs of %d B and one of 100 B counted %llu on REMOTE_WRITE, %d READs %llu on REMOTE_READ, with no poll on node0, data byte-exact; writable mapping EPERM, slot 4 and unknown events EINVAL; WAIT_CNT(%d) then WRITE completed in order (IBV_WC_DRIVER1), a WAIT_CNT without a slot or with an SGE EINVAL",
		  NW, WLEN, (unsigned long long)nw, NR, (unsigned long long)nr, NW + 1);
	software_moves(v, qp, cq, mr, buf, &peer, &r);
	vt_sync(v, 3);
	cntr_destroy(v, &w);
	cntr_destroy(v, &r);
	close_all(v, qp, mr, cq, pd, buf);
}

static void client(struct vt *v)
{
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct vt_msg peer;
	struct ibv_wc wc;
	struct cntr k;
	uint8_t *buf;
	uint64_t n, end;
	int i, got = 0;

	open_all(v, &pd, &cq, &mr, &buf);
	vt_fill(buf, (size_t)NW * WLEN + 100, SEED);
	memset(buf + TRIG_OFF, 0, TRIG_LEN);
	qp = connect_rc(v, pd, cq, mr, &peer);
	t_begin("node1: initiator counter");
	cntr_create(v, &k);
	CHECK(cntr_bind(v, &k, qp, 1, 0) == 0, "bind slot 1");
	vt_sync(v, 1);
	usleep(200000);
	CHECK(buf[TRIG_OFF] == 0 && !memcmp(buf + TRIG_OFF, buf + TRIG_OFF + 1, TRIG_LEN - 1),
	      "node0's triggered WRITE landed before node1's WRITEs");
	/* NW WRITEs on slot 1, the last signaled; one more without a slot. */
	for (i = 0; i <= NW; i++) {
		struct ibv_sge sge = { (uintptr_t)buf + (uint64_t)i * WLEN,
				       i < NW ? WLEN : 100, mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = i < NW ? WEFT_IB_SEND_CNT_SLOT(1) : IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = peer.addr + (uint64_t)i * WLEN,
				     .rkey = peer.rkey },
		}, *bad;

		if (ibv_post_send(qp, &wr, &bad))
			t_bail("post WRITE %d: errno %d", i, errno);
	}
	got += vt_poll(cq, &wc) && wc.status == IBV_WC_SUCCESS;
	n = cntr_wait(&k, NW);
	CHECK(n == NW, "after the WRITEs the counter is %llu, want %d", (unsigned long long)n, NW);
	for (i = 0; i < NR; i++) {
		uint64_t off = RD_OFF + (uint64_t)i * WLEN;
		struct ibv_sge sge = { (uintptr_t)buf + off, WLEN, mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 100u + (uint64_t)i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_READ, .send_flags = WEFT_IB_SEND_CNT_SLOT(1),
			.wr.rdma = { .remote_addr = peer.addr + off, .rkey = peer.rkey },
		}, *bad;

		if (ibv_post_send(qp, &wr, &bad))
			t_bail("post READ %d: errno %d", i, errno);
	}
	n = cntr_wait(&k, NW + NR);
	CHECK(n == NW + NR, "after the READs the counter is %llu, want %d",
	      (unsigned long long)n, NW + NR);
	/* Counted means placed: the READ data is there at that moment. */
	CHECK(vt_diff(buf + RD_OFF, (size_t)NR * WLEN, SEED, 0) < 0, "READ data at %ld",
	      vt_diff(buf + RD_OFF, (size_t)NR * WLEN, SEED, 0));
	CHECK(got == 1 && k.blk->errors == 0, "the signaled WRITE's completion, no errors");
	/* node0's WAIT_CNT passed at our last WRITE: its WRITE comes by itself. */
	for (end = vt_ms() + 10000; vt_diff(buf + TRIG_OFF, TRIG_LEN, SEED, 0) >= 0 &&
	     vt_ms() < end;)
		;
	CHECK(vt_diff(buf + TRIG_OFF, TRIG_LEN, SEED, 0) < 0, "triggered WRITE data at %ld",
	      vt_diff(buf + TRIG_OFF, TRIG_LEN, SEED, 0));
	vt_sync(v, 2);
	t_checked("node1: %d unsignaled WRITEs and %d unsignaled READs on slot 1 counted %llu by the adapter, a WRITE without a slot not; the READ data in place when counted; node0's WRITE held by WAIT_CNT absent before our WRITEs, landed byte-exact after them",
		  NW, NR, (unsigned long long)n);
	vt_sync(v, 3);	/* node0's software-released WRITE comes to us */
	cntr_destroy(v, &k);
	close_all(v, qp, mr, cq, pd, buf);
}

int main(int argc, char **argv)
{
	return vt_run(argc, argv, server, client);
}
