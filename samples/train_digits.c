/* train_digits.c -- train samples/mlp.rlx on the 8x8 digits by SGD.
 *
 * Build (samples/run_demo.sh does all of this):
 *   rlxc samples/mlp.rlx --grad -o mlp.o        # writes mlp.o, mlp.h
 *   cc -I. -Iruntime -I<dir of mlp.h> samples/train_digits.c mlp.o \
 *      build/runtime/librlxrt.a -lm -lpthread -o train_digits
 *   gzip -dc samples/data/digits.csv.gz > digits.csv
 *   ./train_digits digits.csv [epochs] [min_accuracy]
 *
 * Data: 1,797 rows of 64 pixels (0..16) and a label (samples/data/).
 * A fixed-seed shuffle puts 80% of the rows in the training set and the
 * rest in the test set.  Each step calls the generated mlp_grad on a
 * batch of MLP_BATCH rows (d_output = 1 for the scalar loss) and
 * updates every parameter with plain SGD.  Test accuracy comes from the
 * forward entry mlp (argmax of the logits).  Exit status 1 when the
 * final test accuracy is below min_accuracy (default 0.95).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp.h"

enum { NPIX = 64, NCLS = 10, MAXROWS = 2000, BATCH = 32, HID = 64 };
#ifndef LR
#define LR 0.3f /* SGD step */
#endif

typedef struct {
  float x[MAXROWS][NPIX];
  int label[MAXROWS];
  int n;
} Data;

typedef struct {
  float w1[NPIX * HID], b1[HID], w2[HID * NCLS], b2[NCLS];
} Params;

static uint64_t rng_next(uint64_t *s)
{
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static double rng_unit(uint64_t *s) /* [0, 1) */
{
  return (double)rng_next(s) / 2147483648.0;
}

static int load_csv(const char *path, Data *d)
{
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    return 0;
  }
  d->n = 0;
  while (d->n < MAXROWS) {
    int v, k;
    for (k = 0; k <= NPIX; k++) {
      if (fscanf(f, k ? " ,%d" : " %d", &v) != 1)
        break;
      if (k < NPIX)
        d->x[d->n][k] = (float)v / 16.0f;
      else
        d->label[d->n] = v;
    }
    if (k <= NPIX)
      break;
    d->n++;
  }
  fclose(f);
  return d->n;
}

static void shuffle(int *idx, int n, uint64_t *s)
{
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(rng_unit(s) * (i + 1));
    int t = idx[i];
    idx[i] = idx[j];
    idx[j] = t;
  }
}

static void init_params(Params *p, uint64_t *s)
{
  double a1 = sqrt(6.0 / (NPIX + HID)), a2 = sqrt(6.0 / (HID + NCLS));
  for (int i = 0; i < NPIX * HID; i++)
    p->w1[i] = (float)((2 * rng_unit(s) - 1) * a1);
  for (int i = 0; i < HID * NCLS; i++)
    p->w2[i] = (float)((2 * rng_unit(s) - 1) * a2);
  memset(p->b1, 0, sizeof p->b1);
  memset(p->b2, 0, sizeof p->b2);
}

static void fill_batch(const Data *d, const int *rows, int n, float *x,
                       int *y)
{
  for (int i = 0; i < BATCH; i++) {
    int r = rows[i < n ? i : n - 1]; /* pad a short batch by repeating */
    memcpy(x + i * NPIX, d->x[r], sizeof d->x[r]);
    y[i] = d->label[r];
  }
}

static void sgd(float *w, const float *g, int n, float lr)
{
  for (int i = 0; i < n; i++)
    w[i] -= lr * g[i];
}

/* One epoch of SGD; returns the mean batch loss. */
static double train_epoch(const Data *d, int *tr, int ntr, Params *p,
                          float lr, uint64_t *s, void *ws)
{
  static float x[BATCH * NPIX], logits[BATCH * NCLS];
  static Params g;
  int y[BATCH];
  float one = 1.0f, loss = 0;
  double sum = 0;
  int nb = 0;
  shuffle(tr, ntr, s);
  for (int b = 0; b + BATCH <= ntr; b += BATCH, nb++) {
    fill_batch(d, tr + b, BATCH, x, y);
    const void *in[] = {x, y, p->w1, p->b1, p->w2, p->b2, &one};
    void *out[] = {&loss, logits, g.w1, g.b1, g.w2, g.b2};
    int rc = mlp_grad(in, out, ws);
    if (rc) {
      fprintf(stderr, "mlp_grad failed: %s\n", rlx_strerror(rc));
      exit(2);
    }
    sum += loss;
    sgd(p->w1, g.w1, NPIX * HID, lr);
    sgd(p->b1, g.b1, HID, lr);
    sgd(p->w2, g.w2, HID * NCLS, lr);
    sgd(p->b2, g.b2, NCLS, lr);
  }
  return sum / nb;
}

static double accuracy(const Data *d, const int *te, int nte,
                       const Params *p)
{
  static float x[BATCH * NPIX], logits[BATCH * NCLS];
  int y[BATCH], correct = 0;
  float loss;
  for (int b = 0; b < nte; b += BATCH) {
    int n = nte - b < BATCH ? nte - b : BATCH;
    fill_batch(d, te + b, n, x, y);
    const void *in[] = {x, y, p->w1, p->b1, p->w2, p->b2};
    void *out[] = {&loss, logits};
    if (mlp(in, out, NULL)) {
      fprintf(stderr, "mlp failed\n");
      exit(2);
    }
    for (int i = 0; i < n; i++) {
      int best = 0;
      for (int c = 1; c < NCLS; c++)
        if (logits[i * NCLS + c] > logits[i * NCLS + best])
          best = c;
      correct += best == y[i];
    }
  }
  return (double)correct / nte;
}

static int check_abi(void)
{
  const rlx_signature *s = mlp_grad_signature();
  if (s->num_inputs != 7 || s->num_outputs != 6 ||
      s->inputs[0].dims[0] != BATCH || s->inputs[0].dims[1] != NPIX ||
      s->inputs[2].dims[1] != HID) {
    fprintf(stderr, "mlp_grad does not have the expected signature\n");
    return 0;
  }
  return 1;
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: %s digits.csv [epochs] [min_acc]\n", argv[0]);
    return 2;
  }
  int epochs = argc > 2 ? atoi(argv[2]) : 30;
  double min_acc = argc > 3 ? atof(argv[3]) : 0.95;
  static Data d;
  static Params p;
  static int idx[MAXROWS];
  if (!check_abi() || !load_csv(argv[1], &d))
    return 2;
  uint64_t seed = 20240601;
  for (int i = 0; i < d.n; i++)
    idx[i] = i;
  shuffle(idx, d.n, &seed);
  int ntr = d.n * 4 / 5, nte = d.n - ntr;
  init_params(&p, &seed);
  void *ws = rlx_alloc(mlp_grad_WORKSPACE_BYTES);
  printf("digits: %d rows, %d train, %d test, batch %d, %d threads\n",
         d.n, ntr, nte, BATCH, rlx_get_num_threads());
  for (int e = 0; e < epochs; e++) {
    double l = train_epoch(&d, idx, ntr, &p, LR, &seed, ws);
    printf("epoch %2d  loss %.4f\n", e + 1, l);
  }
  rlx_free(ws);
  double acc = accuracy(&d, idx + ntr, nte, &p);
  printf("test accuracy: %.2f%% (%d samples)\n", 100 * acc, nte);
  return acc >= min_acc ? 0 : 1;
}
