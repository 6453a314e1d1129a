/* SPDX-License-Identifier: MIT */
/* Fixed-width types for the Weft interface headers, in user space and kernel. */
#ifndef WEFT_TYPES_H
#define WEFT_TYPES_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/build_bug.h>
#define WEFT_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#include <stdint.h>
#include <stddef.h>
#include <assert.h>
#define WEFT_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

#endif /* WEFT_TYPES_H */
