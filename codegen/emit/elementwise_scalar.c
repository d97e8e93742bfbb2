/* elementwise_scalar.c: scalar semantics of the elementwise ops
 * (language.md §6.1), one element on compute-type values, and which
 * dtypes each op compiles for.
 *
 * Floats (f32, f64; f16/bf16 computed in f32 and rounded back after
 * each op): every op. min/max propagate NaN (llvm.minimum/maximum);
 * relu(NaN) = NaN; round is half-to-even. f32 exp (also in sigmoid and
 * silu) is straight-line code (Cephes polynomial, about 1 ulp) so fused
 * loops vectorize, and so is f32 tanh (also in gelu_tanh: Cephes tanhf,
 * about 2 ulp); f64 exp, log, sin, cos use LLVM intrinsics; f64 tanh,
 * erf, tan, atan call libm (accuracy first; those loops stay scalar).
 * Integers (i8 u8 i32 i64; u8 unsigned): the OPF_INT ops of ops.def
 * (add sub mul wrapping, min max neg abs), compares, where, cast. bool
 * (i1, unsigned): the OPF_BOOL ops (mul = and, min = and, max = or),
 * compares (false < true), where, cast. The shape rules accept exactly
 * these (ir/shape_elem.c reads the same flags). c64:
 * add sub mul div neg, where, cast, and the complex ops conjugate, real,
 * imag, complex(re, im), complex_norm_sq and its backward (g z).
 * quantize (float -> i8) and dequantize (i8 -> f32) with their scale and
 * zero_point attributes.
 * Anything else is a diagnostic.
 */
#include "codegen/emit/emit.h"

#include <math.h>

static bool c64_ok(Op op) {
  return op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_DIV ||
         op == OP_NEG;
}

bool cg_ew_check(Cg *cg, Node *n) {
  if (n->op == OP_WHERE || n->op == OP_CAST || n->op == OP_STOP_GRADIENT ||
      n->op == OP_EXPAND || cg_is_complex_op(n->op) || cg_is_quant_op(n->op))
    return true; /* operand dtypes checked by their shape rules */
  DType dt = n->in[0]->type.dt;
  bool ok;
  if (op_has(n->op, OPF_COMPARE))
    ok = dt != DT_C64 || n->op == OP_EQ || n->op == OP_NE;
  else if (dt_is_float(dt))
    ok = true;
  else if (dt_is_int(dt))
    ok = op_has(n->op, OPF_INT);
  else if (dt == DT_BOOL)
    ok = op_has(n->op, OPF_BOOL);
  else if (dt == DT_C64)
    ok = c64_ok(n->op);
  else
    ok = false;
  if (ok) return true;
  char why[64];
  snprintf(why, sizeof why, "dtype %s", dt_name(dt));
  return cg_unsupported(cg, n, why);
}

static bool is_f64(Cg *cg, LLVMValueRef v) {
  return LLVMTypeOf(v) == cg->t_f64;
}

static LLVMValueRef fc(Cg *cg, LLVMValueRef like, double c) {
  return LLVMConstReal(LLVMTypeOf(like), c);
}

static LLVMValueRef intr1(Cg *cg, const char *nm, LLVMValueRef x) {
  return cg_intrinsic(cg, nm, LLVMTypeOf(x), &x, 1);
}

static LLVMValueRef intr2(Cg *cg, const char *nm, LLVMValueRef a,
                          LLVMValueRef b) {
  LLVMValueRef v[2] = {a, b};
  return cg_intrinsic(cg, nm, LLVMTypeOf(a), v, 2);
}

/* libm call: name for double, name+"f" for float. */
static LLVMValueRef libm(Cg *cg, const char *nm, LLVMValueRef x) {
  char buf[16];
  snprintf(buf, sizeof buf, "%s%s", nm, is_f64(cg, x) ? "" : "f");
  LLVMValueRef r = cg_call(cg, buf, LLVMTypeOf(x), &x, 1);
  return r;
}

/* tanh of a float. f32: straight-line (fused loops vectorize), Cephes
 * tanhf: |x| < 0.625: x + x^3 P(x^2), else sign(x) (1 - 2 / (exp(2|x|) +
 * 1)); about 2 ulp, NaN -> NaN. f64: libm. */
