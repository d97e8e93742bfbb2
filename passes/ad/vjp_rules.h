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

/* vjp_rules_nn.c */
bool vjp_layer_norm(GradCtx *gc, const Node *n, Node *g);
bool vjp_rms_norm(GradCtx *gc, const Node *n, Node *g);
bool vjp_group_norm(GradCtx *gc, const Node *n, Node *g);
bool vjp_batch_norm(GradCtx *gc, const Node *n, Node *g);
bool vjp_norm_backward(GradCtx *gc, const Node *n, Node *g);
bool vjp_rope(GradCtx *gc, const Node *n, Node *g);
bool vjp_max_pool(GradCtx *gc, const Node *n, Node *g);
bool vjp_avg_pool(GradCtx *gc, const Node *n, Node *g);
bool vjp_max_pool_backward(GradCtx *gc, const Node *n, Node *g);
bool vjp_avg_pool_backward(GradCtx *gc, const Node *n, Node *g);

/* vjp_rules_conv.c */
bool vjp_conv2d(GradCtx *gc, const Node *n, Node *g);
bool vjp_conv2d_backward_input(GradCtx *gc, const Node *n, Node *g);
bool vjp_conv2d_backward_weight(GradCtx *gc, const Node *n, Node *g);

/* vjp_rules_moe.c */
bool vjp_grouped_matmul(GradCtx *gc, const Node *n, Node *g);
bool vjp_grouped_matmul_backward_weight(GradCtx *gc, const Node *n,
                                        Node *g);
bool vjp_dequant_matmul(GradCtx *gc, const Node *n, Node *g);

/* vjp_rules_attention.c */
bool vjp_attention(GradCtx *gc, const Node *n, Node *g);
bool vjp_attention_backward(GradCtx *gc, const Node *n, Node *g);

/* vjp_rules_quant.c */
bool vjp_fake_quantize(GradCtx *gc, const Node *n, Node *g);
bool vjp_fake_quantize_lsq(GradCtx *gc, const Node *n, Node *g);
bool vjp_fake_quantize_bwd(GradCtx *gc, const Node *n, Node *g);
/* vjp_rules_complex.c */
bool vjp_fft(GradCtx *gc, const Node *n, Node *g);
bool vjp_complex_norm_sq(GradCtx *gc, const Node *n, Node *g);
bool vjp_complex_norm_sq_backward(GradCtx *gc, const Node *n, Node *g);

#endif
