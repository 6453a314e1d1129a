/* SPDX-License-Identifier: MIT */
/*
 * Weft header-matching engine (seed 001, docs/matching.md): 128 header
 * queues whose PRQ and UEQ entries share one header store, the UMB with
 * its fragment free list, host temporary buffers, matchers as bounded
 * units of work, the software-UEQ mode with its synchronisation,
 * rendezvous slots and the WEFT_PKT_MATCH wire protocol.
 *
 * Ownership: operation blocks are copied out of guest memory at the
 * doorbell; arrivals are copied into a pending item.  Everything the
 * engine keeps is its own; guest memory is touched only through the
 * core's DMA helpers, at addresses software named in an operation.
 *
 * Ordering: every operation and arrival for a queue waits in that
 * queue's FIFO and at most one matcher serves a queue at a time, so a
 * matcher never overtakes an earlier one on the same queue (item 99) and
 * the result of any number of matchers equals a serial run (item 102).
 *
 * Delivery: every matching packet but ACK goes on a reliable channel per
 * peer node (sequence numbers, cumulative ACKs, go-back-N resends from a
 * bounded frame pool, a resend timer with backoff), so the receiver takes
 * each packet exactly once and in the order its sender sent it, whatever
 * the fabric loses, duplicates or reorders (docs/matching.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "weft/match.h"
#include "weft/names.h"
#include "weft/verbs.h"
#include "weft_core_int.h"
#include "weft_match.h"
#include "weft_state.h"

#define NIL 0xffffffffu
#define CQ_RESERVE 2u           /* CQEs one item may write */
#define FRAME_BYTES (WEFT_WIRE_HDR_SIZE + sizeof(struct weft_match_whdr) + WEFT_MATCH_EAGER_MAX)

enum { E_POSTED = 1, E_UMB = 2, E_HOST = 3, E_RNDV = 4, E_TM = 5 };
#define TM_INACTIVE 0x80u       /* E_TM flag: added behind the phase (item 109) */

/* One header-store entry: a posted receive or an unexpected header. */
struct m_entry {
	uint32_t next, prev;
	uint8_t kind;
	uint8_t flags;          /* posted: WEFT_MOPF_MULTI */
	uint16_t node;          /* posted: source filter; unexpected: source */
	uint64_t match, ignore; /* E_TM: tag and mask (bits that must match) */
	uint64_t addr;          /* posted: buffer; E_HOST: host buffer */
	uint64_t claim;         /* posted MULTI: claim flag address */
	uint64_t cap;           /* E_HOST: buffer capacity */
	uint32_t len;           /* posted: buffer bytes; unexpected: message bytes */
	uint32_t id;            /* posted: Match Compl ID; unexpected: seq */
	uint32_t req_id;        /* posted: Req Compl ID; unexpected: sender's; E_TM: lkey */
	uint32_t frag;          /* E_UMB: first fragment */
	uint32_t sslot;         /* E_RNDV: sender slot */
	uint32_t cgen;          /* E_RNDV: sender's channel generation at arrival */
};

struct m_list {
	uint32_t head, tail, n;
};

/* A pending operation or arrival. */
struct m_item {
	uint32_t next;
	bool is_op;
	bool loopback;
	uint16_t src;
	struct weft_match_op op;
	struct weft_match_whdr wh;
	uint8_t data[WEFT_MATCH_EAGER_MAX];
};

struct m_queue {
	struct m_list prq, ueq;
	uint32_t fifo_head, fifo_tail;
	uint64_t cfg, tag_mask, rank_mask;
	bool stopped, sync, parked, busy, in_runq;
	bool tm;                /* lent to a tag-matching SRQ */
	uint32_t seq;           /* unexpected headers so far */
	/* CAM of recent unexpected headers (item 109). */
	struct { uint32_t seq; uint16_t node; uint64_t match; } cam[WEFT_MATCH_CAM];
};

struct m_matcher {
	bool busy;
	uint16_t q;
	uint32_t last;          /* last entry examined, NIL: none yet */
	uint32_t count;         /* DUMP: entries written */
};

enum { S_FREE = 0, S_WAIT_ACK, S_WAIT_PEER, S_WAIT_PUT, S_STREAM, S_WAIT_FIN };

struct m_sslot {
	uint8_t state;
	bool pull;              /* streaming answers a PULL */
	uint16_t dst, queue;
	uint32_t req_id, rslot;
	uint64_t match, addr, total, size, off;
};

struct m_rslot {
	bool used;
	bool pull;
	bool truncated;
	uint16_t src, queue;
	uint32_t sslot, match_id, req_id;
	uint64_t match, addr, size, total, received;
};

/* A sequenced packet kept until its peer acknowledges it. */
struct m_frame {
	uint32_t next;          /* channel list (PSN order), or the free list */
	bool queued;            /* in the transmit ring */
	bool acked;             /* acknowledged while queued: freed when sent */
	uint32_t len;
	_Alignas(8) uint8_t data[FRAME_BYTES];
};

/* The reliable channel with one peer node (both directions). */
struct m_chan {
	uint16_t node;
	bool rx_known;          /* rx_epoch and rx_next are valid */
	bool ack_owed;
	uint8_t retries;        /* resends since the last progress */
	uint32_t tx_next;       /* PSN of the next new frame */
	uint32_t tx_una;        /* oldest unacknowledged PSN */
	uint32_t head, tail;    /* unacknowledged frames, PSN order */
	uint64_t deadline;      /* resend time; 0 = nothing unacknowledged */
	uint32_t rx_epoch;      /* the peer's incarnation */
	uint32_t rx_next;       /* next PSN expected from the peer */
	uint32_t rx_gen;        /* peer restarts seen (sequence jumps) */
};

struct weft_match {
	uint32_t nentries, nfrags, frag_size, nmatchers, step;
	uint64_t rndv_threshold;
	struct m_entry *e;
	uint32_t efree, efree_n;
	uint8_t *umb;
	uint32_t *frag_next;
	uint32_t ffree, ffree_n;
	struct { uint64_t addr, len; } pool[WEFT_MATCH_POOL_MAX];
	uint32_t npool;
	struct m_item *items;
	uint32_t ifree, ifree_n;
	struct m_queue q[WEFT_MATCH_NR_QUEUES];
	uint16_t runq[WEFT_MATCH_NR_QUEUES];
	uint32_t runq_head, runq_n;
	struct m_matcher *m;
	uint32_t mrr;
	struct m_sslot ss[WEFT_MATCH_RNDV_SLOTS];
	struct m_rslot rs[WEFT_MATCH_RNDV_SLOTS];
	uint32_t ss_rr;
	struct m_frame *fr;
	uint32_t frfree, frfree_n;
	uint16_t txq[WEFT_MATCH_FRAMES]; /* frames to transmit, in order */
	uint32_t txq_head, txq_n;
	struct m_chan ch[WEFT_MATCH_PEERS];
	uint32_t nch;
	uint32_t epoch;         /* this adapter's incarnation */
	uint32_t acks_owed;
	uint64_t deadline;      /* earliest channel deadline, 0 = none */
	_Alignas(8) uint8_t ackbuf[WEFT_WIRE_HDR_SIZE + sizeof(struct weft_match_whdr)];
	uint64_t cq_base, cq_size, cq_prod, cq_cons;
	uint64_t db_status, irq;
	uint8_t scratch[WEFT_MATCH_EAGER_MAX];
};

/* ---- configuration ------------------------------------------------------ */

const char *weft_match_config(struct weft_core_config *cf)
{
	if (cf->match_store == 0)
		cf->match_store = WEFT_MATCH_DEF_STORE;
	if (cf->umb_size == 0)
		cf->umb_size = WEFT_MATCH_DEF_UMB;
	if (cf->umb_frag == 0)
		cf->umb_frag = WEFT_MATCH_DEF_FRAG;
	if (cf->matchers == 0)
		cf->matchers = WEFT_MATCH_DEF_MATCHERS;
	if (cf->match_step == 0)
		cf->match_step = WEFT_MATCH_DEF_STEP;
	if (cf->rndv_threshold == 0)
		cf->rndv_threshold = WEFT_MATCH_DEF_RNDV_THRESHOLD;
	if (cf->match_store < WEFT_MATCH_HDR_BYTES || cf->match_store > WEFT_MATCH_MAX_STORE)
		return "match_store must be 32 B..16 MiB";
	if (cf->umb_frag != 64 && cf->umb_frag != 128)
		return "umb_frag must be 64 or 128";
	if (cf->umb_size < cf->umb_frag || cf->umb_size > WEFT_MATCH_MAX_UMB)
		return "umb_size must be one fragment..64 MiB";
	if (cf->matchers > WEFT_MATCH_MAX_MATCHERS)
		return "matchers must be 1..64";
	if (cf->match_step > 65536)
		return "match_step must be 1..65536";
	if (cf->rndv_threshold > WEFT_MATCH_MAX_MSG)
		return "rndv_threshold beyond the longest message";
	return NULL;
}

struct weft_match *weft_match_new(const struct weft_core_config *cf)
{
	struct weft_match *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->nentries = cf->match_store / WEFT_MATCH_HDR_BYTES;
	m->frag_size = cf->umb_frag;
	m->nfrags = cf->umb_size / cf->umb_frag;
	m->nmatchers = cf->matchers;
	m->step = cf->match_step;
	m->rndv_threshold = cf->rndv_threshold;
	m->e = calloc(m->nentries, sizeof(*m->e));
	m->umb = calloc(m->nfrags, m->frag_size);
	m->frag_next = calloc(m->nfrags, sizeof(*m->frag_next));
	m->items = calloc(WEFT_MATCH_PENDING, sizeof(*m->items));
	m->m = calloc(m->nmatchers, sizeof(*m->m));
	m->fr = calloc(WEFT_MATCH_FRAMES, sizeof(*m->fr));
	/* Incarnations differ between adapters and between resets. */
	m->epoch = cf->match_epoch ^ (uint32_t)(cf->node_id * 0x9e3779b1u);
	if (!m->e || !m->umb || !m->frag_next || !m->items || !m->m || !m->fr) {
		weft_match_free(m);
		return NULL;
	}
	return m;
}

void weft_match_free(struct weft_match *m)
{
	if (!m)
		return;
	free(m->e);
	free(m->umb);
	free(m->frag_next);
	free(m->items);
	free(m->m);
	free(m->fr);
	free(m);
}

void weft_match_reset(struct weft_core *c)
{
	struct weft_match *m = c->match;
	uint32_t i;

	for (i = 0; i < m->nentries; i++)
		m->e[i].next = i + 1 < m->nentries ? i + 1 : NIL;
	m->efree = 0;
	m->efree_n = m->nentries;
	for (i = 0; i < m->nfrags; i++)
		m->frag_next[i] = i + 1 < m->nfrags ? i + 1 : NIL;
	m->ffree = 0;
	m->ffree_n = m->nfrags;
	for (i = 0; i < WEFT_MATCH_PENDING; i++)
		m->items[i].next = i + 1 < WEFT_MATCH_PENDING ? i + 1 : NIL;
	m->ifree = 0;
	m->ifree_n = WEFT_MATCH_PENDING;
	m->npool = 0;
	memset(m->q, 0, sizeof(m->q));
	for (i = 0; i < WEFT_MATCH_NR_QUEUES; i++) {
		struct m_queue *q = &m->q[i];

		q->prq.head = q->prq.tail = q->ueq.head = q->ueq.tail = NIL;
		q->fifo_head = q->fifo_tail = NIL;
		q->tag_mask = WEFT_MW_TAG_MASK;
		q->rank_mask = WEFT_MW_RANK_MASK;
	}
	m->runq_head = m->runq_n = 0;
	memset(m->m, 0, m->nmatchers * sizeof(*m->m));
	memset(m->ss, 0, sizeof(m->ss));
	memset(m->rs, 0, sizeof(m->rs));
	for (i = 0; i < WEFT_MATCH_FRAMES; i++) {
		m->fr[i].next = i + 1 < WEFT_MATCH_FRAMES ? i + 1 : NIL;
		m->fr[i].queued = m->fr[i].acked = false;
	}
	m->frfree = 0;
	m->frfree_n = WEFT_MATCH_FRAMES;
	m->txq_head = m->txq_n = 0;
	memset(m->ch, 0, sizeof(m->ch));
	m->nch = 0;
	m->epoch += 0x10001u;
	m->acks_owed = 0;
	m->deadline = 0;
	m->cq_base = m->cq_size = m->cq_prod = m->cq_cons = 0;
	m->db_status = 0;
	m->irq = 0;
}

/* ---- small helpers ------------------------------------------------------ */

static void mtrace(struct weft_core *c, const char *name, unsigned int q, uint64_t val,
		   unsigned int reason)
{
	struct weft_trace t = {
		.kind = WEFT_TR_CMD, .name = name, .window = q, .val = val,
		.reason = reason, .msg = reason ? weft_reason_text(reason) : NULL,
	};

	weft_trace(c, &t);
}

static void mdrop(struct weft_core *c, unsigned int reason)
{
	weft_drop(c, NULL, WEFT_NO_WINDOW, reason);
}

static uint32_t frag_alloc(struct weft_match *m)
{
	uint32_t f = m->ffree;

	m->ffree = m->frag_next[f];
	m->ffree_n--;
	return f;
}

static uint32_t entry_alloc(struct weft_match *m)
{
	uint32_t i = m->efree;

	if (i == NIL)
		return NIL;
	m->efree = m->e[i].next;
	m->efree_n--;
	memset(&m->e[i], 0, sizeof(m->e[i]));
	return i;
}

static void entry_free(struct weft_match *m, uint32_t i)
{
	m->e[i].kind = 0;
	m->e[i].next = m->efree;
	m->efree = i;
	m->efree_n++;
}

static void list_append(struct weft_match *m, struct m_list *l, uint32_t i)
{
	m->e[i].next = NIL;
	m->e[i].prev = l->tail;
	if (l->tail != NIL)
		m->e[l->tail].next = i;
	else
		l->head = i;
	l->tail = i;
	l->n++;
}

