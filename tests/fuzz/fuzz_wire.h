/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the libfabric provider's wire decoders
 * (fi-provider/wire.h, docs/libfabric.md "Wire messages"): valid messages
 * of every kind (eager, rendezvous in both forms, FIN, every note, the
 * connect's and the accept's private data) round-tripped through encode
 * and decode; the same with their fields set to hostile values, bits
 * flipped, cut short or grown; and random bytes.  Every input is decoded
 * from a heap copy of exactly its length (ASan sees any read beyond it).
 * Invariants: a refusal is a decoder's named reason; an accepted message
 * lies within its bytes (an eager payload is the bytes after the TMH, a
 * rendezvous header exactly the RVH and the 4 bytes of data when flagged),
 * its source id is 1 .. 1024, its rendezvous length at most 2^30; and it
 * encodes back to the very bytes it was decoded from.
 */
#ifndef WEFT_FUZZ_WIRE_H
#define WEFT_FUZZ_WIRE_H

#include <stdint.h>

#include "fuzz_src.h"
#include "wire.h"

struct fw_stats {
	uint64_t inputs, valid, mutated, random, cm;
	uint64_t accepted, refused[WFI_WIRE_NREASONS];
	uint64_t violations;		/* broken invariants (each also on stderr) */
};

void fw_input(struct fw_stats *st, struct fz_src *src);

#endif /* WEFT_FUZZ_WIRE_H */
