/* test_shape_control.c: shape inference for scan, if, while,
 * custom_fn (language.md 6.6) and scan_backward[_xs]: full subgraph
 * signature checks. */
#include "test_shape_util.h"

static Graph *sub(const char *name) {
  return ir_graph_new(F.c, F.m, name, (Loc){1, 1});
}

static void rets(Graph *g, Node *a, Node *b) {
  Node *r[2] = {a, b};
  ir_set_rets(F.c, g, r, b ? 2 : 1);
}

/* A splat zero constant of type s in g. */
static Node *konst(Graph *g, const char *s) {
  return ir_const_new(F.c, g, ty(s), NULL, true, (Loc){1, 1});
}

/* body(h: carry, [b: bcast], x: slice) -> h */
static Graph *scan_body(const char *carry, const char *bc, const char *x) {
  Graph *g = sub("step");
  Node *h = arg_in(g, "h", carry);
  if (bc) arg_in(g, "b", bc);
  if (x) arg_in(g, "x", x);
  rets(g, h, NULL);
  return g;
}

SH_TEST(t_scan) {
  Node *init = IN_("f32[4]"), *xs = IN_("f32[7, 3]"), *b = IN_("f32[2]");
  Node *n = MK(SCAN, init, xs);
  GRAPH(n, BODY, scan_body("f32[4]", NULL, "f32[3]"));
  OK(n, "f32[4]");
  n = MK(SCAN, init, b, xs);
  GRAPH(n, BODY, scan_body("f32[4]", "f32[2]", "f32[3]"));
  INT(n, NUM_BCAST, 1);
  BOOL_(n, SAVE_TRAJ, true);
  INT(n, CHECKPOINTS, 3);
  OK(n, "f32[7, 4]");
  n = MK(SCAN, init);
  GRAPH(n, BODY, scan_body("f32[4]", NULL, NULL));
  BAD(n, "scan: length is required when there are no per-step operands");
  n = MK(SCAN, init);
  GRAPH(n, BODY, scan_body("f32[4]", NULL, NULL));
  INT(n, LENGTH, 5);
  BOOL_(n, SAVE_TRAJ, true);
  OK(n, "f32[5, 4]");
  n = MK(SCAN, init, xs);
  GRAPH(n, BODY, scan_body("f32[4]", NULL, "f32[3]"));
  INT(n, LENGTH, 6);
  BAD(n, "scan: per-step operand 1 has 7 steps, expected 6 (length)");
  n = MK(SCAN, init, xs, IN_("f32[6]"));
  GRAPH(n, BODY, scan_body("f32[4]", NULL, "f32[3]"));
  BAD(n, "per-step operand 2 has 6 steps, expected 7");
  n = MK(SCAN, init, xs);
  GRAPH(n, BODY, scan_body("f32[5]", NULL, "f32[3]"));
  BAD(n, "scan: body @step input 0 (%h) has type f32[5], expected f32[4]");
  n = MK(SCAN, init, xs);
  GRAPH(n, BODY, scan_body("f32[4]", NULL, "f32[7, 3]"));
  BAD(n, "body @step input 1 (%x) has type f32[7, 3], expected f32[3]");
  n = MK(SCAN, init, b, xs);
  GRAPH(n, BODY, scan_body("f32[4]", NULL, "f32[3]"));
  INT(n, NUM_BCAST, 1);
  BAD(n, "body @step takes 2 inputs, expected 3");
  n = MK(SCAN, init, b, xs);
  GRAPH(n, BODY, scan_body("f32[4]", NULL, "f32[3]"));
  BAD(n, "per-step operand 2 has 7 steps, expected 2 (length)");
  n = MK(SCAN, init, b, xs);
  GRAPH(n, BODY, scan_body("f32[4]", "f32[3]", "f32[3]"));
  INT(n, NUM_BCAST, 1);
  BAD(n, "input 1 (%b) has type f32[3], expected f32[2]");
}

