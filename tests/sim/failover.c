/* SPDX-License-Identifier: MIT */
/*
 * The sim-level failover campaign (issue 8, seed 1.5.16-1.5.17); see
 * docs/failover.md.
 *
 * Every node streams RDMA writes to every other node through the rel
 * layer (2 channels per direction, 4 rotating target slots per channel,
 * 1..8 KiB messages), over 3 routes with skew, jitter and 0.5% loss.
 * Between stretches of streaming, a random node is rebooted (new PVO keys,
 * memory re-registered, window re-opened, rCxts re-acquired) or its
 * adapter recovers (recovery count = rCxt key bumped, rCxts re-acquired).
 * Around each event the streaming pauses and the fabric drains; after the
 * event the fabric replays the frames it captured just before it.
 *
 * During the replay phase every packet an adapter receives is a replayed
 * frame.  The core's trace tells whether it was accepted or dropped (and
 * why), the DMA hook tells whether anything was written into a registered
 * buffer, and the rel layer tells whether a completion it received was
 * acted on.  A replayed frame that placed data, was served, or drove the
 * protocol is a stale acceptance.
 */
#include <string.h>

#include "simtest.h"

#define FO_MAX_CH       5u              /* channels per directed pair, at most */
#define FO_NR_RCXT      WEFT_MIN_RCXT   /* rCxt pool per node: < 2x held on purpose */
#define FO_SLOTS        4u              /* target slots per channel */
#define FO_SLOT         (8u << 10)      /* bytes per slot = max message */
#define FO_MAX_NODES    8u
#define FO_JOB          0x51u
#define FO_TIMEOUT_NS   100000u

struct fo_msg {
	uint32_t ch;
	uint32_t slot;
	uint32_t len;
	uint32_t deliveries;
};

struct fo {
	struct weft_sim *s;
	struct rel *rel;
	unsigned int nodes;
	unsigned int ch_per;    /* channels per directed pair */
	struct st_node n[FO_MAX_NODES];
	uint64_t rng;

	/* channel c joins ch_src[c] to ch_dst[c], k-th of that pair */
	uint32_t ch_k[FO_MAX_NODES * FO_MAX_NODES * FO_MAX_CH];
	int ch[FO_MAX_NODES * FO_MAX_NODES * FO_MAX_CH];
	uint32_t ch_src[FO_MAX_NODES * FO_MAX_NODES * FO_MAX_CH];
	uint32_t ch_dst[FO_MAX_NODES * FO_MAX_NODES * FO_MAX_CH];
	uint64_t submitted[FO_MAX_NODES * FO_MAX_NODES * FO_MAX_CH];
	uint64_t delivered[FO_MAX_NODES * FO_MAX_NODES * FO_MAX_CH];
	uint64_t last[FO_MAX_NODES * FO_MAX_NODES * FO_MAX_CH][FO_SLOTS]; /* op id, 0 = none */
	unsigned int nch;

	struct fo_msg *msg;     /* by op id - 1 */
	uint64_t nmsg, capmsg;

	/* replay phase observation */
	bool replay_phase;
	uint64_t tr_accept_data, tr_accept_cpl, tr_drop[WEFT_R__COUNT];
	uint64_t region_writes;

	struct failover_report *rep;
	bool verbose;
};

static uint64_t fo_rand(struct fo *f, uint64_t n)
{
	uint64_t x = f->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	f->rng = x;
	return n ? x % n : x;
}

/* Offsets in each node's registered region. */
static uint64_t recv_off(unsigned int src, unsigned int k, unsigned int slot)
{
	return (((uint64_t)src * FO_MAX_CH + k) * FO_SLOTS + slot) * FO_SLOT;
}

static uint64_t stage_off(const struct fo *f, unsigned int dst, unsigned int k, unsigned int slot)
{
	return (uint64_t)f->nodes * FO_MAX_CH * FO_SLOTS * FO_SLOT + recv_off(dst, k, slot);
}

static void trace_cb(void *opaque, unsigned int node, const struct weft_trace *ev)
{
	struct fo *f = opaque;

	(void)node;
	if (!f->replay_phase)
		return;
	if (ev->kind == WEFT_TR_PKT_RX) {
		if (ev->hdr && ev->hdr->type == WEFT_PKT_COMPLETION)
			f->tr_accept_cpl++;
		else
			f->tr_accept_data++;
	} else if (ev->kind == WEFT_TR_PKT_DROP && ev->reason < WEFT_R__COUNT) {
		f->tr_drop[ev->reason]++;
	}
}

