/* fft.c -- fft (language.md §6.8): one call of rlx_fft_c64_tab over
 * the rows of the last axis, with the runtime's scratch
 * (rlx_fft_scratch_bytes: working buffers) and its tables (twiddles,
 * Bluestein's chirp and kernel): n is known here, so the compiler
 * computes them once with the runtime's own code (rlx_fft_tables,
 * fft_tables.c, linked in) and emits them as a read-only constant, one
 * per (n, direction) in the module; above RLX_FFT_TABLES_MAX bytes (or
 * for a target of the other byte order) it passes NULL and the call
 * computes them into scratch.  The inverse
 * flag and norm become the call's constants.
 * log_mel / log_mel_backward (rlx_log_mel_*, runtime/fft/log_mel.c):
 * one runtime call each, OPF_F32_F64.
 */
#include <stdio.h>
#include <string.h>

#include "codegen/emit/emit.h"
#include "runtime/rlxrt.h"

static int norm_code(const Node *n) {
  const char *w = ir_attr_word(n, ATTR_NORM);
  if (w && strcmp(w, "forward") == 0) return RLX_FFT_NORM_FORWARD;
  if (w && strcmp(w, "ortho") == 0) return RLX_FFT_NORM_ORTHO;
  return RLX_FFT_NORM_BACKWARD;
}

/* Rows (the leading axes, at their bounds when dynamic) and length of
 * the transform of node n. */
static void fft_dims(const Node *n, int64_t *rows, int64_t *len) {
  const Type *t = &n->in[0]->type;
  *len = t->dims[t->rank - 1];
  *rows = 1;
  for (int i = 0; i + 1 < t->rank; i++) *rows *= dim_bound(t->dims[i]);
}

/* The run-time row count: the leading axes' sizes. */
static LLVMValueRef lead_rows(Cg *cg, const Type *t) {
  Type lead = *t;
  lead.rank--;
  return cg_numel(cg, &lead);
}

/* The scratch grows with the rows (rlx_fft_layout: more slots, up to
 * FFT_SLOTS), so the bound's serves every smaller count. */
static int64_t cg_scratch_fft(Cg *cg, Node *n) {
  (void)cg;
  if (node_unbounded(n)) return CG_SCRATCH_RT; /* cg_fft_scratch_rt */
  int64_t rows, len;
  fft_dims(n, &rows, &len);
  return rlx_fft_scratch_bytes(rows, len);
}

/* The constant tables of an n-point transform, or a null pointer when
 * they exceed RLX_FFT_TABLES_MAX or the target's byte order is not the
 * host's (the tables are the host's floats). Their buffers are the
 * arena's temporaries: out of memory is the compiler's usual error. */
static LLVMValueRef fft_tables(Cg *cg, int64_t len, int inverse) {
  const uint16_t one = 1;
  bool host_big = *(const unsigned char *)&one == 0;
  bool big = LLVMByteOrder(LLVMGetModuleDataLayout(cg->mod)) == LLVMBigEndian;
  if (big != host_big) return LLVMConstPointerNull(cg->t_ptr);
  char name[64];
  snprintf(name, sizeof name, "rlx.fft.%lld.%s", (long long)len,
           inverse ? "inv" : "fwd");
  LLVMValueRef g = LLVMGetNamedGlobal(cg->mod, name);
  if (g) return g;
  int64_t bytes = rlx_fft_tables_bytes(len);
  if (bytes > RLX_FFT_TABLES_MAX) return LLVMConstPointerNull(cg->t_ptr);
  Arena *a = cg->ctx->arena;
  char *tab = arena_tmp_alloc(a, (size_t)bytes);
  void *work = arena_tmp_alloc(a, (size_t)rlx_fft_scratch_bytes(1, len));
  rlx_fft_tables(len, inverse, tab, work);
  g = cg_ops_const_global(
      cg, LLVMConstStringInContext2(cg->lc, tab, (size_t)bytes, 1), name);
  LLVMSetAlignment(g, 64);
  arena_tmp_free(a, work);
  arena_tmp_free(a, tab);
  return g;
}

static bool cg_emit_fft(Cg *cg, Node *n) {
  if (n->in[0]->type.dt != DT_C64 || n->in[0]->type.rank < 1)
    return cg_unsupported(cg, n, "operand must be a c64 tensor of rank >= 1");
  int64_t rows, len;
  fft_dims(n, &rows, &len);
  if (rows * len == 0) return true;
  int inverse = ir_attr_bool(n, ATTR_INVERSE, false);
  LLVMValueRef args[8] = {lead_rows(cg, &n->in[0]->type), /* run time */
                          cg_i64(cg, len),
                          cg_i32(cg, inverse),
                          cg_i32(cg, norm_code(n)),
                          cg_buf(cg, n->in[0]),
                          cg_buf(cg, n),
                          cg_scratch(cg, n),
                          fft_tables(cg, len, inverse)};
  LLVMValueRef rc = cg_call(cg, "rlx_fft_c64_tab", cg->t_i32, args, 8);
  cg_fail_if(cg, LLVMBuildICmp(cg->b, LLVMIntNE, rc, cg_i32(cg, 0), ""),
             RLX_ERR_INVALID);
  return true;
}

