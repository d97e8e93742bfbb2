/* gemm_avx512.c -- AVX-512F GEMM micro-kernels (f32 14x32 and 12x32,
 * f64 14x16) and their packing routines.
 *
 * Compiled with a per-function target attribute, so the file builds with
 * default flags and the code only runs after gemm.c has checked
 * __builtin_cpu_supports("avx512f").  Each kernel keeps the whole tile in
 * 28 zmm accumulators (starting at zero), loads two vectors of B and
 * broadcasts one A element per row per step; the C tile is prefetched on
 * entry and added once at the end, so its cache misses overlap the FMA
 * loop (contract: gemm_internal.h).  Blocking: the 14 x 384 A panel
 * (21 KiB) stays in L1 (32 KiB on Cascade Lake, 48 KiB on Sapphire
 * Rapids), the 384 x 512 B block (768 KiB) in L2 (1 / 2 MiB).  NC = 512
 * (was 448) keeps N = 512 in one block: 3-4% on the MLP's M = 128
 * GEMMs on Sapphire Rapids, no loss at 1024^3 on Cascade Lake.
 */
#include "runtime/gemm/gemm_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RLX_NO_SIMD)
#include <immintrin.h>

#define TGT __attribute__((target("avx512f")))
#define MR 14
#ifndef PF_C
#define PF_C _MM_HINT_T0
#endif

/* The f32 R x 32 tile (R = 14 or 12 after inlining). */
__attribute__((always_inline)) TGT static inline void
kern_r_f32(int R, int64_t kc, const float *ap, const float *bp,
           int64_t lda, int64_t ldb, float *c, int64_t ldc, int load)
{
  __m512 c0[MR], c1[MR];
#pragma GCC unroll 16
  for (int i = 0; i < R; i++) {
    _mm_prefetch((const char *)(c + i * ldc), PF_C);
    _mm_prefetch((const char *)(c + i * ldc + 16), PF_C);
    c0[i] = c1[i] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < kc; p++) {
    __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16);
    _mm_prefetch((const char *)(bp + 8 * ldb), _MM_HINT_T0);
#pragma GCC unroll 16
    for (int i = 0; i < R; i++) {
      __m512 a = _mm512_set1_ps(ap[i]);
      c0[i] = _mm512_fmadd_ps(a, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(a, b1, c1[i]);
    }
    ap += lda;
    bp += ldb;
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; i++) {
    if (load) {
      c0[i] = _mm512_add_ps(_mm512_loadu_ps(c + i * ldc), c0[i]);
      c1[i] = _mm512_add_ps(_mm512_loadu_ps(c + i * ldc + 16), c1[i]);
    }
    _mm512_storeu_ps(c + i * ldc, c0[i]);
    _mm512_storeu_ps(c + i * ldc + 16, c1[i]);
  }
}

TGT static void kern_f32(int64_t kc, const float *ap, const float *bp,
                         int64_t lda, int64_t ldb, float *c, int64_t ldc,
                         int load)
{
  kern_r_f32(MR, kc, ap, bp, lda, ldb, c, ldc, load);
}

TGT static void kern12_f32(int64_t kc, const float *ap, const float *bp,
                           int64_t lda, int64_t ldb, float *c, int64_t ldc,
                           int load)
{
  kern_r_f32(12, kc, ap, bp, lda, ldb, c, ldc, load);
}

/* Edge tile of mr <= R rows and nr <= 16 * V columns, with R and V
   compile-time constants after inlining.  Each element sees exactly the
   operations of kern_f32 (zero, FMA chain, then + C), so results do
   not depend on whether an element falls in an edge tile. */
__attribute__((always_inline)) TGT static inline void
edge_rv_f32(int R, int V, int64_t kc, const float *ap, const float *bp,
            int64_t lda, int64_t ldb, float *c, int64_t ldc, int load,
            int mr, int nr)
{
  __m512 acc[MR][2];
  __mmask16 mk[2];
  mk[0] = nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1);
  mk[1] = nr >= 32 ? 0xFFFF : nr <= 16 ? 0
                            : (__mmask16)((1u << (nr - 16)) - 1);
