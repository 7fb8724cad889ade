/*
 * TEX_DUMP: the comma-separated list of names ("all" for every one) whose
 * debug dumps go to stderr. Lowering names its passes, the automatic
 * scheduler "fusion".
 */
#ifndef TEX_UTIL_DUMP_H
#define TEX_UTIL_DUMP_H

#include <stdbool.h>

/* Whether `name` is listed in TEX_DUMP (or it is "all"). */
bool texi_dump_wanted(const char *name);

#endif
