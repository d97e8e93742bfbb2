/* quant_expand.c: fake quantization (language.md 7, "Fake
 * quantization"; ops-detail.md "Quantization") re-expressed through
 * ordinary ops, for the lower_quant pass and the VJP / JVP rules of the
 * fake-quantization ops (vjp_rules_quant.c, jvp_rules_quant.c).
 *
 * ad_quant_expand() writes each of the five fake-quantization ops as
 * elementwise ops plus one reduction: the max-abs reduction of
 * fake_quantize's scale, the channel sum of lsq's ds. Code generation
 * compiles the ops through it (passes/lower/lower_quant.c), so they
 * fuse and vectorize like any elementwise chain; the backward ops are
 * differentiated (VJP in vjp_rules_quant.c, JVP in jvp_rules_quant.c)
 * by running autodiff over it, which gives exact zeros where they are
 * piecewise constant.
 *
 * Conventions: Q = 2^(bits-1) - 1; S = max(scale, 1e-12) with scale =
 * max|x| / Q (fake_quantize, per tensor or per `axis` channel) or the
 * lsq operand (f16: floor 2^-24, as 1e-12 is not an f16); rounding is
 * half to even (round); the grid value is clamp(round(x/S), -Q, Q) * S.
 * ψ(z) = round(z) - z for |z| <= Q, else the clamped grid value ±Q;
 * lsq's ds is computed at S and passed straight through the floor (a
 * scale that went non-positive keeps a gradient).
 */
#include "passes/ad/ad.h"

#include <math.h>
#include <string.h>

static double q_max(const Node *n) {
  return (double)(((int64_t)1 << (ir_attr_int(n, ATTR_BITS, 8) - 1)) - 1);
}

/* The channel axis of n over x's rank, or -1 (per tensor). */
static int q_axis(const Node *n) {
  if (!ir_attr_present(n, ATTR_AXIS)) return -1;
  int64_t a = ir_attr_int(n, ATTR_AXIS, 0);
  return (int)(a < 0 ? a + n->in[0]->type.rank : a);
}

/* The axes of x other than the channel axis; returns their count. */
static int other_axes(const Node *n, int64_t *axes) {
  int k = 0, a = q_axis(n);
  for (int i = 0; i < n->in[0]->type.rank; i++)
    if (i != a) axes[k++] = i;
  return k;
}

#define QK(v) ib_scalar(b, x->type.dt, (v))
#define QB(op, p, q) ib_bin(b, op, p, q)

Node *ad_quant_lay(IrBuilder *b, const Node *n, Node *s) {
  const Type *xt = &n->in[0]->type;
  int64_t d[RLX_MAX_RANK];
  int a = q_axis(n);
  for (int i = 0; i < xt->rank; i++) d[i] = i == a ? xt->dims[i] : 1;
  return ib_reshape(b, s, xt->rank, d);
}

/* The scale floor: 1e-12, or 2^-24 (the least f16) where 1e-12 would
 * round to 0. */
static double q_floor(DType dt) { return dt == DT_F16 ? 0x1p-24 : 1e-12; }

/* fake_quantize's clip range Q S = max(max|x|, Q 1e-12) over the
 * non-channel axes (kept): exactly max|x| at the largest element. */
static Node *q_range(IrBuilder *b, const Node *n, Node *x) {
  int64_t axes[RLX_MAX_RANK];
  int k = other_axes(n, axes);
  Node *m = ib_un(b, OP_ABS, x);
  if (k) m = ib_reduce(b, OP_REDUCE_MAX, m, axes, k, true);
  return QB(OP_MAX, m, QK(q_max(n) * q_floor(x->type.dt)));
}

/* S of n at x: Q S / Q for fake_quantize (s NULL), else the lsq scale
 * s floored at 1e-12; laid out against x. */
static Node *q_scale(IrBuilder *b, const Node *n, Node *x, Node *s) {
  if (!s) return QB(OP_DIV, q_range(b, n, x), QK(q_max(n)));
  return QB(OP_MAX, ad_quant_lay(b, n, s), QK(q_floor(x->type.dt)));
}

/* clamp(round(z), -Q, Q) */
static Node *grid(IrBuilder *b, const Node *n, Node *x, Node *z) {
  Node *r = QB(OP_MAX, ib_un(b, OP_ROUND, z), QK(-q_max(n)));
  return QB(OP_MIN, r, QK(q_max(n)));
}

/* |z| <= Q */
static Node *inside(IrBuilder *b, const Node *n, Node *x, Node *z) {
  return QB(OP_LE, ib_un(b, OP_ABS, z), QK(q_max(n)));
}

