/*
 * layernorm and rmsnorm (src/ops/nn_norm.c) over one and two trailing axes,
 * with and without gamma/beta, constant, 1-element and symbolic sizes, f32
 * and f64, against hand-written C loops and the oracle
 * (tests/support/opcheck.h); one scheduled case; the error paths; a chain
 * of operators under injected allocation failures.
 */
#include "tt.h"
#include "support/failalloc.h"
#include "support/opcheck.h"

static char cache_dir[] = "/tmp/tex-test-ops-nn-norm-XXXXXX";

/* A normalization of input x over its last n_axes dims; gamma and beta are
 * input indices or -1; rms selects rmsnorm. */
typedef struct {
    int x, n_axes, gamma, beta;
    bool rms;
    double eps;
} norm_spec;

static void hand_norm(const oc *c, const void *u, const DLTensor *o, double *w)
{
    const norm_spec *s = u;
    const DLTensor *x = oc_in(c, s->x);
    int64_t inner = 1, n = ops_numel(o);
    for (int d = x->ndim - s->n_axes; d < x->ndim; d++)
        inner *= x->shape[d];
    tex_dtype t = (tex_dtype)tex_dtype_from_dlpack(x->dtype);
    for (int64_t row = 0; inner && row < n / inner; row++) {
        double mean = 0, var = 0;
        for (int64_t j = 0; j < inner; j++)
            mean += ops_get(x, t, row * inner + j) / (double)inner;
        for (int64_t j = 0; j < inner; j++) {
            double v = ops_get(x, t, row * inner + j), d = s->rms ? v : v - mean;
            var += d * d / (double)inner;
        }
        for (int64_t j = 0; j < inner; j++) {
            double v = ops_get(x, t, row * inner + j);
            double y = (s->rms ? v : v - mean) / sqrt(var + s->eps);
            if (s->gamma >= 0)
                y *= ops_get(oc_in(c, s->gamma), t, j);
            if (s->beta >= 0)
                y += ops_get(oc_in(c, s->beta), t, j);
            w[row * inner + j] = y;
        }
    }
}

/* X [3, 1, 7]: layernorm over the last axis (gamma, beta) and the last two
 * (gamma only), rmsnorm over the last (gamma) and last two (none); Z [2, 5]
 * f64. One kernel. */
static void test_norms(void)
{
    static const norm_spec ln1 = {0, 1, 1, 2, false, 1e-5}, ln2 = {0, 2, 3, -1, false, 1e-3};
    static const norm_spec rn1 = {0, 1, 1, -1, true, 1e-6}, rn2 = {0, 2, -1, -1, true, 0.5};
    static const norm_spec lnd = {4, 1, 5, 6, false, 1e-5};
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "norms", 21);
    tex_tensor *X = oc_input_c(&c, "X", TEX_F32, 3, (int64_t[]){3, 1, 7});
    tex_tensor *G = oc_input_c(&c, "G", TEX_F32, 1, (int64_t[]){7});
    tex_tensor *B = oc_input_c(&c, "B", TEX_F32, 1, (int64_t[]){7});
    tex_tensor *G2 = oc_input_c(&c, "G2", TEX_F32, 2, (int64_t[]){1, 7});
    tex_tensor *Z = oc_input_c(&c, "Z", TEX_F64, 2, (int64_t[]){2, 5});
    tex_tensor *GZ = oc_input_c(&c, "GZ", TEX_F64, 1, (int64_t[]){5});
    tex_tensor *BZ = oc_input_c(&c, "BZ", TEX_F64, 1, (int64_t[]){5});
    oc_output_u(&c, tex_op_layernorm(ctx, "LN1", X, G, B, 1, 1e-5), hand_norm, &ln1, 10);
    oc_output_u(&c, tex_op_layernorm(ctx, "LN2", X, G2, NULL, 2, 1e-3), hand_norm, &ln2, 10);
    oc_output_u(&c, tex_op_rmsnorm(ctx, "RN1", X, G, 1, 1e-6), hand_norm, &rn1, 10);
    oc_output_u(&c, tex_op_rmsnorm(ctx, NULL, X, NULL, 2, 0.5), hand_norm, &rn2, 10);
    oc_output_u(&c, tex_op_layernorm(ctx, "LND", Z, GZ, BZ, 1, 1e-5), hand_norm, &lnd, 10);
    TT_EQ_STR(tex_tensor_name(c.out[3]), "rmsnorm");
    oc_run(&c, NULL);
    tex_ctx_free(ctx);
}

/* Symbolic rows and columns (R = 6, H = 13) and a vectorized, parallel
 * schedule of the outputs. */
static void test_symbolic_scheduled(void)
{
    static const norm_spec ln = {0, 1, 1, 2, false, 1e-5}, rn = {0, 1, 1, -1, true, 1e-5};
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "norms_sym", 22);
    tex_expr *R = oc_size(&c, "R", 6, true), *H = oc_size(&c, "H", 13, true);
    tex_tensor *X = oc_input(&c, "X", TEX_F32, 2, (tex_expr *[]){R, H});
    tex_tensor *G = oc_input(&c, "G", TEX_F32, 1, (tex_expr *[]){H});
    tex_tensor *B = oc_input(&c, "B", TEX_F32, 1, (tex_expr *[]){H});
    oc_output_u(&c, tex_op_layernorm(ctx, "LN", X, G, B, 1, 1e-5), hand_norm, &ln, 10);
    oc_output_u(&c, tex_op_rmsnorm(ctx, "RN", X, G, 1, 1e-5), hand_norm, &rn, 10);
    oc_run(&c, oc_sched_vector);
    tex_ctx_free(ctx);
}

