/* SPDX-License-Identifier: MIT */
/* Weft core fuzz engine; see fuzz_engine.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_engine.h"
#include "weft/match.h"
#include "weft_sim.h"
#include "weft_sim_verbs.h"
#include "weft_sim_cnt.h"

#define FZ_NODES        2u
#define FZ_MEM          (4u << 20)
#define FZ_BUF          (256u << 10)
#define FZ_WINDOWS      2u
#define FZ_POOL         96u
#define FZ_JOB          0x4655u
#define FZ_PAGE_SHIFT   12u
/* Verbs set-up of each node (docs/hw-spec.md 16): PD 1, CQ 1, RC QP 2
 * connected to the other node's QP 2, UD QP 1 (GSI), region VM_MR over
 * vbuf, a fast-registration region and a type 2 window. */
#define FZ_VQPS         8u
#define FZ_VCQS         4u
#define FZ_VTPT         16u
#define FZ_VBUF         (64u << 10)
#define FZ_VMR          WEFT_STAG(1, 1)
#define FZ_VFAST        2u
#define FZ_VMW          3u
#define FZ_VREG_MAX     (64u << 10)     /* lengths the fuzzer registers */
/* Counter engine set-up of each node (docs/counters.md): exposure 0 over
 * the first half of cbuf at virtual address FZ_CVA, object 1 over the
 * second half, both through a page list that scatters cbuf's pages. */
#define FZ_CBUF         (64u << 10)
#define FZ_CVA          0x7f0000000000ull
#define FZ_COBJ         1u

/* A counter object or exposure the fuzzer's driver created, with the
 * pages its list named at that time (the adapter copied the same). */
struct fz_crec {
	bool live;
	uint64_t block;
	uint32_t np;
	uint64_t *pages;
};

struct fz_node {
	struct weft_sim_window win[FZ_WINDOWS];
	uint64_t buf, pvo;
	uint32_t rcxt[4];
	uint16_t key[4];
	uint8_t *canary;        /* bit per byte: holds a canary */
	uint8_t *approved;      /* byte per 4 KiB page: an allowed DMA wrote it */
	/* verbs */
	struct wsv_qp rc, ud, uds;      /* uds: UD QP on the SRQ */
	struct wsv_srq srq;
	struct wsv_qp tmq;              /* RC QP 6 on the tag-matching SRQ 5 */
	struct wsv_srq tms;             /* SRQ 5 (TM): plain WQEs */
	uint64_t tmops;                 /* its tag-operation ring (8 of 64 bytes) */
	uint32_t tm_prod;
	uint64_t cq_ring, cq_ci, vbuf, vatt, cmdblk, fatt;
	uint64_t cmd_at, dump_at;       /* last VERBS_CMD block and its dump target */
	uint64_t dump_len;              /* bytes of the dump target (QUERY_HQ: u.hq.len) */
	bool cmd_set;
	uint8_t *mrpage;        /* byte per 4 KiB page: named by a writable region */
	uint8_t tpt_sum[FZ_VTPT][64];   /* TPT entries the map was built from */
	bool mr_stale;
	/* counter engine */
	uint64_t cbuf, clist, cblk, ccmd;
	uint64_t ccmd_at, cdump_at;
	uint64_t cpend;         /* CREATE running: its status block (written at once) */
	bool ccmd_set;
	struct fz_crec cobj[WEFT_CNT_NR_OBJ], cexp[WEFT_CNT_NR_EXP];
	uint8_t *cpage;         /* byte per 4 KiB page: named by a live object or exposure */
	bool cpage_stale;
};

struct fz {
	struct weft_sim *s;
	struct fz_node n[FZ_NODES];
	uint8_t pool[FZ_POOL][WEFT_WIRE_MAX_FRAME];
	size_t pool_len[FZ_POOL];
	unsigned int npool;
	bool capturing;
	bool quiet;
	bool driver;            /* the fuzzer's driver is setting up: not checked */
	struct fz_stats st;
};

/* ---- decision source (fuzz_src.h), by short names ---------------------------- */

static uint64_t src_u64(struct fz_src *src)
{
	return fz_src_u64(src);
}

static uint64_t below(struct fz_src *src, uint64_t n)
{
	return fz_src_below(src, n);
}

/* An "interesting" 64-bit value for a field. */
static uint64_t interesting(struct fz *f, struct fz_src *src)
{
	struct fz_node *n = &f->n[0];

	switch (below(src, 12)) {
	case 0: return 0;
	case 1: return 1 + below(src, 16);
	case 2: return ~0ull;
	case 3: return 0xffffffffull;
	case 4: return below(src, FZ_MEM) & ~0x7ffull;
	case 5: return n->buf + below(src, FZ_BUF);
	case 6: return n->pvo + below(src, 2 * FZ_BUF);
	case 7: return n->win[below(src, FZ_WINDOWS)].recv_addr;
	case 8: return FZ_MEM - below(src, 4096);
	case 9: return 1ull << below(src, 64);
	case 10: return FZ_JOB;
	default: return src_u64(src);
	}
}

/* ---- oracle: may the adapter write [addr, addr + len) of node? ---------------- */

static bool inside(uint64_t lo, uint64_t size, uint64_t addr, size_t len)
{
	return addr >= lo && len <= size && addr - lo <= size - len;
}


/* ---- verbs part of the oracle ----------------------------------------------------- */

static uint64_t mem_u64(struct fz *f, unsigned int node, uint64_t a, bool *ok)
{
	uint64_t v = 0;

	*ok = a < FZ_MEM && a + 8 <= FZ_MEM && !(a & 7);
	if (*ok)
		memcpy(&v, weft_sim_mem(f->s, node) + a, 8);
	return v;
}

/* The guest-physical page of page p of a region, as its ATT names it. */
static bool att_page(struct fz *f, unsigned int node, const struct weft_tpt_entry *e,
		     uint64_t p, uint64_t *pa)
{
	uint64_t a = e->att_addr;
	bool ok = true;

	if (e->att_level == WEFT_ATT_IND1) {
		a = mem_u64(f, node, a + p / WEFT_ATT_FANOUT * 8, &ok);
		p %= WEFT_ATT_FANOUT;
	} else if (e->att_level == WEFT_ATT_IND2) {
		a = mem_u64(f, node, a + p / (WEFT_ATT_FANOUT * WEFT_ATT_FANOUT) * 8, &ok);
		if (ok)
			a = mem_u64(f, node, a + p / WEFT_ATT_FANOUT % WEFT_ATT_FANOUT * 8, &ok);
		p %= WEFT_ATT_FANOUT;
	} else if (e->att_level != WEFT_ATT_DIRECT) {
		return false;
	}
	if (ok)
		*pa = mem_u64(f, node, a + p * 8, &ok);
	return ok;
}

/* Pages a valid region with a write right may have written: every page
 * its ATT names (bounded by what guest memory can hold). */
static void mr_map(struct fz *f, unsigned int node)
{
	struct fz_node *n = &f->n[node];
	struct weft_core *c = weft_sim_core(f->s, node);
	unsigned int i;

	memset(n->mrpage, 0, FZ_MEM >> FZ_PAGE_SHIFT);
	for (i = 0; i < FZ_VTPT; i++) {
		struct weft_tpt_entry e;
		uint64_t psize, first, np, p, pa, q;

		if (!weft_core_verbs_tpt(c, i, &e))
			continue;
		memcpy(n->tpt_sum[i], &e, sizeof(e));
		if (e.type != WEFT_TPT_MR || !(e.flags & WEFT_TPTF_VALID) ||
		    !(e.access & WEFT_VACC_LOCAL_WRITE))
			continue;
		if (e.att_level == WEFT_ATT_PHYS) {
			for (q = e.va >> FZ_PAGE_SHIFT; q < FZ_MEM >> FZ_PAGE_SHIFT &&
			     q <= (e.va + e.length) >> FZ_PAGE_SHIFT; q++)
				n->mrpage[q] = 1;
			continue;
		}
		if (e.page_shift < 12 || e.page_shift > 28)
			continue;
		psize = 1ull << e.page_shift;
		if (!att_page(f, node, &e, 0, &pa))
			continue;
		first = pa & (psize - 1);
		np = (first + e.length + psize - 1) >> e.page_shift;
		/* An ATT held in guest memory has at most FZ_MEM / 8 entries. */
		if (np > FZ_MEM / 8 + 1)
			np = FZ_MEM / 8 + 1;
		for (p = 0; p < np; p++) {
			if (!att_page(f, node, &e, p, &pa))
				break;
			pa &= ~(psize - 1);
			for (q = pa >> FZ_PAGE_SHIFT; q < FZ_MEM >> FZ_PAGE_SHIFT &&
			     q < (pa + psize) >> FZ_PAGE_SHIFT; q++)
				n->mrpage[q] = 1;
		}
	}
	n->mr_stale = false;
}

static bool mr_changed(struct fz *f, unsigned int node)
{
	struct weft_core *c = weft_sim_core(f->s, node);
	struct weft_tpt_entry e;
	unsigned int i;

	for (i = 0; i < FZ_VTPT; i++)
		if (weft_core_verbs_tpt(c, i, &e) && memcmp(f->n[node].tpt_sum[i], &e, sizeof(e)))
			return true;
	return false;
}

/* 4: CQ ring, 5: command response or dump, 6: region page, 7: SRQ
 * consumer index; 0: none. */
static int verbs_allowed(struct fz *f, unsigned int node, uint64_t addr, size_t len)
{
	struct fz_node *n = &f->n[node];
	struct weft_core *c = weft_sim_core(f->s, node);
	uint64_t p;
	unsigned int i;

	for (i = 0; i < FZ_VCQS; i++) {
		struct weft_vcqc q;

		if (weft_core_verbs_cq(c, i, &q) && q.created &&
		    inside(q.ring_addr, (uint64_t)sizeof(struct weft_vcqe) << q.log2_entries, addr, len))
			return 4;
	}
	for (i = 1; i < FZ_VQPS; i++) {
		struct weft_vsrqc q;

		/* A TM SRQ's tag-operation consumer index follows (ci_addr + 4). */
		if (weft_core_verbs_srq(c, i, &q) && q.created &&
		    inside(q.ci_addr, q.flags & WEFT_VSRQF_TM ? 8 : 4, addr, len))
			return 7;
	}
	if (n->cmd_set && (inside(n->cmd_at + 64, 64, addr, len) ||
			   inside(n->dump_at, n->dump_len, addr, len)))
		return 5;
	if (n->mr_stale || mr_changed(f, node))
		mr_map(f, node);
	for (p = addr >> FZ_PAGE_SHIFT; p <= (addr + len - 1) >> FZ_PAGE_SHIFT; p++)
		if (p >= FZ_MEM >> FZ_PAGE_SHIFT || !n->mrpage[p])
			return 0;
	return 6;
}

/* ---- counter-engine part of the oracle -------------------------------------------- */

static void crec_clear(struct fz_crec *r)
{
	free(r->pages);
	memset(r, 0, sizeof(*r));
}

static void cnt_forget(struct fz *f, unsigned int node)
{
	struct fz_node *n = &f->n[node];
	unsigned int i;

	for (i = 0; i < WEFT_CNT_NR_OBJ; i++)
		crec_clear(&n->cobj[i]);
	for (i = 0; i < WEFT_CNT_NR_EXP; i++)
		crec_clear(&n->cexp[i]);
	n->ccmd_set = false;
	n->cpage_stale = true;
}

static void cpage_map(struct fz_node *n)
{
	unsigned int i, k;
	uint32_t p;

	memset(n->cpage, 0, FZ_MEM >> FZ_PAGE_SHIFT);
	for (k = 0; k < 2; k++) {
		struct fz_crec *rec = k ? n->cexp : n->cobj;
		unsigned int nr = k ? WEFT_CNT_NR_EXP : WEFT_CNT_NR_OBJ;

		for (i = 0; i < nr; i++)
			for (p = 0; rec[i].live && p < rec[i].np; p++)
				if (rec[i].pages[p] < FZ_MEM)
					n->cpage[rec[i].pages[p] >> FZ_PAGE_SHIFT] = 1;
	}
	n->cpage_stale = false;
}

/* 7: counter command response, dump or status block; 8: a page of a live
 * object or exposure; 0: none. */
