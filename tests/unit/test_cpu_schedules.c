/*
 * JIT differential tests of the CPU backend: every standard workload of
 * tests/support/ops.h under hand-written and random schedules, lowered,
 * built with tex_build(f, "cpu") (or "cpu -threads=2"), called on seeded
 * random non-zero inputs with poisoned outputs, and compared with
 * tex_eval_reference within the dtype's tolerance (ops_check_jit).
 *
 * Hand-written schedules, a few per workload: non-divisible splits with each
 * tail strategy, tiles, fuse, reorder, parallel / vectorize / unroll
 * (vectorized loops with tails and predicates, unrolled reduction loops),
 * compute_at and compute_inline of intermediates, cache_read / cache_write,
 * rfactor, a GPU-style binding without barriers (run as serial loops on the
 * CPU), symbolic sizes passed through the arrays' shapes or as VAR
 * parameters, shapes with primes and ones.
 *
 * Random schedules: a structured generator (unlike test_lower_random's
 * sequence of arbitrary primitives, it draws a CPU-shaped schedule per
 * stage, as a person would write one): maybe cache_write / rfactor of the
 * output; per stage, splits of random axes by random factors and tails,
 * maybe a reorder (random permutation), a fuse of the two outer leaves,
 * parallel on the outermost leaf, vectorize on the innermost, unroll of a
 * short leaf; each intermediate at root, inlined or computed at a random
 * leaf of its sole consumer. A refused primitive (TEX_EINVAL) is skipped;
 * any other error fails. Seeded; TEX_RANDOM_SEED=<n> reruns one seed.
 *
 * Every build goes through a fresh temporary TEX_CACHE_DIR (set before the
 * first build, removed at the end). About 160 kernels are compiled.
 */
#include "tt.h"
#include "support/tmpdir.h"
#include "support/ops.h"
#include "support/schedgen.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

static char cache_dir[] = "/tmp/tex-test-cpu-XXXXXX";

/* ------------------------------------------------- hand-written schedules */

/* Matmul 13x7x5 (primes): 4x4 tiles (non-divisible), inner vectorized, k unrolled. */
static void test_matmul_tiles(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "matmul_tiles", "cpu");
    tex_tensor *C = ops_matmul(&h->w, 13, 7, 5, false);
    hand_schedule(h);
    tex_iter *io, *jo, *ii, *ji;
    OK(tex_tile(S(h, C), AX(h, C, 0), AX(h, C, 1), I(h, 4), I(h, 4), &io, &jo, &ii, &ji));
    OK(tex_reorder(S(h, C), 5, (tex_iter *[]){io, jo, ii, RAX(h, C, 0), ji}));
    OK(tex_vectorize(S(h, C), ji));
    OK(tex_unroll(S(h, C), RAX(h, C, 0)));
    OK(tex_parallel(S(h, C), io));
    hand_end(h);
}

/* Matmul 67x45x29 on 2 threads: the tutorial's write cache computed per
 * 16x16 tile, k split by 4 and unrolled, the tile's inner axis vectorized. */
static void test_matmul_cache_write(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "matmul_cache_write", "cpu");
    h->target = "cpu -threads=2";
    tex_tensor *C = ops_matmul(&h->w, 67, 45, 29, false);
    hand_schedule(h);
    tex_tensor *CC = tex_cache_write(h->s, C, TEX_SCOPE_LOCAL);
    TT_CHECK(CC != NULL);
    if (CC) {
        tex_iter *mo, *no, *mi, *ni, *ko, *ki;
        OK(tex_tile(S(h, C), AX(h, C, 0), AX(h, C, 1), I(h, 16), I(h, 16), &mo, &no, &mi, &ni));
        OK(tex_compute_at(S(h, CC), S(h, C), no));
        OK(tex_split(S(h, CC), RAX(h, CC, 0), I(h, 4), &ko, &ki));
        OK(tex_reorder(S(h, CC), 4, (tex_iter *[]){ko, AX(h, CC, 0), ki, AX(h, CC, 1)}));
        OK(tex_vectorize(S(h, CC), AX(h, CC, 1)));
        OK(tex_unroll(S(h, CC), ki));
        OK(tex_vectorize(S(h, C), ni));
        OK(tex_parallel(S(h, C), mo));
    }
    hand_end(h);
}

