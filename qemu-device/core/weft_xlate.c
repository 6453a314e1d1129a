/* SPDX-License-Identifier: MIT */
/*
 * Weft adapter model: PVO decode and TCE translation.
 *
 * PVO = key(17) | table(5) | offset(42).  The table must be configured
 * (TCE_BASE/TCE_CFG), owned by the window's job id (TCE_OWNER valid and
 * equal to LMT.window_key), the TCE index must lie inside the table and
 * the TCE's key must equal PVO.key || PVO.table.  Every page a transfer
 * touches is checked on its own.
 */
#include <string.h>

#include "weft_core_int.h"

/* Pages of one packet: payload <= 1920 bytes and pages >= 4 KiB, so a
 * packet spans at most two pages; keep room for larger copies too. */
#define XLATE_MAX_SEGS  8

struct xseg {
	uint64_t real;
	uint64_t len;
};

static bool shift_ok(uint32_t s)
{
	return s == WEFT_PAGE_SHIFT_4K || s == WEFT_PAGE_SHIFT_64K || s == WEFT_PAGE_SHIFT_16M;
}

unsigned int weft_xlate(struct weft_core *c, uint32_t job, uint64_t pvo,
			uint64_t *real, uint64_t *avail)
{
	uint32_t t = weft_pvo_table(pvo);
	uint64_t cfg = c->tce_cfg[t], owner = c->tce_owner[t];
	uint32_t nr = WEFT_TCE_CFG_NR(cfg), shift = WEFT_TCE_CFG_SHIFT(cfg);
	uint64_t off = weft_pvo_offset(pvo), idx, tce, page;

	if (c->tce_base[t] == 0 || (c->tce_base[t] & 7) || nr == 0 ||
	    nr > WEFT_TCE_MAX_ENTRIES || !shift_ok(shift))
		return WEFT_R_TCE_TABLE;
	if (!(owner & WEFT_TCE_OWNER_VALID) || (uint32_t)owner != job)
		return WEFT_R_TCE_OWNER;
	idx = off >> shift;
	if (idx >= nr)
		return WEFT_R_TCE_BOUNDS;
	if (weft_dma_read(c, c->tce_base[t] + idx * 8, &tce, sizeof(tce)) != 0)
		return WEFT_R_DMA_ERROR;
	if (tce == 0 || weft_tce_key(tce) != weft_pvo_tce_key(pvo))
		return WEFT_R_TCE_KEY;
	page = 1ull << shift;
	*real = (weft_tce_rpn(tce) << shift) | (off & (page - 1));
	*avail = page - (off & (page - 1));
	return WEFT_R_OK;
}

/* The PVO of byte n of the region that starts at pvo.  Callers have
 * checked that offset + n stays inside the 42-bit virtual space. */
static uint64_t pvo_at(uint64_t pvo, uint64_t n)
{
	return (pvo & ~WEFT_PVO_OFFSET_MASK) | (weft_pvo_offset(pvo) + n);
}

unsigned int weft_xlate_check(struct weft_core *c, uint32_t job, uint64_t pvo,
			      uint64_t len)
{
	uint64_t done = 0;

	if (len == 0)
		return WEFT_R_OK;
	if (len > WEFT_PVO_OFFSET_MASK + 1 - weft_pvo_offset(pvo))
		return WEFT_R_TCE_BOUNDS;
	while (done < len) {
		uint64_t real, avail;
		unsigned int r = weft_xlate(c, job, pvo_at(pvo, done), &real, &avail);

		if (r != WEFT_R_OK)
			return r;
		done += avail < len - done ? avail : len - done;
	}
	return WEFT_R_OK;
}

static unsigned int xlate_segs(struct weft_core *c, uint32_t job, uint64_t pvo,
			       size_t len, struct xseg *segs, unsigned int *nseg)
{
	uint64_t done = 0;
	unsigned int n = 0;

	if (len > WEFT_PVO_OFFSET_MASK + 1 - weft_pvo_offset(pvo))
		return WEFT_R_TCE_BOUNDS;
	while (done < len) {
		uint64_t real, avail, take;
		unsigned int r = weft_xlate(c, job, pvo_at(pvo, done), &real, &avail);

		if (r != WEFT_R_OK)
			return r;
		if (n == XLATE_MAX_SEGS)
			return WEFT_R_LENGTH;
		take = avail < len - done ? avail : len - done;
		segs[n].real = real;
		segs[n].len = take;
		n++;
		done += take;
	}
	*nseg = n;
	return WEFT_R_OK;
}

unsigned int weft_xlate_read(struct weft_core *c, uint32_t job, uint64_t pvo,
			     void *buf, size_t len)
{
	struct xseg segs[XLATE_MAX_SEGS];
	unsigned int n = 0, i, r;
	uint8_t *b = buf;

	r = xlate_segs(c, job, pvo, len, segs, &n);
	if (r != WEFT_R_OK)
		return r;
	for (i = 0; i < n; i++) {
		if (weft_dma_read(c, segs[i].real, b, segs[i].len) != 0)
			return WEFT_R_DMA_ERROR;
		b += segs[i].len;
	}
	return WEFT_R_OK;
}

unsigned int weft_xlate_write(struct weft_core *c, uint32_t job, uint64_t pvo,
			      const void *buf, size_t len, uint32_t *outstanding)
{
	struct xseg segs[XLATE_MAX_SEGS];
	unsigned int n = 0, i, r;
	const uint8_t *b = buf;
	int rc = 0;

	r = xlate_segs(c, job, pvo, len, segs, &n);
	if (r != WEFT_R_OK)
		return r;
	for (i = 0; i < n; i++) {
		if (outstanding)
			(*outstanding)++;
		rc = weft_dma_write(c, segs[i].real, b, segs[i].len);
		if (outstanding)
			(*outstanding)--;
		if (rc != 0)
			return WEFT_R_DMA_ERROR;
		b += segs[i].len;
	}
	return WEFT_R_OK;
}
