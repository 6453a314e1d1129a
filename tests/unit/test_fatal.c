/* SPDX-License-Identifier: MIT */
/*
 * Device-initiated recovery (hw-spec 9.1): DEBUG_INJECT FATAL stops the
 * adapter as on an internal error.  STATUS.FATAL is set, an ADAPTER_FATAL
 * event and an interrupt tell the driver, nothing is sent, received or
 * rung until RECOVER (or RESET) clears it; after RECOVER, packets of the
 * old rCxt key are dropped (RCXT_KEY) and a fresh window works.
 */
#include <string.h>

#include "harness.h"

#define JOB     0x88u
#define R_A     2u
#define R_B     3u

int main(void)
{
	struct h_node a, b;
	struct weft_event ev;
	struct weft_rdma_req q;
	struct h_pkt stale;
	uint64_t abuf, bbuf, apvo, bpvo;
	unsigned int fatal_events = 0, nirq;
	bool got;

	h_init(&a, 1, 2, 32, 1, 0);
	h_init(&b, 2, 2, 32, 1, 0);
	h_evq_setup(&b);
	CHECK_EQ(h_open(&a, 0, JOB, 4, 4, 2), WEFT_CMD_OK, "open a");
	CHECK_EQ(h_open(&b, 0, JOB, 4, 4, 2), WEFT_CMD_OK, "open b");
	h_acquire(&a, R_A, 0, 0);
	h_acquire(&b, R_B, 0, 0);
	h_tce_table(&a, 0, 4, 12, JOB);
	h_tce_table(&b, 0, 4, 12, JOB);
	abuf = h_alloc(&a, 8192, 4096);
	bbuf = h_alloc(&b, 8192, 4096);
	apvo = h_map(&a, 0, 0, 0x11, abuf, 8192);
	bpvo = h_map(&b, 0, 0, 0x22, bbuf, 8192);
	memset(h_ptr(&a, abuf), 0x3c, 8192);
	memset(&q, 0, sizeof(q));
	q.local_pvo = apvo;
	q.remote_pvo = bpvo;
	q.length = 4000;
	q.local_rcxt = R_A;
	q.remote_rcxt = R_B;
	q.notify = WEFT_NOTIFY_TARGET;
	q.tid = 1;
	h_put_rdma(&a, 0, WEFT_SF_RDMAW, 2, 0, &q);
	h_start(&a, 0, 1);
	h_poll(&a, 64);
	CHECK_EQ(a.ntx, 3, "a write in flight to b");
	stale = a.tx[2];

	t_begin("item 8: DEBUG_INJECT FATAL sets STATUS.FATAL, posts ADAPTER_FATAL, interrupts");
	h_deliver(&a, &b);      /* two packets are queued when the error hits */
	nirq = (unsigned int)b.nirq;
	h_reg_w(&b, WEFT_REG_DEBUG_INJECT, 0x1234);
	CHECK_EQ(h_reg_r(&b, WEFT_REG_STATUS) & WEFT_STATUS_FATAL, 0, "a wrong value does nothing");
	CHECK(b.guest_errors > 0, "and is a guest error");
	h_reg_w(&b, WEFT_REG_DEBUG_INJECT, WEFT_INJECT_FATAL);
	CHECK(h_reg_r(&b, WEFT_REG_STATUS) & WEFT_STATUS_FATAL, "STATUS.FATAL");
	CHECK(h_reg_r(&b, WEFT_REG_STATUS) & WEFT_STATUS_READY, "still READY (registers work)");
	while ((got = h_evq_next(&b, &ev)))
		if (ev.type == WEFT_EV_ADAPTER_FATAL && ev.reason == WEFT_R_ADAPTER_FATAL)
			fatal_events++;
	CHECK_EQ(fatal_events, 1, "one ADAPTER_FATAL event");
	CHECK(b.nirq > nirq, "an interrupt");

	t_begin("item 8: while FATAL nothing is received, sent or rung");
	h_poll(&b, 64);
	CHECK_EQ(h_drops(&b, WEFT_R_ADAPTER_FATAL), 3, "queued packets dropped ADAPTER_FATAL");
	CHECK_EQ(h_cnt(&b, WEFT_CNT_RDMAW_DONE), 0, "the write never completed");
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_RECV_COUNT), 0, "nothing in the FIFO");
	h_put_fifo(&b, 0, 1, 0, "x", 1, 0);
	h_start(&b, 0, 1);
	h_poll(&b, 64);
	CHECK_EQ(b.ntx, 0, "nothing sent");
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_SEND_READY), 0, "the doorbell was discarded");
	CHECK_EQ(h_drops(&b, WEFT_R_ADAPTER_FATAL), 4, "counted");

	t_begin("item 8: RECOVER clears FATAL; packets of the old rCxt key are dropped");
	h_reg_w(&b, WEFT_REG_RECOVER, WEFT_RECOVER_MAGIC);
	CHECK_EQ(h_reg_r(&b, WEFT_REG_STATUS) & WEFT_STATUS_FATAL, 0, "FATAL cleared");
	CHECK_EQ(h_reg_r(&b, WEFT_REG_RECOVERY_COUNT), 1, "recovery count 1");
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_STATE), WEFT_WIN_INVALID, "windows invalid");
	b.sprod[0] = 0;
	b.rcons[0] = 0;
	CHECK_EQ(h_open(&b, 0, JOB, 4, 4, 2), WEFT_CMD_OK, "reopen");
	CHECK_EQ(h_acquire(&b, R_B, 0, 1), WEFT_CMD_OK, "re-acquire with key 1");
	weft_core_receive(b.c, stale.data, stale.len);
	h_poll(&b, 16);
	CHECK_EQ(h_drops(&b, WEFT_R_RCXT_KEY), 1, "the stale packet: RCXT_KEY");
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_STATE), WEFT_WIN_VALID, "no window error");
	q.tid = 2;
	q.remote_rcxt_key = 1;
	h_put_rdma(&a, 0, WEFT_SF_RDMAW, 2, 0, &q);
	h_start(&a, 0, 1);
	h_run2(&a, &b);
	CHECK_EQ(h_cnt(&b, WEFT_CNT_RDMAW_DONE), 1, "a new write completes");
	CHECK(memcmp(h_ptr(&a, abuf), h_ptr(&b, bbuf), 4000) == 0, "byte-exact");

	t_begin("item 8: RESET also clears FATAL");
	h_reg_w(&b, WEFT_REG_DEBUG_INJECT, WEFT_INJECT_FATAL);
	CHECK(h_reg_r(&b, WEFT_REG_STATUS) & WEFT_STATUS_FATAL, "FATAL again");
	h_reg_w(&b, WEFT_REG_RESET, WEFT_RESET_MAGIC);
	CHECK_EQ(h_reg_r(&b, WEFT_REG_STATUS) & WEFT_STATUS_FATAL, 0, "cleared by RESET");
	h_fini(&a);
	h_fini(&b);
	return t_done();
}