static void list_unlink(struct weft_match *m, struct m_list *l, uint32_t i)
{
	struct m_entry *e = &m->e[i];

	if (e->prev != NIL)
		m->e[e->prev].next = e->next;
	else
		l->head = e->next;
	if (e->next != NIL)
		m->e[e->next].prev = e->prev;
	else
		l->tail = e->prev;
	l->n--;
}

static void frags_free(struct weft_match *m, uint32_t f)
{
	while (f != NIL) {
		uint32_t n = m->frag_next[f];

		m->frag_next[f] = m->ffree;
		m->ffree = f;
		m->ffree_n++;
		f = n;
	}
}

/* Store len bytes in a fragment chain; NIL when the UMB lacks room. */
static uint32_t frags_store(struct weft_match *m, const uint8_t *p, uint32_t len)
{
	uint32_t need = (len + m->frag_size - 1) / m->frag_size, head = NIL, tail = NIL, k;

	if (need == 0)
		need = 1;
	if (need > m->ffree_n)
		return NIL;
	for (k = 0; k < need; k++) {
		uint32_t f = frag_alloc(m);
		uint32_t n = len > m->frag_size ? m->frag_size : len;

		memcpy(m->umb + (uint64_t)f * m->frag_size, p, n);
		p += n;
		len -= n;
		m->frag_next[f] = NIL;
		if (tail == NIL)
			head = f;
		else
			m->frag_next[tail] = f;
		tail = f;
	}
	return head;
}

static void frags_load(struct weft_match *m, uint32_t f, uint8_t *p, uint32_t len)
{
	while (f != NIL && len) {
		uint32_t n = len > m->frag_size ? m->frag_size : len;

		memcpy(p, m->umb + (uint64_t)f * m->frag_size, n);
		p += n;
		len -= n;
		f = m->frag_next[f];
	}
}

/* Take the first host temporary buffer of at least len bytes. */
static bool pool_take(struct weft_match *m, uint64_t len, uint64_t *addr, uint64_t *cap)
{
	uint32_t i;

	for (i = 0; i < m->npool; i++) {
		if (m->pool[i].len >= len) {
			*addr = m->pool[i].addr;
			*cap = m->pool[i].len;
			memmove(&m->pool[i], &m->pool[i + 1], (m->npool - i - 1) * sizeof(m->pool[0]));
			m->npool--;
			return true;
		}
	}
	return false;
}

static void pool_give(struct weft_match *m, uint64_t addr, uint64_t len)
{
	if (m->npool < WEFT_MATCH_POOL_MAX) {
		m->pool[m->npool].addr = addr;
		m->pool[m->npool].len = len;
		m->npool++;
	}
}

static bool cq_enabled(const struct weft_match *m)
{
	return m->cq_size != 0;
}

static uint64_t cq_room(const struct weft_match *m)
{
	if (!cq_enabled(m))
		return 0;
	return (1ull << m->cq_size) - (m->cq_prod - m->cq_cons);
}

/* Room for n completions; with the ring off they are dropped anyway
 * (MATCH_CQ), so nothing waits for it. */
static bool cq_can(const struct weft_match *m, uint64_t n)
{
	return !cq_enabled(m) || cq_room(m) >= n;
}

static void cqe_post(struct weft_core *c, const struct weft_match_cqe *e)
{
	struct weft_match *m = c->match;
	uint64_t addr;

	if (!cq_room(m)) {
		mdrop(c, WEFT_R_MATCH_CQ);
		return;
	}
	addr = m->cq_base + (m->cq_prod & ((1ull << m->cq_size) - 1)) * sizeof(*e);
	if (weft_dma_write(c, addr, e, sizeof(*e)) != 0) {
		mdrop(c, WEFT_R_MATCH_CQ);
		return;
	}
	m->cq_prod++;
	weft_count(c, WEFT_CNT_M_CQES, 1);
}

static void cqe_simple(struct weft_core *c, unsigned int type, unsigned int q,
		       unsigned int status, uint32_t req_id)
{
	struct weft_match_cqe e;

	memset(&e, 0, sizeof(e));
	e.type = (uint8_t)type;
	e.queue = (uint16_t)q;
	e.status = status;
	e.req_id = req_id;
	cqe_post(c, &e);
	if (status && type == WEFT_MCQE_OP_ERROR)
		mdrop(c, status);
}

/* ---- reliable channels ---------------------------------------------------- */

static uint64_t mnow(struct weft_core *c)
{
	return c->ops.now_ns ? c->ops.now_ns(c->opaque) : 0;
}

static uint64_t rto(const struct m_chan *ch)
{
	unsigned int sh = ch->retries < WEFT_MATCH_RTO_MAX_SHIFT ? ch->retries :
			  WEFT_MATCH_RTO_MAX_SHIFT;

	return WEFT_MATCH_RTO_NS << sh;
}

/* The channel of node, or NULL; create adds one when there is room. */
static struct m_chan *chan_of(struct weft_match *m, uint16_t node, bool create)
{
	struct m_chan *ch;
	uint32_t i;

	for (i = 0; i < m->nch; i++)
		if (m->ch[i].node == node)
			return &m->ch[i];
	if (!create || m->nch >= WEFT_MATCH_PEERS)
		return NULL;
	ch = &m->ch[m->nch++];
	memset(ch, 0, sizeof(*ch));
	ch->node = node;
	ch->head = ch->tail = NIL;
	return ch;
}

static void chan_arm(struct weft_core *c, struct m_chan *ch)
{
	struct weft_match *m = c->match;

	ch->deadline = mnow(c) + rto(ch);
	if (!m->deadline || ch->deadline < m->deadline) {
		m->deadline = ch->deadline;
		weft_timer_sync(c);
	}
}

static void ack_owe(struct weft_match *m, struct m_chan *ch)
{
	if (!ch->ack_owed) {
		ch->ack_owed = true;
		m->acks_owed++;
	}
}

static void txq_push(struct weft_match *m, uint32_t fi)
{
	m->txq[(m->txq_head + m->txq_n) % WEFT_MATCH_FRAMES] = (uint16_t)fi;
	m->txq_n++;
	m->fr[fi].queued = true;
}

static void frame_free(struct weft_match *m, uint32_t fi)
{
	m->fr[fi].acked = false;
	m->fr[fi].next = m->frfree;
	m->frfree = fi;
	m->frfree_n++;
}

static const struct weft_match_whdr *frame_mh(const struct m_frame *f)
{
	return (const struct weft_match_whdr *)(f->data + sizeof(struct weft_wire_hdr));
}

/* A frame leaves its channel: acknowledged (status 0) or given up.  An
 * eager send and a pushed rendezvous (its FIN) complete here. */
static void frame_done(struct weft_core *c, uint32_t fi, unsigned int status)
{
	struct weft_match *m = c->match;
	struct m_frame *f = &m->fr[fi];
	struct weft_match_whdr mh;

	memcpy(&mh, frame_mh(f), sizeof(mh));
	if (mh.op == WEFT_MWOP_EAGER ||
	    (mh.op == WEFT_MWOP_FIN && !(mh.flags & WEFT_MWF_TO_SENDER)))
		cqe_simple(c, WEFT_MCQE_SEND_DONE, mh.queue, status, mh.req_id);
	if (f->queued)
		f->acked = true;
	else
		frame_free(m, fi);
}

/* CQEs that frame_done() writes for this frame. */
static uint32_t frame_cqes(const struct m_frame *f)
{
	const struct weft_match_whdr *mh = frame_mh(f);

	return mh->op == WEFT_MWOP_EAGER ||
	       (mh->op == WEFT_MWOP_FIN && !(mh->flags & WEFT_MWF_TO_SENDER));
}

/* ---- transmit ----------------------------------------------------------- */

/*
 * Room for n more sequenced packets made by a doorbell, a matcher or a
 * stream.  One frame stays for the answer a received packet may need at
 * once (rx_seq): that answer (NAK, FIN to the sender) needs none itself,
 * so its peer always takes it and the frame comes back; no two adapters
 * can wait on each other's full pools.
 */
static bool txq_room(const struct weft_match *m, uint32_t n)
{
	return m->frfree_n >= n + 1;
}

/* Queue a matching packet to node dst on its channel; the caller
 * checked txq_room, or rx_seq kept a frame for an answer. */
static void tx_pkt(struct weft_core *c, uint16_t dst, const struct weft_match_whdr *mh,
		   const void *data, uint32_t dlen)
{
	struct weft_match *m = c->match;
	struct m_chan *ch = chan_of(m, dst, true);
	struct weft_match_whdr *fh;
	struct weft_wire_hdr *wh;
	struct m_frame *f;
	uint32_t fi;

	if (!m->frfree_n || !ch) {
		mdrop(c, ch ? WEFT_R_MATCH_BUSY : WEFT_R_MATCH_PEERS);
		return;
	}
	fi = m->frfree;
	f = &m->fr[fi];
	m->frfree = f->next;
	m->frfree_n--;
	wh = (struct weft_wire_hdr *)f->data;
	memset(wh, 0, sizeof(*wh));
	wh->version = WEFT_WIRE_VERSION;
	wh->type = WEFT_PKT_MATCH;
	wh->dst_node = dst;
	wh->src_node = c->cfg.node_id;
	wh->dst_window = WEFT_NO_WINDOW;
	wh->length = (uint32_t)(sizeof(*mh) + dlen);
	wh->tid = ch->tx_next;
	wh->protocol_cookie = m->epoch;
	fh = (struct weft_match_whdr *)(f->data + sizeof(*wh));
	memcpy(fh, mh, sizeof(*mh));
	/* Nothing unacknowledged before it: a sequence start. */
	if (ch->tx_una == ch->tx_next)
		fh->flags |= WEFT_MWF_SYN;
	if (dlen)
		memcpy(f->data + sizeof(*wh) + sizeof(*mh), data, dlen);
	f->len = (uint32_t)(sizeof(*wh) + sizeof(*mh) + dlen);
	ch->tx_next++;
	f->next = NIL;
	f->acked = false;
	if (ch->tail == NIL)
		ch->head = fi;
	else
		m->fr[ch->tail].next = fi;
	ch->tail = fi;
	if (!ch->deadline)
		chan_arm(c, ch);
	txq_push(m, fi);
}

static void tx_nak(struct weft_core *c, uint16_t dst, const struct weft_match_whdr *in,
		   unsigned int reason, bool rnr)
{
	struct weft_match_whdr h;

	memset(&h, 0, sizeof(h));
	h.op = WEFT_MWOP_NAK;
	h.flags = rnr ? WEFT_MWF_RNR : 0;
	h.queue = in->queue;
	h.match = in->match;
	h.sslot = in->sslot;
	h.rslot = in->rslot;
	h.status = reason;
	h.req_id = in->req_id;
	h.total = in->op == WEFT_MWOP_RNDV_REQ ? 1 : 0;
	weft_count(c, rnr ? WEFT_CNT_M_RNR_NAKS : WEFT_CNT_M_NAKS, 1);
	mdrop(c, reason);
	tx_pkt(c, dst, &h, NULL, 0);
}

/* Put one packet on the link; loopback packets re-enter the receive
 * path.  A failed send is a loss: the channel resends. */
static int tx_raw(struct weft_core *c, uint8_t *pkt, uint32_t len)
{
	struct weft_wire_hdr *wh = (struct weft_wire_hdr *)pkt;
	struct weft_trace t = { .kind = WEFT_TR_PKT_TX, .window = WEFT_NO_WINDOW };
	int rc;

	if (wh->dst_node == c->cfg.node_id) {
		rc = weft_core_receive(c, pkt, len);
		if (rc == 0)
			weft_count(c, WEFT_CNT_M_LOOPBACK, 1);
	} else {
		rc = c->ops.xmit(c->opaque, pkt, len);
	}
	if (rc == -EAGAIN)
		return rc;
	t.hdr = wh;
	t.len = len;
	t.name = weft_mwop_name(((struct weft_match_whdr *)(wh + 1))->op);
	weft_trace(c, &t);
	if (rc) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_NO_LINK);
	} else {
		weft_count(c, WEFT_CNT_TX_PACKETS, 1);
		weft_count(c, WEFT_CNT_TX_BYTES, len);
	}
	return 0;
}

/* Send the next queued frame.  Returns true when one left the ring. */
static bool tx_one(struct weft_core *c)
{
	struct weft_match *m = c->match;
	uint32_t fi;
	struct m_frame *f;

	if (m->txq_n == 0)
		return false;
	fi = m->txq[m->txq_head];
	f = &m->fr[fi];
	if (!f->acked && tx_raw(c, f->data, f->len) == -EAGAIN)
		return false;
	m->txq_head = (m->txq_head + 1) % WEFT_MATCH_FRAMES;
	m->txq_n--;
	f->queued = false;
	if (f->acked)
		frame_free(m, fi);
	return true;
}

/* Send the acknowledgements owed.  Returns false when the link is busy. */
static bool tx_acks(struct weft_core *c)
{
	struct weft_match *m = c->match;
	struct weft_wire_hdr *wh = (struct weft_wire_hdr *)m->ackbuf;
	struct weft_match_whdr *mh = (struct weft_match_whdr *)(m->ackbuf + sizeof(*wh));
	uint32_t i;

	for (i = 0; i < m->nch && m->acks_owed; i++) {
		struct m_chan *ch = &m->ch[i];

		if (!ch->ack_owed)
			continue;
		memset(m->ackbuf, 0, sizeof(m->ackbuf));
		wh->version = WEFT_WIRE_VERSION;
		wh->type = WEFT_PKT_MATCH;
		wh->dst_node = ch->node;
		wh->src_node = c->cfg.node_id;
		wh->dst_window = WEFT_NO_WINDOW;
		wh->length = sizeof(*mh);
		mh->op = WEFT_MWOP_ACK;
		mh->offset = ch->rx_next;
		mh->total = ch->rx_epoch;
		if (tx_raw(c, m->ackbuf, sizeof(m->ackbuf)) == -EAGAIN)
			return false;
		ch->ack_owed = false;
		m->acks_owed--;
	}
	return true;
}

/* ---- queues, FIFOs and matchers ----------------------------------------- */

