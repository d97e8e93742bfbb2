/* newton.c -- second-order training with rlxc's Hessian-vector
 * products: Newton-CG against SGD on softmax regression over the 8x8
 * digits (samples/newton.rlx).
 *
 * Build (samples/run_demo.sh newton does it):
 *   rlxc samples/newton.rlx --grad --hvp -o softreg.o
 *   rlxc samples/newton.rlx --entry=softreg_batch --grad -o softreg_batch.o
 *   cc -I. -Iruntime -I<dir of the headers> samples/newton.c softreg.o \
 *      softreg_batch.o build/runtime/librlxrt.a -lm -lpthread -o newton
 *   gzip -dc samples/data/digits.csv.gz > digits.csv
 *   ./newton digits.csv [newton_iters] [sgd_epochs] [sgd_lr] [grad_tol]
 *
 * The objective F(w, b) is the mean softmax cross-entropy of the 1,437
 * training rows (80% of the 1,797, the same fixed-seed split as
 * train_digits.c) plus 0.0005 ||w||^2: smooth and strongly convex, 650
 * parameters.  Each pixel is standardized (mean 0, variance 1 over the
 * training rows; constant pixels 0), which conditions the problem for
 * both methods.  Both start from zero.
 *
 * Newton-CG (truncated Newton, Levenberg-Marquardt damping): at w, one
 * call of softreg_grad gives F and g; conjugate gradient then solves
 * (H + mu I) p = -g using only products H.v, each one call of
 * softreg_hvp with tangent v, never forming H (650 x 650 here, but the
 * same loop works where H would not fit in memory).  CG stops after
 * max_cg (20) steps or when |residual| <= min(0.5, sqrt|g|) |g| (so the
 * steps become exact Newton steps near the optimum).  mu starts at
 * 0.01.  The step is taken
 * when F(w + p) < F(w); the damping mu follows the ratio rho of the
 * actual decrease to the decrease the quadratic model predicted: mu / 3
 * when rho > 3/4, mu * 2 when rho < 1/4 (Martens, "Deep learning via
 * Hessian-free optimization", 2010).  It stops when |g| <= grad_tol
 * (default 1e-5; f32 rounding puts the floor near 1e-6 here).
 *
 * SGD: batches of 32 rows in a reshuffled order each epoch,
 * softreg_batch_grad per batch, w -= lr * g; after each epoch the full
 * objective F is evaluated (softreg_grad, not counted in its time)
 * and printed next to its distance to Newton-CG's final F.
 *
 * Prints F and |g| per Newton iteration and per SGD epoch, the wall
 * time so far, and test accuracies.  Exit status 0 when Newton-CG
 * reached |g| <= grad_tol within newton_iters iterations, ends below
 * SGD's final F, and classifies at least 90% of the test rows; else 1
 * (2 for a setup error).
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MODEL softreg
#define MODEL_H "softreg.h"
#include "digits.h"
#include "softreg_batch.h"

enum { N = 1440, B = 32, NW = NPIX * NCLS, P = NW + NCLS, MAX_CG = 20 };

/* The full-batch inputs: rows of the training set, weights 1/n. */
typedef struct {
  float x[N][NPIX];
  int32_t y[N];
  float r[N];
} Full;

static double now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void check(int rc, const char *what)
{
  if (rc) {
    fprintf(stderr, "%s failed: %s\n", what, rlx_strerror(rc));
    exit(2);
  }
}

/* F at v (v = w then b, P floats). */
static double loss_at(const Full *f, const float *v, void *ws)
{
  float loss;
  const void *in[softreg_NUM_INPUTS];
  in[softreg_ARG_x] = f->x;
  in[softreg_ARG_y] = f->y;
  in[softreg_ARG_r] = f->r;
  in[softreg_ARG_w] = v;
  in[softreg_ARG_b] = v + NW;
  void *out[] = {&loss};
  check(softreg(in, out, ws), "softreg");
  return loss;
}

