/* vjp_rules_scan.c: reverse mode of `scan`, lowered to ordinary IR.
 *
 * Requires: num_bcast = 0 (scan_prep materialized broadcasts).
 * Provides: the gradients of the scan's active operands, built from
 * scan, narrow, reshape, concat and splat constants only. Nothing it
 * creates grows with the scan length L: no index table, no per-step
 * node; a checkpointed scan adds O(log L) subgraphs of constant size.
 * Compile time and memory therefore do not depend on L.
 *
 * The backward sweep is itself a `scan` that runs the other way
 * (reverse=true for a forward scan): it reads the per-step operands,
 * the carries and the upstream rows in place and writes its rows in
 * step order, so nothing is ever reversed or gathered. Its body
 * BODY_vjp(dpack, carry, x..., [dtraj]) -> dpack' is the VJP of the
 * forward body (grad_into). The backward state dpack [P] holds,
 * flattened and concatenated, the carry gradient and one section per
 * active per-step operand: XS_STEP sections receive that step's dx;
 * XS_ACCUM sections (the broadcasts of scan_prep) a running sum that
 * goes straight to the expanded value. When some operand is XS_STEP
 * ("rows"), the backward scans keep their trajectories, whose XS_STEP
 * sections are the dx rows, already in step order.
 *
 * Backward step t: dcarry += upstream row t (trajectory scans);
 * carry_in(t) is init for the first step of the forward order, else
 * the carry after the step before it, read from the forward
 * trajectory; (dcarry, dx_t...) = body_vjp(carry_in(t), x_t..., dcarry).
 *
 * Checkpoints (final-carry scans, 0 < K < L): K' = the largest divisor
 * of L not above K equal segments. Every split is into equal parts, so
 * the per-step operands of the parts are reshapes ([parts, steps, ...])
 * that scans slice in place, never copies. One forward scan over the
 * parts (body NAME_fwdN: a scan of N steps) yields their checkpoints;
 * one backward scan over the parts (body NAME_revN) reverses them, last
 * first. NAME_revN reverses one segment of N steps the same way: it
 * splits it into p parts, p the smallest factor of N up to BISECT_WAYS
 * (bisection for even N); at most BISECT_LEAF steps recompute their
 * carries and are reversed by one backward scan of single steps; a
 * length without a small factor splits off its first step and reverses
 * the two halves of the rest through NAME_rev((N-1)/2) (split_odd).
 * There is one subgraph per distinct segment length: O(log L) in all.
 * The state passed between segments of N steps (P(N)) also holds, with
 * rows, the dx rows of the segment's N steps. Live extra memory: the
 * K' checkpoints plus O(log L) carries (plus, with rows, the dx rows
 * of the segments being reversed). Every step runs the same VJP on the
 * same carry in the same order as without checkpoints, so the
 * gradients are bit-identical.
 *
 * Dynamic sizes (docs/dynamic-dims.md): a size is never a difference,
 * so a dynamic L narrows nothing to L-1 rows; the carries entering the
 * steps and the backward state after the last step come from scans
 * instead (carries_in, last_row). A body with dynamic sizes gets one
 * backward scan per gradient (scan_vjp_dyn), as its gradients cannot
 * be packed at static offsets.
 */
#include "passes/ad/ad.h"

#include <stdio.h>

/* ad_scan, ad_scan_carries_in, ad_section, ad_flat and ad_rows_of (ad.h)
 * are shared with lower_scan_bwd.c. */

enum { XS_NONE, XS_STEP, XS_ACCUM };

/* Subgraphs made for segments of `len` steps. */
typedef struct {
  int64_t len;
  Graph *rev;          /* (dpack, carry, xs...) -> dpack' */
  Graph *fwd;          /* (carry, xs...) -> carry after len steps */
} SegGraphs;

typedef struct {
  GradCtx *gc;
  const Node *n;       /* the forward scan (source graph) */
  Graph *body;         /* its body */
  Graph *bvjp;         /* BODY_vjp without dtraj (checkpointed sweeps) */
  int nx;              /* per-step operands */
  Type ct;             /* carry type */
  int64_t nc, P;       /* carry elements, backward state elements */
  char *kind;          /* per xs: XS_NONE, XS_STEP or XS_ACCUM */
  int64_t *esz;        /* per xs: elements of one step's slice */
  int64_t *off;        /* per xs: offset of its section in the state */
  bool rows;           /* some xs is XS_STEP: keep the trajectories */
  bool rev;            /* the forward scan runs t = L-1 ... 0 */
  bool dyn;            /* the body has dynamic sizes (scan_vjp_dyn) */
  SegGraphs *seg;
  int nseg, capseg;
} ScanAd;

