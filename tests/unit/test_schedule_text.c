/*
 * Schedules as text: tex_schedule_trace writes the primitives applied to a
 * schedule, tex_schedule_apply_text applies such text to another schedule of
 * the same computes (docs/api.md, "Schedules as text").
 *
 * The exact text of a hand-written schedule; round trips of schedules using
 * the primitives the random-schedule tests do not (bind, set_scope,
 * storage_align, double_buffer, atomic, tensorize, tail strategies,
 * vectorize_reduce), each compared on the lowered AST and one of them
 * JIT-compiled against the oracle; references by index when names clash or
 * are not plain words; and every refusal: unknown primitive, stage or axis,
 * malformed numbers and words, a primitive's own refusal, texts that cannot
 * be written, all or nothing. test_lower_random round-trips its thousands
 * of random schedules too.
 */
#include "tt.h"
#include "support/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tex_ctx *ctx;
static tex_tensor *A, *B, *C;
static tex_iter *ci, *cj, *ck;

/* C[i, j] = sum_k A[i, k] * B[k, j] (m x n x k) in a fresh context. */
static void matmul(int64_t m, int64_t n, int64_t k)
{
    ctx = tex_ctx_new();
    A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){m, k});
    B = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){k, n});
    ci = tex_axis(ctx, "i", tex_int(ctx, m));
    cj = tex_axis(ctx, "j", tex_int(ctx, n));
    ck = tex_reduce_axis(ctx, "k", tex_int(ctx, k));
    tex_expr *ab = tex_mul(TEX_AT(A, tex_iv(ci), tex_iv(ck)), TEX_AT(B, tex_iv(ck), tex_iv(cj)));
    C = tex_compute(ctx, "C", 2, (tex_iter *[]){ci, cj}, tex_sum(ab, 1, &ck));
}

static tex_schedule *fresh(void)
{
    return tex_schedule_new(ctx, 1, &C);
}

static char *lowered(tex_schedule *s)
{
    tex_func *f = tex_lower_tensors(s, "mm", 3, (tex_tensor *[]){A, B, C});
    return f ? tex_func_str(f) : NULL;
}

/* s's text applied to a fresh schedule lowers to the same AST as s. */
static void check_round_trip(tex_schedule *s)
{
    char *text = tex_schedule_trace(s);
    TT_CHECK(text != NULL);
    tex_schedule *t = fresh();
    TT_EQ_INT(tex_schedule_apply_text(t, text ? text : ""), 0);
    char *a = lowered(s), *b = lowered(t), *again = tex_schedule_trace(t);
    TT_CHECK(a && b && strcmp(a, b) == 0);
    TT_EQ_STR(again ? again : "", text ? text : ""); /* the replay recorded the same lines */
    if (tex_errcode(ctx))
        printf("  %s\n", tex_errmsg(ctx));
    free(text), free(a), free(b), free(again);
}

static void test_text_of_a_schedule(void)
{
    matmul(64, 48, 32);
    tex_schedule *s = fresh();
    tex_tensor *CL = tex_cache_write(s, C, TEX_SCOPE_LOCAL);
    tex_stage *sc = tex_stage_of(s, C), *sl = tex_stage_of(s, CL);
    tex_iter *io, *jo, *ii, *ji, *ko, *ki;
    TT_EQ_INT(tex_tile(sc, tex_op_axis(sc, 0), tex_op_axis(sc, 1), tex_int(ctx, 8),
                       tex_int(ctx, 16), &io, &jo, &ii, &ji),
              0);
    TT_EQ_INT(tex_compute_at(sl, sc, jo), 0);
    TT_EQ_INT(
        tex_split_tail(sl, tex_op_reduce_axis(sl, 0), tex_int(ctx, 4), TEX_TAIL_GUARD, &ko, &ki),
        0);
    TT_EQ_INT(tex_reorder(sl, 4, (tex_iter *[]){ko, ki, tex_op_axis(sl, 0), tex_op_axis(sl, 1)}),
              0);
    TT_EQ_INT(tex_unroll(sl, ki), 0);
    TT_EQ_INT(tex_vectorize(sl, tex_op_axis(sl, 1)), 0);
    TT_EQ_INT(tex_vectorize(sl, tex_op_axis(sl, 1)), 0); /* a repeat changes nothing: no line */
    TT_EQ_INT(tex_parallel(sc, io), 0);
    TT_EQ_INT(tex_vectorize(sc, tex_op_axis(sc, 0)), TEX_EINVAL); /* refused: no line */
    tex_clear_error(ctx);
    char *text = tex_schedule_trace(s);
    TT_EQ_STR(text ? text : "", "cache_write C local\n"
                                "tile C i j 8 16\n"
                                "compute_at C.local C j.outer\n"
                                "split C.local k 4 guard\n"
                                "reorder C.local k.outer k.inner i j\n"
                                "unroll C.local k.inner\n"
                                "vectorize C.local j\n"
                                "parallel C i.outer\n");
    free(text);
    check_round_trip(s);
    tex_ctx_free(ctx);
}

