/* control.c: forward control flow and user functions: scan, if,
 * while, custom_fn. Every subgraph is compiled once into a graph
 * function (cg_graph_fn) and called with pointer arrays; its workspace
 * is the front of the node's scratch area, followed by the node's own
 * carry buffers.
 *
 * scan: step t calls body(carry, bcasts..., xs_k[t]...) -> carry, for
 *   t = 0 ... L-1, or L-1 ... 0 with reverse=true (iteration i runs step
 *   t = L-1-i: plain index arithmetic, nothing is reversed in memory).
 *   With save_trajectory the carry after step t is written straight
 *   into row t of the output (reading the row of the previous
 *   iteration, t-1 or t+1); otherwise carries ping-pong between the
 *   output and one scratch buffer, arranged so that the last iteration
 *   writes the output. checkpoints only matters for reverse mode and is
 *   ignored here (values are exact).
 * if: the predicate (bool or numeric, non-zero = true) is evaluated,
 *   then exactly one branch function runs, writing the output.
 * while: cond(carries) -> scalar; body(carries) -> carries, ping-pong
 *   between two scratch sets (the operands are never written). With
 *   max_iterations = N the loop also stops after N body executions (an
 *   upper bound, no error); result = carry 0.
 * custom_fn: calls fwd (vjp/jvp bodies are for autodiff only).
 * Dynamic sizes: a subgraph's function reads them from the front of its
 * workspace, copied there from the caller's before the calls
 * (pass_sizes); carries are laid out at the bounds and copied at their
 * run-time bytes. Sizes without a bound (docs/dynamic-dims.md): when the
 * carries have them or a subgraph places blocks at run time, the
 * node's scratch is CG_SCRATCH_RT and its parts lie at run-time
 * offsets (each Lay function below: at layout time, cg_control_
 * scratch_rt, the sum; at emit time the same offsets), and a
 * subgraph's own layout runs on its workspace before the calls
 * (sub_bytes); while's cond and body then get a workspace each.
 *
 * Entry points: cg_emit_{scan,if,while,custom_fn}, their scratch
 * functions cg_scratch_* and cg_control_scratch_rt.
 */
#include "codegen/emit/emit.h"

static Graph *sub_graph(Node *n, AttrId id) { return ir_attr_graph(n, id); }

/* A subgraph's function reads the dynamic sizes from the front of its
 * workspace (dims.c): the caller's, copied once before the calls. */
static void pass_sizes(Cg *cg, LLVMValueRef ws) {
  cg_memcpy(cg, ws, cg->fn->ws, cg_dim_header());
}

/* Workspace bytes of g's function, or -1 after a diagnostic. */
static int64_t sub_ws(Cg *cg, Graph *g) {
  int64_t ws = 0;
  if (!g || !cg_graph_fn(cg, g, &ws)) return -1;
  return cg_align(ws);
}

/* ---- sizes without a bound ---- */

static CgPlan *plan_of(Cg *cg, Graph *g) {
  for (CgSub *s = cg->subs; s; s = s->next)
    if (s->g == g) return s->plan;
  return NULL;
}

/* Is n's scratch computed at run time (its subgraphs compiled)? */
static bool run_time(Cg *cg, Node *n, Graph *g1, Graph *g2) {
  if (!dim_nsyms()) return false; /* no dynamic sizes at all */
  return node_unbounded(n) || (g1 && cg_graph_layout(cg, g1)) ||
         (g2 && cg_graph_layout(cg, g2));
}

/* Bytes of subgraph g's workspace, aligned: its constant, or its layout
 * run at layout time (ws NULL: the sizes of the layout function's
 * header, a table on the stack) or on its workspace ws at emit time
 * (the sizes passed there first, its table filled). At layout time
 * *neg is or-ed with "the layout overflowed". */
static LLVMValueRef sub_bytes(Cg *cg, Graph *g, LLVMValueRef ws,
                              LLVMValueRef *neg) {
  LLVMValueRef fn = cg_graph_layout(cg, g);
  if (ws) pass_sizes(cg, ws);
  if (!fn) return cg_i64(cg, sub_ws(cg, g));
  CgPlan *p = plan_of(cg, g);
  LLVMValueRef r;
  if (ws) {
    r = cg_call_layout(cg, fn, ws, cg_gep(cg, ws, cg_i64(cg, p->dyn_tab)));
  } else {
    LLVMValueRef tab = cg_alloca(
        cg, LLVMArrayType(cg->t_i64, 3 * (unsigned)p->ndyn), "sub.tab");
    r = cg_call_layout(cg, fn, cg->fn->ws, tab);
  }
  if (neg) {
    LLVMValueRef bad = LLVMBuildICmp(cg->b, LLVMIntSLT, r, cg_i64(cg, 0), "");
    *neg = *neg ? LLVMBuildOr(cg->b, *neg, bad, "") : bad;
  }
  return cg_align_rt(cg, r);
}

