/* SPDX-License-Identifier: MIT */
/*
 * Differential test of the header-matching engine (docs/matching.md):
 * random posts, sends (inter-node and loopback), removes, wildcards,
 * ignore masks, source filters, zero words and queue overflows with
 * resets, against a plain reference matcher written here from the rule
 * in docs/matching.md.  Several matchers with a small step; a fabric that
 * loses, delays and reorders frames.  The reference sees each arrival when
 * the receiving adapter takes it (its trace), each post and remove at the
 * doorbell, so both see one input order; every match decision and the
 * completion order of every queue must be identical.  The channels under
 * matching must deliver every message exactly once and, per sender, in
 * sending order (item 99 across the fabric), and complete every send once,
 * in order, when the receiver took it.
 * Usage: sim-match-diff [OPS [SEED]] (default 1000000 1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mt.h"
#include "simtest.h"

#define NQ 8u
#define QUOTA 12u
#define NBUF 65536u
#define RX 0u
#define NODES 4u
#define EXP_MAX 4096u
#define MSG_MAX 1048576u

struct ref_post { uint64_t word, ignore; uint16_t src; uint32_t id; };
struct ref_unex { uint64_t word; uint16_t src; uint32_t msg; };
struct ref_exp { uint8_t type; uint32_t status, id, msg; uint64_t word; };

struct ref_q {
	struct ref_post prq[QUOTA];
	struct ref_unex ueq[QUOTA];
	unsigned int np, nu;
	bool stopped;
	struct ref_exp exp[EXP_MAX];
	unsigned int eh, en;
};

static struct ref_q rq[NQ];
static uint32_t slot_owner[NBUF];
static uint64_t n_match, n_unex, n_stop, n_nak_seen, n_cqe;
static bool tracing;
/* Delivery: what each node sent, what RX took, what each sender completed. */
static uint8_t msg_seen[MSG_MAX];
static uint32_t last_in[NODES], last_done[NODES];
static uint64_t n_sent, n_taken, n_done, n_resends, n_order_bad, n_dup_bad, n_done_bad;

/* The rule of docs/matching.md, written without the engine's helper. */
static bool ref_match(uint64_t in, const struct ref_post *p, uint16_t src)
{
	const uint64_t body = ~(3ull << 62);
	uint64_t care = body & ~p->ignore;
	unsigned int wc = (unsigned int)(p->word >> 62);

	if ((in & body) == 0 || (p->word & body) == 0)
		return false;
	if (wc & 1)
		care &= ~0xffffffffull;
	if (wc & 2)
		care &= ~(0xffffull << 32);
	if (p->src != 0xffff && p->src != src)
		return false;
	return ((in ^ p->word) & care) == 0;
}

static void expect(unsigned int q, uint8_t type, uint32_t status, uint32_t id, uint32_t msg,
		   uint64_t word)
{
	struct ref_q *r = &rq[q];
	struct ref_exp *e;

	REQUIRE(r->en < EXP_MAX, "expectation ring");
	e = &r->exp[(r->eh + r->en++) % EXP_MAX];
	e->type = type;
	e->status = status;
	e->id = id;
	e->msg = msg;
	e->word = word;
}

static void ref_post(unsigned int q, const struct ref_post *p, bool cr)
{
	struct ref_q *r = &rq[q];
	unsigned int k;

	if (r->stopped) {
		expect(q, WEFT_MCQE_OP_ERROR, WEFT_R_MATCH_STOPPED, p->id, 0, 0);
		return;
	}
	for (k = 0; k < r->nu; k++) {
		if (ref_match(r->ueq[k].word, p, r->ueq[k].src)) {
			expect(q, WEFT_MCQE_MATCH_COPY, 0, p->id, r->ueq[k].msg, r->ueq[k].word);
			memmove(&r->ueq[k], &r->ueq[k + 1], (r->nu - k - 1) * sizeof(r->ueq[0]));
			r->nu--;
			n_match++;
			return;
		}
	}
	if (r->np >= QUOTA) {
		r->stopped = true;
		n_stop++;
		expect(q, WEFT_MCQE_OP_ERROR, WEFT_R_MATCH_STORE_FULL, p->id, 0, 0);
		return;
	}
	r->prq[r->np++] = *p;
	if (cr)
		expect(q, WEFT_MCQE_POSTED, 0, p->id, 0, p->word);
}

