/* print.c: the canonical printer (language.md §4).
 *
 * Output is valid .rlx input, and printing is a fixed point of parsing:
 * print(parse(print(parse(F)))) == print(parse(F)) byte for byte.
 * Canonical form:
 *   - graphs in module order (subgraphs before their users), separated
 *     by one blank line; `graph NAME {` ... `}`;
 *   - two-space indentation, one statement per line, in node order;
 *   - arguments as `input %x: f32[4]` / `param %w: f32[4, 2]`;
 *   - every definition `%name = op(operands, attr=value, ...) : TYPE`,
 *     attributes in the op's declaration order (ops.def), only those set
 *     on the node; attributes the op does not declare (malformed IR seen
 *     in a dump) follow in node order so that nothing is hidden;
 *   - a const with node->literal (a bare literal operand, rank 0) is
 *     printed inline where it is used; other consts as
 *     `%c = const f32[2] [1.0, 2.0] : f32[2]` or the splat form;
 *   - unnamed nodes are `%N`, N counting from 0 in print order and
 *     skipping numbers that are user names in the same graph, so that a
 *     re-parse gives every node the name it was printed with;
 *   - floats in the shortest form that reads back to the same bits,
 *     always with a `.` or an exponent (or inf, -inf, nan).
 * The printer never modifies the IR and tolerates malformed graphs
 * (NULL or foreign operands print as `%<null>` / `%<foreign>`), so that
 * --dump-ir can show what a broken pass produced.
 * Memory: per-graph naming tables are temporaries of the graph's arena
 * (g->arena), so running out of memory takes the driver's path.
 * Entry points: ir_print_module, ir_print_graph, ir_fmt_double,
 * ir_fmt_float.
 */
#include "ir/ir.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- float formatting ---- */

/* Turn a %g result into lexer-friendly canonical text: no '+' or
 * leading zeros in the exponent, and a ".0" when there is neither a
 * '.' nor an exponent. */
static void canon_float_text(char *buf, size_t n) {
  char *e = strchr(buf, 'e');
  if (e) {
    char *src = e + 1, *dst = e + 1;
    if (*src == '+') src++;
    else if (*src == '-') *dst++ = *src++;
    while (*src == '0' && src[1]) src++;
    memmove(dst, src, strlen(src) + 1);
    return;
  }
  if (!strchr(buf, '.') && strlen(buf) + 3 <= n) strcat(buf, ".0");
}

static bool special_float(char *buf, size_t n, double v) {
  if (isnan(v)) snprintf(buf, n, "nan");
  else if (isinf(v)) snprintf(buf, n, v < 0 ? "-inf" : "inf");
  else return false;
  return true;
}

/* Integral values of moderate size read best in fixed notation. */
static bool integral_float(char *buf, size_t n, double v) {
  if (v != floor(v) || fabs(v) >= 1e15) return false;
  snprintf(buf, n, "%.1f", v);
  return true;
}

void ir_fmt_double(char *buf, size_t n, double v) {
  if (special_float(buf, n, v) || integral_float(buf, n, v)) return;
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, n, "%.*g", p, v);
    if (strtod(buf, NULL) == v) break;
  }
  canon_float_text(buf, n);
}

void ir_fmt_float(char *buf, size_t n, float v) {
  if (special_float(buf, n, v) || integral_float(buf, n, v)) return;
  for (int p = 1; p <= 9; p++) {
    snprintf(buf, n, "%.*g", p, (double)v);
    if (strtof(buf, NULL) == v) break;
  }
  canon_float_text(buf, n);
}

/* ---- half-precision storage (bit patterns, see language.md §2) ---- */