/* Gradient state while steps are reversed (NULL: zero). */
typedef struct {
  Node *dc;            /* gradient of the carry, type ct */
  Node **acc;          /* per XS_ACCUM xs: running sum, flat */
  Node **step;         /* per XS_STEP xs: rows of the last part reversed,
                          [n, slice...] in array order */
} Grads;

#define CTX(s) ((s)->gc->b.c)

/* Segments of at most this many steps are reversed from recomputed
 * carries instead of being split further. */
#define BISECT_LEAF 4
/* Segments are split into at most this many equal parts. */
#define BISECT_WAYS 16

/* A zeroed array with room for the scan's operands and two more. */
static Node **nodes(ScanAd *s) {
  return arena_alloc(CTX(s)->arena,
                     sizeof(Node *) * (size_t)(s->nx + 3));
}

/* ---- types and the backward state ---- */

static Type vec(DType dt, int64_t n) { return type_make(dt, 1, &n); }

/* [rows, t...] */
Type ad_rows_of(const Type *t, int64_t rows) {
  Type r = *t;
  r.rank = t->rank + 1;
  r.dims[0] = rows;
  for (int i = 0; i < t->rank; i++) r.dims[1 + i] = t->dims[i];
  return r;
}

static const Type *slice_t(ScanAd *s, int i) {
  return &s->body->args[1 + i]->type;
}

/* Section [off, off+len) along the last axis of v, shaped like t. */
Node *ad_section(IrBuilder *b, Node *v, int64_t off, int64_t len,
                 const Type *t) {
  int ax = v->type.rank - 1;
  if (len != v->type.dims[ax]) v = ib_narrow(b, v, ax, off, len);
  return t ? ib_reshape_as(b, v, t) : v;
}

Node *ad_flat(IrBuilder *b, Node *v) {
  int64_t m = type_numel(&v->type);
  return v->type.rank == 1 ? v : ib_reshape(b, v, 1, &m);
}

static Node *zeros(ScanAd *s, IrBuilder *b, int64_t n) {
  return ib_fill(b, vec(s->ct.dt, n), 0);
}

/* Section of xs i in the state passed between units of n steps. */
static int64_t sec_len(ScanAd *s, int i, int64_t n) {
  return s->kind[i] == XS_STEP ? n * s->esz[i] : s->esz[i];
}

static int64_t sec_off(ScanAd *s, int i, int64_t n) {
  int64_t off = s->nc;
  for (int k = 0; k < i; k++)
    if (s->kind[k] != XS_NONE) off += sec_len(s, k, n);
  return off;
}

/* P(n): [dc | per active xs: n dx rows (XS_STEP) or a sum (XS_ACCUM)] */
static int64_t packed_len(ScanAd *s, int64_t n) {
  return sec_off(s, s->nx, n);
}

/* g packed for units of n steps; the dx rows are zeros unless `rows`
 * (they are outputs of the backward scans). */
static Node *pack(ScanAd *s, IrBuilder *b, int64_t n, const Grads *g,
                  bool rows) {
  Node **p = nodes(s);
  int k = 0;
  p[k++] = g->dc ? ad_flat(b, g->dc) : zeros(s, b, s->nc);
  for (int i = 0; i < s->nx; i++) {
    Node *v = s->kind[i] == XS_STEP ? (rows ? g->step[i] : NULL)
            : s->kind[i] == XS_ACCUM ? g->acc[i] : NULL;
    if (s->kind[i] != XS_NONE)
      p[k++] = v ? ad_flat(b, v) : zeros(s, b, sec_len(s, i, n));
  }
  return ib_concat(b, p, k, 0);
}

/* The carry gradient and the sums from a packed vector [P(n)]. */
static void unpack(ScanAd *s, IrBuilder *b, Node *v, int64_t n,
                   Grads *g) {
  g->dc = ad_section(b, v, 0, s->nc, &s->ct);
  for (int i = 0; i < s->nx; i++)
    if (s->kind[i] == XS_ACCUM)
      g->acc[i] = ad_section(b, v, sec_off(s, i, n), s->esz[i], NULL);
}

/* The dx rows from the trajectory [m, P(n)] of a backward scan over m
 * units of n steps: step[i] = [m*n, slice...], in step order. */
static void unpack_rows(ScanAd *s, IrBuilder *b, Node *tr, int64_t m,
                        int64_t n, Grads *g) {
  for (int i = 0; i < s->nx; i++) {
    if (s->kind[i] != XS_STEP) continue;
    Type t = ad_rows_of(slice_t(s, i), m * n);
    g->step[i] = ad_section(b, tr, sec_off(s, i, n), n * s->esz[i], &t);
  }
}

/* ---- the forward order ---- */

