/* control.c: scan, if, while and custom_fn on the GPU (cuda.h,
 * docs/gpu.md).
 *
 * Every subgraph is compiled once, through the same plan as an entry
 * (cu->subgraph): its nodes' kernels go into the device module and a
 * private host function enqueues them, (in, out, ws, stream) like
 * NAME.enqueue. A control node becomes a host function of the same
 * signature, called in node order among the graph's launches (a
 * CuLaunch with `call`): it passes device pointers to the subgraphs'
 * enqueue functions, the subgraph's workspace lying in the node's
 * scratch (declared to the plan, as on the CPU: codegen/emit/
 * control.c; with sizes without a bound laid out at each call, "the
 * scratch area" below). Host code only does pointer arithmetic on
 * device pointers:
 * - scan: a host loop over t (the length is static) enqueues the body
 *   with the CPU's pointers (cg_scan_step: rows of xs and of the
 *   trajectory, carries ping-ponging between out and one scratch
 *   buffer, reverse): the same kernels in the same order each step.
 * - if: the predicate stays on the device. Both branches run, then
 *   into a scratch buffer, else into the output, and a select kernel
 *   copies the then result over the output where the predicate is
 *   true: no host synchronization, capturable by --cuda-graph. A while
 *   inside a branch is refused (it would run when not taken). Each
 *   branch's kernels record errors in a word of their own, and the
 *   select kernel passes on the taken branch's (branch_word).
 * - while: the condition is data dependent: each iteration enqueues
 *   cond, copies its flag back and synchronizes the stream, then
 *   enqueues the body (carries ping-pong between two scratch sets); a
 *   copy kernel moves carry 0 to the output. With --cuda-graph a while
 *   is refused (a graph cannot read back).
 * - custom_fn: enqueues fwd.
 */
#include "codegen/cuda/cuda.h"

#include <stdio.h>

#define MAX_OPS 64

static Graph *sub(const Node *n, AttrId id) {
  return ir_attr_graph((Node *)n, id);
}

/* Aligned workspace bytes of g's enqueue (compiled here if not yet),
 * or -1 after a diagnostic. */
