/* gemm_avx2.c -- AVX2+FMA GEMM micro-kernels (f32 6x16, f64 6x8).
 *
 * Compiled with a per-function target attribute; gemm.c runs them only
 * after __builtin_cpu_supports("avx2") and ("fma").  12 ymm accumulators
 * (from zero; C added at the end), two B vectors and one broadcast per
 * step (contract: gemm_internal.h).  KC matches the AVX-512 tables so
 * that every ISA gives the same bits.
 */
#include "runtime/gemm/gemm_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RLX_NO_SIMD)
#include <immintrin.h>

#define TGT __attribute__((target("avx2,fma")))
#define MR 6

TGT static void kern_f32(int64_t kc, const float *ap, const float *bp,
                         int64_t lda, int64_t ldb, float *c, int64_t ldc,
                         int load)
{
  __m256 c0[MR], c1[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++)
    c0[i] = c1[i] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; p++) {
    __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      __m256 a = _mm256_broadcast_ss(ap + i);
      c0[i] = _mm256_fmadd_ps(a, b0, c0[i]);
      c1[i] = _mm256_fmadd_ps(a, b1, c1[i]);
    }
    ap += lda;
    bp += ldb;
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++) {
    if (load) {
      c0[i] = _mm256_add_ps(_mm256_loadu_ps(c + i * ldc), c0[i]);
      c1[i] = _mm256_add_ps(_mm256_loadu_ps(c + i * ldc + 8), c1[i]);
    }
    _mm256_storeu_ps(c + i * ldc, c0[i]);
    _mm256_storeu_ps(c + i * ldc + 8, c1[i]);
  }
}

TGT static void kern_f64(int64_t kc, const double *ap, const double *bp,
                         int64_t lda, int64_t ldb, double *c,
                         int64_t ldc, int load)
{
  __m256d c0[MR], c1[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++)
    c0[i] = c1[i] = _mm256_setzero_pd();
  for (int64_t p = 0; p < kc; p++) {
    __m256d b0 = _mm256_loadu_pd(bp), b1 = _mm256_loadu_pd(bp + 4);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      __m256d a = _mm256_broadcast_sd(ap + i);
      c0[i] = _mm256_fmadd_pd(a, b0, c0[i]);
      c1[i] = _mm256_fmadd_pd(a, b1, c1[i]);
    }
    ap += lda;
    bp += ldb;
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++) {
    if (load) {
      c0[i] = _mm256_add_pd(_mm256_loadu_pd(c + i * ldc), c0[i]);
      c1[i] = _mm256_add_pd(_mm256_loadu_pd(c + i * ldc + 4), c1[i]);
    }
    _mm256_storeu_pd(c + i * ldc, c0[i]);
    _mm256_storeu_pd(c + i * ldc + 4, c1[i]);
  }
}

const RlxGemmCfgF32 rlx_gemm_avx2_f32 = {
  .name = "avx2", .mr = MR, .nr = 16, .kc = 384, .nc = 512,
  .kern = kern_f32};
const RlxGemmCfgF64 rlx_gemm_avx2_f64 = {
  .name = "avx2", .mr = MR, .nr = 8, .kc = 256, .nc = 512,
  .kern = kern_f64};
#else
const RlxGemmCfgF32 rlx_gemm_avx2_f32 = {.name = "avx2", .mr = 1, .nr = 1,
                                         .kc = 1, .nc = 1};
const RlxGemmCfgF64 rlx_gemm_avx2_f64 = {.name = "avx2", .mr = 1, .nr = 1,
                                         .kc = 1, .nc = 1};
#endif
