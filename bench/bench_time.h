/* bench_time.h -- the timing loop the model benchmarks share
 * (bench_mlp.c, bench_models.c, ...) and the --isa option of all: warm up, call until `seconds` have
 * passed (at least 10 calls), print one line
 *   rlx WHAT threads=T median_ms=M min_ms=N calls=C cpu_ms=P cpu_min_ms=Q
 * (P, Q: median and minimum process CPU time per call; at one thread
 * the time the call needed while scheduled, robust to a shared machine)
 * Header-only (static functions): each benchmark is one file. */
#ifndef RLX_BENCH_TIME_H
#define RLX_BENCH_TIME_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rlxrt.h"

#define MAX_CALLS 2000

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* --isa=NAME, accepted by every benchmark: run the runtime's kernels
 * for that ISA (rlx_gemm_select_isa; RLX_ISA=NAME does the same for a
 * whole process).  Removes the option from argv, prints "# isa=NAME"
 * (the kernels in use, with or without the option) and returns the new
 * argc; exits with status 2 when this CPU or build lacks the ISA. */
static inline int bench_isa_args(int argc, char **argv)
{
  int n = 1;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--isa=", 6) != 0) {
      argv[n++] = argv[i];
      continue;
    }
    if (rlx_gemm_select_isa(argv[i] + 6) != RLX_OK) {
      fprintf(stderr, "isa %s not available\n", argv[i] + 6);
      exit(2);
    }
  }
  argv[n] = NULL;
  printf("# isa=%s\n", rlx_gemm_isa());
  return n;
}

typedef int (*BenchFn)(void *ctx);

static double cpu_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Warm up, then call fn until `seconds` have passed (at least 10
 * calls); print the median and the minimum, of wall and CPU time. */
static int time_fn(BenchFn fn, void *ctx, const char *what, int threads,
                   double seconds)
{
  static double t[MAX_CALLS], cpu[MAX_CALLS];
  rlx_set_num_threads(threads);
  int rc = 0;
  for (int i = 0; i < 5 && !rc; i++)
    rc = fn(ctx);
  int n = 0;
  double start = now_s();
  while (!rc && n < MAX_CALLS && (n < 10 || now_s() - start < seconds)) {
    double t0 = now_s(), c0 = cpu_s();
    rc = fn(ctx);
    cpu[n] = cpu_s() - c0;
    t[n++] = now_s() - t0;
  }
  if (rc) {
    fprintf(stderr, "%s failed: %s\n", what, rlx_strerror(rc));
    return 1;
  }
  qsort(t, (size_t)n, sizeof t[0], cmp_double);
  qsort(cpu, (size_t)n, sizeof cpu[0], cmp_double);
  printf("rlx %s threads=%d median_ms=%.3f min_ms=%.3f calls=%d "
         "cpu_ms=%.3f cpu_min_ms=%.3f\n", what, threads, t[n / 2] * 1e3,
         t[0] * 1e3, n, cpu[n / 2] * 1e3, cpu[0] * 1e3);
  fflush(stdout);
  return 0;
}

#endif
