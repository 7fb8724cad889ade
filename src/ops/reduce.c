/*
 * Reductions over a set of axes (sum, mean, max, min, with keepdims),
 * argmax/argmin along one axis, and softmax/log_softmax along one axis.
 *
 * tex has no tuple reducer, so argmax is two stages: NAME_max, the maximum
 * over the axis, then NAME = the smallest index k with x[k] == max (or x[k]
 * a NaN, which the NaN-propagating maximum then is), as a min-reduction of
 * select(hit, k, extent). That gives numpy's answer: the first index of the
 * maximum, the first NaN when there is one.
 * softmax is max-subtracted: NAME_max, NAME_exp = exp(x - max), NAME_sum,
 * NAME = exp / sum; the intermediates keep the reduced dim with size 1 and
 * are read through broadcasting (ops.h).
 */
#include "ops/ops.h"

#include <string.h>

typedef enum { RED_SUM, RED_MAX, RED_MIN } red_kind;

static tex_expr *reduce_expr(red_kind k, tex_expr *body, int n, tex_iter *const raxes[])
{
    switch (k) {
    case RED_SUM:
        return tex_sum(body, n, raxes);
    case RED_MAX:
        return tex_reduce_max(body, n, raxes);
    case RED_MIN:
        return tex_reduce_min(body, n, raxes);
    }
    return NULL;
}

/* The reduced dims of x for the axes list of call op (n_axes == 0: all);
 * 0 or TEX_EINVAL for an axis out of range or listed twice. */
static int reduced_dims(tex_ctx *ctx, const char *op, tex_tensor *x, int n_axes, const int axes[],
                        bool reduced[])
{
    int nd = tex_tensor_ndim(x);
    memset(reduced, 0, sizeof(bool) * TEXI_OPS_MAX_NDIM);
    if (n_axes < 0 || (n_axes > 0 && !axes))
        return tex_set_error(ctx, TEX_EINVAL, "%s: %d axes given%s", op, n_axes,
                             n_axes > 0 ? " but the axes array is NULL" : "");
    for (int d = 0; n_axes == 0 && d < nd; d++)
        reduced[d] = true;
    for (int i = 0; i < n_axes; i++) {
        int ax = texi_ops_axis(ctx, op, x, axes[i]);
        if (ax < 0)
            return ax;
        if (reduced[ax])
            return tex_set_error(ctx, TEX_EINVAL, "%s: axis %d of '%s' is listed twice", op, ax,
                                 tex_tensor_name(x));
        reduced[ax] = true;
    }
    return 0;
}

/* The compute `name` = reduction k of body(x[f.idx]) over frame f. */
static tex_tensor *reduce_stage(tex_ctx *ctx, const char *name, red_kind k, tex_expr *body,
                                const texi_ops_frame *f)
{
    return tex_compute(ctx, name, f->ndim, f->axes, reduce_expr(k, body, f->n_red, f->raxes));
}

/* sum / max / min / mean (a sum, then a division by the count). */
static tex_tensor *reduction(tex_ctx *ctx, const char *op, const char *dflt, const char *name,
                             tex_tensor *x, int n_axes, const int axes[], int keepdims, red_kind k,
                             bool mean)
{
    if (texi_ops_check(ctx, op, 1, &x, (const char *[]){"x"}))
        return NULL;
    if (mean && texi_ops_need_float(ctx, op, x, "x"))
        return NULL;
    bool reduced[TEXI_OPS_MAX_NDIM];
    texi_ops_frame f;
    if (reduced_dims(ctx, op, x, n_axes, axes, reduced) ||
        texi_ops_frame_init(ctx, x, reduced, keepdims != 0, &f))
        return NULL;
    const char *out = texi_ops_name(name, dflt);
    tex_expr *v = tex_at(x, tex_tensor_ndim(x), f.idx);
    if (!mean)
        return reduce_stage(ctx, out, k, v, &f);
    char nm[TEXI_OPS_NAME_MAX];
    tex_tensor *sum = reduce_stage(ctx, texi_ops_stage_name(nm, sizeof nm, out, "sum"), k, v, &f);
    return texi_ops_divide_count(ctx, out, sum, &f);
}

