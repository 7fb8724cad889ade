/*
 * Differential testing of the whole lowering pipeline with random legal
 * schedules: for every workload of tests/support/randsched.h and several
 * shapes (primes, 1, sizes no factor divides, symbolic sizes bound at call
 * time, passed through the arrays' shapes or as VAR parameters), that
 * header's seeded generator applies a random sequence of primitives (split,
 * nparts, tile, fuse, reorder, annotations, inline, compute_at / root, cache
 * read / write, rfactor; a refusal must leave the schedule as it was). Every
 * schedule is lowered, interpreted on random inputs and compared with the
 * reference evaluator. Each workload prints one PASS/FAIL line; a summary
 * gives schedules tried and primitives applied and rejected. A failure
 * prints its seed, the steps and the lowered AST; TEX_RANDOM_SEED=<n> reruns
 * one seed of every workload. test_jit_random runs the same schedules
 * through the CPU JIT.
 *
 * Then hand-written schedules, one per workload family: GPU-style binding
 * (blocks and threads, local accumulator), conv2d with the padding inlined or
 * computed per output row (stride 2, symbolic sizes), softmax / layernorm
 * statistics per row, rfactor, cached transpose tiles, reduce loops
 * outermost, an inlined elementwise chain fused and vectorized, and the tail
 * strategies (SHIFT_INWARDS over a too short symbolic extent must fail at
 * call time).
 */
#include "tt.h"
#include "support/ops.h"
#include "support/schedgen.h"
#include "support/randsched.h"

static long n_schedules, n_failed_total;

/* One random schedule of the workload; true when it checks out. */
static bool one_schedule(const sg_workload *wl, uint64_t seed, bool report)
{
    ops_wl w;
    rs_gen g;
    bool ok = rs_begin(&g, &w, wl, seed, report);
    if (ok)
        ok = ops_check(&w, g.s, seed, &g.log, report) == 0;
    char why[4096];
    if (ok && sg_text_round_trip(&w, g.s, why, sizeof why) != 0) {
        if (report)
            printf("  %s seed %llu: %s\n%s", wl->name, (unsigned long long)seed, why, g.log.text);
        ok = false;
    }
    tex_ctx_free(w.ctx);
    return ok;
}

#define WORKLOAD(fn, nv, ns, tr)                                                                   \
    static void test_##fn(void)                                                                    \
    {                                                                                              \
        static const sg_workload wl = {#fn, rs_wl_##fn, nv, ns, tr};                               \
        sg_run(&wl, one_schedule, 3, &n_schedules, &n_failed_total);                               \
    }

RS_WORKLOADS(WORKLOAD)

/* ------------------------------------------------- hand-written schedules */

/* GPU-style matmul without shared memory: blocks and threads over tiles of
 * C, the accumulator in a local cache computed at the thread level. */
static void test_hand_matmul_gpu(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "matmul_gpu", NULL);
    tex_tensor *C = ops_matmul(&h->w, 13, 7, 5, false);
    hand_schedule(h);
    tex_tensor *CL = tex_cache_write(h->s, C, TEX_SCOPE_LOCAL);
    TT_CHECK(CL != NULL);
    tex_iter *io, *ii, *jo, *ji;
    OK(tex_split(S(h, C), tex_op_axis(S(h, C), 0), I(h, 4), &io, &ii));
    OK(tex_split(S(h, C), tex_op_axis(S(h, C), 1), I(h, 4), &jo, &ji));
    OK(tex_reorder(S(h, C), 4, (tex_iter *[]){io, jo, ii, ji}));
    OK(tex_compute_at(S(h, CL), S(h, C), ji));
    OK(tex_bind(S(h, C), io, TEX_BLOCK_X));
    OK(tex_bind(S(h, C), jo, TEX_BLOCK_Y));
    OK(tex_bind(S(h, C), ii, TEX_THREAD_X));
    OK(tex_bind(S(h, C), ji, TEX_THREAD_Y));
    hand_end(h);
}

