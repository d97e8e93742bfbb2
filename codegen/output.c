/* output.c: atomic output files (output.h).
 *
 * out_add writes a file's bytes to DIR/.rlxc-XXXXXX (DIR: the target's
 * directory, so that rename(2) is atomic) and records it; out_finish
 * renames them all or removes them all. A target that is a directory is
 * refused before anything is written (EISDIR), so the common mistake
 * `-o DIR` fails without touching the disk. Names are allocated by
 * out_prepare (from out_add, or earlier by a caller holding LLVM
 * memory); an out-of-memory unwind runs out_unwind (ctx_defer).
 */
#include "codegen/output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void out_undo(OutSet *s, int k);

/* Out of memory or an LLVM fatal error: close an open memory stream,
 * remove every temporary. */
static void out_unwind(void *set, bool fatal) {
  OutSet *s = set;
  if (s->mem && !fatal) {
    if (s->mem->f) fclose(s->mem->f);
    free(s->mem->buf);
    memset(s->mem, 0, sizeof *s->mem);
  }
  s->mem = NULL;
  out_undo(s, 0);
  s->n = 0;
}

void out_init(OutSet *s, Ctx *c) {
  memset(s, 0, sizeof *s);
  s->ctx = c;
  mode_t um = umask(0);
  umask(um);
  s->mode = 0666 & ~um;
  ctx_defer(c, out_unwind, s);
}

/* PATH: error: WHAT: strerror(err). Always false. */
static bool out_err(OutSet *s, const char *path, const char *what,
                    int err) {
  Ctx *c = s->ctx;
  const char *file = c->file;
  c->file = path;
  diag_error(c, (Loc){0, 0}, "%s: %s", what, strerror(err));
  c->file = file;
  return false;
}

/* Write all n bytes to fd; errno on failure. */
static bool write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return false;
    if (k == 0) {
      errno = EIO;
      return false;
    }
    p += k;
    n -= (size_t)k;
  }
  return true;
}

/* DIR/.rlxc-XXXXXX for path, in the arena. */
static char *tmp_template(Arena *a, const char *path) {
  const char *slash = strrchr(path, '/');
  size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
  char *t = arena_alloc(a, dir + sizeof ".rlxc-XXXXXX");
  memcpy(t, path, dir);
  strcpy(t + dir, ".rlxc-XXXXXX");
  return t;
}

/* Bytes to a new temporary next to path, named from the template t. */
static bool write_tmp(OutSet *s, const char *path, const char *p, size_t n,
                      char *t) {
  int fd = mkstemp(t);
  if (fd < 0) {
    int err = errno;
    const char *slash = strrchr(path, '/');
    char what[600];
    snprintf(what, sizeof what, "cannot create a temporary file in "
             "'%.*s'", slash ? (int)(slash - path + 1) : 1,
             slash ? path : ".");
    return out_err(s, path, what, err);
  }
  bool ok = fchmod(fd, s->mode) == 0 && write_all(fd, p, n);
  /* fsync reports delayed write errors; a file system without it is
   * fine */
  if (ok && fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP)
    ok = false;
  int err = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    unlink(t);
    return out_err(s, path, "cannot write", err);
  }
  return true;
}

/* A device, FIFO or socket: written in place, never replaced. */
static bool write_special(OutSet *s, const char *path, const char *p,
                          size_t n) {
  int fd = open(path, O_WRONLY | O_TRUNC);
  if (fd < 0) return out_err(s, path, "cannot write", errno);
  bool ok = write_all(fd, p, n);
  int err = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  return ok || out_err(s, path, "cannot write", err);
}

/* The prepared, not yet staged entry for path, or NULL. */
static OutFile *prepared(OutSet *s, const char *path) {
  for (int i = 0; i < s->n; i++)
    if (!s->file[i].staged && !strcmp(s->file[i].path, path))
      return &s->file[i];
  return NULL;
}

void out_prepare(OutSet *s, const char *path) {
  if (prepared(s, path)) return;
  RLX_ASSERT(s->n < OUT_MAX);
  OutFile f = {arena_strdup(s->ctx->arena, path),
               tmp_template(s->ctx->arena, path), false, false};
  s->file[s->n++] = f;
}

