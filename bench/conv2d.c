/*
 * bench/conv2d: f32 2-D convolutions of ResNet-50, batch 1, tex against
 * oneDNN (Debian libdnnl-dev, its C API) on the same thread count.
 *
 * Layers (stride 1; the 3x3 ones with padding 1 and as many filters as
 * channels), each on 1 and 2 threads, three lines per case (bench/common.h's
 * format, anchor=onednn): the automatic schedule in tex's preferred layout,
 * e.g. `case=c64h56w56k64r3/t2`, the automatic schedule in NHWC,
 * `case=.../t2/nhwc`, the hand schedule in NHWC, `case=.../t2/manual`, and
 * the automatic schedule in plain NCHW (as a framework passes it, register
 * tiles rather than the GEMM built-in), `case=.../t2/nchw`:
 *   c64h56w56k64r3  c128h28w28k128r3  c256h14w14k256r3  c512h7w7k512r3
 *   c256h56w56k64r1 (256 channels to 64 filters, 1x1, no padding)
 *
 * Each side gets its preferred layouts, arranged outside the timed region:
 * oneDNN picks its blocked layouts (bench/onednn_conv.h; only the
 * convolution's execution is timed). tex's are blocked too,
 * TEX_LAYOUT_NCHWC (docs/ops.md): the input [1, C / CB, H, W, CB], the
 * weights [F / NR, C / CB, KH, KW, CB, NR] and the output [1, F / NR, OH,
 * OW, NR], CB = 64 (or C when smaller), NR the CPU GEMM built-in's columns
 * (64 on AVX-512, 16 on AVX2), so that a filter block's weights are read as
 * they are. The /nhwc and /manual lines take the input in NHWC and the
 * weights in HWCF ([KH, KW, C, F], the [KH * KW * C, F] matrix of an
 * implicit GEMM), whose panels of NR filters the kernel copies per call.
 * The padding runs inside the timed kernel where it is computed: the
 * tensorized lines (NCHWc and /nhwc) read the input where it stands, the
 * padding left out (docs/passes.md, pad_bypass), as oneDNN does.
 *
 * tex's kernel is tex_op_conv2d scheduled by
 * tex_auto_schedule(..., "cpu -threads=N"), which tensorizes it with the
 * CPU GEMM built-in (docs/auto_schedule.md, "Tensorized tiles"). The
 * manual line is the hand schedule of conv_schedule, the same idea written
 * out as a direct implicit GEMM: a 6-pixel x NR-filter output tile (6
 * consecutive x of one row) is C, the input's 6 x C block at (y + ry,
 * x + rx) is A (rows stride C), the weights' C x NR block at (ry, rx) is B;
 * the channel axis is the built-in's depth (64 to 512: docs/api.md, rule
 * 10). It stays as the reference the automatic schedule must match.
 *
 * Before timing, tex's output is compared with oneDNN's (reordered back to
 * plain NCHW; relative error <= 1e-3), and on the first 1x1 and 7x7 layers
 * (automatic schedule in NCHWc, 1 thread) with the oracle
 * (tex_eval_reference of the same computes).
 *
 * usage: conv2d          every layer
 *        conv2d S        only the layers whose name contains S
 *        conv2d --source S   prints the C that tex generates for the first
 *                        such layer (automatic schedule in NCHWc, 2 threads)
 */
#include "common.h"
#include "onednn_conv.h"

#include <omp.h>
#include <stdbool.h>
#include <string.h>
#include <tex/tex.h>

typedef struct {
    const char *name;
    int64_t c, h, w, f, k, pad; /* channels, height, width, filters, kernel size, padding */
} conv_layer;

static const conv_layer layers[] = {
    {"c64h56w56k64r3", 64, 56, 56, 64, 3, 1},     {"c128h28w28k128r3", 128, 28, 28, 128, 3, 1},
    {"c256h14w14k256r3", 256, 14, 14, 256, 3, 1}, {"c512h7w7k512r3", 512, 7, 7, 512, 3, 1},
    {"c256h56w56k64r1", 256, 56, 56, 64, 1, 0},
};
enum { N_LAYERS = sizeof layers / sizeof layers[0] };

/* How tex's side is laid out and scheduled (the lines' suffixes). */
typedef enum {
    BLOCKED, /* NCHWc, automatic schedule: "" */
    NHWC,    /* NHWC, automatic schedule: "/nhwc" */
    MANUAL,  /* NHWC, conv_schedule: "/manual" */
    NCHW     /* NCHW, automatic schedule: "/nchw" */
} conv_mode;

