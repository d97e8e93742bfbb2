/* solve.c -- rlx_dense_solve_f32 / _f64: batched A X = B by Gaussian
 * elimination with partial pivoting (LU applied to the right-hand sides
 * as it is formed), then back substitution.
 *
 * The pivot is the entry of largest magnitude in the column (the first
 * one on ties); an exactly zero pivot means RLX_ERR_SINGULAR.  The
 * caller's scratch holds the working copy of A (n*n elements; the n
 * more that the contract reserves are not needed).  Serial: batches
 * run in order, so results never depend on the thread count.
 */
#include <string.h>

#include "runtime/rlxrt.h"

#define SOLVE_IMPL(SFX, T)                                                \
  static int64_t pivot_##SFX(const T *lu, int64_t n, int64_t col)         \
  {                                                                       \
    int64_t best = col;                                                   \
    T bv = lu[col * n + col] < 0 ? -lu[col * n + col] : lu[col * n + col];\
    for (int64_t r = col + 1; r < n; r++) {                               \
      T v = lu[r * n + col] < 0 ? -lu[r * n + col] : lu[r * n + col];     \
      if (v > bv) {                                                       \
        bv = v;                                                           \
        best = r;                                                         \
      }                                                                   \
    }                                                                     \
    return best;                                                          \
  }                                                                       \
                                                                          \
  static void swap_rows_##SFX(T *m, int64_t w, int64_t r1, int64_t r2)    \
  {                                                                       \
    for (int64_t j = 0; j < w; j++) {                                     \
      T t = m[r1 * w + j];                                                \
      m[r1 * w + j] = m[r2 * w + j];                                      \
      m[r2 * w + j] = t;                                                  \
    }                                                                     \
  }                                                                       \
                                                                          \
  /* Row r -= f * row c, for lu columns > c and every rhs column. */      \
  static void eliminate_##SFX(T *lu, T *x, int64_t n, int64_t nrhs,       \
                              int64_t c, int64_t r)                       \
  {                                                                       \
    T f = lu[r * n + c] / lu[c * n + c];                                  \
    for (int64_t j = c + 1; j < n; j++)                                   \
      lu[r * n + j] -= f * lu[c * n + j];                                 \
    for (int64_t j = 0; j < nrhs; j++)                                    \
      x[r * nrhs + j] -= f * x[c * nrhs + j];                             \
  }                                                                       \
                                                                          \
  static int one_##SFX(int64_t n, int64_t nrhs, T *lu, T *x)              \
  {                                                                       \
    for (int64_t c = 0; c < n; c++) {                                     \
      int64_t p = pivot_##SFX(lu, n, c);                                  \
      if (lu[p * n + c] == 0)                                             \
        return RLX_ERR_SINGULAR;                                          \
      if (p != c) {                                                       \
        swap_rows_##SFX(lu, n, p, c);                                     \
        swap_rows_##SFX(x, nrhs, p, c);                                   \
      }                                                                   \
      for (int64_t r = c + 1; r < n; r++)                                 \
        eliminate_##SFX(lu, x, n, nrhs, c, r);                            \
    }                                                                     \
    for (int64_t r = n; r-- > 0;)                                         \
      for (int64_t j = 0; j < nrhs; j++) {                                \
        T s = x[r * nrhs + j];                                            \
        for (int64_t q = r + 1; q < n; q++)                               \
          s -= lu[r * n + q] * x[q * nrhs + j];                           \
        x[r * nrhs + j] = s / lu[r * n + r];                              \
      }                                                                   \
    return RLX_OK;                                                        \
  }                                                                       \
                                                                          \
  int rlx_dense_solve_##SFX(int64_t batch, int64_t n, int64_t nrhs,       \
                            const T *a, const T *b, T *x, T *scratch)     \
  {                                                                       \
    if (batch < 0 || n < 0 || nrhs < 0)                                   \
      return RLX_ERR_INVALID;                                             \
    int rc = RLX_OK;                                                      \
    for (int64_t bi = 0; bi < batch; bi++) {                              \
      memcpy(scratch, a + bi * n * n, sizeof(T) * (size_t)(n * n));       \
      memmove(x + bi * n * nrhs, b + bi * n * nrhs,                       \
              sizeof(T) * (size_t)(n * nrhs));                            \
      int r = one_##SFX(n, nrhs, scratch, x + bi * n * nrhs);             \
      if (r != RLX_OK)                                                    \
        rc = r;                                                           \
    }                                                                     \
    return rc;                                                            \
  }

SOLVE_IMPL(f32, float)
SOLVE_IMPL(f64, double)
