/*
 * The data-movement operators (src/ops/layout.c): transpose, reshape,
 * concat, split, pad and slice over constant, 1-element, prime and symbolic
 * shapes (an empty slice included), each against a hand-written C loop and
 * the oracle (tests/support/opcheck.h), one kernel per case, the symbolic
 * case under a vectorized, parallel schedule; then the error paths and their
 * messages.
 */
#include "tt.h"
#include "support/opcheck.h"

static char cache_dir[] = "/tmp/tex-test-ops-layout-XXXXXX";

/* Output point idx reads input `in` at x_idx (computed by a spec). */
typedef struct {
    int in;
    int perm[8];       /* transpose: out dim d is in's dim perm[d] */
    int64_t before[8]; /* pad: offsets (also slice begins, split offsets) */
    int64_t stride[8]; /* slice strides (0: 1) */
    double value;      /* pad value */
} mv_spec;

static void hand_transpose(const oc *c, const void *u, const DLTensor *o, double *w)
{
    const mv_spec *s = u;
    int64_t idx[8], xi[8];
    for (int64_t k = 0; k < ops_numel(o); k++) {
        oc_unravel(o, k, idx);
        for (int d = 0; d < o->ndim; d++)
            xi[s->perm[d]] = idx[d];
        w[k] = oc_get(oc_in(c, s->in), o->ndim, xi);
    }
}

/* reshape: the same row-major sequence. */
static void hand_flat(const oc *c, const void *u, const DLTensor *o, double *w)
{
    const mv_spec *s = u;
    const DLTensor *x = oc_in(c, s->in);
    for (int64_t k = 0; k < ops_numel(o); k++)
        w[k] = ops_get(x, (tex_dtype)tex_dtype_from_dlpack(x->dtype), k);
}

/* pad (value outside), slice and split (before = begin or offset). */
static void hand_window(const oc *c, const void *u, const DLTensor *o, double *w)
{
    const mv_spec *s = u;
    const DLTensor *x = oc_in(c, s->in);
    int64_t idx[8];
    for (int64_t k = 0; k < ops_numel(o); k++) {
        oc_unravel(o, k, idx);
        bool inside = true;
        for (int d = 0; d < o->ndim; d++) {
            idx[d] = s->before[d] + idx[d] * (s->stride[d] ? s->stride[d] : 1);
            inside = inside && idx[d] >= 0 && idx[d] < x->shape[d];
        }
        w[k] = inside ? oc_get(x, x->ndim, idx) : s->value;
    }
}

/* concat of inputs ins[0 .. n) along axis */
typedef struct {
    int n, ins[4], axis;
} cat_spec;

static void hand_concat(const oc *c, const void *u, const DLTensor *o, double *w)
{
    const cat_spec *s = u;
    int64_t idx[8];
    for (int64_t k = 0; k < ops_numel(o); k++) {
        oc_unravel(o, k, idx);
        int t = 0;
        while (idx[s->axis] >= oc_in(c, s->ins[t])->shape[s->axis])
            idx[s->axis] -= oc_in(c, s->ins[t++])->shape[s->axis];
        w[k] = oc_get(oc_in(c, s->ins[t]), o->ndim, idx);
    }
}

/* t's dim d prints as `want`: an output size made of constant sizes is
 * folded into a constant (not 0 + 3 + 4), which the automatic schedule's
 * thread counts and tensorize ask for. */
static void expect_dim_str(tex_tensor *t, int d, const char *want)
{
    char *got = tex_expr_str(tex_tensor_dim(t, d));
    TT_EQ_STR(got, want);
    free(got);
}

