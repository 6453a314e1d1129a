/* SPDX-License-Identifier: MIT */
/*
 * Event counters (docs/counters.md "Event counters", weft/cnt.h
 * WEFT_CNT_MODE_EVENT): the verbs engine moves a status block up per
 * completion of a WQE naming a counter slot, and per WRITE, atomic or
 * READ served at a QP bound with the event bits; never ahead of the data.
 * Usage: sim-verbs-cntr CASE (meson runs each case as its own test).
 */
#include "vt.h"
#include "weft_sim_cnt.h"

#define MS              1000000ull
#define QA              2u
#define QB              3u
#define WLEN            (64u * 1024u)   /* 16 packets per WRITE */
#define NW              12u

struct ev {
	unsigned int node;
	uint64_t block;                 /* guest address of the status block */
	uint32_t id;
	uint16_t gen;
};

static int bind(struct weft_sim *s, const struct ev *e, uint32_t qpn, uint8_t slot,
		uint8_t events, uint16_t gen, unsigned int *reason)
{
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_BIND_QP, .handle = e->id };
	struct weft_vcmd_resp r;
	int st;

	m.u.bind.gen = gen;
	m.u.bind.slot = slot;
	m.u.bind.events = events;
	m.u.bind.qpn = qpn;
	memset(&r, 0, sizeof(r));
	st = wsc_cmd(s, e->node, &m, &r);
	if (reason)
		*reason = r.reason;
	return st;
}

static void ev_new(struct weft_sim *s, unsigned int node, uint32_t id, struct ev *e)
{
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_CREATE, .handle = id };
	struct weft_vcmd_resp r;
	struct weft_cnt_ev_block *b;

	e->node = node;
	e->id = id;
	e->block = weft_sim_alloc(s, node, 16, 8);
	REQUIRE(e->block, "block");
	b = weft_sim_ptr(s, node, e->block, 16);
	memset(b, 0xff, sizeof(*b));
	m.u.create.block_addr = e->block;
	m.u.create.mode = WEFT_CNT_MODE_EVENT;
	REQUIRE(wsc_cmd(s, node, &m, &r) == 0, "create event counter %u", id);
	e->gen = (uint16_t)r.out[0];
	REQUIRE(b->count == 0 && b->errors == 0, "CREATE did not zero the block");
}

static struct weft_cnt_ev_block ev_read(struct weft_sim *s, const struct ev *e)
{
	struct weft_cnt_ev_block b;

	memcpy(&b, weft_sim_ptr(s, e->node, e->block, 16), sizeof(b));
	return b;
}

/* One WQE with one SGE over [off, off + len) of the node's buffer. */
static void post(struct vt_node *n, struct wsv_qp *q, uint64_t wr_id, unsigned int op,
		 uint64_t off, uint32_t len, uint64_t raddr, uint32_t rkey, uint8_t slot,
		 bool signaled)
{
	struct weft_vwqe w;
	struct weft_vsge sg = { .addr = n->buf + off, .length = len, .lkey = VT_MR };

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = (uint8_t)op;
	w.flags = signaled ? WEFT_VWQE_SIGNALED : 0;
	w.cnt_slot = slot;
	w.u.rdma.remote_addr = raddr;
	w.u.rdma.rkey = rkey;
	if (op == WEFT_VWR_FAA)
		w.u.rdma.compare_add = 5;
	REQUIRE(wsv_post_send(n->s, q, &w, &sg, len ? 1 : 0, true) == 0, "post");
}

static struct {
	struct weft_sim *s;
	const struct ev *e;
	uint64_t count, errors;
} wt;

static bool reached(void *arg)
{
	struct weft_cnt_ev_block b = ev_read(wt.s, wt.e);

	(void)arg;
	return b.count >= wt.count && b.errors >= wt.errors;
}

/* Run the sim until the block of e reaches count, errors, then until idle:
 * it must be exactly there. */
static void ev_wait(struct weft_sim *s, const struct ev *e, uint64_t count, uint64_t errors,
		    const char *what)
{
	struct weft_cnt_ev_block b;

	wt.s = s;
	wt.e = e;
	wt.count = count;
	wt.errors = errors;
	weft_sim_run_until(s, reached, NULL, weft_sim_now(s) + 2000 * MS);
	weft_sim_run_idle(s, 1000000);
	b = ev_read(s, e);
	REQUIRE(b.count == count && b.errors == errors,
	       "%s: block count %llu errors %llu, want %llu %llu", what,
	       (unsigned long long)b.count, (unsigned long long)b.errors,
	       (unsigned long long)count, (unsigned long long)errors);
}

/* ---- the DMA hook: the block never moves ahead of the data --------------- */
static struct {
	struct weft_sim *s;
	const struct ev *ev;
	struct vt_node *dst, *src;
	uint64_t dst_off, src_off;      /* event i covers WLEN bytes at + i * WLEN */
	unsigned int writes;            /* block writes seen */
	unsigned int ahead;             /* of them, before their data was in place */
} hk;

static void hook(void *opaque, unsigned int node, uint64_t addr, size_t len, bool is_write)
{
	(void)opaque;
	if (!hk.ev || !is_write || node != hk.ev->node || addr != hk.ev->block || len != 16)
		return;
	/* This write makes the count writes + 1: events 0 .. writes placed. */
	if (memcmp(hk.dst->mem + hk.dst_off + (uint64_t)hk.writes * WLEN,
		   hk.src->mem + hk.src_off + (uint64_t)hk.writes * WLEN, WLEN) != 0)
		hk.ahead++;
	hk.writes++;
}