static const char *const mode_suffix[] = {"", "/nhwc", "/manual", "/nchw"};

typedef struct {
    const conv_layer *L;
    int threads;
    conv_mode mode;
    int64_t oh, ow, cb, nr; /* output size; NCHWc's channel and filter blocks */
    tex_kernel *kernel;
    DLTensor *x, *w, *out;  /* tex's: NCHWc, NCHW, or NHWC input, HWCF weights, NHWC output */
    float *x_nchw, *w_oihw; /* the same values, plain, for oneDNN */
    onednn_conv dnn;        /* oneDNN's convolution (onednn_conv.h) */
    float *want;            /* oneDNN's output, NCHW */
} conv_case;

/* ------------------------------------------------------------------ tex */

/* The hand schedule of Out = conv2d_nhwc(Pad, W) (Pad the padded input, or
 * NULL; w the weights), every layer kind alike:
 *   Out: x split by 6 (xo, xi), f split by nr (fo, fi); loop order
 *        (n, fo, y, xo, ry, rx, xi, rc, fi); fo parallel (one parallel
 *        region; F / nr is 4 to 32 panels with AVX2, but 1 for F = 64 with
 *        AVX-512, which then runs on one thread);
 *        xi tensorized with `in` (the inner nest [xi, rc, fi] is
 *        C[6, nr] += A[6, C] . B[C, nr]: RESET once per tile, one UPDATE of
 *        depth C per (ry, rx)); fi vectorized for the right-edge tiles
 *        (OW % 6 pixels), which run the loop nest;
 *   WP = cache_read(W) computed at fo: the weights' nr-filter panel packed
 *        [KH, KW, C, nr] once per panel (B's rows stride nr, not F: rows F
 *        floats apart share a few L1 sets), its filters vectorized;
 *   Pad: at root, its rows parallel, its channels vectorized by 16.
 * 0 or a negative code. */
static int conv_schedule(tex_ctx *ctx, tex_schedule *s, tex_tensor *pad, tex_tensor *w,
                         tex_tensor *out, tex_intrin *in, int64_t nr)
{
    tex_stage *so = tex_stage_of(s, out);
    tex_iter *n = tex_op_axis(so, 0), *y = tex_op_axis(so, 1), *x = tex_op_axis(so, 2);
    tex_iter *f = tex_op_axis(so, 3);
    /* reduce axes in order of first use (docs/api.md, rule 3): NHWC reads
     * Pad[n, y + ry, x + rx, rc] first */
    tex_iter *ry = tex_op_reduce_axis(so, 0), *rx = tex_op_reduce_axis(so, 1);
    tex_iter *rc = tex_op_reduce_axis(so, 2);
    tex_tensor *wp = tex_cache_read(s, w, TEX_SCOPE_LOCAL, 1, &out);
    if (!wp)
        return tex_errcode(ctx);
    tex_stage *sw = tex_stage_of(s, wp);
    tex_iter *xo, *xi, *fo, *fi;
    int rv = tex_split(so, x, tex_int(ctx, 6), &xo, &xi);
    rv = rv ? rv : tex_split(so, f, tex_int(ctx, nr), &fo, &fi);
    rv = rv ? rv : tex_reorder(so, 9, (tex_iter *[]){n, fo, y, xo, ry, rx, xi, rc, fi});
    rv = rv ? rv : tex_parallel(so, fo);
    rv = rv ? rv : tex_vectorize(so, fi);
    rv = rv ? rv : tex_tensorize(so, xi, in);
    rv = rv ? rv : tex_compute_at(sw, so, fo);
    rv = rv ? rv : tex_vectorize(sw, tex_stage_axis(sw, tex_stage_naxes(sw) - 1));
    if (rv || !pad)
        return rv;
    tex_stage *sp = tex_stage_of(s, pad);
    tex_iter *co, *ci;
    rv = tex_split(sp, tex_op_axis(sp, 3), tex_int(ctx, 16), &co, &ci);
    rv = rv ? rv : tex_parallel(sp, tex_op_axis(sp, 1));
    return rv ? rv : tex_vectorize(sp, ci);
}

