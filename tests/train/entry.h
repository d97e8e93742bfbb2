/* entry.h: a compiled training object's entry and signature for the
 * drivers of tests/train (train_run, train_exact). */
#ifndef RLX_TESTS_TRAIN_ENTRY_H
#define RLX_TESTS_TRAIN_ENTRY_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>

#include "rlxrt.h"

typedef int (*EntryFn)(const void *const *, void *const *, void *);
typedef const rlx_signature *(*SigFn)(void);

/* dlopen path and find ENTRY and ENTRY_signature in it; false (with a
 * FAIL line on stdout) when either is missing. */
static inline bool load_entry(const char *path, const char *entry,
                              EntryFn *fn, SigFn *sf) {
  void *lib = dlopen(path, RTLD_NOW);
  if (!lib) {
    printf("FAIL: dlopen: %s\n", dlerror());
    return false;
  }
  char sname[512];
  snprintf(sname, sizeof sname, "%s_signature", entry);
  *fn = (EntryFn)dlsym(lib, entry);
  *sf = (SigFn)dlsym(lib, sname);
  if (!*fn || !*sf) {
    printf("FAIL: no %s or %s in %s\n", entry, sname, path);
    return false;
  }
  return true;
}

#endif
