/* shape_misc.c: rules for fused blocks (language.md 6.7), complex
 * numbers, signal ops and randomness (6.8). Quantization is in
 * shape_quant.c.
 *
 * fused_transformer_layer: h [B, S, E] with E = heads*head_dim and
 *   I = intermediate; qkv_w [E, 3E], qkv_b [3E], out_w [E, E], out_b,
 *   ln1_g, ln1_b [E], fc1_w [E, I], fc1_b [I], fc2_w [I, E], fc2_b,
 *   ln2_g, ln2_b [E] (all h's float dtype), mask [B, S] (custom mask:
 *   bool or real). Result: h's type.
 * selective_scan(x, delta [b,s,h], a [h,n], b, c [b,s,n]), n =
 *   state_size -> x's type. gated_delta_net(q, k, v [b,s,H,n],
 *   g, beta [b,s,H]) -> q's type. One float dtype throughout.
 * conjugate, fft: c64 -> c64 (fft rank >= 1). complex_norm_sq, real,
 *   imag: c64 -> f32. complex(re, im): f32 operands, broadcast -> c64.
 * log_mel(spec [..., F], filters [F, M]) -> [..., M], one float dtype.
 * rng_uniform/normal: f32[shape]. sample(logits [N, C]) -> i64 [N];
 *   temperature >= 0 (0 = argmax), 0 <= top_k <= C (0 = off),
 *   0 < top_p <= 1.
 */
#include "ir/shape_internal.h"

#include <math.h>

enum { SYM_1, SYM_B, SYM_S, SYM_E, SYM_3E, SYM_I };
static const struct { const char *name; int rank; int d[3]; } tl_ops[] = {
  {"h", 3, {SYM_B, SYM_S, SYM_E}},     {"qkv_w", 2, {SYM_E, SYM_3E}},
  {"qkv_b", 1, {SYM_3E}},              {"out_w", 2, {SYM_E, SYM_E}},
  {"out_b", 1, {SYM_E}},               {"ln1_g", 1, {SYM_E}},
  {"ln1_b", 1, {SYM_E}},               {"fc1_w", 2, {SYM_E, SYM_I}},
  {"fc1_b", 1, {SYM_I}},               {"fc2_w", 2, {SYM_I, SYM_E}},
  {"fc2_b", 1, {SYM_E}},               {"ln2_g", 1, {SYM_E}},
  {"ln2_b", 1, {SYM_E}},               {"mask", 2, {SYM_B, SYM_S}},
};

bool shape_transformer(Ctx *c, Node *n) {
  const Type *h = IN(n, 0);
  int64_t hd, dd, im, e;
  if (!sh_want_float(c, n, 0, "h")) return false;
  if (h->rank != 3)
    return sh_err(c, n, "h must be [B, S, hidden], got %s", TS(h));
  if (!sh_int_attr(c, n, ATTR_HEADS, 1, RLX_MAX_ELEMS, &hd) ||
      !sh_int_attr(c, n, ATTR_HEAD_DIM, 1, RLX_MAX_ELEMS, &dd) ||
      !sh_int_attr(c, n, ATTR_INTERMEDIATE, 1, RLX_MAX_ELEMS, &im))
    return false;
  if (__builtin_mul_overflow(hd, dd, &e) || e != h->dims[2])
    return sh_err(c, n, "heads %lld * head_dim %lld != hidden size %lld",
                  (long long)hd, (long long)dd, (long long)h->dims[2]);
  int64_t sym[] = {1, h->dims[0], h->dims[1], e, 3 * e, im};
  for (int i = 1; i < 14; i++) {
    Type t = {.dt = h->dt, .rank = tl_ops[i].rank};
    for (int j = 0; j < t.rank; j++) t.dims[j] = sym[tl_ops[i].d[j]];
    if (i == 13) {
      if (dt_is_complex(IN(n, i)->dt))
        return sh_err(c, n, "mask must be bool or real, got c64");
      t.dt = IN(n, i)->dt;
    }
    if (!sh_want_type(c, n, i, tl_ops[i].name, &t)) return false;
  }
  n->type = *h;
  return true;
}

/* Operand i must be dt[d0, d1, ...] (rank r). */
static bool want_dims(Ctx *c, const Node *n, int i, const char *what,
                      DType dt, int r, int64_t d0, int64_t d1, int64_t d2,
                      int64_t d3) {
  int64_t d[4] = {d0, d1, d2, d3};
  Type t = type_make(dt, r, d);
  return sh_want_type(c, n, i, what, &t);
}

