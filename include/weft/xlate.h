/* SPDX-License-Identifier: MIT */
/*
 * Translation formats: PVO (Protocol Virtual Offset) and TCE (Translation
 * Control Entry), and the node-global TCE tables and job slots.
 *
 *   PVO = key[63:47] (17 bits) | table[46:42] (5 bits) | offset[41:0]
 *   TCE = key[63:42] (22 bits) | real page number[41:0]
 *   TCE.key must equal PVO.key << 5 | PVO.table.
 *
 * The offset is the byte offset in the table's virtual space:
 * tce_index = offset >> page_shift, byte = offset & (page - 1).
 * The real address is real_page << page_shift | byte.  A TCE of 0 is
 * invalid (key 0 is never handed out).  TCE tables are arrays of 64-bit
 * little-endian TCEs in guest memory; their base, size, page size and
 * owning job id are written through the TCE_* registers (weft/hw.h).
 */
#ifndef WEFT_XLATE_H
#define WEFT_XLATE_H

#include "weft/types.h"

#define WEFT_PVO_KEY_BITS       17
#define WEFT_PVO_TABLE_BITS     5
#define WEFT_PVO_OFFSET_BITS    42
#define WEFT_PVO_KEY_SHIFT      47
#define WEFT_PVO_TABLE_SHIFT    42
#define WEFT_PVO_OFFSET_MASK    ((1ull << WEFT_PVO_OFFSET_BITS) - 1)
#define WEFT_PVO_KEY_MASK       ((1u << WEFT_PVO_KEY_BITS) - 1)
#define WEFT_PVO_TABLE_MASK     ((1u << WEFT_PVO_TABLE_BITS) - 1)

#define WEFT_TCE_KEY_BITS       22
#define WEFT_TCE_KEY_SHIFT      42
#define WEFT_TCE_RPN_MASK       ((1ull << 42) - 1)
#define WEFT_TCE_KEY_MASK       ((1u << WEFT_TCE_KEY_BITS) - 1)

#define WEFT_PAGE_SHIFT_4K      12
#define WEFT_PAGE_SHIFT_64K     16
#define WEFT_PAGE_SHIFT_16M     24

/* Seed's preferred layout: 5 job slots of 4 x 16 MiB + 2 x 4 KiB tables
 * (the driver policy may give some 16 MiB tables to 64 KiB pages). */
#define WEFT_NR_JOB_SLOTS       5
#define WEFT_SLOT_TABLES_16M    4
#define WEFT_SLOT_TABLES_4K     2
#define WEFT_SLOT_TABLES        (WEFT_SLOT_TABLES_16M + WEFT_SLOT_TABLES_4K)

static inline uint64_t weft_pvo_make(uint32_t key, uint32_t table, uint64_t off)
{
	return ((uint64_t)(key & WEFT_PVO_KEY_MASK) << WEFT_PVO_KEY_SHIFT) |
	       ((uint64_t)(table & WEFT_PVO_TABLE_MASK) << WEFT_PVO_TABLE_SHIFT) |
	       (off & WEFT_PVO_OFFSET_MASK);
}

static inline uint32_t weft_pvo_key(uint64_t pvo)
{
	return (uint32_t)(pvo >> WEFT_PVO_KEY_SHIFT) & WEFT_PVO_KEY_MASK;
}

static inline uint32_t weft_pvo_table(uint64_t pvo)
{
	return (uint32_t)(pvo >> WEFT_PVO_TABLE_SHIFT) & WEFT_PVO_TABLE_MASK;
}

static inline uint64_t weft_pvo_offset(uint64_t pvo)
{
	return pvo & WEFT_PVO_OFFSET_MASK;
}

/* The 22-bit TCE key a PVO must match: PVO.key || PVO.table. */
static inline uint32_t weft_pvo_tce_key(uint64_t pvo)
{
	return (weft_pvo_key(pvo) << WEFT_PVO_TABLE_BITS) | weft_pvo_table(pvo);
}

static inline uint64_t weft_tce_make(uint32_t key22, uint64_t rpn)
{
	return ((uint64_t)(key22 & WEFT_TCE_KEY_MASK) << WEFT_TCE_KEY_SHIFT) |
	       (rpn & WEFT_TCE_RPN_MASK);
}

static inline uint32_t weft_tce_key(uint64_t tce)
{
	return (uint32_t)(tce >> WEFT_TCE_KEY_SHIFT) & WEFT_TCE_KEY_MASK;
}

static inline uint64_t weft_tce_rpn(uint64_t tce)
{
	return tce & WEFT_TCE_RPN_MASK;
}

#endif /* WEFT_XLATE_H */
