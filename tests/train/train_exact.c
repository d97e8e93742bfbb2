/* train_exact.c -- a compiled NAME_train of tests/train/exact/lin.rlx
 * against an exact C reference of its update (driven by run_train.py
 * --exact).
 *
 * usage: train_exact LIB.so ENTRY sgd|momentum|adamw
 * lin.rlx is loss = reduce_sum(w * x + b), x and w [R, C], b [C], so
 * the gradients are exact whatever the order of the sums: g_w = x,
 * g_b = R. The reference repeats passes/ad/train.c's update op by op
 * in the same dtype (f32, and f64 for AdamW's bias corrections; this
 * file is compiled without FP contraction), so every param and state
 * piece must be bitwise equal to it after every step, at 1 and at 2
 * threads. Groups that store their side outputs (fuse.c) must give the
 * same bits as separate loops did: the update is the same arithmetic.
 * Prints one line per failure and "PASS" or "FAIL".
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entry.h"
#include "rlxrt.h"

enum { STEPS = 3, MAXA = 16 };


typedef struct {
  float lr, b1, b2, eps, mom, wd;
} Hyper;

static int failures;

static size_t numel(const rlx_tensor_desc *d) {
  size_t n = 1;
  for (int i = 0; i < d->rank; i++) n *= (size_t)d->dims[i];
  return n;
}

static size_t piece(size_t bytes) { return (bytes + 63) / 64 * 64; }

/* One param's reference update over n elements with gradient g (f32),
 * state pieces m, v (adamw) or m (momentum); t = the step count after
 * this step (adamw). As passes/ad/train.c builds it. */
static void ref_update(const char *opt, const Hyper *h, float *p,
                       const float *g, float *m, float *v, size_t n,
                       float t) {
  float one = 1;
  if (!strcmp(opt, "adamw")) {
    double s64 = t, d1 = 1;
    double bc1 = d1 - pow((double)h->b1, s64);
    double bc2 = d1 - pow((double)h->b2, s64);
    float step_size = (float)((double)h->lr / bc1);
    float bc2_sqrt = (float)sqrt(bc2);
    float decay = one - h->lr * h->wd;
    for (size_t i = 0; i < n; i++) {
      float nm = m[i] + (one - h->b1) * (g[i] - m[i]);
      float nv = v[i] * h->b2 + (one - h->b2) * (g[i] * g[i]);
      float denom = sqrtf(nv) / bc2_sqrt + h->eps;
      p[i] = p[i] * decay - step_size * (nm / denom);
      m[i] = nm;
      v[i] = nv;
    }
    return;
  }
  for (size_t i = 0; i < n; i++) {
    float gd = g[i] + h->wd * p[i];
    if (m) gd = h->mom * m[i] + gd, m[i] = gd;
    p[i] = p[i] - h->lr * gd;
  }
}

static void check(const char *what, const void *got, const void *want,
                  size_t n, int run, int step) {
  const float *a = got, *b = want;
  for (size_t i = 0; i < n; i++)
    if (memcmp(&a[i], &b[i], sizeof *a)) {
      printf("FAIL: run %d step %d %s[%zu]: got %.9g, want %.9g\n", run,
             step, what, i, a[i], b[i]);
      failures++;
      return;
    }
}

/* One run of STEPS calls from the same start; the reference alongside. */
static bool run(EntryFn fn, const rlx_signature *sig, const char *opt,
                const Hyper *h, int r) {
  const rlx_tensor_desc *dx = &sig->inputs[0], *dw = &sig->inputs[1];
  size_t nw = numel(dw), nb = numel(&sig->inputs[2]);
  size_t rows = (size_t)dw->dims[0];
  bool adamw = !strcmp(opt, "adamw"), mom = !strcmp(opt, "momentum");
  size_t off[5], sb = 0; /* state: m_w m_b (v_w v_b step) */
  for (int k = 0; k < (adamw ? 5 : mom ? 2 : 0); k++) {
    off[k] = sb;
    sb += piece((k == 4 ? 1 : k % 2 ? nb : nw) * sizeof(float));
  }
  float *x = calloc(nw, 4), *w = calloc(nw, 4), *b = calloc(nb, 4);
  float *rw = calloc(nw, 4), *rb = calloc(nb, 4), *gb = calloc(nb, 4);
  char *st = calloc(sb + 64, 1), *rst = calloc(sb + 64, 1);
  uint32_t seed = 12345;
  for (size_t i = 0; i < nw + nw + nb; i++) {
    seed = seed * 1664525u + 1013904223u;
    float u = (float)(seed >> 8) / 16777216.0f * 2 - 1;
    if (i < nw) x[i] = u;
    else if (i < 2 * nw) w[i - nw] = u;
    else b[i - 2 * nw] = u;
  }
  for (size_t j = 0; j < nb; j++) gb[j] = (float)rows;
  memcpy(rw, w, nw * 4);
  memcpy(rb, b, nb * 4);
  float hv[5] = {h->lr, h->b1, h->b2, h->eps, h->wd}, loss;
  if (mom) hv[1] = h->mom, hv[2] = h->wd;
  if (!adamw && !mom) hv[1] = h->wd;
  const void *in[MAXA] = {x, w, b};
  int nh = sig->num_inputs - 4;
  for (int i = 0; i < nh; i++) in[3 + i] = &hv[i];
  in[3 + nh] = st;
  void *out[MAXA] = {&loss};
  void *ws = malloc(sig->workspace_bytes + 64);
  rlx_set_num_threads(r + 1);
  bool ok = numel(dx) == nw && sig->num_outputs == 1;
  for (int s = 0; ok && s < STEPS; s++) {
    if (fn(in, out, r ? ws : NULL)) {
      printf("FAIL: run %d step %d: the entry failed\n", r, s);
      failures++;
      break;
    }
    float t = (float)(s + 1);
    float *m = adamw || mom ? (float *)(rst + off[0]) : NULL;
    float *v = adamw ? (float *)(rst + off[2]) : NULL;
    ref_update(opt, h, rw, x, m, v, nw, t);
    m = adamw || mom ? (float *)(rst + off[1]) : NULL;
    v = adamw ? (float *)(rst + off[3]) : NULL;
    ref_update(opt, h, rb, gb, m, v, nb, t);
    if (adamw) memcpy(rst + off[4], &t, 4);
    check("w", w, rw, nw, r, s);
    check("b", b, rb, nb, r, s);
    check("state", st, rst, sb / 4, r, s);
  }
  free(x), free(w), free(b), free(rw), free(rb), free(gb), free(st);
  free(rst), free(ws);
  if (!ok) printf("FAIL: unexpected signature\n"), failures++;
  return ok;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: train_exact LIB.so ENTRY OPT\n");
    return 2;
  }
  EntryFn fn;
  SigFn sf;
  if (!load_entry(argv[1], argv[2], &fn, &sf)) return 1;
  Hyper h = {0.01f, 0.9f, 0.999f, 1e-8f, 0.9f, 0.1f};
  for (int r = 0; r < 2; r++)
    if (!run(fn, sf(), argv[3], &h, r)) break;
  printf("%s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
