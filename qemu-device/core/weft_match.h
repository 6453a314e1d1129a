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
struct weft_vcmd;
struct weft_vcmd_resp;

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
/* The resend timer of the matching channels: its deadline (0 = none)
 * and its expiry (does nothing before the deadline). */
uint64_t weft_match_deadline(const struct weft_core *c);
void weft_match_timer(struct weft_core *c);
/* One unit of matching work: each busy matcher compares up to
 * match_step entries, one rendezvous packet streams, queued packets go.
 * Returns 1 if it did work, 0 if idle, -EAGAIN when the link is busy. */
int weft_match_poll(struct weft_core *c);

/* The verbs command QUERY_HQ (weft/verbs.h, hw-spec 17.4): returns the
 * command status, the reason in *why, the counts in resp->out[0..2]. */
unsigned int weft_match_query(struct weft_core *c, const struct weft_vcmd *k,
			      struct weft_vcmd_resp *resp, unsigned int *why);

/*
 * Tag-matching SRQs of the verbs engine (weft_verbs_tm.c).  A TM SRQ
 * borrows one header queue in software-UEQ mode: its tags are PRQ entries
 * of the header store (quota max_tags), matched in list order with
 * weft_tm_match(); its unexpected messages advance the queue's unexpected
 * sequence and CAM (items 108, 109).  A lent queue refuses the MATCH
 * registers, doorbell operations and WEFT_PKT_MATCH arrivals
 * (TM_QUEUE_LENT).  Each call compares at most max_tags entries.
 */
struct weft_match_tm_tag {
	uint64_t tag, mask;
	uint64_t addr;          /* tagged buffer: one SGE */
	uint32_t len, lkey;
	uint32_t handle;
};

/* Lend a free header queue; its number, or -1 (none free). */
int weft_match_tm_open(struct weft_core *c, uint32_t max_tags);
/* Free the queue's tags and give it back. */
void weft_match_tm_close(struct weft_core *c, unsigned int qi);
/* Give back every lent queue (verbs reset and recovery). */
void weft_match_tm_close_all(struct weft_core *c);
/* Append a tag; active = it may match now.  Returns a reason. */
unsigned int weft_match_tm_add(struct weft_core *c, unsigned int qi,
			       const struct weft_match_tm_tag *t, bool active);
/* Remove the tag with this handle; false if it is not listed. */
bool weft_match_tm_del(struct weft_core *c, unsigned int qi, uint32_t handle);
/* The first active tag matching tag, taken off the list into out. */
bool weft_match_tm_find(struct weft_core *c, unsigned int qi, uint64_t tag,
			struct weft_match_tm_tag *out);
/* An unexpected message with this tag was handed to software. */
void weft_match_tm_unexpected(struct weft_core *c, unsigned int qi, uint64_t tag);
/* Unexpected messages so far (the phase count). */
uint32_t weft_match_tm_seq(const struct weft_core *c, unsigned int qi);
uint32_t weft_match_tm_count(const struct weft_core *c, unsigned int qi);
/* Item 109: may a tag added by software that had seen `seen` unexpected
 * messages match now?  True when none came since, or the CAM shows that
 * none of those that came would have matched it. */
bool weft_match_tm_current(const struct weft_core *c, unsigned int qi, uint32_t seen,
			   uint64_t tag, uint64_t mask);
/* Software caught up (item 108): every tag may match. */
void weft_match_tm_activate(struct weft_core *c, unsigned int qi);

#endif /* WEFT_MATCH_INT_H */
