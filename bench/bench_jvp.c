/* bench_jvp.c -- forward mode on the MLP 784-512-512-10 (batch 128,
 * tanh, mean softmax cross-entropy, f32; bench/bench_jvp.rlx): latency
 * of the forward entry, ENTRY_jvp with every param seeded, ENTRY_jvp
 * with only the input %x seeded (`--jvp=%x`), ENTRY_grad and ENTRY_hvp
 * (forward over reverse), at 1 and 2 threads.
 *
 * Built by bench/CMakeLists.txt (target bench_jvp, not in `all`).
 *   bench_jvp [--threads 1,2] [--seconds S] [--rounds N]
 * Prints first checks of the numbers against central differences
 * (f32, step 1e-2; exit status 1 when one is off by more than 2e-2):
 *   check jvp ... rel_err=E      tangent_loss vs FD of the loss along v
 *   check jvp_x ... rel_err=E    the same for the x-only JVP along dx
 *   check grad_dot_tangent=... rel_err=E   <grad, v> of the HVP entry
 *                                vs the JVP's tangent_loss (1e-3)
 *   check hvp ... rel_err=E      H.v vs FD of ENTRY_grad along v (max
 *                                |diff| over max |H.v|, all params)
 * then one line per measurement (bench/bench_time.h's format),
 *   rlx <forward|jvp|jvp_x|grad|hvp> threads=T median_ms=M min_ms=N
 * The five entries are timed interleaved (one call of each in turn, see
 * time_interleaved), for 5 x S seconds per thread count; --rounds N
 * repeats the whole set N times (each round prints its own lines).
 * Last, the workspace bytes of each entry.  bench/bench_jvp_torch.py
 * --rlx PATH runs this next to PyTorch and prints the tables of
 * docs/performance.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_time.h"
#include "bench_jvp.h"
#include "bench_jvp_x.h"
#include "tests/tools/harness.h"

enum { NPARAM = 6, FIRST_PARAM = 2 };

/* Scale inputs first..first+NPARAM-1 of c (params, or tangents laid
 * out like them) by 1/sqrt(fan_in) for a matrix, 0.1 for a bias. */
static void scale_params(HxCall *c, int first)
{
  for (int k = first; k < first + NPARAM; k++) {
    const rlx_tensor_desc *d = c->in[k].desc;
    double s = d->rank == 2 ? 1.0 / sqrt((double)d->dims[0]) : 0.1;
    float *w = c->in[k].data;
    for (int64_t i = 0; i < c->in[k].numel; i++)
      w[i] = (float)(w[i] * s);
  }
}

/* Inputs of the hvp entry, which the others copy: x in [-1, 1), labels
 * i * 7 % 10, params and their tangents uniform in [-1, 1) scaled by
 * scale_params (so tanh does not saturate), d_output = 1. */
static void fill(HxCall *c)
{
  hx_fill_inputs(c, 1);
  int32_t *y = c->in[1].data;
  for (int64_t i = 0; i < c->in[1].numel; i++)
    y[i] = (int32_t)(i * 7 % 10);
  scale_params(c, FIRST_PARAM);
  scale_params(c, bench_jvp_hvp_ARG_tangent_w1);
  hx_set(&c->in[bench_jvp_hvp_ARG_d_output], 0, 1.0);
}

static void copy_primal(HxCall *dst, const HxCall *src)
{
  hx_copy_inputs(dst, src, FIRST_PARAM + NPARAM);
}

static double max_abs(const float *a, int64_t n)
{
  double m = 0;
  for (int64_t i = 0; i < n; i++)
    m = fmax(m, fabs(a[i]));
  return m;
}

/* Central differences of the loss (forward entry) along the tangents
 * tan[k] of inputs first..first+n-1; restores the inputs. */
static double fd_loss(HxCall *f, int first, int n, HxTensor *tan,
                      double eps)
{
  double l[2];
  for (int s = 0; s < 2; s++) {
    for (int k = 0; k < n; k++) {
      float *w = f->in[first + k].data;
      const float *v = tan[k].data;
      for (int64_t i = 0; i < f->in[first + k].numel; i++)
        w[i] += (float)((s ? -2 : 1) * eps * v[i]);
    }
    if (hx_run(f))
      return NAN;
    l[s] = *(float *)f->out[0].data;
  }
  for (int k = 0; k < n; k++) { /* undo the last -eps */
    float *w = f->in[first + k].data;
    const float *v = tan[k].data;
    for (int64_t i = 0; i < f->in[first + k].numel; i++)
      w[i] += (float)(eps * v[i]);
  }
  return (l[0] - l[1]) / (2 * eps);
}