/* Conv2d with the padding inlined, output tiled, inner axis vectorized. */
static void test_hand_conv_inline(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "conv_inline", NULL);
    tex_tensor *Out = ops_conv2d(&h->w, 1, 2, 7, 7, 3, 3, 3, 1, 1, false);
    hand_schedule(h);
    tex_iter *yo, *xo, *yi, *xi;
    OK(tex_compute_inline(S(h, h->w.mid[0])));
    OK(tex_tile(S(h, Out), tex_op_axis(S(h, Out), 2), tex_op_axis(S(h, Out), 3), I(h, 4), I(h, 4),
                &yo, &xo, &yi, &xi));
    OK(tex_vectorize(S(h, Out), xi));
    OK(tex_parallel(S(h, Out), tex_op_axis(S(h, Out), 1)));
    hand_end(h);
}

/* Conv2d (stride 2, symbolic H, W) with the padded rows computed per output row. */
static void test_hand_conv_pad_at(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "conv_pad_at", NULL);
    tex_tensor *Out = ops_conv2d(&h->w, 1, 2, 9, 6, 2, 3, 3, 2, 1, true);
    hand_schedule(h);
    OK(tex_compute_at(S(h, h->w.mid[0]), S(h, Out), tex_op_axis(S(h, Out), 2)));
    hand_end(h);
}

/* Softmax with the row max and the row sum computed per row of the output. */
static void test_hand_softmax_rows(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "softmax_rows", NULL);
    tex_tensor *Y = ops_softmax(&h->w, 7, 13, false);
    hand_schedule(h);
    tex_iter *jo, *ji;
    OK(tex_compute_at(S(h, h->w.mid[0]), S(h, Y), tex_op_axis(S(h, Y), 0)));
    OK(tex_compute_at(S(h, h->w.mid[1]), S(h, Y), tex_op_axis(S(h, Y), 0)));
    OK(tex_parallel(S(h, Y), tex_op_axis(S(h, Y), 0)));
    OK(tex_split(S(h, Y), tex_op_axis(S(h, Y), 1), I(h, 4), &jo, &ji));
    OK(tex_vectorize(S(h, Y), ji));
    hand_end(h);
}

/* Layernorm over symbolic sizes, statistics per row, passed as VAR parameters. */
static void test_hand_layernorm_rows(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "layernorm_rows", NULL);
    tex_tensor *Y = ops_layernorm(&h->w, 5, 11, true);
    h->w.var_params = true;
    hand_schedule(h);
    OK(tex_compute_at(S(h, h->w.mid[0]), S(h, Y), tex_op_axis(S(h, Y), 0)));
    OK(tex_compute_at(S(h, h->w.mid[1]), S(h, Y), tex_op_axis(S(h, Y), 0)));
    hand_end(h);
}

/* Sum with rfactor: the factored partial sums vectorized over their new axis. */
static void test_hand_sum_rfactor(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "sum_rfactor", NULL);
    tex_tensor *R = ops_reduce(&h->w, 0, false, false, 7, 13, 1, false);
    hand_schedule(h);
    tex_iter *ko, *ki;
    OK(tex_split(S(h, R), tex_op_reduce_axis(S(h, R), 0), I(h, 4), &ko, &ki));
    tex_tensor *RF = tex_rfactor(h->s, R, ki, 1);
    TT_CHECK(RF != NULL);
    if (RF) {
        OK(tex_vectorize(S(h, RF), tex_op_axis(S(h, RF), 1)));
        OK(tex_parallel(S(h, R), tex_op_axis(S(h, R), 0)));
    }
    hand_end(h);
}

/* Transpose by 4x4 tiles read through a local cache of each input tile. */
static void test_hand_transpose_tiles(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "transpose_tiles", NULL);
    tex_tensor *B = ops_transpose(&h->w, 13, 7, false);
    hand_schedule(h);
    tex_tensor *AA = tex_cache_read(h->s, h->w.in[0], TEX_SCOPE_LOCAL, 1, &B);
    TT_CHECK(AA != NULL);
    tex_iter *jo, *io, *ji, *ii;
    OK(tex_tile(S(h, B), tex_op_axis(S(h, B), 0), tex_op_axis(S(h, B), 1), I(h, 4), I(h, 4), &jo,
                &io, &ji, &ii));
    if (AA)
        OK(tex_compute_at(S(h, AA), S(h, B), io));
    hand_end(h);
}

/* Max pooling with the reduce loops outermost and the window unrolled. */
static void test_hand_pool_reorder(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "pool_reorder", NULL);
    tex_tensor *P = ops_pool2d(&h->w, 1, 2, 7, 7, 3, 2, true, false);
    hand_schedule(h);
    tex_stage *st = S(h, P);
    tex_iter *ry = tex_op_reduce_axis(st, 0), *rx = tex_op_reduce_axis(st, 1);
    OK(tex_reorder(st, 6,
                   (tex_iter *[]){ry, tex_op_axis(st, 0), tex_op_axis(st, 1), rx,
                                  tex_op_axis(st, 2), tex_op_axis(st, 3)}));
    OK(tex_unroll(st, rx));
    hand_end(h);
}

