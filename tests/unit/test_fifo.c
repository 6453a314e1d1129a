/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
/*
 * Window and packet-mode rules: window gating, StartTransmit counting and
 * the active-window bit, quantum round robin, send completion marking,
 * key stamping, receive key check, header-last delivery, full FIFO drop
 * and slot return, threshold interrupts, broadcast enable.
 */
#include <string.h>

#include "harness.h"

#define KEY_A   0x1111u
#define KEY_B   0x2222u

/* Node 1 with window 0 open (8-frame FIFOs, quantum 4). */
static void one_open(struct h_node *a)
{
	h_init(a, 1, 4, 64, 1, 0);
	CHECK_EQ(h_open(a, 0, KEY_A, 3, 3, 4), WEFT_CMD_OK, "open a");
}

/* Nodes 1 and 2, window 0 of node 1 and window bwin of node 2 open with
 * the same key. */
static void pair_open(struct h_node *a, struct h_node *b, unsigned int bwin)
{
	one_open(a);
	h_init(b, 2, 4, 64, 1, 0);
	CHECK_EQ(h_open(b, bwin, KEY_A, 3, 3, 4), WEFT_CMD_OK, "open b");
}

static void test_gating(void)
{
	struct h_node a;
	struct weft_lmt before, after;
	uint64_t disc;

	h_section("window gating: doorbells to invalid/closed windows are discarded");
	h_init(&a, 1, 4, 64, 1, 0);
	h_lmt_prepare(&a, 2, KEY_A, 3, 3, 4, &before);
	h_lmt_write(&a, 2, &before);     /* written, never opened: INVALID */
	h_lmt_read(&a, 2, &before);
	disc = h_cnt(&a, WEFT_CNT_CMD_DISCARDED);
	h_start(&a, 2, 3);
	h_db_w(&a, 2, WEFT_DB_RETURN_SLOTS, 1);
	h_db_w(&a, 2, WEFT_DB_RECV_THRESHOLD, 5);
	h_lmt_read(&a, 2, &after);
	CHECK(memcmp(&before, &after, sizeof(before)) == 0, "LMT changed by doorbells to an invalid window");
	CHECK_EQ(h_reg_r(&a, WEFT_REG_ACTIVE_WIN0), 0, "active bits after StartTransmit to invalid window");
	CHECK_EQ(h_cnt(&a, WEFT_CNT_CMD_DISCARDED) - disc, 3, "CMD_DISCARDED");
	CHECK_EQ(h_reg_r(&a, WEFT_REG_LIVE_TASK_VIEW), 0, "command tasks freed");

	/* Closed window: same. */
	CHECK_EQ(h_open(&a, 1, KEY_A, 3, 3, 4), WEFT_CMD_OK, "open window 1");
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_CLOSE_WINDOW, 1), WEFT_CMD_OK, "close window 1");
	h_start(&a, 1, 1);
	CHECK_EQ(h_db_r(&a, 1, WEFT_DB_SEND_READY), 0, "readyToSend of closed window");
	CHECK_EQ(h_reg_r(&a, WEFT_REG_ACTIVE_WIN0), 0, "active bit of closed window");
	CHECK_EQ(h_db_r(&a, 1, WEFT_DB_STATE), WEFT_WIN_CLOSED, "state CLOSED");

	/* Open validation: CMD_STATUS tells why. */
	h_lmt_prepare(&a, 3, KEY_A, 3, 3, 4, &before);
	before.window_id = 2;
	h_lmt_write(&a, 3, &before);
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_OPEN_WINDOW, 3), WEFT_CMD_EBADLMT, "open with wrong window_id");
	before.window_id = 3;
	before.recv_mask = 5;
	h_lmt_write(&a, 3, &before);
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_OPEN_WINDOW, 3), WEFT_CMD_EBADLMT, "open with bad mask");
	before.recv_mask = 7;
	before.window_key = 0;
	h_lmt_write(&a, 3, &before);
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_OPEN_WINDOW, 3), WEFT_CMD_EBADLMT, "open with key 0");
	before.window_key = KEY_A;
	before.send_quanta_size = 0;
	h_lmt_write(&a, 3, &before);
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_OPEN_WINDOW, 3), WEFT_CMD_EBADLMT, "open with quantum 0");
	before.send_quanta_size = 1;
	before.send_fifo_real_address += 128;
	h_lmt_write(&a, 3, &before);
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_OPEN_WINDOW, 3), WEFT_CMD_EBADLMT, "open with unaligned FIFO");
	before.send_fifo_real_address -= 128;
	before.send_fifo_size = 16;
	h_lmt_write(&a, 3, &before);
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_OPEN_WINDOW, 3), WEFT_CMD_EBADLMT, "open with FIFO size 16");
	before.send_fifo_size = 3;
	h_lmt_write(&a, 3, &before);
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_OPEN_WINDOW, 3), WEFT_CMD_OK, "open with a good LMT");
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_OPEN_WINDOW, 3), WEFT_CMD_EBUSY, "open twice");
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_OPEN_WINDOW, 4), WEFT_CMD_EINVAL, "open beyond nr_windows");
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_CLOSE_WINDOW, 0), WEFT_CMD_ESTATE, "close never-opened");
	h_fini(&a);
}

