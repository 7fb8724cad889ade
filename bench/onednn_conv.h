/*
 * onednn_conv.h: oneDNN's f32 2-D convolution (Debian libdnnl-dev, its C
 * API) as a benchmark anchor, shared by bench/conv2d and bench/tune.
 * Header-only; a benchmark that includes it links -ldnnl (Makefile).
 *
 * Batch 1, stride 1, the same padding on every side. The convolution is
 * created with format_tag::any for src, weights and dst, so oneDNN picks
 * its blocked layouts; the plain NCHW input and OIHW weights are reordered
 * into them once, at setup, outside any timed region: only the
 * convolution's execution (onednn_conv_run) is what a benchmark times.
 */
#ifndef TEX_BENCH_ONEDNN_CONV_H
#define TEX_BENCH_ONEDNN_CONV_H

#include <oneapi/dnnl/dnnl.h>
#include <stdbool.h>
#include <stdint.h>

/* Where tex's blocked layout (TEX_LAYOUT_NCHWC) keeps what oneDNN's plain
 * arrays hold: element (channel c, pixel p of P) of an NCHW tensor in
 * [C / cb, P, cb]; weight (filter f, channel c, window position r of kk)
 * of OIHW weights with C channels in [F / fb, C / cb, kk, cb, fb]. */
static inline int64_t nchwc_at(int64_t c, int64_t p, int64_t P, int64_t cb)
{
    return ((c / cb) * P + p) * cb + c % cb;
}

static inline int64_t nchwc_weight_at(int64_t f, int64_t c, int64_t r, int64_t C, int64_t kk,
                                      int64_t cb, int64_t fb)
{
    return (((f / fb) * (C / cb) + c / cb) * kk + r) * cb * fb + (c % cb) * fb + f % fb;
}

typedef struct {
    int64_t c, h, w, f, k, pad; /* channels, height, width, filters, kernel size, padding */
} onednn_conv_shape;

typedef struct {
    onednn_conv_shape sh;
    int64_t oh, ow; /* the output's height and width */
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_t conv;
    dnnl_memory_t src, wei, dst; /* in oneDNN's chosen layouts */
} onednn_conv;

#define DNNL_OK(call) ((call) == dnnl_success)

