/* shape_control.c: rules for control flow and user functions
 * (language.md 6.6) and the reverse-mode scan ops (6.9). Every rule
 * checks the full signature of its subgraphs: input count, input types
 * (and names where the spec fixes them), return count and types.
 * A subgraph whose return value is DT_INVALID already has a diagnostic,
 * so the node fails silently.
 *
 * scan(init, b..., xs..., body, length?, num_bcast=NB, ...): body takes
 *   (carry, b..., one slice of each xs) and returns the carry type;
 *   every xs has dim 0 == length (default xs[0]'s dim 0; required when
 *   there are no xs; >= 1); 0 <= checkpoints < length. Result: the
 *   carry type, or [length, ...carry] with save_trajectory.
 * scan_backward[_xs](init, xs..., traj, dtraj, body, length?, fwd?,
 *   checkpoints, k): traj and dtraj are [L, ...carry]; body is the
 *   step VJP: inputs (carry, xs slices..., dcarry), returns
 *   (dcarry, dxs...) typed like (carry, xs slices...); fwd (optional,
 *   required when checkpoints > 0) is the forward step (carry, xs
 *   slices...) -> carry. Result: init's
 *   type (scan_backward) or xs[k]'s type (scan_backward_xs).
 * if(pred, c..., then, else): pred rank 0, bool or real; both branches
 *   take c... and return one value of one type.
 * while(c..., cond, body, max_iterations >= 0): cond takes c... and
 *   returns a rank-0 bool/real; body takes c... and returns c...'s
 *   types. Result: c[0]'s type.
 * custom_fn(a..., fwd, vjp?, jvp?): fwd takes a..., returns one value;
 *   vjp takes a..., %primal_output, %d_output (typed like fwd's result)
 *   and returns one gradient per a, typed like it; jvp takes a...,
 *   %tangent_0..%tangent_{n-1} (typed like a...) and returns one value
 *   typed like fwd's result.
 */
#include "ir/shape_internal.h"

#include <stdio.h>
#include <string.h>

Graph *sh_graph(Ctx *c, const Node *n, AttrId id) {
  Graph *g = ir_attr_graph(n, id);
  if (!g) sh_err(c, n, "attribute '%s' names no graph", attr_name(id));
  return g;
}

bool sh_sub_inputs(Ctx *c, const Node *n, const char *role, const Graph *g,
                   const Type *exp, int nexp, const char *const *names) {
  if (g->nargs != nexp)
    return sh_err(c, n, "%s @%s takes %d input%s, expected %d", role,
                  g->name, g->nargs, g->nargs == 1 ? "" : "s", nexp);
  for (int i = 0; i < nexp; i++) {
    const Node *a = g->args[i];
    const char *nm = a->name ? a->name : "?";
    if (names && names[i] && (!a->name || strcmp(a->name, names[i])))
      return sh_err(c, n, "%s @%s input %d must be named %%%s, got %%%s",
                    role, g->name, i, names[i], nm);
    if (!type_eq(&a->type, &exp[i]))
      return sh_err(c, n, "%s @%s input %d (%%%s) has type %s, expected "
                    "%s", role, g->name, i, nm, TS(&a->type),
                    TS(&exp[i]));
  }
  return true;
}

bool sh_sub_rets(Ctx *c, const Node *n, const char *role, const Graph *g,
                 const Type *exp, int nexp) {
  if (g->nret != nexp)
    return sh_err(c, n, "%s @%s returns %d value%s, expected %d", role,
                  g->name, g->nret, g->nret == 1 ? "" : "s", nexp);
  for (int i = 0; i < nexp; i++) {
    const Type *t = &g->rets[i]->type;
    if (t->dt >= DT_COUNT) return false; /* diagnosed inside g */
    if (exp && !type_eq(t, &exp[i]))
      return sh_err(c, n, "%s @%s return value %d has type %s, expected "
                    "%s", role, g->name, i, TS(t), TS(&exp[i]));
  }
  return true;
}

/* t without its leading dim (a per-step slice). */
static Type slice_of(const Type *t) {
  Type s = {.dt = t->dt, .rank = t->rank - 1};
  for (int i = 1; i < t->rank; i++) s.dims[i - 1] = t->dims[i];
  return s;
}

/* xs operands in[first .. first+m) all have rank >= 1 and dim 0 == *len
 * (*len == -1: take it from the first one). Appends slices to sl. */
static bool per_step(Ctx *c, const Node *n, int first, int m,
                     int64_t *len, Type *sl) {
  for (int i = 0; i < m; i++) {
    const Type *t = IN(n, first + i);
    if (t->rank < 1)
      return sh_err(c, n, "per-step operand %d must have rank >= 1, got "
                    "%s", first + i, TS(t));
    if (*len == -1) *len = t->dims[0]; /* may be dynamic (negative) */
    if (t->dims[0] != *len)
      return sh_err(c, n, "per-step operand %d has %s steps, expected "
                    "%s (length)", first + i, DS(t->dims[0]), DS(*len));
    sl[i] = slice_of(t);
  }
  return true;
}