bool shape_selective_scan(Ctx *c, Node *n) {
  const Type *x = IN(n, 0);
  int64_t ns;
  if (!sh_want_float(c, n, 0, "x")) return false;
  if (!sh_int_attr(c, n, ATTR_STATE_SIZE, 1, RLX_MAX_ELEMS, &ns))
    return false;
  if (x->rank != 3) return sh_err(c, n, "x must be [b, s, h], got %s",
                                  TS(x));
  int64_t b = x->dims[0], s = x->dims[1], h = x->dims[2];
  DType dt = x->dt;
  if (!want_dims(c, n, 1, "delta", dt, 3, b, s, h, 0) ||
      !want_dims(c, n, 2, "a", dt, 2, h, ns, 0, 0) ||
      !want_dims(c, n, 3, "b", dt, 3, b, s, ns, 0) ||
      !want_dims(c, n, 4, "c", dt, 3, b, s, ns, 0))
    return false;
  n->type = *x;
  return true;
}

bool shape_gated_delta_net(Ctx *c, Node *n) {
  const Type *q = IN(n, 0);
  int64_t ns;
  if (!sh_want_float(c, n, 0, "q")) return false;
  if (!sh_int_attr(c, n, ATTR_STATE_SIZE, 1, RLX_MAX_ELEMS, &ns))
    return false;
  if (q->rank != 4 || q->dims[3] != ns)
    return sh_err(c, n, "q must be [b, s, H, %lld] (state_size), got %s",
                  (long long)ns, TS(q));
  int64_t b = q->dims[0], s = q->dims[1], h = q->dims[2];
  if (!sh_want_type(c, n, 1, "k", q) || !sh_want_type(c, n, 2, "v", q) ||
      !want_dims(c, n, 3, "g", q->dt, 3, b, s, h, 0) ||
      !want_dims(c, n, 4, "beta", q->dt, 3, b, s, h, 0))
    return false;
  n->type = *q;
  return true;
}

static bool want_c64(Ctx *c, const Node *n, int i, const char *what) {
  if (IN(n, i)->dt == DT_C64) return true;
  return sh_err(c, n, "%s must be c64, got %s", what, TS(IN(n, i)));
}

bool shape_complex_unary(Ctx *c, Node *n) {
  if (!want_c64(c, n, 0, "operand")) return false;
  if (n->op == OP_FFT && IN(n, 0)->rank < 1)
    return sh_err(c, n, "operand must have rank >= 1, got %s",
                  TS(IN(n, 0)));
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

/* spec [..., F] x filters [F, M] -> [..., M] into out. */
static bool log_mel_out(Ctx *c, const Node *n, Type *out) {
  const Type *s = IN(n, 0), *f = IN(n, 1);
  if (!sh_want_float(c, n, 0, "spec") || !sh_same_dtype(c, n, 0, 1))
    return false;
  if (s->rank < 1)
    return sh_err(c, n, "spec must have rank >= 1, got %s", TS(s));
  if (f->rank != 2 || f->dims[0] != s->dims[s->rank - 1])
    return sh_err(c, n, "filters must be [%lld, M] to match spec %s, got "
                  "%s", (long long)s->dims[s->rank - 1], TS(s), TS(f));
  *out = *s;
  out->dims[s->rank - 1] = f->dims[1];
  return true;
}

bool shape_log_mel(Ctx *c, Node *n) { return log_mel_out(c, n, &n->type); }

bool shape_log_mel_bwd(Ctx *c, Node *n) {
  Type o;
  if (!log_mel_out(c, n, &o) || !sh_want_type(c, n, 2, "dy", &o))
    return false;
  n->type = *IN(n, 0);
  return true;
}

bool shape_rng(Ctx *c, Node *n) {
  int k;
  const int64_t *v = ir_attr_ints(n, ATTR_SHAPE, &k);
  if (k > RLX_MAX_RANK)
    return sh_err(c, n, "shape has rank %d, the maximum is %d", k,
                  RLX_MAX_RANK);
  Type t = {.dt = DT_F32, .rank = k};
  for (int i = 0; i < k; i++) {
    if (v[i] < 0 || v[i] > RLX_MAX_ELEMS)
      return sh_err(c, n, "shape[%d] = %lld is not a valid dimension", i,
                    (long long)v[i]);
    t.dims[i] = v[i];
  }
  n->type = t;
  return true;
}

bool shape_sample(Ctx *c, Node *n) {
  const Type *l = IN(n, 0);
  int64_t tk;
  if (!sh_want_float(c, n, 0, "logits")) return false;
  if (l->rank != 2 || l->dims[1] < 1)
    return sh_err(c, n, "logits must be [N, C] with C >= 1, got %s",
                  TS(l));
  double t = ir_attr_float(n, ATTR_TEMPERATURE, 1.0);
  double p = ir_attr_float(n, ATTR_TOP_P, 1.0);
  if (!(t >= 0) || isinf(t))
    return sh_err(c, n, "temperature must be finite and >= 0, got %g", t);
  if (!(p > 0 && p <= 1))
    return sh_err(c, n, "top_p must be in (0, 1], got %g", p);
  if (!sh_int_attr(c, n, ATTR_TOP_K, 0, l->dims[1], &tk)) return false;
  n->type = type_make(DT_I64, 1, l->dims);
  return true;
}
