/* test_dim.c: dynamic dimensions (ir/dim.c, docs/dynamic-dims.md): the
 * size-expression algebra (canonical form, interning, exact division,
 * limits, bounds, text) and the shape rules that carry dynamic sizes
 * symbolically. */
#include "test_shape_util.h"

static int64_t sym(const char *name, int64_t bound) {
  int64_t d = 0;
  CU_ASSERT_EQUAL(dim_sym(F.c, name, bound, &d), DIM_OK);
  return d;
}

static int64_t add(int64_t a, int64_t b) {
  int64_t d = 0;
  CU_ASSERT_EQUAL(dim_add(F.c, a, b, &d), DIM_OK);
  return d;
}

static int64_t mul(int64_t a, int64_t b) {
  int64_t d = 0;
  CU_ASSERT_EQUAL(dim_mul(F.c, a, b, &d), DIM_OK);
  return d;
}

static void want_str(int64_t d, const char *want, int line) {
  char buf[96];
  dim_str(d, buf, sizeof buf);
  if (strcmp(buf, want))
    fprintf(stderr, "\n  line %d: got %s, want %s\n", line, buf, want);
  CU_ASSERT_STRING_EQUAL(buf, want);
}
#define STR(d, want) want_str(d, want, __LINE__)

SH_TEST(t_canonical) {
  int64_t a = sym("a", 0), b = sym("b", 0);
  CU_ASSERT(a < 0 && b < 0 && a != b);
  CU_ASSERT_EQUAL(sym("a", 0), a); /* interned: one number per size */
  CU_ASSERT_EQUAL(add(a, b), add(b, a));
  CU_ASSERT_EQUAL(mul(a, b), mul(b, a));
  STR(add(b, a), "?a+?b");
  STR(add(a, a), "2*?a");
  STR(mul(b, a), "?a*?b");
  STR(add(mul(a, b), 3), "?a*?b+3");
  STR(mul(add(a, b), 2), "2*?a+2*?b");
  STR(mul(add(a, 1), add(b, 1)), "?a+?a*?b+?b+1");
  CU_ASSERT_EQUAL(add(a, 0), a);
  CU_ASSERT_EQUAL(mul(a, 1), a);
  CU_ASSERT_EQUAL(mul(a, 0), 0);
  CU_ASSERT_EQUAL(add(3, 4), 7); /* static stays static */
  CU_ASSERT_EQUAL(mul(6, 7), 42);
  /* (a + b) * 2 built two ways is one number */
  CU_ASSERT_EQUAL(mul(add(a, b), 2), add(add(a, b), add(b, a)));
  CU_ASSERT(dim_valid(a) && dim_valid(5) && !dim_valid(-1) &&
            !dim_valid(DIM_DYN_BASE - 1000));
}

SH_TEST(t_divide) {
  int64_t a = sym("a", 0), b = sym("b", 0), d = 0;
  CU_ASSERT_EQUAL(dim_div(F.c, mul(a, 784), 784, &d), DIM_OK);
  CU_ASSERT_EQUAL(d, a);
  CU_ASSERT_EQUAL(dim_div(F.c, mul(mul(a, b), 6), mul(b, 3), &d), DIM_OK);
  STR(d, "2*?a");
  CU_ASSERT_EQUAL(dim_div(F.c, add(mul(a, 4), mul(b, 8)), 4, &d), DIM_OK);
  STR(d, "?a+2*?b");
  CU_ASSERT_EQUAL(dim_div(F.c, add(a, b), add(a, b), &d), DIM_OK);
  CU_ASSERT_EQUAL(d, 1);
  CU_ASSERT_EQUAL(dim_div(F.c, 24, 6, &d), DIM_OK);
  CU_ASSERT_EQUAL(d, 4);
  d = 99;
  CU_ASSERT_EQUAL(dim_div(F.c, mul(a, 4), 3, &d), DIM_INEXACT);
  CU_ASSERT_EQUAL(dim_div(F.c, add(a, b), a, &d), DIM_INEXACT);
  CU_ASSERT_EQUAL(dim_div(F.c, a, b, &d), DIM_INEXACT);
  CU_ASSERT_EQUAL(dim_div(F.c, mul(a, b), add(a, b), &d), DIM_INEXACT);
  CU_ASSERT_EQUAL(dim_div(F.c, a, 0, &d), DIM_INEXACT);
  CU_ASSERT_EQUAL(dim_div(F.c, 25, 5 * 2, &d), DIM_INEXACT);
  CU_ASSERT_EQUAL(d, 99); /* untouched on failure */
}

