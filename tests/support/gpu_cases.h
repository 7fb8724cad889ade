/*
 * gpu_cases.h: the GPU schedules shared by the CUDA tests, built with the
 * public API only (<tex/tex.h>), so that the interpreter check and the PTX
 * check (tests/unit/test_cuda_ptx.c), the emulator and the real-GPU runner
 * (tests/cuda/gpu_run.c) all use the same cases. Header-only (static
 * inline functions); the schedule steps' failures are recorded, never
 * printed.
 *
 * gc_build(ctx, id, sizes, symbolic, &c) defines the computation of case id
 * in ctx, schedules it for a GPU, lowers it (tex_lower_tensors; parameters:
 * the inputs, then the outputs) and fills c: the function, its tensors in
 * parameter order with their concrete shapes at these sizes, how many are
 * outputs, the tolerance of a comparison with the oracle. With `symbolic`,
 * the case's sizes are tex_vars (read from the arrays' shapes at call time;
 * all but conv2d's channels and filters, the sum's block count, the stencil's sizes and
 * b2b's M, N0 and N1: a symbolic M leaves P0's local tile without a constant bound).
 * gc_default_sizes gives the sizes of each scale: GC_SMALL (interpreter,
 * emulator: every size a non-multiple of the tile factors, except
 * vectile's, whose vectorized loops need guard-free tiles) and GC_LARGE (a
 * real GPU).
 *
 * The cases (threads per block in brackets):
 *   matmul     C = A B. 64x64 block tile, 16x16 threads with 4x4 outputs
 *              each in a local write cache, k split by 8; A and B tiles
 *              (64x8, 8x64) cache_read into shared memory at k.outer,
 *              fetched cooperatively (fused, split by 256, bound to the same
 *              threadIdx.y/x as the consumer), double-buffered. Threads
 *              read what others fetched inside their own loops, so the
 *              lowered function needs barriers (c->needs_sync). [256]
 *   transpose  B[j, i] = A[i, j] through a 32x32 shared tile with
 *              storage_align(32, 1) (row stride 33: no bank conflicts);
 *              32x8 threads, 4 rows each. [256]
 *   softmax    one block per row; the row max and the sum of exp are
 *              rfactor'ed over a split of the row by 128 and reduced across
 *              threadIdx.x (cross-thread reduction), computed at the row in
 *              shared memory; the output row split over the threads. [128]
 *   layernorm  the same pattern for the mean and the variance. [128]
 *   conv2d     NCHW, 3x3, stride 1, zero padding 1 through an inlined
 *              padded compute (select over a clamped read); (n, f) fused on
 *              blockIdx.z, 16x16 output tiles on blockIdx.y/x and
 *              threadIdx.y/x; the filter of f (C x 3 x 3) cache_read into
 *              shared memory per block (attached at the block, fetched by a
 *              thread nest of its own before the compute's). [256]
 *   sum        S[0] = sum of a long vector across blocks: split by nparts
 *              (one part per block) and rfactor'ed into a global partial per
 *              block, itself reduced across 128 threads (rfactor + thread
 *              binding); a second kernel reduces the partials the same way.
 *              [128]
 *   vectile    Y[i, j] = X[i, j] * 2 + B[j] by 16x64 block tiles; X's tile
 *              cache_read into shared memory per block, fetched by 16x16
 *              threads with 4 consecutive elements each (vectorized: float4
 *              loads and stores where aligned); each thread computes 4
 *              consecutive outputs (vectorized). [256]
 *   stencil    O = the 5-point heat step of Rodinia's hotspot over a
 *              temperature grid T with a one-cell halo, plus a power term P:
 *              O[i, j] = T[i+1, j+1] + 0.125 (T's four neighbours - 4 T[i+1,
 *              j+1]) + 0.25 P[i, j]. 8x64 block tiles, one output per
 *              thread (threadIdx.y/x); T's tile and halo (10x66)
 *              cache_read into shared memory per block, fetched
 *              cooperatively. [512]
 *   b2b        back-to-back GEMM D0 = relu(0.5 A0 B0), D1 = relu(0.75 D0 B1
 *              - 0.5 C1), block-resident: D1 in blocks of 16 rows (all N1
 *              columns; 16x16 threads, 16 / ceil(N1 / 16) outputs each, P1's
 *              accumulators local); D0's 16 x N0 tile computed at the block
 *              in shared memory (never written to global memory), its rows
 *              and columns split over the same threads, P0's accumulators
 *              local; a barrier between D0 and its readers. [256]
 *   b2b_unfused the same with D0 at root, a kernel of its own writing it to
 *              global memory (the time b2b is compared with). [256]
 *   auto_matmul, auto_softmax, auto_layernorm, auto_conv2d  matmul + bias +
 *              relu, softmax, layernorm and conv2d (NCHW, 3x3, padding 1) +
 *              bias + relu built from tex_op_* and scheduled by
 *              tex_auto_schedule(..., "cuda") (docs/auto_schedule.md).
 *   b2b_tc, b2b_tc_unfused, b2b_regs  back-to-back GEMM on tensor cores:
 *              D0 = f16(relu(A0 B0)), D1 = relu(0.75 D0 B1 - 0.5 C1), f16
 *              A0, B0, B1, f32 accumulation, constant sizes (multiples of
 *              16); one warp per 16 rows. b2b_tc: P0, D0, P1 in shared
 *              memory at the block (wmma); b2b_tc_unfused: D0 through global
 *              memory; b2b_regs: P0 and D0 in registers (mma.sync fragment
 *              tiles), only P1 in shared memory (support/b2b_tc.h). [32]
 * Inputs from gc_fill are multiples of 1/4 in [-2, 2]: sums of their
 * products are exact in f32 at these sizes, so matmul, conv2d and sum
 * match the oracle whatever the order of accumulation.
 */
#ifndef TEX_TESTS_SUPPORT_GPU_CASES_H
#define TEX_TESTS_SUPPORT_GPU_CASES_H

#include "support/b2b_tc.h"
#include "tex/tex.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define GC_MAX_TENSORS 8
#define GC_MAX_DIMS 4
#define GC_MAX_SIZES 6

typedef enum {
    GC_MATMUL,
    GC_TRANSPOSE,
    GC_SOFTMAX,
    GC_LAYERNORM,
    GC_CONV2D,
    GC_SUM,
    GC_VECTILE,
    GC_STENCIL,
    GC_B2B,
    GC_B2B_UNFUSED,
    GC_AUTO_MATMUL,
    GC_AUTO_SOFTMAX,
    GC_AUTO_LAYERNORM,
    GC_AUTO_CONV2D,
    GC_B2B_TC,
    GC_B2B_TC_UNFUSED,
    GC_B2B_REGS,
    GC_N_CASES
} gc_id;

typedef enum { GC_SMALL, GC_LARGE } gc_scale;

typedef struct {
    const char *name; /* the case's name, also the lowered function's */
    tex_ctx *ctx;
    tex_func *f; /* NULL when the case could not be built (why says why) */
    int n;       /* tensors = kernel parameters: inputs then outputs */
    tex_tensor *tensors[GC_MAX_TENSORS];
    int ndim[GC_MAX_TENSORS];
    int64_t shape[GC_MAX_TENSORS][GC_MAX_DIMS]; /* concrete shapes at the sizes built for */
    tex_dtype dtype[GC_MAX_TENSORS];            /* f32, or f16 (inputs only) */
    int n_in;                                   /* tensors[0 .. n_in) are inputs */
    int n_out;                                  /* tensors[n_in .. n) are outputs */
    double tol;                                 /* max |got - want| / max(1, |want|) accepted */
    bool symbolic;
    bool needs_sync; /* threads read shared data other threads fetched inside their
                        loops: the lowered function needs barriers (thread_sync) */
    int64_t sizes[GC_MAX_SIZES];
    char why[1024]; /* first failure: the schedule step and tex_errmsg */
} gc_case;

