/* test_printer.c: the canonical printer (ir/print.c).
 * Float formatting (shortest round trip, lexer-friendly text), the exact
 * text of programmatically built graphs (attribute order, %N naming that
 * skips user numbers, inline literals, consts of every dtype, subgraph
 * refs, module order), tolerance of malformed IR, and the round trip
 * print(parse(print(parse(F)))) == print(parse(F)) through the front
 * end. */
#include "frontend/frontend.h"
#include "ir/ir.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static Loc L0 = {0, 0};

/* ---- helpers ---- */
static char *print_module_str(const Module *m) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ir_print_module(f, m);
  fclose(f);
  return buf;
}

static Type ty(DType dt, int rank, int64_t d0, int64_t d1) {
  int64_t d[2] = {d0, d1};
  return type_make(dt, rank, d);
}

static Node *bin(Ctx *c, Graph *g, Op op, Node *a, Node *b) {
  Node *in[2] = {a, b};
  Node *n = ir_node_new(c, g, op, in, 2, L0);
  n->type = a->type;
  return n;
}

static bool lexes_as_float(const char *s) {
  return strchr(s, '.') || strchr(s, 'e') || !strcmp(s, "inf") ||
         !strcmp(s, "-inf") || !strcmp(s, "nan");
}

/* ---- float formatting ---- */
static void test_fmt_double_cases(void) {
  static const struct { double v; const char *s; } cases[] = {
      {0.1, "0.1"}, {1.0, "1.0"}, {-2.0, "-2.0"}, {0.0, "0.0"},
      {-0.0, "-0.0"}, {1e-5, "1e-5"}, {2.5e-3, "0.0025"},
      {1e300, "1e300"}, {1e15, "1e15"}, {123456.0, "123456.0"},
      {1.5e-7, "1.5e-7"}, {0.30000000000000004, "0.30000000000000004"},
      {5e-324, "5e-324"}, {INFINITY, "inf"}, {-INFINITY, "-inf"}};
  char buf[64];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ir_fmt_double(buf, sizeof buf, cases[i].v);
    CU_ASSERT_STRING_EQUAL(buf, cases[i].s);
  }
  ir_fmt_double(buf, sizeof buf, NAN);
  CU_ASSERT_STRING_EQUAL(buf, "nan");
}

static void test_fmt_float_cases(void) {
  static const struct { float v; const char *s; } cases[] = {
      {0.1f, "0.1"}, {1.0f, "1.0"}, {16777216.0f, "16777216.0"},
      {3.4028235e38f, "3.4028235e38"}, {1e-45f, "1e-45"},
      {-0.5f, "-0.5"}, {1e-5f, "1e-5"}, {0.3f, "0.3"}};
  char buf[64];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ir_fmt_float(buf, sizeof buf, cases[i].v);
    CU_ASSERT_STRING_EQUAL(buf, cases[i].s);
  }
}

/* Random bit patterns read back to the same bits. */
static void test_fmt_round_trip_random(void) {
  uint64_t s = 0x9E3779B97F4A7C15u;
  char buf[64];
  for (int i = 0; i < 40000; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    double d;
    memcpy(&d, &s, sizeof d);
    if (isnan(d)) continue;
    ir_fmt_double(buf, sizeof buf, d);
    double back = strtod(buf, NULL);
    if (memcmp(&back, &d, sizeof d) || !lexes_as_float(buf)) {
      CU_FAIL("double does not round trip");
      break;
    }
    uint32_t w = (uint32_t)(s >> 17);
    float f;
    memcpy(&f, &w, sizeof f);
    if (isnan(f)) continue;
    ir_fmt_float(buf, sizeof buf, f);
    float fb = strtof(buf, NULL);
    if (memcmp(&fb, &f, sizeof f) || !lexes_as_float(buf)) {
      CU_FAIL("float does not round trip");
      break;
    }
  }
}

