/* SPDX-License-Identifier: MIT */
/*
 * Guest misuse of every BAR, DMA outside guest RAM, corrupted SRAM and a
 * seeded storm of random MMIO and packets: each is logged as a guest
 * error or counted drop, and the core keeps running.  Also checks that
 * every valid register access is traced with its name.
 */
#include <string.h>

#include "harness.h"
#include "weft/names.h"

#define JOB 0x99u

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

#define EXPECT_GE(n, before, what) \
	CHECK((n).guest_errors > (before), "%s not logged as a guest error", what)

static void test_regs(void)
{
	struct h_node a;
	unsigned int g;
	uint64_t v;

	h_section("BAR 0 misuse: sizes, alignment, unknown offsets, RO writes, WO reads, bad values");
	h_init(&a, 1, 4, 64, 2, 0);
	g = a.guest_errors;
	v = weft_core_reg_read(a.c, WEFT_REG_ID, 2);
	CHECK_EQ(v, 0, "2-byte read returns 0");
	EXPECT_GE(a, g, "2-byte read");
	g = a.guest_errors;
	weft_core_reg_write(a.c, WEFT_REG_INT_CONFIG, 1, 1);
	EXPECT_GE(a, g, "1-byte write");
	g = a.guest_errors;
	weft_core_reg_read(a.c, 0x3, 4);
	EXPECT_GE(a, g, "unaligned read");
	g = a.guest_errors;
	CHECK_EQ(weft_core_reg_read(a.c, 0x1f8, 8), 0, "unknown offset reads 0");
	EXPECT_GE(a, g, "unknown offset read");
	g = a.guest_errors;
	weft_core_reg_write(a.c, 0xf000, 1, 8);
	EXPECT_GE(a, g, "unknown offset write");
	g = a.guest_errors;
	weft_core_reg_write(a.c, WEFT_REG_ID, 1, 8);
	EXPECT_GE(a, g, "write to RO ID");
	CHECK_EQ(h_reg_r(&a, WEFT_REG_ID), WEFT_ID_MAGIC | ((uint64_t)WEFT_HW_VERSION << 32), "ID unchanged");
	g = a.guest_errors;
	CHECK_EQ(weft_core_reg_read(a.c, WEFT_REG_RESET, 8), 0, "WO read returns 0");
	EXPECT_GE(a, g, "read of WO RESET");
	g = a.guest_errors;
	weft_core_reg_write(a.c, WEFT_REG_CMD_OPEN_WINDOW + 4, 0, 4);
	EXPECT_GE(a, g, "4-byte write to the high half of a command");
	g = a.guest_errors;
	weft_core_reg_write(a.c, WEFT_REG_TCE_BASE_OFF + 0x18, 5, 8);
	EXPECT_GE(a, g, "reserved TCE slot");
	g = a.guest_errors;
	weft_core_reg_write(a.c, WEFT_REG_CNT(WEFT_CNT_TX_PACKETS), 5, 8);
	EXPECT_GE(a, g, "counter write");
	CHECK_EQ(h_cnt(&a, WEFT_CNT_TX_PACKETS), 0, "counter unchanged");
	g = a.guest_errors;
	weft_core_reg_read(a.c, WEFT_REG_CNT(WEFT_CNT__COUNT), 8);
	EXPECT_GE(a, g, "read past the last counter");
	g = a.guest_errors;
	h_reg_w(&a, WEFT_REG_INT_CONFIG, 9);
	EXPECT_GE(a, g, "INT_CONFIG with more handlers than vectors");
	CHECK_EQ(h_reg_r(&a, WEFT_REG_INT_CONFIG), 2, "INT_CONFIG unchanged");
	g = a.guest_errors;
	h_reg_w(&a, WEFT_REG_EVQ_BASE, 0x1001);
	EXPECT_GE(a, g, "unaligned EVQ_BASE");
	g = a.guest_errors;
	h_reg_w(&a, WEFT_REG_EVQ_SIZE, 40);
	EXPECT_GE(a, g, "EVQ_SIZE out of range");
	g = a.guest_errors;
	h_reg_w(&a, WEFT_REG_EVQ_CONS, 5);
	EXPECT_GE(a, g, "EVQ_CONS beyond EVQ_PROD");
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_ACQUIRE_RCXT, WEFT_ACQ(64, 0, 0)), WEFT_CMD_EINVAL, "rCxt out of range");
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_ACQUIRE_RCXT, WEFT_ACQ(1, 9, 0)), WEFT_CMD_EINVAL, "window out of range");
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_CANCEL_RCXT, 1ull << 40), WEFT_CMD_EINVAL, "cancel out of range");
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_CLOSE_WINDOW, ~0ull), WEFT_CMD_EINVAL, "close out of range");
	CHECK_EQ(h_cnt(&a, WEFT_CNT_GUEST_ERRORS), a.guest_errors, "GUEST_ERRORS counter matches the traces");
	t_diag("%u guest errors logged, core alive (STATUS 0x%llx)", a.guest_errors,
	       (unsigned long long)h_reg_r(&a, WEFT_REG_STATUS));
	h_fini(&a);
}

