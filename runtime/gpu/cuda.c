/* cuda.c -- the GPU runtime: NVIDIA's driver API, loaded at first use.
 *
 * librlxrt has no link dependency on CUDA: the first rlx_gpu_* call
 * dlopen()s libcuda.so.1 (RLX_CUDA_LIBRARY names another file, for
 * tests) and looks up the driver functions below by their current
 * versioned names; their few types are declared here, so no CUDA header
 * is needed at build time.  Then cuInit, the device's *primary* context
 * (the one PyTorch and the CUDA runtime use: pointers and streams are
 * shared with them), made current on each calling thread before use.
 *
 * Errors: every function returns RLX_OK or an RLX_ERR_* code; a driver
 * failure, a missing driver or no device give RLX_ERR_GPU and a message
 * (the driver's own name and text when it gave one) that
 * rlx_gpu_error() returns on the same thread.  Errors kernels find (a
 * bad index, a singular system) are recorded in the module's error word
 * and read by rlx_gpu_status (docs/gpu.md).
 *
 * Modules: generated objects embed their kernels as PTX and hand an
 * rlx_gpu_module (static storage, zero-initialized but for the PTX and
 * kernel names) to rlx_gpu_module_load before launching: the driver
 * compiles the PTX once per process (100-250 ms) and the CUfunctions are
 * cached in the struct.  Thread safety: initialization and module loads
 * take one mutex; the rest is the driver's (thread-safe) calls.
 *
 * CUDA graphs (--cuda-graph): rlx_gpu_graph_run captures an entry's
 * launches on the caller's stream into a graph, instantiates it and
 * replays it when the stream, every pointer argument and the sizes are
 * those of a recorded call (an entry keeps several: rlx_gpu_graph).
 */
#include "runtime/rlxrt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult; /* 0 = CUDA_SUCCESS */
typedef unsigned long long CUdeviceptr;

#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define CU_STREAM_NON_BLOCKING 1
#define CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1
#define CU_STREAM_CAPTURE_STATUS_NONE 0

/* X(name in the driver, return, parameters) */
#define CU_FUNCTIONS(X)                                                    \
  X(cuInit, (unsigned flags))                                              \
  X(cuGetErrorName, (CUresult e, const char **s))                          \
  X(cuGetErrorString, (CUresult e, const char **s))                        \
  X(cuDeviceGetCount, (int *n))                                            \
  X(cuDeviceGet, (int *dev, int ordinal))                                  \
  X(cuDevicePrimaryCtxRetain, (void **ctx, int dev))                       \
  X(cuCtxSetCurrent, (void *ctx))                                          \
  X(cuMemAlloc_v2, (CUdeviceptr * p, size_t bytes))                        \
  X(cuMemFree_v2, (CUdeviceptr p))                                         \
  X(cuMemcpyHtoD_v2, (CUdeviceptr dst, const void *src, size_t n))         \
  X(cuMemcpyDtoH_v2, (void *dst, CUdeviceptr src, size_t n))               \
  X(cuMemcpyHtoDAsync_v2,                                                  \
    (CUdeviceptr dst, const void *src, size_t n, void *stream))            \
  X(cuMemcpyDtoHAsync_v2,                                                  \
    (void *dst, CUdeviceptr src, size_t n, void *stream))                  \
  X(cuMemsetD8Async,                                                       \
    (CUdeviceptr dst, unsigned char v, size_t n, void *stream))            \
  X(cuStreamCreate, (void **stream, unsigned flags))                       \
  X(cuStreamSynchronize, (void *stream))                                   \
  X(cuStreamDestroy_v2, (void *stream))                                    \
  X(cuModuleLoadDataEx, (void **mod, const void *image, unsigned n,        \
                         int *options, void **values))                     \
  X(cuModuleGetFunction, (void **fn, void *mod, const char *name))         \
  X(cuModuleGetGlobal_v2,                                                  \
    (CUdeviceptr * p, size_t *bytes, void *mod, const char *name))         \
  X(cuFuncSetAttribute, (void *fn, int attr, int value))                   \
  X(cuLaunchKernel,                                                        \
    (void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,         \
     unsigned by, unsigned bz, unsigned shmem, void *stream,               \
     void **params, void **extra))                                         \
  X(cuStreamIsCapturing, (void *stream, int *status))                      \
  X(cuStreamBeginCapture_v2, (void *stream, int mode))                     \
  X(cuStreamEndCapture, (void *stream, void **graph))                      \
  X(cuGraphInstantiateWithFlags,                                           \
    (void **exec, void *graph, unsigned long long flags))                  \
  X(cuGraphDestroy, (void *graph))                                         \
  X(cuGraphExecDestroy, (void *exec))                                      \
  X(cuGraphLaunch, (void *exec, void *stream))

