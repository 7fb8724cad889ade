/*
 * 2-D convolution in NCHW and NHWC with stride, padding, dilation and
 * groups (depthwise included). One reduction stage over (channel of the
 * group, ry, rx) reading a padded copy of x (a tex_op_pad stage NAME_pad,
 * only when padding > 0, which a schedule may inline or attach). The
 * layouts differ only in where each dim sits: `conv_dims` maps the roles
 * (N, C, H, W of x; F, C / groups, KH, KW of w) to dim positions once.
 * tex_op_conv2d_gemm computes the same values as an implicit GEMM: one
 * reduce axis over C / groups * KH * KW (no im2col buffer), decomposed
 * into channel and window position inside the body. The blocked layout
 * (TEX_LAYOUT_NCHWC, conv2d_blocked) has dims of its own: 5-D x and out,
 * 6-D w, and reduce axes (channel block, ry, rx, channel in the block).
 */
#include "ops/ops.h"

/* Positions of the roles in x (n, c, h, w) and w (f, c, kh, kw). */
typedef struct {
    int xn, xc, xh, xw;
    int wf, wc, wkh, wkw;
} conv_dims;

static const conv_dims nchw = {0, 1, 2, 3, 0, 1, 2, 3};
static const conv_dims nhwc = {0, 3, 1, 2, 3, 2, 0, 1};

/* The constant kernel size of w's dim d in *k; 0 or TEX_EINVAL. */
static int kernel_dim(tex_ctx *ctx, const char *op, tex_tensor *w, int d, int64_t *k)
{
    if (tex_expr_const_int(tex_tensor_dim(w, d), k) && *k >= 1)
        return 0;
    char s[64];
    texi_ops_dim_str(tex_tensor_dim(w, d), s, sizeof s);
    return tex_set_error(ctx, TEX_EINVAL, "%s: w's dim %d (%s) must be a constant kernel size >= 1",
                         op, d, s);
}

/* Checks the channel and filter counts against groups: C = groups * w's
 * channel dim, F a multiple of groups. */
static int check_groups(tex_ctx *ctx, const char *op, tex_tensor *x, tex_tensor *w,
                        const conv_dims *L, int groups)
{
    tex_expr *C = tex_tensor_dim(x, L->xc), *Cg = tex_tensor_dim(w, L->wc);
    tex_expr *F = tex_tensor_dim(w, L->wf);
    char sc[64], sg[64], sf[64];
    texi_ops_dim_str(C, sc, sizeof sc);
    texi_ops_dim_str(Cg, sg, sizeof sg);
    texi_ops_dim_str(F, sf, sizeof sf);
    if (!tex_expr_equal(tex_mul(Cg, tex_int(ctx, groups)), C))
        return tex_set_error(
            ctx, TEX_EINVAL,
            "%s: %s's dim %d (C = %s) != %d groups * %s's dim %d (C / groups = %s)", op,
            tex_tensor_name(x), L->xc, sc, groups, tex_tensor_name(w), L->wc, sg);
    int64_t f;
    if (groups > 1 && !(tex_expr_const_int(F, &f) && f % groups == 0))
        return tex_set_error(ctx, TEX_EINVAL,
                             "%s: %s's dim %d (F = %s) is not a multiple of %d groups", op,
                             tex_tensor_name(w), L->wf, sf, groups);
    return 0;
}

/* x (padded when pad is non-zero) read by output axes ivs and reduce axes
 * rc, ry, rx, and w read at the same point; their product. */