static void runq_add(struct weft_match *m, unsigned int qi)
{
	struct m_queue *q = &m->q[qi];

	if (q->in_runq || q->busy || q->parked || q->fifo_head == NIL)
		return;
	m->runq[(m->runq_head + m->runq_n) % WEFT_MATCH_NR_QUEUES] = (uint16_t)qi;
	m->runq_n++;
	q->in_runq = true;
}

static uint32_t item_alloc(struct weft_match *m)
{
	uint32_t i = m->ifree;

	if (i == NIL)
		return NIL;
	m->ifree = m->items[i].next;
	m->ifree_n--;
	m->items[i].next = NIL;
	return i;
}

static void item_free(struct weft_match *m, uint32_t i)
{
	m->items[i].next = m->ifree;
	m->ifree = i;
	m->ifree_n++;
}

static void fifo_push(struct weft_match *m, unsigned int qi, uint32_t i)
{
	struct m_queue *q = &m->q[qi];

	m->items[i].next = NIL;
	if (q->fifo_tail == NIL)
		q->fifo_head = i;
	else
		m->items[q->fifo_tail].next = i;
	q->fifo_tail = i;
	runq_add(m, qi);
}

static void fifo_pop(struct weft_match *m, unsigned int qi)
{
	struct m_queue *q = &m->q[qi];
	uint32_t i = q->fifo_head;

	q->fifo_head = m->items[i].next;
	if (q->fifo_head == NIL)
		q->fifo_tail = NIL;
	item_free(m, i);
}

static void queue_stop(struct weft_core *c, unsigned int qi)
{
	struct m_queue *q = &c->match->q[qi];

	if (q->stopped)
		return;
	q->stopped = true;
	weft_count(c, WEFT_CNT_M_OVERFLOWS, 1);
	mtrace(c, "MATCH_QUEUE_STOPPED", qi, 0, WEFT_R_MATCH_STORE_FULL);
	weft_event_vec(c, WEFT_EV_MATCH_STOPPED, (unsigned int)c->match->irq, qi,
		       WEFT_R_MATCH_STORE_FULL, 0);
}

/* A header-store entry for list l of queue q, or NIL (queue stopped). */
static uint32_t store_take(struct weft_core *c, unsigned int qi, bool prq)
{
	struct weft_match *m = c->match;
	struct m_queue *q = &m->q[qi];
	uint32_t max = prq ? WEFT_QCFG_PRQ_MAX(q->cfg) : WEFT_QCFG_UEQ_MAX(q->cfg);
	struct m_list *l = prq ? &q->prq : &q->ueq;
	uint32_t i;

	if ((max && l->n >= max) || (i = entry_alloc(m)) == NIL) {
		queue_stop(c, qi);
		return NIL;
	}
	return i;
}

static bool entry_matches(const struct m_queue *q, const struct m_entry *p, uint64_t in,
			  uint16_t src)
{
	if (p->kind == E_TM)
		return weft_tm_match(in, p->match, p->ignore);
	return weft_mw_match(in, p->match, p->ignore, q->tag_mask, q->rank_mask) &&
	       (p->node == WEFT_MATCH_ANY_SOURCE || p->node == src);
}

/* Item 82: fetch-and-set the claim flag; true when this adapter won. */
static bool claim(struct weft_core *c, uint64_t addr)
{
	uint64_t old = 1, one = 1;

	if (weft_dma_read(c, addr, &old, sizeof(old)) != 0)
		return false;
	if (old != 0)
		return false;
	return weft_dma_write(c, addr, &one, sizeof(one)) == 0;
}

/* ---- rendezvous slots --------------------------------------------------- */

static uint32_t rslot_alloc(struct weft_match *m)
{
	uint32_t i;

	for (i = 0; i < WEFT_MATCH_RNDV_SLOTS; i++)
		if (!m->rs[i].used)
			return i;
	return NIL;
}

static uint32_t sslot_alloc(struct weft_match *m)
{
	uint32_t k;

	for (k = 0; k < WEFT_MATCH_RNDV_SLOTS; k++) {
		uint32_t i = (m->ss_rr + k) % WEFT_MATCH_RNDV_SLOTS;

		if (m->ss[i].state == S_FREE) {
			m->ss_rr = i + 1;
			return i;
		}
	}
	return NIL;
}

static void rslot_complete(struct weft_core *c, uint32_t r, unsigned int status)
{
	struct m_rslot *s = &c->match->rs[r];
	struct weft_match_cqe e;

	memset(&e, 0, sizeof(e));
	e.type = WEFT_MCQE_MATCH_COPY;
	e.flags = WEFT_MCQEF_RNDV | (s->truncated ? WEFT_MCQEF_TRUNCATED : 0) |
		  (s->src == c->cfg.node_id ? WEFT_MCQEF_LOOPBACK : 0);
	e.queue = s->queue;
	e.status = status;
	e.match = s->match;
	e.match_id = s->match_id;
	e.req_id = s->req_id;
	e.length = s->total;
	e.written = s->received;
	e.src_node = s->src;
	e.seq = r;
	cqe_post(c, &e);
	if (!status)
		weft_count(c, WEFT_CNT_M_MATCHES, 1);
	s->used = false;
}

/* A matched rendezvous at the receiver: reserve slot r for buffer p. */
static void rslot_start(struct weft_core *c, uint32_t r, const struct m_entry *p,
			unsigned int qi, uint16_t src, uint32_t sslot, uint64_t match,
			uint64_t total, bool pull)
{
	struct m_rslot *s = &c->match->rs[r];

	memset(s, 0, sizeof(*s));
	s->used = true;
	s->pull = pull;
	s->src = src;
	s->queue = (uint16_t)qi;
	s->sslot = sslot;
	s->match_id = p->id;
	s->req_id = p->req_id;
	s->match = match;
	s->addr = p->addr;
	s->total = total;
	s->size = total > p->len ? p->len : total;
	s->truncated = total > p->len;
	weft_count(c, WEFT_CNT_M_RNDV, 1);
}

/* A completion about sender slot k (rendezvous), moving it to state. */
static void sslot_cqe(struct weft_core *c, uint32_t k, unsigned int type, unsigned int status,
		      uint8_t state)
{
	struct m_sslot *s = &c->match->ss[k];
	struct weft_match_cqe e;

	memset(&e, 0, sizeof(e));
	e.type = (uint8_t)type;
	e.flags = WEFT_MCQEF_RNDV;
	e.queue = s->queue;
	e.status = status;
	e.match = s->match;
	e.req_id = s->req_id;
	e.length = s->total;
	e.written = type == WEFT_MCQE_SEND_PENDING ? 0 : s->size;
	e.seq = k;
	s->state = state;
	cqe_post(c, &e);
}

/* A rendezvous whose message is longer than the matched receive, on a
 * queue that NAKs: an error completion for the receive, a NAK for the
 * sender's request. */
static void rndv_too_small(struct weft_core *c, unsigned int qi, const struct m_entry *p,
			   uint16_t src, const struct weft_match_whdr *req)
{
	struct weft_match_cqe e;

	memset(&e, 0, sizeof(e));
	e.type = WEFT_MCQE_MATCH_COPY;
	e.flags = WEFT_MCQEF_RNDV;
	e.queue = (uint16_t)qi;
	e.status = WEFT_R_MATCH_TOO_SMALL;
	e.match = req->match;
	e.match_id = p->id;
	e.req_id = p->req_id;
	e.length = req->total;
	e.src_node = src;
	cqe_post(c, &e);
	tx_nak(c, src, req, WEFT_R_MATCH_TOO_SMALL, false);
}

/* ---- processing one item ------------------------------------------------- */

static void deliver_eager(struct weft_core *c, unsigned int qi, const struct m_entry *p,
			  uint64_t in, uint16_t src, const uint8_t *data, uint32_t len,
			  unsigned int type, bool loopback, bool *nak)
{
	struct m_queue *q = &c->match->q[qi];
	struct weft_match_cqe e;
	uint32_t n = len;

	memset(&e, 0, sizeof(e));
	e.type = (uint8_t)type;
	e.queue = (uint16_t)qi;
	e.match = in;
	e.match_id = p->id;
	e.req_id = p->req_id;
	e.length = len;
	e.src_node = src;
	e.flags = loopback ? WEFT_MCQEF_LOOPBACK : 0;
	*nak = false;
	if (len > p->len) {
		if (q->cfg & WEFT_QCFG_TRUNCATE) {
			n = p->len;
			e.flags |= WEFT_MCQEF_TRUNCATED;
		} else {
			n = 0;
			e.status = WEFT_R_MATCH_TOO_SMALL;
			*nak = true;
		}
	}
	if (n && weft_dma_write(c, p->addr, data, n) != 0) {
		e.status = WEFT_R_DMA_ERROR;
		n = 0;
		mdrop(c, WEFT_R_DMA_ERROR);
	}
	e.written = n;
	if (e.status == WEFT_R_MATCH_TOO_SMALL)
		mdrop(c, WEFT_R_MATCH_TOO_SMALL);
	cqe_post(c, &e);
	weft_count(c, WEFT_CNT_M_MATCHES, 1);
}

/* An arrival matched posted entry pi (already unlinked). */
static void arrival_matched(struct weft_core *c, unsigned int qi, struct m_item *it, uint32_t pi)
{
	struct weft_match *m = c->match;
	struct m_entry *p = &m->e[pi];
	bool nak;

	if (it->wh.op == WEFT_MWOP_EAGER) {
		deliver_eager(c, qi, p, it->wh.match, it->src, it->data, it->wh.len,
			      WEFT_MCQE_MATCH_COPY, it->loopback, &nak);
		if (nak)
			tx_nak(c, it->src, &it->wh, WEFT_R_MATCH_TOO_SMALL, false);
	} else {
		struct weft_match_whdr a;
		uint32_t r = rslot_alloc(m);

		memset(&a, 0, sizeof(a));
		if (it->wh.total > p->len && !(m->q[qi].cfg & WEFT_QCFG_TRUNCATE)) {
			rndv_too_small(c, qi, p, it->src, &it->wh);
		} else {
			/* The caller checked a slot was free. */
			rslot_start(c, r, p, qi, it->src, it->wh.sslot, it->wh.match,
				    it->wh.total, false);
			a.op = WEFT_MWOP_RNDV_ACK;
			a.queue = (uint16_t)qi;
			a.match = it->wh.match;
			a.total = m->rs[r].size;
			a.sslot = it->wh.sslot;
			a.rslot = r;
			a.status = WEFT_MACK_MATCHED;
			a.req_id = it->wh.req_id;
			tx_pkt(c, it->src, &a, NULL, 0);
		}
	}
	entry_free(m, pi);
}

static void cam_add(struct m_queue *q, uint64_t match, uint16_t node)
{
	unsigned int k = q->seq % WEFT_MATCH_CAM;

	q->cam[k].seq = q->seq;
	q->cam[k].match = match;
	q->cam[k].node = node;
}

/* An arrival found no posted receive.  Returns false when it must wait
 * (software-UEQ sync in force). */
static bool arrival_unexpected(struct weft_core *c, unsigned int qi, struct m_item *it)
{
	struct weft_match *m = c->match;
	struct m_queue *q = &m->q[qi];
	uint32_t ui;
	struct m_entry *u;

	if (q->cfg & WEFT_QCFG_SW_UEQ) {
		struct weft_match_cqe e;
		uint64_t addr, cap;

		if (q->sync)
			return false;
		if (it->wh.op != WEFT_MWOP_EAGER) {
			tx_nak(c, it->src, &it->wh, WEFT_R_MATCH_MODE, false);
			return true;
		}
		if (!pool_take(m, it->wh.len, &addr, &cap)) {
			tx_nak(c, it->src, &it->wh, WEFT_R_MATCH_NO_BUFFER, true);
			return true;
		}
		memset(&e, 0, sizeof(e));
		if (it->wh.len && weft_dma_write(c, addr, it->data, it->wh.len) != 0) {
			e.status = WEFT_R_DMA_ERROR;
			mdrop(c, WEFT_R_DMA_ERROR);
		}
		cam_add(q, it->wh.match, it->src);
		q->seq++;
		e.type = WEFT_MCQE_UNEXPECTED;
		e.flags = it->loopback ? WEFT_MCQEF_LOOPBACK : 0;
		e.queue = (uint16_t)qi;
		e.match = it->wh.match;
		e.length = it->wh.len;
		e.written = e.status ? 0 : it->wh.len;
		e.addr = addr;
		e.src_node = it->src;
		e.seq = q->seq;
		cqe_post(c, &e);
		weft_count(c, WEFT_CNT_M_UNEXPECTED, 1);
		weft_count(c, WEFT_CNT_M_HOST_STORES, 1);
		return true;
	}
	ui = store_take(c, qi, false);
	if (ui == NIL) {
		tx_nak(c, it->src, &it->wh, WEFT_R_MATCH_STORE_FULL, true);
		return true;
	}
	u = &m->e[ui];
	u->match = it->wh.match;
	u->node = it->src;
	u->req_id = it->wh.req_id;
	if (it->wh.op == WEFT_MWOP_EAGER) {
		u->len = it->wh.len;
		u->frag = frags_store(m, it->data, it->wh.len);
		if (u->frag != NIL) {
			u->kind = E_UMB;
			weft_count(c, WEFT_CNT_M_UMB_STORES, 1);
		} else if (pool_take(m, it->wh.len, &u->addr, &u->cap) &&
			   weft_dma_write(c, u->addr, it->data, it->wh.len) == 0) {
			u->kind = E_HOST;
			weft_count(c, WEFT_CNT_M_HOST_STORES, 1);
		} else {
			entry_free(m, ui);
			tx_nak(c, it->src, &it->wh, WEFT_R_MATCH_NO_BUFFER, true);
			return true;
		}
	} else {
		struct weft_match_whdr a;

		const struct m_chan *ch = chan_of(m, it->src, false);

		u->kind = E_RNDV;
		u->len = (uint32_t)it->wh.total;
		u->sslot = it->wh.sslot;
		u->cgen = ch ? ch->rx_gen : 0;
		memset(&a, 0, sizeof(a));
		a.op = WEFT_MWOP_RNDV_ACK;
		a.queue = (uint16_t)qi;
		a.match = it->wh.match;
		a.sslot = it->wh.sslot;
		a.rslot = NIL;
		a.status = it->wh.total <= m->rndv_threshold ? WEFT_MACK_PENDING
							    : WEFT_MACK_NOT_FOUND;
		a.req_id = it->wh.req_id;
		tx_pkt(c, it->src, &a, NULL, 0);
	}
	u->id = q->seq;
	cam_add(q, it->wh.match, it->src);
	q->seq++;
	list_append(m, &q->ueq, ui);
	weft_count(c, WEFT_CNT_M_UNEXPECTED, 1);
	return true;
}

