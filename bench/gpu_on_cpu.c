/*
 * bench/gpu_on_cpu: GPU schedules built for "cpu" (barrier fission, blocks
 * as one OpenMP parallel loop: docs/passes.md) against the same computation
 * written for the CPU, on 2 threads. The GPU schedules are those of the
 * tests (tests/support/gpu_cases.h) at benchmark sizes:
 *   gemm1024       C = A B, 1024^3: 64x64 block tiles, A and B tiles in
 *                  shared memory (double-buffered), 4x4 outputs per thread
 *   softmax4096x1024  one block per row, max and sum of exp reduced across
 *                  128 threads
 *   transpose4096  32x32 shared tiles, 32x8 threads
 *   stencil1024    Rodinia hotspot's 5-point step, 8x64 block tiles with
 *                  their halo in shared memory
 * Two lines per case, each anchor interleaved with the GPU schedule (tex):
 *   anchor=openmp        gpu_on_cpu_hand.c: the same algorithm as plain
 *                        OpenMP C, compiled with -O3 -march=native -fopenmp
 *   anchor=cpu_schedule  a CPU-scheduled tex kernel of the computation:
 *                        gemm: bench/gemm_packed.h's tutorial schedule;
 *                        softmax: bench/softmax_sched.h; transpose: 32x32
 *                        tiles, the row-tile loop parallel; stencil: rows
 *                        parallel, columns vectorized by 16.
 * Before timing, the outputs of tex and of the CPU schedule are checked
 * against the hand-written kernel's (relative error <= 1e-4).
 *
 * usage: gpu_on_cpu           the benchmark
 *        gpu_on_cpu --source  prints the C of each GPU schedule built for "cpu"
 */
#include "common.h"

#include <string.h>
#include <tex/tex.h>

#include "../tests/support/gpu_cases.h"
#include "gemm_packed.h"
#include "gpu_on_cpu_hand.h"
#include "softmax_sched.h"

enum { THREADS = 2, GEMM_BN = 32, GEMM_KF = 4, TR_TILE = 32, ST_VEC = 16 };

typedef struct {
    const char *desc;
    gc_id id;
    int64_t sizes[GC_MAX_SIZES];
} bench_case;

static const bench_case cases[] = {
    {"gemm1024", GC_MATMUL, {1024, 1024, 1024}},
    {"softmax4096x1024", GC_SOFTMAX, {4096, 1024}},
    {"transpose4096", GC_TRANSPOSE, {4096, 4096}},
    {"stencil1024", GC_STENCIL, {1024, 1024}},
};

typedef struct {
    const bench_case *bc;
    gc_case c;
    tex_kernel *gpu, *cpu;         /* the GPU schedule and the CPU one, both for "cpu" */
    DLTensor *arr[GC_MAX_TENSORS]; /* tensors in parameter order: inputs, then outputs */
    float *out;                    /* the hand-written kernel's output */
} run_state;

/* The CPU-scheduled tex kernel's function: for gemm and softmax the
 * programs of gemm_packed.h and softmax_sched.h, otherwise a schedule of
 * its own over the GPU case's computes; NULL on failure. */
static tex_func *cpu_schedule(const run_state *r)
{
    tex_ctx *x = r->c.ctx;
    const int64_t *z = r->c.sizes;
    tex_tensor *out = r->c.tensors[r->c.n_in], *t[4];
    tex_iter *o0, *o1, *i0, *i1;
    if (r->bc->id == GC_MATMUL) {
        gemm_packed_define(x, z[0], z[1], z[2], GEMM_BN, t);
        tex_schedule *s = tex_schedule_new(x, 1, &t[3]);
        return s ? gemm_packed_tutorial(x, s, t, GEMM_BN, GEMM_KF, "gemm_cpu") : NULL;
    }
    if (r->bc->id == GC_SOFTMAX)
        return softmax_define(x, z[0], z[1]);
    tex_schedule *s = tex_schedule_new(x, 1, &out);
    tex_stage *st = s ? tex_stage_of(s, out) : NULL;
    int rc = st ? 0 : -1;
    if (!rc && r->bc->id == GC_TRANSPOSE) {
        rc = tex_tile(st, tex_op_axis(st, 0), tex_op_axis(st, 1), tex_int(x, TR_TILE),
                      tex_int(x, TR_TILE), &o0, &o1, &i0, &i1);
        rc = rc ? rc : tex_parallel(st, o0);
    } else if (!rc) {
        rc = tex_parallel(st, tex_op_axis(st, 0));
        rc = rc ? rc : tex_split(st, tex_op_axis(st, 1), tex_int(x, ST_VEC), &o1, &i1);
        rc = rc ? rc : tex_vectorize(st, i1);
    }
    return rc ? NULL : tex_lower_tensors(s, "cpu_schedule", r->c.n, r->c.tensors);
}

static float *data(const run_state *r, int t)
{
    return r->arr[t]->data;
}

static int run_gpu(void *arg)
{
    run_state *r = arg;
    return tex_kernel_call_tensors(r->gpu, r->c.n, r->arr);
}

