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
#include "runtime/attention/attention_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RLX_NO_SIMD)
#include <immintrin.h>
#include <math.h>
#include <stddef.h>

#define TGT __attribute__((target("avx512f")))
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#include "runtime/simd/avx512_exp.h"

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
#define VEXP(x) exp16(x)
#define VMAX(a, b) _mm512_max_ps(a, b)
#define VSUB(a, b) _mm512_sub_ps(a, b)
#define VADD(a, b) _mm512_add_ps(a, b)
#define VMUL(a, b) _mm512_mul_ps(a, b)
#define VZERO_IF_NEGINF(x)                                                \
  _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(-INFINITY),   \
                                          _CMP_EQ_OQ),                     \
                       x, _mm512_setzero_ps())
#include "runtime/attention/attention_kern.h"
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
#undef VEXP
#undef VMAX
#undef VSUB
#undef VADD
#undef VMUL
#undef VZERO_IF_NEGINF

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
#include "runtime/attention/attention_kern.h"

const AttnIsaF32 rlx_attn_avx512_f32 = {mm_f32, online_f32, expsub_f32};
const AttnIsaF64 rlx_attn_avx512_f64 = {mm_f64, NULL, NULL};
#else
#include <stddef.h>
const AttnIsaF32 rlx_attn_avx512_f32 = {NULL, NULL, NULL};
const AttnIsaF64 rlx_attn_avx512_f64 = {NULL, NULL, NULL};
#endif
