/* SPDX-License-Identifier: MIT */
/*
 * One test per seed rule of the verbs engine (seed extraction checklist
 * items 30-42, 61, 62, 72 and 114-120; docs/hw-spec.md section 16).
 * Usage: sim-verbs-rules RULE, where RULE is a name from the table at the
 * end; meson runs each rule as its own test.  Every rule runs on a fresh
 * two-node sim with a lossless fabric.
 */
#include "vt.h"

#define MS              1000000ull
#define QA              2u
#define QB              3u

struct ctx {
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	uint32_t next_qp;
};

static void setup(struct ctx *x)
{
	memset(x, 0, sizeof(*x));
	x->s = vt_sim(2, 48u << 20, 7, 0, 0);
	vt_node(x->s, 0, 8u << 20, 8, &x->a);
	vt_node(x->s, 1, 8u << 20, 8, &x->b);
	vt_rc(&x->a, QA, &x->b, QB, 6, NULL, &x->qa, &x->qb);
	x->next_qp = 10;
	vt_fill(x->a.mem, 1u << 20, 1);
}

/* A new connected pair on the same nodes (after a QP went to ERR). */
static void fresh(struct ctx *x)
{
	vt_rc(&x->a, x->next_qp, &x->b, x->next_qp + 1, 6, NULL, &x->qa, &x->qb);
	x->next_qp += 2;
}

static void done(struct ctx *x, const char *what)
{
	t_checked("%s", what);
	weft_sim_free(x->s);
}

static void expect(struct vt_node *n, uint64_t wr_id, uint8_t status, unsigned int reason,
		   const char *what)
{
	struct weft_vcqe e;

	vt_cqe(n, &e, 50 * MS);
	REQUIRE(e.wr_id == wr_id, "%s: CQE wr_id %llu, want %llu", what,
	       (unsigned long long)e.wr_id, (unsigned long long)wr_id);
	REQUIRE(e.status == status, "%s: CQE status %u (reason %u), want %u", what, e.status,
	       e.byte_len, status);
	if (reason)
		REQUIRE(e.byte_len == reason, "%s: reason %u, want %u", what, e.byte_len, reason);
}

/* A write from a to b at (va, rkey) that must be refused by b with a
 * Terminate for reason: requester gets REM_ACCESS_ERR, both QPs ERR. */
static void remote_refused(struct ctx *x, uint64_t va, uint32_t rkey, unsigned int op,
			   unsigned int reason, const char *what)
{
	uint64_t d = vt_drops(x->s, 1, reason);
	uint64_t t = vt_cnt(x->s, 1, WEFT_CNT_V_TERMINATES_TX);

	vt_post(&x->a, &x->qa, 900, op, 0, 4096, va, rkey, 0, 0);
	expect(&x->a, 900, op == WEFT_VWR_WRITE || op == WEFT_VWR_READ ?
	       (reason == WEFT_R_LENGTH ? WEFT_VWC_REM_INV_REQ_ERR : WEFT_VWC_REM_ACCESS_ERR) :
	       WEFT_VWC_REM_ACCESS_ERR, 0, what);
	REQUIRE(vt_drops(x->s, 1, reason) > d, "%s: no %s counted at the target", what,
	       weft_reason_name(reason));
	REQUIRE(vt_cnt(x->s, 1, WEFT_CNT_V_TERMINATES_TX) == t + 1, "%s: no Terminate", what);
	REQUIRE(vt_qp_state(&x->a, x->qa.qpn) == WEFT_VQPS_ERR &&
	       vt_qp_state(&x->b, x->qb.qpn) == WEFT_VQPS_ERR, "%s: QPs not in ERR", what);
	fresh(x);
}

/* A local violation: error CQE with reason, QP in ERR. */
static void local_refused(struct ctx *x, const struct weft_vsge *sg, unsigned int op,
			  unsigned int reason, const char *what)
{
	struct weft_vwqe w;
	uint64_t tx = vt_cnt(x->s, 0, WEFT_CNT_V_TX_PKTS);

	memset(&w, 0, sizeof(w));
	w.wr_id = 901;
	w.opcode = (uint8_t)op;
	w.flags = WEFT_VWQE_SIGNALED;
	w.u.rdma.remote_addr = x->b.buf;
	w.u.rdma.rkey = VT_MR;
	REQUIRE(wsv_post_send(x->s, &x->qa, &w, sg, 1, true) == 0, "post");
	expect(&x->a, 901, WEFT_VWC_LOC_PROT_ERR, reason, what);
	REQUIRE(vt_cnt(x->s, 0, WEFT_CNT_V_TX_PKTS) == tx, "%s: a packet left", what);
	fresh(x);
}

static uint32_t mr_b(struct ctx *x, uint32_t index, uint32_t pd, uint64_t off, uint64_t len,
		     unsigned int access)
{
	uint32_t stag = WEFT_STAG(index, 1);

	REQUIRE(wsv_reg_mr(x->s, 1, stag, pd, x->b.buf + off, x->b.buf + off, len, access,
			  WEFT_ATT_DIRECT, 12) == 0, "register region %u on b", index);
	return stag;
}

static uint32_t mr_a(struct ctx *x, uint32_t index, uint32_t pd, uint64_t off, uint64_t len,
		     unsigned int access)
{
	uint32_t stag = WEFT_STAG(index, 1);

	REQUIRE(wsv_reg_mr(x->s, 0, stag, pd, x->a.buf + off, x->a.buf + off, len, access,
			  WEFT_ATT_DIRECT, 12) == 0, "register region %u on a", index);
	return stag;
}

/* Bind window mw (allocated on b, type 2) to VT_MR on b's QP. */
static uint32_t bind_b(struct ctx *x, uint32_t index, uint64_t off, uint64_t len,
		       unsigned int access, bool one_touch, uint8_t inst)
{
	struct weft_vwqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = 700 + index;
	w.opcode = WEFT_VWR_BIND_MW;
	w.flags = WEFT_VWQE_SIGNALED;
	w.u.bind.va = x->b.buf + off;
	w.u.bind.length = len;
	w.u.bind.mw_stag = WEFT_STAG(index, inst);
	w.u.bind.mr_stag = VT_MR;
	w.u.bind.access = (uint8_t)access;
	w.u.bind.one_touch = one_touch;
	REQUIRE(wsv_post_send(x->s, &x->qb, &w, NULL, 0, true) == 0, "post bind");
	expect(&x->b, 700 + index, WEFT_VWC_SUCCESS, 0, "bind");
	return WEFT_STAG(index, inst);
}

/* ---- rules ------------------------------------------------------------------ */

