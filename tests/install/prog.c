/*
 * A program built against an installed tex, the way a user builds one:
 * cc prog.c $(pkg-config --cflags --libs tex). tests/install_test.sh compiles it
 * against a staged `make install` (shared and static) and runs it.
 *
 * It states C = A·B with the public API, evaluates it with tex_eval_reference and
 * compares every element with a plain loop; it prints tex_version() so the script can
 * compare it with tex.pc's version. Exit status 0 when everything matches.
 */
#include <stdio.h>
#include <tex/tex.h>

enum { M = 7, N = 5, K = 3 };

static int check(tex_ctx *ctx, const float *a, const float *b, const float *c)
{
    int bad = 0;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            float want = 0;
            for (int k = 0; k < K; k++)
                want += a[i * K + k] * b[k * N + j];
            if (c[i * N + j] != want && bad++ < 5)
                fprintf(stderr, "C[%d][%d] = %g, expected %g\n", i, j, c[i * N + j], want);
        }
    }
    if (tex_errcode(ctx) != TEX_OK)
        fprintf(stderr, "unexpected error: %s\n", tex_errmsg(ctx));
    return bad == 0 && tex_errcode(ctx) == TEX_OK;
}

int main(void)
{
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
    int ok = C && a && b && c;
    if (ok) {
        float *pa = a->data, *pb = b->data;
        for (int x = 0; x < M * K; x++)
            pa[x] = (float)(x % 4) - 1.5f;
        for (int x = 0; x < K * N; x++)
            pb[x] = (float)(x % 3) + 0.25f;
        ok = tex_eval_reference(ctx, 3, (tex_tensor *[]){A, B, C}, (DLTensor *[]){a, b, c}) == 0 &&
             check(ctx, a->data, b->data, c->data);
    }
    if (!ok)
        fprintf(stderr, "tex: %s\n", tex_errmsg(ctx));
    printf("tex %s\n", tex_version());
    tex_array_free(a);
    tex_array_free(b);
    tex_array_free(c);
    tex_ctx_free(ctx);
    return ok ? 0 : 1;
}