static void test_errors(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 2, (int64_t[]){3, 4});
    tex_tensor *G = tex_placeholder_c(ctx, "G", TEX_F32, 1, (int64_t[]){5});
    tex_tensor *G2 = tex_placeholder_c(ctx, "G2", TEX_F32, 2, (int64_t[]){3, 4});
    tex_tensor *I = tex_placeholder_c(ctx, "I", TEX_I32, 1, (int64_t[]){4});
    oc_expect_error(ctx, tex_op_layernorm(ctx, "L", X, G, NULL, 1, 1e-5), TEX_EINVAL,
                    "tex_op_layernorm: G's dim 0 (5) != X's dim 1 (4)", NULL);
    oc_expect_error(ctx, tex_op_layernorm(ctx, "L", X, NULL, G2, 1, 1e-5), TEX_EINVAL,
                    "tex_op_layernorm: beta ('G2') has 2 dims; it must have the 1 normalized dims "
                    "of 'X'",
                    NULL);
    oc_expect_error(ctx, tex_op_rmsnorm(ctx, "L", X, NULL, 3, 1e-5), TEX_EINVAL,
                    "tex_op_rmsnorm: 3 normalized axes for 'X' (2 dims); 1 to 2 are allowed", NULL);
    oc_expect_error(ctx, tex_op_rmsnorm(ctx, "L", X, NULL, 0, 1e-5), TEX_EINVAL,
                    "tex_op_rmsnorm: 0 normalized axes", NULL);
    oc_expect_error(ctx, tex_op_layernorm(ctx, "L", I, NULL, NULL, 1, 1e-5), TEX_ETYPE,
                    "tex_op_layernorm: x ('I') has dtype i32", NULL);
    oc_expect_error(ctx, tex_op_layernorm(ctx, "L", NULL, G, G, 1, 1e-5), TEX_EMISUSE,
                    "tex_op_layernorm: operand x is NULL", NULL);
    /* a NULL gamma after a failed call is that call's result, not "no gamma" */
    tex_tensor *bad = tex_op_add(ctx, "Bad", X, G);
    TT_CHECK(tex_op_rmsnorm(ctx, "L", X, bad, 1, 1e-5) == NULL);
    oc_expect_error(ctx, NULL, TEX_EINVAL, "tex_op_add: X's dim 1 (4) and G's dim 0 (5)", NULL);
    tex_ctx_free(ctx);
}

/* A chain of operators (norms, softmax, matmul, conv, pooling, layout) in a
 * context whose Nth allocation fails, N = 1, 2, ... until it succeeds:
 * each failing run gives NULL and TEX_ENOMEM. */
static void test_allocation_failures(void)
{
    for (int fail_at = 1; fail_at < 1000; fail_at++) {
        tt_failing f = {0, fail_at};
        tex_allocator al = tt_failing_allocator(&f);
        tex_ctx *c = tex_ctx_new_ex(&al);
        if (!c)
            continue;
        tex_tensor *X = tex_placeholder_c(c, "X", TEX_F32, 4, (int64_t[]){2, 3, 9, 9});
        tex_tensor *W = tex_placeholder_c(c, "W", TEX_F32, 4, (int64_t[]){4, 3, 3, 3});
        tex_tensor *t = tex_op_layernorm(c, "L", X, NULL, NULL, 2, 1e-5);
        t = tex_op_conv2d(c, "C", tex_op_rmsnorm(c, "R", t, NULL, 1, 1e-5), W, (int64_t[]){1, 1},
                          (int64_t[]){1, 1}, NULL, 1, TEX_LAYOUT_NCHW);
        t = tex_op_avg_pool2d(c, "P", tex_op_softmax(c, "S", t, 1), (int64_t[]){3, 3}, NULL,
                              (int64_t[]){1, 1}, 0);
        t = tex_op_matmul(c, "M", t, tex_op_transpose(c, "T", t, (int[]){0, 1, 3, 2}), 0, 0);
        t = tex_op_argmax(c, "A", tex_op_concat(c, "K", 2, (tex_tensor *[]){t, t}, -1), 3, 0);
        if (t) {
            TT_EQ_INT(tex_errcode(c), 0);
            tex_ctx_free(c);
            return;
        }
        TT_EQ_INT(tex_errcode(c), TEX_ENOMEM);
        tex_ctx_free(c);
    }
    TT_FAILF("the chain never succeeded");
}

int main(void)
{
    if (oc_setup(cache_dir) != 0) {
        printf("test_ops_nn_norm: cannot make a temporary cache directory\n");
        return 1;
    }
    TT_RUN(test_errors);
    TT_RUN(test_allocation_failures);
    if (!tex_target_available("cpu")) {
        printf("SKIP ops_nn_norm (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_norms);
    TT_RUN(test_symbolic_scheduled);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