/* ---- programmatic graphs ---- */
static void test_print_basic(void) {
  Ctx *c = ctx_new(NULL, NULL, 0);
  Module *m = ir_module_new(c);
  Graph *g = ir_graph_new(c, m, "g", L0);
  Node *x = ir_arg_new(c, g, OP_INPUT, "x", ty(DT_F32, 2, 2, 3), L0);
  Node *w = ir_arg_new(c, g, OP_PARAM, "w", ty(DT_F32, 1, 3, 0), L0);
  Node *one = ir_const_new(c, g, ty(DT_F32, 0, 0, 0), (float[]){2.5f},
                           false, L0);
  one->literal = true;
  Node *a = bin(c, g, OP_ADD, x, w);          /* unnamed: %0 */
  Node *b = bin(c, g, OP_MUL, a, one);        /* unnamed: %1 */
  Node *in[1] = {b};
  Node *r = ir_node_new(c, g, OP_REDUCE_SUM, in, 1, L0);
  r->name = "s";
  ir_attr_set_bool(c, r, ATTR_KEEP_DIMS, true); /* set before axes */
  ir_attr_set_ints(c, r, ATTR_AXES, (int64_t[]){1, 0}, 2);
  r->type = ty(DT_F32, 2, 1, 1);
  ir_set_rets(c, g, (Node *[]){r, a}, 2);
  char *s = print_module_str(m);
  CU_ASSERT_STRING_EQUAL(s,
      "graph g {\n"
      "  input %x: f32[2, 3]\n"
      "  param %w: f32[3]\n"
      "  %0 = add(%x, %w) : f32[2, 3]\n"
      "  %1 = mul(%0, 2.5) : f32[2, 3]\n"
      "  %s = reduce_sum(%1, axes=[1, 0], keep_dims=true) : f32[1, 1]\n"
      "  return %s, %0\n"
      "}\n");
  free(s);
  ctx_free(c);
}

/* %N skips numbers that are user names; literals take no number. */
static void test_print_numbering(void) {
  Ctx *c = ctx_new(NULL, NULL, 0);
  Module *m = ir_module_new(c);
  Graph *g = ir_graph_new(c, m, "g", L0);
  Node *x = ir_arg_new(c, g, OP_INPUT, "0", ty(DT_I32, 0, 0, 0), L0);
  Node *k = ir_const_new(c, g, x->type, (int32_t[]){-7}, false, L0);
  k->literal = true;
  Node *a = bin(c, g, OP_ADD, x, k);
  Node *b = bin(c, g, OP_SUB, a, x);
  b->name = "2";
  Node *d = bin(c, g, OP_MUL, b, a);
  Node *e = bin(c, g, OP_MAX, d, x);
  e->name = "007";
  ir_set_rets(c, g, (Node *[]){e, a}, 2);
  char *s = print_module_str(m);
  CU_ASSERT_STRING_EQUAL(s,
      "graph g {\n"
      "  input %0: i32[]\n"
      "  %1 = add(%0, -7) : i32[]\n"
      "  %2 = sub(%1, %0) : i32[]\n"
      "  %3 = mul(%2, %1) : i32[]\n"
      "  %007 = max(%3, %0) : i32[]\n"
      "  return %007, %1\n"
      "}\n");
  free(s);
  ctx_free(c);
}

static void test_print_returned_literal(void) {
  Ctx *c = ctx_new(NULL, NULL, 0);
  Module *m = ir_module_new(c);
  Graph *g = ir_graph_new(c, m, "g", L0);
  Node *x = ir_arg_new(c, g, OP_INPUT, "x", ty(DT_F64, 0, 0, 0), L0);
  Node *k = ir_const_new(c, g, x->type, (double[]){0.1}, false, L0);
  k->literal = true;
  Node *a = bin(c, g, OP_ADD, x, k);
  ir_set_rets(c, g, (Node *[]){a, k}, 2);
  char *s = print_module_str(m);
  CU_ASSERT_STRING_EQUAL(s,
      "graph g {\n"
      "  input %x: f64[]\n"
      "  %0 = const f64[] 0.1 : f64[]\n"
      "  %1 = add(%x, %0) : f64[]\n"
      "  return %1, %0\n"
      "}\n");
  free(s);
  ctx_free(c);
}

