/* params_json.c -- the JSON header of a safetensors checkpoint, read
 * against a signature (params_internal.h, rlx_st_parse).
 *
 * The header is untrusted: the parser never reads past its end, nests
 * at most MAX_DEPTH deep, and has no fixed limit on strings: a name or
 * metadata value may be as long as the header. Strings are decoded into
 * one buffer of the header's length (decoding never lengthens a string:
 * \uXXXX gives at most 3 bytes, a surrogate pair 4); strings that are
 * not names (metadata, other tensors' fields) are only checked. Raw
 * bytes, UTF-8 included, are taken as they are; escapes, \u with
 * surrogate pairs, become UTF-8.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/params/params_internal.h"

enum { MAX_DEPTH = 32 };

/* Four hex digits. */
static int hex4(Cur *c, unsigned *v)
{
  *v = 0;
  for (int i = 0; i < 4; i++) {
    char h = c->p < c->end ? *c->p++ : 0;
    int d = h >= '0' && h <= '9'   ? h - '0'
            : h >= 'a' && h <= 'f' ? h - 'a' + 10
            : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                   : -1;
    if (d < 0)
      return 0;
    *v = *v << 4 | (unsigned)d;
  }
  return 1;
}

/* Code point cp as UTF-8 in u; its length. */
static int utf8(unsigned cp, unsigned char *u)
{
  if (cp < 0x80) {
    u[0] = (unsigned char)cp;
    return 1;
  }
  int k = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  static const unsigned char lead[5] = {0, 0, 0xc0, 0xe0, 0xf0};
  for (int i = k - 1; i > 0; i--, cp >>= 6)
    u[i] = (unsigned char)(0x80 | (cp & 0x3f));
  u[0] = (unsigned char)(lead[k] | cp);
  return k;
}

/* After "\u": a code point, a high surrogate joined with the low one
 * that follows it (a lone surrogate is kept as it is). */
static int js_u(Cur *c, unsigned *cp)
{
  if (!hex4(c, cp))
    return 0;
  if (*cp < 0xd800 || *cp >= 0xdc00 || c->end - c->p < 6 ||
      c->p[0] != '\\' || c->p[1] != 'u')
    return 1;
  Cur lo = {c->p + 2, c->end};
  unsigned v;
  if (hex4(&lo, &v) && v >= 0xdc00 && v < 0xe000) {
    *cp = 0x10000 + ((*cp - 0xd800) << 10) + (v - 0xdc00);
    c->p = lo.p;
  }
  return 1;
}

/* One character of a string (c->p inside it) as bytes in u; their
 * count, 0 for a bad escape. */
static int js_char(Cur *c, unsigned char *u)
{
  unsigned cp;
  if (*c->p != '\\') {
    u[0] = (unsigned char)*c->p++;
    return 1;
  }
  if (++c->p >= c->end)
    return 0;
  switch (*c->p++) {
  case '"': cp = '"'; break;
  case '\\': cp = '\\'; break;
  case '/': cp = '/'; break;
  case 'b': cp = '\b'; break;
  case 'f': cp = '\f'; break;
  case 'n': cp = '\n'; break;
  case 'r': cp = '\r'; break;
  case 't': cp = '\t'; break;
  case 'u':
    if (!js_u(c, &cp))
      return 0;
    break;
  default:
    return 0;
  }
  return utf8(cp, u);
}

/* A JSON string: decoded into buf (cap bytes, NUL-terminated; *len its
 * length, which may include NULs) or, with buf NULL, only checked. */
static int js_str(Cur *c, char *buf, size_t cap, size_t *len)
{
  size_t n = 0;
  if (!eat(c, '"'))
    return 0;
  while (c->p < c->end && *c->p != '"') {
    unsigned char u[4];
    int k = js_char(c, u);
    if (k == 0 || (buf && n + (size_t)k >= cap))
      return 0;
    if (buf)
      memcpy(buf + n, u, (size_t)k);
    n += (size_t)k;
  }
  if (buf)
    buf[n] = 0;
  if (len)
    *len = n;
  return c->p < c->end && *c->p++ == '"';
}

