/* SPDX-License-Identifier: MIT */
/*
 * CQ event moderation (MODIFY_CQ, docs/hw-spec.md 16.7 "Moderation"): an
 * armed CQ with a count N raises its one event at the N-th matching CQE,
 * with a period P at P us after the first of them, whichever comes first;
 * count 0 and period 0 raise it at the first CQE, as without MODIFY_CQ.
 * Usage: sim-verbs-cqmod CASE (meson runs each case as its own test).
 */
#include "vt.h"

#define US              1000ull
#define MS              1000000ull
#define QA              2u
#define QB              3u

struct ctx {
	struct weft_sim *s;
	struct vt_node a, b;
	struct wsv_qp qa, qb;
	uint64_t next;          /* wr_id of the next write */
};

static void setup(struct ctx *x)
{
	memset(x, 0, sizeof(*x));
	x->s = vt_sim(2, 32u << 20, 11, 0, 0);
	vt_node(x->s, 0, 1u << 20, 8, &x->a);
	vt_node(x->s, 1, 1u << 20, 8, &x->b);
	vt_rc(&x->a, QA, &x->b, QB, 7, NULL, &x->qa, &x->qb);
}

/* A's CQ events the sim driver took. */
static uint64_t events(struct ctx *x)
{
	return weft_sim_event_count(x->s, 0, WEFT_EV_VERBS_CQ);
}

/* One signaled 64-byte WRITE from A to B (its CQE lands on A's CQ). */
static void write1(struct ctx *x)
{
	uint64_t off = (x->next % 1024) * 64;

	vt_post(&x->a, &x->qa, x->next++, WEFT_VWR_WRITE, off, 64, x->b.buf + off, VT_MR, 0,
		WEFT_VWQE_SIGNALED);
}

/* One signaled WRITE of 16 KiB (4 packets) from A to B. */
static void write16k(struct ctx *x)
{
	uint64_t off = (x->next % 64) * 16384;

	vt_post(&x->a, &x->qa, x->next++, WEFT_VWR_WRITE, off, 16384, x->b.buf + off, VT_MR, 0,
		WEFT_VWQE_SIGNALED);
}

/* Poll every CQE of A's CQ; returns how many. */
static unsigned int drain(struct ctx *x)
{
	struct weft_vcqe e;
	unsigned int n = 0;

	while (wsv_poll(x->s, &x->a.cq, &e) == 1) {
		REQUIRE(e.status == WEFT_VWC_SUCCESS, "CQE wr_id %llu status %u",
			(unsigned long long)e.wr_id, e.status);
		n++;
	}
	return n;
}

static struct weft_vcqc query(struct ctx *x)
{
	struct weft_vcmd k = { .op = WEFT_VCMD_QUERY_CQ, .handle = VT_CQ };
	struct weft_vcqc q;
	uint64_t a = weft_sim_alloc(x->s, 0, sizeof(q), 64);
	int st;

	REQUIRE(a, "QUERY_CQ buffer");
	k.u.query.addr = a;
	st = wsv_cmd(x->s, 0, &k, NULL);
	REQUIRE(st == 0, "QUERY_CQ: %d", st);
	memcpy(&q, weft_sim_ptr(x->s, 0, a, sizeof(q)), sizeof(q));
	weft_sim_free_mem(x->s, 0, a);
	return q;
}

/*
 * k writes, each run to completion on its own; the consumer polls and
 * re-arms after every event (as an ibv_get_cq_event loop does).  Returns
 * the events it took.
 */
static uint64_t events_for(struct ctx *x, unsigned int k)
{
	uint64_t ev0 = events(x), seen = ev0;
	unsigned int i;

	wsv_arm(x->s, &x->a.cq, WEFT_CQ_ARM_NEXT);
	for (i = 0; i < k; i++) {
		write1(x);
		REQUIRE(weft_sim_run_until(x->s, NULL, NULL, weft_sim_now(x->s) + 5 * MS),
			"write %u did not complete", i);
		if (events(x) != seen) {
			seen = events(x);
			drain(x);
			wsv_arm(x->s, &x->a.cq, WEFT_CQ_ARM_NEXT);
		}
	}
	drain(x);
	return seen - ev0;
}

/* Count only: one event per N completions, exactly; off again: one per
 * completion. */