static tex_expr *conv_body(tex_ctx *ctx, tex_tensor *src, tex_tensor *w, const conv_dims *L,
                           tex_expr *const ivs[], tex_expr *const r[], const int64_t s[2],
                           const int64_t dil[2], int groups)
{
    tex_expr *f = ivs[L->xc], *ci = r[0];
    if (groups > 1) {
        int64_t F;
        tex_expr_const_int(tex_tensor_dim(w, L->wf), &F);
        tex_expr *g = tex_floordiv(f, tex_int(ctx, F / groups));
        ci = tex_add(tex_mul(g, tex_tensor_dim(w, L->wc)), r[0]);
    }
    tex_expr *xi[4], *wi[4];
    xi[L->xn] = ivs[L->xn];
    xi[L->xc] = ci;
    xi[L->xh] =
        tex_add(tex_mul(ivs[L->xh], tex_int(ctx, s[0])), tex_mul(r[1], tex_int(ctx, dil[0])));
    xi[L->xw] =
        tex_add(tex_mul(ivs[L->xw], tex_int(ctx, s[1])), tex_mul(r[2], tex_int(ctx, dil[1])));
    wi[L->wf] = f;
    wi[L->wc] = r[0];
    wi[L->wkh] = r[1];
    wi[L->wkw] = r[2];
    return tex_mul(tex_at(src, 4, xi), tex_at(w, 4, wi));
}

/* The reduction axes and their expressions (channel, ry, rx): three axes,
 * or for the implicit GEMM one axis over Cg * KH * KW in w's memory order
 * (NCHW: channel, ry, rx; NHWC: ry, rx, channel) split by floordiv/mod. */
static int reduce_axes(tex_ctx *ctx, tex_tensor *w, const conv_dims *L, const int64_t k[2],
                       bool gemm, int *n, tex_iter *r[3], tex_expr *rv[3])
{
    tex_expr *Cg = tex_tensor_dim(w, L->wc), *KH = tex_int(ctx, k[0]), *KW = tex_int(ctx, k[1]);
    if (!gemm) {
        *n = 3;
        r[0] = tex_reduce_axis(ctx, "rc", Cg);
        r[1] = tex_reduce_axis(ctx, "ry", KH);
        r[2] = tex_reduce_axis(ctx, "rx", KW);
        for (int i = 0; i < 3; i++)
            rv[i] = tex_iv(r[i]);
        return rv[0] && rv[1] && rv[2] ? 0 : tex_errcode(ctx);
    }
    *n = 1;
    r[0] = tex_reduce_axis(ctx, "rk", texi_ops_fold(ctx, tex_mul(tex_mul(Cg, KH), KW)));
    tex_expr *t = tex_iv(r[0]);
    if (L == &nchw) {
        rv[0] = tex_floordiv(t, tex_int(ctx, k[0] * k[1]));
        rv[1] = tex_floormod(tex_floordiv(t, KW), KH);
        rv[2] = tex_floormod(t, KW);
    } else {
        rv[1] = tex_floordiv(t, tex_mul(KW, Cg));
        rv[2] = tex_floormod(tex_floordiv(t, Cg), KW);
        rv[0] = tex_floormod(t, Cg);
    }
    return rv[0] && rv[1] && rv[2] ? 0 : tex_errcode(ctx);
}

/* tex_op_conv2d in TEX_LAYOUT_NCHWC: x [N, C / CB, H, W, CB], w [F / FB,
 * C / CB, KH, KW, CB, FB], out [N, F / FB, OH, OW, FB], one group:
 * out[n, fo, y, x, fi] = sum over co, ry, rx, ci of
 *   xpad[n, co, y * s0 + ry * d0, x * s1 + rx * d1, ci] * w[fo, co, ry, rx, ci, fi]. */
