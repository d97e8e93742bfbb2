/* loops.c: counted loops, outlined (parallel) loop bodies shared or not.
 *
 * cg_loop_begin/end build `for (i = begin; i < end; i++)` as a guarded
 * do-while with a phi index (the canonical form LLVM's vectorizer
 * likes), with optional loop-carried values.
 *
 * cg_par_begin/end outline a loop body into an internal function
 * `i32 body(ptr in, ptr out, ptr ws, vals..., i64 b, i64 e)` that runs
 * iterations [b, e). Serially (grain <= 0) the caller calls it once
 * over [0, n). Bodies are never inlined: their noalias parameters keep
 * the loops vectorizable, and the graph function stays small (LLVM's
 * O2 pipeline is superlinear on one huge function). In parallel a task
 * `void task(ptr ctx, i64 b, i64 e)`
 * unpacks a context struct {in, out, ws, i32 status, vals...} built on
 * the caller's stack and calls body; a non-zero status from any chunk is
 * stored (atomically) in the context and returned by the caller after
 * rlx_parallel_for. Chunks are disjoint iteration ranges, so as long as
 * iterations are independent the result does not depend on threads.
 */
#include "codegen/llvm/cg.h"

#include <llvm-c/DebugInfo.h> /* LLVMTemporaryMDNode */

#include <string.h>

LLVMValueRef cg_loop_begin(Cg *cg, CgLoop *l, LLVMValueRef begin,
                           LLVMValueRef end, LLVMValueRef *carry, int nc) {
  RLX_ASSERT(nc >= 0 && nc <= CG_MAX_CARRY);
  memset(l, 0, sizeof *l);
  l->pre = LLVMGetInsertBlock(cg->b);
  l->body = cg_block(cg, "loop");
  l->exit = cg_block(cg, "loop.end");
  l->end = end;
  l->nc = nc;
  LLVMValueRef go = LLVMBuildICmp(cg->b, LLVMIntSLT, begin, end, "");
  LLVMBuildCondBr(cg->b, go, l->body, l->exit);
  LLVMPositionBuilderAtEnd(cg->b, l->body);
  l->idx = LLVMBuildPhi(cg->b, cg->t_i64, "i");
  LLVMAddIncoming(l->idx, &begin, &l->pre, 1);
  for (int k = 0; k < nc; k++) {
    l->init[k] = carry[k];
    l->phi[k] = LLVMBuildPhi(cg->b, LLVMTypeOf(carry[k]), "c");
    LLVMAddIncoming(l->phi[k], &carry[k], &l->pre, 1);
    carry[k] = l->phi[k];
  }
  return l->idx;
}

void cg_loop_end(Cg *cg, CgLoop *l, LLVMValueRef *carry) {
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
  LLVMValueRef next = LLVMBuildNSWAdd(cg->b, l->idx, cg_i64(cg, 1), "");
  LLVMAddIncoming(l->idx, &next, &latch, 1);
  for (int k = 0; k < l->nc; k++)
    LLVMAddIncoming(l->phi[k], &carry[k], &latch, 1);
  LLVMValueRef more = LLVMBuildICmp(cg->b, LLVMIntSLT, next, l->end, "");
  LLVMValueRef br = LLVMBuildCondBr(cg->b, more, l->body, l->exit);
  if (l->interleave > 1) { /* !llvm.loop !{self, !{"...count", N}} */
    LLVMMetadataRef hint[2] = {
        LLVMMDStringInContext2(cg->lc, "llvm.loop.interleave.count", 26),
        LLVMValueAsMetadata(cg_i32(cg, l->interleave))};
    LLVMMetadataRef self = LLVMTemporaryMDNode(cg->lc, NULL, 0);
    LLVMMetadataRef ops[2] = {self, LLVMMDNodeInContext2(cg->lc, hint, 2)};
    LLVMMetadataRef id = LLVMMDNodeInContext2(cg->lc, ops, 2);
    LLVMMetadataReplaceAllUsesWith(self, id);
    LLVMSetMetadata(br, LLVMGetMDKindIDInContext(cg->lc, "llvm.loop", 9),
                    LLVMMetadataAsValue(cg->lc, id));
  }
  LLVMMoveBasicBlockAfter(l->exit, latch);
  LLVMPositionBuilderAtEnd(cg->b, l->exit);
  for (int k = 0; k < l->nc; k++) {
    LLVMValueRef phi = LLVMBuildPhi(cg->b, LLVMTypeOf(l->init[k]), "");
    LLVMValueRef v[2] = {l->init[k], carry[k]};
    LLVMBasicBlockRef bb[2] = {l->pre, latch};
    LLVMAddIncoming(phi, v, bb, 2);
    carry[k] = phi;
  }
}

