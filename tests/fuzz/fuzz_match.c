/* SPDX-License-Identifier: MIT */
/* Header-matching fuzz target (fuzz_match.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_match.h"
#include "weft/match.h"
#include "weft/verbs.h"
#include "weft_sim.h"

#define FM_NODES 2u
#define SANDBOX (1u << 20)
#define FAR_MAX 1024u
#define RECENT 8u                       /* matching packets kept for replay */

struct fm_node {
	uint64_t box;                   /* sandbox base */
	uint8_t *named;                 /* byte per sandbox byte: guest named it */
	struct { uint64_t a, b; } far[FAR_MAX]; /* named ranges outside the box */
	unsigned int nfar;
	uint64_t op;                    /* operation block */
	uint64_t cmd;                   /* verbs command block (QUERY_HQ) */
	uint64_t cons;
};

struct fm {
	struct weft_sim *s;
	struct fm_node n[FM_NODES];
	struct fm_stats st;
	/* The last matching packets the adapters sent (ACKs included). */
	_Alignas(8) uint8_t recent[RECENT][WEFT_WIRE_MAX_FRAME];
	uint32_t recent_len[RECENT];
	unsigned int nrecent, rnext;
};

static void name_range(struct fm *f, unsigned int node, uint64_t a, uint64_t len)
{
	struct fm_node *n = &f->n[node];

	if (len == 0)
		return;
	if (a >= n->box && a - n->box < SANDBOX) {
		uint64_t o = a - n->box, e = len > SANDBOX - o ? SANDBOX : o + len;

		memset(n->named + o, 1, e - o);
		if (o + len <= SANDBOX)
			return;
	}
	if (n->nfar < FAR_MAX) {
		n->far[n->nfar].a = a;
		n->far[n->nfar].b = a + len < a ? UINT64_MAX : a + len;
		n->nfar++;
	}
}

static bool named(struct fm *f, unsigned int node, uint64_t a, uint64_t len)
{
	struct fm_node *n = &f->n[node];
	struct weft_core *c = weft_sim_core(f->s, node);
	uint64_t evq = weft_core_reg_read(c, WEFT_REG_EVQ_BASE, 8);
	uint64_t evsz = weft_core_reg_read(c, WEFT_REG_EVQ_SIZE, 8);
	uint64_t k;
	unsigned int i;

	if (evsz && a >= evq && a + len <= evq + (32ull << evsz))
		return true;
	for (k = 0; k < len; k++) {
		uint64_t x = a + k;
		bool ok = x >= n->box && x - n->box < SANDBOX && n->named[x - n->box];

		for (i = 0; !ok && i < n->nfar; i++)
			ok = x >= n->far[i].a && x < n->far[i].b;
		if (!ok)
			return false;
	}
	return true;
}

static void dma_hook(void *opaque, unsigned int node, uint64_t addr, size_t len, bool is_write)
{
	struct fm *f = opaque;

	if (!is_write || node >= FM_NODES)
		return;
	f->st.dma_writes++;
	if (!named(f, node, addr, len)) {
		f->st.violations++;
		fprintf(stderr, "fuzz-match: node %u wrote %zu bytes at 0x%llx, not a named range\n",
			node, len, (unsigned long long)addr);
	}
}

static uint64_t box_addr(struct fm *f, unsigned int node, struct fz_src *src, uint64_t len)
{
	struct fm_node *n = &f->n[node];

	if (fz_src_below(src, 16) == 0 && n->nfar < FAR_MAX)
		return fz_src_u64(src) & (fz_src_below(src, 2) ? 0xffffffull : ~0ull);
	if (len >= SANDBOX)
		return n->box;
	return n->box + fz_src_below(src, SANDBOX - len) / 8 * 8;
}

static uint64_t word(struct fz_src *src)
{
	switch (fz_src_below(src, 6)) {
	case 0: return 0;
	case 1: return fz_src_u64(src);
	case 2: return WEFT_MW_WC_MASK;
	default:
		return WEFT_MW(fz_src_below(src, 4), 1, fz_src_below(src, 3), fz_src_below(src, 4));
	}
}

