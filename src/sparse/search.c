/*
 * Binary searches in sparse iterations (SEARCH nodes, ir.h), SparseTIR's
 * "binary search where a coordinate must be found":
 *   - the row of a position of a fused sparse output, found in indptr in the
 *     kernel (tex_sp_iter_rows TEX_SP_ROWS_SEARCH) instead of read from
 *     tex_sp_rows: upper_bound(indptr, 1, m + 1, p) - 1 is the r with
 *     indptr[r] <= p < indptr[r + 1];
 *   - a buffer read at axes other than its own (tex_sp_at): level by level,
 *     a sparse level's position is the one under its parent's position whose
 *     index is the iteration's coordinate (find over that row's indices,
 *     which must be sorted: the kernel checks it, rt/index_check.c), a dense
 *     level's is computed; the read is 0 where a level has no such
 *     coordinate. Each level is evaluated only where the levels above it
 *     exist (nested selects, which every evaluator and printer keeps lazy or
 *     makes safe), so no array is read outside its bounds.
 * Both are built in coordinate space, over the axes' coordinate and
 * position variables, which texi_sp_bind replaces (lowering 1).
 */
#include "sparse/sparse.h"

/* SEARCH op of placeholder a in [lo, hi) for v, over one integer dtype. */
static tex_expr *search(enum texi_search_op op, tex_tensor *a, tex_expr *lo, tex_expr *hi,
                        tex_expr *v)
{
    if (!lo || !hi || !v)
        return NULL;
    tex_dtype t = texi_dtype_promote(texi_dtype_promote(lo->dtype, hi->dtype), v->dtype);
    lo = texi_convert(lo, t);
    hi = texi_convert(hi, t);
    v = texi_convert(v, t);
    return lo && hi && v ? texi_search_new(op, a, NULL, lo, hi, v) : NULL;
}

tex_expr *texi_sp_row_of(const tex_sp_axis *J, tex_expr *pos)
{
    tex_expr *one = tex_int(J->ctx, 1);
    tex_expr *k = search(TEXI_SEARCH_UPPER, J->indptr, one, tex_add(J->parent->n_pos, one), pos);
    return tex_sub(k, one);
}

/* The position of coordinate c of level a under parent position q (NULL
 * for a root) and, in *ok, the condition that it exists (NULL: always). */
static tex_expr *level_pos(const tex_sp_axis *a, tex_expr *q, tex_expr *c, tex_expr **ok)
{
    tex_expr *base = texi_sp_base(a, q), *pos = NULL;
    switch (a->kind) {
    case TEXI_SP_DENSE_FIXED:
    case TEXI_SP_DENSE_VARIABLE:
        *ok = tex_lt(c, texi_sp_extent(a, q));
        return tex_add(base, c);
    case TEXI_SP_SPARSE_FIXED:
    case TEXI_SP_SPARSE_VARIABLE:
        pos = search(TEXI_SEARCH_FIND, a->indices, base, tex_add(base, texi_sp_extent(a, q)), c);
        *ok = tex_ge(pos, tex_int(a->ctx, 0));
        return pos;
    }
    return NULL;
}

/* An axis variable as i64: lowering 1 replaces it by a position-space
 * expression of any integer dtype, which arithmetic on it must not see. */
static tex_expr *wide(tex_expr *var)
{
    return tex_cast(TEX_I64, var);
}

/* Levels d.. of b under parent position q: nested selects down to the values. */
static tex_expr *read_levels(tex_sp_buffer *b, tex_sp_axis *const axes[], int d, tex_expr *q)
{
    if (d == b->n_axes)
        return TEX_AT(tex_sp_values(b), q);
    tex_expr *ok = NULL, *pos = level_pos(b->axes[d], q, wide(axes[d]->coord), &ok);
    tex_expr *inner = pos && ok ? read_levels(b, axes, d + 1, pos) : NULL;
    return tex_select(ok, inner, tex_const(b->ctx, b->dtype, 0));
}

tex_expr *texi_sp_read_at(tex_sp_buffer *b, tex_sp_axis *const axes[])
{
    int own = 0;
    while (own < b->n_axes && axes[own] == b->axes[own])
        own++;
    if (own == b->n_axes)
        return TEX_AT(tex_sp_values(b), b->axes[own - 1]->pos);
    return read_levels(b, axes, own, own ? wide(b->axes[own - 1]->pos) : NULL);
}