static int64_t sub_ws(Cu *cu, Graph *g) {
  int64_t ws = 0;
  if (!g || !cu->subgraph(cu, g, &ws)) return -1;
  return cg_align(ws);
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* The error word of branch g (a private i32 global of the device
 * module, made on first use): the kernels of g run as a branch record
 * in it, the select kernel of each if running g reads and clears it
 * (in stream order, so ifs sharing a branch graph do not mix). */
static LLVMValueRef branch_word(Cu *cu, const Graph *g) {
  Cg *cg = cu->dev;
  CuIfErr *e = cu->iferr;
  while (e && e->g != g) e = e->next;
  if (!e) {
    e = arena_alloc(cg->ctx->arena, sizeof *e);
    *e = (CuIfErr){g, LLVMAddGlobalInAddressSpace(cg->mod, cg->t_i32,
                                                  "rlx.err.if", 1),
                   cu->iferr};
    LLVMSetInitializer(e->w, cg_i32(cg, 0));
    LLVMSetLinkage(e->w, LLVMInternalLinkage);
    LLVMSetAlignment(e->w, 4);
    cu->iferr = e;
  }
  return e->w;
}

/* The enqueue function of branch k (0 then, 1 else) of if n, compiled
 * once: its kernels record errors in the branch's word. */
static LLVMValueRef branch(Cu *cu, const Node *n, int k, int64_t *ws) {
  Graph *g = sub(n, k ? ATTR_ELSE : ATTR_THEN);
  if (!g) return NULL;
  LLVMValueRef saved = cu->err, e;
  cu->in_branch++;
  cu->err = branch_word(cu, g);
  e = cu->subgraph(cu, g, ws);
  cu->err = saved;
  cu->in_branch--;
  return e;
}

/* ---- the scratch area ----
 * [copies of n's module constants][its own buffers][its subgraphs'
 * workspace][64]. Own buffers: a scan's second carry buffer (without a
 * trajectory), an if's then result, a while's condition flag (64) and
 * its two carry sets. Kernels read the constants and the then result,
 * at offsets fixed at compile time; the rest only host code reads.
 * With a size without a bound in an own buffer or a subgraph's
 * workspace (a run-time layout of its own) the scratch is
 * CG_SCRATCH_RT: its bytes come from the call's sizes (cu_control_
 * scratch_rt, in the graph's run-time layout) and host code computes
 * the same offsets at each call (own_at), and each subgraph's layout
 * (sub_rt). */

/* Is operand v (through aliases) a non-splat constant? Those live in
 * the device module, where host code has no address for them: the node
 * copies them to the front of its scratch first (const_copies). */
static bool module_const(const CgPlan *p, Node *v) {
  const CgSlot *s = &p->slot[v->id];
  while (s->kind == CG_SLOT_ALIAS) s = &p->slot[(v = s->alias)->id];
  return v->op == OP_CONST && !v->splat;
}

static int64_t bound_bytes(const Type *t) {
  return cg_align(type_bytes_bound(t));
}

static int64_t consts_bytes(const CgPlan *p, const Node *n) {
  int64_t s = 0;
  for (int k = 0; k < n->nin; k++)
    if (module_const(p, n->in[k])) s += bound_bytes(&n->in[k]->type);
  return s;
}

/* The subgraphs n runs into g (the workspace is their largest). */
static int subs_of(const Node *n, Graph **g) {
  switch (n->op) {
  case OP_SCAN: g[0] = sub(n, ATTR_BODY); return 1;
  case OP_IF: g[0] = sub(n, ATTR_THEN), g[1] = sub(n, ATTR_ELSE); return 2;
  case OP_WHILE: g[0] = sub(n, ATTR_COND), g[1] = sub(n, ATTR_BODY); return 2;
  default: g[0] = sub(n, ATTR_FWD); return 1;
  }
}

/* n's own buffers, in order after their first *head bytes (a while's
 * flag: 64): their types into t (a while's carries twice: set A, then
 * set B); their count. */
static int own_parts(const Node *n, const Type **t, int64_t *head) {
  int k = 0;
  *head = 0;
  if (n->op == OP_SCAN && !ir_attr_bool((Node *)n, ATTR_SAVE_TRAJ, false))
    t[k++] = &n->in[0]->type;
  else if (n->op == OP_IF)
    t[k++] = &n->type;
  else if (n->op == OP_WHILE) {
    *head = 64;
    for (int s = 0; s < 2; s++)
      for (int c = 0; c < n->nin && c < MAX_OPS; c++) t[k++] = &n->in[c]->type;
  }
  return k;
}

/* Bytes of n's own buffers at their bounds. */
static int64_t own_bytes(const Node *n) {
  const Type *t[2 * MAX_OPS];
  int64_t s;
  for (int i = 0, k = own_parts(n, t, &s); i < k; i++) s += bound_bytes(t[i]);
  return s;
}

/* Host code: the bytes of n's own buffers, at their bounds or (rt) at
 * the call's sizes; with own, own[0] the front of them (a while's
 * flag, else the first buffer) and own[(head > 0) + i] buffer i, from
 * base. */
static LLVMValueRef own_at(Cg *cg, const Node *n, bool rt, LLVMValueRef base,
                           LLVMValueRef *own) {
  const Type *t[2 * MAX_OPS];
  int64_t head;
  int k = own_parts(n, t, &head);
  LLVMValueRef s = cg_i64(cg, head);
  if (own) own[0] = base;
  for (int i = 0; i < k; i++) {
    if (own) own[(head > 0) + i] = cg_gep(cg, base, s);
    s = cg_add_i64(cg, s, rt ? cg_align_rt(cg, cg_bytes(cg, t[i]))
                             : cg_i64(cg, bound_bytes(t[i])));
  }
  return s;
}

/* Subgraph g's workspace at the call's sizes, in host code: its bytes
 * (its layout's result, -1 on overflow; a constant without one) and
 * *sizes, the sizes array its enqueue takes (the caller's, or with a
 * layout the symbols and the offsets it placed: cu_layout_sizes). */
static LLVMValueRef sub_rt(Cg *cg, Graph *g, LLVMValueRef *sizes) {
  const CgPlan *sp = cg_graph_plan(cg, g);
  LLVMValueRef hdr = cg->fn->sizes ? cg->fn->sizes : cg->fn->ws, r;
  *sizes = hdr;
  if (!sp->ndyn) return cg_i64(cg, cg_align(sp->ws_bytes));
  *sizes = cu_layout_sizes(cg, hdr, cg_layout_fn(cg, g), sp->ndyn, &r);
  return r;
}

/* Does n's scratch have a run-time layout (its subgraphs compiled)? */
static bool run_time(Cu *cu, const Node *n) {
  Graph *g[2];
  bool rt = dim_nsyms() && node_unbounded(n);
  for (int i = 0, k = subs_of(n, g); i < k; i++) {
    const CgPlan *sp = cg_graph_plan(cu->host, g[i]);
    rt |= sp && sp->ndyn;
  }
  return rt;
}

static bool is_rt(const CgPlan *p, const Node *n) {
  return p->slot[n->id].scratch_bytes == CG_SCRATCH_RT;
}

int64_t cu_control_scratch(Cu *cu, const CgPlan *p, const Node *n) {
  int64_t ws;
  switch (n->op) {
  case OP_IF: { /* each branch compiled with its error word */
    int64_t a, b;
    if (!branch(cu, n, 0, &a) || !branch(cu, n, 1, &b)) return 0;
    ws = max64(cg_align(a), cg_align(b));
    break;
  }
  case OP_WHILE:
    if (cu->in_branch) return 0; /* refused by cu_control */
    ws = max64(sub_ws(cu, sub(n, ATTR_COND)), sub_ws(cu, sub(n, ATTR_BODY)));
    break;
  default: ws = sub_ws(cu, sub(n, n->op == OP_SCAN ? ATTR_BODY : ATTR_FWD));
  }
  if (ws < 0) return 0; /* the diagnostic is out; cu_control fails */
  if (run_time(cu, n)) return CG_SCRATCH_RT;
  return consts_bytes(p, n) + own_bytes(n) + ws + 64;
}

LLVMValueRef cu_control_scratch_rt(Cg *cg, Node *n) {
  Graph *g[2];
  LLVMValueRef ws = cg_i64(cg, 0), neg = NULL, sz;
  for (int i = 0, k = subs_of(n, g); i < k; i++) {
    LLVMValueRef r = sub_rt(cg, g[i], &sz);
    LLVMValueRef bad = LLVMBuildICmp(cg->b, LLVMIntSLT, r, cg_i64(cg, 0), "");
    neg = neg ? LLVMBuildOr(cg->b, neg, bad, "") : bad;
    r = cg_align_rt(cg, r);
    ws = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntUGT, r, ws, ""),
                         r, ws, "");
  }
  LLVMValueRef t = cg_add_i64(cg, own_at(cg, n, true, NULL, NULL), ws);
  t = cg_add_i64(cg, t, cg_i64(cg, consts_bytes(cg->fn->plan, n) + 64));
  return LLVMBuildSelect(cg->b, neg, cg_i64(cg, -1), t, "");
}

