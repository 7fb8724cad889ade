/*
 * ir/eval_sample.c: the sampled oracle (texi_eval_sample_check), which the
 * tuner uses on workloads too large for tex_eval_reference.
 *
 * For each graph (matmul with a relu epilogue, softmax, layernorm, conv2d
 * with padding, an integer matmul, symbolic sizes) the full oracle writes
 * the outputs, the sampled check must accept them, and a change of one
 * element that the sample covers (the first, the last) must be reported
 * with the tensor's name. Two computes sharing one reduce axis, the second
 * reading the first inside its reduction, check the saved variable slots.
 * A 1024^3 matmul is checked at 64 points without the full product. Then
 * the argument errors.
 */
#include "ir/eval.h"
#include "support/ops.h"
#include "tt.h"

#include <string.h>

static tex_ctx *ctx;
static const DLDevice cpu = {kDLCPU, 0};
static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* A host array for t of the given shape (t's own when NULL), random. */
static DLTensor *array_for(tex_tensor *t, const int64_t *shape)
{
    int64_t s[8];
    for (int d = 0; d < tex_tensor_ndim(t); d++)
        if (!shape)
            tex_expr_const_int(tex_tensor_dim(t, d), &s[d]);
        else
            s[d] = shape[d];
    DLTensor *a = tex_array_new(tex_tensor_ndim(t), s, tex_tensor_dtype(t), cpu);
    if (a)
        ops_fill_random(a, tex_tensor_dtype(t), &rng);
    return a;
}

static void free_arrays(int n, DLTensor *a[])
{
    for (int i = 0; i < n; i++)
        tex_array_free(a[i]);
}

/* texi_eval_sample_check with no limit on the work. */
static int sample(int n, tex_tensor *t[], DLTensor *a[], int points, uint64_t seed, double tol,
                  bool *ok, char *why, size_t why_size)
{
    int checked = 0;
    int rc = texi_eval_sample_check(ctx, n, t, a, points, INT64_MAX, seed, tol, ok, &checked, why,
                                    why_size);
    if (rc == 0 && *ok)
        TT_CHECK(checked > 0);
    return rc;
}

/* Runs the full oracle, then the sampled check on its result (accepted),
 * then on the result with its first and its last element changed
 * (rejected, naming the output). */
static void check_graph(int n, tex_tensor *t[], DLTensor *a[])
{
    char why[256] = "";
    bool ok = false;
    TT_EQ_INT(tex_eval_reference(ctx, n, t, a), 0);
    TT_EQ_INT(sample(n, t, a, 48, 7, 1e-5, &ok, why, sizeof why), 0);
    TT_CHECK(ok);
    DLTensor *out = a[n - 1];
    int64_t last = ops_numel(out) - 1;
    for (int which = 0; which < 2; which++) {
        int64_t e = which ? last : 0;
        bool f32 = out->dtype.code == kDLFloat;
        float *pf = (float *)out->data + e;
        int32_t *pi = (int32_t *)out->data + e;
        float kf = *pf;
        int32_t ki = *pi;
        if (f32)
            *pf += 0.01f;
        else
            *pi += 1;
        why[0] = 0;
        TT_EQ_INT(sample(n, t, a, 48, 7, 1e-5, &ok, why, sizeof why), 0);
        TT_CHECK(!ok);
        TT_CHECK(strstr(why, tex_tensor_name(t[n - 1])) != NULL);
        if (f32)
            *pf = kf;
        else
            *pi = ki;
    }
}

static tex_tensor *ph(const char *name, tex_dtype dt, int ndim, const int64_t *shape)
{
    return tex_placeholder_c(ctx, name, dt, ndim, shape);
}

static void test_matmul_relu(void)
{
    ctx = tex_ctx_new();
    tex_tensor *A = ph("A", TEX_F32, 2, (int64_t[]){37, 53});
    tex_tensor *B = ph("B", TEX_F32, 2, (int64_t[]){53, 29});
    tex_tensor *C = tex_op_relu(ctx, "C", tex_op_matmul(ctx, "AB", A, B, 0, 0));
    DLTensor *a[] = {array_for(A, NULL), array_for(B, NULL), array_for(C, NULL)};
    check_graph(3, (tex_tensor *[]){A, B, C}, a);
    free_arrays(3, a);
    tex_ctx_free(ctx);
}

static void test_softmax_layernorm(void)
{
    ctx = tex_ctx_new();
    tex_tensor *X = ph("X", TEX_F32, 2, (int64_t[]){13, 31});
    tex_tensor *G = ph("G", TEX_F32, 1, (int64_t[]){31});
    tex_tensor *Bt = ph("Bt", TEX_F32, 1, (int64_t[]){31});
    tex_tensor *S = tex_op_softmax(ctx, "S", X, 1);
    tex_tensor *L = tex_op_layernorm(ctx, "L", S, G, Bt, 1, 1e-5);
    DLTensor *a[] = {array_for(X, NULL), array_for(G, NULL), array_for(Bt, NULL),
                     array_for(L, NULL)};
    check_graph(4, (tex_tensor *[]){X, G, Bt, L}, a);
    free_arrays(4, a);
    tex_ctx_free(ctx);
}

static void test_conv2d_padded(void)
{
    ctx = tex_ctx_new();
    tex_tensor *X = ph("X", TEX_F32, 4, (int64_t[]){1, 5, 11, 7});
    tex_tensor *W = ph("W", TEX_F32, 4, (int64_t[]){3, 5, 3, 3});
    tex_tensor *Y = tex_op_conv2d(ctx, "Y", X, W, (int64_t[]){2, 1}, (int64_t[]){1, 1}, NULL, 1,
                                  TEX_LAYOUT_NCHW);
    DLTensor *a[] = {array_for(X, NULL), array_for(W, NULL), array_for(Y, NULL)};
    check_graph(3, (tex_tensor *[]){X, W, Y}, a);
    free_arrays(3, a);
    tex_ctx_free(ctx);
}

static void test_int_and_symbolic(void)
{
    ctx = tex_ctx_new();
    tex_tensor *A = ph("A", TEX_I32, 2, (int64_t[]){17, 19});
    tex_tensor *B = ph("B", TEX_I32, 2, (int64_t[]){19, 1});
    tex_tensor *C = tex_op_matmul(ctx, "Ci", A, B, 0, 0);
    DLTensor *a[] = {array_for(A, NULL), array_for(B, NULL), array_for(C, NULL)};
    check_graph(3, (tex_tensor *[]){A, B, C}, a);
    free_arrays(3, a);

    tex_expr *m = tex_var(ctx, "m", TEX_I64);
    tex_tensor *X = tex_placeholder(ctx, "X", TEX_F32, 2, (tex_expr *[]){m, tex_int(ctx, 23)});
    tex_tensor *S = tex_op_softmax(ctx, "Sm", X, 1);
    DLTensor *b[] = {array_for(X, (int64_t[]){11, 23}), array_for(S, (int64_t[]){11, 23})};
    check_graph(2, (tex_tensor *[]){X, S}, b);
    free_arrays(2, b);
    tex_ctx_free(ctx);
}

/* B[r] = sum_k X[r, k] and C[i] = sum_k B[k] * X[i, k] with the same k:
 * C's reduction reads B elements that are computed inside its loop over k. */
static void test_shared_reduce_axis(void)
{
    ctx = tex_ctx_new();
    enum { N = 9 };
    tex_tensor *X = ph("X", TEX_F32, 2, (int64_t[]){N, N});
    tex_iter *r = tex_axis(ctx, "r", tex_int(ctx, N)), *i = tex_axis(ctx, "i", tex_int(ctx, N));
    tex_iter *k = tex_reduce_axis(ctx, "k", tex_int(ctx, N));
    tex_expr *vr = tex_iv(r), *vi = tex_iv(i), *vk = tex_iv(k);
    tex_tensor *B = tex_compute(ctx, "B", 1, &r, tex_sum(TEX_AT(X, vr, vk), 1, &k));
    tex_tensor *C =
        tex_compute(ctx, "C", 1, &i, tex_sum(tex_mul(TEX_AT(B, vk), TEX_AT(X, vi, vk)), 1, &k));
    TT_CHECK(C != NULL);
    DLTensor *a[] = {array_for(X, NULL), array_for(C, NULL)};
    check_graph(2, (tex_tensor *[]){X, C}, a);
    free_arrays(2, a);
    tex_ctx_free(ctx);
}

/* Elements of a 1024^3 product: each point costs one dot product, so the
 * check never computes the whole product. The first and the last element
 * are set by hand; the others hold random values, which a sample of 16
 * points must notice. */
static void test_large_matmul(void)
{
    ctx = tex_ctx_new();
    enum { N = 1024 };
    tex_tensor *A = ph("A", TEX_F32, 2, (int64_t[]){N, N});
    tex_tensor *B = ph("B", TEX_F32, 2, (int64_t[]){N, N});
    tex_tensor *C = tex_op_matmul(ctx, "C", A, B, 0, 0);
    tex_tensor *t[] = {A, B, C};
    DLTensor *a[] = {array_for(A, NULL), array_for(B, NULL), array_for(C, NULL)};
    const float *pa = a[0]->data, *pb = a[1]->data;
    float *pc = a[2]->data;
    for (int corner = 0; corner < 2; corner++) {
        int64_t x = corner * (N - 1), y = x;
        double s = 0;
        for (int64_t z = 0; z < N; z++)
            s += (double)pa[x * N + z] * pb[z * N + y];
        pc[x * N + y] = (float)s;
    }
    char why[256] = "";
    bool ok = false;
    TT_EQ_INT(sample(3, t, a, 2, 1, 1e-4, &ok, why, sizeof why), 0);
    TT_CHECK(ok);
    TT_EQ_INT(sample(3, t, a, 16, 1, 1e-4, &ok, why, sizeof why), 0);
    TT_CHECK(!ok && strstr(why, "'C'") != NULL);
    /* A work limit below one dot product still compares the first and the last. */
    int checked = 0;
    TT_EQ_INT(texi_eval_sample_check(ctx, 3, t, a, 16, 1, 1, 1e-4, &ok, &checked, why, sizeof why),
              0);
    TT_CHECK(ok);
    TT_EQ_INT(checked, 2);
    free_arrays(3, a);
    tex_ctx_free(ctx);
}

static void test_errors(void)
{
    ctx = tex_ctx_new();
    tex_tensor *A = ph("A", TEX_F32, 1, (int64_t[]){4});
    tex_tensor *C = tex_op_relu(ctx, "C", A);
    DLTensor *a[] = {array_for(A, NULL), array_for(C, NULL)};
    DLTensor *wrong = tex_array_new(1, (int64_t[]){5}, TEX_F32, cpu);
    bool ok = true;
    int checked;
    char why[64];
    tex_tensor *t[] = {A, C};
    TT_EQ_INT(texi_eval_sample_check(NULL, 2, t, a, 4, 9, 1, 1e-5, &ok, &checked, why, sizeof why),
              TEX_EMISUSE);
    TT_EQ_INT(texi_eval_sample_check(ctx, 2, t, a, 4, 9, 1, 1e-5, NULL, &checked, why, sizeof why),
              TEX_EMISUSE);
    TT_EQ_INT(texi_eval_sample_check(ctx, 2, t, a, 4, 9, 1, 1e-5, &ok, NULL, why, sizeof why),
              TEX_EMISUSE);
    TT_EQ_INT(sample(1, (tex_tensor *[]){C}, &a[1], 4, 1, 1e-5, &ok, why, sizeof why), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'A'") != NULL);
    TT_EQ_INT(sample(2, t, (DLTensor *[]){a[0], wrong}, 4, 1, 1e-5, &ok, why, sizeof why),
              TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "'C'") != NULL);
    tex_array_free(wrong);
    free_arrays(2, a);
    tex_ctx_free(ctx);
}

int main(void)
{
    TT_RUN(test_matmul_relu);
    TT_RUN(test_softmax_layernorm);
    TT_RUN(test_conv2d_padded);
    TT_RUN(test_int_and_symbolic);
    TT_RUN(test_shared_reduce_axis);
    TT_RUN(test_large_matmul);
    TT_RUN(test_errors);
    return tt_finish();
}
