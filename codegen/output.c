/* output.c: atomic output files (output.h).
 *
 * out_add writes a file's bytes to DIR/.rlxc-XXXXXX (DIR: the target's
 * directory, so that rename(2) is atomic) and records it; out_finish
 * renames them all or removes them all. A target that is a directory is
 * refused before anything is written (EISDIR), so the common mistake
 * `-o DIR` fails without touching the disk.
 */
#include "codegen/output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void out_init(OutSet *s, Ctx *c) {
  memset(s, 0, sizeof *s);
  s->ctx = c;
  mode_t um = umask(0);
  umask(um);
  s->mode = 0666 & ~um;
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

/* DIR/.rlxc-XXXXXX for path, malloc'ed. */
static char *tmp_template(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
  char *t = malloc(dir + sizeof ".rlxc-XXXXXX");
  if (!t) return NULL;
  memcpy(t, path, dir);
  strcpy(t + dir, ".rlxc-XXXXXX");
  return t;
}

/* Bytes to a new temporary next to path; its name in *tmp. */
static bool write_tmp(OutSet *s, const char *path, const char *p, size_t n,
                      char **tmp) {
  char *t = tmp_template(path);
  if (!t) return out_err(s, path, "cannot write", ENOMEM);
  int fd = mkstemp(t);
  if (fd < 0) {
    int err = errno;
    const char *slash = strrchr(path, '/');
    char what[600];
    snprintf(what, sizeof what, "cannot create a temporary file in "
             "'%.*s'", slash ? (int)(slash - path + 1) : 1,
             slash ? path : ".");
    free(t);
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
    free(t);
    return out_err(s, path, "cannot write", err);
  }
  *tmp = t;
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

bool out_add(OutSet *s, const char *path, const void *bytes, size_t n) {
  RLX_ASSERT(s->n < OUT_MAX);
  struct stat st;
  bool exists = stat(path, &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    return out_err(s, path, "cannot write", EISDIR);
  if (exists && !S_ISREG(st.st_mode))
    return write_special(s, path, bytes, n);
  OutFile *f = &s->file[s->n];
  memset(f, 0, sizeof *f);
  f->path = strdup(path);
  if (!f->path) return out_err(s, path, "cannot write", ENOMEM);
  f->existed = lstat(path, &st) == 0;
  if (!write_tmp(s, path, bytes, n, &f->tmp)) {
    free(f->path);
    return false;
  }
  s->n++;
  return true;
}

/* Undo the renames of files 0..k-1 that created a new file, remove the
 * temporaries k..n-1. */
static void out_undo(OutSet *s, int k) {
  for (int i = 0; i < s->n; i++) {
    OutFile *f = &s->file[i];
    if (i < k && f->tmp && !f->existed) unlink(f->path);
    if (i >= k && f->tmp) unlink(f->tmp);
  }
}

static bool out_commit(OutSet *s) {
  for (int i = 0; i < s->n; i++) {
    OutFile *f = &s->file[i];
    if (f->tmp && rename(f->tmp, f->path) != 0) {
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
  for (int i = 0; i < s->n; i++) {
    free(s->file[i].path);
    free(s->file[i].tmp);
  }
  s->n = 0;
  return ok;
}

bool out_mem_open(OutSet *s, OutMem *m) {
  memset(m, 0, sizeof *m);
  m->f = open_memstream(&m->buf, &m->len);
  if (!m->f)
    return diag_error(s->ctx, (Loc){0, 0}, "cannot buffer an output: %s",
                      strerror(errno));
  return true;
}

bool out_mem_add(OutSet *s, OutMem *m, const char *path, bool ok) {
  bool stream_ok = !ferror(m->f);
  int err = errno;
  if (fclose(m->f) != 0 && stream_ok) {
    stream_ok = false;
    err = errno;
  }
  if (ok && !stream_ok) ok = out_err(s, path, "cannot write", err);
  if (ok) ok = out_add(s, path, m->buf, m->len);
  free(m->buf);
  memset(m, 0, sizeof *m);
  return ok;
}

/* base + ext, where base is path without its extension. */
static char *derive(const char *path, const char *ext) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(path, '.');
  size_t n = dot && (!slash || dot > slash) ? (size_t)(dot - path)
                                            : strlen(path);
  char *s = malloc(n + strlen(ext) + 1);
  if (!s) return NULL;
  memcpy(s, path, n);
  strcpy(s + n, ext);
  return s;
}

char *out_path(const Options *o, const char *cname, unsigned kind) {
  const char *ext = kind == EMIT_OBJ      ? ".o"
                    : kind == EMIT_HEADER ? ".h"
                    : kind == EMIT_ASM    ? ".s"
                                          : ".ll";
  if (!o->output) return derive(cname, ext);
  unsigned files = o->emit & (EMIT_OBJ | EMIT_ASM | EMIT_LLVM);
  if (kind == EMIT_OBJ || (kind != EMIT_HEADER && files == kind))
    return strdup(o->output);
  return derive(o->output, ext);
}
