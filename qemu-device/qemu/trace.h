/* SPDX-License-Identifier: MIT */
#include "trace/trace-hw_weft_qemu.h"