static void test_print_consts(void) {
  Ctx *c = ctx_new(NULL, NULL, 0);
  Module *m = ir_module_new(c);
  Graph *g = ir_graph_new(c, m, "g", L0);
  Node *n[8];
  n[0] = ir_const_new(c, g, ty(DT_F32, 2, 2, 2),
                      (float[]){1, 2.5f, -0.0f, 1e-5f}, false, L0);
  n[1] = ir_const_new(c, g, ty(DT_F32, 2, 64, 10), (float[]){0}, true, L0);
  n[2] = ir_const_new(c, g, ty(DT_I64, 1, 2, 0),
                      (int64_t[]){INT64_MIN, 9}, false, L0);
  n[3] = ir_const_new(c, g, ty(DT_BOOL, 1, 3, 0), (uint8_t[]){1, 0, 1},
                      false, L0);
  n[4] = ir_const_new(c, g, ty(DT_C64, 1, 2, 0),
                      (float[]){1, -1, 0.5f, 2}, false, L0);
  n[5] = ir_const_new(c, g, ty(DT_F16, 1, 2, 0),
                      (uint16_t[]){0x3C00, 0xC100}, false, L0);
  n[6] = ir_const_new(c, g, ty(DT_BF16, 1, 1, 0), (uint16_t[]){0x3F80},
                      false, L0);
  n[7] = ir_const_new(c, g, ty(DT_U8, 1, 2, 0), (uint8_t[]){255, 0},
                      false, L0);
  ir_set_rets(c, g, n, 8);
  char *s = print_module_str(m);
  CU_ASSERT_STRING_EQUAL(s,
      "graph g {\n"
      "  %0 = const f32[2, 2] [1.0, 2.5, -0.0, 1e-5] : f32[2, 2]\n"
      "  %1 = const f32[64, 10] 0.0 : f32[64, 10]\n"
      "  %2 = const i64[2] [-9223372036854775808, 9] : i64[2]\n"
      "  %3 = const bool[3] [true, false, true] : bool[3]\n"
      "  %4 = const c64[2] [1.0, -1.0, 0.5, 2.0] : c64[2]\n"
      "  %5 = const f16[2] [1.0, -2.5] : f16[2]\n"
      "  %6 = const bf16[1] [1.0] : bf16[1]\n"
      "  %7 = const u8[2] [255, 0] : u8[2]\n"
      "  return %0, %1, %2, %3, %4, %5, %6, %7\n"
      "}\n");
  free(s);
  ctx_free(c);
}

static void test_print_subgraphs(void) {
  Ctx *c = ctx_new(NULL, NULL, 0);
  Module *m = ir_module_new(c);
  Graph *sq = ir_graph_new(c, m, "sq", L0);
  Node *x = ir_arg_new(c, sq, OP_INPUT, "x", ty(DT_F32, 1, 4, 0), L0);
  Node *y = bin(c, sq, OP_MUL, x, x);
  y->name = "y";
  ir_set_rets(c, sq, &y, 1);
  Graph *g = ir_graph_new(c, m, "main_graph", L0);
  Node *a = ir_arg_new(c, g, OP_INPUT, "a", x->type, L0);
  Node *f = ir_node_new(c, g, OP_CUSTOM_FN, &a, 1, L0);
  ir_attr_set_graph(c, f, ATTR_FWD, sq);
  f->type = x->type;
  Node *cst = ir_node_new(c, g, OP_CAST, &f, 1, L0);
  ir_attr_set_dtype(c, cst, ATTR_TO, DT_F64);
  cst->type = ty(DT_F64, 1, 4, 0);
  Node *sm = ir_node_new(c, g, OP_ATTENTION, (Node *[]){a, a, a}, 3, L0);
  ir_attr_set_float(c, sm, ATTR_SCALE, 0.125);
  ir_attr_set_word(c, sm, ATTR_MASK, "causal");
  ir_attr_set_int(c, sm, ATTR_HEADS, 2);
  sm->type = x->type;
  ir_set_rets(c, g, (Node *[]){cst, sm}, 2);
  char *s = print_module_str(m);
  CU_ASSERT_STRING_EQUAL(s,
      "graph sq {\n"
      "  input %x: f32[4]\n"
      "  %y = mul(%x, %x) : f32[4]\n"
      "  return %y\n"
      "}\n"
      "\n"
      "graph main_graph {\n"
      "  input %a: f32[4]\n"
      "  %0 = custom_fn(%a, fwd=@sq) : f32[4]\n"
      "  %1 = cast(%0, to=f64) : f64[4]\n"
      "  %2 = attention(%a, %a, %a, heads=2, mask=causal, scale=0.125)"
      " : f32[4]\n"
      "  return %1, %2\n"
      "}\n");
  free(s);
  ctx_free(c);
}

