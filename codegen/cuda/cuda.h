/* cuda.h: the NVIDIA target (--target=cuda), a second set of emitters
 * and a second entry builder over the same plan (docs/gpu.md).
 *
 * Two LLVM modules, one per Cg: the device module (nvptx64-nvidia-cuda,
 * CPU sm_XX) holds one kernel per planned node that emits code, and the
 * host module (host triple) holds the entry points, which enqueue those
 * kernels on the caller's stream through librlxrt (rlx_gpu_module_load,
 * rlx_gpu_launch), the PTX text and the rlx_gpu_module. A kernel's body
 * is built as a function of the graph's pointer arrays (ptr in, ptr out,
 * ptr ws), so the CPU layers' addressing (cg_buf, cg_load, fused trees)
 * works inside it unchanged; the kernel itself takes only the pointers
 * the body loads (its CuParam list: those elements of in, then of out,
 * then ws; an array the body uses otherwise, byval on whole), rebuilds
 * the arrays and calls the body, which is inlined. A launch passes the
 * addresses of those elements of the caller's arrays as cuLaunchKernel's
 * kernelParams: nothing is copied.
 *
 * Files: entry.c (the unit, host entries, header), host.c (host
 * functions: frame, kernel launches), kernels.c (one kernel
 * per op family), matmul.c (matmul and batched matmul), mma.c (the
 * tensor-core building blocks: mma.h), index.c (cumsum,
 * scatter, topk), random.c (Philox draws, sample), norm.c (layer, rms,
 * group and batch norms and their backward ops), attention.c
 * (attention and its backward, FlashAttention-2 tiles), nn.c (rope,
 * pools), conv.c (conv2d and its backward ops), quant.c (q_conv2d,
 * grouped matmuls, dense solves, requantization), control.c (scan, if,
 * while, custom_fn: subgraphs and host loops), seq.c (the SSM ops,
 * log_mel), fft.c, device.c (thread ids, warp/block reductions, libclc
 * math, PTX emission and checks).
 */
#ifndef RLX_CG_CUDA_H
#define RLX_CG_CUDA_H

#include "codegen/cg_unit.h"

/* Is opt asking for --target=cuda? */
bool cu_target(const Options *opt);
/* The host Cg (host triple and CPU) of a --target=cuda unit. */
Cg *cu_host_new(Unit *u);
/* cg_build_unit for --target=cuda: kernels into a device module, entries,
 * signatures, PTX and module into host. False after a diagnostic. */
bool cu_build_unit(Cg *host, Unit *u, CgEntry *e, int *ne);

/* One step of a graph, in stream order: a kernel launch, or a call of
 * a host function (in, out, ws, stream) -> i32 (control.c). */
typedef struct {
  int kernel;               /* index into the module's kernels */
  unsigned grid, block;     /* 1-D */
  LLVMValueRef call;        /* or the host function to call */
  int64_t gdim;             /* a dynamic size (0: none): the grid is then
                               ceil(gdim / gper) * grid blocks, computed
                               at launch; none launches nothing */
  unsigned gper;
  int64_t gdim2;            /* and a second factor ceil(gdim2 / gper2)
                               (0: none; a size without a bound) */
  unsigned gper2;
} CuLaunch;

/* The error word of a graph run as an if branch (control.c). */
typedef struct CuIfErr {
  const Graph *g;
  LLVMValueRef w;           /* an i32 global of the device module */
  struct CuIfErr *next;
} CuIfErr;

/* A subgraph compiled for the GPU: its enqueue function and workspace;
 * err: the error word its kernels record in (cu->err when compiled: a
 * graph run both as an if branch and otherwise is compiled twice). */
typedef struct CuSub {
  Graph *g;
  LLVMValueRef err;
  LLVMValueRef enq;
  int64_t ws_bytes;
  struct CuSub *next;
} CuSub;

