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
 *                [--dump-inputs DIR]
 * Prints one line per measurement,
 *   rlx NAME.<forward|train_step> threads=T median_ms=M min_ms=N calls=C
 *       cpu_ms=P cpu_min_ms=Q
 * and then each model's workspace bytes (forward, training step).
 * --dump-inputs DIR times nothing: it writes each model's training-step
 * inputs (d_output aside) as DIR/MODEL.NAME.bin (raw, native dtype) and
 * their list as DIR/MODEL.txt (name, param or input, dtype code), and
 * prints the step's loss (`loss MODEL VALUE`), so
 * that bench/bench_models_torch.py --rlx PATH, which runs this and
 * PyTorch alternating and prints the table of docs/performance.md,
 * gives PyTorch the same numbers.
 */
#include <math.h>
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
 * (inputs named v*) in [0.5, 1.5); d_output = 1.  Weight matrices and
 * filters (params of rank >= 2, fan_in their first dimension for rank
 * 2, x @ W, else all but the first) uniform in [-b, b), b =
 * 1/sqrt(fan_in), PyTorch's default bound for Linear and Conv2d: with
 * [-1, 1) the CNN's logits were hundreds apart (loss 485), the softmax
 * saturated and whole images' gradients subnormal, which Intel cores
 * process in microcode (docs/performance.md). */
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
    const rlx_tensor_desc *d = t->desc;
    if (d->kind == RLX_ARG_PARAM && d->dtype == RLX_DT_F32 && d->rank >= 2) {
      int64_t fan_in = d->rank == 2 ? d->dims[0] : t->numel / d->dims[0];
      float b = 1.0f / sqrtf((float)fan_in);
      for (int64_t k = 0; k < t->numel; k++)
        ((float *)t->data)[k] *= b;
    }
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

/* --dump-inputs: c's inputs but the last (d_output) into dir. */
static int dump_inputs(const HxCall *c, const char *dir, const char *model)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.txt", dir, model);
  FILE *list = fopen(path, "w");
  int bad = !list;
  for (int i = 0; !bad && i + 1 < c->sig->num_inputs; i++) {
    const HxTensor *t = &c->in[i];
    fprintf(list, "%s %s %d\n", t->desc->name,
            t->desc->kind == RLX_ARG_PARAM ? "param" : "input",
            t->desc->dtype);
    snprintf(path, sizeof path, "%s/%s.%s.bin", dir, model, t->desc->name);
    FILE *f = fopen(path, "wb");
    bad = !f || fwrite(t->data, 1, t->bytes, f) != t->bytes;
    if (f && fclose(f))
      bad = 1;
  }
  if (!list || fclose(list) || bad) {
    fprintf(stderr, "bench_models: cannot write %s\n", path);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv)
{
  argc = ftz_args(argc, argv);
  argc = bench_isa_args(argc, argv);
  int threads[8] = {1, 2}, nt = 2;
  double seconds = 2.0;
  const char *only = NULL, *what = NULL, *dump = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--seconds"))
      seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--only"))
      only = argv[i + 1];
    else if (!strcmp(argv[i], "--what")) /* forward or train_step */
      what = argv[i + 1];
    else if (!strcmp(argv[i], "--dump-inputs"))
      dump = argv[i + 1];
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
    if (dump && !(bad = dump_inputs(&step, dump, md->name) || hx_run(&step)))
      printf("loss %s %.9g\n", md->name, *(const float *)step.out[0].data);
    for (int k = 0; k < nt && !bad && !dump; k++)
      bad = (!(what && strcmp(what, "forward")) &&
             time_call(&fwd, md->name, "forward", threads[k], seconds)) ||
            (!(what && strcmp(what, "train_step")) &&
             time_call(&step, md->name, "train_step", threads[k], seconds));
    if (!dump)
      printf("workspace_bytes %s forward=%zu train_step=%zu\n", md->name,
             md->fwd_ws, md->step_ws);
    hx_call_free(&fwd);
    hx_call_free(&step);
  }
  return bad;
}
