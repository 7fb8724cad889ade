/*
 * Sparse axes (tex_sp_dense_fixed ... tex_sp_sparse_variable): the format
 * tree, the axis's index arrays as 1-D i32 placeholders with their index
 * role (so tex_kernel_call checks them, rt/index_check.c), and the
 * coordinate and position variables iteration bodies are written with.
 * Checks: a name, integer lengths of this context, a parent of this context;
 * a root is dense-fixed.
 */
#include "sparse/sparse.h"

#include <stdio.h>

/* A 1-D i32 placeholder NAME_suffix of n entries with an index role. */
static tex_tensor *index_array(tex_sp_axis *a, const char *suffix, tex_expr *n,
                               enum texi_index_role role, tex_expr *bound)
{
    char name[256];
    snprintf(name, sizeof name, "%s_%s", a->name, suffix);
    tex_tensor *t = tex_placeholder(a->ctx, name, TEX_I32, 1, &n);
    if (t) {
        t->index_role = role;
        t->index_bound = bound;
    }
    return t;
}

/* A tagged variable NAME or NAME.pos for the body of iterations. */
static tex_expr *axis_var(tex_sp_axis *a, const char *suffix)
{
    char name[256];
    snprintf(name, sizeof name, "%s%s", a->name, suffix);
    tex_expr *v = texi_var_new(a->ctx, name, TEX_I32);
    if (v)
        v->u.var.tag = a;
    return v;
}

static bool check_size(tex_ctx *ctx, const char *call, const char *name, const char *what,
                       tex_expr *e)
{
    if (!e) {
        texi_error_null_operand(ctx, call, what);
        return false;
    }
    if (e->ctx != ctx) {
        texi_error(ctx, TEX_EMISUSE, "%s: the %s of axis '%s' comes from another context", call,
                   what, name);
        return false;
    }
    if (!texi_dtype_is_int(e->dtype)) {
        texi_error(ctx, TEX_ETYPE, "%s: the %s of axis '%s' is %s, expected an integer", call, what,
                   name, tex_dtype_name(e->dtype));
        return false;
    }
    return true;
}

/* Total positions: a root's length, else per parent position times parent's. */
static tex_expr *positions(tex_sp_axis *a)
{
    switch (a->kind) {
    case TEXI_SP_DENSE_FIXED:
        return a->parent ? tex_mul(a->parent->n_pos, a->length) : a->length;
    case TEXI_SP_SPARSE_FIXED:
        return tex_mul(a->parent->n_pos, a->nnz);
    case TEXI_SP_DENSE_VARIABLE:
    case TEXI_SP_SPARSE_VARIABLE:
        return a->nnz;
    }
    return NULL;
}

static tex_sp_axis *axis_new(tex_ctx *ctx, const char *call, const char *name,
                             enum texi_sp_kind kind, tex_sp_axis *parent, tex_expr *length,
                             tex_expr *nnz)
{
    if (!ctx)
        return NULL;
    if (!name || !*name) {
        texi_error(ctx, TEX_EINVAL, "%s: the axis name is NULL or empty", call);
        return NULL;
    }
    if (kind != TEXI_SP_DENSE_FIXED && !parent) {
        texi_error(ctx, TEX_EINVAL,
                   "%s: axis '%s' needs a parent (only dense-fixed axes are roots)", call, name);
        return NULL;
    }
    if (parent && parent->ctx != ctx) {
        texi_error(ctx, TEX_EMISUSE, "%s: the parent of axis '%s' comes from another context", call,
                   name);
        return NULL;
    }
    if (!check_size(ctx, call, name, "length", length) ||
        (kind != TEXI_SP_DENSE_FIXED && !check_size(ctx, call, name, "nnz", nnz)))
        return NULL;
    tex_sp_axis *a = texi_alloc(ctx, sizeof *a, "a sparse axis");
    if (!a || !(a->name = texi_strdup(ctx, name)))
        return NULL;
    *a = (tex_sp_axis){ctx, a->name, kind, parent, length, nnz, NULL, NULL, NULL, NULL, NULL, NULL};
    if (!(a->n_pos = positions(a)) || !(a->coord = axis_var(a, "")) ||
        !(a->pos = axis_var(a, ".pos")))
        return NULL;
    if (kind == TEXI_SP_DENSE_VARIABLE || kind == TEXI_SP_SPARSE_VARIABLE) {
        tex_expr *n = tex_add(parent->n_pos, tex_int(ctx, 1));
        if (!(a->indptr = index_array(a, "indptr", n, TEXI_INDEX_INDPTR, nnz)))
            return NULL;
    }
    if ((kind == TEXI_SP_SPARSE_FIXED || kind == TEXI_SP_SPARSE_VARIABLE) &&
        !(a->indices = index_array(a, "indices", a->n_pos, TEXI_INDEX_INDICES, length)))
        return NULL;
    if (a->indices) { /* the rows a coordinate search (search.c) needs sorted */
        a->indices->index_rows = a->indptr;
        a->indices->index_row_len = a->indptr ? NULL : nnz;
    }
    return a;
}

