/* train_gpt.c -- train the character-level GPT of samples/gpt.rlx.
 *
 * Build (samples/run_demo.sh gpt does it):
 *   rlxc samples/gpt.rlx --grad -o gpt.o         # writes gpt.o, gpt.h
 *   rlxc samples/gpt_sample.rlx -o gpt_sample.o  # and gpt_sample.h
 *   cc -I. -Iruntime -I<dir of gpt.h> samples/train_gpt.c gpt.o gpt_sample.o \
 *      build/runtime/librlxrt.a -lm -lpthread -o train_gpt
 *   gzip -dc samples/data/gpl-3.txt.gz > gpl-3.txt
 *   ./train_gpt gpl-3.txt [steps] [threads] [max_ratio]
 * (defaults: 1500 steps, the runtime's thread count (also for 0), 0.75).
 *
 * Data: any text file, read as bytes (tokens 0..255); the first 90% is
 * the training text, the last 10% the validation text.  A step samples
 * 8 random windows of 65 bytes from the training text: tokens are the
 * first 64 bytes, targets the next 64 (flattened to [512]), and
 * gpt_grad returns the mean cross-entropy and every gradient.
 * Parameters start like GPT-2's: matrices (and wte, wpe) normal(0,
 * 0.02), the output projections wo and wpr scaled by 1/sqrt(2 layers),
 * layer-norm gammas 1, betas and biases 0.  AdamW (betas 0.9/0.95, eps
 * 1e-8, weight decay 0.1 on the rank-2 params only), the gradient
 * clipped to norm 1, learning rate: linear warmup then cosine decay to
 * a tenth.  The validation loss is the mean of the forward entry gpt
 * over fixed windows spread over the validation text.  At the end the
 * model writes a few hundred bytes after a prompt from the validation
 * text, each drawn by the compiled sample op of samples/gpt_sample.rlx
 * (temperature 0.8, top-p 0.95).  Exit status 1 when the final validation loss is
 * not below max_ratio (default 0.75) times the unigram entropy of the
 * training text (the loss of a model that ignores the context).
 *
 * With -DTRAIN_STEP the model is compiled with `--train=adamw` instead
 * of `--grad`, and each step is one call of gpt_train: forward, loss,
 * backward and the AdamW update of every param in place, with the same
 * betas, eps and schedule, but no weight decay (the compiled step
 * applies one value to every param, and 0.1 on the embeddings, gammas
 * and biases too ends at 0.77 x the unigram entropy where 0 ends at
 * 0.71) and no gradient clipping.
 * With -DGPU as well (samples/run_demo.sh gpt-gpu), gpt.rlx and
 * gpt_sample.rlx are compiled with --target=cuda: the params, the
 * optimizer state and the activations live in GPU memory, and every
 * step, validation pass and sampled byte runs on the GPU; the driver
 * only copies tokens in and losses, logits and sampled bytes out.
 * `--probe` as the only argument: exit 0 when a GPU is usable, else 1
 * and the reason on stderr.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpt.h"
#include "gpt_sample.h"
#ifndef GPU
#include "gpt_gen.h"
#endif
#include "gpt_common.h"

#if defined(GPU) && !defined(TRAIN_STEP)
#error "-DGPU needs -DTRAIN_STEP (rlxc --train=adamw --target=cuda)"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#ifdef TRAIN_STEP
#define STEP gpt_train /* rlxc --train=adamw */
#else
#define STEP gpt_grad  /* rlxc --grad */
#endif
#define S(x) CAT(STEP, x) /* S(_ARG_tok): gpt_train_ARG_tok or gpt_grad_... */

enum {
  B = 8, T = 64, V = 256, LAYERS = 4,   /* as in samples/gpt.rlx */
  P0 = S(_ARG_wte),                     /* first param in the signature */
  NP = S(_ARG_lnfb) - P0 + 1,           /* number of params */
  NVAL = 4,                             /* validation batches */
  GEN = 300                             /* bytes to generate */
};
_Static_assert(gpt_ARG_wte == P0 && S(_BYTES_tok) == B * T * 4 &&
                   S(_OUT_BYTES_logits) == B * T * V * 4 &&
                   gpt_WORKSPACE_BYTES <= S(_WORKSPACE_BYTES) &&
                   gpt_sample_WORKSPACE_BYTES <= S(_WORKSPACE_BYTES) &&
                   gpt_sample_BYTES_logits == GEN * V * 4,
               "gpt.h does not match samples/gpt.rlx");
#ifndef GPU
_Static_assert(gpt_gen_ARG_wte == P0 && gpt_gen_ARG_lnfb == P0 + NP - 1 &&
                   gpt_gen_WORKSPACE_BYTES <= S(_WORKSPACE_BYTES),
               "gpt_gen.h does not match samples/gpt.rlx");
