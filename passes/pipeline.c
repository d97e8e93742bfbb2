/* pipeline.c: the pass pipeline, as a list one can read.
 *
 * pass_run_pipeline() runs the passes of `passes[]` in order, one line
 * each. After every pass it
 *   - prints the module to stderr when --dump-ir asks for it
 *     (`--dump-ir=NAME`: after that pass; `--dump-ir=all`: after
 *     "parse" and after every pass that changed the module, by the
 *     fingerprint below, and one line `// ---- after NAME: no change
 *     ----` for a pass that did not), preceded by the line
 *     `// ---- after NAME ----`;
 *   - records the pass's time and memory for --time-passes;
 *   - runs ir_verify() on the whole module unless the environment sets
 *     RLX_NO_VERIFY (to time the passes alone). A verifier failure after
 *     a pass is a compiler bug: the verifier reports it as
 *     "internal: verifier: ..." and a note names the pass.
 *     A structural fingerprint of the module (every node's op, operands,
 *     attributes, type and flags; every graph's node list, arguments and
 *     returns; the Unit's graph pointers) is taken after each successful
 *     verification; a pass that leaves the fingerprint unchanged changed
 *     nothing the verifier looks at, so the module is not verified again
 *     (the AD passes are no-ops without --grad, and hashing is several
 *     times cheaper than verifying).
 * The pipeline stops at the first pass that fails (returns false or
 * reports an error); the diagnostics are already on the Ctx.
 *
 * Adding a pass: one line in `passes[]` (its own file states what it
 * requires and provides; passes that only apply with --grad / --jvp
 * test u->opt themselves and return true otherwise).
 */
#include "passes/passes.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* "parse": a marker, not a transformation. The front end has already
 * built and shape-checked the module before the pipeline starts; this
 * entry exists so that `--dump-ir=parse` (and `all`) shows the module
 * exactly as parsed, and so that it is verified once before any real
 * pass runs. */
static bool pass_parse(Unit *u) {
  (void)u;
  return true;
}

/* "verify": an explicit verification point (also when RLX_NO_VERIFY
 * disables the automatic check after each pass). */
static bool pass_verify(Unit *u) { return ir_verify(u->ctx, u->mod); }

static const Pass passes[] = {
    {"parse", pass_parse},
    {"verify", pass_verify},
    {"lower_scan_bwd", pass_lower_scan_bwd},
    {"expand_fused", pass_expand_fused},
    {"jvp", pass_jvp},
    {"prepare_if", pass_prepare_if},
    {"prepare_while", pass_prepare_while},
    {"inline_custom_fn", pass_inline_custom_fn},
    {"scan_prep", pass_scan_prep},
    {"grad", pass_grad},
    {"train", pass_train},
    {"hvp", pass_hvp},
    {"lower_quant", pass_lower_quant},
    {"lower_norm_params", pass_lower_norm_params},
    {"simplify", pass_simplify},
    {"cse", pass_cse},
    {"dce", pass_dce},
    {"grad_outputs", pass_grad_outputs},
};

const Pass *pass_list(int *n) {
  *n = (int)(sizeof passes / sizeof passes[0]);
  return passes;
}

static bool want_dump(const Options *o, const char *pass) {
  if (!o || !o->dump_ir) return false;
  return !strcmp(o->dump_ir, "all") || !strcmp(o->dump_ir, pass);
}

static void dump(const Unit *u, const char *pass) {
  fflush(stdout);
  fprintf(stderr, "// ---- after %s ----\n", pass);
  ir_print_module(stderr, u->mod);
  fflush(stderr);
}

static uint64_t fingerprint(const Unit *u);

/* --dump-ir after pass i: with `all`, only when the module changed
 * since the last dump (*fp: its fingerprint then). */
