/*
 * Guarded vectorized loops as vector chunks with per-lane tails
 * (src/lower/simd_tail.c). Each workload (f32, f64 with broadcasts, i32,
 * i8 / u8 / f16 / bf16 through f32, a compute_at producer) has its
 * vectorized axis split by 4, 8, 16 and 32, over the extents of SIZES
 * (constant) and over a symbolic size bound at call time (one kernel run at
 * every size of SIZES, smaller than the vector width too); it is built for
 * "cpu" with the default compiler (and with clang when it is installed, for
 * the symbolic size), run on random non-zero inputs with the output
 * poisoned and compared with the reference evaluator, and interpreted on
 * the CPU tail. Arrays have their exact sizes (ops_exact), so a vector
 * access past a buffer's end is an AddressSanitizer error under
 * `make asan`. The CPU tail is checked for the vector form (predicated
 * chunks where the CPU has mask registers, checked ones else); a guard made
 * non-monotone (always true, so results do not change) must fall back with
 * its reason. The pass itself runs on hand-built loops too.
 */
#include "tt.h"
#include "support/simd_check.h"

#include "tex/tex.h"
#include "util/host.h"

typedef tex_tensor *(*workload_fn)(ops_wl *w, int64_t n, bool sym);
typedef tex_schedule *(*schedule_fn)(ops_wl *w, int factor);

static const int FACTORS[] = {4, 8, 16, 32};
static const int64_t SIZES[] = {1, 3, 7, 13, 31, 33, 100};
#define N_FACTORS (int)(sizeof FACTORS / sizeof FACTORS[0])
#define N_SIZES (int)(sizeof SIZES / sizeof SIZES[0])

/* What the CPU tail must show: the vector form, or a fallback's reason. */
typedef struct {
    const char *has[3];   /* strings it holds (up to a NULL) */
    const char *hasnt[2]; /* strings it does not hold (up to a NULL) */
} tail_form;

/* Vector chunks, some under a check with the lanes one by one in the else
 * branch, and no loop left to the C compiler. */
static const tail_form VECTOR = {{"ramp(", "} else {"}, {"vectorize_failed"}};
/* Where the CPU has mask registers (AVX-512) and the body can be
 * predicated: every chunk predicated on the lanes that pass, no check. */
static const tail_form PREDICATED = {{"ramp(", " if ramp(0, 1, "},
                                     {"vectorize_failed", "} else {"}};
static const tail_form NOT_MONOTONE = {{"vectorize_failed(guard is not monotone"}, {NULL}};

/* Whether text holds the form's strings (`has` only when with_has) and
 * none of its `hasnt`. */
static bool matches(const char *text, const tail_form *form, bool with_has)
{
    for (int i = 0; text && with_has && i < 3 && form->has[i]; i++)
        if (!strstr(text, form->has[i]))
            return false;
    for (int i = 0; text && i < 2 && form->hasnt[i]; i++)
        if (strstr(text, form->hasnt[i]))
            return false;
    return text != NULL;
}

/* -------------------------------------------------------------- workloads */

static tex_tensor *input(ops_wl *w, const char *name, tex_dtype t, int ndim, tex_expr **shape)
{
    tex_tensor *x = tex_placeholder(w->ctx, name, t, ndim, shape);
    w->in[w->n_in++] = x;
    return x;
}

/* Out[i, j] = A[i, j] * B[i, j] + 1.5 (f32, 2 rows). */
static tex_tensor *elemwise_f32(ops_wl *w, int64_t n, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[2] = {tex_int(c, 2), ops_size(w, "n", n, sym)};
    tex_tensor *A = input(w, "A", TEX_F32, 2, shape), *B = input(w, "B", TEX_F32, 2, shape);
    tex_iter *i = tex_axis(c, "i", shape[0]), *j = tex_axis(c, "j", shape[1]);
    tex_expr *v = tex_add(tex_mul(TEX_AT(A, tex_iv(i), tex_iv(j)), TEX_AT(B, tex_iv(i), tex_iv(j))),
                          ops_f(w, 1.5));
    return w->out = tex_compute(c, "Out", 2, (tex_iter *[]){i, j}, v);
}

