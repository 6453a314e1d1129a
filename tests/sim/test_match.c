/* SPDX-License-Identifier: MIT */
/*
 * Header matching, one case per seed 001 checklist item (81, 82, 96-113;
 * docs/matching.md): sim nodes driven through the MATCH registers and
 * operation blocks as a driver would.  Usage: sim-match CASE.
 */
#include <stdio.h>
#include <string.h>

#include "mt.h"
#include "simtest.h"
#include "weft_sim_verbs.h"

#define Q0 0u
#define CTX 1u
/* A sender's word: its rank is its node + 1. */
#define W(node, tag) WEFT_MW(0, CTX, (node) + 1, tag)
#define ANY WEFT_MATCH_ANY_SOURCE
#define ENABLE WEFT_QCFG(WEFT_QCFG_ENABLE, 0, 0)
/* A fabric that loses 10% of the frames and reorders them over 4 routes
 * and a jitter 15 times the delay: the channels under matching must hide
 * it (docs/matching.md "Reliable delivery"). */
#define LOSSY { .drop_ppm = 100000, .routes = 4, .delay_ns = 200, .jitter_ns = 3000, \
		.route_skew_ns = 500 }

static uint64_t fabric_drops(struct mt *t)
{
	return weft_fabric_total_stats(weft_sim_fabric(t->s))->drops[WEFT_FABRIC_DROP_RANDOM];
}

static void fill(struct mt *t, unsigned int node, uint64_t addr, uint32_t len, uint64_t seed)
{
	st_fill(mt_ptr(t, node, addr, len), len, seed);
}

static bool same(struct mt *t, unsigned int na, uint64_t a, unsigned int nb, uint64_t b,
		 uint32_t len)
{
	return memcmp(mt_ptr(t, na, a, len), mt_ptr(t, nb, b, len), len) == 0;
}

/* Next completion of a type, skipping others; false if none. */
static bool next_of(struct mt *t, unsigned int node, unsigned int type,
		    struct weft_match_cqe *e)
{
	while (mt_cqe(t, node, e))
		if (e->type == type)
			return true;
	return false;
}

static unsigned int qstat_ueq(struct mt *t, unsigned int node, unsigned int q)
{
	return WEFT_QSTAT_UEQ(mt_reg(t, node, WEFT_REG_MATCH_QSTAT(q)));
}

static unsigned int qstat_prq(struct mt *t, unsigned int node, unsigned int q)
{
	return WEFT_QSTAT_PRQ(mt_reg(t, node, WEFT_REG_MATCH_QSTAT(q)));
}

/* 81: intra-node sends loop back through the same matching; an
 * ANY_SOURCE receive takes intra- and inter-node sends alike. */
static void item081(void)
{
	struct mt t;
	struct weft_match_cqe e;
	uint64_t r0 = 0, r1 = 0, s0, s1;
	unsigned int k, loop = 0, remote = 0;

	mt_init(&t, 2, NULL);
	mt_qcfg(&t, 0, Q0, ENABLE);
	s0 = mt_alloc(&t, 0, 500);
	s1 = mt_alloc(&t, 1, 500);
	fill(&t, 0, s0, 500, 1);
	fill(&t, 1, s1, 500, 2);
	r0 = mt_alloc(&t, 0, 500);
	r1 = mt_alloc(&t, 0, 500);
	/* Any source, any rank: WC = 10. */
	CHECK_EQ(mt_post(&t, 0, Q0, WEFT_MW(WEFT_MW_WC_RANK, CTX, 0, 7), 0, ANY, r0, 500, 1, 0),
		 0, "post 1");
	CHECK_EQ(mt_post(&t, 0, Q0, WEFT_MW(WEFT_MW_WC_RANK, CTX, 0, 7), 0, ANY, r1, 500, 2, 0),
		 0, "post 2");
	CHECK_EQ(mt_send(&t, 0, 0, Q0, W(0, 7), s0, 500, 10, 0), 0, "intra-node send");
	mt_run(&t);
	CHECK_EQ(mt_send(&t, 1, 0, Q0, W(1, 7), s1, 500, 11, 0), 0, "inter-node send");
	mt_run(&t);
	for (k = 0; k < 2; k++) {
		REQUIRE(next_of(&t, 0, WEFT_MCQE_MATCH_COPY, &e), "match %u", k);
		CHECK_EQ(e.status, 0, "status");
		if (e.src_node == 0) {
			loop++;
			CHECK(e.flags & WEFT_MCQEF_LOOPBACK, "loopback flag");
			CHECK(same(&t, 0, e.match_id == 1 ? r0 : r1, 0, s0, 500), "intra bytes");
		} else {
			remote++;
			CHECK(!(e.flags & WEFT_MCQEF_LOOPBACK), "no loopback flag");
			CHECK(same(&t, 0, e.match_id == 1 ? r0 : r1, 1, s1, 500), "inter bytes");
		}
	}
	CHECK_EQ(loop, 1, "intra-node match");
	CHECK_EQ(remote, 1, "inter-node match");
	CHECK(mt_cnt(&t, 0, WEFT_CNT_M_LOOPBACK) >= 1, "loopback counted");
	t_checked("item 81: intra-node send matched through loopback; ANY_SOURCE took both");
	mt_fini(&t);
}

/* 82: a receive posted on two adapters is consumed once, through the
 * claim flag fetched and set in host memory. */
static void item082(void)
{
	struct weft_sim_config cfg = { .adapters = 2 };
	struct mt t;
	uint64_t flag, buf, s;
	unsigned int m0, m1, u0, u1;

	/* Nodes 0 and 1: two adapters of one host; node 2.. other host. */
	cfg.adapters = 2;
	mt_init(&t, 4, &cfg);
	mt_qcfg(&t, 0, Q0, ENABLE);
	mt_qcfg(&t, 1, Q0, ENABLE);
	flag = mt_alloc(&t, 0, 8);
	buf = mt_alloc(&t, 0, 256);
	memset(mt_ptr(&t, 0, flag, 8), 0, 8);
	s = mt_alloc(&t, 2, 256);
	fill(&t, 2, s, 256, 5);
	{
		struct weft_match_op op = {
			.opcode = WEFT_MOP_POST, .flags = WEFT_MOPF_MULTI, .queue = Q0,
			.match = W(2, 9), .node = ANY, .addr = buf, .len = 256,
			.match_id = 42, .claim = flag,
		};
		CHECK_EQ(mt_op(&t, 0, &op), 0, "post on adapter 0");
		CHECK_EQ(mt_op(&t, 1, &op), 0, "post on adapter 1");
	}
	mt_run(&t);
	/* The sender stripes two messages with the same tag over both. */
	CHECK_EQ(mt_send(&t, 2, 0, Q0, W(2, 9), s, 256, 1, 0), 0, "send to adapter 0");
	CHECK_EQ(mt_send(&t, 2, 1, Q0, W(2, 9), s, 256, 2, 0), 0, "send to adapter 1");
	mt_run(&t);
	m0 = (unsigned int)mt_cnt(&t, 0, WEFT_CNT_M_MATCHES);
	m1 = (unsigned int)mt_cnt(&t, 1, WEFT_CNT_M_MATCHES);
	u0 = qstat_ueq(&t, 0, Q0);
	u1 = qstat_ueq(&t, 1, Q0);
	CHECK_EQ(m0 + m1, 1, "one match across the adapters");
	CHECK_EQ(u0 + u1, 1, "the other message is unexpected");
	CHECK_EQ(mt_cnt(&t, 0, WEFT_CNT_M_CLAIMS_LOST) + mt_cnt(&t, 1, WEFT_CNT_M_CLAIMS_LOST),
		 1, "one claim lost");
	CHECK_EQ(*(uint64_t *)mt_ptr(&t, 0, flag, 8), 1, "flag set");
	CHECK(same(&t, 0, buf, 2, s, 256), "bytes");
	CHECK_EQ(qstat_prq(&t, 0, Q0) + qstat_prq(&t, 1, Q0), 0, "both entries gone");
	t_checked("item 82: receive on two adapters consumed once (claim flag)");
	mt_fini(&t);
}

/* 96: an arrival matches the first posted receive: one copy into its
 * buffer and SUCCESSFUL_MATCH_COPY_COMPLETE with its Match Compl ID. */
