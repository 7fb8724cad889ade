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
 *
 * Reductions (src/lower/simd_reduce.c): sum, product, max and min over f32,
 * f64, i32, i64 (and i16, u8) with the reduce axis vectorized at extents 1,
 * 3, 13, 37, 64, 100, split by a factor that does not divide it (also with
 * a predicated tail), rfactored with R's combine loop vectorized, or with a
 * where-condition; the same comparisons, and the
 * source must call the horizontal reduction. Under -strict-float float sums
 * and products stay serial with their reason. Hand-built loops check what
 * must not take this path (an accumulator index that depends on the loop
 * variable, the accumulator's buffer read elsewhere, a non-associative
 * combiner, a load under the guard).
 */
#include "tt.h"
#include "support/simd_check.h"
#include "ir/arith.h"
#include "lower/verify.h"

#include <unistd.h>

#include "tex/tex.h"

typedef tex_tensor *(*workload_fn)(ops_wl *w, int64_t n);

/* Splits the output's last axis by factor and vectorizes the inner part. */
static tex_schedule *vector_schedule(ops_wl *w, int factor, ops_log *log)
{
    tex_schedule *s = tex_schedule_new(w->ctx, 1, &w->out);
    tex_stage *st = tex_stage_of(s, w->out);
    int nd = tex_stage_naxes(st);
    tex_iter *o, *i;
    if (log)
        ops_logf(log, "split(last axis, %d), vectorize(inner)\n", factor);
    if (!s || tex_split(st, tex_stage_axis(st, nd - 1), tex_int(w->ctx, factor), &o, &i) != 0 ||
        tex_vectorize(st, i) != 0)
        return NULL;
    return s;
}

/* Runs the interpreter on the CPU tail of s's lowering against the oracle. */
static int interpret_tail(ops_wl *w, tex_schedule *s, uint64_t seed)
{
    char why[2048];
    return simd_interpret_tail(w, ops_lower(w, s, why, sizeof why), seed);
}

/* Schedule s of w (steps in log) built for "cpu" with the default
 * compiler and, when clang, with clang, compared with the oracle; the CPU
 * tail interpreted and compared; then the "c" source checked for every
 * string of want (NULL: no check). */
static void check_schedule(ops_wl *w, tex_schedule *s, uint64_t seed, bool clang,
                           const char *const *want, ops_log *log)
{
    TT_CHECK(s != NULL);
    if (!s)
        return;
    const char *saved = getenv("TEX_CC");
    char first_cc[256];
    snprintf(first_cc, sizeof first_cc, "%s", saved ? saved : "");
    for (int cc = 0; cc < 1 + clang; cc++) {
        if (cc)
            setenv("TEX_CC", "clang", 1);
        size_t len = log->len;
        ops_logf(log, "TEX_CC=%s\n", cc ? "clang" : first_cc);
        TT_CHECK(ops_check_jit(w, s, "cpu", seed, log, true) == 0);
        log->len = len;
        log->text[len] = 0;
        if (cc && *first_cc)
            setenv("TEX_CC", first_cc, 1);
        else if (cc)
            unsetenv("TEX_CC");
    }
    TT_CHECK(interpret_tail(w, s, seed) == 0);
    char *src = want ? simd_source_of(w, s, "c") : NULL;
    TT_CHECK(!want || src != NULL);
    for (int k = 0; src && want[k]; k++)
        if (!strstr(src, want[k]))
            TT_FAILF("%s: the source lacks \"%s\":\n%s", w->name, want[k], src);
    free(src);
}

/* Builds workload fn at size n with every factor and compiler, compares
 * with the oracle; then checks that the source of the first factor holds
 * every string of `want`. */
