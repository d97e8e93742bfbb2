/* bench_qgemm.c -- int8 multiply-accumulates per second of rlx_q_matmul
 * next to the f32 MACs per second of rlx_gemm_f32 on the same shape,
 * and both against the core's measured peaks.
 *
 * usage: bench_qgemm [--threads=N] [--isa=NAME] [--secs=S] [--conv]
 *                    [MxNxK ...]
 * Default sizes: 512x512x512 and the digits MLP's inference layers
 * (samples/mlp.rlx at batch 32: 32x64x64 and 32x10x64), 1 thread.
 * One MAC = one multiply-add of one element pair (an f32 FMA counts
 * one, not two flops).  The two kernels run in alternating blocks (7
 * rounds of S/7 seconds each, after a warm-up); per size the line gives
 * each one's median and minimum time per call, MAC/s at the minimum,
 * and the ratio int8 / f32 of MAC/s (median times and minimum times).
 * The peak line times (best of 300 runs of 1.2M instructions) a
 * register-only loop of 12 independent accumulator chains of the int8
 * kernel's instruction and of vfmadd231ps at the same width: vpdpbusd
 * zmm (64 MACs) and FMA zmm (16) for avx512vnni, vpdpbusd ymm (32) and
 * FMA ymm (8) for avxvnni, vpmaddwd + vpaddd ymm (16) and FMA ymm for
 * avx2.  --isa=NAME: an int8 kernel (rlx_q_isa's names: avx512vnni,
 * avxvnni, avx2, neondot, neon, scalar) with the f32 GEMM at the ISA
 * level it needs, or a GEMM ISA (avx512) with its default int8 kernel;
 * the first line names both.
 * --conv adds rlx_q_conv2d next to rlx_conv2d_f32 on a ResNet 3x3
 * layer (1 x 64 x 56 x 56, 64 filters, padding 1).
 * Quantization as usual for a linear layer: x_zp = 3, w_zp = 0
 * (symmetric weights: no row sums of x), out_zp = 1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rlxrt.h"

#define MAXT 200000

typedef struct {
  int64_t m, n, k;
  int8_t *x, *w, *y;
  int32_t *bias;
  float *a, *b, *c;
  void *ws;
} Prob;

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *p, const void *q)
{
  double a = *(const double *)p, b = *(const double *)q;
  return (a > b) - (a < b);
}

static void run_q(const Prob *p)
{
  rlx_q_matmul(p->m, p->n, p->k, p->x, p->w, p->bias, 0.001f, NULL, 3, 0, 1,
               p->y, p->ws);
}

static void run_f(const Prob *p)
{
  rlx_gemm_f32(1, p->m, p->n, p->k, p->a, 0, p->k, 1, p->b, 0, p->n, 1,
               p->c, 0, p->n, 0);
}

/* Appends the times of calls of fn lasting about secs to t[*nt]. */
static void block(const Prob *p, void (*fn)(const Prob *), double secs,
                  double *t, int *nt)
{
  double start = now();
  do {
    double t0 = now();
    fn(p);
    if (*nt < MAXT)
      t[(*nt)++] = now() - t0;
  } while (now() - start < secs);
}

/* q_conv2d next to conv2d (f32) on one ResNet-style layer. */
typedef struct {
  rlx_conv_geom g;
  int8_t *x, *w, *y;
  int32_t *bias;
  float *xf, *wf, *yf;
  void *ws, *wsf;
} ConvProb;

static const ConvProb *cur_conv;

static void run_qc(const Prob *p)
{
  (void)p;
  const ConvProb *c = cur_conv;
  rlx_q_conv2d(&c->g, c->x, c->w, c->bias, 0.001f, 3, 0, 1, c->y, c->ws);
}

static void run_fc(const Prob *p)
{
  (void)p;
  const ConvProb *c = cur_conv;
  rlx_conv2d_f32(&c->g, c->xf, c->wf, c->yf, c->wsf);
}

static void report(const char *what, double macs, double *tq, int nq,
                   double *tf, int nf)
{
  qsort(tq, (size_t)nq, sizeof *tq, cmp_d);
  qsort(tf, (size_t)nf, sizeof *tf, cmp_d);
  double mq = tq[nq / 2], mf = tf[nf / 2];
  printf("%s int8: median_us=%.2f min_us=%.2f GMAC/s=%.1f | "
         "f32: median_us=%.2f min_us=%.2f GMAC/s=%.1f | int8/f32 MAC/s: "
         "median %.2fx min %.2fx\n",
         what, mq * 1e6, tq[0] * 1e6, macs / tq[0] * 1e-9, mf * 1e6,
         tf[0] * 1e6, macs / tf[0] * 1e-9, mf / mq, tf[0] / tq[0]);
}