static void dma_cb(void *opaque, unsigned int node, uint64_t addr, size_t len, bool is_write)
{
	struct fo *f = opaque;
	const struct st_node *n;

	if (!f->replay_phase || !is_write || node >= f->nodes)
		return;
	n = &f->n[node];
	if (addr < n->buf + n->len && addr + len > n->buf)
		f->region_writes++;
}

static void on_deliver(void *opaque, uint64_t op)
{
	struct fo *f = opaque;
	struct fo_msg *m = &f->msg[op - 1];
	unsigned int dst = f->ch_dst[m->ch], src = f->ch_src[m->ch];
	unsigned int k = f->ch_k[m->ch];
	uint8_t want[FO_SLOT];
	const uint8_t *got;

	m->deliveries++;
	f->delivered[m->ch]++;
	got = weft_sim_ptr(f->s, dst, f->n[dst].buf + recv_off(src, k, m->slot), m->len);
	st_fill(want, m->len, op);
	if (!got || memcmp(got, want, m->len))
		f->rep->mismatched_bytes++;
	f->last[m->ch][m->slot] = op;
}

static void submit(struct fo *f, unsigned int c)
{
	unsigned int src = f->ch_src[c], dst = f->ch_dst[c], k = f->ch_k[c];
	uint32_t slot = (uint32_t)(f->submitted[c] % FO_SLOTS);
	uint32_t len = 1 + (uint32_t)fo_rand(f, FO_SLOT);
	uint64_t op;
	uint8_t *stage;

	if (f->nmsg == f->capmsg) {
		uint64_t nc = f->capmsg ? f->capmsg * 2 : 4096;
		struct fo_msg *nm = realloc(f->msg, nc * sizeof(*nm));

		REQUIRE(nm, "out of memory");
		f->msg = nm;
		f->capmsg = nc;
	}
	op = f->nmsg + 1;
	stage = weft_sim_ptr(f->s, src, f->n[src].buf + stage_off(f, dst, k, slot), len);
	st_fill(stage, len, op);
	REQUIRE(rel_submit(f->rel, f->ch[c], REL_WRITE, stage_off(f, dst, k, slot),
			 recv_off(src, k, slot), len) == op, "op ids out of step");
	f->msg[f->nmsg++] = (struct fo_msg){ .ch = c, .slot = slot, .len = len };
	f->submitted[c]++;
}

static void stream(struct fo *f, unsigned int rounds)
{
	unsigned int i, c;

	for (i = 0; i < rounds; i++) {
		for (c = 0; c < f->nch; c++)
			if (f->submitted[c] - f->delivered[c] < 2)
				submit(f, c);
		rel_poll(f->rel);
		if (!weft_sim_progress(f->s))
			rel_run(f->rel, weft_sim_now(f->s) + FO_TIMEOUT_NS);
	}
}

static uint64_t drops_total(struct fo *f, unsigned int reason)
{
	return st_counter_sum(f->s, WEFT_CNT_DROP(reason));
}

