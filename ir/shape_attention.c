/* shape_attention.c: rules for attention (language.md 6.5) and
 * attention_backward (6.9).
 *
 * attention(q, k, v [, mask]): q, k, v one float dtype, all rank 3
 *   [B, L, H*D] or all rank 4 [B, H, L, D]; k and v share Lk. Rank 3
 *   needs heads or head_dim (the other is derived; both must multiply
 *   to the last dim); rank 4 checks them against the dims when given.
 *   mask=custom|bias need the extra operand, other kinds must not have
 *   it: custom [B, Lk] (bool or real numeric), bias [B, H, Lq, Lk] of
 *   q's dtype. window only (and required) with sliding_window, in
 *   [0, 2^40]; softcap > 0; scale and softcap finite, also rounded to
 *   f32 unless q is f64. Output: q's type.
 * attention_backward (q, k, v, dy [, mask], wrt) -> q's, k's or v's
 *   type (wrt=bias, only with mask=bias: the bias operand's); dy has
 *   q's type.
 */
#include "ir/shape_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Heads and head dim of rank-3 operand dims [B, L, E]. */
static bool heads_rank3(Ctx *c, const Node *n, int64_t e) {
  bool hp = ir_attr_present(n, ATTR_HEADS);
  bool dp = ir_attr_present(n, ATTR_HEAD_DIM);
  int64_t h = 0, d = 0;
  if (!hp && !dp)
    return sh_err(c, n, "rank-3 operands need heads or head_dim");
  if (hp && !sh_int_attr(c, n, ATTR_HEADS, 1, RLX_MAX_ELEMS, &h))
    return false;
  if (dp && !sh_int_attr(c, n, ATTR_HEAD_DIM, 1, RLX_MAX_ELEMS, &d))
    return false;
  int64_t hd;
  if (hp && dp && (__builtin_mul_overflow(h, d, &hd) || hd != e))
    return sh_err(c, n, "heads %lld * head_dim %lld != last dimension "
                  "%lld", (long long)h, (long long)d, (long long)e);
  if (e % (hp ? h : d))
    return sh_err(c, n, "last dimension %lld is not divisible by %s %lld",
                  (long long)e, hp ? "heads" : "head_dim",
                  (long long)(hp ? h : d));
  return true;
}

static bool heads_rank4(Ctx *c, const Node *n, const Type *q) {
  if (ir_attr_present(n, ATTR_HEADS) &&
      ir_attr_int(n, ATTR_HEADS, 0) != q->dims[1])
    return sh_err(c, n, "heads %lld does not match q %s",
                  (long long)ir_attr_int(n, ATTR_HEADS, 0), TS(q));
  if (ir_attr_present(n, ATTR_HEAD_DIM) &&
      ir_attr_int(n, ATTR_HEAD_DIM, 0) != q->dims[3])
    return sh_err(c, n, "head_dim %lld does not match q %s",
                  (long long)ir_attr_int(n, ATTR_HEAD_DIM, 0), TS(q));
  return true;
}

/* q, k, v ranks and dims. */
static bool qkv_check(Ctx *c, const Node *n) {
  const Type *q = IN(n, 0), *k = IN(n, 1), *v = IN(n, 2);
  if (!sh_want_float(c, n, 0, "q")) return false;
  if (!sh_same_dtype(c, n, 0, 1) || !sh_same_dtype(c, n, 0, 2))
    return false;
  if (q->rank != 3 && q->rank != 4)
    return sh_err(c, n, "q must be [B, S, H*D] or [B, H, S, D], got %s",
                  TS(q));
  int r = q->rank, ld = r - 2; /* index of the sequence dim */
  /* batch and sequence may be dynamic, the head sizes may not */
  for (int j = r == 3 ? 2 : 1; j < r; j += 2)
    if (!sh_static(c, n, 0, j, "heads and head_dim are checked against "
                   "it"))
      return false;
  for (int i = 1; i < 3; i++) {
    const Type *t = IN(n, i);
    bool ok = t->rank == r;
    for (int j = 0; ok && j < r; j++)
      ok = j == ld || t->dims[j] == q->dims[j];
    if (!ok)
      return sh_err(c, n, "%s %s does not match q %s except in length",
                    i == 1 ? "k" : "v", TS(t), TS(q));
  }
  if (k->dims[ld] != v->dims[ld])
    return sh_err(c, n, "k and v lengths differ: %s vs %s",
                  DS(k->dims[ld]), DS(v->dims[ld]));
  return r == 3 ? heads_rank3(c, n, q->dims[2]) : heads_rank4(c, n, q);
}

