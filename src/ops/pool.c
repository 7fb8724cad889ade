/*
 * Pooling over NCHW tensors: max and average (counting the padding or not)
 * with a window, stride and padding, and global max/average pooling.
 *
 * Padding is a tex_op_pad stage (NAME_pad: -inf for max, 0 for average),
 * so each pooled element is a plain reduction over the window, and a
 * schedule may inline or attach the padding. Average pooling is two stages:
 * NAME_sum over the window, then NAME = sum / count, the count being the
 * window's size or the number of x's elements inside it (an expression of
 * the output position). Global pooling is tex_op_max / tex_op_mean over
 * H and W with keepdims.
 */
#include "ops/ops.h"

#include <math.h>

typedef enum { POOL_MAX, POOL_AVG_PAD, POOL_AVG_EXCL } pool_kind;

/* The window's first row/column (y * stride - pad) for output index iv. */
static tex_expr *window_start(tex_ctx *ctx, tex_expr *iv, int64_t stride, int64_t pad)
{
    return tex_sub(tex_mul(iv, tex_int(ctx, stride)), tex_int(ctx, pad));
}

/* The number of rows (columns) of a window starting at s of length k inside
 * [0, dim). */
static tex_expr *inside(tex_ctx *ctx, tex_expr *s, int64_t k, tex_expr *dim)
{
    tex_expr *lo = tex_max(s, tex_int(ctx, 0));
    tex_expr *hi = tex_min(tex_add(s, tex_int(ctx, k)), dim);
    return tex_sub(hi, lo);
}

/* Checks x (4-D float) and the window parameters of call op; fills k, s, p. */
static int pool_args(tex_ctx *ctx, const char *op, tex_tensor *x, const int64_t kernel[2],
                     const int64_t stride[2], const int64_t padding[2], int64_t k[2], int64_t s[2],
                     int64_t p[2])
{
    int rc = texi_ops_check(ctx, op, 1, &x, (const char *[]){"x"});
    if (rc)
        return rc;
    if (texi_ops_need_float(ctx, op, x, "x"))
        return TEX_ETYPE;
    if (tex_tensor_ndim(x) != 4)
        return tex_set_error(ctx, TEX_EINVAL, "%s: x ('%s') has %d dims, not 4 (NCHW)", op,
                             tex_tensor_name(x), tex_tensor_ndim(x));
    if (!kernel)
        return tex_set_error(ctx, TEX_EINVAL, "%s: the kernel size is NULL", op);
    if (texi_ops_pair(ctx, op, "kernel", kernel, 1, 1, k) ||
        texi_ops_pair(ctx, op, "stride", stride, 1, 1, s) ||
        texi_ops_pair(ctx, op, "padding", padding, 0, 0, p))
        return TEX_EINVAL;
    for (int i = 0; i < 2; i++)
        if (p[i] >= k[i])
            return tex_set_error(ctx, TEX_EINVAL, "%s: padding[%d] = %lld >= kernel[%d] = %lld", op,
                                 i, (long long)p[i], i, (long long)k[i]);
    return 0;
}