static tex_tensor *conv2d_blocked(tex_ctx *ctx, const char *op, const char *out, tex_tensor *x,
                                  tex_tensor *w, const int64_t s[2], const int64_t p[2],
                                  const int64_t dil[2], int groups)
{
    if (tex_tensor_ndim(x) != 5 || tex_tensor_ndim(w) != 6)
        return TEXI_OPS_FAIL(ctx, TEX_EINVAL,
                             "%s: the NCHWc layout takes a 5-D x and a 6-D w ('%s' has %d dims, "
                             "'%s' %d)",
                             op, tex_tensor_name(x), tex_tensor_ndim(x), tex_tensor_name(w),
                             tex_tensor_ndim(w));
    if (groups != 1)
        return TEXI_OPS_FAIL(ctx, TEX_EINVAL, "%s: the NCHWc layout takes one group, not %d", op,
                             groups);
    int64_t k[2];
    if (kernel_dim(ctx, op, w, 2, &k[0]) || kernel_dim(ctx, op, w, 3, &k[1]) ||
        texi_ops_same_dim(ctx, op, x, 1, w, 1, "C / CB") ||
        texi_ops_same_dim(ctx, op, x, 4, w, 4, "CB"))
        return NULL;
    char nm[TEXI_OPS_NAME_MAX];
    tex_tensor *src = x;
    if (p[0] || p[1]) {
        int64_t pad[5] = {0, 0, p[0], p[1], 0};
        src = tex_op_pad(ctx, texi_ops_stage_name(nm, sizeof nm, out, "pad"), x, pad, pad, 0.0);
    }
    tex_expr *shape[5] = {
        tex_tensor_dim(x, 0), tex_tensor_dim(w, 0),
        texi_ops_window_len(ctx, op, "H", tex_tensor_dim(x, 2), k[0], s[0], p[0], dil[0]),
        texi_ops_window_len(ctx, op, "W", tex_tensor_dim(x, 3), k[1], s[1], p[1], dil[1]),
        tex_tensor_dim(w, 5)};
    tex_iter *axes[5];
    tex_expr *iv[5];
    if (!src || !shape[2] || !shape[3] || texi_ops_axes(ctx, 5, shape, axes, iv))
        return NULL;
    tex_iter *r[4] = {tex_reduce_axis(ctx, "rc", tex_tensor_dim(x, 1)),
                      tex_reduce_axis(ctx, "ry", tex_int(ctx, k[0])),
                      tex_reduce_axis(ctx, "rx", tex_int(ctx, k[1])),
                      tex_reduce_axis(ctx, "rci", tex_tensor_dim(x, 4))};
    tex_expr *rv[4];
    for (int i = 0; i < 4; i++)
        if (!(rv[i] = tex_iv(r[i])))
            return NULL;
    tex_expr *y = tex_add(tex_mul(iv[2], tex_int(ctx, s[0])), tex_mul(rv[1], tex_int(ctx, dil[0])));
    tex_expr *xx =
        tex_add(tex_mul(iv[3], tex_int(ctx, s[1])), tex_mul(rv[2], tex_int(ctx, dil[1])));
    tex_expr *body = tex_mul(TEX_AT(src, iv[0], rv[0], y, xx, rv[3]),
                             TEX_AT(w, iv[1], rv[0], rv[1], rv[2], rv[3], iv[4]));
    return tex_compute(ctx, out, 5, axes, tex_sum(body, 4, r));
}

