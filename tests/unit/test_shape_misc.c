/* test_shape_misc.c: shape inference for fused blocks (6.7),
 * quantization, complex, signal and random ops (6.8). */
#include "test_shape_util.h"

SH_TEST(t_transformer) {
  static const char *const ops[14] = {
      "f32[2, 5, 8]", "f32[8, 24]", "f32[24]", "f32[8, 8]", "f32[8]",
      "f32[8]", "f32[8]", "f32[8, 32]", "f32[32]", "f32[32, 8]", "f32[8]",
      "f32[8]", "f32[8]", "f32[2, 5]"};
  Node *in[14];
  for (int bad = -1; bad < 14; bad++) {
    for (int i = 0; i < 14; i++)
      in[i] = IN_(i == bad ? "f32[3]" : ops[i]);
    Node *n = mk(OP_FUSED_TRANSFORMER_LAYER, in, 14);
    INT(n, HEADS, 2);
    INT(n, HEAD_DIM, 4);
    INT(n, INTERMEDIATE, 32);
    if (bad < 0) OK(n, "f32[2, 5, 8]");
    else if (bad == 0) BAD(n, "h must be [B, S, hidden]");
    else BAD(n, "has type f32[3], expected");
  }
  for (int i = 0; i < 14; i++) in[i] = IN_(ops[i]);
  Node *n = mk(OP_FUSED_TRANSFORMER_LAYER, in, 14);
  INT(n, HEADS, 3);
  INT(n, HEAD_DIM, 4);
  INT(n, INTERMEDIATE, 32);
  BAD(n, "fused_transformer_layer: heads 3 * head_dim 4 != hidden size 8");
  n = mk(OP_FUSED_TRANSFORMER_LAYER, in, 14);
  INT(n, HEADS, 2);
  INT(n, HEAD_DIM, 4);
  INT(n, INTERMEDIATE, 16);
  BAD(n, "fc1_w has type f32[8, 32], expected f32[8, 16]");
  n = mk(OP_FUSED_TRANSFORMER_LAYER, in, 13);
  BAD(n, "expected 14 operands, got 13");
}

SH_TEST(t_sequence_blocks) {
  Node *x = IN_("f32[2, 6, 4]"), *a = IN_("f32[4, 3]");
  Node *bc = IN_("f32[2, 6, 3]");
  Node *n = MK(SELECTIVE_SCAN, x, x, a, bc, bc);
  INT(n, STATE_SIZE, 3);
  OK(n, "f32[2, 6, 4]");
  n = MK(SELECTIVE_SCAN, x, x, a, bc, bc);
  INT(n, STATE_SIZE, 5);
  BAD(n, "selective_scan: a has type f32[4, 3], expected f32[4, 5]");
  n = MK(SELECTIVE_SCAN, x, IN_("f32[2, 6, 3]"), a, bc, bc);
  INT(n, STATE_SIZE, 3);
  BAD(n, "delta has type f32[2, 6, 3], expected f32[2, 6, 4]");
  Node *q = IN_("f32[2, 6, 4, 8]"), *g = IN_("f32[2, 6, 4]");
  n = MK(GATED_DELTA_NET, q, q, q, g, g);
  INT(n, STATE_SIZE, 8);
  OK(n, "f32[2, 6, 4, 8]");
  n = MK(GATED_DELTA_NET, q, q, q, g, IN_("f32[2, 6, 5]"));
  INT(n, STATE_SIZE, 8);
  BAD(n, "beta has type f32[2, 6, 5], expected f32[2, 6, 4]");
  n = MK(GATED_DELTA_NET, q, q, q, g, g);
  INT(n, STATE_SIZE, 4);
  BAD(n, "q must be [b, s, H, 4] (state_size), got f32[2, 6, 4, 8]");
}