static int cnt_allowed(struct fz *f, unsigned int node, uint64_t addr, size_t len)
{
	struct fz_node *n = &f->n[node];
	uint64_t p;
	unsigned int i;

	if (n->ccmd_set && (inside(n->ccmd_at + 64, 64, addr, len) ||
			    inside(n->cdump_at, sizeof(struct weft_cnt_obj_dump), addr, len) ||
			    inside(n->cpend, 16, addr, len)))
		return 8;
	for (i = 0; i < WEFT_CNT_NR_OBJ; i++)
		if (n->cobj[i].live && inside(n->cobj[i].block, 16, addr, len))
			return 8;
	if (n->cpage_stale)
		cpage_map(n);
	for (p = addr >> FZ_PAGE_SHIFT; p <= (addr + len - 1) >> FZ_PAGE_SHIFT; p++)
		if (p >= FZ_MEM >> FZ_PAGE_SHIFT || !n->cpage[p])
			return 0;
	return 9;
}

static int allowed(struct fz *f, unsigned int node, uint64_t addr, size_t len)
{
	struct weft_core *c = weft_sim_core(f->s, node);
	uint8_t *mem = weft_sim_mem(f->s, node);
	unsigned int w, nw = WEFT_CAPS_WINDOWS(weft_core_reg_read(c, WEFT_REG_CAPS, 8));
	uint64_t base, size;
	unsigned int t;

	for (w = 0; w < nw; w++) {
		uint64_t lmt = WEFT_SRAM_LMT_OFF(w);
		uint64_t q1 = weft_core_sram_read(c, lmt + 0x08, 8);
		uint32_t state = (uint32_t)q1, rsz = (uint32_t)(q1 >> 32);
		uint32_t id = (uint32_t)weft_core_sram_read(c, lmt + 0x10, 8);
		uint32_t ssz = (uint32_t)(weft_core_sram_read(c, lmt + 0x40, 8) >> 32);

		if (id != w || state == WEFT_WIN_INVALID)
			continue;
		if (rsz >= WEFT_FIFO_MIN_LOG2 && rsz <= WEFT_FIFO_MAX_LOG2 &&
		    inside(weft_core_sram_read(c, lmt + 0x00, 8), (uint64_t)WEFT_FRAME_SIZE << rsz,
			   addr, len))
			return 1;
		if (ssz >= WEFT_FIFO_MIN_LOG2 && ssz <= WEFT_FIFO_MAX_LOG2 &&
		    inside(weft_core_sram_read(c, lmt + 0x38, 8), (uint64_t)WEFT_FRAME_SIZE << ssz,
			   addr, len))
			return 1;
	}
	base = weft_core_reg_read(c, WEFT_REG_EVQ_BASE, 8);
	size = weft_core_reg_read(c, WEFT_REG_EVQ_SIZE, 8);
	if (base && size >= WEFT_EVQ_MIN_LOG2 && size <= WEFT_EVQ_MAX_LOG2 &&
	    inside(base, 32ull << size, addr, len))
		return 2;
	for (t = 0; t < WEFT_NR_TCE_TABLES; t++) {
		uint64_t cfg = weft_core_reg_read(c, WEFT_REG_TCE_CFG(t), 8);
		uint64_t owner = weft_core_reg_read(c, WEFT_REG_TCE_OWNER(t), 8);
		uint32_t nr = WEFT_TCE_CFG_NR(cfg), shift = WEFT_TCE_CFG_SHIFT(cfg);
		uint64_t i, lim;

		base = weft_core_reg_read(c, WEFT_REG_TCE_BASE(t), 8);
		if (!base || (base & 7) || !nr || nr > WEFT_TCE_MAX_ENTRIES ||
		    !(owner & WEFT_TCE_OWNER_VALID) ||
		    (shift != WEFT_PAGE_SHIFT_4K && shift != WEFT_PAGE_SHIFT_64K &&
		     shift != WEFT_PAGE_SHIFT_16M) || base >= FZ_MEM)
			continue;
		lim = (FZ_MEM - base) / 8;
		if (lim > nr)
			lim = nr;
		for (i = 0; i < lim; i++) {
			uint64_t tce;

			memcpy(&tce, mem + base + i * 8, 8);
			if (tce && inside(weft_tce_rpn(tce) << shift, 1ull << shift, addr, len))
				return 3;
		}
	}
	t = (unsigned int)cnt_allowed(f, node, addr, len);
	if (t)
		return (int)t;
	return verbs_allowed(f, node, addr, len);
}

static void dma_hook(void *opaque, unsigned int node, uint64_t addr, size_t len, bool is_write)
{
	struct fz *f = opaque;
	uint64_t p;
	int why;

	if (!is_write || !len || f->driver)
		return;
	f->st.dma_writes++;
	why = allowed(f, node, addr, len);
	if (!why) {
		f->st.violations++;
		if (!f->quiet)
			fprintf(stderr, "fuzz: VIOLATION: node %u adapter wrote %zu bytes at 0x%llx, "
				"outside every FIFO, the event queue and every TCE-mapped page\n",
				node, len, (unsigned long long)addr);
		return;
	}
	if (why == 1)
		f->st.dma_fifo++;
	else if (why == 2)
		f->st.dma_evq++;
	else if (why == 3)
		f->st.dma_tce++;
	else if (why == 4)
		f->st.dma_verbs_cq++;
	else if (why == 5)
		f->st.dma_verbs_cmd++;
	else if (why == 7)
		f->st.dma_verbs_srq++;
	else if (why >= 8)
		f->st.dma_cnt++;
	else
		f->st.dma_verbs_mr++;
	/* A write may change a page list: rebuild the region map. */
	f->n[node].mr_stale = true;
	for (p = addr >> FZ_PAGE_SHIFT; p <= (addr + len - 1) >> FZ_PAGE_SHIFT; p++)
		f->n[node].approved[p] = 1;
}

/* ---- canaries ------------------------------------------------------------------ */

static uint8_t canary_at(uint64_t a)
{
	return (uint8_t)(0xa5 ^ (a * 131) ^ (a >> 9));
}

static void mark(uint8_t *bits, uint64_t lo, uint64_t size, bool on)
{
	uint64_t a;

	if (lo >= FZ_MEM)
		return;
	if (size > FZ_MEM - lo)
		size = FZ_MEM - lo;
	for (a = lo; a < lo + size; a++) {
		if (on)
			bits[a >> 3] |= (uint8_t)(1u << (a & 7));
		else
			bits[a >> 3] &= (uint8_t)~(1u << (a & 7));
	}
}

/* Canaries everywhere except the areas the set-up handed to the adapter. */
static void lay_canaries(struct fz *f, unsigned int node)
{
	struct fz_node *n = &f->n[node];
	struct weft_core *c = weft_sim_core(f->s, node);
	uint8_t *mem = weft_sim_mem(f->s, node);
	unsigned int w, t;
	uint64_t a;

	memset(n->canary, 0xff, FZ_MEM / 8);
	memset(n->approved, 0, FZ_MEM >> FZ_PAGE_SHIFT);
	mark(n->canary, 0, 4096, false);
	mark(n->canary, n->buf, FZ_BUF, false);
	mark(n->canary, n->vbuf, FZ_VBUF, false);
	mark(n->canary, n->cq_ring, 4096, false);
	mark(n->canary, n->cq_ci, 4096, false);
	mark(n->canary, n->cmdblk, 4096, false);
	mark(n->canary, n->vatt, 4096, false);
	mark(n->canary, n->fatt, 4096, false);
	mark(n->canary, n->rc.sq, 4096, false);
	mark(n->canary, n->rc.rq, 4096, false);
	mark(n->canary, n->ud.sq, 4096, false);
	mark(n->canary, n->ud.rq, 4096, false);
	mark(n->canary, n->uds.sq, 4096, false);
	mark(n->canary, n->srq.ring, 4096, false);
	mark(n->canary, n->srq.ci_addr, 4096, false);
	mark(n->canary, n->tmq.sq, 4096, false);
	mark(n->canary, n->tms.ring, 4096, false);
	mark(n->canary, n->tms.ci_addr, 4096, false);
	mark(n->canary, n->tmops, 4096, false);
	mark(n->canary, n->cbuf, FZ_CBUF, false);
	mark(n->canary, n->cblk, 4096, false);
	mark(n->canary, n->ccmd, 4096, false);
	mark(n->canary, n->clist, 4096, false);
	for (w = 0; w < FZ_WINDOWS; w++) {
		mark(n->canary, n->win[w].send_addr, (uint64_t)n->win[w].send_frames * WEFT_FRAME_SIZE,
		     false);
		mark(n->canary, n->win[w].recv_addr, (uint64_t)n->win[w].recv_frames * WEFT_FRAME_SIZE,
		     false);
	}
	mark(n->canary, weft_core_reg_read(c, WEFT_REG_EVQ_BASE, 8),
	     32ull << weft_core_reg_read(c, WEFT_REG_EVQ_SIZE, 8), false);
	for (t = 0; t < WEFT_NR_TCE_TABLES; t++)
		mark(n->canary, weft_core_reg_read(c, WEFT_REG_TCE_BASE(t), 8),
		     8ull * WEFT_TCE_CFG_NR(weft_core_reg_read(c, WEFT_REG_TCE_CFG(t), 8)), false);
	for (a = 0; a < FZ_MEM; a++)
		if (n->canary[a >> 3] & (1u << (a & 7)))
			mem[a] = canary_at(a);
}

static void check_canaries(struct fz *f, unsigned int node)
{
	struct fz_node *n = &f->n[node];
	uint8_t *mem = weft_sim_mem(f->s, node);
	uint64_t a, bad = 0, first = 0;

	for (a = 0; a < FZ_MEM; a++) {
		if (!(n->canary[a >> 3] & (1u << (a & 7))) || mem[a] == canary_at(a) ||
		    n->approved[a >> FZ_PAGE_SHIFT])
			continue;
		if (!bad++)
			first = a;
	}
	if (bad) {
		f->st.canary_hits += bad;
		f->st.violations++;
		if (!f->quiet)
			fprintf(stderr, "fuzz: VIOLATION: node %u: %llu canary bytes changed without an "
				"allowed DMA, first at 0x%llx\n", node, (unsigned long long)bad,
				(unsigned long long)first);
	}
}

/* ---- set-up and valid traffic ------------------------------------------------------- */

static void tap(void *opaque, uint16_t src_node, const void *frame, size_t len, bool replayed)
{
	struct fz *f = opaque;

	(void)src_node;
	if (!f->capturing || replayed || f->npool >= FZ_POOL || len > WEFT_WIRE_MAX_FRAME)
		return;
	memcpy(f->pool[f->npool], frame, len);
	f->pool_len[f->npool++] = len;
}

static int setup_node(struct fz *f, unsigned int node)
{
	struct fz_node *n = &f->n[node];
	unsigned int w, i;
	int rc;

	rc = weft_sim_job_attach(f->s, node, FZ_JOB);
	if (rc < 0)
		return rc;
	for (w = 0; w < FZ_WINDOWS; w++) {
		struct weft_sim_window_cfg wc = {
			.job = FZ_JOB, .send_log2 = 5, .recv_log2 = 5, .bcast = w == 0,
			.window = (int)w,
		};

		rc = weft_sim_open_window(f->s, node, &wc, &n->win[w]);
		if (rc)
			return rc;
	}
	if (!n->buf)
		n->buf = weft_sim_alloc(f->s, node, FZ_BUF, 4096);
	if (!n->buf)
		return -1;
	rc = weft_sim_reg_mr(f->s, node, FZ_JOB, n->buf, FZ_BUF, 12, &n->pvo);
	if (rc < 0)
		return rc;
	for (i = 0; i < 4; i++) {
		rc = weft_sim_rcxt_alloc(f->s, node, i % FZ_WINDOWS, &n->rcxt[i], &n->key[i]);
		if (rc)
			return rc;
	}
	return 0;
}


/* ---- verbs set-up ---------------------------------------------------------------- */

static uint64_t once(struct fz *f, unsigned int node, uint64_t *a, uint64_t size)
{
	if (!*a)
		*a = weft_sim_alloc(f->s, node, size, 4096);
	return *a;
}

/* GID of a node (docs/hw-spec.md 16.13): entry 0 is fd00::(node + 1),
 * entry 1 ::ffff:10.0.0.(node + 1). */
static void fz_gid(uint8_t g[16], unsigned int node, unsigned int index)
{
	memset(g, 0, 16);
	if (index == 0) {
		g[0] = 0xfd;
	} else {
		g[10] = 0xff;
		g[11] = 0xff;
		g[12] = 10;
	}
	g[15] = (uint8_t)(node + 1);
}

