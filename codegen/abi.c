/* abi.c: graph functions, exported entry points, signatures, storage.
 *
 * cg_graph_fn() compiles one Graph into an internal function
 * `i32 f(ptr inputs, ptr outputs, ptr ws)`: fuse, ask every node's
 * emitter for scratch, plan memory, then run the emitters in node order
 * and finally copy returned values that were not computed in place
 * (inputs, constants, aliases, repeated returns) into their outputs.
 * cg_entry() wraps it in the exported ABI function (abi.md §3): it
 * checks the CPU at the first call (RLX_ERR_CPU), a NULL workspace makes
 * it rlx_alloc/rlx_free its own, allocation failure returns
 * RLX_ERR_NOMEM. It also defines NAME_signature().
 * cg_buf() maps a node to a pointer in the current function.
 */
#include "codegen/cg.h"

#include <string.h>

#include "runtime/rlxrt.h"

CgSlot *cg_slot(Cg *cg, Node *n) {
  CgPlan *p = cg->fn->plan;
  RLX_ASSERT(n->id >= 0 && n->id < p->nslots);
  return &p->slot[n->id];
}

static LLVMValueRef arg_ptr(Cg *cg, LLVMValueRef arr, int i) {
  LLVMValueRef idx = cg_i64(cg, i);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(cg->b, cg->t_ptr, arr, &idx, 1, "");
  return LLVMBuildLoad2(cg->b, cg->t_ptr, p, "");
}

static LLVMValueRef const_global(Cg *cg, Node *n) {
  int64_t bytes = type_bytes(&n->type);
  LLVMValueRef init = LLVMConstStringInContext(
      cg->lc, (const char *)n->data, (unsigned)bytes, 1);
  LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(init), "rlx.const");
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  LLVMSetAlignment(g, 64);
  return g;
}

LLVMValueRef cg_buf(Cg *cg, Node *n) {
  CgSlot *s = cg_slot(cg, n);
  switch (s->kind) {
  case CG_SLOT_INPUT: return arg_ptr(cg, cg->fn->in, s->index);
  case CG_SLOT_OUTPUT: return arg_ptr(cg, cg->fn->out, s->index);
  case CG_SLOT_WS: return cg_gep(cg, cg->fn->ws, cg_i64(cg, s->offset));
  case CG_SLOT_CONST:
    if (!s->global) s->global = const_global(cg, n);
    return s->global;
  case CG_SLOT_ALIAS: return cg_buf(cg, s->alias);
  case CG_SLOT_FUSED: return cg_fused_src(cg, n); /* prologue marker */
  default:
    RLX_ASSERT(!"cg_buf: node has no storage");
    return NULL;
  }
}

LLVMValueRef cg_scratch(Cg *cg, Node *n) {
  CgSlot *s = cg_slot(cg, n);
  RLX_ASSERT(s->scratch_off >= 0);
  return cg_gep(cg, cg->fn->ws, cg_i64(cg, s->scratch_off));
}

/* Fuse, collect scratch requests, plan. */
static CgPlan *plan_graph(Cg *cg, Graph *g) {
  CgPlan *p = cg_plan_new(cg->ctx, g);
  cg_attention_groups(p, g);
  if (!cg_fuse(g, p)) return NULL;
  int64_t *scratch = arena_alloc(cg->ctx->arena,
                                 sizeof(int64_t) * (size_t)(g->next_id + 1));
  struct CgPlan *outer = cg->planning;
  cg->planning = p;
  bool ok = true;
  for (int i = 0; ok && i < g->nnodes; i++) {
    Node *n = g->nodes[i];
    const CgOpEntry *e = cg_op_entry(n->op);
    if (e->scratch && p->slot[n->id].kind == CG_SLOT_NONE) {
      scratch[n->id] = e->scratch(cg, n);
      ok = scratch[n->id] >= 0;
    }
  }
  cg->planning = outer;
  return ok && cg_memplan(g, p, scratch) ? p : NULL;
}