static void rule30_stag_lookup(void)
{
	struct ctx x;

	setup(&x);
	vt_post(&x.a, &x.qa, 1, WEFT_VWR_WRITE, 0, 4096, x.b.buf, VT_MR, 0, 0);
	expect(&x.a, 1, WEFT_VWC_SUCCESS, 0, "write with the right STag");
	REQUIRE(!memcmp(x.a.mem, x.b.mem, 4096), "data");
	remote_refused(&x, x.b.buf, WEFT_STAG(VT_MR_INDEX, 2), WEFT_VWR_WRITE,
		       WEFT_R_STAG_INSTANCE, "Tag_Instance mismatch");
	remote_refused(&x, x.b.buf, WEFT_STAG(5000, 1), WEFT_VWR_WRITE, WEFT_R_STAG_INDEX,
		       "free Tag_Index");
	{
		/* A zero-length write names no memory: no STag lookup. */
		uint64_t d = vt_drops(x.s, 1, WEFT_R_STAG_INDEX);

		vt_post(&x.a, &x.qa, 2, WEFT_VWR_WRITE, 0, 0, 0, 0, 0, 0);
		expect(&x.a, 2, WEFT_VWC_SUCCESS, 0, "zero-length write with rkey 0");
		REQUIRE(vt_drops(x.s, 1, WEFT_R_STAG_INDEX) == d, "zero-length write looked up");
		REQUIRE(vt_qp_state(&x.b, x.qb.qpn) == WEFT_VQPS_RTS, "target QP left RTS");
	}
	done(&x, "item 30: Tag_Index selects the entry; a Tag_Instance mismatch fails; "
	     "a zero-length write is not looked up");
}

static void rule31_pd_check(void)
{
	struct ctx x;
	uint32_t r;
	struct weft_vsge sg;

	setup(&x);
	REQUIRE(wsv_pd(x.s, 1, 2) == 0 && wsv_pd(x.s, 0, 2) == 0, "PD 2");
	r = mr_b(&x, 2, 2, 0, 65536, WEFT_VACC_ALL);
	remote_refused(&x, x.b.buf, r, WEFT_VWR_WRITE, WEFT_R_PD_MISMATCH,
		       "remote: region of another PD");
	r = mr_a(&x, 2, 2, 0, 65536, WEFT_VACC_ALL);
	sg = (struct weft_vsge){ .addr = x.a.buf, .length = 64, .lkey = r };
	local_refused(&x, &sg, WEFT_VWR_SEND, WEFT_R_PD_MISMATCH, "local: region of another PD");
	done(&x, "item 31: QP PD != entry PD fails (local: error CQE, remote: Terminate)");
}

static void rule32_region_vs_window(void)
{
	struct ctx x;
	uint32_t r, w;
	struct weft_vsge sg;

	setup(&x);
	REQUIRE(wsv_alloc_stag(x.s, 1, WEFT_STAG(20, 0), VT_PD, WEFT_TPT_MW2, 0) == 0, "MW on b");
	w = bind_b(&x, 20, 0, 65536, WEFT_VACC_REMOTE_WRITE, false, 1);
	vt_post(&x.a, &x.qa, 1, WEFT_VWR_WRITE, 0, 4096, x.b.buf, w, 0, 0);
	expect(&x.a, 1, WEFT_VWC_SUCCESS, 0, "incoming write naming a window");
	r = mr_b(&x, 21, VT_PD, 0, 65536, WEFT_VACC_LOCAL_READ | WEFT_VACC_LOCAL_WRITE);
	remote_refused(&x, x.b.buf, r, WEFT_VWR_WRITE, WEFT_R_STAG_TYPE,
		       "incoming write naming a region without remote rights");
	REQUIRE(wsv_alloc_stag(x.s, 0, WEFT_STAG(20, 0), VT_PD, WEFT_TPT_MW1, 0) == 0, "MW on a");
	{
		struct weft_vwqe b;

		memset(&b, 0, sizeof(b));
		b.wr_id = 8;
		b.opcode = WEFT_VWR_BIND_MW;
		b.flags = WEFT_VWQE_SIGNALED;
		b.u.bind.va = x.a.buf;
		b.u.bind.length = 4096;
		b.u.bind.mw_stag = WEFT_STAG(20, 1);
		b.u.bind.mr_stag = VT_MR;
		b.u.bind.access = WEFT_VACC_REMOTE_READ;
		REQUIRE(wsv_post_send(x.s, &x.qa, &b, NULL, 0, true) == 0, "bind on a");
		expect(&x.a, 8, WEFT_VWC_SUCCESS, 0, "bind on a");
	}
	sg = (struct weft_vsge){ .addr = x.a.buf, .length = 64, .lkey = WEFT_STAG(20, 1) };
	local_refused(&x, &sg, WEFT_VWR_SEND, WEFT_R_STAG_TYPE, "local segment naming a window");
	done(&x, "item 32: local segments name regions; incoming RDMA names windows");
}

static void rule33_bounds(void)
{
	struct ctx x;
	uint32_t r;
	struct weft_vsge sg;

	setup(&x);
	r = mr_b(&x, 2, VT_PD, 0, 8192, WEFT_VACC_ALL);
	vt_post(&x.a, &x.qa, 1, WEFT_VWR_WRITE, 0, 4096, x.b.buf + 4096, r, 0, 0);
	expect(&x.a, 1, WEFT_VWC_SUCCESS, 0, "write at the last 4 KiB");
	remote_refused(&x, x.b.buf + 4097, r, WEFT_VWR_WRITE, WEFT_R_BOUNDS,
		       "remote [TO, TO+len) one byte past the end");
	r = mr_a(&x, 2, VT_PD, 0, 8192, WEFT_VACC_ALL);
	sg = (struct weft_vsge){ .addr = x.a.buf + 8000, .length = 193, .lkey = r };
	local_refused(&x, &sg, WEFT_VWR_SEND, WEFT_R_BOUNDS, "local [VA, VA+len) past the end");
	done(&x, "item 33: accesses outside the entry fail");
}

