/*
 * demo: C = A·B in f32, 1024 × 1024 × 1024, from tensor expression to a
 * JIT-compiled kernel (make demo runs it; about 10 s).
 *
 * The schedule is the final one of TVM's "How to optimize GEMM on CPU"
 * tutorial: B packed into column panels packedB[N/32, K, 32]; C tiled 32 × 32
 * with a write cache CC (cache_write) computed per tile, CC's k split by 4 and
 * unrolled, its 32-wide inner axis vectorized; the outer row-tile loop and the
 * packing parallel. The demo prints the lowered loop AST (tex_func_str),
 * builds it with tex_build(f, "cpu") (generated C, the system compiler,
 * dlopen) and runs it.
 *
 * Checking: tex_eval_reference, the oracle, interprets the definition and
 * would take about a minute at 1024³, so the full result is compared with a
 * naive triple loop (parallel over rows, compiled by this program's compiler)
 * and the very same schedule on 128 × 128 × 128 is compared with
 * tex_eval_reference. Timings are medians of several runs (CLOCK_MONOTONIC),
 * shown as GFLOP/s next to the naive loop and, where OpenBLAS was found at
 * build time (TEX_HAVE_OPENBLAS), cblas_sgemm. (OpenBLAS 0.3.21 does not
 * recognize recent Xeons and falls back to its SSE3 "Prescott" kernels; the
 * demo then re-executes itself with OPENBLAS_CORETYPE=SkylakeX or Haswell, as
 * bench/gemm does, so that the comparison is fair.)
 *
 * Exit status: 0 when both checks pass, 1 otherwise.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <tex/tex.h>
#ifdef TEX_HAVE_OPENBLAS
#include <cblas.h>
#include <unistd.h>
#endif

enum { BN = 32, KF = 4, RUNS = 7, BIG = 1024, SMALL = 128 };

/* One GEMM: the definition, its lowered function and arrays. */
typedef struct {
    int64_t n; /* M = N = K */
    tex_ctx *ctx;
    tex_tensor *t[3]; /* A, B, C */
    tex_func *f;
    DLTensor *arr[3]; /* a, b, c */
} gemm;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* packedB[x, k, z] = B[k, x*32 + z]; C[m, n] = sum_k A[m, k] * packedB[n/32, k, n%32]. */
static tex_tensor *define(gemm *g, tex_tensor **packed)
{
    tex_ctx *c = g->ctx;
    tex_expr *n = tex_int(c, g->n), *bn = tex_int(c, BN);
    tex_tensor *A = tex_placeholder(c, "A", TEX_F32, 2, (tex_expr *[]){n, n});
    tex_tensor *B = tex_placeholder(c, "B", TEX_F32, 2, (tex_expr *[]){n, n});
    tex_iter *x = tex_axis(c, "bigN", tex_int(c, g->n / BN)), *y = tex_axis(c, "k", n);
    tex_iter *z = tex_axis(c, "littleN", bn);
    *packed = tex_compute(c, "packedB", 3, (tex_iter *[]){x, y, z},
                          TEX_AT(B, tex_iv(y), tex_add(tex_mul(tex_iv(x), bn), tex_iv(z))));
    tex_iter *i = tex_axis(c, "m", n), *j = tex_axis(c, "n", n), *r = tex_reduce_axis(c, "k", n);
    tex_expr *pb =
        TEX_AT(*packed, tex_floordiv(tex_iv(j), bn), tex_iv(r), tex_floormod(tex_iv(j), bn));
    g->t[0] = A;
    g->t[1] = B;
    g->t[2] = tex_compute(c, "C", 2, (tex_iter *[]){i, j},
                          tex_sum(tex_mul(TEX_AT(A, tex_iv(i), tex_iv(r)), pb), 1, &r));
    return g->t[2];
}

