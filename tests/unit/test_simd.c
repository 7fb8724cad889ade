/*
 * Vectorized loops as vector statements (src/lower/simd.c) and their C
 * (src/codegen_c/cvector.c), on compiled kernels: each workload is split by
 * several factors (the vector loop's extent: a multiple of the native width,
 * a prime, one that needs a loop over chunks), its inner loop vectorized,
 * built for "cpu" with the default compiler and with clang when it is
 * installed (not in sanitized runs), run on random non-zero inputs with the
 * output poisoned and compared with the reference evaluator. Shapes are not
 * multiples of the factors, so tails are exercised too. The generated source
 * is checked for what the case is about: dense vector accesses, per-lane
 * composites, vector LETs, and the reasons of the loops left alone. The
 * interpreter runs the same vector statements lane by lane (the CPU tail's
 * output) against the oracle too.
 */
#include "tt.h"
#include "support/simd_check.h"

#include "tex/tex.h"

typedef tex_tensor *(*workload_fn)(ops_wl *w, int64_t n);

/* Interprets the CPU tail of s's lowering against the oracle. */
static int interpret_tail(ops_wl *w, tex_schedule *s, uint64_t seed)
{
    char why[2048];
    return simd_interpret_tail(w, ops_lower(w, s, why, sizeof why), seed);
}

/* Builds workload fn at size n with every factor and compiler, compares
 * with the oracle; then checks that the source of the first factor holds
 * every string of `want`. */
static void check_workload(const char *name, workload_fn fn, int64_t n, const int *factors,
                           int n_factors, const char *const *want)
{
    bool clang = simd_have_clang();
    for (int f = 0; f < n_factors; f++)
        for (int cc = 0; cc < 1 + clang; cc++) {
            tex_ctx *ctx = tex_ctx_new();
            ops_wl w;
            ops_init(&w, ctx, name);
            TT_CHECK(fn(&w, n) != NULL);
            tex_schedule *s = simd_split_vectorize(&w, factors[f]);
            TT_CHECK(s != NULL);
            simd_cc saved;
            simd_cc_use(&saved, cc ? "clang" : NULL);
            ops_log log = {0};
            ops_logf(&log, "split(last axis, %d), vectorize(inner), TEX_CC=%s\n", factors[f],
                     cc ? "clang" : saved.value);
            TT_CHECK(s && ops_check_jit(&w, s, "cpu", (uint64_t)f + 1, &log, true) == 0);
            simd_cc_restore(&saved);
            if (cc == 0 && s)
                TT_CHECK(interpret_tail(&w, s, (uint64_t)f + 1) == 0);
            if (f == 0 && cc == 0 && s) {
                char *src = simd_source_of(&w, s, "c");
                TT_CHECK(src != NULL);
                for (int k = 0; src && want[k]; k++)
                    if (!strstr(src, want[k]))
                        TT_FAILF("%s: the source lacks \"%s\":\n%s", name, want[k], src);
                free(src);
            }
            tex_ctx_free(ctx);
        }
}

/* -------------------------------------------------------------- workloads */

static tex_tensor *input(ops_wl *w, const char *name, tex_dtype t, int ndim, tex_expr **shape)
{
    tex_tensor *x = tex_placeholder(w->ctx, name, t, ndim, shape);
    w->in[w->n_in++] = x;
    return x;
}

/* Out[i, j] = A[i, j] * B[i, j] + 1.5 (f32): dense vector arithmetic. */
static tex_tensor *axpb_f32(ops_wl *w, int64_t n)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[2] = {tex_int(c, 3), tex_int(c, n)};
    tex_tensor *A = input(w, "A", TEX_F32, 2, shape), *B = input(w, "B", TEX_F32, 2, shape);
    tex_iter *i = tex_axis(c, "i", shape[0]), *j = tex_axis(c, "j", shape[1]);
    tex_expr *v = tex_add(tex_mul(TEX_AT(A, tex_iv(i), tex_iv(j)), TEX_AT(B, tex_iv(i), tex_iv(j))),
                          ops_f(w, 1.5));
    return w->out = tex_compute(c, "Out", 2, (tex_iter *[]){i, j}, v);
}

