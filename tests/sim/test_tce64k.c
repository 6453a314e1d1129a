/* SPDX-License-Identifier: MIT */
/*
 * Checklist item 21 (seed 1.2.8, 000 ¶162): TCE tables of 64 KiB pages,
 * with the shipped driver policy's job slot layout (docs/driver.md,
 * "Job slots"):
 *  - a registration with page_shift 16 lands in the slot's 64 KiB table,
 *    one TCE per 64 KiB page, each naming its real page;
 *  - an RDMA write from a 4 KiB-page buffer to an offset inside a 64 KiB
 *    page, crossing several 64 KiB pages, and an RDMA read back from a
 *    64 KiB-page buffer at another in-page offset are byte-exact, and no
 *    byte outside the target range changes;
 *  - a misaligned address or length with 64 KiB pages is refused with
 *    EINVAL (weft.ko's rule, docs/driver.md WEFT_IOC_REG_MR);
 *  - with no 64 KiB table in the layout (the seed's 4 x 16 MiB + 2 x
 *    4 KiB), page_shift 16 is refused with EINVAL, 16 MiB and 4 KiB
 *    tables still work; with three 64 KiB tables one 16 MiB table is left.
 */
#include <errno.h>
#include <string.h>

#include "simtest.h"
#include "weft_policy.h"

#define JOB     100u
#define P64K    (1ull << WEFT_PAGE_SHIFT_64K)
#define TGT_LEN (4 * P64K)      /* the 64 KiB-page buffer */
#define XFER    (3 * P64K - 7)  /* crosses three 64 KiB page boundaries */
#define OFF_W   (P64K - 1000)   /* in-page offset of the write */
#define OFF_R   777             /* in-page offset of the read */

static void rdma(struct weft_sim *s, struct st_node *a, struct st_node *b, enum weft_sf_type type,
		 uint64_t local_pvo, uint64_t remote_pvo, uint64_t len, uint32_t ra, uint32_t rb,
		 uint16_t kb, uint32_t tid)
{
	struct weft_rdma_req q = {
		.local_pvo = local_pvo, .remote_pvo = remote_pvo, .length = len,
		.local_rcxt = ra, .remote_rcxt = rb, .remote_rcxt_key = kb,
		.notify = WEFT_NOTIFY_BOTH, .tid = tid,
	};

	REQUIRE(weft_sim_post_rdma(&a->win, type, (uint16_t)b->win.node, (uint16_t)b->win.window,
				 &q) == 0, "post");
	weft_sim_run_idle(s, 0);
}

/* Table of a PVO inside its job slot. */
static uint32_t slot_table(uint64_t pvo)
{
	return weft_pvo_table(pvo) % WEFT_SLOT_TABLES;
}

