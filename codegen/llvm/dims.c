/* dims.c: dynamic sizes in generated code (docs/dynamic-dims.md).
 *
 * In a module with dynamic dimensions every graph function finds the
 * value of each symbol (numbered as in the module's table, dim_nsyms)
 * as an i64 in the first cg_dim_header() bytes of its workspace: the
 * entry wrapper stores them there before the call and the plan places
 * nothing below them (memplan.c). cg_dim evaluates a size expression,
 * a sum of products of symbols, from those loads; LLVM merges repeated
 * loads and products within a function. Where the workspace is device
 * memory (--target=cuda) the function's `sizes` array holds them
 * instead: a kernel parameter, or the host entry's copy.
 */
#include "codegen/llvm/cg.h"

static LLVMValueRef sym_value(Cg *cg, int k) {
  LLVMValueRef at = cg->fn->sizes ? cg->fn->sizes : cg->fn->ws;
  LLVMValueRef p = cg_gep(cg, at, cg_i64(cg, 8 * (int64_t)k));
  LLVMValueRef v = LLVMBuildLoad2(cg->b, cg->t_i64, p, "");
  LLVMSetAlignment(v, 8);
  return v;
}

LLVMValueRef cg_dim(Cg *cg, int64_t d) {
  if (dim_is_static(d)) return cg_i64(cg, d);
  LLVMValueRef sum = NULL;
  for (int i = 0; i < dim_nterms(d); i++) {
    int syms[RLX_MAX_RANK], ns;
    int64_t c = dim_term(d, i, syms, &ns);
    LLVMValueRef t = ns ? NULL : cg_i64(cg, c);
    for (int j = 0; j < ns; j++) {
      LLVMValueRef s = sym_value(cg, syms[j]);
      t = t ? LLVMBuildNSWMul(cg->b, t, s, "") : s;
    }
    if (ns && c != 1) t = LLVMBuildNSWMul(cg->b, t, cg_i64(cg, c), "");
    sum = sum ? LLVMBuildNSWAdd(cg->b, sum, t, "") : t;
  }
  return sum;
}

/* a op b through llvm.{op}.with.overflow, or-ing its flag into *ovf. */
static LLVMValueRef checked(Cg *cg, const char *op, LLVMValueRef a,
                            LLVMValueRef b, LLVMValueRef *ovf) {
  LLVMValueRef ab[2] = {a, b};
  LLVMValueRef r = cg_intrinsic(cg, op, cg->t_i64, ab, 2);
  LLVMValueRef f = LLVMBuildExtractValue(cg->b, r, 1, "");
  *ovf = *ovf ? LLVMBuildOr(cg->b, *ovf, f, "") : f;
  return LLVMBuildExtractValue(cg->b, r, 0, "");
}

LLVMValueRef cg_dim_checked(Cg *cg, int64_t d, LLVMValueRef *ovf) {
  if (dim_is_static(d)) return cg_i64(cg, d);
  LLVMValueRef sum = NULL;
  for (int i = 0; i < dim_nterms(d); i++) {
    int syms[RLX_MAX_RANK], ns;
    LLVMValueRef t = cg_i64(cg, dim_term(d, i, syms, &ns));
    for (int j = 0; j < ns; j++)
      t = checked(cg, "llvm.smul.with.overflow", t, sym_value(cg, syms[j]),
                  ovf);
    sum = sum ? checked(cg, "llvm.sadd.with.overflow", sum, t, ovf) : t;
  }
  return sum;
}

LLVMValueRef cg_align_rt(Cg *cg, LLVMValueRef bytes) {
  return LLVMBuildAnd(cg->b, cg_add_i64(cg, bytes, cg_i64(cg, 63)),
                      cg_i64(cg, ~(int64_t)63), "");
}

LLVMValueRef cg_numel(Cg *cg, const Type *t) {
  int64_t s = 1;
  LLVMValueRef v = NULL;
  for (int i = 0; i < t->rank; i++) {
    if (dim_is_static(t->dims[i])) {
      s *= t->dims[i];
      continue;
    }
    LLVMValueRef d = cg_dim(cg, t->dims[i]);
    v = v ? LLVMBuildNSWMul(cg->b, v, d, "") : d;
  }
  if (!v) return cg_i64(cg, s);
  return s == 1 ? v : LLVMBuildNSWMul(cg->b, v, cg_i64(cg, s), "");
}

LLVMValueRef cg_bytes(Cg *cg, const Type *t) {
  if (type_is_static(t)) return cg_i64(cg, type_bytes(t));
  return LLVMBuildNSWMul(cg->b, cg_numel(cg, t), cg_i64(cg, dt_size(t->dt)),
                         "");
}

void cg_copy_bytes(Cg *cg, LLVMValueRef dst, LLVMValueRef src,
                   const Type *t) {
  if (type_bytes_bound(t) != 0) /* nothing to copy when empty */
    LLVMBuildMemCpy(cg->b, dst, 1, src, 1, cg_bytes(cg, t));
}

void cg_zero_bytes(Cg *cg, LLVMValueRef dst, const Type *t) {
  if (type_bytes_bound(t) != 0)
    LLVMBuildMemSet(cg->b, dst, LLVMConstInt(cg->t_i8, 0, 0),
                    cg_bytes(cg, t), 1);
}

LLVMValueRef cg_mul_dim(Cg *cg, LLVMValueRef v, int64_t d) {
  if (dim_is_static(d)) return cg_mul_c(cg, v, d);
  return LLVMBuildNSWMul(cg->b, v, cg_dim(cg, d), "");
}

void cg_split_axis_dim(Cg *cg, const Type *t, int64_t axis, int64_t *outer,
                       int64_t *n, int64_t *inner) {
  *outer = *n = *inner = 1;
  if (t->rank == 0) return;
  if (axis < 0) axis += t->rank;
  for (int i = 0; i < t->rank; i++) {
    int64_t *p = i < axis ? outer : i == axis ? n : inner;
    DimStatus st = dim_mul(cg->ctx, *p, t->dims[i], p);
    RLX_ASSERT(st == DIM_OK); /* a factor of the type's element count */
  }
}

void cg_strides_dim(Cg *cg, const Type *t, int64_t *strides) {
  int64_t s = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    strides[i] = s;
    DimStatus st = dim_mul(cg->ctx, s, t->dims[i], &s);
    RLX_ASSERT(st == DIM_OK); /* a factor of t's element count */
  }
}

void cg_bcast_strides_dim(Cg *cg, const Type *in, const Type *out,
                          int64_t *strides) {
  int64_t s[RLX_MAX_RANK];
  cg_strides_dim(cg, in, s);
  int off = out->rank - in->rank;
  for (int i = 0; i < out->rank; i++) {
    int j = i - off;
    strides[i] = (j < 0 || in->dims[j] == 1) ? 0 : s[j];
  }
}

bool cg_dyn_leading(const Type *t) {
  for (int i = 1; i < t->rank; i++)
    if (!dim_is_static(t->dims[i])) return false;
  return true;
}

const char *cg_dyn_rows(const Node *n, const Type *t) {
  int64_t ax = ir_attr_int(n, ATTR_AXIS, -1);
  ax += ax < 0 ? t->rank : 0;
  if (!dim_is_static(t->dims[ax])) return "the row axis is dynamic";
  for (int64_t d = ax + 1; d < t->rank; d++)
    if (t->dims[d] != 1) return "an axis other than the last";
  return NULL;
}