/* CREATE_SRQ of q on PD 1, for the caller to complete. */
static void srq_cmd(struct weft_vcmd *k, const struct wsv_srq *q)
{
	memset(k, 0, sizeof(*k));
	k->op = WEFT_VCMD_CREATE_SRQ;
	k->handle = q->srqn;
	k->u.srq.ring_addr = q->ring;
	k->u.srq.ci_addr = q->ci_addr;
	k->u.srq.pd = 1;
	k->u.srq.log2 = q->log2;
	k->u.srq.stride_log2 = (uint8_t)q->stride;
}

/* CREATE_QP of q on PD 1 and CQ 1, receiving from SRQ srqn. */
static int qp_on_srq(struct fz *f, const struct wsv_qp *q, uint32_t srqn)
{
	struct weft_vcmd k;

	memset(&k, 0, sizeof(k));
	k.op = WEFT_VCMD_CREATE_QP;
	k.handle = q->qpn;
	k.u.qp.sq_addr = q->sq;
	k.u.qp.type = (uint8_t)q->type;
	k.u.qp.pd = 1;
	k.u.qp.send_cq = 1;
	k.u.qp.recv_cq = 1;
	k.u.qp.sq_log2 = (uint8_t)q->sq_log2;
	k.u.qp.sq_stride_log2 = (uint8_t)q->sq_stride;
	k.u.qp.rq_stride_log2 = 8;
	k.u.qp.srq = srqn;
	return wsv_cmd(f->s, q->node, &k, NULL);
}

/* PD, CQ, region, fast-registration region, window, RC and UD QPs in
 * memory allocated once per node (a reboot keeps node memory). */
static int verbs_setup(struct fz *f, unsigned int node)
{
	struct fz_node *n = &f->n[node];
	struct weft_vcmd k;
	uint64_t *att, i;
	int st = 0;

	if (!once(f, node, &n->cmdblk, 4096) || !once(f, node, &n->cq_ring, 4096) ||
	    !once(f, node, &n->cq_ci, 4096) || !once(f, node, &n->vbuf, FZ_VBUF) ||
	    !once(f, node, &n->vatt, 4096) || !once(f, node, &n->fatt, 4096) ||
	    !once(f, node, &n->rc.sq, 4096) || !once(f, node, &n->rc.rq, 4096) ||
	    !once(f, node, &n->ud.sq, 4096) || !once(f, node, &n->ud.rq, 4096) ||
	    !once(f, node, &n->uds.sq, 4096) || !once(f, node, &n->srq.ring, 4096) ||
	    !once(f, node, &n->srq.ci_addr, 4096) || !once(f, node, &n->tmq.sq, 4096) ||
	    !once(f, node, &n->tms.ring, 4096) || !once(f, node, &n->tms.ci_addr, 4096) ||
	    !once(f, node, &n->tmops, 4096))
		return -1;
	memset(weft_sim_ptr(f->s, node, n->cq_ring, 4096), 0, 4096);
	memset(weft_sim_ptr(f->s, node, n->cq_ci, 8), 0, 8);
	att = weft_sim_ptr(f->s, node, n->vatt, 4096);
	for (i = 0; i < FZ_VBUF / 4096; i++)
		att[i] = n->vbuf + i * 4096;
	att = weft_sim_ptr(f->s, node, n->fatt, 4096);
	for (i = 0; i < FZ_VBUF / 4096; i++)
		att[i] = n->vbuf + (FZ_VBUF / 4096 - 1 - i) * 4096;
	st |= wsv_pd(f->s, node, 1);
	memset(&k, 0, sizeof(k));
	k.op = WEFT_VCMD_CREATE_CQ;
	k.handle = 1;
	k.u.cq.ring_addr = n->cq_ring;
	k.u.cq.ci_addr = n->cq_ci;
	k.u.cq.log2_entries = 7;
	st |= wsv_cmd(f->s, node, &k, NULL);
	memset(&k, 0, sizeof(k));
	k.op = WEFT_VCMD_REG_MR;
	k.handle = FZ_VMR;
	k.u.mr.va = n->vbuf;
	k.u.mr.length = FZ_VBUF;
	k.u.mr.att_addr = n->vatt;
	k.u.mr.pd = 1;
	k.u.mr.access = WEFT_VACC_ALL;
	k.u.mr.page_shift = 12;
	st |= wsv_cmd(f->s, node, &k, NULL);
	st |= wsv_alloc_stag(f->s, node, WEFT_STAG(FZ_VFAST, 1), 1, WEFT_TPT_MR, WEFT_TPTF_FAST_REG);
	st |= wsv_alloc_stag(f->s, node, WEFT_STAG(FZ_VMW, 1), 1, WEFT_TPT_MW2, 0);
	n->rc = (struct wsv_qp){ .node = node, .qpn = 2, .type = WEFT_VQPT_RC, .sq = n->rc.sq,
				 .rq = n->rc.rq, .sq_log2 = 4, .rq_log2 = 4, .sq_stride = 8,
				 .rq_stride = 8 };
	n->ud = (struct wsv_qp){ .node = node, .qpn = 1, .type = WEFT_VQPT_UD, .sq = n->ud.sq,
				 .rq = n->ud.rq, .sq_log2 = 4, .rq_log2 = 4, .sq_stride = 8,
				 .rq_stride = 8 };
	for (i = 0; i < 2; i++) {
		struct wsv_qp *q = i ? &n->ud : &n->rc;

		memset(&k, 0, sizeof(k));
		k.op = WEFT_VCMD_CREATE_QP;
		k.handle = q->qpn;
		k.u.qp.sq_addr = q->sq;
		k.u.qp.rq_addr = q->rq;
		k.u.qp.type = q->type;
		k.u.qp.pd = 1;
		k.u.qp.send_cq = 1;
		k.u.qp.recv_cq = 1;
		k.u.qp.sq_log2 = 4;
		k.u.qp.sq_stride_log2 = 8;
		k.u.qp.rq_log2 = 4;
		k.u.qp.rq_stride_log2 = 8;
		k.u.qp.flags = WEFT_VQPF_SQ_REG;
		st |= wsv_cmd(f->s, node, &k, NULL);
	}
	for (i = 0; i < 2; i++) {
		uint8_t g[16];

		fz_gid(g, node, (unsigned int)i);
		st |= wsv_gid(f->s, node, (uint32_t)i, g, i ? WEFT_VGID_IPV4 : WEFT_VGID_IPV6);
	}
	st |= wsv_ud_ready(f->s, &n->ud, WEFT_VERBS_GSI_QKEY);
	/* SRQ 3 (16 WQEs, limit 4) and UD QP 4 on it (16.14). */
	memset(weft_sim_ptr(f->s, node, n->srq.ci_addr, 4), 0, 4);
	n->srq = (struct wsv_srq){ .node = node, .srqn = 3, .ring = n->srq.ring,
				   .ci_addr = n->srq.ci_addr, .log2 = 4, .stride = 8 };
	srq_cmd(&k, &n->srq);
	k.u.srq.limit = 4;
	st |= wsv_cmd(f->s, node, &k, NULL);
	n->uds = (struct wsv_qp){ .node = node, .qpn = 4, .type = WEFT_VQPT_UD, .sq = n->uds.sq,
				  .sq_log2 = 4, .sq_stride = 8 };
	st |= qp_on_srq(f, &n->uds, n->srq.srqn);
	st |= wsv_ud_ready(f->s, &n->uds, WEFT_VERBS_GSI_QKEY);
	/* Tag-matching SRQ 5 (8 tags, CQ 1, 8 tag operations) and RC QP 6 on
	 * it, connected to the other node's QP 6 (16.15). */
	memset(weft_sim_ptr(f->s, node, n->tms.ci_addr, 8), 0, 8);
	n->tms = (struct wsv_srq){ .node = node, .srqn = 5, .ring = n->tms.ring,
				   .ci_addr = n->tms.ci_addr, .log2 = 4, .stride = 8 };
	n->tm_prod = 0;
	srq_cmd(&k, &n->tms);
	k.u.srq.flags = WEFT_VSRQF_TM;
	k.u.srq.tm_log2 = 3;
	k.u.srq.tm_cq = 1;
	k.u.srq.tm_max_tags = 8;
	k.u.srq.tm_ring = n->tmops;
	st |= wsv_cmd(f->s, node, &k, NULL);
	n->tmq = (struct wsv_qp){ .node = node, .qpn = 6, .type = WEFT_VQPT_RC, .sq = n->tmq.sq,
				  .sq_log2 = 4, .sq_stride = 8 };
	st |= qp_on_srq(f, &n->tmq, n->tms.srqn);
	n->mr_stale = true;
	return st ? -1 : 0;
}

/* A counter command block at addr is about to run on node: what it may
 * write (its response, a dump, a new status block). */
static void cnt_pre(struct fz *f, unsigned int node, uint64_t addr, const struct weft_cnt_cmd *m)
{
	struct fz_node *n = &f->n[node];

	n->ccmd_at = addr;
	n->cdump_at = m->op == WEFT_CNT_CMD_QUERY || m->op == WEFT_CNT_CMD_QUERY_EXP ?
		      m->u.query.addr : 0;
	n->ccmd_set = true;
	n->cpend = m->op == WEFT_CNT_CMD_CREATE ? m->u.create.block_addr : ~0ull;
	f->st.cnt_cmds++;
}

/* The command ran with status st: keep the oracle's record of what it
 * created or destroyed.  A destroy is believed only when the adapter's
 * object is gone (the status register may be an older command's). */
static void cnt_post(struct fz *f, unsigned int node, const struct weft_cnt_cmd *m,
		     unsigned int st, bool sure)
{
	struct fz_node *n = &f->n[node];
	struct weft_cnt_obj_dump d;
	struct fz_crec *r = NULL;
	uint64_t list = 0, len = 0;
	uint32_t off = 0, p;

	n->cpend = ~0ull;
	if (st != WEFT_CMD_OK)
		return;
	switch (m->op) {
	case WEFT_CNT_CMD_CREATE:
		if (m->handle >= WEFT_CNT_NR_OBJ)
			return;
		r = &n->cobj[m->handle];
		list = m->u.create.pages_addr;
		len = m->u.create.length;
		off = m->u.create.first_off;
		break;
	case WEFT_CNT_CMD_EXPOSE:
		if (m->handle >= WEFT_CNT_NR_EXP)
			return;
		r = &n->cexp[m->handle];
		list = m->u.expose.pages_addr;
		len = m->u.expose.length;
		off = m->u.expose.first_off;
		break;
	case WEFT_CNT_CMD_DESTROY:
		if (m->handle < WEFT_CNT_NR_OBJ &&
		    weft_core_cnt_obj(weft_sim_core(f->s, node), m->handle, &d) && !d.live) {
			crec_clear(&n->cobj[m->handle]);
			n->cpage_stale = true;
		}
		return;
	case WEFT_CNT_CMD_UNEXPOSE:
		if (sure && m->handle < WEFT_CNT_NR_EXP) {
			crec_clear(&n->cexp[m->handle]);
			n->cpage_stale = true;
		}
		return;
	default:
		return;
	}
	if (len > WEFT_CNT_MAX_LEN || off >= WEFT_CNT_PAGE || list >= FZ_MEM)
		return;
	crec_clear(r);
	r->live = true;
	r->block = m->op == WEFT_CNT_CMD_CREATE ? m->u.create.block_addr : ~0ull;
	r->np = (uint32_t)((off + len + WEFT_CNT_PAGE - 1) / WEFT_CNT_PAGE);
	r->pages = calloc(r->np, sizeof(uint64_t));
	if (!r->pages)
		r->np = 0;
	/* The adapter read the list, so it is guest memory. */
	for (p = 0; p < r->np && list + 8ull * p + 8 <= FZ_MEM; p++)
		memcpy(&r->pages[p], weft_sim_mem(f->s, node) + list + 8ull * p, 8);
	n->cpage_stale = true;
}

/* Run a counter command on node as the driver does.  Returns CMD_STATUS. */
static unsigned int cnt_run(struct fz *f, unsigned int node, const struct weft_cnt_cmd *m)
{
	struct fz_node *n = &f->n[node];
	struct weft_core *c = weft_sim_core(f->s, node);
	unsigned int st;

	memcpy(weft_sim_ptr(f->s, node, n->ccmd, sizeof(*m)), m, sizeof(*m));
	cnt_pre(f, node, n->ccmd, m);
	weft_core_reg_write(c, WEFT_REG_CNT_CMD, n->ccmd, 8);
	st = (unsigned int)weft_core_reg_read(c, WEFT_REG_CNT_CMD_STATUS, 8);
	cnt_post(f, node, m, st, true);
	return st;
}

