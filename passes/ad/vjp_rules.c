/* vjp_rules.c: the table of vector-Jacobian product rules, one short rule
 * per op, built from ordinary ops plus the closed-form backward ops of
 * language.md 6.9.
 *
 * The table is generated from ops.def: a row's vjp column R names the
 * rule vjp_R, so an op added to ops.def without deciding its reverse
 * mode does not compile. The entries:
 *   - a rule (vjp_<op>);
 *   - vjp_none: the op carries no gradient (OPF_NO_GRAD or pseudo ops;
 *     grad_into never calls it);
 *   - vjp_unsupported: reverse mode through the op is outside this
 *     compiler's AD scope; reaching it is a diagnostic naming the op;
 *   - vjp_unprepared / vjp_lowered: ops an earlier pass rewrites
 *     (if, while, fused blocks; scan_backward*: lower_scan_bwd), so
 *     reaching one is an internal error.
 *
 * Rules of the NN layers live in vjp_rules_nn.c (conv2d:
 * vjp_rules_conv.c, attention: vjp_rules_attention.c, fft and
 * complex_norm_sq: vjp_rules_complex.c, scan: vjp_rules_scan.c, ...);
 * the conventions inside a rule (X, Y, ACC, WANT) are in vjp_rules.h.
 * The reverse walk that applies the table is grad.c's. Complex
 * (c64) gradients follow the conjugate-Wirtinger convention: g times
 * the conjugate of the partial derivative (CJ).
 */
#include "passes/ad/vjp_rules.h"

#include <string.h>

typedef bool (*VjpRule)(GradCtx *gc, const Node *n, Node *g);

static Node *CJ(GradCtx *gc, Node *v) {
  return dt_is_complex(v->type.dt) ? ib_un(B, OP_CONJUGATE, v) : v;
}

bool vjp_none(GradCtx *gc, const Node *n, Node *g) {
  RLX_ASSERT(!"vjp_none reached: op carries no gradient");
  return false;
}

static bool vjp_unsupported(GradCtx *gc, const Node *n, Node *g) {
  return diag_error(B->c, n->loc, "reverse mode through '%s' is not "
                    "supported (--grad covers the core ops, control flow "
                    "and custom_fn; see docs/autodiff.md)", op_name(n->op));
}

/* ---- unary elementwise ---- */

static bool act_backward(GradCtx *gc, const Node *n, Node *g,
                         const char *kind) {
  Node *in[2] = {X(0), g};
  Node *r = ib_op(B, OP_ACTIVATION_BACKWARD, in, 2);
  ir_attr_set_word(B->c, r, ATTR_KIND, kind);
  ACC(0, ib_finish(B, r));
  return true;
}

/* relu: y > 0 exactly where x > 0, so the output serves as the mask
 * and the pre-activation need not stay alive for the backward pass */
bool vjp_relu(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, BIN(OP_RELU_BACKWARD, Y, g));
  return true;
}
bool vjp_act(GradCtx *gc, const Node *n, Node *g) {
  return act_backward(gc, n, g, op_name(n->op));
}
bool vjp_sigmoid(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, MUL(g, MUL(Y, BIN(OP_SUB, K(1), Y))));
  return true;
}
bool vjp_tanh(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, MUL(g, BIN(OP_SUB, K(1), MUL(Y, Y))));
  return true;
}
bool vjp_exp(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, MUL(g, Y));
  return true;
}
bool vjp_log(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, BIN(OP_DIV, g, X(0)));
  return true;
}
bool vjp_sqrt(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, BIN(OP_DIV, g, MUL(Y, K(2))));
  return true;
}
bool vjp_rsqrt(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, MUL(g, MUL(K(-0.5), BIN(OP_DIV, Y, X(0)))));
  return true;
}
bool vjp_neg(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, UN(OP_NEG, g));
  return true;
}
bool vjp_sin(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, MUL(g, UN(OP_COS, X(0))));
  return true;
}
bool vjp_cos(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, UN(OP_NEG, MUL(g, UN(OP_SIN, X(0)))));
  return true;
}
bool vjp_tan(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, MUL(g, BIN(OP_ADD, K(1), MUL(Y, Y))));
  return true;
}
bool vjp_atan(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, BIN(OP_DIV, g, BIN(OP_ADD, K(1), MUL(X(0), X(0)))));
  return true;
}
/* identity: round (straight-through), expand (grad_accum sums the
 * stretched axes back) */
