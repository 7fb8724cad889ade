/*
 * Axes, placeholders, tensor reads and computes: the compute-definition half
 * of the IR (what to compute, never how).
 *
 * A tensor records the operation that produces it (texi_op): a placeholder, or
 * a compute with its data-parallel axes, reduce axes and body. tex_compute
 * validates the whole definition before creating anything:
 *   - axes are distinct data-parallel axes of this context;
 *   - a reduction appears only as the whole body, never nested;
 *   - every axis variable in the body is one of the compute's axes, and every
 *     reduce axis is used only inside the reduction that iterates it;
 *   - no two different tensors of the graph share a name.
 * The same tex_iter may be an axis of several computes (a user writes one `i`
 * for a chain of elementwise ops); lowering gives each stage its own loop
 * variables.
 */
#include "ir/ir.h"

#include <stdio.h>
#include <string.h>

/* Visitor: flags nodes an extent may not contain. */
static bool extent_node_ok(tex_expr *e, void *ud)
{
    bool *bad = ud;
    if ((e->kind == TEXI_EXPR_VAR && e->u.var.iter) || e->kind == TEXI_EXPR_ACCESS ||
        e->kind == TEXI_EXPR_LOAD || e->kind == TEXI_EXPR_SEARCH || e->kind == TEXI_EXPR_REDUCE)
        *bad = true;
    return !*bad;
}

/* Extent or shape check shared by axes and placeholders: an integer
 * expression of symbolic sizes and constants, non-negative when constant. */
static int check_extent(tex_ctx *ctx, const char *call, const char *what, tex_expr *e)
{
    if (!texi_dtype_is_int(e->dtype))
        return texi_error(ctx, TEX_ETYPE, "%s: %s is %s, expected an integer", call, what,
                          tex_dtype_name(e->dtype));
    if (e->kind == TEXI_EXPR_INT && e->u.i < 0)
        return texi_error(ctx, TEX_EINVAL, "%s: %s is negative (%lld)", call, what,
                          (long long)e->u.i);
    bool bad = false;
    texi_expr_visit(e, extent_node_ok, &bad);
    if (bad)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: %s must be built from constants and tex_var sizes only (it uses an "
                          "axis, a tensor element or a reduction)",
                          call, what);
    return 0;
}

/* A checked axis over [0, extent) with its variable. */
static tex_iter *iter_make(tex_ctx *ctx, const char *name, tex_expr *extent,
                           enum texi_iter_kind kind)
{
    tex_iter *iv = texi_alloc(ctx, sizeof *iv, "an axis");
    if (!iv || !(iv->name = texi_strdup(ctx, name)))
        return NULL;
    iv->ctx = ctx;
    iv->kind = kind;
    iv->extent = extent;
    tex_dtype t = extent->dtype == TEX_I64 || extent->dtype == TEX_U64 ? TEX_I64 : TEX_I32;
    iv->min = texi_int_imm(ctx, t, 0);
    iv->var = texi_var_new(ctx, name, t);
    if (!iv->min || !iv->var)
        return NULL;
    iv->var->u.var.iter = iv;
    return iv;
}

static tex_iter *iter_new(tex_ctx *ctx, const char *call, const char *name, tex_expr *extent,
                          enum texi_iter_kind kind)
{
    if (!ctx)
        return NULL;
    if (!name || !*name) {
        texi_error(ctx, TEX_EINVAL, "%s: the axis name is NULL or empty", call);
        return NULL;
    }
    if (!extent) {
        texi_error_null_operand(ctx, call, "extent");
        return NULL;
    }
    if (extent->ctx != ctx) {
        texi_error(ctx, TEX_EMISUSE, "%s: the extent of axis '%s' comes from another context", call,
                   name);
        return NULL;
    }
    char what[160];
    snprintf(what, sizeof what, "the extent of axis '%s'", name);
    if (check_extent(ctx, call, what, extent) < 0)
        return NULL;
    return iter_make(ctx, name, extent, kind);
}

/* A reduce axis whose extent may read data-parallel axes of the compute
 * that uses it and elements of placeholders: the position axis of a sparse
 * iteration (the non-zeros of row i span indptr[i+1] - indptr[i]). Built
 * only by src/sparse, which keeps it inside the axes its extent reads. */
tex_iter *texi_ragged_axis(tex_ctx *ctx, const char *name, tex_expr *extent)
{
    if (!ctx || !name || !extent)
        return NULL;
    if (!texi_dtype_is_int(extent->dtype)) {
        texi_error(ctx, TEX_ETYPE, "sparse iteration: the extent of axis '%s' is %s", name,
                   tex_dtype_name(extent->dtype));
        return NULL;
    }
    tex_iter *iv = iter_make(ctx, name, extent, TEXI_ITER_REDUCE);
    if (iv)
        iv->ragged = true;
    return iv;
}

