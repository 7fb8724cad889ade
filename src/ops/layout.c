/*
 * Data movement: transpose, reshape, concat, split, pad and slice. Each
 * result is one stage (split: one per part) that reads x at an index
 * computed from the output's axes; nothing is copied twice. Reads guarded
 * by a condition (pad, concat) are selects, which the backends evaluate
 * safely (src/lower/guarded_loads.c clamps the index on the CPU).
 */
#include "ops/ops.h"

#include <stdio.h>

tex_tensor *tex_op_transpose(tex_ctx *ctx, const char *name, tex_tensor *x, const int perm[])
{
    const char *op = "tex_op_transpose";
    if (texi_ops_check(ctx, op, 1, &x, (const char *[]){"x"}))
        return NULL;
    int nd = tex_tensor_ndim(x), p[TEXI_OPS_MAX_NDIM];
    bool seen[TEXI_OPS_MAX_NDIM] = {false};
    for (int d = 0; d < nd; d++) {
        p[d] = perm ? perm[d] : nd - 1 - d;
        if (p[d] < 0 || p[d] >= nd || seen[p[d]])
            return TEXI_OPS_FAIL(ctx, TEX_EINVAL,
                                 "%s: perm[%d] = %d: not a permutation of the %d dims of '%s'", op,
                                 d, p[d], nd, tex_tensor_name(x));
        seen[p[d]] = true;
    }
    tex_expr *shape[TEXI_OPS_MAX_NDIM], *ivs[TEXI_OPS_MAX_NDIM], *idx[TEXI_OPS_MAX_NDIM];
    tex_iter *axes[TEXI_OPS_MAX_NDIM];
    for (int d = 0; d < nd; d++)
        shape[d] = tex_tensor_dim(x, p[d]);
    if (texi_ops_axes(ctx, nd, shape, axes, ivs))
        return NULL;
    for (int d = 0; d < nd; d++)
        idx[p[d]] = ivs[d];
    return tex_compute(ctx, texi_ops_name(name, "transpose"), nd, axes, tex_at(x, nd, idx));
}

/* The number of elements of shape[0 .. n), in the dims' dtype (the
 * simplifier sees through no cast, so N * M and M * N stay comparable). */
static tex_expr *numel(tex_ctx *ctx, int n, tex_expr *const shape[])
{
    tex_expr *p = n ? shape[0] : tex_int(ctx, 1);
    for (int d = 1; d < n; d++)
        p = tex_mul(p, shape[d]);
    return p;
}

tex_tensor *tex_op_reshape(tex_ctx *ctx, const char *name, tex_tensor *x, int ndim,
                           tex_expr *const shape[])
{
    const char *op = "tex_op_reshape";
    if (texi_ops_check(ctx, op, 1, &x, (const char *[]){"x"}))
        return NULL;
    if (ndim < 0 || ndim > TEXI_OPS_MAX_NDIM || (ndim > 0 && !shape))
        return TEXI_OPS_FAIL(ctx, TEX_EINVAL, "%s: a shape of %d dims%s", op, ndim,
                             ndim > 0 && !shape ? " with a NULL array" : " (0 to 16 are allowed)");
    for (int d = 0; d < ndim; d++)
        if (!shape[d])
            return TEXI_OPS_FAIL(ctx, TEX_EMISUSE, "%s: shape[%d] is NULL", op, d);
    int nd = tex_tensor_ndim(x);
    tex_expr *in_shape[TEXI_OPS_MAX_NDIM];
    texi_ops_shape(x, in_shape);
    tex_expr *n_in = numel(ctx, nd, in_shape), *n_out = numel(ctx, ndim, shape);
    if (!tex_expr_equal(n_in, n_out)) {
        char si[64], so[64];
        texi_ops_dim_str(n_in, si, sizeof si);
        texi_ops_dim_str(n_out, so, sizeof so);
        return TEXI_OPS_FAIL(ctx, TEX_EINVAL,
                             "%s: '%s' has %s elements, the new shape %s (not provably equal)", op,
                             tex_tensor_name(x), si, so);
    }
    tex_iter *axes[TEXI_OPS_MAX_NDIM];
    tex_expr *ivs[TEXI_OPS_MAX_NDIM], *idx[TEXI_OPS_MAX_NDIM];
    if (texi_ops_axes(ctx, ndim, shape, axes, ivs))
        return NULL;
    /* the row-major position of the output element, then x's index of it */
    tex_expr *pos = tex_cast(TEX_I64, tex_int(ctx, 0));
    for (int d = 0; d < ndim; d++)
        pos = tex_add(tex_mul(pos, tex_cast(TEX_I64, shape[d])), tex_cast(TEX_I64, ivs[d]));
    for (int d = nd - 1; d >= 0; d--) {
        tex_expr *dim = tex_cast(TEX_I64, in_shape[d]);
        idx[d] = d == 0 ? pos : tex_floormod(pos, dim);
        pos = tex_floordiv(pos, dim);
    }
    return tex_compute(ctx, texi_ops_name(name, "reshape"), ndim, axes, tex_at(x, nd, idx));
}