static void copy_outputs(Cg *cg, Graph *g) {
  for (int j = 0; j < g->nret; j++) {
    Node *r = g->rets[j];
    CgSlot *s = cg_slot(cg, r);
    if (s->kind == CG_SLOT_OUTPUT && s->index == j) continue;
    cg_memcpy(cg, arg_ptr(cg, cg->fn->out, j), cg_buf(cg, r),
              type_bytes(&r->type));
  }
}

/* Does n's emitter produce code (not fused, folded, aliased or an
 * argument)? */
static bool emits_code(Cg *cg, const Node *n) {
  CgSlotKind k = cg->fn->plan->slot[n->id].kind;
  return k != CG_SLOT_FUSED && k != CG_SLOT_FOLDED && k != CG_SLOT_ALIAS &&
         n->op != OP_INPUT && n->op != OP_PARAM && n->op != OP_CONST;
}

static bool emit_nodes(Cg *cg, Graph *g, int from, int to) {
  for (int i = from; i < to; i++)
    if (!cg_emit_node(cg, g->nodes[i])) {
      cg->failed = true;
      return false;
    }
  return true;
}

/* Is block s one of the blocks from fn's first up to b? */
static bool at_or_before(LLVMValueRef fn, LLVMBasicBlockRef s,
                         LLVMBasicBlockRef b) {
  for (LLVMBasicBlockRef x = LLVMGetFirstBasicBlock(fn); x;
       x = LLVMGetNextBasicBlock(x)) {
    if (x == s) return true;
    if (x == b) return false;
  }
  return false;
}

/* Does fn branch back to a block at or before the branch (a loop)?
 * Quadratic in the blocks of one segment, which are few. */
static bool has_loop(LLVMValueRef fn) {
  for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(fn); b;
       b = LLVMGetNextBasicBlock(b)) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(b);
    unsigned n = t ? LLVMGetNumSuccessors(t) : 0;
    for (unsigned k = 0; k < n; k++)
      if (at_or_before(fn, LLVMGetSuccessor(t, k), b)) return true;
  }
  return false;
}

/* Nodes [from, to) as a function of their own, called from the current
 * one: every value lives in memory (the plan), so a graph splits
 * anywhere between nodes. A segment without loops is only address
 * arithmetic and calls (loop nests are outlined bodies): it is marked
 * optnone, so LLVM neither optimizes it nor selects its instructions
 * with the slow selector. */
static bool emit_segment(Cg *cg, Graph *g, int from, int to) {
  CgFn *outer = cg->fn;
  LLVMBasicBlockRef bb = LLVMGetInsertBlock(cg->b);
  char name[300];
  snprintf(name, sizeof name, "rlx.seg.%s.%d", g->name, cg->uniq++);
  LLVMValueRef fn = LLVMAddFunction(cg->mod, name, cg->t_graph_fn);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  cg_fn_attrs(cg, fn);
  cg_noinline(cg, fn);
  CgFn f;
  cg_fn_begin(cg, &f, fn, outer->plan);
  bool ok = emit_nodes(cg, g, from, to);
  if (ok) cg_fn_finish(cg);
  cg->fn = outer;
  LLVMPositionBuilderAtEnd(cg->b, bb);
  if (!ok) return false;
  if (cg_call_tables(cg, fn)) { /* its calls moved here */
    LLVMDeleteFunction(fn);
    return true;
  }
  if (!has_loop(fn)) cg_optnone(cg, fn);
  LLVMValueRef a[3] = {outer->in, outer->out, outer->ws};
  LLVMValueRef r = LLVMBuildCall2(cg->b, cg->t_graph_fn, fn, a, 3, "");
  if (f.can_fail) cg_fail_if_nonzero(cg, r);
  return true;
}

/* A graph of more than CG_SEGMENT_NODES nodes that emit code becomes a
 * sequence of calls to segment functions of at most that many: LLVM's
 * cost grows faster than linearly in the size of one function. */
