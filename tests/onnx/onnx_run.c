/* onnx_run.c -- driver for a graph converted by tools/onnx2rlx.py.
 *
 * Compiled with a generated object, naming the entry with -DRLX_ENTRY
 * and including its header (as tests/tools/rlx_run.c):
 *   cc -I. -include m.h -DRLX_ENTRY=m tests/onnx/onnx_run.c \
 *      tests/tools/harness.c m.o librlxrt.a -lm -lpthread
 *
 *   onnx_run WEIGHTS IN_DIR OUT_DIR
 *     params from WEIGHTS (the converter's safetensors file) through
 *     rlx_load_params; every other input from IN_DIR/NAME.bin (raw, in
 *     the input's dtype, size checked); one call; every output written
 *     as OUT_DIR/NAME.bin in float64.
 *   onnx_run --sgd STEPS LR WEIGHTS IN_DIR OUT.safetensors
 *     RLX_ENTRY must be a gradient entry (NAME_grad: outputs loss, ...,
 *     d_PARAM...): STEPS steps of p -= LR * d_p on the same inputs
 *     (d_output = 1), printing "step K loss L" before each update; the
 *     trained params are saved with rlx_save_params.
 * Exit status: 0 ok, 1 a call or a load failed, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tools/harness.h"

#ifndef RLX_ENTRY
#error "compile with -DRLX_ENTRY=<entry name> -include <entry>.h"
#endif
#define RLX_CAT2(a, b) a##b
#define RLX_CAT(a, b) RLX_CAT2(a, b)
#define RLX_SIG(e) RLX_CAT(e, _signature)

static void **in_ptrs(HxCall *c)
{
  void **p = malloc(sizeof(void *) * (size_t)(c->sig->num_inputs + 1));
  for (int i = 0; p && i < c->sig->num_inputs; i++)
    p[i] = c->in[i].data;
  return p;
}

/* Params from the safetensors file, the other inputs from DIR. */
static int load(HxCall *c, const char *weights, const char *dir)
{
  void **p = in_ptrs(c);
  int rc = p ? rlx_load_params(c->sig, weights, p) : RLX_ERR_NOMEM;
  free(p);
  if (rc != RLX_OK) {
    fprintf(stderr, "onnx_run: rlx_load_params(%s): %s\n", weights,
            rlx_strerror(rc));
    return 1;
  }
  for (int i = 0; i < c->sig->num_inputs; i++) {
    const rlx_tensor_desc *d = &c->sig->inputs[i];
    if (d->kind == RLX_ARG_PARAM)
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dir, d->name);
    size_t len;
    void *buf = hx_read_file(path, &len);
    if (!buf || len != c->in[i].bytes) {
      fprintf(stderr, "onnx_run: %s: %s (%zu bytes, want %zu)\n", path,
              buf ? "wrong size" : "cannot read", buf ? len : 0,
              c->in[i].bytes);
      free(buf);
      return 1;
    }
    memcpy(c->in[i].data, buf, len);
    free(buf);
  }
  return 0;
}

static int write_outputs(HxCall *c, const char *dir)
{
  for (int j = 0; j < c->sig->num_outputs; j++) {
    const HxTensor *t = &c->out[j];
    double *v = malloc(sizeof(double) * (size_t)(t->numel + 1));
    if (!v)
      return 1;
    for (int64_t k = 0; k < t->numel; k++)
      v[k] = hx_get(t, k);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dir, c->sig->outputs[j].name);
    bool ok = hx_write_file(path, v, sizeof(double) * (size_t)t->numel);
    free(v);
    if (!ok)
      return 1;
  }
  return 0;
}

/* Index of output "d_<name>" or -1. */
static int grad_of(const rlx_signature *s, const char *name)
{
  for (int j = 0; j < s->num_outputs; j++)
    if (!strncmp(s->outputs[j].name, "d_", 2) &&
        !strcmp(s->outputs[j].name + 2, name))
      return j;
  return -1;
}

static int sgd(HxCall *c, int steps, double lr, const char *save)
{
  const rlx_signature *s = c->sig;
  for (int i = 0; i < s->num_inputs; i++)
    if (!strcmp(s->inputs[i].name, "d_output"))
      hx_set(&c->in[i], 0, 1.0);
  for (int k = 0; k < steps; k++) {
    int rc = hx_run(c);
    if (rc) {
      fprintf(stderr, "onnx_run: %s: %s\n", s->name, rlx_strerror(rc));
      return 1;
    }
    printf("step %d loss %.9g\n", k, hx_get(&c->out[0], 0));
    for (int i = 0; i < s->num_inputs; i++) {
      if (s->inputs[i].kind != RLX_ARG_PARAM)
        continue;
      int j = grad_of(s, s->inputs[i].name);
      if (j < 0) {
        fprintf(stderr, "onnx_run: no gradient for param %s\n",
                s->inputs[i].name);
        return 1;
      }
      for (int64_t e = 0; e < c->in[i].numel; e++)
        hx_set(&c->in[i], e,
               hx_get(&c->in[i], e) - lr * hx_get(&c->out[j], e));
    }
  }
  void **p = in_ptrs(c);
  int rc = p ? rlx_save_params(s, save, (const void *const *)p)
             : RLX_ERR_NOMEM;
  free(p);
  if (rc != RLX_OK) {
    fprintf(stderr, "onnx_run: rlx_save_params(%s): %s\n", save,
            rlx_strerror(rc));
    return 1;
  }
  return 0;
}

int main(int argc, char **argv)
{
  int steps = 0;
  double lr = 0;
  int a = 1;
  if (argc == 7 && !strcmp(argv[1], "--sgd")) {
    steps = atoi(argv[2]);
    lr = atof(argv[3]);
    a = 4;
  } else if (argc != 4) {
    fprintf(stderr, "usage: onnx_run WEIGHTS IN_DIR OUT_DIR\n"
                    "       onnx_run --sgd STEPS LR WEIGHTS IN_DIR "
                    "OUT.safetensors\n");
    return 2;
  }
  HxCall c;
  if (!hx_call_init(&c, RLX_ENTRY, RLX_SIG(RLX_ENTRY)(), false))
    return 1;
  int status = load(&c, argv[a], argv[a + 1]);
  if (!status && steps > 0) {
    status = sgd(&c, steps, lr, argv[a + 2]);
  } else if (!status) {
    int rc = hx_run(&c);
    if (rc) {
      fprintf(stderr, "onnx_run: %s: %s\n", c.sig->name, rlx_strerror(rc));
      status = 1;
    } else {
      status = write_outputs(&c, argv[a + 2]);
    }
  }
  hx_call_free(&c);
  return status;
}