bool vjp_ident(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, g);
  return true;
}
bool vjp_conjugate(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, ib_un(B, OP_CONJUGATE, g));
  return true;
}

/* real(z) -> complex(g, 0); imag(z) -> complex(0, g) (torch's
 * convention: the gradient of a real loss is dL/dre + i dL/dim) */
bool vjp_real_imag(GradCtx *gc, const Node *n, Node *g) {
  Node *z = ib_fill(B, g->type, 0);
  ACC(0, n->op == OP_REAL ? BIN(OP_COMPLEX, g, z) : BIN(OP_COMPLEX, z, g));
  return true;
}
/* complex(re, im) -> real(g), imag(g); broadcast operands are reduced
 * by grad_accum */
bool vjp_complex(GradCtx *gc, const Node *n, Node *g) {
  if (WANT(0)) ACC(0, UN(OP_REAL, g));
  if (WANT(1)) ACC(1, UN(OP_IMAG, g));
  return true;
}

/* ---- binary elementwise ---- */

bool vjp_add(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, g);
  ACC(1, g);
  return true;
}
bool vjp_sub(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, g);
  if (WANT(1)) ACC(1, UN(OP_NEG, g));
  return true;
}
bool vjp_mul(GradCtx *gc, const Node *n, Node *g) {
  if (WANT(0)) ACC(0, MUL(g, CJ(gc, X(1))));
  if (WANT(1)) ACC(1, MUL(g, CJ(gc, X(0))));
  return true;
}
bool vjp_div(GradCtx *gc, const Node *n, Node *g) {
  Node *q = BIN(OP_DIV, g, CJ(gc, X(1)));
  ACC(0, q);
  if (WANT(1)) ACC(1, UN(OP_NEG, MUL(q, CJ(gc, Y))));
  return true;
}
/* min/max: ties send the gradient to operand 0 */
bool vjp_minmax(GradCtx *gc, const Node *n, Node *g) {
  Op cmp = n->op == OP_MAX ? OP_GE : OP_LE;
  Node *m = BIN(cmp, X(0), X(1)), *z = K(0);
  if (WANT(0)) ACC(0, ib_where(B, m, g, z));
  if (WANT(1)) ACC(1, ib_where(B, m, z, g));
  return true;
}
bool vjp_pow(GradCtx *gc, const Node *n, Node *g) {
  Node *a = X(0), *e = X(1);
  if (WANT(0))
    ACC(0, MUL(g, MUL(e, BIN(OP_POW, a, BIN(OP_SUB, e, K(1))))));
  if (WANT(1)) ACC(1, MUL(g, MUL(Y, UN(OP_LOG, a))));
  return true;
}

/* ---- other elementwise ---- */

bool vjp_where(GradCtx *gc, const Node *n, Node *g) {
  Node *z = K(0);
  if (WANT(1)) ACC(1, ib_where(B, X(0), g, z));
  if (WANT(2)) ACC(2, ib_where(B, X(0), z, g));
  return true;
}
/* cast: the gradient is cast back (only between float/complex types;
 * grad_accum ignores integer operands) */
bool vjp_cast(GradCtx *gc, const Node *n, Node *g) {
  DType from = n->in[0]->type.dt;
  if (dt_is_complex(DT) && dt_is_float(from)) /* real -> c64: Re(g) */
    g = ib_un(B, OP_REAL, g);
  if (dt_is_float(from) || dt_is_complex(from)) ACC(0, ib_cast(B, g, from));
  return true;
}
bool vjp_stop_gradient(GradCtx *gc, const Node *n, Node *g) {
  return true; /* zero gradient: nothing flows to the operand */
}

/* ---- linear algebra ---- */

/* x [..., K] as the matrix [rows, K] (NULL: too complex a size). */
static Node *as_rows(GradCtx *gc, Node *x) {
  const Type *t = &x->type;
  int64_t d[2] = {1, t->dims[t->rank - 1]};
  for (int i = 0; i < t->rank - 1; i++)
    if (dim_mul(B->c, d[0], t->dims[i], &d[0]) != DIM_OK) return NULL;
  return ib_reshape(B, x, 2, d);
}

