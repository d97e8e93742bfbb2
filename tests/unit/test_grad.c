/* test_grad.c: reverse-mode autodiff at the IR level. Each test parses
 * a source string, runs the whole pass pipeline with --grad (which
 * verifies the module after every pass) and checks the gradient graph:
 * its signature (abi.md section 3), which ops it contains, node counts
 * after clean-up, and the diagnostics for missing gradients, unbounded
 * while loops and unsupported ops. Numbers are checked end to end by
 * tests/gradcheck/. */
#include "test_ad_util.h"

/* Parse src and run the pipeline with --grad; wrt: names or NULL. */
static T *run(const char *src, const char *const *wrt, int nwrt,
              bool zero) {
  return ad_run(src, (Options){.grad = true, .wrt = (const char **)wrt,
                               .nwrt = nwrt, .grad_missing_zero = zero});
}

static const char *MLP =
    "graph mlp {\n"
    "  input %x: f32[4, 3]\n"
    "  param %w: f32[3, 5]\n"
    "  param %b: f32[5]\n"
    "  input %y: i32[4]\n"
    "  %h = relu(add(matmul(%x, %w), %b))\n"
    "  %l = softmax_cross_entropy(%h, %y)\n"
    "  %loss = reduce_mean(%l, axes=[0])\n"
    "  return %loss, %h\n"
    "}\n";

static void test_signature(void) {
  T *t = run(MLP, NULL, 0, false);
  OK(t);
  Graph *g = t->u.grad;
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  CU_ASSERT_STRING_EQUAL(g->name, "mlp_grad");
  CU_ASSERT_PTR_EQUAL(t->m->graphs[t->m->ngraphs - 1], g);
  CU_ASSERT_EQUAL(g->nargs, 5);
  CU_ASSERT_STRING_EQUAL(g->args[4]->name, "d_output");
  CU_ASSERT_EQUAL(g->args[4]->type.rank, 0);
  CU_ASSERT_EQUAL(g->nret, 4);
  CU_ASSERT_TRUE(type_eq(&g->rets[2]->type, &t->u.entry->args[1]->type));
  CU_ASSERT_TRUE(type_eq(&g->rets[3]->type, &t->u.entry->args[2]->type));
  CU_ASSERT_STRING_EQUAL(g->rets[2]->name, "d_w");
  CU_ASSERT_STRING_EQUAL(g->rets[3]->name, "d_b");
  CU_ASSERT_EQUAL(count_op(g, OP_SOFTMAX_CROSS_ENTROPY_BACKWARD), 1);
  CU_ASSERT_EQUAL(count_op(g, OP_RELU_BACKWARD), 1);
  CU_ASSERT_EQUAL(count_op(g, OP_MATMUL), 2); /* forward + dw only */
  done(t);
}

/* a gradient that is d_output itself gets its own value and name */
static void test_grad_outputs(void) {
  const char *src = "graph f { param %a: f32[3] param %b: f32[3]\n"
                    "  %y = add(%a, %b) return %y }\n";
  T *t = run(src, NULL, 0, false);
  OK(t);
  Graph *g = t->u.grad;
  CU_ASSERT_STRING_EQUAL(g->rets[1]->name, "d_a");
  CU_ASSERT_STRING_EQUAL(g->rets[2]->name, "d_b");
  CU_ASSERT_PTR_NOT_EQUAL(g->rets[1], g->rets[2]);
  CU_ASSERT_NOT_EQUAL(g->rets[1]->op, OP_INPUT);
  done(t);
}

/* --wrt may name an intermediate value */
static void test_wrt_intermediate(void) {
  const char *w[] = {"h"};
  T *t = run(MLP, w, 1, false);
  OK(t);
  Graph *g = t->u.grad;
  CU_ASSERT_EQUAL(g->nret, 3);
  CU_ASSERT_STRING_EQUAL(g->rets[2]->name, "d_h");
  CU_ASSERT_EQUAL(g->rets[2]->type.dims[1], 5);
  CU_ASSERT_EQUAL(count_op(g, OP_RELU_BACKWARD), 0); /* stops at %h */
  done(t);
}

