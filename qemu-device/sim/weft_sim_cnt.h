/* SPDX-License-Identifier: MIT */
/*
 * Weft sim: a counter-engine driver for the sim's nodes (weft/cnt.h,
 * docs/counters.md), through the CNT_CMD register and guest memory only,
 * as weft.ko drives it: command blocks, page lists of pinned pages,
 * status blocks.
 *
 * Functions return 0 or a WEFT_CMD_* status (positive), or a negative
 * errno value for sim-side failures.
 */
#ifndef WEFT_SIM_CNT_H
#define WEFT_SIM_CNT_H

#include "weft_sim.h"
#include "weft/cnt.h"
#include "weft/verbs.h"

/*
 * A buffer in node memory as a driver pins it: len bytes starting
 * first_off into its first page, its pages listed in a page list in node
 * memory.  With scatter, page i of the buffer is page npages - 1 - i of
 * one allocation, so that the buffer is not physically contiguous.
 */
struct wsc_buf {
	unsigned int node;
	uint64_t len;
	uint32_t first_off, npages;
	uint64_t base;              /* the allocation */
	uint64_t list;              /* guest address of the page list */
	uint64_t *pages;            /* host copy of the page list */
};

int wsc_buf_new(struct weft_sim *s, unsigned int node, uint64_t len, uint32_t first_off,
		bool scatter, struct wsc_buf *b);
void wsc_buf_free(struct weft_sim *s, struct wsc_buf *b);
/* Guest-physical address of byte off of the buffer. */
uint64_t wsc_buf_pa(const struct wsc_buf *b, uint64_t off);
/* Copy into / out of the buffer through its pages. */
void wsc_buf_write(struct weft_sim *s, const struct wsc_buf *b, uint64_t off, const void *src,
		   uint64_t n);
void wsc_buf_read(struct weft_sim *s, const struct wsc_buf *b, uint64_t off, void *dst,
		  uint64_t n);

/* Run one CNT_CMD command block. */
int wsc_cmd(struct weft_sim *s, unsigned int node, const struct weft_cnt_cmd *m,
	    struct weft_vcmd_resp *resp);
/* CREATE: object id over buffer b, status block at block (16 bytes). */
int wsc_create(struct weft_sim *s, unsigned int node, uint32_t id, uint64_t block,
	       const struct wsc_buf *b, uint8_t mode, uint8_t flags, uint8_t vector,
	       uint32_t ops, uint16_t *gen);
int wsc_destroy(struct weft_sim *s, unsigned int node, uint32_t id, uint16_t gen);
int wsc_post(struct weft_sim *s, unsigned int node, uint32_t id, uint16_t gen, uint8_t slot,
	     uint8_t dir, uint16_t peer, uint64_t off, uint64_t len, uint64_t remote_va,
	     uint32_t *seq);
/* EXPOSE buffer b at virtual address va. */
int wsc_expose(struct weft_sim *s, unsigned int node, uint32_t idx, uint64_t va,
	       const struct wsc_buf *b, uint8_t rights, uint16_t peer, uint16_t *gen);
int wsc_unexpose(struct weft_sim *s, unsigned int node, uint32_t idx, uint16_t gen);
int wsc_query(struct weft_sim *s, unsigned int node, uint32_t id, struct weft_cnt_obj_dump *d);
/* The status block at addr. */
struct weft_cnt_block wsc_block(struct weft_sim *s, unsigned int node, uint64_t addr);

#endif /* WEFT_SIM_CNT_H */
