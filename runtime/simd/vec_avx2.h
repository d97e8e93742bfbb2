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
/* VSCALE_NORMAL(p, n) (vec.h): p * 2^n as an exponent add: n (an
   integer) converted exactly, shifted to the exponent field.  The
   conversion rather than a magic-number add (1.5 * 2^23): on AMD Zen 5
   vcvtps2dq does not compete with the FMAs for their pipes, vaddps
   partly does (selective scan, docs/performance.md 2026-12-05). */
__attribute__((target("avx2,fma"))) static inline __m256
rlx_avx2_scale_normal_ps(__m256 p, __m256 n)
{
  __m256i i = _mm256_cvtps_epi32(n);
  return _mm256_castsi256_ps(
      _mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(i, 23)));
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
/* The zips of blocks of g lanes within each 128-bit half (unpack; for
   g = 4 f32, 2 f64: a and b as they are): *l gets the first 128 bits of
   each half's result, *h the second.  VZIPLO / VZIPHI then join the low
   / high halves of l and h; VSTORE_ZIP stores the four 128-bit pieces
   where they go. */
__attribute__((target("avx2"), always_inline)) static inline void
rlx_avx2_unpack_ps(__m256 a, __m256 b, int g, __m256 *l, __m256 *h)
{
  *l = a;
  *h = b;
  if (g == 1) {
    *l = _mm256_unpacklo_ps(a, b);
    *h = _mm256_unpackhi_ps(a, b);
  } else if (g == 2) {
    *l = _mm256_castpd_ps(
        _mm256_unpacklo_pd(_mm256_castps_pd(a), _mm256_castps_pd(b)));
    *h = _mm256_castpd_ps(
        _mm256_unpackhi_pd(_mm256_castps_pd(a), _mm256_castps_pd(b)));
  }
}

__attribute__((target("avx2"), always_inline)) static inline __m256
rlx_avx2_zip_ps(__m256 a, __m256 b, int g, int hi)
{
  __m256 l, h;
  rlx_avx2_unpack_ps(a, b, g, &l, &h);
  return hi ? _mm256_permute2f128_ps(l, h, 0x31)
            : _mm256_permute2f128_ps(l, h, 0x20);
}

__attribute__((target("avx2"), always_inline)) static inline void
rlx_avx2_store_zip_ps(float *p, __m256 a, __m256 b, int g)
{
  __m256 l, h;
  rlx_avx2_unpack_ps(a, b, g, &l, &h);
  _mm_storeu_ps(p, _mm256_castps256_ps128(l));
  _mm_storeu_ps(p + 4, _mm256_castps256_ps128(h));
  _mm_storeu_ps(p + 8, _mm256_extractf128_ps(l, 1));
  _mm_storeu_ps(p + 12, _mm256_extractf128_ps(h, 1));
}

/* 128-bit pieces 0 2 and 1 3 of the 16 floats, then the even / odd
   lanes within halves */
__attribute__((target("avx2"), always_inline)) static inline void
rlx_avx2_load_unzip_ps(const float *p, __m256 *a, __m256 *b)
{
  __m256 l = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p)),
                                  _mm_loadu_ps(p + 8), 1);
  __m256 h = _mm256_insertf128_ps(
      _mm256_castps128_ps256(_mm_loadu_ps(p + 4)), _mm_loadu_ps(p + 12), 1);
  *a = _mm256_shuffle_ps(l, h, 0x88);
  *b = _mm256_shuffle_ps(l, h, 0xDD);
}

__attribute__((target("avx2"), always_inline)) static inline void
rlx_avx2_unpack_pd(__m256d a, __m256d b, int g, __m256d *l, __m256d *h)
{
  *l = g == 1 ? _mm256_unpacklo_pd(a, b) : a;
  *h = g == 1 ? _mm256_unpackhi_pd(a, b) : b;
}

__attribute__((target("avx2"), always_inline)) static inline __m256d
rlx_avx2_zip_pd(__m256d a, __m256d b, int g, int hi)
{
  __m256d l, h;
  rlx_avx2_unpack_pd(a, b, g, &l, &h);
  return hi ? _mm256_permute2f128_pd(l, h, 0x31)
            : _mm256_permute2f128_pd(l, h, 0x20);
}

__attribute__((target("avx2"), always_inline)) static inline void
rlx_avx2_store_zip_pd(double *p, __m256d a, __m256d b, int g)
{
  __m256d l, h;
  rlx_avx2_unpack_pd(a, b, g, &l, &h);
  _mm_storeu_pd(p, _mm256_castpd256_pd128(l));
  _mm_storeu_pd(p + 2, _mm256_castpd256_pd128(h));
  _mm_storeu_pd(p + 4, _mm256_extractf128_pd(l, 1));
  _mm_storeu_pd(p + 6, _mm256_extractf128_pd(h, 1));
}

__attribute__((target("avx2"), always_inline)) static inline void
rlx_avx2_load_unzip_pd(const double *p, __m256d *a, __m256d *b)
{
  __m256d l = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(p)),
                                   _mm_loadu_pd(p + 4), 1);
  __m256d h = _mm256_insertf128_pd(
      _mm256_castpd128_pd256(_mm_loadu_pd(p + 2)), _mm_loadu_pd(p + 6), 1);
  *a = _mm256_unpacklo_pd(l, h);
  *b = _mm256_unpackhi_pd(l, h);
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
#define VZERO_WHERE_NEGINF(c, x)                                          \
  _mm256_blendv_pd(x, _mm256_setzero_pd(),                                \
                   _mm256_cmp_pd(c, _mm256_set1_pd(-INFINITY), _CMP_EQ_OQ))
#define VZIPLO(a, b, g) rlx_avx2_zip_pd(a, b, g, 0)
#define VZIPHI(a, b, g) rlx_avx2_zip_pd(a, b, g, 1)
#define VSTORE_ZIP(p, a, b, g) rlx_avx2_store_zip_pd(p, a, b, g)
#define VLOAD_UNZIP(p, a, b) rlx_avx2_load_unzip_pd(p, &(a), &(b))
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
#define VSCALE_NORMAL(p, n) rlx_avx2_scale_normal_ps(p, n)
#define VALL_LT(a, b)                                                     \
  (_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_LT_OQ)) == 0xff)
#define VZERO_WHERE_NEGINF(c, x)                                          \
  _mm256_blendv_ps(x, _mm256_setzero_ps(),                                \
                   _mm256_cmp_ps(c, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ))
#define VZIPLO(a, b, g) rlx_avx2_zip_ps(a, b, g, 0)
#define VZIPHI(a, b, g) rlx_avx2_zip_ps(a, b, g, 1)
#define VSTORE_ZIP(p, a, b, g) rlx_avx2_store_zip_ps(p, a, b, g)
#define VLOAD_UNZIP(p, a, b) rlx_avx2_load_unzip_ps(p, &(a), &(b))
#endif