static void setup(struct weft_sim **s, uint32_t drop_ppm, uint64_t jitter, struct vt_node *a,
		  struct vt_node *b, struct wsv_qp *qa, struct wsv_qp *qb)
{
	*s = vt_sim(2, 64u << 20, 7, drop_ppm, jitter);
	vt_node(*s, 0, 4u << 20, 8, a);
	vt_node(*s, 1, 4u << 20, 8, b);
	vt_rc(a, QA, b, QB, 6, NULL, qa, qb);
}

/* Initiator: SEND, WRITE, READ and FAA naming slot 1 count on the
 * counter whether signaled or not; a WQE without a slot does not; READ
 * data is in place at the block write that counts it. */
static void case_initiator(void)
{
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_vcqe e[8];
	struct ev k;
	uint64_t ev0;

	setup(&s, 0, 0, &a, &b, &qa, &qb);
	ev_new(s, 0, 5, &k);
	REQUIRE(bind(s, &k, QA, 1, 0, k.gen, NULL) == 0, "bind slot 1");
	vt_fill(a.mem, 1u << 20, 1);
	vt_fill(b.mem + (2u << 20), WLEN, 2);
	vt_recv(&b, &qb, 100, 0, 4096);
	ev0 = vt_cnt(s, 0, WEFT_CNT_C_EVENTS);
	post(&a, &qa, 1, WEFT_VWR_SEND, 0, 4096, 0, 0, 1, false);
	post(&a, &qa, 2, WEFT_VWR_WRITE, 8192, WLEN, b.buf + (1u << 20), VT_MR, 1, true);
	post(&a, &qa, 3, WEFT_VWR_WRITE, 8192, 100, b.buf + (3u << 20), VT_MR, 0, true);
	post(&a, &qa, 4, WEFT_VWR_FAA, 0x10000, 8, b.buf + 0x30000, VT_MR, 1, false);
	REQUIRE(wsv_wait(s, &a.cq, e, 2, 200 * MS) == 2, "two signaled CQEs");
	ev_wait(s, &k, 3, 0, "SEND (unsignaled), WRITE, FAA (unsignaled)");
	REQUIRE(vt_cnt(s, 0, WEFT_CNT_C_EVENTS) - ev0 == 3, "C_EVENTS did not move by 3");
	/* The READ's data must be in place when the block says 4. */
	hk.s = s;
	hk.ev = &k;
	hk.dst = &a;
	hk.src = &b;
	hk.dst_off = (2u << 20) - 3u * WLEN;    /* writes 0..2 already counted */
	hk.src_off = (2u << 20) - 3u * WLEN;
	hk.writes = 3;
	weft_sim_set_dma_hook(s, hook, NULL);
	post(&a, &qa, 5, WEFT_VWR_READ, 2u << 20, WLEN, b.buf + (2u << 20), VT_MR, 1, true);
	REQUIRE(wsv_wait(s, &a.cq, e, 1, 200 * MS) == 1 && e[0].wr_id == 5 && !e[0].status,
	       "READ CQE");
	ev_wait(s, &k, 4, 0, "READ");
	REQUIRE(hk.writes == 4 && hk.ahead == 0, "block writes %u, %u ahead of the READ data",
	       hk.writes, hk.ahead);
	weft_sim_set_dma_hook(s, NULL, NULL);
	hk.ev = NULL;
	t_checked("initiator: SEND and FAA unsignaled, WRITE and READ signaled on slot 1 count 4, a WQE without a slot none; C_EVENTS +4; the READ's 64 KiB in place at the block write that counts it");
	weft_sim_free(s);
}

/* Target: WRITEs (16 packets each) over a fabric that drops 5% and
 * reorders, one FAA and READs; REMOTE_WRITE and REMOTE_READ counters on
 * the responder's QP count each exactly once (resent READ requests
 * included), and each WRITE's bytes are in place when it is counted. */
static void case_target(void)
{
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_vcqe e[NW + 8];
	struct ev w, r;
	unsigned int i, got;

	setup(&s, 50000, 50000, &a, &b, &qa, &qb);
	ev_new(s, 1, 7, &w);
	ev_new(s, 1, 8, &r);
	REQUIRE(bind(s, &w, QB, 2, WEFT_CNT_EV_REMOTE_WRITE, w.gen, NULL) == 0, "bind writes");
	REQUIRE(bind(s, &r, QB, 3, WEFT_CNT_EV_REMOTE_READ, r.gen, NULL) == 0, "bind reads");
	vt_fill(a.mem, (uint64_t)NW * WLEN, 3);
	memset(b.mem, 0, (uint64_t)NW * WLEN);
	hk.s = s;
	hk.ev = &w;
	hk.dst = &b;
	hk.src = &a;
	hk.dst_off = hk.src_off = 0;
	hk.writes = hk.ahead = 0;
	weft_sim_set_dma_hook(s, hook, NULL);
	for (i = 0; i < NW; i++)
		post(&a, &qa, i, WEFT_VWR_WRITE, (uint64_t)i * WLEN, WLEN,
		     b.buf + (uint64_t)i * WLEN, VT_MR, 0, true);
	for (got = 0; got < NW;) {
		unsigned int n = wsv_wait(s, &a.cq, e, 1, 2000 * MS);

		REQUIRE(n == 1 && e[0].status == 0, "WRITE %u: no or bad CQE", got);
		got++;
	}
	ev_wait(s, &w, NW, 0, "remote writes");
	REQUIRE(hk.writes == NW && hk.ahead == 0, "block writes %u, %u ahead of the data",
	       hk.writes, hk.ahead);
	weft_sim_set_dma_hook(s, NULL, NULL);
	hk.ev = NULL;
	post(&a, &qa, 50, WEFT_VWR_FAA, (2u << 20), 8, b.buf + (3u << 20), VT_MR, 0, true);
	for (i = 0; i < 4; i++)
		post(&a, &qa, 60 + i, WEFT_VWR_READ, (2u << 20) + 4096 + (uint64_t)i * WLEN, WLEN,
		     b.buf + (uint64_t)i * WLEN, VT_MR, 0, true);
	REQUIRE(wsv_wait(s, &a.cq, e, 5, 3000 * MS) == 5, "FAA and READ CQEs");
	for (i = 0; i < 5; i++)
		REQUIRE(e[i].status == 0, "CQE %u status %u", i, e[i].status);
	ev_wait(s, &w, NW + 1, 0, "remote writes and the FAA");
	ev_wait(s, &r, 4, 0, "remote reads");
	REQUIRE(memcmp(a.mem + (2u << 20) + 4096, a.mem, 4u * WLEN) == 0, "READ data differs");
	t_checked("target, 5%% loss and reordering: %u WRITEs of 64 KiB and 1 FAA count %u on REMOTE_WRITE, 4 READs count 4 on REMOTE_READ, exactly once (%llu resends, %llu duplicate reads); no block write ahead of its WRITE's bytes",
		  NW, NW + 1, (unsigned long long)vt_cnt(s, 0, WEFT_CNT_V_RETRANSMITS),
		  (unsigned long long)vt_cnt(s, 1, WEFT_CNT_V_DUP_READS));
	weft_sim_free(s);
}

