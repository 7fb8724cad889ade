/*
 * bench/conv: f32 conv2d NCHW with zero padding (a ResNet 3x3 layer:
 * 1x64x56x56 input, 64 filters, padding 1, stride 1), written as users
 * write it: Pad = select(in bounds, X[c, y - 1, x - 1], 0), Out = sum of
 * Pad * Wt. The padded load is what the CPU backend makes unconditional
 * (src/lower/guarded_loads.c), so this benchmark shows what that costs.
 *
 * Cases, on 2 threads (bench/common.h's format, anchor=c: a hand-written C
 * loop nest of the same order over a zero-padded copy made with memcpy,
 * compiled with the benchmark's -O3 -march=native):
 *   pad_root    Pad computed at root (the select runs once per padded
 *               element), Out parallel over filters, loops (f, y, c, ry,
 *               rx, x) with x vectorized;
 *   pad_inline  Pad inlined into Out: the select (and its load) runs in the
 *               innermost loop, once per multiply-add.
 * tex's result is checked against the anchor's (relative error <= 1e-3)
 * before anything is timed.
 */
#include "common.h"

#include <stdbool.h>
#include <string.h>

#include "tex/tex.h"

enum { C = 64, F = 64, H = 56, W = 56, K = 3, PAD = 1 };
enum { PH = H + 2 * PAD, PW = W + 2 * PAD, OH = PH - K + 1, OW = PW - K + 1 };

typedef struct {
    tex_kernel *kernel;
    DLTensor *x, *wt, *out;
    float *padded, *want; /* the anchor's padded copy and result */
} conv_case;

/* Builds the padded convolution with Pad inlined or at root. */
static tex_kernel *conv_build(tex_ctx *c, bool inline_pad)
{
    tex_tensor *X = tex_placeholder_c(c, "X", TEX_F32, 3, (int64_t[]){C, H, W});
    tex_tensor *Wt = tex_placeholder_c(c, "Wt", TEX_F32, 4, (int64_t[]){F, C, K, K});
    tex_iter *pc = tex_axis(c, "c", tex_int(c, C)), *py = tex_axis(c, "y", tex_int(c, PH));
    tex_iter *px = tex_axis(c, "x", tex_int(c, PW));
    tex_expr *p = tex_int(c, PAD);
    tex_expr *in = tex_and(tex_and(tex_ge(tex_iv(py), p), tex_lt(tex_iv(py), tex_int(c, H + PAD))),
                           tex_and(tex_ge(tex_iv(px), p), tex_lt(tex_iv(px), tex_int(c, W + PAD))));
    tex_tensor *Pad = tex_compute(
        c, "Pad", 3, (tex_iter *[]){pc, py, px},
        tex_select(in, TEX_AT(X, tex_iv(pc), tex_sub(tex_iv(py), p), tex_sub(tex_iv(px), p)),
                   tex_const(c, TEX_F32, 0)));
    tex_iter *f = tex_axis(c, "f", tex_int(c, F)), *y = tex_axis(c, "y", tex_int(c, OH));
    tex_iter *x = tex_axis(c, "x", tex_int(c, OW)), *rc = tex_reduce_axis(c, "rc", tex_int(c, C));
    tex_iter *ry = tex_reduce_axis(c, "ry", tex_int(c, K)),
             *rx = tex_reduce_axis(c, "rx", tex_int(c, K));
    tex_expr *body = tex_mul(
        TEX_AT(Pad, tex_iv(rc), tex_add(tex_iv(y), tex_iv(ry)), tex_add(tex_iv(x), tex_iv(rx))),
        TEX_AT(Wt, tex_iv(f), tex_iv(rc), tex_iv(ry), tex_iv(rx)));
    tex_tensor *Out = tex_compute(c, "Out", 3, (tex_iter *[]){f, y, x},
                                  tex_sum(body, 3, (tex_iter *[]){rc, ry, rx}));
    tex_schedule *s = tex_schedule_new(c, 1, &Out);
    tex_stage *so = tex_stage_of(s, Out), *sp = tex_stage_of(s, Pad);
    if (inline_pad)
        tex_compute_inline(sp);
    else
        tex_parallel(sp, tex_op_axis(sp, 0));
    tex_reorder(so, 6, (tex_iter *[]){f, y, rc, ry, rx, x});
    tex_parallel(so, f);
    tex_vectorize(so, x);
    tex_func *fn = tex_lower_tensors(s, "conv", 3, (tex_tensor *[]){X, Wt, Out});
    return fn ? tex_build(fn, "cpu -threads=2") : NULL;
}

