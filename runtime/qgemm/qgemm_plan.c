/* qgemm_plan.c -- workspace sizes of rlx_q_matmul and rlx_q_conv2d
 * (rlxrt.h); linked into the compiler too, whose emitter reserves them.
 *
 * Layout (qgemm.c): packed A (ceil(m/QMR)*QMR rows), packed B
 * (ceil(n/QNR)*QNR columns), both of ceil(k/4)*4 bytes a row/column,
 * then the i32 row and column terms and the f64 column multipliers; q_conv2d puts its im2col matrix
 * [C/groups*KH*KW, OH*OW] in front.  Every part is 64-byte aligned.
 */
#include "runtime/qgemm/qgemm_internal.h"
#include "runtime/rlxrt.h"

static int64_t up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

int64_t rlx_q_matmul_scratch_bytes(int64_t m, int64_t n, int64_t k)
{
  int64_t mp = up(m, QMR), np = up(n, QNR), kp = up(k, 4);
  return up(mp * kp, 64) + up(np * kp, 64) + up(mp * 4, 64) +
         up(np * 4, 64) + up(np * 8, 64);
}

/* Whether the convolution reads x directly as its GEMM's B. */
int rlx_q_conv2d_direct(const rlx_conv_geom *g)
{
  return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 &&
         g->ph == 0 && g->pw == 0;
}

int64_t rlx_q_conv2d_scratch_bytes(const rlx_conv_geom *g)
{
  int64_t cg = g->c / g->groups, kc = cg * g->kh * g->kw,
          p = g->oh * g->ow;
  int64_t col = rlx_q_conv2d_direct(g) ? 0 : up(kc * p, 64);
  return col + rlx_q_matmul_scratch_bytes(g->co / g->groups, p, kc);
}
