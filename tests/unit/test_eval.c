/*
 * ir/eval.c, ir/eval_expr.c: tex_eval_reference, the oracle.
 *
 * Each workload is compared with a hand-written loop on seeded random
 * non-zero inputs: matmul (prime and 1-sized dimensions), batch matmul,
 * conv2d NCHW with stride 2 and zero padding (a guarded load and a clamped
 * index), softmax and layernorm as chains of computes with unlisted
 * intermediates, every reduction kind with and without a where-condition,
 * every math function, symbolic sizes, wrap-around of every integer dtype,
 * f16/bf16, bool, floor division and casts. Then every validation error,
 * its code and that its message names the tensor, and large computes split
 * over threads (the same bits, the first point's error).
 */
#include "tt.h"
#include "tex/tex.h"
#include "util/half.h"

#include <float.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

static tex_ctx *ctx;
static const DLDevice cpu = {kDLCPU, 0};

/* ------------------------------------------------------------- helpers */

static uint64_t rng = 0x2545f4914f6cdd1dull;

/* Uniform in [-1, 1) with |x| >= 1/16 (non-zero, so a skipped term shows). */
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    double u = (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    return fabs(u) < 0.0625 ? (u < 0 ? -0.5 : 0.5) : u;
}

static int64_t numel(const DLTensor *a)
{
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++)
        n *= a->shape[d];
    return n;
}

static DLTensor *arr(tex_dtype t, int ndim, const int64_t shape[])
{
    return tex_array_new(ndim, shape, t, cpu);
}

static DLTensor *rand_f32(int ndim, const int64_t shape[])
{
    DLTensor *a = arr(TEX_F32, ndim, shape);
    for (int64_t i = 0; i < numel(a); i++)
        ((float *)a->data)[i] = (float)urand();
    return a;
}

static float *F(const DLTensor *a)
{
    return a->data;
}

static tex_expr *I(int64_t v)
{
    return tex_int(ctx, v);
}

static tex_expr *Cf(double v)
{
    return tex_const(ctx, TEX_F32, v);
}

static tex_iter *ax(const char *name, int64_t n)
{
    return tex_axis(ctx, name, I(n));
}

static tex_iter *rax(const char *name, int64_t n)
{
    return tex_reduce_axis(ctx, name, I(n));
}

#define V(iter) tex_iv(iter)

static tex_tensor *ph(const char *name, tex_dtype t, int ndim, const int64_t shape[])
{
    return tex_placeholder_c(ctx, name, t, ndim, shape);
}

static tex_tensor *compute1(const char *name, tex_iter *i, tex_expr *body)
{
    return tex_compute(ctx, name, 1, &i, body);
}

static tex_tensor *compute2(const char *name, tex_iter *i, tex_iter *j, tex_expr *body)
{
    return tex_compute(ctx, name, 2, (tex_iter *[]){i, j}, body);
}

static int eval(int n, tex_tensor *const ts[], DLTensor *const as[])
{
    tex_clear_error(ctx);
    return tex_eval_reference(ctx, n, ts, as);
}

static bool msg_has(const char *s)
{
    return strstr(tex_errmsg(ctx), s) != NULL;
}

static void free_all(int n, DLTensor *const as[])
{
    for (int i = 0; i < n; i++)
        tex_array_free(as[i]);
}

static void begin(void)
{
    ctx = tex_ctx_new();
}

static void end(void)
{
    tex_ctx_free(ctx);
    ctx = NULL;
}

/* Counts elements of got that differ from want by more than tol (relative, floor 1). */
static int count_far(const float *got, const double *want, int64_t n, double tol)
{
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double s = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
        if (!(fabs(got[i] - want[i]) <= tol * s)) {
            if (bad < 3)
                printf("  element %lld: got %.9g want %.9g\n", (long long)i, got[i], want[i]);
            bad++;
        }
    }
    return bad;
}

/* -------------------------------------------------------- linear algebra */

static void matmul_case(int64_t M, int64_t N, int64_t K)
{
    begin();
    tex_tensor *A = ph("A", TEX_F32, 2, (int64_t[]){M, K});
    tex_tensor *B = ph("B", TEX_F32, 2, (int64_t[]){K, N});
    tex_iter *i = ax("i", M), *j = ax("j", N), *k = rax("k", K);
    tex_expr *prod = tex_mul(TEX_AT(A, V(i), V(k)), TEX_AT(B, V(k), V(j)));
    tex_tensor *C = compute2("C", i, j, tex_sum(prod, 1, &k));
    TT_CHECK(C != NULL);
    DLTensor *a = rand_f32(2, (int64_t[]){M, K}), *b = rand_f32(2, (int64_t[]){K, N});
    DLTensor *c = arr(TEX_F32, 2, (int64_t[]){M, N});
    TT_EQ_INT(eval(3, (tex_tensor *[]){A, B, C}, (DLTensor *[]){a, b, c}), 0);
    int bad = 0;
    for (int64_t y = 0; y < M; y++)
        for (int64_t x = 0; x < N; x++) {
            float acc = 0; /* the same order and f32 rounding as the evaluator: exact */
            for (int64_t r = 0; r < K; r++)
                acc += F(a)[y * K + r] * F(b)[r * N + x];
            bad += F(c)[y * N + x] != acc;
        }
    TT_EQ_INT(bad, 0);
    free_all(3, (DLTensor *[]){a, b, c});
    end();
}

static void test_matmul(void)
{
    matmul_case(7, 13, 11);
    matmul_case(1, 1, 1);
    matmul_case(1, 5, 3);
    matmul_case(17, 1, 19);
    matmul_case(3, 4, 1);
}

static void test_batch_matmul(void)
{
    begin();
    const int64_t Bt = 3, M = 5, N = 4, K = 7;
    tex_tensor *A = ph("A", TEX_F32, 3, (int64_t[]){Bt, M, K});
    tex_tensor *B = ph("B", TEX_F32, 3, (int64_t[]){Bt, K, N});
    tex_iter *b = ax("b", Bt), *i = ax("i", M), *j = ax("j", N), *k = rax("k", K);
    tex_expr *prod = tex_mul(TEX_AT(A, V(b), V(i), V(k)), TEX_AT(B, V(b), V(k), V(j)));
    tex_tensor *C = tex_compute(ctx, "C", 3, (tex_iter *[]){b, i, j}, tex_sum(prod, 1, &k));
    DLTensor *a = rand_f32(3, (int64_t[]){Bt, M, K}), *bb = rand_f32(3, (int64_t[]){Bt, K, N});
    DLTensor *c = arr(TEX_F32, 3, (int64_t[]){Bt, M, N});
    TT_EQ_INT(eval(3, (tex_tensor *[]){A, B, C}, (DLTensor *[]){a, bb, c}), 0);
    double want[3 * 5 * 4];
    for (int64_t z = 0; z < Bt; z++)
        for (int64_t y = 0; y < M; y++)
            for (int64_t x = 0; x < N; x++) {
                double acc = 0;
                for (int64_t r = 0; r < K; r++)
                    acc += (double)F(a)[(z * M + y) * K + r] * F(bb)[(z * K + r) * N + x];
                want[(z * M + y) * N + x] = acc;
            }
    TT_EQ_INT(count_far(F(c), want, Bt * M * N, 1e-5), 0);
    free_all(3, (DLTensor *[]){a, bb, c});
    end();
}

/* conv2d NCHW, 3x3 kernel, stride 2, zero padding 1. `clamp` reads a clamped
 * index under the guard; otherwise the guard protects the raw index (only
 * the chosen branch of a select is evaluated). */
