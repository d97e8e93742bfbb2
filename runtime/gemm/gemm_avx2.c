/* gemm_avx2.c -- AVX2+FMA GEMM micro-kernels (f32 6x16, f64 6x8):
 * gemm_kern.h over 256-bit vectors.
 *
 * gemm.c runs them only after __builtin_cpu_supports("avx2") and
 * ("fma").  12 ymm accumulators, two B vectors and one broadcast per
 * step.  KC matches the other tables so that every ISA gives the same
 * bits.
 */
#include "runtime/gemm/gemm_internal.h"
#include "runtime/simd/isa.h"

#if RLX_HAVE_X86_SIMD
#define GK_MR 6
#define GK_NV 2

#define VEC_F64 0
#define T float
#define GK_NAME kern_f32
#include "runtime/simd/vec_avx2.h"
#include "runtime/gemm/gemm_kern.h"
#undef VEC_F64
#undef T
#undef GK_NAME

#define VEC_F64 1
#define T double
#define GK_NAME kern_f64
#include "runtime/simd/vec_avx2.h"
#include "runtime/gemm/gemm_kern.h"

const RlxGemmCfgF32 rlx_gemm_avx2_f32 = {
  .name = "avx2", .mr = GK_MR, .nr = 16, .kc = 384, .nc = 512,
  .kern = kern_f32};
const RlxGemmCfgF64 rlx_gemm_avx2_f64 = {
  .name = "avx2", .mr = GK_MR, .nr = 8, .kc = 256, .nc = 512,
  .kern = kern_f64};
#else
const RlxGemmCfgF32 rlx_gemm_avx2_f32 = {.name = "avx2", .mr = 1, .nr = 1,
                                         .kc = 1, .nc = 1};
const RlxGemmCfgF64 rlx_gemm_avx2_f64 = {.name = "avx2", .mr = 1, .nr = 1,
                                         .kc = 1, .nc = 1};
#endif
