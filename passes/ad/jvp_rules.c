/* jvp_rules.c: forward mode. The table of JVP rules, one short rule per op;
 * the NN layers' rules live in jvp_rules_nn.c, control flow's in
 * jvp_rules_control.c, the tangent walk (jvp_into) and the passes that build
 * ENTRY_jvp and ENTRY_hvp in jvp.c, the helpers the rules share in
 * jvp_tangent.c. Conventions: jvp_rules.h.
 *
 * The table is generated from ops.def like the VJP table: a row's jvp
 * column R names the rule jvp_R, so an op added to ops.def without a
 * decided forward-mode rule does not compile. Entries:
 *   - a rule (jvp_<op>);
 *   - jvp_none: the op carries no tangent (OPF_NO_GRAD, comparisons,
 *     pseudo ops: the walk never calls it);
 *   - jvp_unsupported: a diagnostic naming the op (ops code generation
 *     rejects anyway);
 *   - jvp_lowered: scan_backward*, which lower_scan_bwd rewrites into
 *     a reverse scan before this pass (reaching it is an internal
 *     error).
 *
 * Every rule is the exact derivative, and agrees with the VJP rule of
 * the same op (⟨w, J v⟩ = ⟨Jᵀ w, v⟩): where the VJP makes a choice at a
 * kink (round is straight-through, min/max ties go to operand 0,
 * reduce_max/min give every tied element the full gradient), the JVP
 * makes the transposed one. Complex ops are holomorphic or R-linear;
 * their tangents carry no conjugate.
 */
#include "passes/ad/jvp_rules.h"

#include <string.h>

typedef Node *(*JvpRule)(JvpCtx *jc, const Node *n);

static bool differentiable(const Node *n) {
  return dt_is_float(n->type.dt) || dt_is_complex(n->type.dt);
}

Node *jvp_none(JvpCtx *jc, const Node *n) {
  RLX_ASSERT(!"jvp_none reached: op carries no tangent");
  return NULL;
}

static Node *jvp_unsupported(JvpCtx *jc, const Node *n) {
  jc->ok = diag_error(B->c, n->loc, "forward mode through '%s' is not "
                      "supported (see docs/autodiff.md)", op_name(n->op));
  return NULL;
}

/* scan_backward*: lowered by lower_scan_bwd before the jvp pass. */
Node *jvp_lowered(JvpCtx *jc, const Node *n) {
  jc->ok = diag_error(B->c, n->loc, "internal: '%s' reached forward mode "
                      "(lower_scan_bwd lowers it first)", op_name(n->op));
  return NULL;
}

/* ---- unary elementwise: t * f'(x) ---- */

static Node *act(JvpCtx *jc, const Node *n, const char *kind, Node *t) {
  Node *in[2] = {X(0), t};
  Node *r = ib_op(B, OP_ACTIVATION_BACKWARD, in, 2);
  ir_attr_set_word(B->c, r, ATTR_KIND, kind);
  return ib_finish(B, r);
}
Node *jvp_relu(JvpCtx *jc, const Node *n) {
  return BIN(OP_RELU_BACKWARD, Y, T(0));
}
Node *jvp_act(JvpCtx *jc, const Node *n) {
  return act(jc, n, op_name(n->op), T(0));
}
Node *jvp_sigmoid(JvpCtx *jc, const Node *n) {
  return MUL(T(0), MUL(Y, BIN(OP_SUB, K(1), Y)));
}
Node *jvp_tanh(JvpCtx *jc, const Node *n) {
  return MUL(T(0), BIN(OP_SUB, K(1), MUL(Y, Y)));
}
Node *jvp_exp(JvpCtx *jc, const Node *n) { return MUL(T(0), Y); }
Node *jvp_log(JvpCtx *jc, const Node *n) {
  return BIN(OP_DIV, T(0), X(0));
}
Node *jvp_sqrt(JvpCtx *jc, const Node *n) {
  return BIN(OP_DIV, T(0), MUL(Y, K(2)));
}
Node *jvp_rsqrt(JvpCtx *jc, const Node *n) {
  return MUL(T(0), MUL(K(-0.5), BIN(OP_DIV, Y, X(0))));
}
Node *jvp_sin(JvpCtx *jc, const Node *n) {
  return MUL(T(0), UN(OP_COS, X(0)));
}
Node *jvp_cos(JvpCtx *jc, const Node *n) {
  return UN(OP_NEG, MUL(T(0), UN(OP_SIN, X(0))));
}
Node *jvp_tan(JvpCtx *jc, const Node *n) {
  return MUL(T(0), BIN(OP_ADD, K(1), MUL(Y, Y)));
}
Node *jvp_atan(JvpCtx *jc, const Node *n) {
  return BIN(OP_DIV, T(0), BIN(OP_ADD, K(1), MUL(X(0), X(0))));
}