/* Out[j] = f64(A[j]) * B[j] - A64[j] / 3: f32 widened into f64 vectors. */
static tex_tensor *mixed_f64(ops_wl *w, int64_t n)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[1] = {tex_int(c, n)};
    tex_tensor *A = input(w, "A", TEX_F32, 1, shape), *B = input(w, "B", TEX_F64, 1, shape);
    tex_iter *j = tex_axis(c, "j", shape[0]);
    tex_expr *a = tex_cast(TEX_F64, TEX_AT(A, tex_iv(j)));
    tex_expr *v = tex_sub(tex_mul(a, TEX_AT(B, tex_iv(j))),
                          tex_div(TEX_AT(B, tex_iv(j)), tex_const(c, TEX_F64, 3.0)));
    return w->out = tex_compute(c, "Out", 1, (tex_iter *[]){j}, v);
}

/* x = i32(A8[j]) * 3, y = i32(B8[j]) * D[j]; Out[j] = select(x > y, x, y)
 * + (y - i32(A8[j])): widening, wrapping int arithmetic, an int mask select. */
static tex_tensor *int_widen(ops_wl *w, int64_t n)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[1] = {tex_int(c, n)};
    tex_tensor *A = input(w, "A", TEX_I8, 1, shape), *B = input(w, "B", TEX_U8, 1, shape);
    tex_tensor *D = input(w, "D", TEX_I32, 1, shape);
    tex_iter *j = tex_axis(c, "j", shape[0]);
    tex_expr *a = tex_cast(TEX_I32, TEX_AT(A, tex_iv(j)));
    tex_expr *b = tex_cast(TEX_I32, TEX_AT(B, tex_iv(j)));
    tex_expr *x = tex_mul(a, tex_int(c, 3)), *y = tex_mul(b, TEX_AT(D, tex_iv(j)));
    tex_expr *v = tex_add(tex_select(tex_gt(x, y), x, y), tex_sub(y, a));
    return w->out = tex_compute(c, "Out", 1, (tex_iter *[]){j}, v);
}

/* Out[j] = A[j] * B[j] + A[j] in f16 (computed in float, rounded each step). */
static tex_tensor *half_arith(ops_wl *w, int64_t n)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[1] = {tex_int(c, n)};
    tex_tensor *A = input(w, "A", TEX_F16, 1, shape), *B = input(w, "B", TEX_F16, 1, shape);
    tex_iter *j = tex_axis(c, "j", shape[0]);
    tex_expr *v =
        tex_add(tex_mul(TEX_AT(A, tex_iv(j)), TEX_AT(B, tex_iv(j))), TEX_AT(A, tex_iv(j)));
    return w->out = tex_compute(c, "Out", 1, (tex_iter *[]){j}, v);
}

/* Out[i, j] = max(A, 0) + select(A > B, A, min(A, B)) * exp(B) (per-lane composites). */
static tex_tensor *select_math(ops_wl *w, int64_t n)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[2] = {tex_int(c, 2), tex_int(c, n)};
    tex_tensor *A = input(w, "A", TEX_F32, 2, shape), *B = input(w, "B", TEX_F32, 2, shape);
    tex_iter *i = tex_axis(c, "i", shape[0]), *j = tex_axis(c, "j", shape[1]);
    tex_expr *a = TEX_AT(A, tex_iv(i), tex_iv(j)), *b = TEX_AT(B, tex_iv(i), tex_iv(j));
    tex_expr *sel = tex_select(tex_gt(a, b), a, tex_min(a, b));
    tex_expr *v = tex_add(tex_max(a, ops_f(w, 0.0)), tex_mul(sel, tex_exp(b)));
    return w->out = tex_compute(c, "Out", 2, (tex_iter *[]){i, j}, v);
}