static bool emit_body(Cg *cg, Graph *g, LLVMValueRef fn, CgPlan *p) {
  CgFn f;
  cg_fn_begin(cg, &f, fn, p);
  int total = 0;
  for (int i = 0; i < g->nnodes; i++) total += emits_code(cg, g->nodes[i]);
  bool ok = true;
  if (total <= CG_SEGMENT_NODES) ok = emit_nodes(cg, g, 0, g->nnodes);
  for (int i = 0, cnt = 0, from = 0; ok && total > CG_SEGMENT_NODES &&
                                     i < g->nnodes; i++) {
    cnt += emits_code(cg, g->nodes[i]);
    if (cnt == CG_SEGMENT_NODES || i == g->nnodes - 1) {
      ok = emit_segment(cg, g, from, i + 1);
      from = i + 1;
      cnt = 0;
    }
  }
  if (!ok) return false;
  copy_outputs(cg, g);
  cg_fn_finish(cg);
  return true;
}

LLVMValueRef cg_graph_fn(Cg *cg, Graph *g, int64_t *ws_bytes) {
  for (CgSub *s = cg->subs; s; s = s->next)
    if (s->g == g) {
      *ws_bytes = s->ws_bytes;
      return s->fn;
    }
  CgFn *saved_fn = cg->fn;
  LLVMBasicBlockRef saved_bb = LLVMGetInsertBlock(cg->b);
  LLVMValueRef fn = NULL;
  CgPlan *p = plan_graph(cg, g);
  if (p) {
    char name[256];
    snprintf(name, sizeof name, "rlx.graph.%s.%d", g->name, cg->uniq++);
    fn = LLVMAddFunction(cg->mod, name, cg->t_graph_fn);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    cg_fn_attrs(cg, fn);
    if (!emit_body(cg, g, fn, p)) fn = NULL;
  }
  cg->fn = saved_fn;
  if (saved_bb) LLVMPositionBuilderAtEnd(cg->b, saved_bb);
  if (!fn) return NULL;
  CgSub *s = arena_alloc(cg->ctx->arena, sizeof *s);
  *s = (CgSub){g, fn, p->ws_bytes, cg->subs};
  cg->subs = s;
  *ws_bytes = p->ws_bytes;
  return fn;
}

static LLVMValueRef ptr_array(Cg *cg, LLVMValueRef *v, int n) {
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
  LLVMValueRef args[3] = {ptr_array(cg, ins, nin), ptr_array(cg, outs, nout),
                          ws};
  cg_fail_if_nonzero(cg, LLVMBuildCall2(cg->b, cg->t_graph_fn, fn, args, 3,
                                        ""));
}

/* A private constant holding s[0..len) and a terminating NUL. */
static LLVMValueRef cstr(Cg *cg, const char *s, size_t len) {
  LLVMValueRef init = LLVMConstStringInContext(cg->lc, s, (unsigned)len, 0);
  LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(init), "rlx.str");
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  return g;
}

/* Before its first run, an entry checks that the CPU has the extensions
 * its code uses (rlx_cpu_check, cg->cpu_needs) and returns RLX_ERR_CPU
 * if not; one state word per object caches the answer. The wrapper
 * itself is compiled for the baseline CPU. Emits the check at the
 * builder's position and leaves it in the block where the entry goes on. */
static void build_cpu_check(Cg *cg, LLVMValueRef fn, const char *name) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef st = LLVMGetNamedGlobal(cg->mod, "rlx.cpu.state");
  if (!st) {
    st = LLVMAddGlobal(cg->mod, cg->t_i32, "rlx.cpu.state");
    LLVMSetInitializer(st, cg_i32(cg, 0));
    LLVMSetLinkage(st, LLVMPrivateLinkage);
  }
  LLVMBasicBlockRef chk = LLVMAppendBasicBlockInContext(cg->lc, fn, "cpu");
  LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(cg->lc, fn, "nocpu");
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(cg->lc, fn, "go");
  LLVMValueRef v = LLVMBuildLoad2(b, cg->t_i32, st, "");
  LLVMSetOrdering(v, LLVMAtomicOrderingAcquire);
  LLVMSetAlignment(v, 4);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, v, cg_i32(cg, 1), ""), go,
                  chk);
  LLVMPositionBuilderAtEnd(b, chk);
  LLVMValueRef a[3] = {st, cstr(cg, cg->cpu_needs, strlen(cg->cpu_needs)),
                       cstr(cg, name, strlen(name))};
  LLVMValueRef r = cg_call(cg, "rlx_cpu_check", cg->t_i32, a, 3);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, r, cg_i32(cg, 0), ""), go,
                  bad);
  LLVMPositionBuilderAtEnd(b, bad);
  LLVMBuildRet(b, r);
  LLVMPositionBuilderAtEnd(b, go);
}

