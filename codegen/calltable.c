/* calltable.c: long runs of calls in a segment become a table.
 *
 * A segment of a large graph (graph_fn.c) is mostly calls of outlined bodies
 * whose arguments are the segment's (inputs, outputs, ws), workspace
 * addresses ws + C, input/output pointers (*inputs[i]) + C and
 * constants: about five LLVM instructions per node, which LLVM's module
 * passes and instruction selection then pay for. A run of such calls
 * (nothing else with an effect between them) becomes one call
 * d(inputs, outputs, ws, table, words) of a dispatch function that
 * walks a constant table of i64 words: per call a case number, then the
 * words of its addresses (an offset; for an input or output pointer its
 * index and an offset). Each case (a callee with one pattern
 * of argument bases and constants) is one call site in the dispatch
 * loop, so the code no longer grows with the run, only the table does;
 * runs with the same cases share one dispatch function. A segment left
 * with only such calls is not kept as a function: its calls move to the
 * caller. The calls run in the same order with the same arguments, so
 * results are the same bits.
 */
#include "codegen/cg_unit.h"

#include <string.h>

enum { MIN_RUN = 16, MAX_ARGS = 24, MAX_CASES = 256 };

/* One argument: a segment parameter, base + offset (base a parameter or
 * the pointer loaded from (parameter)[idx]), or a constant. */
typedef enum { A_PARAM, A_OFF, A_LOAD_OFF, A_CONST } ArgTag;
typedef struct {
  ArgTag tag;
  int param;     /* 0, 1, 2: inputs, outputs, ws */
  int64_t idx;   /* A_LOAD_OFF: the pointer array's index, a table word */
  int64_t off;   /* A_OFF / A_LOAD_OFF: byte offset, a table word */
  LLVMValueRef c;
} Arg;

typedef struct {
  LLVMValueRef callee;
  LLVMTypeRef fty;
  unsigned cconv, nargs;
  Arg a[MAX_ARGS]; /* idx and off are table words, not the key */
} Case;

/* A dispatch function and the cases it was built for (Cg.dispatch). */
typedef struct CgDispatch {
  LLVMValueRef fn;
  Case *cases;
  int ncases;
  struct CgDispatch *next;
} CgDispatch;

/* The run being collected; arrays sized for the whole function. */
typedef struct {
  LLVMValueRef *calls, *dead;
  int ncalls, ndead;
  Case *cases;
  int ncases, max_cases;
  int64_t *words;
  size_t nwords;
} Run;

static int param_index(LLVMValueRef fn, LLVMValueRef v) {
  for (unsigned i = 0; i < 3; i++)
    if (LLVMGetParam(fn, i) == v) return (int)i;
  return -1;
}

/* The byte offset of `gep i8, base, C` (the form of every address a
 * segment computes), or false. */
static bool byte_gep(LLVMValueRef v, LLVMValueRef *base, int64_t *off) {
  if (!LLVMIsAGetElementPtrInst(v) || LLVMGetNumOperands(v) != 2)
    return false;
  LLVMTypeRef et = LLVMGetGEPSourceElementType(v);
  LLVMValueRef i = LLVMGetOperand(v, 1);
  if (!LLVMIsAConstantInt(i) || LLVMGetTypeKind(et) != LLVMIntegerTypeKind ||
      LLVMGetIntTypeWidth(et) != 8)
    return false;
  *base = LLVMGetOperand(v, 0);
  *off = LLVMConstIntGetSExtValue(i);
  return true;
}

/* A pointer read from the inputs or outputs array (which generated code
 * never writes): load (param) or load (gep ptr, param, i). */
static bool array_load(LLVMValueRef v, LLVMValueRef fn, int *param,
                       int64_t *idx) {
  if (!LLVMIsALoadInst(v) || LLVMGetTypeKind(LLVMTypeOf(v)) !=
                                 LLVMPointerTypeKind)
    return false;
  LLVMValueRef p = LLVMGetOperand(v, 0);
  *idx = 0;
  if (LLVMIsAGetElementPtrInst(p) && LLVMGetNumOperands(p) == 2 &&
      LLVMGetTypeKind(LLVMGetGEPSourceElementType(p)) ==
          LLVMPointerTypeKind &&
      LLVMIsAConstantInt(LLVMGetOperand(p, 1))) {
    *idx = LLVMConstIntGetSExtValue(LLVMGetOperand(p, 1));
    p = LLVMGetOperand(p, 0);
  }
  *param = param_index(fn, p);
  return *param == 0 || *param == 1;
}

