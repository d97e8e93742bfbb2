/* emit_fft.c -- fft (language.md §6.8): one call of rlx_fft_c64_tab over
 * the rows of the last axis, with the runtime's scratch
 * (rlx_fft_scratch_bytes: working buffers) and its tables (twiddles,
 * Bluestein's chirp and kernel): n is known here, so the compiler
 * computes them once with the runtime's own code (rlx_fft_tables,
 * fft_tables.c, linked in) and emits them as a read-only constant, one
 * per (n, direction) in the module; above RLX_FFT_TABLES_MAX bytes (or
 * for a target of the other byte order) it passes NULL and the call
 * computes them into scratch.  The inverse
 * flag and norm become the call's constants.
 */
#include <stdio.h>
#include <string.h>

#include "codegen/cg.h"
#include "codegen/emit_ops.h"
#include "runtime/rlxrt.h"

static int norm_code(const Node *n) {
  const char *w = ir_attr_word(n, ATTR_NORM);
  if (w && strcmp(w, "forward") == 0) return RLX_FFT_NORM_FORWARD;
  if (w && strcmp(w, "ortho") == 0) return RLX_FFT_NORM_ORTHO;
  return RLX_FFT_NORM_BACKWARD;
}

/* rows and length of the transform of node n */
static void fft_dims(const Node *n, int64_t *rows, int64_t *len) {
  const Type *t = &n->in[0]->type;
  *len = t->dims[t->rank - 1];
  *rows = *len ? type_numel(t) / *len : 0;
}

int64_t cg_scratch_fft(Cg *cg, Node *n) {
  (void)cg;
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

bool cg_emit_fft(Cg *cg, Node *n) {
  if (n->in[0]->type.dt != DT_C64 || n->in[0]->type.rank < 1)
    return cg_unsupported(cg, n, "operand must be a c64 tensor of rank >= 1");
  int64_t rows, len;
  fft_dims(n, &rows, &len);
  if (rows * len == 0) return true;
  int inverse = ir_attr_bool(n, ATTR_INVERSE, false);
  LLVMValueRef args[8] = {
      cg_i64(cg, rows),       cg_i64(cg, len),       cg_i32(cg, inverse),
      cg_i32(cg, norm_code(n)), cg_buf(cg, n->in[0]), cg_buf(cg, n),
      cg_scratch(cg, n),      fft_tables(cg, len, inverse)};
  LLVMValueRef rc = cg_call(cg, "rlx_fft_c64_tab", cg->t_i32, args, 8);
  cg_fail_if(cg, LLVMBuildICmp(cg->b, LLVMIntNE, rc, cg_i32(cg, 0), ""),
             RLX_ERR_INVALID);
  return true;
}
