/* cg_unit.h: compiling a whole Unit (codegen.c) and its header text
 * (header.c). Internal to codegen/. */
#ifndef RLX_CG_UNIT_H
#define RLX_CG_UNIT_H

#include "codegen/cg.h"

typedef struct {
  Graph *g;
  const char *name;  /* C name: cname, cname_grad, ... */
  int64_t ws_bytes;
} CgEntry;

#define CG_MAX_ENTRIES 4

/* Build every entry of u into cg; e[] gets them. False on a diagnostic. */
bool cg_build_unit(Cg *cg, Unit *u, CgEntry *e, int *ne);
/* The header of cg's unit with entries e[0..ne). */
bool cg_header_text(FILE *f, const Cg *cg, const CgEntry *e, int ne);

#endif