static void case_count(void)
{
	struct ctx x;
	struct weft_vcqc q;
	uint64_t ev, held, off, mod;
	unsigned int i;
	int st;

	setup(&x);
	off = events_for(&x, 24);
	REQUIRE(off == 24, "no moderation: %llu events for 24 completions, want 24",
		(unsigned long long)off);
	st = wsv_cq_modify(x.s, &x.a.cq, 8, 0);
	REQUIRE(st == 0, "MODIFY_CQ count 8: %d", st);
	q = query(&x);
	REQUIRE(q.mod_count == 8 && q.mod_period_us == 0, "QUERY_CQ: count %u period %u",
		q.mod_count, q.mod_period_us);
	mod = events_for(&x, 24);
	REQUIRE(mod == 3, "count 8: %llu events for 24 completions, want 3",
		(unsigned long long)mod);
	/* Seven completions hold the event; the eighth raises it. */
	held = vt_cnt(x.s, 0, WEFT_CNT_V_CQ_HELD);
	wsv_arm(x.s, &x.a.cq, WEFT_CQ_ARM_NEXT);
	ev = events(&x);
	for (i = 0; i < 7; i++)
		write1(&x);
	weft_sim_run_until(x.s, NULL, NULL, weft_sim_now(x.s) + 50 * MS);
	q = query(&x);
	REQUIRE(events(&x) == ev && q.mod_cqes == 7 && q.arm == WEFT_CQ_ARM_NEXT,
		"7 of 8: %llu events, %u CQEs held, arm %u", (unsigned long long)(events(&x) - ev),
		q.mod_cqes, q.arm);
	REQUIRE(vt_cnt(x.s, 0, WEFT_CNT_V_CQ_HELD) == held + 1, "V_CQ_HELD not counted once");
	write1(&x);
	weft_sim_run_until(x.s, NULL, NULL, weft_sim_now(x.s) + 5 * MS);
	q = query(&x);
	REQUIRE(events(&x) == ev + 1 && q.mod_cqes == 0 && q.arm == 0,
		"8 of 8: %llu events, %u CQEs held, arm %u", (unsigned long long)(events(&x) - ev),
		q.mod_cqes, q.arm);
	REQUIRE(drain(&x) == 8, "8 CQEs to poll");
	/* Back to 0/0: one event per completion again. */
	st = wsv_cq_modify(x.s, &x.a.cq, 0, 0);
	REQUIRE(st == 0, "MODIFY_CQ off: %d", st);
	off = events_for(&x, 10);
	REQUIRE(off == 10, "moderation off again: %llu events for 10 completions, want 10",
		(unsigned long long)off);
	t_checked("count 8: 3 events for 24 completions (24 without), 7 CQEs hold the event (counted once), the 8th raises it; count 0 again: 10 events for 10");
	weft_sim_free(x.s);
}

struct stamps {
	struct ctx *x;
	uint64_t ev0;
	uint64_t first_cqe;     /* clock when the first CQE was visible, 0 = not yet */
	uint64_t event;         /* clock when the event was taken, 0 = not yet */
};

/* Run round by round until the event, noting when the first CQE and the
 * event appeared; false if it did not come by deadline. */
static bool stamp_run(struct stamps *t, uint64_t deadline)
{
	struct weft_vcqe *ring = weft_sim_ptr(t->x->s, 0, t->x->a.cq.ring, 32);

	while (weft_sim_now(t->x->s) < deadline) {
		if (!t->first_cqe && (ring[t->x->a.cq.ci & 255].owner & 1) ==
		    !((t->x->a.cq.ci >> 8) & 1))
			t->first_cqe = weft_sim_now(t->x->s);
		if (events(t->x) != t->ev0) {
			t->event = weft_sim_now(t->x->s);
			return true;
		}
		if (!weft_sim_progress(t->x->s))
			break;
	}
	return false;
}

/* Moderation count/period_us set, the CQ armed, n writes: the delay from
 * the first CQE to the event (the event must come within 10 ms). */
static uint64_t held_writes(struct ctx *x, uint32_t count, uint32_t period_us, unsigned int n)
{
	int st = wsv_cq_modify(x->s, &x->a.cq, count, period_us);
	struct stamps t;
	unsigned int i;

	REQUIRE(st == 0, "MODIFY_CQ count %u period %u: %d", count, period_us, st);
	wsv_arm(x->s, &x->a.cq, WEFT_CQ_ARM_NEXT);
	t = (struct stamps){ .x = x, .ev0 = events(x) };
	for (i = 0; i < n; i++)
		write1(x);
	REQUIRE(stamp_run(&t, weft_sim_now(x->s) + 10 * MS) && t.first_cqe,
		"count %u period %u us: no event within 10 ms", count, period_us);
	REQUIRE(events(x) == t.ev0 + 1, "count %u period %u us: %llu events", count, period_us,
		(unsigned long long)(events(x) - t.ev0));
	return t.event - t.first_cqe;
}