/* Symbolic M, N, K as VAR parameters; split with a guard, vectorized. */
static void test_matmul_symbolic(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "matmul_symbolic", "cpu");
    tex_tensor *C = ops_matmul(&h->w, 6, 19, 7, true);
    h->w.var_params = true;
    hand_schedule(h);
    tex_iter *jo, *ji;
    OK(tex_split_tail(S(h, C), AX(h, C, 1), I(h, 8), TEX_TAIL_GUARD, &jo, &ji));
    OK(tex_reorder(S(h, C), 4, (tex_iter *[]){AX(h, C, 0), jo, RAX(h, C, 0), ji}));
    OK(tex_vectorize(S(h, C), ji));
    OK(tex_parallel(S(h, C), AX(h, C, 0)));
    hand_end(h);
}

/* GPU-style binding without shared memory: blocks and threads run as serial loops. */
static void test_matmul_gpu_style(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "matmul_gpu_style", "cpu");
    tex_tensor *C = ops_matmul(&h->w, 13, 7, 5, false);
    hand_schedule(h);
    tex_tensor *CL = tex_cache_write(h->s, C, TEX_SCOPE_LOCAL);
    TT_CHECK(CL != NULL);
    tex_iter *io, *ii, *jo, *ji;
    OK(tex_split(S(h, C), AX(h, C, 0), I(h, 4), &io, &ii));
    OK(tex_split(S(h, C), AX(h, C, 1), I(h, 4), &jo, &ji));
    OK(tex_reorder(S(h, C), 4, (tex_iter *[]){io, jo, ii, ji}));
    if (CL)
        OK(tex_compute_at(S(h, CL), S(h, C), ji));
    OK(tex_bind(S(h, C), io, TEX_BLOCK_X));
    OK(tex_bind(S(h, C), jo, TEX_BLOCK_Y));
    OK(tex_bind(S(h, C), ii, TEX_THREAD_X));
    OK(tex_bind(S(h, C), ji, TEX_THREAD_Y));
    hand_end(h);
}

/* GPU-style with a shared-memory tile of A (so barriers): the CPU backend
 * either refuses it with TEX_EUNAVAILABLE or computes it right. */
static void test_matmul_gpu_barrier(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "matmul_gpu_barrier", "cpu");
    tex_tensor *C = ops_matmul(&h->w, 8, 8, 6, false);
    hand_schedule(h);
    tex_tensor *AS = tex_cache_read(h->s, h->w.in[0], TEX_SCOPE_SHARED, 1, &C);
    TT_CHECK(AS != NULL);
    tex_iter *io, *ii, *jo, *ji;
    OK(tex_split(S(h, C), AX(h, C, 0), I(h, 4), &io, &ii));
    OK(tex_split(S(h, C), AX(h, C, 1), I(h, 4), &jo, &ji));
    OK(tex_reorder(S(h, C), 5, (tex_iter *[]){io, jo, RAX(h, C, 0), ii, ji}));
    if (AS) {
        OK(tex_compute_at(S(h, AS), S(h, C), RAX(h, C, 0)));
        OK(tex_bind(S(h, AS), AX(h, AS, 0), TEX_THREAD_X));
    }
    OK(tex_bind(S(h, C), io, TEX_BLOCK_X));
    OK(tex_bind(S(h, C), jo, TEX_BLOCK_Y));
    OK(tex_bind(S(h, C), ii, TEX_THREAD_X));
    OK(tex_bind(S(h, C), ji, TEX_THREAD_Y));
    char why[2048];
    tex_func *f = ops_lower(&h->w, h->s, why, sizeof why);
    TT_CHECK(f != NULL);
    tex_kernel *k = f ? tex_build(f, "cpu") : NULL;
    if (f && !k) {
        printf("  note: refused: %s\n", tex_errmsg(h->w.ctx));
        TT_EQ_INT(tex_errcode(h->w.ctx), TEX_EUNAVAILABLE);
        tex_clear_error(h->w.ctx);
    } else if (f) {
        TT_CHECK(ops_jit_compare(&h->w, f, "cpu", 0, why, sizeof why) == 0);
    }
    tex_kernel_free(k);
    tex_ctx_free(h->w.ctx);
}

/* Batch matmul: batch and rows fused and parallel, columns split and vectorized. */
static void test_batch_matmul_fused(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "batch_matmul_fused", "cpu");
    tex_tensor *C = ops_batch_matmul(&h->w, 3, 5, 21, 7, false);
    hand_schedule(h);
    tex_iter *f, *jo, *ji;
    OK(tex_fuse(S(h, C), AX(h, C, 0), AX(h, C, 1), &f));
    OK(tex_split(S(h, C), AX(h, C, 2), I(h, 8), &jo, &ji));
    OK(tex_reorder(S(h, C), 4, (tex_iter *[]){f, jo, RAX(h, C, 0), ji}));
    OK(tex_parallel(S(h, C), f));
    OK(tex_vectorize(S(h, C), ji));
    hand_end(h);
}

