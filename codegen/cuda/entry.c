/* entry.c: the entry builder of --target=cuda (cuda.h, docs/gpu.md).
 *
 * For each entry graph (ENTRY, ENTRY_grad, ENTRY_jvp, ENTRY_hvp,
 * ENTRY_train) the
 * plan is made exactly as for the CPU (fusion groups, folded
 * transposes, aliases, first-fit workspace offsets: codegen/plan/); the
 * GPU emitters (kernels.c) add one kernel per node that emits code to
 * the device module, and the host module gets the exported
 *   int NAME(const void *const *in, void *const *out, void *ws,
 *            void *stream[, const int64_t *sizes])
 * which checks the sizes (module_sizes: with sizes without a bound it
 * also runs the run-time layout on the host), loads the module at its first call (rlx_gpu_module_load: the
 * driver compiles the PTX once per process), enqueues the kernels in
 * node order on `stream` with rlx_gpu_launch (the private NAME.enqueue)
 * and returns without synchronizing; with --cuda-graph it hands
 * NAME.enqueue to rlx_gpu_graph_run instead, which captures it into a
 * CUDA graph and replays that while the stream, pointers and sizes
 * stay (eight such graphs kept per entry). All pointers are device
 * pointers; a graph needing a workspace gets RLX_ERR_INVALID for a
 * NULL one (no device allocation inside an entry). NAME_signature() is the CPU entry builder's, and
 * so are ENTRY_train's C arguments (cg_train_args: one state buffer)
 * and its expansion into the graph's pointer arrays (cg_train_arrays:
 * state pieces, in-place returns pointing at the params), done here on
 * device pointers.
 * Subgraphs of control nodes (control.c) are planned and emitted the
 * same way through the cu->subgraph hook, once each, into a private
 * enqueue function; a graph's steps are kernel launches or calls of
 * control nodes' host functions (host.c).
 * The host object holds the PTX text (NUL-terminated), the kernel
 * names, the CUfunction cache and the static rlx_gpu_module, and
 * exports NAME_gpu_status(stream): rlx_gpu_status of that module, which
 * reports the errors the kernels recorded (device.c's error word).
 */
#include "codegen/cuda/cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cu_target(const Options *opt) {
  return opt && opt->target && !strcmp(opt->target, "cuda");
}

/* A Cg for opt with target, CPU and features replaced. */
static Cg *cg_for(Unit *u, const char *triple, const char *cpu,
                  const char *attr) {
  const Options *saved = u->opt;
  Options o = *saved;
  o.target = triple, o.mcpu = cpu, o.mattr = attr;
  u->opt = &o;
  Cg *cg = cg_new(u->ctx, u, u->cname);
  u->opt = saved;
  return cg;
}

Cg *cu_host_new(Unit *u) { return cg_for(u, NULL, NULL, NULL); }

/* The device Cg. PTX ISA 7.8 covers sm_80 and sm_90, sm_90a needs 8.0
 * (kernel parameters: cu_finish_module). */
static Cg *device_new(Unit *u) {
  const char *arch = u->opt->gpu_arch ? u->opt->gpu_arch : "sm_80";
  return cg_for(u, "nvptx64-nvidia-cuda", arch,
                strcmp(arch, "sm_90a") ? "+ptx78" : "+ptx80");
}

/* Host-side globals the entries refer to, given their values at the
 * end (the kernel count and PTX are known only then). */
typedef struct {
  LLVMTypeRef t_mod;
  LLVMValueRef mod, kernels; /* rlx_gpu_module, placeholder kernel table */
} Host;

static LLVMValueRef private_global(Cg *cg, LLVMValueRef init, const char *nm,
                                   bool constant) {
  LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(init), nm);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, constant);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetAlignment(g, 8);
  return g;
}

static void host_init(Cu *cu, Host *h) {
  Cg *cg = cu->host;
  LLVMTypeRef f[8] = {cg->t_ptr, cg->t_i32, cg->t_ptr, cg->t_ptr,
                      cg->t_ptr, cg->t_i32, cg->t_i32, cg->t_ptr};
  h->t_mod = LLVMStructTypeInContext(cg->lc, f, 8, 0);
  h->mod = LLVMAddGlobal(cg->mod, h->t_mod, "rlx.gpu.module");
  LLVMSetLinkage(h->mod, LLVMPrivateLinkage);
  LLVMTypeRef z = LLVMArrayType2(cg->t_ptr, 0);
  h->kernels = LLVMAddGlobal(cg->mod, z, "rlx.gpu.kernels.tmp");
  LLVMSetLinkage(h->kernels, LLVMPrivateLinkage);
  LLVMSetInitializer(h->kernels, LLVMConstNull(z));
  LLVMTypeRef p[5] = {cg->t_ptr, cg->t_ptr, cg->t_ptr, cg->t_ptr,
                      cg->t_ptr};
  cu->t_enq = LLVMFunctionType(cg->t_i32, p, 5, 0);
  cu->ktab = h->kernels;
}

