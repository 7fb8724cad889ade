/*
 * Flat buffers: what storage flattening turns tensors and realized regions
 * into. A buffer names its storage through a data variable (an i64 handle)
 * so that loads, stores and allocations refer to it by identity.
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
