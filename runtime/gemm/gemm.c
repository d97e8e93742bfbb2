/* gemm.c -- rlx_gemm_f32 / rlx_gemm_f64: CPU dispatch, the thread
 * split, and the two instantiations of the driver in gemm_tmpl.h.
 *
 * Dispatch: the first call picks, once (pthread_once), the best kernel
 * table the CPU supports: AVX-512F, else AVX2+FMA (x86-64), Advanced
 * SIMD (AArch64), else portable C; the environment variable RLX_ISA
 * hides the wider ISAs (env_isa_cap).  Every other kernel family follows
 * this choice (rlx_isa_level, rlx_gemm_isa), so RLX_ISA=avx2, =neon or
 * =scalar runs a whole process on those paths.  rlx_gemm_select_isa (a
 * test hook) may override it later.  Building with -DRLX_NO_SIMD leaves only
 * the portable kernels.
 * Thread split (choose_grid): the batch first; when there are fewer
 * batch elements than threads, each element's C is cut into a grid of
 * tm x tn regions aligned to the register tile.  K is never split, so
 * results are bit-identical for any thread count (see gemm_tmpl.h).
 * An f32 table may name an alternative MR (pick_cfg_f32), used for calls
 * whose M it pads less (M = 128: 12-row tiles rather than 14).
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/gemm/gemm_internal.h"
#include "runtime/rlxrt.h"
#include "runtime/simd/isa.h"

#if RLX_HAVE_NEON && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

/* Below this many flops per task, splitting is not worth a wake-up. */
#define MIN_TASK_FLOPS (2.0 * 48 * 48 * 48)

typedef struct {
  int64_t tm, tn, mt, nt, grain;
} Grid;

static _Atomic(const RlxGemmCfgF32 *) cfg_f32;
static _Atomic(const RlxGemmCfgF64 *) cfg_f64;
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;

/* The ISAs from widest to narrowest, with their level (simd/isa.h). */
static const struct {
  const char *name;
  int level;
  const RlxGemmCfgF32 *f32;
  const RlxGemmCfgF64 *f64;
} isa_order[] = {
  {"avx512", RLX_ISA_AVX512, &rlx_gemm_avx512_f32, &rlx_gemm_avx512_f64},
  {"avx2", RLX_ISA_AVX2, &rlx_gemm_avx2_f32, &rlx_gemm_avx2_f64},
  {"neon", RLX_ISA_NEON, &rlx_gemm_neon_f32, &rlx_gemm_neon_f64},
  {"scalar", RLX_ISA_SCALAR, &rlx_gemm_scalar_f32, &rlx_gemm_scalar_f64},
};
enum { N_ISA = sizeof isa_order / sizeof isa_order[0] };

/* Whether the CPU runs the ISA's kernels (which must be compiled in:
   kern != NULL).  Advanced SIMD is architectural on AArch64. */
static int cpu_has(int level)
{
#if RLX_HAVE_X86_SIMD
  __builtin_cpu_init();
  if (level == RLX_ISA_AVX512)
    return __builtin_cpu_supports("avx512f");
  if (level == RLX_ISA_AVX2)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return level == RLX_ISA_SCALAR || (RLX_HAVE_NEON && level == RLX_ISA_NEON);
}

int rlx_cpu_has_neon_dot(void)
{
#if RLX_HAVE_NEON && defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
  return 0;
#endif
}

/* RLX_ISA=avx512|avx2|neon|scalar: the process runs as if the CPU had no
   ISA wider than the one named (the default picks it or a narrower one,
   and rlx_gemm_select_isa refuses wider ones); an ISA of the other
   architecture leaves the portable kernels.  Returns the index in
   isa_order of the ISA named, or -1 (no cap); any other value is
   reported once on stderr and ignored. */
static int env_isa_cap(void)
{
  static int warned;
  const char *env = getenv("RLX_ISA");
  if (!env || !*env)
    return -1;
  for (int i = 0; i < N_ISA; i++)
    if (strcmp(env, isa_order[i].name) == 0)
      return i;
  if (!warned++)
    fprintf(stderr, "rlxrt: RLX_ISA=%s is not avx512, avx2, neon or "
            "scalar; ignored\n", env);
  return -1;
}

/* Whether the cap allows isa_order[i]: the ISA named, the narrower ones
   of its architecture, and the portable kernels. */
static int cap_allows(int cap, int i)
{
  int neon = isa_order[i].level == RLX_ISA_NEON;
  return cap < 0 || isa_order[i].level == RLX_ISA_SCALAR ||
         (i >= cap && neon == (isa_order[cap].level == RLX_ISA_NEON));
}

static _Atomic int isa_level = RLX_ISA_SCALAR;

int rlx_gemm_select_isa(const char *isa)
{
  int cap = env_isa_cap();
  for (int i = 0; i < N_ISA; i++) {
    if (!cap_allows(cap, i) ||
        (isa && strcmp(isa, isa_order[i].name) != 0) ||
        !isa_order[i].f32->kern || !cpu_has(isa_order[i].level))
      continue;
    atomic_store(&isa_level, isa_order[i].level);
    atomic_store(&cfg_f32, isa_order[i].f32);
    atomic_store(&cfg_f64, isa_order[i].f64);
    return RLX_OK;
  }
  return RLX_ERR_INVALID;
}

static void select_best(void)
{
  if (!atomic_load(&cfg_f32))
    rlx_gemm_select_isa(NULL);
}

const char *rlx_gemm_isa(void)
{
  pthread_once(&isa_once, select_best);
  return atomic_load(&cfg_f32)->name;
}