/* Dynamic sizes: the leading axes (the row count read at run time; no
 * rows: no work); the transform length is static (its shape rule). */
static const char *fft_dyn(const Node *n) {
  const Type *t = &n->in[0]->type;
  return dim_is_static(t->dims[t->rank - 1]) ? NULL
                                              : "a dynamic transform length";
}

/* Rows without a bound: the formula at the call's rows. */
LLVMValueRef cg_fft_scratch_rt(Cg *cg, Node *n) {
  const Type *t = &n->in[0]->type;
  LLVMValueRef a[2] = {lead_rows(cg, t), cg_i64(cg, t->dims[t->rank - 1])};
  return cg_call(cg, "rlx_fft_scratch_bytes", cg->t_i64, a, 2);
}

/* ---- log_mel, log_mel_backward (runtime/fft/log_mel.c) ---- */

/* spec [..., F]: the product of the leading dims (at their bounds) */
static int64_t spec_rows(const Type *s) {
  int64_t r = 1;
  for (int i = 0; i + 1 < s->rank; i++) r *= dim_bound(s->dims[i]);
  return r;
}

/* log_mel_backward: z = spec filters, rows * M elements (the bound's
 * rows serve every smaller count) */
static int64_t cg_scratch_log_mel(Cg *cg, Node *n) {
  if (n->op != OP_LOG_MEL_BACKWARD) return 0;
  const Type *s = &n->in[0]->type;
  int64_t M = n->in[1]->type.dims[1], d;
  if (type_is_bounded(s))
    return cg_align(spec_rows(s) * M * dt_size(s->dt));
  Type z = *s; /* rows without a bound: a size expression */
  z.dims[z.rank - 1] = M;
  d = cg_plan_bytes_dim(cg->ctx, &z);
  if (d == -1) cg_unsupported(cg, n, "too large a size expression");
  return d;
}

static bool cg_emit_log_mel(Cg *cg, Node *n) {
  const Type *s = &n->in[0]->type;
  RLX_ASSERT(op_dtype_ok(n->op, s->dt)); /* OPF_F32_F64 */
  int64_t F = s->dims[s->rank - 1], M = n->in[1]->type.dims[1];
  LLVMValueRef rows = lead_rows(cg, s); /* read at run time when dynamic */
  if (type_bytes_bound(&n->type) == 0) return true;
  bool f32 = s->dt == DT_F32;
  if (n->op == OP_LOG_MEL) {
    LLVMValueRef a[6] = {rows, cg_i64(cg, F), cg_i64(cg, M),
                         cg_buf(cg, n->in[0]), cg_buf(cg, n->in[1]),
                         cg_buf(cg, n)};
    cg_call(cg, f32 ? "rlx_log_mel_f32" : "rlx_log_mel_f64", cg->t_void, a,
            6);
    return true;
  }
  if (M == 0) { /* no mel bins: no scratch, a zero gradient */
    cg_zero_bytes(cg, cg_buf(cg, n), &n->type);
    return true;
  }
  LLVMValueRef a[8] = {rows, cg_i64(cg, F), cg_i64(cg, M),
                       cg_buf(cg, n->in[0]), cg_buf(cg, n->in[1]),
                       cg_buf(cg, n->in[2]), cg_buf(cg, n),
                       cg_scratch(cg, n)};
  cg_call(cg, f32 ? "rlx_log_mel_backward_f32" : "rlx_log_mel_backward_f64",
          cg->t_void, a, 8);
  return true;
}

/* Dynamic sizes: spec's leading axes (the row count read at run time);
 * the frequency and mel axes static (the shape rule). */
static const char *log_mel_dyn(const Node *n) {
  const Type *s = &n->in[0]->type;
  return dim_is_static(s->dims[s->rank - 1]) &&
                 type_is_static(&n->in[1]->type)
             ? NULL
             : "a dynamic frequency or mel axis";
}

const CgEmitter cg_emitter_fft = {cg_emit_fft, cg_scratch_fft, fft_dyn};
const CgEmitter cg_emitter_log_mel = {cg_emit_log_mel, cg_scratch_log_mel,
                                       log_mel_dyn};
