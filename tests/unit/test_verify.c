/* test_verify.c: the IR verifier (ir/verify.c). A valid module passes
 * silently; each kind of malformation a pass could produce is reported
 * as an "internal: verifier: ..." diagnostic (never an abort): operand
 * counts, order/cycles, foreign operands, attributes (undeclared, kind,
 * enum word, missing required, later graph refs), re-inferred types,
 * duplicate names and nodes, returns, args, duplicate graphs. */
#include "frontend/frontend.h"
#include "ir/ir.h"
#include "passes/passes.h"

#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

static Loc L0 = {0, 0};

typedef struct {
  Ctx *c;
  Module *m;
  Graph *g;
  Node *x, *y, *sum;
} Fix;

/* g: input %x: f32[2, 3]; input %y: f32[3]; %s = add(%x, %y); return */
static Fix fixture(void) {
  Fix f;
  f.c = ctx_new(NULL, NULL, 0);
  f.m = ir_module_new(f.c);
  f.g = ir_graph_new(f.c, f.m, "g", L0);
  f.x = ir_arg_new(f.c, f.g, OP_INPUT, "x",
                   type_make(DT_F32, 2, (int64_t[]){2, 3}), L0);
  f.y = ir_arg_new(f.c, f.g, OP_INPUT, "y",
                   type_make(DT_F32, 1, (int64_t[]){3}), L0);
  f.sum = ir_node_new(f.c, f.g, OP_ADD, (Node *[]){f.x, f.y}, 2, L0);
  f.sum->name = "s";
  CU_ASSERT_TRUE(shape_infer(f.c, f.sum));
  ir_set_rets(f.c, f.g, &f.sum, 1);
  return f;
}

/* Verify and expect failure with a message containing `what`. */
static void expect_fail(Fix *f, const char *what) {
  int before = f->c->nerrors;
  CU_ASSERT_FALSE(ir_verify(f->c, f->m));
  CU_ASSERT_TRUE(f->c->nerrors > before);
  bool found = false;
  for (Diag *d = f->c->diags; d; d = d->next) {
    CU_ASSERT_EQUAL(strncmp(d->msg, "internal: verifier: ", 20), 0);
    if (strstr(d->msg, what)) found = true;
  }
  if (!found) {
    for (Diag *d = f->c->diags; d; d = d->next)
      fprintf(stderr, "  diag: %s\n", d->msg);
    fprintf(stderr, "  wanted: %s\n", what);
  }
  CU_ASSERT_TRUE(found);
  ctx_free(f->c);
}

static void test_valid(void) {
  Fix f = fixture();
  CU_ASSERT_TRUE(ir_verify(f.c, f.m));
  CU_ASSERT_EQUAL(f.c->nerrors, 0);
  ctx_free(f.c);
}

static void test_operand_count(void) {
  Fix f = fixture();
  f.sum->nin = 1;
  expect_fail(&f, "has 1 operands");
}

static void test_use_before_def(void) {
  Fix f = fixture();
  Node *e = ir_node_new(f.c, f.g, OP_EXP, &f.x, 1, L0);
  CU_ASSERT_TRUE(shape_infer(f.c, e));
  f.sum->in[0] = e; /* e is defined after sum */
  expect_fail(&f, "is not defined before its use");
}

static void test_self_cycle(void) {
  Fix f = fixture();
  f.sum->in[0] = f.sum;
  expect_fail(&f, "is not defined before its use");
}

static void test_null_operand(void) {
  Fix f = fixture();
  f.sum->in[1] = NULL;
  expect_fail(&f, "operand 1 is NULL");
}

static void test_foreign_operand(void) {
  Fix f = fixture();
  Graph *h = ir_graph_new(f.c, f.m, "h", L0);
  Node *z = ir_arg_new(f.c, h, OP_INPUT, "z", f.y->type, L0);
  Node *n = ir_node_new(f.c, h, OP_NEG, &f.y, 1, L0); /* f.y: from g */
  n->type = f.y->type;
  ir_set_rets(f.c, h, (Node *[]){z, n}, 2);
  expect_fail(&f, "belongs to another graph");
}

static void test_undeclared_attr(void) {
  Fix f = fixture();
  ir_attr_set_int(f.c, f.sum, ATTR_AXIS, 0);
  expect_fail(&f, "does not take attribute 'axis'");
}

