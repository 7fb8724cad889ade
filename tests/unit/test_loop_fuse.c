/*
 * Pass loop_fuse (src/lower/loop_fuse.c): horizontal fusion of adjacent
 * independent loops over one range.
 *
 * Functions with two outputs of one input, each a root stage with its own
 * loop nest: the generated C must hold one parallel loop where the two
 * nests are independent and of one kind and range (constant and symbolic
 * sizes, odd shapes, inner serial loops that merge too, two reductions),
 * and two where they are not (the second reads the first, other extents,
 * one parallel and one serial). Every kernel runs through the JIT on 1 and
 * 2 threads, outputs poisoned first, against the oracle.
 */
#include "tt.h"
#include "support/ops.h"
#include "support/tmpdir.h"

#include <string.h>
#include <unistd.h>

static char cache_dir[] = "/tmp/tex-test-loop-fuse-XXXXXX";

enum { MAX_T = 4 };

/* A function under test: X (and a size var n when symbolic), two outputs. */
typedef struct {
    tex_ctx *ctx;
    tex_tensor *t[MAX_T]; /* X, Y1, Y2 */
    tex_expr *rows;       /* X's first extent */
    int64_t m, n;         /* the real sizes */
    int64_t extra[MAX_T]; /* rows of t[k] beyond m */
} two_out;

static void begin(two_out *w, int64_t m, int64_t n, bool symbolic)
{
    memset(w, 0, sizeof *w);
    w->ctx = tex_ctx_new();
    w->m = m;
    w->n = n;
    w->rows = symbolic ? tex_var(w->ctx, "rows", TEX_I64) : tex_int(w->ctx, m);
    w->t[0] = tex_placeholder(w->ctx, "X", TEX_F32, 2, (tex_expr *[]){w->rows, tex_int(w->ctx, n)});
}

/* An elementwise output f(X) over X's shape (or `rows + extra` rows). */
static tex_tensor *elementwise(two_out *w, const char *name, tex_tensor *in, double scale,
                               int64_t extra)
{
    tex_ctx *c = w->ctx;
    tex_expr *rows = extra ? tex_add(w->rows, tex_int(c, extra)) : w->rows;
    tex_iter *i = tex_axis(c, "i", rows), *j = tex_axis(c, "j", tex_int(c, w->n));
    tex_expr *iv = extra ? tex_floormod(tex_iv(i), w->rows) : tex_iv(i);
    tex_expr *body = tex_add(tex_mul(TEX_AT(in, iv, tex_iv(j)), tex_const(c, TEX_F32, scale)),
                             tex_const(c, TEX_F32, 1.0));
    w->extra[w->t[1] ? 2 : 1] = extra;
    return tex_compute(c, name, 2, (tex_iter *[]){i, j}, body);
}

/* A row reduction of X: sum (max == false) or max. */
static tex_tensor *row_reduce(two_out *w, const char *name, bool max)
{
    tex_ctx *c = w->ctx;
    tex_iter *i = tex_axis(c, "i", w->rows), *k = tex_reduce_axis(c, "k", tex_int(c, w->n));
    tex_expr *x = TEX_AT(w->t[0], tex_iv(i), tex_iv(k));
    return tex_compute(c, name, 1, &i, max ? tex_reduce_max(x, 1, &k) : tex_sum(x, 1, &k));
}

/* An array for w->t[k] at the real sizes, random when it is the input. */
static DLTensor *array_of(const two_out *w, int k, uint64_t *rng)
{
    int64_t shape[2] = {w->m + w->extra[k], w->n};
    DLTensor *a = tex_array_new(tex_tensor_ndim(w->t[k]), shape, TEX_F32, (DLDevice){kDLCPU, 0});
    if (a && k == 0)
        ops_fill_random(a, TEX_F32, rng);
    return a;
}

/* Schedules both outputs with `kinds` ("pp": both row loops parallel, "ss":
 * none, "ps": the first only), lowers, checks the number of parallel loops
 * in the C and the number of loops, then runs the JIT kernels against the
 * oracle. */