static void bench_conv(double secs)
{
  ConvProb c = {.g = {1, 64, 56, 56, 64, 3, 3, 56, 56, 1, 1, 1, 1, 1, 1, 1}};
  int64_t nx = 64 * 56 * 56, nw = 64 * 64 * 9, ny = nx;
  c.x = malloc((size_t)nx);
  c.w = malloc((size_t)nw);
  c.y = malloc((size_t)ny);
  c.bias = calloc(64, 4);
  c.xf = malloc((size_t)nx * 4);
  c.wf = malloc((size_t)nw * 4);
  c.yf = malloc((size_t)ny * 4);
  for (int64_t i = 0; i < nx; i++)
    c.xf[i] = (float)(c.x[i] = (int8_t)(i * 7 + 3));
  for (int64_t i = 0; i < nw; i++)
    c.wf[i] = (float)(c.w[i] = (int8_t)(i * 13 + 5));
  int64_t bq = rlx_q_conv2d_scratch_bytes(&c.g),
          bf = rlx_conv2d_scratch_bytes(&c.g, RLX_CONV_FWD, 4);
  c.ws = aligned_alloc(64, (size_t)(bq + 63) / 64 * 64);
  c.wsf = aligned_alloc(64, (size_t)(bf + 63) / 64 * 64 + 64);
  cur_conv = &c;
  static double tq[MAXT], tf[MAXT];
  int nq = 0, nf = 0;
  for (int i = 0; i < 3; i++) {
    run_qc(NULL);
    run_fc(NULL);
  }
  for (int r = 0; r < 7; r++) {
    block(NULL, run_qc, secs / 14, tq, &nq);
    block(NULL, run_fc, secs / 14, tf, &nf);
  }
  report("conv 1x64x56x56 * 64x64x3x3 pad 1", 64.0 * 64 * 9 * 56 * 56, tq,
         nq, tf, nf);
  free(c.x);
  free(c.w);
  free(c.y);
  free(c.bias);
  free(c.xf);
  free(c.wf);
  free(c.yf);
  free(c.ws);
  free(c.wsf);
}

