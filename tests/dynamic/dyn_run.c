/* dyn_run.c: runs a tests/dynamic case, compiled once (rlxc --name=model),
 * at every size of its data file (written by gen_dynamic.py with NumPy)
 * and checks each output element against the float64 reference with
 * the project's bar |got - ref| <= 1e-4 |ref| + 1e-5 max(1, max |ref|)
 * (NaN and infinities exactly; a case of f16/bf16 results gives TOL,
 * the e2e goldens' bar for its dtype, for both terms); elements past
 * the size must stay untouched; sizes over the bound or negative must
 * return RLX_ERR_SIZE and write nothing. With and without a workspace
 * of E_workspace_bytes(sizes) (the signature's constant where it has
 * one), nothing written past it, at 1 and 3 threads.
 * An input of a dynamic axis after the first comes once per size, dense
 * at that size (kind bit 2 in the data file). With -DRLX_GPU (an object
 * compiled with --target=cuda, run_dynamic.py --gpu) every call stages
 * its inputs, outputs and workspace (guard bytes included) in device
 * memory, ENTRY(in, out, ws, stream, sizes) runs on a stream, and
 * model_gpu_status must report no error; a NULL workspace must give
 * RLX_ERR_INVALID when one is needed. Exit 0: pass. */
#include "model.h"

#ifndef ENTRY /* the entry under test (run_dynamic.py: the case's ENTRY) */
#define ENTRY model
#endif
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define E(suffix) CAT(ENTRY, suffix)

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NIN = E(_NUM_INPUTS), NOUT = E(_NUM_OUTPUTS), MAXS = 8 };

/* A size over the symbol's bound: the last size of the data file is
   the bound, or (a case with `// DEFINE: UNBOUNDED`) it has none and
   sizes stop at 2^40. */
#ifdef UNBOUNDED
#define SIZE_OVER (((int64_t)1 << 40) + 1)
#else
#define SIZE_OVER (sizes[ns - 1] + 1)
#endif

#ifdef TOL
#define RTOL TOL
#define ATOL TOL
#else
#define RTOL 1e-4
#define ATOL 1e-5
#endif

static int fails;

#ifdef RLX_GPU
/* call(): ENTRY on device copies of in (inb bytes each), out (cap
   floats each) and ws (wsb bytes, or NULL); results copied back. */
static void *stream, *din[NIN], *dout[NOUT], *dws;

static void gpu_ok(int rc, const char *what) {
  if (rc) {
    printf("FAIL: %s: %s (%s)\n", what, rlx_strerror(rc), rlx_gpu_error());
    exit(2);
  }
}

static int call(void *const *in, const size_t *inb, float *const *out,
                const unsigned *cap, unsigned char *ws, size_t wsb,
                const int64_t *b) {
  for (int i = 0; i < NIN; i++) {
    gpu_ok(rlx_gpu_free(din[i]) || rlx_gpu_alloc(&din[i], inb[i]), "alloc");
    gpu_ok(rlx_gpu_copy_to_device(din[i], in[i], inb[i], stream), "copy");
  }
  for (int o = 0; o < NOUT; o++) {
    gpu_ok(rlx_gpu_free(dout[o]) || rlx_gpu_alloc(&dout[o], 4 * cap[o]),
           "alloc");
    gpu_ok(rlx_gpu_copy_to_device(dout[o], out[o], 4 * cap[o], stream),
           "copy");
  }
  gpu_ok(rlx_gpu_free(dws) || rlx_gpu_alloc(&dws, wsb), "alloc");
  if (ws) gpu_ok(rlx_gpu_copy_to_device(dws, ws, wsb, stream), "copy");
  int r = ENTRY((const void *const *)din, (void *const *)dout,
                ws ? dws : NULL, stream, b);
  gpu_ok(rlx_gpu_stream_sync(stream), "sync");
  int st = model_gpu_status(stream);
  if (st) {
    printf("FAIL size %lld: model_gpu_status %d\n", (long long)*b, st);
    fails++;
  }
  for (int o = 0; o < NOUT; o++)
    gpu_ok(rlx_gpu_copy_to_host(out[o], dout[o], 4 * cap[o], stream), "copy");
  if (ws) gpu_ok(rlx_gpu_copy_to_host(ws, dws, wsb, stream), "copy");
  gpu_ok(rlx_gpu_stream_sync(stream), "sync");
  return r;
}
#else
static int call(void *const *in, const size_t *inb, float *const *out,
                const unsigned *cap, unsigned char *ws, size_t wsb,
                const int64_t *b) {
  (void)inb, (void)cap, (void)wsb;
  return ENTRY((const void *const *)in, (void *const *)out, ws, b);
}
#endif

