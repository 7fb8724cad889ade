/*
 * Sparse iterations (tex_sp_iteration): a coordinate-space body over
 * sparse axes lowered to an ordinary compute over position space, which
 * every schedule primitive then applies to.
 *
 * Axes are visited in the given order (each after its parent):
 *   - spatial, dense output: a dense-fixed root becomes a data-parallel axis
 *     of its length (position = coordinate);
 *   - spatial, sparse output (out's axes: a root I and a variable child J):
 *     I and J are fused into one data-parallel axis over J's positions;
 *     I's coordinate is read from tex_sp_rows(J) (sparse_fuse);
 *   - reduction: a reduce axis over the positions under its parent's
 *     position (position.c); a variable kind's extent reads indptr at the
 *     parent's position, so it is a ragged axis (ir: texi_ragged_axis)
 *     and stays inside the spatial axes it reads.
 * The body is then rewritten over these positions (texi_sp_bind) and summed
 * over the reduce axes. Not handled here (TEX_EINVAL naming the axis): a
 * reduction axis under another reduction axis, a spatial axis of a dense
 * output that is not a dense-fixed root, sparse outputs of other shapes.
 */
#include "sparse/sparse.h"

#include <stdio.h>
#include <string.h>

#define CALL "tex_sp_iteration"

typedef struct {
    tex_ctx *ctx;
    const char *name;
    int n;
    tex_sp_axis *const *axes;
    const char *kinds;
    texi_sp_point *pt;
    tex_iter **spatial, **reduce;
    int n_spatial, n_reduce;
} sp_iter;

static int fail_axis(sp_iter *it, const tex_sp_axis *a, const char *why)
{
    return texi_error(it->ctx, TEX_EINVAL, CALL ": iteration '%s', axis '%s': %s", it->name,
                      a->name, why);
}

/* Index of axis a among the iteration's first `before` axes, or -1. */
static int find_axis(const sp_iter *it, const tex_sp_axis *a, int before)
{
    for (int i = 0; i < before; i++)
        if (it->axes[i] == a)
            return i;
    return -1;
}

static int check_axes(sp_iter *it)
{
    if (!it->kinds || strlen(it->kinds) != (size_t)it->n)
        return texi_error(it->ctx, TEX_EINVAL,
                          CALL ": iteration '%s': kinds must have one 'S' or 'R' per axis (%d)",
                          it->name, it->n);
    for (int i = 0; i < it->n; i++) {
        const tex_sp_axis *a = it->axes[i];
        if (!a) {
            texi_error_null_operand(it->ctx, CALL, "axis");
            return TEX_EMISUSE;
        }
        if (a->ctx != it->ctx)
            return texi_error(it->ctx, TEX_EMISUSE, CALL ": axis '%s' comes from another context",
                              a->name);
        if (it->kinds[i] != 'S' && it->kinds[i] != 'R')
            return fail_axis(it, a, "its kind must be 'S' or 'R'");
        if (find_axis(it, a, i) >= 0)
            return fail_axis(it, a, "it is listed twice");
        if (a->parent && find_axis(it, a->parent, i) < 0)
            return fail_axis(it, a, "its parent must be listed before it");
    }
    return 0;
}

static int add_iter(tex_ctx *ctx, tex_iter ***list, int *n, tex_iter *iv)
{
    tex_iter **grown = texi_alloc(ctx, sizeof *grown * (size_t)(*n + 1), "a sparse iteration");
    if (!grown || !iv)
        return TEX_ENOMEM;
    for (int i = 0; i < *n; i++)
        grown[i] = (*list)[i];
    grown[(*n)++] = iv;
    *list = grown;
    return 0;
}

/* A reduction axis: positions under its parent's (or a root's). */
static int reduce_axis(sp_iter *it, int i)
{
    tex_sp_axis *a = it->axes[i];
    int p = a->parent ? find_axis(it, a->parent, i) : -1;
    if (p >= 0 && it->kinds[p] == 'R')
        return fail_axis(it, a, "a reduction axis under another reduction axis is not supported");
    tex_expr *q = p >= 0 ? it->pt[p].pos : NULL;
    tex_expr *ext = texi_sp_extent(a, q), *base = texi_sp_base(a, q);
    if (!ext || !base)
        return TEX_ENOMEM;
    bool ragged = a->kind == TEXI_SP_DENSE_VARIABLE || a->kind == TEXI_SP_SPARSE_VARIABLE;
    tex_iter *iv =
        ragged ? texi_ragged_axis(it->ctx, a->name, ext) : tex_reduce_axis(it->ctx, a->name, ext);
    TEXI_TRY(add_iter(it->ctx, &it->reduce, &it->n_reduce, iv));
    it->pt[i].pos = tex_add(base, tex_iv(iv));
    it->pt[i].coord = it->pt[i].pos ? texi_sp_coord_at(a, it->pt[i].pos, base) : NULL;
    return it->pt[i].coord ? 0 : TEX_ENOMEM;
}

