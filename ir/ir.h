/* ir.h: the rlxc intermediate representation.
 *
 * A Module holds Graphs; a Graph is a list of Nodes in topological
 * order (every operand is defined earlier in the same list). Each Node
 * is one SSA value: an op applied to operand Nodes, with attributes and
 * a Type inferred by the op's shape rule (ir/shape_*.c).
 *
 * Ownership: every IR object, string and array lives in the Ctx's
 * Arena and is freed once by ctx_free(). Nothing here is freed alone
 * (scratch tables are arena temporaries, released early). Allocation
 * never returns NULL: out of memory goes to the Ctx's hook, which
 * unwinds to the driver (ctx_oom), so no caller checks.
 *
 * Error handling: user mistakes are reported with diag_error() and
 * collected on the Ctx; a node whose type could not be inferred gets
 * dtype DT_INVALID, and rules skip nodes with invalid operands so one
 * mistake yields one diagnostic. RLX_ASSERT guards internal invariants
 * only: no user input may reach a failing one.
 */
#ifndef RLX_IR_H
#define RLX_IR_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RLX_MAX_RANK 8
/* Largest element count / dimension we accept (keeps byte sizes in
 * int64 with room for arithmetic). */
#define RLX_MAX_ELEMS ((int64_t)1 << 40)

/* ---- internal invariants ---- */
void rlx_assert_fail(const char *file, int line, const char *expr);
#define RLX_ASSERT(e) ((e) ? (void)0 : rlx_assert_fail(__FILE__, __LINE__, #e))

/* ---- dtypes (ir/dtypes.def) ---- */
enum { DTF_FLOAT = 1, DTF_INT = 2, DTF_BOOL = 4, DTF_COMPLEX = 8 };
typedef enum {
#define DTYPE(id, name, ctype, bytes, flags) DT_##id,
#include "ir/dtypes.def"
#undef DTYPE
  DT_COUNT,
  DT_INVALID = DT_COUNT /* type of a node whose inference failed */
} DType;

const char *dt_name(DType dt);
int dt_size(DType dt);              /* bytes per element */
bool dt_is_float(DType dt);         /* f32 f64 f16 bf16 */
bool dt_is_int(DType dt);           /* i8 u8 i32 i64 */
bool dt_is_complex(DType dt);
DType dt_lookup(const char *name);  /* DT_INVALID if unknown */

/* ---- types ---- */
typedef struct {
  DType dt;
  int rank;
  int64_t dims[RLX_MAX_RANK];
} Type;

/* product of dims (1 for rank 0); t must be static */
int64_t type_numel(const Type *t);
int64_t type_bytes(const Type *t);
bool type_eq(const Type *a, const Type *b);
bool type_same_dims(const Type *a, const Type *b); /* dtype aside */
/* Attribute axis a of a rank-`rank` value, negative counted from the end. */
static inline int ir_norm_axis(int64_t a, int rank) {
  return (int)(a < 0 ? a + rank : a);
}
Type type_make(DType dt, int rank, const int64_t *dims);
/* "f32[2, 3]" into buf (at least 128 bytes); returns buf. Dynamic
 * sizes print as "?batch", "?a+?b", "2*?n" (without bounds). */
char *type_str(const Type *t, char *buf, size_t n);
/* The same with each symbol's bound ("?n<=8"): argument declarations. */
char *type_str_ex(const Type *t, bool bounds, char *buf, size_t n);

/* ---- dynamic dimensions (ir/dim.c, docs/dynamic-dims.md) ---- */
/* A dim >= 0 is a static size; a dynamic one is DIM_DYN_BASE - k, k the
 * index of an interned size expression (a sum of products of `?NAME`
 * symbols with positive coefficients) in the Ctx's DimTable. Equal
 * expressions are equal numbers. Passes and code generation never see
 * a dynamic dim: the pipeline stops before them (passes/pipeline.c). */