static void test_constant_shapes(void)
{
    static const mv_spec tp = {0, {2, 0, 1}, {0}, {0}, 0}, rev = {0, {2, 1, 0}, {0}, {0}, 0};
    static const mv_spec flat = {0, {0}, {0}, {0}, 0};
    static const mv_spec sp0 = {0, {0}, {0, 0, 0}, {0}, 0}, sp1 = {0, {0}, {0, 0, 2}, {0}, 0};
    static const mv_spec eq2 = {0, {0}, {0, 2, 0}, {0}, 0};
    static const mv_spec pad = {0, {0}, {0, -1, -2}, {0}, -7.5};
    static const mv_spec sl = {0, {0}, {1, 1, 0}, {1, 1, 2}, 0}, sl2 = {0, {0}, {0, 2, 4}, {0}, 0};
    static const cat_spec c1 = {2, {0, 1}, 1}, c3 = {3, {0, 2, 0}, 2};
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "layout", 41);
    tex_tensor *X = oc_input_c(&c, "X", TEX_F32, 3, (int64_t[]){2, 3, 5});
    tex_tensor *Y = oc_input_c(&c, "Y", TEX_F32, 3, (int64_t[]){2, 4, 5});
    tex_tensor *Z = oc_input_c(&c, "Z", TEX_F32, 3, (int64_t[]){2, 3, 1});
    oc_output_u(&c, tex_op_transpose(ctx, "T", X, (int[]){2, 0, 1}), hand_transpose, &tp, 1);
    oc_output_u(&c, tex_op_transpose(ctx, "Rev", X, NULL), hand_transpose, &rev, 1);
    oc_output_u(&c,
                tex_op_reshape(ctx, "R56", X, 2, (tex_expr *[]){tex_int(ctx, 5), tex_int(ctx, 6)}),
                hand_flat, &flat, 1);
    oc_output_u(&c,
                tex_op_reshape(ctx, "R1", X, 3,
                               (tex_expr *[]){tex_int(ctx, 1), tex_int(ctx, 30), tex_int(ctx, 1)}),
                hand_flat, &flat, 1);
    tex_tensor *C1 = tex_op_concat(ctx, "C1", 2, (tex_tensor *[]){X, Y}, 1);
    oc_output_u(&c, C1, hand_concat, &c1, 1);
    expect_dim_str(C1, 1, "7");
    oc_output_u(&c, tex_op_concat(ctx, "C3", 3, (tex_tensor *[]){X, Z, X}, -1), hand_concat, &c3,
                1);
    tex_tensor *parts[3];
    TT_EQ_INT(tex_op_split(ctx, "Sp", X, 2, 2, (int64_t[]){2, 3}, parts), 0);
    oc_output_u(&c, parts[0], hand_window, &sp0, 1);
    oc_output_u(&c, parts[1], hand_window, &sp1, 1);
    TT_EQ_STR(tex_tensor_name(parts[1]), "Sp_1");
    TT_EQ_INT(tex_op_split(ctx, "Eq", X, 1, 3, NULL, parts), 0);
    oc_output_u(&c, parts[2], hand_window, &eq2, 1);
    tex_tensor *P = tex_op_pad(ctx, "P", X, (int64_t[]){0, 1, 2}, (int64_t[]){1, 0, 3}, -7.5);
    oc_output_u(&c, P, hand_window, &pad, 1);
    expect_dim_str(P, 2, "10");
    oc_output_u(&c,
                tex_op_slice(ctx, "S", X, (int64_t[]){1, -2, 0}, (int64_t[]){2, INT64_MAX, 99},
                             (int64_t[]){1, 1, 2}),
                hand_window, &sl, 1);
    tex_tensor *empty = tex_op_slice(ctx, "E", X, (int64_t[]){0, 2, 4}, (int64_t[]){2, 1, 5}, NULL);
    oc_output_u(&c, empty, hand_window, &sl2, 1);
    TT_CHECK(tex_expr_equal(tex_tensor_dim(empty, 1), tex_int(ctx, 0)));
    oc_run(&c, NULL);
    tex_ctx_free(ctx);
}

/* Symbolic N = 7, M = 4 under a vectorized, parallel schedule: transpose,
 * reshape to [M, N] and [N * M], concat along the symbolic axis, pad, a
 * slice counting from the symbolic end, a one-part split. */
static void test_symbolic_scheduled(void)
{
    static const mv_spec tp = {0, {1, 0}, {0}, {0}, 0}, flat = {0, {0}, {0}, {0}, 0};
    static const mv_spec pad = {0, {0}, {-2, 0}, {0}, 1.25}, sl = {0, {0}, {1, 0}, {2, 1}, 0};
    static const mv_spec whole = {0, {0}, {0, 0}, {0}, 0};
    static const cat_spec cc = {2, {0, 0}, 0};
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "layout_sym", 42);
    tex_expr *N = oc_size(&c, "N", 7, true), *M = oc_size(&c, "M", 4, true);
    tex_tensor *X = oc_input(&c, "X", TEX_F32, 2, (tex_expr *[]){N, M});
    oc_output_u(&c, tex_op_transpose(ctx, "T", X, NULL), hand_transpose, &tp, 1);
    oc_output_u(&c, tex_op_reshape(ctx, "R", X, 2, (tex_expr *[]){M, N}), hand_flat, &flat, 1);
    oc_output_u(&c, tex_op_reshape(ctx, "R1", X, 1, (tex_expr *[]){tex_mul(N, M)}), hand_flat,
                &flat, 1);
    oc_output_u(&c, tex_op_concat(ctx, "C", 2, (tex_tensor *[]){X, X}, 0), hand_concat, &cc, 1);
    oc_output_u(&c, tex_op_pad(ctx, "P", X, (int64_t[]){2, 0}, (int64_t[]){3, 0}, 1.25),
                hand_window, &pad, 1);
    oc_output_u(
        &c,
        tex_op_slice(ctx, "S", X, (int64_t[]){1, 0}, (int64_t[]){INT64_MAX, -1}, (int64_t[]){2, 1}),
        hand_window, &sl, 1);
    tex_tensor *one;
    TT_EQ_INT(tex_op_split(ctx, "Sp", X, 1, 1, NULL, &one), 0);
    oc_output_u(&c, one, hand_window, &whole, 1);
    oc_run(&c, oc_sched_vector);
    tex_ctx_free(ctx);
}

