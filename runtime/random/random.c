/* random.c -- counter-based random numbers (Philox-4x32-10, Salmon et
 * al., SC'11 "Parallel random numbers: as easy as 1, 2, 3"), and the
 * kernels of rng_uniform, rng_normal and sample (docs/random.md gives
 * the exact mapping from (seed, element) to bits, which is the
 * contract: it must never change).
 *
 * Every output element is a pure function of (seed, stream, element
 * index): the counter of Philox block j is (j mod 2^32, j >> 32,
 * stream, 0) and the key (seed mod 2^32, seed >> 32), so the work can
 * be split anyhow and the bits do not depend on the thread count.
 * Blocks are generated LANES at a time in plain arrays so that the
 * compiler vectorizes the 32x32->64-bit products (vpmuludq).
 */
#include "runtime/rlxrt.h"

#include <math.h>
#include <string.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u
#define LANES 16

#define INLINE static inline __attribute__((always_inline))

enum { STREAM_UNIFORM = 0, STREAM_NORMAL = 1, STREAM_SAMPLE = 2 };

void rlx_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                       uint32_t out[4])
{
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  for (uint32_t r = 0; r < 10; r++) {
    uint32_t k0 = key[0] + r * PHILOX_W0, k1 = key[1] + r * PHILOX_W1;
    uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
    c0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    c1 = (uint32_t)p1;
    c2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c3 = (uint32_t)p0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* Words w[0..3][l] of blocks j + l, l < LANES, of `stream`. */
INLINE void philox_lanes_c(uint64_t seed, uint32_t stream, uint64_t j,
                         uint32_t w[4][LANES])
{
  uint32_t c0[LANES], c1[LANES], c2[LANES], c3[LANES];
  for (int l = 0; l < LANES; l++) {
    c0[l] = (uint32_t)(j + (uint64_t)l);
    c1[l] = (uint32_t)((j + (uint64_t)l) >> 32);
    c2[l] = stream;
    c3[l] = 0;
  }
  for (uint32_t r = 0; r < 10; r++) {
    uint32_t k0 = (uint32_t)seed + r * PHILOX_W0;
    uint32_t k1 = (uint32_t)(seed >> 32) + r * PHILOX_W1;
    for (int l = 0; l < LANES; l++) {
      uint64_t p0 = (uint64_t)PHILOX_M0 * c0[l];
      uint64_t p1 = (uint64_t)PHILOX_M1 * c2[l];
      uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[l] ^ k0;
      uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[l] ^ k1;
      c1[l] = (uint32_t)p1;
      c3[l] = (uint32_t)p0;
      c0[l] = n0;
      c2[l] = n2;
    }
  }
  for (int l = 0; l < LANES; l++) {
    w[0][l] = c0[l];
    w[1][l] = c1[l];
    w[2][l] = c2[l];
    w[3][l] = c3[l];
  }
}

/* [0, 1): the top 24 bits of w times 2^-24.  Integers converted through
 * int32_t (exact: they fit in 25 bits) so that the lane loops vectorize
 * without AVX-512's unsigned conversions. */
INLINE float u01(uint32_t w) { return (float)(int32_t)(w >> 8) * 0x1p-24f; }

/* The 4 values of each of LANES blocks, v[4 * l + k] (block l, word k),
 * from their words. */
INLINE void uniform_from(uint32_t w[4][LANES], float *v)
{
  for (int l = 0; l < LANES; l++)
    for (int k = 0; k < 4; k++)
      v[4 * l + k] = u01(w[k][l]);
}

/* ln x for x in (0, 1] (Cephes logf: x = m 2^e, m in [sqrt(1/2),
 * sqrt(2)), a degree-9 polynomial in m - 1; relative error ~1e-7),
 * branch-free so that the lane loops vectorize. */
INLINE float log01(float x)
{
  uint32_t i;
  memcpy(&i, &x, 4);
  int32_t e = (int32_t)(i >> 23) - 126;
  i = (i & 0x7fffffu) | 0x3f000000u; /* m in [0.5, 1) */
  float m;
  memcpy(&m, &i, 4);
  int lo = m < 0.70710678f;
  e -= lo;
  float f = m * (float)(1 + lo) - 1.0f, z = f * f; /* m + m when lo */
  float y = 7.0376836292e-2f;
  y = y * f - 1.1514610310e-1f;
  y = y * f + 1.1676998740e-1f;
  y = y * f - 1.2420140846e-1f;
  y = y * f + 1.4249322787e-1f;
  y = y * f - 1.6668057665e-1f;
  y = y * f + 2.0000714765e-1f;
  y = y * f - 2.4999993993e-1f;
  y = y * f + 3.3333331174e-1f;
  y = y * f * z - 2.12194440e-4f * (float)e - 0.5f * z;
  return f + y + 0.693359375f * (float)e;
}

/* cos and sin of 2 pi k 2^-24 for a 24-bit k: the quadrant from the top
 * bits, the rest |a| <= pi/4 through Cephes' sinf/cosf polynomials
 * (absolute error ~1e-7), branch-free. */
INLINE void sincos_turn(uint32_t k, float *c, float *s)
{
  uint32_t q = (k + 0x200000u) >> 22;
  float a = (float)((int32_t)k - (int32_t)(q << 22)) *
            (6.28318530717958647692f * 0x1p-24f);
  float z = a * a;
  float sn = a + a * z * ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z -
                          1.6666654611e-1f);
  float cs = 1.0f - 0.5f * z +
             z * z * ((2.443315711809948e-5f * z - 1.388731625493765e-3f) *
                      z + 4.166664568298827e-2f);
  /* quadrant q: (c, s) = (cs, sn), (-sn, cs), (-cs, -sn), (sn, -cs),
     by bit selects and sign flips (no branch for the vectorizer) */
  uint32_t bc, bs, odd = 0u - (q & 1);
  memcpy(&bc, &cs, 4);
  memcpy(&bs, &sn, 4);
  uint32_t c0 = (bs & odd) | (bc & ~odd), s0 = (bc & odd) | (bs & ~odd);
  c0 ^= ((q ^ (q >> 1)) & 1) << 31; /* q = 1, 2 */
  s0 ^= (q >> 1 & 1) << 31;         /* q = 2, 3 */
  memcpy(c, &c0, 4);
  memcpy(s, &s0, 4);
}

/* Box-Muller per word pair (w0, w1), (w2, w3): u1 = (top 24 bits of
 * the first + 1) 2^-24 in (0, 1] (never log 0), k = top 24 bits of the
 * second, u2 = k 2^-24; r = sqrt(-2 ln u1); values r cos(2 pi u2),
 * r sin(2 pi u2). */
INLINE void normal_from(uint32_t w[4][LANES], float *v)
{
  for (int l = 0; l < LANES; l++)
    for (int k = 0; k < 4; k += 2) {
      float u1 = (float)(int32_t)((w[k][l] >> 8) + 1) * 0x1p-24f;
      float r = sqrtf(-2.0f * log01(u1)), c, s;
      sincos_turn(w[k + 1][l] >> 8, &c, &s);
      v[4 * l + k] = r * c;
      v[4 * l + k + 1] = r * s;
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RLX_NO_SIMD)
#include <immintrin.h>
#define HAVE_AVX512 1
#define TGT __attribute__((target("avx512f")))

/* hi and lo 32 bits of m c in 16 lanes: vpmuludq on the even lanes and
 * on the odd ones shifted down, recombined by blends. */
TGT INLINE void mulhilo16(__m512i m, __m512i c, __m512i *hi, __m512i *lo)
{
  __m512i pe = _mm512_mul_epu32(c, m);
  __m512i po = _mm512_mul_epu32(_mm512_srli_epi64(c, 32), m);
  *lo = _mm512_mask_blend_epi32(0xAAAA, pe, _mm512_slli_epi64(po, 32));
  *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe, 32), po);
}

