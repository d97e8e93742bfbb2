/* dyn_fd.c: checks the derivative entries of a tests/dynamic case in
 * f64 (rlxc --grad [--jvp --hvp] --name=model) against central finite
 * differences of its forward entry, at every size in SIZES, from one
 * object: model_grad's gradients, model_jvp's tangent of the loss and
 * model_hvp's H v (differences of model_grad), and where the case has
 * model_train (SGD), that one step moves every param by -lr * gradient. The case's inputs are
 * `x` (f64, dynamic), `y` (i32 labels in [0, 3)), any other f64
 * inputs and then its params (static, f64); the loss is its only
 * return. Without model_hvp (a case compiled with --grad only) it
 * checks the gradients alone. Size 0 must run
 * and give zero gradients. Built with -DRLX_GPU, every entry runs on
 * the GPU (dyn_gpu.h). Exit 0: pass. */
#include "model.h"
#include "dyn_gpu.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NIN = model_NUM_INPUTS, NP = model_grad_NUM_OUTPUTS - 1 };
static const int64_t SIZES[] = {0, 1, 3, 16};
static const double EPS = 1e-5;

static int fails;
static uint64_t rng = 0x9e3779b97f4a7c15u;

static double uni(void) { /* [-1, 1) */
  rng = rng * 6364136223846793005u + 1442695040888963407u;
  return (double)(rng >> 11) / (double)(1ull << 52) - 1.0;
}

static void expect(bool ok, const char *what, int64_t b, int k, double got,
                   double ref) {
  if (ok) return;
  printf("FAIL %s size %lld [%d]: %.12g vs %.12g\n", what, (long long)b, k,
         got, ref);
  fails++;
}

static bool near(double got, double ref, double scale) {
  return fabs(got - ref) <= 1e-6 * fabs(ref) + 1e-7 * fmax(1, scale);
}

static double *in[NIN];
static int64_t np[NP];
static int64_t bsz;

static double loss_at(void) {
  double l;
  void *out[1] = {&l};
  if (CALL(model, in, out, &bsz)) exit(2);
  return l;
}

/* g[j] = model_grad's gradients (params concatenated) */
static void grad_at(double *g) {
  double one = 1, l;
  const void *gi[NIN + 1];
  for (int i = 0; i < NIN; i++) gi[i] = in[i];
  gi[NIN] = &one;
  void *go[NP + 1] = {&l};
  for (int j = 0, off = 0; j < NP; off += (int)np[j++]) go[1 + j] = g + off;
  if (CALL(model_grad, gi, go, &bsz)) exit(2);
}