/* Errors and refusals: an error completion and the flushes after it count
 * as errors; an unbound or out-of-range slot fails the WQE (CNT_SLOT); a
 * destroyed counter's slot drops its event (CNT_SLOT); BIND refusals name
 * their reason; CREATE of an EVENT object with a region is refused. */
static void case_errors(void)
{
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_vcqe e[4];
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_CREATE, .handle = 9 };
	struct weft_vcmd_resp resp;
	struct wsc_buf buf;
	struct ev k, bytes;
	unsigned int reason;
	uint64_t d0;

	setup(&s, 0, 0, &a, &b, &qa, &qb);
	ev_new(s, 0, 5, &k);
	/* BIND refusals. */
	REQUIRE(bind(s, &k, QA, 0, 0, k.gen, &reason) == WEFT_CMD_EINVAL &&
		reason == WEFT_R_CNT_SLOT, "slot 0");
	REQUIRE(bind(s, &k, QA, WEFT_CNT_QP_SLOTS, 0, k.gen, &reason) == WEFT_CMD_EINVAL &&
		reason == WEFT_R_CNT_SLOT, "slot 4");
	REQUIRE(bind(s, &k, QA, 1, 0x80, k.gen, &reason) == WEFT_CMD_EINVAL &&
		reason == WEFT_R_CNT_MODE, "unknown event bit");
	REQUIRE(bind(s, &k, QA, 1, 0, (uint16_t)(k.gen + 1), &reason) == WEFT_CMD_EINVAL &&
		reason == WEFT_R_CNT_OBJ_STALE, "stale generation");
	REQUIRE(bind(s, &k, 77, 1, 0, k.gen, &reason) == WEFT_CMD_EINVAL &&
		reason == WEFT_R_QP_INVALID, "no such QP");
	REQUIRE(wsc_buf_new(s, 0, 8192, 0, false, &buf) == 0, "buffer");
	REQUIRE(wsc_create(s, 0, 6, weft_sim_alloc(s, 0, 16, 8), &buf, WEFT_CNT_MODE_BYTES, 0, 0,
			   0, &bytes.gen) == 0, "BYTES object");
	bytes.node = 0;
	bytes.id = 6;
	REQUIRE(bind(s, &bytes, QA, 1, 0, bytes.gen, &reason) == WEFT_CMD_EINVAL &&
		reason == WEFT_R_CNT_MODE, "BYTES object bound");
	REQUIRE(wsc_destroy(s, 0, 6, bytes.gen) == 0, "destroy the BYTES object");
	wsc_buf_free(s, &buf);
	m.u.create.block_addr = weft_sim_alloc(s, 0, 16, 8);
	m.u.create.mode = WEFT_CNT_MODE_EVENT;
	m.u.create.length = 4096;
	REQUIRE(wsc_cmd(s, 0, &m, &resp) == WEFT_CMD_EINVAL && resp.reason == WEFT_R_CNT_MODE,
		"EVENT object with a region");
	/* A WQE naming an unbound slot, then one naming slot 9. */
	d0 = vt_drops(s, 0, WEFT_R_CNT_SLOT);
	post(&a, &qa, 1, WEFT_VWR_SEND, 0, 64, 0, 0, 2, true);
	REQUIRE(wsv_wait(s, &a.cq, e, 1, 100 * MS) == 1 && e[0].status == WEFT_VWC_LOC_QP_OP_ERR &&
		e[0].byte_len == WEFT_R_CNT_SLOT, "unbound slot: LOC_QP_OP_ERR CNT_SLOT");
	vt_rc(&a, 4, &b, 5, 6, NULL, &qa, &qb);
	post(&a, &qa, 2, WEFT_VWR_SEND, 0, 64, 0, 0, 9, true);
	REQUIRE(wsv_wait(s, &a.cq, e, 1, 100 * MS) == 1 && e[0].status == WEFT_VWC_LOC_QP_OP_ERR &&
		e[0].byte_len == WEFT_R_CNT_SLOT, "slot 9: LOC_QP_OP_ERR CNT_SLOT");
	REQUIRE(vt_drops(s, 0, WEFT_R_CNT_SLOT) == d0, "a refused WQE counted as a dropped event");
	/* An error completion and a flush on a bound slot count as errors. */
	vt_rc(&a, 6, &b, 7, 6, NULL, &qa, &qb);
	REQUIRE(bind(s, &k, 6, 1, 0, k.gen, NULL) == 0, "bind");
	post(&a, &qa, 3, WEFT_VWR_WRITE, 0, 64, b.buf, VT_MR + 1, 1, true);
	post(&a, &qa, 4, WEFT_VWR_WRITE, 0, 64, b.buf, VT_MR, 1, true);
	REQUIRE(wsv_wait(s, &a.cq, e, 2, 200 * MS) == 2 && e[0].status && e[1].status ==
		WEFT_VWC_WR_FLUSH_ERR, "error and flush CQEs");
	ev_wait(s, &k, 0, 2, "an error and a flush");
	/* A destroyed counter's bound slot: the WQE's event is dropped. */
	vt_rc(&a, 8, &b, 9, 6, NULL, &qa, &qb);
	REQUIRE(bind(s, &k, 8, 1, 0, k.gen, NULL) == 0, "bind");
	post(&a, &qa, 5, WEFT_VWR_WRITE, 0, 64, b.buf, VT_MR, 0, true);
	REQUIRE(wsc_destroy(s, 0, k.id, k.gen) == 0, "destroy");
	d0 = vt_drops(s, 0, WEFT_R_CNT_SLOT);
	post(&a, &qa, 6, WEFT_VWR_WRITE, 0, 64, b.buf, VT_MR, 1, true);
	REQUIRE(wsv_wait(s, &a.cq, e, 2, 200 * MS) == 2 && !e[0].status && !e[1].status,
		"WRITEs complete");
	REQUIRE(vt_drops(s, 0, WEFT_R_CNT_SLOT) == d0 + 1, "destroyed counter's event not dropped");
	REQUIRE(ev_read(s, &k).errors == 2 && ev_read(s, &k).count == 0,
		"a destroyed counter's block moved");
	t_checked("BIND refusals (slot 0 and 4: CNT_SLOT, unknown event or BYTES object: CNT_MODE, stale gen, no QP), EVENT CREATE with a region refused; unbound and out-of-range slots fail the WQE with CNT_SLOT; an error CQE and a flush count 2 errors; a destroyed counter's event is dropped (CNT_SLOT), its block untouched");
	weft_sim_free(s);
}