static void test_start_transmit(void)
{
	struct h_node a;
	struct weft_send_line s;
	uint8_t buf[64];
	unsigned int i;

	h_section("StartTransmit counts readyToSend, sets and clears the active bit, marks frames done");
	h_init(&a, 1, 8, 64, 1, 0);
	CHECK_EQ(h_open(&a, 5, KEY_A, 3, 3, 4), WEFT_CMD_OK, "open");
	for (i = 0; i < 3; i++) {
		memset(buf, i, sizeof(buf));
		h_put_fifo(&a, 5, 2, 0, buf, sizeof(buf), 0);
	}
	h_start(&a, 5, 3);
	CHECK_EQ(h_db_r(&a, 5, WEFT_DB_SEND_READY), 3, "readyToSend after StartTransmit(3)");
	CHECK_EQ(h_reg_r(&a, WEFT_REG_ACTIVE_WIN0), 1u << 5, "active bit set");
	CHECK(a.kicks > 0, "StartTransmit kicks the embedder");
	weft_core_poll(a.c, 1);
	CHECK_EQ(a.ntx, 1, "budget 1 sends one packet");
	CHECK_EQ(h_db_r(&a, 5, WEFT_DB_SEND_READY), 2, "readyToSend after one packet");
	h_poll(&a, 64);
	CHECK_EQ(a.ntx, 3, "all three sent");
	CHECK_EQ(h_db_r(&a, 5, WEFT_DB_SEND_READY), 0, "readyToSend drained");
	CHECK_EQ(h_db_r(&a, 5, WEFT_DB_SEND_COUNT), 3, "send_current_cnt");
	CHECK_EQ(h_reg_r(&a, WEFT_REG_ACTIVE_WIN0), 0, "active bit cleared");
	for (i = 0; i < 3; i++) {
		h_send_line(&a, 5, i, &s);
		CHECK(s.hdr.flags & WEFT_SF_DONE, "frame %u marked done", i);
		CHECK_EQ(s.hdr.status, WEFT_R_OK, "frame status");
		CHECK_EQ(h_txhdr(&a, i)->length, 64, "payload length");
		CHECK_EQ(a.tx[i].data[WEFT_WIRE_HDR_SIZE], i, "payload byte");
	}
	/* A frame not yet started is not marked. */
	h_send_line(&a, 5, 3, &s);
	CHECK(!(s.hdr.flags & WEFT_SF_DONE), "unposted frame untouched");
	/* More than the FIFO holds is a guest error and is clamped. */
	h_start(&a, 5, 100);
	CHECK_EQ(h_db_r(&a, 5, WEFT_DB_SEND_READY), 8, "readyToSend clamped to FIFO size");
	CHECK(a.guest_errors > 0, "over-large StartTransmit logged");
	h_fini(&a);
}

static void test_quantum(void)
{
	struct h_node a;
	uint8_t b = 0;
	unsigned int i;
	char order[32] = "";

	h_section("quantum round robin: two windows, k = 3, runs of 3");
	h_init(&a, 1, 4, 64, 1, 0);
	CHECK_EQ(h_open(&a, 0, KEY_A, 4, 3, 3), WEFT_CMD_OK, "open 0");
	CHECK_EQ(h_open(&a, 1, KEY_A, 4, 3, 3), WEFT_CMD_OK, "open 1");
	for (i = 0; i < 9; i++) {
		h_put_fifo(&a, 0, 2, 0, &b, 1, 0);
		h_put_fifo(&a, 1, 2, 0, &b, 1, 0);
	}
	h_start(&a, 0, 9);
	h_start(&a, 1, 9);
	h_poll(&a, 64);
	CHECK_EQ(a.ntx, 18, "all sent");
	for (i = 0; i < 18 && i < a.ntx; i++)
		order[i] = (char)('0' + h_txhdr(&a, i)->src_window);
	CHECK(strcmp(order, "000111000111000111") == 0, "order %s", order);
	t_diag("transmit order by window: %s", order);
	h_fini(&a);

	h_section("quantum round robin: k = 1 alternates, unequal load finishes with the busy window");
	h_init(&a, 1, 4, 64, 1, 0);
	CHECK_EQ(h_open(&a, 2, KEY_A, 4, 3, 1), WEFT_CMD_OK, "open 2");
	CHECK_EQ(h_open(&a, 3, KEY_A, 4, 3, 1), WEFT_CMD_OK, "open 3");
	for (i = 0; i < 5; i++)
		h_put_fifo(&a, 2, 2, 0, &b, 1, 0);
	for (i = 0; i < 2; i++)
		h_put_fifo(&a, 3, 2, 0, &b, 1, 0);
	h_start(&a, 2, 5);
	h_start(&a, 3, 2);
	h_poll(&a, 64);
	memset(order, 0, sizeof(order));
	for (i = 0; i < a.ntx; i++)
		order[i] = (char)('0' + h_txhdr(&a, i)->src_window);
	CHECK(strcmp(order, "2323222") == 0, "order %s", order);
	t_diag("transmit order by window: %s", order);
	h_fini(&a);
}

