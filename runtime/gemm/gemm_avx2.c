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
/* B blocks of 128 columns (384 x 128 floats, 192 KiB): each A panel,
   read in place, then meets 8 B panels from L2 before the next; with
   512 columns the 6 x 16 kernel fell to 111-116 GF/s at 128 x 512 x 512
   (the GPT's weight gradients) against 123-125 now; square sizes
   unchanged (dev box, Zen 5, 2026-12-07). */
#define GK_NC_F32 128
/* C's tile prefetched at each kernel call (gemm_kern.h); on AVX-512 no
   gain was measured. */
#define GK_PREFETCH_C
#define GK_F32_EXTRA "runtime/gemm/gemm_avx2_pack.h"
#include "runtime/gemm/gemm_isa.h"
#else
const RlxGemmCfgF32 rlx_gemm_avx2_f32 = {.name = "avx2", .mr = 1, .nr = 1,
                                         .kc = 1, .nc = 1};
const RlxGemmCfgF64 rlx_gemm_avx2_f64 = {.name = "avx2", .mr = 1, .nr = 1,
                                         .kc = 1, .nc = 1};
#endif