static bool classify(LLVMValueRef v, LLVMValueRef fn, Arg *a) {
  memset(a, 0, sizeof *a);
  LLVMValueRef base;
  if (LLVMIsConstant(v)) {
    a->tag = A_CONST;
    a->c = v;
    return true;
  }
  if ((a->param = param_index(fn, v)) >= 0) {
    a->tag = A_PARAM;
    return true;
  }
  if (array_load(v, fn, &a->param, &a->idx)) {
    a->tag = A_LOAD_OFF;
    return true;
  }
  if (!byte_gep(v, &base, &a->off)) return false;
  if ((a->param = param_index(fn, base)) >= 0) {
    a->tag = A_OFF;
    return true;
  }
  a->tag = A_LOAD_OFF;
  return array_load(base, fn, &a->param, &a->idx);
}

static bool same_case(const Case *x, const Case *y) {
  if (x->callee != y->callee || x->cconv != y->cconv || x->nargs != y->nargs)
    return false;
  for (unsigned i = 0; i < x->nargs; i++) {
    const Arg *a = &x->a[i], *b = &y->a[i];
    if (a->tag != b->tag || a->param != b->param || a->c != b->c)
      return false;
  }
  return true;
}

/* A call that can join a run: a direct call (not of an intrinsic) whose
 * result is unused, every argument classified. Appends its table words. */
static bool add_call(Run *r, LLVMValueRef call, LLVMValueRef fn) {
  LLVMValueRef callee = LLVMGetCalledValue(call);
  if (!LLVMIsAFunction(callee) || LLVMGetIntrinsicID(callee) ||
      LLVMGetFirstUse(call) || LLVMGetNumArgOperands(call) > MAX_ARGS)
    return false;
  Case c = {.callee = callee, .fty = LLVMGetCalledFunctionType(call),
            .cconv = LLVMGetInstructionCallConv(call),
            .nargs = LLVMGetNumArgOperands(call)};
  for (unsigned i = 0; i < c.nargs; i++)
    if (!classify(LLVMGetOperand(call, i), fn, &c.a[i]))
      return false;
  int k = 0;
  while (k < r->ncases && !same_case(&r->cases[k], &c)) k++;
  if (k == r->max_cases) return false;
  if (k == r->ncases) r->cases[r->ncases++] = c;
  r->calls[r->ncalls++] = call;
  r->words[r->nwords++] = k;
  for (unsigned i = 0; i < c.nargs; i++) {
    if (c.a[i].tag == A_LOAD_OFF) r->words[r->nwords++] = c.a[i].idx;
    if (c.a[i].tag == A_OFF || c.a[i].tag == A_LOAD_OFF)
      r->words[r->nwords++] = c.a[i].off;
  }
  return true;
}

/* The table as a constant global of i64 words in the target's order. */
static LLVMValueRef table_global(Cg *cg, const Run *r) {
  bool big = LLVMByteOrder(LLVMGetModuleDataLayout(cg->mod)) == LLVMBigEndian;
  size_t n = r->nwords * 8;
  char *bytes = arena_tmp_alloc(cg->ctx->arena, n);
  for (size_t i = 0; i < r->nwords; i++)
    for (int b = 0; b < 8; b++)
      bytes[i * 8 + (size_t)b] =
          (char)((uint64_t)r->words[i] >> (8 * (big ? 7 - b : b)));
  LLVMValueRef init = LLVMConstStringInContext2(cg->lc, bytes, n, 1);
  arena_tmp_free(cg->ctx->arena, bytes);
  char name[32];
  snprintf(name, sizeof name, "rlx.calls.tab.%d", cg->uniq++);
  LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(init), name);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMInternalLinkage);
  LLVMSetUnnamedAddr(g, 1);
  LLVMSetAlignment(g, 8);
  return g;
}

static LLVMValueRef table_word(Cg *cg, LLVMValueRef tab, LLVMValueRef pos) {
  LLVMValueRef p = LLVMBuildInBoundsGEP2(cg->b, cg->t_i64, tab, &pos, 1, "");
  LLVMValueRef w = LLVMBuildLoad2(cg->b, cg->t_i64, p, "");
  LLVMSetAlignment(w, 8);
  return w;
}

/* void rlx.calls.N(inputs, outputs, ws, table, words): the calls of a
 * table of r's cases, in order. */
