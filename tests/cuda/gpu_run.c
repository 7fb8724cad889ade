/*
 * gpu_run: the GPU cases of tests/support/gpu_cases.h on a real GPU
 * (tests/cuda/run_on_gpu.sh builds and runs it; public API only).
 *
 * For each case (all, or those named on the command line), with constant
 * and with symbolic sizes (the latter named NAME.sym), at GC_LARGE sizes:
 * build for "cuda", fill host inputs (gc_fill), copy them to device arrays
 * (tex_array_new on {kDLCUDA, 0}, tex_array_copy), poison the outputs, run
 * once (warm-up), then $GPU_RUN_REPS times (default 10) timing each call
 * with clock_gettime around tex_kernel_call_tensors (which synchronizes),
 * copy the outputs back and compare them with the oracle
 * (tex_eval_reference on the host copies; computed once per case, its
 * outputs reused for the symbolic variant). One line per case:
 *     case=NAME status=ok|FAIL max_rel_err=E ms=T
 * (T the median), followed by the reason of a failure ("  reason: ...").
 * Exit status: 0 when every case passed, 1 when one failed, 77 when there is
 * no usable CUDA driver (tex_target_available("cuda") == 0).
 *
 * GPU_RUN_TARGET=cpu runs the same flow on the CPU backend with host
 * arrays (a check of this program on machines without a GPU; sizes: set
 * GPU_RUN_SMALL=1 for the small ones).
 */
#include "support/gpu_cases.h"

#include <stdlib.h>
#include <time.h>

typedef struct {
    const char *target;
    DLDevice dev;
    int reps;
    gc_scale scale;
} run_cfg;

/* Host and device arrays of one case. */
typedef struct {
    DLTensor *host[GC_MAX_TENSORS], *dev[GC_MAX_TENSORS], *ref[GC_MAX_TENSORS];
} run_arrays;

/* The oracle's outputs of a case, computed once for its constant and
 * symbolic variants (same sizes, same inputs). */
typedef struct {
    DLTensor *out[GC_MAX_TENSORS];
} oracle_cache;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void free_arrays(const gc_case *c, run_arrays *ra, const oracle_cache *oc)
{
    for (int t = 0; t < c->n; t++) {
        if (ra->dev[t] != ra->host[t])
            tex_array_free(ra->dev[t]);
        if (ra->ref[t] != ra->host[t] && ra->ref[t] != oc->out[t])
            tex_array_free(ra->ref[t]);
        tex_array_free(ra->host[t]);
    }
}

/* Allocates and fills the arrays; inputs copied to the device, outputs
 * poisoned there. 0, or -1 with the reason in why. */
static int setup_arrays(const gc_case *c, const run_cfg *cfg, run_arrays *ra, char *why, size_t n)
{
    DLDevice cpu = {kDLCPU, 0};
    bool on_host = cfg->dev.device_type == kDLCPU;
    for (int t = 0; t < c->n; t++) {
        bool in = t < c->n_in;
        ra->host[t] = gc_array(c, t, cpu);
        ra->dev[t] = on_host ? ra->host[t] : gc_array(c, t, cfg->dev);
        ra->ref[t] = in ? ra->host[t] : gc_array(c, t, cpu);
        if (!ra->host[t] || !ra->dev[t] || !ra->ref[t]) {
            snprintf(why, n, "tex_array_new failed for '%s'", tex_tensor_name(c->tensors[t]));
            return -1;
        }
        if (in) {
            gc_fill(ra->host[t], (uint64_t)t + 1);
        } else {
            gc_poison(ra->host[t]);
            gc_poison(ra->ref[t]);
        }
        int rc = on_host ? 0 : tex_array_copy(ra->dev[t], ra->host[t]);
        if (rc != 0) {
            snprintf(why, n, "tex_array_copy to the device (%d): %s", rc, tex_errmsg(c->ctx));
            return -1;
        }
    }
    return 0;
}

/* Warm-up, then cfg->reps timed calls; the median in *ms. 0 or -1 (why). */
static int time_calls(tex_kernel *k, const gc_case *c, const run_cfg *cfg, run_arrays *ra,
                      double *ms, char *why, size_t n)
{
    double *t = malloc(sizeof *t * (size_t)cfg->reps);
    if (!t) {
        snprintf(why, n, "out of memory");
        return -1;
    }
    for (int r = -1; r < cfg->reps; r++) {
        double t0 = now_ms();
        int rc = tex_kernel_call_tensors(k, c->n, ra->dev);
        double t1 = now_ms();
        if (rc != 0) {
            snprintf(why, n, "tex_kernel_call (%d): %s", rc, tex_kernel_errmsg(k));
            free(t);
            return -1;
        }
        if (r >= 0)
            t[r] = t1 - t0;
    }
    qsort(t, (size_t)cfg->reps, sizeof *t, cmp_double);
    *ms = t[cfg->reps / 2];
    free(t);
    return 0;
}

/* Copies the outputs back, runs the oracle (or takes its cached outputs),
 * compares: the worst error in *err. 0, or -1 with the reason in why. */
