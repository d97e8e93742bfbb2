/* test_jvp.c: forward mode (--jvp) and Hessian-vector products (--hvp)
 * at the IR level. Each test parses a source string, runs the pass
 * pipeline (which verifies the module after every pass) and checks the
 * derived graphs: signatures and names (abi.md section 3), symbolic
 * zeros (no node for what no seed reaches), control flow kept in its
 * form, and the diagnostics. Numbers are checked by tests/gradcheck/
 * (JVP goldens, finite differences, the dot-product test, HVP cases). */
#include "test_ad_util.h"

/* Parse src and run the pipeline with --jvp[=seeds] / --hvp / --grad. */
static T *run(const char *src, bool jvp, const char *const *seeds, int ns,
              bool hvp, bool grad) {
  return ad_run(src, (Options){.jvp = jvp, .jvp_wrt = (const char **)seeds,
                               .njvp_wrt = ns, .hvp = hvp, .grad = grad});
}

static const char *MLP =
    "graph mlp {\n"
    "  input %x: f32[4, 3]\n"
    "  param %w: f32[3, 5]\n"
    "  param %b: f32[5]\n"
    "  input %y: i32[4]\n"
    "  %h = tanh(add(matmul(%x, %w), %b))\n"
    "  %l = softmax_cross_entropy(%h, %y)\n"
    "  %loss = reduce_mean(%l, axes=[0])\n"
    "  return %loss, %h, %y\n"
    "}\n";

static void test_jvp_signature(void) {
  T *t = run(MLP, true, NULL, 0, false, false);
  OK(t);
  Graph *g = t->u.jvp;
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  CU_ASSERT_PTR_NULL(t->u.grad);
  CU_ASSERT_STRING_EQUAL(g->name, "mlp_jvp");
  CU_ASSERT_EQUAL(g->nargs, 6); /* x w b y, tangent_w tangent_b */
  CU_ASSERT_STRING_EQUAL(g->args[4]->name, "tangent_w");
  CU_ASSERT_STRING_EQUAL(g->args[5]->name, "tangent_b");
  CU_ASSERT_TRUE(type_eq(&g->args[5]->type, &t->u.entry->args[2]->type));
  CU_ASSERT_EQUAL(g->nret, 6);
  CU_ASSERT_STRING_EQUAL(g->rets[3]->name, "tangent_loss");
  CU_ASSERT_STRING_EQUAL(g->rets[4]->name, "tangent_h");
  /* the tangent of an integer return: zeros of its own dtype */
  CU_ASSERT_EQUAL(g->rets[5]->type.dt, DT_I32);
  CU_ASSERT_EQUAL(count_op(g, OP_MATMUL), 2); /* x w, x tangent_w */
  done(t);
}

/* Only the seeded branch gets tangent nodes; the other costs nothing. */
static void test_symbolic_zero(void) {
  static const char *src =
      "graph two {\n"
      "  param %a: f32[8, 8]\n"
      "  param %b: f32[8, 8]\n"
      "  %p = matmul(%a, %a)\n"
      "  %q = matmul(exp(%b), %b)\n"
      "  return %p, %q\n"
      "}\n";
  static const char *const seeds[] = {"a"};
  T *t = run(src, true, seeds, 1, false, false);
  OK(t);
  Graph *g = t->u.jvp;
  CU_ASSERT_EQUAL(g->nargs, 3);
  CU_ASSERT_STRING_EQUAL(g->args[2]->name, "tangent_a");
  CU_ASSERT_EQUAL(count_op(g, OP_MATMUL), 4); /* p, q, ta a, a ta */
  CU_ASSERT_EQUAL(count_op(g, OP_EXP), 1);
  const Node *z = g->rets[3]; /* tangent of q: zeros (own copy) */
  if (z->op == OP_RESHAPE) z = z->in[0];
  CU_ASSERT_EQUAL(z->op, OP_CONST);
  done(t);
}

/* A seeded intermediate value takes the given tangent. */
static void test_seed_intermediate(void) {
  static const char *const seeds[] = {"h"};
  T *t = run(MLP, true, seeds, 1, false, false);
  OK(t);
  Graph *g = t->u.jvp;
  CU_ASSERT_EQUAL(g->nargs, 5);
  CU_ASSERT_STRING_EQUAL(g->args[4]->name, "tangent_h");
  CU_ASSERT_EQUAL(count_op(g, OP_MATMUL), 1); /* nothing before %h */
  done(t);
}

static void test_jvp_diagnostics(void) {
  static const char *const nope[] = {"nope"}, *const lab[] = {"y"},
                           *const twice[] = {"w", "w"};
  T *t = run(MLP, true, nope, 1, false, false);
  CU_ASSERT_FALSE(t->ok);
  CU_ASSERT_TRUE(has_diag(t, "no value named '%nope'", 0));
  done(t);
  t = run(MLP, true, lab, 1, false, false);
  CU_ASSERT_FALSE(t->ok);
  CU_ASSERT_TRUE(has_diag(t, "'%y' has dtype i32", 0));
  done(t);
  t = run(MLP, true, twice, 2, false, false);
  CU_ASSERT_FALSE(t->ok);
  CU_ASSERT_TRUE(has_diag(t, "'%w' is seeded twice", 0));
  done(t);
  t = run("graph f {\n  input %x: f32[2]\n  return %x\n}\n", true, NULL, 0,
          false, false);
  CU_ASSERT_FALSE(t->ok);
  CU_ASSERT_TRUE(has_diag(t, "no floating-point param to seed", 0));
  done(t);
}