#endif
#ifndef TRAIN_STEP
_Static_assert(gpt_grad_OUT_d_wte == P0 && gpt_grad_ARG_d_output == P0 + NP,
               "gpt.h does not match samples/gpt.rlx");
#endif

static const double PEAK_LR = 3e-3, WARMUP = 50, BETA1 = 0.9,
                    BETA2 = 0.95, EPS = 1e-8;

/* The params, gradients and AdamW moments: param k is w[off[k]..]. */
static struct {
  int64_t off[NP + 1];
  int decay[NP];
  float *w, *g, *m, *v;
} P;

static int init_params(uint64_t *s)
{
  const rlx_signature *sig = S(_signature)();
  for (int k = 0; k < NP; k++) {
    const rlx_tensor_desc *d = &sig->inputs[P0 + k];
    int64_t n = 1;
    for (int i = 0; i < d->rank; i++)
      n *= d->dims[i];
    P.off[k + 1] = P.off[k] + n;
    P.decay[k] = d->rank == 2;
  }
  size_t bytes = (size_t)P.off[NP] * sizeof(float);
  P.w = malloc(bytes);
  P.g = malloc(bytes);
  P.m = calloc(1, bytes);
  P.v = calloc(1, bytes);
  if (!P.w || !P.g || !P.m || !P.v)
    return 0;
  for (int k = 0; k < NP; k++)
    gpt_init_param(sig->inputs[P0 + k].name, sig->inputs[P0 + k].rank, LAYERS,
                   P.w + P.off[k], P.off[k + 1] - P.off[k], s);
  return 1;
}

/* Window b of a batch: tokens text[at..at+63], targets one byte later. */
static void put_window(const unsigned char *text, long at, int b, int *tok,
                       int *tgt)
{
  for (int t = 0; t < T; t++) {
    tok[b * T + t] = text[at + t];
    tgt[b * T + t] = text[at + t + 1];
  }
}

#ifndef TRAIN_STEP
static const double DECAY = 0.1; /* on the rank-2 params */

static void adamw(int step, double lr)
{
  float *restrict w = P.w, *restrict m = P.m, *restrict v = P.v;
  const float *restrict g = P.g;
  double norm = 0;
  for (int64_t i = 0; i < P.off[NP]; i++)
    norm += (double)g[i] * g[i];
  norm = sqrt(norm);
  float clip = norm > 1 ? (float)(1 / norm) : 1, b1 = (float)BETA1,
        b2 = (float)BETA2, eps = (float)EPS,
        c1 = (float)(1 - pow(BETA1, step)), c2 = (float)(1 - pow(BETA2, step));
  for (int k = 0; k < NP; k++) {
    float a = (float)lr, wd = P.decay[k] ? (float)(lr * DECAY) : 0;
    for (int64_t i = P.off[k]; i < P.off[k + 1]; i++) {
      float gi = clip * g[i];
      m[i] = b1 * m[i] + (1 - b1) * gi;
      v[i] = b2 * v[i] + (1 - b2) * gi * gi;
      w[i] -= a * (m[i] / c1) / (sqrtf(v[i] / c2) + eps) + wd * w[i];
    }
  }
}

#endif

static double lr_at(int step, int steps) /* step 1..steps */
{
  if (step <= WARMUP)
    return PEAK_LR * step / WARMUP;
  double p = (step - WARMUP) / (steps - WARMUP > 0 ? steps - WARMUP : 1);
  return PEAK_LR * (0.1 + 0.45 * (1 + cos(3.141592653589793 * p)));
}

static void run(Entry entry, const void **in, void **out, void *ws)
{
  int rc = entry(in, out, ws STREAM);
  if (rc) {
    fprintf(stderr, "gpt call failed: %s\n", rlx_strerror(rc));
    exit(2);
  }
}

/* Copy the batch tok, tgt into the model's input buffers. */
static void put_batch(const void **in, const int *tok, const int *tgt)
{
  put((void *)in[gpt_ARG_tok], tok, B * T * sizeof *tok);
  put((void *)in[gpt_ARG_tgt], tgt, B * T * sizeof *tgt);
}

/* The model's loss output. */
static float get_loss(void **out)
{
  float loss;
  get(&loss, out[gpt_OUT_loss], sizeof loss);
  return loss;
}