#define DIM_DYN_BASE (-((int64_t)1 << 48))
static inline bool dim_is_static(int64_t d) { return d >= 0; }
bool type_is_static(const Type *t);
int type_first_dynamic(const Type *t); /* axis, or -1 when static */
typedef struct DimTable DimTable;
typedef enum {
  DIM_OK,
  DIM_BOUND_CLASH, /* ?NAME given two different bounds */
  DIM_TOO_COMPLEX, /* over 8 terms, or a product of over 8 symbols */
  DIM_OVERFLOW,    /* a coefficient or size over RLX_MAX_ELEMS */
  DIM_INEXACT,     /* a division that does not come out exact */
} DimStatus;
struct Arena;
DimTable *dim_table_new(struct Arena *a);
/* The table type_str and dim_str print with (ctx_new sets it). */
void dim_table_use(DimTable *t);
DimTable *dim_table_current(void);
bool dim_valid(int64_t d); /* static in range, or a known expression */
/* "?batch", "?a+?b", "2*?n*?m+3"; bounds: with "<=N" after a symbol. */
char *dim_str(int64_t d, char *buf, size_t n);
char *dim_str_ex(int64_t d, bool bounds, char *buf, size_t n);
/* The form of a shape attribute's entry: every term's symbols before
 * its coefficient ("?b*2+3"), so that it starts with a symbol. */
char *dim_str_attr(int64_t d, char *buf, size_t n);
/* The largest value d can take (static: d itself), or -1 on overflow.
 * A symbol without a bound counts as DIM_NOMINAL there: a stand-in for
 * heuristics (loop grains, empty checks), never a size to lay memory
 * out for -- code generation asks dim_is_bounded first. */
#define DIM_NOMINAL ((int64_t)1 << 20)
int64_t dim_bound(int64_t d);
bool dim_is_bounded(int64_t d);       /* every symbol of d has a bound */
bool type_is_bounded(const Type *t);  /* every dim of t is bounded */
/* The bytes of t with every dim at its bound (dim_bound), -1 on
 * overflow. */
int64_t type_bytes_bound(const Type *t);
/* The symbols of the current table, numbered 0..dim_nsyms()-1 in the
 * order the front end met them: name and bound (0: none). */
int dim_nsyms(void);
const char *dim_sym_name_at(int k);
int64_t dim_sym_bound_at(int k);
/* d as a sum of dim_nterms(d) terms: term i is its coefficient (the
 * return value) times the product of syms[0..*nsyms) (symbol numbers,
 * repeated for powers; at most RLX_MAX_RANK). A static d is one term
 * without symbols. */
int dim_nterms(int64_t d);
/* The symbols of d's terms, in order, repeated as they occur (at most
 * DIM_MAX_SYMS); 0 for a static d. */
enum { DIM_MAX_SYMS = 8 * RLX_MAX_RANK };
int dim_syms(int64_t d, int *out);
int64_t dim_term(int64_t d, int i, int *syms, int *nsyms);

/* ---- source locations and diagnostics (ir/diag.c) ---- */
typedef struct {
  int line, col; /* 1-based; line 0 = no location */
} Loc;

typedef struct Diag {
  Loc loc;
  const char *kind; /* "error", "note" (static strings) */
  char *msg;
  struct Diag *next;
} Diag;

/* ---- arena (ir/arena.c) ---- */
/* Out of memory: every allocation below either succeeds or calls the
 * hook set with arena_on_oom, which must not return (the driver's hook
 * longjmps; ctx_new installs ctx_oom). Without a hook it is an internal
 * error. So callers never test for NULL. */
typedef struct Arena Arena;
Arena *arena_new(void);                     /* NULL when out of memory */
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t n);      /* zeroed, 16-byte aligned */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
size_t arena_used(const Arena *a);
/* Growable arena arrays: return an array (old, or a doubled copy) with
 * room for item n; *cap is updated. Building n items is O(n). */
void *arena_grow(Arena *a, void *old, int n, int *cap, size_t elem);
/* Temporaries: owned by the arena like any allocation (arena_free frees
 * those still live, so an out-of-memory unwind leaks none) but released
 * early, in any order, with arena_tmp_free (scratch tables of the
 * verifier and printer, the scanner's buffers). tmp_alloc zeroes;
 * tmp_realloc keeps the old bytes (the rest is not zeroed) and
 * allocates when p is NULL. */
