/* thread_pool.c -- the runtime's one process-wide thread pool and parallel_for.
 *
 * The pool is created lazily (pthread_once) and never torn down.
 * Workers are spawned on demand up to rlx_get_num_threads() - 1 (the
 * caller is the remaining thread) and are never joined.  A job is
 * published under `lock` by bumping `gen` and broadcasting `wake`;
 * workers spin briefly on `gen`, then block on the condition variable.
 * Only workers with index < job participants take part; the others go
 * back to sleep, so lowering the thread count idles surplus workers.
 *
 * Invariants:
 *  - chunk boundaries depend only on n and the chunk count (chunk_begin);
 *    chunks are claimed dynamically, so fn must not care which thread
 *    runs a chunk.  Results are then identical for any thread count.
 *  - one job at a time: a user thread holds `use` (trylock) for the
 *    whole job; a concurrent caller that finds the pool busy, and any
 *    nested call (from inside a task: `in_task`), runs serially itself.
 *  - chunks are claimed from `claim`, which holds the job's gen beside
 *    the next chunk index: a claim succeeds only for the job it was
 *    made for, and each participant works from its own copy of the job
 *    (taken under `lock`).  So the caller returns as soon as every
 *    chunk is done (`finished`), without waiting for workers that took none:
 *    one that was descheduled (a busy core) wakes later, finds the job
 *    over and touches nothing of it.  Before, every invited worker had
 *    to check in, and a 2-thread step took 2.6x its 1-thread time while
 *    another process kept one of two cores busy.
 *  - fork: the child starts with no workers (pthread_atfork handler).
 *  - floating-point environment: each participant runs a job's chunks
 *    under the caller's control register (x86 MXCSR: rounding,
 *    flush-to-zero, denormals-are-zero; AArch64 FPCR), so a caller that
 *    flushes subnormals gets the same bits at any thread count.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/rlxrt.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

enum { MAX_THREADS = 256, SPIN_ITERS = 4000 }; /* ~0.1-0.5 ms of pause */
enum { CLAIM_BITS = 9 }; /* chunks <= MAX_THREADS < 2^CLAIM_BITS */

/* One job: what every participant copies (gen: the job's). */
typedef struct {
  rlx_task_fn fn;
  void *ctx;
  int64_t n, chunks;
  unsigned long long gen;
  unsigned long fpenv; /* the caller's FP control register */
} Job;

typedef struct {
  pthread_mutex_t use;    /* held by the user thread running a job */
  pthread_mutex_t lock;   /* guards the job fields and the counts */
  pthread_cond_t wake;    /* workers wait here for a new gen */
  pthread_cond_t done;    /* the caller waits here for the last chunk */
  atomic_ullong gen;      /* bumped once per job */
  Job job;                /* the current job */
  int participants;       /* workers (not the caller) invited */
  atomic_ullong claim;    /* gen << CLAIM_BITS | next unclaimed chunk */
  atomic_llong finished;  /* chunks done */
  int nworkers;
  int default_threads;
  unsigned long long start_gen[MAX_THREADS]; /* gen when spawned */
} Pool;

static Pool pool = {
  .use = PTHREAD_MUTEX_INITIALIZER,
  .lock = PTHREAD_MUTEX_INITIALIZER,
  .wake = PTHREAD_COND_INITIALIZER,
  .done = PTHREAD_COND_INITIALIZER,
};
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static atomic_int requested_threads; /* 0: use the default */
static _Thread_local int in_task;

/* The FP control register (fp_set: its control bits only). */
static unsigned long fp_get(void)
{
#if defined(__x86_64__) || defined(__i386__)
  return _mm_getcsr();
#elif defined(__aarch64__)
  unsigned long r;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(r));
  return r;
#else
  return 0;
#endif
}

static void fp_set(unsigned long v)
{
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr((unsigned)v & ~0x3Fu); /* not the sticky exception flags */
#elif defined(__aarch64__)
  __asm__ __volatile__("msr fpcr, %0" : : "r"(v));
#else
  (void)v;
#endif
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __asm__ __volatile__("pause");
#endif
}

static int env_threads(void)
{
  const char *s = getenv("RLX_NUM_THREADS");
  if (s && *s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*end == '\0' && v > 0)
      return v > MAX_THREADS ? MAX_THREADS : (int)v;
  }
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
#ifdef __linux__
  cpu_set_t set; /* the CPUs this process may run on (taskset, cgroups) */
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    cpus = CPU_COUNT(&set);
#endif
  if (cpus < 1)
    cpus = 1;
  return cpus > MAX_THREADS ? MAX_THREADS : (int)cpus;
}

/* In a forked child only the forking thread exists: forget the
   workers (new ones are spawned on demand) and reset the locks, which
   may have been held by threads that are gone. */
static void pool_after_fork(void)
{
  pthread_mutex_init(&pool.use, NULL);
  pthread_mutex_init(&pool.lock, NULL);
  pthread_cond_init(&pool.wake, NULL);
  pthread_cond_init(&pool.done, NULL);
  pool.nworkers = 0;
  pool.participants = 0;
  atomic_store(&pool.finished, 0);
}

static void pool_init(void)
{
  pool.default_threads = env_threads();
  pthread_atfork(NULL, NULL, pool_after_fork);
}

void rlx_set_num_threads(int n)
{
  atomic_store(&requested_threads, n <= 0 ? 0
               : n > MAX_THREADS ? MAX_THREADS : n);
}

