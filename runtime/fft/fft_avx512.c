/* fft_avx512.c -- the FFT kernels (fft_kern.h) over 512-bit AVX-512F
 * vectors (simd/vec_avx512.h), and the permutes fft_kern.h asks of the
 * ISA: load_dup (one vpermps) and odd_ilv (the outputs of radix-3 and
 * radix-5 stages of stride 1, 2, 4, 8 by masked permutes).
 *
 * fft.c uses this table when the GEMM dispatch chose avx512.  Without
 * FP contraction (CMakeLists.txt) it gives the portable kernel's bits.
 */
#include "runtime/fft/fft_internal.h"
#include "runtime/simd/isa.h"

#if RLX_HAVE_X86_SIMD
#define VEC_F64 0
#define T float
#include "runtime/simd/vec_avx512.h"

__attribute__((always_inline)) TGT static inline VT
load_dup(const float *p, int s, int64_t n)
{
  const __m512i ix = _mm512_srli_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                        15),
      __builtin_ctz((unsigned)s));
  return _mm512_permutexvar_ps(
      ix, _mm512_maskz_loadu_ps(VMASK_FIRST((int)(n / s)), p));
}

/* The r = 3 or 5 vectors b in blocks of s lanes (fft_kern.h's narrow
 * stages): lane e of output vector v, pos = 16 v + e, is lane
 * pos % s + s (pos / (s r)) of b[(pos / s) % r], so each output vector
 * is one permute (ix[v]) of every b[k], merged under mk[v][k]. */
typedef struct {
  __m512i ix[5];
  __mmask16 mk[5][5];
} OddIlv;

TGT static void odd_ilv_init(OddIlv *c, int r, int s)
{
  for (int v = 0; v < r; v++) {
    int32_t ix[16];
    for (int k = 0; k < r; k++)
      c->mk[v][k] = 0;
    for (int e = 0; e < 16; e++) {
      int pos = 16 * v + e, t = pos / s;
      ix[e] = pos % s + s * (t / r);
      c->mk[v][t % r] |= (__mmask16)(1u << e);
    }
    c->ix[v] = _mm512_loadu_si512(ix);
  }
}

__attribute__((always_inline)) TGT static inline void
odd_ilv(const OddIlv *c, int r, VT *b)
{
  VT o[5];
  for (int v = 0; v < r; v++) {
    o[v] = VZERO();
    for (int k = 0; k < r; k++)
      o[v] = _mm512_mask_permutexvar_ps(o[v], c->mk[v][k], c->ix[v], b[k]);
  }
  for (int v = 0; v < r; v++)
    b[v] = o[v];
}

#define FFT_ODD_ILV 1
#define STAGE_FN rlx_fft_stage_avx512
#define SPLIT_FN rlx_fft_split_avx512
#define JOIN_FN rlx_fft_join_avx512
#include "runtime/fft/fft_kern.h"

const FftIsa rlx_fft_avx512 = {rlx_fft_stage_avx512, rlx_fft_split_avx512,
                               rlx_fft_join_avx512};
#else
const FftIsa rlx_fft_avx512 = {NULL, NULL, NULL};
#endif
