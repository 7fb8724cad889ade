/*
 * A kernel call's error message (backend.h): shared by the runtime's
 * argument checks and the backends' call paths, so every message starts
 * with the kernel's name the same way.
 */
#include "rt/backend.h"

#include <stdarg.h>
#include <stdio.h>

int texi_kernel_fail(tex_kernel *k, int code, const char *fmt, ...)
{
    int n = snprintf(k->errmsg, sizeof k->errmsg, "%s: ", k->name);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof k->errmsg)
        vsnprintf(k->errmsg + n, sizeof k->errmsg - (size_t)n, fmt, ap);
    va_end(ap);
    return code;
}
