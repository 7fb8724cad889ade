/*
 * spmm_hand.h: the hand-written anchors of bench/spmm, in their own object
 * (bench/spmm_hand.c, compiled with -O3 -march=native -fopenmp, as such
 * kernels are built in practice).
 */
#ifndef TEX_BENCH_SPMM_HAND_H
#define TEX_BENCH_SPMM_HAND_H

#include <stdint.h>

/* y[m, f] = A x for CSR A (indptr, indices, values) and x [n, f], rows in
 * parallel on `threads` OpenMP threads. */
void spmm_hand(const int32_t *indptr, const int32_t *indices, const float *values, const float *x,
               float *y, int64_t m, int64_t f, int threads);

/* o[q] = dot(x[row(q)], y[col(q)]) over f features at each non-zero q of
 * CSR A, rows in parallel. */
void sddmm_hand(const int32_t *indptr, const int32_t *indices, const float *x, const float *y,
                float *o, int64_t m, int64_t f, int threads);

#endif
