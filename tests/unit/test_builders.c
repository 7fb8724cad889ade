/*
 * Expression, axis, tensor and compute builders: dtype promotion (docs/api.md,
 * rule 2), constant conversion, the shape of the nodes built, and every error path
 * of the builders (NULL operands, two contexts, wrong dtypes, misuse of axes
 * and reductions, reused names), plus allocation-failure injection.
 */
#include "ir/ir.h"
#include "tt.h"
#include "support/failalloc.h"

static tex_ctx *ctx;

static void fresh(void)
{
    tex_ctx_free(ctx);
    ctx = tex_ctx_new();
}

static tex_expr *var_of(tex_dtype t)
{
    return tex_var(ctx, "x", t);
}

static void test_promotion_rules(void)
{
    fresh();
    static const struct {
        tex_dtype a, b, want;
    } cases[] = {
        {TEX_I8, TEX_I32, TEX_I32},   {TEX_I32, TEX_I64, TEX_I64},  {TEX_I32, TEX_U32, TEX_U32},
        {TEX_U8, TEX_I8, TEX_U8},     {TEX_U16, TEX_I32, TEX_I32},  {TEX_I64, TEX_U64, TEX_U64},
        {TEX_I64, TEX_F16, TEX_F16},  {TEX_U8, TEX_F32, TEX_F32},   {TEX_F16, TEX_F32, TEX_F32},
        {TEX_BF16, TEX_F32, TEX_F32}, {TEX_F16, TEX_BF16, TEX_F32}, {TEX_F32, TEX_F64, TEX_F64},
        {TEX_BOOL, TEX_I16, TEX_I16}, {TEX_F64, TEX_BOOL, TEX_F64}, {TEX_BF16, TEX_BF16, TEX_BF16},
        {TEX_F16, TEX_F64, TEX_F64},  {TEX_U32, TEX_I64, TEX_I64},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        TT_EQ_INT(texi_dtype_promote(cases[i].a, cases[i].b), cases[i].want);
        TT_EQ_INT(texi_dtype_promote(cases[i].b, cases[i].a), cases[i].want);
        tex_expr *e = tex_add(var_of(cases[i].a), var_of(cases[i].b));
        TT_CHECK(e != NULL);
        TT_EQ_INT(tex_expr_dtype(e), cases[i].want);
    }
    TT_EQ_INT(tex_errcode(ctx), 0);
}