/* The GPU-side primitives and the rarer ones, each round-tripped. */
static void test_round_trip_gpu_primitives(void)
{
    matmul(70, 50, 40);
    tex_schedule *s = fresh();
    tex_tensor *AS = tex_cache_read(s, A, TEX_SCOPE_SHARED, 1, &C);
    tex_tensor *CL = tex_cache_write(s, C, TEX_SCOPE_LOCAL);
    tex_stage *sc = tex_stage_of(s, C), *sl = tex_stage_of(s, CL), *sa = tex_stage_of(s, AS);
    tex_iter *bo, *to, *bi, *ti;
    TT_EQ_INT(tex_split_nparts(sc, tex_op_axis(sc, 0), tex_int(ctx, 4), &bo, &bi), 0);
    TT_EQ_INT(tex_split(sc, tex_op_axis(sc, 1), tex_int(ctx, 8), &to, &ti), 0);
    TT_EQ_INT(tex_reorder(sc, 4, (tex_iter *[]){bo, to, bi, ti}), 0);
    TT_EQ_INT(tex_bind(sc, bo, TEX_BLOCK_X), 0);
    TT_EQ_INT(tex_bind(sc, ti, TEX_THREAD_X), 0);
    TT_EQ_INT(tex_compute_at(sl, sc, ti), 0);
    TT_EQ_INT(tex_compute_at(sa, sc, bo), 0);
    TT_EQ_INT(tex_reorder_storage(sa, 2, (tex_iter *[]){tex_op_axis(sa, 1), tex_op_axis(sa, 0)}),
              0);
    TT_EQ_INT(tex_storage_align(sa, tex_op_axis(sa, 0), 8, 1), 0);
    TT_EQ_INT(tex_double_buffer(sa), 0);
    TT_EQ_INT(tex_set_scope(sa, TEX_SCOPE_SHARED), 0);
    check_round_trip(s);
    tex_ctx_free(ctx);

    matmul(33, 20, 17); /* an atomic reduction, a vectorized reduction */
    s = fresh();
    sc = tex_stage_of(s, C);
    TT_EQ_INT(tex_atomic(sc), 0);
    TT_EQ_INT(tex_reorder(sc, 3, (tex_iter *[]){ck, ci, cj}), 0);
    TT_EQ_INT(tex_parallel(sc, ck), 0);
    check_round_trip(s);
    s = fresh();
    sc = tex_stage_of(s, C);
    TT_EQ_INT(tex_vectorize_reduce(sc, ck), 0);
    TT_EQ_INT(tex_compute_root(sc), 0);
    check_round_trip(s);
    tex_ctx_free(ctx);
}

/* A tensorized schedule replays with the built-in by name, and the replayed
 * schedule's kernel matches the oracle. */
