/* bench_gnorm.c: times the entries of bench_gnorm.rlx, group_norm and
 * batch_norm_inference kernels on f32 [32, 64, 56, 56].
 * Usage: bench_gnorm THREADS REPS -> one line per kernel: name, median
 * ms, GB/s (bytes of the x, dy, y or dx arrays a kernel reads or
 * writes / median time; batch_norm_inference_backward_input reads no x).
 * Build: rlxc bench/bench_gnorm.rlx --entry=E -o E.o for every entry
 * below, then cc -O2 -I. -Iruntime bench/bench_gnorm.c gn*.o bn*.o
 * librlxrt.a -lm -lpthread. */
#include "bnbb.h"
#include "bnbg.h"
#include "bnbx.h"
#include "bnf.h"
#include "gnbb.h"
#include "gnbg.h"
#include "gnbx.h"
#include "gnf.h"
#include "rlxrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "bench/bench_time.h"

#define NEL (32L * 64 * 56 * 56)
#define C 64

typedef int (*Fn)(const void *const *, void *const *, void *);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* f(in) -> out, median of reps calls; tensors: full-size arrays moved */
static void run(const char *nm, Fn f, const void *const *in, void *out,
                int tensors, int reps) {
  double t[101];
  void *o[] = {out};
  f(in, o, NULL);
  for (int i = 0; i < reps; i++) {
    double t0 = now();
    f(in, o, NULL);
    t[i] = now() - t0;
  }
  qsort(t, reps, sizeof *t, cmp);
  double m = t[reps / 2];
  printf("%-36s %8.3f %6.1f\n", nm, m * 1e3, tensors * 4.0 * NEL / m / 1e9);
}

int main(int argc, char **argv) {
  argc = bench_isa_args(argc, argv);
  int th = argc > 1 ? atoi(argv[1]) : 1;
  int reps = argc > 2 ? atoi(argv[2]) : 21;
  if (reps > 101) reps = 101;
  rlx_set_num_threads(th);
  float *x = malloc(4 * NEL), *dy = malloc(4 * NEL), *y = malloc(4 * NEL);
  float p[4][C];
  for (long i = 0; i < NEL; i++) {
    x[i] = (float)((i * 7919 % 1000) / 500.0 - 1);
    dy[i] = (float)((i * 104729 % 1000) / 500.0 - 1);
  }
  for (int i = 0; i < C; i++)
    p[0][i] = 1 + i * 1e-3f, p[1][i] = i * 1e-3f, p[2][i] = 0.01f * i,
    p[3][i] = 1 + 0.02f * i;
  const void *gi[] = {x, p[0], p[1], dy};
  const void *bi[] = {x, p[0], p[1], p[2], p[3], dy};
  run("group_norm", (Fn)gnf, gi, y, 2, reps);
  run("group_norm_backward_input", (Fn)gnbx, gi, y, 3, reps);
  run("group_norm_backward_gamma", (Fn)gnbg, gi, y, 2, reps);
  run("group_norm_backward_beta", (Fn)gnbb, gi, y, 1, reps);
  run("batch_norm_inference", (Fn)bnf, bi, y, 2, reps);
  run("batch_norm_inference_backward_input", (Fn)bnbx, bi, y, 2, reps);
  run("batch_norm_inference_backward_gamma", (Fn)bnbg, bi, y, 2, reps);
  run("batch_norm_inference_backward_beta", (Fn)bnbb, bi, y, 1, reps);
  return 0;
}
