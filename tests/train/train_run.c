/* train_run.c -- run a compiled NAME_train for a few steps against the
 * goldens of tests/train/gen_train.py (driven by run_train.py).
 *
 * usage: train_run [--gpu] LIB.so ENTRY GOLDEN_DIR
 * LIB.so is the case's object linked -shared; the driver carries the
 * runtime and exports it (as tests/tools/rlx_run.c). From ENTRY's
 * signature it checks the argument kinds (params RLX_ARG_PARAM, the
 * hyperparameters f32 scalars, the last input the RLX_ARG_STATE buffer
 * of case.txt's state_bytes), then, at 1 thread with a NULL workspace
 * and at 2 threads with a caller workspace, starts from in_*.bin and a
 * zeroed state and calls ENTRY `steps` times. The 1-thread run is
 * compared after every call with the goldens (outputs, every param in
 * place, the whole state buffer) under |got - ref| <= rtol*|ref| +
 * atol*max(1, max|ref|) per tensor (f32: 1e-4, 1e-5; f64: 1e-9,
 * 1e-11); the 2-thread run must be bit-identical to it. Prints one line
 * per failure and "PASS" or "FAIL"; exit status 0 on PASS.
 * --gpu: ENTRY was compiled with --target=cuda (docs/gpu.md). Each run
 * gets its own device buffers and workspace (so a --cuda-graph entry
 * captures again in run 1); each step copies every input (params,
 * hyperparameters, state) to the device, calls ENTRY(in, out, ws,
 * stream) and copies the inputs and outputs back, so the in-place
 * updates are checked on the device's buffers. Run 1 repeats run 0 and
 * must be bit-identical to it (deterministic kernels).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entry.h"
#include "rlxrt.h"

enum { MAXA = 64, MAXSTEPS = 16 };

typedef int (*GpuEntryFn)(const void *const *, void *const *, void *,
                          void *);

static int failures;

static void fail(const char *fmt, const char *a, long b) {
  printf("FAIL: ");
  printf(fmt, a, b);
  printf("\n");
  failures++;
}

/* Every buffer of the run, freed at exit (the driver runs under ASan's
 * leak checker too). */
static void *owned[8192];
static int nowned;
static void free_owned(void) {
  while (nowned) rlx_free(owned[--nowned]);
}
static void *alloc(size_t n) {
  void *p = rlx_alloc(n);
  if (!p || nowned == (int)(sizeof owned / sizeof *owned)) {
    fprintf(stderr, "train_run: out of memory\n");
    exit(1);
  }
  return owned[nowned++] = p;
}

static size_t desc_bytes(const rlx_tensor_desc *d) {
  size_t n = rlx_dtype_size(d->dtype);
  for (int i = 0; i < d->rank; i++) n *= (size_t)d->dims[i];
  return n;
}

/* One step of a --target=cuda entry on host buffers: every input to
 * the device buffers din, the call on stream s, every input (the
 * in-place updates) and output back. */
static int gpu_step(GpuEntryFn fn, const rlx_signature *sig,
                    const void **in, void **out, void **din, void **dout,
                    void *ws, void *s) {
  int rc = 0;
  for (int i = 0; i < sig->num_inputs && !rc; i++)
    rc = rlx_gpu_copy_to_device(din[i], in[i], desc_bytes(&sig->inputs[i]),
                                s);
  if (!rc) rc = fn((const void *const *)din, dout, ws, s);
  for (int i = 0; i < sig->num_inputs && !rc; i++)
    rc = rlx_gpu_copy_to_host((void *)in[i], din[i],
                              desc_bytes(&sig->inputs[i]), s);
  for (int j = 0; j < sig->num_outputs && !rc; j++)
    rc = rlx_gpu_copy_to_host(out[j], dout[j], desc_bytes(&sig->outputs[j]),
                              s);
  if (!rc) rc = rlx_gpu_stream_sync(s);
  if (rc == RLX_ERR_GPU) printf("GPU: %s\n", rlx_gpu_error());
  return rc;
}

/* A device buffer (exit on failure). */
static void *gpu_buffer(size_t bytes) {
  void *p = NULL;
  if (rlx_gpu_alloc(&p, bytes)) {
    printf("FAIL: rlx_gpu_alloc: %s\n", rlx_gpu_error());
    exit(1);
  }
  return p;
}

