/* simplify.c: constant folding and algebraic identities, so gradient
 * graphs stay lean.
 *
 * Runs with --grad on the gradient graph (and, through
 * pass_simplify_graph, on the backward scan bodies AD creates). Rules,
 * each applied only when the result has exactly the node's type:
 *   - folding: unary/binary float elementwise ops on constants (f32,
 *     f64; at most FOLD_MAX elements; all-splat operands give a splat),
 *     reshape/expand of a splat, cast between float types;
 *   - x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1 -> x; neg(neg(x)) -> x;
 *   - transpose with identity perm -> x; transpose of transpose -> one;
 *   - reshape to the same shape -> x; reshape of reshape -> one;
 *   - expand to the same shape, narrow of the whole axis -> x;
 *   - gather with constant in-range indices along an axis that x
 *     broadcasts (expand of size 1) -> x, when the type is unchanged
 *     (reversing a broadcast, say);
 *   - concat(a...) + concat(b...) along one axis where one side's
 *     pieces are zeros (narrow/concat VJPs; zeros of a half dtype as a
 *     cast of zeros): the sum of the pieces, pairwise, as one concat
 *     (x + 0 drops the zero additions);
 *   - relu_backward(x, max_pool2d_backward(x, g)) (relu then max pool):
 *     the mask taken on the pooled size, max_pool2d_backward(x,
 *     relu_backward(max_pool2d(x), g)), the same values.
 * Folding evaluates in double and rounds once to the node's dtype.
 */
#include "passes/cleanup/cleanup.h"

#include <math.h>
#include <string.h>

#define FOLD_MAX 4096

static bool is_const_all(const Node *n, double v) {
  if (n->op != OP_CONST) return false;
  int64_t m = n->splat ? 1 : type_numel(&n->type);
  if (m > FOLD_MAX) return false;
  if (!dt_is_float(n->type.dt) && !dt_is_complex(n->type.dt)) return false;
  for (int64_t i = 0; i < m; i++) {
    if (ir_const_get(n, i) != v) return false;
    if (dt_is_complex(n->type.dt) && ((const float *)n->data)[2 * i + 1])
      return false;
  }
  return true;
}

/* All zeros: a zero constant, or one cast to a float type (how a
 * gradient makes f16/bf16 zeros). */
static bool is_zero(const Node *n) {
  return is_const_all(n, 0) || (n->op == OP_CAST && dt_is_float(n->type.dt) &&
                                is_const_all(n->in[0], 0));
}

static bool same_type(const Node *a, const Node *b) {
  return type_eq(&a->type, &b->type);
}

/* ---- folding ---- */

/* The value of op at constant operands, in double; false for an op with
 * no rule here (it is then left alone: folding is an optimization, so a
 * new op needs no case). */
static bool fold1(Op op, double x, double *r) {
  double v;
  switch (op) {
  case OP_RELU: v = x > 0 ? x : 0; break;
  case OP_GELU: v = 0.5 * x * (1 + erf(x / sqrt(2.0))); break;
  case OP_GELU_TANH:
    v = 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    break;
  case OP_SILU: v = x / (1 + exp(-x)); break;
  case OP_SIGMOID: v = 1 / (1 + exp(-x)); break;
  case OP_TANH: v = tanh(x); break;
  case OP_EXP: v = exp(x); break;
  case OP_LOG: v = log(x); break;
  case OP_SQRT: v = sqrt(x); break;
  case OP_RSQRT: v = 1 / sqrt(x); break;
  case OP_NEG: v = -x; break;
  case OP_ABS: v = fabs(x); break;
  case OP_SIN: v = sin(x); break;
  case OP_COS: v = cos(x); break;
  case OP_TAN: v = tan(x); break;
  case OP_ATAN: v = atan(x); break;
  case OP_ROUND: v = nearbyint(x); break;
  case OP_CAST: v = x; break;
  default: return false;
  }
  *r = v;
  return true;
}

static bool fold2(Op op, double a, double b, double *r) {
  double v;
  switch (op) {
  case OP_ADD: v = a + b; break;
  case OP_SUB: v = a - b; break;
  case OP_MUL: v = a * b; break;
  case OP_DIV: v = a / b; break;
  case OP_MIN: v = a <= b ? a : b; break;
  case OP_MAX: v = a >= b ? a : b; break;
  case OP_POW: v = pow(a, b); break;
  default: return false;
  }
  *r = v;
  return true;
}