/* Out[j, i] = A[i, j]: strided loads along the vector axis i. */
static tex_tensor *transpose(ops_wl *w, int64_t n)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[2] = {tex_int(c, 5), tex_int(c, n)};
    tex_tensor *A = input(w, "A", TEX_F32, 2, shape);
    tex_iter *j = tex_axis(c, "j", shape[0]), *i = tex_axis(c, "i", shape[1]);
    return w->out = tex_compute(c, "Out", 2, (tex_iter *[]){j, i}, TEX_AT(A, tex_iv(j), tex_iv(i)));
}

/* Out[i, j] = A[(j * 7) % n] + R[i]: a gather and a broadcast row value. */
static tex_tensor *gather(ops_wl *w, int64_t n)
{
    tex_ctx *c = w->ctx;
    tex_expr *N = tex_int(c, n), *M = tex_int(c, 3);
    tex_tensor *A = input(w, "A", TEX_F32, 1, &N), *R = input(w, "R", TEX_F32, 1, &M);
    tex_iter *i = tex_axis(c, "i", M), *j = tex_axis(c, "j", N);
    tex_expr *idx = tex_floormod(tex_mul(tex_iv(j), tex_int(c, 7)), N);
    return w->out = tex_compute(c, "Out", 2, (tex_iter *[]){i, j},
                                tex_add(TEX_AT(A, idx), TEX_AT(R, tex_iv(i))));
}

/* Out[j] = select(1 <= j < n - 1, A[j - 1], 0) + 2: loads guarded by a
 * select, made unconditional by guarded_loads under LETs (vector LETs). */
static tex_tensor *shifted(ops_wl *w, int64_t n)
{
    tex_ctx *c = w->ctx;
    tex_expr *N = tex_int(c, n);
    tex_tensor *A = input(w, "A", TEX_F32, 1, &N);
    tex_iter *j = tex_axis(c, "j", N);
    tex_expr *in = tex_and(tex_ge(tex_iv(j), tex_int(c, 1)), tex_lt(tex_iv(j), tex_int(c, n - 1)));
    tex_expr *v = tex_select(in, TEX_AT(A, tex_sub(tex_iv(j), tex_int(c, 1))), ops_f(w, 0.0));
    return w->out = tex_compute(c, "Out", 1, (tex_iter *[]){j}, tex_add(v, ops_f(w, 2.0)));
}

/* ------------------------------------------------------------------ tests */

static const int FACTORS[] = {16, 13, 256};
#define N_FACTORS (int)(sizeof FACTORS / sizeof FACTORS[0])

static void test_dense_f32(void)
{
    /* 16 lanes: one or two dense vector chunks; 256: a loop over chunks */
    const char *want[] = {"vector_size(", "*(const tex_v", NULL};
    check_workload("axpb_f32", axpb_f32, 300, FACTORS, N_FACTORS, want);
}

static void test_mixed_f64(void)
{
    const char *want[] = {"_f64 __attribute__((vector_size(", "__builtin_convertvector(", NULL};
    check_workload("mixed_f64", mixed_f64, 97, FACTORS, N_FACTORS, want);
}

static void test_int_widening(void)
{
    const char *want[] = {"__builtin_convertvector(", "_u32)", "tex_vselect_v", NULL};
    check_workload("int_widen", int_widen, 301, FACTORS, N_FACTORS, want);
}

static void test_half(void)
{
    const char *want[] = {"tex_round_f16(", NULL};
    check_workload("half_arith", half_arith, 77, FACTORS, N_FACTORS, want);
}

static void test_select_min_max_exp(void)
{
    const char *want[] = {"tex_vexp_f32x", "tex_vmax_v", "tex_vmin_v", "tex_vselect_v", NULL};
    check_workload("select_math", select_math, 45, FACTORS, N_FACTORS, want);
}

