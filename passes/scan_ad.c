/* scan_ad.c: reverse mode of `scan`, lowered to ordinary IR.
 *
 * Requires: num_bcast = 0 (scan_prep materialized broadcasts).
 * The backward sweep is itself a `scan`, run over reversed sequences
 * (gather with constant indices), whose body `BODY_vjp` is the VJP of
 * the forward body built by grad_into. Its carry packs, flattened and
 * concatenated into one vector [P], the carry gradient and the
 * gradients of the active per-step operands of the step just processed;
 * with save_trajectory=true the backward scan's rows then hold every
 * step's dx, which narrow + reshape + reverse turn into dxs. Code
 * generation therefore needs nothing beyond scan, gather, narrow,
 * reshape and concat.
 *
 * Per-step operands that are broadcasts (expand along axis 0 of a
 * [1, ...] value, as scan_prep makes them) need only the sum of their
 * per-step gradients: their section of the packed carry accumulates
 * instead, the gradient goes straight to the expanded value (the
 * expand's VJP is that sum, and VJPs are linear), and when no operand
 * needs per-step rows the backward scan keeps no trajectory at all.
 *
 * Step t (L-1 down to 0): dcarry += upstream row t (trajectory scans);
 * carry_in(t) = init (t = 0) or row t-1 of the trajectory;
 * (dcarry, dx_t...) = body_vjp(carry_in(t), x_t..., dcarry).
 *
 * Scans that return only the final carry and have checkpoints=K
 * (0 < K < L) keep K carries, at t_k = ceil((k+1)L/K) - 1, computed by
 * segment scans (the last one is the forward result itself, which is
 * untouched, so the loss is exact). Each segment is reversed by
 * recursive bisection: compute the carry at the midpoint, reverse the
 * second half, then the first; a segment of at most BISECT_LEAF steps
 * recomputes its carries and is reversed by one backward scan. Live
 * extra memory is O(log L) carries; gradients equal
 * the un-checkpointed ones. Final-carry scans without checkpoints
 * recompute their trajectory once.
 */
#include "passes/ad.h"

#include <stdio.h>

typedef struct {
  GradCtx *gc;
  const Node *n;       /* the forward scan (source graph) */
  Graph *body;
  int nx;              /* per-step operands */
  Type ct;             /* carry type */
  int64_t nc, P;       /* carry elements, packed vector length */
  char *kind;          /* per xs: XS_NONE, XS_STEP or XS_ACCUM */
  int64_t *off;        /* per xs: offset in the packed vector */
  bool rows;           /* some xs is XS_STEP: keep the trajectory */
} ScanAd;

enum { XS_NONE, XS_STEP, XS_ACCUM };
#define SB (&s->gc->b)

/* ---- the backward body ---- */

static Node *body_arg(Ctx *c, Graph *g, const char *nm, Type t) {
  return ir_arg_new(c, g, OP_INPUT, nm, t, g->loc);
}

/* Section [off, off+len) of the packed vector v, shaped like t. */
static Node *section(IrBuilder *b, Node *v, int64_t off, int64_t len,
                     int64_t total, const Type *t) {
  int ax = v->type.rank - 1;
  if (len != total) v = ib_narrow(b, v, ax, off, len);
  return t ? ib_reshape_as(b, v, t) : v;
}

static Node *flat_b(IrBuilder *b, Node *v) {
  int64_t m = type_numel(&v->type);
  return v->type.rank == 1 ? v : ib_reshape(b, v, 1, &m);
}

