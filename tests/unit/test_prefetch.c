/*
 * tex_prefetch (src/schedule/prefetch.c, the hints built in
 * src/lower/schedule_ops.c): kernels with hints at reduction, row and tile
 * loops, on odd, 1-sized and symbolic shapes, JIT-compiled and run on
 * random non-zero inputs with the output poisoned against the oracle; one
 * hint per 64-byte line of a contiguous run (f32 and f64); hints of the
 * output written ahead; the source of a copy that the stage reads hinted
 * (the copy refused); a stage computed at root prefetched, one attached
 * refused; a parallel loop inside the hinted one; a GPU schedule on the CPU
 * and emitted for CUDA (no hint there); the trace replays the requests;
 * the error paths name the call, the stage, the tensor and the axis. The
 * sparse gathers (CSR SpMM) are in test_sparse, the random schedules in
 * test_lower_random / test_jit_random, and ASan runs all of them with the
 * hints past the ends of their loops.
 */
#include "tt.h"
#include "support/opcheck.h"
#include "support/ops.h"

static char cache_dir[] = "/tmp/tex-test-prefetch-XXXXXX";

/* Occurrences of needle in s. */
static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s ? strstr(s, needle) : NULL; p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The C source of s's kernel for w (NULL on failure, reported). */
static char *source_of(ops_wl *w, tex_schedule *s)
{
    char why[512];
    tex_func *f = ops_lower(w, s, why, sizeof why);
    tex_kernel *k = f ? tex_build(f, "cpu") : NULL;
    if (!k) {
        TT_FAILF("%s: %s", w->name, f ? tex_errmsg(w->ctx) : why);
        return NULL;
    }
    char *src = strdup(tex_kernel_source(k));
    tex_kernel_free(k);
    return src;
}

/* s's kernel for w against the oracle on one thread (inputs drawn from
 * seed1) and on two (seed2). */
static void check_one_and_two_threads(ops_wl *w, tex_schedule *s, uint64_t seed1, uint64_t seed2)
{
    TT_CHECK(ops_check_jit(w, s, "cpu", seed1, NULL, true) == 0);
    TT_CHECK(ops_check_jit(w, s, "cpu -threads=2", seed2, NULL, true) == 0);
}

/* C = A B (ops_matmul) in a workload of its own. */
static tex_tensor *matmul(ops_wl *w, tex_ctx *ctx, int64_t m, int64_t n, int64_t k, bool sym)
{
    ops_init(w, ctx, "matmul");
    return ops_matmul(w, m, n, k, sym);
}

/* Splits matmul stage st's columns j by 16 and vectorizes j.inner; loop
 * order (i, j.outer, k, j.inner), or with k_outer (k, i, j.outer, j.inner). */
static void split_columns(tex_ctx *ctx, tex_stage *st, bool k_outer)
{
    tex_iter *i = tex_op_axis(st, 0), *j = tex_op_axis(st, 1), *k = tex_op_reduce_axis(st, 0);
    tex_iter *jo, *ji;
    TT_EQ_INT(tex_split(st, j, tex_int(ctx, 16), &jo, &ji), 0);
    TT_EQ_INT(
        tex_reorder(st, 4, k_outer ? (tex_iter *[]){k, i, jo, ji} : (tex_iter *[]){i, jo, k, ji}),
        0);
    TT_EQ_INT(tex_vectorize(st, ji), 0);
}

/* C = A B, (i, j.outer, k, j.inner) with j.inner vectorized: A and B
 * prefetched at k, C written ahead at i and at k (where the promote pass
 * keeps C's vector in a register: the hint must not stop it). */
