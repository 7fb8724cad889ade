/*
 * The interpreter of lowered functions (src/interp/interp.c) on hand-built
 * ASTs, independent of the schedule and the lowering pipeline:
 *   - the tensor-level form (REALIZE with a region offset, PROVIDE, ACCESS)
 *     and the flat form (ALLOCATE, STORE, LOAD over parameter buffers);
 *   - bounds checks (reads and writes, both forms) reported as errors naming
 *     the buffer and the index; poisoned temporaries;
 *   - GPU-style code: a shared-memory reverse and a tree reduction that need
 *     lock-step execution between barriers, per-thread locals, a barrier
 *     under divergent control flow (an error); each also built for "cpu",
 *     whose barrier fission (gpu_to_cpu.c) must give the same results;
 *   - ATTR "assert", LET, IF/else, EVALUATE; scalar semantics (wrap-around,
 *     floor division, casts, f16 rounding, u64 comparison); argument checks.
 */
#include "lower/lower.h"
#include "interp/interp.h"
#include "tt.h"

#include <math.h>

static tex_ctx *ctx;
static char err[1024];

static tex_expr *I(int64_t v)
{
    return texi_int_imm(ctx, TEX_I32, v);
}

static tex_expr *V(const char *name)
{
    return texi_var_new(ctx, name, TEX_I32);
}

static tex_expr *bin(enum texi_expr_kind k, tex_expr *a, tex_expr *b)
{
    return texi_binary(k, a, b);
}

static tex_stmt *loop_k(tex_expr *v, int64_t ext, enum texi_for_kind kind, int tag, tex_stmt *body)
{
    return texi_for_new(ctx, v, I(0), I(ext), kind, tag, body);
}

static tex_stmt *loop(tex_expr *v, int64_t ext, tex_stmt *body)
{
    return loop_k(v, ext, TEXI_FOR_SERIAL, -1, body);
}

static tex_stmt *seq(int n, tex_stmt *const items[])
{
    return texi_seq_new(ctx, n, items);
}

/* A 1-D tensor parameter (f32 unless said otherwise) with its buffer. */
static texi_param tparam(const char *name, tex_dtype t, int64_t n)
{
    texi_param p = {.kind = TEX_ARG_TENSOR};
    p.tensor = tex_placeholder_c(ctx, name, t, 1, (int64_t[]){n});
    tex_expr *shape[1] = {I(n)};
    p.buf = texi_buffer_new(ctx, name, t, TEXI_SCOPE_GLOBAL, 1, shape);
    return p;
}

static tex_func *func(int n, const texi_param params[], tex_stmt *body)
{
    tex_func *f = texi_alloc(ctx, sizeof *f, "test");
    texi_param *ps = texi_alloc(ctx, sizeof *ps * (size_t)(n + 1), "test");
    memcpy(ps, params, sizeof *ps * (size_t)n);
    *f = (tex_func){.ctx = ctx, .name = "f", .n_params = n, .params = ps, .body = body};
    return f;
}

static DLTensor *arr(tex_dtype t, int64_t n)
{
    return tex_array_new(1, (int64_t[]){n}, t, (DLDevice){kDLCPU, 0});
}

static float *fdata(DLTensor *a)
{
    return (float *)a->data;
}

static int run2(tex_func *f, DLTensor *a, DLTensor *b)
{
    tex_value v[2] = {{.kind = TEX_VAL_TENSOR, .t = a}, {.kind = TEX_VAL_TENSOR, .t = b}};
    return texi_interp_run(f, 2, v, err, sizeof err);
}

/* f run by the CPU backend ("cpu"): thread loops with barriers go through
 * barrier fission (gpu_to_cpu.c), so it must agree with the interpreter. */
static int run2_cpu(tex_func *f, DLTensor *a, DLTensor *b)
{
    tex_kernel *k = tex_build(f, "cpu");
    if (!k) {
        snprintf(err, sizeof err, "%s", tex_errmsg(ctx));
        return tex_errcode(ctx);
    }
    tex_value v[2] = {{.kind = TEX_VAL_TENSOR, .t = a}, {.kind = TEX_VAL_TENSOR, .t = b}};
    int rc = tex_kernel_call(k, 2, v);
    tex_kernel_free(k);
    return rc;
}

