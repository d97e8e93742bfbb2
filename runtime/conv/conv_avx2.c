/* conv_avx2.c -- AVX2 + FMA convolution micro-kernels (conv_kern.h) and
 * the channel transposes, f32 and f64.
 *
 * conv.c uses these tables when the GEMM dispatch chose avx2.  The
 * kernels are conv_kern.h over 256-bit vectors (simd/vec_avx2.h), so
 * every element sees the operations of the other tables (same bits).  With
 * 16 ymm registers the widest tiles are narrower than AVX-512's
 * (KVMAX, measured with bench_conv --isa=avx2; 14-row tiles take one
 * vector).  Every op keeps to KACC = 12 accumulators (1 broadcast and
 * 3 B registers left): the forward and input-gradient tiles are 4 x 3
 * instead of 8 x 2 (4-8% less CPU time on the ResNet 3x3 shape), and
 * the weight gradient, since 8 x vmax[3] = 16 > KACC, runs its 8-row
 * panels as two 4 x 3 calls (conv_tmpl.h wgemm_item_; 7-9% faster than
 * 8 x 2, whose 16 accumulators spill 3; 8 x 2 had beaten 8 x 1 by
 * 20-60%).
 * Transposes go through 8 x 8 (f32) / 4 x 4 (f64) register blocks,
 * with plain C at the edges.
 */
#include "runtime/conv/conv_internal.h"
#include "runtime/simd/isa.h"

#if RLX_HAVE_X86_SIMD
#include <immintrin.h>

#define KVMAX {4, 4, 3, 2, 1}
#define KACC 12


/* ---- f32 ---- */
#define VEC_F64 0
#define T float
#define SFX F32
#include "runtime/simd/vec_avx2.h"
#include "runtime/conv/conv_kern.h"

#include "runtime/simd/avx2_transpose.h"

CONV_DEFINE_TRANS(trans_f32, float, 8, __m256, _mm256_loadu_ps,
                  _mm256_storeu_ps, transpose8_ps)

CONV_TABLE(rlx_conv_avx2_f32, "avx2", trans_f32);

#undef VEC_F64
#undef T
#undef SFX

/* ---- f64 ---- */
#define VEC_F64 1
#define T double
#define SFX F64
#include "runtime/simd/vec_avx2.h"
#include "runtime/conv/conv_kern.h"

/* out[j] lane i = r[i] lane j for 4 x 4 doubles. */
TGT static inline void transpose4_pd(__m256d r[4])
{
  __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]);
  __m256d t1 = _mm256_unpackhi_pd(r[0], r[1]);
  __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]);
  __m256d t3 = _mm256_unpackhi_pd(r[2], r[3]);
  r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
  r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
  r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
  r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

CONV_DEFINE_TRANS(trans_f64, double, 4, __m256d, _mm256_loadu_pd,
                  _mm256_storeu_pd, transpose4_pd)

CONV_TABLE(rlx_conv_avx2_f64, "avx2", trans_f64);
#else
const ConvIsaF32 rlx_conv_avx2_f32 = {.name = "avx2"};
const ConvIsaF64 rlx_conv_avx2_f64 = {.name = "avx2"};
#endif