SH_TEST(t_quant) {
  Node *x = IN_("f32[4, 6]");
  OK(MK(FAKE_QUANTIZE, x), "f32[4, 6]");
  Node *n = MK(FAKE_QUANTIZE, x);
  INT(n, BITS, 1);
  BAD(n, "fake_quantize: bits must be in [2, 8], got 1");
  n = MK(FAKE_QUANTIZE, x);
  INT(n, AXIS, 2);
  BAD(n, "axis 2 out of range for rank 2");
  BAD(MK(FAKE_QUANTIZE, IN_("i8[4]")), "x must have a float dtype");
  OK(MK(FAKE_QUANTIZE_LSQ, x, IN_("f32[]")), "f32[4, 6]");
  n = MK(FAKE_QUANTIZE_LSQ, x, IN_("f32[6]"));
  INT(n, AXIS, -1);
  OK(n, "f32[4, 6]");
  n = MK(FAKE_QUANTIZE_LSQ, x, IN_("f32[4]"));
  INT(n, AXIS, 1);
  BAD(n, "scale must be [6] (x.shape[1]), got f32[4]");
  BAD(MK(FAKE_QUANTIZE_LSQ, x, IN_("f32[6]")),
      "scale must be a scalar without axis");
  n = MK(QUANTIZE, x);
  FLT(n, SCALE, 0.1);
  INT(n, ZERO_POINT, 3);
  OK(n, "i8[4, 6]");
  n = MK(QUANTIZE, x);
  FLT(n, SCALE, 0.0);
  BAD(n, "quantize: scale must be finite and > 0, got 0");
  n = MK(QUANTIZE, x);
  FLT(n, SCALE, 0.1);
  INT(n, ZERO_POINT, 128);
  BAD(n, "zero_point must be in [-128, 127], got 128");
  n = MK(DEQUANTIZE, IN_("i8[4, 6]"));
  FLT(n, SCALE, 0.1);
  OK(n, "f32[4, 6]");
  n = MK(DEQUANTIZE, x);
  FLT(n, SCALE, 0.1);
  BAD(n, "dequantize: operand must be i8, got f32[4, 6]");
}

SH_TEST(t_quant_matmul) {
  Node *n;
  Node *xi = IN_("i8[3, 5]"), *wi = IN_("i8[5, 7]"), *bi = IN_("i32[7]");
  n = MK(Q_MATMUL, xi, wi, bi);
  FLT(n, MULT, 0.01);
  OK(n, "i8[3, 7]");
  n = MK(Q_MATMUL, xi, IN_("i8[4, 7]"), bi);
  FLT(n, MULT, 0.01);
  BAD(n, "q_matmul: inner dimensions differ: 5 vs 4");
  n = MK(Q_MATMUL, xi, wi, IN_("i32[5]"));
  FLT(n, MULT, 0.01);
  BAD(n, "bias has type i32[5], expected i32[7]");
  n = MK(Q_MATMUL, xi, wi, IN_("f32[7]"));
  FLT(n, MULT, 0.01);
  BAD(n, "bias must be i32, got f32");
  BAD(MK(Q_MATMUL, xi, wi, bi), "q_matmul: missing attribute 'mult'");
  n = MK(Q_CONV2D, IN_("i8[1, 4, 8, 8]"), IN_("i8[6, 2, 3, 3]"),
         IN_("i32[6]"));
  FLT(n, MULT, 0.5);
  INT(n, GROUPS, 2);
  INTS(n, PADDING, 1, 1);
  OK(n, "i8[1, 6, 8, 8]");
  n = MK(Q_CONV2D, IN_("i8[1, 4, 8, 8]"), IN_("i8[6, 4, 3, 3]"),
         IN_("i32[4]"));
  FLT(n, MULT, 0.5);
  BAD(n, "q_conv2d: bias has type i32[4], expected i32[6]");
  Node *w8 = IN_("i8[16, 10]");
  OK(MK(DEQUANT_MATMUL, IN_("f32[2, 3, 16]"), w8, IN_("f32[10]")),
     "f32[2, 3, 10]");
  n = MK(DEQUANT_MATMUL, IN_("f32[3, 16]"), w8, IN_("f32[4, 10]"));
  INT(n, GROUP_SIZE, 4);
  OK(n, "f32[3, 10]");
  n = MK(DEQUANT_MATMUL, IN_("f32[3, 16]"), w8, IN_("f32[4, 10]"));
  INT(n, GROUP_SIZE, 5);
  BAD(n, "group_size 5 does not divide K = 16");
  BAD(MK(DEQUANT_MATMUL, IN_("f32[3, 15]"), w8, IN_("f32[10]")),
      "x must be [..., 16]");
  BAD(MK(DEQUANT_MATMUL, IN_("f32[3, 16]"), IN_("f32[16, 10]"),
         IN_("f32[10]")), "w must be an i8 matrix");
  OK(MK(GROUPED_MATMUL, IN_("f32[6, 4]"), IN_("f32[3, 4, 5]"),
        IN_("i32[6]")), "f32[6, 5]");
  BAD(MK(GROUPED_MATMUL, IN_("f32[6, 4]"), IN_("f32[3, 4, 5]"),
         IN_("i32[5]")), "expert must be [6]");
  BAD(MK(GROUPED_MATMUL, IN_("f32[6, 4]"), IN_("f32[3, 3, 5]"),
         IN_("i32[6]")), "do not fit");
}

