/* bench_mlp.c -- latency of the MLP 784-512-512-10 (batch 128, relu):
 * forward (bench_mlp) and one training step (bench_mlp_train_grad:
 * forward + backward, gradients of all params) at 1 and 2 threads.
 *
 * Built by bench/CMakeLists.txt (target bench_mlp, not in `all`):
 * rlxc compiles bench_mlp.rlx and bench_mlp_train.rlx --grad, and this
 * driver calls the entries through tests/tools/harness.c.
 *   bench_mlp [--threads 1,2] [--seconds S]
 * Prints one line per measurement,
 *   rlx <forward|train_step|gemm_only> threads=T median_ms=M min_ms=N
 * (gemm_only: the forward's three GEMMs called directly, a floor),
 * then the workspace bytes of the forward-only plan and the grad plan.
 * bench/bench_mlp_torch.py --rlx PATH runs this and PyTorch and prints
 * the comparison table of docs/performance.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_time.h"
#include "bench_mlp.h"
#include "bench_mlp_train.h"
#include "tests/tools/harness.h"

static int call_entry(void *c)
{
  return hx_run(c);
}

/* The three GEMMs of the forward pass alone, straight through
 * rlx_gemm_f32: a floor for the forward latency (bias and relu are
 * left out).  Buffers come from the forward call's own inputs. */
typedef struct {
  HxCall *c;
  float *h1, *h2, *z;
} GemmOnly;

static int gemm_only_run(void *ctx)
{
  GemmOnly *g = ctx;
  const float *x = g->c->in[0].data, *w1 = g->c->in[1].data;
  const float *w2 = g->c->in[3].data, *w3 = g->c->in[5].data;
  rlx_gemm_f32(1, 128, 512, 784, x, 0, 784, 1, w1, 0, 512, 1, g->h1, 0,
               512, 0);
  rlx_gemm_f32(1, 128, 512, 512, g->h1, 0, 512, 1, w2, 0, 512, 1, g->h2,
               0, 512, 0);
  rlx_gemm_f32(1, 128, 10, 512, g->h2, 0, 512, 1, w3, 0, 10, 1, g->z, 0,
               10, 0);
  return 0;
}

static int measure_gemm_only(HxCall *c, int threads, double seconds)
{
  GemmOnly g = {c, rlx_alloc(128 * 512 * 4), rlx_alloc(128 * 512 * 4),
                rlx_alloc(128 * 10 * 4)};
  int bad = !g.h1 || !g.h2 || !g.z ||
            time_fn(gemm_only_run, &g, "gemm_only", threads, seconds);
  rlx_free(g.h1);
  rlx_free(g.h2);
  rlx_free(g.z);
  return bad;
}

/* Labels (input 1 of the training entry) must lie in [0, 10). */
static void fix_labels(HxCall *c)
{
  int32_t *y = c->in[1].data;
  for (int64_t i = 0; i < c->in[1].numel; i++)
    y[i] = (int32_t)(i * 7 % 10);
}

int main(int argc, char **argv)
{
  argc = bench_isa_args(argc, argv);
  int threads[8] = {1, 2}, nt = 2;
  double seconds = 2.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--seconds"))
      seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) {
      nt = 0;
      for (char *s = argv[i + 1]; *s && nt < 8; s += *s == ',')
        threads[nt++] = (int)strtol(s, &s, 10);
    }
  }
  HxCall fwd, step;
  if (!hx_call_init(&fwd, bench_mlp, bench_mlp_signature(), false) ||
      !hx_call_init(&step, bench_mlp_train_grad,
                    bench_mlp_train_grad_signature(), false))
    return 2;
  hx_fill_inputs(&fwd, 1);
  hx_fill_inputs(&step, 1);
  fix_labels(&step);
  hx_set(&step.in[step.sig->num_inputs - 1], 0, 1.0); /* d_output */
  int bad = 0;
  for (int k = 0; k < nt && !bad; k++)
    bad = time_fn(call_entry, &fwd, "forward", threads[k], seconds) ||
          time_fn(call_entry, &step, "train_step", threads[k], seconds) ||
          measure_gemm_only(&fwd, threads[k], seconds);
  printf("workspace_bytes forward=%zu train_forward=%zu train_step=%zu\n",
         (size_t)bench_mlp_WORKSPACE_BYTES,
         (size_t)bench_mlp_train_WORKSPACE_BYTES,
         (size_t)bench_mlp_train_grad_WORKSPACE_BYTES);
  hx_call_free(&fwd);
  hx_call_free(&step);
  return bad;
}
