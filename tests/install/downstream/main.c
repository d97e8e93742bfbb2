/* main.c -- calls lin_grad, lin_jvp and lin_hvp (downstream/model.rlx,
 * compiled with --grad --jvp --hvp) through the header's index and size
 * macros and checks the loss, the gradient, the tangent, the
 * Hessian-vector product and the argument kinds; built by the install-tree tests
 * through find_package(rlxc), through pkg-config, and as C++. */
#include <math.h>
#include <stdio.h>

#include "model.h"

int main(void)
{
  float x[4] = {1, 2, 3, 4}, w[4] = {0.5f, -1, 2, 0.25f}, one = 1;
  float loss = 0, dw[4] = {0};
  const float want[4] = {1, -4, 12, 2};
  const void *in[lin_grad_NUM_INPUTS];
  void *out[lin_grad_NUM_OUTPUTS];
  in[lin_grad_ARG_x] = x;
  in[lin_grad_ARG_w] = w;
  in[lin_grad_ARG_d_output] = &one;
  out[lin_grad_OUT_loss] = &loss;
  out[lin_grad_ARG_d_w] = dw;
  const rlx_signature *sig = lin_grad_signature();
  int rc = lin_grad(in, out, NULL);
  int bad = rc != RLX_OK || fabsf(loss - 14.5f) > 1e-5f ||
            lin_grad_BYTES_w != sizeof w ||
            lin_grad_OUT_BYTES_d_w != sizeof dw ||
            sig->inputs[lin_grad_ARG_w].kind != RLX_ARG_PARAM ||
            sig->inputs[lin_grad_ARG_x].kind != RLX_ARG_INPUT ||
            sig->outputs[0].kind != RLX_ARG_OUTPUT;
  for (int i = 0; i < 4; i++)
    bad |= fabsf(dw[i] - want[i]) > 1e-5f;
  /* along v = 1: dloss = sum(2 x w) = 11, H v = 2 x (H = diag(2 x)) */
  float v[4] = {1, 1, 1, 1}, tl = 0, gv = 0, hv[4] = {0}, g2[4] = {0};
  const void *jin[lin_jvp_NUM_INPUTS];
  void *jout[lin_jvp_NUM_OUTPUTS];
  jin[lin_jvp_ARG_x] = x;
  jin[lin_jvp_ARG_w] = w;
  jin[lin_jvp_ARG_tangent_w] = v;
  jout[0] = &loss;
  jout[lin_jvp_OUT_tangent_loss] = &tl;
  rc |= lin_jvp(jin, jout, NULL);
  const void *hin[lin_hvp_NUM_INPUTS];
  void *hout[lin_hvp_NUM_OUTPUTS];
  hin[lin_hvp_ARG_x] = x;
  hin[lin_hvp_ARG_w] = w;
  hin[lin_hvp_ARG_d_output] = &one;
  hin[lin_hvp_ARG_tangent_w] = v;
  hout[0] = &loss;
  hout[lin_hvp_OUT_d_w] = g2;
  hout[lin_hvp_OUT_grad_dot_tangent] = &gv;
  hout[lin_hvp_OUT_hvp_w] = hv;
  rc |= lin_hvp(hin, hout, NULL);
  bad |= rc != RLX_OK || fabsf(tl - 11) > 1e-5f || fabsf(gv - 11) > 1e-5f;
  for (int i = 0; i < 4; i++)
    bad |= fabsf(hv[i] - 2 * x[i]) > 1e-5f || fabsf(g2[i] - want[i]) > 1e-5f;
  printf("rc=%d loss=%g dw=%g %g %g %g jvp=%g hv=%g %g %g %g "
         "workspace=%zu: %s\n", rc, loss, dw[0], dw[1], dw[2], dw[3], tl,
         hv[0], hv[1], hv[2], hv[3], (size_t)lin_grad_WORKSPACE_BYTES,
         bad ? "WRONG" : "ok");
  return bad;
}
