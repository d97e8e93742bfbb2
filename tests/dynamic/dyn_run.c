/* dyn_run.c: runs tests/dynamic/mlp.rlx's entry, compiled once, at every
 * size of data/mlp.bin (written by gen_dynamic.py with NumPy) and
 * checks each output element against the float64 reference with the
 * project's bar |got - ref| <= 1e-4 |ref| + 1e-5 max(1, max |ref|);
 * rows past the size must stay untouched; sizes over the bound or
 * negative must return RLX_ERR_SIZE and write nothing. The header's
 * macros are checked against the sizes too. With and without a
 * workspace, at 1 and 3 threads. Exit 0: pass. */
#include "mlp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BOUND mlp_SIZE_MAX_batch
static const int64_t SIZES[] = {0, 1, 7, 17, BOUND};
enum { NS = sizeof SIZES / sizeof SIZES[0], NOUT = 3 };

static int fails;

static double *get(FILE *f, unsigned *n) {
  if (fread(n, 4, 1, f) != 1) exit(2);
  double *a = malloc(sizeof(double) * (*n + 1));
  if (fread(a, 8, *n, f) != *n) exit(2);
  return a;
}

static float *to_f32(const double *a, unsigned n) {
  float *x = malloc(sizeof(float) * (n + 1));
  for (unsigned i = 0; i < n; i++) x[i] = (float)a[i];
  return x;
}

static void check(const char *what, int64_t b, const float *got,
                  const double *ref, unsigned n, unsigned cap) {
  double mx = 1;
  for (unsigned i = 0; i < n; i++) mx = fmax(mx, fabs(ref[i]));
  for (unsigned i = 0; i < n; i++)
    if (!(fabs(got[i] - ref[i]) <= 1e-4 * fabs(ref[i]) + 1e-5 * mx)) {
      printf("FAIL %s size %lld [%u]: %.9g vs %.9g\n", what, (long long)b, i,
             got[i], ref[i]);
      fails++;
      return;
    }
  for (unsigned i = n; i < cap; i++)
    if (got[i] != -7.0f) {
      printf("FAIL %s size %lld: element %u past the size written\n", what,
             (long long)b, i);
      fails++;
      return;
    }
}

int main(int argc, char **argv) {
  FILE *f = fopen(argc > 1 ? argv[1] : "mlp.bin", "rb");
  if (!f) return 2;
  unsigned n[5];
  float *in[5];
  for (int i = 0; i < 5; i++) {
    double *a = get(f, &n[i]);
    in[i] = to_f32(a, n[i]);
    free(a);
  }
  double *ref[NS][NOUT];
  unsigned nref[NS][NOUT];
  for (int s = 0; s < NS; s++)
    for (int o = 0; o < NOUT; o++) ref[s][o] = get(f, &nref[s][o]);
  fclose(f);
  /* the header's sizes: bytes of the dynamic values at the bound */
  int64_t bound = BOUND;
  if (mlp_NUM_SIZES != 1 || mlp_SIZE_batch != 0 ||
      mlp_BYTES_x(&bound) != (int64_t)n[0] * 4 ||
      mlp_OUT_BYTES_flat(&bound) != (int64_t)n[0] * 4 ||
      mlp_BYTES_w1 != (int64_t)n[2] * 4) {
    printf("FAIL header macros\n");
    fails++;
  }
  unsigned cap[NOUT] = {BOUND * 3, BOUND * 8, BOUND * 8};
  float *out[NOUT];
  for (int o = 0; o < NOUT; o++) out[o] = malloc(sizeof(float) * cap[o]);
  void *ws = aligned_alloc(64, mlp_WORKSPACE_BYTES);
  const void *ins[5] = {in[0], in[1], in[2], in[3], in[4]};
  for (int threads = 1; threads <= 3; threads += 2) {
    rlx_set_num_threads(threads);
    for (int w = 0; w < 2; w++)
      for (int s = 0; s < NS; s++) {
        for (int o = 0; o < NOUT; o++)
          for (unsigned i = 0; i < cap[o]; i++) out[o][i] = -7.0f;
        int64_t b = SIZES[s];
        int r = mlp(ins, (void *const *)out, w ? ws : NULL, &b);
        if (r != 0) {
          printf("FAIL size %lld: returned %d\n", (long long)b, r);
          fails++;
          continue;
        }
        if (mlp_OUT_BYTES_y(&b) != (int64_t)nref[s][0] * 4) {
          printf("FAIL size %lld: OUT_BYTES_y\n", (long long)b);
          fails++;
        }
        static const char *names[NOUT] = {"y", "flat", "sq"};
        for (int o = 0; o < NOUT; o++)
          check(names[o], b, out[o], ref[s][o], nref[s][o], cap[o]);
      }
  }
  int64_t bad[] = {BOUND + 1, -1, INT64_MIN, INT64_MAX};
  for (int k = 0; k < 4; k++) {
    out[0][0] = -7.0f;
    int r = mlp(ins, (void *const *)out, ws, &bad[k]);
    if (r != RLX_ERR_SIZE || out[0][0] != -7.0f) {
      printf("FAIL size %lld: returned %d, want RLX_ERR_SIZE (%d)\n",
             (long long)bad[k], r, RLX_ERR_SIZE);
      fails++;
    }
  }
  printf("%s: %d sizes x 2 workspaces x 2 thread counts, %d failures\n",
         fails ? "FAIL" : "PASS", NS, fails);
  return fails != 0;
}