/* Checks that xs[k] matches xs[0] in ndim, dtype and every dim but ax. */
static int concat_check(tex_ctx *ctx, const char *op, tex_tensor *const xs[], int k, int ax)
{
    tex_tensor *a = xs[0], *b = xs[k];
    if (tex_tensor_ndim(b) != tex_tensor_ndim(a))
        return tex_set_error(ctx, TEX_EINVAL, "%s: '%s' has %d dims, '%s' %d", op,
                             tex_tensor_name(a), tex_tensor_ndim(a), tex_tensor_name(b),
                             tex_tensor_ndim(b));
    if (tex_tensor_dtype(b) != tex_tensor_dtype(a))
        return tex_set_error(ctx, TEX_ETYPE, "%s: '%s' is %s, '%s' %s", op, tex_tensor_name(a),
                             tex_dtype_name(tex_tensor_dtype(a)), tex_tensor_name(b),
                             tex_dtype_name(tex_tensor_dtype(b)));
    for (int d = 0; d < tex_tensor_ndim(a); d++) {
        tex_expr *da = tex_tensor_dim(a, d), *db = tex_tensor_dim(b, d);
        if (d == ax || tex_expr_equal(da, db))
            continue;
        char sa[64], sb[64];
        texi_ops_dim_str(da, sa, sizeof sa);
        texi_ops_dim_str(db, sb, sizeof sb);
        return tex_set_error(ctx, TEX_EINVAL, "%s: %s's dim %d (%s) != %s's dim %d (%s)", op,
                             tex_tensor_name(a), d, sa, tex_tensor_name(b), d, sb);
    }
    return 0;
}

/* xs[k] read at ivs with the concat axis ax shifted back by off. */
static tex_expr *shifted_load(tex_tensor *t, int ax, tex_expr *off, tex_expr *const ivs[])
{
    tex_expr *idx[TEXI_OPS_MAX_NDIM];
    int nd = tex_tensor_ndim(t);
    for (int d = 0; d < nd; d++)
        idx[d] = d == ax ? tex_sub(ivs[d], off) : ivs[d];
    return tex_at(t, nd, idx);
}

tex_tensor *tex_op_concat(tex_ctx *ctx, const char *name, int n, tex_tensor *const xs[], int axis)
{
    const char *op = "tex_op_concat";
    if (!ctx)
        return NULL;
    if (n < 1 || !xs)
        return TEXI_OPS_FAIL(ctx, TEX_EINVAL, "%s: %d tensors%s; at least 1 is needed", op, n,
                             xs ? "" : " (NULL array)");
    for (int k = 0; k < n; k++) {
        char what[32];
        snprintf(what, sizeof what, "xs[%d]", k);
        if (texi_ops_check(ctx, op, 1, &xs[k], (const char *[]){what}))
            return NULL;
    }
    int ax = texi_ops_axis(ctx, op, xs[0], axis), nd = tex_tensor_ndim(xs[0]);
    if (ax < 0)
        return NULL;
    tex_expr *off[65];
    if (n > 64)
        return TEXI_OPS_FAIL(ctx, TEX_EINVAL, "%s: %d tensors (at most 64)", op, n);
    off[0] = tex_int(ctx, 0);
    for (int k = 0; k < n; k++) {
        if (concat_check(ctx, op, xs, k, ax))
            return NULL;
        off[k + 1] = texi_ops_fold(ctx, tex_add(off[k], tex_tensor_dim(xs[k], ax)));
    }
    tex_expr *shape[TEXI_OPS_MAX_NDIM], *ivs[TEXI_OPS_MAX_NDIM];
    tex_iter *axes[TEXI_OPS_MAX_NDIM];
    texi_ops_shape(xs[0], shape);
    shape[ax] = off[n];
    if (texi_ops_axes(ctx, nd, shape, axes, ivs))
        return NULL;
    tex_expr *body = shifted_load(xs[n - 1], ax, off[n - 1], ivs);
    for (int k = n - 2; k >= 0; k--)
        body = tex_select(tex_lt(ivs[ax], off[k + 1]), shifted_load(xs[k], ax, off[k], ivs), body);
    return tex_compute(ctx, texi_ops_name(name, "concat"), nd, axes, body);
}