/* -strict-float: vector lanes call libm's expf, not tex's vector exp. */
static void test_strict_float_libm(void)
{
    tex_ctx *c = tex_ctx_new();
    ops_wl w;
    ops_init(&w, c, "select_math");
    TT_CHECK(select_math(&w, 40) != NULL);
    tex_schedule *s = simd_split_vectorize(&w, 8);
    char *src = s ? simd_source_of(&w, s, "c -strict-float") : NULL;
    TT_CHECK(src && strstr(src, "expf(") && !strstr(src, "tex_vexp"));
    free(src);
    ops_log log = {0};
    TT_CHECK(s && ops_check_jit(&w, s, "cpu -strict-float", 3, &log, true) == 0);
    tex_ctx_free(c);
}

static void test_strided(void)
{
    const char *want[] = {"tex_v", NULL};
    check_workload("transpose", transpose, 41, FACTORS, N_FACTORS, want);
}

static void test_gather_broadcast(void)
{
    const char *want[] = {"tex_v", NULL};
    check_workload("gather", gather, 53, FACTORS, N_FACTORS, want);
}

static void test_vector_let(void)
{
    const char *want[] = {"const tex_v", NULL};
    check_workload("shifted", shifted, 37, FACTORS, N_FACTORS, want);
}

/* The pass on hand-built loops: X[v + 1] = X[v] + 1 carries a dependence
 * (serial, with the reason); X[v] = Y[2 v] * 2 becomes vector statements.
 * Guarded bodies: test_simd_tail. */
static char *simd_of(tex_ctx *c, tex_stmt *body)
{
    texi_lower lw = {c, NULL, NULL};
    tex_stmt *out = NULL;
    return texi_pass_simd(&lw, body, &out) == 0 ? texi_stmt_str(out) : NULL;
}

static void test_pass_forms(void)
{
    tex_ctx *c = tex_ctx_new();
    tex_expr *n = tex_int(c, 64);
    texi_buffer *X = texi_buffer_new(c, "X", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    texi_buffer *Y = texi_buffer_new(c, "Y", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    tex_expr *v = texi_var_new(c, "v", TEX_I32), *one = tex_int(c, 1), *two = tex_int(c, 2);
    tex_expr *zero = tex_int(c, 0), *eight = tex_int(c, 8), *f1 = tex_const(c, TEX_F32, 1.0);
    tex_stmt *carried = texi_store_new(c, X, texi_binary(TEXI_EXPR_ADD, v, one),
                                       texi_binary(TEXI_EXPR_ADD, texi_load_new(X, v), f1));
    tex_stmt *strided = texi_store_new(
        c, X, v,
        texi_binary(TEXI_EXPR_MUL, texi_load_new(Y, texi_binary(TEXI_EXPR_MUL, v, two)),
                    tex_const(c, TEX_F32, 2.0)));
    tex_stmt *bodies[2] = {carried, strided};
    const char *want[2] = {"vectorize_failed(iterations may depend on each other)", "ramp("};
    const char *loop_kind[2] = {"for (v, 0, 8) {", NULL};
    for (int k = 0; k < 2; k++) {
        tex_stmt *loop = texi_for_new(c, v, zero, eight, TEXI_FOR_VECTORIZED, -1, bodies[k]);
        char *text = simd_of(c, loop);
        TT_CHECK(text && strstr(text, want[k]));
        TT_CHECK(text && (loop_kind[k] ? strstr(text, loop_kind[k]) != NULL
                                       : strstr(text, "for (") == NULL));
        if (text && !strstr(text, want[k]))
            printf("  case %d:\n%s", k, text);
        free(text);
    }
    tex_ctx_free(c);
}

int main(void)
{
    TT_RUN(test_dense_f32);
    TT_RUN(test_mixed_f64);
    TT_RUN(test_int_widening);
    TT_RUN(test_half);
    TT_RUN(test_select_min_max_exp);
    TT_RUN(test_strict_float_libm);
    TT_RUN(test_strided);
    TT_RUN(test_gather_broadcast);
    TT_RUN(test_vector_let);
    TT_RUN(test_pass_forms);
    return tt_finish();
}
