/* conv.c -- 2-D convolution, NCHW: forward and both backward
 * convolutions for f32 and f64 (rlxrt.h, rlx_conv2d_*).
 *
 * Entry points only: the plan (conv_plan.c) picks the lowering, the
 * drivers (conv_tmpl.h, instantiated here per dtype) run it on the
 * micro-kernels of the ISA the GEMM dispatch chose (conv_avx512.c,
 * conv_avx2.c, conv_neon.c, else the portable conv_scalar.c: conv_kern.h
 * instantiated per ISA, all giving the same bits).  Design and
 * measurements: conv_internal.h and docs/performance.md, "Convolution
 * kernels".
 */
#include <stdatomic.h>
#include <string.h>

#include "runtime/conv/conv_internal.h"
#include "runtime/rlxrt.h"
#include "runtime/simd/isa.h"

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#define T float
#define SFX F32
#define SFXL f32
#define FN(name) name##f32
#include "runtime/conv/conv_tmpl.h"
#undef T
#undef SFX
#undef SFXL
#undef FN
#undef ISA_T

#define T double
#define SFX F64
#define SFXL f64
#define FN(name) name##f64
#include "runtime/conv/conv_tmpl.h"
#undef T
#undef SFX
#undef SFXL
#undef FN
#undef ISA_T

static const ConvIsaF32 *isa_f32(void)
{
  static const ConvIsaF32 *const tab[] = {
      [RLX_ISA_SCALAR] = &rlx_conv_scalar_f32,
      [RLX_ISA_AVX2] = &rlx_conv_avx2_f32,
      [RLX_ISA_AVX512] = &rlx_conv_avx512_f32,
      [RLX_ISA_NEON] = &rlx_conv_neon_f32};
  const ConvIsaF32 *t = tab[rlx_isa_level()];
  return t->trans ? t : &rlx_conv_scalar_f32;
}

static const ConvIsaF64 *isa_f64(void)
{
  static const ConvIsaF64 *const tab[] = {
      [RLX_ISA_SCALAR] = &rlx_conv_scalar_f64,
      [RLX_ISA_AVX2] = &rlx_conv_avx2_f64,
      [RLX_ISA_AVX512] = &rlx_conv_avx512_f64,
      [RLX_ISA_NEON] = &rlx_conv_neon_f64};
  const ConvIsaF64 *t = tab[rlx_isa_level()];
  return t->trans ? t : &rlx_conv_scalar_f64;
}

void rlx_conv2d_f32(const rlx_conv_geom *g, const float *x, const float *w,
                    float *y, void *scratch)
{
  conv_run_f32(g, RLX_CONV_FWD, x, w, NULL, y, scratch, isa_f32());
}

void rlx_conv2d_bwd_input_f32(const rlx_conv_geom *g, const float *dy,
                              const float *w, float *dx, void *scratch)
{
  conv_run_f32(g, RLX_CONV_BWD_INPUT, dy, w, NULL, dx, scratch, isa_f32());
}

void rlx_conv2d_bwd_weight_f32(const rlx_conv_geom *g, const float *x,
                               const float *dy, float *dw, void *scratch)
{
  conv_run_f32(g, RLX_CONV_BWD_WEIGHT, x, NULL, dy, dw, scratch, isa_f32());
}

void rlx_conv2d_f64(const rlx_conv_geom *g, const double *x,
                    const double *w, double *y, void *scratch)
{
  conv_run_f64(g, RLX_CONV_FWD, x, w, NULL, y, scratch, isa_f64());
}

void rlx_conv2d_bwd_input_f64(const rlx_conv_geom *g, const double *dy,
                              const double *w, double *dx, void *scratch)
{
  conv_run_f64(g, RLX_CONV_BWD_INPUT, dy, w, NULL, dx, scratch, isa_f64());
}

void rlx_conv2d_bwd_weight_f64(const rlx_conv_geom *g, const double *x,
                               const double *dy, double *dw,
                               void *scratch)
{
  conv_run_f64(g, RLX_CONV_BWD_WEIGHT, x, NULL, dy, dw, scratch, isa_f64());
}