/* Out[i, j] = A[i, j] - R[i] * C[j] (f64): a row value and a column vector. */
static tex_tensor *broadcast_f64(ops_wl *w, int64_t n, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[2] = {tex_int(c, 3), ops_size(w, "n", n, sym)};
    tex_tensor *A = input(w, "A", TEX_F64, 2, shape), *R = input(w, "R", TEX_F64, 1, shape);
    tex_tensor *C = input(w, "C", TEX_F64, 1, shape + 1);
    tex_iter *i = tex_axis(c, "i", shape[0]), *j = tex_axis(c, "j", shape[1]);
    tex_expr *v = tex_sub(TEX_AT(A, tex_iv(i), tex_iv(j)),
                          tex_mul(TEX_AT(R, tex_iv(i)), TEX_AT(C, tex_iv(j))));
    return w->out = tex_compute(c, "Out", 2, (tex_iter *[]){i, j}, v);
}

/* Out[j] = A[j] * 3 - B[j] (i32). */
static tex_tensor *int_i32(ops_wl *w, int64_t n, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[1] = {ops_size(w, "n", n, sym)};
    tex_tensor *A = input(w, "A", TEX_I32, 1, shape), *B = input(w, "B", TEX_I32, 1, shape);
    tex_iter *j = tex_axis(c, "j", shape[0]);
    tex_expr *v = tex_sub(tex_mul(TEX_AT(A, tex_iv(j)), tex_int(c, 3)), TEX_AT(B, tex_iv(j)));
    return w->out = tex_compute(c, "Out", 1, (tex_iter *[]){j}, v);
}

/* Out[j] = f16(f32(A8[j]) * f32(H[j]) + f32(U8[j]) - f32(G[j])): i8, u8,
 * f16 and bf16 through f32 into an f16 output. */
static tex_tensor *mixed(ops_wl *w, int64_t n, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[1] = {ops_size(w, "n", n, sym)};
    tex_tensor *A = input(w, "A8", TEX_I8, 1, shape), *U = input(w, "U8", TEX_U8, 1, shape);
    tex_tensor *H = input(w, "H", TEX_F16, 1, shape), *G = input(w, "G", TEX_BF16, 1, shape);
    tex_iter *j = tex_axis(c, "j", shape[0]);
    tex_expr *a = tex_cast(TEX_F32, TEX_AT(A, tex_iv(j))),
             *h = tex_cast(TEX_F32, TEX_AT(H, tex_iv(j)));
    tex_expr *u = tex_cast(TEX_F32, TEX_AT(U, tex_iv(j))),
             *g = tex_cast(TEX_F32, TEX_AT(G, tex_iv(j)));
    tex_expr *v = tex_cast(TEX_F16, tex_sub(tex_add(tex_mul(a, h), u), g));
    return w->out = tex_compute(c, "Out", 1, (tex_iter *[]){j}, v);
}

/* P[j] = A[j] * 2 + 1; Out[j] = P[j] * B[j] (f32), P computed per block of Out. */
static tex_tensor *producer(ops_wl *w, int64_t n, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[1] = {ops_size(w, "n", n, sym)};
    tex_tensor *A = input(w, "A", TEX_F32, 1, shape), *B = input(w, "B", TEX_F32, 1, shape);
    tex_iter *jp = tex_axis(c, "jp", shape[0]), *j = tex_axis(c, "j", shape[0]);
    tex_tensor *P = ops_mid(
        w, tex_compute(c, "P", 1, (tex_iter *[]){jp},
                       tex_add(tex_mul(TEX_AT(A, tex_iv(jp)), ops_f(w, 2.0)), ops_f(w, 1.0))));
    return w->out = tex_compute(c, "Out", 1, (tex_iter *[]){j},
                                tex_mul(TEX_AT(P, tex_iv(j)), TEX_AT(B, tex_iv(j))));
}

/* Out's axis split by factor, its inner part vectorized; P computed at
 * Out's outer loop (a region of min(n, factor) elements), its axis split by
 * factor too and the inner part vectorized. */
static tex_schedule *producer_schedule(ops_wl *w, int factor)
{
    tex_schedule *s = simd_split_vectorize(w, factor);
    tex_stage *out = s ? tex_stage_of(s, w->out) : NULL, *p = s ? tex_stage_of(s, w->mid[0]) : NULL;
    tex_iter *o, *i;
    if (!out || !p || tex_compute_at(p, out, tex_stage_axis(out, 0)) != 0 ||
        tex_split(p, tex_stage_axis(p, 0), tex_int(w->ctx, factor), &o, &i) != 0 ||
        tex_vectorize(p, i) != 0)
        return NULL;
    return s;
}