/* Literal and splat forms that the grammar cannot write directly:
 * bool literals print as 0/1, c64 literals with a zero imaginary part
 * as the real part, a c64 splat with an imaginary part as a full list. */
static void test_print_special_literals(void) {
  Ctx *c = ctx_new(NULL, NULL, 0);
  Module *m = ir_module_new(c);
  Graph *g = ir_graph_new(c, m, "g", L0);
  Node *b = ir_arg_new(c, g, OP_INPUT, "b", ty(DT_BOOL, 1, 2, 0), L0);
  Node *z = ir_arg_new(c, g, OP_INPUT, "z", ty(DT_C64, 1, 2, 0), L0);
  Node *one = ir_const_new(c, g, ty(DT_BOOL, 0, 0, 0), (uint8_t[]){1},
                           false, L0);
  one->literal = true;
  Node *e = bin(c, g, OP_EQ, b, one);
  Node *k = ir_const_new(c, g, ty(DT_C64, 0, 0, 0), (float[]){3, 0},
                         false, L0);
  k->literal = true;
  Node *a = bin(c, g, OP_ADD, z, k);
  Node *s = ir_const_new(c, g, ty(DT_C64, 1, 2, 0), (float[]){1, 2},
                         true, L0);
  ir_set_rets(c, g, (Node *[]){e, a, s}, 3);
  char *t = print_module_str(m);
  CU_ASSERT_STRING_EQUAL(t,
      "graph g {\n"
      "  input %b: bool[2]\n"
      "  input %z: c64[2]\n"
      "  %0 = eq(%b, 1) : bool[2]\n"
      "  %1 = add(%z, 3.0) : c64[2]\n"
      "  %2 = const c64[2] [1.0, 2.0, 1.0, 2.0] : c64[2]\n"
      "  return %0, %1, %2\n"
      "}\n");
  free(t);
  ctx_free(c);
}

/* A literal made by a pass stays inline only where a re-parse would
 * give it the same dtype; otherwise it is printed as a definition. */
static void test_print_literal_contexts(void) {
  Ctx *c = ctx_new(NULL, NULL, 0);
  Module *m = ir_module_new(c);
  Graph *g = ir_graph_new(c, m, "g", L0);
  Type s64 = ty(DT_F64, 0, 0, 0);
  Node *a = ir_const_new(c, g, s64, (double[]){2}, false, L0);
  Node *b = ir_const_new(c, g, s64, (double[]){3}, false, L0);
  Node *r = ir_const_new(c, g, s64, (double[]){4}, false, L0);
  a->literal = b->literal = r->literal = true;
  Node *sum = bin(c, g, OP_ADD, a, b);          /* both literals */
  Node *neg = ir_node_new(c, g, OP_NEG, &r, 1, L0); /* f32 context */
  neg->type = s64;
  ir_set_rets(c, g, (Node *[]){sum, neg}, 2);
  char *t = print_module_str(m);
  CU_ASSERT_STRING_EQUAL(t,
      "graph g {\n"
      "  %0 = const f64[] 2.0 : f64[]\n"
      "  %1 = const f64[] 4.0 : f64[]\n"
      "  %2 = add(%0, 3.0) : f64[]\n"
      "  %3 = neg(%1) : f64[]\n"
      "  return %2, %3\n"
      "}\n");
  free(t);
  ctx_free(c);
}

