/*
 * Public queries for code built on the public API (src/ops, users' own
 * operator libraries): the context of a tensor, whether a size expression is
 * a known integer or provably equal to another, and recording an error in a
 * context the way tex's own calls do.
 *
 * The size queries simplify (simplify.c) without variable ranges, so they
 * decide what holds for every value of the symbolic sizes: N + 1 - 1 is N,
 * 2 * 3 is 6, but N and M are never equal unless they are the same variable.
 * Neither query records an error; an expression that cannot be decided
 * answers 0.
 */
#include "ir/ir.h"

#include <stdarg.h>
#include <stdio.h>

tex_ctx *tex_tensor_ctx(const tex_tensor *t)
{
    return t ? t->ctx : NULL;
}

int tex_expr_const_int(tex_expr *e, int64_t *value)
{
    if (!e || !texi_dtype_is_int(e->dtype))
        return 0;
    tex_expr *s = texi_simplify(e, 0, NULL);
    return s && texi_expr_is_int_const(s, value);
}

int tex_expr_equal(tex_expr *a, tex_expr *b)
{
    if (!a || !b || a->ctx != b->ctx || !texi_dtype_is_int(a->dtype) ||
        !texi_dtype_is_int(b->dtype))
        return 0;
    if (a == b || texi_expr_equal(a, b))
        return 1;
    tex_dtype t = tex_dtype_bytes(a->dtype) >= tex_dtype_bytes(b->dtype) ? a->dtype : b->dtype;
    tex_expr *ca = texi_convert(a, t), *cb = texi_convert(b, t);
    tex_expr *d = ca && cb ? texi_binary(TEXI_EXPR_SUB, ca, cb) : NULL;
    int64_t v;
    return d && tex_expr_const_int(d, &v) && v == 0;
}

int tex_set_error(tex_ctx *ctx, int code, const char *fmt, ...)
{
    if (!ctx)
        return TEX_EMISUSE;
    if (code >= 0 || !fmt)
        return texi_error(ctx, TEX_EMISUSE, "tex_set_error: code %d is not an error code%s", code,
                          fmt ? "" : " and the message is NULL");
    va_list ap;
    va_start(ap, fmt);
    texi_verror(ctx, code, fmt, ap);
    va_end(ap);
    return code;
}