static float f16_to_float(uint16_t h) {
  int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  float v;
  if (e == 0) v = ldexpf((float)m, -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = ldexpf((float)(m | 1024), e - 25);
  return s ? -v : v;
}

static float bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

/* Element i of a const's storage as literal text. */
static void fmt_elem(char *buf, size_t n, const Node *c, int64_t i) {
  const void *p = c->data;
  switch (c->type.dt) {
  case DT_F32: ir_fmt_float(buf, n, ((const float *)p)[i]); break;
  case DT_F64: ir_fmt_double(buf, n, ((const double *)p)[i]); break;
  case DT_F16:
    ir_fmt_float(buf, n, f16_to_float(((const uint16_t *)p)[i]));
    break;
  case DT_BF16:
    ir_fmt_float(buf, n, bf16_to_float(((const uint16_t *)p)[i]));
    break;
  case DT_I8: snprintf(buf, n, "%d", ((const int8_t *)p)[i]); break;
  case DT_U8: snprintf(buf, n, "%u", ((const uint8_t *)p)[i]); break;
  case DT_I32:
    snprintf(buf, n, "%" PRId32, ((const int32_t *)p)[i]);
    break;
  case DT_I64:
    snprintf(buf, n, "%" PRId64, ((const int64_t *)p)[i]);
    break;
  case DT_BOOL:
    snprintf(buf, n, "%s", ((const uint8_t *)p)[i] ? "true" : "false");
    break;
  case DT_C64: {
    /* element i is the pair (re, im); written as two list entries */
    char re[48], im[48];
    ir_fmt_float(re, sizeof re, ((const float *)p)[2 * i]);
    ir_fmt_float(im, sizeof im, ((const float *)p)[2 * i + 1]);
    snprintf(buf, n, "%s, %s", re, im);
    break;
  }
  default: snprintf(buf, n, "<invalid>"); break;
  }
}

/* ---- per-graph naming ---- */

typedef struct {
  const Graph *g;
  int nids;
  const Node **owner; /* owner[id] == node: the node belongs to g */
  int64_t *num;       /* printed number of unnamed nodes, -1 if none */
  bool *noinline;     /* literal that must be printed as a definition */
} Names;

/* Is s a canonical decimal (what %N prints)? Sets *v. */
static bool canon_number(const char *s, int64_t *v) {
  if (!s[0] || (s[0] == '0' && s[1]) || strlen(s) > 15) return false;
  int64_t x = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return false;
    x = x * 10 + (*p - '0');
  }
  *v = x;
  return true;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* A c64 element (re, +0.0) reads back from the scalar text "re". */
static bool c64_real(const Node *n, int64_t i) {
  uint32_t im;
  memcpy(&im, (const float *)n->data + 2 * i + 1, sizeof im);
  return im == 0;
}

/* A literal const that could be printed inline (a bare operand). */
static bool literal_candidate(const Node *n) {
  return n && n->op == OP_CONST && n->literal && n->type.rank == 0 &&
         !n->name && n->type.dt < DT_COUNT && n->data &&
         (n->type.dt != DT_C64 || c64_real(n, 0));
}

static bool inline_literal(const Names *nm, const Node *n) {
  return literal_candidate(n) && n->id >= 0 && n->id < nm->nids &&
         !nm->noinline[n->id];
}

static bool belongs(const Names *nm, const Node *n) {
  return n && n->id >= 0 && n->id < nm->nids && nm->owner[n->id] == n;
}

/* The operand whose dtype the front end gives to a literal at position
 * i of u (frontend/build_expr.c): the other operand of a binary op or a
 * compare, the other branch of where; -1: none (the literal is f32). */
static int literal_partner(const Node *u, int i) {
  if ((op_has(u->op, OPF_BINARY) || op_has(u->op, OPF_COMPARE)) &&
      u->nin == 2)
    return 1 - i;
  if (u->op == OP_WHERE && u->nin == 3 && i > 0) return 3 - i;
  return -1;
}

/* Dtype a re-parse would give to an inline literal at operand i of u. */
static DType reparse_dtype(const Names *nm, const Node *u, int i) {
  int o = literal_partner(u, i);
  const Node *y = o >= 0 ? u->in[o] : NULL;
  if (!y || inline_literal(nm, y) || y->type.dt >= DT_COUNT) return DT_F32;
  return y->type.dt;
}

/* One sweep: literals whose inline text would re-parse with another
 * dtype become definitions. Returns whether anything changed. */
static bool literal_sweep(Names *nm, bool pairs_out) {
  bool changed = false;
  const Graph *g = nm->g;
  for (int k = 0; k < g->nnodes; k++) {
    const Node *u = g->nodes[k];
    if (!u || u->op >= OP_COUNT || !u->in) continue;
    for (int i = 0; i < u->nin; i++) {
      const Node *x = u->in[i];
      if (!belongs(nm, x) || !inline_literal(nm, x)) continue;
      int o = literal_partner(u, i);
      bool pair = o >= 0 && belongs(nm, u->in[o]) &&
                  inline_literal(nm, u->in[o]);
      if ((pairs_out && pair) || reparse_dtype(nm, u, i) != x->type.dt) {
        nm->noinline[x->id] = true;
        changed = true;
      }
    }
  }
  return changed;
}

/* Decide which literals print inline. Un-inlining one literal changes
 * what its partner re-parses as, so sweep to a fixed point; after a few
 * rounds (only reachable with literals shared by many users), literals
 * paired with literals become definitions, which ends the cascade. */
static void literals_init(Names *nm) {
  const Graph *g = nm->g;
  for (int i = 0; i < g->nret; i++)
    if (belongs(nm, g->rets[i])) nm->noinline[g->rets[i]->id] = true;
  for (int round = 0; literal_sweep(nm, false); round++)
    if (round == 3) {
      literal_sweep(nm, true);
      literal_sweep(nm, false);
      break;
    }
}

static void names_init(Names *nm, const Graph *g) {
  nm->g = g;
  nm->nids = g->next_id;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i] && g->nodes[i]->id >= nm->nids)
      nm->nids = g->nodes[i]->id + 1;
  size_t k = (size_t)(nm->nids ? nm->nids : 1);
  Arena *a = g->arena;
  nm->owner = arena_tmp_alloc(a, k * sizeof *nm->owner);
  nm->num = arena_tmp_alloc(a, k * sizeof *nm->num);
  nm->noinline = arena_tmp_alloc(a, k * sizeof *nm->noinline);
  int64_t *taken =
      arena_tmp_alloc(a, (size_t)(g->nnodes + 1) * sizeof *taken);
  int ntaken = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const Node *n = g->nodes[i];
    if (!n || n->id < 0) continue;
    nm->owner[n->id] = n;
    if (n->name && canon_number(n->name, &taken[ntaken])) ntaken++;
  }
  literals_init(nm);
  qsort(taken, (size_t)ntaken, sizeof *taken, cmp_i64);
  int64_t next = 0;
  int t = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const Node *n = g->nodes[i];
    if (!n || n->id < 0) continue;
    nm->num[n->id] = -1;
    if (n->name || inline_literal(nm, n)) continue;
    while (t < ntaken && taken[t] < next) t++;
    while (t < ntaken && taken[t] == next) next++, t++;
    nm->num[n->id] = next++;
  }
  arena_tmp_free(a, taken);
}

