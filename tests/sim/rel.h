/* SPDX-License-Identifier: MIT */
/*
 * A small retrying RDMA layer on top of the Weft sim, used by the sim
 * tests, the failover campaign and weft-sim-bench.  It is the seed's
 * LAPI role reduced to what the tests need (seed 1.5.6): one operation
 * per rCxt at a time, a virtual-clock timeout, a retry with a larger tid,
 * completions matched by rCxt and tid, stale tids ignored, and delivery
 * to the application exactly once (deduplicated by operation id, carried
 * in the user cookie).
 *
 * A channel joins an initiator window to a target window through one
 * rCxt on each side.  Operations name byte offsets into the registered
 * region of each node (rel_set_region), so PVOs are resolved when an
 * operation is (re)posted: after a reboot the new PVOs are used.
 */
#ifndef WEFT_TEST_REL_H
#define WEFT_TEST_REL_H

#include "weft_sim.h"

#define REL_MAX_CHANNELS        512u
#define REL_MAX_WINDOWS         128u

enum rel_kind { REL_WRITE, REL_READ };

struct rel_stats {
	uint64_t posted;            /* pseudo packets posted (first tries + retries) */
	uint64_t retries;           /* timeouts that reposted with a larger tid */
	uint64_t cpl_src;           /* completions at the initiator, current tid */
	uint64_t cpl_dst;           /* completions at the target (first per op) */
	uint64_t cpl_stale;         /* completions with an old tid, ignored */
	uint64_t cpl_dup;           /* target completions of an op already delivered */
	uint64_t cpl_error;         /* completions with a non-zero status */
	uint64_t delivered;         /* ops delivered to the application */
	uint64_t done;              /* ops finished at the initiator */
};

struct rel;

/* Called once per operation when its data is complete at the side that
 * receives it (the target of a write, the initiator of a read). */
typedef void (*rel_deliver_fn)(void *opaque, uint64_t op_id);

struct rel *rel_new(struct weft_sim *s, uint64_t timeout_ns, rel_deliver_fn fn, void *opaque);
void rel_free(struct rel *r);

/* Registered buffer of a node that operations address by offset. */
void rel_set_region(struct rel *r, unsigned int node, uint64_t addr, uint64_t len, uint64_t pvo);

/* A channel from window a (initiator) to window b (target): one rCxt is
 * acquired on each side.  Returns the channel id or a negative errno. */
int rel_channel(struct rel *r, struct weft_sim_window *a, struct weft_sim_window *b);
/* Node rebooted or its adapter recovered: its rCxts are gone.  For every
 * channel touching node: acquire a new rCxt on node's side (new id or new
 * key), cancel the peer's rCxt (it keeps its id and tid, so the peer drops
 * late packets of the old tids), and repost the op in flight with a
 * larger tid.  Returns 0 or the first error. */
int rel_node_reset(struct rel *r, unsigned int node);

/* Queue an operation on a channel; returns its id (>= 1). */
uint64_t rel_submit(struct rel *r, int ch, enum rel_kind kind, uint64_t local_off,
		    uint64_t remote_off, uint64_t len);
/* Pause/resume posting and retries (the campaign quiesces around events). */
void rel_pause(struct rel *r, bool paused);

/* Poll the FIFOs, handle timeouts, post.  Returns true when every
 * submitted op is done at the initiator and delivered. */
bool rel_poll(struct rel *r);
/* Run the sim with rel_poll until everything is done or the virtual
 * clock passes deadline.  Returns true when everything is done. */
bool rel_run(struct rel *r, uint64_t deadline);
/* Ops not yet finished. */
uint64_t rel_pending(const struct rel *r);
const struct rel_stats *rel_stats(const struct rel *r);

#endif /* WEFT_TEST_REL_H */