static int run_cpu(void *arg)
{
    run_state *r = arg;
    return tex_kernel_call_tensors(r->cpu, r->c.n, r->arr);
}

static int run_hand(void *arg)
{
    run_state *r = arg;
    const int64_t *z = r->c.sizes;
    switch (r->bc->id) {
    case GC_MATMUL:
        hand_gemm(data(r, 0), data(r, 1), r->out, z[0], z[1], z[2], THREADS);
        break;
    case GC_SOFTMAX:
        hand_softmax(data(r, 0), r->out, z[0], z[1], THREADS);
        break;
    case GC_TRANSPOSE:
        hand_transpose(data(r, 0), r->out, z[0], z[1], THREADS);
        break;
    default:
        hand_stencil(data(r, 0), data(r, 1), r->out, z[0], z[1], THREADS);
        break;
    }
    return 0;
}

/* Builds both kernels and the arrays of r (inputs filled); 0 or -1. */
static int setup(run_state *r, tex_ctx *x)
{
    char target[32];
    snprintf(target, sizeof target, "cpu -threads=%d", THREADS);
    DLDevice cpu = {kDLCPU, 0};
    if (gc_build(x, r->bc->id, r->bc->sizes, false, &r->c) != 0) {
        fprintf(stderr, "gpu_on_cpu: %s\n", r->c.why);
        return -1;
    }
    tex_func *f = cpu_schedule(r);
    r->gpu = tex_build(r->c.f, target);
    r->cpu = f && r->gpu ? tex_build(f, target) : NULL;
    if (!r->cpu) {
        fprintf(stderr, "gpu_on_cpu: %s\n", tex_errmsg(x));
        return -1;
    }
    for (int t = 0; t < r->c.n; t++) {
        if (!(r->arr[t] = gc_array(&r->c, t, cpu)))
            return -1;
        if (t < r->c.n_in)
            gc_fill(r->arr[t], (uint64_t)t + 1);
    }
    r->out = malloc(sizeof(float) * (size_t)gc_numel(&r->c, r->c.n_in));
    return r->out ? 0 : -1;
}

static void release(run_state *r)
{
    tex_kernel_free(r->gpu);
    tex_kernel_free(r->cpu);
    for (int t = 0; t < r->c.n; t++)
        tex_array_free(r->arr[t]);
    free(r->out);
}

/* Runs kernel side once on a poisoned output and checks it against the
 * hand-written kernel's output; exits through bench_fail when wrong. */
static void check(run_state *r, int (*side)(void *), const char *desc, const char *what)
{
    int o = r->c.n_in;
    int64_t n = gc_numel(&r->c, o);
    memset(data(r, o), 0xff, sizeof(float) * (size_t)n);
    if (side(r) != 0)
        bench_fail("gpu_on_cpu", desc, "call_failed");
    if (!(bench_rel_error(data(r, o), r->out, n) <= 1e-4))
        bench_fail("gpu_on_cpu", desc, what);
}

static void run_case(const bench_case *bc)
{
    char desc[64];
    snprintf(desc, sizeof desc, "%s/t%d", bc->desc, THREADS);
    tex_ctx *x = tex_ctx_new();
    run_state r = {.bc = bc};
    if (!x || setup(&r, x) != 0)
        bench_fail("gpu_on_cpu", desc, "setup_failed");
    run_hand(&r);
    check(&r, run_gpu, desc, "gpu_schedule_wrong_result");
    check(&r, run_cpu, desc, "cpu_schedule_wrong_result");
    bench_run runs[3] = {{run_gpu, &r, NULL}, {run_hand, &r, NULL}, {run_cpu, &r, NULL}};
    bench_stats st[3];
    if (bench_interleave(3, runs, 2000, st) != 0)
        bench_fail("gpu_on_cpu", desc, "call_failed");
    bench_report("gpu_on_cpu", desc, &st[0], "openmp", &st[1]);
    bench_report("gpu_on_cpu", desc, &st[0], "cpu_schedule", &st[2]);
    release(&r);
    tex_ctx_free(x);
}

/* Prints the C of each GPU schedule built for "cpu"; 0 or 1. */
static int print_sources(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tex_ctx *x = tex_ctx_new();
        gc_case c;
        tex_kernel *k = x && gc_build(x, cases[i].id, cases[i].sizes, false, &c) == 0
                            ? tex_build(c.f, "cpu -threads=2")
                            : NULL;
        if (!k) {
            fprintf(stderr, "gpu_on_cpu: %s: %s\n", cases[i].desc, x ? tex_errmsg(x) : "");
            tex_ctx_free(x);
            return 1;
        }
        printf("/* ---- %s */\n%s\n", cases[i].desc, tex_kernel_source(k));
        tex_kernel_free(k);
        tex_ctx_free(x);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--source") == 0)
        return print_sources();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (argc < 2 || strstr(cases[i].desc, argv[1]))
            run_case(&cases[i]);
    return 0;
}
