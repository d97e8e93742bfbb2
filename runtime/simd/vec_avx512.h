/* vec_avx512.h -- the vector layer (vec.h) over 512-bit AVX-512F
 * registers; masked lanes use the k mask registers. */
#include "runtime/simd/vec_undef.h"
#include <immintrin.h>
#include <math.h>

#ifndef RLX_VEC_AVX512_ONCE
#define RLX_VEC_AVX512_ONCE
/* VZIPLO / VZIPHI: one two-source permute; lane e of n lanes takes,
   from block e >> c (g = 2^c) of the result, lane e mod g of block
   (e >> c) / 2 of a or b (odd blocks), of their upper halves for hi. */
#define RLX_ZIP_IX(e, n)                                                  \
  ((((e) >> c) >> 1 << c) + ((e) & (g - 1)) + (((e) >> c) & 1) * (n) +    \
   hi * (n) / 2)
__attribute__((target("avx512f"), always_inline)) static inline __m512
rlx_avx512_zip_ps(__m512 a, __m512 b, int g, int hi)
{
  const int c = __builtin_ctz((unsigned)g);
  const __m512i ix = _mm512_setr_epi32(
      RLX_ZIP_IX(0, 16), RLX_ZIP_IX(1, 16), RLX_ZIP_IX(2, 16),
      RLX_ZIP_IX(3, 16), RLX_ZIP_IX(4, 16), RLX_ZIP_IX(5, 16),
      RLX_ZIP_IX(6, 16), RLX_ZIP_IX(7, 16), RLX_ZIP_IX(8, 16),
      RLX_ZIP_IX(9, 16), RLX_ZIP_IX(10, 16), RLX_ZIP_IX(11, 16),
      RLX_ZIP_IX(12, 16), RLX_ZIP_IX(13, 16), RLX_ZIP_IX(14, 16),
      RLX_ZIP_IX(15, 16));
  return _mm512_permutex2var_ps(a, ix, b);
}

__attribute__((target("avx512f"), always_inline)) static inline __m512d
rlx_avx512_zip_pd(__m512d a, __m512d b, int g, int hi)
{
  const int c = __builtin_ctz((unsigned)g);
  const __m512i ix = _mm512_setr_epi64(
      RLX_ZIP_IX(0, 8), RLX_ZIP_IX(1, 8), RLX_ZIP_IX(2, 8),
      RLX_ZIP_IX(3, 8), RLX_ZIP_IX(4, 8), RLX_ZIP_IX(5, 8),
      RLX_ZIP_IX(6, 8), RLX_ZIP_IX(7, 8));
  return _mm512_permutex2var_pd(a, ix, b);
}
#undef RLX_ZIP_IX

/* VLOAD_UNZIP: the even / odd lanes of two vectors, one permute each */
__attribute__((target("avx512f"), always_inline)) static inline void
rlx_avx512_load_unzip_ps(const float *p, __m512 *a, __m512 *b)
{
  const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18,
                                       20, 22, 24, 26, 28, 30);
  __m512 x = _mm512_loadu_ps(p), y = _mm512_loadu_ps(p + 16);
  *a = _mm512_permutex2var_ps(x, ev, y);
  *b = _mm512_permutex2var_ps(x, _mm512_add_epi32(ev, _mm512_set1_epi32(1)),
                              y);
}

__attribute__((target("avx512f"), always_inline)) static inline void
rlx_avx512_load_unzip_pd(const double *p, __m512d *a, __m512d *b)
{
  const __m512i ev = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
  __m512d x = _mm512_loadu_pd(p), y = _mm512_loadu_pd(p + 8);
  *a = _mm512_permutex2var_pd(x, ev, y);
  *b = _mm512_permutex2var_pd(x, _mm512_add_epi64(ev, _mm512_set1_epi64(1)),
                              y);
}
#endif

