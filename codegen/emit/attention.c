/* attention.c: attention (language.md 6.5) and attention_backward
 * (6.9), as calls of the runtime's FlashAttention-2 routines
 * (runtime/rlxrt.h, rlx_attention_*): no Lq x Lk matrix is ever stored.
 *
 * Geometry: a private constant global rlx_attn_geom (8 i64, 2 doubles).
 * The mask operand: causal and sliding_window need none; bias is passed
 * as it is; a custom mask becomes keep[b][lk] bytes (1 unless value <
 * 0.5) in the node's scratch, except a bool mask, which already is.
 *
 * One pass for all gradients. The reverse walk emits one
 * attention_backward per wanted operand (wrt=q, k, v, bias) with the
 * same operands and attributes. The plan (plan/attention_groups.c,
 * before fusion) moves the later ones right after the first, the
 * leader, and sets their attn_lead; the leader's call writes every
 * member's result and the members emit nothing (the memory plan makes
 * their blocks live from the leader's position). The leader also looks
 * for the forward attention of the same operands and attributes
 * (f32/f64): that node then saves its row log-sum-exp in a block of its
 * own (saved_bytes, live to the last leader reading it) and the leader
 * reads it with the forward output, so the backward recomputes neither
 * (RLX_ATTN_BWD); without one it recomputes both in its scratch
 * (RLX_ATTN_BWD_RECOMPUTE).
 *
 * f16/bf16: operands widened to f32 copies in the scratch area, the f32
 * routine writes f32 results there, each rounded once to the dtype;
 * with dynamic sizes the copies are laid out at the bounds and the
 * loops convert the run-time elements (dense at the actual sizes).
 * With a size without a bound the scratch is computed at run time
 * (the routine's formula at the call's geometry, the copies at the
 * call's sizes: cg_attention_scratch_rt), and so are the parts'
 * offsets.
 */
#include "codegen/emit/emit.h"

#include "runtime/rlxrt.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

static bool half(DType dt) { return dt == DT_F16 || dt == DT_BF16; }
static bool is_bwd(const Node *n) { return n->op == OP_ATTENTION_BACKWARD; }
static int mask_i(const Node *n) { return is_bwd(n) ? 4 : 3; }

/* Scratch layout: [routine workspace][keep bytes][f32 copies: q k v
 * (dy) (bias) then results: o | dq dk dv dbias]. */
static bool needs_keep(const Node *n) {
  return cg_attn_mask_kind(n) == RLX_ATTN_CUSTOM &&
         n->in[mask_i(n)]->type.dt != DT_BOOL;
}

static int routine_op(const CgPlan *p, const Node *n) {
  if (!is_bwd(n)) return RLX_ATTN_FWD;
  return p->slot[n->id].fwd ? RLX_ATTN_BWD : RLX_ATTN_BWD_RECOMPUTE;
}

/* The routine's scratch grows with lq and lk, so their bounds reserve
 * enough; it does not with b while b * h is below the runtime's slot
 * count (fewer heads get more dQ chunks), so a dynamic b takes the
 * largest over every b up to the bound, tried up to 4096 (far past
 * that count, where the scratch grows with b again and the bound's
 * covers the rest). */
static int64_t routine_bytes(const CgPlan *p, const Node *n) {
  rlx_attn_geom g = cg_attn_geometry_bound(n);
  int op = routine_op(p, n);
  DType dt = n->type.dt;
  int64_t es = half(dt) ? 4 : dt_size(dt);
  int64_t most = rlx_attention_scratch_bytes(&g, op, es);
  bool dyn_b = !dim_is_static(n->in[0]->type.dims[0]);
  for (int64_t b = 1, top = g.b; dyn_b && b < top && b <= 4096; b++) {
    g.b = b;
    int64_t s = rlx_attention_scratch_bytes(&g, op, es);
    most = s > most ? s : most;
  }
  return cg_align(most);
}

static int64_t keep_bytes(const Node *n) {
  rlx_attn_geom g = cg_attn_geometry_bound(n);
  return needs_keep(n) ? cg_align(g.b * g.lk) : 0;
}

