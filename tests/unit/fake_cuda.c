/* fake_cuda.c -- a stand-in for libcuda.so.1 for test_runtime_gpu on
 * machines without a GPU (CI): the driver functions librlxrt looks up,
 * over host memory.  "Device" pointers are malloc'ed, streams are
 * counters, a module is any image that starts with "//" (PTX does) and
 * its one kernel, rlx_test_axpy, runs on the host with cuLaunchKernel's
 * argument convention, and so does rlx_err_take, the taker of the
 * module's error word rlx_err.  FAKE_CUDA_NO_DEVICE=1 makes cuInit fail the way
 * a machine with a driver but no GPU does.  Stream capture records the
 * launches on the capturing stream (the kernel's arguments copied, as
 * the driver does) into a graph that cuGraphLaunch runs.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long CUdeviceptr;

enum { OK = 0, INVALID_VALUE = 1, NO_DEVICE = 100, INVALID_PTX = 218,
       NOT_FOUND = 500 };

int cuInit(unsigned flags)
{
  const char *e = getenv("FAKE_CUDA_NO_DEVICE");
  return e && *e == '1' ? NO_DEVICE : OK;
}

int cuGetErrorName(int e, const char **s)
{
  *s = e == NO_DEVICE     ? "CUDA_ERROR_NO_DEVICE"
       : e == INVALID_PTX ? "CUDA_ERROR_INVALID_PTX"
       : e == NOT_FOUND   ? "CUDA_ERROR_NOT_FOUND"
                          : "CUDA_ERROR_INVALID_VALUE";
  return OK;
}

int cuGetErrorString(int e, const char **s)
{
  *s = e == NO_DEVICE ? "no CUDA-capable device is detected" : "fake";
  return OK;
}

int cuDeviceGetCount(int *n) { *n = 1; return OK; }
int cuDeviceGet(int *d, int i) { *d = i; return i == 0 ? OK : INVALID_VALUE; }
static int the_ctx;
int cuDevicePrimaryCtxRetain(void **c, int d) { *c = &the_ctx; return OK; }
int cuCtxSetCurrent(void *c) { return c == &the_ctx ? OK : INVALID_VALUE; }

int cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
  *p = (CUdeviceptr)(uintptr_t)malloc(n);
  return *p ? OK : INVALID_VALUE;
}

int cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); return OK; }

int cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n)
{
  memcpy((void *)(uintptr_t)d, s, n);
  return OK;
}

int cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n)
{
  memcpy(d, (void *)(uintptr_t)s, n);
  return OK;
}

int cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st)
{
  return cuMemcpyHtoD_v2(d, s, n);
}

int cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st)
{
  return cuMemcpyDtoH_v2(d, s, n);
}

int cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *st)
{
  memset((void *)(uintptr_t)d, v, n);
  return OK;
}

static char streams[64]; /* a stream is the address of a byte */
static int nstreams;
int cuStreamCreate(void **s, unsigned flags)
{
  *s = &streams[nstreams++ % 64];
  return OK;
}
int cuStreamSynchronize(void *s) { return OK; }
int cuStreamDestroy_v2(void *s) { return OK; }

static int the_module;
int cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *opts,
                       void **vals)
{
  if (strncmp(image, "//", 2) != 0) {
    for (unsigned i = 0; i < n; i++)
      if (opts[i] == 5) /* CU_JIT_ERROR_LOG_BUFFER */
        strcpy(vals[i], "ptxas fatal: fake parse error");
    return INVALID_PTX;
  }
  *m = &the_module;
  return OK;
}

static void axpy(void **args)
{
  float *y = *(float **)args[0];
  const float *x = *(float **)args[1];
  float a = *(float *)args[2];
  int n = *(int *)args[3];
  for (int i = 0; i < n; i++)
    y[i] = fmaf(a, x[i], y[i]); /* as the PTX: fma.rn.f32 */
}

/* The module's error word and its taker (generated modules have both
   when a kernel checks for errors: docs/gpu.md). */
static unsigned rlx_err[2];
static void err_take(void **args)
{
  rlx_err[1] = __atomic_exchange_n(&rlx_err[0], 0, __ATOMIC_RELAXED);
}

int cuModuleGetFunction(void **f, void *m, const char *name)
{
  if (!strcmp(name, "rlx_err_take"))
    *f = (void *)err_take;
  else if (!strcmp(name, "rlx_test_axpy"))
    *f = (void *)axpy;
  else
    return NOT_FOUND;
  return OK;
}

int cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *bytes, void *m,
                         const char *name)
{
  if (strcmp(name, "rlx_err") != 0)
    return NOT_FOUND;
  *p = (CUdeviceptr)(uintptr_t)rlx_err;
  *bytes = sizeof rlx_err;
  return OK;
}

int cuFuncSetAttribute(void *f, int attr, int value) { return OK; }

/* A recorded launch of axpy: its four arguments' values. */
typedef struct {
  void *f, *y, *x;
  float a;
  int n;
} Launch;
typedef struct {
  int n;
  Launch l[16];
} Graph;
static Graph *capturing;
static void *capture_stream;

int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                   unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                   void *stream, void **params, void **extra)
{
  if (capturing && stream == capture_stream) {
    if (capturing->n == 16)
      return INVALID_VALUE;
    capturing->l[capturing->n++] =
        (Launch){f, *(void **)params[0], *(void **)params[1],
                 *(float *)params[2], *(int *)params[3]};
    return OK;
  }
  ((void (*)(void **))f)(params);
  return OK;
}

int cuStreamIsCapturing(void *s, int *status)
{
  *status = capturing && s == capture_stream;
  return OK;
}

int cuStreamBeginCapture_v2(void *s, int mode)
{
  if (capturing || !s)
    return INVALID_VALUE;
  capturing = calloc(1, sizeof *capturing);
  capture_stream = s;
  return capturing ? OK : INVALID_VALUE;
}

int cuStreamEndCapture(void *s, void **graph)
{
  if (!capturing || s != capture_stream)
    return INVALID_VALUE;
  *graph = capturing;
  capturing = NULL;
  return OK;
}

int cuGraphInstantiateWithFlags(void **exec, void *graph,
                                unsigned long long flags)
{
  Graph *e = malloc(sizeof *e);
  if (!e)
    return INVALID_VALUE;
  *e = *(Graph *)graph;
  *exec = e;
  return OK;
}

int cuGraphDestroy(void *graph) { free(graph); return OK; }
int cuGraphExecDestroy(void *exec) { free(exec); return OK; }

int cuGraphLaunch(void *exec, void *stream)
{
  Graph *g = exec;
  for (int i = 0; i < g->n; i++) {
    Launch *l = &g->l[i];
    void *args[] = {&l->y, &l->x, &l->a, &l->n};
    ((void (*)(void **))l->f)(args);
  }
  return OK;
}
