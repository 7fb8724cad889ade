/*
 * bench/gemm: f32 C = A·B (row-major, M×K times K×N), tex's best schedule
 * against OpenBLAS's cblas_sgemm with the same thread count, in one run.
 *
 * Cases: 256³, 512³, 1024³, 2048³ and 1024×1024×64 (M×N×K), each on 1 and 2
 * threads; one output line per case (bench/common.h's format, anchor=openblas).
 * tex's result is checked against OpenBLAS's (relative error ≤ 1e-3) before
 * anything is timed.
 *
 * The schedule starts from TVM's "How to optimize GEMM on CPU" final schedule
 * and is tuned for this machine (AVX-512, 1 MiB+ L2 per core):
 *   packedB[N/bn, K, bn] = B[k, x*bn + z]   (B packed into column panels, so
 *                                            the inner loop reads contiguously)
 *   C tiled mb × bn; CC = cache_write(C, local) computed at C's tile, so the
 *   mb × bn accumulator stays in registers; CC's k split by kf, loop order
 *   (ko, ki, mc, nc): ki and mc unrolled, nc (bn wide) vectorized; the panel
 *   loop parallel, so each thread owns its own packed panels.
 * The variants below are the shapes tried (gemm --tune prints them all on
 * 1024³ and 2048³, 2 threads); the benchmark reports the first on a CPU
 * with AVX-512 (mb = 6 rows × 4 AVX-512 vectors = 24 accumulator registers;
 * on an AVX-512 Xeon within noise of mb = 6, kf = 8 and of mb = 4, clearly
 * ahead of mb = 8, bn = 32 and of the tutorial's 32 × 32 tile), and
 * bn16_mb6_kf4_panel on one with AVX2 only (6 × 2 ymm = 12 accumulators of
 * its 16 vector registers; the AVX-512 shape would spill). The "_kc"
 * variants block k outside the tiles, Goto's loop order without packing A
 * (gemm_schedule_kblocked); on a 2-core AVX2 EPYC they reached 0.74x (1024³)
 * and 0.75-0.87x (2048³) of OpenBLAS against bn16_mb6_kf4_panel's 1.00x and
 * 0.92x in the same run.
 *
 * Two more lines, "tutorial1024/t1" and "/t2", time the tutorial's own
 * schedule, untuned, as make demo runs it (variant "tutorial": a 32 x 32 tile,
 * cache_write to a global buffer, loop order (ko, mc, ki, nc), ki unrolled,
 * nc vectorized, the row-tile loop parallel). On a 2-core AVX-512 Xeon:
 * 0.82-0.88x OpenBLAS (t2) and 0.87-0.89x (t1) since pass jam_outer runs two
 * k steps per pass over the tile's rows (0.73-0.86x and 0.82-0.83x before;
 * docs/passes.md).
 *
 * Each case also gets a "/tensorized" line: a tensorized schedule, which
 * leaves the inner loops to a built-in micro-kernel (src/schedule/intrin_cpu.c:
 * cpu.gemm_f32_avx512, C[6, 64] += A[6, 256] . B[256, 64], where the CPU has
 * AVX-512, else cpu.gemm_f32_avx2, 6 x 16 x 256). B is cached per 64-column
 * panel by the thread that owns the panel, C tiled 6 x 64, k split by 256,
 * loop order (panel, row block, k.outer) with the panel loop parallel and
 * the rest one RESET / UPDATE call per tile (gemm_define_tensorized); a K of
 * at most 256 is left whole, one BODY call of the depth-K instance per tile
 * (the 1024x1024x64 case: 1.28x OpenBLAS on 1 thread of a 2-core AVX2 EPYC
 * under load, where splitting k by 256 ran the loop nest, 0.26-0.35x, and
 * RESET + the depth-64 UPDATE reached 0.57x). The last M % 6 rows call
 * the (M % 6)-row instance, a K % 256 tail the depth-(K % 256) one.
 *
 * A fair anchor: OpenBLAS 0.3.21's DYNAMIC_ARCH does not know recent Xeon
 * models and falls back to its Prescott (SSE3) kernels, 3-4x slower than its
 * SkylakeX ones. When OPENBLAS_CORETYPE is unset and OpenBLAS reports a core
 * older than the CPU's vector unit, the program re-executes itself with
 * OPENBLAS_CORETYPE=SkylakeX (AVX-512) or Haswell (AVX2), so that tex is
 * compared with OpenBLAS at its best (noted on stderr).
 *
 * usage: gemm              the benchmark
 *        gemm S            only the cases whose description contains S
 *                          (for example "tutorial" or "1024x1024x1024/t2")
 *        gemm --tune [S]   every variant (the tensorized ones too; only those
 *                          whose name contains S) on 1024³ and 2048³, 2 threads
 */
