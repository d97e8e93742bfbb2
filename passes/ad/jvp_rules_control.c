/* jvp_rules_control.c: forward mode of scan, if, while and custom_fn.
 *
 * Control flow keeps its form: the tangent of a scan is computed by a
 * scan, of an if by an if (only the taken branch runs), of a while by
 * a while (no unrolling, no max_iterations needed). Each rebuilt node
 * carries the primal and the tangent together, flattened and
 * concatenated into one value [2N] (a carry, a branch result), since a
 * body returns one value per carry: its subgraph is the JVP of the
 * original one (jvp_into) between an unpack and a pack. The rebuilt
 * node replaces the primal copy, so nothing runs twice.
 *   scan: carry [2N]; broadcast operands b..., then the tangents of the
 *     broadcasts that have one; per-step operands xs..., then their
 *     tangents. A trajectory [L, 2N] is split along axis 1.
 *   if: captures c..., then the tangents of those that have one.
 *   while: carry 0 packed with its tangent, the other carries, then a
 *     tangent carry for every other floating-point carry (zeros when
 *     it enters without one: the body may give it one).
 *   custom_fn: the jvp body, inlined, with %tangent_i = operand i's
 *     tangent (zeros when it has none) — used as written; without one,
 *     the fwd body differentiated.
 */
#include "passes/ad/jvp_rules.h"

#include <stdio.h>

/* The element count of t: a dim, dynamic ones a size expression. */
static int64_t numel(IrBuilder *b, const Type *t) {
  int64_t m;
  DimStatus st = type_numel_dim(b->c, t, &m);
  RLX_ASSERT(st == DIM_OK); /* t is a value's type */
  return m;
}
/* primal and tangent (NULL: zeros) of type t as one value: [2N], or
 * [2, N] when N is dynamic (a size is never halved) */
static Node *pack(IrBuilder *b, Node *p, Node *t) {
  if (!t) t = ib_fill(b, p->type, 0);
  int64_t d[2] = {1, numel(b, &p->type)};
  bool stack = !dim_is_static(d[1]);
  Node *parts[2] = {p, t};
  for (int k = 0; k < 2; k++)
    if (stack || parts[k]->type.rank != 1)
      parts[k] = ib_reshape(b, parts[k], 1 + stack, d + !stack);
  return ib_concat(b, parts, 2, 0);
}
/* part `which` (0 primal, 1 tangent) of packed v ([..., 2N] or
 * [..., 2, N]) */
static Node *unpack(IrBuilder *b, Node *v, const Type *t, int which) {
  int ax = v->type.rank - 1;
  if (!dim_is_static(v->type.dims[ax]))
    return ib_reshape_as(b, ib_narrow(b, v, ax - 1, which, 1), t);
  int64_t nn = v->type.dims[ax] / 2;
  return ib_reshape_as(b, ib_narrow(b, v, ax, which * nn, nn), t);
}
static bool is_float(const Node *v) {
  return dt_is_float(v->type.dt) || dt_is_complex(v->type.dt);
}
/* the type of pack(p, t) for p of type t */
static Type packed_t(IrBuilder *b, const Type *t) {
  int64_t d[2] = {2, numel(b, t)};
  if (!dim_is_static(d[1])) return type_make(t->dt, 2, d);
  d[1] *= 2;
  return type_make(t->dt, 1, d + 1);
}

/* A new subgraph named after `base`, to be filled and attached. */
static Graph *sub_new(JvpCtx *jc, const Graph *base, const char *what) {
  char nm[300];
  snprintf(nm, sizeof nm, "%s_%s", base->name, what);
  return ib_graph_detached(B->c, nm, base->loc);
}
static Graph *sub_attach(JvpCtx *jc, Graph *g) {
  g->name = ib_fresh_graph_name(B->c, jc->mod, g->name);
  pass_simplify_graph(B->c, g);
  pass_cse_graph(B->c, g);
  pass_dce_graph(B->c, g);
  return ib_attach(B->c, jc->mod, g);
}
/* An argument of g named PFXi (arguments come before other nodes) */
static Node *arg(JvpCtx *jc, Graph *g, const char *pfx, int i, Type t) {
  char nm[64];
  snprintf(nm, sizeof nm, "%s%d", pfx, i);
  return ir_arg_new(B->c, g, OP_INPUT, nm, t, g->loc);
}

/* The primal copy of n becomes v (n's name moves with it). */
static void set_primal(JvpCtx *jc, const Node *n, Node *v) {
  if (Y->name && !v->name) {
    v->name = Y->name;
    Y->name = NULL;
  }
  Y = v;
}

static Node **nodes(JvpCtx *jc, int n) {
  return arena_alloc(B->c->arena, sizeof(Node *) * (size_t)(n + 1));
}