/* Linear in operand 0: the op itself, n's attributes, on the tangent
 * (neg, conjugate, real, imag, reshape, transpose, expand, narrow,
 * cumsum and cumsum_backward, fft, reductions sum/mean, rope and
 * rope_backward in x, gather, gather_backward, scatter_add,
 * avg_pool2d and its backward). Other operands (indices, tables)
 * are the primal copies. round is straight-through (as its VJP). */
Node *jvp_linear(JvpCtx *jc, const Node *n) {
  Node *in[8];
  RLX_ASSERT(n->nin <= 8);
  for (int i = 0; i < n->nin; i++) in[i] = i ? X(i) : TZ(0);
  return jvp_same_attrs(jc, n, n->op, in, n->nin);
}
Node *jvp_ident(JvpCtx *jc, const Node *n) { return FIT(T(0)); }

/* ---- binary elementwise ---- */

Node *jvp_add_sub(JvpCtx *jc, const Node *n) {
  Node *b2 = T(1) && n->op == OP_SUB ? UN(OP_NEG, T(1)) : T(1);
  return FIT(jvp_add(jc, FIT(T(0)), FIT(b2)));
}
Node *jvp_mul(JvpCtx *jc, const Node *n) {
  Node *a = T(0) ? MUL(T(0), X(1)) : NULL;
  Node *b2 = T(1) ? MUL(X(0), T(1)) : NULL;
  return FIT(jvp_add(jc, a, b2));
}
/* d(a/b) = (da - y db) / b */
Node *jvp_div(JvpCtx *jc, const Node *n) {
  Node *t = T(1) ? MUL(Y, T(1)) : NULL;
  t = t ? (T(0) ? BIN(OP_SUB, T(0), t) : UN(OP_NEG, t)) : T(0);
  return FIT(BIN(OP_DIV, t, X(1)));
}
/* ties: the tangent of operand 0 (the VJP sends ties' gradient to a) */
Node *jvp_minmax(JvpCtx *jc, const Node *n) {
  Node *m = BIN(n->op == OP_MAX ? OP_GE : OP_LE, X(0), X(1));
  Node *z = K(0);
  return FIT(ib_where(B, m, T(0) ? T(0) : z, T(1) ? T(1) : z));
}
Node *jvp_pow(JvpCtx *jc, const Node *n) {
  Node *a = X(0), *e = X(1), *r = NULL;
  if (T(0))
    r = MUL(T(0), MUL(e, BIN(OP_POW, a, BIN(OP_SUB, e, K(1)))));
  if (T(1)) r = jvp_add(jc, r, MUL(T(1), MUL(Y, UN(OP_LOG, a))));
  return FIT(r);
}

/* ---- other elementwise ---- */

