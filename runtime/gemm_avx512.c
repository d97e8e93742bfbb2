/* gemm_avx512.c -- AVX-512F GEMM micro-kernels (f32 14x32, f64 14x16).
 *
 * Compiled with a per-function target attribute, so the file builds with
 * default flags and the code only runs after gemm.c has checked
 * __builtin_cpu_supports("avx512f").  Each kernel keeps the whole tile in
 * 28 zmm accumulators, loads two vectors of B and broadcasts one A
 * element per row per step (contract: gemm_internal.h).
 */
#include "runtime/gemm_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define TGT __attribute__((target("avx512f")))
#define MR 14
#ifndef PF_C
#define PF_C _MM_HINT_T0
#endif

TGT static void kern_f32(int64_t kc, const float *ap, const float *bp,
                         float *c, int64_t ldc, int load)
{
  __m512 c0[MR], c1[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; i++) {
    _mm_prefetch((const char *)(c + i * ldc), PF_C);
    _mm_prefetch((const char *)(c + i * ldc + 16), PF_C);
    c0[i] = c1[i] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < kc; p++) {
    __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16);
    _mm_prefetch((const char *)(bp + 256), _MM_HINT_T0);
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
      __m512 a = _mm512_set1_ps(ap[i]);
      c0[i] = _mm512_fmadd_ps(a, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(a, b1, c1[i]);
    }
    ap += MR;
    bp += 32;
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; i++) {
    if (load) {
      c0[i] = _mm512_add_ps(_mm512_loadu_ps(c + i * ldc), c0[i]);
      c1[i] = _mm512_add_ps(_mm512_loadu_ps(c + i * ldc + 16), c1[i]);
    }
    _mm512_storeu_ps(c + i * ldc, c0[i]);
    _mm512_storeu_ps(c + i * ldc + 16, c1[i]);
  }
}

TGT static void kern_f64(int64_t kc, const double *ap, const double *bp,
                         double *c, int64_t ldc, int load)
{
  __m512d c0[MR], c1[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; i++) {
    _mm_prefetch((const char *)(c + i * ldc), PF_C);
    _mm_prefetch((const char *)(c + i * ldc + 8), PF_C);
    c0[i] = c1[i] = _mm512_setzero_pd();
  }
  for (int64_t p = 0; p < kc; p++) {
    __m512d b0 = _mm512_load_pd(bp), b1 = _mm512_load_pd(bp + 8);
    _mm_prefetch((const char *)(bp + 128), _MM_HINT_T0);
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
      __m512d a = _mm512_set1_pd(ap[i]);
      c0[i] = _mm512_fmadd_pd(a, b0, c0[i]);
      c1[i] = _mm512_fmadd_pd(a, b1, c1[i]);
    }
    ap += MR;
    bp += 16;
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; i++) {
    if (load) {
      c0[i] = _mm512_add_pd(_mm512_loadu_pd(c + i * ldc), c0[i]);
      c1[i] = _mm512_add_pd(_mm512_loadu_pd(c + i * ldc + 8), c1[i]);
    }
    _mm512_storeu_pd(c + i * ldc, c0[i]);
    _mm512_storeu_pd(c + i * ldc + 8, c1[i]);
  }
}

const RlxGemmCfgF32 rlx_gemm_avx512_f32 = {"avx512", MR, 32, 384, 768,
                                           kern_f32};
const RlxGemmCfgF64 rlx_gemm_avx512_f64 = {"avx512", MR, 16, 256, 512,
                                           kern_f64};
#else
const RlxGemmCfgF32 rlx_gemm_avx512_f32 = {"avx512", 1, 1, 1, 1, 0};
const RlxGemmCfgF64 rlx_gemm_avx512_f64 = {"avx512", 1, 1, 1, 1, 0};
#endif
