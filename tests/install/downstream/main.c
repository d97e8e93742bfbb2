/* main.c -- calls lin_grad (downstream/model.rlx, compiled with --grad)
 * through the header's index and size macros and checks the loss, the
 * gradient and the argument kinds; built by the install-tree tests
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
  printf("rc=%d loss=%g dw=%g %g %g %g workspace=%zu: %s\n", rc, loss,
         dw[0], dw[1], dw[2], dw[3], (size_t)lin_grad_WORKSPACE_BYTES,
         bad ? "WRONG" : "ok");
  return bad;
}
