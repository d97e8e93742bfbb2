/* bench_rng.c -- rlx_rng_uniform_f32 and rlx_rng_normal_f32 (the
 * kernels of rng_uniform / rng_normal) on a [4096, 4096] tensor, next
 * to an elementwise mul of that size (a dropout mask must not cost
 * more than the product it masks). One line per kernel (bench_time.h)
 * plus its rate in samples per second:
 *   rlx WHAT threads=T median_ms=M min_ms=N calls=C cpu_ms=P cpu_min_ms=Q
 *   rlx WHAT msamples_per_s=R
 * Usage: bench_rng [--threads=T] [--secs=S] [--n=ELEMENTS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_time.h"

typedef struct {
  float *a, *b, *c;
  int64_t n;
  uint64_t seed;
} Ctx;

static int uniform(void *p)
{
  Ctx *x = p;
  return rlx_rng_uniform_f32(x->c, x->n, x->seed++);
}

static int normal(void *p)
{
  Ctx *x = p;
  return rlx_rng_normal_f32(x->c, x->n, x->seed++);
}

static int mul(void *p)
{
  Ctx *x = p;
  for (int64_t i = 0; i < x->n; i++)
    x->c[i] = x->a[i] * x->b[i];
  return 0;
}

int main(int argc, char **argv)
{
  argc = bench_isa_args(argc, argv);
  int threads = 1;
  double secs = 1.0;
  int64_t n = 4096 * 4096;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--threads=", 10))
      threads = atoi(argv[i] + 10);
    else if (!strncmp(argv[i], "--secs=", 7))
      secs = atof(argv[i] + 7);
    else if (!strncmp(argv[i], "--n=", 4))
      n = atoll(argv[i] + 4);
  }
  Ctx x = {malloc(n * 4), malloc(n * 4), malloc(n * 4), n, 1};
  rlx_rng_uniform_f32(x.a, n, 100);
  rlx_rng_uniform_f32(x.b, n, 101);
  struct {
    const char *what;
    BenchFn fn;
  } k[3] = {{"rng_uniform", uniform}, {"rng_normal", normal}, {"mul", mul}};
  for (int i = 0; i < 3; i++) {
    if (time_fn(k[i].fn, &x, k[i].what, threads, secs))
      return 1;
  }
  free(x.a);
  free(x.b);
  free(x.c);
  return 0;
}
