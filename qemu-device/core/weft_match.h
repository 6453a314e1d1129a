/* SPDX-License-Identifier: MIT */
/*
 * The header-matching engine inside the core (weft_match.c): what the
 * core's register decode, receive path, poll loop and reset call.
 */
#ifndef WEFT_MATCH_INT_H
#define WEFT_MATCH_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "weft_core.h"

struct weft_match;

/* Fill the defaults of the matching fields of cf; NULL or what is wrong. */
const char *weft_match_config(struct weft_core_config *cf);
struct weft_match *weft_match_new(const struct weft_core_config *cf);
void weft_match_free(struct weft_match *m);
/* Power-on state: empty queues, free store, UMB and slots, ring off. */
void weft_match_reset(struct weft_core *c);

/* BAR 0 offsets WEFT_MATCH_REG_FIRST..WEFT_MATCH_QD_END, 8-byte aligned;
 * the caller checked the access rule and traced the access. */
uint64_t weft_match_reg_read(struct weft_core *c, uint64_t reg);
void weft_match_reg_write(struct weft_core *c, uint64_t reg, uint64_t val);

/* A WEFT_PKT_MATCH packet for this node; payload holds len bytes. */
void weft_match_rx(struct weft_core *c, const struct weft_wire_hdr *wh,
		   const uint8_t *payload, size_t len);

bool weft_match_has_work(const struct weft_core *c);
/* One unit of matching work: each busy matcher compares up to
 * match_step entries, one rendezvous packet streams, queued packets go.
 * Returns 1 if it did work, 0 if idle, -EAGAIN when the link is busy. */
int weft_match_poll(struct weft_core *c);

#endif /* WEFT_MATCH_INT_H */