static tex_tensor *pool2d(tex_ctx *ctx, const char *op, const char *name, tex_tensor *x,
                          const int64_t kernel[2], const int64_t stride[2],
                          const int64_t padding[2], pool_kind kind)
{
    int64_t k[2] = {0}, s[2] = {0}, p[2] = {0};
    if (pool_args(ctx, op, x, kernel, stride, padding, k, s, p))
        return NULL;
    char nm[TEXI_OPS_NAME_MAX];
    tex_tensor *src = x;
    if (p[0] || p[1])
        src = tex_op_pad(ctx, texi_ops_stage_name(nm, sizeof nm, name, "pad"), x,
                         (int64_t[]){0, 0, p[0], p[1]}, (int64_t[]){0, 0, p[0], p[1]},
                         kind == POOL_MAX ? -INFINITY : 0.0);
    tex_expr *H = tex_tensor_dim(x, 2), *W = tex_tensor_dim(x, 3);
    tex_expr *shape[4] = {tex_tensor_dim(x, 0), tex_tensor_dim(x, 1),
                          texi_ops_window_len(ctx, op, "H", H, k[0], s[0], p[0], 1),
                          texi_ops_window_len(ctx, op, "W", W, k[1], s[1], p[1], 1)};
    tex_iter *axes[4];
    tex_expr *ivs[4];
    if (!src || !shape[2] || !shape[3] || texi_ops_axes(ctx, 4, shape, axes, ivs))
        return NULL;
    tex_iter *r[2] = {tex_reduce_axis(ctx, "ry", tex_int(ctx, k[0])),
                      tex_reduce_axis(ctx, "rx", tex_int(ctx, k[1]))};
    /* in src's coordinates the window starts at y * stride */
    tex_expr *v =
        TEX_AT(src, ivs[0], ivs[1], tex_add(window_start(ctx, ivs[2], s[0], 0), tex_iv(r[0])),
               tex_add(window_start(ctx, ivs[3], s[1], 0), tex_iv(r[1])));
    if (kind == POOL_MAX)
        return tex_compute(ctx, name, 4, axes, tex_reduce_max(v, 2, r));
    tex_tensor *sum = tex_compute(ctx, texi_ops_stage_name(nm, sizeof nm, name, "sum"), 4, axes,
                                  tex_sum(v, 2, r));
    tex_iter *oaxes[4];
    tex_expr *oivs[4];
    if (!sum || texi_ops_axes(ctx, 4, shape, oaxes, oivs))
        return NULL;
    tex_expr *count = tex_int(ctx, k[0] * k[1]);
    if (kind == POOL_AVG_EXCL)
        count = tex_mul(inside(ctx, window_start(ctx, oivs[2], s[0], p[0]), k[0], H),
                        inside(ctx, window_start(ctx, oivs[3], s[1], p[1]), k[1], W));
    tex_expr *avg = tex_div(tex_at(sum, 4, oivs), tex_cast(tex_tensor_dtype(x), count));
    return tex_compute(ctx, name, 4, oaxes, avg);
}

tex_tensor *tex_op_max_pool2d(tex_ctx *ctx, const char *name, tex_tensor *x,
                              const int64_t kernel[2], const int64_t stride[2],
                              const int64_t padding[2])
{
    return pool2d(ctx, "tex_op_max_pool2d", texi_ops_name(name, "max_pool2d"), x, kernel, stride,
                  padding, POOL_MAX);
}

tex_tensor *tex_op_avg_pool2d(tex_ctx *ctx, const char *name, tex_tensor *x,
                              const int64_t kernel[2], const int64_t stride[2],
                              const int64_t padding[2], int count_include_pad)
{
    return pool2d(ctx, "tex_op_avg_pool2d", texi_ops_name(name, "avg_pool2d"), x, kernel, stride,
                  padding, count_include_pad ? POOL_AVG_PAD : POOL_AVG_EXCL);
}

/* Global pooling: the checks of call op, then the reduction over H, W. */
static tex_tensor *global_pool(tex_ctx *ctx, const char *op, const char *name, tex_tensor *x,
                               bool max)
{
    int64_t k[2] = {0}, s[2] = {0}, p[2] = {0};
    if (pool_args(ctx, op, x, (int64_t[]){1, 1}, NULL, NULL, k, s, p))
        return NULL;
    const int hw[2] = {2, 3};
    return max ? tex_op_max(ctx, name, x, 2, hw, 1) : tex_op_mean(ctx, name, x, 2, hw, 1);
}

tex_tensor *tex_op_global_max_pool2d(tex_ctx *ctx, const char *name, tex_tensor *x)
{
    return global_pool(ctx, "tex_op_global_max_pool2d", texi_ops_name(name, "global_max_pool2d"), x,
                       true);
}

tex_tensor *tex_op_global_avg_pool2d(tex_ctx *ctx, const char *name, tex_tensor *x)
{
    return global_pool(ctx, "tex_op_global_avg_pool2d", texi_ops_name(name, "global_avg_pool2d"), x,
                       false);
}
