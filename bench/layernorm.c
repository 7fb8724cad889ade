/*
 * bench/layernorm: f32 layer normalization of the rows of a 4096x1024
 * matrix with per-column gamma and beta, on 2 and 1 threads, built with the
 * public API only and scheduled by tex_auto_schedule (bench/rowwise.h):
 *   S[i]  = sum_k X[i, k]              Mu[i] = S[i] / COLS
 *   Q[i]  = sum_k (X[i, k] - Mu[i])^2  Rs[i] = rsqrt(Q[i] / COLS + eps)
 *   Y[i, j] = (X[i, j] - Mu[i]) * Rs[i] * G[j] + B[j]
 * The automatic scheduler makes this one parallel loop over rows, the two
 * reductions and the per-row statistics computed in it (three passes over
 * a row that stays in L1). Lines, each interleaved with tex:
 *   anchor=bandwidth  a parallel copy of the matrix (the memory bound;
 *                     speedup = bound / tex, at most about 1);
 *   anchor=unfused    the same computes with every intermediate a kernel
 *                     of its own.
 * The result is checked against a plain C reference in double precision
 * (relative error <= 1e-5) before anything is timed.
 *
 * usage: layernorm           the benchmark
 *        layernorm --source  prints the C that tex generates (2 threads)
 */
#include "rowwise.h"

#include <math.h>

enum { ROWS = 4096, COLS = 1024 };
#define EPS 1e-5

/* The computes (top comment): in = {X, G, B}, mid = {S, Mu, Q, Rs}, *out = Y. */
static int layernorm_computes(tex_ctx *c, int64_t nrows, int64_t ncols, tex_tensor **in,
                              tex_tensor **mid, tex_tensor **out)
{
    tex_expr *rows = tex_int(c, nrows), *cols = tex_int(c, ncols);
    tex_expr *n = tex_const(c, TEX_F32, (double)ncols);
    tex_tensor *X = tex_placeholder_c(c, "X", TEX_F32, 2, (int64_t[]){nrows, ncols});
    tex_tensor *G = tex_placeholder_c(c, "G", TEX_F32, 1, &ncols);
    tex_tensor *B = tex_placeholder_c(c, "B", TEX_F32, 1, &ncols);
    tex_iter *i1 = tex_axis(c, "i", rows), *k1 = tex_reduce_axis(c, "k", cols);
    tex_tensor *S = tex_compute(c, "S", 1, &i1, tex_sum(TEX_AT(X, tex_iv(i1), tex_iv(k1)), 1, &k1));
    tex_iter *i2 = tex_axis(c, "i", rows);
    tex_tensor *Mu = tex_compute(c, "Mu", 1, &i2, tex_div(TEX_AT(S, tex_iv(i2)), n));
    tex_iter *i3 = tex_axis(c, "i", rows), *k3 = tex_reduce_axis(c, "k", cols);
    tex_expr *d = tex_sub(TEX_AT(X, tex_iv(i3), tex_iv(k3)), TEX_AT(Mu, tex_iv(i3)));
    tex_tensor *Q = tex_compute(c, "Q", 1, &i3, tex_sum(tex_mul(d, d), 1, &k3));
    tex_iter *i4 = tex_axis(c, "i", rows);
    tex_tensor *Rs = tex_compute(
        c, "Rs", 1, &i4,
        tex_rsqrt(tex_add(tex_div(TEX_AT(Q, tex_iv(i4)), n), tex_const(c, TEX_F32, EPS))));
    tex_iter *i5 = tex_axis(c, "i", rows), *j5 = tex_axis(c, "j", cols);
    tex_expr *xn = tex_mul(tex_sub(TEX_AT(X, tex_iv(i5), tex_iv(j5)), TEX_AT(Mu, tex_iv(i5))),
                           TEX_AT(Rs, tex_iv(i5)));
    *out = tex_compute(c, "Y", 2, (tex_iter *[]){i5, j5},
                       tex_add(tex_mul(xn, TEX_AT(G, tex_iv(j5))), TEX_AT(B, tex_iv(j5))));
    in[0] = X;
    in[1] = G;
    in[2] = B;
    mid[0] = S;
    mid[1] = Mu;
    mid[2] = Q;
    mid[3] = Rs;
    return *out ? 0 : -1;
}

/* The plain C reference, row by row in double precision. */
static void layernorm_reference(int64_t rows, int64_t cols, float *const in[], float *want)
{
    const float *x = in[0], *g = in[1], *b = in[2];
    for (int64_t i = 0; i < rows; i++) {
        const float *xr = x + i * cols;
        double mean = 0, var = 0;
        for (int64_t j = 0; j < cols; j++)
            mean += xr[j];
        mean /= (double)cols;
        for (int64_t j = 0; j < cols; j++)
            var += (xr[j] - mean) * (xr[j] - mean);
        double rs = 1 / sqrt(var / (double)cols + EPS);
        for (int64_t j = 0; j < cols; j++)
            want[i * cols + j] = (float)((xr[j] - mean) * rs * g[j] + b[j]);
    }
}

static const rw_spec spec = {"layernorm",
                             ROWS,
                             COLS,
                             3,
                             4,
                             {RW_MATRIX, RW_COL, RW_COL},
                             {RW_ROW, RW_ROW, RW_ROW, RW_ROW},
                             layernorm_computes,
                             layernorm_reference};

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--source") == 0)
        return rw_print_source(&spec, 2);
    rw_run_case(&spec, 2);
    rw_run_case(&spec, 1);
    return 0;
}