/* ---- WAIT_CNT (docs/counters.md "Waiting on a counter") ------------------- */
#define QC              4u
#define QD              5u

static void post_wait(struct vt_node *n, struct wsv_qp *q, uint64_t wr_id, uint8_t slot,
		      uint64_t threshold)
{
	struct weft_vwqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = WEFT_VWR_WAIT_CNT;
	w.flags = WEFT_VWQE_SIGNALED;
	w.cnt_slot = slot;
	w.u.wait.threshold = threshold;
	REQUIRE(wsv_post_send(n->s, q, &w, NULL, 0, true) == 0, "post WAIT_CNT");
}

/* n WRITEs of 64 bytes on q, each counted on q's slot (0: none). */
static void writes(struct vt_node *a, struct wsv_qp *q, struct vt_node *b, unsigned int n,
		   uint64_t wr_id, uint8_t slot)
{
	struct weft_vcqe e;
	unsigned int i;

	for (i = 0; i < n; i++) {
		post(a, q, wr_id + i, WEFT_VWR_WRITE, 0, 64, b->buf + 0x10000, VT_MR, slot, true);
		REQUIRE(wsv_wait(a->s, &a->cq, &e, 1, 200 * MS) == 1 && e.wr_id == wr_id + i &&
			!e.status, "counting WRITE %u", i);
	}
}

/* A WAIT whose threshold is reached passes at once (CQE WAIT_CNT), and
 * one behind a SEND counted on its own slot passes when that SEND
 * completes; the WQEs after each run. */
static void case_wait_pass(void)
{
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_vcqe e[4];
	struct ev k;

	setup(&s, 0, 0, &a, &b, &qa, &qb);
	ev_new(s, 0, 5, &k);
	REQUIRE(bind(s, &k, QA, 1, 0, k.gen, NULL) == 0, "bind slot 1");
	vt_fill(a.mem, 8192, 4);
	vt_recv(&b, &qb, 100, 0, 4096);
	post_wait(&a, &qa, 1, 1, 0);
	post(&a, &qa, 2, WEFT_VWR_WRITE, 0, 4096, b.buf + 0x20000, VT_MR, 0, true);
	REQUIRE(wsv_wait(s, &a.cq, e, 2, 200 * MS) == 2, "two CQEs");
	REQUIRE(e[0].wr_id == 1 && e[0].opcode == WEFT_VWC_WAIT_CNT && !e[0].status &&
		e[1].wr_id == 2 && e[1].opcode == WEFT_VWC_RDMA_WRITE && !e[1].status,
		"WAIT then WRITE: %llu op %u st %u, %llu", (unsigned long long)e[0].wr_id,
		e[0].opcode, e[0].status, (unsigned long long)e[1].wr_id);
	post(&a, &qa, 3, WEFT_VWR_SEND, 4096, 64, 0, 0, 1, true);
	post_wait(&a, &qa, 4, 1, 1);
	post(&a, &qa, 5, WEFT_VWR_WRITE, 4096, 64, b.buf + 0x30000, VT_MR, 0, true);
	REQUIRE(wsv_wait(s, &a.cq, e, 3, 200 * MS) == 3 && e[0].wr_id == 3 && e[1].wr_id == 4 &&
		e[1].opcode == WEFT_VWC_WAIT_CNT && e[2].wr_id == 5 && !e[0].status &&
		!e[1].status && !e[2].status, "SEND, WAIT(1), WRITE in order");
	ev_wait(s, &k, 1, 0, "the SEND only (a WAIT counts nothing)");
	REQUIRE(memcmp(b.mem + 0x20000, a.mem, 4096) == 0 &&
		memcmp(b.mem + 0x30000, a.mem + 4096, 64) == 0, "WRITE data");
	REQUIRE(vt_cnt(s, 0, WEFT_CNT_V_WAITS) == 2 && vt_cnt(s, 0, WEFT_CNT_V_WAIT_HELD) <= 1,
		"V_WAITS %llu", (unsigned long long)vt_cnt(s, 0, WEFT_CNT_V_WAITS));
	t_checked("WAIT(0) passes at once with a WAIT_CNT CQE and the WRITE after it runs; WAIT(1) behind a SEND counted on the slot passes once the SEND completes; the WAITs count no event; V_WAITS 2");
	weft_sim_free(s);
}