bool vjp_matmul(GradCtx *gc, const Node *n, Node *g) {
  if (WANT(0)) ACC(0, BIN(OP_MATMUL, g, ib_mT(B, CJ(gc, X(1)))));
  if (!WANT(1)) return true;
  /* a batched x times a matrix w: w's gradient as one matmul over the
   * folded rows (x^T g summed over the batch), not a batch of products
   * summed afterwards (a [batch, K, N] temporary); dynamic sizes need
   * this form */
  Node *xr = NULL, *gr = NULL;
  if (n->in[0]->type.rank > 2 && n->in[1]->type.rank == 2) {
    xr = as_rows(gc, X(0));
    gr = xr ? as_rows(gc, g) : NULL;
  }
  if (gr) ACC(1, BIN(OP_MATMUL, ib_mT(B, CJ(gc, xr)), gr));
  else ACC(1, BIN(OP_MATMUL, ib_mT(B, CJ(gc, X(0))), g));
  return true;
}
/* x = solve(a, b): db = solve(a^T, g), da = -db x^T */
bool vjp_solve(GradCtx *gc, const Node *n, Node *g) {
  Node *db = BIN(n->op, ib_mT(B, X(0)), g);
  ACC(1, db);
  if (!WANT(0)) return true;
  Node *x = Y;
  int ra = n->in[0]->type.rank;
  if (x->type.rank < ra) { /* vector right-hand side: outer product */
    int64_t d[3];
    for (int i = 0; i < ra; i++) d[i] = n->in[0]->type.dims[i];
    d[ra - 1] = 1;
    Node *col = ib_reshape(B, db, ra, d);
    Node *row = ib_mT(B, ib_reshape(B, x, ra, d));
    ACC(0, UN(OP_NEG, BIN(OP_MATMUL, col, row)));
  } else {
    ACC(0, UN(OP_NEG, BIN(OP_MATMUL, db, ib_mT(B, x))));
  }
  return true;
}

/* ---- reductions ---- */

/* g reshaped to the keep_dims shape (broadcastable against x) */
static Node *kept_grad(GradCtx *gc, const Node *n, Node *g, Type *kept) {
  int64_t axes[RLX_MAX_RANK];
  ad_reduce_axes(n, axes, kept);
  return type_eq(&g->type, kept) ? g : ib_reshape_as(B, g, kept);
}

bool vjp_reduce_sum(GradCtx *gc, const Node *n, Node *g) {
  Type kept;
  Node *gk = kept_grad(gc, n, g, &kept);
  Node *e = ib_expand(B, gk, &n->in[0]->type);
  if (n->op == OP_REDUCE_MEAN && type_is_static(&n->in[0]->type)) {
    double cnt = (double)type_numel(&n->in[0]->type) /
                 (double)type_numel(&n->type);
    e = MUL(e, K(1.0 / cnt));
  } else if (n->op == OP_REDUCE_MEAN) {
    /* a dynamic count: the sum of ones over the reduced axes (the IR
     * has no op that reads a size) */
    int64_t axes[RLX_MAX_RANK];
    int k = ad_reduce_axes(n, axes, &kept);
    Node *ones = ib_expand(B, K(1.0), &n->in[0]->type);
    e = BIN(OP_DIV, e, ib_reduce(B, OP_REDUCE_SUM, ones, axes, k, true));
  }
  ACC(0, e);
  return true;
}
/* max/min: every element equal to the result receives the gradient */
bool vjp_reduce_maxmin(GradCtx *gc, const Node *n, Node *g) {
  Type kept;
  Node *gk = kept_grad(gc, n, g, &kept);
  Node *yk = ib_reshape_as(B, Y, &kept);
  Node *m = BIN(OP_EQ, X(0), yk);
  ACC(0, ib_where(B, m, gk, K(0)));
  return true;
}
bool vjp_reduce_prod(GradCtx *gc, const Node *n, Node *g) {
  Type kept;
  Node *gk = kept_grad(gc, n, g, &kept);
  ACC(0, MUL(CJ(gc, ad_prod_partials(B, n, X(0))), gk));
  return true;
}

static Node *sum_axis(GradCtx *gc, Node *v, int64_t axis) {
  if (axis < 0) axis += v->type.rank;
  return ib_reduce(B, OP_REDUCE_SUM, v, &axis, 1, true);
}
bool vjp_softmax(GradCtx *gc, const Node *n, Node *g) {
  int64_t ax = ir_attr_int(n, ATTR_AXIS, -1);
  Node *s = Y;
  ACC(0, MUL(s, BIN(OP_SUB, g, sum_axis(gc, MUL(g, s), ax))));
  return true;
}
bool vjp_log_softmax(GradCtx *gc, const Node *n, Node *g) {
  int64_t ax = ir_attr_int(n, ATTR_AXIS, -1);
  ACC(0, BIN(OP_SUB, g, MUL(UN(OP_EXP, Y), sum_axis(gc, g, ax))));
  return true;
}