/* Mode 0: the interpreter; mode 1: the CPU backend. */
static int run2_mode(int mode, tex_func *f, DLTensor *a, DLTensor *b)
{
    return mode ? run2_cpu(f, a, b) : run2(f, a, b);
}

static void setup(void)
{
    ctx = tex_ctx_new();
    err[0] = '\0';
}

/* ------------------------------------------------------------ both forms */

/* T over the region [2, 8) of an 8-element domain: T[i] = A[i] * 2 for
 * i in [2, 8); B[i] = (i >= 2 ? T[max(i, 2)] : A[i]) + 1. */
static tex_func *tensor_level_func(texi_param *pa, texi_param *pb, int64_t t_min)
{
    *pa = tparam("A", TEX_F32, 8);
    *pb = tparam("B", TEX_F32, 8);
    tex_tensor *T = tex_placeholder_c(ctx, "T", TEX_F32, 1, (int64_t[]){8});
    tex_expr *i = V("i"), *j = V("j");
    tex_expr *ti = bin(TEXI_EXPR_ADD, i, I(2));
    tex_stmt *prod = loop(i, 6,
                          texi_provide_new(ctx, T, 1, &ti,
                                           bin(TEXI_EXPR_MUL, texi_access_new(pa->tensor, 1, &ti),
                                               texi_float_imm(ctx, TEX_F32, 2))));
    tex_expr *tj = bin(TEXI_EXPR_MAX, j, I(2));
    tex_expr *val = texi_select_new(bin(TEXI_EXPR_GE, j, I(2)), texi_access_new(T, 1, &tj),
                                    texi_access_new(pa->tensor, 1, &j));
    tex_stmt *cons =
        loop(j, 8,
             texi_provide_new(ctx, pb->tensor, 1, &j,
                              bin(TEXI_EXPR_ADD, val, texi_float_imm(ctx, TEX_F32, 1))));
    tex_expr *mins[1] = {I(t_min)}, *exts[1] = {I(6)};
    tex_stmt *items[2] = {prod, cons};
    tex_stmt *body = texi_realize_new(ctx, T, 1, mins, exts, TEXI_SCOPE_GLOBAL, seq(2, items));
    texi_param ps[2] = {*pa, *pb};
    return func(2, ps, body);
}

static void test_tensor_level(void)
{
    setup();
    texi_param pa, pb;
    tex_func *f = tensor_level_func(&pa, &pb, 2);
    DLTensor *a = arr(TEX_F32, 8), *b = arr(TEX_F32, 8);
    for (int k = 0; k < 8; k++)
        fdata(a)[k] = (float)k + 0.5f;
    TT_EQ_INT(run2(f, a, b), 0);
    TT_EQ_STR(err, "");
    for (int k = 0; k < 8; k++)
        TT_NEAR(fdata(b)[k], (k >= 2 ? 2 * (k + 0.5) : k + 0.5) + 1, 1e-6);
    /* the same region placed at [0, 6): writes of T[6], T[7] leave it */
    f = tensor_level_func(&pa, &pb, 0);
    TT_EQ_INT(run2(f, a, b), TEX_EINTERNAL);
    TT_CHECK(strstr(err, "out-of-bounds write of tensor 'T'") != NULL);
    TT_CHECK(strstr(err, "index 6") != NULL);
    TT_CHECK(strstr(err, "[0, 6)") != NULL);
    tex_array_free(a);
    tex_array_free(b);
    tex_ctx_free(ctx);
}

/* tmp[k] = A[k] + 1 (k < 8); B[k] = tmp[7 - k + shift]. */
static tex_func *flat_func(int64_t shift, enum texi_scope scope)
{
    texi_param pa = tparam("A", TEX_F32, 8), pb = tparam("B", TEX_F32, 8);
    tex_expr *shape[1] = {I(8)};
    texi_buffer *tmp = texi_buffer_new(ctx, "tmp", TEX_F32, scope, 1, shape);
    tex_expr *k = V("k"), *m = V("m");
    tex_stmt *fill = loop(k, 8,
                          texi_store_new(ctx, tmp, k,
                                         bin(TEXI_EXPR_ADD, texi_load_new(pa.buf, k),
                                             texi_float_imm(ctx, TEX_F32, 1))));
    tex_expr *rev = bin(TEXI_EXPR_SUB, I(7 + shift), m);
    tex_stmt *out = loop(m, 8, texi_store_new(ctx, pb.buf, m, texi_load_new(tmp, rev)));
    tex_stmt *items[2] = {fill, out};
    texi_param ps[2] = {pa, pb};
    return func(2, ps, texi_allocate_new(ctx, tmp, seq(2, items)));
}