static void gemm(int64_t m, int64_t n, int64_t kk, bool sym, int offset)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    tex_tensor *C = matmul(&w, ctx, m, n, kk, sym);
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *i = tex_op_axis(st, 0), *k = tex_op_reduce_axis(st, 0);
    split_columns(ctx, st, false);
    TT_EQ_INT(tex_prefetch(st, w.in[0], k, offset), 0);
    TT_EQ_INT(tex_prefetch(st, w.in[1], k, offset + 1), 0);
    TT_EQ_INT(tex_prefetch(st, C, i, 1), 0);
    TT_EQ_INT(tex_prefetch(st, C, k, 2), 0); /* at the loop promote keeps C in registers over */
    check_one_and_two_threads(&w, s, 3 + (uint64_t)offset, 4);
    char *src = m > 1 && kk > 1 ? source_of(&w, s) : NULL; /* no loop of extent 1: no hint */
    TT_CHECK(!src == (m == 1 || kk == 1));
    if (!src) {
        tex_ctx_free(ctx);
        return;
    }
    TT_CHECK(count(src, "__builtin_prefetch(&A[") >= 1);
    TT_CHECK(count(src, "__builtin_prefetch(&B[") >= 1);
    TT_CHECK(count(src, "__builtin_prefetch(&C[") >= 1);
    TT_CHECK(count(src, ", 1, 3);") >= 1);               /* C: a write hint */
    TT_CHECK(sym || n % 16 || count(src, "C_reg[") > 0); /* promote kept C in registers */
    free(src);
    tex_ctx_free(ctx);
}

static void test_gemm(void)
{
    gemm(7, 13, 5, false, 1);
    gemm(1, 1, 1, false, 3);
    gemm(33, 64, 17, false, 40);
    gemm(31, 29, 37, true, 2);
    gemm(2, 48, 3, true, (1 << 20) - 1);
}

/* Y = X * 2 over rows of `cols` elements of dtype t, the row loop
 * hinting the next row: one hint per 64-byte line of it. */
static void lines(tex_dtype t, int64_t cols, int want)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "lines");
    tex_expr *shape[2] = {tex_int(ctx, 5), tex_int(ctx, cols)};
    tex_tensor *X = tex_placeholder(ctx, "X", t, 2, shape);
    w.in[w.n_in++] = X;
    tex_iter *i = tex_axis(ctx, "i", shape[0]), *j = tex_axis(ctx, "j", shape[1]);
    w.out = tex_compute(ctx, "Y", 2, (tex_iter *[]){i, j},
                        tex_mul(TEX_AT(X, tex_iv(i), tex_iv(j)), tex_const(ctx, t, 2.0)));
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    tex_stage *st = tex_stage_of(s, w.out);
    TT_EQ_INT(tex_vectorize(st, tex_op_axis(st, 1)), 0);
    TT_EQ_INT(tex_prefetch(st, X, tex_op_axis(st, 0), 1), 0);
    TT_CHECK(ops_check_jit(&w, s, "cpu", 9, NULL, true) == 0);
    char *src = source_of(&w, s);
    if (count(src, "__builtin_prefetch(&X[") != want)
        TT_FAILF("%d-byte elements, %lld columns: %d hints, expected %d", tex_dtype_bytes(t),
                 (long long)cols, count(src, "__builtin_prefetch(&X["), want);
    free(src);
    tex_ctx_free(ctx);
}

static void test_lines(void)
{
    lines(TEX_F32, 64, 4);
    lines(TEX_F64, 64, 8);
    lines(TEX_F32, 16, 1);
    lines(TEX_F32, 17, 2);
    lines(TEX_F64, 3, 1);
}

/* A row-wise chain over rows x cols (symbolic when sym): E = exp(X - 1)
 * computed at Y's row loop, Y = E * 2, each row's columns split by 16 with
 * the inner part vectorized. E's loop over a row's vectors hints the same
 * vectors of the next row (tex_prefetch_at from E's row axis); with
 * `root`, Y's own loop too (Y reads E, attached, so it hints X through
 * nothing: Y hints its own output's next row instead). */
