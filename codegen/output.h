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
 * REASON` (strerror), PATH being the output path.
 *
 * Owner: the OutSet owns the temporaries and their names until
 * out_finish; OutMem owns its buffer until out_mem_add.
 */
#ifndef RLX_OUTPUT_H
#define RLX_OUTPUT_H

#include "passes/passes.h"

#include <sys/types.h>

#define OUT_MAX 8

typedef struct {
  char *path;      /* final path (malloc'ed) */
  char *tmp;       /* staged temporary, or NULL: written in place */
  bool existed;    /* path existed before (a rename replaces it) */
} OutFile;

typedef struct OutSet {
  Ctx *ctx;
  mode_t mode;     /* 0666 & ~umask, like fopen */
  OutFile file[OUT_MAX];
  int n;
} OutSet;

void out_init(OutSet *s, Ctx *c);

/* Stage n bytes as the contents of path. False after a diagnostic. */
bool out_add(OutSet *s, const char *path, const void *bytes, size_t n);

/* ok: rename every staged file into place; else remove them all. True
 * when ok and every rename succeeded. */
bool out_finish(OutSet *s, bool ok);

/* Output produced through stdio: written to memory (open_memstream),
 * then staged with out_mem_add. */
typedef struct {
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

#endif
