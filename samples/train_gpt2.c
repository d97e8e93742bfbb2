/* train_gpt2.c -- train GPT-2 small (samples/gpt2.rlx: 124M params,
 * bf16 compute, f32 params) on a BPE-tokenized text.
 *
 * Build (samples/run_demo.sh gpt2 does it):
 *   rlxc samples/gpt2.rlx --train=adamw --target=cuda --cuda-graph -o gpt2.o
 *   cc -DGPU -I. -Iruntime -Isamples -I<dir of gpt2.h> samples/train_gpt2.c \
 *      samples/bpe.c gpt2.o build/runtime/librlxrt.a -lm -lpthread -ldl
 *   ./train_gpt2 vocab.bpe text [steps] [max_ratio] [peak_lr]
 * (defaults: 300 steps, 0.5, 6e-4). Without -DGPU the same program
 * trains on the CPU (rlxc without --target=cuda): how the tests run a
 * small configuration of the same graph (samples/gen_gpt2.py).
 *
 * The text is encoded with GPT-2's byte-level BPE (samples/bpe.c, the
 * merges of samples/data/gpt2-vocab.bpe.gz). A step takes B random
 * windows of T + 1 tokens (B, T and the vocabulary come from the
 * header's signature): tokens the first T, targets the next T, and one
 * call of gpt2_train does forward, loss, backward and the AdamW update
 * of every param in place (betas 0.9/0.95, eps 1e-8, no weight decay:
 * the compiled step applies one value to every param), learning rate
 * warmed up linearly over the first tenth of the steps, then cosine
 * decay to a tenth. Params start as GPT-2's (gpt_common.h). It prints
 * the loss, ms per step and tokens per second, and exits 1 unless the
 * mean loss of the last tenth of the steps is below max_ratio times the
 * unigram entropy of the tokens (the loss of a model that ignores the
 * context). `--probe` (with -DGPU): exit 0 when a GPU is usable.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpe.h"
#include "gpt2.h"
#include "gpt_common.h"

enum {
  P0 = gpt2_train_ARG_wte, /* first param in the signature */
  NP = gpt2_train_ARG_lnfb - P0 + 1
};

static const double BETA1 = 0.9, BETA2 = 0.95, EPS = 1e-8;

static double lr_at(int step, int steps, double peak) /* step 1..steps */
{
  double warm = steps / 10 > 0 ? steps / 10 : 1;
  if (step <= warm)
    return peak * step / warm;
  double p = (step - warm) / (steps - warm > 0 ? steps - warm : 1);
  return peak * (0.1 + 0.45 * (1 + cos(3.141592653589793 * p)));
}

static int64_t numel(const rlx_tensor_desc *d)
{
  int64_t n = 1;
  for (int i = 0; i < d->rank; i++)
    n *= d->dims[i];
  return n;
}