/* The extents of split's parts in ext[0 .. n); 0 or TEX_EINVAL. */
static int split_sizes(tex_ctx *ctx, const char *op, tex_tensor *x, int ax, int n,
                       const int64_t sizes[], tex_expr *ext[])
{
    tex_expr *dim = tex_tensor_dim(x, ax);
    char sd[64];
    texi_ops_dim_str(dim, sd, sizeof sd);
    int64_t dv = 0, total = 0;
    bool known = tex_expr_const_int(dim, &dv);
    if (!sizes) {
        if (n > 1 && !(known && dv % n == 0))
            return tex_set_error(ctx, TEX_EINVAL, "%s: '%s''s dim %d (%s) is not a multiple of %d",
                                 op, tex_tensor_name(x), ax, sd, n);
        for (int k = 0; k < n; k++)
            ext[k] = n == 1 ? dim : tex_int(ctx, dv / n);
        return 0;
    }
    for (int k = 0; k < n; k++) {
        if (sizes[k] < 0)
            return tex_set_error(ctx, TEX_EINVAL, "%s: sizes[%d] = %lld is negative", op, k,
                                 (long long)sizes[k]);
        total += sizes[k];
        ext[k] = tex_int(ctx, sizes[k]);
    }
    if (!known || total != dv)
        return tex_set_error(ctx, TEX_EINVAL, "%s: the sizes add up to %lld, '%s''s dim %d is %s",
                             op, (long long)total, tex_tensor_name(x), ax, sd);
    return 0;
}

int tex_op_split(tex_ctx *ctx, const char *name, tex_tensor *x, int axis, int n,
                 const int64_t sizes[], tex_tensor *outs[])
{
    const char *op = "tex_op_split", *base = texi_ops_name(name, "split");
    int rc = texi_ops_check(ctx, op, 1, &x, (const char *[]){"x"});
    if (rc)
        return rc;
    if (n < 1 || n > 64 || !outs)
        return tex_set_error(ctx, TEX_EINVAL, "%s: %d parts%s (1 to 64 are allowed)", op, n,
                             outs ? "" : " and a NULL outs array");
    int ax = texi_ops_axis(ctx, op, x, axis), nd = tex_tensor_ndim(x);
    tex_expr *ext[64];
    if (ax < 0)
        return ax;
    if (split_sizes(ctx, op, x, ax, n, sizes, ext))
        return tex_errcode(ctx);
    tex_tensor *parts[64];
    tex_expr *off = tex_int(ctx, 0);
    for (int k = 0; k < n; k++) {
        tex_expr *shape[TEXI_OPS_MAX_NDIM], *ivs[TEXI_OPS_MAX_NDIM];
        tex_iter *axes[TEXI_OPS_MAX_NDIM];
        texi_ops_shape(x, shape);
        shape[ax] = ext[k];
        if (texi_ops_axes(ctx, nd, shape, axes, ivs))
            return tex_errcode(ctx);
        char nm[TEXI_OPS_NAME_MAX];
        snprintf(nm, sizeof nm, "%s_%d", base, k);
        parts[k] = tex_compute(ctx, nm, nd, axes, shifted_load(x, ax, tex_neg(off), ivs));
        if (!parts[k])
            return tex_errcode(ctx);
        off = tex_add(off, ext[k]);
    }
    for (int k = 0; k < n; k++)
        outs[k] = parts[k];
    return 0;
}

