/* gemm_neon.c -- AArch64 Advanced SIMD GEMM micro-kernels (f32 8x12,
 * f64 8x6): gemm_kern.h over 128-bit vectors.
 *
 * 24 of the 32 vector registers accumulate, three hold B and one the
 * broadcast A element.  KC matches the other tables so that every ISA
 * gives the same bits.
 */
#include "runtime/gemm/gemm_internal.h"
#include "runtime/simd/isa.h"

#if RLX_HAVE_NEON
#define GK_MR 8
#define GK_NV 3

#define VEC_F64 0
#define T float
#define GK_NAME kern_f32
#include "runtime/simd/vec_neon.h"
#include "runtime/gemm/gemm_kern.h"
#undef VEC_F64
#undef T
#undef GK_NAME

#define VEC_F64 1
#define T double
#define GK_NAME kern_f64
#include "runtime/simd/vec_neon.h"
#include "runtime/gemm/gemm_kern.h"

const RlxGemmCfgF32 rlx_gemm_neon_f32 = {
  .name = "neon", .mr = GK_MR, .nr = 12, .kc = 384, .nc = 512,
  .kern = kern_f32};
const RlxGemmCfgF64 rlx_gemm_neon_f64 = {
  .name = "neon", .mr = GK_MR, .nr = 6, .kc = 256, .nc = 512,
  .kern = kern_f64};
#else
const RlxGemmCfgF32 rlx_gemm_neon_f32 = {.name = "neon", .mr = 1, .nr = 1,
                                         .kc = 1, .nc = 1};
const RlxGemmCfgF64 rlx_gemm_neon_f64 = {.name = "neon", .mr = 1, .nr = 1,
                                         .kc = 1, .nc = 1};
#endif
