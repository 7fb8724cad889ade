/*
 * bench/spmm_hand: the hand-written OpenMP CSR kernels bench/spmm measures
 * tex against (spmm_hand.h). Plain loops over rows with the feature loop
 * innermost, which the compiler vectorizes: what a careful C programmer
 * writes.
 */
#include "spmm_hand.h"

void spmm_hand(const int32_t *indptr, const int32_t *indices, const float *values, const float *x,
               float *y, int64_t m, int64_t f, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(dynamic, 64)
    for (int64_t i = 0; i < m; i++) {
        float *yr = y + i * f;
        for (int64_t k = 0; k < f; k++)
            yr[k] = 0;
        for (int32_t q = indptr[i]; q < indptr[i + 1]; q++) {
            const float *xr = x + (int64_t)indices[q] * f;
            float a = values[q];
            for (int64_t k = 0; k < f; k++)
                yr[k] += a * xr[k];
        }
    }
}

void sddmm_hand(const int32_t *indptr, const int32_t *indices, const float *x, const float *y,
                float *o, int64_t m, int64_t f, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(dynamic, 64)
    for (int64_t i = 0; i < m; i++) {
        const float *xr = x + i * f;
        for (int32_t q = indptr[i]; q < indptr[i + 1]; q++) {
            const float *yr = y + (int64_t)indices[q] * f;
            float acc = 0;
            for (int64_t k = 0; k < f; k++)
                acc += xr[k] * yr[k];
            o[q] = acc;
        }
    }
}