static void test_flat(void)
{
    setup();
    DLTensor *a = arr(TEX_F32, 8), *b = arr(TEX_F32, 8);
    for (int k = 0; k < 8; k++)
        fdata(a)[k] = (float)k;
    TT_EQ_INT(run2(flat_func(0, TEXI_SCOPE_LOCAL), a, b), 0);
    for (int k = 0; k < 8; k++)
        TT_NEAR(fdata(b)[k], 7 - k + 1, 1e-6);
    TT_EQ_INT(run2(flat_func(1, TEXI_SCOPE_GLOBAL), a, b), TEX_EINTERNAL);
    TT_CHECK(strstr(err, "out-of-bounds load of buffer 'tmp': index 8, size 8") != NULL);
    TT_EQ_INT(run2(flat_func(-1, TEXI_SCOPE_GLOBAL), a, b), TEX_EINTERNAL);
    TT_CHECK(strstr(err, "index -1") != NULL);
    tex_array_free(a);
    tex_array_free(b);
    tex_ctx_free(ctx);
}

/* Out-of-bounds store to a parameter, read of a parameter out of bounds. */
static void test_param_bounds(void)
{
    setup();
    texi_param pa = tparam("A", TEX_F32, 4), pb = tparam("B", TEX_F32, 4);
    tex_expr *k = V("k");
    texi_param ps[2] = {pa, pb};
    tex_func *f =
        func(2, ps, loop(k, 5, texi_store_new(ctx, pb.buf, k, texi_load_new(pa.buf, I(0)))));
    DLTensor *a = arr(TEX_F32, 4), *b = arr(TEX_F32, 4);
    TT_EQ_INT(run2(f, a, b), TEX_EINTERNAL);
    TT_CHECK(strstr(err, "out-of-bounds store to buffer 'B': index 4, size 4") != NULL);
    tex_expr *j = V("j");
    tex_expr *idx = bin(TEXI_EXPR_ADD, j, I(1));
    f = func(
        2, ps,
        loop(j, 4, texi_provide_new(ctx, pb.tensor, 1, &j, texi_access_new(pa.tensor, 1, &idx))));
    TT_EQ_INT(run2(f, a, b), TEX_EINTERNAL);
    TT_CHECK(strstr(err, "out-of-bounds read of tensor 'A': index 4") != NULL);
    tex_array_free(a);
    tex_array_free(b);
    tex_ctx_free(ctx);
}

/* A temporary read before it is written gives NaN (poison). */
static void test_poison(void)
{
    setup();
    texi_param pa = tparam("A", TEX_F32, 4), pb = tparam("B", TEX_F32, 4);
    tex_expr *shape[1] = {I(4)};
    texi_buffer *tmp = texi_buffer_new(ctx, "tmp", TEX_F32, TEXI_SCOPE_GLOBAL, 1, shape);
    tex_expr *k = V("k");
    tex_stmt *body = loop(k, 4, texi_store_new(ctx, pb.buf, k, texi_load_new(tmp, k)));
    texi_param ps[2] = {pa, pb};
    DLTensor *a = arr(TEX_F32, 4), *b = arr(TEX_F32, 4);
    TT_EQ_INT(run2(func(2, ps, texi_allocate_new(ctx, tmp, body)), a, b), 0);
    for (int i = 0; i < 4; i++)
        TT_CHECK(isnan(fdata(b)[i]));
    tex_array_free(a);
    tex_array_free(b);
    tex_ctx_free(ctx);
}

/* --------------------------------------------------------- GPU-style code */