static LLVMValueRef tanh_(Cg *cg, LLVMValueRef x) {
  if (is_f64(cg, x)) return libm(cg, "tanh", x);
  LLVMBuilderRef b = cg->b;
  LLVMValueRef a = intr1(cg, "llvm.fabs", x);
  LLVMValueRef e = cg_ops_expf(cg, LLVMBuildFMul(b, a, fc(cg, x, 2), ""));
  LLVMValueRef q = LLVMBuildFDiv(b, fc(cg, x, 2),
                                 LLVMBuildFAdd(b, e, fc(cg, x, 1), ""), "");
  LLVMValueRef big = intr2(cg, "llvm.copysign",
                           LLVMBuildFSub(b, fc(cg, x, 1), q, ""), x);
  static const double P[] = {-5.70498872745E-3, 2.06390887954E-2,
                             -5.37397155531E-2, 1.33314422036E-1,
                             -3.33332819422E-1};
  LLVMValueRef s = LLVMBuildFMul(b, x, x, ""), p = fc(cg, x, P[0]);
  for (int i = 1; i < 5; i++)
    p = LLVMBuildFAdd(b, LLVMBuildFMul(b, p, s, ""), fc(cg, x, P[i]), "");
  p = LLVMBuildFMul(b, LLVMBuildFMul(b, p, s, ""), x, "");
  LLVMValueRef small = LLVMBuildFAdd(b, p, x, "");
  LLVMValueRef lt = LLVMBuildFCmp(b, LLVMRealOLT, a, fc(cg, x, 0.625), "");
  return LLVMBuildSelect(b, lt, small, big, "");
}

static LLVMValueRef sigmoid(Cg *cg, LLVMValueRef x) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef e = cg_ops_expf(cg, LLVMBuildFNeg(b, x, ""));
  return LLVMBuildFDiv(b, fc(cg, x, 1), LLVMBuildFAdd(b, fc(cg, x, 1), e, ""),
                       "");
}

static LLVMValueRef gelu(Cg *cg, LLVMValueRef x, bool tanh_form) {
  LLVMBuilderRef b = cg->b;
  if (tanh_form) { /* ½x(1 + tanh u) = x / (1 + exp(−2u)): one exp and
                       a division, no cancellation in 1 + tanh u for
                       negative x; 0 where −2u > 40 (cg_gelu_tanh_exp) */
    LLVMValueRef above, e = cg_gelu_tanh_exp(cg, x, &above);
    LLVMValueRef r =
        LLVMBuildFDiv(b, x, LLVMBuildFAdd(b, fc(cg, x, 1), e, ""), "");
    return LLVMBuildSelect(b, above, LLVMBuildFMul(b, x, fc(cg, x, 0), ""),
                           r, "");
  }
  LLVMValueRef t =
      libm(cg, "erf", LLVMBuildFMul(b, x, fc(cg, x, M_SQRT1_2), ""));
  LLVMValueRef h = LLVMBuildFMul(b, fc(cg, x, 0.5), x, "");
  return LLVMBuildFMul(b, h, LLVMBuildFAdd(b, fc(cg, x, 1), t, ""), "");
}

static LLVMValueRef unary_float(Cg *cg, Op op, LLVMValueRef x) {
  LLVMBuilderRef b = cg->b;
  switch (op) {
  case OP_RELU:
    return LLVMBuildSelect(
        b, LLVMBuildFCmp(b, LLVMRealOLT, x, fc(cg, x, 0), ""), fc(cg, x, 0), x,
        "");
  case OP_GELU: return gelu(cg, x, false);
  case OP_GELU_TANH: return gelu(cg, x, true);
  case OP_SILU: return LLVMBuildFMul(b, x, sigmoid(cg, x), "");
  case OP_SIGMOID: return sigmoid(cg, x);
  case OP_TANH: return tanh_(cg, x);
  case OP_EXP: return cg_ops_expf(cg, x);
  case OP_LOG: return intr1(cg, "llvm.log", x);
  case OP_SQRT: return intr1(cg, "llvm.sqrt", x);
  case OP_RSQRT:
    return LLVMBuildFDiv(b, fc(cg, x, 1), intr1(cg, "llvm.sqrt", x), "");
  case OP_NEG: return LLVMBuildFNeg(b, x, "");
  case OP_ABS: return intr1(cg, "llvm.fabs", x);
  case OP_SIN: return intr1(cg, "llvm.sin", x);
  case OP_COS: return intr1(cg, "llvm.cos", x);
  case OP_TAN: return libm(cg, "tan", x);
  case OP_ATAN: return libm(cg, "atan", x);
  case OP_ROUND: return intr1(cg, "llvm.roundeven", x);
  default: RLX_ASSERT(!"not a float unary op"); return NULL;
  }
}

