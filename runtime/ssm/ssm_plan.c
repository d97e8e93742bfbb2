/* ssm_plan.c -- scratch sizes of the fused sequence-block kernels
 * (ssm.c); linked into the compiler too, which reserves them in the
 * workspace.  selective_scan: per (batch row, channel block) task, the
 * block's transposed decay rates and its state, n * RLX_SSM_LANES
 * elements each.  gated_delta_net: per (batch row, head) task, the
 * n x n state and two n-vectors. */
#include "runtime/ssm/ssm_internal.h"

int64_t rlx_selective_scan_scratch_bytes(int64_t b, int64_t h, int64_t n,
                                         int64_t elem_size)
{
  int64_t blocks = (h + RLX_SSM_LANES - 1) / RLX_SSM_LANES;
  return b * blocks * 2 * n * RLX_SSM_LANES * elem_size;
}

int64_t rlx_gated_delta_net_scratch_bytes(int64_t b, int64_t heads,
                                          int64_t n, int64_t elem_size)
{
  return b * heads * (n * n + 2 * n) * elem_size;
}