static void test_key_stamping(void)
{
	struct h_node a, b;
	struct weft_recv_hdr rh;
	const char msg[] = "hello";
	uint8_t raw[WEFT_WIRE_MAX_FRAME];
	struct weft_wire_hdr *h = (struct weft_wire_hdr *)raw;

	h_section("key stamping: the user's key in the send frame never reaches the wire");
	pair_open(&a, &b, 1);
	h_put_fifo(&a, 0, 2, 1, msg, sizeof(msg), KEY_B); /* forged key */
	h_start(&a, 0, 1);
	h_poll(&a, 64);
	CHECK_EQ(a.ntx, 1, "sent");
	CHECK_EQ(h_txhdr(&a, 0)->key, KEY_A, "stamped key = LMT.window_key");
	CHECK_EQ(h_txhdr(&a, 0)->src_node, 1, "source node");
	CHECK_EQ(h_txhdr(&a, 0)->src_window, 0, "source window");
	CHECK(memmem(a.tx[0].data, a.tx[0].len, &(uint32_t){KEY_B}, 4) == NULL,
	      "forged key appears nowhere in the packet");
	h_deliver(&a, &b);
	h_poll(&b, 64);
	h_recv_hdr(&b, 1, 0, &rh);
	CHECK(rh.flags & WEFT_RF_VALID, "delivered");
	CHECK_EQ(rh.src_node, 1, "src node in receive header");
	CHECK(memcmp(h_recv_payload(&b, 1, 0), msg, sizeof(msg)) == 0, "payload");

	h_section("receive key check: a packet whose key differs from the window key is dropped");
	memcpy(raw, a.tx[0].data, 0);
	memset(raw, 0, sizeof(raw));
	h->version = WEFT_WIRE_VERSION;
	h->type = WEFT_PKT_FIFO;
	h->dst_node = 2;
	h->dst_window = 1;
	h->src_node = 1;
	h->key = KEY_B;
	h->length = 8;
	CHECK_EQ(weft_core_receive(b.c, raw, WEFT_WIRE_HDR_SIZE + 8), 0, "taken");
	h_poll(&b, 64);
	CHECK_EQ(h_drops(&b, WEFT_R_KEY_MISMATCH), 1, "KEY_MISMATCH drop");
	CHECK_EQ(h_db_r(&b, 1, WEFT_DB_RECV_COUNT), 1, "nothing delivered");
	/* Wrong node, closed window, bad header. */
	h->key = KEY_A;
	h->dst_node = 7;
	weft_core_receive(b.c, raw, WEFT_WIRE_HDR_SIZE + 8);
	h->dst_node = 2;
	h->dst_window = 3;
	weft_core_receive(b.c, raw, WEFT_WIRE_HDR_SIZE + 8);
	h->dst_window = 1;
	h->length = 9;
	weft_core_receive(b.c, raw, WEFT_WIRE_HDR_SIZE + 8);
	h->length = 8;
	h->type = 0x55;
	weft_core_receive(b.c, raw, WEFT_WIRE_HDR_SIZE + 8);
	h_poll(&b, 64);
	CHECK_EQ(h_drops(&b, WEFT_R_NOT_FOR_US), 1, "NOT_FOR_US");
	CHECK_EQ(h_drops(&b, WEFT_R_WINDOW_INVALID), 1, "WINDOW_INVALID");
	CHECK_EQ(h_drops(&b, WEFT_R_BAD_HEADER), 1, "BAD_HEADER");
	CHECK_EQ(h_drops(&b, WEFT_R_BAD_TYPE), 1, "BAD_TYPE");
	CHECK_EQ(h_db_r(&b, 1, WEFT_DB_RECV_COUNT), 1, "still nothing delivered");
	h_fini(&a);
	h_fini(&b);
}

static void test_header_last(void)
{
	struct h_node a, b;
	uint8_t msg[1500];
	size_t i, hdr_at = 0, payload_at = 0;
	uint64_t frame;
	unsigned int seen_payload = 0, hdr_writes = 0;

	h_section("header-last: every payload line is written before the header line");
	pair_open(&a, &b, 0);
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 7);
	h_put_fifo(&a, 0, 2, 0, msg, sizeof(msg), 0);
	h_start(&a, 0, 1);
	h_poll(&a, 64);
	h_deliver(&a, &b);
	b.nwlog = 0;
	h_poll(&b, 64);
	frame = b.rfifo[0];
	for (i = 0; i < b.nwlog; i++) {
		uint64_t s = b.wlog[i].addr, e = s + b.wlog[i].len;

		if (s < frame + WEFT_FRAME_SIZE && e > frame + WEFT_FRAME_HDR_SIZE) {
			seen_payload++;
			payload_at = i;
			CHECK(hdr_writes == 0, "payload write %zu after the header line", i);
		}
		if (s < frame + WEFT_FRAME_HDR_SIZE && e > frame) {
			hdr_writes++;
			hdr_at = i;
			CHECK(s == frame && e == frame + WEFT_FRAME_HDR_SIZE,
			      "header write covers exactly the first line");
		}
	}
	CHECK(seen_payload >= 1, "payload written");
	CHECK_EQ(hdr_writes, 1, "one header write");
	CHECK(hdr_at > payload_at, "header (write %zu) after payload (write %zu)", hdr_at, payload_at);
	CHECK(memcmp(h_recv_payload(&b, 0, 0), msg, sizeof(msg)) == 0, "payload bytes");
	t_diag("write log: %zu writes, payload last at %zu, header at %zu",
	       b.nwlog, payload_at, hdr_at);
	h_fini(&a);
	h_fini(&b);
}

