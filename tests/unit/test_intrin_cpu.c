/*
 * The CPU built-in intrinsics (src/schedule/intrin_cpu.c):
 * "cpu.gemm_f32_avx512" (C[6, 64] += A[6, 256] . B[256, 64]) and
 * "cpu.gemm_f32_avx2" (C[6, 16] += A[6, 256] . B[256, 16]).
 *
 * Lookup: each built-in's desc (shapes, inputs in first-use order A, B),
 * function names and source (the vector path behind its #if, the portable
 * path); an unknown name gives NULL without recording anything at this level
 * (tex_intrin_builtin reports it with TEX_EINVAL).
 *
 * GEMMs tensorized with each built-in, lowered, built for "cpu" (or on 2
 * threads), run on seeded random non-zero inputs with a poisoned output and
 * compared with the oracle (f32 tolerance; tests/support/ops.h), also
 * through the interpreter. Schedules: C tiled MR x NR, k split by KR with
 * k.outer outside the tensorized axis (RESET + UPDATE calls), or the whole
 * reduction inside it (one BODY call, K == KR); sizes of exactly one tile,
 * multiples of the tile, and tails in M, N and K (13 x 150 x 600, the primes
 * 17 x 131 x 521, 100 x 70 x 150 where K has no whole tile); B cached per
 * column panel (cache_read computed at the panel loop, so B's tile has row
 * stride NR, as in bench/gemm); B given transposed (its tile's column
 * stride is not 1: the run-time check sends the call down the portable
 * path). The generated source must call the intrinsic and carry its source.
 *
 * Any K: K of 1, 7, 64, 100, 255, 256, 257, 576 and 1000 (and 131, 577),
 * with M and N tails, k split by 256 or 64, or left whole; the source must
 * call the instance of the split's depth and, where a constant K leaves a
 * partial last k tile, the instance of depth K % split. Symbolic M, N, K
 * (the last k tile then runs the loop nest). M tails (M % MR rows) call
 * the instance of M % MR rows; row tiles of 1 to the built-in's most rows
 * (7 with AVX-512, 6 with AVX2) call the instance of those rows, and a
 * tile of more is refused when lowering (TEX_EINVAL naming the built-in).
 * Two stages tensorized with
 * separate handles of one depth: its functions are defined once.
 *
 * Every build goes through a fresh temporary TEX_CACHE_DIR.
 */
#include "tt.h"
#include "support/tmpdir.h"
#include "support/ops.h"

#include "schedule/intrin.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

static char cache_dir[] = "/tmp/tex-test-intrin-cpu-XXXXXX";

typedef struct {
    const char *name;   /* the built-in */
    int64_t mr, nr, kr; /* its desc's extents */
    int64_t max_mr;     /* the most rows of an instance */
    const char *prefix; /* of its C functions */
    const char *vec;    /* a token of its vector path */
} builtin;

static const builtin builtins[] = {
    {"cpu.gemm_f32_avx512", 6, 64, 256, 7, "tex_gemm_f32_avx512", "_mm512_fmadd_ps"},
    {"cpu.gemm_f32_avx2", 6, 16, 256, 6, "tex_gemm_f32_avx2", "_mm256_fmadd_ps"},
};
#define N_BUILTINS ((int)(sizeof builtins / sizeof builtins[0]))

typedef enum {
    SPLIT_K,  /* k split by KR, k.outer outside: RESET + UPDATE */
    WHOLE_K,  /* K == KR inside the tensorized axis: BODY */
    PACKED_B, /* SPLIT_K, B cached per column panel */
    B_TRANS   /* SPLIT_K on C = A . BT^T: B's tile has column stride K */
} gemm_mode;

/* ------------------------------------------------------------- lookup */