static bool build_body_rets(ScanAd *s, IrBuilder *bb, Node *dpack,
                            Node **args, Node *dtraj) {
  Node *dc = section(bb, dpack, 0, s->nc, s->P, &s->ct);
  if (dtraj) dc = ib_bin(bb, OP_ADD, dc, dtraj);
  Arena *ar = bb->c->arena;
  Node **t = arena_alloc(ar, sizeof(Node *) * (size_t)(s->nx + 1));
  Node **gr = arena_alloc(ar, sizeof(Node *) * (size_t)(s->nx + 1));
  int nt = 0;
  t[nt++] = s->body->args[0];
  for (int i = 0; i < s->nx; i++)
    if (s->kind[i] != XS_NONE) t[nt++] = s->body->args[1 + i];
  if (!grad_into(bb, s->gc->mod, s->body, args, false, &dc, t, nt, gr,
                 NULL))
    return false;
  Node **parts = arena_alloc(ar, sizeof(Node *) * (size_t)(nt + 1));
  for (int i = -1, k = 0; i < s->nx; i++) {
    if (i >= 0 && s->kind[i] == XS_NONE) continue;
    Node *v = gr[k] ? gr[k] : ib_fill(bb, t[k]->type, 0);
    v = flat_b(bb, v);
    if (i >= 0 && s->kind[i] == XS_ACCUM)
      v = ib_bin(bb, OP_ADD, section(bb, dpack, s->off[i],
                                     type_numel(&v->type), s->P, NULL), v);
    parts[k++] = v;
  }
  Node *ret = ib_concat(bb, parts, nt, 0);
  ir_set_rets(bb->c, bb->g, &ret, 1);
  return true;
}

/* BODY_vjp(dpack, carry, x..., [dtraj]) -> dpack' */
static Graph *bwd_body(ScanAd *s, bool has_dtraj) {
  Ctx *c = s->gc->b.c;
  char nm[256];
  snprintf(nm, sizeof nm, "%s_vjp", s->body->name);
  Graph *g = ib_graph_detached(c, ib_fresh_graph_name(c, s->gc->mod, nm),
                               s->n->loc);
  int64_t P = s->P;
  Node *dpack = body_arg(c, g, "dpack", type_make(s->ct.dt, 1, &P));
  Node **args = arena_alloc(c->arena, sizeof(Node *) * (size_t)(s->nx + 1));
  args[0] = body_arg(c, g, "carry", s->ct);
  for (int i = 0; i < s->nx; i++) {
    snprintf(nm, sizeof nm, "x%d", i);
    args[1 + i] = body_arg(c, g, nm, s->body->args[1 + i]->type);
  }
  Node *dt = has_dtraj ? body_arg(c, g, "dtraj", s->ct) : NULL;
  IrBuilder bb = {c, g, s->n->loc};
  if (!build_body_rets(s, &bb, dpack, args, dt)) return NULL;
  pass_simplify_graph(c, g);
  pass_cse_graph(c, g);
  pass_dce_graph(c, g);
  return ib_attach(c, s->gc->mod, g);
}

static Node *flat(ScanAd *s, Node *v) { return flat_b(SB, v); }

/* ---- forward helpers ---- */

static Node *mk_scan(ScanAd *s, Node *init, Node **xs, int64_t len,
                     bool traj) {
  Arena *ar = SB->c->arena;
  Node **in = arena_alloc(ar, sizeof(Node *) * (size_t)(s->nx + 1));
  in[0] = init;
  for (int i = 0; i < s->nx; i++) in[1 + i] = xs[i];
  Node *r = ib_op(SB, OP_SCAN, in, s->nx + 1);
  ir_attr_copy_all(SB->c, r, s->n);
  ir_attr_set_int(SB->c, r, ATTR_LENGTH, len);
  ir_attr_set_bool(SB->c, r, ATTR_SAVE_TRAJ, traj);
  ir_attr_set_int(SB->c, r, ATTR_CHECKPOINTS, 0);
  return ib_finish(SB, r);
}

/* xs narrowed to steps [a, a+len) */
static Node **slice_xs(ScanAd *s, Node **xs, int64_t a, int64_t len) {
  Node **r = arena_alloc(SB->c->arena,
                         sizeof(Node *) * (size_t)(s->nx + 1));
  for (int i = 0; i < s->nx; i++)
    r[i] = a == 0 && len == xs[i]->type.dims[0] ? xs[i]
         : ib_narrow(SB, xs[i], 0, a, len);
  return r;
}

/* The carries entering steps len-1, ..., 0 (the order the backward
 * scan visits them): trajectory rows len-2 ... 0 (one gather), then
 * init. */