static LLVMValueRef unary_int(Cg *cg, Op op, LLVMValueRef x, DType dt) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef z = LLVMConstNull(LLVMTypeOf(x));
  if (dt == DT_U8 && op == OP_ABS) return x;
  switch (op) {
  case OP_NEG: return LLVMBuildSub(b, z, x, "");
  case OP_ABS: {
    LLVMValueRef a[2] = {x, LLVMConstInt(cg->t_i1, 0, 0)};
    return cg_intrinsic(cg, "llvm.abs", LLVMTypeOf(x), a, 2);
  }
  default: RLX_ASSERT(!"not an int unary op"); return NULL;
  }
}

static LLVMValueRef c64_mul(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef bd = cg->b;
  LLVMValueRef i0 = cg_i32(cg, 0), i1 = cg_i32(cg, 1);
  LLVMValueRef ar = LLVMBuildExtractElement(bd, a, i0, "");
  LLVMValueRef ai = LLVMBuildExtractElement(bd, a, i1, "");
  LLVMValueRef br = LLVMBuildExtractElement(bd, b, i0, "");
  LLVMValueRef bi = LLVMBuildExtractElement(bd, b, i1, "");
  LLVMValueRef re = LLVMBuildFSub(bd, LLVMBuildFMul(bd, ar, br, ""),
                                  LLVMBuildFMul(bd, ai, bi, ""), "");
  LLVMValueRef im = LLVMBuildFAdd(bd, LLVMBuildFMul(bd, ar, bi, ""),
                                  LLVMBuildFMul(bd, ai, br, ""), "");
  LLVMValueRef v = LLVMBuildInsertElement(bd, LLVMGetUndef(cg->t_c64), re,
                                          i0, "");
  return LLVMBuildInsertElement(bd, v, im, i1, "");
}

static LLVMValueRef lane(Cg *cg, LLVMValueRef v, int i) {
  return LLVMBuildExtractElement(cg->b, v, cg_i32(cg, i), "");
}

static LLVMValueRef c64_make(Cg *cg, LLVMValueRef re, LLVMValueRef im) {
  LLVMValueRef v = LLVMBuildInsertElement(cg->b, LLVMGetUndef(cg->t_c64), re,
                                          cg_i32(cg, 0), "");
  return LLVMBuildInsertElement(cg->b, v, im, cg_i32(cg, 1), "");
}

static LLVMValueRef norm_sq(Cg *cg, LLVMValueRef z) {
  LLVMValueRef re = lane(cg, z, 0), im = lane(cg, z, 1);
  return LLVMBuildFAdd(cg->b, LLVMBuildFMul(cg->b, re, re, ""),
                       LLVMBuildFMul(cg->b, im, im, ""), "");
}

/* a / b = a conj(b) / |b|^2 (textbook formula; fine away from
 * overflow of |b|^2). */
static LLVMValueRef c64_div(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef conj = c64_make(cg, lane(cg, b, 0),
                               LLVMBuildFNeg(cg->b, lane(cg, b, 1), ""));
  LLVMValueRef num = c64_mul(cg, a, conj), d = norm_sq(cg, b);
  return c64_make(cg, LLVMBuildFDiv(cg->b, lane(cg, num, 0), d, ""),
                  LLVMBuildFDiv(cg->b, lane(cg, num, 1), d, ""));
}