/* The tutorial's final schedule, lowered into g->f; 0 or -1. */
static int schedule(gemm *g)
{
    tex_ctx *c = g->ctx;
    tex_tensor *P = NULL, *C = define(g, &P);
    tex_schedule *s = C ? tex_schedule_new(c, 1, &C) : NULL;
    tex_tensor *CC = s ? tex_cache_write(s, C, TEX_SCOPE_GLOBAL) : NULL;
    if (!CC)
        return -1;
    tex_stage *sc = tex_stage_of(s, C), *scc = tex_stage_of(s, CC), *sp = tex_stage_of(s, P);
    tex_iter *mo, *no, *mi, *ni, *ko, *ki;
    int rc = tex_tile(sc, tex_op_axis(sc, 0), tex_op_axis(sc, 1), tex_int(c, BN), tex_int(c, BN),
                      &mo, &no, &mi, &ni);
    rc = rc ? rc : tex_compute_at(scc, sc, no);
    tex_iter *mc = tex_op_axis(scc, 0), *nc = tex_op_axis(scc, 1);
    rc = rc ? rc : tex_split(scc, tex_op_reduce_axis(scc, 0), tex_int(c, KF), &ko, &ki);
    rc = rc ? rc : tex_reorder(scc, 4, (tex_iter *[]){ko, mc, ki, nc});
    rc = rc ? rc : tex_vectorize(scc, nc);
    rc = rc ? rc : tex_unroll(scc, ki);
    rc = rc ? rc : tex_vectorize(sp, tex_op_axis(sp, 2));
    rc = rc ? rc : tex_parallel(sp, tex_op_axis(sp, 0));
    rc = rc ? rc : tex_parallel(sc, mo);
    g->f = rc ? NULL : tex_lower_tensors(s, "demo_gemm", 3, g->t);
    return g->f ? 0 : -1;
}

/* Arrays for A and B (uniform in [-1, 1), fixed seed) and C. */
static int make_arrays(gemm *g)
{
    DLDevice cpu = {kDLCPU, 0};
    uint32_t seed = 12345;
    for (int t = 0; t < 3; t++) {
        g->arr[t] = tex_array_new(2, (int64_t[]){g->n, g->n}, TEX_F32, cpu);
        if (!g->arr[t])
            return -1;
    }
    for (int t = 0; t < 2; t++) {
        float *x = g->arr[t]->data;
        for (int64_t e = 0; e < g->n * g->n; e++) {
            seed = seed * 1664525u + 1013904223u;
            x[e] = (float)(seed >> 8) / 8388608.0f - 1.0f;
        }
    }
    return 0;
}

static void gemm_free(gemm *g)
{
    for (int t = 0; t < 3; t++)
        tex_array_free(g->arr[t]);
    tex_ctx_free(g->ctx);
}

/* The naive loop: i, j, k with a float accumulator, rows in parallel. */
static void naive(const gemm *g, float *out)
{
    const float *a = g->arr[0]->data, *b = g->arr[1]->data;
    int64_t n = g->n;
#pragma omp parallel for
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < n; j++) {
            float acc = 0;
            for (int64_t k = 0; k < n; k++)
                acc += a[i * n + k] * b[k * n + j];
            out[i * n + j] = acc;
        }
    }
}

/* max |got - want| / max |want| over n values (NaN: infinity). */
static double rel_error(const float *got, const float *want, int64_t n)
{
    double diff = 0, scale = 0;
    for (int64_t e = 0; e < n; e++) {
        double d = fabs((double)got[e] - (double)want[e]);
        if (d != d)
            return INFINITY;
        diff = d > diff ? d : diff;
        scale = fmax(scale, fabs((double)want[e]));
    }
    return diff / (scale > 0 ? scale : 1);
}

static void report(const char *what, double ms, int64_t n)
{
    double flops = 2.0 * (double)n * (double)n * (double)n;
    printf("  %-42s %9.2f ms %8.1f GFLOP/s\n", what, ms, flops / (ms * 1e-3) * 1e-9);
}

/* The same schedule on SMALL³ against the reference evaluator; its error or -1. */
static double check_small(void)
{
    gemm g = {.n = SMALL, .ctx = tex_ctx_new()};
    double err = -1;
    tex_kernel *k = NULL;
    if (g.ctx && schedule(&g) == 0 && make_arrays(&g) == 0 && (k = tex_build(g.f, "cpu"))) {
        DLDevice cpu = {kDLCPU, 0};
        DLTensor *ref = tex_array_new(2, (int64_t[]){SMALL, SMALL}, TEX_F32, cpu);
        DLTensor *refs[3] = {g.arr[0], g.arr[1], ref};
        if (ref && tex_kernel_call_tensors(k, 3, g.arr) == 0 &&
            tex_eval_reference(g.ctx, 3, g.t, refs) == 0)
            err = rel_error(g.arr[2]->data, ref->data, SMALL * SMALL);
        tex_array_free(ref);
    }
    if (err < 0)
        fprintf(stderr, "demo: %d×%d×%d check: %s %s\n", SMALL, SMALL, SMALL,
                g.ctx ? tex_errmsg(g.ctx) : "out of memory", k ? tex_kernel_errmsg(k) : "");
    tex_kernel_free(k);
    gemm_free(&g);
    return err;
}