/* real -> c64 cast: the gradient is the real part of the cotangent */
static void test_cast_complex(void) {
  const char *src = "graph f { param %x: f64[3]\n"
                    "  %y = mul(cast(%x, to=c64), cast(%x, to=c64))\n"
                    "  return %y }\n";
  T *t = run(src, NULL, 0, false);
  OK(t);
  CU_ASSERT_EQUAL(count_op(t->u.grad, OP_REAL), 1);
  CU_ASSERT_EQUAL(t->u.grad->rets[1]->type.dt, DT_F64);
  done(t);
}

static void test_wrt_names(void) {
  const char *w[] = {"b", "x"};
  T *t = run(MLP, w, 2, false);
  OK(t);
  Graph *g = t->u.grad;
  CU_ASSERT_EQUAL(g->nret, 4);
  CU_ASSERT_TRUE(type_eq(&g->rets[2]->type, &t->u.entry->args[2]->type));
  CU_ASSERT_TRUE(type_eq(&g->rets[3]->type, &t->u.entry->args[0]->type));
  done(t);
}

static const char *UNUSED =
    "graph f {\n"
    "  param %a: f32[3]\n"
    "  param %b: f32[3]\n"
    "  param %c: f32[3]\n"
    "  input %i: i32[3]\n"
    "  %s = reduce_sum(mul(%a, %a))\n"
    "  %t = stop_gradient(%c)\n"
    "  return %s, %t\n"
    "}\n";

static void test_missing_listed(void) {
  T *t = run(UNUSED, NULL, 0, false);
  CU_ASSERT_FALSE(t->ok);
  CU_ASSERT_TRUE(has_diag(t, "'%b' receives no gradient", 3));
  CU_ASSERT_TRUE(has_diag(t, "'%c' receives no gradient", 4));
  CU_ASSERT_EQUAL(t->c->nerrors, 2);
  done(t);
}

static void test_missing_zero(void) {
  T *t = run(UNUSED, NULL, 0, true);
  OK(t);
  Graph *g = t->u.grad;
  CU_ASSERT_EQUAL(g->nret, 5);
  for (int k = 3; k < 5; k++) { /* zeros, each output its own value */
    Node *r = g->rets[k];
    if (r->op == OP_RESHAPE) r = r->in[0];
    CU_ASSERT_EQUAL(r->op, OP_CONST);
    CU_ASSERT_EQUAL(ir_const_get(r, 0), 0.0);
  }
  CU_ASSERT_PTR_NOT_EQUAL(g->rets[3], g->rets[4]);
  CU_ASSERT_STRING_EQUAL(g->rets[3]->name, "d_b");
  CU_ASSERT_STRING_EQUAL(g->rets[4]->name, "d_c");
  done(t);
}

static void test_bad_wrt(void) {
  const char *w[] = {"nope", "i"};
  T *t = run(UNUSED, w, 2, false);
  CU_ASSERT_FALSE(t->ok);
  CU_ASSERT_TRUE(has_diag(t, "no value named '%nope'", 0));
  CU_ASSERT_TRUE(has_diag(t, "'%i' has dtype i32", 5));
  done(t);
}

static const char *WHILE_NOMAX =
    "graph c { input %x: f32[] %k = lt(%x, 10.0) return %k }\n"
    "graph b { input %x: f32[] %y = mul(%x, 2.0) return %y }\n"
    "graph w {\n"
    "  param %p: f32[]\n"
    "  %r = while(%p, cond=@c, body=@b)\n"
    "  return %r\n"
    "}\n";

static void test_while_needs_max(void) {
  T *t = run(WHILE_NOMAX, NULL, 0, false);
  CU_ASSERT_FALSE(t->ok);
  CU_ASSERT_TRUE(has_diag(t, "needs max_iterations", 5));
  done(t);
}