/* A new posted receive matched unexpected entry ui (already unlinked). */
static void post_matched(struct weft_core *c, unsigned int qi, const struct weft_match_op *op,
			 uint32_t ui)
{
	struct weft_match *m = c->match;
	struct m_entry *u = &m->e[ui];
	struct m_entry p;
	bool nak;

	memset(&p, 0, sizeof(p));
	p.addr = op->addr;
	p.len = op->len;
	p.id = op->match_id;
	p.req_id = op->req_id;
	if (u->kind == E_UMB) {
		frags_load(m, u->frag, m->scratch, u->len);
		deliver_eager(c, qi, &p, u->match, u->node, m->scratch, u->len,
			      WEFT_MCQE_MATCH_COPY, u->node == c->cfg.node_id, &nak);
		frags_free(m, u->frag);
	} else if (u->kind == E_HOST) {
		if (m->q[qi].cfg & WEFT_QCFG_NO_COPY) {
			struct weft_match_cqe e;

			memset(&e, 0, sizeof(e));
			e.type = WEFT_MCQE_NO_COPY;
			e.queue = (uint16_t)qi;
			e.match = u->match;
			e.match_id = op->match_id;
			e.req_id = op->req_id;
			e.length = u->len;
			e.addr = u->addr;
			e.src_node = u->node;
			cqe_post(c, &e);
			weft_count(c, WEFT_CNT_M_MATCHES, 1);
		} else {
			if (weft_dma_read(c, u->addr, m->scratch, u->len) != 0) {
				memset(m->scratch, 0, u->len);
				mdrop(c, WEFT_R_DMA_ERROR);
			}
			deliver_eager(c, qi, &p, u->match, u->node, m->scratch, u->len,
				      WEFT_MCQE_COPY, u->node == c->cfg.node_id, &nak);
			pool_give(m, u->addr, u->cap);
		}
	} else {
		struct weft_match_whdr h;
		uint32_t r = rslot_alloc(m);
		bool small = u->len <= m->rndv_threshold;

		const struct m_chan *ch = chan_of(m, u->node, false);

		memset(&h, 0, sizeof(h));
		h.queue = (uint16_t)qi;
		h.match = u->match;
		h.sslot = u->sslot;
		h.total = u->len;
		if (!ch || ch->rx_gen != u->cgen) {
			/* Its sender gave the request up (peer dead or restarted). */
			rslot_start(c, r, &p, qi, u->node, u->sslot, u->match, u->len, small);
			rslot_complete(c, r, WEFT_R_MATCH_PEER_DEAD);
			mdrop(c, WEFT_R_MATCH_PEER_DEAD);
		} else if (u->len > op->len && !(m->q[qi].cfg & WEFT_QCFG_TRUNCATE)) {
			h.op = WEFT_MWOP_RNDV_REQ;
			rndv_too_small(c, qi, &p, u->node, &h);
		} else {
			rslot_start(c, r, &p, qi, u->node, u->sslot, u->match, u->len, small);
			h.op = small ? WEFT_MWOP_PULL : WEFT_MWOP_CTS;
			h.rslot = r;
			h.total = m->rs[r].size;
			tx_pkt(c, u->node, &h, NULL, 0);
			if (m->rs[r].size == 0 && small) {
				struct weft_match_whdr f = h;

				f.op = WEFT_MWOP_FIN;
				f.flags = WEFT_MWF_TO_SENDER;
				tx_pkt(c, u->node, &f, NULL, 0);
				rslot_complete(c, r, 0);
			}
		}
	}
	entry_free(m, ui);
}

static void post_append(struct weft_core *c, unsigned int qi, const struct weft_match_op *op)
{
	struct weft_match *m = c->match;
	uint32_t pi = store_take(c, qi, true);
	struct m_entry *p;

	if (pi == NIL) {
		cqe_simple(c, WEFT_MCQE_OP_ERROR, qi, WEFT_R_MATCH_STORE_FULL, op->req_id);
		return;
	}
	p = &m->e[pi];
	p->kind = E_POSTED;
	p->flags = op->flags & WEFT_MOPF_MULTI;
	p->node = op->node;
	p->match = op->match;
	p->ignore = op->ignore;
	p->addr = op->addr;
	p->claim = op->claim;
	p->len = op->len;
	p->id = op->match_id;
	p->req_id = op->req_id;
	list_append(m, &m->q[qi].prq, pi);
	weft_count(c, WEFT_CNT_M_POSTS, 1);
	if (op->flags & WEFT_MOPF_CR) {
		struct weft_match_cqe e;

		memset(&e, 0, sizeof(e));
		e.type = WEFT_MCQE_POSTED;
		e.queue = (uint16_t)qi;
		e.match = op->match;
		e.match_id = op->match_id;
		e.req_id = op->req_id;
		cqe_post(c, &e);
	}
}

/* Item 109: would a receive (probe) posted by software that had seen
 * `seen` unexpected headers be current: none came since, or the CAM holds
 * every one that came and none of them matches it? */
static bool cam_clear(const struct m_queue *q, uint32_t seen, const struct m_entry *probe)
{
	uint32_t behind = q->seq - seen, k;

	if (behind == 0)
		return true;
	if (behind > WEFT_MATCH_CAM)
		return false;
	for (k = seen; k != q->seq; k++) {
		unsigned int s = k % WEFT_MATCH_CAM;

		if (q->cam[s].seq != k ||
		    entry_matches(q, probe, q->cam[s].match, q->cam[s].node))
			return false;
	}
	return true;
}

static bool optimistic_ok(const struct weft_match *m, unsigned int qi,
			  const struct weft_match_op *op)
{
	const struct m_entry probe = {
		.kind = E_POSTED, .match = op->match, .ignore = op->ignore, .node = op->node,
	};

	return cam_clear(&m->q[qi], op->seen, &probe);
}

static void dump_finish(struct weft_core *c, unsigned int qi, const struct weft_match_op *op,
			uint32_t count)
{
	struct weft_match_cqe e;

	memset(&e, 0, sizeof(e));
	e.type = WEFT_MCQE_DUMP;
	e.flags = op->flags & WEFT_MOPF_UEQ ? 1 : 0;
	e.queue = (uint16_t)qi;
	e.req_id = op->req_id;
	e.length = count;
	cqe_post(c, &e);
	weft_count(c, WEFT_CNT_M_DUMPS, 1);
}

/* The public form of a store entry (hw-spec 17.4). */
static void dump_fill(const struct m_entry *x, struct weft_match_dump *d)
{
	memset(d, 0, sizeof(*d));
	d->match = x->match;
	d->len = x->len;
	d->id = x->id;
	switch (x->kind) {
	case E_POSTED:
		d->kind = WEFT_MDUMP_POSTED;
		d->ignore = x->ignore;
		d->node = x->node;
		d->flags = x->flags & WEFT_MOPF_MULTI ? WEFT_MDUMPF_MULTI : 0;
		break;
	case E_TM:
		d->kind = WEFT_MDUMP_TAG;
		d->ignore = x->ignore;
		d->aux = x->req_id;
		d->flags = x->flags & TM_INACTIVE ? WEFT_MDUMPF_INACTIVE : 0;
		break;
	case E_RNDV:
		d->kind = WEFT_MDUMP_RNDV;
		d->node = x->node;
		d->aux = x->sslot;
		break;
	default:
		d->kind = x->kind == E_UMB ? WEFT_MDUMP_UMB : WEFT_MDUMP_HOST;
		d->node = x->node;
		break;
	}
}

static void dump_entry(struct weft_core *c, const struct weft_match_op *op, uint32_t n,
		       const struct m_entry *x)
{
	struct weft_match_dump d;

	dump_fill(x, &d);
	if (weft_dma_write(c, op->addr + (uint64_t)n * sizeof(d), &d, sizeof(d)) != 0)
		mdrop(c, WEFT_R_DMA_ERROR);
}

/*
 * One unit of matcher k's work on the head item of its queue: compare up
 * to step entries, and finish the item when the search ends.  Returns
 * true when the item is done (the matcher is free again).
 */
static bool matcher_step(struct weft_core *c, struct m_matcher *mt)
{
	struct weft_match *m = c->match;
	unsigned int qi = mt->q;
	struct m_queue *q = &m->q[qi];
	struct m_item *it = &m->items[q->fifo_head];
	const struct weft_match_op *op = &it->op;
	uint32_t budget = m->step, i;

	if (!it->is_op) {
		if (!(q->cfg & WEFT_QCFG_ENABLE)) {
			tx_nak(c, it->src, &it->wh, WEFT_R_MATCH_QUEUE, false);
			return true;
		}
		if (q->stopped) {
			tx_nak(c, it->src, &it->wh, WEFT_R_MATCH_STOPPED, true);
			return true;
		}
		while (budget--) {
			i = mt->last == NIL ? q->prq.head : m->e[mt->last].next;
			if (i == NIL) {
				/* Under software-UEQ sync the arrival waits (108). */
				if (!arrival_unexpected(c, qi, it))
					q->parked = true;
				return true;
			}
			weft_count(c, WEFT_CNT_M_COMPARES, 1);
			if (!entry_matches(q, &m->e[i], it->wh.match, it->src)) {
				mt->last = i;
				continue;
			}
			if ((m->e[i].flags & WEFT_MOPF_MULTI) && !claim(c, m->e[i].claim)) {
				list_unlink(m, &q->prq, i);
				entry_free(m, i);
				weft_count(c, WEFT_CNT_M_CLAIMS_LOST, 1);
				mdrop(c, WEFT_R_MATCH_CLAIMED);
				continue;
			}
			if (it->wh.op == WEFT_MWOP_RNDV_REQ && rslot_alloc(m) == NIL) {
				tx_nak(c, it->src, &it->wh, WEFT_R_MATCH_RNDV_SLOT, true);
				return true;
			}
			list_unlink(m, &q->prq, i);
			arrival_matched(c, qi, it, i);
			return true;
		}
		return false;
	}
	switch (op->opcode) {
	case WEFT_MOP_POST:
		if (!(q->cfg & WEFT_QCFG_ENABLE) || q->stopped) {
			cqe_simple(c, WEFT_MCQE_OP_ERROR, qi, q->stopped ? WEFT_R_MATCH_STOPPED :
				   WEFT_R_MATCH_QUEUE, op->req_id);
			return true;
		}
		if (q->cfg & WEFT_QCFG_SW_UEQ) {
			if ((op->flags & WEFT_MOPF_OPTIMISTIC) && !optimistic_ok(m, qi, op)) {
				cqe_simple(c, WEFT_MCQE_OP_ERROR, qi, WEFT_R_MATCH_STALE_POST,
					   op->req_id);
				return true;
			}
			post_append(c, qi, op);
			return true;
		}
		while (budget--) {
			const struct m_entry probe = {
				.match = op->match, .ignore = op->ignore, .node = op->node,
			};

			i = mt->last == NIL ? q->ueq.head : m->e[mt->last].next;
			if (i == NIL) {
				post_append(c, qi, op);
				return true;
			}
			weft_count(c, WEFT_CNT_M_COMPARES, 1);
			if (!entry_matches(q, &probe, m->e[i].match, m->e[i].node)) {
				mt->last = i;
				continue;
			}
			/* A rendezvous match needs a receive slot: wait for one. */
			if (m->e[i].kind == E_RNDV && rslot_alloc(m) == NIL)
				return false;
			if ((op->flags & WEFT_MOPF_MULTI) && !claim(c, op->claim)) {
				weft_count(c, WEFT_CNT_M_CLAIMS_LOST, 1);
				mdrop(c, WEFT_R_MATCH_CLAIMED);
				return true;
			}
			list_unlink(m, &q->ueq, i);
			post_matched(c, qi, op, i);
			return true;
		}
		return false;
	case WEFT_MOP_REMOVE:
		while (budget--) {
			struct weft_match_cqe e;

			i = mt->last == NIL ? q->prq.head : m->e[mt->last].next;
			if (i != NIL && m->e[i].id != op->match_id) {
				mt->last = i;
				continue;
			}
			memset(&e, 0, sizeof(e));
			e.type = WEFT_MCQE_REMOVED;
			e.queue = (uint16_t)qi;
			e.match_id = op->match_id;
			e.req_id = op->req_id;
			if (i == NIL) {
				e.status = WEFT_R_MATCH_NOT_FOUND;
				mdrop(c, WEFT_R_MATCH_NOT_FOUND);
			} else {
				e.match = m->e[i].match;
				list_unlink(m, &q->prq, i);
				entry_free(m, i);
				weft_count(c, WEFT_CNT_M_REMOVES, 1);
			}
			cqe_post(c, &e);
			return true;
		}
		return false;
	case WEFT_MOP_SYNC:
		if (!(q->cfg & WEFT_QCFG_SW_UEQ)) {
			cqe_simple(c, WEFT_MCQE_OP_ERROR, qi, WEFT_R_MATCH_MODE, op->req_id);
		} else {
			struct weft_match_cqe e;

			q->sync = true;
			memset(&e, 0, sizeof(e));
			e.type = WEFT_MCQE_SYNC;
			e.queue = (uint16_t)qi;
			e.req_id = op->req_id;
			e.seq = q->seq;
			cqe_post(c, &e);
			weft_count(c, WEFT_CNT_M_SYNCS, 1);
		}
		return true;
	case WEFT_MOP_DUMP:
		while (budget--) {
			const struct m_list *l = (op->flags & WEFT_MOPF_UEQ) ? &q->ueq : &q->prq;

			i = mt->last == NIL ? l->head : m->e[mt->last].next;
			if (i == NIL || (uint64_t)(mt->count + 1) * WEFT_MATCH_HDR_BYTES > op->len) {
				dump_finish(c, qi, op, mt->count);
				return true;
			}
			dump_entry(c, op, mt->count++, &m->e[i]);
			mt->last = i;
		}
		return false;
	default:
		return true;
	}
}

