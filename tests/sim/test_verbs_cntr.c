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

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "initiator", case_initiator },
		{ "target", case_target },
		{ "errors", case_errors },
	};

	return vt_main("cntr", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
