/*
 * bench/conv2d: f32 2-D convolutions of ResNet-50, batch 1, tex against
 * oneDNN (Debian libdnnl-dev, its C API) on the same thread count.
 *
 * Layers (stride 1; the 3x3 ones with padding 1 and as many filters as
 * channels), each on 1 and 2 threads, one line per case (bench/common.h's
 * format, anchor=onednn), e.g. `case=c64h56w56k64r3/t2`:
 *   c64h56w56k64r3  c128h28w28k128r3  c256h14w14k256r3  c512h7w7k512r3
 *   c256h56w56k64r1 (256 channels to 64 filters, 1x1, no padding)
 *
 * Each side gets its preferred layouts, arranged outside the timed region:
 * oneDNN's convolution is created with format_tag::any for src, weights and
 * dst, so it picks its blocked layouts, and the plain NCHW input and OIHW
 * weights are reordered into them once; only the convolution's execution is
 * timed. tex takes the input in NHWC and the weights in HWCF ([KH, KW, C, F],
 * which is the [KH * KW * C, F] matrix of an implicit GEMM) and writes NHWC;
 * its padding (a tex_op_pad stage) runs inside the timed kernel.
 *
 * tex's kernel is tex_op_conv2d (NHWC) with the hand schedule of
 * conv_schedule (the one function an automatic schedule would replace),
 * which tensorizes the convolution with the CPU GEMM built-in as a direct
 * implicit GEMM: a 6-pixel x NR-filter output tile (6 consecutive x of one
 * row) is C, the input's 6 x C block at (y + ry, x + rx) is A (rows stride
 * C), the weights' C x NR block at (ry, rx) is B (rows stride F); the
 * channel axis is the built-in's depth (64 to 512: docs/api.md, rule 10).
 *
 * Before timing, tex's output is compared with oneDNN's (reordered back to
 * plain NCHW; relative error <= 1e-3), and on the first 1x1 and 7x7 layers
 * with the oracle (tex_eval_reference of the same computes).
 *
 * usage: conv2d          every layer
 *        conv2d S        only the layers whose name contains S
 */
#include "common.h"

#include <oneapi/dnnl/dnnl.h>
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