/* Host code: n's own buffers in its scratch (own_at's own); returns
 * where its subgraphs' workspace starts. */
static LLVMValueRef own_ptr(Cg *cg, CgPlan *p, Node *n, LLVMValueRef *own) {
  LLVMValueRef base = cg_gep(cg, cg_scratch(cg, n),
                             cg_i64(cg, consts_bytes(p, n)));
  return cg_gep(cg, base, own_at(cg, n, is_rt(p, n), base, own));
}

/* Device pointers (host code) of n's operands from..nin-1 into v[0..):
 * a module constant's copy in n's scratch. */
static void operands(Cu *cu, CgPlan *p, Node *n, int from, LLVMValueRef *v) {
  Cg *cg = cu->host;
  int64_t off = 0;
  for (int k = 0; k < n->nin; k++) {
    bool c = module_const(p, n->in[k]);
    if (k >= from)
      v[k - from] = c ? cg_gep(cg, cg_scratch(cg, n), cg_i64(cg, off))
                      : cg_buf(cg, n->in[k]);
    if (c) off += bound_bytes(&n->in[k]->type);
  }
}

/* Enqueue subgraph function enq(ins[0..nin), outs[0..nout), ws) with
 * its sizes array (sub_rt). */
static void call_sub(Cu *cu, CuHostFn *h, LLVMValueRef enq, LLVMValueRef *ins,
                     int nin, LLVMValueRef *outs, int nout, LLVMValueRef ws,
                     LLVMValueRef sizes) {
  Cg *cg = cu->host;
  LLVMValueRef a[5] = {cg_ptr_array(cg, ins, nin),
                       cg_ptr_array(cg, outs, nout), ws, h->stream, sizes};
  cg_fail_if_nonzero(cg, LLVMBuildCall2(cg->b, cu->t_enq, enq, a, 5, ""));
}

