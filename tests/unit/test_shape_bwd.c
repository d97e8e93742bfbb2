/* test_shape_bwd.c: shape inference for the closed-form backward ops
 * (language.md 6.9): each result is typed like the forward value it
 * differentiates, and dy must be typed like the forward output. */
#include "test_shape_util.h"

SH_TEST(t_like_x) {
  Node *x = IN_("f32[3, 4]");
  OK(MK(RELU_BACKWARD, x, x), "f32[3, 4]");
  BAD(MK(RELU_BACKWARD, x, IN_("f32[4]")),
      "relu_backward: dy has type f32[4], expected f32[3, 4]");
  Node *n = MK(ACTIVATION_BACKWARD, x, x);
  WORD(n, KIND, "gelu");
  OK(n, "f32[3, 4]");
  BAD(MK(ACTIVATION_BACKWARD, x, x),
      "activation_backward: missing attribute 'kind'");
  n = MK(FAKE_QUANTIZE_BACKWARD, x, x);
  WORD(n, STE, "clipped");
  OK(n, "f32[3, 4]");
  n = MK(FAKE_QUANTIZE_BACKWARD, x, x);
  INT(n, BITS, 40);
  BAD(n, "bits must be in [2, 8], got 40");
  Node *img = IN_("f32[1, 2, 8, 8]");
  n = MK(MAX_POOL2D_BACKWARD, img, IN_("f32[1, 2, 4, 4]"));
  INTS(n, KERNEL, 2, 2);
  OK(n, "f32[1, 2, 8, 8]");
  n = MK(MAX_POOL2D_BACKWARD, img, img);
  INTS(n, KERNEL, 2, 2);
  BAD(n, "dy has type f32[1, 2, 8, 8], expected f32[1, 2, 4, 4]");
  n = MK(AVG_POOL2D_BACKWARD, IN_("f32[1, 2, 4, 4]"));
  INTS(n, KERNEL, 2, 2);
  INTS(n, SHAPE, 1, 2, 8, 8);
  OK(n, "f32[1, 2, 8, 8]");
  n = MK(AVG_POOL2D_BACKWARD, IN_("f32[1, 2, 4, 4]"));
  INTS(n, KERNEL, 2, 2);
  INTS(n, SHAPE, 1, 2, 9, 8);
  OK(n, "f32[1, 2, 9, 8]"); /* floor: 9 -> 4 */
  n = MK(AVG_POOL2D_BACKWARD, IN_("f32[1, 2, 4, 4]"));
  INTS(n, KERNEL, 2, 2);
  INTS(n, SHAPE, 1, 2, 10, 8);
  BAD(n, "avg_pool2d_backward: dy has type f32[1, 2, 4, 4], expected "
         "f32[1, 2, 5, 4]");
}

SH_TEST(t_norms) {
  Node *x = IN_("f32[4, 8]"), *g = IN_("f32[8]");
  OK(MK(LAYER_NORM_BACKWARD_INPUT, x, g, x), "f32[4, 8]");
  OK(MK(LAYER_NORM_BACKWARD_GAMMA, x, x), "f32[8]");
  Node *n = MK(LAYER_NORM_BACKWARD_GAMMA, x, x);
  INT(n, AXIS, 0);
  OK(n, "f32[4]");
  BAD(MK(LAYER_NORM_BACKWARD_INPUT, x, IN_("f32[4]"), x),
      "layer_norm_backward_input: gamma has type f32[4], expected f32[8]");
  BAD(MK(LAYER_NORM_BACKWARD_GAMMA, x, IN_("f32[4, 7]")),
      "dy has type f32[4, 7], expected f32[4, 8]");
  OK(MK(RMS_NORM_BACKWARD_INPUT, x, g, g, x), "f32[4, 8]");
  OK(MK(RMS_NORM_BACKWARD_GAMMA, x, g, g, x), "f32[8]");
  OK(MK(RMS_NORM_BACKWARD_BETA, x, g, g, x), "f32[8]");
  BAD(MK(RMS_NORM_BACKWARD_BETA, x, g, IN_("f32[9]"), x),
      "beta has type f32[9], expected f32[8]");
  Node *xi = IN_("f64[2, 6, 3]"), *c = IN_("f64[6]");
  n = MK(GROUP_NORM_BACKWARD_INPUT, xi, c, c, xi);
  INT(n, GROUPS, 2);
  OK(n, "f64[2, 6, 3]");
  n = MK(GROUP_NORM_BACKWARD_GAMMA, xi, c, c, xi);
  INT(n, GROUPS, 3);
  OK(n, "f64[6]");
  n = MK(GROUP_NORM_BACKWARD_BETA, xi, c, c, xi);
  INT(n, GROUPS, 4);
  BAD(n, "group_norm_backward_beta: channels 6 are not divisible by "
         "groups 4");
  OK(MK(BATCH_NORM_INFERENCE_BACKWARD_INPUT, xi, c, c, c, c, xi),
     "f64[2, 6, 3]");
  OK(MK(BATCH_NORM_INFERENCE_BACKWARD_GAMMA, xi, c, c, c, c, xi), "f64[6]");
  OK(MK(BATCH_NORM_INFERENCE_BACKWARD_BETA, xi, c, c, c, c, xi), "f64[6]");
  BAD(MK(BATCH_NORM_INFERENCE_BACKWARD_BETA, xi, c, c, c, c, x),
      "dy has type f32[4, 8], expected f64[2, 6, 3]");
  n = MK(GROUP_NORM_BACKWARD_GAMMA, xi, IN_("f64[3]"), c, xi);
  INT(n, GROUPS, 3);
  BAD(n, "group_norm_backward_gamma: gamma has type f64[3], expected "
         "f64[6]");
  n = MK(GROUP_NORM_BACKWARD_INPUT, IN_("f64[6]"), c, c, IN_("f64[6]"));
  INT(n, GROUPS, 1);
  BAD(n, "group_norm_backward_input: x must be [N, C, ...], got f64[6]");
  BAD(MK(BATCH_NORM_INFERENCE_BACKWARD_INPUT, IN_("f64[6]"), c, c, c, c,
         IN_("f64[6]")),
      "batch_norm_inference_backward_input: x must be [N, C, ...]");
  BAD(MK(BATCH_NORM_INFERENCE_BACKWARD_GAMMA, xi, c, c, c, IN_("f64[5]"),
         xi),
      "batch_norm_inference_backward_gamma: var has type f64[5], "
      "expected f64[6]");
  n = MK(BATCH_NORM_INFERENCE_BACKWARD_GAMMA, xi, c, c, c, c, xi);
  FLT(n, EPS, -1.0);
  BAD(n, "batch_norm_inference_backward_gamma: eps must be finite and "
         ">= 0");
}

