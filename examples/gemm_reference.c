/* C = A·B stated with tex and evaluated by its reference evaluator. */
#include <stdio.h>
#include <tex/tex.h>

int main(void)
{
    enum { M = 64, N = 32, K = 48 };
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){M, K});
    tex_tensor *B = tex_placeholder_c(ctx, "B", TEX_F32, 2, (int64_t[]){K, N});
    tex_iter *i = tex_axis(ctx, "i", tex_int(ctx, M));
    tex_iter *j = tex_axis(ctx, "j", tex_int(ctx, N));
    tex_iter *k = tex_reduce_axis(ctx, "k", tex_int(ctx, K));
    tex_expr *ab = tex_mul(TEX_AT(A, tex_iv(i), tex_iv(k)), TEX_AT(B, tex_iv(k), tex_iv(j)));
    tex_tensor *C = tex_compute(ctx, "C", 2, (tex_iter *[]){i, j}, tex_sum(ab, 1, &k));

    DLDevice cpu = {kDLCPU, 0};
    DLTensor *a = tex_array_new(2, (int64_t[]){M, K}, TEX_F32, cpu);
    DLTensor *b = tex_array_new(2, (int64_t[]){K, N}, TEX_F32, cpu);
    DLTensor *c = tex_array_new(2, (int64_t[]){M, N}, TEX_F32, cpu);
    if (!a || !b || !c)
        return 1;
    float *pa = a->data, *pb = b->data, *pc = c->data, want = 0;
    for (int x = 0; x < M * K; x++)
        pa[x] = (float)(x % 7);
    for (int x = 0; x < K * N; x++)
        pb[x] = (float)(x % 5 - 2);
    /* One check for the whole chain: a builder given NULL returns NULL, so does tex_compute. */
    int rc = tex_eval_reference(ctx, 3, (tex_tensor *[]){A, B, C}, (DLTensor *[]){a, b, c});
    for (int x = 0; x < K; x++)
        want += pa[1 * K + x] * pb[x * N + 2];
    if (rc != 0)
        fprintf(stderr, "tex: %s\n", tex_errmsg(ctx));
    else
        printf("C[1][2] = %g, a plain loop gives %g\n", pc[1 * N + 2], want);
    int ok = rc == 0 && pc[1 * N + 2] == want;
    tex_array_free(a);
    tex_array_free(b);
    tex_array_free(c);
    tex_ctx_free(ctx);
    return ok ? 0 : 1;
}