static void rows_at(int64_t rows, int64_t cols, bool sym, bool root)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "rows_at");
    tex_expr *shape[2] = {ops_size(&w, "m", rows, sym), ops_size(&w, "n", cols, sym)};
    tex_tensor *X = ops_input(&w, "X", 2, shape);
    tex_iter *a = tex_axis(ctx, "a", shape[0]), *b = tex_axis(ctx, "b", shape[1]);
    tex_tensor *E = ops_mid(&w, tex_compute(ctx, "E", 2, (tex_iter *[]){a, b},
                                            tex_exp(tex_sub(TEX_AT(X, tex_iv(a), tex_iv(b)),
                                                            tex_const(ctx, TEX_F32, 1)))));
    tex_iter *i = tex_axis(ctx, "i", shape[0]), *j = tex_axis(ctx, "j", shape[1]);
    w.out = tex_compute(ctx, "Y", 2, (tex_iter *[]){i, j},
                        tex_mul(TEX_AT(E, tex_iv(i), tex_iv(j)), tex_const(ctx, TEX_F32, 2)));
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    tex_stage *sy = tex_stage_of(s, w.out), *se = tex_stage_of(s, E);
    tex_iter *yo, *yi, *eo, *ei;
    TT_EQ_INT(tex_parallel(sy, tex_op_axis(sy, 0)), 0);
    TT_EQ_INT(tex_split(sy, tex_op_axis(sy, 1), tex_int(ctx, 16), &yo, &yi), 0);
    TT_EQ_INT(tex_vectorize(sy, yi), 0);
    TT_EQ_INT(tex_split(se, tex_op_axis(se, 1), tex_int(ctx, 16), &eo, &ei), 0);
    TT_EQ_INT(tex_vectorize(se, ei), 0);
    TT_EQ_INT(tex_compute_at(se, sy, tex_op_axis(sy, 0)), 0);
    TT_EQ_INT(tex_prefetch_at(se, X, eo, tex_op_axis(se, 0), 1), 0);
    if (root)
        TT_EQ_INT(tex_prefetch_at(sy, w.out, yo, tex_op_axis(sy, 0), 2), 0);
    check_one_and_two_threads(&w, s, 13 + (uint64_t)rows, 14);
    /* the hints are one row ahead, inside the loops over a row's vectors
     * (and their partitioned tails); a loop of one iteration has none */
    char *src = rows > 1 && cols > 16 ? source_of(&w, s) : NULL;
    const char *loop = src ? strstr(src, "for (int32_t b_outer") : NULL;
    const char *hint = src ? strstr(src, "__builtin_prefetch(&X[") : NULL;
    const char *ahead = hint ? strstr(hint, "i + 1") : NULL;
    bool ok = !src || (ahead && ahead < strstr(hint, "], 0, 3);"));
    ok = ok && (!loop || cols < 32 || (hint > loop && hint < strstr(loop, "tex_vexp")));
    ok = ok && (!src || !root || (count(src, ", 1, 3);") >= 1 && strstr(src, "i + 2")));
    if (!ok)
        TT_FAILF("%lld x %lld%s%s: hints not where expected:\n%s", (long long)rows, (long long)cols,
                 sym ? " (symbolic)" : "", root ? ", Y hinted" : "", src);
    free(src);
    tex_ctx_free(ctx);
}

static void test_prefetch_at(void)
{
    rows_at(5, 64, false, false);
    rows_at(7, 37, false, true);
    rows_at(1, 16, false, false);
    rows_at(3, 1, false, true);
    rows_at(11, 100, true, true);
    rows_at(2, 33, true, false);
}

/* C = A B with B's rows of each k block copied (tex_cache_read, local,
 * computed at k.outer) and B, which C reads only through that copy, hinted
 * one block ahead at the row loop (tex_prefetch_at from k.outer): the
 * elements the next block's copy takes, shared out over the rows. The copy
 * itself, in local memory, is refused by tex_lower. */