static void item096(void)
{
	struct mt t;
	struct weft_match_cqe e;
	uint64_t r1, r2, s;

	mt_init(&t, 2, NULL);
	mt_qcfg(&t, 1, Q0, ENABLE);
	r1 = mt_alloc(&t, 1, 1800);
	r2 = mt_alloc(&t, 1, 1800);
	s = mt_alloc(&t, 0, 1800);
	fill(&t, 0, s, 1800, 9);
	CHECK_EQ(mt_post(&t, 1, Q0, W(0, 3), 0, ANY, r1, 1800, 77, 0), 0, "post 77");
	CHECK_EQ(mt_post(&t, 1, Q0, W(0, 3), 0, ANY, r2, 1800, 78, 0), 0, "post 78");
	CHECK_EQ(mt_send(&t, 0, 1, Q0, W(0, 3), s, 1800, 5, 0), 0, "send");
	mt_run(&t);
	REQUIRE(next_of(&t, 1, WEFT_MCQE_MATCH_COPY, &e));
	CHECK_EQ(e.match_id, 77, "first posted receive");
	CHECK_EQ(e.length, 1800, "length");
	CHECK_EQ(e.written, 1800, "written");
	CHECK_EQ(e.match, W(0, 3), "match word");
	CHECK(same(&t, 1, r1, 0, s, 1800), "bytes");
	CHECK_EQ(mt_cnt(&t, 1, WEFT_CNT_M_UMB_STORES), 0, "no UMB staging");
	CHECK_EQ(qstat_prq(&t, 1, Q0), 1, "one receive left");
	REQUIRE(next_of(&t, 0, WEFT_MCQE_SEND_DONE, &e));
	CHECK_EQ(e.req_id, 5, "sender completion");
	t_checked("item 96: direct placement with the Match Compl ID");
	mt_fini(&t);
}

/* 97: no match: header on the UEQ, payload in UMB fragments. */
static void item097(void)
{
	struct mt t;
	struct weft_match_cqe e;
	uint64_t free0, r, s;

	mt_init(&t, 2, NULL);
	mt_qcfg(&t, 1, Q0, ENABLE);
	s = mt_alloc(&t, 0, 1000);
	fill(&t, 0, s, 1000, 3);
	free0 = mt_reg(&t, 1, WEFT_REG_MATCH_UMB_FREE);
	CHECK_EQ(free0, 4096, "512 KiB of 128 B fragments");
	CHECK_EQ(mt_send(&t, 0, 1, Q0, W(0, 4), s, 1000, 1, 0), 0, "send");
	mt_run(&t);
	CHECK_EQ(qstat_ueq(&t, 1, Q0), 1, "UEQ holds the header");
	CHECK_EQ(mt_reg(&t, 1, WEFT_REG_MATCH_UMB_FREE), free0 - 8, "8 fragments used");
	CHECK_EQ(mt_cnt(&t, 1, WEFT_CNT_M_UMB_STORES), 1, "UMB store counted");
	r = mt_alloc(&t, 1, 1000);
	CHECK_EQ(mt_post(&t, 1, Q0, W(0, 4), 0, ANY, r, 1000, 8, 0), 0, "post");
	mt_run(&t);
	REQUIRE(next_of(&t, 1, WEFT_MCQE_MATCH_COPY, &e));
	CHECK(same(&t, 1, r, 0, s, 1000), "bytes from the UMB");
	CHECK_EQ(mt_reg(&t, 1, WEFT_REG_MATCH_UMB_FREE), free0, "fragments freed");
	CHECK_EQ(qstat_ueq(&t, 1, Q0), 0, "UEQ empty");
	t_checked("item 97: unexpected header on the UEQ, payload in 8 UMB fragments");
	mt_fini(&t);
}

/* 98: a new posted receive searches the UEQ first and takes the oldest
 * matching unexpected message. */
static void item098(void)
{
	struct mt t;
	struct weft_match_cqe e;
	uint64_t s[3], r;
	unsigned int k;

	mt_init(&t, 2, NULL);
	mt_qcfg(&t, 1, Q0, ENABLE);
	for (k = 0; k < 3; k++) {
		s[k] = mt_alloc(&t, 0, 64);
		fill(&t, 0, s[k], 64, 100 + k);
	}
	CHECK_EQ(mt_send(&t, 0, 1, Q0, W(0, 1), s[0], 64, 0, 0), 0, "other tag");
	mt_run(&t);
	CHECK_EQ(mt_send(&t, 0, 1, Q0, W(0, 2), s[1], 64, 1, 0), 0, "oldest match");
	mt_run(&t);
	CHECK_EQ(mt_send(&t, 0, 1, Q0, W(0, 2), s[2], 64, 2, 0), 0, "newer match");
	mt_run(&t);
	CHECK_EQ(qstat_ueq(&t, 1, Q0), 3, "three unexpected");
	r = mt_alloc(&t, 1, 64);
	CHECK_EQ(mt_post(&t, 1, Q0, W(0, 2), 0, ANY, r, 64, 9, WEFT_MOPF_CR), 0, "post");
	mt_run(&t);
	REQUIRE(mt_cqe(&t, 1, &e));
	CHECK_EQ(e.type, WEFT_MCQE_MATCH_COPY, "matched from the UEQ, not added to the PRQ");
	CHECK(same(&t, 1, r, 0, s[1], 64), "the oldest matching message");
	CHECK_EQ(qstat_prq(&t, 1, Q0), 0, "not stored in the PRQ");
	CHECK_EQ(qstat_ueq(&t, 1, Q0), 2, "two left");
	t_checked("item 98: post matched the oldest unexpected message");
	mt_fini(&t);
}

/* 99: sends from one source that match the same receives are consumed
 * in arrival order, with many matchers each doing one compare per unit. */
static void item099(void)
{
	struct weft_sim_config cfg = { .matchers = 16, .match_step = 1, .seed = 99,
				       .faults = LOSSY };
	struct mt t;
	struct weft_match_cqe e;
	uint64_t s, r[32];
	unsigned int k, q;

	mt_init(&t, 2, &cfg);
	for (q = 0; q < 4; q++)
		mt_qcfg(&t, 1, q, ENABLE);
	/* A long PRQ of non-matching receives makes every search span
	 * many units while other queues' matchers run. */
	for (k = 0; k < 40; k++)
		CHECK_EQ(mt_post(&t, 1, Q0, W(0, 1000 + k), 0, ANY, 8, 8, 500 + k, 0), 0, "pad");
	for (k = 0; k < 16; k++)
		REQUIRE(mt_post(&t, 1, Q0, W(0, 5), 0, ANY, r[k] = mt_alloc(&t, 1, 8), 8, k, 0)
			== 0);
	s = mt_alloc(&t, 0, 8 * 32);
	for (k = 0; k < 32; k++) {
		uint64_t v = k;

		memcpy(mt_ptr(&t, 0, s + 8 * k, 8), &v, 8);
		REQUIRE(mt_send(&t, 0, 1, Q0, W(0, 5), s + 8 * k, 8, k, 0) == 0);
		/* Traffic on other queues keeps the other matchers busy. */
		REQUIRE(mt_send(&t, 0, 1, 1 + k % 3, W(0, 5), s, 8, 100, 0) == 0);
	}
	mt_run(&t);
	for (k = 16; k < 32; k++)
		REQUIRE(mt_post(&t, 1, Q0, W(0, 5), 0, ANY, r[k] = mt_alloc(&t, 1, 8), 8, k, 0)
			== 0);
	mt_run(&t);
	for (k = 0; k < 32; k++) {
		uint64_t v;

		REQUIRE(next_of(&t, 1, WEFT_MCQE_MATCH_COPY, &e), "completion %u", k);
		while (e.queue != Q0)
			REQUIRE(next_of(&t, 1, WEFT_MCQE_MATCH_COPY, &e));
		CHECK_EQ(e.match_id, k, "receives in posting order");
		memcpy(&v, mt_ptr(&t, 1, r[e.match_id], 8), 8);
		CHECK_EQ(v, k, "message k in receive k");
	}
	CHECK_EQ(mt_cnt(&t, 1, WEFT_CNT_M_MATCHES), 32, "each message matched once");
	CHECK_EQ(mt_cnt(&t, 1, WEFT_CNT_M_ARRIVALS), 64, "each message taken once");
	CHECK_EQ(mt_drain(&t, 0, WEFT_MCQE_SEND_DONE), 64, "each send completed once");
	CHECK(fabric_drops(&t) > 0, "the fabric lost frames");
	t_checked("item 99: 32 same-source messages consumed in order, 16 matchers, lossy fabric");
	mt_fini(&t);
}

/* 100: WC 00 exact; 01 any tag; 10 any rank; 11 both; and the per-entry
 * ignore mask. */