static void send_n(struct h_node *a, struct h_node *b, unsigned int n, uint8_t tag)
{
	unsigned int i;
	uint8_t v;

	for (i = 0; i < n; i++) {
		v = (uint8_t)(tag + i);
		h_put_fifo(a, 0, b->id, 0, &v, 1, 0);
	}
	h_start(a, 0, n);
	h_run2(a, b);
}

static void test_full_fifo(void)
{
	struct h_node a, b;
	struct weft_recv_hdr rh;
	struct weft_lmt l;

	h_section("full receive FIFO drops silently; returning slots resumes reception");
	h_init(&a, 1, 4, 64, 1, 0);
	h_init(&b, 2, 4, 64, 1, 0);
	CHECK_EQ(h_open(&a, 0, KEY_A, 4, 2, 4), WEFT_CMD_OK, "open a");
	CHECK_EQ(h_open(&b, 0, KEY_A, 2, 2, 4), WEFT_CMD_OK, "open b (4-frame receive FIFO)");
	send_n(&a, &b, 6, 10);
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_RECV_COUNT), 4, "four delivered");
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_RECV_AVAIL), 0, "no slot available");
	CHECK_EQ(h_drops(&b, WEFT_R_FIFO_FULL), 2, "two FIFO_FULL drops");
	h_lmt_read(&b, 0, &l);
	CHECK_EQ(l.recv_dropped, 2, "LMT recv_dropped");
	CHECK_EQ(b.nirq, 0, "no interrupt for the drops");
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_STATE), WEFT_WIN_VALID, "window stays valid");
	h_recv_hdr(&b, 0, 0, &rh);
	CHECK_EQ(h_recv_payload(&b, 0, 0)[0], 10, "slot 0 keeps the first packet");
	/* The ULP consumes slot 0 and 1, zeroes them and returns 2 slots. */
	memset(h_ptr(&b, b.rfifo[0]), 0, WEFT_FRAME_HDR_SIZE);
	memset(h_ptr(&b, b.rfifo[0] + WEFT_FRAME_SIZE), 0, WEFT_FRAME_HDR_SIZE);
	h_db_w(&b, 0, WEFT_DB_RETURN_SLOTS, 2);
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_RECV_AVAIL), 2, "two slots back");
	send_n(&a, &b, 3, 50);
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_RECV_COUNT), 6, "two more delivered");
	CHECK_EQ(h_drops(&b, WEFT_R_FIFO_FULL), 3, "third dropped");
	h_recv_hdr(&b, 0, 4, &rh);
	CHECK(rh.flags & WEFT_RF_VALID, "slot 0 reused");
	CHECK_EQ(rh.seq, 4, "entry seq 4");
	CHECK_EQ(h_recv_payload(&b, 0, 4)[0], 50, "fresh packet in slot 0");
	CHECK_EQ(h_recv_payload(&b, 0, 2)[0], 12, "slot 2 (not returned) untouched");
	h_db_w(&b, 0, WEFT_DB_RETURN_SLOTS, 9);
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_RECV_AVAIL), 4, "return clamped to the FIFO size");
	h_fini(&a);
	h_fini(&b);
}

static void test_threshold(void)
{
	struct h_node a, b;
	struct weft_event ev;
	unsigned int i;
	size_t irq_before;

	h_section("receive threshold: interrupt exactly at the n-th entry; 0 and all-ones disable");
	h_init(&a, 1, 4, 64, 1, 0);
	h_init(&b, 2, 4, 64, 2, 0);
	h_evq_setup(&b);
	CHECK_EQ(h_open(&a, 0, KEY_A, 4, 4, 4), WEFT_CMD_OK, "open a");
	CHECK_EQ(h_open(&b, 0, KEY_A, 4, 4, 4), WEFT_CMD_OK, "open b");
	h_db_w(&b, 0, WEFT_DB_RECV_THRESHOLD, 3);
	for (i = 1; i <= 4; i++) {
		send_n(&a, &b, 1, (uint8_t)i);
		CHECK_EQ(b.nirq, i >= 3 ? 1 : 0, "interrupts after entry");
	}
	CHECK(h_evq_next(&b, &ev), "event queued");
	CHECK_EQ(ev.type, WEFT_EV_RECV_THRESHOLD, "event type");
	CHECK_EQ(ev.window, 0, "event window");
	CHECK_EQ(ev.info, 3, "event at count 3");
	CHECK_EQ(ev.seq, 1, "event seq");
	CHECK(!h_evq_next(&b, &ev), "only one event");
	CHECK_EQ(h_cnt(&b, WEFT_CNT_INTERRUPTS), 2, "INTERRUPTS (link up + threshold)");
	CHECK_EQ(b.irq[0], 0, "vector = LMT.int_vect_data");
	h_reg_w(&b, WEFT_REG_INT_READY, 0);

	h_db_w(&b, 0, WEFT_DB_RECV_THRESHOLD, 0);
	irq_before = b.nirq;
	send_n(&a, &b, 3, 0);
	CHECK_EQ(b.nirq, irq_before, "threshold 0 never interrupts");
	h_db_w(&b, 0, WEFT_DB_RECV_THRESHOLD, 0xffffffffu);
	send_n(&a, &b, 3, 0);
	CHECK_EQ(b.nirq, irq_before, "threshold all-ones never interrupts");
	CHECK(!h_evq_next(&b, &ev), "no events");

	h_section("send threshold: interrupt when send_current_cnt reaches it");
	h_evq_setup(&a);
	i = (unsigned int)h_db_r(&a, 0, WEFT_DB_SEND_COUNT);
	h_db_w(&a, 0, WEFT_DB_SEND_THRESHOLD, i + 2);
	send_n(&a, &b, 1, 0);
	CHECK_EQ(a.nirq, 0, "no interrupt at n - 1");
	send_n(&a, &b, 1, 0);
	CHECK_EQ(a.nirq, 1, "interrupt at n");
	send_n(&a, &b, 1, 0);
	CHECK_EQ(a.nirq, 1, "no interrupt at n + 1");
	CHECK(h_evq_next(&a, &ev) && ev.type == WEFT_EV_SEND_THRESHOLD, "send threshold event");
	h_fini(&a);
	h_fini(&b);
}