static void test_constants(void)
{
    fresh();
    TT_EQ_INT(tex_expr_dtype(tex_int(ctx, 5)), TEX_I32);
    TT_EQ_INT(tex_expr_dtype(tex_int(ctx, INT64_C(1) << 40)), TEX_I64);
    TT_EQ_INT(tex_expr_dtype(tex_int(ctx, INT32_MIN)), TEX_I32);
    tex_expr *c = tex_const(ctx, TEX_U8, 300);
    TT_EQ_INT(c->kind, TEXI_EXPR_INT);
    TT_EQ_INT(c->u.i, 44);                             /* wraps to 8 bits */
    TT_EQ_INT(tex_const(ctx, TEX_I32, -2.7)->u.i, -2); /* truncates toward zero */
    TT_NEAR(tex_const(ctx, TEX_F32, 0.1)->u.f, (double)0.1f, 0);
    TT_NEAR(tex_const(ctx, TEX_F16, 1.0 / 3.0)->u.f, 0.333251953125, 0);
    /* a constant operand is converted, not wrapped in a cast */
    tex_expr *e = tex_mul(var_of(TEX_F32), tex_int(ctx, 2));
    TT_EQ_INT(e->u.bin.b->kind, TEXI_EXPR_FLOAT);
    TT_EQ_INT(e->u.bin.b->dtype, TEX_F32);
    TT_CHECK(tex_const(ctx, TEX_I32, 0.0 / 0.0) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
}

static void test_operator_kinds(void)
{
    fresh();
    tex_expr *i = var_of(TEX_I32), *f = var_of(TEX_F32);
    TT_EQ_INT(tex_div(i, tex_int(ctx, 2))->kind, TEXI_EXPR_FLOORDIV);
    TT_EQ_INT(tex_div(f, tex_int(ctx, 2))->kind, TEXI_EXPR_DIV);
    TT_EQ_INT(tex_expr_dtype(tex_lt(i, f)), TEX_BOOL);
    TT_EQ_INT(tex_lt(i, f)->u.bin.a->kind, TEXI_EXPR_CAST);
    TT_EQ_INT(tex_expr_dtype(tex_exp(i)), TEX_F32);
    TT_EQ_INT(tex_expr_dtype(tex_abs(i)), TEX_I32);
    TT_CHECK(tex_floor(i) == i);
    TT_EQ_INT(tex_expr_dtype(tex_pow(f, var_of(TEX_F64))), TEX_F64);
    TT_EQ_INT(tex_expr_dtype(tex_fma(f, f, f)), TEX_F32);
    TT_EQ_INT(tex_expr_dtype(tex_select(tex_gt(i, tex_int(ctx, 0)), i, f)), TEX_F32);
    tex_expr *n = tex_neg(i);
    TT_EQ_INT(n->kind, TEXI_EXPR_SUB);
    TT_EQ_INT(tex_neg(tex_int(ctx, 3))->u.i, -3);
    TT_EQ_INT(tex_cast(TEX_I64, i)->kind, TEXI_EXPR_CAST);
    TT_CHECK(tex_cast(TEX_I32, i) == i);
    TT_EQ_INT(tex_errcode(ctx), 0);
}

static void test_null_operands_keep_first_error(void)
{
    fresh();
    tex_expr *x = var_of(TEX_F32);
    TT_CHECK(tex_add(x, NULL) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EMISUSE);
    TT_CHECK(strstr(tex_errmsg(ctx), "tex_add") != NULL);
    /* the chain keeps the first message */
    TT_CHECK(tex_exp(tex_mul(tex_add(x, NULL), x)) == NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "tex_add") != NULL);
    tex_clear_error(ctx);
    TT_EQ_INT(tex_errcode(ctx), 0);
    TT_EQ_STR(tex_errmsg(ctx), "");
    TT_CHECK(tex_add(NULL, NULL) == NULL);
    TT_CHECK(tex_not(NULL) == NULL);
    TT_CHECK(tex_select(NULL, x, x) == NULL);
    TT_CHECK(tex_int(NULL, 1) == NULL);
    TT_CHECK(tex_var(NULL, "n", TEX_I32) == NULL);
    TT_CHECK(tex_axis(NULL, "i", NULL) == NULL);
    TT_EQ_INT(tex_errcode(NULL), TEX_EMISUSE);
    TT_CHECK(tex_errmsg(NULL)[0] != '\0');
    tex_clear_error(NULL);
    tex_ctx_free(NULL);
    TT_CHECK(tex_expr_str(NULL) == NULL);
    TT_EQ_INT(tex_tensor_ndim(NULL), -1);
    TT_CHECK(tex_tensor_dim(NULL, 0) == NULL);
    TT_EQ_STR(tex_tensor_name(NULL), "");
}

static void test_two_contexts(void)
{
    fresh();
    tex_ctx *other = tex_ctx_new();
    TT_CHECK(tex_add(tex_int(ctx, 1), tex_int(other, 2)) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EMISUSE);
    TT_CHECK(strstr(tex_errmsg(ctx), "context") != NULL);
    tex_iter *i = tex_axis(other, "i", tex_int(other, 4));
    tex_tensor *a = tex_placeholder_c(ctx, "A", TEX_F32, 1, (int64_t[]){4});
    TT_CHECK(tex_at(a, 1, (tex_expr *[]){tex_iv(i)}) == NULL);
    TT_CHECK(tex_axis(ctx, "j", tex_int(other, 3)) == NULL);
    tex_ctx_free(other);
}