static void test_hvp_signature(void) {
  T *t = run(MLP, false, NULL, 0, true, false);
  OK(t);
  Graph *g = t->u.hvp;
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  CU_ASSERT_PTR_NULL(t->u.grad); /* no --grad: no ENTRY_grad */
  for (int i = 0; i < t->m->ngraphs; i++)
    CU_ASSERT_STRING_NOT_EQUAL(t->m->graphs[i]->name, "mlp_grad");
  CU_ASSERT_STRING_EQUAL(g->name, "mlp_hvp");
  CU_ASSERT_EQUAL(g->nargs, 7); /* x w b y d_output tangent_w tangent_b */
  CU_ASSERT_STRING_EQUAL(g->args[4]->name, "d_output");
  CU_ASSERT_STRING_EQUAL(g->args[6]->name, "tangent_b");
  CU_ASSERT_EQUAL(g->nret, 6);
  static const char *names[] = {"loss", "d_w", "d_b", "grad_dot_tangent",
                                "hvp_w", "hvp_b"};
  for (int i = 0; i < 6; i++)
    CU_ASSERT_STRING_EQUAL(g->rets[i]->name, names[i]);
  CU_ASSERT_EQUAL(g->rets[3]->type.rank, 0);
  CU_ASSERT_TRUE(type_eq(&g->rets[4]->type, &t->u.entry->args[1]->type));
  done(t);
  t = run(MLP, true, NULL, 0, true, true); /* all three together */
  OK(t);
  CU_ASSERT_PTR_NOT_NULL(t->u.grad);
  CU_ASSERT_PTR_NOT_NULL(t->u.jvp);
  CU_ASSERT_PTR_NOT_NULL(t->u.hvp);
  done(t);
}

static void test_hvp_diagnostics(void) {
  T *t = run("graph f {\n  param %w: f32[4]\n  %t = tanh(%w)\n"
             "  return %t\n}\n",
             false, NULL, 0, true, false);
  CU_ASSERT_FALSE(t->ok);
  CU_ASSERT_TRUE(has_diag(t, "loss of one element", 0));
  done(t);
}

static const char *CONTROL =
    "graph cell {\n"
    "  input %h: f32[3]\n"
    "  input %w: f32[3]\n"
    "  input %x: f32[3]\n"
    "  %n = tanh(add(mul(%h, %w), %x))\n"
    "  return %n\n"
    "}\n"
    "graph cond {\n"
    "  input %v: f32[3]\n"
    "  input %k: i64[]\n"
    "  %c = lt(%k, 5)\n"
    "  return %c\n"
    "}\n"
    "graph body {\n"
    "  input %v: f32[3]\n"
    "  input %k: i64[]\n"
    "  %a = mul(%v, 0.5)\n"
    "  %b = add(%k, 1)\n"
    "  return %a, %b\n"
    "}\n"
    "graph neg3 {\n"
    "  input %v: f32[3]\n"
    "  %n = neg(%v)\n"
    "  return %n\n"
    "}\n"
    "graph id3 {\n"
    "  input %v: f32[3]\n"
    "  %e = exp(%v)\n"
    "  return %e\n"
    "}\n"
    "graph f {\n"
    "  param %h0: f32[3]\n"
    "  param %w: f32[3]\n"
    "  input %xs: f32[6, 3]\n"
    "  input %p: bool[]\n"
    "  %s = scan(%h0, %w, %xs, body=@cell, num_bcast=1, checkpoints=2)\n"
    "  %k0 = const i64[] 0\n"
    "  %u = while(%s, %k0, cond=@cond, body=@body)\n"
    "  %r = if(%p, %u, then=@neg3, else=@id3)\n"
    "  %l = reduce_sum(%r)\n"
    "  return %l\n"
    "}\n";

/* scan, while and if stay one node each (no unrolling, no max_iterations
 * needed), and the primal is not computed twice. */
static void test_control_kept(void) {
  T *t = run(CONTROL, true, NULL, 0, false, false);
  OK(t);
  Graph *g = t->u.jvp;
  CU_ASSERT_EQUAL(count_op(g, OP_SCAN), 1);
  CU_ASSERT_EQUAL(count_op(g, OP_WHILE), 1);
  CU_ASSERT_EQUAL(count_op(g, OP_IF), 1);
  CU_ASSERT_EQUAL(count_op(g, OP_EXP), 0); /* the branch stays a branch */
  done(t);
}

int main(void) {
  CU_initialize_registry();
  CU_pSuite s = CU_add_suite("jvp", NULL, NULL);
  CU_add_test(s, "jvp_signature", test_jvp_signature);
  CU_add_test(s, "symbolic_zero", test_symbolic_zero);
  CU_add_test(s, "seed_intermediate", test_seed_intermediate);
  CU_add_test(s, "jvp_diagnostics", test_jvp_diagnostics);
  CU_add_test(s, "hvp_signature", test_hvp_signature);
  CU_add_test(s, "hvp_diagnostics", test_hvp_diagnostics);
  CU_add_test(s, "control_kept", test_control_kept);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned f = CU_get_number_of_failures();
  CU_cleanup_registry();
  return f ? 1 : 0;
}
