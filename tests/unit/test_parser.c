/* test_parser.c: CUnit tests of fe_parse (parser.y + build*.c +
 * literal.c): every statement form, nested calls, literal operand
 * dtypes, const literals of every dtype (f16/bf16 bit patterns, c64
 * pairs, bool), attributes of every kind, subgraph references, each
 * error path with its line:col and message, several errors per run,
 * syntax-error recovery, and a 100,000-node graph.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"

static Ctx *ctx;

/* Parse src; the Ctx lives until the next parse. */
static Module *parse(const char *src) {
  ctx_free(ctx);
  ctx = ctx_new("t.rlx", src, strlen(src));
  return fe_parse(ctx);
}

/* Parse and require success. */
static Graph *ok(const char *src) {
  Module *m = parse(src);
  if (!m || ctx->nerrors)
    for (Diag *d = ctx->diags; d; d = d->next)
      fprintf(stderr, "\n  unexpected: %d:%d: %s", d->loc.line, d->loc.col,
              d->msg);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_EQUAL_FATAL(ctx->nerrors, 0);
  return m->graphs[m->ngraphs - 1];
}

/* Some diagnostic of the last parse is at line:col and contains sub. */
static bool has_diag(int line, int col, const char *sub) {
  for (Diag *d = ctx->diags; d; d = d->next)
    if (d->loc.line == line && d->loc.col == col && strstr(d->msg, sub))
      return true;
  fprintf(stderr, "\n  missing %d:%d: %s; got:", line, col, sub);
  for (Diag *d = ctx->diags; d; d = d->next)
    fprintf(stderr, "\n    %d:%d: %s", d->loc.line, d->loc.col, d->msg);
  return false;
}

#define EXPECT(src, line, col, sub)                                     \
  do {                                                                  \
    parse(src);                                                         \
    CU_ASSERT(ctx->nerrors > 0);                                        \
    CU_ASSERT(has_diag(line, col, sub));                                \
  } while (0)

static Node *node(Graph *g, const char *name) {
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i]->name && !strcmp(g->nodes[i]->name, name))
      return g->nodes[i];
  CU_FAIL("node not found");
  return NULL;
}

static void test_statements(void) {
  Graph *g = ok("graph sq {\n input %x: f32[4]\n %y = mul(%x, %x)\n"
                " return %y\n}\n"
                "graph m {\n  input %a: f32[2, 3]\n  param %w: f64[]\n"
                "  input %b: i32[0]\n  %c = neg(%a) : f32[2, 3]\n"
                "  %d = const f32[2] [1, 2]\n  return %c, %d, %w\n}");
  CU_ASSERT_STRING_EQUAL(g->name, "m");
  CU_ASSERT_EQUAL(g->nargs, 3);
  CU_ASSERT_EQUAL(g->args[0]->op, OP_INPUT);
  CU_ASSERT_EQUAL(g->args[1]->op, OP_PARAM);
  CU_ASSERT_EQUAL(g->args[1]->type.dt, DT_F64);
  CU_ASSERT_EQUAL(g->args[1]->type.rank, 0);
  CU_ASSERT_EQUAL(g->args[2]->type.dims[0], 0);
  CU_ASSERT_EQUAL(g->args[2]->arg_index, 2);
  CU_ASSERT_EQUAL(g->nret, 3);
  CU_ASSERT_PTR_EQUAL(g->rets[2], g->args[1]);
  Node *c = node(g, "c");
  CU_ASSERT_EQUAL(c->op, OP_NEG);
  CU_ASSERT_EQUAL(c->loc.line, 10);
  CU_ASSERT_EQUAL(c->loc.col, 8);
  CU_ASSERT_EQUAL(ctx->diags, NULL);
}

static void test_args_first(void) {
  /* an input declared after a computation still comes first in nodes,
   * but its name is only visible from its statement on */
  Graph *g = ok("graph g { input %a: f32[2] %b = neg(%a) input %c: f32[2]"
                " %d = add(%b, %c) return %d }");
  CU_ASSERT_EQUAL(g->nodes[0]->op, OP_INPUT);
  CU_ASSERT_EQUAL(g->nodes[1]->op, OP_INPUT);
  CU_ASSERT_STRING_EQUAL(g->nodes[1]->name, "c");
  EXPECT("graph g { input %a: f32[2] %b = add(%a, %c) input %c: f32[2]"
         " return %b }", 1, 41, "undefined value '%c'");
}

