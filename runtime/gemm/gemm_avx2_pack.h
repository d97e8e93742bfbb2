/* gemm_avx2_pack.h -- AVX2 f32 packing and edge tiles for the 6 x 16
 * kernel (contracts: gemm_internal.h).  Included by gemm_isa.h from
 * gemm_avx2.c with the f32 AVX2 vector layer active (T = float, VL = 8,
 * TGT the avx2,fma target) after kern_f32.  Packing only moves data;
 * the edge tile performs, per element, exactly the operations of
 * kern_f32 (zero, one FMA per p in increasing p, then + C), so results
 * keep the bits of every other table.
 */
#include "runtime/simd/avx2_transpose.h"

enum { AP_MR = 6, AP_NR = 16 };

/* Lanes 0-5 of v to p[0..5]. */
TGT static inline void store6_ps(float *p, __m256 v)
{
  _mm_storeu_ps(p, _mm256_castps256_ps128(v));
  _mm_storel_pi((__m64 *)(p + 4), _mm256_extractf128_ps(v, 1));
}

/* pack_a: ap[p*6 + i] = i < count ? a[i*rs + p] : 0, 8 columns at a
   time through the 8 x 8 transpose (rows 6 and 7 zero). */
TGT static void pack_a_avx2_f32(const float *a, int64_t rs, int64_t kc,
                                int64_t count, float *ap)
{
  int64_t p = 0;
  for (; p + 8 <= kc; p += 8) {
    __m256 r[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
      r[i] = i < count && i < AP_MR ? _mm256_loadu_ps(a + i * rs + p)
                                    : _mm256_setzero_ps();
    transpose8_ps(r);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++)
      store6_ps(ap + (p + j) * AP_MR, r[j]);
  }
  for (; p < kc; p++)
    for (int i = 0; i < AP_MR; i++)
      ap[p * AP_MR + i] = i < count ? a[i * rs + p] : 0.0f;
}

/* pack_at: `count` rows of A stored transposed (A(i, p) at a[p*cs + i])
   as 6-row panels, row p of the group read once: six contiguous floats
   per panel as 4 + 2 (never past the last row); the last partial panel
   zero-padded.  The group's bytes of row p + AT_AHEAD are prefetched: A^T
   is often cold (an activation saved by the forward) and rows cs apart
   defeat the hardware prefetchers (512 x 128 x 512 from cold A^T: 103 ->
   112 GF/s, mean, Zen 5). */
enum { AT_AHEAD = 16 };
TGT static void pack_at_avx2_f32(const float *a, int64_t cs, int64_t kc,
                                 int64_t count, float *ap)
{
  int64_t full = count / AP_MR, rem = count % AP_MR;
  for (int64_t p = 0; p < kc; p++) {
    const float *s = a + p * cs;
    float *d = ap + p * AP_MR;
    if (p + AT_AHEAD < kc) /* the group's bytes of a later row */
      for (int64_t o = 0; o < count + 15; o += 16)
        _mm_prefetch((const char *)(s + AT_AHEAD * cs + o), _MM_HINT_T0);
    for (int64_t q = 0; q < full; q++, s += AP_MR, d += AP_MR * kc) {
      _mm_storeu_ps(d, _mm_loadu_ps(s));
      _mm_storel_pi((__m64 *)(d + 4),
                    _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)(s + 4)));
    }
    for (int i = 0; rem && i < AP_MR; i++)
      d[i] = i < rem ? s[i] : 0.0f;
  }
}

/* pack_b: npanels full 16-column panels, row by row across panels. */
TGT static void pack_b_avx2_f32(const float *b, int64_t rs, int64_t kc,
                                int64_t npanels, float *bp)
{
  for (int64_t p = 0; p < kc; p++) {
    const float *src = b + p * rs;
    float *dst = bp + p * AP_NR;
    for (int64_t q = 0; q < npanels; q++) {
      __m256 x0 = _mm256_loadu_ps(src + q * AP_NR);
      __m256 x1 = _mm256_loadu_ps(src + q * AP_NR + 8);
      _mm256_storeu_ps(dst + q * AP_NR * kc, x0);
      _mm256_storeu_ps(dst + q * AP_NR * kc + 8, x1);
    }
  }
}

/* pack_bt: the same from B stored transposed (B(p, j) at b[j*cs + p]):
   8 x 8 blocks through the transpose. */