static void names_free(Names *nm) {
  Arena *a = nm->g->arena;
  arena_tmp_free(a, nm->owner);
  arena_tmp_free(a, nm->num);
  arena_tmp_free(a, nm->noinline);
}

static void print_ref(FILE *f, const Names *nm, const Node *n) {
  if (!n) fputs("%<null>", f);
  else if (!belongs(nm, n)) fputs("%<foreign>", f);
  else if (n->name) fprintf(f, "%%%s", n->name);
  else fprintf(f, "%%%" PRId64, nm->num[n->id]);
}

static void print_operand(FILE *f, const Names *nm, const Node *n) {
  if (belongs(nm, n) && inline_literal(nm, n)) {
    char buf[128];
    /* literal operands are numeric in the grammar: a bool one is 0/1 */
    if (n->type.dt == DT_BOOL)
      snprintf(buf, sizeof buf, "%d", *(const uint8_t *)n->data ? 1 : 0);
    else if (n->type.dt == DT_C64)
      ir_fmt_float(buf, sizeof buf, *(const float *)n->data);
    else
      fmt_elem(buf, sizeof buf, n, 0);
    fputs(buf, f);
  } else {
    print_ref(f, nm, n);
  }
}

/* ---- attributes ---- */

static void print_attr_value(FILE *f, const Attr *a) {
  char buf[64];
  switch (a->kind) {
  case AK_INT: fprintf(f, "%" PRId64, a->u.i); break;
  case AK_FLOAT:
    ir_fmt_double(buf, sizeof buf, a->u.f);
    fputs(buf, f);
    break;
  case AK_BOOL: fputs(a->u.b ? "true" : "false", f); break;
  case AK_DTYPE: fputs(dt_name(a->u.dt), f); break;
  case AK_ENUM: fputs(a->u.word ? a->u.word : "<null>", f); break;
  case AK_GRAPH:
    fprintf(f, "@%s", a->u.graph ? a->u.graph->name : "<null>");
    break;
  case AK_INTS:
    fputc('[', f);
    for (int i = 0; i < a->u.ints.n; i++) {
      int64_t v = a->u.ints.v[i];
      char ds[128];
      if (a->id == ATTR_SHAPE && v < -1) /* a dynamic size */
        fprintf(f, "%s%s", i ? ", " : "", dim_str_attr(v, ds, sizeof ds));
      else
        fprintf(f, "%s%" PRId64, i ? ", " : "", v);
    }
    fputc(']', f);
    break;
  }
}

