/* cpu.c -- rlx_cpu_supports and rlx_cpu_check: does this CPU have the
 * instruction set extensions an object was compiled for?
 *
 * rlxc records in every object the extensions its code may use (the
 * header's E_CPU_FEATURES, LLVM feature names) and each entry point
 * calls rlx_cpu_check before its first run, so an object built for a
 * wider CPU returns RLX_ERR_CPU instead of dying on SIGILL.  x86-64:
 * CPUID bits, and for the AVX and AVX-512 classes also that the OS
 * saves their registers (XCR0); AArch64: the kernel's HWCAP bits.  A
 * name this table does not know counts as missing (an object from a
 * newer rlxc must not run on a guess).
 */
#include <stdio.h>
#include <string.h>

#include "runtime/rlxrt.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

enum { EAX, EBX, ECX, EDX };
enum { OS_NONE, OS_AVX, OS_AVX512 };

static const struct {
  const char *name;
  unsigned leaf, sub;
  int reg, bit, os;
} features[] = {
  {"sse3", 1, 0, ECX, 0, OS_NONE}, {"pclmul", 1, 0, ECX, 1, OS_NONE},
  {"ssse3", 1, 0, ECX, 9, OS_NONE}, {"fma", 1, 0, ECX, 12, OS_AVX},
  {"cx16", 1, 0, ECX, 13, OS_NONE}, {"sse4.1", 1, 0, ECX, 19, OS_NONE},
  {"sse4.2", 1, 0, ECX, 20, OS_NONE}, {"movbe", 1, 0, ECX, 22, OS_NONE},
  {"popcnt", 1, 0, ECX, 23, OS_NONE}, {"aes", 1, 0, ECX, 25, OS_NONE},
  {"xsave", 1, 0, ECX, 26, OS_NONE}, {"avx", 1, 0, ECX, 28, OS_AVX},
  {"f16c", 1, 0, ECX, 29, OS_AVX}, {"bmi", 7, 0, EBX, 3, OS_NONE},
  {"avx2", 7, 0, EBX, 5, OS_AVX}, {"bmi2", 7, 0, EBX, 8, OS_NONE},
  {"avx512f", 7, 0, EBX, 16, OS_AVX512},
  {"avx512dq", 7, 0, EBX, 17, OS_AVX512}, {"adx", 7, 0, EBX, 19, OS_NONE},
  {"avx512ifma", 7, 0, EBX, 21, OS_AVX512},
  {"avx512cd", 7, 0, EBX, 28, OS_AVX512}, {"sha", 7, 0, EBX, 29, OS_NONE},
  {"avx512bw", 7, 0, EBX, 30, OS_AVX512},
  {"avx512vl", 7, 0, EBX, 31, OS_AVX512},
  {"avx512vbmi", 7, 0, ECX, 1, OS_AVX512},
  {"avx512vbmi2", 7, 0, ECX, 6, OS_AVX512}, {"gfni", 7, 0, ECX, 8, OS_NONE},
  {"vaes", 7, 0, ECX, 9, OS_AVX}, {"vpclmulqdq", 7, 0, ECX, 10, OS_AVX},
  {"avx512vnni", 7, 0, ECX, 11, OS_AVX512},
  {"avx512bitalg", 7, 0, ECX, 12, OS_AVX512},
  {"avx512vpopcntdq", 7, 0, ECX, 14, OS_AVX512},
  {"avx512fp16", 7, 0, EDX, 23, OS_AVX512}, {"avxvnni", 7, 1, EAX, 4, OS_AVX},
  {"avx512bf16", 7, 1, EAX, 5, OS_AVX512},
  {"lzcnt", 0x80000001u, 0, ECX, 5, OS_NONE},
};

/* Register state the OS saves (XCR0), for the AVX classes. */
static int os_saves(int os)
{
  unsigned a, b, c, d;
  if (os == OS_NONE)
    return 1;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) /* OSXSAVE */
    return 0;
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  unsigned need = os == OS_AVX ? 0x6u : 0xe6u; /* SSE, AVX (+ k, zmm) */
  return (lo & need) == need;
}

static int has(const char *name, size_t len)
{
  for (size_t i = 0; i < sizeof features / sizeof features[0]; i++) {
    if (strlen(features[i].name) != len ||
        memcmp(features[i].name, name, len) != 0)
      continue;
    unsigned r[4];
    if (!__get_cpuid_count(features[i].leaf, features[i].sub, &r[EAX],
                           &r[EBX], &r[ECX], &r[EDX]))
      return 0;
    return (r[features[i].reg] >> features[i].bit & 1u) &&
           os_saves(features[i].os);
  }
  return 0;
}
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>

static const struct {
  const char *name;
  int hwcap2;
  unsigned long bit;
} features[] = {
  {"neon", 0, 1ul << 1},      {"fp-armv8", 0, 1ul << 0},
  {"fullfp16", 0, 1ul << 10}, {"dotprod", 0, 1ul << 20},
  {"sve", 0, 1ul << 22},      {"sve2", 1, 1ul << 1},
  {"i8mm", 1, 1ul << 13},     {"bf16", 1, 1ul << 14},
};

static int has(const char *name, size_t len)
{
  for (size_t i = 0; i < sizeof features / sizeof features[0]; i++)
    if (strlen(features[i].name) == len &&
        memcmp(features[i].name, name, len) == 0)
      return (getauxval(features[i].hwcap2 ? AT_HWCAP2 : AT_HWCAP) &
              features[i].bit) != 0;
  return 0;
}
#else
static int has(const char *name, size_t len)
{
  (void)name;
  (void)len;
  return 0;
}
#endif

int rlx_cpu_supports(const char *features_list, char *missing, size_t size)
{
  for (const char *p = features_list; p && *p;) {
    size_t len = strcspn(p, ",");
    if (len && !has(p, len)) {
      if (missing && size)
        snprintf(missing, size, "%.*s", (int)len, p);
      return 0;
    }
    p += len + (p[len] == ',');
  }
  if (missing && size)
    missing[0] = 0;
  return 1;
}

int rlx_cpu_check(int *state, const char *features_list, const char *entry)
{
  int s = __atomic_load_n(state, __ATOMIC_ACQUIRE);
  if (s == 0) {
    char miss[64];
    s = rlx_cpu_supports(features_list, miss, sizeof miss) ? 1 : 2;
    if (s == 2)
      fprintf(stderr, "rlxrt: %s: this CPU lacks '%s', which the object "
              "was compiled for; compile it for this CPU or an older one "
              "(rlxc --mcpu)\n", entry, miss);
    __atomic_store_n(state, s, __ATOMIC_RELEASE);
  }
  return s == 1 ? RLX_OK : RLX_ERR_CPU;
}
