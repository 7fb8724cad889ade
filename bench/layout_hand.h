/*
 * layout_hand.h: the anchors of bench/layout, in their own object
 * (bench/layout_hand.c, which the Makefile compiles with -O3 -march=native
 * -fopenmp, as such a kernel is built in practice). Each runs on threads
 * OpenMP threads, one parallel loop over rows (tiles for the transpose).
 */
#ifndef TEX_BENCH_LAYOUT_HAND_H
#define TEX_BENCH_LAYOUT_HAND_H

#include <stdint.h>

/* y [rows, na + nb] = a [rows, na] beside b [rows, nb]: two memcpy a row. */
void concat_hand(const float *a, const float *b, float *y, int64_t rows, int64_t na, int64_t nb,
                 int threads);

/* y [planes, h + 2p, w + 2p] = x [planes, h, w] with p zeros around each
 * plane: a row of zeros or its ends zeroed and its middle copied. */
void pad_hand(const float *x, float *y, int64_t planes, int64_t h, int64_t w, int64_t p,
              int threads);

/* y [cols, rows] = the transpose of x [rows, cols], in 32 x 32 tiles. */
void transpose_hand(const float *x, float *y, int64_t rows, int64_t cols, int threads);

#endif
