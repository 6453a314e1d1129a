/* SPDX-License-Identifier: MIT */
/*
 * The one type shim of the hardware interface headers and of the code
 * built both in the kernel and in user space (guest-driver/policy/):
 * fixed-width types, the kernel's names for them (u16, u32, u64, s64)
 * and a static assertion, in either world.
 */
#ifndef WEFT_TYPES_H
#define WEFT_TYPES_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/build_bug.h>
#define WEFT_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t s64;
#define WEFT_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

#endif /* WEFT_TYPES_H */
