/* test_shape_nn.c: shape inference for neural-network layers
 * (language.md 6.5): norms, rope, attention, conv2d, pooling. */
#include "test_shape_util.h"

SH_TEST(t_norms) {
  Node *x = IN_("f32[4, 8]"), *g = IN_("f32[8]"), *b = IN_("f32[8]");
  OK(MK(LAYER_NORM, x, g, b), "f32[4, 8]");
  OK(MK(RMS_NORM, x, g, b), "f32[4, 8]");
  Node *n = MK(LAYER_NORM, x, IN_("f32[4]"), IN_("f32[4]"));
  INT(n, AXIS, 0);
  OK(n, "f32[4, 8]");
  BAD(MK(LAYER_NORM, x, IN_("f32[4]"), b),
      "layer_norm: gamma has type f32[4], expected f32[8]");
  BAD(MK(RMS_NORM, x, g, IN_("f64[8]")), "beta has type f64[8]");
  BAD(MK(LAYER_NORM, IN_("i32[4, 8]"), g, b), "x must have a float dtype");
  n = MK(LAYER_NORM, x, g, b);
  FLT(n, EPS, -1.0);
  BAD(n, "eps must be finite and >= 0");
  n = MK(LAYER_NORM, x, g, b);
  INT(n, AXIS, 2);
  BAD(n, "axis 2 out of range for rank 2");
  x = IN_("f32[2, 6, 5, 5]");
  g = IN_("f32[6]");
  n = MK(GROUP_NORM, x, g, g);
  INT(n, GROUPS, 3);
  OK(n, "f32[2, 6, 5, 5]");
  n = MK(GROUP_NORM, x, g, g);
  INT(n, GROUPS, 4);
  BAD(n, "group_norm: channels 6 are not divisible by groups 4");
  n = MK(GROUP_NORM, x, g, g);
  INT(n, GROUPS, 0);
  BAD(n, "groups must be >= 1, got 0");
  n = MK(GROUP_NORM, IN_("f32[6]"), g, g);
  INT(n, GROUPS, 1);
  BAD(n, "x must be [N, C, ...]");
  BAD(MK(GROUP_NORM, x, g, g), "group_norm: missing attribute 'groups'");
  OK(MK(BATCH_NORM_INFERENCE, x, g, g, g, g), "f32[2, 6, 5, 5]");
  BAD(MK(BATCH_NORM_INFERENCE, x, g, g, g, IN_("f32[5]")),
      "var has type f32[5], expected f32[6]");
  BAD(MK(BATCH_NORM_INFERENCE, x, g, g, g),
      "batch_norm_inference: expected 5 operands, got 4");
  n = MK(GROUP_NORM, x, IN_("f32[3]"), g);
  INT(n, GROUPS, 3);
  BAD(n, "group_norm: gamma has type f32[3], expected f32[6]");
  n = MK(GROUP_NORM, x, g, IN_("f64[6]"));
  INT(n, GROUPS, 3);
  BAD(n, "group_norm: beta has type f64[6], expected f32[6]");
  n = MK(GROUP_NORM, x, g, g);
  INT(n, GROUPS, 2);
  FLT(n, EPS, -1e-3);
  BAD(n, "group_norm: eps must be finite and >= 0");
  n = MK(GROUP_NORM, IN_("f32[3, 6]"), g, g); /* no spatial dims */
  INT(n, GROUPS, 6);
  OK(n, "f32[3, 6]");
  OK(MK(BATCH_NORM_INFERENCE, IN_("f32[3, 6]"), g, g, g, g), "f32[3, 6]");
  BAD(MK(BATCH_NORM_INFERENCE, IN_("f32[6]"), g, g, g, g),
      "batch_norm_inference: x must be [N, C, ...], got f32[6]");
  BAD(MK(BATCH_NORM_INFERENCE, x, g, g, IN_("f32[2]"), g),
      "batch_norm_inference: mean has type f32[2], expected f32[6]");
  BAD(MK(BATCH_NORM_INFERENCE, IN_("i32[2, 6]"), g, g, g, g),
      "batch_norm_inference: x must have a float dtype");
  n = MK(BATCH_NORM_INFERENCE, x, g, g, g, g);
  FLT(n, EPS, -1.0);
  BAD(n, "batch_norm_inference: eps must be finite and >= 0");
}