static void conv2d_case(bool clamp)
{
    begin();
    enum { N = 2, C = 3, H = 7, W = 6, FO = 4, KS = 3, OH = 4, OW = 3 };
    tex_tensor *In = ph("I", TEX_F32, 4, (int64_t[]){N, C, H, W});
    tex_tensor *Wt = ph("W", TEX_F32, 4, (int64_t[]){FO, C, KS, KS});
    tex_iter *n = ax("n", N), *f = ax("f", FO), *oy = ax("oy", OH), *ox = ax("ox", OW);
    tex_iter *c = rax("c", C), *ky = rax("ky", KS), *kx = rax("kx", KS);
    tex_expr *y = tex_sub(tex_add(tex_mul(V(oy), I(2)), V(ky)), I(1));
    tex_expr *x = tex_sub(tex_add(tex_mul(V(ox), I(2)), V(kx)), I(1));
    tex_expr *inb = tex_and(tex_and(tex_ge(y, I(0)), tex_lt(y, I(H))),
                            tex_and(tex_ge(x, I(0)), tex_lt(x, I(W))));
    tex_expr *ry = clamp ? tex_min(tex_max(y, I(0)), I(H - 1)) : y;
    tex_expr *rx = clamp ? tex_min(tex_max(x, I(0)), I(W - 1)) : x;
    tex_expr *val = tex_select(inb, TEX_AT(In, V(n), V(c), ry, rx), Cf(0));
    tex_expr *body = tex_mul(val, TEX_AT(Wt, V(f), V(c), V(ky), V(kx)));
    tex_tensor *O = tex_compute(ctx, "O", 4, (tex_iter *[]){n, f, oy, ox},
                                tex_sum(body, 3, (tex_iter *[]){c, ky, kx}));
    TT_CHECK(O != NULL);
    DLTensor *i = rand_f32(4, (int64_t[]){N, C, H, W}),
             *w = rand_f32(4, (int64_t[]){FO, C, KS, KS});
    DLTensor *o = arr(TEX_F32, 4, (int64_t[]){N, FO, OH, OW});
    TT_EQ_INT(eval(3, (tex_tensor *[]){In, Wt, O}, (DLTensor *[]){i, w, o}), 0);
    static double want[N * FO * OH * OW];
    for (int a = 0; a < N; a++)
        for (int b = 0; b < FO; b++)
            for (int p = 0; p < OH; p++)
                for (int q = 0; q < OW; q++) {
                    double acc = 0;
                    for (int ch = 0; ch < C; ch++)
                        for (int u = 0; u < KS; u++)
                            for (int v = 0; v < KS; v++) {
                                int yy = p * 2 + u - 1, xx = q * 2 + v - 1;
                                if (yy < 0 || yy >= H || xx < 0 || xx >= W)
                                    continue;
                                acc += (double)F(i)[((a * C + ch) * H + yy) * W + xx] *
                                       F(w)[((b * C + ch) * KS + u) * KS + v];
                            }
                    want[((a * FO + b) * OH + p) * OW + q] = acc;
                }
    TT_EQ_INT(count_far(F(o), want, N * FO * OH * OW, 1e-5), 0);
    free_all(3, (DLTensor *[]){i, w, o});
    end();
}

static void test_conv2d_padded_stride2(void)
{
    conv2d_case(false);
    conv2d_case(true);
}

/* softmax over rows as three computes; the max and the sum are unlisted temporaries. */
static void test_softmax(void)
{
    begin();
    enum { R = 5, L = 9 };
    tex_tensor *X = ph("X", TEX_F32, 2, (int64_t[]){R, L});
    tex_iter *i = ax("i", R), *j = ax("j", L), *r1 = rax("r1", L), *r2 = rax("r2", L);
    tex_tensor *mx = compute1("mx", i, tex_reduce_max(TEX_AT(X, V(i), V(r1)), 1, &r1));
    tex_expr *e = tex_exp(tex_sub(TEX_AT(X, V(i), V(r2)), TEX_AT(mx, V(i))));
    tex_tensor *sm = compute1("sm", i, tex_sum(e, 1, &r2));
    tex_expr *y =
        tex_div(tex_exp(tex_sub(TEX_AT(X, V(i), V(j)), TEX_AT(mx, V(i)))), TEX_AT(sm, V(i)));
    tex_tensor *Y = compute2("Y", i, j, y);
    TT_CHECK(Y != NULL);
    DLTensor *x = rand_f32(2, (int64_t[]){R, L}), *out = arr(TEX_F32, 2, (int64_t[]){R, L});
    DLTensor *m = arr(TEX_F32, 1, (int64_t[]){R});
    TT_EQ_INT(eval(2, (tex_tensor *[]){X, Y}, (DLTensor *[]){x, out}), 0);
    double want[R * L], wmax[R];
    for (int a = 0; a < R; a++) {
        double mv = -INFINITY, s = 0;
        for (int b = 0; b < L; b++)
            mv = fmax(mv, F(x)[a * L + b]);
        for (int b = 0; b < L; b++)
            s += exp(F(x)[a * L + b] - mv);
        for (int b = 0; b < L; b++)
            want[a * L + b] = exp(F(x)[a * L + b] - mv) / s;
        wmax[a] = mv;
    }
    TT_EQ_INT(count_far(F(out), want, R * L, 1e-6), 0);
    /* A listed intermediate is written too. */
    memset(out->data, 0, sizeof(float) * R * L);
    TT_EQ_INT(eval(3, (tex_tensor *[]){X, mx, Y}, (DLTensor *[]){x, m, out}), 0);
    TT_EQ_INT(count_far(F(m), wmax, R, 0), 0);
    TT_EQ_INT(count_far(F(out), want, R * L, 1e-6), 0);
    free_all(3, (DLTensor *[]){x, out, m});
    end();
}

static void test_layernorm(void)
{
    begin();
    enum { R = 4, L = 10 };
    const double eps = 1e-5;
    tex_tensor *X = ph("X", TEX_F32, 2, (int64_t[]){R, L});
    tex_tensor *G = ph("gamma", TEX_F32, 1, (int64_t[]){L});
    tex_tensor *Bt = ph("beta", TEX_F32, 1, (int64_t[]){L});
    tex_iter *i = ax("i", R), *j = ax("j", L), *k1 = rax("k1", L), *k2 = rax("k2", L);
    tex_tensor *S = compute1("S", i, tex_sum(TEX_AT(X, V(i), V(k1)), 1, &k1));
    tex_expr *mean = tex_div(TEX_AT(S, V(i)), Cf(L));
    tex_expr *d = tex_sub(TEX_AT(X, V(i), V(k2)), mean);
    tex_tensor *Q = compute1("Q", i, tex_sum(tex_mul(d, d), 1, &k2));
    tex_expr *norm = tex_mul(tex_sub(TEX_AT(X, V(i), V(j)), tex_div(TEX_AT(S, V(i)), Cf(L))),
                             tex_rsqrt(tex_add(tex_div(TEX_AT(Q, V(i)), Cf(L)), Cf(eps))));
    tex_tensor *Y = compute2("Y", i, j, tex_add(tex_mul(norm, TEX_AT(G, V(j))), TEX_AT(Bt, V(j))));
    TT_CHECK(Y != NULL);
    DLTensor *x = rand_f32(2, (int64_t[]){R, L}), *g = rand_f32(1, (int64_t[]){L});
    DLTensor *b = rand_f32(1, (int64_t[]){L}), *y = arr(TEX_F32, 2, (int64_t[]){R, L});
    TT_EQ_INT(eval(4, (tex_tensor *[]){Y, X, G, Bt}, (DLTensor *[]){y, x, g, b}), 0);
    double want[R * L];
    for (int a = 0; a < R; a++) {
        double mu = 0, var = 0;
        for (int c = 0; c < L; c++)
            mu += F(x)[a * L + c] / (double)L;
        for (int c = 0; c < L; c++)
            var += (F(x)[a * L + c] - mu) * (F(x)[a * L + c] - mu) / L;
        for (int c = 0; c < L; c++)
            want[a * L + c] = (F(x)[a * L + c] - mu) / sqrt(var + eps) * F(g)[c] + F(b)[c];
    }
    TT_EQ_INT(count_far(F(y), want, R * L, 1e-4), 0);
    free_all(4, (DLTensor *[]){x, g, b, y});
    end();
}

/* ------------------------------------------------------------ reductions */

typedef tex_expr *(*reducer)(tex_expr *, int, tex_iter *const[]);

/* Reduction op over the columns of a 6x8 i32 matrix, with a where-condition
 * X > 0 when `where`; compared with a wrapping i32 loop. */
