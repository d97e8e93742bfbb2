/* moe_internal.h -- what moe.c and moe_plan.c share: the dequant panel
 * width and the scratch layout's alignment. */
#ifndef RLX_MOE_INTERNAL_H
#define RLX_MOE_INTERNAL_H

#include "runtime/rlxrt.h"

/* Columns of w dequantized at a time by rlx_dequant_matmul_*. */
#define RLX_DQ_PANEL 256

static inline int64_t align64(int64_t b) { return (b + 63) & ~(int64_t)63; }

#endif
