/* SPDX-License-Identifier: MIT */
/*
 * The weft provider's own extension (docs/libfabric.md "Registration
 * cache"), opened with fi_open_ops(&domain->fid, FI_WEFT_MRC_OPS, 0, &ops,
 * NULL), as providers' *dv extensions are: the counters of the domain's
 * registration cache.
 */
#ifndef FI_WEFT_H
#define FI_WEFT_H

#include <stdint.h>
#include <rdma/fi_domain.h>

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

#endif