/* Batch matmul with symbolic sizes read from the arrays, k split by nparts. */
static void test_batch_matmul_nparts(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "batch_matmul_nparts", "cpu");
    tex_tensor *C = ops_batch_matmul(&h->w, 2, 1, 13, 11, true);
    hand_schedule(h);
    tex_iter *ko, *ki;
    OK(tex_split_nparts(S(h, C), RAX(h, C, 0), I(h, 3), &ko, &ki));
    OK(tex_reorder(S(h, C), 5, (tex_iter *[]){AX(h, C, 0), ko, AX(h, C, 1), ki, AX(h, C, 2)}));
    OK(tex_vectorize(S(h, C), AX(h, C, 2)));
    hand_end(h);
}

/* Conv2d with the padding inlined, the output tiled, vectorized, parallel. */
static void test_conv2d_inline(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "conv2d_inline", "cpu");
    tex_tensor *Out = ops_conv2d(&h->w, 1, 3, 11, 9, 4, 3, 3, 1, 1, false);
    hand_schedule(h);
    tex_iter *yo, *xo, *yi, *xi;
    OK(tex_compute_inline(S(h, h->w.mid[0])));
    OK(tex_tile(S(h, Out), AX(h, Out, 2), AX(h, Out, 3), I(h, 4), I(h, 8), &yo, &xo, &yi, &xi));
    OK(tex_vectorize(S(h, Out), xi));
    OK(tex_parallel(S(h, Out), AX(h, Out, 1)));
    hand_end(h);
}

/* Conv2d, stride 2, symbolic H and W: padded rows computed per output row,
 * the 3x3 window unrolled. */
static void test_conv2d_pad_at(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "conv2d_pad_at", "cpu");
    tex_tensor *Out = ops_conv2d(&h->w, 1, 2, 9, 7, 3, 3, 3, 2, 1, true);
    hand_schedule(h);
    OK(tex_compute_at(S(h, h->w.mid[0]), S(h, Out), AX(h, Out, 2)));
    OK(tex_unroll(S(h, Out), RAX(h, Out, 2)));
    OK(tex_unroll(S(h, Out), RAX(h, Out, 1)));
    hand_end(h);
}

/* Conv2d: the padded input at root with its columns rounded up to a multiple
 * of 8 (its reads are clamped, so the extra columns are legal) and vectorized. */
static void test_conv2d_pad_round_up(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "conv2d_pad_round_up", "cpu");
    tex_tensor *Out = ops_conv2d(&h->w, 1, 2, 7, 9, 2, 3, 3, 1, 1, false);
    tex_tensor *Pad = h->w.mid[0];
    hand_schedule(h);
    tex_iter *o, *i;
    OK(tex_split_tail(S(h, Pad), AX(h, Pad, 3), I(h, 8), TEX_TAIL_ROUND_UP, &o, &i));
    OK(tex_vectorize(S(h, Pad), i));
    OK(tex_parallel(S(h, Out), AX(h, Out, 1)));
    hand_end(h);
}

/* Softmax: row statistics per row, rows parallel, the normalize vectorized. */
static void test_softmax_rows(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "softmax_rows", "cpu");
    h->target = "cpu -threads=2";
    tex_tensor *Y = ops_softmax(&h->w, 7, 37, false);
    hand_schedule(h);
    tex_iter *jo, *ji;
    OK(tex_compute_at(S(h, h->w.mid[0]), S(h, Y), AX(h, Y, 0)));
    OK(tex_compute_at(S(h, h->w.mid[1]), S(h, Y), AX(h, Y, 0)));
    OK(tex_parallel(S(h, Y), AX(h, Y, 0)));
    OK(tex_split(S(h, Y), AX(h, Y, 1), I(h, 16), &jo, &ji));
    OK(tex_vectorize(S(h, Y), ji));
    hand_end(h);
}

/* Softmax with the row sums computed by rfactor over a split of the row. */
static void test_softmax_rfactor(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "softmax_rfactor", "cpu");
    tex_tensor *Y = ops_softmax(&h->w, 5, 29, false);
    hand_schedule(h);
    tex_tensor *Se = h->w.mid[1];
    tex_iter *ko, *ki;
    OK(tex_split(S(h, Se), RAX(h, Se, 0), I(h, 8), &ko, &ki));
    tex_tensor *RF = tex_rfactor(h->s, Se, ki, 1);
    TT_CHECK(RF != NULL);
    if (RF)
        OK(tex_vectorize(S(h, RF), AX(h, RF, 1)));
    OK(tex_parallel(S(h, Y), AX(h, Y, 0)));
    hand_end(h);
}

