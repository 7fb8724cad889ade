/*
 * softmax_auto: a row softmax from the operator library, scheduled by
 * tex_auto_schedule instead of by hand.
 *
 * tex_op_softmax builds four stages (the row max Y_max, Y_exp = exp(x -
 * max), the row sum Y_sum, Y = Y_exp / Y_sum); the automatic scheduler
 * fuses them into one parallel loop over rows, each row's max, exponentials
 * and sum computed inside it with vectorized loops (run it with
 * TEX_DUMP=fusion to see the partition and the reasons). The example prints
 * the schedule's outline, checks the kernel against a plain C loop and
 * prints its time. make test runs it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tex/tex.h>
#include <time.h>

enum { ROWS = 1000, COLS = 777 };

static double now_ms(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The largest relative difference of y from a plain softmax of x. */
static double check(const float *x, const float *y)
{
    double worst = 0;
    for (int i = 0; i < ROWS; i++) {
        const float *xr = x + (size_t)i * COLS;
        double mx = xr[0], sum = 0;
        for (int j = 1; j < COLS; j++)
            mx = xr[j] > mx ? xr[j] : mx;
        for (int j = 0; j < COLS; j++)
            sum += exp(xr[j] - mx);
        for (int j = 0; j < COLS; j++) {
            double want = exp(xr[j] - mx) / sum, d = fabs(y[(size_t)i * COLS + j] - want) / want;
            worst = d > worst ? d : worst;
        }
    }
    return worst;
}

int main(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 2, (int64_t[]){ROWS, COLS});
    tex_tensor *Y = tex_op_softmax(ctx, "Y", X, -1);
    tex_schedule *s = tex_auto_schedule(ctx, 1, &Y, "cpu");
    tex_func *f = s ? tex_lower_tensors(s, "softmax", 2, (tex_tensor *[]){X, Y}) : NULL;
    tex_kernel *k = f ? tex_build(f, "cpu") : NULL;
    if (!k) {
        fprintf(stderr, "softmax_auto: %s\n", tex_errmsg(ctx));
        tex_ctx_free(ctx);
        return 1;
    }
    char *text = tex_schedule_str(s);
    printf("%s", text ? text : "");
    free(text);
    DLDevice cpu = {kDLCPU, 0};
    DLTensor *x = tex_array_new(2, (int64_t[]){ROWS, COLS}, TEX_F32, cpu);
    DLTensor *y = tex_array_new(2, (int64_t[]){ROWS, COLS}, TEX_F32, cpu);
    int rc = x && y ? 0 : 1;
    for (int64_t e = 0; rc == 0 && e < (int64_t)ROWS * COLS; e++)
        ((float *)x->data)[e] = (float)((e * 7919) % 1000) / 250.0f - 2.0f;
    rc = rc ? rc : tex_kernel_call_tensors(k, 2, (DLTensor *[]){x, y}); /* warm-up */
    double t0 = now_ms();
    rc = rc ? rc : tex_kernel_call_tensors(k, 2, (DLTensor *[]){x, y});
    double ms = now_ms() - t0, err = rc ? 1 : check(x->data, y->data);
    printf("softmax_auto: %dx%d, %.3f ms, max relative error %.2g\n", ROWS, COLS, ms, err);
    rc = rc || !(err < 1e-5);
    tex_array_free(x);
    tex_array_free(y);
    tex_kernel_free(k);
    tex_ctx_free(ctx);
    return rc;
}
