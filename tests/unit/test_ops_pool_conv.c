/*
 * Pooling and convolution (src/ops/pool.c, conv.c): max/avg pooling with
 * stride and padding (counting the padding or not), global pooling, conv2d
 * in NCHW and NHWC with stride, padding, dilation and groups (depthwise
 * included) and its implicit-GEMM form, over constant, prime and symbolic sizes, against
 * hand-written C loops and the oracle (tests/support/opcheck.h); the symbolic cases under a
 * vectorized, parallel schedule; then the error paths.
 */
#include "tt.h"
#include "support/opcheck.h"

static char cache_dir[] = "/tmp/tex-test-ops-pool-conv-XXXXXX";

enum { P_MAX, P_AVG_PAD, P_AVG_EXCL, P_GMAX, P_GAVG };

typedef struct {
    int in, kind;
    int64_t k[2], s[2], p[2];
} pool_spec;

static void hand_pool(const oc *c, const void *u, const DLTensor *o, double *w)
{
    const pool_spec *ps = u;
    const DLTensor *x = oc_in(c, ps->in);
    int64_t idx[4], k[2] = {ps->k[0], ps->k[1]}, s[2] = {ps->s[0], ps->s[1]};
    bool global = ps->kind == P_GMAX || ps->kind == P_GAVG;
    if (global)
        k[0] = x->shape[2], k[1] = x->shape[3], s[0] = s[1] = 1;
    for (int64_t q = 0; q < ops_numel(o); q++) {
        oc_unravel(o, q, idx);
        double mx = -INFINITY, sum = 0, n = 0;
        for (int64_t ry = 0; ry < k[0]; ry++)
            for (int64_t rx = 0; rx < k[1]; rx++) {
                int64_t h = idx[2] * s[0] - (global ? 0 : ps->p[0]) + ry;
                int64_t ww = idx[3] * s[1] - (global ? 0 : ps->p[1]) + rx;
                if (h < 0 || h >= x->shape[2] || ww < 0 || ww >= x->shape[3])
                    continue;
                double v = oc_get(x, 4, (int64_t[]){idx[0], idx[1], h, ww});
                mx = fmax(mx, v);
                sum += v;
                n += 1;
            }
        w[q] = ps->kind == P_MAX || ps->kind == P_GMAX ? mx
               : ps->kind == P_AVG_PAD                 ? sum / (double)(k[0] * k[1])
                                                       : sum / n;
    }
}

static void test_pool(void)
{
    static const pool_spec mx = {0, P_MAX, {3, 2}, {2, 1}, {1, 1}};
    static const pool_spec ap = {0, P_AVG_PAD, {3, 2}, {2, 1}, {1, 1}};
    static const pool_spec ae = {0, P_AVG_EXCL, {3, 2}, {2, 1}, {1, 1}};
    static const pool_spec plain = {0, P_MAX, {2, 2}, {1, 1}, {0, 0}};
    static const pool_spec gm = {0, P_GMAX, {0}, {0}, {0}}, ga = {0, P_GAVG, {0}, {0}, {0}};
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "pool", 51);
    tex_tensor *X = oc_input_c(&c, "X", TEX_F32, 4, (int64_t[]){2, 3, 7, 6});
    int64_t k[2] = {3, 2}, s[2] = {2, 1}, p[2] = {1, 1};
    oc_output_u(&c, tex_op_max_pool2d(ctx, "Mx", X, k, s, p), hand_pool, &mx, 1);
    oc_output_u(&c, tex_op_avg_pool2d(ctx, "Ap", X, k, s, p, 1), hand_pool, &ap, 1);
    oc_output_u(&c, tex_op_avg_pool2d(ctx, "Ae", X, k, s, p, 0), hand_pool, &ae, 1);
    oc_output_u(&c, tex_op_max_pool2d(ctx, "Plain", X, (int64_t[]){2, 2}, NULL, NULL), hand_pool,
                &plain, 1);
    oc_output_u(&c, tex_op_global_max_pool2d(ctx, "Gm", X), hand_pool, &gm, 1);
    oc_output_u(&c, tex_op_global_avg_pool2d(ctx, "Ga", X), hand_pool, &ga, 1);
    TT_CHECK(tex_expr_equal(tex_tensor_dim(c.out[0], 2), tex_int(ctx, 4)));
    TT_CHECK(tex_expr_equal(tex_tensor_dim(c.out[0], 3), tex_int(ctx, 7)));
    oc_run(&c, NULL);
    tex_ctx_free(ctx);
}