/* Start n's host function (its name: op and node id). */
static void host_begin(Cu *cu, CuHostFn *h, CgPlan *p, Node *n) {
  char nm[96];
  snprintf(nm, sizeof nm, "rlx.ctl.%s.%d", op_name(n->op), n->id);
  cu_host_begin(cu, h, p, nm);
}

/* Close n's host function and add its call to the graph's steps. */
static bool host_end(Cu *cu, CuHostFn *h) {
  LLVMValueRef fn = cu_host_end(cu, h);
  cu_add_step(cu, (CuLaunch){.kernel = -1, .call = fn});
  return !cu->host->failed && !cu->dev->failed;
}

/* ---- copy kernels ---- */

enum { K_INIT, K_SELECT, K_PTRS, K_CONST, K_HOST };

/* Has t elements (a dynamic size may be 0 only at run time)? */
static bool has_elems(const Type *t) {
  return !type_is_static(t) || type_numel(t) > 0;
}

/* Thread 0 of if n's select kernel: the taken branch's error word,
 * recorded where the kernel records (the enclosing word); both branch
 * words cleared for the next run. */
static void select_err(Cu *cu, Node *n, LLVMValueRef i, LLVMValueRef pred) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef p[2] = {branch_word(cu, sub(n, ATTR_THEN)),
                       branch_word(cu, sub(n, ATTR_ELSE))};
  if (!LLVMGetFirstUse(p[0]) && !LLVMGetFirstUse(p[1]))
    return; /* no kernel of either branch records */
  LLVMBasicBlockRef take = cg_block(cg, "err.take");
  LLVMBasicBlockRef go = cg_block(cg, "err.go");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, i, i64(cu, 0), ""), take,
                  go);
  LLVMPositionBuilderAtEnd(b, take);
  LLVMValueRef code = LLVMBuildSelect(
      b, pred, LLVMBuildLoad2(b, cg->t_i32, p[0], ""),
      LLVMBuildLoad2(b, cg->t_i32, p[1], ""), "");
  LLVMBuildStore(b, cg_i32(cg, 0), p[0]);
  LLVMBuildStore(b, cg_i32(cg, 0), p[1]);
  LLVMBuildStore(b, code, cg->fn->status);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, code, cg_i32(cg, 0), ""),
                  cg->fn->err_bb, go);
  LLVMPositionBuilderAtEnd(b, go);
}

/* One thread per element of v's type (v is n but for K_CONST):
 * K_INIT out = operand 0 (a scan of length 0; K_HOST the same kernel
 * launched by host code, a dynamic length being 0); K_SELECT out = the
 * then branch's result (scratch at off) where the predicate holds (if),
 * and thread 0 passes on the taken branch's errors (select_err);
 * K_PTRS outputs[0] = inputs[0] in a kernel of one input and one
 * output, which host code launches with its own pointers (while): its
 * launch is returned, not recorded; K_CONST n's scratch at off = v. */