static void copy_source(int64_t m, int64_t n, int64_t kk, bool sym)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    tex_tensor *C = matmul(&w, ctx, m, n, kk, sym), *B = w.in[1];
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_tensor *Bl = tex_cache_read(s, B, TEX_SCOPE_LOCAL, 1, &C);
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *i = tex_op_axis(st, 0), *j = tex_op_axis(st, 1), *k = tex_op_reduce_axis(st, 0);
    tex_iter *ko, *ki;
    TT_CHECK(Bl != NULL);
    TT_EQ_INT(tex_split(st, k, tex_int(ctx, 8), &ko, &ki), 0);
    TT_EQ_INT(tex_reorder(st, 4, (tex_iter *[]){ko, i, ki, j}), 0);
    TT_EQ_INT(tex_compute_at(tex_stage_of(s, Bl), st, ko), 0);
    TT_EQ_INT(tex_prefetch_at(st, B, i, ko, 1), 0);
    check_one_and_two_threads(&w, s, 21 + (uint64_t)m, 22);
    char *src = m > 1 && kk > 8 ? source_of(&w, s) : NULL;
    const char *loop = src ? strstr(src, "for (int32_t i = ") : NULL;
    const char *hint = loop ? strstr(loop, "__builtin_prefetch(&B[") : NULL;
    const char *end = hint ? strstr(hint, "], 0, 3);") : NULL;
    const char *ahead = hint ? strstr(hint, "k_outer * 8 + ") : NULL;
    if (src && !(hint && ahead && ahead < end && strstr(ahead, "+ 8") < end))
        TT_FAILF("%lld x %lld x %lld%s: no hint of B's next block in the row loop:\n%s",
                 (long long)m, (long long)n, (long long)kk, sym ? " (symbolic)" : "", src);
    free(src);
    tex_ctx_free(ctx);
    ctx = tex_ctx_new();
    C = matmul(&w, ctx, m, n, kk, sym);
    s = tex_schedule_new(ctx, 1, &C);
    Bl = tex_cache_read(s, w.in[1], TEX_SCOPE_LOCAL, 1, &C);
    st = tex_stage_of(s, C);
    TT_EQ_INT(tex_prefetch(st, Bl, tex_op_axis(st, 0), 1), 0);
    char why[512];
    tex_func *f = ops_lower(&w, s, why, sizeof why); /* a row loop of one step: no hint */
    TT_CHECK(m == 1 ? f != NULL : !f && strstr(why, "'B.local'") != NULL);
    tex_ctx_free(ctx);
}

static void test_copy_source(void)
{
    copy_source(7, 13, 29, false);
    copy_source(1, 5, 3, false);
    copy_source(12, 33, 17, true);
}

/* Y[i] = X[i] * S[] with S a 0-d tensor: its one element hinted. */
static void test_scalar_tensor(void)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "scalar_tensor");
    tex_expr *n = tex_int(ctx, 29);
    tex_tensor *X = ops_input(&w, "X", 1, &n);
    tex_tensor *S = tex_placeholder(ctx, "S", TEX_F32, 0, NULL);
    w.in[w.n_in++] = S;
    tex_iter *i = tex_axis(ctx, "i", n);
    w.out = tex_compute(ctx, "Y", 1, &i, tex_mul(TEX_AT(X, tex_iv(i)), tex_at(S, 0, NULL)));
    tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
    tex_stage *st = tex_stage_of(s, w.out);
    TT_EQ_INT(tex_prefetch(st, S, tex_op_axis(st, 0), 3), 0);
    TT_EQ_INT(tex_prefetch(st, X, tex_op_axis(st, 0), 8), 0);
    TT_CHECK(ops_check_jit(&w, s, "cpu", 10, NULL, true) == 0);
    char *src = source_of(&w, s);
    TT_CHECK(count(src, "__builtin_prefetch(&S[0]") == 1);
    free(src);
    tex_ctx_free(ctx);
}

/* E = exp(X) at root, Y = E + 1 prefetching E: allowed; E computed at Y's
 * row loop instead: tex_lower names E. */