static void reduce_i32_case(int op, bool where)
{
    static const reducer fns[4] = {tex_sum, tex_reduce_prod, tex_reduce_max, tex_reduce_min};
    begin();
    enum { R = 6, L = 8 };
    tex_tensor *X = ph("X", TEX_I32, 2, (int64_t[]){R, L});
    tex_iter *i = ax("i", R), *k = rax("k", L);
    tex_expr *red = fns[op](TEX_AT(X, V(i), V(k)), 1, &k);
    if (where)
        red = tex_reduce_where(red, tex_gt(TEX_AT(X, V(i), V(k)), I(0)));
    tex_tensor *Y = compute1("Y", i, red);
    TT_CHECK(Y != NULL);
    DLTensor *x = arr(TEX_I32, 2, (int64_t[]){R, L}), *y = arr(TEX_I32, 1, (int64_t[]){R});
    int32_t *xv = x->data, *yv = y->data;
    for (int n = 0; n < R * L; n++)
        xv[n] = (int32_t)(urand() * 1000);
    xv[5] = -xv[5] > 0 ? xv[5] : -xv[5]; /* row 0 has a negative element */
    for (int c = 0; c < L; c++)
        xv[3 * L + c] = -(c + 1); /* row 3: nothing passes the condition */
    TT_EQ_INT(eval(2, (tex_tensor *[]){X, Y}, (DLTensor *[]){x, y}), 0);
    for (int r = 0; r < R; r++) {
        uint32_t acc = op == 0 ? 0u : op == 1 ? 1u : op == 2 ? 0x80000000u : 0x7fffffffu;
        for (int c = 0; c < L; c++) {
            int32_t v = xv[r * L + c];
            if (where && v <= 0)
                continue;
            if (op == 0)
                acc += (uint32_t)v;
            else if (op == 1)
                acc *= (uint32_t)v; /* wraps: 8 factors up to 1000 overflow i32 */
            else if (op == 2)
                acc = (int32_t)acc < v ? (uint32_t)v : acc;
            else
                acc = (int32_t)acc > v ? (uint32_t)v : acc;
        }
        TT_EQ_INT(yv[r], (int32_t)acc);
    }
    free_all(2, (DLTensor *[]){x, y});
    end();
}

static void test_reductions_i32(void)
{
    for (int op = 0; op < 4; op++) {
        reduce_i32_case(op, false);
        reduce_i32_case(op, true);
    }
}

/* f32 reductions over two reduce axes with a where-condition on an axis. */
static void test_reductions_f32_two_axes_where(void)
{
    static const reducer fns[4] = {tex_sum, tex_reduce_prod, tex_reduce_max, tex_reduce_min};
    for (int op = 0; op < 4; op++) {
        begin();
        enum { R = 3, P = 4, Q = 5 };
        tex_tensor *X = ph("X", TEX_F32, 3, (int64_t[]){R, P, Q});
        tex_iter *i = ax("i", R), *p = rax("p", P), *q = rax("q", Q);
        tex_expr *red = fns[op](TEX_AT(X, V(i), V(p), V(q)), 2, (tex_iter *[]){p, q});
        red = tex_reduce_where(red, tex_ne(tex_floormod(tex_add(V(p), V(q)), I(3)), I(0)));
        tex_tensor *Y = compute1("Y", i, red);
        DLTensor *x = rand_f32(3, (int64_t[]){R, P, Q}), *y = arr(TEX_F32, 1, (int64_t[]){R});
        TT_EQ_INT(eval(2, (tex_tensor *[]){X, Y}, (DLTensor *[]){x, y}), 0);
        double want[R];
        for (int r = 0; r < R; r++) {
            double acc = op == 0 ? 0 : op == 1 ? 1 : op == 2 ? -INFINITY : INFINITY;
            for (int a = 0; a < P; a++)
                for (int b = 0; b < Q; b++) {
                    if ((a + b) % 3 == 0)
                        continue;
                    double v = F(x)[(r * P + a) * Q + b];
                    acc = op == 0   ? acc + v
                          : op == 1 ? acc * v
                          : op == 2 ? fmax(acc, v)
                                    : fmin(acc, v);
                }
            want[r] = acc;
        }
        TT_EQ_INT(count_far(F(y), want, R, 1e-5), 0);
        free_all(2, (DLTensor *[]){x, y});
        end();
    }
}