/* Period only, and a period with a count that is not reached: the event
 * comes P us after the first CQE, not before; a count reached first wins. */
static void case_period(void)
{
	struct ctx x;
	struct weft_vcqc q;
	uint64_t d;

	setup(&x);
	d = held_writes(&x, 0, 200, 3);
	REQUIRE(d >= 200 * US && d <= 220 * US,
		"period 200 us: the event came %llu ns after the first CQE", (unsigned long long)d);
	REQUIRE(drain(&x) == 3, "one event, 3 CQEs");
	/* Count 100 and period 50: 3 CQEs, the period ends it. */
	d = held_writes(&x, 100, 50, 3);
	REQUIRE(d >= 50 * US && d <= 70 * US,
		"count 100 period 50 us: the event came %llu ns after the first CQE",
		(unsigned long long)d);
	REQUIRE(drain(&x) == 3, "3 CQEs");
	/* Count 2 and period 4000: the count comes first. */
	d = held_writes(&x, 2, 4000, 2);
	REQUIRE(d < 1000 * US, "count 2 waited %llu ns for the period", (unsigned long long)d);
	q = query(&x);
	REQUIRE(q.mod_cqes == 0 && q.arm == 0, "after the event: %u held, arm %u", q.mod_cqes,
		q.arm);
	REQUIRE(drain(&x) == 2, "2 CQEs");
	t_checked("period 200 us: one event 200 us after the first of 3 CQEs; count 100 + period 50 us: the period ends it; count 2 + period 4 ms: the count does");
	weft_sim_free(x.s);
}

/* Unarmed CQs raise nothing; MODIFY_CQ releases a held event; 0/0 is
 * today's behaviour (the event with the first CQE, nothing held). */
static void case_off(void)
{
	struct ctx x;
	struct stamps t;
	uint64_t ev, held;
	int st;

	setup(&x);
	held = vt_cnt(x.s, 0, WEFT_CNT_V_CQ_HELD);
	wsv_arm(x.s, &x.a.cq, WEFT_CQ_ARM_NEXT);
	t = (struct stamps){ .x = &x, .ev0 = events(&x) };
	write1(&x);
	REQUIRE(stamp_run(&t, weft_sim_now(x.s) + 10 * MS) && t.first_cqe,
		"0/0: no event within 10 ms");
	REQUIRE(t.event == t.first_cqe, "0/0: the event came %llu ns after the CQE",
		(unsigned long long)(t.event - t.first_cqe));
	REQUIRE(vt_cnt(x.s, 0, WEFT_CNT_V_CQ_HELD) == held, "0/0 held an event");
	drain(&x);
	/* Not armed: a moderated CQ raises nothing. */
	st = wsv_cq_modify(x.s, &x.a.cq, 2, 10);
	REQUIRE(st == 0, "MODIFY_CQ count 2 period 10: %d", st);
	ev = events(&x);
	write1(&x);
	write1(&x);
	write1(&x);
	weft_sim_run_until(x.s, NULL, NULL, weft_sim_now(x.s) + 5 * MS);
	REQUIRE(events(&x) == ev, "an unarmed CQ raised %llu events",
		(unsigned long long)(events(&x) - ev));
	drain(&x);
	/* A held event goes out at MODIFY_CQ. */
	st = wsv_cq_modify(x.s, &x.a.cq, 4, 0);
	REQUIRE(st == 0, "MODIFY_CQ count 4: %d", st);
	wsv_arm(x.s, &x.a.cq, WEFT_CQ_ARM_NEXT);
	write1(&x);
	weft_sim_run_until(x.s, NULL, NULL, weft_sim_now(x.s) + 5 * MS);
	REQUIRE(events(&x) == ev && query(&x).mod_cqes == 1, "1 of 4 not held");
	st = wsv_cq_modify(x.s, &x.a.cq, 0, 0);
	REQUIRE(st == 0, "MODIFY_CQ off: %d", st);
	weft_sim_run_until(x.s, NULL, NULL, weft_sim_now(x.s) + 1 * MS);
	REQUIRE(events(&x) == ev + 1 && query(&x).mod_cqes == 0,
		"MODIFY_CQ did not release the held event");
	t_checked("0/0: the event in the round of the first CQE, none held; unarmed: no event; a held event goes out at MODIFY_CQ");
	weft_sim_free(x.s);
}

