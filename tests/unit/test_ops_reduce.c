/*
 * The reductions of src/ops/reduce.c: sum/mean/max/min over sets of axes
 * with and without keepdims (full reductions to a 0-d tensor included),
 * argmax/argmin (ties on small integers: the first index; a NaN: the first
 * NaN), softmax and log_softmax along inner and outer axes, over constant,
 * 1-element, prime and symbolic sizes. Each output is checked against a
 * hand-written C loop and the oracle (tests/support/opcheck.h); one kernel
 * per case, one case with a vectorized, parallel schedule; then the error
 * paths and their messages.
 */
#include "tt.h"
#include "support/opcheck.h"

static char cache_dir[] = "/tmp/tex-test-ops-reduce-XXXXXX";

enum { K_SUM, K_MEAN, K_MAX, K_MIN, K_ARGMAX, K_ARGMIN };

/* What a hand-written reduction computes: input `in`, the reduced dims of
 * its nd dims, keepdims, the kind (for arg kinds, the one axis). */
typedef struct {
    int in;
    bool red[8];
    bool keep;
    int kind;
    int axis;
} red_spec;

/* The flat output position of input point idx. */
static int64_t out_pos(const red_spec *r, const DLTensor *x, const DLTensor *o, const int64_t idx[])
{
    int64_t k = 0;
    int od = 0;
    for (int d = 0; d < x->ndim; d++)
        if (!r->red[d])
            k = k * o->shape[od++] + idx[d];
        else if (r->keep)
            k = k * o->shape[od++];
    return k;
}

/* True when v beats best for an arg kind (numpy: the first NaN wins, then
 * the first extreme). */
static bool arg_better(int kind, double v, double best)
{
    if (isnan(best))
        return false;
    if (isnan(v))
        return true;
    return kind == K_ARGMAX ? v > best : v < best;
}

static void hand_reduce(const oc *c, const void *u, const DLTensor *o, double *w)
{
    const red_spec *r = u;
    const DLTensor *x = oc_in(c, r->in);
    int64_t n_out = ops_numel(o), idx[8];
    double *cnt = calloc((size_t)n_out + 1, sizeof *cnt), *best = calloc((size_t)n_out + 1, 8);
    for (int64_t k = 0; k < n_out; k++)
        w[k] = r->kind == K_MAX ? -INFINITY : r->kind == K_MIN ? INFINITY : 0;
    for (int64_t k = 0; k < ops_numel(x); k++) {
        oc_unravel(x, k, idx);
        double v = oc_get(x, x->ndim, idx);
        int64_t p = out_pos(r, x, o, idx);
        if (r->kind == K_SUM || r->kind == K_MEAN)
            w[p] += v;
        else if (r->kind == K_MAX)
            w[p] = fmax(w[p], v);
        else if (r->kind == K_MIN)
            w[p] = fmin(w[p], v);
        else if (idx[r->axis] == 0 || arg_better(r->kind, v, best[p])) {
            best[p] = v;
            w[p] = (double)idx[r->axis];
        }
        cnt[p] += 1;
    }
    for (int64_t k = 0; r->kind == K_MEAN && k < n_out; k++)
        w[k] /= cnt[k];
    free(cnt);
    free(best);
}

/* X [4, 1, 7, 3]: sum over {0, 2} (keepdims), over everything (0-d), mean
 * over the last axis, max over {1, 3}, min over {2} (keepdims), mean of
 * everything (keepdims), argmax along 2, argmin along -1 (keepdims). */
