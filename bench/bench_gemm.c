/* bench_gemm.c -- GFLOP/s of rlx_gemm_f32 / _f64 against OpenBLAS.
 *
 * usage: bench_gemm [--f64] [--ta] [--tb] [--threads=N] [--isa=NAME]
 *                   [--secs=S] [MxNxK ...]
 * --ta / --tb: A stored K x M / B stored N x K (read transposed).
 * Default: f32, sizes 256^3 512^3 1024^3 2048^3 512x3072x768, with 1
 * and 2 threads.  Each figure is the best of repeated runs over about
 * --secs seconds per library (default 0.5), in alternating blocks (see
 * measure), after a warm-up.  Row-major,
 * no transposes, C overwritten.  Before timing, the two results are
 * compared (max relative difference printed as "diff").
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rlxrt.h"

typedef struct {
  int64_t m, n, k;
} Size;

typedef struct {
  int f64;
  int ta, tb; /* A stored as K x M / B stored as N x K (transposed) */
  double secs;
  const float *a32, *b32;
  const double *a64, *b64;
  float *c32;
  double *c64;
} Bench;

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run_rlx(const Bench *bn, Size s)
{
  int64_t a_rs = bn->ta ? 1 : s.k, a_cs = bn->ta ? s.m : 1;
  int64_t b_rs = bn->tb ? 1 : s.n, b_cs = bn->tb ? s.k : 1;
  if (bn->f64)
    rlx_gemm_f64(1, s.m, s.n, s.k, bn->a64, 0, a_rs, a_cs, bn->b64, 0,
                 b_rs, b_cs, bn->c64, 0, s.n, 0);
  else
    rlx_gemm_f32(1, s.m, s.n, s.k, bn->a32, 0, a_rs, a_cs, bn->b32, 0,
                 b_rs, b_cs, bn->c32, 0, s.n, 0);
}

static void run_blas(const Bench *bn, Size s)
{
  enum CBLAS_TRANSPOSE ta = bn->ta ? CblasTrans : CblasNoTrans;
  enum CBLAS_TRANSPOSE tb = bn->tb ? CblasTrans : CblasNoTrans;
  int lda = bn->ta ? s.m : s.k, ldb = bn->tb ? s.k : s.n;
  if (bn->f64)
    cblas_dgemm(CblasRowMajor, ta, tb, s.m, s.n, s.k, 1.0, bn->a64, lda,
                bn->b64, ldb, 0.0, bn->c64, s.n);
  else
    cblas_sgemm(CblasRowMajor, ta, tb, s.m, s.n, s.k, 1.0f, bn->a32, lda,
                bn->b32, ldb, 0.0f, bn->c32, s.n);
}

static double time_once(const Bench *bn, Size s,
                        void (*fn)(const Bench *, Size))
{
  double t0 = now();
  fn(bn, s);
  return now() - t0;
}

/* Best time of fn over calls lasting about `secs`. */
static double best_block(const Bench *bn, Size s, double secs,
                         void (*fn)(const Bench *, Size))
{
  double best = 1e30, start = now();
  for (int reps = 0; reps < 2 || now() - start < secs; reps++)
    best = fmin(best, time_once(bn, s, fn));
  return best;
}

/* Best GFLOP/s of rlx (g[0]) and OpenBLAS (g[1]), measured in blocks
   that alternate three times, each after a 0.2 s pause: OpenBLAS's
   idle workers spin for a while after each call, and would otherwise
   steal the CPUs of rlx's workers (and the noise of a shared machine
   would hit one library more than the other). */
static void measure(const Bench *bn, Size s, double g[2])
{
  double best[2] = {1e30, 1e30};
  for (int round = 0; round < 3; round++) {
    nanosleep(&(struct timespec){0, 200000000}, NULL);
    best[0] = fmin(best[0], best_block(bn, s, bn->secs / 3, run_rlx));
    nanosleep(&(struct timespec){0, 200000000}, NULL);
    best[1] = fmin(best[1], best_block(bn, s, bn->secs / 3, run_blas));
  }
  for (int i = 0; i < 2; i++)
    g[i] = 2.0 * s.m * s.n * s.k / best[i] * 1e-9;
}