/* if (rc != 0) return rc; */
static void ret_if(Cg *cg, LLVMValueRef fn, LLVMValueRef rc) {
  LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(cg->lc, fn, "fail");
  LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(cg->lc, fn, "ok");
  LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntNE, rc, cg_i32(cg, 0),
                                       ""), bad, ok);
  LLVMPositionBuilderAtEnd(cg->b, bad);
  LLVMBuildRet(cg->b, rc);
  LLVMPositionBuilderAtEnd(cg->b, ok);
}

/* if (bad) return code; */
static void ret_code_if(Cg *cg, LLVMValueRef fn, LLVMValueRef bad, int code) {
  ret_if(cg, fn, LLVMBuildMul(cg->b, LLVMBuildZExt(cg->b, bad, cg->t_i32, ""),
                              cg_i32(cg, code), ""));
}

/* RLX_ERR_SIZE unless every launch of the graph whose grid grows with a
 * size without a bound has at most 2^31 - 1 blocks at these sizes
 * (checked before the first launch; bounded grids are checked at
 * compile time, cu_kernel_end_n). */
static void grids_ok(Cu *cu) {
  LLVMValueRef bad = NULL;
  for (int i = 0; i < cu->nlaunch; i++) {
    const CuLaunch *l = &cu->launch[i];
    if (!l->call && l->gdim && (!dim_is_bounded(l->gdim) || l->gdim2))
      cu_grid_blocks(cu->host, l, &bad);
  }
  if (bad) cg_fail_if(cu->host, bad, RLX_ERR_SIZE);
}

/* A graph's enqueue function NAME(in, out, ws, stream, sizes): its
 * launches and control steps in node order (ENTRY_train: after
 * expanding its state buffer, cg_train_arrays). */
static LLVMValueRef build_enqueue(Cu *cu, const char *name,
                                  const CgEntry *x) {
  Cg *cg = cu->host;
  CuHostFn h;
  cu_host_begin(cu, &h, NULL, name);
  grids_ok(cu);
  LLVMValueRef in = h.f.in, out = h.f.out;
  if (x && x->train) cg_train_arrays(cg, x, &in, &out);
  for (int i = 0; i < cu->nlaunch; i++) {
    const CuLaunch *l = &cu->launch[i];
    if (!l->call) {
      cu_host_launch(cu, &h, l, in, out, h.f.ws);
      continue;
    }
    LLVMValueRef a[5] = {in, out, h.f.ws, h.stream, h.f.sizes};
    cg_fail_if_nonzero(cg, LLVMBuildCall2(cg->b, cu->t_enq, l->call, a, 5,
                                          ""));
  }
  return cu_host_end(cu, &h);
}

/* The graph cache of a --cuda-graph entry (rlx_gpu_graph): CU_GRAPHS
 * slots keyed on its C inputs, outputs, workspace and nsizes words of
 * the sizes array its enqueue function receives. */
enum { CU_GRAPHS = 8 };
static LLVMValueRef graph_cache(Cg *cg, const CgEntry *x, int nsizes) {
  LLVMTypeRef kt = LLVMArrayType2(
      cg->t_i64, (uint64_t)CU_GRAPHS *
                     RLX_GPU_GRAPH_WORDS(x->nargs, x->nret, nsizes));
  LLVMValueRef slot = private_global(cg, LLVMConstNull(kt), "rlx.gpu.slots",
                                     false);
  LLVMValueRef f[6] = {slot, cg_i32(cg, x->nargs), cg_i32(cg, x->nret),
                       cg_i32(cg, nsizes), cg_i32(cg, CU_GRAPHS),
                       cg_i64(cg, 0)};
  return private_global(cg, LLVMConstStructInContext(cg->lc, f, 6, 0),
                        "rlx.gpu.graph", false);
}

/* The sizes array of the host functions and kernels (Cu.nsizes i64):
 * every symbol's value at its number (dims.c), from the entry's sizes
 * (its x->syms order; other symbols are no argument's and never read),
 * then with a run-time layout (sizes without a bound) the offsets it
 * gives (cu_layout_sizes); *ovf: whether the layout overflowed
 * (RLX_ERR_SIZE), else NULL. */