/* Reorders memory `from` (layout from_md) into `to` (layout to_md); 0 or -1. */
static inline int onednn_conv_reorder(onednn_conv *d, const dnnl_memory_desc_t *from_md,
                                      dnnl_memory_t from, const dnnl_memory_desc_t *to_md,
                                      dnnl_memory_t to)
{
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r = NULL;
    bool ok =
        DNNL_OK(dnnl_reorder_primitive_desc_create(&rpd, from_md, d->eng, to_md, d->eng, NULL)) &&
        DNNL_OK(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    ok = ok && DNNL_OK(dnnl_primitive_execute(r, d->stream, 2, args)) &&
         DNNL_OK(dnnl_stream_wait(d->stream));
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    return ok ? 0 : -1;
}

/* A oneDNN memory of layout md with the contents of `plain` (layout
 * plain_md), reordered once; NULL on failure. */
static inline dnnl_memory_t onednn_conv_from_plain(onednn_conv *d, const dnnl_memory_desc_t *md,
                                                   const dnnl_memory_desc_t *plain_md,
                                                   const float *plain)
{
    dnnl_memory_t m = NULL, p = NULL;
    bool ok = DNNL_OK(dnnl_memory_create(&m, md, d->eng, DNNL_MEMORY_ALLOCATE)) &&
              DNNL_OK(dnnl_memory_create(&p, plain_md, d->eng, (void *)(uintptr_t)plain)) &&
              onednn_conv_reorder(d, plain_md, p, md, m) == 0;
    dnnl_memory_destroy(p);
    if (!ok) {
        dnnl_memory_destroy(m);
        return NULL;
    }
    return m;
}

/* oneDNN's convolution of shape sh, its inputs reordered from x_nchw
 * [1, C, H, W] and w_oihw [F, C, K, K]; 0 or -1 (d is then released by
 * onednn_conv_release all the same). */
static inline int onednn_conv_setup(onednn_conv *d, onednn_conv_shape sh, const float *x_nchw,
                                    const float *w_oihw)
{
    *d = (onednn_conv){.sh = sh};
    d->oh = sh.h + 2 * sh.pad - sh.k + 1;
    d->ow = sh.w + 2 * sh.pad - sh.k + 1;
    dnnl_dims_t src_d = {1, sh.c, sh.h, sh.w}, wei_d = {sh.f, sh.c, sh.k, sh.k};
    dnnl_dims_t dst_d = {1, sh.f, d->oh, d->ow}, strides = {1, 1}, pad = {sh.pad, sh.pad};
    dnnl_memory_desc_t src_any, wei_any, dst_any, src_plain, wei_plain;
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    bool ok =
        DNNL_OK(dnnl_engine_create(&d->eng, dnnl_cpu, 0)) &&
        DNNL_OK(dnnl_stream_create(&d->stream, d->eng, dnnl_stream_default_flags)) &&
        DNNL_OK(dnnl_memory_desc_init_by_tag(&src_any, 4, src_d, dnnl_f32, dnnl_format_tag_any)) &&
        DNNL_OK(dnnl_memory_desc_init_by_tag(&wei_any, 4, wei_d, dnnl_f32, dnnl_format_tag_any)) &&
        DNNL_OK(dnnl_memory_desc_init_by_tag(&dst_any, 4, dst_d, dnnl_f32, dnnl_format_tag_any)) &&
        DNNL_OK(dnnl_memory_desc_init_by_tag(&src_plain, 4, src_d, dnnl_f32, dnnl_nchw)) &&
        DNNL_OK(dnnl_memory_desc_init_by_tag(&wei_plain, 4, wei_d, dnnl_f32, dnnl_oihw)) &&
        DNNL_OK(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                   dnnl_convolution_direct, &src_any, &wei_any,
                                                   NULL, &dst_any, strides, pad, pad)) &&
        DNNL_OK(dnnl_primitive_desc_create(&pd, &cd, NULL, d->eng, NULL)) &&
        DNNL_OK(dnnl_primitive_create(&d->conv, pd));
    if (ok) {
        const dnnl_memory_desc_t *dst_md = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
        d->src = onednn_conv_from_plain(d, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
                                        &src_plain, x_nchw);
        d->wei = onednn_conv_from_plain(
            d, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &wei_plain, w_oihw);
        ok = d->src && d->wei &&
             DNNL_OK(dnnl_memory_create(&d->dst, dst_md, d->eng, DNNL_MEMORY_ALLOCATE));
    }
    dnnl_primitive_desc_destroy(pd);
    return ok ? 0 : -1;
}

/* One execution of the convolution (arg: the onednn_conv); 0 or -1. */
static inline int onednn_conv_run(void *arg)
{
    onednn_conv *d = arg;
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, d->src}, {DNNL_ARG_WEIGHTS, d->wei}, {DNNL_ARG_DST, d->dst}};
    return DNNL_OK(dnnl_primitive_execute(d->conv, d->stream, 3, args)) &&
                   DNNL_OK(dnnl_stream_wait(d->stream))
               ? 0
               : -1;
}

/* The last run's output reordered into want, plain NCHW [1, F, OH, OW]; 0 or -1. */
static inline int onednn_conv_result(onednn_conv *d, float *want)
{
    dnnl_dims_t dst_d = {1, d->sh.f, d->oh, d->ow};
    dnnl_memory_desc_t plain_md;
    const dnnl_memory_desc_t *dst_md = NULL;
    dnnl_memory_t plain = NULL;
    bool ok = DNNL_OK(dnnl_memory_desc_init_by_tag(&plain_md, 4, dst_d, dnnl_f32, dnnl_nchw)) &&
              DNNL_OK(dnnl_memory_get_memory_desc(d->dst, &dst_md)) &&
              DNNL_OK(dnnl_memory_create(&plain, &plain_md, d->eng, want)) &&
              onednn_conv_reorder(d, dst_md, d->dst, &plain_md, plain) == 0;
    dnnl_memory_destroy(plain);
    return ok ? 0 : -1;
}

static inline void onednn_conv_release(onednn_conv *d)
{
    dnnl_primitive_destroy(d->conv);
    dnnl_memory_destroy(d->src);
    dnnl_memory_destroy(d->wei);
    dnnl_memory_destroy(d->dst);
    dnnl_stream_destroy(d->stream);
    dnnl_engine_destroy(d->eng);
    *d = (onednn_conv){.sh = d->sh};
}

#endif