/* x narrowed to the steps [a, a+len) of the forward order. */
static Node *pslice(ScanAd *s, IrBuilder *b, Node *x, int64_t a,
                    int64_t len) {
  int64_t n = x->type.dims[0];
  if (len == n) return x;
  return ib_narrow(b, x, 0, s->rev ? n - a - len : a, len);
}

static Node **pslices(ScanAd *s, IrBuilder *b, Node **xs, int64_t a,
                      int64_t len) {
  Node **r = nodes(s);
  for (int i = 0; i < s->nx; i++) r[i] = pslice(s, b, xs[i], a, len);
  return r;
}

/* Blocks `first` and `second` (in the forward order) joined along
 * axis 0 in array order. */
static Node *join2(ScanAd *s, IrBuilder *b, Node *first, Node *second) {
  Node *p[2] = {s->rev ? second : first, s->rev ? first : second};
  return ib_concat(b, p, 2, 0);
}

static Node **rows_copy(ScanAd *s, Grads *g) {
  Node **r = nodes(s);
  for (int i = 0; i < s->nx; i++) r[i] = g->step[i];
  return r;
}

/* The rows of g (a part reversed last) joined with those of `later`,
 * the part after it in the forward order. */
static void join_rows(ScanAd *s, IrBuilder *b, Grads *g, Node **later) {
  for (int i = 0; i < s->nx; i++)
    if (s->kind[i] == XS_STEP) g->step[i] = join2(s, b, g->step[i],
                                                  later[i]);
}

Node *ad_scan(IrBuilder *b, Graph *body, Node *const *in, int nin,
              int64_t len, bool rev, bool traj) {
  Node *r = ib_op(b, OP_SCAN, in, nin);
  ir_attr_set_graph(b->c, r, ATTR_BODY, body);
  if (dim_is_static(len)) /* a dynamic length is the xs' axis 0 */
    ir_attr_set_int(b->c, r, ATTR_LENGTH, len);
  if (traj) ir_attr_set_bool(b->c, r, ATTR_SAVE_TRAJ, true);
  if (rev) ir_attr_set_bool(b->c, r, ATTR_REVERSE, true);
  return ib_finish(b, r);
}

/* xs (m units of len steps) as scan operands [m, len, slice...]: a
 * reshape, so scans read the units in place. */
static Node **units(ScanAd *s, IrBuilder *b, Node **xs, int64_t m,
                    int64_t len) {
  Node **r = nodes(s);
  for (int i = 0; i < s->nx; i++) {
    Type t = ad_rows_of(slice_t(s, i), len);
    t = ad_rows_of(&t, m);
    r[i] = len == 1 ? xs[i] : ib_reshape_as(b, xs[i], &t);
  }
  return r;
}

static Graph *fwd_graph(ScanAd *s, int64_t len);

/* Forward scan from start over m units of len steps (the first m*len
 * steps of xs): the final carry, or the carries after each unit. */
static Node *advance(ScanAd *s, IrBuilder *b, Node *start, Node **xs,
                     int64_t m, int64_t len, bool traj) {
  Node **in = nodes(s);
  in[0] = start;
  Node **u = units(s, b, pslices(s, b, xs, 0, m * len), m, len);
  for (int i = 0; i < s->nx; i++) in[1 + i] = u[i];
  Graph *body = len == 1 ? s->body : fwd_graph(s, len);
  return ad_scan(b, body, in, s->nx + 1, m, s->rev, traj);
}

/* The carries entering m units, [m, carry] in array order, from start
 * and tr, the carries after the first m-1 (or all m) units. */
Node *ad_scan_carries_in(IrBuilder *b, Node *start, Node *tr, int64_t m,
                         bool rev) {
  Type t1 = ad_rows_of(&start->type, 1);
  Node *c1 = ib_reshape_as(b, start, &t1);
  if (m == 1) return c1;
  if (tr->type.dims[0] != m - 1)
    tr = ib_narrow(b, tr, 0, rev ? 1 : 0, m - 1);
  Node *p[2] = {rev ? tr : c1, rev ? c1 : tr};
  return ib_concat(b, p, 2, 0);
}

static Graph *attach(ScanAd *s, Graph *g, const char *what, int64_t len);

/* [a; b]: two values of one type stacked along a new axis 0. */
static Node *stack2(IrBuilder *b, Node *x, Node *y) {
  Type t = ad_rows_of(&x->type, 1);
  Node *p[2] = {ib_reshape_as(b, x, &t), ib_reshape_as(b, y, &t)};
  return ib_concat(b, p, 2, 0);
}

/* Part k of stacked rows v [..., 2, t...] (axis `ax` the 2), typed t'. */
static Node *unstack(IrBuilder *b, Node *v, int ax, int k, const Type *t) {
  return ib_reshape_as(b, ib_narrow(b, v, ax, k, 1), t);
}