Node *ad_lsq_psi(IrBuilder *b, const Node *n, Node *x, Node *s) {
  Node *z = QB(OP_DIV, x, q_scale(b, n, x, s));
  /* round's own rule is straight-through: ψ's derivative is -1 inside */
  Node *q = ib_un(b, OP_STOP_GRADIENT, grid(b, n, x, z));
  Node *psi = QB(OP_SUB, q, ib_where(b, inside(b, n, x, z), z, QK(0)));
  if (!ir_attr_bool(n, ATTR_GRAD_SCALE, false)) return psi;
  const Type *xt = &x->type;
  if (!type_is_static(xt)) {
    /* elements per scale at run time: the sum of ones over the axes
     * other than the channel (the IR has no op that reads a size) */
    int64_t axes[RLX_MAX_RANK];
    int k = other_axes(n, axes);
    Node *cnt = ib_expand(b, QK(1), xt);
    if (k) cnt = ib_reduce(b, OP_REDUCE_SUM, cnt, axes, k, true);
    cnt = QB(OP_MUL, QB(OP_MAX, cnt, QK(1)), QK(q_max(n)));
    return QB(OP_MUL, psi, ib_un(b, OP_RSQRT, cnt));
  }
  int a = q_axis(n);
  int64_t c = a < 0 || !xt->dims[a] ? 1 : xt->dims[a];
  int64_t share = type_numel(xt) / c; /* elements per scale */
  return QB(OP_MUL, psi, QK(1 / sqrt((double)(share ? share : 1) *
                                     q_max(n))));
}

/* fake_quantize_backward's dx for its ste kind. */
static Node *ste_dx(IrBuilder *b, const Node *n, Node *x, Node *dy) {
  const char *k = ir_attr_word(n, ATTR_STE);
  if (!k || !strcmp(k, "identity")) return dy;
  Node *qs = q_range(b, n, x), *s = QB(OP_DIV, qs, QK(q_max(n)));
  if (!strcmp(k, "clipped"))
    return ib_where(b, QB(OP_LE, ib_un(b, OP_ABS, x), qs), dy, QK(0));
  if (!strcmp(k, "tanh")) {
    Node *t = ib_un(b, OP_TANH, QB(OP_DIV, x, s));
    return QB(OP_MUL, dy, QB(OP_SUB, QK(1), QB(OP_MUL, t, t)));
  }
  Node *h = QB(OP_SUB, QK(1), ib_un(b, OP_ABS, QB(OP_DIV, x, qs)));
  return QB(OP_MUL, dy, ib_un(b, OP_RELU, h)); /* hardtanh */
}

Node *ad_quant_expand(IrBuilder *b, const Node *n, Node *const *a) {
  Node *x = a[0];
  switch (n->op) {
  case OP_FAKE_QUANTIZE: case OP_FAKE_QUANTIZE_LSQ: {
    Node *s = q_scale(b, n, x, n->op == OP_FAKE_QUANTIZE ? NULL : a[1]);
    return QB(OP_MUL, grid(b, n, x, QB(OP_DIV, x, s)), s);
  }
  case OP_FAKE_QUANTIZE_BACKWARD: return ste_dx(b, n, x, a[1]);
  case OP_FAKE_QUANTIZE_LSQ_BACKWARD_X: {
    Node *z = QB(OP_DIV, x, q_scale(b, n, x, a[1]));
    return ib_where(b, inside(b, n, x, z), a[2], QK(0));
  }
  default: { /* lsq_backward_scale: Σ ψ(x/S) dy per channel */
    RLX_ASSERT(n->op == OP_FAKE_QUANTIZE_LSQ_BACKWARD_SCALE);
    Node *r = QB(OP_MUL, ad_lsq_psi(b, n, x, a[1]), a[2]);
    int64_t axes[RLX_MAX_RANK];
    int k = other_axes(n, axes);
    if (k) r = ib_reduce(b, OP_REDUCE_SUM, r, axes, k, false);
    return ib_reshape_as(b, r, &a[1]->type);
  }
  }
}
#undef QK
#undef QB

bool ad_is_fake_quant(Op op) {
  return op == OP_FAKE_QUANTIZE || op == OP_FAKE_QUANTIZE_LSQ ||
         op == OP_FAKE_QUANTIZE_BACKWARD ||
         op == OP_FAKE_QUANTIZE_LSQ_BACKWARD_X ||
         op == OP_FAKE_QUANTIZE_LSQ_BACKWARD_SCALE;
}

Graph *ad_quant_graph(Ctx *c, const Node *n) {
  Graph *s = ib_graph_detached(c, "quant_expand", n->loc);
  Node *a[3];
  RLX_ASSERT(n->nin <= 3);
  for (int i = 0; i < n->nin; i++) {
    char nm[8] = {'a', (char)('0' + i), 0};
    a[i] = ir_arg_new(c, s, OP_INPUT, nm, n->in[i]->type, n->loc);
  }
  IrBuilder sb = {c, s, n->loc};
  Node *r = ad_quant_expand(&sb, n, a);
  ir_set_rets(c, s, &r, 1);
  return s;
}