static void rule34_access_bits(void)
{
	struct ctx x;
	uint32_t r, w;
	struct weft_vsge sg;

	setup(&x);
	r = mr_a(&x, 2, VT_PD, 0, 65536, WEFT_VACC_LOCAL_WRITE);
	sg = (struct weft_vsge){ .addr = x.a.buf, .length = 64, .lkey = r };
	local_refused(&x, &sg, WEFT_VWR_SEND, WEFT_R_ACCESS, "send source without local read");
	r = mr_a(&x, 3, VT_PD, 0, 65536, WEFT_VACC_LOCAL_READ);
	sg = (struct weft_vsge){ .addr = x.a.buf, .length = 64, .lkey = r };
	local_refused(&x, &sg, WEFT_VWR_READ, WEFT_R_ACCESS, "read target without local write");
	REQUIRE(wsv_alloc_stag(x.s, 1, WEFT_STAG(20, 0), VT_PD, WEFT_TPT_MW2, 0) == 0, "MW");
	w = bind_b(&x, 20, 0, 65536, WEFT_VACC_REMOTE_WRITE, false, 1);
	remote_refused(&x, x.b.buf, w, WEFT_VWR_READ, WEFT_R_ACCESS,
		       "read request to a window without remote read");
	REQUIRE(wsv_alloc_stag(x.s, 1, WEFT_STAG(21, 0), VT_PD, WEFT_TPT_MW2, 0) == 0, "MW");
	w = bind_b(&x, 21, 0, 65536, WEFT_VACC_REMOTE_READ, false, 1);
	remote_refused(&x, x.b.buf, w, WEFT_VWR_WRITE, WEFT_R_ACCESS,
		       "write to a window without remote write");
	done(&x, "item 34: local read, local write, remote read, remote write enforced");
}

static void rule35_valid_bit(void)
{
	struct ctx x;
	struct weft_vsge sg;

	setup(&x);
	REQUIRE(wsv_alloc_stag(x.s, 1, WEFT_STAG(30, 1), VT_PD, WEFT_TPT_MR, WEFT_TPTF_FAST_REG) == 0,
	       "allocated, not valid");
	remote_refused(&x, x.b.buf, WEFT_STAG(30, 1), WEFT_VWR_WRITE, WEFT_R_STAG_INVALID,
		       "remote access to an invalid entry");
	REQUIRE(wsv_alloc_stag(x.s, 0, WEFT_STAG(30, 1), VT_PD, WEFT_TPT_MR, WEFT_TPTF_FAST_REG) == 0,
	       "allocated on a");
	sg = (struct weft_vsge){ .addr = x.a.buf, .length = 64, .lkey = WEFT_STAG(30, 1) };
	local_refused(&x, &sg, WEFT_VWR_SEND, WEFT_R_STAG_INVALID, "local access to an invalid entry");
	done(&x, "item 35: Valid = 0 refuses every access");
}

static void rule36_window_binding(void)
{
	struct ctx x;
	struct weft_vwqe w;
	uint32_t r;

	setup(&x);
	r = mr_a(&x, 2, VT_PD, 0, 65536, WEFT_VACC_ALL & ~WEFT_VACC_MW_BIND);
	REQUIRE(wsv_alloc_stag(x.s, 0, WEFT_STAG(20, 0), VT_PD, WEFT_TPT_MW1, 0) == 0, "MW");
	memset(&w, 0, sizeof(w));
	w.wr_id = 5;
	w.opcode = WEFT_VWR_BIND_MW;
	w.flags = WEFT_VWQE_SIGNALED;
	w.u.bind.va = x.a.buf;
	w.u.bind.length = 4096;
	w.u.bind.mw_stag = WEFT_STAG(20, 1);
	w.u.bind.mr_stag = r;
	w.u.bind.access = WEFT_VACC_REMOTE_WRITE;
	REQUIRE(wsv_post_send(x.s, &x.qa, &w, NULL, 0, true) == 0, "post bind");
	expect(&x.a, 5, WEFT_VWC_MW_BIND_ERR, WEFT_R_BIND_DISABLED, "bind to a region without "
	       "window binding");
	fresh(&x);
	w.wr_id = 6;
	w.u.bind.mr_stag = VT_MR;
	REQUIRE(wsv_post_send(x.s, &x.qa, &w, NULL, 0, true) == 0, "post bind");
	expect(&x.a, 6, WEFT_VWC_SUCCESS, 0, "bind to a region with window binding");
	done(&x, "item 36: binding to a region without window binding fails with an error CQE");
}

/* Region of npages scattered pages in reverse order, first page mid-page. */
static void att_case(struct ctx *x, unsigned int level, unsigned int npages, uint32_t index)
{
	uint64_t va = 0x7f0000000000ull + 0x123, first = 0x123;
	uint64_t pages[1200], len = (uint64_t)npages * 4096 - first - 100, list, root = 0;
	uint8_t *src = x->a.mem + (1u << 20);
	struct weft_vcmd k = { .op = WEFT_VCMD_REG_MR, .handle = WEFT_STAG(index, 1) };
	unsigned int i;
	uint64_t off;

	REQUIRE(npages <= 1200, "pages");
	for (i = 0; i < npages; i++)
		pages[npages - 1 - i] = weft_sim_alloc(x->s, 1, 4096, 4096);
	list = weft_sim_alloc(x->s, 1, (uint64_t)npages * 8, 4096);
	for (i = 0; i < npages; i++) {
		uint64_t *p = weft_sim_ptr(x->s, 1, list + i * 8, 8);

		*p = pages[i] + (i == 0 ? first : 0);
	}
	if (level == WEFT_ATT_DIRECT) {
		root = list;
	} else {
		uint64_t l1 = weft_sim_alloc(x->s, 1, 4096, 4096);

		for (i = 0; i * WEFT_ATT_FANOUT < npages; i++) {
			uint64_t *p = weft_sim_ptr(x->s, 1, l1 + i * 8, 8);

			*p = list + (uint64_t)i * WEFT_ATT_FANOUT * 8;
		}
		root = l1;
		if (level == WEFT_ATT_IND2) {
			root = weft_sim_alloc(x->s, 1, 4096, 4096);
			*(uint64_t *)weft_sim_ptr(x->s, 1, root, 8) = l1;
		}
	}
	k.u.mr.va = va;
	k.u.mr.length = len;
	k.u.mr.att_addr = root;
	k.u.mr.pd = VT_PD;
	k.u.mr.access = WEFT_VACC_ALL;
	k.u.mr.page_shift = 12;
	k.u.mr.att_level = (uint8_t)level;
	REQUIRE(wsv_cmd(x->s, 1, &k, NULL) == 0, "REG_MR level %u", level);
	vt_fill(src, len, level + 40);
	vt_post(&x->a, &x->qa, 50 + level, WEFT_VWR_WRITE, 1u << 20, len, va, k.handle, 0, 0);
	expect(&x->a, 50 + level, WEFT_VWC_SUCCESS, 0, "write through the ATT");
	for (off = 0; off < len; ) {
		uint64_t pofs = off + first, pg = pofs / 4096, in = pofs % 4096;
		uint64_t n = 4096 - in < len - off ? 4096 - in : len - off;
		uint8_t *p = weft_sim_ptr(x->s, 1, pages[pg] + in, n);

		REQUIRE(!memcmp(p, src + off, n), "level %u: page %llu holds the wrong bytes", level,
		       (unsigned long long)pg);
		off += n;
	}
	memset(x->a.mem + (5u << 20), 0, len);
	vt_post(&x->a, &x->qa, 60 + level, WEFT_VWR_READ, 5u << 20, len, va, k.handle, 0, 0);
	expect(&x->a, 60 + level, WEFT_VWC_SUCCESS, 0, "read through the ATT");
	REQUIRE(!memcmp(x->a.mem + (5u << 20), src, len), "level %u: read back", level);
}