/* The mean loss of the forward entry over NVAL fixed validation batches. */
static double val_loss(const unsigned char *val, long nval, const void **in,
                       void **out, int *tok, int *tgt, void *ws)
{
  double sum = 0;
  for (int j = 0; j < NVAL; j++) {
    for (int b = 0; b < B; b++)
      put_window(val, (long)(j * B + b) * (nval - T - 1) / (NVAL * B - 1),
                 b, tok, tgt);
    put_batch(in, tok, tgt);
    run(gpt, in, out, ws);
    sum += get_loss(out);
  }
  return sum / NVAL;
}

/* Into row, the logits after the last of the len context tokens in
 * tok[0..len). On the CPU one call of gpt_gen over exactly len positions
 * (samples/gpt_gen.rlx: one compiled graph for any length up to T, the
 * params of gpt in the same places); on the GPU, which takes static
 * sizes only, gpt over the whole batch with the context in window 0. */
static void next_logits(const void **in, void **out, int *tok, int *tgt,
                        int len, void *ws, float *row)
{
  const float *logits = out[gpt_OUT_logits];
#ifdef GPU
  put_batch(in, tok, tgt);
  run(gpt, in, out, ws);
#else
  static int pos[T];
  const void *gin[gpt_gen_NUM_INPUTS];
  void *gout[1] = {out[gpt_OUT_logits]};
  int64_t size = len;
  (void)tgt;
  memcpy(gin, in, sizeof gin);
  gin[gpt_gen_ARG_tok] = tok;
  gin[gpt_gen_ARG_pos] = pos;
  for (int t = 0; t < len; t++)
    pos[t] = t;
  int rc = gpt_gen(gin, gout, ws, &size);
  if (rc) {
    fprintf(stderr, "gpt_gen failed: %s\n", rlx_strerror(rc));
    exit(2);
  }
#endif
  get(row, logits + (size_t)(len - 1) * V, V * sizeof *row);
}

/* Print the prompt and GEN sampled bytes. Byte i is drawn by the
 * compiled sample op (samples/gpt_sample.rlx: temperature 0.8, top-p
 * 0.95) from row i of its logits. */
static void generate(const unsigned char *prompt, int len, const void **in,
                     void **out, int *tok, int *tgt, void *ws)
{
  static float rows[GEN * V];
  static int64_t ids[GEN];
  float *m_rows = model_alloc(rows, sizeof rows);
  int64_t *m_ids = model_alloc(ids, sizeof ids);
  const void *sin[1] = {m_rows};
  void *sout[1] = {m_ids};
  fwrite(prompt, 1, (size_t)len, stdout);
  for (int t = 0; t < len; t++)
    tok[t] = prompt[t];
  for (int i = 0; i < GEN; i++) {
    float *row = rows + (size_t)i * V;
    next_logits(in, out, tok, tgt, len, ws, row);
    put(m_rows + (size_t)i * V, row, V * sizeof *rows);
    run(gpt_sample, sin, sout, ws);
    get(&ids[i], &m_ids[i], sizeof *ids);
    int c = (int)ids[i];
    putchar(c);
    if (len == T) /* slide the window */
      memmove(tok, tok + 1, (T - 1) * sizeof *tok);
    else
      len++;
    tok[len - 1] = c;
  }
  putchar('\n');
#ifdef GPU
  model_free(m_rows);
  model_free(m_ids);
#endif
}

