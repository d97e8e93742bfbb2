/* params_io.c -- an entry's params in and out of files: NumPy .npy
 * arrays and single-file safetensors checkpoints (rlxrt.h,
 * rlx_save_params / rlx_load_params / rlx_save_npy / rlx_load_npy).
 *
 * Formats, as published:
 *  - .npy (NumPy format versions 1.0, 2.0, 3.0): magic "\x93NUMPY",
 *    major, minor, header length (u16 in 1.0, u32 after), then a Python
 *    dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2,
 *    3), } padded with spaces and '\n' to a multiple of 64 bytes, then
 *    the raw little-endian data in C order. Written as 1.0.
 *  - safetensors: u64 little-endian header length N, N bytes of JSON
 *    {"NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [B, E]},
 *    ..., "__metadata__": {...}} (we pad it with spaces to a multiple of
 *    8), then the data; tensor NAME is bytes [B, E) of the data. The
 *    JSON reader is params_json.c.
 *
 * Readers trust nothing: every length is bounded by the file size, the
 * JSON / dict parsers stop at the end of the header and at a nesting
 * depth, shapes are compared with the signature (never used to size an
 * allocation), and offsets must lie inside the file. Any mismatch is
 * RLX_ERR_FORMAT; an OS failure (a missing file, a directory, a failed
 * read) is RLX_ERR_IO. Nothing is written into a param buffer unless its
 * whole tensor was found and checked (a load that fails may have filled
 * some params, never part of one).
 *
 * Writers never touch the file they replace until the new one is
 * complete: every param is checked first (a bad one fails before any
 * file is created), the content goes to a temporary beside the target
 * (created exclusively), which is flushed, fsynced and renamed over the
 * target; the directory is then fsynced (best effort). A failure removes
 * the temporary, so the previous checkpoint stays as it was. The .npy
 * directory form writes every temporary before renaming any.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/params/params_internal.h"

enum { NPY_HEADER_CAP = 4096 };

/* dtype names: NumPy descr (little-endian) and safetensors; NULL: the
 * format has no such dtype. */
static const struct {
  const char *npy, *st;
} names[] = {
  [RLX_DT_F32] = {"<f4", "F32"},  [RLX_DT_F64] = {"<f8", "F64"},
  [RLX_DT_F16] = {"<f2", "F16"},  [RLX_DT_BF16] = {NULL, "BF16"},
  [RLX_DT_I8] = {"|i1", "I8"},    [RLX_DT_U8] = {"|u1", "U8"},
  [RLX_DT_I32] = {"<i4", "I32"},  [RLX_DT_I64] = {"<i8", "I64"},
  [RLX_DT_BOOL] = {"|b1", "BOOL"}, [RLX_DT_C64] = {"<c8", NULL},
};

static int dtype_ok(int dt)
{
  return dt >= 0 && dt < (int)(sizeof names / sizeof names[0]);
}

/* Bytes of a tensor; 0 with *ok = 0 on overflow or a bad descriptor. */
static size_t desc_bytes(const rlx_tensor_desc *d, int *ok)
{
  size_t n = rlx_dtype_size(d->dtype);
  *ok = n != 0 && d->rank >= 0 && (d->rank == 0 || d->dims);
  for (int i = 0; *ok && i < d->rank; i++) {
    if (d->dims[i] < 0 || (d->dims[i] && n > SIZE_MAX / (size_t)d->dims[i]))
      *ok = 0;
    else
      n *= (size_t)d->dims[i];
  }
  return *ok ? n : 0;
}

/* The params of sig have names and buffers: else RLX_ERR_INVALID. */
static int sig_ok(const rlx_signature *sig, const void *const *slots)
{
  if (sig->num_inputs < 0 || (sig->num_inputs > 0 && !sig->inputs))
    return RLX_ERR_INVALID;
  for (int i = 0; i < sig->num_inputs; i++)
    if (sig->inputs[i].kind == RLX_ARG_PARAM &&
        (!sig->inputs[i].name || !slots[i]))
      return RLX_ERR_INVALID;
  return RLX_OK;
}

/* -------------------------- reading files -------------------------- */

/* Open path for reading: anything but a regular file (a directory, a
 * missing file) is RLX_ERR_IO, an OS-level failure, not a bad format. */
