/* bench_moe.c -- mixture of experts: rlx_grouped_matmul_f32 (8 experts,
 * 4096 rows of width 512 -> 512, skewed routing) next to one dense
 * GEMM of the same rows (rlx_gemm_f32, 4096 x 512 x 512), forward and
 * backward, in one run.
 *
 * usage: bench_moe [--threads=N] [--rounds=R] [--calls=C]
 * (threads: also env RLX_NUM_THREADS; default 1).  Routing: expert j
 * gets a share proportional to 0.6^j (expert 0 ~ 41% of the rows,
 * expert 7 ~ 1.1%), ids shuffled.  Variants:
 *   fwd dense    y = x w0                      (one GEMM)
 *   fwd grouped  y[i] = x[i] w[e[i]]           (rlx_grouped_matmul_f32)
 *   bwd dense    dx = dy w0^T, dw0 = x^T dy    (two GEMMs)
 *   bwd grouped  dx = grouped(dy, w^T) (w read transposed, as the
 *                compiled gradient does), dw = rlx_grouped_matmul_bwd_
 *                weight_f32
 *   dq f32 gemm  y = x w0 (f32 weights; the baseline of the next)
 *   dq i8 g128   rlx_dequant_matmul_f32: i8 w [512, 512], one scale per
 *                group of 128 rows per column (4 x 512 scales)
 * The variants alternate: R rounds of C calls each; per variant one line
 *   rlx moe VARIANT threads=T median_ms=.. min_ms=..
 * and the ratios grouped / dense of the medians and of the minima.
 * Compare with PyTorch: OPENBLAS_NUM_THREADS=1 /usr/bin/python3
 * bench/bench_moe_torch.py (same shapes and routing rule).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_time.h" /* now_s, cmp_double */
#include "runtime/rlxrt.h"

enum { T = 4096, K = 512, N = 512, E = 8, G = 128, NV = 6 };

static float *filled(int64_t n)
{
  float *p = rlx_alloc((size_t)n * sizeof *p);
  for (int64_t i = 0; i < n; i++)
    p[i] = (float)rand() / RAND_MAX - 0.5f;
  return p;
}

static float *x, *w, *y, *dy, *dx, *dw, *scales;
static int8_t *wq;
static int32_t ids[T];
static void *scratch;

static int run(int v)
{
  switch (v) {
  case 0:
    rlx_gemm_f32(1, T, N, K, x, 0, K, 1, w, 0, N, 1, y, 0, N, 0);
    return 0;
  case 1:
    return rlx_grouped_matmul_f32(T, K, N, E, x, w, 0, ids, 4, y, scratch);
  case 2:
    rlx_gemm_f32(1, T, K, N, dy, 0, N, 1, w, 0, 1, N, dx, 0, K, 0);
    rlx_gemm_f32(1, K, N, T, x, 0, 1, K, dy, 0, N, 1, dw, 0, N, 0);
    return 0;
  case 3: {
    int rc = rlx_grouped_matmul_f32(T, N, K, E, dy, w, 1, ids, 4, dx,
                                    scratch);
    return rc ? rc : rlx_grouped_matmul_bwd_weight_f32(T, K, N, E, x, dy,
                                                       ids, 4, dw, scratch);
  }
  case 4:
    rlx_gemm_f32(1, T, N, K, x, 0, K, 1, w, 0, N, 1, y, 0, N, 0);
    return 0;
  default:
    rlx_dequant_matmul_f32(T, K, N, G, x, wq, scales, y, scratch);
    return 0;
  }
}

int main(int argc, char **argv)
{
  argc = bench_isa_args(argc, argv);
  int threads = 0, rounds = 5, calls = 10;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--threads=", 10)) threads = atoi(argv[i] + 10);
    else if (!strncmp(argv[i], "--rounds=", 9)) rounds = atoi(argv[i] + 9);
    else if (!strncmp(argv[i], "--calls=", 8)) calls = atoi(argv[i] + 8);
    else {
      fprintf(stderr, "usage: bench_moe [--threads=N] [--rounds=R] "
                      "[--calls=C]\n");
      return 2;
    }
  }
  if (threads <= 0) {
    const char *env = getenv("RLX_NUM_THREADS");
    threads = env ? atoi(env) : 1;
  }
  (void)time_fn; /* bench_time.h's loop: the variants alternate here */
  rlx_set_num_threads(threads);
  srand(1);
  x = filled((int64_t)T * K);
  w = filled((int64_t)E * K * N);
  dy = filled((int64_t)T * N);
  y = filled((int64_t)T * N);
  dx = filled((int64_t)T * K);
  dw = filled((int64_t)E * K * N);
  /* skewed routing: counts proportional to 0.6^j, then shuffled */
  double share = 0, p = 1;
  for (int j = 0; j < E; j++, p *= 0.6) share += p;
  int cnt[E], at = 0;
  p = 1;
  for (int j = 0; j < E; j++, p *= 0.6) {
    cnt[j] = j == E - 1 ? T - at : (int)(T * p / share);
    for (int i = 0; i < cnt[j]; i++) ids[at + i] = j;
    at += cnt[j];
  }
  for (int i = T - 1; i > 0; i--) {
    int r = rand() % (i + 1), t = ids[i];
    ids[i] = ids[r];
    ids[r] = t;
  }
  printf("routing rows per expert:");
  for (int j = 0; j < E; j++) printf(" %d", cnt[j]);
  printf("\n");
  wq = malloc((size_t)K * N);
  for (int i = 0; i < K * N; i++) wq[i] = (int8_t)(rand() % 255 - 127);
  scales = filled((int64_t)(K / G) * N);
  int64_t sb = rlx_grouped_matmul_scratch_bytes(T, K > N ? K : N,
                                                K > N ? K : N, E, 4);
  if (sb < rlx_dequant_matmul_scratch_bytes(K, N, 4))
    sb = rlx_dequant_matmul_scratch_bytes(K, N, 4);
  scratch = rlx_alloc((size_t)sb);
  static const char *names[NV] = {"fwd dense", "fwd grouped", "bwd dense",
                                  "bwd grouped", "dq f32 gemm",
                                  "dq i8 g128"};
  double *t = malloc(sizeof(double) * NV * rounds * calls);
  for (int v = 0; v < NV; v++)
    for (int i = 0; i < 3; i++)
      if (run(v)) return 1;
  for (int r = 0; r < rounds; r++)
    for (int v = 0; v < NV; v++)
      for (int c = 0; c < calls; c++) {
        double t0 = now_s();
        run(v);
        t[(v * rounds + r) * calls + c] = (now_s() - t0) * 1e3;
      }
  double med[NV], mn[NV];
  for (int v = 0; v < NV; v++) {
    double *tv = t + v * rounds * calls;
    qsort(tv, (size_t)(rounds * calls), sizeof *tv, cmp_double);
    med[v] = tv[rounds * calls / 2];
    mn[v] = tv[0];
    printf("rlx moe %-12s threads=%d median_ms=%.2f min_ms=%.2f\n",
           names[v], threads, med[v], mn[v]);
  }
  printf("rlx moe ratio fwd grouped/dense median=%.2f min=%.2f\n",
         med[1] / med[0], mn[1] / mn[0]);
  printf("rlx moe ratio bwd grouped/dense median=%.2f min=%.2f\n",
         med[3] / med[2], mn[3] / mn[2]);
  printf("rlx moe ratio dequant_matmul/f32 gemm median=%.2f min=%.2f\n",
         med[5] / med[4], mn[5] / mn[4]);
  return 0;
}