typedef struct {
    int x, w;
    int64_t s[2], p[2], d[2];
    int groups;
    bool nhwc;
} conv_spec;

static void hand_conv(const oc *c, const void *u, const DLTensor *o, double *out)
{
    const conv_spec *cs = u;
    const DLTensor *x = oc_in(c, cs->x), *w = oc_in(c, cs->w);
    /* positions of n, c, h, w in x and out; of f, c, kh, kw in w */
    const int xp[4] = {0, cs->nhwc ? 3 : 1, cs->nhwc ? 1 : 2, cs->nhwc ? 2 : 3};
    const int wp[4] = {cs->nhwc ? 3 : 0, cs->nhwc ? 2 : 1, cs->nhwc ? 0 : 2, cs->nhwc ? 1 : 3};
    int64_t F = w->shape[wp[0]], Cg = w->shape[wp[1]], KH = w->shape[wp[2]], KW = w->shape[wp[3]];
    int64_t idx[4] = {0}, xi[4], wi[4];
    for (int64_t q = 0; q < ops_numel(o); q++) {
        oc_unravel(o, q, idx);
        int64_t f = idx[xp[1]], g = f / (F / cs->groups);
        double acc = 0;
        for (int64_t ch = 0; ch < Cg; ch++)
            for (int64_t ry = 0; ry < KH; ry++)
                for (int64_t rx = 0; rx < KW; rx++) {
                    int64_t h = idx[xp[2]] * cs->s[0] - cs->p[0] + ry * cs->d[0];
                    int64_t ww = idx[xp[3]] * cs->s[1] - cs->p[1] + rx * cs->d[1];
                    if (h < 0 || h >= x->shape[xp[2]] || ww < 0 || ww >= x->shape[xp[3]])
                        continue;
                    xi[xp[0]] = idx[xp[0]], xi[xp[1]] = g * Cg + ch, xi[xp[2]] = h, xi[xp[3]] = ww;
                    wi[wp[0]] = f, wi[wp[1]] = ch, wi[wp[2]] = ry, wi[wp[3]] = rx;
                    acc += oc_get(x, 4, xi) * oc_get(w, 4, wi);
                }
        out[q] = acc;
    }
}

/* NCHW: padding 1; stride 2 with dilation 2 and uneven padding; 2 groups;
 * depthwise (4 groups, 2 filters each). NHWC: stride 2 padding 1; 2 groups. */
