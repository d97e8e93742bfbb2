/* attention_avx2.c -- AVX2 + FMA attention kernels
 * (attention_internal.h): the register-tiled mm of attention_kern.h for
 * f32 and f64 over 256-bit vectors, and the f32 softmax steps on exp8.
 *
 * Compiled with a per-function target attribute, like gemm_avx2.c;
 * attention.c uses these tables when the GEMM dispatch chose avx2.  The
 * operations per element are those of attention_avx512.c (the same FMA
 * chains; exp8 gives exp16's bits), so the two ISAs give the same
 * results; masked lanes use vmaskmov.  f64 uses libm exp (the portable
 * steps of attention_tmpl.h), as on AVX-512.
 */
#include "runtime/attention/attention_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RLX_NO_SIMD)
#include <immintrin.h>
#include <math.h>
#include <stddef.h>

#define TGT __attribute__((target("avx2,fma")))
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define MM_NV 2

#include "runtime/simd/avx2_exp.h"

/* ---- f32 ---- */
#define T float
#define SFX f32
#define VT __m256
#define VL 8
#define MT __m256i
#define VMASK_FIRST(n)                                                    \
  _mm256_cmpgt_epi32(_mm256_set1_epi32(n),                                \
                     _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define VZERO() _mm256_setzero_ps()
#define VLOADU(p) _mm256_loadu_ps(p)
#define VMASKZ_LOAD(m, p) _mm256_maskload_ps(p, m)
#define VSTOREU(p, v) _mm256_storeu_ps(p, v)
#define VMASK_STORE(p, m, v) _mm256_maskstore_ps(p, m, v)
#define VSET1(x) _mm256_set1_ps(x)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VEXP(x) exp8(x)
#define VMAX(a, b) _mm256_max_ps(a, b)
#define VSUB(a, b) _mm256_sub_ps(a, b)
#define VADD(a, b) _mm256_add_ps(a, b)
#define VMUL(a, b) _mm256_mul_ps(a, b)
#define VZERO_IF_NEGINF(x)                                                \
  _mm256_blendv_ps(x, _mm256_setzero_ps(),                                \
                   _mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ))
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
#define VT __m256d
#define VL 4
#define MT __m256i
#define VMASK_FIRST(n)                                                    \
  _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3))
#define VZERO() _mm256_setzero_pd()
#define VLOADU(p) _mm256_loadu_pd(p)
#define VMASKZ_LOAD(m, p) _mm256_maskload_pd(p, m)
#define VSTOREU(p, v) _mm256_storeu_pd(p, v)
#define VMASK_STORE(p, m, v) _mm256_maskstore_pd(p, m, v)
#define VSET1(x) _mm256_set1_pd(x)
#define VFMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#include "runtime/attention/attention_kern.h"

const AttnIsaF32 rlx_attn_avx2_f32 = {mm_f32, online_f32, expsub_f32};
const AttnIsaF64 rlx_attn_avx2_f64 = {mm_f64, NULL, NULL};
#else
#include <stddef.h>
const AttnIsaF32 rlx_attn_avx2_f32 = {NULL, NULL, NULL};
const AttnIsaF64 rlx_attn_avx2_f64 = {NULL, NULL, NULL};
#endif
