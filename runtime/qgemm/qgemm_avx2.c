/* qgemm_avx2.c -- the int8 tile kernels of AVX2-level CPUs
 * (qgemm_internal.h): AVX-VNNI (VEX vpdpbusd on 256-bit vectors; Intel
 * Alder Lake and later, AMD Zen 5) and plain AVX2.
 *
 * AVX-VNNI runs the 8 x 32 tile as rows 0-2, 3-5 and 6-7 across the
 * panel's 4 vectors of 8 columns (2 when nr <= 16): 12 accumulators, so
 * that 10 or more vpdpbusd are in flight (about 5 cycles' latency, 2
 * per cycle); per group of 4 k a 4-byte broadcast of A per row times
 * the B vectors (8 columns x 4 bytes), most of which stay in registers.
 *
 * AVX2 has no exact byte dot product: vpmaddubsw (u8 x s8 pairs into
 * i16) saturates on our operands (2 * 255 * -128 = -65280), so the
 * kernel widens the bytes to 16 bits (A zero-, B sign-extended) and
 * multiplies with vpmaddwd (pairs into i32, exact) and vpaddd.  It keeps
 * the packed layouts: 16 bytes of a B panel (4 columns x 4 k) widen to
 * one vector whose i32 lanes hold each column's two pair sums, and row
 * i's 4 widened A values are one 64-bit broadcast.  The tile runs as
 * strips of 8 rows x 4 columns (8 accumulators, one widened B vector);
 * A is widened once per chunk of KCQ groups into a stack buffer, and the
 * strips' sums wait in another between chunks.  The lane sums (u8 A and
 * s8 B against bytes of 1) do use vpmaddubsw: their pairs stay within
 * +-510.
 *
 * Both requantize 8 lanes at a time in double like qgemm_vnni.c, with
 * the vector layer's f64 operations: the i32 -> f64 conversion is
 * exact, the product rounds once (as in rlx_requant) and is clamped to
 * +-2^30 (results beyond saturate either way), rounded half to even,
 * and out_zp added and the i8 saturation done in integers
 * (vpackssdw, vpacksswb).
 */
#include "runtime/qgemm/qgemm_internal.h"

#if RLX_HAVE_X86_SIMD
#include <cpuid.h>
#include <string.h>

#define VEC_F64 1
#include "runtime/simd/vec_avx2.h"

#define TGT_VNNI __attribute__((target("avx2,fma,avxvnni")))

enum { KCQ = 64 }; /* groups of 4 k per chunk of the AVX2 kernel */

/* 4 i32 lanes -> rint(v * m) as i32, |v * m| first clamped to 2^30. */
TGT static inline __m128i round4(__m128i v, const double *m)
{
  VT r = VMUL(_mm256_cvtepi32_pd(v), VLOADU(m));
  r = VMIN(VMAX(r, VSET1(-0x1p30)), VSET1(0x1p30));
  return _mm256_cvttpd_epi32(VROUND(r));
}

/* Columns j < n (1..8) of one row: c[j] = requant(s[j] + rowt +
   colt[j]) with the multipliers m[j]. */
TGT static inline void store8(int8_t *c, int n, __m256i s, int32_t rowt,
                              const int32_t *colt, const double *m,
                              int32_t ozp)
{
  s = _mm256_add_epi32(_mm256_add_epi32(s, _mm256_set1_epi32(rowt)),
                       _mm256_loadu_si256((const __m256i *)colt));
  __m128i zp = _mm_set1_epi32(ozp);
  __m128i lo = _mm_add_epi32(round4(_mm256_castsi256_si128(s), m), zp);
  __m128i hi =
      _mm_add_epi32(round4(_mm256_extracti128_si256(s, 1), m + 4), zp);
  __m128i w = _mm_packs_epi32(lo, hi), b = _mm_packs_epi16(w, w);
  if (n == 8) {
    _mm_storel_epi64((__m128i *)c, b);
  } else {
    int8_t t[16];
    _mm_storeu_si128((__m128i *)t, b);
    memcpy(c, t, (size_t)n);
  }
}

/* Rows r0 .. r0+R-1 of the tile, NV vectors of 8 columns: R*NV
   accumulators. */