/* philox_lanes_c with the 16 lanes in zmm registers. */
TGT static void philox_lanes_avx512(uint64_t seed, uint32_t stream,
                                    uint64_t j, uint32_t w[4][LANES])
{
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6,
                                        5, 4, 3, 2, 1, 0);
  __m512i jl = _mm512_set1_epi32((int)(uint32_t)j);
  __m512i c0 = _mm512_add_epi32(jl, lane);
  __mmask16 carry = _mm512_cmplt_epu32_mask(c0, jl);
  __m512i jh = _mm512_set1_epi32((int)(uint32_t)(j >> 32));
  __m512i c1 = _mm512_mask_add_epi32(jh, carry, jh, _mm512_set1_epi32(1));
  __m512i c2 = _mm512_set1_epi32((int)stream), c3 = _mm512_setzero_si512();
  const __m512i m0 = _mm512_set1_epi32((int)PHILOX_M0);
  const __m512i m1 = _mm512_set1_epi32((int)PHILOX_M1);
  for (uint32_t r = 0; r < 10; r++) {
    __m512i k0 = _mm512_set1_epi32((int)((uint32_t)seed + r * PHILOX_W0));
    __m512i k1 =
        _mm512_set1_epi32((int)((uint32_t)(seed >> 32) + r * PHILOX_W1));
    __m512i hi0, lo0, hi1, lo1;
    mulhilo16(m0, c0, &hi0, &lo0);
    mulhilo16(m1, c2, &hi1, &lo1);
    c0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), k0);
    c1 = lo1;
    c2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), k1);
    c3 = lo0;
  }
  _mm512_storeu_si512(w[0], c0);
  _mm512_storeu_si512(w[1], c1);
  _mm512_storeu_si512(w[2], c2);
  _mm512_storeu_si512(w[3], c3);
}
#endif

