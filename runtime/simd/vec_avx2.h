/* vec_avx2.h -- the vector layer (vec.h) over 256-bit AVX2 + FMA
 * registers; masked lanes go through vmaskmov. */
#include "runtime/simd/vec_undef.h"
#include <immintrin.h>
#include <math.h>

#ifndef RLX_VEC_AVX2_ONCE
#define RLX_VEC_AVX2_ONCE
/* VFRAC and VLDEXP (vec.h). */
__attribute__((target("avx2,fma"))) static inline __m256
rlx_avx2_frac_ps(__m256 x)
{
  __m256 n = _mm256_floor_ps(x), f = _mm256_sub_ps(x, n);
  __m256 up = _mm256_cmp_ps(_mm256_add_ps(f, n), x, _CMP_GT_OQ);
  return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(f),
                                              _mm256_castps_si256(up)));
}
__attribute__((target("avx2,fma"))) static inline __m256
rlx_avx2_ldexp_ps(__m256 p, __m256 n)
{
  __m256i i = _mm256_cvtps_epi32(n), h = _mm256_srai_epi32(i, 1);
  __m256 ph = _mm256_castsi256_ps(
      _mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(h, 23)));
  __m256i e = _mm256_add_epi32(_mm256_sub_epi32(i, h), _mm256_set1_epi32(127));
  return _mm256_mul_ps(ph, _mm256_castsi256_ps(_mm256_slli_epi32(e, 23)));
}
#endif

#undef TGT
#define TGT __attribute__((target("avx2,fma")))
#define MT __m256i
#if VEC_F64
#define VT __m256d
#define VL 4
#define VZERO() _mm256_setzero_pd()
#define VSET1(x) _mm256_set1_pd(x)
#define VLOADU(p) _mm256_loadu_pd(p)
#define VSTOREU(p, v) _mm256_storeu_pd(p, v)
#define VMASK_FIRST(n)                                                    \
  _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3))
#define VMASKZ_LOAD(m, p) _mm256_maskload_pd(p, m)
#define VMASK_STORE(p, m, v) _mm256_maskstore_pd(p, m, v)
#define VFMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#define VFNMA(a, b, c) _mm256_fnmadd_pd(a, b, c)
#define VADD(a, b) _mm256_add_pd(a, b)
#define VSUB(a, b) _mm256_sub_pd(a, b)
#define VMUL(a, b) _mm256_mul_pd(a, b)
#define VDIV(a, b) _mm256_div_pd(a, b)
#define VMAX(a, b) _mm256_max_pd(a, b)
#define VMIN(a, b) _mm256_min_pd(a, b)
#define VROUND(x)                                                         \
  _mm256_round_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VFLOOR(x) _mm256_floor_pd(x)
#define VZERO_IF_NEGINF(x)                                                \
  _mm256_blendv_pd(x, _mm256_setzero_pd(),                                \
                   _mm256_cmp_pd(x, _mm256_set1_pd(-INFINITY), _CMP_EQ_OQ))
#else
#define VT __m256
#define VL 8
#define VZERO() _mm256_setzero_ps()
#define VSET1(x) _mm256_set1_ps(x)
#define VLOADU(p) _mm256_loadu_ps(p)
#define VSTOREU(p, v) _mm256_storeu_ps(p, v)
#define VMASK_FIRST(n)                                                    \
  _mm256_cmpgt_epi32(_mm256_set1_epi32(n),                                \
                     _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define VMASKZ_LOAD(m, p) _mm256_maskload_ps(p, m)
#define VMASK_STORE(p, m, v) _mm256_maskstore_ps(p, m, v)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VFNMA(a, b, c) _mm256_fnmadd_ps(a, b, c)
#define VADD(a, b) _mm256_add_ps(a, b)
#define VSUB(a, b) _mm256_sub_ps(a, b)
#define VMUL(a, b) _mm256_mul_ps(a, b)
#define VDIV(a, b) _mm256_div_ps(a, b)
#define VMAX(a, b) _mm256_max_ps(a, b)
#define VMIN(a, b) _mm256_min_ps(a, b)
#define VROUND(x)                                                         \
  _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VFLOOR(x) _mm256_floor_ps(x)
#define VFRAC(x) rlx_avx2_frac_ps(x)
#define VLDEXP(p, n) rlx_avx2_ldexp_ps(p, n)
#define VZERO_IF_NEGINF(x)                                                \
  _mm256_blendv_ps(x, _mm256_setzero_ps(),                                \
                   _mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ))
#endif
