/* scan_prep.c: AD preparation of scans (ops-detail.md steps 5a, 5b).
 *
 * Runs only with --grad, on every graph of the AD working copy
 * (working_copy.c), subgraphs first.
 * (a) Broadcast materialization: each broadcast operand b becomes a
 *     per-step operand expand(reshape(b, [1, ...b]), [L, ...b]) and
 *     num_bcast becomes 0. The body is unchanged: its inputs are still
 *     carry, broadcasts, slices, and a slice of the expanded operand is
 *     b itself. The gradient of b is then the sum over steps, which the
 *     expand VJP produces.
 * (b) Trajectory conversion: a scan with save_trajectory=false (and no
 *     checkpoints, and L > 0) becomes a trajectory scan followed by
 *     narrow(axis 0, L-1, 1) (row 0 for reverse=true: the carry after
 *     step 0, the last one run) + reshape to the carry, so reverse mode
 *     reads the carries it needs instead of recomputing them. A scan
 *     with checkpoints=K keeps its final-carry form: vjp_rules_scan.c keeps K
 *     carries and recomputes the rest. So does a carry of rank 8 (no
 *     trajectory type exists; vjp_rules_scan.c reports it).
 * Provides: every scan has num_bcast = 0.
 */
#include "passes/ad/ad.h"

static int64_t scan_len(const Node *n) {
  int nb = (int)ir_attr_int(n, ATTR_NUM_BCAST, 0);
  if (n->nin > 1 + nb) return n->in[1 + nb]->type.dims[0];
  return ir_attr_int(n, ATTR_LENGTH, 0);
}

/* Operands with broadcasts turned into per-step operands (5a). */
static Node **materialize(IrBuilder *b, Node *n, int64_t L) {
  int nb = (int)ir_attr_int(n, ATTR_NUM_BCAST, 0);
  Node **in = arena_alloc(b->c->arena, sizeof(Node *) * (size_t)n->nin);
  in[0] = n->in[0];
  for (int i = 1; i < n->nin; i++) {
    Node *x = n->in[i];
    if (i <= nb) {
      Type t = x->type;
      t.rank = x->type.rank + 1;
      t.dims[0] = 1;
      for (int k = 0; k < x->type.rank; k++) t.dims[1 + k] = x->type.dims[k];
      Node *r = ib_reshape_as(b, x, &t);
      t.dims[0] = L;
      x = ib_expand(b, r, &t);
    }
    in[i] = x;
  }
  return in;
}

static Node *rewrite_scan(IrBuilder *b, Node *n, void *ud) {
  (void)ud;
  if (n->op != OP_SCAN) return n;
  int64_t L = scan_len(n);
  bool bcast = ir_attr_int(n, ATTR_NUM_BCAST, 0) != 0;
  /* a dynamic length keeps its final-carry form: its last row is no
   * narrow (vjp_rules_scan.c recomputes the trajectory) */
  bool traj = !ir_attr_bool(n, ATTR_SAVE_TRAJ, false) &&
              dim_is_static(L) && L > 0 &&
              ir_attr_int(n, ATTR_CHECKPOINTS, 0) == 0 &&
              n->type.rank < RLX_MAX_RANK;
  if (!bcast && !traj) return n;
  Node **in = materialize(b, n, L);
  Node *s = ir_node_new(b->c, b->g, OP_SCAN, in, n->nin, n->loc);
  ir_attr_copy_all(b->c, s, n);
  ir_attr_set_int(b->c, s, ATTR_NUM_BCAST, 0);
  if (dim_is_static(L)) ir_attr_set_int(b->c, s, ATTR_LENGTH, L);
  if (traj) ir_attr_set_bool(b->c, s, ATTR_SAVE_TRAJ, true);
  ib_finish(b, s);
  int64_t last = ir_attr_bool(n, ATTR_REVERSE, false) ? 0 : L - 1;
  Node *r = traj ? ib_reshape_as(b, ib_narrow(b, s, 0, last, 1), &n->type)
                 : s;
  r->name = n->name;
  return r;
}

bool pass_scan_prep(Unit *u) {
  return ad_rewrite_each(u, rewrite_scan);
}