static LLVMValueRef complex_value(Cg *cg, Op op, LLVMValueRef *v) {
  switch (op) {
  case OP_CONJUGATE:
    return c64_make(cg, lane(cg, v[0], 0),
                    LLVMBuildFNeg(cg->b, lane(cg, v[0], 1), ""));
  case OP_REAL: return lane(cg, v[0], 0);
  case OP_IMAG: return lane(cg, v[0], 1);
  case OP_COMPLEX: return c64_make(cg, v[0], v[1]);
  case OP_COMPLEX_NORM_SQ: return norm_sq(cg, v[0]);
  default: { /* complex_norm_sq_backward(z, g) = g z */
    LLVMValueRef g = c64_make(cg, v[1], v[1]);
    return LLVMBuildFMul(cg->b, g, v[0], "");
  }
  }
}

/* quantize: sat_i8(roundeven(x / scale) + zero_point) (saturating
 * conversion, NaN -> 0); dequantize: (q - zero_point) * scale in f32. */
static LLVMValueRef quant_value(Cg *cg, Node *n, LLVMValueRef x) {
  double s = ir_attr_float(n, ATTR_SCALE, 1.0);
  double zp = (double)ir_attr_int(n, ATTR_ZERO_POINT, 0);
  if (n->op == OP_DEQUANTIZE) {
    LLVMValueRef q = cg_convert(cg, x, DT_I8, DT_F32);
    q = LLVMBuildFSub(cg->b, q, fc(cg, q, zp), "");
    return LLVMBuildFMul(cg->b, q, fc(cg, q, s), "");
  }
  LLVMValueRef t = LLVMBuildFDiv(cg->b, x, fc(cg, x, s), "");
  t = LLVMBuildFAdd(cg->b, intr1(cg, "llvm.roundeven", t), fc(cg, x, zp), "");
  return cg_convert(cg, t, is_f64(cg, x) ? DT_F64 : DT_F32, DT_I8);
}

static LLVMValueRef binary(Cg *cg, Op op, LLVMValueRef a, LLVMValueRef c,
                           DType dt) {
  LLVMBuilderRef b = cg->b;
  bool fl = dt_is_float(dt) || dt == DT_C64;
  bool u = dt == DT_U8 || dt == DT_BOOL; /* bool: i1, min = and, max = or */
  switch (op) {
  case OP_ADD:
    return fl ? LLVMBuildFAdd(b, a, c, "") : LLVMBuildAdd(b, a, c, "");
  case OP_SUB:
    return fl ? LLVMBuildFSub(b, a, c, "") : LLVMBuildSub(b, a, c, "");
  case OP_MUL:
    if (dt == DT_C64) return c64_mul(cg, a, c);
    return fl ? LLVMBuildFMul(b, a, c, "") : LLVMBuildMul(b, a, c, "");
  case OP_DIV:
    if (dt == DT_C64) return c64_div(cg, a, c);
    return LLVMBuildFDiv(b, a, c, "");
  case OP_POW: return intr2(cg, "llvm.pow", a, c);
  case OP_MIN:
    return intr2(cg, fl ? "llvm.minimum" : u ? "llvm.umin" : "llvm.smin", a, c);
  case OP_MAX:
    return intr2(cg, fl ? "llvm.maximum" : u ? "llvm.umax" : "llvm.smax", a, c);
  default: RLX_ASSERT(!"not a binary op"); return NULL;
  }
}

