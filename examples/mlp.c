/*
 * mlp: a transformer MLP block, Y = X + (gelu(X W1 + b1) W2 + b2), from the
 * operator library and scheduled by tex_auto_schedule.
 *
 * The automatic scheduler makes it two loop nests in one kernel: the hidden
 * layer G (the first matmul computed in register tiles of G, bias and gelu
 * applied to each tile as it is finished; W1 packed per column panel) and
 * the output Y (the second matmul in Y's tiles, bias and the residual add
 * applied the same way). G stays a buffer of its own because the second
 * matmul reads each of its elements once per output column: fused there,
 * gelu would be recomputed D times (TEX_DUMP=fusion prints that reason).
 * The example checks the kernel against plain C loops and prints its time.
 * make test runs it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <tex/tex.h>
#include <time.h>

enum { M = 64, D = 128, HID = 512 };

static double now_ms(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* x w + b (w: [K, N], b: [N]), the matmul named name, the sum name + "b". */
static tex_tensor *linear(tex_ctx *c, tex_tensor *x, tex_tensor *w, tex_tensor *b, const char *name)
{
    char sum[32];
    snprintf(sum, sizeof sum, "%sb", name);
    return tex_op_bias_add(c, sum, tex_op_matmul(c, name, x, w, 0, 0), b, -1);
}

/* The largest difference of y from the block computed in plain loops. */
static double check(float *const a[6])
{
    const float *x = a[0], *w1 = a[1], *b1 = a[2], *w2 = a[3], *b2 = a[4], *y = a[5];
    static double h[M][HID];
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < HID; j++) {
            double v = b1[j];
            for (int k = 0; k < D; k++)
                v += x[i * D + k] * w1[k * HID + j];
            h[i][j] = 0.5 * v * (1 + erf(v / sqrt(2)));
        }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < D; j++) {
            double v = b2[j] + x[i * D + j];
            for (int k = 0; k < HID; k++)
                v += h[i][k] * w2[k * D + j];
            double d = fabs(y[i * D + j] - v);
            worst = d > worst ? d : worst;
        }
    return worst;
}

int main(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 2, (int64_t[]){M, D});
    tex_tensor *W1 = tex_placeholder_c(ctx, "W1", TEX_F32, 2, (int64_t[]){D, HID});
    tex_tensor *b1 = tex_placeholder_c(ctx, "b1", TEX_F32, 1, (int64_t[]){HID});
    tex_tensor *W2 = tex_placeholder_c(ctx, "W2", TEX_F32, 2, (int64_t[]){HID, D});
    tex_tensor *b2 = tex_placeholder_c(ctx, "b2", TEX_F32, 1, (int64_t[]){D});
    tex_tensor *G = tex_op_gelu(ctx, "G", linear(ctx, X, W1, b1, "H1"));
    tex_tensor *Y = tex_op_add(ctx, "Y", X, linear(ctx, G, W2, b2, "H2"));
    tex_tensor *params[6] = {X, W1, b1, W2, b2, Y};
    tex_schedule *s = tex_auto_schedule(ctx, 1, &Y, "cpu");
    tex_func *f = s ? tex_lower_tensors(s, "mlp", 6, params) : NULL;
    tex_kernel *k = f ? tex_build(f, "cpu") : NULL;
    if (!k) {
        fprintf(stderr, "mlp: %s\n", tex_errmsg(ctx));
        tex_ctx_free(ctx);
        return 1;
    }
    DLDevice cpu = {kDLCPU, 0};
    DLTensor *a[6];
    float *data[6];
    int rc = 0;
    for (int t = 0; t < 6; t++) {
        int64_t shape[2], n = 1;
        int nd = tex_tensor_ndim(params[t]);
        for (int d = 0; d < nd; d++) {
            tex_expr_const_int(tex_tensor_dim(params[t], d), &shape[d]);
            n *= shape[d];
        }
        a[t] = tex_array_new(nd, shape, TEX_F32, cpu);
        rc |= !a[t];
        for (int64_t e = 0; a[t] && e < n; e++)
            ((float *)a[t]->data)[e] = (float)(((e + t) * 7919) % 997) / 997.0f - 0.5f;
        data[t] = a[t] ? a[t]->data : NULL;
    }
    rc = rc ? rc : tex_kernel_call_tensors(k, 6, a); /* warm-up */
    double t0 = now_ms();
    rc = rc ? rc : tex_kernel_call_tensors(k, 6, a);
    double ms = now_ms() - t0, err = rc ? 1 : check(data);
    printf("mlp: %dx%dx%d, %.3f ms, max error %.2g\n", M, D, HID, ms, err);
    rc = rc || !(err < 1e-3);
    for (int t = 0; t < 6; t++)
        tex_array_free(a[t]);
    tex_kernel_free(k);
    tex_ctx_free(ctx);
    return rc;
}
