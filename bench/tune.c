/*
 * bench/tune: what tex_tune (docs/tuning.md) gains over the automatic
 * schedule, on 2 threads, with the tuning time.
 *
 * Cases (each tuned with a budget of $TEX_BENCH_TUNE_SECONDS, default 60 s,
 * from an empty log; the goal allows 10 minutes):
 *   gemm1024     C = A . B, 1024^3                 anchors default, openblas
 *   conv256      conv2d 1x256x14x14, 256 filters 3x3, padding 1, NCHWc
 *                (tex's preferred layout, as in
 *                bench/conv2d)                     anchors default, onednn
 *   softmax      softmax over the rows of 4096x1024 anchors default, bandwidth
 *   mlp          Y = gelu(X . W1 + b1) . W2 + X, 512x768x3072
 *                                                  anchors default, openblas
 * anchor=default is the automatic schedule (what tuning starts from);
 * openblas the same computation with cblas_sgemm for the GEMMs and OpenMP
 * loops for the rest; onednn oneDNN's convolution in its preferred blocked
 * layouts (bench/onednn_conv.h; its output is checked against the default
 * schedule's first); bandwidth a parallel copy of the same bytes (the
 * least any softmax can take). Each line's tex side is the tuned kernel,
 * timed interleaved with the anchor (bench/common.h); the tuner's own
 * numbers (seconds, trials, the trial that found the best) follow on a line
 * starting with "  tuned:". Results are checked against the default
 * schedule's (relative error <= 1e-3) before anything is timed.
 *
 * Then the search itself: gemm512 tuned for SEARCH_TRIALS trials with the
 * cost model and with random search (same seed, same budget); the line
 * bench=tune_search times the schedules the two returned, interleaved
 * (tex_ms: model, anchor: random), and reports trials_to_match, the trial
 * at which the model's search first measured a time at least as good as
 * random search's best measured time.
 *
 * usage: tune [CASE]   every case, or only those whose name contains CASE
 */
#include "common.h"
#include "onednn_conv.h"
#include "openblas.h"

#include <omp.h>
#include <string.h>
#include <tex/tex.h>
#include <unistd.h>

enum { THREADS = 2, SEARCH_TRIALS = 40, MAX_ARGS = 8 };

typedef struct {
    tex_ctx *ctx;
    int n_args;
    tex_tensor *t[MAX_ARGS]; /* inputs, then the output */
    DLTensor *a[MAX_ARGS];
    DLTensor *tuned_out, *default_out;
    tex_kernel *tuned, *dflt;
    const char *name;
    float scale[MAX_ARGS]; /* an input's random values times this (0: 1) */
    onednn_conv dnn;       /* the onednn anchor's convolution (conv256) */
} tune_case;

static const char TARGET[] = "cpu -threads=2";

static double budget_s(void)
{
    const char *e = getenv("TEX_BENCH_TUNE_SECONDS");
    double s = e ? atof(e) : 0;
    return s > 0 ? s : 60;
}

/* ------------------------------------------------------------ workloads */

static void add(tune_case *c, tex_tensor *t)
{
    c->t[c->n_args++] = t;
}

static tex_tensor *input(tune_case *c, const char *name, int ndim, const int64_t *shape)
{
    tex_tensor *t = tex_placeholder_c(c->ctx, name, TEX_F32, ndim, shape);
    add(c, t);
    return t;
}

static void gemm(tune_case *c, int64_t n)
{
    tex_tensor *A = input(c, "A", 2, (int64_t[]){n, n}), *B = input(c, "B", 2, (int64_t[]){n, n});
    add(c, tex_op_matmul(c->ctx, "C", A, B, 0, 0));
}

static void gemm1024(tune_case *c)
{
    gemm(c, 1024);
}

static const onednn_conv_shape CONV = {256, 14, 14, 256, 3, 1};

/* The channel block of conv's NCHWc layout, and its filter block: the CPU
 * GEMM built-in's columns. */
enum { CONV_CB = 64 };

static int64_t conv_fb(void)
{
    return __builtin_cpu_supports("avx512f") ? 64 : 16;
}

/* In tex's preferred layouts, as bench/conv2d: X [1, C / CB, H, W, CB], W
 * [F / FB, C / CB, KH, KW, CB, FB], Y [1, F / FB, H, W, FB] (NCHWc). */
static void conv(tune_case *c)
{
    int64_t fb = conv_fb();
    tex_tensor *X = input(c, "X", 5, (int64_t[]){1, CONV.c / CONV_CB, CONV.h, CONV.w, CONV_CB});
    tex_tensor *W =
        input(c, "W", 6, (int64_t[]){CONV.f / fb, CONV.c / CONV_CB, CONV.k, CONV.k, CONV_CB, fb});
    const int64_t pad[2] = {CONV.pad, CONV.pad};
    add(c, tex_op_conv2d(c->ctx, "Y", X, W, NULL, pad, NULL, 1, TEX_LAYOUT_NCHWC));
}