/* ---- scan ---- */

Node *jvp_scan(JvpCtx *jc, const Node *n) {
  Ctx *c = B->c;
  Graph *body = ir_attr_graph(n, ATTR_BODY);
  int nb = (int)ir_attr_int(n, ATTR_NUM_BCAST, 0);
  const Type *ct = &n->in[0]->type;
  Graph *g = sub_new(jc, body, "jvp");
  IrBuilder gb = {c, g, body->loc};
  /* operands and body arguments in the new order */
  Node **in = nodes(jc, 2 * n->nin), **bargs = nodes(jc, n->nin);
  Node **sat = nodes(jc, n->nin), **stan = nodes(jc, n->nin);
  int ni = 0, ns = 0;
  in[ni++] = pack(B, X(0), T(0));
  Node *P = arg(jc, g, "carry", 0, packed_t(B, ct));
  sat[ns++] = body->args[0]; /* stan[0]: below, once the args exist */
  int lo[2] = {1, 1 + nb}, hi[2] = {1 + nb, n->nin};
  int ntb = 0;
  for (int part = 0; part < 2; part++) {
    for (int i = lo[part]; i < hi[part]; i++) { /* primal operands */
      in[ni++] = X(i);
      bargs[i] = arg(jc, g, part ? "x" : "b", i, body->args[i]->type);
    }
    for (int i = lo[part]; i < hi[part]; i++) { /* their tangents */
      if (!T(i)) continue;
      in[ni++] = T(i);
      ntb += !part;
      sat[ns] = body->args[i];
      stan[ns++] = arg(jc, g, part ? "tx" : "tb", i,
                       body->args[i]->type);
    }
  }
  /* the arguments in operand order: carry, b..., tb..., x..., tx... */
  bargs[0] = unpack(&gb, P, ct, 0);
  stan[0] = unpack(&gb, P, ct, 1);
  Node *p, *t;
  if (!jc->walk(&gb, jc->mod, body, bargs, false, (const Node *const *)sat,
                stan, ns, &p, &t)) {
    jc->ok = false;
    return NULL;
  }
  Node *ret = pack(&gb, p, t);
  ir_set_rets(c, g, &ret, 1);
  Node *s = ib_op(B, OP_SCAN, in, ni);
  ir_attr_copy_all(c, s, n);
  ir_attr_set_graph(c, s, ATTR_BODY, sub_attach(jc, g));
  ir_attr_set_int(c, s, ATTR_NUM_BCAST, nb + ntb);
  ib_finish(B, s);
  set_primal(jc, n, unpack(B, s, &n->type, 0));
  return unpack(B, s, &n->type, 1);
}

/* ---- if ---- */

/* branch(c...) -> pack(value, tangent) over (c..., tangents of c with
 * one) */
static Graph *if_branch(JvpCtx *jc, const Node *n, const Graph *br) {
  Ctx *c = B->c;
  Graph *g = sub_new(jc, br, "jvp");
  IrBuilder gb = {c, g, br->loc};
  int m = n->nin - 1, ns = 0;
  Node **a = nodes(jc, m), **sat = nodes(jc, m), **stan = nodes(jc, m);
  for (int i = 0; i < m; i++)
    a[i] = arg(jc, g, "c", i, br->args[i]->type);
  for (int i = 0; i < m; i++)
    if (T(1 + i)) {
      sat[ns] = br->args[i];
      stan[ns++] = arg(jc, g, "tc", i, br->args[i]->type);
    }
  Node *p, *t;
  if (!jc->walk(&gb, jc->mod, br, a, false, (const Node *const *)sat, stan,
                ns, &p, &t)) {
    jc->ok = false;
    return NULL;
  }
  Node *ret = pack(&gb, p, t);
  ir_set_rets(c, g, &ret, 1);
  return sub_attach(jc, g);
}

Node *jvp_if(JvpCtx *jc, const Node *n) {
  Graph *t = if_branch(jc, n, ir_attr_graph(n, ATTR_THEN));
  Graph *e = t ? if_branch(jc, n, ir_attr_graph(n, ATTR_ELSE)) : NULL;
  if (!e) return NULL;
  Node **in = nodes(jc, 2 * n->nin);
  int ni = 0;
  for (int i = 0; i < n->nin; i++) in[ni++] = X(i);
  for (int i = 1; i < n->nin; i++)
    if (T(i)) in[ni++] = T(i);
  Node *r = ib_op(B, OP_IF, in, ni);
  ir_attr_set_graph(B->c, r, ATTR_THEN, t);
  ir_attr_set_graph(B->c, r, ATTR_ELSE, e);
  ib_finish(B, r);
  set_primal(jc, n, unpack(B, r, &n->type, 0));
  return unpack(B, r, &n->type, 1);
}