static void test_reductions(void)
{
    static const red_spec s_02k = {0, {1, 0, 1, 0}, true, K_SUM, 0};
    static const red_spec s_all = {0, {1, 1, 1, 1}, false, K_SUM, 0};
    static const red_spec m_3 = {0, {0, 0, 0, 1}, false, K_MEAN, 0};
    static const red_spec x_13 = {0, {0, 1, 0, 1}, false, K_MAX, 0};
    static const red_spec n_2k = {0, {0, 0, 1, 0}, true, K_MIN, 0};
    static const red_spec m_allk = {0, {1, 1, 1, 1}, true, K_MEAN, 0};
    static const red_spec am_2 = {0, {0, 0, 1, 0}, false, K_ARGMAX, 2};
    static const red_spec an_3k = {0, {0, 0, 0, 1}, true, K_ARGMIN, 3};
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "reductions", 11);
    tex_tensor *X = oc_input_c(&c, "X", TEX_F32, 4, (int64_t[]){4, 1, 7, 3});
    oc_output_u(&c, tex_op_sum(ctx, "S02", X, 2, (int[]){0, 2}, 1), hand_reduce, &s_02k, 1);
    oc_output_u(&c, tex_op_sum(ctx, "Sall", X, 0, NULL, 0), hand_reduce, &s_all, 1);
    oc_output_u(&c, tex_op_mean(ctx, "M3", X, 1, (int[]){-1}, 0), hand_reduce, &m_3, 1);
    oc_output_u(&c, tex_op_max(ctx, "X13", X, 2, (int[]){3, 1}, 0), hand_reduce, &x_13, 1);
    oc_output_u(&c, tex_op_min(ctx, "N2", X, 1, (int[]){2}, 1), hand_reduce, &n_2k, 1);
    oc_output_u(&c, tex_op_mean(ctx, "Mall", X, 0, NULL, 1), hand_reduce, &m_allk, 1);
    oc_output_u(&c, tex_op_argmax(ctx, "AM", X, 2, 0), hand_reduce, &am_2, 1);
    oc_output_u(&c, tex_op_argmin(ctx, "AN", X, -1, 1), hand_reduce, &an_3k, 1);
    TT_EQ_INT(tex_tensor_ndim(c.out[0]), 4);
    TT_EQ_INT(tex_tensor_ndim(c.out[1]), 0);
    TT_EQ_INT(tex_tensor_ndim(c.out[3]), 2);
    TT_EQ_INT(tex_tensor_dtype(c.out[6]), TEX_I64);
    oc_run(&c, NULL);
    tex_ctx_free(ctx);
}

/* Small integers (|x| <= 3) tie often: argmax/argmin give the first index;
 * integer sum and max. */
static void test_int_ties(void)
{
    static const red_spec am_1 = {0, {0, 1}, false, K_ARGMAX, 1};
    static const red_spec an_0 = {0, {1, 0}, true, K_ARGMIN, 0};
    static const red_spec s_all = {0, {1, 1}, false, K_SUM, 0};
    static const red_spec x_0 = {0, {1, 0}, false, K_MAX, 0};
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "int_ties", 12);
    tex_tensor *I = oc_input_c(&c, "I", TEX_I32, 2, (int64_t[]){13, 6});
    oc_output_u(&c, tex_op_argmax(ctx, "AM", I, 1, 0), hand_reduce, &am_1, 1);
    oc_output_u(&c, tex_op_argmin(ctx, "AN", I, 0, 1), hand_reduce, &an_0, 1);
    oc_output_u(&c, tex_op_sum(ctx, "S", I, 0, NULL, 0), hand_reduce, &s_all, 1);
    oc_output_u(&c, tex_op_max(ctx, "X", I, 1, (int[]){0}, 0), hand_reduce, &x_0, 1);
    oc_run(&c, NULL);
    tex_ctx_free(ctx);
}

/* NaNs at a few positions of each row (rows 1 and 4 have two). */
static void put_nans(DLTensor *a)
{
    float *p = a->data;
    int64_t cols = a->shape[1];
    p[1 * cols + 3] = p[1 * cols + 5] = NAN;
    p[4 * cols + 0] = p[4 * cols + 6] = NAN;
}