/* Blocks of T threads reverse their chunk of A through shared memory:
 * sh[tx] = A[bx*T + tx]; barrier; B[bx*T + tx] = sh[T-1-tx]. The allocation
 * sits in the block loop (outside) or in the thread loop (inside). */
static tex_func *reverse_func(int T, int nb, bool alloc_inside, texi_buffer **sh_out)
{
    texi_param pa = tparam("A", TEX_F32, T * nb), pb = tparam("B", TEX_F32, T * nb);
    tex_expr *shape[1] = {I(T)};
    texi_buffer *sh = texi_buffer_new(ctx, "sh", TEX_F32, TEXI_SCOPE_SHARED, 1, shape);
    tex_expr *bx = V("blockIdx.x"), *tx = V("threadIdx.x");
    tex_expr *g = bin(TEXI_EXPR_ADD, bin(TEXI_EXPR_MUL, bx, I(T)), tx);
    tex_stmt *items[3] = {
        texi_store_new(ctx, sh, tx, texi_load_new(pa.buf, g)),
        texi_barrier_new(ctx, TEXI_SCOPE_SHARED),
        texi_store_new(ctx, pb.buf, g, texi_load_new(sh, bin(TEXI_EXPR_SUB, I(T - 1), tx))),
    };
    tex_stmt *tb = seq(3, items);
    if (alloc_inside)
        tb = texi_allocate_new(ctx, sh, tb);
    tex_stmt *tl = loop_k(tx, T, TEXI_FOR_THREAD, TEX_THREAD_X, tb);
    if (!alloc_inside)
        tl = texi_allocate_new(ctx, sh, tl);
    texi_param ps[2] = {pa, pb};
    if (sh_out)
        *sh_out = sh;
    return func(2, ps, loop_k(bx, nb, TEXI_FOR_THREAD, TEX_BLOCK_X, tl));
}

static void test_barrier_reverse(void)
{
    setup();
    enum { T = 8, NB = 3 };
    DLTensor *a = arr(TEX_F32, T * NB), *b = arr(TEX_F32, T * NB);
    for (int k = 0; k < T * NB; k++)
        fdata(a)[k] = (float)k;
    for (int mode = 0; mode < 4; mode++) {
        int inside = mode & 1;
        memset(b->data, 0, sizeof(float) * T * NB);
        TT_EQ_INT(run2_mode(mode >> 1, reverse_func(T, NB, inside, NULL), a, b), 0);
        TT_EQ_STR(err, "");
        for (int blk = 0; blk < NB; blk++)
            for (int t = 0; t < T; t++)
                TT_NEAR(fdata(b)[blk * T + t], blk * T + (T - 1 - t), 0);
    }
    tex_array_free(a);
    tex_array_free(b);
    tex_ctx_free(ctx);
}

/* Tree sum of 8 values in shared memory: a barrier inside a serial loop
 * (same trip count in every thread), a LET per step, a guarded update. */
