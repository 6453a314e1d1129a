/* SPDX-License-Identifier: MIT */
/*
 * Weft fabric model: routing by node id, broadcast and multicast, R routes
 * per node pair each with its own delay (so multi-route traffic arrives out
 * of order), seeded drop/delay, port down/up, capture and replay.
 *
 * Transport-free: weft-switch (sockets) and the in-process sim both use it.
 * Time is given by the caller in nanoseconds.  Memory is bounded: the
 * fabric holds at most max_queued frames; weft_fabric_submit() returns
 * -EAGAIN beyond that (backpressure), it never grows without bound.
 * A frame is never duplicated (replay is an explicit, separate action).
 */
#ifndef WEFT_FABRIC_H
#define WEFT_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/wire.h"

struct weft_fabric;

struct weft_fabric_faults {
	uint32_t drop_ppm;      /* drop probability, parts per million */
	uint32_t routes;        /* routes per node pair, >= 1 */
	uint64_t delay_ns;      /* base one-way delay */
	uint64_t jitter_ns;     /* extra random delay 0..jitter per frame */
	uint64_t route_skew_ns; /* route r adds r * route_skew_ns */
};

/* Why a frame was not delivered. */
#define WEFT_FABRIC_DROP_LIST(X) \
	X(RANDOM)       /* fault injection */          \
	X(PORT_DOWN)    /* source or destination port down */ \
	X(NO_ROUTE)     /* unknown destination node */ \
	X(BAD_FRAME)    /* wrong length or header */   \
	X(NOT_REGISTERED) /* source port has no node id */ \
	X(ABSENT)       /* destination detached and the hold budget is used up */ \
	X(OVERFLOW)     /* one broadcast has more copies than the fabric holds */ \
	X(STALLED)      /* destination at its quota and not reading for stall_ns */ \
	X(EXPIRED)      /* held longer than the expiry for an absent node */ \
	X(RULE)         /* matched a drop rule (weft_fabric_add_rule) */

enum weft_fabric_drop {
#define WEFT_FABRIC_DROP_ENUM(n) WEFT_FABRIC_DROP_##n,
	WEFT_FABRIC_DROP_LIST(WEFT_FABRIC_DROP_ENUM)
#undef WEFT_FABRIC_DROP_ENUM
	WEFT_FABRIC_DROP__COUNT
};

struct weft_fabric_port_stats {
	uint64_t rx_frames, rx_bytes;   /* from the node into the fabric */
	uint64_t tx_frames, tx_bytes;   /* from the fabric to the node */
	uint64_t drops[WEFT_FABRIC_DROP__COUNT];
	uint64_t replayed;              /* replayed frames delivered to it */
};

/* Deliver one frame to node dst_node.  Return 0 when taken, -EAGAIN to
 * have the fabric keep it and retry on a later weft_fabric_poll().  A
 * sink that keeps the frame's buffer instead of copying it holds it
 * (weft_fabric_frame_hold(), below). */
typedef int (*weft_fabric_deliver_fn)(void *opaque, uint16_t dst_node,
				      const void *frame, size_t len);

struct weft_fabric *weft_fabric_new(uint64_t seed, size_t max_queued,
				    size_t capture_frames);
void weft_fabric_free(struct weft_fabric *f);

void weft_fabric_set_faults(struct weft_fabric *f, const struct weft_fabric_faults *ft);
void weft_fabric_get_faults(const struct weft_fabric *f, struct weft_fabric_faults *ft);

/* Ports are node ids.  attach marks a node present (up); detach removes it
 * (frames queued for it stay queued until it attaches again).
 * A node is a valid unicast destination once it has attached at least
 * once (broadcasts and multicasts go only to attached nodes); frames
 * that become due while it is detached are held, within the hold budget
 * (weft_fabric_set_hold_limit(), default max_queued / 2, shared by all
 * detached nodes); beyond it they are dropped as ABSENT.
 * attach returns -EBUSY if the node is attached, -EINVAL if not unicast.
 * A port that is down drops what it sends and what is due for it
 * (PORT_DOWN), including frames held or refused earlier. */
