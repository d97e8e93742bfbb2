/* moe.c -- rlx_grouped_matmul_* (mixture of experts: row i of x times
 * the matrix of expert[i]), its weight gradient, and
 * rlx_dequant_matmul_* (x times i8 weights scaled per column or per
 * group of rows).  f32 and f64; everything goes through rlx_gemm_*.
 *
 * Grouped matmul: the rows are grouped by expert with a stable counting
 * sort (offsets and the permutation in scratch), x's rows are gathered
 * into expert order, each expert's block is one GEMM, and the result
 * rows are scattered back.  The weight gradient gathers x and dy the
 * same way and does one GEMM per expert (xs_e^T dys_e; an expert with
 * no rows gets zeros).  Gathers and scatters are row copies on the
 * pool; the GEMMs are deterministic, so the results are bit-identical
 * for any thread count.
 *
 * Dequant matmul: w is dequantized one panel of at most RLX_DQ_PANEL
 * columns at a time into scratch (rows on the pool), then multiplied.
 */
#include <string.h>

#include "runtime/moe/moe_internal.h"

/* off[0..e] = first sorted position of each expert; perm[p] = the row
 * at sorted position p (rows of one expert in index order). */
static int route(int64_t t, int64_t e, const void *expert, int64_t ib,
                 int64_t *off, int64_t *perm)
{
  memset(off, 0, (size_t)(e + 1) * sizeof *off);
  for (int64_t i = 0; i < t; i++) {
    int64_t x = ib == 4 ? ((const int32_t *)expert)[i]
                        : ((const int64_t *)expert)[i];
    if (x < 0 || x >= e) return RLX_ERR_INDEX;
    off[x + 1]++;
  }
  for (int64_t x = 0; x < e; x++) off[x + 1] += off[x];
  for (int64_t i = 0; i < t; i++) {
    int64_t x = ib == 4 ? ((const int32_t *)expert)[i]
                        : ((const int64_t *)expert)[i];
    perm[off[x]++] = i;
  }
  for (int64_t x = e; x > 0; x--) off[x] = off[x - 1];
  off[0] = 0;
  return RLX_OK;
}

typedef struct {
  char *dst;
  const char *src;
  const int64_t *perm;
  int64_t rb;  /* bytes per row */
  int gather;  /* dst[p] = src[perm[p]], else dst[perm[p]] = src[p] */
} CopyJob;

static void copy_task(void *ctx, int64_t b, int64_t end)
{
  const CopyJob *j = ctx;
  for (int64_t p = b; p < end; p++) {
    int64_t d = j->gather ? p : j->perm[p], s = j->gather ? j->perm[p] : p;
    memcpy(j->dst + d * j->rb, j->src + s * j->rb, (size_t)j->rb);
  }
}

static void copy_rows(void *dst, const void *src, const int64_t *perm,
                      int64_t t, int64_t rb, int gather)
{
  CopyJob j = {dst, src, perm, rb, gather};
  rlx_parallel_for(t, 16384 / (rb + 1) + 1, copy_task, &j);
}

/* One un-batched GEMM of element size es (4: f32, 8: f64). */
static void gemm(int64_t es, int64_t m, int64_t n, int64_t k, const void *a,
                 int64_t a_rs, int64_t a_cs, const void *b, int64_t b_rs,
                 int64_t b_cs, void *c, int64_t c_rs)
{
  if (es == 4)
    rlx_gemm_f32(1, m, n, k, a, 0, a_rs, a_cs, b, 0, b_rs, b_cs, c, 0, c_rs,
                 0);
  else
    rlx_gemm_f64(1, m, n, k, a, 0, a_rs, a_cs, b, 0, b_rs, b_cs, c, 0, c_rs,
                 0);
}

typedef struct {
  int64_t *off, *perm;
  char *a, *b; /* gathered rows: [t, k] and [t, n] */
} Groups;

static int groups(int64_t t, int64_t k, int64_t n, int64_t e, int64_t es,
                  const void *expert, int64_t ib, void *scratch, Groups *g)
{
  char *s = scratch;
  g->off = (int64_t *)s;
  s += align64((e + 1) * 8);
  g->perm = (int64_t *)s;
  s += align64(t * 8);
  g->a = s;
  g->b = s + align64(t * k * es);
  return route(t, e, expert, ib, g->off, g->perm);
}