static void test_root_stage(void)
{
    for (int attached = 0; attached < 2; attached++) {
        tex_ctx *ctx = tex_ctx_new();
        ops_wl w;
        ops_init(&w, ctx, "root_stage");
        tex_expr *shape[2] = {tex_int(ctx, 9), tex_int(ctx, 37)};
        tex_tensor *X = ops_input(&w, "X", 2, shape);
        tex_iter *a = tex_axis(ctx, "a", shape[0]), *b = tex_axis(ctx, "b", shape[1]);
        tex_tensor *E = ops_mid(&w, tex_compute(ctx, "E", 2, (tex_iter *[]){a, b},
                                                tex_exp(TEX_AT(X, tex_iv(a), tex_iv(b)))));
        tex_iter *i = tex_axis(ctx, "i", shape[0]), *j = tex_axis(ctx, "j", shape[1]);
        w.out = tex_compute(ctx, "Y", 2, (tex_iter *[]){i, j},
                            tex_add(TEX_AT(E, tex_iv(i), tex_iv(j)), tex_const(ctx, TEX_F32, 1)));
        tex_schedule *s = tex_schedule_new(ctx, 1, &w.out);
        tex_stage *st = tex_stage_of(s, w.out);
        TT_EQ_INT(tex_prefetch(st, E, tex_op_axis(st, 0), 2), 0);
        if (!attached) {
            TT_CHECK(ops_check_jit(&w, s, "cpu", 5, NULL, true) == 0);
        } else {
            TT_EQ_INT(tex_compute_at(tex_stage_of(s, E), st, tex_op_axis(st, 0)), 0);
            char why[512];
            TT_CHECK(ops_lower(&w, s, why, sizeof why) == NULL);
            TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
            TT_CHECK(strstr(tex_errmsg(ctx), "'E'") && strstr(tex_errmsg(ctx), "stage 'Y'") &&
                     strstr(tex_errmsg(ctx), "axis 'i'"));
        }
        tex_ctx_free(ctx);
    }
}

/* C = A B in loop order (k, i, j.outer, j.inner), j.inner vectorized,
 * each step of i hinting B's row k + 1 (tex_prefetch_at from k): the row
 * is the same for every i, so the i loop shares its lines out, each step
 * asking for its part (one serial loop of hints whose range starts at a
 * multiple of i), not all of them. */
static void shared(int64_t m, int64_t n, int64_t kk, bool sym)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    tex_tensor *C = matmul(&w, ctx, m, n, kk, sym);
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_stage *st = tex_stage_of(s, C);
    split_columns(ctx, st, true);
    TT_EQ_INT(tex_prefetch_at(st, w.in[1], tex_op_axis(st, 0), tex_op_reduce_axis(st, 0), 1), 0);
    check_one_and_two_threads(&w, s, 21 + (uint64_t)m, 22);
    char *src = m > 1 && kk > 1 ? source_of(&w, s) : NULL;
    const char *hint = src ? strstr(src, "__builtin_prefetch(&B[") : NULL;
    if (src && (count(src, "__builtin_prefetch(&B[") != 1 ||
                !(strstr(src, "pf_line = i") || strstr(src, "= i * ")) || !strstr(src, "k + 1")))
        TT_FAILF("%lld x %lld x %lld%s: B's row not shared out over i:\n%s", (long long)m,
                 (long long)n, (long long)kk, sym ? " (symbolic)" : "", src);
    TT_CHECK(!src || hint);
    free(src);
    tex_ctx_free(ctx);
}

static void test_shared(void)
{
    shared(7, 64, 5, false);  /* 4 lines over 7 steps: one each, 3 steps none */
    shared(3, 200, 4, false); /* 13 lines over 3 steps: 5, 5, 3 */
    shared(2, 16, 3, false);
    shared(1, 64, 3, false); /* no loop over i: no hints */
    shared(11, 37, 9, true);
}

/* A serial outer loop hinting B's rows with the parallel loop over the
 * row's columns inside it (the hints enumerate it serially). */
static void test_parallel_inside(void)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    tex_tensor *C = matmul(&w, ctx, 19, 23, 11, false);
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *i = tex_op_axis(st, 0), *j = tex_op_axis(st, 1), *k = tex_op_reduce_axis(st, 0);
    TT_EQ_INT(tex_reorder(st, 3, (tex_iter *[]){k, j, i}), 0);
    TT_EQ_INT(tex_parallel(st, i), 0);
    TT_EQ_INT(tex_unroll(st, j), 0);
    TT_EQ_INT(tex_prefetch(st, w.in[0], k, 1), 0);
    TT_EQ_INT(tex_prefetch(st, w.in[1], k, 1), 0);
    TT_CHECK(ops_check_jit(&w, s, "cpu -threads=2", 6, NULL, true) == 0);
    tex_ctx_free(ctx);
}

/* Hint loops store nothing, so loop_fuse may fuse them with any loop of
 * the same range: here a loop partition's tail of k.inner next to a loop
 * whose body holds another k.inner loop (fusing them bound k.inner twice
 * on one path). Batch matmul 1 x 1 x 13 x 7, b split by 3 and hinted 35
 * ahead, k and j tiled twice. */
