/* arena.c: bump allocator owning all IR memory of one compilation.
 * Blocks are chained and freed together by arena_free(). Allocation
 * failure aborts through rlx_assert_fail (out of memory is not a user
 * error we can recover from inside a pass). */
#include "ir/ir.h"

#include <stdlib.h>
#include <string.h>

typedef struct Block {
  struct Block *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} Block;

struct Arena {
  Block *head;
  size_t total;
};

Arena *arena_new(void) {
  Arena *a = calloc(1, sizeof *a);
  RLX_ASSERT(a != NULL);
  return a;
}

void arena_free(Arena *a) {
  if (!a) return;
  for (Block *b = a->head, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  free(a);
}

static Block *new_block(Arena *a, size_t need) {
  size_t size = need > 60000 ? need : 60000;
  Block *b = malloc(sizeof *b + size);
  RLX_ASSERT(b != NULL);
  b->size = size;
  b->used = 0;
  b->next = a->head;
  a->head = b;
  return b;
}

void *arena_alloc(Arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  Block *b = a->head;
  if (!b || b->size - b->used < n) b = new_block(a, n);
  void *p = b->data + b->used;
  b->used += n;
  a->total += n;
  memset(p, 0, n);
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
