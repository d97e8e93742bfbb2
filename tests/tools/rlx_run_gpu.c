/* rlx_run_gpu.c -- the GPU counterpart of rlx_run for entries compiled
 * with rlxc --target=cuda (docs/gpu.md).
 *
 *   rlx_run_gpu --so CASE.so --entry NAME [--rtol X] [--atol Y]
 *               [--expect RC] [--time N] DIR
 * Loads the case (its librlxrt references resolve to this driver's
 * copy), reads DIR/inI.bin into host buffers (harness.c), copies them
 * to device memory, calls NAME(in, out, ws, stream) three times on one
 * stream, copies the outputs back and compares them with DIR/outJ.bin
 * at the CPU e2e tolerances (harness.c's defaults or --rtol/--atol);
 * the three runs must agree bit for bit (deterministic kernels), and a
 * NULL workspace must give RLX_ERR_INVALID when one is needed. After
 * each call the object's UNIT_gpu_status (UNIT: NAME less a _grad,
 * _jvp, _hvp or _train suffix) must return RC (--expect RC, default 0):
 * the errors the kernels found, as rlx_run --expect checks the CPU
 * entry's code; with RC != 0 the outputs are not compared (unspecified).
 * --time N: then N more calls, and the mean wall time per call with the
 * stream synchronized once at the end. Options of rlx_run that mean
 * nothing here (--threads, --null-ws, --concurrent) are accepted and
 * ignored. Exit: 0 pass, 1 mismatch or error code, 2 setup error.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/tools/harness.h"

typedef int (*GpuEntry)(const void *const *, void *const *, void *, void *);
typedef const rlx_signature *(*SigFn)(void);
typedef int (*StatusFn)(void *);

/* The object's UNIT_gpu_status for entry NAME (UNIT_SUFFIX or UNIT). */
static StatusFn find_status(void *h, const char *entry)
{
  static const char *const suffix[] = {"", "_grad", "_jvp", "_hvp",
                                       "_train"};
  char sym[512];
  size_t n = strlen(entry);
  for (int i = 0; i < 5; i++) {
    size_t k = strlen(suffix[i]);
    if (n < k || strcmp(entry + n - k, suffix[i]) || n - k > 400)
      continue;
    snprintf(sym, sizeof sym, "%.*s_gpu_status", (int)(n - k), entry);
    StatusFn f = (StatusFn)dlsym(h, sym);
    if (f)
      return f;
  }
  return NULL;
}

static int gpu_fail(const char *what, int rc)
{
  fprintf(stderr, "rlx_run_gpu: %s: %s (%s)\n", what, rlx_strerror(rc),
          rc == RLX_ERR_GPU ? rlx_gpu_error() : "");
  return 2;
}

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One call on the device; outputs copied back into c->out. */
static int run_once(GpuEntry fn, HxCall *c, void **din, void **dout,
                    void *ws, void *s)
{
  int rc = fn((const void *const *)din, dout, ws, s);
  if (rc) return rc;
  for (int j = 0; j < c->sig->num_outputs; j++)
    if ((rc = rlx_gpu_copy_to_host(c->out[j].data, dout[j], c->out[j].bytes,
                                   s)))
      return rc;
  return rlx_gpu_stream_sync(s);
}