static void test_fused_tails(void)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, "fused_tails");
    tex_tensor *C = ops_batch_matmul(&w, 1, 1, 13, 7, false);
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *b = tex_op_axis(st, 0), *i = tex_op_axis(st, 1), *j = tex_op_axis(st, 2);
    tex_iter *k = tex_op_reduce_axis(st, 0), *bo, *bi, *ko, *jo, *ki, *ji;
    TT_EQ_INT(tex_reorder(st, 4, (tex_iter *[]){k, j, b, i}), 0);
    TT_EQ_INT(tex_split(st, b, tex_int(ctx, 3), &bo, &bi), 0);
    TT_EQ_INT(tex_prefetch(st, w.in[1], bi, 35), 0);
    TT_EQ_INT(tex_tile(st, k, j, tex_int(ctx, 3), tex_int(ctx, 9), &ko, &jo, &ki, &ji), 0);
    TT_EQ_INT(tex_tile(st, ko, jo, tex_int(ctx, 1), tex_int(ctx, 3), NULL, NULL, NULL, NULL), 0);
    TT_CHECK(ops_check_jit(&w, s, "cpu", 11, NULL, true) == 0);
    TT_CHECK(ops_check_jit(&w, s, "cpu -threads=3", 12, NULL, true) == 0);
    tex_ctx_free(ctx);
}

/* The trace names each request and replays it onto a fresh schedule,
 * whose kernel is the same; a second request for the same tensor and
 * axis replaces the offset. */
static void test_trace(void)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    tex_tensor *C = matmul(&w, ctx, 8, 16, 8, false);
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *k = tex_op_reduce_axis(st, 0);
    TT_EQ_INT(tex_prefetch(st, w.in[0], k, 5), 0);
    TT_EQ_INT(tex_prefetch(st, w.in[0], k, 3), 0);
    TT_EQ_INT(tex_prefetch_at(st, w.in[1], k, tex_op_axis(st, 0), 1), 0);
    char *str = tex_schedule_str(s);
    TT_CHECK(count(str, "prefetch A at axis k, 3 iterations of axis k ahead") == 1);
    TT_CHECK(count(str, "prefetch A") == 1);
    TT_CHECK(count(str, "prefetch B at axis k, 1 iterations of axis i ahead") == 1);
    free(str);
    char *trace = tex_schedule_trace(s);
    TT_CHECK(trace && strstr(trace, "prefetch C A k 3\n") && strstr(trace, "prefetch C B k 1 i\n"));
    tex_schedule *again = tex_schedule_new(ctx, 1, &C);
    TT_EQ_INT(tex_schedule_apply_text(again, trace), 0);
    char *a = source_of(&w, s), *b = source_of(&w, again);
    TT_CHECK(a && b && strcmp(a, b) == 0 && count(a, "__builtin_prefetch") > 0);
    TT_CHECK(tex_schedule_apply_text(tex_schedule_new(ctx, 1, &C), "prefetch C A k 0") ==
             TEX_EINVAL);
    TT_CHECK(tex_schedule_apply_text(tex_schedule_new(ctx, 1, &C), "prefetch C Q k 2") ==
             TEX_EINVAL);
    TT_CHECK(tex_schedule_apply_text(tex_schedule_new(ctx, 1, &C), "prefetch C A k 2 q") ==
             TEX_EINVAL);
    TT_CHECK(tex_schedule_apply_text(tex_schedule_new(ctx, 1, &C), "prefetch C A i 2 k") ==
             TEX_EINVAL); /* k is inside i */
    free(a);
    free(b);
    free(trace);
    tex_ctx_free(ctx);
}

/* A GPU matmul's schedule of C (blocks and threads bound 8 x 8, k serial
 * inside), hinting B at k (at_block 0), at the block loop over x (1), or
 * nowhere (-1). */