/* Max |rlx - blas| / (max |blas| + tiny) over C. */
static double compare(Bench *bn, Size s)
{
  size_t len = (size_t)(s.m * s.n);
  double *ref = malloc(len * sizeof *ref), diff = 0, mag = 1e-30;
  run_blas(bn, s);
  for (size_t i = 0; i < len; i++)
    ref[i] = bn->f64 ? bn->c64[i] : bn->c32[i];
  run_rlx(bn, s);
  for (size_t i = 0; i < len; i++) {
    double v = bn->f64 ? bn->c64[i] : bn->c32[i];
    diff = fmax(diff, fabs(v - ref[i]));
    mag = fmax(mag, fabs(ref[i]));
  }
  free(ref);
  return diff / mag;
}

static void *random_buf(size_t count, int f64)
{
  void *p = rlx_alloc(count * (f64 ? 8 : 4));
  for (size_t i = 0; i < count; i++) {
    double v = (double)rand() / RAND_MAX * 2 - 1;
    if (f64)
      ((double *)p)[i] = v;
    else
      ((float *)p)[i] = (float)v;
  }
  return p;
}

static void bench_size(Bench *bn, Size s, int threads)
{
  void *a = random_buf((size_t)(s.m * s.k), bn->f64);
  void *b = random_buf((size_t)(s.k * s.n), bn->f64);
  void *c = random_buf((size_t)(s.m * s.n), bn->f64);
  bn->a32 = a, bn->b32 = b, bn->c32 = c;
  bn->a64 = a, bn->b64 = b, bn->c64 = c;
  rlx_set_num_threads(threads);
  openblas_set_num_threads(threads);
  double diff = compare(bn, s);
  double g[2];
  measure(bn, s, g);
  printf("%-4s %5lld %5lld %5lld  thr %d  rlx %7.1f  openblas %7.1f"
         "  ratio %5.3f  diff %.1e\n", bn->f64 ? "f64" : "f32",
         (long long)s.m, (long long)s.n, (long long)s.k, threads, g[0],
         g[1], g[0] / g[1], diff);
  fflush(stdout);
  rlx_free(a);
  rlx_free(b);
  rlx_free(c);
}

/* Spin up both pools and the clocks before the first measurement. */
static void warm_up(Bench *bn, int threads)
{
  Size s = {256, 256, 256};
  void *a = random_buf(256 * 256, bn->f64);
  bn->a32 = bn->b32 = bn->c32 = a;
  bn->a64 = bn->b64 = bn->c64 = a;
  float *c = rlx_alloc(256 * 256 * 8);
  bn->c32 = c;
  bn->c64 = (double *)c;
  rlx_set_num_threads(threads);
  openblas_set_num_threads(threads);
  for (double t0 = now(); now() - t0 < 0.5;) {
    run_rlx(bn, s);
    run_blas(bn, s);
  }
  rlx_free(a);
  rlx_free(c);
}

int main(int argc, char **argv)
{
  Bench bn = {0, 0, 0, 0.5, 0, 0, 0, 0, 0, 0};
  Size sizes[32] = {{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024},
                    {2048, 2048, 2048}, {512, 3072, 768}};
  int nsizes = 5, given = 0, threads = 0;
  for (int i = 1; i < argc; i++) {
    long long m, n, k;
    if (strcmp(argv[i], "--f64") == 0)
      bn.f64 = 1;
    else if (strcmp(argv[i], "--ta") == 0)
      bn.ta = 1;
    else if (strcmp(argv[i], "--tb") == 0)
      bn.tb = 1;
    else if (strncmp(argv[i], "--threads=", 10) == 0)
      threads = atoi(argv[i] + 10);
    else if (strncmp(argv[i], "--secs=", 7) == 0)
      bn.secs = atof(argv[i] + 7);
    else if (strncmp(argv[i], "--isa=", 6) == 0) {
      if (rlx_gemm_select_isa(argv[i] + 6) != RLX_OK)
        fprintf(stderr, "isa %s not available\n", argv[i] + 6);
    } else if (sscanf(argv[i], "%lldx%lldx%lld", &m, &n, &k) == 3 &&
               given < 32)
      sizes[given++] = (Size){m, n, k};
  }
  if (given)
    nsizes = given;
  printf("# rlxrt kernels: %s; GFLOP/s, best of runs%s%s\n",
         rlx_gemm_isa(), bn.ta ? "; A transposed" : "",
         bn.tb ? "; B transposed" : "");
  for (int t = 1; t <= 2; t++) {
    if (threads && t != threads)
      continue;
    warm_up(&bn, t);
    for (int i = 0; i < nsizes; i++)
      bench_size(&bn, sizes[i], t);
  }
  return 0;
}
