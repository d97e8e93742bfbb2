/* ssm_internal.h -- shared between ssm.c and the per-ISA kernel files
 * (ssm_avx512.c, ssm_avx2.c, ssm_neon.c: ssm_kern.h instantiated): the
 * argument block of the selective-scan and gated-delta-net kernels, the
 * lane width of a selective-scan channel block and the kernel tables. */
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
  const struct SsmIsa *isa; /* f32 SIMD kernels (ssm.c), NULL: portable */
} rlx_ssm_args;

/* The f32 kernels of one ISA (NULL members: not compiled in).
 * scan_block: one (batch row, block of RLX_SSM_LANES channels from c0)
 *   of the selective scan; ws: 2*n*RLX_SSM_LANES floats.
 * gdn_head: one (batch row, head) task of the gated delta net,
 *   bit-identical to the portable loops; ws: the task's scratch slice
 *   (n*n + 2*n floats). */
typedef struct SsmIsa {
  void (*scan_block)(const rlx_ssm_args *p, int64_t bi, int64_t c0,
                     float *ws);
  void (*gdn_head)(const rlx_ssm_args *p, int64_t task, float *ws);
} SsmIsa;

extern const SsmIsa rlx_ssm_avx512, rlx_ssm_avx2, rlx_ssm_neon;

#endif
