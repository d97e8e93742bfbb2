/* main.c -- calls lin_grad (downstream/model.rlx, compiled with --grad)
 * and checks the loss and the gradient; built by the install-tree tests
 * through find_package(rlxc), through pkg-config, and as C++. */
#include <math.h>
#include <stdio.h>

#include "model.h"

int main(void)
{
  float x[4] = {1, 2, 3, 4}, w[4] = {0.5f, -1, 2, 0.25f}, one = 1;
  float loss = 0, dw[4] = {0};
  const float want[4] = {1, -4, 12, 2};
  const void *in[] = {x, w, &one};
  void *out[] = {&loss, dw};
  int rc = lin_grad(in, out, NULL);
  int bad = rc != RLX_OK || fabsf(loss - 14.5f) > 1e-5f;
  for (int i = 0; i < 4; i++)
    bad |= fabsf(dw[i] - want[i]) > 1e-5f;
  printf("rc=%d loss=%g dw=%g %g %g %g workspace=%zu: %s\n", rc, loss,
         dw[0], dw[1], dw[2], dw[3], (size_t)lin_grad_WORKSPACE_BYTES,
         bad ? "WRONG" : "ok");
  return bad;
}