/* NAME(in, out, ws): check the CPU, allocate the workspace when ws is
 * NULL. */
static void build_wrapper(Cg *cg, const char *name, LLVMValueRef impl,
                          int64_t ws_bytes) {
  LLVMValueRef fn = LLVMAddFunction(cg->mod, name, cg->t_graph_fn);
  cg_fn_attrs_baseline(cg, fn);
  LLVMBuilderRef b = cg->b;
  LLVMBasicBlockRef e = LLVMAppendBasicBlockInContext(cg->lc, fn, "entry");
  LLVMBasicBlockRef given = LLVMAppendBasicBlockInContext(cg->lc, fn, "ws");
  LLVMBasicBlockRef own = LLVMAppendBasicBlockInContext(cg->lc, fn, "alloc");
  LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(cg->lc, fn, "run");
  LLVMBasicBlockRef nomem = LLVMAppendBasicBlockInContext(cg->lc, fn, "nomem");
  LLVMValueRef in = LLVMGetParam(fn, 0), out = LLVMGetParam(fn, 1);
  LLVMValueRef ws = LLVMGetParam(fn, 2);
  LLVMPositionBuilderAtEnd(b, e);
  if (cg->cpu_needs[0]) build_cpu_check(cg, fn, name);
  LLVMBuildCondBr(b, LLVMBuildIsNull(b, ws, ""), own, given);
  LLVMPositionBuilderAtEnd(b, given);
  LLVMValueRef a3[3] = {in, out, ws};
  LLVMBuildRet(b, LLVMBuildCall2(b, cg->t_graph_fn, impl, a3, 3, ""));
  LLVMPositionBuilderAtEnd(b, own);
  LLVMValueRef sz = cg_i64(cg, ws_bytes);
  LLVMValueRef mem = cg_call(cg, "rlx_alloc", cg->t_ptr, &sz, 1);
  LLVMBuildCondBr(b, LLVMBuildIsNull(b, mem, ""), nomem, run);
  LLVMPositionBuilderAtEnd(b, nomem);
  LLVMBuildRet(b, cg_i32(cg, RLX_ERR_NOMEM));
  LLVMPositionBuilderAtEnd(b, run);
  a3[2] = mem;
  LLVMValueRef r = LLVMBuildCall2(b, cg->t_graph_fn, impl, a3, 3, "");
  cg_call(cg, "rlx_free", cg->t_void, &mem, 1);
  LLVMBuildRet(b, r);
}

static LLVMValueRef const_global_of(Cg *cg, LLVMValueRef init) {
  LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(init), "rlx.sig");
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  return g;
}

const char *cg_out_name(const Node *n, int j, char *buf) {
  if (n->name) return n->name;
  snprintf(buf, 64, "output%d", j);
  return buf;
}

/* &base[off] for a constant global array of element type t. */
static LLVMValueRef const_at(Cg *cg, LLVMValueRef base, LLVMTypeRef t,
                             size_t off) {
  LLVMValueRef i = cg_i64(cg, (int64_t)off);
  return LLVMConstInBoundsGEP2(t, base, &i, 1);
}

/* Descriptors of a graph's arguments (out: its return values), each
 * rlx_tensor_desc {ptr name; i32 dtype; i32 rank; ptr dims; i32 kind}.
 * The names (NUL-separated) and the dims live in one global each, so a
 * graph with 10^5 arguments makes three globals, not 2 * 10^5. */