static CuLaunch copy_kernel(Cu *cu, CgPlan *p, Node *n, int mode,
                            int64_t off, Node *v) {
  Cg *cg = cu->dev;
  int64_t N = cu_numel(cu, &v->type); /* a size */
  LLVMTypeRef et = cg_ops_bits_type(cg, dt_size(v->type.dt));
  int nin = cu->nin, nout = cu->nout;
  if (mode == K_PTRS) cu->nin = cu->nout = 1;
  cu_kernel_begin(cu, p, mode == K_SELECT ? "if_select" : "ctl_copy");
  LLVMValueRef i = cu_gid(cu), src, dst, c = NULL;
  if (mode == K_SELECT) {
    DType dt = n->in[0]->type.dt;
    c = cg_convert(cg, cg_load(cg, dt, cg_buf(cg, n->in[0]), i64(cu, 0)), dt,
                   DT_BOOL);
    select_err(cu, n, i, c);
  }
  cu_guard(cu, ult(cu, i, N));
  if (mode == K_SELECT) {
    cu_guard(cu, c);
    src = cg_gep(cg, cg_scratch(cg, n), i64(cu, off));
    dst = cg_buf(cg, n);
  } else if (mode == K_PTRS) {
    src = cg_arg_ptr(cg, cg->fn->in, 0);
    dst = cg_arg_ptr(cg, cg->fn->out, 0);
  } else if (mode == K_CONST) {
    src = cg_buf(cg, v);
    dst = cg_gep(cg, cg_scratch(cg, n), i64(cu, off));
  } else {
    src = cg_buf(cg, n->in[0]);
    dst = cg_buf(cg, n);
  }
  LLVMValueRef x = LLVMBuildLoad2(cg->b, et,
                                  LLVMBuildGEP2(cg->b, et, src, &i, 1, ""), "");
  LLVMBuildStore(cg->b, x, LLVMBuildGEP2(cg->b, et, dst, &i, 1, ""));
  cu_kernel_end_n(cu, N, EW_BLOCK, 1, EW_BLOCK);
  cu->nin = nin, cu->nout = nout;
  CuLaunch l = cu->launch[cu->nlaunch - 1];
  if (mode == K_PTRS || mode == K_HOST) cu->nlaunch--;
  return l;
}

/* ---- scan ---- */

static bool scan(Cu *cu, CgPlan *p, Node *n) {
  Graph *body = sub(n, ATTR_BODY);
  int64_t L = cg_scan_len(n), wsb;
  bool save = ir_attr_bool(n, ATTR_SAVE_TRAJ, false);
  if (!body || !dim_valid(L))
    return cu_unsupported(cu, n, "scan without a length");
  if (body->nret != 1 || body->nargs != n->nin)
    return cu_unsupported(cu, n, "body signature does not match");
  if (n->nin > MAX_OPS) return cu_unsupported(cu, n, "more than 64 operands");
  LLVMValueRef enq = cu->subgraph(cu, body, &wsb);
  if (!enq) return false;
  if (L == 0) {
    if (!save && has_elems(&n->type)) copy_kernel(cu, p, n, K_INIT, 0, n);
    return true;
  }
  /* a dynamic length: out = init when it is 0 at run time */
  CuLaunch init = {0};
  bool empty = !dim_is_static(L) && !save && has_elems(&n->type);
  if (empty) init = copy_kernel(cu, p, n, K_HOST, 0, n);
  Cg *cg = cu->host;
  CuHostFn h;
  host_begin(cu, &h, p, n);
  if (empty) {
    LLVMBasicBlockRef z = cg_block(cg, "scan.empty");
    LLVMBasicBlockRef go = cg_block(cg, "scan.run");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, cg_dim(cg, L),
                                         cg_i64(cg, 0), ""), z, go);
    LLVMPositionBuilderAtEnd(cg->b, z);
    cu_host_launch(cu, &h, &init, h.f.in, h.f.out, h.f.ws);
    LLVMBuildBr(cg->b, go);
    LLVMPositionBuilderAtEnd(cg->b, go);
  }
  LLVMValueRef ins[MAX_OPS], a[MAX_OPS], dst, tmp, sz;
  LLVMValueRef out = cg_buf(cg, n), ws = own_ptr(cg, p, n, &tmp);
  operands(cu, p, n, 0, ins);
  sub_rt(cg, body, &sz);
  CgLoop l;
  LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_dim(cg, L),
                                 NULL, 0);
  cg_scan_step(cg, n, i, ins[0], ins, out, tmp, a, &dst);
  call_sub(cu, &h, enq, a, n->nin, &dst, 1, ws, sz);
  cg_loop_end(cg, &l, NULL);
  return host_end(cu, &h);
}

/* ---- if ---- */

