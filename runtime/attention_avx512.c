/* attention_avx512.c -- AVX-512F attention kernels (attention_internal.h):
 * the register-tiled mm of attention_kern.h for f32 and f64, and the f32
 * softmax steps on a vectorized exp.
 *
 * Compiled with a per-function target attribute, like gemm_avx512.c;
 * attention.c uses these tables only when the GEMM dispatch chose
 * avx512.  Score tiles are [key][query], so every softmax reduction runs
 * down the columns: plain vertical vector operations, no shuffles.
 *
 * exp (f32): exp16 of avx512_exp.h, about 1 ulp; the unit test checks
 * the attention results against a double reference.  f64 uses libm exp
 * (the portable steps of attention_tmpl.h).
 */
#include "runtime/attention_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RLX_NO_SIMD)
#include <immintrin.h>
#include <math.h>
#include <stddef.h>

#define TGT __attribute__((target("avx512f")))
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

/* ---- f32 ---- */
#define T float
#define SFX f32
#define VT __m512
#define VL 16
#define MT __mmask16
#define MM_NV 4
#define VMASK_FIRST(n) ((__mmask16)((1u << (n)) - 1))
#define VZERO() _mm512_setzero_ps()
#define VLOADU(p) _mm512_loadu_ps(p)
#define VMASKZ_LOAD(m, p) _mm512_maskz_loadu_ps(m, p)
#define VSTOREU(p, v) _mm512_storeu_ps(p, v)
#define VMASK_STORE(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define VSET1(x) _mm512_set1_ps(x)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#include "runtime/attention_kern.h"
#undef T
#undef SFX
#undef VT
#undef VL
#undef MT
#undef VMASK_FIRST
#undef VZERO
#undef VLOADU
#undef VMASKZ_LOAD
#undef VSTOREU
#undef VMASK_STORE
#undef VSET1
#undef VFMA

#include "runtime/avx512_exp.h"

TGT static void online_f32(float *s, int64_t nk, float *mx, float *l,
                           float *alpha)
{
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  for (int v = 0; v < ATTN_BQ; v += 16) {
    __m512 m0 = _mm512_loadu_ps(mx + v), mn = m0;
    for (int64_t j = 0; j < nk; j++)
      mn = _mm512_max_ps(mn, _mm512_loadu_ps(s + j * ATTN_BQ + v));
    __mmask16 none = _mm512_cmp_ps_mask(mn, ninf, _CMP_EQ_OQ);
    __m512 mu = _mm512_mask_blend_ps(none, mn, _mm512_setzero_ps());
    __m512 a = exp16(_mm512_sub_ps(m0, mu)), sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < nk; j++) {
      float *sj = s + j * ATTN_BQ + v;
      __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(sj), mu));
      _mm512_storeu_ps(sj, e);
      sum = _mm512_add_ps(sum, e);
    }
    __m512 lv = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(l + v), a), sum);
    _mm512_storeu_ps(l + v, lv);
    _mm512_storeu_ps(mx + v, mn);
    _mm512_storeu_ps(alpha + v, a);
  }
}

TGT static void expsub_f32(float *s, int64_t nk, const float *sub)
{
  for (int v = 0; v < ATTN_BQ; v += 16) {
    __m512 u = _mm512_loadu_ps(sub + v);
    for (int64_t j = 0; j < nk; j++) {
      float *sj = s + j * ATTN_BQ + v;
      _mm512_storeu_ps(sj, exp16(_mm512_sub_ps(_mm512_loadu_ps(sj), u)));
    }
  }
}

/* ---- f64 ---- */
#define T double
#define SFX f64
#define VT __m512d
#define VL 8
#define MT __mmask8
#define VMASK_FIRST(n) ((__mmask8)((1u << (n)) - 1))
#define VZERO() _mm512_setzero_pd()
#define VLOADU(p) _mm512_loadu_pd(p)
#define VMASKZ_LOAD(m, p) _mm512_maskz_loadu_pd(m, p)
#define VSTOREU(p, v) _mm512_storeu_pd(p, v)
#define VMASK_STORE(p, m, v) _mm512_mask_storeu_pd(p, m, v)
#define VSET1(x) _mm512_set1_pd(x)
#define VFMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#include "runtime/attention_kern.h"

const AttnIsaF32 rlx_attn_avx512_f32 = {mm_f32, online_f32, expsub_f32};
const AttnIsaF64 rlx_attn_avx512_f64 = {mm_f64, NULL, NULL};
#else
#include <stddef.h>
const AttnIsaF32 rlx_attn_avx512_f32 = {NULL, NULL, NULL};
const AttnIsaF64 rlx_attn_avx512_f64 = {NULL, NULL, NULL};
#endif
