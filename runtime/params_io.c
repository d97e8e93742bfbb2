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
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/params_internal.h"

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

static int npy_write(FILE *f, const rlx_tensor_desc *d, const void *data)
{
  int ok;
  size_t bytes = desc_bytes(d, &ok);
  if (!ok || !dtype_ok(d->dtype))
    return RLX_ERR_INVALID;
  if (!names[d->dtype].npy)
    return RLX_ERR_FORMAT; /* bf16: NumPy has no such dtype */
  char h[4096];
  int n = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, "
                   "'shape': (", names[d->dtype].npy);
  for (int i = 0; i < d->rank && n < 3900; i++)
    n += snprintf(h + n, sizeof h - (size_t)n, "%lld,%s",
                  (long long)d->dims[i], i + 1 < d->rank ? " " : "");
  if (n >= 3900)
    return RLX_ERR_INVALID;
  n += snprintf(h + n, sizeof h - (size_t)n, "), }");
  while ((10 + n + 1) % 64)
    h[n++] = ' ';
  h[n++] = '\n';
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                           (unsigned char)(n & 0xff),
                           (unsigned char)(n >> 8)};
  if (fwrite(pre, 1, 10, f) != 10 || fwrite(h, 1, (size_t)n, f) != (size_t)n ||
      fwrite(data, 1, bytes, f) != bytes)
    return RLX_ERR_IO;
  return RLX_OK;
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

static int st_save(FILE *f, const rlx_signature *sig, const void *const *in)
{
  size_t cap = 64, n = 0, off = 0;
  for (int i = 0; i < sig->num_inputs; i++)
    cap += strlen(sig->inputs[i].name) + 96 + 24 * RLX_PARAMS_MAX_RANK;
  char *h = malloc(cap);
  if (!h)
    return RLX_ERR_NOMEM;
  int rc = RLX_OK;
  h[n++] = '{';
  for (int i = 0; i < sig->num_inputs && rc == RLX_OK; i++) {
    const rlx_tensor_desc *d = &sig->inputs[i];
    int ok;
    size_t bytes = desc_bytes(d, &ok);
    if (d->kind != RLX_ARG_PARAM)
      continue;
    if (!ok || !dtype_ok(d->dtype) || d->rank > RLX_PARAMS_MAX_RANK ||
        strpbrk(d->name, "\"\\"))
      rc = RLX_ERR_INVALID;
    else if (!names[d->dtype].st)
      rc = RLX_ERR_FORMAT; /* c64 */
    if (rc != RLX_OK)
      break;
    n += (size_t)snprintf(h + n, cap - n, "%s\"%s\":{\"dtype\":\"%s\","
                          "\"shape\":[", n > 1 ? "," : "", d->name,
                          names[d->dtype].st);
    for (int k = 0; k < d->rank; k++)
      n += (size_t)snprintf(h + n, cap - n, "%s%lld", k ? "," : "",
                            (long long)d->dims[k]);
    n += (size_t)snprintf(h + n, cap - n, "],\"data_offsets\":[%zu,%zu]}",
                          off, off + bytes);
    off += bytes;
  }
  h[n++] = '}';
  while (n % 8)
    h[n++] = ' ';
  unsigned char pre[8];
  for (int i = 0; i < 8; i++)
    pre[i] = (unsigned char)((uint64_t)n >> (8 * i));
  if (rc == RLX_OK && (fwrite(pre, 1, 8, f) != 8 || fwrite(h, 1, n, f) != n))
    rc = RLX_ERR_IO;
  for (int i = 0; rc == RLX_OK && i < sig->num_inputs; i++) {
    int ok;
    size_t bytes = desc_bytes(&sig->inputs[i], &ok);
    if (sig->inputs[i].kind == RLX_ARG_PARAM &&
        fwrite(in[i], 1, bytes, f) != bytes)
      rc = RLX_ERR_IO;
  }
  free(h);
  return rc;
}

/* ------------------------------ public ------------------------------ */

static int ends_with(const char *s, const char *suffix)
{
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* Close f; a failed close after writing is an I/O error. */
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
  if (!path || !desc || !data)
    return RLX_ERR_INVALID;
  FILE *f = fopen(path, "wb");
  if (!f)
    return RLX_ERR_IO;
  return close_file(f, npy_write(f, desc, data));
}

/* DIR/NAME.npy for each param. */
static int npy_dir(const rlx_signature *sig, const char *dir, void *const *in,
                   const void *const *out)
{
  if (out && mkdir(dir, 0777) != 0 && errno != EEXIST)
    return RLX_ERR_IO;
  for (int i = 0; i < sig->num_inputs; i++) {
    const rlx_tensor_desc *d = &sig->inputs[i];
    if (d->kind != RLX_ARG_PARAM)
      continue;
    size_t len = strlen(dir) + strlen(d->name) + 6;
    char *p = malloc(len);
    if (!p)
      return RLX_ERR_NOMEM;
    snprintf(p, len, "%s/%s.npy", dir, d->name);
    int rc = out ? rlx_save_npy(p, d, out[i]) : rlx_load_npy(p, d, in[i]);
    free(p);
    if (rc != RLX_OK)
      return rc;
  }
  return RLX_OK;
}

int rlx_load_params(const rlx_signature *sig, const char *path,
                    void *const *inputs)
{
  if (!sig || !path || !inputs)
    return RLX_ERR_INVALID;
  if (!ends_with(path, ".safetensors"))
    return npy_dir(sig, path, inputs, NULL);
  FILE *f;
  int rc = open_read(path, &f);
  return rc != RLX_OK ? rc : close_file(f, st_load(f, sig, inputs));
}

int rlx_save_params(const rlx_signature *sig, const char *path,
                    const void *const *inputs)
{
  if (!sig || !path || !inputs)
    return RLX_ERR_INVALID;
  if (!ends_with(path, ".safetensors"))
    return npy_dir(sig, path, NULL, inputs);
  FILE *f = fopen(path, "wb");
  if (!f)
    return RLX_ERR_IO;
  return close_file(f, st_save(f, sig, inputs));
}
