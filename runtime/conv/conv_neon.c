/* conv_neon.c -- AArch64 Advanced SIMD convolution micro-kernels
 * (conv_kern.h over 128-bit vectors, simd/vec_neon.h) and the channel
 * transposes, f32 and f64.
 *
 * conv.c uses these tables when the GEMM dispatch chose neon.  Every
 * element sees the operations of the other tables (same bits).  With 32
 * vector registers the tiles are those of AVX-512 (KVMAX).  Transposes
 * go through 4 x 4 (f32) / 2 x 2 (f64) register blocks (zip / trn
 * permutes), with plain C at the edges.
 */
#include "runtime/conv/conv_internal.h"
#include "runtime/simd/isa.h"

#if RLX_HAVE_NEON
#define KVMAX {4, 4, 4, 3, 2}
#define KACC 28


/* ---- f32 ---- */
#define VEC_F64 0
#define T float
#define SFX F32
#include "runtime/simd/vec_neon.h"
#include "runtime/conv/conv_kern.h"

/* out[j] lane i = r[i] lane j for 4 x 4 floats. */
static inline void transpose4_f32(float32x4_t r[4])
{
  float32x4_t t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
  float32x4_t t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
  r[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0),
                                          vreinterpretq_f64_f32(t2)));
  r[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1),
                                          vreinterpretq_f64_f32(t3)));
  r[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0),
                                          vreinterpretq_f64_f32(t2)));
  r[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1),
                                          vreinterpretq_f64_f32(t3)));
}

CONV_DEFINE_TRANS(trans_f32, float, 4, float32x4_t, vld1q_f32,
                  vst1q_f32, transpose4_f32)
CONV_TABLE(rlx_conv_neon_f32, "neon", trans_f32);
#undef VEC_F64
#undef T
#undef SFX

/* ---- f64 ---- */
#define VEC_F64 1
#define T double
#define SFX F64
#include "runtime/simd/vec_neon.h"
#include "runtime/conv/conv_kern.h"

/* out[j] lane i = r[i] lane j for 2 x 2 doubles. */
static inline void transpose2_f64(float64x2_t r[2])
{
  float64x2_t t0 = vtrn1q_f64(r[0], r[1]);
  r[1] = vtrn2q_f64(r[0], r[1]);
  r[0] = t0;
}

CONV_DEFINE_TRANS(trans_f64, double, 2, float64x2_t, vld1q_f64,
                  vst1q_f64, transpose2_f64)
CONV_TABLE(rlx_conv_neon_f64, "neon", trans_f64);
#else
const ConvIsaF32 rlx_conv_neon_f32 = {.name = "neon"};
const ConvIsaF64 rlx_conv_neon_f64 = {.name = "neon"};
#endif
