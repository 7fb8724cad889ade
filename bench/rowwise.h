/*
 * rowwise.h: the auto-scheduled cases of the row-wise benchmarks (bench/softmax,
 * bench/layernorm; header-only). A spec defines the computes of one row-wise
 * chain over a ROWS x COLS f32 matrix: its inputs (X first, then per-column
 * vectors such as gamma), its intermediates and its output. Two kernels are
 * built from them with tex_auto_schedule("cpu -threads=N"):
 *   fused    the output alone: the automatic scheduler fuses the chain into
 *            one parallel loop over rows (docs/auto_schedule.md);
 *   unfused  every intermediate an output too, so each op is a kernel of its
 *            own (a loop nest over the whole matrix, parallel and vectorized
 *            the same way) and the intermediates go through memory.
 * The fused result is checked against the spec's plain C reference (double
 * precision, relative error <= 1e-5), then timed interleaved with the
 * memory-bandwidth bound (softmax_copy: a parallel copy of the matrix, the
 * least time any such kernel can take), and again with the unfused kernel.
 * Lines:
 *   bench=NAME case=ROWSxCOLS/tT anchor=bandwidth ... (speedup = bound / tex)
 *   bench=NAME case=ROWSxCOLS/tT anchor=unfused ...
 */
#ifndef TEX_BENCH_ROWWISE_H
#define TEX_BENCH_ROWWISE_H

#include "common.h"
#include "softmax_hand.h"

#include <string.h>
#include <tex/tex.h>

enum { RW_MAX = 8 };

/* The shape of a tensor of the chain. */
typedef enum { RW_MATRIX, RW_ROW, RW_COL } rw_shape;

typedef struct {
    const char *name; /* the bench= name */
    int64_t rows, cols;
    int n_in, n_mid;
    rw_shape in_shape[RW_MAX], mid_shape[RW_MAX]; /* the output is a matrix */
    /* Builds the computes in c: in[n_in], mid[n_mid], *out; 0 or -1. */
    int (*define)(tex_ctx *c, int64_t rows, int64_t cols, tex_tensor **in, tex_tensor **mid,
                  tex_tensor **out);
    /* The output of the inputs in[] (row-major), in double, into want. */
    void (*reference)(int64_t rows, int64_t cols, float *const in[], float *want);
} rw_spec;

typedef struct {
    const rw_spec *spec;
    int threads;
    tex_kernel *fused, *unfused;
    int n_fused, n_unfused;               /* their argument counts */
    DLTensor *arr[2 * RW_MAX + 1];        /* in, mid, out */
    DLTensor *fused_args[2 * RW_MAX + 1]; /* in, out */
    float *copy_out;                      /* the bandwidth anchor's output */
    float *want;
} rw_case;

static inline DLTensor *rw_array(const rw_spec *sp, rw_shape sh)
{
    DLDevice cpu = {kDLCPU, 0};
    int64_t shape[2] = {sh == RW_COL ? sp->cols : sp->rows, sp->cols};
    return tex_array_new(sh == RW_MATRIX ? 2 : 1, shape, TEX_F32, cpu);
}

/* Builds the fused and unfused kernels; 0 or -1 (message printed). */
static inline int rw_build(rw_case *rc)
{
    const rw_spec *sp = rc->spec;
    char target[64];
    snprintf(target, sizeof target, "cpu -threads=%d", rc->threads);
    tex_ctx *c = tex_ctx_new();
    tex_tensor *t[2 * RW_MAX + 1], *out = NULL;
    if (!c || sp->define(c, sp->rows, sp->cols, t, t + sp->n_in, &out) != 0) {
        fprintf(stderr, "%s: %s\n", sp->name, c ? tex_errmsg(c) : "out of memory");
        tex_ctx_free(c);
        return -1;
    }
    int n_all = sp->n_in + sp->n_mid + 1;
    t[n_all - 1] = out;
    tex_tensor *fa[RW_MAX + 1];
    memcpy(fa, t, sizeof(tex_tensor *) * (size_t)sp->n_in);
    fa[sp->n_in] = out;
    rc->n_fused = sp->n_in + 1;
    rc->n_unfused = n_all;
    tex_schedule *sf = tex_auto_schedule(c, 1, &out, target);
    tex_func *ff = sf ? tex_lower_tensors(sf, "fused", rc->n_fused, fa) : NULL;
    rc->fused = ff ? tex_build(ff, target) : NULL;
    tex_schedule *su = tex_auto_schedule(c, sp->n_mid + 1, t + sp->n_in, target);
    tex_func *fu = su ? tex_lower_tensors(su, "unfused", n_all, t) : NULL;
    rc->unfused = fu ? tex_build(fu, target) : NULL;
    if (!rc->fused || !rc->unfused)
        fprintf(stderr, "%s: %s\n", sp->name, tex_errmsg(c));
    tex_ctx_free(c);
    return rc->fused && rc->unfused ? 0 : -1;
}