static void check(two_out *w, const char *kinds, int want_parallel, int want_fors)
{
    tex_tensor *outs[2] = {w->t[1], w->t[2]};
    tex_schedule *s = tex_schedule_new(w->ctx, 2, outs);
    for (int o = 0; s && o < 2; o++)
        if (kinds[o] == 'p')
            TT_EQ_INT(
                tex_parallel(tex_stage_of(s, outs[o]), tex_op_axis(tex_stage_of(s, outs[o]), 0)),
                0);
    tex_func *f = s ? tex_lower_tensors(s, "f", 3, w->t) : NULL;
    tex_kernel *src = f ? tex_build(f, "c") : NULL;
    const char *c = src ? tex_kernel_source(src) : NULL;
    TT_CHECK(c != NULL);
    int parallel = 0, fors = 0;
    for (const char *p = c; p && (p = strstr(p, "omp parallel for")); p++)
        parallel++;
    for (const char *p = c; p && (p = strstr(p, "for (int")); p++)
        fors++;
    if (c && (parallel != want_parallel || fors != want_fors))
        TT_FAILF("%d parallel loops and %d loops, want %d and %d:\n%s", parallel, fors,
                 want_parallel, want_fors, c);
    tex_kernel_free(src);
    uint64_t rng = 0x1f2e3d4c;
    DLTensor *in = array_of(w, 0, &rng);
    DLTensor *want[2], *got[2];
    for (int o = 0; o < 2; o++) {
        want[o] = array_of(w, o + 1, &rng);
        got[o] = array_of(w, o + 1, &rng);
    }
    TT_EQ_INT(tex_eval_reference(w->ctx, 3, w->t, (DLTensor *[]){in, want[0], want[1]}), 0);
    for (int threads = 1; f && threads <= 2; threads++) {
        char target[32];
        snprintf(target, sizeof target, "cpu -threads=%d", threads);
        tex_kernel *k = tex_build(f, target);
        TT_CHECK(k != NULL);
        for (int o = 0; o < 2; o++)
            ops_poison(got[o], TEX_F32);
        TT_EQ_INT(k ? tex_kernel_call_tensors(k, 3, (DLTensor *[]){in, got[0], got[1]}) : -1, 0);
        for (int o = 0; o < 2; o++)
            if (ops_compare(got[o], want[o], TEX_F32) >= 0)
                TT_FAILF("%s: output %d differs from the oracle", target, o + 1);
        tex_kernel_free(k);
    }
    tex_array_free(in);
    for (int o = 0; o < 2; o++) {
        tex_array_free(want[o]);
        tex_array_free(got[o]);
    }
    tex_ctx_free(w->ctx);
}

/* Two maps of X: one parallel row loop, whose two column loops merge. */
static void test_independent_maps(void)
{
    two_out w;
    begin(&w, 37, 53, false);
    w.t[1] = elementwise(&w, "Y1", w.t[0], 2.0, 0);
    w.t[2] = elementwise(&w, "Y2", w.t[0], -3.0, 0);
    check(&w, "pp", 1, 2);
}

static void test_symbolic_rows(void)
{
    two_out w;
    begin(&w, 29, 17, true);
    w.t[1] = elementwise(&w, "Y1", w.t[0], 2.0, 0);
    w.t[2] = elementwise(&w, "Y2", w.t[0], 0.5, 0);
    check(&w, "pp", 1, 2);
}

/* Serial nests fuse as well. */
static void test_serial(void)
{
    two_out w;
    begin(&w, 3, 31, false);
    w.t[1] = elementwise(&w, "Y1", w.t[0], 2.0, 0);
    w.t[2] = elementwise(&w, "Y2", w.t[0], 5.0, 0);
    check(&w, "ss", 0, 2);
}

/* Two reductions of each row: one row loop, the reduce loops apart. */
static void test_two_reductions(void)
{
    two_out w;
    begin(&w, 23, 41, false);
    w.t[1] = row_reduce(&w, "S", false);
    w.t[2] = row_reduce(&w, "M", true);
    check(&w, "pp", 1, 3);
}

/* Y2 reads Y1: the nests stay apart. */
static void test_dependent(void)
{
    two_out w;
    begin(&w, 19, 13, false);
    w.t[1] = elementwise(&w, "Y1", w.t[0], 2.0, 0);
    w.t[2] = elementwise(&w, "Y2", w.t[1], 3.0, 0);
    check(&w, "pp", 2, 4);
}

/* Other ranges or other kinds: apart. */
static void test_mismatched_loops(void)
{
    two_out w;
    begin(&w, 19, 13, false);
    w.t[1] = elementwise(&w, "Y1", w.t[0], 2.0, 0);
    w.t[2] = elementwise(&w, "Y2", w.t[0], 3.0, 1);
    check(&w, "pp", 2, 4);
    begin(&w, 19, 13, false);
    w.t[1] = elementwise(&w, "Y1", w.t[0], 2.0, 0);
    w.t[2] = elementwise(&w, "Y2", w.t[0], 3.0, 0);
    check(&w, "ps", 1, 4);
}

int main(void)
{
    if (!tt_private_cache(cache_dir, "test_loop_fuse"))
        return 1;
    if (!tex_target_available("cpu")) {
        printf("SKIP loop_fuse (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_independent_maps);
    TT_RUN(test_symbolic_rows);
    TT_RUN(test_serial);
    TT_RUN(test_two_reductions);
    TT_RUN(test_dependent);
    TT_RUN(test_mismatched_loops);
    int rc = tt_finish();
    tt_remove_tree(cache_dir);
    return rc;
}