/* The generators: LANES blocks of one stream into v. */
#define GEN(NAME, ATTR, PHILOX, STREAM, FROM)                        \
  ATTR static void NAME(uint64_t seed, uint64_t j, float *v)         \
  {                                                                  \
    uint32_t w[4][LANES];                                            \
    PHILOX(seed, STREAM, j, w);                                      \
    FROM(w, v);                                                      \
  }
GEN(uniform_c, , philox_lanes_c, STREAM_UNIFORM, uniform_from)
GEN(normal_c, , philox_lanes_c, STREAM_NORMAL, normal_from)
#ifdef HAVE_AVX512
GEN(uniform_avx512, TGT, philox_lanes_avx512, STREAM_UNIFORM, uniform_from)
GEN(normal_avx512, TGT, philox_lanes_avx512, STREAM_NORMAL, normal_from)
/* AVX2: the portable lane loops compiled for 256-bit vectors (no FMA
   contraction in this file, so the same bits). */
#define TGT2 __attribute__((target("avx2")))
GEN(uniform_avx2, TGT2, philox_lanes_c, STREAM_UNIFORM, uniform_from)
GEN(normal_avx2, TGT2, philox_lanes_c, STREAM_NORMAL, normal_from)
#endif

typedef struct {
  float *out;
  int64_t n;
  uint64_t seed;
  void (*gen)(uint64_t seed, uint64_t j, float *v);
} RngJob;

/* Groups [begin, end) of LANES blocks (4 LANES elements each). */
static void rng_task(void *ctx, int64_t begin, int64_t end)
{
  const RngJob *jb = ctx;
  float v[4 * LANES];
  for (int64_t g = begin; g < end; g++) {
    int64_t e0 = g * 4 * LANES, len = jb->n - e0;
    if (len > 4 * LANES)
      len = 4 * LANES;
    jb->gen(jb->seed, (uint64_t)g * LANES, v);
    for (int64_t i = 0; i < len; i++)
      jb->out[e0 + i] = v[i];
  }
}

static int rng_run(float *out, int64_t n, uint64_t seed,
                   void (*gen)(uint64_t, uint64_t, float *))
{
  if (n < 0)
    return RLX_ERR_INVALID;
  RngJob jb = {out, n, seed, gen};
  rlx_parallel_for((n + 4 * LANES - 1) / (4 * LANES), 256, rng_task, &jb);
  return RLX_OK;
}

/* The AVX-512 or AVX2 generators (same bits) when the GEMM dispatch
   chose that ISA, so RLX_ISA and rlx_gemm_select_isa steer them too. */