SH_TEST(t_scan_body_rets) {
  Node *init = IN_("f32[4]"), *xs = IN_("f32[7, 3]");
  Node *n;
  Graph *g = sub("wrong_ret");
  arg_in(g, "h", "f32[4]");
  rets(g, arg_in(g, "x", "f32[3]"), NULL);
  n = MK(SCAN, init, xs);
  GRAPH(n, BODY, g);
  BAD(n, "body @wrong_ret return value 0 has type f32[3], expected f32[4]");
  g = sub("two_rets");
  Node *h = arg_in(g, "h", "f32[4]");
  arg_in(g, "x", "f32[3]");
  rets(g, h, h);
  n = MK(SCAN, init, xs);
  GRAPH(n, BODY, g);
  BAD(n, "body @two_rets returns 2 values, expected 1");
  n = MK(SCAN, init, xs);
  GRAPH(n, BODY, scan_body("f32[4]", NULL, "f32[3]"));
  INT(n, CHECKPOINTS, 7);
  BAD(n, "checkpoints must be in [0, 6], got 7");
  n = MK(SCAN, init, xs);
  GRAPH(n, BODY, scan_body("f32[4]", NULL, "f32[3]"));
  INT(n, NUM_BCAST, 2);
  BAD(n, "num_bcast must be in [0, 1], got 2");
  n = MK(SCAN, init, IN_("f32[]"));
  GRAPH(n, BODY, scan_body("f32[4]", NULL, "f32[3]"));
  BAD(n, "per-step operand 1 must have rank >= 1");
  n = MK(SCAN, init, IN_("f32[0, 3]"));
  GRAPH(n, BODY, scan_body("f32[4]", NULL, "f32[3]"));
  BAD(n, "length must be >= 1, got 0");
  BAD(MK(SCAN, init, xs), "scan: missing attribute 'body'");
  /* a body whose return failed inference: silent */
  g = sub("broken");
  Node *hb = arg_in(g, "h", "f32[4]");
  Node *r = ir_node_new(F.c, g, OP_RELU, &hb, 1, (Loc){1, 1});
  rets(g, r, NULL); /* r stays DT_INVALID: never inferred */
  n = MK(SCAN, init);
  INT(n, LENGTH, 2);
  GRAPH(n, BODY, g);
  int before = F.c->nerrors;
  CU_ASSERT(!shape_infer(F.c, n) && F.c->nerrors == before);
}

/* vjp body (h, x, dh) -> (dh, dx) */
static Graph *scan_vjp_body(const char *dx_type) {
  Graph *g = sub("step_vjp");
  arg_in(g, "h", "f32[4]");
  Node *x = arg_in(g, "x", "f32[3]");
  Node *dh = arg_in(g, "dh", "f32[4]");
  (void)x;
  rets(g, dh, konst(g, dx_type));
  return g;
}

SH_TEST(t_scan_backward) {
  Node *init = IN_("f32[4]"), *xs = IN_("f32[7, 3]");
  Node *traj = IN_("f32[7, 4]");
  Node *n = MK(SCAN_BACKWARD, init, xs, traj, traj);
  GRAPH(n, BODY, scan_vjp_body("f32[3]"));
  OK(n, "f32[4]");
  n = MK(SCAN_BACKWARD_XS, init, xs, traj, traj);
  GRAPH(n, BODY, scan_vjp_body("f32[3]"));
  GRAPH(n, FWD, scan_body("f32[4]", NULL, "f32[3]"));
  OK(n, "f32[7, 3]");
  n = MK(SCAN_BACKWARD_XS, init, xs, traj, traj);
  GRAPH(n, BODY, scan_vjp_body("f32[3]"));
  INT(n, K, 1);
  BAD(n, "scan_backward_xs: k must be in [0, 0], got 1");
  n = MK(SCAN_BACKWARD, init, xs, traj, traj);
  GRAPH(n, BODY, scan_vjp_body("f32[2]"));
  BAD(n, "body @step_vjp return value 1 has type f32[2], expected f32[3]");
  n = MK(SCAN_BACKWARD, init, xs, IN_("f32[6, 4]"), traj);
  GRAPH(n, BODY, scan_vjp_body("f32[3]"));
  BAD(n, "has 7 steps, expected 6");
  n = MK(SCAN_BACKWARD, init, xs, traj, IN_("f32[7, 5]"));
  GRAPH(n, BODY, scan_vjp_body("f32[3]"));
  BAD(n, "trajectory cotangent has type f32[7, 5], expected f32[7, 4]");
  n = MK(SCAN_BACKWARD, init, xs, traj, traj);
  GRAPH(n, BODY, scan_vjp_body("f32[3]"));
  GRAPH(n, FWD, scan_body("f32[5]", NULL, "f32[3]"));
  BAD(n, "fwd @step input 0 (%h) has type f32[5], expected f32[4]");
  n = MK(SCAN_BACKWARD, init, xs, traj, traj);
  GRAPH(n, BODY, scan_vjp_body("f32[3]"));
  INT(n, CHECKPOINTS, 2);
  BAD(n, "checkpoints=2 needs fwd (the forward step");
}