static uint32_t length(struct fz_src *src)
{
	switch (fz_src_below(src, 6)) {
	case 0: return 0;
	case 1: return (uint32_t)fz_src_u64(src);
	case 2: return 4096 + (uint32_t)fz_src_below(src, 20000);
	default: return (uint32_t)fz_src_below(src, 2000);
	}
}

static uint64_t doorbell(struct fm *f, unsigned int node, struct weft_match_op *op)
{
	struct fm_node *n = &f->n[node];
	uint8_t *p = weft_sim_ptr(f->s, node, n->op, sizeof(*op));

	/* Buffers the operation names become writable for the adapter. */
	switch (op->opcode) {
	case WEFT_MOP_POST:
		name_range(f, node, op->addr, op->len);
		if (op->flags & WEFT_MOPF_MULTI)
			name_range(f, node, op->claim, 8);
		break;
	case WEFT_MOP_POOL_ADD:
	case WEFT_MOP_DUMP:
		name_range(f, node, op->addr, op->len);
		break;
	default:
		break;
	}
	memcpy(p, op, sizeof(*op));
	f->st.doorbells++;
	weft_sim_reg_write(f->s, node, WEFT_REG_MATCH_DOORBELL, n->op);
	return weft_sim_reg_read(f->s, node, WEFT_REG_MATCH_DB_STATUS);
}

static void random_op(struct fm *f, unsigned int node, struct fz_src *src)
{
	struct weft_match_op op;

	memset(&op, 0, sizeof(op));
	op.opcode = (uint8_t)fz_src_below(src, 9);
	op.flags = (uint8_t)(fz_src_below(src, 8) ? fz_src_below(src, 0x20) : fz_src_u64(src));
	op.queue = (uint16_t)(fz_src_below(src, 8) ? fz_src_below(src, 12) : fz_src_u64(src));
	op.len = length(src);
	op.match = word(src);
	op.ignore = fz_src_below(src, 4) ? 0 : fz_src_u64(src);
	op.addr = box_addr(f, node, src, op.len > SANDBOX ? 0 : op.len);
	op.match_id = (uint32_t)(fz_src_below(src, 2) ? fz_src_below(src, 80) : fz_src_u64(src));
	op.req_id = (uint32_t)fz_src_u64(src);
	op.node = (uint16_t)(fz_src_below(src, 4) ? fz_src_below(src, FM_NODES) :
			     fz_src_below(src, 2) ? WEFT_MATCH_ANY_SOURCE : fz_src_u64(src));
	op.seen = (uint32_t)fz_src_below(src, 40);
	op.claim = box_addr(f, node, src, 8);
	if (fz_src_below(src, 32) == 0)
		op.reserved1 = fz_src_u64(src);
	if (op.opcode == WEFT_MOP_SEND && op.node != node)
		op.node = (uint16_t)fz_src_below(src, FM_NODES);
	doorbell(f, node, &op);
}

/* The verbs command QUERY_HQ (hw-spec 17.4): a snapshot of any queue's
 * PRQ or UEQ, into a buffer it names (which becomes writable) or
 * anywhere, with any length, flags and reserved fields. */