int main(int argc, char **argv)
{
#ifdef GPU
  gpu_probe(argc, argv);
#endif
  if (argc < 3) {
    fprintf(stderr, "usage: %s vocab.bpe text [steps] [max_ratio] "
            "[peak_lr]\n", argv[0]);
    return 2;
  }
  int steps = argc > 3 ? atoi(argv[3]) : 300;
  double max_ratio = argc > 4 ? atof(argv[4]) : 0.5;
  double peak = argc > 5 ? atof(argv[5]) : 6e-4;
  const rlx_signature *sig = gpt2_train_signature();
  const rlx_tensor_desc *dt = &sig->inputs[gpt2_train_ARG_tok];
  const int B = (int)dt->dims[0], T = (int)dt->dims[1],
            V = (int)sig->inputs[P0].dims[0];

  char err[256];
  Bpe *bpe = bpe_load(argv[1], err, sizeof err);
  if (!bpe) {
    fprintf(stderr, "%s\n", err);
    return 2;
  }
  long nbytes;
  unsigned char *text = load_text(argv[2], &nbytes);
  if (!text)
    return 2;
  size_t n = bpe_encode(bpe, text, (size_t)nbytes, NULL, 0);
  int32_t *ids = n == SIZE_MAX ? NULL : malloc((n + 1) * sizeof *ids);
  if (!ids) {
    fprintf(stderr, "out of memory\n");
    return 2;
  }
  if (steps < 1 || n < (size_t)T + 1) {
    fprintf(stderr, "need steps >= 1 and at least %d tokens of text\n", T + 1);
    return 2;
  }
  bpe_encode(bpe, text, (size_t)nbytes, ids, n);
  double *count = calloc((size_t)V, sizeof *count), unigram = 0;
  for (size_t i = 0; i < n; i++)
    count[ids[i] < V ? ids[i] : 0]++;
  for (int c = 0; c < V; c++)
    if (count[c])
      unigram -= count[c] / n * log(count[c] / n);

  /* params (GPT-2's initialization), hyperparameters, state, workspace */
  int layers = 0;
  int64_t off[NP + 1];
  off[0] = 0;
  for (int k = 0; k < NP; k++) {
    off[k + 1] = off[k] + numel(&sig->inputs[P0 + k]);
    layers += !strncmp(sig->inputs[P0 + k].name, "wqkv", 4);
  }
  uint64_t seed = 20240601;
  float *host = malloc((size_t)off[NP] * sizeof *host);
  int *tok = malloc((size_t)B * T * sizeof *tok),
      *tgt = malloc((size_t)B * T * sizeof *tgt);
  if (!host || !tok || !tgt || !count) {
    fprintf(stderr, "out of memory\n");
    return 2;
  }
  for (int k = 0; k < NP; k++)
    gpt_init_param(sig->inputs[P0 + k].name, sig->inputs[P0 + k].rank, layers,
                   host + off[k], off[k + 1] - off[k], &seed);
#ifdef GPU
  gpu_ok(rlx_gpu_stream_create(&stream), "no usable GPU");
#endif
  size_t wbytes = (size_t)off[NP] * sizeof *host;
  float *w = model_alloc(NULL, wbytes);
  put(w, host, wbytes);
  float hyper[5] = {0, (float)BETA1, (float)BETA2, (float)EPS, 0}, loss;
  float *m_hyper = model_alloc(NULL, sizeof hyper);
  const void *in[gpt2_train_NUM_INPUTS];
  void *out[gpt2_train_NUM_OUTPUTS];
  in[gpt2_train_ARG_tok] = model_alloc(NULL, (size_t)B * T * sizeof *tok);
  in[gpt2_train_ARG_tgt] = model_alloc(NULL, (size_t)B * T * sizeof *tgt);
  for (int k = 0; k < NP; k++)
    in[P0 + k] = w + off[k];
  for (int j = 0; j < 5; j++)
    in[gpt2_train_ARG_lr + j] = m_hyper + j;
  void *state = model_alloc(NULL, gpt2_train_STATE_BYTES);
  void *ws = model_alloc(NULL, gpt2_train_WORKSPACE_BYTES);
  in[gpt2_train_ARG_opt_state] = state;
  out[gpt2_train_OUT_loss] = model_alloc(NULL, sizeof loss);

  printf("gpt2: %ld bytes of text, %zu tokens (vocabulary %d); %d layers, "
         "%lld params; %d x %d tokens a step\n", nbytes, n, V, layers,
         (long long)off[NP], B, T);
  printf("memory: params %.1f MB, AdamW state %.1f MB, workspace %.1f MB "
         "(%s)\n", wbytes / 1e6, gpt2_train_STATE_BYTES / 1e6,
         gpt2_train_WORKSPACE_BYTES / 1e6,
#ifdef GPU
         "on the GPU"
#else
         "host"
#endif
  );
  printf("unigram baseline (token entropy): %.4f nats\n", unigram);
  int every = steps >= 10 ? steps / 10 : 1, last = 0;
  double sum = 0, tail = 0, t0 = now();
  for (int step = 1; step <= steps; step++) {
    for (int b = 0; b < B; b++) {
      size_t at = (size_t)(rng_unit(&seed) * (double)(n - T));
      for (int t = 0; t < T; t++) {
        tok[b * T + t] = ids[at + t];
        tgt[b * T + t] = ids[at + t + 1];
      }
    }
    put((void *)in[gpt2_train_ARG_tok], tok, (size_t)B * T * sizeof *tok);
    put((void *)in[gpt2_train_ARG_tgt], tgt, (size_t)B * T * sizeof *tgt);
    hyper[0] = (float)lr_at(step, steps, peak);
    put(m_hyper, hyper, sizeof hyper);
#ifdef GPU
    gpu_ok(gpt2_train(in, out, ws STREAM), "gpt2_train");
#else
    int rc = gpt2_train(in, out, ws STREAM);
    if (rc) {
      fprintf(stderr, "gpt2_train failed: %s\n", rlx_strerror(rc));
      return 2;
    }
#endif
    get(&loss, out[gpt2_train_OUT_loss], sizeof loss);
    sum += loss;
    if (step > steps - every)
      tail += loss;
    if (step == 1 || step % every == 0 || step == steps) {
      double ms = 1e3 * (now() - t0) / (step - last);
      printf("step %5d  loss %.4f  (%.2f ms/step, %.0f tokens/s)%s\n", step,
             sum / (step - last), ms, B * T / (ms * 1e-3),
#ifdef GPU
             step == 1 ? "  first call: module load and capture" :
#endif
                         "");
      fflush(stdout);
      sum = 0;
      last = step;
      t0 = now();
    }
  }
  tail /= every;
  printf("final loss (mean of the last %d steps) %.4f = %.2f x unigram "
         "%.4f (must be < %.2f)\n", every, tail, tail / unigram, unigram,
         max_ratio);
  void *mem[] = {w, m_hyper, (void *)in[gpt2_train_ARG_tok],
                 (void *)in[gpt2_train_ARG_tgt], state, ws,
                 out[gpt2_train_OUT_loss]};
  for (size_t i = 0; i < sizeof mem / sizeof *mem; i++)
    model_free(mem[i]);
#ifdef GPU
  rlx_gpu_stream_destroy(stream);
#endif
  free(host), free(tok), free(tgt), free(ids), free(count), free(text);
  bpe_free(bpe);
  return tail < max_ratio * unigram ? 0 : 1;
}
