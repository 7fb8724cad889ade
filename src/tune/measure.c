/*
 * Building and timing candidates (tune.h, "measuring").
 *
 * The C compiler dominates the cost of a trial, so a batch is compiled in
 * parallel: each candidate's source is generated on the calling thread
 * (tex_build for target "c" with the same options: the same source as
 * "cpu"), compiled on worker threads straight into the kernel cache
 * (texi_cpu_jit_load is thread-safe), and then built for the real target
 * one after the other, which finds the object in the cache. The workers
 * either run while the calling thread waits (texi_tune_build) or in the
 * background while it times other kernels (texi_tune_compile_start / join:
 * tune.c does that only on processors the kernels do not use).
 *
 * Timing: one run checks the outputs (poisoned with NaN bytes before it)
 * against the workload's reference; then the kernel runs until it has at
 * least MIN_RUNS runs and spent the time budget, or MAX_RUNS runs; the time
 * is their median.
 */
#include "tune/tune.h"

#include "backend_cpu/jit.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIN_RUNS 3
#define MAX_RUNS 15

bool texi_tune_lower(texi_tune_workload *w, texi_tune_candidate *c)
{
    tex_ctx *ctx = w->ctx;
    tex_schedule *s = tex_schedule_new(ctx, w->n_out, w->outputs);
    int rc = s ? tex_schedule_apply_text(s, c->text) : tex_errcode(ctx);
    c->func = rc == 0 ? tex_lower_tensors(s, "tuned", w->n_params, w->params) : NULL;
    if (!c->func) {
        snprintf(c->why, sizeof c->why, "%s", tex_errmsg(ctx));
        c->ms = -1;
    }
    texi_clear_error(ctx);
    return c->func != NULL;
}

/* One source for a compile worker. */
typedef struct {
    const char *source;
    bool strict_float;
} compile_job;

typedef struct {
    compile_job *jobs;
    int n;
    int next; /* the next job to take, under lock */
    pthread_mutex_t lock;
} compile_queue;

static void *compile_worker(void *arg)
{
    compile_queue *q = arg;
    for (;;) {
        pthread_mutex_lock(&q->lock);
        int i = q->next < q->n ? q->next++ : -1;
        pthread_mutex_unlock(&q->lock);
        if (i < 0)
            return NULL;
        void *handle = NULL;
        char err[256];
        if (texi_cpu_jit_load(q->jobs[i].source, q->jobs[i].strict_float, &handle, err,
                              sizeof err) == 0)
            dlclose(handle);
    }
}

/* The "c" target with target's options ("cpu -threads=2" -> "c -threads=2"). */
static void c_target(const char *target, char *out, size_t cap)
{
    const char *opts = strchr(target, ' ');
    snprintf(out, cap, "c%s", opts ? opts : "");
}

/* Compiles running in the background (texi_tune_compile_start). */
struct texi_tune_compiles {
    compile_queue q;
    tex_kernel **src; /* the "c" builds whose sources the jobs point into */
    int n_src;
    pthread_t th[16];
    int started;
};

texi_tune_compiles *texi_tune_compile_start(texi_tune_candidate *c, int n, const char *target,
                                            int threads)
{
    char ct[256];
    c_target(target, ct, sizeof ct);
    texi_tune_compiles *h = calloc(1, sizeof *h);
    compile_job *work = calloc((size_t)n + 1, sizeof *work);
    tex_kernel **src = calloc((size_t)n + 1, sizeof *src);
    if (!h || !work || !src) {
        free(h);
        free(work);
        free(src);
        return NULL; /* each candidate then compiles when it is built */
    }
    h->q = (compile_queue){work, 0, 0, PTHREAD_MUTEX_INITIALIZER};
    h->src = src;
    h->n_src = n;
    for (int i = 0; i < n; i++) {
        if (!c[i].func || !(src[i] = tex_build(c[i].func, ct)))
            continue;
        work[h->q.n++] =
            (compile_job){tex_kernel_source(src[i]), strstr(target, "-strict-float") != NULL};
    }
    for (int t = 0; t < threads && t < 16 && t < h->q.n; t++)
        h->started += pthread_create(&h->th[h->started], NULL, compile_worker, &h->q) == 0;
    return h;
}

void texi_tune_compile_join(texi_tune_compiles *h)
{
    if (!h)
        return;
    compile_worker(&h->q); /* what no thread has taken yet (all of it if none started) */
    for (int t = 0; t < h->started; t++)
        pthread_join(h->th[t], NULL);
    for (int i = 0; i < h->n_src; i++)
        tex_kernel_free(h->src[i]);
    free(h->src);
    free(h->q.jobs);
    free(h);
}

void texi_tune_build(tex_ctx *ctx, texi_tune_candidate *c, int n, const char *target, int jobs)
{
    if (jobs > 1 && texi_tune_target_is_cpu(target)) /* the calling thread is one of the jobs */
        texi_tune_compile_join(texi_tune_compile_start(c, n, target, jobs - 1));
    for (int i = 0; i < n; i++) {
        if (!c[i].func)
            continue;
        c[i].kernel = tex_build(c[i].func, target);
        if (!c[i].kernel) {
            snprintf(c[i].why, sizeof c[i].why, "%s", tex_errmsg(ctx));
            c[i].ms = -1;
        }
        texi_clear_error(ctx);
    }
}

double texi_tune_now_ms(void)
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

double texi_tune_median(double *ms, int n)
{
    qsort(ms, (size_t)n, sizeof ms[0], cmp_double);
    return ms[n / 2];
}

void texi_tune_time(texi_tune_workload *w, texi_tune_candidate *c, double budget_ms)
{
    if (!c->kernel)
        return;
    int rc = texi_tune_run(w, c->kernel, true);
    if (rc != 0 || !texi_tune_outputs_match(w, c->why, sizeof c->why)) {
        if (rc != 0)
            snprintf(c->why, sizeof c->why, "%s", tex_kernel_errmsg(c->kernel));
        c->ms = -1;
        return;
    }
    double times[MAX_RUNS], start = texi_tune_now_ms();
    int runs = 0;
    while (runs < MAX_RUNS && (runs < MIN_RUNS || texi_tune_now_ms() - start < budget_ms)) {
        double t0 = texi_tune_now_ms();
        tex_kernel_call_tensors(c->kernel, w->n_params, w->run); /* synchronous on CUDA too */
        times[runs++] = texi_tune_now_ms() - t0;
    }
    c->ms = texi_tune_median(times, runs);
}
