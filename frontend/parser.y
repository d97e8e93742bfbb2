/* parser.y: pure bison grammar for .rlx (language.md section 3).
 *
 * Thin grammar: every action is one call into ast.c, which builds the
 * syntax tree in the Ctx arena; names, attributes, literals and types
 * are checked later in build*.c. Error recovery skips to the end of the
 * current graph (`}`), or at top level to the next `graph`, so several
 * syntax errors in different graphs are reported in one run.
 *
 * Entry point: fe_parse() (frontend.h), at the end of this file.
 */
%define api.pure full
%define api.prefix {fe_yy}
%define parse.error custom
%locations
%parse-param {FeState *s} {void *scanner}
%lex-param {void *scanner}

%code requires {
#include "frontend/fe_ast.h"
}

%code {
int fe_yylex(FE_YYSTYPE *lval, FE_YYLTYPE *lloc, void *scanner);
static void fe_yyerror(FE_YYLTYPE *l, FeState *s, void *scanner,
                       const char *msg);
#define L(l) ((Loc){(l).first_line, (l).first_column})
#define NONUM ((FeNum){0})
/* Stacks grown past YYINITDEPTH are arena temporaries (in yyparse, s is
 * the parse parameter): out of memory takes the driver's path and an
 * unwind leaks nothing. */
#define YYMALLOC(n) arena_tmp_alloc(s->c->arena, (n))
#define YYFREE(p) arena_tmp_free(s->c->arena, (p))
}

%union {
  const char *str;
  FeNum num;
  FeGraph *graph;
  FeVec *vec;
  FeStmt *stmt;
  FeType *type;
  FeExpr *expr;
  FeVal val;
  FeList *list;
  FeScalar scalar;
  FeDim *dim;
}

%token T_GRAPH "'graph'" T_INPUT "'input'" T_PARAM "'param'"
%token T_RETURN "'return'" T_CONST "'const'" T_TRUE "'true'"
%token T_FALSE "'false'"
%token <str> T_IDENT "identifier" T_VALUE "value" T_GRAPHREF "graph reference"
%token <num> T_INT "integer" T_FLOAT "floating-point number"
%token T_LE "'<='"

%type <graph> graph_head
%type <vec> stmts
%type <stmt> stmt rets
%type <type> type type_head dims
%type <dim> dim dterm dfactor dsym ddyn ddyn_term
%type <expr> expr call call_head arglist operand
%type <val> attrval listval literal
%type <list> list_head items
%type <scalar> scalar

%%
file:
    %empty
  | file graph
  | file error
  ;

graph:
    graph_head '{' stmts '}'  { fe_ast_graph_end(s, $1, $3, L(@4)); }
  | graph_head '{' stmts error '}' { fe_ast_graph_end(s, $1, $3, L(@5)); }
  ;

graph_head:
    T_GRAPH T_IDENT           { $$ = fe_ast_graph(s, $2, L(@2)); }
  ;

stmts:
    %empty                    { $$ = NULL; }
  | stmts stmt                { $$ = fe_ast_stmts(s, $1, $2); }
  ;

stmt:
    T_INPUT T_VALUE ':' type
                    { $$ = fe_ast_arg(s, FT_INPUT, L(@1), $2, L(@2), $4); }
  | T_PARAM T_VALUE ':' type
                    { $$ = fe_ast_arg(s, FT_PARAM, L(@1), $2, L(@2), $4); }
  | T_VALUE '=' expr          { $$ = fe_ast_def(s, $1, L(@1), $3, NULL); }
  | T_VALUE '=' expr ':' type { $$ = fe_ast_def(s, $1, L(@1), $3, $5); }
  | rets
  ;

rets:
    T_RETURN T_VALUE          { $$ = fe_ast_return(s, NULL, L(@1), $2, L(@2)); }
  | rets ',' T_VALUE          { $$ = fe_ast_return(s, $1, L(@1), $3, L(@3)); }
  ;

type:
    type_head ']'
  | dims ']'
  ;

type_head:
    T_IDENT '['               { $$ = fe_ast_type(s, NULL, $1, L(@1)); }
  ;

dims:
    type_head dim             { $$ = fe_ast_dim(s, $1, $2); }
  | dims ',' dim              { $$ = fe_ast_dim(s, $1, $3); }
  ;

/* a size, ?NAME, ?NAME<=N, and the sums and products the printer
 * writes for derived dynamic sizes (docs/dynamic-dims.md) */
dim:
    dterm
  | dim '+' dterm             { $$ = fe_ast_dop(s, FD_ADD, $1, $3, L(@2)); }
  ;

dterm:
    dfactor
  | dterm '*' dfactor         { $$ = fe_ast_dop(s, FD_MUL, $1, $3, L(@2)); }
  ;

dfactor:
    T_INT                     { $$ = fe_ast_dnum(s, $1, L(@1)); }
  | dsym
  ;

dsym:
    '?' T_IDENT               { $$ = fe_ast_dsym(s, $2, NULL, L(@1)); }
  | '?' T_IDENT T_LE T_INT    { $4.loc = L(@4);
                                $$ = fe_ast_dsym(s, $2, &$4, L(@1)); }
  | '?' T_IDENT T_LE T_FLOAT  { $4.loc = L(@4);
                                $$ = fe_ast_dsym(s, $2, &$4, L(@1)); }
  | '?'                       { $$ = fe_ast_dsym(s, NULL, NULL, L(@1)); }
  ;

expr:
    call
  | T_CONST type literal      { $$ = fe_ast_const(s, $2, &$3, L(@1)); }
  ;