static void test_attr_kind(void) {
  Fix f = fixture();
  Node *r = ir_node_new(f.c, f.g, OP_SOFTMAX, &f.x, 1, L0);
  r->type = f.x->type;
  ir_attr_set_float(f.c, r, ATTR_AXIS, 1.0);
  expect_fail(&f, "attribute 'axis' has the wrong kind");
}

static void test_attr_enum_word(void) {
  Fix f = fixture();
  Node *q = ir_node_new(f.c, f.g, OP_FFT, &f.x, 1, L0);
  q->type = f.x->type;
  ir_attr_set_word(f.c, q, ATTR_NORM, "sideways");
  expect_fail(&f, "'sideways' is not a legal value of 'norm'");
}

static void test_missing_required(void) {
  Fix f = fixture();
  Node *r = ir_node_new(f.c, f.g, OP_RESHAPE, &f.x, 1, L0);
  r->type = f.x->type;
  expect_fail(&f, "lacks required attribute 'shape'");
}

static void test_graph_ref_later(void) {
  Fix f = fixture();
  Node *cf = ir_node_new(f.c, f.g, OP_CUSTOM_FN, &f.y, 1, L0);
  ir_attr_set_graph(f.c, cf, ATTR_FWD, f.g); /* itself: not earlier */
  cf->type = f.y->type;
  expect_fail(&f, "must name a graph declared earlier");
}

static void test_wrong_type(void) {
  Fix f = fixture();
  f.sum->type.dims[0] = 7;
  expect_fail(&f, "has type f32[7, 3] but its shape rule infers "
                  "f32[2, 3]");
}

static void test_rule_rejects(void) {
  Fix f = fixture();
  Node *mm = ir_node_new(f.c, f.g, OP_MATMUL, (Node *[]){f.x, f.x}, 2, L0);
  mm->type = f.x->type;
  expect_fail(&f, "the shape rule rejects the node");
}

static void test_invalid_type(void) {
  Fix f = fixture();
  f.sum->type.dt = DT_INVALID;
  expect_fail(&f, "has an invalid type");
}

static void test_duplicate_name(void) {
  Fix f = fixture();
  Node *e = ir_node_new(f.c, f.g, OP_EXP, &f.y, 1, L0);
  CU_ASSERT_TRUE(shape_infer(f.c, e));
  e->name = "x";
  expect_fail(&f, "value %x is defined twice");
}

static void test_bad_name(void) {
  Fix f = fixture();
  f.sum->name = "a b";
  expect_fail(&f, "is not a valid name");
}

static void test_duplicate_node(void) {
  Fix f = fixture();
  ir_node_new(f.c, f.g, OP_EXP, &f.y, 1, L0);
  f.g->nodes[f.g->nnodes - 1] = f.sum; /* sum listed twice */
  expect_fail(&f, "appears twice in the node list");
}

static void test_no_return(void) {
  Fix f = fixture();
  f.g->nret = 0;
  expect_fail(&f, "the graph has no return value");
}

static void test_foreign_return(void) {
  Fix f = fixture();
  Ctx *c2 = ctx_new(NULL, NULL, 0);
  Graph *h = ir_graph_new(c2, NULL, "h", L0);
  Node *z = ir_arg_new(c2, h, OP_INPUT, "z", f.y->type, L0);
  f.g->rets[0] = z;
  expect_fail(&f, "is not a node of the graph");
  ctx_free(c2);
}

static void test_arg_index(void) {
  Fix f = fixture();
  f.y->arg_index = 0;
  expect_fail(&f, "is not argument 0 of the graph");
}

static void test_duplicate_graph(void) {
  Fix f = fixture();
  Graph *h = ir_graph_new(f.c, f.m, "g", L0);
  Node *z = ir_arg_new(f.c, h, OP_INPUT, "z", f.y->type, L0);
  ir_set_rets(f.c, h, &z, 1);
  expect_fail(&f, "a graph of this name is declared twice");
}

static void test_const_without_data(void) {
  Fix f = fixture();
  Node *k = ir_const_new(f.c, f.g, f.y->type, NULL, true, L0);
  k->data = NULL;
  expect_fail(&f, "has no data");
}