/* argmax/argmin with NaNs: the first NaN, as numpy. */
static void test_arg_nan(void)
{
    static const red_spec am = {0, {0, 1}, false, K_ARGMAX, 1};
    static const red_spec an = {0, {0, 1}, false, K_ARGMIN, 1};
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "arg_nan", 13);
    tex_tensor *X = oc_input_c(&c, "X", TEX_F32, 2, (int64_t[]){5, 7});
    c.adjust[0] = put_nans;
    oc_output_u(&c, tex_op_argmax(ctx, "AM", X, 1, 0), hand_reduce, &am, 1);
    oc_output_u(&c, tex_op_argmin(ctx, "AN", X, 1, 0), hand_reduce, &an, 1);
    oc_run(&c, NULL);
    tex_ctx_free(ctx);
}

/* softmax or log_softmax of input `in` along `axis`. */
typedef struct {
    int in, axis;
    bool log;
} sm_spec;

static void hand_softmax(const oc *c, const void *u, const DLTensor *o, double *w)
{
    const sm_spec *s = u;
    const DLTensor *x = oc_in(c, s->in);
    int64_t idx[8], j[8];
    for (int64_t k = 0; k < ops_numel(o); k++) {
        oc_unravel(o, k, idx);
        memcpy(j, idx, sizeof j);
        double mx = -INFINITY, sum = 0;
        for (j[s->axis] = 0; j[s->axis] < x->shape[s->axis]; j[s->axis]++)
            mx = fmax(mx, oc_get(x, x->ndim, j));
        for (j[s->axis] = 0; j[s->axis] < x->shape[s->axis]; j[s->axis]++)
            sum += exp(oc_get(x, x->ndim, j) - mx);
        double v = oc_get(x, x->ndim, idx);
        w[k] = s->log ? v - mx - log(sum) : exp(v - mx) / sum;
    }
}

/* Inputs times 200 (|x| up to 300): exp(x) alone overflows f32, so only a
 * max-subtracted softmax gets these right. */
static void scale_up(DLTensor *a)
{
    for (int64_t e = 0; e < ops_numel(a); e++)
        ((float *)a->data)[e] *= 200.0f;
}

/* softmax along the middle and last axes of [3, 5, 2], log_softmax along
 * the middle one; a 1-element axis (softmax 1, log_softmax 0); large
 * inputs (numerical stability). */
static void test_softmax(void)
{
    static const sm_spec s1 = {0, 1, false}, s2 = {0, 2, false}, l1 = {0, 1, true};
    static const sm_spec one = {1, 0, false}, lone = {1, 0, true};
    static const sm_spec big = {2, 1, false}, lbig = {2, 1, true};
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "softmax", 14);
    tex_tensor *X = oc_input_c(&c, "X", TEX_F32, 3, (int64_t[]){3, 5, 2});
    tex_tensor *Y = oc_input_c(&c, "Y", TEX_F32, 2, (int64_t[]){1, 4});
    oc_output_u(&c, tex_op_softmax(ctx, "Sm1", X, 1), hand_softmax, &s1, 1);
    oc_output_u(&c, tex_op_softmax(ctx, "Sm2", X, -1), hand_softmax, &s2, 1);
    oc_output_u(&c, tex_op_log_softmax(ctx, "Ls1", X, 1), hand_softmax, &l1, 1);
    oc_output_u(&c, tex_op_softmax(ctx, "SmOne", Y, 0), hand_softmax, &one, 1);
    oc_output_u(&c, tex_op_log_softmax(ctx, "LsOne", Y, 0), hand_softmax, &lone, 1);
    tex_tensor *Big = oc_input_c(&c, "Big", TEX_F32, 2, (int64_t[]){2, 9});
    c.adjust[2] = scale_up;
    oc_output_u(&c, tex_op_softmax(ctx, "SmBig", Big, 1), hand_softmax, &big, 1);
    oc_output_u(&c, tex_op_log_softmax(ctx, "LsBig", Big, 1), hand_softmax, &lbig, 1);
    oc_run(&c, NULL);
    tex_ctx_free(ctx);
}

/* Symbolic sizes N = 5, M = 11 bound at call time, and a vectorized,
 * parallel schedule of every output (the split leaves tails). */