/* A kernel parameter: element idx of the launch's input (CU_IN) or
 * output (CU_OUT) pointer array, that whole array byval (idx -1), the
 * workspace pointer (CU_WS), or the sizes byval (CU_SIZES: Cu.nsizes
 * i64, the host function's `sizes` array). */
enum { CU_IN, CU_OUT, CU_WS, CU_SIZES };
typedef struct {
  int arr, idx;
} CuParam;

/* A kernel of the module: its name, parameters and their bytes. */
typedef struct {
  const char *name;
  const CuParam *par;
  int npar;
  int64_t bytes;
  unsigned shmem;           /* dynamic shared memory bytes per block */
} CuKernel;

#define CU_MAX_KERNELS 4096
typedef struct Cu {
  Cg *dev;                  /* device module */
  Graph *g;                 /* graph being emitted */
  int nin, nout;            /* its argument / return counts (>= 1) */
  int nsizes;               /* i64 of its sizes array: the dim_nsyms()
                               symbols' values, then (an entry graph
                               with sizes without a bound) its run-time
                               layout's ndyn offsets (entry.c) */
  LLVMTypeRef t_kernel;     /* a kernel body: void (in, out, ws, sizes) */
  CuKernel kernels[CU_MAX_KERNELS];
  int nkernels;
  CuLaunch *launch;         /* this graph's launches */
  int nlaunch, cap;
  CgFn fn;                  /* the kernel being built */
  LLVMBasicBlockRef exit_bb;
  Cg *host;                 /* host module: enqueue and control functions */
  LLVMTypeRef t_enq;        /* i32 (in, out, ws, stream, sizes): sizes
                               the symbols' values (dims.c), or NULL */
  LLVMValueRef ktab;        /* host: the kernel table */
  CuSub *subs;              /* compiled subgraphs */
  int nsubs;
  int in_branch;            /* > 0 while compiling an if's branches */
  LLVMValueRef err;         /* the error word kernels record in: NULL
                               the module's (device.c), or an if
                               branch's (control.c) */
  struct CuIfErr *iferr;    /* the if branches' error words */
  /* The enqueue function of subgraph g (compiled once: its kernels and
   * host code) and its workspace bytes; NULL after a diagnostic. A hook
   * (entry.c installs it), so control.c calls downward only. */
  LLVMValueRef (*subgraph)(struct Cu *cu, Graph *g, int64_t *ws_bytes);
} Cu;

/* A host function being built (entry.c): cg_fn_begin's (f.sizes: the
 * sizes parameter), the stream parameter, the launch's grid/block
 * arrays, its kernelParams array (nargs long) and the slot holding ws. */
typedef struct {
  CgFn f, *saved;
  LLVMValueRef stream, grid, block, args, wsp;
  int nargs;
} CuHostFn;

#define EW_BLOCK 256 /* threads per block of one-thread-per-element kernels */

/* Small i64 builders of the kernel files: constant, a + b, a * c,
 * a / c, a % c (unsigned), a < c (i1). */
static inline LLVMValueRef i64(Cu *cu, int64_t v) {
  return cg_i64(cu->dev, v);
}
/* A size: a constant, or a dynamic one's value (read from the kernel's
 * sizes parameter; dynamic sizes are the numbers <= DIM_DYN_BASE). */
static inline LLVMValueRef cu_size(Cu *cu, int64_t c) {
  return c <= DIM_DYN_BASE ? cg_dim(cu->dev, c) : i64(cu, c);
}
static inline LLVMValueRef add(Cu *cu, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildAdd(cu->dev->b, a, b, "");
}
static inline LLVMValueRef mul(Cu *cu, LLVMValueRef a, int64_t c) {
  return c == 1 ? a : LLVMBuildMul(cu->dev->b, a, cu_size(cu, c), "");
}
static inline LLVMValueRef udiv(Cu *cu, LLVMValueRef a, int64_t c) {
  return c == 1 ? a : LLVMBuildUDiv(cu->dev->b, a, cu_size(cu, c), "");
}
static inline LLVMValueRef urem(Cu *cu, LLVMValueRef a, int64_t c) {
  return LLVMBuildURem(cu->dev->b, a, cu_size(cu, c), "");
}
static inline LLVMValueRef ult(Cu *cu, LLVMValueRef a, int64_t c) {
  return LLVMBuildICmp(cu->dev->b, LLVMIntULT, a, cu_size(cu, c), "");
}
/* ult, mul, udiv and urem above take sizes: a dynamic one (docs/
 * dynamic-dims.md) is read from the kernel's sizes parameter. */