static void item100(void)
{
	static const struct {
		unsigned int wc;
		uint64_t ignore;
		unsigned int rank, tag;
		bool match;
	} cs[] = {
		{ 0, 0, 1, 5, true }, { 0, 0, 1, 6, false }, { 0, 0, 2, 5, false },
		{ 1, 0, 1, 6, true }, { 1, 0, 2, 6, false },
		{ 2, 0, 2, 5, true }, { 2, 0, 2, 6, false },
		{ 3, 0, 3, 9, true },
		{ 0, 0xff, 1, 0x5 ^ 0x80, true }, { 0, 0xff, 1, 0x105, false },
	};
	struct mt t;
	uint64_t s, r;
	unsigned int k;

	mt_init(&t, 2, NULL);
	s = mt_alloc(&t, 0, 8);
	r = mt_alloc(&t, 1, 8);
	for (k = 0; k < sizeof(cs) / sizeof(cs[0]); k++) {
		unsigned int q = k;
		uint64_t posted = WEFT_MW(cs[k].wc, CTX, 1, 5);
		uint64_t in = WEFT_MW(0, CTX, cs[k].rank, cs[k].tag);

		mt_qcfg(&t, 1, q, ENABLE);
		REQUIRE(mt_post(&t, 1, q, posted, cs[k].ignore, ANY, r, 8, k, 0) == 0);
		REQUIRE(mt_send(&t, 0, 1, q, in, s, 8, k, 0) == 0);
		mt_run(&t);
		CHECK((qstat_prq(&t, 1, q) == 0) == cs[k].match, "case %u: WC %u", k, cs[k].wc);
		CHECK((qstat_ueq(&t, 1, q) == 1) == !cs[k].match, "case %u: unexpected", k);
	}
	/* The descriptor's tag mask defines what WC tag hides. */
	mt_qcfg(&t, 1, 20, ENABLE);
	weft_sim_reg_write(t.s, 1, WEFT_REG_MATCH_QTAG(20), 0xff);
	REQUIRE(mt_post(&t, 1, 20, WEFT_MW(1, CTX, 1, 0x105), 0, ANY, r, 8, 1, 0) == 0);
	REQUIRE(mt_send(&t, 0, 1, 20, WEFT_MW(0, CTX, 1, 0x206), s, 8, 1, 0) == 0);
	mt_run(&t);
	CHECK_EQ(qstat_ueq(&t, 1, 20), 1, "tag bits outside QTAG still compared");
	t_checked("item 100: WC 00/01/10/11 and ignore masks, %zu cases",
		  sizeof(cs) / sizeof(cs[0]));
	mt_fini(&t);
}

/* 101: an all-zero match word never matches. */
static void item101(void)
{
	struct mt t;
	uint64_t s, r, st;
	uint8_t pkt[WEFT_WIRE_HDR_SIZE + sizeof(struct weft_match_whdr)];
	struct weft_wire_hdr *wh = (struct weft_wire_hdr *)pkt;
	struct weft_match_whdr *mh = (struct weft_match_whdr *)(pkt + WEFT_WIRE_HDR_SIZE);

	mt_init(&t, 2, NULL);
	mt_qcfg(&t, 1, Q0, ENABLE);
	s = mt_alloc(&t, 0, 8);
	r = mt_alloc(&t, 1, 8);
	st = mt_post(&t, 1, Q0, 0, 0, ANY, r, 8, 1, 0);
	CHECK_EQ(st & 0xffffffff, WEFT_CMD_EINVAL, "zero posted word refused");
	CHECK_EQ(st >> 32, WEFT_R_MATCH_ZERO_WORD, "reason");
	st = mt_post(&t, 1, Q0, WEFT_MW_WC_MASK, 0, ANY, r, 8, 1, 0);
	CHECK_EQ(st >> 32, WEFT_R_MATCH_ZERO_WORD, "WC bits alone are a zero word");
	CHECK_EQ(mt_send(&t, 0, 1, Q0, 0, s, 8, 1, 0) >> 32, WEFT_R_MATCH_ZERO_WORD,
		 "zero send refused");
	/* A wildcard-everything receive, then a forged zero word. */
	REQUIRE(mt_post(&t, 1, Q0, WEFT_MW(3, CTX, 0, 0), ~0ull, ANY, r, 8, 2, 0) == 0);
	memset(pkt, 0, sizeof(pkt));
	wh->version = WEFT_WIRE_VERSION;
	wh->type = WEFT_PKT_MATCH;
	wh->dst_node = 1;
	wh->src_node = 0;
	wh->length = sizeof(*mh);
	mh->op = WEFT_MWOP_EAGER;
	mh->flags = WEFT_MWF_SYN;       /* a sequence start: taken, then checked */
	mh->queue = Q0;
	REQUIRE(weft_core_receive(weft_sim_core(t.s, 1), pkt, sizeof(pkt)) == 0);
	mt_run(&t);
	CHECK_EQ(qstat_prq(&t, 1, Q0), 1, "the receive is still posted");
	CHECK_EQ(mt_cnt(&t, 1, WEFT_CNT_DROP(WEFT_R_MATCH_ZERO_WORD)), 3, "zero words counted");
	CHECK_EQ(mt_cnt(&t, 0, WEFT_CNT_DROP(WEFT_R_MATCH_ZERO_WORD)), 1, "at the sender too");
	CHECK_EQ(mt_cnt(&t, 1, WEFT_CNT_M_MATCHES), 0, "no match");
	/* The engine's rule itself, behind those entry checks. */
	CHECK(!weft_mw_match(0, WEFT_MW(3, CTX, 0, 0), ~0ull, WEFT_MW_TAG_MASK, WEFT_MW_RANK_MASK),
	      "rule: zero incoming word");
	CHECK(!weft_mw_match(W(0, 1), WEFT_MW_WC_MASK, ~0ull, WEFT_MW_TAG_MASK, WEFT_MW_RANK_MASK),
	      "rule: zero posted word");
	t_checked("item 101: all-zero words refused on post and send, never matched on the wire");
	mt_fini(&t);
}

/* A deterministic workload over several queues; returns a digest of the
 * per-queue completion sequences. */
static uint64_t workload(unsigned int matchers, unsigned int step, uint64_t seed)
{
	struct weft_sim_config cfg = { .matchers = matchers, .match_step = step };
	struct mt t;
	struct weft_match_cqe e;
	uint64_t s, r, rng = seed, digest[16] = { 0 }, d = 0;
	unsigned int k, q;

	mt_init(&t, 2, &cfg);
	for (q = 0; q < 16; q++)
		mt_qcfg(&t, 1, q, ENABLE);
	s = mt_alloc(&t, 0, 64);
	r = mt_alloc(&t, 1, 64);
	for (k = 0; k < 3000; k++) {
		unsigned int tag;

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		q = (unsigned int)(rng >> 33) % 16;
		tag = (unsigned int)(rng >> 40) % 6 + 1;
		if ((rng >> 20) & 1)
			REQUIRE(mt_post(&t, 1, q, WEFT_MW((rng >> 50) % 4 == 0 ? 1 : 0, CTX, 1, tag),
					0, ANY, r, 64, k, 0) == 0);
		else
			REQUIRE(mt_send(&t, 0, 1, q, WEFT_MW(0, CTX, 1, tag), s, 8, k, 0) == 0);
		if (k % 50 == 49)
			mt_run(&t);
		while (mt_cqe(&t, 1, &e))
			digest[e.queue] = digest[e.queue] * 1000003u ^
				(e.type | (uint64_t)e.match_id << 8 | e.match << 24);
		mt_drain(&t, 0, 0);
	}
	mt_run(&t);
	while (mt_cqe(&t, 1, &e))
		digest[e.queue] = digest[e.queue] * 1000003u ^
			(e.type | (uint64_t)e.match_id << 8 | e.match << 24);
	for (q = 0; q < 16; q++)
		d = d * 31 + digest[q] + qstat_prq(&t, 1, q) * 7 + qstat_ueq(&t, 1, q);
	mt_fini(&t);
	return d;
}

/* 102: several matchers on different queues give a serial run's result. */
static void item102(void)
{
	uint64_t serial = workload(1, 65536, 7);

	CHECK_EQ(workload(8, 1, 7), serial, "8 matchers, 1 compare per unit");
	CHECK_EQ(workload(64, 3, 7), serial, "64 matchers, 3 compares per unit");
	CHECK_EQ(workload(2, 2, 7), serial, "2 matchers");
	t_checked("item 102: 1, 2, 8 and 64 matchers give the serial result");
}

/* 103: with the UMB full, payloads go to host temporary buffers; a later
 * match gives COPY_COMPLETE, or NO_COPY with the buffer and receive id. */