/* Room for what finishing any item may produce. */
static bool can_finish(const struct weft_match *m)
{
	return cq_room(m) >= CQ_RESERVE && txq_room(m, 2);
}

static bool matchers_run(struct weft_core *c)
{
	struct weft_match *m = c->match;
	bool did = false;
	uint32_t k;

	/* Hand queues with work to free matchers. */
	for (k = 0; k < m->nmatchers && m->runq_n; k++) {
		struct m_matcher *mt = &m->m[k];
		unsigned int qi;

		if (mt->busy)
			continue;
		qi = m->runq[m->runq_head];
		m->runq_head = (m->runq_head + 1) % WEFT_MATCH_NR_QUEUES;
		m->runq_n--;
		m->q[qi].in_runq = false;
		m->q[qi].busy = true;
		mt->busy = true;
		mt->q = (uint16_t)qi;
		mt->last = NIL;
		mt->count = 0;
	}
	for (k = 0; k < m->nmatchers; k++) {
		struct m_matcher *mt = &m->m[(m->mrr + k) % m->nmatchers];
		struct m_queue *q;

		if (!mt->busy)
			continue;
		if (!can_finish(m))
			break;
		q = &m->q[mt->q];
		did = true;
		if (!matcher_step(c, mt))
			continue;
		mt->busy = false;
		q->busy = false;
		if (q->parked)
			continue;
		fifo_pop(m, mt->q);
		runq_add(m, mt->q);
	}
	m->mrr++;
	return did;
}

/* ---- sender side: streaming rendezvous data ------------------------------ */

static bool stream_one(struct weft_core *c)
{
	struct weft_match *m = c->match;
	uint32_t k;

	for (k = 0; k < WEFT_MATCH_RNDV_SLOTS; k++) {
		struct m_sslot *s = &m->ss[k];
		struct weft_match_whdr h;
		uint64_t n;

		if (s->state != S_STREAM)
			continue;
		if (!txq_room(m, 2) || cq_room(m) < 1)
			return false;
		memset(&h, 0, sizeof(h));
		h.queue = s->queue;
		h.match = s->match;
		h.total = s->total;
		h.sslot = k;
		h.rslot = s->rslot;
		h.req_id = s->req_id;
		n = s->size - s->off;
		if (n > WEFT_MATCH_EAGER_MAX)
			n = WEFT_MATCH_EAGER_MAX;
		if (n) {
			if (weft_dma_read(c, s->addr + s->off, m->scratch, n) != 0) {
				memset(m->scratch, 0, n);
				mdrop(c, WEFT_R_DMA_ERROR);
			}
			h.op = WEFT_MWOP_DATA;
			h.len = (uint32_t)n;
			h.offset = s->off;
			tx_pkt(c, s->dst, &h, m->scratch, (uint32_t)n);
			s->off += n;
		}
		if (s->off >= s->size) {
			if (s->pull) {
				s->state = S_WAIT_FIN;
			} else {
				h.op = WEFT_MWOP_FIN;
				h.len = 0;
				h.offset = s->size;
				/* SEND_DONE when the receiver acknowledges the FIN. */
				tx_pkt(c, s->dst, &h, NULL, 0);
				s->state = S_FREE;
			}
		}
		return true;
	}
	return false;
}

/* ---- doorbell ------------------------------------------------------------- */

static void db_status(struct weft_core *c, unsigned int st, unsigned int reason,
		      const struct weft_match_op *op)
{
	struct weft_match *m = c->match;

	m->db_status = st | ((uint64_t)reason << 32);
	mtrace(c, weft_mop_name(op ? op->opcode : 0), op ? op->queue : 0,
	       op ? op->match : 0, reason);
	if (reason)
		mdrop(c, reason);
	else
		c->ops.kick(c->opaque);
}

static void do_send(struct weft_core *c, const struct weft_match_op *op)
{
	struct weft_match *m = c->match;
	struct weft_match_whdr h;
	bool eager = op->len <= WEFT_MATCH_EAGER_MAX && !(op->flags & WEFT_MOPF_RNDV);

	if (op->node > WEFT_NODE_MAX_UNICAST || op->queue >= WEFT_MATCH_NR_QUEUES ||
	    (op->match & ~WEFT_MW_WC_MASK) == 0 || op->len > WEFT_MATCH_MAX_MSG) {
		db_status(c, WEFT_CMD_EINVAL, (op->match & ~WEFT_MW_WC_MASK) == 0 ?
			  WEFT_R_MATCH_ZERO_WORD : WEFT_R_MATCH_BAD_OP, op);
		return;
	}
	if (!txq_room(m, 1) || cq_room(m) < 1) {
		db_status(c, WEFT_CMD_EBUSY, WEFT_R_MATCH_BUSY, op);
		return;
	}
	memset(&h, 0, sizeof(h));
	h.queue = op->queue;
	h.match = op->match & ~WEFT_MW_WC_MASK;
	h.total = op->len;
	h.req_id = op->req_id;
	if (eager) {
		if (op->len && weft_dma_read(c, op->addr, m->scratch, op->len) != 0) {
			db_status(c, WEFT_CMD_EFAULT, WEFT_R_DMA_ERROR, op);
			return;
		}
		h.op = WEFT_MWOP_EAGER;
		h.len = op->len;
		/* SEND_DONE when the receiver acknowledges it. */
		tx_pkt(c, op->node, &h, m->scratch, op->len);
	} else {
		uint32_t k = sslot_alloc(m);
		struct m_sslot *s;

		if (k == NIL) {
			db_status(c, WEFT_CMD_EBUSY, WEFT_R_MATCH_RNDV_SLOT, op);
			return;
		}
		s = &m->ss[k];
		memset(s, 0, sizeof(*s));
		s->state = S_WAIT_ACK;
		s->dst = op->node;
		s->queue = op->queue;
		s->req_id = op->req_id;
		s->match = h.match;
		s->addr = op->addr;
		s->total = op->len;
		h.op = WEFT_MWOP_RNDV_REQ;
		h.sslot = k;
		tx_pkt(c, op->node, &h, NULL, 0);
		weft_count(c, WEFT_CNT_M_RNDV, 1);
	}
	db_status(c, WEFT_CMD_OK, 0, op);
}

static void doorbell(struct weft_core *c, uint64_t addr)
{
	struct weft_match *m = c->match;
	struct weft_match_op op;
	struct m_queue *q;
	uint32_t i;

	weft_count(c, WEFT_CNT_M_OPS, 1);
	if ((addr & 7) || weft_dma_read(c, addr, &op, sizeof(op)) != 0) {
		db_status(c, WEFT_CMD_EFAULT, WEFT_R_DMA_ERROR, NULL);
		return;
	}
	if (!cq_enabled(m)) {
		db_status(c, WEFT_CMD_ESTATE, WEFT_R_MATCH_CQ, &op);
		return;
	}
	if ((op.flags & ~WEFT_MOPF_VALID) || op.reserved0 || op.reserved1 ||
	    op.queue >= WEFT_MATCH_NR_QUEUES) {
		db_status(c, WEFT_CMD_EINVAL, op.queue >= WEFT_MATCH_NR_QUEUES ?
			  WEFT_R_MATCH_QUEUE : WEFT_R_MATCH_BAD_OP, &op);
		return;
	}
	if (op.opcode != WEFT_MOP_POOL_ADD && op.opcode != WEFT_MOP_RNDV_PUT &&
	    op.opcode != WEFT_MOP_SEND && m->q[op.queue].tm) {
		db_status(c, WEFT_CMD_EINVAL, WEFT_R_TM_QUEUE_LENT, &op);
		return;
	}
	switch (op.opcode) {
	case WEFT_MOP_SEND:
		do_send(c, &op);
		return;
	case WEFT_MOP_POOL_ADD:
		if (m->npool >= WEFT_MATCH_POOL_MAX || op.len == 0 ||
		    op.len > WEFT_MATCH_EAGER_MAX * 64u) {
			db_status(c, WEFT_CMD_EINVAL, m->npool >= WEFT_MATCH_POOL_MAX ?
				  WEFT_R_MATCH_BUSY : WEFT_R_MATCH_BAD_OP, &op);
			return;
		}
		pool_give(m, op.addr, op.len);
		db_status(c, WEFT_CMD_OK, 0, &op);
		return;
	case WEFT_MOP_RNDV_PUT:
		if (op.match_id >= WEFT_MATCH_RNDV_SLOTS ||
		    m->ss[op.match_id].state != S_WAIT_PUT) {
			db_status(c, WEFT_CMD_EINVAL, WEFT_R_MATCH_RNDV_SLOT, &op);
			return;
		}
		m->ss[op.match_id].state = S_STREAM;
		db_status(c, WEFT_CMD_OK, 0, &op);
		return;
	case WEFT_MOP_POST:
		if ((op.match & ~WEFT_MW_WC_MASK) == 0) {
			db_status(c, WEFT_CMD_EINVAL, WEFT_R_MATCH_ZERO_WORD, &op);
			return;
		}
		if (op.node != WEFT_MATCH_ANY_SOURCE && op.node > WEFT_NODE_MAX_UNICAST) {
			db_status(c, WEFT_CMD_EINVAL, WEFT_R_MATCH_BAD_OP, &op);
			return;
		}
		break;
	case WEFT_MOP_REMOVE:
	case WEFT_MOP_SYNC:
	case WEFT_MOP_DUMP:
		break;
	default:
		db_status(c, WEFT_CMD_EINVAL, WEFT_R_MATCH_BAD_OP, &op);
		return;
	}
	q = &m->q[op.queue];
	/* Software-UEQ: a post under sync lands at once (item 108). */
	if (op.opcode == WEFT_MOP_POST && q->sync && (q->cfg & WEFT_QCFG_SW_UEQ)) {
		if (cq_room(m) < 1) {
			db_status(c, WEFT_CMD_EBUSY, WEFT_R_MATCH_BUSY, &op);
			return;
		}
		if (q->stopped || !(q->cfg & WEFT_QCFG_ENABLE))
			cqe_simple(c, WEFT_MCQE_OP_ERROR, op.queue, q->stopped ?
				   WEFT_R_MATCH_STOPPED : WEFT_R_MATCH_QUEUE, op.req_id);
		else
			post_append(c, op.queue, &op);
		q->sync = false;
		q->parked = false;
		runq_add(m, op.queue);
		db_status(c, WEFT_CMD_OK, 0, &op);
		return;
	}
	i = item_alloc(m);
	if (i == NIL) {
		db_status(c, WEFT_CMD_EBUSY, WEFT_R_MATCH_BUSY, &op);
		return;
	}
	m->items[i].is_op = true;
	m->items[i].op = op;
	fifo_push(m, op.queue, i);
	db_status(c, WEFT_CMD_OK, 0, &op);
}

/* ---- reliable channels: receive side, dead peers, resend timer ----------- */

static uint32_t peer_slots(const struct weft_match *m, uint16_t node)
{
	uint32_t k, n = 0;

	for (k = 0; k < WEFT_MATCH_RNDV_SLOTS; k++) {
		n += m->ss[k].state != S_FREE && m->ss[k].dst == node;
		n += m->rs[k].used && m->rs[k].src == node;
	}
	return n;
}

/* The rendezvous state shared with node ends: its peer is dead, or has
 * given this adapter up and restarted its sequence.  Its unexpected
 * rendezvous requests go stale (post_matched). */
static void peer_slots_fail(struct weft_core *c, struct m_chan *ch)
{
	struct weft_match *m = c->match;
	uint32_t k;

	for (k = 0; k < WEFT_MATCH_RNDV_SLOTS; k++) {
		if (m->ss[k].state != S_FREE && m->ss[k].dst == ch->node)
			sslot_cqe(c, k, WEFT_MCQE_SEND_DONE, WEFT_R_MATCH_PEER_DEAD, S_FREE);
		if (m->rs[k].used && m->rs[k].src == ch->node)
			rslot_complete(c, k, WEFT_R_MATCH_PEER_DEAD);
	}
	ch->rx_gen++;
}

/* Give the peer of ch up after every resend: each unacknowledged frame
 * and each slot shared with it ends in an error completion.  Returns
 * false, changing nothing, while the completion ring lacks room. */
static bool peer_dead(struct weft_core *c, struct m_chan *ch)
{
	struct weft_match *m = c->match;
	uint32_t need = peer_slots(m, ch->node), fi;

	for (fi = ch->head; fi != NIL; fi = m->fr[fi].next)
		need += frame_cqes(&m->fr[fi]);
	if (!cq_can(m, need))
		return false;
	mtrace(c, "MATCH_PEER_DEAD", ch->node, ch->tx_next - ch->tx_una, WEFT_R_MATCH_PEER_DEAD);
	mdrop(c, WEFT_R_MATCH_PEER_DEAD);
	while ((fi = ch->head) != NIL) {
		ch->head = m->fr[fi].next;
		frame_done(c, fi, WEFT_R_MATCH_PEER_DEAD);
	}
	ch->tail = NIL;
	/* A gap in the sequence tells the peer, if it comes back, that this
	 * adapter gave it up (rx_seq). */
	ch->tx_next += 0x10000u;
	ch->tx_una = ch->tx_next;
	ch->retries = 0;
	ch->deadline = 0;
	peer_slots_fail(c, ch);
	return true;
}

/*
 * Sequence check of a received packet other than ACK: true to take it.
 * Taken: the next PSN of the peer's incarnation, or a SYN at or after it
 * (after it: the peer gave this adapter up, a restart) or of another
 * incarnation.  Before it: a duplicate, acknowledged again.  A packet is
 * taken only with room for what it may write at once (completions, and a
 * frame for an arrival or a DATA), else its sender resends it.
 */
