/*
 * GPU schedules built for the CPU (docs/testing.md, "CUDA without a
 * GPU", way 2): the cases of tests/support/gpu_cases.h -- blocks and
 * threads bound, shared-memory fetches by cooperating threads, double
 * buffering, cross-thread and cross-block reductions, vectorized tiles --
 * go through tex_build(f, "cpu"), which inserts the barriers a GPU would
 * need and then removes them by barrier fission (gpu_to_cpu.c), and run as
 * ordinary compiled C. Each case runs at its small sizes (gpu_cases.h),
 * with constant and with symbolic sizes, on 1 and 2 threads (matmul and
 * stencil also at sizes of whole tiles); outputs are poisoned first and
 * compared with the oracle.
 */
#include "tt.h"
#include "support/tmpdir.h"

#include "support/gpu_cases.h"

#include <stdlib.h>
#include <unistd.h>

static char cache_dir[] = "/tmp/tex_test_gpu_on_cpu.XXXXXX";

/* gc_runner: one call of the kernel ud. */
static int call_kernel(void *ud, int n, const tex_value vals[], char *err, size_t en)
{
    tex_kernel *k = ud;
    if (tex_kernel_call(k, n, vals) == 0)
        return 0;
    snprintf(err, en, "call: %s", tex_kernel_errmsg(k));
    return -1;
}

/* Builds c's function for target, runs it on random inputs and compares
 * every output with the oracle. */
static void run_compare(gc_case *c, const char *target)
{
    tex_kernel *k = tex_build(c->f, target);
    if (!k)
        TT_FAILF("%s (symbolic %d) on %s: tex_build: %s", c->name, c->symbolic, target,
                 tex_errmsg(c->ctx));
    else if (gc_run_compare(c, target, call_kernel, k, 7) != 0)
        TT_FAILF("%s", c->why);
    tex_kernel_free(k);
}

/* One case on 1 and on 2 CPU threads. */
static void cpu_check(gc_case *c)
{
    if (!c->f) {
        TT_FAILF("%s (symbolic %d): %s", c->name, c->symbolic, c->why);
        return;
    }
    run_compare(c, "cpu");
    run_compare(c, "cpu -threads=2");
}

static void cpu_case(gc_id id)
{
    if (!tex_target_available("cpu")) {
        TT_SKIP("no C compiler for the \"cpu\" target");
        return;
    }
    gc_each_small(id, cpu_check);
}

/* The barriers of a cooperative fetch are gone from the C source. */
static void test_source_has_no_barrier(void)
{
    if (!tex_target_available("cpu")) {
        TT_SKIP("no C compiler for the \"cpu\" target");
        return;
    }
    tex_ctx *ctx = tex_ctx_new();
    int64_t sizes[GC_MAX_SIZES];
    gc_default_sizes(GC_MATMUL, GC_SMALL, sizes);
    gc_case c;
    TT_CHECK(gc_build(ctx, GC_MATMUL, sizes, false, &c) == 0);
    tex_kernel *k = c.f ? tex_build(c.f, "c") : NULL;
    TT_CHECK(k != NULL);
    const char *src = k ? tex_kernel_source(k) : NULL;
    TT_CHECK(src && !strstr(src, "barrier") && !strstr(src, "syncthreads"));
    tex_kernel_free(k);
    tex_ctx_free(ctx);
}

/* Case id at constant sizes whose tiles are all whole (no tail guards:
 * the unguarded paths, such as accumulators promoted to registers). */
static void cpu_case_at(gc_id id, const int64_t sizes[GC_MAX_SIZES])
{
    if (!tex_target_available("cpu")) {
        TT_SKIP("no C compiler for the \"cpu\" target");
        return;
    }
    tex_ctx *ctx = tex_ctx_new();
    gc_case c;
    gc_build(ctx, id, sizes, false, &c);
    cpu_check(&c);
    tex_ctx_free(ctx);
}

static void test_matmul(void)
{
    cpu_case(GC_MATMUL);
    cpu_case_at(GC_MATMUL, (const int64_t[GC_MAX_SIZES]){64, 128, 24});
}

static void test_transpose(void)
{
    cpu_case(GC_TRANSPOSE);
}

static void test_softmax(void)
{
    cpu_case(GC_SOFTMAX);
}

static void test_layernorm(void)
{
    cpu_case(GC_LAYERNORM);
}

static void test_conv2d(void)
{
    cpu_case(GC_CONV2D);
}

static void test_sum(void)
{
    cpu_case(GC_SUM);
}

static void test_b2b(void)
{
    cpu_case(GC_B2B);
    cpu_case(GC_B2B_UNFUSED);
    cpu_case(GC_B2B_REGS); /* the mma.sync built-ins have host C (wmma's have not) */
}

static void test_vectile(void)
{
    cpu_case(GC_VECTILE);
}

static void test_stencil(void)
{
    cpu_case(GC_STENCIL);
    cpu_case_at(GC_STENCIL, (const int64_t[GC_MAX_SIZES]){16, 128});
}

int main(void)
{
    if (!tt_private_cache(cache_dir, "test_gpu_on_cpu"))
        return 1;
    TT_RUN(test_source_has_no_barrier);
    TT_RUN(test_matmul);
    TT_RUN(test_transpose);
    TT_RUN(test_softmax);
    TT_RUN(test_layernorm);
    TT_RUN(test_conv2d);
    TT_RUN(test_sum);
    TT_RUN(test_vectile);
    TT_RUN(test_stencil);
    TT_RUN(test_b2b);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
