/* seq.c: the GPU kernels of the sequence ops (cuda.h, docs/gpu.md):
 * selective_scan, gated_delta_net, log_mel and log_mel_backward, in f32
 * and f64 (OPF_F32_F64), with the formulas and summation orders of the
 * CPU path (runtime/ssm/ssm.c, runtime/fft/log_mel.c). Their gradients
 * need no kernel of their own: autodiff expands the SSM ops into a
 * `scan` of elementwise steps, log_mel's into log_mel_backward.
 *
 * - selective_scan: one thread per (batch row, channel); the time loop
 *   runs inside the thread with the channel's n states in the node's
 *   workspace scratch (state k of thread g at k * threads + g:
 *   coalesced), per step and state k: s = exp(delta a_k) s + delta x b_k,
 *   y += c_k s (k in order, as the CPU's lanes).
 * - gated_delta_net: one thread per (batch row, head, column j) of the
 *   n x n state S, column j in scratch. Per step every thread computes
 *   k.q (j' in order), S1 = exp(g) S, sk_j = sum_i S1_ij k_i and
 *   sq_j = sum_i S1_ij q_i (i in order), d_j = (v_j - sk_j) beta,
 *   o_j = (sq_j + d_j k.q) / sqrt(n), S_ij = S1_ij + k_i d_j: a column
 *   never reads another column, so there is no barrier.
 * - log_mel: one thread per output (row, m): z = sum_f spec filters
 *   (f in order), y = log(max(z, 1e-10)) (NaN stays NaN).
 *   log_mel_backward: a first kernel stores w = z >= 1e-10 ? dy / z : 0
 *   per (row, m) in scratch, a second one thread per (row, f):
 *   dspec = sum_m w filters[f, m] (m in order).
 * Every value is computed by one thread in a fixed order: the same bits
 * every run; no atomics.
 *
 * Dynamic sizes (docs/gpu.md, "Dynamic sizes"), bounded or not: the SSM
 * ops' batch, length and channels or heads (the state size is an
 * attribute), log_mel's leading (frame, batch) axes (the frequency and
 * mel axes are static: the shape rule). The thread counts (b h, b H n,
 * rows M, rows F) are sizes: the guards and grids take their run-time
 * values (no launch at 0), the time loop runs to the run-time length,
 * and selective_scan's state stride is the run-time thread count. The
 * scratch (b h n, b H n n or rows M elements) is laid out for the
 * bounds, or at each call where a symbol has no bound (a size
 * expression): either way it holds the run-time sizes' elements.
 */
#include "codegen/cuda/cuda.h"

#include <math.h>

#define FM(a, b2) LLVMBuildFMul(cg->b, (a), (b2), "")
#define FA(a, b2) LLVMBuildFAdd(cg->b, (a), (b2), "")
#define FS(a, b2) LLVMBuildFSub(cg->b, (a), (b2), "")

/* a b, both sizes, as a size; -1 when either is -1 or the product is
 * no size expression (too complex, or over RLX_MAX_ELEMS) */
static int64_t dmul(Ctx *c, int64_t a, int64_t b) {
  if (a == -1 || b == -1) return -1;
  if (a == 0 || b == 0 || (dim_is_static(a) && dim_is_static(b)))
    return a * b;
  return dim_mul(c, a, b, &a) == DIM_OK ? a : -1;
}

/* b, s, h (or heads), n of a shape-checked SSM node (as emit/ssm.c):
 * sizes, n static (the state_size attribute) */
static void ssm_geometry(const Node *n, int64_t g[4]) {
  const Type *x = &n->in[0]->type;
  g[0] = x->dims[0], g[1] = x->dims[1], g[2] = x->dims[2];
  g[3] = n->op == OP_SELECTIVE_SCAN ? n->in[2]->type.dims[1] : x->dims[3];
}

/* sum_i a[ai + i] b[bi + i bs], i < cnt in order, from 0 */
static LLVMValueRef dot(Cu *cu, DType dt, LLVMValueRef a, LLVMValueRef ai,
                        LLVMValueRef b, LLVMValueRef bi, int64_t bs,
                        int64_t cnt) {
  Cg *cg = cu->dev;
  LLVMValueRef acc = cg_const(cg, dt, 0);
  CgLoop l;
  LLVMValueRef i = cg_loop_begin(cg, &l, i64(cu, 0), i64(cu, cnt), &acc, 1);
  acc = FA(acc, FM(cg_load(cg, dt, a, add(cu, ai, i)),
                   cg_load(cg, dt, b, add(cu, bi, mul(cu, i, bs)))));
  cg_loop_end(cg, &l, &acc);
  return acc;
}