static Node *carries_in_rev(ScanAd *s, Node *init, Node *traj,
                            int64_t len) {
  Type t1 = s->ct;
  t1.rank = s->ct.rank + 1;
  t1.dims[0] = 1;
  for (int i = 0; i < s->ct.rank; i++) t1.dims[1 + i] = s->ct.dims[i];
  Node *last = ib_reshape_as(SB, init, &t1);
  if (len == 1) return last;
  int64_t *idx = arena_alloc(SB->c->arena, sizeof(int64_t) * (size_t)len);
  for (int64_t i = 0; i < len - 1; i++) idx[i] = len - 2 - i;
  Node *in[2] = {traj, ib_i64s(SB, idx, len - 1)};
  Node *gt = ib_op(SB, OP_GATHER, in, 2);
  ir_attr_set_int(SB->c, gt, ATTR_AXIS, 0);
  Node *parts[2] = {ib_finish(SB, gt), last};
  return ib_concat(SB, parts, 2, 0);
}

/* ---- the sweep ---- */

/* Reverse len steps. dtraj: per-step upstream rows or NULL; dlast: the
 * gradient of the carry after the last step or NULL. */
static void sweep(ScanAd *s, Graph *bb, int64_t len, Node *cin, Node **xs,
                  Node *dtraj, Node *dlast, Node **dinit, Node **dxs) {
  int64_t P = s->P, rest = P - s->nc;
  Node *pk0 = ib_fill(SB, type_make(s->ct.dt, 1, &P), 0);
  if (dlast) {
    Node *parts[2] = {flat(s, dlast), NULL};
    if (rest) parts[1] = ib_fill(SB, type_make(s->ct.dt, 1, &rest), 0);
    pk0 = ib_concat(SB, parts, rest ? 2 : 1, 0);
  }
  Arena *ar = SB->c->arena;
  Node **in = arena_alloc(ar, sizeof(Node *) * (size_t)(s->nx + 3));
  int k = 0;
  in[k++] = pk0;
  in[k++] = cin; /* already in backward order */
  for (int i = 0; i < s->nx; i++) in[k++] = ib_reverse0(SB, xs[i]);
  if (dtraj) in[k++] = ib_reverse0(SB, dtraj);
  Node *sc = ib_op(SB, OP_SCAN, in, k);
  ir_attr_set_graph(SB->c, sc, ATTR_BODY, bb);
  ir_attr_set_int(SB->c, sc, ATTR_LENGTH, len);
  ir_attr_set_bool(SB->c, sc, ATTR_SAVE_TRAJ, s->rows);
  ib_finish(SB, sc);
  Node *last = s->rows ? ib_narrow(SB, sc, 0, len - 1, 1) : sc;
  *dinit = section(SB, last, 0, s->nc, P, &s->ct);
  for (int i = 0; i < s->nx; i++) {
    const Type *st = &s->body->args[1 + i]->type;
    int64_t ni = type_numel(st);
    if (s->kind[i] == XS_ACCUM) {
      dxs[i] = section(SB, last, s->off[i], ni, P, st);
    } else if (s->kind[i] == XS_STEP) {
      Node *col = section(SB, sc, s->off[i], ni, P, NULL);
      dxs[i] = ib_reverse0(SB, ib_reshape_as(SB, col, &xs[i]->type));
    }
  }
}

/* ---- checkpointed reversal ---- */

/* Segments of at most this many steps are reversed from a recomputed
 * trajectory instead of being bisected further (fewer, longer backward
 * scans; a constant number of extra carries). */
#define BISECT_LEAF 4

/* Gradients of the per-step operands, gathered while segments are
 * reversed (last segment first): a block of rows per segment for
 * XS_STEP operands (joined by one concat at the end), a running sum for
 * XS_ACCUM. */
typedef struct {
  Node ***rows;  /* per xs: rows[i][0..n) in reverse step order */
  Node **sum;    /* per xs: accumulated sum */
  int64_t n;
} Collect;

static void collect_step(ScanAd *s, Collect *col, Node **dx) {
  for (int i = 0; i < s->nx; i++) {
    if (s->kind[i] == XS_STEP) col->rows[i][col->n] = dx[i];
    if (s->kind[i] == XS_ACCUM)
      col->sum[i] = col->sum[i] ? ib_bin(SB, OP_ADD, col->sum[i], dx[i])
                                : dx[i];
  }
  col->n++;
}

