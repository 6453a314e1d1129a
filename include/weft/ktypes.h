/* SPDX-License-Identifier: MIT */
/*
 * The kernel's type names (u16, u32, u64, s64) in user space, for code
 * that builds in both: the driver policy (guest-driver/policy/).
 */
#ifndef WEFT_KTYPES_H
#define WEFT_KTYPES_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stdint.h>
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t s64;
#endif

#endif /* WEFT_KTYPES_H */