/* F and its gradient g (P floats) at v. */
static double grad_at(const Full *f, const float *v, float *g, void *ws)
{
  static const float one = 1.0f;
  float loss;
  const void *in[softreg_grad_NUM_INPUTS];
  in[softreg_grad_ARG_x] = f->x;
  in[softreg_grad_ARG_y] = f->y;
  in[softreg_grad_ARG_r] = f->r;
  in[softreg_grad_ARG_w] = v;
  in[softreg_grad_ARG_b] = v + NW;
  in[softreg_grad_ARG_d_output] = &one;
  void *out[softreg_grad_NUM_OUTPUTS];
  out[softreg_grad_OUT_loss] = &loss;
  out[softreg_grad_OUT_d_w] = g;
  out[softreg_grad_OUT_d_b] = g + NW;
  check(softreg_grad(in, out, ws), "softreg_grad");
  return loss;
}

/* hv = H(v) t: the Hessian of F at v times the direction t. The entry
 * also returns F, g and <g, t>, unused here. */
static void hvp_at(const Full *f, const float *v, const float *t, float *hv,
                   void *ws)
{
  static const float one = 1.0f;
  static float loss, g[P], gdt;
  const void *in[softreg_hvp_NUM_INPUTS];
  in[softreg_hvp_ARG_x] = f->x;
  in[softreg_hvp_ARG_y] = f->y;
  in[softreg_hvp_ARG_r] = f->r;
  in[softreg_hvp_ARG_w] = v;
  in[softreg_hvp_ARG_b] = v + NW;
  in[softreg_hvp_ARG_d_output] = &one;
  in[softreg_hvp_ARG_tangent_w] = t;
  in[softreg_hvp_ARG_tangent_b] = t + NW;
  void *out[softreg_hvp_NUM_OUTPUTS];
  out[softreg_hvp_OUT_loss] = &loss;
  out[softreg_hvp_OUT_d_w] = g;
  out[softreg_hvp_OUT_d_b] = g + NW;
  out[softreg_hvp_OUT_grad_dot_tangent] = &gdt;
  out[softreg_hvp_OUT_hvp_w] = hv;
  out[softreg_hvp_OUT_hvp_b] = hv + NW;
  check(softreg_hvp(in, out, ws), "softreg_hvp");
}

static double dot(const double *a, const double *b)
{
  double s = 0;
  for (int i = 0; i < P; i++)
    s += a[i] * b[i];
  return s;
}

static double norm_f(const float *a)
{
  double s = 0;
  for (int i = 0; i < P; i++)
    s += (double)a[i] * a[i];
  return sqrt(s);
}

static double accuracy(const Data *d, const int *rows, int n,
                       const float *v)
{
  int correct = 0;
  for (int i = 0; i < n; i++) {
    const float *x = d->x[rows[i]];
    int best = 0;
    double top = -INFINITY;
    for (int c = 0; c < NCLS; c++) {
      double z = v[NW + c];
      for (int k = 0; k < NPIX; k++)
        z += (double)x[k] * v[k * NCLS + c];
      if (z > top)
        top = z, best = c;
    }
    correct += best == d->label[rows[i]];
  }
  return (double)correct / n;
}

typedef struct {
  double loss, gnorm, ms;
  int iters, hvps;
  int converged;
} Result;