static void collect_finish(ScanAd *s, Collect *col, Node **dxs) {
  Node **parts = arena_alloc(SB->c->arena,
                             sizeof(Node *) * (size_t)(col->n + 1));
  for (int i = 0; i < s->nx; i++) {
    if (s->kind[i] == XS_ACCUM) dxs[i] = col->sum[i];
    if (s->kind[i] != XS_STEP) continue;
    for (int64_t t = 0; t < col->n; t++)
      parts[t] = col->rows[i][col->n - 1 - t];
    dxs[i] = ib_concat(SB, parts, (int)col->n, 0);
  }
}

static Node **new_dxs(ScanAd *s) {
  return arena_alloc(SB->c->arena, sizeof(Node *) * (size_t)(s->nx + 1));
}

/* Reverse steps [a, a+len) from carry `start` given the gradient of the
 * carry after them: recursive bisection. Slices of xs are made where
 * they are used, so none stays alive across a recursion. */
static Node *bisect(ScanAd *s, Graph *bb, Node *start, Node **xs,
                    int64_t a, int64_t len, Node *dend, Collect *col) {
  if (len <= BISECT_LEAF) { /* a short segment: recompute its rows */
    Node *dstart, **dx = new_dxs(s), **xl = slice_xs(s, xs, a, len);
    Node *t = len > 1 ? mk_scan(s, start, xl, len, true) : NULL;
    sweep(s, bb, len, carries_in_rev(s, start, t, len), xl, NULL, dend,
          &dstart, dx);
    collect_step(s, col, dx);
    return dstart;
  }
  int64_t h = len / 2;
  Node *mid = mk_scan(s, start, slice_xs(s, xs, a, h), h, false);
  Node *dmid = bisect(s, bb, mid, xs, a + h, len - h, dend, col);
  return bisect(s, bb, start, xs, a, h, dmid, col);
}

static Node *checkpointed(ScanAd *s, Graph *bb, Node *init, Node **xs,
                          int64_t L, int64_t K, Node *g, Node **dxs) {
  Arena *ar = SB->c->arena;
  int64_t *lo = arena_alloc(ar, sizeof(int64_t) * (size_t)(K + 1));
  Node **ck = arena_alloc(ar, sizeof(Node *) * (size_t)(K + 1));
  Collect col = {arena_alloc(ar, sizeof(Node **) * (size_t)(s->nx + 1)),
                 new_dxs(s), 0};
  for (int i = 0; i < s->nx; i++)
    if (s->kind[i] == XS_STEP)
      col.rows[i] = arena_alloc(ar, sizeof(Node *) * (size_t)L);
  lo[0] = 0;
  for (int64_t k = 0; k < K; k++) /* t_k = ceil((k+1)L/K) - 1 */
    lo[k + 1] = ((k + 1) * L + K - 1) / K;
  ck[0] = init;
  for (int64_t k = 0; k + 1 < K; k++)
    ck[k + 1] = mk_scan(s, ck[k], slice_xs(s, xs, lo[k], lo[k + 1] - lo[k]),
                        lo[k + 1] - lo[k], false);
  Node *d = g;
  for (int64_t k = K - 1; k >= 0; k--)
    d = bisect(s, bb, ck[k], xs, lo[k], lo[k + 1] - lo[k], d, &col);
  collect_finish(s, &col, dxs);
  return d;
}

/* ---- entry ---- */

/* A per-step operand that is a broadcast over steps (expand along axis
 * 0 of a [1, ...] value, unnamed so that nobody asked for its own
 * gradient). */
static bool is_bcast(const Node *x) {
  return x->op == OP_EXPAND && !x->name &&
         x->in[0]->type.rank == x->type.rank && x->in[0]->type.dims[0] == 1;
}

