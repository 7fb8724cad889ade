/*
 * Elementwise operators: the binary ones with numpy broadcasting (add ...
 * pow), the activations (relu, gelu in its erf and tanh forms, silu,
 * sigmoid, tanh), cast and bias_add. Each is one compute stage over the
 * output's shape; broadcasting reads a size-1 dim at index 0 (ops.h).
 */
#include "ops/ops.h"

#include <math.h>

typedef tex_expr *(*binary_fn)(tex_expr *a, tex_expr *b);

/* out[ivs] = fn(a[bcast ivs], b[bcast ivs]) over the broadcast shape. */
static tex_tensor *binary(tex_ctx *ctx, const char *op, const char *dflt, const char *name,
                          tex_tensor *a, tex_tensor *b, binary_fn fn)
{
    if (texi_ops_check(ctx, op, 2, (tex_tensor *[]){a, b}, (const char *[]){"a", "b"}))
        return NULL;
    tex_expr *sa[TEXI_OPS_MAX_NDIM], *sb[TEXI_OPS_MAX_NDIM], *shape[TEXI_OPS_MAX_NDIM] = {NULL};
    tex_expr *ivs[TEXI_OPS_MAX_NDIM];
    tex_iter *axes[TEXI_OPS_MAX_NDIM];
    int na = tex_tensor_ndim(a), nb = tex_tensor_ndim(b);
    texi_ops_shape(a, sa);
    texi_ops_shape(b, sb);
    int n = texi_ops_bcast_shape(ctx, op, tex_tensor_name(a), na, sa, tex_tensor_name(b), nb, sb,
                                 shape);
    if (n < 0 || texi_ops_axes(ctx, n, shape, axes, ivs))
        return NULL;
    tex_expr *body = fn(texi_ops_bcast_load(ctx, a, n, ivs), texi_ops_bcast_load(ctx, b, n, ivs));
    return tex_compute(ctx, texi_ops_name(name, dflt), n, axes, body);
}

tex_tensor *tex_op_add(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b)
{
    return binary(ctx, "tex_op_add", "add", name, a, b, tex_add);
}

tex_tensor *tex_op_sub(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b)
{
    return binary(ctx, "tex_op_sub", "sub", name, a, b, tex_sub);
}

tex_tensor *tex_op_mul(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b)
{
    return binary(ctx, "tex_op_mul", "mul", name, a, b, tex_mul);
}

tex_tensor *tex_op_div(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b)
{
    return binary(ctx, "tex_op_div", "div", name, a, b, tex_div);
}

tex_tensor *tex_op_maximum(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b)
{
    return binary(ctx, "tex_op_maximum", "maximum", name, a, b, tex_max);
}

tex_tensor *tex_op_minimum(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b)
{
    return binary(ctx, "tex_op_minimum", "minimum", name, a, b, tex_min);
}

tex_tensor *tex_op_pow(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b)
{
    return binary(ctx, "tex_op_pow", "pow", name, a, b, tex_pow);
}

/* A float constant of v's dtype (f32 for an integer v, which the math
 * builders convert to f32 as well). */
static tex_expr *fconst(tex_ctx *ctx, tex_expr *v, double c)
{
    tex_dtype t = tex_expr_dtype(v);
    bool is_float = t == TEX_F16 || t == TEX_BF16 || t == TEX_F32 || t == TEX_F64;
    return tex_const(ctx, is_float ? t : TEX_F32, c);
}

/* v converted to a float dtype as the math builders would. */
static tex_expr *as_float(tex_ctx *ctx, tex_expr *v)
{
    return tex_cast(tex_expr_dtype(fconst(ctx, v, 0)), v);
}

static tex_expr *relu_body(tex_ctx *ctx, tex_expr *v)
{
    return tex_max(v, tex_const(ctx, tex_expr_dtype(v), 0));
}

/* x/2 * (1 + erf(x / sqrt 2)) */
static tex_expr *gelu_body(tex_ctx *ctx, tex_expr *v)
{
    v = as_float(ctx, v);
    tex_expr *e = tex_erf(tex_mul(v, fconst(ctx, v, 1.0 / sqrt(2.0))));
    return tex_mul(tex_mul(v, fconst(ctx, v, 0.5)), tex_add(fconst(ctx, v, 1), e));
}

/* x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) */
static tex_expr *gelu_tanh_body(tex_ctx *ctx, tex_expr *v)
{
    v = as_float(ctx, v);
    tex_expr *cube = tex_mul(tex_mul(v, v), v);
    tex_expr *inner = tex_add(v, tex_mul(fconst(ctx, v, 0.044715), cube));
    tex_expr *t = tex_tanh(tex_mul(fconst(ctx, v, sqrt(2.0 / M_PI)), inner));
    return tex_mul(tex_mul(v, fconst(ctx, v, 0.5)), tex_add(fconst(ctx, v, 1), t));
}

