/* SPDX-License-Identifier: MIT */
/*
 * The weft provider's own extensions, opened with fi_open_ops() as
 * providers' *dv extensions are: on a domain, FI_WEFT_MRC_OPS, the
 * counters of its registration cache (docs/libfabric.md "Registration
 * cache"); on an endpoint, FI_WEFT_RX_OPS, the counters of its posted
 * receives (docs/libfabric.md "Posted receives beyond the adapter"); on a
 * counter, FI_WEFT_CNTR_OPS, what the adapter and what software counted
 * (docs/libfabric.md "Counters").
 */
#ifndef FI_WEFT_H
#define FI_WEFT_H

#include <stdint.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#define FI_WEFT_MRC_OPS "weft_mr_cache"

struct fi_weft_mrc_stats {
	uint64_t hits;		/* a cached registration covered the buffer, its pages unchanged */
	uint64_t misses;	/* a buffer registered and cached */
	uint64_t evictions;	/* unused registrations dropped for room (least recently used) */
	uint64_t invalidations;	/* cached registrations whose pages had changed (freed, remapped) */
	uint64_t uncached;	/* registrations for one operation (cache off, full, or too large) */
	uint64_t entries;	/* registrations cached now */
	uint64_t bytes;		/* and the bytes they pin */
	uint32_t enabled;	/* 0: off (WEFT_FI_MR_CACHE=0, or no page frame numbers) */
};

struct fi_weft_mrc_ops {
	size_t size;
	int (*stats)(struct fid_domain *domain, struct fi_weft_mrc_stats *stats);
};

#define FI_WEFT_RX_OPS "weft_rx"

struct fi_weft_rx_stats {
	uint64_t hw_posted;	/* receives listed in the adapter when posted */
	uint64_t sw_posted;	/* receives listed in software when posted (tags all taken) */
	uint64_t sw_matched;	/* arrivals a software-listed receive took */
	uint64_t sw_compares;	/* software-listed receives compared to find them */
	uint64_t sw_now;	/* receives listed in software now */
	uint64_t ops_refused;	/* tag operations the full op ring refused (retried or held) */
	uint64_t promoted;	/* software-listed receives moved into the adapter's free tags */
};

struct fi_weft_rx_ops {
	size_t size;
	int (*stats)(struct fid_ep *ep, struct fi_weft_rx_stats *stats);
};

#define FI_WEFT_CNTR_OPS "weft_cntr"

/* Read without progressing anything: the adapter's block as it is now. */
struct fi_weft_cntr_stats {
	uint64_t hw_count;	/* the adapter's block: events counted */
	uint64_t hw_errors;	/* and events in error */
	uint64_t sw_value;	/* software's part: its counts plus set/add's offset (mod 2^64) */
	uint64_t sw_errors;	/* the same for the error count */
	uint64_t qp_binds;	/* QP counter slots bound to the adapter's counter */
	uint64_t bind_failed;	/* slot binds refused (those QPs' events counted in software) */
	int32_t create_err;	/* errno of the adapter counter's CREATE that failed, or 0 */
	uint32_t hw;		/* 1: backed by an adapter counter; 0: software only */
	/* FI_TRIGGER operations on it as the triggering counter
	 * (docs/libfabric.md "Triggered operations"): */
	uint64_t trig_hw;	/* posted behind the adapter's WAIT_CNT */
	uint64_t trig_sw;	/* kept in software (why: WEFT_FI_LOG) */
	uint64_t trig_recalled;	/* held, then taken back into software (recall, QP error) */
	uint64_t trig_held;	/* WAIT_CNTs the adapter holds now (not yet seen end) */
};

struct fi_weft_cntr_ops {
	size_t size;
	int (*stats)(struct fid_cntr *cntr, struct fi_weft_cntr_stats *stats);
};

#endif