/* A carry's bytes at run time, aligned. */
static LLVMValueRef carry_rt(Cg *cg, const Type *t) {
  return cg_align_rt(cg, cg_bytes(cg, t));
}

static LLVMValueRef add(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return cg_add_i64(cg, a, b);
}

/* total, or -1 when a layout overflowed */
static LLVMValueRef total_or_neg(Cg *cg, LLVMValueRef total,
                                 LLVMValueRef neg) {
  return neg ? LLVMBuildSelect(cg->b, neg, cg_i64(cg, -1), total, "")
             : total;
}

/* ---------------- scan ---------------- */

int64_t cg_scan_len(Node *n) {
  int64_t nb = ir_attr_int(n, ATTR_NUM_BCAST, 0);
  int64_t L = ir_attr_int(n, ATTR_LENGTH, -1);
  if (L < 0 && n->nin > 1 + nb) L = n->in[1 + nb]->type.dims[0];
  return L;
}

static int64_t cg_scratch_scan(Cg *cg, Node *n) {
  Graph *body = sub_graph(n, ATTR_BODY);
  int64_t ws = sub_ws(cg, body);
  if (ws < 0) return 0;
  if (run_time(cg, n, body, NULL)) return CG_SCRATCH_RT;
  bool save = ir_attr_bool(n, ATTR_SAVE_TRAJ, false);
  return ws + (save ? 0 : cg_align(cg_plan_bytes(&n->in[0]->type))) + 64;
}

/* Run-time layout: [body ws][the carry's ping-pong buffer][64]; *tmp
 * gets the buffer's offset (ws, neg: as sub_bytes). */
static LLVMValueRef scan_lay(Cg *cg, Node *n, LLVMValueRef ws,
                             LLVMValueRef *tmp, LLVMValueRef *neg) {
  *tmp = sub_bytes(cg, sub_graph(n, ATTR_BODY), ws, neg);
  bool save = ir_attr_bool(n, ATTR_SAVE_TRAJ, false);
  return add(cg, save ? *tmp : add(cg, *tmp, carry_rt(cg, &n->in[0]->type)),
             cg_i64(cg, 64));
}

static LLVMValueRef sel_ptr(Cg *cg, LLVMValueRef c, LLVMValueRef a,
                            LLVMValueRef b) {
  return LLVMBuildSelect(cg->b, c, a, b, "");
}

static LLVMValueRef byte_off(Cg *cg, LLVMValueRef p, LLVMValueRef t,
                             LLVMValueRef bytes) {
  return cg_gep(cg, p, LLVMBuildNSWMul(cg->b, t, bytes, ""));
}

/* L - 1 for a length L (a size: dynamic ones are read at run time). */
static LLVMValueRef last_step(Cg *cg, int64_t L) {
  if (dim_is_static(L)) return cg_i64(cg, L - 1);
  return LLVMBuildNSWSub(cg->b, cg_dim(cg, L), cg_i64(cg, 1), "");
}

/* The step run by iteration i of a reverse scan: L-1-i. */
static LLVMValueRef step_of(Cg *cg, LLVMValueRef i, int64_t L) {
  return LLVMBuildNSWSub(cg->b, last_step(cg, L), i, "");
}

/* Pointer written by iteration t (without trajectory): the output when
 * L-1-t is even, else the scratch carry. */
static LLVMValueRef pingpong(Cg *cg, LLVMValueRef t, int64_t L,
                             LLVMValueRef out, LLVMValueRef tmp) {
  LLVMValueRef k = LLVMBuildNSWSub(cg->b, last_step(cg, L), t, "");
  LLVMValueRef even = LLVMBuildICmp(
      cg->b, LLVMIntEQ, LLVMBuildAnd(cg->b, k, cg_i64(cg, 1), ""),
      cg_i64(cg, 0), "");
  return sel_ptr(cg, even, out, tmp);
}

