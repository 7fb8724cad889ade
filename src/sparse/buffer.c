/*
 * Sparse buffers (tex_sp_buffer_new) and their reads (tex_sp_at). A buffer
 * is a chain of axes, root first, each the parent of the next; its storage
 * is one 1-D values array of the last axis's positions (tex_sp_values). A
 * read names the iteration axes whose coordinates it is taken at, one per
 * level: at the buffer's own axes the element is values[position of the
 * last axis], written with that axis's position variable, which
 * texi_sp_bind replaces (lowering 2); at other axes the positions are
 * searched for (search.c).
 */
#include "sparse/sparse.h"

tex_sp_buffer *tex_sp_buffer_new(tex_ctx *ctx, const char *name, tex_dtype t, int n,
                                 tex_sp_axis *const axes[])
{
    static const char call[] = "tex_sp_buffer_new";
    if (!ctx)
        return NULL;
    if (!name || !*name || n < 1 || !axes)
        return texi_error(ctx, TEX_EINVAL, "%s: needs a name and at least one axis", call), NULL;
    for (int i = 0; i < n; i++) {
        if (!axes[i]) {
            texi_error_null_operand(ctx, call, "axis");
            return NULL;
        }
        if (axes[i]->ctx != ctx)
            return texi_error(ctx, TEX_EMISUSE,
                              "%s: buffer '%s': axis '%s' comes from another "
                              "context",
                              call, name, axes[i]->name),
                   NULL;
        if (axes[i]->parent != (i ? axes[i - 1] : NULL))
            return texi_error(ctx, TEX_EINVAL,
                              "%s: buffer '%s': axis '%s' must have %s%s as its parent", call, name,
                              axes[i]->name, i ? "axis " : "no parent", i ? axes[i - 1]->name : ""),
                   NULL;
    }
    tex_sp_buffer *b = texi_alloc(ctx, sizeof *b, "a sparse buffer");
    tex_sp_axis **copy = texi_alloc(ctx, sizeof *copy * (size_t)n, "a sparse buffer");
    if (!b || !copy || !(b->name = texi_strdup(ctx, name)))
        return NULL;
    for (int i = 0; i < n; i++)
        copy[i] = axes[i];
    b->ctx = ctx;
    b->dtype = t;
    b->n_axes = n;
    b->axes = copy;
    return b;
}

tex_tensor *tex_sp_values(tex_sp_buffer *b)
{
    if (!b)
        return NULL;
    if (!b->values)
        b->values = tex_placeholder(b->ctx, b->name, b->dtype, 1, &b->axes[b->n_axes - 1]->n_pos);
    return b->values;
}

tex_expr *tex_sp_at(tex_sp_buffer *b, int n, tex_sp_axis *const axes[])
{
    if (!b)
        return NULL;
    if (n != b->n_axes || !axes)
        return texi_error(b->ctx, TEX_EINVAL,
                          "tex_sp_at: buffer '%s' has %d axes; it is read at %d (one per axis)",
                          b->name, b->n_axes, axes ? n : 0),
               NULL;
    for (int i = 0; i < n; i++) {
        if (!axes[i]) {
            texi_error_null_operand(b->ctx, "tex_sp_at", "axis");
            return NULL;
        }
        if (axes[i]->ctx != b->ctx)
            return texi_error(b->ctx, TEX_EMISUSE,
                              "tex_sp_at: buffer '%s': axis '%s' comes from another context",
                              b->name, axes[i]->name),
                   NULL;
    }
    return texi_sp_read_at(b, axes);
}