static void event(struct fo *f, unsigned int replay)
{
	struct weft_fabric *fab = weft_sim_fabric(f->s);
	unsigned int node = (unsigned int)fo_rand(f, f->nodes), r;
	bool reboot = fo_rand(f, 2) == 0;
	uint64_t mark, n, rep0, drop0[WEFT_R__COUNT], ign0, acted0;
	const struct rel_stats *rs = rel_stats(f->rel);
	uint64_t accepted, dropped = 0;

	/* Quiesce: no new posts or retries; let the fabric drain. */
	rel_pause(f->rel, true);
	weft_sim_run_idle(f->s, 0);
	rel_poll(f->rel);
	mark = weft_fabric_capture_mark(fab);

	if (reboot) {
		int rc = weft_sim_node_reboot(f->s, node);

		REQUIRE(rc == 0, "reboot node %u: %d", node, rc);
		st_node_reattach(f->s, node, &f->n[node], 6);
		rel_set_region(f->rel, node, f->n[node].buf, f->n[node].len, f->n[node].pvo);
		f->rep->reboots++;
	} else {
		int rc = weft_sim_node_recover(f->s, node);

		REQUIRE(rc == 0, "recover node %u: %d", node, rc);
		REQUIRE(weft_sim_window_refresh(&f->n[node].win) == 1, "window not re-opened");
		f->rep->recoveries++;
	}
	REQUIRE(rel_node_reset(f->rel, node) == 0, "re-acquiring rCxts on node %u", node);
	f->rep->events++;

	/* Replay the frames captured just before the event. */
	rep0 = weft_fabric_total_stats(fab)->replayed;
	for (r = 0; r < WEFT_R__COUNT; r++) {
		drop0[r] = drops_total(f, r);
		f->tr_drop[r] = 0;
	}
	f->tr_accept_data = f->tr_accept_cpl = 0;
	f->region_writes = 0;
	ign0 = rs->cpl_stale + rs->cpl_dup + rs->cpl_error;
	acted0 = rs->cpl_src + rs->cpl_dst + rs->delivered;
	f->replay_phase = true;
	n = weft_fabric_replay(fab, mark, replay, weft_sim_now(f->s));
	weft_sim_run_idle(f->s, 0);
	f->replay_phase = false;
	rel_poll(f->rel);
	f->rep->replayed += n;

	/* Classify what happened to the replayed frames. */
	for (r = 0; r < WEFT_R__COUNT; r++) {
		dropped += f->tr_drop[r];
		if (drops_total(f, r) - drop0[r] != f->tr_drop[r])
			f->rep->counter_mismatches++;
	}
	accepted = f->tr_accept_data + f->tr_accept_cpl;
	if (weft_fabric_total_stats(fab)->replayed - rep0 != accepted + dropped)
		f->rep->counter_mismatches++;
	f->rep->drop_tce_key += f->tr_drop[WEFT_R_TCE_KEY];
	f->rep->drop_rcxt_key += f->tr_drop[WEFT_R_RCXT_KEY];
	f->rep->drop_tid_stale += f->tr_drop[WEFT_R_TID_STALE];
	f->rep->drop_rcxt_invalid += f->tr_drop[WEFT_R_RCXT_INVALID];
	f->rep->drop_duplicate += f->tr_drop[WEFT_R_DUPLICATE];
	f->rep->drop_other += dropped - f->tr_drop[WEFT_R_TCE_KEY] - f->tr_drop[WEFT_R_RCXT_KEY] -
			      f->tr_drop[WEFT_R_TID_STALE] - f->tr_drop[WEFT_R_RCXT_INVALID] -
			      f->tr_drop[WEFT_R_DUPLICATE];
	f->rep->cpl_filtered += f->tr_accept_cpl;
	f->rep->stale_accepted += f->tr_accept_data + f->region_writes +
				  (rs->cpl_src + rs->cpl_dst + rs->delivered - acted0);
	if (rs->cpl_stale + rs->cpl_dup + rs->cpl_error - ign0 != f->tr_accept_cpl)
		f->rep->counter_mismatches++;
	if (f->verbose)
		printf("event %llu: %s node %u, replayed %llu: accepted %llu (completions %llu, "
		       "data %llu), dropped %llu, buffer writes %llu, acted on %llu\n",
		       (unsigned long long)f->rep->events, reboot ? "reboot" : "recovery", node,
		       (unsigned long long)n, (unsigned long long)accepted,
		       (unsigned long long)f->tr_accept_cpl, (unsigned long long)f->tr_accept_data,
		       (unsigned long long)dropped, (unsigned long long)f->region_writes,
		       (unsigned long long)(rs->cpl_src + rs->cpl_dst + rs->delivered - acted0));
	rel_pause(f->rel, false);
}

static void verify_memory(struct fo *f)
{
	unsigned int c, slot;
	uint8_t want[FO_SLOT];

	for (c = 0; c < f->nch; c++) {
		for (slot = 0; slot < FO_SLOTS; slot++) {
			uint64_t op = f->last[c][slot];
			const struct fo_msg *m;
			const uint8_t *got;

			if (!op)
				continue;
			m = &f->msg[op - 1];
			got = weft_sim_ptr(f->s, f->ch_dst[c], f->n[f->ch_dst[c]].buf +
					   recv_off(f->ch_src[c], f->ch_k[c], slot), m->len);
			st_fill(want, m->len, op);
			if (!got || memcmp(got, want, m->len))
				f->rep->mismatched_bytes++;
		}
	}
}