static void test_names(void)
{
	struct h_node a;
	uint64_t off;
	unsigned int t, i;

	h_section("every valid register access is traced with its name");
	h_init(&a, 1, 4, 64, 2, 0);
	a.reg_traces = a.named_reg_traces = 0;
	for (off = 0; off <= WEFT_REG_CMD_CANCEL_RCXT; off += 8)
		if (weft_reg_name(off))
			weft_core_reg_read(a.c, off, 8);
	for (t = 0; t < WEFT_NR_TCE_TABLES; t++) {
		weft_core_reg_read(a.c, WEFT_REG_TCE_BASE(t), 8);
		weft_core_reg_read(a.c, WEFT_REG_TCE_CFG(t), 8);
		weft_core_reg_read(a.c, WEFT_REG_TCE_OWNER(t), 8);
	}
	for (i = 0; i < WEFT_CNT__COUNT; i++)
		weft_core_reg_read(a.c, WEFT_REG_CNT(i), 8);
	h_db_r(&a, 0, WEFT_DB_STATE);
	h_db_w(&a, 0, WEFT_DB_START_TRANSMIT, 0);
	weft_core_sram_read(a.c, 0, 8);
	weft_core_sram_read(a.c, WEFT_SRAM_RCXT_OFF(3), 8);
	CHECK(a.reg_traces > 100, "traced %u accesses", a.reg_traces);
	CHECK_EQ(a.named_reg_traces, a.reg_traces, "all named");
	h_fini(&a);
}

static void test_sram_db(void)
{
	struct h_node a;
	unsigned int g;

	h_section("BAR 2 and BAR 4 misuse");
	h_init(&a, 1, 4, 64, 2, 0);
	CHECK_EQ(weft_core_sram_bar_size(a.c), 0x20000, "SRAM BAR size (64 rCxts)");
	/* 128 window pages (512 KiB), then 512 UAR pages: next power of two. */
	CHECK_EQ(weft_core_db_bar_size(a.c), 0x400000, "doorbell BAR size (window + UAR pages)");
	g = a.guest_errors;
	CHECK_EQ(weft_core_sram_read(a.c, WEFT_SRAM_RCXT_OFF(64), 8), 0, "beyond the rCxt pool");
	EXPECT_GE(a, g, "SRAM read beyond the pool");
	g = a.guest_errors;
	weft_core_sram_write(a.c, 0x1ffff8, 1, 8);
	EXPECT_GE(a, g, "SRAM write beyond the BAR");
	g = a.guest_errors;
	weft_core_sram_write(a.c, ~7ull, 1, 8);
	CHECK_EQ(weft_core_sram_read(a.c, ~7ull, 8), 0, "offset that wraps around");
	EXPECT_GE(a, g, "SRAM write at an offset that wraps around");
	g = a.guest_errors;
	weft_core_db_write(a.c, ~7ull, 1, 8);
	weft_core_reg_write(a.c, ~7ull, 1, 8);
	CHECK_EQ(weft_core_reg_read(a.c, ~7ull, 8), 0, "register offset that wraps around");
	EXPECT_GE(a, g, "doorbell/register write at a wrapping offset");
	g = a.guest_errors;
	weft_core_sram_write(a.c, 4, 1, 8);
	EXPECT_GE(a, g, "unaligned SRAM write");
	g = a.guest_errors;
	weft_core_sram_read(a.c, 0, 16);
	EXPECT_GE(a, g, "16-byte SRAM read");
	g = a.guest_errors;
	h_db_w(&a, 4, WEFT_DB_START_TRANSMIT, 1);
	EXPECT_GE(a, g, "doorbell beyond the last window");
	g = a.guest_errors;
	h_db_w(&a, 0, 0x800, 1);
	EXPECT_GE(a, g, "unknown doorbell offset");
	g = a.guest_errors;
	h_db_w(&a, 0, WEFT_DB_STATE, 1);
	EXPECT_GE(a, g, "write to RO doorbell register");
	g = a.guest_errors;
	CHECK_EQ(h_db_r(&a, 0, WEFT_DB_RETURN_SLOTS), 0, "WO doorbell reads 0");
	EXPECT_GE(a, g, "read of WO doorbell register");
	g = a.guest_errors;
	weft_core_db_write(a.c, 2, 1, 2);
	EXPECT_GE(a, g, "2-byte doorbell write");
	g = a.guest_errors;
	weft_core_db_write(a.c, WEFT_DB_START_TRANSMIT + 4, 1, 4);
	EXPECT_GE(a, g, "high-half doorbell write");
	h_fini(&a);
}