static int open_read(const char *path, FILE **f)
{
  struct stat st;
  *f = fopen(path, "rb");
  if (!*f)
    return RLX_ERR_IO;
  if (fstat(fileno(*f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(*f);
    return RLX_ERR_IO;
  }
  return RLX_OK;
}

static int file_size(FILE *f, long *size)
{
  if (fseek(f, 0, SEEK_END) != 0 || (*size = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0)
    return RLX_ERR_IO;
  return RLX_OK;
}

/* ------------------- writing files (never in place) ------------------- */

/* A file being written: the content goes to tmp, renamed to path when
 * complete. A zeroed Out is empty (out_discard does nothing). */
typedef struct {
  char *path, *tmp; /* owned copies */
  FILE *f;          /* open on tmp while writing */
} Out;

/* Pieces of a file's content, written in order. */
typedef struct {
  const void *p;
  size_t n;
} Chunk;

static atomic_uint tmp_seq; /* distinguishes a process's temporaries */

/* An existing target's permission bits carry over to its replacement;
 * a new one gets 0666 less the umask, as fopen would give it. */
static void keep_mode(int fd, const char *path)
{
  struct stat st;
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
    (void)fchmod(fd, st.st_mode & 0777);
}

/* Close and remove the temporary if it is still there; free o. */
static void out_discard(Out *o)
{
  if (o->f)
    fclose(o->f);
  if (o->tmp)
    unlink(o->tmp);
  free(o->path);
  free(o->tmp);
  *o = (Out){NULL, NULL, NULL};
}

/* Create PATH.tmp.PID.N exclusively (the next N if it exists). */
static int tmp_create(Out *o)
{
  size_t len = strlen(o->path) + 40;
  o->tmp = malloc(len);
  if (!o->tmp)
    return -1;
  for (int tries = 0; tries < 100; tries++) {
    snprintf(o->tmp, len, "%s.tmp.%ld.%u", o->path, (long)getpid(),
             atomic_fetch_add(&tmp_seq, 1u));
    int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST)
      return fd;
  }
  return -1;
}

/* Start writing path (through a temporary beside it). */
static int out_open(Out *o, const char *path)
{
  *o = (Out){malloc(strlen(path) + 1), NULL, NULL};
  if (!o->path)
    return RLX_ERR_NOMEM;
  strcpy(o->path, path);
  int fd = tmp_create(o);
  if (fd < 0) {
    int rc = o->tmp ? RLX_ERR_IO : RLX_ERR_NOMEM;
    free(o->tmp);
    o->tmp = NULL; /* nothing was created */
    out_discard(o);
    return rc;
  }
  keep_mode(fd, path);
  if (!(o->f = fdopen(fd, "wb"))) {
    close(fd);
    out_discard(o);
    return RLX_ERR_IO;
  }
  return RLX_OK;
}

/* Write the chunks, then flush the temporary to the disk and close it. */
static int out_write(Out *o, const Chunk *c, int n)
{
  int ok = 1;
  for (int i = 0; ok && i < n; i++)
    ok = fwrite(c[i].p, 1, c[i].n, o->f) == c[i].n;
  ok = ok && fflush(o->f) == 0 && fsync(fileno(o->f)) == 0;
  ok &= fclose(o->f) == 0;
  o->f = NULL;
  return ok ? RLX_OK : RLX_ERR_IO;
}

/* The complete temporary replaces the target. */
static int out_commit(Out *o)
{
  if (rename(o->tmp, o->path) != 0)
    return RLX_ERR_IO;
  free(o->tmp);
  o->tmp = NULL;
  return RLX_OK;
}

/* fsync a directory so that renames in it last (best effort: not every
 * file system can sync one). */
static void sync_dir(const char *dir)
{
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
}

/* sync_dir on the directory holding path. */
static void sync_parent(const char *path)
{
  const char *slash = strrchr(path, '/');
  if (!slash) {
    sync_dir(".");
    return;
  }
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  char *dir = malloc(n + 1);
  if (!dir)
    return;
  memcpy(dir, path, n);
  dir[n] = 0;
  sync_dir(dir);
  free(dir);
}

/* path gets exactly the chunks, or stays as it was. */
static int save_file(const char *path, const Chunk *c, int n)
{
  Out o;
  int rc = out_open(&o, path);
  if (rc == RLX_OK)
    rc = out_write(&o, c, n);
  if (rc == RLX_OK)
    rc = out_commit(&o);
  out_discard(&o);
  if (rc == RLX_OK)
    sync_parent(path);
  return rc;
}

/* ------------------------------ .npy ------------------------------ */

/* A quoted Python string ('...' or "...", no escapes) into buf. */
static int py_str(Cur *c, char *buf, size_t cap)
{
  skip_ws(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
    return 0;
  char q = *c->p++;
  size_t n = 0;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\' || n + 1 >= cap)
      return 0;
    buf[n++] = *c->p++;
  }
  buf[n] = 0;
  return c->p < c->end && *c->p++ == q;
}

/* Check the header dict against d (descr, fortran_order False, shape). */
static int npy_header_ok(const char *h, size_t len, const rlx_tensor_desc *d)
{
  Cur c = {h, h + len};
  char key[32], descr[16];
  int have_descr = 0, have_order = 0, have_shape = 0, rank = 0, same = 1;
  if (!eat(&c, '{'))
    return 0;
  while (!eat(&c, '}')) {
    if (!py_str(&c, key, sizeof key) || !eat(&c, ':'))
      return 0;
    skip_ws(&c);
    if (!strcmp(key, "descr") && !have_descr++) {
      if (!py_str(&c, descr, sizeof descr))
        return 0;
      same &= names[d->dtype].npy && !strcmp(descr, names[d->dtype].npy);
    } else if (!strcmp(key, "fortran_order") && !have_order++) {
      if (c.end - c.p < 5 || memcmp(c.p, "False", 5))
        return 0; /* Fortran order is not read */
      c.p += 5;
    } else if (!strcmp(key, "shape") && !have_shape++) {
      if (!eat(&c, '('))
        return 0;
      while (!eat(&c, ')')) {
        int64_t v;
        if (!uint_val(&c, &v))
          return 0;
        same &= rank < d->rank && d->dims[rank] == v;
        rank++;
        if (!eat(&c, ',') && (skip_ws(&c), c.p >= c.end || *c.p != ')'))
          return 0;
      }
    } else {
      return 0; /* unknown or repeated key */
    }
    if (!eat(&c, ',') && (skip_ws(&c), c.p >= c.end || *c.p != '}'))
      return 0;
  }
  return same && have_descr && have_order && have_shape && rank == d->rank;
}

static int npy_read(FILE *f, const rlx_tensor_desc *d, void *data)
{
  int ok;
  size_t bytes = desc_bytes(d, &ok);
  long size;
  unsigned char pre[12];
  if (!ok || !dtype_ok(d->dtype))
    return RLX_ERR_INVALID;
  if (file_size(f, &size) != RLX_OK)
    return RLX_ERR_IO;
  if (size < 10 || fread(pre, 1, 8, f) != 8 ||
      memcmp(pre, "\x93NUMPY", 6) != 0 || pre[6] < 1 || pre[6] > 3)
    return RLX_ERR_FORMAT;
  size_t hlen, off;
  if (pre[6] == 1) {
    if (fread(pre + 8, 1, 2, f) != 2)
      return RLX_ERR_FORMAT;
    hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    off = 10;
  } else {
    if (fread(pre + 8, 1, 4, f) != 4)
      return RLX_ERR_FORMAT;
    hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
           (size_t)pre[11] << 24;
    off = 12;
  }
  if (hlen > RLX_PARAMS_MAX_HEADER || (size_t)size < off + hlen ||
      (size_t)size - off - hlen != bytes)
    return RLX_ERR_FORMAT;
  char *h = malloc(hlen + 1);
  if (!h)
    return RLX_ERR_NOMEM;
  int good = fread(h, 1, hlen, f) == hlen && npy_header_ok(h, hlen, d);
  free(h);
  if (!good)
    return RLX_ERR_FORMAT;
  return fread(data, 1, bytes, f) == bytes ? RLX_OK : RLX_ERR_IO;
}

/* The whole .npy header of d (magic to the '\n', *n bytes of
 * h[NPY_HEADER_CAP]) and its data size; checks d, writes no file. */
static int npy_header(const rlx_tensor_desc *d, char *h, size_t *n,
                      size_t *bytes)
{
  int ok, k = 10;
  *bytes = desc_bytes(d, &ok);
  if (!ok || !dtype_ok(d->dtype))
    return RLX_ERR_INVALID;
  if (!names[d->dtype].npy)
    return RLX_ERR_FORMAT; /* bf16: NumPy has no such dtype */
  k += snprintf(h + k, NPY_HEADER_CAP - (size_t)k, "{'descr': '%s', "
                "'fortran_order': False, 'shape': (", names[d->dtype].npy);
  for (int i = 0; i < d->rank && k < 3900; i++)
    k += snprintf(h + k, NPY_HEADER_CAP - (size_t)k, "%lld,%s",
                  (long long)d->dims[i], i + 1 < d->rank ? " " : "");
  if (k >= 3900)
    return RLX_ERR_INVALID;
  k += snprintf(h + k, NPY_HEADER_CAP - (size_t)k, "), }");
  while ((k + 1) % 64)
    h[k++] = ' ';
  h[k++] = '\n';
  memcpy(h, "\x93NUMPY\x01\x00", 8);
  h[8] = (char)((k - 10) & 0xff);
  h[9] = (char)((k - 10) >> 8);
  *n = (size_t)k;
  return RLX_OK;
}

/* DIR/NAME.npy (malloc'd), NULL when out of memory. */
static char *npy_path(const char *dir, const char *name)
{
  size_t len = strlen(dir) + strlen(name) + 6;
  char *p = malloc(len);
  if (p)
    snprintf(p, len, "%s/%s.npy", dir, name);
  return p;
}

static int npy_dir_load(const rlx_signature *sig, const char *dir,
                        void *const *in)
{
  for (int i = 0; i < sig->num_inputs; i++) {
    const rlx_tensor_desc *d = &sig->inputs[i];
    if (d->kind != RLX_ARG_PARAM)
      continue;
    char *p = npy_path(dir, d->name);
    int rc = p ? rlx_load_npy(p, d, in[i]) : RLX_ERR_NOMEM;
    free(p);
    if (rc != RLX_OK)
      return rc;
  }
  return RLX_OK;
}

/* Every param checked (no file touched) before any is written. */
static int npy_dir_check(const rlx_signature *sig)
{
  char h[NPY_HEADER_CAP];
  size_t n, bytes;
  for (int i = 0; i < sig->num_inputs; i++) {
    int rc = sig->inputs[i].kind != RLX_ARG_PARAM
                 ? RLX_OK
                 : npy_header(&sig->inputs[i], h, &n, &bytes);
    if (rc != RLX_OK)
      return rc;
  }
  return RLX_OK;
}

/* Param d written to its temporary DIR/NAME.npy.tmp.*. */
static int npy_dir_write(Out *o, const char *dir, const rlx_tensor_desc *d,
                         const void *data)
{
  char h[NPY_HEADER_CAP];
  size_t n, bytes;
  if (npy_header(d, h, &n, &bytes) != RLX_OK)
    return RLX_ERR_INVALID; /* npy_dir_check let it pass: not reached */
  char *p = npy_path(dir, d->name);
  int rc = p ? out_open(o, p) : RLX_ERR_NOMEM;
  free(p);
  Chunk c[2] = {{h, n}, {data, bytes}};
  return rc == RLX_OK ? out_write(o, c, 2) : rc;
}

/* Every param to a temporary, then every temporary renamed. */
static int npy_dir_save(const rlx_signature *sig, const char *dir,
                        const void *const *in)
{
  int rc = npy_dir_check(sig);
  if (rc != RLX_OK)
    return rc;
  int made = mkdir(dir, 0777) == 0;
  if (!made && errno != EEXIST)
    return RLX_ERR_IO;
  Out *o = calloc((size_t)sig->num_inputs + 1, sizeof *o);
  rc = o ? RLX_OK : RLX_ERR_NOMEM;
  for (int i = 0; rc == RLX_OK && i < sig->num_inputs; i++)
    if (sig->inputs[i].kind == RLX_ARG_PARAM)
      rc = npy_dir_write(&o[i], dir, &sig->inputs[i], in[i]);
  for (int i = 0; rc == RLX_OK && i < sig->num_inputs; i++)
    if (o[i].tmp)
      rc = out_commit(&o[i]);
  for (int i = 0; o && i < sig->num_inputs; i++)
    out_discard(&o[i]);
  free(o);
  if (rc == RLX_OK)
    sync_dir(dir);
  else if (made)
    rmdir(dir); /* created here and left empty */
  return rc;
}

/* --------------------------- safetensors --------------------------- */

static int st_load(FILE *f, const rlx_signature *sig, void *const *in)
{
  long size;
  unsigned char pre[8];
  if (file_size(f, &size) != RLX_OK)
    return RLX_ERR_IO;
  if (size < 8 || fread(pre, 1, 8, f) != 8)
    return RLX_ERR_FORMAT;
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--)
    hlen = hlen << 8 | pre[i];
  if (hlen > RLX_PARAMS_MAX_HEADER || hlen > (uint64_t)size - 8)
    return RLX_ERR_FORMAT;
  char *h = malloc((size_t)hlen + 1);
  StEntry *ent = calloc((size_t)sig->num_inputs + 1, sizeof *ent);
  int rc = h && ent ? RLX_OK : RLX_ERR_NOMEM;
  if (rc == RLX_OK)
    rc = fread(h, 1, (size_t)hlen, f) != hlen
             ? RLX_ERR_FORMAT
             : rlx_st_parse(h, (size_t)hlen, sig, ent);
  uint64_t data = 8 + hlen, avail = (uint64_t)size - data;
  for (int i = 0; rc == RLX_OK && i < sig->num_inputs; i++) {
    const rlx_tensor_desc *d = &sig->inputs[i];
    if (d->kind != RLX_ARG_PARAM)
      continue;
    const StEntry *e = &ent[i];
    int ok, same = e->have && dtype_ok(d->dtype) && names[d->dtype].st &&
                   !strcmp(e->dtype, names[d->dtype].st) &&
                   e->rank == d->rank;
    size_t bytes = desc_bytes(d, &ok);
    for (int k = 0; same && k < d->rank; k++)
      same = e->shape[k] == d->dims[k];
    if (!ok || !same || (uint64_t)e->end > avail ||
        (uint64_t)(e->end - e->begin) != bytes)
      rc = RLX_ERR_FORMAT;
    else if (fseek(f, (long)(data + (uint64_t)e->begin), SEEK_SET) != 0 ||
             fread(in[i], 1, bytes, f) != bytes)
      rc = RLX_ERR_IO;
  }
  free(h);
  free(ent);
  return rc;
}

/* A param's safetensors entry: RLX_ERR_INVALID for a bad descriptor or
 * a name JSON would need escapes for, RLX_ERR_FORMAT for c64. */
static int st_check(const rlx_tensor_desc *d, size_t *bytes)
{
  int ok;
  *bytes = desc_bytes(d, &ok);
  if (!ok || !dtype_ok(d->dtype) || d->rank > RLX_PARAMS_MAX_RANK ||
      strpbrk(d->name, "\"\\"))
    return RLX_ERR_INVALID;
  return names[d->dtype].st ? RLX_OK : RLX_ERR_FORMAT; /* c64: none */
}

/* Append param d's entry at h + *n (room reserved by st_header). */
static void st_entry_text(char *h, size_t cap, size_t *n,
                          const rlx_tensor_desc *d, size_t off, size_t bytes)
{
  *n += (size_t)snprintf(h + *n, cap - *n, "%s\"%s\":{\"dtype\":\"%s\","
                         "\"shape\":[", *n > 9 ? "," : "", d->name,
                         names[d->dtype].st);
  for (int k = 0; k < d->rank; k++)
    *n += (size_t)snprintf(h + *n, cap - *n, "%s%lld", k ? "," : "",
                           (long long)d->dims[k]);
  *n += (size_t)snprintf(h + *n, cap - *n, "],\"data_offsets\":[%zu,%zu]}",
                         off, off + bytes);
}

/* The file's head (8-byte length + JSON padded to a multiple of 8) in
 * *out (malloc'd, *len bytes); every param is checked first. */
static int st_header(const rlx_signature *sig, char **out, size_t *len)
{
  size_t cap = 80, n = 8, off = 0, bytes;
  for (int i = 0; i < sig->num_inputs; i++) {
    const rlx_tensor_desc *d = &sig->inputs[i];
    if (d->kind != RLX_ARG_PARAM)
      continue;
    int rc = st_check(d, &bytes);
    if (rc == RLX_OK && off > SIZE_MAX - bytes)
      rc = RLX_ERR_INVALID;
    if (rc != RLX_OK)
      return rc;
    off += bytes;
    cap += strlen(d->name) + 96 + 24 * RLX_PARAMS_MAX_RANK;
  }
  char *h = malloc(cap);
  if (!h)
    return RLX_ERR_NOMEM;
  h[n++] = '{';
  off = 0;
  for (int i = 0; i < sig->num_inputs; i++) {
    if (sig->inputs[i].kind != RLX_ARG_PARAM)
      continue;
    st_check(&sig->inputs[i], &bytes);
    st_entry_text(h, cap, &n, &sig->inputs[i], off, bytes);
    off += bytes;
  }
  h[n++] = '}';
  while (n % 8)
    h[n++] = ' ';
  for (int i = 0; i < 8; i++)
    h[i] = (char)((uint64_t)(n - 8) >> (8 * i));
  *out = h;
  *len = n;
  return RLX_OK;
}

static int st_save(const rlx_signature *sig, const char *path,
                   const void *const *in)
{
  char *h;
  size_t n;
  int rc = st_header(sig, &h, &n);
  if (rc != RLX_OK)
    return rc;
  Chunk *c = malloc(((size_t)sig->num_inputs + 1) * sizeof *c);
  int k = 0;
  if (c) {
    c[k++] = (Chunk){h, n};
    for (int i = 0; i < sig->num_inputs; i++) {
      int ok;
      if (sig->inputs[i].kind == RLX_ARG_PARAM)
        c[k++] = (Chunk){in[i], desc_bytes(&sig->inputs[i], &ok)};
    }
  }
  rc = c ? save_file(path, c, k) : RLX_ERR_NOMEM;
  free(c);
  free(h);
  return rc;
}

/* ------------------------------ public ------------------------------ */

static int ends_with(const char *s, const char *suffix)
{
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* Close a file that was read; a failed close is an I/O error. */
static int close_file(FILE *f, int rc)
{
  int closed = fclose(f) == 0;
  return rc == RLX_OK && !closed ? RLX_ERR_IO : rc;
}

int rlx_load_npy(const char *path, const rlx_tensor_desc *desc, void *data)
{
  FILE *f;
  if (!path || !desc || !data)
    return RLX_ERR_INVALID;
  int rc = open_read(path, &f);
  return rc != RLX_OK ? rc : close_file(f, npy_read(f, desc, data));
}

int rlx_save_npy(const char *path, const rlx_tensor_desc *desc,
                 const void *data)
{
  char h[NPY_HEADER_CAP];
  size_t n, bytes;
  if (!path || !desc || !data)
    return RLX_ERR_INVALID;
  int rc = npy_header(desc, h, &n, &bytes);
  if (rc != RLX_OK)
    return rc;
  Chunk c[2] = {{h, n}, {data, bytes}};
  return save_file(path, c, 2);
}

int rlx_load_params(const rlx_signature *sig, const char *path,
                    void *const *inputs)
{
  FILE *f;
  if (!sig || !path || !inputs ||
      sig_ok(sig, (const void *const *)inputs) != RLX_OK)
    return RLX_ERR_INVALID;
  if (!ends_with(path, ".safetensors"))
    return npy_dir_load(sig, path, inputs);
  int rc = open_read(path, &f);
  return rc != RLX_OK ? rc : close_file(f, st_load(f, sig, inputs));
}

int rlx_save_params(const rlx_signature *sig, const char *path,
                    const void *const *inputs)
{
  if (!sig || !path || !inputs || sig_ok(sig, inputs) != RLX_OK)
    return RLX_ERR_INVALID;
  if (!ends_with(path, ".safetensors"))
    return npy_dir_save(sig, path, inputs);
  return st_save(sig, path, inputs);
}
