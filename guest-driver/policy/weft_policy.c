// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The Weft driver policy, shared by weft.ko and the sim's driver
 * (qemu-device/sim/sim_drv.c).  See weft_policy.h and docs/driver.md.
 */
#ifdef __KERNEL__
#include <linux/string.h>
#else
#include <string.h>
#endif

#include "weft/hw.h"
#include "weft/xlate.h"
#include "weft_policy.h"

/* ---- rCxt pool ------------------------------------------------------------ */

void weft_ring_init(struct weft_rcxt_ring *r, u32 *ids, u32 nr)
{
	u32 i;

	for (i = 0; i < nr; i++)
		ids[i] = i;
	r->ids = ids;
	r->nr = nr;
	r->head = 0;
	r->count = nr;
}

bool weft_ring_pop(struct weft_rcxt_ring *r, u32 *id)
{
	if (!r->count)
		return false;
	*id = r->ids[r->head];
	r->head = (r->head + 1) % r->nr;
	r->count--;
	return true;
}

void weft_ring_push(struct weft_rcxt_ring *r, u32 id)
{
	if (r->count == r->nr)
		return;
	r->ids[(r->head + r->count) % r->nr] = id;
	r->count++;
}

u16 weft_rcxt_key(u64 recovery_count, bool rereg_on_fatal)
{
	return rereg_on_fatal ? 0 : (u16)recovery_count;
}

/* ---- TCE placement ---------------------------------------------------------- */

static u32 slot_first_64k(u32 n64k)
{
	if (n64k > WEFT_SLOT_TABLES_64K_MAX)
		n64k = WEFT_SLOT_TABLES_64K_MAX;
	return WEFT_SLOT_TABLES_16M - n64k;
}

u32 weft_slot_table_shift(u32 t, u32 n64k)
{
	if (t >= WEFT_SLOT_TABLES_16M)
		return WEFT_PAGE_SHIFT_4K;
	return t >= slot_first_64k(n64k) ? WEFT_PAGE_SHIFT_64K : WEFT_PAGE_SHIFT_16M;
}

bool weft_slot_tables(u32 shift, u32 n64k, u32 *t0, u32 *t1)
{
	u32 f64 = slot_first_64k(n64k);

	switch (shift) {
	case WEFT_PAGE_SHIFT_16M:
		*t0 = 0;
		*t1 = f64;
		return true;
	case WEFT_PAGE_SHIFT_64K:
		*t0 = f64;
		*t1 = WEFT_SLOT_TABLES_16M;
		return f64 < WEFT_SLOT_TABLES_16M;
	case WEFT_PAGE_SHIFT_4K:
		*t0 = WEFT_SLOT_TABLES_16M;
		*t1 = WEFT_SLOT_TABLES;
		return true;
	default:
		return false;
	}
}

bool weft_mr_aligned(u32 shift, u64 addr, u64 len)
{
	u64 mask = (1ull << shift) - 1;

	return shift == WEFT_PAGE_SHIFT_4K || !((addr | len) & mask);
}

static bool tce_used(const u64 *used, u32 i)
{
	return used[i / 64] & (1ull << (i % 64));
}

s64 weft_tce_first_fit(const u64 *used, u32 nr, u32 n)
{
	u32 i, run = 0;

	if (!n || n > nr)
		return -1;
	for (i = 0; i < nr; i++) {
		/* A full word in use skips 64 entries at once. */
		if (i % 64 == 0 && used[i / 64] == ~0ull && nr - i >= 64) {
			run = 0;
			i += 63;
			continue;
		}
		run = tce_used(used, i) ? 0 : run + 1;
		if (run == n)
			return (s64)i + 1 - n;
	}
	return -1;
}

void weft_tce_mark(u64 *used, u32 first, u32 n, bool in_use)
{
	u32 i;

	for (i = first; i < first + n; i++) {
		if (in_use)
			used[i / 64] |= 1ull << (i % 64);
		else
			used[i / 64] &= ~(1ull << (i % 64));
	}
}

/* ---- PVO keys ------------------------------------------------------------------ */

u32 weft_key_block(u64 epoch)
{
	return (u32)(epoch % WEFT_KEY_BLOCKS) + 1;
}

void weft_keygen_init(struct weft_keygen *kg, const struct weft_epoch_ops *ops,
		      void *opaque)
{
	memset(kg, 0, sizeof(*kg));
	kg->ops = ops;
	kg->opaque = opaque;
}

bool weft_keygen_take(struct weft_keygen *kg)
{
	u64 before = kg->ops->read(kg->opaque), after;

	kg->ops->next(kg->opaque);
	after = kg->ops->read(kg->opaque);
	if (after != before + 1) {
		/* Not stored by the adapter: no block is safe to use. */
		kg->valid = false;
		return false;
	}
	kg->epoch = after;
	kg->seq = 0;
	kg->valid = true;
	return true;
}

u32 weft_keygen_next(struct weft_keygen *kg)
{
	u32 key;

	if ((!kg->valid || kg->seq == 1u << WEFT_KEY_SEQ_BITS) && !weft_keygen_take(kg))
		return 0;
	key = weft_key_block(kg->epoch) << WEFT_KEY_SEQ_BITS | kg->seq;
	kg->seq++;
	return key;
}

/* ---- LMT ------------------------------------------------------------------------- */

void weft_lmt_init(struct weft_lmt *l, const struct weft_lmt_params *p)
{
	memset(l, 0, sizeof(*l));
	l->recv_fifo_real_address = p->recv_addr;
	l->window_state = WEFT_WIN_INVALID;
	l->recv_fifo_size = p->recv_log2;
	l->window_id = p->window;
	l->recv_mask = (1u << p->recv_log2) - 1;
	l->recv_fifo_avail_slots = 1u << p->recv_log2;
	l->recv_int_threshold = WEFT_THRESHOLD_OFF0;
	l->window_key = p->job;
	l->rcxt_id = WEFT_RCXT_NONE;
	l->int_vect_data = p->handler;
	l->send_fifo_real_address = p->send_addr;
	l->config_parm_bcast = p->bcast ? 1 : 0;
	l->send_fifo_size = p->send_log2;
	l->send_quanta_value = p->quantum;
	l->send_mask = (1u << p->send_log2) - 1;
	l->send_int_threshold_hi = WEFT_THRESHOLD_OFF0;
	l->rcxt_head = WEFT_RCXT_NONE;
	l->rcxt_tail = WEFT_RCXT_NONE;
	l->send_quanta_size = p->quantum;
	l->send_rcxt = WEFT_RCXT_NONE;
	l->flags = (p->early_int ? WEFT_LMT_F_EARLY_INT : 0) |
		   (p->pvo_fatal ? WEFT_LMT_F_PVO_FATAL : 0);
}