/* Exposure 0 and object 1 over cbuf (docs/counters.md). */
static int cnt_setup(struct fz *f, unsigned int node)
{
	struct fz_node *n = &f->n[node];
	struct weft_cnt_cmd m;
	uint64_t *list, i, np = FZ_CBUF / 4096;
	unsigned int st = 0;

	if (!once(f, node, &n->cbuf, FZ_CBUF) || !once(f, node, &n->clist, 4096) ||
	    !once(f, node, &n->cblk, 4096) || !once(f, node, &n->ccmd, 4096))
		return -1;
	cnt_forget(f, node);
	list = weft_sim_ptr(f->s, node, n->clist, 4096);
	for (i = 0; i < np; i++)
		list[i] = n->cbuf + (np - 1 - i) * 4096;
	memset(&m, 0, sizeof(m));
	m.op = WEFT_CNT_CMD_EXPOSE;
	m.u.expose.va = FZ_CVA;
	m.u.expose.length = FZ_CBUF / 2;
	m.u.expose.pages_addr = n->clist;
	m.u.expose.rights = WEFT_CNT_R_READ | WEFT_CNT_R_WRITE;
	m.u.expose.peer = WEFT_CNT_ANY_PEER;
	st |= cnt_run(f, node, &m);
	memset(&m, 0, sizeof(m));
	m.op = WEFT_CNT_CMD_CREATE;
	m.handle = FZ_COBJ;
	m.u.create.block_addr = n->cblk;
	m.u.create.pages_addr = n->clist + 8 * (np / 2);
	m.u.create.length = FZ_CBUF / 2;
	m.u.create.flags = WEFT_CNTF_IRQ;
	st |= cnt_run(f, node, &m);
	return st ? -1 : 0;
}

/* Connect node 0's and node 1's RC QPs (node 1's back to RESET first). */
static int verbs_connect(struct fz *f)
{
	struct weft_vcmd k;

	memset(&k, 0, sizeof(k));
	k.u.mod.state = WEFT_VQPS_RESET;
	wsv_modify(f->s, 1, 2, WEFT_VQPA_STATE, &k);
	f->n[1].rc.sq_prod = f->n[1].rc.rq_prod = 0;
	wsv_modify(f->s, 1, 6, WEFT_VQPA_STATE, &k);
	f->n[1].tmq.sq_prod = 0;
	return wsv_connect(f->s, &f->n[0].rc, &f->n[1].rc, NULL) |
	       wsv_connect(f->s, &f->n[0].tmq, &f->n[1].tmq, NULL);
}

static void valid_traffic(struct fz *f)
{
	static const char msg[] = "weft fuzz pool";
	unsigned int a, i;
	uint32_t tid = 1;

	f->capturing = true;
	for (a = 0; a < FZ_NODES; a++) {
		unsigned int b = !a;
		struct fz_node *na = &f->n[a], *nb = &f->n[b];

		for (i = 0; i < 2; i++) {
			struct weft_rdma_req q = {
				.local_pvo = na->pvo + 4096 * i, .remote_pvo = nb->pvo + 8192 * i,
				.length = 3000 + 2000 * i, .local_rcxt = na->rcxt[i],
				.remote_rcxt = nb->rcxt[i], .remote_rcxt_key = nb->key[i],
				.notify = WEFT_NOTIFY_BOTH, .tid = tid++, .protocol_cookie = 7,
				.user_cookie = 9,
			};

			weft_sim_post_rdma(&na->win[i], i ? WEFT_SF_RDMAR : WEFT_SF_RDMAW,
					   (uint16_t)b, (uint16_t)i, &q);
			weft_sim_run_idle(f->s, 100000);
		}
		weft_sim_post_fifo(&na->win[0], (uint16_t)b, 1, msg, sizeof(msg));
		weft_sim_post_fifo(&na->win[0], WEFT_NODE_BROADCAST, 0, msg, sizeof(msg));
		weft_sim_run_idle(f->s, 100000);
		{
			static const uint8_t ops[] = { WEFT_VWR_SEND_IMM, WEFT_VWR_WRITE,
						       WEFT_VWR_READ, WEFT_VWR_FAA };
			struct weft_vsge sg = { .addr = na->vbuf, .length = 2500, .lkey = FZ_VMR };
			struct weft_vsge rs = { .addr = nb->vbuf + 8192, .length = 4096,
						.lkey = FZ_VMR };
			struct weft_vwqe w;

			wsv_post_recv(f->s, &nb->rc, 1, &rs, 1);
			wsv_post_recv(f->s, &nb->ud, 2, &rs, 1);
			for (i = 0; i < 4; i++) {
				memset(&w, 0, sizeof(w));
				w.opcode = ops[i];
				w.flags = WEFT_VWQE_SIGNALED | WEFT_VWQE_SOLICITED;
				w.u.rdma.remote_addr = nb->vbuf + 16384;
				w.u.rdma.rkey = FZ_VMR;
				sg.length = ops[i] == WEFT_VWR_FAA ? 8 : 2500;
				wsv_post_send(f->s, &na->rc, &w, &sg, 1, true);
			}
			memset(&w, 0, sizeof(w));
			w.opcode = WEFT_VWR_SEND;
			w.u.ud.dest_node = (uint16_t)b;
			w.u.ud.dest_qpn = 1;
			w.u.ud.qkey = WEFT_VERBS_GSI_QKEY;
			w.u.ud.sgid_index = (uint8_t)(b & 1);
			fz_gid(w.u.ud.dgid, b, b & 1);
			sg.length = 256;
			wsv_post_send(f->s, &na->ud, &w, &sg, 1, true);
			weft_sim_run_idle(f->s, 100000);
		}
		{
			/* Counter engine: a read and a write on object 1. */
			struct weft_cnt_obj_dump d;
			struct weft_cnt_cmd m;

			weft_core_cnt_obj(weft_sim_core(f->s, a), FZ_COBJ, &d);
			memset(&m, 0, sizeof(m));
			m.op = WEFT_CNT_CMD_POST;
			m.handle = FZ_COBJ;
			m.u.post.gen = d.gen;
			m.u.post.dir = WEFT_CNT_READ;
			m.u.post.node = (uint16_t)b;
			m.u.post.length = 5000;
			m.u.post.offset = 0;
			m.u.post.remote_va = FZ_CVA;
			cnt_run(f, a, &m);
			m.u.post.slot = 1;
			m.u.post.dir = WEFT_CNT_WRITE;
			m.u.post.offset = 8192;
			m.u.post.length = 3072;
			m.u.post.remote_va = FZ_CVA + 8192;
			cnt_run(f, a, &m);
			weft_sim_run_idle(f->s, 100000);
		}
	}
	f->capturing = false;
}

struct fz *fz_new(uint64_t seed, bool quiet)
{
	struct weft_sim_config cfg = {
		.nr_nodes = FZ_NODES, .mem_size = FZ_MEM, .seed = seed, .nr_rcxt = 64,
		.nr_windows = 4, .faults = { .routes = 2, .delay_ns = 500, .jitter_ns = 500 },
		.max_queued = 4096, .reboot_ns = 1000,
		.verbs_qps = FZ_VQPS, .verbs_cqs = FZ_VCQS, .verbs_pds = 4, .verbs_tpt = FZ_VTPT,
	};
	char err[128] = "";
	struct fz *f = calloc(1, sizeof(*f));
	unsigned int i;

	if (!f)
		return NULL;
	f->quiet = quiet;
	f->s = weft_sim_new(&cfg, err, sizeof(err));
	if (!f->s) {
		fprintf(stderr, "fuzz: weft_sim_new: %s\n", err);
		free(f);
		return NULL;
	}
	for (i = 0; i < FZ_NODES; i++) {
		f->n[i].canary = calloc(FZ_MEM / 8, 1);
		f->n[i].approved = calloc(FZ_MEM >> FZ_PAGE_SHIFT, 1);
		f->n[i].mrpage = calloc(FZ_MEM >> FZ_PAGE_SHIFT, 1);
		f->n[i].cpage = calloc(FZ_MEM >> FZ_PAGE_SHIFT, 1);
		if (!f->n[i].canary || !f->n[i].approved || !f->n[i].mrpage || !f->n[i].cpage ||
		    setup_node(f, i) != 0 || verbs_setup(f, i) != 0 || cnt_setup(f, i) != 0) {
			fprintf(stderr, "fuzz: set-up of node %u failed\n", i);
			fz_free(f);
			return NULL;
		}
	}
	if (verbs_connect(f) != 0) {
		fprintf(stderr, "fuzz: verbs connect failed\n");
		fz_free(f);
		return NULL;
	}
	weft_fabric_set_tap(weft_sim_fabric(f->s), tap, f);
	valid_traffic(f);
	weft_sim_set_dma_hook(f->s, dma_hook, f);
	for (i = 0; i < FZ_NODES; i++)
		lay_canaries(f, i);
	/* The oracle must not be vacuous: the registered buffer is a TCE page,
	 * a receive FIFO is a FIFO, and the last page of memory (a canary
	 * area) is nothing. */
	if (allowed(f, 0, f->n[0].buf, 64) != 3 ||
	    allowed(f, 0, f->n[0].win[0].recv_addr, WEFT_FRAME_SIZE) != 1 ||
	    allowed(f, 0, FZ_MEM - 4096, 8) != 0) {
		fprintf(stderr, "fuzz: the memory-write oracle does not classify the set-up\n");
		fz_free(f);
		return NULL;
	}
	return f;
}

void fz_free(struct fz *f)
{
	unsigned int i;

	if (!f)
		return;
	for (i = 0; i < FZ_NODES; i++) {
		free(f->n[i].canary);
		free(f->n[i].approved);
		free(f->n[i].mrpage);
		cnt_forget(f, i);
		free(f->n[i].cpage);
	}
	weft_sim_free(f->s);
	free(f);
}

/* Node 0's tag-matching counters, before a reboot clears them. */
static void tm_tally(struct fz *f)
{
	f->st.tm_ops += weft_sim_counter(f->s, 0, WEFT_CNT_V_TM_OPS);
	f->st.tm_matched += weft_sim_counter(f->s, 0, WEFT_CNT_V_TM_MATCHED);
	f->st.tm_unexpected += weft_sim_counter(f->s, 0, WEFT_CNT_V_TM_UNEXPECTED);
	f->st.tm_rndv += weft_sim_counter(f->s, 0, WEFT_CNT_V_TM_RNDV);
}

void fz_reset(struct fz *f)
{
	/* The driver's own memory writes of the new set-up are not the
	 * adapter's: check the canaries first, lay them again after. */
	check_canaries(f, 0);
	check_canaries(f, 1);
	tm_tally(f);
	f->driver = true;
	cnt_forget(f, 0);
	if (weft_sim_node_reboot(f->s, 0) == 0 && setup_node(f, 0) == 0 &&
	    verbs_setup(f, 0) == 0 && cnt_setup(f, 0) == 0)
		verbs_connect(f);
	f->driver = false;
	f->n[0].cmd_set = false;
	lay_canaries(f, 0);
	lay_canaries(f, 1);
	f->st.resets++;
}

/* ---- actions ------------------------------------------------------------------------- */

static const uint64_t reg_offs[] = {
#define FZ_REG_OFF(name, off, acc) off,
	WEFT_REG_LIST(FZ_REG_OFF)
#undef FZ_REG_OFF
};

static unsigned int pick_size(struct fz_src *src)
{
	static const unsigned int sizes[] = { 8, 8, 8, 4, 4, 2, 1 };

	return sizes[below(src, sizeof(sizes) / sizeof(sizes[0]))];
}

