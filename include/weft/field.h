/* SPDX-License-Identifier: MIT */
/*
 * One notation for the bit fields of registers, descriptors and wire
 * words, in the kernel and in user space (after QEMU's registerfields.h
 * FIELD):
 *
 *   WEFT_FIELD(WEFT_CAPS, TASKS, 8, 8);
 *
 * declares WEFT_CAPS_TASKS_SHIFT (8), WEFT_CAPS_TASKS_LEN (8) and
 * WEFT_CAPS_TASKS_MASK (0xff00, the field in place), and the accessors
 *
 *   WEFT_FIELD_GET(WEFT_CAPS, TASKS, v)      the field's value in v
 *   WEFT_FIELD_SET(WEFT_CAPS, TASKS, v, x)   v with the field set to x
 *   WEFT_FIELD_PREP(WEFT_CAPS, TASKS, x)     x in place, other bits 0
 *
 * work on 64-bit words (a wider x is truncated to the field).  Named
 * accessors of a header (WEFT_CAPS_TASKS(v), weft_pvo_key()) are written
 * with these, so every bit position is declared once.
 */
#ifndef WEFT_FIELD_H
#define WEFT_FIELD_H

#include "weft/types.h"

/* len low bits set, 1 <= len <= 64. */
#define WEFT_FIELD_ONES(len)    (~0ull >> (64 - (len)))

#define WEFT_FIELD(reg, field, shift, len)                                     \
	enum {                                                                 \
		reg##_##field##_SHIFT = (shift),                               \
		reg##_##field##_LEN = (len),                                   \
	};                                                                     \
	enum { reg##_##field##_MASK = WEFT_FIELD_ONES(len) << (shift) }

#define WEFT_FIELD_GET(reg, field, v)                                          \
	(((uint64_t)(v) >> reg##_##field##_SHIFT) &                            \
	 WEFT_FIELD_ONES(reg##_##field##_LEN))
#define WEFT_FIELD_PREP(reg, field, x)                                         \
	(((uint64_t)(x) & WEFT_FIELD_ONES(reg##_##field##_LEN)) <<             \
	 reg##_##field##_SHIFT)
#define WEFT_FIELD_SET(reg, field, v, x)                                       \
	(((uint64_t)(v) & ~(uint64_t)reg##_##field##_MASK) |                   \
	 WEFT_FIELD_PREP(reg, field, x))

#endif /* WEFT_FIELD_H */
