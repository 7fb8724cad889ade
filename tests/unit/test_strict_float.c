/*
 * The "-strict-float" target option (tex.h, tex_build): kernels built with it
 * round every add and multiply separately, exactly as the reference
 * evaluator does, so their results match the oracle bit for bit.
 *
 *   cpu_*      chains of adds, subtracts and multiplies (elementwise and a dot
 *              product reduction) in f32 and f64, unscheduled and split /
 *              vectorized / parallel, built for "cpu -strict-float" (and with
 *              "-threads=2"): every element equal to the oracle's, bit for bit.
 *              On a CPU with FMA the same kernels built for plain "cpu" must
 *              differ somewhere (contraction is on by default), which shows
 *              that the bitwise comparison can fail.
 *   targets    the option parses for every family ("cpu", "c", "cuda"), in
 *              any position; a misspelled option is TEX_EINVAL naming it.
 *   cuda_ptx   "cuda -emit-only -arch=sm_80": the PTX of a*b+c has fma.rn;
 *              with -strict-float it has none (NVRTC --fmad=false). Skipped
 *              without NVRTC.
 */
#include "tt.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tex/tex.h"

#define N 4099 /* prime: no split factor divides it */
#define K 37

/* Out[i] = ((A*B + C) * D - A*C) * 3 + (B*D - 1), and Dot[i] = sum_k A[i]*B[k]+C[i]. */
typedef struct {
    tex_ctx *ctx;
    tex_dtype t;
    tex_tensor *A, *B, *C, *D, *out;
    bool reduce;
} chain;

static void chain_init(chain *c, tex_dtype t, bool reduce)
{
    memset(c, 0, sizeof *c);
    c->ctx = tex_ctx_new();
    c->t = t;
    c->reduce = reduce;
    tex_ctx *ctx = c->ctx;
    int64_t n = N, k = K;
    c->A = tex_placeholder_c(ctx, "A", t, 1, &n);
    c->B = tex_placeholder_c(ctx, "B", t, 1, reduce ? &k : &n);
    c->C = tex_placeholder_c(ctx, "C", t, 1, &n);
    c->D = tex_placeholder_c(ctx, "D", t, 1, &n);
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, N));
    tex_expr *a = TEX_AT(c->A, tex_iv(i)), *cc = TEX_AT(c->C, tex_iv(i));
    tex_expr *d = TEX_AT(c->D, tex_iv(i));
    if (reduce) {
        tex_iter *r = tex_reduce_axis(ctx, "r", tex_int(ctx, K));
        tex_expr *b = TEX_AT(c->B, tex_iv(r));
        tex_expr *body = tex_add(tex_mul(tex_mul(a, b), d), cc);
        c->out = tex_compute(ctx, "Dot", 1, &i, tex_sum(body, 1, &r));
        return;
    }
    tex_expr *b = TEX_AT(c->B, tex_iv(i));
    tex_expr *three = tex_const(ctx, t, 3.0), *one = tex_const(ctx, t, 1.0);
    tex_expr *e = tex_sub(tex_mul(tex_add(tex_mul(a, b), cc), d), tex_mul(a, cc));
    e = tex_add(tex_mul(e, three), tex_sub(tex_mul(b, d), one));
    c->out = tex_compute(ctx, "Out", 1, &i, e);
}

/* Random values with full mantissas in [-2, 2). */
static void fill(DLTensor *a, tex_dtype t, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < a->shape[0]; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v = (double)(x >> 11) / 9007199254740992.0 * 4.0 - 2.0;
        if (t == TEX_F32)
            ((float *)a->data)[i] = (float)v;
        else
            ((double *)a->data)[i] = v;
    }
}

/* The schedule variant: 0 none, 1 split by 8 + vectorize + parallel outer. */
static tex_func *lower(chain *c, int variant)
{
    tex_schedule *s = tex_schedule_new(c->ctx, 1, &c->out);
    if (variant == 1) {
        tex_stage *st = tex_stage_of(s, c->out);
        tex_iter *o, *in;
        TT_EQ_INT(tex_split(st, tex_op_axis(st, 0), tex_int(c->ctx, 8), &o, &in), 0);
        TT_EQ_INT(tex_parallel(st, o), 0);
        if (!c->reduce)
            TT_EQ_INT(tex_vectorize(st, in), 0);
    }
    tex_tensor *args[5] = {c->A, c->B, c->C, c->D, c->out};
    return tex_lower_tensors(s, "chain", 5, args);
}

/* Builds for target and counts the output elements whose bits differ from
 * the oracle's; -1 when building or calling fails (a test failure). */
static int64_t bit_differences(chain *c, int variant, const char *target)
{
    tex_func *f = lower(c, variant);
    tex_kernel *k = f ? tex_build(f, target) : NULL;
    if (!k) {
        TT_FAILF("%s: build failed: %s", target, tex_errmsg(c->ctx));
        return -1;
    }
    DLDevice cpu = {kDLCPU, 0};
    int64_t n = N, kk = K;
    DLTensor *arr[6];
    tex_tensor *ts[5] = {c->A, c->B, c->C, c->D, c->out};
    for (int i = 0; i < 5; i++)
        arr[i] = tex_array_new(1, i == 1 && c->reduce ? &kk : &n, c->t, cpu);
    arr[5] = tex_array_new(1, &n, c->t, cpu);
    size_t esize = c->t == TEX_F32 ? 4 : 8, bytes = (size_t)N * esize;
    for (int i = 0; i < 4; i++)
        fill(arr[i], c->t, (uint64_t)(i + 1) * 77);
    memset(arr[4]->data, 0xA5, bytes); /* poison */
    int64_t diff = -1;
    int rc = tex_kernel_call_tensors(k, 5, arr);
    DLTensor *want[5] = {arr[0], arr[1], arr[2], arr[3], arr[5]};
    if (rc != 0)
        TT_FAILF("%s: call failed: %s", target, tex_kernel_errmsg(k));
    else if (tex_eval_reference(c->ctx, 5, ts, want) != 0)
        TT_FAILF("oracle failed: %s", tex_errmsg(c->ctx));
    else {
        diff = 0;
        for (int64_t i = 0; i < N; i++)
            diff += memcmp((char *)arr[4]->data + i * (int64_t)esize,
                           (char *)arr[5]->data + i * (int64_t)esize, esize) != 0;
    }
    for (int i = 0; i < 6; i++)
        tex_array_free(arr[i]);
    tex_kernel_free(k);
    return diff;
}