static void test_nested(void) {
  Graph *g = ok("graph g { input %x: f32[3]\n"
                "  %y = add(mul(%x, neg(%x)), exp(%x)) return %y }");
  /* args, neg, mul, exp, add: nested calls unnamed, operands first */
  CU_ASSERT_EQUAL(g->nnodes, 5);
  CU_ASSERT_EQUAL(g->nodes[1]->op, OP_NEG);
  CU_ASSERT_EQUAL(g->nodes[2]->op, OP_MUL);
  CU_ASSERT_EQUAL(g->nodes[3]->op, OP_EXP);
  CU_ASSERT_PTR_NULL(g->nodes[1]->name);
  CU_ASSERT_PTR_NULL(g->nodes[2]->name);
  CU_ASSERT_STRING_EQUAL(g->nodes[4]->name, "y");
  CU_ASSERT_PTR_EQUAL(g->nodes[4]->in[0], g->nodes[2]);
  CU_ASSERT_EQUAL(g->nodes[2]->loc.col, 12);
}

/* The literal operand k of node name. */
static Node *lit(Graph *g, const char *name, int k) {
  Node *n = node(g, name);
  Node *l = n->in[k];
  CU_ASSERT_EQUAL(l->op, OP_CONST);
  CU_ASSERT(l->literal);
  CU_ASSERT_EQUAL(l->type.rank, 0);
  return l;
}

static void test_literal_dtypes(void) {
  Graph *g = ok(
      "graph g { input %d: f64[2] input %i: i32[2] input %b: bool[2]\n"
      " input %h: f16[2] input %c: bool[2]\n"
      " %a1 = add(%d, 2) %a2 = sub(3, %i) %a3 = eq(%b, 1)\n"
      " %a4 = mul(2, 3) %a5 = where(%c, %i, -7) %a6 = where(%c, 1.5, %d)\n"
      " %a7 = where(%c, 1, 2) %a8 = pow(%h, 0.5) %a9 = gt(%i, 4)\n"
      " return %a1 }");
  Node *l = lit(g, "a1", 1);
  CU_ASSERT_EQUAL(l->type.dt, DT_F64);
  CU_ASSERT_EQUAL(*(double *)l->data, 2.0);
  l = lit(g, "a2", 0);
  CU_ASSERT_EQUAL(l->type.dt, DT_I32);
  CU_ASSERT_EQUAL(*(int32_t *)l->data, 3);
  CU_ASSERT_EQUAL(lit(g, "a3", 1)->type.dt, DT_BOOL);
  CU_ASSERT_EQUAL(lit(g, "a4", 0)->type.dt, DT_F32);
  CU_ASSERT_EQUAL(lit(g, "a4", 1)->type.dt, DT_F32);
  l = lit(g, "a5", 2);
  CU_ASSERT_EQUAL(l->type.dt, DT_I32);
  CU_ASSERT_EQUAL(*(int32_t *)l->data, -7);
  CU_ASSERT_EQUAL(lit(g, "a6", 1)->type.dt, DT_F64);
  CU_ASSERT_EQUAL(lit(g, "a7", 1)->type.dt, DT_F32);
  l = lit(g, "a8", 1);
  CU_ASSERT_EQUAL(l->type.dt, DT_F16);
  CU_ASSERT_EQUAL(*(uint16_t *)l->data, 0x3800);
  CU_ASSERT_EQUAL(node(g, "a9")->type.dt, DT_BOOL);
  /* f32 when nothing decides: softmax_cross_entropy labels */
  g = ok("graph g { input %l: f32[2, 3]\n"
         " %i = const i32[2] [0, 1]\n"
         " %s = softmax_cross_entropy(%l, %i)\n"
         " %t = add(%s, 1e-3) return %t }");
  l = lit(g, "t", 1);
  CU_ASSERT_EQUAL(*(float *)l->data, 1e-3f);
}

static void test_literal_errors(void) {
  EXPECT("graph g { input %i: i32[2]\n %y = add(%i, 1.5) return %y }",
         2, 15, "floating-point literal 1.5 where i32 is required");
  EXPECT("graph g { input %i: i8[2]\n %y = add(%i, 300) return %y }",
         2, 15, "literal 300 is out of range for i8");
  EXPECT("graph g { input %i: u8[2]\n %y = add(-1, %i) return %y }",
         2, 11, "out of range for u8");
  EXPECT("graph g { input %b: bool[2]\n %y = eq(%b, 2) return %y }",
         2, 14, "out of range for bool");
  EXPECT("graph g { input %h: f16[2]\n %y = add(%h, 70000) return %y }",
         2, 15, "out of range for f16");
  EXPECT("graph g { input %x: f32[2]\n %y = add(%x, 1e39) return %y }",
         2, 15, "out of range for f32");
  EXPECT("graph g { input %i: i64[2]\n %y = add(%i, nan) return %y }",
         2, 15, "where i64 is required");
}