static void test_conv(void)
{
    static const conv_spec a = {0, 1, {1, 1}, {1, 1}, {1, 1}, 1, false};
    static const conv_spec b = {0, 1, {2, 2}, {2, 1}, {2, 2}, 1, false};
    static const conv_spec g = {0, 2, {1, 1}, {1, 0}, {1, 1}, 2, false};
    static const conv_spec dw = {0, 3, {1, 2}, {1, 1}, {1, 1}, 4, false};
    static const conv_spec h = {4, 5, {2, 2}, {1, 1}, {1, 1}, 1, true};
    static const conv_spec hg = {4, 6, {1, 1}, {0, 1}, {1, 1}, 2, true};
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "conv", 52);
    tex_tensor *X = oc_input_c(&c, "X", TEX_F32, 4, (int64_t[]){1, 4, 7, 6});
    tex_tensor *W = oc_input_c(&c, "W", TEX_F32, 4, (int64_t[]){6, 4, 3, 3});
    tex_tensor *Wg = oc_input_c(&c, "Wg", TEX_F32, 4, (int64_t[]){6, 2, 3, 1});
    tex_tensor *Wd = oc_input_c(&c, "Wd", TEX_F32, 4, (int64_t[]){8, 1, 3, 3});
    tex_tensor *Xh = oc_input_c(&c, "Xh", TEX_F32, 4, (int64_t[]){2, 5, 7, 4});
    tex_tensor *Wh = oc_input_c(&c, "Wh", TEX_F32, 4, (int64_t[]){3, 3, 4, 5});
    tex_tensor *Whg = oc_input_c(&c, "Whg", TEX_F32, 4, (int64_t[]){1, 3, 2, 6});
    oc_output_u(&c, tex_op_conv2d(ctx, "A", X, W, NULL, a.p, NULL, 1, TEX_LAYOUT_NCHW), hand_conv,
                &a, 1);
    oc_output_u(&c, tex_op_conv2d(ctx, "B", X, W, b.s, b.p, b.d, 1, TEX_LAYOUT_NCHW), hand_conv, &b,
                1);
    oc_output_u(&c, tex_op_conv2d(ctx, "G", X, Wg, NULL, g.p, NULL, 2, TEX_LAYOUT_NCHW), hand_conv,
                &g, 1);
    oc_output_u(&c, tex_op_conv2d(ctx, "Dw", X, Wd, dw.s, dw.p, NULL, 4, TEX_LAYOUT_NCHW),
                hand_conv, &dw, 1);
    oc_output_u(&c, tex_op_conv2d(ctx, "H", Xh, Wh, h.s, h.p, NULL, 1, TEX_LAYOUT_NHWC), hand_conv,
                &h, 1);
    oc_output_u(&c, tex_op_conv2d(ctx, "Hg", Xh, Whg, NULL, hg.p, NULL, 2, TEX_LAYOUT_NHWC),
                hand_conv, &hg, 1);
    /* the implicit-GEMM form of three of them */
    oc_output_u(&c, tex_op_conv2d_gemm(ctx, "Bk", X, W, b.s, b.p, b.d, 1, TEX_LAYOUT_NCHW),
                hand_conv, &b, 1);
    oc_output_u(&c, tex_op_conv2d_gemm(ctx, "Dwk", X, Wd, dw.s, dw.p, NULL, 4, TEX_LAYOUT_NCHW),
                hand_conv, &dw, 1);
    oc_output_u(&c, tex_op_conv2d_gemm(ctx, "Hgk", Xh, Whg, NULL, hg.p, NULL, 2, TEX_LAYOUT_NHWC),
                hand_conv, &hg, 1);
    TT_EQ_INT(tex_tensor_ndim(c.out[6]), 4);
    oc_run(&c, NULL);
    tex_ctx_free(ctx);
}

/* TEX_LAYOUT_NCHWC: x [N, C / CB, H, W, CB], w [F / FB, C / CB, KH, KW, CB,
 * FB], out [N, F / FB, OH, OW, FB]. */
static void hand_conv_blocked(const oc *c, const void *u, const DLTensor *o, double *out)
{
    const conv_spec *cs = u;
    const DLTensor *x = oc_in(c, cs->x), *w = oc_in(c, cs->w);
    int64_t idx[5] = {0};
    for (int64_t q = 0; q < ops_numel(o); q++) {
        oc_unravel(o, q, idx);
        double acc = 0;
        for (int64_t co = 0; co < w->shape[1]; co++)
            for (int64_t ry = 0; ry < w->shape[2]; ry++)
                for (int64_t rx = 0; rx < w->shape[3]; rx++)
                    for (int64_t ci = 0; ci < w->shape[4]; ci++) {
                        int64_t h = idx[2] * cs->s[0] - cs->p[0] + ry * cs->d[0];
                        int64_t ww = idx[3] * cs->s[1] - cs->p[1] + rx * cs->d[1];
                        if (h < 0 || h >= x->shape[2] || ww < 0 || ww >= x->shape[3])
                            continue;
                        acc += oc_get(x, 5, (int64_t[]){idx[0], co, h, ww, ci}) *
                               oc_get(w, 6, (int64_t[]){idx[1], co, ry, rx, ci, idx[4]});
                    }
        out[q] = acc;
    }
}