int main(int argc, char **argv)
{
  const char *so = NULL, *entry = NULL, *dir = NULL;
  HxTol tol = {0, 0};
  bool have_tol = false;
  int time_iters = 0, expect = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--so")) so = v, i++;
    else if (!strcmp(a, "--entry")) entry = v, i++;
    else if (!strcmp(a, "--rtol")) tol.rtol = atof(v), have_tol = true, i++;
    else if (!strcmp(a, "--atol")) tol.atol = atof(v), have_tol = true, i++;
    else if (!strcmp(a, "--time")) time_iters = atoi(v), i++;
    else if (!strcmp(a, "--expect")) expect = atoi(v), i++;
    else if (!strcmp(a, "--threads") || !strcmp(a, "--concurrent")) i++;
    else if (!strcmp(a, "--null-ws")) continue;
    else if (a[0] != '-') dir = a;
    else {
      fprintf(stderr, "rlx_run_gpu: unsupported option %s\n", a);
      return 2;
    }
  }
  if (!so || !entry || !dir) {
    fprintf(stderr, "usage: rlx_run_gpu --so CASE.so --entry NAME "
                    "[--rtol X] [--atol Y] [--expect RC] [--time N] "
                    "DIR\n");
    return 2;
  }
  void *h = dlopen(so, RTLD_NOW);
  char sym[512];
  snprintf(sym, sizeof sym, "%s_signature", entry);
  GpuEntry fn = h ? (GpuEntry)dlsym(h, entry) : NULL;
  SigFn sf = h ? (SigFn)dlsym(h, sym) : NULL;
  StatusFn status = h ? find_status(h, entry) : NULL;
  if (!fn || !sf || !status) {
    fprintf(stderr, "rlx_run_gpu: cannot load %s / %s: %s\n", so, entry,
            dlerror());
    return 2;
  }
  HxCall c;
  if (!hx_call_init(&c, NULL, sf(), true) || !hx_load_inputs(&c, dir))
    return 2;
  int ni = c.sig->num_inputs, no = c.sig->num_outputs, rc;
  void **din = calloc((size_t)ni + 1, sizeof *din);
  void **dout = calloc((size_t)no + 1, sizeof *dout);
  void *ws = NULL, *s = NULL;
  if ((rc = rlx_gpu_stream_create(&s))) return gpu_fail("stream", rc);
  for (int i = 0; i < ni; i++)
    if ((rc = rlx_gpu_alloc(&din[i], c.in[i].bytes)) ||
        (rc = rlx_gpu_copy_to_device(din[i], c.in[i].data, c.in[i].bytes,
                                     NULL)))
      return gpu_fail("inputs", rc);
  for (int j = 0; j < no; j++)
    if ((rc = rlx_gpu_alloc(&dout[j], c.out[j].bytes)))
      return gpu_fail("outputs", rc);
  if ((rc = rlx_gpu_alloc(&ws, c.sig->workspace_bytes)))
    return gpu_fail("workspace", rc);
  size_t total = 0;
  for (int j = 0; j < no; j++) total += c.out[j].bytes;
  char *first = malloc(total + 1);
  for (int k = 0; k < 3; k++) {
    if ((rc = run_once(fn, &c, din, dout, ws, s))) {
      fprintf(stderr, "rlx_run_gpu: %s returned %d (%s) %s\n", entry, rc,
              rlx_strerror(rc), rc == RLX_ERR_GPU ? rlx_gpu_error() : "");
      return 1;
    }
    if ((rc = status(s)) != expect) {
      fprintf(stderr, "rlx_run_gpu: %s: the kernels' status is %d (%s), "
                      "expected %d (%s) %s\n", entry, rc, rlx_strerror(rc),
              expect, rlx_strerror(expect),
              rc == RLX_ERR_GPU ? rlx_gpu_error() : "");
      return 1;
    }
    if (expect)
      continue; /* outputs unspecified */
    size_t off = 0;
    for (int j = 0; j < no; j++) {
      if (k == 0) memcpy(first + off, c.out[j].data, c.out[j].bytes);
      else if (memcmp(first + off, c.out[j].data, c.out[j].bytes)) {
        fprintf(stderr, "rlx_run_gpu: output %d differs between runs\n", j);
        return 1;
      }
      off += c.out[j].bytes;
    }
  }
  rc = c.sig->workspace_bytes > 0
           ? fn((const void *const *)din, dout, NULL, s)
           : RLX_ERR_INVALID;
  if (rc != RLX_ERR_INVALID) {
    fprintf(stderr, "rlx_run_gpu: NULL workspace gave %d, not "
                    "RLX_ERR_INVALID\n", rc);
    return 1;
  }
  int bad = expect ? 0
                   : hx_compare_outputs(&c, dir, have_tol ? &tol : NULL);
  if (bad == 0 && time_iters > 0) {
    double t0 = now();
    for (int k = 0; k < time_iters; k++)
      if ((rc = fn((const void *const *)din, dout, ws, s)))
        return gpu_fail("timing", rc);
    rlx_gpu_stream_sync(s);
    printf("%s: %.4f ms per call (%d calls)\n", entry,
           1e3 * (now() - t0) / time_iters, time_iters);
  }
  return bad == 0 ? 0 : 1;
}
