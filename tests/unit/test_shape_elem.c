/* test_shape_elem.c: shape inference for the dispatcher's generic
 * checks, elementwise ops, linear algebra and reductions (6.1-6.3). */
#include "test_shape_util.h"

SH_TEST(t_generic) {
  Node *a = IN_("f32[2, 3]"), *b = IN_("f32[3, 4]");
  BAD(MK(MATMUL, a, b, a), "matmul: expected 2 operands, got 3");
  BAD(mk(OP_CONCAT, NULL, 0), "concat: expected at least 1 operand, got 0");
  BAD(MK(RESHAPE, a), "reshape: missing attribute 'shape'");
  Node *n = MK(RELU, a);
  INT(n, AXIS, 1);
  BAD(n, "relu: unknown attribute 'axis'");
  n = MK(SOFTMAX, a);
  FLT(n, AXIS, 1.0);
  BAD(n, "softmax: attribute 'axis' must be an integer");
  /* an invalid operand fails silently */
  Node *bad = MK(MATMUL, a, a);
  BAD(bad, "inner dimensions differ: 3 vs 2");
  int before = F.c->nerrors;
  Node *r = MK(RELU, bad);
  CU_ASSERT(!shape_infer(F.c, r));
  CU_ASSERT(F.c->nerrors == before && r->type.dt == DT_INVALID);
  /* pseudo ops keep their type */
  CU_ASSERT(shape_infer(F.c, a) && a->type.dt == DT_F32);
  /* attribute kind and enum word checked */
  n = MK(ATTENTION, IN_("f32[1, 2, 2, 4]"), IN_("f32[1, 2, 2, 4]"),
         IN_("f32[1, 2, 2, 4]"));
  WORD(n, MASK, "sideways");
  BAD(n, "attention: attribute 'mask' has an invalid value 'sideways'");
}

SH_TEST(t_unary) {
  OK(MK(EXP, IN_("f32[2, 3]")), "f32[2, 3]");
  OK(MK(GELU_TANH, IN_("bf16[4]")), "bf16[4]");
  OK(MK(ROUND, IN_("f64[]")), "f64[]");
  OK(MK(SQRT, IN_("f16[0]")), "f16[0]");
  BAD(MK(EXP, IN_("i32[2]")), "exp: operand must have a float dtype");
  BAD(MK(TANH, IN_("c64[2]")), "got c64");
  OK(MK(NEG, IN_("i32[2]")), "i32[2]");
  OK(MK(NEG, IN_("c64[2]")), "c64[2]");
  OK(MK(ABS, IN_("i8[5]")), "i8[5]");
  OK(MK(STOP_GRADIENT, IN_("f32[1, 1]")), "f32[1, 1]");
  BAD(MK(ABS, IN_("c64[2]")), "abs: c64 operands are not supported");
  BAD(MK(NEG, IN_("bool[2]")), "neg: operand must be numeric, got bool");
}

/* Every op of the unary/binary/compare rows, straight from the table. */
SH_TEST(t_table_rows) {
  Node *x = IN_("f32[2, 3]"), *y = IN_("f32[3]");
  for (int op = 0; op < OP_COUNT; op++) {
    if (op_has((Op)op, OPF_COMPARE)) {
      OK(mk((Op)op, (Node *[]){x, y}, 2), "bool[2, 3]");
    } else if (op_has((Op)op, OPF_BINARY)) {
      OK(mk((Op)op, (Node *[]){x, y}, 2), "f32[2, 3]");
    } else if (op_has((Op)op, OPF_UNARY)) {
      OK(mk((Op)op, &x, 1), "f32[2, 3]");
      BAD(mk((Op)op, (Node *[]){x, x}, 2), "expected 1 operand, got 2");
    }
  }
  Node *p = ir_arg_new(F.c, F.g, OP_PARAM, "w", ty("f64[4]"), (Loc){3, 1});
  CU_ASSERT(shape_infer(F.c, p) && p->type.dt == DT_F64);
  float one = 1;
  Node *k = ir_const_new(F.c, F.g, ty("f32[]"), &one, false, (Loc){4, 1});
  CU_ASSERT(shape_infer(F.c, k) && k->type.rank == 0);
}

