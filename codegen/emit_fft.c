/* emit_fft.c -- fft (language.md §6.8): one call of rlx_fft_c64 over the
 * rows of the last axis, with the runtime's scratch
 * (rlx_fft_scratch_bytes: twiddles and working buffers, computed per
 * call).  The inverse flag and norm become the call's constants.
 */
#include <string.h>

#include "codegen/cg.h"
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

bool cg_emit_fft(Cg *cg, Node *n) {
  if (n->in[0]->type.dt != DT_C64 || n->in[0]->type.rank < 1)
    return cg_unsupported(cg, n, "operand must be a c64 tensor of rank >= 1");
  int64_t rows, len;
  fft_dims(n, &rows, &len);
  if (rows * len == 0) return true;
  LLVMValueRef args[7] = {
      cg_i64(cg, rows), cg_i64(cg, len),
      cg_i32(cg, ir_attr_bool(n, ATTR_INVERSE, false)),
      cg_i32(cg, norm_code(n)), cg_buf(cg, n->in[0]), cg_buf(cg, n),
      cg_scratch(cg, n)};
  LLVMValueRef rc = cg_call(cg, "rlx_fft_c64", cg->t_i32, args, 7);
  cg_fail_if(cg, LLVMBuildICmp(cg->b, LLVMIntNE, rc, cg_i32(cg, 0), ""),
             RLX_ERR_INVALID);
  return true;
}
