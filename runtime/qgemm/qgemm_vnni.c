/* qgemm_vnni.c -- the AVX-512 VNNI int8 tile kernel (qgemm_internal.h).
 *
 * Compiled with a per-function target attribute, like gemm_avx512.c;
 * qgemm.c calls it only after checking the CPU.  The 8 x 32 i32 tile
 * lives in 16 zmm accumulators; per group of 4 k it loads two vectors
 * of B (16 columns x 4 bytes each) and broadcasts 4 bytes of A per row:
 * 16 vpdpbusd (u8 x s8, 4 products per i32 lane, wrapping).  The
 * epilogue adds the row and column terms and requantizes 8 lanes at a
 * time in double, exactly as rlx_requant: the i32 -> f64 conversion is
 * exact and the product rounds once (the same IEEE operation); the
 * product is clamped to +-2^30 (results beyond saturate either way),
 * converted rounding half to even (as rint), and out_zp added and the
 * i8 saturation done in i32 (vpmovsdb).  Edge tiles store only their mr x nr part (byte masks).  The
 * lane sums of packed panels are vpdpbusd against bytes of 1; B panels
 * are packed with vpermt2b (AVX-512 VBMI, checked by qgemm.c).
 */
#include "runtime/qgemm/qgemm_internal.h"

#if RLX_HAVE_X86_SIMD
#include <immintrin.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

/* 8 i32 lanes -> rint(v * m) as i32, |v * m| first clamped to 2^30
   (beyond it every result saturates anyway). */
TGT static inline __m256i round8(__m256i v, __m512d m)
{
  __m512d r = _mm512_mul_pd(_mm512_cvtepi32_pd(v), m), lim = _mm512_set1_pd(0x1p30);
  r = _mm512_min_pd(_mm512_max_pd(r, -lim), lim);
  return _mm512_cvt_roundpd_epi32(r, _MM_FROUND_TO_NEAREST_INT |
                                         _MM_FROUND_NO_EXC);
}

/* 16 i32 accumulators -> sat8(rint(v * m) + zp) bytes, m the 16 column
   multipliers. */
TGT static inline __m128i requant16(__m512i v, const double *m, __m512i zp)
{
  __m256i lo = round8(_mm512_castsi512_si256(v), _mm512_loadu_pd(m));
  __m256i hi = round8(_mm512_extracti64x4_epi64(v, 1), _mm512_loadu_pd(m + 8));
  __m512i r = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  return _mm512_cvtsepi32_epi8(_mm512_add_epi32(r, zp));
}

/* The tile with NV = 1 or 2 vectors of 16 columns (after inlining). */
__attribute__((always_inline)) TGT static inline void
kern_nv(int nv, int64_t kq, const uint8_t *ap, const int8_t *bp,
        const int32_t *rowt, const int32_t *colt, const double *mc, int32_t ozp,
        int8_t *c, int64_t ldc, int mr, int nr)
{
  __m512i acc[2][QMR];
#pragma GCC unroll 8
  for (int i = 0; i < QMR; i++)
    acc[0][i] = acc[1][i] = _mm512_setzero_si512();
  for (int64_t q = 0; q < kq; q++, ap += QMR * 4, bp += QNR * 4) {
    __m512i b0 = _mm512_loadu_si512(bp), b1 = _mm512_loadu_si512(bp + 64);
#pragma GCC unroll 8
    for (int i = 0; i < QMR; i++) {
      int32_t a4;
      __builtin_memcpy(&a4, ap + 4 * i, 4);
      __m512i a = _mm512_set1_epi32(a4);
      acc[0][i] = _mm512_dpbusd_epi32(acc[0][i], a, b0);
      if (nv == 2)
        acc[1][i] = _mm512_dpbusd_epi32(acc[1][i], a, b1);
    }
  }
  __m512i zp = _mm512_set1_epi32(ozp);
#pragma GCC unroll 2
  for (int h = 0; h < nv; h++) {
    __m512i ct = _mm512_loadu_si512(colt + 16 * h);
    int left = nr - 16 * h;
    __mmask16 k = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
#pragma GCC unroll 8
    for (int i = 0; i < QMR && i < mr; i++) {
      __m512i v = _mm512_add_epi32(
          _mm512_add_epi32(acc[h][i], _mm512_set1_epi32(rowt[i])), ct);
      _mm_mask_storeu_epi8(c + i * ldc + 16 * h, k,
                           requant16(v, mc + 16 * h, zp));
    }
  }
}