static const char *WHILE_MAX =
    "graph c { input %x: f32[] %k = lt(%x, 10.0) return %k }\n"
    "graph b { input %x: f32[] %y = mul(%x, 2.0) return %y }\n"
    "graph w {\n"
    "  param %p: f32[]\n"
    "  %r = while(%p, cond=@c, body=@b, max_iterations=5)\n"
    "  return %r\n"
    "}\n";

static void test_while_unrolled(void) {
  T *t = run(WHILE_MAX, NULL, 0, false);
  OK(t);
  /* the entry keeps its loop; the gradient graph has it unrolled */
  CU_ASSERT_EQUAL(count_op(t->u.entry, OP_WHILE), 1);
  CU_ASSERT_EQUAL(count_op(t->u.grad, OP_WHILE), 0);
  CU_ASSERT_EQUAL(count_op(t->u.grad, OP_LT), 5);
  CU_ASSERT_TRUE(count_op(t->u.grad, OP_WHERE) >= 10);
  CU_ASSERT_PTR_NULL(ir_graph_find(t->m, "w_ad")); /* working copy gone */
  done(t);
}

static const char *IF_SRC =
    "graph t { input %a: f32[3] %y = mul(%a, %a) return %y }\n"
    "graph e { input %a: f32[3] %y = sin(%a) return %y }\n"
    "graph f {\n"
    "  param %p: f32[3]\n"
    "  input %q: bool[]\n"
    "  %r = if(%q, %p, then=@t, else=@e)\n"
    "  %s = reduce_sum(%r)\n"
    "  return %s\n"
    "}\n";

static void test_if_to_where(void) {
  T *t = run(IF_SRC, NULL, 0, false);
  OK(t);
  CU_ASSERT_EQUAL(count_op(t->u.entry, OP_IF), 1);
  CU_ASSERT_EQUAL(count_op(t->u.entry, OP_WHERE), 0);
  CU_ASSERT_EQUAL(count_op(t->u.grad, OP_IF), 0);
  CU_ASSERT_TRUE(count_op(t->u.grad, OP_WHERE) >= 1);
  CU_ASSERT_EQUAL(count_op(t->u.grad, OP_COS), 1);
  done(t);
}

static const char *CUSTOM =
    "graph sq { input %x: f32[3] %y = mul(%x, %x) return %y }\n"
    "graph sq_vjp {\n"
    "  input %x: f32[3]\n"
    "  input %primal_output: f32[3]\n"
    "  input %d_output: f32[3]\n"
    "  %g = mul(%d_output, 3.0)\n"
    "  return %g\n"
    "}\n"
    "graph cube { input %x: f32[3] %y = mul(%x, mul(%x, %x)) return %y }\n"
    "graph f {\n"
    "  param %p: f32[3]\n"
    "  %a = custom_fn(%p, fwd=@sq, vjp=@sq_vjp)\n"
    "  %b = custom_fn(%p, fwd=@cube)\n"
    "  %s = reduce_sum(add(%a, %b))\n"
    "  return %s\n"
    "}\n";

static void test_custom_fn(void) {
  T *t = run(CUSTOM, NULL, 0, false);
  OK(t);
  /* the vjp body's constant 3 reaches the gradient graph; cube was
   * inlined (no custom_fn left for it) */
  CU_ASSERT_EQUAL(count_op(t->u.entry, OP_CUSTOM_FN), 2);
  CU_ASSERT_EQUAL(count_op(t->u.grad, OP_CUSTOM_FN), 1);
  bool three = false;
  for (int i = 0; i < t->u.grad->nnodes; i++) {
    Node *n = t->u.grad->nodes[i];
    if (n->op == OP_CONST && n->type.dt == DT_F32 && ir_const_get(n, 0) == 3)
      three = true;
  }
  CU_ASSERT_TRUE(three);
  done(t);
}

