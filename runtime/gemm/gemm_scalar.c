/* gemm_scalar.c -- portable C GEMM micro-kernels (4x8): gemm_kern.h over
 * one-element vectors, the fallback of CPUs without a SIMD table.
 *
 * fma()/fmaf() make every step one fused multiply-add, as the contract
 * in gemm_internal.h requires (a library call unless the compiler
 * targets hardware FMA).  KC matches the SIMD tables, so the results are
 * bit-identical to theirs.
 */
#include "runtime/gemm/gemm_internal.h"

#define GK_MR 4
#define GK_NV 8

#define VEC_F64 0
#define T float
#define GK_NAME kern_f32
#include "runtime/simd/vec_scalar.h"
#include "runtime/gemm/gemm_kern.h"
#undef VEC_F64
#undef T
#undef GK_NAME

#define VEC_F64 1
#define T double
#define GK_NAME kern_f64
#include "runtime/simd/vec_scalar.h"
#include "runtime/gemm/gemm_kern.h"

const RlxGemmCfgF32 rlx_gemm_scalar_f32 = {
  .name = "scalar", .mr = GK_MR, .nr = GK_NV, .kc = 384, .nc = 512,
  .kern = kern_f32};
const RlxGemmCfgF64 rlx_gemm_scalar_f64 = {
  .name = "scalar", .mr = GK_MR, .nr = GK_NV, .kc = 256, .nc = 512,
  .kern = kern_f64};