static void dump_after(const Unit *u, const char *pass, int i, uint64_t *fp) {
  if (!want_dump(u->opt, pass)) return;
  if (strcmp(u->opt->dump_ir, "all")) {
    dump(u, pass);
    return;
  }
  uint64_t now = fingerprint(u);
  if (i > 0 && now == *fp) {
    fprintf(stderr, "// ---- after %s: no change ----\n", pass);
    return;
  }
  *fp = now;
  dump(u, pass);
}

/* ---- structural fingerprint ---- */
static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15u + (h << 6) + (h >> 2);
  return h * 0xFF51AFD7ED558CCDu;
}

static uint64_t mix_ptr(uint64_t h, const void *p) {
  return mix(h, (uint64_t)(uintptr_t)p);
}

static uint64_t hash_attr(uint64_t h, const Attr *a) {
  uint64_t w[sizeof a->u / sizeof(uint64_t) + 1] = {0};
  memcpy(w, &a->u, sizeof a->u);
  h = mix(h, (uint64_t)a->id << 8 | a->kind);
  for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) h = mix(h, w[i]);
  if (a->kind == AK_INTS && a->u.ints.v)
    for (int i = 0; i < a->u.ints.n; i++)
      h = mix(h, (uint64_t)a->u.ints.v[i]);
  return h;
}

static uint64_t hash_node(uint64_t h, const Node *n) {
  h = mix_ptr(h, n);
  if (!n) return h;
  h = mix(h, (uint64_t)n->id << 32 | n->op);
  h = mix(h, (uint64_t)n->type.dt << 32 | (uint32_t)n->type.rank);
  for (int i = 0; i < n->type.rank && i < RLX_MAX_RANK; i++)
    h = mix(h, (uint64_t)n->type.dims[i]);
  h = mix(h, (uint64_t)n->nin << 32 | (uint32_t)n->nattr);
  h = mix_ptr(mix_ptr(mix_ptr(h, n->name), n->data), n->in);
  h = mix(h, (uint64_t)n->arg_index << 2 | n->splat << 1 | n->literal);
  for (int i = 0; i < n->nin && n->in; i++) h = mix_ptr(h, n->in[i]);
  for (int i = 0; i < n->nattr && n->attrs; i++)
    h = hash_attr(h, &n->attrs[i]);
  return h;
}

static uint64_t fingerprint(const Unit *u) {
  uint64_t h = mix_ptr(mix_ptr(mix_ptr(mix_ptr(1, u->entry), u->grad),
                               u->jvp), u->hvp);
  if (u->train) h = mix_ptr(h, u->train);
  const Module *m = u->mod;
  h = mix(mix_ptr(h, m), m ? (uint64_t)m->ngraphs : 0);
  for (int gi = 0; m && gi < m->ngraphs; gi++) {
    const Graph *g = m->graphs[gi];
    h = mix_ptr(h, g);
    if (!g) continue;
    h = mix_ptr(h, g->name);
    h = mix(h, (uint64_t)g->nnodes << 40 ^ (uint64_t)g->nargs << 20 ^
                   (uint64_t)g->nret);
    for (int i = 0; i < g->nnodes; i++) h = hash_node(h, g->nodes[i]);
    for (int i = 0; i < g->nargs; i++) h = mix_ptr(h, g->args[i]);
    for (int i = 0; i < g->nret; i++) h = mix_ptr(h, g->rets[i]);
  }
  return h;
}

/* Verify unless nothing changed since the last verification. */
static bool verify_after(Unit *u, const char *pass, uint64_t *last,
                         bool *have) {
  uint64_t fp = fingerprint(u);
  if (*have && fp == *last) return true;
  if (!ir_verify(u->ctx, u->mod)) {
    diag_note(u->ctx, (Loc){0, 0}, "the module was malformed after "
              "pass '%s'", pass);
    return false;
  }
  *last = fp;
  *have = true;
  return true;
}

/* Dynamic dimensions (docs/dynamic-dims.md): the passes and the CPU
 * code generator carry them (code generation refuses, per node, what
 * its emitters cannot take yet: cg_dyn_check). The AD passes do for the
 * ops below, whose rules keep sizes symbolic; a graph with any other
 * op, and the GPU target, stop after "verify" with one diagnostic. */