static bool rx_seq(struct weft_core *c, const struct weft_wire_hdr *wh,
		   const struct weft_match_whdr *mh)
{
	struct weft_match *m = c->match;
	bool syn = mh->flags & WEFT_MWF_SYN, restart = false;
	struct m_chan *ch = chan_of(m, wh->src_node, syn);
	uint32_t psn = wh->tid, ep = (uint32_t)wh->protocol_cookie;

	if (!ch) {
		weft_drop(c, wh, WEFT_NO_WINDOW, syn ? WEFT_R_MATCH_PEERS : WEFT_R_MATCH_SEQ);
		return false;
	}
	if (wh->protocol_cookie >> 32) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_SEQ);
		return false;
	}
	if (!ch->rx_known || ep != ch->rx_epoch) {
		if (!syn) {
			weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_SEQ);
			return false;
		}
		restart = ch->rx_known;
	} else if (psn - ch->rx_next >= 0x80000000u) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_DUP);
		ack_owe(m, ch);
		return false;
	} else if (psn != ch->rx_next) {
		if (!syn) {
			weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_SEQ);
			return false;
		}
		restart = true;
	}
	/* An arrival may be NAKed at once and a pulled DATA answered with a
	 * FIN: they need a frame; the other packets only completions. */
	if ((!m->frfree_n && (mh->op == WEFT_MWOP_EAGER || mh->op == WEFT_MWOP_RNDV_REQ ||
			      mh->op == WEFT_MWOP_DATA)) ||
	    !cq_can(m, CQ_RESERVE + (restart ? peer_slots(m, ch->node) : 0))) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_NO_ROOM);
		return false;
	}
	if (restart) {
		mtrace(c, "MATCH_PEER_RESTART", ch->node, psn, WEFT_R_MATCH_PEER_DEAD);
		peer_slots_fail(c, ch);
	}
	ch->rx_known = true;
	ch->rx_epoch = ep;
	ch->rx_next = psn + 1;
	ack_owe(m, ch);
	return true;
}

/* A cumulative ACK: every frame before PSN offset was taken. */
static void rx_ack(struct weft_core *c, const struct weft_wire_hdr *wh,
		   const struct weft_match_whdr *mh)
{
	struct weft_match *m = c->match;
	struct m_chan *ch = chan_of(m, wh->src_node, false);
	uint32_t ack = (uint32_t)mh->offset, fi;
	bool moved = false;

	if (!ch || mh->len || mh->total != m->epoch || mh->offset >> 32) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_BAD_ACK);
		return;
	}
	/* At or before the oldest unacknowledged PSN: late or duplicated. */
	if (ch->tx_una - ack < 0x80000000u) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_DUP);
		return;
	}
	if (ack - ch->tx_una > ch->tx_next - ch->tx_una) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_BAD_ACK);
		return;
	}
	/* With the completion ring full the rest waits for a later ACK. */
	while (ch->tx_una != ack && (fi = ch->head) != NIL &&
	       cq_can(m, frame_cqes(&m->fr[fi]))) {
		ch->head = m->fr[fi].next;
		if (ch->head == NIL)
			ch->tail = NIL;
		ch->tx_una++;
		frame_done(c, fi, 0);
		moved = true;
	}
	if (!moved)
		return;
	ch->retries = 0;
	if (ch->head == NIL)
		ch->deadline = 0;
	else
		chan_arm(c, ch);
}

uint64_t weft_match_deadline(const struct weft_core *c)
{
	return c->match->deadline;
}

void weft_match_timer(struct weft_core *c)
{
	struct weft_match *m = c->match;
	uint64_t now = mnow(c), next = 0;
	uint32_t i, fi, n;

	if (!m->deadline || now < m->deadline)
		return;
	for (i = 0; i < m->nch; i++) {
		struct m_chan *ch = &m->ch[i];

		if (ch->deadline && now >= ch->deadline) {
			if (ch->head == NIL) {
				ch->deadline = 0;
			} else if (ch->retries >= WEFT_MATCH_RETRIES) {
				if (!peer_dead(c, ch))
					ch->deadline = now + rto(ch);
			} else {
				/* Go-back-N: every unacknowledged frame again. */
				ch->retries++;
				for (n = 0, fi = ch->head; fi != NIL; fi = m->fr[fi].next) {
					if (!m->fr[fi].queued) {
						txq_push(m, fi);
						n++;
					}
				}
				mtrace(c, "MATCH_RESEND", ch->node, n, 0);
				ch->deadline = now + rto(ch);
			}
		}
		if (ch->deadline && (!next || ch->deadline < next))
			next = ch->deadline;
	}
	m->deadline = next;
	weft_timer_sync(c);
	c->ops.kick(c->opaque);
}

/* ---- receive ------------------------------------------------------------- */

static void rx_arrival(struct weft_core *c, const struct weft_wire_hdr *wh,
		       const struct weft_match_whdr *mh, const uint8_t *data)
{
	struct weft_match *m = c->match;
	uint32_t i;

	weft_count(c, WEFT_CNT_M_ARRIVALS, 1);
	if (mh->queue >= WEFT_MATCH_NR_QUEUES) {
		tx_nak(c, wh->src_node, mh, WEFT_R_MATCH_QUEUE, false);
		return;
	}
	if (m->q[mh->queue].tm) {
		tx_nak(c, wh->src_node, mh, WEFT_R_TM_QUEUE_LENT, false);
		return;
	}
	if ((mh->match & ~WEFT_MW_WC_MASK) == 0) {
		tx_nak(c, wh->src_node, mh, WEFT_R_MATCH_ZERO_WORD, false);
		return;
	}
	if (mh->op == WEFT_MWOP_RNDV_REQ && (mh->total > WEFT_MATCH_MAX_MSG || mh->len ||
					      mh->sslot >= WEFT_MATCH_RNDV_SLOTS)) {
		tx_nak(c, wh->src_node, mh, WEFT_R_MATCH_BAD_OP, false);
		return;
	}
	if (mh->op == WEFT_MWOP_EAGER && mh->total != mh->len) {
		tx_nak(c, wh->src_node, mh, WEFT_R_MATCH_BAD_OP, false);
		return;
	}
	i = item_alloc(m);
	if (i == NIL) {
		tx_nak(c, wh->src_node, mh, WEFT_R_MATCH_BUSY, true);
		return;
	}
	m->items[i].is_op = false;
	m->items[i].src = wh->src_node;
	m->items[i].loopback = wh->src_node == c->cfg.node_id;
	m->items[i].wh = *mh;
	m->items[i].wh.match &= ~WEFT_MW_WC_MASK;
	if (mh->len)
		memcpy(m->items[i].data, data, mh->len);
	fifo_push(m, mh->queue, i);
}

static struct m_sslot *sslot_of(struct weft_match *m, const struct weft_wire_hdr *wh,
				const struct weft_match_whdr *mh)
{
	struct m_sslot *s;

	if (mh->sslot >= WEFT_MATCH_RNDV_SLOTS)
		return NULL;
	s = &m->ss[mh->sslot];
	if (s->state == S_FREE || s->dst != wh->src_node)
		return NULL;
	return s;
}

static struct m_rslot *rslot_of(struct weft_match *m, const struct weft_wire_hdr *wh,
				const struct weft_match_whdr *mh)
{
	struct m_rslot *r;

	if (mh->rslot >= WEFT_MATCH_RNDV_SLOTS)
		return NULL;
	r = &m->rs[mh->rslot];
	if (!r->used || r->src != wh->src_node || r->sslot != mh->sslot)
		return NULL;
	return r;
}

void weft_match_rx(struct weft_core *c, const struct weft_wire_hdr *wh,
		   const uint8_t *payload, size_t len)
{
	struct weft_match *m = c->match;
	struct weft_match_whdr mh;
	const uint8_t *data = payload + sizeof(mh);
	struct m_sslot *s;
	struct m_rslot *r;

	if (len < sizeof(mh)) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_BAD_OP);
		return;
	}
	memcpy(&mh, payload, sizeof(mh));
	if (mh.len != len - sizeof(mh) || mh.len > WEFT_MATCH_EAGER_MAX ||
	    wh->src_node > WEFT_NODE_MAX_UNICAST) {
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_BAD_OP);
		return;
	}
	if (mh.op != WEFT_MWOP_ACK && !rx_seq(c, wh, &mh))
		return;
	{
		/* val = match word, addr = queue << 32 | sender's req_id,
		 * size = operation. */
		struct weft_trace t = {
			.kind = WEFT_TR_PKT_RX, .hdr = wh, .len = len,
			.name = weft_mwop_name(mh.op), .window = WEFT_NO_WINDOW,
			.val = mh.match, .addr = (uint64_t)mh.queue << 32 | mh.req_id,
			.size = mh.op,
		};

		weft_trace(c, &t);
	}
	weft_count(c, WEFT_CNT_RX_PACKETS, 1);
	weft_count(c, WEFT_CNT_RX_BYTES, len);
	switch (mh.op) {
	case WEFT_MWOP_ACK:
		rx_ack(c, wh, &mh);
		return;
	case WEFT_MWOP_EAGER:
	case WEFT_MWOP_RNDV_REQ:
		rx_arrival(c, wh, &mh, data);
		return;
	case WEFT_MWOP_RNDV_ACK:
		s = sslot_of(m, wh, &mh);
		if (!s || s->state != S_WAIT_ACK || mh.len) {
			weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_RNDV_SLOT);
			return;
		}
		if (mh.status == WEFT_MACK_MATCHED) {
			if (mh.total > s->total || mh.rslot >= WEFT_MATCH_RNDV_SLOTS) {
				weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_BAD_OP);
				return;
			}
			s->rslot = mh.rslot;
			s->size = mh.total;
			s->off = 0;
			if (s->total <= m->rndv_threshold)
				s->state = S_STREAM;
			else
				sslot_cqe(c, mh.sslot, WEFT_MCQE_RNDV_MATCHED, 0, S_WAIT_PUT);
		} else if (mh.status == WEFT_MACK_PENDING || mh.status == WEFT_MACK_NOT_FOUND) {
			sslot_cqe(c, mh.sslot, WEFT_MCQE_SEND_PENDING, mh.status, S_WAIT_PEER);
		} else {
			weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_BAD_OP);
		}
		return;
	case WEFT_MWOP_PULL:
	case WEFT_MWOP_CTS:
		s = sslot_of(m, wh, &mh);
		if (!s || s->state != S_WAIT_PEER || mh.total > s->total ||
		    mh.rslot >= WEFT_MATCH_RNDV_SLOTS || mh.len) {
			weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_RNDV_SLOT);
			return;
		}
		s->rslot = mh.rslot;
		s->size = mh.total;
		s->off = 0;
		if (mh.op == WEFT_MWOP_PULL) {
			s->pull = true;
			s->state = S_STREAM;
		} else {
			sslot_cqe(c, mh.sslot, WEFT_MCQE_RNDV_CTS, 0, S_WAIT_PUT);
		}
		return;
	case WEFT_MWOP_DATA:
		r = rslot_of(m, wh, &mh);
		if (!r || mh.offset > r->size || mh.len > r->size - mh.offset) {
			weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_RNDV_SLOT);
			return;
		}
		if (mh.len && weft_dma_write(c, r->addr + mh.offset, data, mh.len) != 0)
			mdrop(c, WEFT_R_DMA_ERROR);
		r->received += mh.len;
		if (r->pull && r->received >= r->size) {
			struct weft_match_whdr f;

			memset(&f, 0, sizeof(f));
			f.op = WEFT_MWOP_FIN;
			f.flags = WEFT_MWF_TO_SENDER;
			f.queue = r->queue;
			f.match = r->match;
			f.sslot = r->sslot;
			f.rslot = mh.rslot;
			tx_pkt(c, r->src, &f, NULL, 0);
			rslot_complete(c, mh.rslot, 0);
		}
		return;
	case WEFT_MWOP_FIN:
		if (mh.flags & WEFT_MWF_TO_SENDER) {
			s = sslot_of(m, wh, &mh);
			if (!s || s->state != S_WAIT_FIN || mh.len) {
				weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_RNDV_SLOT);
				return;
			}
			s->state = S_FREE;
			cqe_simple(c, WEFT_MCQE_SEND_DONE, s->queue, 0, s->req_id);
			return;
		}
		r = rslot_of(m, wh, &mh);
		if (!r || r->pull || mh.len) {
			weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_RNDV_SLOT);
			return;
		}
		rslot_complete(c, mh.rslot, 0);
		return;
	case WEFT_MWOP_NAK: {
		struct weft_match_cqe e;

		memset(&e, 0, sizeof(e));
		e.type = WEFT_MCQE_NAK;
		e.flags = mh.flags & WEFT_MWF_RNR ? WEFT_MCQEF_RNR : 0;
		e.queue = mh.queue;
		e.status = mh.status < WEFT_R__COUNT ? mh.status : WEFT_R_MATCH_BAD_OP;
		e.match = mh.match;
		e.req_id = mh.req_id;
		e.src_node = wh->src_node;
		/* A NAKed rendezvous request frees its send slot. */
		if (mh.total == 1) {
			s = sslot_of(m, wh, &mh);
			if (s && (s->state == S_WAIT_ACK || s->state == S_WAIT_PEER)) {
				e.flags |= WEFT_MCQEF_RNDV;
				e.seq = mh.sslot;
				s->state = S_FREE;
			}
		}
		cqe_post(c, &e);
		return;
	}
	default:
		weft_drop(c, wh, WEFT_NO_WINDOW, WEFT_R_MATCH_BAD_OP);
		return;
	}
}

/* ---- poll and registers ---------------------------------------------------- */

bool weft_match_has_work(const struct weft_core *c)
{
	const struct weft_match *m = c->match;
	uint32_t k;

	if (m->txq_n || m->acks_owed)
		return true;
	/* A full completion ring stops matching until MATCH_CQ_CONS moves
	 * (which kicks the core): no work to poll for meanwhile. */
	if (!can_finish(m))
		return false;
	if (m->runq_n)
		return true;
	for (k = 0; k < m->nmatchers; k++)
		if (m->m[k].busy)
			return true;
	for (k = 0; k < WEFT_MATCH_RNDV_SLOTS; k++)
		if (m->ss[k].state == S_STREAM)
			return true;
	return false;
}

int weft_match_poll(struct weft_core *c)
{
	struct weft_match *m = c->match;
	bool did = m->acks_owed != 0;

	if (!tx_acks(c))
		return -EAGAIN;
	while (tx_one(c))
		did = true;
	if (m->txq_n)
		return -EAGAIN;
	did |= matchers_run(c);
	did |= stream_one(c);
	while (tx_one(c))
		;
	tx_acks(c);
	return did ? 1 : 0;
}

