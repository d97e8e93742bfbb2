/* forward_demo.c -- call the entry point compiled from forward.rlx.
 *
 *   rlxc samples/forward.rlx -o forward.o     # forward.o + forward.h
 *   cc -I. -Iruntime -I<dir of forward.h> samples/forward_demo.c \
 *      forward.o build/runtime/librlxrt.a -lm -lpthread -o forward_demo
 *
 * Prints the generated signature, the class probabilities and the best
 * class of each row, and recomputes them in plain C: exit status 0 when
 * they agree (|diff| <= 1e-5), 1 otherwise.
 */
#include <math.h>
#include <stdio.h>

#include "forward.h"

enum { N = 4, D = 3, H = 5, C = 2 };

static void reference(const float *x, const float *w1, const float *b1,
                      const float *w2, const float *b2, double *p)
{
  for (int i = 0; i < N; i++) {
    double h[H], z[C], m = -INFINITY, s = 0;
    for (int j = 0; j < H; j++) {
      h[j] = b1[j];
      for (int k = 0; k < D; k++)
        h[j] += (double)x[i * D + k] * w1[k * H + j];
      h[j] = h[j] > 0 ? h[j] : 0;
    }
    for (int c = 0; c < C; c++) {
      z[c] = b2[c];
      for (int j = 0; j < H; j++)
        z[c] += h[j] * w2[j * C + c];
      m = z[c] > m ? z[c] : m;
    }
    for (int c = 0; c < C; c++)
      s += exp(z[c] - m);
    for (int c = 0; c < C; c++)
      p[i * C + c] = exp(z[c] - m) / s;
  }
}

int main(void)
{
  float x[N * D], w1[D * H], b1[H], w2[H * C], b2[C], probs[N * C];
  int64_t best[N];
  for (int i = 0; i < N * D; i++)
    x[i] = (float)((i * 7 % 11) - 5) / 4.0f;
  for (int i = 0; i < D * H; i++)
    w1[i] = (float)((i * 5 % 7) - 3) / 3.0f;
  for (int i = 0; i < H; i++)
    b1[i] = 0.1f * (float)i;
  for (int i = 0; i < H * C; i++)
    w2[i] = (float)((i * 3 % 5) - 2) / 2.0f;
  b2[0] = 0.25f;
  b2[1] = -0.25f;

  const rlx_signature *sig = forward_signature();
  printf("%s: %d inputs, %d outputs, workspace %zu bytes\n", sig->name,
         sig->num_inputs, sig->num_outputs, sig->workspace_bytes);
  const void *in[] = {x, w1, b1, w2, b2};
  void *out[] = {probs, best};
  int rc = forward(in, out, NULL);
  if (rc) {
    fprintf(stderr, "forward failed: %s\n", rlx_strerror(rc));
    return 1;
  }
  double ref[N * C];
  reference(x, w1, b1, w2, b2, ref);
  int bad = 0;
  for (int i = 0; i < N; i++) {
    int rbest = ref[i * C + 1] > ref[i * C] ? 1 : 0;
    printf("row %d: p = [%.5f, %.5f]  best = %lld\n", i, probs[i * C],
           probs[i * C + 1], (long long)best[i]);
    for (int c = 0; c < C; c++)
      bad += fabs(probs[i * C + c] - ref[i * C + c]) > 1e-5;
    bad += best[i] != rbest;
  }
  printf(bad ? "MISMATCH with the C reference\n"
             : "matches the C reference\n");
  return bad != 0;
}