static void test_lookup(void)
{
    for (int b = 0; b < N_BUILTINS; b++) {
        const builtin *bi = &builtins[b];
        tex_ctx *ctx = tex_ctx_new();
        tex_intrin *in = texi_intrin_builtin_cpu(ctx, bi->name);
        TT_CHECK(in != NULL);
        if (!in) {
            printf("  %s: %s\n", bi->name, tex_errmsg(ctx));
            tex_ctx_free(ctx);
            continue;
        }
        TT_EQ_STR(in->builtin, bi->name);
        TT_EQ_INT(in->n_inputs, 2);
        TT_EQ_STR(tex_tensor_name(in->inputs[0]), "A");
        TT_EQ_STR(tex_tensor_name(in->inputs[1]), "B");
        int64_t want[3][2] = {{bi->mr, bi->kr}, {bi->kr, bi->nr}, {bi->mr, bi->nr}};
        tex_tensor *ts[3] = {in->inputs[0], in->inputs[1], in->desc};
        for (int t = 0; t < 3; t++) {
            TT_EQ_INT(tex_tensor_dtype(ts[t]), TEX_F32);
            for (int d = 0; d < 2; d++) {
                int64_t v = -1;
                TT_CHECK(texi_expr_is_int_const(tex_tensor_dim(ts[t], d), &v));
                TT_EQ_INT(v, want[t][d]);
            }
        }
        const char *fns[3] = {"body", "reset", "update"};
        enum texi_intrin_fn kinds[3] = {TEXI_INTRIN_BODY, TEXI_INTRIN_RESET, TEXI_INTRIN_UPDATE};
        for (int f = 0; f < 3; f++) {
            char want_fn[96];
            snprintf(want_fn, sizeof want_fn, "%s_%s", bi->prefix, fns[f]);
            TT_EQ_STR(in->fn[kinds[f]], want_fn);
            TT_CHECK(in->c_source && strstr(in->c_source, want_fn));
        }
        TT_CHECK(in->c_source && strstr(in->c_source, bi->vec));
        TT_CHECK(in->c_source && strstr(in->c_source, "static inline"));
        TT_EQ_INT(tex_errcode(ctx), 0);
        tex_ctx_free(ctx);
    }
}