void cg_scan_step(Cg *cg, Node *n, LLVMValueRef i, LLVMValueRef init,
                  LLVMValueRef *ins, LLVMValueRef out, LLVMValueRef tmp,
                  LLVMValueRef *a, LLVMValueRef *dst) {
  int64_t nb = ir_attr_int(n, ATTR_NUM_BCAST, 0), L = cg_scan_len(n);
  LLVMValueRef cb = cg_bytes(cg, &n->in[0]->type);
  bool save = ir_attr_bool(n, ATTR_SAVE_TRAJ, false);
  bool rev = ir_attr_bool(n, ATTR_REVERSE, false);
  LLVMValueRef im1 = LLVMBuildNSWSub(cg->b, i, cg_i64(cg, 1), "");
  LLVMValueRef t = rev ? step_of(cg, i, L) : i;
  LLVMValueRef tp = rev ? step_of(cg, im1, L) : im1; /* previous step */
  LLVMValueRef first = LLVMBuildICmp(cg->b, LLVMIntEQ, i, cg_i64(cg, 0), "");
  LLVMValueRef prev = save ? byte_off(cg, out, tp, cb)
                           : pingpong(cg, im1, L, out, tmp);
  a[0] = sel_ptr(cg, first, init, prev);
  for (int k = 1; k < n->nin; k++) {
    a[k] = ins[k];
    if (k > nb) { /* a step's slice */
      Type x = n->in[k]->type;
      x.dims[0] = 1;
      a[k] = byte_off(cg, ins[k], t, cg_bytes(cg, &x));
    }
  }
  *dst = save ? byte_off(cg, out, t, cb) : pingpong(cg, i, L, out, tmp);
}

static bool cg_emit_scan(Cg *cg, Node *n) {
  Graph *body = sub_graph(n, ATTR_BODY);
  int64_t L = cg_scan_len(n), wsb;
  bool save = ir_attr_bool(n, ATTR_SAVE_TRAJ, false);
  if (!body || !dim_valid(L))
    return cg_unsupported(cg, n, "scan without a length");
  if (body->nret != 1 || body->nargs != n->nin)
    return cg_unsupported(cg, n, "body signature does not match");
  LLVMValueRef fn = cg_graph_fn(cg, body, &wsb);
  if (!fn) return false;
  const Type *ct = &n->in[0]->type;
  LLVMValueRef out = cg_buf(cg, n), init = cg_buf(cg, n->in[0]);
  if (L == 0) {
    if (!save) cg_copy_bytes(cg, out, init, ct);
    return true;
  }
  if (!dim_is_static(L) && !save) { /* a run-time length 0: out = init */
    LLVMBasicBlockRef empty = cg_block(cg, "scan.empty");
    LLVMBasicBlockRef run = cg_block(cg, "scan.run");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, cg_dim(cg, L),
                                         cg_i64(cg, 0), ""), empty, run);
    LLVMPositionBuilderAtEnd(cg->b, empty);
    cg_copy_bytes(cg, out, init, ct);
    LLVMBuildBr(cg->b, run);
    LLVMPositionBuilderAtEnd(cg->b, run);
  }
  LLVMValueRef ws = cg_scratch(cg, n), tmp;
  if (cg_slot(cg, n)->scratch_bytes == CG_SCRATCH_RT) {
    scan_lay(cg, n, ws, &tmp, NULL); /* passes the sizes (sub_bytes) */
  } else {
    tmp = cg_i64(cg, cg_align(wsb));
    pass_sizes(cg, ws);
  }
  tmp = cg_gep(cg, ws, tmp);
  LLVMValueRef ins[64];
  if (n->nin > 64) return cg_unsupported(cg, n, "more than 64 operands");
  for (int k = 1; k < n->nin; k++) ins[k] = cg_buf(cg, n->in[k]);
  CgLoop l;
  LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_dim(cg, L),
                                 NULL, 0);
  LLVMValueRef a[64], dst;
  cg_scan_step(cg, n, i, init, ins, out, tmp, a, &dst);
  cg_call_graph_fn(cg, fn, a, n->nin, &dst, 1, ws);
  cg_loop_end(cg, &l, NULL);
  return true;
}

/* ---------------- if ---------------- */

static int64_t cg_scratch_if(Cg *cg, Node *n) {
  Graph *gt = sub_graph(n, ATTR_THEN), *ge = sub_graph(n, ATTR_ELSE);
  int64_t a = sub_ws(cg, gt), b = sub_ws(cg, ge);
  if (a >= 0 && b >= 0 && run_time(cg, n, gt, ge)) return CG_SCRATCH_RT;
  return (a > b ? a : b) + 64;
}

