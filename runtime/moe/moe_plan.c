/* moe_plan.c -- scratch sizes of the routines of moe.c (also linked
 * into the compiler, which reserves the scratch in the workspace). */
#include "runtime/moe/moe_internal.h"

int64_t rlx_grouped_matmul_scratch_bytes(int64_t t, int64_t k, int64_t n,
                                         int64_t e, int64_t elem_size)
{
  return align64((e + 1) * 8) + align64(t * 8) + align64(t * k * elem_size) +
         align64(t * n * elem_size);
}

int64_t rlx_dequant_matmul_scratch_bytes(int64_t k, int64_t n,
                                         int64_t elem_size)
{
  return align64(k * (n < RLX_DQ_PANEL ? n : RLX_DQ_PANEL) * elem_size);
}
