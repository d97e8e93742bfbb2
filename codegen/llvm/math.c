/* math.c: exp, log, tanh, erf and libm calls on scalars and vectors
 * (cg.h).
 *
 * f32 vectors of exp, tanh and erf are straight-line approximations
 * (Cephes polynomials) so that loops using them stay vectorized; other
 * types use LLVM intrinsics or call libm per lane (accuracy first).
 * One exception for the GPU: gelu_tanh with f16/bf16 results
 * (cg_gelu_tanh_fast).
 */
#include "codegen/llvm/cg.h"

#include <string.h>

/* Constant vector of n copies of constant c (also for n = 1: the GPU
 * target computes one element as a <1 x float> to get these same
 * bits). */
static LLVMValueRef csplat(LLVMValueRef c, int n) {
  LLVMValueRef e[64];
  for (int i = 0; i < n; i++) e[i] = c;
  return LLVMConstVector(e, (unsigned)n);
}

static LLVMValueRef splat_f(Cg *cg, LLVMTypeRef vt, double c) {
  (void)cg;
  return csplat(LLVMConstReal(LLVMGetElementType(vt), c),
                (int)LLVMGetVectorSize(vt));
}

/* Constant c of like's type: a scalar, or a vector of copies. */
static LLVMValueRef cof(LLVMValueRef like, LLVMValueRef c) {
  LLVMTypeRef t = LLVMTypeOf(like);
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind
             ? csplat(c, (int)LLVMGetVectorSize(t))
             : c;
}

/* a * b + c: one rounding (llvm.fma) where the target has a fused
 * multiply-add (cg->fma), else two. */
static LLVMValueRef mul_add(Cg *cg, LLVMValueRef a, LLVMValueRef b,
                            LLVMValueRef c) {
  if (!cg->fma)
    return LLVMBuildFAdd(cg->b, LLVMBuildFMul(cg->b, a, b, ""), c, "");
  LLVMValueRef v[3] = {a, b, c};
  return cg_intrinsic(cg, "llvm.fma", LLVMTypeOf(a), v, 3);
}

/* exp of an f32 scalar or vector in straight-line code (LLVM would call
 * expf per lane): n = rint(x log2 e), r = x - n ln2 (two-part ln2),
 * Cephes expf polynomial (about 1 ulp), times 2^n; the reduction and
 * the polynomial are mul_add steps (their bits depend on cg->fma).
 * `small` false: x is clamped to at most 89 (-> inf) and 2^n applied
 * in two halves so results down to the denormal range are right; x <
 * -104 (-inf, a mask's -1e9) gives 0 by a select, computed as exp(0)
 * (scaling down to 0 is a microcode assist per vector on Intel cores);
 * NaN -> NaN.  `small` true: the caller has |x| <= 40 or NaN, so n =
 * (m + 1.5*2^23) - 1.5*2^23 (rint's value for |m| < 2^22, both round to
 * nearest even), 2^n's exponent comes from the same sum's low bits and
 * one scaling is exact: the same bits as the general form, six to nine
 * instructions fewer; a NaN gives a NaN (of unspecified payload). */
static LLVMValueRef exp_f32(Cg *cg, LLVMValueRef x, bool small) {
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef t = LLVMTypeOf(x);
  LLVMTypeRef it = LLVMGetTypeKind(t) == LLVMVectorTypeKind
                       ? LLVMVectorType(cg->t_i32, LLVMGetVectorSize(t))
                       : cg->t_i32;
#define F(c) cof(x, LLVMConstReal(cg->t_f32, (c)))
#define I(c) cof(x, cg_i32(cg, (c)))
  LLVMValueRef c = x, n, e2n = NULL, low = NULL;
  if (!small) {
    LLVMValueRef a2[2] = {x, F(89.0)};
    c = cg_intrinsic(cg, "llvm.minnum", t, a2, 2);
    low = LLVMBuildFCmp(b, LLVMRealOLT, x, F(-104.0), "");
    c = LLVMBuildSelect(b, low, F(0.0), c, "");
  }
  LLVMValueRef m = LLVMBuildFMul(b, c, F(1.44269504088896341), "");
  if (small) {
    LLVMValueRef s = LLVMBuildFAdd(b, m, F(12582912.0), "");
    n = LLVMBuildFSub(b, s, F(12582912.0), "");
    e2n = LLVMBuildAdd(b, LLVMBuildBitCast(b, s, it, ""), I(127), "");
    e2n = LLVMBuildBitCast(b, LLVMBuildShl(b, e2n, I(23), ""), t, "");
  } else {
    n = cg_intrinsic(cg, "llvm.rint", t, &m, 1);
  }
  LLVMValueRef r = mul_add(cg, n, F(-0.693359375), c);
  r = mul_add(cg, n, F(2.12194440e-4), r);
  static const double P[] = {1.9875691500E-4, 1.3981999507E-3,
                             8.3334519073E-3, 4.1665795894E-2,
                             1.6666665459E-1, 5.0000001201E-1};
  LLVMValueRef p = F(P[0]);
  for (int i = 1; i < 6; i++)
    p = mul_add(cg, p, r, F(P[i]));
  p = mul_add(cg, p, LLVMBuildFMul(b, r, r, ""),
              LLVMBuildFAdd(b, r, F(1.0), ""));
  if (small) return LLVMBuildFMul(b, p, e2n, "");
  LLVMValueRef ni = LLVMBuildFPToSI(b, n, it, "");
  LLVMValueRef n1 = LLVMBuildAShr(b, ni, I(1), "");
  LLVMValueRef half[2] = {n1, LLVMBuildSub(b, ni, n1, "")};
  for (int i = 0; i < 2; i++) { /* 2^half[i], half[i] in [-126, 127] */
    LLVMValueRef e = LLVMBuildAdd(b, half[i], I(127), "");
    e = LLVMBuildShl(b, e, I(23), "");
    p = LLVMBuildFMul(b, p, LLVMBuildBitCast(b, e, t, ""), "");
  }
  p = LLVMBuildSelect(b, low, F(0.0), p, "");
#undef F
#undef I
  LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
  return LLVMBuildSelect(b, nan, x, p, "");
}

