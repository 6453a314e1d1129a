/* SPDX-License-Identifier: MIT */
/*
 * Tasks and adapter state: Live Task View, Close Window + Snapshot View,
 * transmit task stop on close, interrupt handlers and the event queue,
 * reset and recovery.
 */
#include <string.h>

#include "harness.h"

#define JOB     0x55u
#define PKEY    0x321u

struct one {
	struct h_node a;
	uint64_t buf, pvo;
};

static void one_init(struct one *o, unsigned int windows)
{
	unsigned int w;

	h_init(&o->a, 1, 8, 64, 4, 0);
	h_evq_setup(&o->a);
	for (w = 0; w < windows; w++) {
		CHECK_EQ(h_open(&o->a, w, JOB, 3, 3, 1), WEFT_CMD_OK, "open");
		CHECK_EQ(h_acquire(&o->a, 10 + w, w, 0), WEFT_CMD_OK, "acquire");
	}
	h_tce_table(&o->a, 0, 64, 12, JOB);
	o->buf = h_alloc(&o->a, 256 * 1024, 4096);
	o->pvo = h_map(&o->a, 0, 0, PKEY, o->buf, 256 * 1024);
}

static void post_write(struct one *o, unsigned int w, uint64_t len)
{
	struct weft_rdma_req q = {
		.local_pvo = o->pvo, .remote_pvo = weft_pvo_make(1, 0, 0), .length = len,
		.local_rcxt = 10 + w, .remote_rcxt = 1, .notify = WEFT_NOTIFY_TARGET, .tid = 1,
	};

	h_put_rdma(&o->a, w, WEFT_SF_RDMAW, 2, 0, &q);
	h_start(&o->a, w, 1);
}

static unsigned int sent_by(struct h_node *n, unsigned int w)
{
	unsigned int k = 0;
	size_t i;

	for (i = 0; i < n->ntx; i++)
		k += h_txhdr(n, i)->src_window == w;
	return k;
}

static void test_live_task_view(void)
{
	struct one o;

	h_section("Live Task View: a long RDMA write keeps its transmit task across polls");
	one_init(&o, 1);
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_LIVE_TASK_VIEW), 0, "idle");
	post_write(&o, 0, 20000);
	weft_core_poll(o.a.c, 1);
	CHECK_EQ(o.a.ntx, 1, "one chunk per budget unit");
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_LIVE_TASK_VIEW), 1u << WEFT_TX_TASK_BASE,
		 "transmit task 4 busy");
	weft_core_poll(o.a.c, 3);
	CHECK_EQ(o.a.ntx, 4, "bounded chunk per poll");
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_LIVE_TASK_VIEW), 1u << WEFT_TX_TASK_BASE, "still busy");
	h_poll(&o.a, 64);
	CHECK_EQ(o.a.ntx, 11, "all 11 packets");
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_LIVE_TASK_VIEW), 0, "released when done");
	h_fini(&o.a);
}

static void test_snapshot(void)
{
	struct one o;
	struct weft_event ev;
	unsigned int w0_at_close, polls = 0;
	uint64_t snap, ltv;
	bool seen_clear = false;

	h_section("snapshot: Close Window copies LTV; zero only when those tasks ended; later tasks never hold it up");
	one_init(&o, 3);
	post_write(&o, 0, 60000);
	post_write(&o, 1, 30000);
	weft_core_poll(o.a.c, 2);
	ltv = h_reg_r(&o.a, WEFT_REG_LIVE_TASK_VIEW);
	CHECK_EQ(ltv, 3u << WEFT_TX_TASK_BASE, "two transmit tasks busy");
	CHECK_EQ(h_cmd(&o.a, WEFT_REG_CMD_CLOSE_WINDOW, 0), WEFT_CMD_OK, "close window 0");
	snap = h_reg_r(&o.a, WEFT_REG_SNAPSHOT_VIEW);
	CHECK_EQ(snap, ltv, "snapshot = live view at close");
	w0_at_close = sent_by(&o.a, 0);
	/* A new transfer starts after the close. */
	post_write(&o, 2, 200000);
	weft_core_poll(o.a.c, 1);
	snap = h_reg_r(&o.a, WEFT_REG_SNAPSHOT_VIEW);
	CHECK_EQ(snap, 1u << (WEFT_TX_TASK_BASE + 1), "window 0's task stopped at its next chunk");
	CHECK_EQ(sent_by(&o.a, 0), w0_at_close, "closed window sends nothing more");
	ltv = h_reg_r(&o.a, WEFT_REG_LIVE_TASK_VIEW);
	CHECK(ltv & ~snap, "a task started after the close is live (0x%llx)", (unsigned long long)ltv);
	while (h_reg_r(&o.a, WEFT_REG_SNAPSHOT_VIEW) != 0 && polls < 1000) {
		CHECK(sent_by(&o.a, 1) < 16, "window 1 still sending while snapshot is set");
		weft_core_poll(o.a.c, 1);
		polls++;
	}
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_SNAPSHOT_VIEW), 0, "snapshot reaches zero");
	CHECK_EQ(sent_by(&o.a, 1), 16, "exactly when window 1's transfer ended");
	CHECK(h_reg_r(&o.a, WEFT_REG_LIVE_TASK_VIEW) != 0, "while the later task is still live");
	while (h_evq_next(&o.a, &ev))
		seen_clear |= ev.type == WEFT_EV_SNAPSHOT_CLEAR;
	CHECK(seen_clear, "SNAPSHOT_CLEAR event");
	h_poll(&o.a, 64);
	CHECK_EQ(sent_by(&o.a, 2), 105, "later transfer completes");
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_SNAPSHOT_VIEW), 0, "snapshot stays zero");
	t_diag("snapshot cleared after %u single-packet polls", polls);
	h_fini(&o.a);
}

