/* diag.c: GCC-style diagnostics, collected on the Ctx (ctx.c).
 * Errors are collected on the Ctx (for unit tests) and, when diag_out
 * is set, printed at once as `FILE:LINE:COL: error: MSG`, the source
 * line (lines end at LF, CR LF or CR, as in the lexer) and a caret.
 * After max_errors errors further ones are dropped and one "too many
 * errors" line is printed. */
#include "ir/ir.h"

#include <stdarg.h>
#include <string.h>

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
