/* diag.c: compilation context and GCC-style diagnostics.
 * Errors are collected on the Ctx (for unit tests) and, when diag_out
 * is set, printed at once as `FILE:LINE:COL: error: MSG`, the source
 * line (lines end at LF, CR LF or CR, as in the lexer) and a caret.
 * After max_errors errors further ones are dropped and one "too many
 * errors" line is printed.
 * Out of memory: ctx_new makes ctx_oom the arena's hook; it runs the
 * registered cleanups (ctx_defer) and longjmps to the driver's
 * oom_jump, so no caller of an allocator checks for NULL (ir.h). */
#include "ir/ir.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void rlx_assert_fail(const char *file, int line, const char *expr) {
  fprintf(stderr, "%s:%d: internal error: assertion `%s' failed\n", file,
          line, expr);
  abort();
}

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
  ops_init();
  return c;
}

void ctx_free(Ctx *c) {
  if (!c) return;
  ctx_unwind(c, false);
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

/* The line after the one starting at p: a line ends at LF, CR LF or a
 * lone CR, as in the lexer. */
static const char *next_line(const char *p, const char *end) {
  while (p < end && *p != '\n' && *p != '\r') p++;
  if (p < end && *p++ == '\r' && p < end && *p == '\n') p++;
  return p;
}

/* Print source line `line` (1-based) and a caret under column col. */
static void print_caret(const Ctx *c, Loc loc) {
  if (!c->src || loc.line <= 0) return;
  const char *p = c->src, *end = c->src + c->src_len;
  if (end - p >= 3 && !memcmp(p, "\xef\xbb\xbf", 3)) p += 3; /* BOM */
  for (int l = 1; l < loc.line && p < end; l++) p = next_line(p, end);
  const char *e = p;
  while (e < end && *e != '\n' && *e != '\r') e++;
  int len = (int)(e - p);
  if (len > 400) len = 400;
  fwrite(p, 1, (size_t)len, c->diag_out);
  fputc('\n', c->diag_out);
  int col = loc.col > 0 ? loc.col - 1 : 0;
  for (int i = 0; i < col && i < len; i++)
    fputc(p[i] == '\t' ? '\t' : ' ', c->diag_out);
  fputs(c->color ? "\033[01;32m^\033[m\n" : "^\n", c->diag_out);
}

/* Was the same message already reported at loc? (Passes that revisit a
 * node must not repeat its diagnostic.) */
static bool reported(const Ctx *c, Loc loc, const char *kind,
                     const char *msg) {
  for (const Diag *d = c->diags; d; d = d->next)
    if (d->loc.line == loc.line && d->loc.col == loc.col &&
        !strcmp(d->kind, kind) && !strcmp(d->msg, msg))
      return true;
  return false;
}

/* Record one diagnostic and print it, unless an earlier one printed
 * the same place, kind and text. */
static void report(Ctx *c, Loc loc, const char *kind, const char *fmt,
                   va_list ap) {
  char buf[1024];
  vsnprintf(buf, sizeof buf, fmt, ap);
  bool repeat = c->diag_out && reported(c, loc, kind, buf);
  Diag *d = arena_alloc(c->arena, sizeof *d);
  d->loc = loc;
  d->kind = kind;
  d->msg = arena_strdup(c->arena, buf);
  *c->diags_tail = d;
  c->diags_tail = &d->next;
  if (!c->diag_out || repeat) return;
  const char *bold = c->color ? "\033[01m" : "";
  const char *off = c->color ? "\033[m" : "";
  const char *hue = !c->color        ? ""
                    : kind[0] == 'e' ? "\033[01;31m"
                                     : "\033[01;36m";
  if (loc.line > 0)
    fprintf(c->diag_out, "%s%s:%d:%d:%s %s%s:%s %s\n", bold, c->file,
            loc.line, loc.col, off, hue, kind, off, buf);
  else
    fprintf(c->diag_out, "%s%s:%s %s%s:%s %s\n", bold, c->file, off, hue,
            kind, off, buf);
  print_caret(c, loc);
}

bool diag_error(Ctx *c, Loc loc, const char *fmt, ...) {
  if (c->nerrors >= c->max_errors) return false;
  va_list ap;
  va_start(ap, fmt);
  c->nerrors++; /* a repeat is not printed again, but still counts */
  report(c, loc, "error", fmt, ap);
  va_end(ap);
  if (c->nerrors == c->max_errors && c->diag_out)
    fprintf(c->diag_out, "%s: error: too many errors, stopping\n", c->file);
  return false;
}

bool diag_note(Ctx *c, Loc loc, const char *fmt, ...) {
  if (c->nerrors >= c->max_errors) return false;
  va_list ap;
  va_start(ap, fmt);
  report(c, loc, "note", fmt, ap);
  va_end(ap);
  return false;
}

bool diag_too_many(const Ctx *c) { return c->nerrors >= c->max_errors; }

/* ---- "did you mean" ---- */

/* Optimal-string-alignment distance (edits, adjacent swaps), capped. */
static int edit_distance(const char *a, const char *b) {
  enum { MAXW = 64 };
  size_t n = strlen(a), m = strlen(b);
  if (n >= MAXW || m >= MAXW) return MAXW;
  int d[MAXW + 1][MAXW + 1];
  for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      int cost = a[i - 1] != b[j - 1];
      int v = d[i - 1][j - 1] + cost;
      if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[n][m];
}

void suggest_init(Suggest *s, const char *word) {
  *s = (Suggest){.word = word, .dist = INT32_MAX};
}

void suggest_add(Suggest *s, const char *cand) {
  if (!cand || !strcmp(cand, s->word)) return;
  int d = edit_distance(s->word, cand);
  if (d < s->dist && strlen(cand) < sizeof s->best) {
    s->dist = d;
    strcpy(s->best, cand);
  }
}

const char *suggest_hint(const Suggest *s, const char *prefix, char *buf,
                         size_t n) {
  int len = (int)strlen(s->word), limit = len / 3 > 1 ? len / 3 : 1;
  if (!s->best[0] || s->dist > limit || s->dist >= len) return "";
  snprintf(buf, n, "; did you mean '%s%s'?", prefix, s->best);
  return buf;
}

const char *suggest_dtype(const char *word, char *buf, size_t n) {
  Suggest s;
  suggest_init(&s, word);
  for (int k = 0; k < DT_COUNT; k++) suggest_add(&s, dt_name((DType)k));
  return suggest_hint(&s, "", buf, n);
}
