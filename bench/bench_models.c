/* bench_models.c -- latency of whole models with NN layers: the small
 * CNN (bench_cnn.rlx), a ResNet basic block (bench_resblock.rlx) and a
 * transformer block without attention (bench_tblock.rlx) and the tiny
 * GPT of llm.c's reference configuration (bench_gpt.rlx), forward and
 * one training step (ENTRY_grad: forward + backward, gradients of all
 * params), at each requested thread count.
 *
 * Built by bench/CMakeLists.txt (target bench_models, not in `all`):
 * rlxc compiles each graph with --grad and this driver calls the
 * entries through tests/tools/harness.c.
 *   bench_models [--threads 1,2] [--seconds S] [--only NAME]
 *                [--what forward|train_step] [--ftz] [--isa=NAME]
 * Prints one line per measurement,
 *   rlx NAME.<forward|train_step> threads=T median_ms=M min_ms=N calls=C
 *       cpu_ms=P cpu_min_ms=Q
 * and then each model's workspace bytes (forward, training step).
 * bench/bench_models_torch.py --rlx PATH runs this and PyTorch,
 * alternating, and prints the table of docs/performance.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_time.h"
#include "bench_cnn.h"
#include "bench_gpt.h"
#include "bench_resblock.h"
#include "bench_tblock.h"
#include "tests/tools/harness.h"
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

typedef struct {
  const char *name;
  HxEntry fwd, step;
  const rlx_signature *(*fwd_sig)(void), *(*step_sig)(void);
  size_t fwd_ws, step_ws;
} Model;

#define MODEL(m)                                                         \
  {#m, bench_##m, bench_##m##_grad, bench_##m##_signature,               \
   bench_##m##_grad_signature, bench_##m##_WORKSPACE_BYTES,              \
   bench_##m##_grad_WORKSPACE_BYTES}
static const Model models[] = {MODEL(cnn), MODEL(resblock), MODEL(tblock),
                               MODEL(gpt)};

static int call_entry(void *c)
{
  return hx_run(c);
}

static int time_call(HxCall *c, const char *model, const char *what,
                     int threads, double seconds)
{
  char name[64];
  snprintf(name, sizeof name, "%s.%s", model, what);
  return time_fn(call_entry, c, name, threads, seconds);
}

/* Inputs uniform in [-1, 1); i32 inputs (labels) in [0, 10); variances
 * (inputs named v*) in [0.5, 1.5); d_output = 1. */
static bool setup(HxCall *c, HxEntry fn, const rlx_signature *sig,
                  bool grad)
{
  if (!hx_call_init(c, fn, sig, false))
    return false;
  hx_fill_inputs(c, 1);
  for (int i = 0; i < sig->num_inputs; i++) {
    HxTensor *t = &c->in[i];
    for (int64_t k = 0; k < t->numel; k++)
      if (t->desc->dtype == RLX_DT_I32)
        ((int32_t *)t->data)[k] = (int32_t)(k * 7 % 10);
      else if (t->desc->name[0] == 'v')
        ((float *)t->data)[k] += 1.5f;
  }
  if (grad)
    hx_set(&c->in[sig->num_inputs - 1], 0, 1.0);
  return true;
}

/* --ftz (diagnostic, x86-64): set MXCSR's flush-to-zero and
   denormals-are-zero bits before any call (pool workers, created later,
   inherit them), to show what subnormal operands cost: results change
   wherever a subnormal occurs, so it is not a supported mode. */
static int ftz_args(int argc, char **argv)
{
  int n = 1, on = 0;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--ftz"))
      on = 1;
    else
      argv[n++] = argv[i];
  argv[n] = NULL;
  if (on) {
#if defined(__x86_64__)
    _mm_setcsr(_mm_getcsr() | 0x8040);
    printf("# ftz=1 (MXCSR FTZ and DAZ set)\n");
#else
    fprintf(stderr, "--ftz: x86-64 only\n");
    exit(2);
#endif
  }
  return n;
}

int main(int argc, char **argv)
{
  argc = ftz_args(argc, argv);
  argc = bench_isa_args(argc, argv);
  int threads[8] = {1, 2}, nt = 2;
  double seconds = 2.0;
  const char *only = NULL, *what = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--seconds"))
      seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--only"))
      only = argv[i + 1];
    else if (!strcmp(argv[i], "--what")) /* forward or train_step */
      what = argv[i + 1];
    else if (!strcmp(argv[i], "--threads")) {
      nt = 0;
      for (char *s = argv[i + 1]; *s && nt < 8; s += *s == ',')
        threads[nt++] = (int)strtol(s, &s, 10);
    }
  }
  int bad = 0;
  for (size_t m = 0; m < sizeof models / sizeof models[0] && !bad; m++) {
    const Model *md = &models[m];
    if (only && strcmp(only, md->name))
      continue;
    HxCall fwd, step;
    if (!setup(&fwd, md->fwd, md->fwd_sig(), false) ||
        !setup(&step, md->step, md->step_sig(), true))
      return 2;
    for (int k = 0; k < nt && !bad; k++)
      bad = (!(what && strcmp(what, "forward")) &&
             time_call(&fwd, md->name, "forward", threads[k], seconds)) ||
            (!(what && strcmp(what, "train_step")) &&
             time_call(&step, md->name, "train_step", threads[k], seconds));
    printf("workspace_bytes %s forward=%zu train_step=%zu\n", md->name,
           md->fwd_ws, md->step_ws);
    hx_call_free(&fwd);
    hx_call_free(&step);
  }
  return bad;
}