static bool if_(Cu *cu, CgPlan *p, Node *n) {
  Graph *gt = sub(n, ATTR_THEN), *ge = sub(n, ATTR_ELSE);
  if (!gt || !ge || gt->nret != 1 || ge->nret != 1)
    return cu_unsupported(cu, n, "branches must return one value");
  if (n->nin > MAX_OPS) return cu_unsupported(cu, n, "more than 64 operands");
  int64_t wt, we;
  LLVMValueRef et = branch(cu, n, 0, &wt);
  LLVMValueRef ee = et ? branch(cu, n, 1, &we) : NULL;
  if (!ee) return false;
  if (!has_elems(&n->type)) return true;
  Cg *cg = cu->host;
  CuHostFn h;
  host_begin(cu, &h, p, n);
  LLVMValueRef ins[MAX_OPS], out = cg_buf(cg, n), t, st, se;
  LLVMValueRef ws = own_ptr(cg, p, n, &t); /* t: the then result */
  operands(cu, p, n, 1, ins);
  sub_rt(cg, sub(n, ATTR_THEN), &st);
  sub_rt(cg, sub(n, ATTR_ELSE), &se);
  call_sub(cu, &h, et, ins, n->nin - 1, &t, 1, ws, st);
  call_sub(cu, &h, ee, ins, n->nin - 1, &out, 1, ws, se);
  if (!host_end(cu, &h)) return false;
  copy_kernel(cu, p, n, K_SELECT, consts_bytes(p, n), n);
  return !cu->dev->failed;
}

/* ---- while ---- */

/* i1: is the scalar at host address f (dtype dt) true? */
static LLVMValueRef truth(Cg *cg, DType dt, LLVMValueRef f) {
  return cg_convert(cg, cg_load(cg, dt, f, cg_i64(cg, 0)), dt, DT_BOOL);
}

static bool while_(Cu *cu, CgPlan *p, Node *n) {
  Graph *gc = sub(n, ATTR_COND), *gb = sub(n, ATTR_BODY);
  int nc = n->nin;
  if (!gc || !gb || gc->nret != 1 || gb->nret != nc || gc->nargs != nc ||
      gb->nargs != nc)
    return cu_unsupported(cu, n, "cond/body signatures do not match");
  if (nc > MAX_OPS) return cu_unsupported(cu, n, "more than 64 carries");
  if (cu->in_branch)
    return cu_unsupported(cu, n, "a while inside an if branch (the GPU "
                                 "runs both branches)");
  if (cu->dev->u && cu->dev->u->opt->cuda_graph)
    return cu_unsupported(cu, n, "--cuda-graph (while reads its condition "
                                 "back to the host every iteration)");
  int64_t w0, w1;
  LLVMValueRef ce = cu->subgraph(cu, gc, &w0);
  LLVMValueRef be = ce ? cu->subgraph(cu, gb, &w1) : NULL;
  if (!be) return false;
  CuLaunch cp = {0};
  if (has_elems(&n->type)) cp = copy_kernel(cu, p, n, K_PTRS, 0, n);
  Cg *cg = cu->host;
  LLVMBuilderRef b = cg->b;
  CuHostFn h;
  host_begin(cu, &h, p, n);
  DType fdt = gc->rets[0]->type.dt;
  LLVMValueRef init[MAX_OPS], own[1 + 2 * MAX_OPS], sc, sb;
  LLVMValueRef out = cg_buf(cg, n), ws = own_ptr(cg, p, n, own);
  LLVMValueRef flag = own[0], *set[2] = {own + 1, own + 1 + nc};
  operands(cu, p, n, 0, init);
  sub_rt(cg, gc, &sc);
  sub_rt(cg, gb, &sb);
  /* cur: the carries' pointers (host array), first the operands */
  LLVMValueRef cur = cg_ptr_array(cg, init, nc);
  LLVMValueRef sets[2] = {cg_ptr_array(cg, set[0], nc),
                          cg_ptr_array(cg, set[1], nc)};
  LLVMValueRef fo = cg_ptr_array(cg, &flag, 1);
  LLVMValueRef fh = cg_alloca(cg, LLVMArrayType2(cg->t_i8, 16), "flag");
  int64_t max_it = ir_attr_int(n, ATTR_MAX_ITERS, -1);
  LLVMValueRef itp = cg_alloca(cg, cg->t_i64, "it");
  LLVMBuildStore(b, cg_i64(cg, 0), itp);
  LLVMBasicBlockRef head = cg_block(cg, "while.head");
  LLVMBasicBlockRef body = cg_block(cg, "while.body");
  LLVMBasicBlockRef exit = cg_block(cg, "while.end");
  LLVMBuildBr(b, head);
  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef it = LLVMBuildLoad2(b, cg->t_i64, itp, "");
  if (max_it >= 0) {
    LLVMBasicBlockRef go = cg_block(cg, "while.cond");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, it,
                                     cg_i64(cg, max_it), ""), go, exit);
    LLVMPositionBuilderAtEnd(b, go);
  }
  LLVMValueRef a[5] = {cur, fo, ws, h.stream, sc};
  cg_fail_if_nonzero(cg, LLVMBuildCall2(b, cu->t_enq, ce, a, 5, ""));
  LLVMValueRef c[4] = {fh, flag, cg_i64(cg, dt_size(fdt)), h.stream};
  cg_fail_if_nonzero(cg, cg_call(cg, "rlx_gpu_copy_to_host", cg->t_i32, c,
                                 4));
  cg_fail_if_nonzero(cg, cg_call(cg, "rlx_gpu_stream_sync", cg->t_i32,
                                 &h.stream, 1));
  LLVMBuildCondBr(b, truth(cg, fdt, fh), body, exit);
  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef odd = LLVMBuildTrunc(b, it, LLVMInt1TypeInContext(cg->lc), "");
  LLVMValueRef nxt = LLVMBuildSelect(b, odd, sets[1], sets[0], "");
  LLVMValueRef a2[5] = {cur, nxt, ws, h.stream, sb};
  cg_fail_if_nonzero(cg, LLVMBuildCall2(b, cu->t_enq, be, a2, 5, ""));
  cg_memcpy(cg, cur, nxt, 8 * (int64_t)nc);
  LLVMBuildStore(b, LLVMBuildAdd(b, it, cg_i64(cg, 1), ""), itp);
  LLVMBuildBr(b, head);
  LLVMPositionBuilderAtEnd(b, exit);
  if (has_elems(&n->type))
    cu_host_launch(cu, &h, &cp, cur, cg_ptr_array(cg, &out, 1), ws);
  return host_end(cu, &h);
}