#include "common.h"
#include "gemm_packed.h"
#include "openblas.h"

#include <cblas.h>
#include <stdbool.h>
#include <string.h>
#include <tex/tex.h>
#include <unistd.h>

typedef struct {
    const char *name;
    int bn;             /* panel width (columns of C per tile; a multiple of 16) */
    int mb;             /* rows of C per tile */
    int kf;             /* unroll factor of k; tensorized: the intrinsic's k depth */
    bool panel_outer;   /* loop order (panel, row block) rather than (row block, panel) */
    const char *intrin; /* tensorized with this built-in (bn, mb, kf: its extents), or NULL */
    bool tutorial;      /* the tutorial's own schedule (make demo's), untuned */
    int kc;             /* k blocked by kc outside the tiles, C accumulated in place; 0: no */
    int mc;             /* with kc: rows of A per cache block (a multiple of mb) */
} gemm_variant;

static const gemm_variant variants[] = {
    {"bn64_mb6_kf4_panel", 64, 6, 4, true, NULL, false, 0, 0},
    {"bn64_mb6_kf8_panel", 64, 6, 8, true, NULL, false, 0, 0},
    {"bn64_mb8_kf4_panel", 64, 8, 4, true, NULL, false, 0, 0},
    {"bn64_mb4_kf4_panel", 64, 4, 4, true, NULL, false, 0, 0},
    {"bn32_mb8_kf4_panel", 32, 8, 4, true, NULL, false, 0, 0},
    {"bn64_mb6_kf4_rows", 64, 6, 4, false, NULL, false, 0, 0},
    {"bn32_mb32_kf4_tvm", 32, 32, 4, false, NULL, false, 0, 0},
    {"bn16_mb6_kf4_panel", 16, 6, 4, true, NULL, false, 0, 0},
    {"tensorized_avx512", 64, 6, 256, true, "cpu.gemm_f32_avx512", false, 0, 0},
    {"tensorized_avx2", 16, 6, 256, true, "cpu.gemm_f32_avx2", false, 0, 0},
    {"tutorial", 32, 32, 4, false, NULL, true, 0, 0},
    {"bn16_mb6_kf4_kc256_mc96", 16, 6, 4, true, NULL, false, 256, 96},
    {"bn16_mb6_kf4_kc512_mc96", 16, 6, 4, true, NULL, false, 512, 96},
};
enum {
    N_VARIANTS = sizeof variants / sizeof variants[0],
    V_AVX2 = 7,
    V_TENSOR_AVX512 = 8,
    V_TENSOR_AVX2 = 9,
    V_TUTORIAL = 10
};

typedef struct {
    int64_t m, n, k;
    int threads;
    tex_kernel *kernel;
    DLTensor *a, *b, *c; /* tex's arrays */
    float *c_blas;       /* OpenBLAS's result */
} gemm_case;

/* The k-blocked schedule (Goto's): k split by kc outermost and the rows by
 * mc, so that a thread's A block (mc x kc) stays in its L2 and a packed B
 * panel slice (kc x bn) in L1 while C's mb x bn tiles accumulate in place
 * across the k blocks (in registers within one: pass promote). Loop order
 * (k block, row block, panel, row tile, k.outer, k.inner, rows, columns),
 * k.inner (kf) and the rows unrolled, the columns vectorized, the row-block
 * loop parallel. t: A, B, packedB, C. The lowered function or NULL. */