static LLVMValueRef build_dispatch(Cg *cg, const Run *r) {
  LLVMTypeRef pt[5] = {cg->t_ptr, cg->t_ptr, cg->t_ptr, cg->t_ptr, cg->t_i64};
  char name[32];
  snprintf(name, sizeof name, "rlx.calls.%d", cg->uniq++);
  LLVMValueRef fn =
      LLVMAddFunction(cg->mod, name, LLVMFunctionType(cg->t_void, pt, 5, 0));
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  cg_fn_attrs(cg, fn);
  cg_noinline(cg, fn);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(cg->lc, fn, "e");
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(cg->lc, fn, "l");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->lc, fn, "d");
  LLVMValueRef tab = LLVMGetParam(fn, 3), end = LLVMGetParam(fn, 4);
  LLVMPositionBuilderAtEnd(cg->b, entry);
  LLVMValueRef any = LLVMBuildICmp(cg->b, LLVMIntSGT, end, cg_i64(cg, 0), "");
  LLVMBuildCondBr(cg->b, any, loop, done);
  LLVMPositionBuilderAtEnd(cg->b, loop);
  LLVMValueRef pos = LLVMBuildPhi(cg->b, cg->t_i64, "pos");
  LLVMValueRef zero = cg_i64(cg, 0);
  LLVMAddIncoming(pos, &zero, &entry, 1);
  LLVMValueRef sw = LLVMBuildSwitch(cg->b, table_word(cg, tab, pos), done,
                                    (unsigned)r->ncases);
  for (int k = 0; k < r->ncases; k++) {
    const Case *c = &r->cases[k];
    LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(cg->lc, fn, "c");
    LLVMAddCase(sw, cg_i64(cg, k), bb);
    LLVMPositionBuilderAtEnd(cg->b, bb);
    LLVMValueRef args[MAX_ARGS];
    int64_t w = 1;
    for (unsigned i = 0; i < c->nargs; i++) {
      const Arg *a = &c->a[i];
      LLVMValueRef base = a->tag == A_CONST
                              ? a->c
                              : LLVMGetParam(fn, (unsigned)a->param);
      if (a->tag == A_LOAD_OFF) {
        LLVMValueRef ix = table_word(
            cg, tab, LLVMBuildAdd(cg->b, pos, cg_i64(cg, w++), ""));
        base = LLVMBuildLoad2(cg->b, cg->t_ptr,
                              LLVMBuildInBoundsGEP2(cg->b, cg->t_ptr, base,
                                                    &ix, 1, ""), "");
      }
      if (a->tag == A_OFF || a->tag == A_LOAD_OFF) {
        LLVMValueRef off = table_word(
            cg, tab, LLVMBuildAdd(cg->b, pos, cg_i64(cg, w++), ""));
        base = LLVMBuildGEP2(cg->b, cg->t_i8, base, &off, 1, "");
      }
      args[i] = base;
    }
    LLVMValueRef call = LLVMBuildCall2(cg->b, c->fty, c->callee, args,
                                       c->nargs, "");
    LLVMSetInstructionCallConv(call, c->cconv);
    LLVMValueRef next = LLVMBuildAdd(cg->b, pos, cg_i64(cg, w), "");
    LLVMAddIncoming(pos, &next, &bb, 1);
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, next, end, ""),
                    loop, done);
  }
  LLVMPositionBuilderAtEnd(cg->b, done);
  LLVMBuildRetVoid(cg->b);
  return fn;
}

/* The dispatch function for r's cases: an earlier one, or a new one. */
static LLVMValueRef dispatch_fn(Cg *cg, const Run *r) {
  for (CgDispatch *d = cg->dispatch; d; d = d->next) {
    bool same = d->ncases == r->ncases;
    for (int k = 0; same && k < r->ncases; k++)
      same = same_case(&d->cases[k], &r->cases[k]);
    if (same) return d->fn;
  }
  CgDispatch *d = arena_alloc(cg->ctx->arena, sizeof *d);
  d->cases = arena_alloc(cg->ctx->arena, (size_t)r->ncases * sizeof *d->cases);
  memcpy(d->cases, r->cases, (size_t)r->ncases * sizeof *d->cases);
  d->ncases = r->ncases;
  d->fn = build_dispatch(cg, r);
  d->next = cg->dispatch;
  cg->dispatch = d;
  return d->fn;
}

static bool is_dispatch(const Cg *cg, LLVMValueRef callee) {
  for (const CgDispatch *d = cg->dispatch; d; d = d->next)
    if (d->fn == callee) return true;
  return false;
}

/* Replace the run's calls by one call of its dispatch function, placed
 * at the last call (the address arithmetic between the calls has no
 * effect, so the calls may all run there), then drop what only the
 * calls used. */