typedef struct {
    const conv_layer *L;
    int threads;
    int64_t oh, ow;
    tex_kernel *kernel;
    DLTensor *x, *w, *out;  /* tex's: NHWC input, HWCF weights, NHWC output */
    float *x_nchw, *w_oihw; /* the same values, plain, for oneDNN */
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_t conv;
    dnnl_memory_t src, wei, dst; /* in oneDNN's chosen layouts */
    float *want;                 /* oneDNN's output, NCHW */
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

/* Builds g->kernel (conv_plan's schedule) on g->threads threads; 0 or -1
 * (message printed). With `oracle`, also checks the kernel's output for
 * g's arrays against tex_eval_reference. */
static int conv_build(conv_case *g, bool manual, bool oracle)
{
    char target[64];
    snprintf(target, sizeof target, "cpu -threads=%d", g->threads);
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *x, *w, *pad;
    tex_tensor *out = conv_define(ctx, g->L, &x, &w, &pad);
    tex_schedule *s = out ? conv_plan(ctx, target, manual, pad, w, out) : NULL;
    tex_func *f = s ? tex_lower_tensors(s, "conv2d", 3, (tex_tensor *[]){x, w, out}) : NULL;
    g->kernel = f ? tex_build(f, target) : NULL;
    int rc = g->kernel ? 0 : -1;
    if (!g->kernel)
        fprintf(stderr, "conv2d: %s: %s\n", g->L->name, tex_errmsg(ctx));
    if (rc == 0 && oracle) {
        DLDevice cpu = {kDLCPU, 0};
        DLTensor *want = tex_array_new(4, g->out->shape, TEX_F32, cpu);
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

/* ---------------------------------------------------------------- oneDNN */

#define DNNL_OK(call) ((call) == dnnl_success)

/* A oneDNN memory of layout md with the contents of `plain` (layout
 * plain_md), reordered once; NULL on failure. */
static dnnl_memory_t dnnl_from_plain(conv_case *g, const dnnl_memory_desc_t *md,
                                     const dnnl_memory_desc_t *plain_md, float *plain)
{
    dnnl_memory_t m = NULL, p = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r = NULL;
    bool ok =
        DNNL_OK(dnnl_memory_create(&m, md, g->eng, DNNL_MEMORY_ALLOCATE)) &&
        DNNL_OK(dnnl_memory_create(&p, plain_md, g->eng, plain)) &&
        DNNL_OK(dnnl_reorder_primitive_desc_create(&rpd, plain_md, g->eng, md, g->eng, NULL)) &&
        DNNL_OK(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, p}, {DNNL_ARG_TO, m}};
    ok = ok && DNNL_OK(dnnl_primitive_execute(r, g->stream, 2, args)) &&
         DNNL_OK(dnnl_stream_wait(g->stream));
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(p);
    if (!ok) {
        dnnl_memory_destroy(m);
        return NULL;
    }
    return m;
}

/* oneDNN's convolution of g->L with format_tag::any everywhere, its inputs
 * reordered from the plain arrays; 0 or -1. */
static int dnnl_setup(conv_case *g)
{
    const conv_layer *L = g->L;
    dnnl_dims_t src_d = {1, L->c, L->h, L->w}, wei_d = {L->f, L->c, L->k, L->k};
    dnnl_dims_t dst_d = {1, L->f, g->oh, g->ow}, strides = {1, 1}, pad = {L->pad, L->pad};
    dnnl_memory_desc_t src_any, wei_any, dst_any, src_plain, wei_plain;
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    bool ok =
        DNNL_OK(dnnl_engine_create(&g->eng, dnnl_cpu, 0)) &&
        DNNL_OK(dnnl_stream_create(&g->stream, g->eng, dnnl_stream_default_flags)) &&
        DNNL_OK(dnnl_memory_desc_init_by_tag(&src_any, 4, src_d, dnnl_f32, dnnl_format_tag_any)) &&
        DNNL_OK(dnnl_memory_desc_init_by_tag(&wei_any, 4, wei_d, dnnl_f32, dnnl_format_tag_any)) &&
        DNNL_OK(dnnl_memory_desc_init_by_tag(&dst_any, 4, dst_d, dnnl_f32, dnnl_format_tag_any)) &&
        DNNL_OK(dnnl_memory_desc_init_by_tag(&src_plain, 4, src_d, dnnl_f32, dnnl_nchw)) &&
        DNNL_OK(dnnl_memory_desc_init_by_tag(&wei_plain, 4, wei_d, dnnl_f32, dnnl_oihw)) &&
        DNNL_OK(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                   dnnl_convolution_direct, &src_any, &wei_any,
                                                   NULL, &dst_any, strides, pad, pad)) &&
        DNNL_OK(dnnl_primitive_desc_create(&pd, &cd, NULL, g->eng, NULL)) &&
        DNNL_OK(dnnl_primitive_create(&g->conv, pd));
    if (ok) {
        const dnnl_memory_desc_t *dst_md = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
        g->src = dnnl_from_plain(g, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
                                 &src_plain, g->x_nchw);
        g->wei = dnnl_from_plain(g, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
                                 &wei_plain, g->w_oihw);
        ok = g->src && g->wei &&
             DNNL_OK(dnnl_memory_create(&g->dst, dst_md, g->eng, DNNL_MEMORY_ALLOCATE));
    }
    dnnl_primitive_desc_destroy(pd);
    return ok ? 0 : -1;
}

static int run_dnnl(void *arg)
{
    conv_case *g = arg;
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, g->src}, {DNNL_ARG_WEIGHTS, g->wei}, {DNNL_ARG_DST, g->dst}};
    return DNNL_OK(dnnl_primitive_execute(g->conv, g->stream, 3, args)) &&
                   DNNL_OK(dnnl_stream_wait(g->stream))
               ? 0
               : -1;
}

/* oneDNN's output reordered into g->want (plain NCHW); 0 or -1. */
static int dnnl_result(conv_case *g)
{
    const conv_layer *L = g->L;
    dnnl_dims_t dst_d = {1, L->f, g->oh, g->ow};
    dnnl_memory_desc_t plain_md;
    const dnnl_memory_desc_t *dst_md = NULL;
    dnnl_memory_t plain = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r = NULL;
    bool ok = DNNL_OK(dnnl_memory_desc_init_by_tag(&plain_md, 4, dst_d, dnnl_f32, dnnl_nchw)) &&
              DNNL_OK(dnnl_memory_get_memory_desc(g->dst, &dst_md)) &&
              DNNL_OK(dnnl_memory_create(&plain, &plain_md, g->eng, g->want)) &&
              DNNL_OK(dnnl_reorder_primitive_desc_create(&rpd, dst_md, g->eng, &plain_md, g->eng,
                                                         NULL)) &&
              DNNL_OK(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, g->dst}, {DNNL_ARG_TO, plain}};
    ok = ok && DNNL_OK(dnnl_primitive_execute(r, g->stream, 2, args)) &&
         DNNL_OK(dnnl_stream_wait(g->stream));
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(plain);
    return ok ? 0 : -1;
}

