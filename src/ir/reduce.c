/*
 * Reductions: tex_sum, tex_reduce_max/min/prod and tex_reduce_where.
 *
 * A REDUCE node carries its reduce axes in order of first use in the body (then
 * the condition, then the order given for axes used in neither), which is the
 * order tex_op_reduce_axis reports and the default loop order. The axes must
 * be distinct reduce axes; the body may not itself contain a reduction.
 */
#include "ir/ir.h"

typedef struct {
    tex_iter *const *listed; /* the axes as given */
    int n;
    tex_iter **ordered; /* filled in order of first use */
    int n_ordered;
} first_use_walk;

static bool note_first_use(tex_expr *e, void *ud)
{
    first_use_walk *w = ud;
    if (e->kind != TEXI_EXPR_VAR || !e->u.var.iter)
        return true;
    for (int i = 0; i < w->n_ordered; i++)
        if (w->ordered[i] == e->u.var.iter)
            return true;
    for (int i = 0; i < w->n; i++)
        if (w->listed[i] == e->u.var.iter)
            w->ordered[w->n_ordered++] = w->listed[i];
    return true;
}

/* axes reordered by first use in body and cond (unused ones keep their order). */
static void order_by_first_use(tex_iter *const *axes, int n, tex_expr *body, tex_expr *cond,
                               tex_iter **out)
{
    first_use_walk w = {axes, n, out, 0};
    texi_expr_visit(body, note_first_use, &w);
    if (cond)
        texi_expr_visit(cond, note_first_use, &w);
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < w.n_ordered; j++)
            seen |= out[j] == axes[i];
        if (!seen)
            out[w.n_ordered++] = axes[i];
    }
}

static bool has_reduce(tex_expr *e, void *ud)
{
    if (e->kind == TEXI_EXPR_REDUCE)
        *(bool *)ud = true;
    return !*(bool *)ud;
}

/* Validates the reduce axes of `call`; 0 or the recorded error. */
static int check_raxes(tex_ctx *ctx, const char *call, int n, tex_iter *const raxes[])
{
    if (n < 1 || !raxes)
        return texi_error(ctx, TEX_EINVAL, "%s: needs at least one reduce axis (got %d)", call, n);
    for (int i = 0; i < n; i++) {
        if (!raxes[i])
            return texi_error(ctx, TEX_EMISUSE, "%s: reduce axis %d is NULL", call, i);
        if (raxes[i]->ctx != ctx)
            return texi_error(ctx, TEX_EMISUSE, "%s: axis '%s' comes from another context", call,
                              raxes[i]->name);
        if (raxes[i]->kind != TEXI_ITER_REDUCE)
            return texi_error(ctx, TEX_EINVAL,
                              "%s: axis '%s' is a data-parallel axis; make it with tex_reduce_axis",
                              call, raxes[i]->name);
        for (int j = 0; j < i; j++)
            if (raxes[j] == raxes[i])
                return texi_error(ctx, TEX_EINVAL, "%s: reduce axis '%s' is listed twice", call,
                                  raxes[i]->name);
    }
    return 0;
}

static tex_expr *reduce(const char *call, enum texi_reduce_op op, tex_expr *body, int n,
                        tex_iter *const raxes[])
{
    if (!body)
        return NULL;
    tex_ctx *ctx = body->ctx;
    if (check_raxes(ctx, call, n, raxes) < 0)
        return NULL;
    bool nested = false;
    texi_expr_visit(body, has_reduce, &nested);
    if (nested) {
        texi_error(ctx, TEX_EINVAL,
                   "%s: the body contains a reduction (nested reductions are "
                   "not supported; compute the inner one into its own tensor)",
                   call);
        return NULL;
    }
    if (body->dtype == TEX_BOOL) {
        texi_error(ctx, TEX_ETYPE, "%s: the body is bool; cast it to a number first", call);
        return NULL;
    }
    tex_iter **ordered = texi_alloc(ctx, sizeof *ordered * (size_t)n, "reduce axes");
    if (!ordered)
        return NULL;
    order_by_first_use(raxes, n, body, NULL, ordered);
    return texi_reduce_new(op, body, n, ordered, NULL);
}

tex_expr *tex_sum(tex_expr *body, int n, tex_iter *const raxes[])
{
    return reduce("tex_sum", TEXI_REDUCE_SUM, body, n, raxes);
}

tex_expr *tex_reduce_max(tex_expr *body, int n, tex_iter *const raxes[])
{
    return reduce("tex_reduce_max", TEXI_REDUCE_MAX, body, n, raxes);
}

tex_expr *tex_reduce_min(tex_expr *body, int n, tex_iter *const raxes[])
{
    return reduce("tex_reduce_min", TEXI_REDUCE_MIN, body, n, raxes);
}

tex_expr *tex_reduce_prod(tex_expr *body, int n, tex_iter *const raxes[])
{
    return reduce("tex_reduce_prod", TEXI_REDUCE_PROD, body, n, raxes);
}

tex_expr *tex_reduce_where(tex_expr *reduction, tex_expr *cond)
{
    static const char call[] = "tex_reduce_where";
    tex_ctx *ctx = reduction ? reduction->ctx : cond ? cond->ctx : NULL;
    if (!reduction || !cond) {
        texi_error_null_operand(ctx, call, reduction ? "cond" : "reduction");
        return NULL;
    }
    if (cond->ctx != ctx) {
        texi_error(ctx, TEX_EMISUSE, "%s: operands come from two different contexts", call);
        return NULL;
    }
    if (reduction->kind != TEXI_EXPR_REDUCE) {
        texi_error(ctx, TEX_EINVAL, "%s: the first operand is not a reduction (tex_sum, ...)",
                   call);
        return NULL;
    }
    if (cond->dtype != TEX_BOOL) {
        texi_error(ctx, TEX_ETYPE, "%s: the condition is %s, expected bool", call,
                   tex_dtype_name(cond->dtype));
        return NULL;
    }
    bool nested = false;
    texi_expr_visit(cond, has_reduce, &nested);
    if (nested) {
        texi_error(ctx, TEX_EINVAL, "%s: the condition contains a reduction", call);
        return NULL;
    }
    if (reduction->u.red.cond && !(cond = texi_binary(TEXI_EXPR_AND, reduction->u.red.cond, cond)))
        return NULL;
    return texi_reduce_new(reduction->u.red.op, reduction->u.red.body, reduction->u.red.n_axes,
                           reduction->u.red.axes, cond);
}