static void test_const(void) {
  Graph *g = ok(
      "graph g {\n"
      " %a = const f32[2, 2] [1, 2.5, -3, 4e0]\n"
      " %b = const f32[64, 10] 0.0\n"
      " %c = const c64[2] [1, 2, 3, -4]\n"
      " %d = const bool[4] [true, false, 0, 1]\n"
      " %e = const f16[3] [1, 65504, -0.0]\n"
      " %f = const bf16[2] [1, -2.5]\n"
      " %h = const i64[2] [9223372036854775807, -9223372036854775808]\n"
      " %i = const i8[2] [-128, 127]\n"
      " %j = const f64[] 0.1\n"
      " %k = const f32[0] []\n"
      " %l = const f32[3] [inf, -inf, nan]\n"
      " %m = const f16[2] [1e-8, 6e-8]\n"
      " return %a }");
  Node *n = node(g, "a");
  float *fa = n->data;
  CU_ASSERT(!n->splat && !n->literal);
  CU_ASSERT(fa[0] == 1 && fa[1] == 2.5f && fa[2] == -3 && fa[3] == 4);
  n = node(g, "b");
  CU_ASSERT(n->splat);
  CU_ASSERT_EQUAL(n->type.dims[1], 10);
  float *fc = node(g, "c")->data;
  CU_ASSERT(fc[0] == 1 && fc[1] == 2 && fc[2] == 3 && fc[3] == -4);
  uint8_t *bd = node(g, "d")->data;
  CU_ASSERT(bd[0] == 1 && bd[1] == 0 && bd[2] == 0 && bd[3] == 1);
  uint16_t *he = node(g, "e")->data;
  CU_ASSERT(he[0] == 0x3c00 && he[1] == 0x7bff && he[2] == 0x8000);
  uint16_t *hf = node(g, "f")->data;
  CU_ASSERT(hf[0] == 0x3f80 && hf[1] == 0xc020);
  int64_t *ih = node(g, "h")->data;
  CU_ASSERT(ih[0] == INT64_MAX && ih[1] == INT64_MIN);
  int8_t *ii = node(g, "i")->data;
  CU_ASSERT(ii[0] == -128 && ii[1] == 127);
  CU_ASSERT_EQUAL(*(double *)node(g, "j")->data, 0.1);
  CU_ASSERT_EQUAL(node(g, "k")->type.dims[0], 0);
  float *fl = node(g, "l")->data;
  CU_ASSERT(isinf(fl[0]) && fl[0] > 0 && isinf(fl[1]) && isnan(fl[2]));
  /* f16 subnormals: 1e-8 rounds to 0, 6e-8 to the smallest (2^-24) */
  uint16_t *hm = node(g, "m")->data;
  CU_ASSERT(hm[0] == 0 && hm[1] == 1);
}

static void test_const_errors(void) {
  EXPECT("graph g {\n %a = const f32[3] [1, 2] return %a }", 2, 20,
         "const f32[3] needs 3 elements, found 2");
  EXPECT("graph g {\n %a = const c64[2] [1, 2, 3] return %a }", 2, 20,
         "needs 4 numbers (re, im pairs), found 3");
  EXPECT("graph g {\n %a = const i32[2] [1, 2.0] return %a }", 2, 24,
         "floating-point literal 2.0 where i32 is required");
  EXPECT("graph g {\n %a = const f32[2] true return %a }", 2, 20,
         "'true' is only valid for bool");
  EXPECT("graph g {\n %a = const bool[1] [2] return %a }", 2, 22,
         "out of range for bool");
  EXPECT("graph g {\n %a = const i32[] 2147483648 return %a }", 2, 19,
         "out of range for i32");
  EXPECT("graph g {\n %a = const f16[] 65520 return %a }", 2, 19,
         "out of range for f16");
}