Node *jvp_where(JvpCtx *jc, const Node *n) {
  Node *z = K(0);
  return FIT(ib_where(B, X(0), T(1) ? T(1) : z, T(2) ? T(2) : z));
}
Node *jvp_cast(JvpCtx *jc, const Node *n) {
  if (!differentiable(n)) return NULL;
  return ib_cast(B, T(0), DT);
}
Node *jvp_zero(JvpCtx *jc, const Node *n) { return NULL; }
Node *jvp_complex(JvpCtx *jc, const Node *n) {
  Node *re = T(0) ? T(0) : ib_fill(B, n->in[0]->type, 0);
  Node *im = T(1) ? T(1) : ib_fill(B, n->in[1]->type, 0);
  return FIT(BIN(OP_COMPLEX, re, im));
}

/* |z|^2: 2 Re(conj(z) tz) = 2 (re z re tz + im z im tz) */
Node *jvp_norm_sq(JvpCtx *jc, const Node *n) {
  Node *z = X(0), *t = T(0);
  Node *d = BIN(OP_ADD, MUL(UN(OP_REAL, z), UN(OP_REAL, t)),
                MUL(UN(OP_IMAG, z), UN(OP_IMAG, t)));
  return MUL(d, K(2));
}
/* complex_norm_sq_backward(z, g) = g z (g real): tg z + g tz */
Node *jvp_norm_sq_backward(JvpCtx *jc, const Node *n) {
  Node *r = T(1) ? MUL(ib_cast(B, T(1), DT), X(0)) : NULL;
  return jvp_add(jc, r, T(0) ? MUL(ib_cast(B, X(1), DT), T(0)) : NULL);
}

/* ---- linear algebra ---- */

Node *jvp_matmul(JvpCtx *jc, const Node *n) {
  Node *a = T(0) ? BIN(OP_MATMUL, T(0), X(1)) : NULL;
  Node *b2 = T(1) ? BIN(OP_MATMUL, X(0), T(1)) : NULL;
  return FIT(jvp_add(jc, a, b2));
}
/* x = solve(a, b): dx = solve(a, db - da x) */
Node *jvp_solve(JvpCtx *jc, const Node *n) {
  Node *r = T(1);
  if (T(0)) {
    Node *x = Y;
    int ra = n->in[0]->type.rank;
    if (x->type.rank < ra) { /* vector right-hand side */
      int64_t d[3];
      for (int i = 0; i < ra; i++) d[i] = n->in[0]->type.dims[i];
      d[ra - 1] = 1;
      Node *ax = BIN(OP_MATMUL, T(0), ib_reshape(B, x, ra, d));
      x = ib_reshape_as(B, ax, &n->type);
    } else {
      x = BIN(OP_MATMUL, T(0), x);
    }
    r = r ? BIN(OP_SUB, r, x) : UN(OP_NEG, x);
  }
  return BIN(n->op, X(0), r);
}

/* ---- reductions ---- */

Node *jvp_reduce_sum(JvpCtx *jc, const Node *n) {
  Node *t = T(0);
  return jvp_same_attrs(jc, n, n->op, &t, 1);
}
/* reduce_max/min: the tangents of the elements equal to the result,
 * summed (the transpose of the VJP, which gives every tie the full
 * gradient; with no tie, the selected element's tangent) */
