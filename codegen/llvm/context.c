/* context.c: LLVM lifetime, types, target machine, function attributes.
 *
 * cg_new() creates the context, module, builder and target machine for
 * the options' triple/CPU (host by default); cg_free() disposes all of
 * them. The Cg lives in the Ctx arena and is registered with ctx_defer,
 * so an out-of-memory unwind disposes the LLVM objects too.
 * Every generated function carries the target attributes from
 * cg_fn_attrs(), including prefer-vector-width=512 on x86 so that loops
 * vectorize at AVX-512 width when the CPU has it (LLVM otherwise
 * prefers 256-bit vectors on most AVX-512 CPUs).
 */
#include "codegen/llvm/cg.h"

#include <llvm-c/Disassembler.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void init_targets(void) {
  LLVMInitializeAllTargetInfos();
  LLVMInitializeAllTargets();
  LLVMInitializeAllTargetMCs();
  LLVMInitializeAllAsmPrinters();
  LLVMInitializeAllDisassemblers();
}

/* LLVM only warns on stderr about an unknown CPU or feature (and may
 * then abort later), so build an MC subtarget for them with stderr
 * captured and look for those warnings. */
static bool subtarget_known(const char *triple, const char *cpu,
                            const char *features) {
  fflush(stderr);
  FILE *tmp = tmpfile();
  int saved = dup(2);
  if (!tmp || saved < 0 || dup2(fileno(tmp), 2) < 0) {
    if (tmp) fclose(tmp);
    if (saved >= 0) close(saved);
    return true; /* cannot check: let LLVM decide */
  }
  LLVMDisasmContextRef d = LLVMCreateDisasmCPUFeatures(
      triple, cpu, features, NULL, 0, NULL, NULL);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  if (d) LLVMDisasmDispose(d);
  char buf[512] = {0};
  rewind(tmp);
  size_t n = fread(buf, 1, sizeof buf - 1, tmp);
  buf[n] = 0;
  fclose(tmp);
  return !strstr(buf, "not a recognized");
}

/* Append --mattr (comma-separated +feature / -feature) to the CPU's
 * features; each entry must be signed and known to the target. */
static bool add_mattr(Cg *cg, const char *mattr) {
  for (const char *p = mattr; *p;) {
    size_t n = strcspn(p, ",");
    if (n < 2 || (p[0] != '+' && p[0] != '-'))
      return diag_error(cg->ctx, (Loc){0, 0}, "codegen: --mattr: expected "
                        "'+feature' or '-feature', got '%.*s'", (int)n, p);
    p += n + (p[n] == ',');
  }
  size_t len = strlen(cg->features) + strlen(mattr) + 2;
  char *f = malloc(len);
  if (!f) return diag_error(cg->ctx, (Loc){0, 0}, "out of memory");
  snprintf(f, len, "%s%s%s", cg->features, *cg->features ? "," : "", mattr);
  LLVMDisposeMessage(cg->features);
  cg->features = LLVMCreateMessage(f);
  free(f);
  if (!subtarget_known(cg->triple, cg->cpu, mattr))
    return diag_error(cg->ctx, (Loc){0, 0}, "codegen: --mattr: unknown "
                      "feature in '%s' for target '%s'", mattr, cg->triple);
  return true;
}

static void init_types(Cg *cg) {
  LLVMContextRef c = cg->lc;
  cg->t_void = LLVMVoidTypeInContext(c);
  cg->t_i1 = LLVMInt1TypeInContext(c);
  cg->t_i8 = LLVMInt8TypeInContext(c);
  cg->t_i16 = LLVMInt16TypeInContext(c);
  cg->t_i32 = LLVMInt32TypeInContext(c);
  cg->t_i64 = LLVMInt64TypeInContext(c);
  cg->t_f16 = LLVMHalfTypeInContext(c);
  cg->t_f32 = LLVMFloatTypeInContext(c);
  cg->t_f64 = LLVMDoubleTypeInContext(c);
  cg->t_ptr = LLVMPointerTypeInContext(c, 0);
  cg->t_c64 = LLVMVectorType(cg->t_f32, 2);
  LLVMTypeRef p3[3] = {cg->t_ptr, cg->t_ptr, cg->t_ptr};
  cg->t_graph_fn = LLVMFunctionType(cg->t_i32, p3, 3, 0);
  LLVMTypeRef tp[3] = {cg->t_ptr, cg->t_i64, cg->t_i64};
  cg->t_task_fn = LLVMFunctionType(cg->t_void, tp, 3, 0);
}

/* Does triple name the host's architecture (its first component)? */
static bool same_arch(const char *triple) {
  char *h = LLVMGetDefaultTargetTriple();
  size_t n = strcspn(h, "-");
  bool same = strncmp(h, triple, n) == 0 && (triple[n] == '-' || !triple[n]);
  LLVMDisposeMessage(h);
  return same;
}