static void test_bcast(void)
{
	struct h_node a;
	struct weft_send_line s;
	struct weft_lmt l;
	uint8_t v = 1;

	h_section("broadcast/multicast sends need config_parm_bcast");
	one_open(&a);
	h_put_fifo(&a, 0, WEFT_NODE_BROADCAST, 0, &v, 1, 0);
	h_put_fifo(&a, 0, WEFT_NODE_MCAST_BASE + 3, 0, &v, 1, 0);
	h_put_fifo(&a, 0, 0xF200, 0, &v, 1, 0);
	h_start(&a, 0, 3);
	h_poll(&a, 64);
	CHECK_EQ(a.ntx, 0, "nothing transmitted");
	h_send_line(&a, 0, 0, &s);
	CHECK(s.hdr.flags & WEFT_SF_DONE, "broadcast frame done");
	CHECK_EQ(s.hdr.status, WEFT_R_BCAST_DISABLED, "broadcast status");
	h_send_line(&a, 0, 1, &s);
	CHECK_EQ(s.hdr.status, WEFT_R_BCAST_DISABLED, "multicast status");
	h_send_line(&a, 0, 2, &s);
	CHECK_EQ(s.hdr.status, WEFT_R_BAD_HEADER, "reserved node id status");
	CHECK_EQ(h_drops(&a, WEFT_R_BCAST_DISABLED), 2, "BCAST_DISABLED counted");

	h_lmt_prepare(&a, 1, KEY_A, 3, 3, 4, &l);
	l.config_parm_bcast = 1;
	h_lmt_write(&a, 1, &l);
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_OPEN_WINDOW, 1), WEFT_CMD_OK, "open 1 with bcast");
	h_put_fifo(&a, 1, WEFT_NODE_BROADCAST, 0, &v, 1, 0);
	h_start(&a, 1, 1);
	h_poll(&a, 64);
	CHECK_EQ(a.ntx, 1, "broadcast transmitted");
	CHECK_EQ(h_txhdr(&a, 0)->dst_node, WEFT_NODE_BROADCAST, "to the broadcast id");
	h_fini(&a);
}

static void test_link(void)
{
	struct h_node a;
	struct weft_send_line s;
	uint8_t v = 1;

	h_section("link busy keeps the frame; no link drops it (NO_LINK)");
	one_open(&a);
	h_put_fifo(&a, 0, 2, 0, &v, 1, 0);
	h_put_fifo(&a, 0, 2, 0, &v, 1, 0);
	h_start(&a, 0, 2);
	a.xmit_rc = -EAGAIN;
	CHECK(weft_core_poll(a.c, 64), "work remains while the link is busy");
	CHECK_EQ(h_db_r(&a, 0, WEFT_DB_SEND_READY), 2, "nothing consumed");
	CHECK(h_cnt(&a, WEFT_CNT_TX_BLOCKED) > 0, "TX_BLOCKED counted");
	a.xmit_rc = -ENOTCONN;
	weft_core_poll(a.c, 1);
	h_send_line(&a, 0, 0, &s);
	CHECK_EQ(s.hdr.status, WEFT_R_NO_LINK, "status NO_LINK");
	CHECK_EQ(h_drops(&a, WEFT_R_NO_LINK), 1, "NO_LINK counted");
	a.xmit_rc = 0;
	h_poll(&a, 64);
	CHECK_EQ(a.ntx, 1, "second frame sent when the link is back");
	h_fini(&a);
}

