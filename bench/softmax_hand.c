/*
 * bench/softmax_hand: the hand-written anchors of bench/softmax (see
 * softmax_hand.h). This file alone is compiled with -ffast-math (the
 * Makefile's rule for its object), so that the exponentials use the
 * vectorized expf of glibc's libmvec and the reductions are vectorized; the
 * object is linked without it, so the flush-to-zero start-up code of
 * -ffast-math stays out of the benchmark process. Plain loops, no
 * intrinsics: what a careful C programmer writes.
 */
#include "softmax_hand.h"

#include <math.h>
#include <string.h>

void softmax_hand(const float *x, float *y, int64_t rows, int64_t cols, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < rows; i++) {
        const float *xr = x + i * cols;
        float *yr = y + i * cols;
        float mx = xr[0], sum = 0;
        for (int64_t j = 1; j < cols; j++)
            mx = xr[j] > mx ? xr[j] : mx;
        for (int64_t j = 0; j < cols; j++) {
            yr[j] = expf(xr[j] - mx);
            sum += yr[j];
        }
        float inv = 1.0f / sum;
        for (int64_t j = 0; j < cols; j++)
            yr[j] *= inv;
    }
}

void softmax_copy(const float *x, float *y, int64_t rows, int64_t cols, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < rows; i++)
        memcpy(y + i * cols, x + i * cols, (size_t)cols * sizeof(float));
}