/* The elementwise chain inlined, fused, split and vectorized. */
static void test_hand_elemwise_fused(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "elemwise_fused", NULL);
    tex_tensor *Out = ops_elemwise(&h->w, 7, 13, false);
    hand_schedule(h);
    tex_iter *f, *o, *i;
    OK(tex_compute_inline(S(h, h->w.mid[0])));
    OK(tex_compute_inline(S(h, h->w.mid[1])));
    OK(tex_fuse(S(h, Out), tex_op_axis(S(h, Out), 0), tex_op_axis(S(h, Out), 1), &f));
    OK(tex_split(S(h, Out), f, I(h, 8), &o, &i));
    OK(tex_vectorize(S(h, Out), i));
    OK(tex_parallel(S(h, Out), o));
    hand_end(h);
}

/* Each tail strategy that is legal for a pure data-parallel output: GUARD,
 * SHIFT_INWARDS, PREDICATE on a vectorized inner loop; T1 computed inside. */
static void test_hand_tails(void)
{
    static const tex_tail tails[3] = {TEX_TAIL_GUARD, TEX_TAIL_SHIFT_INWARDS, TEX_TAIL_PREDICATE};
    for (int k = 0; k < 3; k++) {
        for (int sym = 0; sym < 2; sym++) {
            hand hh, *h = &hh;
            hand_begin(h, "tails", NULL);
            tex_tensor *Out = ops_elemwise(&h->w, 5, 13, sym);
            hand_schedule(h);
            tex_iter *o, *i;
            OK(tex_split_tail(S(h, Out), tex_op_axis(S(h, Out), 1), I(h, 4), tails[k], &o, &i));
            if (tails[k] == TEX_TAIL_PREDICATE)
                OK(tex_vectorize(S(h, Out), i));
            OK(tex_compute_at(S(h, h->w.mid[1]), S(h, Out), o));
            hand_end(h);
        }
    }
}

/* SHIFT_INWARDS over a symbolic extent: 3 < factor 4 fails at call time. */
static void test_hand_shift_inwards_too_short(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "shift_short", NULL);
    tex_tensor *B = ops_transpose(&h->w, 3, 5, true); /* B[j, i], extents N = 5, M = 3 */
    hand_schedule(h);
    tex_iter *o, *i;
    OK(tex_split_tail(S(h, B), tex_op_axis(S(h, B), 1), I(h, 4), TEX_TAIL_SHIFT_INWARDS, &o, &i));
    char why[1024];
    tex_func *f = ops_lower(&h->w, h->s, why, sizeof why);
    TT_CHECK(f != NULL);
    if (f) {
        TT_CHECK(ops_run_compare(&h->w, f, 0, why, sizeof why) != 0);
        TT_CHECK(strstr(why, "assertion failed") != NULL);
    }
    h->w.vals[0] = 4; /* M = 4 >= 4: fine */
    TT_CHECK(f && ops_run_compare(&h->w, f, 0, why, sizeof why) == 0);
    tex_ctx_free(h->w.ctx);
}

static void print_summary(void)
{
    printf("random schedules: %ld tried, %ld failed\n", n_schedules, n_failed_total);
    rs_print_summary();
}

#define RUN_WORKLOAD(fn, nv, ns, tr) TT_RUN(test_##fn);

int main(void)
{
    RS_WORKLOADS(RUN_WORKLOAD)
    print_summary();
    TT_RUN(test_hand_matmul_gpu);
    TT_RUN(test_hand_conv_inline);
    TT_RUN(test_hand_conv_pad_at);
    TT_RUN(test_hand_softmax_rows);
    TT_RUN(test_hand_layernorm_rows);
    TT_RUN(test_hand_sum_rfactor);
    TT_RUN(test_hand_transpose_tiles);
    TT_RUN(test_hand_pool_reorder);
    TT_RUN(test_hand_elemwise_fused);
    TT_RUN(test_hand_tails);
    TT_RUN(test_hand_shift_inwards_too_short);
    return tt_finish();
}
