/* train_digits.c -- train a digits classifier compiled by rlxc, by SGD.
 *
 * The model is any graph with inputs (x, y, params...) whose first two
 * outputs are the scalar loss and the logits [batch, 10], compiled with
 * --grad: samples/mlp.rlx (a 64-64-10 perceptron, the default) or
 * samples/cnn.rlx (a small convnet). Build (samples/run_demo.sh does it):
 *   rlxc samples/mlp.rlx --grad -o mlp.o        # writes mlp.o, mlp.h
 *   cc -I. -Iruntime -I<dir of mlp.h> samples/train_digits.c mlp.o \
 *      build/runtime/librlxrt.a -lm -lpthread -o train_digits
 *   (for the convnet: -DMODEL=cnn -DMODEL_H='"cnn.h"' and cnn.o)
 *   gzip -dc samples/data/digits.csv.gz > digits.csv
 *   ./train_digits digits.csv [epochs] [min_accuracy] [learning_rate]
 * With -DTRAIN_STEP and the model compiled with --train=sgd as well,
 * each step is one call of MODEL_train, which runs forward, loss,
 * backward and the SGD update of every parameter in place
 * (samples/run_demo.sh train_step).
 * With -DGPU as well, the model is compiled with --target=cuda
 * (samples/run_demo.sh gpu): the params live in GPU memory, each call
 * gets the batch copied to the device and its outputs copied back
 * (gpu_call), and the training step runs on the GPU. `--probe` as the
 * only argument: exit 0 when a GPU is usable, else 1 and the reason on
 * stderr (run_demo.sh gpu exits 0 with that message).
 *
 * Data: 1,797 rows of 64 pixels (0..16) and a label (samples/data/).
 * A fixed-seed shuffle puts 80% of the rows in the training set and the
 * rest in the test set.  x holds a batch of images, 64 floats each in
 * [0, 1] (its shape may be [B, 64] or [B, 1, 8, 8]: the same bytes).
 * The parameters are found through the generated signature: every
 * input after x and y (and before d_output) of MODEL_grad.  They start
 * He-uniform with fan-in dims[0] for a rank-2 [in, out] matrix and
 * dims[1]*dims[2]*dims[3] for a rank-4 [out, in, kh, kw] filter;
 * parameters whose name starts with "gamma" start at 1, every other
 * parameter (biases, betas) at 0.  Each step calls MODEL_grad on a
 * batch (d_output = 1 for the scalar loss) and updates every parameter
 * with plain SGD.  Test accuracy comes from the forward entry MODEL
 * (argmax of the logits).  Exit status 1 when the final test accuracy
 * is below min_accuracy (default 0.95).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digits.h"

#ifdef GPU
/* --target=cuda entries take device pointers and a stream. The params
 * (inputs of kind RLX_ARG_PARAM, in signature order) live in dev_param;
 * gpu_call copies the other inputs in and the outputs out around a
 * call on host buffers. */
typedef int (*GpuFn)(const void *const *, void *const *, void *, void *);
static void *dev_param[MAXP], *stream;

static void gpu_ok(int rc, const char *what)
{
  if (rc) {
    fprintf(stderr, "%s: %s %s\n", what, rlx_strerror(rc),
            rc == RLX_ERR_GPU ? rlx_gpu_error() : "");
    exit(2);
  }
}

static int gpu_call(GpuFn fn, const rlx_signature *sig,
                    const void *const *in, void *const *out, void *ws)
{
  const void *din[MAXP + 8];
  void *dout[MAXP + 8], *mem;
  size_t bytes = 0, off = 0;
  for (int i = 0; i < sig->num_inputs; i++)
    bytes += (size_t)numel(&sig->inputs[i]) * 8;
  for (int j = 0; j < sig->num_outputs; j++)
    bytes += (size_t)numel(&sig->outputs[j]) * 8;
  gpu_ok(rlx_gpu_alloc(&mem, bytes), "rlx_gpu_alloc");
  for (int i = 0, k = 0; i < sig->num_inputs; i++) {
    size_t n = (size_t)numel(&sig->inputs[i]) *
               rlx_dtype_size(sig->inputs[i].dtype);
    if (sig->inputs[i].kind == RLX_ARG_PARAM) {
      din[i] = dev_param[k++];
      continue;
    }
    din[i] = (char *)mem + off;
    gpu_ok(rlx_gpu_copy_to_device((void *)din[i], in[i], n, stream), "copy");
    off += (n + 63) / 64 * 64;
  }
  for (int j = 0; j < sig->num_outputs; j++) {
    dout[j] = (char *)mem + off;
    off += ((size_t)numel(&sig->outputs[j]) * 8 + 63) / 64 * 64;
  }
  int rc = fn(din, dout, ws, stream);
  for (int j = 0; j < sig->num_outputs && !rc; j++)
    rc = rlx_gpu_copy_to_host(out[j], dout[j],
                              (size_t)numel(&sig->outputs[j]) *
                                  rlx_dtype_size(sig->outputs[j].dtype),
                              stream);
  if (!rc) rc = rlx_gpu_stream_sync(stream);
  gpu_ok(rlx_gpu_free(mem), "rlx_gpu_free");
  return rc;
}
#endif