/* WAIT(3) on QA's slot, whose counter counts remote WRITEs served on
 * another QP (QC), holds a WRITE: nothing moves through two remote WRITEs
 * (no CQE, no data, QA not polled: V_WAIT_HELD 1 and no wake), the third
 * releases it; its data lands after the three it waited for. */
static void case_wait_remote(void)
{
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb, qc, qd;
	struct weft_vcqe e[4];
	struct ev k;
	uint64_t polls;

	setup(&s, 0, 0, &a, &b, &qa, &qb);
	vt_rc(&a, QC, &b, QD, 6, NULL, &qc, &qd);
	ev_new(s, 0, 5, &k);
	REQUIRE(bind(s, &k, QA, 1, 0, k.gen, NULL) == 0, "bind QA slot 1");
	REQUIRE(bind(s, &k, QC, 2, WEFT_CNT_EV_REMOTE_WRITE, k.gen, NULL) == 0, "bind QC");
	vt_fill(a.mem + 0x40000, 4096, 5);
	memset(b.mem + 0x50000, 0, 4096);
	post_wait(&a, &qa, 1, 1, 3);
	post(&a, &qa, 2, WEFT_VWR_WRITE, 0x40000, 4096, b.buf + 0x50000, VT_MR, 0, true);
	vt_no_cqe(&a, 20 * MS);
	REQUIRE(vt_cnt(s, 0, WEFT_CNT_V_WAIT_HELD) == 1, "WAIT not held once");
	writes(&b, &qd, &a, 2, 10, 0);
	ev_wait(s, &k, 2, 0, "two remote WRITEs");
	polls = vt_cnt(s, 0, WEFT_CNT_V_WAIT_WAKES);
	vt_no_cqe(&a, 20 * MS);
	REQUIRE(polls == 0 && vt_cnt(s, 0, WEFT_CNT_V_WAITS) == 0, "woken below the threshold");
	REQUIRE(b.mem[0x50000] == 0 && memcmp(b.mem + 0x50000, b.mem + 0x50001, 4095) == 0,
		"the held WRITE moved data");
	writes(&b, &qd, &a, 1, 20, 0);
	REQUIRE(wsv_wait(s, &a.cq, e, 2, 200 * MS) == 2 && e[0].wr_id == 1 && !e[0].status &&
		e[1].wr_id == 2 && !e[1].status, "WAIT and WRITE CQEs after the third");
	REQUIRE(memcmp(b.mem + 0x50000, a.mem + 0x40000, 4096) == 0, "released WRITE data");
	REQUIRE(vt_cnt(s, 0, WEFT_CNT_V_WAIT_WAKES) == 1 && vt_cnt(s, 0, WEFT_CNT_V_WAITS) == 1,
		"one wake, one WAIT");
	t_checked("WAIT(3) holds a WRITE through two remote WRITEs served on another QP (no CQE, no data, no wake); the third wakes the QP once and the WRITE lands, 4 KiB byte-exact");
	weft_sim_free(s);
}

/* Bad WAITs: an unbound slot, slot 9, a WAIT with an SGE, a slot whose
 * counter was destroyed: LOC_QP_OP_ERR WAIT_SLOT (counted), the WQEs
 * after it flushed, no event counted. */
static void case_wait_bad(void)
{
	static const struct {
		uint8_t slot;
		bool sge;
		const char *what;
	} bad[] = {
		{ 2, false, "unbound slot" }, { 9, false, "slot 9" }, { 1, true, "an SGE" },
		{ 1, false, "destroyed counter" },
	};
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_vcqe e[4];
	struct ev k;
	unsigned int i;
	uint64_t d0;

	setup(&s, 0, 0, &a, &b, &qa, &qb);
	ev_new(s, 0, 5, &k);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct weft_vwqe w;
		struct weft_vsge sg = { .addr = a.buf, .length = 8, .lkey = VT_MR };
		uint32_t qn = 10 + 2 * i;

		vt_rc(&a, qn, &b, qn + 1, 6, NULL, &qa, &qb);
		if (i < 3)
			REQUIRE(bind(s, &k, qn, 1, 0, k.gen, NULL) == 0, "bind");
		if (i == 3) {
			ev_new(s, 0, 6, &k);
			REQUIRE(bind(s, &k, qn, 1, 0, k.gen, NULL) == 0, "bind");
			REQUIRE(wsc_destroy(s, 0, 6, k.gen) == 0, "destroy");
		}
		d0 = vt_drops(s, 0, WEFT_R_WAIT_SLOT);
		memset(&w, 0, sizeof(w));
		w.wr_id = 1;
		w.opcode = WEFT_VWR_WAIT_CNT;
		w.cnt_slot = bad[i].slot;
		REQUIRE(wsv_post_send(s, &qa, &w, &sg, bad[i].sge ? 1 : 0, true) == 0, "post");
		post(&a, &qa, 2, WEFT_VWR_WRITE, 0, 64, b.buf, VT_MR, 0, true);
		REQUIRE(wsv_wait(s, &a.cq, e, 2, 200 * MS) == 2, "%s: two CQEs", bad[i].what);
		REQUIRE(e[0].wr_id == 1 && e[0].status == WEFT_VWC_LOC_QP_OP_ERR &&
			e[0].byte_len == WEFT_R_WAIT_SLOT && e[1].status == WEFT_VWC_WR_FLUSH_ERR,
			"%s: status %u reason %u, then %u", bad[i].what, e[0].status,
			e[0].byte_len, e[1].status);
		REQUIRE(vt_drops(s, 0, WEFT_R_WAIT_SLOT) == d0 + 1, "%s: not counted", bad[i].what);
		REQUIRE(vt_qp_state(&a, qn) == WEFT_VQPS_ERR, "%s: QP not in ERR", bad[i].what);
	}
	t_checked("WAIT on an unbound slot, slot 9, with an SGE, on a destroyed counter: LOC_QP_OP_ERR WAIT_SLOT (drop counter +1 each), the WRITE after it flushed, QP in ERR");
	weft_sim_free(s);
}

