/*
 * Helpers shared by the operators (declared in ops.h): argument checks with
 * their messages, stage names, fresh axes, numpy broadcasting of shapes and
 * loads, and the loop frame of a reduction. Everything goes through the
 * public API; nothing here builds a compute of its own except the two small
 * stages every caller would repeat (texi_ops_divide_count, texi_ops_map).
 */
#include "ops/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int texi_ops_check(tex_ctx *ctx, const char *op, int n, tex_tensor *const ts[],
                   const char *const names[])
{
    if (!ctx)
        return TEX_EMISUSE;
    for (int i = 0; i < n; i++) {
        if (!ts[i])
            return tex_set_error(ctx, TEX_EMISUSE, "%s: operand %s is NULL", op, names[i]);
        if (tex_tensor_ctx(ts[i]) != ctx)
            return tex_set_error(ctx, TEX_EMISUSE,
                                 "%s: operand %s ('%s') comes from another context", op, names[i],
                                 tex_tensor_name(ts[i]));
        if (tex_tensor_ndim(ts[i]) > TEXI_OPS_MAX_NDIM)
            return tex_set_error(ctx, TEX_EINVAL, "%s: operand %s ('%s') has %d dims (at most %d)",
                                 op, names[i], tex_tensor_name(ts[i]), tex_tensor_ndim(ts[i]),
                                 TEXI_OPS_MAX_NDIM);
    }
    return 0;
}

int texi_ops_check_optional(tex_ctx *ctx, const char *op, tex_tensor *t, const char *what)
{
    if (!t && ctx && tex_errcode(ctx) == 0)
        return 0;
    int rc = texi_ops_check(ctx, op, 1, &t, &what);
    return rc ? rc : 1;
}

int texi_ops_need_float(tex_ctx *ctx, const char *op, tex_tensor *t, const char *what)
{
    tex_dtype d = tex_tensor_dtype(t);
    if (d == TEX_F16 || d == TEX_BF16 || d == TEX_F32 || d == TEX_F64)
        return 0;
    return tex_set_error(ctx, TEX_ETYPE, "%s: %s ('%s') has dtype %s; a float dtype is required",
                         op, what, tex_tensor_name(t), tex_dtype_name(d));
}

int texi_ops_axis(tex_ctx *ctx, const char *op, const tex_tensor *t, int axis)
{
    int nd = tex_tensor_ndim(t);
    if (axis >= -nd && axis < nd)
        return axis < 0 ? axis + nd : axis;
    return tex_set_error(ctx, TEX_EINVAL, "%s: axis %d is out of range for '%s' (%d dims)", op,
                         axis, tex_tensor_name(t), nd);
}

const char *texi_ops_name(const char *name, const char *dflt)
{
    return name ? name : dflt;
}

const char *texi_ops_stage_name(char *buf, size_t size, const char *base, const char *suffix)
{
    snprintf(buf, size, "%s_%s", base, suffix);
    return buf;
}

void texi_ops_dim_str(tex_expr *e, char *buf, size_t size)
{
    int64_t v;
    if (tex_expr_const_int(e, &v)) {
        snprintf(buf, size, "%lld", (long long)v);
        return;
    }
    char *s = tex_expr_str(e);
    snprintf(buf, size, "%s", s ? s : "?");
    free(s);
}

int texi_ops_same_dim(tex_ctx *ctx, const char *op, tex_tensor *a, int da, tex_tensor *b, int db,
                      const char *what)
{
    tex_expr *x = tex_tensor_dim(a, da), *y = tex_tensor_dim(b, db);
    if (tex_expr_equal(x, y))
        return 0;
    char sx[64], sy[64];
    texi_ops_dim_str(x, sx, sizeof sx);
    texi_ops_dim_str(y, sy, sizeof sy);
    return tex_set_error(ctx, TEX_EINVAL, "%s: %s's dim %d (%s = %s) != %s's dim %d (%s = %s)", op,
                         tex_tensor_name(a), da, what, sx, tex_tensor_name(b), db, what, sy);
}

void texi_ops_shape(const tex_tensor *t, tex_expr *shape[])
{
    for (int d = 0; d < tex_tensor_ndim(t); d++)
        shape[d] = tex_tensor_dim(t, d);
}

tex_expr *texi_ops_fold(tex_ctx *ctx, tex_expr *e)
{
    int64_t v;
    return e && tex_expr_const_int(e, &v) ? tex_int(ctx, v) : e;
}

