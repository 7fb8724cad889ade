/*
 * Normalization over the trailing axes: layernorm (mean and variance, then
 * (x - mean) * rsqrt(var + eps) * gamma + beta) and rmsnorm (x * rsqrt(
 * mean(x^2) + eps) * gamma). The statistics are stages of their own that
 * keep the normalized dims with size 1 (NAME_sum, NAME_mean, NAME_sqsum,
 * NAME_var; rmsnorm: NAME_sqsum, NAME_ms), read through broadcasting; the
 * variance is the mean of squared differences from the mean (two passes
 * over x, no cancellation).
 */
#include "ops/ops.h"

/* The mean of body over frame f: NAME_<sum_sfx> then NAME_<mean_sfx>. */
static tex_tensor *mean_stage(tex_ctx *ctx, const char *out, const char *sum_sfx,
                              const char *mean_sfx, const texi_ops_frame *f, tex_expr *body)
{
    char nm[TEXI_OPS_NAME_MAX];
    tex_tensor *sum = tex_compute(ctx, texi_ops_stage_name(nm, sizeof nm, out, sum_sfx), f->ndim,
                                  f->axes, tex_sum(body, f->n_red, f->raxes));
    return texi_ops_divide_count(ctx, texi_ops_stage_name(nm, sizeof nm, out, mean_sfx), sum, f);
}

/* The checks shared by both: x a float tensor, n_axes in range (the reduced
 * dims filled in), and the optional operands opt[0 .. n_opt) (gamma, beta)
 * shaped as the normalized dims when given. 0 or the error. */
static int norm_args(tex_ctx *ctx, const char *op, tex_tensor *x, int n_opt,
                     tex_tensor *const opt[], int n_axes, bool reduced[])
{
    static const char *const names[2] = {"gamma", "beta"};
    int rc = texi_ops_check(ctx, op, 1, &x, (const char *[]){"x"});
    if (rc)
        return rc;
    if (texi_ops_need_float(ctx, op, x, "x") || texi_ops_trailing(ctx, op, x, n_axes, reduced))
        return tex_errcode(ctx);
    for (int i = 0; i < n_opt; i++) {
        rc = texi_ops_check_optional(ctx, op, opt[i], names[i]);
        if (rc < 0)
            return rc;
        if (rc == 1 && texi_ops_trailing_shape(ctx, op, x, n_axes, opt[i], names[i]))
            return tex_errcode(ctx);
    }
    return 0;
}

/* v * gamma + beta at point ivs of x's shape, each factor when given. */
static tex_expr *affine(tex_ctx *ctx, tex_expr *v, tex_tensor *gamma, tex_tensor *beta, int nd,
                        tex_expr *const ivs[])
{
    if (gamma)
        v = tex_mul(v, texi_ops_bcast_load(ctx, gamma, nd, ivs));
    if (beta)
        v = tex_add(v, texi_ops_bcast_load(ctx, beta, nd, ivs));
    return v;
}

tex_tensor *tex_op_layernorm(tex_ctx *ctx, const char *name, tex_tensor *x, tex_tensor *gamma,
                             tex_tensor *beta, int n_axes, double eps)
{
    const char *op = "tex_op_layernorm";
    bool reduced[TEXI_OPS_MAX_NDIM];
    texi_ops_frame f1, f2;
    tex_iter *axes[TEXI_OPS_MAX_NDIM];
    tex_expr *ivs[TEXI_OPS_MAX_NDIM];
    if (norm_args(ctx, op, x, 2, (tex_tensor *[]){gamma, beta}, n_axes, reduced) ||
        texi_ops_frame_init(ctx, x, reduced, true, &f1) ||
        texi_ops_frame_init(ctx, x, reduced, true, &f2) || texi_ops_axes_like(ctx, x, axes, ivs))
        return NULL;
    const char *out = texi_ops_name(name, "layernorm");
    int nd = tex_tensor_ndim(x);
    tex_tensor *mean = mean_stage(ctx, out, "sum", "mean", &f1, tex_at(x, nd, f1.idx));
    tex_expr *d = tex_sub(tex_at(x, nd, f2.idx), texi_ops_bcast_load(ctx, mean, nd, f2.idx));
    tex_tensor *var = mean_stage(ctx, out, "sqsum", "var", &f2, tex_mul(d, d));
    tex_expr *eps_c = tex_const(ctx, tex_tensor_dtype(x), eps);
    tex_expr *inv = tex_rsqrt(tex_add(texi_ops_bcast_load(ctx, var, nd, ivs), eps_c));
    tex_expr *v =
        tex_mul(tex_sub(tex_at(x, nd, ivs), texi_ops_bcast_load(ctx, mean, nd, ivs)), inv);
    return tex_compute(ctx, out, nd, axes, affine(ctx, v, gamma, beta, nd, ivs));
}

tex_tensor *tex_op_rmsnorm(tex_ctx *ctx, const char *name, tex_tensor *x, tex_tensor *gamma,
                           int n_axes, double eps)
{
    const char *op = "tex_op_rmsnorm";
    bool reduced[TEXI_OPS_MAX_NDIM];
    texi_ops_frame f;
    tex_iter *axes[TEXI_OPS_MAX_NDIM];
    tex_expr *ivs[TEXI_OPS_MAX_NDIM];
    if (norm_args(ctx, op, x, 1, &gamma, n_axes, reduced) ||
        texi_ops_frame_init(ctx, x, reduced, true, &f) || texi_ops_axes_like(ctx, x, axes, ivs))
        return NULL;
    const char *out = texi_ops_name(name, "rmsnorm");
    int nd = tex_tensor_ndim(x);
    tex_expr *xv = tex_at(x, nd, f.idx);
    tex_tensor *ms = mean_stage(ctx, out, "sqsum", "ms", &f, tex_mul(xv, xv));
    tex_expr *eps_c = tex_const(ctx, tex_tensor_dtype(x), eps);
    tex_expr *inv = tex_rsqrt(tex_add(texi_ops_bcast_load(ctx, ms, nd, ivs), eps_c));
    return tex_compute(ctx, out, nd, axes,
                       affine(ctx, tex_mul(tex_at(x, nd, ivs), inv), gamma, NULL, nd, ivs));
}