static void ref_remove(unsigned int q, uint32_t id)
{
	struct ref_q *r = &rq[q];
	unsigned int k;

	for (k = 0; k < r->np; k++) {
		if (r->prq[k].id == id) {
			expect(q, WEFT_MCQE_REMOVED, 0, id, 0, r->prq[k].word);
			memmove(&r->prq[k], &r->prq[k + 1], (r->np - k - 1) * sizeof(r->prq[0]));
			r->np--;
			return;
		}
	}
	expect(q, WEFT_MCQE_REMOVED, WEFT_R_MATCH_NOT_FOUND, id, 0, 0);
}

static void ref_arrival(unsigned int q, uint64_t word, uint16_t src, uint32_t msg)
{
	struct ref_q *r = &rq[q];
	unsigned int k;

	if (r->stopped)
		return;         /* RNR NAK: nothing at the receiver */
	for (k = 0; k < r->np; k++) {
		if (ref_match(word, &r->prq[k], src)) {
			expect(q, WEFT_MCQE_MATCH_COPY, 0, r->prq[k].id, msg, word);
			memmove(&r->prq[k], &r->prq[k + 1], (r->np - k - 1) * sizeof(r->prq[0]));
			r->np--;
			n_match++;
			return;
		}
	}
	if (r->nu >= QUOTA) {
		r->stopped = true;
		n_stop++;
		return;
	}
	r->ueq[r->nu].word = word;
	r->ueq[r->nu].src = src;
	r->ueq[r->nu].msg = msg;
	r->nu++;
	n_unex++;
}

