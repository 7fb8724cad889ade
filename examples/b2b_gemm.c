/* Back-to-back GEMM fused into one loop nest (CUTLASS's example 13 on the CPU):
 *   D0 = relu(alpha0 * A0 . B0),  D1 = relu(alpha1 * D0 . B1 + beta1 * C1)
 * D0 never reaches memory: each row tile of D1 first computes the same rows of
 * D0, all N0 columns, into a small local buffer, then reads them back from L1.
 * alpha0, alpha1 and beta1 are runtime scalars. Checked against the oracle. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <tex/tex.h>
#include <time.h>

enum { M = 2048, K0 = 576, N0 = 64, N1 = 128, MB = 6, BN = 16 };

/* max(x, 0) */
static tex_expr *relu(tex_ctx *ctx, tex_expr *x)
{
    return tex_max(x, tex_const(ctx, TEX_F32, 0));
}

/* out[m, n] = sum_k a[m, k] * b[k, n] */
static tex_tensor *matmul(tex_ctx *ctx, const char *name, tex_tensor *a, tex_tensor *b)
{
    tex_iter *m = tex_axis(ctx, "m", tex_tensor_dim(a, 0)),
             *n = tex_axis(ctx, "n", tex_tensor_dim(b, 1));
    tex_iter *k = tex_reduce_axis(ctx, "k", tex_tensor_dim(a, 1));
    tex_expr *ab = tex_mul(TEX_AT(a, tex_iv(m), tex_iv(k)), TEX_AT(b, tex_iv(k), tex_iv(n)));
    return tex_compute(ctx, name, 2, (tex_iter *[]){m, n}, tex_sum(ab, 1, &k));
}

/* The register tile of a GEMM stage computed at its consumer's tile: columns
 * by BN (vectorized), k unrolled by 4, rows unrolled. */
