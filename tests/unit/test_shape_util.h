/* test_shape_util.h: fixture for the shape-inference CUnit suites
 * (tests/unit/test_shape_*.c). Each test builds nodes programmatically
 * in a fresh Ctx/Module/Graph (sh_setup) and checks the inferred type
 * (OK) or the diagnostic (BAD: inference fails, exactly one new error,
 * whose message contains a substring, and the node is DT_INVALID).
 * Types are written as text: ty("f32[2, 3]"), ty("i64[]").
 */
#ifndef TEST_SHAPE_UTIL_H
#define TEST_SHAPE_UTIL_H

#include "ir/ir.h"

#include <CUnit/Basic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  Ctx *c;
  Module *m;
  Graph *g;
} ShFix;

static ShFix F;

static inline int sh_setup(void) {
  F.c = ctx_new("test.rlx", NULL, 0);
  F.m = ir_module_new(F.c);
  F.g = ir_graph_new(F.c, F.m, "main", (Loc){1, 1});
  return 0;
}

static inline int sh_teardown(void) {
  ctx_free(F.c);
  memset(&F, 0, sizeof F);
  return 0;
}

/* "f32[2, 3]" -> Type (test input: aborts on a malformed string). */
static inline Type ty(const char *s) {
  char name[8];
  size_t k = strcspn(s, "[");
  if (k >= sizeof name) abort();
  memcpy(name, s, k);
  name[k] = 0;
  Type t = {.dt = dt_lookup(name)};
  if (t.dt == DT_INVALID || s[k] != '[') abort();
  const char *p = s + k + 1;
  while (*p && *p != ']') {
    char *e;
    t.dims[t.rank++] = strtoll(p, &e, 10);
    p = e;
    while (*p == ',' || *p == ' ') p++;
  }
  return t;
}

/* A new graph input of type s in graph g (NULL: the main graph). */
static inline Node *arg_in(Graph *g, const char *name, const char *s) {
  return ir_arg_new(F.c, g ? g : F.g, OP_INPUT, name, ty(s),
                    (Loc){2, 3});
}
#define IN_(s) arg_in(NULL, NULL, s)

static Node *mk(Op op, Node *const *in, int nin) {
  return ir_node_new(F.c, F.g, op, in, nin, (Loc){7, 9});
}
#define MK(op, ...)                                              \
  mk(OP_##op, (Node *[]){__VA_ARGS__},                           \
     (int)(sizeof((Node *[]){__VA_ARGS__}) / sizeof(Node *)))

static inline void set_ints(Node *n, AttrId id, int k,
                            const int64_t *v) {
  ir_attr_set_ints(F.c, n, id, v, k);
}
#define INTS(n, id, ...)                                           \
  set_ints(n, ATTR_##id,                                           \
           (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
           (int64_t[]){__VA_ARGS__})
#define INT(n, id, v) ir_attr_set_int(F.c, n, ATTR_##id, v)
#define FLT(n, id, v) ir_attr_set_float(F.c, n, ATTR_##id, v)
#define BOOL_(n, id, v) ir_attr_set_bool(F.c, n, ATTR_##id, v)
#define WORD(n, id, w) ir_attr_set_word(F.c, n, ATTR_##id, w)
#define GRAPH(n, id, gr) ir_attr_set_graph(F.c, n, ATTR_##id, gr)

/* The newest diagnostic (diags_tail points at its `next` field). */
static inline const char *last_msg(void) {
  if (!F.c->diags) return "";
  const Diag *d =
      (const Diag *)((char *)F.c->diags_tail - offsetof(Diag, next));
  return d->msg;
}

static inline void check_ok(Node *n, const char *want, int line) {
  int before = F.c->nerrors;
  bool ok = shape_infer(F.c, n);
  char buf[160];
  type_str(&n->type, buf, sizeof buf);
  if (!ok || strcmp(buf, want) || F.c->nerrors != before)
    fprintf(stderr, "\n  line %d: %s: got %s (%s), want %s\n", line,
            op_name(n->op), ok ? buf : "failure",
            F.c->nerrors != before ? last_msg() : "no diagnostic", want);
  CU_ASSERT(ok && !strcmp(buf, want) && F.c->nerrors == before);
}

static inline void check_bad(Node *n, const char *sub, int line) {
  int before = F.c->nerrors;
  bool ok = shape_infer(F.c, n);
  const char *m = F.c->nerrors == before + 1 ? last_msg() : "";
  bool good = !ok && n->type.dt == DT_INVALID &&
              F.c->nerrors == before + 1 && strstr(m, sub) &&
              !strncmp(m, op_name(n->op), strlen(op_name(n->op)));
  if (!good)
    fprintf(stderr, "\n  line %d: %s: want error containing \"%s\", got "
            "%s \"%s\" (%d new errors)\n", line, op_name(n->op), sub,
            ok ? "success" : "failure", m, F.c->nerrors - before);
  CU_ASSERT(good);
}
#define OK(n, want) check_ok(n, want, __LINE__)
#define BAD(n, sub) check_bad(n, sub, __LINE__)

/* Register tests[] (NULL-terminated) as one suite and run it. */
typedef struct { const char *name; void (*fn)(void); } ShTest;
static inline int sh_run(const char *suite, const ShTest *tests) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite(suite, NULL, NULL);
  for (const ShTest *t = tests; t->name; t++)
    CU_add_test(s, t->name, t->fn);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  return fails != 0;
}

/* Each test body runs in its own fixture. */
#define SH_TEST(name)                 \
  static void name##_body(void);      \
  static void name(void) {            \
    sh_setup();                       \
    name##_body();                    \
    sh_teardown();                    \
  }                                   \
  static void name##_body(void)

#endif
