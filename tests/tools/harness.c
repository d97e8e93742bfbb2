/* harness.c -- buffers, golden files and comparison for generated entry
 * points (see harness.h for the file convention and tolerance rule).
 *
 * Invariant: every HxTensor buffer is at least 1 byte (rank-0 and empty
 * tensors included) so that pointers handed to the entry are never
 * NULL.  All errors are reported on stderr and returned as false/-1.
 */
#include "tests/tools/harness.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HX_MAX_REPORT 8

int64_t hx_numel(const rlx_tensor_desc *d)
{
  int64_t n = 1;
  for (int i = 0; i < d->rank; i++)
    n *= d->dims[i];
  return n;
}

char *hx_desc_str(const rlx_tensor_desc *d, char *buf, size_t n)
{
  size_t k = (size_t)snprintf(buf, n, "%s[", rlx_dtype_name(d->dtype));
  for (int i = 0; i < d->rank && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "",
                          (long long)d->dims[i]);
  if (k < n)
    snprintf(buf + k, n - k, "]");
  return buf;
}

HxTol hx_default_tol(int dtype)
{
  HxTol t = {0, 0};
  if (dtype == RLX_DT_F32 || dtype == RLX_DT_C64)
    t = (HxTol){1e-4, 1e-5};
  else if (dtype == RLX_DT_F64)
    t = (HxTol){1e-9, 1e-11};
  return t;
}

/* ---- buffers ---- */

static bool tensor_init(HxTensor *t, const rlx_tensor_desc *d)
{
  t->desc = d;
  t->numel = hx_numel(d);
  t->bytes = (size_t)t->numel * rlx_dtype_size(d->dtype);
  size_t alloc = t->bytes ? t->bytes : 1;
  t->data = rlx_alloc(alloc);
  if (!t->data) {
    fprintf(stderr, "harness: cannot allocate %zu bytes for %s\n", alloc,
            d->name ? d->name : "?");
    return false;
  }
  memset(t->data, 0, alloc);
  return true;
}

static bool tensors_init(HxTensor **ts, const rlx_tensor_desc *d, int n)
{
  *ts = calloc((size_t)(n ? n : 1), sizeof(HxTensor));
  if (!*ts)
    return false;
  for (int i = 0; i < n; i++)
    if (!tensor_init(&(*ts)[i], &d[i]))
      return false;
  return true;
}

bool hx_call_init(HxCall *c, HxEntry fn, const rlx_signature *sig,
                  bool null_ws)
{
  memset(c, 0, sizeof *c);
  c->fn = fn;
  c->sig = sig;
  c->null_ws = null_ws;
  if (!tensors_init(&c->in, sig->inputs, sig->num_inputs) ||
      !tensors_init(&c->out, sig->outputs, sig->num_outputs))
    return false;
  if (!null_ws) {
    c->workspace = rlx_alloc(sig->workspace_bytes);
    if (!c->workspace) {
      fprintf(stderr, "harness: cannot allocate workspace (%zu bytes)\n",
              sig->workspace_bytes);
      return false;
    }
  }
  return true;
}

static void tensors_free(HxTensor *ts, int n)
{
  if (!ts)
    return;
  for (int i = 0; i < n; i++)
    rlx_free(ts[i].data);
  free(ts);
}

void hx_call_free(HxCall *c)
{
  if (!c->sig)
    return;
  tensors_free(c->in, c->sig->num_inputs);
  tensors_free(c->out, c->sig->num_outputs);
  rlx_free(c->workspace);
  memset(c, 0, sizeof *c);
}

/* ---- files ---- */

void *hx_read_file(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap)
      break;
    char *nb = realloc(buf, cap * 2);
    if (!nb) {
      free(buf);
      buf = NULL;
    } else {
      buf = nb;
      cap *= 2;
    }
  }
  fclose(f);
  *len = n;
  return buf;
}

bool hx_write_file(const char *path, const void *data, size_t len)
{
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "harness: cannot write %s: %s\n", path,
            strerror(errno));
    return false;
  }
  bool ok = fwrite(data, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  return ok;
}