static void rule37_att_translation(void)
{
	struct ctx x;

	setup(&x);
	att_case(&x, WEFT_ATT_DIRECT, 40, 40);
	att_case(&x, WEFT_ATT_IND1, 600, 41);
	att_case(&x, WEFT_ATT_IND2, 520, 42);
	done(&x, "item 37: direct, 1st- and 2nd-order indirect ATTs, first page mid-page");
}

static void rule38_local_invalid_segment(void)
{
	struct ctx x;
	struct weft_vwqe w;
	struct weft_vsge sg[2];
	uint8_t before[4096];

	setup(&x);
	memset(x.a.mem + 65536, 0x5a, 4096);
	memcpy(before, x.a.mem + 65536, 4096);
	vt_fill(x.b.mem, 8192, 9);
	memset(&w, 0, sizeof(w));
	w.wr_id = 3;
	w.opcode = WEFT_VWR_READ;
	w.flags = WEFT_VWQE_SIGNALED;
	w.u.rdma.remote_addr = x.b.buf;
	w.u.rdma.rkey = VT_MR;
	sg[0] = (struct weft_vsge){ .addr = x.a.buf + 65536, .length = 4096, .lkey = VT_MR };
	sg[1] = (struct weft_vsge){ .addr = x.a.buf, .length = 4096, .lkey = WEFT_STAG(99, 1) };
	REQUIRE(wsv_post_send(x.s, &x.qa, &w, sg, 2, true) == 0, "post");
	expect(&x.a, 3, WEFT_VWC_LOC_PROT_ERR, WEFT_R_STAG_INDEX, "second segment invalid");
	weft_sim_run_until(x.s, NULL, NULL, weft_sim_now(x.s) + 5 * MS);
	REQUIRE(!memcmp(before, x.a.mem + 65536, 4096), "the valid first segment was written");
	REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_RX_PKTS) == 0, "a request left the adapter");
	done(&x, "item 38: a WQE with an invalid segment touches no memory, error CQE");
}

static void reg_wqe(struct weft_vwqe *w, uint64_t wr_id, uint32_t stag, uint64_t va,
		    uint64_t len, uint64_t att)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->opcode = WEFT_VWR_REG_MR;
	w->flags = WEFT_VWQE_SIGNALED;
	w->u.reg.stag = stag;
	w->u.reg.va = va;
	w->u.reg.length = len;
	w->u.reg.att_addr = att;
	w->u.reg.access = WEFT_VACC_ALL;
	w->u.reg.page_shift = 12;
	w->u.reg.att_level = WEFT_ATT_DIRECT;
}

static void rule39_reg_error_option_a(void)
{
	struct ctx x;
	struct weft_vwqe w;
	struct weft_vcqe e;

	setup(&x);
	/* A fast registration of an entry allocated without FAST_REG fails. */
	REQUIRE(wsv_alloc_stag(x.s, 0, WEFT_STAG(40, 1), VT_PD, WEFT_TPT_MR, 0) == 0, "alloc");
	reg_wqe(&w, 11, WEFT_STAG(40, 2), x.a.buf, 4096, wsv_att(x.s, 0, x.a.buf, 4096, 0, 12));
	REQUIRE(wsv_post_send(x.s, &x.qa, &w, NULL, 0, false) == 0, "post");
	vt_post(&x.a, &x.qa, 12, WEFT_VWR_SEND, 0, 64, 0, 0, 0, 0);
	vt_recv(&x.a, &x.qa, 13, 8192, 4096);
	expect(&x.a, 11, WEFT_VWC_LOC_PROT_ERR, WEFT_R_ACCESS, "failed registration");
	expect(&x.a, 12, WEFT_VWC_WR_FLUSH_ERR, 0, "later SQ WQE flushed");
	REQUIRE(vt_qp_state(&x.a, QA) == WEFT_VQPS_SQE, "QP in SQ-drained (SQE)");
	/* The RQ keeps working, and so do incoming read requests. */
	vt_post(&x.b, &x.qb, 14, WEFT_VWR_SEND, 0, 100, 0, 0, 0, 0);
	expect(&x.b, 14, WEFT_VWC_SUCCESS, 0, "peer send");
	vt_cqe(&x.a, &e, 50 * MS);
	REQUIRE(e.wr_id == 13 && e.status == 0 && e.byte_len == 100, "receive in SQE");
	vt_post(&x.b, &x.qb, 15, WEFT_VWR_READ, 0, 4096, x.a.buf, VT_MR, 0, 0);
	expect(&x.b, 15, WEFT_VWC_SUCCESS, 0, "read request served in SQE");
	done(&x, "item 39: registration error option A: SQE, later SQ WQEs flush, RQ and reads go on");
}

