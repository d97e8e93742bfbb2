/* shape_internal.h: private interface of the shape/dtype inference
 * rules (ir/shape*.c).
 *
 * Every ops.def row names a rule; the X-macro below declares
 * `bool shape_RULE(Ctx *, Node *)` for each, so a rule that no file
 * defines is a link error. A rule reads n->in[] and n's attributes,
 * writes n->type and returns true, or reports one diagnostic through
 * sh_err() (message "OPNAME: ...", at the node's location) and returns
 * false. The dispatcher (shape.c) has already checked: no operand is
 * DT_INVALID, the operand count is within the op's bounds, required
 * attributes are present and every set attribute has its declared kind.
 * After a rule succeeds the dispatcher checks operand 0's dtype against
 * the op table (op_dtypes, OPF_F32_F64) and the result's element count
 * (RLX_MAX_ELEMS). Rules never assert on user input.
 *
 * Layers: shape.c (the dispatcher and the rule table) on top; the
 * rules, one file per op family (shape_elem, shape_reduce, shape_move,
 * shape_linalg, shape_nn, shape_attention, shape_conv, shape_moe,
 * shape_quant, shape_complex, shape_log_mel, shape_random, shape_fused,
 * shape_control; a backward op's rule sits with its forward op's);
 * below them shape_check.c, the checks declared here (the subgraph
 * checks at the end are shape_control.c's own). A rule file calls only
 * shape_check.c.
 */
#ifndef RLX_SHAPE_INTERNAL_H
#define RLX_SHAPE_INTERNAL_H

#include "ir/ir.h"

#define OP(id, name, nmin, nmax, flags, rule, vjp, jvp, emit, attrs, math) \
  bool shape_##rule(Ctx *c, Node *n);
#include "ir/ops.def"
#undef OP

/* Operand i's type. */
#define IN(n, i) (&(n)->in[(i)]->type)

/* Diagnostic "OPNAME: message" at n's location; returns false. */
bool sh_err(Ctx *c, const Node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Type as text, returned by value (valid to the end of the full
 * expression in C11, so TS(a) and TS(b) can share one printf). */
typedef struct { char s[160]; } TypeStr;
TypeStr sh_ts(const Type *t);
#define TS(t) (sh_ts(t).s)
/* A dim as text ("784", "?batch", "?a+?b"), by value like TS. */
typedef struct { char s[96]; } DimStr;
DimStr sh_ds(int64_t d);
#define DS(d) (sh_ds(d).s)

/* ---- dynamic dimensions (ir/dim.c) ---- */
/* Axis `axis` of operand i must be static: "OP: axis K of operand I is
 * dynamic (?n); OP needs a static size there (why)". Rules call it
 * before computing with a size they cannot carry symbolically. */
bool sh_static(Ctx *c, const Node *n, int i, int axis, const char *why);
/* Every axis of operand i static (the first dynamic one diagnosed). */
bool sh_static_type(Ctx *c, const Node *n, int i, const char *why);

/* ---- dtype classes ---- */
/* Require operand i (described as `what`) to be f32/f64/f16/bf16, and
 * operand 0 of an op whose dtypes the op table restricts (op_dtypes)
 * to be one of those ("x must have a dtype the op compiles for (f32,
 * f64), got f16"). */
bool sh_want_float(Ctx *c, const Node *n, int i, const char *what);
/* Float or c64. */
bool sh_want_float_or_complex(Ctx *c, const Node *n, int i,
                              const char *what);
/* Index operand: i32, i64 or f32 holding integral values. */
bool sh_want_index(Ctx *c, const Node *n, int i, const char *what);
/* Operands i and j share a dtype ("add: dtype mismatch: f32 vs f64"). */
bool sh_same_dtype(Ctx *c, const Node *n, int i, int j);
/* Operand i has exactly type t (names both in the message). */
bool sh_want_type(Ctx *c, const Node *n, int i, const char *what,
                  const Type *t);
bool sh_want_rank(Ctx *c, const Node *n, int i, const char *what,
                  int rank);
bool sh_is_index_dt(DType dt);

/* ---- dims and axes ---- */
/* Normalize axis (negative counts from the end) for rank; diagnoses
 * "OP: axis A out of range for rank R" (`what` names the attribute). */
bool sh_axis(Ctx *c, const Node *n, int64_t axis, int rank, int *out);
/* Overflow-checked arithmetic on dims; false (and a diagnostic) when
 * the result leaves [0, RLX_MAX_ELEMS]. Dynamic dims go through
 * dim_mul / dim_add (a symbolic product or sum). sh_div: exact
 * division (reshape's inferred size), else "size A is not a multiple
 * of B". */
bool sh_mul(Ctx *c, const Node *n, int64_t a, int64_t b, int64_t *out);
bool sh_add(Ctx *c, const Node *n, int64_t a, int64_t b, int64_t *out);
bool sh_div(Ctx *c, const Node *n, int64_t a, int64_t b, int64_t *out);
/* NumPy broadcast of a and b into out (rank max, dtype left as a's).
 * A dynamic size broadcasts against 1 or the same size only. */
bool sh_bcast(Ctx *c, const Node *n, const Type *a, const Type *b,
              Type *out);
/* A float attribute used rounded to f32: it must stay finite, and
 * non-zero unless it is 0 ("mult 1e+39 is out of f32 range (rounds to
 * inf)" + why), else code generation computes with inf or 0. */
bool sh_f32_attr(Ctx *c, const Node *n, AttrId id, const char *why);
/* An int attribute, checked to lie in [lo, hi]; hi = RLX_MAX_ELEMS is
 * spelled 2^40 in the diagnostic. */
bool sh_int_attr(Ctx *c, const Node *n, AttrId id, int64_t lo, int64_t hi,
                 int64_t *out);
/* A list attribute with exactly k entries, each in [lo, hi]; a missing
 * optional attribute yields def (k entries) if def is non-NULL. */
bool sh_ints_attr(Ctx *c, const Node *n, AttrId id, int k, int64_t lo,
                  int64_t hi, const int64_t *def, int64_t *out);

/* ---- conv2d / pool2d geometry (shape_check.c) ---- */
/* conv2d output [N, Cout, Ho, Wo] for x/w types; w dtype unchecked
 * (conv2d, q_conv2d, the conv2d backward ops). */
bool sh_conv2d_out(Ctx *c, const Node *n, const Type *x, const Type *w,
                   Type *out);
/* pool output type for an NCHW x under n's kernel/stride/padding. */
bool sh_pool2d_out(Ctx *c, const Node *n, const Type *x, Type *out);

/* ---- subgraphs (control flow) ---- */
/* Graph attribute id of n; NULL with a diagnostic if unusable. */
Graph *sh_graph(Ctx *c, const Node *n, AttrId id);
/* Graph g (attribute `role`) takes exactly nexp inputs of types exp[];
 * names[i] (may be NULL entries / NULL array) are required arg names. */
bool sh_sub_inputs(Ctx *c, const Node *n, const char *role, const Graph *g,
                   const Type *exp, int nexp, const char *const *names);
/* g returns exactly nexp values; exp NULL: only the count is checked.
 * A DT_INVALID return (already diagnosed in g) fails silently. */
bool sh_sub_rets(Ctx *c, const Node *n, const char *role, const Graph *g,
                 const Type *exp, int nexp);

#endif
