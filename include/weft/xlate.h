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
#include "weft/field.h"

/* PVO: key 63:47, table 46:42, offset 41:0.  TCE: key 63:42, RPN 41:0. */
WEFT_FIELD(WEFT_PVO, OFFSET, 0, 42);
WEFT_FIELD(WEFT_PVO, TABLE, 42, 5);
WEFT_FIELD(WEFT_PVO, KEY, 47, 17);
WEFT_FIELD(WEFT_TCE, RPN, 0, 42);
WEFT_FIELD(WEFT_TCE, KEY, 42, 22);

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
	return WEFT_FIELD_PREP(WEFT_PVO, KEY, key) | WEFT_FIELD_PREP(WEFT_PVO, TABLE, table) |
	       WEFT_FIELD_PREP(WEFT_PVO, OFFSET, off);
}

static inline uint32_t weft_pvo_key(uint64_t pvo)
{
	return (uint32_t)WEFT_FIELD_GET(WEFT_PVO, KEY, pvo);
}

static inline uint32_t weft_pvo_table(uint64_t pvo)
{
	return (uint32_t)WEFT_FIELD_GET(WEFT_PVO, TABLE, pvo);
}

static inline uint64_t weft_pvo_offset(uint64_t pvo)
{
	return WEFT_FIELD_GET(WEFT_PVO, OFFSET, pvo);
}

/* The 22-bit TCE key a PVO must match: PVO.key || PVO.table. */
static inline uint32_t weft_pvo_tce_key(uint64_t pvo)
{
	return (weft_pvo_key(pvo) << WEFT_PVO_TABLE_LEN) | weft_pvo_table(pvo);
}

static inline uint64_t weft_tce_make(uint32_t key22, uint64_t rpn)
{
	return WEFT_FIELD_PREP(WEFT_TCE, KEY, key22) | WEFT_FIELD_PREP(WEFT_TCE, RPN, rpn);
}

static inline uint32_t weft_tce_key(uint64_t tce)
{
	return (uint32_t)WEFT_FIELD_GET(WEFT_TCE, KEY, tce);
}

static inline uint64_t weft_tce_rpn(uint64_t tce)
{
	return WEFT_FIELD_GET(WEFT_TCE, RPN, tce);
}

#endif /* WEFT_XLATE_H */
