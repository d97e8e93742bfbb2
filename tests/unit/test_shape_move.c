/* test_shape_move.c: shape inference for shape and data movement ops
 * (language.md 6.4) and gather_backward. */
#include "test_shape_util.h"

SH_TEST(t_reshape) {
  Node *x = IN_("f32[2, 3, 4]");
  Node *n = MK(RESHAPE, x);
  INTS(n, SHAPE, 6, -1);
  OK(n, "f32[6, 4]");
  n = MK(RESHAPE, x);
  INTS(n, SHAPE, 24);
  OK(n, "f32[24]");
  n = MK(RESHAPE, IN_("f32[1]"));
  set_ints(n, ATTR_SHAPE, 0, NULL);
  OK(n, "f32[]");
  n = MK(RESHAPE, x);
  INTS(n, SHAPE, -1, -1);
  BAD(n, "reshape: shape has more than one -1");
  n = MK(RESHAPE, x);
  INTS(n, SHAPE, 5, -1);
  BAD(n, "cannot infer -1: 24 elements do not divide into 5");
  n = MK(RESHAPE, x);
  INTS(n, SHAPE, 0, -1);
  BAD(n, "cannot infer -1");
  n = MK(RESHAPE, x);
  INTS(n, SHAPE, 5, 5);
  BAD(n, "element count differs: f32[2, 3, 4] has 24, shape has 25");
  n = MK(RESHAPE, x);
  INTS(n, SHAPE, 4, -2, 3);
  BAD(n, "shape[1] = -2 is not a valid dimension");
  n = MK(RESHAPE, x);
  INTS(n, SHAPE, 1099511627776, 1099511627776, 0);
  BAD(n, "size overflow");
}

SH_TEST(t_transpose_expand) {
  Node *x = IN_("i32[2, 3, 4]");
  Node *n = MK(TRANSPOSE, x);
  INTS(n, PERM, 2, 0, 1);
  OK(n, "i32[4, 2, 3]");
  n = MK(TRANSPOSE, x);
  INTS(n, PERM, 0, 1);
  BAD(n, "transpose: perm has 2 entries, operand rank is 3");
  n = MK(TRANSPOSE, x);
  INTS(n, PERM, 0, 0, 1);
  BAD(n, "perm is not a permutation of [0, 3): entry 1 is 0");
  n = MK(TRANSPOSE, x);
  INTS(n, PERM, 0, 1, 3);
  BAD(n, "entry 2 is 3");
  n = MK(EXPAND, IN_("f32[3, 1]"));
  INTS(n, SHAPE, 2, 3, 5);
  OK(n, "f32[2, 3, 5]");
  n = MK(EXPAND, IN_("f32[]"));
  INTS(n, SHAPE, 4);
  OK(n, "f32[4]");
  n = MK(EXPAND, IN_("f32[3, 1]"));
  INTS(n, SHAPE, 2, 4, 5);
  BAD(n, "expand: cannot broadcast f32[3, 1] to f32[2, 4, 5] "
         "(dimension 1: 3 vs 4)");
  n = MK(EXPAND, IN_("f32[3, 1]"));
  INTS(n, SHAPE, 3);
  BAD(n, "target rank 1 is smaller than operand rank 2");
}