static tex_expr *silu_body(tex_ctx *ctx, tex_expr *v)
{
    v = as_float(ctx, v);
    return tex_mul(v, tex_sigmoid(v));
}

static tex_expr *sigmoid_body(tex_ctx *ctx, tex_expr *v)
{
    (void)ctx;
    return tex_sigmoid(v);
}

static tex_expr *tanh_body(tex_ctx *ctx, tex_expr *v)
{
    (void)ctx;
    return tex_tanh(v);
}

/* The activation `body` applied to x, after the checks of call op. */
static tex_tensor *unary(tex_ctx *ctx, const char *op, const char *dflt, const char *name,
                         tex_tensor *x, tex_expr *(*body)(tex_ctx *ctx, tex_expr *v))
{
    if (texi_ops_check(ctx, op, 1, &x, (const char *[]){"x"}))
        return NULL;
    return texi_ops_map(ctx, texi_ops_name(name, dflt), x, body);
}

tex_tensor *tex_op_relu(tex_ctx *ctx, const char *name, tex_tensor *x)
{
    return unary(ctx, "tex_op_relu", "relu", name, x, relu_body);
}

tex_tensor *tex_op_gelu(tex_ctx *ctx, const char *name, tex_tensor *x)
{
    return unary(ctx, "tex_op_gelu", "gelu", name, x, gelu_body);
}

tex_tensor *tex_op_gelu_tanh(tex_ctx *ctx, const char *name, tex_tensor *x)
{
    return unary(ctx, "tex_op_gelu_tanh", "gelu_tanh", name, x, gelu_tanh_body);
}

tex_tensor *tex_op_silu(tex_ctx *ctx, const char *name, tex_tensor *x)
{
    return unary(ctx, "tex_op_silu", "silu", name, x, silu_body);
}

tex_tensor *tex_op_sigmoid(tex_ctx *ctx, const char *name, tex_tensor *x)
{
    return unary(ctx, "tex_op_sigmoid", "sigmoid", name, x, sigmoid_body);
}

tex_tensor *tex_op_tanh(tex_ctx *ctx, const char *name, tex_tensor *x)
{
    return unary(ctx, "tex_op_tanh", "tanh", name, x, tanh_body);
}

tex_tensor *tex_op_cast(tex_ctx *ctx, const char *name, tex_tensor *x, tex_dtype t)
{
    if (texi_ops_check(ctx, "tex_op_cast", 1, &x, (const char *[]){"x"}))
        return NULL;
    if ((int)t < (int)TEX_BOOL || (int)t > (int)TEX_F64)
        return TEXI_OPS_FAIL(ctx, TEX_EINVAL, "tex_op_cast: unknown dtype %d", (int)t);
    tex_iter *axes[TEXI_OPS_MAX_NDIM];
    tex_expr *ivs[TEXI_OPS_MAX_NDIM];
    int nd = tex_tensor_ndim(x);
    if (texi_ops_axes_like(ctx, x, axes, ivs))
        return NULL;
    return tex_compute(ctx, texi_ops_name(name, "cast"), nd, axes, tex_cast(t, tex_at(x, nd, ivs)));
}

tex_tensor *tex_op_bias_add(tex_ctx *ctx, const char *name, tex_tensor *x, tex_tensor *bias,
                            int axis)
{
    const char *op = "tex_op_bias_add";
    if (texi_ops_check(ctx, op, 2, (tex_tensor *[]){x, bias}, (const char *[]){"x", "bias"}))
        return NULL;
    int ax = texi_ops_axis(ctx, op, x, axis);
    if (ax < 0)
        return NULL;
    tex_expr *dx = tex_tensor_dim(x, ax), *db = tex_tensor_dim(bias, 0);
    char sx[64], sb[64];
    texi_ops_dim_str(dx, sx, sizeof sx);
    if (tex_tensor_ndim(bias) != 1) {
        tex_set_error(ctx, TEX_EINVAL, "%s: bias '%s' has %d dims, not 1 (x's dim %d is %s)", op,
                      tex_tensor_name(bias), tex_tensor_ndim(bias), ax, sx);
        return NULL;
    }
    if (!tex_expr_equal(dx, db)) {
        texi_ops_dim_str(db, sb, sizeof sb);
        tex_set_error(ctx, TEX_EINVAL, "%s: %s's dim 0 (%s) != %s's dim %d (%s)", op,
                      tex_tensor_name(bias), sb, tex_tensor_name(x), ax, sx);
        return NULL;
    }
    tex_iter *axes[TEXI_OPS_MAX_NDIM];
    tex_expr *ivs[TEXI_OPS_MAX_NDIM];
    int nd = tex_tensor_ndim(x);
    if (texi_ops_axes_like(ctx, x, axes, ivs))
        return NULL;
    tex_expr *body = tex_add(tex_at(x, nd, ivs), TEX_AT(bias, ivs[ax]));
    return tex_compute(ctx, texi_ops_name(name, "bias_add"), nd, axes, body);
}