static void test_errors(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 3, (int64_t[]){2, 3, 5});
    tex_tensor *Y = tex_placeholder_c(ctx, "Y", TEX_F32, 3, (int64_t[]){2, 4, 6});
    tex_tensor *I = tex_placeholder_c(ctx, "I", TEX_I32, 3, (int64_t[]){2, 3, 5});
    tex_expr *N = tex_var(ctx, "N", TEX_I32), *M = tex_var(ctx, "M", TEX_I32);
    tex_tensor *S = tex_placeholder(ctx, "S", TEX_F32, 1, (tex_expr *[]){N});
    tex_tensor *parts[4] = {NULL};
    oc_expect_error(ctx, tex_op_transpose(ctx, "T", X, (int[]){0, 2, 2}), TEX_EINVAL,
                    "tex_op_transpose: perm[2] = 2: not a permutation of the 3 dims of 'X'", NULL);
    oc_expect_error(ctx, tex_op_reshape(ctx, "R", X, 1, (tex_expr *[]){tex_int(ctx, 31)}),
                    TEX_EINVAL, "tex_op_reshape: 'X' has 30 elements, the new shape 31", NULL);
    oc_expect_error(ctx, tex_op_reshape(ctx, "R", S, 1, (tex_expr *[]){M}), TEX_EINVAL,
                    "tex_op_reshape: 'S' has", "not provably equal", NULL);
    oc_expect_error(ctx, tex_op_concat(ctx, "C", 2, (tex_tensor *[]){X, Y}, 1), TEX_EINVAL,
                    "tex_op_concat: X's dim 2 (5) != Y's dim 2 (6)", NULL);
    oc_expect_error(ctx, tex_op_concat(ctx, "C", 2, (tex_tensor *[]){X, I}, 0), TEX_ETYPE,
                    "tex_op_concat: 'X' is f32, 'I' i32", NULL);
    oc_expect_error(ctx, tex_op_concat(ctx, "C", 2, (tex_tensor *[]){X, NULL}, 0), TEX_EMISUSE,
                    "tex_op_concat: operand xs[1] is NULL", NULL);
    oc_expect_error(ctx, tex_op_concat(ctx, "C", 0, NULL, 0), TEX_EINVAL,
                    "tex_op_concat: 0 tensors", NULL);
    TT_EQ_INT(tex_op_split(ctx, "P", X, 2, 2, (int64_t[]){2, 2}, parts), TEX_EINVAL);
    oc_expect_error(ctx, NULL, TEX_EINVAL, "tex_op_split: the sizes add up to 4, 'X''s dim 2 is 5",
                    NULL);
    TT_EQ_INT(tex_op_split(ctx, "P", X, 1, 2, NULL, parts), TEX_EINVAL);
    oc_expect_error(ctx, NULL, TEX_EINVAL, "tex_op_split: 'X''s dim 1 (3) is not a multiple of 2",
                    NULL);
    TT_CHECK(parts[0] == NULL);
    TT_EQ_INT(tex_op_split(ctx, "P", X, 3, 1, NULL, parts), TEX_EINVAL);
    oc_expect_error(ctx, NULL, TEX_EINVAL, "tex_op_split: axis 3 is out of range for 'X'", NULL);
    oc_expect_error(ctx, tex_op_pad(ctx, "P", X, (int64_t[]){0, -1, 0}, (int64_t[]){0, 0, 0}, 0),
                    TEX_EINVAL, "tex_op_pad: dim 1 of 'X': padding -1 before, 0 after", NULL);
    oc_expect_error(
        ctx,
        tex_op_slice(ctx, "S", X, (int64_t[]){0, 0, 0}, (int64_t[]){1, 1, 1}, (int64_t[]){1, 0, 1}),
        TEX_EINVAL, "tex_op_slice: stride 0 in dim 1 of 'X' (must be >= 1)", NULL);
    oc_expect_error(ctx, tex_op_slice(ctx, "S", NULL, NULL, NULL, NULL), TEX_EMISUSE,
                    "tex_op_slice: operand x is NULL", NULL);
    tex_ctx_free(ctx);
}

int main(void)
{
    if (oc_setup(cache_dir) != 0) {
        printf("test_ops_layout: cannot make a temporary cache directory\n");
        return 1;
    }
    TT_RUN(test_errors);
    if (!tex_target_available("cpu")) {
        printf("SKIP ops_layout (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_constant_shapes);
    TT_RUN(test_symbolic_scheduled);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