static const char *const gc_names[GC_N_CASES] = {
    "matmul",         "transpose",   "softmax", "layernorm",      "conv2d",      "sum",
    "vectile",        "stencil",     "b2b",     "b2b_unfused",    "auto_matmul", "auto_softmax",
    "auto_layernorm", "auto_conv2d", "b2b_tc",  "b2b_tc_unfused", "b2b_regs"};

/* Sizes per case: matmul M N K; transpose M N; softmax, layernorm M N;
 * conv2d batch, channels, H, W, filters; sum L, blocks; vectile M N;
 * stencil M N (the output's; T is (M+2) x (N+2)); b2b, b2b_unfused and the
 * tensor-core b2b cases M K0 N0 N1;
 * the auto_ cases as their hand-scheduled namesakes. */
static inline void gc_default_sizes(gc_id id, gc_scale scale, int64_t sizes[GC_MAX_SIZES])
{
    static const int64_t small[GC_N_CASES][GC_MAX_SIZES] = {
        {80, 72, 20},     {70, 45},        {5, 300},  {4, 250},          {2, 3, 10, 19, 4},
        {5000, 8},        {48, 192},       {21, 133}, {40, 20, 24, 36},  {40, 20, 24, 36},
        {80, 72, 20},     {5, 300},        {4, 250},  {2, 3, 10, 19, 4}, {32, 48, 32, 48},
        {32, 48, 32, 48}, {32, 48, 32, 48}};
    static const int64_t large[GC_N_CASES][GC_MAX_SIZES] = {
        {1024, 1024, 1024},    {4096, 4096},          {4096, 4096},          {4096, 4096},
        {4, 32, 56, 56, 32},   {1 << 24, 512},        {4096, 4096},          {4096, 4096},
        {16384, 576, 64, 128}, {16384, 576, 64, 128}, {1024, 1024, 1024},    {4096, 4096},
        {4096, 4096},          {4, 32, 56, 56, 32},   {16384, 576, 64, 128}, {16384, 576, 64, 128},
        {16384, 576, 64, 128}};
    memcpy(sizes, scale == GC_SMALL ? small[id] : large[id], sizeof small[id]);
}

/* ------------------------------------------------------------- helpers */

/* Records the first failure of step `what` (its return code and the context's message). */
static inline bool gc_ok(gc_case *c, int rc, const char *what)
{
    if (rc == 0)
        return true;
    if (!c->why[0])
        snprintf(c->why, sizeof c->why, "%s failed (%d): %s", what, rc, tex_errmsg(c->ctx));
    return false;
}

/* gc_ok for a constructor's result. */
static inline bool gc_ok_p(gc_case *c, const void *p, const char *what)
{
    return gc_ok(c, p ? 0 : (tex_errcode(c->ctx) ? tex_errcode(c->ctx) : -1), what);
}