/* The checks printed before the timings; returns 1 when a relative
 * error is above 2e-2 (f32 central differences with eps 1e-2 land near
 * 1e-3 here). */
static int check(HxCall *fwd, HxCall *grad, HxCall *jvp, HxCall *jvpx,
                 HxCall *hvp)
{
  const double eps = 1e-2;
  int bad = 0;
  if (hx_run(jvp) || hx_run(jvpx) || hx_run(hvp))
    return 1;
  double t = *(float *)jvp->out[1].data;
  double fd = fd_loss(fwd, FIRST_PARAM, NPARAM,
                      &jvp->in[FIRST_PARAM + NPARAM], eps);
  double e = fabs(t - fd) / fmax(fabs(fd), 1e-6);
  printf("check jvp tangent=%.6g fd=%.6g rel_err=%.2e\n", t, fd, e);
  bad |= !(e < 2e-2);
  double tx = *(float *)jvpx->out[1].data;
  fd = fd_loss(fwd, 0, 1, &jvpx->in[FIRST_PARAM + NPARAM], eps);
  e = fabs(tx - fd) / fmax(fabs(fd), 1e-6);
  printf("check jvp_x tangent=%.6g fd=%.6g rel_err=%.2e\n", tx, fd, e);
  bad |= !(e < 2e-2);
  double gdv = *(float *)hvp->out[1 + NPARAM].data;
  e = fabs(gdv - t) / fmax(fabs(t), 1e-6);
  printf("check grad_dot_tangent=%.6g jvp_tangent=%.6g rel_err=%.2e\n",
         gdv, t, e);
  bad |= !(e < 1e-3);
  /* H.v against (grad(w + eps v) - grad(w - eps v)) / (2 eps) */
  const int tan0 = FIRST_PARAM + NPARAM + 1; /* after d_output */
  float *gp[NPARAM];
  double diff = 0, ref = 0;
  for (int s = 0; s < 2 && !bad; s++) {
    for (int k = 0; k < NPARAM; k++) {
      float *w = grad->in[FIRST_PARAM + k].data;
      const float *v = hvp->in[tan0 + k].data;
      for (int64_t i = 0; i < grad->in[FIRST_PARAM + k].numel; i++)
        w[i] += (float)((s ? -2 : 1) * eps * v[i]);
    }
    if (hx_run(grad))
      return 1;
    for (int k = 0; k < NPARAM; k++) {
      const float *g = grad->out[1 + k].data;
      int64_t n = grad->out[1 + k].numel;
      if (!s) {
        gp[k] = malloc((size_t)n * sizeof(float));
        if (!gp[k])
          return 1;
        memcpy(gp[k], g, (size_t)n * sizeof(float));
        continue;
      }
      const float *hv = hvp->out[2 + NPARAM + k].data;
      for (int64_t i = 0; i < n; i++)
        diff = fmax(diff, fabs((gp[k][i] - g[i]) / (2 * eps) - hv[i]));
      ref = fmax(ref, max_abs(hv, n));
      free(gp[k]);
    }
  }
  copy_primal(grad, fwd); /* undo the perturbation */
  e = diff / fmax(ref, 1e-12);
  printf("check hvp max_abs_diff=%.3g max_abs_hv=%.3g rel_err=%.2e\n",
         diff, ref, e);
  bad |= !(e < 2e-2);
  fflush(stdout);
  return bad;
}

enum { NENTRY = 5 };
static const char *const entry_name[NENTRY] = {"forward", "jvp", "jvp_x",
                                               "grad", "hvp"};

/* The five entries called in turn, one call each per sweep, for
 * NENTRY * seconds (at least 10 sweeps; 5 warm-up sweeps first): each
 * entry's calls are spread over the same stretch of time, so a burst
 * of load from other processes reaches all of them alike and the
 * ratios between them (jvp / forward, hvp / grad) keep their meaning on
 * a shared machine.  Prints bench_time.h's line per entry. */
