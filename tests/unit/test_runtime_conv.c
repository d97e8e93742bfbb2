/* test_runtime_conv.c -- CUnit tests of the convolution kernels
 * (rlx_conv2d_*, runtime/conv*.c).
 *
 * Every geometry of the sweep runs the three ops in f32 and f64 against
 * direct loops accumulated in double (the definitions of language.md
 * conv2d and ops-detail.md "conv2d backward"), with the float32 bar
 *   |got - ref| <= 1e-4 |ref| + 1e-5 max(1, max |ref|)
 * (f64: 1e-12 and 1e-13).  The sweep covers strides 1-3, padding 0 to
 * beyond the kernel's reach (output rows that see only padding),
 * dilation 1-3, groups 1 / 2 / depthwise (and channel multiplier 2),
 * non-square kernels and kernels larger than the input, 1x1, C_in = 1,
 * batch 1 and 5, K above one K block, several tiles per image, and each
 * backward-weight path (few channels: dot kernels; >= 8: GEMM tiles,
 * with and without row blocks, in place for 1x1).
 * Outputs start as NaN (every element must be written) and the scratch
 * as NaN bytes (a read of scratch that was not written first poisons
 * the result).  Results must be bit-identical for 1, 2, 3 and 7
 * threads and between every kernel ISA the CPU has (portable, AVX2,
 * AVX-512).
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rlxrt.h"
#include "tests/unit/isa.h"

typedef struct {
  int64_t n, c, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw, groups;
} Geo;

static const Geo SWEEP[] = {
  /* n  c   h   w  co kh kw sh sw ph pw dh dw  g */
  {2, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},     /* 3x3 pad 1 */
  {1, 4, 9, 8, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1},     /* stride 2 */
  {1, 2, 10, 11, 3, 2, 4, 3, 2, 4, 5, 1, 1, 1},   /* pad > reach */
  {2, 3, 9, 10, 4, 3, 3, 1, 1, 2, 2, 2, 2, 1},    /* dilation 2 */
  {1, 2, 11, 9, 3, 3, 2, 2, 3, 1, 0, 2, 2, 1},    /* dilation + stride */
  {1, 3, 13, 12, 2, 3, 2, 2, 2, 3, 1, 3, 2, 1},   /* dilation 3, s 2 */
  {2, 4, 6, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2},     /* groups 2 */
  {5, 6, 8, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6},     /* depthwise */
  {1, 5, 9, 6, 10, 3, 3, 2, 1, 1, 1, 1, 1, 5},    /* multiplier 2 */
  {5, 16, 5, 6, 12, 1, 1, 1, 1, 0, 0, 1, 1, 1},   /* 1x1 */
  {2, 9, 7, 7, 10, 1, 1, 2, 2, 0, 0, 1, 1, 1},    /* 1x1 stride 2 */
  {5, 1, 12, 13, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1},  /* C_in = 1 */
  {2, 24, 6, 5, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1},   /* wide channels */
  {1, 32, 5, 5, 20, 3, 3, 1, 1, 1, 1, 1, 1, 2},   /* groups, cg 16 */
  {1, 5, 6, 6, 28, 3, 3, 1, 1, 1, 1, 1, 1, 1},    /* 14-row tiles */
  {1, 2, 3, 3, 3, 3, 3, 1, 1, 4, 4, 1, 1, 1},     /* padding-only rows */
  {1, 3, 4, 5, 2, 5, 6, 1, 1, 2, 3, 1, 1, 1},     /* kernel > input */
  {2, 3, 10, 10, 4, 2, 2, 3, 3, 0, 0, 1, 1, 1},   /* stride > kernel */
  {1, 48, 6, 6, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1},    /* K = 432 > 384 */
  {1, 9, 5, 6, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1},    /* bwd-input K 432 */
  {2, 8, 40, 41, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1},   /* many tiles */
  {3, 64, 4, 3, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1},   /* 1x1, 64 ch */
  {1, 3, 5, 4, 4, 1, 3, 1, 2, 0, 3, 1, 3, 1},     /* 1x3, pad 3 */
  {5, 7, 3, 3, 5, 2, 2, 1, 1, 0, 0, 1, 1, 1},     /* odd, tiny */
  {1, 128, 3, 5, 256, 1, 1, 1, 1, 0, 0, 1, 1, 1}, /* 1x1 row blocks */
  {1, 24, 9, 9, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1},   /* s 2, row blocks */
  {1, 16, 6, 6, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1},  /* byrow, row blocks */
};
enum { NGEO = sizeof SWEEP / sizeof SWEEP[0] };