static void act_reg(struct fz *f, struct fz_src *src)
{
	struct weft_core *c = weft_sim_core(f->s, 0);
	uint64_t off, val;
	unsigned int sz;

	switch (below(src, 5)) {
	case 0:
		off = reg_offs[below(src, sizeof(reg_offs) / sizeof(reg_offs[0]))];
		break;
	case 4:
		off = WEFT_REG_INT_MOD(below(src, WEFT_MAX_HANDLERS + 1));
		break;
	case 1:
		off = WEFT_REG_TCE_BASE_OFF + below(src, WEFT_NR_TCE_TABLES) * WEFT_REG_TCE_STRIDE +
		      8 * below(src, 4);
		break;
	case 2:
		off = WEFT_REG_CNT_BASE + 8 * below(src, 128);
		break;
	default:
		off = below(src, WEFT_REGS_SIZE + 64);
		break;
	}
	/* The matching registers and their DMA have their own target and
	 * oracle (fuzz_match.c). */
	if (off >= WEFT_MATCH_REG_FIRST && off < WEFT_MATCH_QD_END)
		off = WEFT_REG_INT_READY;
	/* RESET and RECOVER wipe the set-up: keep them rare. */
	if ((off == WEFT_REG_RESET || off == WEFT_REG_RECOVER) && below(src, 8))
		off = WEFT_REG_INT_READY;
	switch (below(src, 6)) {
	case 0: val = off == WEFT_REG_RESET ? WEFT_RESET_MAGIC : WEFT_RECOVER_MAGIC; break;
	case 1: val = WEFT_ACQ(below(src, 80), below(src, 6), below(src, 4)); break;
	case 2:
		if (off >= WEFT_REG_INT_MOD_BASE && off < WEFT_REG_INT_MOD_END + 8)
			val = WEFT_INT_MOD(below(src, WEFT_INT_MOD_MAX_US + 100), below(src, 40));
		else
			val = WEFT_TCE_CFG(below(src, 2048), below(src, 3) ? 12 : 24);
		break;
	case 3: val = FZ_JOB | (below(src, 2) ? WEFT_TCE_OWNER_VALID : 0); break;
	default: val = interesting(f, src); break;
	}
	f->st.reg_writes++;
	sz = pick_size(src);
	if ((off & ~7ull) == WEFT_REG_VERBS_CMD) {
		/* The driver names the command block, hence its response and
		 * a query's dump target. */
		uint64_t a = sz == 4 ? (uint32_t)val : val, q;
		bool ok;

		f->n[0].cmd_at = a;
		f->n[0].cmd_set = true;
		q = mem_u64(f, 0, a + 8, &ok);
		f->n[0].dump_at = ok ? q : 0;
		f->n[0].dump_len = 128;
		if (ok && (uint8_t)mem_u64(f, 0, a, &ok) == WEFT_VCMD_QUERY_HQ)
			f->n[0].dump_len = (uint32_t)mem_u64(f, 0, a + 16, &ok);
	}
	if ((off & ~7ull) == WEFT_REG_CNT_CMD && !(off & 4)) {
		/* A raw counter command: whatever block it names runs. */
		uint64_t a = sz == 4 ? (uint32_t)val : val;
		struct weft_cnt_cmd m;

		if (!(a & 63) && a < FZ_MEM && FZ_MEM - a >= WEFT_CNT_CMD_BLOCK_SIZE) {
			memcpy(&m, weft_sim_mem(f->s, 0) + a, sizeof(m));
			cnt_pre(f, 0, a, &m);
			weft_core_reg_write(c, off, val, sz);
			cnt_post(f, 0, &m, (unsigned int)weft_core_reg_read(c, WEFT_REG_CNT_CMD_STATUS,
									  8), false);
			return;
		}
	}
	weft_core_reg_write(c, off, val, sz);
}

static void act_sram(struct fz *f, struct fz_src *src)
{
	struct weft_core *c = weft_sim_core(f->s, 0);
	uint64_t off;

	switch (below(src, 3)) {
	case 0:
		off = WEFT_SRAM_LMT_OFF(below(src, 5)) + 8 * below(src, 32);
		break;
	case 1:
		off = WEFT_SRAM_RCXT_OFF(below(src, 70)) + 8 * below(src, 16);
		break;
	default:
		off = below(src, weft_core_sram_bar_size(c) + 256);
		break;
	}
	f->st.sram_writes++;
	weft_core_sram_write(c, off, interesting(f, src), pick_size(src));
}

static void act_db(struct fz *f, struct fz_src *src)
{
	struct weft_core *c = weft_sim_core(f->s, 0);
	uint64_t w = below(src, 6), off = below(src, 3) ? 8 * below(src, 10) : below(src, 4096);
	uint64_t val = below(src, 2) ? below(src, 70) : interesting(f, src);

	f->st.db_writes++;
	weft_core_db_write(c, w * WEFT_DB_PAGE_SIZE + off, val, pick_size(src));
}

/* Hands a frame to node's core: copied, or (one in two) in a buffer the
 * core keeps, as from the switch's ring, which then changes under it as
 * a hostile switch would change it after the header was taken.  Which
 * and how come from the frame's number, not the input, so the actions
 * an input makes are the same either way. */
static void deliver(struct fz *f, unsigned int node, uint8_t *pkt, size_t len)
{
	struct weft_core *c = weft_sim_core(f->s, node);
	struct weft_fabric *fab = weft_sim_fabric(f->s);
	uint64_t x = (++f->st.packets + 1) * 0x9e3779b97f4a7c15ull;
	uint8_t *fr = NULL;
	unsigned int n;
	int i, rc = -EAGAIN;

	x ^= x >> 29;
	if (len >= WEFT_WIRE_HDR_SIZE && len <= WEFT_WIRE_MAX_FRAME && (x & 1))
		fr = weft_fabric_frame_alloc(fab);
	if (!fr) {
		for (i = 0; i < 4 && weft_core_receive(c, pkt, len) != 0; i++)
			weft_sim_progress(f->s);
		return;
	}
	memcpy(fr, pkt, len);
	for (i = 0; i < 4 && (rc = weft_core_receive_shared(c, fr, len)) == -EAGAIN; i++)
		weft_sim_progress(f->s);
	f->st.rx_shared++;
	if (rc != 1) {
		weft_fabric_frame_release(fab, fr);
		return;
	}
	/* Kept: the sim's rx_release gives it back to the fabric. */
	for (n = (unsigned int)(x >> 1) % 4; n > 0; n--) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		fr[x % len] = (uint8_t)(x >> 56);
		f->st.rx_shared_changed++;
	}
}

static void act_packet(struct fz *f, struct fz_src *src)
{
	uint8_t pkt[WEFT_WIRE_MAX_FRAME + 64];
	struct weft_wire_hdr h;
	struct fz_node *n = &f->n[0];
	size_t plen = below(src, 4) ? below(src, WEFT_MAX_PAYLOAD + 1) : below(src, 64);
	size_t len, i;

	memset(&h, 0, sizeof(h));
	h.version = below(src, 8) ? WEFT_WIRE_VERSION : (uint8_t)below(src, 256);
	h.type = below(src, 8) ? (uint8_t)(1 + below(src, 6)) : (uint8_t)below(src, 256);
	h.notify = (uint8_t)below(src, 5);
	h.flags = (uint8_t)below(src, 256);
	h.dst_node = below(src, 8) ? 0 : (uint16_t)src_u64(src);
	h.src_node = (uint16_t)below(src, 3);
	h.dst_window = (uint16_t)below(src, 6);
	h.src_window = (uint16_t)below(src, 6);
	h.key = below(src, 6) ? FZ_JOB : (uint32_t)src_u64(src);
	h.length = (uint32_t)plen;
	h.rcxt = below(src, 4) ? n->rcxt[below(src, 4)] : (uint32_t)interesting(f, src);
	h.src_rcxt = (uint32_t)below(src, 80);
	h.rcxt_key = below(src, 4) ? n->key[0] : (uint16_t)src_u64(src);
	h.tid = (uint32_t)below(src, 40);
	h.pvo = below(src, 3) ? n->pvo + below(src, FZ_BUF + 8192) : interesting(f, src);
	h.aux_pvo = below(src, 2) ? f->n[1].pvo + below(src, FZ_BUF) : interesting(f, src);
	h.total_length = below(src, 3) ? below(src, 20000) : interesting(f, src);
	h.offset = below(src, 2) ? WEFT_MAX_PAYLOAD * below(src, 10) : interesting(f, src);
	h.ctl_node = (uint16_t)below(src, 3);
	h.ctl_rcxt = (uint32_t)below(src, 80);
	h.status = (uint16_t)below(src, 30);
	memcpy(pkt, &h, sizeof(h));
	for (i = 0; i < plen; i++)
		pkt[sizeof(h) + i] = (uint8_t)src_u64(src);
	len = sizeof(h) + plen;
	if (!below(src, 8))
		len = below(src, sizeof(pkt) + 1);
	deliver(f, 0, pkt, len);
}

static void act_mutated(struct fz *f, struct fz_src *src)
{
	uint8_t pkt[WEFT_WIRE_MAX_FRAME + 64];
	struct weft_wire_hdr h;
	unsigned int k, nmut;
	size_t len;

	if (!f->npool)
		return;
	k = (unsigned int)below(src, f->npool);
	len = f->pool_len[k];
	memcpy(pkt, f->pool[k], len);
	nmut = 1 + (unsigned int)below(src, 4);
	while (nmut--) {
		size_t at = below(src, len);

		switch (below(src, 5)) {
		case 0:
			pkt[at] ^= (uint8_t)(1u << below(src, 8));
			break;
		case 1:
			pkt[below(src, WEFT_WIRE_HDR_SIZE < len ? WEFT_WIRE_HDR_SIZE : len)] =
				(uint8_t)src_u64(src);
			break;
		case 2: {
			uint64_t v = interesting(f, src);
			size_t o = 8 * below(src, WEFT_WIRE_HDR_SIZE / 8);

			memcpy(pkt + o, &v, 8);
			break;
		}
		case 3:
			len = below(src, sizeof(pkt) + 1);
			break;
		default:
			/* keep the frame consistent but move its target */
			memcpy(&h, pkt, sizeof(h));
			h.offset += WEFT_MAX_PAYLOAD * below(src, 4);
			h.pvo += below(src, 2 * FZ_BUF);
			h.tid += (uint32_t)below(src, 3);
			memcpy(pkt, &h, sizeof(h));
			break;
		}
	}
	memcpy(&h, pkt, sizeof(h));
	f->st.mutated++;
	deliver(f, h.dst_node < FZ_NODES ? h.dst_node : 0, pkt, len);
}

/* A packet that is valid for node 0's current set-up (an RDMA write
 * chunk or read request on one of its rCxts), sometimes with one field
 * changed: reaches translation and placement. */
static void act_current(struct fz *f, struct fz_src *src)
{
	uint8_t pkt[WEFT_WIRE_MAX_FRAME];
	struct fz_node *n = &f->n[0];
	struct weft_wire_hdr h;
	unsigned int i = (unsigned int)below(src, 4);
	uint64_t total = 1 + below(src, 8000), chunk = below(src, (total + 1919) / 1920);
	uint64_t v;
	size_t k;

	memset(&h, 0, sizeof(h));
	h.version = WEFT_WIRE_VERSION;
	h.type = below(src, 4) ? WEFT_PKT_RDMAW : WEFT_PKT_RDMAR_REQ;
	h.notify = (uint8_t)below(src, 4);
	h.dst_node = 0;
	h.src_node = 1;
	h.dst_window = (uint16_t)(i % FZ_WINDOWS);
	h.src_window = (uint16_t)(i % FZ_WINDOWS);
	h.key = FZ_JOB;
	h.rcxt = n->rcxt[i];
	h.rcxt_key = n->key[i];
	h.src_rcxt = f->n[1].rcxt[i];
	h.src_rcxt_key = f->n[1].key[i];
	h.tid = (uint32_t)(f->st.packets / 4 + 1);
	h.total_length = total;
	if (h.type == WEFT_PKT_RDMAW) {
		h.offset = chunk * WEFT_MAX_PAYLOAD;
		h.length = (uint32_t)(total - h.offset < WEFT_MAX_PAYLOAD ? total - h.offset
								       : WEFT_MAX_PAYLOAD);
		h.pvo = n->pvo + below(src, FZ_BUF - 8000) + h.offset;
	} else {
		h.pvo = n->pvo + below(src, FZ_BUF - 8000);
		h.aux_pvo = f->n[1].pvo + below(src, FZ_BUF - 8000);
	}
	if (below(src, 2)) {
		v = interesting(f, src);
		k = 8 * below(src, WEFT_WIRE_HDR_SIZE / 8);
		memcpy((uint8_t *)&h + k, &v, 8);
	}
	memcpy(pkt, &h, sizeof(h));
	for (k = 0; k < h.length && k < WEFT_MAX_PAYLOAD; k++)
		pkt[sizeof(h) + k] = (uint8_t)k;
	deliver(f, 0, pkt, sizeof(h) + (h.length <= WEFT_MAX_PAYLOAD ? h.length : 0));
}

static void act_read(struct fz *f, struct fz_src *src)
{
	struct weft_core *c = weft_sim_core(f->s, 0);
	unsigned int sz = pick_size(src);

	switch (below(src, 3)) {
	case 0:
		weft_core_reg_read(c, below(src, WEFT_REGS_SIZE + 64), sz);
		break;
	case 1:
		weft_core_sram_read(c, below(src, weft_core_sram_bar_size(c) + 64), sz);
		break;
	default:
		weft_core_db_read(c, below(src, weft_core_db_bar_size(c) + 64), sz);
		break;
	}
}