/* Median of RUNS calls of the kernel after one warm-up; negative on failure. */
static double time_kernel(tex_kernel *k, gemm *g)
{
    double t[RUNS];
    if (tex_kernel_call_tensors(k, 3, g->arr) != 0)
        return -1;
    for (int r = 0; r < RUNS; r++) {
        double t0 = now_ms();
        if (tex_kernel_call_tensors(k, 3, g->arr) != 0)
            return -1;
        t[r] = now_ms() - t0;
    }
    qsort(t, RUNS, sizeof t[0], cmp_double);
    return t[RUNS / 2];
}

#ifdef TEX_HAVE_OPENBLAS
/* Re-executes the demo with OPENBLAS_CORETYPE set when OpenBLAS chose its
 * SSE3 kernels on a CPU with AVX2 or AVX-512; returns otherwise. */
static void fix_openblas_core(char **argv)
{
    const char *core = openblas_get_corename();
    const char *want = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                       : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                         : NULL;
    if (getenv("OPENBLAS_CORETYPE") || !want || !core || strcmp(core, "Prescott") != 0)
        return;
    setenv("OPENBLAS_CORETYPE", want, 1);
    execv("/proc/self/exe", argv);
}

static double time_openblas(const gemm *g, float *out)
{
    double t[RUNS];
    int n = (int)g->n;
    for (int r = -1; r < RUNS; r++) {
        double t0 = now_ms();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, g->arr[0]->data, n,
                    g->arr[1]->data, n, 0.0f, out, n);
        if (r >= 0)
            t[r] = now_ms() - t0;
    }
    qsort(t, RUNS, sizeof t[0], cmp_double);
    return t[RUNS / 2];
}
#endif

/* Builds and runs the big GEMM; 0 when its result matches the naive loop. */
static int run_big(gemm *g, float *loop_out)
{
    char *ast = tex_func_str(g->f);
    printf("lowered loop AST:\n%s\n", ast ? ast : "(out of memory)");
    free(ast);
    double t0 = now_ms();
    tex_kernel *k = tex_build(g->f, "cpu");
    if (!k) {
        fprintf(stderr, "demo: tex_build: %s\n", tex_errmsg(g->ctx));
        return -1;
    }
    printf("tex_build(f, \"cpu\"): %.1f ms (generated C, cc, dlopen; cached afterwards)\n\n",
           now_ms() - t0);
    double tex_ms = time_kernel(k, g);
    tex_kernel_free(k);
    if (tex_ms < 0) {
        fprintf(stderr, "demo: tex_kernel_call: failed\n");
        return -1;
    }
    t0 = now_ms();
    naive(g, loop_out);
    double loop_ms = now_ms() - t0;
    double err = rel_error(g->arr[2]->data, loop_out, g->n * g->n);
    report("tex (tutorial schedule)", tex_ms, g->n);
    report("naive loop (i, j, k; rows parallel)", loop_ms, g->n);
#ifdef TEX_HAVE_OPENBLAS
    char what[80];
    snprintf(what, sizeof what, "OpenBLAS cblas_sgemm (%s kernels)", openblas_get_corename());
    report(what, time_openblas(g, loop_out), g->n);
#endif
    printf("\n  %lld³ vs the naive loop: max relative error %.2e (%s)\n", (long long)g->n, err,
           err <= 1e-4 ? "ok" : "WRONG");
    return err <= 1e-4 ? 0 : -1;
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
#ifdef TEX_HAVE_OPENBLAS
    fix_openblas_core(argv);
#endif
    gemm g = {.n = BIG, .ctx = tex_ctx_new()};
    float *loop_out = malloc((size_t)(BIG * BIG) * sizeof(float));
    printf("tex %s demo: C = A·B, f32, %d × %d × %d\n\n", tex_version(), BIG, BIG, BIG);
    int rc = g.ctx && loop_out && schedule(&g) == 0 && make_arrays(&g) == 0 ? 0 : -1;
    if (rc != 0)
        fprintf(stderr, "demo: %s\n", g.ctx ? tex_errmsg(g.ctx) : "out of memory");
    rc = rc ? rc : run_big(&g, loop_out);
    double small = rc ? -1 : check_small();
    if (small >= 0)
        printf("  %d³, same schedule, vs tex_eval_reference: max relative error %.2e (%s)\n", SMALL,
               small, small <= 1e-4 ? "ok" : "WRONG");
    free(loop_out);
    gemm_free(&g);
    return rc == 0 && small >= 0 && small <= 1e-4 ? 0 : 1;
}