SH_TEST(t_rope) {
  Node *x = IN_("f32[2, 7, 32]"), *cs = IN_("f32[7, 4]");
  Node *n = MK(ROPE, x, cs, cs);
  INT(n, HEAD_DIM, 8);
  OK(n, "f32[2, 7, 32]");
  n = MK(ROPE, IN_("f32[7, 32]"), cs, cs);
  INT(n, HEAD_DIM, 8);
  OK(n, "f32[7, 32]");
  Node *c2 = IN_("f32[7, 2]");
  n = MK(ROPE, x, c2, c2);
  INT(n, HEAD_DIM, 8);
  INT(n, N_ROT, 4);
  OK(n, "f32[2, 7, 32]"); /* [S, n_rot/2] */
  n = MK(ROPE, x, cs, cs);
  INT(n, HEAD_DIM, 8);
  INT(n, N_ROT, 4);
  OK(n, "f32[2, 7, 32]"); /* [S, D/2] */
  n = MK(ROPE, x, c2, c2);
  INT(n, HEAD_DIM, 8);
  BAD(n, "rope: cos must be [7, 4] (S, n_rot/2), got f32[7, 2]");
  n = MK(ROPE, x, cs, cs);
  INT(n, HEAD_DIM, 6);
  BAD(n, "last dimension 32 of x is not a multiple of head_dim 6");
  n = MK(ROPE, IN_("f32[7, 35]"), cs, cs);
  INT(n, HEAD_DIM, 7);
  BAD(n, "head_dim must be even, got 7");
  n = MK(ROPE, x, cs, cs);
  INT(n, HEAD_DIM, 8);
  INT(n, N_ROT, 3);
  BAD(n, "n_rot must be even, got 3");
  n = MK(ROPE, x, cs, cs);
  INT(n, HEAD_DIM, 8);
  INT(n, N_ROT, 10);
  BAD(n, "n_rot must be in [1, 8], got 10");
  n = MK(ROPE, x, cs, IN_("f32[7, 3]"));
  INT(n, HEAD_DIM, 8);
  BAD(n, "sin has type f32[7, 3], expected f32[7, 4]");
  n = MK(ROPE, IN_("f32[32]"), cs, cs);
  INT(n, HEAD_DIM, 8);
  BAD(n, "x must be [B, S, H*D] or [S, H*D]");
  n = MK(ROPE_BACKWARD, x, cs, cs);
  INT(n, HEAD_DIM, 8);
  OK(n, "f32[2, 7, 32]");
}

static Node *attn(const char *q, const char *k, const char *v) {
  return MK(ATTENTION, IN_(q), IN_(k), IN_(v));
}

SH_TEST(t_attention) {
  Node *n = attn("f32[2, 5, 16]", "f32[2, 9, 16]", "f32[2, 9, 16]");
  INT(n, HEADS, 4);
  OK(n, "f32[2, 5, 16]");
  n = attn("f32[2, 5, 16]", "f32[2, 9, 16]", "f32[2, 9, 16]");
  INT(n, HEAD_DIM, 4);
  WORD(n, MASK, "causal");
  OK(n, "f32[2, 5, 16]");
  n = attn("f32[2, 5, 16]", "f32[2, 9, 16]", "f32[2, 9, 16]");
  BAD(n, "attention: rank-3 operands need heads or head_dim");
  n = attn("f32[2, 5, 16]", "f32[2, 9, 16]", "f32[2, 9, 16]");
  INT(n, HEADS, 3);
  INT(n, HEAD_DIM, 5);
  BAD(n, "heads 3 * head_dim 5 != last dimension 16");
  n = attn("f32[2, 5, 16]", "f32[2, 9, 16]", "f32[2, 9, 16]");
  INT(n, HEADS, 3);
  BAD(n, "last dimension 16 is not divisible by heads 3");
  n = attn("f32[2, 4, 5, 8]", "f32[2, 4, 9, 8]", "f32[2, 4, 9, 8]");
  OK(n, "f32[2, 4, 5, 8]");
  n = attn("f32[2, 4, 5, 8]", "f32[2, 4, 9, 8]", "f32[2, 4, 7, 8]");
  BAD(n, "k and v lengths differ: 9 vs 7");
  n = attn("f32[2, 4, 5, 8]", "f32[2, 4, 9, 4]", "f32[2, 4, 9, 8]");
  BAD(n, "k f32[2, 4, 9, 4] does not match q f32[2, 4, 5, 8]");
  n = attn("f32[2, 4, 5, 8]", "f32[2, 4, 9, 8]", "f32[2, 4, 9, 8]");
  INT(n, HEADS, 2);
  BAD(n, "heads 2 does not match q");
  n = attn("f32[2, 4, 5, 8]", "f32[2, 4, 9, 8]", "f64[2, 4, 9, 8]");
  BAD(n, "dtype mismatch: f32 vs f64");
  n = attn("f32[5, 8]", "f32[9, 8]", "f32[9, 8]");
  BAD(n, "q must be [B, S, H*D] or [B, H, S, D]");
}