/* The anchor: zero-padded copy, then the same loop order. */
static int run_anchor(void *arg)
{
    conv_case *cc = arg;
    const float *in = cc->x->data, *wt = cc->wt->data;
    memset(cc->padded, 0, sizeof(float) * C * PH * PW);
    for (int c = 0; c < C; c++)
        for (int y = 0; y < H; y++)
            memcpy(cc->padded + (c * PH + y + PAD) * PW + PAD, in + (c * H + y) * W,
                   sizeof(float) * W);
    const float *pd = cc->padded;
    float *out = cc->want;
#pragma omp parallel for num_threads(2)
    for (int f = 0; f < F; f++)
        for (int y = 0; y < OH; y++) {
            float *o = out + (f * OH + y) * OW;
            for (int x = 0; x < OW; x++)
                o[x] = 0;
            for (int c = 0; c < C; c++)
                for (int ry = 0; ry < K; ry++)
                    for (int rx = 0; rx < K; rx++) {
                        float w = wt[((f * C + c) * K + ry) * K + rx];
                        const float *row = pd + (c * PH + y + ry) * PW + rx;
                        for (int x = 0; x < OW; x++)
                            o[x] += row[x] * w;
                    }
        }
    return 0;
}

static int run_tex(void *arg)
{
    conv_case *cc = arg;
    return tex_kernel_call_tensors(cc->kernel, 3, (DLTensor *[]){cc->x, cc->wt, cc->out});
}

static void run_case(const char *desc, bool inline_pad)
{
    DLDevice cpu = {kDLCPU, 0};
    conv_case cc = {0};
    tex_ctx *c = tex_ctx_new();
    cc.kernel = conv_build(c, inline_pad);
    cc.x = tex_array_new(3, (int64_t[]){C, H, W}, TEX_F32, cpu);
    cc.wt = tex_array_new(4, (int64_t[]){F, C, K, K}, TEX_F32, cpu);
    cc.out = tex_array_new(3, (int64_t[]){F, OH, OW}, TEX_F32, cpu);
    cc.padded = bench_floats((int64_t)C * PH * PW);
    cc.want = bench_floats((int64_t)F * OH * OW);
    if (!cc.kernel || !cc.x || !cc.wt || !cc.out || !cc.padded || !cc.want) {
        fprintf(stderr, "conv: %s\n", tex_errmsg(c));
        bench_fail("conv", desc, "setup_failed");
    }
    bench_fill_random(cc.x->data, C * H * W, 1);
    bench_fill_random(cc.wt->data, F * C * K * K, 2);
    run_anchor(&cc);
    memset(cc.out->data, 0xff, sizeof(float) * F * OH * OW); /* NaN: must be overwritten */
    if (run_tex(&cc) != 0)
        bench_fail("conv", desc, "call_failed");
    bench_check_close("conv", desc, cc.out->data, cc.want, F * OH * OW, 1e-3);
    if (bench_compare("conv", desc, (bench_run){run_tex, &cc, NULL}, "c",
                      (bench_run){run_anchor, &cc, NULL}, 800) != 0)
        bench_fail("conv", desc, "call_failed");
    tex_kernel_free(cc.kernel);
    tex_array_free(cc.x);
    tex_array_free(cc.wt);
    tex_array_free(cc.out);
    free(cc.padded);
    free(cc.want);
    tex_ctx_free(c);
}

int main(void)
{
    run_case("64x56x56_3x3_pad1/pad_root/t2", false);
    run_case("64x56x56_3x3_pad1/pad_inline/t2", true);
    return 0;
}