static void rule40_reg_error_option_b(void)
{
	struct ctx x;
	struct weft_vwqe w;
	int st;

	setup(&x);
	st = wsv_qp_create(x.s, 0, 30, WEFT_VQPT_RC, VT_PD, VT_CQ, VT_CQ, 6, 6,
			   WEFT_VQPF_SQ_REG | WEFT_VQPF_REG_OPT_B, &x.qa);
	REQUIRE(st == 0, "QP with option B");
	REQUIRE(wsv_qp_create(x.s, 1, 31, WEFT_VQPT_RC, VT_PD, VT_CQ, VT_CQ, 6, 6, 0, &x.qb) == 0,
	       "peer");
	REQUIRE(wsv_connect(x.s, &x.qa, &x.qb, NULL) == 0, "connect");
	REQUIRE(wsv_alloc_stag(x.s, 0, WEFT_STAG(40, 1), VT_PD, WEFT_TPT_MR, 0) == 0, "alloc");
	vt_recv(&x.a, &x.qa, 20, 8192, 4096);
	reg_wqe(&w, 21, WEFT_STAG(40, 2), x.a.buf, 4096, wsv_att(x.s, 0, x.a.buf, 4096, 0, 12));
	REQUIRE(wsv_post_send(x.s, &x.qa, &w, NULL, 0, false) == 0, "post");
	vt_post(&x.a, &x.qa, 22, WEFT_VWR_SEND, 0, 64, 0, 0, 0, 0);
	{
		struct weft_vcqe e[3];
		unsigned int i, seen = 0;

		REQUIRE(wsv_wait(x.s, &x.a.cq, e, 3, 50 * MS) == 3, "3 CQEs");
		for (i = 0; i < 3; i++) {
			REQUIRE(e[i].wr_id >= 20 && e[i].wr_id <= 22, "wr_id %llu",
			       (unsigned long long)e[i].wr_id);
			seen |= 1u << (e[i].wr_id - 20);
			REQUIRE(e[i].status == (e[i].wr_id == 21 ? WEFT_VWC_LOC_PROT_ERR :
					       WEFT_VWC_WR_FLUSH_ERR),
			       "wr_id %llu status %u", (unsigned long long)e[i].wr_id, e[i].status);
		}
		REQUIRE(seen == 7, "each WQE once: RQ flushed, registration failed, SQ flushed");
	}
	weft_sim_run_until(x.s, NULL, NULL, weft_sim_now(x.s) + 5 * MS);
	REQUIRE(vt_qp_state(&x.a, 30) == WEFT_VQPS_ERR, "QP in ERR");
	REQUIRE(vt_cnt(x.s, 0, WEFT_CNT_V_TERMINATES_TX) == 1 &&
	       vt_cnt(x.s, 1, WEFT_CNT_V_TERMINATES_RX) == 1, "Terminate sent and received");
	REQUIRE(vt_qp_state(&x.b, 31) == WEFT_VQPS_ERR, "peer QP in ERR");
	done(&x, "item 40: registration error option B: ERR, Terminate, SQ and RQ flushed");
}

static void rule41_one_touch(void)
{
	struct ctx x;
	struct weft_tpt_entry e;
	uint32_t w;

	setup(&x);
	REQUIRE(wsv_alloc_stag(x.s, 1, WEFT_STAG(20, 0), VT_PD, WEFT_TPT_MW2, 0) == 0, "MW");
	w = bind_b(&x, 20, 0, 65536, WEFT_VACC_REMOTE_WRITE, true, 1);
	vt_post(&x.a, &x.qa, 1, WEFT_VWR_WRITE, 0, 5000, x.b.buf, w, 0, 0);
	expect(&x.a, 1, WEFT_VWC_SUCCESS, 0, "first message");
	REQUIRE(!memcmp(x.a.mem, x.b.mem, 5000), "data of the first message");
	REQUIRE(wsv_query_tpt(x.s, 1, 20, &e) == 0 && !(e.flags & WEFT_TPTF_VALID),
	       "window still valid after its first message");
	remote_refused(&x, x.b.buf, w, WEFT_VWR_WRITE, WEFT_R_STAG_INVALID, "second message");
	done(&x, "item 41: a one-touch window is invalid after its first message; reuse terminates");
}

static void inject(struct ctx *x, struct weft_vhdr *h, const void *data, uint32_t dlen)
{
	uint8_t pkt[WEFT_WIRE_MAX_FRAME];
	size_t n = wsv_forge(pkt, 0, 1, h, data, dlen);

	REQUIRE(weft_core_receive(weft_sim_core(x->s, 1), pkt, n) == 0, "inject");
	weft_sim_run_until(x->s, NULL, NULL, weft_sim_now(x->s) + MS);
}

static void rule42_one_touch_out_of_order(void)
{
	struct ctx x;
	struct weft_tpt_entry e;
	struct weft_vqpc q;
	struct weft_vhdr h;
	uint8_t data[1024];
	uint32_t w;
	uint64_t d;

	setup(&x);
	REQUIRE(wsv_alloc_stag(x.s, 1, WEFT_STAG(20, 0), VT_PD, WEFT_TPT_MW2, 0) == 0, "MW");
	w = bind_b(&x, 20, 0, 65536, WEFT_VACC_REMOTE_WRITE, true, 1);
	REQUIRE(wsv_query_qp(x.s, 1, QB, &q) == 0, "query");
	memset(data, 0x77, sizeof(data));
	memset(&h, 0, sizeof(h));
	h.opcode = WEFT_VOP_WRITE;
	h.dst_qpn = QB;
	h.src_qpn = QA;
	h.rkey = w;
	h.dma_len = 2048;
	/* The Last segment first, one PSN early. */
	h.psn = q.epsn + 1;
	h.flags = WEFT_VF_LAST;
	h.va = x.b.buf + 1024;
	inject(&x, &h, data, 1024);
	REQUIRE(wsv_query_tpt(x.s, 1, 20, &e) == 0, "query");
	REQUIRE((e.flags & WEFT_TPTF_VALID) && (e.flags & WEFT_TPTF_TOUCHED) &&
	       e.stored_psn == q.epsn + 1, "early Last: Touched and stored PSN (flags 0x%x psn %u)",
	       e.flags, e.stored_psn);
	REQUIRE(x.b.mem[1024] == 0x77, "early Last segment placed");
	/* The stream catches up: the window becomes invalid. */
	h.psn = q.epsn;
	h.flags = WEFT_VF_FIRST;
	h.va = x.b.buf;
	inject(&x, &h, data, 1024);
	REQUIRE(wsv_query_tpt(x.s, 1, 20, &e) == 0 && !(e.flags & WEFT_TPTF_VALID),
	       "window valid after the stream caught up (flags 0x%x)", e.flags);
	/* A segment beyond the receive window is dropped. */
	d = vt_drops(x.s, 1, WEFT_R_PSN_WINDOW);
	h.psn = q.epsn + 2 + WEFT_VERBS_RX_WINDOW + 5;
	inject(&x, &h, data, 1024);
	REQUIRE(vt_drops(x.s, 1, WEFT_R_PSN_WINDOW) == d + 1, "out-of-window segment not dropped");
	done(&x, "item 42: early Last sets Touched + stored PSN; invalid when caught up; "
	     "out-of-window dropped");
}

static void read_req(struct ctx *x, struct weft_vhdr *h, uint32_t psn, uint32_t msn,
		     uint32_t len)
{
	memset(h, 0, sizeof(*h));
	h->opcode = WEFT_VOP_READ_REQ;
	h->dst_qpn = QB;
	h->src_qpn = QA;
	h->psn = psn;
	h->msn = msn;
	h->va = x->b.buf;
	h->rkey = VT_MR;
	h->dma_len = len;
	h->flags = WEFT_VF_FIRST | WEFT_VF_LAST;
}