/* ceil(n / per) for a size n (a count of tiles, a loop's trip count). */
static inline LLVMValueRef cu_ceil_div(Cu *cu, int64_t n, int64_t per) {
  if (dim_is_static(n)) return i64(cu, (n + per - 1) / per);
  return udiv(cu, add(cu, cu_size(cu, n), i64(cu, per - 1)), per);
}

/* ---- host.c ---- */
/* Start a private host function NAME(in, out, ws, stream) -> i32 of the
 * host Cg, with the plan of the graph it belongs to (cg_buf, cg_alloca,
 * cg_fail_if_nonzero work); cu_host_end returns 0 and closes it. */
LLVMValueRef cu_host_begin(Cu *cu, CuHostFn *h, CgPlan *plan,
                           const char *name);
LLVMValueRef cu_host_end(Cu *cu, CuHostFn *h);
/* l's blocks ceil(gdim / gper) * ceil(gdim2 / gper2) * grid (i64, from
 * the sizes); with ovf, or into *ovf whether they pass 2^31 - 1 (or a
 * size product overflows). */
LLVMValueRef cu_grid_blocks(Cg *cg, const CuLaunch *l, LLVMValueRef *ovf);
/* A sizes array (host stack, allocated where the builder is: not in a
 * loop) of dim_nsyms() + ndyn words: the symbols of hdr (a sizes array
 * or a workspace header), then the ndyn block offsets of the run-time
 * layout function `layout` run at those sizes; *r gets its result
 * (workspace bytes, -1 on overflow). */
LLVMValueRef cu_layout_sizes(Cg *cg, LLVMValueRef hdr, LLVMValueRef layout,
                             int ndyn, LLVMValueRef *r);
/* Launch l's kernel on h's stream with the pointer arrays in and out
 * and workspace ws (its kernelParams point at the elements it takes);
 * a failure is returned. */
void cu_host_launch(Cu *cu, CuHostFn *h, const CuLaunch *l, LLVMValueRef in,
                    LLVMValueRef out, LLVMValueRef ws);

/* ---- control.c ---- */
/* scan, if, while, custom_fn: their subgraphs' kernels plus a host
 * function enqueueing them; cu_control_scratch: the node's scratch
 * (copies of its non-splat constant operands, its own buffers, its
 * subgraphs' workspace), CG_SCRATCH_RT where sizes without a bound
 * reach them: then cu_control_scratch_rt gives its bytes in the graph's
 * run-time layout (the host Cg's scratch_rt hook). */
bool cu_control(Cu *cu, CgPlan *plan, Node *n);
int64_t cu_control_scratch(Cu *cu, const CgPlan *plan, const Node *n);
LLVMValueRef cu_control_scratch_rt(Cg *host, Node *n);

/* ---- device.c ---- */
/* The GPU target's refusal of n: `op 'NAME' is not supported by
 * --target=cuda yet[: why]`; cu_bad_dtype names the dtype. False. */
bool cu_unsupported(Cu *cu, Node *n, const char *why);
bool cu_bad_dtype(Cu *cu, Node *n, DType dt);
/* Blocks of b threads for n elements. */
unsigned cu_blocks_for(int64_t n, int b);
/* Offset of flat index i (over dims[0..r), row-major) with strides. */
LLVMValueRef cu_remap(Cu *cu, LLVMValueRef i, const int64_t *dims,
                      const int64_t *str, int r);