int weft_fabric_attach(struct weft_fabric *f, uint16_t node);
void weft_fabric_detach(struct weft_fabric *f, uint16_t node);
int weft_fabric_set_port_up(struct weft_fabric *f, uint16_t node, bool up);
bool weft_fabric_port_is_up(const struct weft_fabric *f, uint16_t node);
bool weft_fabric_port_attached(const struct weft_fabric *f, uint16_t node);
void weft_fabric_set_hold_limit(struct weft_fabric *f, size_t frames);
/* Per-destination budget (default max_queued, i.e. none): while an attached,
 * up node has this many frames queued for it (in flight or refused by its
 * sink), weft_fabric_submit() returns -EAGAIN for frames addressed to it
 * (also broadcasts and multicasts that include it), so one slow receiver
 * holds back only its senders instead of filling the whole fabric. */
void weft_fabric_set_port_limit(struct weft_fabric *f, size_t frames);
/* A destination stalls when it has port_limit frames queued and has taken
 * none for stall_ns: frames for it are then dropped as STALLED instead of
 * holding its senders back, until it takes a frame again.  0 (the default)
 * never stalls a port: senders wait as long as it takes. */
void weft_fabric_set_stall_ns(struct weft_fabric *f, uint64_t ns);
/* Held frames and detached ports expire: a frame held for an absent node
 * longer than ns is dropped as EXPIRED, and the port of a node that has
 * been detached for ns with nothing queued (and is up) is forgotten with
 * its counters (the totals keep them), so memory follows the attached
 * ports, not every node id ever used.  0 (the default) never expires. */
void weft_fabric_set_expiry_ns(struct weft_fabric *f, uint64_t ns);
/* Frames parked for node: held while detached or refused with -EAGAIN. */
size_t weft_fabric_port_held(const struct weft_fabric *f, uint16_t node);
/* Node ids that have a port record (attached once, or set up/down); writes
 * at most max of them, returns how many there are. */
size_t weft_fabric_ports(const struct weft_fabric *f, uint16_t *out, size_t max);

/* Multicast: group g (< WEFT_NR_MCAST_GROUPS) is addressed as
 * WEFT_NODE_MCAST_BASE + g.  Delivered to every member except the sender.
 * join: -EEXIST if a member; leave: -ENOENT if not; -EINVAL for bad ids.
 * mcast_members writes at most max member ids, returns the member count. */
int weft_fabric_mcast_join(struct weft_fabric *f, unsigned int group, uint16_t node);
int weft_fabric_mcast_leave(struct weft_fabric *f, unsigned int group, uint16_t node);
size_t weft_fabric_mcast_members(const struct weft_fabric *f, unsigned int group,
				 uint16_t *out, size_t max);

/* Drop rules: the next `left` copies that match a rule are dropped (RULE,
 * counted on the destination port), whatever the other faults say; then
 * the rule stays listed, spent, with what it dropped.  A rule matches a
 * copy by its source node and window (the header's src_window), its
 * destination node (the node this copy goes to, also for a broadcast or
 * multicast) and the packet type; WEFT_FABRIC_ANY (type 0) matches any.
 * So one node's FIFO packets from one window to one node can be dropped
 * while everything else still flows.  At most WEFT_FABRIC_MAX_RULES;
 * the first matching rule with frames left takes the copy. */
#define WEFT_FABRIC_ANY         0xffffu
#define WEFT_FABRIC_MAX_RULES   8u
struct weft_fabric_rule {
	uint16_t src_node;      /* WEFT_FABRIC_ANY: any */
	uint16_t src_window;    /* WEFT_FABRIC_ANY: any */
	uint16_t dst_node;      /* WEFT_FABRIC_ANY: any */
	uint8_t type;           /* enum weft_pkt_type, 0: any */
	uint64_t left;          /* copies still to drop, >= 1 when added */
	uint64_t dropped;       /* copies dropped so far (output) */
};
/* Returns the rule's index, -EINVAL (left 0, or a node id that is neither
 * unicast nor WEFT_FABRIC_ANY) or -ENOSPC. */
int weft_fabric_add_rule(struct weft_fabric *f, const struct weft_fabric_rule *r);
/* Copies the rules (spent ones too) into out (at most max); returns how
 * many there are. */
size_t weft_fabric_rules(const struct weft_fabric *f, struct weft_fabric_rule *out,
			 size_t max);
void weft_fabric_clear_rules(struct weft_fabric *f);