tex_tensor *tex_op_sum(tex_ctx *ctx, const char *name, tex_tensor *x, int n_axes, const int axes[],
                       int keepdims)
{
    return reduction(ctx, "tex_op_sum", "sum", name, x, n_axes, axes, keepdims, RED_SUM, false);
}

tex_tensor *tex_op_mean(tex_ctx *ctx, const char *name, tex_tensor *x, int n_axes, const int axes[],
                        int keepdims)
{
    return reduction(ctx, "tex_op_mean", "mean", name, x, n_axes, axes, keepdims, RED_SUM, true);
}

tex_tensor *tex_op_max(tex_ctx *ctx, const char *name, tex_tensor *x, int n_axes, const int axes[],
                       int keepdims)
{
    return reduction(ctx, "tex_op_max", "max", name, x, n_axes, axes, keepdims, RED_MAX, false);
}

tex_tensor *tex_op_min(tex_ctx *ctx, const char *name, tex_tensor *x, int n_axes, const int axes[],
                       int keepdims)
{
    return reduction(ctx, "tex_op_min", "min", name, x, n_axes, axes, keepdims, RED_MIN, false);
}

/* The frame of a reduction of x along its one dim ax. */
static int axis_frame(tex_ctx *ctx, tex_tensor *x, int ax, bool keepdims, texi_ops_frame *f)
{
    bool reduced[TEXI_OPS_MAX_NDIM] = {false};
    reduced[ax] = true;
    return texi_ops_frame_init(ctx, x, reduced, keepdims, f);
}

/* argmax (k == RED_MAX) or argmin: the extreme, then its first index. */
static tex_tensor *arg_extreme(tex_ctx *ctx, const char *op, const char *dflt, const char *name,
                               tex_tensor *x, int axis, int keepdims, red_kind k)
{
    if (texi_ops_check(ctx, op, 1, &x, (const char *[]){"x"}))
        return NULL;
    int ax = texi_ops_axis(ctx, op, x, axis), nd = tex_tensor_ndim(x);
    texi_ops_frame f1, f2;
    if (ax < 0 || axis_frame(ctx, x, ax, keepdims != 0, &f1) ||
        axis_frame(ctx, x, ax, keepdims != 0, &f2))
        return NULL;
    const char *out = texi_ops_name(name, dflt);
    char nm[TEXI_OPS_NAME_MAX];
    tex_tensor *ext =
        reduce_stage(ctx, texi_ops_stage_name(nm, sizeof nm, out, k == RED_MAX ? "max" : "min"), k,
                     tex_at(x, nd, f1.idx), &f1);
    tex_expr *v = tex_at(x, nd, f2.idx), *e = tex_at(ext, f2.ndim, f2.ivs);
    tex_expr *hit = tex_eq(v, e);
    tex_dtype t = tex_tensor_dtype(x);
    if (t == TEX_F16 || t == TEX_BF16 || t == TEX_F32 || t == TEX_F64)
        hit = tex_or(hit, tex_ne(v, v)); /* the first NaN */
    tex_expr *k_idx = tex_cast(TEX_I64, f2.idx[ax]);
    tex_expr *none = tex_cast(TEX_I64, tex_tensor_dim(x, ax));
    return reduce_stage(ctx, out, RED_MIN, tex_select(hit, k_idx, none), &f2);
}

tex_tensor *tex_op_argmax(tex_ctx *ctx, const char *name, tex_tensor *x, int axis, int keepdims)
{
    return arg_extreme(ctx, "tex_op_argmax", "argmax", name, x, axis, keepdims, RED_MAX);
}

tex_tensor *tex_op_argmin(tex_ctx *ctx, const char *name, tex_tensor *x, int axis, int keepdims)
{
    return arg_extreme(ctx, "tex_op_argmin", "argmin", name, x, axis, keepdims, RED_MIN);
}

/* x - max at point idx of x's shape (max keeps the reduced dim). */
static tex_expr *centered(tex_ctx *ctx, tex_tensor *x, tex_tensor *mx, tex_expr *const idx[])
{
    int nd = tex_tensor_ndim(x);
    return tex_sub(tex_at(x, nd, idx), texi_ops_bcast_load(ctx, mx, nd, idx));
}

