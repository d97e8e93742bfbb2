/* bench_gpt_gen.c -- the GPT forward over a dynamic sequence length
 * (samples/gpt_gen.rlx: tok [1, ?t<=64], docs/performance.md "Dynamic
 * dimensions"): one compiled object timed at t = 64, 16 and 1 in
 * alternating rounds of CALLS calls each; prints the median and minimum
 * ms per call at each t and the ratios of the medians to t = 64.
 * usage: bench_gpt_gen [THREADS [ROUNDS [CALLS]]] */
#include "bench_time.h"
#include "gpt_gen.h"

enum { NT = 3 };
static const int64_t LEN[NT] = {64, 16, 1};

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1, rounds = argc > 2 ? atoi(argv[2]) : 15,
      calls = argc > 3 ? atoi(argv[3]) : 50;
  (void)time_fn; /* bench_time.h's loop: not used here */
  rlx_set_num_threads(threads);
  const rlx_signature *sig = gpt_gen_signature();
  const void *in[gpt_gen_NUM_INPUTS];
  static int tok[64], pos[64];
  static float logits[64 * 256];
  for (int t = 0; t < 64; t++) tok[t] = (t * 37) % 256, pos[t] = t;
  in[gpt_gen_ARG_tok] = tok, in[gpt_gen_ARG_pos] = pos;
  for (int k = gpt_gen_ARG_wte; k < gpt_gen_NUM_INPUTS; k++) {
    const rlx_tensor_desc *d = &sig->inputs[k];
    int64_t n = 1;
    for (int i = 0; i < d->rank; i++) n *= d->dims[i];
    float *w = malloc((size_t)n * sizeof *w);
    for (int64_t i = 0; i < n; i++) w[i] = 0.02f * (float)((i * 7919) % 201 - 100) / 100;
    in[k] = w;
  }
  void *out[1] = {logits};
  void *ws = rlx_alloc(gpt_gen_WORKSPACE_BYTES);
  double *ms = malloc(sizeof *ms * NT * (size_t)rounds);
  for (int r = 0; r < rounds; r++)
    for (int j = 0; j < NT; j++) {
      int k = (j + r) % NT;
      int64_t t = LEN[k];
      double t0 = now_s();
      for (int c = 0; c < calls; c++)
        if (gpt_gen(in, out, ws, &t)) return 1;
      ms[k * rounds + r] = 1e3 * (now_s() - t0) / calls;
    }
  printf("gpt_gen, %d threads, %d rounds x %d calls\n", threads, rounds, calls);
  double med[NT];
  for (int k = 0; k < NT; k++) {
    qsort(ms + k * rounds, (size_t)rounds, sizeof *ms, cmp_double);
    med[k] = ms[k * rounds + rounds / 2];
    printf("t = %2lld: median %.4f ms, min %.4f ms, median / median(t = 64) %.3f\n",
           (long long)LEN[k], med[k], ms[k * rounds], med[k] / med[0]);
  }
  return 0;
}
