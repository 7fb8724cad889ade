/*
 * The context: the arena that owns every IR object, and the error record.
 *
 * Error model (SQLite-like): the first failing call records a code and a
 * message; later failures do not overwrite it until tex_clear_error, so the
 * message a user reads names the root cause of a chain of NULL results. The
 * context struct itself comes from the user's allocator, so allocation-failure
 * tests cover it too. Nothing here prints.
 */
#include "ir/ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEX_STR_(x) #x
#define TEX_STR(x) TEX_STR_(x)

static void *malloc_alloc(void *user, size_t size)
{
    (void)user;
    return malloc(size);
}

static void malloc_free(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

tex_ctx *tex_ctx_new_ex(const tex_allocator *allocator)
{
    tex_allocator al = {sizeof al, malloc_alloc, malloc_free, NULL};
    if (allocator) {
        if (allocator->size < sizeof al || !allocator->alloc || !allocator->free)
            return NULL;
        al = *allocator;
    }
    tex_ctx *ctx = al.alloc(al.user, sizeof *ctx);
    if (!ctx)
        return NULL;
    memset(ctx, 0, sizeof *ctx);
    texi_arena_init(&ctx->arena, &al);
    return ctx;
}

tex_ctx *tex_ctx_new(void)
{
    return tex_ctx_new_ex(NULL);
}

void tex_ctx_free(tex_ctx *ctx)
{
    if (!ctx)
        return;
    tex_allocator al = ctx->arena.allocator;
    texi_arena_release(&ctx->arena);
    al.free(al.user, ctx);
}

int tex_errcode(const tex_ctx *ctx)
{
    return ctx ? ctx->errcode : TEX_EMISUSE;
}

const char *tex_errmsg(const tex_ctx *ctx)
{
    if (!ctx)
        return "tex: the context is NULL (tex_ctx_new failed or was not called)";
    return ctx->errcode ? ctx->errmsg : "";
}

void tex_clear_error(tex_ctx *ctx)
{
    if (!ctx)
        return;
    ctx->errcode = 0;
    ctx->errmsg[0] = '\0';
    ctx->warnmsg[0] = '\0';
}

void texi_clear_error(tex_ctx *ctx)
{
    ctx->errcode = 0;
    ctx->errmsg[0] = '\0';
}

const char *tex_warnmsg(const tex_ctx *ctx)
{
    return ctx ? ctx->warnmsg : "";
}

void texi_warn(tex_ctx *ctx, const char *fmt, ...)
{
    if (!ctx)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->warnmsg, sizeof ctx->warnmsg, fmt, ap);
    va_end(ap);
}

const char *tex_version(void)
{
    return TEX_STR(TEX_VERSION_MAJOR) "." TEX_STR(TEX_VERSION_MINOR) "." TEX_STR(TEX_VERSION_PATCH);
}

int texi_verror(tex_ctx *ctx, int code, const char *fmt, va_list ap)
{
    if (ctx && ctx->errcode == 0) {
        vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
        ctx->errcode = code;
    }
    return code;
}

int texi_error(tex_ctx *ctx, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    texi_verror(ctx, code, fmt, ap);
    va_end(ap);
    return code;
}

void *texi_alloc(tex_ctx *ctx, size_t size, const char *what)
{
    void *p = texi_arena_alloc(&ctx->arena, size);
    if (!p)
        texi_error(ctx, TEX_ENOMEM, "out of memory allocating %s (%zu bytes)", what, size);
    return p;
}

void *texi_grow(tex_ctx *ctx, void *items, int n, int *cap, size_t elem, const char *what)
{
    if (n < *cap)
        return items;
    int grown = *cap ? 2 * *cap : 16;
    void *p = texi_alloc(ctx, elem * (size_t)grown, what);
    if (!p)
        return NULL;
    if (n)
        memcpy(p, items, elem * (size_t)n);
    *cap = grown;
    return p;
}

char *texi_strdup(tex_ctx *ctx, const char *s)
{
    char *p = texi_arena_strdup(&ctx->arena, s);
    if (!p)
        texi_error(ctx, TEX_ENOMEM, "out of memory copying the name '%.64s'", s);
    return p;
}

void texi_error_null_operand(tex_ctx *ctx, const char *call, const char *operand)
{
    if (!ctx)
        return;
    if (ctx->errcode)
        texi_error(ctx, TEX_EMISUSE, "%s: operand %s is NULL", call, operand);
    else
        texi_error(ctx, TEX_EMISUSE, "%s: operand %s is NULL (no earlier error was recorded)", call,
                   operand);
}