bool hx_load_inputs(HxCall *c, const char *dir)
{
  char path[4096], ty[128];
  for (int i = 0; i < c->sig->num_inputs; i++) {
    HxTensor *t = &c->in[i];
    snprintf(path, sizeof path, "%s/in%d.bin", dir, i);
    size_t len = 0;
    void *buf = hx_read_file(path, &len);
    if (!buf) {
      fprintf(stderr, "harness: cannot read %s\n", path);
      return false;
    }
    if (len != t->bytes) {
      fprintf(stderr, "harness: %s has %zu bytes, input %d (%s: %s) "
              "needs %zu\n", path, len, i, t->desc->name,
              hx_desc_str(t->desc, ty, sizeof ty), t->bytes);
      free(buf);
      return false;
    }
    memcpy(t->data, buf, len);
    free(buf);
  }
  return true;
}

bool hx_copy_inputs(HxCall *dst, const HxCall *src, int n)
{
  for (int i = 0; i < n; i++) {
    if (i >= dst->sig->num_inputs || i >= src->sig->num_inputs ||
        dst->in[i].bytes != src->in[i].bytes ||
        dst->in[i].desc->dtype != src->in[i].desc->dtype) {
      fprintf(stderr, "harness: input %d differs between entries\n", i);
      return false;
    }
    memcpy(dst->in[i].data, src->in[i].data, src->in[i].bytes);
  }
  return true;
}

/* ---- element access ---- */

static double half_to_f64(uint16_t h)
{
  int e = (h >> 10) & 31, m = h & 1023;
  double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0)
    return s * ldexp(m, -24);
  if (e == 31)
    return m ? NAN : s * INFINITY;
  return s * ldexp(m + 1024, e - 25);
}