static bool ad_dynamic_op(Op op) {
  if (op_has(op, OPF_UNARY) || op_has(op, OPF_BINARY) ||
      op_has(op, OPF_COMPARE))
    return true;
  switch (op) {
  case OP_INPUT: case OP_PARAM: case OP_CONST: case OP_WHERE: case OP_CAST:
  case OP_STOP_GRADIENT: case OP_MATMUL: case OP_REDUCE_SUM:
  case OP_REDUCE_MEAN: case OP_REDUCE_MAX: case OP_REDUCE_MIN:
  case OP_SOFTMAX: case OP_LOG_SOFTMAX: case OP_SOFTMAX_CROSS_ENTROPY:
  case OP_RESHAPE: case OP_TRANSPOSE: case OP_EXPAND:
  case OP_ATTENTION: case OP_ATTENTION_BACKWARD: case OP_ROPE:
  case OP_ROPE_BACKWARD: case OP_CUMSUM: case OP_CUMSUM_BACKWARD:
  case OP_LAYER_NORM: case OP_RMS_NORM: case OP_NARROW: case OP_CONCAT:
  case OP_GROUP_NORM: case OP_BATCH_NORM_INFERENCE:
  case OP_CONV2D: case OP_CONV2D_BACKWARD_INPUT:
  case OP_CONV2D_BACKWARD_WEIGHT: case OP_MAX_POOL2D: case OP_AVG_POOL2D:
  case OP_MAX_POOL2D_BACKWARD: case OP_AVG_POOL2D_BACKWARD:
  case OP_IF: case OP_WHILE: case OP_CUSTOM_FN: case OP_SCAN: case OP_TOPK:
  case OP_COMPLEX: case OP_REAL: case OP_IMAG: case OP_CONJUGATE:
  case OP_COMPLEX_NORM_SQ: case OP_COMPLEX_NORM_SQ_BACKWARD: case OP_FFT:
  case OP_FUSED_TRANSFORMER_LAYER: case OP_GROUPED_MATMUL:
  case OP_GROUPED_MATMUL_BACKWARD_WEIGHT: case OP_LOG_MEL:
  case OP_LOG_MEL_BACKWARD: case OP_DENSE_SOLVE: case OP_BATCHED_DENSE_SOLVE:
  case OP_SELECTIVE_SCAN: case OP_GATED_DELTA_NET:
  case OP_FAKE_QUANTIZE: case OP_FAKE_QUANTIZE_LSQ:
  case OP_FAKE_QUANTIZE_BACKWARD: case OP_FAKE_QUANTIZE_LSQ_BACKWARD_X:
  case OP_FAKE_QUANTIZE_LSQ_BACKWARD_SCALE: case OP_QUANTIZE:
  case OP_DEQUANTIZE: case OP_DEQUANT_MATMUL: case OP_Q_MATMUL:
  case OP_Q_CONV2D: case OP_RNG_UNIFORM: case OP_RNG_NORMAL: case OP_SAMPLE:
  case OP_SCATTER_ADD: case OP_RELU_BACKWARD: case OP_ACTIVATION_BACKWARD:
  case OP_SOFTMAX_CROSS_ENTROPY_BACKWARD:
  case OP_LAYER_NORM_BACKWARD_INPUT: case OP_LAYER_NORM_BACKWARD_GAMMA:
  case OP_RMS_NORM_BACKWARD_INPUT: case OP_RMS_NORM_BACKWARD_GAMMA:
  case OP_RMS_NORM_BACKWARD_BETA: case OP_GROUP_NORM_BACKWARD_INPUT:
  case OP_GROUP_NORM_BACKWARD_GAMMA: case OP_GROUP_NORM_BACKWARD_BETA:
  case OP_BATCH_NORM_INFERENCE_BACKWARD_INPUT:
  case OP_BATCH_NORM_INFERENCE_BACKWARD_GAMMA:
  case OP_BATCH_NORM_INFERENCE_BACKWARD_BETA:
    return true;
  default:
    return false;
  }
}