/* Layernorm with symbolic sizes as VAR parameters, statistics per row. */
static void test_layernorm_rows(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "layernorm_rows", "cpu");
    tex_tensor *Y = ops_layernorm(&h->w, 5, 23, true);
    h->w.var_params = true;
    hand_schedule(h);
    tex_iter *jo, *ji;
    OK(tex_compute_at(S(h, h->w.mid[0]), S(h, Y), AX(h, Y, 0)));
    OK(tex_compute_at(S(h, h->w.mid[1]), S(h, Y), AX(h, Y, 0)));
    OK(tex_split_tail(S(h, Y), AX(h, Y, 1), I(h, 8), TEX_TAIL_PREDICATE, &jo, &ji));
    OK(tex_vectorize(S(h, Y), ji));
    hand_end(h);
}

/* Layernorm, 1 column: the statistics inline-free at root, rows parallel. */
static void test_layernorm_one_column(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "layernorm_one_column", "cpu");
    tex_tensor *Y = ops_layernorm(&h->w, 9, 1, false);
    hand_schedule(h);
    OK(tex_parallel(S(h, h->w.mid[0]), AX(h, h->w.mid[0], 0)));
    OK(tex_parallel(S(h, Y), AX(h, Y, 0)));
    OK(tex_vectorize(S(h, Y), AX(h, Y, 1)));
    hand_end(h);
}

/* Transpose in 8x8 tiles read through a local cache of each input tile. */
static void test_transpose_cache_read(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "transpose_cache_read", "cpu");
    tex_tensor *B = ops_transpose(&h->w, 29, 19, false);
    hand_schedule(h);
    tex_tensor *AA = tex_cache_read(h->s, h->w.in[0], TEX_SCOPE_LOCAL, 1, &B);
    TT_CHECK(AA != NULL);
    tex_iter *jo, *io, *ji, *ii;
    OK(tex_tile(S(h, B), AX(h, B, 0), AX(h, B, 1), I(h, 8), I(h, 8), &jo, &io, &ji, &ii));
    if (AA)
        OK(tex_compute_at(S(h, AA), S(h, B), io));
    OK(tex_vectorize(S(h, B), ii));
    OK(tex_parallel(S(h, B), jo));
    hand_end(h);
}

/* Transpose, symbolic sizes, shifted-inwards tail on a vectorized axis. */
static void test_transpose_shift(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "transpose_shift", "cpu");
    tex_tensor *B = ops_transpose(&h->w, 13, 6, true);
    hand_schedule(h);
    tex_iter *o, *i;
    OK(tex_split_tail(S(h, B), AX(h, B, 1), I(h, 4), TEX_TAIL_SHIFT_INWARDS, &o, &i));
    OK(tex_vectorize(S(h, B), i));
    hand_end(h);
}

/* Max pooling with the window loops outermost and unrolled. */
static void test_maxpool_reorder(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "maxpool_reorder", "cpu");
    tex_tensor *P = ops_pool2d(&h->w, 1, 2, 11, 9, 3, 2, true, false);
    hand_schedule(h);
    tex_stage *st = S(h, P);
    tex_iter *ry = tex_op_reduce_axis(st, 0), *rx = tex_op_reduce_axis(st, 1);
    OK(tex_reorder(st, 6,
                   (tex_iter *[]){ry, tex_op_axis(st, 0), tex_op_axis(st, 1), rx,
                                  tex_op_axis(st, 2), tex_op_axis(st, 3)}));
    OK(tex_unroll(st, rx));
    OK(tex_vectorize(st, tex_op_axis(st, 3)));
    hand_end(h);
}

/* Average pooling over symbolic sizes: channels parallel, rows x cols fused. */
static void test_avgpool_fused(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "avgpool_fused", "cpu");
    tex_tensor *P = ops_pool2d(&h->w, 1, 3, 10, 7, 2, 2, false, true);
    hand_schedule(h);
    tex_iter *f, *o, *i;
    OK(tex_fuse(S(h, P), AX(h, P, 2), AX(h, P, 3), &f));
    OK(tex_split(S(h, P), f, I(h, 4), &o, &i));
    OK(tex_parallel(S(h, P), AX(h, P, 1)));
    OK(tex_unroll(S(h, P), i));
    hand_end(h);
}

/* The elementwise chain inlined, fused, split and vectorized, on 2 threads. */
static void test_elemwise_fused(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "elemwise_fused", "cpu");
    h->target = "cpu -threads=2";
    tex_tensor *Out = ops_elemwise(&h->w, 7, 61, false);
    hand_schedule(h);
    tex_iter *f, *o, *i;
    OK(tex_compute_inline(S(h, h->w.mid[0])));
    OK(tex_compute_inline(S(h, h->w.mid[1])));
    OK(tex_fuse(S(h, Out), AX(h, Out, 0), AX(h, Out, 1), &f));
    OK(tex_split(S(h, Out), f, I(h, 16), &o, &i));
    OK(tex_vectorize(S(h, Out), i));
    OK(tex_parallel(S(h, Out), o));
    hand_end(h);
}