static struct {
#define X(name, params) CUresult (*name) params;
  CU_FUNCTIONS(X)
#undef X
  void *ctx;
  int device;
  int state; /* 0 not tried, 1 ready, -1 failed (message in fail_msg) */
  char fail_msg[512];
} cu;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local char last_error[512];
static _Thread_local void *current_ctx;

static int fail(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return RLX_ERR_GPU;
}

/* A driver call's result: RLX_OK, or RLX_ERR_GPU with "what: NAME
   (text)" as the message. */
static int check(CUresult r, const char *what)
{
  const char *name = NULL, *text = NULL;
  if (r == 0)
    return RLX_OK;
  if (cu.cuGetErrorName)
    cu.cuGetErrorName(r, &name);
  if (cu.cuGetErrorString)
    cu.cuGetErrorString(r, &text);
  return fail("%s failed: %s (%s)", what, name ? name : "CUDA error",
              text ? text : "no description");
}

/* Load the library and the functions; cu.state and cu.fail_msg say how
   it went.  Called with `lock` held. */
static void load_driver(int device)
{
  const char *path = getenv("RLX_CUDA_LIBRARY");
  void *lib = dlopen(path && *path ? path : "libcuda.so.1",
                     RTLD_NOW | RTLD_LOCAL);
  int n = 0, dev, rc;
  cu.state = -1;
  if (!lib) {
    snprintf(cu.fail_msg, sizeof cu.fail_msg,
             "no NVIDIA driver: cannot load %s (%s)",
             path && *path ? path : "libcuda.so.1", dlerror());
    return;
  }
#define X(name, params)                                                  \
  if (!(*(void **)&cu.name = dlsym(lib, #name))) {                       \
    snprintf(cu.fail_msg, sizeof cu.fail_msg,                            \
             "the NVIDIA driver lacks %s (too old a driver?)", #name);   \
    return;                                                              \
  }
  CU_FUNCTIONS(X)
#undef X
  if ((rc = check(cu.cuInit(0), "cuInit")) == RLX_OK)
    rc = check(cu.cuDeviceGetCount(&n), "cuDeviceGetCount");
  if (rc == RLX_OK && device >= n)
    rc = fail("no GPU %d: the driver sees %d", device, n);
  if (rc == RLX_OK)
    rc = check(cu.cuDeviceGet(&dev, device), "cuDeviceGet");
  if (rc == RLX_OK)
    rc = check(cu.cuDevicePrimaryCtxRetain(&cu.ctx, dev),
               "cuDevicePrimaryCtxRetain");
  if (rc != RLX_OK) {
    snprintf(cu.fail_msg, sizeof cu.fail_msg, "%s", last_error);
    return;
  }
  cu.state = 1;
}

/* The driver loaded for `device` (-1: the one chosen already, else 0)
   and its primary context current on this thread. */
static int ensure(int device)
{
  int rc;
  pthread_mutex_lock(&lock);
  if (cu.state == 0) {
    cu.device = device < 0 ? 0 : device;
    load_driver(cu.device);
  }
  if (cu.state != 1)
    rc = fail("%s", cu.fail_msg);
  else if (device >= 0 && device != cu.device)
    rc = fail("rlx_gpu_init(%d): this process uses GPU %d", device,
              cu.device);
  else
    rc = RLX_OK;
  pthread_mutex_unlock(&lock);
  if (rc == RLX_OK && current_ctx != cu.ctx) {
    rc = check(cu.cuCtxSetCurrent(cu.ctx), "cuCtxSetCurrent");
    if (rc == RLX_OK)
      current_ctx = cu.ctx;
  }
  return rc;
}

int rlx_gpu_init(int device)
{
  if (device < 0)
    return fail("rlx_gpu_init: negative device %d", device);
  return ensure(device);
}

/* Every entry below starts here. */
#define READY()                                                          \
  do {                                                                   \
    int rc_ = ensure(-1);                                                \
    if (rc_ != RLX_OK)                                                   \
      return rc_;                                                        \
  } while (0)

const char *rlx_gpu_error(void) { return last_error; }

int rlx_gpu_alloc(void **ptr, size_t bytes)
{
  CUdeviceptr p = 0;
  int rc;
  if (!ptr)
    return RLX_ERR_INVALID;
  *ptr = NULL;
  READY();
  rc = check(cu.cuMemAlloc_v2(&p, bytes ? bytes : 1), "cuMemAlloc");
  if (rc == RLX_OK)
    *ptr = (void *)(uintptr_t)p;
  return rc;
}

int rlx_gpu_free(void *ptr)
{
  if (!ptr)
    return RLX_OK;
  READY();
  return check(cu.cuMemFree_v2((CUdeviceptr)(uintptr_t)ptr), "cuMemFree");
}

int rlx_gpu_copy_to_device(void *dst, const void *src, size_t bytes,
                           void *stream)
{
  CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst;
  if (!bytes)
    return RLX_OK;
  READY();
  if (stream)
    return check(cu.cuMemcpyHtoDAsync_v2(d, src, bytes, stream),
                 "cuMemcpyHtoDAsync");
  return check(cu.cuMemcpyHtoD_v2(d, src, bytes), "cuMemcpyHtoD");
}

int rlx_gpu_copy_to_host(void *dst, const void *src, size_t bytes,
                         void *stream)
{
  CUdeviceptr s = (CUdeviceptr)(uintptr_t)src;
  if (!bytes)
    return RLX_OK;
  READY();
  if (stream)
    return check(cu.cuMemcpyDtoHAsync_v2(dst, s, bytes, stream),
                 "cuMemcpyDtoHAsync");
  return check(cu.cuMemcpyDtoH_v2(dst, s, bytes), "cuMemcpyDtoH");
}

int rlx_gpu_zero(void *dst, size_t bytes, void *stream)
{
  if (!bytes)
    return RLX_OK;
  READY();
  return check(cu.cuMemsetD8Async((CUdeviceptr)(uintptr_t)dst, 0, bytes,
                                  stream),
               "cuMemsetD8Async");
}

int rlx_gpu_stream_create(void **stream)
{
  if (!stream)
    return RLX_ERR_INVALID;
  *stream = NULL;
  READY();
  return check(cu.cuStreamCreate(stream, CU_STREAM_NON_BLOCKING),
               "cuStreamCreate");
}

int rlx_gpu_stream_sync(void *stream)
{
  READY();
  return check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
}

int rlx_gpu_stream_destroy(void *stream)
{
  if (!stream)
    return RLX_OK;
  READY();
  return check(cu.cuStreamDestroy_v2(stream), "cuStreamDestroy");
}

/* Compile m->ptx and look up its kernels; called with `lock` held. */
static int load_module(rlx_gpu_module *m)
{
  char log[4096] = "";
  int opts[2] = {CU_JIT_ERROR_LOG_BUFFER,
                 CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  void *mod = NULL;
  int rc = check(cu.cuModuleLoadDataEx(&mod, m->ptx, 2, opts, vals),
                 "cuModuleLoadDataEx");
  if (rc != RLX_OK) {
    size_t len = strlen(last_error);
    snprintf(last_error + len, sizeof last_error - len, ": %s", log);
    return rc;
  }
  for (int i = 0; i < m->nkernels && rc == RLX_OK; i++) {
    rc = check(cu.cuModuleGetFunction(&m->kernels[i], mod, m->names[i]),
               "cuModuleGetFunction");
    if (rc == RLX_OK && m->shmem && m->shmem[i] > 48 * 1024)
      rc = check(cu.cuFuncSetAttribute(
                     m->kernels[i],
                     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                     (int)m->shmem[i]),
                 "cuFuncSetAttribute");
  }
  if (rc == RLX_OK && m->err) {
    CUdeviceptr p = 0;
    size_t bytes = 0;
    rc = check(cu.cuModuleGetGlobal_v2(&p, &bytes, mod, "rlx_err"),
               "cuModuleGetGlobal(rlx_err)");
    m->errp = (void *)(uintptr_t)p;
  }
  return rc;
}

int rlx_gpu_module_load(rlx_gpu_module *m)
{
  int rc;
  READY();
  if (__atomic_load_n(&m->state, __ATOMIC_ACQUIRE) == 1)
    return RLX_OK;
  pthread_mutex_lock(&lock);
  if (m->state == 1)
    rc = RLX_OK;
  else if ((rc = load_module(m)) == RLX_OK)
    __atomic_store_n(&m->state, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&lock);
  return rc;
}

int rlx_gpu_launch(void *kernel, const unsigned grid[3],
                   const unsigned block[3], unsigned shmem, void *stream,
                   void **args)
{
  READY();
  return check(cu.cuLaunchKernel(kernel, grid[0], grid[1], grid[2],
                                 block[0], block[1], block[2], shmem,
                                 stream, args, NULL),
               "cuLaunchKernel");
}

/* One take at a time: the taken code passes through rlx_err[1]. */
static pthread_mutex_t status_lock = PTHREAD_MUTEX_INITIALIZER;

int rlx_gpu_status(rlx_gpu_module *m, void *stream)
{
  static const unsigned one[3] = {1, 1, 1};
  unsigned code = 0;
  int rc;
  READY();
  if (__atomic_load_n(&m->state, __ATOMIC_ACQUIRE) != 1 || !m->err)
    return rlx_gpu_stream_sync(stream);
  pthread_mutex_lock(&status_lock);
  rc = rlx_gpu_launch(m->kernels[m->nkernels - 1], one, one, 0, stream,
                      NULL);
  if (rc == RLX_OK)
    rc = check(cu.cuMemcpyDtoHAsync_v2(&code,
                                       (CUdeviceptr)(uintptr_t)m->errp + 4,
                                       4, stream),
               "cuMemcpyDtoHAsync(rlx_err)");
  if (rc == RLX_OK)
    rc = rlx_gpu_stream_sync(stream);
  pthread_mutex_unlock(&status_lock);
  return rc != RLX_OK ? rc : (int)code;
}

static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;

/* Slot k of g: exec, stream, last use, then the key's ws, in, out and
   sizes words (rlxrt.h). */
static uint64_t *slot_of(const rlx_gpu_graph *g, int k)
{
  return g->slot +
         (size_t)k * RLX_GPU_GRAPH_WORDS(g->nin, g->nout, g->nsizes);
}

static uint64_t word(const void *p) { return (uint64_t)(uintptr_t)p; }

/* Does slot s hold a graph captured for this call? */
static int same_key(const rlx_gpu_graph *g, const uint64_t *s,
                    const void *const *in, void *const *out, void *ws,
                    void *stream, const int64_t *sizes)
{
  if (!s[0] || s[1] != word(stream) || s[3] != word(ws))
    return 0;
  const uint64_t *k = s + 4;
  for (int i = 0; i < g->nin; i++)
    if (*k++ != word(in[i]))
      return 0;
  for (int j = 0; j < g->nout; j++)
    if (*k++ != word(out[j]))
      return 0;
  for (int i = 0; i < g->nsizes; i++)
    if (*k++ != (uint64_t)sizes[i])
      return 0;
  return 1;
}

/* Capture enqueue's launches on stream into slot s (replacing its
   graph); called with graph_lock held. */
static int capture(const rlx_gpu_graph *g, uint64_t *s,
                   rlx_gpu_enqueue_fn enqueue, const void *const *in,
                   void *const *out, void *ws, void *stream,
                   const int64_t *sizes)
{
  void *graph = NULL, *exec = NULL;
  int rc = check(cu.cuStreamBeginCapture_v2(
                     stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                 "cuStreamBeginCapture");
  if (rc != RLX_OK)
    return rc;
  int rc_enq = enqueue(in, out, ws, stream, sizes);
  rc = check(cu.cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  if (rc_enq != RLX_OK)
    rc = rc_enq;
  if (rc == RLX_OK)
    rc = check(cu.cuGraphInstantiateWithFlags(&exec, graph, 0),
               "cuGraphInstantiate");
  if (graph)
    cu.cuGraphDestroy(graph);
  if (rc != RLX_OK)
    return rc;
  if (s[0]) /* freed once a launch in flight completes */
    cu.cuGraphExecDestroy((void *)(uintptr_t)s[0]);
  s[0] = word(exec);
  s[1] = word(stream);
  s[3] = word(ws);
  uint64_t *k = s + 4;
  for (int i = 0; i < g->nin; i++)
    *k++ = word(in[i]);
  for (int j = 0; j < g->nout; j++)
    *k++ = word(out[j]);
  for (int i = 0; i < g->nsizes; i++)
    *k++ = (uint64_t)sizes[i];
  return RLX_OK;
}

int rlx_gpu_graph_run(rlx_gpu_graph *g, rlx_gpu_enqueue_fn enqueue,
                      const void *const *in, void *const *out, void *ws,
                      void *stream, const int64_t *sizes)
{
  int status = CU_STREAM_CAPTURE_STATUS_NONE, rc;
  READY();
  if (stream)
    if ((rc = check(cu.cuStreamIsCapturing(stream, &status),
                    "cuStreamIsCapturing")) != RLX_OK)
      return rc;
  if (!stream || status != CU_STREAM_CAPTURE_STATUS_NONE)
    return enqueue(in, out, ws, stream, sizes);
  pthread_mutex_lock(&graph_lock);
  uint64_t *s = NULL, *old = slot_of(g, 0);
  for (int k = 0; k < g->nslot && !s; k++) {
    uint64_t *t = slot_of(g, k);
    if (same_key(g, t, in, out, ws, stream, sizes))
      s = t;
    else if (t[2] < old[2]) /* least recently used (0: never) */
      old = t;
  }
  rc = s ? RLX_OK
         : capture(g, s = old, enqueue, in, out, ws, stream, sizes);
  if (rc == RLX_OK) {
    s[2] = ++g->tick;
    rc = check(cu.cuGraphLaunch((void *)(uintptr_t)s[0], stream),
               "cuGraphLaunch");
  }
  pthread_mutex_unlock(&graph_lock);
  return rc;
}