static void test_types(void) {
  EXPECT("graph g {\n input %x: f31[2] return %x }", 2, 12,
         "unknown dtype 'f31'");
  EXPECT("graph g {\n input %x: f32[4, ?] return %x }", 2, 19,
         "a dynamic dimension needs a name");
  EXPECT("graph g {\n input %x: f32[4, -3] return %x }", 2, 19,
         "negative dimension -3");
  EXPECT("graph g {\n input %x: f32[1,2,3,4,5,6,7,8,9] return %x }", 2,
         32, "rank 9 exceeds the maximum rank 8");
  EXPECT("graph g {\n input %x: f32[2199023255552] return %x }", 2, 16,
         "exceeds the limit");
  EXPECT("graph g {\n input %x: f32[1048576, 2097152] return %x }", 2,
         12, "more than 2^40 elements");
  /* exactly 2^40 elements is accepted */
  ok("graph g { input %x: u8[1048576, 1048576] return %x }");
  EXPECT("graph g {\n input %x: f32[3]\n %y = neg(%x) : f32[2]\n"
         " return %y }", 3, 17,
         "annotation f32[2] does not match inferred type f32[3]");
  EXPECT("graph g {\n input %x: f32[3]\n %y = neg(%x) : i32[3]\n"
         " return %y }", 3, 17, "annotation i32[3] does not match");
}

static void test_attributes(void) {
  Graph *g = ok(
      "graph f { input %a: f32[2, 3] return %a }\n"
      "graph g { input %x: f32[2, 3]\n"
      " %s = softmax(%x, axis=-1)\n"
      " %o = const f32[3] 1.0\n"
      " %l = layer_norm(%x, %o, %o, eps=1)\n"
      " %r = reduce_sum(%x, axes=[0, 1], keep_dims=true)\n"
      " %e = reduce_sum(%x, axes=[])\n"
      " %c = cast(%x, to=i32)\n"
      " %u = custom_fn(%x, fwd=@f)\n"
      " %q = fake_quantize(%x, ste=clipped, bits=4)\n"
      " return %s }");
  CU_ASSERT_EQUAL(ir_attr_int(node(g, "s"), ATTR_AXIS, 0), -1);
  CU_ASSERT_EQUAL(ir_attr_float(node(g, "l"), ATTR_EPS, 0), 1.0);
  CU_ASSERT(ir_attr_bool(node(g, "r"), ATTR_KEEP_DIMS, false));
  int k;
  const int64_t *ax = ir_attr_ints(node(g, "r"), ATTR_AXES, &k);
  CU_ASSERT(k == 2 && ax[0] == 0 && ax[1] == 1);
  CU_ASSERT_PTR_NOT_NULL(ir_attr_ints(node(g, "e"), ATTR_AXES, &k));
  CU_ASSERT_EQUAL(k, 0);
  CU_ASSERT_EQUAL(ir_attr(node(g, "c"), ATTR_TO)->u.dt, DT_I32);
  CU_ASSERT_EQUAL(node(g, "c")->type.dt, DT_I32);
  CU_ASSERT_STRING_EQUAL(ir_attr_graph(node(g, "u"), ATTR_FWD)->name, "f");
  CU_ASSERT_STRING_EQUAL(ir_attr_word(node(g, "q"), ATTR_STE), "clipped");
  const Attr *a = ir_attr(node(g, "q"), ATTR_BITS);
  CU_ASSERT(a->u.i == 4 && a->loc.line == 10 && a->loc.col == 38);
}