/* A body (c, r) -> r over rows of type t when `pair` is false: the
 * final carry of its scan is the last row run (the carry it starts
 * with when there are none). With `pair`, ([prev; cur], r) -> [cur; r]:
 * the scan's trajectory row t holds the carry before row t and row t. */
static Graph *row_graph(ScanAd *s, const Type *t, bool pair) {
  Ctx *c = CTX(s);
  Graph *g = ib_graph_detached(c, pair ? "shift" : "last", s->n->loc);
  Node *in = ir_arg_new(c, g, OP_INPUT, "c", pair ? ad_rows_of(t, 2) : *t,
                        g->loc);
  Node *r = ir_arg_new(c, g, OP_INPUT, "r", *t, g->loc);
  IrBuilder bb = {c, g, s->n->loc};
  if (pair) r = stack2(&bb, unstack(&bb, in, 0, 1, t), r);
  ir_set_rets(c, g, &r, 1);
  return attach(s, g, pair ? "shift" : "last", 0);
}

/* The carries entering m steps from start and tr, the carries after
 * each of them. A dynamic m cannot narrow tr to m-1 rows (a size is a
 * sum of products, never a difference): a scan over tr keeps the
 * carry before each row beside it instead. */
static Node *carries_in(ScanAd *s, IrBuilder *b, Node *start, Node *tr,
                        int64_t m) {
  if (dim_is_static(m)) return ad_scan_carries_in(b, start, tr, m, s->rev);
  Node *in[2] = {stack2(b, start, start), tr};
  Node *sh = ad_scan(b, row_graph(s, &s->ct, true), in, 2, m, s->rev, true);
  Type t = ad_rows_of(&s->ct, m);
  return unstack(b, sh, 1, 0, &t);
}

/* The row of tr [m, P] that a scan in direction `rev` runs last, or
 * seed when m is 0 (a dynamic m: a scan keeps the last row). */
static Node *last_row(ScanAd *s, IrBuilder *b, Node *tr, Node *seed,
                      bool rev) {
  int64_t m = tr->type.dims[0];
  if (dim_is_static(m))
    return ib_reshape_as(b, ib_narrow(b, tr, 0, rev ? 0 : m - 1, 1),
                         &seed->type);
  Node *in[2] = {seed, tr};
  return ad_scan(b, row_graph(s, &seed->type, false), in, 2, m, rev, false);
}

/* ---- the backward body ---- */

static Node *body_arg(Ctx *c, Graph *g, const char *nm, Type t) {
  return ir_arg_new(c, g, OP_INPUT, nm, t, g->loc);
}

/* Clean up g and add it to the module as NAME_<what><len> (len > 0). */
static Graph *attach(ScanAd *s, Graph *g, const char *what, int64_t len) {
  char nm[300];
  if (len > 0)
    snprintf(nm, sizeof nm, "%s_%s%lld", s->body->name, what,
             (long long)len);
  else
    snprintf(nm, sizeof nm, "%s_%s", s->body->name, what);
  g->name = ib_fresh_graph_name(CTX(s), s->gc->mod, nm);
  pass_simplify_graph(CTX(s), g);
  pass_cse_graph(CTX(s), g);
  pass_dce_graph(CTX(s), g);
  return ib_attach(CTX(s), s->gc->mod, g);
}

static bool build_body_rets(ScanAd *s, IrBuilder *bb, Node *dpack,
                            Node **args, Node *dtraj) {
  Node *dc = ad_section(bb, dpack, 0, s->nc, &s->ct);
  if (dtraj) dc = ib_bin(bb, OP_ADD, dc, dtraj);
  Node **t = nodes(s), **gr = nodes(s), **parts = nodes(s);
  int nt = 0;
  t[nt++] = s->body->args[0];
  for (int i = 0; i < s->nx; i++)
    if (s->kind[i] != XS_NONE) t[nt++] = s->body->args[1 + i];
  if (!s->gc->walk(bb, s->gc->mod, s->body, args, false, &dc, t, nt, gr,
                 NULL))
    return false;
  for (int i = -1, k = 0; i < s->nx; i++) {
    if (i >= 0 && s->kind[i] == XS_NONE) continue;
    Node *v = gr[k] ? gr[k] : ib_fill(bb, t[k]->type, 0);
    v = ad_flat(bb, v);
    if (i >= 0 && s->kind[i] == XS_ACCUM)
      v = ib_bin(bb, OP_ADD, ad_section(bb, dpack, s->off[i], s->esz[i],
                                     NULL), v);
    parts[k++] = v;
  }
  Node *ret = ib_concat(bb, parts, nt, 0);
  ir_set_rets(bb->c, bb->g, &ret, 1);
  return true;
}

