/*
 * bench/b2b: back-to-back GEMM (bench/b2b_gemm.h), f32,
 *   D0 = relu(alpha0 * A0 . B0), D1 = relu(alpha1 * D0 . B1 + beta1 * C1),
 * CUTLASS's example 13 shapes scaled to CPU caches: M = 16384, K0 = 576 and
 * (N0, N1) = (64, 128), (128, 64), on 1 and 2 threads.
 *
 * tex's fused kernel (a row panel of D0 computed at D1's row tile into a
 * local buffer, never written to memory) is timed interleaved with two
 * anchors, one line each:
 *   anchor=unfused   tex's unfused pair: D0 computed at root (written to
 *                    memory and read back), each GEMM with the same register
 *                    tile and its epilogue fused;
 *   anchor=openblas  two cblas_sgemm calls (alpha0; alpha1) with separate
 *                    OpenMP epilogue loops (relu; relu(. + beta1 * C1));
 *   anchor=gemm0_only the unfused pair's first GEMM alone (D0 written,
 *                    nothing else): unfused_ms - gemm0_only_ms is the second
 *                    GEMM with D0's round trip through memory, the most that
 *                    fusion can save.
 * The tex kernels are checked against OpenBLAS's results (relative error
 * at most 1e-4) before timing. The register tile is bench/gemm's: 6 rows x
 * 64 columns on a CPU with AVX-512, 6 x 16 with AVX2 only, k unrolled by 4.
 *
 * Then b2b_conv lines (bench/b2b_conv.h): a 3x3 convolution + relu then a
 * 1x1 convolution + relu, 64 channels in and out of both, on a 64x56x56
 * input, tex fused against tex unfused (anchor=unfused, D0 through memory),
 * 2 and 1 threads; the fused result is checked against the unfused one.
 *
 * usage: b2b [gemm | conv]   every line, or only the b2b_gemm / b2b_conv ones
 */
#include "common.h"
#include "b2b_conv.h"
#include "b2b_gemm.h"
#include "openblas.h"

#include <stdbool.h>

#include <tex/tex.h>

typedef struct {
    int64_t m, k0, n0, n1;
    int threads;
    tex_kernel *fused, *unfused, *first;
    DLTensor *a0, *b0, *b1, *c1, *d1, *d1_unfused, *d0; /* d0: the first GEMM's alone */
    float *d0_blas, *p1_blas, *d1_blas;                 /* OpenBLAS's intermediates and result */
} b2b_case;

static const float ALPHA0 = 0.5f, ALPHA1 = 0.75f, BETA1 = -0.5f;

static const b2b_tile *cpu_tile(void)
{
    static const b2b_tile avx512 = {6, 64, 4}, avx2 = {6, 16, 4};
    return __builtin_cpu_supports("avx512f") ? &avx512 : &avx2;
}

/* One kernel of case c with schedule `sched` (b2b_gemm_first: parameters
 * A0, B0, D0, alpha0); NULL with a message printed. */
static tex_kernel *b2b_build(const b2b_case *c, int (*sched)(tex_ctx *, tex_schedule *,
                                                             const b2b_gemm *, const b2b_tile *))
{
    char target[64];
    snprintf(target, sizeof target, "cpu -threads=%d", c->threads);
    tex_ctx *ctx = tex_ctx_new();
    b2b_gemm g;
    b2b_gemm_define(ctx, tex_int(ctx, c->m), c->k0, c->n0, c->n1, &g);
    bool first = sched == b2b_gemm_first;
    tex_schedule *s = tex_schedule_new(ctx, 1, first ? &g.d0 : &g.d1);
    tex_param p[8];
    b2b_gemm_params(&g, p);
    if (first) {
        p[2] = (tex_param){.kind = TEX_ARG_TENSOR, .t = g.d0};
        p[3] = p[5];
    }
    tex_func *f =
        s && sched(ctx, s, &g, cpu_tile()) == 0 ? tex_lower(s, "b2b", first ? 4 : 8, p) : NULL;
    tex_kernel *k = f ? tex_build(f, target) : NULL;
    if (!k)
        fprintf(stderr, "b2b: %s\n", tex_errmsg(ctx));
    tex_ctx_free(ctx);
    return k;
}

static int run_kernel(tex_kernel *k, const b2b_case *c, DLTensor *out)
{
    tex_value v[8] = {{.kind = TEX_VAL_TENSOR, .t = c->a0}, {.kind = TEX_VAL_TENSOR, .t = c->b0},
                      {.kind = TEX_VAL_TENSOR, .t = c->b1}, {.kind = TEX_VAL_TENSOR, .t = c->c1},
                      {.kind = TEX_VAL_TENSOR, .t = out},   {.kind = TEX_VAL_F64, .f = ALPHA0},
                      {.kind = TEX_VAL_F64, .f = ALPHA1},   {.kind = TEX_VAL_F64, .f = BETA1}};
    int rc = tex_kernel_call(k, 8, v);
    if (rc != 0)
        fprintf(stderr, "b2b: call failed: %s\n", tex_kernel_errmsg(k));
    return rc;
}