/* Each tail strategy legal on the output's columns, T2 computed inside, T1
 * vectorized with a guarded tail; constant and symbolic sizes. */
static void test_elemwise_tails(void)
{
    static const tex_tail tails[4] = {TEX_TAIL_AUTO, TEX_TAIL_GUARD, TEX_TAIL_SHIFT_INWARDS,
                                      TEX_TAIL_PREDICATE};
    for (int k = 0; k < 4; k++) {
        for (int sym = 0; sym < 2; sym++) {
            hand hh, *h = &hh;
            hand_begin(h, "elemwise_tails", "cpu");
            tex_tensor *Out = ops_elemwise(&h->w, 5, 13, sym);
            hand_schedule(h);
            tex_tensor *T1 = h->w.mid[0];
            tex_iter *o, *i, *o1, *i1;
            OK(tex_split_tail(S(h, Out), AX(h, Out, 1), I(h, 4), tails[k], &o, &i));
            OK(tex_vectorize(S(h, Out), i));
            OK(tex_compute_at(S(h, h->w.mid[1]), S(h, Out), o));
            OK(tex_split_tail(S(h, T1), AX(h, T1, 1), I(h, 8), TEX_TAIL_GUARD, &o1, &i1));
            OK(tex_vectorize(S(h, T1), i1));
            hand_end(h);
        }
    }
}

/* Sum: rfactor of a split row, the partial sums vectorized, rows parallel. */
static void test_sum_rfactor(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "sum_rfactor", "cpu");
    tex_tensor *R = ops_reduce(&h->w, 0, false, false, 7, 53, 1, false);
    hand_schedule(h);
    tex_iter *ko, *ki;
    OK(tex_split(S(h, R), RAX(h, R, 0), I(h, 8), &ko, &ki));
    tex_tensor *RF = tex_rfactor(h->s, R, ki, 1);
    TT_CHECK(RF != NULL);
    if (RF) {
        OK(tex_vectorize(S(h, RF), AX(h, RF, 1)));
        OK(tex_parallel(S(h, R), AX(h, R, 0)));
    }
    hand_end(h);
}

/* Product over two axes, the inner reduce axis unrolled. */
static void test_prod_unrolled(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "prod_unrolled", "cpu");
    tex_tensor *R = ops_reduce(&h->w, 1, false, true, 3, 5, 7, false);
    hand_schedule(h);
    OK(tex_unroll(S(h, R), RAX(h, R, 1)));
    OK(tex_parallel(S(h, R), AX(h, R, 0)));
    hand_end(h);
}

/* Max with a where-condition: the reduce axis split (non-divisible), rows
 * vectorized innermost. */
static void test_max_where_reordered(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "max_where_reordered", "cpu");
    tex_tensor *R = ops_reduce(&h->w, 2, true, false, 17, 11, 1, false);
    hand_schedule(h);
    tex_iter *ko, *ki;
    OK(tex_split(S(h, R), RAX(h, R, 0), I(h, 4), &ko, &ki));
    OK(tex_reorder(S(h, R), 3, (tex_iter *[]){ko, ki, AX(h, R, 0)}));
    OK(tex_vectorize(S(h, R), AX(h, R, 0)));
    hand_end(h);
}

/* Min and sum-where over symbolic sizes (VAR parameters), rows parallel. */
static void test_min_sum_where_symbolic(void)
{
    for (int op = 0; op < 2; op++) {
        hand hh, *h = &hh;
        hand_begin(h, op ? "sum_where_symbolic" : "min_symbolic", "cpu");
        tex_tensor *R = ops_reduce(&h->w, op ? 0 : 3, op == 1, false, 13, 1, 1, true);
        h->w.var_params = true;
        hand_schedule(h);
        tex_iter *o, *i;
        OK(tex_split(S(h, R), AX(h, R, 0), I(h, 4), &o, &i));
        OK(tex_parallel(S(h, R), o));
        OK(tex_vectorize(S(h, R), i));
        hand_end(h);
    }
}