static void act_user(struct fz *f, struct fz_src *src)
{
	struct fz_node *n = &f->n[below(src, FZ_NODES)];
	struct weft_sim_window *w = &n->win[below(src, FZ_WINDOWS)];
	struct weft_recv_hdr h;
	uint8_t buf[64];

	/* A user consuming its receive FIFO (header-last aware). */
	while (weft_sim_poll_recv(w, &h, buf, sizeof(buf)) == 1)
		;
}


/* ---- verbs actions ------------------------------------------------------------------ */

static uint32_t fz_stag(struct fz_src *src)
{
	switch (below(src, 5)) {
	case 0: return FZ_VMR;
	case 1: return WEFT_STAG(FZ_VFAST, below(src, 4));
	case 2: return WEFT_STAG(FZ_VMW, below(src, 4));
	case 3: return WEFT_STAG(below(src, FZ_VTPT + 2), below(src, 256));
	default: return (uint32_t)src_u64(src);
	}
}

static uint64_t fz_va(struct fz *f, struct fz_src *src, unsigned int node)
{
	return below(src, 4) ? f->n[node].vbuf + below(src, FZ_VBUF + 4096) : interesting(f, src);
}

static uint64_t fz_len(struct fz *f, struct fz_src *src)
{
	return below(src, 4) ? below(src, 9000) : interesting(f, src);
}

/* A WQE on node 0's RC or UD send queue, or a receive WQE. */
static void act_vwqe(struct fz *f, struct fz_src *src)
{
	struct fz_node *n = &f->n[0];
	struct wsv_qp *q = below(src, 4) ? &n->rc : &n->ud;
	struct weft_vsge sg[4];
	struct weft_vwqe w;
	unsigned int i, ns = (unsigned int)below(src, 5);

	for (i = 0; i < 4; i++) {
		sg[i].addr = fz_va(f, src, 0);
		sg[i].length = (uint32_t)fz_len(f, src);
		sg[i].lkey = fz_stag(src);
	}
	f->st.verbs_wqes++;
	if (below(src, 3) == 0) {
		struct weft_vsge rs[4];

		memcpy(rs, sg, sizeof(rs));
		if (below(src, 2) == 0)
			wsv_post_srq_recv(f->s, &n->srq, src_u64(src), rs, ns);
		else
			wsv_post_recv(f->s, q, src_u64(src), rs, ns);
		return;
	}
	memset(&w, 0, sizeof(w));
	if (below(src, 6) == 0) {
		uint8_t *p = (uint8_t *)&w;

		for (i = 0; i < sizeof(w); i++)
			p[i] = (uint8_t)src_u64(src);
	}
	w.wr_id = f->st.verbs_wqes;
	if (below(src, 6))
		w.opcode = (uint8_t)below(src, WEFT_VWR__COUNT + 1);
	w.flags = (uint8_t)below(src, 16);
	if (below(src, 4) == 0)
		w.cnt_slot = (uint8_t)below(src, WEFT_CNT_QP_SLOTS + 1);
	w.imm_inv = below(src, 2) ? fz_stag(src) : (uint32_t)src_u64(src);
	switch (w.opcode) {
	case WEFT_VWR_REG_MR:
		w.u.reg.stag = below(src, 4) ? WEFT_STAG(FZ_VFAST, below(src, 256)) : fz_stag(src);
		w.u.reg.va = fz_va(f, src, 0);
		w.u.reg.length = below(src, FZ_VREG_MAX + 1);
		w.u.reg.att_addr = below(src, 3) ? n->fatt : interesting(f, src);
		w.u.reg.access = (uint8_t)below(src, 128);
		w.u.reg.page_shift = (uint8_t)(below(src, 4) ? 12 : below(src, 40));
		w.u.reg.att_level = (uint8_t)below(src, 5);
		break;
	case WEFT_VWR_BIND_MW:
		w.u.bind.va = fz_va(f, src, 0);
		w.u.bind.length = below(src, FZ_VREG_MAX + 1);
		w.u.bind.mw_stag = below(src, 4) ? WEFT_STAG(FZ_VMW, below(src, 256)) : fz_stag(src);
		w.u.bind.mr_stag = fz_stag(src);
		w.u.bind.access = (uint8_t)below(src, 64);
		w.u.bind.one_touch = (uint8_t)below(src, 2);
		break;
	case WEFT_VWR_WAIT_CNT:         /* mostly a bound slot and a near threshold */
		if (below(src, 4))
			w.cnt_slot = (uint8_t)(1 + below(src, WEFT_CNT_QP_SLOTS - 1));
		w.u.wait.threshold = below(src, 4) ? below(src, 8) : interesting(f, src);
		break;
	default:
		if (q == &n->ud) {
			w.u.ud.dest_node = (uint16_t)below(src, 3);
			w.u.ud.dest_qpn = (uint32_t)below(src, FZ_VQPS + 1);
			w.u.ud.qkey = below(src, 2) ? WEFT_VERBS_GSI_QKEY : (uint32_t)src_u64(src);
			w.u.ud.sgid_index = (uint8_t)(below(src, 8) ? below(src, 2) : src_u64(src));
			w.u.ud.hop_limit = (uint8_t)src_u64(src);
			w.u.ud.traffic_class = (uint8_t)src_u64(src);
			w.u.ud.flow_label = (uint32_t)src_u64(src);
			if (below(src, 8))
				fz_gid(w.u.ud.dgid, w.u.ud.dest_node, (unsigned int)below(src, 2));
			else
				for (i = 0; i < 16; i++)
					w.u.ud.dgid[i] = (uint8_t)src_u64(src);
		} else {
			w.u.rdma.remote_addr = fz_va(f, src, 1);
			w.u.rdma.rkey = fz_stag(src);
			w.u.rdma.compare_add = interesting(f, src);
			w.u.rdma.swap = src_u64(src);
		}
		break;
	}
	if (below(src, 6) == 0) {       /* inline data (16.6), of any length */
		uint8_t inl[WEFT_VERBS_MAX_INLINE];
		uint32_t len = below(src, 4) ? (uint32_t)below(src, 200) : (uint32_t)src_u64(src);

		for (i = 0; i < sizeof(inl); i++)
			inl[i] = (uint8_t)i;
		w.num_sge = below(src, 8) ? 0 : (uint8_t)ns;
		wsv_post_inline(f->s, q, &w, inl, len, below(src, 8) != 0);
		return;
	}
	wsv_post_send(f->s, q, &w, sg, ns, below(src, 8) != 0);
}

/* A random command block, its response and dump target recorded for the
 * oracle (the driver named them). */
static void act_vcmd(struct fz *f, struct fz_src *src)
{
	static const uint8_t ops[] = {
		WEFT_VCMD_CREATE_PD, WEFT_VCMD_DESTROY_PD, WEFT_VCMD_DESTROY_CQ,
		WEFT_VCMD_MODIFY_QP, WEFT_VCMD_MODIFY_QP, WEFT_VCMD_DESTROY_QP,
		WEFT_VCMD_ALLOC_STAG, WEFT_VCMD_REG_MR, WEFT_VCMD_REG_MR, WEFT_VCMD_DEREG_STAG,
		WEFT_VCMD_QUERY_QP, WEFT_VCMD_QUERY_CQ, WEFT_VCMD_QUERY_TPT, WEFT_VCMD_QUERY_PD, 0, 99,
		WEFT_VCMD_SET_GID, WEFT_VCMD_CLEAR_GID, WEFT_VCMD_QUERY_GID,
		WEFT_VCMD_CREATE_SRQ, WEFT_VCMD_MODIFY_SRQ, WEFT_VCMD_MODIFY_SRQ,
		WEFT_VCMD_QUERY_SRQ, WEFT_VCMD_DESTROY_SRQ, WEFT_VCMD_CREATE_QP,
		WEFT_VCMD_RESIZE_CQ, WEFT_VCMD_RESIZE_CQ, WEFT_VCMD_QUERY_HQ, WEFT_VCMD_QUERY_HQ,
		WEFT_VCMD_MODIFY_CQ, WEFT_VCMD_MODIFY_CQ,
	};
	struct fz_node *n = &f->n[0];
	struct weft_vcmd k;
	uint8_t *blk = weft_sim_ptr(f->s, 0, n->cmdblk, WEFT_VCMD_BLOCK_SIZE);
	unsigned int i;

	memset(&k, 0, sizeof(k));
	for (i = 0; i < sizeof(k.u.raw); i++)
		k.u.raw[i] = below(src, 3) ? 0 : (uint8_t)src_u64(src);
	k.op = ops[below(src, sizeof(ops))];
	k.handle = below(src, 4) ? (uint32_t)below(src, 20) : (uint32_t)interesting(f, src);
	switch (k.op) {
	case WEFT_VCMD_ALLOC_STAG:
	case WEFT_VCMD_REG_MR:
	case WEFT_VCMD_DEREG_STAG:
		if (below(src, 2))
			k.handle = fz_stag(src);
		k.u.mr.va = fz_va(f, src, 0);
		k.u.mr.length = below(src, FZ_VREG_MAX + 1);
		k.u.mr.att_addr = below(src, 2) ? (below(src, 2) ? n->fatt : n->vatt) :
				  interesting(f, src);
		k.u.mr.pd = (uint32_t)below(src, 5);
		k.u.mr.type = (uint8_t)below(src, 5);
		k.u.mr.access = (uint8_t)below(src, 128);
		k.u.mr.page_shift = (uint8_t)(below(src, 4) ? 12 : below(src, 40));
		k.u.mr.att_level = (uint8_t)below(src, 5);
		k.u.mr.flags = (uint8_t)below(src, 16);
		break;
	case WEFT_VCMD_MODIFY_QP:
		k.handle = (uint32_t)below(src, 4);
		k.u.mod.mask = (uint32_t)src_u64(src) & 0x1fffff;
		k.u.mod.state = (uint8_t)below(src, 8);
		k.u.mod.dest_node = (uint16_t)below(src, 3);
		k.u.mod.dest_qpn = (uint32_t)below(src, FZ_VQPS);
		k.u.mod.timeout = (uint8_t)below(src, 20);
		break;
	case WEFT_VCMD_CREATE_SRQ:
	case WEFT_VCMD_MODIFY_SRQ:
	case WEFT_VCMD_DESTROY_SRQ:
		k.handle = below(src, 4) ? (uint32_t)below(src, FZ_VQPS + 1) : k.handle;
		if (below(src, 2)) {
			k.u.srq.ring_addr = below(src, 2) ? n->srq.ring : interesting(f, src);
			k.u.srq.ci_addr = below(src, 2) ? n->srq.ci_addr : interesting(f, src);
			k.u.srq.pd = (uint32_t)below(src, 3);
			k.u.srq.uar = (uint32_t)below(src, 3);
			k.u.srq.log2 = (uint8_t)below(src, 18);
			k.u.srq.stride_log2 = (uint8_t)below(src, 11);
			k.u.srq.flags = (uint8_t)below(src, 3);
		}
		k.u.srq.limit = below(src, 2) ? (uint32_t)below(src, 20) : (uint32_t)src_u64(src);
		break;
	case WEFT_VCMD_CREATE_QP:
		/* A QP on a fuzzed SRQ, with a fuzzed PD and flags. */
		k.handle = (uint32_t)(5 + below(src, FZ_VQPS - 5));
		k.u.qp.sq_addr = n->uds.sq;
		k.u.qp.rq_addr = below(src, 4) ? 0 : interesting(f, src);
		k.u.qp.type = (uint32_t)below(src, 4);
		k.u.qp.pd = (uint32_t)below(src, 3);
		k.u.qp.send_cq = 1;
		k.u.qp.recv_cq = (uint32_t)below(src, 3);
		k.u.qp.sq_log2 = 4;
		k.u.qp.sq_stride_log2 = 8;
		k.u.qp.rq_stride_log2 = (uint8_t)below(src, 11);
		k.u.qp.flags = (uint32_t)below(src, 8);
		k.u.qp.srq = below(src, 4) ? (uint32_t)below(src, FZ_VQPS + 1) :
			     (uint32_t)src_u64(src);
		break;
	case WEFT_VCMD_RESIZE_CQ:
		/* CQ 1 in place (its own ring, up to its 4 KiB), or anything. */
		if (below(src, 4)) {
			k.handle = below(src, 4) ? 1 : (uint32_t)below(src, 3);
			k.u.cq.ring_addr = below(src, 4) ? n->cq_ring : interesting(f, src);
			k.u.cq.ci_addr = below(src, 4) ? n->cq_ci : interesting(f, src);
			k.u.cq.log2_entries = below(src, 4) ? (uint32_t)(1 + below(src, 7)) :
					      (uint32_t)below(src, 20);
		}
		break;
	case WEFT_VCMD_MODIFY_CQ:
		/* Mostly CQ 1 with small values (events held, periods that end
		 * while traffic runs), or anything. */
		if (below(src, 4)) {
			k.handle = below(src, 4) ? 1 : (uint32_t)below(src, 3);
			k.u.cq_mod.count = below(src, 4) ? (uint32_t)below(src, 9) :
					   (uint32_t)src_u64(src);
			k.u.cq_mod.period_us = below(src, 4) ? (uint32_t)below(src, 50) :
					       (uint32_t)src_u64(src);
			k.u.cq_mod.uar = below(src, 8) ? 0 : (uint32_t)below(src, 3);
		}
		break;
	case WEFT_VCMD_SET_GID:
	case WEFT_VCMD_CLEAR_GID:
		if (below(src, 2)) {
			k.handle = (uint32_t)below(src, 3);
			fz_gid(k.u.gid.gid, 0, (unsigned int)below(src, 2));
			k.u.gid.type = (uint8_t)below(src, 4);
			k.u.gid.port = (uint8_t)below(src, 3);
		}
		break;
	case WEFT_VCMD_QUERY_QP:
	case WEFT_VCMD_QUERY_CQ:
	case WEFT_VCMD_QUERY_TPT:
	case WEFT_VCMD_QUERY_GID:
	case WEFT_VCMD_QUERY_SRQ:
		k.u.query.addr = below(src, 2) ? n->vbuf + below(src, FZ_VBUF) : interesting(f, src);
		break;
	case WEFT_VCMD_QUERY_HQ:
		/* Mostly the queue TM SRQ 5 borrowed (the highest), a buffer in
		 * vbuf; or any queue, address, length, flags and reserved bits. */
		k.handle = below(src, 2) ? WEFT_MATCH_NR_QUEUES - 1 - (uint32_t)below(src, 2) :
			   below(src, 2) ? (uint32_t)below(src, WEFT_MATCH_NR_QUEUES + 2) : k.handle;
		k.u.hq.addr = below(src, 2) ? n->vbuf + 8 * below(src, FZ_VBUF / 8) :
			      interesting(f, src);
		k.u.hq.len = below(src, 2) ? (uint32_t)below(src, FZ_VBUF + 64) :
			     (uint32_t)src_u64(src);
		k.u.hq.flags = below(src, 4) ? (uint32_t)below(src, 2) : (uint32_t)src_u64(src);
		if (below(src, 2))
			memset(k.u.hq.reserved, 0, sizeof(k.u.hq.reserved));
		break;
	default:
		break;
	}
	memcpy(blk, &k, sizeof(k));
	n->cmd_at = n->cmdblk;
	n->cmd_set = true;
	n->dump_at = k.u.query.addr;
	n->dump_len = k.op == WEFT_VCMD_QUERY_HQ ? k.u.hq.len : 128;
	f->st.verbs_cmds++;
	weft_core_reg_write(weft_sim_core(f->s, 0), WEFT_REG_VERBS_CMD, n->cmdblk, 8);
	if (k.op == WEFT_VCMD_QUERY_HQ) {
		struct weft_vcmd_resp r;

		memcpy(&r, blk + sizeof(k), sizeof(r));
		if (r.status != WEFT_CMD_OK)
			f->st.hq_refused++;
		else if (r.out[2] & WEFT_HQS_TM)
			f->st.hq_tags += r.out[0];
	}
}

