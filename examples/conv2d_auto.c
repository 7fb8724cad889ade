/*
 * conv2d_auto: a convolution layer from the operator library (conv2d, NCHW,
 * 3x3, padding 1, then bias and relu), scheduled by tex_auto_schedule.
 *
 * The padding stage feeds a sum of products, so it is a parallel copy of
 * its own (inlined, it would be recomputed per tile); bias and relu are
 * elementwise, so they are inlined into one epilogue stage; the
 * convolution (GEMM-like) is computed inside the epilogue's register
 * tiles: 6 filters by a row of output pixels, each input vector loaded once
 * for the 6 filters, accumulated in registers, then biased, rectified and
 * stored once. TEX_DUMP=fusion prints that partition. The
 * example checks the kernel against a plain C loop and prints its time.
 * make test runs it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <tex/tex.h>
#include <time.h>

enum { C = 16, H = 30, W = 30, F = 32, K = 3 };

static double now_ms(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static float fill(int64_t e, int salt)
{
    return (float)(((e + salt) * 7919) % 997) / 997.0f - 0.5f;
}

/* The largest difference of y from relu(conv(x, w) + b), in plain loops. */
static double check(const float *x, const float *w, const float *b, const float *y)
{
    double worst = 0;
    for (int f = 0; f < F; f++)
        for (int i = 0; i < H; i++)
            for (int j = 0; j < W; j++) {
                double acc = b[f];
                for (int c = 0; c < C; c++)
                    for (int r = 0; r < K; r++)
                        for (int s = 0; s < K; s++) {
                            int yi = i + r - 1, xj = j + s - 1;
                            if (yi >= 0 && yi < H && xj >= 0 && xj < W)
                                acc += x[(c * H + yi) * W + xj] * w[((f * C + c) * K + r) * K + s];
                        }
                double d = fabs(y[(f * H + i) * W + j] - (acc > 0 ? acc : 0));
                worst = d > worst ? d : worst;
            }
    return worst;
}

int main(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 4, (int64_t[]){1, C, H, W});
    tex_tensor *Wt = tex_placeholder_c(ctx, "W", TEX_F32, 4, (int64_t[]){F, C, K, K});
    tex_tensor *B = tex_placeholder_c(ctx, "B", TEX_F32, 1, (int64_t[]){F});
    tex_tensor *conv =
        tex_op_conv2d(ctx, "conv", X, Wt, NULL, (int64_t[]){1, 1}, NULL, 1, TEX_LAYOUT_NCHW);
    tex_tensor *Y = tex_op_relu(ctx, "Y", tex_op_bias_add(ctx, "biased", conv, B, 1));
    tex_schedule *s = tex_auto_schedule(ctx, 1, &Y, "cpu");
    tex_func *fn = s ? tex_lower_tensors(s, "conv_layer", 4, (tex_tensor *[]){X, Wt, B, Y}) : NULL;
    tex_kernel *k = fn ? tex_build(fn, "cpu") : NULL;
    if (!k) {
        fprintf(stderr, "conv2d_auto: %s\n", tex_errmsg(ctx));
        tex_ctx_free(ctx);
        return 1;
    }
    DLDevice cpu = {kDLCPU, 0};
    DLTensor *a[4] = {tex_array_new(4, (int64_t[]){1, C, H, W}, TEX_F32, cpu),
                      tex_array_new(4, (int64_t[]){F, C, K, K}, TEX_F32, cpu),
                      tex_array_new(1, (int64_t[]){F}, TEX_F32, cpu),
                      tex_array_new(4, (int64_t[]){1, F, H, W}, TEX_F32, cpu)};
    int rc = a[0] && a[1] && a[2] && a[3] ? 0 : 1;
    int64_t sizes[3] = {C * H * W, F * C * K * K, F};
    for (int t = 0; rc == 0 && t < 3; t++)
        for (int64_t e = 0; e < sizes[t]; e++)
            ((float *)a[t]->data)[e] = fill(e, t);
    rc = rc ? rc : tex_kernel_call_tensors(k, 4, a); /* warm-up */
    double t0 = now_ms();
    rc = rc ? rc : tex_kernel_call_tensors(k, 4, a);
    double ms = now_ms() - t0;
    double err = rc ? 1 : check(a[0]->data, a[1]->data, a[2]->data, a[3]->data);
    printf("conv2d_auto: %dx%dx%d -> %dx%dx%d (3x3, pad 1, bias, relu), %.3f ms, max error %.2g\n",
           C, H, W, F, H, W, ms, err);
    rc = rc || !(err < 1e-4);
    for (int t = 0; t < 4; t++)
        tex_array_free(a[t]);
    tex_kernel_free(k);
    tex_ctx_free(ctx);
    return rc;
}