/* The computes of g's layer in NCHWc (conv_alloc's shapes); *pad NULL. */
static tex_tensor *conv_define_blocked(tex_ctx *ctx, const conv_case *g, tex_tensor **x,
                                       tex_tensor **w, tex_tensor **pad)
{
    const conv_layer *L = g->L;
    *x = tex_placeholder_c(ctx, "X", TEX_F32, 5, (int64_t[]){1, L->c / g->cb, L->h, L->w, g->cb});
    *w = tex_placeholder_c(ctx, "W", TEX_F32, 6,
                           (int64_t[]){L->f / g->nr, L->c / g->cb, L->k, L->k, g->cb, g->nr});
    *pad = NULL;
    return tex_op_conv2d(ctx, "Out", *x, *w, NULL, (int64_t[]){L->pad, L->pad}, NULL, 1,
                         TEX_LAYOUT_NCHWC);
}

/* The computes of g's layer in NCHW: X [1, C, H, W], W [F, C, KH, KW], Out
 * [1, F, OH, OW] (the padding inside tex_op_conv2d); *pad NULL. */
static tex_tensor *conv_define_nchw(tex_ctx *ctx, const conv_layer *L, tex_tensor **x,
                                    tex_tensor **w, tex_tensor **pad)
{
    *x = tex_placeholder_c(ctx, "X", TEX_F32, 4, (int64_t[]){1, L->c, L->h, L->w});
    *w = tex_placeholder_c(ctx, "W", TEX_F32, 4, (int64_t[]){L->f, L->c, L->k, L->k});
    *pad = NULL;
    return tex_op_conv2d(ctx, "Out", *x, *w, NULL, (int64_t[]){L->pad, L->pad}, NULL, 1,
                         TEX_LAYOUT_NCHW);
}

/* The computes of layer L: X [1, H, W, C], W [KH, KW, C, F], Out [1, OH, OW,
 * F]; *pad the padding stage (NULL without padding). */
static tex_tensor *conv_define(tex_ctx *ctx, const conv_layer *L, tex_tensor **x, tex_tensor **w,
                               tex_tensor **pad)
{
    *x = tex_placeholder_c(ctx, "X", TEX_F32, 4, (int64_t[]){1, L->h, L->w, L->c});
    *w = tex_placeholder_c(ctx, "W", TEX_F32, 4, (int64_t[]){L->k, L->k, L->c, L->f});
    *pad = NULL;
    tex_tensor *src = *x;
    if (L->pad) {
        const int64_t p[4] = {0, L->pad, L->pad, 0};
        src = *pad = tex_op_pad(ctx, "Pad", *x, p, p, 0.0);
    }
    return tex_op_conv2d(ctx, "Out", src, *w, NULL, NULL, NULL, 1, TEX_LAYOUT_NHWC);
}

/* The schedule of layer L's computes: tex_auto_schedule's, or with
 * `manual` conv_schedule; NULL on failure. */
static tex_schedule *conv_plan(tex_ctx *ctx, const char *target, bool manual, tex_tensor *pad,
                               tex_tensor *w, tex_tensor *out)
{
    if (!manual)
        return tex_auto_schedule(ctx, 1, &out, target);
    bool avx512 = __builtin_cpu_supports("avx512f");
    tex_schedule *s = tex_schedule_new(ctx, 1, &out);
    tex_intrin *in = tex_intrin_builtin(ctx, avx512 ? "cpu.gemm_f32_avx512" : "cpu.gemm_f32_avx2");
    return s && in && conv_schedule(ctx, s, pad, w, out, in, avx512 ? 64 : 16) == 0 ? s : NULL;
}

/* Builds g->kernel (g->mode's layout and schedule) on g->threads threads;
 * 0 or -1 (message printed). With `oracle`, also checks the kernel's
 * output for g's arrays against tex_eval_reference. */