void *arena_tmp_alloc(Arena *a, size_t n);
void *arena_tmp_realloc(Arena *a, void *p, size_t n);
void arena_tmp_free(Arena *a, void *p);     /* p may be NULL */
void arena_on_oom(Arena *a, void (*hook)(void *arg), void *arg);
/* Memory obtained outside the arena (a libc stream) ran out: the same
 * path as a failed allocation. Does not return when a hook is set. */
void arena_oom(Arena *a);
/* Fault injection (tests, docs/testing.md): the nth allocation from now
 * (1-based; arena_alloc, tmp_alloc and tmp_realloc all count, whether or
 * not they need a new block) fails as if malloc had returned NULL. 0
 * turns it off. arena_count: allocations counted so far. */
void arena_fail_at(Arena *a, long n);
long arena_count(const Arena *a);
/* arena_trace (tests): write to f, per allocation counted, one line
 * naming its call stack; tests/tools/check_oom.py fails each site. */
void arena_trace(Arena *a, FILE *f);

/* ---- attributes (ir/attrs.def) ---- */
typedef enum { AK_INT, AK_INTS, AK_FLOAT, AK_BOOL, AK_DTYPE, AK_ENUM,
               AK_GRAPH } AttrKind;
typedef enum {
#define ATTR(id, name, kind, words) ATTR_##id,
#include "ir/attrs.def"
#undef ATTR
  ATTR_COUNT
} AttrId;

struct Graph;
typedef struct {
  AttrId id;
  AttrKind kind;
  Loc loc;
  union {
    int64_t i;     /* AK_INT */
    double f;      /* AK_FLOAT */
    bool b;        /* AK_BOOL */
    DType dt;      /* AK_DTYPE */
    const char *word; /* AK_ENUM: one of the attribute's words */
    struct Graph *graph; /* AK_GRAPH: resolved subgraph */
    struct { int n; int64_t *v; } ints; /* AK_INTS */
  } u;
} Attr;

const char *attr_name(AttrId id);
AttrKind attr_kind(AttrId id);
AttrId attr_lookup(const char *name);   /* ATTR_COUNT if unknown */
bool attr_word_ok(AttrId id, const char *word); /* enum word allowed? */

/* ---- ops (ir/ops.def) ---- */
/* Composite flags include the bits they imply: OPF_UNARY, OPF_BINARY
 * and OPF_COMPARE are all OPF_ELEMENTWISE; compares are OPF_NO_GRAD. */
enum {
  OPF_PSEUDO = 1 << 0,     /* input/param/const: not callable */
  OPF_ELEMENTWISE = 1 << 4,
  OPF_NO_GRAD = 1 << 6,    /* output carries no gradient */
  OPF_UNARY = 1 << 1 | OPF_ELEMENTWISE,  /* one operand */
  OPF_BINARY = 1 << 2 | OPF_ELEMENTWISE, /* two operands, broadcast */
  OPF_COMPARE = 1 << 3 | OPF_ELEMENTWISE | OPF_NO_GRAD, /* -> bool */
  OPF_REDUCE = 1 << 5,     /* reduce_* over axes */
  OPF_CONTROL = 1 << 7,    /* takes subgraphs */
  OPF_FUSED = 1 << 8,      /* expanded into primitives before AD */
  OPF_BACKWARD = 1 << 9,   /* closed-form backward op (6.9) */
  /* Compiled for f32 and f64 only (a runtime kernel of each): operand
   * 0 (the op's float operand) must be f32 or f64. Verification rejects
   * other dtypes, code generation relies on it, --list-ops shows it. */
  OPF_F32_F64 = 1 << 10,
  /* Elementwise ops also defined on integer (i8 u8 i32 i64) / bool
   * operands: the shape rules accept and codegen compiles exactly
   * these (with where, cast and the compares, which take any). */
  OPF_INT = 1 << 11,
  OPF_BOOL = 1 << 12,
};

typedef enum {
#define OP(id, name, nmin, nmax, flags, rule, vjp, jvp, emit, attrs, math) OP_##id,
#include "ir/ops.def"
#undef OP
  OP_COUNT
} Op;