static Result newton_cg(const Full *f, float *v, int max_it, double gtol,
                        void *ws)
{
  static float g[P], t[P], hv[P], trial[P];
  static double p[P], r[P], d[P], ad[P], ap[P];
  Result res = {0};
  double mu = 0.01, t0 = now_ms();
  int cg = 0;
  printf("Newton-CG: CG on (H + mu I) p = -g, H.v from softreg_hvp\n"
         " iter  loss F     |grad F|   damping mu  CG steps  H.v calls"
         "  ms\n");
  for (int it = 0;; it++) {
    double loss = grad_at(f, v, g, ws), gn = norm_f(g);
    res = (Result){loss, gn, now_ms() - t0, it, res.hvps, gn <= gtol};
    printf(" %4d  %.6f  %.3e  %.3e  %8d  %9d  %5.1f\n", it, loss, gn, mu,
           cg, res.hvps, res.ms);
    if (res.converged || it == max_it)
      return res;
    /* CG from p = 0: residual r = -g - (H + mu I) p */
    double tol = fmin(0.5, sqrt(gn)) * gn;
    for (int i = 0; i < P; i++) {
      p[i] = ap[i] = 0;
      r[i] = d[i] = -(double)g[i];
    }
    double rr = dot(r, r);
    for (cg = 0; cg < MAX_CG;) {
      for (int i = 0; i < P; i++)
        t[i] = (float)d[i];
      hvp_at(f, v, t, hv, ws);
      res.hvps++;
      for (int i = 0; i < P; i++)
        ad[i] = hv[i] + mu * d[i];
      double dad = dot(d, ad);
      if (!(dad > 0))
        break; /* not positive definite along d (not for this F) */
      double alpha = rr / dad;
      for (int i = 0; i < P; i++) {
        p[i] += alpha * d[i];
        ap[i] += alpha * ad[i];
        r[i] -= alpha * ad[i];
      }
      cg++;
      double rr2 = dot(r, r);
      if (sqrt(rr2) <= tol)
        break;
      for (int i = 0; i < P; i++)
        d[i] = r[i] + rr2 / rr * d[i];
      rr = rr2;
    }
    /* the quadratic model's decrease: g.p + p.H.p / 2, H p = A p - mu p */
    double gp = 0, php = 0;
    for (int i = 0; i < P; i++) {
      gp += g[i] * p[i];
      php += p[i] * (ap[i] - mu * p[i]);
      trial[i] = (float)(v[i] + p[i]);
    }
    double pred = gp + 0.5 * php, next = loss_at(f, trial, ws);
    double rho = pred < 0 ? (next - loss) / pred : 0;
    if (rho > 0.75)
      mu /= 3;
    else if (rho < 0.25)
      mu *= 2;
    if (next < loss)
      memcpy(v, trial, sizeof trial);
  }
}

