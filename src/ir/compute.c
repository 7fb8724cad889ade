/*
 * tex_compute: validates a compute definition and records it as the
 * operation of a new tensor (see tensor.c for the rules it enforces).
 *
 * The body is walked once to check every axis variable's use, to reject
 * reductions that are not the whole body, and to collect the tensors it reads
 * (op->inputs, in order of first use). The tensor names of the graph below the
 * new tensor are then checked for reuse. Nothing is allocated before all
 * checks pass, so a failed call leaves no partial tensor behind.
 */
#include "ir/ir.h"

#include <string.h>

typedef struct {
    tex_ctx *ctx;
    const char *name;      /* the compute being defined */
    tex_iter *const *axes; /* its data-parallel axes */
    int n_axes;
    const tex_expr *reduction; /* the top-level REDUCE, or NULL */
    bool inside_reduction;     /* walking the reduction's body or condition */
    tex_tensor *inputs[256];   /* tensors read, in order of first use */
    int n_inputs;
    int rc; /* first error */
} body_walk;

static bool axis_listed(tex_iter *const *axes, int n, const tex_iter *iv)
{
    for (int i = 0; i < n; i++)
        if (axes[i] == iv)
            return true;
    return false;
}

static int check_var(body_walk *w, const tex_iter *iv)
{
    if (iv->kind == TEXI_ITER_DATA && !axis_listed(w->axes, w->n_axes, iv))
        return texi_error(w->ctx, TEX_EINVAL,
                          "tex_compute: '%s' uses axis '%s', which is not one of its axes", w->name,
                          iv->name);
    if (iv->kind == TEXI_ITER_REDUCE &&
        (!w->inside_reduction ||
         !axis_listed(w->reduction->u.red.axes, w->reduction->u.red.n_axes, iv)))
        return texi_error(w->ctx, TEX_EINVAL,
                          "tex_compute: '%s' uses reduce axis '%s' outside a reduction over it",
                          w->name, iv->name);
    return 0;
}

static int note_input(body_walk *w, tex_tensor *t)
{
    for (int i = 0; i < w->n_inputs; i++)
        if (w->inputs[i] == t)
            return 0;
    if (w->n_inputs == (int)(sizeof w->inputs / sizeof *w->inputs))
        return texi_error(w->ctx, TEX_EINVAL, "tex_compute: '%s' reads more than %d tensors",
                          w->name, w->n_inputs);
    w->inputs[w->n_inputs++] = t;
    return 0;
}

static bool check_node(tex_expr *e, void *ud)
{
    body_walk *w = ud;
    if (w->rc)
        return false;
    switch (e->kind) {
    case TEXI_EXPR_VAR:
        if (e->u.var.iter)
            w->rc = check_var(w, e->u.var.iter);
        break;
    case TEXI_EXPR_ACCESS:
        w->rc = note_input(w, e->u.access.tensor);
        break;
    case TEXI_EXPR_SEARCH:
        w->rc = e->u.search.tensor
                    ? note_input(w, e->u.search.tensor)
                    : texi_error(w->ctx, TEX_EINVAL,
                                 "tex_compute: '%s' contains a lowered buffer search", w->name);
        break;
    case TEXI_EXPR_REDUCE:
        w->rc = texi_error(w->ctx, TEX_EINVAL,
                           "tex_compute: '%s' has a reduction inside its body; a reduction must "
                           "be the whole body",
                           w->name);
        break;
    case TEXI_EXPR_LOAD:
        w->rc = texi_error(w->ctx, TEX_EINVAL, "tex_compute: '%s' contains a lowered buffer load",
                           w->name);
        break;
    default:
        break;
    }
    return w->rc == 0;
}

static int check_body(body_walk *w, tex_expr *body)
{
    if (body->kind != TEXI_EXPR_REDUCE) {
        texi_expr_visit(body, check_node, w);
        return w->rc;
    }
    w->reduction = body;
    w->inside_reduction = true;
    for (int i = 0; i < body->u.red.n_axes && !w->rc; i++) {
        tex_iter *iv = body->u.red.axes[i];
        texi_expr_visit(iv->extent, check_node, w);
    }
    texi_expr_visit(body->u.red.body, check_node, w);
    if (body->u.red.cond && !w->rc)
        texi_expr_visit(body->u.red.cond, check_node, w);
    return w->rc;
}

static int check_axes(tex_ctx *ctx, const char *name, int ndim, tex_iter *const axes[])
{
    if (ndim < 0 || (ndim > 0 && !axes))
        return texi_error(ctx, TEX_EINVAL, "tex_compute: '%s': ndim %d with %s axes", name, ndim,
                          axes ? "these" : "NULL");
    for (int i = 0; i < ndim; i++) {
        if (!axes[i])
            return texi_error(ctx, TEX_EMISUSE, "tex_compute: '%s': axis %d is NULL", name, i);
        if (axes[i]->ctx != ctx)
            return texi_error(ctx, TEX_EMISUSE,
                              "tex_compute: '%s': axis '%s' comes from another "
                              "context",
                              name, axes[i]->name);
        if (axes[i]->kind != TEXI_ITER_DATA)
            return texi_error(ctx, TEX_EINVAL,
                              "tex_compute: '%s': axis '%s' is a reduce axis; "
                              "the axes of a compute are data-parallel",
                              name, axes[i]->name);
        for (int j = 0; j < i; j++)
            if (axes[j] == axes[i])
                return texi_error(ctx, TEX_EINVAL, "tex_compute: '%s': axis '%s' is listed twice",
                                  name, axes[i]->name);
    }
    return 0;
}

/* Rejects a graph in which two different tensors (the new one included)
 * share a name. */
static int check_names(tex_ctx *ctx, const char *name, int n_inputs, tex_tensor *const inputs[])
{
    int n = 0;
    tex_tensor **all = texi_tensor_post_order(ctx, n_inputs, inputs, &n);
    if (!all)
        return TEX_ENOMEM;
    for (int i = 0; i < n; i++) {
        if (strcmp(all[i]->name, name) == 0)
            return texi_error(ctx, TEX_EINVAL,
                              "tex_compute: the name '%s' is already used by "
                              "another tensor of this graph",
                              name);
        for (int j = 0; j < i; j++)
            if (strcmp(all[i]->name, all[j]->name) == 0)
                return texi_error(ctx, TEX_EINVAL,
                                  "tex_compute: '%s' reads two different "
                                  "tensors named '%s'",
                                  name, all[i]->name);
    }
    return 0;
}

tex_tensor *tex_compute(tex_ctx *ctx, const char *name, int ndim, tex_iter *const axes[],
                        tex_expr *body)
{
    if (!ctx)
        return NULL;
    if (!name || !*name) {
        texi_error(ctx, TEX_EINVAL, "tex_compute: the tensor name is NULL or empty");
        return NULL;
    }
    if (!body) {
        texi_error_null_operand(ctx, "tex_compute", "body");
        return NULL;
    }
    if (body->ctx != ctx) {
        texi_error(ctx, TEX_EMISUSE, "tex_compute: the body of '%s' comes from another context",
                   name);
        return NULL;
    }
    body_walk w = {.ctx = ctx, .name = name, .axes = axes, .n_axes = ndim};
    if (check_axes(ctx, name, ndim, axes) < 0 || check_body(&w, body) < 0 ||
        check_names(ctx, name, w.n_inputs, w.inputs) < 0)
        return NULL;
    return texi_compute_tensor_new(ctx, name, ndim, axes, body, w.n_inputs, w.inputs);
}