static void rd(void *p, size_t sz, size_t n, FILE *f) {
  if (fread(p, sz, n, f) != n) {
    printf("FAIL: short data file\n");
    exit(2);
  }
}

static double *get(FILE *f, unsigned *n) {
  rd(n, 4, 1, f);
  double *a = malloc(sizeof(double) * (*n + 1));
  rd(a, 8, *n, f);
  return a;
}

static bool close_to(double got, double ref, double mx) {
  if (isnan(ref) || isinf(ref)) return isnan(ref) ? isnan(got) : got == ref;
  return fabs(got - ref) <= RTOL * fabs(ref) + ATOL * mx;
}

static void check(int o, int64_t b, const float *got, const double *ref,
                  unsigned n, unsigned cap) {
  double mx = 1;
  for (unsigned i = 0; i < n; i++)
    if (isfinite(ref[i])) mx = fmax(mx, fabs(ref[i]));
  for (unsigned i = 0; i < n; i++)
    if (!close_to(got[i], ref[i], mx)) {
      printf("FAIL output %d size %lld [%u]: %.9g vs %.9g\n", o, (long long)b,
             i, got[i], ref[i]);
      fails++;
      return;
    }
  for (unsigned i = n; i < cap; i++)
    if (got[i] != -7.0f) {
      printf("FAIL output %d size %lld: element %u past the size written\n",
             o, (long long)b, i);
      fails++;
      return;
    }
}