static void test_unknown_name(void)
{
    tex_ctx *ctx = tex_ctx_new();
    TT_CHECK(texi_intrin_builtin_cpu(ctx, "cpu.gemm_f64_avx512") == NULL);
    TT_CHECK(texi_intrin_builtin_cpu(ctx, "cuda.wmma_m16n16k16_f16f32") == NULL);
    TT_EQ_INT(tex_errcode(ctx), 0);
    TT_CHECK(tex_intrin_builtin(ctx, "cpu.gemm_f32_sse") == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    tex_ctx_free(ctx);
}

/* Both built-ins can be used in one context, and one kernel. */
static void test_both_in_one_ctx(void)
{
    tex_ctx *ctx = tex_ctx_new();
    TT_CHECK(tex_intrin_builtin(ctx, builtins[0].name) != NULL);
    TT_CHECK(tex_intrin_builtin(ctx, builtins[1].name) != NULL);
    TT_CHECK(tex_intrin_builtin(ctx, builtins[0].name) != NULL);
    TT_EQ_INT(tex_errcode(ctx), 0);
    tex_ctx_free(ctx);
}

/* ------------------------------------------------------- tensorized GEMMs */

/* C[i, j] = sum_k A[i, k] * BT[j, k] */
static tex_tensor *matmul_bt(ops_wl *w, int64_t m, int64_t n, int64_t k)
{
    tex_ctx *c = w->ctx;
    tex_expr *M = tex_int(c, m), *N = tex_int(c, n), *K = tex_int(c, k);
    tex_tensor *A = ops_input(w, "A", 2, (tex_expr *[]){M, K});
    tex_tensor *BT = ops_input(w, "BT", 2, (tex_expr *[]){N, K});
    tex_iter *i = tex_axis(c, "i", M), *j = tex_axis(c, "j", N), *r = tex_reduce_axis(c, "k", K);
    tex_expr *body = tex_mul(TEX_AT(A, tex_iv(i), tex_iv(r)), TEX_AT(BT, tex_iv(j), tex_iv(r)));
    w->out = tex_compute(c, "C", 2, (tex_iter *[]){i, j}, tex_sum(body, 1, &r));
    return w->out;
}

/* Schedules C (the output of w) for bi in mode, tiles of mt rows; 0 or a
 * negative code. The loop order is (panel, row block, k.outer, [mi, ni,
 * ki]) with the panel loop parallel; PACKED_B uses bench/gemm's inner order
 * [mi, ki, ni]. */
static int gemm_schedule(tex_schedule *s, ops_wl *w, const builtin *bi, gemm_mode mode, int64_t kf,
                         int64_t mt)
{
    tex_ctx *ctx = w->ctx;
    tex_tensor *C = w->out;
    tex_intrin *in = tex_intrin_builtin(ctx, bi->name);
    tex_tensor *BL = mode == PACKED_B ? tex_cache_read(s, w->in[1], TEX_SCOPE_LOCAL, 1, &C) : NULL;
    if (!in || (mode == PACKED_B && !BL))
        return -1;
    tex_stage *sc = tex_stage_of(s, C);
    tex_iter *mo, *no, *mi, *ni, *ko, *ki, *k = tex_op_reduce_axis(sc, 0);
    TEXI_TRY(tex_tile(sc, tex_op_axis(sc, 0), tex_op_axis(sc, 1), tex_int(ctx, mt),
                      tex_int(ctx, bi->nr), &mo, &no, &mi, &ni));
    if (mode == WHOLE_K) {
        TEXI_TRY(tex_reorder(sc, 5, (tex_iter *[]){no, mo, mi, ni, k}));
    } else {
        TEXI_TRY(tex_split(sc, k, tex_int(ctx, kf), &ko, &ki));
        tex_iter *i2 = mode == PACKED_B ? ki : ni, *i3 = mode == PACKED_B ? ni : ki;
        TEXI_TRY(tex_reorder(sc, 6, (tex_iter *[]){no, mo, ko, mi, i2, i3}));
    }
    if (BL)
        TEXI_TRY(tex_compute_at(tex_stage_of(s, BL), sc, no));
    TEXI_TRY(tex_parallel(sc, no));
    return tex_tensorize(sc, mi, in);
}

/* Whether src calls the function fn of bi's instance of `rows` rows,
 * `cols` columns and depth d. */
static bool calls_cols(const char *src, const builtin *bi, int64_t rows, int64_t cols, int64_t d,
                       const char *fn)
{
    char call[128];
    snprintf(call, sizeof call, "%s_m%lld_n%lld_k%lld_%s(", bi->prefix, (long long)rows,
             (long long)cols, (long long)d, fn);
    return src && strstr(src, call);
}

/* Whether src calls bi's depth-d instance's function fn. */
static bool calls(const char *src, const builtin *bi, int64_t rows, int64_t d, const char *fn)
{
    char call[128];
    if (rows != bi->mr)
        snprintf(call, sizeof call, "%s_m%lld_k%lld_%s(", bi->prefix, (long long)rows, (long long)d,
                 fn);
    else if (d == bi->kr)
        snprintf(call, sizeof call, "%s_%s(", bi->prefix, fn);
    else
        snprintf(call, sizeof call, "%s_k%lld_%s(", bi->prefix, (long long)d, fn);
    return src && strstr(src, call);
}

/* The calls the kernel of an m x n x k GEMM in mode, k split by kf, rows
 * by mt, must make: the mt-row depth-kf (WHOLE_K: depth-k) instance
 * wherever a whole tile exists, the depth-(k % kf) one for the reduction's
 * last tile when k is a constant that kf does not divide, the (m % mt)-row
 * one for the last rows when m is a constant that mt does not divide, the
 * (n % NR)-column ones (mt rows, and m % mt) for the last columns when n
 * is a constant that NR does not divide. */
static void check_calls(const char *src, const builtin *bi, gemm_mode mode, int64_t m, int64_t n,
                        int64_t k, int64_t kf, int64_t mt, bool sym)
{
    TT_CHECK(src && strstr(src, bi->vec));
    if (mode == WHOLE_K) {
        TT_CHECK(n < bi->nr || calls(src, bi, mt, k, "body"));
        TT_CHECK(sym || n % bi->nr == 0 || calls_cols(src, bi, mt, n % bi->nr, k, "body"));
        return;
    }
    if (m >= mt && n >= bi->nr && k >= kf) {
        TT_CHECK(calls(src, bi, mt, kf, "update"));
        TT_CHECK(calls(src, bi, mt, kf, "reset"));
    }
    if (!sym && k % kf != 0 && m >= mt && n >= bi->nr)
        TT_CHECK(calls(src, bi, mt, k % kf, "update"));
    if (!sym && m % mt != 0 && n >= bi->nr && k >= kf)
        TT_CHECK(calls(src, bi, m % mt, kf, "update"));
    if (!sym && n % bi->nr != 0 && m >= mt && k >= kf)
        TT_CHECK(calls_cols(src, bi, mt, n % bi->nr, kf, "update"));
    if (!sym && n % bi->nr != 0 && m % mt != 0 && m > mt && k >= kf)
        TT_CHECK(calls_cols(src, bi, m % mt, n % bi->nr, kf, "update"));
}

/* Tensorizes an m x n x k GEMM (sizes symbolic when sym) with bi in mode, k
 * split by kf, rows by mt, builds it for target, checks the calls in the
 * source and the results (kernel and interpreter) against the oracle. */
static void gemm_check_rows(const builtin *bi, gemm_mode mode, int64_t m, int64_t n, int64_t k,
                            int64_t kf, int64_t mt, bool sym, const char *target)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "gemm");
    if (mode == B_TRANS)
        matmul_bt(&w, m, n, k);
    else
        ops_matmul(&w, m, n, k, sym);
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    char why[2048] = "";
    tex_func *f = NULL;
    tex_kernel *kn = NULL;
    if (gemm_schedule(s, &w, bi, mode, kf, mt) != 0)
        snprintf(why, sizeof why, "schedule failed: %s", tex_errmsg(ctx));
    else if ((f = ops_lower(&w, s, why, sizeof why)) != NULL && !(kn = tex_build(f, target)))
        snprintf(why, sizeof why, "tex_build(\"%s\") failed: %s", target, tex_errmsg(ctx));
    if (kn) {
        check_calls(tex_kernel_source(kn), bi, mode, m, n, k, kf, mt, sym);
        if (ops_run_and_compare(&w, f, kn, "kernel: ", 1, why, sizeof why) == 0)
            ops_run_compare(&w, f, 2, why, sizeof why);
    }
    if (why[0]) {
        TT_FAILF("%s, mode %d, %lldx%lldx%lld (k split by %lld, rows by %lld%s) on %s: %s",
                 bi->name, (int)mode, (long long)m, (long long)n, (long long)k, (long long)kf,
                 (long long)mt, sym ? ", symbolic" : "", target, why);
        char *txt = f ? tex_func_str(f) : NULL;
        if (txt && getenv("TEX_TEST_VERBOSE"))
            printf("%s\n", txt);
        free(txt);
    }
    tex_kernel_free(kn);
    tex_ctx_free(ctx);
}

