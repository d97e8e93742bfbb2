/* isa.h -- the kernel ISA levels shared by every runtime family.
 *
 * gemm.c picks one ISA per process (CPU features, capped by RLX_ISA;
 * rlx_gemm_isa names it) and every family follows it: its per-ISA
 * kernel tables are indexed by rlx_isa_level().  A table whose ISA was
 * not compiled in (another architecture) has NULL kernels and the
 * family falls back to the portable one.
 */
#ifndef RLX_SIMD_ISA_H
#define RLX_SIMD_ISA_H

enum {
  RLX_ISA_SCALAR = 0, /* portable C */
  RLX_ISA_AVX2 = 1,   /* x86-64 AVX2 + FMA */
  RLX_ISA_AVX512 = 2, /* x86-64 AVX-512F */
  RLX_ISA_NEON = 3,   /* AArch64 Advanced SIMD */
  RLX_ISA_COUNT
};

/* The level of the ISA the GEMM dispatch chose (rlx_gemm_isa). */
int rlx_isa_level(void);

/* Whether the CPU has the AArch64 dot-product extension (SDOT/UDOT);
   0 elsewhere. */
int rlx_cpu_has_neon_dot(void);

/* Compiled for a 64-bit x86 with GCC or Clang: the AVX2 / AVX-512 files
   build their kernels (per-function target attributes). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RLX_NO_SIMD)
#define RLX_HAVE_X86_SIMD 1
#else
#define RLX_HAVE_X86_SIMD 0
#endif

/* Compiled for AArch64 (Advanced SIMD is architectural there). */
#if defined(__aarch64__) && !defined(RLX_NO_SIMD)
#define RLX_HAVE_NEON 1
#else
#define RLX_HAVE_NEON 0
#endif

#endif