static void test_early(void)
{
	struct h_node a, b;
	struct weft_lmt l;
	uint8_t msg[600] = { 1 };
	size_t i, hdr_at = 0;

	h_section("early interrupt: the threshold interrupt fires before the header line is written");
	h_init(&a, 1, 4, 64, 1, 0);
	h_init(&b, 2, 4, 64, 1, 0);
	CHECK_EQ(h_open(&a, 0, KEY_A, 3, 3, 4), WEFT_CMD_OK, "open a");
	h_lmt_prepare(&b, 0, KEY_A, 3, 3, 4, &l);
	l.flags = WEFT_LMT_F_EARLY_INT;
	l.recv_int_threshold = 1;
	h_lmt_write(&b, 0, &l);
	CHECK_EQ(h_cmd(&b, WEFT_REG_CMD_OPEN_WINDOW, 0), WEFT_CMD_OK, "open b (early mode)");
	h_put_fifo(&a, 0, 2, 0, msg, sizeof(msg), 0);
	h_start(&a, 0, 1);
	h_poll(&a, 64);
	h_deliver(&a, &b);
	b.nwlog = 0;
	h_poll(&b, 64);
	for (i = 0; i < b.nwlog; i++)
		if (b.wlog[i].addr == b.rfifo[0])
			hdr_at = i;
	CHECK_EQ(b.nirq, 1, "one interrupt");
	CHECK(b.irq_wlog[0] <= hdr_at, "interrupt (after %zu writes) before the header write (#%zu)",
	      b.irq_wlog[0], hdr_at);
	CHECK(b.irq_wlog[0] >= 1, "after the payload");
	CHECK(memcmp(h_recv_payload(&b, 0, 0), msg, sizeof(msg)) == 0, "polling still sees the data");
	h_fini(&a);
	h_fini(&b);

	h_section("normal mode: the interrupt comes after the header line");
	pair_open(&a, &b, 0);
	h_db_w(&b, 0, WEFT_DB_RECV_THRESHOLD, 1);
	h_put_fifo(&a, 0, 2, 0, msg, sizeof(msg), 0);
	h_start(&a, 0, 1);
	h_poll(&a, 64);
	h_deliver(&a, &b);
	b.nwlog = 0;
	h_poll(&b, 64);
	CHECK_EQ(b.nirq, 1, "one interrupt");
	CHECK_EQ(b.irq_wlog[0], b.nwlog, "after every write");
	h_fini(&a);
	h_fini(&b);
}

static void test_rx_backpressure(void)
{
	struct h_node a, b;
	uint8_t v = 1;
	unsigned int i, taken = 0, refused = 0;

	h_section("receive queue: bounded, -EAGAIN backpressure, nothing lost");
	h_init(&a, 1, 4, 64, 1, 0);
	h_init(&b, 2, 4, 64, 1, 4);
	CHECK_EQ(h_open(&a, 0, KEY_A, 4, 4, 4), WEFT_CMD_OK, "open a");
	CHECK_EQ(h_open(&b, 0, KEY_A, 4, 4, 4), WEFT_CMD_OK, "open b");
	for (i = 0; i < 6; i++)
		h_put_fifo(&a, 0, 2, 0, &v, 1, 0);
	h_start(&a, 0, 6);
	h_poll(&a, 64);
	for (i = 0; i < a.ntx; i++) {
		if (weft_core_receive(b.c, a.tx[i].data, a.tx[i].len) == 0)
			taken++;
		else
			refused++;
	}
	CHECK_EQ(taken, 4, "queue length 4");
	CHECK_EQ(refused, 2, "-EAGAIN beyond it");
	CHECK(!weft_core_can_receive(b.c), "can_receive false when full");
	h_poll(&b, 64);
	CHECK(weft_core_can_receive(b.c), "room after a poll");
	for (i = 4; i < a.ntx; i++)
		CHECK_EQ(weft_core_receive(b.c, a.tx[i].data, a.tx[i].len), 0, "retry taken");
	h_poll(&b, 64);
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_RECV_COUNT), 6, "all six delivered");
	h_fini(&a);
	h_fini(&b);
}

/* weft_core_receive_lent: packets are used in place and given back once
 * processed or discarded; unaligned or full as documented. */
