/*
 * demo: C = A·B in f32, stated with tex's public API (make demo runs it).
 *
 * What it shows today: the compute definition of a matrix product, evaluated by
 * tex_eval_reference, tex's reference evaluator (the oracle every later kernel is
 * checked against: it interprets the definition directly, with no schedule and no
 * compiled code), compared element by element with a hand-written C loop, and both
 * timed (median of several runs, CLOCK_MONOTONIC). Where OpenBLAS was found at build
 * time (TEX_HAVE_OPENBLAS) its cblas_sgemm is timed too, as the yardstick for the
 * JIT-compiled kernels to come. The JIT (schedule -> lowering -> generated C) is not
 * built yet, so no compiled tex kernel is measured here, and the output says so.
 *
 * usage: demo [M N K]     (default 256 256 256); exit status 1 on a wrong result.
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
#endif

enum { MAX_RUNS = 15 };

/* One problem: sizes, the tex definition and the arrays it is evaluated on. */
typedef struct {
    int64_t m, n, k;
    tex_ctx *ctx;
    tex_tensor *tensors[3]; /* A, B, C */
    DLTensor *arrays[3];    /* a, b, c_ref */
    float *c_loop;          /* the hand-written loop's result */
} problem;

typedef int (*run_fn)(problem *p);

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Runs fn at least 3 times and until about `budget` seconds or MAX_RUNS are spent;
 * returns the median time in seconds (negative when fn fails) and the run count. */
static double time_median(run_fn fn, problem *p, double budget, int *n_runs)
{
    double t[MAX_RUNS], spent = 0;
    int n = 0;
    while (n < MAX_RUNS && (n < 3 || spent < budget)) {
        double t0 = now_seconds();
        if (fn(p) != 0)
            return -1;
        t[n] = now_seconds() - t0;
        spent += t[n++];
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    *n_runs = n;
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* C = A·B as tex computes: C[i, j] = sum over k of A[i, k] * B[k, j]. */
static int define_matmul(problem *p)
{
    tex_ctx *ctx = p->ctx;
    tex_tensor *a = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){p->m, p->k});
    tex_tensor *b = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){p->k, p->n});
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, p->m));
    tex_iter *j = tex_axis(ctx, "j", tex_int(ctx, p->n));
    tex_iter *k = tex_reduce_axis(ctx, "k", tex_int(ctx, p->k));
    tex_expr *ab = tex_mul(TEX_AT(a, tex_iv(i), tex_iv(k)), TEX_AT(b, tex_iv(k), tex_iv(j)));
    tex_tensor *c = tex_compute(ctx, "C", 2, (tex_iter *[]){i, j}, tex_sum(ab, 1, &k));
    p->tensors[0] = a;
    p->tensors[1] = b;
    p->tensors[2] = c;
    return c ? 0 : -1;
}

/* Arrays for A, B (uniform in [0, 1), fixed seed) and C. */
static int make_arrays(problem *p)
{
    const int64_t shapes[3][2] = {{p->m, p->k}, {p->k, p->n}, {p->m, p->n}};
    DLDevice cpu = {kDLCPU, 0};
    uint32_t seed = 12345;
    for (int t = 0; t < 3; t++) {
        p->arrays[t] = tex_array_new(2, shapes[t], TEX_F32, cpu);
        if (!p->arrays[t])
            return -1;
    }
    for (int t = 0; t < 2; t++) {
        float *x = p->arrays[t]->data;
        for (int64_t e = 0; e < shapes[t][0] * shapes[t][1]; e++) {
            seed = seed * 1664525u + 1013904223u;
            x[e] = (float)(seed >> 8) / 16777216.0f;
        }
    }
    p->c_loop = malloc((size_t)(p->m * p->n) * sizeof(float));
    return p->c_loop ? 0 : -1;
}

static int run_reference(problem *p)
{
    return tex_eval_reference(p->ctx, 3, p->tensors, p->arrays);
}

/* The loop a person writes first: i, j, k, with a float accumulator. */
static int run_loop(problem *p)
{
    const float *a = p->arrays[0]->data, *b = p->arrays[1]->data;
    for (int64_t i = 0; i < p->m; i++) {
        for (int64_t j = 0; j < p->n; j++) {
            float acc = 0;
            for (int64_t k = 0; k < p->k; k++)
                acc += a[i * p->k + k] * b[k * p->n + j];
            p->c_loop[i * p->n + j] = acc;
        }
    }
    return 0;
}

