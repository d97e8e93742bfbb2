/* log_mel.c -- rlx_log_mel_<dt> and rlx_log_mel_backward_<dt> (f32,
 * f64): y = log(max(spec filters, 1e-10)) for spec [rows, F] and
 * filters [F, M], and its gradient w.r.t. spec,
 * dspec = (dy * [z >= 1e-10] / z) filters^T with z = spec filters
 * (PyTorch's clamp passes the gradient where z >= the floor; NaN z
 * gives a zero there). Both products go through the runtime GEMM, the
 * elementwise parts are parallel over rows: deterministic for any
 * thread count.
 */
#include "runtime/rlxrt.h"

#include <math.h>

#define LOG_MEL_IMPL(SFX, T, LOG)                                          \
  typedef struct {                                                         \
    T *z;                                                                  \
    const T *dy;                                                           \
    int64_t m;                                                             \
  } LogMelJob_##SFX;                                                       \
                                                                           \
  static void fwd_task_##SFX(void *ctx, int64_t begin, int64_t end)        \
  {                                                                        \
    const LogMelJob_##SFX *jb = ctx;                                       \
    for (int64_t i = begin * jb->m; i < end * jb->m; i++) {                \
      T z = jb->z[i];                                                      \
      jb->z[i] = LOG(z < (T)1e-10 ? (T)1e-10 : z);                         \
    }                                                                      \
  }                                                                        \
                                                                           \
  static void bwd_task_##SFX(void *ctx, int64_t begin, int64_t end)        \
  {                                                                        \
    const LogMelJob_##SFX *jb = ctx;                                       \
    for (int64_t i = begin * jb->m; i < end * jb->m; i++) {                \
      T z = jb->z[i];                                                      \
      jb->z[i] = z >= (T)1e-10 ? jb->dy[i] / z : (T)0;                     \
    }                                                                      \
  }                                                                        \
                                                                           \
  void rlx_log_mel_##SFX(int64_t rows, int64_t f, int64_t m,              \
                         const T *spec, const T *filters, T *out)          \
  {                                                                        \
    rlx_gemm_##SFX(1, rows, m, f, spec, 0, f, 1, filters, 0, m, 1, out,   \
                   0, m, 0);                                               \
    LogMelJob_##SFX jb = {out, NULL, m};                                   \
    rlx_parallel_for(rows, 1 + 16384 / (m + 1), fwd_task_##SFX, &jb);      \
  }                                                                        \
                                                                           \
  void rlx_log_mel_backward_##SFX(int64_t rows, int64_t f, int64_t m,     \
                                  const T *spec, const T *filters,         \
                                  const T *dy, T *dspec, T *scratch)       \
  {                                                                        \
    rlx_gemm_##SFX(1, rows, m, f, spec, 0, f, 1, filters, 0, m, 1,        \
                   scratch, 0, m, 0);                                      \
    LogMelJob_##SFX jb = {scratch, dy, m};                                 \
    rlx_parallel_for(rows, 1 + 16384 / (m + 1), bwd_task_##SFX, &jb);      \
    rlx_gemm_##SFX(1, rows, f, m, scratch, 0, m, 1, filters, 0, 1, m,     \
                   dspec, 0, f, 0);                                        \
  }

LOG_MEL_IMPL(f32, float, logf)
LOG_MEL_IMPL(f64, double, log)