static void test_type_errors(void)
{
    fresh();
    tex_expr *f = var_of(TEX_F32), *b = tex_lt(f, f);
    TT_CHECK(tex_and(f, b) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_ETYPE);
    tex_clear_error(ctx);
    TT_CHECK(tex_select(f, f, f) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_ETYPE);
    tex_clear_error(ctx);
    TT_CHECK(tex_add(b, b) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_ETYPE);
    tex_clear_error(ctx);
    TT_CHECK(tex_cast((tex_dtype)99, f) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_ETYPE);
    tex_clear_error(ctx);
    TT_CHECK(tex_var(ctx, "v", (tex_dtype)-1) == NULL);
    TT_CHECK(tex_var(ctx, "", TEX_I32) == NULL);
    TT_CHECK(tex_and(b, tex_not(b)) != NULL);
}

static void test_axes_and_placeholders(void)
{
    fresh();
    tex_expr *n = tex_var(ctx, "n", TEX_I32);
    tex_iter *i = tex_axis(ctx, "i", n);
    TT_CHECK(i != NULL);
    TT_EQ_INT(tex_expr_dtype(tex_iv(i)), TEX_I32);
    TT_EQ_INT(tex_expr_dtype(tex_iv(tex_axis(ctx, "w", tex_const(ctx, TEX_I64, 3)))), TEX_I64);
    TT_CHECK(tex_axis(ctx, "bad", tex_int(ctx, -1)) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'bad'") != NULL);
    tex_clear_error(ctx);
    TT_CHECK(tex_axis(ctx, "f", tex_const(ctx, TEX_F32, 4)) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_ETYPE);
    tex_clear_error(ctx);
    TT_CHECK(tex_axis(ctx, "dep", tex_add(tex_iv(i), tex_int(ctx, 1))) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    tex_clear_error(ctx);
    tex_tensor *a =
        tex_placeholder(ctx, "A", TEX_F32, 2, (tex_expr *[]){n, tex_add(n, tex_int(ctx, 1))});
    TT_CHECK(a != NULL);
    TT_EQ_INT(tex_tensor_ndim(a), 2);
    TT_CHECK(tex_tensor_dim(a, 0) == n);
    TT_CHECK(tex_tensor_dim(a, 2) == NULL);
    TT_EQ_STR(tex_tensor_name(a), "A");
    TT_CHECK(tex_placeholder_c(ctx, "Z", TEX_F32, 1, (int64_t[]){-3}) == NULL);
    TT_CHECK(tex_placeholder_c(ctx, "Y", (tex_dtype)42, 1, (int64_t[]){3}) == NULL);
    tex_clear_error(ctx);
    TT_CHECK(tex_placeholder(ctx, "S", TEX_F32, 0, NULL) != NULL); /* a scalar tensor */
}

static void test_tensor_access_errors(void)
{
    fresh();
    tex_tensor *a = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){3, 4});
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 3));
    TT_CHECK(TEX_AT(a, tex_iv(i)) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'A' has 2 dimensions, got 1") != NULL);
    tex_clear_error(ctx);
    TT_CHECK(TEX_AT(a, tex_iv(i), tex_const(ctx, TEX_F32, 1)) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_ETYPE);
    tex_clear_error(ctx);
    TT_CHECK(TEX_AT(a, tex_iv(i), NULL) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EMISUSE);
    tex_clear_error(ctx);
    tex_expr *e = TEX_AT(a, tex_iv(i), tex_int(ctx, 2));
    TT_CHECK(e && e->kind == TEXI_EXPR_ACCESS && e->dtype == TEX_F32);
}

/* C[i, j] = sum_k A[i, k] * B[k, j] */
static tex_tensor *matmul(tex_tensor *a, tex_tensor *b, const char *name)
{
    tex_iter *i = tex_axis(ctx, "i", tex_tensor_dim(a, 0));
    tex_iter *j = tex_axis(ctx, "j", tex_tensor_dim(b, 1));
    tex_iter *k = tex_reduce_axis(ctx, "k", tex_tensor_dim(a, 1));
    tex_expr *body = tex_mul(TEX_AT(a, tex_iv(i), tex_iv(k)), TEX_AT(b, tex_iv(k), tex_iv(j)));
    return tex_compute(ctx, name, 2, (tex_iter *[]){i, j}, tex_sum(body, 1, &k));
}

