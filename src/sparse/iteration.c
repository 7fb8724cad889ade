/*
 * Sparse iterations (tex_sp_iter_new, tex_sp_iteration): a coordinate-space
 * body over sparse axes, scheduled in stage I (tex_sp_reorder: the loop
 * order; tex_sp_iter_rows: how a fused loop finds its rows), then lowered
 * (tex_sp_iter_lower) to an ordinary compute over position space, which
 * every schedule primitive then applies to.
 *
 * The spatial axes are visited in the given order, which is the output's
 * layout, then the reduction axes in the loop order (each after its parent):
 *   - spatial, dense output: a dense-fixed root becomes a data-parallel axis
 *     of its length (position = coordinate);
 *   - spatial, sparse output (out's axes: a root I and a variable child J):
 *     I and J are fused into one data-parallel axis over J's positions;
 *     I's coordinate is read from tex_sp_rows(J), or found by a binary
 *     search of J's indptr in the kernel (search.c) (sparse_fuse);
 *   - reduction: a reduce axis over the positions under its parent's
 *     position (position.c); a variable kind's extent reads indptr at the
 *     parent's position, so it is a ragged axis (ir: texi_ragged_axis)
 *     and stays inside the spatial axes it reads.
 * The body is then rewritten over these positions (texi_sp_bind) and summed
 * over the reduce axes; the compute's first loop order (texi_op.leaf_order)
 * is the iteration's loop order. A fixed reduction axis may sit under
 * another reduction axis (a sparse convolution's kernel offset, one per
 * pair of input and output sites: its extent is constant, only its base
 * reads the parent's position). Not handled here (TEX_EINVAL naming the
 * axis): a variable reduction axis under another reduction axis, a spatial
 * axis of a dense output that is not a dense-fixed root, sparse outputs of
 * other shapes.
 */
#include "sparse/sparse.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    tex_ctx *ctx;
    const char *call; /* the public function, for messages */
    const char *name;
    int n;
    tex_sp_axis *const *axes;
    const char *kinds;
    const tex_sp_iter *def; /* when lowering: the iteration (order, rows) */
    texi_sp_point *pt;
    tex_iter **spatial, **reduce;
    tex_iter **of; /* per axis: the compute axis it became (a fused pair: both), or NULL */
    int n_spatial, n_reduce;
} sp_iter;