static Graph *branch(const char *name, const char *a, const char *b,
                     int ret) {
  Graph *g = sub(name);
  Node *x = arg_in(g, "a", a);
  Node *y = b ? arg_in(g, "b", b) : NULL;
  rets(g, ret ? y : x, NULL);
  return g;
}

SH_TEST(t_if) {
  Node *p = IN_("bool[]"), *a = IN_("f32[3]"), *b = IN_("i32[2]");
  Node *n = MK(IF, p, a, b);
  GRAPH(n, THEN, branch("t", "f32[3]", "i32[2]", 0));
  GRAPH(n, ELSE, branch("e", "f32[3]", "i32[2]", 0));
  OK(n, "f32[3]");
  n = MK(IF, IN_("f32[]"), a, b);
  GRAPH(n, THEN, branch("t", "f32[3]", "i32[2]", 0));
  GRAPH(n, ELSE, branch("e", "f32[3]", "i32[2]", 0));
  OK(n, "f32[3]");
  n = MK(IF, p, a, b);
  GRAPH(n, THEN, branch("t", "f32[3]", "i32[2]", 0));
  GRAPH(n, ELSE, branch("e", "f32[3]", "i32[2]", 1));
  BAD(n, "if: then @t returns f32[3] but else @e returns i32[2]");
  n = MK(IF, IN_("bool[1]"), a, b);
  GRAPH(n, THEN, branch("t", "f32[3]", "i32[2]", 0));
  GRAPH(n, ELSE, branch("e", "f32[3]", "i32[2]", 0));
  BAD(n, "pred must be a rank-0 bool or real value, got bool[1]");
  n = MK(IF, p, a);
  GRAPH(n, THEN, branch("t", "f32[3]", "i32[2]", 0));
  GRAPH(n, ELSE, branch("e", "f32[3]", "i32[2]", 0));
  BAD(n, "then @t takes 2 inputs, expected 1");
  n = MK(IF, p, a, b);
  GRAPH(n, THEN, branch("t", "f32[3]", "i32[2]", 0));
  GRAPH(n, ELSE, branch("e", "f32[3]", "i64[2]", 0));
  BAD(n, "else @e input 1 (%b) has type i64[2], expected i32[2]");
  n = MK(IF, p, a, b);
  GRAPH(n, THEN, branch("t", "f32[3]", "i32[2]", 0));
  BAD(n, "if: missing attribute 'else'");
}

SH_TEST(t_while) {
  Node *i = IN_("i32[]"), *x = IN_("f32[3]");
  Graph *cond = sub("cond");
  Node *ci = arg_in(cond, "i", "i32[]");
  arg_in(cond, "x", "f32[3]");
  rets(cond, ci, NULL);
  Graph *body = sub("body");
  Node *bi = arg_in(body, "i", "i32[]"), *bx = arg_in(body, "x", "f32[3]");
  rets(body, bi, bx);
  Node *n = MK(WHILE, i, x);
  GRAPH(n, COND, cond);
  GRAPH(n, BODY, body);
  INT(n, MAX_ITERS, 10);
  OK(n, "i32[]");
  n = MK(WHILE, x, i);
  GRAPH(n, COND, cond);
  GRAPH(n, BODY, body);
  BAD(n, "while: cond @cond input 0 (%i) has type i32[], expected f32[3]");
  Graph *c2 = sub("cond2");
  arg_in(c2, "i", "i32[]");
  rets(c2, arg_in(c2, "x", "f32[3]"), NULL);
  n = MK(WHILE, i, x);
  GRAPH(n, COND, c2);
  GRAPH(n, BODY, body);
  BAD(n, "cond @cond2 must return a rank-0 bool or real value, got f32[3]");
  Graph *b2 = sub("body2");
  Node *b2i = arg_in(b2, "i", "i32[]");
  arg_in(b2, "x", "f32[3]");
  rets(b2, b2i, NULL);
  n = MK(WHILE, i, x);
  GRAPH(n, COND, cond);
  GRAPH(n, BODY, b2);
  BAD(n, "body @body2 returns 1 value, expected 2");
  Graph *b3 = sub("body3");
  Node *b3i = arg_in(b3, "i", "i32[]");
  arg_in(b3, "x", "f32[3]");
  rets(b3, b3i, b3i);
  n = MK(WHILE, i, x);
  GRAPH(n, COND, cond);
  GRAPH(n, BODY, b3);
  BAD(n, "body @body3 return value 1 has type i32[], expected f32[3]");
  n = MK(WHILE, i, x);
  GRAPH(n, COND, cond);
  GRAPH(n, BODY, body);
  INT(n, MAX_ITERS, -1);
  BAD(n, "max_iterations must be >= 0, got -1");
}

