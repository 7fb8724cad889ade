/*
 * bench/gpu_on_cpu_hand: the hand-written anchors of bench/gpu_on_cpu (see
 * gpu_on_cpu_hand.h). Plain loops with OpenMP pragmas and no intrinsics,
 * compiled alone with -O3 -march=native -fopenmp (no -ffast-math: the same
 * IEEE rules as tex's kernels).
 */
#include "gpu_on_cpu_hand.h"

#include <math.h>
#include <string.h>

enum { GEMM_TILE = 64, GEMM_KSTEP = 8, TR_TILE = 32 };

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

void hand_gemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k,
               int threads)
{
#pragma omp parallel for collapse(2) num_threads(threads) schedule(static)
    for (int64_t i0 = 0; i0 < m; i0 += GEMM_TILE)
        for (int64_t j0 = 0; j0 < n; j0 += GEMM_TILE) {
            float acc[GEMM_TILE][GEMM_TILE];
            int64_t ni = min64(GEMM_TILE, m - i0), nj = min64(GEMM_TILE, n - j0);
            memset(acc, 0, sizeof acc);
            for (int64_t k0 = 0; k0 < k; k0 += GEMM_KSTEP)
                for (int64_t i = 0; i < ni; i++)
                    for (int64_t kk = k0; kk < min64(k, k0 + GEMM_KSTEP); kk++) {
                        float av = a[(i0 + i) * k + kk];
                        for (int64_t j = 0; j < nj; j++)
                            acc[i][j] += av * b[kk * n + j0 + j];
                    }
            for (int64_t i = 0; i < ni; i++)
                for (int64_t j = 0; j < nj; j++)
                    c[(i0 + i) * n + j0 + j] = acc[i][j];
        }
}

void hand_transpose(const float *a, float *b, int64_t m, int64_t n, int threads)
{
#pragma omp parallel for collapse(2) num_threads(threads) schedule(static)
    for (int64_t i0 = 0; i0 < m; i0 += TR_TILE)
        for (int64_t j0 = 0; j0 < n; j0 += TR_TILE)
            for (int64_t j = j0; j < min64(n, j0 + TR_TILE); j++)
                for (int64_t i = i0; i < min64(m, i0 + TR_TILE); i++)
                    b[j * m + i] = a[i * n + j];
}

void hand_softmax(const float *x, float *y, int64_t rows, int64_t cols, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < rows; i++) {
        const float *xr = x + i * cols;
        float mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < cols; j++)
            mx = xr[j] > mx ? xr[j] : mx;
        for (int64_t j = 0; j < cols; j++)
            sum += expf(xr[j] - mx);
        for (int64_t j = 0; j < cols; j++)
            y[i * cols + j] = expf(xr[j] - mx) / sum;
    }
}

void hand_stencil(const float *p, const float *t, float *o, int64_t m, int64_t n, int threads)
{
    int64_t w = n + 2;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            const float *c = t + (i + 1) * w + j + 1;
            float mid = c[0];
            float lap = c[-w] + c[w] + (c[-1] + c[1]) - mid * 4.0f;
            o[i * n + j] = mid + lap * 0.125f + p[i * n + j] * 0.25f;
        }
}