static bool have_fma(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

static void strict_case(tex_dtype t, bool reduce)
{
    if (!tex_target_available("cpu"))
        TT_SKIP("no C compiler for the cpu target");
    static const char *const strict[] = {"cpu -strict-float", "cpu -threads=2 -strict-float"};
    for (int variant = 0; variant < 2; variant++) {
        chain c;
        chain_init(&c, t, reduce);
        TT_EQ_INT((int)bit_differences(&c, variant, strict[variant]), 0);
        /* The default contracts on an FMA machine: the same kernel differs. */
        int64_t loose = bit_differences(&c, variant, "cpu");
        if (have_fma() && loose == 0)
            TT_FAILF("plain \"cpu\" matched the oracle bit for bit (%s, variant %d): contraction "
                     "expected on this FMA machine, so the strict comparison proves nothing",
                     t == TEX_F32 ? "f32" : "f64", variant);
        tex_ctx_free(c.ctx);
    }
}

static void test_cpu_f32_chain(void)
{
    strict_case(TEX_F32, false);
}

static void test_cpu_f64_chain(void)
{
    strict_case(TEX_F64, false);
}

static void test_cpu_f32_dot(void)
{
    strict_case(TEX_F32, true);
}

static void test_cpu_f64_dot(void)
{
    strict_case(TEX_F64, true);
}

/* The option parses for every family; a misspelling names itself. */
static void test_targets(void)
{
    chain c;
    chain_init(&c, TEX_F32, false);
    tex_func *f = lower(&c, 0);
    TT_CHECK(f != NULL);
    static const char *const good[] = {"c -strict-float", "cuda -emit-only -strict-float",
                                       "cuda -strict-float -emit-only -arch=sm_90"};
    for (int i = 0; i < 3; i++) {
        tex_kernel *k = tex_build(f, good[i]);
        TT_CHECK(k != NULL);
        if (!k)
            TT_FAILF("%s: %s", good[i], tex_errmsg(c.ctx));
        tex_clear_error(c.ctx);
        tex_kernel_free(k);
    }
    TT_EQ_INT(tex_target_available("c -strict-float"), 1);
    TT_CHECK(tex_build(f, "cpu -strict-floats") == NULL);
    TT_EQ_INT(tex_errcode(c.ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(c.ctx), "'-strict-floats'") != NULL);
    tex_clear_error(c.ctx);
    TT_CHECK(tex_build(f, "c -threads=2") == NULL);
    TT_CHECK(strstr(tex_errmsg(c.ctx), "-strict-float") != NULL);
    tex_ctx_free(c.ctx);
}

/* The PTX of the chain for sm_80, or NULL (skip) when NVRTC made none. */
static char *chain_ptx(chain *c, const char *target)
{
    tex_schedule *s = tex_schedule_new(c->ctx, 1, &c->out);
    tex_stage *st = tex_stage_of(s, c->out);
    tex_iter *bx, *tx;
    TT_EQ_INT(tex_split(st, tex_op_axis(st, 0), tex_int(c->ctx, 128), &bx, &tx), 0);
    TT_EQ_INT(tex_bind(st, bx, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(st, tx, TEX_THREAD_X), 0);
    tex_tensor *args[5] = {c->A, c->B, c->C, c->D, c->out};
    tex_func *f = tex_lower_tensors(s, "chain", 5, args);
    tex_kernel *k = f ? tex_build(f, target) : NULL;
    if (!k) {
        TT_FAILF("%s: %s", target, tex_errmsg(c->ctx));
        return NULL;
    }
    const char *ptx = tex_kernel_ptx(k);
    char *copy = ptx ? strdup(ptx) : NULL;
    tex_kernel_free(k);
    return copy;
}

static void test_cuda_ptx(void)
{
    chain c;
    chain_init(&c, TEX_F32, false);
    char *loose = chain_ptx(&c, "cuda -emit-only -arch=sm_80");
    char *strict = chain_ptx(&c, "cuda -emit-only -arch=sm_80 -strict-float");
    if (!loose || !strict) {
        free(loose);
        free(strict);
        tex_ctx_free(c.ctx);
        TT_SKIP("no NVRTC: no PTX to inspect");
    }
    TT_CHECK(strstr(loose, "fma.rn.f32") != NULL);
    TT_CHECK(strstr(strict, "fma.rn") == NULL);
    TT_CHECK(strstr(strict, "mul.rn.f32") != NULL);
    free(loose);
    free(strict);
    tex_ctx_free(c.ctx);
}

int main(void)
{
    TT_RUN(test_cpu_f32_chain);
    TT_RUN(test_cpu_f64_chain);
    TT_RUN(test_cpu_f32_dot);
    TT_RUN(test_cpu_f64_dot);
    TT_RUN(test_targets);
    TT_RUN(test_cuda_ptx);
    return tt_finish();
}
