/*
 * softmax_gpu: a row softmax scheduled for a GPU, the way one writes it for
 * TVM: one block per row, the row's max and sum of exponentials computed by
 * 64 threads each (the reduction split, rfactor'ed into per-thread partials,
 * then a cross-thread reduction in shared memory), the output written by the
 * same 64 threads.
 *
 * The function is built for "cuda -emit-only" and its CUDA source printed
 * (kernels, launch plan); then it runs on "cuda" when a GPU and driver are
 * there, else on "cpu", where the same GPU schedule runs as compiled C (the
 * barriers it needs are inserted and removed again by barrier fission). The
 * result is checked against the reference evaluator. make test runs it.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <tex/tex.h>

enum { ROWS = 50, COLS = 300, THREADS = 64 };

/* R = reduce over a row of Y's input, per-thread partials over THREADS
 * threads, computed in shared memory at Y's row (block) loop. */
static int thread_reduce(tex_ctx *ctx, tex_schedule *s, tex_tensor *R, tex_stage *y, tex_iter *row)
{
    tex_stage *sr = tex_stage_of(s, R);
    tex_iter *ko, *ki;
    int rc = tex_split(sr, tex_op_reduce_axis(sr, 0), tex_int(ctx, THREADS), &ko, &ki);
    tex_tensor *rf = rc ? NULL : tex_rfactor(s, R, ki, 1);
    if (!rf)
        return -1;
    tex_iter *tx = tex_op_reduce_axis(sr, 0);
    rc = tex_bind(sr, tx, TEX_THREAD_X);
    rc = rc ? rc : tex_compute_at(sr, y, row);
    rc = rc ? rc : tex_set_scope(sr, TEX_SCOPE_SHARED);
    rc = rc ? rc : tex_compute_at(tex_stage_of(s, rf), sr, tx);
    return rc ? rc : tex_set_scope(tex_stage_of(s, rf), TEX_SCOPE_LOCAL);
}

int main(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(ctx, "X", TEX_F32, 2, (int64_t[]){ROWS, COLS});
    tex_expr *rows = tex_int(ctx, ROWS), *cols = tex_int(ctx, COLS);
    tex_iter *i1 = tex_axis(ctx, "i", rows), *k1 = tex_reduce_axis(ctx, "k", cols);
    tex_tensor *Mx =
        tex_compute(ctx, "Mx", 1, &i1, tex_reduce_max(TEX_AT(X, tex_iv(i1), tex_iv(k1)), 1, &k1));
    tex_iter *i2 = tex_axis(ctx, "i", rows), *k2 = tex_reduce_axis(ctx, "k", cols);
    tex_expr *e2 = tex_exp(tex_sub(TEX_AT(X, tex_iv(i2), tex_iv(k2)), TEX_AT(Mx, tex_iv(i2))));
    tex_tensor *Se = tex_compute(ctx, "Se", 1, &i2, tex_sum(e2, 1, &k2));
    tex_iter *i3 = tex_axis(ctx, "i", rows), *j3 = tex_axis(ctx, "j", cols);
    tex_expr *e3 = tex_exp(tex_sub(TEX_AT(X, tex_iv(i3), tex_iv(j3)), TEX_AT(Mx, tex_iv(i3))));
    tex_tensor *Y =
        tex_compute(ctx, "Y", 2, (tex_iter *[]){i3, j3}, tex_div(e3, TEX_AT(Se, tex_iv(i3))));

    /* rows to blocks, columns to THREADS threads; Mx and Se per row in shared memory */
    tex_schedule *s = tex_schedule_new(ctx, 1, &Y);
    tex_stage *sy = tex_stage_of(s, Y);
    tex_iter *jo, *jt;
    int rc = tex_split(sy, j3, tex_int(ctx, THREADS), &jo, &jt);
    rc = rc ? rc : tex_reorder(sy, 3, (tex_iter *[]){i3, jt, jo});
    rc = rc ? rc : tex_bind(sy, i3, TEX_BLOCK_X);
    rc = rc ? rc : tex_bind(sy, jt, TEX_THREAD_X);
    rc = rc ? rc : thread_reduce(ctx, s, Mx, sy, i3);
    rc = rc ? rc : thread_reduce(ctx, s, Se, sy, i3);
    tex_func *f = rc ? NULL : tex_lower_tensors(s, "softmax", 2, (tex_tensor *[]){X, Y});
    tex_kernel *src = f ? tex_build(f, "cuda -emit-only") : NULL;
    const char *target = tex_target_available("cuda") ? "cuda" : "cpu";
    tex_kernel *kern = src ? tex_build(f, target) : NULL;
    if (!kern) {
        fprintf(stderr, "softmax_gpu: %s\n", tex_errmsg(ctx));
        return 1;
    }
    const char *cuda = tex_kernel_source(src), *first = strstr(cuda, "extern \"C\"");
    printf("CUDA source (%zu bytes); its launch plan and first kernel:\n%.*s\n%.1500s...\n\n",
           strlen(cuda), (int)(strstr(cuda, "*/") - cuda + 2), cuda, first ? first : cuda);

    /* device arrays for "cuda", host arrays for "cpu" */
    DLDevice host = {kDLCPU, 0}, dev = strcmp(target, "cuda") == 0 ? (DLDevice){kDLCUDA, 0} : host;
    int64_t shape[2] = {ROWS, COLS};
    DLTensor *x = tex_array_new(2, shape, TEX_F32, host),
             *y = tex_array_new(2, shape, TEX_F32, host);
    DLTensor *want = tex_array_new(2, shape, TEX_F32, host);
    DLTensor *dx = tex_array_new(2, shape, TEX_F32, dev),
             *dy = tex_array_new(2, shape, TEX_F32, dev);
    float *px = x->data, *py = y->data, *pw = want->data, err = 0;
    for (int n = 0; n < ROWS * COLS; n++) {
        px[n] = (float)((n * 37) % 101) / 16.0f - 3.0f;
        py[n] = NAN;
    }
    rc = tex_array_copy(dx, x);
    rc = rc ? rc : tex_array_copy(dy, y);
    rc = rc ? rc : tex_kernel_call_tensors(kern, 2, (DLTensor *[]){dx, dy});
    rc = rc ? rc : tex_array_copy(y, dy);
    if (rc == 0)
        rc = tex_eval_reference(ctx, 2, (tex_tensor *[]){X, Y}, (DLTensor *[]){x, want});
    for (int n = 0; rc == 0 && n < ROWS * COLS; n++)
        err = fmaxf(err, fabsf(py[n] - pw[n]) / fmaxf(1e-3f, fabsf(pw[n])));
    if (!(err <= 1e-4f))
        rc = rc ? rc : 1;
    printf("softmax %dx%d on \"%s\": %s, max relative error vs the reference %.1e\n", ROWS, COLS,
           target,
           rc == 0  ? "ok"
           : rc > 0 ? "WRONG"
                    : tex_kernel_errmsg(kern),
           (double)err);
    tex_array_free(x), tex_array_free(y), tex_array_free(want);
    tex_array_free(dx), tex_array_free(dy);
    tex_kernel_free(src);
    tex_kernel_free(kern);
    tex_ctx_free(ctx);
    return rc == 0 ? 0 : 1;
}
