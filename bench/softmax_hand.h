/*
 * softmax_hand.h: the anchors of bench/softmax, in their own object
 * (bench/softmax_hand.c, which the Makefile compiles with -O3 -march=native
 * -ffast-math -fopenmp, as such a kernel is built in practice).
 */
#ifndef TEX_BENCH_SOFTMAX_HAND_H
#define TEX_BENCH_SOFTMAX_HAND_H

#include <stdint.h>

/* y = softmax of each row of the rows x cols matrix x (row-major), on
 * threads OpenMP threads: one parallel loop over rows, each row's max, its
 * exponentials (into y) and their sum, then y scaled by 1 / sum. */
void softmax_hand(const float *x, float *y, int64_t rows, int64_t cols, int threads);

/* y = x, row by row on threads OpenMP threads in the same static split as
 * softmax_hand: the same bytes read and written, no arithmetic. */
void softmax_copy(const float *x, float *y, int64_t rows, int64_t cols, int threads);

#endif