static void *read_file(const char *dir, const char *name, size_t want) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  void *p = alloc(want ? want : 1);
  memset(p, 0, want ? want : 1);
  if (!f) {
    fail("cannot open %s%.0ld", path, 0);
    return p;
  }
  size_t got = fread(p, 1, want, f);
  if (got != want || fgetc(f) != EOF)
    fail("%s: size differs from the signature's (%ld bytes)", path,
         (long)want);
  fclose(f);
  return p;
}

/* got against ref, n elements of f32 (size 4) or f64. */
static void compare(const char *what, const void *got, const void *ref,
                    size_t n, int size, int step) {
  double rtol = size == 4 ? 1e-4 : 1e-9, atol = size == 4 ? 1e-5 : 1e-11;
  double mx = 1;
  for (size_t i = 0; i < n; i++) {
    double r = size == 4 ? ((const float *)ref)[i] : ((const double *)ref)[i];
    if (fabs(r) > mx) mx = fabs(r);
  }
  for (size_t i = 0; i < n; i++) {
    double g = size == 4 ? ((const float *)got)[i] : ((const double *)got)[i];
    double r = size == 4 ? ((const float *)ref)[i] : ((const double *)ref)[i];
    if (!(fabs(g - r) <= rtol * fabs(r) + atol * mx)) {
      printf("FAIL: step %d %s[%zu]: got %.9g, want %.9g\n", step, what, i,
             g, r);
      failures++;
      return;
    }
  }
}