TGT static void pack_bt_avx2_f32(const float *b, int64_t cs, int64_t kc,
                                 int64_t npanels, float *bp)
{
  for (int64_t q = 0; q < npanels; q++) {
    const float *bq = b + q * AP_NR * cs;
    float *dst = bp + q * AP_NR * kc;
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8)
#pragma GCC unroll 2
      for (int h = 0; h < 2; h++) {
        __m256 r[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
          r[i] = _mm256_loadu_ps(bq + (h * 8 + i) * cs + p);
        transpose8_ps(r);
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++)
          _mm256_storeu_ps(dst + (p + j) * AP_NR + h * 8, r[j]);
      }
    for (; p < kc; p++)
      for (int j = 0; j < AP_NR; j++)
        dst[p * AP_NR + j] = bq[j * cs + p];
  }
}

/* Edge tile: rows i < mr <= R, columns j < nr <= 8 * V (R, V constant
   after inlining); C is read and written through lane masks. */
__attribute__((always_inline)) TGT static inline void
edge_rv_avx2_f32(int R, int V, int64_t kc, const float *ap, const float *bp,
                 int64_t ars, int64_t lda, int64_t ldb, float *c,
                 int64_t ldc, int load, int mr, int nr)
{
  __m256 acc[AP_MR][2];
  __m256i mk[2];
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  mk[0] = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), lane);
  mk[1] = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr - 8), lane);
#pragma GCC unroll 6
  for (int i = 0; i < R; i++)
    acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; p++, ap += lda, bp += ldb) {
    __m256 b0 = _mm256_loadu_ps(bp);
    __m256 b1 = V > 1 ? _mm256_loadu_ps(bp + 8) : b0;
#pragma GCC unroll 6
    for (int i = 0; i < R; i++) {
      __m256 a = _mm256_broadcast_ss(ap + i * ars);
      acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
      if (V > 1)
        acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < R; i++)
#pragma GCC unroll 2
    for (int v = 0; v < V; v++) {
      if (i >= mr)
        break;
      float *ci = c + i * ldc + 8 * v;
      __m256 r = acc[i][v];
      if (load)
        r = _mm256_add_ps(_mm256_maskload_ps(ci, mk[v]), r);
      _mm256_maskstore_ps(ci, mk[v], r);
    }
}

/* The edge tile for A(i, p) at ap[i*ars + p*lda]. */
__attribute__((always_inline)) TGT static inline void
edge_s_avx2_f32(int64_t kc, const float *ap, const float *bp, int64_t ars,
                int64_t lda, int64_t ldb, float *c, int64_t ldc, int load,
                int mr, int nr)
{
  int v2 = nr > 8;
  switch (mr) {
#define EDGE_CASE(R)                                                      \
  case R:                                                                 \
    if (v2)                                                               \
      edge_rv_avx2_f32(R, 2, kc, ap, bp, ars, lda, ldb, c, ldc, load, mr, \
                       nr);                                               \
    else                                                                  \
      edge_rv_avx2_f32(R, 1, kc, ap, bp, ars, lda, ldb, c, ldc, load, mr, \
                       nr);                                               \
    break;
    EDGE_CASE(1) EDGE_CASE(2) EDGE_CASE(3) EDGE_CASE(4) EDGE_CASE(5)
    EDGE_CASE(6)
#undef EDGE_CASE
  }
}

TGT static void edge_avx2_f32(int64_t kc, const float *ap, const float *bp,
                              int64_t lda, int64_t ldb, float *c,
                              int64_t ldc, int load, int mr, int nr)
{
  edge_s_avx2_f32(kc, ap, bp, 1, lda, ldb, c, ldc, load, mr, nr);
}

/* A in place by rows: A(i, p) at ap[i*lda + p]. */
TGT static void edge_ra_avx2_f32(int64_t kc, const float *ap,
                                 const float *bp, int64_t lda, int64_t ldb,
                                 float *c, int64_t ldc, int load, int mr,
                                 int nr)
{
  edge_s_avx2_f32(kc, ap, bp, lda, 1, ldb, c, ldc, load, mr, nr);
}

#define GK_PACK_A_F32 pack_a_avx2_f32
#define GK_PACK_B_F32 pack_b_avx2_f32
#define GK_PACK_BT_F32 pack_bt_avx2_f32
#define GK_PACK_AT_F32 pack_at_avx2_f32
#define GK_EDGE_F32 edge_avx2_f32
#define GK_EDGE_RA_F32 edge_ra_avx2_f32