/* Submit a frame (weft_wire_hdr + payload) from src_node at time now.
 * Returns 0 (queued, or dropped and counted) or -EAGAIN (full, or a
 * destination over its port limit: retry).
 * A frame is BAD_FRAME unless: HDR_SIZE <= len <= MAX_FRAME, version is
 * WEFT_WIRE_VERSION, hdr.length == len - HDR_SIZE, hdr.src_node ==
 * src_node and the type is a data type (not 0, below WEFT_PKT_HELLO).
 * Routes: with R routes, a source's frames take routes round-robin; route
 * r is due at now + delay_ns + r * route_skew_ns + random(0..jitter_ns). */
int weft_fabric_submit(struct weft_fabric *f, uint16_t src_node,
		       const void *frame, size_t len, uint64_t now);

/* Zero-copy submit: a buffer of WEFT_WIRE_MAX_FRAME bytes, 8-byte
 * aligned, from the fabric's cache (NULL when out of memory), that the
 * caller fills and hands to weft_fabric_submit_frame(): on 0 the fabric
 * owns it (it becomes the frame's shared buffer, or is given back), on
 * -EAGAIN it stays the caller's.  weft_fabric_frame_release() gives back
 * a buffer from weft_fabric_frame_alloc() that was not submitted. */
void *weft_fabric_frame_alloc(struct weft_fabric *f);
int weft_fabric_submit_frame(struct weft_fabric *f, uint16_t src_node,
			     void *frame, size_t len, uint64_t now);

/* The frame a deliver callback is given lives in a fabric buffer that
 * the frame's other copies (and the capture ring) share; its bytes never
 * change, and a sink that keeps it must not change them either.  A sink that wants to send it later without copying it takes a
 * reference with weft_fabric_frame_hold(frame) (the pointer it was
 * given) and gives it back with weft_fabric_frame_release(), before
 * weft_fabric_free().  The WEFT_WIRE_LEN_PREFIX bytes right before such
 * a frame hold its length, little-endian (the stream's length prefix,
 * include/weft/wire.h), so that a stream transport writes prefix and
 * frame as one piece. */
void weft_fabric_frame_hold(const void *frame);
void weft_fabric_frame_release(struct weft_fabric *f, const void *frame);

/* Deliver every frame due at or before now.  Returns frames delivered.
 * Frames refused with -EAGAIN are parked in order for their destination
 * and retried first on every later poll. */
size_t weft_fabric_poll(struct weft_fabric *f, uint64_t now,
			weft_fabric_deliver_fn fn, void *opaque);

/* Time of the next due frame in flight, or UINT64_MAX if none.  Parked
 * frames (held or refused) are not counted: poll again when the sink can
 * take more or a node attaches.  With a stall time or an expiry set, the
 * time a congested port stalls or something expires counts too. */
uint64_t weft_fabric_next_due(const struct weft_fabric *f);
/* Frames in the fabric: in flight plus parked.  <= max_queued. */
size_t weft_fabric_queued(const struct weft_fabric *f);
size_t weft_fabric_parked(const struct weft_fabric *f);

/* Observer of every frame that enters the fabric: each valid submitted
 * frame (also those then dropped by faults) and each replayed frame, whose
 * copy given here has WEFT_WF_REPLAYED set.  For captures (pcap). */
typedef void (*weft_fabric_tap_fn)(void *opaque, uint16_t src_node,
				   const void *frame, size_t len, bool replayed);
void weft_fabric_set_tap(struct weft_fabric *f, weft_fabric_tap_fn fn, void *opaque);

/* Capture ring: remember the last capture_frames submitted frames.
 * Replay re-injects up to n captured frames (oldest first, optionally only
 * those from before mark) at time now, flagged WEFT_WF_REPLAYED.
 * The mark is the number of frames captured so far; before_mark 0 means
 * no limit.  The flag is set only in the copy given to the tap: the
 * destination gets the original bytes (trickle traffic looks genuine) and
 * its port stats count it in .replayed.  Replayed frames are routed with
 * the current faults; replay stops early when the fabric is full.
 * Returns the number of captured frames re-injected. */
uint64_t weft_fabric_capture_mark(const struct weft_fabric *f);
size_t weft_fabric_replay(struct weft_fabric *f, uint64_t before_mark,
			  size_t n, uint64_t now);

const struct weft_fabric_port_stats *weft_fabric_port_stats(const struct weft_fabric *f,
							   uint16_t node);
/* Sum over all ports, plus drops that have no port (unknown source). */
const struct weft_fabric_port_stats *weft_fabric_total_stats(const struct weft_fabric *f);
const char *weft_fabric_drop_name(unsigned int d);

#endif /* WEFT_FABRIC_H */
