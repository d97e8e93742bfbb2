/* ssm.c -- fused sequence-block kernels (language.md selective_scan,
 * gated_delta_net): the recurrences run over time inside one call, the
 * state in cache (registers for small state sizes), never as graph nodes.
 *
 * selective_scan: one task per (batch row, block of RLX_SSM_LANES
 *   channels); the block's state [n][LANES] and its decay rates a
 *   transposed to [n][LANES] live in the task's scratch slice, so every
 *   step is a vertical vector update over the channel lanes: per state
 *   index k, state = exp(delta*a_k)*state + delta*x*b_k, y += c_k*state.
 * gated_delta_net: one task per (batch row, head); the n x n state S in
 *   the task's scratch slice.  Per step S1 = exp(g) S; one pass over S1
 *   gives sk = S1^T k and sq = S1^T q; d = (v - sk) beta; then
 *   o = (sq + d (k.q)) / sqrt(n) (= S2^T q / sqrt(n) with S2 = S1 + k d^T)
 *   and a second pass writes S2.
 * f32 runs the kernels of the ISA the GEMM dispatch chose (ssm_kern.h
 * instantiated by ssm_avx512.c, ssm_avx2.c, ssm_neon.c), else, and for
 * f64, the portable loops below (libm exp; the lane loops have a
 * constant trip count and vectorize).  The SIMD gated delta nets give
 * the bits of the portable loops (no FMA contraction anywhere:
 * CMakeLists.txt); the SIMD selective scans give the same bits as each
 * other, not as the portable loops (their exp is VEXP2P1, with FMAs).
 * Scratch sizes: ssm_plan.c (shared with the compiler).
 * Tasks touch disjoint outputs and scratch slices and run the same
 * operations whatever the split, so results are bit-identical for any
 * thread count.
 */
#include <math.h>
#include <string.h>

#include "runtime/simd/isa.h"
#include "runtime/ssm/ssm_internal.h"

#define LANES RLX_SSM_LANES

static int64_t blocks(int64_t h) { return (h + LANES - 1) / LANES; }

/* The f32 kernels of the ISA the GEMM dispatch chose (simd/isa.h);
   NULL: the portable loops below (no table for that ISA, or it was not
   compiled in).  The AVX-512 ones also need AVX512DQ; without it the
   AVX2 ones run (the same bits). */
static const SsmIsa *simd_f32(void)
{
  static const SsmIsa *const tab[RLX_ISA_COUNT] = {
      [RLX_ISA_AVX2] = &rlx_ssm_avx2,
      [RLX_ISA_AVX512] = &rlx_ssm_avx512,
      [RLX_ISA_NEON] = &rlx_ssm_neon};
  int level = rlx_isa_level();
#if RLX_HAVE_X86_SIMD
  if (level == RLX_ISA_AVX512 && !__builtin_cpu_supports("avx512dq"))
    level = RLX_ISA_AVX2;
#endif
  const SsmIsa *t = tab[level];
  return t && t->scan_block ? t : NULL;
}

