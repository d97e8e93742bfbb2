/* bench_fft.c -- rlx_fft_c64 next to FFTW (single precision, fftwf,
 * FFTW_ESTIMATE plans, one thread), c64 forward transforms of one row.
 *
 * usage: bench_fft [--secs=S] [--rounds=R] [--per-call] [--isa=NAME]
 *                  [N ...]
 * Default lengths: 256 1024 4096 65536 1000 4099 and the primes 257
 * 1031 16411 65537 (Bluestein: O(n log n) growth).  For each length,
 * R rounds (default 5) alternate the two libraries, each timing calls
 * for about S/R seconds (default S = 1); per library the median and
 * minimum over samples (a sample: max(1, 16384 / N) back-to-back calls,
 * its time per call).  rlx runs as compiled code does:
 * rlx_fft_c64_tab with tables made once outside the timing (the
 * compiler's constant) up to RLX_FFT_TABLES_MAX bytes, else (and with
 * --per-call always) computing them into scratch per call; FFTW's plan
 * is made once, outside the timing.  Both are checked to agree (max |rlx - fftw| / max |fftw|).
 * --isa=NAME runs rlx's kernels of that ISA (rlx_gemm_select_isa: avx512,
 * avx2, neon, scalar; RLX_ISA works too); a first line "# rlxrt
 * kernels: ISA" names the one used.
 * Output: "fft N=.. rlx_median_us=.. rlx_min_us=.. fftw_median_us=..
 * fftw_min_us=.. ratio_median=.. ratio_min=.. relerr=..".
 * Built only when FFTW (fftw3f + fftw3.h, Debian libfftw3-dev) is
 * found (bench/CMakeLists.txt).
 */
#include <fftw3.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h" /* now_s, cmp_double */
#include "runtime/rlxrt.h"

#define MAX_T 200000

typedef struct {
  int64_t n;
  float *x, *y;
  void *scratch, *tables;
  fftwf_plan plan;
} Job;

static void call(Job *j, int lib)
{
  if (lib == 0)
    rlx_fft_c64_tab(1, j->n, 0, RLX_FFT_NORM_BACKWARD, j->x, j->y,
                    j->scratch, j->tables);
  else
    fftwf_execute(j->plan);
}

/* Time calls of lib for `secs`, appending to t[*nt] the time per call
 * of samples of `reps` back-to-back calls (short transforms: many, so
 * the clock's own cost does not count). */
static void run(Job *j, int lib, double secs, double *t, int *nt)
{
  int reps = j->n >= 16384 ? 1 : (int)(16384 / j->n);
  call(j, lib);
  double end = now_s() + secs;
  while (*nt < MAX_T) {
    double a = now_s();
    for (int r = 0; r < reps; r++)
      call(j, lib);
    double b = now_s();
    t[(*nt)++] = (b - a) / reps;
    if (b > end)
      break;
  }
}

int main(int argc, char **argv)
{
  (void)time_fn; /* bench_time.h's one-entry loop: rounds alternate here */
  double secs = 1.0;
  int rounds = 5, per_call = 0;
  int64_t lens[64];
  int nl = 0;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--secs=", 7))
      secs = atof(argv[i] + 7);
    else if (!strncmp(argv[i], "--rounds=", 9))
      rounds = atoi(argv[i] + 9);
    else if (!strcmp(argv[i], "--per-call"))
      per_call = 1;
    else if (!strncmp(argv[i], "--isa=", 6)) {
      if (rlx_gemm_select_isa(argv[i] + 6) != RLX_OK)
        fprintf(stderr, "isa %s not available\n", argv[i] + 6);
    }
    else if (nl < 64)
      lens[nl++] = atoll(argv[i]);
  }
  if (!nl) {
    static const int64_t def[] = {256,  1024, 4096, 65536, 1000,
                                  4099, 257,  1031, 16411, 65537};
    nl = (int)(sizeof def / sizeof def[0]);
    memcpy(lens, def, sizeof def);
  }
  rlx_set_num_threads(1);
  printf("# rlxrt kernels: %s\n", rlx_gemm_isa());
  static double t[2][MAX_T];
  for (int li = 0; li < nl; li++) {
    Job j = {lens[li], NULL, NULL, NULL, NULL, NULL};
    size_t bytes = sizeof(float) * 2 * (size_t)j.n;
    j.x = fftwf_malloc(bytes);
    j.y = fftwf_malloc(bytes);
    float *ref = malloc(bytes);
    j.scratch = rlx_alloc((size_t)rlx_fft_scratch_bytes(1, j.n));
    int64_t tab_bytes = rlx_fft_tables_bytes(j.n);
    if (!per_call && tab_bytes <= RLX_FFT_TABLES_MAX) {
      j.tables = rlx_alloc((size_t)tab_bytes);
      rlx_fft_tables(j.n, 0, j.tables, j.scratch);
    }
    j.plan = fftwf_plan_dft_1d((int)j.n, (fftwf_complex *)j.x,
                               (fftwf_complex *)j.y, FFTW_FORWARD,
                               FFTW_ESTIMATE);
    srand(1);
    for (int64_t i = 0; i < 2 * j.n; i++)
      j.x[i] = (float)rand() / RAND_MAX - 0.5f;
    call(&j, 1);
    memcpy(ref, j.y, bytes);
    call(&j, 0);
    double err = 0, mx = 0;
    for (int64_t i = 0; i < 2 * j.n; i++) {
      err = fmax(err, fabs(j.y[i] - ref[i]));
      mx = fmax(mx, fabs(ref[i]));
    }
    int nt[2] = {0, 0};
    for (int r = 0; r < rounds; r++)
      for (int lib = 0; lib < 2; lib++)
        run(&j, lib, secs / rounds / 2, t[lib], &nt[lib]);
    double med[2], mn[2];
    for (int lib = 0; lib < 2; lib++) {
      qsort(t[lib], (size_t)nt[lib], sizeof(double), cmp_double);
      med[lib] = t[lib][nt[lib] / 2] * 1e6;
      mn[lib] = t[lib][0] * 1e6;
    }
    printf("fft N=%lld rlx_median_us=%.2f rlx_min_us=%.2f "
           "fftw_median_us=%.2f fftw_min_us=%.2f ratio_median=%.2f "
           "ratio_min=%.2f relerr=%.1e\n",
           (long long)j.n, med[0], mn[0], med[1], mn[1], med[0] / med[1],
           mn[0] / mn[1], err / mx);
    fflush(stdout);
    fftwf_destroy_plan(j.plan);
    fftwf_free(j.x);
    fftwf_free(j.y);
    free(ref);
    rlx_free(j.scratch);
    rlx_free(j.tables);
  }
  return 0;
}
