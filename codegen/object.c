/* object.c: the module's optimization and output (cg_unit.h).
 *
 * cg_optimize() verifies the module and runs the new pass manager
 * ("mergefunc,default<On>": structurally identical functions are merged
 * first, so repeated layers' loop bodies are optimized once);
 * cg_write_obj()/cg_write_ll() stage the object, assembly or LLVM IR
 * text as output files (output.h): nothing is on disk before
 * out_finish.
 */
#include "codegen/cg_unit.h"
#include "codegen/output.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <string.h>

bool cg_optimize(Cg *cg) {
  char *msg = NULL;
  if (LLVMVerifyModule(cg->mod, LLVMReturnStatusAction, &msg)) {
    diag_error(cg->ctx, (Loc){0, 0},
               "codegen: internal error: invalid LLVM module: %s", msg);
    LLVMDisposeMessage(msg);
    return false;
  }
  LLVMDisposeMessage(msg);
  /* mergefunc first: structurally identical functions (the outlined
   * loop bodies of repeated layers) are optimized and compiled once */
  char pipeline[32];
  snprintf(pipeline, sizeof pipeline, "mergefunc,default<O%d>",
           cg->opt_level);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(po, cg->opt_level >= 2);
  LLVMPassBuilderOptionsSetSLPVectorization(po, cg->opt_level >= 2);
  LLVMPassBuilderOptionsSetLoopUnrolling(po, cg->opt_level >= 2);
  LLVMErrorRef e = LLVMRunPasses(cg->mod, pipeline, cg->tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    char *m = LLVMGetErrorMessage(e);
    diag_error(cg->ctx, (Loc){0, 0}, "codegen: optimization failed: %s", m);
    LLVMDisposeErrorMessage(m);
    return false;
  }
  return true;
}

/* The object or assembly is emitted to memory and staged through out:
 * LLVM never opens the output itself (it would abort with "LLVM ERROR:
 * IO failure on output stream" on a full disk). */
bool cg_write_obj(Cg *cg, OutSet *out, const char *path, bool assembly) {
  char *err = NULL;
  LLVMMemoryBufferRef buf = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(
          cg->tm, cg->mod, assembly ? LLVMAssemblyFile : LLVMObjectFile,
          &err, &buf)) {
    diag_error(cg->ctx, (Loc){0, 0}, "codegen: cannot generate '%s': %s",
               path, err ? err : "");
    LLVMDisposeMessage(err);
    return false;
  }
  bool ok = out_add(out, path, LLVMGetBufferStart(buf),
                    LLVMGetBufferSize(buf));
  LLVMDisposeMemoryBuffer(buf);
  return ok;
}

bool cg_write_ll(Cg *cg, OutSet *out, const char *path) {
  char *text = LLVMPrintModuleToString(cg->mod);
  bool ok = out_add(out, path, text, strlen(text));
  LLVMDisposeMessage(text);
  return ok;
}
