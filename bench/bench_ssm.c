/* bench_ssm.c -- time the fused sequence-block kernels of runtime/ssm/ssm.c:
 * rlx_selective_scan_f32 (Mamba) and rlx_gated_delta_net_f32.
 *
 * usage: bench_ssm [--threads=N] [--secs=S] [--isa=NAME]
 *                  [--shape=B,S,H,N] [--gdn=B,S,H,N]
 * (threads: also env RLX_NUM_THREADS; default 1; isa: avx512, avx2, neon
 * or scalar, default the widest the CPU has, capped by RLX_ISA).  Defaults: selective
 * scan b=8, s=1024, h=256, n=16; gated delta net b=8, s=1024, H=8,
 * n=64.  Inputs as in tests/tools/e2e_cases_seq.py: x, b, c uniform in
 * [-1, 1), delta in [0.05, 0.6), a in [-2, -0.2).  One line per kernel,
 * median and minimum of the calls of about --secs seconds (default 1)
 * after warm-up (bench_time.h):
 *   rlx selective_scan b=8 s=1024 h=256 n=16 threads=T median_ms=..
 *       min_ms=.. calls=..
 * then, a load-independent companion (the wall time of a loaded machine
 * counts the time other jobs hold the core), the process CPU time per
 * call over 10 more calls:
 *   # cpu selective_scan ... cpu_median_ms=.. cpu_min_ms=..
 * (at 1 thread the work's own time; with more threads, the pool's too).
 * Compare with PyTorch: OPENBLAS_NUM_THREADS=1 /usr/bin/python3
 * bench/bench_ssm_torch.py --rlx build/bench/bench_ssm (alternating
 * runs, the same shapes; --op gdn for gated_delta_net).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_time.h"
#include "runtime/rlxrt.h"

typedef struct {
  int64_t b, s, h, n;
  float *x, *d, *a, *bm, *cm, *y;
  void *scratch;
  int gdn;
} Job;

static float *filled(int64_t n, float lo, float hi)
{
  float *p = rlx_alloc((size_t)n * sizeof *p);
  for (int64_t i = 0; i < n; i++)
    p[i] = lo + (hi - lo) * (float)rand() / RAND_MAX;
  return p;
}

static int run(void *ctx)
{
  const Job *j = ctx;
  if (j->gdn)
    rlx_gated_delta_net_f32(j->b, j->s, j->h, j->n, j->x, j->d, j->a,
                            j->bm, j->cm, j->y, j->scratch);
  else
    rlx_selective_scan_f32(j->b, j->s, j->h, j->n, j->x, j->d, j->a,
                           j->bm, j->cm, j->y, j->scratch);
  return 0;
}

static double cpu_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* The "# cpu" line: process CPU time of each of 10 calls. */
static void cpu_line(Job *j, const char *what)
{
  double t[10];
  for (int i = 0; i < 10; i++) {
    double t0 = cpu_ms();
    run(j);
    t[i] = cpu_ms() - t0;
  }
  qsort(t, 10, sizeof t[0], cmp_double);
  printf("# cpu %s cpu_median_ms=%.3f cpu_min_ms=%.3f\n", what, t[5], t[0]);
}

static void parse4(const char *s, int64_t *v)
{
  for (int i = 0; i < 4 && *s; i++) {
    v[i] = strtoll(s, (char **)&s, 10);
    if (*s == ',')
      s++;
  }
}

int main(int argc, char **argv)
{
  int threads = getenv("RLX_NUM_THREADS") ? atoi(getenv("RLX_NUM_THREADS"))
                                          : 1;
  double secs = 1;
  int64_t ss[4] = {8, 1024, 256, 16}, gd[4] = {8, 1024, 8, 64};
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--threads=", 10))
      threads = atoi(argv[i] + 10);
    else if (!strncmp(argv[i], "--secs=", 7))
      secs = atof(argv[i] + 7);
    else if (!strncmp(argv[i], "--isa=", 6)) {
      if (rlx_gemm_select_isa(argv[i] + 6) != RLX_OK) {
        fprintf(stderr, "isa %s not available\n", argv[i] + 6);
        return 1;
      }
    } else if (!strncmp(argv[i], "--shape=", 8))
      parse4(argv[i] + 8, ss);
    else if (!strncmp(argv[i], "--gdn=", 6))
      parse4(argv[i] + 6, gd);
    else {
      fprintf(stderr, "usage: %s [--threads=N] [--secs=S] [--isa=NAME] "
              "[--shape=B,S,H,N] [--gdn=B,S,H,N]\n", argv[0]);
      return 2;
    }
  }
  if (threads < 1)
    threads = 1;
  printf("# isa=%s threads=%d\n", rlx_gemm_isa(), threads);
  for (int gdn = 0; gdn < 2; gdn++) {
    const int64_t *g = gdn ? gd : ss;
    Job j = {g[0], g[1], g[2], g[3], .gdn = gdn};
    int64_t bs = j.b * j.s;
    if (gdn) {
      int64_t e = bs * j.h * j.n;
      j.x = filled(e, -1, 1), j.d = filled(e, -0.125f, 0.125f);
      j.a = filled(e, -1, 1), j.bm = filled(bs * j.h, -0.7f, -0.05f);
      j.cm = filled(bs * j.h, 0.1f, 0.9f), j.y = filled(e, 0, 0);
      j.scratch = rlx_alloc((size_t)rlx_gated_delta_net_scratch_bytes(
          j.b, j.h, j.n, 4));
    } else {
      j.x = filled(bs * j.h, -1, 1), j.d = filled(bs * j.h, 0.05f, 0.6f);
      j.a = filled(j.h * j.n, -2, -0.2f), j.bm = filled(bs * j.n, -1, 1);
      j.cm = filled(bs * j.n, -1, 1), j.y = filled(bs * j.h, 0, 0);
      j.scratch = rlx_alloc((size_t)rlx_selective_scan_scratch_bytes(
          j.b, j.h, j.n, 4));
    }
    char what[96];
    snprintf(what, sizeof what, "%s b=%lld s=%lld h=%lld n=%lld",
             gdn ? "gated_delta_net" : "selective_scan", (long long)j.b,
             (long long)j.s, (long long)j.h, (long long)j.n);
    if (time_fn(run, &j, what, threads, secs))
      return 1;
    cpu_line(&j, what);
    float *bufs[] = {j.x, j.d, j.a, j.bm, j.cm, j.y};
    for (int i = 0; i < 6; i++)
      rlx_free(bufs[i]);
    rlx_free(j.scratch);
  }
  return 0;
}