bool vjp_cumsum(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, vjp_same_attrs(gc, n, OP_CUMSUM_BACKWARD, &g, 1));
  return true;
}
bool vjp_cumsum_backward(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, vjp_same_attrs(gc, n, OP_CUMSUM, &g, 1));
  return true;
}
bool vjp_xent(GradCtx *gc, const Node *n, Node *g) {
  Node *in[3] = {X(0), X(1), g};
  ACC(0, ib_finish(B, ib_op(B, OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, in, 3)));
  return true;
}
/* (l, lab, d) -> (softmax(l) - onehot) * d[:, None] */
bool vjp_xent_backward(GradCtx *gc, const Node *n, Node *g) {
  Node *l = X(0), *d = X(2);
  int64_t col[2] = {d->type.dims[0], 1};
  if (WANT(0)) {
    Node *s = ib_un(B, OP_SOFTMAX, l);
    Node *t = MUL(g, ib_reshape(B, d, 2, col));
    ACC(0, MUL(s, BIN(OP_SUB, t, sum_axis(gc, MUL(t, s), 1))));
  }
  if (WANT(2)) {
    Node *in[3] = {l, X(1), ib_fill(B, d->type, 1)};
    Node *q = ib_finish(B, ib_op(B, n->op, in, 3));
    int64_t ax = 1;
    ACC(2, ib_reduce(B, OP_REDUCE_SUM, MUL(g, q), &ax, 1, false));
  }
  return true;
}

/* ---- shape and data movement ---- */

bool vjp_reshape(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, ib_reshape_as(B, g, &n->in[0]->type));
  return true;
}
bool vjp_transpose(GradCtx *gc, const Node *n, Node *g) {
  int k;
  const int64_t *p = ir_attr_ints(n, ATTR_PERM, &k);
  int64_t inv[RLX_MAX_RANK];
  for (int i = 0; i < k; i++) inv[p[i]] = i;
  ACC(0, ib_transpose(B, g, inv));
  return true;
}
static int norm_axis(const Node *n, int rank) {
  int64_t a = ir_attr_int(n, ATTR_AXIS, 0);
  return (int)(a < 0 ? a + rank : a);
}
bool vjp_concat(GradCtx *gc, const Node *n, Node *g) {
  int ax = norm_axis(n, n->type.rank);
  int64_t off = 0;
  for (int i = 0; i < n->nin; i++) {
    int64_t len = n->in[i]->type.dims[ax];
    if (WANT(i)) ACC(i, ib_narrow(B, g, ax, off, len));
    off += len;
  }
  return true;
}
/* narrow: the gradient padded with zeros (simplify merges the zeros
 * when several narrows of one value are summed) */
bool vjp_narrow(GradCtx *gc, const Node *n, Node *g) {
  const Type *xt = &n->in[0]->type;
  int ax = norm_axis(n, xt->rank);
  int64_t s = ir_attr_int(n, ATTR_START, 0), l = ir_attr_int(n, ATTR_LEN, 0);
  int64_t rest = xt->dims[ax] - s - l;
  Node *parts[3];
  int k = 0;
  Type zt = *xt;
  if (s > 0) {
    zt.dims[ax] = s;
    parts[k++] = ib_fill(B, zt, 0);
  }
  parts[k++] = g;
  if (rest > 0) {
    zt.dims[ax] = rest;
    parts[k++] = ib_fill(B, zt, 0);
  }
  ACC(0, ib_concat(B, parts, k, ax));
  return true;
}
bool vjp_gather(GradCtx *gc, const Node *n, Node *g) {
  const Type *t = &n->in[0]->type;
  Node *in[2] = {g, X(1)};
  Node *r = ib_op(B, OP_GATHER_BACKWARD, in, 2);
  ir_attr_set_int(B->c, r, ATTR_AXIS, norm_axis(n, t->rank));
  ir_attr_set_ints(B->c, r, ATTR_SHAPE, t->dims, t->rank);
  ACC(0, ib_finish(B, r));
  return true;
}
bool vjp_gather_backward(GradCtx *gc, const Node *n, Node *g) {
  Node *in[2] = {g, X(1)};
  Node *r = ib_op(B, OP_GATHER, in, 2);
  ir_attr_set_int(B->c, r, ATTR_AXIS, ir_attr_int(n, ATTR_AXIS, 0));
  ACC(0, ib_finish(B, r));
  return true;
}
bool vjp_scatter_add(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, BIN(OP_GATHER, g, X(1)));
  return true;
}

