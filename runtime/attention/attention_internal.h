/* attention_internal.h -- shared by the attention files (attention.c,
 * attention_tmpl.h, attention_avx512.c, attention_avx2.c,
 * attention_kern.h): tile sizes
 * and the micro-kernel contracts.  The design is described at the top of
 * attention.c.
 */
#ifndef RLX_ATTENTION_INTERNAL_H
#define RLX_ATTENTION_INTERNAL_H

#include <stdint.h>

#include "runtime/rlxrt.h"

/* Queries per tile (the columns of every transposed score tile), keys
   per tile, and the most scratch slots a call uses (fixed: never the
   thread count). */
enum { ATTN_BQ = 64, ATTN_BK = 64, ATTN_SLOTS = 16 };

/* The scratch layout of one call (attention_plan.c) (byte offsets from the 64-byte aligned start); depends
   only on the geometry, op and element size. */
typedef struct {
  int64_t nqt, nkt, nch, nslots;
  int64_t slot_off, slot_bytes;
  int64_t qt_off, dot_off, dd_off, dqp_off, o_off, lse_off;
  int64_t total;
} AttnPlan;
void rlx_attn_plan(const rlx_attn_geom *g, int op, int64_t elem_size,
                   AttnPlan *p);

/* mm:     C (m x n, row stride ldc) = [C +] A B, with
           A(i, p) = a[i*ars + p*acs] (m x k) and B(p, j) = b[p*ldb + j]
           (k x n); any m, n, k >= 0 (k == 0: C = 0 or unchanged).
   online: one step of the online softmax on an nk x ATTN_BQ tile s of
           scores (row = key, column = query): per column i,
             mnew = max(mx[i], max_j s[j][i]), mu = mnew == -inf ? 0 : mnew,
             alpha[i] = exp(mx[i] - mu), s[j][i] = exp(s[j][i] - mu),
             l[i] = l[i] * alpha[i] + sum_j s[j][i] (in j order),
             mx[i] = mnew.
           Never NaN for -inf scores (a column masked so far has l = 0).
   expsub: s[j][i] = exp(s[j][i] - sub[i]) on an nk x ATTN_BQ tile (sub
           may be +inf: 0).
   kvis (both): s[j][i] is -inf wherever j >= i + kvis (a causal tile;
           kvis >= nk: no such rows).  A kernel may store 0 there
           without exp (the same value) and leave it out of the sum (a
           sum from +0 keeps its bits without +0 terms).
   trans:  dst[c*ldd + r] = src[r*lds + c] * mul for r < rows,
           c < cols (a transposed copy; mul 1 copies).
   dsub:   dS from P and dP on an nk x ATTN_BQ tile, in place of dP: per
           row j, with a = min(ATTN_BQ, max(0, j + shift)),
             dp[j][i] = 0                                   for i < a,
             dp[j][i] = (s[j][i] * (dp[j][i] - dd[i])) * mul  for i >= a
           (the masked columns of a causal tile are set without reading
           dp there: the products left them unwritten).
   cols:   x[r][i] = x[r][i] * f[i] (div: / f[i]) for r < rows, i <
           ATTN_BQ (row stride ATTN_BQ).
   online, expsub, trans, dsub and cols may be NULL in a table: the
   portable C ones of attention_tmpl.h are used. */
#define ATTN_DECL_KERNELS(T, SFX)                                         \
  typedef void (*AttnMm##SFX)(int64_t m, int64_t n, int64_t k,           \
                              const T *a, int64_t ars, int64_t acs,      \
                              const T *b, int64_t ldb, T *c, int64_t ldc, \
                              int acc);                                   \
  typedef void (*AttnOnline##SFX)(T *s, int64_t nk, int64_t kvis, T *mx, \
                                  T *l, T *alpha);                        \
  typedef void (*AttnExpsub##SFX)(T *s, int64_t nk, int64_t kvis,        \
                                  const T *sub);                          \
  typedef void (*AttnTrans##SFX)(const T *src, int64_t lds, int64_t rows, \
                                 int64_t cols, T mul, T *dst,             \
                                 int64_t ldd);                            \
  typedef void (*AttnDsub##SFX)(const T *s, T *dp, int64_t nk,           \
                                int64_t shift, const T *dd, T mul);       \
  typedef void (*AttnCols##SFX)(T *x, int64_t rows, const T *f, int div); \
  typedef struct {                                                        \
    AttnMm##SFX mm;                                                       \
    AttnOnline##SFX online;                                               \
    AttnExpsub##SFX expsub;                                               \
    AttnTrans##SFX trans;                                                 \
    AttnDsub##SFX dsub;                                                   \
    AttnCols##SFX cols;                                                   \
  } AttnIsa##SFX;
ATTN_DECL_KERNELS(float, F32)
ATTN_DECL_KERNELS(double, F64)

/* The SIMD tables (all members NULL where the build lacks their ISA;
   attention.c then uses the portable steps). */
extern const AttnIsaF32 rlx_attn_avx512_f32, rlx_attn_avx2_f32,
    rlx_attn_neon_f32;
extern const AttnIsaF64 rlx_attn_avx512_f64, rlx_attn_avx2_f64,
    rlx_attn_neon_f64;

#endif
