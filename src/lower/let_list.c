/*
 * LET bindings collected while a pass rewrites one statement (guarded_loads'
 * hoisted loads, share_values' shared values): each value gets a fresh
 * variable, and the statement is wrapped in the LETs at the end.
 */
#include "lower/lower.h"

tex_expr *texi_let_list_add(tex_ctx *ctx, texi_let_list *l, const char *name, tex_dtype t,
                            tex_expr *value, const char *pass)
{
    tex_expr *var = value ? texi_var_new(ctx, name, t) : NULL;
    texi_let_binding *items =
        var ? texi_grow(ctx, l->items, l->n, &l->cap, sizeof *items, pass) : NULL;
    if (!items)
        return NULL;
    l->items = items;
    l->items[l->n++] = (texi_let_binding){var, value};
    return var;
}

tex_stmt *texi_let_list_wrap(tex_ctx *ctx, texi_let_list *l, tex_stmt *s, int mark)
{
    for (int i = l->n - 1; i >= mark && s; i--)
        s = texi_let_new(ctx, l->items[i].var, l->items[i].value, s);
    l->n = mark;
    return s;
}
