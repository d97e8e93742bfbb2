/* harness.h -- drive any rlxc-generated entry point from C.
 *
 * Purpose: the end-to-end tests, the gradient checks and the benchmarks
 * all need the same chores around a generated function
 * `int E(const void *const *in, void *const *out, void *ws)`: allocate
 * its buffers from E_signature(), load inputs from raw little-endian
 * .bin files (or fill them deterministically), call it, and compare the
 * outputs with golden files under a per-dtype tolerance.
 *
 * Golden file convention (one directory per run, written by
 * tests/tools/gen_goldens.py):
 *   inI.bin   input I, raw, in the input's own dtype (size checked)
 *   outJ.bin  reference for output J: f32/f64 outputs as f64 values,
 *             c64 as (re, im) f64 pairs, every other dtype raw in its
 *             own dtype (compared exactly).
 *
 * Tolerance (docs/testing.md): an element passes when
 *   |got - ref| <= rtol*|ref| + atol*max(1, max|ref|)
 * with defaults hx_default_tol(dtype); NaN matches only NaN, an infinity
 * only the same infinity.  Integers and bool: bit-exact; f16, bf16:
 * exact by value.
 *
 * Ownership: an HxCall owns its tensors' buffers (rlx_alloc) and its
 * workspace; hx_call_free releases them.  No globals.
 * Entry points: hx_call_init, hx_load_inputs, hx_fill_inputs, hx_run,
 * hx_compare_outputs, hx_write_outputs, hx_check_threads,
 * hx_check_concurrent, hx_fd_check.
 */
#ifndef RLX_HARNESS_H
#define RLX_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/rlxrt.h"

typedef int (*HxEntry)(const void *const *inputs, void *const *outputs,
                       void *workspace);

typedef struct {
  const rlx_tensor_desc *desc;
  void *data;     /* 64-byte aligned, bytes long (at least 1 byte) */
  int64_t numel;
  size_t bytes;
} HxTensor;

typedef struct {
  HxEntry fn;
  const rlx_signature *sig;
  HxTensor *in;      /* sig->num_inputs */
  HxTensor *out;     /* sig->num_outputs */
  void *workspace;   /* NULL when null_ws was asked for */
  bool null_ws;
} HxCall;

typedef struct {
  double rtol, atol;
} HxTol;

int64_t hx_numel(const rlx_tensor_desc *d);
/* "f32[2, 3]" into buf; returns buf. */
char *hx_desc_str(const rlx_tensor_desc *d, char *buf, size_t n);
HxTol hx_default_tol(int dtype);

/* Allocate all buffers (zeroed) and, unless null_ws, a workspace of
 * sig->workspace_bytes.  False (message on stderr) on failure. */
bool hx_call_init(HxCall *c, HxEntry fn, const rlx_signature *sig,
                  bool null_ws);
void hx_call_free(HxCall *c);

/* Read DIR/inI.bin for every input; sizes must match exactly. */
bool hx_load_inputs(HxCall *c, const char *dir);
/* Deterministic fill: floats uniform in [-1, 1), integers in [0, 4),
 * bool 0/1, from a 64-bit seed (splitmix64). */
void hx_fill_inputs(HxCall *c, uint64_t seed);
/* The same fill for one tensor; *state advances (splitmix64). */
void hx_fill_tensor(HxTensor *t, uint64_t *state);
/* Copy input i of src into input i of dst for i < n (shapes equal). */
bool hx_copy_inputs(HxCall *dst, const HxCall *src, int n);

/* Call the entry once with the current inputs; returns its status. */
int hx_run(HxCall *c);

/* Compare output J with DIR/outJ.bin; tol NULL = per-dtype default.
 * Prints the first few mismatches; returns the number of failing
 * outputs (0 = all pass, -1 = a golden file is missing/bad). */
int hx_compare_outputs(const HxCall *c, const char *dir, const HxTol *tol);
/* Write every output as DIR/outJ.bin in golden format (f32 -> f64). */
bool hx_write_outputs(const HxCall *c, const char *dir);

/* Run once per thread count in threads[0..n) (rlx_set_num_threads; 0
 * means the default, i.e. env RLX_NUM_THREADS) and require
 * bit-identical outputs.  Returns true when identical and every
 * call returned 0. */
bool hx_check_threads(HxCall *c, const int *threads, int n);

/* Reentrancy: n user threads, each with its own copy of the call
 * (inputs, outputs, workspace), call the entry reps times concurrently;
 * every result must equal c's own call bit for bit (harness_mt.c). */
bool hx_check_concurrent(HxCall *c, int n, int reps);

/* Read the whole file; *len gets its size.  Caller frees (free()). */
void *hx_read_file(const char *path, size_t *len);
bool hx_write_file(const char *path, const void *data, size_t len);

/* Element i of a tensor as double; for c64, i indexes the interleaved
 * floats (re at 2e, im at 2e+1).  hx_set ignores f16/bf16. */
double hx_get(const HxTensor *t, int64_t i);
void hx_set(HxTensor *t, int64_t i, double v);

/* ---- finite-difference gradient check ----
 * fwd: the forward entry; grad: ENTRY_grad (inputs = fwd inputs then
 * d_output; outputs = fwd outputs then one gradient per wrt).
 * wrt[k] is the forward input index of gradient k (n_wrt of them);
 * when wrt is NULL, gradient k is matched by name: its output desc name
 * with a leading "d_" removed equals a forward input's name.
 * For each wrt input, up to max_elems elements (evenly spaced; for
 * c64 the real and imaginary parts count separately, and gradients
 * follow PyTorch: (dL/dre, dL/dim)) are perturbed by +-eps; the central difference of <d_output, out0>
 * is compared with the analytic gradient under tol.  d_output is filled
 * with deterministic values from seed.  Returns the number of failing
 * elements (or -1 on a setup error); prints each failure. */
typedef struct {
  double eps;
  HxTol tol;
  int64_t max_elems;
  uint64_t seed;
} HxFdOpts;

int hx_fd_check(HxCall *fwd, HxCall *grad, const int *wrt, int n_wrt,
                const HxFdOpts *o);

#endif