int main(int argc, char **argv)
{
#ifdef GPU
  gpu_probe(argc, argv);
#endif
  if (argc < 2) {
    fprintf(stderr, "usage: %s text [steps] [threads] [max_ratio]\n",
            argv[0]);
    return 2;
  }
  int steps = argc > 2 ? atoi(argv[2]) : 1500;
  if (argc > 3 && atoi(argv[3]) > 0)
    rlx_set_num_threads(atoi(argv[3]));
  double max_ratio = argc > 4 ? atof(argv[4]) : 0.75;
  long n;
  unsigned char *text = load_text(argv[1], &n);
  if (!text)
    return 2;
  long ntrain = n - n / 10, nval = n - ntrain;
  if (steps < 1 || nval < T + 1 + NVAL * B) {
    fprintf(stderr, "need steps >= 1 and at least %d bytes of text\n",
            10 * (T + 1 + NVAL * B));
    return 2;
  }

  double count[V] = {0}, unigram = 0; /* entropy in nats */
  for (long i = 0; i < ntrain; i++)
    count[text[i]]++;
  for (int c = 0; c < V; c++)
    if (count[c])
      unigram -= count[c] / ntrain * log(count[c] / ntrain);

  uint64_t seed = 20240601;
  static int tok[B * T], tgt[B * T];
  static float logits[B * T * V], loss;
#ifdef GPU
  gpu_ok(rlx_gpu_stream_create(&stream), "no usable GPU");
#endif
  if (!init_params(&seed)) {
    fprintf(stderr, "out of memory\n");
    return 2;
  }
  size_t wbytes = (size_t)P.off[NP] * sizeof(float);
  void *ws = model_alloc(NULL, S(_WORKSPACE_BYTES)); /* also for gpt */
  float *w = model_alloc(P.w, wbytes);
  put(w, P.w, wbytes);
  const void *in[S(_NUM_INPUTS)]; /* gpt's inputs are a prefix */
  void *out[S(_NUM_OUTPUTS)];
  in[S(_ARG_tok)] = model_alloc(tok, sizeof tok);
  in[S(_ARG_tgt)] = model_alloc(tgt, sizeof tgt);
  out[S(_OUT_loss)] = model_alloc(&loss, sizeof loss);
  out[S(_OUT_logits)] = model_alloc(logits, sizeof logits);
  for (int k = 0; k < NP; k++)
    in[P0 + k] = w + P.off[k];
#ifdef TRAIN_STEP
  /* lr (set every step), beta1, beta2, eps, weight_decay 0; the state */
  float hyper[5] = {0, (float)BETA1, (float)BETA2, (float)EPS, 0},
        *m_hyper = model_alloc(hyper, sizeof hyper);
  for (int j = 0; j < 5; j++)
    in[gpt_train_ARG_lr + j] = m_hyper + j;
  void *state = model_alloc(NULL, gpt_train_STATE_BYTES);
  in[gpt_train_ARG_opt_state] = state;
#else
  float one = 1.0f;
  in[gpt_grad_ARG_d_output] = &one;
  for (int k = 0; k < NP; k++)
    out[gpt_grad_OUT_d_wte + k] = P.g + P.off[k];
#endif

#ifdef GPU
  printf("gpt: %ld bytes of text, %ld train, %ld validation; %lld params, "
         "on the GPU\n", n, ntrain, nval, (long long)P.off[NP]);
#else
  printf("gpt: %ld bytes of text, %ld train, %ld validation; %lld params, "
         "%d threads\n", n, ntrain, nval, (long long)P.off[NP],
         rlx_get_num_threads());
#endif
  printf("unigram baseline (byte entropy): %.4f nats\n", unigram);
  printf("step %5d  val %.4f\n", 0,
         val_loss(text + ntrain, nval, in, out, tok, tgt, ws));
  int every = steps >= 10 ? steps / 10 : 1;
  double sum = 0, t0 = now(), vl = 0;
  int last = 0;
  for (int step = 1; step <= steps; step++) {
    for (int b = 0; b < B; b++)
      put_window(text, (long)(rng_unit(&seed) * (ntrain - T)), b, tok, tgt);
    put_batch(in, tok, tgt);
#ifdef TRAIN_STEP
    hyper[0] = (float)lr_at(step, steps);
    put(m_hyper, hyper, sizeof hyper);
    run(gpt_train, in, out, ws);
    sum += get_loss(out);
#else
    run(gpt_grad, in, out, ws);
    adamw(step, lr_at(step, steps));
    sum += loss;
#endif
    if (step == 1 || step % every == 0 || step == steps) {
      double ms = 1e3 * (now() - t0) / (step - last);
      vl = val_loss(text + ntrain, nval, in, out, tok, tgt, ws);
      printf("step %5d  train %.4f  val %.4f  (%.2f ms/step, %.0f "
             "tokens/s)\n", step, sum / (step - last), vl, ms,
             B * T / (ms * 1e-3));
      fflush(stdout);
      sum = 0;
      last = step;
      t0 = now();
    }
  }

  /* The prompt: the validation text from its first paragraph on. */
  const unsigned char *prompt = text + ntrain;
  for (long i = ntrain; i + 2 + 48 < n; i++)
    if (text[i] == '\n' && text[i + 1] == '\n') {
      prompt = text + i + 2;
      break;
    }
  printf("--- sample (temperature 0.8, top-p 0.95) ---\n");
  generate(prompt, 48, in, out, tok, tgt, ws);
  printf("---\nfinal validation loss %.4f = %.2f x unigram %.4f "
         "(must be < %.2f)\n", vl, vl / unigram, unigram, max_ratio);
  free(P.w);
  free(P.g);
  free(P.m);
  free(P.v);
  free(text);
  model_free(ws);
#ifdef TRAIN_STEP
  model_free(state);
#endif
#ifdef GPU
  void *dev[] = {w, (void *)in[gpt_ARG_tok], (void *)in[gpt_ARG_tgt],
                 out[gpt_OUT_loss], out[gpt_OUT_logits], m_hyper};
  for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
    model_free(dev[i]);
  rlx_gpu_stream_destroy(stream);
#endif
  return vl < max_ratio * unigram ? 0 : 1;
}