static tex_schedule *gpu_schedule(tex_ctx *ctx, ops_wl *w, tex_tensor *C, int at_block)
{
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *bx, *by, *tx, *ty;
    TT_EQ_INT(tex_tile(st, tex_op_axis(st, 0), tex_op_axis(st, 1), tex_int(ctx, 8), tex_int(ctx, 8),
                       &by, &bx, &ty, &tx),
              0);
    TT_EQ_INT(tex_bind(st, by, TEX_BLOCK_Y), 0);
    TT_EQ_INT(tex_bind(st, bx, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(st, ty, TEX_THREAD_Y), 0);
    TT_EQ_INT(tex_bind(st, tx, TEX_THREAD_X), 0);
    if (at_block >= 0)
        TT_EQ_INT(tex_prefetch(st, w->in[1], at_block ? bx : tex_op_reduce_axis(st, 0), 2), 0);
    return s;
}

/* The CUDA source of s's kernel (emit-only), or NULL. */
static char *cuda_source(ops_wl *w, tex_schedule *s)
{
    char why[512];
    tex_func *f = ops_lower(w, s, why, sizeof why);
    tex_kernel *k = f ? tex_build(f, "cuda -emit-only") : NULL;
    char *src = k ? strdup(tex_kernel_source(k)) : NULL;
    tex_kernel_free(k);
    return src;
}

/* The GPU matmul hinting its operand B at k: run on the CPU against the
 * oracle; emitted for CUDA exactly as without the hint; hinting at a block
 * loop with a thread loop inside that the index uses is refused. */
static void test_gpu(void)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    tex_tensor *C = matmul(&w, ctx, 40, 24, 9, false);
    tex_schedule *s = gpu_schedule(ctx, &w, C, 0);
    TT_CHECK(ops_check_jit(&w, s, "cpu", 7, NULL, true) == 0);
    char *with = cuda_source(&w, s), *without = cuda_source(&w, gpu_schedule(ctx, &w, C, -1));
    TT_CHECK(with && without && strcmp(with, without) == 0);
    free(with);
    free(without);
    char why[512];
    TT_CHECK(ops_lower(&w, gpu_schedule(ctx, &w, C, 1), why, sizeof why) == NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "bound to a thread") && strstr(tex_errmsg(ctx), "'B'"));
    tex_ctx_free(ctx);
}

/* Every refusal names the call, the stage, the tensor or the axis, and
 * leaves the schedule as it was; the primitives that would lose a
 * request's loop or read refuse after it. */
static void test_errors(void)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    tex_tensor *C = matmul(&w, ctx, 8, 16, 8, false);
    tex_tensor *A = w.in[0], *B = w.in[1];
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_stage *st = tex_stage_of(s, C), *sa = tex_stage_of(s, A);
    tex_iter *i = tex_op_axis(st, 0), *j = tex_op_axis(st, 1), *k = tex_op_reduce_axis(st, 0);
    TT_EQ_INT(tex_prefetch(NULL, A, k, 1), TEX_EMISUSE);
    TT_EQ_INT(tex_prefetch(st, NULL, k, 1), TEX_EMISUSE);
    TT_EQ_INT(tex_prefetch(st, A, NULL, 1), TEX_EMISUSE);
    TT_EQ_INT(tex_prefetch(sa, A, k, 1), TEX_EINVAL); /* a placeholder's stage */
    tex_tensor *other = tex_placeholder(ctx, "Q", TEX_F32, 1, (tex_expr *[]){tex_int(ctx, 4)});
    tex_clear_error(ctx);
    TT_EQ_INT(tex_prefetch(st, other, k, 1), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "tex_prefetch") && strstr(tex_errmsg(ctx), "'C'") &&
             strstr(tex_errmsg(ctx), "'Q'"));
    tex_clear_error(ctx);
    TT_EQ_INT(tex_prefetch(st, A, k, 0), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "offset 0") && strstr(tex_errmsg(ctx), "axis 'k'"));
    TT_EQ_INT(tex_prefetch(st, A, k, (1 << 20) + 1), TEX_EINVAL);
    tex_iter *jo, *ji;
    TT_EQ_INT(tex_split(st, j, tex_int(ctx, 4), &jo, &ji), 0);
    TT_EQ_INT(tex_prefetch(st, A, j, 1), TEX_EINVAL); /* no longer a leaf */
    TT_EQ_INT(tex_vectorize(st, ji), 0);
    tex_clear_error(ctx);
    TT_EQ_INT(tex_prefetch(st, B, ji, 1), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "vectorized"));
    char *before = tex_schedule_str(s);
    TT_EQ_INT(tex_prefetch(st, A, k, 2), 0);
    TT_EQ_INT(tex_prefetch(st, B, i, 1), 0);
    /* what would lose the requests refuses, naming tex_prefetch */
    tex_iter *ko, *ki;
    tex_clear_error(ctx);
    TT_EQ_INT(tex_split(st, k, tex_int(ctx, 2), &ko, &ki), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "tex_prefetch") && strstr(tex_errmsg(ctx), "'k'"));
    TT_EQ_INT(tex_fuse(st, i, jo, NULL), TEX_EINVAL);
    TT_EQ_INT(tex_vectorize(st, k), TEX_EINVAL);
    tex_clear_error(ctx);
    TT_CHECK(tex_cache_read(s, A, TEX_SCOPE_LOCAL, 1, &C) == NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "tex_cache_read") && strstr(tex_errmsg(ctx), "'A'"));
    TT_CHECK(tex_rfactor(s, C, k, 0) == NULL);
    TT_CHECK(tex_cache_write(s, C, TEX_SCOPE_LOCAL) == NULL);
    char *str = tex_schedule_str(s);
    TT_CHECK(str && count(str, "prefetch A at axis k, 2") == 1 &&
             count(str, "prefetch B at axis i") == 1);
    TT_CHECK(before && !strstr(before, "prefetch"));
    free(before);
    free(str);
    tex_ctx_free(ctx);
}