int main(int argc, char **argv) {
  bool gpu = argc == 5 && !strcmp(argv[1], "--gpu");
  if (gpu) argv++, argc--;
  if (argc != 4) {
    fprintf(stderr, "usage: train_run [--gpu] LIB.so ENTRY GOLDEN_DIR\n");
    return 2;
  }
  atexit(free_owned);
  const char *dir = argv[3];
  EntryFn fn;
  SigFn sf;
  if (!load_entry(argv[1], argv[2], &fn, &sf)) return 1;
  const rlx_signature *sig = sf();

  /* case.txt */
  char path[4096], line[1024], opt[64] = "", dt[16] = "";
  snprintf(path, sizeof path, "%s/case.txt", dir);
  FILE *cf = fopen(path, "r");
  if (!cf) {
    printf("FAIL: cannot open %s\n", path);
    return 1;
  }
  int steps = 0, nh = 0;
  long long state_bytes = -1;
  float hyper[8];
  while (fgets(line, sizeof line, cf)) {
    if (sscanf(line, "optimizer %63s", opt) == 1 ||
        sscanf(line, "dtype %15s", dt) == 1 ||
        sscanf(line, "steps %d", &steps) == 1 ||
        sscanf(line, "state_bytes %lld", &state_bytes) == 1)
      continue;
    if (!strncmp(line, "hyper ", 6)) {
      char *p = line + 6, *e;
      for (double v = strtod(p, &e); e != p && nh < 8; v = strtod(p, &e)) {
        hyper[nh++] = (float)v;
        p = e;
      }
    }
  }
  fclose(cf);
  int size = !strcmp(dt, "f64") ? 8 : 4;
  int nin = sig->num_inputs, nout = sig->num_outputs;
  int nent = nin - nh - 1;
  if (nin > MAXA || nout > MAXA || nent < 1 || steps > MAXSTEPS) {
    printf("FAIL: unexpected signature: %d inputs, %d outputs\n", nin, nout);
    return 1;
  }

  /* the signature: params, hyperparameters, state */
  const rlx_tensor_desc *st = &sig->inputs[nin - 1];
  if (st->kind != RLX_ARG_STATE)
    fail("the last input '%s' is not RLX_ARG_STATE (kind %ld)", st->name,
         st->kind);
  if ((long long)desc_bytes(st) != state_bytes)
    fail("state '%s': %ld bytes in the signature, not case.txt's",
         st->name, (long)desc_bytes(st));
  for (int i = nent; i < nin - 1; i++)
    if (sig->inputs[i].dtype != RLX_DT_F32 || sig->inputs[i].rank != 0 ||
        sig->inputs[i].kind != RLX_ARG_INPUT)
      fail("hyperparameter '%s' (input %ld) is not an f32 scalar input",
           sig->inputs[i].name, i);

  void *init[MAXA];
  size_t bytes[MAXA];
  char name[64];
  for (int i = 0; i < nent; i++) {
    bytes[i] = desc_bytes(&sig->inputs[i]);
    snprintf(name, sizeof name, "in_%d.bin", i);
    init[i] = read_file(dir, name, bytes[i]);
  }
  size_t obytes[MAXA];
  for (int j = 0; j < nout; j++) obytes[j] = desc_bytes(&sig->outputs[j]);

  /* run 0: 1 thread, NULL workspace, against the goldens; run 1: 2
   * threads, a caller workspace, bit-identical to run 0 */
  void *first[MAXSTEPS][MAXA + MAXA + 1];
  for (int run = 0; run < 2; run++) {
    if (!gpu) rlx_set_num_threads(run + 1);
    void *buf[MAXA], *out[MAXA];
    const void *in[MAXA];
    for (int i = 0; i < nent; i++) {
      buf[i] = alloc(bytes[i] ? bytes[i] : 1);
      memcpy(buf[i], init[i], bytes[i]);
      in[i] = buf[i];
    }
    for (int i = 0; i < nh; i++) in[nent + i] = &hyper[i];
    void *state = alloc(state_bytes > 0 ? (size_t)state_bytes : 1);
    memset(state, 0, state_bytes > 0 ? (size_t)state_bytes : 1);
    in[nin - 1] = state;
    for (int j = 0; j < nout; j++) out[j] = alloc(obytes[j] + 1);
    void *ws = run ? alloc(sig->workspace_bytes + 1) : NULL;
    void *din[MAXA], *dout[MAXA], *stream = NULL;
    for (int i = 0; gpu && i < nin; i++)
      din[i] = gpu_buffer(desc_bytes(&sig->inputs[i]));
    for (int j = 0; gpu && j < nout; j++) dout[j] = gpu_buffer(obytes[j]);
    if (gpu) ws = gpu_buffer(sig->workspace_bytes);
    if (gpu && rlx_gpu_stream_create(&stream)) {
      printf("FAIL: rlx_gpu_stream_create: %s\n", rlx_gpu_error());
      return 1;
    }
    for (int s = 0; s < steps; s++) {
      int rc = gpu ? gpu_step((GpuEntryFn)(void (*)(void))fn, sig, in, out,
                              din, dout, ws, stream)
                   : fn(in, out, ws);
      if (rc) {
        printf("FAIL: run %d step %d: %s returned %d\n", run, s, argv[2], rc);
        return 1;
      }
      for (int j = 0; j < nout; j++) {
        char what[64];
        snprintf(what, sizeof what, "step%d_out%d.bin", s, j);
        if (run == 0) {
          void *ref = read_file(dir, what, obytes[j]);
          if (sig->outputs[j].dtype == RLX_DT_F32 ||
              sig->outputs[j].dtype == RLX_DT_F64)
            compare(sig->outputs[j].name, out[j], ref, obytes[j] / size, size,
                    s);
          first[s][j] = alloc(obytes[j] + 1);
          memcpy(first[s][j], out[j], obytes[j]);
        } else if (memcmp(first[s][j], out[j], obytes[j])) {
          fail("%s: differs between the two runs (step %ld)",
               sig->outputs[j].name, s);
        }
      }
      for (int i = 0, k = 0; i < nent; i++) {
        if (sig->inputs[i].kind != RLX_ARG_PARAM) continue;
        char what[64];
        snprintf(what, sizeof what, "step%d_param%d.bin", s, k++);
        if (run == 0) {
          void *ref = read_file(dir, what, bytes[i]);
          compare(sig->inputs[i].name, buf[i], ref, bytes[i] / size, size, s);
          first[s][MAXA + i] = alloc(bytes[i] + 1);
          memcpy(first[s][MAXA + i], buf[i], bytes[i]);
        } else if (memcmp(first[s][MAXA + i], buf[i], bytes[i])) {
          fail("param %s: differs between the two runs (step %ld)",
               sig->inputs[i].name, s);
        }
      }
      char what[64];
      snprintf(what, sizeof what, "step%d_state.bin", s);
      if (run == 0) {
        void *ref = read_file(dir, what, (size_t)state_bytes);
        compare("opt_state", state, ref, (size_t)state_bytes / size, size, s);
        first[s][2 * MAXA] = alloc((size_t)state_bytes + 1);
        memcpy(first[s][2 * MAXA], state, (size_t)state_bytes);
      } else if (memcmp(first[s][2 * MAXA], state, (size_t)state_bytes)) {
        fail("the state%.0s differs between the two runs (step %ld)", "",
             s);
      }
    }
  }
  printf("%s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