/* gemm_check_rows with the built-in's own rows. */
static void gemm_check_k(const builtin *bi, gemm_mode mode, int64_t m, int64_t n, int64_t k,
                         int64_t kf, bool sym, const char *target)
{
    gemm_check_rows(bi, mode, m, n, k, kf, bi->mr, sym, target);
}

/* gemm_check_k with k split by the built-in's own depth, constant sizes. */
static void gemm_check(const builtin *bi, gemm_mode mode, int64_t m, int64_t n, int64_t k,
                       const char *target)
{
    gemm_check_k(bi, mode, m, n, k, bi->kr, false, target);
}

#define SKIP_WITHOUT_CPU()                                                                         \
    do {                                                                                           \
        if (!tex_target_available("cpu"))                                                          \
            TT_SKIP("no C compiler for the \"cpu\" target");                                       \
    } while (0)

/* Exactly one tile: BODY (whole reduction) and RESET + UPDATE. */
static void test_one_tile(void)
{
    SKIP_WITHOUT_CPU();
    for (int b = 0; b < N_BUILTINS; b++) {
        const builtin *bi = &builtins[b];
        gemm_check(bi, WHOLE_K, bi->mr, bi->nr, bi->kr, "cpu");
        gemm_check(bi, SPLIT_K, bi->mr, bi->nr, bi->kr, "cpu");
    }
}

/* Multiples of the tile (no tails), k.outer of extent 2, on 2 threads. */
static void test_whole_tiles(void)
{
    SKIP_WITHOUT_CPU();
    for (int b = 0; b < N_BUILTINS; b++) {
        const builtin *bi = &builtins[b];
        gemm_check(bi, SPLIT_K, 2 * bi->mr, 3 * bi->nr, 2 * bi->kr, "cpu -threads=2");
    }
}