static void print_attr(FILE *f, const Attr *a, bool *first) {
  fputs(*first ? "" : ", ", f);
  *first = false;
  fprintf(f, "%s=", a->id < ATTR_COUNT ? attr_name(a->id) : "<bad>");
  print_attr_value(f, a);
}

static void print_attrs(FILE *f, const Node *n, bool first) {
  if (n->op >= OP_COUNT) return;
  const OpInfo *oi = op_info(n->op);
  for (int s = 0; s < oi->nattrs; s++)
    for (int i = 0; i < n->nattr; i++)
      if (n->attrs[i].id == oi->attrs[s].id) {
        print_attr(f, &n->attrs[i], &first);
        break;
      }
  for (int i = 0; i < n->nattr; i++)
    if (n->attrs[i].id >= ATTR_COUNT ||
        !op_attr_spec(n->op, n->attrs[i].id))
      print_attr(f, &n->attrs[i], &first);
}

/* ---- statements ---- */

/* Argument declarations carry the bounds of dynamic sizes (?n<=8);
 * other types name the sizes only. */
static void print_type_ex(FILE *f, const Type *t, bool bounds) {
  char buf[512];
  fputs(type_str_ex(t, bounds, buf, sizeof buf), f);
}

static void print_type(FILE *f, const Type *t) {
  print_type_ex(f, t, false);
}

static void print_const_body(FILE *f, const Node *n) {
  char buf[128];
  fputs("const ", f);
  print_type(f, &n->type);
  if (!n->data) {
    fputs(" <no data>", f);
    return;
  }
  bool c64 = n->type.dt == DT_C64;
  if ((n->splat || n->type.rank == 0) && (!c64 || c64_real(n, 0))) {
    if (c64) ir_fmt_float(buf, sizeof buf, *(const float *)n->data);
    else fmt_elem(buf, sizeof buf, n, 0);
    fprintf(f, " %s", buf);
    return;
  }
  /* a complex splat with an imaginary part has no scalar form */
  int64_t k = type_numel(&n->type);
  fputs(" [", f);
  for (int64_t i = 0; i < k; i++) {
    fmt_elem(buf, sizeof buf, n, n->splat ? 0 : i);
    fprintf(f, "%s%s", i ? ", " : "", buf);
  }
  fputc(']', f);
}

static void print_node(FILE *f, const Names *nm, const Node *n) {
  if (n->op == OP_INPUT || n->op == OP_PARAM) {
    fprintf(f, "  %s ", n->op == OP_INPUT ? "input" : "param");
    print_ref(f, nm, n);
    fputs(": ", f);
    print_type_ex(f, &n->type, true);
    fputc('\n', f);
    return;
  }
  if (inline_literal(nm, n)) return;
  fputs("  ", f);
  print_ref(f, nm, n);
  fputs(" = ", f);
  if (n->op == OP_CONST) {
    print_const_body(f, n);
  } else {
    fprintf(f, "%s(", op_name(n->op));
    for (int i = 0; i < n->nin; i++) {
      if (i) fputs(", ", f);
      print_operand(f, nm, n->in[i]);
    }
    print_attrs(f, n, n->nin == 0);
    fputc(')', f);
  }
  fputs(" : ", f);
  print_type(f, &n->type);
  fputc('\n', f);
}

void ir_print_graph(FILE *f, const Graph *g) {
  Names nm;
  names_init(&nm, g);
  fprintf(f, "graph %s {\n", g->name ? g->name : "<unnamed>");
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i]) print_node(f, &nm, g->nodes[i]);
  fputs("  return", f);
  for (int i = 0; i < g->nret; i++) {
    fputs(i ? ", " : " ", f);
    print_ref(f, &nm, g->rets[i]);
  }
  fputs("\n}\n", f);
  names_free(&nm);
}

void ir_print_module(FILE *f, const Module *m) {
  if (!m) return;
  for (int i = 0; i < m->ngraphs; i++) {
    if (i) fputc('\n', f);
    ir_print_graph(f, m->graphs[i]);
  }
}
