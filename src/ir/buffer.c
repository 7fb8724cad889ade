/*
 * Flat buffers: what storage flattening turns tensors and realized regions
 * into. A buffer names its storage through a data variable (an i64 handle)
 * so that loads, stores and allocations refer to it by identity; passes that
 * copy a buffer keep its data variable, so texi_buffer_key identifies storage.
 */
#include "ir/ir.h"

#include <string.h>

texi_buffer *texi_buffer_new(tex_ctx *ctx, const char *name, tex_dtype t, enum texi_scope scope,
                             int ndim, tex_expr *const shape[])
{
    texi_buffer *b = texi_alloc(ctx, sizeof *b, "a buffer");
    if (!b || !(b->name = texi_strdup(ctx, name)))
        return NULL;
    b->shape = texi_alloc(ctx, sizeof *b->shape * (size_t)(ndim > 0 ? ndim : 1), "a shape");
    if (!b->shape)
        return NULL;
    if (ndim > 0)
        memcpy(b->shape, shape, sizeof *b->shape * (size_t)ndim);
    b->dtype = t;
    b->scope = scope;
    b->ndim = ndim;
    b->data = texi_var_new(ctx, name, TEX_I64);
    return b->data ? b : NULL;
}

const void *texi_buffer_key(const texi_buffer *b)
{
    return b->data ? (const void *)b->data : (const void *)b;
}

typedef struct {
    const void *key;
    bool found;
} store_search;

/* Visitor: a STORE to the key, or an INTRIN whose last argument (the
 * output tile) is the key's buffer. */
static bool store_step(const tex_stmt *s, void *ud)
{
    store_search *ss = ud;
    if (s->kind == TEXI_STMT_STORE)
        ss->found = ss->found || texi_buffer_key(s->u.store.buf) == ss->key;
    if (s->kind == TEXI_STMT_INTRIN) {
        int n = s->u.intrin.n_args;
        const texi_buffer *out = n ? s->u.intrin.args[n - 1].buf : NULL;
        ss->found = ss->found || (out && texi_buffer_key(out) == ss->key);
    }
    return !ss->found;
}

bool texi_stmt_stores_to(const tex_stmt *s, const texi_buffer *b)
{
    store_search ss = {texi_buffer_key(b), false};
    texi_stmt_visit(s, store_step, &ss);
    return ss.found;
}

typedef struct {
    const void *key;
    bool found;
} use_search;

/* Expression visitor: a LOAD or SEARCH of the key's storage, or its data
 * variable itself (an ATTR naming the storage). */
static bool use_expr_step(tex_expr *e, void *ud)
{
    use_search *us = ud;
    if ((e->kind == TEXI_EXPR_LOAD && texi_buffer_key(e->u.load.buf) == us->key) || e == us->key ||
        (e->kind == TEXI_EXPR_SEARCH && e->u.search.buf &&
         texi_buffer_key(e->u.search.buf) == us->key))
        us->found = true;
    return !us->found;
}

/* Statement visitor: a STORE to the key's storage, an INTRIN argument of
 * it, or one of the statement's own expressions using it. */
static bool use_stmt_step(const tex_stmt *s, void *ud)
{
    use_search *us = ud;
    if (s->kind == TEXI_STMT_STORE && texi_buffer_key(s->u.store.buf) == us->key)
        us->found = true;
    for (int i = 0; s->kind == TEXI_STMT_INTRIN && i < s->u.intrin.n_args; i++)
        us->found |= texi_buffer_key(s->u.intrin.args[i].buf) == us->key;
    if (!us->found)
        texi_stmt_visit_exprs(s, use_expr_step, us);
    return !us->found;
}

/* Statement visitor: use_stmt_step without the STOREs' destinations. */
static bool read_stmt_step(const tex_stmt *s, void *ud)
{
    use_search *us = ud;
    for (int i = 0; s->kind == TEXI_STMT_INTRIN && i < s->u.intrin.n_args; i++)
        us->found |= texi_buffer_key(s->u.intrin.args[i].buf) == us->key;
    if (!us->found)
        texi_stmt_visit_exprs(s, use_expr_step, us);
    return !us->found;
}

bool texi_stmt_reads_buffer(const tex_stmt *s, const texi_buffer *b)
{
    use_search us = {texi_buffer_key(b), false};
    texi_stmt_visit(s, read_stmt_step, &us);
    return us.found;
}

bool texi_expr_uses_buffer(tex_expr *e, const texi_buffer *b)
{
    use_search us = {texi_buffer_key(b), false};
    if (e)
        texi_expr_visit(e, use_expr_step, &us);
    return us.found;
}

bool texi_stmt_uses_buffer(const tex_stmt *s, const texi_buffer *b)
{
    use_search us = {texi_buffer_key(b), false};
    texi_stmt_visit(s, use_stmt_step, &us);
    return us.found;
}