SH_TEST(t_concat_narrow) {
  Node *a = IN_("f32[2, 3]"), *b = IN_("f32[2, 5]");
  Node *n = MK(CONCAT, a, b, a);
  INT(n, AXIS, -1);
  OK(n, "f32[2, 11]");
  OK(MK(CONCAT, a), "f32[2, 3]");
  OK(MK(CONCAT, a, IN_("f32[4, 3]")), "f32[6, 3]");
  BAD(MK(CONCAT, a, b), "concat: operand 1 has shape f32[2, 5], expected "
                        "f32[2, 3] except along axis 0");
  BAD(MK(CONCAT, a, IN_("f32[2]")), "operand 1 has rank 1, expected 2");
  BAD(MK(CONCAT, a, IN_("f64[2, 3]")), "dtype mismatch: f32 vs f64");
  BAD(MK(CONCAT, IN_("f32[]")), "rank >= 1");
  n = MK(CONCAT, a);
  INT(n, AXIS, 2);
  BAD(n, "axis 2 out of range for rank 2");
  n = MK(NARROW, IN_("f32[6, 4]"));
  INT(n, START, 2);
  INT(n, LEN, 4);
  OK(n, "f32[4, 4]");
  n = MK(NARROW, IN_("f32[6, 4]"));
  INT(n, AXIS, -1);
  INT(n, START, 4);
  INT(n, LEN, 0);
  OK(n, "f32[6, 0]");
  n = MK(NARROW, IN_("f32[6, 4]"));
  INT(n, START, 3);
  INT(n, LEN, 5);
  BAD(n, "narrow: start 3 + len 5 exceeds dimension 6 of axis 0");
  n = MK(NARROW, IN_("f32[6, 4]"));
  INT(n, START, -1);
  INT(n, LEN, 1);
  BAD(n, "start must be >= 0, got -1");
  n = MK(NARROW, IN_("f32[6, 4]"));
  INT(n, START, 0);
  BAD(n, "narrow: missing attribute 'len'");
}

SH_TEST(t_gather_scatter) {
  Node *t = IN_("f32[10, 4]");
  OK(MK(GATHER, t, IN_("i64[3, 5]")), "f32[3, 5, 4]");
  Node *n = MK(GATHER, IN_("f32[2, 10, 4]"), IN_("i32[7]"));
  INT(n, AXIS, 1);
  OK(n, "f32[2, 7, 4]");
  OK(MK(GATHER, t, IN_("f32[]")), "f32[4]");
  BAD(MK(GATHER, t, IN_("i8[3]")),
      "gather: indices must have an index dtype (i32, i64 or f32), got i8");
  n = MK(GATHER, t, IN_("i32[3]"));
  INT(n, AXIS, 2);
  BAD(n, "axis 2 out of range for rank 2");
  BAD(MK(GATHER, IN_("f32[]"), IN_("i32[3]")), "table must have rank >= 1");
  n = MK(GATHER, IN_("f32[1, 1, 1, 1, 1, 1, 1, 1]"),
         IN_("i32[2, 2]"));
  BAD(n, "result rank 9 exceeds the maximum 8");
  n = MK(SCATTER_ADD, IN_("f32[5, 4]"), IN_("i64[5]"));
  INTS(n, SHAPE, 10, 4);
  OK(n, "f32[10, 4]");
  n = MK(SCATTER_ADD, IN_("f32[5]"), IN_("i32[5]"));
  INTS(n, SHAPE, 3);
  OK(n, "f32[3]");
  n = MK(SCATTER_ADD, IN_("f32[5, 4]"), IN_("i64[4]"));
  INTS(n, SHAPE, 10, 4);
  BAD(n, "scatter_add: indices must be [5] (one per updates row), got i64[4]");
  n = MK(SCATTER_ADD, IN_("f32[5, 4]"), IN_("i64[5]"));
  INTS(n, SHAPE, 10, 3);
  BAD(n, "updates f32[5, 4] do not match shape f32[10, 3] beyond dimension 0");
  n = MK(SCATTER_ADD, IN_("f32[5, 4]"), IN_("i64[5]"));
  set_ints(n, ATTR_SHAPE, 0, NULL);
  BAD(n, "shape must have rank >= 1");
  n = MK(GATHER_BACKWARD, IN_("f32[3, 5, 4]"), IN_("i64[3, 5]"));
  INTS(n, SHAPE, 10, 4);
  OK(n, "f32[10, 4]");
  n = MK(GATHER_BACKWARD, IN_("f32[3, 4]"), IN_("i64[3, 5]"));
  INTS(n, SHAPE, 10, 4);
  BAD(n, "gather_backward: dy has type f32[3, 4], expected f32[3, 5, 4]");
}

int main(void) {
  static const ShTest tests[] = {
      {"reshape", t_reshape}, {"transpose_expand", t_transpose_expand},
      {"concat_narrow", t_concat_narrow},
      {"gather_scatter", t_gather_scatter}, {NULL, NULL}};
  return sh_run("shape_move", tests);
}
