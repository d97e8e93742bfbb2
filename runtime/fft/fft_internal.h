/* fft_internal.h -- the plan of one rlx_fft_c64 call (fft.c) and the
 * Stockham stage kernels: portable C (fft_tmpl.h, in fft_tables.c) and
 * per ISA (fft_kern.h over the vector layer, in fft_avx512.c,
 * fft_avx2.c, fft_neon.c).
 *
 * Data inside a transform is split: one float array of real parts, one
 * of imaginary parts (vectorizes as plain float loops).  A stage of
 * radix r over stride s (the product of the radices before it) and
 * m = len / (s r) reads x[q + s (p + j m)] for j < r and writes
 * y[q + s (r p + k)] = w^(p k) * sum_j x_j omega_r^(j k), w = exp(sign
 * 2 pi i / (r m)), for p < m, q < s: the decimation-in-frequency
 * Stockham autosort, natural order in and out, ping-ponging between two
 * buffers.
 */
#ifndef RLX_FFT_INTERNAL_H
#define RLX_FFT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define FFT_MAX_STAGES 64
#define FFT_MAX_RADIX 64 /* larger prime factors go through Bluestein */

typedef struct {
  int64_t r, m, s;
  float sg;               /* the transform's sign: -1 or +1 */
  const float *twr, *twi; /* w^(p k) at (k - 1) m + p, k = 1 .. r-1 */
  const float *wr, *wi;   /* omega_r^t, t < r (generic radix only) */
} FftStage;

typedef struct {
  int64_t len; /* transform length (n, or Bluestein's power of two) */
  int nst;
  FftStage st[FFT_MAX_STAGES];
} FftPlan;

/* What lives where in an rlx_fft_c64 scratch, in bytes, and the plan.
 * The tables (twiddles, omegas, Bluestein's chirp and kernel) are a
 * block of tab_bytes, a function of n and the direction only: at
 * scratch offset tab_at when computed per call, or the compiler's
 * constant (rlx_fft_tables); their offsets are from the block's start. */
typedef struct {
  int64_t n, len, nslots;
  int bluestein;
  FftPlan plan;
  int64_t tw_off, ntw;      /* stage twiddles: ntw re then ntw im */
  int64_t om_off, nom;      /* generic radices' omega tables */
  int64_t chirp_off, h_off; /* Bluestein: e (n + n), H (len + len) */
  int64_t tab_at, tab_bytes; /* the tables' block in the scratch */
  int64_t w_off;            /* all len roots: len re then len im (setup) */
  int64_t root_off;         /* double root tables (setup only) */
  int64_t slot_off, slot_bytes, total;
} FftLayout;

#define FFT_SLOTS 16
#define FFT_PAD 16 /* floats (one cache line) between a slot's arrays */

void rlx_fft_layout(int64_t rows, int64_t n, FftLayout *L);
int64_t rlx_fft_isqrt_up(int64_t v);

typedef void (*fft_stage_fn)(const FftStage *st, const float *xr,
                             const float *xi, float *yr, float *yi);

/* fft_tables.c: point L's stages at the tables block tab (sign: the
 * transform's); compute the block's values (setup memory from scratch,
 * stages by fn); run a plan over two buffer pairs (returns the pair
 * holding the result, 0: a, 1: b). */
void rlx_fft_plan_tables(FftLayout *L, double sign, const char *tab);
void rlx_fft_fill_tables(FftLayout *L, double sign, char *tab,
                         char *scratch, fft_stage_fn fn);
int rlx_fft_run(const FftPlan *p, fft_stage_fn fn, float *ar, float *ai,
                float *br, float *bi);
void rlx_fft_slot_arrays(float *buf, int64_t len, float **ar, float **ai,
                         float **br, float **bi);

void rlx_fft_stage_scalar(const FftStage *st, const float *xr,
                          const float *xi, float *yr, float *yi);

/* A row of n c64 into split arrays, and back times scale (fft.c). */
typedef void (*fft_split_fn)(const float *x, int64_t n, float *re,
                             float *im);
typedef void (*fft_join_fn)(const float *re, const float *im, int64_t n,
                            float scale, float *y);
void rlx_fft_split_scalar(const float *x, int64_t n, float *re, float *im);
void rlx_fft_join_scalar(const float *re, const float *im, int64_t n,
                         float scale, float *y);

/* One ISA's kernels, the same bits as the portable ones (fft_<isa>.c;
 * all NULL where the build lacks the ISA: fft.c then uses the portable
 * ones). */
typedef struct {
  fft_stage_fn stage;
  fft_split_fn split;
  fft_join_fn join;
} FftIsa;
extern const FftIsa rlx_fft_avx512, rlx_fft_avx2, rlx_fft_neon;

#endif