int rlx_get_num_threads(void)
{
  pthread_once(&pool_once, pool_init);
  int n = atomic_load(&requested_threads);
  return n > 0 ? n : pool.default_threads;
}

/* First item of chunk i when [0, n) is cut into c nearly equal chunks
   (the first n % c chunks get one extra item). */
static int64_t chunk_begin(int64_t n, int64_t c, int64_t i)
{
  int64_t q = n / c, r = n % c;
  return i * q + (i < r ? i : r);
}

/* Claim and run chunks of job j while it has some left (a claim made
   for another job fails); the last chunk done wakes the caller. */
static void run_chunks(const Job *j)
{
  const unsigned long long mask = (1ull << CLAIM_BITS) - 1;
  unsigned long long v = atomic_load(&pool.claim);
  for (;;) {
    int64_t i = (int64_t)(v & mask);
    if (v >> CLAIM_BITS != j->gen || i >= j->chunks)
      return;
    if (!atomic_compare_exchange_weak(&pool.claim, &v, v + 1))
      continue; /* v reloaded */
    j->fn(j->ctx, chunk_begin(j->n, j->chunks, i),
          chunk_begin(j->n, j->chunks, i + 1));
    if (atomic_fetch_add(&pool.finished, 1) + 1 == j->chunks) {
      pthread_mutex_lock(&pool.lock);
      pthread_cond_signal(&pool.done);
      pthread_mutex_unlock(&pool.lock);
    }
    v = atomic_load(&pool.claim);
  }
}

/* Wait for gen to move past `seen`; returns whether worker `idx` takes
   part in the newest job, whose fields it then copies into j. */
static int wait_for_job(int idx, unsigned long long *seen, Job *j)
{
  for (int s = 0; s < SPIN_ITERS && atomic_load(&pool.gen) == *seen; s++)
    cpu_relax();
  pthread_mutex_lock(&pool.lock);
  while (atomic_load(&pool.gen) == *seen)
    pthread_cond_wait(&pool.wake, &pool.lock);
  *seen = atomic_load(&pool.gen);
  int join = idx < pool.participants;
  *j = pool.job;
  pthread_mutex_unlock(&pool.lock);
  return join;
}

static void *worker_main(void *arg)
{
  int idx = (int)(intptr_t)arg;
  pthread_mutex_lock(&pool.lock);
  unsigned long long seen = pool.start_gen[idx];
  pthread_mutex_unlock(&pool.lock);
  in_task = 1;
  for (;;) {
    Job j;
    if (!wait_for_job(idx, &seen, &j))
      continue;
    fp_set(j.fpenv);
    run_chunks(&j);
  }
  return NULL;
}

/* Spawn workers until there are `want`; returns how many exist.
   Called with pool.lock held. */
static int grow_workers(int want)
{
  while (pool.nworkers < want) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pool.start_gen[pool.nworkers] = atomic_load(&pool.gen);
    int rc = pthread_create(&t, &attr, worker_main,
                            (void *)(intptr_t)pool.nworkers);
    pthread_attr_destroy(&attr);
    if (rc != 0)
      break;
    pool.nworkers++;
  }
  return pool.nworkers;
}

static void run_serial(int64_t n, int64_t chunks, rlx_task_fn fn,
                       void *ctx)
{
  int saved = in_task;
  in_task = 1;
  for (int64_t i = 0; i < chunks; i++)
    fn(ctx, chunk_begin(n, chunks, i), chunk_begin(n, chunks, i + 1));
  in_task = saved;
}

/* Publish job j (its gen is set here) to `helpers` workers. */
static void publish_job(Job *j, int helpers)
{
  pthread_mutex_lock(&pool.lock);
  int have = grow_workers(helpers);
  pool.participants = have < helpers ? have : helpers;
  j->gen = atomic_fetch_add(&pool.gen, 1) + 1;
  pool.job = *j;
  atomic_store(&pool.finished, 0);
  atomic_store(&pool.claim, j->gen << CLAIM_BITS);
  pthread_cond_broadcast(&pool.wake);
  pthread_mutex_unlock(&pool.lock);
}

/* Until every chunk of the current job is done. */
static void wait_chunks(int64_t chunks)
{
  for (int s = 0; s < SPIN_ITERS; s++) {
    if (atomic_load(&pool.finished) == chunks)
      return;
    cpu_relax();
  }
  pthread_mutex_lock(&pool.lock);
  while (atomic_load(&pool.finished) != chunks)
    pthread_cond_wait(&pool.done, &pool.lock);
  pthread_mutex_unlock(&pool.lock);
}

void rlx_parallel_for(int64_t n, int64_t grain, rlx_task_fn fn, void *ctx)
{
  if (n <= 0)
    return;
  if (grain < 1)
    grain = 1;
  int64_t chunks = n / grain > 1 ? n / grain : 1;
  int threads = rlx_get_num_threads();
  if (chunks > threads)
    chunks = threads;
  if (chunks == 1 || in_task || pthread_mutex_trylock(&pool.use) != 0) {
    run_serial(n, chunks, fn, ctx);
    return;
  }
  Job j = {fn, ctx, n, chunks, 0, fp_get()};
  publish_job(&j, (int)chunks - 1);
  in_task = 1;
  run_chunks(&j);
  in_task = 0;
  wait_chunks(chunks);
  pthread_mutex_unlock(&pool.use);
}