static void add_attr(Cg *cg, LLVMValueRef fn, unsigned idx, const char *nm) {
  unsigned k = LLVMGetEnumAttributeKindForName(nm, strlen(nm));
  LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(cg->lc, k, 0));
}

void cg_noinline(Cg *cg, LLVMValueRef fn) {
  add_attr(cg, fn, LLVMAttributeFunctionIndex, "noinline");
}

void cg_optnone(Cg *cg, LLVMValueRef fn) {
  add_attr(cg, fn, LLVMAttributeFunctionIndex, "optnone");
}

LLVMValueRef cg_par_begin(Cg *cg, CgPar *p, LLVMValueRef n, int64_t grain,
                          LLVMValueRef *vals, int nv, bool noalias) {
  RLX_ASSERT(nv >= 0 && nv <= CG_MAX_PAR_VALS);
  memset(p, 0, sizeof *p);
  p->outer_fn = cg->fn;
  p->outer_bb = LLVMGetInsertBlock(cg->b);
  p->nv = nv;
  p->n = n;
  p->grain = grain;
  LLVMTypeRef pt[CG_MAX_PAR_VALS + 5];
  pt[0] = pt[1] = pt[2] = cg->t_ptr;
  for (int i = 0; i < nv; i++) {
    p->outer_vals[i] = vals[i];
    pt[3 + i] = LLVMTypeOf(vals[i]);
  }
  pt[3 + nv] = pt[4 + nv] = cg->t_i64;
  LLVMTypeRef ft = LLVMFunctionType(cg->t_i32, pt, (unsigned)nv + 5, 0);
  char name[32];
  snprintf(name, sizeof name, "rlx.body.%d", cg->uniq++);
  p->body = LLVMAddFunction(cg->mod, name, ft);
  LLVMSetLinkage(p->body, LLVMInternalLinkage);
  cg_fn_attrs(cg, p->body);
  cg_noinline(cg, p->body);
  for (int i = 0; i < nv; i++)
    if (noalias && LLVMTypeOf(vals[i]) == cg->t_ptr)
      add_attr(cg, p->body, (unsigned)i + 4, "noalias");
  cg_fn_begin(cg, &p->body_fn, p->body, p->outer_fn->plan);
  for (int i = 0; i < nv; i++) vals[i] = LLVMGetParam(p->body, 3 + i);
  p->nfsrc0 = cg->nfsrc; /* the body's copies of prologue markers */
  for (int i = 0; i < nv; i++) {
    Node *fs = cg_fused_src_of(cg, p->outer_vals[i]);
    if (fs && cg->nfsrc < CG_MAX_FSRC) {
      cg->fsrc[cg->nfsrc].n = fs;
      cg->fsrc[cg->nfsrc].root = NULL; /* no epilogues on the CPU */
      cg->fsrc[cg->nfsrc++].p = vals[i];
    }
  }
  LLVMValueRef b = LLVMGetParam(p->body, 3 + nv);
  LLVMValueRef e = LLVMGetParam(p->body, 4 + nv);
  return cg_loop_begin(cg, &p->loop, b, e, NULL, 0);
}