static int conv_build(conv_case *g, bool oracle)
{
    char target[64];
    snprintf(target, sizeof target, "cpu -threads=%d", g->threads);
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *x, *w, *pad;
    tex_tensor *out = g->mode == BLOCKED ? conv_define_blocked(ctx, g, &x, &w, &pad)
                      : g->mode == NCHW  ? conv_define_nchw(ctx, g->L, &x, &w, &pad)
                                         : conv_define(ctx, g->L, &x, &w, &pad);
    tex_schedule *s = out ? conv_plan(ctx, target, g->mode == MANUAL, pad, w, out) : NULL;
    tex_func *f = s ? tex_lower_tensors(s, "conv2d", 3, (tex_tensor *[]){x, w, out}) : NULL;
    g->kernel = f ? tex_build(f, target) : NULL;
    int rc = g->kernel ? 0 : -1;
    if (!g->kernel)
        fprintf(stderr, "conv2d: %s: %s\n", g->L->name, tex_errmsg(ctx));
    if (rc == 0 && oracle) {
        DLDevice cpu = {kDLCPU, 0};
        DLTensor *want = tex_array_new(g->out->ndim, g->out->shape, TEX_F32, cpu);
        rc = want && tex_kernel_call_tensors(g->kernel, 3, (DLTensor *[]){g->x, g->w, g->out}) == 0
                 ? tex_eval_reference(ctx, 3, (tex_tensor *[]){x, w, out},
                                      (DLTensor *[]){g->x, g->w, want})
                 : -1;
        double err = rc ? 1.0 : bench_rel_error(g->out->data, want->data, g->oh * g->ow * g->L->f);
        fprintf(stderr, "conv2d: %s: relative error against the oracle %.2g\n", g->L->name, err);
        rc = err <= 1e-4 ? 0 : -1;
        tex_array_free(want);
    }
    tex_ctx_free(ctx);
    return rc;
}

static int run_tex(void *arg)
{
    conv_case *g = arg;
    int rc = tex_kernel_call_tensors(g->kernel, 3, (DLTensor *[]){g->x, g->w, g->out});
    if (rc != 0)
        fprintf(stderr, "conv2d: call failed: %s\n", tex_kernel_errmsg(g->kernel));
    return rc;
}

/* ------------------------------------------------------------------ cases */

/* The position of element (channel c, pixel p of P, of C) of an NCHW
 * tensor in tex's layout for mode: NCHWc with blocks of cb, NCHW, or NHWC. */
static int64_t tex_index(conv_mode mode, int64_t c, int64_t p, int64_t C, int64_t P, int64_t cb)
{
    return mode == BLOCKED ? nchwc_at(c, p, P, cb) : mode == NCHW ? c * P + p : p * C + c;
}

/* Random plain input and weights, and tex's copies of them (g->mode's
 * layouts: NCHWc, or NHWC and HWCF). */
static int conv_alloc(conv_case *g)
{
    const conv_layer *L = g->L;
    DLDevice cpu = {kDLCPU, 0};
    g->oh = L->h + 2 * L->pad - L->k + 1;
    g->ow = L->w + 2 * L->pad - L->k + 1;
    g->nr = __builtin_cpu_supports("avx512f") ? 64 : 16;
    g->cb = L->c < 64 ? L->c : 64;
    int64_t cb = g->cb, nr = g->nr, kk = L->k * L->k;
    if (g->mode == BLOCKED) {
        g->x = tex_array_new(5, (int64_t[]){1, L->c / cb, L->h, L->w, cb}, TEX_F32, cpu);
        g->w =
            tex_array_new(6, (int64_t[]){L->f / nr, L->c / cb, L->k, L->k, cb, nr}, TEX_F32, cpu);
        g->out = tex_array_new(5, (int64_t[]){1, L->f / nr, g->oh, g->ow, nr}, TEX_F32, cpu);
    } else if (g->mode == NCHW) {
        g->x = tex_array_new(4, (int64_t[]){1, L->c, L->h, L->w}, TEX_F32, cpu);
        g->w = tex_array_new(4, (int64_t[]){L->f, L->c, L->k, L->k}, TEX_F32, cpu);
        g->out = tex_array_new(4, (int64_t[]){1, L->f, g->oh, g->ow}, TEX_F32, cpu);
    } else {
        g->x = tex_array_new(4, (int64_t[]){1, L->h, L->w, L->c}, TEX_F32, cpu);
        g->w = tex_array_new(4, (int64_t[]){L->k, L->k, L->c, L->f}, TEX_F32, cpu);
        g->out = tex_array_new(4, (int64_t[]){1, g->oh, g->ow, L->f}, TEX_F32, cpu);
    }
    g->x_nchw = malloc(sizeof(float) * (size_t)(L->c * L->h * L->w));
    g->w_oihw = malloc(sizeof(float) * (size_t)(L->f * L->c * kk));
    g->want = malloc(sizeof(float) * (size_t)(L->f * g->oh * g->ow));
    if (!g->x || !g->w || !g->out || !g->x_nchw || !g->w_oihw || !g->want)
        return -1;
    bench_fill_random(g->x_nchw, L->c * L->h * L->w, 1);
    bench_fill_random(g->w_oihw, L->f * L->c * kk, 2);
    float *x = g->x->data, *w = g->w->data;
    for (int64_t c = 0; c < L->c; c++)
        for (int64_t p = 0; p < L->h * L->w; p++)
            x[tex_index(g->mode, c, p, L->c, L->h * L->w, cb)] = g->x_nchw[c * L->h * L->w + p];
    for (int64_t f = 0; f < L->f; f++)
        for (int64_t c = 0; c < L->c; c++)
            for (int64_t r = 0; r < kk; r++)
                w[g->mode == BLOCKED ? nchwc_weight_at(f, c, r, L->c, kk, cb, nr)
                  : g->mode == NCHW  ? (f * L->c + c) * kk + r
                                     : (r * L->c + c) * L->f + f] =
                    g->w_oihw[(f * L->c + c) * kk + r];
    return 0;
}

