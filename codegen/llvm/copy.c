/* copy.c: strided copies and dtype-converting copies (cg.h).
 *
 * cg_ops_copy canonicalizes its dims (size-1 dims dropped, contiguous
 * neighbours merged), tiles transposing copies and runs the outer loop
 * in parallel over independent rows. cg_convert_loop converts a
 * contiguous buffer between dtypes in an outlined parallel loop (the
 * f32 copies of f16/bf16 operands and results around runtime calls),
 * cg_convert_type the run-time elements of a value.
 */
#include "codegen/llvm/cg.h"

/* Drop size-1 dims and merge neighbours contiguous in both arrays. */
static void copy_canon(const CgCopy *in, CgCopy *c) {
  *c = *in;
  c->rank = 0;
  for (int d = 0; d < in->rank; d++) {
    if (in->dims[d] == 1) continue;
    int k = c->rank;
    if (k > 0 && c->dst_str[k - 1] == in->dst_str[d] * in->dims[d] &&
        c->src_str[k - 1] == in->src_str[d] * in->dims[d]) {
      c->dims[k - 1] *= in->dims[d];
      c->dst_str[k - 1] = in->dst_str[d];
      c->src_str[k - 1] = in->src_str[d];
      continue;
    }
    c->dims[k] = in->dims[d];
    c->dst_str[k] = in->dst_str[d];
    c->src_str[k] = in->src_str[d];
    c->rank++;
  }
}

static void copy_nest(Cg *cg, const CgCopy *c, int d, LLVMValueRef doff,
                      LLVMValueRef soff, LLVMValueRef *p, LLVMTypeRef et) {
  if (d == c->rank) {
    LLVMValueRef sp = LLVMBuildInBoundsGEP2(cg->b, et, p[1], &soff, 1, "");
    LLVMValueRef dp = LLVMBuildInBoundsGEP2(cg->b, et, p[0], &doff, 1, "");
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, et, sp, ""), dp);
    return;
  }
  CgLoop l;
  LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, 0),
                                 cg_dim(cg, c->dims[d]), NULL, 0);
  copy_nest(cg, c, d + 1,
            cg_add_i64(cg, doff, cg_mul_dim(cg, i, c->dst_str[d])),
            cg_add_i64(cg, soff, cg_mul_dim(cg, i, c->src_str[d])), p, et);
  cg_loop_end(cg, &l, NULL);
}

/* Tiled transpose-like copy: the last dim is written contiguously but
 * read with a stride, and dim k is read contiguously. Tiles of
 * COPY_TILE x COPY_TILE_L (k, last) keep the source lines in cache. */
/* Tile sizes (measured on the AVX-512 host: 16 x 16 beats 32 x 32 by
 * 3x, whose 4 KB-strided source rows thrash L1 sets). */
#define COPY_TILE 16   /* along k (read contiguously) */
#define COPY_TILE_L 16 /* along the last dim (written contiguously) */

typedef struct {
  const CgCopy *c;
  int k;
  LLVMValueRef kt, *p;
  LLVMTypeRef et;
} Tiled;

static LLVMValueRef min_c(Cg *cg, LLVMValueRef a, int64_t c) {
  LLVMValueRef b = cg_i64(cg, c);
  return LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, a, b, ""),
                         a, b, "");
}

static void tile_body(Cg *cg, Tiled *T, LLVMValueRef doff,
                      LLVMValueRef soff) {
  const CgCopy *c = T->c;
  int L = c->rank - 1, k = T->k;
  CgLoop lt, lk, ll;
  int64_t nl = (c->dims[L] + COPY_TILE_L - 1) / COPY_TILE_L;
  LLVMValueRef t = cg_loop_begin(cg, &lt, cg_i64(cg, 0), cg_i64(cg, nl),
                                 NULL, 0);
  LLVMValueRef k0 = cg_mul_c(cg, T->kt, COPY_TILE);
  LLVMValueRef l0 = cg_mul_c(cg, t, COPY_TILE_L);
  LLVMValueRef k1 = min_c(cg, cg_add_i64(cg, k0, cg_i64(cg, COPY_TILE)),
                          c->dims[k]);
  LLVMValueRef l1 = min_c(cg, cg_add_i64(cg, l0, cg_i64(cg, COPY_TILE_L)),
                          c->dims[L]);
  LLVMValueRef i = cg_loop_begin(cg, &lk, k0, k1, NULL, 0);
  LLVMValueRef dk = cg_add_i64(cg, doff, cg_mul_c(cg, i, c->dst_str[k]));
  LLVMValueRef sk = cg_add_i64(cg, soff, cg_mul_c(cg, i, c->src_str[k]));
  LLVMValueRef j = cg_loop_begin(cg, &ll, l0, l1, NULL, 0);
  LLVMValueRef di = cg_add_i64(cg, dk, cg_mul_c(cg, j, c->dst_str[L]));
  LLVMValueRef si = cg_add_i64(cg, sk, cg_mul_c(cg, j, c->src_str[L]));
  LLVMValueRef sp = LLVMBuildInBoundsGEP2(cg->b, T->et, T->p[1], &si, 1, "");
  LLVMValueRef dp = LLVMBuildInBoundsGEP2(cg->b, T->et, T->p[0], &di, 1, "");
  LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, T->et, sp, ""), dp);
  cg_loop_end(cg, &ll, NULL);
  cg_loop_end(cg, &lk, NULL);
  cg_loop_end(cg, &lt, NULL);
}