/* tex_prefetch_at: the outer axis must be a leaf at or outside the hints'
 * loop; primitives that would lose it refuse, and so does a reorder that
 * would move it inside. */
static void test_errors_at(void)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    tex_tensor *C = matmul(&w, ctx, 8, 16, 8, false);
    tex_tensor *A = w.in[0];
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *i = tex_op_axis(st, 0), *j = tex_op_axis(st, 1), *k = tex_op_reduce_axis(st, 0);
    TT_EQ_INT(tex_prefetch_at(st, A, k, NULL, 1), TEX_EMISUSE);
    tex_clear_error(ctx);
    TT_EQ_INT(tex_prefetch_at(st, A, i, k, 1), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "tex_prefetch_at") && strstr(tex_errmsg(ctx), "'k'") &&
             strstr(tex_errmsg(ctx), "inside axis 'i'") && strstr(tex_errmsg(ctx), "'A'"));
    TT_EQ_INT(tex_prefetch_at(st, A, k, i, 0), TEX_EINVAL);
    TT_EQ_INT(tex_prefetch_at(st, A, k, i, 1), 0);
    tex_clear_error(ctx);
    TT_EQ_INT(tex_split(st, i, tex_int(ctx, 2), NULL, NULL), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "tex_prefetch") && strstr(tex_errmsg(ctx), "'A'"));
    tex_clear_error(ctx);
    TT_EQ_INT(tex_reorder(st, 3, (tex_iter *[]){k, j, i}), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "tex_reorder") && strstr(tex_errmsg(ctx), "axis 'i'") &&
             strstr(tex_errmsg(ctx), "tex_prefetch_at"));
    TT_EQ_INT(tex_reorder(st, 2, (tex_iter *[]){k, j}), 0); /* i stays outside k */
    char why[512];
    TT_CHECK(ops_lower(&w, s, why, sizeof why) != NULL);
    tex_ctx_free(ctx);
}

int main(void)
{
    if (oc_setup(cache_dir) != 0) {
        printf("test_prefetch: cannot make a temporary cache directory\n");
        return 1;
    }
    TT_RUN(test_errors);
    TT_RUN(test_errors_at);
    if (!tex_target_available("cpu")) {
        printf("SKIP prefetch (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_gemm);
    TT_RUN(test_lines);
    TT_RUN(test_prefetch_at);
    TT_RUN(test_copy_source);
    TT_RUN(test_scalar_tensor);
    TT_RUN(test_root_stage);
    TT_RUN(test_shared);
    TT_RUN(test_parallel_inside);
    TT_RUN(test_fused_tails);
    TT_RUN(test_trace);
    TT_RUN(test_gpu);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