SH_TEST(t_complex_signal) {
  Node *z = IN_("c64[4, 8]");
  OK(MK(CONJUGATE, z), "c64[4, 8]");
  OK(MK(FFT, z), "c64[4, 8]");
  OK(MK(COMPLEX_NORM_SQ, z), "f32[4, 8]");
  OK(MK(REAL, z), "f32[4, 8]");
  OK(MK(IMAG, IN_("c64[]")), "f32[]");
  BAD(MK(REAL, IN_("f32[3]")), "real: operand must be c64, got f32[3]");
  BAD(MK(FFT, IN_("c64[]")), "fft: operand must have rank >= 1");
  BAD(MK(FFT, IN_("f32[8]")), "must be c64");
  OK(MK(COMPLEX, IN_("f32[4, 8]"), IN_("f32[8]")), "c64[4, 8]");
  BAD(MK(COMPLEX, IN_("f64[4]"), IN_("f64[4]")), "re must be f32, got f64[4]");
  Node *spec = IN_("f32[10, 201]"), *fb = IN_("f32[201, 80]");
  OK(MK(LOG_MEL, spec, fb), "f32[10, 80]");
  BAD(MK(LOG_MEL, spec, IN_("f32[200, 80]")),
      "log_mel: filters must be [201, M] to match spec f32[10, 201], got "
      "f32[200, 80]");
  OK(MK(LOG_MEL_BACKWARD, spec, fb, IN_("f32[10, 80]")), "f32[10, 201]");
  BAD(MK(LOG_MEL_BACKWARD, spec, fb, IN_("f32[10, 81]")),
      "dy has type f32[10, 81], expected f32[10, 80]");
}

SH_TEST(t_random) {
  Node *n = mk(OP_RNG_UNIFORM, NULL, 0);
  INTS(n, SHAPE, 3, 4);
  INT(n, SEED, 7);
  OK(n, "f32[3, 4]");
  n = mk(OP_RNG_NORMAL, NULL, 0);
  set_ints(n, ATTR_SHAPE, 0, NULL);
  OK(n, "f32[]");
  n = mk(OP_RNG_NORMAL, NULL, 0);
  INTS(n, SHAPE, 3, -4);
  BAD(n, "rng_normal: shape[1] = -4 is not a valid dimension");
  BAD(mk(OP_RNG_UNIFORM, NULL, 0), "rng_uniform: missing attribute 'shape'");
  Node *l = IN_("f32[4, 50]");
  OK(MK(SAMPLE, l), "i64[4]");
  n = MK(SAMPLE, l);
  INT(n, TOP_K, 51);
  BAD(n, "sample: top_k must be in [0, 50], got 51");
  n = MK(SAMPLE, l);
  FLT(n, TOP_P, 0.0);
  BAD(n, "top_p must be in (0, 1], got 0");
  n = MK(SAMPLE, l);
  FLT(n, TEMPERATURE, -1.0);
  BAD(n, "temperature must be finite and >= 0");
  BAD(MK(SAMPLE, IN_("f32[50]")), "logits must be [N, C]");
}

int main(void) {
  static const ShTest tests[] = {
      {"transformer", t_transformer},
      {"sequence_blocks", t_sequence_blocks}, {"quant", t_quant},
      {"quant_matmul", t_quant_matmul},
      {"complex_signal", t_complex_signal}, {"random", t_random},
      {NULL, NULL}};
  return sh_run("shape_misc", tests);
}
