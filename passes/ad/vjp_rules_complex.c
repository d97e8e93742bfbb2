/* vjp_rules_complex.c -- VJP rules of fft and complex_norm_sq (and its
 * backward op), in PyTorch's conjugate-Wirtinger convention like every
 * complex rule (vjp_rules.c): for y = A x with A C-linear the gradient is
 * A^H g; a real operand gets the real part of that.
 */
#include "passes/ad/vjp_rules.h"

#include <string.h>

/* fft with scale s: A^H = conj(s) W^H, the opposite-direction transform
 * with the same scale: norm backward <-> forward, ortho stays. */
bool vjp_fft(GradCtx *gc, const Node *n, Node *g) {
  const char *norm = ir_attr_word(n, ATTR_NORM);
  const char *adj = !norm || strcmp(norm, "backward") == 0 ? "forward"
                    : strcmp(norm, "forward") == 0        ? "backward"
                                                          : "ortho";
  Node *r = ib_op(B, OP_FFT, &g, 1);
  ir_attr_set_bool(B->c, r, ATTR_INVERSE, !ir_attr_bool(n, ATTR_INVERSE, false));
  ir_attr_set_word(B->c, r, ATTR_NORM, adj);
  ACC(0, ib_finish(B, r));
  return true;
}

/* |z|^2 -> 2 g z (torch's gradient; complex_norm_sq_backward(z, g)
 * means g z, so it gets 2 g). */
bool vjp_complex_norm_sq(GradCtx *gc, const Node *n, Node *g) {
  Node *in[2] = {X(0), MUL(g, K(2))};
  ACC(0, ib_finish(B, ib_op(B, OP_COMPLEX_NORM_SQ_BACKWARD, in, 2)));
  return true;
}

/* y = gr z (gr real): dz = gr h = complex_norm_sq_backward(h, gr),
 * dgr = Re(conj(z) h) = re z re h + im z im h. */
bool vjp_complex_norm_sq_backward(GradCtx *gc, const Node *n, Node *h) {
  if (WANT(0)) {
    Node *in[2] = {h, X(1)};
    ACC(0, ib_finish(B, ib_op(B, OP_COMPLEX_NORM_SQ_BACKWARD, in, 2)));
  }
  if (WANT(1))
    ACC(1, BIN(OP_ADD, MUL(UN(OP_REAL, X(0)), UN(OP_REAL, h)),
               MUL(UN(OP_IMAG, X(0)), UN(OP_IMAG, h))));
  return true;
}
