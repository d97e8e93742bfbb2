/* shape_complex.c: rules for complex numbers (language.md 6.8).
 *
 * conjugate, fft: c64 -> c64 (fft rank >= 1). complex_norm_sq, real,
 *   imag: c64 -> f32. complex(re, im): f32 operands, broadcast -> c64.
 * complex_norm_sq_backward (z c64, g f32 of z's shape) -> z's type.
 * Dynamic sizes: any axis (the types are copied or broadcast), but fft's
 * transform length (the last axis) is static.
 */
#include "ir/shape_internal.h"

static bool want_c64(Ctx *c, const Node *n, int i, const char *what) {
  if (IN(n, i)->dt == DT_C64) return true;
  return sh_err(c, n, "%s must be c64, got %s", what, TS(IN(n, i)));
}

bool shape_complex_unary(Ctx *c, Node *n) {
  if (!want_c64(c, n, 0, "operand")) return false;
  if (n->op == OP_FFT && IN(n, 0)->rank < 1)
    return sh_err(c, n, "operand must have rank >= 1, got %s",
                  TS(IN(n, 0)));
  if (n->op == OP_FFT &&
      !sh_static(c, n, 0, IN(n, 0)->rank - 1, "the transform length: its "
                 "twiddle and chirp tables are built at compile time"))
    return false;
  n->type = *IN(n, 0);
  return true;
}

bool shape_complex_to_real(Ctx *c, Node *n) {
  if (!want_c64(c, n, 0, "operand")) return false;
  n->type = *IN(n, 0);
  n->type.dt = DT_F32;
  return true;
}

bool shape_complex(Ctx *c, Node *n) {
  for (int i = 0; i < 2; i++)
    if (IN(n, i)->dt != DT_F32)
      return sh_err(c, n, "%s must be f32, got %s", i ? "im" : "re",
                    TS(IN(n, i)));
  if (!sh_bcast(c, n, IN(n, 0), IN(n, 1), &n->type)) return false;
  n->type.dt = DT_C64;
  return true;
}

bool shape_complex_norm_sq_bwd(Ctx *c, Node *n) {
  const Type *z = IN(n, 0);
  if (z->dt != DT_C64)
    return sh_err(c, n, "z must be c64, got %s", TS(z));
  Type g = *z;
  g.dt = DT_F32;
  if (!sh_want_type(c, n, 1, "g", &g)) return false;
  n->type = *z;
  return true;
}