tex_sp_axis *tex_sp_dense_fixed(tex_ctx *ctx, const char *name, tex_sp_axis *parent,
                                tex_expr *length)
{
    return axis_new(ctx, "tex_sp_dense_fixed", name, TEXI_SP_DENSE_FIXED, parent, length, NULL);
}

tex_sp_axis *tex_sp_dense_variable(tex_ctx *ctx, const char *name, tex_sp_axis *parent,
                                   tex_expr *length, tex_expr *nnz)
{
    return axis_new(ctx, "tex_sp_dense_variable", name, TEXI_SP_DENSE_VARIABLE, parent, length,
                    nnz);
}

tex_sp_axis *tex_sp_sparse_fixed(tex_ctx *ctx, const char *name, tex_sp_axis *parent,
                                 tex_expr *length, tex_expr *nnz_cols)
{
    return axis_new(ctx, "tex_sp_sparse_fixed", name, TEXI_SP_SPARSE_FIXED, parent, length,
                    nnz_cols);
}

tex_sp_axis *tex_sp_sparse_variable(tex_ctx *ctx, const char *name, tex_sp_axis *parent,
                                    tex_expr *length, tex_expr *nnz)
{
    return axis_new(ctx, "tex_sp_sparse_variable", name, TEXI_SP_SPARSE_VARIABLE, parent, length,
                    nnz);
}

/* a's array t, or NULL with TEX_EINVAL when its kind has none. */
static tex_tensor *array_of(tex_sp_axis *a, tex_tensor *t, const char *call, const char *what)
{
    if (!a)
        return NULL;
    if (!t)
        texi_error(a->ctx, TEX_EINVAL, "%s: axis '%s' has no %s (its kind stores none)", call,
                   a->name, what);
    return t;
}

tex_tensor *tex_sp_indptr(tex_sp_axis *a)
{
    return array_of(a, a ? a->indptr : NULL, "tex_sp_indptr", "indptr");
}

tex_tensor *tex_sp_indices(tex_sp_axis *a)
{
    return array_of(a, a ? a->indices : NULL, "tex_sp_indices", "indices");
}

tex_tensor *tex_sp_rows(tex_sp_axis *a)
{
    if (!a)
        return NULL;
    if (!a->indptr || a->parent->parent) {
        texi_error(a->ctx, TEX_EINVAL,
                   "tex_sp_rows: axis '%s' is not a variable axis whose parent is a root", a->name);
        return NULL;
    }
    if (!a->rows)
        a->rows = index_array(a, "rows", a->nnz, TEXI_INDEX_INDICES, a->parent->length);
    return a->rows;
}

tex_expr *tex_sp_coord(tex_sp_axis *a)
{
    return a ? a->coord : NULL;
}