static void test_round_trip_tensorize_and_run(void)
{
    matmul(30, 32, 512);
    tex_schedule *s = fresh();
    tex_stage *sc = tex_stage_of(s, C);
    tex_iter *io, *jo, *ii, *ji, *ko, *ki;
    TT_EQ_INT(tex_tile(sc, ci, cj, tex_int(ctx, 6), tex_int(ctx, 16), &io, &jo, &ii, &ji), 0);
    TT_EQ_INT(tex_split(sc, ck, tex_int(ctx, 256), &ko, &ki), 0);
    TT_EQ_INT(tex_reorder(sc, 6, (tex_iter *[]){io, jo, ko, ii, ji, ki}), 0);
    TT_EQ_INT(tex_tensorize(sc, ii, tex_intrin_builtin(ctx, "cpu.gemm_f32_avx2")), 0);
    check_round_trip(s);
    char *text = tex_schedule_trace(s);
    TT_CHECK(text && strstr(text, "tensorize C i.inner cpu.gemm_f32_avx2\n"));
    tex_schedule *t = fresh();
    TT_EQ_INT(tex_schedule_apply_text(t, text ? text : ""), 0);
    free(text);
    ops_wl w;
    ops_init(&w, ctx, "tensorized");
    w.in[w.n_in++] = A;
    w.in[w.n_in++] = B;
    w.out = C;
    char why[2048];
    tex_func *f = ops_lower(&w, t, why, sizeof why);
    TT_CHECK(f && ops_jit_compare(&w, f, "cpu", 7, why, sizeof why) == 0);
    tex_ctx_free(ctx);
}

/* Names that are not plain words, or that clash (iters may share a name),
 * are written as @K / #K. */
static void test_references_by_index(void)
{
    ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 1, (int64_t[]){40});
    tex_iter *a = tex_axis(ctx, "my axis", tex_int(ctx, 40)),
             *b = tex_axis(ctx, "i", tex_int(ctx, 40));
    tex_tensor *T1 =
        tex_compute(ctx, "my T", 1, &a, tex_add(TEX_AT(X, tex_iv(a)), tex_const(ctx, TEX_F32, 1)));
    tex_tensor *T2 =
        tex_compute(ctx, "T", 1, &b, tex_mul(TEX_AT(T1, tex_iv(b)), tex_const(ctx, TEX_F32, 2)));
    tex_schedule *s = tex_schedule_new(ctx, 1, &T2);
    tex_stage *s1 = tex_stage_of(s, T1), *s2 = tex_stage_of(s, T2);
    tex_iter *o, *in;
    TT_EQ_INT(tex_split(s1, a, tex_int(ctx, 8), &o, &in), 0);
    TT_EQ_INT(tex_vectorize(s1, in), 0);
    TT_EQ_INT(tex_split(s2, b, tex_int(ctx, 8), &o, &in), 0);
    TT_EQ_INT(tex_compute_at(s1, s2, o), 0);
    char *text = tex_schedule_trace(s);
    TT_EQ_STR(text ? text : "", "split @1 #0 8\n"
                                "vectorize @1 #2\n"
                                "split T i 8\n"
                                "compute_at @1 T i.outer\n");
    tex_schedule *t = tex_schedule_new(ctx, 1, &T2);
    TT_EQ_INT(tex_schedule_apply_text(t, text ? text : ""), 0);
    char *x = tex_schedule_str(s), *y = tex_schedule_str(t);
    TT_CHECK(x && y && strcmp(x, y) == 0);
    free(text), free(x), free(y);
    tex_ctx_free(ctx);
}

/* tex_schedule_apply_text refuses text, naming the line; s is unchanged. */
static void refuse(const char *text, const char *want)
{
    tex_schedule *s = fresh();
    TT_EQ_INT(tex_split(tex_stage_of(s, C), ci, tex_int(ctx, 4), NULL, NULL), 0);
    char *before = tex_schedule_str(s), *trace_before = tex_schedule_trace(s);
    TT_EQ_INT(tex_schedule_apply_text(s, text), TEX_EINVAL);
    if (!strstr(tex_errmsg(ctx), want))
        TT_FAILF("'%s': message '%s' lacks '%s'", text, tex_errmsg(ctx), want);
    tex_clear_error(ctx);
    char *after = tex_schedule_str(s), *trace_after = tex_schedule_trace(s);
    TT_CHECK(before && after && strcmp(before, after) == 0);
    TT_CHECK(trace_before && trace_after && strcmp(trace_before, trace_after) == 0);
    free(before), free(after), free(trace_before), free(trace_after);
}