#ifdef HAVE_AVX512
#define PICK(name)                                                       \
  (strcmp(rlx_gemm_isa(), "avx512") == 0 ? name##_avx512                 \
   : strcmp(rlx_gemm_isa(), "avx2") == 0 ? name##_avx2 : name##_c)
#else
#define PICK(name) name##_c
#endif

int rlx_rng_uniform_f32(float *out, int64_t n, uint64_t seed)
{
  return rng_run(out, n, seed, PICK(uniform));
}

int rlx_rng_normal_f32(float *out, int64_t n, uint64_t seed)
{
  return rng_run(out, n, seed, PICK(normal));
}

/* ---------------- sample ---------------- */

/* The uniform of row r in [0, 1): 53 bits, the top 27 of word 0 above
 * the top 26 of word 1 of block r of the sample stream. */
static double row_uniform(uint64_t seed, int64_t r)
{
  uint32_t c[4] = {(uint32_t)r, (uint32_t)((uint64_t)r >> 32),
                   STREAM_SAMPLE, 0};
  uint32_t k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, w[4];
  rlx_philox4x32_10(c, k, w);
  return ((double)(w[0] >> 5) * 67108864.0 + (double)(w[1] >> 6)) *
         0x1p-53;
}

typedef struct {
  const void *x;
  int is_f64;
  int64_t c, k;
  double temp, top_p;
  uint64_t seed;
  double *s;
  int64_t *idx;
  int64_t *out;
  int err;
} SampleJob;

/* One row: s = x / T, the kept classes in descending order (top-k by
 * rlx_topk_f64: ties to the smaller index), p = exp(s - max) over them,
 * top-p cut where the cumulative mass first reaches top_p of the
 * total, then the first class whose cumulative mass exceeds u times the
 * kept mass (classes in that order). T = 0: the argmax. */
static int sample_row(const SampleJob *jb, int64_t r)
{
  int64_t C = jb->c, K = jb->k ? jb->k : C;
  double *s = jb->s + r * C;
  int64_t *idx = jb->idx + r * C;
  for (int64_t i = 0; i < C; i++) {
    double v = jb->is_f64 ? ((const double *)jb->x)[r * C + i]
                          : ((const float *)jb->x)[r * C + i];
    if (v != v)
      return RLX_ERR_INVALID;
    s[i] = jb->temp > 0 ? v / jb->temp : v;
  }
  if (jb->temp == 0)
    K = 1;
  rlx_topk_f64(s, 1, C, K, idx);
  double m = s[idx[0]], total = 0;
  for (int64_t i = 0; i < K; i++) {
    double d = s[idx[i]];
    /* p overwrites s in idx order; s[idx[j]] for j > i is still intact
       because idx is a permutation prefix. */
    double p = isinf(m) ? (d == m) : exp(d - m);
    s[idx[i]] = p;
    total += p;
  }
  int64_t kept = K;
  double mass = total;
  if (jb->top_p < 1) {
    double acc = 0;
    for (int64_t i = 0; i < K; i++) {
      acc += s[idx[i]];
      if (acc >= jb->top_p * total) {
        kept = i + 1;
        mass = acc;
        break;
      }
    }
  }
  double t = row_uniform(jb->seed, r) * mass, acc = 0;
  int64_t pick = idx[kept - 1];
  for (int64_t i = 0; i < kept; i++) {
    acc += s[idx[i]];
    if (t < acc) {
      pick = idx[i];
      break;
    }
  }
  jb->out[r] = pick;
  return RLX_OK;
}

static void sample_task(void *ctx, int64_t begin, int64_t end)
{
  SampleJob *jb = ctx;
  for (int64_t r = begin; r < end; r++)
    if (sample_row(jb, r) != RLX_OK)
      __atomic_store_n(&jb->err, RLX_ERR_INVALID, __ATOMIC_RELAXED);
}

static int sample_run(const void *x, int is_f64, int64_t rows, int64_t c,
                      double temperature, int64_t top_k, double top_p,
                      uint64_t seed, void *scratch, int64_t *out)
{
  if (rows < 0 || c < 1 || top_k < 0 || top_k > c || !(temperature >= 0) ||
      !(top_p > 0 && top_p <= 1))
    return RLX_ERR_INVALID;
  SampleJob jb = {x, is_f64, c, top_k, temperature, top_p, seed,
                  scratch, (int64_t *)((double *)scratch + rows * c), out,
                  RLX_OK};
  rlx_parallel_for(rows, 1 + 4096 / c, sample_task, &jb);
  return jb.err;
}

int rlx_sample_f32(const float *x, int64_t rows, int64_t c,
                   double temperature, int64_t top_k, double top_p,
                   uint64_t seed, void *scratch, int64_t *out)
{
  return sample_run(x, 0, rows, c, temperature, top_k, top_p, seed, scratch,
                    out);
}

int rlx_sample_f64(const double *x, int64_t rows, int64_t c,
                   double temperature, int64_t top_k, double top_p,
                   uint64_t seed, void *scratch, int64_t *out)
{
  return sample_run(x, 1, rows, c, temperature, top_k, top_p, seed, scratch,
                    out);
}
