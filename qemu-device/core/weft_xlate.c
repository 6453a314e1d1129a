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

void weft_xlate_table_update(struct weft_core *c, unsigned int t)
{
	struct weft_xtab *x = &c->xtab[t];
	uint64_t cfg = c->tce_cfg[t], owner = c->tce_owner[t];

	x->base = c->tce_base[t];
	x->nr = WEFT_TCE_CFG_NR(cfg);
	x->shift = WEFT_TCE_CFG_SHIFT(cfg);
	x->ok = x->base != 0 && !(x->base & 7) && x->nr != 0 &&
		x->nr <= WEFT_TCE_MAX_ENTRIES && shift_ok(x->shift);
	x->owned = (owner & WEFT_TCE_OWNER_VALID) != 0;
	x->job = (uint32_t)owner;
}

/* Steps 1 and 2: the table the PVO names is configured and owned by job. */
static unsigned int xtab_get(const struct weft_core *c, uint32_t job, uint64_t pvo,
			     const struct weft_xtab **xp)
{
	const struct weft_xtab *x = &c->xtab[weft_pvo_table(pvo)];

	*xp = x;
	if (!x->ok)
		return WEFT_R_TCE_TABLE;
	if (!x->owned || x->job != job)
		return WEFT_R_TCE_OWNER;
	return WEFT_R_OK;
}

/* Steps 3 to 5 for the page holding offset off of table x. */
static inline __attribute__((always_inline)) unsigned int
xtab_page(struct weft_core *c, const struct weft_xtab *x, uint32_t tce_key, uint64_t off,
	  uint64_t *real, uint64_t *avail)
{
	uint64_t idx = off >> x->shift, tce, page = 1ull << x->shift;

	if (idx >= x->nr)
		return WEFT_R_TCE_BOUNDS;
	if (weft_dma_read(c, x->base + idx * 8, &tce, sizeof(tce)) != 0)
		return WEFT_R_DMA_ERROR;
	if (tce == 0 || weft_tce_key(tce) != tce_key)
		return WEFT_R_TCE_KEY;
	*real = (weft_tce_rpn(tce) << x->shift) | (off & (page - 1));
	*avail = page - (off & (page - 1));
	return WEFT_R_OK;
}

/* Translate every page of [pvo, pvo + len), in order, before any byte
 * moves.  With segs, the real range of each page is stored (at most
 * max_segs of them). */
static unsigned int xlate_range(struct weft_core *c, uint32_t job, uint64_t pvo,
				uint64_t len, struct xseg *segs, unsigned int max_segs,
				unsigned int *nseg)
{
	uint64_t off = weft_pvo_offset(pvo), done = 0;
	uint32_t key = weft_pvo_tce_key(pvo);
	const struct weft_xtab *x;
	unsigned int n = 0, r;

	*nseg = 0;
	if (len == 0)
		return WEFT_R_OK;
	if (len > WEFT_PVO_OFFSET_MASK + 1 - off)
		return WEFT_R_TCE_BOUNDS;
	r = xtab_get(c, job, pvo, &x);
	if (r != WEFT_R_OK)
		return r;
	while (done < len) {
		uint64_t real, avail, take;

		r = xtab_page(c, x, key, off + done, &real, &avail);
		if (r != WEFT_R_OK)
			return r;
		take = avail < len - done ? avail : len - done;
		if (segs) {
			if (n == max_segs)
				return WEFT_R_LENGTH;
			segs[n].real = real;
			segs[n].len = take;
		}
		n++;
		done += take;
	}
	*nseg = n;
	return WEFT_R_OK;
}

unsigned int weft_xlate_check(struct weft_core *c, uint32_t job, uint64_t pvo,
			      uint64_t len)
{
	unsigned int n;

	return xlate_range(c, job, pvo, len, NULL, 0, &n);
}

unsigned int weft_xlate_check_step(struct weft_core *c, uint32_t job, uint64_t pvo,
				   uint64_t len, uint64_t *done, unsigned int max_pages)
{
	uint64_t off = weft_pvo_offset(pvo);
	uint32_t key = weft_pvo_tce_key(pvo);
	const struct weft_xtab *x;
	unsigned int n, r;

	if (*done >= len)
		return WEFT_R_OK;
	if (len > WEFT_PVO_OFFSET_MASK + 1 - off)
		return WEFT_R_TCE_BOUNDS;
	r = xtab_get(c, job, pvo, &x);
	if (r != WEFT_R_OK)
		return r;
	for (n = 0; n < max_pages && *done < len; n++) {
		uint64_t real, avail;

		r = xtab_page(c, x, key, off + *done, &real, &avail);
		if (r != WEFT_R_OK)
			return r;
		*done += avail < len - *done ? avail : len - *done;
	}
	return WEFT_R_OK;
}

unsigned int weft_xlate_read(struct weft_core *c, uint32_t job, uint64_t pvo,
			     void *buf, size_t len)
{
	struct xseg segs[XLATE_MAX_SEGS];
	unsigned int n = 0, i, r;
	uint8_t *b = buf;

	r = xlate_range(c, job, pvo, len, segs, XLATE_MAX_SEGS, &n);
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

	r = xlate_range(c, job, pvo, len, segs, XLATE_MAX_SEGS, &n);
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