/* Heads of a checked q (rank 3: from attributes). */
static int64_t heads_of(const Node *n, const Type *q) {
  if (q->rank == 4) return q->dims[1];
  if (ir_attr_present(n, ATTR_HEADS)) return ir_attr_int(n, ATTR_HEADS, 1);
  return q->dims[2] / ir_attr_int(n, ATTR_HEAD_DIM, 1);
}

/* scale and softcap are finite; the kernels use them in f32 unless q
 * is f64 (f16 / bf16 are computed in f32), so they must also be finite
 * there: scale=1e39 would make every score inf or NaN. */
static bool scale_attrs_ok(Ctx *c, const Node *n) {
  static const AttrId ids[2] = {ATTR_SCALE, ATTR_SOFTCAP};
  char why[64];
  snprintf(why, sizeof why, ", the precision used for %s q",
           dt_name(IN(n, 0)->dt));
  for (int i = 0; i < 2; i++) {
    if (!ir_attr_present(n, ids[i])) continue;
    double v = ir_attr_float(n, ids[i], 0);
    if (!isfinite(v))
      return sh_err(c, n, "%s must be finite, got %g", attr_name(ids[i]),
                    v);
    if (IN(n, 0)->dt != DT_F64 && !sh_f32_attr(c, n, ids[i], why))
      return false;
  }
  return true;
}

static bool mask_check(Ctx *c, const Node *n, int mask_i) {
  const char *m = ir_attr_word(n, ATTR_MASK);
  bool extra = !strcmp(m, "custom") || !strcmp(m, "bias");
  bool sw = !strcmp(m, "sliding_window");
  int want = mask_i + (extra ? 1 : 0);
  if (n->nin != want)
    return sh_err(c, n, "mask=%s needs %d operands, got %d", m, want,
                  n->nin);
  if (sw && !ir_attr_present(n, ATTR_WINDOW))
    return sh_err(c, n, "mask=sliding_window needs a window attribute");
  if (!sw && ir_attr_present(n, ATTR_WINDOW))
    return sh_err(c, n, "window is only valid with mask=sliding_window");
  int64_t w;
  if (sw && !sh_int_attr(c, n, ATTR_WINDOW, 0, RLX_MAX_ELEMS, &w))
    return false;
  if (ir_attr_present(n, ATTR_SOFTCAP) &&
      !(ir_attr_float(n, ATTR_SOFTCAP, 0) > 0))
    return sh_err(c, n, "softcap must be > 0, got %g",
                  ir_attr_float(n, ATTR_SOFTCAP, 0));
  if (!scale_attrs_ok(c, n)) return false;
  if (!extra) return true;
  const Type *q = IN(n, 0), *mk = IN(n, mask_i);
  int ld = q->rank - 2;
  int64_t b = q->dims[0], lq = q->dims[ld], lk = IN(n, 1)->dims[ld];
  if (!strcmp(m, "custom")) {
    int64_t d[2] = {b, lk};
    if (dt_is_complex(mk->dt))
      return sh_err(c, n, "custom mask must be bool or real, got c64");
    Type t = type_make(mk->dt, 2, d);
    return sh_want_type(c, n, mask_i, "custom mask", &t);
  }
  int64_t d[4] = {b, heads_of(n, q), lq, lk};
  Type t = type_make(q->dt, 4, d);
  return sh_want_type(c, n, mask_i, "bias", &t);
}

static bool sh_attention_check(Ctx *c, const Node *n, int mask_i, Type *out) {
  if (!qkv_check(c, n) || !mask_check(c, n, mask_i)) return false;
  *out = *IN(n, 0);
  return true;
}

bool shape_attention(Ctx *c, Node *n) {
  return sh_attention_check(c, n, 3, &n->type);
}

bool shape_attention_bwd(Ctx *c, Node *n) {
  Type o;
  if (!sh_attention_check(c, n, 4, &o) || !sh_want_type(c, n, 3, "dy", &o))
    return false;
  const char *w = ir_attr_word(n, ATTR_WRT);
  bool bias = !strcmp(ir_attr_word(n, ATTR_MASK), "bias");
  if (!strcmp(w, "bias") && !bias)
    return sh_err(c, n, "wrt=bias needs mask=bias");
  int i = !strcmp(w, "q") ? 0 : !strcmp(w, "k") ? 1 : !strcmp(w, "v") ? 2
                                                                       : 4;
  n->type = *IN(n, i);
  return true;
}
