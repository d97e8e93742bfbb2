/* entry.c: the exported entry points and their signatures (abi.md §3).
 *
 * cg_entry() compiles the graph (cg_compile_graph) and wraps it in the
 * exported ABI function: it checks the CPU at the first call
 * (RLX_ERR_CPU), a NULL workspace makes it rlx_alloc/rlx_free its own,
 * allocation failure returns RLX_ERR_NOMEM; ENTRY_train's wrapper
 * first turns its one state buffer into the graph's state arguments and
 * points the in-place returns at their arguments. It also defines
 * NAME_signature(), whose argument descriptors keep all names in one
 * string and all dims in one array per entry.
 */
#include "codegen/cg_unit.h"

#include <string.h>

#include "runtime/rlxrt.h"

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

/* &p[k] for a pointer array p. */
static LLVMValueRef ptr_at(Cg *cg, LLVMValueRef p, int64_t k) {
  LLVMValueRef i = cg_i64(cg, k);
  return LLVMBuildInBoundsGEP2(cg->b, cg->t_ptr, p, &i, 1, "");
}

void cg_train_args(Unit *u, CgEntry *x) {
  const TrainAbi *a = &u->train_abi;
  Graph *g = x->g;
  int fixed = g->nargs - a->nstate;
  Arena *ar = u->ctx->arena;
  x->train = a;
  x->nargs = fixed + 1;
  x->args = arena_alloc(ar, sizeof(Node *) * (size_t)x->nargs);
  memcpy(x->args, g->args, sizeof(Node *) * (size_t)fixed);
  Node *s = arena_alloc(ar, sizeof *s);
  const char *nm = "opt_state";
  char buf[64];
  for (int i = 1, k = 0; k < fixed; k++)
    if (!strcmp(g->args[k]->name, nm)) {
      snprintf(buf, sizeof buf, "opt_state_%d", i++);
      nm = buf;
      k = -1;
    }
  s->op = OP_INPUT;
  s->name = arena_strdup(ar, nm);
  s->type.dt = a->state_dt;
  s->type.rank = 1;
  s->type.dims[0] = a->state_bytes / dt_size(a->state_dt);
  s->loc = g->loc;
  x->args[fixed] = s;
  x->state = s;
  x->nret = a->nout;
}

void cg_train_arrays(Cg *cg, const CgEntry *e, LLVMValueRef *in,
                         LLVMValueRef *out) {
  LLVMBuilderRef b = cg->b;
  const Graph *g = e->g;
  const TrainAbi *a = e->train;
  int fixed = g->nargs - a->nstate;
  LLVMValueRef in2 = LLVMBuildArrayAlloca(b, cg->t_ptr,
                                          cg_i64(cg, g->nargs), "in2");
  LLVMValueRef out2 = LLVMBuildArrayAlloca(b, cg->t_ptr,
                                           cg_i64(cg, g->nret), "out2");
  if (fixed) cg_memcpy(cg, in2, *in, 8 * (int64_t)fixed);
  if (a->nout) cg_memcpy(cg, out2, *out, 8 * (int64_t)a->nout);
  LLVMValueRef st = LLVMBuildLoad2(b, cg->t_ptr, ptr_at(cg, *in, fixed), "");
  for (int k = 0; k < a->nstate; k++) {
    LLVMValueRef off = cg_i64(cg, a->state_off[k]);
    LLVMBuildStore(b, LLVMBuildInBoundsGEP2(b, cg->t_i8, st, &off, 1, ""),
                   ptr_at(cg, in2, fixed + k));
  }
  for (int j = a->nout; j < g->nret; j++) {
    LLVMValueRef p = LLVMBuildLoad2(b, cg->t_ptr,
                                    ptr_at(cg, in2, g->ret_into[j]), "");
    LLVMBuildStore(b, p, ptr_at(cg, out2, j));
  }
  *in = in2;
  *out = out2;
}