/* Empty reduce axes and always-false conditions give the identity of the op and dtype. */
static void test_reduction_identities(void)
{
    static const reducer fns[4] = {tex_sum, tex_reduce_prod, tex_reduce_max, tex_reduce_min};
    static const struct {
        tex_dtype t;
        double want[4];
    } cases[] = {
        {TEX_F32, {0, 1, -INFINITY, INFINITY}},
        {TEX_I32, {0, 1, INT32_MIN, INT32_MAX}},
        {TEX_I8, {0, 1, -128, 127}},
        {TEX_U8, {0, 1, 0, 255}},
        {TEX_U16, {0, 1, 0, 65535}},
        {TEX_I64, {0, 1, -9223372036854775808.0, 9223372036854775807.0}},
        {TEX_F64, {0, 1, -INFINITY, INFINITY}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int op = 0; op < 4; op++) {
            begin();
            tex_dtype t = cases[c].t;
            tex_tensor *X = ph("X", t, 1, (int64_t[]){3});
            tex_iter *i = ax("i", 2), *e = rax("e", 0), *k = rax("k", 3);
            tex_tensor *Y0 = compute1("Y0", i, fns[op](TEX_AT(X, V(e)), 1, &e));
            tex_expr *never = tex_reduce_where(fns[op](TEX_AT(X, V(k)), 1, &k), tex_lt(V(k), I(0)));
            tex_tensor *Y1 = compute1("Y1", i, never);
            DLTensor *x = arr(t, 1, (int64_t[]){3}), *y0 = arr(TEX_F64, 1, (int64_t[]){2});
            DLTensor *y1 = arr(TEX_F64, 1, (int64_t[]){2});
            tex_iter *j = ax("j", 2);
            tex_tensor *Z0 = compute1("Z0", j, tex_cast(TEX_F64, TEX_AT(Y0, V(j))));
            tex_tensor *Z1 = compute1("Z1", j, tex_cast(TEX_F64, TEX_AT(Y1, V(j))));
            TT_EQ_INT(eval(3, (tex_tensor *[]){X, Z0, Z1}, (DLTensor *[]){x, y0, y1}), 0);
            double *v0 = y0->data, *v1 = y1->data;
            if (v0[0] != cases[c].want[op] || v1[1] != cases[c].want[op])
                TT_FAILF("%s %d: %g %g, want %g", tex_dtype_name(t), op, v0[0], v1[1],
                         cases[c].want[op]);
            free_all(3, (DLTensor *[]){x, y0, y1});
            end();
        }
}

/* A 0-dimensional compute: the sum of every element. */
static void test_scalar_output(void)
{
    begin();
    tex_tensor *X = ph("X", TEX_F64, 2, (int64_t[]){3, 4});
    tex_iter *a = rax("a", 3), *b = rax("b", 4);
    tex_tensor *S =
        tex_compute(ctx, "S", 0, NULL, tex_sum(TEX_AT(X, V(a), V(b)), 2, (tex_iter *[]){a, b}));
    DLTensor *x = arr(TEX_F64, 2, (int64_t[]){3, 4}), *s = arr(TEX_F64, 0, NULL);
    for (int n = 0; n < 12; n++)
        ((double *)x->data)[n] = n + 1;
    TT_EQ_INT(eval(2, (tex_tensor *[]){X, S}, (DLTensor *[]){x, s}), 0);
    TT_EQ_INT(*(double *)s->data, 78);
    free_all(2, (DLTensor *[]){x, s});
    end();
}

/* ------------------------------------------------------------- elementwise */

typedef tex_expr *(*unary_fn)(tex_expr *);

static void test_math_functions_f32(void)
{
    static const struct {
        const char *name;
        unary_fn fn;
        bool positive; /* domain: |x| + 0.25 */
        double (*ref)(double);
    } fns[] = {
        {"exp", tex_exp, false, exp},          {"log", tex_log, true, log},
        {"sqrt", tex_sqrt, true, sqrt},        {"tanh", tex_tanh, false, tanh},
        {"erf", tex_erf, false, erf},          {"abs", tex_abs, false, fabs},
        {"floor", tex_floor, false, floor},    {"ceil", tex_ceil, false, ceil},
        {"round", tex_round, false, round},    {"sin", tex_sin, false, sin},
        {"cos", tex_cos, false, cos},          {"rsqrt", tex_rsqrt, true, NULL},
        {"sigmoid", tex_sigmoid, false, NULL},
    };
    enum { L = 64 };
    for (size_t f = 0; f < sizeof fns / sizeof *fns; f++) {
        begin();
        tex_tensor *X = ph("X", TEX_F32, 1, (int64_t[]){L});
        tex_iter *i = ax("i", L);
        tex_tensor *Y = compute1("Y", i, fns[f].fn(TEX_AT(X, V(i))));
        DLTensor *x = arr(TEX_F32, 1, (int64_t[]){L}), *y = arr(TEX_F32, 1, (int64_t[]){L});
        for (int n = 0; n < L; n++) {
            double v = urand() * 4;
            F(x)[n] = (float)(fns[f].positive ? fabs(v) + 0.25 : v);
        }
        F(x)[0] = 2.5f; /* round: half away from zero */
        F(x)[1] = fns[f].positive ? 0.5f : -2.5f;
        TT_EQ_INT(eval(2, (tex_tensor *[]){X, Y}, (DLTensor *[]){x, y}), 0);
        int bad = 0;
        for (int n = 0; n < L; n++) {
            double v = F(x)[n];
            double r = fns[f].ref ? fns[f].ref(v) : f == 11 ? 1.0 / sqrt(v) : 1.0 / (1.0 + exp(-v));
            bad += F(y)[n] != (float)r;
        }
        if (bad)
            TT_FAILF("%s: %d elements differ", fns[f].name, bad);
        free_all(2, (DLTensor *[]){x, y});
        end();
    }
}

/* pow, fma, and a chain rounded to f32 after each step; f64 exp exactly. */
static void test_elementwise_chain(void)
{
    begin();
    enum { L = 50 };
    tex_tensor *X = ph("X", TEX_F32, 1, (int64_t[]){L});
    tex_tensor *D = ph("D", TEX_F64, 1, (int64_t[]){L});
    tex_iter *i = ax("i", L);
    tex_expr *x = TEX_AT(X, V(i));
    tex_expr *chain = tex_sub(tex_add(tex_mul(tex_tanh(x), I(2)), tex_sigmoid(x)), tex_abs(x));
    tex_tensor *Y = compute1("Y", i, chain);
    tex_tensor *P = compute1("P", i, tex_pow(tex_abs(x), x));
    tex_tensor *M = compute1("M", i, tex_fma(x, x, Cf(0.5)));
    tex_tensor *E = compute1("E", i, tex_exp(TEX_AT(D, V(i))));
    tex_tensor *Mn = compute1("Mn", i, tex_max(tex_min(x, Cf(0.25)), Cf(-0.25)));
    DLTensor *xa = rand_f32(1, (int64_t[]){L}), *da = arr(TEX_F64, 1, (int64_t[]){L});
    for (int n = 0; n < L; n++)
        ((double *)da->data)[n] = urand() * 3;
    DLTensor *ya = arr(TEX_F32, 1, (int64_t[]){L}), *pa = arr(TEX_F32, 1, (int64_t[]){L});
    DLTensor *ma = arr(TEX_F32, 1, (int64_t[]){L}), *ea = arr(TEX_F64, 1, (int64_t[]){L});
    DLTensor *mna = arr(TEX_F32, 1, (int64_t[]){L});
    TT_EQ_INT(eval(7, (tex_tensor *[]){X, D, Y, P, M, E, Mn},
                   (DLTensor *[]){xa, da, ya, pa, ma, ea, mna}),
              0);
    int bad = 0;
    for (int n = 0; n < L; n++) {
        float v = F(xa)[n];
        float t = (float)tanh(v) * 2.0f;
        t = t + (float)(1.0 / (1.0 + exp(-(double)v)));
        t = t - fabsf(v);
        bad += F(ya)[n] != t;
        bad += F(pa)[n] != (float)pow(fabsf(v), v);
        bad += F(ma)[n] != (float)fma(v, v, 0.5);
        bad += ((double *)ea->data)[n] != exp(((double *)da->data)[n]);
        bad += F(mna)[n] != fmaxf(fminf(v, 0.25f), -0.25f);
    }
    TT_EQ_INT(bad, 0);
    free_all(7, (DLTensor *[]){xa, da, ya, pa, ma, ea, mna});
    end();
}

/* ------------------------------------------------------------ symbolic sizes */

static void symbolic_case(tex_tensor *A, tex_tensor *B, tex_tensor *C, int64_t nv, int64_t mv)
{
    DLTensor *a = rand_f32(2, (int64_t[]){nv, mv});
    DLTensor *b = arr(TEX_F32, 2, (int64_t[]){nv, mv}), *c = arr(TEX_F32, 1, (int64_t[]){mv});
    TT_EQ_INT(eval(3, (tex_tensor *[]){A, B, C}, (DLTensor *[]){a, b, c}), 0);
    int bad = 0;
    for (int64_t y = 0; y < nv; y++)
        for (int64_t x = 0; x < mv; x++)
            bad += F(b)[y * mv + x] != F(a)[y * mv + x] * 2.0f + 1.0f;
    for (int64_t x = 0; x < mv; x++) {
        float s = 0;
        for (int64_t y = 0; y < nv; y++)
            s += F(a)[y * mv + x];
        bad += F(c)[x] != s;
    }
    TT_EQ_INT(bad, 0);
    free_all(3, (DLTensor *[]){a, b, c});
}

static void test_symbolic_sizes(void)
{
    begin();
    tex_expr *n = tex_var(ctx, "n", TEX_I64), *m = tex_var(ctx, "m", TEX_I32);
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_F32, 2, (tex_expr *[]){n, m});
    tex_iter *i = tex_axis(ctx, "i", n), *j = tex_axis(ctx, "j", m);
    tex_iter *r = tex_reduce_axis(ctx, "r", n);
    tex_tensor *T = compute2("T", i, j, tex_mul(TEX_AT(A, V(i), V(j)), Cf(2)));
    tex_tensor *B = compute2("B", i, j, tex_add(TEX_AT(T, V(i), V(j)), Cf(1))); /* T: temporary */
    tex_tensor *C = compute1("C", j, tex_sum(TEX_AT(A, V(r), V(j)), 1, &r));
    TT_CHECK(B && C);
    symbolic_case(A, B, C, 3, 5);
    symbolic_case(A, B, C, 7, 2);
    symbolic_case(A, B, C, 1, 1);
    symbolic_case(A, B, C, 4, 0); /* empty: C holds nothing, B nothing */
    end();
}

/* Shapes n + 2 and 2 * n, checked once n is bound from P. */
static void test_symbolic_shape_expressions(void)
{
    begin();
    tex_expr *n = tex_var(ctx, "n", TEX_I32);
    tex_tensor *P = tex_placeholder(ctx, "P", TEX_I32, 1, &n);
    tex_iter *q = tex_axis(ctx, "q", tex_add(n, I(2))), *h = tex_axis(ctx, "h", tex_mul(I(2), n));
    tex_expr *inside = tex_and(tex_ge(V(q), I(1)), tex_le(V(q), n));
    tex_tensor *Q = compute1("Q", q, tex_select(inside, TEX_AT(P, tex_sub(V(q), I(1))), I(0)));
    tex_tensor *R = compute1("R", h, TEX_AT(P, tex_floordiv(V(h), I(2))));
    DLTensor *p = arr(TEX_I32, 1, (int64_t[]){4}), *qa = arr(TEX_I32, 1, (int64_t[]){6});
    DLTensor *ra = arr(TEX_I32, 1, (int64_t[]){8}), *bad = arr(TEX_I32, 1, (int64_t[]){7});
    for (int k = 0; k < 4; k++)
        ((int32_t *)p->data)[k] = 10 * (k + 1);
    TT_EQ_INT(eval(3, (tex_tensor *[]){P, Q, R}, (DLTensor *[]){p, qa, ra}), 0);
    static const int32_t wq[6] = {0, 10, 20, 30, 40, 0}, wr[8] = {10, 10, 20, 20, 30, 30, 40, 40};
    TT_EQ_INT(memcmp(qa->data, wq, sizeof wq), 0);
    TT_EQ_INT(memcmp(ra->data, wr, sizeof wr), 0);
    /* Q's array has 7 elements, n + 2 = 6: an error naming Q, the dimension and both extents. */
    TT_EQ_INT(eval(2, (tex_tensor *[]){P, Q}, (DLTensor *[]){p, bad}), TEX_EINVAL);
    TT_CHECK(msg_has("'Q'") && msg_has("dimension 0") && msg_has("6") && msg_has("7"));
    /* Listing Q without P: n binds only through P, which is missing anyway. */
    TT_EQ_INT(eval(1, (tex_tensor *[]){Q}, (DLTensor *[]){qa}), TEX_EINVAL);
    TT_CHECK(msg_has("'P'"));
    free_all(4, (DLTensor *[]){p, qa, ra, bad});
    end();
}