/* i1: is the scalar at p (dtype dt) true (non-zero)? */
static LLVMValueRef truth(Cg *cg, DType dt, LLVMValueRef p) {
  LLVMValueRef v = cg_load(cg, dt, p, cg_i64(cg, 0));
  return cg_convert(cg, v, dt, DT_BOOL);
}

static bool call_branch(Cg *cg, Node *n, Graph *g, LLVMValueRef *ins,
                        LLVMValueRef out, LLVMValueRef ws) {
  int64_t wsb;
  LLVMValueRef fn = cg_graph_fn(cg, g, &wsb);
  if (!fn) return false;
  if (cg_slot(cg, n)->scratch_bytes == CG_SCRATCH_RT)
    sub_bytes(cg, g, ws, NULL); /* the branch's layout */
  cg_call_graph_fn(cg, fn, ins, n->nin - 1, &out, 1, ws);
  return true;
}

static bool cg_emit_if(Cg *cg, Node *n) {
  Graph *gt = sub_graph(n, ATTR_THEN), *ge = sub_graph(n, ATTR_ELSE);
  if (!gt || !ge || gt->nret != 1 || ge->nret != 1)
    return cg_unsupported(cg, n, "branches must return one value");
  if (n->nin > 64) return cg_unsupported(cg, n, "more than 64 operands");
  LLVMValueRef ins[64], out = cg_buf(cg, n), ws = cg_scratch(cg, n);
  for (int k = 1; k < n->nin; k++) ins[k - 1] = cg_buf(cg, n->in[k]);
  LLVMValueRef c = truth(cg, n->in[0]->type.dt, cg_buf(cg, n->in[0]));
  pass_sizes(cg, ws);
  LLVMBasicBlockRef bt = cg_block(cg, "if.then");
  LLVMBasicBlockRef be = cg_block(cg, "if.else");
  LLVMBasicBlockRef bj = cg_block(cg, "if.end");
  LLVMBuildCondBr(cg->b, c, bt, be);
  LLVMPositionBuilderAtEnd(cg->b, bt);
  if (!call_branch(cg, n, gt, ins, out, ws)) return false;
  LLVMBuildBr(cg->b, bj);
  LLVMPositionBuilderAtEnd(cg->b, be);
  if (!call_branch(cg, n, ge, ins, out, ws)) return false;
  LLVMBuildBr(cg->b, bj);
  LLVMPositionBuilderAtEnd(cg->b, bj);
  return true;
}

/* ---------------- while ---------------- */

/* Scratch: [sub ws][64: cond flag][carry set A][carry set B] */
static int64_t carries_bytes(Node *n) {
  int64_t s = 0;
  for (int k = 0; k < n->nin; k++)
    s += cg_align(cg_plan_bytes(&n->in[k]->type));
  return s;
}

static int64_t while_ws(Cg *cg, Node *n) {
  int64_t a = sub_ws(cg, sub_graph(n, ATTR_COND));
  int64_t b = sub_ws(cg, sub_graph(n, ATTR_BODY));
  if (a < 0 || b < 0) return -1;
  return a > b ? a : b;
}

static int64_t cg_scratch_while(Cg *cg, Node *n) {
  int64_t ws = while_ws(cg, n);
  if (ws < 0) return 0;
  if (run_time(cg, n, sub_graph(n, ATTR_COND), sub_graph(n, ATTR_BODY)))
    return CG_SCRATCH_RT;
  return ws + 64 + 2 * carries_bytes(n);
}

typedef struct {
  LLVMValueRef cond_fn, body_fn, ws, body_ws, flag, set[2][64];
  LLVMValueRef cur[64];
  int nc;
  DType flag_dt;
  int64_t max_it;
} While;

/* The loop header: phis of the iteration count and the carry pointers,
 * the iteration bound and the condition. Leaves the builder in the
 * block that runs the body; *exit gets the loop exit. */