static void test_rx_lent(void)
{
	static struct h_pkt lend[8];
	static _Alignas(8) uint8_t odd[WEFT_WIRE_MAX_FRAME + 1];
	struct h_node a, b;
	uint8_t v[3] = { 7, 8, 9 };
	unsigned int i;

	h_section("lent receive: no copy, each packet given back once after processing");
	h_init(&a, 1, 4, 64, 1, 0);
	h_init(&b, 2, 4, 64, 1, 4);
	CHECK_EQ(h_open(&a, 0, KEY_A, 4, 4, 4), WEFT_CMD_OK, "open a");
	CHECK_EQ(h_open(&b, 0, KEY_A, 4, 4, 4), WEFT_CMD_OK, "open b");
	for (i = 0; i < 6; i++)
		h_put_fifo(&a, 0, 2, 0, &v[i % 3], 1, 0);
	h_start(&a, 0, 6);
	h_poll(&a, 64);
	CHECK_EQ(a.ntx, 6, "six packets sent");
	for (i = 0; i < 4; i++) {
		memcpy(lend[i].data, a.tx[i].data, a.tx[i].len);
		CHECK_EQ(weft_core_receive_lent(b.c, lend[i].data, a.tx[i].len), 1, "kept");
	}
	memcpy(lend[4].data, a.tx[4].data, a.tx[4].len);
	CHECK_EQ(weft_core_receive_lent(b.c, lend[4].data, a.tx[4].len), -EAGAIN,
		 "-EAGAIN when the queue (4) is full");
	CHECK_EQ(b.nreleased, 0, "nothing given back before processing");
	/* The core reads the lent bytes when it processes them. */
	lend[0].data[WEFT_WIRE_HDR_SIZE] = 0x42;
	h_poll(&b, 64);
	CHECK_EQ(b.nreleased, 4, "four given back after processing");
	for (i = 0; i < 4 && i < b.nreleased; i++)
		CHECK(b.released[i] == lend[i].data, "given back in order: %u", i);
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_RECV_COUNT), 4, "four delivered");
	CHECK_EQ(h_recv_payload(&b, 0, 0)[0], 0x42, "payload read in place, at processing");
	CHECK_EQ(h_recv_payload(&b, 0, 1)[0], 8, "second payload");

	h_section("lent receive: an unaligned packet is copied at once (0), dropped ones too");
	memcpy(odd + 1, a.tx[4].data, a.tx[4].len);
	CHECK_EQ(weft_core_receive_lent(b.c, odd + 1, a.tx[4].len), 0, "copied");
	memset(odd, 0, sizeof(odd));
	CHECK_EQ(weft_core_receive_lent(b.c, lend[4].data, 3), 0, "too short: dropped");
	CHECK_EQ(h_drops(&b, WEFT_R_BAD_HEADER), 1, "counted BAD_HEADER");
	h_poll(&b, 64);
	CHECK_EQ(b.nreleased, 4, "neither given back");
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_RECV_COUNT), 5, "the copy delivered");
	CHECK_EQ(h_recv_payload(&b, 0, 4)[0], 8, "from the copy, not the cleared buffer");

	h_section("lent receive: RECOVER and RESET give queued packets back");
	memcpy(lend[5].data, a.tx[5].data, a.tx[5].len);
	CHECK_EQ(weft_core_receive_lent(b.c, lend[5].data, a.tx[5].len), 1, "kept");
	h_reg_w(&b, WEFT_REG_RECOVER, WEFT_RECOVER_MAGIC);
	CHECK_EQ(b.nreleased, 5, "given back by RECOVER");
	CHECK(b.released[4] == lend[5].data, "the queued one");
	CHECK_EQ(h_drops(&b, WEFT_R_RESET), 1, "counted as a RESET drop");
	CHECK_EQ(weft_core_receive_lent(b.c, lend[5].data, a.tx[5].len), 1, "kept");
	CHECK_EQ(weft_core_receive_lent(b.c, lend[4].data, a.tx[4].len), 1, "kept");
	h_reg_w(&b, WEFT_REG_RESET, WEFT_RESET_MAGIC);
	CHECK_EQ(b.nreleased, 7, "both given back by RESET");
	CHECK_EQ(weft_core_receive_lent(b.c, lend[5].data, a.tx[5].len), 1, "kept");
	weft_core_free(b.c);
	b.c = NULL;
	CHECK_EQ(b.nreleased, 8, "given back by weft_core_free");
	h_fini(&a);
	h_fini(&b);
}

/* weft_core_receive_shared: the header is copied at once and decides
 * alone; the payload is placed from the lent buffer, which a peer may
 * change until it is given back. */
