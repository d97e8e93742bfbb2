/* gemm_scalar.c -- portable C GEMM micro-kernels (4x8), the fallback
 * when the CPU has neither AVX-512F nor AVX2+FMA (or off x86-64).
 *
 * Uses fma()/fmaf() so that every step is one fused multiply-add, as
 * the contract in gemm_internal.h requires (a library call unless the
 * compiler targets hardware FMA).  KC matches the SIMD tables, so the
 * results are bit-identical to theirs.
 */
#include <math.h>

#include "runtime/gemm/gemm_internal.h"

#define MR 4
#define NR 8

#define SCALAR_KERNEL(NAME, T, FMA)                                       \
  static void NAME(int64_t kc, const T *ap, const T *bp, int64_t lda,    \
                   int64_t ldb, T *c, int64_t ldc, int load)              \
  {                                                                       \
    T acc[MR][NR];                                                        \
    for (int i = 0; i < MR; i++)                                          \
      for (int j = 0; j < NR; j++)                                        \
        acc[i][j] = 0;                                                    \
    for (int64_t p = 0; p < kc; p++, ap += lda, bp += ldb)                \
      for (int i = 0; i < MR; i++)                                        \
        for (int j = 0; j < NR; j++)                                      \
          acc[i][j] = FMA(ap[i], bp[j], acc[i][j]);                       \
    for (int i = 0; i < MR; i++)                                          \
      for (int j = 0; j < NR; j++)                                        \
        c[i * ldc + j] = load ? c[i * ldc + j] + acc[i][j] : acc[i][j];   \
  }

SCALAR_KERNEL(kern_f32, float, fmaf)
SCALAR_KERNEL(kern_f64, double, fma)

const RlxGemmCfgF32 rlx_gemm_scalar_f32 = {
  .name = "scalar", .mr = MR, .nr = NR, .kc = 384, .nc = 512,
  .kern = kern_f32};
const RlxGemmCfgF64 rlx_gemm_scalar_f64 = {
  .name = "scalar", .mr = MR, .nr = NR, .kc = 256, .nc = 512,
  .kern = kern_f64};