int texi_ops_axes(tex_ctx *ctx, int ndim, tex_expr *const shape[], tex_iter *axes[],
                  tex_expr *ivs[])
{
    for (int d = 0; d < ndim; d++) {
        char nm[16];
        snprintf(nm, sizeof nm, "i%d", d);
        axes[d] = tex_axis(ctx, nm, texi_ops_fold(ctx, shape[d]));
        ivs[d] = tex_iv(axes[d]);
        if (!ivs[d])
            return tex_errcode(ctx) ? tex_errcode(ctx) : TEX_ENOMEM;
    }
    return 0;
}

int texi_ops_axes_like(tex_ctx *ctx, const tex_tensor *t, tex_iter *axes[], tex_expr *ivs[])
{
    tex_expr *shape[TEXI_OPS_MAX_NDIM];
    texi_ops_shape(t, shape);
    return texi_ops_axes(ctx, tex_tensor_ndim(t), shape, axes, ivs);
}

bool texi_ops_is_const(tex_expr *e, int64_t v)
{
    int64_t c;
    return tex_expr_const_int(e, &c) && c == v;
}

int texi_ops_bcast_shape(tex_ctx *ctx, const char *op, const char *an, int na, tex_expr *const a[],
                         const char *bn, int nb, tex_expr *const b[], tex_expr *out[])
{
    int n = na > nb ? na : nb;
    for (int r = 0; r < n; r++) { /* r-th dim from the right */
        tex_expr *da = r < na ? a[na - 1 - r] : NULL, *db = r < nb ? b[nb - 1 - r] : NULL;
        tex_expr **o = &out[n - 1 - r];
        if (!da || !db || tex_expr_equal(da, db) || texi_ops_is_const(db, 1))
            *o = da ? da : db;
        else if (texi_ops_is_const(da, 1))
            *o = db;
        else {
            char sa[64], sb[64];
            texi_ops_dim_str(da, sa, sizeof sa);
            texi_ops_dim_str(db, sb, sizeof sb);
            int64_t x, y;
            bool known = tex_expr_const_int(da, &x) && tex_expr_const_int(db, &y);
            return tex_set_error(ctx, TEX_EINVAL, "%s: %s's dim %d (%s) and %s's dim %d (%s) %s",
                                 op, an, na - 1 - r, sa, bn, nb - 1 - r, sb,
                                 known ? "do not broadcast"
                                       : "do not broadcast (not provably equal, neither is 1)");
        }
    }
    return n;
}

void texi_ops_bcast_index(tex_ctx *ctx, const tex_tensor *t, int n, int m, tex_expr *const ivs[],
                          tex_expr *idx[])
{
    for (int d = 0; d < n; d++)
        idx[d] = texi_ops_is_const(tex_tensor_dim(t, d), 1) ? tex_int(ctx, 0) : ivs[m - n + d];
}

tex_expr *texi_ops_bcast_load(tex_ctx *ctx, tex_tensor *t, int m, tex_expr *const ivs[])
{
    tex_expr *idx[TEXI_OPS_MAX_NDIM];
    int n = tex_tensor_ndim(t);
    texi_ops_bcast_index(ctx, t, n, m, ivs, idx);
    return tex_at(t, n, idx);
}

int texi_ops_frame_init(tex_ctx *ctx, tex_tensor *x, const bool reduced[], bool keepdims,
                        texi_ops_frame *f)
{
    memset(f, 0, sizeof *f);
    f->count = tex_int(ctx, 1);
    for (int d = 0; d < tex_tensor_ndim(x); d++) {
        tex_expr *dim = tex_tensor_dim(x, d);
        char nm[16];
        if (reduced[d]) {
            snprintf(nm, sizeof nm, "r%d", d);
            tex_iter *r = tex_reduce_axis(ctx, nm, dim);
            f->raxes[f->n_red++] = r;
            f->idx[d] = tex_iv(r);
            f->count = tex_mul(f->count, tex_cast(TEX_I64, dim));
        }
        if (!reduced[d] || keepdims) {
            snprintf(nm, sizeof nm, "i%d", d);
            tex_iter *a = tex_axis(ctx, nm, reduced[d] ? tex_int(ctx, 1) : dim);
            f->axes[f->ndim] = a;
            f->ivs[f->ndim++] = tex_iv(a);
            if (!reduced[d])
                f->idx[d] = tex_iv(a);
        }
    }
    bool ok = f->count != NULL;
    for (int d = 0; d < tex_tensor_ndim(x); d++)
        ok = ok && f->idx[d];
    for (int i = 0; i < f->ndim; i++)
        ok = ok && f->ivs[i];
    return ok ? 0 : tex_errcode(ctx) ? tex_errcode(ctx) : TEX_ENOMEM;
}