static inline int rw_alloc(rw_case *rc)
{
    const rw_spec *sp = rc->spec;
    int n_all = sp->n_in + sp->n_mid + 1;
    float *in[RW_MAX];
    for (int a = 0; a < n_all; a++) {
        rw_shape sh = a < sp->n_in               ? sp->in_shape[a]
                      : a < sp->n_in + sp->n_mid ? sp->mid_shape[a - sp->n_in]
                                                 : RW_MATRIX;
        if (!(rc->arr[a] = rw_array(sp, sh)))
            return -1;
        if (a < sp->n_in) {
            int64_t n = sh == RW_MATRIX ? sp->rows * sp->cols : sh == RW_ROW ? sp->rows : sp->cols;
            bench_fill_random(rc->arr[a]->data, n, (uint64_t)a + 1);
            in[a] = rc->arr[a]->data;
            rc->fused_args[a] = rc->arr[a];
        }
    }
    rc->fused_args[sp->n_in] = rc->arr[n_all - 1];
    rc->copy_out = bench_floats(sp->rows * sp->cols);
    rc->want = bench_floats(sp->rows * sp->cols);
    if (!rc->copy_out || !rc->want)
        return -1;
    sp->reference(sp->rows, sp->cols, in, rc->want);
    return 0;
}

static inline void rw_release(rw_case *rc)
{
    tex_kernel_free(rc->fused);
    tex_kernel_free(rc->unfused);
    for (int a = 0; a < 2 * RW_MAX + 1; a++)
        tex_array_free(rc->arr[a]);
    free(rc->copy_out);
    free(rc->want);
}

static inline int rw_run_fused(void *arg)
{
    rw_case *rc = arg;
    return tex_kernel_call_tensors(rc->fused, rc->n_fused, rc->fused_args);
}

static inline int rw_run_unfused(void *arg)
{
    rw_case *rc = arg;
    return tex_kernel_call_tensors(rc->unfused, rc->n_unfused, rc->arr);
}

static inline int rw_run_copy(void *arg)
{
    rw_case *rc = arg;
    softmax_copy(rc->arr[0]->data, rc->copy_out, rc->spec->rows, rc->spec->cols, rc->threads);
    return 0;
}

/* Prints the generated C of sp's fused kernel on `threads` threads; 0 or 1. */
static inline int rw_print_source(const rw_spec *sp, int threads)
{
    rw_case rc = {.spec = sp, .threads = threads};
    int rc_build = rw_build(&rc);
    if (rc_build == 0)
        fputs(tex_kernel_source(rc.fused), stdout);
    rw_release(&rc);
    return rc_build == 0 ? 0 : 1;
}

/* The two lines of spec sp on `threads` threads (top comment). */
static inline void rw_run_case(const rw_spec *sp, int threads)
{
    char desc[64];
    snprintf(desc, sizeof desc, "%lldx%lld/t%d", (long long)sp->rows, (long long)sp->cols, threads);
    rw_case rc = {.spec = sp, .threads = threads};
    if (rw_alloc(&rc) != 0 || rw_build(&rc) != 0)
        bench_fail(sp->name, desc, "setup_failed");
    int64_t n = sp->rows * sp->cols;
    float *y = rc.arr[sp->n_in + sp->n_mid]->data;
    for (int k = 0; k < 2; k++) {                   /* the unfused kernel, then the fused one */
        memset(y, 0xff, sizeof(float) * (size_t)n); /* NaN: must be overwritten */
        if ((k ? rw_run_fused(&rc) : rw_run_unfused(&rc)) != 0)
            bench_fail(sp->name, desc, "call_failed");
        bench_check_close(sp->name, desc, y, rc.want, n, 1e-5);
    }
    /* one interleaving per anchor: the unfused kernel's 100 MiB of
     * intermediates, run between them, would push X out of the shared L3
     * and slow the copy (in one run of all three the fused kernel beat the
     * copy by 1.1-1.4x, the copy taking twice as long as alone with it) */
    bench_run fused = {rw_run_fused, &rc, NULL};
    if (bench_compare(sp->name, desc, fused, "bandwidth", (bench_run){rw_run_copy, &rc, NULL},
                      1000) != 0 ||
        bench_compare(sp->name, desc, fused, "unfused", (bench_run){rw_run_unfused, &rc, NULL},
                      1000) != 0)
        bench_fail(sp->name, desc, "call_failed");
    rw_release(&rc);
}

#endif