/* ---- custom_fn ---- */

static bool custom_fn(Cu *cu, CgPlan *p, Node *n) {
  Graph *g = sub(n, ATTR_FWD);
  if (!g || g->nret != 1 || g->nargs != n->nin)
    return cu_unsupported(cu, n, "fwd must take the operands and return "
                                 "one value");
  if (n->nin > MAX_OPS) return cu_unsupported(cu, n, "more than 64 operands");
  int64_t wsb;
  LLVMValueRef enq = cu->subgraph(cu, g, &wsb);
  if (!enq) return false;
  Cg *cg = cu->host;
  CuHostFn h;
  host_begin(cu, &h, p, n);
  LLVMValueRef ins[MAX_OPS], out = cg_buf(cg, n), own, sz;
  LLVMValueRef ws = own_ptr(cg, p, n, &own);
  operands(cu, p, n, 0, ins);
  sub_rt(cg, g, &sz);
  call_sub(cu, &h, enq, ins, n->nin, &out, 1, ws, sz);
  return host_end(cu, &h);
}

/* Copy n's module constants into its scratch (kernels launched before
 * n's host function), where operands() points. */
static void const_copies(Cu *cu, CgPlan *p, Node *n) {
  int64_t off = 0;
  for (int k = 0; k < n->nin; k++)
    if (module_const(p, n->in[k])) {
      if (has_elems(&n->in[k]->type))
        copy_kernel(cu, p, n, K_CONST, off, n->in[k]);
      off += bound_bytes(&n->in[k]->type);
    }
}

bool cu_control(Cu *cu, CgPlan *p, Node *n) {
  const_copies(cu, p, n);
  switch (n->op) {
  case OP_SCAN: return scan(cu, p, n);
  case OP_IF: return if_(cu, p, n);
  case OP_WHILE: return while_(cu, p, n);
  default: return custom_fn(cu, p, n);
  }
}