static void rewrite(Cg *cg, Run *r, LLVMValueRef fn) {
  LLVMValueRef d = dispatch_fn(cg, r);
  LLVMPositionBuilderBefore(cg->b, r->calls[r->ncalls - 1]);
  LLVMValueRef a[5] = {LLVMGetParam(fn, 0), LLVMGetParam(fn, 1),
                       LLVMGetParam(fn, 2), table_global(cg, r),
                       cg_i64(cg, (int64_t)r->nwords)};
  LLVMBuildCall2(cg->b, LLVMGlobalGetValueType(d), d, a, 5, "");
  for (int i = 0; i < r->ncalls; i++)
    LLVMInstructionEraseFromParent(r->calls[i]);
  for (int i = r->ndead - 1; i >= 0; i--)
    if (!LLVMGetFirstUse(r->dead[i]))
      LLVMInstructionEraseFromParent(r->dead[i]);
}

static void flush(Cg *cg, Run *r, LLVMValueRef fn) {
  if (r->ncalls >= MIN_RUN) rewrite(cg, r, fn);
  r->ncalls = r->ndead = r->ncases = 0;
  r->nwords = 0;
}

/* Pure address arithmetic a run may step over: a GEP, or a load from a
 * parameter's pointer array (never written by generated code). */
static bool is_address(LLVMValueRef i, LLVMValueRef fn) {
  int p;
  int64_t idx;
  return LLVMIsAGetElementPtrInst(i) || array_load(i, fn, &p, &idx);
}

/* fn is one block of unused allocas, dispatch calls and `ret 0`: emit
 * the calls at the builder's position with the current function's
 * arguments instead. */
static bool hoist(Cg *cg, LLVMValueRef fn) {
  LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(fn);
  if (LLVMGetNextBasicBlock(b)) return false;
  for (LLVMValueRef i = LLVMGetFirstInstruction(b); i;
       i = LLVMGetNextInstruction(i)) {
    bool ok = LLVMIsAAllocaInst(i) ? !LLVMGetFirstUse(i)
              : LLVMIsACallInst(i) ? is_dispatch(cg, LLVMGetCalledValue(i))
              : LLVMIsAReturnInst(i) && LLVMGetNumOperands(i) == 1 &&
                    LLVMIsAConstantInt(LLVMGetOperand(i, 0)) &&
                    LLVMConstIntGetZExtValue(LLVMGetOperand(i, 0)) == 0;
    if (!ok) return false;
  }
  CgFn *o = cg->fn;
  for (LLVMValueRef i = LLVMGetFirstInstruction(b); i;
       i = LLVMGetNextInstruction(i)) {
    if (!LLVMIsACallInst(i)) continue;
    LLVMValueRef d = LLVMGetCalledValue(i);
    LLVMValueRef a[5] = {o->in, o->out, o->ws, LLVMGetOperand(i, 3),
                         LLVMGetOperand(i, 4)};
    LLVMBuildCall2(cg->b, LLVMGlobalGetValueType(d), d, a, 5, "");
  }
  return true;
}

bool cg_call_tables(Cg *cg, LLVMValueRef fn) {
  size_t ninstr = 0, nwords = 0;
  int ncalls = 0;
  for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(fn); b;
       b = LLVMGetNextBasicBlock(b))
    for (LLVMValueRef i = LLVMGetFirstInstruction(b); i;
         i = LLVMGetNextInstruction(i)) {
      ninstr++;
      if (LLVMIsACallInst(i)) {
        nwords += 1 + 2 * LLVMGetNumArgOperands(i);
        ncalls++;
      }
    }
  Arena *ar = cg->ctx->arena;
  LLVMBasicBlockRef saved = LLVMGetInsertBlock(cg->b);
  int max_cases = ncalls < MAX_CASES ? ncalls : MAX_CASES;
  Run r = {.calls = arena_tmp_alloc(ar, ninstr * sizeof *r.calls),
           .dead = arena_tmp_alloc(ar, ninstr * sizeof *r.dead),
           .max_cases = max_cases,
           .cases = arena_tmp_alloc(ar, sizeof *r.cases *
                                            (size_t)(max_cases + 1)),
           .words = arena_tmp_alloc(ar, nwords * sizeof *r.words)};
  for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(fn); b;
       b = LLVMGetNextBasicBlock(b)) {
    LLVMValueRef next;
    for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = next) {
      next = LLVMGetNextInstruction(i);
      if (is_address(i, fn))
        r.dead[r.ndead++] = i;
      else if (!(LLVMIsACallInst(i) && add_call(&r, i, fn)))
        flush(cg, &r, fn);
    }
    flush(cg, &r, fn);
  }
  arena_tmp_free(ar, r.calls);
  arena_tmp_free(ar, r.dead);
  arena_tmp_free(ar, r.cases);
  arena_tmp_free(ar, r.words);
  if (saved) LLVMPositionBuilderAtEnd(cg->b, saved);
  return hoist(cg, fn);
}