/* g's arguments (carry, x...) in the forward body's order. */
static Node **step_args(ScanAd *s, Graph *g) {
  Node **args = nodes(s);
  args[0] = body_arg(CTX(s), g, "carry", s->ct);
  for (int i = 0; i < s->nx; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "x%d", i);
    args[1 + i] = body_arg(CTX(s), g, nm, *slice_t(s, i));
  }
  return args;
}

/* BODY_vjp(dpack, carry, x..., [dtraj]) -> dpack' */
static Graph *bwd_body(ScanAd *s, bool has_dtraj) {
  Ctx *c = CTX(s);
  Graph *g = ib_graph_detached(c, "vjp", s->n->loc);
  Node *dpack = body_arg(c, g, "dpack", vec(s->ct.dt, s->P));
  Node **args = step_args(s, g);
  Node *dt = has_dtraj ? body_arg(c, g, "dtraj", s->ct) : NULL;
  IrBuilder bb = {c, g, s->n->loc};
  if (!build_body_rets(s, &bb, dpack, args, dt)) return NULL;
  return attach(s, g, "vjp", 0);
}

/* ---- reversing steps ---- */

/* Reverse m units of len steps (xs: their m*len steps), entering them
 * with the carries cin [m, carry]: one backward scan with body `body`
 * (BODY_vjp when len = 1, else NAME_revLEN) and optional upstream
 * rows dtraj. Updates g (with rows, g->step gets the units' rows). */
static void sweep(ScanAd *s, IrBuilder *b, Graph *body, Node *cin,
                  Node **xs, int64_t m, int64_t len, Node *dtraj,
                  Grads *g) {
  Node **in = nodes(s), **u = units(s, b, xs, m, len);
  int k = 0;
  Node *seed = in[k++] = pack(s, b, len, g, false);
  in[k++] = cin;
  for (int i = 0; i < s->nx; i++) in[k++] = u[i];
  if (dtraj) in[k++] = dtraj;
  Node *sc = ad_scan(b, body, in, k, m, !s->rev, s->rows);
  Node *fin = sc;
  if (s->rows) {
    fin = last_row(s, b, sc, seed, !s->rev);
    unpack_rows(s, b, sc, m, len, g);
  }
  unpack(s, b, fin, len, g);
}

/* Reverse n single steps from start; their carries are recomputed, or
 * read from tr (carries after the first n-1 or all n steps). A long
 * recomputation runs all n steps (one more step instead of a copy of
 * the first n-1 steps' operands). */
static void leaf(ScanAd *s, IrBuilder *b, int64_t n, Node *start,
                 Node **xs, Node *tr, Graph *body, Node *dtraj, Grads *g) {
  if (!tr && !dim_is_static(n))
    tr = advance(s, b, start, xs, n, 1, true);
  else if (!tr && n > 1)
    tr = advance(s, b, start, xs, n > BISECT_LEAF ? n : n - 1, 1, true);
  sweep(s, b, body, carries_in(s, b, start, tr, n), xs, n, 1, dtraj, g);
}

static void segment(ScanAd *s, IrBuilder *b, int64_t n, Node *start,
                    Node **xs, Grads *g);
static Graph *rev_graph(ScanAd *s, int64_t len);

/* Reverse m units of len steps from start with a checkpoint per unit.
 * The checkpoints of a pair come from its first half (a narrow of xs
 * that dies at once); those of more units from all of them (one unit
 * of extra recomputation instead of a copy of most of xs). */
static void group(ScanAd *s, IrBuilder *b, int64_t m, int64_t len,
                  Node *start, Node **xs, Grads *g) {
  if (len == 1) {
    leaf(s, b, m, start, xs, NULL, s->bvjp, NULL, g);
  } else if (m == 1) {
    segment(s, b, len, start, xs, g);
  } else {
    Node *tr = advance(s, b, start, xs, m > 2 ? m : 1, len, true);
    sweep(s, b, rev_graph(s, len), carries_in(s, b, start, tr, m), xs, m,
          len, NULL, g);
  }
}

/* The smallest factor 2 <= p <= BISECT_WAYS of n (p < n), or 0. */
static int64_t small_factor(int64_t n) {
  for (int64_t p = 2; p <= BISECT_WAYS && p < n; p++)
    if (n % p == 0) return p;
  return 0;
}

/* Reverse one unit of len steps (xs: its steps) entering it with start:
 * a backward scan of one step whose body is NAME_revLEN. */
static void unit(ScanAd *s, IrBuilder *b, int64_t len, Node *start,
                 Node **xs, Grads *g) {
  sweep(s, b, rev_graph(s, len), carries_in(s, b, start, NULL, 1), xs, 1,
        len, NULL, g);
}

/* n = 1 + 2h steps: the two halves after the first step, each as one
 * unit, then the first step. Each slice of xs is used once, so no copy
 * outlives the reversal it feeds (at most h+1 rows at a time). */