static const char *SCAN_SRC =
    "graph cell {\n"
    "  input %h: f32[4]\n"
    "  input %w: f32[4, 4]\n"
    "  input %x: f32[4]\n"
    "  %hw = reshape(matmul(reshape(%h, shape=[1, 4]), %w), shape=[4])\n"
    "  %n = tanh(add(%hw, %x))\n"
    "  return %n\n"
    "}\n"
    "graph rnn {\n"
    "  param %h0: f32[4]\n"
    "  param %w: f32[4, 4]\n"
    "  param %xs: f32["
    ;
static const char *SCAN_MID =
    ", 4]\n"
    "  %hT = scan(%h0, %w, %xs, body=@cell, num_bcast=1\n"
    ;
static const char *SCAN_TAIL =
    ")\n"
    "  %loss = reduce_sum(%hT)\n"
    "  return %loss\n"
    "}\n";

/* The RNN over xs: f32[len, 4] with extra scan attributes. */
static T *run_scan_len(long long len, const char *attrs) {
  char src[2048];
  snprintf(src, sizeof src, "%s%lld%s%s%s", SCAN_SRC, len, SCAN_MID, attrs,
           SCAN_TAIL);
  return run(src, NULL, 0, false);
}

static T *run_scan(const char *attrs) { return run_scan_len(6, attrs); }

/* Nodes of every graph of the module; nscan/ngather: how many are
 * scans (reverse=true ones in nrev) and gathers. */
static int module_nodes(const Module *m, int *nscan, int *nrev,
                        int *ngather) {
  int k = 0;
  *nscan = *nrev = *ngather = 0;
  for (int i = 0; i < m->ngraphs; i++) {
    const Graph *g = m->graphs[i];
    k += g->nnodes;
    *nscan += count_op(g, OP_SCAN);
    *ngather += count_op(g, OP_GATHER);
    for (int j = 0; j < g->nnodes; j++)
      if (g->nodes[j]->op == OP_SCAN)
        *nrev += ir_attr_bool(g->nodes[j], ATTR_REVERSE, false);
  }
  return k;
}

static void test_scan_plain(void) {
  T *t = run_scan("");
  OK(t);
  Graph *g = t->u.grad;
  CU_ASSERT_EQUAL(count_op(g, OP_SCAN), 2); /* forward + backward */
  CU_ASSERT_TRUE(ir_graph_find(t->m, "cell_ad_vjp") != NULL);
  /* the entry's scan is untouched */
  CU_ASSERT_EQUAL(count_op(t->u.entry, OP_SCAN), 1);
  for (int i = 0; i < t->u.entry->nnodes; i++)
    if (t->u.entry->nodes[i]->op == OP_SCAN)
      CU_ASSERT_EQUAL(ir_attr_int(t->u.entry->nodes[i], ATTR_NUM_BCAST, 0),
                      1);
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i]->op == OP_SCAN)
      CU_ASSERT_EQUAL(ir_attr_int(g->nodes[i], ATTR_NUM_BCAST, 0), 0);
  CU_ASSERT_EQUAL(g->nret, 4);
  done(t);
}

static void test_scan_checkpoints(void) {
  T *t = run_scan(", checkpoints=2");
  OK(t);
  Graph *g = t->u.grad;
  /* forward, the checkpoint scan (over the first 3-step segment, body
   * cell_ad_fwd3) and the backward scan over the 2 segments (body
   * cell_ad_rev3: a recomputing scan and a backward scan of steps) */
  CU_ASSERT_EQUAL(count_op(g, OP_SCAN), 3);
  Graph *r = ir_graph_find(t->m, "cell_ad_rev3");
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  CU_ASSERT_EQUAL(count_op(r, OP_SCAN), 2);
  CU_ASSERT_PTR_NOT_NULL(ir_graph_find(t->m, "cell_ad_fwd3"));
  /* the forward result is the untouched forward scan */
  CU_ASSERT_EQUAL(g->rets[0]->op, OP_REDUCE_SUM);
  CU_ASSERT_EQUAL(g->rets[0]->in[0]->op, OP_SCAN);
  CU_ASSERT_FALSE(ir_attr_bool(g->rets[0]->in[0], ATTR_SAVE_TRAJ, true));
  done(t);
}