tex_tensor *tex_op_pad(tex_ctx *ctx, const char *name, tex_tensor *x, const int64_t before[],
                       const int64_t after[], double value)
{
    const char *op = "tex_op_pad";
    if (texi_ops_check(ctx, op, 1, &x, (const char *[]){"x"}))
        return NULL;
    int nd = tex_tensor_ndim(x);
    if (nd > 0 && (!before || !after))
        return TEXI_OPS_FAIL(ctx, TEX_EINVAL, "%s: the %s array is NULL", op,
                             before ? "after" : "before");
    tex_expr *shape[TEXI_OPS_MAX_NDIM], *ivs[TEXI_OPS_MAX_NDIM], *idx[TEXI_OPS_MAX_NDIM];
    tex_iter *axes[TEXI_OPS_MAX_NDIM];
    for (int d = 0; d < nd; d++) {
        if (before[d] < 0 || after[d] < 0)
            return TEXI_OPS_FAIL(ctx, TEX_EINVAL,
                                 "%s: dim %d of '%s': padding %lld before, %lld after; both must "
                                 "be >= 0",
                                 op, d, tex_tensor_name(x), (long long)before[d],
                                 (long long)after[d]);
        shape[d] = tex_add(tex_tensor_dim(x, d), tex_int(ctx, before[d] + after[d]));
    }
    if (texi_ops_axes(ctx, nd, shape, axes, ivs))
        return NULL;
    tex_expr *inside = NULL;
    for (int d = 0; d < nd; d++) {
        idx[d] = tex_sub(ivs[d], tex_int(ctx, before[d]));
        tex_expr *c = NULL;
        if (before[d] > 0)
            c = tex_ge(idx[d], tex_int(ctx, 0));
        if (after[d] > 0) {
            tex_expr *hi = tex_lt(idx[d], tex_tensor_dim(x, d));
            c = c ? tex_and(c, hi) : hi;
        }
        if (c)
            inside = inside ? tex_and(inside, c) : c;
    }
    tex_expr *body = tex_at(x, nd, idx);
    if (inside)
        body = tex_select(inside, body, tex_const(ctx, tex_tensor_dtype(x), value));
    return tex_compute(ctx, texi_ops_name(name, "pad"), nd, axes, body);
}

/* Python's bound v of a dim of size dim: negative counts from the end;
 * INT64_MAX is the end; clipped to [0, dim] when dim is a constant. */
static tex_expr *slice_bound(tex_ctx *ctx, tex_expr *dim, int64_t v)
{
    int64_t dv;
    if (tex_expr_const_int(dim, &dv)) {
        int64_t b = v == INT64_MAX ? dv : v < 0 ? v + dv : v;
        return tex_int(ctx, b < 0 ? 0 : b > dv ? dv : b);
    }
    return v == INT64_MAX ? dim : v < 0 ? tex_add(dim, tex_int(ctx, v)) : tex_int(ctx, v);
}

tex_tensor *tex_op_slice(tex_ctx *ctx, const char *name, tex_tensor *x, const int64_t begin[],
                         const int64_t end[], const int64_t strides[])
{
    const char *op = "tex_op_slice";
    if (texi_ops_check(ctx, op, 1, &x, (const char *[]){"x"}))
        return NULL;
    int nd = tex_tensor_ndim(x);
    if (nd > 0 && (!begin || !end))
        return TEXI_OPS_FAIL(ctx, TEX_EINVAL, "%s: the %s array is NULL", op,
                             begin ? "end" : "begin");
    tex_expr *shape[TEXI_OPS_MAX_NDIM], *ivs[TEXI_OPS_MAX_NDIM], *idx[TEXI_OPS_MAX_NDIM];
    tex_expr *lo[TEXI_OPS_MAX_NDIM], *st[TEXI_OPS_MAX_NDIM];
    tex_iter *axes[TEXI_OPS_MAX_NDIM];
    for (int d = 0; d < nd; d++) {
        int64_t s = strides ? strides[d] : 1;
        if (s < 1)
            return TEXI_OPS_FAIL(ctx, TEX_EINVAL,
                                 "%s: stride %lld in dim %d of '%s' (must be >= 1)", op,
                                 (long long)s, d, tex_tensor_name(x));
        tex_expr *dim = tex_tensor_dim(x, d);
        lo[d] = slice_bound(ctx, dim, begin[d]);
        st[d] = tex_int(ctx, s);
        tex_expr *len = tex_sub(slice_bound(ctx, dim, end[d]), lo[d]);
        tex_expr *n = tex_floordiv(tex_add(len, tex_int(ctx, s - 1)), st[d]);
        int64_t nv;
        shape[d] = tex_expr_const_int(n, &nv) ? tex_int(ctx, nv < 0 ? 0 : nv) : n;
    }
    if (texi_ops_axes(ctx, nd, shape, axes, ivs))
        return NULL;
    for (int d = 0; d < nd; d++)
        idx[d] = tex_add(lo[d], tex_mul(ivs[d], st[d]));
    return tex_compute(ctx, texi_ops_name(name, "slice"), nd, axes, tex_at(x, nd, idx));
}
