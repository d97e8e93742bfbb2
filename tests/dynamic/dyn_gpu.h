/* dyn_gpu.h: CALL(E, in, out, sizes) runs entry E of a tests/dynamic
 * case with NULL workspace on the CPU, and with -DRLX_GPU (an object
 * compiled with --target=cuda) on device copies of its arguments: each
 * input and output staged in device memory at the bytes its signature
 * gives for these sizes (one symbol: a dynamic dim is sizes[0]), a
 * workspace of E_workspace_bytes(sizes), one stream; outputs and inputs (a
 * --train entry updates its params in place) are copied back, and
 * UNIT_gpu_status (model_gpu_status) must be 0. Used by dyn_fd.c. */
#ifndef DYN_GPU_H
#define DYN_GPU_H

#ifdef RLX_GPU
#include <stdio.h>
#include <stdlib.h>

typedef int (*DynEntry)(const void *const *, void *const *, void *, void *,
                        const int64_t *);

static void dyn_gpu_ok(int rc, const char *what) {
  if (rc) {
    printf("FAIL: %s: %s (%s)\n", what, rlx_strerror(rc), rlx_gpu_error());
    exit(2);
  }
}

/* Bytes of d at sizes[0]. */
static size_t dyn_bytes(const rlx_tensor_desc *d, int64_t b) {
  static const int es[] = {4, 8, 2, 2, 1, 1, 4, 8, 1, 8}; /* RLX_DT_* */
  size_t n = (size_t)es[d->dtype];
  for (int k = 0; k < d->rank; k++) n *= (size_t)(d->dims[k] < 0 ? b : d->dims[k]);
  return n;
}

static int dyn_gpu_call(DynEntry e, const rlx_signature *sig, size_t wsb,
                        const void *const *in, void *const *out,
                        const int64_t *sizes) {
  static void *stream;
  enum { MAXA = 64 };
  void *din[MAXA], *dout[MAXA], *ws = NULL;
  if (!stream) dyn_gpu_ok(rlx_gpu_stream_create(&stream), "stream");
  if (sig->num_inputs > MAXA || sig->num_outputs > MAXA) exit(2);
  for (int i = 0; i < sig->num_inputs; i++) {
    size_t n = dyn_bytes(&sig->inputs[i], *sizes);
    dyn_gpu_ok(rlx_gpu_alloc(&din[i], n), "alloc");
    dyn_gpu_ok(rlx_gpu_copy_to_device(din[i], in[i], n, stream), "copy");
  }
  for (int j = 0; j < sig->num_outputs; j++)
    dyn_gpu_ok(rlx_gpu_alloc(&dout[j], dyn_bytes(&sig->outputs[j], *sizes)),
               "alloc");
  dyn_gpu_ok(rlx_gpu_alloc(&ws, wsb), "alloc");
  int r = e((const void *const *)din, (void *const *)dout, ws, stream, sizes);
  dyn_gpu_ok(rlx_gpu_stream_sync(stream), "sync");
  if (model_gpu_status(stream)) {
    printf("FAIL: model_gpu_status %d\n", model_gpu_status(stream));
    exit(1);
  }
  for (int j = 0; j < sig->num_outputs; j++)
    dyn_gpu_ok(rlx_gpu_copy_to_host(out[j], dout[j],
                                    dyn_bytes(&sig->outputs[j], *sizes),
                                    stream), "copy");
  for (int i = 0; i < sig->num_inputs; i++)
    dyn_gpu_ok(rlx_gpu_copy_to_host((void *)in[i], din[i],
                                    dyn_bytes(&sig->inputs[i], *sizes),
                                    stream), "copy");
  dyn_gpu_ok(rlx_gpu_stream_sync(stream), "sync");
  for (int i = 0; i < sig->num_inputs; i++) rlx_gpu_free(din[i]);
  for (int j = 0; j < sig->num_outputs; j++) rlx_gpu_free(dout[j]);
  rlx_gpu_free(ws);
  return r;
}
#define CALL(E, in, out, sizes) \
  dyn_gpu_call(E, E##_signature(), E##_workspace_bytes(sizes), \
               (const void *const *)(in), (void *const *)(out), sizes)
#else
#define CALL(E, in, out, sizes) \
  E((const void *const *)(in), (void *const *)(out), NULL, sizes)
#endif

#endif