/* Per-op attribute declaration, parsed from the ops.def spec string. */
typedef struct {
  AttrId id;
  bool required;
  bool has_default;
  Attr def;        /* the default value when has_default */
} OpAttrSpec;

typedef struct {
  const char *name;
  int min_in, max_in; /* max_in < 0: unbounded */
  unsigned flags;
  const char *attr_spec;
  const char *math;
  int nattrs;
  const OpAttrSpec *attrs; /* filled by ops_init() */
} OpInfo;

const OpInfo *op_info(Op op);          /* ops_init() must have run */
const char *op_name(Op op);
Op op_lookup(const char *name);        /* OP_COUNT if unknown/pseudo */
bool op_has(Op op, unsigned flags);    /* all bits of flags set */
/* The dtypes of operand 0 that the op compiles for, as a set of
 * (1u << DT_x) bits, from its flags (OPF_F32_F64); DTS_ANY when the
 * table restricts nothing (the op's shape rule still checks dtypes). */
#define DTS_ANY ((1u << DT_COUNT) - 1)
unsigned op_dtypes(Op op);
bool op_dtype_ok(Op op, DType dt);     /* dt is in op_dtypes(op) */
/* "f32, f64": the dtypes of a set, in dtypes.def order, into buf. */
char *dts_str(unsigned set, char *buf, size_t n);
/* The op's declaration of attribute id, or NULL if it does not take it */
const OpAttrSpec *op_attr_spec(Op op, AttrId id);
void ops_init(void); /* idempotent; parses attr specs (static storage) */

/* ---- nodes, graphs, modules (ir/graph.c) ---- */
typedef struct Node Node;
struct Node {
  int id;             /* unique in its graph: creation order */
  Op op;
  Type type;          /* inferred; dt == DT_INVALID after an error */
  const char *name;   /* user name without '%', or NULL (printed %N) */
  int nin;
  Node **in;
  int nattr;
  Attr *attrs;        /* only attributes that were set, any order */
  /* OP_CONST: type.numel elements (or one if splat) of dtype storage */
  void *data;
  bool splat;
  bool literal;       /* const written as a bare literal operand */
  int arg_index;      /* OP_INPUT/OP_PARAM: position among graph args */
  Loc loc;
  void *aux;          /* scratch for the pass that owns the graph now */
  int64_t aux_i;
};

typedef struct Graph {
  const char *name;
  Loc loc;
  int nnodes, cap_nodes;
  Node **nodes;       /* topological order; args first as declared */
  int nargs, cap_args;
  Node **args;        /* OP_INPUT / OP_PARAM nodes, declaration order */
  int nret;
  Node **rets;
  int next_id;
  Arena *arena;       /* the Ctx arena it lives in (printer scratch) */
  /* NULL, or per return: the index of the argument whose buffer the
   * return value overwrites (in-place storage: ENTRY_train's updated
   * params and optimizer state), -1 for an ordinary output. Code
   * generation passes that argument's pointer as the output and
   * computes the value there when nothing reads the argument later,
   * else copies it at the end (docs/codegen.md). */
  int *ret_into;
} Graph;

typedef struct Module {
  int ngraphs, cap_graphs;
  Graph **graphs;     /* declaration order: subgraphs before users */
} Module;

/* ---- compilation context (ir/ctx.c) ---- */
typedef struct CtxCleanup CtxCleanup;
typedef struct TimeReport TimeReport;
typedef struct Ctx {
  Arena *arena;
  const char *file;        /* for diagnostics */
  const char *src;         /* source text (may be NULL) */
  size_t src_len;
  Diag *diags, **diags_tail;
  int nerrors;
  int max_errors;          /* default 20 */
  FILE *diag_out;          /* NULL: collect only (unit tests) */
  /* Out of memory (the arena's hook, ctx_oom): the cleanups run, then
   * longjmp(*oom_jump, 1). Set by the driver; NULL: internal error. */
  jmp_buf *oom_jump;
  CtxCleanup *cleanups, *spare; /* registered (newest first), reusable */
  TimeReport *times;       /* --time-passes (ir/timing.c), else NULL */
  bool color;              /* ANSI colours in diag_out (GCC's scheme) */
  DimTable *dims;          /* dynamic size expressions (ir/dim.c) */
  DimTable *dims_prev;     /* the table current before this Ctx */
} Ctx;