static void item103(void)
{
	struct weft_sim_config cfg = { .umb_size = 256, .umb_frag = 128 };
	struct mt t;
	struct weft_match_cqe e;
	uint64_t s[4], pool[2], r[3];
	unsigned int k;

	mt_init(&t, 2, &cfg);
	mt_qcfg(&t, 1, Q0, ENABLE);
	for (k = 0; k < 2; k++) {
		pool[k] = mt_alloc(&t, 1, 512);
		CHECK_EQ(mt_simple(&t, 1, WEFT_MOP_POOL_ADD, Q0, 0, pool[k], 512, 0), 0, "pool");
	}
	for (k = 0; k < 4; k++) {
		s[k] = mt_alloc(&t, 0, 200);
		fill(&t, 0, s[k], 200, 30 + k);
		REQUIRE(mt_send(&t, 0, 1, Q0, W(0, 6), s[k], 200, k, 0) == 0);
		mt_run(&t);
	}
	CHECK_EQ(mt_cnt(&t, 1, WEFT_CNT_M_UMB_STORES), 1, "first in the UMB");
	CHECK_EQ(mt_cnt(&t, 1, WEFT_CNT_M_HOST_STORES), 2, "two in host buffers");
	CHECK_EQ(qstat_ueq(&t, 1, Q0), 3, "three unexpected");
	REQUIRE(next_of(&t, 0, WEFT_MCQE_NAK, &e), "fourth NAKed");
	CHECK_EQ(e.req_id, 3, "the fourth send");
	CHECK(e.flags & WEFT_MCQEF_RNR, "RNR");
	CHECK_EQ(e.status, WEFT_R_MATCH_NO_BUFFER, "reason");
	for (k = 0; k < 3; k++)
		r[k] = mt_alloc(&t, 1, 200);
	REQUIRE(mt_post(&t, 1, Q0, W(0, 6), 0, ANY, r[0], 200, 10, 0) == 0);
	REQUIRE(mt_post(&t, 1, Q0, W(0, 6), 0, ANY, r[1], 200, 11, 0) == 0);
	mt_run(&t);
	REQUIRE(next_of(&t, 1, WEFT_MCQE_MATCH_COPY, &e));
	CHECK(same(&t, 1, r[0], 0, s[0], 200), "UMB copy");
	REQUIRE(mt_cqe(&t, 1, &e));
	CHECK_EQ(e.type, WEFT_MCQE_COPY, "COPY_COMPLETE from a host buffer");
	CHECK_EQ(e.match_id, 11, "receive id");
	CHECK(same(&t, 1, r[1], 0, s[1], 200), "host copy");
	mt_qcfg(&t, 1, Q0, WEFT_QCFG(WEFT_QCFG_ENABLE | WEFT_QCFG_NO_COPY, 0, 0));
	REQUIRE(mt_post(&t, 1, Q0, W(0, 6), 0, ANY, r[2], 200, 12, 0) == 0);
	mt_run(&t);
	REQUIRE(mt_cqe(&t, 1, &e));
	CHECK_EQ(e.type, WEFT_MCQE_NO_COPY, "NO_COPY");
	CHECK_EQ(e.match_id, 12, "receive id");
	CHECK(e.addr == pool[0] || e.addr == pool[1], "pointer to a host buffer");
	CHECK(same(&t, 1, e.addr, 0, s[2], 200), "message at the pointer");
	t_checked("item 103: UMB full -> host buffers; COPY_COMPLETE and NO_COPY; RNR when none");
	mt_fini(&t);
}

/* 104: an overflowing queue stops, interrupts, RNR-NAKs until reset. */
static void item104(void)
{
	struct mt t;
	struct weft_match_cqe e;
	uint64_t s, r, st;
	unsigned int k;

	mt_init(&t, 2, NULL);
	mt_qcfg(&t, 1, Q0, WEFT_QCFG(WEFT_QCFG_ENABLE, 2, 0));
	mt_qcfg(&t, 1, 1, ENABLE);
	s = mt_alloc(&t, 0, 8);
	r = mt_alloc(&t, 1, 8);
	for (k = 0; k < 3; k++)
		REQUIRE(mt_post(&t, 1, Q0, W(0, 1), 0, ANY, r, 8, k, 0) == 0);
	mt_run(&t);
	REQUIRE(next_of(&t, 1, WEFT_MCQE_OP_ERROR, &e));
	CHECK_EQ(e.status, WEFT_R_MATCH_STORE_FULL, "third post overflowed");
	st = mt_reg(&t, 1, WEFT_REG_MATCH_QSTAT(Q0));
	CHECK(st & WEFT_QSTAT_STOPPED, "queue stopped");
	CHECK_EQ(mt_reg(&t, 1, WEFT_REG_MATCH_STOPPED0), 1, "STOPPED0 bit 0");
	CHECK_EQ(weft_sim_event_count(t.s, 1, WEFT_EV_MATCH_STOPPED), 1, "interrupt event");
	/* A matching arrival is refused while stopped. */
	REQUIRE(mt_send(&t, 0, 1, Q0, W(0, 1), s, 8, 50, 0) == 0);
	REQUIRE(mt_send(&t, 0, 1, 1, W(0, 1), s, 8, 51, 0) == 0);
	mt_run(&t);
	REQUIRE(next_of(&t, 0, WEFT_MCQE_NAK, &e));
	CHECK_EQ(e.req_id, 50, "NAKed send");
	CHECK(e.flags & WEFT_MCQEF_RNR, "RNR NAK");
	CHECK_EQ(e.status, WEFT_R_MATCH_STOPPED, "reason");
	CHECK_EQ(qstat_prq(&t, 1, Q0), 2, "receives kept");
	CHECK_EQ(qstat_ueq(&t, 1, 1), 1, "other queue unaffected");
	weft_sim_reg_write(t.s, 1, WEFT_REG_MATCH_QSTAT(Q0), WEFT_QSTAT_STOPPED);
	CHECK(!(mt_reg(&t, 1, WEFT_REG_MATCH_QSTAT(Q0)) & WEFT_QSTAT_STOPPED), "reset");
	REQUIRE(mt_send(&t, 0, 1, Q0, W(0, 1), s, 8, 52, 0) == 0);
	mt_run(&t);
	CHECK(next_of(&t, 1, WEFT_MCQE_MATCH_COPY, &e), "matching again after reset");
	t_checked("item 104: overflow stopped the queue, event raised, RNR NAK until reset");
	mt_fini(&t);
}

/* 105: a too-small buffer: NAK (remote operational error) or truncation,
 * per queue. */
static void item105(void)
{
	struct mt t;
	struct weft_match_cqe e;
	uint64_t s, r;
	uint8_t *p;

	mt_init(&t, 2, NULL);
	mt_qcfg(&t, 1, 0, ENABLE);
	mt_qcfg(&t, 1, 1, WEFT_QCFG(WEFT_QCFG_ENABLE | WEFT_QCFG_TRUNCATE, 0, 0));
	s = mt_alloc(&t, 0, 200);
	fill(&t, 0, s, 200, 4);
	r = mt_alloc(&t, 1, 256);
	p = mt_ptr(&t, 1, r, 256);
	memset(p, 0xee, 256);
	REQUIRE(mt_post(&t, 1, 0, W(0, 1), 0, ANY, r, 100, 1, 0) == 0);
	REQUIRE(mt_send(&t, 0, 1, 0, W(0, 1), s, 200, 7, 0) == 0);
	mt_run(&t);
	REQUIRE(next_of(&t, 1, WEFT_MCQE_MATCH_COPY, &e));
	CHECK_EQ(e.status, WEFT_R_MATCH_TOO_SMALL, "receiver error completion");
	CHECK_EQ(e.written, 0, "nothing written");
	CHECK_EQ(p[0], 0xee, "buffer untouched");
	REQUIRE(next_of(&t, 0, WEFT_MCQE_NAK, &e));
	CHECK_EQ(e.status, WEFT_R_MATCH_TOO_SMALL, "NAK remote operational error");
	CHECK(!(e.flags & WEFT_MCQEF_RNR), "not RNR");
	REQUIRE(mt_post(&t, 1, 1, W(0, 1), 0, ANY, r, 100, 2, 0) == 0);
	REQUIRE(mt_send(&t, 0, 1, 1, W(0, 1), s, 200, 8, 0) == 0);
	mt_run(&t);
	REQUIRE(next_of(&t, 1, WEFT_MCQE_MATCH_COPY, &e));
	CHECK_EQ(e.status, 0, "truncated is success");
	CHECK(e.flags & WEFT_MCQEF_TRUNCATED, "truncated flag");
	CHECK_EQ(e.written, 100, "written up to the buffer");
	CHECK_EQ(e.length, 200, "message length");
	CHECK(same(&t, 1, r, 0, s, 100), "first 100 bytes");
	CHECK_EQ(p[100], 0xee, "nothing beyond the buffer");
	CHECK(!next_of(&t, 0, WEFT_MCQE_NAK, &e), "no NAK");
	t_checked("item 105: NAK mode and truncate mode");
	mt_fini(&t);
}

/* 106: CR = 1 gives a completion with the Req Compl ID on PRQ add. */
static void item106(void)
{
	struct mt t;
	struct weft_match_cqe e;
	uint64_t r;

	mt_init(&t, 1, NULL);
	mt_qcfg(&t, 0, Q0, ENABLE);
	r = mt_alloc(&t, 0, 8);
	REQUIRE(mt_post(&t, 0, Q0, W(0, 1), 0, ANY, r, 8, 0x1234, WEFT_MOPF_CR) == 0);
	REQUIRE(mt_post(&t, 0, Q0, W(0, 2), 0, ANY, r, 8, 0x5678, 0) == 0);
	mt_run(&t);
	REQUIRE(mt_cqe(&t, 0, &e));
	CHECK_EQ(e.type, WEFT_MCQE_POSTED, "CR completion");
	CHECK_EQ(e.req_id, 0x1234, "Req Compl ID");
	CHECK(!mt_cqe(&t, 0, &e), "CR = 0: none");
	CHECK_EQ(qstat_prq(&t, 0, Q0), 2, "both posted");
	t_checked("item 106: CR=1 completion with Req Compl ID, CR=0 none");
	mt_fini(&t);
}