static int run_fused(void *arg)
{
    b2b_case *c = arg;
    return run_kernel(c->fused, c, c->d1);
}

static int run_unfused(void *arg)
{
    b2b_case *c = arg;
    return run_kernel(c->unfused, c, c->d1_unfused);
}

static int run_first(void *arg)
{
    b2b_case *c = arg;
    tex_value v[4] = {{.kind = TEX_VAL_TENSOR, .t = c->a0},
                      {.kind = TEX_VAL_TENSOR, .t = c->b0},
                      {.kind = TEX_VAL_TENSOR, .t = c->d0},
                      {.kind = TEX_VAL_F64, .f = ALPHA0}};
    int rc = tex_kernel_call(c->first, 4, v);
    if (rc != 0)
        fprintf(stderr, "b2b: call failed: %s\n", tex_kernel_errmsg(c->first));
    return rc;
}

/* Two sgemm calls, each followed by its epilogue loop. */
static int run_blas(void *arg)
{
    b2b_case *c = arg;
    int64_t n0 = c->m * c->n0, n1 = c->m * c->n1;
    float *d0 = c->d0_blas, *p1 = c->p1_blas, *d1 = c->d1_blas, *c1 = c->c1->data;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)c->m, (int)c->n0, (int)c->k0,
                ALPHA0, c->a0->data, (int)c->k0, c->b0->data, (int)c->n0, 0.0f, d0, (int)c->n0);
#pragma omp parallel for num_threads(c->threads)
    for (int64_t i = 0; i < n0; i++)
        d0[i] = d0[i] > 0 ? d0[i] : 0;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)c->m, (int)c->n1, (int)c->n0,
                ALPHA1, d0, (int)c->n0, c->b1->data, (int)c->n1, 0.0f, p1, (int)c->n1);
#pragma omp parallel for num_threads(c->threads)
    for (int64_t i = 0; i < n1; i++) {
        float v = p1[i] + BETA1 * c1[i];
        d1[i] = v > 0 ? v : 0;
    }
    return 0;
}

static DLTensor *array2(int64_t rows, int64_t cols)
{
    return tex_array_new(2, (int64_t[]){rows, cols}, TEX_F32, (DLDevice){kDLCPU, 0});
}

static int b2b_alloc(b2b_case *c)
{
    c->a0 = array2(c->m, c->k0), c->b0 = array2(c->k0, c->n0), c->b1 = array2(c->n0, c->n1);
    c->c1 = array2(c->m, c->n1), c->d1 = array2(c->m, c->n1), c->d1_unfused = array2(c->m, c->n1);
    c->d0 = array2(c->m, c->n0);
    c->d0_blas = bench_floats(c->m * c->n0);
    c->p1_blas = bench_floats(c->m * c->n1);
    c->d1_blas = bench_floats(c->m * c->n1);
    if (!c->a0 || !c->b0 || !c->b1 || !c->c1 || !c->d1 || !c->d1_unfused || !c->d0 || !c->d0_blas ||
        !c->p1_blas || !c->d1_blas)
        return -1;
    bench_fill_random(c->a0->data, c->m * c->k0, 1);
    bench_fill_random(c->b0->data, c->k0 * c->n0, 2);
    bench_fill_random(c->b1->data, c->n0 * c->n1, 3);
    bench_fill_random(c->c1->data, c->m * c->n1, 4);
    return 0;
}

static void b2b_release(b2b_case *c)
{
    tex_kernel_free(c->fused);
    tex_kernel_free(c->unfused);
    tex_kernel_free(c->first);
    DLTensor *const arrays[7] = {c->a0, c->b0, c->b1, c->c1, c->d1, c->d1_unfused, c->d0};
    for (int i = 0; i < 7; i++)
        tex_array_free(arrays[i]);
    free(c->d0_blas);
    free(c->p1_blas);
    free(c->d1_blas);
}

static void run_case(int64_t m, int64_t k0, int64_t n0, int64_t n1, int threads)
{
    char desc[64];
    snprintf(desc, sizeof desc, "%lldx%lldx%lldx%lld/t%d", (long long)m, (long long)k0,
             (long long)n0, (long long)n1, threads);
    b2b_case c = {.m = m, .k0 = k0, .n0 = n0, .n1 = n1, .threads = threads};
    if (b2b_alloc(&c) != 0 || !(c.fused = b2b_build(&c, b2b_gemm_fused)) ||
        !(c.unfused = b2b_build(&c, b2b_gemm_unfused)) ||
        !(c.first = b2b_build(&c, b2b_gemm_first)))
        bench_fail("b2b_gemm", desc, "setup_failed");
    openblas_set_num_threads(threads);
    run_blas(&c);
    memset(c.d1->data, 0xff, sizeof(float) * (size_t)(m * n1)); /* NaN: must be overwritten */
    memset(c.d1_unfused->data, 0xff, sizeof(float) * (size_t)(m * n1));
    memset(c.d0->data, 0xff, sizeof(float) * (size_t)(m * n0));
    if (run_fused(&c) != 0 || run_unfused(&c) != 0 || run_first(&c) != 0)
        bench_fail("b2b_gemm", desc, "call_failed");
    bench_check_close("b2b_gemm", desc, c.d1->data, c.d1_blas, m * n1, 1e-4);
    bench_check_close("b2b_gemm", desc, c.d1_unfused->data, c.d1_blas, m * n1, 1e-4);
    bench_check_close("b2b_gemm", desc, c.d0->data, c.d0_blas, m * n0, 1e-4);
    bench_run sides[4] = {{run_fused, &c, NULL},
                          {run_unfused, &c, NULL},
                          {run_blas, &c, NULL},
                          {run_first, &c, NULL}};
    bench_stats st[4];
    if (bench_interleave(4, sides, 1500, st) != 0)
        bench_fail("b2b_gemm", desc, "call_failed");
    bench_report("b2b_gemm", desc, &st[0], "unfused", &st[1]);
    bench_report("b2b_gemm", desc, &st[0], "openblas", &st[2]);
    bench_report("b2b_gemm", desc, &st[0], "gemm0_only", &st[3]);
    b2b_release(&c);
}