static void test_rx_shared(void)
{
	static struct h_pkt lend[8];
	struct weft_recv_hdr rh;
	struct weft_wire_hdr *lh;
	struct h_node a, b;
	uint8_t v[3] = { 7, 8, 9 };
	unsigned int i;

	h_section("shared receive: header copied, payload placed from the lent buffer");
	h_init(&a, 1, 4, 64, 1, 0);
	h_init(&b, 2, 4, 64, 1, 8);
	CHECK_EQ(h_open(&a, 0, KEY_A, 4, 4, 4), WEFT_CMD_OK, "open a");
	CHECK_EQ(h_open(&b, 0, KEY_A, 4, 4, 4), WEFT_CMD_OK, "open b window 0");
	CHECK_EQ(h_open(&b, 1, KEY_A, 4, 4, 4), WEFT_CMD_OK, "open b window 1");
	for (i = 0; i < 6; i++)
		h_put_fifo(&a, 0, 2, 0, &v[i % 3], 1, 0);
	h_start(&a, 0, 6);
	h_poll(&a, 64);
	CHECK_EQ(a.ntx, 6, "six packets sent");
	for (i = 0; i < 3; i++) {
		memcpy(lend[i].data, a.tx[i].data, a.tx[i].len);
		CHECK_EQ(weft_core_receive_shared(b.c, lend[i].data, a.tx[i].len), 1, "kept");
	}
	/* The peer rewrites the first frame after the core took it: its
	 * header (window, key, length, type) and its payload. */
	lh = (struct weft_wire_hdr *)lend[0].data;
	lh->dst_window = 1;
	lh->key = KEY_A + 1;
	lh->length = 1900;
	lh->type = WEFT_PKT_COMPLETION;
	lend[0].data[WEFT_WIRE_HDR_SIZE] = 0x42;
	/* The second one's header is wiped entirely. */
	memset(lend[1].data, 0xff, WEFT_WIRE_HDR_SIZE);
	h_poll(&b, 64);
	CHECK_EQ(b.nreleased, 3, "three given back after processing");
	for (i = 0; i < 3 && i < b.nreleased; i++)
		CHECK(b.released[i] == lend[i].data, "given back in order: %u", i);
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_RECV_COUNT), 3, "all three delivered to window 0");
	CHECK_EQ(h_db_r(&b, 1, WEFT_DB_RECV_COUNT), 0, "none to window 1");
	h_recv_hdr(&b, 0, 0, &rh);
	CHECK_EQ(rh.length, 1, "the length checked, not the changed one");
	CHECK_EQ(h_recv_payload(&b, 0, 0)[0], 0x42, "the payload placed as it was then");
	CHECK_EQ(h_recv_payload(&b, 0, 1)[0], 8, "second payload");
	CHECK_EQ(h_drops(&b, WEFT_R_KEY_MISMATCH) + h_drops(&b, WEFT_R_BAD_HEADER), 0,
		 "nothing dropped");

	h_section("shared receive: other packet types are copied whole at once");
	memcpy(lend[3].data, a.tx[3].data, a.tx[3].len);
	((struct weft_wire_hdr *)lend[3].data)->type = WEFT_PKT_COMPLETION;
	CHECK_EQ(weft_core_receive_shared(b.c, lend[3].data, a.tx[3].len), 0, "copied");
	h_poll(&b, 64);
	CHECK_EQ(b.nreleased, 3, "not given back: never kept");
	CHECK_EQ(h_drops(&b, WEFT_R_BAD_HEADER), 1, "a completion with a payload: BAD_HEADER");

	h_section("shared receive: unlend copies what is still lent and gives it back");
	memcpy(lend[4].data, a.tx[4].data, a.tx[4].len);
	CHECK_EQ(weft_core_receive_shared(b.c, lend[4].data, a.tx[4].len), 1, "kept");
	memcpy(lend[5].data, a.tx[5].data, a.tx[5].len);
	CHECK_EQ(weft_core_receive_shared(b.c, lend[5].data, a.tx[5].len), 1, "kept");
	weft_core_rx_unlend(b.c);
	CHECK_EQ(b.nreleased, 5, "both given back at once");
	CHECK(b.released[3] == lend[4].data && b.released[4] == lend[5].data, "in order");
	memset(lend[4].data, 0, sizeof(lend[4].data));
	memset(lend[5].data, 0, sizeof(lend[5].data));
	h_poll(&b, 64);
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_RECV_COUNT), 5, "both delivered from the copies");
	CHECK_EQ(h_recv_payload(&b, 0, 3)[0], 8, "fourth payload from the copy");
	CHECK_EQ(h_recv_payload(&b, 0, 4)[0], 9, "fifth payload from the copy");
	CHECK_EQ(b.nreleased, 5, "nothing given back twice");
	h_fini(&a);
	h_fini(&b);
}

/* ops.tx_buf: the core builds a packet in the embedder's buffer and hands
 * that buffer to xmit; on -EAGAIN it builds again in the same buffer. */
static void test_tx_buf(void)
{
	struct h_node a;
	uint8_t p1[100], p2[40];
	unsigned int i;

	h_section("embedder's transmit buffer: packets built in it, -EAGAIN retried");
	h_init(&a, 1, 4, 64, 1, 0);
	CHECK_EQ(h_open(&a, 0, KEY_A, 4, 4, 4), WEFT_CMD_OK, "open a");
	for (i = 0; i < sizeof(p1); i++)
		p1[i] = (uint8_t)(i * 3);
	memset(p2, 0xa5, sizeof(p2));
	a.own_tx = true;
	h_put_fifo(&a, 0, 2, 0, p1, sizeof(p1), 0);
	h_put_fifo(&a, 0, 2, 0, p2, sizeof(p2), 0);
	a.xmit_rc = -EAGAIN;
	h_start(&a, 0, 2);
	weft_core_poll(a.c, 1);
	CHECK_EQ(a.ntx, 0, "link busy: nothing sent");
	CHECK(a.tx_bufs >= 1, "buffer asked for");
	a.xmit_rc = 0;
	h_poll(&a, 64);
	CHECK_EQ(a.ntx, 2, "both sent");
	CHECK_EQ(a.own_xmits, 2, "both from the embedder's buffer");
	CHECK_EQ(h_txhdr(&a, 0)->length, sizeof(p1), "first length");
	CHECK(!memcmp(a.tx[0].data + WEFT_WIRE_HDR_SIZE, p1, sizeof(p1)), "first payload");
	CHECK(!memcmp(a.tx[1].data + WEFT_WIRE_HDR_SIZE, p2, sizeof(p2)), "second payload");
	CHECK_EQ(h_txhdr(&a, 1)->key, KEY_A, "header stamped");
	a.own_tx = false;
	h_put_fifo(&a, 0, 2, 0, p2, 1, 0);
	h_start(&a, 0, 1);
	h_poll(&a, 64);
	CHECK_EQ(a.ntx, 3, "sent");
	CHECK_EQ(a.own_xmits, 2, "NULL from tx_buf: the core's own buffer");
	h_fini(&a);
}

int main(void)
{
	h_begin("test_fifo: windows, send and receive FIFOs");
	test_gating();
	test_start_transmit();
	test_quantum();
	test_key_stamping();
	test_header_last();
	test_full_fifo();
	test_threshold();
	test_bcast();
	test_link();
	test_early();
	test_rx_backpressure();
	test_rx_lent();
	test_rx_shared();
	test_tx_buf();
	return h_end();
}