SH_TEST(t_binary) {
  OK(MK(ADD, IN_("f32[64, 10]"), IN_("f32[10]")), "f32[64, 10]");
  OK(MK(MUL, IN_("f32[3, 1, 5]"), IN_("f32[4, 1]")), "f32[3, 4, 5]");
  OK(MK(SUB, IN_("f64[]"), IN_("f64[2, 0]")), "f64[2, 0]");
  OK(MK(DIV, IN_("c64[2]"), IN_("c64[2]")), "c64[2]");
  OK(MK(SUB, IN_("i32[2]"), IN_("i32[1]")), "i32[2]");
  BAD(MK(POW, IN_("i32[2]"), IN_("i32[1]")),
      "pow: i32 operands are not supported (cast to a float dtype first)");
  BAD(MK(DIV, IN_("u8[2]"), IN_("u8[2]")), "div: u8 operands");
  BAD(MK(ADD, IN_("f32[2]"), IN_("f64[2]")),
      "add: dtype mismatch: f32 vs f64");
  BAD(MK(ADD, IN_("f32[2, 3]"), IN_("f32[4]")),
      "add: shapes f32[2, 3] and f32[4] do not broadcast "
      "(dimension 1: 3 vs 4)");
  BAD(MK(MAX, IN_("c64[2]"), IN_("c64[2]")), "max: c64 operands");
  BAD(MK(ADD, IN_("bool[2]"), IN_("bool[2]")), "add: bool operands");
  OK(MK(MUL, IN_("bool[2]"), IN_("bool[]")), "bool[2]");
  OK(MK(MAX, IN_("bool[2]"), IN_("bool[2]")), "bool[2]");
}

SH_TEST(t_compare_where_cast) {
  OK(MK(LT, IN_("f32[4, 1]"), IN_("f32[3]")), "bool[4, 3]");
  OK(MK(EQ, IN_("c64[2]"), IN_("c64[2]")), "bool[2]");
  OK(MK(GE, IN_("bool[2]"), IN_("bool[]")), "bool[2]");
  BAD(MK(GT, IN_("c64[2]"), IN_("c64[2]")),
      "gt: c64 operands cannot be ordered");
  BAD(MK(EQ, IN_("i32[2]"), IN_("i64[2]")), "eq: dtype mismatch: i32 vs i64");
  OK(MK(WHERE, IN_("bool[4, 1]"), IN_("f32[3]"), IN_("f32[]")), "f32[4, 3]");
  OK(MK(WHERE, IN_("f32[2]"), IN_("i64[2, 2]"), IN_("i64[2]")), "i64[2, 2]");
  OK(MK(WHERE, IN_("bool[5, 1, 1]"), IN_("f32[2, 1]"), IN_("f32[3]")),
     "f32[5, 2, 3]");
  BAD(MK(WHERE, IN_("bool[2]"), IN_("f32[2]"), IN_("f64[2]")),
      "where: dtype mismatch: f32 vs f64");
  BAD(MK(WHERE, IN_("bool[4]"), IN_("f32[2]"), IN_("f32[2]")),
      "do not broadcast");
  BAD(MK(WHERE, IN_("c64[2]"), IN_("f32[2]"), IN_("f32[2]")), "got c64");
  Node *n = MK(CAST, IN_("f32[2, 3]"));
  ir_attr_set_dtype(F.c, n, ATTR_TO, DT_I8);
  OK(n, "i8[2, 3]");
  n = MK(CAST, IN_("f32[2]"));
  ir_attr_set_dtype(F.c, n, ATTR_TO, DT_C64);
  OK(n, "c64[2]");
  n = MK(CAST, IN_("c64[2]"));
  ir_attr_set_dtype(F.c, n, ATTR_TO, DT_F32);
  BAD(n, "cast: cannot cast c64 to f32");
  BAD(MK(CAST, IN_("f32[2]")), "cast: missing attribute 'to'");
}