SH_TEST(t_attention_masks) {
  Node *n;
  n = attn("f32[2, 4, 5, 8]", "f32[2, 4, 9, 8]", "f32[2, 4, 9, 8]");
  WORD(n, MASK, "sliding_window");
  BAD(n, "mask=sliding_window needs a window attribute");
  n = attn("f32[2, 4, 5, 8]", "f32[2, 4, 9, 8]", "f32[2, 4, 9, 8]");
  WORD(n, MASK, "sliding_window");
  INT(n, WINDOW, 3);
  OK(n, "f32[2, 4, 5, 8]");
  n = attn("f32[2, 4, 5, 8]", "f32[2, 4, 9, 8]", "f32[2, 4, 9, 8]");
  INT(n, WINDOW, 3);
  BAD(n, "window is only valid with mask=sliding_window");
  n = attn("f32[2, 4, 5, 8]", "f32[2, 4, 9, 8]", "f32[2, 4, 9, 8]");
  WORD(n, MASK, "custom");
  BAD(n, "mask=custom needs 4 operands, got 3");
  Node *q = IN_("f32[2, 4, 5, 8]"), *k = IN_("f32[2, 4, 9, 8]");
  n = MK(ATTENTION, q, k, k, IN_("f32[2, 9]"));
  WORD(n, MASK, "custom");
  OK(n, "f32[2, 4, 5, 8]");
  n = MK(ATTENTION, q, k, k, IN_("bool[2, 9]"));
  WORD(n, MASK, "custom");
  OK(n, "f32[2, 4, 5, 8]");
  n = MK(ATTENTION, q, k, k, IN_("f32[2, 5]"));
  WORD(n, MASK, "custom");
  BAD(n, "custom mask has type f32[2, 5], expected f32[2, 9]");
  n = MK(ATTENTION, q, k, k, IN_("f32[2, 4, 5, 9]"));
  WORD(n, MASK, "bias");
  OK(n, "f32[2, 4, 5, 8]");
  n = MK(ATTENTION, q, k, k, IN_("f32[2, 4, 9, 5]"));
  WORD(n, MASK, "bias");
  BAD(n, "bias has type f32[2, 4, 9, 5], expected f32[2, 4, 5, 9]");
  n = MK(ATTENTION, q, k, k, IN_("f32[2, 9]"));
  BAD(n, "mask=none needs 3 operands, got 4");
  Node *q3 = IN_("f32[2, 5, 16]"), *k3 = IN_("f32[2, 9, 16]");
  n = MK(ATTENTION, q3, k3, k3, IN_("f32[2, 2, 5, 9]"));
  WORD(n, MASK, "bias");
  INT(n, HEAD_DIM, 8);
  OK(n, "f32[2, 5, 16]");
  n = MK(ATTENTION, q, k, k);
  FLT(n, SOFTCAP, 0.0);
  BAD(n, "softcap must be > 0");
  n = MK(ATTENTION, q, k, k);
  FLT(n, SOFTCAP, 30.0);
  FLT(n, SCALE, 0.5);
  OK(n, "f32[2, 4, 5, 8]");
}