/* UAR doorbells, CQ consumer index and arming, forged verbs packets. */
static void act_vmisc(struct fz *f, struct fz_src *src)
{
	struct fz_node *n = &f->n[0];
	struct weft_core *c = weft_sim_core(f->s, 0);

	switch (below(src, 4)) {
	case 0: {
		uint64_t off = weft_core_reg_read(c, WEFT_REG_VERBS_UAR_OFF, 8) +
			       below(src, 6) * WEFT_DB_PAGE_SIZE + 8 * below(src, 4);
		uint64_t val = below(src, 2) ? WEFT_UAR_ARM(below(src, FZ_VQPS + 2), below(src, 4),
							     below(src, 300)) : interesting(f, src);

		f->st.verbs_dbs++;
		weft_core_db_write(c, off, val, pick_size(src));
		break;
	}
	case 1: {
		uint32_t ci = below(src, 2) ? (uint32_t)below(src, 300) : (uint32_t)src_u64(src);

		memcpy(weft_sim_ptr(f->s, 0, n->cq_ci, 4), &ci, 4);
		break;
	}
	default: {
		uint8_t pkt[WEFT_WIRE_MAX_FRAME];
		uint8_t data[WEFT_VERBS_MTU + sizeof(struct weft_vaddr)];
		struct weft_vhdr h;
		uint32_t dlen = (uint32_t)below(src, WEFT_VERBS_MTU + 1), i;
		size_t len;

		memset(&h, 0, sizeof(h));
		h.opcode = (uint8_t)below(src, 12);
		h.flags = (uint8_t)below(src, 64);
		h.dst_qpn = (uint32_t)below(src, FZ_VQPS + 1);
		h.src_qpn = below(src, 4) ? 2 : (uint32_t)below(src, FZ_VQPS);
		h.psn = (uint32_t)(below(src, 2) ? below(src, 200) : src_u64(src));
		h.msn = (uint32_t)below(src, 40);
		h.imm_inv = fz_stag(src);
		h.va = below(src, 4) ? n->vbuf + below(src, FZ_VBUF + 2048) : interesting(f, src);
		h.rkey = fz_stag(src);
		h.dma_len = (uint32_t)fz_len(f, src);
		h.swap_add = src_u64(src);
		h.compare = interesting(f, src);
		h.syndrome = (uint32_t)below(src, 70);
		h.qkey = below(src, 2) ? WEFT_VERBS_GSI_QKEY : (uint32_t)src_u64(src);
		for (i = 0; i < dlen; i++)
			data[i] = (uint8_t)i;
		if (h.opcode == WEFT_VOP_UD_SEND && below(src, 4)) {
			/* A UD send with a well-formed address block (16.13). */
			struct weft_vaddr a = { .hop_limit = 64 };
			unsigned int t = (unsigned int)below(src, 2);

			fz_gid(a.sgid, 1, t);
			fz_gid(a.dgid, below(src, 8) ? 0 : 2, below(src, 8) ? t : 1 - t);
			if (below(src, 2)) {    /* to the GSI or the SRQ's QP, with its Q_Key */
				h.dst_qpn = below(src, 2) ? WEFT_VERBS_GSI_QPN : n->uds.qpn;
				h.qkey = WEFT_VERBS_GSI_QKEY;
			}
			memmove(data + sizeof(a), data, dlen);
			memcpy(data, &a, sizeof(a));
			dlen += (uint32_t)sizeof(a);
		}
		len = wsv_forge(pkt, 1, 0, &h, data, dlen);
		deliver(f, 0, pkt, len);
		break;
	}
	}
}

/* Node 0 lists tag (handle h) over the start of its buffer, active
 * (software caught up), so the next message of that tag matches. */
static void tm_add_active(struct fz *f, struct fz_src *src, uint64_t tag)
{
	struct fz_node *n = &f->n[0];
	struct weft_core *c = weft_sim_core(f->s, 0);
	uint64_t off = weft_core_reg_read(c, WEFT_REG_VERBS_UAR_OFF, 8);
	uint64_t a = n->tmops + (uint64_t)(n->tm_prod & 7u) * sizeof(struct weft_vtmop);
	struct weft_vtmop op;
	struct weft_vsrqc q;

	if (!weft_core_verbs_srq(c, 5, &q))
		return;
	memset(&op, 0, sizeof(op));
	op.wr_id = src_u64(src);
	op.opcode = WEFT_VTM_ADD;
	op.flags = WEFT_VTMF_SYNC;
	op.num_sge = 1;
	op.unexpected_cnt = q.tm_unexpected;
	op.handle = (uint32_t)below(src, 8);
	op.tag = tag;
	op.mask = ~0ull;
	op.sge.addr = n->vbuf + below(src, FZ_VBUF / 2);
	op.sge.length = (uint32_t)below(src, 3 * WEFT_VERBS_MTU);
	op.sge.lkey = FZ_VMR;
	memcpy(weft_sim_ptr(f->s, 0, a, sizeof(op)), &op, sizeof(op));
	n->tm_prod++;
	weft_core_db_write(c, off + WEFT_UAR_SRQ_TM_DB, WEFT_UAR_DB(5, n->tm_prod), 8);
	f->st.verbs_dbs++;
}

/* Tag matching on node 0 (16.15): a tag operation (mostly near-valid),
 * a plain WQE for its SRQ, or a SEND from node 1's QP 6 starting with a
 * TMH (random opcode, tags from a small set, sometimes an RVH).  A forged
 * RVH names node 1's buffer or any address, its region, a window bound to
 * another QP or any key, and a length from 0 to 2^32 - 1, so node 0's
 * device rendezvous READs, is refused or fails the R_Key check. */
static void act_tm(struct fz *f, struct fz_src *src)
{
	struct fz_node *n = &f->n[0], *m = &f->n[1];
	struct weft_core *c = weft_sim_core(f->s, 0);
	unsigned int i;

	f->st.tm_actions++;
	switch (below(src, 3)) {
	case 0: {
		struct weft_vtmop op;
		uint64_t a = n->tmops + (uint64_t)(n->tm_prod & 7u) * sizeof(op);
		uint64_t off = weft_core_reg_read(c, WEFT_REG_VERBS_UAR_OFF, 8);

		memset(&op, 0, sizeof(op));
		if (below(src, 8) == 0) {
			uint8_t *p = (uint8_t *)&op;

			for (i = 0; i < sizeof(op); i++)
				p[i] = (uint8_t)src_u64(src);
		} else {
			op.opcode = (uint8_t)(below(src, 8) == 0 ? below(src, 5) : below(src, 3) ?
					      WEFT_VTM_ADD : below(src, 2) ? WEFT_VTM_DEL :
					      WEFT_VTM_SYNC);
			op.flags = (uint8_t)(below(src, 8) ? below(src, 4) : below(src, 256));
			op.num_sge = (uint8_t)(below(src, 8) ? 1 : below(src, 3));
			op.handle = (uint32_t)below(src, 10);
			struct weft_vsrqc q;

			/* Mostly the count the adapter has (software caught up). */
			op.unexpected_cnt = (uint32_t)(below(src, 4) ? below(src, 6) : src_u64(src));
			if (below(src, 2) && weft_core_verbs_srq(c, 5, &q))
				op.unexpected_cnt = q.tm_unexpected;
			op.tag = below(src, 4);
			op.mask = below(src, 2) ? ~0ull : below(src, 4);
			op.sge.addr = below(src, 4) ? n->vbuf + below(src, FZ_VBUF / 2) :
				      fz_va(f, src, 0);
			op.sge.length = (uint32_t)(below(src, 4) ? below(src, 4096) : fz_len(f, src));
			op.sge.lkey = below(src, 4) ? FZ_VMR : fz_stag(src);
		}
		op.wr_id = src_u64(src);
		memcpy(weft_sim_ptr(f->s, 0, a, sizeof(op)), &op, sizeof(op));
		f->st.verbs_dbs++;
		if (below(src, 8) == 0) {       /* a producer index anywhere */
			weft_core_db_write(c, off + WEFT_UAR_SRQ_TM_DB,
					   WEFT_UAR_DB(5, (uint32_t)src_u64(src)), 8);
			break;
		}
		n->tm_prod++;
		weft_core_db_write(c, off + WEFT_UAR_SRQ_TM_DB, WEFT_UAR_DB(5, n->tm_prod), 8);
		break;
	}
	case 1: {
		bool ok = below(src, 4) != 0;
		struct weft_vsge sg = {
			.addr = ok ? n->vbuf + below(src, FZ_VBUF / 2) : fz_va(f, src, 0),
			.length = (uint32_t)(ok ? 4096 : fz_len(f, src)),
			.lkey = ok ? FZ_VMR : fz_stag(src),
		};

		wsv_post_srq_recv(f->s, &n->tms, src_u64(src), &sg, (unsigned int)below(src, 2));
		break;
	}
	default: {
		uint8_t *p = weft_sim_ptr(f->s, 1, m->vbuf, 64);
		struct weft_vsge sg = {
			.addr = m->vbuf, .length = (uint32_t)below(src, 3000), .lkey = FZ_VMR,
		};
		struct weft_vwqe w;
		uint64_t va;
		uint32_t rkey, len;

		for (i = 0; i < 64; i++)
			p[i] = (uint8_t)(below(src, 4) ? 0 : src_u64(src));
		p[0] = (uint8_t)(below(src, 32) ? below(src, 4) : src_u64(src));
		if (below(src, 8))                      /* tag 0..3, big-endian */
			memset(p + 8, 0, 7);
		p[15] = (uint8_t)below(src, 4);
		switch (below(src, 3)) {
		case 0:                                 /* RVH of random bytes */
			for (i = 16; i < 32; i++)
				p[i] = (uint8_t)src_u64(src);
			break;
		case 1:                                 /* forged RVH: va, rkey, len */
			va = below(src, 4) ? m->vbuf + below(src, FZ_VBUF) : fz_va(f, src, 1);
			rkey = below(src, 4) ? FZ_VMR : below(src, 2) ? fz_stag(src) :
			       (uint32_t)src_u64(src);
			len = (uint32_t)(below(src, 4) ? below(src, 3 * WEFT_VERBS_MTU) :
					 below(src, 2) ? 0xffffffffu : src_u64(src));
			for (i = 0; i < 8; i++)
				p[16 + i] = (uint8_t)(va >> (56 - 8 * i));
			for (i = 0; i < 4; i++) {
				p[24 + i] = (uint8_t)(rkey >> (24 - 8 * i));
				p[28 + i] = (uint8_t)(len >> (24 - 8 * i));
			}
			if (below(src, 4))              /* within max_rndv_hdr_size */
				sg.length = 32 + (uint32_t)below(src, WEFT_VERBS_TM_RNDV_HDR - 31);
			if (below(src, 2)) {            /* an RNDV that a listed tag takes */
				uint64_t tag = 0;

				for (i = 8; i < 16; i++)
					tag = tag << 8 | p[i];
				p[0] = WEFT_TMH_RNDV;
				tm_add_active(f, src, tag);
			}
			break;
		default:
			break;
		}
		memset(&w, 0, sizeof(w));
		w.wr_id = src_u64(src);
		w.opcode = WEFT_VWR_SEND;
		w.flags = WEFT_VWQE_SIGNALED;
		wsv_post_send(f->s, &m->tmq, &w, &sg, 1, true);
		break;
	}
	}
}