/* Loop rewriter for f's body: the guard c of a vectorized loop over v
 * becomes c && floormod(v, 3) < 3, always true but not monotone in v. */
static tex_stmt *spoil_guard(tex_ctx *ctx, tex_stmt *s, tex_stmt *body, void *ud)
{
    (void)ud;
    if (s->u.loop.for_kind != TEXI_FOR_VECTORIZED || body->kind != TEXI_STMT_IF)
        return texi_stmt_with_body(ctx, s, body);
    tex_expr *v = s->u.loop.var, *three = texi_int_imm(ctx, v->dtype, 3);
    tex_expr *m = three ? texi_binary(TEXI_EXPR_FLOORMOD, v, three) : NULL;
    tex_expr *lt = m ? texi_binary(TEXI_EXPR_LT, m, three) : NULL;
    tex_expr *c = lt ? texi_binary(TEXI_EXPR_AND, body->u.ifs.cond, lt) : NULL;
    tex_stmt *guarded = c ? texi_if_new(ctx, c, body->u.ifs.then_s, NULL) : NULL;
    return guarded ? texi_for_new(ctx, v, s->u.loop.min, s->u.loop.extent, s->u.loop.for_kind, -1,
                                  guarded)
                   : NULL;
}

/* Out[j] = A[j] + 1 (f32). */
static tex_tensor *plus_one(ops_wl *w, int64_t n, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *shape[1] = {ops_size(w, "n", n, sym)};
    tex_tensor *A = input(w, "A", TEX_F32, 1, shape);
    tex_iter *j = tex_axis(c, "j", shape[0]);
    return w->out = tex_compute(c, "Out", 1, (tex_iter *[]){j},
                                tex_add(TEX_AT(A, tex_iv(j)), ops_f(w, 1.0)));
}

/* ------------------------------------------------------------------ runs */

/* Whether the CPU tail of f has the form (`has` only when sym: a
 * constant extent may leave no guard, or no vector loop); prints it when
 * not. */
static bool has_form(ops_wl *w, tex_func *f, const tail_form *form, bool sym)
{
    tex_func tail;
    if (simd_tail_of(w, f, &tail) != 0)
        return false;
    char *text = tex_func_str(&tail);
    bool ok = matches(text, form, sym);
    if (text && !ok)
        printf("  %s: the CPU tail does not have the form wanted:\n%s", w->name, text);
    free(text);
    return ok;
}

/* One workload at size n (symbolic: every size of SIZES through one
 * kernel) with the schedule of each factor, for each compiler. */
static void check_one(const char *name, workload_fn fn, schedule_fn sched,
                      texi_loop_rewrite_fn spoil, const tail_form *form, int64_t n, bool sym,
                      bool clang)
{
    for (int f = 0; f < N_FACTORS; f++) {
        tex_ctx *ctx = tex_ctx_new();
        ops_wl w;
        ops_init(&w, ctx, name);
        w.exact = true;
        TT_CHECK(fn(&w, n, sym) != NULL);
        tex_schedule *s = sched(&w, FACTORS[f]);
        char why[2048];
        tex_func *lowered = s ? ops_lower(&w, s, why, sizeof why) : NULL;
        TT_CHECK(lowered != NULL);
        if (lowered && spoil)
            TT_CHECK((lowered->body = texi_stmt_map_loops(ctx, lowered->body, spoil, NULL)) !=
                     NULL);
        ops_log log = {0};
        ops_logf(&log, "%s, factor %d, n = %s\n", name, FACTORS[f], sym ? "symbolic" : "constant");
        if (lowered)
            TT_CHECK(has_form(&w, lowered, form, sym));
        int n_sizes = sym ? N_SIZES : 1;
        const int64_t *sizes = sym ? SIZES : &n;
        if (lowered)
            simd_run_compilers(&w, lowered, &log, n_sizes, sizes, clang);
        tex_ctx_free(ctx);
    }
}

/* The workload with every factor (its lowering rewritten by spoil when
 * not NULL): over a symbolic size (both compilers), and over each constant
 * extent of SIZES (the default compiler). */
static void check_spoiled(const char *name, workload_fn fn, schedule_fn sched,
                          texi_loop_rewrite_fn spoil, const tail_form *form)
{
    check_one(name, fn, sched, spoil, form, SIZES[0], true, simd_have_clang());
    for (int z = 0; z < N_SIZES; z++)
        check_one(name, fn, sched, spoil, form, SIZES[z], false, false);
}

