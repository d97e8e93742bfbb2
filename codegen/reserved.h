/* reserved.h: external names an entry point may not take (reserved.c).
 *
 * Generated code defines, for every entry E it emits (NAME, NAME_grad,
 * NAME_jvp, NAME_hvp), the symbols E and E_signature. None of them may
 * be a name the C standard library, POSIX, the linker or librlxrt
 * defines or imports: the program would call the entry point instead of
 * the library (or fail to link). The driver checks the C name with
 * cg_symbols_reserved before compiling; cg_build_unit checks every
 * symbol again before emitting it.
 */
#ifndef RLX_RESERVED_H
#define RLX_RESERVED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Is sym reserved? The sorted table, the reserved prefixes (rlx_,
 * pthread_, posix_, ...) and every identifier starting with '_'. */
bool cg_reserved(const char *sym);

/* The first reserved symbol among those the entry points named cname
 * would define (suffixes: "" always, then "_grad", "_jvp", "_hvp" when
 * grad, jvp, hvp; each also with "_signature"), copied into buf (cap
 * bytes, truncated); false if none is reserved. A cap of 64 or more is
 * exact even for longer names: every table name is shorter and the
 * other rules are prefixes. */
bool cg_symbols_reserved(const char *cname, bool grad, bool jvp, bool hvp,
                         char *buf, size_t cap);

/* Print the rules, one glob pattern per line (`rlx_*`, `_*`), then the
 * table, one name per line in strcmp order (`rlxc --list-reserved`). */
void cg_list_reserved(FILE *f);

#endif
