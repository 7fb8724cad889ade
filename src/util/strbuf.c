/* Growable string (see strbuf.h); doubling growth, sticky out-of-memory. */
#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void texi_sb_init(texi_sb *sb)
{
    memset(sb, 0, sizeof *sb);
}

static bool reserve(texi_sb *sb, size_t extra)
{
    if (sb->oom)
        return false;
    if (sb->len + extra + 1 <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < sb->len + extra + 1)
        cap *= 2;
    char *p = realloc(sb->buf, cap);
    if (!p) {
        sb->oom = true;
        return false;
    }
    sb->buf = p;
    sb->cap = cap;
    return true;
}

void texi_sb_puts(texi_sb *sb, const char *s)
{
    size_t n = strlen(s);
    if (!reserve(sb, n))
        return;
    memcpy(sb->buf + sb->len, s, n + 1);
    sb->len += n;
}

void texi_sb_putc(texi_sb *sb, char c)
{
    if (!reserve(sb, 1))
        return;
    sb->buf[sb->len++] = c;
    sb->buf[sb->len] = '\0';
}

void texi_sb_vprintf(texi_sb *sb, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0 || !reserve(sb, (size_t)n))
        return;
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void texi_sb_printf(texi_sb *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    texi_sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

char *texi_sb_take(texi_sb *sb)
{
    char *s = NULL;
    if (!sb->oom)
        s = sb->buf ? sb->buf : calloc(1, 1);
    else
        free(sb->buf);
    texi_sb_init(sb);
    return s;
}

void texi_sb_fini(texi_sb *sb)
{
    free(sb->buf);
    texi_sb_init(sb);
}