static double bf16_to_f64(uint16_t h)
{
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

double hx_get(const HxTensor *t, int64_t i)
{
  const void *p = t->data;
  switch (t->desc->dtype) {
  case RLX_DT_F32: return ((const float *)p)[i];
  case RLX_DT_F64: return ((const double *)p)[i];
  case RLX_DT_F16: return half_to_f64(((const uint16_t *)p)[i]);
  case RLX_DT_BF16: return bf16_to_f64(((const uint16_t *)p)[i]);
  case RLX_DT_I8: return ((const int8_t *)p)[i];
  case RLX_DT_U8: return ((const uint8_t *)p)[i];
  case RLX_DT_I32: return ((const int32_t *)p)[i];
  case RLX_DT_I64: return (double)((const int64_t *)p)[i];
  case RLX_DT_BOOL: return ((const uint8_t *)p)[i];
  case RLX_DT_C64: return ((const float *)p)[i]; /* i indexes floats */
  default: return NAN;
  }
}

void hx_set(HxTensor *t, int64_t i, double v)
{
  void *p = t->data;
  switch (t->desc->dtype) {
  case RLX_DT_F32: ((float *)p)[i] = (float)v; break;
  case RLX_DT_F64: ((double *)p)[i] = v; break;
  case RLX_DT_I8: ((int8_t *)p)[i] = (int8_t)v; break;
  case RLX_DT_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
  case RLX_DT_I32: ((int32_t *)p)[i] = (int32_t)v; break;
  case RLX_DT_I64: ((int64_t *)p)[i] = (int64_t)v; break;
  case RLX_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
  case RLX_DT_C64: ((float *)p)[i] = (float)v; break;
  default: break; /* f16/bf16 inputs come from files only */
  }
}

static uint64_t splitmix64(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void hx_fill_tensor(HxTensor *t, uint64_t *s)
{
  int dt = t->desc->dtype;
  int64_t n = dt == RLX_DT_C64 ? 2 * t->numel : t->numel;
  bool is_float = dt == RLX_DT_F32 || dt == RLX_DT_F64 || dt == RLX_DT_C64;
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = splitmix64(s);
    if (is_float)
      hx_set(t, i, (double)(r >> 11) * 0x1p-52 - 1.0);
    else if (dt == RLX_DT_BOOL)
      hx_set(t, i, (double)(r & 1));
    else
      hx_set(t, i, (double)(r % 4));
  }
}

void hx_fill_inputs(HxCall *c, uint64_t seed)
{
  uint64_t s = seed;
  for (int i = 0; i < c->sig->num_inputs; i++)
    hx_fill_tensor(&c->in[i], &s);
}

/* ---- calling ---- */

int hx_run(HxCall *c)
{
  const void *ins[c->sig->num_inputs + 1];
  void *outs[c->sig->num_outputs + 1];
  for (int i = 0; i < c->sig->num_inputs; i++)
    ins[i] = c->in[i].data;
  for (int j = 0; j < c->sig->num_outputs; j++)
    outs[j] = c->out[j].data;
  return c->fn(ins, outs, c->null_ws ? NULL : c->workspace);
}

/* ---- comparison ---- */

static bool is_real_float(int dt)
{
  return dt == RLX_DT_F32 || dt == RLX_DT_F64 || dt == RLX_DT_C64;
}

/* Bytes of the golden file for output t. */
static size_t golden_bytes(const HxTensor *t)
{
  if (t->desc->dtype == RLX_DT_C64)
    return (size_t)t->numel * 16;
  if (is_real_float(t->desc->dtype))
    return (size_t)t->numel * 8;
  return t->bytes;
}

static bool close_enough(double got, double ref, double scale,
                         const HxTol *tol)
{
  if (isnan(ref) || isnan(got))
    return isnan(ref) && isnan(got);
  if (isinf(ref) || isinf(got))
    return got == ref;
  return fabs(got - ref) <= tol->rtol * fabs(ref) + tol->atol * scale;
}

static void report_index(const HxTensor *t, int64_t flat, char *buf,
                         size_t n)
{
  const rlx_tensor_desc *d = t->desc;
  int64_t idx[16] = {0};
  for (int k = d->rank - 1; k >= 0 && k < 16; k--) {
    idx[k] = d->dims[k] ? flat % d->dims[k] : 0;
    flat = d->dims[k] ? flat / d->dims[k] : 0;
  }
  size_t w = (size_t)snprintf(buf, n, "[");
  for (int k = 0; k < d->rank && k < 16 && w < n; k++)
    w += (size_t)snprintf(buf + w, n - w, "%s%lld", k ? "," : "",
                          (long long)idx[k]);
  if (w < n)
    snprintf(buf + w, n - w, "]");
}

static int compare_float(const HxTensor *t, const double *ref, int j,
                         const HxTol *tol)
{
  int64_t n = t->desc->dtype == RLX_DT_C64 ? 2 * t->numel : t->numel;
  double scale = 1.0;
  for (int64_t i = 0; i < n; i++)
    if (isfinite(ref[i]) && fabs(ref[i]) > scale)
      scale = fabs(ref[i]);
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    double g = hx_get(t, i);
    if (close_enough(g, ref[i], scale, tol))
      continue;
    if (bad++ < HX_MAX_REPORT) {
      char where[256];
      int64_t e = t->desc->dtype == RLX_DT_C64 ? i / 2 : i;
      report_index(t, e, where, sizeof where);
      fprintf(stderr, "  output %d (%s)%s%s: got %.17g, want %.17g "
              "(|diff| %.3g, allowed %.3g)\n", j, t->desc->name, where,
              t->desc->dtype == RLX_DT_C64 ? (i % 2 ? ".im" : ".re") : "",
              g, ref[i], fabs(g - ref[i]),
              tol->rtol * fabs(ref[i]) + tol->atol * scale);
    }
  }
  return bad;
}

static bool is_half(int dt)
{
  return dt == RLX_DT_F16 || dt == RLX_DT_BF16;
}

/* Bit-exact for integers and bool; f16/bf16 compare values exactly
 * (any NaN matches any NaN, -0 equals +0). */
static int compare_exact(const HxTensor *t, const void *ref, int j,
                         bool by_value)
{
  size_t es = rlx_dtype_size(t->desc->dtype);
  HxTensor rt = *t;
  rt.data = (void *)(uintptr_t)ref;
  int bad = 0;
  for (int64_t i = 0; i < t->numel; i++) {
    const char *g = (const char *)t->data + i * es;
    const char *r = (const char *)ref + i * es;
    double gv = hx_get(t, i), rv = hx_get(&rt, i);
    if (by_value ? (gv == rv || (isnan(gv) && isnan(rv)))
                 : memcmp(g, r, es) == 0)
      continue;
    if (bad++ < HX_MAX_REPORT) {
      char where[256];
      report_index(t, i, where, sizeof where);
      fprintf(stderr, "  output %d (%s)%s: got %.17g, want %.17g "
              "(exact)\n", j, t->desc->name, where, gv, rv);
    }
  }
  return bad;
}