#undef TGT
#define TGT __attribute__((target("avx512f")))
#if VEC_F64
#define VT __m512d
#define VL 8
#define MT __mmask8
#define VZERO() _mm512_setzero_pd()
#define VSET1(x) _mm512_set1_pd(x)
#define VLOADU(p) _mm512_loadu_pd(p)
#define VSTOREU(p, v) _mm512_storeu_pd(p, v)
#define VMASK_FIRST(n) ((__mmask8)((1u << (n)) - 1))
#define VMASKZ_LOAD(m, p) _mm512_maskz_loadu_pd(m, p)
#define VMASK_STORE(p, m, v) _mm512_mask_storeu_pd(p, m, v)
#define VFMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define VFNMA(a, b, c) _mm512_fnmadd_pd(a, b, c)
#define VADD(a, b) _mm512_add_pd(a, b)
#define VSUB(a, b) _mm512_sub_pd(a, b)
#define VMUL(a, b) _mm512_mul_pd(a, b)
#define VDIV(a, b) _mm512_div_pd(a, b)
#define VMAX(a, b) _mm512_max_pd(a, b)
#define VMIN(a, b) _mm512_min_pd(a, b)
#define VROUND(x)                                                         \
  _mm512_roundscale_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VFLOOR(x)                                                         \
  _mm512_roundscale_pd(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define VZERO_WHERE_NEGINF(c, x)                                          \
  _mm512_mask_blend_pd(                                                   \
      _mm512_cmp_pd_mask(c, _mm512_set1_pd(-INFINITY), _CMP_EQ_OQ), x,    \
      _mm512_setzero_pd())
#define VZIPLO(a, b, g) rlx_avx512_zip_pd(a, b, g, 0)
#define VZIPHI(a, b, g) rlx_avx512_zip_pd(a, b, g, 1)
#define VSTORE_ZIP(p, a, b, g)                                            \
  (_mm512_storeu_pd(p, VZIPLO(a, b, g)),                                  \
   _mm512_storeu_pd((p) + 8, VZIPHI(a, b, g)))
#define VLOAD_UNZIP(p, a, b)                                              \
  rlx_avx512_load_unzip_pd(p, &(a), &(b))
#else
#define VT __m512
#define VL 16
#define MT __mmask16
#define VZERO() _mm512_setzero_ps()
#define VSET1(x) _mm512_set1_ps(x)
#define VLOADU(p) _mm512_loadu_ps(p)
#define VSTOREU(p, v) _mm512_storeu_ps(p, v)
#define VMASK_FIRST(n) ((__mmask16)((1u << (n)) - 1))
#define VMASKZ_LOAD(m, p) _mm512_maskz_loadu_ps(m, p)
#define VMASK_STORE(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VFNMA(a, b, c) _mm512_fnmadd_ps(a, b, c)
#define VADD(a, b) _mm512_add_ps(a, b)
#define VSUB(a, b) _mm512_sub_ps(a, b)
#define VMUL(a, b) _mm512_mul_ps(a, b)
#define VDIV(a, b) _mm512_div_ps(a, b)
#define VMAX(a, b) _mm512_max_ps(a, b)
#define VMIN(a, b) _mm512_min_ps(a, b)
#define VROUND(x)                                                         \
  _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VFLOOR(x)                                                         \
  _mm512_roundscale_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define VFRAC(x) _mm512_reduce_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define VSCALEF(p, n) _mm512_scalef_ps(p, n)
#define VLDEXP(p, n) _mm512_scalef_ps(p, n)
#define VZERO_WHERE_NEGINF(c, x)                                          \
  _mm512_mask_blend_ps(                                                   \
      _mm512_cmp_ps_mask(c, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ), x,    \
      _mm512_setzero_ps())
#define VZIPLO(a, b, g) rlx_avx512_zip_ps(a, b, g, 0)
#define VZIPHI(a, b, g) rlx_avx512_zip_ps(a, b, g, 1)
#define VSTORE_ZIP(p, a, b, g)                                            \
  (_mm512_storeu_ps(p, VZIPLO(a, b, g)),                                  \
   _mm512_storeu_ps((p) + 16, VZIPHI(a, b, g)))
#define VLOAD_UNZIP(p, a, b)                                              \
  rlx_avx512_load_unzip_ps(p, &(a), &(b))
#endif