int main(void) {
  const rlx_signature *sig = model_signature();
  int64_t total = 0;
  for (int i = 0; i < NIN; i++) {
    const rlx_tensor_desc *d = &sig->inputs[i];
    int64_t n = 1;
    for (int k = 0; k < d->rank; k++)
      n *= d->dims[k] < 0 ? SIZES[3] : d->dims[k]; /* dynamic: the bound */
    in[i] = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t k = 0; k < n; k++)
      if (i == 1) ((int32_t *)in[i])[k] = (int32_t)((uni() + 1) * 1.5);
      else in[i][k] = uni();
    if (i >= NIN - NP) total += np[i - (NIN - NP)] = n;
  }
  double *g = malloc(sizeof(double) * (size_t)total),
         *v = malloc(sizeof(double) * (size_t)total),
         *gp = malloc(sizeof(double) * (size_t)total),
         *gm = malloc(sizeof(double) * (size_t)total),
         *hv = malloc(sizeof(double) * (size_t)total),
         *g2 = malloc(sizeof(double) * (size_t)total);
  for (int64_t k = 0; k < total; k++) v[k] = uni();
  for (int s = 0; s < 4; s++) {
    bsz = SIZES[s];
    grad_at(g);
    double l, tl = 0, one = 1, gdot = 0;
#ifdef model_hvp_NUM_INPUTS
    /* forward mode: the loss's tangent along v */
    const void *ji[NIN + NP];
    for (int i = 0; i < NIN; i++) ji[i] = in[i];
    for (int j = 0, off = 0; j < NP; off += (int)np[j++]) ji[NIN + j] = v + off;
    void *jo[2] = {&l, &tl};
    if (CALL(model_jvp, ji, jo, &bsz)) exit(2);
    /* HVP: loss, grads, <grad, v>, H v */
    const void *hi[NIN + 1 + NP];
    for (int i = 0; i < NIN; i++) hi[i] = in[i];
    hi[NIN] = &one;
    for (int j = 0, off = 0; j < NP; off += (int)np[j++])
      hi[NIN + 1 + j] = v + off;
    void *ho[2 + 2 * NP];
    ho[0] = &l;
    ho[1 + NP] = &gdot;
    for (int j = 0, off = 0; j < NP; off += (int)np[j++]) {
      ho[1 + j] = g2 + off;
      ho[2 + NP + j] = hv + off;
    }
    if (CALL(model_hvp, hi, ho, &bsz)) exit(2);
#else /* --grad only: no second derivatives */
    memcpy(g2, g, sizeof(double) * (size_t)total);
    memset(hv, 0, sizeof(double) * (size_t)total);
#endif
    if (bsz == 0) { /* no rows: the gradients are zero */
      for (int64_t k = 0; k < total; k++)
        expect(g[k] == 0 && g2[k] == 0 && hv[k] == 0, "empty", 0, (int)k,
               g[k], 0);
      continue;
    }
    double gmax = 0, dot = 0;
    for (int64_t k = 0; k < total; k++) gmax = fmax(gmax, fabs(g[k]));
    int64_t k = 0;
    for (int j = 0; j < NP; j++)
      for (int64_t e = 0; e < np[j]; e++, k++) {
        double *p = &in[NIN - NP + j][e], p0 = *p;
        *p = p0 + EPS;
        double lp = loss_at();
        *p = p0 - EPS;
        double lm = loss_at();
        *p = p0;
        double fd = (lp - lm) / (2 * EPS);
        expect(near(g[k], fd, gmax), "grad", bsz, (int)k, g[k], fd);
        expect(g2[k] == g[k], "hvp's grad", bsz, (int)k, g2[k], g[k]);
        dot += g[k] * v[k];
      }
#ifdef model_hvp_NUM_INPUTS
    /* the directional derivative and H v by differences along v */
    double lv[2];
    for (int t = 0; t < 2; t++) {
      double step = t ? -EPS : EPS;
      k = 0;
      for (int j = 0; j < NP; j++)
        for (int64_t e = 0; e < np[j]; e++, k++)
          in[NIN - NP + j][e] += step * v[k];
      grad_at(t ? gm : gp);
      lv[t] = loss_at();
      k = 0;
      for (int j = 0; j < NP; j++)
        for (int64_t e = 0; e < np[j]; e++, k++)
          in[NIN - NP + j][e] -= step * v[k];
    }
    double fd = (lv[0] - lv[1]) / (2 * EPS);
    expect(near(tl, fd, fabs(fd)), "jvp", bsz, 0, tl, fd);
    expect(near(gdot, dot, fabs(dot)), "grad_dot_tangent", bsz, 0, gdot, dot);
    double hmax = 0;
    for (k = 0; k < total; k++)
      hmax = fmax(hmax, fabs((gp[k] - gm[k]) / (2 * EPS)));
    for (k = 0; k < total; k++) {
      double fd = (gp[k] - gm[k]) / (2 * EPS);
      expect(near(hv[k], fd, hmax), "hvp", bsz, (int)k, hv[k], fd);
    }
#endif
  }
#ifdef model_train_NUM_INPUTS /* one SGD step updates p to p - lr * g */
  for (int s = 0; s < 4; s++) {
    bsz = SIZES[s];
    grad_at(g);
    float lr = 0.125f, wd = 0;
    double l, *saved = malloc(sizeof(double) * (size_t)total);
    const void *ti[NIN + 3];
    for (int i = 0; i < NIN; i++) ti[i] = in[i];
    ti[NIN] = &lr;
    ti[NIN + 1] = &wd;
    ti[NIN + 2] = saved; /* the SGD state: 0 bytes */
    int64_t k = 0;
    for (int j = 0; j < NP; j++)
      for (int64_t e = 0; e < np[j]; e++) saved[k++] = in[NIN - NP + j][e];
    void *to[1] = {&l};
    if (CALL(model_train, ti, to, &bsz)) exit(2);
    k = 0;
    for (int j = 0; j < NP; j++)
      for (int64_t e = 0; e < np[j]; e++, k++) {
        double want = saved[k] - 0.125 * g[k];
        expect(fabs(in[NIN - NP + j][e] - want) <= 1e-12 * fmax(1, fabs(want)),
               "train", bsz, (int)k, in[NIN - NP + j][e], want);
        in[NIN - NP + j][e] = saved[k];
      }
    free(saved);
  }
#endif
  for (int i = 0; i < NIN; i++) free(in[i]);
  double *tmp[] = {g, v, gp, gm, hv, g2};
  for (int i = 0; i < 6; i++) free(tmp[i]);
#ifdef model_hvp_NUM_INPUTS
  const char *what = "grad, jvp, hvp (and train)";
#else
  const char *what = "grad";
#endif
  printf("%s: %s at %d sizes, %d failures\n", fails ? "FAIL" : "PASS", what,
         4, fails);
  return fails != 0;
}