/* Tails in M, N and K; primes; K without a whole tile. */
static void test_tails(void)
{
    SKIP_WITHOUT_CPU();
    for (int b = 0; b < N_BUILTINS; b++) {
        const builtin *bi = &builtins[b];
        gemm_check(bi, SPLIT_K, 2 * bi->mr + 1, 2 * bi->nr + 22, 2 * bi->kr + 88, "cpu");
        gemm_check(bi, SPLIT_K, 17, 131, 521, "cpu -threads=2");
        gemm_check(bi, SPLIT_K, 100, 70, 150, "cpu");
    }
}

/* B cached per column panel (row stride NR in the cache), with and without tails. */
static void test_packed_b(void)
{
    SKIP_WITHOUT_CPU();
    for (int b = 0; b < N_BUILTINS; b++) {
        const builtin *bi = &builtins[b];
        gemm_check(bi, PACKED_B, 2 * bi->mr, 2 * bi->nr, 2 * bi->kr, "cpu -threads=2");
        gemm_check(bi, PACKED_B, 2 * bi->mr + 1, 2 * bi->nr + 22, 2 * bi->kr + 88, "cpu");
    }
}

/* B transposed: the tile's column stride is K, not 1 (portable path). */
static void test_strided_b(void)
{
    SKIP_WITHOUT_CPU();
    for (int b = 0; b < N_BUILTINS; b++) {
        const builtin *bi = &builtins[b];
        gemm_check(bi, B_TRANS, bi->mr + 1, bi->nr + 5, bi->kr + 7, "cpu");
    }
}

/* Any K: k split by the default 256 and by 64 (calls of the depth-256 /
 * depth-64 instances, the last k tile on the depth-(K % split) one), and k
 * left whole (one BODY call of the depth-K instance), with M and N tails. */
static void test_any_k(void)
{
    SKIP_WITHOUT_CPU();
    static const int64_t ks[] = {1, 7, 64, 100, 255, 256, 257, 576, 1000};
    for (int b = 0; b < N_BUILTINS; b++) {
        const builtin *bi = &builtins[b];
        for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
            int64_t m = 2 * bi->mr + 1, n = bi->nr + 5;
            gemm_check_k(bi, SPLIT_K, m, n, ks[i], 256, false, "cpu");
            if (ks[i] % 64 != 0 || ks[i] == 576)
                gemm_check_k(bi, SPLIT_K, m, n, ks[i], 64, false, "cpu -threads=2");
            if (ks[i] <= 100)
                gemm_check_k(bi, WHOLE_K, bi->mr, bi->nr, ks[i], ks[i], false, "cpu");
        }
        gemm_check_k(bi, PACKED_B, 3 * bi->mr, 2 * bi->nr + 3, 577, 64, false, "cpu -threads=2");
        gemm_check_k(bi, SPLIT_K, 2 * bi->mr, bi->nr, 131, 131, false, "cpu");
    }
}

/* Tiles of other rows than the built-in's (rows split by 1 to its most
 * rows): calls of the instance of those rows, the last rows on the
 * (M % rows)-row one, with tails in N and K; a 7-row output as 4 + 3 rows,
 * and with AVX-512 as one 7-row tile. */
static void test_row_tiles(void)
{
    SKIP_WITHOUT_CPU();
    for (int b = 0; b < N_BUILTINS; b++) {
        const builtin *bi = &builtins[b];
        TT_EQ_INT(texi_intrin_cpu_max_rows(bi->name), bi->max_mr);
        for (int64_t mt = 1; mt <= bi->max_mr; mt++) {
            if (mt == bi->mr)
                continue;
            gemm_check_rows(bi, SPLIT_K, 2 * mt + 1, bi->nr + 5, 100, 64, mt, false, "cpu");
            gemm_check_rows(bi, WHOLE_K, mt, bi->nr, 37, 37, mt, false, "cpu");
        }
        gemm_check_rows(bi, PACKED_B, 7, 2 * bi->nr, 130, 64, 4, false, "cpu -threads=2");
        gemm_check_rows(bi, SPLIT_K, 7, bi->nr, 64, 64, 4, true, "cpu");
        if (bi->max_mr >= 7)
            gemm_check_rows(bi, PACKED_B, 7, 2 * bi->nr, 130, 64, 7, false, "cpu -threads=2");
    }
}

