/*
 * TEX_DUMP parsing (dump.h). Reads the environment on every call, so a
 * program may change it between builds; never allocates.
 */
#include "util/dump.h"

#include <stdlib.h>
#include <string.h>

bool texi_dump_wanted(const char *name)
{
    const char *list = getenv("TEX_DUMP");
    size_t len = strlen(name);
    while (list && *list) {
        size_t n = strcspn(list, ",");
        if ((n == 3 && strncmp(list, "all", 3) == 0) || (n == len && strncmp(list, name, n) == 0))
            return true;
        list += n + (list[n] == ',');
    }
    return false;
}
