/*
 * The public queries for operator libraries (src/ir/inspect.c):
 * tex_tensor_ctx, tex_expr_const_int and tex_expr_equal on constant,
 * folded and symbolic sizes, and tex_set_error's first-error-wins recording
 * and its refusals.
 */
#include "tt.h"

#include "tex/tex.h"

static void test_size_queries(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_expr *N = tex_var(ctx, "N", TEX_I32), *M = tex_var(ctx, "M", TEX_I32);
    int64_t v = -1;
    TT_CHECK(tex_expr_const_int(tex_int(ctx, 7), &v) && v == 7);
    TT_CHECK(tex_expr_const_int(tex_add(tex_mul(tex_int(ctx, 2), tex_int(ctx, 3)), tex_int(ctx, 1)),
                                &v) &&
             v == 7);
    TT_CHECK(tex_expr_const_int(tex_add(tex_sub(N, N), tex_int(ctx, 4)), NULL));
    TT_CHECK(!tex_expr_const_int(N, &v));
    TT_CHECK(!tex_expr_const_int(tex_const(ctx, TEX_F32, 2), &v));
    TT_CHECK(!tex_expr_const_int(NULL, &v));
    TT_CHECK(tex_expr_equal(tex_sub(tex_add(N, tex_int(ctx, 1)), tex_int(ctx, 1)), N));
    TT_CHECK(tex_expr_equal(tex_mul(N, M), tex_mul(M, N)));
    TT_CHECK(tex_expr_equal(tex_int(ctx, 5), tex_cast(TEX_I64, tex_int(ctx, 5))));
    TT_CHECK(!tex_expr_equal(N, M));
    TT_CHECK(!tex_expr_equal(N, tex_var(ctx, "N", TEX_I32))); /* another variable */
    TT_CHECK(!tex_expr_equal(N, NULL));
    TT_EQ_INT(tex_errcode(ctx), 0);
    tex_tensor *t = tex_placeholder(ctx, "T", TEX_F32, 1, &N);
    TT_CHECK(tex_tensor_ctx(t) == ctx);
    TT_CHECK(tex_tensor_ctx(NULL) == NULL);
    tex_ctx_free(ctx);
}

static void test_set_error(void)
{
    tex_ctx *ctx = tex_ctx_new();
    TT_EQ_INT(tex_set_error(ctx, TEX_EINVAL, "my_op: dim %d (%s)", 3, "N"), TEX_EINVAL);
    TT_EQ_STR(tex_errmsg(ctx), "my_op: dim 3 (N)");
    TT_EQ_INT(tex_set_error(ctx, TEX_ETYPE, "later"), TEX_ETYPE); /* the first one stays */
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_EQ_STR(tex_errmsg(ctx), "my_op: dim 3 (N)");
    tex_clear_error(ctx);
    TT_EQ_INT(tex_set_error(ctx, 0, "not an error"), TEX_EMISUSE);
    TT_EQ_STR(tex_errmsg(ctx), "tex_set_error: code 0 is not an error code");
    tex_clear_error(ctx);
    TT_EQ_INT(tex_set_error(ctx, TEX_EINVAL, NULL), TEX_EMISUSE);
    TT_EQ_INT(tex_errcode(ctx), TEX_EMISUSE);
    TT_EQ_INT(tex_set_error(NULL, TEX_EINVAL, "x"), TEX_EMISUSE);
    tex_ctx_free(ctx);
}

int main(void)
{
    TT_RUN(test_size_queries);
    TT_RUN(test_set_error);
    return tt_finish();
}