/* A dynamic axis that reduce_prod n reduces, or -1: its partials are
 * exclusive products along the reduced set, built from narrows of a
 * static length (passes/ad/partials.c). */
static int prod_dynamic_axis(const Node *n) {
  const Type *x = &n->in[0]->type;
  int k;
  const int64_t *a = ir_attr_ints(n, ATTR_AXES, &k);
  for (int i = 0; i < (a ? k : x->rank); i++) {
    int ax = a ? (int)(a[i] < 0 ? a[i] + x->rank : a[i]) : i;
    if (!dim_is_static(x->dims[ax])) return ax;
  }
  return -1;
}

/* The op, gather and gather_backward (any sizes: the gradient is a
 * gather_backward into zeros of the table's shape), and for reduce_prod
 * static reduced axes. if, while and custom_fn become ordinary ops in
 * reverse mode (prepare_if.c, prepare_while.c, inline_custom_fn.c). */
static bool ad_dynamic_node(const Node *n) {
  if (n->op == OP_GATHER || n->op == OP_GATHER_BACKWARD) return true;
  if (n->op == OP_REDUCE_PROD) return prod_dynamic_axis(n) < 0;
  return ad_dynamic_op(n->op);
}

/* True: stop the pipeline (after a diagnostic). */
static bool dynamic_stop(Unit *u) {
  const Options *o = u->opt;
  if (!o) return false;
  const char *what = o->grad ? "--grad" : o->jvp ? "--jvp" : o->hvp ? "--hvp"
                     : o->train ? "--train" : NULL;
  if (!what) return false;
  const Module *m = u->mod;
  for (int g = 0; g < m->ngraphs; g++) {
    const Graph *gr = m->graphs[g];
    for (int i = 0; i < gr->nnodes; i++) {
      const Node *n = gr->nodes[i];
      if (!node_dynamic(n) || ad_dynamic_node(n)) continue;
      char ts[160];
      if (n->op == OP_REDUCE_PROD)
        diag_error(u->ctx, n->loc, "op 'reduce_prod' of %s: %s needs a "
                   "static size on the reduced axis %d (the partials are "
                   "products over a static count of neighbours)",
                   type_str(&n->in[0]->type, ts, sizeof ts), what,
                   prod_dynamic_axis(n));
      else
        diag_error(u->ctx, n->loc, "op '%s' with dynamic sizes (%s): %s "
                   "does not differentiate it yet (docs/dynamic-dims.md "
                   "lists the ops it does)", op_name(n->op),
                   type_str(&n->type, ts, sizeof ts), what);
      return true;
    }
  }
  return false;
}

bool pass_run_pipeline(Unit *u) {
  int n;
  const Pass *p = pass_list(&n);
  bool verify = getenv("RLX_NO_VERIFY") == NULL, have = false;
  uint64_t last = 0, dumped = 0;
  for (int i = 0; i < n; i++) {
    TimeMark t;
    time_begin(u->ctx, &t);
    /* with automatic verification on, the explicit "verify" pass is
     * the same check and is skipped when nothing changed */
    if (verify && p[i].run == pass_verify) {
      bool ok = verify_after(u, p[i].name, &last, &have);
      time_end(u->ctx, &t, p[i].name);
      if (!ok) return false;
      dump_after(u, p[i].name, i, &dumped);
      if (dynamic_stop(u)) return u->ctx->nerrors == 0;
      continue;
    }
    int before = u->ctx->nerrors;
    bool ok = p[i].run(u) && u->ctx->nerrors == before;
    ok = ok && (!verify || verify_after(u, p[i].name, &last, &have));
    time_end(u->ctx, &t, p[i].name);
    dump_after(u, p[i].name, i, &dumped);
    if (!ok) return false;
    if (p[i].run == pass_verify && dynamic_stop(u))
      return u->ctx->nerrors == 0;
  }
  return true;
}
