/* fft_avx2.c -- the FFT kernels (fft_kern.h) over 256-bit AVX2 vectors
 * (simd/vec_avx2.h), and load_dup (one vpermps).  Radix-3 and radix-5
 * stages of stride 1, 2, 4 run the template's loops (no odd_ilv).
 *
 * fft.c uses this table when the GEMM dispatch chose avx2.  Without FP
 * contraction (CMakeLists.txt) it gives the portable kernel's bits.
 */
#include "runtime/fft/fft_internal.h"
#include "runtime/simd/isa.h"

#if RLX_HAVE_X86_SIMD
#define VEC_F64 0
#define T float
#include "runtime/simd/vec_avx2.h"

/* the n / s twiddles (4 or fewer) in the low half, then spread */
__attribute__((always_inline)) TGT static inline VT
load_dup(const float *p, int s, int64_t n)
{
  const int c = (int)(n / s);
  __m128 w = c == 4   ? _mm_loadu_ps(p)
             : c == 2 ? _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)p))
             : c == 1 ? _mm_load_ss(p)
                      : _mm_maskload_ps(p, _mm_cmpgt_epi32(
                                               _mm_set1_epi32(c),
                                               _mm_setr_epi32(0, 1, 2, 3)));
  const __m256i ix = _mm256_srli_epi32(
      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), __builtin_ctz((unsigned)s));
  return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(w), ix);
}

#define FFT_ODD_ILV 0
#define STAGE_FN rlx_fft_stage_avx2
#define SPLIT_FN rlx_fft_split_avx2
#define JOIN_FN rlx_fft_join_avx2
#include "runtime/fft/fft_kern.h"

const FftIsa rlx_fft_avx2 = {rlx_fft_stage_avx2, rlx_fft_split_avx2,
                             rlx_fft_join_avx2};
#else
const FftIsa rlx_fft_avx2 = {NULL, NULL, NULL};
#endif