static int check_outputs(const gc_case *c, run_arrays *ra, oracle_cache *oc, double *err, char *why,
                         size_t n)
{
    for (int t = c->n_in; t < c->n; t++) {
        int rc = ra->dev[t] == ra->host[t] ? 0 : tex_array_copy(ra->host[t], ra->dev[t]);
        if (rc != 0) {
            snprintf(why, n, "tex_array_copy from the device (%d): %s", rc, tex_errmsg(c->ctx));
            return -1;
        }
    }
    if (oc->out[c->n_in]) {
        for (int t = c->n_in; t < c->n; t++) {
            tex_array_free(ra->ref[t]);
            ra->ref[t] = oc->out[t];
        }
    } else if (tex_eval_reference(c->ctx, c->n, c->tensors, ra->ref) != 0) {
        snprintf(why, n, "oracle: %s", tex_errmsg(c->ctx));
        return -1;
    } else {
        for (int t = c->n_in; t < c->n; t++)
            oc->out[t] = ra->ref[t];
    }
    *err = 0;
    for (int t = c->n_in; t < c->n; t++) {
        int64_t at;
        double e = gc_max_rel_err(ra->host[t], ra->ref[t], &at);
        if (e > *err) {
            *err = e;
            snprintf(why, n, "output '%s' at flat index %lld: %.9g, oracle %.9g",
                     tex_tensor_name(c->tensors[t]), (long long)at,
                     ((float *)ra->host[t]->data)[at], ((float *)ra->ref[t]->data)[at]);
        }
    }
    return 0;
}

/* Runs one case; prints its line. 0 ok, 1 failed. */
static int run_case(gc_id id, bool symbolic, const run_cfg *cfg, oracle_cache *oc)
{
    char name[64], why[4096] = "";
    snprintf(name, sizeof name, "%s%s", gc_names[id], symbolic ? ".sym" : "");
    tex_ctx *ctx = tex_ctx_new();
    int64_t sizes[GC_MAX_SIZES];
    gc_default_sizes(id, cfg->scale, sizes);
    gc_case c;
    memset(&c, 0, sizeof c);
    run_arrays ra = {{0}, {0}, {0}};
    tex_kernel *k = NULL;
    double ms = 0, err = INFINITY;
    int failed = 1;
    if (!ctx || gc_build(ctx, id, sizes, symbolic, &c) != 0) {
        snprintf(why, sizeof why, "%s", ctx ? c.why : "tex_ctx_new failed");
        goto report;
    }
    k = tex_build(c.f, cfg->target);
    if (!k) {
        snprintf(why, sizeof why, "tex_build(\"%s\") (%d): %s", cfg->target, tex_errcode(ctx),
                 tex_errmsg(ctx));
        goto report;
    }
    if (setup_arrays(&c, cfg, &ra, why, sizeof why) != 0 ||
        time_calls(k, &c, cfg, &ra, &ms, why, sizeof why) != 0 ||
        check_outputs(&c, &ra, oc, &err, why, sizeof why) != 0)
        goto report;
    failed = !(err <= c.tol);
report:
    printf("case=%s status=%s max_rel_err=%.3g ms=%.4f\n", name, failed ? "FAIL" : "ok", err, ms);
    if (failed)
        printf("  reason: %s\n", why);
    fflush(stdout);
    free_arrays(&c, &ra, oc);
    tex_kernel_free(k);
    tex_ctx_free(ctx);
    return failed;
}

int main(int argc, char **argv)
{
    const char *tgt = getenv("GPU_RUN_TARGET"), *reps = getenv("GPU_RUN_REPS");
    bool cpu = tgt && strcmp(tgt, "cpu") == 0;
    run_cfg cfg = {cpu ? "cpu" : "cuda",
                   {cpu ? kDLCPU : kDLCUDA, 0},
                   reps && atoi(reps) > 0 ? atoi(reps) : 10,
                   getenv("GPU_RUN_SMALL") ? GC_SMALL : GC_LARGE};
    if (!tex_target_available(cfg.target)) {
        printf("gpu_run: target \"%s\" is not available (no CUDA driver or no GPU): "
               "skipped\n",
               cfg.target);
        return 77;
    }
    int failed = 0, ran = 0;
    for (int id = 0; id < GC_N_CASES; id++) {
        bool wanted = argc < 2;
        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], gc_names[id]) == 0;
        oracle_cache oc = {{0}};
        for (int sym = 0; wanted && sym < 2; sym++, ran++)
            failed += run_case((gc_id)id, sym, &cfg, &oc);
        for (int t = 0; t < GC_MAX_TENSORS; t++)
            tex_array_free(oc.out[t]);
    }
    if (!ran) {
        fprintf(stderr, "gpu_run: no case matches; cases:");
        for (int id = 0; id < GC_N_CASES; id++)
            fprintf(stderr, " %s", gc_names[id]);
        fprintf(stderr, "\n");
        return 2;
    }
    printf("gpu_run: %d cases, %d failed\n", ran, failed);
    return failed ? 1 : 0;
}
