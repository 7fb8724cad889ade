/*
 * A growable, malloc-backed string: the printer, the code emitters and error
 * messages build text with it. Out of memory is sticky: later appends are
 * ignored and texi_sb_take returns NULL, so callers check once at the end.
 */
#ifndef TEX_UTIL_STRBUF_H
#define TEX_UTIL_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *buf;  /* NUL-terminated text, or NULL before the first append */
    size_t len; /* bytes used, without the NUL */
    size_t cap; /* bytes allocated */
    bool oom;   /* an allocation failed; the text is incomplete */
} texi_sb;

void texi_sb_init(texi_sb *sb);
void texi_sb_puts(texi_sb *sb, const char *s);
void texi_sb_putc(texi_sb *sb, char c);
void texi_sb_printf(texi_sb *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void texi_sb_vprintf(texi_sb *sb, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* The text (malloc'ed, the caller frees it), or NULL after an allocation
 * failure; the builder is empty afterwards either way. */
char *texi_sb_take(texi_sb *sb);

/* Frees the text. */
void texi_sb_fini(texi_sb *sb);

#endif