__attribute__((always_inline)) TGT_VNNI static inline void
rows_vnni(int R, int NV, int r0, int64_t kq, const uint8_t *ap,
          const int8_t *bp, const int32_t *rowt, const int32_t *colt,
          const double *mc, int32_t ozp, int8_t *c, int64_t ldc, int mr,
          int nr)
{
  __m256i acc[3][4];
#pragma GCC unroll 3
  for (int i = 0; i < R; i++)
#pragma GCC unroll 4
    for (int h = 0; h < NV; h++)
      acc[i][h] = _mm256_setzero_si256();
  const uint8_t *a = ap + 4 * r0;
  for (int64_t q = 0; q < kq; q++, a += QMR * 4, bp += QNR * 4) {
#pragma GCC unroll 3
    for (int i = 0; i < R; i++) {
      int32_t a4;
      memcpy(&a4, a + 4 * i, 4);
      __m256i av = _mm256_set1_epi32(a4);
#pragma GCC unroll 4
      for (int h = 0; h < NV; h++)
        acc[i][h] = _mm256_dpbusd_avx_epi32(
            acc[i][h], av,
            _mm256_loadu_si256((const __m256i *)(bp + 32 * h)));
    }
  }
  __m256i s[3][4];
#pragma GCC unroll 3
  for (int i = 0; i < R; i++)
#pragma GCC unroll 4
    for (int h = 0; h < NV; h++)
      s[i][h] = acc[i][h];
  for (int i = 0; i < R && r0 + i < mr; i++)
    for (int j = 0; j < nr; j += 8)
      store8(c + (r0 + i) * ldc + j, nr - j < 8 ? nr - j : 8, s[i][j / 8],
             rowt[r0 + i], colt + j, mc + j, ozp);
}

/* The tile as rows 0-2, 3-5 and 6-7 (up to 12 accumulators). */
__attribute__((always_inline)) TGT_VNNI static inline void
tile_vnni(int NV, int64_t kq, const uint8_t *ap, const int8_t *bp,
          const int32_t *rowt, const int32_t *colt, const double *mc,
          int32_t ozp, int8_t *c, int64_t ldc, int mr, int nr)
{
  rows_vnni(3, NV, 0, kq, ap, bp, rowt, colt, mc, ozp, c, ldc, mr, nr);
  if (mr > 3)
    rows_vnni(3, NV, 3, kq, ap, bp, rowt, colt, mc, ozp, c, ldc, mr, nr);
  if (mr > 6)
    rows_vnni(2, NV, 6, kq, ap, bp, rowt, colt, mc, ozp, c, ldc, mr, nr);
}

TGT_VNNI static void kern_avxvnni(int64_t kq, const uint8_t *ap,
                                  const int8_t *bp, const int32_t *rowt,
                                  const int32_t *colt, const double *mc,
                                  int32_t ozp, int8_t *c, int64_t ldc, int mr,
                                  int nr)
{
  if (nr > 16)
    tile_vnni(4, kq, ap, bp, rowt, colt, mc, ozp, c, ldc, mr, nr);
  else
    tile_vnni(2, kq, ap, bp, rowt, colt, mc, ozp, c, ldc, mr, nr);
}

TGT static void kern_avx2(int64_t kq, const uint8_t *ap, const int8_t *bp,
                          const int32_t *rowt, const int32_t *colt,
                          const double *mc, int32_t ozp, int8_t *c,
                          int64_t ldc, int mr, int nr)
{
  /* s[g][i]: row i's pair sums of columns 4g..4g+3 (two lanes each) */
  __m256i s[QNR / 4][QMR];
  int16_t wa[KCQ * QMR * 4] __attribute__((aligned(32)));
  int ng = (nr + 7) / 8 * 2; /* whole 8-column halves for the epilogue */
  for (int g = 0; g < ng; g++)
    for (int i = 0; i < QMR; i++)
      s[g][i] = _mm256_setzero_si256();
  for (int64_t q0 = 0; q0 < kq; q0 += KCQ) {
    int nq = kq - q0 < KCQ ? (int)(kq - q0) : KCQ;
    const uint8_t *a = ap + q0 * QMR * 4;
    for (int e = 0; e < nq * QMR * 4; e += 16)
      _mm256_store_si256(
          (__m256i *)(wa + e),
          _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(a + e))));
    for (int g = 0; g < ng; g++) {
      __m256i acc[QMR];
#pragma GCC unroll 8
      for (int i = 0; i < QMR; i++)
        acc[i] = s[g][i];
      const int8_t *b = bp + q0 * QNR * 4 + 16 * g;
      for (int q = 0; q < nq; q++, b += QNR * 4) {
        __m256i bw =
            _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b));