static LLVMValueRef module_sizes(Cg *cg, const CgEntry *x, int ndyn,
                                 LLVMValueRef sizes, LLVMValueRef *ovf) {
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef at = LLVMArrayType2(cg->t_i64, (uint64_t)dim_nsyms());
  LLVMValueRef a = LLVMBuildAlloca(b, at, "sizes");
  LLVMBuildStore(b, LLVMConstNull(at), a);
  for (int i = 0; i < x->nsyms; i++) {
    LLVMValueRef k = cg_i64(cg, i), m = cg_i64(cg, x->syms[i]);
    LLVMValueRef v = LLVMBuildLoad2(
        b, cg->t_i64, LLVMBuildInBoundsGEP2(b, cg->t_i64, sizes, &k, 1, ""),
        "");
    LLVMBuildStore(b, v, LLVMBuildInBoundsGEP2(b, cg->t_i64, a, &m, 1, ""));
  }
  *ovf = NULL;
  if (!ndyn) return a;
  LLVMValueRef r;
  a = cu_layout_sizes(cg, a, x->layout, ndyn, &r);
  *ovf = LLVMBuildICmp(b, LLVMIntSLT, r, cg_i64(cg, 0), "");
  return a;
}

/* The exported entry NAME(in, out, ws, stream[, sizes]): check the
 * sizes and ws, load the module, then enqueue the launches, or with
 * --cuda-graph replay (or capture) their graph. */
static LLVMValueRef build_entry(Cu *cu, Host *h, const CgEntry *x,
                                int ndyn) {
  Cg *cg = cu->host;
  char nm[300];
  snprintf(nm, sizeof nm, "%s.enqueue", x->name);
  LLVMValueRef enq = build_enqueue(cu, nm, x);
  LLVMTypeRef pt[5] = {cg->t_ptr, cg->t_ptr, cg->t_ptr, cg->t_ptr,
                       cg->t_ptr};
  LLVMValueRef fn = LLVMAddFunction(
      cg->mod, x->name,
      LLVMFunctionType(cg->t_i32, pt, x->nsyms ? 5 : 4, 0));
  cg_fn_attrs_baseline(cg, fn);
  LLVMBuilderRef b = cg->b;
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(cg->lc, fn, "e"));
  LLVMValueRef p[5];
  LLVMGetParams(fn, p);
  if (x->nsyms) {
    LLVMValueRef ovf;
    ret_code_if(cg, fn, LLVMBuildNot(b, cg_sizes_ok(cg, x, p[4]), ""),
                RLX_ERR_SIZE);
    p[4] = module_sizes(cg, x, ndyn, p[4], &ovf);
    if (ovf) ret_code_if(cg, fn, ovf, RLX_ERR_SIZE);
  } else {
    p[4] = LLVMConstNull(cg->t_ptr);
  }
  if (x->ws_bytes > 0)
    ret_code_if(cg, fn, LLVMBuildIsNull(b, p[2], ""), RLX_ERR_INVALID);
  ret_if(cg, fn, cg_call(cg, "rlx_gpu_module_load", cg->t_i32, &h->mod, 1));
  if (!cg->u->opt->cuda_graph) {
    LLVMBuildRet(b, LLVMBuildCall2(b, cu->t_enq, enq, p, 5, ""));
    return fn;
  }
  int nsizes = x->nsyms ? dim_nsyms() + ndyn : 0;
  LLVMValueRef a[7] = {graph_cache(cg, x, nsizes), enq, p[0], p[1], p[2],
                       p[3], p[4]};
  LLVMBuildRet(b, cg_call(cg, "rlx_gpu_graph_run", cg->t_i32, a, 7));
  return fn;
}

