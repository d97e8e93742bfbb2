/* fft_avx512.c -- the Stockham stage kernel (fft_tmpl.h) compiled for
 * AVX-512F with a per-function target attribute, like gemm_avx512.c;
 * fft.c calls it only when the GEMM dispatch chose avx512.
 * Without FP contraction (CMakeLists.txt) it gives the same bits as the
 * portable kernel.
 */
#include "runtime/fft_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RLX_NO_SIMD)
#define TGT __attribute__((target("avx512f")))
#define STAGE_FN rlx_fft_stage_avx512
#include "runtime/fft_tmpl.h"
#else
void rlx_fft_stage_avx512(const FftStage *st, const float *xr,
                          const float *xi, float *yr, float *yi)
{
  rlx_fft_stage_scalar(st, xr, xi, yr, yi);
}
#endif
