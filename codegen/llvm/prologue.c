/* prologue.c: markers standing for prologue-fused nodes (cg.h).
 *
 * A FUSED elementwise tree whose only consumer is a reduction-family op
 * is computed inside that op's loads (plan/fuse.c). cg_buf of such a
 * node returns a marker: an unused alloca bound to the node. Loads
 * through a marker (cg_load, cg_ops_vload) recognize it with
 * cg_fused_src_of and evaluate the tree through the fused_load hook
 * (installed by the emitter layer). Markers live for one emitter
 * (cg_emit_node resets them) and are rebound to an outlined body's
 * copies by cg_par_begin. The marker of an op storing its epilogue
 * (plan/epilogues.c) also holds the group root and its storage, which
 * cg_store through it writes.
 */
#include "codegen/llvm/cg.h"

static LLVMValueRef fn_of(LLVMValueRef v) {
  return LLVMIsAArgument(v) ? LLVMGetParamParent(v)
                            : LLVMGetBasicBlockParent(LLVMGetInstructionParent(v));
}

LLVMValueRef cg_fused_src(Cg *cg, Node *n) {
  LLVMValueRef here = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  for (int i = cg->nfsrc - 1; i >= 0; i--) /* one per node and function */
    if (cg->fsrc[i].n == n && fn_of(cg->fsrc[i].p) == here)
      return cg->fsrc[i].p;
  RLX_ASSERT(cg->nfsrc < CG_MAX_FSRC);
  LLVMValueRef p = cg_alloca(cg, cg->t_i8, "fused.src");
  cg->fsrc[cg->nfsrc].n = n;
  cg->fsrc[cg->nfsrc].root = NULL;
  cg->fsrc[cg->nfsrc++].p = p;
  return p;
}

void cg_epi_bind(Cg *cg, LLVMValueRef p, Node *root, LLVMValueRef root_p) {
  for (int i = cg->nfsrc - 1; i >= 0; i--)
    if (cg->fsrc[i].p == p) {
      cg->fsrc[i].root = root;
      cg->fsrc[i].root_p = root_p;
      return;
    }
}

Node *cg_epi_root(Cg *cg, LLVMValueRef p, LLVMValueRef *root_p) {
  for (int i = cg->nfsrc - 1; i >= 0; i--)
    if (cg->fsrc[i].p == p) {
      *root_p = cg->fsrc[i].root_p;
      return cg->fsrc[i].root;
    }
  return NULL;
}

Node *cg_fused_src_of(Cg *cg, LLVMValueRef p) {
  for (int i = cg->nfsrc - 1; i >= 0; i--)
    if (cg->fsrc[i].p == p) return cg->fsrc[i].n;
  return NULL;
}
