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
    const char *prefix; /* of its C functions */
    const char *vec;    /* a token of its vector path */
} builtin;

static const builtin builtins[] = {
    {"cpu.gemm_f32_avx512", 6, 64, 256, "tex_gemm_f32_avx512", "_mm512_fmadd_ps"},
    {"cpu.gemm_f32_avx2", 6, 16, 256, "tex_gemm_f32_avx2", "_mm256_fmadd_ps"},
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

/* Schedules C (the output of w) for bi in mode; 0 or a negative code. The
 * loop order is (panel, row block, k.outer, [mi, ni, ki]) with the panel
 * loop parallel; PACKED_B uses bench/gemm's inner order [mi, ki, ni]. */
static int gemm_schedule(tex_schedule *s, ops_wl *w, const builtin *bi, gemm_mode mode)
{
    tex_ctx *ctx = w->ctx;
    tex_tensor *C = w->out;
    tex_intrin *in = tex_intrin_builtin(ctx, bi->name);
    tex_tensor *BL = mode == PACKED_B ? tex_cache_read(s, w->in[1], TEX_SCOPE_LOCAL, 1, &C) : NULL;
    if (!in || (mode == PACKED_B && !BL))
        return -1;
    tex_stage *sc = tex_stage_of(s, C);
    tex_iter *mo, *no, *mi, *ni, *ko, *ki, *k = tex_op_reduce_axis(sc, 0);
    TEXI_TRY(tex_tile(sc, tex_op_axis(sc, 0), tex_op_axis(sc, 1), tex_int(ctx, bi->mr),
                      tex_int(ctx, bi->nr), &mo, &no, &mi, &ni));
    if (mode == WHOLE_K) {
        TEXI_TRY(tex_reorder(sc, 5, (tex_iter *[]){no, mo, mi, ni, k}));
    } else {
        TEXI_TRY(tex_split(sc, k, tex_int(ctx, bi->kr), &ko, &ki));
        tex_iter *i2 = mode == PACKED_B ? ki : ni, *i3 = mode == PACKED_B ? ni : ki;
        TEXI_TRY(tex_reorder(sc, 6, (tex_iter *[]){no, mo, ko, mi, i2, i3}));
    }
    if (BL)
        TEXI_TRY(tex_compute_at(tex_stage_of(s, BL), sc, no));
    TEXI_TRY(tex_parallel(sc, no));
    return tex_tensorize(sc, mi, in);
}

/* Tensorizes an m x n x k GEMM with bi in mode, builds it for target, checks
 * the source and the results (kernel and interpreter) against the oracle. */
static void gemm_check(const builtin *bi, gemm_mode mode, int64_t m, int64_t n, int64_t k,
                       const char *target)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "gemm");
    if (mode == B_TRANS)
        matmul_bt(&w, m, n, k);
    else
        ops_matmul(&w, m, n, k, false);
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    char why[2048] = "";
    tex_func *f = NULL;
    tex_kernel *kn = NULL;
    if (gemm_schedule(s, &w, bi, mode) != 0)
        snprintf(why, sizeof why, "schedule failed: %s", tex_errmsg(ctx));
    else if ((f = ops_lower(&w, s, why, sizeof why)) != NULL && !(kn = tex_build(f, target)))
        snprintf(why, sizeof why, "tex_build(\"%s\") failed: %s", target, tex_errmsg(ctx));
    if (kn) {
        char call[96];
        snprintf(call, sizeof call, "%s_%s(", bi->prefix, mode == WHOLE_K ? "body" : "update");
        const char *src = tex_kernel_source(kn);
        TT_CHECK(src && strstr(src, call));
        TT_CHECK(src && strstr(src, bi->vec));
        if (mode != WHOLE_K) {
            snprintf(call, sizeof call, "%s_reset(", bi->prefix);
            TT_CHECK(src && strstr(src, call));
        }
        if (ops_run_and_compare(&w, f, kn, "kernel: ", 1, why, sizeof why) == 0)
            ops_run_compare(&w, f, 2, why, sizeof why);
    }
    if (why[0]) {
        TT_FAILF("%s, mode %d, %lldx%lldx%lld on %s: %s", bi->name, (int)mode, (long long)m,
                 (long long)n, (long long)k, target, why);
        char *txt = f ? tex_func_str(f) : NULL;
        if (txt && getenv("TEX_TEST_VERBOSE"))
            printf("%s\n", txt);
        free(txt);
    }
    tex_kernel_free(kn);
    tex_ctx_free(ctx);
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

int main(void)
{
    if (!mkdtemp(cache_dir) || setenv("TEX_CACHE_DIR", cache_dir, 1) != 0) {
        printf("test_intrin_cpu: cannot make a temporary cache directory\n");
        return 1;
    }
    TT_RUN(test_lookup);
    TT_RUN(test_unknown_name);
    TT_RUN(test_both_in_one_ctx);
    TT_RUN(test_one_tile);
    TT_RUN(test_whole_tiles);
    TT_RUN(test_tails);
    TT_RUN(test_packed_b);
    TT_RUN(test_strided_b);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