/* A random counter command on node 0, mostly near-valid. */
static void act_ccmd(struct fz *f, struct fz_src *src)
{
	static const uint8_t ops[] = {
		WEFT_CNT_CMD_CREATE, WEFT_CNT_CMD_DESTROY, WEFT_CNT_CMD_POST, WEFT_CNT_CMD_POST,
		WEFT_CNT_CMD_POST, WEFT_CNT_CMD_EXPOSE, WEFT_CNT_CMD_UNEXPOSE, WEFT_CNT_CMD_QUERY,
		WEFT_CNT_CMD_QUERY_EXP, WEFT_CNT_CMD_BIND_QP, WEFT_CNT_CMD_BIND_QP,
		WEFT_CNT_CMD_UNBIND_QP, WEFT_CNT_CMD_EV_SET, WEFT_CNT_CMD_EV_SET, 0, 99,
	};
	struct fz_node *n = &f->n[0];
	struct weft_cnt_obj_dump d;
	struct weft_cnt_cmd m;
	unsigned int i;

	memset(&m, 0, sizeof(m));
	for (i = 0; i < sizeof(m.u.raw); i++)
		m.u.raw[i] = below(src, 3) ? 0 : (uint8_t)src_u64(src);
	m.op = ops[below(src, sizeof(ops))];
	m.handle = below(src, 4) ? (uint32_t)below(src, 4) : (uint32_t)interesting(f, src);
	weft_core_cnt_obj(weft_sim_core(f->s, 0), m.handle < WEFT_CNT_NR_OBJ ? m.handle : 0, &d);
	switch (m.op) {
	case WEFT_CNT_CMD_CREATE:
		m.u.create.block_addr = below(src, 4) ? n->cblk + 16 * below(src, 256) :
				       interesting(f, src);
		m.u.create.pages_addr = below(src, 4) ? n->clist + 8 * below(src, 16) :
				       interesting(f, src);
		m.u.create.length = below(src, 4) ? 1 + below(src, FZ_CBUF / 2) : interesting(f, src);
		m.u.create.first_off = below(src, 2) ? 0 : (uint32_t)below(src, 5000);
		m.u.create.mode = (uint8_t)below(src, 3);
		m.u.create.flags = (uint8_t)below(src, 4);
		m.u.create.vector = (uint8_t)below(src, 3);
		m.u.create.ops = (uint32_t)below(src, 6);
		if (m.u.create.mode == WEFT_CNT_MODE_EVENT && below(src, 2)) {
			/* Near-valid event counter: a block and nothing else. */
			m.u.create.pages_addr = m.u.create.length = 0;
			m.u.create.first_off = m.u.create.flags = 0;
			m.u.create.ops = 0;
		}
		break;
	case WEFT_CNT_CMD_BIND_QP:
	case WEFT_CNT_CMD_UNBIND_QP:
		m.u.bind.gen = below(src, 4) ? d.gen : (uint16_t)src_u64(src);
		m.u.bind.slot = (uint8_t)below(src, WEFT_CNT_QP_SLOTS + 1);
		m.u.bind.events = (uint8_t)below(src, 5);
		m.u.bind.qpn = below(src, 4) ? (uint32_t)below(src, 16) : (uint32_t)interesting(f, src);
		break;
	case WEFT_CNT_CMD_DESTROY:
	case WEFT_CNT_CMD_UNEXPOSE:
		m.u.obj.gen = below(src, 4) ? d.gen : (uint16_t)src_u64(src);
		break;
	case WEFT_CNT_CMD_EV_SET:
		/* Moves a counter that WAIT_CNTs of the fuzzed QPs wait on. */
		m.u.ev.gen = below(src, 4) ? d.gen : (uint16_t)src_u64(src);
		m.u.ev.op = (uint8_t)below(src, 4);
		m.u.ev.word = (uint8_t)below(src, 3);
		m.u.ev.value = below(src, 4) ? below(src, 8) : src_u64(src);
		break;
	case WEFT_CNT_CMD_POST:
		m.u.post.gen = below(src, 8) ? d.gen : (uint16_t)below(src, 4);
		m.u.post.slot = (uint8_t)below(src, WEFT_CNT_MAX_OPS + 2);
		m.u.post.dir = (uint8_t)below(src, 4);
		m.u.post.node = (uint16_t)below(src, 3);
		m.u.post.offset = below(src, 4) ? WEFT_CNT_CHUNK * below(src, 40) : interesting(f, src);
		m.u.post.length = below(src, 4) ? 1 + below(src, 20000) : interesting(f, src);
		m.u.post.remote_va = below(src, 4) ? FZ_CVA + below(src, FZ_CBUF) : interesting(f, src);
		break;
	case WEFT_CNT_CMD_EXPOSE:
		m.u.expose.va = below(src, 2) ? FZ_CVA + below(src, FZ_CBUF) : interesting(f, src);
		m.u.expose.length = below(src, 4) ? 1 + below(src, FZ_CBUF / 2) : interesting(f, src);
		m.u.expose.pages_addr = below(src, 4) ? n->clist + 8 * below(src, 16) :
				       interesting(f, src);
		m.u.expose.first_off = below(src, 2) ? 0 : (uint32_t)below(src, 5000);
		m.u.expose.rights = (uint8_t)below(src, 5);
		m.u.expose.peer = below(src, 2) ? WEFT_CNT_ANY_PEER : (uint16_t)below(src, 3);
		break;
	case WEFT_CNT_CMD_QUERY:
	case WEFT_CNT_CMD_QUERY_EXP:
		m.u.query.addr = below(src, 2) ? n->cbuf + below(src, FZ_CBUF) : interesting(f, src);
		break;
	default:
		break;
	}
	cnt_run(f, 0, &m);
}

/* A forged counter packet for node 0, its fields close to node 0's live
 * object and exposure, from any node. */
static void act_cpkt(struct fz *f, struct fz_src *src)
{
	uint8_t pkt[WEFT_WIRE_MAX_FRAME];
	struct fz_node *n = &f->n[0];
	struct weft_cnt_obj_dump d;
	struct weft_wire_hdr wh;
	struct weft_cnt_hdr h;
	unsigned int slot = (unsigned int)below(src, 2);
	size_t dlen = below(src, 2) ? WEFT_CNT_CHUNK : below(src, WEFT_CNT_CHUNK + 64), i;

	weft_core_cnt_obj(weft_sim_core(f->s, 0), FZ_COBJ, &d);
	memset(&wh, 0, sizeof(wh));
	wh.version = WEFT_WIRE_VERSION;
	wh.type = below(src, 8) ? (uint8_t)(WEFT_PKT_CNT_WRITE_OP + below(src, 5)) :
		  (uint8_t)below(src, 256);
	wh.src_node = (uint16_t)below(src, 3);
	memset(&h, 0, sizeof(h));
	h.obj = below(src, 4) ? FZ_COBJ : (uint16_t)below(src, 300);
	h.gen = below(src, 4) ? d.gen : (uint16_t)below(src, 5);
	h.slot = (uint8_t)(below(src, 4) ? slot : below(src, 12));
	h.dir = (uint8_t)(below(src, 4) ? d.op[slot].dir : below(src, 4));
	h.seq = below(src, 4) ? d.op[slot].seq : (uint32_t)below(src, 50);
	h.cause = (uint16_t)below(src, 80);
	h.region_pa = below(src, 4) ? n->cbuf + 4096 * below(src, FZ_CBUF / 4096) :
		      interesting(f, src);
	h.block_pa = below(src, 4) ? n->cblk : interesting(f, src);
	h.remote_va = below(src, 4) ? (below(src, 2) ? d.op[slot].remote_va : FZ_CVA) :
		      interesting(f, src);
	h.length = below(src, 4) ? d.op[slot].length : interesting(f, src);
	h.offset = below(src, 4) ? WEFT_CNT_CHUNK * below(src, 12) : interesting(f, src);
	h.span = below(src, 4) ? dlen : interesting(f, src);
	if (wh.type != WEFT_PKT_CNT_DATA && below(src, 4))
		dlen = 0;
	wh.length = (uint32_t)(sizeof(h) + dlen);
	memcpy(pkt, &wh, sizeof(wh));
	memcpy(pkt + sizeof(wh), &h, sizeof(h));
	for (i = 0; i < dlen; i++)
		pkt[sizeof(wh) + sizeof(h) + i] = (uint8_t)src_u64(src);
	f->st.cnt_pkts++;
	deliver(f, 0, pkt, sizeof(wh) + sizeof(h) + dlen);
}

void fz_action(struct fz *f, struct fz_src *src)
{
	unsigned int k = (unsigned int)below(src, 112);
	unsigned int i, rounds;

	f->st.actions++;
	if (k < 12)
		act_reg(f, src);
	else if (k < 22)
		act_sram(f, src);
	else if (k < 36)
		act_db(f, src);
	else if (k < 48)
		act_packet(f, src);
	else if (k < 66)
		act_mutated(f, src);
	else if (k < 78)
		act_current(f, src);
	else if (k < 81)
		act_read(f, src);
	else if (k < 85)
		act_user(f, src);
	else if (k < 89)
		act_vwqe(f, src);
	else if (k < 91)
		act_vcmd(f, src);
	else if (k < 95)
		act_vmisc(f, src);
	else if (k >= 100 && k < 103)
		act_ccmd(f, src);
	else if (k >= 103 && k < 106)
		act_cpkt(f, src);
	else if (k >= 106)
		act_tm(f, src);
	rounds = k >= 95 && k < 100 ? 1 + (unsigned int)below(src, 40) : 1;
	for (i = 0; i < rounds; i++) {
		f->st.polls++;
		if (!weft_sim_progress(f->s))
			break;
	}
}

uint64_t fz_finish(struct fz *f)
{
	unsigned int i;

	weft_sim_run_idle(f->s, 200000);
	for (i = 0; i < FZ_NODES; i++)
		check_canaries(f, i);
	tm_tally(f);
	return f->st.violations;
}

const struct fz_stats *fz_stats(const struct fz *f)
{
	return &f->st;
}
