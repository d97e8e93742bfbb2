/* shape_linalg.c: rules for linear algebra (language.md 6.2).
 *
 * matmul: a [..., M, K] x b [..., K, N] -> [..., M, N]; both rank >= 2,
 *   batch dims broadcast (NumPy); equal dtypes, float or c64.
 * dense_solve: a [N, N], b [N] or [N, K] -> b's type; float dtypes.
 * batched_dense_solve: a [B, N, N], b [B, N] or [B, N, K] -> b's type.
 * Dynamic sizes: B and K; N static.
 */
#include "ir/shape_internal.h"

bool shape_matmul(Ctx *c, Node *n) {
  const Type *a = IN(n, 0), *b = IN(n, 1);
  if (!sh_same_dtype(c, n, 0, 1)) return false;
  if (!sh_want_float_or_complex(c, n, 0, "operand")) return false;
  if (a->rank < 2 || b->rank < 2)
    return sh_err(c, n, "operands must have rank >= 2, got %s and %s",
                  TS(a), TS(b));
  int64_t k1 = a->dims[a->rank - 1], k2 = b->dims[b->rank - 2];
  if (k1 != k2)
    return sh_err(c, n, "inner dimensions differ: %s vs %s", DS(k1),
                  DS(k2));
  Type ba = *a, bb = *b;
  ba.rank -= 2;
  bb.rank -= 2;
  Type out;
  if (!sh_bcast(c, n, &ba, &bb, &out)) return false;
  if (out.rank + 2 > RLX_MAX_RANK)
    return sh_err(c, n, "result rank exceeds %d", RLX_MAX_RANK);
  out.dims[out.rank] = a->dims[a->rank - 2];
  out.dims[out.rank + 1] = b->dims[b->rank - 1];
  out.rank += 2;
  out.dt = a->dt;
  n->type = out;
  return true;
}

/* Shared by both solves: nb leading batch dims (0 or 1). */
static bool solve(Ctx *c, Node *n, int nb) {
  const Type *a = IN(n, 0), *b = IN(n, 1);
  if (!sh_same_dtype(c, n, 0, 1)) return false;
  if (!sh_want_float(c, n, 0, "operand")) return false;
  const char *as = nb ? "[B, N, N]" : "[N, N]";
  if (a->rank != 2 + nb || a->dims[nb] != a->dims[nb + 1])
    return sh_err(c, n, "a must be a square matrix %s, got %s", as, TS(a));
  if (!sh_static(c, n, 0, nb + 1, "N, the system's size: the "
                 "elimination's working copy of a is N*N elements"))
    return false;
  if (b->rank != 1 + nb && b->rank != 2 + nb)
    return sh_err(c, n, "b must be %s, got %s",
                  nb ? "[B, N] or [B, N, K]" : "[N] or [N, K]", TS(b));
  if (nb && b->dims[0] != a->dims[0])
    return sh_err(c, n, "batch sizes differ: %s vs %s", DS(a->dims[0]),
                  DS(b->dims[0]));
  if (b->dims[nb] != a->dims[nb])
    return sh_err(c, n, "b has %s rows, expected %lld (a is %s)",
                  DS(b->dims[nb]), (long long)a->dims[nb], TS(a));
  n->type = *b;
  return true;
}

bool shape_dense_solve(Ctx *c, Node *n) { return solve(c, n, 0); }
bool shape_batched_dense_solve(Ctx *c, Node *n) { return solve(c, n, 1); }