static void test_symbolic_scheduled(void)
{
    static const red_spec s_1 = {0, {0, 1}, false, K_SUM, 0};
    static const red_spec m_0 = {0, {1, 0}, false, K_MEAN, 0};
    static const red_spec am_1 = {0, {0, 1}, true, K_ARGMAX, 1};
    static const sm_spec s1 = {0, 1, false}, l0 = {0, 0, true};
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "symbolic", 15);
    tex_expr *N = oc_size(&c, "N", 5, true), *M = oc_size(&c, "M", 11, true);
    tex_tensor *X = oc_input(&c, "X", TEX_F32, 2, (tex_expr *[]){N, M});
    oc_output_u(&c, tex_op_sum(ctx, "S", X, 1, (int[]){1}, 0), hand_reduce, &s_1, 1);
    oc_output_u(&c, tex_op_mean(ctx, "Mn", X, 1, (int[]){0}, 0), hand_reduce, &m_0, 1);
    oc_output_u(&c, tex_op_argmax(ctx, "AM", X, 1, 1), hand_reduce, &am_1, 1);
    oc_output_u(&c, tex_op_softmax(ctx, "Sm", X, 1), hand_softmax, &s1, 1);
    oc_output_u(&c, tex_op_log_softmax(ctx, "Ls", X, 0), hand_softmax, &l0, 1);
    oc_run(&c, oc_sched_vector);
    tex_ctx_free(ctx);
}

static void test_errors(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 2, (int64_t[]){3, 4});
    tex_tensor *I = tex_placeholder_c(ctx, "I", TEX_I32, 1, (int64_t[]){3});
    oc_expect_error(ctx, tex_op_sum(ctx, "S", X, 1, (int[]){2}, 0), TEX_EINVAL,
                    "tex_op_sum: axis 2 is out of range for 'X' (2 dims)", NULL);
    oc_expect_error(ctx, tex_op_max(ctx, "S", X, 2, (int[]){1, -1}, 0), TEX_EINVAL,
                    "tex_op_max: axis 1 of 'X' is listed twice", NULL);
    oc_expect_error(ctx, tex_op_min(ctx, "S", X, 1, NULL, 0), TEX_EINVAL,
                    "tex_op_min: 1 axes given but the axes array is NULL", NULL);
    oc_expect_error(ctx, tex_op_mean(ctx, "S", I, 0, NULL, 0), TEX_ETYPE,
                    "tex_op_mean: x ('I') has dtype i32; a float dtype is required", NULL);
    oc_expect_error(ctx, tex_op_softmax(ctx, "S", X, -3), TEX_EINVAL,
                    "tex_op_softmax: axis -3 is out of range for 'X' (2 dims)", NULL);
    oc_expect_error(ctx, tex_op_log_softmax(ctx, "S", I, 0), TEX_ETYPE, "tex_op_log_softmax", "i32",
                    NULL);
    oc_expect_error(ctx, tex_op_argmax(ctx, "S", X, 5, 0), TEX_EINVAL,
                    "tex_op_argmax: axis 5 is out of range for 'X' (2 dims)", NULL);
    oc_expect_error(ctx, tex_op_argmin(ctx, "S", NULL, 0, 0), TEX_EMISUSE,
                    "tex_op_argmin: operand x is NULL", NULL);
    oc_expect_error(ctx, tex_op_sum(ctx, "S", NULL, 0, NULL, 0), TEX_EMISUSE,
                    "tex_op_sum: operand x is NULL", NULL);
    tex_ctx_free(ctx);
}

int main(void)
{
    if (oc_setup(cache_dir) != 0) {
        printf("test_ops_reduce: cannot make a temporary cache directory\n");
        return 1;
    }
    TT_RUN(test_errors);
    if (!tex_target_available("cpu")) {
        printf("SKIP ops_reduce (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_reductions);
    TT_RUN(test_int_ties);
    TT_RUN(test_arg_nan);
    TT_RUN(test_softmax);
    TT_RUN(test_symbolic_scheduled);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