/* The held event and its period survive a save and load of the core. */
static void case_reload(void)
{
	struct ctx x;
	struct stamps t;
	char err[200] = "";
	int st;

	setup(&x);
	st = wsv_cq_modify(x.s, &x.a.cq, 50, 300);
	REQUIRE(st == 0, "MODIFY_CQ count 50 period 300: %d", st);
	wsv_arm(x.s, &x.a.cq, WEFT_CQ_ARM_NEXT);
	t = (struct stamps){ .x = &x, .ev0 = events(&x) };
	write1(&x);
	write1(&x);
	REQUIRE(!stamp_run(&t, weft_sim_now(x.s) + 100 * US) && t.first_cqe,
		"an event or no CQE in the first 100 us");
	weft_sim_run_until(x.s, NULL, NULL, t.first_cqe + 100 * US);
	st = weft_sim_core_reload(x.s, 0, err, sizeof(err));
	REQUIRE(st == 0, "core reload: %s", err);
	REQUIRE(query(&x).mod_count == 50 && query(&x).mod_period_us == 300 &&
		query(&x).mod_cqes == 2, "the moderation state did not survive the reload");
	REQUIRE(stamp_run(&t, weft_sim_now(x.s) + 10 * MS), "no event after the reload");
	REQUIRE(t.event - t.first_cqe >= 300 * US && t.event - t.first_cqe <= 320 * US,
		"the reloaded period ended %llu ns after the first CQE",
		(unsigned long long)(t.event - t.first_cqe));
	REQUIRE(drain(&x) == 2, "2 CQEs");
	t_checked("a held event with count 50 and period 300 us reloaded 100 us in: raised 300 us after the first CQE");
	weft_sim_free(x.s);
}

/*
 * n writes of 16 KiB, depth in flight, the consumer re-arming at each event,
 * then taking every completion and posting as many writes (an
 * ibv_get_cq_event loop that takes no time).  Returns the events; *ns
 * the virtual time it took.
 */
static uint64_t stream(struct ctx *x, unsigned int n, unsigned int depth, uint64_t *ns)
{
	uint64_t ev0 = events(x), seen = ev0, t0 = weft_sim_now(x->s);
	unsigned int posted = 0, done = 0, got, i;

	wsv_arm(x->s, &x->a.cq, WEFT_CQ_ARM_NEXT);
	for (; posted < depth; posted++)
		write16k(x);
	while (done < n) {
		REQUIRE(weft_sim_now(x->s) - t0 < 1000 * MS, "stream stuck at %u of %u", done, n);
		if (!weft_sim_progress(x->s))
			REQUIRE(events(x) != seen, "stream idle at %u of %u", done, n);
		if (events(x) == seen)
			continue;
		seen = events(x);
		wsv_arm(x->s, &x->a.cq, WEFT_CQ_ARM_NEXT);
		got = drain(x);
		done += got;
		for (i = 0; i < got && posted < n; i++, posted++)
			write16k(x);
	}
	*ns = weft_sim_now(x->s) - t0;
	return seen - ev0;
}

/* A stream with an event-driven consumer, without and with moderation:
 * the events per completion (figures), and count 16 bounds them. */
static void case_stream(void)
{
	struct ctx x;
	uint64_t off, mod, t_off, t_mod;
	int st;

	setup(&x);
	off = stream(&x, 1024, 32, &t_off);
	st = wsv_cq_modify(x.s, &x.a.cq, 16, 100);
	REQUIRE(st == 0, "MODIFY_CQ count 16 period 100: %d", st);
	mod = stream(&x, 1024, 32, &t_mod);
	t_diag("figure: sim, 1024 writes of 16 KiB, 32 in flight, event-driven consumer: no moderation %llu events (%.1f completions per event, %.2f us per write); count 16, period 100 us: %llu events (%.1f, %.2f us per write)",
	       (unsigned long long)off, 1024.0 / off, t_off / 1024e3, (unsigned long long)mod,
	       1024.0 / mod, t_mod / 1024e3);
	REQUIRE(mod <= 1024 / 16, "count 16: %llu events for 1024 completions",
		(unsigned long long)mod);
	REQUIRE(off > mod, "no moderation: %llu events, no more than with count 16 (%llu)",
		(unsigned long long)off, (unsigned long long)mod);
	t_checked("stream of 1024 writes of 16 KiB: %llu events without moderation, %llu (at most 64) with count 16 and period 100 us",
		  (unsigned long long)off, (unsigned long long)mod);
	weft_sim_free(x.s);
}