static bool is_f32(Cg *cg, LLVMTypeRef t) {
  return t == cg->t_f32 || (LLVMGetTypeKind(t) == LLVMVectorTypeKind &&
                            LLVMGetElementType(t) == cg->t_f32);
}

LLVMValueRef cg_ops_exp(Cg *cg, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  if (LLVMGetTypeKind(t) == LLVMVectorTypeKind &&
      LLVMGetElementType(t) == cg->t_f32)
    return exp_f32(cg, v, false);
  return cg_intrinsic(cg, "llvm.exp", t, &v, 1);
}

LLVMValueRef cg_ops_expf(Cg *cg, LLVMValueRef v) {
  if (is_f32(cg, LLVMTypeOf(v))) return exp_f32(cg, v, false);
  return cg_intrinsic(cg, "llvm.exp", LLVMTypeOf(v), &v, 1);
}

LLVMValueRef cg_gelu_tanh_exp(Cg *cg, LLVMValueRef x, LLVMValueRef *above) {
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef t = LLVMTypeOf(x);
  LLVMTypeRef et = LLVMGetTypeKind(t) == LLVMVectorTypeKind
                       ? LLVMGetElementType(t)
                       : t;
#define C(c) cof(x, LLVMConstReal(et, (c)))
  LLVMValueRef x3 = LLVMBuildFMul(b, LLVMBuildFMul(b, x, x, ""), x, "");
  LLVMValueRef z = LLVMBuildFAdd(b, x, LLVMBuildFMul(b, C(0.044715), x3, ""),
                                 "");
  z = LLVMBuildFMul(b, C(-2 * 0.79788456080286535588), z, "");
  LLVMValueRef lo = LLVMBuildFCmp(b, LLVMRealOLT, z, C(-40), "");
  *above = LLVMBuildFCmp(b, LLVMRealOGT, z, C(40), "");
  z = LLVMBuildSelect(b, lo, C(-40), z, "");
  z = LLVMBuildSelect(b, *above, C(40), z, "");
#undef C
  if (is_f32(cg, t)) return exp_f32(cg, z, true);
  return cg_intrinsic(cg, "llvm.exp", t, &z, 1);
}

LLVMValueRef cg_ops_log(Cg *cg, LLVMValueRef v) {
  return cg_intrinsic(cg, "llvm.log", LLVMTypeOf(v), &v, 1);
}

static LLVMValueRef libm1(Cg *cg, const char *name, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  char buf[32];
  bool f = LLVMGetTypeKind(t) == LLVMFloatTypeKind;
  snprintf(buf, sizeof buf, "%s%s", name, f ? "f" : "");
  return cg_call(cg, buf, t, &v, 1);
}

LLVMValueRef cg_ops_libm(Cg *cg, const char *name, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return libm1(cg, name, v);
  LLVMValueRef r = LLVMGetUndef(t);
  for (unsigned i = 0; i < LLVMGetVectorSize(t); i++) {
    LLVMValueRef e = LLVMBuildExtractElement(cg->b, v, cg_i32(cg, (int)i), "");
    r = LLVMBuildInsertElement(cg->b, r, libm1(cg, name, e),
                               cg_i32(cg, (int)i), "");
  }
  return r;
}

static bool is_vf32(Cg *cg, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind &&
         LLVMGetElementType(t) == cg->t_f32;
}

/* f32 vectors: tanh x = sign(x) (1 - 2 / (exp(2|x|) + 1)) (absolute
 * error ~1e-7); otherwise libm. */
