/*
 * tex_sp_hyb_spmm: SpMM Y = A X over the hyb format (hyb.c), as one scatter
 * group (ir/scatter.c) of sparse iterations, one per part:
 *   bucket of width w: Y[rows[r], k] = sum_{j < w} A_w[r, j] X[J_w[r, j], k]
 *     over a dense-fixed root I_w (its rows) and a sparse-fixed J_w of w
 *     columns per row, so the reduction has the constant extent w;
 *   remainder:         Y[rows[r], k] = sum_j A_csr[r, j] X[J_csr[r, j], k]
 *     over CSR (a sparse-variable J_csr, a ragged reduction).
 * Each part is an ordinary compute over (its rows, features), scheduled
 * with the ordinary primitives; the group's tensor (the remainder, named
 * `name`) has Y's shape [m, f] and is the function's output. Lowered
 * together, the parts are one function, one kernel call: their nests run
 * one after the other, each writing its own rows of Y.
 * Sizes: the row counts and the remainder's non-zeros are size variables
 * bound from the arrays' shapes at call time, so one kernel serves every
 * matrix converted with the same max_width.
 */
#include "sparse/sparse.h"

#include <stdio.h>

#define CALL "tex_sp_hyb_spmm"

typedef struct {
    tex_ctx *ctx;
    tex_tensor *X;
    tex_expr *m;
    tex_sp_axis *K;
    tex_tensor **params; /* filled in parameter order */
    int n_params;
} hyb_build;

/* A 1-D i32 placeholder of row ids in [0, m) (checked at call time). */
static tex_tensor *rows_array(hyb_build *hb, const char *axis, tex_expr *n)
{
    char name[128];
    snprintf(name, sizeof name, "%s_rows", axis);
    tex_tensor *t = tex_placeholder(hb->ctx, name, TEX_I32, 1, &n);
    if (t) {
        t->index_role = TEXI_INDEX_INDICES;
        t->index_bound = hb->m;
    }
    return t;
}

/* The iteration of one part over rows I and their non-zeros J: SpMM. */
static tex_tensor *part_iteration(hyb_build *hb, const char *name, const char *part, tex_sp_axis *I,
                                  tex_sp_axis *J)
{
    char bname[64];
    snprintf(bname, sizeof bname, "A_%s", part);
    tex_sp_buffer *A =
        tex_sp_buffer_new(hb->ctx, bname, tex_tensor_dtype(hb->X), 2, (tex_sp_axis *[]){I, J});
    tex_expr *a = tex_sp_at(A, 2, (tex_sp_axis *[]){I, J});
    tex_expr *body = tex_mul(a, TEX_AT(hb->X, tex_sp_coord(J), tex_sp_coord(hb->K)));
    tex_tensor *values = A ? tex_sp_values(A) : NULL;
    if (!values)
        return NULL;
    if (J->indptr)
        hb->params[hb->n_params++] = J->indptr;
    hb->params[hb->n_params++] = J->indices;
    hb->params[hb->n_params++] = values;
    return tex_sp_iteration(hb->ctx, name, 3, (tex_sp_axis *[]){I, J, hb->K}, "SRS", NULL, body);
}

/* Part p of n: an ELL bucket of width 2^p, or (the last) the CSR remainder. */
static int build_part(hyb_build *hb, const char *name, int p, int n, tex_tensor **src,
                      tex_tensor **rows)
{
    char part[16], iname[32], jname[32], size[32], pname[128];
    if (p + 1 < n)
        snprintf(part, sizeof part, "w%d", 1 << p);
    else
        snprintf(part, sizeof part, "csr");
    snprintf(iname, sizeof iname, "I_%s", part);
    snprintf(jname, sizeof jname, "J_%s", part);
    snprintf(size, sizeof size, "rows_%s", part);
    tex_ctx *ctx = hb->ctx;
    tex_expr *n_rows = tex_var(ctx, size, TEX_I64), *n_cols = tex_tensor_dim(hb->X, 0);
    tex_sp_axis *I = tex_sp_dense_fixed(ctx, iname, NULL, n_rows), *J;
    if (p + 1 < n) {
        J = tex_sp_sparse_fixed(ctx, jname, I, n_cols, tex_int(ctx, 1 << p));
    } else {
        snprintf(size, sizeof size, "nnz_%s", part);
        J = tex_sp_sparse_variable(ctx, jname, I, n_cols, tex_var(ctx, size, TEX_I64));
    }
    if (!I || !J || !(*rows = rows_array(hb, iname, n_rows)))
        return tex_errcode(ctx) ? tex_errcode(ctx) : TEX_ENOMEM;
    hb->params[hb->n_params++] = *rows;
    snprintf(pname, sizeof pname, "%.100s_%s", name, part);
    *src = part_iteration(hb, p + 1 < n ? pname : name, part, I, J);
    return *src ? 0 : tex_errcode(ctx);
}

static int check_args(tex_ctx *ctx, int max_width, tex_expr *m, tex_tensor *X, tex_tensor *parts[],
                      tex_tensor *params[])
{
    if (!m || !X) {
        texi_error_null_operand(ctx, CALL, !m ? "m" : "X");
        return TEX_EMISUSE;
    }
    if (m->ctx != ctx || X->ctx != ctx)
        return texi_error(ctx, TEX_EMISUSE, CALL ": m or X comes from another context");
    if (!parts || !params)
        return texi_error(ctx, TEX_EINVAL, CALL ": parts and params must not be NULL");
    if (!tex_sp_hyb_nparts(max_width))
        return texi_error(ctx, TEX_EINVAL, CALL ": max_width %d must be a power of two in [1, %d]",
                          max_width, 1 << TEXI_SP_HYB_MAX_LOG2);
    if (!texi_dtype_is_int(m->dtype))
        return texi_error(ctx, TEX_ETYPE, CALL ": m is %s, expected an integer",
                          tex_dtype_name(m->dtype));
    if (X->ndim != 2)
        return texi_error(ctx, TEX_EINVAL,
                          CALL ": X ('%s') must be 2-D [n, f], it has %d dimensions", X->name,
                          X->ndim);
    return 0;
}

tex_tensor *tex_sp_hyb_spmm(tex_ctx *ctx, const char *name, int max_width, tex_expr *m,
                            tex_tensor *X, tex_tensor *parts[], tex_tensor *params[])
{
    if (!ctx)
        return NULL;
    if (!name || !*name)
        return texi_error(ctx, TEX_EINVAL, CALL ": the name is NULL or empty"), NULL;
    if (check_args(ctx, max_width, m, X, parts, params) < 0)
        return NULL;
    int n = tex_sp_hyb_nparts(max_width);
    hyb_build hb = {ctx, X, m, tex_sp_dense_fixed(ctx, "K", NULL, tex_tensor_dim(X, 1)), params, 0};
    tex_tensor *src[TEXI_SP_HYB_MAX_LOG2 + 2], *rows[TEXI_SP_HYB_MAX_LOG2 + 2];
    if (!hb.K)
        return NULL;
    for (int p = 0; p < n; p++)
        if (build_part(&hb, name, p, n, &src[p], &rows[p]) < 0)
            return NULL;
    if (texi_scatter_group_new(ctx, n, src, rows, m, parts) < 0)
        return texi_error(ctx, TEX_ENOMEM, CALL ": out of memory"), NULL;
    params[hb.n_params++] = X;
    params[hb.n_params++] = parts[n - 1];
    return parts[n - 1];
}