/* Task wrapper: unpack the context, run body, record a failure. */
static LLVMValueRef build_task(Cg *cg, CgPar *p, LLVMTypeRef st) {
  char name[32];
  snprintf(name, sizeof name, "rlx.task.%d", cg->uniq++);
  LLVMValueRef t = LLVMAddFunction(cg->mod, name, cg->t_task_fn);
  LLVMSetLinkage(t, LLVMInternalLinkage);
  cg_fn_attrs(cg, t);
  LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(cg->lc, t, "entry");
  LLVMPositionBuilderAtEnd(cg->b, bb);
  LLVMValueRef ctx = LLVMGetParam(t, 0), args[CG_MAX_PAR_VALS + 5];
  for (int i = 0; i < p->nv + 3; i++) {
    unsigned f = (unsigned)(i < 3 ? i : i + 1);
    LLVMValueRef gp = LLVMBuildStructGEP2(cg->b, st, ctx, f, "");
    args[i] = LLVMBuildLoad2(cg->b, LLVMStructGetTypeAtIndex(st, f), gp, "");
  }
  args[p->nv + 3] = LLVMGetParam(t, 1);
  args[p->nv + 4] = LLVMGetParam(t, 2);
  LLVMValueRef r = LLVMBuildCall2(cg->b, LLVMGlobalGetValueType(p->body),
                                  p->body, args, (unsigned)p->nv + 5, "");
  LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(cg->lc, t, "f");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->lc, t, "d");
  LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntNE, r, cg_i32(cg, 0), ""),
                  fail, done);
  LLVMPositionBuilderAtEnd(cg->b, fail);
  LLVMValueRef sp = LLVMBuildStructGEP2(cg->b, st, ctx, 3, "");
  LLVMValueRef s = LLVMBuildStore(cg->b, r, sp);
  LLVMSetOrdering(s, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(s, 4);
  LLVMBuildBr(cg->b, done);
  LLVMPositionBuilderAtEnd(cg->b, done);
  LLVMBuildRetVoid(cg->b);
  return t;
}

static void call_parallel(Cg *cg, CgPar *p) {
  LLVMTypeRef ft[CG_MAX_PAR_VALS + 4];
  ft[0] = ft[1] = ft[2] = cg->t_ptr;
  ft[3] = cg->t_i32;
  for (int i = 0; i < p->nv; i++) ft[4 + i] = LLVMTypeOf(p->outer_vals[i]);
  LLVMTypeRef st = LLVMStructTypeInContext(cg->lc, ft, (unsigned)p->nv + 4, 0);
  LLVMValueRef task = build_task(cg, p, st);
  LLVMPositionBuilderAtEnd(cg->b, p->outer_bb);
  LLVMValueRef ctx = cg_alloca(cg, st, "par.ctx");
  CgFn *o = cg->fn;
  LLVMValueRef v[CG_MAX_PAR_VALS + 4] = {o->in, o->out, o->ws, cg_i32(cg, 0)};
  for (int i = 0; i < p->nv; i++) v[4 + i] = p->outer_vals[i];
  for (int i = 0; i < p->nv + 4; i++)
    LLVMBuildStore(cg->b, v[i],
                   LLVMBuildStructGEP2(cg->b, st, ctx, (unsigned)i, ""));
  LLVMValueRef args[4] = {p->n, cg_i64(cg, p->grain), task, ctx};
  cg_call(cg, "rlx_parallel_for", cg->t_void, args, 4);
  LLVMValueRef sp = LLVMBuildStructGEP2(cg->b, st, ctx, 3, "");
  if (p->body_fn.can_fail)
    cg_fail_if_nonzero(cg, LLVMBuildLoad2(cg->b, cg->t_i32, sp, ""));
}

/* Call p->body from p->outer_bb: directly over [0, n), or through
 * rlx_parallel_for. */
static void par_call(Cg *cg, CgPar *p) {
  if (p->grain > 0) {
    call_parallel(cg, p);
    return;
  }
  LLVMPositionBuilderAtEnd(cg->b, p->outer_bb);
  CgFn *o = cg->fn;
  LLVMValueRef args[CG_MAX_PAR_VALS + 5] = {o->in, o->out, o->ws};
  for (int i = 0; i < p->nv; i++) args[3 + i] = p->outer_vals[i];
  args[3 + p->nv] = cg_i64(cg, 0);
  args[4 + p->nv] = p->n;
  LLVMValueRef r = LLVMBuildCall2(cg->b, LLVMGlobalGetValueType(p->body),
                                  p->body, args, (unsigned)p->nv + 5, "");
  if (p->body_fn.can_fail) cg_fail_if_nonzero(cg, r);
}

void cg_par_end(Cg *cg, CgPar *p) {
  cg_loop_end(cg, &p->loop, NULL);
  cg->nfsrc = p->nfsrc0;
  cg_fn_finish(cg);
  cg->fn = p->outer_fn;
  par_call(cg, p);
}