/* NCHWc: channels in 2 blocks of 4, filters in 2 blocks of 3; padding 1;
 * stride 2 with dilation 2 and uneven padding; a 1 x 1 kernel; symbolic
 * N, H, W under a vectorized, parallel schedule. */
static void test_conv_blocked(void)
{
    static const conv_spec a = {0, 1, {1, 1}, {1, 1}, {1, 1}, 1, false};
    static const conv_spec b = {0, 1, {2, 2}, {2, 1}, {2, 2}, 1, false};
    static const conv_spec one = {0, 2, {1, 1}, {0, 0}, {1, 1}, 1, false};
    static const conv_spec sym = {3, 1, {2, 1}, {1, 0}, {1, 1}, 1, false};
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "conv_blocked", 54);
    tex_tensor *X = oc_input_c(&c, "X", TEX_F32, 5, (int64_t[]){2, 2, 7, 6, 4});
    tex_tensor *W = oc_input_c(&c, "W", TEX_F32, 6, (int64_t[]){2, 2, 3, 3, 4, 3});
    tex_tensor *W1 = oc_input_c(&c, "W1", TEX_F32, 6, (int64_t[]){3, 2, 1, 1, 4, 5});
    tex_expr *N = oc_size(&c, "N", 2, true), *H = oc_size(&c, "H", 9, true);
    tex_expr *Wd = oc_size(&c, "Wd", 5, true);
    tex_tensor *Xs =
        oc_input(&c, "Xs", TEX_F32, 5, (tex_expr *[]){N, tex_int(ctx, 2), H, Wd, tex_int(ctx, 4)});
    oc_output_u(&c, tex_op_conv2d(ctx, "A", X, W, NULL, a.p, NULL, 1, TEX_LAYOUT_NCHWC),
                hand_conv_blocked, &a, 1);
    oc_output_u(&c, tex_op_conv2d(ctx, "B", X, W, b.s, b.p, b.d, 1, TEX_LAYOUT_NCHWC),
                hand_conv_blocked, &b, 1);
    oc_output_u(&c, tex_op_conv2d(ctx, "One", X, W1, NULL, NULL, NULL, 1, TEX_LAYOUT_NCHWC),
                hand_conv_blocked, &one, 1);
    oc_output_u(&c, tex_op_conv2d(ctx, "S", Xs, W, sym.s, sym.p, NULL, 1, TEX_LAYOUT_NCHWC),
                hand_conv_blocked, &sym, 1);
    TT_EQ_INT(tex_tensor_ndim(c.out[0]), 5);
    TT_CHECK(tex_expr_equal(tex_tensor_dim(c.out[2], 4), tex_int(ctx, 5)));
    oc_run(&c, oc_sched_vector);
    tex_ctx_free(ctx);
}

/* Symbolic N, H, W (2, 9, 5) for conv2d (NCHW and NHWC) and pooling under
 * a vectorized, parallel schedule. */