static rlx_conv_geom geom(Geo s)
{
  rlx_conv_geom g = {s.n, s.c, s.h, s.w, s.co, s.kh, s.kw, 0, 0,
                     s.sh, s.sw, s.ph, s.pw, s.dh, s.dw, s.groups};
  g.oh = (s.h + 2 * s.ph - s.dh * (s.kh - 1) - 1) / s.sh + 1;
  g.ow = (s.w + 2 * s.pw - s.dw * (s.kw - 1) - 1) / s.sw + 1;
  return g;
}

static int64_t size_of(const rlx_conv_geom *g, int which)
{
  if (which == 0)
    return g->n * g->c * g->h * g->w;
  if (which == 1)
    return g->co * (g->c / g->groups) * g->kh * g->kw;
  return g->n * g->co * g->oh * g->ow;
}

static double rnd(void)
{
  return (double)rand() / RAND_MAX * 2.0 - 1.0;
}

/* The three ops by direct loops in double: y, dx, dw. */
static void reference(const rlx_conv_geom *g, const double *x,
                      const double *w, const double *dy, double *y,
                      double *dx, double *dw)
{
  int64_t cg = g->c / g->groups, og = g->co / g->groups;
  memset(y, 0, (size_t)size_of(g, 2) * sizeof *y);
  memset(dx, 0, (size_t)size_of(g, 0) * sizeof *dx);
  memset(dw, 0, (size_t)size_of(g, 1) * sizeof *dw);
  for (int64_t n = 0; n < g->n; n++)
    for (int64_t o = 0; o < g->co; o++)
      for (int64_t ci = 0; ci < cg; ci++)
        for (int64_t r = 0; r < g->kh; r++)
          for (int64_t q = 0; q < g->kw; q++)
            for (int64_t i = 0; i < g->oh; i++)
              for (int64_t j = 0; j < g->ow; j++) {
                int64_t hi = i * g->sh - g->ph + r * g->dh;
                int64_t wi = j * g->sw - g->pw + q * g->dw;
                if (hi < 0 || hi >= g->h || wi < 0 || wi >= g->w)
                  continue;
                int64_t c = o / og * cg + ci;
                int64_t xi = ((n * g->c + c) * g->h + hi) * g->w + wi;
                int64_t wk = ((o * cg + ci) * g->kh + r) * g->kw + q;
                int64_t yi = ((n * g->co + o) * g->oh + i) * g->ow + j;
                y[yi] += x[xi] * w[wk];
                dx[xi] += dy[yi] * w[wk];
                dw[wk] += dy[yi] * x[xi];
              }
}

static int close_all(const double *ref, const double *got, int64_t n,
                     double rel, double abs_)
{
  double mx = 1;
  for (int64_t i = 0; i < n; i++)
    mx = fabs(ref[i]) > mx ? fabs(ref[i]) : mx;
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(got[i] - ref[i]) <= rel * fabs(ref[i]) + abs_ * mx))
      return 0;
  return 1;
}

/* One op in dtype T, output converted to double in out; every thread
   count in THREADS must give the bits of the first; so must the other
   kernel ISA when the CPU has AVX-512. */
#define DEFINE_RUN(SFX, T)                                                \
  static int run_##SFX(const rlx_conv_geom *g, int op, const double *a,   \
                       const double *b, double *out)                      \
  {                                                                       \
    static const int threads[] = {1, 2, 3, 7};                            \
    int64_t na = size_of(g, op == 2 ? 0 : op == 1 ? 2 : 0);               \
    int64_t nb = size_of(g, op == 0 ? 1 : op == 1 ? 1 : 2);               \
    int64_t no = size_of(g, op == 0 ? 2 : op == 1 ? 0 : 1);               \
    int64_t ns = rlx_conv2d_scratch_bytes(g, op, sizeof(T));              \
    T *ta = malloc((size_t)na * sizeof(T));                               \
    T *tb = malloc((size_t)nb * sizeof(T));                               \
    T *first = malloc((size_t)no * sizeof(T));                            \
    T *o = malloc((size_t)no * sizeof(T));                                \
    void *scratch = rlx_alloc((size_t)ns);                                \
    for (int64_t i = 0; i < na; i++)                                      \
      ta[i] = (T)a[i];                                                    \
    for (int64_t i = 0; i < nb; i++)                                      \
      tb[i] = (T)b[i];                                                    \
    int same = 1;                                                         \
    for (int isa = 0; isa < N_TEST_ISAS; isa++) {                         \
      if (!test_isa_use(test_isas[isa])) /* scalar first: the reference */\
        continue;                                                         \
      for (int t = 0; t < 4; t++) {                                       \
        rlx_set_num_threads(threads[t]);                                  \
        memset(o, 0xff, (size_t)no * sizeof(T));                          \
        memset(scratch, 0xff, (size_t)ns);                                \
        if (op == 0)                                                      \
          rlx_conv2d_##SFX(g, ta, tb, o, scratch);                        \
        else if (op == 1)                                                 \
          rlx_conv2d_bwd_input_##SFX(g, ta, tb, o, scratch);              \
        else                                                              \
          rlx_conv2d_bwd_weight_##SFX(g, ta, tb, o, scratch);             \
        if (isa == 0 && t == 0)                                           \
          memcpy(first, o, (size_t)no * sizeof(T));                       \
        else                                                              \
          same &= memcmp(first, o, (size_t)no * sizeof(T)) == 0;          \
      }                                                                   \
    }                                                                     \
    rlx_gemm_select_isa(NULL);                                            \
    rlx_set_num_threads(0);                                               \
    for (int64_t i = 0; i < no; i++)                                      \
      out[i] = first[i];                                                  \
    free(ta);                                                             \
    free(tb);                                                             \
    free(first);                                                          \
    free(o);                                                              \
    rlx_free(scratch);                                                    \
    return same;                                                          \
  }