#pragma GCC unroll 8
        for (int i = 0; i < QMR; i++) {
          int64_t a4;
          memcpy(&a4, wa + q * QMR * 4 + 4 * i, 8);
          acc[i] = _mm256_add_epi32(
              acc[i], _mm256_madd_epi16(_mm256_set1_epi64x(a4), bw));
        }
      }
#pragma GCC unroll 8
      for (int i = 0; i < QMR; i++)
        s[g][i] = acc[i];
    }
  }
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nr; j += 8) {
      /* [c0 c1 c4 c5 | c2 c3 c6 c7] -> columns in order */
      __m256i v = _mm256_permute4x64_epi64(
          _mm256_hadd_epi32(s[j / 4][i], s[j / 4 + 1][i]), 0xd8);
      store8(c + i * ldc + j, nr - j < 8 ? nr - j : 8, v, rowt[i], colt + j,
             mc + j, ozp);
    }
}

/* Lane sums: vpmaddubsw against bytes of 1 (pairs within +-510), then
   vpmaddwd against 16-bit ones. */
TGT static void sums_a(const uint8_t *ap, int64_t kq, int32_t *out)
{
  __m256i s = _mm256_setzero_si256(), one8 = _mm256_set1_epi8(1),
          one16 = _mm256_set1_epi16(1);
  for (int64_t q = 0; q < kq; q++) {
    __m256i v = _mm256_loadu_si256((const __m256i *)(ap + QMR * 4 * q));
    s = _mm256_add_epi32(
        s, _mm256_madd_epi16(_mm256_maddubs_epi16(v, one8), one16));
  }
  _mm256_storeu_si256((__m256i *)out, s);
}

TGT static void sums_b(const int8_t *bp, int64_t kq, int32_t *out)
{
  __m256i s[4], one8 = _mm256_set1_epi8(1), one16 = _mm256_set1_epi16(1);
  for (int h = 0; h < 4; h++)
    s[h] = _mm256_setzero_si256();
  for (int64_t q = 0; q < kq; q++, bp += QNR * 4)
    for (int h = 0; h < 4; h++) {
      __m256i v = _mm256_loadu_si256((const __m256i *)(bp + 32 * h));
      s[h] = _mm256_add_epi32(
          s[h], _mm256_madd_epi16(_mm256_maddubs_epi16(one8, v), one16));
    }
  for (int h = 0; h < 4; h++)
    _mm256_storeu_si256((__m256i *)(out + 8 * h), s[h]);
}

static int cpu_avx2(void)
{
  return __builtin_cpu_supports("avx2");
}

/* AVX-VNNI is CPUID.(EAX=7, ECX=1):EAX bit 4; read directly, as Clang
   14's __builtin_cpu_supports does not know "avxvnni" (GCC 11+ does). */
static int cpu_avxvnni(void)
{
  unsigned a, b, c, d;
  return __builtin_cpu_supports("avx2") &&
         __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1);
}

const RlxQIsa rlx_qisa_avxvnni = {"avxvnni", RLX_ISA_AVX2, 128, cpu_avxvnni,
                                  kern_avxvnni, sums_a, sums_b, NULL};
const RlxQIsa rlx_qisa_avx2 = {"avx2", RLX_ISA_AVX2, 128, cpu_avx2,
                               kern_avx2, sums_a, sums_b, NULL};
#else
const RlxQIsa rlx_qisa_avxvnni = {.name = "avxvnni", .level = RLX_ISA_AVX2};
const RlxQIsa rlx_qisa_avx2 = {.name = "avx2", .level = RLX_ISA_AVX2};
#endif