static void test_barrier_tree_reduce(void)
{
    setup();
    enum { T = 8 };
    texi_param pa = tparam("A", TEX_F32, T), pb = tparam("B", TEX_F32, 1);
    tex_expr *shape[1] = {I(T)};
    texi_buffer *sh = texi_buffer_new(ctx, "sh", TEX_F32, TEXI_SCOPE_SHARED, 1, shape);
    tex_expr *tx = V("threadIdx.x"), *s = V("s"), *stride = V("stride");
    tex_expr *partner = bin(TEXI_EXPR_ADD, tx, stride);
    tex_stmt *upd = texi_if_new(
        ctx, bin(TEXI_EXPR_LT, tx, stride),
        texi_store_new(ctx, sh, tx,
                       bin(TEXI_EXPR_ADD, texi_load_new(sh, tx), texi_load_new(sh, partner))),
        NULL);
    tex_stmt *step_items[2] = {upd, texi_barrier_new(ctx, TEXI_SCOPE_SHARED)};
    /* stride = 4, 2, 1 for s = 0, 1, 2 */
    tex_expr *shift = texi_select_new(bin(TEXI_EXPR_EQ, s, I(0)), I(4),
                                      texi_select_new(bin(TEXI_EXPR_EQ, s, I(1)), I(2), I(1)));
    tex_stmt *step = texi_let_new(ctx, stride, shift, seq(2, step_items));
    tex_stmt *items[4] = {
        texi_store_new(ctx, sh, tx, texi_load_new(pa.buf, tx)),
        texi_barrier_new(ctx, TEXI_SCOPE_SHARED),
        loop(s, 3, step),
        texi_if_new(ctx, bin(TEXI_EXPR_EQ, tx, I(0)),
                    texi_store_new(ctx, pb.buf, I(0), texi_load_new(sh, I(0))), NULL),
    };
    tex_stmt *body =
        loop_k(tx, T, TEXI_FOR_THREAD, TEX_THREAD_X, texi_allocate_new(ctx, sh, seq(4, items)));
    texi_param ps[2] = {pa, pb};
    DLTensor *a = arr(TEX_F32, T), *b = arr(TEX_F32, 1);
    double want = 0;
    for (int k = 0; k < T; k++) {
        fdata(a)[k] = (float)(k * k + 1);
        want += k * k + 1;
    }
    for (int mode = 0; mode < 2; mode++) {
        fdata(b)[0] = NAN;
        TT_EQ_INT(run2_mode(mode, func(2, ps, body), a, b), 0);
        TT_EQ_STR(err, "");
        TT_NEAR(fdata(b)[0], want, 0);
    }
    tex_array_free(a);
    tex_array_free(b);
    tex_ctx_free(ctx);
}

/* loc (LOCAL scope) is per thread: loc[0] = A[tx] * 2; barrier; B[tx] = loc[0]. */
static void test_per_thread_local(void)
{
    setup();
    enum { T = 6 };
    texi_param pa = tparam("A", TEX_F32, T), pb = tparam("B", TEX_F32, T);
    tex_expr *shape[1] = {I(1)};
    texi_buffer *loc = texi_buffer_new(ctx, "loc", TEX_F32, TEXI_SCOPE_LOCAL, 1, shape);
    tex_expr *tx = V("threadIdx.x");
    tex_stmt *items[3] = {
        texi_store_new(
            ctx, loc, I(0),
            bin(TEXI_EXPR_MUL, texi_load_new(pa.buf, tx), texi_float_imm(ctx, TEX_F32, 2))),
        texi_barrier_new(ctx, TEXI_SCOPE_SHARED),
        texi_store_new(ctx, pb.buf, tx, texi_load_new(loc, I(0))),
    };
    tex_stmt *body =
        loop_k(tx, T, TEXI_FOR_THREAD, TEX_THREAD_X, texi_allocate_new(ctx, loc, seq(3, items)));
    texi_param ps[2] = {pa, pb};
    DLTensor *a = arr(TEX_F32, T), *b = arr(TEX_F32, T);
    for (int k = 0; k < T; k++)
        fdata(a)[k] = (float)(k + 1);
    for (int mode = 0; mode < 2; mode++) {
        memset(b->data, 0xff, sizeof(float) * T);
        TT_EQ_INT(run2_mode(mode, func(2, ps, body), a, b), 0);
        for (int k = 0; k < T; k++)
            TT_NEAR(fdata(b)[k], 2 * (k + 1), 0);
    }
    tex_array_free(a);
    tex_array_free(b);
    tex_ctx_free(ctx);
}