/* The entry's symbols in order of first appearance among its
 * arguments' dims (each term's symbols in their canonical order). */
void cg_entry_syms(Cg *cg, CgEntry *x) {
  int ns = dim_nsyms();
  x->syms = arena_alloc(cg->ctx->arena, sizeof(int) * (size_t)(ns + 1));
  x->nsyms = 0;
  bool *seen = arena_alloc(cg->ctx->arena, (size_t)ns + 1);
  memset(seen, 0, (size_t)ns + 1);
  for (int i = 0; i < x->nargs; i++)
    for (int d = 0; d < x->args[i]->type.rank; d++) {
      int sy[DIM_MAX_SYMS], k = dim_syms(x->args[i]->type.dims[d], sy);
      for (int j = 0; j < k; j++)
        if (!seen[sy[j]]) {
          seen[sy[j]] = true;
          x->syms[x->nsyms++] = sy[j];
        }
    }
}

/* NAME(in, out, ws[, sizes]): check the CPU (and the sizes), allocate
 * the workspace when ws is NULL (ENTRY_train: expand its state buffer
 * first, train_arrays). */
/* Return code from the builder's position when cond holds, else go on. */
static void ret_if(Cg *cg, LLVMValueRef fn, LLVMValueRef cond, int code) {
  LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(cg->lc, fn, "");
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(cg->lc, fn, "");
  LLVMBuildCondBr(cg->b, cond, bad, go);
  LLVMPositionBuilderAtEnd(cg->b, bad);
  LLVMBuildRet(cg->b, cg_i32(cg, code));
  LLVMPositionBuilderAtEnd(cg->b, go);
}

/* Sizes into ws's header and, for a run-time layout, the layout into
 * its table (fn: return RLX_ERR_SIZE when the sizes overflow; NULL:
 * they are known not to). */
static void prepare_ws(Cg *cg, const CgEntry *x, LLVMValueRef fn,
                       LLVMValueRef sizes, LLVMValueRef ws) {
  if (!sizes) return;
  cg_store_sizes(cg, x, sizes, ws);
  if (!x->layout) return;
  LLVMValueRef r = cg_call_layout(cg, x->layout, ws,
                                  cg_gep(cg, ws, cg_i64(cg, x->dyn_tab)));
  if (fn)
    ret_if(cg, fn, LLVMBuildICmp(cg->b, LLVMIntSLT, r, cg_i64(cg, 0), ""),
           RLX_ERR_SIZE);
}

/* NAME(in, out, ws[, sizes]): check the CPU and the sizes, allocate the
 * workspace when ws is NULL (ENTRY_train: expand its state buffer
 * first, train_arrays). */
