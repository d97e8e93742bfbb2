/* vec_avx2.h -- the vector layer (vec.h) over 256-bit AVX2 + FMA
 * registers; masked lanes go through vmaskmov. */
#include "runtime/simd/vec_undef.h"
#include <immintrin.h>
#include <math.h>

#ifndef RLX_VEC_AVX2_ONCE
#define RLX_VEC_AVX2_ONCE
/* VZIPLO / VZIPHI: zip within 128-bit halves (g < 4 f32, g < 2 f64:
   unpack), then take the low or high halves of both results. */
__attribute__((target("avx2"), always_inline)) static inline __m256
rlx_avx2_zip_ps(__m256 a, __m256 b, int g, int hi)
{
  __m256 l = a, h = b;
  if (g == 1) {
    l = _mm256_unpacklo_ps(a, b);
    h = _mm256_unpackhi_ps(a, b);
  } else if (g == 2) {
    l = _mm256_castpd_ps(
        _mm256_unpacklo_pd(_mm256_castps_pd(a), _mm256_castps_pd(b)));
    h = _mm256_castpd_ps(
        _mm256_unpackhi_pd(_mm256_castps_pd(a), _mm256_castps_pd(b)));
  }
  return hi ? _mm256_permute2f128_ps(l, h, 0x31)
            : _mm256_permute2f128_ps(l, h, 0x20);
}

__attribute__((target("avx2"), always_inline)) static inline __m256d
rlx_avx2_zip_pd(__m256d a, __m256d b, int g, int hi)
{
  __m256d l = g == 1 ? _mm256_unpacklo_pd(a, b) : a;
  __m256d h = g == 1 ? _mm256_unpackhi_pd(a, b) : b;
  return hi ? _mm256_permute2f128_pd(l, h, 0x31)
            : _mm256_permute2f128_pd(l, h, 0x20);
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
#define VZIPLO(a, b, g) rlx_avx2_zip_pd(a, b, g, 0)
#define VZIPHI(a, b, g) rlx_avx2_zip_pd(a, b, g, 1)
/* even / odd lanes within 128-bit halves, then the 64-bit quarters
   reordered 0 2 1 3 */
#define VUNZIPLO(a, b) _mm256_permute4x64_pd(_mm256_unpacklo_pd(a, b), 0xD8)
#define VUNZIPHI(a, b) _mm256_permute4x64_pd(_mm256_unpackhi_pd(a, b), 0xD8)
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
#define VPOW2I(n)                                                         \
  _mm256_castsi256_ps(_mm256_slli_epi32(                                  \
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23))
#define VZERO_IF_NEGINF(x)                                                \
  _mm256_blendv_ps(x, _mm256_setzero_ps(),                                \
                   _mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ))
#define VZIPLO(a, b, g) rlx_avx2_zip_ps(a, b, g, 0)
#define VZIPHI(a, b, g) rlx_avx2_zip_ps(a, b, g, 1)
#define VUNZIPLO(a, b)                                                    \
  _mm256_castpd_ps(_mm256_permute4x64_pd(                                 \
      _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8))
#define VUNZIPHI(a, b)                                                    \
  _mm256_castpd_ps(_mm256_permute4x64_pd(                                 \
      _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8))
#endif
