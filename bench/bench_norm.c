/* bench_norm.c: times the entries of bench_norm.rlx (see bench_norm.py).
 * Usage: bench_norm THREADS REPS -> one line per kernel: name, median ms,
 * GB/s (bytes read + written / median time). */
#include "lnf.h"
#include "lnbx.h"
#include "lnbg.h"
#include "rlxrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "bench/bench_time.h"

#define R 4096
#define C 1024

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

static void run(const char *nm, Fn f, const void *const *in, void *const *out,
                double bytes, int reps) {
  double t[101];
  f(in, out, NULL);
  for (int i = 0; i < reps; i++) {
    double t0 = now();
    f(in, out, NULL);
    t[i] = now() - t0;
  }
  qsort(t, reps, sizeof *t, cmp);
  printf("%s %.3f %.1f\n", nm, t[reps / 2] * 1e3, bytes / t[reps / 2] / 1e9);
}

int main(int argc, char **argv) {
  argc = bench_isa_args(argc, argv);
  int th = argc > 1 ? atoi(argv[1]) : 1;
  int reps = argc > 2 ? atoi(argv[2]) : 21;
  if (reps > 101) reps = 101;
  rlx_set_num_threads(th);
  float *x = malloc(4.0 * R * C), *dy = malloc(4.0 * R * C);
  float *y = malloc(4.0 * R * C), *g = malloc(4 * C), *b = malloc(4 * C);
  for (long i = 0; i < (long)R * C; i++) {
    x[i] = (float)((i * 7919 % 1000) / 500.0 - 1);
    dy[i] = (float)((i * 104729 % 1000) / 500.0 - 1);
  }
  for (int i = 0; i < C; i++) g[i] = 1 + i * 1e-3f, b[i] = i * 1e-3f;
  double mat = 4.0 * R * C;
  const void *fi[] = {x, g, b}, *bi[] = {x, g, dy}, *gi[] = {x, dy};
  void *fo[] = {y}, *go[] = {g};
  run("layer_norm", (Fn)lnf, fi, fo, 2 * mat, reps);
  run("layer_norm_backward_input", (Fn)lnbx, bi, fo, 3 * mat, reps);
  run("layer_norm_backward_gamma", (Fn)lnbg, gi, go, 2 * mat, reps);
  return 0;
}