static void test_symbolic_errors(void)
{
    begin();
    tex_expr *n = tex_var(ctx, "n", TEX_I64), *k = tex_var(ctx, "k", TEX_I32);
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_F32, 1, &n);
    tex_tensor *B = tex_placeholder(ctx, "B", TEX_F32, 1, &n);
    tex_iter *i = tex_axis(ctx, "i", n);
    tex_tensor *C = compute1("C", i, tex_add(TEX_AT(A, V(i)), TEX_AT(B, V(i))));
    DLTensor *a3 = arr(TEX_F32, 1, (int64_t[]){3}), *a4 = arr(TEX_F32, 1, (int64_t[]){4});
    DLTensor *c3 = arr(TEX_F32, 1, (int64_t[]){3});
    /* n is 3 from A but 4 from B. */
    TT_EQ_INT(eval(3, (tex_tensor *[]){A, B, C}, (DLTensor *[]){a3, a4, c3}), TEX_EINVAL);
    TT_CHECK(msg_has("'B'") && msg_has("'n'") && msg_has("3") && msg_has("4"));
    /* k appears only in a body: it cannot be bound. */
    tex_tensor *D = compute1("D", i, tex_mul(TEX_AT(A, V(i)), tex_cast(TEX_F32, k)));
    TT_EQ_INT(eval(2, (tex_tensor *[]){A, D}, (DLTensor *[]){a3, c3}), TEX_EINVAL);
    TT_CHECK(msg_has("'k'") && msg_has("'D'"));
    /* m appears only inside a shape expression (2 * m): it cannot be bound either. */
    tex_expr *m = tex_var(ctx, "m", TEX_I64);
    tex_tensor *E = tex_placeholder(ctx, "E", TEX_F32, 1, (tex_expr *[]){tex_mul(m, I(2))});
    tex_iter *e = tex_axis(ctx, "e", tex_mul(m, I(2)));
    tex_tensor *G = compute1("G", e, TEX_AT(E, V(e)));
    DLTensor *e4 = arr(TEX_F32, 1, (int64_t[]){4}), *g4 = arr(TEX_F32, 1, (int64_t[]){4});
    TT_EQ_INT(eval(2, (tex_tensor *[]){E, G}, (DLTensor *[]){e4, g4}), TEX_EINVAL);
    TT_CHECK(msg_has("'m'"));
    free_all(5, (DLTensor *[]){a3, a4, c3, e4, g4});
    end();
}

/* ---------------------------------------------------------------- dtypes */

static void set_int(DLTensor *a, int64_t i, int64_t v, tex_dtype t)
{
    switch (tex_dtype_bytes(t)) {
    case 1:
        ((uint8_t *)a->data)[i] = (uint8_t)v;
        break;
    case 2:
        ((uint16_t *)a->data)[i] = (uint16_t)v;
        break;
    case 4:
        ((uint32_t *)a->data)[i] = (uint32_t)v;
        break;
    default:
        ((uint64_t *)a->data)[i] = (uint64_t)v;
        break;
    }
}

static int64_t get_int(const DLTensor *a, int64_t i, tex_dtype t)
{
    bool sg = t == TEX_I8 || t == TEX_I16 || t == TEX_I32 || t == TEX_I64;
    switch (tex_dtype_bytes(t)) {
    case 1:
        return sg ? ((int8_t *)a->data)[i] : ((uint8_t *)a->data)[i];
    case 2:
        return sg ? ((int16_t *)a->data)[i] : ((uint16_t *)a->data)[i];
    case 4:
        return sg ? (int64_t)((int32_t *)a->data)[i] : (int64_t)((uint32_t *)a->data)[i];
    default:
        return ((int64_t *)a->data)[i];
    }
}

/* X + X, X * X and 0 - X of one value near each integer type's limit, with
 * the wrapped results written out by hand. */