uint64_t weft_match_reg_read(struct weft_core *c, uint64_t reg)
{
	struct weft_match *m = c->match;

	if (reg >= WEFT_MATCH_QD_BASE && reg < WEFT_MATCH_QD_END) {
		unsigned int qi = (unsigned int)((reg - WEFT_MATCH_QD_BASE) / WEFT_MATCH_QD_STRIDE);
		struct m_queue *q = &m->q[qi];

		switch ((reg - WEFT_MATCH_QD_BASE) % WEFT_MATCH_QD_STRIDE) {
		case 0x00: return q->cfg;
		case 0x08: return q->tag_mask;
		case 0x10: return q->rank_mask;
		default:
			return (q->stopped ? WEFT_QSTAT_STOPPED : 0) |
			       (q->sync ? WEFT_QSTAT_SYNC : 0) |
			       ((uint64_t)(q->prq.n > 0xffff ? 0xffff : q->prq.n) << 16) |
			       ((uint64_t)(q->ueq.n > 0xffff ? 0xffff : q->ueq.n) << 32) |
			       ((uint64_t)(q->seq & 0xffff) << 48);
		}
	}
	switch (reg) {
	case WEFT_REG_MATCH_CAPS:
		return (WEFT_MATCH_NR_QUEUES & 0xff) | ((uint64_t)(m->nmatchers & 0xff) << 8) |
		       ((uint64_t)m->nentries << 32);
	case WEFT_REG_MATCH_UMB:
		return ((uint64_t)m->nfrags * m->frag_size) | ((uint64_t)m->frag_size << 32);
	case WEFT_REG_MATCH_CQ_BASE: return m->cq_base;
	case WEFT_REG_MATCH_CQ_SIZE: return m->cq_size;
	case WEFT_REG_MATCH_CQ_PROD: return m->cq_prod;
	case WEFT_REG_MATCH_CQ_CONS: return m->cq_cons;
	case WEFT_REG_MATCH_DB_STATUS: return m->db_status;
	case WEFT_REG_MATCH_STORE_FREE: return m->efree_n;
	case WEFT_REG_MATCH_UMB_FREE: return m->ffree_n;
	case WEFT_REG_MATCH_STOPPED0:
	case WEFT_REG_MATCH_STOPPED1: {
		uint64_t v = 0;
		unsigned int b = reg == WEFT_REG_MATCH_STOPPED0 ? 0 : 64, k;

		for (k = 0; k < 64; k++)
			if (m->q[b + k].stopped)
				v |= 1ull << k;
		return v;
	}
	case WEFT_REG_MATCH_POOL_FREE: return m->npool;
	case WEFT_REG_MATCH_IRQ: return m->irq;
	default: return 0;
	}
}

void weft_match_reg_write(struct weft_core *c, uint64_t reg, uint64_t val)
{
	struct weft_match *m = c->match;

	if (reg >= WEFT_MATCH_QD_BASE && reg < WEFT_MATCH_QD_END) {
		unsigned int qi = (unsigned int)((reg - WEFT_MATCH_QD_BASE) / WEFT_MATCH_QD_STRIDE);
		struct m_queue *q = &m->q[qi];

		if (q->tm) {
			weft_guest_error(c, "MATCH queue %u: lent to a tag-matching SRQ", qi);
			mdrop(c, WEFT_R_TM_QUEUE_LENT);
			return;
		}
		switch ((reg - WEFT_MATCH_QD_BASE) % WEFT_MATCH_QD_STRIDE) {
		case 0x00:
			if (val & ~WEFT_QCFG_VALID_MASK) {
				weft_guest_error(c, "MATCH_QCFG(%u): reserved bits 0x%llx", qi,
						 (unsigned long long)val);
				return;
			}
			if ((val ^ q->cfg) & WEFT_QCFG_SW_UEQ && (q->ueq.n || q->sync)) {
				weft_guest_error(c, "MATCH_QCFG(%u): mode change with a UEQ", qi);
				return;
			}
			q->cfg = val;
			if (!(val & WEFT_QCFG_SW_UEQ))
				q->sync = false;
			if (q->parked && !q->sync) {
				q->parked = false;
				runq_add(m, qi);
			}
			if (q->fifo_head != NIL)
				c->ops.kick(c->opaque);
			return;
		case 0x08:
			q->tag_mask = val & ~WEFT_MW_WC_MASK;
			return;
		case 0x10:
			q->rank_mask = val & ~WEFT_MW_WC_MASK;
			return;
		default:
			if (val & WEFT_QSTAT_STOPPED) {
				q->stopped = false;
				mtrace(c, "MATCH_QUEUE_RESTARTED", qi, 0, 0);
			}
			return;
		}
	}
	switch (reg) {
	case WEFT_REG_MATCH_CQ_BASE:
		if (val & 63) {
			weft_guest_error(c, "MATCH_CQ_BASE: not 64-byte aligned");
			return;
		}
		m->cq_base = val;
		m->cq_prod = m->cq_cons = 0;
		return;
	case WEFT_REG_MATCH_CQ_SIZE:
		if (val != 0 && (val < 4 || val > 16)) {
			weft_guest_error(c, "MATCH_CQ_SIZE: log2 %llu outside 4..16",
					 (unsigned long long)val);
			return;
		}
		m->cq_size = val;
		m->cq_prod = m->cq_cons = 0;
		return;
	case WEFT_REG_MATCH_CQ_CONS:
		if (val > m->cq_prod || (m->cq_size && m->cq_prod - val > (1ull << m->cq_size))) {
			weft_guest_error(c, "MATCH_CQ_CONS: %llu outside the produced range",
					 (unsigned long long)val);
			return;
		}
		m->cq_cons = val;
		c->ops.kick(c->opaque);
		return;
	case WEFT_REG_MATCH_DOORBELL:
		doorbell(c, val);
		return;
	case WEFT_REG_MATCH_IRQ:
		if (val >= WEFT_MAX_HANDLERS) {
			weft_guest_error(c, "MATCH_IRQ: handler %llu", (unsigned long long)val);
			return;
		}
		m->irq = val;
		return;
	default:
		return;
	}
}

/* ---- QUERY_HQ: a synchronous snapshot of one list ----------------------------- */

static unsigned int hq_refuse(struct weft_core *c, unsigned int qi, unsigned int reason,
			      unsigned int status, unsigned int *why)
{
	mdrop(c, reason);
	mtrace(c, "MATCH_QUERY_HQ", qi, status, reason);
	*why = reason;
	return status;
}

/*
 * The verbs command QUERY_HQ (hw-spec 17.4): the first entries of queue
 * k->handle's PRQ (or UEQ), lent queues included, written in list order
 * at u.hq.addr before the command returns.  The source is the adapter's
 * own store, so nothing software can change is read; at most
 * WEFT_MATCH_QUERY_MAX entries are visited.
 */
unsigned int weft_match_query(struct weft_core *c, const struct weft_vcmd *k,
			      struct weft_vcmd_resp *resp, unsigned int *why)
{
	struct weft_match *m = c->match;
	const struct m_queue *q;
	const struct m_list *l;
	uint64_t addr = k->u.hq.addr, room;
	uint32_t n = 0, i;
	unsigned int j;
	uint8_t b;

	for (j = 0; j < sizeof(k->u.hq.reserved) / sizeof(k->u.hq.reserved[0]); j++)
		if (k->u.hq.reserved[j])
			return hq_refuse(c, k->handle, WEFT_R_MATCH_BAD_OP, WEFT_CMD_EINVAL, why);
	if (k->u.hq.flags & ~WEFT_HQF_UEQ || k->reserved0[0] || k->reserved0[1] ||
	    k->reserved0[2])
		return hq_refuse(c, k->handle, WEFT_R_MATCH_BAD_OP, WEFT_CMD_EINVAL, why);
	if (k->handle >= WEFT_MATCH_NR_QUEUES)
		return hq_refuse(c, k->handle, WEFT_R_HQ_QUEUE, WEFT_CMD_EINVAL, why);
	if (k->u.hq.len < sizeof(struct weft_match_dump))
		return hq_refuse(c, k->handle, WEFT_R_HQ_SHORT, WEFT_CMD_EINVAL, why);
	room = k->u.hq.len / sizeof(struct weft_match_dump);
	if (room > WEFT_MATCH_QUERY_MAX)
		room = WEFT_MATCH_QUERY_MAX;
	/* The whole area the entries may take must be guest RAM. */
	if (!addr || (addr & 7) || addr + room * sizeof(struct weft_match_dump) < addr ||
	    c->ops.dma_read(c->opaque, addr, &b, 1) != 0 ||
	    c->ops.dma_read(c->opaque, addr + room * sizeof(struct weft_match_dump) - 1, &b, 1) != 0)
		return hq_refuse(c, k->handle, WEFT_R_HQ_BUF, WEFT_CMD_EFAULT, why);
	q = &m->q[k->handle];
	l = k->u.hq.flags & WEFT_HQF_UEQ ? &q->ueq : &q->prq;
	for (i = l->head; i != NIL && n < room; i = m->e[i].next, n++) {
		struct weft_match_dump d;

		dump_fill(&m->e[i], &d);
		if (weft_dma_write(c, addr + (uint64_t)n * sizeof(d), &d, sizeof(d)) != 0)
			return hq_refuse(c, k->handle, WEFT_R_HQ_BUF, WEFT_CMD_EFAULT, why);
	}
	resp->out[0] = n;
	resp->out[1] = l->n;
	resp->out[2] = (q->tm ? WEFT_HQS_TM : 0) | (q->stopped ? WEFT_HQS_STOPPED : 0);
	weft_count(c, WEFT_CNT_M_DUMPS, 1);
	mtrace(c, "MATCH_QUERY_HQ", k->handle, n, 0);
	*why = WEFT_R_OK;
	return WEFT_CMD_OK;
}

/* ---- tag-matching SRQs of the verbs engine ------------------------------------ */

static void queue_init(struct m_queue *q)
{
	memset(q, 0, sizeof(*q));
	q->prq.head = q->prq.tail = q->ueq.head = q->ueq.tail = NIL;
	q->fifo_head = q->fifo_tail = NIL;
	q->tag_mask = WEFT_MW_TAG_MASK;
	q->rank_mask = WEFT_MW_RANK_MASK;
}

int weft_match_tm_open(struct weft_core *c, uint32_t max_tags)
{
	struct weft_match *m = c->match;
	unsigned int k;

	/* From the top, so the low queues stay for native use. */
	for (k = WEFT_MATCH_NR_QUEUES; k-- > 0;) {
		struct m_queue *q = &m->q[k];

		if (q->tm || q->cfg || q->prq.n || q->ueq.n || q->fifo_head != NIL || q->busy ||
		    q->in_runq || q->stopped)
			continue;
		queue_init(q);
		q->tm = true;
		q->cfg = WEFT_QCFG(WEFT_QCFG_ENABLE | WEFT_QCFG_SW_UEQ, max_tags, 0);
		mtrace(c, "MATCH_TM_OPEN", k, max_tags, 0);
		return (int)k;
	}
	return -1;
}

void weft_match_tm_close(struct weft_core *c, unsigned int qi)
{
	struct weft_match *m = c->match;
	struct m_queue *q = &m->q[qi];

	if (!q->tm)
		return;
	while (q->prq.head != NIL) {
		uint32_t i = q->prq.head;

		list_unlink(m, &q->prq, i);
		entry_free(m, i);
	}
	queue_init(q);
	mtrace(c, "MATCH_TM_CLOSE", qi, 0, 0);
}

void weft_match_tm_close_all(struct weft_core *c)
{
	unsigned int k;

	if (!c->match)
		return;
	for (k = 0; k < WEFT_MATCH_NR_QUEUES; k++)
		weft_match_tm_close(c, k);
}

static uint32_t tm_lookup(struct weft_match *m, const struct m_queue *q, uint32_t handle)
{
	uint32_t i;

	for (i = q->prq.head; i != NIL; i = m->e[i].next)
		if (m->e[i].id == handle)
			return i;
	return NIL;
}

unsigned int weft_match_tm_add(struct weft_core *c, unsigned int qi,
			       const struct weft_match_tm_tag *t, bool active)
{
	struct weft_match *m = c->match;
	struct m_queue *q = &m->q[qi];
	uint32_t i;
	struct m_entry *p;

	if (tm_lookup(m, q, t->handle) != NIL)
		return WEFT_R_TM_HANDLE;
	if (q->prq.n >= WEFT_QCFG_PRQ_MAX(q->cfg) || (i = entry_alloc(m)) == NIL)
		return WEFT_R_TM_TAGS_FULL;
	p = &m->e[i];
	p->kind = E_TM;
	p->flags = active ? 0 : TM_INACTIVE;
	p->match = t->tag;
	p->ignore = t->mask;
	p->addr = t->addr;
	p->len = t->len;
	p->req_id = t->lkey;
	p->id = t->handle;
	list_append(m, &q->prq, i);
	weft_count(c, WEFT_CNT_M_POSTS, 1);
	return WEFT_R_OK;
}

bool weft_match_tm_del(struct weft_core *c, unsigned int qi, uint32_t handle)
{
	struct weft_match *m = c->match;
	struct m_queue *q = &m->q[qi];
	uint32_t i = tm_lookup(m, q, handle);

	if (i == NIL)
		return false;
	list_unlink(m, &q->prq, i);
	entry_free(m, i);
	weft_count(c, WEFT_CNT_M_REMOVES, 1);
	return true;
}

bool weft_match_tm_find(struct weft_core *c, unsigned int qi, uint64_t tag,
			struct weft_match_tm_tag *out)
{
	struct weft_match *m = c->match;
	struct m_queue *q = &m->q[qi];
	uint32_t i;

