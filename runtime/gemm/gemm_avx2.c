/* gemm_avx2.c -- AVX2+FMA GEMM micro-kernels (f32 6x16, f64 6x8):
 * gemm_isa.h over 256-bit vectors.
 *
 * gemm.c runs them only after __builtin_cpu_supports("avx2") and
 * ("fma").  12 ymm accumulators, two B vectors and one broadcast per
 * step.  f32 packing and edge tiles: gemm_avx2_pack.h.
 */
#include "runtime/gemm/gemm_internal.h"
#include "runtime/simd/isa.h"

#if RLX_HAVE_X86_SIMD
#define ISA avx2
#define ISA_NAME "avx2"
#define VEC_HEADER "runtime/simd/vec_avx2.h"
#define GK_MR 6
#define GK_NV 2
#define GK_F32_EXTRA "runtime/gemm/gemm_avx2_pack.h"
#include "runtime/gemm/gemm_isa.h"
#else
const RlxGemmCfgF32 rlx_gemm_avx2_f32 = {.name = "avx2", .mr = 1, .nr = 1,
                                         .kc = 1, .nc = 1};
const RlxGemmCfgF64 rlx_gemm_avx2_f64 = {.name = "avx2", .mr = 1, .nr = 1,
                                         .kc = 1, .nc = 1};
#endif
