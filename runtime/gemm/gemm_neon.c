/* gemm_neon.c -- AArch64 Advanced SIMD GEMM micro-kernels (f32 8x12,
 * f64 8x6): gemm_isa.h over 128-bit vectors.
 *
 * 24 of the 32 vector registers accumulate, three hold B and one the
 * broadcast A element.
 */
#include "runtime/gemm/gemm_internal.h"
#include "runtime/simd/isa.h"

#if RLX_HAVE_NEON
#define ISA neon
#define ISA_NAME "neon"
#define VEC_HEADER "runtime/simd/vec_neon.h"
#define GK_MR 8
#define GK_NV 3
#include "runtime/gemm/gemm_isa.h"
#else
const RlxGemmCfgF32 rlx_gemm_neon_f32 = {.name = "neon", .mr = 1, .nr = 1,
                                         .kc = 1, .nc = 1};
const RlxGemmCfgF64 rlx_gemm_neon_f64 = {.name = "neon", .mr = 1, .nr = 1,
                                         .kc = 1, .nc = 1};
#endif