/* Element i of operand k, broadcast to n's shape. */
static double bcast_get(const Node *n, int k, int64_t i) {
  const Node *x = n->in[k];
  if (x->splat) return ir_const_get(x, 0);
  int64_t idx = 0, stride = 1;
  int off = n->type.rank - x->type.rank;
  for (int d = n->type.rank - 1; d >= 0; d--) {
    int64_t coord = i % n->type.dims[d];
    i /= n->type.dims[d];
    if (d < off) continue;
    int64_t xd = x->type.dims[d - off];
    if (xd != 1) idx += coord * stride;
    stride *= xd;
  }
  return ir_const_get(x, idx);
}

static bool foldable(const Node *n) {
  DType dt = n->type.dt;
  if (dt != DT_F32 && dt != DT_F64) return false;
  bool un = op_has(n->op, OPF_UNARY) && n->op != OP_STOP_GRADIENT;
  bool bin = op_has(n->op, OPF_BINARY);
  bool cast = n->op == OP_CAST && dt_is_float(n->in[0]->type.dt) &&
              n->in[0]->type.dt != DT_F16 && n->in[0]->type.dt != DT_BF16;
  double v;
  if (!un && !bin && !cast) return false;
  if (n->nin == 1 ? !fold1(n->op, 0, &v) : !fold2(n->op, 0, 1, &v))
    return false; /* no rule for op */
  for (int k = 0; k < n->nin; k++)
    if (n->in[k]->op != OP_CONST || n->in[k]->type.dt != n->in[0]->type.dt)
      return false;
  return true;
}

static Node *fold(IrBuilder *b, Node *n) {
  bool splat = true;
  for (int k = 0; k < n->nin; k++) splat = splat && n->in[k]->splat;
  int64_t m = splat ? 1 : type_numel(&n->type);
  if (m > FOLD_MAX) return n;
  double v;
  Node *r = ir_const_new(b->c, b->g, n->type, NULL, splat, n->loc);
  for (int64_t i = 0; i < m; i++) {
    if (n->nin == 1) fold1(n->op, bcast_get(n, 0, i), &v);
    else fold2(n->op, bcast_get(n, 0, i), bcast_get(n, 1, i), &v);
    if (n->type.dt == DT_F32) ((float *)r->data)[i] = (float)v;
    else ((double *)r->data)[i] = v;
  }
  return r;
}

/* reshape / expand of a splat constant: a splat of the new type */
static Node *respat(IrBuilder *b, Node *n) {
  Node *x = n->in[0];
  Node *r = ir_const_new(b->c, b->g, n->type, x->data, true, n->loc);
  return r;
}

/* ---- identities ---- */

static Node *simp_arith(Node *n) {
  Node *a = n->in[0], *c = n->nin > 1 ? n->in[1] : NULL;
  switch (n->op) {
  case OP_ADD:
    if (is_zero(c) && same_type(a, n)) return a;
    if (is_zero(a) && same_type(c, n)) return c;
    return n;
  case OP_SUB:
    return is_zero(c) && same_type(a, n) ? a : n;
  case OP_MUL:
    if (is_const_all(c, 1) && same_type(a, n)) return a;
    if (is_const_all(a, 1) && same_type(c, n)) return c;
    return n;
  case OP_DIV:
    return is_const_all(c, 1) && same_type(a, n) ? a : n;
  case OP_NEG:
    return a->op == OP_NEG ? a->in[0] : n;
  default:
    return n;
  }
}

static Node *simp_transpose(IrBuilder *b, Node *n) {
  int k;
  const int64_t *q = ir_attr_ints(n, ATTR_PERM, &k);
  Node *x = n->in[0];
  int64_t r[RLX_MAX_RANK];
  for (int i = 0; i < k; i++) r[i] = q[i];
  if (x->op == OP_TRANSPOSE) {
    int kp;
    const int64_t *p = ir_attr_ints(x, ATTR_PERM, &kp);
    for (int i = 0; i < k; i++) r[i] = p[q[i]];
    x = x->in[0];
  }
  bool ident = true;
  for (int i = 0; i < k; i++) ident = ident && r[i] == i;
  if (ident) return x;
  if (x == n->in[0]) return n;
  return ib_transpose(b, x, r);
}