/* The threads of SSM node n as a size (-1: none): b h for
 * selective_scan, b H n for gated_delta_net. */
static int64_t ssm_threads(Ctx *c, const Node *n) {
  int64_t g[4];
  ssm_geometry(n, g);
  int64_t T = dmul(c, g[0], g[2]);
  return n->op == OP_SELECTIVE_SCAN ? T : dmul(c, T, g[3]);
}

/* ---- selective_scan ---- */

static bool scan_kernel(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  DType dt = n->type.dt;
  int64_t g[4];
  ssm_geometry(n, g);
  int64_t S = g[1], h = g[2], ns = g[3], T = ssm_threads(cg->ctx, n);
  cu_kernel_begin(cu, p, "selective_scan");
  LLVMValueRef th = cu_gid(cu);
  cu_guard(cu, ult(cu, th, T));
  LLVMValueRef bi = udiv(cu, th, h), c = urem(cu, th, h);
  LLVMValueRef x = cg_buf(cg, n->in[0]), de = cg_buf(cg, n->in[1]);
  LLVMValueRef a = cg_buf(cg, n->in[2]), bm = cg_buf(cg, n->in[3]);
  LLVMValueRef cm = cg_buf(cg, n->in[4]), st = cg_scratch(cg, n);
  CgLoop l0, lt, lk;
  LLVMValueRef k = cg_loop_begin(cg, &l0, i64(cu, 0), i64(cu, ns), NULL, 0);
  cg_store(cg, dt, st, add(cu, mul(cu, k, T), th), cg_const(cg, dt, 0));
  cg_loop_end(cg, &l0, NULL);
  LLVMValueRef t = cg_loop_begin(cg, &lt, i64(cu, 0), cu_size(cu, S), NULL,
                                 0);
  LLVMValueRef r = add(cu, mul(cu, bi, S), t), xi = add(cu, mul(cu, r, h), c);
  LLVMValueRef dv = cg_load(cg, dt, de, xi);
  LLVMValueRef du = FM(dv, cg_load(cg, dt, x, xi));
  LLVMValueRef y = cg_const(cg, dt, 0);
  k = cg_loop_begin(cg, &lk, i64(cu, 0), i64(cu, ns), &y, 1);
  LLVMValueRef si = add(cu, mul(cu, k, T), th), ri = add(cu, mul(cu, r, ns), k);
  LLVMValueRef ak = cg_load(cg, dt, a, add(cu, mul(cu, c, ns), k));
  LLVMValueRef s = FA(FM(cg_ops_exp(cg, FM(dv, ak)), cg_load(cg, dt, st, si)),
                      FM(du, cg_load(cg, dt, bm, ri)));
  cg_store(cg, dt, st, si, s);
  y = FA(y, FM(cg_load(cg, dt, cm, ri), s));
  cg_loop_end(cg, &lk, &y);
  cg_store(cg, dt, cg_buf(cg, n), xi, y);
  cg_loop_end(cg, &lt, NULL);
  cu_kernel_end_n(cu, T, EW_BLOCK, 1, EW_BLOCK);
  return true;
}

/* ---- gated_delta_net ---- */