static LLVMValueRef desc_array(Cg *cg, LLVMTypeRef dt, Node **v, int n,
                               bool out) {
  if (!n) return LLVMConstNull(cg->t_ptr);
  Arena *a = cg->ctx->arena;
  size_t nchars = 0, ndims = 0;
  size_t *name_at = arena_alloc(a, sizeof(size_t) * (size_t)n);
  char buf[64];
  for (int i = 0; i < n; i++) {
    name_at[i] = nchars;
    nchars += strlen(cg_out_name(v[i], i, buf)) + 1;
    ndims += (size_t)v[i]->type.rank;
  }
  char *chars = arena_alloc(a, nchars);
  LLVMValueRef *dims = arena_alloc(a, sizeof *dims * (ndims + 1));
  for (int i = 0; i < n; i++) {
    const char *nm = cg_out_name(v[i], i, buf);
    memcpy(chars + name_at[i], nm, strlen(nm) + 1);
  }
  LLVMValueRef names = cstr(cg, chars, nchars), dim_tab = NULL;
  ndims = 0;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < v[i]->type.rank; k++)
      dims[ndims++] = cg_i64(cg, v[i]->type.dims[k]);
  if (ndims)
    dim_tab = const_global_of(cg, LLVMConstArray2(cg->t_i64, dims, ndims));
  LLVMValueRef *d = arena_alloc(a, sizeof *d * (size_t)n);
  ndims = 0;
  for (int i = 0; i < n; i++) {
    const Type *t = &v[i]->type;
    int kind = out                  ? RLX_ARG_OUTPUT
               : v[i]->op == OP_PARAM ? RLX_ARG_PARAM
                                      : RLX_ARG_INPUT;
    LLVMValueRef f[5] = {
        const_at(cg, names, cg->t_i8, name_at[i]), cg_i32(cg, (int)t->dt),
        cg_i32(cg, t->rank),
        t->rank ? const_at(cg, dim_tab, cg->t_i64, ndims)
                : LLVMConstNull(cg->t_ptr),
        cg_i32(cg, kind)};
    ndims += (size_t)t->rank;
    d[i] = LLVMConstNamedStruct(dt, f, 5);
  }
  return const_global_of(cg, LLVMConstArray2(dt, d, (uint64_t)n));
}

static LLVMTypeRef named_struct(Cg *cg, const char *name, LLVMTypeRef *f,
                                unsigned n) {
  LLVMTypeRef t = LLVMGetTypeByName2(cg->lc, name);
  if (t) return t;
  t = LLVMStructCreateNamed(cg->lc, name);
  LLVMStructSetBody(t, f, n, 0);
  return t;
}

static void build_signature(Cg *cg, Graph *g, const char *name, int64_t ws) {
  LLVMTypeRef df[5] = {cg->t_ptr, cg->t_i32, cg->t_i32, cg->t_ptr,
                       cg->t_i32};
  LLVMTypeRef dt = named_struct(cg, "rlx_tensor_desc", df, 5);
  LLVMTypeRef sf[6] = {cg->t_ptr, cg->t_i32, cg->t_i32,
                       cg->t_ptr, cg->t_ptr, cg->t_i64};
  LLVMTypeRef st = named_struct(cg, "rlx_signature", sf, 6);
  LLVMValueRef f[6] = {cstr(cg, name, strlen(name)), cg_i32(cg, g->nargs),
                       cg_i32(cg, g->nret),
                       desc_array(cg, dt, g->args, g->nargs, false),
                       desc_array(cg, dt, g->rets, g->nret, true),
                       cg_i64(cg, ws)};
  LLVMValueRef sig = const_global_of(cg, LLVMConstNamedStruct(st, f, 6));
  char fname[300];
  snprintf(fname, sizeof fname, "%s_signature", name);
  LLVMTypeRef ft = LLVMFunctionType(cg->t_ptr, NULL, 0, 0);
  LLVMValueRef fn = LLVMAddFunction(cg->mod, fname, ft);
  cg_fn_attrs_baseline(cg, fn);
  LLVMPositionBuilderAtEnd(cg->b,
                           LLVMAppendBasicBlockInContext(cg->lc, fn, "e"));
  LLVMBuildRet(cg->b, sig);
}

bool cg_entry(Cg *cg, Graph *g, const char *name, int64_t *ws_bytes) {
  LLVMValueRef impl = cg_graph_fn(cg, g, ws_bytes);
  if (!impl) return false;
  build_wrapper(cg, name, impl, *ws_bytes);
  build_signature(cg, g, name, *ws_bytes);
  return true;
}
