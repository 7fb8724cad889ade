/*
 * Scatter groups (texi_scatter_group_new): several computes that store
 * their points into one tensor's storage through row-id arrays, the IR
 * behind sparse format decomposition (src/sparse/hyb_spmm.c: each ELL
 * bucket of a matrix writes its rows of Y).
 *
 * A part is an ordinary compute over its own axes (r, k..) with two extra
 * fields (texi_op.scatter_rows, scatter_into): ScheduleOps stores its point
 * at into[rows[r], k..] instead of at its own indices and gives it no
 * storage of its own; the oracle does the same. The group's tensor G (the
 * last part) has G's real shape (extent0 first) and lists the other parts as
 * inputs, which orders them before it in every traversal without any read
 * of them. Nothing here checks that row ids are distinct or in range: the
 * caller's arrays carry an index role (checked at call time) and distinct
 * ids are the caller's contract.
 */
#include "ir/ir.h"

/* A copy of compute src whose inputs are src's followed by extra[0..n_extra). */
static tex_tensor *part_new(tex_ctx *ctx, const tex_tensor *src, int n_extra,
                            tex_tensor *const extra[])
{
    const texi_op *op = src->op;
    int n = op->n_inputs + n_extra;
    tex_tensor **in = texi_alloc(ctx, sizeof *in * (size_t)(n > 0 ? n : 1), "a scatter part");
    if (!in)
        return NULL;
    for (int i = 0; i < op->n_inputs; i++)
        in[i] = op->inputs[i];
    for (int i = 0; i < n_extra; i++)
        in[op->n_inputs + i] = extra[i];
    return texi_compute_tensor_new(ctx, src->name, op->n_axes, op->axes, op->body, n, in);
}

int texi_scatter_group_new(tex_ctx *ctx, int n, tex_tensor *const srcs[], tex_tensor *const rows[],
                           tex_expr *extent0, tex_tensor *parts[])
{
    for (int i = 0; i + 1 < n; i++)
        if (!(parts[i] = part_new(ctx, srcs[i], 1, &rows[i])))
            return TEX_ENOMEM;
    tex_tensor **extra = texi_alloc(ctx, sizeof *extra * (size_t)n, "a scatter group");
    if (!extra)
        return TEX_ENOMEM;
    extra[0] = rows[n - 1];
    for (int i = 0; i + 1 < n; i++)
        extra[i + 1] = parts[i];
    tex_tensor *g = parts[n - 1] = part_new(ctx, srcs[n - 1], n, extra);
    if (!g)
        return TEX_ENOMEM;
    g->shape[0] = extent0;
    for (int i = 0; i < n; i++) {
        parts[i]->op->scatter_rows = rows[i];
        parts[i]->op->scatter_into = g;
    }
    return 0;
}

tex_tensor *texi_scatter_target(tex_tensor *t)
{
    return t->op && t->op->scatter_into ? t->op->scatter_into : t;
}