/* The parameters, in signature order, and buffers for their gradients. */
typedef struct {
  int n;
  int64_t numel[MAXP];
  float *w[MAXP], *g[MAXP];
} Params;

static int batch_size(void)
{
  return (int)CAT(GRAD, _signature)()->inputs[0].dims[0];
}

static int init_params(Params *p, uint64_t *s)
{
  const rlx_signature *sig = CAT(GRAD, _signature)();
  p->n = sig->num_inputs - 3;
  for (int k = 0; k < p->n; k++) {
    const rlx_tensor_desc *d = &sig->inputs[2 + k];
    p->numel[k] = numel(d);
    p->w[k] = calloc((size_t)p->numel[k], sizeof(float));
    p->g[k] = calloc((size_t)p->numel[k], sizeof(float));
    if (!p->w[k] || !p->g[k])
      return 0;
    int64_t fan = d->rank == 2 ? d->dims[0]
                  : d->rank == 4 ? d->dims[1] * d->dims[2] * d->dims[3]
                                 : 0;
    for (int64_t i = 0; i < p->numel[k]; i++)
      p->w[k][i] = fan ? (float)((2 * rng_unit(s) - 1) * sqrt(6.0 / fan))
                   : !strncmp(d->name, "gamma", 5) ? 1.0f : 0.0f;
  }
  return 1;
}

static void fill_batch(const Data *d, const int *rows, int n, int batch,
                       float *x, int *y)
{
  for (int i = 0; i < batch; i++) {
    int r = rows[i < n ? i : n - 1]; /* pad a short batch by repeating */
    memcpy(x + i * NPIX, d->x[r], sizeof d->x[r]);
    y[i] = d->label[r];
  }
}

/* One epoch of SGD; returns the mean batch loss. */
static double train_epoch(const Data *d, int *tr, int ntr, Params *p,
                          float lr, uint64_t *s, void *ws, float *x,
                          int *y, float *logits)
{
  int batch = batch_size();
  float one = 1.0f, loss = 0;
  const void *in[MAXP + 3] = {x, y};
  void *out[MAXP + 2] = {&loss, logits};
  for (int k = 0; k < p->n; k++) {
    in[2 + k] = p->w[k];
    out[2 + k] = p->g[k];
  }
  in[2 + p->n] = &one;
  double sum = 0;
  int nb = 0;
  shuffle(tr, ntr, s);
  for (int b = 0; b + batch <= ntr; b += batch, nb++) {
    fill_batch(d, tr + b, batch, batch, x, y);
#ifdef TRAIN_STEP
    /* MODEL_train: x, y, params (updated in place), lr, weight_decay,
     * the optimizer state (0 bytes for plain SGD) */
    float wd = 0;
    const void *tin[MAXP + 5] = {x, y};
    for (int k = 0; k < p->n; k++)
      tin[2 + k] = p->w[k];
    tin[2 + p->n] = &lr;
    tin[3 + p->n] = &wd;
    tin[4 + p->n] = NULL;
    _Static_assert(CAT(MODEL, _train_STATE_BYTES) == 0, "plain SGD");
#ifdef GPU
    int rc = gpu_call(CAT(MODEL, _train), CAT(MODEL, _train_signature)(),
                      tin, out, ws);
#else
    int rc = CAT(MODEL, _train)(tin, out, ws);
#endif
#else
    int rc = GRAD(in, out, ws);
#endif
    if (rc) {
      fprintf(stderr, "training step failed: %s\n", rlx_strerror(rc));
      exit(2);
    }
    sum += loss;
#ifndef TRAIN_STEP
    for (int k = 0; k < p->n; k++)
      for (int64_t i = 0; i < p->numel[k]; i++)
        p->w[k][i] -= lr * p->g[k][i];
#endif
  }
  return sum / nb;
}