static void test_busy_tasks(void)
{
	struct one o;
	unsigned int w;

	h_section("busy-task path: five long writes, four transmit tasks; the fifth waits and still completes");
	one_init(&o, 5);
	for (w = 0; w < 5; w++)
		post_write(&o, w, 10000);
	weft_core_poll(o.a.c, 5);
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_LIVE_TASK_VIEW), 0xfu << WEFT_TX_TASK_BASE,
		 "all four transmit tasks busy");
	CHECK_EQ(sent_by(&o.a, 4), 0, "fifth window waits for a task");
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_ACTIVE_WIN0), 0x1f, "but stays active");
	h_poll(&o.a, 64);
	for (w = 0; w < 5; w++)
		CHECK_EQ(sent_by(&o.a, w), 6, "every window sent its 6 packets");
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_LIVE_TASK_VIEW), 0, "all tasks released");
	h_fini(&o.a);
}

static void raise_events(struct h_node *n, unsigned int k)
{
	unsigned int i;

	/* Each link change raises a LINK event. */
	for (i = 0; i < k; i++)
		weft_core_set_link(n->c, !(h_reg_r(n, WEFT_REG_STATUS) & WEFT_STATUS_LINK_UP));
}

static void test_interrupts(void)
{
	struct h_node a;
	struct weft_event ev;
	unsigned int i;

	h_section("interrupt handlers: round robin over ready handlers, not-ready once presented, INT_READY re-arms");
	h_init(&a, 1, 4, 64, 3, 0);
	h_evq_setup(&a);
	CHECK_EQ(h_reg_r(&a, WEFT_REG_INT_CONFIG) & 0xff, 3, "three handlers");
	raise_events(&a, 4);
	CHECK_EQ(a.nirq, 3, "three interrupts for four events (one per ready handler)");
	CHECK_EQ(h_reg_r(&a, WEFT_REG_INT_PENDING), 7, "all three presented");
	CHECK(a.irq[0] != a.irq[1] && a.irq[1] != a.irq[2] && a.irq[0] != a.irq[2],
	      "each handler got one: %u %u %u", a.irq[0], a.irq[1], a.irq[2]);
	for (i = 1; i < a.nirq; i++)
		CHECK_EQ(a.irq[i], (a.irq[i - 1] + 1) % 3, "round robin order");
	CHECK_EQ(h_reg_r(&a, WEFT_REG_EVQ_PROD), 4, "four events queued");
	/* Consume everything, then re-arm: nothing pending, no interrupt. */
	while (h_evq_next(&a, &ev))
		;
	CHECK_EQ(ev.seq, 4, "last event seq");
	h_reg_w(&a, WEFT_REG_INT_READY, 1);
	CHECK_EQ(a.nirq, 3, "no interrupt when nothing is pending");
	CHECK_EQ(h_reg_r(&a, WEFT_REG_INT_PENDING), 5, "handler 1 no longer pending");
	/* An event while only handler 1 is ready goes to handler 1. */
	raise_events(&a, 1);
	CHECK_EQ(a.nirq, 4, "presented");
	CHECK_EQ(a.irq[3], 1, "to the only ready handler");
	raise_events(&a, 1);
	CHECK_EQ(a.nirq, 4, "no handler ready: held");
	/* Re-arm handler 2 with events pending: presented at once. */
	h_reg_w(&a, WEFT_REG_INT_READY, 2);
	CHECK_EQ(a.nirq, 5, "re-armed handler gets the pending events at once");
	CHECK_EQ(a.irq[4], 2, "handler 2");
	h_reg_w(&a, WEFT_REG_INT_READY, 7);
	CHECK(a.guest_errors > 0, "INT_READY of a missing handler is a guest error");

	h_section("event queue overflow is counted; preferred handler = LMT.int_vect_data");
	h_reg_w(&a, WEFT_REG_INT_READY, 0);
	h_reg_w(&a, WEFT_REG_INT_READY, 1);
	h_reg_w(&a, WEFT_REG_INT_READY, 2);
	{
		uint64_t used = h_reg_r(&a, WEFT_REG_EVQ_PROD) - h_reg_r(&a, WEFT_REG_EVQ_CONS);
		uint64_t ovf = h_cnt(&a, WEFT_CNT_EVQ_OVERFLOW);

		raise_events(&a, (unsigned int)((1u << H_EVQ_LOG2) - used + 3));
		CHECK_EQ(h_cnt(&a, WEFT_CNT_EVQ_OVERFLOW) - ovf, 3, "overflowed events counted");
	}
	{
		size_t before = a.nirq;
		struct weft_event e;

		h_reg_w(&a, WEFT_REG_INT_READY, 0);
		CHECK_EQ(a.nirq, before + 1, "full queue: ready handler re-presented at once");
		before = a.nirq;
		raise_events(&a, 1);
		CHECK_EQ(a.nirq, before, "no handler ready: nothing presented");
		CHECK_EQ(h_reg_r(&a, WEFT_REG_EVQ_PROD) - h_reg_r(&a, WEFT_REG_EVQ_CONS),
			 1u << H_EVQ_LOG2, "queue full");
		h_reg_w(&a, WEFT_REG_INT_READY, 1);
		CHECK_EQ(a.nirq, before + 1, "presented when a handler is re-armed");
		a.evq_seen = h_reg_r(&a, WEFT_REG_EVQ_PROD) - (1u << H_EVQ_LOG2);
		while (h_evq_next(&a, &e))
			;
		h_reg_w(&a, WEFT_REG_INT_READY, 0);
		h_reg_w(&a, WEFT_REG_INT_READY, 1);
		h_reg_w(&a, WEFT_REG_INT_READY, 2);
		before = a.nirq;
		h_reg_w(&a, WEFT_REG_INT_READY, 0);
		CHECK_EQ(a.nirq, before, "drained queue: no spurious interrupt on re-arm");
	}
	h_fini(&a);

	h_init(&a, 1, 4, 64, 3, 0);
	h_evq_setup(&a);
	{
		struct weft_lmt l;
		uint8_t v = 0;
		struct h_node b;

		h_init(&b, 2, 4, 64, 1, 0);
		CHECK_EQ(h_open(&b, 0, JOB, 3, 3, 1), WEFT_CMD_OK, "open b");
		h_lmt_prepare(&a, 0, JOB, 3, 3, 1, &l);
		l.int_vect_data = 2;
		l.recv_int_threshold = 1;
		h_lmt_write(&a, 0, &l);
		CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_OPEN_WINDOW, 0), WEFT_CMD_OK, "open a");
		h_put_fifo(&b, 0, 1, 0, &v, 1, 0);
		h_start(&b, 0, 1);
		h_run2(&b, &a);
		CHECK_EQ(a.nirq, 1, "threshold interrupt");
		CHECK_EQ(a.irq[0], 2, "on the window's handler");
		h_fini(&b);
	}
	h_fini(&a);
}