/* Plan g as the CPU does and emit its kernels into cu. */
static CgPlan *emit_graph(Cu *cu, Graph *g) {
  Ctx *ctx = cu->dev->ctx;
  CgPlan *p = cg_plan_new(ctx, g);
  cg_attention_groups(p, g, true);
  cg_xent_pairs(p, g);
  if (!cg_fuse(g, p)) return NULL;
  cg_epilogues(p, g);
  cg_views(p, g, true);
  for (int i = 0; i < g->nnodes; i++) {
    const char *why = cu_dyn_why(cu, p, g->nodes[i]);
    if (why) {
      char m[200];
      snprintf(m, sizeof m, "dynamic sizes (%s)", why);
      cu_unsupported(cu, g->nodes[i], m);
      return NULL;
    }
  }
  int64_t *scratch = arena_alloc(ctx->arena,
                                 sizeof(int64_t) * (size_t)(g->next_id + 1));
  memset(scratch, 0, sizeof(int64_t) * (size_t)(g->next_id + 1));
  for (int i = 0; i < g->nnodes; i++)
    scratch[g->nodes[i]->id] = cu_scratch(cu, p, g->nodes[i]);
  if (cu->dev->failed || !cg_memplan(g, p, scratch)) return NULL;
  cu->nsizes = dim_nsyms() + p->ndyn;
  cu->g = g;
  cu->nin = g->nargs ? g->nargs : 1;
  cu->nout = g->nret ? g->nret : 1;
  cu->nlaunch = 0;
  bool ok = true;
  for (int i = 0; i < g->nnodes; i++)
    ok = cu_emit_node(cu, p, g->nodes[i]) && !cu->dev->failed && ok;
  if (!ok) return NULL;
  for (int j = 0; j < g->nret; j++) {
    CgSlot *s = cg_plan_slot(p, g->rets[j]);
    bool same = s->kind == CG_SLOT_INPUT && g->ret_into &&
                g->ret_into[j] == s->index; /* in place, unchanged */
    if (!(s->kind == CG_SLOT_OUTPUT && s->index == j) && !same &&
        (!type_is_static(&g->rets[j]->type) ||
         type_numel(&g->rets[j]->type) > 0))
      cu_copy_out(cu, p, g->rets[j], j);
  }
  return p;
}

/* cu->subgraph (cuda.h): the enqueue of subgraph g, compiled once. */
static LLVMValueRef subgraph(Cu *cu, Graph *g, int64_t *ws_bytes) {
  for (CuSub *s = cu->subs; s; s = s->next)
    if (s->g == g && s->err == cu->err) {
      *ws_bytes = s->ws_bytes;
      return s->enq;
    }
  /* the enclosing graph's state (planned, not emitted yet) */
  Graph *sg = cu->g;
  int nin = cu->nin, nout = cu->nout, nl = cu->nlaunch, cap = cu->cap;
  int nsizes = cu->nsizes;
  CuLaunch *l = cu->launch;
  cu->launch = NULL, cu->cap = 0;
  CgPlan *p = emit_graph(cu, g);
  LLVMValueRef enq = NULL;
  if (p) {
    char nm[300];
    snprintf(nm, sizeof nm, "rlx.sub.%s.%d.enqueue", g->name, cu->nsubs);
    enq = build_enqueue(cu, nm, NULL);
    CuSub *s = arena_alloc(cu->dev->ctx->arena, sizeof *s);
    *s = (CuSub){g, cu->err, enq, p->ws_bytes, cu->subs};
    cu->subs = s;
    cu->nsubs++;
    Cg *host = cu->host;
    if (!cg_graph_plan(host, g)) { /* --emit=plan; cg_layout_fn */
      CgSub *cs = arena_alloc(host->ctx->arena, sizeof *cs);
      *cs = (CgSub){g, enq, p->ws_bytes, host->subs, p, NULL};
      host->subs = cs;
    }
    *ws_bytes = p->ws_bytes;
  }
  cu->g = sg, cu->nin = nin, cu->nout = nout, cu->nsizes = nsizes;
  cu->launch = l, cu->nlaunch = nl, cu->cap = cap;
  return enq;
}

/* The PTX, kernel names and cache, and the module's initializer. */
static void host_finish(Cg *cg, Host *h, const Cu *cu, const char *ptx) {
  int nk = cu->nkernels;
  LLVMValueRef text = private_global(
      cg, LLVMConstStringInContext(cg->lc, ptx, (unsigned)strlen(ptx), 0),
      "rlx.gpu.ptx", true);
  LLVMValueRef *nm = calloc((size_t)nk + 1, sizeof *nm);
  for (int i = 0; i < nk; i++)
    nm[i] = private_global(cg, LLVMConstStringInContext(
                                   cg->lc, cu->kernels[i].name,
                                   (unsigned)strlen(cu->kernels[i].name), 0),
                           "rlx.gpu.name", true);
  LLVMValueRef names = private_global(
      cg, LLVMConstArray2(cg->t_ptr, nm, (uint64_t)nk), "rlx.gpu.names", true);
  free(nm);
  LLVMTypeRef kt = LLVMArrayType2(cg->t_ptr, (uint64_t)nk);
  LLVMValueRef kernels = private_global(cg, LLVMConstNull(kt),
                                        "rlx.gpu.kernels", false);
  LLVMReplaceAllUsesWith(h->kernels, kernels);
  LLVMDeleteGlobal(h->kernels);
  /* dynamic shared memory bytes per kernel, if any kernel has some */
  LLVMValueRef shmem = LLVMConstNull(cg->t_ptr);
  LLVMValueRef *sh = calloc((size_t)nk + 1, sizeof *sh);
  bool any = false;
  for (int i = 0; i < nk; i++) {
    sh[i] = cg_i32(cg, (int32_t)cu->kernels[i].shmem);
    any |= cu->kernels[i].shmem > 0;
  }
  if (any)
    shmem = private_global(cg, LLVMConstArray2(cg->t_i32, sh, (uint64_t)nk),
                           "rlx.gpu.shmem", true);
  free(sh);
  bool err = nk && !strcmp(cu->kernels[nk - 1].name, "rlx_err_take");
  LLVMValueRef f[8] = {text, cg_i32(cg, nk), names, shmem, kernels,
                       cg_i32(cg, 0), cg_i32(cg, err),
                       LLVMConstNull(cg->t_ptr)};
  LLVMSetInitializer(h->mod, LLVMConstStructInContext(cg->lc, f, 8, 0));
}