static void test_integer_wraparound(void)
{
    static const struct {
        tex_dtype t;
        int64_t x, sum, prod, neg;
    } cases[] = {
        {TEX_I8, 100, -56, 16, -100},
        {TEX_I8, -128, 0, 0, -128},
        {TEX_U8, 200, 144, 64, 56},
        {TEX_I16, 30000, -5536, -5888, -30000},
        {TEX_U16, 60000, 54464, 41984, 5536},
        {TEX_I32, INT32_MAX, -2, 1, -INT32_MAX},
        {TEX_U32, 4000000000, 3705032704, 1983905792, 294967296},
        {TEX_I64, INT64_MAX, -2, 1, -INT64_MAX},
        {TEX_I64, INT64_MIN, 0, 0, INT64_MIN},
        {TEX_U64, -1 /* 2^64 - 1 */, -2, 1, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        begin();
        tex_dtype t = cases[c].t;
        tex_tensor *X = ph("X", t, 1, (int64_t[]){1});
        tex_iter *i = ax("i", 1);
        tex_expr *x = TEX_AT(X, V(i));
        tex_tensor *S = compute1("S", i, tex_add(x, x));
        tex_tensor *P = compute1("P", i, tex_mul(x, x));
        tex_tensor *N = compute1("N", i, tex_neg(x));
        DLTensor *xa = arr(t, 1, (int64_t[]){1}), *sa = arr(t, 1, (int64_t[]){1});
        DLTensor *pa = arr(t, 1, (int64_t[]){1}), *na = arr(t, 1, (int64_t[]){1});
        set_int(xa, 0, cases[c].x, t);
        TT_EQ_INT(eval(4, (tex_tensor *[]){X, S, P, N}, (DLTensor *[]){xa, sa, pa, na}), 0);
        if (get_int(sa, 0, t) != cases[c].sum || get_int(pa, 0, t) != cases[c].prod ||
            get_int(na, 0, t) != cases[c].neg)
            TT_FAILF("%s %lld: sum %lld prod %lld neg %lld", tex_dtype_name(t),
                     (long long)cases[c].x, (long long)get_int(sa, 0, t),
                     (long long)get_int(pa, 0, t), (long long)get_int(na, 0, t));
        free_all(4, (DLTensor *[]){xa, sa, pa, na});
        end();
    }
}

/* u64 compares, divides and converts as unsigned; u32 with i32 promotes to u32. */
static void test_unsigned_semantics(void)
{
    begin();
    tex_tensor *X = ph("X", TEX_U64, 1, (int64_t[]){1});
    tex_iter *i = ax("i", 1);
    tex_expr *x = TEX_AT(X, V(i));
    tex_tensor *G = compute1("G", i, tex_gt(x, tex_const(ctx, TEX_U64, 4611686018427387904.0)));
    tex_tensor *Dv = compute1("Dv", i, tex_floordiv(x, tex_const(ctx, TEX_U64, 3)));
    tex_tensor *Md = compute1("Md", i, tex_floormod(x, tex_const(ctx, TEX_U64, 10)));
    tex_tensor *Fl = compute1("Fl", i, tex_cast(TEX_F64, x));
    tex_tensor *Mx = compute1("Mx", i, tex_max(x, tex_const(ctx, TEX_U64, 1)));
    DLTensor *xa = arr(TEX_U64, 1, (int64_t[]){1}), *ga = arr(TEX_BOOL, 1, (int64_t[]){1});
    DLTensor *da = arr(TEX_U64, 1, (int64_t[]){1}), *ma = arr(TEX_U64, 1, (int64_t[]){1});
    DLTensor *fa = arr(TEX_F64, 1, (int64_t[]){1}), *mxa = arr(TEX_U64, 1, (int64_t[]){1});
    *(uint64_t *)xa->data = 0x8000000000000005ull;
    TT_EQ_INT(
        eval(6, (tex_tensor *[]){X, G, Dv, Md, Fl, Mx}, (DLTensor *[]){xa, ga, da, ma, fa, mxa}),
        0);
    TT_EQ_INT(*(uint8_t *)ga->data, 1);
    TT_CHECK(*(uint64_t *)da->data == 0x8000000000000005ull / 3);
    TT_CHECK(*(uint64_t *)ma->data == 0x8000000000000005ull % 10);
    TT_CHECK(*(double *)fa->data == 9223372036854775808.0);
    TT_CHECK(*(uint64_t *)mxa->data == 0x8000000000000005ull);
    free_all(6, (DLTensor *[]){xa, ga, da, ma, fa, mxa});
    end();
}

/* f16 and bf16: every operation rounds to the narrow type. */
static void half_case(tex_dtype t)
{
    begin();
    enum { L = 40 };
    uint16_t (*narrow)(float) = t == TEX_F16 ? texi_f16_from_f32 : texi_bf16_from_f32;
    float (*widen)(uint16_t) = t == TEX_F16 ? texi_f16_to_f32 : texi_bf16_to_f32;
    tex_tensor *X = ph("X", t, 1, (int64_t[]){L});
    tex_iter *i = ax("i", L), *k = rax("k", L);
    tex_expr *x = TEX_AT(X, V(i));
    tex_tensor *Y =
        compute1("Y", i, tex_add(tex_mul(x, tex_const(ctx, t, 3)), tex_const(ctx, t, 1)));
    tex_tensor *E = compute1("E", i, tex_exp(x));
    tex_tensor *W = compute1("W", i, tex_add(x, tex_const(ctx, TEX_F32, 1.0 / 3)));
    tex_tensor *S = tex_compute(ctx, "S", 0, NULL, tex_sum(TEX_AT(X, V(k)), 1, &k));
    DLTensor *xa = arr(t, 1, (int64_t[]){L}), *ya = arr(t, 1, (int64_t[]){L});
    DLTensor *ea = arr(t, 1, (int64_t[]){L}), *wa = arr(TEX_F32, 1, (int64_t[]){L});
    DLTensor *sa = arr(t, 0, NULL);
    uint16_t *xv = xa->data, *yv = ya->data, *ev = ea->data;
    for (int n = 0; n < L; n++)
        xv[n] = narrow((float)(urand() * 8));
    TT_EQ_INT(eval(5, (tex_tensor *[]){X, Y, E, W, S}, (DLTensor *[]){xa, ya, ea, wa, sa}), 0);
    int bad = 0;
    float acc = 0;
    for (int n = 0; n < L; n++) {
        float v = widen(xv[n]);
        float y = widen(narrow(widen(narrow(v * 3.0f)) + 1.0f));
        bad += yv[n] != narrow(y);
        bad += ev[n] != narrow((float)exp((double)v));
        bad += F(wa)[n] != v + (float)(1.0 / 3); /* f16/bf16 with f32: f32 */
        acc = widen(narrow(acc + v));
    }
    bad += *(uint16_t *)sa->data != narrow(acc);
    if (bad)
        TT_FAILF("%s: %d differences", tex_dtype_name(t), bad);
    free_all(5, (DLTensor *[]){xa, ya, ea, wa, sa});
    end();
}

static void test_half_types(void)
{
    half_case(TEX_F16);
    half_case(TEX_BF16);
}

static void test_bool(void)
{
    begin();
    tex_tensor *X = ph("X", TEX_BOOL, 1, (int64_t[]){4}), *Y = ph("Y", TEX_BOOL, 1, (int64_t[]){4});
    tex_tensor *Fv = ph("F", TEX_F32, 1, (int64_t[]){4});
    tex_iter *i = ax("i", 4);
    tex_expr *x = TEX_AT(X, V(i)), *y = TEX_AT(Y, V(i)), *f = TEX_AT(Fv, V(i));
    tex_tensor *A = compute1("A", i, tex_and(x, tex_not(y)));
    tex_tensor *O = compute1("O", i, tex_or(x, y));
    tex_tensor *N = compute1("N", i, tex_add(tex_cast(TEX_I32, x), tex_cast(TEX_I32, y)));
    tex_tensor *G = compute1("G", i, tex_gt(f, Cf(0)));
    tex_tensor *Bc = compute1("Bc", i, tex_cast(TEX_BOOL, f));
    tex_tensor *Mx = compute1("Mx", i, tex_max(x, y)); /* bool with bool: still bool */
    DLTensor *xa = arr(TEX_BOOL, 1, (int64_t[]){4}), *ya = arr(TEX_BOOL, 1, (int64_t[]){4});
    DLTensor *fa = arr(TEX_F32, 1, (int64_t[]){4});
    DLTensor *out[6];
    for (int k = 0; k < 6; k++)
        out[k] = arr(k == 2 ? TEX_I32 : TEX_BOOL, 1, (int64_t[]){4});
    static const uint8_t xs[4] = {0, 1, 0, 7}, ys[4] = {0, 0, 1, 1}; /* 7: a non-canonical true */
    static const float fs[4] = {-1.5f, 0.0f, 0.25f, -0.0f};
    memcpy(xa->data, xs, 4);
    memcpy(ya->data, ys, 4);
    memcpy(fa->data, fs, sizeof fs);
    TT_EQ_INT(eval(9, (tex_tensor *[]){X, Y, Fv, A, O, N, G, Bc, Mx},
                   (DLTensor *[]){xa, ya, fa, out[0], out[1], out[2], out[3], out[4], out[5]}),
              0);
    static const uint8_t wa[4] = {0, 1, 0, 0}, wo[4] = {0, 1, 1, 1}, wg[4] = {0, 0, 1, 0},
                         wb[4] = {1, 0, 1, 0}, wm[4] = {0, 1, 1, 1};
    static const int32_t wn[4] = {0, 1, 1, 2};
    TT_EQ_INT(memcmp(out[0]->data, wa, 4), 0);
    TT_EQ_INT(memcmp(out[1]->data, wo, 4), 0);
    TT_EQ_INT(memcmp(out[2]->data, wn, sizeof wn), 0);
    TT_EQ_INT(memcmp(out[3]->data, wg, 4), 0);
    TT_EQ_INT(memcmp(out[4]->data, wb, 4), 0);
    TT_EQ_INT(memcmp(out[5]->data, wm, 4), 0);
    free_all(3, (DLTensor *[]){xa, ya, fa});
    free_all(6, out);
    end();
}

/* ------------------------------------------------------ division and casts */

static void test_floor_division(void)
{
    begin();
    tex_tensor *X = ph("X", TEX_I32, 1, (int64_t[]){6}), *D = ph("D", TEX_I32, 1, (int64_t[]){6});
    tex_iter *i = ax("i", 6);
    tex_expr *x = TEX_AT(X, V(i)), *d = TEX_AT(D, V(i));
    tex_tensor *Q = compute1("Q", i, tex_floordiv(x, d));
    tex_tensor *R = compute1("R", i, tex_floormod(x, d));
    tex_tensor *Q2 = compute1("Q2", i, tex_div(x, d)); /* integer tex_div is floordiv */
    DLTensor *xa = arr(TEX_I32, 1, (int64_t[]){6}), *da = arr(TEX_I32, 1, (int64_t[]){6});
    DLTensor *qa = arr(TEX_I32, 1, (int64_t[]){6}), *ra = arr(TEX_I32, 1, (int64_t[]){6});
    DLTensor *q2a = arr(TEX_I32, 1, (int64_t[]){6});
    static const int32_t xs[6] = {-7, 7, -7, 7, -6, INT32_MIN}, ds[6] = {2, 2, -2, -2, 3, -1};
    static const int32_t wq[6] = {-4, 3, 3, -4, -2, INT32_MIN}, wr[6] = {1, 1, -1, -1, 0, 0};
    memcpy(xa->data, xs, sizeof xs);
    memcpy(da->data, ds, sizeof ds);
    TT_EQ_INT(eval(5, (tex_tensor *[]){X, D, Q, R, Q2}, (DLTensor *[]){xa, da, qa, ra, q2a}), 0);
    TT_EQ_INT(memcmp(qa->data, wq, sizeof wq), 0);
    TT_EQ_INT(memcmp(ra->data, wr, sizeof wr), 0);
    TT_EQ_INT(memcmp(q2a->data, wq, sizeof wq), 0);
    /* A zero divisor is an error naming the tensor, not a crash. */
    ((int32_t *)da->data)[3] = 0;
    TT_EQ_INT(eval(3, (tex_tensor *[]){X, D, R}, (DLTensor *[]){xa, da, ra}), TEX_EINVAL);
    TT_CHECK(msg_has("'R'") && msg_has("by zero"));
    free_all(5, (DLTensor *[]){xa, da, qa, ra, q2a});
    end();
}

static void test_floor_division_i64_and_float(void)
{
    begin();
    tex_tensor *X = ph("X", TEX_I64, 1, (int64_t[]){1}), *Fx = ph("F", TEX_F32, 1, (int64_t[]){1});
    tex_iter *i = ax("i", 1);
    tex_expr *x = TEX_AT(X, V(i)), *f = TEX_AT(Fx, V(i));
    tex_expr *m1 = tex_const(ctx, TEX_I64, -1);
    tex_tensor *Q = compute1("Q", i, tex_floordiv(x, m1));
    tex_tensor *R = compute1("R", i, tex_floormod(x, m1));
    tex_tensor *FQ = compute1("FQ", i, tex_floordiv(f, Cf(2)));
    tex_tensor *FR = compute1("FR", i, tex_floormod(f, Cf(2)));
    DLTensor *xa = arr(TEX_I64, 1, (int64_t[]){1}), *fa = arr(TEX_F32, 1, (int64_t[]){1});
    DLTensor *qa = arr(TEX_I64, 1, (int64_t[]){1}), *ra = arr(TEX_I64, 1, (int64_t[]){1});
    DLTensor *fqa = arr(TEX_F32, 1, (int64_t[]){1}), *fra = arr(TEX_F32, 1, (int64_t[]){1});
    *(int64_t *)xa->data = INT64_MIN;
    *(float *)fa->data = -7.5f;
    TT_EQ_INT(
        eval(6, (tex_tensor *[]){X, Fx, Q, R, FQ, FR}, (DLTensor *[]){xa, fa, qa, ra, fqa, fra}),
        0);
    TT_CHECK(*(int64_t *)qa->data == INT64_MIN); /* wraps, no trap */
    TT_EQ_INT(*(int64_t *)ra->data, 0);
    TT_CHECK(*(float *)fqa->data == -4.0f);
    TT_CHECK(*(float *)fra->data == 0.5f);
    free_all(6, (DLTensor *[]){xa, fa, qa, ra, fqa, fra});
    end();
}

static void test_casts(void)
{
    begin();
    enum { L = 6 };
    tex_tensor *X = ph("X", TEX_F32, 1, (int64_t[]){L}), *K = ph("K", TEX_I32, 1, (int64_t[]){L});
    tex_iter *i = ax("i", L);
    tex_expr *x = TEX_AT(X, V(i)), *k = TEX_AT(K, V(i));
    tex_tensor *T = compute1("T", i, tex_cast(TEX_I32, x));
    tex_tensor *Rn = compute1("Rn", i, tex_cast(TEX_I32, tex_round(x)));
    tex_tensor *U = compute1("U", i, tex_cast(TEX_U8, k));
    tex_tensor *S = compute1("S", i, tex_cast(TEX_I8, tex_cast(TEX_U8, k)));
    tex_tensor *H = compute1("H", i, tex_cast(TEX_F16, k));
    tex_tensor *W = compute1("W", i, tex_cast(TEX_U16, tex_cast(TEX_I8, k)));
    DLTensor *xa = arr(TEX_F32, 1, (int64_t[]){L}), *ka = arr(TEX_I32, 1, (int64_t[]){L});
    DLTensor *ta = arr(TEX_I32, 1, (int64_t[]){L}), *rna = arr(TEX_I32, 1, (int64_t[]){L});
    DLTensor *ua = arr(TEX_U8, 1, (int64_t[]){L}), *sa = arr(TEX_I8, 1, (int64_t[]){L});
    DLTensor *ha = arr(TEX_F16, 1, (int64_t[]){L}), *wa = arr(TEX_U16, 1, (int64_t[]){L});
    static const float xs[L] = {-2.7f, 2.7f, 2.5f, -2.5f, 0.5f, NAN};
    static const int32_t ks[L] = {257, 255, -1, 2049, 2051, 300};
    memcpy(xa->data, xs, sizeof xs);
    memcpy(ka->data, ks, sizeof ks);
    TT_EQ_INT(eval(8, (tex_tensor *[]){X, K, T, Rn, U, S, H, W},
                   (DLTensor *[]){xa, ka, ta, rna, ua, sa, ha, wa}),
              0);
    static const int32_t wt[L] = {-2, 2, 2, -2, 0, 0}, wrn[L] = {-3, 3, 3, -3, 1, 0};
    static const uint8_t wu[L] = {1, 255, 255, 1, 3, 44};
    static const int8_t ws[L] = {1, -1, -1, 1, 3, 44};
    static const uint16_t wh[L] = {0x5c04, 0x5bf8, 0xbc00, 0x6800, 0x6802, 0x5cb0};
    static const uint16_t ww[L] = {1, 65535, 65535, 1, 3, 44};
    TT_EQ_INT(memcmp(ta->data, wt, sizeof wt), 0);
    TT_EQ_INT(memcmp(rna->data, wrn, sizeof wrn), 0);
    TT_EQ_INT(memcmp(ua->data, wu, sizeof wu), 0);
    TT_EQ_INT(memcmp(sa->data, ws, sizeof ws), 0);
    TT_EQ_INT(memcmp(wa->data, ww, sizeof ww), 0);
    for (int n = 0; n < L; n++)
        if (((uint16_t *)ha->data)[n] != wh[n])
            TT_FAILF("f16 of %d: 0x%04x, want 0x%04x", ks[n], ((uint16_t *)ha->data)[n], wh[n]);
    free_all(8, (DLTensor *[]){xa, ka, ta, rna, ua, sa, ha, wa});
    end();
}

/* ------------------------------------------------------------- validation */

static void test_argument_errors(void)
{
    begin();
    tex_tensor *A = ph("A", TEX_F32, 2, (int64_t[]){2, 3});
    tex_iter *i = ax("i", 2), *j = ax("j", 3);
    tex_tensor *C = compute2("C", i, j, tex_mul(TEX_AT(A, V(i), V(j)), Cf(2)));
    DLTensor *a = rand_f32(2, (int64_t[]){2, 3}), *c = arr(TEX_F32, 2, (int64_t[]){2, 3});
    DLTensor *ai = arr(TEX_I32, 2, (int64_t[]){2, 3}), *a1 = arr(TEX_F32, 1, (int64_t[]){6});
    DLTensor *a32 = arr(TEX_F32, 2, (int64_t[]){3, 2});
    tex_tensor *ts[2] = {A, C};

    TT_EQ_INT(tex_eval_reference(NULL, 2, ts, (DLTensor *[]){a, c}), TEX_EMISUSE);
    TT_EQ_INT(eval(0, ts, (DLTensor *[]){a, c}), TEX_EINVAL);
    TT_EQ_INT(eval(2, NULL, (DLTensor *[]){a, c}), TEX_EMISUSE);
    TT_EQ_INT(eval(2, ts, NULL), TEX_EMISUSE);
    TT_EQ_INT(eval(2, (tex_tensor *[]){A, NULL}, (DLTensor *[]){a, c}), TEX_EMISUSE);
    TT_EQ_INT(eval(2, ts, (DLTensor *[]){a, NULL}), TEX_EMISUSE);
    TT_CHECK(msg_has("'C'"));
    TT_EQ_INT(eval(2, ts, (DLTensor *[]){ai, c}), TEX_ETYPE);
    TT_CHECK(msg_has("'A'") && msg_has("f32") && msg_has("i32"));
    TT_EQ_INT(eval(2, ts, (DLTensor *[]){a1, c}), TEX_EINVAL);
    TT_CHECK(msg_has("'A'") && msg_has("dimensions"));
    TT_EQ_INT(eval(2, ts, (DLTensor *[]){a, a32}), TEX_EINVAL);
    TT_CHECK(msg_has("'C'") && msg_has("dimension 0") && msg_has("expected extent 2, got 3"));
    TT_EQ_INT(eval(3, (tex_tensor *[]){A, C, A}, (DLTensor *[]){a, c, a}), TEX_EINVAL);
    TT_CHECK(msg_has("'A'") && msg_has("twice"));
    /* The missing placeholder is named, with its reader. */
    TT_EQ_INT(eval(1, &C, &c), TEX_EINVAL);
    TT_CHECK(msg_has("'A'") && msg_has("'C'"));
    /* Device, strides. */
    DLTensor dev = *a;
    dev.device.device_type = kDLCUDA;
    TT_EQ_INT(eval(2, ts, (DLTensor *[]){&dev, c}), TEX_EINVAL);
    TT_CHECK(msg_has("'A'"));
    int64_t colmajor[2] = {1, 2}, compact[2] = {3, 1};
    DLTensor strided = *a;
    strided.strides = colmajor;
    TT_EQ_INT(eval(2, ts, (DLTensor *[]){&strided, c}), TEX_EINVAL);
    TT_CHECK(msg_has("'A'") && msg_has("strides"));
    strided.strides = compact;
    TT_EQ_INT(eval(2, ts, (DLTensor *[]){&strided, c}), 0);
    /* Absurd extents and a NULL shape are refused without overflow or a crash. */
    int64_t huge[2] = {INT64_MAX, 3}, huge_strides[2] = {3, 1};
    strided.shape = huge;
    strided.strides = huge_strides;
    TT_EQ_INT(eval(2, ts, (DLTensor *[]){&strided, c}), TEX_EINVAL);
    TT_CHECK(msg_has("'A'"));
    strided.shape = NULL;
    TT_EQ_INT(eval(2, ts, (DLTensor *[]){&strided, c}), TEX_EINVAL);
    TT_CHECK(msg_has("'A'") && msg_has("NULL shape"));
    /* A tensor of another context. */
    tex_ctx *other = tex_ctx_new();
    tex_tensor *Z = tex_placeholder_c(other, "Z", TEX_F32, 2, (int64_t[]){2, 3});
    TT_EQ_INT(eval(2, (tex_tensor *[]){Z, C}, (DLTensor *[]){a, c}), TEX_EMISUSE);
    TT_CHECK(msg_has("'Z'"));
    tex_ctx_free(other);
    /* The first error stays until cleared. */
    TT_EQ_INT(tex_errcode(ctx), TEX_EMISUSE);
    free_all(5, (DLTensor *[]){a, c, ai, a1, a32});
    end();
}

static void test_out_of_bounds_read(void)
{
    begin();
    tex_tensor *A = ph("A", TEX_F32, 1, (int64_t[]){5});
    tex_iter *i = ax("i", 5);
    tex_tensor *B = compute1("B", i, TEX_AT(A, tex_add(V(i), I(1))));
    tex_tensor *Cn = compute1("Cn", i, TEX_AT(A, tex_sub(V(i), I(1))));
    DLTensor *a = rand_f32(1, (int64_t[]){5}), *b = arr(TEX_F32, 1, (int64_t[]){5});
    TT_EQ_INT(eval(2, (tex_tensor *[]){A, B}, (DLTensor *[]){a, b}), TEX_EINVAL);
    TT_CHECK(msg_has("'B'") && msg_has("'A'") && msg_has("index 5"));
    TT_EQ_INT(eval(2, (tex_tensor *[]){A, Cn}, (DLTensor *[]){a, b}), TEX_EINVAL);
    TT_CHECK(msg_has("'Cn'") && msg_has("index -1"));
    free_all(2, (DLTensor *[]){a, b});
    end();
}

/* byte_offset is honoured for inputs and outputs. */
static void test_byte_offset(void)
{
    begin();
    tex_tensor *A = ph("A", TEX_F32, 1, (int64_t[]){4});
    tex_iter *i = ax("i", 4);
    tex_tensor *B = compute1("B", i, tex_add(TEX_AT(A, V(i)), Cf(1)));
    DLTensor *big = arr(TEX_F32, 1, (int64_t[]){16}), *out = arr(TEX_F32, 1, (int64_t[]){16});
    for (int n = 0; n < 16; n++)
        F(big)[n] = (float)n;
    DLTensor a = *big, b = *out;
    int64_t four = 4;
    a.shape = b.shape = &four;
    a.byte_offset = 3 * sizeof(float);
    b.byte_offset = 10 * sizeof(float);
    TT_EQ_INT(eval(2, (tex_tensor *[]){A, B}, (DLTensor *[]){&a, &b}), 0);
    int bad = 0;
    for (int n = 0; n < 16; n++)
        bad += F(out)[n] != (n >= 10 && n < 14 ? (float)(n - 10 + 3 + 1) : 0.0f);
    TT_EQ_INT(bad, 0);
    free_all(2, (DLTensor *[]){big, out});
    end();
}

/* ------------------------------------------------------------- threads */

/* A compute of enough work is split over TEX_NUM_THREADS threads: every
 * thread count gives the sequential result bit for bit (matmul_case compares
 * exactly), and the error reported is the first failing point's, whichever
 * thread met it. */
static void test_threads(void)
{
    const char *saved = getenv("TEX_NUM_THREADS");
    char keep[32] = "";
    if (saved)
        snprintf(keep, sizeof keep, "%s", saved);
    static const char *const counts[] = {"1", "2", "3", "7", "64"};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        setenv("TEX_NUM_THREADS", counts[c], 1);
        matmul_case(61, 67, 97);  /* about 400k steps: 6 shares */
        matmul_case(2, 3, 65537); /* 6 points, far more steps than shares */
        begin();
        /* B[i] = sum_k A[k + off(i)], off 1000 at i = 300 and 2000 at i = 999. */
        enum { NI = 1000, NK = 400 };
        tex_tensor *A = ph("A", TEX_F32, 1, (int64_t[]){NK});
        tex_iter *i = ax("i", NI), *k = rax("k", NK);
        tex_expr *off = tex_select(tex_eq(V(i), I(300)), I(1000),
                                   tex_select(tex_eq(V(i), I(999)), I(2000), I(0)));
        tex_tensor *B = compute1("B", i, tex_sum(TEX_AT(A, tex_add(V(k), off)), 1, &k));
        DLTensor *a = rand_f32(1, (int64_t[]){NK}), *b = arr(TEX_F32, 1, (int64_t[]){NI});
        TT_EQ_INT(eval(2, (tex_tensor *[]){A, B}, (DLTensor *[]){a, b}), TEX_EINVAL);
        TT_CHECK(msg_has("'B'") && msg_has("index 1000 "));
        free_all(2, (DLTensor *[]){a, b});
        end();
    }
    if (saved)
        setenv("TEX_NUM_THREADS", keep, 1);
    else
        unsetenv("TEX_NUM_THREADS");
}

