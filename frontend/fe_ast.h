/* fe_ast.h: the front end's private syntax tree and parser state.
 *
 * The bison grammar (parser.y) builds this tree through the fe_ast_*
 * constructors (ast.c), one call per grammar action; build.c and its
 * helpers (build_expr.c, literal.c) then turn it into IR. Every object
 * lives in the Ctx arena. Lists grow by doubling (amortized linear).
 *
 * Invariants: a FeNum carries its value already converted by the lexer
 * (integers that overflow int64 were diagnosed and hold 0); locations
 * are 1-based line:col counting bytes. Nested calls are FeExpr trees
 * whose depth the lexer bounds by FE_MAX_NESTING, so the recursive
 * walks in build_expr.c cannot overflow the stack.
 */
#ifndef RLX_FE_AST_H
#define RLX_FE_AST_H

#include "frontend/frontend.h"

#define FE_MAX_NESTING 256

typedef struct {
  bool is_float;   /* float literal (incl. inf / nan) */
  int64_t i;       /* integer literals */
  double f;        /* float literals (and integers, converted) */
  const char *text;
  Loc loc;
} FeNum;

/* A growable array of pointers (arena-backed). */
typedef struct {
  int n, cap;
  void **v;
} FeVec;

/* ---- literals and attribute values ---- */
/* FS_DIM: a dynamic size in a list (`shape=[?b, 10]`), only for shape
 * attributes (docs/dynamic-dims.md). */
typedef enum { FS_NUM, FS_TRUE, FS_FALSE, FS_DIM } FeScalarKind;
struct FeDim;
typedef struct {
  FeScalarKind kind;
  FeNum num;       /* FS_NUM; loc is valid for every kind */
  struct FeDim *dim; /* FS_DIM */
} FeScalar;

typedef struct {
  int n, cap;
  FeScalar *v;
  Loc loc;         /* the '[' */
} FeList;

typedef enum { FV_SCALAR, FV_WORD, FV_GRAPH, FV_LIST } FeValKind;
typedef struct {
  FeValKind kind;
  FeScalar s;      /* FV_SCALAR */
  const char *word; /* FV_WORD (identifier), FV_GRAPH (name without @) */
  FeList *list;    /* FV_LIST */
  Loc loc;
} FeVal;

/* ---- types ---- */
/* One dimension as written: a size, `?NAME` (`?NAME<=N`), a bare `?`
 * (an error, diagnosed when the type is built), or a sum / product of
 * those (the printer's form of derived dynamic sizes, `?a+?b`). */
typedef enum { FD_INT, FD_SYM, FD_BARE, FD_ADD, FD_MUL } FeDimKind;
typedef struct FeDim {
  FeDimKind kind;
  FeNum num;           /* FD_INT: the size; FD_SYM with has_bound: N */
  const char *name;    /* FD_SYM */
  bool has_bound;
  struct FeDim *l, *r; /* FD_ADD, FD_MUL */
  Loc loc;
} FeDim;

typedef struct {
  const char *dtype;
  Loc loc;         /* the dtype identifier */
  int n, cap;
  FeDim **dims;
} FeType;

/* ---- expressions ---- */
typedef enum { FX_VALUE, FX_NUM, FX_CALL, FX_CONST } FeExprKind;
typedef struct FeExpr FeExpr;

typedef struct {
  const char *attr; /* NULL: an operand */
  FeExpr *operand;
  const FeVal *val; /* attributes only */
  Loc loc;          /* operand start or attribute name */
} FeArg;

struct FeExpr {
  FeExprKind kind;
  Loc loc;
  const char *name;   /* FX_VALUE: value name without %; FX_CALL: op */
  FeNum num;          /* FX_NUM */
  int nargs, cap;     /* FX_CALL */
  FeArg *args;
  FeType *type;       /* FX_CONST */
  const FeVal *lit;   /* FX_CONST: FV_SCALAR or FV_LIST */
};

/* ---- statements and graphs ---- */
typedef enum { FT_INPUT, FT_PARAM, FT_DEF, FT_RETURN } FeStmtKind;
typedef struct {
  const char *name;
  Loc loc;
} FeRef;

typedef struct {
  FeStmtKind kind;
  Loc loc;            /* first token */
  FeRef target;       /* input/param/def name */
  FeType *type;       /* input/param type, or def annotation (or NULL) */
  FeExpr *expr;       /* FT_DEF */
  int nrets, cap;     /* FT_RETURN */
  FeRef *rets;
} FeStmt;