static int grouped(int64_t es, int64_t t, int64_t k, int64_t n, int64_t e,
                   const void *x, const void *w, int64_t w_t,
                   const void *expert, int64_t ib, void *y, void *scratch)
{
  Groups g;
  int rc = groups(t, k, n, e, es, expert, ib, scratch, &g);
  if (rc != RLX_OK || t == 0 || n == 0) return rc;
  copy_rows(g.a, x, g.perm, t, k * es, 1);
  for (int64_t j = 0; j < e; j++) {
    int64_t o = g.off[j], m = g.off[j + 1] - o;
    if (m)
      gemm(es, m, n, k, g.a + o * k * es, k, 1,
           (const char *)w + j * k * n * es, w_t ? 1 : n, w_t ? k : 1,
           g.b + o * n * es, n);
  }
  copy_rows(y, g.b, g.perm, t, n * es, 0);
  return RLX_OK;
}

static int grouped_bwd_weight(int64_t es, int64_t t, int64_t k, int64_t n,
                              int64_t e, const void *x, const void *dy,
                              const void *expert, int64_t ib, void *dw,
                              void *scratch)
{
  Groups g;
  int rc = groups(t, k, n, e, es, expert, ib, scratch, &g);
  if (rc != RLX_OK || k == 0 || n == 0) return rc;
  copy_rows(g.a, x, g.perm, t, k * es, 1);
  copy_rows(g.b, dy, g.perm, t, n * es, 1);
  for (int64_t j = 0; j < e; j++) {
    int64_t o = g.off[j], m = g.off[j + 1] - o;
    /* k == 0 in GEMM terms (an expert without rows) writes zeros */
    gemm(es, k, n, m, g.a + o * k * es, 1, k, g.b + o * n * es, n, 1,
         (char *)dw + j * k * n * es, n);
  }
  return RLX_OK;
}

#define MOE_IMPL(SFX, T, ES)                                                \
  int rlx_grouped_matmul_##SFX(int64_t t, int64_t k, int64_t n, int64_t e,  \
                               const T *x, const T *w, int64_t w_t,         \
                               const void *expert, int64_t index_bytes,     \
                               T *y, void *scratch)                         \
  {                                                                         \
    return grouped(ES, t, k, n, e, x, w, w_t, expert, index_bytes, y,       \
                   scratch);                                                \
  }                                                                         \
  int rlx_grouped_matmul_bwd_weight_##SFX(                                  \
      int64_t t, int64_t k, int64_t n, int64_t e, const T *x, const T *dy,  \
      const void *expert, int64_t index_bytes, T *dw, void *scratch)        \
  {                                                                         \
    return grouped_bwd_weight(ES, t, k, n, e, x, dy, expert, index_bytes,   \
                              dw, scratch);                                 \
  }                                                                         \
                                                                            \
  typedef struct {                                                          \
    T *wf;                                                                  \
    const int8_t *w;                                                        \
    const T *s;                                                             \
    int64_t n, j0, pw, g;                                                   \
  } DqJob_##SFX;                                                            \
                                                                            \
  static void dq_task_##SFX(void *ctx, int64_t b, int64_t end)              \
  {                                                                         \
    const DqJob_##SFX *j = ctx;                                             \
    for (int64_t r = b; r < end; r++) {                                     \
      const int8_t *wr = j->w + r * j->n + j->j0;                           \
      const T *sr = j->s + (r / j->g) * j->n + j->j0;                       \
      T *o = j->wf + r * j->pw;                                             \
      for (int64_t c = 0; c < j->pw; c++) o[c] = (T)wr[c] * sr[c];          \
    }                                                                       \
  }                                                                         \
                                                                            \
  void rlx_dequant_matmul_##SFX(int64_t m, int64_t k, int64_t n,            \
                                int64_t group, const T *x, const int8_t *w, \
                                const T *scales, T *y, void *scratch)       \
  {                                                                         \
    for (int64_t j0 = 0; j0 < n; j0 += RLX_DQ_PANEL) {                      \
      int64_t pw = n - j0 < RLX_DQ_PANEL ? n - j0 : RLX_DQ_PANEL;           \
      DqJob_##SFX j = {scratch, w, scales, n, j0, pw, group};               \
      rlx_parallel_for(k, 16384 / pw + 1, dq_task_##SFX, &j);               \
      gemm(ES, m, pw, k, x, k, 1, scratch, pw, 1, y + j0, n);               \
    }                                                                       \
  }

MOE_IMPL(f32, float, 4)
MOE_IMPL(f64, double, 8)
