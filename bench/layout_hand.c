/* The anchors of bench/layout (layout_hand.h). */
#include "layout_hand.h"

#include <string.h>

void concat_hand(const float *a, const float *b, float *y, int64_t rows, int64_t na, int64_t nb,
                 int threads)
{
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < rows; i++) {
        memcpy(y + i * (na + nb), a + i * na, sizeof(float) * (size_t)na);
        memcpy(y + i * (na + nb) + na, b + i * nb, sizeof(float) * (size_t)nb);
    }
}

void pad_hand(const float *x, float *y, int64_t planes, int64_t h, int64_t w, int64_t p,
              int threads)
{
    int64_t ho = h + 2 * p, wo = w + 2 * p;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < planes * ho; r++) {
        int64_t c = r / ho, i = r % ho - p;
        float *yr = y + r * wo;
        if (i < 0 || i >= h) {
            memset(yr, 0, sizeof(float) * (size_t)wo);
            continue;
        }
        memset(yr, 0, sizeof(float) * (size_t)p);
        memcpy(yr + p, x + (c * h + i) * w, sizeof(float) * (size_t)w);
        memset(yr + p + w, 0, sizeof(float) * (size_t)p);
    }
}

void transpose_hand(const float *x, float *y, int64_t rows, int64_t cols, int threads)
{
    enum { T = 32 };
#pragma omp parallel for num_threads(threads) schedule(static) collapse(2)
    for (int64_t i0 = 0; i0 < rows; i0 += T)
        for (int64_t j0 = 0; j0 < cols; j0 += T)
            for (int64_t j = j0; j < j0 + T && j < cols; j++)
                for (int64_t i = i0; i < i0 + T && i < rows; i++)
                    y[j * rows + i] = x[i * cols + j];
}
