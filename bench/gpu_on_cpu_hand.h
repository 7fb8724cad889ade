/*
 * gpu_on_cpu_hand.h: the hand-written OpenMP anchors of bench/gpu_on_cpu,
 * in their own object (bench/gpu_on_cpu_hand.c, which the Makefile
 * compiles with -O3 -march=native -fopenmp). Each runs the algorithm of
 * the GPU schedule it is compared with (tests/support/gpu_cases.h) the way
 * a C programmer writes it for the CPU; f32, row-major, `threads` OpenMP
 * threads.
 */
#ifndef TEX_BENCH_GPU_ON_CPU_HAND_H
#define TEX_BENCH_GPU_ON_CPU_HAND_H

#include <stdint.h>

/* C (m x n) = A (m x k) B (k x n): 64x64 tiles of C in parallel, each
 * accumulated in a local tile over k in steps of 8. */
void hand_gemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k,
               int threads);

/* B (n x m) = A (m x n) transposed, by 32x32 tiles in parallel. */
void hand_transpose(const float *a, float *b, int64_t m, int64_t n, int threads);

/* y = softmax of each row of x (rows x cols): rows in parallel, each row's
 * max, the sum of its exponentials, then y = exp(x - max) / sum. */
void hand_softmax(const float *x, float *y, int64_t rows, int64_t cols, int threads);

/* o (m x n) = the hotspot step of gpu_cases.h's stencil over t ((m+2) x
 * (n+2), a one-cell halo) and p (m x n): rows in parallel. */
void hand_stencil(const float *p, const float *t, float *o, int64_t m, int64_t n, int threads);

#endif