/* Malformed IR (as a broken pass might leave it) still prints. */
static void test_print_malformed(void) {
  Ctx *c = ctx_new(NULL, NULL, 0);
  Module *m = ir_module_new(c);
  Graph *g1 = ir_graph_new(c, m, "a", L0);
  Node *x1 = ir_arg_new(c, g1, OP_INPUT, "x", ty(DT_F32, 0, 0, 0), L0);
  ir_set_rets(c, g1, &x1, 1);
  Graph *g2 = ir_graph_new(c, m, "b", L0);
  Node *x2 = ir_arg_new(c, g2, OP_INPUT, "x", x1->type, L0);
  Node *n = bin(c, g2, OP_ADD, x1, x2);
  n->in[1] = NULL;
  n->type.dt = DT_INVALID;
  ir_set_rets(c, g2, &n, 1);
  char *s = print_module_str(m);
  CU_ASSERT_PTR_NOT_NULL(strstr(s, "add(%<foreign>, %<null>)"));
  free(s);
  ctx_free(c);
}

/* ---- through the front end ---- */
static char *parse_print(const char *src, int *nerr) {
  Ctx *c = ctx_new("t.rlx", src, strlen(src));
  Module *m = fe_parse(c);
  *nerr = c->nerrors + (m == NULL);
  char *s = m && !c->nerrors ? print_module_str(m) : strdup("");
  ctx_free(c);
  return s;
}

static void test_round_trip_fe(void) {
  const char *src =
      "// comment\n"
      "graph body { input %c: f32[3]  input %x: f32[3]\n"
      "  %n = add(mul(%c, 0.5), tanh(%x)) return %n }\n"
      "graph g {\n"
      "  input %xs: f32[5, 3]\n"
      "  param %h0: f32[3]\n"
      "  %0 = exp(%h0)\n"
      "  %h = scan(%0, %xs, body=@body, length=5)\n"
      "  %k = const i32[2] [1, -2]\n"
      "  %s = reduce_sum(sub(%h, 1), keep_dims=false, axes=[0])\n"
      "  return %s, %k\n"
      "}\n";
  int e1, e2, e3;
  char *p1 = parse_print(src, &e1);
  CU_ASSERT_EQUAL(e1, 0);
  char *p2 = parse_print(p1, &e2);
  CU_ASSERT_EQUAL(e2, 0);
  CU_ASSERT_STRING_EQUAL(p1, p2);
  char *p3 = parse_print(p2, &e3);
  CU_ASSERT_STRING_EQUAL(p2, p3);
  CU_ASSERT_PTR_NOT_NULL(strstr(p1, "%0 = mul(%c, 0.5) : f32[3]"));
  CU_ASSERT_PTR_NOT_NULL(strstr(p1, "axes=[0], keep_dims=false"));
  CU_ASSERT_PTR_NOT_NULL(strstr(p1, "sub(%h, 1.0)"));
  free(p1);
  free(p2);
  free(p3);
}

int main(void) {
  CU_initialize_registry();
  CU_pSuite s = CU_add_suite("printer", NULL, NULL);
  CU_add_test(s, "fmt_double_cases", test_fmt_double_cases);
  CU_add_test(s, "fmt_float_cases", test_fmt_float_cases);
  CU_add_test(s, "fmt_round_trip_random", test_fmt_round_trip_random);
  CU_add_test(s, "print_basic", test_print_basic);
  CU_add_test(s, "print_numbering", test_print_numbering);
  CU_add_test(s, "print_returned_literal", test_print_returned_literal);
  CU_add_test(s, "print_consts", test_print_consts);
  CU_add_test(s, "print_subgraphs", test_print_subgraphs);
  CU_add_test(s, "print_special_literals", test_print_special_literals);
  CU_add_test(s, "print_literal_contexts", test_print_literal_contexts);
  CU_add_test(s, "print_malformed", test_print_malformed);
  CU_add_test(s, "round_trip_fe", test_round_trip_fe);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  return fails ? 1 : 0;
}