/* 107: remove posted receive; a later matching send goes to the UEQ. */
static void item107(void)
{
	struct mt t;
	struct weft_match_cqe e;
	uint64_t r, s;

	mt_init(&t, 2, NULL);
	mt_qcfg(&t, 1, Q0, ENABLE);
	r = mt_alloc(&t, 1, 8);
	s = mt_alloc(&t, 0, 8);
	REQUIRE(mt_post(&t, 1, Q0, W(0, 1), 0, ANY, r, 8, 31, 0) == 0);
	REQUIRE(mt_simple(&t, 1, WEFT_MOP_REMOVE, Q0, 0, 0, 0, 31) == 0);
	REQUIRE(mt_simple(&t, 1, WEFT_MOP_REMOVE, Q0, 0, 0, 0, 99) == 0);
	mt_run(&t);
	REQUIRE(mt_cqe(&t, 1, &e));
	CHECK_EQ(e.type, WEFT_MCQE_REMOVED, "removed");
	CHECK_EQ(e.status, 0, "found");
	CHECK_EQ(e.match_id, 31, "id");
	REQUIRE(mt_cqe(&t, 1, &e));
	CHECK_EQ(e.status, WEFT_R_MATCH_NOT_FOUND, "unknown id");
	REQUIRE(mt_send(&t, 0, 1, Q0, W(0, 1), s, 8, 1, 0) == 0);
	mt_run(&t);
	CHECK_EQ(qstat_ueq(&t, 1, Q0), 1, "send went to the UEQ");
	CHECK_EQ(mt_cnt(&t, 1, WEFT_CNT_M_MATCHES), 0, "no match");
	t_checked("item 107: removal doorbell deleted the entry");
	mt_fini(&t);
}

#define SW WEFT_QCFG(WEFT_QCFG_ENABLE | WEFT_QCFG_SW_UEQ, 0, 0)

/* 108: software-UEQ mode: after SYNC no new unexpected entries are
 * delivered until the posted receive lands. */
static void item108(void)
{
	struct mt t;
	struct weft_match_cqe e;
	uint64_t s, r, pool;

	mt_init(&t, 2, NULL);
	mt_qcfg(&t, 1, Q0, SW);
	pool = mt_alloc(&t, 1, 4096);
	REQUIRE(mt_simple(&t, 1, WEFT_MOP_POOL_ADD, Q0, 0, pool, 1024, 0) == 0);
	REQUIRE(mt_simple(&t, 1, WEFT_MOP_POOL_ADD, Q0, 0, pool + 1024, 1024, 0) == 0);
	s = mt_alloc(&t, 0, 64);
	fill(&t, 0, s, 64, 8);
	r = mt_alloc(&t, 1, 64);
	REQUIRE(mt_send(&t, 0, 1, Q0, W(0, 1), s, 64, 1, 0) == 0);
	mt_run(&t);
	REQUIRE(mt_cqe(&t, 1, &e));
	CHECK_EQ(e.type, WEFT_MCQE_UNEXPECTED, "unexpected delivered to software");
	CHECK_EQ(e.seq, 1, "seq 1");
	CHECK(same(&t, 1, e.addr, 0, s, 64), "in a host buffer");
	/* Software searched its UEQ: sync, then a message races the post. */
	REQUIRE(mt_simple(&t, 1, WEFT_MOP_SYNC, Q0, 0, 0, 0, 5) == 0);
	mt_run(&t);
	REQUIRE(mt_cqe(&t, 1, &e));
	CHECK_EQ(e.type, WEFT_MCQE_SYNC, "sync acknowledged");
	CHECK_EQ(e.seq, 1, "unexpected count at sync");
	CHECK(mt_reg(&t, 1, WEFT_REG_MATCH_QSTAT(Q0)) & WEFT_QSTAT_SYNC, "sync bit");
	REQUIRE(mt_send(&t, 0, 1, Q0, W(0, 2), s, 64, 2, 0) == 0);
	mt_run(&t);
	CHECK(!mt_cqe(&t, 1, &e), "no unexpected entry while synced");
	REQUIRE(mt_post(&t, 1, Q0, W(0, 2), 0, ANY, r, 64, 70, 0) == 0);
	mt_run(&t);
	REQUIRE(mt_cqe(&t, 1, &e));
	CHECK_EQ(e.type, WEFT_MCQE_MATCH_COPY, "the racing message matched the post");
	CHECK_EQ(e.match_id, 70, "id");
	CHECK(same(&t, 1, r, 0, s, 64), "bytes");
	CHECK(!(mt_reg(&t, 1, WEFT_REG_MATCH_QSTAT(Q0)) & WEFT_QSTAT_SYNC), "sync over");
	/* Control: without sync, the same race makes it unexpected. */
	REQUIRE(mt_send(&t, 0, 1, Q0, W(0, 3), s, 64, 3, 0) == 0);
	mt_run(&t);
	REQUIRE(mt_cqe(&t, 1, &e));
	CHECK_EQ(e.type, WEFT_MCQE_UNEXPECTED, "unsynced race: unexpected");
	t_checked("item 108: sync held the racing arrival until the post landed");
	mt_fini(&t);
}

/* n unexpected messages with tag from node 0 to node 1's queue 0. */
static void unexpected(struct mt *t, uint64_t s, unsigned int tag, unsigned int n)
{
	unsigned int k;

	for (k = 0; k < n; k++)
		REQUIRE(mt_send(t, 0, 1, Q0, W(0, tag), s, 8, tag, 0) == 0);
	mt_run(t);
	mt_drain(t, 1, 0);
}

/* An optimistic post with CR on node 1; returns its completion. */
static struct weft_match_cqe optimistic(struct mt *t, uint64_t r, uint64_t match,
					uint32_t seen, uint32_t req_id)
{
	struct weft_match_op op;
	struct weft_match_cqe e;

	memset(&op, 0, sizeof(op));
	op.opcode = WEFT_MOP_POST;
	op.flags = WEFT_MOPF_OPTIMISTIC | WEFT_MOPF_CR;
	op.queue = Q0;
	op.node = ANY;
	op.addr = r;
	op.len = 8;
	op.match = match;
	op.seen = seen;
	op.req_id = req_id;
	REQUIRE(mt_op(t, 1, &op) == 0);
	mt_run(t);
	REQUIRE(mt_cqe(t, 1, &e));
	return e;
}

/* 109: optimistic post tagged with the last unexpected seq seen. */
static void item109(void)
{
	struct mt t;
	struct weft_match_cqe e;
	uint64_t s, r, pool;
	unsigned int k;

	mt_init(&t, 2, NULL);
	mt_qcfg(&t, 1, Q0, SW);
	pool = mt_alloc(&t, 1, 64 * 32);
	for (k = 0; k < 32; k++)
		REQUIRE(mt_simple(&t, 1, WEFT_MOP_POOL_ADD, Q0, 0, pool + 64 * k, 64, 0) == 0);
	s = mt_alloc(&t, 0, 8);
	r = mt_alloc(&t, 1, 8);
	unexpected(&t, s, 1, 1);
	/* Current tag: accepted. */
	e = optimistic(&t, r, W(0, 10), 1, 1);
	CHECK_EQ(e.type, WEFT_MCQE_POSTED, "current tag accepted");
	/* A newer unexpected entry that does not match: the CAM clears it. */
	unexpected(&t, s, 2, 1);
	e = optimistic(&t, r, W(0, 11), 1, 2);
	CHECK_EQ(e.type, WEFT_MCQE_POSTED, "stale tag cleared by the CAM");
	/* A newer unexpected entry that matches: rejected. */
	e = optimistic(&t, r, W(0, 2), 1, 3);
	CHECK_EQ(e.type, WEFT_MCQE_OP_ERROR, "conflicting stale post rejected");
	CHECK_EQ(e.status, WEFT_R_MATCH_STALE_POST, "reason");
	CHECK_EQ(e.req_id, 3, "id");
	/* Beyond the CAM: rejected. */
	unexpected(&t, s, 3, WEFT_MATCH_CAM + 1);
	e = optimistic(&t, r, W(0, 12), 2, 4);
	CHECK_EQ(e.status, WEFT_R_MATCH_STALE_POST, "older than the CAM: rejected");
	CHECK_EQ(qstat_prq(&t, 1, Q0), 2, "two accepted posts");
	t_checked("item 109: optimistic posts accepted, CAM-cleared and rejected");
	mt_fini(&t);
}