static tex_func *gemm_schedule_kblocked(tex_ctx *ctx, tex_schedule *s, tex_tensor *const t[4],
                                        const gemm_variant *v)
{
    tex_stage *sc = tex_stage_of(s, t[3]), *sp = tex_stage_of(s, t[2]);
    tex_iter *mo, *no, *mi, *ni, *mb, *mt, *kb, *kr, *ko, *ki;
    int rc = tex_tile(sc, tex_op_axis(sc, 0), tex_op_axis(sc, 1), tex_int(ctx, v->mb),
                      tex_int(ctx, v->bn), &mo, &no, &mi, &ni);
    rc = rc ? rc : tex_split(sc, mo, tex_int(ctx, v->mc / v->mb), &mb, &mt);
    rc = rc ? rc : tex_split(sc, tex_op_reduce_axis(sc, 0), tex_int(ctx, v->kc), &kb, &kr);
    rc = rc ? rc : tex_split(sc, kr, tex_int(ctx, v->kf), &ko, &ki);
    rc = rc ? rc : tex_reorder(sc, 8, (tex_iter *[]){kb, mb, no, mt, ko, ki, mi, ni});
    rc = rc ? rc : tex_unroll(sc, ki);
    rc = rc ? rc : tex_unroll(sc, mi);
    rc = rc ? rc : tex_vectorize(sc, ni);
    rc = rc ? rc : tex_parallel(sc, mb);
    rc = rc ? rc : tex_vectorize(sp, tex_op_axis(sp, 2));
    rc = rc ? rc : tex_parallel(sp, tex_op_axis(sp, 0));
    return rc ? NULL : tex_lower_tensors(s, "gemm", 3, (tex_tensor *[]){t[0], t[1], t[3]});
}

/* packedB and C over it, with v's schedule; the lowered function or NULL. */
static tex_func *gemm_define(tex_ctx *ctx, const gemm_case *g, const gemm_variant *v)
{
    tex_tensor *t[4];
    gemm_packed_define(ctx, g->m, g->n, g->k, v->bn, t);
    tex_tensor *A = t[0], *B = t[1], *P = t[2], *C = t[3];
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    if (!s)
        return NULL;
    if (v->tutorial) /* examples/demo.c's schedule, as make demo runs it */
        return gemm_packed_tutorial(ctx, s, t, v->bn, v->kf, "gemm");
    if (v->kc)
        return gemm_schedule_kblocked(ctx, s, t, v);
    tex_tensor *CC = tex_cache_write(s, C, TEX_SCOPE_LOCAL);
    if (!CC)
        return NULL;
    tex_stage *sc = tex_stage_of(s, C), *scc = tex_stage_of(s, CC), *sp = tex_stage_of(s, P);
    tex_iter *mo, *no, *mi, *ni, *ko, *ki;
    int rc = tex_tile(sc, tex_op_axis(sc, 0), tex_op_axis(sc, 1), tex_int(ctx, v->mb),
                      tex_int(ctx, v->bn), &mo, &no, &mi, &ni);
    if (rc == 0 && v->panel_outer)
        rc = tex_reorder(sc, 4, (tex_iter *[]){no, mo, mi, ni});
    tex_iter *outer = v->panel_outer ? no : mo, *inner = v->panel_outer ? mo : no;
    rc = rc ? rc : tex_compute_at(scc, sc, inner);
    rc = rc ? rc : tex_vectorize(sc, ni);
    rc = rc ? rc : tex_parallel(sc, outer);
    tex_iter *mc = tex_op_axis(scc, 0), *nc = tex_op_axis(scc, 1);
    rc = rc ? rc : tex_split(scc, tex_op_reduce_axis(scc, 0), tex_int(ctx, v->kf), &ko, &ki);
    rc = rc ? rc : tex_reorder(scc, 4, (tex_iter *[]){ko, ki, mc, nc});
    rc = rc ? rc : tex_vectorize(scc, nc);
    rc = rc ? rc : tex_unroll(scc, ki);
    rc = rc ? rc : tex_unroll(scc, mc);
    rc = rc ? rc : tex_vectorize(sp, tex_op_axis(sp, 2));
    rc = rc ? rc : tex_parallel(sp, tex_op_axis(sp, 0));
    if (rc)
        return NULL;
    return tex_lower_tensors(s, "gemm", 3, (tex_tensor *[]){A, B, C});
}

/* The tensorized schedule: B cached per bn-column panel (cache_read computed
 * at the panel loop, so the cache is the panel [K, bn] and the intrinsic's B
 * tile has row stride bn), C tiled mb x bn, k split by kf, loop order (panel,
 * row block, k.outer, [rows, k.inner, columns]), the panel loop parallel, and
 * the rows loop tensorized with v->intrin (RESET + UPDATE calls; the last,
 * partial row tile on a built-in instance of fewer rows). K <= kf: k not split, order
 * (panel, row block, [rows, k, columns]), BODY calls, so C is written once
 * instead of being zeroed, read and written. The lowered function or NULL. */