static int time_interleaved(HxCall **c, int threads, double seconds)
{
  static double t[NENTRY][MAX_CALLS];
  rlx_set_num_threads(threads);
  for (int w = 0; w < 5; w++)
    for (int e = 0; e < NENTRY; e++)
      if (hx_run(c[e])) {
        fprintf(stderr, "%s failed\n", entry_name[e]);
        return 1;
      }
  int n = 0;
  double start = now_s();
  while (n < MAX_CALLS && (n < 10 || now_s() - start < NENTRY * seconds)) {
    for (int e = 0; e < NENTRY; e++) {
      double t0 = now_s();
      int rc = hx_run(c[e]);
      t[e][n] = now_s() - t0;
      if (rc) {
        fprintf(stderr, "%s failed: %s\n", entry_name[e], rlx_strerror(rc));
        return 1;
      }
    }
    n++;
  }
  for (int e = 0; e < NENTRY; e++) {
    qsort(t[e], (size_t)n, sizeof t[e][0], cmp_double);
    printf("rlx %s threads=%d median_ms=%.3f min_ms=%.3f calls=%d\n",
           entry_name[e], threads, t[e][n / 2] * 1e3, t[e][0] * 1e3, n);
  }
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv)
{
  argc = bench_isa_args(argc, argv);
  int threads[8] = {1, 2}, nt = 2, rounds = 1;
  double seconds = 2.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--seconds"))
      seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--rounds"))
      rounds = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) {
      nt = 0;
      for (char *s = argv[i + 1]; *s && nt < 8; s += *s == ',')
        threads[nt++] = (int)strtol(s, &s, 10);
    }
  }
  HxCall fwd, grad, jvp, jvpx, hvp;
  if (!hx_call_init(&fwd, bench_jvp, bench_jvp_signature(), false) ||
      !hx_call_init(&grad, bench_jvp_grad, bench_jvp_grad_signature(),
                    false) ||
      !hx_call_init(&jvp, bench_jvp_jvp, bench_jvp_jvp_signature(),
                    false) ||
      !hx_call_init(&jvpx, bench_jvp_x_jvp, bench_jvp_x_jvp_signature(),
                    false) ||
      !hx_call_init(&hvp, bench_jvp_hvp, bench_jvp_hvp_signature(),
                    false))
    return 2;
  /* hvp first: its tangents (after d_output) become jvp's, so the
   * checks compare the same direction */
  fill(&hvp);
  copy_primal(&fwd, &hvp);
  copy_primal(&grad, &hvp);
  hx_set(&grad.in[bench_jvp_grad_ARG_d_output], 0, 1.0);
  copy_primal(&jvp, &hvp);
  for (int k = 0; k < NPARAM; k++)
    memcpy(jvp.in[FIRST_PARAM + NPARAM + k].data,
           hvp.in[bench_jvp_hvp_ARG_tangent_w1 + k].data,
           jvp.in[FIRST_PARAM + NPARAM + k].bytes);
  copy_primal(&jvpx, &hvp);
  uint64_t st = 99;
  hx_fill_tensor(&jvpx.in[bench_jvp_x_jvp_ARG_tangent_x], &st);
  rlx_set_num_threads(threads[0]);
  int bad = check(&fwd, &grad, &jvp, &jvpx, &hvp);
  if (bad)
    fprintf(stderr, "bench_jvp: a check failed\n");
  HxCall *calls[NENTRY] = {&fwd, &jvp, &jvpx, &grad, &hvp};
  (void)time_fn; /* bench_time.h's one-entry loop: time_interleaved here */
  for (int r = 0; r < rounds && !bad; r++)
    for (int k = 0; k < nt && !bad; k++)
      bad = time_interleaved(calls, threads[k], seconds);
  printf("workspace_bytes forward=%zu jvp=%zu jvp_x=%zu grad=%zu "
         "hvp=%zu\n",
         (size_t)bench_jvp_WORKSPACE_BYTES,
         (size_t)bench_jvp_jvp_WORKSPACE_BYTES,
         (size_t)bench_jvp_x_jvp_WORKSPACE_BYTES,
         (size_t)bench_jvp_grad_WORKSPACE_BYTES,
         (size_t)bench_jvp_hvp_WORKSPACE_BYTES);
  hx_call_free(&fwd);
  hx_call_free(&grad);
  hx_call_free(&jvp);
  hx_call_free(&jvpx);
  hx_call_free(&hvp);
  return bad;
}
