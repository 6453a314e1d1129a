/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * The Weft driver policy, written once for weft.ko and the sim's driver:
 * rCxt allocation order, TCE placement (first fit), PVO key generation
 * with the adapter's key epoch, and the LMT of a window being opened.
 * Plain C that builds in the kernel (Kbuild) and in user space (C11).
 * docs/driver.md ("The driver policy") describes it.
 */
#ifndef WEFT_POLICY_H
#define WEFT_POLICY_H

#include "weft/types.h"
#include "weft/sram.h"

/* ---- rCxt pool: round robin (seed 1.5.17 solution 1) ------------------- */

/*
 * The free rCxts in a ring: allocation takes the head, freeing appends
 * to the tail, so a freed rCxt comes back only after the whole pool has
 * cycled.  The caller owns ids[] (nr entries).
 */
struct weft_rcxt_ring {
	u32 *ids;
	u32 nr;
	u32 head;
	u32 count;
};

void weft_ring_init(struct weft_rcxt_ring *r, u32 *ids, u32 nr);
bool weft_ring_pop(struct weft_rcxt_ring *r, u32 *id);
void weft_ring_push(struct weft_rcxt_ring *r, u32 id);

/*
 * The key of an rCxt acquired now: the adapter's recovery count
 * (seed 1.5.17 solution 3), or 0 in the "re-register on MP_FATAL" mode
 * (solution 2), where new PVO/TCE keys stop stale packets instead and
 * the adapter raises a window fatal error for them.
 */
u16 weft_rcxt_key(u64 recovery_count, bool rereg_on_fatal);

/* ---- TCE placement -------------------------------------------------------- */

/* Words of a TCE-in-use bitmap of nr entries (bit i = entry i in use). */
#define WEFT_TCE_MAP_WORDS(nr)	(((u64)(nr) + 63) / 64)

/*
 * Job slot layout (seed 1.2.8): WEFT_SLOT_TABLES tables per slot.  The
 * last WEFT_SLOT_TABLES_4K hold 4 KiB pages; of the WEFT_SLOT_TABLES_16M
 * before them, the last n64k hold 64 KiB pages and the others 16 MiB
 * pages.  n64k = 0 is the seed's preferred layout (4 x 16 MiB + 2 x 4 KiB);
 * values above WEFT_SLOT_TABLES_64K_MAX count as the maximum.
 */
#define WEFT_SLOT_TABLES_64K_MAX	(WEFT_SLOT_TABLES_16M - 1)
#define WEFT_SLOT_TABLES_64K_DEF	1

/* Page shift of table t (0..WEFT_SLOT_TABLES-1) of a slot. */
u32 weft_slot_table_shift(u32 t, u32 n64k);
/*
 * The tables of a job slot that hold pages of 2^shift bytes: [*t0, *t1).
 * False for a page shift the slot layout does not have.
 */
bool weft_slot_tables(u32 shift, u32 n64k, u32 *t0, u32 *t1);
/*
 * A TCE maps one physically contiguous page of 2^shift bytes, so a range
 * registered with pages above 4 KiB must start and end on such a page
 * boundary (the driver pins 4 KiB pages and checks that each TCE page is
 * contiguous).  4 KiB pages take any range.
 */
bool weft_mr_aligned(u32 shift, u64 addr, u64 len);

/* First run of n free entries in a table of nr entries, or -1. */
s64 weft_tce_first_fit(const u64 *used, u32 nr, u32 n);
void weft_tce_mark(u64 *used, u32 first, u32 n, bool in_use);

/* ---- PVO keys ---------------------------------------------------------------- */

/*
 * A 17-bit PVO key is a block number (high 10 bits, 1..1023) and a
 * sequence in the block (low 7 bits).  The block comes from the adapter's
 * non-volatile KEY_EPOCH: the driver takes a new epoch (KEY_EPOCH_NEXT)
 * when it starts and whenever its block is used up, so no key is handed
 * out twice before 1023 further epochs have been taken, whatever reboots
 * happen in between.  Keys are never 0.
 */
#define WEFT_KEY_SEQ_BITS	7
#define WEFT_KEY_BLOCKS		((1u << (17 - WEFT_KEY_SEQ_BITS)) - 1)

/*
 * The adapter's key epoch: read returns KEY_EPOCH, next writes
 * KEY_EPOCH_NEXT.  The generator checks that the epoch really advanced.
 */
struct weft_epoch_ops {
	u64 (*read)(void *opaque);
	void (*next)(void *opaque);
};

struct weft_keygen {
	const struct weft_epoch_ops *ops;
	void *opaque;
	u64 epoch;		/* the epoch whose block is in use */
	u32 seq;		/* keys used from the block */
	bool valid;		/* a block is in use */
};

void weft_keygen_init(struct weft_keygen *kg, const struct weft_epoch_ops *ops,
		      void *opaque);
/*
 * Take a new epoch and start its block (driver start, block used up).
 * False if the adapter did not advance its epoch.
 */
bool weft_keygen_take(struct weft_keygen *kg);
/* The next key; 0 if a new epoch was needed and could not be taken. */
u32 weft_keygen_next(struct weft_keygen *kg);
/* The key block of an epoch, 1..WEFT_KEY_BLOCKS. */
u32 weft_key_block(u64 epoch);

/* ---- LMT of a window being opened ------------------------------------------- */

struct weft_lmt_params {
	u32 window;
	u32 job;		/* window key */
	u64 send_addr, recv_addr;	/* FIFO bus addresses */
	u32 send_log2, recv_log2;
	u32 quantum;		/* packets per round-robin turn */
	u32 handler;		/* interrupt handler */
	bool bcast;
	bool early_int;
	bool pvo_fatal;		/* stale PVO on incoming data: window fatal */
};

/*
 * The whole LMT: state INVALID (Open Window makes it VALID), every
 * receive slot available, thresholds off, no rCxts queued.  pvo_fatal
 * sets WEFT_LMT_F_PVO_FATAL (the re-register on MP_FATAL mode).
 */
void weft_lmt_init(struct weft_lmt *l, const struct weft_lmt_params *p);

#endif /* WEFT_POLICY_H */