SH_TEST(t_limits_bounds) {
  int64_t d = 0, p = 1;
  const char *names[] = {"p", "q", "r", "s", "t", "u", "v", "w", "x"};
  for (int i = 0; i < 8; i++) p = mul(p, sym(names[i], 0));
  CU_ASSERT_EQUAL(dim_mul(F.c, p, sym("x", 0), &d), DIM_TOO_COMPLEX);
  int64_t s = 0;
  for (int i = 0; i < 8; i++) s = add(s, sym(names[i], 0));
  CU_ASSERT_EQUAL(dim_add(F.c, s, sym("x", 0), &d), DIM_TOO_COMPLEX);
  CU_ASSERT_EQUAL(dim_add(F.c, s, sym("p", 0), &d), DIM_OK); /* merges */
  CU_ASSERT_EQUAL(dim_mul(F.c, sym("p", 0), RLX_MAX_ELEMS, &d), DIM_OK);
  CU_ASSERT_EQUAL(dim_mul(F.c, d, 2, &d), DIM_OVERFLOW);
  CU_ASSERT_EQUAL(dim_add(F.c, RLX_MAX_ELEMS, 1, &d), DIM_OVERFLOW);
  /* bounds: given once, repeated equal, or absent; never two */
  int64_t a = sym("a", 8), b = sym("b", 0);
  CU_ASSERT_EQUAL(sym("a", 8), a);
  CU_ASSERT_EQUAL(sym("a", 0), a);
  CU_ASSERT_EQUAL(dim_sym(F.c, "a", 9, &d), DIM_BOUND_CLASH);
  CU_ASSERT_EQUAL(dim_sym_bound(F.c, "a"), 8);
  CU_ASSERT_EQUAL(dim_bound(add(mul(a, 2), b)), 16 + DIM_NOMINAL);
  CU_ASSERT_FALSE(dim_is_bounded(add(mul(a, 2), b)));
  CU_ASSERT_TRUE(dim_is_bounded(mul(a, 2)));
  CU_ASSERT_EQUAL(sym("b", 4), b); /* a later bound names the same size */
  CU_ASSERT_EQUAL(dim_bound(add(mul(a, 2), mul(a, b))), 16 + 32);
  CU_ASSERT_EQUAL(dim_bound(7), 7);
  char buf[64];
  CU_ASSERT_STRING_EQUAL(dim_str_ex(add(a, b), true, buf, sizeof buf),
                         "?a<=8+?b<=4");
  Type t = {.dt = DT_F32, .rank = 3, .dims = {a, 3, b}};
  CU_ASSERT_EQUAL(type_numel_dim(F.c, &t, &d), DIM_OK);
  STR(d, "3*?a*?b");
  CU_ASSERT_STRING_EQUAL(type_str(&t, buf, sizeof buf), "f32[?a, 3, ?b]");
  CU_ASSERT_STRING_EQUAL(type_str_ex(&t, true, buf, sizeof buf),
                         "f32[?a<=8, 3, ?b<=4]");
  CU_ASSERT(!type_is_static(&t) && type_first_dynamic(&t) == 0);
}

/* Each Ctx has its own table; printing follows the newest live one. */
SH_TEST(t_tables) {
  int64_t a = sym("a", 0);
  Ctx *c2 = ctx_new("other.rlx", NULL, 0);
  int64_t z = 0;
  CU_ASSERT_EQUAL(dim_sym(c2, "zz", 0, &z), DIM_OK);
  CU_ASSERT_EQUAL(z, a); /* the first size of each table */
  STR(z, "?zz");
  ctx_free(c2);
  STR(a, "?a");
}