static void check_workload(const char *name, workload_fn fn, int64_t n, const int *factors,
                           int n_factors, const char *const *want)
{
    bool clang = simd_have_clang();
    for (int f = 0; f < n_factors; f++) {
        tex_ctx *ctx = tex_ctx_new();
        ops_wl w;
        ops_init(&w, ctx, name);
        TT_CHECK(fn(&w, n) != NULL);
        ops_log log = {0};
        tex_schedule *s = vector_schedule(&w, factors[f], &log);
        check_schedule(&w, s, (uint64_t)f + 1, clang, f == 0 ? want : NULL, &log);
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

/* Inputs A and B [2, n] of type t, the axes i and j over them, and their
 * reads a = A[i, j] and b = B[i, j]. */
typedef struct {
    tex_iter *i, *j;
    tex_expr *a, *b;
} grid_ab;

static grid_ab two_inputs(ops_wl *w, int64_t n, tex_dtype t)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[2] = {tex_int(c, 2), tex_int(c, n)};
    tex_tensor *A = input(w, "A", t, 2, shape), *B = input(w, "B", t, 2, shape);
    grid_ab g = {tex_axis(c, "i", shape[0]), tex_axis(c, "j", shape[1]), NULL, NULL};
    g.a = TEX_AT(A, tex_iv(g.i), tex_iv(g.j));
    g.b = TEX_AT(B, tex_iv(g.i), tex_iv(g.j));
    return g;
}

/* Out[i, j] = max(A, 0) + select(A > B, A, min(A, B)) * exp(B) (per-lane composites). */
static tex_tensor *select_math(ops_wl *w, int64_t n)
{
    grid_ab g = two_inputs(w, n, TEX_F32);
    tex_iter *i = g.i, *j = g.j;
    tex_expr *a = g.a, *b = g.b;
    tex_expr *sel = tex_select(tex_gt(a, b), a, tex_min(a, b));
    tex_expr *v = tex_add(tex_max(a, ops_f(w, 0.0)), tex_mul(sel, tex_exp(b)));
    return w->out = tex_compute(w->ctx, "Out", 2, (tex_iter *[]){i, j}, v);
}

/* Out[i, j] = select((a > b && !(a < 0.25)) || a != a, j, 7 * i) in i64
 * over f32 a, b: comparisons of 32-bit lanes combined with && || ! picking
 * 64-bit lanes (argmax's index pass), their masks widened. */
static tex_tensor *mixed_select(ops_wl *w, int64_t n)
{
    tex_ctx *c = w->ctx;
    grid_ab g = two_inputs(w, n, TEX_F32);
    tex_iter *i = g.i, *j = g.j;
    tex_expr *a = g.a, *b = g.b;
    tex_expr *hit = tex_or(tex_and(tex_gt(a, b), tex_not(tex_lt(a, ops_f(w, 0.25)))), tex_ne(a, a));
    tex_expr *v = tex_select(hit, tex_cast(TEX_I64, tex_iv(j)),
                             tex_cast(TEX_I64, tex_mul(tex_iv(i), tex_int(c, 7))));
    return w->out = tex_compute(c, "Out", 2, (tex_iter *[]){i, j}, v);
}

/* Out[i, j] = max(min(A, B), A - C) of integers of type t: vector min/max
 * helpers. */
static tex_tensor *int_minmax(ops_wl *w, int64_t n, tex_dtype t)
{
    tex_ctx *c = w->ctx;
    grid_ab g = two_inputs(w, n, t);
    tex_tensor *C = input(w, "C", t, 2, (tex_expr *[]){tex_int(c, 2), tex_int(c, n)});
    tex_expr *v = tex_max(tex_min(g.a, g.b), tex_sub(g.a, TEX_AT(C, tex_iv(g.i), tex_iv(g.j))));
    return w->out = tex_compute(c, "Out", 2, (tex_iter *[]){g.i, g.j}, v);
}

static tex_tensor *int_minmax_i32(ops_wl *w, int64_t n)
{
    return int_minmax(w, n, TEX_I32);
}

static tex_tensor *int_minmax_i64(ops_wl *w, int64_t n)
{
    return int_minmax(w, n, TEX_I64);
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

/* Out[i, j] = select(i % 3 >= 1, A[i - 1, j], 0) + B[i, j] (f32) and the
 * same in i32: a padded row read, whose condition is the same in every lane
 * of a vector over j (printed once, as `c ? vector : vector`). Not linear in
 * i: pass select_partition would split the loop over i where a linear one
 * is decided, leaving no select. */
static tex_tensor *padded_rows(ops_wl *w, int64_t n, tex_dtype t)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[2] = {tex_int(c, 4), tex_int(c, n)};
    tex_tensor *A = input(w, "A", t, 2, shape), *B = input(w, "B", t, 2, shape);
    tex_iter *i = tex_axis(c, "i", shape[0]), *j = tex_axis(c, "j", shape[1]);
    tex_expr *in = tex_ge(tex_floormod(tex_iv(i), tex_int(c, 3)), tex_int(c, 1));
    tex_expr *a = TEX_AT(A, tex_sub(tex_iv(i), tex_int(c, 1)), tex_iv(j));
    tex_expr *v = tex_select(in, a, tex_const(c, t, 0));
    return w->out = tex_compute(c, "Out", 2, (tex_iter *[]){i, j},
                                tex_add(v, TEX_AT(B, tex_iv(i), tex_iv(j))));
}

static tex_tensor *padded_rows_f32(ops_wl *w, int64_t n)
{
    return padded_rows(w, n, TEX_F32);
}

static tex_tensor *padded_rows_i32(ops_wl *w, int64_t n)
{
    return padded_rows(w, n, TEX_I32);
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

/* Comparisons of other widths than the select's, combined, pick with
 * masks; integer min and max are vector helpers. */
static void test_mixed_masks(void)
{
    const char *sel[] = {"tex_vselect_v", "__builtin_convertvector(", " | ", "~", NULL};
    check_workload("mixed_select", mixed_select, 45, FACTORS, N_FACTORS, sel);
    const char *mm[] = {"tex_vmin_v", "tex_vmax_v", NULL};
    check_workload("int_minmax_i32", int_minmax_i32, 45, FACTORS, N_FACTORS, mm);
    check_workload("int_minmax_i64", int_minmax_i64, 45, FACTORS, N_FACTORS, mm);
}

/* A select whose condition is the same in every lane picks whole vectors. */
static void test_uniform_select(void)
{
    const char *want[] = {" : (tex_v", NULL};
    check_workload("padded_rows_f32", padded_rows_f32, 45, FACTORS, N_FACTORS, want);
    check_workload("padded_rows_i32", padded_rows_i32, 45, FACTORS, N_FACTORS, want);
}

/* -strict-float: vector lanes call libm's expf, not tex's vector exp. */
static void test_strict_float_libm(void)
{
    tex_ctx *c = tex_ctx_new();
    ops_wl w;
    ops_init(&w, c, "select_math");
    TT_CHECK(select_math(&w, 40) != NULL);
    tex_schedule *s = vector_schedule(&w, 8, NULL);
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

/* ------------------------------------------------------------ reductions */

/* R[i] = reduce_k X[i, k] over k < n of kind op (0 sum, 1 prod, 2 max,
 * 3 min) in dtype t, restricted to (k + i) % 3 != 1 when `where`; n a
 * symbolic size when sym. */
static tex_tensor *reduction(ops_wl *w, tex_dtype t, int op, int64_t n, bool where, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[2] = {tex_int(c, 3), ops_size(w, "n", n, sym)};
    tex_tensor *X = input(w, "X", t, 2, shape);
    tex_iter *i = tex_axis(c, "i", shape[0]), *k = tex_reduce_axis(c, "k", shape[1]);
    tex_expr *x = TEX_AT(X, tex_iv(i), tex_iv(k));
    tex_expr *red = op == 0   ? tex_sum(x, 1, &k)
                    : op == 1 ? tex_reduce_prod(x, 1, &k)
                    : op == 2 ? tex_reduce_max(x, 1, &k)
                              : tex_reduce_min(x, 1, &k);
    if (where)
        red = tex_reduce_where(
            red, tex_ne(tex_floormod(tex_add(tex_iv(k), tex_iv(i)), tex_int(c, 3)), tex_int(c, 1)));
    return w->out = tex_compute(c, "R", 1, &i, red);
}

/* How the reduce axis is scheduled: vectorized; split by a factor and the
 * inner part vectorized; split, rfactor of the inner part and the combine
 * loop (R's new reduce axis) vectorized; a where-reduction's axis
 * vectorized; split with a predicated tail and the inner part vectorized. */
enum red_sched { RED_VECTOR, RED_SPLIT, RED_RFACTOR, RED_WHERE, RED_PREDICATE };

static tex_schedule *reduce_schedule(ops_wl *w, enum red_sched how, int factor, ops_log *log)
{
    static const char *const names[5] = {"vectorize(k)", "split(k, %d), vectorize(inner)",
                                         "split(k, %d), rfactor(inner), vectorize(R's k)",
                                         "where, vectorize(k)",
                                         "split_tail(k, %d, predicate), vectorize(inner)"};
    ops_logf(log, names[how], factor);
    ops_logf(log, "\n");
    tex_schedule *s = tex_schedule_new(w->ctx, 1, &w->out);
    tex_stage *st = tex_stage_of(s, w->out);
    tex_iter *k = st ? tex_op_reduce_axis(st, 0) : NULL, *ko, *ki;
    if (!k)
        return NULL;
    if (how == RED_VECTOR || how == RED_WHERE)
        return tex_vectorize_reduce(st, k) == 0 ? s : NULL;
    tex_tail tail = how == RED_PREDICATE ? TEX_TAIL_PREDICATE : TEX_TAIL_AUTO;
    if (tex_split_tail(st, k, tex_int(w->ctx, factor), tail, &ko, &ki) != 0)
        return NULL;
    if (how == RED_SPLIT || how == RED_PREDICATE)
        return tex_vectorize_reduce(st, ki) == 0 ? s : NULL;
    if (!tex_rfactor(s, w->out, ki, 0))
        return NULL;
    return tex_vectorize_reduce(st, tex_op_reduce_axis(st, 0)) == 0 ? s : NULL;
}

static const char *const RED_WANT[4][2] = {{"tex_vreduce_add_v", NULL},
                                           {"tex_vreduce_mul_v", NULL},
                                           {"tex_vreduce_max_v", NULL},
                                           {"tex_vreduce_min_v", NULL}};

/* Every reduction kind in dtype t under schedule `how` at each extent
 * (factor: the split's); the source must call the horizontal reduction
 * wherever a vector loop remains (extent > 1). clang on the extents of
 * clang_from on. */
static void check_reductions_of(tex_dtype t, enum red_sched how, int factor, const int64_t *extents,
                                int n_extents, int clang_from, bool sym)
{
    bool clang = simd_have_clang();
    for (int op = 0; op < 4; op++)
        for (int e = 0; e < n_extents; e++) {
            tex_ctx *ctx = tex_ctx_new();
            ops_wl w;
            ops_init(&w, ctx, tex_dtype_name(t));
            TT_CHECK(reduction(&w, t, op, extents[e], how == RED_WHERE, sym) != NULL);
            ops_log log = {0};
            ops_logf(&log, "op %d, extent %lld%s: ", op, (long long)extents[e],
                     sym ? " (symbolic)" : "");
            tex_schedule *s = reduce_schedule(&w, how, factor, &log);
            bool vector =
                how == RED_VECTOR || how == RED_WHERE ? sym || extents[e] > 1 : factor > 1;
            check_schedule(&w, s, (uint64_t)(op * 100 + e + 1), clang && e >= clang_from,
                           vector ? RED_WANT[op] : NULL, &log);
            tex_ctx_free(ctx);
        }
}

static void check_reductions(tex_dtype t, enum red_sched how, int factor, const int64_t *extents,
                             int n_extents, int clang_from)
{
    check_reductions_of(t, how, factor, extents, n_extents, clang_from, false);
}

static const int64_t RED_EXTENTS[] = {1, 3, 13, 37, 64, 100};
#define N_RED_EXTENTS (int)(sizeof RED_EXTENTS / sizeof RED_EXTENTS[0])

static void test_reduce_f32(void)
{
    check_reductions(TEX_F32, RED_VECTOR, 0, RED_EXTENTS, N_RED_EXTENTS, 3);
}

static void test_reduce_f64(void)
{
    check_reductions(TEX_F64, RED_VECTOR, 0, RED_EXTENTS, N_RED_EXTENTS, 4);
}

static void test_reduce_i32(void)
{
    check_reductions(TEX_I32, RED_VECTOR, 0, RED_EXTENTS, N_RED_EXTENTS, 4);
}

static void test_reduce_i64(void)
{
    check_reductions(TEX_I64, RED_VECTOR, 0, RED_EXTENTS, N_RED_EXTENTS, 4);
}

/* Narrow integers: per-lane composites, wrapping like the scalar code. */
static void test_reduce_narrow(void)
{
    static const int64_t ext[] = {37, 100};
    check_reductions(TEX_I16, RED_VECTOR, 0, ext, 2, 1);
    check_reductions(TEX_U8, RED_VECTOR, 0, ext, 2, 2);
}

/* A symbolic extent: groups of 4 vector chunks, single chunks, then the
 * scalar tail, each count computed at run time (every split of the extent
 * below 4 chunks, between, and beyond). */
static void test_reduce_symbolic(void)
{
    static const int64_t ext[] = {1, 7, 8, 13, 33, 100};
    check_reductions_of(TEX_F32, RED_VECTOR, 0, ext, 6, 3, true);
    check_reductions_of(TEX_I32, RED_VECTOR, 0, ext, 6, 5, true);
    check_reductions_of(TEX_F64, RED_VECTOR, 0, ext, 6, 5, true);
}

/* A split whose factor does not divide the extent: a vector main part and
 * a guarded or partitioned tail, each reducing into R[i]. */
static void test_reduce_split(void)
{
    static const int64_t ext[] = {37, 100};
    check_reductions(TEX_F32, RED_SPLIT, 8, ext, 2, 1);
    check_reductions(TEX_I32, RED_SPLIT, 16, ext, 2, 2);
    check_reductions(TEX_F64, RED_SPLIT, 6, ext, 2, 2);
}

/* rfactor: the partial results per inner index, then R's combine loop
 * over them vectorized. */
static void test_reduce_rfactor(void)
{
    static const int64_t ext[] = {37, 100};
    check_reductions(TEX_F32, RED_RFACTOR, 16, ext, 2, 1);
    check_reductions(TEX_I64, RED_RFACTOR, 8, ext, 2, 2);
}

/* Guarded updates: a where-condition, a predicated split tail (the guard
 * becomes a select of the identity). */
static void test_reduce_guarded(void)
{
    check_reductions(TEX_F32, RED_WHERE, 0, RED_EXTENTS, N_RED_EXTENTS, 4);
    static const int64_t ext[] = {37, 100};
    check_reductions(TEX_I32, RED_WHERE, 0, ext, 2, 1);
    check_reductions(TEX_F64, RED_PREDICATE, 8, ext, 2, 1);
    check_reductions(TEX_I64, RED_PREDICATE, 16, ext, 2, 2);
}

/* The horizontal sum of `lanes` values in the printer's and the
 * interpreter's order (texi_vreduce_new): a rotation tree, rounded to t. */
static double tree_sum(tex_dtype t, const double *x, int lanes)
{
    double v[16], w[16];
    for (int j = 0; j < lanes; j++)
        v[j] = x[j];
    for (int h = lanes / 2; h >= 1; h /= 2) {
        for (int j = 0; j < lanes; j++)
            w[j] = t == TEX_F32 ? (double)((float)v[j] + (float)v[(j + h) % lanes])
                                : v[j] + v[(j + h) % lanes];
        memcpy(v, w, sizeof v);
    }
    return v[0];
}

/* A vectorized float sum whose lanes' order matters (1e8 beside ones): the
 * kernels of both compilers and the interpreter on the CPU tail return the
 * rotation tree's sum bit for bit, which lane order would not give. */
static void test_reduce_order(void)
{
    for (int f64 = 0; f64 < 2; f64++) {
        tex_dtype t = f64 ? TEX_F64 : TEX_F32;
        int lanes = f64 ? 8 : 16;
        double big = f64 ? 1e17 : 1e8, x[16], serial = 0;
        for (int k = 0; k < lanes; k++) {
            x[k] = k == 0 ? big : k == lanes / 2 ? -big : 1.0;
            serial = f64 ? serial + x[k] : (double)((float)serial + (float)x[k]);
        }
        double want = tree_sum(t, x, lanes);
        TT_CHECK(want != serial);
        tex_ctx *ctx = tex_ctx_new();
        ops_wl w;
        ops_init(&w, ctx, "order");
        tex_expr *shape[2] = {tex_int(ctx, 1), tex_int(ctx, lanes)};
        tex_tensor *X = input(&w, "X", t, 2, shape);
        tex_iter *i = tex_axis(ctx, "i", shape[0]), *k = tex_reduce_axis(ctx, "k", shape[1]);
        w.out = tex_compute(ctx, "R", 1, &i, tex_sum(TEX_AT(X, tex_iv(i), tex_iv(k)), 1, &k));
        tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
        tex_stage *st = tex_stage_of(s, w.out);
        TT_EQ_INT(tex_vectorize_reduce(st, tex_op_reduce_axis(st, 0)), 0);
        char why[512];
        tex_func *f = ops_lower(&w, s, why, sizeof why), tail;
        DLDevice cpu = {kDLCPU, 0};
        DLTensor *xa = tex_array_new(2, (int64_t[]){1, lanes}, t, cpu);
        DLTensor *ra = tex_array_new(1, (int64_t[]){1}, t, cpu);
        for (int j = 0; xa && j < lanes; j++)
            if (f64)
                ((double *)xa->data)[j] = x[j];
            else
                ((float *)xa->data)[j] = (float)x[j];
        tex_value args[2] = {{.kind = TEX_VAL_TENSOR, .t = xa}, {.kind = TEX_VAL_TENSOR, .t = ra}};
        for (int run = 0; f && ra && run < 3; run++) {
            if (run == 2 && !simd_have_clang())
                break;
            simd_cc saved;
            simd_cc_use(&saved, run == 2 ? "clang" : NULL);
            tex_kernel *kn = run ? tex_build(f, "cpu") : NULL;
            simd_cc_restore(&saved);
            char msg[512];
            int rc = run ? (kn ? tex_kernel_call(kn, 2, args) : -1)
                     : simd_tail_of(&w, f, &tail) == 0
                         ? texi_interp_run(&tail, 2, args, msg, sizeof msg)
                         : -1;
            tex_kernel_free(kn);
            double got = f64 ? ((double *)ra->data)[0] : ((float *)ra->data)[0];
            if (rc != 0 || got != want)
                TT_FAILF("%s sum, %s: got %.17g (rc %d), want %.17g (lane order: %.17g)",
                         tex_dtype_name(t),
                         run == 0   ? "interpreter"
                         : run == 1 ? "cc"
                                    : "clang",
                         got, rc, want, serial);
        }
        tex_array_free(xa);
        tex_array_free(ra);
        tex_ctx_free(ctx);
    }
}

/* -strict-float: float sums and products stay serial (the reason in the
 * dump and the C), min/max still vectorize; the result is the oracle's bit
 * for bit for the sums. */
static void test_reduce_strict_float(void)
{
    for (int op = 0; op < 4; op++) {
        tex_ctx *ctx = tex_ctx_new();
        ops_wl w;
        ops_init(&w, ctx, "strict");
        TT_CHECK(reduction(&w, TEX_F32, op, 100, false, false) != NULL);
        ops_log log = {0};
        tex_schedule *s = reduce_schedule(&w, RED_VECTOR, 0, &log);
        char *src = s ? simd_source_of(&w, s, "c -strict-float") : NULL;
        bool serial = op < 2;
        TT_CHECK(src && (strstr(src, RED_WANT[op][0]) == NULL) == serial);
        TT_CHECK(src && (strstr(src, "under -strict-float") != NULL) == serial);
        free(src);
        TT_CHECK(s && ops_check_jit(&w, s, "cpu -strict-float", 5, &log, true) == 0);
        tex_ctx_free(ctx);
    }
}

/* The pass on hand-built loops: X[v + 1] = X[v] + 1 carries a dependence
 * (serial, with the reason); a guarded body keeps its vectorized loop
 * (with the reason); X[v] = Y[2 v] * 2 becomes vector statements. */
static char *simd_of(tex_ctx *c, tex_stmt *body, bool strict_float)
{
    texi_lower lw = {c, NULL, NULL, strict_float};
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
        char *text = simd_of(c, loop, false);
        TT_CHECK(text && strstr(text, want[k]));
        TT_CHECK(text && (loop_kind[k] ? strstr(text, loop_kind[k]) != NULL
                                       : strstr(text, "for (") == NULL));
        if (text && !strstr(text, want[k]))
            printf("  case %d:\n%s", k, text);
        free(text);
    }
    tex_ctx_free(c);
}

/* Reductions on hand-built loops over v < 16 (f32 buffers X, Y):
 *   X[3] = X[3] + Y[v]           a vector reduction (serial under -strict-float)
 *   X[3] = max(Y[v], X[3])       the accumulator on the right: vectorized too
 *   X[v / 2] = X[v / 2] + Y[v]   the accumulator depends on v: serial
 *   X[3] = X[3] + X[v]           the accumulator's buffer read elsewhere: serial
 *   let y = X[v] in X[3] = X[3] * y   the same through a LET: serial
 *   X[3] = X[3] - Y[v]           not an associative combiner: serial
 *   if (v < 5) X[3] = X[3] + Y[v]   a load under the guard (may be out of
 *                                   bounds where it is false): serial */
static void test_reduce_pass_forms(void)
{
    tex_ctx *c = tex_ctx_new();
    tex_expr *n = tex_int(c, 64);
    texi_buffer *X = texi_buffer_new(c, "X", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    texi_buffer *Y = texi_buffer_new(c, "Y", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    tex_expr *v = texi_var_new(c, "v", TEX_I32), *y = texi_var_new(c, "y", TEX_F32);
    tex_expr *three = tex_int(c, 3), *half = texi_binary(TEXI_EXPR_FLOORDIV, v, tex_int(c, 2));
    tex_expr *acc = texi_load_new(X, three), *yv = texi_load_new(Y, v);
    tex_stmt *bodies[7] = {
        texi_store_new(c, X, three, texi_binary(TEXI_EXPR_ADD, acc, yv)),
        texi_store_new(c, X, three, texi_binary(TEXI_EXPR_MAX, yv, acc)),
        texi_store_new(c, X, half, texi_binary(TEXI_EXPR_ADD, texi_load_new(X, half), yv)),
        texi_store_new(c, X, three, texi_binary(TEXI_EXPR_ADD, acc, texi_load_new(X, v))),
        texi_let_new(c, y, texi_load_new(X, v),
                     texi_store_new(c, X, three, texi_binary(TEXI_EXPR_MUL, acc, y))),
        texi_store_new(c, X, three, texi_binary(TEXI_EXPR_SUB, acc, yv)),
        texi_if_new(c, texi_binary(TEXI_EXPR_LT, v, tex_int(c, 5)),
                    texi_store_new(c, X, three, texi_binary(TEXI_EXPR_ADD, acc, yv)), NULL)};
    const char *want[7] = {
        "X[3] = X[3] + vreduce_add(", "X[3] = max(vreduce_max(", NULL, NULL, NULL, NULL, NULL};
    for (int k = 0; k < 7; k++)
        for (int strict = 0; strict < 2; strict++) {
            tex_stmt *loop = texi_for_new(c, v, tex_int(c, 0), tex_int(c, 16), TEXI_FOR_VECTORIZED,
                                          -1, bodies[k]);
            char *text = simd_of(c, loop, strict);
            const char *w = want[k] && !(strict && k == 0) ? want[k]
                            : strict && k == 0 ? "vectorize_failed(float reduction keeps its "
                                                 "order under -strict-float)"
                                               : "vectorize_failed(iterations may depend on each "
                                                 "other)";
            TT_CHECK(text && strstr(text, w));
            TT_CHECK(text && (strstr(text, "vreduce") != NULL) == (w == want[k]));
            if (text && !strstr(text, w))
                printf("  case %d (strict %d):\n%s", k, strict, text);
            free(text);
        }
    tex_ctx_free(c);
}

/* The VREDUCE node in the IR: printed as vreduce_OP(x), structural
 * equality, hash and order tell ops and operands apart, substitution
 * rebuilds it, the simplifier leaves it, and the verifier takes a scalar
 * of a vector's dtype only. */
static void test_vreduce_node(void)
{
    tex_ctx *c = tex_ctx_new();
    tex_expr *n = tex_int(c, 64), *zero = tex_int(c, 0), *one = tex_int(c, 1);
    texi_buffer *Y = texi_buffer_new(c, "Y", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    tex_expr *v = texi_var_new(c, "v", TEX_I32), *w = texi_var_new(c, "w", TEX_I32);
    tex_expr *x = texi_load_new(Y, texi_ramp_new(v, one, 8));
    tex_expr *add = texi_vreduce_new(TEXI_REDUCE_SUM, x),
             *add2 = texi_vreduce_new(TEXI_REDUCE_SUM, x);
    tex_expr *mx = texi_vreduce_new(TEXI_REDUCE_MAX, x);
    TT_EQ_INT(add->lanes, 1);
    char *text = tex_expr_str(mx);
    TT_EQ_STR(text, "vreduce_max(Y[ramp(v, 1, 8)])");
    free(text);
    TT_CHECK(texi_expr_equal(add, add2) && texi_expr_hash(add) == texi_expr_hash(add2));
    TT_CHECK(!texi_expr_equal(add, mx) && texi_arith_cmp(add, mx) != 0);
    tex_expr *moved = texi_substitute(add, 1, &v, &w);
    TT_CHECK(moved && moved != add && moved->kind == TEXI_EXPR_VREDUCE &&
             moved->u.vred.a->u.load.index->u.ramp.base == w);
    TT_CHECK(texi_simplify(add, 0, NULL) == add);
    /* verified inside for (v, 0, 8): Y[0] = vreduce(...); a scalar operand is refused */
    texi_lower lw = {c, NULL, NULL, false};
    for (int bad = 0; bad < 2; bad++) {
        tex_expr *value = bad ? texi_vreduce_new(TEXI_REDUCE_SUM, texi_load_new(Y, v)) : add;
        tex_stmt *loop = texi_for_new(c, v, zero, tex_int(c, 8), TEXI_FOR_SERIAL, -1,
                                      texi_store_new(c, Y, zero, value));
        TT_EQ_INT(texi_verify(&lw, loop, "test") == 0, !bad);
        tex_clear_error(c);
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
    TT_RUN(test_mixed_masks);
    TT_RUN(test_uniform_select);
    TT_RUN(test_strict_float_libm);
    TT_RUN(test_strided);
    TT_RUN(test_gather_broadcast);
    TT_RUN(test_vector_let);
    TT_RUN(test_reduce_f32);
    TT_RUN(test_reduce_f64);
    TT_RUN(test_reduce_i32);
    TT_RUN(test_reduce_i64);
    TT_RUN(test_reduce_narrow);
    TT_RUN(test_reduce_symbolic);
    TT_RUN(test_reduce_split);
    TT_RUN(test_reduce_rfactor);
    TT_RUN(test_reduce_guarded);
    TT_RUN(test_reduce_strict_float);
    TT_RUN(test_reduce_order);
    TT_RUN(test_pass_forms);
    TT_RUN(test_reduce_pass_forms);
    TT_RUN(test_vreduce_node);
    return tt_finish();
}