static tex_func *gemm_define_tensorized(tex_ctx *ctx, const gemm_case *g, const gemm_variant *v)
{
    tex_expr *M = tex_int(ctx, g->m), *N = tex_int(ctx, g->n), *K = tex_int(ctx, g->k);
    tex_tensor *A = tex_placeholder(ctx, "A", TEX_F32, 2, (tex_expr *[]){M, K});
    tex_tensor *B = tex_placeholder(ctx, "B", TEX_F32, 2, (tex_expr *[]){K, N});
    tex_iter *i = tex_axis(ctx, "m", M), *j = tex_axis(ctx, "n", N);
    tex_iter *r = tex_reduce_axis(ctx, "k", K);
    tex_expr *prod = tex_mul(TEX_AT(A, tex_iv(i), tex_iv(r)), TEX_AT(B, tex_iv(r), tex_iv(j)));
    tex_tensor *C = tex_compute(ctx, "C", 2, (tex_iter *[]){i, j}, tex_sum(prod, 1, &r));
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_tensor *BL = tex_cache_read(s, B, TEX_SCOPE_LOCAL, 1, &C);
    tex_intrin *in = tex_intrin_builtin(ctx, v->intrin);
    if (!BL || !in)
        return NULL;
    tex_stage *sc = tex_stage_of(s, C), *sb = tex_stage_of(s, BL);
    tex_iter *mo, *no, *mi, *ni, *ko, *ki;
    int rc = tex_tile(sc, i, j, tex_int(ctx, v->mb), tex_int(ctx, v->bn), &mo, &no, &mi, &ni);
    if (g->k <= v->kf) { /* the whole reduction in one BODY call of the depth-K instance */
        rc = rc ? rc : tex_reorder(sc, 5, (tex_iter *[]){no, mo, mi, r, ni});
    } else {
        rc = rc ? rc : tex_split(sc, r, tex_int(ctx, v->kf), &ko, &ki);
        rc = rc ? rc : tex_reorder(sc, 6, (tex_iter *[]){no, mo, ko, mi, ki, ni});
    }
    rc = rc ? rc : tex_compute_at(sb, sc, no);
    rc = rc ? rc : tex_vectorize(sb, tex_stage_axis(sb, tex_stage_naxes(sb) - 1));
    rc = rc ? rc : tex_parallel(sc, no);
    rc = rc ? rc : tex_vectorize(sc, ni); /* the edge tiles' ordinary nest */
    rc = rc ? rc : tex_tensorize(sc, mi, in);
    if (rc)
        return NULL;
    return tex_lower_tensors(s, "gemm", 3, (tex_tensor *[]){A, B, C});
}

/* Builds g->kernel for variant v on "cpu -threads=N"; 0 or -1 (message printed). */
static int gemm_build(gemm_case *g, const gemm_variant *v)
{
    char target[64];
    snprintf(target, sizeof target, "cpu -threads=%d", g->threads);
    tex_ctx *ctx = tex_ctx_new();
    tex_func *f = !ctx        ? NULL
                  : v->intrin ? gemm_define_tensorized(ctx, g, v)
                              : gemm_define(ctx, g, v);
    g->kernel = f ? tex_build(f, target) : NULL;
    if (!g->kernel)
        fprintf(stderr, "gemm: variant %s: %s\n", v->name, tex_errmsg(ctx));
    tex_ctx_free(ctx);
    return g->kernel ? 0 : -1;
}

static int run_tex(void *arg)
{
    gemm_case *g = arg;
    int rc = tex_kernel_call_tensors(g->kernel, 3, (DLTensor *[]){g->a, g->b, g->c});
    if (rc != 0)
        fprintf(stderr, "gemm: call failed: %s\n", tex_kernel_errmsg(g->kernel));
    return rc;
}

static int run_blas(void *arg)
{
    gemm_case *g = arg;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g->m, (int)g->n, (int)g->k, 1.0f,
                g->a->data, (int)g->k, g->b->data, (int)g->n, 0.0f, g->c_blas, (int)g->n);
    return 0;
}

static int gemm_alloc(gemm_case *g)
{
    DLDevice cpu = {kDLCPU, 0};
    g->a = tex_array_new(2, (int64_t[]){g->m, g->k}, TEX_F32, cpu);
    g->b = tex_array_new(2, (int64_t[]){g->k, g->n}, TEX_F32, cpu);
    g->c = tex_array_new(2, (int64_t[]){g->m, g->n}, TEX_F32, cpu);
    g->c_blas = bench_floats(g->m * g->n);
    if (!g->a || !g->b || !g->c || !g->c_blas)
        return -1;
    bench_fill_random(g->a->data, g->m * g->k, 1);
    bench_fill_random(g->b->data, g->k * g->n, 2);
    return 0;
}