tex_tensor *texi_ops_divide_count(tex_ctx *ctx, const char *name, tex_tensor *sum,
                                  const texi_ops_frame *f)
{
    tex_iter *axes[TEXI_OPS_MAX_NDIM];
    tex_expr *ivs[TEXI_OPS_MAX_NDIM];
    if (!sum || texi_ops_axes_like(ctx, sum, axes, ivs))
        return NULL;
    tex_expr *n = tex_cast(tex_tensor_dtype(sum), f->count);
    return tex_compute(ctx, name, f->ndim, axes, tex_div(tex_at(sum, f->ndim, ivs), n));
}

int texi_ops_trailing(tex_ctx *ctx, const char *op, const tex_tensor *x, int n_axes, bool reduced[])
{
    int nd = tex_tensor_ndim(x);
    if (n_axes < 1 || n_axes > nd)
        return tex_set_error(ctx, TEX_EINVAL,
                             "%s: %d normalized axes for '%s' (%d dims); 1 to %d are allowed", op,
                             n_axes, tex_tensor_name(x), nd, nd);
    for (int d = 0; d < nd; d++)
        reduced[d] = d >= nd - n_axes;
    return 0;
}

int texi_ops_trailing_shape(tex_ctx *ctx, const char *op, const tex_tensor *x, int n,
                            const tex_tensor *p, const char *what)
{
    int nd = tex_tensor_ndim(x);
    if (tex_tensor_ndim(p) != n)
        return tex_set_error(ctx, TEX_EINVAL,
                             "%s: %s ('%s') has %d dims; it must have the %d normalized dims of "
                             "'%s'",
                             op, what, tex_tensor_name(p), tex_tensor_ndim(p), n,
                             tex_tensor_name(x));
    for (int d = 0; d < n; d++) {
        tex_expr *dp = tex_tensor_dim(p, d), *dx = tex_tensor_dim(x, nd - n + d);
        if (!tex_expr_equal(dp, dx)) {
            char sp[64], sx[64];
            texi_ops_dim_str(dp, sp, sizeof sp);
            texi_ops_dim_str(dx, sx, sizeof sx);
            return tex_set_error(ctx, TEX_EINVAL, "%s: %s's dim %d (%s) != %s's dim %d (%s)", op,
                                 tex_tensor_name(p), d, sp, tex_tensor_name(x), nd - n + d, sx);
        }
    }
    return 0;
}

tex_tensor *texi_ops_map(tex_ctx *ctx, const char *name, tex_tensor *x,
                         tex_expr *(*body)(tex_ctx *ctx, tex_expr *v))
{
    tex_iter *axes[TEXI_OPS_MAX_NDIM];
    tex_expr *ivs[TEXI_OPS_MAX_NDIM];
    int nd = tex_tensor_ndim(x);
    if (texi_ops_axes_like(ctx, x, axes, ivs))
        return NULL;
    return tex_compute(ctx, name, nd, axes, body(ctx, tex_at(x, nd, ivs)));
}

tex_expr *texi_ops_window_len(tex_ctx *ctx, const char *op, const char *what, tex_expr *dim,
                              int64_t k, int64_t stride, int64_t pad, int64_t dil)
{
    tex_expr *span = tex_add(dim, tex_int(ctx, 2 * pad - dil * (k - 1) - 1));
    tex_expr *len = tex_add(tex_floordiv(span, tex_int(ctx, stride)), tex_int(ctx, 1));
    int64_t v;
    if (len && tex_expr_const_int(len, &v)) {
        if (v < 1) {
            char sd[64];
            texi_ops_dim_str(dim, sd, sizeof sd);
            tex_set_error(ctx, TEX_EINVAL,
                          "%s: the window (%lld, dilation %lld) is larger than %s (%s) padded by "
                          "%lld on each side",
                          op, (long long)k, (long long)dil, what, sd, (long long)pad);
            return NULL;
        }
        return tex_int(ctx, v);
    }
    return len;
}

int texi_ops_pair(tex_ctx *ctx, const char *op, const char *what, const int64_t p[2], int64_t dflt,
                  int64_t lo, int64_t out[2])
{
    for (int i = 0; i < 2; i++) {
        out[i] = p ? p[i] : dflt;
        if (out[i] < lo)
            return tex_set_error(ctx, TEX_EINVAL, "%s: %s[%d] = %lld (must be >= %lld)", op, what,
                                 i, (long long)out[i], (long long)lo);
    }
    return 0;
}
