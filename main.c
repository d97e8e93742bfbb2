/* main.c: the rlxc driver (abi.md §1) and the only place that exits.
 *
 * Flow: parse the command line by hand into Options (a bad command line
 * prints "rlxc: error: ..." and exits 2); read the input file whole
 * (binary safe: the front end accepts NUL bytes and reports them); parse
 * it into a Module (fe_parse); pick the entry graph; fill a Unit; run
 * the pass pipeline (which verifies after each pass); then print the
 * canonical IR (--emit=ir), the Graphviz picture (--emit=dot) or the
 * code generation plan (--emit=plan), and hand the Unit to code
 * generation (cg_emit) for obj/header/asm/llvm. Errors in the input are
 * diagnostics on stderr and exit status 1; success is 0.
 *
 * Out of memory: all of a run's memory comes from its Ctx arena, whose
 * hook longjmps back to run() (ir.h): "rlxc: error: out of memory",
 * exit status 1, no file left behind. An LLVM fatal error prints
 * "rlxc: error: LLVM: REASON" and exits 1 the same way (fatal_llvm).
 * RLXC_FAIL_ALLOC=N (tests only) fails the Nth allocation; RLXC_TRACE_ALLOC
 * =FILE (tests only) names the call site of each allocation in FILE.
 *
 * Outputs: -o PATH names the object file; the header is PATH with its
 * extension replaced by .h (out_path in codegen/output.c derives every
 * name); without -o they are ENTRY.o / ENTRY.h in the current directory.
 * Two outputs with one path are a command-line error. --emit=ir alone
 * writes the IR to -o PATH, or stdout without -o; when ir is combined
 * with other kinds, the IR goes to stdout (dot and plan alike). Files are written atomically
 * (codegen/output.h): a failed run leaves no new file.
 *
 * --list-reserved (not in --help) prints the names the C name may not
 * take, for the test that compares them with `nm -u` of the runtime.
 */
#include "codegen/codegen.h"
#include "codegen/output.h"
#include "codegen/reserved.h"
#include "frontend/frontend.h"
#include "passes/passes.h"

#include <errno.h>
#include <llvm-c/ErrorHandling.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RLXC_VERSION "0.1.0"

typedef struct {
  Options o;
  const char *wrt_list[256];
  const char *jvp_list[256];
  bool list_ops;
  const char *list_fmt; /* NULL: names; "md": the docs/ops.md table */
  bool list_reserved;   /* hidden: the names --name may not take */
  bool help, version;
  const char *color;    /* -fdiagnostics-color: auto, always, never */
} Cli;

static const char usage[] =
    "usage: rlxc [options] FILE.rlx\n"
    "  -o PATH              output path (default: ENTRY.o, ENTRY.h in cwd)\n"
    "  --emit=K[,K...]      obj, header, asm, llvm, ir, dot, plan "
    "(default: obj,header)\n"
    "  --entry=NAME         graph to compile (default: the last graph)\n"
    "  --name=SYM           C name of the entry points (default: entry "
    "graph name)\n"
    "  --grad               also emit ENTRY_grad (reverse mode)\n"
    "  --wrt=%a,%b          values to differentiate against "
    "(default: params)\n"
    "  --grad-missing=error|zero  a wrt without gradient: error or zeros\n"
    "  --jvp[=%a,...]       also emit ENTRY_jvp (forward mode)\n"
    "  --hvp                also emit ENTRY_hvp (Hessian-vector product)\n"
    "  --train=sgd|momentum|adamw  also emit ENTRY_train: forward, loss,\n"
    "                       backward and the optimizer update of every "
    "param\n"
    "                       in place, one call per training step\n"
    "  --time-passes        time and memory of every phase, to stderr\n"
    "  -fdiagnostics-color[=auto|always|never]  colour diagnostics "
    "(auto: on a terminal)\n"
    "  --dump-ir[=all|PASS] print the IR after each pass that changed it "
    "(or one) to stderr\n"
    "  -O0 -O1 -O2 -O3      optimization level (default -O2)\n"
    "  --target=TRIPLE      LLVM target triple (default: host); cuda: NVIDIA\n"
    "                       GPU (host object with PTX, see docs/gpu.md)\n"
    "  --gpu-arch=SM        with --target=cuda: sm_80 (default), sm_90, sm_90a\n"
    "  --gpu-tf32           with --target=cuda: f32 matmul on tensor cores in\n"
    "                       tf32 (10-bit mantissa operands); default: exact\n"
    "  --cuda-graph         with --target=cuda: each entry replays a CUDA\n"
    "                       graph of its kernels (docs/gpu.md)\n"
    "  --mcpu=CPU           target CPU (default: host)\n"
    "  --mattr=+F,-G        enable / disable target features\n"
    "  --check              parse, verify and run passes; write nothing\n"
    "  --list-ops[=md]      print every op (md: the reference table)\n"
    "  -h, --help           this text\n"
    "  --version            print the version\n";

