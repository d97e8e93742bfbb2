/* bench_conv.c -- GFLOP/s of the convolution kernels (rlx_conv2d_*).
 *
 * usage: bench_conv [--f64] [--threads=1,2] [--secs=S] [--isa=NAME]
 *                   [--batch=N] [--ops=fwd,bwd_input,bwd_weight,step]
 *                   [SHAPE ...]
 * Shapes (default: all): resnet3x3 [32,64,56,56] 3x3 64->64 pad 1;
 * resnet1x1 [32,256,14,14] 1x1 256->256; dw3x3 [32,128,28,28] 3x3
 * pad 1 groups 128; cnn1 [64,1,28,28] 3x3 1->16 pad 1; cnn2
 * [64,16,14,14] 3x3 16->32 pad 1; cnn (both cnn layers, for `step`).
 * --batch=N replaces every shape's batch size (for quick runs).
 * For each shape, thread count and op: median and minimum of calls
 * repeated for about --secs seconds (default 1) after 2 warm-up calls;
 * GFLOP/s = 2*N*Co*OH*OW*(C/g)*kh*kw / time.  `step` is one training
 * step of the small CNN's convolutions: both forwards, both weight
 * gradients and cnn2's input gradient (cnn1's input, the image, needs
 * none), as PyTorch's autograd runs it (bench_conv_torch.py).
 * Output lines: "rlx SHAPE OP threads=T median_ms=.. min_ms=.. gflops=..
 * (median) gflops_best=.. (min) cpu_ms=.. calls=..", cpu_ms the median
 * process CPU time of a call (all threads; on a shared machine, the
 * 1-thread cpu_ms shows the time the kernels needed while scheduled).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rlxrt.h"

typedef struct {
  const char *name;
  int64_t n, c, h, w, co, k, pad, groups;
} Shape;

static const Shape SHAPES[] = {
  {"resnet3x3", 32, 64, 56, 56, 64, 3, 1, 1},
  {"resnet1x1", 32, 256, 14, 14, 256, 1, 0, 1},
  {"dw3x3", 32, 128, 28, 28, 128, 3, 1, 128},
  {"cnn1", 64, 1, 28, 28, 16, 3, 1, 1},
  {"cnn2", 64, 16, 14, 14, 32, 3, 1, 1},
};
enum { NSHAPES = sizeof SHAPES / sizeof SHAPES[0] };

/* One convolution layer: geometry, operands, scratch per op. */
typedef struct {
  rlx_conv_geom g;
  void *x, *w, *y, *dy, *dx, *dw, *scratch[3];
} Layer;

static int use_f64;
static int64_t batch; /* --batch: overrides the shapes' N when > 0 */

