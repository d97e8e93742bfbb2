/* arena.c: the allocator owning all memory of one compilation.
 *
 * Bump allocations come from chained blocks and are freed together by
 * arena_free(). Blocks grow geometrically from 64 KiB to 4 MiB (a small
 * compile touches little memory; a large one makes few blocks); from
 * 2 MiB on they are mapped directly and asked to be backed by huge
 * pages (MADV_HUGEPAGE where THP is in madvise mode), because a 10^5-node
 * compile touches ~500 MB of arena and one page fault per 4 KiB cost
 * about a tenth of its time. Block memory is fresh (calloc or a new
 * mapping) and never reused, so it is already zero: arena_alloc does
 * not clear it again. Temporaries (arena_tmp_*) are
 * separate malloc blocks on a doubly linked list, so that they can be
 * released early in any order and arena_free() releases those left.
 *
 * Out of memory is never returned to a caller: a failed malloc (or an
 * injected failure) calls the owner's hook, which must not return (the
 * driver longjmps back to its Ctx, ir.h). Without a hook it is an
 * internal error, as before hooks existed.
 *
 * Fault injection (arena_fail_at) counts every allocation call, not
 * only those that need a new block, so that a test failing the nth
 * allocation for every n reaches every allocation site.
 */
#include "ir/ir.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__GLIBC__)
#include <execinfo.h>
#endif

typedef struct Block {
  struct Block *next;
  size_t size, used;
  size_t mapped; /* bytes mapped with mmap (0: from calloc) */
  _Alignas(16) unsigned char data[];
} Block;

typedef struct Tmp {
  struct Tmp *prev, *next;
  _Alignas(16) unsigned char data[];
} Tmp;

struct Arena {
  Block *head;
  Tmp *tmps;
  size_t total;
  size_t next_size; /* bytes of the next block (unless `need` is more) */
  void (*oom)(void *arg);
  void *oom_arg;
  long fail_at;  /* allocations until the injected failure; 0: none */
  long count;    /* allocation calls so far */
  FILE *trace;   /* arena_trace: one line per allocation call */
};

/* Largest request served: keeps size arithmetic free of overflow. */
#define ARENA_MAX (SIZE_MAX / 4)

Arena *arena_new(void) { return calloc(1, sizeof(Arena)); }

void arena_free(Arena *a) {
  if (!a) return;
  for (Block *b = a->head, *next; b; b = next) {
    next = b->next;
#if defined(__linux__)
    if (b->mapped) {
      munmap(b, b->mapped);
      continue;
    }
#endif
    free(b);
  }
  for (Tmp *t = a->tmps, *next; t; t = next) {
    next = t->next;
    free(t);
  }
  free(a);
}

void arena_on_oom(Arena *a, void (*hook)(void *arg), void *arg) {
  a->oom = hook;
  a->oom_arg = arg;
}

void arena_oom(Arena *a) {
  a->fail_at = 0;
  if (a->oom) a->oom(a->oom_arg);
  rlx_assert_fail(__FILE__, __LINE__, "out of memory");
}

void arena_fail_at(Arena *a, long n) { a->fail_at = n > 0 ? n : 0; }

long arena_count(const Arena *a) { return a->count; }

void arena_trace(Arena *a, FILE *f) { a->trace = f; }

/* Line n of the trace names the call stack of allocation n: a hash of
 * its innermost return addresses (0 where backtrace() is missing).
 * Addresses differ between runs; equal lines of one trace are one site. */
static void trace_alloc(FILE *f) {
  uint64_t h = 14695981039346656037u;
#if defined(__GLIBC__)
  void *bt[6];
  int k = backtrace(bt, 6);
  for (int i = 0; i < k; i++) h = (h ^ (uintptr_t)bt[i]) * 1099511628211u;
#endif
  fprintf(f, "%016llx\n", (unsigned long long)h);
}

/* Count one allocation of n bytes; out of memory when it is the
 * injected failure or too large to serve. */
static void count_alloc(Arena *a, size_t n) {
  a->count++;
  if (a->trace) trace_alloc(a->trace);
  if ((a->fail_at && --a->fail_at == 0) || n > ARENA_MAX) arena_oom(a);
}

#define BLOCK_MIN ((size_t)64 << 10)
#define BLOCK_MAX ((size_t)4 << 20)
#define HUGE_PAGE ((size_t)2 << 20)

/* A zeroed block of `bytes` (header included). */
static Block *zeroed_block(size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= HUGE_PAGE) {
    bytes = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    madvise(p, bytes, MADV_HUGEPAGE);
    Block *b = p;
    b->mapped = bytes;
    b->size = bytes - sizeof *b;
    return b;
  }
#endif
  Block *b = calloc(1, bytes);
  if (b) b->size = bytes - sizeof *b;
  return b;
}

static Block *new_block(Arena *a, size_t need) {
  size_t bytes = a->next_size ? a->next_size : BLOCK_MIN;
  a->next_size = bytes < BLOCK_MAX ? 2 * bytes : BLOCK_MAX;
  size_t size = bytes - sizeof(Block);
  if (size < need) size = need;
  Block *b = zeroed_block(sizeof *b + size);
  if (!b) arena_oom(a);
  b->used = 0;
  b->next = a->head;
  a->head = b;
  return b;
}

void *arena_alloc(Arena *a, size_t n) {
  count_alloc(a, n);
  n = (n + 15) & ~(size_t)15;
  Block *b = a->head;
  if (!b || b->size - b->used < n) b = new_block(a, n);
  void *p = b->data + b->used;
  b->used += n;
  a->total += n;
  return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
  char *p = arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *arena_strdup(Arena *a, const char *s) {
  return arena_strndup(a, s, strlen(s));
}

size_t arena_used(const Arena *a) { return a->total; }

void *arena_grow(Arena *a, void *old, int n, int *cap, size_t elem) {
  if (n < *cap) return old;
  int ncap = *cap ? *cap * 2 : 8;
  void *p = arena_alloc(a, (size_t)ncap * elem);
  if (old && n) memcpy(p, old, (size_t)n * elem);
  *cap = ncap;
  return p;
}

/* ---- temporaries ---- */

static void tmp_link(Arena *a, Tmp *t) {
  t->prev = NULL;
  t->next = a->tmps;
  if (a->tmps) a->tmps->prev = t;
  a->tmps = t;
}

static void tmp_unlink(Arena *a, Tmp *t) {
  if (t->prev) t->prev->next = t->next;
  else a->tmps = t->next;
  if (t->next) t->next->prev = t->prev;
}

static Tmp *tmp_of(void *p) {
  return (Tmp *)((unsigned char *)p - offsetof(Tmp, data));
}

void *arena_tmp_alloc(Arena *a, size_t n) {
  count_alloc(a, n);
  Tmp *t = calloc(1, sizeof *t + n);
  if (!t) arena_oom(a);
  tmp_link(a, t);
  return t->data;
}

void *arena_tmp_realloc(Arena *a, void *p, size_t n) {
  if (!p) return arena_tmp_alloc(a, n);
  count_alloc(a, n);
  Tmp *t = tmp_of(p);
  tmp_unlink(a, t);
  Tmp *nt = realloc(t, sizeof *nt + n);
  tmp_link(a, nt ? nt : t); /* on failure the old block stays owned */
  if (!nt) arena_oom(a);
  return nt->data;
}

void arena_tmp_free(Arena *a, void *p) {
  if (!p) return;
  Tmp *t = tmp_of(p);
  tmp_unlink(a, t);
  free(t);
}