bool out_add(OutSet *s, const char *path, const void *bytes, size_t n) {
  out_prepare(s, path);
  OutFile *f = prepared(s, path);
  struct stat st;
  bool exists = stat(path, &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    return out_err(s, path, "cannot write", EISDIR);
  if (exists && !S_ISREG(st.st_mode))
    return write_special(s, path, bytes, n);
  f->existed = lstat(path, &st) == 0;
  f->staged = write_tmp(s, path, bytes, n, f->tmp);
  return f->staged;
}

/* Undo the renames of files 0..k-1 that created a new file, remove the
 * temporaries k..n-1. */
static void out_undo(OutSet *s, int k) {
  for (int i = 0; i < s->n; i++) {
    OutFile *f = &s->file[i];
    if (i < k && f->staged && !f->existed) unlink(f->path);
    if (i >= k && f->staged) unlink(f->tmp);
  }
}

static bool out_commit(OutSet *s) {
  for (int i = 0; i < s->n; i++) {
    OutFile *f = &s->file[i];
    if (f->staged && rename(f->tmp, f->path) != 0) {
      int err = errno;
      out_undo(s, i);
      return out_err(s, f->path, "cannot write", err);
    }
  }
  return true;
}

bool out_finish(OutSet *s, bool ok) {
  if (ok) ok = out_commit(s);
  else out_undo(s, 0);
  s->n = 0;
  ctx_undefer(s->ctx, out_unwind, s);
  return ok;
}

bool out_mem_open(OutSet *s, OutMem *m) {
  RLX_ASSERT(!s->mem);
  memset(m, 0, sizeof *m);
  m->f = open_memstream(&m->buf, &m->len);
  if (!m->f && errno == ENOMEM) arena_oom(s->ctx->arena);
  if (!m->f)
    return diag_error(s->ctx, (Loc){0, 0}, "cannot buffer an output: %s",
                      strerror(errno));
  s->mem = m;
  return true;
}

/* A memory stream fails only for lack of memory. */
bool out_mem_add(OutSet *s, OutMem *m, const char *path, bool ok) {
  bool stream_ok = !ferror(m->f);
  stream_ok &= fclose(m->f) == 0;
  m->f = NULL;
  if (!stream_ok) arena_oom(s->ctx->arena); /* out_unwind frees buf */
  if (ok) ok = out_add(s, path, m->buf, m->len);
  free(m->buf);
  s->mem = NULL;
  memset(m, 0, sizeof *m);
  return ok;
}

/* The output path of kind is base[0..*n) + *ext. */
static const char *path_parts(const Options *o, const char *cname,
                              unsigned kind, size_t *n, const char **ext) {
  *ext = kind == EMIT_OBJ      ? ".o"
         : kind == EMIT_HEADER ? ".h"
         : kind == EMIT_ASM    ? ".s"
                               : ".ll";
  const char *base = o->output ? o->output : cname;
  unsigned files = o->emit & (EMIT_OBJ | EMIT_ASM | EMIT_LLVM);
  if (o->output &&
      (kind == EMIT_OBJ || (kind != EMIT_HEADER && files == kind))) {
    *ext = "";
    *n = strlen(base);
    return base;
  }
  const char *slash = strrchr(base, '/');
  const char *dot = strrchr(base, '.');
  *n = dot && (!slash || dot > slash) ? (size_t)(dot - base)
                                      : strlen(base);
  return base;
}

static char *path_join(char *s, const char *base, size_t n,
                       const char *ext) {
  memcpy(s, base, n);
  strcpy(s + n, ext);
  return s;
}

char *out_path(const Options *o, const char *cname, unsigned kind) {
  size_t n;
  const char *ext, *base = path_parts(o, cname, kind, &n, &ext);
  char *s = malloc(n + strlen(ext) + 1);
  return s ? path_join(s, base, n, ext) : NULL;
}

char *out_path_in(Arena *a, const Options *o, const char *cname,
                  unsigned kind) {
  size_t n;
  const char *ext, *base = path_parts(o, cname, kind, &n, &ext);
  return path_join(arena_alloc(a, n + strlen(ext) + 1), base, n, ext);
}
