/* function.c: the function being emitted and its run-time errors
 * (cg.h).
 *
 * Every generated function (graph function, segment, outlined loop
 * body) has the parameters (inputs, outputs, ws) first, an entry block
 * holding its allocas, an i32 status slot and an error exit returning
 * it. cg_fail_if / cg_check_index store a code and branch there; the
 * exit is deleted when nothing reaches it (CgFn.can_fail), and callers
 * then skip the status test. cg_unsupported is the compile-time
 * diagnostic of every emitter. cg_graph_fn compiles a subgraph through
 * the hook the entry builder installs (graph_fn.c), so control-flow
 * emitters call downward only.
 */
#include "codegen/llvm/cg.h"

#include <string.h>

#include "runtime/rlxrt.h"

/* Start a function: entry block (allocas), status slot, error exit. */
void cg_fn_begin(Cg *cg, CgFn *f, LLVMValueRef fn, CgPlan *plan) {
  memset(f, 0, sizeof *f);
  f->fn = fn;
  f->plan = plan;
  f->in = LLVMGetParam(fn, 0);
  f->out = LLVMGetParam(fn, 1);
  f->ws = LLVMGetParam(fn, 2);
  f->alloca_bb = LLVMAppendBasicBlockInContext(cg->lc, fn, "entry");
  f->err_bb = LLVMAppendBasicBlockInContext(cg->lc, fn, "error");
  LLVMPositionBuilderAtEnd(cg->b, f->alloca_bb);
  f->status = LLVMBuildAlloca(cg->b, cg->t_i32, "status");
  cg->fn = f;
}

/* Finish: current block returns 0; the error block returns status, or
 * is deleted when nothing branches to it (the function cannot fail). */
void cg_fn_finish(Cg *cg) {
  CgFn *f = cg->fn;
  LLVMBuildRet(cg->b, cg_i32(cg, 0));
  f->can_fail = LLVMGetFirstUse(LLVMBasicBlockAsValue(f->err_bb)) != NULL;
  if (!f->can_fail) {
    LLVMDeleteBasicBlock(f->err_bb);
    return;
  }
  LLVMPositionBuilderAtEnd(cg->b, f->err_bb);
  LLVMBuildRet(cg->b, LLVMBuildLoad2(cg->b, cg->t_i32, f->status, ""));
  LLVMMoveBasicBlockAfter(f->err_bb, LLVMGetLastBasicBlock(f->fn));
}

LLVMValueRef cg_alloca(Cg *cg, LLVMTypeRef t, const char *name) {
  LLVMBasicBlockRef cur = LLVMGetInsertBlock(cg->b);
  LLVMValueRef first = LLVMGetFirstInstruction(cg->fn->alloca_bb);
  if (first)
    LLVMPositionBuilderBefore(cg->b, first);
  else
    LLVMPositionBuilderAtEnd(cg->b, cg->fn->alloca_bb);
  LLVMValueRef a = LLVMBuildAlloca(cg->b, t, name);
  LLVMPositionBuilderAtEnd(cg->b, cur);
  return a;
}

LLVMBasicBlockRef cg_block(Cg *cg, const char *name) {
  return LLVMAppendBasicBlockInContext(cg->lc, cg->fn->fn, name);
}

void cg_fail_if(Cg *cg, LLVMValueRef cond, int code) {
  LLVMBasicBlockRef fail = cg_block(cg, "fail");
  LLVMBasicBlockRef ok = cg_block(cg, "ok");
  LLVMValueRef br = LLVMBuildCondBr(cg->b, cond, fail, ok);
  (void)br;
  LLVMPositionBuilderAtEnd(cg->b, fail);
  LLVMBuildStore(cg->b, cg_i32(cg, code), cg->fn->status);
  LLVMBuildBr(cg->b, cg->fn->err_bb);
  LLVMPositionBuilderAtEnd(cg->b, ok);
}

void cg_check_index(Cg *cg, LLVMValueRef idx, LLVMValueRef bound) {
  if (LLVMTypeOf(idx) != cg->t_i64)
    idx = LLVMBuildSExt(cg->b, idx, cg->t_i64, "");
  if (LLVMTypeOf(bound) != cg->t_i64)
    bound = LLVMBuildSExt(cg->b, bound, cg->t_i64, "");
  /* unsigned compare catches negative indices too */
  LLVMValueRef bad = LLVMBuildICmp(cg->b, LLVMIntUGE, idx, bound, "");
  cg_fail_if(cg, bad, RLX_ERR_INDEX);
}

void cg_fail_if_nonzero(Cg *cg, LLVMValueRef code) {
  LLVMBasicBlockRef fail = cg_block(cg, "fail");
  LLVMBasicBlockRef ok = cg_block(cg, "ok");
  LLVMBuildCondBr(cg->b,
                  LLVMBuildICmp(cg->b, LLVMIntNE, code, cg_i32(cg, 0), ""),
                  fail, ok);
  LLVMPositionBuilderAtEnd(cg->b, fail);
  LLVMBuildStore(cg->b, code, cg->fn->status);
  LLVMBuildBr(cg->b, cg->fn->err_bb);
  LLVMPositionBuilderAtEnd(cg->b, ok);
}

bool cg_unsupported(Cg *cg, Node *n, const char *why) {
  cg->failed = true;
  if (why)
    return diag_error(cg->ctx, n->loc, "codegen: op '%s' is not supported: %s",
                      op_name(n->op), why);
  return diag_error(cg->ctx, n->loc, "codegen: op '%s' is not supported",
                    op_name(n->op));
}

LLVMValueRef cg_ptr_array(Cg *cg, LLVMValueRef *v, int n) {
  LLVMTypeRef at = LLVMArrayType(cg->t_ptr, (unsigned)(n ? n : 1));
  LLVMValueRef a = cg_alloca(cg, at, "args");
  for (int i = 0; i < n; i++) {
    LLVMValueRef idx[2] = {cg_i64(cg, 0), cg_i64(cg, i)};
    LLVMBuildStore(cg->b, v[i],
                   LLVMBuildInBoundsGEP2(cg->b, at, a, idx, 2, ""));
  }
  return a;
}

void cg_call_graph_fn(Cg *cg, LLVMValueRef fn, LLVMValueRef *ins, int nin,
                      LLVMValueRef *outs, int nout, LLVMValueRef ws) {
  LLVMValueRef args[3] = {cg_ptr_array(cg, ins, nin), cg_ptr_array(cg, outs, nout),
                          ws};
  cg_fail_if_nonzero(cg, LLVMBuildCall2(cg->b, cg->t_graph_fn, fn, args, 3,
                                        ""));
}

LLVMValueRef cg_graph_layout(Cg *cg, Graph *g) {
  RLX_ASSERT(cg->layout_fn != NULL);
  return cg->layout_fn(cg, g);
}

LLVMValueRef cg_call_layout(Cg *cg, LLVMValueRef fn, LLVMValueRef hdr,
                            LLVMValueRef tab) {
  LLVMTypeRef pp[2] = {cg->t_ptr, cg->t_ptr};
  LLVMValueRef a[2] = {hdr, tab};
  return LLVMBuildCall2(cg->b, LLVMFunctionType(cg->t_i64, pp, 2, 0), fn, a,
                        2, "");
}

LLVMValueRef cg_graph_fn(Cg *cg, Graph *g, int64_t *ws_bytes) {
  RLX_ASSERT(cg->graph_fn != NULL);
  return cg->graph_fn(cg, g, ws_bytes);
}