/* A spatial axis of a dense output: a dense-fixed root. */
static int dense_spatial(sp_iter *it, int i)
{
    tex_sp_axis *a = it->axes[i];
    if (a->kind != TEXI_SP_DENSE_FIXED || a->parent)
        return fail_axis(it, a,
                         "a spatial axis of a dense output must be a dense-fixed root (give "
                         "the iteration a sparse output buffer)");
    tex_iter *iv = tex_axis(it->ctx, a->name, a->length);
    TEXI_TRY(add_iter(it->ctx, &it->spatial, &it->n_spatial, iv));
    it->pt[i].pos = it->pt[i].coord = tex_iv(iv);
    return 0;
}

/* The spatial axes of a sparse output (root I, variable child J) fused
 * into one axis over J's positions. */
static int fused_spatial(sp_iter *it, const tex_sp_buffer *out)
{
    tex_sp_axis *I = out->axes[0], *J = out->n_axes == 2 ? out->axes[1] : NULL;
    if (!J || !J->indptr)
        return fail_axis(it, out->axes[out->n_axes - 1],
                         "a sparse output must be over a root and a variable axis under it");
    int ii = find_axis(it, I, it->n), ij = find_axis(it, J, it->n);
    if (ii < 0 || ij < 0 || it->kinds[ii] != 'S' || it->kinds[ij] != 'S')
        return fail_axis(it, J, "the output buffer's axes must be the spatial axes");
    for (int i = 0; i < it->n; i++)
        if (it->kinds[i] == 'S' && i != ii && i != ij)
            return fail_axis(it, it->axes[i], "a spatial axis that is not the output's");
    char name[256];
    snprintf(name, sizeof name, "%s_%s", I->name, J->name);
    tex_iter *iv = tex_axis(it->ctx, name, J->nnz);
    tex_tensor *rows = tex_sp_rows(J);
    TEXI_TRY(add_iter(it->ctx, &it->spatial, &it->n_spatial, iv));
    if (!rows)
        return tex_errcode(it->ctx);
    it->pt[ij].pos = tex_iv(iv);
    it->pt[ii].pos = it->pt[ii].coord = TEX_AT(rows, tex_iv(iv));
    it->pt[ij].coord = texi_sp_coord_at(J, it->pt[ij].pos, texi_sp_base(J, it->pt[ii].pos));
    return it->pt[ij].coord ? 0 : TEX_ENOMEM;
}

static int position_space(sp_iter *it, const tex_sp_buffer *out)
{
    if (out)
        TEXI_TRY(fused_spatial(it, out));
    for (int i = 0; i < it->n; i++) {
        if (it->kinds[i] == 'R')
            TEXI_TRY(reduce_axis(it, i));
        else if (!out)
            TEXI_TRY(dense_spatial(it, i));
    }
    return 0;
}

tex_tensor *tex_sp_iteration(tex_ctx *ctx, const char *name, int n, tex_sp_axis *const axes[],
                             const char *kinds, tex_sp_buffer *out, tex_expr *body)
{
    if (!ctx)
        return NULL;
    if (!body) {
        texi_error_null_operand(ctx, CALL, "body");
        return NULL;
    }
    if (!name || !*name || n < 1 || !axes)
        return texi_error(ctx, TEX_EINVAL, CALL ": needs a name and at least one axis"), NULL;
    if (body->ctx != ctx || (out && out->ctx != ctx))
        return texi_error(ctx, TEX_EMISUSE, CALL ": iteration '%s': operands of another context",
                          name),
               NULL;
    sp_iter it = {ctx, name, n, axes, kinds, NULL, NULL, NULL, 0, 0};
    it.pt = texi_alloc(ctx, sizeof *it.pt * (size_t)n, "a sparse iteration");
    if (!it.pt || check_axes(&it) < 0 || position_space(&it, out) < 0)
        return NULL;
    tex_expr *e = texi_sp_bind(ctx, CALL, n, axes, it.pt, body);
    if (e && it.n_reduce)
        e = tex_sum(e, it.n_reduce, it.reduce);
    if (out && e && e->dtype != out->dtype)
        e = tex_cast(out->dtype, e);
    return e ? tex_compute(ctx, out ? out->name : name, it.n_spatial, it.spatial, e) : NULL;
}