static void rule61_read_msn(void)
{
	struct ctx x;
	struct weft_vqpc q;
	struct weft_vhdr h;
	uint8_t pkt[WEFT_WIRE_MAX_FRAME];
	unsigned int i;

	setup(&x);
	REQUIRE(wsv_query_qp(x.s, 1, QB, &q) == 0, "query");
	read_req(&x, &h, q.epsn, q.rd_emsn, 1024);
	inject(&x, &h, NULL, 0);
	REQUIRE(wsv_query_qp(x.s, 1, QB, &q) == 0 && q.state == WEFT_VQPS_RTS, "good MSN accepted");
	read_req(&x, &h, q.epsn, q.rd_emsn + 3, 1024);
	inject(&x, &h, NULL, 0);
	REQUIRE(vt_drops(x.s, 1, WEFT_R_MSN) == 1 && vt_qp_state(&x.b, QB) == WEFT_VQPS_ERR &&
	       vt_cnt(x.s, 1, WEFT_CNT_V_TERMINATES_TX) == 1, "wrong MSN did not terminate");
	weft_sim_free(x.s);
	/* Overflow: more requests than max_dest_rd_atomic (16) at once. */
	setup(&x);
	REQUIRE(wsv_query_qp(x.s, 1, QB, &q) == 0, "query");
	for (i = 0; i < WEFT_VERBS_MAX_RD_ATOMIC + 1; i++) {
		size_t n;

		read_req(&x, &h, (q.epsn + 32 * i) & WEFT_VERBS_PSN_MASK, q.rd_emsn + i,
			 32 * WEFT_VERBS_MTU);
		n = wsv_forge(pkt, 0, 1, &h, NULL, 0);
		REQUIRE(weft_core_receive(weft_sim_core(x.s, 1), pkt, n) == 0, "inject");
	}
	weft_sim_run_until(x.s, NULL, NULL, weft_sim_now(x.s) + MS);
	REQUIRE(vt_drops(x.s, 1, WEFT_R_RRQ_FULL) == 1 && vt_qp_state(&x.b, QB) == WEFT_VQPS_ERR,
	       "read-request queue overflow did not terminate");
	done(&x, "item 61: a read request with a wrong MSN or overflowing the queue terminates");
}

static void atomic(struct ctx *x, uint64_t wr_id, unsigned int op, uint64_t cmp, uint64_t swp)
{
	struct weft_vwqe w;
	struct weft_vsge sg = { .addr = x->a.buf + 4096, .length = 8, .lkey = VT_MR };

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = (uint8_t)op;
	w.flags = WEFT_VWQE_SIGNALED;
	w.u.rdma.remote_addr = x->b.buf + 64;
	w.u.rdma.rkey = VT_MR;
	w.u.rdma.compare_add = cmp;
	w.u.rdma.swap = swp;
	REQUIRE(wsv_post_send(x->s, &x->qa, &w, &sg, 1, true) == 0, "post");
	expect(&x->a, wr_id, WEFT_VWC_SUCCESS, 0, "atomic");
}

static void rule62_fetchop(void)
{
	struct ctx x;
	uint64_t v = 100, r;

	setup(&x);
	memcpy(x.b.mem + 64, &v, 8);
	atomic(&x, 1, WEFT_VWR_CAS, 99, 7);
	memcpy(&r, x.a.mem + 4096, 8);
	memcpy(&v, x.b.mem + 64, 8);
	REQUIRE(r == 100 && v == 100, "failing compare: old %llu, word %llu", (unsigned long long)r,
	       (unsigned long long)v);
	atomic(&x, 2, WEFT_VWR_CAS, 100, 7);
	memcpy(&r, x.a.mem + 4096, 8);
	memcpy(&v, x.b.mem + 64, 8);
	REQUIRE(r == 100 && v == 7, "matching compare: old %llu, word %llu", (unsigned long long)r,
	       (unsigned long long)v);
	atomic(&x, 3, WEFT_VWR_FAA, 5, 0);
	memcpy(&r, x.a.mem + 4096, 8);
	memcpy(&v, x.b.mem + 64, 8);
	REQUIRE(r == 7 && v == 12, "fetch-and-add: old %llu, word %llu", (unsigned long long)r,
	       (unsigned long long)v);
	done(&x, "item 62: compare-and-swap returns the old value and swaps only on a match");
}

static void rule72_cqe_per_wqe(void)
{
	struct ctx x;
	struct wsv_qp q2a, q2b;
	struct weft_vcqe e[16];
	struct weft_vcmd k;
	unsigned int i, n;

	setup(&x);
	vt_rc(&x.a, 40, &x.b, 41, 6, NULL, &q2a, &q2b);
	for (i = 0; i < 3; i++) {
		vt_post(&x.a, &x.qa, 100 + i, WEFT_VWR_WRITE, 0, 3000, x.b.buf, VT_MR, 0, 0);
		vt_post(&x.a, &q2a, 200 + i, WEFT_VWR_WRITE, 0, 3000, x.b.buf, VT_MR, 0, 0);
	}
	n = wsv_wait(x.s, &x.a.cq, e, 6, 50 * MS);
	REQUIRE(n == 6, "%u CQEs of 6", n);
	{
		unsigned int na = 0, nb = 0;

		for (i = 0; i < 6; i++) {
			REQUIRE(e[i].status == 0, "status");
			if (e[i].qpn == QA) {
				REQUIRE(e[i].wr_id == 100 + na && e[i].wqe_index == na, "QA order");
				na++;
			} else {
				REQUIRE(e[i].qpn == 40 && e[i].wr_id == 200 + nb &&
				       e[i].wqe_index == nb, "QP 40 order");
				nb++;
			}
		}
		REQUIRE(na == 3 && nb == 3, "3 + 3");
	}
	/* In ERR, posted WQEs (signaled or not) and receives flush once each. */
	memset(&k, 0, sizeof(k));
	k.u.mod.state = WEFT_VQPS_ERR;
	REQUIRE(wsv_modify(x.s, 0, 40, WEFT_VQPA_STATE, &k) == 0, "to ERR");
	vt_post(&x.a, &q2a, 300, WEFT_VWR_SEND, 0, 10, 0, 0, 0, 0);
	vt_recv(&x.a, &q2a, 301, 0, 10);
	n = wsv_wait(x.s, &x.a.cq, e, 3, 20 * MS);
	REQUIRE(n == 2 && e[0].status == WEFT_VWC_WR_FLUSH_ERR &&
	       e[1].status == WEFT_VWC_WR_FLUSH_ERR && e[0].qpn == 40 &&
	       e[0].wr_id + e[1].wr_id == 601, "flush CQEs: %u", n);
	done(&x, "item 72: one CQE per WQE naming QP and WQE; one CQ serves two QPs; flushes once");
}