static void test_dma(void)
{
	struct h_node a, b;
	struct weft_lmt l;
	uint8_t v = 3;
	unsigned int g;

	h_section("DMA outside guest RAM: send FIFO -> window fatal; receive FIFO -> drop; EVQ -> overflow");
	h_init(&a, 1, 4, 64, 1, 0);
	h_init(&b, 2, 4, 64, 1, 0);
	h_lmt_prepare(&a, 0, JOB, 3, 3, 1, &l);
	l.send_fifo_real_address = 0x80000000ull;
	h_lmt_write(&a, 0, &l);
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_OPEN_WINDOW, 0), WEFT_CMD_OK, "open (address is only aligned)");
	g = a.guest_errors;
	h_start(&a, 0, 1);
	h_poll(&a, 64);
	EXPECT_GE(a, g, "send FIFO outside RAM");
	CHECK_EQ(h_db_r(&a, 0, WEFT_DB_STATE), WEFT_WIN_FATAL, "window fatal");
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_CLOSE_WINDOW, 0), WEFT_CMD_OK, "close");
	CHECK_EQ(h_open(&a, 0, JOB, 3, 3, 1), WEFT_CMD_OK, "reopen with good FIFOs");

	h_lmt_prepare(&b, 0, JOB, 3, 3, 1, &l);
	l.recv_fifo_real_address = 0x80000000ull;
	h_lmt_write(&b, 0, &l);
	CHECK_EQ(h_cmd(&b, WEFT_REG_CMD_OPEN_WINDOW, 0), WEFT_CMD_OK, "open b");
	h_reg_w(&b, WEFT_REG_EVQ_BASE, 0x90000000ull);
	h_reg_w(&b, WEFT_REG_EVQ_SIZE, 4);
	h_db_w(&b, 0, WEFT_DB_RECV_THRESHOLD, 1);
	h_put_fifo(&a, 0, 2, 0, &v, 1, 0);
	h_start(&a, 0, 1);
	g = b.guest_errors;
	h_run2(&a, &b);
	EXPECT_GE(b, g, "receive FIFO outside RAM");
	CHECK_EQ(h_drops(&b, WEFT_R_DMA_ERROR), 1, "DMA_ERROR drop");
	CHECK_EQ(h_db_r(&b, 0, WEFT_DB_RECV_COUNT), 0, "nothing delivered");
	h_fini(&a);
	h_fini(&b);
}

static void test_sram_corruption(void)
{
	struct h_node a, b;
	struct weft_lmt l;
	uint8_t v = 1;

	h_section("driver corrupts an open window's LMT through the SRAM aperture");
	h_init(&a, 1, 4, 64, 1, 0);
	h_init(&b, 2, 4, 64, 1, 0);
	CHECK_EQ(h_open(&a, 0, JOB, 3, 3, 1), WEFT_CMD_OK, "open a");
	CHECK_EQ(h_open(&b, 0, JOB, 3, 3, 1), WEFT_CMD_OK, "open b");
	h_lmt_read(&b, 0, &l);
	l.recv_mask = 0xffffffffu;
	l.rcxt_count = 5;
	l.rcxt_head = 1000;
	h_lmt_write(&b, 0, &l);
	h_put_fifo(&a, 0, 2, 0, &v, 1, 0);
	h_start(&a, 0, 1);
	h_run2(&a, &b);
	CHECK_EQ(h_drops(&b, WEFT_R_WINDOW_INVALID), 1, "packet to an inconsistent LMT dropped");
	l.recv_mask = 7;
	h_lmt_write(&b, 0, &l);
	h_start(&b, 0, 0);
	weft_core_sram_write(b.c, WEFT_SRAM_LMT_OFF(0) + 0x58, 0, 8); /* keep ready 0 */
	h_poll(&b, 64);
	h_lmt_read(&b, 0, &l);
	CHECK(l.rcxt_count <= 5, "queue count bounded");
	h_fini(&a);
	h_fini(&b);
}