/* Tiles cut in N: the last column tile calls the instance of N % NR
 * columns (its last vector masked unless N % NR is a multiple of the
 * vector width), also on the M tail's rows and with B packed; N below NR
 * runs on that instance alone; a symbolic N runs the loop nest there. */
static void test_col_tiles(void)
{
    SKIP_WITHOUT_CPU();
    for (int b = 0; b < N_BUILTINS; b++) {
        const builtin *bi = &builtins[b];
        int64_t w = bi->nr == 64 ? 16 : 8;
        const int64_t ns[] = {bi->nr + 1, bi->nr + w, 2 * bi->nr - 1, bi->nr + w + 3, w + 3, 5};
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            gemm_check_rows(bi, SPLIT_K, 2 * bi->mr + 1, ns[i], 100, 64, bi->mr, false, "cpu");
            gemm_check_rows(bi, PACKED_B, 13, ns[i], 130, 64, 4, false, "cpu -threads=2");
            gemm_check_rows(bi, WHOLE_K, 5, ns[i], 37, 37, 5, false, "cpu");
        }
        gemm_check_rows(bi, SPLIT_K, 7, bi->nr + 3, 64, 64, 4, true, "cpu");
    }
}

/* A tensorized GEMM computed per chunk of 20 rows of its relu, its row
 * tiles of 6 (M = 23: the last chunk holds 3 rows, the last tile of the
 * first only 2 where the (M % 6)-row instance would write 5): the M tail's
 * instance only where its rows are all inside the chunk; whole and partial
 * column panels. */
static void test_tail_in_region(void)
{
    SKIP_WITHOUT_CPU();
    for (int b = 0; b < N_BUILTINS; b++) {
        const builtin *bi = &builtins[b];
        const int64_t ns[] = {bi->nr, bi->nr - 5};
        for (int i = 0; i < 2; i++) {
            tex_ctx *ctx = tex_ctx_new();
            ops_wl w;
            ops_init(&w, ctx, "region");
            tex_tensor *C = ops_matmul(&w, 23, ns[i], 19, false);
            w.out = tex_op_relu(ctx, "Y", C);
            tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
            tex_stage *sy = tex_stage_of(s, w.out), *sc = tex_stage_of(s, C);
            tex_iter *yo, *yi, *mo, *mi;
            char why[2048] = "";
            tex_func *f = NULL;
            tex_kernel *kn = NULL;
            if (tex_split(sy, tex_op_axis(sy, 0), tex_int(ctx, 20), &yo, &yi) ||
                tex_compute_at(sc, sy, yo) ||
                tex_split(sc, tex_op_axis(sc, 0), tex_int(ctx, 6), &mo, &mi) ||
                tex_reorder(
                    sc, 4, (tex_iter *[]){mo, mi, tex_op_axis(sc, 1), tex_op_reduce_axis(sc, 0)}) ||
                tex_tensorize(sc, mi, tex_intrin_builtin(ctx, bi->name)))
                snprintf(why, sizeof why, "schedule failed: %s", tex_errmsg(ctx));
            else if ((f = ops_lower(&w, s, why, sizeof why)) && !(kn = tex_build(f, "cpu")))
                snprintf(why, sizeof why, "tex_build failed: %s", tex_errmsg(ctx));
            if (kn)
                ops_run_and_compare(&w, f, kn, "kernel: ", 1, why, sizeof why);
            if (why[0])
                TT_FAILF("%s, 23 x %lld x 19 in chunks of 20 rows: %s", bi->name, (long long)ns[i],
                         why);
            tex_kernel_free(kn);
            tex_ctx_free(ctx);
        }
    }
}

/* Row tiles of more than the built-in's most rows do not match it: tex_lower
 * fails with TEX_EINVAL naming the intrinsic, and the context stays usable. */
static void test_row_tiles_too_many(void)
{
    for (int b = 0; b < N_BUILTINS; b++) {
        const builtin *bi = &builtins[b];
        tex_ctx *ctx = tex_ctx_new();
        ops_wl w;
        ops_init(&w, ctx, "gemm");
        ops_matmul(&w, 2 * (bi->max_mr + 1), bi->nr, 64, false);
        tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
        TT_EQ_INT(gemm_schedule(s, &w, bi, SPLIT_K, 64, bi->max_mr + 1), 0);
        char why[2048] = "";
        TT_CHECK(ops_lower(&w, s, why, sizeof why) == NULL);
        TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
        TT_CHECK(strstr(tex_errmsg(ctx), bi->name) != NULL);
        tex_ctx_free(ctx);
    }
}