static void test_compute_records_op(void)
{
    fresh();
    tex_tensor *a = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){5, 7});
    tex_tensor *b = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){7, 3});
    tex_tensor *c = matmul(a, b, "C");
    TT_CHECK(c != NULL);
    TT_EQ_INT(c->op->kind, TEXI_OP_COMPUTE);
    TT_EQ_INT(c->op->n_axes, 2);
    TT_EQ_INT(c->op->n_raxes, 1);
    TT_EQ_INT(c->op->n_inputs, 2);
    TT_CHECK(c->op->inputs[0] == a && c->op->inputs[1] == b);
    TT_EQ_INT(tex_tensor_dtype(c), TEX_F32);
    int64_t v;
    TT_CHECK(texi_expr_is_int_const(tex_tensor_dim(c, 1), &v) && v == 3);
    int n = 0;
    tex_tensor **order = texi_tensor_post_order(ctx, 1, &c, &n);
    TT_EQ_INT(n, 3);
    TT_CHECK(order[2] == c);
}

static void test_reduce_axes_in_order_of_first_use(void)
{
    fresh();
    tex_tensor *a = tex_placeholder_c(ctx, "A", TEX_F32, 3, (int64_t[]){2, 3, 4});
    tex_iter *r0 = tex_reduce_axis(ctx, "r0", tex_int(ctx, 2));
    tex_iter *r1 = tex_reduce_axis(ctx, "r1", tex_int(ctx, 3));
    tex_iter *r2 = tex_reduce_axis(ctx, "r2", tex_int(ctx, 4));
    tex_iter *unused = tex_reduce_axis(ctx, "u", tex_int(ctx, 2));
    tex_expr *body = TEX_AT(a, tex_iv(r0), tex_iv(r1), tex_iv(r2));
    tex_tensor *s =
        tex_compute(ctx, "S", 0, NULL, tex_sum(body, 4, (tex_iter *[]){unused, r2, r0, r1}));
    TT_CHECK(s != NULL);
    TT_EQ_INT(s->op->n_raxes, 4);
    TT_CHECK(s->op->raxes[0] == r0 && s->op->raxes[1] == r1 && s->op->raxes[2] == r2 &&
             s->op->raxes[3] == unused);
}

static void test_reduction_errors(void)
{
    fresh();
    tex_tensor *a = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){4, 4});
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 4));
    tex_iter *k = tex_reduce_axis(ctx, "k", tex_int(ctx, 4));
    tex_expr *aik = TEX_AT(a, tex_iv(i), tex_iv(k));
    /* a reduce axis outside a reduction */
    TT_CHECK(tex_compute(ctx, "B", 1, &i, aik) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'k'") && strstr(tex_errmsg(ctx), "outside"));
    tex_clear_error(ctx);
    /* listed twice */
    TT_CHECK(tex_sum(aik, 2, (tex_iter *[]){k, k}) == NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "twice") != NULL);
    tex_clear_error(ctx);
    /* nested */
    TT_CHECK(tex_sum(tex_sum(aik, 1, &k), 1, &k) == NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "nested") != NULL);
    tex_clear_error(ctx);
    /* a reduction as an operand */
    TT_CHECK(tex_add(tex_sum(aik, 1, &k), tex_int(ctx, 1)) == NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "whole body") != NULL);
    tex_clear_error(ctx);
    /* a data axis given as reduce axis and vice versa */
    TT_CHECK(tex_sum(aik, 1, &i) == NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'i'") != NULL);
    tex_clear_error(ctx);
    TT_CHECK(tex_compute(ctx, "B", 1, &k, tex_int(ctx, 0)) == NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "reduce axis") != NULL);
    tex_clear_error(ctx);
    /* where with a non-bool condition; with a non-reduction */
    TT_CHECK(tex_reduce_where(tex_sum(aik, 1, &k), aik) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_ETYPE);
    tex_clear_error(ctx);
    TT_CHECK(tex_reduce_where(aik, tex_lt(tex_iv(k), tex_iv(i))) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    tex_clear_error(ctx);
    tex_expr *w = tex_reduce_where(tex_sum(aik, 1, &k), tex_lt(tex_iv(k), tex_iv(i)));
    TT_CHECK(tex_compute(ctx, "T", 1, &i, w) != NULL); /* lower-triangular row sums */
    TT_EQ_INT(tex_errcode(ctx), 0);
}