static void softmax(tune_case *c)
{
    add(c, tex_op_softmax(c->ctx, "Y", input(c, "X", 2, (int64_t[]){4096, 1024}), 1));
}

enum { MLP_M = 512, MLP_D = 768, MLP_H = 3072 };

static void mlp(tune_case *c)
{
    tex_ctx *x = c->ctx;
    tex_tensor *X = input(c, "X", 2, (int64_t[]){MLP_M, MLP_D});
    tex_tensor *W1 = input(c, "W1", 2, (int64_t[]){MLP_D, MLP_H});
    tex_tensor *b1 = input(c, "b1", 1, (int64_t[]){MLP_H});
    tex_tensor *W2 = input(c, "W2", 2, (int64_t[]){MLP_H, MLP_D});
    c->scale[1] = 1.0f / 28; /* about 1 / sqrt(D), as in bench/mlp: gelu's inputs of a real */
    c->scale[3] = 1.0f / 55; /* layer, where libm's erff (the anchor's) is fast */
    tex_tensor *H =
        tex_op_gelu(x, "H", tex_op_add(x, "Hb", tex_op_matmul(x, "H0", X, W1, 0, 0), b1));
    add(c, tex_op_add(x, "Y", tex_op_matmul(x, "Y0", H, W2, 0, 0), X));
}

/* ------------------------------------------------------------ anchors */

static int run_tuned(void *arg)
{
    tune_case *c = arg;
    c->a[c->n_args - 1] = c->tuned_out;
    return tex_kernel_call_tensors(c->tuned, c->n_args, c->a);
}

static int run_default(void *arg)
{
    tune_case *c = arg;
    c->a[c->n_args - 1] = c->default_out;
    return tex_kernel_call_tensors(c->dflt, c->n_args, c->a);
}

static float *data(tune_case *c, int i)
{
    return c->a[i]->data;
}

static int run_blas_gemm(void *arg)
{
    tune_case *c = arg;
    int n = (int)c->a[0]->shape[0];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, data(c, 0), n, data(c, 1), n,
                0, c->default_out->data, n);
    return 0;
}

static float gelu(float v)
{
    return 0.5f * v * (1.0f + erff(v * 0.70710678f));
}

static int run_blas_mlp(void *arg)
{
    tune_case *c = arg;
    static float *h;
    if (!h && !(h = bench_floats((int64_t)MLP_M * MLP_H)))
        return -1;
    const float *x = data(c, 0), *b1 = data(c, 2);
    float *y = c->default_out->data;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, MLP_M, MLP_H, MLP_D, 1, x, MLP_D,
                data(c, 1), MLP_H, 0, h, MLP_H);
#pragma omp parallel for num_threads(THREADS)
    for (int i = 0; i < MLP_M; i++)
        for (int j = 0; j < MLP_H; j++)
            h[i * MLP_H + j] = gelu(h[i * MLP_H + j] + b1[j]);
    memcpy(y, x, sizeof *y * MLP_M * MLP_D);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, MLP_M, MLP_D, MLP_H, 1, h, MLP_H,
                data(c, 3), MLP_D, 1, y, MLP_D);
    return 0;
}

/* The onednn anchor of conv, given the same values in its plain NCHW input
 * and OIHW weights: set up, run once and checked against the default
 * schedule's output; 0 or -1. */
static int setup_onednn_conv(tune_case *c)
{
    int64_t hw = CONV.h * CONV.w, kk = CONV.k * CONV.k, fb = conv_fb(), cb = CONV_CB;
    float *x = malloc(sizeof(float) * (size_t)(hw * CONV.c));
    float *w = malloc(sizeof(float) * (size_t)(kk * CONV.c * CONV.f));
    float *got = malloc(sizeof(float) * (size_t)(CONV.f * hw));
    float *got_tex = malloc(sizeof(float) * (size_t)(CONV.f * hw));
    const float *tx = data(c, 0), *tw = data(c, 1);
    int rc = -1;
    if (x && w && got && got_tex) {
        for (int64_t ch = 0; ch < CONV.c; ch++) /* NCHWc -> NCHW */
            for (int64_t p = 0; p < hw; p++)
                x[ch * hw + p] = tx[nchwc_at(ch, p, hw, cb)];
        for (int64_t f = 0; f < CONV.f; f++) /* [F/FB][C/CB][KH KW][CB][FB] -> OIHW */
            for (int64_t ch = 0; ch < CONV.c; ch++)
                for (int64_t r = 0; r < kk; r++)
                    w[(f * CONV.c + ch) * kk + r] =
                        tw[nchwc_weight_at(f, ch, r, CONV.c, kk, cb, fb)];
        rc = onednn_conv_setup(&c->dnn, CONV, x, w) == 0 && onednn_conv_run(&c->dnn) == 0 &&
                     onednn_conv_result(&c->dnn, got) == 0
                 ? 0
                 : -1;
    }
    if (rc == 0) {
        for (int64_t f = 0; f < CONV.f; f++) /* NCHW -> NCHWc */
            for (int64_t p = 0; p < hw; p++)
                got_tex[nchwc_at(f, p, hw, fb)] = got[f * hw + p];
        bench_check_close("tune", "conv256/onednn", got_tex, c->default_out->data, CONV.f * hw,
                          1e-3);
    }
    free(x);
    free(w);
    free(got);
    free(got_tex);
    return rc;
}

