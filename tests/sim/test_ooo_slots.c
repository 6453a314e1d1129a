/* SPDX-License-Identifier: MIT */
/*
 * Checklist item 15 (seed 1.2.2, 000 ¶59): receive entries can become
 * valid out of slot order when several receive tasks work at once, and
 * the ULP polls per slot.  The adapter model overlaps up to rx_overlap
 * receive tasks (core config, docs/hw-spec.md 5.2); the sim enables it
 * with its rx_overlap option.  A burst of FIFO packets of different sizes
 * goes from node 0 to node 1, and every adapter write into node 1's
 * receive FIFO is watched (the sim's DMA hook):
 *  - with 4 overlapping tasks some slot becomes valid while an earlier
 *    slot, already counted in the LMT tail pointer (recv_current_cnt), is
 *    not: the entries are completed out of order;
 *  - at such a moment a per-slot poller (the sim's layer 3, as libweft)
 *    takes nothing: it waits for the next slot, never a later valid one;
 *  - every entry is still written header last (its payload lines before
 *    its header line), and once the burst is in, polling returns every
 *    entry in slot order with its sequence number and exact payload;
 *  - with rx_overlap 0 (the default, as in the QEMU device) the same burst
 *    becomes valid strictly in slot order.
 */
#include <string.h>

#include "simtest.h"

#define BURST   29u
#define MAXLEN  1900u

struct watch {
	struct weft_sim *s;
	struct st_node *rx;
	uint8_t payload_seen[BURST];    /* payload line written, per slot */
	unsigned int header_last_bad;   /* header before payload */
	unsigned int ooo;               /* moments with a later slot valid first */
	unsigned int ooo_counted;       /* ... whose earlier slot the LMT counted */
	unsigned int poll_took;         /* per-slot poller took an entry then */
	uint8_t snap[BURST * WEFT_FRAME_SIZE];
};

static uint32_t len_of(unsigned int i)
{
	return (i * 397u) % MAXLEN + (i % 3 ? 0 : 1);
}

static bool slot_valid(const uint8_t *fifo, unsigned int slot)
{
	struct weft_recv_hdr h;

	memcpy(&h, fifo + (uint64_t)slot * WEFT_FRAME_SIZE, sizeof(h));
	return h.flags & WEFT_RF_VALID;
}

static uint64_t recv_count(struct watch *wt)
{
	return weft_core_sram_read(weft_sim_core(wt->s, 1),
				   WEFT_SRAM_LMT_OFF(wt->rx->win.window) +
				   offsetof(struct weft_lmt, recv_current_cnt), 8);
}

/* State of the FIFO after every earlier write: a valid slot after an
 * invalid one is an out-of-order completion. */
static void inspect(struct watch *wt)
{
	const uint8_t *fifo = wt->rx->win.recv_fifo;
	unsigned int i, j;

	for (i = 0; i < BURST; i++) {
		if (slot_valid(fifo, i))
			continue;
		for (j = i + 1; j < BURST && !slot_valid(fifo, j); j++)
			;
		if (j == BURST)
			return;
		wt->ooo++;
		if (recv_count(wt) > i)
			wt->ooo_counted++;
		/* The ULP at this moment, on a copy of the FIFO. */
		if (i == 0) {
			struct weft_sim_window copy = wt->rx->win;
			struct weft_recv_hdr h;

			memcpy(wt->snap, fifo, sizeof(wt->snap));
			copy.recv_fifo = wt->snap;
			if (weft_sim_poll_recv(&copy, &h, NULL, 0) != 0)
				wt->poll_took++;
		}
		return;
	}
}

static void hook(void *opaque, unsigned int node, uint64_t addr, size_t len, bool is_write)
{
	struct watch *wt = opaque;
	uint64_t base = wt->rx->win.recv_addr, off, slot;

	(void)len;
	if (node != 1 || !is_write || addr < base || addr >= base + BURST * WEFT_FRAME_SIZE)
		return;
	inspect(wt);
	off = addr - base;
	slot = off / WEFT_FRAME_SIZE;
	if (off % WEFT_FRAME_SIZE == 0) {
		if (len_of((unsigned int)slot) && !wt->payload_seen[slot])
			wt->header_last_bad++;
	} else {
		wt->payload_seen[slot] = 1;
	}
}

