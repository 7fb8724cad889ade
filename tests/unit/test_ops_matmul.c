/*
 * matmul and dense (src/ops/matmul.c): every combination of transposes,
 * batch dims broadcast against each other and against a 2-D operand, a
 * 1-row product, dense with and without a bias and with a batched x,
 * symbolic M, K, N bound at call time under a vectorized, parallel
 * schedule; each against a hand-written C loop and the oracle
 * (tests/support/opcheck.h). Then the error paths and their messages.
 */
#include "tt.h"
#include "support/opcheck.h"

static char cache_dir[] = "/tmp/tex-test-ops-matmul-XXXXXX";

/* out = a' b' (+ bias) of inputs a, b (bias: an input index or -1); ta, tb:
 * the operands are stored transposed. */
typedef struct {
    int a, b, bias;
    bool ta, tb;
} mm_spec;

static void hand_matmul(const oc *c, const void *u, const DLTensor *o, double *w)
{
    const mm_spec *s = u;
    const DLTensor *a = oc_in(c, s->a), *b = oc_in(c, s->b);
    int m = o->ndim;
    int64_t idx[8], ia[8], ib[8];
    int64_t K = a->shape[a->ndim - (s->ta ? 2 : 1)];
    for (int64_t p = 0; p < ops_numel(o); p++) {
        oc_unravel(o, p, idx);
        memcpy(ia, idx, sizeof ia);
        memcpy(ib, idx, sizeof ib);
        int64_t i = idx[m - 2], j = idx[m - 1];
        double acc = 0;
        for (int64_t k = 0; k < K; k++) {
            ia[m - 2] = s->ta ? k : i;
            ia[m - 1] = s->ta ? i : k;
            ib[m - 2] = s->tb ? j : k;
            ib[m - 1] = s->tb ? k : j;
            acc += oc_get(a, m, ia) * oc_get(b, m, ib);
        }
        w[p] = acc + (s->bias >= 0 ? oc_get(oc_in(c, s->bias), 1, &j) : 0);
    }
}

/* The transposes, batch broadcasting, a 1-row product and dense: one
 * kernel. */
static void test_matmul_dense(void)
{
    static const mm_spec nn = {0, 1, -1, false, false}, tn = {2, 1, -1, true, false};
    static const mm_spec nt = {0, 3, -1, false, true}, tt = {2, 3, -1, true, true};
    static const mm_spec bb = {4, 5, -1, false, false}, b2 = {0, 5, -1, false, false};
    static const mm_spec row = {6, 1, -1, false, false}, dense = {0, 3, 7, false, true};
    static const mm_spec dense3 = {8, 3, -1, false, true};
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "matmul", 31);
    tex_tensor *A = oc_input_c(&c, "A", TEX_F32, 2, (int64_t[]){5, 3});
    tex_tensor *B = oc_input_c(&c, "B", TEX_F32, 2, (int64_t[]){3, 7});
    tex_tensor *At = oc_input_c(&c, "At", TEX_F32, 2, (int64_t[]){3, 5});
    tex_tensor *Bt = oc_input_c(&c, "Bt", TEX_F32, 2, (int64_t[]){7, 3});
    tex_tensor *A4 = oc_input_c(&c, "A4", TEX_F32, 4, (int64_t[]){2, 1, 5, 3});
    tex_tensor *B3 = oc_input_c(&c, "B3", TEX_F32, 3, (int64_t[]){4, 3, 7});
    tex_tensor *A1 = oc_input_c(&c, "A1", TEX_F32, 2, (int64_t[]){1, 3});
    tex_tensor *Bias = oc_input_c(&c, "Bias", TEX_F32, 1, (int64_t[]){7});
    tex_tensor *X3 = oc_input_c(&c, "X3", TEX_F32, 3, (int64_t[]){2, 5, 3});
    oc_output_u(&c, tex_op_matmul(ctx, "NN", A, B, 0, 0), hand_matmul, &nn, 1);
    oc_output_u(&c, tex_op_matmul(ctx, "TN", At, B, 1, 0), hand_matmul, &tn, 1);
    oc_output_u(&c, tex_op_matmul(ctx, "NT", A, Bt, 0, 1), hand_matmul, &nt, 1);
    oc_output_u(&c, tex_op_matmul(ctx, "TT", At, Bt, 1, 1), hand_matmul, &tt, 1);
    oc_output_u(&c, tex_op_matmul(ctx, "BB", A4, B3, 0, 0), hand_matmul, &bb, 1);
    oc_output_u(&c, tex_op_matmul(ctx, "B2", A, B3, 0, 0), hand_matmul, &b2, 1);
    oc_output_u(&c, tex_op_matmul(ctx, "Row", A1, B, 0, 0), hand_matmul, &row, 1);
    oc_output_u(&c, tex_op_dense(ctx, "Dense", A, Bt, Bias), hand_matmul, &dense, 1);
    oc_output_u(&c, tex_op_dense(ctx, "Dense3", X3, Bt, NULL), hand_matmul, &dense3, 1);
    TT_EQ_INT(tex_tensor_ndim(c.out[4]), 4);
    TT_CHECK(tex_expr_equal(tex_tensor_dim(c.out[4], 1), tex_int(ctx, 4)));
    TT_EQ_INT(tex_tensor_ndim(c.out[5]), 3);
    oc_run(&c, NULL);
    tex_ctx_free(ctx);
}