static void rule114_write_advertised(void)
{
	struct ctx x;
	struct weft_vcqe e;
	uint64_t adv[3];

	setup(&x);
	adv[0] = x.b.buf + 131072;
	adv[1] = VT_MR;
	adv[2] = 20000;
	memcpy(x.b.mem + 65536, adv, sizeof(adv));
	vt_recv(&x.a, &x.qa, 1, 8192, 64);
	{
		struct weft_vwqe w;
		struct weft_vsge sg = { .addr = x.b.buf + 65536, .length = 24, .lkey = VT_MR };

		memset(&w, 0, sizeof(w));
		w.wr_id = 2;
		w.opcode = WEFT_VWR_SEND;
		w.flags = WEFT_VWQE_SIGNALED;
		REQUIRE(wsv_post_send(x.s, &x.qb, &w, &sg, 1, true) == 0, "advertise");
	}
	expect(&x.b, 2, 0, 0, "advertising send");
	vt_cqe(&x.a, &e, 50 * MS);
	memcpy(adv, x.a.mem + 8192, sizeof(adv));
	vt_post(&x.a, &x.qa, 3, WEFT_VWR_WRITE, 0, adv[2], adv[0], (uint32_t)adv[1], 0, 0);
	expect(&x.a, 3, 0, 0, "write to the advertised buffer");
	REQUIRE(!memcmp(x.a.mem, x.b.mem + 131072, 20000), "data in the advertised buffer");
	vt_no_cqe(&x.b, 5 * MS);
	done(&x, "item 114: an RDMA write to an advertised buffer lands with no target action");
}

static void rule115_read_response(void)
{
	struct ctx x;
	uint64_t tx_a, tx_b;

	setup(&x);
	vt_fill(x.b.mem + 65536, 32768, 4);
	tx_a = vt_cnt(x.s, 0, WEFT_CNT_V_TX_PKTS);
	tx_b = vt_cnt(x.s, 1, WEFT_CNT_V_TX_PKTS);
	vt_post(&x.a, &x.qa, 1, WEFT_VWR_READ, 0, 32768, x.b.buf + 65536, VT_MR, 0, 0);
	expect(&x.a, 1, 0, 0, "read");
	REQUIRE(!memcmp(x.a.mem, x.b.mem + 65536, 32768), "read data");
	REQUIRE(vt_cnt(x.s, 0, WEFT_CNT_V_TX_PKTS) - tx_a == 1, "one read request");
	REQUIRE(vt_cnt(x.s, 1, WEFT_CNT_V_TX_PKTS) - tx_b == 32768 / WEFT_VERBS_MTU,
	       "one response in %u segments (%llu packets)", 32768 / WEFT_VERBS_MTU,
	       (unsigned long long)(vt_cnt(x.s, 1, WEFT_CNT_V_TX_PKTS) - tx_b));
	vt_no_cqe(&x.b, 5 * MS);
	done(&x, "item 115: one read request, one response of many segments, no source action");
}

static void rule116_send_invalidate(void)
{
	struct ctx x;
	struct weft_vcqe e;
	struct weft_tpt_entry t;
	uint32_t r;

	setup(&x);
	r = mr_b(&x, 2, VT_PD, 0, 65536, WEFT_VACC_ALL);
	vt_recv(&x.b, &x.qb, 1, 131072, 64);
	vt_post(&x.a, &x.qa, 2, WEFT_VWR_SEND_INV, 0, 16, 0, 0, r, 0);
	expect(&x.a, 2, 0, 0, "send with invalidate");
	vt_cqe(&x.b, &e, 50 * MS);
	REQUIRE(e.status == 0 && (e.flags & WEFT_VCQE_WITH_INV) && e.imm_inv == r,
	       "receive CQE names the invalidated STag");
	REQUIRE(wsv_query_tpt(x.s, 1, 2, &t) == 0 && !(t.flags & WEFT_TPTF_VALID), "still valid");
	remote_refused(&x, x.b.buf, r, WEFT_VWR_WRITE, WEFT_R_STAG_INVALID, "write after it");
	done(&x, "item 116: send with invalidate invalidates the STag; later RDMA fails");
}

static void rule117_solicited_event(void)
{
	struct ctx x;
	struct weft_vcqe e;
	struct weft_tpt_entry t;
	uint64_t ev;
	uint32_t r;

	setup(&x);
	r = mr_b(&x, 2, VT_PD, 0, 65536, WEFT_VACC_ALL);
	vt_recv(&x.b, &x.qb, 1, 131072, 64);
	vt_recv(&x.b, &x.qb, 2, 131072, 64);
	vt_recv(&x.b, &x.qb, 3, 131072, 64);
	wsv_arm(x.s, &x.b.cq, WEFT_CQ_ARM_SOLICITED);
	ev = weft_sim_event_count(x.s, 1, WEFT_EV_VERBS_CQ);
	vt_post(&x.a, &x.qa, 10, WEFT_VWR_SEND, 0, 16, 0, 0, 0, 0);
	expect(&x.a, 10, 0, 0, "plain send");
	vt_cqe(&x.b, &e, 50 * MS);
	REQUIRE(weft_sim_event_count(x.s, 1, WEFT_EV_VERBS_CQ) == ev, "plain send raised an event");
	vt_post(&x.a, &x.qa, 11, WEFT_VWR_SEND, 0, 16, 0, 0, 0, WEFT_VWQE_SOLICITED);
	expect(&x.a, 11, 0, 0, "send with SE");
	vt_cqe(&x.b, &e, 50 * MS);
	REQUIRE(e.flags & WEFT_VCQE_SOLICITED, "SE flag in the CQE");
	REQUIRE(weft_sim_event_count(x.s, 1, WEFT_EV_VERBS_CQ) == ev + 1, "no event for SE");
	/* Not armed: no event even for SE; SE + invalidate invalidates. */
	vt_post(&x.a, &x.qa, 12, WEFT_VWR_SEND_INV, 0, 16, 0, 0, r, WEFT_VWQE_SOLICITED);
	expect(&x.a, 12, 0, 0, "send with SE and invalidate");
	vt_cqe(&x.b, &e, 50 * MS);
	REQUIRE(weft_sim_event_count(x.s, 1, WEFT_EV_VERBS_CQ) == ev + 1, "event while disarmed");
	REQUIRE(wsv_query_tpt(x.s, 1, 2, &t) == 0 && !(t.flags & WEFT_TPTF_VALID),
	       "SE + invalidate left the STag valid");
	done(&x, "item 117: SE raises an event only when armed; plain send does not; SE+INV invalidates");
}

