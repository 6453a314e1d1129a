/* SPDX-License-Identifier: MIT */
/*
 * Interrupt moderation (INT_MOD, docs/hw-spec.md 8.1): a burst of events
 * raises fewer interrupts than events, no event waits longer than the
 * period for its interrupt (the last of a burst included), an event after
 * an idle spell interrupts at once, the count limit, the named refusals
 * of bad values, and a held interrupt that survives save and load.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define US      1000ull
#define T0      (1000 * US)     /* the clock's start: not 0 */
#define NEV     40u             /* events of a burst (the queue holds 64) */

/* A driver with one handler that drains the event queue on each
 * interrupt and then writes INT_READY, as weft.ko does. */
struct drv {
	struct h_node n;
	bool link;
	size_t irqs_seen;
	uint64_t posted[256];           /* when event seq was raised */
	uint64_t max_wait;              /* longest event-to-interrupt time */
	unsigned int drained;
};

static void drv_init(struct drv *d, uint64_t mod)
{
	memset(d, 0, sizeof(*d));
	h_init(&d->n, 1, 1, 32, 1, 0);
	h_evq_setup(&d->n);
	d->link = true;
	d->n.now = T0;
	h_reg_w(&d->n, WEFT_REG_INT_MOD(0), mod);
}

/* Take the interrupts raised so far: drain the queue, handler ready. */
static void drv_service(struct drv *d)
{
	struct weft_event ev;

	while (d->irqs_seen < d->n.nirq) {
		d->irqs_seen++;
		while (h_evq_next(&d->n, &ev)) {
			uint64_t w = d->n.now - d->posted[ev.seq % 256];

			if (w > d->max_wait)
				d->max_wait = w;
			d->drained++;
		}
		h_reg_w(&d->n, WEFT_REG_INT_READY, 0);
	}
}

/* Clock to t, the adapter polls (due interrupts go out), the driver runs. */
static void drv_at(struct drv *d, uint64_t t)
{
	d->n.now = t;
	weft_core_poll(d->n.c, 16);
	drv_service(d);
}

/* One event (a link change) at time t. */
static void drv_event(struct drv *d, uint64_t t)
{
	uint64_t seq = h_reg_r(&d->n, WEFT_REG_EVQ_PROD) + 1;

	d->n.now = t;
	d->posted[seq % 256] = t;
	d->link = !d->link;
	weft_core_set_link(d->n.c, d->link);
	drv_at(d, t);
}

/* NEV events 2 us apart from T0, then the clock runs on to T0 + 2 ms. */
static void drv_burst(struct drv *d)
{
	unsigned int i;
	uint64_t t;

	for (i = 0; i < NEV; i++)
		drv_event(d, T0 + 2 * i * US);
	for (t = T0 + 2 * NEV * US; t <= T0 + 2000 * US; t += US)
		drv_at(d, t);
}

static void test_burst(void)
{
	struct drv off, on;

	t_begin("INT_MOD off: a burst of %u events, one interrupt each", NEV);
	drv_init(&off, 0);
	drv_burst(&off);
	CHECK_EQ(off.drained, NEV, "events drained");
	CHECK_EQ(off.n.nirq, NEV, "interrupts without moderation");
	CHECK_EQ(off.max_wait, 0, "no event waits");
	CHECK_EQ(h_cnt(&off.n, WEFT_CNT_INT_HELD), 0, "INT_HELD");

	t_begin("INT_MOD 50 us: the same burst, fewer interrupts, none lost, none late");
	drv_init(&on, WEFT_INT_MOD(50, 0));
	CHECK_EQ(h_reg_r(&on.n, WEFT_REG_INT_MOD(0)), WEFT_INT_MOD(50, 0), "INT_MOD reads back");
	drv_burst(&on);
	CHECK_EQ(on.drained, NEV, "every event drained");
	/* At T0 (the first event, at once), at T0 + 50 us (the event then,
	 * with the 24 held since T0 + 2 us) and at T0 + 100 us (the last 14,
	 * at the end of the second period). */
	CHECK_EQ(on.n.nirq, 3, "interrupts with a 50 us period");
	CHECK_EQ(on.max_wait, 48 * US, "longest wait: T0 + 52 us to T0 + 100 us");
	CHECK_EQ(h_cnt(&on.n, WEFT_CNT_INT_HELD), 2, "INT_HELD");
	CHECK_EQ(h_reg_r(&on.n, WEFT_REG_INT_PENDING), 0, "nothing left presented");
	t_diag("burst of %u events: %zu interrupts without moderation, %zu with 50 us; "
	       "longest wait %llu ns", NEV, off.n.nirq, on.n.nirq,
	       (unsigned long long)on.max_wait);

	t_begin("after an idle spell, an event interrupts at once");
	on.max_wait = 0;
	drv_event(&on, T0 + 5000 * US);
	CHECK_EQ(on.n.nirq, 4, "the event's interrupt");
	CHECK_EQ(on.max_wait, 0, "without waiting");

	t_begin("an event inside the period waits for its end, not longer");
	drv_event(&on, T0 + 5010 * US);
	CHECK_EQ(on.n.nirq, 4, "held at 10 us into the period");
	drv_at(&on, T0 + 5049 * US);
	CHECK_EQ(on.n.nirq, 4, "still held at 49 us");
	drv_at(&on, T0 + 5050 * US);
	CHECK_EQ(on.n.nirq, 5, "out when the period ends");
	CHECK_EQ(on.max_wait, 40 * US, "waited 40 us");
	h_fini(&off.n);
	h_fini(&on.n);
}

