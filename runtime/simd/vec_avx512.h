/* vec_avx512.h -- the vector layer (vec.h) over 512-bit AVX-512F
 * registers; masked lanes use the k mask registers. */
#include "runtime/simd/vec_undef.h"
#include <immintrin.h>
#include <math.h>

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
#define VZERO_IF_NEGINF(x)                                                \
  _mm512_mask_blend_pd(                                                   \
      _mm512_cmp_pd_mask(x, _mm512_set1_pd(-INFINITY), _CMP_EQ_OQ), x,    \
      _mm512_setzero_pd())
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
#define VZERO_IF_NEGINF(x)                                                \
  _mm512_mask_blend_ps(                                                   \
      _mm512_cmp_ps_mask(x, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ), x,    \
      _mm512_setzero_ps())
#endif