static void query_hq(struct fm *f, struct fz_src *src)
{
	unsigned int node = (unsigned int)fz_src_below(src, FM_NODES);
	struct fm_node *n = &f->n[node];
	struct weft_vcmd k;
	struct weft_vcmd_resp r;

	memset(&k, 0, sizeof(k));
	k.op = WEFT_VCMD_QUERY_HQ;
	k.handle = (uint32_t)(fz_src_below(src, 8) ? fz_src_below(src, 12) :
			      fz_src_below(src, 2) ? fz_src_below(src, 200) : fz_src_u64(src));
	k.u.hq.len = fz_src_below(src, 4) ? 32 * (1 + (uint32_t)fz_src_below(src, 80)) :
		     length(src);
	k.u.hq.addr = box_addr(f, node, src, k.u.hq.len > SANDBOX ? 0 : k.u.hq.len);
	if (fz_src_below(src, 16) == 0)
		k.u.hq.addr += fz_src_below(src, 8);
	k.u.hq.flags = (uint32_t)(fz_src_below(src, 8) ? fz_src_below(src, 2) : fz_src_u64(src));
	if (fz_src_below(src, 32) == 0)
		k.u.hq.reserved[fz_src_below(src, 5)] = fz_src_u64(src);
	name_range(f, node, k.u.hq.addr, k.u.hq.len);
	memcpy(weft_sim_ptr(f->s, node, n->cmd, sizeof(k)), &k, sizeof(k));
	weft_sim_reg_write(f->s, node, WEFT_REG_VERBS_CMD, n->cmd);
	memcpy(&r, weft_sim_ptr(f->s, node, n->cmd + sizeof(k), sizeof(r)), sizeof(r));
	if (r.status == WEFT_CMD_OK) {
		f->st.hq_ok++;
		f->st.hq_entries += r.out[0];
	} else {
		f->st.hq_refused++;
	}
}

static void forged(struct fm *f, struct fz_src *src)
{
	uint8_t pkt[WEFT_WIRE_MAX_FRAME];
	struct weft_wire_hdr *wh = (struct weft_wire_hdr *)pkt;
	struct weft_match_whdr *mh = (struct weft_match_whdr *)(pkt + sizeof(*wh));
	uint32_t dlen = (uint32_t)fz_src_below(src, 300);
	size_t len;

	memset(pkt, 0, sizeof(*wh) + sizeof(*mh));
	wh->version = WEFT_WIRE_VERSION;
	wh->type = WEFT_PKT_MATCH;
	wh->dst_node = 0;
	wh->src_node = (uint16_t)(fz_src_below(src, 4) ? fz_src_below(src, FM_NODES) :
				  fz_src_u64(src));
	wh->tid = (uint32_t)(fz_src_below(src, 2) ? fz_src_below(src, 4) : fz_src_u64(src));
	wh->protocol_cookie = fz_src_below(src, 4) ? 0 : fz_src_u64(src);
	mh->op = (uint8_t)fz_src_below(src, 11);
	mh->flags = (uint8_t)fz_src_below(src, 8);
	mh->queue = (uint16_t)(fz_src_below(src, 8) ? fz_src_below(src, 12) : fz_src_u64(src));
	mh->match = word(src);
	mh->total = fz_src_below(src, 3) ? dlen : fz_src_u64(src);
	mh->offset = fz_src_below(src, 3) ? fz_src_below(src, 8192) : fz_src_u64(src);
	mh->sslot = (uint32_t)(fz_src_below(src, 8) ? fz_src_below(src, 8) : fz_src_u64(src));
	mh->rslot = (uint32_t)(fz_src_below(src, 8) ? fz_src_below(src, 8) : fz_src_u64(src));
	mh->status = (uint32_t)fz_src_below(src, 5);
	mh->req_id = (uint32_t)fz_src_u64(src);
	mh->len = fz_src_below(src, 8) ? dlen : (uint32_t)fz_src_u64(src);
	memset(pkt + sizeof(*wh) + sizeof(*mh), 0x5a, dlen);
	len = sizeof(*wh) + sizeof(*mh) + dlen;
	if (fz_src_below(src, 8) == 0)
		len = sizeof(*wh) + fz_src_below(src, sizeof(*mh) + dlen);
	wh->length = (uint32_t)(len - sizeof(*wh));
	f->st.forged++;
	weft_core_receive(weft_sim_core(f->s, 0), pkt, len);
}

/* Keep what the adapters send on the matching channels. */
static void fm_trace(void *opaque, unsigned int node, const struct weft_trace *ev)
{
	struct fm *f = opaque;

	(void)node;
	if (ev->kind != WEFT_TR_PKT_TX || !ev->hdr || ev->hdr->type != WEFT_PKT_MATCH ||
	    ev->len > WEFT_WIRE_MAX_FRAME)
		return;
	memcpy(f->recent[f->rnext], ev->hdr, ev->len);
	f->recent_len[f->rnext] = (uint32_t)ev->len;
	f->rnext = (f->rnext + 1) % RECENT;
	if (f->nrecent < RECENT)
		f->nrecent++;
}