SH_TEST(t_conv) {
  Node *x = IN_("f32[2, 3, 9, 9]"), *w = IN_("f32[4, 3, 3, 3]");
  Node *dy = IN_("f32[2, 4, 4, 4]");
  Node *n = MK(CONV2D_BACKWARD_INPUT, dy, w);
  INTS(n, SHAPE, 2, 3, 9, 9);
  INTS(n, STRIDE, 2, 2);
  OK(n, "f32[2, 3, 9, 9]");
  n = MK(CONV2D_BACKWARD_WEIGHT, x, dy);
  INTS(n, SHAPE, 4, 3, 3, 3);
  INTS(n, STRIDE, 2, 2);
  OK(n, "f32[4, 3, 3, 3]");
  n = MK(CONV2D_BACKWARD_INPUT, dy, w);
  INTS(n, SHAPE, 2, 3, 9, 9);
  BAD(n, "conv2d_backward_input: dy has type f32[2, 4, 4, 4], expected "
         "f32[2, 4, 7, 7]");
  n = MK(CONV2D_BACKWARD_WEIGHT, x, dy);
  INTS(n, SHAPE, 4, 2, 3, 3);
  INTS(n, STRIDE, 2, 2);
  BAD(n, "needs 3 input channels per group");
  BAD(MK(CONV2D_BACKWARD_WEIGHT, x, dy),
      "conv2d_backward_weight: missing attribute 'shape'");
}

SH_TEST(t_attention) {
  Node *q = IN_("f32[2, 4, 5, 8]"), *k = IN_("f32[2, 4, 9, 8]");
  Node *v = IN_("f32[2, 4, 9, 8]"), *dy = IN_("f32[2, 4, 5, 8]");
  Node *n = MK(ATTENTION_BACKWARD, q, k, v, dy);
  WORD(n, WRT, "q");
  OK(n, "f32[2, 4, 5, 8]");
  n = MK(ATTENTION_BACKWARD, q, k, v, dy);
  WORD(n, WRT, "k");
  WORD(n, MASK, "causal");
  OK(n, "f32[2, 4, 9, 8]");
  n = MK(ATTENTION_BACKWARD, q, k, v, dy, IN_("f32[2, 9]"));
  WORD(n, WRT, "v");
  WORD(n, MASK, "custom");
  OK(n, "f32[2, 4, 9, 8]");
  n = MK(ATTENTION_BACKWARD, q, k, v, dy);
  WORD(n, WRT, "v");
  WORD(n, MASK, "custom");
  BAD(n, "attention_backward: mask=custom needs 5 operands, got 4");
  n = MK(ATTENTION_BACKWARD, q, k, v, k);
  WORD(n, WRT, "q");
  BAD(n, "dy has type f32[2, 4, 9, 8], expected f32[2, 4, 5, 8]");
  BAD(MK(ATTENTION_BACKWARD, q, k, v, dy),
      "attention_backward: missing attribute 'wrt'");
}

SH_TEST(t_misc) {
  Node *z = IN_("c64[3]");
  OK(MK(COMPLEX_NORM_SQ_BACKWARD, z, IN_("f32[3]")), "c64[3]");
  BAD(MK(COMPLEX_NORM_SQ_BACKWARD, z, IN_("c64[3]")),
      "complex_norm_sq_backward: g has type c64[3], expected f32[3]");
  BAD(MK(COMPLEX_NORM_SQ_BACKWARD, IN_("f32[3]"), IN_("f32[3]")),
      "z must be c64");
  Node *x = IN_("f32[4, 6]"), *s = IN_("f32[6]");
  Node *n = MK(FAKE_QUANTIZE_LSQ_BACKWARD_X, x, s, x);
  INT(n, AXIS, 1);
  OK(n, "f32[4, 6]");
  n = MK(FAKE_QUANTIZE_LSQ_BACKWARD_SCALE, x, s, x);
  INT(n, AXIS, 1);
  OK(n, "f32[6]");
  OK(MK(FAKE_QUANTIZE_LSQ_BACKWARD_SCALE, x, IN_("f32[]"), x), "f32[]");
  n = MK(FAKE_QUANTIZE_LSQ_BACKWARD_X, x, s, s);
  INT(n, AXIS, 1);
  BAD(n, "dy has type f32[6], expected f32[4, 6]");
}

int main(void) {
  static const ShTest tests[] = {
      {"like_x", t_like_x}, {"norms", t_norms}, {"conv", t_conv},
      {"attention", t_attention}, {"misc", t_misc}, {NULL, NULL}};
  return sh_run("shape_bwd", tests);
}