/* Symbolic M, N, K: the depth comes from the split factor; the last k tile
 * (unknown K % 64) runs the loop nest. */
static void test_any_k_symbolic(void)
{
    SKIP_WITHOUT_CPU();
    for (int b = 0; b < N_BUILTINS; b++) {
        const builtin *bi = &builtins[b];
        gemm_check_k(bi, SPLIT_K, 2 * bi->mr + 1, bi->nr + 5, 100, 64, true, "cpu");
        gemm_check_k(bi, PACKED_B, 2 * bi->mr, 2 * bi->nr, 128, 64, true, "cpu -threads=2");
    }
}

/* Stage X tiled by bi's MR x NR with its whole reduction inside the tile,
 * tensorized with a handle of its own; 0 or a negative code. */
static int whole_k_stage(tex_schedule *s, tex_tensor *x, const builtin *bi)
{
    tex_ctx *ctx = tex_tensor_ctx(x);
    tex_stage *st = tex_stage_of(s, x);
    tex_iter *mo, *no, *mi, *ni;
    TEXI_TRY(tex_tile(st, tex_op_axis(st, 0), tex_op_axis(st, 1), tex_int(ctx, bi->mr),
                      tex_int(ctx, bi->nr), &mo, &no, &mi, &ni));
    TEXI_TRY(tex_reorder(st, 5, (tex_iter *[]){mo, no, mi, ni, tex_op_reduce_axis(st, 0)}));
    return tex_tensorize(st, mi, tex_intrin_builtin(ctx, bi->name));
}

/* Two GEMM stages (T = A . B, C = T . B2, both of depth NR) in one kernel,
 * each tensorized with its own handle of one built-in: the source defines
 * the depth-NR micro-kernel once, and the result matches the oracle. */
static void test_two_stages_one_depth(void)
{
    SKIP_WITHOUT_CPU();
    const builtin *bi = &builtins[1];
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "gemm2");
    tex_expr *M = tex_int(ctx, 2 * bi->mr + 1), *N = tex_int(ctx, bi->nr);
    tex_tensor *A = ops_input(&w, "A", 2, (tex_expr *[]){M, N});
    tex_tensor *B = ops_input(&w, "B", 2, (tex_expr *[]){N, N});
    tex_tensor *B2 = ops_input(&w, "B2", 2, (tex_expr *[]){N, N});
    tex_iter *i = tex_axis(ctx, "i", M), *j = tex_axis(ctx, "j", N);
    tex_iter *k = tex_reduce_axis(ctx, "k", N), *l = tex_reduce_axis(ctx, "l", N);
    tex_expr *ab = tex_mul(TEX_AT(A, tex_iv(i), tex_iv(k)), TEX_AT(B, tex_iv(k), tex_iv(j)));
    tex_tensor *T = ops_mid(&w, tex_compute(ctx, "T", 2, (tex_iter *[]){i, j}, tex_sum(ab, 1, &k)));
    tex_expr *tb = tex_mul(TEX_AT(T, tex_iv(i), tex_iv(l)), TEX_AT(B2, tex_iv(l), tex_iv(j)));
    w.out = tex_compute(ctx, "C", 2, (tex_iter *[]){i, j}, tex_sum(tb, 1, &l));
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    char why[2048] = "", def[128];
    tex_func *f = NULL;
    tex_kernel *kn = NULL;
    if (whole_k_stage(s, T, bi) != 0 || whole_k_stage(s, w.out, bi) != 0)
        snprintf(why, sizeof why, "schedule failed: %s", tex_errmsg(ctx));
    else if ((f = ops_lower(&w, s, why, sizeof why)) && !(kn = tex_build(f, "cpu")))
        snprintf(why, sizeof why, "tex_build failed: %s", tex_errmsg(ctx));
    if (kn) {
        const char *src = tex_kernel_source(kn), *at;
        snprintf(def, sizeof def, "void %s_k%lld_body(", bi->prefix, (long long)bi->nr);
        at = src ? strstr(src, def) : NULL;
        TT_CHECK(at && !strstr(at + 1, def));
        ops_run_and_compare(&w, f, kn, "kernel: ", 3, why, sizeof why);
    }
    if (why[0])
        TT_FAILF("two tensorized stages: %s", why);
    tex_kernel_free(kn);
    tex_ctx_free(ctx);
}