static bool setup(ScanAd *s, GradCtx *gc, const Node *n) {
  Ctx *c = gc->b.c;
  s->gc = gc;
  s->n = n;
  s->body = ir_attr_graph(n, ATTR_BODY);
  s->nx = n->nin - 1;
  s->ct = n->in[0]->type;
  s->nc = s->P = type_numel(&s->ct);
  s->kind = arena_alloc(c->arena, (size_t)(s->nx + 1));
  s->off = arena_alloc(c->arena, sizeof(int64_t) * (size_t)(s->nx + 1));
  s->rows = false;
  if (ir_attr_int(n, ATTR_NUM_BCAST, 0) != 0)
    return diag_error(c, n->loc, "internal: scan reached reverse mode "
                      "with broadcast operands (scan_prep did not run)");
  for (int i = 0; i < s->nx; i++) {
    const Node *x = n->in[1 + i];
    if (!gc->active[x->id] ||
        !(dt_is_float(x->type.dt) || dt_is_complex(x->type.dt)))
      continue;
    if (x->type.dt != s->ct.dt)
      return diag_error(c, n->loc, "scan: reverse mode needs per-step "
                        "operands of the carry's dtype %s (operand %d is "
                        "%s)", dt_name(s->ct.dt), 1 + i,
                        dt_name(x->type.dt));
    s->kind[i] = is_bcast(x) && gc->active[x->in[0]->id] ? XS_ACCUM
                                                          : XS_STEP;
    s->rows |= s->kind[i] == XS_STEP;
    s->off[i] = s->P;
    s->P += type_numel(&s->body->args[1 + i]->type);
  }
  return true;
}

/* Hand the xs gradients to the operands (accumulated sums go to the
 * value that was expanded). */
static void give_dxs(ScanAd *s, Node **dxs) {
  for (int i = 0; i < s->nx; i++) {
    const Node *x = s->n->in[1 + i];
    if (s->kind[i] == XS_STEP) grad_accum(s->gc, x, dxs[i]);
    if (s->kind[i] == XS_ACCUM)
      grad_accum(s->gc, x->in[0], ib_reshape_as(SB, dxs[i],
                                                &x->in[0]->type));
  }
}

/* The upstream gradient of a trajectory when only its last row has one
 * (the narrow VJP of scan_prep's final-carry form: zeros, then the
 * row): that row, shaped like the carry; else NULL. */
static Node *last_row_only(ScanAd *s, Node *g, int64_t L) {
  if (g->op != OP_CONCAT || g->nin != 2 || ir_attr_int(g, ATTR_AXIS, 0))
    return NULL;
  Node *z = g->in[0];
  if (z->op != OP_CONST || !z->splat || ir_const_get(z, 0) != 0 ||
      z->type.dims[0] != L - 1)
    return NULL;
  return ib_reshape_as(SB, g->in[1], &s->ct);
}

bool scan_vjp(GradCtx *gc, const Node *n, Node *g) {
  ScanAd s;
  if (!setup(&s, gc, n)) return false;
  bool traj = ir_attr_bool(n, ATTR_SAVE_TRAJ, false);
  int64_t L = traj ? n->type.dims[0]
      : s.nx ? n->in[1]->type.dims[0] : ir_attr_int(n, ATTR_LENGTH, 0);
  int64_t K = ir_attr_int(n, ATTR_CHECKPOINTS, 0);
  if (L == 0) {
    if (!traj) grad_accum(gc, n->in[0], g);
    return true;
  }
  Node *dlast = traj ? last_row_only(&s, g, L) : g;
  Node *dtraj = traj && !dlast ? g : NULL;
  Graph *bb = bwd_body(&s, dtraj != NULL);
  if (!bb) return false;
  Node *init = GV(gc, n->in[0]), *dinit;
  Node **xs = new_dxs(&s), **dxs = new_dxs(&s);
  for (int i = 0; i < s.nx; i++) xs[i] = GV(gc, n->in[1 + i]);
  if (!traj && K > 0 && K < L) {
    dinit = checkpointed(&s, bb, init, xs, L, K, g, dxs);
  } else {
    Node *t = traj ? GV(gc, n) : mk_scan(&s, init, xs, L, true);
    sweep(&s, bb, L, carries_in_rev(&s, init, t, L), xs, dtraj, dlast,
          &dinit, dxs);
  }
  grad_accum(gc, n->in[0], dinit);
  give_dxs(&s, dxs);
  return true;
}