static void build_wrapper(Cg *cg, const CgEntry *x, LLVMValueRef impl) {
  const char *name = x->name;
  LLVMTypeRef p4[4] = {cg->t_ptr, cg->t_ptr, cg->t_ptr, cg->t_ptr};
  LLVMValueRef fn = LLVMAddFunction(
      cg->mod, name,
      x->nsyms ? LLVMFunctionType(cg->t_i32, p4, 4, 0) : cg->t_graph_fn);
  cg_fn_attrs_baseline(cg, fn);
  LLVMBuilderRef b = cg->b;
  LLVMBasicBlockRef e = LLVMAppendBasicBlockInContext(cg->lc, fn, "entry");
  LLVMBasicBlockRef given = LLVMAppendBasicBlockInContext(cg->lc, fn, "ws");
  LLVMBasicBlockRef own = LLVMAppendBasicBlockInContext(cg->lc, fn, "alloc");
  LLVMValueRef in = LLVMGetParam(fn, 0), out = LLVMGetParam(fn, 1);
  LLVMValueRef ws = LLVMGetParam(fn, 2);
  LLVMPositionBuilderAtEnd(b, e);
  if (x->train) cg_train_arrays(cg, x, &in, &out);
  if (cg->cpu_needs[0]) build_cpu_check(cg, fn, name);
  LLVMValueRef sizes = x->nsyms ? LLVMGetParam(fn, 3) : NULL;
  if (sizes)
    ret_if(cg, fn, LLVMBuildNot(b, cg_sizes_ok(cg, x, sizes), ""),
           RLX_ERR_SIZE);
  LLVMBuildCondBr(b, LLVMBuildIsNull(b, ws, ""), own, given);
  LLVMPositionBuilderAtEnd(b, given);
  prepare_ws(cg, x, fn, sizes, ws);
  LLVMValueRef a3[3] = {in, out, ws};
  LLVMBuildRet(b, LLVMBuildCall2(b, cg->t_graph_fn, impl, a3, 3, ""));
  LLVMPositionBuilderAtEnd(b, own);
  LLVMValueRef sz = cg_i64(cg, x->ws_bytes);
  if (x->wsbytes) { /* -1: the sizes overflow, -2: no memory */
    sz = LLVMBuildCall2(b, LLVMFunctionType(cg->t_i64, &cg->t_ptr, 1, 0),
                        x->wsbytes, &sizes, 1, "");
    ret_if(cg, fn, LLVMBuildICmp(b, LLVMIntEQ, sz, cg_i64(cg, -1), ""),
           RLX_ERR_SIZE);
    ret_if(cg, fn, LLVMBuildICmp(b, LLVMIntSLT, sz, cg_i64(cg, 0), ""),
           RLX_ERR_NOMEM);
  }
  LLVMValueRef mem = cg_call(cg, "rlx_alloc", cg->t_ptr, &sz, 1);
  ret_if(cg, fn, LLVMBuildIsNull(b, mem, ""), RLX_ERR_NOMEM);
  prepare_ws(cg, x, NULL, sizes, mem); /* wsbytes checked them */
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
                               bool out, const Node *state) {
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
      dims[ndims++] = cg_i64(cg, dim_is_static(v[i]->type.dims[k])
                                     ? v[i]->type.dims[k] : -1);
  if (ndims)
    dim_tab = const_global_of(cg, LLVMConstArray2(cg->t_i64, dims, ndims));
  LLVMValueRef *d = arena_alloc(a, sizeof *d * (size_t)n);
  ndims = 0;
  for (int i = 0; i < n; i++) {
    const Type *t = &v[i]->type;
    int kind = out                  ? RLX_ARG_OUTPUT
               : v[i] == state        ? RLX_ARG_STATE
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

void cg_entry_signature(Cg *cg, const CgEntry *x) {
  const char *name = x->name;
  int64_t ws = x->ws_bytes;
  LLVMTypeRef df[5] = {cg->t_ptr, cg->t_i32, cg->t_i32, cg->t_ptr,
                       cg->t_i32};
  LLVMTypeRef dt = named_struct(cg, "rlx_tensor_desc", df, 5);
  LLVMTypeRef sf[6] = {cg->t_ptr, cg->t_i32, cg->t_i32,
                       cg->t_ptr, cg->t_ptr, cg->t_i64};
  LLVMTypeRef st = named_struct(cg, "rlx_signature", sf, 6);
  LLVMValueRef f[6] = {cstr(cg, name, strlen(name)), cg_i32(cg, x->nargs),
                       cg_i32(cg, x->nret),
                       desc_array(cg, dt, x->args, x->nargs, false, x->state),
                       desc_array(cg, dt, x->rets, x->nret, true, NULL),
                       cg_i64(cg, x->layout ? -1 : ws)};
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

bool cg_entry(Cg *cg, CgEntry *x) {
  cg_entry_syms(cg, x);
  LLVMValueRef impl = cg_compile_graph(cg, x->g, &x->ws_bytes);
  if (!impl) return false;
  cg_layout_fns(cg, x);
  build_wrapper(cg, x, impl);
  cg_entry_signature(cg, x);
  return true;
}