static LLVMValueRef while_head(Cg *cg, While *W, LLVMValueRef *init,
                               LLVMBasicBlockRef head,
                               LLVMBasicBlockRef exit) {
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b);
  LLVMBuildBr(cg->b, head);
  LLVMPositionBuilderAtEnd(cg->b, head);
  LLVMValueRef it = LLVMBuildPhi(cg->b, cg->t_i64, "it");
  LLVMValueRef zero = cg_i64(cg, 0);
  LLVMAddIncoming(it, &zero, &pre, 1);
  for (int k = 0; k < W->nc; k++) {
    W->cur[k] = LLVMBuildPhi(cg->b, cg->t_ptr, "carry");
    LLVMAddIncoming(W->cur[k], &init[k], &pre, 1);
  }
  if (W->max_it >= 0) {
    LLVMBasicBlockRef go = cg_block(cg, "while.cond");
    LLVMValueRef more = LLVMBuildICmp(cg->b, LLVMIntSLT, it,
                                      cg_i64(cg, W->max_it), "");
    LLVMBuildCondBr(cg->b, more, go, exit);
    LLVMPositionBuilderAtEnd(cg->b, go);
  }
  cg_call_graph_fn(cg, W->cond_fn, W->cur, W->nc, &W->flag, 1, W->ws);
  LLVMBasicBlockRef run = cg_block(cg, "while.body");
  LLVMBuildCondBr(cg->b, truth(cg, W->flag_dt, W->flag), run, exit);
  LLVMPositionBuilderAtEnd(cg->b, run);
  return it;
}

/* Run-time layout: [cond ws][body ws][64: cond flag][carry set A][carry
 * set B]. W NULL: at layout time (the total; neg as sub_bytes); else
 * W's pointers into its scratch (W->ws), each subgraph's layout run on
 * its workspace. */
static LLVMValueRef while_lay(Cg *cg, Node *n, While *W, LLVMValueRef *neg) {
  LLVMValueRef ws = W ? W->ws : NULL;
  LLVMValueRef off = sub_bytes(cg, sub_graph(n, ATTR_COND), ws, neg);
  LLVMValueRef bws = ws ? cg_gep(cg, ws, off) : NULL;
  off = add(cg, off, sub_bytes(cg, sub_graph(n, ATTR_BODY), bws, neg));
  if (W) W->body_ws = bws, W->flag = cg_gep(cg, ws, off);
  off = add(cg, off, cg_i64(cg, 64));
  for (int s = 0; s < 2; s++)
    for (int k = 0; k < n->nin; k++) {
      if (W) W->set[s][k] = cg_gep(cg, ws, off);
      off = add(cg, off, carry_rt(cg, &n->in[k]->type));
    }
  return off;
}

static bool while_prepare(Cg *cg, Node *n, While *W) {
  Graph *gc = sub_graph(n, ATTR_COND), *gb = sub_graph(n, ATTR_BODY);
  int64_t w;
  W->nc = n->nin;
  if (!gc || !gb || gc->nret != 1 || gb->nret != n->nin ||
      gc->nargs != n->nin || gb->nargs != n->nin)
    return cg_unsupported(cg, n, "cond/body signatures do not match");
  if (n->nin > 64) return cg_unsupported(cg, n, "more than 64 carries");
  W->cond_fn = cg_graph_fn(cg, gc, &w);
  W->body_fn = W->cond_fn ? cg_graph_fn(cg, gb, &w) : NULL;
  if (!W->body_fn) return false;
  W->flag_dt = gc->rets[0]->type.dt;
  W->max_it = ir_attr_int(n, ATTR_MAX_ITERS, -1);
  W->ws = W->body_ws = cg_scratch(cg, n);
  if (cg_slot(cg, n)->scratch_bytes == CG_SCRATCH_RT) {
    while_lay(cg, n, W, NULL);
    return true;
  }
  int64_t off = while_ws(cg, n);
  W->flag = cg_gep(cg, W->ws, cg_i64(cg, off));
  off += 64;
  for (int s = 0; s < 2; s++)
    for (int k = 0; k < W->nc; k++) {
      W->set[s][k] = cg_gep(cg, W->ws, cg_i64(cg, off));
      off += cg_align(cg_plan_bytes(&n->in[k]->type));
    }
  pass_sizes(cg, W->ws);
  return true;
}