/* A recent packet again: duplicated as it was, or with its sequence
 * number, incarnation, flags or acknowledged PSN moved a little or
 * replaced. */
static void replay(struct fm *f, struct fz_src *src)
{
	uint8_t pkt[WEFT_WIRE_MAX_FRAME];
	struct weft_wire_hdr *wh = (struct weft_wire_hdr *)pkt;
	struct weft_match_whdr *mh = (struct weft_match_whdr *)(pkt + sizeof(*wh));
	unsigned int k;
	uint32_t len;

	if (!f->nrecent)
		return;
	k = (unsigned int)fz_src_below(src, f->nrecent);
	len = f->recent_len[k];
	memcpy(pkt, f->recent[k], len);
	if (len >= sizeof(*wh) + sizeof(*mh)) {
		switch (fz_src_below(src, 6)) {
		case 0: break;  /* a plain duplicate */
		case 1: wh->tid += (uint32_t)fz_src_below(src, 9) - 4; break;
		case 2: mh->offset += fz_src_below(src, 9) - 4; break;
		case 3: mh->flags ^= (uint8_t)(1u << fz_src_below(src, 8)); break;
		case 4: wh->protocol_cookie += fz_src_below(src, 3) - 1; break;
		default:
			wh->tid = (uint32_t)fz_src_u64(src);
			mh->offset = fz_src_u64(src);
			mh->total = fz_src_below(src, 2) ? mh->total : fz_src_u64(src);
			break;
		}
	}
	f->st.forged++;
	if (wh->dst_node < FM_NODES)
		weft_core_receive(weft_sim_core(f->s, wh->dst_node), pkt, len);
}

static void drain(struct fm *f)
{
	unsigned int k;

	for (k = 0; k < FM_NODES; k++) {
		uint64_t prod = weft_sim_reg_read(f->s, k, WEFT_REG_MATCH_CQ_PROD);

		f->st.cqes += prod - f->n[k].cons;
		f->n[k].cons = prod;
		weft_sim_reg_write(f->s, k, WEFT_REG_MATCH_CQ_CONS, prod);
	}
}

static void set_ring(struct fm *f, unsigned int node, uint64_t base, uint64_t log2)
{
	uint64_t size;

	weft_sim_reg_write(f->s, node, WEFT_REG_MATCH_CQ_BASE, base);
	weft_sim_reg_write(f->s, node, WEFT_REG_MATCH_CQ_SIZE, log2);
	/* The ring the adapter now uses (a refused size keeps the old one). */
	base = weft_sim_reg_read(f->s, node, WEFT_REG_MATCH_CQ_BASE);
	size = weft_sim_reg_read(f->s, node, WEFT_REG_MATCH_CQ_SIZE);
	if (size)
		name_range(f, node, base, 64ull << size);
	f->n[node].cons = weft_sim_reg_read(f->s, node, WEFT_REG_MATCH_CQ_PROD);
}