/* Start the body of kernel `name`, make it current in cu->dev with the
 * graph's plan; cu_kernel_end closes it, makes the kernel (ptx_kernel,
 * the parameters the body uses: header comment) and records a launch of
 * grid x block threads. */
void cu_kernel_begin(Cu *cu, CgPlan *plan, const char *what);
void cu_kernel_end(Cu *cu, unsigned grid, unsigned block);
/* cu_kernel_end with a grid of ceil(n / per) * mul blocks, n a size
 * (a dynamic one: computed at each launch, none for n = 0). */
void cu_kernel_end_n(Cu *cu, int64_t n, unsigned per, unsigned mul,
                     unsigned block);
/* ... times ceil(n2 / per2), n2 a size without a bound. */
void cu_kernel_end_n2(Cu *cu, int64_t n, unsigned per, int64_t n2,
                      unsigned per2, unsigned mul, unsigned block);
/* The element count of t as a size (a product of dynamic ones). */
int64_t cu_numel(Cu *cu, const Type *t);
/* Why n cannot run with dynamic sizes on the GPU, or NULL when it can
 * (or has none): kernels.c's table of the ops that take them, the
 * op families' own rules (cu_*_dyn). */
#define CU_STATIC_ONLY "the op takes static sizes only on the GPU for now"
const char *cu_dyn_why(Cu *cu, CgPlan *plan, const Node *n);
/* Append step l to the graph's steps. */
void cu_add_step(Cu *cu, CuLaunch l);
/* The module's shared-memory array `name` of n elements of et, made on
 * first use with `align`-byte alignment; a generic pointer to its
 * element i. */
LLVMValueRef cu_shared(Cg *cg, const char *name, LLVMTypeRef et, int64_t n,
                       unsigned align);
LLVMValueRef cu_shared_at(Cg *cg, LLVMValueRef g, LLVMTypeRef et,
                          LLVMValueRef i);
/* The block's dynamic shared memory (bytes, 128-byte aligned), whose
 * size the last kernel's launches give with cu_kernel_dyn_shared
 * (more than 48 KiB: the runtime raises the kernel's limit at load). */
LLVMValueRef cu_dyn_shared(Cg *cg);
void cu_kernel_dyn_shared(Cu *cu, unsigned bytes);
/* The last kernel should fit n blocks per SM (.minnctapersm: ptxas caps
 * its registers at 64K / (n * block)); n <= 1: no cap. */
void cu_kernel_min_blocks(Cu *cu, unsigned n);
/* Global thread index (i64): ctaid.x * ntid.x + tid.x; and the pieces. */
LLVMValueRef cu_gid(Cu *cu);
LLVMValueRef cu_tid(Cu *cu);    /* i64 */
LLVMValueRef cu_ctaid(Cu *cu);  /* i64 */
/* Code after this runs only where cond (i1) holds: else the thread exits. */
void cu_guard(Cu *cu, LLVMValueRef cond);
/* Errors a kernel finds (docs/gpu.md): the CPU layers' checks
 * (cg_fail_if, cg_ops_index) inside a kernel body record their RLX_ERR_*
 * code in the module's error word `rlx_err` and the thread exits. Every
 * check of one kernel records the same code; kernels of an if branch
 * record in the branch's word instead (cu->err), which the if's select
 * kernel passes on when the branch is taken. cu_err_take adds the
 * kernel rlx_err_take (last in the table, launched by rlx_gpu_status)
 * when the module has the word. */
void cu_err_take(Cu *cu);
/* Reduce v (compute type of dt) over the block of `block` threads
 * (multiple of 32, <= 1024) with r: warp butterfly shuffles, then the
 * warps' partials in warp order. Every thread gets the result; the order
 * is fixed, so results are bit-identical from run to run. */
LLVMValueRef cu_block_reduce(Cu *cu, DType dt, CgRed r, LLVMValueRef v,
                             int block);