/* texi_intrin_builtin_cpu_depth / _shape: the same handle for the
 * built-in's own shape, a named instance for another, NULL for a depth
 * below 1 or rows outside [1, the built-in's most rows]. */
static void test_depth_instances(void)
{
    const builtin *bi = &builtins[0];
    tex_ctx *ctx = tex_ctx_new();
    tex_intrin *in = tex_intrin_builtin(ctx, bi->name);
    tex_intrin *d64 = texi_intrin_builtin_cpu_depth(ctx, in, 64);
    TT_CHECK(texi_intrin_builtin_cpu_depth(ctx, in, 256) == in);
    TT_CHECK(d64 && texi_intrin_cpu_depth(d64) == 64 && strcmp(d64->builtin, bi->name) == 0);
    TT_CHECK(d64 && strstr(d64->name, "depth 64"));
    TT_CHECK(texi_intrin_builtin_cpu_depth(ctx, in, 0) == NULL);
    tex_intrin *m1 = texi_intrin_builtin_cpu_shape(ctx, in, 1, bi->nr, 512);
    TT_CHECK(m1 && texi_intrin_cpu_rows(m1) == 1 && texi_intrin_cpu_depth(m1) == 512);
    TT_CHECK(m1 && m1->fn[TEXI_INTRIN_UPDATE] &&
             strstr(m1->fn[TEXI_INTRIN_UPDATE], "_m1_k512_update"));
    tex_intrin *m7 = texi_intrin_builtin_cpu_shape(ctx, in, bi->max_mr, bi->nr, 64);
    TT_CHECK(m7 && texi_intrin_cpu_rows(m7) == 7 && strstr(m7->name, "7 rows, depth 64"));
    TT_CHECK(texi_intrin_builtin_cpu_shape(ctx, in, bi->max_mr + 1, bi->nr, 64) == NULL);
    TT_CHECK(texi_intrin_builtin_cpu_shape(ctx, tex_intrin_builtin(ctx, builtins[1].name),
                                           builtins[1].max_mr + 1, builtins[1].nr, 64) == NULL);
    TT_CHECK(texi_intrin_builtin_cpu_shape(ctx, in, 0, bi->nr, 64) == NULL);
    tex_intrin *n9 = texi_intrin_builtin_cpu_shape(ctx, in, 4, 9, 64);
    TT_CHECK(n9 && texi_intrin_cpu_cols(n9) == 9 && texi_intrin_cpu_rows(n9) == 4 &&
             strstr(n9->name, "4 rows, 9 columns, depth 64") &&
             strstr(n9->fn[TEXI_INTRIN_UPDATE], "_m4_n9_k64_update"));
    TT_EQ_INT(texi_intrin_cpu_cols(in), bi->nr);
    TT_CHECK(texi_intrin_builtin_cpu_depth(ctx, n9, 64) == n9);
    TT_CHECK(texi_intrin_builtin_cpu_shape(ctx, in, 4, 0, 64) == NULL);
    TT_CHECK(texi_intrin_builtin_cpu_shape(ctx, in, 4, bi->nr + 1, 64) == NULL);
    TT_EQ_INT(tex_errcode(ctx), 0);
    tex_ctx_free(ctx);
}

int main(void)
{
    if (!tt_private_cache(cache_dir, "test_intrin_cpu"))
        return 1;
    TT_RUN(test_lookup);
    TT_RUN(test_unknown_name);
    TT_RUN(test_both_in_one_ctx);
    TT_RUN(test_one_tile);
    TT_RUN(test_whole_tiles);
    TT_RUN(test_tails);
    TT_RUN(test_packed_b);
    TT_RUN(test_strided_b);
    TT_RUN(test_any_k);
    TT_RUN(test_any_k_symbolic);
    TT_RUN(test_row_tiles);
    TT_RUN(test_col_tiles);
    TT_RUN(test_tail_in_region);
    TT_RUN(test_row_tiles_too_many);
    TT_RUN(test_depth_instances);
    TT_RUN(test_two_stages_one_depth);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
