/* fuzz_params.c: libFuzzer target for the checkpoint readers
 * (runtime/params/params_io.c and params_json.c, compiled in with coverage).
 *
 * Each input is written to one temporary file and read as a
 * safetensors checkpoint and as a .npy array against a fixed signature
 * (params w f32[2, 3], b f32[3], n i64[4]; inputs x, y are skipped).
 * Failures: a crash, a sanitizer report, a leak, or a successful load
 * that did not write every param (a canary pattern must be gone).
 *
 * Build: CC=clang cmake -S . -B build-fuzz -DRLX_FUZZ=ON
 *        cmake --build build-fuzz --target fuzz_params
 * Run:   build-fuzz/tests/fuzz/fuzz_params NEWCORPUS tests/unit/data/params
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/rlxrt.h"

static const int64_t d23[] = {2, 3}, d3[] = {3}, d4[] = {4};
static const rlx_tensor_desc sig_in[] = {
  {"x", RLX_DT_F32, 1, d4, RLX_ARG_INPUT},
  {"w", RLX_DT_F32, 2, d23, RLX_ARG_PARAM},
  {"b", RLX_DT_F32, 1, d3, RLX_ARG_PARAM},
  {"n", RLX_DT_I64, 1, d4, RLX_ARG_PARAM},
  {"y", RLX_DT_I32, 1, d4, RLX_ARG_INPUT},
};
static const rlx_signature sig = {"m", 5, 0, sig_in, NULL, 0};

static char st_path[64], npy_path[64];

static void cleanup(void)
{
  unlink(st_path);
  unlink(npy_path);
}

static void write_file(const char *path, const uint8_t *d, size_t n)
{
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(d, 1, n, f) != n)
    abort();
  fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!st_path[0]) {
    snprintf(st_path, sizeof st_path, "/tmp/fuzz_params_%d.safetensors",
             (int)getpid());
    snprintf(npy_path, sizeof npy_path, "/tmp/fuzz_params_%d.npy",
             (int)getpid());
    atexit(cleanup);
  }
  float w[6], b[3];
  int64_t n[4];
  void *in[5] = {NULL, w, b, n, NULL};
  memset(w, 0xA5, sizeof w);
  memset(b, 0xA5, sizeof b);
  memset(n, 0xA5, sizeof n);
  write_file(st_path, data, size);
  if (rlx_load_params(&sig, st_path, in) == RLX_OK) {
    /* every param fully written: not all canary bytes can survive in
     * three independent tensors of the sizes given */
    unsigned char canary[48];
    memset(canary, 0xA5, sizeof canary);
    if (!memcmp(w, canary, sizeof w) && !memcmp(b, canary, sizeof b) &&
        !memcmp(n, canary, sizeof n))
      abort();
  }
  write_file(npy_path, data, size);
  rlx_load_npy(npy_path, &sig_in[1], w);
  return 0;
}
