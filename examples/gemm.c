/* C = A·B: what (a compute), how (a schedule), then JIT-compiled and checked. */
#include <math.h>
#include <stdio.h>
#include <tex/tex.h>

int main(void)
{
    enum { M = 200, N = 130, K = 70 };
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){M, K});
    tex_tensor *B = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){K, N});
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, M)), *j = tex_axis(ctx, "j", tex_int(ctx, N));
    tex_iter *k = tex_reduce_axis(ctx, "k", tex_int(ctx, K));
    tex_expr *ab = tex_mul(TEX_AT(A, tex_iv(i), tex_iv(k)), TEX_AT(B, tex_iv(k), tex_iv(j)));
    tex_tensor *C = tex_compute(ctx, "C", 2, (tex_iter *[]){i, j}, tex_sum(ab, 1, &k));

    /* 32x32 tiles, k innermost but one, 16-wide vectors, parallel rows of tiles. */
    tex_schedule *s = tex_schedule_new(ctx, 1, &C);
    tex_stage *st = tex_stage_of(s, C);
    tex_iter *io, *jo, *ii, *ji;
    int rc = tex_tile(st, i, j, tex_int(ctx, 32), tex_int(ctx, 32), &io, &jo, &ii, &ji);
    tex_iter *jv, *jl;
    rc = rc ? rc : tex_split(st, ji, tex_int(ctx, 16), &jl, &jv);
    rc = rc ? rc : tex_reorder(st, 6, (tex_iter *[]){io, jo, ii, k, jl, jv});
    rc = rc ? rc : tex_vectorize(st, jv);
    rc = rc ? rc : tex_parallel(st, io);
    tex_func *f = rc ? NULL : tex_lower_tensors(s, "gemm", 3, (tex_tensor *[]){A, B, C});
    tex_kernel *kern = f ? tex_build(f, "cpu") : NULL;
    if (!kern) {
        fprintf(stderr, "tex: %s\n", tex_errmsg(ctx));
        return 1;
    }

    DLDevice cpu = {kDLCPU, 0};
    DLTensor *a = tex_array_new(2, (int64_t[]){M, K}, TEX_F32, cpu);
    DLTensor *b = tex_array_new(2, (int64_t[]){K, N}, TEX_F32, cpu);
    DLTensor *c = tex_array_new(2, (int64_t[]){M, N}, TEX_F32, cpu);
    DLTensor *want = tex_array_new(2, (int64_t[]){M, N}, TEX_F32, cpu);
    float *pa = a->data, *pb = b->data, *pc = c->data, *pw = want->data, err = 0;
    for (int x = 0; x < M * K; x++)
        pa[x] = (float)(x % 7) - 3.0f;
    for (int x = 0; x < K * N; x++)
        pb[x] = (float)(x % 5) * 0.5f;
    rc = tex_kernel_call_tensors(kern, 3, (DLTensor *[]){a, b, c});
    if (rc == 0)
        rc = tex_eval_reference(ctx, 3, (tex_tensor *[]){A, B, C}, (DLTensor *[]){a, b, want});
    for (int x = 0; rc == 0 && x < M * N; x++)
        err = fmaxf(err, fabsf(pc[x] - pw[x]) / fmaxf(1.0f, fabsf(pw[x])));
    printf("gemm %dx%dx%d: %s, max relative error vs the reference %.1e\n", M, N, K,
           rc ? tex_kernel_errmsg(kern) : "ran", (double)err);
    tex_array_free(a), tex_array_free(b), tex_array_free(c), tex_array_free(want);
    tex_kernel_free(kern);
    tex_ctx_free(ctx);
    return rc == 0 && err < 1e-4f ? 0 : 1;
}
