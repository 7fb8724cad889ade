/*
 * b2b_conv.h: back-to-back convolution, header-only; bench/b2b times it and
 * tests/unit/test_b2b checks it. NCHW, f32, one image:
 *
 *   D0 = relu(conv3x3(X, W0), padding 1)    X [1, C, H, W], W0 [F0, C, 3, 3]
 *   D1 = relu(conv1x1(D0, W1))              W1 [F1, F0, 1, 1]
 *
 * built with tex_op_conv2d and tex_op_relu (Y0, D0, Y1, D1; the padding is
 * Y0's stage Y0_pad, computed at root). The 1x1 convolution without padding
 * is a GEMM over the pixels, so the pair fuses as back-to-back GEMMs do
 * (b2b_gemm.h): one output row of D1 needs the same row of D0 in every
 * channel F0, and nothing else.
 *
 * Two schedules, each conv's accumulators a local tile of cb channels x 8
 * pixels (one AVX2 vector; the channels unrolled, the reduction outermost):
 *   fused    D1's rows parallel; D0 computed at D1's row (local: F0 x W, a
 *            row of every channel, never written to memory) with Y0 at its
 *            channel x pixel tiles, Y1 at D1's.
 *   unfused  D0 at root (written to memory and read back by the 1x1 conv).
 */
#ifndef TEX_BENCH_B2B_CONV_H
#define TEX_BENCH_B2B_CONV_H

#include <stdint.h>
#include <tex/tex.h>

typedef struct {
    tex_tensor *x, *w0, *w1;       /* inputs */
    tex_tensor *y0, *d0, *y1, *d1; /* convolutions, their relus; D1 is the output */
} b2b_conv;

/* The computes of the top comment for c input channels of h x w pixels, f0
 * and f1 filters. */
static inline void b2b_conv_define(tex_ctx *ctx, int64_t c, int64_t h, int64_t w, int64_t f0,
                                   int64_t f1, b2b_conv *g)
{
    g->x = tex_placeholder_c(ctx, "X", TEX_F32, 4, (int64_t[]){1, c, h, w});
    g->w0 = tex_placeholder_c(ctx, "W0", TEX_F32, 4, (int64_t[]){f0, c, 3, 3});
    g->w1 = tex_placeholder_c(ctx, "W1", TEX_F32, 4, (int64_t[]){f1, f0, 1, 1});
    g->y0 = tex_op_conv2d(ctx, "Y0", g->x, g->w0, NULL, (int64_t[]){1, 1}, NULL, 1,
                          TEX_LAYOUT_NCHW);
    g->d0 = tex_op_relu(ctx, "D0", g->y0);
    g->y1 = tex_op_conv2d(ctx, "Y1", g->d0, g->w1, NULL, NULL, NULL, 1, TEX_LAYOUT_NCHW);
    g->d1 = tex_op_relu(ctx, "D1", g->y1);
}

/* Stage st ([1, F, H, W] data-parallel) split into cb channels x 8 pixels
 * tiles, loop order (n, y, f.outer, x.outer, f.inner, x.inner), x.inner
 * vectorized; *fo, *xo the tile loops, *y the row loop. */
static inline int b2b_conv_tiles(tex_ctx *ctx, tex_stage *st, int cb, tex_iter **y,
                                 tex_iter **fo, tex_iter **xo)
{
    tex_iter *fi, *xi;
    *y = tex_op_axis(st, 2);
    int rc = tex_split(st, tex_op_axis(st, 1), tex_int(ctx, cb), fo, &fi);
    rc = rc ? rc : tex_split(st, tex_op_axis(st, 3), tex_int(ctx, 8), xo, &xi);
    rc = rc ? rc : tex_reorder(st, 6, (tex_iter *[]){tex_op_axis(st, 0), *y, *fo, *xo, fi, xi});
    return rc ? rc : tex_vectorize(st, xi);
}

/* Convolution stage cv computed at loop `at` of stage st, local, its tile's
 * loops (reductions, n, f, y, x) with f unrolled and x vectorized. */
static inline int b2b_conv_acc(tex_stage *cv, tex_stage *st, tex_iter *at)
{
    tex_iter *order[7]; /* the three reductions (channel, ry, rx), then n, f, y, x */
    for (int i = 0; i < 3; i++)
        order[i] = tex_op_reduce_axis(cv, i);
    for (int i = 0; i < 4; i++)
        order[3 + i] = tex_op_axis(cv, i);
    int rc = tex_compute_at(cv, st, at);
    rc = rc ? rc : tex_set_scope(cv, TEX_SCOPE_LOCAL);
    rc = rc ? rc : tex_reorder(cv, 7, order);
    rc = rc ? rc : tex_unroll(cv, tex_op_axis(cv, 1));
    return rc ? rc : tex_vectorize(cv, tex_op_axis(cv, 3));
}

/* The fused (fused != 0) or unfused schedule of the top comment, tiles of
 * cb channels; 0 or an error code. */
static inline int b2b_conv_schedule(tex_ctx *ctx, tex_schedule *s, const b2b_conv *g, int cb,
                                    int fused)
{
    tex_stage *sd0 = tex_stage_of(s, g->d0), *sd1 = tex_stage_of(s, g->d1);
    tex_iter *y0, *fo0, *xo0, *y1, *fo1, *xo1;
    int rc = b2b_conv_tiles(ctx, sd1, cb, &y1, &fo1, &xo1);
    rc = rc ? rc : tex_parallel(sd1, y1);
    rc = rc ? rc : b2b_conv_acc(tex_stage_of(s, g->y1), sd1, xo1);
    rc = rc ? rc : b2b_conv_tiles(ctx, sd0, cb, &y0, &fo0, &xo0);
    rc = rc ? rc : b2b_conv_acc(tex_stage_of(s, g->y0), sd0, xo0);
    if (rc == 0 && fused) {
        rc = tex_compute_at(sd0, sd1, y1);
        rc = rc ? rc : tex_set_scope(sd0, TEX_SCOPE_LOCAL);
    } else if (rc == 0) {
        rc = tex_parallel(sd0, y0);
    }
    return rc;
}

#endif
