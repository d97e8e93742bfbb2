/* ops.c: tables generated from ops.def, attrs.def and dtypes.def, and
 * the per-op attribute declarations parsed once from their spec strings
 * (ops_init). Everything here is read-only after ops_init(). */
#include "ir/ir.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dtypes ---- */
static const struct { const char *name; int size; int flags; } dtypes[] = {
#define DTYPE(id, name, ctype, bytes, flags) {name, bytes, flags},
#include "ir/dtypes.def"
#undef DTYPE
};

const char *dt_name(DType dt) {
  return dt < DT_COUNT ? dtypes[dt].name : "<invalid>";
}
int dt_size(DType dt) { return dt < DT_COUNT ? dtypes[dt].size : 0; }
bool dt_is_float(DType dt) {
  return dt < DT_COUNT && (dtypes[dt].flags & DTF_FLOAT);
}
bool dt_is_int(DType dt) {
  return dt < DT_COUNT && (dtypes[dt].flags & DTF_INT);
}
bool dt_is_complex(DType dt) {
  return dt < DT_COUNT && (dtypes[dt].flags & DTF_COMPLEX);
}
DType dt_lookup(const char *name) {
  for (int i = 0; i < DT_COUNT; i++)
    if (!strcmp(dtypes[i].name, name)) return (DType)i;
  return DT_INVALID;
}

/* ---- attributes ---- */
static const struct { const char *name; AttrKind kind; const char *words; }
    attrs[] = {
#define ATTR(id, name, kind, words) {name, kind, words},
#include "ir/attrs.def"
#undef ATTR
};

const char *attr_name(AttrId id) { return attrs[id].name; }
AttrKind attr_kind(AttrId id) { return attrs[id].kind; }
AttrId attr_lookup(const char *name) {
  for (int i = 0; i < ATTR_COUNT; i++)
    if (!strcmp(attrs[i].name, name)) return (AttrId)i;
  return ATTR_COUNT;
}

/* Word lists are space separated; match whole words only. */
bool attr_word_ok(AttrId id, const char *word) {
  size_t n = strlen(word);
  for (const char *p = attrs[id].words; *p;) {
    const char *e = strchr(p, ' ');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && !strncmp(p, word, n)) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

void suggest_attr_words(Suggest *s, AttrId id) {
  char w[64];
  for (const char *p = attrs[id].words; *p;) {
    size_t len = strcspn(p, " ");
    if (len < sizeof w) {
      memcpy(w, p, len);
      w[len] = 0;
      suggest_add(s, w);
    }
    p += len + (p[len] == ' ');
  }
}

/* ---- ops ---- */
static OpInfo ops[] = {
#define OP(id, name, nmin, nmax, flags, rule, vjp, jvp, emit, attrs, math) \
  {name, nmin, nmax, flags, attrs, math, 0, NULL},
#include "ir/ops.def"
#undef OP
};

/* Static storage for parsed attribute specs (bounded by the table). */
static OpAttrSpec spec_pool[OP_COUNT * 12];
static int64_t ints_pool[256];
static char words_pool[4096]; /* enum defaults: no heap, no leak */

/* The enum word txt (a parse buffer) of attribute id, copied into
 * words_pool. */
static const char *default_word(AttrId id, const char *txt) {
  static size_t used;
  size_t n = strlen(txt) + 1;
  RLX_ASSERT(attr_word_ok(id, txt) && used + n <= sizeof words_pool);
  char *w = memcpy(words_pool + used, txt, n);
  used += n;
  return w;
}

/* Parse one default value text for attribute id into *out. */
static void parse_default(AttrId id, const char *txt, Attr *out,
                          int *nints) {
  out->id = id;
  out->kind = attrs[id].kind;
  switch (out->kind) {
  case AK_INT: out->u.i = strtoll(txt, NULL, 10); break;
  case AK_FLOAT: out->u.f = strtod(txt, NULL); break;
  case AK_BOOL: out->u.b = !strcmp(txt, "true"); break;
  case AK_DTYPE: out->u.dt = dt_lookup(txt); break;
  case AK_ENUM: out->u.word = default_word(id, txt); break;
  case AK_INTS: {
    out->u.ints.v = ints_pool + *nints;
    for (const char *p = txt + 1; *p && *p != ']';) {
      char *end;
      ints_pool[(*nints)++] = strtoll(p, &end, 10);
      RLX_ASSERT(*nints < 256);
      out->u.ints.n++;
      p = *end == ',' ? end + 1 : end;
    }
    break;
  }
  case AK_GRAPH: RLX_ASSERT(!"graph attributes have no default"); break;
  }
}

static void parse_specs(void) {
  int used = 0, nints = 0;
  for (int op = 0; op < OP_COUNT; op++) {
    ops[op].attrs = spec_pool + used;
    const char *p = ops[op].attr_spec;
    while (*p) {
      while (*p == ' ') p++;
      if (!*p) break;
      char tok[64];
      size_t len = strcspn(p, " ");
      RLX_ASSERT(len < sizeof tok);
      memcpy(tok, p, len);
      tok[len] = 0;
      p += len;
      char *eq = strchr(tok, '=');
      size_t nlen = eq ? (size_t)(eq - tok) : strcspn(tok, "?");
      char name[64];
      memcpy(name, tok, nlen);
      name[nlen] = 0;
      OpAttrSpec *s = &spec_pool[used++];
      RLX_ASSERT(used < OP_COUNT * 12);
      s->id = attr_lookup(name);
      RLX_ASSERT(s->id != ATTR_COUNT);
      s->required = !eq && !strchr(tok, '?');
      s->has_default = eq != NULL;
      if (eq) parse_default(s->id, eq + 1, &s->def, &nints);
      ops[op].nattrs++;
    }
  }
}

static pthread_once_t ops_once = PTHREAD_ONCE_INIT;
void ops_init(void) { pthread_once(&ops_once, parse_specs); }

const OpInfo *op_info(Op op) {
  RLX_ASSERT(op < OP_COUNT);
  return &ops[op];
}
const char *op_name(Op op) { return op < OP_COUNT ? ops[op].name : "?"; }
bool op_has(Op op, unsigned flags) {
  return (ops[op].flags & flags) == flags;
}

unsigned op_dtypes(Op op) {
  if (op_has(op, OPF_F32_F64)) return 1u << DT_F32 | 1u << DT_F64;
  return DTS_ANY;
}

bool op_dtype_ok(Op op, DType dt) {
  return dt < DT_COUNT && (op_dtypes(op) & 1u << dt);
}

char *dts_str(unsigned set, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < DT_COUNT && k < n; i++)
    if (set & 1u << i)
      k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "",
                            dt_name((DType)i));
  return buf;
}

Op op_lookup(const char *name) {
  for (int i = 0; i < OP_COUNT; i++)
    if (!(ops[i].flags & OPF_PSEUDO) && !strcmp(ops[i].name, name))
      return (Op)i;
  return OP_COUNT;
}

const OpAttrSpec *op_attr_spec(Op op, AttrId id) {
  const OpInfo *oi = op_info(op);
  for (int i = 0; i < oi->nattrs; i++)
    if (oi->attrs[i].id == id) return &oi->attrs[i];
  return NULL;
}

/* "did you mean" for a misspelt dtype name (suggest.c). */
const char *suggest_dtype(const char *word, char *buf, size_t n) {
  Suggest s;
  suggest_init(&s, word);
  for (int k = 0; k < DT_COUNT; k++) suggest_add(&s, dt_name((DType)k));
  return suggest_hint(&s, "", buf, n);
}