static Result sgd(const Data *d, const Full *f, int *tr, int ntr,
                  float *v, int epochs, float lr, uint64_t *seed,
                  double best, void *ws, void *ws_batch)
{
  static float g[P], x[B][NPIX];
  static int32_t y[B];
  static const float one = 1.0f;
  float loss;
  const void *in[softreg_batch_grad_NUM_INPUTS];
  in[softreg_batch_grad_ARG_x] = x;
  in[softreg_batch_grad_ARG_y] = y;
  in[softreg_batch_grad_ARG_w] = v;
  in[softreg_batch_grad_ARG_b] = v + NW;
  in[softreg_batch_grad_ARG_d_output] = &one;
  void *out[softreg_batch_grad_NUM_OUTPUTS];
  out[softreg_batch_grad_OUT_loss] = &loss;
  out[softreg_batch_grad_OUT_d_w] = g;
  out[softreg_batch_grad_OUT_d_b] = g + NW;
  static float gf[P];
  Result res = {0};
  double ms = 0;
  printf("SGD: batch %d, learning rate %g, F after each epoch\n"
         " epoch  loss F     |grad F|   F - F_newton  ms\n", B, lr);
  for (int e = 0; e <= epochs; e++) {
    if (e) {
      double t0 = now_ms();
      shuffle(tr, ntr, seed);
      for (int s = 0; s + B <= ntr; s += B) {
        for (int i = 0; i < B; i++) {
          memcpy(x[i], d->x[tr[s + i]], sizeof x[i]);
          y[i] = d->label[tr[s + i]];
        }
        check(softreg_batch_grad(in, out, ws_batch), "softreg_batch_grad");
        for (int i = 0; i < P; i++)
          v[i] -= lr * g[i];
      }
      ms += now_ms() - t0;
    }
    double l = grad_at(f, v, gf, ws);
    res = (Result){l, norm_f(gf), ms, e, 0, 0};
    printf(" %5d  %.6f  %.3e  %.3e     %5.1f\n", e, l, res.gnorm,
           l - best, ms);
  }
  return res;
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: %s digits.csv [newton_iters] [sgd_epochs] "
            "[sgd_lr] [grad_tol]\n", argv[0]);
    return 2;
  }
  int max_it = argc > 2 ? atoi(argv[2]) : 15;
  int epochs = argc > 3 ? atoi(argv[3]) : 30;
  float lr = argc > 4 ? (float)atof(argv[4]) : 0.5f; /* best of 0.05-2 */
  double gtol = argc > 5 ? atof(argv[5]) : 1e-5;
  static Data d;
  static Full f;
  static int idx[MAXROWS];
  static float vn[P], vs[P];
  if (!load_csv(argv[1], &d))
    return 2;
  uint64_t seed;
  int ntr = split_rows(&d, idx, &seed), nte = d.n - ntr;
  if (ntr > N) {
    fprintf(stderr, "more than %d training rows\n", N);
    return 2;
  }
  for (int k = 0; k < NPIX; k++) { /* standardize each pixel */
    double m = 0, q = 0;
    for (int i = 0; i < ntr; i++)
      m += d.x[idx[i]][k];
    m /= ntr;
    for (int i = 0; i < ntr; i++)
      q += (d.x[idx[i]][k] - m) * (d.x[idx[i]][k] - m);
    double sd = sqrt(q / ntr);
    for (int i = 0; i < d.n; i++)
      d.x[i][k] = sd > 1e-6 ? (float)((d.x[i][k] - m) / sd) : 0.0f;
  }
  for (int i = 0; i < ntr; i++) {
    memcpy(f.x[i], d.x[idx[i]], sizeof f.x[i]);
    f.y[i] = d.label[idx[i]];
    f.r[i] = 1.0f / ntr;
  }
  void *ws = rlx_alloc(softreg_hvp_WORKSPACE_BYTES);
  void *wsb = rlx_alloc(softreg_batch_grad_WORKSPACE_BYTES);
  if (!ws || !wsb) {
    fprintf(stderr, "out of memory\n");
    return 2;
  }
  printf("softmax regression on the digits: %d train rows, %d test, %d "
         "params, L2 1e-3, %d threads\n\n", ntr, nte, P,
         rlx_get_num_threads());
  loss_at(&f, vn, ws); /* start the thread pool outside the timings */
  Result rn = newton_cg(&f, vn, max_it, gtol, ws);
  double an = accuracy(&d, idx + ntr, nte, vn);
  printf("\n");
  Result rs = sgd(&d, &f, idx, ntr, vs, epochs, lr, &seed, rn.loss, ws,
                  wsb);
  double as = accuracy(&d, idx + ntr, nte, vs);
  printf("\nNewton-CG: F = %.6f, |grad| %.1e after %d iterations (%d H.v "
         "products, %.1f ms), test accuracy %.2f%%\n", rn.loss, rn.gnorm,
         rn.iters, rn.hvps, rn.ms, 100 * an);
  printf("SGD:       F = %.6f, |grad| %.1e after %d epochs (%.1f ms), "
         "test accuracy %.2f%%; F - F_newton = %.1e\n", rs.loss, rs.gnorm,
         rs.iters, rs.ms, 100 * as, rs.loss - rn.loss);
  rlx_free(ws);
  rlx_free(wsb);
  if (!rn.converged)
    printf("FAIL: Newton-CG did not reach |grad| <= %g in %d iterations\n",
           gtol, max_it);
  if (!(rn.loss < rs.loss))
    printf("FAIL: Newton-CG did not end below SGD\n");
  if (an < 0.9)
    printf("FAIL: test accuracy below 90%%\n");
  return rn.converged && rn.loss < rs.loss && an >= 0.9 ? 0 : 1;
}