static void test_count(void)
{
	struct drv d;

	t_begin("INT_MOD 1000 us, count 8: an interrupt per 8 events of a burst");
	drv_init(&d, WEFT_INT_MOD(1000, 8));
	drv_burst(&d);
	CHECK_EQ(d.drained, NEV, "every event drained");
	/* The first at once, then one per 8 held events: 39 = 4 * 8 + 7, the
	 * last 7 at the end of the period that the fifth began (T0 + 64 us). */
	CHECK_EQ(d.n.nirq, 1 + 4 + 1, "interrupts");
	CHECK_EQ(d.max_wait, 998 * US, "longest wait: T0 + 66 us to T0 + 1064 us");
	h_fini(&d.n);
}

static void test_refusals(void)
{
	struct drv d;
	unsigned int ge;

	t_begin("INT_MOD: bad values are refused and leave the register as it was");
	drv_init(&d, WEFT_INT_MOD(20, 4));
	ge = d.n.guest_errors;
	h_reg_w(&d.n, WEFT_REG_INT_MOD(0), WEFT_INT_MOD(WEFT_INT_MOD_MAX_US + 1, 0));
	h_reg_w(&d.n, WEFT_REG_INT_MOD(0), WEFT_INT_MOD(0, 4));
	h_reg_w(&d.n, WEFT_REG_INT_MOD(0), WEFT_INT_MOD(20, 4) | (1ull << 32));
	h_reg_w(&d.n, WEFT_REG_INT_MOD(1), WEFT_INT_MOD(20, 0));       /* 1 handler in use */
	CHECK_EQ(d.n.guest_errors - ge, 4, "four guest errors");
	CHECK_EQ(h_reg_r(&d.n, WEFT_REG_INT_MOD(0)), WEFT_INT_MOD(20, 4), "unchanged");
	CHECK_EQ(h_reg_r(&d.n, WEFT_REG_INT_MOD(1)), 0, "handler 1 unchanged");
	weft_core_reg_write(d.n.c, WEFT_REG_INT_MOD(0), WEFT_INT_MOD(WEFT_INT_MOD_MAX_US, 0), 4);
	CHECK_EQ(h_reg_r(&d.n, WEFT_REG_INT_MOD(0)), WEFT_INT_MOD(WEFT_INT_MOD_MAX_US, 0),
		 "a 4-byte write of the maximum period");
	CHECK_EQ(d.n.guest_errors - ge, 4, "no more guest errors");
	h_reg_w(&d.n, WEFT_REG_RESET, WEFT_RESET_MAGIC);
	CHECK_EQ(h_reg_r(&d.n, WEFT_REG_INT_MOD(0)), 0, "0 after RESET");
	h_fini(&d.n);
}

static void test_rewrite_and_state(void)
{
	struct drv d, e;
	uint8_t *buf;
	size_t len;
	char err[160] = "";
	size_t base;

	t_begin("INT_MOD rewritten while an interrupt is held: it goes out now");
	drv_init(&d, WEFT_INT_MOD(500, 0));
	drv_event(&d, T0);
	drv_event(&d, T0 + 10 * US);
	CHECK_EQ(d.n.nirq, 1, "second event held");
	d.n.now = T0 + 20 * US;
	h_reg_w(&d.n, WEFT_REG_INT_MOD(0), 0);
	drv_service(&d);
	CHECK_EQ(d.n.nirq, 2, "out at the write");
	CHECK_EQ(d.drained, 2, "both events drained");

	t_begin("a held interrupt is saved as time left and goes out in time after a load");
	h_reg_w(&d.n, WEFT_REG_INT_MOD(0), WEFT_INT_MOD(100, 0));
	drv_event(&d, T0 + 100 * US);
	drv_event(&d, T0 + 130 * US);
	CHECK_EQ(d.n.nirq, 3, "held before the save");
	REQUIRE(weft_core_save(d.n.c, &buf, &len) == 0);
	drv_init(&e, 0);
	e.n.now = 7 * T0;
	CHECK(weft_core_load(e.n.c, buf, len, err, sizeof(err)) == 0, "load: %s", err);
	free(buf);
	memcpy(e.n.mem, d.n.mem, H_MEM_SIZE);
	e.n.evq_seen = d.n.evq_seen;
	base = e.irqs_seen = e.n.nirq;
	drv_at(&e, 7 * T0 + 69 * US);
	CHECK_EQ(e.n.nirq, base, "still held 69 us after the load");
	drv_at(&e, 7 * T0 + 71 * US);
	CHECK_EQ(e.n.nirq, base + 1, "out at 70 us, the time that was left");
	CHECK_EQ(e.drained, 1, "the held event drained");
	h_fini(&d.n);
	h_fini(&e.n);
}

int main(void)
{
	test_burst();
	test_count();
	test_refusals();
	test_rewrite_and_state();
	return t_done();
}