/* fwd(a: f32[3], b: f32[]) -> f32[3] */
static Graph *cfn_fwd(void) {
  Graph *g = sub("f");
  Node *a = arg_in(g, "a", "f32[3]");
  arg_in(g, "b", "f32[]");
  rets(g, a, NULL);
  return g;
}

static Graph *cfn_vjp(const char *n3, const char *n4, const char *gb) {
  Graph *g = sub("v");
  arg_in(g, "a", "f32[3]");
  arg_in(g, "b", "f32[]");
  arg_in(g, n3, "f32[3]");
  Node *d = arg_in(g, n4, "f32[3]");
  rets(g, d, konst(g, gb));
  return g;
}

SH_TEST(t_custom_fn) {
  Node *a = IN_("f32[3]"), *b = IN_("f32[]");
  Node *n = MK(CUSTOM_FN, a, b);
  GRAPH(n, FWD, cfn_fwd());
  OK(n, "f32[3]");
  n = MK(CUSTOM_FN, a, b);
  GRAPH(n, FWD, cfn_fwd());
  GRAPH(n, VJP, cfn_vjp("primal_output", "d_output", "f32[]"));
  OK(n, "f32[3]");
  n = MK(CUSTOM_FN, a, b);
  GRAPH(n, FWD, cfn_fwd());
  GRAPH(n, VJP, cfn_vjp("y", "d_output", "f32[]"));
  BAD(n, "custom_fn: vjp @v input 2 must be named %primal_output, got %y");
  n = MK(CUSTOM_FN, a, b);
  GRAPH(n, FWD, cfn_fwd());
  GRAPH(n, VJP, cfn_vjp("primal_output", "dy", "f32[]"));
  BAD(n, "input 3 must be named %d_output, got %dy");
  n = MK(CUSTOM_FN, a, b);
  GRAPH(n, FWD, cfn_fwd());
  GRAPH(n, VJP, cfn_vjp("primal_output", "d_output", "f32[1]"));
  BAD(n, "vjp @v return value 1 has type f32[1], expected f32[]");
  Graph *j = sub("j");
  arg_in(j, "a", "f32[3]");
  arg_in(j, "b", "f32[]");
  Node *t0 = arg_in(j, "tangent_0", "f32[3]");
  arg_in(j, "tangent_1", "f32[]");
  rets(j, t0, NULL);
  n = MK(CUSTOM_FN, a, b);
  GRAPH(n, FWD, cfn_fwd());
  GRAPH(n, JVP, j);
  OK(n, "f32[3]");
  Graph *j2 = sub("j2");
  arg_in(j2, "a", "f32[3]");
  arg_in(j2, "b", "f32[]");
  arg_in(j2, "tangent_0", "f32[3]");
  rets(j2, arg_in(j2, "tangent_x", "f32[]"), NULL);
  n = MK(CUSTOM_FN, a, b);
  GRAPH(n, FWD, cfn_fwd());
  GRAPH(n, JVP, j2);
  BAD(n, "jvp @j2 input 3 must be named %tangent_1, got %tangent_x");
  n = MK(CUSTOM_FN, b, a);
  GRAPH(n, FWD, cfn_fwd());
  BAD(n, "fwd @f input 0 (%a) has type f32[3], expected f32[]");
  n = MK(CUSTOM_FN, a);
  GRAPH(n, FWD, cfn_fwd());
  BAD(n, "fwd @f takes 2 inputs, expected 1");
  Graph *z = sub("zero");
  rets(z, konst(z, "f32[2]"), NULL);
  n = mk(OP_CUSTOM_FN, NULL, 0);
  GRAPH(n, FWD, z);
  OK(n, "f32[2]");
}

int main(void) {
  static const ShTest tests[] = {
      {"scan", t_scan}, {"scan_body_rets", t_scan_body_rets},
      {"scan_backward", t_scan_backward}, {"if", t_if},
      {"while", t_while}, {"custom_fn", t_custom_fn}, {NULL, NULL}};
  return sh_run("shape_control", tests);
}