/* Sum, local write cache of the output computed per row block. */
static void test_sum_cache_write(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "sum_cache_write", "cpu");
    tex_tensor *R = ops_reduce(&h->w, 0, false, true, 11, 3, 5, false);
    hand_schedule(h);
    tex_tensor *RL = tex_cache_write(h->s, R, TEX_SCOPE_LOCAL);
    TT_CHECK(RL != NULL);
    tex_iter *o, *i;
    OK(tex_split(S(h, R), AX(h, R, 0), I(h, 4), &o, &i));
    if (RL)
        OK(tex_compute_at(S(h, RL), S(h, R), o));
    OK(tex_parallel(S(h, R), o));
    hand_end(h);
}

/* ------------------------------------------------------ random schedules */

#define MAX_T 12

/* The generator's state for one schedule. */
typedef struct {
    ops_wl *w;
    tex_schedule *s;
    uint64_t rng;
    ops_log log;
    bool broken; /* a primitive failed other than with TEX_EINVAL */
    char why[512];
} gen;

static long n_random, n_random_failed, n_applied, n_refused;

static int64_t rnd(gen *g, int64_t lo, int64_t hi)
{
    return ops_rand_range(&g->rng, lo, hi);
}

static bool chance(gen *g, int percent)
{
    return rnd(g, 0, 99) < percent;
}

/* Records a primitive's outcome: refusals are fine, other errors are not. */
static bool note(gen *g, int rc, const char *what)
{
    ops_logf(&g->log, "    %s -> %d\n", what, rc);
    if (rc == 0) {
        n_applied++;
        return true;
    }
    n_refused++;
    if (rc != TEX_EINVAL && !g->broken) {
        g->broken = true;
        snprintf(g->why, sizeof g->why, "%s returned %d: %s", what, rc, tex_errmsg(g->w->ctx));
    }
    tex_clear_error(g->w->ctx);
    return false;
}

static tex_iter *leaf(tex_stage *st, int i)
{
    return tex_stage_axis(st, i);
}

/* Splits a random leaf by a random factor with a random (legal-looking) tail. */
static void rs_split(gen *g, tex_stage *st)
{
    int n = tex_stage_naxes(st);
    tex_iter *iv = leaf(st, (int)rnd(g, 0, n - 1)), *o, *i;
    static const int64_t factors[] = {2, 3, 4, 8, 16};
    int64_t f = chance(g, 70) ? factors[rnd(g, 0, 4)] : rnd(g, 1, sg_extent_of(iv, 9) + 2);
    tex_tail tail = (tex_tail)rnd(g, 0, 4);
    /* SHIFT_INWARDS needs extent >= factor: refused at call (symbolic) or
     * lowering (attached stage, smaller inferred extent) time, by design */
    if (tail == TEX_TAIL_SHIFT_INWARDS &&
        (!iv->extent || !texi_expr_is_int_const(iv->extent, NULL) || sg_extent_of(iv, 9) < f ||
         st->attach != TEXI_ATTACH_ROOT))
        tail = TEX_TAIL_GUARD;
    if (tail == TEX_TAIL_ROUND_UP) /* legal only on clamped reads: hand-written tests */
        tail = TEX_TAIL_AUTO;
    char what[160];
    snprintf(what, sizeof what, "split_tail(%s, %s, %lld, tail %d)", tex_tensor_name(st->tensor),
             iv->name, (long long)f, (int)tail);
    note(g, tex_split_tail(st, iv, tex_int(g->w->ctx, f), tail, &o, &i), what);
}