/* Loops over the dims other than k and the last, then one tile row. */
static void tile_nest(Cg *cg, Tiled *T, int d, LLVMValueRef doff,
                      LLVMValueRef soff) {
  const CgCopy *c = T->c;
  while (d == T->k) d++;
  if (d >= c->rank - 1) {
    tile_body(cg, T, doff, soff);
    return;
  }
  CgLoop l;
  LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, 0),
                                 cg_i64(cg, c->dims[d]), NULL, 0);
  tile_nest(cg, T, d + 1, cg_add_i64(cg, doff, cg_mul_c(cg, i, c->dst_str[d])),
            cg_add_i64(cg, soff, cg_mul_c(cg, i, c->src_str[d])));
  cg_loop_end(cg, &l, NULL);
}

static int tiled_dim(const CgCopy *c) {
  int L = c->rank - 1;
  if (c->rank < 2 || c->dst_str[L] != 1 || c->src_str[L] == 1 ||
      c->dims[L] < 8)
    return -1;
  for (int k = 0; k < L; k++)
    if (c->src_str[k] == 1 && c->dims[k] >= 8) return k;
  return -1;
}

static void copy_tiled(Cg *cg, const CgCopy *c, int k, LLVMValueRef *p,
                       LLVMTypeRef et) {
  int64_t nk = (c->dims[k] + COPY_TILE - 1) / COPY_TILE, numel = 1;
  for (int d = 0; d < c->rank; d++) numel *= c->dims[d];
  CgPar par;
  Tiled T = {c, k, NULL, p, et};
  T.kt = cg_par_begin(cg, &par, cg_i64(cg, nk), cg_grain(nk, numel / nk),
                      p, 2, true);
  tile_nest(cg, &T, 0, cg_i64(cg, c->dst_off), cg_i64(cg, c->src_off));
  cg_par_end(cg, &par);
}

void cg_ops_copy(Cg *cg, const CgCopy *in, LLVMValueRef dst,
                 LLVMValueRef src, int esize) {
  bool dyn = false;
  for (int d = 0; d < in->rank; d++) {
    if (in->dims[d] == 0) return;
    dyn |= !dim_is_static(in->dims[d]) || !dim_is_static(in->dst_str[d]) ||
           !dim_is_static(in->src_str[d]);
  }
  CgCopy c = *in;
  if (!dyn) copy_canon(in, &c);
  LLVMTypeRef et = cg_ops_bits_type(cg, esize);
  LLVMValueRef p[2] = {dst, src};
  if (c.rank == 0) {
    copy_nest(cg, &c, 0, cg_i64(cg, c.dst_off), cg_i64(cg, c.src_off), p,
              et);
    return;
  }
  int k = dyn ? -1 : tiled_dim(&c);
  if (k >= 0) {
    copy_tiled(cg, &c, k, p, et);
    return;
  }
  int64_t per = 1;
  for (int d = 1; d < c.rank; d++) per *= dim_bound(c.dims[d]);
  CgPar par;
  LLVMValueRef i = cg_par_begin(cg, &par, cg_dim(cg, c.dims[0]),
                                cg_grain(dim_bound(c.dims[0]), per), p, 2,
                                true);
  LLVMValueRef doff = cg_add_i64(cg, cg_i64(cg, c.dst_off),
                              cg_mul_dim(cg, i, c.dst_str[0]));
  LLVMValueRef soff = cg_add_i64(cg, cg_i64(cg, c.src_off),
                              cg_mul_dim(cg, i, c.src_str[0]));
  copy_nest(cg, &c, 1, doff, soff, p, et);
  cg_par_end(cg, &par);
}

/* The loop of cg_convert_loop over count elements (bound: the most,
 * for the grain). */
static void convert_n(Cg *cg, LLVMValueRef dst, DType ddt, LLVMValueRef src,
                      DType sdt, LLVMValueRef count, int64_t bound) {
  LLVMValueRef v[2] = {dst, src};
  CgPar p;
  LLVMValueRef i = cg_par_begin(cg, &p, count, cg_grain(bound, 1), v, 2,
                                true);
  LLVMValueRef x = cg_load(cg, sdt, v[1], i);
  cg_store(cg, ddt, v[0], i, cg_convert(cg, x, sdt, ddt));
  cg_par_end(cg, &p);
}

void cg_convert_loop(Cg *cg, LLVMValueRef dst, DType ddt, LLVMValueRef src,
                     DType sdt, int64_t count) {
  convert_n(cg, dst, ddt, src, sdt, cg_dim(cg, count), dim_bound(count));
}

void cg_convert_type(Cg *cg, LLVMValueRef dst, DType ddt, LLVMValueRef src,
                     DType sdt, const Type *t) {
  convert_n(cg, dst, ddt, src, sdt, cg_numel(cg, t),
            type_bytes_bound(t) / dt_size(t->dt));
}

int64_t cg_f32_copy_bytes(const Type *t) {
  return cg_align(type_bytes_bound(t) / dt_size(t->dt) * 4);
}

LLVMValueRef cg_f32_copy_size(Cg *cg, const Type *t, bool rt) {
  if (!rt) return cg_i64(cg, cg_f32_copy_bytes(t));
  return cg_align_rt(cg, LLVMBuildNSWMul(cg->b, cg_numel(cg, t),
                                         cg_i64(cg, 4), ""));
}