/* length attribute if set (>= 1), else -1. */
static bool length_attr(Ctx *c, const Node *n, int64_t *len) {
  *len = -1;
  return !ir_attr_present(n, ATTR_LENGTH) ||
         sh_int_attr(c, n, ATTR_LENGTH, 1, RLX_MAX_ELEMS, len);
}

/* [len, ...t] into out. */
static bool stack_of(Ctx *c, const Node *n, int64_t len, const Type *t,
                     Type *out) {
  if (t->rank + 1 > RLX_MAX_RANK)
    return sh_err(c, n, "trajectory rank exceeds %d", RLX_MAX_RANK);
  Type o = {.dt = t->dt, .rank = t->rank + 1, .dims = {len}};
  for (int i = 0; i < t->rank; i++) o.dims[i + 1] = t->dims[i];
  *out = o;
  return true;
}

bool shape_scan(Ctx *c, Node *n) {
  int64_t nb, len, k;
  if (!sh_int_attr(c, n, ATTR_NUM_BCAST, 0, n->nin - 1, &nb)) return false;
  int m = n->nin - 1 - (int)nb;
  if (!length_attr(c, n, &len)) return false;
  if (m == 0 && len < 0)
    return sh_err(c, n, "length is required when there are no per-step "
                  "operands");
  Type *exp = arena_alloc(c->arena, sizeof(Type) * (size_t)n->nin);
  for (int i = 0; i <= nb; i++) exp[i] = *IN(n, i);
  if (!per_step(c, n, 1 + (int)nb, m, &len, exp + 1 + nb)) return false;
  /* a dynamic length (the xs' dim 0) is >= 1 by the entry's check */
  bool dyn = !dim_is_static(len);
  if (!dyn && len < 1)
    return sh_err(c, n, "length must be >= 1, got %lld", (long long)len);
  if (dyn && ir_attr_int(n, ATTR_CHECKPOINTS, 0) > 0 &&
      !sh_static(c, n, 1 + (int)nb, 0, "checkpoints are spread over the "
                 "steps"))
    return false;
  if (!sh_int_attr(c, n, ATTR_CHECKPOINTS, 0, dyn ? 0 : len - 1, &k))
    return false;
  Graph *g = sh_graph(c, n, ATTR_BODY);
  if (!g || !sh_sub_inputs(c, n, "body", g, exp, n->nin, NULL) ||
      !sh_sub_rets(c, n, "body", g, exp, 1))
    return false;
  if (ir_attr_bool(n, ATTR_SAVE_TRAJ, false))
    return stack_of(c, n, len, IN(n, 0), &n->type);
  n->type = *IN(n, 0);
  return true;
}

/* scan_backward and scan_backward_xs: see the header comment. */
bool shape_scan_bwd(Ctx *c, Node *n) {
  int m = n->nin - 3;
  int64_t len, k, ck;
  const Type *carry = IN(n, 0);
  if (!length_attr(c, n, &len)) return false;
  Type traj, *exp = arena_alloc(c->arena, sizeof(Type) * (size_t)(m + 2));
  exp[0] = *carry;
  if (len < 0 && IN(n, n->nin - 2)->rank >= 1)
    len = IN(n, n->nin - 2)->dims[0];
  if (!per_step(c, n, 1, m, &len, exp + 1)) return false;
  if (len < 1)
    return sh_err(c, n, "length must be >= 1, got %lld", (long long)len);
  if (!stack_of(c, n, len, carry, &traj) ||
      !sh_want_type(c, n, n->nin - 2, "trajectory", &traj) ||
      !sh_want_type(c, n, n->nin - 1, "trajectory cotangent", &traj) ||
      !sh_int_attr(c, n, ATTR_CHECKPOINTS, 0, len - 1, &ck))
    return false;
  Graph *f = ir_attr_graph(n, ATTR_FWD);
  if (ck > 0 && !f)
    return sh_err(c, n, "checkpoints=%lld needs fwd (the forward step "
                  "that recomputes the carries between checkpoints)",
                  (long long)ck);
  if (f && (!sh_sub_inputs(c, n, "fwd", f, exp, m + 1, NULL) ||
            !sh_sub_rets(c, n, "fwd", f, exp, 1)))
    return false;
  exp[m + 1] = *carry;
  Graph *g = sh_graph(c, n, ATTR_BODY);
  if (!g || !sh_sub_inputs(c, n, "body", g, exp, m + 2, NULL) ||
      !sh_sub_rets(c, n, "body", g, exp, m + 1))
    return false;
  if (n->op == OP_SCAN_BACKWARD) {
    n->type = *carry;
    return true;
  }
  if (m < 1) return sh_err(c, n, "needs at least one per-step operand");
  if (!sh_int_attr(c, n, ATTR_K, 0, m - 1, &k)) return false;
  n->type = *IN(n, 1 + k);
  return true;
}