SH_TEST(t_matmul) {
  OK(MK(MATMUL, IN_("f32[64, 784]"), IN_("f32[784, 10]")), "f32[64, 10]");
  OK(MK(MATMUL, IN_("f32[5, 1, 2, 3]"), IN_("f32[4, 3, 7]")),
     "f32[5, 4, 2, 7]");
  OK(MK(MATMUL, IN_("c64[2, 2]"), IN_("c64[2, 3]")), "c64[2, 3]");
  OK(MK(MATMUL, IN_("f64[0, 3]"), IN_("f64[3, 0]")), "f64[0, 0]");
  BAD(MK(MATMUL, IN_("f32[64, 784]"), IN_("f32[128, 10]")),
      "matmul: inner dimensions differ: 784 vs 128");
  BAD(MK(MATMUL, IN_("f32[3]"), IN_("f32[3, 2]")), "rank >= 2");
  BAD(MK(MATMUL, IN_("i32[2, 2]"), IN_("i32[2, 2]")), "float or c64");
  BAD(MK(MATMUL, IN_("f32[2, 2]"), IN_("f64[2, 2]")), "dtype mismatch");
  BAD(MK(MATMUL, IN_("f32[2, 2, 2]"), IN_("f32[3, 2, 2]")),
      "do not broadcast");
  OK(MK(DENSE_SOLVE, IN_("f64[3, 3]"), IN_("f64[3]")), "f64[3]");
  OK(MK(DENSE_SOLVE, IN_("f32[3, 3]"), IN_("f32[3, 5]")), "f32[3, 5]");
  BAD(MK(DENSE_SOLVE, IN_("f32[3, 4]"), IN_("f32[3]")), "square");
  BAD(MK(DENSE_SOLVE, IN_("f32[3, 3]"), IN_("f32[4]")),
      "b has 4 rows, expected 3");
  OK(MK(BATCHED_DENSE_SOLVE, IN_("f32[2, 3, 3]"), IN_("f32[2, 3]")),
     "f32[2, 3]");
  OK(MK(BATCHED_DENSE_SOLVE, IN_("f32[2, 3, 3]"), IN_("f32[2, 3, 4]")),
     "f32[2, 3, 4]");
  BAD(MK(BATCHED_DENSE_SOLVE, IN_("f32[2, 3, 3]"), IN_("f32[5, 3]")),
      "batch sizes differ: 2 vs 5");
  BAD(MK(BATCHED_DENSE_SOLVE, IN_("f32[3, 3]"), IN_("f32[3]")),
      "[B, N, N]");
}

SH_TEST(t_reduce) {
  Node *x = IN_("f32[2, 3, 4]");
  OK(MK(REDUCE_SUM, x), "f32[]");
  Node *n = MK(REDUCE_MEAN, x);
  INTS(n, AXES, 0, 2);
  OK(n, "f32[3]");
  n = MK(REDUCE_MAX, x);
  INTS(n, AXES, -1);
  BOOL_(n, KEEP_DIMS, true);
  OK(n, "f32[2, 3, 1]");
  n = MK(REDUCE_PROD, x);
  BOOL_(n, KEEP_DIMS, true);
  OK(n, "f32[1, 1, 1]");
  n = MK(REDUCE_SUM, x);
  set_ints(n, ATTR_AXES, 0, NULL);
  OK(n, "f32[2, 3, 4]");
  n = MK(REDUCE_SUM, x);
  INTS(n, AXES, 0, -3);
  BAD(n, "reduce_sum: axis -3 is named twice");
  n = MK(REDUCE_MIN, x);
  INTS(n, AXES, 3);
  BAD(n, "reduce_min: axis 3 out of range for rank 3");
  BAD(MK(REDUCE_MEAN, IN_("i32[2]")), "float or c64");
  BAD(MK(REDUCE_SUM, IN_("bool[2]")), "bool operands");
  BAD(MK(REDUCE_MAX, IN_("c64[2]")), "cannot be ordered");
  OK(MK(REDUCE_SUM, IN_("i64[]")), "i64[]");
}

