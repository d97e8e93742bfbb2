/* output.h: writing the output files of one run atomically (output.c).
 *
 * Every output (object, assembly, LLVM IR, header, the --emit=ir text)
 * is staged with out_add: its bytes go to a temporary file created with
 * mkstemp in the target's directory, written with write(2), fsync'ed and
 * closed, each step checked. out_finish renames all staged files into
 * place only when the whole run succeeded; on any error it removes every
 * temporary, and a file whose rename succeeded before a later rename
 * failed is removed again when it did not exist before. So a failing
 * run leaves no new file behind. A target that exists and is neither a
 * regular file nor a directory (/dev/null, a FIFO) is written in place.
 *
 * Errors are diagnostics on the Ctx in the form `PATH: error: ...:
 * REASON` (strerror), PATH being the output path. Out of memory (a
 * memory stream's error included) takes the arena's path (ir.h): the
 * OutSet is registered with ctx_defer from out_init to out_finish, and
 * the unwind closes an open OutMem and removes every temporary.
 *
 * Owner: the OutSet owns the temporaries until out_finish (their names
 * live in the Ctx arena); OutMem owns its buffer until out_mem_add.
 * An OutSet must stay in place (not be copied) while registered.
 */
#ifndef RLX_OUTPUT_H
#define RLX_OUTPUT_H

#include "passes/passes.h"

#include <sys/types.h>

#define OUT_MAX 8

typedef struct {
  char *path;      /* final path (arena) */
  char *tmp;       /* DIR/.rlxc-XXXXXX, then the temporary (arena) */
  bool staged;     /* tmp exists on disk, holding the contents */
  bool existed;    /* path existed before (a rename replaces it) */
} OutFile;

struct OutMem;
typedef struct OutSet {
  Ctx *ctx;
  mode_t mode;     /* 0666 & ~umask, like fopen */
  OutFile file[OUT_MAX];
  int n;
  struct OutMem *mem; /* open between out_mem_open and out_mem_add */
} OutSet;

void out_init(OutSet *s, Ctx *c);

/* Allocate what staging path needs (its names), so that out_add on it
 * allocates nothing: call it before holding memory an out-of-memory
 * unwind would not free (an LLVM buffer). */
void out_prepare(OutSet *s, const char *path);

/* Stage n bytes as the contents of path. False after a diagnostic. */
bool out_add(OutSet *s, const char *path, const void *bytes, size_t n);

/* ok: rename every staged file into place; else remove them all. True
 * when ok and every rename succeeded. */
bool out_finish(OutSet *s, bool ok);

/* Output produced through stdio: written to memory (open_memstream),
 * then staged with out_mem_add. */
typedef struct OutMem {
  FILE *f;
  char *buf;
  size_t len;
} OutMem;

/* Open m->f; false after a diagnostic. */
bool out_mem_open(OutSet *s, OutMem *m);

/* Close m and free its buffer; when ok, stage its bytes as path first.
 * A stream error is reported. True when ok and staged. */
bool out_mem_add(OutSet *s, OutMem *m, const char *path, bool ok);

/* Path of the output kind (EMIT_OBJ, EMIT_HEADER, EMIT_ASM, EMIT_LLVM)
 * for options o and C name cname (abi.md, Output files): with -o PATH
 * the object is PATH, the others replace its extension (.h, .s, .ll),
 * and a lone asm or llvm output without an object is PATH itself;
 * without -o, CNAME.o, CNAME.h, ... Malloc'ed; NULL when out of memory. */
char *out_path(const Options *o, const char *cname, unsigned kind);
/* The same in arena a (never NULL). */
char *out_path_in(Arena *a, const Options *o, const char *cname,
                  unsigned kind);

#endif