/* Dynamic dimensions of c (ir/dim.c): the symbol ?name (bound 0: none;
 * a bound given twice must agree), and exact arithmetic on dims, each
 * static or dynamic; *out is set on DIM_OK only. */
DimStatus dim_sym(Ctx *c, const char *name, int64_t bound, int64_t *out);
int64_t dim_sym_bound(Ctx *c, const char *name);
DimStatus dim_add(Ctx *c, int64_t a, int64_t b, int64_t *out);
DimStatus dim_mul(Ctx *c, int64_t a, int64_t b, int64_t *out);
DimStatus dim_div(Ctx *c, int64_t a, int64_t b, int64_t *out);
/* The element count of t as a dim. */
DimStatus type_numel_dim(Ctx *c, const Type *t, int64_t *out);

/* ---- --time-passes (ir/timing.c) ---- */
enum { TIME_MAX_PHASES = 64 };
typedef struct {
  const char *what;
  double wall, cpu, rss; /* seconds, seconds, peak RSS MiB after it */
  size_t mem;            /* arena bytes allocated during the phase */
} TimePhase;
struct TimeReport {
  TimePhase phase[TIME_MAX_PHASES];
  int n;
};
typedef struct {
  double wall, cpu;
  size_t mem;
} TimeMark;
/* No-ops unless c->times is set; `what` must outlive the report. */
void time_begin(Ctx *c, TimeMark *m);
void time_end(Ctx *c, const TimeMark *m, const char *what);
void time_print(const Ctx *c, FILE *f);

/* NULL when out of memory. Owns the arena; its out-of-memory hook is
 * ctx_oom. ctx_free runs the cleanups still registered, then frees. */
Ctx *ctx_new(const char *file, const char *src, size_t len);
void ctx_free(Ctx *c);
/* Resources outside the arena (LLVM objects, staged temporary files,
 * an open stream) whose owner may be skipped by an out-of-memory
 * longjmp: register fn(arg, fatal) when acquiring them, unregister (the
 * same fn and arg) when releasing them normally. ctx_unwind runs and
 * drops every registered cleanup, newest first; fatal: the process is
 * about to exit after an LLVM fatal error, so only what outlives it
 * (files on disk) needs undoing. */
void ctx_defer(Ctx *c, void (*fn)(void *arg, bool fatal), void *arg);
void ctx_undefer(Ctx *c, void (*fn)(void *arg, bool fatal), void *arg);
void ctx_unwind(Ctx *c, bool fatal);
/* The arena's out-of-memory hook (arg: the Ctx): ctx_unwind, then the
 * jump to *oom_jump; without one, an internal error. */
void ctx_oom(void *ctx);
/* Report an error at loc (ir/diag.c); printed GCC-style with source line and caret
 * when diag_out is set. Returns false so rules can `return diag_...`. */