/* ------------------------------------------------------------------ cases */

/* Random plain input and weights, and tex's copies of them (NHWC, HWCF). */
static int conv_alloc(conv_case *g)
{
    const conv_layer *L = g->L;
    DLDevice cpu = {kDLCPU, 0};
    g->oh = L->h + 2 * L->pad - L->k + 1;
    g->ow = L->w + 2 * L->pad - L->k + 1;
    g->x = tex_array_new(4, (int64_t[]){1, L->h, L->w, L->c}, TEX_F32, cpu);
    g->w = tex_array_new(4, (int64_t[]){L->k, L->k, L->c, L->f}, TEX_F32, cpu);
    g->out = tex_array_new(4, (int64_t[]){1, g->oh, g->ow, L->f}, TEX_F32, cpu);
    g->x_nchw = malloc(sizeof(float) * (size_t)(L->c * L->h * L->w));
    g->w_oihw = malloc(sizeof(float) * (size_t)(L->f * L->c * L->k * L->k));
    g->want = malloc(sizeof(float) * (size_t)(L->f * g->oh * g->ow));
    if (!g->x || !g->w || !g->out || !g->x_nchw || !g->w_oihw || !g->want)
        return -1;
    bench_fill_random(g->x_nchw, L->c * L->h * L->w, 1);
    bench_fill_random(g->w_oihw, L->f * L->c * L->k * L->k, 2);
    float *x = g->x->data, *w = g->w->data;
    for (int64_t c = 0; c < L->c; c++)
        for (int64_t p = 0; p < L->h * L->w; p++)
            x[p * L->c + c] = g->x_nchw[c * L->h * L->w + p];
    for (int64_t f = 0; f < L->f; f++)
        for (int64_t c = 0; c < L->c; c++)
            for (int64_t r = 0; r < L->k * L->k; r++)
                w[(r * L->c + c) * L->f + f] = g->w_oihw[(f * L->c + c) * L->k * L->k + r];
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
    dnnl_primitive_destroy(g->conv);
    dnnl_memory_destroy(g->src);
    dnnl_memory_destroy(g->wei);
    dnnl_memory_destroy(g->dst);
    dnnl_stream_destroy(g->stream);
    dnnl_engine_destroy(g->eng);
}

/* tex's NHWC output transposed to NCHW, compared with oneDNN's (exits
 * through bench_fail on a mismatch). */
static void conv_check(conv_case *g, const char *desc)
{
    int64_t f = g->L->f, p = g->oh * g->ow;
    float *got = malloc(sizeof(float) * (size_t)(f * p)), *out = g->out->data;
    if (!got)
        bench_fail("conv2d", desc, "setup_failed");
    for (int64_t i = 0; i < p; i++)
        for (int64_t c = 0; c < f; c++)
            got[c * p + i] = out[i * f + c];
    bench_check_close("conv2d", desc, got, g->want, f * p, 1e-3);
    free(got);
}

/* Builds, checks and times layer L on `threads` threads; prints its line. */
static void conv_measure(const conv_layer *L, int threads, bool manual, bool oracle)
{
    char desc[64];
    snprintf(desc, sizeof desc, "%s/t%d%s", L->name, threads, manual ? "/manual" : "");
    conv_case g = {.L = L, .threads = threads};
    omp_set_num_threads(threads);
    if (conv_alloc(&g) != 0 || conv_build(&g, manual, oracle) != 0 || dnnl_setup(&g) != 0)
        bench_fail("conv2d", desc, "setup_failed");
    memset(g.out->data, 0xff, sizeof(float) * (size_t)(g.oh * g.ow * L->f)); /* NaN */
    if (run_tex(&g) != 0 || run_dnnl(&g) != 0 || dnnl_result(&g) != 0)
        bench_fail("conv2d", desc, "call_failed");
    conv_check(&g, desc);
    if (bench_compare("conv2d", desc, (bench_run){run_tex, &g, NULL}, "onednn",
                      (bench_run){run_dnnl, &g, NULL}, 1500) != 0)
        bench_fail("conv2d", desc, "call_failed");
    conv_release(&g);
}

int main(int argc, char **argv)
{
    for (int l = 0; l < N_LAYERS; l++)
        for (int t = 1; t <= 2 && (argc < 2 || strstr(layers[l].name, argv[1])); t++)
            for (int manual = 0; manual <= 1; manual++)
                conv_measure(&layers[l], t, manual,
                             t == 1 && !manual && (layers[l].k == 1 || layers[l].h == 7));
    return 0;
}