int rlx_isa_level(void)
{
  pthread_once(&isa_once, select_best);
  return atomic_load(&isa_level);
}

static int64_t ceil_div(int64_t a, int64_t b)
{
  return (a + b - 1) / b;
}

/* Best tm x tn = g split of an m x n C (smallest largest region, ties
   to more column splits). */
static void split_regions(Grid *gr, int64_t g, int64_t m, int64_t n,
                          int mr, int nr)
{
  int64_t mb = ceil_div(m, mr), nb = ceil_div(n, nr), best = -1;
  for (int64_t tn = 1; tn <= g; tn++) {
    int64_t tm = g / tn;
    if (g % tn || tn > nb || tm > mb)
      continue;
    int64_t mt = ceil_div(mb, tm) * mr, nt = ceil_div(nb, tn) * nr;
    if (best < 0 || mt * nt <= best) {
      best = mt * nt;
      *gr = (Grid){tm, tn, mt, nt, 1};
    }
  }
}

static Grid choose_grid(int64_t batch, int64_t m, int64_t n, int64_t k,
                        int mr, int nr)
{
  double flops = 2.0 * (double)m * (double)n * (double)k;
  int64_t threads = rlx_get_num_threads();
  Grid gr = {1, 1, m, n, 1};
  if (flops < MIN_TASK_FLOPS)
    gr.grain = (int64_t)(MIN_TASK_FLOPS / (flops + 1.0)) + 1;
  if (batch >= threads || flops < 2 * MIN_TASK_FLOPS)
    return gr;
  int64_t g = ceil_div(threads, batch);
  if (flops / (double)g < MIN_TASK_FLOPS)
    g = (int64_t)(flops / MIN_TASK_FLOPS);
  if (g > 1)
    split_regions(&gr, g, m, n, mr, nr);
  return gr;
}

/* Rows of work for M rows in MR-row tiles: full tiles, plus the edge
   kernel's rounding of the last one (4, 8 or MR rows). */
static int64_t padded_rows(int64_t m, int mr)
{
  int64_t r = m % mr, e = r == 0 ? 0 : r <= 4 ? 4 : r <= 8 ? 8 : mr;
  return m - r + (e < mr ? e : mr);
}

/* The table for an M-row call: cfg, or its alternative MR where that
   pads fewer rows (ties keep cfg).  Depends on M only; all kernels
   compute each element alike, so the choice never changes bits. */
static const RlxGemmCfgF32 *pick_cfg_f32(const RlxGemmCfgF32 *cfg,
                                         int64_t m)
{
  const RlxGemmCfgF32 *alt = cfg->alt;
  if (alt && padded_rows(m, alt->mr) < padded_rows(m, cfg->mr))
    return alt;
  return cfg;
}

/* A batch that shares B (b_bs == 0) and whose A and C rows run on from
   one element to the next (a_bs == m * a_rs, c_bs == m * c_rs) is one
   GEMM of batch * m rows: the same elements, each with the same
   operations (KC depends on k only), but fewer edge tiles and B packed
   once instead of once per element (the compiler's x @ W over [B, T,
   E] activations: batch 8 of 64 rows). */
static void fold_batch(int64_t *batch, int64_t *m, int64_t a_bs,
                       int64_t a_rs, int64_t b_bs, int64_t c_bs,
                       int64_t c_rs)
{
  if (*batch > 1 && b_bs == 0 && a_bs == *m * a_rs && c_bs == *m * c_rs) {
    *m *= *batch;
    *batch = 1;
  }
}

#define T float
#define SFX f32
#define CFG RlxGemmCfgF32
#define FMA_T fmaf
#include "runtime/gemm/gemm_tmpl.h"
#undef T
#undef SFX
#undef CFG
#undef FMA_T

#define T double
#define SFX f64
#define CFG RlxGemmCfgF64
#define FMA_T fma
#include "runtime/gemm/gemm_tmpl.h"
#undef T
#undef SFX
#undef CFG
#undef FMA_T

void rlx_gemm_f32(int64_t batch, int64_t m, int64_t n, int64_t k,
                  const float *a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                  const float *b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
                  float *c, int64_t c_bs, int64_t c_rs, int accumulate)
{
  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    if (!accumulate)
      zero_c_f32(batch, m, n, c, c_bs, c_rs);
    return;
  }
  fold_batch(&batch, &m, a_bs, a_rs, b_bs, c_bs, c_rs);
  pthread_once(&isa_once, select_best);
  Job_f32 jb = {pick_cfg_f32(atomic_load(&cfg_f32), m), m, n, k,
                a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs,
                c, c_bs, c_rs, accumulate, 0, 0, 0, 0};
  run_f32(&jb, batch);
}

void rlx_gemm_f64(int64_t batch, int64_t m, int64_t n, int64_t k,
                  const double *a, int64_t a_bs, int64_t a_rs,
                  int64_t a_cs, const double *b, int64_t b_bs,
                  int64_t b_rs, int64_t b_cs, double *c, int64_t c_bs,
                  int64_t c_rs, int accumulate)
{
  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    if (!accumulate)
      zero_c_f64(batch, m, n, c, c_bs, c_rs);
    return;
  }
  fold_batch(&batch, &m, a_bs, a_rs, b_bs, c_bs, c_rs);
  pthread_once(&isa_once, select_best);
  Job_f64 jb = {atomic_load(&cfg_f64), m, n, k, a, a_bs, a_rs, a_cs,
                b, b_bs, b_rs, b_cs, c, c_bs, c_rs, accumulate,
                0, 0, 0, 0};
  run_f64(&jb, batch);
}