/* A QP destroyed, and one moved to ERR, while they wait: nothing
 * completes for the destroyed one, the other flushes its WAIT and WRITE;
 * the counter then moves past both thresholds with no wake, and a QP
 * created again with the same number waits and passes normally. */
static void case_wait_qp_gone(void)
{
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb, qc, qd, q6, q7;
	struct weft_vcqe e[4];
	struct weft_vcmd mod;
	struct weft_vcmd k = { .op = WEFT_VCMD_DESTROY_QP, .handle = QA };
	struct ev ev;

	setup(&s, 0, 0, &a, &b, &qa, &qb);
	vt_rc(&a, QC, &b, QD, 6, NULL, &qc, &qd);
	vt_rc(&a, 6, &b, 7, 6, NULL, &q6, &q7);
	ev_new(s, 0, 5, &ev);
	REQUIRE(bind(s, &ev, QA, 1, 0, ev.gen, NULL) == 0, "bind QA");
	REQUIRE(bind(s, &ev, 6, 1, 0, ev.gen, NULL) == 0, "bind QP 6");
	REQUIRE(bind(s, &ev, QC, 1, 0, ev.gen, NULL) == 0, "bind QC");
	post_wait(&a, &qa, 1, 1, 2);
	post(&a, &qa, 2, WEFT_VWR_WRITE, 0, 64, b.buf, VT_MR, 0, true);
	post_wait(&a, &q6, 3, 1, 1);
	post(&a, &q6, 4, WEFT_VWR_WRITE, 0, 64, b.buf, VT_MR, 0, true);
	vt_no_cqe(&a, 10 * MS);
	REQUIRE(vt_cnt(s, 0, WEFT_CNT_V_WAIT_HELD) == 2, "two WAITs held");
	REQUIRE(wsv_cmd(s, 0, &k, NULL) == 0, "destroy QA while it waits");
	memset(&mod, 0, sizeof(mod));
	mod.u.mod.state = WEFT_VQPS_ERR;
	REQUIRE(wsv_modify(s, 0, 6, WEFT_VQPA_STATE, &mod) == 0, "QP 6 to ERR");
	REQUIRE(wsv_wait(s, &a.cq, e, 2, 200 * MS) == 2 && e[0].wr_id == 3 &&
		e[0].opcode == WEFT_VWC_WAIT_CNT && e[0].status == WEFT_VWC_WR_FLUSH_ERR &&
		e[1].wr_id == 4 && e[1].status == WEFT_VWC_WR_FLUSH_ERR, "QP 6 flushed");
	writes(&a, &qc, &b, 3, 10, 1);
	ev_wait(s, &ev, 3, 0, "three WRITEs on QC, no error from the flushed WAIT");
	vt_no_cqe(&a, 10 * MS);
	REQUIRE(vt_cnt(s, 0, WEFT_CNT_V_WAIT_WAKES) == 0, "a gone QP woken");
	k.handle = QB;
	REQUIRE(wsv_cmd(s, 1, &k, NULL) == 0, "destroy QB");
	vt_rc(&a, QA, &b, QB, 6, NULL, &qa, &qb);
	REQUIRE(bind(s, &ev, QA, 1, 0, ev.gen, NULL) == 0, "bind the new QA");
	post_wait(&a, &qa, 5, 1, 4);
	post(&a, &qa, 6, WEFT_VWR_WRITE, 0, 64, b.buf, VT_MR, 0, true);
	writes(&a, &qc, &b, 1, 20, 1);
	REQUIRE(wsv_wait(s, &a.cq, e, 2, 200 * MS) == 2 && e[0].wr_id == 5 && !e[0].status &&
		e[1].wr_id == 6 && !e[1].status, "the new QA's WAIT(4) passes");
	t_checked("QP destroyed while waiting: no CQE, no wake after; QP to ERR while waiting: WAIT and WRITE flushed, no error event; the counter passes both thresholds untroubled; a new QP of the same number waits on it and passes at 4");
	weft_sim_free(s);
}

/* The counter goes away while QPs wait: UNBIND of the slot, BIND of
 * another counter to it, DESTROY of the counter: each WAIT completes
 * LOC_QP_OP_ERR WAIT_GONE (counted), the WRITE after it is flushed. */