static int run_onednn_conv(void *arg)
{
    return onednn_conv_run(&((tune_case *)arg)->dnn);
}

static int run_copy(void *arg)
{
    tune_case *c = arg;
    const float *x = data(c, 0);
    float *y = c->default_out->data;
#pragma omp parallel for num_threads(THREADS)
    for (int i = 0; i < 4096; i++)
        memcpy(y + i * 1024, x + i * 1024, sizeof *y * 1024);
    return 0;
}

/* ------------------------------------------------------------ the cases */

/* Lowers and builds s for c's arguments; NULL on failure. */
static tex_kernel *build(tune_case *c, tex_schedule *s)
{
    tex_func *f = s ? tex_lower_tensors(s, c->name, c->n_args, c->t) : NULL;
    return f ? tex_build(f, TARGET) : NULL;
}

/* Arrays for c's tensors (inputs random) and both output arrays. */
static void alloc_arrays(tune_case *c)
{
    DLDevice cpu = {kDLCPU, 0};
    for (int i = 0; i < c->n_args; i++) {
        tex_tensor *t = c->t[i];
        int64_t shape[8]; /* conv's weights have 6 dims */
        for (int d = 0; d < tex_tensor_ndim(t); d++)
            tex_expr_const_int(tex_tensor_dim(t, d), &shape[d]);
        c->a[i] = tex_array_new(tex_tensor_ndim(t), shape, TEX_F32, cpu);
        int64_t n = 1;
        for (int d = 0; d < tex_tensor_ndim(t); d++)
            n *= shape[d];
        if (i + 1 < c->n_args) {
            float *v = c->a[i]->data;
            bench_fill_random(v, n, (uint64_t)i + 1);
            for (int64_t k = 0; c->scale[i] != 0 && k < n; k++)
                v[k] *= c->scale[i];
        } else {
            c->tuned_out = c->a[i];
            c->default_out = tex_array_new(tex_tensor_ndim(t), shape, TEX_F32, cpu);
        }
    }
}

static int64_t out_elements(const tune_case *c)
{
    int64_t n = 1;
    for (int d = 0; d < c->tuned_out->ndim; d++)
        n *= c->tuned_out->shape[d];
    return n;
}

/* Frees what c holds. */
static void release(tune_case *c)
{
    tex_kernel_free(c->tuned);
    tex_kernel_free(c->dflt);
    for (int i = 0; i + 1 < c->n_args; i++)
        tex_array_free(c->a[i]);
    tex_array_free(c->tuned_out); /* c->a's last slot holds either output */
    tex_array_free(c->default_out);
    onednn_conv_release(&c->dnn);
    tex_ctx_free(c->ctx);
}

/* Tunes, checks and times case `name` against the default schedule and
 * anchor_fn (none when NULL), which setup (when not NULL) prepares. */
static void run_case(const char *name, void (*define)(tune_case *), const char *anchor,
                     int (*anchor_fn)(void *), int (*setup)(tune_case *))
{
    tune_case c = {.ctx = tex_ctx_new(), .name = "k"};
    char desc[64];
    snprintf(desc, sizeof desc, "%s/t%d", name, THREADS);
    define(&c);
    alloc_arrays(&c);
    tex_tune_stats st;
    tex_tune_options o = {.time_budget_s = budget_s(), .max_trials = 1000, .stats = &st};
    tex_schedule *best = NULL;
    if (tex_tune(c.ctx, 1, &c.t[c.n_args - 1], TARGET, &o, &best) != 0)
        bench_fail("tune", desc, "tex_tune_failed");
    c.tuned = build(&c, best);
    c.dflt = build(&c, tex_auto_schedule(c.ctx, 1, &c.t[c.n_args - 1], TARGET));
    if (!c.tuned || !c.dflt)
        bench_fail("tune", desc, "build_failed");
    if (run_tuned(&c) || run_default(&c))
        bench_fail("tune", desc, "run_failed");
    bench_check_close("tune", desc, c.tuned_out->data, c.default_out->data, out_elements(&c), 1e-3);
    bench_compare("tune", desc, (bench_run){run_tuned, &c, NULL}, "default",
                  (bench_run){run_default, &c, NULL}, 300);
    if (setup && setup(&c) != 0)
        bench_fail("tune", desc, "anchor_setup_failed");
    if (anchor_fn)
        bench_compare("tune", desc, (bench_run){run_tuned, &c, NULL}, anchor,
                      (bench_run){anchor_fn, &c, NULL}, 300);
    printf("  tuned: %s seconds=%.1f trials=%d best_trial=%d rejected=%d base_ms=%.3f "
           "best_ms=%.3f checked_by=%s oracle_points=%d\n",
           desc, st.seconds, st.trials, st.best_trial, st.rejected, st.base_ms, st.best_ms,
           st.oracle_checked ? "oracle" : "default_schedule", st.oracle_points);
    fflush(stdout);
    release(&c);
}