static void gemm_release(gemm_case *g)
{
    tex_kernel_free(g->kernel);
    tex_array_free(g->a);
    tex_array_free(g->b);
    tex_array_free(g->c);
    free(g->c_blas);
}

/* Builds and checks one case with variant v, then times it interleaved with
 * OpenBLAS and prints its line. Exits on a wrong result. */
static void gemm_measure(gemm_case *g, const gemm_variant *v, const char *desc)
{
    if (gemm_alloc(g) != 0 || gemm_build(g, v) != 0)
        bench_fail("gemm", desc, "setup_failed");
    openblas_set_num_threads(g->threads);
    run_blas(g);
    memset(g->c->data, 0xff, (size_t)(g->m * g->n) * sizeof(float)); /* NaN: must be overwritten */
    if (run_tex(g) != 0)
        bench_fail("gemm", desc, "call_failed");
    bench_check_close("gemm", desc, g->c->data, g->c_blas, g->m * g->n, 1e-3);
    if (bench_compare("gemm", desc, (bench_run){run_tex, g, NULL}, "openblas",
                      (bench_run){run_blas, g, NULL}, 800) != 0)
        bench_fail("gemm", desc, "call_failed");
    gemm_release(g);
}

/* The loop-nest variant for this CPU: the first (4 AVX-512 vectors per row
 * of the tile) when it has AVX-512, else bn16_mb6 (2 AVX2 vectors per row:
 * 12 accumulators of the 16 ymm registers). */
static const gemm_variant *loop_variant(void)
{
    return &variants[__builtin_cpu_supports("avx512f") ? 0 : V_AVX2];
}

/* The tensorized variant for this CPU: AVX-512 when it has it, else AVX2. */
static const gemm_variant *tensorized_variant(void)
{
    return &variants[__builtin_cpu_supports("avx512f") ? V_TENSOR_AVX512 : V_TENSOR_AVX2];
}

/* The loop-nest and the tensorized variant on one shape, each when its
 * description contains `only` (or `only` is NULL). */
static void run_case(int64_t m, int64_t n, int64_t k, int threads, const char *only)
{
    char desc[64];
    snprintf(desc, sizeof desc, "%lldx%lldx%lld/t%d", (long long)m, (long long)n, (long long)k,
             threads);
    gemm_case g = {.m = m, .n = n, .k = k, .threads = threads};
    if (!only || strstr(desc, only))
        gemm_measure(&g, loop_variant(), desc);
    snprintf(desc, sizeof desc, "%lldx%lldx%lld/t%d/tensorized", (long long)m, (long long)n,
             (long long)k, threads);
    gemm_case gt = {.m = m, .n = n, .k = k, .threads = threads};
    if (!only || strstr(desc, only))
        gemm_measure(&gt, tensorized_variant(), desc);
}

/* Every variant (whose name contains `only`, when given) on the sizes the
 * goal names, 2 threads. */
static void tune(const char *only)
{
    static const int64_t sizes[] = {1024, 2048};
    for (int s = 0; s < 2; s++) {
        for (size_t v = 0; v < N_VARIANTS; v++) {
            if (only && !strstr(variants[v].name, only))
                continue;
            char desc[96];
            snprintf(desc, sizeof desc, "%lld^3/t2/%s", (long long)sizes[s], variants[v].name);
            gemm_case g = {.m = sizes[s], .n = sizes[s], .k = sizes[s], .threads = 2};
            gemm_measure(&g, &variants[v], desc);
        }
    }
}

int main(int argc, char **argv)
{
    fix_openblas_core("gemm", argv);
    if (argc > 1 && strcmp(argv[1], "--tune") == 0) {
        tune(argc > 2 ? argv[2] : NULL);
        return 0;
    }
    const char *only = argc > 1 ? argv[1] : NULL;
    static const int64_t cases[][3] = {
        {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048}, {1024, 1024, 64}};
    for (int c = 0; c < 5; c++)
        for (int t = 1; t <= 2; t++)
            run_case(cases[c][0], cases[c][1], cases[c][2], t, only);
    for (int t = 1; t <= 2; t++) { /* the tutorial's schedule as it is (make demo) */
        char desc[32];
        snprintf(desc, sizeof desc, "tutorial1024/t%d", t);
        gemm_case g = {.m = 1024, .n = 1024, .k = 1024, .threads = t};
        if (!only || strstr(desc, only))
            gemm_measure(&g, &variants[V_TUTORIAL], desc);
    }
    return 0;
}