/* Reverse mode builds nothing whose size depends on the scan length:
 * the backward scans run with reverse=true (no gather, no index
 * table); the same number of nodes for 6 and 10^7 steps, and
 * O(log L) subgraphs with checkpoints. (Lengths up to 2^31 under time
 * and memory limits: gradcheck.scan_length.) */
static void test_scan_length(void) {
  const char *attrs[] = {"", ", save_trajectory=true"};
  for (int a = 0; a < 2; a++) {
    int n[2], s, r, gth;
    for (int k = 0; k < 2; k++) {
      T *t = run_scan_len(k ? 10000000LL : 6, attrs[a]);
      OK(t);
      n[k] = module_nodes(t->m, &s, &r, &gth);
      CU_ASSERT_EQUAL(gth, 0);
      CU_ASSERT_EQUAL(s, 3); /* forward (entry), forward, backward */
      CU_ASSERT_EQUAL(r, 1);
      done(t);
    }
    CU_ASSERT_EQUAL(n[0], n[1]);
  }
  /* 4096 = 2 segments of 2048, halved down to 4: 2 subgraphs per
   * level (the gather-based version made 20 nodes per 4 steps) */
  T *t = run_scan_len(4096, ", checkpoints=3");
  OK(t);
  int s, r, gth, n = module_nodes(t->m, &s, &r, &gth);
  CU_ASSERT_EQUAL(gth, 0);
  CU_ASSERT_TRUE(t->m->ngraphs <= 2 * 12 + 4);
  CU_ASSERT_TRUE(n < 1000);
  done(t);
}

/* A reverse=true scan: its final carry is row 0 of the trajectory
 * scan_prep makes; the backward scan runs forward. */
static void test_scan_reverse(void) {
  T *t = run_scan(", reverse=true");
  OK(t);
  Graph *g = t->u.grad;
  int s, r, gth;
  module_nodes(t->m, &s, &r, &gth);
  CU_ASSERT_EQUAL(s, 3);
  CU_ASSERT_EQUAL(r, 2); /* the entry's and the gradient's forward */
  bool row0 = false;
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = g->nodes[i];
    if (n->name && !strcmp(n->name, "hT") && n->in[0]->op == OP_NARROW)
      row0 = ir_attr_int(n->in[0], ATTR_START, -1) == 0;
  }
  CU_ASSERT_TRUE(row0);
  done(t);
}

/* fake quantization: the gradient graph holds its backward ops */
static const char *FQ =
    "graph f {\n"
    "  param %x: f32[2, 4]\n"
    "  param %g: f32[4]\n"
    "  param %s: f32[4]\n"
    "  %q = fake_quantize_lsq(%g, %s, axis=0)\n"
    "  %y = mul(fake_quantize(%x, ste=tanh), %q)\n"
    "  %l = reduce_sum(%y)\n"
    "  return %l\n"
    "}\n";

static void test_fake_quantize(void) {
  T *t = run(FQ, NULL, 0, false);
  OK(t);
  Graph *g = t->u.grad;
  CU_ASSERT_EQUAL(count_op(g, OP_FAKE_QUANTIZE_BACKWARD), 1);
  CU_ASSERT_EQUAL(count_op(g, OP_FAKE_QUANTIZE_LSQ_BACKWARD_X), 1);
  CU_ASSERT_EQUAL(count_op(g, OP_FAKE_QUANTIZE_LSQ_BACKWARD_SCALE), 1);
  done(t);
}

