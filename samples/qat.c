/* qat.c -- quantization-aware training of the digits MLP, then int8
 * inference, all from graphs compiled by rlxc.
 *
 * Three graphs (samples/run_demo.sh qat builds them):
 *   rlxc samples/mlp.rlx --grad        float MLP 64-64-10 (mlp, mlp_grad)
 *   rlxc samples/qat.rlx --grad        the same with fake_quantize
 *   rlxc samples/qat_int8.rlx          int8 inference: quantize + q_matmul
 * Steps: train the float MLP by SGD; fine-tune its weights with the
 * fake-quantized graph (straight-through gradients); convert the
 * trained weights to int8 (per output channel, the same grid the QAT
 * graph used) with i32 biases and per-channel requantization
 * multipliers; run the int8 graph on the test set. Prints the three
 * test accuracies and the two model sizes; exit status 1 when the int8
 * accuracy is more than max_drop (default 0.01) below the float one.
 *   ./qat digits.csv [float_epochs] [qat_epochs] [lr] [max_drop]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qat.h"
#include "qat_int8.h"
#include "digits.h" /* includes mlp.h */

enum { B = 32, H = 64, NPARAM = 4 };
typedef int (*Entry)(const void *const *, void *const *, void *);

/* Parameters in signature order: w1 [64, 64], b1 [64], w2 [64, 10], b2 [10]. */
static const int64_t numels[NPARAM] = {NPIX * H, H, H * NCLS, NCLS};
static float *w[NPARAM], *g[NPARAM];

static void batch(const Data *d, const int *rows, int n, float *x, int *y)
{
  for (int i = 0; i < B; i++) {
    int r = rows[i < n ? i : n - 1]; /* pad a short batch by repeating */
    memcpy(x + i * NPIX, d->x[r], sizeof d->x[r]);
    y[i] = d->label[r];
  }
}

static void check(int rc, const char *what)
{
  if (rc) {
    fprintf(stderr, "%s failed: %s\n", what, rlx_strerror(rc));
    exit(2);
  }
}

/* Epochs of SGD with grad (inputs x, y, params, d_output). */
static void train(Entry grad, void *ws, const Data *d, int *tr, int ntr,
                  int epochs, float lr, uint64_t *s, const char *name)
{
  float x[B * NPIX], logits[B * NCLS], one = 1, loss = 0;
  int y[B];
  const void *in[] = {x, y, w[0], w[1], w[2], w[3], &one};
  void *out[] = {&loss, logits, g[0], g[1], g[2], g[3]};
  for (int e = 0; e < epochs; e++) {
    double sum = 0;
    int nb = 0;
    shuffle(tr, ntr, s);
    for (int b = 0; b + B <= ntr; b += B, nb++) {
      batch(d, tr + b, B, x, y);
      check(grad(in, out, ws), name);
      sum += loss;
      for (int k = 0; k < NPARAM; k++)
        for (int64_t i = 0; i < numels[k]; i++)
          w[k][i] -= lr * g[k][i];
    }
    if (e == epochs - 1 || (e + 1) % 10 == 0)
      printf("  %s epoch %2d  loss %.4f\n", name, e + 1, sum / nb);
  }
}

static int argmax_f32(const float *z)
{
  int best = 0;
  for (int c = 1; c < NCLS; c++)
    if (z[c] > z[best])
      best = c;
  return best;
}

static int argmax_i8(const int8_t *z)
{
  int best = 0;
  for (int c = 1; c < NCLS; c++)
    if (z[c] > z[best])
      best = c;
  return best;
}

/* Test accuracy of a float graph (inputs x, y, params; outputs loss, logits). */
static double accuracy(Entry fwd, const Data *d, const int *te, int nte)
{
  float x[B * NPIX], logits[B * NCLS], loss;
  int y[B], correct = 0;
  const void *in[] = {x, y, w[0], w[1], w[2], w[3]};
  void *out[] = {&loss, logits};
  for (int b = 0; b < nte; b += B) {
    int n = nte - b < B ? nte - b : B;
    batch(d, te + b, n, x, y);
    check(fwd(in, out, NULL), "forward");
    for (int i = 0; i < n; i++)
      correct += argmax_f32(logits + i * NCLS) == y[i];
  }
  return (double)correct / nte;
}

/* The int8 model: weights per output channel on fake_quantize's grid
 * (scale max|w[:, n]| / 127, round half to even), i32 biases on the
 * accumulator's scale, one requantization multiplier per channel. */
typedef struct {
  int8_t w1[NPIX * H], w2[H * NCLS];
  int32_t b1[H], b2[NCLS];
  float m1[H], m2[NCLS];
} Int8Model;

static void quantize_cols(const float *wt, int k, int n, int8_t *q, float *s)
{
  for (int j = 0; j < n; j++) {
    float m = 0;
    for (int i = 0; i < k; i++)
      m = fmaxf(m, fabsf(wt[i * n + j]));
    s[j] = fmaxf(m / 127.0f, 1e-12f);
    for (int i = 0; i < k; i++)
      q[i * n + j] = (int8_t)fmaxf(-127, fminf(127, nearbyintf(wt[i * n + j] / s[j])));
  }
}