bool texi_iter_is_ragged(const tex_iter *iv)
{
    return iv && iv->ragged;
}

tex_iter *tex_axis(tex_ctx *ctx, const char *name, tex_expr *extent)
{
    return iter_new(ctx, "tex_axis", name, extent, TEXI_ITER_DATA);
}

tex_iter *tex_reduce_axis(tex_ctx *ctx, const char *name, tex_expr *extent)
{
    return iter_new(ctx, "tex_reduce_axis", name, extent, TEXI_ITER_REDUCE);
}

tex_expr *tex_iv(tex_iter *iv)
{
    return iv ? iv->var : NULL;
}

/* -------------------------------------------------------------- tensors */

static tex_tensor *tensor_new(tex_ctx *ctx, const char *name, tex_dtype t, int ndim,
                              tex_expr *const shape[], texi_op *op)
{
    tex_tensor *tn = texi_alloc(ctx, sizeof *tn, "a tensor");
    if (!tn || !(tn->name = texi_strdup(ctx, name)))
        return NULL;
    tn->ctx = ctx;
    tn->id = ++ctx->next_id;
    tn->dtype = t;
    tn->ndim = ndim;
    tn->op = op;
    tn->shape = texi_alloc(ctx, sizeof(tex_expr *) * (size_t)(ndim > 0 ? ndim : 1), "a shape");
    if (!tn->shape)
        return NULL;
    for (int i = 0; i < ndim; i++)
        tn->shape[i] = shape[i];
    return tn;
}

tex_tensor *tex_placeholder(tex_ctx *ctx, const char *name, tex_dtype t, int ndim,
                            tex_expr *const shape[])
{
    static const char call[] = "tex_placeholder";
    if (!ctx)
        return NULL;
    if (!name || !*name) {
        texi_error(ctx, TEX_EINVAL, "%s: the tensor name is NULL or empty", call);
        return NULL;
    }
    if (!texi_dtype_valid((int)t)) {
        texi_error(ctx, TEX_ETYPE, "%s: tensor '%s' has unknown dtype %d", call, name, (int)t);
        return NULL;
    }
    if (ndim < 0 || (ndim > 0 && !shape)) {
        texi_error(ctx, TEX_EINVAL, "%s: tensor '%s': ndim %d with %s shape", call, name, ndim,
                   shape ? "a" : "a NULL");
        return NULL;
    }
    for (int i = 0; i < ndim; i++) {
        char what[160];
        snprintf(what, sizeof what, "dimension %d of tensor '%s'", i, name);
        if (!shape[i]) {
            texi_error(ctx, TEX_EMISUSE, "%s: %s is NULL", call, what);
            return NULL;
        }
        if (shape[i]->ctx != ctx) {
            texi_error(ctx, TEX_EMISUSE, "%s: %s comes from another context", call, what);
            return NULL;
        }
        if (check_extent(ctx, call, what, shape[i]) < 0)
            return NULL;
    }
    texi_op *op = texi_alloc(ctx, sizeof *op, "an operation");
    if (!op)
        return NULL;
    op->kind = TEXI_OP_PLACEHOLDER;
    return tensor_new(ctx, name, t, ndim, shape, op);
}

tex_tensor *tex_placeholder_c(tex_ctx *ctx, const char *name, tex_dtype t, int ndim,
                              const int64_t shape[])
{
    if (!ctx)
        return NULL;
    if (ndim < 0 || ndim > 64 || (ndim > 0 && !shape)) {
        texi_error(ctx, TEX_EINVAL, "tex_placeholder_c: tensor '%s': bad ndim %d or NULL shape",
                   name ? name : "(null)", ndim);
        return NULL;
    }
    tex_expr *dims[64];
    for (int i = 0; i < ndim; i++)
        if (!(dims[i] = tex_int(ctx, shape[i])))
            return NULL;
    return tex_placeholder(ctx, name, t, ndim, dims);
}

tex_expr *tex_at(tex_tensor *t, int n, tex_expr *const idx[])
{
    if (!t)
        return NULL;
    tex_ctx *ctx = t->ctx;
    if (n != t->ndim || (n > 0 && !idx)) {
        texi_error(ctx, TEX_EINVAL, "tex_at: tensor '%s' has %d dimensions, got %d indices",
                   t->name, t->ndim, n);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (!idx[i]) {
            texi_error(ctx, TEX_EMISUSE, "tex_at: index %d of tensor '%s' is NULL", i, t->name);
            return NULL;
        }
        if (idx[i]->ctx != ctx) {
            texi_error(ctx, TEX_EMISUSE,
                       "tex_at: index %d of tensor '%s' comes from another "
                       "context",
                       i, t->name);
            return NULL;
        }
        if (!texi_dtype_is_int(idx[i]->dtype)) {
            texi_error(ctx, TEX_ETYPE,
                       "tex_at: index %d of tensor '%s' is %s, expected an "
                       "integer",
                       i, t->name, tex_dtype_name(idx[i]->dtype));
            return NULL;
        }
        if (idx[i]->kind == TEXI_EXPR_REDUCE) {
            texi_error(ctx, TEX_EINVAL, "tex_at: index %d of tensor '%s' is a reduction", i,
                       t->name);
            return NULL;
        }
    }
    return texi_access_new(t, n, idx);
}