static void reg_write(struct fm *f, struct fz_src *src)
{
	uint64_t off, val;
	unsigned int q = (unsigned int)fz_src_below(src, WEFT_MATCH_NR_QUEUES);

	switch (fz_src_below(src, 5)) {
	case 0:
		off = WEFT_REG_MATCH_QCFG(q);
		val = fz_src_below(src, 4) ? WEFT_QCFG(fz_src_below(src, 16), fz_src_below(src, 6),
						       fz_src_below(src, 6)) : fz_src_u64(src);
		break;
	case 1:
		off = WEFT_REG_MATCH_QSTAT(q);
		val = fz_src_below(src, 2) ? WEFT_QSTAT_STOPPED : fz_src_u64(src);
		break;
	case 2:
		off = fz_src_below(src, 2) ? WEFT_REG_MATCH_QTAG(q) : WEFT_REG_MATCH_QRANK(q);
		val = fz_src_u64(src);
		break;
	case 3:
		if (fz_src_below(src, 4) == 0) {
			set_ring(f, 0, box_addr(f, 0, src, 64u << 8) & ~63ull,
				 fz_src_below(src, 3) ? 4 + fz_src_below(src, 5) : fz_src_u64(src));
			f->st.reg_writes += 2;
			return;
		}
		off = WEFT_REG_MATCH_CQ_CONS;
		val = fz_src_below(src, 2) ? weft_sim_reg_read(f->s, 0, WEFT_REG_MATCH_CQ_PROD) :
		      fz_src_u64(src);
		break;
	default:
		off = WEFT_MATCH_REG_FIRST + fz_src_below(src, WEFT_MATCH_QD_END -
							       WEFT_MATCH_REG_FIRST + 64);
		off &= ~3ull;
		val = fz_src_u64(src);
		/* Ring and doorbell addresses are named by the cases above. */
		if ((off & ~7ull) == WEFT_REG_MATCH_CQ_BASE || (off & ~7ull) == WEFT_REG_MATCH_DOORBELL ||
		    (off & ~7ull) == WEFT_REG_MATCH_CQ_SIZE)
			off = WEFT_REG_MATCH_CAPS;
		weft_core_reg_write(weft_sim_core(f->s, 0), off, val, off & 4 ? 4 : 8);
		f->st.reg_writes++;
		return;
	}
	f->st.reg_writes++;
	weft_sim_reg_write(f->s, 0, off, val);
}

/* Well-formed traffic: node 1 and node 0 (loopback) send to node 0. */
static void traffic(struct fm *f, struct fz_src *src)
{
	unsigned int from = (unsigned int)fz_src_below(src, FM_NODES);
	struct weft_match_op op;

	memset(&op, 0, sizeof(op));
	op.queue = (uint16_t)fz_src_below(src, 12);
	op.match = WEFT_MW(0, 1, from + 1, fz_src_below(src, 4));
	op.len = (uint32_t)(fz_src_below(src, 4) ? fz_src_below(src, 1800) :
			    fz_src_below(src, 30000));
	if (fz_src_below(src, 2)) {
		op.opcode = WEFT_MOP_SEND;
		op.node = 0;
		op.addr = f->n[from].box;
		op.flags = fz_src_below(src, 4) ? 0 : WEFT_MOPF_RNDV;
		f->st.sends++;
		doorbell(f, from, &op);
	} else {
		op.opcode = WEFT_MOP_POST;
		op.match = WEFT_MW(fz_src_below(src, 4), 1, fz_src_below(src, 3), fz_src_below(src, 4));
		op.node = WEFT_MATCH_ANY_SOURCE;
		op.addr = box_addr(f, 0, src, op.len);
		op.match_id = (uint32_t)fz_src_below(src, 100);
		op.flags = (uint8_t)fz_src_below(src, 8) & (WEFT_MOPF_CR | WEFT_MOPF_OPTIMISTIC);
		op.seen = (uint32_t)fz_src_below(src, 20);
		f->st.posts++;
		doorbell(f, 0, &op);
	}
}

static void overflow_run(struct fm *f, struct fz_src *src)
{
	unsigned int k, n = 8 + (unsigned int)fz_src_below(src, 40);

	f->st.overflow_runs++;
	for (k = 0; k < n; k++)
		traffic(f, src);
}

static void poll_some(struct fm *f, struct fz_src *src)
{
	f->st.polls++;
	weft_sim_run_idle(f->s, 1 + fz_src_below(src, 300));
	if (fz_src_below(src, 2))
		drain(f);
	/* The sender side answers large rendezvous like software would. */
	{
		uint64_t prod = weft_sim_reg_read(f->s, 1, WEFT_REG_MATCH_CQ_PROD);
		struct weft_match_op op;

		memset(&op, 0, sizeof(op));
		op.opcode = WEFT_MOP_RNDV_PUT;
		op.match_id = (uint32_t)fz_src_below(src, WEFT_MATCH_RNDV_SLOTS);
		if (prod != f->n[1].cons)
			doorbell(f, 1, &op);
	}
}