	weft_count(c, WEFT_CNT_M_ARRIVALS, 1);
	for (i = q->prq.head; i != NIL; i = m->e[i].next) {
		struct m_entry *p = &m->e[i];

		weft_count(c, WEFT_CNT_M_COMPARES, 1);
		if (!entry_matches(q, p, tag, 0))
			continue;
		/* A tag added behind the phase takes nothing, and no later tag
		 * may take what it matches (item 99): the message is
		 * unexpected, for software to give to that older receive or,
		 * when software has given that one another message already,
		 * to a later one.  So every later tag it matches is turned off
		 * too until software syncs: an active one could otherwise take
		 * a later message before software's DEL takes it back for
		 * this one. */
		if (p->flags & TM_INACTIVE) {
			for (i = p->next; i != NIL; i = m->e[i].next) {
				weft_count(c, WEFT_CNT_M_COMPARES, 1);
				if (entry_matches(q, &m->e[i], tag, 0))
					m->e[i].flags |= TM_INACTIVE;
			}
			return false;
		}
		out->tag = p->match;
		out->mask = p->ignore;
		out->addr = p->addr;
		out->len = p->len;
		out->lkey = p->req_id;
		out->handle = p->id;
		list_unlink(m, &q->prq, i);
		entry_free(m, i);
		weft_count(c, WEFT_CNT_M_MATCHES, 1);
		return true;
	}
	return false;
}

void weft_match_tm_unexpected(struct weft_core *c, unsigned int qi, uint64_t tag)
{
	struct m_queue *q = &c->match->q[qi];

	cam_add(q, tag, 0);
	q->seq++;
	weft_count(c, WEFT_CNT_M_UNEXPECTED, 1);
}

uint32_t weft_match_tm_seq(const struct weft_core *c, unsigned int qi)
{
	return c->match->q[qi].seq;
}

uint32_t weft_match_tm_count(const struct weft_core *c, unsigned int qi)
{
	return c->match->q[qi].prq.n;
}

bool weft_match_tm_current(const struct weft_core *c, unsigned int qi, uint32_t seen,
			   uint64_t tag, uint64_t mask)
{
	const struct m_entry probe = { .kind = E_TM, .match = tag, .ignore = mask };

	return cam_clear(&c->match->q[qi], seen, &probe);
}

void weft_match_tm_activate(struct weft_core *c, unsigned int qi)
{
	struct weft_match *m = c->match;
	uint32_t i;

	for (i = m->q[qi].prq.head; i != NIL; i = m->e[i].next)
		m->e[i].flags &= (uint8_t)~TM_INACTIVE;
	weft_count(c, WEFT_CNT_M_SYNCS, 1);
}

/* ---- saved state (weft_state.h) ------------------------------------------------ */

/* A change of these structs stops here: its author checks that a new
 * field is no pointer (add it to the layout) nor an index used unchecked
 * (add it to match_state_check). */
WEFT_STATIC_ASSERT(sizeof(struct weft_match) == 43208, "weft_match changed: see weft_match_save");
WEFT_STATIC_ASSERT(sizeof(struct m_entry) == 80, "m_entry changed: see weft_match_save");
WEFT_STATIC_ASSERT(sizeof(struct m_queue) == 200, "m_queue changed: see weft_match_save");

static const size_t match_ptr[] = {
	offsetof(struct weft_match, e), offsetof(struct weft_match, umb),
	offsetof(struct weft_match, frag_next), offsetof(struct weft_match, items),
	offsetof(struct weft_match, m), offsetof(struct weft_match, fr),
};
static const size_t match_dl[] = { offsetof(struct weft_match, deadline) };
static const struct weft_state_layout match_lay = {
	match_ptr, WEFT_STATE_N(match_ptr), match_dl, WEFT_STATE_N(match_dl),
};

void weft_match_save(const struct weft_core *c, struct weft_state_w *w)
{
	const struct weft_match *m = c->match;
	struct weft_match *x = malloc(sizeof(*x));
	uint32_t i;

	if (!x) {
		w->oom = true;
		return;
	}
	/* The channels' resend deadlines as time left (the layout does the
	 * struct's own). */
	*x = *m;
	for (i = 0; i < WEFT_MATCH_PEERS; i++)
		x->ch[i].deadline = weft_state_rel(w, x->ch[i].deadline);
	weft_state_put_struct(w, "weft_match", x, sizeof(*x), &match_lay);
	free(x);
	weft_state_put_table(w, "m_entry", m->e, m->nentries, sizeof(*m->e), NULL);
	weft_state_put_table(w, "umb", m->umb, m->nfrags, m->frag_size, NULL);
	weft_state_put_table(w, "frag_next", m->frag_next, m->nfrags, sizeof(*m->frag_next), NULL);
	weft_state_put_table(w, "m_item", m->items, WEFT_MATCH_PENDING, sizeof(*m->items), NULL);
	weft_state_put_table(w, "m_matcher", m->m, m->nmatchers, sizeof(*m->m), NULL);
	weft_state_put_table(w, "m_frame", m->fr, WEFT_MATCH_FRAMES, sizeof(*m->fr), NULL);
}

/* A NIL-terminated list through next[] of n elements from head: every
 * element once over all lists (seen), at most n steps.  Its length. */
static bool list_walk(uint32_t head, const uint32_t *next, size_t stride, uint32_t n,
		      uint8_t *seen, uint32_t *len)
{
	uint32_t i = head, k = 0;

	while (i != NIL) {
		if (i >= n || seen[i] || k == n)
			return false;
		seen[i] = 1;
		k++;
		i = *(const uint32_t *)((const uint8_t *)next + (size_t)i * stride);
	}
	*len = k;
	return true;
}

static bool slot_ok(uint32_t x, uint32_t n)
{
	return x < n || x == NIL;
}

/* Lists acyclic and disjoint, every index and count in range. */
static bool match_state_check(struct weft_match *m, struct weft_state_r *r)
{
	uint32_t n = m->nentries > m->nfrags ? m->nentries : m->nfrags;
	uint8_t *seen = calloc(n > WEFT_MATCH_PENDING ? n : WEFT_MATCH_PENDING, 1);
	const char *why = NULL;
	uint32_t i, len;

	if (!seen)
		return weft_state_fail(r, "out of memory");
	if (!WEFT_STATE_BOOLS(r, "queue", m->q, WEFT_MATCH_NR_QUEUES, struct m_queue,
			      offsetof(struct m_queue, stopped), offsetof(struct m_queue, sync),
			      offsetof(struct m_queue, parked), offsetof(struct m_queue, busy),
			      offsetof(struct m_queue, in_runq), offsetof(struct m_queue, tm)) ||
	    !WEFT_STATE_BOOLS(r, "item", m->items, WEFT_MATCH_PENDING, struct m_item,
			      offsetof(struct m_item, is_op), offsetof(struct m_item, loopback)) ||
	    !WEFT_STATE_BOOLS(r, "matcher", m->m, m->nmatchers, struct m_matcher,
			      offsetof(struct m_matcher, busy)) ||
	    !WEFT_STATE_BOOLS(r, "send slot", m->ss, WEFT_MATCH_RNDV_SLOTS, struct m_sslot,
			      offsetof(struct m_sslot, pull)) ||
	    !WEFT_STATE_BOOLS(r, "receive slot", m->rs, WEFT_MATCH_RNDV_SLOTS, struct m_rslot,
			      offsetof(struct m_rslot, used), offsetof(struct m_rslot, pull),
			      offsetof(struct m_rslot, truncated)) ||
	    !WEFT_STATE_BOOLS(r, "frame", m->fr, WEFT_MATCH_FRAMES, struct m_frame,
			      offsetof(struct m_frame, queued), offsetof(struct m_frame, acked)) ||
	    !WEFT_STATE_BOOLS(r, "channel", m->ch, WEFT_MATCH_PEERS, struct m_chan,
			      offsetof(struct m_chan, rx_known), offsetof(struct m_chan, ack_owed))) {
		free(seen);
		return false;
	}
	if (m->runq_head >= WEFT_MATCH_NR_QUEUES || m->runq_n > WEFT_MATCH_NR_QUEUES ||
	    m->txq_head >= WEFT_MATCH_FRAMES || m->txq_n > WEFT_MATCH_FRAMES ||
	    m->nch > WEFT_MATCH_PEERS || m->npool > WEFT_MATCH_POOL_MAX ||
	    m->cq_size > 32 || m->cq_cons > m->cq_prod || m->mrr >= m->nmatchers ||
	    m->ss_rr >= WEFT_MATCH_RNDV_SLOTS)
		why = "queue heads or counts";
	for (i = 0; !why && i < m->runq_n; i++)
		if (m->runq[(m->runq_head + i) % WEFT_MATCH_NR_QUEUES] >= WEFT_MATCH_NR_QUEUES)
			why = "run queue";
	for (i = 0; !why && i < WEFT_MATCH_FRAMES; i++)
		if (m->fr[i].len > FRAME_BYTES || m->txq[i] >= WEFT_MATCH_FRAMES)
			why = "queued frame";
	for (i = 0; !why && i < m->nmatchers; i++)
		if (m->m[i].q >= WEFT_MATCH_NR_QUEUES || !slot_ok(m->m[i].last, m->nentries))
			why = "matcher";
	for (i = 0; !why && i < WEFT_MATCH_RNDV_SLOTS; i++)
		if (!slot_ok(m->ss[i].rslot, WEFT_MATCH_RNDV_SLOTS * 0x10000u) ||
		    m->ss[i].queue >= WEFT_MATCH_NR_QUEUES || m->rs[i].queue >= WEFT_MATCH_NR_QUEUES)
			why = "rendezvous slot";
	for (i = 0; !why && i < m->nentries; i++) {
		const struct m_entry *e = &m->e[i];

		if (!slot_ok(e->prev, m->nentries) ||
		    (e->kind == E_UMB && !slot_ok(e->frag, m->nfrags)) ||
		    (e->kind == E_RNDV && e->sslot >= WEFT_MATCH_RNDV_SLOTS))
			why = "header-store entry";
	}
	/* Entries: the free list and every queue's two lists. */
	if (!why && (!list_walk(m->efree, &m->e[0].next, sizeof(*m->e), m->nentries, seen, &len) ||
		     len != m->efree_n))
		why = "free header-store entries";
	for (i = 0; !why && i < WEFT_MATCH_NR_QUEUES; i++) {
		const struct m_queue *q = &m->q[i];

		if (!list_walk(q->prq.head, &m->e[0].next, sizeof(*m->e), m->nentries, seen, &len) ||
		    len != q->prq.n || !slot_ok(q->prq.tail, m->nentries) ||
		    !list_walk(q->ueq.head, &m->e[0].next, sizeof(*m->e), m->nentries, seen, &len) ||
		    len != q->ueq.n || !slot_ok(q->ueq.tail, m->nentries))
			why = "queue lists";
	}
	/* Items: the free list and every queue's FIFO. */
	memset(seen, 0, WEFT_MATCH_PENDING);
	if (!why && (!list_walk(m->ifree, &m->items[0].next, sizeof(*m->items), WEFT_MATCH_PENDING,
				seen, &len) || len != m->ifree_n))
		why = "free items";
	for (i = 0; !why && i < WEFT_MATCH_NR_QUEUES; i++)
		if (!list_walk(m->q[i].fifo_head, &m->items[0].next, sizeof(*m->items),
			       WEFT_MATCH_PENDING, seen, &len) ||
		    !slot_ok(m->q[i].fifo_tail, WEFT_MATCH_PENDING))
			why = "queue FIFOs";
	/* Frames: the free list and the unacknowledged list of every
	 * channel in use (channels 0..nch - 1). */
	memset(seen, 0, WEFT_MATCH_FRAMES);
	if (!why && (!list_walk(m->frfree, &m->fr[0].next, sizeof(*m->fr), WEFT_MATCH_FRAMES,
				seen, &len) || len != m->frfree_n))
		why = "free frames";
	for (i = 0; !why && i < m->nch; i++)
		if (!list_walk(m->ch[i].head, &m->fr[0].next, sizeof(*m->fr), WEFT_MATCH_FRAMES,
			       seen, &len) || !slot_ok(m->ch[i].tail, WEFT_MATCH_FRAMES))
			why = "channel frames";
	/* UMB fragments: the free list. */
	memset(seen, 0, m->nfrags);
	if (!why && (!list_walk(m->ffree, m->frag_next, sizeof(uint32_t), m->nfrags, seen, &len) ||
		     len != m->ffree_n))
		why = "free UMB fragments";
	for (i = 0; !why && i < m->nfrags; i++)
		if (!slot_ok(m->frag_next[i], m->nfrags))
			why = "UMB fragment chain";
	free(seen);
	if (why)
		return weft_state_fail(r, "matching: %s out of range", why);
	return true;
}

bool weft_match_load(struct weft_core *c, struct weft_state_r *r)
{
	struct weft_match *m = c->match;
	uint32_t n[5] = { m->nentries, m->nfrags, m->frag_size, m->nmatchers, m->step };

	uint32_t epoch = m->epoch, i;

	if (!weft_state_get_struct(r, "weft_match", m, sizeof(*m), &match_lay))
		return false;
	/* The loading adapter's own incarnation, as the key epoch: peers
	 * see a restarted node (docs/qemu-device.md). */
	m->epoch = epoch;
	for (i = 0; i < WEFT_MATCH_PEERS; i++)
		m->ch[i].deadline = weft_state_abs(r, m->ch[i].deadline);
	if (m->nentries != n[0] || m->nfrags != n[1] || m->frag_size != n[2] ||
	    m->nmatchers != n[3] || m->step != n[4])
		return weft_state_fail(r, "matching: sizes differ from this adapter's");
	return weft_state_get_table(r, "m_entry", m->e, m->nentries, sizeof(*m->e), NULL) &&
	       weft_state_get_table(r, "umb", m->umb, m->nfrags, m->frag_size, NULL) &&
	       weft_state_get_table(r, "frag_next", m->frag_next, m->nfrags,
				    sizeof(*m->frag_next), NULL) &&
	       weft_state_get_table(r, "m_item", m->items, WEFT_MATCH_PENDING,
				    sizeof(*m->items), NULL) &&
	       weft_state_get_table(r, "m_matcher", m->m, m->nmatchers, sizeof(*m->m), NULL) &&
	       weft_state_get_table(r, "m_frame", m->fr, WEFT_MATCH_FRAMES, sizeof(*m->fr), NULL) &&
	       match_state_check(m, r);
}