/* ---- command-line errors ---- */
static bool cli_err(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static bool cli_err(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("rlxc: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputs("\n(run 'rlxc --help' for usage)\n", stderr);
  va_end(ap);
  return false;
}

/* ---- C names ---- */
static const char *const c_keywords[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do",
    "double", "else", "enum", "extern", "float", "for", "goto", "if",
    "inline", "int", "long", "register", "restrict", "return", "short",
    "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
    "unsigned", "void", "volatile", "while", "_Alignas", "_Alignof",
    "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary", "_Noreturn",
    "_Static_assert", "_Thread_local", "bool", "true", "false", "alignas",
    "alignof", "constexpr", "nullptr", "static_assert", "thread_local",
    "typeof", "typeof_unqual", "asm", NULL};

/* NULL if s can name the entry points o asks for, else the reason it
 * cannot (possibly in why, cap bytes). */
static const char *cname_problem(const Options *o, const char *s,
                                 char *why, size_t cap) {
  if (!*s) return "it is empty";
  if (*s >= '0' && *s <= '9') return "it starts with a digit";
  for (const char *p = s; *p; p++)
    if (!(*p == '_' || (*p >= '0' && *p <= '9') ||
          (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
      return "it is not a valid C identifier";
  if (!strcmp(s, "main")) return "'main' is reserved for the program";
  for (int i = 0; c_keywords[i]; i++)
    if (!strcmp(s, c_keywords[i])) return "it is a C keyword";
  if (s[0] == '_')
    return "identifiers starting with '_' are reserved at file scope in C";
  if (!strncmp(s, "rlx_", 4))
    return "the prefix rlx_ is reserved for the runtime";
  char sym[256];
  if (!cg_symbols_reserved(s, o->grad, o->jvp, o->hvp, sym, sizeof sym))
    return NULL;
  snprintf(why, cap, "%s%s' is reserved: a C library, POSIX or rlx runtime "
           "name", strcmp(sym, s) ? "its symbol '" : "'", sym);
  return why;
}

/* ---- option parsing ---- */

/* "--opt=VALUE" or "--opt VALUE": the value, advancing *i for the
 * second form; NULL (with a message) if missing. */
static const char *opt_value(int argc, char **argv, int *i,
                             const char *opt) {
  size_t n = strlen(opt);
  const char *a = argv[*i];
  if (a[n] == '=') return a + n + 1;
  if (*i + 1 >= argc) {
    cli_err("option %s needs a value", opt);
    return NULL;
  }
  return argv[++*i];
}

static bool is_opt(const char *a, const char *opt) {
  size_t n = strlen(opt);
  return !strncmp(a, opt, n) && (a[n] == 0 || a[n] == '=');
}

/* Split the comma-separated list s in place into items[0..*n). An
 * empty list or an empty item (",a", "a,,b", "a,") is an error. */
static bool split_list(char *s, char **items, int max, int *n,
                       const char *opt) {
  *n = 0;
  if (!*s) return cli_err("%s: expected a comma-separated list", opt);
  for (char *p = s;; p++) {
    char *comma = strchr(p, ',');
    if (comma) *comma = 0;
    if (!*p) return cli_err("%s: empty item in the list", opt);
    if (*n == max) return cli_err("%s: too many items", opt);
    items[(*n)++] = p;
    if (!comma) return true;
    p = comma;
  }
}

/* Split "a,b,%c" into names without '%'. */
static bool split_names(char *s, const char **out, int *n,
                        const char *opt) {
  char *items[256];
  if (!split_list(s, items, 256, n, opt)) return false;
  for (int i = 0; i < *n; i++) {
    out[i] = items[i] + (items[i][0] == '%');
    if (!*out[i]) return cli_err("%s: empty value name", opt);
  }
  return true;
}

static bool parse_emit(Cli *c, char *s) {
  static const struct { const char *w; unsigned bit; } kinds[] = {
      {"obj", EMIT_OBJ}, {"header", EMIT_HEADER}, {"asm", EMIT_ASM},
      {"llvm", EMIT_LLVM}, {"ir", EMIT_IR}, {"dot", EMIT_DOT},
      {"plan", EMIT_PLAN}};
  char *items[64];
  int n;
  if (!split_list(s, items, 64, &n, "--emit")) return false;
  c->o.emit = 0;
  for (int i = 0; i < n; i++) {
    unsigned bit = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
      if (!strcmp(items[i], kinds[k].w)) bit = kinds[k].bit;
    if (!bit)
      return cli_err("--emit: unknown kind '%s' (expected obj, header, "
                     "asm, llvm, ir, dot, plan)", items[i]);
    c->o.emit |= bit;
  }
  return true;
}

static bool parse_dump(Cli *c, const char *v) {
  if (!strcmp(v, "all")) {
    c->o.dump_ir = v;
    return true;
  }
  int n;
  const Pass *p = pass_list(&n);
  for (int i = 0; i < n; i++)
    if (!strcmp(p[i].name, v)) {
      c->o.dump_ir = v;
      return true;
    }
  fprintf(stderr, "rlxc: error: --dump-ir: unknown pass '%s'; valid: all",
          v);
  for (int i = 0; i < n; i++) fprintf(stderr, ", %s", p[i].name);
  fputc('\n', stderr);
  return false;
}

/* --train=OPT */
static bool parse_train(Cli *c, const char *v) {
  static const char *const opts[] = {"sgd", "momentum", "adamw", NULL};
  for (int k = 0; opts[k]; k++)
    if (!strcmp(v, opts[k])) {
      c->o.train = TRAIN_SGD + k;
      return true;
    }
  return cli_err("--train: unknown optimizer '%s' (expected sgd, momentum "
                 "or adamw)", v);
}

/* Options that take a value. */
static bool parse_valued(Cli *c, int argc, char **argv, int *i,
                         bool *handled) {
  static const char *const names[] = {"--emit", "--entry", "--name",
      "--wrt", "--grad-missing", "--target", "--mcpu", "--mattr", "--train",
      "--gpu-arch", NULL};
  const char *a = argv[*i];
  int k = 0;
  while (names[k] && !is_opt(a, names[k])) k++;
  *handled = names[k] != NULL;
  if (!*handled) return true;
  char *v = (char *)opt_value(argc, argv, i, names[k]);
  if (!v) return false;
  switch (k) {
  case 0: return parse_emit(c, v);
  case 1: c->o.entry = v; return *v || cli_err("--entry: empty name");
  case 2: c->o.name = v; return true; /* checked in parse_args */
  case 3: return split_names(v, c->wrt_list, &c->o.nwrt, "--wrt");
  case 4:
    if (strcmp(v, "error") && strcmp(v, "zero"))
      return cli_err("--grad-missing: expected 'error' or 'zero', got "
                     "'%s'", v);
    c->o.grad_missing_zero = !strcmp(v, "zero");
    return true;
  case 5: c->o.target = v; return *v || cli_err("--target: empty");
  case 6: c->o.mcpu = v; return *v || cli_err("--mcpu: empty");
  case 7: c->o.mattr = v; return *v || cli_err("--mattr: empty");
  case 8: return parse_train(c, v);
  default:
    if (strcmp(v, "sm_80") && strcmp(v, "sm_90") && strcmp(v, "sm_90a"))
      return cli_err("--gpu-arch: expected sm_80, sm_90 or sm_90a, got "
                     "'%s'", v);
    c->o.gpu_arch = v;
    return true;
  }
}

/* Options without a value, or with an optional "=VALUE". */
static bool parse_flag(Cli *c, char *a) {
  if (!strcmp(a, "-h") || !strcmp(a, "--help")) c->help = true;
  else if (!strcmp(a, "--version")) c->version = true;
  else if (!strcmp(a, "--grad")) c->o.grad = true;
  else if (!strcmp(a, "--hvp")) c->o.hvp = true;
  else if (!strcmp(a, "--cuda-graph")) c->o.cuda_graph = true;
  else if (!strcmp(a, "--check")) c->o.check = true;
  else if (!strcmp(a, "--time-passes")) c->o.time_passes = true;
  else if (!strcmp(a, "--gpu-tf32")) c->o.gpu_tf32 = true;
  else if (!strcmp(a, "-fdiagnostics-color")) c->color = "always";
  else if (!strncmp(a, "-fdiagnostics-color=", 20)) {
    c->color = a + 20;
    if (strcmp(c->color, "auto") && strcmp(c->color, "always") &&
        strcmp(c->color, "never"))
      return cli_err("-fdiagnostics-color: expected auto, always or "
                     "never, got '%s'", c->color);
  }
  else if (!strcmp(a, "--list-ops")) c->list_ops = true;
  else if (!strcmp(a, "--list-ops=md")) c->list_ops = true, c->list_fmt = "md";
  else if (!strcmp(a, "--list-reserved")) c->list_reserved = true;
  else if (!strcmp(a, "--jvp")) c->o.jvp = true;
  else if (!strncmp(a, "--jvp=", 6)) {
    c->o.jvp = true;
    return split_names(a + 6, c->jvp_list, &c->o.njvp_wrt, "--jvp");
  } else if (!strcmp(a, "--dump-ir")) c->o.dump_ir = "all";
  else if (!strncmp(a, "--dump-ir=", 10)) return parse_dump(c, a + 10);
  else if (a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' &&
           !a[3])
    c->o.opt_level = a[2] - '0';
  else return cli_err("unknown option '%s'", a);
  return true;
}

/* No two outputs of one run may have the same path (`-o x.h` would
 * write the object and the header to x.h). Without -o they are CNAME
 * plus distinct extensions; --emit=ir alone writes one file. A
 * command-line error (exit status 2), checked once the Ctx exists
 * because the paths are built in its arena. */
static bool check_outputs(Ctx *c, const Options *o) {
  static const struct { unsigned bit; const char *what; } kinds[] = {
      {EMIT_OBJ, "object"}, {EMIT_HEADER, "header"},
      {EMIT_ASM, "assembly"}, {EMIT_LLVM, "LLVM IR"}};
  enum { NK = sizeof kinds / sizeof kinds[0] };
  if (!o->output || o->check) return true;
  char *path[NK] = {NULL};
  for (int i = 0; i < NK; i++) {
    if (!(o->emit & kinds[i].bit)) continue;
    path[i] = out_path_in(c->arena, o, "", kinds[i].bit);
    for (int j = 0; j < i; j++)
      if (path[j] && !strcmp(path[i], path[j]))
        return cli_err("-o %s: the %s and the %s would both be written "
                       "to '%s'", o->output, kinds[j].what,
                       kinds[i].what, path[i]);
  }
  return true;
}

/* RLX_CUDA_MM (docs/gpu.md, a tuning knob for --target=cuda): comma-
 * separated f32rR (the largest R of the CUDA-core matmul tiles: 1, 2, 4
 * or 8) and BMxBNxBKsS (the tensor-core tile: BM, BN in 64, 128, 256;
 * BK 32 or 64 16-bit elements; S stages of cp.async, 2..8, at most
 * 227 KiB of shared memory; BM BN from 8192 to 32768; wW: W = 4 or 8
 * warps, default 8), each optionally followed by bB: the blocks per SM
 * its kernels ask ptxas to fit (1..4: a register cap); wgBMxBNsS[p]
 * (the sm_90a wgmma tile: BM 64 or 128, BN 64, 128 or 256, S stages of
 * 64-deep slices, p: pipelined) or nowg (sm_90a 16-bit products on
 * mma.sync too). */
static bool parse_gpu_mm(Options *o, const char *v) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", v);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
    int r, bm, bn, bk, st, b = 0, len = 0, len2 = 0;
    char *end = strchr(t, 'b');
    if (end && end != t && sscanf(end, "b%d%n", &b, &len2) == 1 &&
        !end[len2] && b >= 1 && b <= 4)
      *end = 0;
    else
      b = 0;
    if (!strcmp(t, "nowg")) {
      o->gpu_wg[0] = -1;
      continue;
    }
    if (sscanf(t, "wg%dx%ds%d%n", &bm, &bn, &st, &len) == 3 && !b &&
        (!t[len] || !strcmp(t + len, "p")) &&
        (bm == 64 || bm == 128) && (bn == 64 || bn == 128 || bn == 256) &&
        st >= 2 + (t[len] == 'p') && st <= 8 &&
        st * (bm + bn) * 128 + 1024 <= 227 * 1024) {
      o->gpu_wg[0] = bm, o->gpu_wg[1] = bn, o->gpu_wg[2] = st;
      o->gpu_wg[3] = t[len] == 'p';
      continue;
    }
    if (sscanf(t, "f32r%d%n", &r, &len) == 1 && !t[len] &&
        (r == 1 || r == 2 || r == 4 || r == 8)) {
      o->gpu_mm_r = r, o->gpu_mm_b = b;
      continue;
    }
    int w = 8;
    bool ok = sscanf(t, "%dx%dx%ds%d%n", &bm, &bn, &bk, &st, &len) == 4;
    if (ok && t[len] == 'w')
      ok = sscanf(t + len, "w%d%n", &w, &len2) == 1 && (len += len2, true);
    ok = ok && !t[len] && (w == 4 || w == 8) &&
         (bm == 64 || bm == 128 || bm == 256) &&
         (bn == 64 || bn == 128 || bn == 256) && (bk == 32 || bk == 64) &&
         st >= 2 && st <= 8 && bm * bn >= 8192 && bm * bn <= 32768 &&
         st * (bm + bn) * bk * 2 <= 227 * 1024 && bm / 64 <= w &&
         bn / (w / (bm / 64)) >= 16 && bn / (w / (bm / 64)) <= 128;
    if (!ok)
      return cli_err("RLX_CUDA_MM: expected f32rR (R = 1, 2, 4, 8) or "
                     "BMxBNxBKsS[wW] (W = 4 or 8 warps), each optionally "
                     "followed by bB (B = 1 to 4), wgBMxBNsS[p] or nowg "
                     "(docs/gpu.md), got '%s'", v);
    o->gpu_mma[0] = bm, o->gpu_mma[1] = bn, o->gpu_mma[2] = bk;
    o->gpu_mma[3] = st, o->gpu_mma[4] = b, o->gpu_mma[5] = w;
  }
  return true;
}

static bool parse_args(Cli *c, int argc, char **argv) {
  bool only_files = false;
  c->o.emit = EMIT_OBJ | EMIT_HEADER;
  c->o.opt_level = 2;
  c->o.wrt = c->wrt_list;
  c->o.jvp_wrt = c->jvp_list;
  for (int i = 1; i < argc; i++) {
    char *a = argv[i];
    bool handled;
    if (only_files || a[0] != '-' || !strcmp(a, "-")) {
      if (c->o.input) return cli_err("more than one input file ('%s', "
                                     "'%s')", c->o.input, a);
      c->o.input = a;
    } else if (!strcmp(a, "--")) {
      only_files = true;
    } else if (!strcmp(a, "-o") || !strncmp(a, "-o", 2)) {
      c->o.output = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
      if (!c->o.output || !*c->o.output)
        return cli_err("option -o needs a path");
    } else if (!parse_valued(c, argc, argv, &i, &handled)) {
      return false;
    } else if (!handled && !parse_flag(c, a)) {
      return false;
    }
  }
  if (c->help || c->version || c->list_ops || c->list_reserved) return true;
  if (!c->o.input) return cli_err("no input file");
  if (c->o.train && c->o.nwrt)
    return cli_err("--train updates every param; it cannot be combined "
                   "with --wrt");
  if (c->o.cuda_graph && !(c->o.target && !strcmp(c->o.target, "cuda")))
    return cli_err("--cuda-graph needs --target=cuda");
  const char *mm = getenv("RLX_CUDA_MM");
  if (mm && *mm && !parse_gpu_mm(&c->o, mm)) return false;
  char why[512];
  const char *bad = c->o.name ? cname_problem(&c->o, c->o.name, why,
                                              sizeof why) : NULL;
  if (bad) return cli_err("--name=%s: %s", c->o.name, bad);
  return true;
}

/* ---- --list-ops ---- */

static void md_flags(unsigned f) {
  static const struct { unsigned bit; const char *w; } fl[] = {
      {OPF_COMPARE, "compare"}, {OPF_BINARY, "binary"},
      {OPF_UNARY, "unary"}, {OPF_ELEMENTWISE, "elementwise"},
      {OPF_REDUCE, "reduce"}, {OPF_CONTROL, "control"},
      {OPF_FUSED, "fused"}, {OPF_BACKWARD, "backward"},
      {OPF_NO_GRAD, "no-grad"}, {OPF_INT, "int"}, {OPF_BOOL, "bool"}};
  unsigned shown = 0;
  const char *sep = "";
  for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++)
    if ((f & fl[i].bit) == fl[i].bit && (fl[i].bit & ~shown)) {
      printf("%s%s", sep, fl[i].w);
      sep = ", ";
      shown |= fl[i].bit;
    }
}

static void md_attrs(const char *spec) {
  const char *sep = "";
  for (const char *p = spec; *p;) {
    while (*p == ' ') p++;
    size_t n = strcspn(p, " ");
    if (!n) break;
    printf("%s`%.*s`", sep, (int)n, p);
    sep = " ";
    p += n;
  }
}

static const char *yes_no(bool b) { return b ? "yes" : "no"; }

/* Whether op compiles: no / yes, or the dtypes of operand 0 it compiles
 * for when the op table restricts them (op_dtypes). md: the ops.md cell
 * ("no", "yes", "f32, f64"), else the --list-ops word ("-", "compiles",
 * "f32,f64"). */
static const char *compiles_text(Op op, bool md, char *buf, size_t n) {
  if (!cg_op_compiles(op)) return md ? "no" : "-";
  if (op_dtypes(op) == DTS_ANY) return md ? "yes" : "compiles";
  dts_str(op_dtypes(op), buf, n);
  if (!md)
    for (char *r = buf, *w = buf;; r++)
      if (*r != ' ' && !(*w++ = *r)) break;
  return buf;
}

static void list_ops_md(void) {
  puts("# rlxc op reference\n");
  puts("Generated by `rlxc --list-ops=md` from `ir/ops.def` and "
       "`ir/attrs.def`;\ndo not edit by hand (a test compares this file "
       "with the output).\n");
  puts("Attributes: `name` is required, `name=VALUE` is optional with "
       "that default,\n`name?` is optional without a default (its "
       "absence has a meaning stated\nin docs/language.md). Operands: "
       "`a..b` a range, `n+` n or more.\n");
  puts("Flags `int` / `bool`: an elementwise op also defined on integer "
       "/ bool\noperands (other elementwise ops take float or c64 ones; "
       "compares, `where`\nand `cast` take any).\n");
  puts("Columns compiles / reverse / forward: code generation, `--grad` "
       "and `--jvp`\nsupport the op, by a rule of their own or through "
       "the pass that rewrites\nit into other ops first (from the "
       "emitter, VJP and JVP tables). Where\n`compiles` lists dtypes, "
       "the op compiles only for those (of its first\noperand; the "
       "op table's `OPF_F32_F64`): `--check` rejects the others.\n");
  puts("| op | operands | attributes | flags | compiles | reverse | "
       "forward | math |");
  puts("|---|---|---|---|---|---|---|---|");
  for (int i = 0; i < OP_COUNT; i++) {
    const OpInfo *oi = op_info((Op)i);
    if (oi->flags & OPF_PSEUDO) continue;
    printf("| `%s` | ", oi->name);
    if (oi->max_in < 0) printf("%d+", oi->min_in);
    else if (oi->max_in == oi->min_in) printf("%d", oi->min_in);
    else printf("%d..%d", oi->min_in, oi->max_in);
    printf(" | ");
    md_attrs(oi->attr_spec);
    printf(" | ");
    md_flags(oi->flags);
    char dts[64];
    printf(" | %s | %s | %s | ", compiles_text((Op)i, true, dts, sizeof dts),
           yes_no(vjp_supported((Op)i)), yes_no(jvp_supported((Op)i)));
    for (const char *m = oi->math; *m; m++)
      printf(*m == '|' ? "\\|" : "%c", *m);
    puts(" |");
  }
  static const char *const kinds[] = {"int", "int list", "float", "bool",
                                      "dtype", "enum", "graph"};
  static const char *const words[] = {
#define ATTR(id, name, kind, words) words,
#include "ir/attrs.def"
#undef ATTR
  };
  puts("\n## Attributes\n");
  puts("| attribute | kind | words |");
  puts("|---|---|---|");
  for (int a = 0; a < ATTR_COUNT; a++) {
    printf("| `%s` | %s | ", attr_name((AttrId)a),
           kinds[attr_kind((AttrId)a)]);
    md_attrs(words[a]);
    puts(" |");
  }
}

static void list_ops(const char *fmt) {
  ops_init();
  if (fmt) {
    list_ops_md();
    return;
  }
  /* one op per line: name, then whether it compiles, has reverse mode
   * and has forward mode (the first word is the name) */
  char dts[64];
  for (int i = 0; i < OP_COUNT; i++)
    if (!op_has((Op)i, OPF_PSEUDO))
      printf("%-38s %-8s %-8s %s\n", op_name((Op)i),
             compiles_text((Op)i, false, dts, sizeof dts),
             vjp_supported((Op)i) ? "reverse" : "-",
             jvp_supported((Op)i) ? "forward" : "-");
}

/* ---- input ---- */

/* The opened input, closed by an out-of-memory unwind (ctx_defer). */
static void close_input(void *fp, bool fatal) {
  FILE **f = fp;
  if (*f && *f != stdin) fclose(*f);
  *f = NULL;
}

/* First buffer size: the whole of a regular file (no regrowth). */
static size_t first_cap(FILE *f) {
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
      st.st_size >= 0 && (uintmax_t)st.st_size < SIZE_MAX / 4)
    return (size_t)st.st_size + 2;
  return 1 << 16;
}

/* Bytes of f into a temporary of c's arena, NUL-terminated after *len.
 * False on a read error (errno). */
static bool read_stream(Ctx *c, FILE *f, char **buf, size_t *len) {
  size_t cap = first_cap(f), n = 0;
  char *b = arena_tmp_alloc(c->arena, cap);
  for (size_t got = 1; got; n += got) {
    if (cap - n < 2) b = arena_tmp_realloc(c->arena, b, cap *= 2);
    got = fread(b + n, 1, cap - n - 1, f);
  }
  b[n] = 0;
  *buf = b;
  *len = n;
  return !ferror(f);
}

/* Read a whole file (or stdin for "-") into c's arena with a NUL after
 * len bytes. NULL with a message on failure. */
static char *read_all(Ctx *c, const char *path, size_t *len) {
  FILE *f = NULL;
  ctx_defer(c, close_input, &f);
  f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  int err = errno;
  char *buf = NULL;
  bool ok = f && read_stream(c, f, &buf, len);
  if (f) err = errno;
  ctx_undefer(c, close_input, &f);
  if (f && f != stdin) fclose(f);
  if (!ok)
    fprintf(stderr, "rlxc: error: cannot %s '%s': %s\n",
            f ? "read" : "open", path, strerror(err));
  return ok ? buf : NULL;
}

/* ---- compilation ---- */

static Graph *pick_entry(Ctx *c, Module *m, const Options *o) {
  if (m->ngraphs == 0) {
    diag_error(c, (Loc){0, 0}, "the file declares no graph");
    return NULL;
  }
  if (!o->entry) return m->graphs[m->ngraphs - 1];
  Graph *g = ir_graph_find(m, o->entry);
  if (!g) diag_error(c, (Loc){0, 0}, "entry graph '%s' not found",
                     o->entry);
  return g;
}

static bool pick_cname(Unit *u) {
  if (u->opt->name) {
    u->cname = u->opt->name;
    return true;
  }
  char buf[512];
  const char *why = cname_problem(u->opt, u->entry->name, buf, sizeof buf);
  if (why)
    return diag_error(u->ctx, u->entry->loc, "graph '%s' cannot name the "
                      "entry points (%s); use --name=SYM",
                      u->entry->name, why);
  u->cname = u->entry->name;
  return true;
}

/* The canonical IR (kind EMIT_IR), the Graphviz picture (EMIT_DOT) or
 * the code generation plan (EMIT_PLAN) to -o PATH when it is the only
 * output (atomically, like every output file), else to stdout. */
static bool print_kind(Unit *u, unsigned kind, FILE *f) {
  if (kind == EMIT_DOT) return cg_write_dot(u, f);
  if (kind == EMIT_PLAN) return cg_write_plan(u, f);
  ir_print_module(f, u->mod);
  return !ferror(f);
}

static bool write_text(Unit *u, unsigned kind) {
  const Options *o = u->opt;
  if (!(o->output && o->emit == kind)) {
    int before = u->ctx->nerrors;
    if (print_kind(u, kind, stdout) && fflush(stdout) == 0) return true;
    if (u->ctx->nerrors > before) return false; /* reported: not an I/O error */
    return diag_error(u->ctx, (Loc){0, 0}, "cannot write the %s to "
                      "stdout: %s", kind == EMIT_DOT    ? "graph"
                                    : kind == EMIT_PLAN ? "plan"
                                                        : "IR",
                      strerror(errno));
  }
  OutSet out;
  OutMem m;
  out_init(&out, u->ctx);
  bool ok = out_mem_open(&out, &m);
  if (ok) ok = out_mem_add(&out, &m, o->output, print_kind(u, kind, m.f));
  return out_finish(&out, ok);
}

/* Input, front end, pipeline, outputs. Returns the exit status. */
static int compile(Ctx *c, const Options *o) {
  char *src = read_all(c, o->input, &c->src_len);
  if (!src) return 1;
  c->src = src;
  if (o->time_passes) c->times = arena_alloc(c->arena, sizeof *c->times);
  TimeMark t;
  time_begin(c, &t);
  Module *m = fe_parse(c);
  time_end(c, &t, "front end (parse, check)");
  Unit u = {.ctx = c, .mod = m, .opt = o};
  bool ok = m && c->nerrors == 0;
  if (ok) ok = (u.entry = pick_entry(c, m, o)) != NULL;
  /* the C name is validated only when C code may be generated */
  bool need_cname = o->check || (o->emit & ~(unsigned)EMIT_IR);
  if (ok && need_cname) ok = pick_cname(&u);
  else if (ok) u.cname = o->name ? o->name : u.entry->name;
  if (ok) ok = pass_run_pipeline(&u) && c->nerrors == 0;
  if (ok && !o->check && (o->emit & EMIT_IR)) ok = write_text(&u, EMIT_IR);
  if (ok && !o->check && (o->emit & EMIT_DOT))
    ok = write_text(&u, EMIT_DOT);
  if (ok && !o->check && (o->emit & EMIT_PLAN))
    ok = write_text(&u, EMIT_PLAN);
  if (ok && !o->check &&
      (o->emit & ~(unsigned)(EMIT_IR | EMIT_DOT | EMIT_PLAN)))
    ok = cg_emit(&u) && c->nerrors == 0;
  if (!ok && c->nerrors == 0)
    diag_error(c, (Loc){0, 0}, "internal: compilation failed without a "
               "diagnostic");
  time_print(c, stderr);
  return ok ? 0 : 1;
}

/* ---- out of memory, LLVM fatal errors ---- */

/* The Ctx of the run, for fatal_llvm only: LLVM's fatal error handler
 * takes no argument. */
static Ctx *fatal_ctx;

/* An LLVM fatal error (LLVMInstallFatalErrorHandler): report it, remove
 * the staged temporaries, exit 1. LLVM's objects are not disposed: it
 * may be in any state, and the process ends here. */
static void fatal_llvm(const char *reason) {
  fprintf(stderr, "rlxc: error: LLVM: %s\n", reason);
  if (fatal_ctx) ctx_unwind(fatal_ctx, true);
  fflush(stdout);
  exit(1);
}

static int out_of_memory(Ctx *c) {
  fputs("rlxc: error: out of memory\n", stderr);
  fatal_ctx = NULL;
  ctx_free(c);
  return 1;
}

/* Fault injection for the tests (docs/testing.md): RLXC_FAIL_ALLOC=N
 * makes the Nth allocation of the compilation fail; RLXC_TRACE_ALLOC=
 * FILE writes one line per allocation, naming its call site, to
 * alloc_trace (closed by run(), out of memory or not). */
static FILE *alloc_trace;

static void fail_alloc_from_env(Arena *a) {
  const char *v = getenv("RLXC_FAIL_ALLOC");
  if (v && *v) arena_fail_at(a, strtol(v, NULL, 10));
  const char *t = getenv("RLXC_TRACE_ALLOC");
  if (t && *t && (alloc_trace = fopen(t, "w"))) arena_trace(a, alloc_trace);
}

static void close_trace(void) {
  if (alloc_trace) fclose(alloc_trace);
  alloc_trace = NULL;
}

/* One compilation under one Ctx. Running out of memory anywhere in it
 * (the arena's hook, ctx_oom) runs the Ctx's cleanups (LLVM objects,
 * staged temporaries, the open input) and returns to the setjmp here:
 * "out of memory", exit status 1. Returns the exit status. */
static int run(const Options *o, bool color) {
  const char *file = strcmp(o->input, "-") ? o->input : "<stdin>";
  Ctx *c = ctx_new(file, NULL, 0);
  if (!c) return out_of_memory(NULL);
  jmp_buf jb;
  if (setjmp(jb)) {
    close_trace();
    return out_of_memory(c);
  }
  c->oom_jump = &jb;
  c->diag_out = stderr;
  c->color = color;
  fail_alloc_from_env(c->arena);
  fatal_ctx = c;
  LLVMInstallFatalErrorHandler(fatal_llvm);
  int status = check_outputs(c, o) ? compile(c, o) : 2;
  fatal_ctx = NULL;
  ctx_free(c);
  close_trace();
  return status;
}

/* -fdiagnostics-color: "auto" (the default) colours a terminal whose
 * TERM is not "dumb", unless NO_COLOR is set (no-color.org). */
static bool want_color(const char *mode) {
  if (mode && strcmp(mode, "auto")) return !strcmp(mode, "always");
  const char *term = getenv("TERM"), *no = getenv("NO_COLOR");
  return isatty(fileno(stderr)) && term && strcmp(term, "dumb") &&
         !(no && *no);
}

int main(int argc, char **argv) {
  Cli cli;
  memset(&cli, 0, sizeof cli);
  if (!parse_args(&cli, argc, argv)) exit(2);
  if (cli.help) {
    fputs(usage, stdout);
    exit(0);
  }
  if (cli.version) {
    puts("rlxc " RLXC_VERSION);
    exit(0);
  }
  if (cli.list_ops) {
    list_ops(cli.list_fmt);
    exit(0);
  }
  if (cli.list_reserved) {
    cg_list_reserved(stdout);
    exit(0);
  }
  exit(run(&cli.o, want_color(cli.color)));
}