/* ---- while ---- */

/* Arguments of the rebuilt cond/body: packed carry 0, carries 1..m-1,
 * tangent carries of the floating-point carries 1..m-1. c[] receives
 * the carries, tc[] their tangents (NULL for non-float). */
static void while_args(JvpCtx *jc, const Node *n, Graph *g, IrBuilder *gb,
                       Node **c, Node **tc) {
  int m = n->nin;
  Node *P = arg(jc, g, "carry", 0, packed_t(gb, &n->in[0]->type));
  for (int j = 1; j < m; j++)
    c[j] = arg(jc, g, "c", j, n->in[j]->type);
  for (int j = 1; j < m; j++)
    tc[j] = is_float(n->in[j])
        ? arg(jc, g, "tc", j, n->in[j]->type) : NULL;
  c[0] = unpack(gb, P, &n->in[0]->type, 0);
  tc[0] = unpack(gb, P, &n->in[0]->type, 1);
}

Node *jvp_while(JvpCtx *jc, const Node *n) {
  Ctx *c = B->c;
  Graph *cond = ir_attr_graph(n, ATTR_COND), *body = ir_attr_graph(n, ATTR_BODY);
  int m = n->nin;
  Node **cv = nodes(jc, m), **tv = nodes(jc, m);
  /* cond over the new carries */
  Graph *cg = sub_new(jc, cond, "jvp");
  IrBuilder cb = {c, cg, cond->loc};
  while_args(jc, n, cg, &cb, cv, tv);
  Node *pv = ib_inline(&cb, cond, cv)[0];
  ir_set_rets(c, cg, &pv, 1);
  /* body: the JVP of the original body */
  Graph *bg = sub_new(jc, body, "jvp");
  IrBuilder bb = {c, bg, body->loc};
  while_args(jc, n, bg, &bb, cv, tv);
  Node **sat = nodes(jc, m), **stan = nodes(jc, m);
  int ns = 0;
  for (int j = 0; j < m; j++)
    if (tv[j]) {
      sat[ns] = body->args[j];
      stan[ns++] = tv[j];
    }
  Node **po = nodes(jc, m), **to = nodes(jc, m);
  if (!jc->walk(&bb, jc->mod, body, cv, false, (const Node *const *)sat,
                stan, ns, po, to)) {
    jc->ok = false;
    return NULL;
  }
  Node **rets = nodes(jc, 2 * m);
  int nr = 0;
  rets[nr++] = pack(&bb, po[0], to[0]);
  for (int j = 1; j < m; j++) rets[nr++] = po[j];
  for (int j = 1; j < m; j++)
    if (tv[j]) rets[nr++] = to[j] ? to[j] : ib_fill(&bb, n->in[j]->type, 0);
  ir_set_rets(c, bg, rets, nr);
  /* operands */
  Node **in = nodes(jc, 2 * m);
  int ni = 0;
  in[ni++] = pack(B, X(0), T(0));
  for (int j = 1; j < m; j++) in[ni++] = X(j);
  for (int j = 1; j < m; j++)
    if (is_float(n->in[j])) in[ni++] = TZ(j);
  Node *w = ib_op(B, OP_WHILE, in, ni);
  ir_attr_copy_all(c, w, n);
  ir_attr_set_graph(c, w, ATTR_COND, sub_attach(jc, cg));
  ir_attr_set_graph(c, w, ATTR_BODY, sub_attach(jc, bg));
  ib_finish(B, w);
  set_primal(jc, n, unpack(B, w, &n->type, 0));
  return unpack(B, w, &n->type, 1);
}

/* ---- custom_fn ---- */

Node *jvp_custom_fn(JvpCtx *jc, const Node *n) {
  Graph *j = ir_attr_graph(n, ATTR_JVP);
  if (j) {
    Node **a = nodes(jc, 2 * n->nin);
    for (int i = 0; i < n->nin; i++) {
      a[i] = X(i);
      a[n->nin + i] = TZ(i);
    }
    return ib_inline(B, j, a)[0];
  }
  const Graph *f = ir_attr_graph(n, ATTR_FWD);
  Node **a = nodes(jc, n->nin), **sat = nodes(jc, n->nin);
  Node **stan = nodes(jc, n->nin);
  int ns = 0;
  for (int i = 0; i < n->nin; i++) {
    a[i] = X(i);
    if (T(i)) {
      sat[ns] = f->args[i];
      stan[ns++] = T(i);
    }
  }
  Node *p, *t;
  if (!jc->walk(B, jc->mod, f, a, false, (const Node *const *)sat, stan, ns,
                &p, &t))
    jc->ok = false;
  set_primal(jc, n, p);
  return t;
}