DEFINE_RUN(f32, float)
DEFINE_RUN(f64, double)

static const char *const OPS[] = {"fwd", "bwd_input", "bwd_weight"};

/* All three ops of one geometry, both dtypes; 1 if all pass. */
static int check_geo(int gi)
{
  rlx_conv_geom g = geom(SWEEP[gi]);
  int64_t nx = size_of(&g, 0), nw = size_of(&g, 1), ny = size_of(&g, 2);
  double *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w);
  double *dy = malloc(ny * sizeof *dy), *ref[3], *got;
  ref[0] = malloc(ny * sizeof(double));
  ref[1] = malloc(nx * sizeof(double));
  ref[2] = malloc(nw * sizeof(double));
  got = malloc((nx + nw + ny) * sizeof *got);
  /* Values representable in f32, so both dtypes see equal inputs. */
  for (int64_t i = 0; i < nx; i++)
    x[i] = (float)rnd();
  for (int64_t i = 0; i < nw; i++)
    w[i] = (float)rnd();
  for (int64_t i = 0; i < ny; i++)
    dy[i] = (float)rnd();
  reference(&g, x, w, dy, ref[0], ref[1], ref[2]);
  const double *ins[3][2] = {{x, w}, {dy, w}, {x, dy}};
  int64_t nout[3] = {ny, nx, nw};
  int ok = 1;
  for (int op = 0; op < 3; op++)
    for (int f64 = 0; f64 < 2; f64++) {
      int same = f64 ? run_f64(&g, op, ins[op][0], ins[op][1], got)
                     : run_f32(&g, op, ins[op][0], ins[op][1], got);
      int near = f64 ? close_all(ref[op], got, nout[op], 1e-12, 1e-13)
                     : close_all(ref[op], got, nout[op], 1e-4, 1e-5);
      if (!same || !near) {
        fprintf(stderr, "\n  geometry %d %s %s: %s\n", gi, OPS[op],
                f64 ? "f64" : "f32",
                !near ? "wrong values" : "bits depend on threads / ISA");
        ok = 0;
      }
    }
  free(x);
  free(w);
  free(dy);
  for (int i = 0; i < 3; i++)
    free(ref[i]);
  free(got);
  return ok;
}

static void test_sweep(void)
{
  srand(7);
  for (int gi = 0; gi < NGEO; gi++)
    CU_ASSERT(check_geo(gi));
}

/* The scratch formula is deterministic, 0-safe and covers batch-size
   independent tiles: doubling the batch must not double the scratch. */
static void test_scratch_bounded(void)
{
  Geo s = {32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  for (int op = 0; op < 3; op++) {
    rlx_conv_geom g = geom(s), g2 = g;
    g2.n = 64;
    int64_t a = rlx_conv2d_scratch_bytes(&g, op, 4);
    int64_t b = rlx_conv2d_scratch_bytes(&g2, op, 4);
    CU_ASSERT(a > 0 && a == b);
    CU_ASSERT(a <= (8 << 20));
  }
}

int main(void)
{
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite("runtime_conv", NULL, NULL);
  CU_add_test(s, "sweep: 3 ops x f32/f64 x threads x ISA", test_sweep);
  CU_add_test(s, "scratch bounded", test_scratch_bounded);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  return fails ? 1 : 0;
}