static void rndv(bool matched, bool large)
{
	struct weft_sim_config cfg = { .rndv_threshold = 8192, .seed = 110 + matched * 2 + large,
				       .faults = LOSSY };

	cfg.faults.drop_ppm = 250000;   /* a short exchange: lose a quarter */
	struct mt t;
	struct weft_match_cqe e;
	uint32_t len = large ? 50000 : 6000;
	uint64_t s, r;
	uint64_t rx_ops;

	mt_init(&t, 2, &cfg);
	mt_qcfg(&t, 1, Q0, ENABLE);
	s = mt_alloc(&t, 0, len);
	fill(&t, 0, s, len, len);
	r = mt_alloc(&t, 1, len);
	if (matched)
		REQUIRE(mt_post(&t, 1, Q0, W(0, 1), 0, ANY, r, len, 3, 0) == 0);
	mt_run(&t);
	rx_ops = mt_cnt(&t, 1, WEFT_CNT_M_OPS);
	REQUIRE(mt_send(&t, 0, 1, Q0, W(0, 1), s, len, 9, 0) == 0);
	mt_run(&t);
	if (!matched) {
		REQUIRE(mt_cqe(&t, 0, &e));
		CHECK_EQ(e.type, WEFT_MCQE_SEND_PENDING, "sender pending");
		CHECK_EQ(e.status, large ? WEFT_MACK_NOT_FOUND : WEFT_MACK_PENDING, "ack kind");
		CHECK_EQ(qstat_ueq(&t, 1, Q0), 1, "request on the UEQ");
		REQUIRE(mt_post(&t, 1, Q0, W(0, 1), 0, ANY, r, len, 3, 0) == 0);
		rx_ops = mt_cnt(&t, 1, WEFT_CNT_M_OPS);
		mt_run(&t);
	}
	if (large) {
		REQUIRE(mt_cqe(&t, 0, &e));
		CHECK_EQ(e.type, matched ? WEFT_MCQE_RNDV_MATCHED : WEFT_MCQE_RNDV_CTS,
			 "sender software gets the target");
		CHECK_EQ(e.written, len, "accepted size");
		CHECK(!mt_cqe(&t, 1, &e), "receiver not complete yet");
		REQUIRE(mt_simple(&t, 0, WEFT_MOP_RNDV_PUT, Q0, 0, 0, 0, e.seq) == 0);
		mt_run(&t);
	}
	REQUIRE(mt_cqe(&t, 1, &e));
	CHECK_EQ(e.type, WEFT_MCQE_MATCH_COPY, "receiver match completion");
	CHECK(e.flags & WEFT_MCQEF_RNDV, "rendezvous");
	CHECK_EQ(e.match_id, 3, "id");
	CHECK_EQ(e.written, len, "written");
	CHECK(same(&t, 1, r, 0, s, len), "bytes");
	REQUIRE(next_of(&t, 0, WEFT_MCQE_SEND_DONE, &e));
	CHECK_EQ(e.req_id, 9, "sender complete");
	CHECK_EQ(e.status, 0, "without error");
	CHECK(!mt_cqe(&t, 0, &e) && !mt_cqe(&t, 1, &e), "no second completion");
	CHECK_EQ(mt_cnt(&t, 1, WEFT_CNT_M_OPS), rx_ops, "no receiver operation after the post");
	CHECK_EQ(mt_cnt(&t, 1, WEFT_CNT_M_RNDV), 1, "one rendezvous at the receiver");
	CHECK(fabric_drops(&t) > 0, "the fabric lost frames");
	mt_fini(&t);
}

/* 110: rendezvous matched at once, small (hardware writes) and large
 * (software writes after the ack). */
static void item110(void)
{
	rndv(true, false);
	rndv(true, true);
	t_checked("item 110: matched rendezvous, small and large");
}

/* 111: rendezvous unmatched: queued, then pulled (small) or the buffer
 * address sent (large) when a receive is posted. */
static void item111(void)
{
	rndv(false, false);
	rndv(false, true);
	t_checked("item 111: unmatched rendezvous, small (pull) and large (CTS)");
}

/* 112: a dump writes the selected queue's headers in order. */
static void item112(void)
{
	struct mt t;
	struct weft_match_cqe e;
	struct weft_match_dump d[8];
	uint64_t r, s, buf;
	unsigned int k;

	mt_init(&t, 2, NULL);
	mt_qcfg(&t, 1, Q0, ENABLE);
	r = mt_alloc(&t, 1, 8);
	s = mt_alloc(&t, 0, 8);
	buf = mt_alloc(&t, 1, sizeof(d));
	for (k = 0; k < 5; k++)
		REQUIRE(mt_post(&t, 1, Q0, W(0, 100 + k), 0, ANY, r, 8, 200 + k, 0) == 0);
	for (k = 0; k < 3; k++)
		REQUIRE(mt_send(&t, 0, 1, Q0, W(0, 300 + k), s, 8, k, 0) == 0);
	mt_run(&t);
	REQUIRE(mt_simple(&t, 1, WEFT_MOP_DUMP, Q0, 0, buf, 4 * 32, 1) == 0);
	mt_run(&t);
	REQUIRE(mt_cqe(&t, 1, &e));
	CHECK_EQ(e.type, WEFT_MCQE_DUMP, "dump done");
	CHECK_EQ(e.length, 4, "bounded by the buffer");
	memcpy(d, mt_ptr(&t, 1, buf, sizeof(d)), sizeof(d));
	for (k = 0; k < 4; k++) {
		CHECK_EQ(d[k].id, 200 + k, "PRQ in order");
		CHECK_EQ(d[k].match, W(0, 100 + k), "word");
		CHECK_EQ(d[k].kind, WEFT_MDUMP_POSTED, "kind");
	}
	REQUIRE(mt_simple(&t, 1, WEFT_MOP_DUMP, Q0, WEFT_MOPF_UEQ, buf, sizeof(d), 2) == 0);
	mt_run(&t);
	REQUIRE(mt_cqe(&t, 1, &e));
	CHECK_EQ(e.length, 3, "UEQ entries");
	memcpy(d, mt_ptr(&t, 1, buf, sizeof(d)), sizeof(d));
	for (k = 0; k < 3; k++) {
		CHECK_EQ(d[k].match, W(0, 300 + k), "UEQ in order");
		CHECK_EQ(d[k].kind, WEFT_MDUMP_UMB, "in the UMB");
		CHECK_EQ(d[k].node, 0, "source");
	}
	t_checked("item 112: PRQ and UEQ dumped in order");
	mt_fini(&t);
}

/* QUERY_HQ (hw-spec 17.4) of node's queue q: status, response in *r. */
static int hq_query(struct mt *t, unsigned int node, uint32_t q, uint64_t addr, uint32_t len,
		    uint32_t flags, struct weft_vcmd_resp *r)
{
	struct weft_vcmd k = { .op = WEFT_VCMD_QUERY_HQ, .handle = q };

	k.u.hq.addr = addr;
	k.u.hq.len = len;
	k.u.hq.flags = flags;
	memset(r, 0, sizeof(*r));
	return wsv_cmd(t->s, node, &k, r);
}

/* The synchronous dump of native queues: PRQ (a claim-flag entry among
 * them) and UEQ in list order, written before the command returns, with
 * no completion; at most WEFT_MATCH_QUERY_MAX entries whatever the
 * buffer; a stopped queue says so. */