/* f16/bf16: f32 copies of the float operands (all but a custom mask),
 * then of the results (o, or one per float operand but dy), laid out
 * at the bounds. */
static int64_t copy_bytes(const Node *n) {
  if (!half(n->type.dt)) return 0;
  int64_t b = 0;
  for (int i = 0; i < n->nin; i++)
    if (i != mask_i(n) || cg_attn_mask_kind(n) == RLX_ATTN_BIAS)
      b += 2 * cg_f32_copy_bytes(&n->in[i]->type);
  return b;
}

static int64_t cg_scratch_attention(Cg *cg, Node *n) {
  const CgPlan *p = cg->planning;
  if (p->slot[n->id].attn_lead) return 0;
  if (node_unbounded(n)) return CG_SCRATCH_RT; /* ..._scratch_rt */
  return routine_bytes(p, n) + keep_bytes(n) + copy_bytes(n);
}

/* The parts of the scratch as run-time values (a size without a bound):
 * the routine's at the call's geometry, keep, the f32 copies at the
 * call's sizes, each rounded up to 64 bytes. */

static LLVMValueRef routine_rt(Cg *cg, const Node *n, LLVMValueRef geom) {
  LLVMValueRef a[3] = {geom, cg_i32(cg, routine_op(cg->fn->plan, n)),
                       cg_i64(cg, half(n->type.dt) ? 4 : dt_size(n->type.dt))};
  return cg_align_rt(cg, cg_call(cg, "rlx_attention_scratch_bytes",
                                 cg->t_i64, a, 3));
}

static LLVMValueRef keep_rt(Cg *cg, const Node *n) {
  rlx_attn_geom g = cg_attn_geometry(n);
  if (!needs_keep(n)) return cg_i64(cg, 0);
  return cg_align_rt(cg, LLVMBuildNSWMul(cg->b, cg_dim(cg, g.b),
                                         cg_dim(cg, g.lk), ""));
}

static LLVMValueRef geometry(Cg *cg, const Node *n);

LLVMValueRef cg_attention_scratch_rt(Cg *cg, Node *n) {
  LLVMValueRef b = cg_add_i64(cg, routine_rt(cg, n, geometry(cg, n)),
                              keep_rt(cg, n));
  for (int i = 0; half(n->type.dt) && i < n->nin; i++) /* as copy_bytes */
    if (i != mask_i(n) || cg_attn_mask_kind(n) == RLX_ATTN_BIAS) {
      LLVMValueRef c = cg_f32_copy_size(cg, &n->in[i]->type, true);
      b = cg_add_i64(cg, b, cg_add_i64(cg, c, c));
    }
  return b;
}

_Static_assert(sizeof(rlx_attn_geom) == 16 * 8 &&
                   offsetof(rlx_attn_geom, scale) == 8 * 8 &&
                   offsetof(rlx_attn_geom, ld) == 10 * 8,
               "rlx_attn_geom: 8 int64s, scale, softcap, 6 int64 pitches");

static LLVMValueRef geometry_init(Cg *cg, const rlx_attn_geom *g) {
  const int64_t f[8] = {g->b,      g->h,    g->lq,   g->lk,
                        g->d,      g->layout, g->mask, g->window};
  LLVMValueRef v[11], ld[6];
  for (int i = 0; i < 8; i++) v[i] = cg_i64(cg, f[i]);
  v[8] = LLVMConstReal(cg->t_f64, g->scale);
  v[9] = LLVMConstReal(cg->t_f64, g->softcap);
  for (int i = 0; i < 6; i++) ld[i] = cg_i64(cg, g->ld[i]);
  v[10] = LLVMConstArray(cg->t_i64, ld, 6);
  return LLVMConstStructInContext(cg->lc, v, 11, 0);
}

/* Row pitches of n's q, k, v and (a backward's group) dq, dk, dv that
 * are views of a wider tensor (plan/views.c): its last dim. */