static void test_refusals(void)
{
    matmul(20, 12, 9);
    refuse("parallel C i.outer\nshuffle C j\n",
           "line 2 ('shuffle C j'): unknown primitive 'shuffle'");
    refuse("parallel Q i", "line 1 ('parallel Q i'): no stage 'Q' in this schedule");
    refuse("\n; comment\nparallel C q", "line 3 ('parallel C q'): stage 'C' has no axis 'q'");
    refuse("split C j x8", "'x8' is not an integer");
    refuse("split C j 8 sideways", "unknown tail strategy 'sideways'");
    refuse("split C j", "'split' needs 4 to 5 words, the line has 3");
    refuse("reorder", "'reorder' needs at least 3 words");
    refuse("bind C j threadIdx.w", "unknown thread tag 'threadIdx.w'");
    refuse("cache_write C registers", "unknown scope 'registers'");
    refuse("split C @5 4", "stage 'C' has no axis '@5'");
    refuse("parallel @9 i", "no stage '@9'");
    refuse("tensorize C j cpu.nothing", "unknown intrinsic");
    /* the primitive's own refusal, after a line that succeeded (all or nothing) */
    refuse("parallel C i.outer\nvectorize C k", "line 2 ('vectorize C k'): tex_vectorize");
    refuse("split C i.inner 0", "tex_split");
    tex_schedule *s = fresh();
    TT_EQ_INT(tex_schedule_apply_text(NULL, "parallel C i"), TEX_EMISUSE);
    TT_EQ_INT(tex_schedule_apply_text(s, NULL), TEX_EMISUSE);
    tex_clear_error(ctx);
    TT_CHECK(tex_schedule_trace(NULL) == NULL);
    TT_EQ_INT(tex_schedule_apply_text(s, ""), 0); /* nothing to do */
    TT_EQ_INT(tex_schedule_apply_text(s, "\n\n; only comments\n"), 0);
    /* an earlier error stays the recorded one */
    TT_EQ_INT(tex_vectorize(tex_stage_of(s, C), ck), TEX_EINVAL);
    char first[512];
    snprintf(first, sizeof first, "%s", tex_errmsg(ctx));
    TT_EQ_INT(tex_schedule_apply_text(s, "bogus"), TEX_EINVAL);
    TT_EQ_STR(tex_errmsg(ctx), first);
    tex_clear_error(ctx);
    tex_ctx_free(ctx);
}

/* Primitives with no text make tex_schedule_trace refuse; apply_text on such a
 * schedule still works, applying line by line. */
static void test_untextual_schedules(void)
{
    matmul(20, 12, 9);
    tex_expr *n = tex_var(ctx, "n", TEX_I32);
    tex_schedule *s = fresh();
    tex_stage *sc = tex_stage_of(s, C);
    TT_EQ_INT(tex_split(sc, ci, n, NULL, NULL), 0);
    TT_CHECK(tex_schedule_trace(s) == NULL);
    TT_EQ_INT(tex_errcode(ctx), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(ctx), "tex_schedule_trace") &&
             strstr(tex_errmsg(ctx), "stage 'C', axis 'i'"));
    tex_clear_error(ctx);
    TT_EQ_INT(tex_schedule_apply_text(s, "parallel C i.outer\nvectorize C k"), TEX_EINVAL);
    tex_clear_error(ctx);
    char *str = tex_schedule_str(s);
    TT_CHECK(str && strstr(str, "parallel")); /* line 1 stayed applied */
    free(str);
    tex_intrin *user = tex_intrin_extern(ctx, "mine", C, "void f(void) {}", "f", NULL, NULL);
    s = fresh();
    TT_CHECK(user != NULL);
    TT_EQ_INT(tex_tensorize(tex_stage_of(s, C), ci, user), 0);
    TT_CHECK(tex_schedule_trace(s) == NULL);
    TT_CHECK(strstr(tex_errmsg(ctx), "user intrinsic"));
    tex_clear_error(ctx);
    tex_ctx_free(ctx);
}

int main(void)
{
    TT_RUN(test_text_of_a_schedule);
    TT_RUN(test_round_trip_gpu_primitives);
    TT_RUN(test_round_trip_tensorize_and_run);
    TT_RUN(test_references_by_index);
    TT_RUN(test_refusals);
    TT_RUN(test_untextual_schedules);
    return tt_finish();
}