LLVMValueRef cg_ops_tanh(Cg *cg, LLVMValueRef x) {
  if (!is_vf32(cg, x)) return cg_ops_libm(cg, "tanh", x);
  LLVMTypeRef vt = LLVMTypeOf(x);
  LLVMValueRef a = cg_intrinsic(cg, "llvm.fabs", vt, &x, 1);
  LLVMValueRef e = cg_ops_exp(cg, LLVMBuildFMul(cg->b, a,
                                                splat_f(cg, vt, 2), ""));
  LLVMValueRef q = LLVMBuildFDiv(
      cg->b, splat_f(cg, vt, 2), LLVMBuildFAdd(cg->b, e, splat_f(cg, vt, 1),
                                               ""), "");
  LLVMValueRef t = LLVMBuildFSub(cg->b, splat_f(cg, vt, 1), q, "");
  LLVMValueRef cs[2] = {t, x};
  return cg_intrinsic(cg, "llvm.copysign", vt, cs, 2);
}

/* f32 vectors: erf by Abramowitz & Stegun 7.1.26 (absolute error
 * < 1.5e-7), odd extension; otherwise libm. */
LLVMValueRef cg_ops_erf(Cg *cg, LLVMValueRef x) {
  if (!is_vf32(cg, x)) return cg_ops_libm(cg, "erf", x);
  static const double A[] = {1.061405429, -1.453152027, 1.421413741,
                             -0.284496736, 0.254829592};
  LLVMTypeRef vt = LLVMTypeOf(x);
  LLVMBuilderRef b = cg->b;
  LLVMValueRef a = cg_intrinsic(cg, "llvm.fabs", vt, &x, 1);
  LLVMValueRef t = LLVMBuildFDiv(
      b, splat_f(cg, vt, 1),
      LLVMBuildFAdd(b, splat_f(cg, vt, 1),
                    LLVMBuildFMul(b, a, splat_f(cg, vt, 0.3275911), ""), ""),
      "");
  LLVMValueRef p = splat_f(cg, vt, A[0]);
  for (int i = 1; i < 5; i++)
    p = LLVMBuildFAdd(b, LLVMBuildFMul(b, p, t, ""), splat_f(cg, vt, A[i]),
                      "");
  p = LLVMBuildFMul(b, p, t, "");
  LLVMValueRef e = cg_ops_exp(cg, LLVMBuildFNeg(b, LLVMBuildFMul(b, a, a, ""),
                                                ""));
  LLVMValueRef r = LLVMBuildFSub(b, splat_f(cg, vt, 1),
                                 LLVMBuildFMul(b, p, e, ""), "");
  LLVMValueRef cs[2] = {r, x};
  return cg_intrinsic(cg, "llvm.copysign", vt, cs, 2);
}

bool cg_gelu_tanh_fast(Cg *cg, DType dt, LLVMValueRef x, LLVMValueRef *y,
                       LLVMValueRef *dydx) {
  if ((dt != DT_F16 && dt != DT_BF16) || !cg->triple ||
      strncmp(cg->triple, "nvptx", 5) || LLVMTypeOf(x) != cg->t_f32)
    return false;
  LLVMBuilderRef b = cg->b;
  const double k = 0.79788456080286535588, a = 0.044715;
  LLVMValueRef x2 = LLVMBuildFMul(b, x, x, "");
  LLVMValueRef u = LLVMBuildFMul(
      b, LLVMConstReal(cg->t_f32, k),
      LLVMBuildFAdd(b, x, LLVMBuildFMul(b, LLVMConstReal(cg->t_f32, a),
                                        LLVMBuildFMul(b, x2, x, ""), ""),
                    ""), "");
  LLVMValueRef e = LLVMBuildFMul(
      b, u, LLVMConstReal(cg->t_f32, -2 * 1.4426950408889634), "");
  e = cg_intrinsic_n(cg, "llvm.nvvm.ex2.approx.ftz.f", NULL, 0, &e, 1);
  LLVMValueRef s = LLVMBuildFAdd(b, LLVMConstReal(cg->t_f32, 1), e, "");
  s = cg_intrinsic_n(cg, "llvm.nvvm.rcp.approx.ftz.f", NULL, 0, &s, 1);
  if (y) *y = LLVMBuildFMul(b, x, s, "");
  if (dydx) {
    LLVMValueRef du = LLVMBuildFMul(
        b, LLVMConstReal(cg->t_f32, 2 * k),
        LLVMBuildFAdd(b, LLVMConstReal(cg->t_f32, 1),
                      LLVMBuildFMul(b, LLVMConstReal(cg->t_f32, 3 * a), x2,
                                    ""), ""), "");
    LLVMValueRef t = LLVMBuildFMul(
        b, LLVMBuildFMul(b, x, s, ""),
        LLVMBuildFSub(b, LLVMConstReal(cg->t_f32, 1), s, ""), "");
    *dydx = LLVMBuildFAdd(b, s, LLVMBuildFMul(b, t, du, ""), "");
  }
  return true;
}
