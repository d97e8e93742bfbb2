/* test_shape_fuzz.c: randomized robustness test of shape_infer().
 *
 * Builds many nodes of every op with random operand counts, operand
 * types, attribute values (including out-of-range, huge and missing
 * ones) and random subgraphs, and checks the inference contract on
 * each: success gives a valid type (rank <= RLX_MAX_RANK, dims >= 0,
 * element count <= RLX_MAX_ELEMS) and no diagnostic; failure gives
 * DT_INVALID and exactly one diagnostic starting with the op name.
 * Run under ASan/UBSan (RLX_SANITIZE) this also shows that no input
 * reaches an assertion or undefined behaviour. Deterministic seed.
 */
#include "test_shape_util.h"

#include <limits.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (unsigned)(rng_state % n);
}

static const int64_t small_vals[] = {-3, -1, 0, 1, 2, 3, 4, 5, 8,
                                     1099511627776LL, INT64_MAX,
                                     INT64_MIN};
static int64_t rnd_int(void) {
  return rnd(4) ? (int64_t)rnd(6) - 1
                : small_vals[rnd(sizeof small_vals / sizeof *small_vals)];
}

static Type pool_types[8];

static Type rnd_type(void) {
  static const int64_t dims[] = {1, 2, 3, 4, 5, 8, 0};
  if (rnd(3)) return pool_types[rnd(8)];
  Type t = {.dt = (DType)rnd(DT_COUNT), .rank = (int)rnd(5)};
  for (int i = 0; i < t.rank; i++) t.dims[i] = dims[rnd(7)];
  return t;
}

static Graph *rnd_graph(void) {
  Graph *g = ir_graph_new(F.c, F.m, "sub", (Loc){1, 1});
  int na = (int)rnd(5);
  Node *last = NULL;
  for (int i = 0; i < na; i++) {
    static const char *const names[] = {"primal_output", "d_output",
                                        "tangent_0", "tangent_1", "x"};
    last = ir_arg_new(F.c, g, OP_INPUT, names[rnd(5)], rnd_type(),
                      (Loc){1, 1});
  }
  int nr = (int)rnd(3);
  Node *r[2];
  for (int i = 0; i < nr; i++)
    r[i] = last && rnd(2) ? last
                          : ir_const_new(F.c, g, rnd_type(), NULL, true,
                                         (Loc){1, 1});
  ir_set_rets(F.c, g, r, nr);
  return g;
}

static void rnd_attr(Node *n, AttrId id, Graph *const *graphs) {
  static const char *const words[] = {
      "none", "causal", "sliding_window", "custom", "bias", "gelu", "relu",
      "q", "k", "v", "identity", "clipped", "backward", "ortho", "tanh"};
  int64_t v[6];
  int k;
  switch (attr_kind(id)) {
  case AK_INT: ir_attr_set_int(F.c, n, id, rnd_int()); break;
  case AK_INTS:
    k = (int)rnd(6);
    for (int i = 0; i < k; i++) v[i] = rnd_int();
    ir_attr_set_ints(F.c, n, id, v, k);
    break;
  case AK_FLOAT: {
    static const double fv[] = {-1, 0, 0.5, 1, 1e300, 1e-5};
    ir_attr_set_float(F.c, n, id, fv[rnd(6)]);
    break;
  }
  case AK_BOOL: ir_attr_set_bool(F.c, n, id, rnd(2)); break;
  case AK_DTYPE: ir_attr_set_dtype(F.c, n, id, (DType)rnd(DT_COUNT)); break;
  case AK_ENUM: {
    const char *w = words[rnd(15)];
    if (attr_word_ok(id, w)) ir_attr_set_word(F.c, n, id, w);
    break;
  }
  case AK_GRAPH: ir_attr_set_graph(F.c, n, id, graphs[rnd(6)]); break;
  }
}

/* One random node of op; checks the contract. */
static void fuzz_one(Op op, Node *const *args, Graph *const *graphs) {
  const OpInfo *oi = op_info(op);
  int hi = oi->max_in < 0 ? oi->min_in + 4 : oi->max_in;
  int nin = rnd(8) ? oi->min_in + (int)rnd((unsigned)(hi - oi->min_in + 1))
                   : (int)rnd(7);
  Node *in[16];
  for (int i = 0; i < nin; i++) in[i] = args[rnd(24)];
  Node *n = mk(op, in, nin);
  for (int i = 0; i < oi->nattrs; i++)
    if (rnd(4)) rnd_attr(n, oi->attrs[i].id, graphs);
  int before = F.c->nerrors;
  bool ok = shape_infer(F.c, n);
  const Type *t = &n->type;
  if (ok) {
    bool good = F.c->nerrors == before && t->dt < DT_COUNT &&
                t->rank >= 0 && t->rank <= RLX_MAX_RANK;
    for (int i = 0; good && i < t->rank; i++)
      good = t->dims[i] >= 0 && t->dims[i] <= RLX_MAX_ELEMS;
    good = good && type_numel(t) <= RLX_MAX_ELEMS;
    if (!good) fprintf(stderr, "\n  %s: bad success\n", op_name(op));
    CU_ASSERT(good);
  } else {
    const char *m = last_msg();
    bool good = t->dt == DT_INVALID && F.c->nerrors == before + 1 &&
                !strncmp(m, op_name(op), strlen(op_name(op)));
    if (!good)
      fprintf(stderr, "\n  %s: %d errors, last \"%s\"\n", op_name(op),
              F.c->nerrors - before, m);
    CU_ASSERT(good);
  }
}

SH_TEST(t_fuzz) {
  F.c->max_errors = INT_MAX;
  static const char *const base[8] = {
      "f32[2, 3]", "f32[3]", "f32[]", "i64[2]", "f32[2, 4, 5, 8]",
      "f32[2, 3, 8, 8]", "c64[4]", "f32[5, 4]"};
  for (int i = 0; i < 8; i++) pool_types[i] = ty(base[i]);
  for (int round = 0; round < 10; round++) {
    Node *args[24];
    Graph *graphs[6];
    for (int i = 0; i < 24; i++)
      args[i] = ir_arg_new(F.c, F.g, OP_INPUT, "a", rnd_type(),
                           (Loc){1, 1});
    for (int i = 0; i < 6; i++) graphs[i] = rnd_graph();
    for (int op = 0; op < OP_COUNT; op++)
      if (!op_has((Op)op, OPF_PSEUDO))
        for (int k = 0; k < 25; k++) fuzz_one((Op)op, args, graphs);
  }
}

int main(void) {
  static const ShTest tests[] = {{"fuzz", t_fuzz}, {NULL, NULL}};
  return sh_run("shape_fuzz", tests);
}