/* Does n (a reshape or expand of x) become a splat constant? Not with
 * a dynamic shape: a constant has a static type (language.md 2). */
static bool to_splat(const Node *x, const Node *n) {
  return x->op == OP_CONST && x->splat && type_is_static(&n->type);
}

static Node *simp_shape(IrBuilder *b, Node *n) {
  Node *x = n->in[0];
  switch (n->op) {
  case OP_RESHAPE:
    if (x->op == OP_RESHAPE) x = x->in[0];
    if (same_type(x, n)) return x;
    if (to_splat(x, n)) return respat(b, n);
    return x == n->in[0] ? n : ib_reshape_as(b, x, &n->type);
  case OP_EXPAND:
    if (same_type(x, n)) return x;
    return to_splat(x, n) ? respat(b, n) : n;
  case OP_NARROW:
    return same_type(x, n) ? x : n;
  case OP_TRANSPOSE:
    return simp_transpose(b, n);
  default:
    return n;
  }
}

/* ---- zeros from narrow/concat VJPs ---- */

/* Split points of a concat along its axis, into cuts[0..k]. */
static int concat_cuts(const Node *c, int ax, int64_t *cuts) {
  cuts[0] = 0;
  for (int i = 0; i < c->nin; i++)
    cuts[i + 1] = cuts[i] + c->in[i]->type.dims[ax];
  return c->nin;
}

static int concat_axis(const Node *c) {
  int64_t a = ir_attr_int(c, ATTR_AXIS, 0);
  return (int)(a < 0 ? a + c->type.rank : a);
}

/* The piece of concat c covering [lo, hi) along ax: the operand if it
 * matches exactly, a zero constant if the covering operand is zero,
 * else NULL (no simplification). */
static Node *piece(IrBuilder *b, const Node *c, int ax, int64_t lo,
                   int64_t hi) {
  int64_t cuts[257];
  int k = concat_cuts(c, ax, cuts);
  for (int i = 0; i < k; i++) {
    if (cuts[i] > lo || cuts[i + 1] < hi) continue;
    if (cuts[i] == lo && cuts[i + 1] == hi) return c->in[i];
    if (!is_zero(c->in[i])) return NULL;
    Type t = c->type;
    t.dims[ax] = hi - lo;
    return ib_fill(b, t, 0);
  }
  return NULL;
}

static Node *simp_add_concat(IrBuilder *b, Node *n) {
  Node *p = n->in[0], *q = n->in[1];
  if (p->op != OP_CONCAT || q->op != OP_CONCAT || !same_type(p, q) ||
      !same_type(p, n) || p->nin > 256 || q->nin > 256)
    return n;
  int ax = concat_axis(p);
  if (concat_axis(q) != ax) return n;
  int64_t cp[257], cq[257], cuts[514];
  int np = concat_cuts(p, ax, cp), nq = concat_cuts(q, ax, cq), m = 0;
  bool zero = false;
  for (int i = 0; i < np; i++) zero = zero || is_zero(p->in[i]);
  for (int i = 0; i < nq; i++) zero = zero || is_zero(q->in[i]);
  if (!zero) return n;
  for (int i = 0, j = 0; i <= np || j <= nq;) { /* merge the cut lists */
    int64_t v = j > nq || (i <= np && cp[i] <= cq[j]) ? cp[i] : cq[j];
    if (i <= np && cp[i] == v) i++;
    if (j <= nq && cq[j] == v) j++;
    cuts[m++] = v;
  }
  Node *parts[513];
  for (int i = 0; i + 1 < m; i++) {
    Node *x = piece(b, p, ax, cuts[i], cuts[i + 1]);
    Node *y = piece(b, q, ax, cuts[i], cuts[i + 1]);
    if (!x || !y) return n;
    parts[i] = is_zero(x) ? y : is_zero(y) ? x
             : ib_bin(b, OP_ADD, x, y);
  }
  return ib_concat(b, parts, m - 1, ax);
}

