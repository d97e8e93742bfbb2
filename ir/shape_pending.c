/* shape_pending.c: TEMPORARY. Rules not written yet report a clear
 * diagnostic so the library links; each moves to its category file. */
#include "ir/shape_internal.h"

bool shape_reduce(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_softmax(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_cumsum(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_softmax_xent(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_topk(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_reshape(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_transpose(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_expand(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_concat(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_narrow(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_gather(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_scatter_add(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_layer_norm(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_group_norm(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_batch_norm(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_rope(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_attention(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_conv2d(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_pool2d(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_scan(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_if(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_while(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_custom_fn(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_transformer(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_selective_scan(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_gated_delta_net(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_fake_quantize(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_fake_quantize_lsq(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_quantize(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_dequantize(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_q_matmul(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_q_conv2d(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_dequant_matmul(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_grouped_matmul(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_complex_unary(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_complex_to_real(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_complex(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_log_mel(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_rng(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_sample(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_bwd_like_x(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_norm_bwd(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_gather_bwd(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_avg_pool_bwd(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_conv2d_bwd(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_softmax_xent_bwd(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_attention_bwd(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_complex_norm_sq_bwd(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_lsq_bwd(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_scan_bwd(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}

bool shape_log_mel_bwd(Ctx *c, Node *n) {
  return sh_err(c, n, "shape rule not implemented yet");
}