/* ----------------------------------------------------------------- speed */

/* 160^3 here (valgrind runs this too); 256^3 takes about 1 s at -O2. */
static void test_matmul_speed(void)
{
    begin();
    enum { S = 160 };
    tex_tensor *A = ph("A", TEX_F32, 2, (int64_t[]){S, S}),
               *B = ph("B", TEX_F32, 2, (int64_t[]){S, S});
    tex_iter *i = ax("i", S), *j = ax("j", S), *k = rax("k", S);
    tex_tensor *C =
        compute2("C", i, j, tex_sum(tex_mul(TEX_AT(A, V(i), V(k)), TEX_AT(B, V(k), V(j))), 1, &k));
    DLTensor *a = rand_f32(2, (int64_t[]){S, S}), *b = rand_f32(2, (int64_t[]){S, S});
    DLTensor *c = arr(TEX_F32, 2, (int64_t[]){S, S});
    clock_t t0 = clock();
    TT_EQ_INT(eval(3, (tex_tensor *[]){A, B, C}, (DLTensor *[]){a, b, c}), 0);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    printf("  %d^3 f32 matmul: %.2f s\n", S, secs);
    float acc = 0;
    for (int r = 0; r < S; r++)
        acc += F(a)[17 * S + r] * F(b)[r * S + 150];
    TT_CHECK(F(c)[17 * S + 150] == acc);
    free_all(3, (DLTensor *[]){a, b, c});
    end();
}

int main(void)
{
    TT_RUN(test_matmul);
    TT_RUN(test_batch_matmul);
    TT_RUN(test_conv2d_padded_stride2);
    TT_RUN(test_softmax);
    TT_RUN(test_layernorm);
    TT_RUN(test_reductions_i32);
    TT_RUN(test_reductions_f32_two_axes_where);
    TT_RUN(test_reduction_identities);
    TT_RUN(test_scalar_output);
    TT_RUN(test_math_functions_f32);
    TT_RUN(test_elementwise_chain);
    TT_RUN(test_symbolic_sizes);
    TT_RUN(test_symbolic_shape_expressions);
    TT_RUN(test_symbolic_errors);
    TT_RUN(test_integer_wraparound);
    TT_RUN(test_unsigned_semantics);
    TT_RUN(test_half_types);
    TT_RUN(test_bool);
    TT_RUN(test_floor_division);
    TT_RUN(test_floor_division_i64_and_float);
    TT_RUN(test_casts);
    TT_RUN(test_argument_errors);
    TT_RUN(test_out_of_bounds_read);
    TT_RUN(test_byte_offset);
    TT_RUN(test_threads);
    TT_RUN(test_matmul_speed);
    return tt_finish();
}
