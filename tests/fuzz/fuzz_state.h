/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the adapter state loader (weft_core_load, the device's
 * VMState; docs/qemu-device.md "Migration and snapshots").  Each input
 * patches a valid saved state (a node with a connected RC QP that has
 * RDMA writes in flight, an open window with a FIFO packet queued): a few
 * bytes flipped or set anywhere, in the headers more often, or the
 * stream cut short.  A stream the loader takes is run for a while (poll,
 * timers, receive); then the valid state must load again.  A crash or a
 * sanitizer report is a bug; so is a valid stream refused after a
 * mutated one was loaded.
 */
#ifndef WEFT_FUZZ_STATE_H
#define WEFT_FUZZ_STATE_H

#include <stdint.h>

#include "fuzz_engine.h"

struct fs;

struct fs_stats {
	uint64_t inputs, loaded, refused, violations;
	uint64_t stream_bytes;
};

struct fs *fs_new(uint64_t seed);
void fs_free(struct fs *f);
void fs_input(struct fs *f, struct fz_src *src);
const struct fs_stats *fs_stats(const struct fs *f);

#endif /* WEFT_FUZZ_STATE_H */