static double clock_s(clockid_t id)
{
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now(void)
{
  return clock_s(CLOCK_MONOTONIC);
}

static void *filled(int64_t n)
{
  size_t es = use_f64 ? 8 : 4;
  void *p = rlx_alloc((size_t)n * es);
  for (int64_t i = 0; i < n; i++) {
    double v = (double)rand() / RAND_MAX - 0.5;
    if (use_f64)
      ((double *)p)[i] = v;
    else
      ((float *)p)[i] = (float)v;
  }
  return p;
}

static void layer_init(Layer *l, const Shape *s)
{
  rlx_conv_geom g = {batch > 0 ? batch : s->n, s->c, s->h, s->w, s->co,
                     s->k, s->k, 0, 0, 1, 1, s->pad, s->pad, 1, 1,
                     s->groups};
  g.oh = s->h + 2 * s->pad - s->k + 1;
  g.ow = s->w + 2 * s->pad - s->k + 1;
  l->g = g;
  int64_t nx = g.n * g.c * g.h * g.w, ny = g.n * g.co * g.oh * g.ow;
  int64_t nw = g.co * (g.c / g.groups) * g.kh * g.kw;
  l->x = filled(nx);
  l->dx = filled(nx);
  l->w = filled(nw);
  l->dw = filled(nw);
  l->y = filled(ny);
  l->dy = filled(ny);
  for (int op = 0; op < 3; op++)
    l->scratch[op] =
        rlx_alloc((size_t)rlx_conv2d_scratch_bytes(&g, op, use_f64 ? 8 : 4));
}

static void layer_free(Layer *l)
{
  void *ps[] = {l->x, l->dx, l->w, l->dw, l->y, l->dy, l->scratch[0],
                l->scratch[1], l->scratch[2]};
  for (int i = 0; i < 9; i++)
    rlx_free(ps[i]);
}

static void run_op(Layer *l, int op)
{
  if (use_f64) {
    if (op == 0)
      rlx_conv2d_f64(&l->g, l->x, l->w, l->y, l->scratch[0]);
    else if (op == 1)
      rlx_conv2d_bwd_input_f64(&l->g, l->dy, l->w, l->dx, l->scratch[1]);
    else
      rlx_conv2d_bwd_weight_f64(&l->g, l->x, l->dy, l->dw, l->scratch[2]);
  } else {
    if (op == 0)
      rlx_conv2d_f32(&l->g, l->x, l->w, l->y, l->scratch[0]);
    else if (op == 1)
      rlx_conv2d_bwd_input_f32(&l->g, l->dy, l->w, l->dx, l->scratch[1]);
    else
      rlx_conv2d_bwd_weight_f32(&l->g, l->x, l->dy, l->dw, l->scratch[2]);
  }
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* ops < 3: one op of layer l[0]; op 3: the training step of l[0..1]. */
static void run(Layer *l, int op)
{
  if (op < 3) {
    run_op(l, op);
    return;
  }
  run_op(&l[0], 0);
  run_op(&l[1], 0);
  run_op(&l[1], 1);
  run_op(&l[1], 2);
  run_op(&l[0], 2);
}

static double flops(const Layer *l, int op)
{
  const rlx_conv_geom *g = &l->g;
  if (op == 3)
    return 2 * flops(&l[0], 0) + 3 * flops(&l[1], 0);
  return 2.0 * g->n * g->co * g->oh * g->ow * (g->c / g->groups) * g->kh *
         g->kw;
}

static void measure(const char *name, Layer *l, int op, int threads,
                    double secs)
{
  static const char *const OPS[] = {"fwd", "bwd_input", "bwd_weight",
                                    "step"};
  enum { MAXCALLS = 100000 };
  static double t[MAXCALLS], cpu[MAXCALLS];
  rlx_set_num_threads(threads);
  run(l, op);
  run(l, op);
  int n = 0;
  double start = now();
  while (n < MAXCALLS && (n < 5 || now() - start < secs)) {
    double t0 = now(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    run(l, op);
    cpu[n] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    t[n++] = now() - t0;
  }
  qsort(t, (size_t)n, sizeof t[0], cmp_double);
  qsort(cpu, (size_t)n, sizeof cpu[0], cmp_double);
  double med = t[n / 2], mn = t[0], f = flops(l, op);
  printf("rlx %s %s threads=%d median_ms=%.3f min_ms=%.3f gflops=%.1f "
         "gflops_best=%.1f cpu_ms=%.3f calls=%d\n",
         name, OPS[op], threads, med * 1e3, mn * 1e3, f / med * 1e-9,
         f / mn * 1e-9, cpu[n / 2] * 1e3, n);
  fflush(stdout);
}

static int parse_list(const char *s, int *out, int max)
{
  int n = 0;
  while (*s && n < max) {
    out[n++] = atoi(s);
    s = strchr(s, ',');
    if (!s)
      break;
    s++;
  }
  return n;
}

int main(int argc, char **argv)
{
  int threads[8] = {1, 2}, nthreads = 2, ops[4] = {1, 1, 1, 1};
  double secs = 1.0;
  const char *want[16];
  int nwant = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--f64") == 0)
      use_f64 = 1;
    else if (strncmp(a, "--threads=", 10) == 0)
      nthreads = parse_list(a + 10, threads, 8);
    else if (strncmp(a, "--batch=", 8) == 0)
      batch = atoll(a + 8);
    else if (strncmp(a, "--secs=", 7) == 0)
      secs = atof(a + 7);
    else if (strncmp(a, "--isa=", 6) == 0) {
      if (rlx_gemm_select_isa(a + 6) != RLX_OK) {
        fprintf(stderr, "isa %s not available\n", a + 6);
        return 1;
      }
    } else if (strncmp(a, "--ops=", 6) == 0) {
      static const char *const names[] = {"fwd", "bwd_input", "bwd_weight",
                                          "step"};
      for (int o = 0; o < 4; o++)
        ops[o] = strstr(a + 6, names[o]) != NULL;
    } else if (a[0] != '-' && nwant < 16)
      want[nwant++] = a;
    else {
      fprintf(stderr, "usage: bench_conv [--f64] [--threads=1,2] "
                      "[--secs=S] [--isa=NAME] [--batch=N] [--ops=...] "
                      "[SHAPE ...]\n");
      return 2;
    }
  }
  printf("# rlx conv %s, kernels %s\n", use_f64 ? "f64" : "f32",
         rlx_gemm_isa());
  for (int s = 0; s <= NSHAPES; s++) {
    const char *name = s < NSHAPES ? SHAPES[s].name : "cnn";
    int pick = nwant == 0;
    for (int i = 0; i < nwant; i++)
      pick |= strcmp(want[i], name) == 0;
    if (!pick)
      continue;
    Layer l[2];
    layer_init(&l[0], s < NSHAPES ? &SHAPES[s] : &SHAPES[3]);
    if (s == NSHAPES)
      layer_init(&l[1], &SHAPES[4]);
    for (int t = 0; t < nthreads; t++)
      for (int op = 0; op < 4; op++)
        if (ops[op] && (op == 3) == (s == NSHAPES))
          measure(name, l, op, threads[t], secs);
    layer_free(&l[0]);
    if (s == NSHAPES)
      layer_free(&l[1]);
  }
  return 0;
}