static void query_hq(void)
{
	enum { BIG = WEFT_MATCH_QUERY_MAX + 76 };
	struct mt t;
	struct weft_match_op op;
	struct weft_match_dump d[8], last;
	struct weft_vcmd_resp r;
	uint64_t rb, s, buf, big, flag, prod;
	unsigned int k;
	int st;

	mt_init(&t, 2, NULL);
	mt_qcfg(&t, 1, Q0, ENABLE);
	mt_qcfg(&t, 1, 1, ENABLE);
	rb = mt_alloc(&t, 1, 8);
	s = mt_alloc(&t, 0, 8);
	flag = mt_alloc(&t, 1, 8);
	buf = mt_alloc(&t, 1, sizeof(d));
	big = mt_alloc(&t, 1, (BIG + 1) * sizeof(d[0]));
	for (k = 0; k < 3; k++)
		REQUIRE(mt_post(&t, 1, Q0, W(0, 100 + k), 0xff00, 1, rb, 8, 200 + k, 0) == 0);
	memset(&op, 0, sizeof(op));
	op.opcode = WEFT_MOP_POST;
	op.flags = WEFT_MOPF_MULTI;
	op.queue = Q0;
	op.match = W(0, 103);
	op.node = ANY;
	op.addr = rb;
	op.len = 8;
	op.match_id = 203;
	op.claim = flag;
	REQUIRE(mt_op(&t, 1, &op) == 0);
	for (k = 0; k < 2; k++)
		REQUIRE(mt_send(&t, 0, 1, Q0, W(0, 300 + k), s, 8, k, 0) == 0);
	mt_run(&t);
	prod = mt_reg(&t, 1, WEFT_REG_MATCH_CQ_PROD);
	st = hq_query(&t, 1, Q0, buf, sizeof(d), 0, &r);
	REQUIRE(st == WEFT_CMD_OK, "PRQ: %d", st);
	CHECK_EQ(r.out[0], 4, "PRQ entries written");
	CHECK_EQ(r.out[1], 4, "PRQ entries listed");
	CHECK_EQ(r.out[2], 0, "native, running");
	memcpy(d, mt_ptr(&t, 1, buf, sizeof(d)), sizeof(d));
	for (k = 0; k < 4; k++) {
		CHECK_EQ(d[k].kind, WEFT_MDUMP_POSTED, "kind");
		CHECK_EQ(d[k].id, 200 + k, "PRQ in order");
		CHECK_EQ(d[k].match, W(0, 100 + k), "word");
		CHECK_EQ(d[k].ignore, k < 3 ? 0xff00 : 0, "ignore mask");
		CHECK_EQ(d[k].node, k < 3 ? 1 : ANY, "source filter");
		CHECK_EQ(d[k].flags, k < 3 ? 0 : WEFT_MDUMPF_MULTI, "claim flag");
	}
	st = hq_query(&t, 1, Q0, buf, sizeof(d), WEFT_HQF_UEQ, &r);
	REQUIRE(st == WEFT_CMD_OK, "UEQ: %d", st);
	CHECK(r.out[0] == 2 && r.out[1] == 2, "UEQ entries %llu", (unsigned long long)r.out[0]);
	memcpy(d, mt_ptr(&t, 1, buf, sizeof(d)), sizeof(d));
	for (k = 0; k < 2; k++) {
		CHECK_EQ(d[k].kind, WEFT_MDUMP_UMB, "in the UMB");
		CHECK_EQ(d[k].match, W(0, 300 + k), "UEQ in order");
		CHECK_EQ(d[k].len, 8, "message bytes");
		CHECK_EQ(d[k].node, 0, "source");
	}
	CHECK_EQ(mt_reg(&t, 1, WEFT_REG_MATCH_CQ_PROD), prod, "no completion written");
	/* A queue longer than a command's bound: the first 1024 only, even
	 * with room for more. */
	for (k = 0; k < BIG; k++) {
		REQUIRE(mt_post(&t, 1, 1, W(0, 1 + k), 0, ANY, rb, 8, k, 0) == 0, "post %u", k);
		if (k % 128 == 127)
			mt_run(&t);
	}
	mt_run(&t);
	memset(mt_ptr(&t, 1, big, (BIG + 1) * sizeof(d[0])), 0xee, (BIG + 1) * sizeof(d[0]));
	st = hq_query(&t, 1, 1, big, (BIG + 1) * sizeof(d[0]), 0, &r);
	REQUIRE(st == WEFT_CMD_OK, "long PRQ: %d", st);
	CHECK_EQ(r.out[0], WEFT_MATCH_QUERY_MAX, "entries written");
	CHECK_EQ(r.out[1], BIG, "entries listed");
	memcpy(&last, mt_ptr(&t, 1, big + (WEFT_MATCH_QUERY_MAX - 1) * sizeof(last), sizeof(last)),
	       sizeof(last));
	CHECK_EQ(last.id, WEFT_MATCH_QUERY_MAX - 1, "entry 1023");
	memcpy(&last, mt_ptr(&t, 1, big + WEFT_MATCH_QUERY_MAX * sizeof(last), sizeof(last)),
	       sizeof(last));
	CHECK_EQ(last.match, 0xeeeeeeeeeeeeeeeeull, "nothing past entry 1023");
	/* A stopped queue (quota 1, second post) keeps its list and says so. */
	mt_qcfg(&t, 1, 2, WEFT_QCFG(WEFT_QCFG_ENABLE, 1, 0));
	REQUIRE(mt_post(&t, 1, 2, W(0, 7), 0, ANY, rb, 8, 70, 0) == 0);
	REQUIRE(mt_post(&t, 1, 2, W(0, 8), 0, ANY, rb, 8, 71, 0) == 0);
	mt_run(&t);
	st = hq_query(&t, 1, 2, buf, sizeof(d), 0, &r);
	CHECK(st == WEFT_CMD_OK && r.out[0] == 1 && r.out[2] == WEFT_HQS_STOPPED,
	      "stopped queue: %d %llu 0x%llx", st, (unsigned long long)r.out[0],
	      (unsigned long long)r.out[2]);
	CHECK_EQ(mt_cnt(&t, 1, WEFT_CNT_M_DUMPS), 4, "M_DUMPS");
	t_checked("QUERY_HQ: native PRQ (4, one with a claim flag) and UEQ (2 in the UMB) in list order, no completion; %u listed, %u written; a stopped queue flagged",
		  BIG, WEFT_MATCH_QUERY_MAX);
	mt_fini(&t);
}

/* 113: header-store capacity moves between queues and between PRQ and
 * UEQ without losing entries. */
static void item113(void)
{
	struct weft_sim_config cfg = { .match_store = 8 * WEFT_MATCH_HDR_BYTES };
	struct mt t;
	struct weft_match_cqe e;
	struct weft_match_dump d[8];
	uint64_t r, s, buf;
	unsigned int k;

	mt_init(&t, 2, &cfg);
	mt_qcfg(&t, 1, 0, ENABLE);
	mt_qcfg(&t, 1, 1, ENABLE);
	r = mt_alloc(&t, 1, 8);
	s = mt_alloc(&t, 0, 8);
	buf = mt_alloc(&t, 1, sizeof(d));
	CHECK_EQ(WEFT_MATCH_CAPS_STORE(mt_reg(&t, 1, WEFT_REG_MATCH_CAPS)), 8, "8 entries");
	/* Queue 0 takes six, queue 1 two: the whole store. */
	for (k = 0; k < 6; k++)
		REQUIRE(mt_post(&t, 1, 0, W(0, k + 1), 0, ANY, r, 8, k, 0) == 0);
	for (k = 0; k < 2; k++)
		REQUIRE(mt_post(&t, 1, 1, W(0, k + 1), 0, ANY, r, 8, 10 + k, 0) == 0);
	mt_run(&t);
	CHECK_EQ(mt_reg(&t, 1, WEFT_REG_MATCH_STORE_FREE), 0, "store full");
	/* Queue 0 gives back four (matched); queue 1's UEQ uses them. */
	for (k = 0; k < 4; k++)
		REQUIRE(mt_send(&t, 0, 1, 0, W(0, k + 1), s, 8, k, 0) == 0);
	mt_run(&t);
	for (k = 0; k < 4; k++)
		REQUIRE(mt_send(&t, 0, 1, 1, W(0, 50 + k), s, 8, k, 0) == 0);
	mt_run(&t);
	CHECK_EQ(qstat_ueq(&t, 1, 1), 4, "queue 1's UEQ grew into the freed space");
	CHECK_EQ(mt_reg(&t, 1, WEFT_REG_MATCH_STORE_FREE), 0, "store full again");
	CHECK_EQ(mt_reg(&t, 1, WEFT_REG_MATCH_STOPPED0), 0, "no queue stopped");
	/* A quota below the occupancy keeps every entry but takes no more. */
	mt_qcfg(&t, 1, 1, WEFT_QCFG(WEFT_QCFG_ENABLE, 1, 1));
	mt_drain(&t, 1, 0);
	REQUIRE(mt_simple(&t, 1, WEFT_MOP_DUMP, 1, WEFT_MOPF_UEQ, buf, sizeof(d), 1) == 0);
	REQUIRE(mt_simple(&t, 1, WEFT_MOP_DUMP, 0, 0, buf + 4 * 32, 4 * 32, 2) == 0);
	mt_run(&t);
	REQUIRE(mt_cqe(&t, 1, &e) && e.type == WEFT_MCQE_DUMP);
	CHECK_EQ(e.length, 4, "queue 1 UEQ: 4 entries");
	REQUIRE(mt_cqe(&t, 1, &e) && e.type == WEFT_MCQE_DUMP);
	CHECK_EQ(e.length, 2, "queue 0 PRQ: 2 entries");
	memcpy(d, mt_ptr(&t, 1, buf, sizeof(d)), sizeof(d));
	for (k = 0; k < 4; k++)
		CHECK_EQ(d[k].match, W(0, 50 + k), "UEQ entry kept");
	CHECK_EQ(d[4].id, 4, "PRQ entry kept");
	CHECK_EQ(d[5].id, 5, "PRQ entry kept");
	CHECK_EQ(qstat_prq(&t, 1, 1), 2, "queue 1 PRQ kept");
	/* With room in the store, the lowered quota still refuses. */
	REQUIRE(mt_simple(&t, 1, WEFT_MOP_REMOVE, 0, 0, 0, 0, 5) == 0);
	mt_run(&t);
	mt_drain(&t, 1, 0);
	CHECK_EQ(mt_reg(&t, 1, WEFT_REG_MATCH_STORE_FREE), 1, "one entry free");
	REQUIRE(mt_post(&t, 1, 1, W(0, 9), 0, ANY, r, 8, 20, 0) == 0);
	mt_run(&t);
	REQUIRE(mt_cqe(&t, 1, &e));
	CHECK_EQ(e.type, WEFT_MCQE_OP_ERROR, "quota refuses");
	CHECK_EQ(e.status, WEFT_R_MATCH_STORE_FULL, "reason");
	CHECK_EQ(mt_reg(&t, 1, WEFT_REG_MATCH_STORE_FREE), 1, "entry still free");
	t_checked("item 113: store reassigned between queues and lists, no entry lost");
	mt_fini(&t);
}