/* A workload whose chunks run predicated where the CPU has mask registers
 * when `maskable` (32- and 64-bit elements), else checked. */
static void check_workload(const char *name, workload_fn fn, schedule_fn sched, bool maskable)
{
    bool predicated = maskable && texi_host_vector_bytes() >= 64;
    check_spoiled(name, fn, sched, NULL, predicated ? &PREDICATED : &VECTOR);
}

/* ------------------------------------------------------------------ tests */

static void test_elemwise_f32(void)
{
    check_workload("elemwise_f32", elemwise_f32, simd_split_vectorize, true);
}

static void test_broadcast_f64(void)
{
    check_workload("broadcast_f64", broadcast_f64, simd_split_vectorize, true);
}

static void test_int_i32(void)
{
    check_workload("int_i32", int_i32, simd_split_vectorize, true);
}

static void test_mixed_dtypes(void)
{
    check_workload("mixed", mixed, simd_split_vectorize, false);
}

static void test_compute_at_producer(void)
{
    check_workload("producer", producer, producer_schedule, true);
}

/* A guard that is not monotone keeps its loop (with the reason): correct all the same. */
static void test_not_monotone(void)
{
    check_spoiled("not_monotone", plus_one, simd_split_vectorize, spoil_guard, &NOT_MONOTONE);
}

/* ------------------------------------------------- the pass on hand-built loops */

/* One hand-built vectorized loop v in [0, extent) over f64 buffers X, Y
 * after simd_tail and simd: the text must have the form. An extent of 3 is
 * a chunk of 2 lanes and one of 1 on every CPU; where the CPU has masked
 * moves (AVX2, AVX-512), a guard that passes the first lanes of the chunk
 * of 2 predicates it, and an unguarded extent of 3 is one predicated chunk
 * of the native width. */
typedef struct {
    const char *what;
    int extent;
    tex_stmt *body;
    tail_form form;
} pass_case;

static void check_pass_case(tex_ctx *c, tex_expr *v, const pass_case *k)
{
    texi_lower lw = {c, NULL, NULL, false};
    tex_stmt *loop =
        texi_for_new(c, v, tex_int(c, 0), tex_int(c, k->extent), TEXI_FOR_VECTORIZED, -1, k->body);
    tex_stmt *mid = NULL, *out = NULL;
    TT_CHECK(loop && texi_pass_simd_tail(&lw, loop, &mid) == 0 &&
             texi_pass_simd(&lw, mid, &out) == 0);
    char *text = out ? texi_stmt_str(out) : NULL;
    if (!matches(text, &k->form, true))
        TT_FAILF("%s:\n%s", k->what, text ? text : "(no text)");
    free(text);
}

