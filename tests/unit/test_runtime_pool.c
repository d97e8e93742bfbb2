/* test_runtime_pool.c -- CUnit tests of the runtime thread pool:
 * rlx_parallel_for covers [0, n) exactly once with the documented static
 * chunks for many n / grain / thread counts, nested calls run serially,
 * concurrent callers from several user threads are safe, a forked
 * child can use the pool, workers run under the caller's MXCSR, and the
 * thread-count setting behaves as
 * documented: the default is the size of the CPU affinity set (checked
 * in a re-executed copy of this program pinned to one CPU).
 */
#include <CUnit/Basic.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/rlxrt.h"

typedef struct {
  atomic_int *hits;
  atomic_int calls;
  int64_t n, grain;
  atomic_int bad_chunk; /* a chunk smaller than grain (not the only) */
} Cover;

static void cover_task(void *ctx, int64_t begin, int64_t end)
{
  Cover *cv = ctx;
  atomic_fetch_add(&cv->calls, 1);
  if (end - begin < cv->grain && end - begin < cv->n)
    atomic_store(&cv->bad_chunk, 1);
  for (int64_t i = begin; i < end; i++)
    atomic_fetch_add(&cv->hits[i], 1);
}

static void check_cover(int64_t n, int64_t grain, int threads)
{
  Cover cv = {calloc((size_t)n + 1, sizeof(atomic_int)), 0, n,
              grain < 1 ? 1 : grain, 0};
  rlx_set_num_threads(threads);
  rlx_parallel_for(n, grain, cover_task, &cv);
  int ok = 1;
  for (int64_t i = 0; i < n; i++)
    ok &= atomic_load(&cv.hits[i]) == 1;
  CU_ASSERT(ok);
  CU_ASSERT(!atomic_load(&cv.bad_chunk));
  int64_t g = grain < 1 ? 1 : grain, chunks = n / g > 1 ? n / g : 1;
  if (chunks > threads)
    chunks = threads;
  CU_ASSERT(n <= 0 ? atomic_load(&cv.calls) == 0
                   : atomic_load(&cv.calls) == chunks);
  free(cv.hits);
}

static void test_cover(void)
{
  static const int64_t ns[] = {0, 1, 2, 3, 7, 64, 100, 1000, 4097};
  static const int64_t grains[] = {0, 1, 2, 5, 64, 1000, 5000};
  for (int t = 1; t <= 5; t++)
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
      for (size_t g = 0; g < sizeof grains / sizeof *grains; g++)
        check_cover(ns[i], grains[g], t);
  rlx_set_num_threads(0);
}

/* Chunk boundaries recorded per chunk start: must match i*q + min(i, r)
   for any thread count. */
typedef struct {
  int64_t ends[64];
} Bounds;

static void bounds_task(void *ctx, int64_t begin, int64_t end)
{
  Bounds *bd = ctx;
  bd->ends[begin] = end;
}

static void test_static_split(void)
{
  for (int t = 1; t <= 8; t++) {
    Bounds bd = {{0}};
    rlx_set_num_threads(t);
    rlx_parallel_for(23, 1, bounds_task, &bd);
    int64_t c = t < 23 ? t : 23, q = 23 / c, r = 23 % c, pos = 0;
    for (int64_t i = 0; i < c; i++) {
      int64_t next = pos + q + (i < r);
      CU_ASSERT_EQUAL(bd.ends[pos], next);
      pos = next;
    }
    CU_ASSERT_EQUAL(pos, 23);
  }
  rlx_set_num_threads(0);
}

static void inner_task(void *ctx, int64_t begin, int64_t end)
{
  atomic_int *sum = ctx;
  for (int64_t i = begin; i < end; i++)
    atomic_fetch_add(sum, 1);
}

static void outer_task(void *ctx, int64_t begin, int64_t end)
{
  for (int64_t i = begin; i < end; i++)
    rlx_parallel_for(100, 1, inner_task, ctx);
}

static void test_nested(void)
{
  for (int t = 1; t <= 4; t++) {
    atomic_int sum = 0;
    rlx_set_num_threads(t);
    rlx_parallel_for(37, 1, outer_task, &sum);
    CU_ASSERT_EQUAL(atomic_load(&sum), 3700);
  }
  rlx_set_num_threads(0);
}

static void *user_thread(void *arg)
{
  long bad = 0;
  for (int rep = 0; rep < 200; rep++) {
    atomic_int sum = 0;
    int64_t n = 1 + (rep * 37 + (long)(intptr_t)arg) % 900;
    rlx_parallel_for(n, 3, inner_task, &sum);
    bad += atomic_load(&sum) != n;
  }
  return (void *)bad;
}

static void test_concurrent_callers(void)
{
  pthread_t th[4];
  rlx_set_num_threads(3);
  for (intptr_t i = 0; i < 4; i++)
    CU_ASSERT_FATAL(pthread_create(&th[i], NULL, user_thread,
                                   (void *)i) == 0);
  for (int i = 0; i < 4; i++) {
    void *bad;
    pthread_join(th[i], &bad);
    CU_ASSERT_EQUAL((long)(intptr_t)bad, 0);
  }
  rlx_set_num_threads(0);
}