static void pitches(Cg *cg, const Node *n, rlx_attn_geom *g) {
  Node *x[6] = {n->in[0], n->in[1], n->in[2], NULL, NULL, NULL};
  if (is_bwd(n)) {
    Node *res[4];
    cg_attn_members(cg->fn->plan, (Node *)n, res);
    for (int i = 0; i < 3; i++) x[3 + i] = res[i];
  }
  for (int i = 0; i < 6; i++) {
    const CgSlot *s = x[i] ? cg_slot(cg, x[i]) : NULL;
    if (s && s->kind == CG_SLOT_VIEW)
      g->ld[i] = s->alias->type.dims[s->alias->type.rank - 1];
  }
}

/* The geometry of n: a constant global, or with dynamic sizes a copy
 * of the bound's on the stack with b, lq and lk read at run time. */
static LLVMValueRef geometry(Cg *cg, const Node *n) {
  rlx_attn_geom g = cg_attn_geometry(n);
  pitches(cg, n, &g);
  if (!node_dynamic(n))
    return cg_ops_const_global(cg, geometry_init(cg, &g), "rlx.attn");
  rlx_attn_geom gb = cg_attn_geometry_bound(n);
  pitches(cg, n, &gb);
  LLVMValueRef init = geometry_init(cg, &gb);
  LLVMValueRef p = cg_alloca(cg, LLVMTypeOf(init), "attn.geom");
  LLVMBuildStore(cg->b, init, p);
  const int64_t dims[3] = {g.b, g.lq, g.lk};
  const size_t at[3] = {offsetof(rlx_attn_geom, b),
                        offsetof(rlx_attn_geom, lq),
                        offsetof(rlx_attn_geom, lk)};
  for (int i = 0; i < 3; i++) {
    LLVMValueRef f = cg_gep(cg, p, cg_i64(cg, (int64_t)at[i]));
    LLVMSetAlignment(LLVMBuildStore(cg->b, cg_dim(cg, dims[i]), f), 8);
  }
  return p;
}

/* Dynamic b, lq and lk (any mask; the shape rule keeps the head sizes
 * static), every dtype: f16/bf16 convert the run-time elements of
 * their operands and results. */
static const char *attention_dyn(const Node *n) {
  (void)n;
  return NULL;
}

/* keep[i] = !(mask[i] < 0.5) for a non-bool custom mask. */
static void keep_loop(Cg *cg, LLVMValueRef keep, Node *m) {
  int64_t cnt = type_bytes_bound(&m->type) / dt_size(m->type.dt);
  LLVMValueRef v[2] = {keep, cg_buf(cg, m)};
  CgPar p;
  LLVMValueRef i = cg_par_begin(cg, &p, cg_numel(cg, &m->type),
                                cg_grain(cnt, 1), v, 2, true);
  LLVMValueRef x = cg_convert(cg, cg_load(cg, m->type.dt, v[1], i),
                              m->type.dt, DT_F64);
  LLVMValueRef k = LLVMBuildFCmp(cg->b, LLVMRealUGE, x,
                                 LLVMConstReal(cg->t_f64, 0.5), "keep");
  cg_store(cg, DT_BOOL, v[0], i, k);
  cg_par_end(cg, &p);
}

static LLVMValueRef null_ptr(Cg *cg) { return LLVMConstPointerNull(cg->t_ptr); }

