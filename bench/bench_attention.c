/* bench_attention.c -- GFLOP/s of the attention kernels (rlx_attention_*)
 * next to the single-GEMM rate of rlx_gemm_f32 (512^3) as the peak.
 *
 * usage: bench_attention [--threads=N] [--secs=S] [--isa=NAME]
 *                        [--lens=256,1024,4096]
 * (threads: also env RLX_NUM_THREADS; default 1).  f32, B = 1, H = 8,
 * D = 64, layout 4, scale 1/8, masks none and causal.  fwd is
 * rlx_attention_f32 (o and lse); fwd+bwd is that plus
 * rlx_attention_bwd_f32 with the forward's o and lse (dq, dk, dv).
 * Flops counted, per (b, h): forward 2 matmuls (S = Q K^T, O = P V),
 * 4 L^2 D; backward 5 (S again, dV, dP, dQ, dK), 10 L^2 D; so fwd+bwd
 * 14 L^2 D; causal counts half (the unmasked work).  Softmax, exp and
 * masking are not counted.  Output lines, median and minimum of the
 * calls of about --secs seconds (default 1) after warm-up:
 *   rlx attn L=.. mask=.. fwd threads=T median_ms=.. min_ms=..
 *       gflops=.. (median) gflops_best=.. (min)
 * Compare with PyTorch: OPENBLAS_NUM_THREADS=1 /usr/bin/python3
 * bench/bench_attention_torch.py (same shapes and flop counts).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_time.h" /* now_s, cmp_double, MAX_CALLS */
#include "runtime/rlxrt.h"

typedef struct {
  rlx_attn_geom g;
  float *q, *k, *v, *o, *lse, *dy, *dq, *dk, *dv;
  void *sf, *sb;
  int bwd;
} Job;

static float *filled(int64_t n)
{
  float *p = rlx_alloc((size_t)n * sizeof *p);
  for (int64_t i = 0; i < n; i++)
    p[i] = (float)rand() / RAND_MAX - 0.5f;
  return p;
}

static void run_job(const Job *j)
{
  rlx_attention_f32(&j->g, j->q, j->k, j->v, NULL, j->o, j->lse, j->sf);
  if (j->bwd)
    rlx_attention_bwd_f32(&j->g, j->q, j->k, j->v, NULL, j->dy, j->o,
                          j->lse, j->dq, j->dk, j->dv, NULL, j->sb);
}

typedef struct {
  int64_t m, n, k;
  float *a, *b, *c;
} Gemm;

static void run_gemm(const Gemm *s)
{
  rlx_gemm_f32(1, s->m, s->n, s->k, s->a, 0, s->k, 1, s->b, 0, s->n, 1,
               s->c, 0, s->n, 0);
}

/* Median and minimum seconds of calls for about `secs` (>= 5 calls). */
static void timed(void (*fn)(const void *), const void *ctx, double secs,
                  double *med, double *mn)
{
  static double t[MAX_CALLS];
  for (int i = 0; i < 2; i++)
    fn(ctx);
  int n = 0;
  double start = now_s();
  while (n < MAX_CALLS && (n < 5 || now_s() - start < secs)) {
    double t0 = now_s();
    fn(ctx);
    t[n++] = now_s() - t0;
  }
  qsort(t, (size_t)n, sizeof t[0], cmp_double);
  *med = t[n / 2];
  *mn = t[0];
}

static void report(const char *what, int threads, double flops, double med,
                   double mn)
{
  printf("rlx %s threads=%d median_ms=%.3f min_ms=%.3f gflops=%.1f "
         "gflops_best=%.1f\n", what, threads, med * 1e3, mn * 1e3,
         flops / med * 1e-9, flops / mn * 1e-9);
  fflush(stdout);
}

int main(int argc, char **argv)
{
  int threads = getenv("RLX_NUM_THREADS") ? atoi(getenv("RLX_NUM_THREADS"))
                                          : 1;
  double secs = 1;
  (void)time_fn; /* bench_time.h's line has no GFLOP/s: timed() below */
  const char *isa = NULL, *lens = "256,1024,4096";
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--threads=", 10))
      threads = atoi(argv[i] + 10);
    else if (!strncmp(argv[i], "--secs=", 7))
      secs = atof(argv[i] + 7);
    else if (!strncmp(argv[i], "--isa=", 6))
      isa = argv[i] + 6;
    else if (!strncmp(argv[i], "--lens=", 7))
      lens = argv[i] + 7;
    else {
      fprintf(stderr, "usage: %s [--threads=N] [--secs=S] [--isa=NAME] "
              "[--lens=L,...]\n", argv[0]);
      return 2;
    }
  }
  if (threads < 1)
    threads = 1;
  if (isa && rlx_gemm_select_isa(isa) != RLX_OK) {
    fprintf(stderr, "isa %s not available\n", isa);
    return 1;
  }
  rlx_set_num_threads(threads);
  printf("# isa=%s threads=%d\n", rlx_gemm_isa(), threads);

  Gemm gm = {512, 512, 512, filled(512 * 512), filled(512 * 512),
             filled(512 * 512)};
  double med, mn;
  timed((void (*)(const void *))run_gemm, &gm, secs, &med, &mn);
  report("gemm 512x512x512", threads, 2.0 * 512 * 512 * 512, med, mn);

  for (const char *p = lens; *p;) {
    int64_t L = strtoll(p, (char **)&p, 10);
    if (*p == ',')
      p++;
    for (int causal = 0; causal < 2; causal++) {
      Job j = {.g = {1, 8, L, L, 64, 4,
                     causal ? RLX_ATTN_CAUSAL : RLX_ATTN_NONE, 0, 0.125, 0}};
      int64_t n = j.g.b * j.g.h * L * j.g.d;
      j.q = filled(n), j.k = filled(n), j.v = filled(n), j.dy = filled(n);
      j.o = filled(n), j.dq = filled(n), j.dk = filled(n), j.dv = filled(n);
      j.lse = filled(j.g.b * j.g.h * L);
      j.sf = rlx_alloc((size_t)rlx_attention_scratch_bytes(&j.g,
                                                           RLX_ATTN_FWD, 4));
      j.sb = rlx_alloc((size_t)rlx_attention_scratch_bytes(&j.g,
                                                           RLX_ATTN_BWD, 4));
      double unit = (double)j.g.b * j.g.h * L * L * j.g.d * (causal ? 0.5 : 1);
      for (j.bwd = 0; j.bwd < 2; j.bwd++) {
        char what[96];
        snprintf(what, sizeof what, "attn L=%lld mask=%s %s", (long long)L,
                 causal ? "causal" : "none", j.bwd ? "fwd+bwd" : "fwd");
        timed((void (*)(const void *))run_job, &j, secs, &med, &mn);
        report(what, threads, (j.bwd ? 14 : 4) * unit, med, mn);
      }
      float *bufs[] = {j.q, j.k, j.v, j.dy, j.o, j.dq, j.dk, j.dv, j.lse};
      for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        rlx_free(bufs[i]);
      rlx_free(j.sf);
      rlx_free(j.sb);
    }
  }
  rlx_free(gm.a);
  rlx_free(gm.b);
  rlx_free(gm.c);
  return 0;
}