/* A peer that stops answering: after the bounded resends every send to
 * it and every slot shared with it end in a MATCH_PEER_DEAD completion,
 * nothing stays held, and the peer is reached again once it is back. */
static void dead_peer(void)
{
	struct weft_sim_config cfg = { .rndv_threshold = 8192 };
	struct mt t;
	struct weft_match_cqe e;
	struct weft_fabric *f;
	uint64_t s, s1, r, t0;
	unsigned int k;

	mt_init(&t, 3, &cfg);
	f = weft_sim_fabric(t.s);
	mt_qcfg(&t, 1, Q0, ENABLE);
	mt_qcfg(&t, 2, Q0, ENABLE);
	s = mt_alloc(&t, 0, 6000);
	s1 = mt_alloc(&t, 1, 6000);
	r = mt_alloc(&t, 2, 6000);
	/* Node 2 holds a small rendezvous of node 1 unmatched (PENDING). */
	REQUIRE(mt_send(&t, 1, 2, Q0, W(1, 9), s1, 6000, 50, 0) == 0);
	mt_run(&t);
	REQUIRE(mt_cqe(&t, 1, &e) && e.type == WEFT_MCQE_SEND_PENDING);
	/* Node 1 leaves the fabric. */
	weft_fabric_set_port_up(f, 1, false);
	t0 = weft_sim_now(t.s);
	for (k = 0; k < 4; k++)
		REQUIRE(mt_send(&t, 0, 1, Q0, W(0, 1), s, 8, k, 0) == 0);
	REQUIRE(mt_send(&t, 0, 1, Q0, W(0, 1), s, 6000, 4, 0) == 0);
	/* Node 2's post matches the request: its PULL finds no one. */
	REQUIRE(mt_post(&t, 2, Q0, W(1, 9), 0, ANY, r, 6000, 77, 0) == 0);
	mt_run(&t);
	CHECK(weft_sim_now(t.s) - t0 >= WEFT_MATCH_RTO_NS * WEFT_MATCH_RETRIES,
	      "given up only after the resends");
	for (k = 0; k < 5; k++) {
		REQUIRE(next_of(&t, 0, WEFT_MCQE_SEND_DONE, &e), "send %u completed", k);
		CHECK_EQ(e.req_id, k, "in order");
		CHECK_EQ(e.status, WEFT_R_MATCH_PEER_DEAD, "peer dead");
		CHECK_EQ(!!(e.flags & WEFT_MCQEF_RNDV), k == 4, "rendezvous slot freed");
	}
	CHECK(!mt_cqe(&t, 0, &e), "each once");
	REQUIRE(mt_cqe(&t, 2, &e));
	CHECK_EQ(e.type, WEFT_MCQE_MATCH_COPY, "receiver slot completed");
	CHECK_EQ(e.match_id, 77, "the posted receive");
	CHECK_EQ(e.status, WEFT_R_MATCH_PEER_DEAD, "with the dead-peer status");
	CHECK(!mt_cqe(&t, 2, &e), "once");
	CHECK_EQ(mt_cnt(&t, 0, WEFT_CNT_DROP(WEFT_R_MATCH_PEER_DEAD)), 1, "counted at node 0");
	CHECK_EQ(mt_cnt(&t, 2, WEFT_CNT_DROP(WEFT_R_MATCH_PEER_DEAD)), 1, "counted at node 2");
	/* Nothing held: every rendezvous slot takes a new send at once. */
	for (k = 0; k < WEFT_MATCH_RNDV_SLOTS; k++)
		CHECK_EQ(mt_send(&t, 0, 2, Q0, W(0, 3), s, 6000, 100 + k, 0), 0, "slot free");
	CHECK_EQ(mt_send(&t, 0, 2, Q0, W(0, 3), s, 6000, 999, 0) >> 32, WEFT_R_MATCH_RNDV_SLOT,
		 "and no more");
	mt_run(&t);
	mt_drain(&t, 0, 0);
	/* Back on the fabric: the sequence restarts and sends get through. */
	weft_fabric_set_port_up(f, 1, true);
	fill(&t, 0, s, 8, 3);
	r = mt_alloc(&t, 1, 8);
	REQUIRE(mt_post(&t, 1, Q0, W(0, 2), 0, ANY, r, 8, 5, 0) == 0);
	REQUIRE(mt_send(&t, 0, 1, Q0, W(0, 2), s, 8, 200, 0) == 0);
	mt_run(&t);
	REQUIRE(next_of(&t, 1, WEFT_MCQE_MATCH_COPY, &e));
	CHECK_EQ(e.match_id, 5, "matched after the restart");
	CHECK_EQ(e.status, 0, "without error");
	CHECK(same(&t, 1, r, 0, s, 8), "bytes");
	REQUIRE(next_of(&t, 0, WEFT_MCQE_SEND_DONE, &e));
	CHECK_EQ(e.req_id, 200, "completed");
	CHECK_EQ(e.status, 0, "without error");
	t_checked("dead peer: 5 sends and a receive slot ended in MATCH_PEER_DEAD, "
		  "slots free, restart delivered");
	mt_fini(&t);
}

/* Both adapters fill their pools of unacknowledged packets with sends to
 * each other at once: each still takes the other's packets, nothing is
 * given up. */
static void both_full(void)
{
	struct mt t;
	struct weft_match_cqe e;
	uint64_t s[2];
	unsigned int n, k, sent[2] = { 0, 0 }, done[2] = { 0, 0 };

	mt_init(&t, 2, NULL);
	for (n = 0; n < 2; n++) {
		mt_qcfg(&t, n, Q0, ENABLE);
		s[n] = mt_alloc(&t, n, 8);
	}
	for (n = 0; n < 2; n++) {
		while (mt_send(&t, n, 1 - n, Q0, W(n, 1), s[n], 8, sent[n], 0) == 0)
			sent[n]++;
		CHECK_EQ(mt_reg(&t, n, WEFT_REG_MATCH_DB_STATUS) >> 32, WEFT_R_MATCH_BUSY,
			 "pool full");
	}
	CHECK_EQ(sent[0], WEFT_MATCH_FRAMES - 1, "one frame kept for answers");
	mt_run(&t);
	for (n = 0; n < 2; n++) {
		while (mt_cqe(&t, n, &e)) {
			CHECK_EQ(e.type, WEFT_MCQE_SEND_DONE, "send completion");
			CHECK_EQ(e.status, 0, "without error");
			CHECK_EQ(e.req_id, done[n], "in order");
			done[n]++;
		}
		CHECK_EQ(done[n], sent[n], "every send completed");
		CHECK_EQ(qstat_ueq(&t, 1 - n, Q0), sent[n], "every message taken");
		CHECK_EQ(mt_cnt(&t, n, WEFT_CNT_DROP(WEFT_R_MATCH_PEER_DEAD)), 0, "no peer given up");
	}
	k = mt_cnt(&t, 0, WEFT_CNT_DROP(WEFT_R_MATCH_NO_ROOM)) +
	    mt_cnt(&t, 1, WEFT_CNT_DROP(WEFT_R_MATCH_NO_ROOM));
	t_checked("full pools both ways: %u and %u sends delivered (%u packets refused for room)",
		  sent[0], sent[1], k);
	mt_fini(&t);
}

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
	{ "item081-loopback-any-source", item081 },
	{ "item082-two-adapters-claim", item082 },
	{ "item096-prq-match-copy", item096 },
	{ "item097-ueq-umb", item097 },
	{ "item098-ueq-search-on-post", item098 },
	{ "item099-nonovertaking", item099 },
	{ "item100-wildcards", item100 },
	{ "item101-zero-word", item101 },
	{ "item102-parallel-matchers", item102 },
	{ "item103-umb-overflow", item103 },
	{ "item104-queue-overflow", item104 },
	{ "item105-small-buffer", item105 },
	{ "item106-cr-flag", item106 },
	{ "item107-remove", item107 },
	{ "item108-sw-ueq-sync", item108 },
	{ "item109-optimistic-post", item109 },
	{ "item110-rndv-matched", item110 },
	{ "item111-rndv-unmatched", item111 },
	{ "item112-queue-dump", item112 },
	{ "item113-dynamic-partitioning", item113 },
	{ "query-hq", query_hq },
	{ "dead-peer", dead_peer },
	{ "both-full", both_full },
};

int main(int argc, char **argv)
{
	size_t i;
	bool any = false;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (argc > 1 && strcmp(argv[1], cases[i].name) != 0)
			continue;
		any = true;
		t_begin("match %s", cases[i].name);
		cases[i].fn();
	}
	if (!any) {
		fprintf(stderr, "usage: %s [CASE]\n", argv[0]);
		return 2;
	}
	return t_done();
}