/* Triple, CPU and feature strings, all malloc'ed by LLVM. Without
 * --mcpu: the host CPU and features when the target is the host's
 * architecture, else the target's generic CPU; --mattr is appended to
 * the features (a later entry overrides an earlier one). */
static bool pick_target(Cg *cg, const Options *o, LLVMTargetRef *t) {
  bool host = !o || !o->target;
  cg->triple = host ? LLVMGetDefaultTargetTriple()
                    : LLVMNormalizeTargetTriple(o->target);
  char *err = NULL;
  if (LLVMGetTargetFromTriple(cg->triple, t, &err)) {
    diag_error(cg->ctx, (Loc){0, 0}, "codegen: unknown target '%s': %s",
               o && o->target ? o->target : cg->triple, err ? err : "");
    LLVMDisposeMessage(err);
    return false;
  }
  if (o && o->mcpu) {
    if (!subtarget_known(cg->triple, o->mcpu, ""))
      return diag_error(cg->ctx, (Loc){0, 0},
                        "codegen: unknown CPU '%s' for target '%s'", o->mcpu,
                        cg->triple);
    cg->cpu = LLVMCreateMessage(o->mcpu);
    /* x86_64 code needs the 64bit feature even for 32-bit-only CPUs */
    bool x64 = strncmp(cg->triple, "x86_64", 6) == 0;
    cg->features = LLVMCreateMessage(x64 ? "+64bit" : "");
  } else if (host || same_arch(cg->triple)) {
    cg->cpu = LLVMGetHostCPUName();
    cg->features = LLVMGetHostCPUFeatures();
  } else {
    cg->cpu = LLVMCreateMessage("generic");
    cg->features = LLVMCreateMessage("");
  }
  return !o || !o->mattr || add_mattr(cg, o->mattr);
}

/* The instruction set extensions the runtime can check at run time
 * (runtime/core/cpu.c, the same names); Advanced SIMD is baseline on
 * AArch64. Other targets record none. */
static const char *const x86_checked[] = {
    "sse3", "pclmul", "ssse3", "fma", "cx16", "sse4.1", "sse4.2", "movbe",
    "popcnt", "aes", "xsave", "avx", "f16c", "bmi", "avx2", "bmi2",
    "avx512f", "avx512dq", "adx", "avx512ifma", "avx512cd", "sha",
    "avx512bw", "avx512vl", "avx512vbmi", "avx512vbmi2", "gfni", "vaes",
    "vpclmulqdq", "avx512vnni", "avx512bitalg", "avx512vpopcntdq",
    "avx512fp16", "avxvnni", "avx512bf16", "lzcnt", NULL};
static const char *const a64_checked[] = {"fullfp16", "dotprod", "sve",
                                          "sve2", "i8mm", "bf16", NULL};

/* cg->cpu_needs: the checked extensions the target machine enables
 * (its CPU's implied ones included: target_features.cpp), comma
 * separated; "" when the code needs none beyond the baseline. */
static void pick_cpu_needs(Cg *cg) {
  const char *const *tab = strncmp(cg->triple, "x86_64", 6) == 0 ? x86_checked
                           : strncmp(cg->triple, "aarch64", 7) == 0
                               ? a64_checked
                               : NULL;
  size_t len = 1;
  for (int i = 0; tab && tab[i]; i++) len += strlen(tab[i]) + 1;
  char *s = arena_alloc(cg->ctx->arena, len), *p = s;
  *s = 0;
  for (int i = 0; tab && tab[i]; i++)
    if (cg_tm_has_feature(cg->tm, tab[i]))
      p += sprintf(p, "%s%s", p == s ? "" : ",", tab[i]);
  cg->cpu_needs = s;
}

/* An out-of-memory unwind disposes the LLVM objects; after an LLVM
 * fatal error they are left to the exiting process. */
static void cg_unwind(void *cg, bool fatal) {
  if (!fatal) cg_free(cg);
}

/* LLVM's own diagnostics (a backend error such as an unsupported call
 * on BPF). Without a handler LLVM prints them and calls exit(1) on an
 * error, skipping the removal of staged files; here an error becomes a
 * diagnostic on the Ctx (write_files then stages nothing) and a warning
 * is printed. The message is copied out before the arena allocates. */
static void llvm_diag(LLVMDiagnosticInfoRef di, void *arg) {
  Cg *cg = arg;
  LLVMDiagnosticSeverity sev = LLVMGetDiagInfoSeverity(di);
  if (sev != LLVMDSError && sev != LLVMDSWarning) return;
  char buf[1024], *msg = LLVMGetDiagInfoDescription(di);
  snprintf(buf, sizeof buf, "%s", msg);
  LLVMDisposeMessage(msg);
  for (size_t n = strlen(buf); n && buf[n - 1] == '\n';) buf[--n] = 0;
  if (sev == LLVMDSError) {
    cg->failed = true;
    diag_error(cg->ctx, (Loc){0, 0}, "codegen: LLVM: %s", buf);
  } else if (cg->ctx->diag_out) {
    fprintf(cg->ctx->diag_out, "%s: warning: codegen: LLVM: %s\n",
            cg->ctx->file, buf);
  }
}

