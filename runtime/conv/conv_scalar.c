/* conv_scalar.c -- portable C convolution micro-kernels (conv_kern.h
 * with one-element "vectors"), f32 and f64: the path of CPUs without
 * AVX-512 and of rlx_gemm_select_isa("scalar").  Every element sees the
 * same operations as with the SIMD tables (fmaf / fma chains, the same
 * lane tree in the dot kernel), so results are bit-identical.
 */
#include <math.h>

#include "runtime/conv/conv_internal.h"

#define KVMAX {4, 4, 4, 3, 2}

#define TGT

#define T float
#define SFX F32
#define VT float
#define VL 1
#define VZERO() 0.0f
#define VLOADU(p) (*(p))
#define VSTOREU(p, v) (*(p) = (v))
#define VSET1(x) (x)
#define VFMA(a, b, c) fmaf(a, b, c)
#define VADD(a, b) ((a) + (b))
#include "runtime/conv/conv_kern.h"

static void trans_f32(const float *src, int64_t ss, int64_t rows,
                      int64_t len, float *dst, int64_t ld, int64_t width)
{
  for (int64_t p = 0; p < len; p++)
    for (int64_t i = 0; i < width; i++)
      dst[p * ld + i] = i < rows ? src[i * ss + p] : 0.0f;
}

CONV_TABLE(rlx_conv_scalar_f32, "scalar", trans_f32);

#undef T
#undef SFX
#undef VT
#undef VZERO
#undef VLOADU
#undef VSTOREU
#undef VSET1
#undef VFMA
#undef VADD

#define T double
#define SFX F64
#define VT double
#define VZERO() 0.0
#define VLOADU(p) (*(p))
#define VSTOREU(p, v) (*(p) = (v))
#define VSET1(x) (x)
#define VFMA(a, b, c) fma(a, b, c)
#define VADD(a, b) ((a) + (b))
#include "runtime/conv/conv_kern.h"

static void trans_f64(const double *src, int64_t ss, int64_t rows,
                      int64_t len, double *dst, int64_t ld, int64_t width)
{
  for (int64_t p = 0; p < len; p++)
    for (int64_t i = 0; i < width; i++)
      dst[p * ld + i] = i < rows ? src[i * ss + p] : 0.0;
}

CONV_TABLE(rlx_conv_scalar_f64, "scalar", trans_f64);