/* A block size for rows of n elements: 32..256, a multiple of 32. */
int cu_block_for(int64_t n);
/* exp(x) for x <= 0 (a row's x - max) in the compute type of dt: f32 as
 * ex2.approx(x log2 e), relative error <= 2^-22 + |x| 2^-24 (attention's
 * exp; libclc's expf costs ~40 instructions and a division), f64 exact. */
LLVMValueRef cu_exp_neg(Cu *cu, DType dt, LLVMValueRef x);
/* A deterministic column reduction of a [len, K] view (bias and norm
 * parameter gradients): column col's fold with kind of elem(row, col)
 * over rows 0..len in a fixed order, coalesced. elem gives
 * values of dt's compute type; finish stores a column's result; bind
 * (optional) runs at each kernel's start. With S > 1 row segments the
 * partials go to n's scratch at byte part_off (cu_col_scratch bytes). */
typedef struct CuCol {
  int64_t len, K, S, seg;   /* rows, columns, segments, rows a segment */
  DType dt;
  CgRed kind;
  Node *n;
  int64_t part_off;
  LLVMValueRef (*elem)(Cu *cu, struct CuCol *c, LLVMValueRef row,
                       LLVMValueRef col);
  void (*finish)(Cu *cu, struct CuCol *c, LLVMValueRef col, LLVMValueRef v);
  void (*bind)(Cu *cu, struct CuCol *c);
  void *ctx;
} CuCol;
/* Segments for len rows of K columns; false when K < 32 or len < 2 (no
 * column kernel then). */
bool cu_col_plan(CuCol *c, int64_t len, int64_t K);
int64_t cu_col_scratch(const CuCol *c);
void cu_col_reduce(Cu *cu, CgPlan *p, CuCol *c, const char *what);
/* Calls to llvm.exp/log/... and libm names -> libclc; link libclc; run
 * the O2 pipeline; PTX text (malloc'd) or NULL after a diagnostic (an
 * `.extern .func` in the PTX is one). */
char *cu_finish_module(Cu *cu);

/* ---- kernels.c ---- */
/* Emit node n's kernels (a diagnostic naming op and target if none). */
bool cu_emit_node(Cu *cu, CgPlan *plan, Node *n);
/* Workspace scratch node n's kernels need (split-K and split-k partial
 * sums, sample ranks, norm statistics, attention lse and D), or 0. */
int64_t cu_scratch(Cu *cu, const CgPlan *plan, const Node *n);
/* dst (a returned value's output j) = src's bytes. */
void cu_copy_out(Cu *cu, CgPlan *plan, Node *src, int j);

/* ---- matmul.c ---- */
/* matmul / batched matmul n; dequant_matmul and q_matmul n on the same
 * tiles. */
bool cu_matmul(Cu *cu, CgPlan *plan, Node *n);
bool cu_dequant_matmul(Cu *cu, CgPlan *plan, Node *n);
bool cu_q_matmul(Cu *cu, CgPlan *plan, Node *n);
/* Why matmul n cannot take its dynamic sizes (cu_dyn_why), or NULL. */
const char *cu_matmul_dyn(const Cu *cu, const CgPlan *p, const Node *n);
/* Workspace scratch matmul, dequant_matmul or q_matmul n needs (split-K
 * partial sums), or 0. */
int64_t cu_matmul_scratch(const Cu *cu, const CgPlan *p, const Node *n);

/* ---- index.c ---- */
/* cumsum, cumsum_backward; scatter_add, gather_backward; topk. */
bool cu_cumsum(Cu *cu, CgPlan *plan, Node *n);
bool cu_scatter(Cu *cu, CgPlan *plan, Node *n);
bool cu_topk(Cu *cu, CgPlan *plan, Node *n);
/* Whether element (xj, j) of a row ranks before (xi, i) (i1): greater,
 * NaN largest, ties (and two NaNs) to the smaller index; compute-type
 * values of dt, i64 positions. */
LLVMValueRef cu_ranks_before(Cu *cu, DType dt, LLVMValueRef xj,
                             LLVMValueRef j, LLVMValueRef xi, LLVMValueRef i);