/* Refused MODIFY_CQ commands, each with its reason, change nothing. */
static void case_hostile(void)
{
	static const struct {
		uint32_t handle, count, period, uar;
		unsigned int status, reason;
		const char *what;
	} bad[] = {
		{ 9, 1, 1, 0, WEFT_CMD_EINVAL, WEFT_R_CQ_INVALID, "a CQ never created" },
		{ 1u << 30, 1, 1, 0, WEFT_CMD_EINVAL, WEFT_R_CQ_INVALID, "a CQ out of range" },
		{ VT_CQ, 1, 1, 1, WEFT_CMD_EINVAL, WEFT_R_UAR_MISMATCH, "another UAR page" },
		{ VT_CQ, WEFT_VERBS_CQ_MOD_MAX_COUNT + 1, 1, 0, WEFT_CMD_EINVAL,
		  WEFT_R_CQ_MODERATION, "a count above the maximum" },
		{ VT_CQ, 1, WEFT_VERBS_CQ_MOD_MAX_US + 1, 0, WEFT_CMD_EINVAL,
		  WEFT_R_CQ_MODERATION, "a period above the maximum" },
		{ VT_CQ, 0xffffffffu, 0xffffffffu, 0, WEFT_CMD_EINVAL, WEFT_R_CQ_MODERATION,
		  "all ones" },
	};
	struct ctx x;
	struct weft_vcqc q;
	unsigned int i;
	uint64_t disc;
	int st;

	setup(&x);
	st = wsv_cq_modify(x.s, &x.a.cq, 3, 7);
	REQUIRE(st == 0, "MODIFY_CQ count 3 period 7: %d", st);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct weft_vcmd k = { .op = WEFT_VCMD_MODIFY_CQ, .handle = bad[i].handle };
		struct weft_vcmd_resp r;

		k.u.cq_mod.count = bad[i].count;
		k.u.cq_mod.period_us = bad[i].period;
		k.u.cq_mod.uar = bad[i].uar;
		disc = vt_cnt(x.s, 0, WEFT_CNT_CMD_DISCARDED);
		st = wsv_cmd(x.s, 0, &k, &r);
		REQUIRE(st == (int)bad[i].status && r.reason == bad[i].reason,
			"%s: status %d reason %s, want %u %s", bad[i].what, st,
			weft_reason_name(r.reason), bad[i].status,
			weft_reason_name(bad[i].reason));
		REQUIRE(vt_cnt(x.s, 0, WEFT_CNT_CMD_DISCARDED) == disc + 1, "%s: not counted",
			bad[i].what);
		q = query(&x);
		REQUIRE(q.mod_count == 3 && q.mod_period_us == 7, "%s: the CQ changed to %u/%u",
			bad[i].what, q.mod_count, q.mod_period_us);
	}
	st = wsv_cq_modify(x.s, &x.a.cq, WEFT_VERBS_CQ_MOD_MAX_COUNT, WEFT_VERBS_CQ_MOD_MAX_US);
	q = query(&x);
	REQUIRE(st == 0 && q.mod_count == WEFT_VERBS_CQ_MOD_MAX_COUNT &&
		q.mod_period_us == WEFT_VERBS_CQ_MOD_MAX_US, "the maxima refused: %d", st);
	t_checked("MODIFY_CQ of a CQ never created or out of range (CQ_INVALID), from another UAR page (UAR_MISMATCH), count or period above %u/%u (CQ_MODERATION): refused, counted, the CQ unchanged; the maxima taken",
		  WEFT_VERBS_CQ_MOD_MAX_COUNT, WEFT_VERBS_CQ_MOD_MAX_US);
	weft_sim_free(x.s);
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "count", case_count },
		{ "period", case_period },
		{ "off", case_off },
		{ "reload", case_reload },
		{ "stream", case_stream },
		{ "hostile", case_hostile },
	};

	return vt_main("verbs-cqmod", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
