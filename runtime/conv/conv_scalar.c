/* conv_scalar.c -- portable C convolution micro-kernels (conv_kern.h
 * over one-element vectors), f32 and f64: the path of CPUs without a
 * SIMD table and of rlx_gemm_select_isa("scalar").  Every element sees
 * the same operations as with the SIMD tables (fmaf / fma chains, the
 * same lane tree in the dot kernel), so results are bit-identical.
 */
#include "runtime/conv/conv_internal.h"

#define KVMAX {4, 4, 4, 3, 2}
#define KACC 28

/* trans (conv_internal.h) element by element. */
#define DEFINE_TRANS(NAME, T)                                             \
  static void NAME(const T *src, int64_t ss, int64_t rows, int64_t len,   \
                   T *dst, int64_t ld, int64_t width)                     \
  {                                                                       \
    for (int64_t p = 0; p < len; p++)                                     \
      for (int64_t i = 0; i < width; i++)                                 \
        dst[p * ld + i] = i < rows ? src[i * ss + p] : (T)0;              \
  }

#define VEC_F64 0
#define T float
#define SFX F32
#include "runtime/simd/vec_scalar.h"
#include "runtime/conv/conv_kern.h"
DEFINE_TRANS(trans_f32, float)
CONV_TABLE(rlx_conv_scalar_f32, "scalar", trans_f32);
#undef VEC_F64
#undef T
#undef SFX

#define VEC_F64 1
#define T double
#define SFX F64
#include "runtime/simd/vec_scalar.h"
#include "runtime/conv/conv_kern.h"
DEFINE_TRANS(trans_f64, double)
CONV_TABLE(rlx_conv_scalar_f64, "scalar", trans_f64);