static void rs_reorder(gen *g, tex_stage *st)
{
    tex_iter *order[16];
    int n = tex_stage_naxes(st);
    if (n < 2 || n > 16)
        return;
    for (int k = 0; k < n; k++)
        order[k] = leaf(st, k);
    for (int k = n - 1; k > 0; k--) {
        int j = (int)rnd(g, 0, k);
        tex_iter *t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    char what[512];
    int len = snprintf(what, sizeof what, "reorder(%s:", tex_tensor_name(st->tensor));
    for (int k = 0; k < n && len > 0 && (size_t)len < sizeof what; k++)
        len += snprintf(what + len, sizeof what - (size_t)len, " %s%s", order[k]->name,
                        k == n - 1 ? ")" : "");
    note(g, tex_reorder(st, n, order), what);
}

/* Parallel outermost, vectorize innermost, unroll a short leaf, maybe a fuse first. */
static void rs_annotate(gen *g, tex_stage *st)
{
    char what[160];
    tex_iter *f;
    const char *name = tex_tensor_name(st->tensor);
    if (tex_stage_naxes(st) >= 2 && chance(g, 25)) {
        snprintf(what, sizeof what, "fuse(%s, %s, %s)", name, leaf(st, 0)->name, leaf(st, 1)->name);
        note(g, tex_fuse(st, leaf(st, 0), leaf(st, 1), &f), what);
    }
    int n = tex_stage_naxes(st);
    if (n > 1 && chance(g, 50)) {
        snprintf(what, sizeof what, "parallel(%s, %s)", name, leaf(st, 0)->name);
        note(g, tex_parallel(st, leaf(st, 0)), what);
    }
    if (chance(g, 60)) { /* an innermost reduce axis: as a vector reduction */
        tex_iter *v = leaf(st, n - 1);
        bool reduce = v->kind == TEXI_ITER_REDUCE;
        snprintf(what, sizeof what, "vectorize%s(%s, %s)", reduce ? "_reduce" : "", name, v->name);
        note(g, reduce ? tex_vectorize_reduce(st, v) : tex_vectorize(st, v), what);
    }
    tex_iter *u = leaf(st, (int)rnd(g, 0, n - 1));
    if (chance(g, 35) && u->extent && texi_expr_is_int_const(u->extent, NULL) &&
        sg_extent_of(u, 9) <= 16) {
        snprintf(what, sizeof what, "unroll(%s, %s)", name, u->name);
        note(g, tex_unroll(st, u), what);
    }
}

/* A CPU-shaped schedule of one stage. */
static void rs_stage(gen *g, tex_tensor *t)
{
    tex_stage *st = tex_stage_of(g->s, t);
    if (!st || st->attach == TEXI_ATTACH_INLINE)
        return;
    int n_splits = (int)rnd(g, 0, 2);
    for (int k = 0; k < n_splits; k++)
        rs_split(g, st);
    if (chance(g, 40))
        rs_reorder(g, st);
    rs_annotate(g, st);
}

/* The only stage reading t, or NULL. */
static tex_stage *sole_consumer(gen *g, tex_tensor *t)
{
    int n = 0;
    tex_stage **cs = texi_schedule_consumers(g->s, t, &n);
    tex_clear_error(g->w->ctx);
    return cs && n == 1 ? cs[0] : NULL;
}

/* Root, inline, or at a random leaf of its sole consumer. */
static void rs_place(gen *g, tex_tensor *t)
{
    char what[160];
    tex_stage *st = tex_stage_of(g->s, t), *c = sole_consumer(g, t);
    int how = (int)rnd(g, 0, 2);
    if (how == 1) {
        snprintf(what, sizeof what, "compute_inline(%s)", tex_tensor_name(t));
        note(g, tex_compute_inline(st), what);
    } else if (how == 2 && c && c->attach != TEXI_ATTACH_INLINE && tex_stage_naxes(c) > 0) {
        tex_iter *iv = leaf(c, (int)rnd(g, 0, tex_stage_naxes(c) - 1));
        snprintf(what, sizeof what, "compute_at(%s, %s, %s)", tex_tensor_name(t),
                 tex_tensor_name(c->tensor), iv->name);
        note(g, tex_compute_at(st, c, iv), what);
    }
}

/* Maybe rfactor of the output's first reduce axis after a split; the new tensor or NULL. */
static tex_tensor *rs_rfactor(gen *g)
{
    tex_stage *st = tex_stage_of(g->s, g->w->out);
    tex_iter *r = tex_op_reduce_axis(st, 0), *o, *i;
    if (!r || !chance(g, 20))
        return NULL;
    int64_t f = rnd(g, 2, 8);
    char what[160];
    snprintf(what, sizeof what, "split(%s, %s, %lld); rfactor(inner, 0)",
             tex_tensor_name(g->w->out), r->name, (long long)f);
    if (!note(g, tex_split(st, r, tex_int(g->w->ctx, f), &o, &i), what))
        return NULL;
    tex_tensor *rf = tex_rfactor(g->s, g->w->out, i, 0);
    note(g, rf ? 0 : tex_errcode(g->w->ctx), "rfactor");
    return rf;
}

/* Maybe a local write cache of the output (at a random leaf of it, after the
 * output is scheduled); the cache tensor or NULL. */
static tex_tensor *rs_cache_write(gen *g)
{
    if (!chance(g, 20))
        return NULL;
    tex_tensor *c = tex_cache_write(g->s, g->w->out, TEX_SCOPE_LOCAL);
    note(g, c ? 0 : tex_errcode(g->w->ctx), "cache_write(out, local)");
    return c;
}

/* One random schedule of wl; true when it checks out. The stream depends on
 * the seed and the workload's name (FNV-1a), so workloads draw differently. */
static bool one_random(const sg_workload *wl, uint64_t seed, bool report)
{
    ops_wl w;
    ops_init(&w, tex_ctx_new(), wl->name);
    gen g = {.w = &w, .rng = sg_rng(seed, sg_name_hash(wl->name))};
    int variant = sg_build(wl, &w, &g.rng, seed);
    g.s = tex_schedule_new(w.ctx, 1, &w.out);
    ops_logf(&g.log, "  shape variant %d\n", variant);
    tex_tensor *cw = rs_cache_write(&g), *rf = cw ? NULL : rs_rfactor(&g);
    rs_stage(&g, w.out);
    if (cw) {
        tex_stage *os = tex_stage_of(g.s, w.out);
        tex_iter *iv = leaf(os, (int)rnd(&g, 0, tex_stage_naxes(os) - 1));
        note(&g, tex_compute_at(tex_stage_of(g.s, cw), os, iv), "compute_at(cache, out, leaf)");
        rs_stage(&g, cw);
    }
    if (rf)
        rs_stage(&g, rf);
    for (int k = w.n_mid - 1; k >= 0; k--) {
        rs_place(&g, w.mid[k]);
        rs_stage(&g, w.mid[k]);
    }
    const char *target = seed % 4 == 3 ? "cpu -threads=2" : "cpu";
    bool ok = !g.broken;
    if (!ok && report)
        ops_report(&w, seed, &g.log, NULL, g.why);
    if (ok)
        ok = ops_check_jit(&w, g.s, target, seed, &g.log, report) == 0;
    tex_ctx_free(w.ctx);
    return ok;
}

#define RANDOM_TEST(fn, nv, trials)                                                                \
    static void test_random_##fn(void)                                                             \
    {                                                                                              \
        static const sg_workload wl = {#fn, sg_##fn, nv, 1, trials};                               \
        sg_run(&wl, one_random, 2, &n_random, &n_random_failed);                                   \
    }

RANDOM_TEST(matmul, 4, 12)
RANDOM_TEST(batch_matmul, 3, 8)
RANDOM_TEST(conv2d, 3, 10)
RANDOM_TEST(softmax, 3, 10)
RANDOM_TEST(layernorm, 3, 10)
RANDOM_TEST(transpose, 3, 8)
RANDOM_TEST(maxpool, 3, 7)
RANDOM_TEST(avgpool, 3, 7)
RANDOM_TEST(elemwise, 3, 10)
RANDOM_TEST(sum, 4, 7)
RANDOM_TEST(prod, 4, 6)
RANDOM_TEST(max, 4, 6)
RANDOM_TEST(min, 4, 6)
RANDOM_TEST(sum_where, 4, 7)
RANDOM_TEST(max_where, 4, 6)

int main(void)
{
    if (!tt_private_cache(cache_dir, "test_cpu_schedules"))
        return 1;
    if (!tex_target_available("cpu")) {
        printf("SKIP cpu_schedules (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return 0;
    }
    TT_RUN(test_matmul_tiles);
    TT_RUN(test_matmul_cache_write);
    TT_RUN(test_matmul_symbolic);
    TT_RUN(test_matmul_gpu_style);
    TT_RUN(test_matmul_gpu_barrier);
    TT_RUN(test_batch_matmul_fused);
    TT_RUN(test_batch_matmul_nparts);
    TT_RUN(test_conv2d_inline);
    TT_RUN(test_conv2d_pad_at);
    TT_RUN(test_conv2d_pad_round_up);
    TT_RUN(test_softmax_rows);
    TT_RUN(test_softmax_rfactor);
    TT_RUN(test_layernorm_rows);
    TT_RUN(test_layernorm_one_column);
    TT_RUN(test_transpose_cache_read);
    TT_RUN(test_transpose_shift);
    TT_RUN(test_maxpool_reorder);
    TT_RUN(test_avgpool_fused);
    TT_RUN(test_elemwise_fused);
    TT_RUN(test_elemwise_tails);
    TT_RUN(test_sum_rfactor);
    TT_RUN(test_prod_unrolled);
    TT_RUN(test_max_where_reordered);
    TT_RUN(test_min_sum_where_symbolic);
    TT_RUN(test_sum_cache_write);
    TT_RUN(test_random_matmul);
    TT_RUN(test_random_batch_matmul);
    TT_RUN(test_random_conv2d);
    TT_RUN(test_random_softmax);
    TT_RUN(test_random_layernorm);
    TT_RUN(test_random_transpose);
    TT_RUN(test_random_maxpool);
    TT_RUN(test_random_avgpool);
    TT_RUN(test_random_elemwise);
    TT_RUN(test_random_sum);
    TT_RUN(test_random_prod);
    TT_RUN(test_random_max);
    TT_RUN(test_random_min);
    TT_RUN(test_random_sum_where);
    TT_RUN(test_random_max_where);
    printf("random schedules: %ld tried, %ld failed; primitives applied %ld, refused %ld\n",
           n_random, n_random_failed, n_applied, n_refused);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
