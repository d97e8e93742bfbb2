/* ctx.c: the compilation context (Ctx, ir.h): its arena, its
 * diagnostics list (diag.c fills it) and the cleanups run when an
 * allocation fails.
 * Out of memory: ctx_new makes ctx_oom the arena's hook; it runs the
 * registered cleanups (ctx_defer) and longjmps to the driver's
 * oom_jump, so no caller of an allocator checks for NULL (ir.h). */
#include "ir/ir.h"

#include <stdlib.h>

Ctx *ctx_new(const char *file, const char *src, size_t len) {
  Ctx *c = calloc(1, sizeof *c);
  Arena *a = c ? arena_new() : NULL;
  if (!a) {
    free(c);
    return NULL;
  }
  c->arena = a;
  arena_on_oom(a, ctx_oom, c);
  c->file = file ? file : "<input>";
  c->src = src;
  c->src_len = len;
  c->diags_tail = &c->diags;
  c->max_errors = 20;
  c->dims = dim_table_new(a);
  c->dims_prev = dim_table_current();
  dim_table_use(c->dims);
  ops_init();
  return c;
}

void ctx_free(Ctx *c) {
  if (!c) return;
  ctx_unwind(c, false);
  if (dim_table_current() == c->dims) dim_table_use(c->dims_prev);
  arena_free(c->arena);
  free(c);
}

/* ---- cleanups for out-of-memory unwinds ---- */

struct CtxCleanup {
  void (*fn)(void *arg, bool fatal);
  void *arg;
  CtxCleanup *next;
};

void ctx_defer(Ctx *c, void (*fn)(void *arg, bool fatal), void *arg) {
  CtxCleanup *k = c->spare;
  if (k) c->spare = k->next;
  else k = arena_alloc(c->arena, sizeof *k);
  *k = (CtxCleanup){fn, arg, c->cleanups};
  c->cleanups = k;
}

void ctx_undefer(Ctx *c, void (*fn)(void *arg, bool fatal), void *arg) {
  for (CtxCleanup **p = &c->cleanups; *p; p = &(*p)->next)
    if ((*p)->fn == fn && (*p)->arg == arg) {
      CtxCleanup *k = *p;
      *p = k->next;
      k->next = c->spare;
      c->spare = k;
      return;
    }
}

void ctx_unwind(Ctx *c, bool fatal) {
  while (c->cleanups) {
    CtxCleanup *k = c->cleanups;
    c->cleanups = k->next; /* popped first: fn may call ctx_undefer */
    k->next = c->spare;
    c->spare = k;
    k->fn(k->arg, fatal);
  }
}

void ctx_oom(void *ctx) {
  Ctx *c = ctx;
  jmp_buf *j = c->oom_jump;
  c->oom_jump = NULL; /* running out again while unwinding: abort */
  if (!j) rlx_assert_fail(__FILE__, __LINE__, "out of memory");
  ctx_unwind(c, false);
  longjmp(*j, 1);
}