struct fm *fm_new(uint64_t seed)
{
	struct weft_sim_config cfg = {
		.nr_nodes = FM_NODES, .seed = seed, .mem_size = 8ull << 20,
		.match_store = 64 * WEFT_MATCH_HDR_BYTES, .umb_size = 1024, .umb_frag = 64,
		.matchers = 4, .match_step = 2, .rndv_threshold = 4096,
	};
	char err[128];
	struct fm *f = calloc(1, sizeof(*f));
	unsigned int k, q;

	if (!f)
		return NULL;
	cfg.trace = fm_trace;
	cfg.trace_opaque = f;
	f->s = weft_sim_new(&cfg, err, sizeof(err));
	if (!f->s) {
		fprintf(stderr, "fuzz-match: %s\n", err);
		free(f);
		return NULL;
	}
	for (k = 0; k < FM_NODES; k++) {
		struct fm_node *n = &f->n[k];

		n->box = weft_sim_alloc(f->s, k, SANDBOX, 4096);
		n->op = weft_sim_alloc(f->s, k, 64, 64);
		n->cmd = weft_sim_alloc(f->s, k, WEFT_VCMD_BLOCK_SIZE, 64);
		n->named = calloc(1, SANDBOX);
		if (!n->box || !n->op || !n->cmd || !n->named) {
			fm_free(f);
			return NULL;
		}
		/* The response of a command (its second half). */
		name_range(f, k, n->cmd + sizeof(struct weft_vcmd), sizeof(struct weft_vcmd_resp));
		set_ring(f, k, n->box + SANDBOX - (64u << 8), 8);
		for (q = 0; q < 12; q++)
			weft_sim_reg_write(f->s, k, WEFT_REG_MATCH_QCFG(q),
					   WEFT_QCFG(WEFT_QCFG_ENABLE | (q % 4 == 1 ? WEFT_QCFG_TRUNCATE : 0) |
						     (q % 4 == 2 ? WEFT_QCFG_NO_COPY : 0) |
						     (q % 4 == 3 ? WEFT_QCFG_SW_UEQ : 0), q < 6 ? 8 : 0,
						     q < 6 ? 8 : 0));
	}
	weft_sim_set_dma_hook(f->s, dma_hook, f);
	return f;
}

void fm_free(struct fm *f)
{
	unsigned int k;

	if (!f)
		return;
	for (k = 0; k < FM_NODES; k++)
		free(f->n[k].named);
	weft_sim_free(f->s);
	free(f);
}

void fm_action(struct fm *f, struct fz_src *src)
{
	f->st.actions++;
	switch (fz_src_below(src, 10)) {
	case 0: reg_write(f, src); break;
	case 1:
	case 2: random_op(f, (unsigned int)fz_src_below(src, FM_NODES), src); break;
	case 3: forged(f, src); break;
	case 4: replay(f, src); break;
	case 5:
	case 6: traffic(f, src); break;
	case 7: if (fz_src_below(src, 8) == 0) overflow_run(f, src); else traffic(f, src); break;
	case 8: if (fz_src_below(src, 4) == 0) query_hq(f, src); else poll_some(f, src); break;
	default: poll_some(f, src); break;
	}
}

uint64_t fm_finish(struct fm *f)
{
	unsigned int k;

	for (k = 0; k < 100; k++) {
		drain(f);
		if (weft_sim_run_idle(f->s, 100000))
			break;
	}
	drain(f);
	for (k = 0; k < FM_NODES; k++) {
		f->st.dups += weft_sim_reg_read(f->s, k, WEFT_REG_CNT(WEFT_CNT_DROP(WEFT_R_MATCH_DUP)));
		f->st.seqs += weft_sim_reg_read(f->s, k, WEFT_REG_CNT(WEFT_CNT_DROP(WEFT_R_MATCH_SEQ)));
		f->st.bad_acks += weft_sim_reg_read(f->s, k,
						    WEFT_REG_CNT(WEFT_CNT_DROP(WEFT_R_MATCH_BAD_ACK)));
	}
	return f->st.violations;
}

const struct fm_stats *fm_stats(const struct fm *f)
{
	return &f->st;
}