static bool gdn_kernel(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  DType dt = n->type.dt;
  int64_t g[4];
  ssm_geometry(n, g);
  int64_t S = g[1], H = g[2], ns = g[3], T = ssm_threads(cg->ctx, n);
  cu_kernel_begin(cu, p, "gated_delta_net");
  LLVMValueRef th = cu_gid(cu);
  cu_guard(cu, ult(cu, th, T));
  LLVMValueRef j = urem(cu, th, ns), task = udiv(cu, th, ns);
  LLVMValueRef bi = udiv(cu, task, H), hh = urem(cu, task, H);
  LLVMValueRef q = cg_buf(cg, n->in[0]), kb = cg_buf(cg, n->in[1]);
  LLVMValueRef v = cg_buf(cg, n->in[2]), gb = cg_buf(cg, n->in[3]);
  LLVMValueRef be = cg_buf(cg, n->in[4]), o = cg_buf(cg, n);
  /* S_ij of this column at col + i n */
  LLVMValueRef col = add(cu, mul(cu, task, ns * ns), j);
  LLVMValueRef sb = cg_scratch(cg, n);
  LLVMValueRef rs = cg_const(cg, dt, 1 / sqrt((double)ns));
  CgLoop l0, lt, li, lu;
  LLVMValueRef i = cg_loop_begin(cg, &l0, i64(cu, 0), i64(cu, ns), NULL, 0);
  cg_store(cg, dt, sb, add(cu, col, mul(cu, i, ns)), cg_const(cg, dt, 0));
  cg_loop_end(cg, &l0, NULL);
  LLVMValueRef t = cg_loop_begin(cg, &lt, i64(cu, 0), cu_size(cu, S), NULL,
                                 0);
  LLVMValueRef r = add(cu, mul(cu, add(cu, mul(cu, bi, S), t), H), hh);
  LLVMValueRef rn = mul(cu, r, ns);
  LLVMValueRef eg = cg_ops_exp(cg, cg_load(cg, dt, gb, r));
  LLVMValueRef bet = cg_load(cg, dt, be, r);
  LLVMValueRef kq = dot(cu, dt, kb, rn, q, rn, 1, ns);
  LLVMValueRef acc[2] = {cg_const(cg, dt, 0), cg_const(cg, dt, 0)};
  i = cg_loop_begin(cg, &li, i64(cu, 0), i64(cu, ns), acc, 2);
  LLVMValueRef si = add(cu, col, mul(cu, i, ns)), e2 = add(cu, rn, i);
  LLVMValueRef w = FM(cg_load(cg, dt, sb, si), eg);
  cg_store(cg, dt, sb, si, w);
  acc[0] = FA(acc[0], FM(w, cg_load(cg, dt, kb, e2)));
  acc[1] = FA(acc[1], FM(w, cg_load(cg, dt, q, e2)));
  cg_loop_end(cg, &li, acc);
  LLVMValueRef oj = add(cu, rn, j);
  LLVMValueRef d = FM(FS(cg_load(cg, dt, v, oj), acc[0]), bet);
  cg_store(cg, dt, o, oj, FM(FA(acc[1], FM(d, kq)), rs));
  i = cg_loop_begin(cg, &lu, i64(cu, 0), i64(cu, ns), NULL, 0);
  si = add(cu, col, mul(cu, i, ns));
  cg_store(cg, dt, sb, si,
           FA(cg_load(cg, dt, sb, si),
              FM(cg_load(cg, dt, kb, add(cu, rn, i)), d)));
  cg_loop_end(cg, &lu, NULL);
  cg_loop_end(cg, &lt, NULL);
  cu_kernel_end_n(cu, T, EW_BLOCK, 1, EW_BLOCK);
  return true;
}

bool cu_ssm(Cu *cu, CgPlan *p, Node *n) {
  DType dt = n->type.dt;
  if (dt != DT_F32 && dt != DT_F64) return cu_bad_dtype(cu, n, dt);
  if (type_bytes_bound(&n->type) == 0) return true; /* a static 0 */
  return n->op == OP_SELECTIVE_SCAN ? scan_kernel(cu, p, n)
                                    : gdn_kernel(cu, p, n);
}

/* ---- log_mel, log_mel_backward ---- */

/* spec [..., F] as rows x F, rows a size (-1: none); M mel bins */
static void mel_dims(Ctx *c, const Node *n, int64_t *rows, int64_t *F,
                     int64_t *M) {
  const Type *s = &n->in[0]->type;
  *F = s->dims[s->rank - 1], *M = n->in[1]->type.dims[1];
  int64_t r = 1;
  for (int i = 0; i + 1 < s->rank; i++) r = dmul(c, r, s->dims[i]);
  *rows = r;
}

/* One thread per (row, bin): z = sum_f spec[row, f] filters[f, m], then
 * log_mel's y = log(max(z, 1e-10)) or log_mel_backward's scratch
 * w = z >= 1e-10 ? dy / z : 0. */