/* A module straight from the front end verifies. */
static void test_parsed_module(void) {
  const char *src =
      "graph sq { input %x: f32[4] return %x }\n"
      "graph g {\n"
      "  input %a: f32[4]\n"
      "  param %w: f32[4]\n"
      "  %c = const f32[4] [1, 2, 3, 4]\n"
      "  %s = custom_fn(add(%a, %w), fwd=@sq)\n"
      "  %t = mul(%s, 2)\n"
      "  %u = softmax(sub(%t, %c), axis=0)\n"
      "  return %u\n"
      "}\n";
  Ctx *c = ctx_new("t.rlx", src, strlen(src));
  Module *m = fe_parse(c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_EQUAL(c->nerrors, 0);
  CU_ASSERT_TRUE(ir_verify(c, m));
  CU_ASSERT_EQUAL(c->nerrors, 0);
  ctx_free(c);
}

/* The pipeline verifies the module and names the pass after which it
 * was malformed; with RLX_NO_VERIFY the explicit "verify" pass still
 * catches it. */
static bool has_diag(const Ctx *c, const char *what) {
  for (const Diag *d = c->diags; d; d = d->next)
    if (strstr(d->msg, what)) return true;
  return false;
}

static void test_pipeline_verifies(void) {
  Options o = {.emit = EMIT_IR, .opt_level = 2};
  for (int noverify = 0; noverify < 2; noverify++) {
    Fix f = fixture();
    Unit u = {.ctx = f.c, .mod = f.m, .opt = &o, .cname = "g",
              .entry = f.g};
    CU_ASSERT_TRUE(pass_run_pipeline(&u));
    CU_ASSERT_EQUAL(f.c->nerrors, 0);
    f.sum->type.dims[1] = 4; /* a stale type, as a buggy pass leaves */
    if (noverify) setenv("RLX_NO_VERIFY", "1", 1);
    CU_ASSERT_FALSE(pass_run_pipeline(&u));
    unsetenv("RLX_NO_VERIFY");
    CU_ASSERT_TRUE(has_diag(f.c, "internal: verifier: graph 'g'"));
    CU_ASSERT_EQUAL(has_diag(f.c, "malformed after pass 'parse'"),
                    !noverify);
    ctx_free(f.c);
  }
}

static void test_pass_list(void) {
  int n;
  const Pass *p = pass_list(&n);
  CU_ASSERT_TRUE(n >= 2);
  CU_ASSERT_STRING_EQUAL(p[0].name, "parse");
  CU_ASSERT_STRING_EQUAL(p[1].name, "verify");
  for (int i = 0; i < n; i++) {
    CU_ASSERT_PTR_NOT_NULL(p[i].run);
    for (int j = 0; j < i; j++) CU_ASSERT_STRING_NOT_EQUAL(p[i].name,
                                                           p[j].name);
  }
}

int main(void) {
  CU_initialize_registry();
  CU_pSuite s = CU_add_suite("verify", NULL, NULL);
  CU_add_test(s, "valid", test_valid);
  CU_add_test(s, "operand_count", test_operand_count);
  CU_add_test(s, "use_before_def", test_use_before_def);
  CU_add_test(s, "self_cycle", test_self_cycle);
  CU_add_test(s, "null_operand", test_null_operand);
  CU_add_test(s, "foreign_operand", test_foreign_operand);
  CU_add_test(s, "undeclared_attr", test_undeclared_attr);
  CU_add_test(s, "attr_kind", test_attr_kind);
  CU_add_test(s, "attr_enum_word", test_attr_enum_word);
  CU_add_test(s, "missing_required", test_missing_required);
  CU_add_test(s, "graph_ref_later", test_graph_ref_later);
  CU_add_test(s, "wrong_type", test_wrong_type);
  CU_add_test(s, "rule_rejects", test_rule_rejects);
  CU_add_test(s, "invalid_type", test_invalid_type);
  CU_add_test(s, "duplicate_name", test_duplicate_name);
  CU_add_test(s, "bad_name", test_bad_name);
  CU_add_test(s, "duplicate_node", test_duplicate_node);
  CU_add_test(s, "no_return", test_no_return);
  CU_add_test(s, "foreign_return", test_foreign_return);
  CU_add_test(s, "arg_index", test_arg_index);
  CU_add_test(s, "duplicate_graph", test_duplicate_graph);
  CU_add_test(s, "const_without_data", test_const_without_data);
  CU_add_test(s, "parsed_module", test_parsed_module);
  CU_add_test(s, "pipeline_verifies", test_pipeline_verifies);
  CU_add_test(s, "pass_list", test_pass_list);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  return fails ? 1 : 0;
}