Node *jvp_reduce_maxmin(JvpCtx *jc, const Node *n) {
  Type kept;
  ad_reduce_axes(n, NULL, &kept);
  Node *m = BIN(OP_EQ, X(0), ib_reshape_as(B, Y, &kept));
  Node *t = ib_where(B, m, T(0), K(0));
  return jvp_same_attrs(jc, n, OP_REDUCE_SUM, &t, 1);
}
Node *jvp_reduce_prod(JvpCtx *jc, const Node *n) {
  Node *t = MUL(ad_prod_partials(B, n, X(0)), T(0));
  return jvp_same_attrs(jc, n, OP_REDUCE_SUM, &t, 1);
}
static Node *sum_axis(JvpCtx *jc, Node *v, int64_t axis) {
  if (axis < 0) axis += v->type.rank;
  return ib_reduce(B, OP_REDUCE_SUM, v, &axis, 1, true);
}
Node *jvp_softmax(JvpCtx *jc, const Node *n) {
  int64_t ax = ir_attr_int(n, ATTR_AXIS, -1);
  Node *s = Y, *t = T(0);
  return MUL(s, BIN(OP_SUB, t, sum_axis(jc, MUL(s, t), ax)));
}
Node *jvp_log_softmax(JvpCtx *jc, const Node *n) {
  int64_t ax = ir_attr_int(n, ATTR_AXIS, -1);
  Node *t = T(0);
  return BIN(OP_SUB, t, sum_axis(jc, MUL(UN(OP_EXP, Y), t), ax));
}
/* loss_i = lse_i - l[i, lab_i]: dloss_i = sum_j (softmax - onehot)_ij t_ij */
Node *jvp_xent(JvpCtx *jc, const Node *n) {
  Node *in[3] = {X(0), X(1), ib_fill(B, n->type, 1)};
  Node *q = ib_op(B, OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, in, 3);
  int64_t ax = 1;
  return ib_reduce(B, OP_REDUCE_SUM, MUL(ib_finish(B, q), T(0)), &ax, 1,
                   false);
}
/* (l, lab, d) -> (s - onehot) d[:, None], s = softmax(l) */
Node *jvp_xent_backward(JvpCtx *jc, const Node *n) {
  Node *r = NULL, *d = X(2);
  int64_t col[2] = {d->type.dims[0], 1};
  if (T(0)) {
    Node *s = UN(OP_SOFTMAX, X(0)), *t = T(0);
    Node *ds = MUL(s, BIN(OP_SUB, t, sum_axis(jc, MUL(s, t), 1)));
    r = MUL(ds, ib_reshape(B, d, 2, col));
  }
  if (T(2)) {
    Node *in[3] = {X(0), X(1), T(2)};
    r = jvp_add(jc, r, ib_finish(B, ib_op(B, n->op, in, 3)));
  }
  return r;
}

/* ---- shape and data movement ---- */

Node *jvp_concat(JvpCtx *jc, const Node *n) {
  Node **in = arena_alloc(B->c->arena, sizeof(Node *) * (size_t)n->nin);
  for (int i = 0; i < n->nin; i++) in[i] = TZ(i);
  return jvp_same_attrs(jc, n, OP_CONCAT, in, n->nin);
}

/* ---- backward ops (the HVP differentiates them) ---- */

/* relu_backward(x, dy) = dy (x > 0): zero tangent through x */
Node *jvp_relu_backward(JvpCtx *jc, const Node *n) {
  return T(1) ? BIN(OP_RELU_BACKWARD, X(0), T(1)) : NULL;
}
/* activation_backward(x, dy) = dy f'(x): d = f'(x) tdy + dy f''(x) tx */
Node *jvp_act_backward(JvpCtx *jc, const Node *n) {
  const char *kind = ir_attr_word(n, ATTR_KIND);
  Node *r = T(1) ? act(jc, n, kind, T(1)) : NULL;
  if (T(0)) {
    Node *f2 = ad_act_second(B, kind, X(0), DT);
    if (f2) r = jvp_add(jc, r, MUL(MUL(T(0), X(1)), f2));
  }
  return r;
}

/* ---- the table: every ops.def row must name its rule ---- */

static const JvpRule rules[OP_COUNT] = {
#define OP(id, name, nmin, nmax, flags, rule, vjp, jvp, emit, attrs, math) \
  [OP_##id] = jvp_##jvp,
#include "ir/ops.def"
#undef OP
};

Node *jvp_apply(JvpCtx *jc, const Node *n) { return rules[n->op](jc, n); }

bool jvp_supported(Op op) {
  return rules[op] != jvp_unsupported && rules[op] != jvp_none;
}