static void test_attribute_errors(void) {
  const char *h = "graph g {\n input %x: f32[2]\n";
  char src[512];
#define ATTR_ERR(stmt, col, sub)                                        \
  do {                                                                  \
    snprintf(src, sizeof src, "%s %%y = %s return %%y }", h, stmt);     \
    EXPECT(src, 3, col, sub);                                           \
  } while (0)
  ATTR_ERR("add(%x, %x, axis=1)", 19, "op 'add' has no attribute 'axis'");
  ATTR_ERR("softmax(%x, axiz=1)", 19, "op 'softmax' has no attribute");
  ATTR_ERR("softmax(%x, axis=1, axis=0)", 27, "duplicate attribute 'axis'");
  ATTR_ERR("softmax(%x, axis=1.0)", 24,
           "attribute 'axis' expects an integer, found a floating");
  ATTR_ERR("softmax(%x, axis=[1])", 24, "expects an integer, found a list");
  ATTR_ERR("layer_norm(%x, %x, %x, eps=true)", 34,
           "attribute 'eps' expects a number, found a boolean");
  ATTR_ERR("cumsum(%x, exclusive=1)", 28, "expects true or false");
  ATTR_ERR("cast(%x, to=1)", 19, "expects a dtype name, found an integer");
  ATTR_ERR("cast(%x, to=f8)", 19, "unknown dtype 'f8'");
  ATTR_ERR("fft(%x, norm=weird)", 20,
           "'weird' is not a valid value for attribute 'norm'");
  ATTR_ERR("fft(%x, norm=@g)", 20, "expects a word, found a graph");
  ATTR_ERR("custom_fn(%x, fwd=f)", 25,
           "expects a graph reference '@name', found a word");
  ATTR_ERR("custom_fn(%x, fwd=@nope)", 25, "unknown graph '@nope'");
  ATTR_ERR("custom_fn(%x, fwd=@g)", 25,
           "graph '@g' cannot reference itself");
  ATTR_ERR("reduce_sum(%x, axes=0)", 27, "expects a list of integers");
  ATTR_ERR("reduce_sum(%x, axes=[0, 1.5])", 31, "takes integers only");
  ATTR_ERR("softmax(axis=0, %x)", 23, "operand after attributes");
  ATTR_ERR("foo(%x, axis=1)", 7, "unknown op 'foo'");
  ATTR_ERR("neg(%x, %zz)", 15, "undefined value '%zz'");
  /* a later graph */
  EXPECT("graph g { input %x: f32[2]\n %y = custom_fn(%x, fwd=@h)\n"
         " return %y }\ngraph h { input %x: f32[2] return %x }", 2, 25,
         "graph '@h' must be declared before it is used");
}

static void test_names(void) {
  EXPECT("graph g {\n input %x: f32[2]\n input %x: f32[3]\n return %x }",
         3, 8, "redefinition of '%x'");
  CU_ASSERT(has_diag(2, 8, "previous definition of '%x' is here"));
  EXPECT("graph g {\n input %x: f32[2]\n %x = neg(%x)\n return %x }",
         3, 2, "redefinition of '%x'");
  EXPECT("graph g {\n input %x: f32[2]\n return %nope }", 3, 9,
         "undefined value '%nope'");
  EXPECT("graph g { input %x: f32[2] return %x }\n"
         "graph g { input %y: f32[2] return %y }", 2, 7,
         "redefinition of graph 'g'");
  CU_ASSERT(has_diag(1, 7, "previous definition of graph 'g'"));
  /* a call of a graph with errors is not checked again */
  parse("graph f { input %x: f32[2] }\n"
        "graph g { input %x: f32[2] %y = custom_fn(%x, fwd=@f) return %y }");
  CU_ASSERT_EQUAL(ctx->nerrors, 1);
  /* value names are per graph */
  ok("graph a { input %x: f32[2] return %x }\n"
     "graph b { input %x: f32[2] return %x }");
  /* one mistake, one diagnostic: a failed value poisons its users */
  parse("graph g { input %x: f32[2]\n %y = foo(%x)\n %z = neg(%y)\n"
        " %w = add(%z, %y) return %w }");
  CU_ASSERT_EQUAL(ctx->nerrors, 1);
}

static void test_returns(void) {
  EXPECT("graph g {\n input %x: f32[2]\n}", 3, 1,
         "graph 'g' has no 'return' statement");
  EXPECT("graph g {\n input %x: f32[2]\n return %x\n return %x\n}", 4, 2,
         "duplicate 'return'");
  EXPECT("graph g {\n input %x: f32[2]\n return %x\n %y = neg(%x)\n}", 4,
         2, "statement after 'return'");
  EXPECT("graph g {\n input %x: f32[2]\n return\n}", 4, 1,
         "syntax error: unexpected '}'; expected value");
}

static void test_syntax_errors(void) {
  EXPECT("graph g {\n input %x: f32[4]\n %y = mul(%x %x)\n return %y }",
         3, 14, "unexpected value '%x'; expected ',' or ')'");
  CU_ASSERT_PTR_NULL(fe_parse(ctx));
  EXPECT("graph g {\n input %x f32[4] }", 2, 11, "expected ':'");
  EXPECT("graph g {\n %y = 1.5 }", 2, 7, "unexpected floating-point");
  EXPECT("graph g { input %x: f32[4] %y = neg(", 1, 37, "end of input");
  EXPECT("x graph g { }", 1, 1, "unexpected identifier 'x'");
  /* recovery: one error per broken graph */
  parse("graph a {\n %y = (\n}\ngraph b { input %x: f32[2] }\n"
        "graph c {\n input %x f32[2]\n return %x }");
  CU_ASSERT_EQUAL(ctx->nerrors, 2);
  CU_ASSERT(has_diag(2, 7, "unexpected '('"));
  CU_ASSERT(has_diag(6, 11, "expected ':'"));
  parse("");
  CU_ASSERT(has_diag(1, 1, "no graph in the input"));
}