/* Largest hidden activation and logit over the training rows, computed
 * with the quantized weights: the static activation scales. */
static void calibrate(const Data *d, const int *tr, int ntr, const float *sw1,
                      const Int8Model *q, float sx, float *hmax, float *zmax)
{
  *hmax = *zmax = 0;
  for (int r = 0; r < ntr; r++) {
    const float *x = d->x[tr[r]];
    float h[H];
    for (int j = 0; j < H; j++) {
      float a = w[1][j];
      for (int i = 0; i < NPIX; i++)
        a += nearbyintf(x[i] / sx) * sx * q->w1[i * H + j] * sw1[j];
      h[j] = fmaxf(a, 0);
      *hmax = fmaxf(*hmax, h[j]);
    }
    for (int c = 0; c < NCLS; c++) {
      float z = w[3][c];
      for (int j = 0; j < H; j++)
        z += h[j] * w[2][j * NCLS + c];
      *zmax = fmaxf(*zmax, fabsf(z));
    }
  }
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: %s digits.csv [float_epochs] [qat_epochs] [lr] "
            "[max_drop]\n", argv[0]);
    return 2;
  }
  int fe = argc > 2 ? atoi(argv[2]) : 30, qe = argc > 3 ? atoi(argv[3]) : 10;
  float lr = argc > 4 ? (float)atof(argv[4]) : 0.3f;
  double max_drop = argc > 5 ? atof(argv[5]) : 0.01;
  static Data d;
  static int idx[MAXROWS];
  if (!load_csv(argv[1], &d))
    return 2;
  uint64_t seed;
  int ntr = split_rows(&d, idx, &seed), nte = d.n - ntr;
  void *ws = rlx_alloc(mlp_grad_WORKSPACE_BYTES > qat_grad_WORKSPACE_BYTES
                           ? mlp_grad_WORKSPACE_BYTES
                           : qat_grad_WORKSPACE_BYTES);
  for (int k = 0; k < NPARAM; k++) {
    w[k] = calloc((size_t)numels[k], sizeof(float));
    g[k] = calloc((size_t)numels[k], sizeof(float));
    if (!w[k] || !g[k] || !ws) {
      fprintf(stderr, "out of memory\n");
      return 2;
    }
  }
  for (int k = 0; k < NPARAM; k += 2) /* He-uniform weights, zero biases */
    for (int64_t i = 0; i < numels[k]; i++)
      w[k][i] = (float)((2 * rng_unit(&seed) - 1) *
                        sqrt(6.0 / (k ? H : NPIX)));
  printf("digits: %d rows, %d train, %d test\n", d.n, ntr, nte);

  train(mlp_grad, ws, &d, idx, ntr, fe, lr, &seed, "float");
  double acc_f = accuracy(mlp, &d, idx + ntr, nte);
  train(qat_grad, ws, &d, idx, ntr, qe, lr / 3, &seed, "qat");
  double acc_q = accuracy(qat, &d, idx + ntr, nte);

  static Int8Model q;
  float sw1[H], sw2[NCLS], sx = 1.0f / 127, hmax, zmax;
  quantize_cols(w[0], NPIX, H, q.w1, sw1);
  quantize_cols(w[2], H, NCLS, q.w2, sw2);
  calibrate(&d, idx, ntr, sw1, &q, sx, &hmax, &zmax);
  /* Hidden: [0, hmax] on 256 levels, zero at -128, so the saturation to
   * -128 of a negative sum is the relu. Logits: [-zmax, zmax], 127. */
  float sh = hmax / 255, sz = zmax / 127;
  for (int j = 0; j < H; j++) {
    q.b1[j] = (int32_t)nearbyintf(w[1][j] / (sx * sw1[j]));
    q.m1[j] = sx * sw1[j] / sh;
  }
  for (int c = 0; c < NCLS; c++) {
    q.b2[c] = (int32_t)nearbyintf(w[3][c] / (sh * sw2[c]));
    q.m2[c] = sh * sw2[c] / sz;
  }
  float x[B * NPIX];
  int y[B], correct = 0;
  int8_t z[B * NCLS];
  const void *in[] = {x, q.w1, q.b1, q.m1, q.w2, q.b2, q.m2};
  void *out[] = {z};
  for (int b = 0; b < nte; b += B) {
    int n = nte - b < B ? nte - b : B;
    batch(&d, idx + ntr + b, n, x, y);
    check(qat_int8(in, out, NULL), "int8 forward");
    for (int i = 0; i < n; i++)
      correct += argmax_i8(z + i * NCLS) == y[i];
  }
  double acc_i = (double)correct / nte;
  printf("test accuracy: float %.2f%%, QAT %.2f%%, int8 %.2f%% (%d samples)\n",
         100 * acc_f, 100 * acc_q, 100 * acc_i, nte);
  printf("model size: float %zu bytes, int8 %zu bytes (i8 weights, i32 "
         "biases, f32 multipliers)\n",
         (size_t)(numels[0] + numels[1] + numels[2] + numels[3]) * 4,
         sizeof q);
  for (int k = 0; k < NPARAM; k++) {
    free(w[k]);
    free(g[k]);
  }
  rlx_free(ws);
  return acc_i >= acc_f - max_drop ? 0 : 1;
}