static void transfers(void)
{
	struct weft_sim_config cfg = {
		.nr_nodes = 2, .mem_size = 64u << 20, .seed = 21,
		.faults = { .routes = 2, .delay_ns = 1000, .jitter_ns = 1000 },
	};
	struct weft_sim *s = st_sim(&cfg);
	struct st_node n[2];
	uint64_t tgt, pvo, tce, tce_base, cfg_reg;
	uint32_t ra, rb, t, i;
	uint16_t ka, kb;
	uint8_t *src, *dst, *shadow;
	long long d;
	int h, rc;

	/* Node 0: a 4 KiB-page source buffer; node 1: its own small buffer. */
	st_node_setup(s, 0, JOB, 1u << 20, 6, false, &n[0]);
	st_node_setup(s, 1, JOB, 1u << 16, 6, false, &n[1]);
	CHECK(slot_table(n[0].pvo) >= WEFT_SLOT_TABLES_16M, "source not in a 4 KiB table");

	tgt = weft_sim_alloc(s, 1, TGT_LEN, P64K);
	CHECK(tgt && !(tgt & (P64K - 1)), "64 KiB-aligned buffer");
	h = weft_sim_reg_mr(s, 1, JOB, tgt, TGT_LEN, WEFT_PAGE_SHIFT_64K, &pvo);
	REQUIRE(h > 0, "reg 64 KiB pages: %d", h);
	t = slot_table(pvo);
	CHECK(weft_slot_table_shift(t, WEFT_SLOT_TABLES_64K_DEF) == WEFT_PAGE_SHIFT_64K,
	      "PVO 0x%llx in slot table %u, not the 64 KiB table", (unsigned long long)pvo, t);
	cfg_reg = weft_sim_reg_read(s, 1, WEFT_REG_TCE_CFG(weft_pvo_table(pvo)));
	CHECK(WEFT_TCE_CFG_SHIFT(cfg_reg) == WEFT_PAGE_SHIFT_64K, "table registered with shift %u",
	      (unsigned int)WEFT_TCE_CFG_SHIFT(cfg_reg));
	CHECK((weft_pvo_offset(pvo) & (P64K - 1)) == 0, "in-page offset of an aligned buffer");
	tce_base = weft_sim_reg_read(s, 1, WEFT_REG_TCE_BASE(weft_pvo_table(pvo)));
	for (i = 0; i < TGT_LEN / P64K; i++) {
		uint64_t idx = (weft_pvo_offset(pvo) >> WEFT_PAGE_SHIFT_64K) + i;

		memcpy(&tce, weft_sim_ptr(s, 1, tce_base + idx * 8, 8), 8);
		CHECK(weft_tce_rpn(tce) == (tgt >> WEFT_PAGE_SHIFT_64K) + i &&
		      weft_tce_key(tce) == weft_pvo_tce_key(pvo),
		      "TCE %u: 0x%llx", i, (unsigned long long)tce);
	}
	t_point("item 21: page_shift 16 registers in the slot's 64 KiB table (slot table %u), "
		"one TCE per 64 KiB page with the PVO's key", t);

	/* RDMA write into the middle of a 64 KiB page, across three pages. */
	REQUIRE(weft_sim_rcxt_alloc(s, 0, 0, &ra, &ka) == 0, "rcxt");
	REQUIRE(weft_sim_rcxt_alloc(s, 1, 0, &rb, &kb) == 0, "rcxt");
	src = weft_sim_ptr(s, 0, n[0].buf, XFER);
	dst = weft_sim_ptr(s, 1, tgt, TGT_LEN);
	shadow = malloc(TGT_LEN);
	REQUIRE(src && dst && shadow, "pointers");
	st_fill(src, XFER, 0x21);
	st_fill(dst, TGT_LEN, 0x64);
	memcpy(shadow, dst, TGT_LEN);
	memcpy(shadow + OFF_W, src, XFER);
	rdma(s, &n[0], &n[1], WEFT_SF_RDMAW, n[0].pvo, pvo + OFF_W, XFER, ra, rb, kb, 1);
	d = st_diff(dst, shadow, TGT_LEN);
	CHECK(d < 0, "target differs at byte %lld", d);
	REQUIRE(st_completions(&n[1]) == 1, "no target completion");
	REQUIRE(st_completions(&n[0]) == 1, "no source completion");
	t_point("item 21: RDMA write of %llu bytes to in-page offset %llu of a 64 KiB page is "
		"byte-exact, nothing else changed", (unsigned long long)XFER,
		(unsigned long long)OFF_W);

	/* RDMA read back out of the 64 KiB-page buffer (node 1 is the source). */
	memset(src, 0, XFER);
	rdma(s, &n[0], &n[1], WEFT_SF_RDMAR, n[0].pvo, pvo + OFF_R, XFER, ra, rb, kb, 2);
	d = st_diff(src, dst + OFF_R, XFER);
	CHECK(d < 0, "read data differs at byte %lld", d);
	REQUIRE(st_completions(&n[0]) == 1, "no read completion");
	t_point("item 21: RDMA read from in-page offset %d of a 64 KiB-page buffer is byte-exact",
		OFF_R);

	/* Misaligned address or length: EINVAL; the table is unchanged. */
	rc = weft_sim_reg_mr(s, 1, JOB, tgt + 4096, P64K, WEFT_PAGE_SHIFT_64K, NULL);
	REQUIRE(rc == -EINVAL, "misaligned address: %d", rc);
	rc = weft_sim_reg_mr(s, 1, JOB, tgt, P64K + 4096, WEFT_PAGE_SHIFT_64K, NULL);
	REQUIRE(rc == -EINVAL, "misaligned length: %d", rc);
	rc = weft_sim_reg_mr(s, 1, JOB, tgt, P64K, 20, NULL);
	REQUIRE(rc == -EINVAL, "page_shift 20: %d", rc);
	t_point("item 21: 64 KiB pages with a misaligned address or length, and page_shift 20, "
		"fail with EINVAL");

	REQUIRE(weft_sim_dereg_mr(s, 1, h) == 0, "dereg");
	memcpy(&tce, weft_sim_ptr(s, 1, tce_base + (weft_pvo_offset(pvo) >> 16) * 8, 8), 8);
	CHECK(tce == 0, "TCE not cleared at deregistration");
	free(shadow);
	weft_sim_free(s);
}