/* ---- random.c ---- */
/* rng_uniform, rng_normal (the CPU's bits); sample and its scratch. */
bool cu_rng(Cu *cu, CgPlan *plan, Node *n);
bool cu_sample(Cu *cu, CgPlan *plan, Node *n);
int64_t cu_sample_scratch(Ctx *ctx, const Node *n);

/* ---- norm.c ---- */
/* layer_norm, rms_norm, group_norm, batch_norm_inference and their
 * _backward_input/_gamma/_beta ops; the workspace scratch n needs (the
 * per-unit statistics of a _gamma op), or 0 for any other node. */
bool cu_norm(Cu *cu, CgPlan *plan, Node *n);
int64_t cu_norm_scratch(Cu *cu, const Node *n);

/* ---- attention.c ---- */
/* attention, attention_backward (every wrt); the backward's scratch
 * (row lse and D), 0 for other nodes. */
bool cu_attention(Cu *cu, CgPlan *plan, Node *n);
int64_t cu_attention_scratch(const CgPlan *p, const Node *n);

/* ---- nn.c ---- */
/* rope, rope_backward; max/avg_pool2d and their backward ops. */
bool cu_rope(Cu *cu, CgPlan *plan, Node *n);
bool cu_pool(Cu *cu, CgPlan *plan, Node *n);

/* ---- conv.c ---- */
/* conv2d, conv2d_backward_input, conv2d_backward_weight. */
bool cu_conv(Cu *cu, CgPlan *plan, Node *n);
/* Workspace scratch conv node n needs (split-k partial sums), or 0. */
int64_t cu_conv_scratch(Cu *cu, const Node *n);
/* n's ints attribute id of two entries (stride, padding, dilation), or
 * def twice when absent. */
void cu_conv_pair(const Node *n, AttrId id, int64_t def, int64_t *v);
/* i in [0, n) as signed i64 (i1): an input pixel inside the image. */
LLVMValueRef cu_in_range(Cu *cu, LLVMValueRef i, int64_t n);

/* ---- quant.c ---- */
/* q_conv2d, grouped_matmul and its _backward_weight, dense_solve,
 * batched_dense_solve. */
bool cu_quant(Cu *cu, CgPlan *plan, Node *n);
/* q_matmul's output element (i8) of column c from its i32 sum acc:
 * plus bias[c], the CPU's requantization (mult, mults[c]). */
LLVMValueRef cu_q_requant(Cu *cu, Node *n, LLVMValueRef acc, LLVMValueRef c);
/* Workspace scratch of a solve (the copies of A), 0 for other nodes. */
int64_t cu_solve_scratch(Cu *cu, const Node *n);
/* Why those nodes cannot take their dynamic sizes (cu_dyn_why), or
 * NULL. */
const char *cu_quant_dyn(Cu *cu, const CgPlan *plan, const Node *n);
/* (and of q_matmul and dequant_matmul, on matmul.c's tiles) */

/* ---- seq.c ---- */
/* selective_scan, gated_delta_net; log_mel, log_mel_backward. */
bool cu_ssm(Cu *cu, CgPlan *plan, Node *n);
bool cu_log_mel(Cu *cu, CgPlan *plan, Node *n);
/* Workspace scratch of those nodes (SSM states, log_mel_backward's
 * dy / z), or 0 for any other node. */
int64_t cu_seq_scratch(Cu *cu, const Node *n);
/* Why those nodes cannot take their dynamic sizes (cu_dyn_why), or
 * NULL. */
const char *cu_seq_dyn(Cu *cu, const CgPlan *plan, const Node *n);

/* ---- fft.c ---- */
/* fft (c64); its workspace scratch (the n roots). */
bool cu_fft(Cu *cu, CgPlan *plan, Node *n);
int64_t cu_fft_scratch(Cu *cu, const Node *n);
/* Why fft n cannot take its dynamic sizes (cu_dyn_why), or NULL. */
const char *cu_fft_dyn(Cu *cu, const CgPlan *plan, const Node *n);

#endif