#ifdef TEX_HAVE_OPENBLAS
static int run_openblas(problem *p)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p->m, (int)p->n, (int)p->k, 1.0f,
                p->arrays[0]->data, (int)p->k, p->arrays[1]->data, (int)p->n, 0.0f, p->c_loop,
                (int)p->n);
    return 0;
}
#endif

/* max over elements of |ref - loop| / |loop| (the inputs are positive: no cancellation). */
static double max_rel_error(const problem *p)
{
    const float *ref = p->arrays[2]->data;
    double worst = 0;
    for (int64_t e = 0; e < p->m * p->n; e++) {
        double d = fabs((double)ref[e] - (double)p->c_loop[e]);
        double r = d / fmax(fabs((double)p->c_loop[e]), 1e-30);
        worst = r > worst ? r : worst;
    }
    return worst;
}

static void report(const char *what, double seconds, int n_runs, double flops)
{
    printf("  %-40s %10.3f ms %9.3f GFLOP/s  (median of %d)\n", what, seconds * 1e3,
           flops / seconds * 1e-9, n_runs);
}

static int parse_sizes(int argc, char **argv, problem *p)
{
    p->m = p->n = p->k = 256;
    if (argc == 1)
        return 0;
    if (argc != 4)
        return -1;
    int64_t *dims[3] = {&p->m, &p->n, &p->k};
    for (int d = 0; d < 3; d++) {
        *dims[d] = atoll(argv[d + 1]);
        if (*dims[d] < 1 || *dims[d] > 8192)
            return -1;
    }
    return 0;
}

static int run_demo(problem *p)
{
    const double tolerance = 1e-4, flops = 2.0 * (double)p->m * (double)p->n * (double)p->k;
    int n_ref = 0, n_loop = 0;
    printf("tex %s demo: C = A·B, f32, M=%lld N=%lld K=%lld (%.1f MFLOP)\n\n", tex_version(),
           (long long)p->m, (long long)p->n, (long long)p->k, flops * 1e-6);
    printf("  C is evaluated by tex_eval_reference, tex's reference evaluator: it interprets\n"
           "  the compute definition directly (no schedule, no compiled code). tex's JIT\n"
           "  (schedules, lowering, generated C) is not built yet, so no compiled tex kernel\n"
           "  is measured below.\n\n");
    double t_ref = time_median(run_reference, p, 2.0, &n_ref);
    double t_loop = time_median(run_loop, p, 0.5, &n_loop);
    if (t_ref < 0)
        return -1;
    double err = max_rel_error(p);
    report("tex_eval_reference (interpreter)", t_ref, n_ref, flops);
    report("hand-written C loop (i, j, k)", t_loop, n_loop, flops);
#ifdef TEX_HAVE_OPENBLAS
    /* (writes into c_loop: the error above is already computed) */
    int n_blas = 0;
    char what[64];
    double t_blas = time_median(run_openblas, p, 0.5, &n_blas);
    snprintf(what, sizeof what, "OpenBLAS cblas_sgemm (%d threads)", openblas_get_num_threads());
    report(what, t_blas, n_blas, flops);
#endif
    printf("\n  max relative error, tex_eval_reference vs the C loop: %.2e (%s, tolerance %.0e)\n",
           err, err <= tolerance ? "ok" : "WRONG", tolerance);
    return err <= tolerance ? 0 : 1;
}

int main(int argc, char **argv)
{
    problem p;
    memset(&p, 0, sizeof p);
    if (parse_sizes(argc, argv, &p) != 0) {
        fprintf(stderr, "usage: %s [M N K]   (each 1..8192)\n", argv[0]);
        return 2;
    }
    p.ctx = tex_ctx_new();
    int rc = define_matmul(&p) == 0 && make_arrays(&p) == 0 ? run_demo(&p) : -1;
    if (rc < 0)
        fprintf(stderr, "demo: %s\n", p.ctx ? tex_errmsg(p.ctx) : "out of memory");
    for (int t = 0; t < 3; t++)
        tex_array_free(p.arrays[t]);
    free(p.c_loop);
    tex_ctx_free(p.ctx);
    return rc == 0 ? 0 : 1;
}