static int register_tile(tex_ctx *ctx, tex_stage *st)
{
    tex_iter *m = tex_op_axis(st, 0), *no, *ni, *ko, *ki;
    int rc = tex_split(st, tex_op_axis(st, 1), tex_int(ctx, BN), &no, &ni);
    rc = rc ? rc : tex_split(st, tex_op_reduce_axis(st, 0), tex_int(ctx, 4), &ko, &ki);
    rc = rc ? rc : tex_reorder(st, 5, (tex_iter *[]){no, ko, ki, m, ni});
    rc = rc ? rc : tex_unroll(st, ki);
    rc = rc ? rc : tex_unroll(st, m);
    return rc ? rc : tex_vectorize(st, ni);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

int main(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *A0 = tex_placeholder_c(ctx, "A0", TEX_F32, 2, (int64_t[]){M, K0});
    tex_tensor *B0 = tex_placeholder_c(ctx, "B0", TEX_F32, 2, (int64_t[]){K0, N0});
    tex_tensor *B1 = tex_placeholder_c(ctx, "B1", TEX_F32, 2, (int64_t[]){N0, N1});
    tex_tensor *C1 = tex_placeholder_c(ctx, "C1", TEX_F32, 2, (int64_t[]){M, N1});
    tex_expr *alpha0 = tex_var(ctx, "alpha0", TEX_F32), *alpha1 = tex_var(ctx, "alpha1", TEX_F32);
    tex_expr *beta1 = tex_var(ctx, "beta1", TEX_F32);
    tex_tensor *P0 = matmul(ctx, "P0", A0, B0);
    tex_iter *i = tex_axis(ctx, "m", tex_int(ctx, M)), *j = tex_axis(ctx, "n0", tex_int(ctx, N0));
    tex_tensor *D0 = tex_compute(ctx, "D0", 2, (tex_iter *[]){i, j},
                                 relu(ctx, tex_mul(alpha0, TEX_AT(P0, tex_iv(i), tex_iv(j)))));
    tex_tensor *P1 = matmul(ctx, "P1", D0, B1);
    i = tex_axis(ctx, "m", tex_int(ctx, M)), j = tex_axis(ctx, "n1", tex_int(ctx, N1));
    tex_expr *lin = tex_add(tex_mul(alpha1, TEX_AT(P1, tex_iv(i), tex_iv(j))),
                            tex_mul(beta1, TEX_AT(C1, tex_iv(i), tex_iv(j))));
    tex_tensor *D1 = tex_compute(ctx, "D1", 2, (tex_iter *[]){i, j}, relu(ctx, lin));

    /* D1 in MB x BN tiles, parallel over row tiles. At each row tile: D0's MB
     * rows (all N0 columns, local), each BN-column slice from P0's registers;
     * at each column tile: P1's MB x BN accumulators (local, registers). */
    tex_schedule *s = tex_schedule_new(ctx, 1, &D1);
    tex_stage *s0 = tex_stage_of(s, P0), *sd = tex_stage_of(s, D0);
    tex_stage *s1 = tex_stage_of(s, P1), *so = tex_stage_of(s, D1);
    tex_iter *mo, *no, *mi, *ni, *dno, *dni;
    int rc = tex_tile(so, i, j, tex_int(ctx, MB), tex_int(ctx, BN), &mo, &no, &mi, &ni);
    rc = rc ? rc : tex_parallel(so, mo);
    rc = rc ? rc : tex_vectorize(so, ni);
    rc = rc ? rc : tex_compute_at(s1, so, no);
    rc = rc ? rc : tex_compute_at(sd, so, mo);
    rc = rc ? rc : tex_split(sd, tex_op_axis(sd, 1), tex_int(ctx, BN), &dno, &dni);
    rc = rc ? rc : tex_reorder(sd, 3, (tex_iter *[]){dno, tex_op_axis(sd, 0), dni});
    rc = rc ? rc : tex_vectorize(sd, dni);
    rc = rc ? rc : tex_compute_at(s0, sd, dno);
    rc = rc ? rc : tex_set_scope(s0, TEX_SCOPE_LOCAL);
    rc = rc ? rc : tex_set_scope(sd, TEX_SCOPE_LOCAL);
    rc = rc ? rc : tex_set_scope(s1, TEX_SCOPE_LOCAL);
    rc = rc ? rc : register_tile(ctx, s0);
    rc = rc ? rc : register_tile(ctx, s1);
    tex_param params[8] = {{.kind = TEX_ARG_TENSOR, .t = A0},  {.kind = TEX_ARG_TENSOR, .t = B0},
                           {.kind = TEX_ARG_TENSOR, .t = B1},  {.kind = TEX_ARG_TENSOR, .t = C1},
                           {.kind = TEX_ARG_TENSOR, .t = D1},  {.kind = TEX_ARG_VAR, .v = alpha0},
                           {.kind = TEX_ARG_VAR, .v = alpha1}, {.kind = TEX_ARG_VAR, .v = beta1}};
    tex_func *f = rc ? NULL : tex_lower(s, "b2b_gemm", 8, params);
    tex_kernel *kern = f ? tex_build(f, "cpu") : NULL;
    if (!kern) {
        fprintf(stderr, "tex: %s\n", tex_errmsg(ctx));
        return 1;
    }

    DLDevice cpu = {kDLCPU, 0};
    const int64_t shapes[6][2] = {{M, K0}, {K0, N0}, {N0, N1}, {M, N1}, {M, N1}, {M, N1}};
    DLTensor *arr[6]; /* A0, B0, B1, C1, D1, the oracle's D1 */
    for (int a = 0; a < 6; a++)
        arr[a] = tex_array_new(2, shapes[a], TEX_F32, cpu);
    for (int a = 0; a < 4; a++)
        for (int64_t x = 0; x < shapes[a][0] * shapes[a][1]; x++)
            ((float *)arr[a]->data)[x] = (float)((x * 7 + a) % 13) / 13.0f - 0.4f;
    tex_value vals[8];
    for (int a = 0; a < 5; a++)
        vals[a] = (tex_value){.kind = TEX_VAL_TENSOR, .t = arr[a]};
    vals[5] = (tex_value){.kind = TEX_VAL_F64, .f = 0.5};
    vals[6] = (tex_value){.kind = TEX_VAL_F64, .f = 0.25};
    vals[7] = (tex_value){.kind = TEX_VAL_F64, .f = -0.75};
    double t0 = now_ms();
    rc = tex_kernel_call(kern, 8, vals);
    double ms = now_ms() - t0;
    vals[4].t = arr[5];
    if (rc == 0)
        rc = tex_eval_reference_ex(ctx, 8, params, vals);
    float err = 0, *got = arr[4]->data, *want = arr[5]->data;
    for (int64_t x = 0; rc == 0 && x < (int64_t)M * N1; x++)
        err = fmaxf(err, fabsf(got[x] - want[x]) / fmaxf(1.0f, fabsf(want[x])));
    printf("b2b_gemm %dx%dx%dx%d fused: %s in %.2f ms, max relative error vs the reference %.1e\n",
           M, K0, N0, N1, rc ? tex_kernel_errmsg(kern) : "ran", ms, (double)err);
    for (int a = 0; a < 6; a++)
        tex_array_free(arr[a]);
    tex_kernel_free(kern);
    tex_ctx_free(ctx);
    return rc == 0 && err < 1e-4f ? 0 : 1;
}