static void test_many_jobs(void)
{
  /* Many tiny jobs back to back exercise the wake / finish handshake. */
  rlx_set_num_threads(2);
  long bad = 0;
  for (int rep = 0; rep < 20000; rep++) {
    atomic_int sum = 0;
    rlx_parallel_for(2 + rep % 5, 1, inner_task, &sum);
    bad += atomic_load(&sum) != 2 + rep % 5;
  }
  CU_ASSERT_EQUAL(bad, 0);
  rlx_set_num_threads(0);
}

/* A forked child (which has no pool threads) can still use the pool. */
static void test_fork(void)
{
  atomic_int sum = 0;
  rlx_set_num_threads(3);
  rlx_parallel_for(300, 1, inner_task, &sum); /* workers exist now */
  pid_t pid = fork();
  CU_ASSERT_FATAL(pid >= 0);
  if (pid == 0) {
    atomic_int child_sum = 0;
    rlx_parallel_for(300, 1, inner_task, &child_sum);
    _exit(atomic_load(&child_sum) == 300 ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  rlx_set_num_threads(0);
}

#if defined(__x86_64__)
#include <xmmintrin.h>
static volatile float fp_a = 1e-30f, fp_b = 1e-10f;

static void fp_task(void *ctx, int64_t begin, int64_t end)
{
  float *out = ctx;
  usleep(2000); /* long enough that the workers take chunks too */
  for (int64_t i = begin; i < end; i++)
    out[i] = fp_a * fp_b; /* 1e-40: subnormal, 0 when flushed */
}

/* Workers run under the caller's MXCSR: with flush-to-zero set after
   they were created, every chunk flushes; after it is cleared, none. */
static void test_fp_env(void)
{
  float out[64];
  rlx_set_num_threads(4);
  rlx_parallel_for(64, 1, fp_task, out); /* workers exist now */
  unsigned csr = _mm_getcsr();
  _mm_setcsr(csr | 0x8040); /* FTZ | DAZ */
  rlx_parallel_for(64, 1, fp_task, out);
  _mm_setcsr(csr);
  int flushed = 0;
  for (int i = 0; i < 64; i++)
    flushed += out[i] == 0.0f;
  CU_ASSERT_EQUAL(flushed, 64);
  rlx_parallel_for(64, 1, fp_task, out);
  flushed = 0;
  for (int i = 0; i < 64; i++)
    flushed += out[i] == 0.0f;
  CU_ASSERT_EQUAL(flushed, 0);
  rlx_set_num_threads(0);
}
#endif

static void test_num_threads(void)
{
  rlx_set_num_threads(3);
  CU_ASSERT_EQUAL(rlx_get_num_threads(), 3);
  rlx_set_num_threads(100000);
  CU_ASSERT_EQUAL(rlx_get_num_threads(), 256);
  rlx_set_num_threads(0);
  CU_ASSERT(rlx_get_num_threads() >= 1);
  rlx_set_num_threads(-5);
  CU_ASSERT(rlx_get_num_threads() >= 1);
}

/* A child pinned to one CPU, RLX_NUM_THREADS unset, re-executes this
 * program with --print-threads: its default thread count must be 1. */
static void test_affinity_default(void)
{
  pid_t pid = fork();
  CU_ASSERT_FATAL(pid >= 0);
  if (pid == 0) {
    cpu_set_t all, one;
    CPU_ZERO(&one);
    if (sched_getaffinity(0, sizeof all, &all) != 0)
      _exit(99);
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &all)) {
        CPU_SET(c, &one);
        break;
      }
    if (sched_setaffinity(0, sizeof one, &one) != 0)
      _exit(98);
    unsetenv("RLX_NUM_THREADS");
    execl("/proc/self/exe", "test_runtime_pool", "--print-threads",
          (char *)NULL);
    _exit(97);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

int main(int argc, char **argv)
{
  if (argc > 1 && !strcmp(argv[1], "--print-threads"))
    return rlx_get_num_threads();
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite("runtime_pool", NULL, NULL);
  CU_add_test(s, "cover", test_cover);
  CU_add_test(s, "static_split", test_static_split);
  CU_add_test(s, "nested", test_nested);
  CU_add_test(s, "concurrent_callers", test_concurrent_callers);
  CU_add_test(s, "many_jobs", test_many_jobs);
  CU_add_test(s, "num_threads", test_num_threads);
#if defined(__x86_64__)
  CU_add_test(s, "fp_env", test_fp_env);
#endif
  /* qemu-user (RLX_TEST_EMULATED: the aarch64 tier, docs/testing.md)
     cannot fork a process that has threads (qemu 7.2 aborts in the
     child) nor exec /proc/self/exe (an aarch64 file to the host) */
  if (getenv("RLX_TEST_EMULATED")) {
    fprintf(stderr, "skip: fork, affinity_default (under an emulator)\n");
  } else {
    CU_add_test(s, "fork", test_fork);
    CU_add_test(s, "affinity_default", test_affinity_default);
  }
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  return fails != 0;
}