#define SSM_IMPL(SFX, T, EXP)                                              \
  static void ssm_block_##SFX(const rlx_ssm_args *p, int64_t bi,          \
                              int64_t c0, T *ws)                          \
  {                                                                       \
    const int64_t s = p->s, h = p->h, n = p->n;                           \
    const int64_t nc = h - c0 < LANES ? h - c0 : LANES;                   \
    const T *a = p->a;                                                    \
    T *at = ws, *st = ws + n * LANES;                                     \
    for (int64_t k = 0; k < n; k++)                                       \
      for (int j = 0; j < LANES; j++) {                                   \
        at[k * LANES + j] = j < nc ? a[(c0 + j) * n + k] : 0;             \
        st[k * LANES + j] = 0;                                            \
      }                                                                   \
    for (int64_t t = 0; t < s; t++) {                                     \
      int64_t r = bi * s + t;                                             \
      const T *xt = (const T *)p->x + r * h + c0;                         \
      const T *dt = (const T *)p->delta + r * h + c0;                     \
      const T *bt = (const T *)p->bm + r * n;                             \
      const T *ct = (const T *)p->cm + r * n;                             \
      T dv[LANES], du[LANES], yv[LANES];                                  \
      for (int j = 0; j < LANES; j++) {                                   \
        dv[j] = j < nc ? dt[j] : 0;                                       \
        du[j] = j < nc ? dt[j] * xt[j] : 0;                               \
        yv[j] = 0;                                                        \
      }                                                                   \
      for (int64_t k = 0; k < n; k++) {                                   \
        T bk = bt[k], ck = ct[k];                                         \
        T *sk = st + k * LANES, *ak = at + k * LANES;                     \
        for (int j = 0; j < LANES; j++) {                                 \
          sk[j] = EXP(dv[j] * ak[j]) * sk[j] + du[j] * bk;                \
          yv[j] += ck * sk[j];                                            \
        }                                                                 \
      }                                                                   \
      T *yt = (T *)p->y + r * h + c0;                                     \
      for (int64_t j = 0; j < nc; j++)                                    \
        yt[j] = yv[j];                                                    \
    }                                                                     \
  }                                                                       \
                                                                          \
  static void ssm_task_##SFX(void *ctx, int64_t lo, int64_t hi)           \
  {                                                                       \
    const rlx_ssm_args *p = ctx;                                          \
    int64_t nb = blocks(p->h);                                            \
    for (int64_t i = lo; i < hi; i++) {                                   \
      T *ws = (T *)p->scratch + i * 2 * p->n * LANES;                     \
      ssm_block_##SFX(p, i / nb, i % nb * LANES, ws);                     \
    }                                                                     \
  }                                                                       \
                                                                          \
  static void gdn_head_##SFX(const rlx_ssm_args *p, int64_t task, T *S)   \
  {                                                                       \
    const int64_t s = p->s, H = p->h, n = p->n;                           \
    const int64_t bi = task / H, hh = task % H;                           \
    const T rs = (T)(1 / sqrt((double)n));                                \
    T *sk = S + n * n, *sq = sk + n;                                      \
    memset(S, 0, sizeof(T) * (size_t)(n * n));                            \
    for (int64_t t = 0; t < s; t++) {                                     \
      int64_t r = (bi * s + t) * H + hh;                                  \
      const T *q = (const T *)p->x + r * n, *k = (const T *)p->delta + r * n; \
      const T *v = (const T *)p->a + r * n;                               \
      T eg = EXP(((const T *)p->bm)[r]), be = ((const T *)p->cm)[r];      \
      T kq = 0;                                                           \
      for (int64_t j = 0; j < n; j++) {                                   \
        sk[j] = sq[j] = 0;                                                \
        kq += k[j] * q[j];                                                \
      }                                                                   \
      for (int64_t i = 0; i < n; i++) {                                   \
        T ki = k[i], qi = q[i], *Si = S + i * n;                          \
        for (int64_t j = 0; j < n; j++) {                                 \
          T w = Si[j] * eg;                                               \
          Si[j] = w;                                                      \
          sk[j] += w * ki;                                                \
          sq[j] += w * qi;                                                \
        }                                                                 \
      }                                                                   \
      T *o = (T *)p->y + r * n;                                           \
      for (int64_t j = 0; j < n; j++) {                                   \
        T d = (v[j] - sk[j]) * be;                                        \
        o[j] = (sq[j] + d * kq) * rs;                                     \
        sk[j] = d;                                                        \
      }                                                                   \
      for (int64_t i = 0; i < n; i++) {                                   \
        T ki = k[i], *Si = S + i * n;                                     \
        for (int64_t j = 0; j < n; j++)                                   \
          Si[j] += ki * sk[j];                                            \
      }                                                                   \
    }                                                                     \
  }                                                                       \
                                                                          \
  static void gdn_task_##SFX(void *ctx, int64_t lo, int64_t hi)           \
  {                                                                       \
    const rlx_ssm_args *p = ctx;                                          \
    for (int64_t i = lo; i < hi; i++)                                     \
      gdn_head_##SFX(p, i, (T *)p->scratch + i * (p->n * p->n + 2 * p->n)); \
  }

SSM_IMPL(f32, float, expf)
SSM_IMPL(f64, double, exp)

static void ssm_task_simd_f32(void *ctx, int64_t lo, int64_t hi)
{
  const rlx_ssm_args *p = ctx;
  int64_t nb = blocks(p->h);
  for (int64_t i = lo; i < hi; i++)
    p->isa->scan_block(p, i / nb, i % nb * LANES,
                       (float *)p->scratch + i * 2 * p->n * LANES);
}

static void gdn_task_simd_f32(void *ctx, int64_t lo, int64_t hi)
{
  const rlx_ssm_args *p = ctx;
  for (int64_t i = lo; i < hi; i++)
    p->isa->gdn_head(p, i,
                     (float *)p->scratch + i * (p->n * p->n + 2 * p->n));
}

void rlx_gated_delta_net_f32(int64_t b, int64_t s, int64_t heads, int64_t n,
                             const float *q, const float *k, const float *v,
                             const float *g, const float *beta, float *o,
                             void *scratch)
{
  rlx_ssm_args p = {b, s, heads, n, q, k, v, g, beta, o, scratch, simd_f32()};
  rlx_parallel_for(b * heads, 1, p.isa ? gdn_task_simd_f32 : gdn_task_f32,
                   &p);
}

void rlx_gated_delta_net_f64(int64_t b, int64_t s, int64_t heads, int64_t n,
                             const double *q, const double *k,
                             const double *v, const double *g,
                             const double *beta, double *o, void *scratch)
{
  rlx_ssm_args p = {b, s, heads, n, q, k, v, g, beta, o, scratch, NULL};
  rlx_parallel_for(b * heads, 1, gdn_task_f64, &p);
}

void rlx_selective_scan_f32(int64_t b, int64_t s, int64_t h, int64_t n,
                            const float *x, const float *delta,
                            const float *a, const float *bm,
                            const float *cm, float *y, void *scratch)
{
  rlx_ssm_args p = {b, s, h, n, x, delta, a, bm, cm, y, scratch, simd_f32()};
  rlx_parallel_for(b * blocks(h), 1, p.isa ? ssm_task_simd_f32 : ssm_task_f32,
                   &p);
}

void rlx_selective_scan_f64(int64_t b, int64_t s, int64_t h, int64_t n,
                            const double *x, const double *delta,
                            const double *a, const double *bm,
                            const double *cm, double *y, void *scratch)
{
  rlx_ssm_args p = {b, s, h, n, x, delta, a, bm, cm, y, scratch, NULL};
  rlx_parallel_for(b * blocks(h), 1, ssm_task_f64, &p);
}