static void test_reset_recover(void)
{
	struct one o;
	struct weft_lmt l;
	struct weft_rcxt x;
	uint8_t pkt[WEFT_WIRE_HDR_SIZE + 4];
	struct weft_wire_hdr *h = (struct weft_wire_hdr *)pkt;

	h_section("recovery: windows and rCxts invalidated, queued work dropped, count bumped");
	one_init(&o, 2);
	post_write(&o, 0, 50000);
	weft_core_poll(o.a.c, 2);
	memset(pkt, 0, sizeof(pkt));
	h->version = WEFT_WIRE_VERSION;
	h->type = WEFT_PKT_FIFO;
	h->dst_node = 1;
	h->key = JOB;
	h->length = 4;
	CHECK_EQ(weft_core_receive(o.a.c, pkt, sizeof(pkt)), 0, "packet queued");
	h_reg_w(&o.a, WEFT_REG_RECOVER, 1234);
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_RECOVERY_COUNT), 0, "wrong magic ignored");
	CHECK(o.a.guest_errors > 0, "wrong magic logged");
	h_reg_w(&o.a, WEFT_REG_RECOVER, WEFT_RECOVER_MAGIC);
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_RECOVERY_COUNT), 1, "RECOVERY_COUNT");
	CHECK_EQ(h_cnt(&o.a, WEFT_CNT_RECOVERIES), 1, "RECOVERIES");
	CHECK_EQ(h_db_r(&o.a, 0, WEFT_DB_STATE), WEFT_WIN_INVALID, "window 0 invalid");
	CHECK_EQ(h_db_r(&o.a, 1, WEFT_DB_STATE), WEFT_WIN_INVALID, "window 1 invalid");
	h_rcxt_read(&o.a, 10, &x);
	CHECK_EQ(x.rcxt_assigned, 0, "rCxt unassigned");
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_LIVE_TASK_VIEW), 0, "no task");
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_ACTIVE_WIN0), 0, "no active window");
	o.a.ntx = 0;
	CHECK(!weft_core_poll(o.a.c, 64), "nothing left to do");
	CHECK_EQ(o.a.ntx, 0, "nothing sent after recovery");
	CHECK_EQ(h_cnt(&o.a, WEFT_CNT_RX_PACKETS), 0, "queued packet dropped");
	CHECK(h_reg_r(&o.a, WEFT_REG_TCE_CFG(0)) != 0, "TCE tables survive recovery");
	CHECK_EQ(h_acquire(&o.a, 10, 0, 1), WEFT_CMD_OK, "rCxt can be re-acquired");

	t_begin("KEY_EPOCH: advanced only by KEY_EPOCH_NEXT with its magic");
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_KEY_EPOCH), 0, "power-on epoch from the config");
	h_reg_w(&o.a, WEFT_REG_KEY_EPOCH_NEXT, 1);
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_KEY_EPOCH), 0, "wrong magic ignored");
	h_reg_w(&o.a, WEFT_REG_KEY_EPOCH_NEXT, WEFT_EPOCH_MAGIC);
	h_reg_w(&o.a, WEFT_REG_KEY_EPOCH_NEXT, WEFT_EPOCH_MAGIC);
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_KEY_EPOCH), 2, "KEY_EPOCH + 1 per write");
	h_reg_w(&o.a, WEFT_REG_KEY_EPOCH, 99);
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_KEY_EPOCH), 2, "KEY_EPOCH is read-only");

	t_begin("reset: power-on state except RECOVERY_COUNT and KEY_EPOCH");
	CHECK_EQ(h_open(&o.a, 0, JOB, 3, 3, 1), WEFT_CMD_OK, "reopen");
	CHECK_EQ(weft_core_receive(o.a.c, pkt, sizeof(pkt)), 0, "packet queued");
	h_reg_w(&o.a, WEFT_REG_RESET, WEFT_RESET_MAGIC);
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_RECOVERY_COUNT), 1, "RECOVERY_COUNT kept");
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_KEY_EPOCH), 2, "KEY_EPOCH kept");
	CHECK_EQ(h_cnt(&o.a, WEFT_CNT_RESETS), 1, "RESETS");
	CHECK_EQ(h_cnt(&o.a, WEFT_CNT_RECOVERIES), 0, "other counters cleared");
	CHECK_EQ(h_cnt(&o.a, WEFT_CNT_GUEST_ERRORS), 0, "guest error counter cleared");
	h_lmt_read(&o.a, 0, &l);
	CHECK_EQ(l.window_state, WEFT_WIN_INVALID, "LMT cleared");
	CHECK_EQ(l.recv_fifo_real_address, 0, "LMT zeroed");
	h_rcxt_read(&o.a, 10, &x);
	CHECK_EQ(x.rcxt_assigned, 0, "rCxt cleared");
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_TCE_CFG(0)), 0, "TCE registers cleared");
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_EVQ_BASE), 0, "EVQ cleared");
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_INT_PENDING), 0, "no interrupt pending");
	CHECK(!weft_core_poll(o.a.c, 64), "idle");
	CHECK_EQ(h_cnt(&o.a, WEFT_CNT_RX_PACKETS), 0, "queued packet dropped");
	CHECK_EQ(h_reg_r(&o.a, WEFT_REG_ID), WEFT_ID_MAGIC | ((uint64_t)WEFT_HW_VERSION << 32), "ID");
	h_fini(&o.a);
}

int main(void)
{
	h_begin("test_tasks: tasks, snapshot, interrupts, reset and recovery");
	test_live_task_view();
	test_snapshot();
	test_busy_tasks();
	test_interrupts();
	test_reset_recover();
	return h_end();
}
