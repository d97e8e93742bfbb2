/* attention.c -- scaled dot-product attention, forward and backward, f32
 * and f64 (rlxrt.h, rlx_attention_*), in the FlashAttention-2 form (Dao
 * 2023, Algorithms 1 and 2): tiles of ATTN_BQ = 64 queries against tiles
 * of ATTN_BK = 64 keys, never an lq x lk matrix.
 *
 * Transposed tiles.  A score tile is kept as S^T: s[key][query], 64
 * queries wide, computed as S^T = K_tile (Q^T * scale) from a d x 64
 * transposed copy of the (pre-scaled) query tile.  Every per-query
 * reduction of the softmax (running max m, running sum l, rescale
 * alpha, the backward D and lse) then runs down the columns: vertical
 * vector operations, no horizontal sums.  The forward accumulates O^T
 * (d x 64) += V_tile^T P^T and transposes it once at the end of the
 * query tile.  All products are one kernel, mm (attention_internal.h):
 * C = [C +] A B with A read through any strides (so K, V, P and dS are
 * used in place, transposed or not) and B row-major, register-tiled
 * 6 rows x 4 vectors on AVX-512 (attention_kern.h).
 *
 * Forward, one item per (b, h, query tile): for each key tile that the
 * causal / sliding window lets the tile see (others are skipped: the
 * causal speedup), S^T, softcap, mask, the online softmax step (online:
 * m, l, P = exp(S - m); a column with no allowed key so far uses 0 for
 * m, so -inf - -inf never happens and its l stays 0), O^T = alpha O^T +
 * V^T P^T.  Then o = O / l and lse = m + log l, or o = 0, lse = -inf if
 * l = 0.
 *
 * Backward.  A pre-pass per (b, h, query tile) runs the forward if o and
 * lse were not given (into scratch), and stores Q^T * scale and dO^T
 * tiles and D = rowsum(dO o) for the whole call (scratch linear in lq).
 * The main pass has one item per (b, h, chunk of key tiles): for each of
 * its key tiles and each query tile that can see it, P = exp(S - lse),
 * dV += P^T dO, dP = dO V^T, dS = P (dP - D) (= dbias), times scale (and
 * the softcap factor 1 - tanh^2), dK += dS^T Q, and the chunk's own dQ
 * buffer += dS K.  The number of chunks per head, nch, depends only on
 * the geometry (enough items for 16 slots: ceil(16 / (b h)), at most
 * the key tiles); chunk 0 accumulates its dQ in dq itself, chunks 1 ..
 * nch-1 in nch - 1 partial buffers that a last pass adds to dq in chunk
 * order.
 *
 * Determinism: every output element is computed by one item in an order
 * fixed by the geometry; items go to a fixed number of scratch slots
 * (min(16, items)) as in conv (slot s runs items [s n/S, (s+1) n/S) in
 * order), and rlx_parallel_for only decides which thread runs a slot.
 * So results are bit-identical for any thread count; the AVX-512 and
 * AVX2 kernels give the same bits (the same FMA chains and exp), the
 * portable ones differ from them in rounding (FMA, libm's exp), not in
 * accuracy.
 *
 * Scratch: the slots (score, dP and softcap tiles, Q^T / O^T tiles: a
 * few tens of KiB each) plus, for the backward, the Q^T, dO^T tiles, D,
 * the dQ partials and the recomputed o and lse, all linear in lq; the
 * layout is attention_plan.c's (shared with the compiler).
 */
#include <math.h>
#include <string.h>

#include "runtime/attention/attention_internal.h"
#include "runtime/rlxrt.h"
#include "runtime/simd/isa.h"

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

/* The kernel tables per ISA level (simd/isa.h); NULL: portable. */
static const AttnIsaF32 *const attn_tables_f32[RLX_ISA_COUNT] = {
    [RLX_ISA_AVX2] = &rlx_attn_avx2_f32,
    [RLX_ISA_AVX512] = &rlx_attn_avx512_f32,
    [RLX_ISA_NEON] = &rlx_attn_neon_f32};
static const AttnIsaF64 *const attn_tables_f64[RLX_ISA_COUNT] = {
    [RLX_ISA_AVX2] = &rlx_attn_avx2_f64,
    [RLX_ISA_AVX512] = &rlx_attn_avx512_f64,
    [RLX_ISA_NEON] = &rlx_attn_neon_f64};

#define T float
#define SFX F32
#define FN(name) name##f32
#define EXP expf
#define LOG logf
#define TANH tanhf
#include "runtime/attention/attention_tmpl.h"
#undef T
#undef SFX
#undef FN
#undef EXP
#undef LOG
#undef TANH

#define T double
#define SFX F64
#define FN(name) name##f64
#define EXP exp
#define LOG log
#define TANH tanh
#include "runtime/attention/attention_tmpl.h"
#undef T
#undef SFX
#undef FN
#undef EXP
#undef LOG
#undef TANH