static void split_odd(ScanAd *s, IrBuilder *b, int64_t n, Node *start,
                      Node **xs, Grads *g) {
  int64_t h = (n - 1) / 2;
  Node *mid = advance(s, b, start, xs, h + 1, 1, false);
  unit(s, b, h, mid, pslices(s, b, xs, h + 1, h), g);
  Node **later = rows_copy(s, g);
  Node *c1 = advance(s, b, start, xs, 1, 1, false);
  unit(s, b, h, c1, pslices(s, b, xs, 1, h), g);
  join_rows(s, b, g, later);
  later = rows_copy(s, g);
  leaf(s, b, 1, start, pslices(s, b, xs, 0, 1), NULL, s->bvjp, NULL, g);
  join_rows(s, b, g, later);
}

/* Reverse n steps from start: p equal parts (p = small_factor(n), 2
 * for even n) reversed by one backward scan over the parts; a length
 * without a small factor is odd: split_odd. */
static void segment(ScanAd *s, IrBuilder *b, int64_t n, Node *start,
                    Node **xs, Grads *g) {
  int64_t p = small_factor(n);
  if (n <= BISECT_LEAF)
    leaf(s, b, n, start, xs, NULL, s->bvjp, NULL, g);
  else if (p)
    group(s, b, p, n / p, start, xs, g);
  else
    split_odd(s, b, n, start, xs, g);
}

/* The largest divisor of L that is at most K (1 <= K < L). */
static int64_t divisor_upto(int64_t L, int64_t K) {
  int64_t best = 1;
  for (int64_t d = 1; d <= L / d; d++) {
    if (L % d) continue;
    if (d <= K && d > best) best = d;
    if (L / d <= K && L / d > best) best = L / d;
  }
  return best;
}

/* ---- segment subgraphs ---- */

/* The subgraphs of segments of len steps (found or added; the pointer
 * is only valid until the next call). */
static SegGraphs *seg_of(ScanAd *s, int64_t len) {
  for (int i = 0; i < s->nseg; i++)
    if (s->seg[i].len == len) return &s->seg[i];
  s->seg = arena_grow(CTX(s)->arena, s->seg, s->nseg, &s->capseg,
                      sizeof *s->seg);
  s->seg[s->nseg] = (SegGraphs){len, NULL, NULL};
  return &s->seg[s->nseg++];
}

/* A detached graph with args ([dpack,] carry, xs of len steps...). */
static Graph *seg_graph_new(ScanAd *s, int64_t len, bool dpack,
                            Node **carry, Node **xs) {
  Ctx *c = CTX(s);
  Graph *g = ib_graph_detached(c, "seg", s->n->loc);
  if (dpack)
    body_arg(c, g, "dpack", vec(s->ct.dt, packed_len(s, len)));
  *carry = body_arg(c, g, "carry", s->ct);
  for (int i = 0; i < s->nx; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "x%d", i);
    xs[i] = body_arg(c, g, nm, ad_rows_of(slice_t(s, i), len));
  }
  return g;
}

/* NAME_fwdLEN(carry, xs...) -> the carry after len steps */
static Graph *fwd_graph(ScanAd *s, int64_t len) {
  if (seg_of(s, len)->fwd) return seg_of(s, len)->fwd;
  Node *carry, **xs = nodes(s);
  Graph *g = seg_graph_new(s, len, false, &carry, xs);
  IrBuilder bb = {CTX(s), g, s->n->loc};
  Node *r = advance(s, &bb, carry, xs, len, 1, false);
  ir_set_rets(bb.c, g, &r, 1);
  Graph *a = attach(s, g, "fwd", len);
  return seg_of(s, len)->fwd = a;
}

/* NAME_revLEN(dpack, carry, xs...) -> dpack': one segment reversed
 * (packed for len steps: the dx rows of dpack are not read). */
static Graph *rev_graph(ScanAd *s, int64_t len) {
  if (seg_of(s, len)->rev) return seg_of(s, len)->rev;
  Node *carry, **xs = nodes(s);
  Graph *g = seg_graph_new(s, len, true, &carry, xs);
  IrBuilder bb = {CTX(s), g, s->n->loc};
  Grads w = {NULL, nodes(s), nodes(s)};
  unpack(s, &bb, g->args[0], len, &w);
  segment(s, &bb, len, carry, xs, &w);
  Node *r = pack(s, &bb, len, &w, true);
  ir_set_rets(bb.c, g, &r, 1);
  Graph *a = attach(s, g, "rev", len);
  return seg_of(s, len)->rev = a;
}