static double accuracy(const Data *d, const int *te, int nte,
                       const Params *p, float *x, int *y, float *logits,
                       void *ws)
{
  int batch = batch_size(), correct = 0;
  float loss;
  const void *in[MAXP + 2] = {x, y};
  for (int k = 0; k < p->n; k++)
    in[2 + k] = p->w[k];
  void *out[] = {&loss, logits};
  for (int b = 0; b < nte; b += batch) {
    int n = nte - b < batch ? nte - b : batch;
    fill_batch(d, te + b, n, batch, x, y);
#ifdef GPU
    if (gpu_call(FWD, CAT(FWD, _signature)(), in, out, ws)) {
#else
    if (FWD(in, out, NULL)) {
#endif
      fprintf(stderr, "forward failed\n");
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

/* x holds 64 floats per image, y is i32, the logits are [batch, 10]. */
static int check_abi(void)
{
  const rlx_signature *s = CAT(GRAD, _signature)();
  const rlx_tensor_desc *x = &s->inputs[0], *z = &s->outputs[1];
  if (s->num_inputs < 4 || s->num_inputs - 3 > MAXP ||
      s->num_outputs != s->num_inputs - 1 || x->dtype != RLX_DT_F32 ||
      numel(x) != x->dims[0] * NPIX || s->inputs[1].dtype != RLX_DT_I32 ||
      z->rank != 2 || z->dims[0] != x->dims[0] || z->dims[1] != NCLS) {
    fprintf(stderr, "the model does not have the expected signature\n");
    return 0;
  }
  return 1;
}

int main(int argc, char **argv)
{
#ifdef GPU
  if (argc == 2 && !strcmp(argv[1], "--probe")) { /* a usable GPU? */
    int rc = rlx_gpu_init(0);
    if (rc)
      fprintf(stderr, "%s", rlx_gpu_error());
    return rc ? 1 : 0;
  }
#endif
  if (argc < 2) {
    fprintf(stderr, "usage: %s digits.csv [epochs] [min_acc] [lr]\n",
            argv[0]);
    return 2;
  }
  int epochs = argc > 2 ? atoi(argv[2]) : 30;
  double min_acc = argc > 3 ? atof(argv[3]) : 0.95;
  float lr = argc > 4 ? (float)atof(argv[4]) : 0.3f;
  static Data d;
  static Params p;
  static int idx[MAXROWS];
  if (!check_abi() || !load_csv(argv[1], &d))
    return 2;
  uint64_t seed;
  int ntr = split_rows(&d, idx, &seed), nte = d.n - ntr;
  int batch = batch_size();
  float *x = calloc((size_t)batch * NPIX, sizeof *x);
  float *logits = calloc((size_t)batch * NCLS, sizeof *logits);
  int *y = calloc((size_t)batch, sizeof *y);
#ifdef GPU
  void *ws = NULL;
  size_t wsb = CAT(MODEL, _train_WORKSPACE_BYTES);
  if (wsb < CAT(FWD, _WORKSPACE_BYTES))
    wsb = CAT(FWD, _WORKSPACE_BYTES);
  gpu_ok(rlx_gpu_stream_create(&stream), "no usable GPU");
  gpu_ok(rlx_gpu_alloc(&ws, wsb), "rlx_gpu_alloc");
#elif defined(TRAIN_STEP)
  void *ws = rlx_alloc(CAT(MODEL, _train_WORKSPACE_BYTES));
#else
  void *ws = rlx_alloc(CAT(GRAD, _WORKSPACE_BYTES));
#endif
  if (!x || !logits || !y || !ws || !init_params(&p, &seed)) {
    fprintf(stderr, "out of memory\n");
    return 2;
  }
#ifdef GPU
  for (int k = 0; k < p.n; k++) {
    gpu_ok(rlx_gpu_alloc(&dev_param[k], (size_t)p.numel[k] * sizeof(float)),
           "rlx_gpu_alloc");
    gpu_ok(rlx_gpu_copy_to_device(dev_param[k], p.w[k],
                                  (size_t)p.numel[k] * sizeof(float), NULL),
           "copy");
  }
  printf("digits: %d rows, %d train, %d test, batch %d, on the GPU\n", d.n,
         ntr, nte, batch);
#else
  printf("digits: %d rows, %d train, %d test, batch %d, %d threads\n",
         d.n, ntr, nte, batch, rlx_get_num_threads());
#endif
  for (int e = 0; e < epochs; e++) {
    double l = train_epoch(&d, idx, ntr, &p, lr, &seed, ws, x, y, logits);
    printf("epoch %2d  loss %.4f\n", e + 1, l);
  }
  double acc = accuracy(&d, idx + ntr, nte, &p, x, y, logits, ws);
  printf("test accuracy: %.2f%% (%d samples)\n", 100 * acc, nte);
  for (int k = 0; k < p.n; k++) {
    free(p.w[k]);
    free(p.g[k]);
  }
  free(x);
  free(logits);
  free(y);
#ifdef GPU
  for (int k = 0; k < p.n; k++)
    rlx_gpu_free(dev_param[k]);
  rlx_gpu_free(ws);
  rlx_gpu_stream_destroy(stream);
#else
  rlx_free(ws);
#endif
  return acc >= min_acc ? 0 : 1;
}
