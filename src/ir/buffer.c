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

static bool stores_to_key(const tex_stmt *s, const void *key)
{
    if (!s)
        return false;
    switch (s->kind) {
    case TEXI_STMT_STORE:
        return texi_buffer_key(s->u.store.buf) == key;
    case TEXI_STMT_FOR:
        return stores_to_key(s->u.loop.body, key);
    case TEXI_STMT_ALLOCATE:
        return stores_to_key(s->u.alloc.body, key);
    case TEXI_STMT_REALIZE:
        return stores_to_key(s->u.realize.body, key);
    case TEXI_STMT_IF:
        return stores_to_key(s->u.ifs.then_s, key) || stores_to_key(s->u.ifs.else_s, key);
    case TEXI_STMT_LET:
        return stores_to_key(s->u.let.body, key);
    case TEXI_STMT_ATTR:
        return stores_to_key(s->u.attr.body, key);
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            if (stores_to_key(s->u.seq.items[i], key))
                return true;
        return false;
    case TEXI_STMT_INTRIN: { /* the last argument is the output tile */
        int n = s->u.intrin.n_args;
        const texi_buffer *out = n ? s->u.intrin.args[n - 1].buf : NULL;
        return out && texi_buffer_key(out) == key;
    }
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_KIND_COUNT:
        return false;
    }
    return false;
}

bool texi_stmt_stores_to(const tex_stmt *s, const texi_buffer *b)
{
    return stores_to_key(s, texi_buffer_key(b));
}