bool shape_if(Ctx *c, Node *n) {
  const Type *p = IN(n, 0);
  if (p->rank != 0 || dt_is_complex(p->dt))
    return sh_err(c, n, "pred must be a rank-0 bool or real value, got %s",
                  TS(p));
  int m = n->nin - 1;
  Type *exp = arena_alloc(c->arena, sizeof(Type) * (size_t)(m + 1));
  for (int i = 0; i < m; i++) exp[i] = *IN(n, i + 1);
  Graph *t = sh_graph(c, n, ATTR_THEN), *e = sh_graph(c, n, ATTR_ELSE);
  if (!t || !e || !sh_sub_inputs(c, n, "then", t, exp, m, NULL) ||
      !sh_sub_rets(c, n, "then", t, NULL, 1) ||
      !sh_sub_inputs(c, n, "else", e, exp, m, NULL) ||
      !sh_sub_rets(c, n, "else", e, NULL, 1))
    return false;
  const Type *tt = &t->rets[0]->type, *et = &e->rets[0]->type;
  if (!type_eq(tt, et))
    return sh_err(c, n, "then @%s returns %s but else @%s returns %s",
                  t->name, TS(tt), e->name, TS(et));
  n->type = *tt;
  return true;
}

bool shape_while(Ctx *c, Node *n) {
  int64_t mi;
  if (ir_attr_present(n, ATTR_MAX_ITERS) &&
      !sh_int_attr(c, n, ATTR_MAX_ITERS, 0, RLX_MAX_ELEMS, &mi))
    return false;
  Type *exp = arena_alloc(c->arena, sizeof(Type) * (size_t)n->nin);
  for (int i = 0; i < n->nin; i++) exp[i] = *IN(n, i);
  Graph *p = sh_graph(c, n, ATTR_COND), *b = sh_graph(c, n, ATTR_BODY);
  if (!p || !b || !sh_sub_inputs(c, n, "cond", p, exp, n->nin, NULL) ||
      !sh_sub_rets(c, n, "cond", p, NULL, 1))
    return false;
  const Type *pt = &p->rets[0]->type;
  if (pt->rank != 0 || dt_is_complex(pt->dt))
    return sh_err(c, n, "cond @%s must return a rank-0 bool or real "
                  "value, got %s", p->name, TS(pt));
  if (!sh_sub_inputs(c, n, "body", b, exp, n->nin, NULL) ||
      !sh_sub_rets(c, n, "body", b, exp, n->nin))
    return false;
  n->type = exp[0];
  return true;
}

/* vjp body: a..., %primal_output, %d_output -> one grad per a. */
static bool custom_vjp(Ctx *c, Node *n, const Graph *v, Type *exp,
                       const char **names) {
  int m = n->nin;
  exp[m] = exp[m + 1] = n->type;
  names[m] = "primal_output";
  names[m + 1] = "d_output";
  return sh_sub_inputs(c, n, "vjp", v, exp, m + 2, names) &&
         sh_sub_rets(c, n, "vjp", v, exp, m);
}

/* jvp body: a..., %tangent_0.. -> one value typed like the output. */
static bool custom_jvp(Ctx *c, Node *n, const Graph *j, Type *exp,
                       const char **names) {
  int m = n->nin;
  for (int i = 0; i < m; i++) {
    char buf[32];
    snprintf(buf, sizeof buf, "tangent_%d", i);
    exp[m + i] = exp[i];
    names[m + i] = arena_strdup(c->arena, buf);
  }
  return sh_sub_inputs(c, n, "jvp", j, exp, 2 * m, names) &&
         sh_sub_rets(c, n, "jvp", j, &n->type, 1);
}

bool shape_custom_fn(Ctx *c, Node *n) {
  int m = n->nin;
  size_t cnt = (size_t)(2 * m + 2);
  Type *exp = arena_alloc(c->arena, sizeof(Type) * cnt);
  const char **names = arena_alloc(c->arena, sizeof(char *) * cnt);
  for (int i = 0; i < m; i++) exp[i] = *IN(n, i);
  Graph *f = sh_graph(c, n, ATTR_FWD);
  if (!f || !sh_sub_inputs(c, n, "fwd", f, exp, m, NULL) ||
      !sh_sub_rets(c, n, "fwd", f, NULL, 1))
    return false;
  n->type = f->rets[0]->type;
  Graph *v = ir_attr_graph(n, ATTR_VJP), *j = ir_attr_graph(n, ATTR_JVP);
  if (v && !custom_vjp(c, n, v, exp, names)) return false;
  if (j && !custom_jvp(c, n, j, exp, names)) return false;
  return true;
}