static void bench(int64_t m, int64_t n, int64_t k, double secs)
{
  Prob p = {.m = m, .n = n, .k = k};
  p.x = malloc((size_t)(m * k));
  p.w = malloc((size_t)(k * n));
  p.y = malloc((size_t)(m * n));
  p.bias = malloc((size_t)n * 4);
  p.a = malloc((size_t)(m * k) * 4);
  p.b = malloc((size_t)(k * n) * 4);
  p.c = malloc((size_t)(m * n) * 4);
  p.ws = aligned_alloc(64, (size_t)(rlx_q_matmul_scratch_bytes(m, n, k) +
                                    63) / 64 * 64);
  for (int64_t i = 0; i < m * k; i++)
    p.a[i] = (float)(p.x[i] = (int8_t)(i * 7 + 3));
  for (int64_t i = 0; i < k * n; i++)
    p.b[i] = (float)(p.w[i] = (int8_t)(i * 13 + 5));
  for (int64_t i = 0; i < n; i++)
    p.bias[i] = (int32_t)(i * 101 - 7000);
  static double tq[MAXT], tf[MAXT];
  int nq = 0, nf = 0;
  for (int i = 0; i < 20; i++) {
    run_q(&p);
    run_f(&p);
  }
  for (int r = 0; r < 7; r++) {
    block(&p, run_q, secs / 14, tq, &nq);
    block(&p, run_f, secs / 14, tf, &nf);
  }
  char what[64];
  snprintf(what, sizeof what, "%lldx%lldx%lld", (long long)m, (long long)n,
           (long long)k);
  report(what, (double)m * n * k, tq, nq, tf, nf);
  free(p.x);
  free(p.w);
  free(p.y);
  free(p.bias);
  free(p.a);
  free(p.b);
  free(p.c);
  free(p.ws);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define REP12(X, ...)                                                     \
  X(0, __VA_ARGS__) X(1, __VA_ARGS__) X(2, __VA_ARGS__) X(3, __VA_ARGS__)  \
  X(4, __VA_ARGS__) X(5, __VA_ARGS__) X(6, __VA_ARGS__) X(7, __VA_ARGS__)  \
  X(8, __VA_ARGS__) X(9, __VA_ARGS__) X(10, __VA_ARGS__) X(11, __VA_ARGS__)
#define DECL(i, VT, SET1, OP) VT c##i = SET1(i);
#define STEP(i, VT, SET1, OP) c##i = OP(c##i, a, b);
#define SINK(i, ...) __asm__ volatile("" : : "v"(c##i));

/* MACs per second of 12 chains c = OP(c, a, b) of VT vectors. */
#define PEAK(NAME, TGT, VT, SET1, OP, MACS)                               \
  __attribute__((target(TGT), noinline)) static double NAME(long iters)    \
  {                                                                       \
    VT a = SET1(1), b = SET1(3);                                          \
    REP12(DECL, VT, SET1, OP)                                             \
    double t0 = now();                                                    \
    for (long it = 0; it < iters; it++) {                                 \
      REP12(STEP, VT, SET1, OP)                                           \
      __asm__ volatile("" : "+v"(c0), "+v"(c5), "+v"(c11));               \
    }                                                                     \
    double t = now() - t0;                                                \
    REP12(SINK, 0)                                                        \
    return 12.0 * (MACS) * iters / t;                                     \
  }

/* vpmaddwd of the chain (a product of constants would be hoisted) */
#define MADD_ADD(c, a, b) _mm256_add_epi32(a, _mm256_madd_epi16(c, b))
PEAK(peak_vnni512, "avx512f,avx512vnni", __m512i, _mm512_set1_epi32,
     _mm512_dpbusd_epi32, 64)
PEAK(peak_fma512, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, 16)
PEAK(peak_vnni256, "avx2,avxvnni", __m256i, _mm256_set1_epi32,
     _mm256_dpbusd_avx_epi32, 32)
PEAK(peak_madd256, "avx2", __m256i, _mm256_set1_epi32, MADD_ADD, 16)
PEAK(peak_fma256, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, 8)

/* The peaks of the int8 kernel in use and of f32 FMAs at its width. */
static void peaks(void)
{
  static const struct {
    const char *q, *what, *fwhat;
    double (*int8)(long), (*f32)(long);
  } tab[] = {
      {"avx512vnni", "vpdpbusd zmm", "zmm", peak_vnni512, peak_fma512},
      {"avxvnni", "vpdpbusd ymm", "ymm", peak_vnni256, peak_fma256},
      {"avx2", "vpmaddwd+vpaddd ymm", "ymm", peak_madd256, peak_fma256}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
    if (strcmp(rlx_q_isa(), tab[i].q) != 0)
      continue;
    double v = 0, f = 0; /* short runs, the best: a loaded machine */
    for (int r = 0; r < 300; r++) {
      v = fmax(v, tab[i].int8(100000));
      f = fmax(f, tab[i].f32(100000));
    }
    printf("peak (1 core, registers only): %s %.1f GMAC/s, f32 FMA %s "
           "%.1f GMAC/s\n", tab[i].what, v * 1e-9, tab[i].fwhat, f * 1e-9);
  }
}
#else
static void peaks(void) {}
#endif

/* --isa=NAME: an int8 kernel, with the f32 GEMM at the level it needs
   (rlxrt.h, rlx_q_select_isa), or a GEMM ISA. */
static int select_isa(const char *isa)
{
  static const char *const level[][2] = {
      {"avx512vnni", "avx512"}, {"avxvnni", "avx2"}, {"avx2", "avx2"},
      {"neondot", "neon"},      {"neon", "neon"},    {"scalar", "scalar"}};
  for (size_t i = 0; i < sizeof level / sizeof level[0]; i++)
    if (strcmp(isa, level[i][0]) == 0)
      return rlx_gemm_select_isa(level[i][1]) == RLX_OK &&
             rlx_q_select_isa(isa) == RLX_OK;
  return rlx_gemm_select_isa(isa) == RLX_OK;
}

int main(int argc, char **argv)
{
  int threads = 1;
  double secs = 1.4;
  const char *isa = NULL;
  int conv = 0;
  int64_t sizes[16][3], ns = 0;
  for (int i = 1; i < argc; i++) {
    long long m, n, k;
    if (strncmp(argv[i], "--threads=", 10) == 0)
      threads = atoi(argv[i] + 10);
    else if (strncmp(argv[i], "--secs=", 7) == 0)
      secs = atof(argv[i] + 7);
    else if (strcmp(argv[i], "--conv") == 0)
      conv = 1;
    else if (strncmp(argv[i], "--isa=", 6) == 0)
      isa = argv[i] + 6;
    else if (sscanf(argv[i], "%lldx%lldx%lld", &m, &n, &k) == 3 && ns < 16) {
      sizes[ns][0] = m;
      sizes[ns][1] = n;
      sizes[ns++][2] = k;
    } else {
      fprintf(stderr, "usage: bench_qgemm [--threads=N] [--isa=NAME] "
                      "[--secs=S] [--conv] [MxNxK ...]\n");
      return 2;
    }
  }
  if (isa && !select_isa(isa)) {
    fprintf(stderr, "bench_qgemm: isa %s not available\n", isa);
    return 2;
  }
  if (ns == 0) {
    static const int64_t def[3][3] = {{512, 512, 512}, {32, 64, 64},
                                      {32, 10, 64}};
    memcpy(sizes, def, sizeof def);
    ns = 3;
  }
  rlx_set_num_threads(threads);
  printf("threads=%d gemm=%s q=%s\n", threads, rlx_gemm_isa(), rlx_q_isa());
  peaks();
  for (int64_t i = 0; i < ns; i++)
    bench(sizes[i][0], sizes[i][1], sizes[i][2], secs);
  if (conv)
    bench_conv(secs);
  return 0;
}