typedef struct {
  const char *name;
  Loc loc;            /* the name */
  Loc end;            /* the closing brace */
  FeVec stmts;        /* FeStmt* */
} FeGraph;

/* Parser/lexer shared state (yyextra of the scanner, parse-param of
 * the parser). */
typedef struct FeState {
  Ctx *c;
  FeVec graphs;       /* FeGraph* */
  int nesting;        /* open parentheses */
  bool fatal;         /* stop scanning: return end of input */
  int syntax_errors;
  const char *last_text; /* text of the last token (for messages) */
  int line, col;      /* scanner position of the next byte */
} FeState;

/* ast.c: constructors used by the grammar actions */
void fe_vec_push(Ctx *c, FeVec *v, void *p);
FeGraph *fe_ast_graph(FeState *s, const char *name, Loc loc);
void fe_ast_graph_end(FeState *s, FeGraph *g, FeVec *stmts, Loc end);
FeVec *fe_ast_stmts(FeState *s, FeVec *list, FeStmt *st);
FeStmt *fe_ast_arg(FeState *s, FeStmtKind k, Loc loc, const char *name,
                   Loc nloc, FeType *t);
FeStmt *fe_ast_def(FeState *s, const char *name, Loc nloc, FeExpr *e,
                   FeType *annot);
FeStmt *fe_ast_return(FeState *s, FeStmt *st, Loc loc, const char *name,
                      Loc nloc);
FeType *fe_ast_type(FeState *s, FeType *t, const char *dtype, Loc loc);
FeType *fe_ast_dim(FeState *s, FeType *t, FeDim *d);
FeDim *fe_ast_dnum(FeState *s, FeNum num, Loc loc);
FeDim *fe_ast_dsym(FeState *s, const char *name, const FeNum *bound,
                   Loc loc);
FeDim *fe_ast_dop(FeState *s, FeDimKind k, FeDim *l, FeDim *r, Loc loc);
FeExpr *fe_ast_value(FeState *s, const char *name, Loc loc);
FeExpr *fe_ast_num(FeState *s, FeNum num);
FeExpr *fe_ast_call(FeState *s, FeExpr *call, const char *op, Loc loc);
FeExpr *fe_ast_call_arg(FeState *s, FeExpr *call, FeExpr *operand,
                        const char *attr, const FeVal *val, Loc loc);
FeExpr *fe_ast_const(FeState *s, FeType *t, const FeVal *lit, Loc loc);
FeScalar fe_ast_scalar(FeScalarKind k, FeNum num, Loc loc);
FeScalar fe_ast_scalar_dim(struct FeDim *d);
FeVal fe_ast_val_scalar(const FeScalar *sc);
FeVal fe_ast_val_word(FeValKind k, const char *w, Loc loc);
FeVal fe_ast_val_list(FeList *l, Loc loc);
FeList *fe_ast_list(FeState *s, FeList *l, const FeScalar *item, Loc loc);

/* lexer.l */
typedef void *yyscan_t;
int fe_scan_init(FeState *s, yyscan_t *scanner);
void fe_scan_free(yyscan_t scanner);

/* names.c: string -> pointer hash map in the arena */
typedef struct {
  int n, cap;
  const char **keys;
  void **vals;
  Loc *locs;
} FeMap;
void *fe_map_get(const FeMap *m, const char *key, bool *found, Loc *loc);
void fe_map_put(Ctx *c, FeMap *m, const char *key, void *val, Loc loc);

/* build.c / build_expr.c / literal.c */
Module *fe_build(FeState *s);

typedef struct {
  Ctx *c;
  Module *m;
  Graph *g;
  FeMap values;       /* value name -> Node* (NULL: poisoned) */
  FeMap *graphs;      /* graph name -> Graph* (built so far) */
  const FeMap *all_graphs; /* every graph name in the file -> FeGraph* */
} FeBuild;

Node *fe_build_expr(FeBuild *b, const FeExpr *e);
/* The node bound to %name; NULL after a diagnostic or if poisoned. */
Node *fe_resolve(FeBuild *b, const char *name, Loc loc);
bool fe_build_type(Ctx *c, const FeType *t, Type *out);
/* One written dimension as a dim (static, or dynamic: ir/dim.c). */
bool fe_build_dim(Ctx *c, const struct FeDim *d, int64_t *out);
/* Store scalar sc converted to dt at dst (dtype storage). Reports a
 * diagnostic and returns false when it does not fit. */
bool fe_store_scalar(Ctx *c, const FeScalar *sc, DType dt, void *dst);
Node *fe_build_const(FeBuild *b, const FeExpr *e);

#endif