static void test_storm(void)
{
	struct h_node a, b;
	unsigned int i;
	uint8_t pkt[WEFT_WIRE_MAX_FRAME];
	struct weft_wire_hdr *h = (struct weft_wire_hdr *)pkt;

	h_section("seeded storm: 20000 random MMIO writes and packets, core stays alive");
	h_init(&a, 1, 8, 64, 4, 8);
	h_init(&b, 2, 8, 64, 4, 8);
	h_evq_setup(&a);
	for (i = 0; i < 4; i++) {
		h_open(&a, i, JOB, 2, 2, 1 + i);
		h_open(&b, i, JOB, 2, 2, 1);
		h_acquire(&a, i, i, 0);
	}
	h_tce_table(&a, 0, 16, 12, JOB);
	for (i = 0; i < 20000; i++) {
		uint64_t r = rnd(), val = rnd();
		unsigned int size = (r & 1) ? 8 : 4;

		switch (r >> 61) {
		case 0: /* registers, sparing RESET/RECOVER now and then */
			weft_core_reg_write(a.c, (r >> 8) % 0xc00 & ~3ull, val, size);
			break;
		case 1:
			weft_core_sram_write(a.c, (r >> 8) % 0x12000 & ~7ull, val, 8);
			break;
		case 2:
			weft_core_db_write(a.c, (r >> 8) % 0x9000 & ~7ull, val % 9, 8);
			break;
		case 3:
			weft_core_reg_read(a.c, (r >> 8) % 0x1000 & ~3ull, size);
			weft_core_db_read(a.c, (r >> 8) % 0x9000 & ~7ull, size);
			break;
		default: {
			size_t len = WEFT_WIRE_HDR_SIZE + (r >> 8) % 256, k;

			for (k = 0; k < len; k++)
				pkt[k] = (uint8_t)rnd();
			h->version = WEFT_WIRE_VERSION;
			h->dst_node = 1;
			h->dst_window = (uint16_t)(val % 5);
			h->key = (val & 16) ? JOB : (uint32_t)val;
			h->length = (uint32_t)(len - WEFT_WIRE_HDR_SIZE);
			h->type = (uint8_t)(1 + val % 6);
			h->rcxt = (uint32_t)(val >> 40) % 80;
			h->rcxt_key = 0;
			weft_core_receive(a.c, pkt, len);
			break;
		}
		}
		/* Random send frames posted by the user. */
		if ((r & 0x1f) == 7) {
			uint64_t f = h_frame_addr(&a, (unsigned int)(val % 4), (uint32_t)(val >> 8));
			unsigned int k;

			if (f >= H_MEM_BASE && f < H_MEM_BASE + H_MEM_SIZE - WEFT_FRAME_SIZE)
			{
				struct weft_send_line *sl = h_ptr(&a, f);

				for (k = 0; k < WEFT_FRAME_HDR_SIZE; k++)
					((uint8_t *)sl)[k] = (uint8_t)rnd();
				sl->hdr.type = (uint8_t)(1 + val % 4);
				sl->hdr.dest_node = 2;
				sl->hdr.length %= 2048;
				sl->rdma.length %= 20000;
				sl->rdma.local_rcxt %= 8;
				sl->rdma.tid %= 64;
				sl->rdma.local_pvo = weft_pvo_make(7, 0, val % 70000);
				h_db_w(&a, (unsigned int)(val % 4), WEFT_DB_START_TRANSMIT, 1);
			}
		}
		weft_core_poll(a.c, 4);
		h_deliver(&a, &b);
		weft_core_poll(b.c, 4);
		b.ntx = 0;
	}
	h_poll(&a, 64);
	CHECK(h_reg_r(&a, WEFT_REG_ID) == (WEFT_ID_MAGIC | ((uint64_t)WEFT_HW_VERSION << 32)),
	      "core answers after the storm");
	t_diag("storm: %llu guest errors, %llu rx packets, %llu tx packets",
	       (unsigned long long)h_cnt(&a, WEFT_CNT_GUEST_ERRORS),
	       (unsigned long long)h_cnt(&a, WEFT_CNT_RX_PACKETS),
	       (unsigned long long)h_cnt(&a, WEFT_CNT_TX_PACKETS));
	h_fini(&a);
	h_fini(&b);
}

int main(void)
{
	h_begin("test_misuse: guest misuse of every BAR, bad DMA, corrupted SRAM, random storm");
	test_regs();
	test_names();
	test_sram_db();
	test_dma();
	test_sram_corruption();
	test_storm();
	return h_end();
}