/* ---- backward ops (second order) ---- */

bool vjp_relu_backward(GradCtx *gc, const Node *n, Node *g) {
  /* d/dx is zero almost everywhere: an exact zero, still a gradient */
  if (WANT(0)) ACC(0, ib_fill(B, n->in[0]->type, 0));
  if (WANT(1)) ACC(1, BIN(OP_RELU_BACKWARD, X(0), g));
  return true;
}
/* (x, dy) -> dy * f'(x): dy gets f'(x) * g; x gets g * dy * f''(x) */
bool vjp_act_backward(GradCtx *gc, const Node *n, Node *g) {
  const char *kind = ir_attr_word(n, ATTR_KIND);
  if (WANT(1)) {
    Node *in[2] = {X(0), g};
    Node *r = ib_op(B, OP_ACTIVATION_BACKWARD, in, 2);
    ir_attr_set_word(B->c, r, ATTR_KIND, kind);
    ACC(1, ib_finish(B, r));
  }
  if (!WANT(0)) return true;
  Node *f2 = ad_act_second(B, kind, X(0), DT);
  /* piecewise-linear kinds: an exact zero, still a gradient */
  ACC(0, f2 ? MUL(MUL(g, X(1)), f2) : ib_fill(B, n->in[0]->type, 0));
  return true;
}

/* ---- control flow and user functions ---- */

bool vjp_custom_fn(GradCtx *gc, const Node *n, Node *g) {
  Graph *v = ir_attr_graph(n, ATTR_VJP);
  if (!v)
    return diag_error(B->c, n->loc, "custom_fn: reverse mode needs a vjp "
                      "body (this one has only a jvp body)");
  Node **args = arena_alloc(B->c->arena, sizeof(Node *) *
                                             (size_t)(v->nargs + 1));
  for (int i = 0; i < v->nargs; i++) {
    const char *nm = v->args[i]->name;
    args[i] = i < n->nin ? X(i)
        : nm && !strcmp(nm, "primal_output") ? Y : g;
  }
  Node **r = ib_inline(B, v, args);
  bool ok = true;
  for (int i = 0; i < n->nin && i < v->nret; i++) {
    char a[128], b2[128];
    if (!type_eq(&r[i]->type, &n->in[i]->type) &&
        (dt_is_float(n->in[i]->type.dt) || dt_is_complex(n->in[i]->type.dt)))
      ok = diag_error(B->c, n->loc, "custom_fn: vjp body '%s' returns %s "
                      "for operand %d of type %s", v->name,
                      type_str(&r[i]->type, a, sizeof a), i,
                      type_str(&n->in[i]->type, b2, sizeof b2));
    else
      ACC(i, r[i]);
  }
  return ok;
}
bool vjp_unprepared(GradCtx *gc, const Node *n, Node *g) {
  return diag_error(B->c, n->loc, "internal: '%s' reached the reverse walk "
                    "before the AD preparation passes", op_name(n->op));
}
/* scan_backward*: lowered by lower_scan_bwd before any AD pass. */
bool vjp_lowered(GradCtx *gc, const Node *n, Node *g) {
  return diag_error(B->c, n->loc, "internal: '%s' reached the reverse walk "
                    "(lower_scan_bwd lowers it first)", op_name(n->op));
}
bool vjp_scan(GradCtx *gc, const Node *n, Node *g) {
  return scan_vjp(gc, n, g);
}

/* ---- the table: every ops.def row must name its rule ---- */

static const VjpRule rules[OP_COUNT] = {
#define OP(id, name, nmin, nmax, flags, rule, vjp, jvp, emit, attrs, math) \
  [OP_##id] = vjp_##vjp,
#include "ir/ops.def"
#undef OP
};

bool vjp_apply(GradCtx *gc, const Node *n, Node *g) {
  return rules[n->op](gc, n, g);
}

/* For tests and docs: does reverse mode support op (by its rule, or
 * through the pass that rewrites it before the grad pass)? */
bool vjp_supported(Op op) {
  return rules[op] != vjp_unsupported && rules[op] != vjp_none;
}