/* ---- bodies with dynamic sizes ----
 *
 * The backward state cannot pack the gradients flat when their sizes
 * are sizes: a section's offset would be one, and a narrow takes static
 * offsets. Each gradient gets a backward scan of its own that carries
 * it alone, each recomputing the step's forward:
 *   carry: a reverse sweep carrying [dc_out; dc_in] (two values of the
 *     carry's type, stacked), body (p, carry, x..., [dtraj]) ->
 *     [d; vjp_carry(carry, x...; d)] with d = p[1] (+ dtraj); its
 *     trajectory's first halves are the gradients reaching each step's
 *     result, its last row's second half the gradient of init;
 *   per-step operand k: a scan over (carry, x..., d) rows whose
 *     trajectory is vjp_xk, the rows of dx_k;
 *   broadcast k: a scan that sums vjp_xk into its carry.
 * checkpoints are not applied (the trajectory is kept whole). */

typedef enum { DYN_CARRY, DYN_ROWS, DYN_SUM } DynKind;

/* (acc, carry, x..., d [, dtraj]) -> the VJP of the body into its
 * argument k + 1 (k = -1: the carry) with d seeding its result's
 * gradient; DYN_CARRY: acc is [dc_out; dc_in] and d = acc[1] (+ dtraj),
 * the result [d; vjp]; DYN_SUM: acc + vjp; DYN_ROWS: vjp. */
static Graph *dyn_body(ScanAd *s, int k, DynKind kind, bool has_dtraj) {
  Ctx *c = CTX(s);
  const Type *tt = k < 0 ? &s->ct : slice_t(s, k);
  Graph *g = ib_graph_detached(c, "vjp", s->n->loc);
  Node *in = body_arg(c, g, "acc", kind == DYN_CARRY ? ad_rows_of(tt, 2)
                                                     : *tt);
  Node **args = step_args(s, g);
  Node *d = kind == DYN_CARRY ? NULL : body_arg(c, g, "d", s->ct);
  Node *dt = has_dtraj ? body_arg(c, g, "dtraj", s->ct) : NULL;
  IrBuilder bb = {c, g, s->n->loc}; /* the arguments first, then nodes */
  if (!d) d = unstack(&bb, in, 0, 1, &s->ct);
  if (dt) d = ib_bin(&bb, OP_ADD, d, dt);
  Node *t = s->body->args[k + 1], *gr = NULL;
  if (!s->gc->walk(&bb, s->gc->mod, s->body, args, false, &d, &t, 1, &gr,
                   NULL))
    return NULL;
  if (!gr) gr = ib_fill(&bb, *tt, 0);
  Node *r = kind == DYN_CARRY ? stack2(&bb, d, gr)
          : kind == DYN_SUM ? ib_bin(&bb, OP_ADD, in, gr) : gr;
  ir_set_rets(c, g, &r, 1);
  return attach(s, g, "vjp", 0);
}

static bool scan_vjp_dyn(ScanAd *s, Node *g, int64_t L, bool traj) {
  IrBuilder *b = &s->gc->b;
  const Node *n = s->n;
  Node *init = GV(s->gc, n->in[0]), **xs = nodes(s), **in = nodes(s);
  for (int i = 0; i < s->nx; i++) xs[i] = GV(s->gc, n->in[1 + i]);
  Node *tr = traj ? GV(s->gc, n) : advance(s, b, init, xs, L, 1, true);
  Node *cin = carries_in(s, b, init, tr, L);
  /* the carry's sweep */
  Node *zero = ib_fill(b, s->ct, 0);
  Graph *cb = dyn_body(s, -1, DYN_CARRY, traj);
  if (!cb) return false;
  int k = 0;
  in[k++] = stack2(b, zero, traj ? zero : g);
  in[k++] = cin;
  for (int i = 0; i < s->nx; i++) in[k++] = xs[i];
  if (traj) in[k++] = g;
  bool rows = false; /* some per-step operand needs the rows */
  for (int i = 0; i < s->nx; i++) rows |= s->kind[i] != XS_NONE;
  Node *sw = ad_scan(b, cb, in, k, L, !s->rev, rows);
  Node *fin = rows ? last_row(s, b, sw, in[0], !s->rev) : sw;
  grad_accum(s->gc, n->in[0], unstack(b, fin, 0, 1, &s->ct));
  Type rt = ad_rows_of(&s->ct, L);
  Node *dout = rows ? unstack(b, sw, 1, 0, &rt) : NULL;
  /* the per-step operands' */
  for (int i = 0; i < s->nx; i++) {
    if (s->kind[i] == XS_NONE) continue;
    bool sum = s->kind[i] == XS_ACCUM;
    Graph *body = dyn_body(s, i, sum ? DYN_SUM : DYN_ROWS, false);
    if (!body) return false;
    k = 0;
    in[k++] = ib_fill(b, *slice_t(s, i), 0);
    in[k++] = cin;
    for (int j = 0; j < s->nx; j++) in[k++] = xs[j];
    in[k++] = dout;
    Node *r = ad_scan(b, body, in, k, L, s->rev, !sum);
    const Node *x = n->in[1 + i];
    if (sum)
      grad_accum(s->gc, x->in[0], ib_reshape_as(b, r, &x->in[0]->type));
    else
      grad_accum(s->gc, x, r);
  }
  return true;
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
  *s = (ScanAd){0};
  s->gc = gc;
  s->n = n;
  s->body = ir_attr_graph(n, ATTR_BODY);
  s->nx = n->nin - 1;
  s->ct = n->in[0]->type;
  s->dyn = !type_is_static(&s->ct);
  for (int i = 0; i < s->nx; i++) s->dyn |= !type_is_static(slice_t(s, i));
  s->nc = s->P = s->dyn ? 0 : type_numel(&s->ct);
  s->rev = ir_attr_bool(n, ATTR_REVERSE, false);
  s->kind = arena_alloc(c->arena, (size_t)(s->nx + 1));
  s->esz = arena_alloc(c->arena, sizeof(int64_t) * (size_t)(s->nx + 1));
  s->off = arena_alloc(c->arena, sizeof(int64_t) * (size_t)(s->nx + 1));
  if (ir_attr_int(n, ATTR_NUM_BCAST, 0) != 0)
    return diag_error(c, n->loc, "internal: scan reached reverse mode "
                      "with broadcast operands (scan_prep did not run)");
  if (s->ct.rank >= RLX_MAX_RANK)
    return diag_error(c, n->loc, "scan: reverse mode needs a carry of "
                      "rank below %d (it keeps carries as rows of a "
                      "[steps, ...carry] tensor)", RLX_MAX_RANK);
  for (int i = 0; i < s->nx; i++) {
    const Node *x = n->in[1 + i];
    s->kind[i] = XS_NONE;
    s->esz[i] = s->dyn ? 0 : type_numel(slice_t(s, i));
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
    s->P += s->esz[i];
  }
  return true;
}