SH_TEST(t_softmax_cumsum_topk) {
  OK(MK(SOFTMAX, IN_("f32[2, 5]")), "f32[2, 5]");
  Node *n = MK(LOG_SOFTMAX, IN_("f64[2, 5]"));
  INT(n, AXIS, 0);
  OK(n, "f64[2, 5]");
  n = MK(SOFTMAX, IN_("f32[2, 5]"));
  INT(n, AXIS, 2);
  BAD(n, "softmax: axis 2 out of range for rank 2");
  BAD(MK(SOFTMAX, IN_("f32[]")), "axis -1 out of range for rank 0");
  BAD(MK(SOFTMAX, IN_("i32[3]")), "float dtype");
  n = MK(CUMSUM, IN_("i32[3, 4]"));
  INT(n, AXIS, -2);
  BOOL_(n, EXCLUSIVE, true);
  OK(n, "i32[3, 4]");
  OK(MK(CUMSUM_BACKWARD, IN_("f32[3]")), "f32[3]");
  BAD(MK(CUMSUM, IN_("bool[3]")), "bool operands");
  OK(MK(SOFTMAX_CROSS_ENTROPY, IN_("f32[8, 10]"), IN_("i64[8]")), "f32[8]");
  OK(MK(SOFTMAX_CROSS_ENTROPY, IN_("f32[8, 10]"), IN_("f32[8]")), "f32[8]");
  BAD(MK(SOFTMAX_CROSS_ENTROPY, IN_("f32[8, 10]"), IN_("i64[7]")),
      "labels must be [8]");
  BAD(MK(SOFTMAX_CROSS_ENTROPY, IN_("f32[8, 10]"), IN_("u8[8]")),
      "index dtype");
  BAD(MK(SOFTMAX_CROSS_ENTROPY, IN_("f32[10]"), IN_("i64[1]")),
      "logits must be [N, C]");
  OK(MK(SOFTMAX_CROSS_ENTROPY_BACKWARD, IN_("f32[8, 10]"), IN_("i32[8]"),
        IN_("f32[8]")), "f32[8, 10]");
  BAD(MK(SOFTMAX_CROSS_ENTROPY_BACKWARD, IN_("f32[8, 10]"), IN_("i32[8]"),
         IN_("f32[]")), "dloss has type f32[], expected f32[8]");
  n = MK(TOPK, IN_("f32[4, 10]"));
  INT(n, K, 3);
  OK(n, "i64[4, 3]");
  n = MK(TOPK, IN_("i32[10]"));
  INT(n, K, 10);
  OK(n, "i64[10]");
  n = MK(TOPK, IN_("f32[4, 10]"));
  INT(n, K, 11);
  BAD(n, "topk: k must be in [1, 10] (last dimension), got 11");
  n = MK(TOPK, IN_("f32[4, 10]"));
  INT(n, K, 0);
  BAD(n, "got 0");
  n = MK(TOPK, IN_("f32[]"));
  INT(n, K, 1);
  BAD(n, "rank >= 1");
  BAD(MK(TOPK, IN_("f32[3]")), "topk: missing attribute 'k'");
}

SH_TEST(t_limits) {
  /* element count over RLX_MAX_ELEMS: 2^21 * 2^21 = 2^42 */
  Node *n = MK(EXPAND, IN_("f32[1]"));
  INTS(n, SHAPE, 2097152, 2097152);
  BAD(n, "too many elements");
  n = MK(MATMUL, IN_("f32[2097152, 1]"), IN_("f32[1, 2097152]"));
  BAD(n, "too many elements");
  /* rank over RLX_MAX_RANK */
  n = MK(RESHAPE, IN_("f32[1]"));
  INTS(n, SHAPE, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  BAD(n, "shape has rank 9, the maximum is 8");
  n = MK(MATMUL, IN_("f32[1, 1, 1, 1, 1, 1, 1, 2]"), IN_("f32[2, 2]"));
  OK(n, "f32[1, 1, 1, 1, 1, 1, 1, 2]");
  n = MK(TRANSPOSE, IN_("f32[2, 3]"));
  INTS(n, PERM, 1, 0);
  OK(n, "f32[3, 2]");
}

int main(void) {
  static const ShTest tests[] = {
      {"generic", t_generic}, {"table_rows", t_table_rows},
      {"unary", t_unary}, {"binary", t_binary},
      {"compare_where_cast", t_compare_where_cast}, {"matmul", t_matmul},
      {"reduce", t_reduce}, {"softmax_cumsum_topk", t_softmax_cumsum_topk},
      {"limits", t_limits}, {NULL, NULL}};
  return sh_run("shape_elem", tests);
}