#pragma GCC unroll 16
  for (int i = 0; i < R; i++)
    acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; p++, ap += lda, bp += ldb) {
    __m512 b0 = _mm512_loadu_ps(bp);
    __m512 b1 = V > 1 ? _mm512_loadu_ps(bp + 16) : b0;
#pragma GCC unroll 16
    for (int i = 0; i < R; i++) {
      __m512 a = _mm512_set1_ps(ap[i]);
      acc[i][0] = _mm512_fmadd_ps(a, b0, acc[i][0]);
      if (V > 1)
        acc[i][1] = _mm512_fmadd_ps(a, b1, acc[i][1]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; i++)
#pragma GCC unroll 2
    for (int v = 0; v < V; v++) {
      if (i >= mr)
        break;
      float *ci = c + i * ldc + 16 * v;
      __m512 r = acc[i][v];
      if (load)
        r = _mm512_add_ps(_mm512_maskz_loadu_ps(mk[v], ci), r);
      _mm512_mask_storeu_ps(ci, mk[v], r);
    }
}

TGT static void edge_f32(int64_t kc, const float *ap, const float *bp,
                         int64_t lda, int64_t ldb, float *c, int64_t ldc,
                         int load,
                         int mr, int nr)
{
  if (nr <= 16) {
    if (mr <= 4)
      edge_rv_f32(4, 1, kc, ap, bp, lda, ldb, c, ldc, load, mr, nr);
    else if (mr <= 8)
      edge_rv_f32(8, 1, kc, ap, bp, lda, ldb, c, ldc, load, mr, nr);
    else
      edge_rv_f32(MR, 1, kc, ap, bp, lda, ldb, c, ldc, load, mr, nr);
  } else {
    if (mr <= 4)
      edge_rv_f32(4, 2, kc, ap, bp, lda, ldb, c, ldc, load, mr, nr);
    else if (mr <= 8)
      edge_rv_f32(8, 2, kc, ap, bp, lda, ldb, c, ldc, load, mr, nr);
    else
      edge_rv_f32(MR, 2, kc, ap, bp, lda, ldb, c, ldc, load, mr, nr);
  }
}

/* Edge tiles of the 12-row table (never more than 12 rows of A). */
TGT static void edge12_f32(int64_t kc, const float *ap, const float *bp,
                           int64_t lda, int64_t ldb, float *c,
                           int64_t ldc, int load, int mr, int nr)
{
  int v = nr > 16 ? 2 : 1;
  if (mr <= 4 && v == 1)
    edge_rv_f32(4, 1, kc, ap, bp, lda, ldb, c, ldc, load, mr, nr);
  else if (mr <= 4)
    edge_rv_f32(4, 2, kc, ap, bp, lda, ldb, c, ldc, load, mr, nr);
  else if (mr <= 8 && v == 1)
    edge_rv_f32(8, 1, kc, ap, bp, lda, ldb, c, ldc, load, mr, nr);
  else if (mr <= 8)
    edge_rv_f32(8, 2, kc, ap, bp, lda, ldb, c, ldc, load, mr, nr);
  else if (v == 1)
    edge_rv_f32(12, 1, kc, ap, bp, lda, ldb, c, ldc, load, mr, nr);
  else
    edge_rv_f32(12, 2, kc, ap, bp, lda, ldb, c, ldc, load, mr, nr);
}

#include "runtime/simd/avx512_transpose.h"

/* pack_a for R = 14 or 12 rows, of which the first `rows` are present
   (the rest packed as zeros): 16 columns at a time. */
__attribute__((always_inline)) TGT static inline void
pack_a_r_f32(int R, const float *a, int64_t rs, int64_t kc, int64_t rows,
             float *ap)
{
  int64_t p = 0;
  for (; p + 16 <= kc; p += 16) {
    __m512 r[16];
    for (int i = 0; i < R; i++)
      r[i] = i < rows ? _mm512_loadu_ps(a + i * rs + p)
                      : _mm512_setzero_ps();
    for (int i = R; i < 16; i++)
      r[i] = _mm512_setzero_ps();
    transpose16(r);
    for (int j = 0; j < 16; j++)
      _mm512_mask_storeu_ps(ap + (p + j) * R, (1 << R) - 1, r[j]);
  }
  for (; p < kc; p++)
    for (int i = 0; i < R; i++)
      ap[p * R + i] = i < rows ? a[i * rs + p] : 0.0f;
}

TGT static void pack_a_f32(const float *a, int64_t rs, int64_t kc,
                           int64_t count, float *ap)
{
  pack_a_r_f32(MR, a, rs, kc, count, ap);
}

TGT static void pack_a12_f32(const float *a, int64_t rs, int64_t kc,
                             int64_t count, float *ap)
{
  pack_a_r_f32(12, a, rs, kc, count, ap);
}

/* pack_at for R = 14 or 12 (contract: gemm_internal.h): `count` rows
   of A stored transposed (A(i, p) at a[p*cs + i]) as R-row panels, row
   p of the group read once, R contiguous floats per panel under a
   mask; the last partial panel zero-padded.  The group's bytes of row
   p + 16 are prefetched: A^T is often cold (an activation saved by the
   forward), and rows cs apart defeat the hardware prefetchers
   (512 x 128 x 512 from cold A^T: 162 -> 196 GF/s, mean, Zen 5). */
__attribute__((always_inline)) TGT static inline void
pack_at_r_f32(int R, const float *a, int64_t cs, int64_t kc, int64_t count,
              float *ap)
{
  int64_t full = count / R, rem = count % R;
  __mmask16 mr = (__mmask16)((1u << R) - 1), mrem = (__mmask16)((1u << rem) - 1);
  for (int64_t p = 0; p < kc; p++) {
    const float *s = a + p * cs;
    float *d = ap + p * R;
    if (p + 16 < kc)
      for (int64_t o = 0; o < count + 15; o += 16)
        _mm_prefetch((const char *)(s + 16 * cs + o), _MM_HINT_T0);
    for (int64_t q = 0; q < full; q++, s += R, d += R * kc)
      _mm512_mask_storeu_ps(d, mr, _mm512_maskz_loadu_ps(mr, s));
    if (rem)
      _mm512_mask_storeu_ps(d, mr, _mm512_maskz_loadu_ps(mrem, s));
  }
}

TGT static void pack_at_f32(const float *a, int64_t cs, int64_t kc,
                            int64_t count, float *ap)
{
  pack_at_r_f32(MR, a, cs, kc, count, ap);
}

TGT static void pack_at12_f32(const float *a, int64_t cs, int64_t kc,
                              int64_t count, float *ap)
{
  pack_at_r_f32(12, a, cs, kc, count, ap);
}

/* pack_b for NR = 32: row by row across all panels. */
TGT static void pack_b_f32(const float *b, int64_t rs, int64_t kc,
                           int64_t npanels, float *bp)
{
  for (int64_t p = 0; p < kc; p++)
    for (int64_t q = 0; q < npanels; q++) {
      const float *src = b + p * rs + q * 32;
      float *dst = bp + q * 32 * kc + p * 32;
      _mm512_store_ps(dst, _mm512_loadu_ps(src));
      _mm512_store_ps(dst + 16, _mm512_loadu_ps(src + 16));
    }
}

/* out[j] lane i = r[i] lane j for 8 x 8 doubles. */
TGT static inline void transpose8(const __m512d r[8], __m512d out[8])
{
  __m512d t[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
  }
  /* t[2g + o], lane L: rows 2g, 2g+1 of column 2L + o. */
  for (int o = 0; o < 2; o++) {
    __m512d u0 = _mm512_shuffle_f64x2(t[o], t[2 + o], 0x88);
    __m512d u1 = _mm512_shuffle_f64x2(t[4 + o], t[6 + o], 0x88);
    __m512d u2 = _mm512_shuffle_f64x2(t[o], t[2 + o], 0xDD);
    __m512d u3 = _mm512_shuffle_f64x2(t[4 + o], t[6 + o], 0xDD);
    out[o] = _mm512_shuffle_f64x2(u0, u1, 0x88);
    out[4 + o] = _mm512_shuffle_f64x2(u0, u1, 0xDD);
    out[2 + o] = _mm512_shuffle_f64x2(u2, u3, 0x88);
    out[6 + o] = _mm512_shuffle_f64x2(u2, u3, 0xDD);
  }
}

/* pack_a for MR = 14 doubles (the first `count` rows present, the rest
   zeros): rows 0-7 and 8-13, 8 columns at a time. */
TGT static void pack_a_f64(const double *a, int64_t rs, int64_t kc,
                           int64_t count, double *ap)
{
  int64_t p = 0;
  for (; p + 8 <= kc; p += 8)
    for (int h = 0; h < 2; h++) {
      __m512d r[8], out[8];
      for (int i = 0; i < 8; i++)
        r[i] = h * 8 + i < count
                   ? _mm512_loadu_pd(a + (h * 8 + i) * rs + p)
                   : _mm512_setzero_pd();
      transpose8(r, out);
      __mmask8 keep = h ? (1 << (MR - 8)) - 1 : 0xFF;
      for (int j = 0; j < 8; j++)
        _mm512_mask_storeu_pd(ap + (p + j) * MR + h * 8, keep, out[j]);
    }
  for (; p < kc; p++)
    for (int i = 0; i < MR; i++)
      ap[p * MR + i] = i < count ? a[i * rs + p] : 0.0;
}

/* pack_b for NR = 16 doubles: row by row across all panels. */
TGT static void pack_b_f64(const double *b, int64_t rs, int64_t kc,
                           int64_t npanels, double *bp)
{
  for (int64_t p = 0; p < kc; p++)
    for (int64_t q = 0; q < npanels; q++) {
      const double *src = b + p * rs + q * 16;
      double *dst = bp + q * 16 * kc + p * 16;
      _mm512_store_pd(dst, _mm512_loadu_pd(src));
      _mm512_store_pd(dst + 8, _mm512_loadu_pd(src + 8));
    }
}

/* pack_b for NR = 32 when B is stored transposed (B(p,j) at
   b[j*cs + p]): 16 x 16 blocks through transpose16. */
TGT static void pack_bt_f32(const float *b, int64_t cs, int64_t kc,
                            int64_t npanels, float *bp)
{
  for (int64_t q = 0; q < npanels; q++) {
    const float *bq = b + q * 32 * cs;
    float *dst = bp + q * 32 * kc;
    int64_t p = 0;
    for (; p + 16 <= kc; p += 16)
      for (int h = 0; h < 2; h++) {
        __m512 r[16];
        for (int i = 0; i < 16; i++)
          r[i] = _mm512_loadu_ps(bq + (h * 16 + i) * cs + p);
        transpose16(r);
        for (int j = 0; j < 16; j++)
          _mm512_store_ps(dst + (p + j) * 32 + h * 16, r[j]);
      }
    for (; p < kc; p++)
      for (int j = 0; j < 32; j++)
        dst[p * 32 + j] = bq[j * cs + p];
  }
}

TGT static void kern_f64(int64_t kc, const double *ap, const double *bp,
                         int64_t lda, int64_t ldb, double *c,
                         int64_t ldc, int load)
{
  __m512d c0[MR], c1[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; i++) {
    _mm_prefetch((const char *)(c + i * ldc), PF_C);
    _mm_prefetch((const char *)(c + i * ldc + 8), PF_C);
    c0[i] = c1[i] = _mm512_setzero_pd();
  }
  for (int64_t p = 0; p < kc; p++) {
    __m512d b0 = _mm512_loadu_pd(bp), b1 = _mm512_loadu_pd(bp + 8);
    _mm_prefetch((const char *)(bp + 8 * ldb), _MM_HINT_T0);
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
      __m512d a = _mm512_set1_pd(ap[i]);
      c0[i] = _mm512_fmadd_pd(a, b0, c0[i]);
      c1[i] = _mm512_fmadd_pd(a, b1, c1[i]);
    }
    ap += lda;
    bp += ldb;
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; i++) {
    if (load) {
      c0[i] = _mm512_add_pd(_mm512_loadu_pd(c + i * ldc), c0[i]);
      c1[i] = _mm512_add_pd(_mm512_loadu_pd(c + i * ldc + 8), c1[i]);
    }
    _mm512_storeu_pd(c + i * ldc, c0[i]);
    _mm512_storeu_pd(c + i * ldc + 8, c1[i]);
  }
}