static bool cg_emit_attention(Cg *cg, Node *n) {
  CgPlan *p = cg->fn->plan;
  CgSlot *s = cg_slot(cg, n);
  DType dt = n->type.dt;
  if (dt != DT_F32 && dt != DT_F64 && !half(dt)) {
    char why[64];
    snprintf(why, sizeof why, "dtype %s", dt_name(dt));
    return cg_unsupported(cg, n, why);
  }
  if (s->attn_lead) return true; /* written by its leader */
  rlx_attn_geom g = cg_attn_geometry(n);
  LLVMValueRef sc = s->scratch_bytes ? cg_scratch(cg, n) : null_ptr(cg);
  LLVMValueRef geom = geometry(cg, n);
  bool rt = node_unbounded(n); /* the parts' offsets at run time */
  LLVMValueRef off = rt ? routine_rt(cg, n, geom)
                        : cg_i64(cg, routine_bytes(p, n));
  LLVMValueRef ws = rt || routine_bytes(p, n) ? sc : null_ptr(cg);
  /* operands: q k v (dy) and the mask operand */
  int nf = is_bwd(n) ? 4 : 3;
  LLVMValueRef in[5], mask = null_ptr(cg);
  for (int i = 0; i < nf; i++) in[i] = cg_buf(cg, n->in[i]);
  if (g.mask == RLX_ATTN_CUSTOM || g.mask == RLX_ATTN_BIAS)
    mask = cg_buf(cg, n->in[mask_i(n)]);
  if (needs_keep(n)) {
    LLVMValueRef keep = cg_gep(cg, sc, off);
    keep_loop(cg, keep, n->in[mask_i(n)]);
    mask = keep;
    off = cg_add_i64(cg, off,
                     rt ? keep_rt(cg, n) : cg_i64(cg, keep_bytes(n)));
  }
  /* results: o | dq dk dv dbias (NULL: not wanted) */
  Node *res[4] = {n, NULL, NULL, NULL};
  if (is_bwd(n)) cg_attn_members(p, n, res);
  int nres = is_bwd(n) ? 4 : 1;
  LLVMValueRef out[4];
  for (int i = 0; i < nres; i++)
    out[i] = res[i] ? cg_buf(cg, res[i]) : null_ptr(cg);
  LLVMValueRef f32_out[4];
  memcpy(f32_out, out, sizeof out);
  if (half(dt)) { /* f32 copies of the float operands and results */
    Node *srcs[5];
    int ns = 0;
    for (int i = 0; i < nf; i++) srcs[ns++] = n->in[i];
    if (g.mask == RLX_ATTN_BIAS) srcs[ns++] = n->in[mask_i(n)];
    for (int i = 0; i < ns; i++) {
      LLVMValueRef c = cg_gep(cg, sc, off);
      cg_convert_type(cg, c, DT_F32, cg_buf(cg, srcs[i]), dt,
                      &srcs[i]->type);
      off = cg_add_i64(cg, off,
                       cg_f32_copy_size(cg, &srcs[i]->type, rt));
      if (i < nf) in[i] = c;
      else mask = c;
    }
    for (int i = 0; i < nres; i++)
      if (res[i]) {
        f32_out[i] = cg_gep(cg, sc, off);
        off = cg_add_i64(cg, off,
                         cg_f32_copy_size(cg, &res[i]->type, rt));
      }
  }
  const char *sfx = dt == DT_F64 ? "f64" : "f32";
  char fn[64];
  if (!is_bwd(n)) {
    LLVMValueRef lse = s->saved_bytes ? cg_ws_at(cg, s->saved_off)
                                      : null_ptr(cg);
    LLVMValueRef a[8] = {geom, in[0], in[1], in[2], mask, f32_out[0], lse, ws};
    snprintf(fn, sizeof fn, "rlx_attention_%s", sfx);
    cg_call(cg, fn, cg->t_void, a, 8);
  } else {
    Node *f = s->fwd;
    LLVMValueRef o = f ? cg_buf(cg, f) : null_ptr(cg);
    LLVMValueRef lse =
        f ? cg_ws_at(cg, p->slot[f->id].saved_off) : null_ptr(cg);
    LLVMValueRef a[13] = {geom, in[0], in[1], in[2], mask, in[3], o, lse,
                          f32_out[0], f32_out[1], f32_out[2], f32_out[3], ws};
    snprintf(fn, sizeof fn, "rlx_attention_bwd_%s", sfx);
    cg_call(cg, fn, cg->t_void, a, 13);
  }
  if (half(dt))
    for (int i = 0; i < nres; i++)
      if (res[i])
        cg_convert_type(cg, out[i], dt, f32_out[i], DT_F32, &res[i]->type);
  return true;
}

const CgEmitter cg_emitter_attention = {cg_emit_attention,
                                        cg_scratch_attention,
                                        attention_dyn};
