/*
 * Coordinate translation (lowering 1) and buffer flattening (lowering 2).
 * Under its parent's position q, axis a's positions are [base, base +
 * extent):
 *   dense-fixed      base q * length (0 for a root), extent length
 *   sparse-fixed     base q * nnz_cols, extent nnz_cols
 *   variable kinds   base indptr[q], extent indptr[q + 1] - indptr[q]
 * and the coordinate at position pos is indices[pos] for the sparse kinds,
 * pos - base for the dense ones. texi_sp_bind rewrites a coordinate-space
 * body over these expressions.
 */
#include "sparse/sparse.h"

tex_expr *texi_sp_extent(const tex_sp_axis *a, tex_expr *q)
{
    switch (a->kind) {
    case TEXI_SP_DENSE_FIXED:
        return a->length;
    case TEXI_SP_SPARSE_FIXED:
        return a->nnz;
    case TEXI_SP_DENSE_VARIABLE:
    case TEXI_SP_SPARSE_VARIABLE:
        return tex_sub(TEX_AT(a->indptr, tex_add(q, tex_int(a->ctx, 1))), TEX_AT(a->indptr, q));
    }
    return NULL;
}

tex_expr *texi_sp_base(const tex_sp_axis *a, tex_expr *q)
{
    switch (a->kind) {
    case TEXI_SP_DENSE_FIXED:
        return q ? tex_mul(q, a->length) : tex_int(a->ctx, 0);
    case TEXI_SP_SPARSE_FIXED:
        return tex_mul(q, a->nnz);
    case TEXI_SP_DENSE_VARIABLE:
    case TEXI_SP_SPARSE_VARIABLE:
        return TEX_AT(a->indptr, q);
    }
    return NULL;
}

tex_expr *texi_sp_coord_at(const tex_sp_axis *a, tex_expr *pos, tex_expr *base)
{
    if (a->indices)
        return TEX_AT(a->indices, pos);
    return tex_sub(pos, base);
}

/* Visitor: the first tagged variable left (an axis outside the iteration). */
static bool find_tagged(tex_expr *e, void *ud)
{
    const tex_sp_axis **left = ud;
    if (e->kind == TEXI_EXPR_VAR && e->u.var.tag)
        *left = e->u.var.tag;
    return !*left;
}

tex_expr *texi_sp_bind(tex_ctx *ctx, const char *call, int n, tex_sp_axis *const axes[],
                       const texi_sp_point pt[], tex_expr *body)
{
    tex_expr **from = texi_alloc(ctx, sizeof *from * (size_t)(2 * n), "a sparse iteration");
    tex_expr **to = texi_alloc(ctx, sizeof *to * (size_t)(2 * n), "a sparse iteration");
    if (!from || !to)
        return NULL;
    for (int i = 0; i < n; i++) {
        from[2 * i] = axes[i]->coord;
        to[2 * i] = pt[i].coord;
        from[2 * i + 1] = axes[i]->pos;
        to[2 * i + 1] = pt[i].pos;
    }
    tex_expr *e = texi_substitute(body, 2 * n, from, to);
    const tex_sp_axis *left = NULL;
    if (e)
        texi_expr_visit(e, find_tagged, &left);
    if (left)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: the body uses axis '%s', which is not an axis of the iteration",
                          call, left->name),
               NULL;
    return e;
}