static void rule118_data_target_stag(void)
{
	struct ctx x;
	struct weft_tpt_entry t;
	uint32_t r;

	setup(&x);
	/* The reader's data target: local write only. */
	r = mr_a(&x, 2, VT_PD, 0, 65536, WEFT_VACC_LOCAL_READ | WEFT_VACC_LOCAL_WRITE);
	vt_recv(&x.a, &x.qa, 1, 131072, 64);
	vt_post(&x.b, &x.qb, 2, WEFT_VWR_SEND_INV, 0, 16, 0, 0, r, 0);
	expect(&x.b, 2, WEFT_VWC_REM_INV_REQ_ERR, 0, "peer invalidation refused");
	REQUIRE(vt_drops(x.s, 0, WEFT_R_INV_REFUSED) == 1, "INV_REFUSED not counted");
	REQUIRE(wsv_query_tpt(x.s, 0, 2, &t) == 0 && (t.flags & WEFT_TPTF_VALID),
	       "the data-target STag was invalidated by the peer");
	done(&x, "item 118: a read's data-target STag cannot be invalidated by the peer");
}

static void rule119_terminate(void)
{
	struct ctx x;
	struct weft_vcqe e[4];
	unsigned int n;

	setup(&x);
	vt_recv(&x.b, &x.qb, 50, 0, 64);
	vt_recv(&x.b, &x.qb, 51, 0, 64);
	vt_post(&x.a, &x.qa, 1, WEFT_VWR_WRITE, 0, 4096, x.b.buf + (8u << 20), VT_MR, 0, 0);
	vt_post(&x.a, &x.qa, 2, WEFT_VWR_WRITE, 0, 4096, x.b.buf, VT_MR, 0, 0);
	vt_post(&x.a, &x.qa, 3, WEFT_VWR_READ, 0, 4096, x.b.buf, VT_MR, 0, 0);
	n = wsv_wait(x.s, &x.a.cq, e, 3, 50 * MS);
	REQUIRE(n == 3, "%u CQEs", n);
	REQUIRE(e[0].wr_id == 1 && e[0].status == WEFT_VWC_REM_ACCESS_ERR,
	       "violating WQE: status %u", e[0].status);
	REQUIRE(e[1].status == WEFT_VWC_WR_FLUSH_ERR && e[2].status == WEFT_VWC_WR_FLUSH_ERR,
	       "outstanding WQEs flushed");
	n = wsv_wait(x.s, &x.b.cq, e, 2, 50 * MS);
	REQUIRE(n == 2 && e[0].status == WEFT_VWC_WR_FLUSH_ERR, "peer receives flushed");
	REQUIRE(vt_drops(x.s, 1, WEFT_R_BOUNDS) == 1 && vt_cnt(x.s, 0, WEFT_CNT_V_TERMINATES_RX) == 1,
	       "Terminate with the cause");
	REQUIRE(vt_qp_state(&x.a, QA) == WEFT_VQPS_ERR && vt_qp_state(&x.b, QB) == WEFT_VQPS_ERR,
	       "both QPs in ERR");
	done(&x, "item 119: remote violation: Terminate with the cause, both ERR, outstanding flush");
}

static void rule120_work_queue_model(void)
{
	struct ctx x;
	struct weft_vcqe e[8];
	struct weft_vwqe w;
	unsigned int n;

	setup(&x);
	REQUIRE(wsv_alloc_stag(x.s, 0, WEFT_STAG(20, 0), VT_PD, WEFT_TPT_MW1, 0) == 0, "MW");
	vt_recv(&x.b, &x.qb, 10, 0, 4096);
	vt_post(&x.a, &x.qa, 1, WEFT_VWR_SEND, 0, 100, 0, 0, 0, 0);
	vt_post(&x.a, &x.qa, 2, WEFT_VWR_WRITE, 0, 100, x.b.buf + 8192, VT_MR, 0, 0);
	vt_post(&x.a, &x.qa, 3, WEFT_VWR_READ, 16384, 100, x.b.buf + 8192, VT_MR, 0, 0);
	memset(&w, 0, sizeof(w));
	w.wr_id = 4;
	w.opcode = WEFT_VWR_BIND_MW;
	w.flags = WEFT_VWQE_SIGNALED;
	w.u.bind.va = x.a.buf;
	w.u.bind.length = 4096;
	w.u.bind.mw_stag = WEFT_STAG(20, 1);
	w.u.bind.mr_stag = VT_MR;
	w.u.bind.access = WEFT_VACC_REMOTE_READ;
	REQUIRE(wsv_post_send(x.s, &x.qa, &w, NULL, 0, true) == 0, "bind");
	n = wsv_wait(x.s, &x.a.cq, e, 4, 50 * MS);
	REQUIRE(n == 4, "%u CQEs", n);
	REQUIRE(e[0].opcode == WEFT_VWC_SEND && e[1].opcode == WEFT_VWC_RDMA_WRITE &&
	       e[2].opcode == WEFT_VWC_RDMA_READ && e[3].opcode == WEFT_VWC_BIND_MW,
	       "opcodes %u %u %u %u", e[0].opcode, e[1].opcode, e[2].opcode, e[3].opcode);
	REQUIRE(wsv_wait(x.s, &x.b.cq, e, 1, 50 * MS) == 1 && e[0].opcode == WEFT_VWC_RECV &&
	       e[0].wr_id == 10, "receive WC");
	done(&x, "item 120: send, receive, read, write and bind WRs complete as WCs");
}

static const struct vt_case rules[] = {
	{ "30-stag-lookup", rule30_stag_lookup },
	{ "31-pd-check", rule31_pd_check },
	{ "32-region-vs-window", rule32_region_vs_window },
	{ "33-bounds", rule33_bounds },
	{ "34-access-bits", rule34_access_bits },
	{ "35-valid-bit", rule35_valid_bit },
	{ "36-window-binding", rule36_window_binding },
	{ "37-att-translation", rule37_att_translation },
	{ "38-local-invalid-segment", rule38_local_invalid_segment },
	{ "39-reg-error-option-a", rule39_reg_error_option_a },
	{ "40-reg-error-option-b", rule40_reg_error_option_b },
	{ "41-one-touch", rule41_one_touch },
	{ "42-one-touch-out-of-order", rule42_one_touch_out_of_order },
	{ "61-read-msn", rule61_read_msn },
	{ "62-fetchop", rule62_fetchop },
	{ "72-cqe-per-wqe", rule72_cqe_per_wqe },
	{ "114-write-advertised", rule114_write_advertised },
	{ "115-read-response", rule115_read_response },
	{ "116-send-invalidate", rule116_send_invalidate },
	{ "117-solicited-event", rule117_solicited_event },
	{ "118-data-target-stag", rule118_data_target_stag },
	{ "119-terminate", rule119_terminate },
	{ "120-work-queue-model", rule120_work_queue_model },
};

int main(int argc, char **argv)
{
	return vt_main("rule", rules, sizeof(rules) / sizeof(rules[0]), argc, argv);
}
