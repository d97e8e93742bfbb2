/* gemm_c64.c -- rlx_gemm_c64: complex (interleaved float pairs) GEMM.
 *
 * A straightforward row-axpy loop: C row i += A(i,p) * B row p, for p in
 * increasing order, with the columns blocked so a slice of the C row
 * stays in L1.  Parallel over (batch, row) pairs; each C element is
 * accumulated in one fixed order, so results are thread-independent.
 */
#include "runtime/rlxrt.h"

enum { JBLOCK = 512 };

typedef struct {
  int64_t m, n, k;
  const float *a;
  int64_t a_bs, a_rs, a_cs;
  const float *b;
  int64_t b_bs, b_rs, b_cs;
  float *c;
  int64_t c_bs, c_rs;
  int acc;
} JobC64;

/* c[j] += (ar + i ai) * b(p, j) for j in [j0, j1). */
static void axpy_c64(float ar, float ai, const float *b, int64_t cs,
                     float *c, int64_t j0, int64_t j1)
{
  for (int64_t j = j0; j < j1; j++) {
    float br = b[2 * j * cs], bi = b[2 * j * cs + 1];
    c[2 * j] += ar * br - ai * bi;
    c[2 * j + 1] += ar * bi + ai * br;
  }
}

static void row_c64(const JobC64 *jb, const float *a, const float *b,
                    float *c)
{
  for (int64_t j0 = 0; j0 < jb->n; j0 += JBLOCK) {
    int64_t j1 = j0 + JBLOCK < jb->n ? j0 + JBLOCK : jb->n;
    if (!jb->acc)
      for (int64_t j = 2 * j0; j < 2 * j1; j++)
        c[j] = 0;
    for (int64_t p = 0; p < jb->k; p++) {
      const float *ap = a + 2 * p * jb->a_cs;
      axpy_c64(ap[0], ap[1], b + 2 * p * jb->b_rs, jb->b_cs, c, j0, j1);
    }
  }
}

static void task_c64(void *ctx, int64_t begin, int64_t end)
{
  const JobC64 *jb = ctx;
  for (int64_t t = begin; t < end; t++) {
    int64_t bi = t / jb->m, i = t % jb->m;
    row_c64(jb, jb->a + 2 * (bi * jb->a_bs + i * jb->a_rs),
            jb->b + 2 * bi * jb->b_bs,
            jb->c + 2 * (bi * jb->c_bs + i * jb->c_rs));
  }
}

void rlx_gemm_c64(int64_t batch, int64_t m, int64_t n, int64_t k,
                  const float *a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                  const float *b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
                  float *c, int64_t c_bs, int64_t c_rs, int accumulate)
{
  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  JobC64 jb = {m, n, k < 0 ? 0 : k, a, a_bs, a_rs, a_cs, b, b_bs, b_rs,
               b_cs, c, c_bs, c_rs, accumulate};
  int64_t row_flops = 8 * n * (k > 0 ? k : 1);
  int64_t grain = row_flops >= 65536 ? 1 : 65536 / row_flops + 1;
  rlx_parallel_for(batch * m, grain, task_c64, &jb);
}