static void test_many_errors(void) {
  /* several independent errors, capped at max_errors */
  char *src = malloc(100000);
  size_t k = (size_t)sprintf(src, "graph g { input %%x: f32[2]\n");
  for (int i = 0; i < 100; i++)
    k += (size_t)sprintf(src + k, " %%v%d = neg(%%u%d)\n", i, i);
  sprintf(src + k, " return %%x }");
  Module *m = parse(src);
  CU_ASSERT_PTR_NOT_NULL(m);
  CU_ASSERT_EQUAL(ctx->nerrors, ctx->max_errors);
  CU_ASSERT(has_diag(3, 12, "undefined value '%u1'"));
  free(src);
}

static void test_big_graph(void) {
  /* 100,000 nodes: linear time, every name resolved through the hash */
  enum { N = 100000 };
  char *src = malloc((size_t)N * 48 + 256);
  size_t k = (size_t)sprintf(src, "graph g {\n input %%x: f32[8]\n"
                                  " %%v0 = neg(%%x)\n");
  for (int i = 1; i < N; i++)
    k += (size_t)sprintf(src + k, " %%v%d = add(%%v%d, %%x)\n", i, i - 1);
  sprintf(src + k, " return %%v%d\n}\n", N - 1);
  Graph *g = ok(src);
  CU_ASSERT_EQUAL(g->nnodes, N + 1);
  CU_ASSERT_PTR_EQUAL(g->rets[0], g->nodes[N]);
  free(src);
}

static void test_deep_nesting(void) {
  char *src = malloc(4000);
  size_t k = (size_t)sprintf(src, "graph g { input %%x: f32[2] %%y = ");
  for (int i = 0; i < 256; i++) k += (size_t)sprintf(src + k, "neg(");
  k += (size_t)sprintf(src + k, "%%x");
  for (int i = 0; i < 256; i++) src[k++] = ')';
  sprintf(src + k, " return %%y }");
  ok(src);
  k = (size_t)sprintf(src, "graph g { input %%x: f32[2] %%y = ");
  for (int i = 0; i < 600; i++) k += (size_t)sprintf(src + k, "neg(");
  src[k] = 0;
  CU_ASSERT_PTR_NULL(parse(src));
  CU_ASSERT_EQUAL(ctx->nerrors, 1);
  CU_ASSERT(has_diag(1, 32 + 4 * 256 + 4, "nested more than 256"));
  free(src);
}

static void test_huge_input(void) {
  /* over 2 GiB: refused with a diagnostic before any byte is read */
  static const char byte = ' ';
  Ctx *c = ctx_new("big.rlx", &byte, (size_t)1 << 31);
  CU_ASSERT_PTR_NULL(fe_parse(c));
  CU_ASSERT_EQUAL(c->nerrors, 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(c->diags->msg, "larger than 2 GiB"));
  ctx_free(c);
}

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("parser", NULL, NULL);
  CU_add_test(s, "statements", test_statements);
  CU_add_test(s, "args_first", test_args_first);
  CU_add_test(s, "nested", test_nested);
  CU_add_test(s, "literal_dtypes", test_literal_dtypes);
  CU_add_test(s, "literal_errors", test_literal_errors);
  CU_add_test(s, "const", test_const);
  CU_add_test(s, "const_errors", test_const_errors);
  CU_add_test(s, "types", test_types);
  CU_add_test(s, "attributes", test_attributes);
  CU_add_test(s, "attribute_errors", test_attribute_errors);
  CU_add_test(s, "names", test_names);
  CU_add_test(s, "returns", test_returns);
  CU_add_test(s, "syntax_errors", test_syntax_errors);
  CU_add_test(s, "many_errors", test_many_errors);
  CU_add_test(s, "big_graph", test_big_graph);
  CU_add_test(s, "deep_nesting", test_deep_nesting);
  CU_add_test(s, "huge_input", test_huge_input);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  ctx_free(ctx);
  return fails ? 1 : 0;
}