static void conv_release(conv_case *g)
{
    tex_kernel_free(g->kernel);
    tex_array_free(g->x);
    tex_array_free(g->w);
    tex_array_free(g->out);
    free(g->x_nchw);
    free(g->w_oihw);
    free(g->want);
    onednn_conv_release(&g->dnn);
}

/* tex's output reordered to NCHW, compared with oneDNN's (exits through
 * bench_fail on a mismatch). */
static void conv_check(conv_case *g, const char *desc)
{
    int64_t f = g->L->f, p = g->oh * g->ow;
    float *got = malloc(sizeof(float) * (size_t)(f * p)), *out = g->out->data;
    if (!got)
        bench_fail("conv2d", desc, "setup_failed");
    for (int64_t i = 0; i < p; i++)
        for (int64_t c = 0; c < f; c++)
            got[c * p + i] = out[tex_index(g->mode, c, i, f, p, g->nr)];
    bench_check_close("conv2d", desc, got, g->want, f * p, 1e-3);
    free(got);
}

/* Builds, checks and times layer L on `threads` threads in `mode`; prints
 * its line. */
static void conv_measure(const conv_layer *L, int threads, conv_mode mode, bool oracle)
{
    char desc[64];
    snprintf(desc, sizeof desc, "%s/t%d%s", L->name, threads, mode_suffix[mode]);
    conv_case g = {.L = L, .threads = threads, .mode = mode};
    omp_set_num_threads(threads);
    onednn_conv_shape sh = {L->c, L->h, L->w, L->f, L->k, L->pad};
    if (conv_alloc(&g) != 0 || conv_build(&g, oracle) != 0 ||
        onednn_conv_setup(&g.dnn, sh, g.x_nchw, g.w_oihw) != 0)
        bench_fail("conv2d", desc, "setup_failed");
    memset(g.out->data, 0xff, sizeof(float) * (size_t)(g.oh * g.ow * L->f)); /* NaN */
    if (run_tex(&g) != 0 || onednn_conv_run(&g.dnn) != 0 || onednn_conv_result(&g.dnn, g.want) != 0)
        bench_fail("conv2d", desc, "call_failed");
    conv_check(&g, desc);
    if (bench_compare("conv2d", desc, (bench_run){run_tex, &g, NULL}, "onednn",
                      (bench_run){onednn_conv_run, &g.dnn, NULL}, 1500) != 0)
        bench_fail("conv2d", desc, "call_failed");
    conv_release(&g);
}

/* Prints the generated C of the automatic schedule of the first layer
 * whose name contains s, on 2 threads; 0 or 1. */
static int print_source(const char *s)
{
    for (int l = 0; l < N_LAYERS; l++) {
        if (!strstr(layers[l].name, s))
            continue;
        conv_case g = {.L = &layers[l], .threads = 2};
        int rc = conv_alloc(&g) == 0 && conv_build(&g, false) == 0 ? 0 : 1;
        if (rc == 0)
            fputs(tex_kernel_source(g.kernel), stdout);
        conv_release(&g);
        return rc;
    }
    fprintf(stderr, "conv2d: no layer named like '%s'\n", s);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--source") == 0)
        return print_source(argv[2]);
    for (int l = 0; l < N_LAYERS; l++)
        for (int t = 1; t <= 2 && (argc < 2 || strstr(layers[l].name, argv[1])); t++)
            for (int mode = BLOCKED; mode <= NCHW; mode++)
                conv_measure(&layers[l], t, mode,
                             t == 1 && mode == BLOCKED && (layers[l].k == 1 || layers[l].h == 7));
    return 0;
}