/* softmax's stages after the max: NAME_exp, NAME_sum, NAME = exp * (1 / sum)
 * (one division per row, hoisted out of the row's loop, instead of one per
 * element; as PyTorch's and oneDNN's softmax do). */
static tex_tensor *softmax_tail(tex_ctx *ctx, const char *out, tex_tensor *x, tex_tensor *mx,
                                const texi_ops_frame *f, tex_iter *const axes[],
                                tex_expr *const ivs[])
{
    int nd = tex_tensor_ndim(x);
    char nm[TEXI_OPS_NAME_MAX];
    tex_iter *eaxes[TEXI_OPS_MAX_NDIM];
    tex_expr *eivs[TEXI_OPS_MAX_NDIM];
    if (texi_ops_axes_like(ctx, x, eaxes, eivs))
        return NULL;
    tex_tensor *e = tex_compute(ctx, texi_ops_stage_name(nm, sizeof nm, out, "exp"), nd, eaxes,
                                tex_exp(centered(ctx, x, mx, eivs)));
    tex_tensor *sum = reduce_stage(ctx, texi_ops_stage_name(nm, sizeof nm, out, "sum"), RED_SUM,
                                   tex_at(e, nd, f->idx), f);
    tex_expr *inv =
        tex_div(tex_const(ctx, tex_tensor_dtype(x), 1), texi_ops_bcast_load(ctx, sum, nd, ivs));
    return tex_compute(ctx, out, nd, axes, tex_mul(tex_at(e, nd, ivs), inv));
}

/* log_softmax's stages after the max: NAME_sum of exp(x - max), then
 * NAME = x - max - log(sum). */
static tex_tensor *log_softmax_tail(tex_ctx *ctx, const char *out, tex_tensor *x, tex_tensor *mx,
                                    const texi_ops_frame *f, tex_iter *const axes[],
                                    tex_expr *const ivs[])
{
    int nd = tex_tensor_ndim(x);
    char nm[TEXI_OPS_NAME_MAX];
    tex_tensor *sum = reduce_stage(ctx, texi_ops_stage_name(nm, sizeof nm, out, "sum"), RED_SUM,
                                   tex_exp(centered(ctx, x, mx, f->idx)), f);
    return tex_compute(
        ctx, out, nd, axes,
        tex_sub(centered(ctx, x, mx, ivs), tex_log(texi_ops_bcast_load(ctx, sum, nd, ivs))));
}

/* softmax (log == false) or log_softmax of x along axis. */
static tex_tensor *softmax(tex_ctx *ctx, const char *op, const char *dflt, const char *name,
                           tex_tensor *x, int axis, bool log)
{
    if (texi_ops_check(ctx, op, 1, &x, (const char *[]){"x"}) ||
        texi_ops_need_float(ctx, op, x, "x"))
        return NULL;
    int ax = texi_ops_axis(ctx, op, x, axis);
    texi_ops_frame f1, f2;
    tex_iter *axes[TEXI_OPS_MAX_NDIM];
    tex_expr *ivs[TEXI_OPS_MAX_NDIM];
    if (ax < 0 || axis_frame(ctx, x, ax, true, &f1) || axis_frame(ctx, x, ax, true, &f2) ||
        texi_ops_axes_like(ctx, x, axes, ivs))
        return NULL;
    const char *out = texi_ops_name(name, dflt);
    char nm[TEXI_OPS_NAME_MAX];
    tex_tensor *mx = reduce_stage(ctx, texi_ops_stage_name(nm, sizeof nm, out, "max"), RED_MAX,
                                  tex_at(x, tex_tensor_ndim(x), f1.idx), &f1);
    return log ? log_softmax_tail(ctx, out, x, mx, &f2, axes, ivs)
               : softmax_tail(ctx, out, x, mx, &f2, axes, ivs);
}

tex_tensor *tex_op_softmax(tex_ctx *ctx, const char *name, tex_tensor *x, int axis)
{
    return softmax(ctx, "tex_op_softmax", "softmax", name, x, axis, false);
}

tex_tensor *tex_op_log_softmax(tex_ctx *ctx, const char *name, tex_tensor *x, int axis)
{
    return softmax(ctx, "tex_op_log_softmax", "log_softmax", name, x, axis, true);
}