/* Two thread dimensions (y outer, x inner) with the barrier under both. */
static void test_barrier_2d(void)
{
    setup();
    enum { TY = 3, TX = 4 };
    texi_param pa = tparam("A", TEX_F32, TY * TX), pb = tparam("B", TEX_F32, TY * TX);
    tex_expr *shape[1] = {I(TY * TX)};
    texi_buffer *sh = texi_buffer_new(ctx, "sh", TEX_F32, TEXI_SCOPE_SHARED, 1, shape);
    tex_expr *ty = V("threadIdx.y"), *tx = V("threadIdx.x");
    tex_expr *lin = bin(TEXI_EXPR_ADD, bin(TEXI_EXPR_MUL, ty, I(TX)), tx);
    tex_expr *rev = bin(TEXI_EXPR_SUB, I(TY * TX - 1), lin);
    tex_stmt *items[3] = {
        texi_store_new(ctx, sh, lin, texi_load_new(pa.buf, lin)),
        texi_barrier_new(ctx, TEXI_SCOPE_SHARED),
        texi_store_new(ctx, pb.buf, lin, texi_load_new(sh, rev)),
    };
    tex_stmt *body =
        texi_allocate_new(ctx, sh,
                          loop_k(ty, TY, TEXI_FOR_THREAD, TEX_THREAD_Y,
                                 loop_k(tx, TX, TEXI_FOR_THREAD, TEX_THREAD_X, seq(3, items))));
    texi_param ps[2] = {pa, pb};
    DLTensor *a = arr(TEX_F32, TY * TX), *b = arr(TEX_F32, TY * TX);
    for (int k = 0; k < TY * TX; k++)
        fdata(a)[k] = (float)k;
    for (int mode = 0; mode < 2; mode++) {
        memset(b->data, 0xff, sizeof(float) * TY * TX);
        TT_EQ_INT(run2_mode(mode, func(2, ps, body), a, b), 0);
        for (int k = 0; k < TY * TX; k++)
            TT_NEAR(fdata(b)[k], TY * TX - 1 - k, 0);
    }
    tex_array_free(a);
    tex_array_free(b);
    tex_ctx_free(ctx);
}

/* A barrier under `if (tx < 2)` is undefined on a GPU: an error here. */
static void test_divergent_barrier(void)
{
    setup();
    texi_param pa = tparam("A", TEX_F32, 4), pb = tparam("B", TEX_F32, 4);
    tex_expr *tx = V("threadIdx.x");
    tex_stmt *items[2] = {texi_barrier_new(ctx, TEXI_SCOPE_SHARED),
                          texi_store_new(ctx, pb.buf, tx, texi_load_new(pa.buf, tx))};
    tex_stmt *body = loop_k(tx, 4, TEXI_FOR_THREAD, TEX_THREAD_X,
                            texi_if_new(ctx, bin(TEXI_EXPR_LT, tx, I(2)), seq(2, items), NULL));
    texi_param ps[2] = {pa, pb};
    DLTensor *a = arr(TEX_F32, 4), *b = arr(TEX_F32, 4);
    TT_EQ_INT(run2(func(2, ps, body), a, b), TEX_EINTERNAL);
    TT_CHECK(strstr(err, "differs between threads") != NULL);
    TT_EQ_INT(run2_cpu(func(2, ps, body), a, b), TEX_EUNAVAILABLE);
    TT_CHECK(strstr(err, "thread-divergent") != NULL);
    tex_array_free(a);
    tex_array_free(b);
    tex_ctx_free(ctx);
}

/* ----------------------------------------------- statements and scalars */

/* ATTR "assert" n >= 4 around B[k] = A[k] over a symbolic size n (a VAR
 * parameter); LET, IF/else and EVALUATE in the body. */