static bool const_in_range(const Node *idx, int64_t n) {
  if (idx->op != OP_CONST) return false;
  int64_t m = idx->splat ? 1 : type_numel(&idx->type);
  for (int64_t i = 0; i < m; i++) {
    double v = ir_const_get(idx, i);
    if (v < 0 || v >= (double)n || v != (double)(int64_t)v) return false;
  }
  return true;
}

static Node *simp_gather(Node *n) {
  Node *x = n->in[0];
  int ax = concat_axis(n);
  if (x->op != OP_EXPAND || !same_type(x, n) ||
      x->in[0]->type.rank != x->type.rank || x->in[0]->type.dims[ax] != 1 ||
      !const_in_range(n->in[1], x->type.dims[ax]))
    return n;
  return x;
}

/* ---- relu under a max pool ---- */

/* Kernel, stride (default: the kernel) and padding (default: 0) of a
 * 2-D pooling node. */
static void pool_geom(const Node *n, int64_t v[6]) {
  int k;
  const int64_t *kr = ir_attr_ints(n, ATTR_KERNEL, &k);
  const int64_t *s = ir_attr_ints(n, ATTR_STRIDE, &k);
  const int64_t *p = ir_attr_ints(n, ATTR_PADDING, &k);
  for (int i = 0; i < 2; i++) {
    v[i] = kr[i];
    v[2 + i] = s ? s[i] : kr[i];
    v[4 + i] = p ? p[i] : 0;
  }
}

/* max_pool2d(x) with the windows of pooling node w: one already in the
 * graph, else a new one. */
static Node *max_pool_of(IrBuilder *b, Node *x, const Node *w) {
  int64_t a[6], c[6];
  pool_geom(w, a);
  for (int i = 0; i < b->g->nnodes; i++) {
    Node *m = b->g->nodes[i];
    if (m->op != OP_MAX_POOL2D || m->in[0] != x) continue;
    pool_geom(m, c);
    if (!memcmp(a, c, sizeof a)) return m;
  }
  static const AttrId ids[3] = {ATTR_KERNEL, ATTR_STRIDE, ATTR_PADDING};
  Node *m = ib_op(b, OP_MAX_POOL2D, &x, 1);
  for (int i = 0; i < 3; i++) {
    int k;
    const int64_t *v = ir_attr_ints(w, ids[i], &k);
    if (v) ir_attr_set_ints(b->c, m, ids[i], v, k);
  }
  return ib_finish(b, m);
}

/* relu_backward(x, max_pool2d_backward(x, g)) ->
 * max_pool2d_backward(x, relu_backward(max_pool2d(x), g)), the mask on
 * the pooled size: a window's first maximum has x > 0 exactly when the
 * window's max does, and every other cell is 0 either way (x > 0 ?
 * 0 + g : 0 against 0 + (max > 0 ? g : 0)), so the values are the same. */
static Node *simp_relu_pool(IrBuilder *b, Node *n) {
  Node *x = n->in[0], *p = n->in[1];
  if (p->op != OP_MAX_POOL2D_BACKWARD || p->in[0] != x || !same_type(p, n))
    return n;
  Node *r[2] = {max_pool_of(b, x, p), p->in[1]};
  Node *in[2] = {x, ib_finish(b, ib_op(b, OP_RELU_BACKWARD, r, 2))};
  return ib_clone(b, p, in);
}

static Node *rewrite_simp(IrBuilder *b, Node *n, void *ud) {
  (void)ud;
  if (op_has(n->op, OPF_PSEUDO)) return n;
  if (foldable(n)) return fold(b, n);
  Node *r = simp_arith(n);
  if (r != n) return r;
  if (n->op == OP_ADD) return simp_add_concat(b, n);
  if (n->op == OP_GATHER) return simp_gather(n);
  if (n->op == OP_RELU_BACKWARD) return simp_relu_pool(b, n);
  return simp_shape(b, n);
}

void pass_simplify_graph(Ctx *c, Graph *g) {
  ib_rewrite(c, g, rewrite_simp, NULL);
}

bool pass_simplify(Unit *u) {
  Graph *g[4] = UNIT_DERIVED(u);
  for (int i = 0; i < 4; i++)
    if (g[i]) pass_simplify_graph(u->ctx, g[i]);
  return true;
}