static void case_wait_unbind(void)
{
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_vcqe e[4];
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_UNBIND_QP };
	struct weft_vcmd_resp r;
	struct ev k, k2;
	unsigned int i;

	setup(&s, 0, 0, &a, &b, &qa, &qb);
	ev_new(s, 0, 5, &k);
	ev_new(s, 0, 6, &k2);
	for (i = 0; i < 3; i++) {
		uint32_t qn = 10 + 2 * i;

		vt_rc(&a, qn, &b, qn + 1, 6, NULL, &qa, &qb);
		REQUIRE(bind(s, &k, qn, 1, 0, k.gen, NULL) == 0, "bind");
		post_wait(&a, &qa, 1, 1, 100);
		post(&a, &qa, 2, WEFT_VWR_WRITE, 0, 64, b.buf, VT_MR, 0, true);
		vt_no_cqe(&a, 10 * MS);
		if (i == 0) {
			m.u.bind.qpn = qn;
			m.u.bind.slot = 1;
			REQUIRE(wsc_cmd(s, 0, &m, &r) == 0, "unbind");
		} else if (i == 1) {
			REQUIRE(bind(s, &k2, qn, 1, 0, k2.gen, NULL) == 0, "rebind");
		} else {
			REQUIRE(wsc_destroy(s, 0, k.id, k.gen) == 0, "destroy");
		}
		REQUIRE(wsv_wait(s, &a.cq, e, 2, 200 * MS) == 2 && e[0].wr_id == 1 &&
			e[0].status == WEFT_VWC_LOC_QP_OP_ERR && e[0].byte_len == WEFT_R_WAIT_GONE &&
			e[1].wr_id == 2 && e[1].status == WEFT_VWC_WR_FLUSH_ERR,
			"case %u: status %u reason %u, then %u", i, e[0].status, e[0].byte_len,
			e[1].status);
		REQUIRE(vt_drops(s, 0, WEFT_R_WAIT_GONE) == i + 1, "WAIT_GONE not counted");
	}
	t_checked("a WAIT whose slot is unbound, rebound to another counter, or whose counter is destroyed: LOC_QP_OP_ERR WAIT_GONE (counted), the WRITE after it flushed");
	weft_sim_free(s);
}

static int ev_set(struct weft_sim *s, const struct ev *e, uint16_t gen, uint8_t op, uint8_t word,
		  uint64_t value, uint64_t *out, unsigned int *reason)
{
	struct weft_cnt_cmd m = { .op = WEFT_CNT_CMD_EV_SET, .handle = e->id };
	struct weft_vcmd_resp r;
	int st;

	m.u.ev.gen = gen;
	m.u.ev.op = op;
	m.u.ev.word = word;
	m.u.ev.value = value;
	memset(&r, 0, sizeof(r));
	st = wsc_cmd(s, e->node, &m, &r);
	if (out)
		*out = r.out[0];
	if (reason)
		*reason = r.reason;
	return st;
}

/* EV_SET (hw-spec 18.2, fi_cntr_add and fi_cntr_set in the adapter): a
 * WAIT(10) holding a WRITE passes only when software's ADD brings the count
 * to 10, on top of the events the engine counted; SET moves the count
 * both ways, and a lower count releases nothing; errors move apart. */
static void case_ev_set(void)
{
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct weft_vcqe e[2];
	struct weft_cnt_ev_block blk;
	struct ev k;
	uint64_t out = 0;

	setup(&s, 0, 0, &a, &b, &qa, &qb);
	ev_new(s, 0, 6, &k);
	REQUIRE(bind(s, &k, QA, 1, 0, k.gen, NULL) == 0, "bind slot 1");
	writes(&a, &qa, &b, 3, 1, 1);
	ev_wait(s, &k, 3, 0, "three WRITEs");
	vt_fill(a.mem + 0x40000, 4096, 7);
	memset(b.mem + 0x50000, 0, 4096);
	post_wait(&a, &qa, 10, 1, 10);
	post(&a, &qa, 11, WEFT_VWR_WRITE, 0x40000, 4096, b.buf + 0x50000, VT_MR, 0, true);
	vt_no_cqe(&a, 20 * MS);
	REQUIRE(ev_set(s, &k, k.gen, WEFT_CNT_EV_ADD, WEFT_CNT_EV_COUNT, 6, &out, NULL) == 0 &&
		out == 9, "ADD 6: out %llu", (unsigned long long)out);
	blk = ev_read(s, &k);
	REQUIRE(blk.count == 9 && blk.errors == 0, "block after ADD 6: %llu",
		(unsigned long long)blk.count);
	vt_no_cqe(&a, 20 * MS);
	REQUIRE(b.mem[0x50000] == 0 && vt_cnt(s, 0, WEFT_CNT_V_WAIT_WAKES) == 0,
		"released at 9 of 10");
	REQUIRE(ev_set(s, &k, k.gen, WEFT_CNT_EV_ADD, WEFT_CNT_EV_COUNT, 1, &out, NULL) == 0 &&
		out == 10, "ADD 1");
	REQUIRE(wsv_wait(s, &a.cq, e, 2, 200 * MS) == 2 && e[0].wr_id == 10 && !e[0].status &&
		e[0].opcode == WEFT_VWC_WAIT_CNT && e[1].wr_id == 11 && !e[1].status,
		"WAIT and WRITE after ADD 1");
	REQUIRE(memcmp(b.mem + 0x50000, a.mem + 0x40000, 4096) == 0 &&
		vt_cnt(s, 0, WEFT_CNT_V_WAIT_WAKES) == 1, "released WRITE data, one wake");
	t_checked("WAIT(10) behind 3 counted WRITEs holds through EV_SET ADD 6 (block 9, no wake) and passes at ADD 1 (block 10): its WRITE lands, 4 KiB byte-exact, one wake");
	REQUIRE(ev_set(s, &k, k.gen, WEFT_CNT_EV_SET, WEFT_CNT_EV_COUNT, 2, &out, NULL) == 0 &&
		out == 2 && ev_read(s, &k).count == 2, "SET 2");
	post_wait(&a, &qa, 12, 1, 4);
	post(&a, &qa, 13, WEFT_VWR_WRITE, 0x40000, 64, b.buf + 0x60000, VT_MR, 0, true);
	vt_no_cqe(&a, 20 * MS);
	REQUIRE(ev_set(s, &k, k.gen, WEFT_CNT_EV_SET, WEFT_CNT_EV_COUNT, 4, NULL, NULL) == 0,
		"SET 4");
	REQUIRE(wsv_wait(s, &a.cq, e, 2, 200 * MS) == 2 && e[0].wr_id == 12 && e[1].wr_id == 13 &&
		!e[0].status && !e[1].status, "WAIT(4) after SET 4");
	REQUIRE(ev_set(s, &k, k.gen, WEFT_CNT_EV_ADD, WEFT_CNT_EV_ERRORS, 2, NULL, NULL) == 0 &&
		ev_set(s, &k, k.gen, WEFT_CNT_EV_SET, WEFT_CNT_EV_ERRORS, 7, &out, NULL) == 0 &&
		out == 7, "errors ADD 2, SET 7");
	blk = ev_read(s, &k);
	REQUIRE(blk.count == 4 && blk.errors == 7, "block %llu/%llu, want 4/7",
		(unsigned long long)blk.count, (unsigned long long)blk.errors);
	t_checked("SET 2 lowers the count (block 2), a WAIT(4) then holds until SET 4; errors ADD 2 then SET 7 leave the count at 4 (block 4/7)");
	weft_sim_free(s);
}