static LLVMValueRef compare(Cg *cg, Op op, LLVMValueRef a, LLVMValueRef c,
                            DType dt) {
  static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
                                         LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
  static const LLVMIntPredicate sp[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT,
                                        LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
  static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT,
                                        LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
  int k = (int)op - (int)OP_EQ;
  if (dt == DT_C64) { /* eq: both parts equal; ne: either differs */
    LLVMValueRef v = LLVMBuildFCmp(cg->b, fp[k], a, c, "");
    LLVMValueRef x = lane(cg, v, 0), y = lane(cg, v, 1);
    return op == OP_EQ ? LLVMBuildAnd(cg->b, x, y, "")
                       : LLVMBuildOr(cg->b, x, y, "");
  }
  if (dt_is_float(dt)) return LLVMBuildFCmp(cg->b, fp[k], a, c, "");
  bool u = dt == DT_U8 || dt == DT_BOOL;
  return LLVMBuildICmp(cg->b, u ? up[k] : sp[k], a, c, "");
}

/* double -> float rounded to odd (truncate toward zero, then set the
 * last bit if inexact): a later round-to-nearest-even to a narrower
 * format (bf16) then equals rounding the double directly. */
static LLVMValueRef f64_to_f32_odd(Cg *cg, LLVMValueRef d) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef f = LLVMBuildFPTrunc(b, d, cg->t_f32, "");
  LLVMValueRef back = LLVMBuildFPExt(b, f, cg->t_f64, "");
  LLVMValueRef inexact = LLVMBuildFCmp(b, LLVMRealONE, back, d, "");
  LLVMValueRef away = LLVMBuildFCmp(
      b, LLVMRealOGT, intr1(cg, "llvm.fabs", back), intr1(cg, "llvm.fabs", d),
      "");
  LLVMValueRef u = LLVMBuildBitCast(b, f, cg->t_i32, "");
  LLVMValueRef dec = LLVMBuildSub(b, u, cg_i32(cg, 1), "");
  u = LLVMBuildSelect(b, LLVMBuildAnd(b, inexact, away, ""), dec, u, "");
  LLVMValueRef odd = LLVMBuildOr(b, u, cg_i32(cg, 1), "");
  u = LLVMBuildSelect(b, inexact, odd, u, "");
  return LLVMBuildBitCast(b, u, cg->t_f32, "");
}

/* Casts to f16/bf16 round once from the exact source value (through
 * f64 for integers, exact up to 2^53). */
static LLVMValueRef cast(Cg *cg, Node *n, LLVMValueRef v) {
  DType from = n->in[0]->type.dt, to = n->type.dt;
  bool half = to == DT_F16 || to == DT_BF16;
  if (half && (dt_is_int(from) || from == DT_F64)) {
    LLVMValueRef d = cg_convert(cg, v, from, DT_F64);
    LLVMValueRef f =
        to == DT_F16
            ? LLVMBuildFPExt(cg->b, LLVMBuildFPTrunc(cg->b, d, cg->t_f16, ""),
                             cg->t_f32, "")
            : f64_to_f32_odd(cg, d);
    return cg_round_dt(cg, to, f);
  }
  return cg_round_dt(cg, to, cg_convert(cg, v, from, to));
}

LLVMValueRef cg_ew_op(Cg *cg, Node *n, LLVMValueRef *v) {
  DType dt = n->in[0]->type.dt;
  LLVMValueRef r;
  /* expand: the operand was read at the broadcast index already */
  if (n->op == OP_STOP_GRADIENT || n->op == OP_EXPAND) return v[0];
  if (cg_is_complex_op(n->op)) return complex_value(cg, n->op, v);
  if (cg_is_quant_op(n->op)) return quant_value(cg, n, v[0]);
  if (n->op == OP_CAST) return cast(cg, n, v[0]);
  if (n->op == OP_WHERE) {
    LLVMValueRef c = cg_convert(cg, v[0], dt, DT_BOOL);
    return LLVMBuildSelect(cg->b, c, v[1], v[2], "");
  }
  if (op_has(n->op, OPF_COMPARE)) return compare(cg, n->op, v[0], v[1], dt);
  if (op_has(n->op, OPF_BINARY))
    r = binary(cg, n->op, v[0], v[1], dt);
  else if (dt == DT_C64)
    r = LLVMBuildFNeg(cg->b, v[0], "");
  else if (dt_is_float(dt)) {
    if (n->op != OP_GELU_TANH ||
        !cg_gelu_tanh_fast(cg, n->type.dt, v[0], &r, NULL))
      r = unary_float(cg, n->op, v[0]);
  }
  else
    r = unary_int(cg, n->op, v[0], dt);
  return cg_round_dt(cg, n->type.dt, r);
}