static bool cg_emit_while(Cg *cg, Node *n) {
  While W = {0};
  if (!while_prepare(cg, n, &W)) return false;
  LLVMValueRef init[64], nxt[64];
  for (int k = 0; k < W.nc; k++) init[k] = cg_buf(cg, n->in[k]);
  LLVMBasicBlockRef head = cg_block(cg, "while.head");
  LLVMBasicBlockRef exit = cg_block(cg, "while.end");
  LLVMValueRef it = while_head(cg, &W, init, head, exit);
  LLVMValueRef even = LLVMBuildICmp(
      cg->b, LLVMIntEQ, LLVMBuildAnd(cg->b, it, cg_i64(cg, 1), ""),
      cg_i64(cg, 0), "");
  for (int k = 0; k < W.nc; k++)
    nxt[k] = sel_ptr(cg, even, W.set[0][k], W.set[1][k]);
  cg_call_graph_fn(cg, W.body_fn, W.cur, W.nc, nxt, W.nc, W.body_ws);
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
  LLVMValueRef it1 = LLVMBuildNSWAdd(cg->b, it, cg_i64(cg, 1), "");
  LLVMAddIncoming(it, &it1, &latch, 1);
  for (int k = 0; k < W.nc; k++) LLVMAddIncoming(W.cur[k], &nxt[k], &latch, 1);
  LLVMBuildBr(cg->b, head);
  LLVMMoveBasicBlockAfter(exit, latch);
  LLVMPositionBuilderAtEnd(cg->b, exit);
  cg_copy_bytes(cg, cg_buf(cg, n), W.cur[0], &n->type);
  return true;
}

/* ---------------- custom_fn ---------------- */

static int64_t cg_scratch_custom_fn(Cg *cg, Node *n) {
  int64_t ws = sub_ws(cg, sub_graph(n, ATTR_FWD));
  if (ws >= 0 && run_time(cg, n, sub_graph(n, ATTR_FWD), NULL))
    return CG_SCRATCH_RT;
  return ws < 0 ? 0 : ws + 64;
}

static bool cg_emit_custom_fn(Cg *cg, Node *n) {
  Graph *g = sub_graph(n, ATTR_FWD);
  if (!g || g->nret != 1 || g->nargs != n->nin)
    return cg_unsupported(cg, n, "fwd must take the operands and return "
                                 "one value");
  if (n->nin > 64) return cg_unsupported(cg, n, "more than 64 operands");
  int64_t wsb;
  LLVMValueRef fn = cg_graph_fn(cg, g, &wsb);
  if (!fn) return false;
  LLVMValueRef ins[64], out = cg_buf(cg, n);
  for (int k = 0; k < n->nin; k++) ins[k] = cg_buf(cg, n->in[k]);
  LLVMValueRef ws = cg_scratch(cg, n);
  if (cg_slot(cg, n)->scratch_bytes == CG_SCRATCH_RT)
    sub_bytes(cg, g, ws, NULL); /* its layout */
  else
    pass_sizes(cg, ws);
  cg_call_graph_fn(cg, fn, ins, n->nin, &out, 1, ws);
  return true;
}

/* ---------------- run-time scratch ---------------- */

LLVMValueRef cg_control_scratch_rt(Cg *cg, Node *n) {
  LLVMValueRef neg = NULL, t, tmp;
  switch (n->op) {
  case OP_SCAN: t = scan_lay(cg, n, NULL, &tmp, &neg); break;
  case OP_WHILE: t = while_lay(cg, n, NULL, &neg); break;
  case OP_IF: {
    LLVMValueRef a = sub_bytes(cg, sub_graph(n, ATTR_THEN), NULL, &neg);
    LLVMValueRef b = sub_bytes(cg, sub_graph(n, ATTR_ELSE), NULL, &neg);
    LLVMValueRef gt = LLVMBuildICmp(cg->b, LLVMIntSGT, a, b, "");
    t = add(cg, LLVMBuildSelect(cg->b, gt, a, b, ""), cg_i64(cg, 64));
    break;
  }
  default: /* custom_fn */
    t = add(cg, sub_bytes(cg, sub_graph(n, ATTR_FWD), NULL, &neg),
            cg_i64(cg, 64));
  }
  return total_or_neg(cg, t, neg);
}

/* Dynamic sizes anywhere: a subgraph function reads them as its caller
 * does (pass_sizes), buffers are laid out at the bounds (or, without
 * one, at run time). */
const CgEmitter cg_emitter_scan = {cg_emit_scan, cg_scratch_scan, cg_dyn_any};
const CgEmitter cg_emitter_if = {cg_emit_if, cg_scratch_if, cg_dyn_any};
const CgEmitter cg_emitter_while = {cg_emit_while, cg_scratch_while,
                                    cg_dyn_any};
const CgEmitter cg_emitter_custom_fn = {cg_emit_custom_fn,
                                        cg_scratch_custom_fn, cg_dyn_any};