/* Hostile EV_SET: an object out of range, not live, of another generation,
 * not an EVENT object, an unknown op or word: EINVAL with its reason,
 * counted in CMD_DISCARDED, the block unchanged. */
static void case_ev_set_bad(void)
{
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	struct ev k, far = { .node = 0, .id = WEFT_CNT_NR_OBJ }, dead = { .node = 0, .id = 9 };
	struct weft_cnt_ev_block blk;
	struct wsc_buf region;
	struct ev ops;
	unsigned int reason = 0;
	uint64_t before;

	setup(&s, 0, 0, &a, &b, &qa, &qb);
	ev_new(s, 0, 7, &k);
	REQUIRE(ev_set(s, &k, k.gen, WEFT_CNT_EV_SET, WEFT_CNT_EV_COUNT, 5, NULL, NULL) == 0,
		"SET 5");
	ops = (struct ev){ .node = 0, .id = 8 };
	REQUIRE(wsc_buf_new(s, 0, 4096, 0, false, &region) == 0 &&
		wsc_create(s, 0, ops.id, weft_sim_alloc(s, 0, 16, 8), &region, WEFT_CNT_MODE_OPS, 0,
			   0, 3, &ops.gen) == 0, "create an OPS object");
	before = vt_cnt(s, 0, WEFT_CNT_CMD_DISCARDED);
	REQUIRE(ev_set(s, &far, 1, WEFT_CNT_EV_ADD, 0, 1, NULL, &reason) != 0 &&
		reason == WEFT_R_CNT_OBJ_INVALID, "object out of range: reason %u", reason);
	REQUIRE(ev_set(s, &dead, 1, WEFT_CNT_EV_ADD, 0, 1, NULL, &reason) != 0 &&
		reason == WEFT_R_CNT_OBJ_INVALID, "object not live: reason %u", reason);
	REQUIRE(ev_set(s, &k, (uint16_t)(k.gen + 1), WEFT_CNT_EV_ADD, 0, 1, NULL, &reason) != 0 &&
		reason == WEFT_R_CNT_OBJ_STALE, "other generation: reason %u", reason);
	REQUIRE(ev_set(s, &ops, ops.gen, WEFT_CNT_EV_ADD, 0, 1, NULL, &reason) != 0 &&
		reason == WEFT_R_CNT_MODE, "OPS object: reason %u", reason);
	REQUIRE(ev_set(s, &k, k.gen, 0, 0, 1, NULL, &reason) != 0 && reason == WEFT_R_CNT_MODE &&
		ev_set(s, &k, k.gen, 3, 0, 1, NULL, &reason) != 0 && reason == WEFT_R_CNT_MODE,
		"op 0 and 3: reason %u", reason);
	REQUIRE(ev_set(s, &k, k.gen, WEFT_CNT_EV_ADD, 2, 1, NULL, &reason) != 0 &&
		reason == WEFT_R_CNT_MODE, "word 2: reason %u", reason);
	REQUIRE(vt_cnt(s, 0, WEFT_CNT_CMD_DISCARDED) == before + 7, "CMD_DISCARDED +%llu",
		(unsigned long long)(vt_cnt(s, 0, WEFT_CNT_CMD_DISCARDED) - before));
	blk = ev_read(s, &k);
	REQUIRE(blk.count == 5 && blk.errors == 0, "block moved: %llu/%llu",
		(unsigned long long)blk.count, (unsigned long long)blk.errors);
	REQUIRE(ev_set(s, &k, k.gen, WEFT_CNT_EV_ADD, WEFT_CNT_EV_COUNT, UINT64_MAX, NULL, NULL) == 0 &&
		ev_read(s, &k).count == 4, "ADD wraps modulo 2^64");
	t_checked("EV_SET refused with its reason for an object out of range or not live (CNT_OBJ_INVALID), another generation (CNT_OBJ_STALE), an OPS object, op 0 or 3, word 2 (CNT_MODE): CMD_DISCARDED +7, the block unchanged at 5; ADD of 2^64-1 wraps to 4");
	wsc_buf_free(s, &region);
	weft_sim_free(s);
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "initiator", case_initiator },
		{ "target", case_target },
		{ "errors", case_errors },
		{ "wait-pass", case_wait_pass },
		{ "wait-remote", case_wait_remote },
		{ "wait-bad", case_wait_bad },
		{ "wait-qp-gone", case_wait_qp_gone },
		{ "wait-unbind", case_wait_unbind },
		{ "ev-set", case_ev_set },
		{ "ev-set-bad", case_ev_set_bad },
	};

	return vt_main("cntr", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