static int fail_axis(sp_iter *it, const tex_sp_axis *a, const char *why)
{
    return texi_error(it->ctx, TEX_EINVAL, "%s: iteration '%s', axis '%s': %s", it->call, it->name,
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
                          "%s: iteration '%s': kinds must have one 'S' or 'R' per axis (%d)",
                          it->call, it->name, it->n);
    for (int i = 0; i < it->n; i++) {
        const tex_sp_axis *a = it->axes[i];
        if (!a) {
            texi_error_null_operand(it->ctx, it->call, "axis");
            return TEX_EMISUSE;
        }
        if (a->ctx != it->ctx)
            return texi_error(it->ctx, TEX_EMISUSE, "%s: axis '%s' comes from another context",
                              it->call, a->name);
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
    bool fixed = a->kind == TEXI_SP_DENSE_FIXED || a->kind == TEXI_SP_SPARSE_FIXED;
    if (p >= 0 && it->kinds[p] == 'R' && !fixed)
        return fail_axis(it, a,
                         "a variable reduction axis under another reduction axis is not supported "
                         "(its extent would read that axis's position)");
    tex_expr *q = p >= 0 ? it->pt[p].pos : NULL;
    tex_expr *ext = texi_sp_extent(a, q), *base = texi_sp_base(a, q);
    if (!ext || !base)
        return TEX_ENOMEM;
    bool ragged = a->kind == TEXI_SP_DENSE_VARIABLE || a->kind == TEXI_SP_SPARSE_VARIABLE;
    tex_iter *iv =
        ragged ? texi_ragged_axis(it->ctx, a->name, ext) : tex_reduce_axis(it->ctx, a->name, ext);
    TEXI_TRY(add_iter(it->ctx, &it->reduce, &it->n_reduce, iv));
    it->of[i] = iv;
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
    it->of[i] = iv;
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
    bool search = it->def->rows == TEX_SP_ROWS_SEARCH;
    tex_tensor *rows = search ? NULL : tex_sp_rows(J);
    TEXI_TRY(add_iter(it->ctx, &it->spatial, &it->n_spatial, iv));
    if (!search && !rows)
        return tex_errcode(it->ctx);
    it->of[ii] = it->of[ij] = iv;
    it->pt[ij].pos = tex_iv(iv);
    it->pt[ii].pos = it->pt[ii].coord =
        search ? texi_sp_row_of(J, tex_iv(iv)) : TEX_AT(rows, tex_iv(iv));
    if (!it->pt[ii].pos)
        return TEX_ENOMEM;
    it->pt[ij].coord = texi_sp_coord_at(J, it->pt[ij].pos, texi_sp_base(J, it->pt[ii].pos));
    return it->pt[ij].coord ? 0 : TEX_ENOMEM;
}

/* The spatial axes in the given order (the output's layout), then the
 * reduction axes in the loop order. */
static int position_space(sp_iter *it, const tex_sp_buffer *out)
{
    if (out)
        TEXI_TRY(fused_spatial(it, out));
    for (int i = 0; i < it->n && !out; i++)
        if (it->kinds[i] == 'S')
            TEXI_TRY(dense_spatial(it, i));
    for (int k = 0; k < it->n; k++)
        if (it->kinds[it->def->order[k]] == 'R')
            TEXI_TRY(reduce_axis(it, it->def->order[k]));
    return 0;
}

/* The compute's axes in the loop order tex_sp_reorder set (a fused pair
 * once), or NULL without one or when it is the default order (data-parallel
 * axes, then reduce axes). */
static tex_iter **leaf_order(sp_iter *it)
{
    if (!it->def->reordered)
        return NULL;
    int n = it->n_spatial + it->n_reduce, k = 0;
    tex_iter **order = texi_alloc(it->ctx, sizeof *order * (size_t)n, "a sparse iteration");
    bool moved = false;
    for (int j = 0; order && j < it->n; j++) {
        tex_iter *iv = it->of[it->def->order[j]];
        if (k && order[k - 1] == iv)
            continue; /* the fused pair's second axis */
        moved |= k < it->n_spatial ? iv != it->spatial[k] : iv != it->reduce[k - it->n_spatial];
        order[k++] = iv;
    }
    return moved ? order : NULL;
}

/* tex_sp_iter_new for `call`. */
static tex_sp_iter *iter_new(tex_ctx *ctx, const char *call, const char *name, int n,
                             tex_sp_axis *const axes[], const char *kinds, tex_sp_buffer *out,
                             tex_expr *body)
{
    if (!ctx)
        return NULL;
    if (!body) {
        texi_error_null_operand(ctx, call, "body");
        return NULL;
    }
    if (!name || !*name || n < 1 || !axes)
        return texi_error(ctx, TEX_EINVAL, "%s: needs a name and at least one axis", call), NULL;
    if (body->ctx != ctx || (out && out->ctx != ctx))
        return texi_error(ctx, TEX_EMISUSE, "%s: iteration '%s': operands of another context", call,
                          name),
               NULL;
    sp_iter chk = {ctx, call, name, n, axes, kinds, NULL, NULL, NULL, NULL, NULL, 0, 0};
    if (check_axes(&chk) < 0)
        return NULL;
    tex_sp_iter *it = texi_alloc(ctx, sizeof *it, "a sparse iteration");
    tex_sp_axis **copy = texi_alloc(ctx, sizeof *copy * (size_t)n, "a sparse iteration");
    int *order = texi_alloc(ctx, sizeof *order * (size_t)n, "a sparse iteration");
    if (!it || !copy || !order || !(it->name = texi_strdup(ctx, name)) ||
        !(it->kinds = texi_strdup(ctx, kinds)))
        return NULL;
    for (int i = 0; i < n; i++) {
        copy[i] = axes[i];
        order[i] = i;
    }
    it->ctx = ctx;
    it->n = n;
    it->axes = copy;
    it->out = out;
    it->body = body;
    it->order = order;
    it->rows = TEX_SP_ROWS_ARRAY;
    return it;
}

tex_sp_iter *tex_sp_iter_new(tex_ctx *ctx, const char *name, int n, tex_sp_axis *const axes[],
                             const char *kinds, tex_sp_buffer *out, tex_expr *body)
{
    return iter_new(ctx, "tex_sp_iter_new", name, n, axes, kinds, out, body);
}

int tex_sp_iter_rows(tex_sp_iter *it, tex_sp_rows_mode mode)
{
    if (!it)
        return TEX_EMISUSE;
    if (mode != TEX_SP_ROWS_ARRAY && mode != TEX_SP_ROWS_SEARCH)
        return texi_error(it->ctx, TEX_EINVAL, "tex_sp_iter_rows: iteration '%s': unknown mode %d",
                          it->name, (int)mode);
    if (!it->out)
        return texi_error(it->ctx, TEX_EINVAL,
                          "tex_sp_iter_rows: iteration '%s' has a dense output (no fused loop "
                          "over non-zeros whose rows are needed)",
                          it->name);
    it->rows = mode;
    return 0;
}

/* Index of axis a in it's axes, or -1. */
static int index_of(const tex_sp_iter *it, const tex_sp_axis *a)
{
    for (int i = 0; i < it->n; i++)
        if (it->axes[i] == a)
            return i;
    return -1;
}

/* Checks order[0..n) as a loop order of it; fills idx with axis indices. */
static int check_order(tex_sp_iter *it, int n, tex_sp_axis *const order[], int idx[])
{
    static const char call[] = "tex_sp_reorder";
    if (n != it->n || !order)
        return texi_error(it->ctx, TEX_EINVAL,
                          "%s: iteration '%s' has %d axes; the order names %d (every axis once)",
                          call, it->name, it->n, order ? n : 0);
    for (int k = 0; k < n; k++) {
        const tex_sp_axis *a = order[k];
        if (!a)
            return texi_error(it->ctx, TEX_EMISUSE, "%s: iteration '%s': axis %d is NULL", call,
                              it->name, k);
        idx[k] = index_of(it, a);
        const char *why = idx[k] < 0 ? "it is not an axis of the iteration" : NULL;
        for (int j = 0; !why && j < k; j++)
            why = idx[j] == idx[k] ? "it is named twice" : NULL;
        bool parent_before = !a->parent || index_of(it, a->parent) < 0;
        for (int j = 0; !why && !parent_before && j < k; j++)
            parent_before = order[j] == a->parent;
        if (!why && !parent_before)
            why = "its parent must come before it";
        bool fused = it->out && it->out->n_axes == 2 && a == it->out->axes[1];
        if (!why && fused && (k == 0 || order[k - 1] != it->out->axes[0]))
            why = "the sparse output's axes are one fused loop: it must follow its parent at once";
        if (why)
            return texi_error(it->ctx, TEX_EINVAL, "%s: iteration '%s', axis '%s': %s", call,
                              it->name, a->name, why);
    }
    return 0;
}

int tex_sp_reorder(tex_sp_iter *it, int n, tex_sp_axis *const order[])
{
    if (!it)
        return TEX_EMISUSE;
    int *idx = texi_alloc(it->ctx, sizeof *idx * (size_t)it->n, "a sparse iteration");
    if (!idx)
        return TEX_ENOMEM;
    TEXI_TRY(check_order(it, n, order, idx));
    it->order = idx;
    it->reordered = true;
    return 0;
}

/* tex_sp_iter_lower for `call`. */
static tex_tensor *iter_lower(tex_sp_iter *it, const char *call)
{
    if (!it)
        return NULL;
    tex_ctx *ctx = it->ctx;
    sp_iter lw = {ctx,  call, it->name, it->n, it->axes, it->kinds, it,
                  NULL, NULL, NULL,     NULL,  0,        0};
    lw.pt = texi_alloc(ctx, sizeof *lw.pt * (size_t)it->n, "a sparse iteration");
    lw.of = texi_alloc(ctx, sizeof *lw.of * (size_t)it->n, "a sparse iteration");
    if (!lw.pt || !lw.of || position_space(&lw, it->out) < 0)
        return NULL;
    tex_expr *e = texi_sp_bind(ctx, call, it->n, it->axes, lw.pt, it->body);
    if (e && lw.n_reduce)
        e = tex_sum(e, lw.n_reduce, lw.reduce);
    if (it->out && e && e->dtype != it->out->dtype)
        e = tex_cast(it->out->dtype, e);
    tex_tensor *t =
        e ? tex_compute(ctx, it->out ? it->out->name : it->name, lw.n_spatial, lw.spatial, e)
          : NULL;
    if (t)
        t->op->leaf_order = leaf_order(&lw);
    return t;
}

tex_tensor *tex_sp_iter_lower(tex_sp_iter *it)
{
    return iter_lower(it, "tex_sp_iter_lower");
}

tex_tensor *tex_sp_iteration(tex_ctx *ctx, const char *name, int n, tex_sp_axis *const axes[],
                             const char *kinds, tex_sp_buffer *out, tex_expr *body)
{
    static const char call[] = "tex_sp_iteration";
    return iter_lower(iter_new(ctx, call, name, n, axes, kinds, out, body), call);
}
