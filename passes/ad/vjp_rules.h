/* vjp_rules.h: what the VJP rule files share (vjp_rules.c holds the
 * table and the rules of the core ops; vjp_rules_nn.c the NN layers'
 * rules; vjp_rules_conv.c conv2d's; vjp_rules_attention.c attention's;
 * grad_accum.c the helpers below them all).
 *
 * Conventions inside a rule: X(i) is operand i in the gradient graph,
 * Y the op's own value there, g the upstream gradient (Y's type), and
 * ACC(i, v) accumulates v into operand i (broadcast gradients are
 * reduced in grad_accum, the one place that does so). WANT(i) is false
 * when operand i needs no gradient, so rules build nothing for it.
 */
#ifndef RLX_VJP_RULES_H
#define RLX_VJP_RULES_H

#include "passes/ad/ad.h"

#define B (&gc->b)
#define X(i) GV(gc, n->in[i])
#define Y GV(gc, n)
#define ACC(i, v) grad_accum(gc, n->in[i], (v))
#define WANT(i) (gc->active[n->in[i]->id])
#define DT (g->type.dt)
#define K(v) ib_scalar(B, DT, (v))
#define UN(op, a) ib_un(B, op, a)
#define BIN(op, a, b2) ib_bin(B, op, a, b2)
#define MUL(a, b2) BIN(OP_MUL, a, b2)

/* op(in...) with n's attributes (adjoint pairs such as cumsum and
 * cumsum_backward, rope and rope_backward). */
Node *vjp_same_attrs(GradCtx *gc, const Node *n, Op op, Node *const *in,
                     int nin);

/* Every rule the vjp column of ops.def names, vjp_V, declared from the
 * table itself: a rule in any vjp_rules*.c file needs no line here. */
typedef bool VjpRuleFn(GradCtx *gc, const Node *n, Node *g);
#define OP(id, name, nmin, nmax, flags, rule, vjp, jvp, emit, attrs, math) \
  VjpRuleFn vjp_##vjp;
#include "ir/ops.def"
#undef OP
#endif