void cg_par_call(Cg *cg, LLVMValueRef body, bool can_fail, LLVMValueRef n,
                 int64_t grain, const LLVMValueRef *vals, int nv) {
  RLX_ASSERT(nv >= 0 && nv <= CG_MAX_PAR_VALS);
  CgPar p;
  memset(&p, 0, sizeof p);
  p.outer_fn = cg->fn;
  p.outer_bb = LLVMGetInsertBlock(cg->b);
  p.nv = nv;
  for (int i = 0; i < nv; i++) p.outer_vals[i] = vals[i];
  p.n = n;
  p.grain = grain;
  p.body = body;
  p.body_fn.can_fail = can_fail;
  par_call(cg, &p);
}

int64_t cg_grain(int64_t n, int64_t per_iter) {
  if (per_iter < 1) per_iter = 1;
  if (n < 2 || n * per_iter < (int64_t)1 << 16) return 0;
  int64_t g = ((int64_t)1 << 15) / per_iter;
  return g < 1 ? 1 : g;
}

/* ---- shared bodies (cg_par_shared / cg_par_keep) ---- */
#define BODY_BUCKETS 4096

struct CgBody {
  uint64_t hash;
  int nkey, ncmp;
  int64_t *key;
  const Node **cmp;
  LLVMValueRef fn;
  bool can_fail;
  struct CgBody *next;
};

static uint64_t key_hash(const CgKey *k) {
  uint64_t h = 1469598103934665603u;
  for (int i = 0; i < k->nkey; i++)
    h = (h ^ (uint64_t)k->key[i]) * 1099511628211u;
  for (int i = 0; i < k->ncmp; i++)
    h = (h ^ ir_node_hash_local(k->cmp[i])) * 1099511628211u;
  return h;
}

static struct CgBody **bucket(Cg *cg, uint64_t h) {
  if (!cg->bodies)
    cg->bodies = arena_alloc(cg->ctx->arena, sizeof *cg->bodies * BODY_BUCKETS);
  return &cg->bodies[h & (BODY_BUCKETS - 1)];
}

/* A body reading a prologue (cg_fused_src) computes the fused tree
 * behind it, which no key describes: such bodies are not shared. */
static bool any_prologue(Cg *cg, const LLVMValueRef *vals, int nv) {
  for (int i = 0; i < nv && cg->nfsrc; i++)
    if (cg_fused_src_of(cg, vals[i])) return true;
  return false;
}

bool cg_par_shared(Cg *cg, const CgKey *k, LLVMValueRef n, int64_t grain,
                   const LLVMValueRef *vals, int nv) {
  if (any_prologue(cg, vals, nv)) return false;
  uint64_t h = key_hash(k);
  for (struct CgBody *b = *bucket(cg, h); b; b = b->next) {
    if (b->hash != h || b->nkey != k->nkey || b->ncmp != k->ncmp ||
        memcmp(b->key, k->key, sizeof *k->key * (size_t)k->nkey))
      continue;
    int i = 0;
    while (i < k->ncmp && ir_node_same_local(b->cmp[i], k->cmp[i])) i++;
    if (i < k->ncmp) continue;
    cg_par_call(cg, b->fn, b->can_fail, n, grain, vals, nv);
    return true;
  }
  return false;
}

void cg_par_keep(Cg *cg, const CgKey *k, const CgPar *p) {
  if (any_prologue(cg, p->outer_vals, p->nv)) return;
  Arena *a = cg->ctx->arena;
  struct CgBody *b = arena_alloc(a, sizeof *b);
  b->hash = key_hash(k), b->nkey = k->nkey, b->ncmp = k->ncmp;
  b->key = arena_alloc(a, sizeof *b->key * (size_t)(k->nkey + 1));
  memcpy(b->key, k->key, sizeof *b->key * (size_t)k->nkey);
  b->cmp = arena_alloc(a, sizeof *b->cmp * (size_t)(k->ncmp + 1));
  if (k->ncmp) memcpy(b->cmp, k->cmp, sizeof *b->cmp * (size_t)k->ncmp);
  b->fn = p->body;
  b->can_fail = p->body_fn.can_fail;
  struct CgBody **head = bucket(cg, b->hash);
  b->next = *head;
  *head = b;
}