int tex_tensor_ndim(const tex_tensor *t)
{
    return t ? t->ndim : -1;
}

tex_expr *tex_tensor_dim(const tex_tensor *t, int i)
{
    return t && i >= 0 && i < t->ndim ? t->shape[i] : NULL;
}

tex_dtype tex_tensor_dtype(const tex_tensor *t)
{
    return t ? t->dtype : TEX_BOOL;
}

const char *tex_tensor_name(const tex_tensor *t)
{
    return t ? t->name : "";
}

/* ----------------------------------------------------------- graph walks */

static int index_of(tex_tensor *const *list, int n, const tex_tensor *t)
{
    for (int i = 0; i < n; i++)
        if (list[i] == t)
            return i;
    return -1;
}

typedef struct {
    tex_ctx *ctx;
    tex_tensor **order; /* arena array, grown by doubling */
    int n, cap;
    bool oom;
} post_order_walk;

static void post_order_visit(post_order_walk *w, tex_tensor *t)
{
    if (w->oom || index_of(w->order, w->n, t) >= 0)
        return;
    for (int i = 0; i < t->op->n_inputs; i++)
        post_order_visit(w, t->op->inputs[i]);
    tex_tensor **grown = texi_grow(w->ctx, w->order, w->n, &w->cap, sizeof *grown, "a tensor list");
    if (!grown) {
        w->oom = true;
        return;
    }
    w->order = grown;
    w->order[w->n++] = t;
}

tex_tensor **texi_tensor_post_order(tex_ctx *ctx, int n_outputs, tex_tensor *const outputs[],
                                    int *n)
{
    post_order_walk w = {ctx, NULL, 0, 0, false};
    for (int i = 0; i < n_outputs; i++)
        post_order_visit(&w, outputs[i]);
    *n = w.n;
    if (w.oom)
        return NULL;
    if (!w.order)
        w.order = texi_alloc(ctx, sizeof *w.order, "a tensor list");
    return w.order;
}

typedef struct {
    tex_expr **vars;
    int *n;
    int cap;
    bool full;
} free_var_walk;

static bool collect_free_var(tex_expr *e, void *ud)
{
    free_var_walk *w = ud;
    if (e->kind != TEXI_EXPR_VAR || e->u.var.iter)
        return true;
    for (int i = 0; i < *w->n; i++)
        if (w->vars[i] == e)
            return true;
    if (*w->n >= w->cap) {
        w->full = true;
        return false;
    }
    w->vars[(*w->n)++] = e;
    return true;
}

int texi_collect_free_vars(tex_expr *e, tex_expr **vars, int *n, int cap)
{
    free_var_walk w = {vars, n, cap, false};
    texi_expr_visit(e, collect_free_var, &w);
    return w.full ? -1 : 0;
}

tex_tensor *texi_compute_tensor_new(tex_ctx *ctx, const char *name, int ndim,
                                    tex_iter *const axes[], tex_expr *body, int n_inputs,
                                    tex_tensor *const inputs[])
{
    texi_op *op = texi_alloc(ctx, sizeof *op, "an operation");
    if (!op)
        return NULL;
    op->kind = TEXI_OP_COMPUTE;
    op->body = body;
    op->n_axes = ndim;
    op->axes = texi_alloc(ctx, sizeof(tex_iter *) * (size_t)(ndim > 0 ? ndim : 1), "axes");
    op->n_inputs = n_inputs;
    op->inputs =
        texi_alloc(ctx, sizeof(tex_tensor *) * (size_t)(n_inputs > 0 ? n_inputs : 1), "inputs");
    tex_expr **shape =
        texi_alloc(ctx, sizeof(tex_expr *) * (size_t)(ndim > 0 ? ndim : 1), "a shape");
    if (!op->axes || !op->inputs || !shape)
        return NULL;
    for (int i = 0; i < ndim; i++) {
        op->axes[i] = axes[i];
        shape[i] = axes[i]->extent;
    }
    for (int i = 0; i < n_inputs; i++)
        op->inputs[i] = inputs[i];
    if (body->kind == TEXI_EXPR_REDUCE) {
        op->n_raxes = body->u.red.n_axes;
        op->raxes = body->u.red.axes;
    }
    return tensor_new(ctx, name, body->dtype, ndim, shape, op);
}