SH_TEST(t_conv_pool) {
  Node *x = IN_("f32[2, 3, 32, 32]"), *w = IN_("f32[8, 3, 5, 5]");
  OK(MK(CONV2D, x, w), "f32[2, 8, 28, 28]");
  Node *n = MK(CONV2D, x, w);
  INTS(n, STRIDE, 2, 2);
  INTS(n, PADDING, 2, 1);
  INTS(n, DILATION, 1, 2);
  /* H: (32+4-4-1)/2+1 = 16; W: (32+2-8-1)/2+1 = 13 */
  OK(n, "f32[2, 8, 16, 13]");
  n = MK(CONV2D, IN_("f32[1, 6, 9, 9]"), IN_("f32[4, 3, 3, 3]"));
  INT(n, GROUPS, 2);
  OK(n, "f32[1, 4, 7, 7]");
  n = MK(CONV2D, IN_("f32[1, 6, 9, 9]"), IN_("f32[4, 3, 3, 3]"));
  INT(n, GROUPS, 4);
  BAD(n, "groups 4 must divide input channels 6 and output channels 4");
  BAD(MK(CONV2D, IN_("f32[1, 6, 9, 9]"), IN_("f32[4, 3, 3, 3]")),
      "needs 6 input channels per group");
  BAD(MK(CONV2D, IN_("f32[1, 3, 4, 4]"), IN_("f32[4, 3, 5, 5]")),
      "conv2d: output height is not positive (input 4, kernel 5, padding 0, "
      "dilation 1, stride 1)");
  n = MK(CONV2D, x, w);
  INTS(n, STRIDE, 0, 1);
  BAD(n, "conv2d: stride[0] must be >= 1, got 0");
  n = MK(CONV2D, x, w);
  INTS(n, PADDING, 1);
  BAD(n, "padding must have 2 entries, got 1");
  BAD(MK(CONV2D, IN_("f32[3, 32, 32]"), w), "x must be [N, C, H, W]");
  BAD(MK(CONV2D, x, IN_("f64[8, 3, 5, 5]")), "dtype mismatch");
  n = MK(CONV2D, x, w);
  INTS(n, PADDING, -1, 0);
  BAD(n, "conv2d: padding[0] must be >= 0, got -1");
  n = MK(CONV2D, x, w);
  INTS(n, DILATION, 1, 0);
  BAD(n, "conv2d: dilation[1] must be >= 1, got 0");
  n = MK(CONV2D, x, w);
  INT(n, GROUPS, 0);
  BAD(n, "conv2d: groups must be >= 1, got 0");
  BAD(MK(CONV2D, x, IN_("f32[8, 3, 5]")), "w must be [C_out, C_in/groups");
  n = MK(CONV2D, IN_("f32[1, 3, 4, 4]"), IN_("f32[2, 3, 2, 2]"));
  INTS(n, DILATION, 1, 4);
  BAD(n, "output width is not positive (input 4, kernel 2, padding 0, "
         "dilation 4, stride 1)");
  /* padding beyond the kernel's reach is valid: (2+8-2)/1+1 = 9 */
  n = MK(CONV2D, IN_("f32[1, 3, 2, 2]"), IN_("f32[2, 3, 2, 2]"));
  INTS(n, PADDING, 4, 0);
  OK(n, "f32[1, 2, 9, 1]");
  n = MK(MAX_POOL2D, x);
  INTS(n, KERNEL, 2, 2);
  OK(n, "f32[2, 3, 16, 16]");
  n = MK(AVG_POOL2D, x);
  INTS(n, KERNEL, 3, 3);
  INTS(n, STRIDE, 2, 1);
  INTS(n, PADDING, 1, 0);
  OK(n, "f32[2, 3, 16, 30]");
  n = MK(MAX_POOL2D, x);
  INTS(n, KERNEL, 3, 3);
  INTS(n, PADDING, 2, 0);
  BAD(n, "max_pool2d: padding 2 exceeds half the kernel 3");
  n = MK(MAX_POOL2D, IN_("f32[1, 1, 2, 2]"));
  INTS(n, KERNEL, 3, 3);
  BAD(n, "output height is not positive");
  BAD(MK(AVG_POOL2D, x), "avg_pool2d: missing attribute 'kernel'");
}

int main(void) {
  static const ShTest tests[] = {
      {"norms", t_norms}, {"rope", t_rope}, {"attention", t_attention},
      {"attention_masks", t_attention_masks},
      {"conv_pool", t_conv_pool}, {NULL, NULL}};
  return sh_run("shape_nn", tests);
}