static void test_symbolic_scheduled(void)
{
    static const conv_spec a = {0, 1, {1, 1}, {1, 1}, {1, 1}, 1, false};
    static const conv_spec h = {2, 3, {2, 1}, {0, 1}, {1, 1}, 1, true};
    static const pool_spec ae = {0, P_AVG_EXCL, {3, 3}, {2, 2}, {1, 1}};
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "conv_sym", 53);
    tex_expr *N = oc_size(&c, "N", 2, true), *H = oc_size(&c, "H", 9, true);
    tex_expr *Wd = oc_size(&c, "W", 5, true), *C = tex_int(ctx, 3);
    tex_tensor *X = oc_input(&c, "X", TEX_F32, 4, (tex_expr *[]){N, C, H, Wd});
    tex_tensor *W = oc_input_c(&c, "Wt", TEX_F32, 4, (int64_t[]){4, 3, 3, 3});
    tex_tensor *Xh = oc_input(&c, "Xh", TEX_F32, 4, (tex_expr *[]){N, H, Wd, C});
    tex_tensor *Wh = oc_input_c(&c, "Wh", TEX_F32, 4, (int64_t[]){2, 3, 3, 4});
    oc_output_u(&c, tex_op_conv2d(ctx, "A", X, W, NULL, a.p, NULL, 1, TEX_LAYOUT_NCHW), hand_conv,
                &a, 1);
    oc_output_u(&c, tex_op_conv2d(ctx, "H", Xh, Wh, h.s, h.p, NULL, 1, TEX_LAYOUT_NHWC), hand_conv,
                &h, 1);
    oc_output_u(&c, tex_op_avg_pool2d(ctx, "Ae", X, ae.k, ae.s, ae.p, 0), hand_pool, &ae, 1);
    oc_output_u(&c, tex_op_conv2d_gemm(ctx, "Hk", Xh, Wh, h.s, h.p, NULL, 1, TEX_LAYOUT_NHWC),
                hand_conv, &h, 1);
    oc_run(&c, oc_sched_vector);
    tex_ctx_free(ctx);
}

