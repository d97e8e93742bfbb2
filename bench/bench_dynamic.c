/* bench_dynamic.c -- dynamic dimensions against the static compile
 * (docs/performance.md "Dynamic dimensions"): the MLP training step
 * (784-512-512-10, gradient of the mean cross-entropy) compiled with a
 * static batch of 128 (bench_mlp_train.rlx) and with ?batch<=128
 * (bench_mlp_dyn.rlx), and with a static batch of 32 (bench_mlp_b32.rlx),
 * and with ?batch without a bound (bench_mlp_free.rlx: the workspace
 * laid out at each call, docs/dynamic-dims.md), timed in alternating
 * rounds: static at 128, dynamic at 128, static at 32, dynamic at 32,
 * unbounded at 128 and at 32. Prints each round's medians and minima
 * and, at the end, the medians over rounds of the ratios dynamic /
 * static at 128 and at 32, dynamic(32) / dynamic(128), and unbounded /
 * dynamic at 128 and 32.
 * usage: bench_dynamic [--isa=NAME] [THREADS [ROUNDS [SECONDS]]] */
#include "bench_mlp_b32.h"
#include "bench_mlp_dyn.h"
#include "bench_mlp_free.h"
#include "bench_mlp_train.h"
#include "bench_time.h"

#include <math.h>

typedef struct {
  int kind; /* 0 static 128, 1 dynamic, 2 static 32, 3 unbounded */
  int64_t batch;
  const void *in[9];
  void *out[7];
  void *ws;
} Step;

static int run(void *ctx) {
  Step *s = ctx;
  if (s->kind == 0) return bench_mlp_train_grad(s->in, s->out, s->ws);
  if (s->kind == 2) return bench_mlp_b32_grad(s->in, s->out, s->ws);
  if (s->kind == 3)
    return bench_mlp_free_grad(s->in, s->out, s->ws, &s->batch);
  return bench_mlp_dyn_grad(s->in, s->out, s->ws, &s->batch);
}

static double med(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

int main(int argc, char **argv) {
  argc = bench_isa_args(argc, argv);
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  int rounds = argc > 2 ? atoi(argv[2]) : 5;
  double secs = argc > 3 ? atof(argv[3]) : 1.0;
  static const int64_t sizes[9] = {128 * 784, 128, 784 * 512, 512,
                                   512 * 512, 512, 512 * 10, 10, 1};
  float *buf[9];
  for (int i = 0; i < 9; i++) {
    buf[i] = malloc(sizeof(float) * (size_t)sizes[i]);
    for (int64_t k = 0; k < sizes[i]; k++)
      buf[i][k] = i == 1 ? 0 : 0.01f * (float)sin((double)(k * 7 + i));
  }
  for (int k = 0; k < 128; k++) ((int32_t *)buf[1])[k] = k % 10;
  buf[8][0] = 1;
  (void)time_fn;
  enum { NV = 6 };
  Step st[NV] = {{.kind = 0, .batch = 128}, {.kind = 1, .batch = 128},
                 {.kind = 2, .batch = 32},  {.kind = 1, .batch = 32},
                 {.kind = 3, .batch = 128}, {.kind = 3, .batch = 32}};
  static const char *what[NV] = {"static_b128", "dynamic_b128",
                                 "static_b32",  "dynamic_b32",
                                 "unbounded_b128", "unbounded_b32"};
  for (int v = 0; v < NV; v++) {
    for (int i = 0; i < 9; i++) st[v].in[i] = buf[i];
    st[v].out[0] = malloc(4);
    for (int j = 1; j < 7; j++)
      st[v].out[j] = malloc(sizeof(float) * (size_t)sizes[j + 1]);
    size_t ws = v == 0   ? bench_mlp_train_grad_WORKSPACE_BYTES
                : v == 2 ? bench_mlp_b32_grad_WORKSPACE_BYTES
                : v < 4  ? bench_mlp_dyn_grad_WORKSPACE_BYTES
                         : bench_mlp_free_grad_workspace_bytes(&st[v].batch);
    st[v].ws = aligned_alloc(64, ws);
  }
  double r_dyn[64], r_d32[64], r_32[64], r_u128[64], r_u32[64];
  if (rounds > 64) rounds = 64;
  for (int r = 0; r < rounds; r++) {
    double m[NV];
    for (int v = 0; v < NV; v++) {
      static double t[MAX_CALLS];
      rlx_set_num_threads(threads);
      for (int w = 0; w < 3; w++) run(&st[v]);
      int n = 0;
      double start = now_s();
      while (n < MAX_CALLS && (n < 10 || now_s() - start < secs)) {
        double t0 = now_s();
        if (run(&st[v])) return 1;
        t[n++] = now_s() - t0;
      }
      qsort(t, (size_t)n, sizeof t[0], cmp_double);
      m[v] = t[n / 2];
      printf("round %d %s threads=%d median_ms=%.3f min_ms=%.3f calls=%d\n",
             r, what[v], threads, t[n / 2] * 1e3, t[0] * 1e3, n);
    }
    r_dyn[r] = m[1] / m[0];
    r_d32[r] = m[3] / m[2];
    r_32[r] = m[3] / m[1];
    r_u128[r] = m[4] / m[1];
    r_u32[r] = m[5] / m[3];
  }
  printf("dynamic_b128/static_b128 median of rounds %.3f\n",
         med(r_dyn, rounds));
  printf("dynamic_b32/static_b32 median of rounds %.3f\n",
         med(r_d32, rounds));
  printf("dynamic_b32/dynamic_b128 median of rounds %.3f\n",
         med(r_32, rounds));
  printf("unbounded_b128/dynamic_b128 median of rounds %.3f\n",
         med(r_u128, rounds));
  printf("unbounded_b32/dynamic_b32 median of rounds %.3f\n",
         med(r_u32, rounds));
  return 0;
}
