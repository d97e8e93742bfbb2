/* node_eq.c: does a node compute the same function of its operands as
 * another? Same op, operand count, type, attributes (a default equals
 * the attribute left out) and, for constants, the same bytes; operands
 * themselves are not compared. CSE uses it with operand identity; code
 * generation with the operands' positions in a fused tree (two loop
 * bodies built from such trees are the same code).
 */
#include "ir/ir.h"

#include <string.h>

static uint64_t mix(uint64_t h, uint64_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

size_t ir_const_bytes(const Node *n) {
  return (size_t)(n->splat ? 1 : type_numel(&n->type)) *
         (size_t)dt_size(n->type.dt);
}

uint64_t ir_node_hash_local(const Node *n) {
  uint64_t h = mix(n->op, (uint64_t)n->type.dt);
  for (int i = 0; i < n->type.rank; i++) h = mix(h, (uint64_t)n->type.dims[i]);
  if (n->op == OP_CONST) {
    const unsigned char *p = n->data;
    size_t len = ir_const_bytes(n);
    for (size_t i = 0; i < len && i < 64; i++) h = mix(h, p[i]);
    h = mix(h, n->splat);
  }
  return h;
}

static bool attr_eq(const Attr *a, const Attr *b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case AK_INT: return a->u.i == b->u.i;
  case AK_FLOAT: return !memcmp(&a->u.f, &b->u.f, sizeof a->u.f);
  case AK_BOOL: return a->u.b == b->u.b;
  case AK_DTYPE: return a->u.dt == b->u.dt;
  case AK_ENUM: return !strcmp(a->u.word, b->u.word);
  case AK_GRAPH: return a->u.graph == b->u.graph;
  case AK_INTS:
    return a->u.ints.n == b->u.ints.n &&
           !memcmp(a->u.ints.v, b->u.ints.v,
                   sizeof(int64_t) * (size_t)a->u.ints.n);
  }
  return false;
}

/* Same attributes, counting defaults (x=default equals x absent). */
static bool attrs_eq(const Node *a, const Node *b) {
  const OpInfo *oi = op_info(a->op);
  for (int i = 0; i < oi->nattrs; i++) {
    const Attr *x = ir_attr(a, oi->attrs[i].id);
    const Attr *y = ir_attr(b, oi->attrs[i].id);
    if (!x != !y || (x && !attr_eq(x, y))) return false;
  }
  return true;
}

bool ir_node_same_local(const Node *a, const Node *b) {
  if (a->op != b->op || a->nin != b->nin || !type_eq(&a->type, &b->type))
    return false;
  if (a->op == OP_CONST)
    return a->splat == b->splat &&
           !memcmp(a->data, b->data, ir_const_bytes(a));
  return attrs_eq(a, b);
}