static void test_compute_errors(void)
{
    fresh();
    tex_tensor *a = tex_placeholder_c(ctx, "A", TEX_F32, 1, (int64_t[]){4});
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, 4));
    tex_iter *j = tex_axis(ctx, "j", tex_int(ctx, 4));
    TT_CHECK(tex_compute(ctx, "B", 1, &i, TEX_AT(a, tex_iv(j))) == NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'j'") && strstr(tex_errmsg(ctx), "'B'"));
    tex_clear_error(ctx);
    TT_CHECK(tex_compute(ctx, "B", 2, (tex_iter *[]){i, i}, TEX_AT(a, tex_iv(i))) == NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "twice") != NULL);
    tex_clear_error(ctx);
    TT_CHECK(tex_compute(ctx, "A", 1, &i, TEX_AT(a, tex_iv(i))) == NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'A' is already used") != NULL);
    tex_clear_error(ctx);
    tex_tensor *a2 = tex_placeholder_c(ctx, "A", TEX_F32, 1, (int64_t[]){4});
    TT_CHECK(tex_compute(ctx, "C", 1, &i, tex_add(TEX_AT(a, tex_iv(i)), TEX_AT(a2, tex_iv(i)))) ==
             NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "two different tensors named 'A'") != NULL);
    tex_clear_error(ctx);
    TT_CHECK(tex_compute(ctx, "", 1, &i, TEX_AT(a, tex_iv(i))) == NULL);
    TT_CHECK(tex_compute(ctx, "C", 1, &i, NULL) == NULL);
    TT_CHECK(tex_compute(ctx, "C", 1, NULL, TEX_AT(a, tex_iv(i))) == NULL);
    tex_clear_error(ctx);
    /* the same axis may serve several computes */
    tex_tensor *b = tex_compute(ctx, "B", 1, &i, tex_exp(TEX_AT(a, tex_iv(i))));
    TT_CHECK(tex_compute(ctx, "C", 1, &i, TEX_AT(b, tex_iv(i))) != NULL);
}

static void test_allocation_failures(void)
{
    for (int fail_at = 1;; fail_at++) {
        tt_failing f = {0, fail_at};
        tex_allocator al = tt_failing_allocator(&f);
        tex_ctx *c = tex_ctx_new_ex(&al);
        if (!c)
            continue;
        tex_ctx *saved = ctx;
        ctx = c;
        tex_tensor *a = tex_placeholder_c(c, "A", TEX_F32, 2, (int64_t[]){64, 64});
        tex_tensor *out = a ? matmul(a, a, "C") : NULL;
        ctx = saved;
        if (out) {
            TT_EQ_INT(tex_errcode(c), 0);
            tex_ctx_free(c);
            break;
        }
        TT_EQ_INT(tex_errcode(c), TEX_ENOMEM);
        tex_ctx_free(c);
        if (fail_at > 1000) {
            TT_FAILF("never succeeded");
            break;
        }
    }
    tex_allocator bad = {0, NULL, NULL, NULL};
    TT_CHECK(tex_ctx_new_ex(&bad) == NULL);
}

int main(void)
{
    TT_RUN(test_promotion_rules);
    TT_RUN(test_constants);
    TT_RUN(test_operator_kinds);
    TT_RUN(test_null_operands_keep_first_error);
    TT_RUN(test_two_contexts);
    TT_RUN(test_type_errors);
    TT_RUN(test_axes_and_placeholders);
    TT_RUN(test_tensor_access_errors);
    TT_RUN(test_compute_records_op);
    TT_RUN(test_reduce_axes_in_order_of_first_use);
    TT_RUN(test_reduction_errors);
    TT_RUN(test_compute_errors);
    TT_RUN(test_allocation_failures);
    tex_ctx_free(ctx);
    return tt_finish();
}
