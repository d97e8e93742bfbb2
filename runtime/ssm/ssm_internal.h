/* ssm_internal.h -- shared between ssm.c and ssm_avx512.c: the argument
 * block of the selective-scan and gated-delta-net kernels and the lane
 * width of a selective-scan channel block. */
#ifndef RLX_SSM_INTERNAL_H
#define RLX_SSM_INTERNAL_H

#include "runtime/rlxrt.h"

/* Channels per selective-scan task (one AVX-512 f32 vector). */
#define RLX_SSM_LANES 16

typedef struct {
  int64_t b, s, h, n; /* batch, steps, channels (heads), state size */
  const void *x, *delta, *a, *bm, *cm; /* selective_scan operands */
  void *y;
  char *scratch;
} rlx_ssm_args;

/* One (batch row, block of RLX_SSM_LANES channels) of the f32
 * selective scan with AVX-512F/DQ; ws: 2*n*RLX_SSM_LANES floats.
 * NULL when the runtime was built without it. */
typedef void (*rlx_ssm_block_f32_fn)(const rlx_ssm_args *p, int64_t bi,
                                     int64_t c0, float *ws);
extern const rlx_ssm_block_f32_fn rlx_ssm_avx512_block_f32;

/* One (batch row, head) task of the f32 gated delta net with AVX-512F,
 * bit-identical to the portable loops; ws: the task's scratch slice
 * (n*n + 2*n floats).  NULL when the runtime was built without it. */
typedef void (*rlx_gdn_head_f32_fn)(const rlx_ssm_args *p, int64_t task,
                                    float *ws);
extern const rlx_gdn_head_f32_fn rlx_gdn_avx512_head_f32;

#endif
