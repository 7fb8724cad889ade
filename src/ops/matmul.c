/*
 * matmul (either side transposed, batch dims broadcast as numpy does) and
 * dense (x times w transposed, plus an optional bias). matmul is one stage,
 * a sum over K of a[..., i, k] * b[..., k, j] with the batch indices of each
 * operand broadcast (a size-1 batch dim reads index 0); dense is matmul
 * with trans_b followed by bias_add when a bias is given (stages NAME_mm,
 * NAME).
 */
#include "ops/ops.h"

/* Operand t's dim 0 or 1 counting from its last two (which = 0: rows). */
static int mat_dim(const tex_tensor *t, int which)
{
    return tex_tensor_ndim(t) - 2 + which;
}

/* The product for call op (tex_op_matmul or tex_op_dense). */
static tex_tensor *matmul(tex_ctx *ctx, const char *op, const char *name, tex_tensor *a,
                          tex_tensor *b, bool ta, bool tb)
{
    if (texi_ops_check(ctx, op, 2, (tex_tensor *[]){a, b}, (const char *[]){"a", "b"}))
        return NULL;
    tex_tensor *ops[2] = {a, b};
    for (int i = 0; i < 2; i++)
        if (tex_tensor_ndim(ops[i]) < 2)
            return TEXI_OPS_FAIL(ctx, TEX_EINVAL, "%s: '%s' has %d dims; at least 2 are needed", op,
                                 tex_tensor_name(ops[i]), tex_tensor_ndim(ops[i]));
    int ak = mat_dim(a, ta ? 0 : 1), am = mat_dim(a, ta ? 1 : 0);
    int bk = mat_dim(b, tb ? 1 : 0), bn = mat_dim(b, tb ? 0 : 1);
    if (texi_ops_same_dim(ctx, op, a, ak, b, bk, "K"))
        return NULL;
    tex_expr *sa[TEXI_OPS_MAX_NDIM], *sb[TEXI_OPS_MAX_NDIM], *shape[TEXI_OPS_MAX_NDIM] = {NULL};
    texi_ops_shape(a, sa);
    texi_ops_shape(b, sb);
    int nbt = texi_ops_bcast_shape(ctx, op, tex_tensor_name(a), tex_tensor_ndim(a) - 2, sa,
                                   tex_tensor_name(b), tex_tensor_ndim(b) - 2, sb, shape);
    if (nbt < 0)
        return NULL;
    if (nbt + 2 > TEXI_OPS_MAX_NDIM)
        return TEXI_OPS_FAIL(ctx, TEX_EINVAL, "%s: the result has more than %d dims", op,
                             TEXI_OPS_MAX_NDIM);
    shape[nbt] = tex_tensor_dim(a, am);
    shape[nbt + 1] = tex_tensor_dim(b, bn);
    tex_iter *axes[TEXI_OPS_MAX_NDIM];
    tex_expr *ivs[TEXI_OPS_MAX_NDIM], *ia[TEXI_OPS_MAX_NDIM], *ib[TEXI_OPS_MAX_NDIM];
    if (texi_ops_axes(ctx, nbt + 2, shape, axes, ivs))
        return NULL;
    tex_iter *k = tex_reduce_axis(ctx, "k", tex_tensor_dim(a, ak));
    texi_ops_bcast_index(ctx, a, tex_tensor_ndim(a) - 2, nbt, ivs, ia);
    texi_ops_bcast_index(ctx, b, tex_tensor_ndim(b) - 2, nbt, ivs, ib);
    ia[am] = ivs[nbt];
    ia[ak] = tex_iv(k);
    ib[bk] = tex_iv(k);
    ib[bn] = ivs[nbt + 1];
    tex_expr *prod = tex_mul(tex_at(a, tex_tensor_ndim(a), ia), tex_at(b, tex_tensor_ndim(b), ib));
    return tex_compute(ctx, name, nbt + 2, axes, tex_sum(prod, 1, &k));
}

tex_tensor *tex_op_matmul(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b, int trans_a,
                          int trans_b)
{
    return matmul(ctx, "tex_op_matmul", texi_ops_name(name, "matmul"), a, b, trans_a != 0,
                  trans_b != 0);
}

tex_tensor *tex_op_dense(tex_ctx *ctx, const char *name, tex_tensor *x, tex_tensor *w,
                         tex_tensor *bias)
{
    const char *op = "tex_op_dense", *out = texi_ops_name(name, "dense");
    if (texi_ops_check(ctx, op, 2, (tex_tensor *[]){x, w}, (const char *[]){"x", "w"}))
        return NULL;
    int has_bias = texi_ops_check_optional(ctx, op, bias, "bias");
    if (has_bias < 0)
        return NULL;
    if (tex_tensor_ndim(w) != 2)
        return TEXI_OPS_FAIL(ctx, TEX_EINVAL, "%s: w ('%s') has %d dims, not 2 ([N, K])", op,
                             tex_tensor_name(w), tex_tensor_ndim(w));
    if (has_bias && (tex_tensor_ndim(bias) != 1 ||
                     !tex_expr_equal(tex_tensor_dim(bias, 0), tex_tensor_dim(w, 0)))) {
        char sw[64], sb[64] = "-";
        texi_ops_dim_str(tex_tensor_dim(w, 0), sw, sizeof sw);
        if (tex_tensor_ndim(bias) == 1)
            texi_ops_dim_str(tex_tensor_dim(bias, 0), sb, sizeof sb);
        return TEXI_OPS_FAIL(ctx, TEX_EINVAL,
                             "%s: bias '%s' must be [N] with N = %s (w's dim 0); it has %d dims "
                             "(dim 0: %s)",
                             op, tex_tensor_name(bias), sw, tex_tensor_ndim(bias), sb);
    }
    char nm[TEXI_OPS_NAME_MAX];
    tex_tensor *mm = matmul(ctx, op, has_bias ? texi_ops_stage_name(nm, sizeof nm, out, "mm") : out,
                            x, w, false, true);
    if (!mm || !has_bias)
        return mm;
    return tex_op_bias_add(ctx, out, mm, bias, -1);
}