static void test_assert_let_if(void)
{
    setup();
    tex_expr *n = texi_var_new(ctx, "n", TEX_I32);
    texi_param pn = {.kind = TEX_ARG_VAR, .var = n};
    texi_param pa = {.kind = TEX_ARG_TENSOR}, pb = {.kind = TEX_ARG_TENSOR};
    pa.tensor = tex_placeholder(ctx, "A", TEX_F32, 1, &n);
    pb.tensor = tex_placeholder(ctx, "B", TEX_F32, 1, &n);
    pa.buf = texi_buffer_new(ctx, "A", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    pb.buf = texi_buffer_new(ctx, "B", TEX_F32, TEXI_SCOPE_GLOBAL, 1, &n);
    tex_expr *k = V("k"), *twice = texi_var_new(ctx, "twice", TEX_F32);
    tex_expr *ak = texi_load_new(pa.buf, k);
    tex_stmt *st_if =
        texi_if_new(ctx, bin(TEXI_EXPR_EQ, bin(TEXI_EXPR_FLOORMOD, k, I(2)), I(0)),
                    texi_store_new(ctx, pb.buf, k, twice), texi_store_new(ctx, pb.buf, k, ak));
    tex_stmt *items[2] = {texi_evaluate_new(ctx, ak), st_if};
    tex_stmt *let = texi_let_new(
        ctx, twice, bin(TEXI_EXPR_MUL, ak, texi_float_imm(ctx, TEX_F32, 2)), seq(2, items));
    tex_stmt *body = texi_for_new(ctx, k, I(0), n, TEXI_FOR_SERIAL, -1, let);
    body = texi_attr_new(ctx, "assert", bin(TEXI_EXPR_GE, n, I(4)), body);
    texi_param ps[3] = {pn, pa, pb};
    tex_func *f = func(3, ps, body);
    DLTensor *a = arr(TEX_F32, 5), *b = arr(TEX_F32, 5);
    for (int i = 0; i < 5; i++)
        fdata(a)[i] = (float)(i + 1);
    tex_value v[3] = {{.kind = TEX_VAL_I64, .i = 5},
                      {.kind = TEX_VAL_TENSOR, .t = a},
                      {.kind = TEX_VAL_TENSOR, .t = b}};
    TT_EQ_INT(texi_interp_run(f, 3, v, err, sizeof err), 0);
    for (int i = 0; i < 5; i++)
        TT_NEAR(fdata(b)[i], i % 2 == 0 ? 2 * (i + 1) : i + 1, 0);
    /* n = 3 disagrees with the arrays' shape */
    v[0].i = 3;
    TT_EQ_INT(texi_interp_run(f, 3, v, err, sizeof err), TEX_EINVAL);
    TT_CHECK(strstr(err, "tensor 'A'") != NULL);
    /* arrays of 3 with n = 3: the assertion fails */
    DLTensor *a3 = arr(TEX_F32, 3), *b3 = arr(TEX_F32, 3);
    v[1].t = a3;
    v[2].t = b3;
    TT_EQ_INT(texi_interp_run(f, 3, v, err, sizeof err), TEX_EINVAL);
    TT_CHECK(strstr(err, "assertion failed") != NULL);
    tex_array_free(a);
    tex_array_free(b);
    tex_array_free(a3);
    tex_array_free(b3);
    tex_ctx_free(ctx);
}

/* Argument checks: count, dtype, shape. */
static void test_bad_args(void)
{
    setup();
    texi_param pa = tparam("A", TEX_F32, 4), pb = tparam("B", TEX_F32, 4);
    texi_param ps[2] = {pa, pb};
    tex_func *f = func(2, ps, texi_evaluate_new(ctx, I(0)));
    DLTensor *a = arr(TEX_F32, 4), *b = arr(TEX_F32, 4), *bi = arr(TEX_I32, 4),
             *b5 = arr(TEX_F32, 5);
    tex_value v[2] = {{.kind = TEX_VAL_TENSOR, .t = a}, {.kind = TEX_VAL_TENSOR, .t = b}};
    TT_EQ_INT(texi_interp_run(f, 1, v, err, sizeof err), TEX_EINVAL);
    TT_EQ_INT(run2(f, a, bi), TEX_ETYPE);
    TT_CHECK(strstr(err, "'B'") != NULL);
    TT_EQ_INT(run2(f, a, b5), TEX_EINVAL);
    TT_CHECK(strstr(err, "'B'") != NULL);
    TT_EQ_INT(run2(f, a, b), 0);
    tex_array_free(a);
    tex_array_free(b);
    tex_array_free(bi);
    tex_array_free(b5);
    tex_ctx_free(ctx);
}

/* Stores the value of each expression into an i64 / f64 output. */
static void scalars_into(int n, tex_expr *const es[], tex_dtype t, DLTensor *out)
{
    texi_param po = tparam("O", t, n);
    tex_stmt **items = texi_alloc(ctx, sizeof *items * (size_t)n, "test");
    for (int k = 0; k < n; k++)
        items[k] = texi_store_new(ctx, po.buf, I(k), texi_convert(es[k], t));
    tex_value v = {.kind = TEX_VAL_TENSOR, .t = out};
    TT_EQ_INT(texi_interp_run(func(1, &po, seq(n, items)), 1, &v, err, sizeof err), 0);
    TT_EQ_STR(err, "");
}

static void test_scalar_semantics(void)
{
    setup();
    tex_expr *i8max = texi_int_imm(ctx, TEX_I8, 127), *i8one = texi_int_imm(ctx, TEX_I8, 1);
    tex_expr *u64big = texi_int_imm(ctx, TEX_U64, -1), *u64one = texi_int_imm(ctx, TEX_U64, 1);
    tex_expr *h = texi_float_imm(ctx, TEX_F16, 1.0);
    tex_expr *tiny = texi_float_imm(ctx, TEX_F16, 0.0001);
    tex_expr *ints[] = {
        bin(TEXI_EXPR_ADD, i8max, i8one),                                        /* -128 */
        bin(TEXI_EXPR_FLOORDIV, I(-7), I(2)),                                    /* -4 */
        bin(TEXI_EXPR_FLOORMOD, I(-7), I(2)),                                    /* 1 */
        bin(TEXI_EXPR_FLOORMOD, I(7), I(-2)),                                    /* -1 */
        texi_convert(bin(TEXI_EXPR_GT, u64big, u64one), TEX_I64),                /* 1: unsigned */
        texi_unary(TEXI_EXPR_CAST, TEX_I32, texi_float_imm(ctx, TEX_F32, -2.7)), /* -2 */
        texi_unary(TEXI_EXPR_CAST, TEX_U8, I(300)),                              /* 44 */
        bin(TEXI_EXPR_MIN, I(-3), I(5)),                                         /* -3 */
    };
    int64_t want_i[] = {-128, -4, 1, -1, 1, -2, 44, -3};
    int ni = (int)(sizeof ints / sizeof *ints);
    DLTensor *oi = arr(TEX_I64, ni);
    scalars_into(ni, ints, TEX_I64, oi);
    for (int k = 0; k < ni; k++)
        TT_EQ_INT(((int64_t *)oi->data)[k], want_i[k]);
    tex_expr *x = texi_float_imm(ctx, TEX_F32, 0.5);
    tex_expr *fl[] = {
        bin(TEXI_EXPR_ADD, h, tiny), /* 1.0001 is not an f16: rounds to 1 */
        texi_call_new(TEXI_MATH_SIGMOID, TEX_F32, 1, &x),
        texi_call_new(TEXI_MATH_ROUND, TEX_F32, 1,
                      (tex_expr *[]){texi_float_imm(ctx, TEX_F32, -2.5)}),
        bin(TEXI_EXPR_DIV, texi_float_imm(ctx, TEX_F32, 1), texi_float_imm(ctx, TEX_F32, 3)),
    };
    double want_f[] = {1.0, 1.0 / (1.0 + exp(-0.5)), -3.0, (double)(1.0f / 3.0f)};
    DLTensor *of = arr(TEX_F64, 4);
    scalars_into(4, fl, TEX_F64, of);
    for (int k = 0; k < 4; k++)
        TT_NEAR(((double *)of->data)[k], want_f[k], 1e-7);
    TT_CHECK(((double *)of->data)[3] == (double)(1.0f / 3.0f)); /* f32 rounding */
    /* integer division by zero is an error */
    texi_param po = tparam("O", TEX_I32, 1);
    tex_stmt *s = texi_store_new(ctx, po.buf, I(0), bin(TEXI_EXPR_FLOORDIV, I(1), I(0)));
    tex_value v = {.kind = TEX_VAL_TENSOR, .t = arr(TEX_I32, 1)};
    TT_EQ_INT(texi_interp_run(func(1, &po, s), 1, &v, err, sizeof err), TEX_EINVAL);
    TT_CHECK(strstr(err, "division by zero") != NULL);
    tex_array_free(v.t);
    tex_array_free(oi);
    tex_array_free(of);
    tex_ctx_free(ctx);
}

int main(void)
{
    TT_RUN(test_tensor_level);
    TT_RUN(test_flat);
    TT_RUN(test_param_bounds);
    TT_RUN(test_poison);
    TT_RUN(test_barrier_reverse);
    TT_RUN(test_barrier_tree_reduce);
    TT_RUN(test_per_thread_local);
    TT_RUN(test_barrier_2d);
    TT_RUN(test_divergent_barrier);
    TT_RUN(test_assert_let_if);
    TT_RUN(test_bad_args);
    TT_RUN(test_scalar_semantics);
    return tt_finish();
}