Cg *cg_new(Ctx *ctx, Unit *u, const char *module_name) {
  init_targets();
  Cg *cg = arena_alloc(ctx->arena, sizeof *cg);
  ctx_defer(ctx, cg_unwind, cg); /* before any LLVM object exists */
  cg->ctx = ctx;
  cg->u = u;
  const Options *o = u ? u->opt : NULL;
  cg->opt_level = o ? o->opt_level : 2;
  if (cg->opt_level < 0 || cg->opt_level > 3) cg->opt_level = 2;
  LLVMTargetRef t;
  if (!pick_target(cg, o, &t)) {
    cg_free(cg);
    return NULL;
  }
  LLVMCodeGenOptLevel lvl = cg->opt_level == 0   ? LLVMCodeGenLevelNone
                            : cg->opt_level == 1 ? LLVMCodeGenLevelLess
                            : cg->opt_level == 2 ? LLVMCodeGenLevelDefault
                                                 : LLVMCodeGenLevelAggressive;
  cg->tm = LLVMCreateTargetMachine(t, cg->triple, cg->cpu, cg->features, lvl,
                                   LLVMRelocPIC, LLVMCodeModelDefault);
  if (!cg->tm) {
    diag_error(ctx, (Loc){0, 0}, "codegen: cannot create a target machine "
               "for '%s' (cpu '%s')", cg->triple, cg->cpu);
    cg_free(cg);
    return NULL;
  }
  cg->avx512 = cg_tm_has_feature(cg->tm, "avx512f");
  if (!strncmp(cg->triple, "x86_64", 6))
    cg->fma = cg_tm_has_feature(cg->tm, "fma");
  else /* FMA is baseline on AArch64 and PTX */
    cg->fma = !strncmp(cg->triple, "aarch64", 7) ||
              !strncmp(cg->triple, "nvptx", 5);
  pick_cpu_needs(cg);
  cg->lc = LLVMContextCreate();
  LLVMContextSetDiagnosticHandler(cg->lc, llvm_diag, cg);
  LLVMContextSetDiscardValueNames(cg->lc, 1); /* less memory and time */
  cg->mod = LLVMModuleCreateWithNameInContext(module_name, cg->lc);
  cg->b = LLVMCreateBuilderInContext(cg->lc);
  cg->td = LLVMCreateTargetDataLayout(cg->tm);
  LLVMSetModuleDataLayout(cg->mod, cg->td);
  LLVMSetTarget(cg->mod, cg->triple);
  init_types(cg);
  return cg;
}

void cg_free(Cg *cg) {
  if (!cg || !cg->ctx) return; /* NULL, or disposed already */
  ctx_undefer(cg->ctx, cg_unwind, cg);
  if (cg->b) LLVMDisposeBuilder(cg->b);
  if (cg->mod) LLVMDisposeModule(cg->mod);
  if (cg->td) LLVMDisposeTargetData(cg->td);
  if (cg->tm) LLVMDisposeTargetMachine(cg->tm);
  if (cg->lc) LLVMContextDispose(cg->lc);
  LLVMDisposeMessage(cg->triple);
  LLVMDisposeMessage(cg->cpu);
  LLVMDisposeMessage(cg->features);
  memset(cg, 0, sizeof *cg); /* arena memory: disposed, not freed */
}

static bool is_x86(const Cg *cg) {
  return strncmp(cg->triple, "x86_64", 6) == 0 ||
         strncmp(cg->triple, "i386", 4) == 0 ||
         strncmp(cg->triple, "i686", 4) == 0;
}

static void str_attr(Cg *cg, LLVMValueRef fn, const char *k, const char *v) {
  LLVMAttributeRef a = LLVMCreateStringAttribute(
      cg->lc, k, (unsigned)strlen(k), v, (unsigned)strlen(v));
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, a);
}

static void enum_attr(Cg *cg, LLVMValueRef fn, unsigned idx,
                      const char *name) {
  unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(cg->lc, k, 0));
}

/* The exported functions that run before the CPU check: compiled for the
 * architecture's baseline, so they cannot fault on an older CPU. */
void cg_fn_attrs_baseline(Cg *cg, LLVMValueRef fn) {
  bool x64 = strncmp(cg->triple, "x86_64", 6) == 0;
  str_attr(cg, fn, "target-cpu", x64 ? "x86-64" : "generic");
  str_attr(cg, fn, "target-features", x64 ? "+64bit" : "");
  enum_attr(cg, fn, LLVMAttributeFunctionIndex, "nounwind");
}

void cg_fn_attrs(Cg *cg, LLVMValueRef fn) {
  str_attr(cg, fn, "target-cpu", cg->cpu);
  if (cg->features[0]) str_attr(cg, fn, "target-features", cg->features);
  if (is_x86(cg)) str_attr(cg, fn, "prefer-vector-width", "512");
  enum_attr(cg, fn, LLVMAttributeFunctionIndex, "nounwind");
}