/* tex_op_conv2d, or with gemm its implicit-GEMM form. */
static tex_tensor *conv2d(tex_ctx *ctx, const char *op, const char *out, tex_tensor *x,
                          tex_tensor *w, const int64_t stride[2], const int64_t padding[2],
                          const int64_t dilation[2], int groups, tex_layout layout, bool gemm)
{
    if (texi_ops_check(ctx, op, 2, (tex_tensor *[]){x, w}, (const char *[]){"x", "w"}))
        return NULL;
    bool blocked = layout == TEX_LAYOUT_NCHWC;
    if (blocked && gemm)
        return TEXI_OPS_FAIL(
            ctx, TEX_EINVAL,
            "%s: the NCHWc layout has no implicit-GEMM form (tex_op_conv2d takes it)", op);
    if (layout != TEX_LAYOUT_NCHW && layout != TEX_LAYOUT_NHWC && !blocked)
        return TEXI_OPS_FAIL(ctx, TEX_EINVAL, "%s: unknown layout %d", op, (int)layout);
    const conv_dims *L = layout == TEX_LAYOUT_NCHW ? &nchw : &nhwc;
    tex_tensor *ops[2] = {x, w};
    for (int i = 0; i < 2 && !blocked; i++)
        if (tex_tensor_ndim(ops[i]) != 4)
            return TEXI_OPS_FAIL(ctx, TEX_EINVAL, "%s: '%s' has %d dims, not 4", op,
                                 tex_tensor_name(ops[i]), tex_tensor_ndim(ops[i]));
    int64_t s[2] = {0}, p[2] = {0}, dil[2] = {0}, k[2] = {0};
    if (groups < 1)
        return TEXI_OPS_FAIL(ctx, TEX_EINVAL, "%s: %d groups (must be >= 1)", op, groups);
    if (texi_ops_pair(ctx, op, "stride", stride, 1, 1, s) ||
        texi_ops_pair(ctx, op, "padding", padding, 0, 0, p) ||
        texi_ops_pair(ctx, op, "dilation", dilation, 1, 1, dil))
        return NULL;
    if (blocked)
        return conv2d_blocked(ctx, op, out, x, w, s, p, dil, groups);
    if (kernel_dim(ctx, op, w, L->wkh, &k[0]) || kernel_dim(ctx, op, w, L->wkw, &k[1]) ||
        check_groups(ctx, op, x, w, L, groups))
        return NULL;
    char nm[TEXI_OPS_NAME_MAX];
    tex_tensor *src = x;
    if (p[0] || p[1]) {
        int64_t pad[4] = {0, 0, 0, 0};
        pad[L->xh] = p[0];
        pad[L->xw] = p[1];
        src = tex_op_pad(ctx, texi_ops_stage_name(nm, sizeof nm, out, "pad"), x, pad, pad, 0.0);
    }
    tex_expr *shape[4];
    shape[L->xn] = tex_tensor_dim(x, L->xn);
    shape[L->xc] = tex_tensor_dim(w, L->wf);
    shape[L->xh] =
        texi_ops_window_len(ctx, op, "H", tex_tensor_dim(x, L->xh), k[0], s[0], p[0], dil[0]);
    shape[L->xw] =
        texi_ops_window_len(ctx, op, "W", tex_tensor_dim(x, L->xw), k[1], s[1], p[1], dil[1]);
    tex_iter *axes[4];
    tex_expr *ivs[4];
    if (!src || !shape[L->xh] || !shape[L->xw] || texi_ops_axes(ctx, 4, shape, axes, ivs))
        return NULL;
    tex_iter *r[3];
    tex_expr *rv[3];
    int nr;
    if (reduce_axes(ctx, w, L, k, gemm, &nr, r, rv))
        return NULL;
    tex_expr *body = conv_body(ctx, src, w, L, ivs, rv, s, dil, groups);
    return tex_compute(ctx, out, 4, axes, tex_sum(body, nr, r));
}

tex_tensor *tex_op_conv2d(tex_ctx *ctx, const char *name, tex_tensor *x, tex_tensor *w,
                          const int64_t stride[2], const int64_t padding[2],
                          const int64_t dilation[2], int groups, tex_layout layout)
{
    return conv2d(ctx, "tex_op_conv2d", texi_ops_name(name, "conv2d"), x, w, stride, padding,
                  dilation, groups, layout, false);
}

tex_tensor *tex_op_conv2d_gemm(tex_ctx *ctx, const char *name, tex_tensor *x, tex_tensor *w,
                               const int64_t stride[2], const int64_t padding[2],
                               const int64_t dilation[2], int groups, tex_layout layout)
{
    return conv2d(ctx, "tex_op_conv2d_gemm", texi_ops_name(name, "conv2d_gemm"), x, w, stride,
                  padding, dilation, groups, layout, true);
}
