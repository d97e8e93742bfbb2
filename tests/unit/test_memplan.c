/* test_memplan.c: fusion decisions (codegen/plan/fuse.c) and the static
 * memory plan (codegen/plan/memplan.c). Properties: no two workspace blocks
 * that are live at the same time overlap (including aliases, fused
 * trees and scratch areas), offsets are 64-byte aligned, memory is
 * reused once a value dies, elementwise chains need no buffers,
 * broadcast producers keep theirs, elementwise producers read only by
 * a reduction are fused into it (prologue), transposes fold into
 * matmul, returns are computed in place in the outputs, and returned
 * elementwise values read only by one group are that group's side
 * outputs (in place over their argument when it is safe). Graphs come
 * from the front end; a randomized test checks the invariant on many
 * graphs, and another the run-time layout of sizes without a bound
 * (rlx_ws_layout) at several sizes. */
#include "codegen/plan/plan.h"
#include "frontend/frontend.h"
#include "runtime/rlxrt.h"

#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  Ctx *c;
  Graph *g;
  CgPlan *p;
} Planned;

/* Parse src, then fuse and plan its last graph; into (NULL: none) is
 * its Graph.ret_into: return j overwrites argument into[j] (-1: none),
 * as ENTRY_train's returns. */
static Planned plan_full(const char *src, const int64_t *scratch,
                         const int *into) {
  Planned r = {0};
  ops_init();
  r.c = ctx_new("t.rlx", src, strlen(src));
  Module *m = fe_parse(r.c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_EQUAL_FATAL(r.c->nerrors, 0);
  r.g = m->graphs[m->ngraphs - 1];
  if (into) {
    r.g->ret_into = arena_alloc(r.c->arena, sizeof(int) * (size_t)r.g->nret);
    memcpy(r.g->ret_into, into, sizeof(int) * (size_t)r.g->nret);
  }
  r.p = cg_plan_new(r.c, r.g);
  CU_ASSERT_TRUE(cg_fuse(r.g, r.p));
  CU_ASSERT_TRUE(cg_memplan(r.g, r.p, scratch));
  return r;
}

static Planned plan_src(const char *src, const int64_t *scratch) {
  return plan_full(src, scratch, NULL);
}

static Planned plan_into(const char *src, const int *into) {
  return plan_full(src, NULL, into);
}

static Node *node(const Planned *r, const char *name) {
  for (int i = 0; i < r->g->nnodes; i++)
    if (r->g->nodes[i]->name && !strcmp(r->g->nodes[i]->name, name))
      return r->g->nodes[i];
  CU_FAIL_FATAL("no such node");
  return NULL;
}

static CgSlot *slot(const Planned *r, const char *name) {
  return &r->p->slot[node(r, name)->id];
}

typedef struct {
  int64_t def, last, off, size;
  int id, inplace_of; /* node ids (-1: scratch / none) */
} Blk;

/* The placement is first fit in definition order: each block sits at the
 * lowest 64-aligned offset free of every earlier block live with it (a
 * root computed in place extends its leaf's block instead). Brute force,
 * independent of memplan.c's sweep. */
static void check_first_fit(Blk *b, int n) {
  for (int j = n - 1; j >= 0; j--) { /* a root over a root over a leaf */
    int o = j;
    for (int i = n - 1; i >= 0; i--)
      if (b[o].inplace_of >= 0 && b[i].id == b[o].inplace_of) o = i;
    if (b[j].last > b[o].last) b[o].last = b[j].last;
  }
  for (int i = 0; i < n; i++) {
    if (b[i].inplace_of >= 0 || !b[i].size) continue;
    int64_t off = 0;
    for (bool moved = true; moved;) {
      moved = false;
      for (int j = 0; j < i; j++) {
        if (b[j].inplace_of >= 0 || !b[j].size) continue;
        bool live = b[j].def <= b[i].last && b[i].def <= b[j].last;
        if (live && off < b[j].off + b[j].size && b[j].off < off + b[i].size) {
          off = (b[j].off + b[j].size + 63) & ~(int64_t)63;
          moved = true;
        }
      }
    }
    CU_ASSERT_EQUAL(b[i].off, off);
  }
}

/* Every pair of blocks live at the same time is disjoint; aligned. */
static int check_invariant(const Planned *r) {
  Blk b[4096];
  int n = 0;
  for (int i = 0; i < r->g->nnodes && n < 4094; i++) {
    Node *x = r->g->nodes[i];
    CgSlot *s = &r->p->slot[x->id];
    if (s->kind == CG_SLOT_WS)
      b[n++] = (Blk){s->def, s->last, s->offset, type_bytes(&x->type), x->id,
                     s->inplace_of ? s->inplace_of->id : -1};
    if (s->scratch_off >= 0)
      b[n++] = (Blk){s->def, s->def, s->scratch_off, s->scratch_bytes, -1,
                     -1};
  }
  int bad = 0;
  for (int i = 0; i < n; i++) {
    CU_ASSERT_EQUAL(b[i].off % 64, 0);
    CU_ASSERT_TRUE(b[i].off + b[i].size <= r->p->ws_bytes);
    for (int j = 0; j < i; j++) {
      bool live = b[i].def <= b[j].last && b[j].def <= b[i].last;
      bool space = b[i].off < b[j].off + b[j].size &&
                   b[j].off < b[i].off + b[i].size;
      bool inplace = (b[i].inplace_of >= 0 && b[i].inplace_of == b[j].id) ||
                     (b[j].inplace_of >= 0 && b[j].inplace_of == b[i].id);
      if (inplace) {
        /* same bytes, handed over at the root's position */
        CU_ASSERT_EQUAL(b[i].off, b[j].off);
        continue;
      }
      if (live && space && b[i].size && b[j].size) bad++;
    }
  }
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT_EQUAL(r->p->ws_bytes % 64, 0);
  check_first_fit(b, n);
  return n;
}

static void test_fused_chain(void) {
  Planned r = plan_src(
      "graph g { input %x: f32[8, 16]  input %b: f32[16]\n"
      "  %a = add(%x, %b)  %m = mul(%a, %a)  %e = exp(%m)\n"
      "  %r = relu(%e)  return %r }", NULL);
  CU_ASSERT_EQUAL(slot(&r, "a")->kind, CG_SLOT_FUSED);
  CU_ASSERT_EQUAL(slot(&r, "m")->kind, CG_SLOT_FUSED);
  CU_ASSERT_EQUAL(slot(&r, "e")->kind, CG_SLOT_FUSED);
  CU_ASSERT_EQUAL(slot(&r, "r")->kind, CG_SLOT_OUTPUT);
  CU_ASSERT_EQUAL(slot(&r, "x")->kind, CG_SLOT_INPUT);
  CU_ASSERT_EQUAL(slot(&r, "b")->index, 1);
  CU_ASSERT_EQUAL(r.p->ws_bytes, 0);
  ctx_free(r.c);
}

static void test_broadcast_producer_kept(void) {
  Planned r = plan_src(
      "graph g { input %x: f32[8, 16]  input %b: f32[16]\n"
      "  %e = exp(%b)  %y = add(%x, %e)  return %y }", NULL);
  CU_ASSERT_EQUAL(slot(&r, "e")->kind, CG_SLOT_WS);
  CU_ASSERT_EQUAL(slot(&r, "y")->kind, CG_SLOT_OUTPUT);
  CU_ASSERT_EQUAL(r.p->ws_bytes, 64);
  ctx_free(r.c);
}

static void test_reuse(void) {
  /* a chain of matmuls: each result dies after the next one */
  Planned r = plan_src(
      "graph g { input %x: f32[64, 64]  input %w: f32[64, 64]\n"
      "  %a = matmul(%x, %w)  %b = matmul(%a, %w)  %c = matmul(%b, %w)\n"
      "  %d = matmul(%c, %w)  %e = matmul(%d, %w)  return %e }", NULL);
  check_invariant(&r);
  int64_t one = 64 * 64 * 4;
  CU_ASSERT_EQUAL(r.p->ws_bytes, 2 * one); /* 4 temporaries, 2 live */
  CU_ASSERT_NOT_EQUAL(slot(&r, "a")->offset, slot(&r, "b")->offset);
  CU_ASSERT_EQUAL(slot(&r, "a")->offset, slot(&r, "c")->offset);
  ctx_free(r.c);
}

static void test_alias_extends_life(void) {
  Planned r = plan_src(
      "graph g { input %x: f32[4, 16]  input %w: f32[16, 16]\n"
      "  %a = matmul(%x, %w)  %v = reshape(%a, shape=[16, 4])\n"
      "  %b = matmul(%x, %w)  %c = matmul(%b, %w)\n"
      "  %t = reshape(%v, shape=[4, 16])  %d = add(%t, %c)  return %d }",
      NULL);
  CU_ASSERT_EQUAL(slot(&r, "v")->kind, CG_SLOT_ALIAS);
  CU_ASSERT_PTR_EQUAL(slot(&r, "t")->alias, node(&r, "a"));
  CgSlot *a = slot(&r, "a");
  CU_ASSERT_TRUE(a->last >= slot(&r, "d")->def);
  check_invariant(&r);
  CU_ASSERT_NOT_EQUAL(a->offset, slot(&r, "b")->offset);
  CU_ASSERT_NOT_EQUAL(a->offset, slot(&r, "c")->offset);
  ctx_free(r.c);
}

static void test_transpose_folded(void) {
  Planned r = plan_src(
      "graph g { input %x: f32[3, 4, 5]  input %w: f32[3, 6, 5]\n"
      "  %t = transpose(%w, perm=[0, 2, 1])  %y = matmul(%x, %t)\n"
      "  %u = transpose(%w, perm=[1, 0, 2])  return %y, %u }", NULL);
  CU_ASSERT_EQUAL(slot(&r, "t")->kind, CG_SLOT_FOLDED);
  CU_ASSERT_EQUAL(slot(&r, "u")->kind, CG_SLOT_OUTPUT);
  CU_ASSERT_EQUAL(r.p->ws_bytes, 0);
  ctx_free(r.c);
}

static void test_returns(void) {
  Planned r = plan_src(
      "graph g { input %x: f32[4]  %a = neg(%x)  %r = reshape(%a, "
      "shape=[2, 2])\n  return %a, %a, %x, %r }", NULL);
  CU_ASSERT_EQUAL(slot(&r, "a")->kind, CG_SLOT_OUTPUT);
  CU_ASSERT_EQUAL(slot(&r, "a")->index, 0);
  CU_ASSERT_EQUAL(slot(&r, "r")->kind, CG_SLOT_ALIAS);
  ctx_free(r.c);
}

static void test_stop_gradient(void) {
  Planned r = plan_src(
      "graph g { input %x: f32[8]  input %w: f32[8, 8]\n"
      "  %e = exp(%x)  %s = stop_gradient(%e)  %m = matmul(%w, %w)\n"
      "  %t = stop_gradient(%x)  %y = add(stop_gradient(%t), %s)\n"
      "  return %y, %m, %s }", NULL);
  CU_ASSERT_EQUAL(slot(&r, "s")->kind, CG_SLOT_ALIAS);
  CU_ASSERT_PTR_EQUAL(slot(&r, "s")->alias, node(&r, "e"));
  CU_ASSERT_EQUAL(slot(&r, "e")->kind, CG_SLOT_WS);
  CU_ASSERT_EQUAL(slot(&r, "t")->kind, CG_SLOT_FUSED);
  check_invariant(&r);
  ctx_free(r.c);
}

static void test_expand_fused(void) {
  Planned r = plan_src(
      "graph g { input %x: f32[8]  input %y: f32[4, 8]\n"
      "  %e = expand(%x, shape=[4, 8])  %a = add(%e, %y)\n"
      "  %f = expand(%x, shape=[4, 8])  %n = neg(%x)\n"
      "  %g = expand(%n, shape=[2, 8])\n"
      "  %m = matmul(%f, transpose(%y, perm=[1, 0]))  return %a, %m, %g }",
      NULL);
  CU_ASSERT_EQUAL(slot(&r, "e")->kind, CG_SLOT_FUSED);
  CU_ASSERT_EQUAL(slot(&r, "f")->kind, CG_SLOT_WS);
  CU_ASSERT_EQUAL(slot(&r, "n")->kind, CG_SLOT_WS); /* read by a root */
  check_invariant(&r);
  ctx_free(r.c);
}

static void test_inplace(void) {
  Planned r = plan_src(
      "graph g { input %x: f32[4, 4]\n"
      "  %a = matmul(%x, %x)  %b = relu(add(%a, 1.0))\n"
      "  %c = matmul(%b, %x)  %v = reshape(%c, shape=[4, 4])\n"
      "  %d = add(%c, %v)  %e = matmul(%d, %d)  return %e }", NULL);
  CU_ASSERT_PTR_EQUAL(slot(&r, "b")->inplace_of, node(&r, "a"));
  CU_ASSERT_EQUAL(slot(&r, "b")->offset, slot(&r, "a")->offset);
  /* %c is also read through its alias %v: no in-place for %d */
  CU_ASSERT_PTR_NULL(slot(&r, "d")->inplace_of);
  CU_ASSERT_NOT_EQUAL(slot(&r, "d")->offset, slot(&r, "c")->offset);
  check_invariant(&r);
  ctx_free(r.c);
}

/* The plan dump of r contains s? */
static bool dump_has(const Planned *r, const char *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cg_plan_dump(f, r->p, "t");
  fclose(f);
  bool has = strstr(buf, s) != NULL;
  free(buf);
  return has;
}

/* Side outputs: a returned elementwise value read only by one
 * elementwise group of its shape is computed and stored by that group's
 * loop (with its own fused producers), and emits nothing itself. */
static void test_side_outputs(void) {
  Planned r = plan_src(
      "graph g { input %m: f32[8, 16]  input %g: f32[8, 16]\n"
      "  input %p: f32[8, 16]  input %s: f32[16]\n"
      "  %d = sub(%g, %m)  %m2 = add(%m, mul(%d, 0.1))\n"
      "  %v2 = mul(%g, %g)\n"
      "  %p2 = sub(%p, div(%m2, add(sqrt(%v2), 0.001)))\n"
      "  %e = exp(%s)  %u = add(%e, 1.0)\n"
      "  return %p2, %m2, %v2, %u, %e }", NULL);
  CU_ASSERT_PTR_EQUAL(slot(&r, "m2")->side_of, node(&r, "p2"));
  CU_ASSERT_PTR_EQUAL(slot(&r, "v2")->side_of, node(&r, "p2"));
  CU_ASSERT_PTR_EQUAL(slot(&r, "e")->side_of, node(&r, "u"));
  CU_ASSERT_PTR_NULL(slot(&r, "p2")->side_of);
  CU_ASSERT_EQUAL(slot(&r, "m2")->kind, CG_SLOT_OUTPUT);
  CU_ASSERT_EQUAL(slot(&r, "m2")->index, 1);
  CU_ASSERT_EQUAL(slot(&r, "v2")->index, 2);
  CU_ASSERT_EQUAL(slot(&r, "d")->kind, CG_SLOT_FUSED);
  CU_ASSERT_EQUAL(r.p->ws_bytes, 0);
  CU_ASSERT_TRUE(dump_has(&r, "stored by %p2"));
  CU_ASSERT_TRUE(dump_has(&r, "stores: %m2 %v2\n"));
  CU_ASSERT_TRUE(dump_has(&r, "exp  outputs[4] stored by %u\n"));
  CU_ASSERT_TRUE(dump_has(&r, "outputs[3] group: %e stores: %e\n"));
  check_invariant(&r);
  ctx_free(r.c);
  /* not when a consumer has another shape (a broadcast), is a
   * reduction's prologue, or consumers are in two groups */
  r = plan_src(
      "graph g { input %x: f32[8, 16]  input %y: f32[4, 8, 16]\n"
      "  %a = exp(%x)  %b = add(%a, %y)\n"
      "  %c = neg(%x)  %r = reduce_sum(mul(%c, 2.0), axes=[1])\n"
      "  %h = tanh(%x)  %h1 = add(%h, 1.0)  %h2 = mul(%h, 2.0)\n"
      "  return %b, %a, %r, %c, %h1, %h2, %h }", NULL);
  CU_ASSERT_PTR_NULL(slot(&r, "a")->side_of);
  CU_ASSERT_PTR_NULL(slot(&r, "c")->side_of);
  CU_ASSERT_PTR_NULL(slot(&r, "h")->side_of);
  CU_ASSERT_FALSE(dump_has(&r, "stored by"));
  check_invariant(&r);
  ctx_free(r.c);
}

/* A side output stored over its argument (ret_into) is in place when
 * the group alone reads the argument, at the element it writes; else it
 * stays a root of its own. */
static void test_side_outputs_in_place(void) {
  const char *src =
      "graph g { input %m: f32[8, 16]  input %g: f32[8, 16]\n"
      "  input %p: f32[8, 16]\n"
      "  %m2 = add(%m, mul(sub(%g, %m), 0.1))  %p2 = sub(%p, %m2)\n"
      "  %k = reduce_sum(%m)\n"
      "  return %p2, %m2, %k }";
  Planned r = plan_into(src, (const int[]){2, 0, -1});
  CU_ASSERT_PTR_NULL(slot(&r, "m2")->side_of); /* %k reads %m too */
  check_invariant(&r);
  ctx_free(r.c);
  r = plan_into(
      "graph g { input %m: f32[8, 16]  input %g: f32[8, 16]\n"
      "  input %p: f32[8, 16]\n"
      "  %m2 = add(%m, mul(sub(%g, %m), 0.1))  %p2 = sub(%p, %m2)\n"
      "  return %p2, %m2 }", (const int[]){2, 0});
  CU_ASSERT_PTR_EQUAL(slot(&r, "m2")->side_of, node(&r, "p2"));
  CU_ASSERT_EQUAL(slot(&r, "m2")->kind, CG_SLOT_OUTPUT);
  CU_ASSERT_EQUAL(slot(&r, "m2")->def, slot(&r, "p2")->def);
  CU_ASSERT_EQUAL(slot(&r, "p2")->kind, CG_SLOT_OUTPUT);
  CU_ASSERT_TRUE(dump_has(&r, "outputs[1] = inputs[0] (in place) stored by "
                              "%p2"));
  CU_ASSERT_EQUAL(r.p->ws_bytes, 0);
  ctx_free(r.c);
  /* %m read transposed by the group: refused */
  r = plan_into(
      "graph g { input %m: f32[16, 16]  input %p: f32[16, 16]\n"
      "  %m2 = mul(%m, 0.5)\n"
      "  %p2 = sub(%p, add(%m2, transpose(%m, perm=[1, 0])))\n"
      "  return %p2, %m2 }", (const int[]){1, 0});
  CU_ASSERT_PTR_NULL(slot(&r, "m2")->side_of);
  check_invariant(&r);
  ctx_free(r.c);
}

static void test_scratch(void) {
  const char *src =
      "graph g { input %x: f32[16, 16]\n"
      "  %a = matmul(%x, %x)  %b = matmul(%a, %x)  %c = matmul(%b, %x)\n"
      "  return %c }";
  int64_t scratch[64] = {0};
  Planned r = plan_src(src, NULL); /* to learn %b's id */
  int bid = node(&r, "b")->id;
  ctx_free(r.c);
  scratch[bid] = 1000;
  r = plan_src(src, scratch);
  CgSlot *b = slot(&r, "b");
  CU_ASSERT_EQUAL(b->scratch_bytes, 1000);
  CU_ASSERT_TRUE(b->scratch_off >= 0);
  CU_ASSERT_EQUAL(check_invariant(&r), 3);
  ctx_free(r.c);
}

/* Prologue fusion: an elementwise producer read only by a reduction,
 * a row softmax or softmax_cross_entropy logits gets no buffer. */
static void test_prologue_fused(void) {
  Planned r = plan_src(
      "graph g { input %x: f32[8, 16]  input %y: f32[8, 16]\n"
      "  input %b: f32[16]  input %l: i32[8]\n"
      "  %p = mul(%x, %y)  %s = reduce_sum(%p, axes=[1])\n"
      "  %q = mul(%x, %x)  %m = reduce_mean(%q)\n"
      "  %a = add(%x, %b)  %sm = softmax(%a)\n"
      "  %z = add(%y, %b)  %e = softmax_cross_entropy(%z, %l)\n"
      "  %t = exp(%e)  %k = reduce_max(%t)\n"
      "  return %s, %m, %sm, %k }", NULL);
  CU_ASSERT_EQUAL(slot(&r, "p")->kind, CG_SLOT_FUSED);
  CU_ASSERT_EQUAL(slot(&r, "q")->kind, CG_SLOT_FUSED);
  CU_ASSERT_EQUAL(slot(&r, "a")->kind, CG_SLOT_FUSED);
  CU_ASSERT_EQUAL(slot(&r, "z")->kind, CG_SLOT_FUSED);
  CU_ASSERT_EQUAL(slot(&r, "t")->kind, CG_SLOT_FUSED);
  /* the xent result is read by the fused exp: it keeps a buffer */
  CU_ASSERT_EQUAL(slot(&r, "e")->kind, CG_SLOT_WS);
  CU_ASSERT_EQUAL(r.p->ws_bytes, 64); /* only %e (8 floats) */
  check_invariant(&r);
  ctx_free(r.c);
}

/* No prologue when the producer has another reader, or when softmax
 * runs over an outer axis (that kernel offsets its input pointer). */
static void test_prologue_kept(void) {
  Planned r = plan_src(
      "graph g { input %x: f32[8, 16]\n"
      "  %p = mul(%x, %x)  %s = reduce_sum(%p, axes=[0])\n"
      "  %u = add(%p, 1.0)\n"
      "  %a = add(%x, 1.0)  %sm = softmax(%a, axis=0)\n"
      "  %c = exp(%x)  %k = reduce_sum(%c)\n"
      "  return %s, %u, %sm, %k, %c }", NULL);
  CU_ASSERT_EQUAL(slot(&r, "p")->kind, CG_SLOT_WS);
  CU_ASSERT_EQUAL(slot(&r, "a")->kind, CG_SLOT_WS);
  CU_ASSERT_NOT_EQUAL(slot(&r, "c")->kind, CG_SLOT_FUSED); /* returned */
  check_invariant(&r);
  ctx_free(r.c);
  /* a broadcast leaf: fused when the reduction keeps the innermost dim
   * (scalar loads) or for row softmax; kept as a root with its fused
   * producers when vectors fold across rows */
  r = plan_src(
      "graph g { input %x: f32[8, 16]  input %b: f32[16]\n"
      "  %m = mul(%x, 2.0)  %a = add(%m, %b)  %s = reduce_sum(%a, axes=[1])\n"
      "  %c = mul(%x, %b)  %k = reduce_sum(%c, axes=[0])\n"
      "  %d = sub(%x, %b)  %sm = softmax(%d)\n"
      "  return %s, %k, %sm }", NULL);
  CU_ASSERT_EQUAL(slot(&r, "a")->kind, CG_SLOT_WS);
  CU_ASSERT_EQUAL(slot(&r, "m")->kind, CG_SLOT_FUSED); /* into %a */
  CU_ASSERT_EQUAL(slot(&r, "c")->kind, CG_SLOT_FUSED);
  CU_ASSERT_EQUAL(slot(&r, "d")->kind, CG_SLOT_FUSED);
  CU_ASSERT_EQUAL(r.p->ws_bytes, 8 * 16 * 4);
  check_invariant(&r);
  ctx_free(r.c);
}

/* Source of a chain (%v_i = OP(%v_{i-1}, ARG)) of n nodes over
 * f32[64]; ARG NULL: %v_{i-1} itself (a diamond lattice). */
static char *chain_src(int n, const char *op, const char *arg) {
  char *src = malloc((size_t)n * 64 + 128);
  int k = sprintf(src, "graph g { input %%x: f32[64]\n%%v0 = exp(%%x)\n");
  for (int i = 1; i <= n; i++) {
    char prev[16];
    snprintf(prev, sizeof prev, "%%v%d", i - 1);
    k += sprintf(src + k, "%%v%d = %s(%s, %s)\n", i, op, prev,
                 arg ? arg : prev);
  }
  sprintf(src + k, "return %%v%d }", n);
  return src;
}

/* Fused groups stay bounded on long chains: counted from the plan (root
 * = the nearest consumer with storage), nodes per group and operand
 * slots per group never exceed the limits, and the chain is cut. */
static void check_groups(const Planned *r) {
  Graph *g = r->g;
  int *nodes = calloc((size_t)g->next_id + 1, sizeof(int));
  int *slots = calloc((size_t)g->next_id + 1, sizeof(int));
  Node **root = calloc((size_t)g->next_id + 1, sizeof(Node *));
  for (int i = g->nnodes - 1; i >= 0; i--) {
    Node *n = g->nodes[i];
    root[n->id] = n;
    if (r->p->slot[n->id].kind == CG_SLOT_FUSED)
      for (int j = i + 1; j < g->nnodes; j++) /* first consumer's root */
        for (int k = 0; k < g->nodes[j]->nin; k++)
          if (g->nodes[j]->in[k] == n && root[n->id] == n)
            root[n->id] = root[g->nodes[j]->id];
    nodes[root[n->id]->id]++;
    slots[root[n->id]->id] += n->nin;
  }
  for (int i = 0; i <= g->next_id; i++) {
    CU_ASSERT_TRUE(nodes[i] <= CG_MAX_GROUP_NODES);
    CU_ASSERT_TRUE(slots[i] <= CG_MAX_GROUP_OPERANDS);
  }
  free(nodes);
  free(slots);
  free(root);
}

static void test_group_bounds(void) {
  const char *cases[][2] = {{"mul", "0.999"}, {"add", "%x"}, {"add", NULL}};
  for (int c = 0; c < 3; c++) {
    char *src = chain_src(300, cases[c][0], cases[c][1]);
    Planned r = plan_src(src, NULL);
    check_groups(&r);
    check_invariant(&r);
    int roots = 0;
    for (int i = 0; i < r.g->nnodes; i++)
      roots += r.p->slot[r.g->nodes[i]->id].kind != CG_SLOT_FUSED &&
               cg_is_elementwise(r.g->nodes[i]->op);
    CU_ASSERT_TRUE(roots >= 300 / CG_MAX_GROUP_NODES);
    ctx_free(r.c);
    free(src);
  }
}

/* Two random operands for value i of a random graph: %x or an earlier
 * %v<k> (the same stream of rand() draws as before). */
static void pick2(int i, char *na, char *nb) {
  int a = rand() % (i + 1), b = rand() % (i + 1);
  snprintf(na, 16, a ? "%%v%d" : "%%x", a - 1);
  snprintf(nb, 16, b ? "%%v%d" : "%%x", b - 1);
}

/* Random DAGs of matmul / add / exp / reshape with random reuse. */
static void test_random_graphs(void) {
  srand(12345);
  for (int trial = 0; trial < 60; trial++) {
    char *src = malloc(1 << 16);
    int k = sprintf(src, "graph g { input %%x: f32[8, 8]\n");
    int nv = 1 + rand() % 40;
    for (int i = 0; i < nv; i++) {
      char na[16], nb[16];
      pick2(i, na, nb);
      switch (rand() % 4) {
      case 0:
        k += sprintf(src + k, "%%v%d = matmul(%s, %s)\n", i, na, nb);
        break;
      case 1: k += sprintf(src + k, "%%v%d = add(%s, %s)\n", i, na, nb); break;
      case 2: k += sprintf(src + k, "%%v%d = exp(%s)\n", i, na); break;
      default:
        k += sprintf(src + k, "%%v%d = reshape(%s, shape=[8, 8])\n", i, na);
      }
    }
    sprintf(src + k, "return %%v%d, %%v%d }", nv - 1, rand() % nv);
    Planned r = plan_src(src, NULL);
    check_invariant(&r);
    ctx_free(r.c);
    free(src);
  }
}

/* The value of size expression d at ?n = n (one symbol). */
static int64_t at_n(int64_t d, int64_t n) {
  int64_t v = 0;
  for (int i = 0; i < dim_nterms(d); i++) {
    int sy[RLX_MAX_RANK], ns;
    int64_t t = dim_term(d, i, sy, &ns);
    for (int j = 0; j < ns; j++) t *= n;
    v += t;
  }
  return v;
}

/* A workspace offset of the plan, run-time ones from the layout tab. */
static int64_t resolve(int64_t off, const int64_t *tab) {
  return cg_off_dyn(off) < 0 ? off : tab[cg_off_dyn(off)];
}

/* Graphs over f32[?n, 8] without a bound: every block is placed at run
 * time (rlx_ws_layout), at each size n by the same first fit from the
 * run-time region's start, with no two live blocks overlapping. */
static void test_runtime_layout(void) {
  srand(4321);
  for (int trial = 0; trial < 40; trial++) {
    char *src = malloc(1 << 16);
    int k = sprintf(src, "graph g { input %%x: f32[?n, 8]\n"
                         "param %%w: f32[8, 8]\n");
    int nv = 1 + rand() % 30;
    for (int i = 0; i < nv; i++) {
      char na[16], nb[16];
      pick2(i, na, nb);
      switch (rand() % 3) {
      case 0: k += sprintf(src + k, "%%v%d = matmul(%s, %%w)\n", i, na); break;
      case 1: k += sprintf(src + k, "%%v%d = add(%s, %s)\n", i, na, nb); break;
      default: k += sprintf(src + k, "%%v%d = exp(%s)\n", i, na);
      }
    }
    sprintf(src + k, "return %%v%d, %%v%d }", nv - 1, rand() % nv);
    Planned r = plan_src(src, NULL);
    CgPlan *p = r.p;
    for (int64_t n = 0; n < 40; n += 13) {
      int64_t *tab = malloc(sizeof *tab * (3 * (size_t)p->ndyn + 1));
      for (int i = 0; i < p->ndyn; i++)
        tab[p->ndyn + i] = at_n(p->dyn_bytes[i], n);
      int64_t top = rlx_ws_layout(p->ndyn, p->dyn_range, p->dyn_base, tab);
      CU_ASSERT_TRUE(top >= p->dyn_base && top % 64 == 0);
      Blk b[4096];
      int m = 0;
      for (int i = 0; i < r.g->nnodes; i++) {
        Node *x = r.g->nodes[i];
        CgSlot *s = &p->slot[x->id];
        if (s->kind != CG_SLOT_WS) continue;
        CU_ASSERT_TRUE(cg_off_dyn(s->offset) >= 0);
        b[m++] = (Blk){s->def, s->last,
                       resolve(s->offset, tab) - p->dyn_base, n * 32, x->id,
                       s->inplace_of ? s->inplace_of->id : -1};
        CU_ASSERT_TRUE(b[m - 1].off + b[m - 1].size <= top - p->dyn_base);
      }
      for (int i = 0; i < m; i++)
        for (int j = 0; j < i; j++) {
          bool live = b[i].def <= b[j].last && b[j].def <= b[i].last;
          bool space = b[i].off < b[j].off + b[j].size &&
                       b[j].off < b[i].off + b[i].size;
          bool inplace = b[i].inplace_of == b[j].id ||
                         b[j].inplace_of == b[i].id;
          CU_ASSERT_FALSE(live && space && !inplace && n);
        }
      check_first_fit(b, m);
      free(tab);
    }
    ctx_free(r.c);
    free(src);
  }
}

int main(void) {
  CU_initialize_registry();
  CU_pSuite s = CU_add_suite("memplan", NULL, NULL);
  CU_add_test(s, "fused chain", test_fused_chain);
  CU_add_test(s, "broadcast producer kept", test_broadcast_producer_kept);
  CU_add_test(s, "reuse", test_reuse);
  CU_add_test(s, "alias extends life", test_alias_extends_life);
  CU_add_test(s, "transpose folded", test_transpose_folded);
  CU_add_test(s, "returns", test_returns);
  CU_add_test(s, "stop_gradient", test_stop_gradient);
  CU_add_test(s, "expand fused", test_expand_fused);
  CU_add_test(s, "in place", test_inplace);
  CU_add_test(s, "side outputs", test_side_outputs);
  CU_add_test(s, "side outputs in place", test_side_outputs_in_place);
  CU_add_test(s, "scratch", test_scratch);
  CU_add_test(s, "prologue fused", test_prologue_fused);
  CU_add_test(s, "prologue kept", test_prologue_kept);
  CU_add_test(s, "random graphs", test_random_graphs);
  CU_add_test(s, "run-time layout", test_runtime_layout);
  CU_add_test(s, "group bounds", test_group_bounds);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned f = CU_get_number_of_failures();
  CU_cleanup_registry();
  return f ? 1 : 0;
}