/* Can segments of the per-step operands be scan operands [m, len,
 * slice...]? (Else checkpoints are ignored: plain recomputation.) */
static bool units_fit(ScanAd *s) {
  for (int i = 0; i < s->nx; i++)
    if (slice_t(s, i)->rank + 2 > RLX_MAX_RANK) return false;
  return true;
}

/* Hand the gradients to the operands (the sums go to the value that
 * was expanded). */
static void give_grads(ScanAd *s, Grads *g) {
  IrBuilder *b = &s->gc->b;
  grad_accum(s->gc, s->n->in[0], g->dc);
  for (int i = 0; i < s->nx; i++) {
    const Node *x = s->n->in[1 + i];
    if (s->kind[i] == XS_STEP) grad_accum(s->gc, x, g->step[i]);
    if (s->kind[i] == XS_ACCUM)
      grad_accum(s->gc, x->in[0], ib_reshape_as(b, g->acc[i],
                                                &x->in[0]->type));
  }
}

/* The upstream gradient of a trajectory when only its final row has
 * one (the narrow VJP of scan_prep's final-carry form: zeros and the
 * row): that row, shaped like the carry; else NULL. */
static Node *last_row_only(ScanAd *s, Node *g, int64_t L) {
  if (!dim_is_static(L) || g->op != OP_CONCAT || g->nin != 2 ||
      ir_attr_int(g, ATTR_AXIS, 0))
    return NULL;
  Node *z = g->in[s->rev ? 1 : 0], *row = g->in[s->rev ? 0 : 1];
  if (z->op != OP_CONST || !z->splat || ir_const_get(z, 0) != 0 ||
      z->type.dims[0] != L - 1)
    return NULL;
  return ib_reshape_as(&s->gc->b, row, &s->ct);
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
  if (s.dyn) return scan_vjp_dyn(&s, g, L, traj);
  IrBuilder *b = &gc->b;
  Node *dlast = traj ? last_row_only(&s, g, L) : g;
  Node *dtraj = traj && !dlast ? g : NULL;
  Graph *body = bwd_body(&s, dtraj != NULL);
  if (!body) return false;
  if (!dtraj) s.bvjp = body;
  Grads w = {dlast, nodes(&s), nodes(&s)};
  Node *init = GV(gc, n->in[0]), **xs = nodes(&s);
  for (int i = 0; i < s.nx; i++) xs[i] = GV(gc, n->in[1 + i]);
  if (!traj && K > 0 && K < L && units_fit(&s)) {
    int64_t k = divisor_upto(L, K);
    group(&s, b, k, L / k, init, xs, &w);
  } else {
    leaf(&s, b, L, init, xs, traj ? GV(gc, n) : NULL, body, dtraj, &w);
  }
  give_grads(&s, &w);
  return true;
}