/* The times of the log's trials, in order (failed ones as INFINITY; the
 * chosen line, what tex_tune returned, is not a trial). */
static int log_times(const char *path, double *ms, int cap)
{
    FILE *fp = fopen(path, "r");
    char line[1 << 14];
    int n = 0;
    while (fp && n < cap && fgets(line, sizeof line, fp)) {
        char *f = line;
        for (int k = 0; k < 3 && f; k++)
            f = strchr(f, '\t') ? strchr(f, '\t') + 1 : NULL;
        if (f && strncmp(f, "chosen:", 7) == 0)
            continue;
        ms[n++] = f && strncmp(f, "failed", 6) != 0 ? atof(f) : INFINITY;
    }
    if (fp)
        fclose(fp);
    return n;
}

/* The model's search against random search on gemm512, same trial budget:
 * the two results timed interleaved (c.tuned: the model's, c.dflt: random
 * search's), and the model's trial that first matched random search's best. */
static void compare_searches(void)
{
    char dir[] = "/tmp/tex-bench-tune-XXXXXX", logs[2][64], desc[64];
    if (!mkdtemp(dir))
        return;
    snprintf(desc, sizeof desc, "gemm512/t%d/%d_trials", THREADS, SEARCH_TRIALS);
    tune_case c = {.ctx = tex_ctx_new(), .name = "k"};
    gemm(&c, 512);
    alloc_arrays(&c);
    for (int s = 0; s < 2; s++) {
        snprintf(logs[s], sizeof logs[s], "%s/%d.log", dir, s);
        tex_tune_options o = {.time_budget_s = 600,
                              .max_trials = SEARCH_TRIALS,
                              .log_path = logs[s],
                              .search = s ? TEX_TUNE_RANDOM : TEX_TUNE_MODEL};
        tex_schedule *b = NULL;
        if (tex_tune(c.ctx, 1, &c.t[c.n_args - 1], TARGET, &o, &b) != 0)
            bench_fail("tune_search", desc, "tex_tune_failed");
        *(s ? &c.dflt : &c.tuned) = build(&c, b);
    }
    bench_stats st[2];
    if (!c.tuned || !c.dflt ||
        bench_interleave(2, (bench_run[]){{run_tuned, &c, NULL}, {run_default, &c, NULL}}, 300,
                         st) != 0)
        bench_fail("tune_search", desc, "run_failed");
    double times[SEARCH_TRIALS + 8], random_best = INFINITY;
    for (int i = 0, n = log_times(logs[1], times, SEARCH_TRIALS + 8); i < n; i++)
        random_best = times[i] < random_best ? times[i] : random_best;
    int n = log_times(logs[0], times, SEARCH_TRIALS + 8), match = 0;
    for (int i = 0; i < n && !match; i++)
        match = times[i] <= random_best ? i + 1 : 0;
    printf("bench=tune_search case=%s tex_ms=%.3f anchor=random_search anchor_ms=%.3f "
           "speedup=%.3g trials_to_match=%d\n",
           desc, st[0].median, st[1].median, st[1].median / st[0].median, match);
    release(&c);
    unlink(logs[0]);
    unlink(logs[1]);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    fix_openblas_core("tune", argv);
    openblas_set_num_threads(THREADS);
    static const struct {
        const char *name;
        void (*define)(tune_case *);
        const char *anchor;
        int (*anchor_fn)(void *);
        int (*setup)(tune_case *);
    } cases[] = {{"gemm1024", gemm1024, "openblas", run_blas_gemm, NULL},
                 {"conv256", conv, "onednn", run_onednn_conv, setup_onednn_conv},
                 {"softmax4096x1024", softmax, "bandwidth", run_copy, NULL},
                 {"mlp512x768x3072", mlp, "openblas", run_blas_mlp, NULL}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!only || strstr(cases[i].name, only))
            run_case(cases[i].name, cases[i].define, cases[i].anchor, cases[i].anchor_fn,
                     cases[i].setup);
    }
    if (!only || strstr("tune_search", only))
        compare_searches();
    return 0;
}