static void mel_kernel(Cu *cu, CgPlan *p, Node *n, DType dt, int64_t rows,
                       int64_t F, int64_t M) {
  Cg *cg = cu->dev;
  int64_t N = dmul(cg->ctx, rows, M);
  LLVMValueRef floor_ = cg_const(cg, dt, 1e-10);
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef i = cu_gid(cu);
  cu_guard(cu, ult(cu, i, N));
  LLVMValueRef z = dot(cu, dt, cg_buf(cg, n->in[0]), mul(cu, udiv(cu, i, M), F),
                       cg_buf(cg, n->in[1]), urem(cu, i, M), M, F);
  if (n->op == OP_LOG_MEL) {
    LLVMValueRef lo = LLVMBuildFCmp(cg->b, LLVMRealOLT, z, floor_, "");
    cg_store(cg, dt, cg_buf(cg, n), i,
             cg_ops_log(cg, LLVMBuildSelect(cg->b, lo, floor_, z, "")));
  } else {
    LLVMValueRef ge = LLVMBuildFCmp(cg->b, LLVMRealOGE, z, floor_, "");
    LLVMValueRef w = LLVMBuildFDiv(
        cg->b, cg_load(cg, dt, cg_buf(cg, n->in[2]), i), z, "");
    cg_store(cg, dt, cg_scratch(cg, n), i,
             LLVMBuildSelect(cg->b, ge, w, cg_const(cg, dt, 0), ""));
  }
  cu_kernel_end_n(cu, N, EW_BLOCK, 1, EW_BLOCK);
}

bool cu_log_mel(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  DType dt = n->in[0]->type.dt;
  if (dt != DT_F32 && dt != DT_F64) return cu_bad_dtype(cu, n, dt);
  int64_t rows, F, M;
  mel_dims(cg->ctx, n, &rows, &F, &M);
  if (type_bytes_bound(&n->type) == 0) return true; /* a static 0 */
  if (M) mel_kernel(cu, p, n, dt, rows, F, M);
  if (n->op == OP_LOG_MEL) return true;
  /* dspec[row, f] = sum_m w[row, m] filters[f, m] (0 without bins) */
  int64_t N = dmul(cg->ctx, rows, F);
  cu_kernel_begin(cu, p, "log_mel_backward_spec");
  LLVMValueRef i = cu_gid(cu);
  cu_guard(cu, ult(cu, i, N));
  LLVMValueRef acc = M ? dot(cu, dt, cg_scratch(cg, n),
                             mul(cu, udiv(cu, i, F), M), cg_buf(cg, n->in[1]),
                             mul(cu, urem(cu, i, F), M), 1, M)
                       : cg_const(cg, dt, 0);
  cg_store(cg, dt, cg_buf(cg, n), i, acc);
  cu_kernel_end_n(cu, N, EW_BLOCK, 1, EW_BLOCK);
  return true;
}

/* e elements (a size) of es bytes: at the bounds, or a size expression
 * (laid out at each call) where a symbol of e has no bound; -1: none. */
static int64_t scratch_bytes(Ctx *c, int64_t e, int64_t es) {
  if (e == -1 || !dim_is_bounded(e)) return dmul(c, e, es);
  int64_t b = dim_bound(e);
  return b < 0 || b > INT64_MAX / es ? -1 : b * es;
}

int64_t cu_seq_scratch(Cu *cu, const Node *n) {
  Ctx *c = cu->dev->ctx;
  int64_t g[4], rows, F, M;
  switch (n->op) {
  case OP_SELECTIVE_SCAN: case OP_GATED_DELTA_NET: /* T n states */
    ssm_geometry(n, g);
    return scratch_bytes(c, dmul(c, ssm_threads(c, n), g[3]),
                         dt_size(n->type.dt));
  case OP_LOG_MEL_BACKWARD:
    mel_dims(c, n, &rows, &F, &M);
    return scratch_bytes(c, dmul(c, rows, M), dt_size(n->in[0]->type.dt));
  default: return 0;
  }
}

/* Any sizes but a dynamic state, frequency or mel axis, which the shape
 * rules exclude; the products the kernels take must be sizes. */
const char *cu_seq_dyn(Cu *cu, const CgPlan *p, const Node *n) {
  (void)p;
  Ctx *c = cu->dev->ctx;
  int64_t g[4], rows, F, M;
  if (n->op == OP_SELECTIVE_SCAN || n->op == OP_GATED_DELTA_NET) {
    ssm_geometry(n, g);
    if (!dim_is_static(g[3])) return "a dynamic state size";
  } else {
    mel_dims(c, n, &rows, &F, &M);
    if (!dim_is_static(F) || !dim_is_static(M))
      return "a dynamic frequency or mel axis";
    if (dmul(c, rows, F) == -1 || dmul(c, rows, M) == -1)
      return "too complex a size expression";
  }
  return cu_seq_scratch(cu, n) == -1 ? "too complex a size expression"
                                     : NULL;
}