TGT static void kern_vnni(int64_t kq, const uint8_t *ap, const int8_t *bp,
                          const int32_t *rowt, const int32_t *colt,
                          const double *mc, int32_t ozp, int8_t *c, int64_t ldc,
                          int mr, int nr)
{
  if (nr > 16)
    kern_nv(2, kq, ap, bp, rowt, colt, mc, ozp, c, ldc, mr, nr);
  else
    kern_nv(1, kq, ap, bp, rowt, colt, mc, ozp, c, ldc, mr, nr);
}

/* Lane sums with vpdpbusd against bytes of 1: u8 A lanes times s8 ones,
   u8 ones times s8 B lanes. */
TGT static void sums_a(const uint8_t *ap, int64_t kq, int32_t *out)
{
  __m256i s = _mm256_setzero_si256(), one = _mm256_set1_epi8(1);
  for (int64_t q = 0; q < kq; q++)
    s = _mm256_dpbusd_epi32(s, _mm256_loadu_si256((const void *)(ap + 32 * q)),
                            one);
  _mm256_storeu_si256((void *)out, s);
}

TGT static void sums_b(const int8_t *bp, int64_t kq, int32_t *out)
{
  __m512i s0 = _mm512_setzero_si512(), s1 = s0, one = _mm512_set1_epi8(1);
  for (int64_t q = 0; q < kq; q++, bp += QNR * 4) {
    s0 = _mm512_dpbusd_epi32(s0, one, _mm512_loadu_si512(bp));
    s1 = _mm512_dpbusd_epi32(s1, one, _mm512_loadu_si512(bp + 64));
  }
  _mm512_storeu_si512(out, s0);
  _mm512_storeu_si512(out + 16, s1);
}

/* One group of 4 rows: two vpermt2b interleave rows 0-1 (one zmm) and
   2-3 (another); masked loads zero the columns past nn and the rows
   past k, and never touch memory outside b. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) static void
pack_b(const int8_t *b, int64_t ldb, int64_t k, int nn, int64_t kq,
       int8_t *bp)
{
  uint8_t idx[2][64];
  for (int h = 0; h < 2; h++)
    for (int j = 0; j < 16; j++)
      for (int t = 0; t < 4; t++)
        idx[h][4 * j + t] = (uint8_t)((t >> 1) * 64 + (t & 1) * 32 + 16 * h + j);
  __m512i i0 = _mm512_loadu_si512(idx[0]), i1 = _mm512_loadu_si512(idx[1]);
  __mmask32 cols = nn >= 32 ? 0xffffffffu : (__mmask32)((1u << nn) - 1);
  for (int64_t q = 0; q < kq; q++, bp += QNR * 4) {
    __m256i r[4];
    for (int t = 0; t < 4; t++) {
      int64_t p = 4 * q + t;
      r[t] = _mm256_maskz_loadu_epi8(p < k ? cols : 0,
                                     b + (p < k ? p : 0) * ldb);
    }
    __m512i lo = _mm512_inserti64x4(_mm512_castsi256_si512(r[0]), r[1], 1);
    __m512i hi = _mm512_inserti64x4(_mm512_castsi256_si512(r[2]), r[3], 1);
    _mm512_storeu_si512(bp, _mm512_permutex2var_epi8(lo, i0, hi));
    _mm512_storeu_si512(bp + 64, _mm512_permutex2var_epi8(lo, i1, hi));
  }
}

static int cpu(void)
{
  return __builtin_cpu_supports("avx512vnni") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

const RlxQIsa rlx_qisa_avx512vnni = {"avx512vnni", RLX_ISA_AVX512, 128, cpu,
                                     kern_vnni, sums_a, sums_b, pack_b};
#else
const RlxQIsa rlx_qisa_avx512vnni = {.name = "avx512vnni",
                                     .level = RLX_ISA_AVX512};
#endif