call:
    call_head ')'
  | arglist ')'
  ;

call_head:
    T_IDENT '('               { $$ = fe_ast_call(s, NULL, $1, L(@1)); }
  ;

arglist:
    call_head operand
                    { $$ = fe_ast_call_arg(s, $1, $2, NULL, NULL, L(@2)); }
  | call_head T_IDENT '=' attrval
                    { $$ = fe_ast_call_arg(s, $1, NULL, $2, &$4, L(@2)); }
  | arglist ',' operand
                    { $$ = fe_ast_call_arg(s, $1, $3, NULL, NULL, L(@3)); }
  | arglist ',' T_IDENT '=' attrval
                    { $$ = fe_ast_call_arg(s, $1, NULL, $3, &$5, L(@3)); }
  ;

operand:
    T_VALUE                   { $$ = fe_ast_value(s, $1, L(@1)); }
  | T_INT                     { $$ = fe_ast_num(s, $1); }
  | T_FLOAT                   { $$ = fe_ast_num(s, $1); }
  | call
  ;

attrval:
    scalar                    { $$ = fe_ast_val_scalar(&$1); }
  | T_IDENT                   { $$ = fe_ast_val_word(FV_WORD, $1, L(@1)); }
  | T_GRAPHREF                { $$ = fe_ast_val_word(FV_GRAPH, $1, L(@1)); }
  | listval
  ;

literal:
    scalar                    { $$ = fe_ast_val_scalar(&$1); }
  | listval
  ;

listval:
    list_head ']'             { $$ = fe_ast_val_list($1, L(@1)); }
  | items ']'                 { $$ = fe_ast_val_list($1, L(@1)); }
  ;

list_head:
    '['                       { $$ = fe_ast_list(s, NULL, NULL, L(@1)); }
  ;

items:
    list_head scalar          { $$ = fe_ast_list(s, $1, &$2, L(@2)); }
  | items ',' scalar          { $$ = fe_ast_list(s, $1, &$3, L(@3)); }
  | list_head ddyn            { FeScalar d = fe_ast_scalar_dim($2);
                                $$ = fe_ast_list(s, $1, &d, L(@2)); }
  | items ',' ddyn            { FeScalar d = fe_ast_scalar_dim($3);
                                $$ = fe_ast_list(s, $1, &d, L(@3)); }
  ;

/* a dynamic size in a shape attribute: it starts with a symbol (the
 * printer writes `?b*2+3`, never `2*?b`, so a list item that starts
 * with a number is a number) */
ddyn:
    ddyn_term
  | ddyn '+' dterm            { $$ = fe_ast_dop(s, FD_ADD, $1, $3, L(@2)); }
  ;

ddyn_term:
    dsym
  | ddyn_term '*' dfactor     { $$ = fe_ast_dop(s, FD_MUL, $1, $3, L(@2)); }
  ;

scalar:
    T_INT                     { $$ = fe_ast_scalar(FS_NUM, $1, L(@1)); }
  | T_FLOAT                   { $$ = fe_ast_scalar(FS_NUM, $1, L(@1)); }
  | T_TRUE                    { $$ = fe_ast_scalar(FS_TRUE, NONUM, L(@1)); }
  | T_FALSE                   { $$ = fe_ast_scalar(FS_FALSE, NONUM, L(@1)); }
  ;
%%

/* "unexpected X; expected A, B or C" at the offending token. */
static int yyreport_syntax_error(const yypcontext_t *ctx, FeState *s,
                                 void *scanner) {
  (void)scanner;
  s->syntax_errors++;
  if (s->fatal) return 0; /* the scanner already said why it stopped */
  yysymbol_kind_t tok = yypcontext_token(ctx);
  Loc loc = L(*yypcontext_location(ctx));
  char what[128];
  if (tok == YYSYMBOL_YYEOF)
    snprintf(what, sizeof what, "end of input");
  else if (tok == YYSYMBOL_T_IDENT || tok == YYSYMBOL_T_VALUE ||
           tok == YYSYMBOL_T_GRAPHREF || tok == YYSYMBOL_T_INT ||
           tok == YYSYMBOL_T_FLOAT)
    snprintf(what, sizeof what, "%s '%.40s'", yysymbol_name(tok),
             s->last_text ? s->last_text : "");
  else
    snprintf(what, sizeof what, "%s", yysymbol_name(tok));
  yysymbol_kind_t exp[6];
  int n = yypcontext_expected_tokens(ctx, exp, 6);
  char list[512] = "";
  size_t k = 0;
  for (int i = 0; i < n && n <= 5 && k < sizeof list; i++)
    k += (size_t)snprintf(list + k, sizeof list - k, "%s%s",
                          i == 0 ? "; expected " : i == n - 1 ? " or " : ", ",
                          yysymbol_name(exp[i]));
  diag_error(s->c, loc, "syntax error: unexpected %s%s", what, list);
  return 0;
}

static void fe_yyerror(FE_YYLTYPE *l, FeState *s, void *scanner,
                       const char *msg) {
  (void)scanner;
  s->syntax_errors++;
  diag_error(s->c, L(*l), "%s", msg); /* only "memory exhausted" */
}

Module *fe_parse(Ctx *c) {
  FeState s = {.c = c};
  void *scanner;
  if (fe_scan_init(&s, &scanner)) return NULL;
  int errors_before = c->nerrors;
  int rc = fe_yyparse(&s, scanner);
  fe_scan_free(scanner);
  if (rc != 0 || s.syntax_errors || c->nerrors > errors_before)
    return NULL;
  return fe_build(&s);
}