/* A type with dims d[] (static or dynamic). */
static Node *dyn_in(DType dt, int rank, const int64_t *d) {
  return ir_arg_new(F.c, F.g, OP_INPUT, NULL, type_make(dt, rank, d),
                    (Loc){2, 3});
}
#define DIN(dt, ...)                                                   \
  dyn_in(DT_##dt, (int)(sizeof((int64_t[]){__VA_ARGS__}) / 8),         \
         (int64_t[]){__VA_ARGS__})

SH_TEST(t_rules) {
  int64_t b = sym("b", 0), t = sym("t", 0), n = sym("n", 0);
  Node *x = DIN(F32, b, 784), *w = DIN(F32, 784, 16);
  OK(MK(MATMUL, x, w), "f32[?b, 16]");
  OK(MK(ADD, DIN(F32, b, 1), DIN(F32, 1, 4)), "f32[?b, 4]");
  OK(MK(MUL, x, DIN(F32, b, 784)), "f32[?b, 784]");
  BAD(MK(ADD, x, DIN(F32, n, 784)), "dimension 0: ?b vs ?n");
  Node *r = MK(REDUCE_SUM, x);
  INTS(r, AXES, 0);
  OK(r, "f32[784]");
  r = MK(REDUCE_MAX, x);
  INTS(r, AXES, 0);
  BOOL_(r, KEEP_DIMS, true);
  OK(r, "f32[1, 784]");
  OK(MK(SOFTMAX, x), "f32[?b, 784]");
  Node *c = MK(CONCAT, DIN(F32, b, 4), DIN(F32, n, 4), DIN(F32, b, 4));
  OK(c, "f32[2*?b+?n, 4]");
  c = MK(CONCAT, DIN(F32, 4, b), DIN(F32, 4, 3));
  INT(c, AXIS, 1);
  OK(c, "f32[4, ?b+3]");
  Node *s = MK(RESHAPE, DIN(F32, t, b, 16));
  INTS(s, SHAPE, -1, 16);
  OK(s, "f32[?b*?t, 16]");
  s = MK(RESHAPE, DIN(F32, b, 28, 28));
  INTS(s, SHAPE, -1, 784);
  OK(s, "f32[?b, 784]");
  s = MK(RESHAPE, DIN(F32, b, 6));
  INTS(s, SHAPE, 3, -1);
  OK(s, "f32[3, 2*?b]");
  s = MK(RESHAPE, DIN(F32, b, 6));
  INTS(s, SHAPE, -1, 4);
  BAD(s, "cannot infer -1: 6*?b elements do not divide into 4");
  Node *tr = MK(TRANSPOSE, DIN(F32, b, t, 8));
  INTS(tr, PERM, 2, 0, 1);
  OK(tr, "f32[8, ?b, ?t]");
  OK(MK(GATHER, w, DIN(I64, b, t)), "f32[?b, ?t, 16]");
  OK(MK(SOFTMAX_CROSS_ENTROPY, DIN(F32, b, 10), DIN(I32, b)), "f32[?b]");
  Node *q = DIN(F32, b, t, 32);
  Node *at = MK(ATTENTION, q, DIN(F32, b, n, 32), DIN(F32, b, n, 32));
  INT(at, HEADS, 4);
  OK(at, "f32[?b, ?t, 32]");
  Node *v4 = DIN(F32, 4), *img = DIN(F32, b, 4, 3, 3);
  Node *gn = MK(GROUP_NORM, img, v4, v4);
  INT(gn, GROUPS, 2);
  OK(gn, "f32[?b, 4, 3, 3]");
  OK(MK(BATCH_NORM_INFERENCE, img, v4, v4, v4, v4), "f32[?b, 4, 3, 3]");
  gn = MK(GROUP_NORM, DIN(F32, 2, n, 3), v4, v4);
  INT(gn, GROUPS, 2);
  BAD(gn, "group_norm: axis 1 of operand 0 is dynamic (?n); group_norm "
      "needs a static size there (the channels are split into groups)");
  /* conv2d's and the pools' backward ops: the batch only */
  Node *w3 = DIN(F32, 4, 4, 3, 3), *dy = DIN(F32, b, 4, 1, 1);
  Node *bi = MK(CONV2D_BACKWARD_INPUT, dy, w3);
  INTS(bi, SHAPE, b, 4, 3, 3);
  OK(bi, "f32[?b, 4, 3, 3]");
  bi = MK(CONV2D_BACKWARD_INPUT, dy, w3);
  INTS(bi, SHAPE, b, n, 3, 3);
  BAD(bi, "conv2d_backward_input: axis 1 of shape is dynamic (?n); "
      "conv2d_backward_input needs a static size there (the channels are "
      "split into groups)");
  Node *bw = MK(CONV2D_BACKWARD_WEIGHT, img, dy);
  INTS(bw, SHAPE, 4, 4, 3, 3);
  OK(bw, "f32[4, 4, 3, 3]");
  Node *mp = MK(MAX_POOL2D, img);
  INTS(mp, KERNEL, 3, 3);
  OK(mp, "f32[?b, 4, 1, 1]");
  Node *mb = MK(MAX_POOL2D_BACKWARD, img, dy);
  INTS(mb, KERNEL, 3, 3);
  OK(mb, "f32[?b, 4, 3, 3]");
  Node *ab = MK(AVG_POOL2D_BACKWARD, dy);
  INTS(ab, SHAPE, b, 4, 3, 3);
  INTS(ab, KERNEL, 3, 3);
  OK(ab, "f32[?b, 4, 3, 3]");
  Node *gb = MK(GROUP_NORM_BACKWARD_INPUT, img, v4, v4, img);
  INT(gb, GROUPS, 2);
  OK(gb, "f32[?b, 4, 3, 3]");
  Node *bb = MK(BATCH_NORM_INFERENCE_BACKWARD_INPUT, img, v4, v4, v4, v4, img);
  OK(bb, "f32[?b, 4, 3, 3]");
  gb = MK(GROUP_NORM_BACKWARD_GAMMA, img, v4, v4, img);
  INT(gb, GROUPS, 2);
  OK(gb, "f32[4]");
  OK(MK(BATCH_NORM_INFERENCE_BACKWARD_BETA, img, v4, v4, v4, v4, img),
     "f32[4]");
  Node *nw = MK(NARROW, x);
  INT(nw, AXIS, 0);
  INT(nw, START, 0);
  INT(nw, LEN, 1);
  BAD(nw, "narrow: axis 0 of operand 0 is dynamic (?b); narrow needs a "
      "static size there");
  BAD(MK(DENSE_SOLVE, DIN(F32, n, n), DIN(F32, n)),
      "dense_solve: axis 1 of operand 0 is dynamic (?n); dense_solve needs "
      "a static size there (N");
  OK(MK(BATCHED_DENSE_SOLVE, DIN(F32, b, 3, 3), DIN(F32, b, 3, t)),
     "f32[?b, 3, ?t]");
  OK(MK(FFT, DIN(C64, 2, b, 8)), "c64[2, ?b, 8]");
  BAD(MK(FFT, DIN(C64, 8, b)), "fft: axis 1 of operand 0 is dynamic (?b); "
      "fft needs a static size there (the transform length");
  OK(MK(COMPLEX_NORM_SQ, DIN(C64, b, 8)), "f32[?b, 8]");
  OK(MK(LOG_MEL, DIN(F32, b, t, 9), DIN(F32, 9, 4)), "f32[?b, ?t, 4]");
  OK(MK(GROUPED_MATMUL, DIN(F32, t, 6), DIN(F32, 3, 6, 5), DIN(I32, t)),
     "f32[?t, 5]");
  /* the result of a rule feeds the next: one number for equal sizes */
  Node *m = MK(MATMUL, x, w);
  OK(m, "f32[?b, 16]");
  Node *y = MK(MATMUL, DIN(F32, b, 784), w);
  OK(y, "f32[?b, 16]");
  CU_ASSERT(type_eq(&m->type, &y->type));
}

int main(void) {
  static const ShTest tests[] = {
      {"canonical", t_canonical}, {"divide", t_divide},
      {"limits_bounds", t_limits_bounds}, {"tables", t_tables},
      {"rules", t_rules}, {NULL, NULL}};
  return sh_run("dim", tests);
}