/* One back-to-back convolution kernel on `threads` threads; NULL with a
 * message printed. */
static tex_kernel *conv_build(int fused, int threads)
{
    char target[64];
    snprintf(target, sizeof target, "cpu -threads=%d", threads);
    tex_ctx *ctx = tex_ctx_new();
    b2b_conv g;
    b2b_conv_define(ctx, 64, 56, 56, 64, 64, &g);
    tex_schedule *s = tex_schedule_new(ctx, 1, &g.d1);
    tex_func *f = s && b2b_conv_schedule(ctx, s, &g, 8, fused) == 0
                      ? tex_lower_tensors(s, "b2b_conv", 4, (tex_tensor *[]){g.x, g.w0, g.w1, g.d1})
                      : NULL;
    tex_kernel *k = f ? tex_build(f, target) : NULL;
    if (!k)
        fprintf(stderr, "b2b_conv: %s\n", tex_errmsg(ctx));
    tex_ctx_free(ctx);
    return k;
}

typedef struct {
    tex_kernel *k;
    DLTensor *args[4]; /* X, W0, W1, D1 */
} conv_run;

static int run_conv(void *arg)
{
    conv_run *r = arg;
    int rc = tex_kernel_call_tensors(r->k, 4, r->args);
    if (rc != 0)
        fprintf(stderr, "b2b_conv: call failed: %s\n", tex_kernel_errmsg(r->k));
    return rc;
}

/* The b2b_conv line on `threads` threads. */
static void conv_case(int threads)
{
    char desc[64];
    snprintf(desc, sizeof desc, "64x56x56_3x3_1x1/t%d", threads);
    DLDevice cpu = {kDLCPU, 0};
    static const int64_t shapes[4][4] = {
        {1, 64, 56, 56}, {64, 64, 3, 3}, {64, 64, 1, 1}, {1, 64, 56, 56}};
    conv_run fused = {conv_build(1, threads), {0}}, unfused = {conv_build(0, threads), {0}};
    for (int a = 0; a < 4; a++) {
        fused.args[a] = tex_array_new(4, shapes[a], TEX_F32, cpu);
        unfused.args[a] = a < 3 ? fused.args[a] : tex_array_new(4, shapes[a], TEX_F32, cpu);
        if (!fused.args[a] || !unfused.args[a])
            bench_fail("b2b_conv", desc, "setup_failed");
        int64_t n = shapes[a][0] * shapes[a][1] * shapes[a][2] * shapes[a][3];
        if (a < 3)
            bench_fill_random(fused.args[a]->data, n, (uint64_t)a + 5);
        else /* NaN: must be overwritten */
            memset(fused.args[a]->data, 0xff, sizeof(float) * (size_t)n);
    }
    if (!fused.k || !unfused.k || run_conv(&fused) != 0 || run_conv(&unfused) != 0)
        bench_fail("b2b_conv", desc, "setup_failed");
    bench_check_close("b2b_conv", desc, fused.args[3]->data, unfused.args[3]->data, 64 * 56 * 56,
                      1e-4);
    if (bench_compare("b2b_conv", desc, (bench_run){run_conv, &fused, NULL}, "unfused",
                      (bench_run){run_conv, &unfused, NULL}, 1000) != 0)
        bench_fail("b2b_conv", desc, "call_failed");
    for (int a = 0; a < 4; a++)
        tex_array_free(fused.args[a]);
    tex_array_free(unfused.args[3]);
    tex_kernel_free(fused.k);
    tex_kernel_free(unfused.k);
}

int main(int argc, char **argv)
{
    fix_openblas_core("b2b", argv);
    const char *only = argc > 1 ? argv[1] : ""; /* "gemm" or "conv": those lines only */
    for (int t = 2; t >= 1 && strcmp(only, "conv") != 0; t--) {
        run_case(16384, 576, 64, 128, t);
        run_case(16384, 576, 128, 64, t);
    }
    for (int t = 2; t >= 1 && strcmp(only, "gemm") != 0; t--)
        conv_case(t);

    return 0;
}