bool diag_error(Ctx *c, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool diag_note(Ctx *c, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "did you mean" (ir/suggest.c; suggest_dtype: ir/ops.c): feed the
 * candidates for a misspelled word; the hint is "; did you mean 'x'?"
 * for the closest one within a third of the word's length in edits (at
 * least 1), else "". */
typedef struct {
  const char *word;
  char best[64]; /* a copy: candidates may be temporaries */
  int dist;
} Suggest;
void suggest_init(Suggest *s, const char *word);
void suggest_add(Suggest *s, const char *cand);
const char *suggest_hint(const Suggest *s, const char *prefix, char *buf,
                         size_t n);
const char *suggest_dtype(const char *word, char *buf, size_t n);
void suggest_attr_words(Suggest *s, AttrId id); /* an enum's words */
bool diag_too_many(const Ctx *c); /* error cap reached: stop early */

Module *ir_module_new(Ctx *c);
Graph *ir_graph_new(Ctx *c, Module *m, const char *name, Loc loc);
Graph *ir_graph_find(const Module *m, const char *name);
void ir_module_remove_graph(Module *m, Graph *g);
/* Append a node to g. Operands are copied; attributes start empty.
 * The type is left DT_INVALID: call shape_infer() after setting attrs. */
Node *ir_node_new(Ctx *c, Graph *g, Op op, Node *const *in, int nin,
                  Loc loc);
Node *ir_arg_new(Ctx *c, Graph *g, Op op /* INPUT|PARAM */,
                 const char *name, Type t, Loc loc);
/* A constant; data (type numel elements, or 1 if splat) is copied. */
Node *ir_const_new(Ctx *c, Graph *g, Type t, const void *data,
                   bool splat, Loc loc);
void ir_set_rets(Ctx *c, Graph *g, Node *const *rets, int n);

/* Attributes: setters replace an existing value. */
Attr *ir_attr_set(Ctx *c, Node *n, AttrId id, AttrKind kind);
void ir_attr_set_int(Ctx *c, Node *n, AttrId id, int64_t v);
void ir_attr_set_float(Ctx *c, Node *n, AttrId id, double v);
void ir_attr_set_bool(Ctx *c, Node *n, AttrId id, bool v);
void ir_attr_set_dtype(Ctx *c, Node *n, AttrId id, DType v);
void ir_attr_set_word(Ctx *c, Node *n, AttrId id, const char *w);
void ir_attr_set_graph(Ctx *c, Node *n, AttrId id, Graph *g);
void ir_attr_set_ints(Ctx *c, Node *n, AttrId id, const int64_t *v, int k);
/* Getters: the set value, else the op's default, else NULL / fallback. */
const Attr *ir_attr(const Node *n, AttrId id);
bool ir_attr_present(const Node *n, AttrId id); /* set explicitly */
int64_t ir_attr_int(const Node *n, AttrId id, int64_t fallback);
double ir_attr_float(const Node *n, AttrId id, double fallback);
bool ir_attr_bool(const Node *n, AttrId id, bool fallback);
Graph *ir_attr_graph(const Node *n, AttrId id);
const char *ir_attr_word(const Node *n, AttrId id);
/* ints list: count via *k; NULL if absent with no default */
const int64_t *ir_attr_ints(const Node *n, AttrId id, int *k);
void ir_attr_copy_all(Ctx *c, Node *dst, const Node *src);

/* Scalar constant value of a const node (element i, as double). */
double ir_const_get(const Node *n, int64_t i);
/* Bytes of a const node's data (one element when splat). */
size_t ir_const_bytes(const Node *n);

/* ---- node equality (ir/node_eq.c) ---- */
/* Same function of the operands: op, operand count, type, attributes
 * (defaults included), constant bytes; operands are not compared. */
bool ir_node_same_local(const Node *a, const Node *b);
/* Has n or one of its operands a dynamic type? */
bool node_dynamic(const Node *n);
/* Has n or one of its operands a size with a symbol without a bound? */
bool node_unbounded(const Node *n);
/* A hash consistent with ir_node_same_local. */
uint64_t ir_node_hash_local(const Node *n);

/* ---- shape and dtype inference (ir/shape_*.c) ---- */
/* Infer n->type from operands and attributes; on a user error emit a
 * diagnostic naming the op and return false (type DT_INVALID). Nodes
 * with an invalid operand fail silently. */
bool shape_infer(Ctx *c, Node *n);

/* ---- printing (ir/print.c) ---- */
void ir_print_module(FILE *f, const Module *m);
void ir_print_graph(FILE *f, const Graph *g);
/* Shortest decimal that reads back to the same double / float. */
void ir_fmt_double(char *buf, size_t n, double v);
void ir_fmt_float(char *buf, size_t n, float v);

/* ---- verification (ir/verify.c) ---- */
/* Arity, attribute legality, dtypes and shapes (re-running inference),
 * single definition, topological order / acyclicity, subgraph refs.
 * Reports diagnostics; returns true if the module is well formed. */
bool ir_verify(Ctx *c, const Module *m);

#endif