/* narrow VJPs summed: zeros merged away by simplify */
static const char *NARROW =
    "graph f {\n"
    "  param %x: f32[6]\n"
    "  %a = narrow(%x, axis=0, start=0, len=3)\n"
    "  %b = narrow(%x, axis=0, start=3, len=3)\n"
    "  %s = reduce_sum(mul(%a, %b))\n"
    "  return %s\n"
    "}\n";

/* the same in bf16, whose zeros the VJP makes as a cast of f32 zeros;
 * three pieces (a transformer's q, k and v) */
static const char *NARROW_BF16 =
    "graph f {\n"
    "  param %x: bf16[2, 9]\n"
    "  %a = narrow(%x, axis=1, start=0, len=3)\n"
    "  %b = narrow(%x, axis=1, start=3, len=3)\n"
    "  %c = narrow(%x, axis=1, start=6, len=3)\n"
    "  %s = reduce_sum(cast(mul(mul(%a, %b), %c), to=f32))\n"
    "  return %s\n"
    "}\n";

static void test_simplify_narrow(void) {
  const char *src[2] = {NARROW, NARROW_BF16};
  for (int i = 0; i < 2; i++) {
    T *t = run(src[i], NULL, 0, false);
    OK(t);
    Graph *g = t->u.grad;
    CU_ASSERT_EQUAL(count_op(g, OP_CONCAT), 1);
    CU_ASSERT_EQUAL(count_op(g, OP_ADD), 0);
    done(t);
  }
}

static const char *PROD =
    "graph f {\n"
    "  param %x: f32[2, 3, 4]\n"
    "  %p = reduce_prod(%x, axes=[0, 2])\n"
    "  %m = reduce_max(%x, axes=[1], keep_dims=true)\n"
    "  %s = add(reduce_sum(%p), reduce_sum(%m))\n"
    "  return %s\n"
    "}\n";

/* reduce_prod's partials are prefix * suffix products of the other
 * elements: the forward's product is the only reduce_prod, and there is
 * no division or zero test to make second derivatives lose terms */
static void test_reductions(void) {
  T *t = run(PROD, NULL, 0, false);
  OK(t);
  CU_ASSERT_EQUAL(count_op(t->u.grad, OP_REDUCE_PROD), 1);
  CU_ASSERT_EQUAL(count_op(t->u.grad, OP_DIV), 0);
  CU_ASSERT(count_op(t->u.grad, OP_MUL) >= 4);
  done(t);
}

int main(void) {
  CU_initialize_registry();
  CU_pSuite s = CU_add_suite("grad", NULL, NULL);
  CU_add_test(s, "signature", test_signature);
  CU_add_test(s, "wrt_names", test_wrt_names);
  CU_add_test(s, "grad_outputs", test_grad_outputs);
  CU_add_test(s, "wrt_intermediate", test_wrt_intermediate);
  CU_add_test(s, "cast_complex", test_cast_complex);
  CU_add_test(s, "missing_listed", test_missing_listed);
  CU_add_test(s, "missing_zero", test_missing_zero);
  CU_add_test(s, "bad_wrt", test_bad_wrt);
  CU_add_test(s, "while_needs_max", test_while_needs_max);
  CU_add_test(s, "while_unrolled", test_while_unrolled);
  CU_add_test(s, "if_to_where", test_if_to_where);
  CU_add_test(s, "custom_fn", test_custom_fn);
  CU_add_test(s, "scan_plain", test_scan_plain);
  CU_add_test(s, "scan_checkpoints", test_scan_checkpoints);
  CU_add_test(s, "scan_length", test_scan_length);
  CU_add_test(s, "scan_reverse", test_scan_reverse);
  CU_add_test(s, "fake_quantize", test_fake_quantize);
  CU_add_test(s, "simplify_narrow", test_simplify_narrow);
  CU_add_test(s, "reductions", test_reductions);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned f = CU_get_number_of_failures();
  CU_cleanup_registry();
  return f ? 1 : 0;
}