const RlxGemmCfgF32 rlx_gemm_avx512_f32 = {
  .name = "avx512", .mr = MR, .nr = 32, .kc = 384, .nc = 512,
  .kern = kern_f32, .pack_a = pack_a_f32, .pack_b = pack_b_f32,
  .pack_bt = pack_bt_f32, .pack_at = pack_at_f32, .edge = edge_f32,
  .alt = &rlx_gemm_avx512_f32_12};
/* 12 x 32 tiles: chosen by gemm.c where M wastes fewer padded rows
   (M = 128: 10 x 12 + an 8-row edge, against 9 x 14 + a 4-row one). */
const RlxGemmCfgF32 rlx_gemm_avx512_f32_12 = {
  .name = "avx512", .mr = 12, .nr = 32, .kc = 384, .nc = 512,
  .kern = kern12_f32, .pack_a = pack_a12_f32, .pack_b = pack_b_f32,
  .pack_bt = pack_bt_f32, .pack_at = pack_at12_f32, .edge = edge12_f32};
const RlxGemmCfgF64 rlx_gemm_avx512_f64 = {
  .name = "avx512", .mr = MR, .nr = 16, .kc = 256, .nc = 512,
  .kern = kern_f64, .pack_a = pack_a_f64, .pack_b = pack_b_f64};
#else
const RlxGemmCfgF32 rlx_gemm_avx512_f32 = {.name = "avx512", .mr = 1,
                                           .nr = 1, .kc = 1, .nc = 1};
const RlxGemmCfgF32 rlx_gemm_avx512_f32_12 = {.name = "avx512", .mr = 1,
                                              .nr = 1, .kc = 1, .nc = 1};
const RlxGemmCfgF64 rlx_gemm_avx512_f64 = {.name = "avx512", .mr = 1,
                                           .nr = 1, .kc = 1, .nc = 1};
#endif