int failover_run(const struct failover_cfg *cfg, struct failover_report *rep)
{
	struct weft_sim_config sc = {
		.nr_nodes = cfg->nodes, .mem_size = 4u << 20, .seed = cfg->seed,
		.nr_rcxt = FO_NR_RCXT, .capture_frames = cfg->replay ? cfg->replay : 1,
		.faults = { .routes = 3, .delay_ns = 2000,
			    .jitter_ns = 4000, .route_skew_ns = 1000 },
		.reboot_ns = 200000,
	};
	struct fo *f;
	unsigned int a, b, k;
	uint64_t i;
	int bad;

	memset(rep, 0, sizeof(*rep));
	REQUIRE(cfg->nodes >= 2 && cfg->nodes <= FO_MAX_NODES, "nodes must be 2..%u", FO_MAX_NODES);
	f = calloc(1, sizeof(*f));
	REQUIRE(f, "out of memory");
	f->nodes = cfg->nodes;
	/* Each node holds 2 * ch_per * (nodes - 1) rCxts: more than half of
	 * the pool, so ids are re-acquired soon after they were given up. */
	f->ch_per = (9 + 2 * (cfg->nodes - 1) - 1) / (2 * (cfg->nodes - 1));
	if (f->ch_per > FO_MAX_CH)
		f->ch_per = FO_MAX_CH;
	f->rep = rep;
	f->verbose = cfg->verbose;
	f->rng = cfg->seed * 2654435761u + 12345;
	sc.trace = trace_cb;
	sc.trace_opaque = f;
	f->s = st_sim(&sc);
	weft_sim_set_dma_hook(f->s, dma_cb, f);
	f->rel = rel_new(f->s, FO_TIMEOUT_NS, on_deliver, f);
	REQUIRE(f->rel, "rel_new");
	for (a = 0; a < f->nodes; a++) {
		st_node_setup(f->s, a, FO_JOB, 2ull * f->nodes * FO_MAX_CH * FO_SLOTS * FO_SLOT, 6,
			      false, &f->n[a]);
		rel_set_region(f->rel, a, f->n[a].buf, f->n[a].len, f->n[a].pvo);
	}
	for (a = 0; a < f->nodes; a++) {
		for (b = 0; b < f->nodes; b++) {
			if (a == b)
				continue;
			for (k = 0; k < f->ch_per; k++) {
				unsigned int c = f->nch++;

				f->ch[c] = rel_channel(f->rel, &f->n[a].win, &f->n[b].win);
				REQUIRE(f->ch[c] >= 0, "channel: %d", f->ch[c]);
				f->ch_src[c] = a;
				f->ch_dst[c] = b;
				f->ch_k[c] = k;
			}
		}
	}
	for (i = 0; i < cfg->events; i++) {
		stream(f, 20 + (unsigned int)fo_rand(f, 200));
		event(f, cfg->replay);
	}
	/* Finish every message. */
	rel_run(f->rel, weft_sim_now(f->s) + 100000000000ull);
	verify_memory(f);

	rep->messages = f->nmsg;
	for (i = 0; i < f->nmsg; i++) {
		if (f->msg[i].deliveries == 0)
			rep->lost++;
		else
			rep->delivered++;
		if (f->msg[i].deliveries > 1)
			rep->duplicated += f->msg[i].deliveries - 1;
	}
	rep->retries = rel_stats(f->rel)->retries;
	rep->virt_seconds = (double)weft_sim_now(f->s) / 1e9;
	bad = rep->stale_accepted || rep->lost || rep->duplicated || rep->mismatched_bytes ||
	      rep->counter_mismatches || rep->replayed == 0;
	rel_free(f->rel);
	weft_sim_free(f->s);
	free(f->msg);
	free(f);
	return bad ? 1 : 0;
}

void failover_print(const char *prefix, const struct failover_report *r)
{
	printf("%sfailover-sim: events=%llu replayed=%llu stale_accepted=%llu lost=%llu "
	       "duplicated=%llu\n", prefix, (unsigned long long)r->events,
	       (unsigned long long)r->replayed, (unsigned long long)r->stale_accepted,
	       (unsigned long long)r->lost, (unsigned long long)r->duplicated);
	printf("%sfailover-sim: reboots=%llu recoveries=%llu messages=%llu delivered=%llu "
	       "retries=%llu drops: tce_key=%llu rcxt_key=%llu tid_stale=%llu "
	       "rcxt_invalid=%llu duplicate=%llu other=%llu; stale completions filtered by the ULP=%llu; "
	       "memory mismatches=%llu counter mismatches=%llu; %.3f s virtual\n", prefix,
	       (unsigned long long)r->reboots, (unsigned long long)r->recoveries,
	       (unsigned long long)r->messages, (unsigned long long)r->delivered,
	       (unsigned long long)r->retries, (unsigned long long)r->drop_tce_key,
	       (unsigned long long)r->drop_rcxt_key, (unsigned long long)r->drop_tid_stale,
	       (unsigned long long)r->drop_rcxt_invalid, (unsigned long long)r->drop_duplicate,
	       (unsigned long long)r->drop_other,
	       (unsigned long long)r->cpl_filtered, (unsigned long long)r->mismatched_bytes,
	       (unsigned long long)r->counter_mismatches, r->virt_seconds);
}