/* Arrivals as the receiving adapter takes them. */
static void on_trace(void *opaque, unsigned int node, const struct weft_trace *ev)
{
	uint32_t msg;
	uint16_t src;

	(void)opaque;
	if (tracing && ev->kind == WEFT_TR_CMD && ev->name && !strcmp(ev->name, "MATCH_RESEND"))
		n_resends++;
	if (!tracing || node != RX || ev->kind != WEFT_TR_PKT_RX || !ev->hdr ||
	    ev->hdr->type != WEFT_PKT_MATCH || ev->size != WEFT_MWOP_EAGER)
		return;
	msg = (uint32_t)ev->addr;
	src = ev->hdr->src_node;
	/* Exactly once, and in each sender's order. */
	if (msg >= MSG_MAX || src >= NODES || msg_seen[msg]++)
		n_dup_bad++;
	if (src < NODES && msg <= last_in[src])
		n_order_bad++;
	if (src < NODES)
		last_in[src] = msg;
	n_taken++;
	ref_arrival((unsigned int)(ev->addr >> 32) % NQ, ev->val, src, msg);
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static uint64_t rbuf, sbuf[NODES];

/* A sender's completion: each accepted send completes once, without
 * error, in sending order (req_id = message number). */
static void send_done(unsigned int node, const struct weft_match_cqe *e)
{
	if (e->status || e->req_id <= last_done[node])
		n_done_bad++;
	last_done[node] = e->req_id;
	n_done++;
}

static void compare(struct mt *t)
{
	struct weft_match_cqe e;
	unsigned int n;

	mt_run(t);
	while (mt_cqe(t, RX, &e)) {
		struct ref_q *r;
		struct ref_exp *x;

		if (e.type == WEFT_MCQE_SEND_DONE || e.type == WEFT_MCQE_NAK) {
			n_nak_seen += e.type == WEFT_MCQE_NAK;
			if (e.type == WEFT_MCQE_SEND_DONE)
				send_done(RX, &e);
			continue;
		}
		n_cqe++;
		REQUIRE(e.queue < NQ, "queue %u", e.queue);
		r = &rq[e.queue];
		REQUIRE(r->en > 0, "unexpected completion type %u id %u on queue %u", e.type,
			e.match_id, e.queue);
		x = &r->exp[r->eh];
		r->eh = (r->eh + 1) % EXP_MAX;
		r->en--;
		if (e.type != x->type || e.status != x->status ||
		    (e.type == WEFT_MCQE_OP_ERROR ? e.req_id : e.match_id) != x->id ||
		    (x->word && e.match != x->word)) {
			REQUIRE(false, "queue %u: engine type %u status %u id %u word %llx; "
				"reference type %u status %u id %u word %llx", e.queue, e.type,
				e.status, e.type == WEFT_MCQE_OP_ERROR ? e.req_id : e.match_id,
				(unsigned long long)e.match, x->type, x->status, x->id,
				(unsigned long long)x->word);
		}
		if (e.type == WEFT_MCQE_MATCH_COPY && slot_owner[e.match_id % NBUF] == e.match_id) {
			uint32_t got;

			memcpy(&got, mt_ptr(t, RX, rbuf + (e.match_id % NBUF) * 8ull, 4), 4);
			REQUIRE(got == x->msg, "message %u in receive %u, reference %u", got,
				e.match_id, x->msg);
		}
	}
	for (n = 1; n < NODES; n++) {
		while (mt_cqe(t, n, &e)) {
			if (e.type == WEFT_MCQE_SEND_DONE)
				send_done(n, &e);
			else
				n_nak_seen += e.type == WEFT_MCQE_NAK;
		}
	}
	/* Software restarts stopped queues once they are idle. */
	for (n = 0; n < NQ; n++) {
		if (rq[n].stopped && rnd() % 2 == 0) {
			weft_sim_reg_write(t->s, RX, WEFT_REG_MATCH_QSTAT(n), WEFT_QSTAT_STOPPED);
			rq[n].stopped = false;
		}
	}
}

int main(int argc, char **argv)
{
	uint64_t ops = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	struct weft_sim_config cfg = {
		.matchers = 8, .match_step = 2, .seed = seed, .trace = on_trace,
		.faults = { .drop_ppm = 20000, .routes = 4, .delay_ns = 200,
			    .jitter_ns = 3000, .route_skew_ns = 500 },
		.mem_size = 8ull << 20,
	};
	struct mt t;
	uint64_t i, sends = 0, posts = 0, removes = 0, refused = 0;
	uint32_t next_id = 1, next_msg = 1;
	unsigned int n, q;
	struct timespec t0, t1;
	double secs;

	t_begin("match differential: %llu random operations, seed %llu",
		(unsigned long long)ops, (unsigned long long)seed);
	rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
	mt_init(&t, NODES, &cfg);
	for (q = 0; q < NQ; q++)
		mt_qcfg(&t, RX, q, WEFT_QCFG(WEFT_QCFG_ENABLE, QUOTA, QUOTA));
	rbuf = mt_alloc(&t, RX, NBUF * 8ull);
	for (n = 0; n < NODES; n++)
		sbuf[n] = mt_alloc(&t, n, 8);
	tracing = true;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < ops; i++) {
		uint64_t r = rnd();
		unsigned int kind = (unsigned int)(r % 100);

		q = (unsigned int)(r >> 8) % NQ;
		if (kind < 45) {
			/* A send: from a peer or, through loopback, from RX. */
			unsigned int src = (unsigned int)(r >> 16) % NODES;
			uint64_t word = WEFT_MW(0, 1, src + 1, (r >> 24) % 6 + 1);
			uint32_t msg = next_msg++;

			if ((r >> 40) % 500 == 0)
				word = 0;
			memcpy(mt_ptr(&t, src, sbuf[src], 4), &msg, 4);
			REQUIRE(msg < MSG_MAX, "message numbers");
			if (mt_send(&t, src, RX, q, word, sbuf[src], 4, msg, 0) != 0) {
				REQUIRE(word == 0, "send refused");
				refused++;
			} else {
				n_sent++;
			}
			sends++;
		} else if (kind < 85) {
			struct ref_post p;
			bool cr = (r >> 50) & 1;
			unsigned int wc = (r >> 16) % 8 < 6 ? 0 : (unsigned int)(r >> 20) % 4;

			p.word = WEFT_MW(wc, 1, (r >> 24) % NODES + 1, (r >> 28) % 6 + 1);
			p.ignore = (r >> 33) % 8 == 0 ? 1 : 0;
			p.src = (r >> 36) % 4 == 0 ? (uint16_t)((r >> 40) % NODES) : 0xffff;
			p.id = next_id++;
			if ((r >> 44) % 500 == 0)
				p.word = 0;
			slot_owner[p.id % NBUF] = p.id;
			if (mt_post(&t, RX, q, p.word, p.ignore, p.src, rbuf + (p.id % NBUF) * 8ull, 8,
				    p.id, cr ? WEFT_MOPF_CR : 0) != 0) {
				REQUIRE(p.word == 0, "post refused");
				refused++;
			} else {
				ref_post(q, &p, cr);
			}
			posts++;
		} else if (kind < 95) {
			uint32_t id;

			if (rq[q].np && (r >> 30) % 4)
				id = rq[q].prq[(r >> 32) % rq[q].np].id;
			else
				id = (uint32_t)((r >> 32) % next_id);
			REQUIRE(mt_simple(&t, RX, WEFT_MOP_REMOVE, q, 0, 0, 0, id) == 0);
			ref_remove(q, id);
			removes++;
		} else {
			compare(&t);
		}
		if (i % 64 == 63)
			compare(&t);
	}
	compare(&t);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	tracing = false;
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	for (q = 0; q < NQ; q++) {
		CHECK_EQ(rq[q].en, 0, "expected completions left");
		CHECK_EQ(WEFT_QSTAT_PRQ(mt_reg(&t, RX, WEFT_REG_MATCH_QSTAT(q))), rq[q].np, "PRQ");
		CHECK_EQ(WEFT_QSTAT_UEQ(mt_reg(&t, RX, WEFT_REG_MATCH_QSTAT(q))), rq[q].nu, "UEQ");
	}
	CHECK_EQ(mt_cnt(&t, RX, WEFT_CNT_DROP(WEFT_R_MATCH_BUSY)), 0, "no pending overflow");
	CHECK(n_match > ops / 10, "matches happened");
	CHECK(n_stop > 0, "overflows happened");
	CHECK(st_counter_sum(t.s, WEFT_CNT_M_LOOPBACK) > 0, "loopback sends");
	CHECK(weft_fabric_total_stats(weft_sim_fabric(t.s))->drops[WEFT_FABRIC_DROP_RANDOM] > 0,
	      "the fabric dropped frames");
	CHECK(n_resends > 0, "the channels resent");
	CHECK(st_counter_sum(t.s, WEFT_CNT_DROP(WEFT_R_MATCH_SEQ)) > 0,
	      "frames arrived out of sequence");
	CHECK_EQ(n_taken, n_sent, "every message taken by the receiver");
	CHECK_EQ(n_dup_bad, 0, "no message taken twice");
	CHECK_EQ(n_order_bad, 0, "each sender's messages taken in sending order");
	CHECK_EQ(n_done, n_sent, "every send completed");
	CHECK_EQ(n_done_bad, 0, "send completions once, in order, without error");
	CHECK_EQ(st_counter_sum(t.s, WEFT_CNT_DROP(WEFT_R_MATCH_PEER_DEAD)), 0, "no peer given up");
	t_diag("ops %llu (sends %llu, posts %llu, removes %llu, refused zero words %llu) "
	       "in %.2f s: %.0f ops/s", (unsigned long long)ops, (unsigned long long)sends,
	       (unsigned long long)posts, (unsigned long long)removes,
	       (unsigned long long)refused, secs, (double)ops / secs);
	t_diag("messages sent %llu, taken %llu, send completions %llu, resend rounds %llu, "
	       "duplicates dropped %llu, out of sequence dropped %llu, refused for room %llu",
	       (unsigned long long)n_sent, (unsigned long long)n_taken,
	       (unsigned long long)n_done, (unsigned long long)n_resends,
	       (unsigned long long)st_counter_sum(t.s, WEFT_CNT_DROP(WEFT_R_MATCH_DUP)),
	       (unsigned long long)st_counter_sum(t.s, WEFT_CNT_DROP(WEFT_R_MATCH_SEQ)),
	       (unsigned long long)st_counter_sum(t.s, WEFT_CNT_DROP(WEFT_R_MATCH_NO_ROOM)));
	t_diag("receiver completions compared %llu, matches %llu, unexpected %llu, "
	       "queue stops %llu, NAKs seen %llu, fabric drops %llu",
	       (unsigned long long)n_cqe, (unsigned long long)n_match,
	       (unsigned long long)n_unex, (unsigned long long)n_stop,
	       (unsigned long long)n_nak_seen,
	       (unsigned long long)weft_fabric_total_stats(weft_sim_fabric(t.s))->drops[WEFT_FABRIC_DROP_RANDOM]);
	t_checked("engine and reference agree on %llu completions over %llu operations",
		  (unsigned long long)n_cqe, (unsigned long long)ops);
	mt_fini(&t);
	return t_done();
}