/* The unit's status function: int NAME_gpu_status(void *stream), the
 * module's rlx_gpu_status (docs/gpu.md, errors found by kernels). */
static void build_status(Cu *cu, Host *h) {
  Cg *cg = cu->host;
  char nm[300];
  snprintf(nm, sizeof nm, "%s_gpu_status", cg->u->cname);
  LLVMValueRef fn = LLVMAddFunction(cg->mod, nm,
                                    LLVMFunctionType(cg->t_i32, &cg->t_ptr, 1,
                                                     0));
  cg_fn_attrs_baseline(cg, fn);
  LLVMPositionBuilderAtEnd(cg->b,
                           LLVMAppendBasicBlockInContext(cg->lc, fn, "e"));
  LLVMValueRef a[2] = {h->mod, LLVMGetParam(fn, 0)};
  LLVMBuildRet(cg->b, cg_call(cg, "rlx_gpu_status", cg->t_i32, a, 2));
}

static bool build(Cg *host, Cg *dev, Unit *u, CgEntry *e, int *ne) {
  struct { Graph *g; const char *suffix; } all[CG_MAX_ENTRIES] = {
      {u->entry, ""}, {u->grad, "_grad"}, {u->jvp, "_jvp"}, {u->hvp, "_hvp"},
      {u->train, "_train"}};
  Cu *cu = calloc(1, sizeof *cu);
  RLX_ASSERT(cu);
  cu->dev = dev;
  cu->host = host;
  cu->subgraph = subgraph;
  host->scratch_rt = cu_control_scratch_rt; /* the layouts' (control.c) */
  LLVMTypeRef p[4] = {dev->t_ptr, dev->t_ptr, dev->t_ptr, dev->t_ptr};
  cu->t_kernel = LLVMFunctionType(dev->t_void, p, 4, 0);
  Host h;
  host_init(cu, &h);
  bool ok = true;
  *ne = 0;
  for (int i = 0; ok && i < CG_MAX_ENTRIES; i++) {
    if (!all[i].g) continue;
    size_t len = strlen(u->cname) + strlen(all[i].suffix) + 1;
    char *nm = arena_alloc(u->ctx->arena, len);
    snprintf(nm, len, "%s%s", u->cname, all[i].suffix);
    CgPlan *pl = emit_graph(cu, all[i].g);
    if (!pl) {
      ok = false;
      break;
    }
    Graph *g = all[i].g;
    CgEntry *x = &e[(*ne)++];
    *x = (CgEntry){g, nm, pl->ws_bytes, g->args, g->rets, g->nargs,
                   g->nret, NULL, NULL, 0, NULL, NULL, NULL, 0};
    if (g == u->train) cg_train_args(u, x);
    cg_entry_syms(host, x);
    CgSub *sub = arena_alloc(u->ctx->arena, sizeof *sub); /* --emit=plan */
    *sub = (CgSub){all[i].g, NULL, pl->ws_bytes, host->subs, pl, NULL};
    host->subs = sub;
    cg_layout_fns(host, x); /* x->layout; NAME_workspace_bytes(sizes) */
    sub->fn = build_entry(cu, &h, x, pl->ndyn);
    cg_entry_signature(host, x);
  }
  if (ok) {
    cu_err_take(cu);
    build_status(cu, &h);
  }
  char *ptx = ok ? cu_finish_module(cu) : NULL;
  if (ptx) host_finish(host, &h, cu, ptx);
  free(ptx);
  free(cu);
  return ptx != NULL && !host->failed && !dev->failed;
}

bool cu_build_unit(Cg *host, Unit *u, CgEntry *e, int *ne) {
  Cg *dev = device_new(u);
  if (!dev) return false;
  cg_emit_hooks(dev); /* loads of prologue-fused trees */
  bool ok = build(host, dev, u, e, ne);
  cg_free(dev);
  return ok;
}