int main(int argc, char **argv) {
  FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
  if (!f) return 2;
  unsigned h[3];
  rd(h, 4, 3, f);
  if (h[0] != NIN || h[1] != NOUT || h[2] > MAXS || E(_NUM_SIZES) != 1) {
    printf("FAIL: the data file does not match the header\n");
    return 2;
  }
  int ns = (int)h[2];
  int64_t sizes[MAXS];
  rd(sizes, 8, (size_t)ns, f);
  void *in[MAXS][NIN];
  size_t inb[MAXS][NIN];
  bool per_size[NIN];
  for (int i = 0; i < NIN; i++) {
    unsigned kind;
    rd(&kind, 4, 1, f);
    per_size[i] = kind & 2;
    for (int s = 0; s < (per_size[i] ? ns : 1); s++) {
      unsigned n;
      double *a = get(f, &n);
      void *p = malloc(4 * (size_t)(n + 1));
      for (unsigned k = 0; k < n; k++)
        if (kind & 1) ((int32_t *)p)[k] = (int32_t)a[k];
        else ((float *)p)[k] = (float)a[k];
      free(a);
      for (int t = per_size[i] ? s : 0; t < (per_size[i] ? s + 1 : ns); t++)
        in[t][i] = p, inb[t][i] = 4 * (size_t)(n + 1);
    }
  }
  double *ref[MAXS][NOUT];
  unsigned nref[MAXS][NOUT], cap[NOUT];
  for (int s = 0; s < ns; s++)
    for (int o = 0; o < NOUT; o++) ref[s][o] = get(f, &nref[s][o]);
  fclose(f);
  float *out[NOUT];
  for (int o = 0; o < NOUT; o++) {
    cap[o] = 1;
    for (int s = 0; s < ns; s++)
      if (nref[s][o] > cap[o]) cap[o] = nref[s][o];
    out[o] = malloc(sizeof(float) * cap[o]);
  }
#ifdef model_OUT_BYTES_y /* mlp: the BYTES macros of dynamic values */
#ifdef model_SIZE_MAX_batch
  int64_t bound = model_SIZE_MAX_batch;
#else
  int64_t bound = (int64_t)1 << 40; /* mlpu */
#endif
  if (model_SIZE_batch != 0 || model_BYTES_x(&bound) != bound * 32 ||
      model_OUT_BYTES_flat(&bound) != bound * 32 || model_BYTES_w1 != 512) {
    printf("FAIL header macros\n");
    fails++;
  }
#endif
  /* the workspace each size needs (E_workspace_bytes; the constant when
     there is one), then guard bytes that must stay untouched */
  size_t most = 0, fixed = E(_signature)()->workspace_bytes;
  for (int s = 0; s < ns; s++) {
    size_t wb = E(_workspace_bytes)(&sizes[s]);
    if (fixed != SIZE_MAX && wb != fixed) {
      printf("FAIL size %lld: workspace_bytes %zu, not the constant %zu\n",
             (long long)sizes[s], wb, fixed);
      fails++;
    }
    most = wb > most ? wb : most;
  }
  unsigned char *ws = aligned_alloc(64, most + 128);
#ifdef RLX_GPU
  gpu_ok(rlx_gpu_stream_create(&stream), "stream");
#endif
  for (int threads = 1; threads <= 3; threads += 2) {
    rlx_set_num_threads(threads);
    for (int w = 0; w < 2; w++)
      for (int s = 0; s < ns; s++) {
        for (int o = 0; o < NOUT; o++)
          for (unsigned i = 0; i < cap[o]; i++) out[o][i] = -7.0f;
        int64_t b = sizes[s];
        size_t wb = E(_workspace_bytes)(&b);
        memset(ws + wb, 0x5a, 128);
        int r = call(in[s], inb[s], out, cap, w ? ws : NULL, wb + 128, &b);
#ifdef RLX_GPU
        if (!w && wb > 0) { /* device memory is the caller's */
          if (r != RLX_ERR_INVALID) {
            printf("FAIL size %lld: NULL workspace gave %d\n", (long long)b,
                   r);
            fails++;
          }
          continue;
        }
#endif
        if (r != 0) {
          printf("FAIL size %lld: returned %d\n", (long long)b, r);
          fails++;
          continue;
        }
        for (int o = 0; o < NOUT; o++)
          check(o, b, out[o], ref[s][o], nref[s][o], cap[o]);
        for (int i = 0; i < 128; i++)
          if (ws[wb + i] != 0x5a) {
            printf("FAIL size %lld: written past the %zu workspace bytes\n",
                   (long long)b, wb);
            fails++;
            break;
          }
      }
  }
  /* over the bound (or, without one, 2^40), negative: RLX_ERR_SIZE, and
     no workspace */
  int64_t bad[] = {SIZE_OVER, -1, INT64_MIN, INT64_MAX};
  for (int k = 0; k < 4; k++) {
    out[0][0] = -7.0f;
    int r = call(in[ns - 1], inb[ns - 1], out, cap, ws, most + 128, &bad[k]);
    if (r != RLX_ERR_SIZE || out[0][0] != -7.0f ||
        E(_workspace_bytes)(&bad[k]) != 0) {
      printf("FAIL size %lld: returned %d, want RLX_ERR_SIZE (%d)\n",
             (long long)bad[k], r, RLX_ERR_SIZE);
      fails++;
    }
  }
  printf("%s: %d sizes x 2 workspaces x 2 thread counts, %d failures\n",
         fails ? "FAIL" : "PASS", ns, fails);
  free(ws);
  for (int i = 0; i < NIN; i++)
    for (int s = 0; s < (per_size[i] ? ns : 1); s++) free(in[s][i]);
  for (int o = 0; o < NOUT; o++) free(out[o]);
  for (int s = 0; s < ns; s++)
    for (int o = 0; o < NOUT; o++) free(ref[s][o]);
  return fails != 0;
}