static void run(uint32_t overlap, struct watch *wt)
{
	struct weft_sim_config cfg = {
		.nr_nodes = 2, .mem_size = 16u << 20, .seed = 15, .rx_overlap = overlap,
	};
	struct weft_sim *s = st_sim(&cfg);
	struct st_node n[2];
	uint8_t buf[MAXLEN + 1], got[WEFT_MAX_PAYLOAD];
	struct weft_recv_hdr h;
	unsigned int i, posted = 0;

	memset(wt, 0, sizeof(*wt));
	wt->s = s;
	wt->rx = &n[1];
	st_node_setup(s, 0, 15, 4096, 6, false, &n[0]);
	st_node_setup(s, 1, 15, 4096, 6, false, &n[1]);
	weft_sim_set_dma_hook(s, hook, wt);
	/* The whole burst is posted before the adapters run, so node 1
	 * receives it back to back. */
	while (posted < BURST) {
		st_fill(buf, sizeof(buf), posted);
		if (weft_sim_post_fifo(&n[0].win, 1, (uint16_t)n[1].win.window, buf,
				       len_of(posted)) != 0)
			break;
		posted++;
	}
	CHECK(posted == BURST, "posted %u of %u", posted, BURST);
	weft_sim_run_idle(s, 0);
	inspect(wt);
	weft_sim_set_dma_hook(s, NULL, NULL);
	CHECK(recv_count(wt) == BURST, "recv_current_cnt %llu",
	      (unsigned long long)recv_count(wt));
	CHECK(wt->header_last_bad == 0, "%u header lines before their payload",
	      wt->header_last_bad);
	for (i = 0; i < BURST; i++) {
		memset(got, 0, sizeof(got));
		REQUIRE(weft_sim_poll_recv(&n[1].win, &h, got, sizeof(got)) == 1,
			"entry %u missing", i);
		st_fill(buf, sizeof(buf), i);
		CHECK(h.type == WEFT_RF_FIFO && h.seq == i && h.length == len_of(i) &&
		      !memcmp(got, buf, len_of(i)),
		      "slot %u: type %u seq %u length %u", i, h.type, h.seq, h.length);
	}
	REQUIRE(weft_sim_poll_recv(&n[1].win, &h, NULL, 0) == 0, "extra entry");
	weft_sim_free(s);
}

int main(void)
{
	struct watch *wt = calloc(1, sizeof(*wt));

	REQUIRE(wt, "alloc");
	run(WEFT_NR_RX_TASKS, wt);
	t_point("item 15: with overlapping receive tasks every entry is written header last, "
		"and all %u are polled in slot order with their sequence numbers and exact "
		"payloads", BURST);
	REQUIRE(wt->ooo > 0, "no entry became valid out of slot order");
	CHECK(wt->ooo_counted == wt->ooo, "%u of %u out-of-order moments had the earlier slot "
	      "not yet counted", wt->ooo - wt->ooo_counted, wt->ooo);
	CHECK(wt->poll_took == 0, "the per-slot poller took a later entry %u times",
	      wt->poll_took);
	t_point("item 15: with %u overlapping receive tasks, %u times a later slot was valid "
		"before an earlier one the tail pointer already counted; the per-slot poller "
		"waited each time", WEFT_NR_RX_TASKS, wt->ooo);

	run(0, wt);
	CHECK(wt->ooo == 0, "%u out-of-order moments with one receive task at a time", wt->ooo);
	t_point("item 15: with rx_overlap 0 (the QEMU device) the same burst becomes valid in "
		"slot order, header last, byte-exact");
	free(wt);
	return t_done();
}