static void test_pass_forms(void)
{
    tex_ctx *c = tex_ctx_new();
    tex_expr *n = tex_int(c, 64);
    texi_buffer *X = texi_buffer_new(c, "X", TEX_F64, TEXI_SCOPE_GLOBAL, 1, &n);
    texi_buffer *Y = texi_buffer_new(c, "Y", TEX_F64, TEXI_SCOPE_GLOBAL, 1, &n);
    tex_expr *v = texi_var_new(c, "v", TEX_I32), *m = tex_var(c, "m", TEX_I32);
    tex_stmt *S = texi_store_new(
        c, X, v, texi_binary(TEXI_EXPR_MUL, texi_load_new(Y, v), tex_const(c, TEX_F64, 2.0)));
    tex_stmt *S2 = texi_store_new(c, Y, v, tex_const(c, TEX_F64, 1.0));
#define CMP(kind, a, b) texi_binary(TEXI_EXPR_##kind, a, b)
#define GUARD(cond, then_s, else_s) texi_if_new(c, cond, then_s, else_s)
#define I(k) tex_int(c, k)
    tex_expr *mod3 = CMP(FLOORMOD, v, I(3));
    /* a chunk [0, 2) that fails on one lane: checking the wrong end would vectorize it */
    const tail_form per_lane = {{"for (v, 0, 2) {", "for (v, 2, 1) {"}, {"ramp("}};
    bool masks = texi_host_vector_bytes() >= 32;
    const tail_form first_lane = {{"if ramp(0, 1, 2) < broadcast(1, 2)]", "for (v, 2, 1) {"},
                                  {"for (v, 0, 2)"}};
    char native_chunk[32]; /* one predicated chunk of the native width of f64 lanes */
    snprintf(native_chunk, sizeof native_chunk, "< broadcast(3, %d)]",
             texi_host_vector_bytes() / 8);
    /* mask registers: each of 64 / 8 chunks predicated, unrolled */
    bool k_masks = texi_host_vector_bytes() >= 64;
    const tail_form predicated = {{"if ramp(0, 1, 8) < broadcast(m - 56, 8)]"},
                                  {"} else {", "for (chunk"}};
    const tail_form checked_loop = {{"for (chunk, 0, ", "} else {", "ramp("}, {"vectorize_failed"}};
    const tail_form hoisted =
        masks ? (tail_form){{"if (m > 2) {", native_chunk}, {"for ("}}
              : (tail_form){{"if (m > 2) {", "ramp(0, 1, 2)"}, {"for (", "vectorize_failed"}};
    const pass_case cases[] = {
        {"v < 2: a vector chunk, then one lane",
         3,
         GUARD(CMP(LT, v, I(2)), S, NULL),
         {{"ramp(0, 1, 2)", "for (v, 2, 1) {"}, {"vectorize_failed"}}},
        {"v < 1 (rising, checked on the last lane)", 3, GUARD(CMP(LT, v, I(1)), S, NULL),
         masks ? first_lane : per_lane},
        {"1 - v > 0 (falling, checked on the last lane)", 3,
         GUARD(CMP(GT, CMP(SUB, I(1), v), I(0)), S, NULL), masks ? first_lane : per_lane},
        {"v >= 1 (rising, checked on the first lane)", 3, GUARD(CMP(GE, v, I(1)), S, NULL),
         per_lane},
        {"v >= 2: no lane of the chunk [0, 2) passes, so it is left out",
         3,
         GUARD(CMP(GE, v, I(2)), S, NULL),
         {{"for (v, 2, 1) {"}, {"for (v, 0, 2)", "ramp("}}},
        {"m <= v < m + 5, nested: a check per chunk",
         3,
         GUARD(CMP(LE, m, v), GUARD(CMP(LT, v, CMP(ADD, m, I(5))), S, NULL), NULL),
         {{"ramp(0, 1, 2)", "} else {"}, {"vectorize_failed"}}},
        {"v < m over 64: predicated chunks (AVX-512), else a loop over the checked ones", 64,
         GUARD(CMP(LT, v, m), S, NULL), k_masks ? predicated : checked_loop},
        {"v < m over 128: more chunks than are unrolled, a loop over the checked ones", 128,
         GUARD(CMP(LT, v, m), S, NULL), checked_loop},
        {"m > 2: hoisted", 3, GUARD(CMP(GT, m, I(2)), S, NULL), hoisted},
        {"(v + 1) / 2 < m: monotone, not one lane per step, so never a mask",
         64,
         GUARD(CMP(LT, CMP(FLOORDIV, CMP(ADD, v, I(1)), I(2)), m), S, NULL),
         {{"for (chunk, 0, ", "} else {", "for (v, "}, {" if ramp(", "vectorize_failed"}}},
        {"else branch",
         3,
         GUARD(CMP(LT, v, m), S, S2),
         {{"vectorize_failed(guard has an else branch", "for (v, 0, 3) vectorized"}, {"ramp("}}},
        {"floormod",
         3,
         GUARD(CMP(LT, mod3, I(1)), S, NULL),
         {{"vectorize_failed(guard is not monotone", "for (v, 0, 3) vectorized"}, {"ramp("}}},
        {"a load in the guard",
         3,
         GUARD(CMP(GT, texi_load_new(Y, v), tex_const(c, TEX_F64, 0.0)), S2, NULL),
         {{"vectorize_failed(guard is not monotone"}, {"ramp("}}},
        {"a guard beside a store",
         3,
         texi_seq_new(c, 2, (tex_stmt *[]){GUARD(CMP(LT, v, m), S, NULL), S2}),
         {{"vectorize_failed(body is not one guard"}, {"ramp("}}},
    };
#undef I
#undef CMP
#undef GUARD
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_pass_case(c, v, &cases[i]);
    tex_ctx_free(c);
}

int main(void)
{
    TT_RUN(test_elemwise_f32);
    TT_RUN(test_broadcast_f64);
    TT_RUN(test_int_i32);
    TT_RUN(test_mixed_dtypes);
    TT_RUN(test_compute_at_producer);
    TT_RUN(test_not_monotone);
    TT_RUN(test_pass_forms);
    return tt_finish();
}