static void test_errors(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 4, (int64_t[]){1, 4, 5, 5});
    tex_tensor *W = tex_placeholder_c(ctx, "W", TEX_F32, 4, (int64_t[]){6, 3, 3, 3});
    tex_tensor *W7 = tex_placeholder_c(ctx, "W7", TEX_F32, 4, (int64_t[]){5, 2, 7, 7});
    tex_tensor *X3 = tex_placeholder_c(ctx, "X3", TEX_F32, 3, (int64_t[]){4, 5, 5});
    tex_tensor *I = tex_placeholder_c(ctx, "I", TEX_I32, 4, (int64_t[]){1, 4, 5, 5});
    oc_expect_error(
        ctx, tex_op_conv2d(ctx, "C", X, W, NULL, NULL, NULL, 1, TEX_LAYOUT_NCHW), TEX_EINVAL,
        "tex_op_conv2d: X's dim 1 (C = 4) != 1 groups * W's dim 1 (C / groups = 3)", NULL);
    oc_expect_error(ctx, tex_op_conv2d(ctx, "C", X, W7, NULL, NULL, NULL, 2, TEX_LAYOUT_NCHW),
                    TEX_EINVAL, "tex_op_conv2d: W7's dim 0 (F = 5) is not a multiple of 2 groups",
                    NULL);
    tex_tensor *W8 = tex_placeholder_c(ctx, "W8", TEX_F32, 4, (int64_t[]){4, 2, 7, 7});
    oc_expect_error(
        ctx, tex_op_conv2d(ctx, "C", X, W8, NULL, NULL, NULL, 2, TEX_LAYOUT_NCHW), TEX_EINVAL,
        "tex_op_conv2d: the window (7, dilation 1) is larger than H (5) padded by 0", NULL);
    oc_expect_error(ctx, tex_op_conv2d(ctx, "C", X, W, (int64_t[]){1, 0}, NULL, NULL, 1, 0),
                    TEX_EINVAL, "tex_op_conv2d: stride[1] = 0 (must be >= 1)", NULL);
    oc_expect_error(ctx, tex_op_conv2d(ctx, "C", X3, W, NULL, NULL, NULL, 1, 0), TEX_EINVAL,
                    "tex_op_conv2d: 'X3' has 3 dims, not 4", NULL);
    oc_expect_error(ctx, tex_op_conv2d(ctx, "C", X, NULL, NULL, NULL, NULL, 1, 0), TEX_EMISUSE,
                    "tex_op_conv2d: operand w is NULL", NULL);
    oc_expect_error(ctx, tex_op_conv2d_gemm(ctx, "C", X, W, NULL, NULL, NULL, 1, (tex_layout)7),
                    TEX_EINVAL, "tex_op_conv2d_gemm: unknown layout 7", NULL);
    tex_tensor *Xb = tex_placeholder_c(ctx, "Xb", TEX_F32, 5, (int64_t[]){1, 2, 5, 5, 4});
    tex_tensor *Wb = tex_placeholder_c(ctx, "Wb", TEX_F32, 6, (int64_t[]){2, 2, 3, 3, 8, 16});
    oc_expect_error(ctx, tex_op_conv2d(ctx, "C", Xb, W, NULL, NULL, NULL, 1, TEX_LAYOUT_NCHWC),
                    TEX_EINVAL,
                    "tex_op_conv2d: the NCHWc layout takes a 5-D x and a 6-D w ('Xb' has 5 dims, "
                    "'W' 4)",
                    NULL);
    oc_expect_error(ctx, tex_op_conv2d(ctx, "C", Xb, Wb, NULL, NULL, NULL, 1, TEX_LAYOUT_NCHWC),
                    TEX_EINVAL, "tex_op_conv2d: Xb's dim 4 (CB = 4) != Wb's dim 4 (CB = 8)", NULL);
    oc_expect_error(ctx, tex_op_conv2d(ctx, "C", Xb, Wb, NULL, NULL, NULL, 2, TEX_LAYOUT_NCHWC),
                    TEX_EINVAL, "tex_op_conv2d: the NCHWc layout takes one group, not 2", NULL);
    oc_expect_error(ctx,
                    tex_op_conv2d_gemm(ctx, "C", Xb, Wb, NULL, NULL, NULL, 1, TEX_LAYOUT_NCHWC),
                    TEX_EINVAL,
                    "tex_op_conv2d_gemm: the NCHWc layout has no implicit-GEMM form "
                    "(tex_op_conv2d takes it)",
                    NULL);
    oc_expect_error(ctx, tex_op_max_pool2d(ctx, "P", X, (int64_t[]){2, 2}, NULL, (int64_t[]){0, 2}),
                    TEX_EINVAL, "tex_op_max_pool2d: padding[1] = 2 >= kernel[1] = 2", NULL);
    oc_expect_error(ctx, tex_op_avg_pool2d(ctx, "P", X3, (int64_t[]){2, 2}, NULL, NULL, 1),
                    TEX_EINVAL, "tex_op_avg_pool2d: x ('X3') has 3 dims, not 4 (NCHW)", NULL);
    oc_expect_error(ctx, tex_op_max_pool2d(ctx, "P", X, (int64_t[]){6, 1}, NULL, NULL), TEX_EINVAL,
                    "tex_op_max_pool2d: the window (6, dilation 1) is larger than H (5)", NULL);
    oc_expect_error(ctx, tex_op_global_avg_pool2d(ctx, "P", I), TEX_ETYPE,
                    "tex_op_global_avg_pool2d: x ('I') has dtype i32", NULL);
    tex_ctx_free(ctx);
}

int main(void)
{
    if (oc_setup(cache_dir) != 0) {
        printf("test_ops_pool_conv: cannot make a temporary cache directory\n");
        return 1;
    }
    TT_RUN(test_errors);
    if (!tex_target_available("cpu")) {
        printf("SKIP ops_pool_conv (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_pool);
    TT_RUN(test_conv);
    TT_RUN(test_conv_blocked);
    TT_RUN(test_symbolic_scheduled);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