static void layouts(void)
{
	struct weft_sim_config cfg = {
		.nr_nodes = 1, .mem_size = 64u << 20, .seed = 22,
		.tce_64k_tables = WEFT_SIM_NO_64K,
	};
	struct weft_sim *s = st_sim(&cfg);
	uint64_t buf, big, pvo;
	uint32_t t0, t1;
	int rc;

	REQUIRE(weft_sim_job_attach(s, 0, JOB) >= 0, "attach");
	buf = weft_sim_alloc(s, 0, P64K, P64K);
	big = weft_sim_alloc(s, 0, 16u << 20, 16u << 20);
	REQUIRE(buf && big, "alloc");
	rc = weft_sim_reg_mr(s, 0, JOB, buf, P64K, WEFT_PAGE_SHIFT_64K, &pvo);
	REQUIRE(rc == -EINVAL, "64 KiB pages with no 64 KiB table: %d", rc);
	REQUIRE(weft_sim_reg_mr(s, 0, JOB, buf, P64K, WEFT_PAGE_SHIFT_4K, &pvo) > 0, "4 KiB");
	REQUIRE(weft_sim_reg_mr(s, 0, JOB, big, 16u << 20, WEFT_PAGE_SHIFT_16M, &pvo) > 0, "16 MiB");
	CHECK(slot_table(pvo) < WEFT_SLOT_TABLES_16M, "16 MiB table %u", slot_table(pvo));
	weft_sim_free(s);

	CHECK(!weft_slot_tables(WEFT_PAGE_SHIFT_64K, 0, &t0, &t1), "64 KiB tables in the seed layout");
	CHECK(weft_slot_tables(WEFT_PAGE_SHIFT_16M, 0, &t0, &t1) && t0 == 0 &&
	      t1 == WEFT_SLOT_TABLES_16M, "seed layout 16 MiB tables [%u, %u)", t0, t1);
	CHECK(weft_slot_tables(WEFT_PAGE_SHIFT_64K, WEFT_SLOT_TABLES_64K_MAX, &t0, &t1) && t0 == 1 &&
	      t1 == WEFT_SLOT_TABLES_16M, "three 64 KiB tables [%u, %u)", t0, t1);
	CHECK(weft_slot_tables(WEFT_PAGE_SHIFT_16M, 99, &t0, &t1) && t0 == 0 && t1 == 1,
	      "one 16 MiB table left at the maximum");
	CHECK(weft_slot_tables(WEFT_PAGE_SHIFT_4K, 2, &t0, &t1) && t0 == WEFT_SLOT_TABLES_16M &&
	      t1 == WEFT_SLOT_TABLES, "4 KiB tables move");
	t_point("item 21: the seed's layout (no 64 KiB table) refuses page_shift 16 with EINVAL "
		"and keeps 4 x 16 MiB + 2 x 4 KiB; 1..3 64 KiB tables replace 16 MiB ones");
}

int main(void)
{
	transfers();
	layouts();
	return t_done();
}