int hx_compare_outputs(const HxCall *c, const char *dir, const HxTol *tol)
{
  int failing = 0;
  char path[4096], ty[128];
  for (int j = 0; j < c->sig->num_outputs; j++) {
    const HxTensor *t = &c->out[j];
    snprintf(path, sizeof path, "%s/out%d.bin", dir, j);
    size_t len = 0;
    void *ref = hx_read_file(path, &len);
    if (!ref || len != golden_bytes(t)) {
      fprintf(stderr, "harness: golden %s missing or %zu bytes, want %zu "
              "for output %d (%s)\n", path, len, golden_bytes(t), j,
              hx_desc_str(t->desc, ty, sizeof ty));
      free(ref);
      return -1;
    }
    HxTol dt = hx_default_tol(t->desc->dtype);
    int bad = is_real_float(t->desc->dtype)
                  ? compare_float(t, ref, j, tol ? tol : &dt)
                  : compare_exact(t, ref, j, is_half(t->desc->dtype));
    if (bad) {
      fprintf(stderr, "  output %d (%s: %s): %d of %lld elements differ\n",
              j, t->desc->name, hx_desc_str(t->desc, ty, sizeof ty), bad,
              (long long)t->numel);
      failing++;
    }
    free(ref);
  }
  return failing;
}

bool hx_write_outputs(const HxCall *c, const char *dir)
{
  char path[4096];
  for (int j = 0; j < c->sig->num_outputs; j++) {
    const HxTensor *t = &c->out[j];
    snprintf(path, sizeof path, "%s/out%d.bin", dir, j);
    if (!is_real_float(t->desc->dtype)) {
      if (!hx_write_file(path, t->data, t->bytes))
        return false;
      continue;
    }
    int64_t n = golden_bytes(t) / 8;
    double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
    if (!v)
      return false;
    for (int64_t i = 0; i < n; i++)
      v[i] = hx_get(t, i);
    bool ok = hx_write_file(path, v, (size_t)n * 8);
    free(v);
    if (!ok)
      return false;
  }
  return true;
}

/* ---- determinism across thread counts ---- */

static void **snapshot(const HxCall *c)
{
  int n = c->sig->num_outputs;
  void **s = calloc((size_t)(n ? n : 1), sizeof(void *));
  for (int j = 0; s && j < n; j++) {
    s[j] = malloc(c->out[j].bytes ? c->out[j].bytes : 1);
    if (s[j])
      memcpy(s[j], c->out[j].data, c->out[j].bytes);
  }
  return s;
}

static void snapshot_free(void **s, int n)
{
  for (int j = 0; s && j < n; j++)
    free(s[j]);
  free(s);
}

bool hx_check_threads(HxCall *c, const int *threads, int n)
{
  void **first = NULL;
  bool ok = true;
  int nout = c->sig->num_outputs;
  for (int k = 0; k < n && ok; k++) {
    rlx_set_num_threads(threads[k]);
    for (int j = 0; j < nout; j++) /* stale results must not pass */
      memset(c->out[j].data, 0xA5, c->out[j].bytes);
    int rc = hx_run(c);
    if (rc != 0) {
      fprintf(stderr, "harness: %d threads: entry returned %d (%s)\n",
              threads[k], rc, rlx_strerror(rc));
      ok = false;
    } else if (!first) {
      first = snapshot(c);
    } else {
      for (int j = 0; j < nout && ok; j++)
        if (memcmp(first[j], c->out[j].data, c->out[j].bytes) != 0) {
          fprintf(stderr, "harness: output %d differs between %d and %d "
                  "threads\n", j, threads[0], threads[k]);
          ok = false;
        }
    }
  }
  snapshot_free(first, nout);
  rlx_set_num_threads(0);
  return ok;
}