/* Symbolic M = 9, K = 17, N = 5 (the split by 8 leaves tails) under a
 * vectorized, parallel schedule. */
static void test_symbolic_scheduled(void)
{
    static const mm_spec nn = {0, 1, -1, false, false}, dense = {0, 2, 3, false, true};
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "matmul_sym", 32);
    tex_expr *M = oc_size(&c, "M", 9, true), *K = oc_size(&c, "K", 17, true);
    tex_expr *N = oc_size(&c, "N", 5, true);
    tex_tensor *A = oc_input(&c, "A", TEX_F32, 2, (tex_expr *[]){M, K});
    tex_tensor *B = oc_input(&c, "B", TEX_F32, 2, (tex_expr *[]){K, N});
    tex_tensor *W = oc_input(&c, "W", TEX_F32, 2, (tex_expr *[]){N, K});
    tex_tensor *Bias = oc_input(&c, "Bias", TEX_F32, 1, (tex_expr *[]){N});
    oc_output_u(&c, tex_op_matmul(ctx, "C", A, B, 0, 0), hand_matmul, &nn, 1);
    oc_output_u(&c, tex_op_dense(ctx, "D", A, W, Bias), hand_matmul, &dense, 1);
    oc_run(&c, oc_sched_vector);
    tex_ctx_free(ctx);
}

static void test_errors(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){5, 7});
    tex_tensor *B = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){9, 4});
    tex_tensor *A3 = tex_placeholder_c(ctx, "A3", TEX_F32, 3, (int64_t[]){2, 5, 7});
    tex_tensor *B3 = tex_placeholder_c(ctx, "B3", TEX_F32, 3, (int64_t[]){3, 7, 4});
    tex_tensor *V = tex_placeholder_c(ctx, "V", TEX_F32, 1, (int64_t[]){7});
    tex_tensor *Bias = tex_placeholder_c(ctx, "Bias", TEX_F32, 1, (int64_t[]){5});
    tex_tensor *Sk = tex_placeholder(ctx, "Sk", TEX_F32, 2,
                                     (tex_expr *[]){tex_int(ctx, 7), tex_var(ctx, "K", TEX_I32)});
    oc_expect_error(ctx, tex_op_matmul(ctx, "C", A, B, 0, 0), TEX_EINVAL,
                    "tex_op_matmul: A's dim 1 (K = 7) != B's dim 0 (K = 9)", NULL);
    oc_expect_error(ctx, tex_op_matmul(ctx, "C", A, B, 1, 1), TEX_EINVAL,
                    "tex_op_matmul: A's dim 0 (K = 5) != B's dim 1 (K = 4)", NULL);
    oc_expect_error(ctx, tex_op_matmul(ctx, "C", A3, B3, 0, 0), TEX_EINVAL,
                    "tex_op_matmul: A3's dim 0 (2) and B3's dim 0 (3) do not broadcast", NULL);
    oc_expect_error(ctx, tex_op_matmul(ctx, "C", V, A, 0, 0), TEX_EINVAL,
                    "tex_op_matmul: 'V' has 1 dims; at least 2 are needed", NULL);
    oc_expect_error(ctx, tex_op_matmul(ctx, "C", Sk, A, 0, 0), TEX_EINVAL,
                    "tex_op_matmul: Sk's dim 1 (K = K) != A's dim 0 (K = 5)", NULL);
    oc_expect_error(ctx, tex_op_matmul(ctx, "C", A, NULL, 0, 0), TEX_EMISUSE,
                    "tex_op_matmul: operand b is NULL", NULL);
    oc_expect_error(ctx, tex_op_dense(ctx, "D", A, A3, NULL), TEX_EINVAL,
                    "tex_op_dense: w ('A3') has 3 dims, not 2 ([N, K])", NULL);
    oc_expect_error(ctx, tex_op_dense(ctx, "D", A, B, NULL), TEX_EINVAL,
                    "tex_op_dense: A's dim 1 (K = 7) != B's dim 1 (K = 4)", NULL);
    tex_tensor *W = tex_placeholder_c(ctx, "W", TEX_F32, 2, (int64_t[]){4, 7});
    oc_expect_error(ctx, tex_op_dense(ctx, "D", A3, W, Bias), TEX_EINVAL,
                    "tex_op_dense: bias 'Bias' must be [N] with N = 4 (w's dim 0); it has 1 dims "
                    "(dim 0: 5)",
                    NULL);
    tex_ctx_free(ctx);
}

int main(void)
{
    if (oc_setup(cache_dir) != 0) {
        printf("test_ops_matmul: cannot make a temporary cache directory\n");
        return 1;
    }
    TT_RUN(test_errors);
    if (!tex_target_available("cpu")) {
        printf("SKIP ops_matmul (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_matmul_dense);
    TT_RUN(test_symbolic_scheduled);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