/* Skip any JSON value (bounded depth). */
static int js_skip(Cur *c, int depth)
{
  skip_ws(c);
  if (c->p >= c->end || depth > MAX_DEPTH)
    return 0;
  char ch = *c->p;
  if (ch == '"')
    return js_str(c, NULL, 0, NULL);
  if (ch == '{' || ch == '[') {
    char close = ch == '{' ? '}' : ']';
    c->p++;
    if (eat(c, close))
      return 1;
    do {
      if (ch == '{' && (!js_str(c, NULL, 0, NULL) || !eat(c, ':')))
        return 0;
      if (!js_skip(c, depth + 1))
        return 0;
    } while (eat(c, ','));
    return eat(c, close);
  }
  const char *s = c->p;
  while (c->p < c->end && *c->p && strchr("0123456789+-.eEtruefalsn", *c->p))
    c->p++;
  return c->p > s;
}

static int js_ints(Cur *c, int64_t *v, int cap, int *n)
{
  *n = 0;
  if (!eat(c, '['))
    return 0;
  if (eat(c, ']'))
    return 1;
  do {
    if (*n >= cap || !uint_val(c, &v[*n]))
      return 0;
    (*n)++;
  } while (eat(c, ','));
  return eat(c, ']');
}

/* {"dtype": ..., "shape": [...], "data_offsets": [B, E]}, each once. */
static int st_entry(Cur *c, StEntry *e)
{
  char key[32];
  int64_t off[2];
  int n;
  if (!eat(c, '{'))
    return 0;
  if (eat(c, '}'))
    return 0;
  do {
    if (!js_str(c, key, sizeof key, NULL) || !eat(c, ':'))
      return 0;
    if (!strcmp(key, "dtype") && !(e->have & 1)) {
      if (!js_str(c, e->dtype, sizeof e->dtype, NULL))
        return 0;
      e->have |= 1;
    } else if (!strcmp(key, "shape") && !(e->have & 2)) {
      if (!js_ints(c, e->shape, RLX_PARAMS_MAX_RANK, &e->rank))
        return 0;
      e->have |= 2;
    } else if (!strcmp(key, "data_offsets") && !(e->have & 4)) {
      if (!js_ints(c, off, 2, &n) || n != 2 || off[0] > off[1])
        return 0;
      e->begin = off[0];
      e->end = off[1];
      e->have |= 4;
    } else {
      return 0;
    }
  } while (eat(c, ','));
  return eat(c, '}') && e->have == 7;
}

/* The param of sig named name[0, n) (NULs included), or -1. */
static int param_index(const rlx_signature *sig, const char *name, size_t n)
{
  for (int i = 0; i < sig->num_inputs; i++) {
    const rlx_tensor_desc *d = &sig->inputs[i];
    if (d->kind == RLX_ARG_PARAM && strlen(d->name) == n &&
        !memcmp(d->name, name, n))
      return i;
  }
  return -1;
}

/* The top-level object; name: a buffer of the header's length + 1. */
static int st_object(Cur *c, const rlx_signature *sig, StEntry *ent,
                     char *name, size_t cap)
{
  size_t n;
  if (!eat(c, '{'))
    return 0;
  if (eat(c, '}'))
    return 1;
  do {
    if (!js_str(c, name, cap, &n) || !eat(c, ':'))
      return 0;
    int k = param_index(sig, name, n);
    if (k >= 0) {
      if (ent[k].have)
        return 0; /* the same tensor twice */
      if (!st_entry(c, &ent[k]))
        return 0;
    } else if (!js_skip(c, 0)) {
      return 0; /* other tensors and __metadata__ are skipped */
    }
  } while (eat(c, ','));
  return eat(c, '}');
}

int rlx_st_parse(const char *h, size_t len, const rlx_signature *sig,
                 StEntry *ent)
{
  Cur c = {h, h + len};
  char *name = malloc(len + 1);
  if (!name)
    return RLX_ERR_NOMEM;
  int ok = st_object(&c, sig, ent, name, len + 1);
  free(name);
  skip_ws(&c);
  return ok && c.p == c.end ? RLX_OK : RLX_ERR_FORMAT;
}