#define GC_TRY(c, call)                                                                            \
    do {                                                                                           \
        if (!gc_ok((c), (call), #call))                                                            \
            return;                                                                                \
    } while (0)

#define GC_TRYP(c, lhs, call)                                                                      \
    do {                                                                                           \
        (lhs) = (call);                                                                            \
        if (!gc_ok_p((c), (lhs), #call))                                                           \
            return;                                                                                \
    } while (0)

/* A size: the constant v, or a symbolic i32 variable (v at call time). */
static inline tex_expr *gc_dim(gc_case *c, const char *name, int64_t v)
{
    return c->symbolic ? tex_var(c->ctx, name, TEX_I32) : tex_int(c->ctx, v);
}

static inline tex_expr *gc_i(gc_case *c, int64_t v)
{
    return tex_int(c->ctx, v);
}

static inline tex_expr *gc_f(gc_case *c, double v)
{
    return tex_const(c->ctx, TEX_F32, v);
}

/* Appends parameter t with its concrete shape. */
static inline void gc_param(gc_case *c, tex_tensor *t, int ndim, const int64_t shape[])
{
    if (c->n == GC_MAX_TENSORS)
        return;
    c->tensors[c->n] = t;
    c->dtype[c->n] = tex_tensor_dtype(t);
    c->ndim[c->n] = ndim;
    memcpy(c->shape[c->n], shape, sizeof(int64_t) * (size_t)ndim);
    c->n++;
}

static inline tex_tensor *gc_input_t(gc_case *c, const char *name, tex_dtype dt, int ndim,
                                     tex_expr *const shape[], const int64_t concrete[])
{
    tex_tensor *t = tex_placeholder(c->ctx, name, dt, ndim, shape);
    gc_param(c, t, ndim, concrete);
    c->n_in++;
    return t;
}

static inline tex_tensor *gc_input(gc_case *c, const char *name, int ndim, tex_expr *const shape[],
                                   const int64_t concrete[])
{
    return gc_input_t(c, name, TEX_F32, ndim, shape, concrete);
}

static inline tex_tensor *gc_output(gc_case *c, tex_tensor *t, int ndim, const int64_t concrete[])
{
    gc_param(c, t, ndim, concrete);
    c->n_out++;
    return t;
}

/* Splits the reduction of R by `threads`, rfactors the inner part (the
 * per-thread partials, a local stage over the outer part) and binds R's
 * remaining reduction over the threads to threadIdx.x. With `at`, R is
 * computed at (at, at_iv) in `scope`. The factored tensor, or NULL. */
static inline tex_tensor *gc_thread_reduce(gc_case *c, tex_schedule *s, tex_tensor *R,
                                           int64_t threads, tex_stage *at, tex_iter *at_iv,
                                           tex_scope scope)
{
    tex_stage *sr = tex_stage_of(s, R);
    tex_iter *ko, *ki;
    if (!gc_ok(c, tex_split(sr, tex_op_reduce_axis(sr, 0), gc_i(c, threads), &ko, &ki),
               "split (reduction by the threads)"))
        return NULL;
    tex_tensor *RF = tex_rfactor(s, R, ki, tex_tensor_ndim(R));
    if (!gc_ok_p(c, RF, "tex_rfactor"))
        return NULL;
    tex_iter *tx = tex_op_reduce_axis(sr, 0);
    if (!gc_ok(c, tex_bind(sr, tx, TEX_THREAD_X), "tex_bind (reduction to threadIdx.x)"))
        return NULL;
    if (at && !(gc_ok(c, tex_compute_at(sr, at, at_iv), "tex_compute_at (reduction)") &&
                gc_ok(c, tex_set_scope(sr, scope), "tex_set_scope (reduction)")))
        return NULL;
    tex_stage *sf = tex_stage_of(s, RF);
    if (!(gc_ok(c, tex_compute_at(sf, sr, tx), "tex_compute_at (partials)") &&
          gc_ok(c, tex_set_scope(sf, TEX_SCOPE_LOCAL), "tex_set_scope (partials)")))
        return NULL;
    return RF;
}

/* Cooperative fetch of a shared stage attached inside a threadIdx.y/x nest
 * of ty x tx threads: its axes fused, split by the block size, the inner part
 * bound to threadIdx.y/x (the consumer's threads), the outer part serial. */
static inline bool gc_coop_fetch(gc_case *c, tex_stage *st, int naxes, int64_t ty, int64_t tx)
{
    tex_iter *fu = tex_op_axis(st, 0), *fo, *fi, *fy, *fx;
    for (int a = 1; a < naxes; a++)
        if (!gc_ok(c, tex_fuse(st, fu, tex_op_axis(st, a), &fu), "tex_fuse (fetch)"))
            return false;
    return gc_ok(c, tex_split(st, fu, gc_i(c, ty * tx), &fo, &fi), "tex_split (fetch)") &&
           gc_ok(c, tex_split(st, fi, gc_i(c, tx), &fy, &fx), "tex_split (fetch threads)") &&
           gc_ok(c, tex_bind(st, fy, TEX_THREAD_Y), "tex_bind (fetch threadIdx.y)") &&
           gc_ok(c, tex_bind(st, fx, TEX_THREAD_X), "tex_bind (fetch threadIdx.x)");
}

/* ---------------------------------------------------------------- cases */

enum { GC_MM_BLOCK = 64, GC_MM_THREADS = 16, GC_MM_KTILE = 8 };

static inline void gc_matmul(gc_case *c, tex_schedule **sp)
{
    const int64_t *z = c->sizes;
    tex_ctx *x = c->ctx;
    tex_expr *M = gc_dim(c, "M", z[0]), *N = gc_dim(c, "N", z[1]), *K = gc_dim(c, "K", z[2]);
    tex_tensor *A = gc_input(c, "A", 2, (tex_expr *[]){M, K}, (int64_t[]){z[0], z[2]});
    tex_tensor *B = gc_input(c, "B", 2, (tex_expr *[]){K, N}, (int64_t[]){z[2], z[1]});
    tex_iter *i = tex_axis(x, "i", M), *j = tex_axis(x, "j", N), *k = tex_reduce_axis(x, "k", K);
    tex_expr *prod = tex_mul(TEX_AT(A, tex_iv(i), tex_iv(k)), TEX_AT(B, tex_iv(k), tex_iv(j)));
    tex_tensor *C;
    GC_TRYP(c, C, tex_compute(x, "C", 2, (tex_iter *[]){i, j}, tex_sum(prod, 1, &k)));
    gc_output(c, C, 2, (int64_t[]){z[0], z[1]});
    tex_schedule *s;
    GC_TRYP(c, s, tex_schedule_new(x, 1, &C));
    *sp = s;
    tex_tensor *CL, *AA, *BB;
    GC_TRYP(c, CL, tex_cache_write(s, C, TEX_SCOPE_LOCAL));
    GC_TRYP(c, AA, tex_cache_read(s, A, TEX_SCOPE_SHARED, 1, &CL));
    GC_TRYP(c, BB, tex_cache_read(s, B, TEX_SCOPE_SHARED, 1, &CL));
    tex_stage *sc = tex_stage_of(s, C), *sl = tex_stage_of(s, CL);
    tex_iter *by, *yi, *bx, *xi, *ty, *yii, *tx, *xii, *ko, *ki;
    GC_TRY(c, tex_split(sc, tex_op_axis(sc, 0), gc_i(c, GC_MM_BLOCK), &by, &yi));
    GC_TRY(c, tex_split(sc, tex_op_axis(sc, 1), gc_i(c, GC_MM_BLOCK), &bx, &xi));
    GC_TRY(c, tex_split_nparts(sc, yi, gc_i(c, GC_MM_THREADS), &ty, &yii));
    GC_TRY(c, tex_split_nparts(sc, xi, gc_i(c, GC_MM_THREADS), &tx, &xii));
    GC_TRY(c, tex_reorder(sc, 6, (tex_iter *[]){by, bx, ty, tx, yii, xii}));
    GC_TRY(c, tex_bind(sc, by, TEX_BLOCK_Y));
    GC_TRY(c, tex_bind(sc, bx, TEX_BLOCK_X));
    GC_TRY(c, tex_bind(sc, ty, TEX_THREAD_Y));
    GC_TRY(c, tex_bind(sc, tx, TEX_THREAD_X));
    GC_TRY(c, tex_compute_at(sl, sc, tx));
    GC_TRY(c, tex_split(sl, tex_op_reduce_axis(sl, 0), gc_i(c, GC_MM_KTILE), &ko, &ki));
    GC_TRY(c, tex_reorder(sl, 4, (tex_iter *[]){ko, ki, tex_op_axis(sl, 0), tex_op_axis(sl, 1)}));
    c->needs_sync = true;
    tex_tensor *shared[2] = {AA, BB};
    for (int t = 0; t < 2; t++) {
        tex_stage *sa = tex_stage_of(s, shared[t]);
        GC_TRY(c, tex_compute_at(sa, sl, ko));
        if (!gc_coop_fetch(c, sa, 2, GC_MM_THREADS, GC_MM_THREADS))
            return;
        GC_TRY(c, tex_double_buffer(sa));
    }
}

enum { GC_TR_TILE = 32, GC_TR_ROWS = 8 };

static inline void gc_transpose(gc_case *c, tex_schedule **sp)
{
    const int64_t *z = c->sizes;
    tex_ctx *x = c->ctx;
    tex_expr *M = gc_dim(c, "M", z[0]), *N = gc_dim(c, "N", z[1]);
    tex_tensor *A = gc_input(c, "A", 2, (tex_expr *[]){M, N}, (int64_t[]){z[0], z[1]});
    tex_iter *j = tex_axis(x, "j", N), *i = tex_axis(x, "i", M);
    tex_tensor *B;
    GC_TRYP(c, B, tex_compute(x, "B", 2, (tex_iter *[]){j, i}, TEX_AT(A, tex_iv(i), tex_iv(j))));
    gc_output(c, B, 2, (int64_t[]){z[1], z[0]});
    tex_schedule *s;
    GC_TRYP(c, s, tex_schedule_new(x, 1, &B));
    *sp = s;
    tex_tensor *AS;
    GC_TRYP(c, AS, tex_cache_read(s, A, TEX_SCOPE_SHARED, 1, &B));
    tex_stage *sb = tex_stage_of(s, B), *sa = tex_stage_of(s, AS);
    tex_iter *jo, *io, *ji, *ii, *jio, *jit, *aio, *ait;
    tex_expr *tile = gc_i(c, GC_TR_TILE);
    GC_TRY(c, tex_tile(sb, j, i, tile, tile, &jo, &io, &ji, &ii));
    GC_TRY(c, tex_split(sb, ji, gc_i(c, GC_TR_ROWS), &jio, &jit));
    GC_TRY(c, tex_reorder(sb, 5, (tex_iter *[]){jo, io, jit, ii, jio}));
    GC_TRY(c, tex_bind(sb, jo, TEX_BLOCK_Y));
    GC_TRY(c, tex_bind(sb, io, TEX_BLOCK_X));
    GC_TRY(c, tex_bind(sb, jit, TEX_THREAD_Y));
    GC_TRY(c, tex_bind(sb, ii, TEX_THREAD_X));
    GC_TRY(c, tex_compute_at(sa, sb, io));
    GC_TRY(c, tex_storage_align(sa, tex_op_axis(sa, 0), GC_TR_TILE, 1));
    GC_TRY(c, tex_split(sa, tex_op_axis(sa, 0), gc_i(c, GC_TR_ROWS), &aio, &ait));
    GC_TRY(c, tex_reorder(sa, 3, (tex_iter *[]){ait, tex_op_axis(sa, 1), aio}));
    GC_TRY(c, tex_bind(sa, ait, TEX_THREAD_Y));
    GC_TRY(c, tex_bind(sa, tex_op_axis(sa, 1), TEX_THREAD_X));
}

enum { GC_ROW_THREADS = 128 };

/* Splits Y's row over the threads: Y[i, jo*T + jt], i on blockIdx.x, jt on threadIdx.x. */
static inline void gc_rows_output(gc_case *c, tex_stage *sy)
{
    tex_iter *i = tex_op_axis(sy, 0), *jo, *jt;
    GC_TRY(c, tex_split(sy, tex_op_axis(sy, 1), gc_i(c, GC_ROW_THREADS), &jo, &jt));
    GC_TRY(c, tex_reorder(sy, 3, (tex_iter *[]){i, jt, jo}));
    GC_TRY(c, tex_bind(sy, i, TEX_BLOCK_X));
    GC_TRY(c, tex_bind(sy, jt, TEX_THREAD_X));
}

/* Two row statistics R1, R2 (R2 may read R1) computed per row of Y in
 * shared memory by cross-thread reductions. */
static inline void gc_rows_schedule(gc_case *c, tex_schedule *s, tex_tensor *Y, tex_tensor *R1,
                                    tex_tensor *R2)
{
    tex_stage *sy = tex_stage_of(s, Y);
    tex_iter *row = tex_op_axis(sy, 0);
    if (!gc_thread_reduce(c, s, R1, GC_ROW_THREADS, sy, row, TEX_SCOPE_SHARED) ||
        !gc_thread_reduce(c, s, R2, GC_ROW_THREADS, sy, row, TEX_SCOPE_SHARED))
        return;
    gc_rows_output(c, sy);
}

static inline void gc_softmax(gc_case *c, tex_schedule **sp)
{
    const int64_t *z = c->sizes;
    tex_ctx *x = c->ctx;
    tex_expr *M = gc_dim(c, "M", z[0]), *N = gc_dim(c, "N", z[1]);
    tex_tensor *X = gc_input(c, "X", 2, (tex_expr *[]){M, N}, (int64_t[]){z[0], z[1]});
    tex_iter *i1 = tex_axis(x, "i", M), *k1 = tex_reduce_axis(x, "k", N);
    tex_tensor *Mx, *Se, *Y;
    GC_TRYP(
        c, Mx,
        tex_compute(x, "Mx", 1, &i1, tex_reduce_max(TEX_AT(X, tex_iv(i1), tex_iv(k1)), 1, &k1)));
    tex_iter *i2 = tex_axis(x, "i", M), *k2 = tex_reduce_axis(x, "k", N);
    tex_expr *e2 = tex_exp(tex_sub(TEX_AT(X, tex_iv(i2), tex_iv(k2)), TEX_AT(Mx, tex_iv(i2))));
    GC_TRYP(c, Se, tex_compute(x, "Se", 1, &i2, tex_sum(e2, 1, &k2)));
    tex_iter *i3 = tex_axis(x, "i", M), *j3 = tex_axis(x, "j", N);
    tex_expr *e3 = tex_exp(tex_sub(TEX_AT(X, tex_iv(i3), tex_iv(j3)), TEX_AT(Mx, tex_iv(i3))));
    GC_TRYP(c, Y,
            tex_compute(x, "Y", 2, (tex_iter *[]){i3, j3}, tex_div(e3, TEX_AT(Se, tex_iv(i3)))));
    gc_output(c, Y, 2, (int64_t[]){z[0], z[1]});
    tex_schedule *s;
    GC_TRYP(c, s, tex_schedule_new(x, 1, &Y));
    *sp = s;
    gc_rows_schedule(c, s, Y, Mx, Se);
}

static inline void gc_layernorm(gc_case *c, tex_schedule **sp)
{
    const int64_t *z = c->sizes;
    tex_ctx *x = c->ctx;
    tex_expr *M = gc_dim(c, "M", z[0]), *N = gc_dim(c, "N", z[1]);
    tex_tensor *X = gc_input(c, "X", 2, (tex_expr *[]){M, N}, (int64_t[]){z[0], z[1]});
    tex_tensor *G = gc_input(c, "G", 1, &N, &z[1]), *Bt = gc_input(c, "Bt", 1, &N, &z[1]);
    tex_expr *invn = tex_div(gc_f(c, 1.0), tex_cast(TEX_F32, N));
    tex_iter *i1 = tex_axis(x, "i", M), *k1 = tex_reduce_axis(x, "k", N);
    tex_tensor *Mean, *Var, *Y;
    GC_TRYP(c, Mean,
            tex_compute(x, "Mean", 1, &i1,
                        tex_sum(tex_mul(TEX_AT(X, tex_iv(i1), tex_iv(k1)), invn), 1, &k1)));
    tex_iter *i2 = tex_axis(x, "i", M), *k2 = tex_reduce_axis(x, "k", N);
    tex_expr *d2 = tex_sub(TEX_AT(X, tex_iv(i2), tex_iv(k2)), TEX_AT(Mean, tex_iv(i2)));
    GC_TRYP(c, Var, tex_compute(x, "Var", 1, &i2, tex_sum(tex_mul(tex_mul(d2, d2), invn), 1, &k2)));
    tex_iter *i3 = tex_axis(x, "i", M), *j3 = tex_axis(x, "j", N);
    tex_expr *d3 = tex_sub(TEX_AT(X, tex_iv(i3), tex_iv(j3)), TEX_AT(Mean, tex_iv(i3)));
    tex_expr *norm = tex_mul(d3, tex_rsqrt(tex_add(TEX_AT(Var, tex_iv(i3)), gc_f(c, 1e-5))));
    GC_TRYP(c, Y,
            tex_compute(x, "Y", 2, (tex_iter *[]){i3, j3},
                        tex_add(tex_mul(norm, TEX_AT(G, tex_iv(j3))), TEX_AT(Bt, tex_iv(j3)))));
    gc_output(c, Y, 2, (int64_t[]){z[0], z[1]});
    tex_schedule *s;
    GC_TRYP(c, s, tex_schedule_new(x, 1, &Y));
    *sp = s;
    gc_rows_schedule(c, s, Y, Mean, Var);
}

enum { GC_CONV_TILE = 16, GC_CONV_K = 3, GC_CONV_PAD = 1 };

/* Pad[n, c, h, w] = in bounds ? D[n, c, clamp(h - 1), clamp(w - 1)] : 0 (inlined). */
static inline tex_tensor *gc_conv_pad(gc_case *c, tex_tensor *D, tex_expr *N, tex_expr *C,
                                      tex_expr *H, tex_expr *W)
{
    tex_ctx *x = c->ctx;
    tex_expr *P = gc_i(c, GC_CONV_PAD), *zero = gc_i(c, 0), *one = gc_i(c, 1);
    tex_iter *pn = tex_axis(x, "n", N), *pc = tex_axis(x, "c", C);
    tex_iter *ph = tex_axis(x, "h", tex_add(H, gc_i(c, 2 * GC_CONV_PAD)));
    tex_iter *pw = tex_axis(x, "w", tex_add(W, gc_i(c, 2 * GC_CONV_PAD)));
    tex_expr *hy = tex_sub(tex_iv(ph), P), *wx = tex_sub(tex_iv(pw), P);
    tex_expr *inb =
        tex_and(tex_and(tex_ge(hy, zero), tex_lt(hy, H)), tex_and(tex_ge(wx, zero), tex_lt(wx, W)));
    tex_expr *hc = tex_min(tex_max(hy, zero), tex_sub(H, one));
    tex_expr *wc = tex_min(tex_max(wx, zero), tex_sub(W, one));
    tex_expr *val = TEX_AT(D, tex_iv(pn), tex_iv(pc), hc, wc);
    return tex_compute(x, "Pad", 4, (tex_iter *[]){pn, pc, ph, pw},
                       tex_select(inb, val, gc_f(c, 0)));
}

/* The conv2d cases' sizes (file comment: batch, channels, H, W, filters) and
 * inputs: D [N, C, H, W] and the 3x3 filters Wt [F, C, K, K]. */
typedef struct {
    tex_expr *N, *C, *H, *W, *F, *KK;
    tex_tensor *D, *Wt;
} gc_conv_in;

static inline gc_conv_in gc_conv_inputs(gc_case *c)
{
    const int64_t *z = c->sizes;
    gc_conv_in in = {gc_dim(c, "N", z[0]),
                     gc_i(c, z[1]),
                     gc_dim(c, "H", z[2]),
                     gc_dim(c, "W", z[3]),
                     gc_i(c, z[4]),
                     gc_i(c, GC_CONV_K),
                     NULL,
                     NULL};
    in.D = gc_input(c, "D", 4, (tex_expr *[]){in.N, in.C, in.H, in.W},
                    (int64_t[]){z[0], z[1], z[2], z[3]});
    in.Wt = gc_input(c, "Wt", 4, (tex_expr *[]){in.F, in.C, in.KK, in.KK},
                     (int64_t[]){z[4], z[1], GC_CONV_K, GC_CONV_K});
    return in;
}

static inline void gc_conv2d(gc_case *c, tex_schedule **sp)
{
    const int64_t *z = c->sizes;
    tex_ctx *x = c->ctx;
    gc_conv_in in = gc_conv_inputs(c);
    tex_expr *N = in.N, *C = in.C, *H = in.H, *W = in.W, *F = in.F, *KK = in.KK;
    tex_tensor *D = in.D, *Wt = in.Wt;
    tex_tensor *Pad;
    GC_TRYP(c, Pad, gc_conv_pad(c, D, N, C, H, W));
    tex_iter *on = tex_axis(x, "n", N), *of = tex_axis(x, "f", F), *oy = tex_axis(x, "y", H);
    tex_iter *ox = tex_axis(x, "x", W), *rc = tex_reduce_axis(x, "rc", C);
    tex_iter *ry = tex_reduce_axis(x, "ry", KK), *rx = tex_reduce_axis(x, "rx", KK);
    tex_expr *body = tex_mul(TEX_AT(Pad, tex_iv(on), tex_iv(rc), tex_add(tex_iv(oy), tex_iv(ry)),
                                    tex_add(tex_iv(ox), tex_iv(rx))),
                             TEX_AT(Wt, tex_iv(of), tex_iv(rc), tex_iv(ry), tex_iv(rx)));
    tex_tensor *Out;
    GC_TRYP(c, Out,
            tex_compute(x, "Out", 4, (tex_iter *[]){on, of, oy, ox},
                        tex_sum(body, 3, (tex_iter *[]){rc, ry, rx})));
    gc_output(c, Out, 4, (int64_t[]){z[0], z[4], z[2], z[3]});
    tex_schedule *s;
    GC_TRYP(c, s, tex_schedule_new(x, 1, &Out));
    *sp = s;
    GC_TRY(c, tex_compute_inline(tex_stage_of(s, Pad)));
    tex_tensor *WS;
    GC_TRYP(c, WS, tex_cache_read(s, Wt, TEX_SCOPE_SHARED, 1, &Out));
    tex_stage *so = tex_stage_of(s, Out), *sw = tex_stage_of(s, WS);
    tex_iter *nf, *yo, *xo, *yi, *xi;
    GC_TRY(c, tex_fuse(so, on, of, &nf));
    tex_expr *tile = gc_i(c, GC_CONV_TILE);
    GC_TRY(c, tex_tile(so, oy, ox, tile, tile, &yo, &xo, &yi, &xi));
    GC_TRY(c, tex_bind(so, nf, TEX_BLOCK_Z));
    GC_TRY(c, tex_bind(so, yo, TEX_BLOCK_Y));
    GC_TRY(c, tex_bind(so, xo, TEX_BLOCK_X));
    GC_TRY(c, tex_bind(so, yi, TEX_THREAD_Y));
    GC_TRY(c, tex_bind(so, xi, TEX_THREAD_X));
    GC_TRY(c, tex_unroll(so, rx));
    GC_TRY(c, tex_compute_at(sw, so, xo));
    gc_coop_fetch(c, sw, 4, GC_CONV_TILE, GC_CONV_TILE);
}

enum { GC_SUM_THREADS = 128 };

static inline void gc_sum(gc_case *c, tex_schedule **sp)
{
    const int64_t *z = c->sizes;
    tex_ctx *x = c->ctx;
    tex_expr *L = gc_dim(c, "L", z[0]);
    tex_tensor *X = gc_input(c, "X", 1, &L, &z[0]);
    tex_iter *o = tex_axis(x, "o", gc_i(c, 1)), *k = tex_reduce_axis(x, "k", L);
    tex_tensor *S;
    GC_TRYP(c, S, tex_compute(x, "S", 1, &o, tex_sum(TEX_AT(X, tex_iv(k)), 1, &k)));
    gc_output(c, S, 1, (int64_t[]){1});
    tex_schedule *s;
    GC_TRYP(c, s, tex_schedule_new(x, 1, &S));
    *sp = s;
    tex_stage *ss = tex_stage_of(s, S);
    tex_iter *kb, *kr;
    GC_TRY(c, tex_split_nparts(ss, k, gc_i(c, z[1]), &kb, &kr));
    tex_tensor *SB; /* SB[kb]: the partial sum of block kb (global, between the kernels) */
    GC_TRYP(c, SB, tex_rfactor(s, S, kb, 0));
    if (!gc_thread_reduce(c, s, SB, GC_SUM_THREADS, NULL, NULL, TEX_SCOPE_GLOBAL))
        return;
    tex_stage *sb = tex_stage_of(s, SB);
    GC_TRY(c, tex_bind(sb, tex_op_axis(sb, 0), TEX_BLOCK_X));
    gc_thread_reduce(c, s, S, GC_SUM_THREADS, NULL, NULL, TEX_SCOPE_GLOBAL);
}

/* ------------------------------------------------- automatic schedules */

/* The auto_ cases: operator graphs (tex_op_*) scheduled by
 * tex_auto_schedule(..., "cuda"); out is the graph's output. */
static inline void gc_auto(gc_case *c, tex_schedule **sp, tex_tensor *out, int ndim,
                           const int64_t shape[])
{
    if (!gc_ok_p(c, out, "building the operators"))
        return;
    gc_output(c, out, ndim, shape);
    GC_TRYP(c, *sp, tex_auto_schedule(c->ctx, 1, &out, "cuda"));
}

/* relu(A B + bias): a 64 x 64 block tile, 4 x 4 outputs per thread, A and B
 * double-buffered in shared memory, bias and relu on write-back. */
static inline void gc_auto_matmul(gc_case *c, tex_schedule **sp)
{
    const int64_t *z = c->sizes;
    tex_ctx *x = c->ctx;
    tex_expr *M = gc_dim(c, "M", z[0]), *N = gc_dim(c, "N", z[1]), *K = gc_dim(c, "K", z[2]);
    tex_tensor *A = gc_input(c, "A", 2, (tex_expr *[]){M, K}, (int64_t[]){z[0], z[2]});
    tex_tensor *B = gc_input(c, "B", 2, (tex_expr *[]){K, N}, (int64_t[]){z[2], z[1]});
    tex_tensor *bias = gc_input(c, "bias", 1, &N, &z[1]);
    tex_tensor *mm = tex_op_matmul(x, "MM", A, B, 0, 0);
    c->needs_sync = true;
    gc_auto(c, sp, tex_op_relu(x, "Y", tex_op_bias_add(x, "Yb", mm, bias, -1)), 2,
            (int64_t[]){z[0], z[1]});
}

static inline void gc_auto_softmax(gc_case *c, tex_schedule **sp)
{
    const int64_t *z = c->sizes;
    tex_expr *M = gc_dim(c, "M", z[0]), *N = gc_dim(c, "N", z[1]);
    tex_tensor *X = gc_input(c, "X", 2, (tex_expr *[]){M, N}, (int64_t[]){z[0], z[1]});
    gc_auto(c, sp, tex_op_softmax(c->ctx, "Y", X, -1), 2, (int64_t[]){z[0], z[1]});
}

static inline void gc_auto_layernorm(gc_case *c, tex_schedule **sp)
{
    const int64_t *z = c->sizes;
    tex_expr *M = gc_dim(c, "M", z[0]), *N = gc_dim(c, "N", z[1]);
    tex_tensor *X = gc_input(c, "X", 2, (tex_expr *[]){M, N}, (int64_t[]){z[0], z[1]});
    tex_tensor *G = gc_input(c, "G", 1, &N, &z[1]), *Bt = gc_input(c, "Bt", 1, &N, &z[1]);
    gc_auto(c, sp, tex_op_layernorm(c->ctx, "Y", X, G, Bt, 1, 1e-5), 2, (int64_t[]){z[0], z[1]});
}

/* relu(conv2d(D, Wt) + bias), NCHW, 3x3, padding 1: the padding inlined,
 * register tiles over the output planes, the filter slices in shared memory. */
static inline void gc_auto_conv2d(gc_case *c, tex_schedule **sp)
{
    const int64_t *z = c->sizes;
    tex_ctx *x = c->ctx;
    gc_conv_in in = gc_conv_inputs(c);
    tex_tensor *bias = gc_input(c, "bias", 1, &in.F, &z[4]);
    tex_tensor *cv = tex_op_conv2d(x, "Cv", in.D, in.Wt, NULL,
                                   (int64_t[]){GC_CONV_PAD, GC_CONV_PAD}, NULL, 1, TEX_LAYOUT_NCHW);
    c->needs_sync = true;
    gc_auto(c, sp, tex_op_relu(x, "Y", tex_op_bias_add(x, "Yb", cv, bias, 1)), 4,
            (int64_t[]){z[0], z[4], z[2], z[3]});
}

/* ------------------------------------------------------------ building */

/* Builds, schedules and lowers case id at `sizes` in ctx. 0, or -1 with the
 * failing step and tex_errmsg in c->why (c->f NULL). */
enum { GC_VT_ROWS = 16, GC_VT_COLS = 64, GC_VT_LANES = 4 };

/* Splits the two axes of st into GC_VT_ROWS x GC_VT_COLS / GC_VT_LANES
 * threads (threadIdx.y/x) of GC_VT_LANES vectorized columns each; with
 * `xo`, the outer parts go to blockIdx.y/x and *xo is the outer column loop. */
static inline bool gc_vector_threads(gc_case *c, tex_stage *st, tex_iter **xo_out)
{
    tex_iter *yo, *yi, *xo, *xi, *tx, *v;
    bool blocks = xo_out != NULL;
    tex_iter *y = tex_op_axis(st, 0), *x = tex_op_axis(st, 1);
    bool ok = gc_ok(c, tex_split(st, y, gc_i(c, GC_VT_ROWS), &yo, &yi), "tex_split (rows)") &&
              gc_ok(c, tex_split(st, x, gc_i(c, GC_VT_COLS), &xo, &xi), "tex_split (cols)") &&
              gc_ok(c, tex_split(st, xi, gc_i(c, GC_VT_LANES), &tx, &v), "tex_split (lanes)") &&
              gc_ok(c, tex_reorder(st, 5, (tex_iter *[]){yo, xo, yi, tx, v}), "tex_reorder") &&
              gc_ok(c, tex_bind(st, yi, TEX_THREAD_Y), "tex_bind (threadIdx.y)") &&
              gc_ok(c, tex_bind(st, tx, TEX_THREAD_X), "tex_bind (threadIdx.x)") &&
              gc_ok(c, tex_vectorize(st, v), "tex_vectorize");
    if (blocks)
        *xo_out = xo;
    return ok && (!blocks || (gc_ok(c, tex_bind(st, yo, TEX_BLOCK_Y), "tex_bind (blockIdx.y)") &&
                              gc_ok(c, tex_bind(st, xo, TEX_BLOCK_X), "tex_bind (blockIdx.x)")));
}

static inline void gc_vectile(gc_case *c, tex_schedule **sp)
{
    const int64_t *z = c->sizes;
    tex_ctx *x = c->ctx;
    tex_expr *M = gc_dim(c, "M", z[0]), *N = gc_dim(c, "N", z[1]);
    tex_tensor *X = gc_input(c, "X", 2, (tex_expr *[]){M, N}, (int64_t[]){z[0], z[1]});
    tex_tensor *B = gc_input(c, "B", 1, (tex_expr *[]){N}, (int64_t[]){z[1]});
    tex_iter *i = tex_axis(x, "i", M), *j = tex_axis(x, "j", N);
    tex_expr *v =
        tex_add(tex_mul(TEX_AT(X, tex_iv(i), tex_iv(j)), gc_f(c, 2)), TEX_AT(B, tex_iv(j)));
    tex_tensor *Y;
    GC_TRYP(c, Y, tex_compute(x, "Y", 2, (tex_iter *[]){i, j}, v));
    gc_output(c, Y, 2, (int64_t[]){z[0], z[1]});
    tex_schedule *s;
    GC_TRYP(c, s, tex_schedule_new(x, 1, &Y));
    *sp = s;
    tex_tensor *XS;
    GC_TRYP(c, XS, tex_cache_read(s, X, TEX_SCOPE_SHARED, 1, &Y));
    tex_stage *sy = tex_stage_of(s, Y), *sx = tex_stage_of(s, XS);
    tex_iter *xo = NULL;
    if (!gc_vector_threads(c, sy, &xo))
        return;
    GC_TRY(c, tex_compute_at(sx, sy, xo));
    gc_vector_threads(c, sx, NULL);
}

enum { GC_ST_ROWS = 8, GC_ST_COLS = 64 };

static inline void gc_stencil(gc_case *c, tex_schedule **sp)
{
    const int64_t *z = c->sizes;
    tex_ctx *x = c->ctx;
    /* constant sizes: with symbolic ones the halo tile has no constant bound for CUDA */
    tex_expr *M = gc_i(c, z[0]), *N = gc_i(c, z[1]);
    tex_tensor *P = gc_input(c, "P", 2, (tex_expr *[]){M, N}, (int64_t[]){z[0], z[1]});
    tex_tensor *T =
        gc_input(c, "T", 2, (tex_expr *[]){tex_add(M, gc_i(c, 2)), tex_add(N, gc_i(c, 2))},
                 (int64_t[]){z[0] + 2, z[1] + 2});
    tex_iter *i = tex_axis(x, "i", M), *j = tex_axis(x, "j", N);
    tex_expr *ii = tex_iv(i), *jj = tex_iv(j), *one = gc_i(c, 1), *two = gc_i(c, 2);
    tex_expr *mid = TEX_AT(T, tex_add(ii, one), tex_add(jj, one));
    tex_expr *nb = tex_add(
        tex_add(TEX_AT(T, ii, tex_add(jj, one)), TEX_AT(T, tex_add(ii, two), tex_add(jj, one))),
        tex_add(TEX_AT(T, tex_add(ii, one), jj), TEX_AT(T, tex_add(ii, one), tex_add(jj, two))));
    tex_expr *lap = tex_sub(nb, tex_mul(mid, gc_f(c, 4)));
    tex_expr *v = tex_add(tex_add(mid, tex_mul(lap, gc_f(c, 0.125))),
                          tex_mul(TEX_AT(P, ii, jj), gc_f(c, 0.25)));
    tex_tensor *O;
    GC_TRYP(c, O, tex_compute(x, "O", 2, (tex_iter *[]){i, j}, v));
    gc_output(c, O, 2, (int64_t[]){z[0], z[1]});
    tex_schedule *s;
    GC_TRYP(c, s, tex_schedule_new(x, 1, &O));
    *sp = s;
    tex_tensor *TS;
    GC_TRYP(c, TS, tex_cache_read(s, T, TEX_SCOPE_SHARED, 1, &O));
    tex_stage *so = tex_stage_of(s, O), *st = tex_stage_of(s, TS);
    tex_iter *yo, *yi, *xo, *xi;
    GC_TRY(c, tex_tile(so, i, j, gc_i(c, GC_ST_ROWS), gc_i(c, GC_ST_COLS), &yo, &xo, &yi, &xi));
    GC_TRY(c, tex_bind(so, yo, TEX_BLOCK_Y));
    GC_TRY(c, tex_bind(so, xo, TEX_BLOCK_X));
    GC_TRY(c, tex_bind(so, yi, TEX_THREAD_Y));
    GC_TRY(c, tex_bind(so, xi, TEX_THREAD_X));
    GC_TRY(c, tex_compute_at(st, so, xo));
    gc_coop_fetch(c, st, 2, GC_ST_ROWS, GC_ST_COLS);
}

enum { GC_B2B_ROWS = 16, GC_B2B_THREADS = 16 };

/* Stage st ([rows, cols]) over 16 x 16 threads: rows and columns split
 * into GC_B2B_THREADS parts bound to threadIdx.y / x; the accumulator
 * stage acc (local) computed at threadIdx.x. With block, the rows are first
 * split by GC_B2B_ROWS, the outer part bound to blockIdx.x. */
static inline void gc_b2b_threads(gc_case *c, tex_stage *st, tex_stage *acc, bool block)
{
    tex_iter *m = tex_op_axis(st, 0), *bo, *ty, *mi, *tx, *ni;
    if (block) {
        GC_TRY(c, tex_split(st, m, gc_i(c, GC_B2B_ROWS), &bo, &m));
        GC_TRY(c, tex_bind(st, bo, TEX_BLOCK_X));
    }
    GC_TRY(c, tex_split_nparts(st, m, gc_i(c, GC_B2B_THREADS), &ty, &mi));
    GC_TRY(c, tex_split_nparts(st, tex_op_axis(st, 1), gc_i(c, GC_B2B_THREADS), &tx, &ni));
    GC_TRY(c, tex_reorder(st, 4, (tex_iter *[]){ty, tx, mi, ni}));
    GC_TRY(c, tex_bind(st, ty, TEX_THREAD_Y));
    GC_TRY(c, tex_bind(st, tx, TEX_THREAD_X));
    GC_TRY(c, tex_compute_at(acc, st, tx));
    GC_TRY(c, tex_set_scope(acc, TEX_SCOPE_LOCAL));
}

/* out[m, n] = sum_k a[m, k] * b[k, n] */
static inline tex_tensor *gc_gemm(gc_case *c, const char *name, tex_tensor *a, tex_tensor *b)
{
    tex_ctx *x = c->ctx;
    tex_iter *i = tex_axis(x, "m", tex_tensor_dim(a, 0)),
             *j = tex_axis(x, "n", tex_tensor_dim(b, 1));
    tex_iter *k = tex_reduce_axis(x, "k", tex_tensor_dim(a, 1));
    tex_expr *prod = tex_mul(TEX_AT(a, tex_iv(i), tex_iv(k)), TEX_AT(b, tex_iv(k), tex_iv(j)));
    return tex_compute(x, name, 2, (tex_iter *[]){i, j}, tex_sum(prod, 1, &k));
}

/* relu(alpha * p + beta * q) elementwise over p's shape (q NULL: left out). */
static inline tex_tensor *gc_epilogue(gc_case *c, const char *name, tex_tensor *p, double alpha,
                                      tex_tensor *q, double beta)
{
    tex_ctx *x = c->ctx;
    tex_iter *i = tex_axis(x, "m", tex_tensor_dim(p, 0)),
             *j = tex_axis(x, "n", tex_tensor_dim(p, 1));
    tex_expr *v = tex_mul(gc_f(c, alpha), TEX_AT(p, tex_iv(i), tex_iv(j)));
    if (q)
        v = tex_add(v, tex_mul(gc_f(c, beta), TEX_AT(q, tex_iv(i), tex_iv(j))));
    return tex_compute(x, name, 2, (tex_iter *[]){i, j}, tex_max(v, gc_f(c, 0)));
}

/* The b2b cases; fused: D0 in shared memory at D1's block, else at root. */
static inline void gc_b2b_case(gc_case *c, tex_schedule **sp, bool fused)
{
    const int64_t *z = c->sizes;
    tex_expr *M = gc_i(c, z[0]), *K0 = gc_dim(c, "K0", z[1]);
    tex_expr *N0 = gc_i(c, z[2]), *N1 = gc_i(c, z[3]);
    tex_tensor *A0 = gc_input(c, "A0", 2, (tex_expr *[]){M, K0}, (int64_t[]){z[0], z[1]});
    tex_tensor *B0 = gc_input(c, "B0", 2, (tex_expr *[]){K0, N0}, (int64_t[]){z[1], z[2]});
    tex_tensor *B1 = gc_input(c, "B1", 2, (tex_expr *[]){N0, N1}, (int64_t[]){z[2], z[3]});
    tex_tensor *C1 = gc_input(c, "C1", 2, (tex_expr *[]){M, N1}, (int64_t[]){z[0], z[3]});
    tex_tensor *P0, *D0, *P1, *D1;
    GC_TRYP(c, P0, gc_gemm(c, "P0", A0, B0));
    GC_TRYP(c, D0, gc_epilogue(c, "D0", P0, 0.5, NULL, 0));
    GC_TRYP(c, P1, gc_gemm(c, "P1", D0, B1));
    GC_TRYP(c, D1, gc_epilogue(c, "D1", P1, 0.75, C1, -0.5));
    gc_output(c, D1, 2, (int64_t[]){z[0], z[3]});
    tex_schedule *s;
    GC_TRYP(c, s, tex_schedule_new(c->ctx, 1, &D1));
    *sp = s;
    tex_stage *sd0 = tex_stage_of(s, D0), *sd1 = tex_stage_of(s, D1);
    gc_b2b_threads(c, sd1, tex_stage_of(s, P1), true);
    gc_b2b_threads(c, sd0, tex_stage_of(s, P0), !fused);
    if (fused && !c->why[0]) {
        GC_TRY(c, tex_compute_at(sd0, sd1, tex_stage_axis(sd1, 0)));
        GC_TRY(c, tex_set_scope(sd0, TEX_SCOPE_SHARED));
        c->needs_sync = true;
    }
}

static inline void gc_b2b(gc_case *c, tex_schedule **sp)
{
    gc_b2b_case(c, sp, true);
}

static inline void gc_b2b_unfused(gc_case *c, tex_schedule **sp)
{
    gc_b2b_case(c, sp, false);
}

/* The tensor-core b2b computation (support/b2b_tc.h: unscaled D0, f16 A0,
 * B0, B1) at constant sizes (the tensor-core tiles need multiples of 16),
 * scheduled by sched. */
static inline void gc_b2b_tc_case(gc_case *c, tex_schedule **sp,
                                  int (*sched)(tex_ctx *, tex_schedule *, tex_tensor *const[8]))
{
    const int64_t *z = c->sizes;
    tex_ctx *x = c->ctx;
    tex_expr *M = gc_i(c, z[0]), *K0 = gc_i(c, z[1]), *N0 = gc_i(c, z[2]), *N1 = gc_i(c, z[3]);
    tex_tensor *t[8];
    t[0] = gc_input_t(c, "A0", TEX_F16, 2, (tex_expr *[]){M, K0}, (int64_t[]){z[0], z[1]});
    t[1] = gc_input_t(c, "B0", TEX_F16, 2, (tex_expr *[]){K0, N0}, (int64_t[]){z[1], z[2]});
    t[2] = gc_input_t(c, "B1", TEX_F16, 2, (tex_expr *[]){N0, N1}, (int64_t[]){z[2], z[3]});
    t[3] = gc_input(c, "C1", 2, (tex_expr *[]){M, N1}, (int64_t[]){z[0], z[3]});
    for (int g = 0; g < 2; g++) {
        tex_tensor *a = t[g ? 5 : 0], *b = t[1 + g];
        tex_iter *i = tex_axis(x, "m", tex_tensor_dim(a, 0)),
                 *j = tex_axis(x, "n", tex_tensor_dim(b, 1));
        tex_iter *k = tex_reduce_axis(x, "k", tex_tensor_dim(a, 1));
        tex_expr *prod = tex_mul(tex_cast(TEX_F32, TEX_AT(a, tex_iv(i), tex_iv(k))),
                                 tex_cast(TEX_F32, TEX_AT(b, tex_iv(k), tex_iv(j))));
        GC_TRYP(c, t[4 + 2 * g],
                tex_compute(x, g ? "P1" : "P0", 2, (tex_iter *[]){i, j}, tex_sum(prod, 1, &k)));
        if (g) {
            GC_TRYP(c, t[7], gc_epilogue(c, "D1", t[6], 0.75, t[3], -0.5));
        } else {
            i = tex_axis(x, "m", M), j = tex_axis(x, "n", N0);
            tex_expr *r = tex_max(TEX_AT(t[4], tex_iv(i), tex_iv(j)), gc_f(c, 0));
            GC_TRYP(c, t[5], tex_compute(x, "D0", 2, (tex_iter *[]){i, j}, tex_cast(TEX_F16, r)));
        }
    }
    gc_output(c, t[7], 2, (int64_t[]){z[0], z[3]});
    GC_TRYP(c, *sp, tex_schedule_new(x, 1, &t[7]));
    GC_TRY(c, sched(x, *sp, t));
    c->needs_sync = true;
}

static inline void gc_b2b_tc(gc_case *c, tex_schedule **sp)
{
    gc_b2b_tc_case(c, sp, b2b_tc_schedule);
}

static inline void gc_b2b_tc_unfused(gc_case *c, tex_schedule **sp)
{
    gc_b2b_tc_case(c, sp, b2b_tc_unfused_schedule);
}

static inline void gc_b2b_regs(gc_case *c, tex_schedule **sp)
{
    gc_b2b_tc_case(c, sp, b2b_regs_schedule);
}

static inline int gc_build(tex_ctx *ctx, gc_id id, const int64_t sizes[GC_MAX_SIZES], bool symbolic,
                           gc_case *c)
{
    static void (*const builders[GC_N_CASES])(gc_case *, tex_schedule **) = {
        gc_matmul,         gc_transpose,   gc_softmax,
        gc_layernorm,      gc_conv2d,      gc_sum,
        gc_vectile,        gc_stencil,     gc_b2b,
        gc_b2b_unfused,    gc_auto_matmul, gc_auto_softmax,
        gc_auto_layernorm, gc_auto_conv2d, gc_b2b_tc,
        gc_b2b_tc_unfused, gc_b2b_regs};
    memset(c, 0, sizeof *c);
    c->name = gc_names[id];
    c->ctx = ctx;
    c->symbolic = symbolic;
    memcpy(c->sizes, sizes, sizeof c->sizes);
    /* f32 sums in another order than the oracle's (exact for matmul, conv2d, sum) */
    c->tol = id == GC_LAYERNORM || id == GC_AUTO_LAYERNORM ? 5e-4
             : id == GC_SOFTMAX || id == GC_AUTO_SOFTMAX || id == GC_B2B || id == GC_B2B_UNFUSED
                 ? 1e-4
             : id >= GC_B2B_TC ? 1e-3 /* D0 rounded to f16 */
                               : 1e-5;
    tex_schedule *s = NULL;
    builders[id](c, &s);
    if (c->why[0])
        return -1;
    c->f = tex_lower_tensors(s, c->name, c->n, c->tensors);
    return gc_ok_p(c, c->f, "tex_lower_tensors") ? 0 : -1;
}

/* Builds case id at GC_SMALL sizes, with constant and then with symbolic
 * sizes, and hands each to check; a case that could not be built arrives
 * with f NULL and the reason in why. */
static inline void gc_each_small(gc_id id, void (*check)(gc_case *c))
{
    for (int sym = 0; sym < 2; sym++) {
        tex_ctx *ctx = tex_ctx_new();
        int64_t sizes[GC_MAX_SIZES];
        gc_default_sizes(id, GC_SMALL, sizes);
        gc_case c;
        gc_build(ctx, id, sizes, sym, &c);
        check(&c);
        tex_ctx_free(ctx);
    }
}

/* ---------------------------------------------------------------- data */

static inline int64_t gc_numel(const gc_case *c, int t)
{
    int64_t n = 1;
    for (int d = 0; d < c->ndim[t]; d++)
        n *= c->shape[t][d];
    return n;
}

/* A new array of tensor t's concrete shape and dtype on dev (NULL on failure). */
static inline DLTensor *gc_array(const gc_case *c, int t, DLDevice dev)
{
    return tex_array_new(c->ndim[t], c->shape[t], c->dtype[t], dev);
}

/* The f16 bits of q / 4 for an integer q in [-8, 8] (exact in f16). */
static inline uint16_t gc_f16_quarter(int q)
{
    if (q == 0)
        return 0;
    uint16_t sign = q < 0 ? 0x8000u : 0;
    int m = q < 0 ? -q : q, e = 0;
    while (m >= 2 << e) /* m in [2^e, 2^(e+1)) */
        e++;
    /* q/4 = m 2^-2 = (m / 2^e) 2^(e-2): biased exponent e - 2 + 15, 10 mantissa bits */
    return (uint16_t)(sign | (uint16_t)((e + 13) << 10) | (uint16_t)(((m << 10) >> e) & 0x3ff));
}

/* Fills a host f32 or f16 array with seeded multiples of 1/4 in [-2, 2]. */
static inline void gc_fill(DLTensor *a, uint64_t seed)
{
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++)
        n *= a->shape[d];
    uint64_t st = seed * 0x9E3779B97F4A7C15u + 1;
    for (int64_t k = 0; k < n; k++) {
        st = st * 6364136223846793005u + 1442695040888963407u;
        int q = (int)((st >> 33) % 17) - 8;
        if (a->dtype.bits == 16)
            ((uint16_t *)a->data)[k] = gc_f16_quarter(q);
        else
            ((float *)a->data)[k] = (float)q * 0.25f;
    }
}

/* Fills a host f32 (or f16) array with NaN (an output nobody writes shows). */
static inline void gc_poison(DLTensor *a)
{
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++)
        n *= a->shape[d];
    for (int64_t k = 0; k < n; k++) {
        if (a->dtype.bits == 16)
            ((uint16_t *)a->data)[k] = 0x7e00u;
        else
            ((float *)a->data)[k] = NAN;
    }
}

/* max over elements of |got - want| / max(1, |want|) for host f32 arrays of
 * the same shape (every case's outputs are f32); NaN anywhere gives INFINITY. *at gets the worst
 * index. */
static inline double gc_max_rel_err(const DLTensor *got, const DLTensor *want, int64_t *at)
{
    int64_t n = 1;
    for (int d = 0; d < want->ndim; d++)
        n *= want->shape[d];
    double worst = -1;
    *at = -1;
    for (int64_t k = 0; k < n; k++) {
        double g = ((const float *)got->data)[k], w = ((const float *)want->data)[k];
        double e = fabs(g - w) / (fabs(w) > 1 ? fabs(w) : 1);
        if (e != e) /* NaN */
            e = INFINITY;
        if (e > worst) {
            worst = e;
            *at = k;
        }
    }
    return worst < 0 ? 0 : worst;
}

/* Runs the code under test on vals (c's tensors as host arrays, inputs
 * filled, outputs poisoned): 0, or non-zero with a message in err. */
typedef int (*gc_runner)(void *ud, int n, const tex_value vals[], char *err, size_t en);

/* Runs case c through run and compares every output with the oracle
 * (tex_eval_reference). 0 when all are within c->tol, else -1 with what
 * failed in c->why (prefixed with `label`). */
static inline int gc_run_compare(gc_case *c, const char *label, gc_runner run, void *ud,
                                 uint64_t seed)
{
    DLDevice cpu = {kDLCPU, 0};
    DLTensor *got[GC_MAX_TENSORS] = {0}, *want[GC_MAX_TENSORS] = {0};
    tex_value vals[GC_MAX_TENSORS];
    char err[1024] = "";
    int rc = -1;
    for (int t = 0; t < c->n; t++) {
        got[t] = gc_array(c, t, cpu);
        want[t] = t < c->n_in ? got[t] : gc_array(c, t, cpu);
        if (!got[t] || !want[t]) {
            snprintf(c->why, sizeof c->why, "%s %s: out of memory", c->name, label);
            goto done;
        }
        if (t < c->n_in) {
            gc_fill(got[t], seed + (uint64_t)t);
        } else {
            gc_poison(got[t]);
            gc_poison(want[t]);
        }
        vals[t] = (tex_value){.kind = TEX_VAL_TENSOR, .t = got[t]};
    }
    if (run(ud, c->n, vals, err, sizeof err) != 0) {
        /* err is cut so that the message fits why (no truncation warning). */
        snprintf(c->why, sizeof c->why, "%s (symbolic %d) %s: %.900s", c->name, c->symbolic, label,
                 err);
        goto done;
    }
    if (tex_eval_reference(c->ctx, c->n, c->tensors, want) != 0) {
        snprintf(c->why, sizeof c->why, "%s: oracle: %s", c->name, tex_errmsg(c->ctx));
        goto done;
    }
    rc = 0;
    for (int t = c->n_in; t < c->n && rc == 0; t++) {
        int64_t at;
        double e = gc_max_rel_err(got[t], want[t], &at);
        if (!(e <= c->tol)) {
            snprintf(c->why, sizeof c->why,
                     "%s (symbolic %d) %s: output '%s' differs at flat index %lld: %.9g, oracle "
                     "%.9g (relative error %g > %g)",
                     c->name, c->symbolic, label, tex_tensor_name(c->tensors[t]), (long long)at,
                     ((float *)got[t]->data)[at], ((float *)want[t]->data)[at], e, c->tol);
            rc = -1;
        }
    }
done:
    for (int t = 0; t < c->n; t++) {
        if (want[t] != got[t])
            tex_array_free(want[t]);
        tex_array_free(got[t]);
    }
    return rc;
}

#endif
