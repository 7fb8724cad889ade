/*
 * tex_tune: the search (docs/tuning.md).
 *
 *   1. The automatic schedule of the outputs is the base: its text defines
 *      the knobs (space.c); it is compiled, timed and its outputs are the
 *      reference when the oracle would take too long (workload.c).
 *   2. Each round proposes POOL mutants of the best measured settings (a
 *      parent is one of the TOP fastest, the fastest twice as often), drops
 *      those already tried, and keeps the ones whose text applies and
 *      lowers. With the cost model fitted (model.c, TEX_TUNE_MODEL) the
 *      batch is the mutants it predicts fastest plus one random one, to keep
 *      exploring; otherwise (TEX_TUNE_RANDOM, or too few measurements) a
 *      random batch.
 *   3. The batch is compiled in parallel, then each candidate is timed and
 *      checked (measure.c) and appended to the log. When the kernels leave
 *      processors free, the next batch is proposed before this one is
 *      timed and compiles on them meanwhile.
 * It stops at the trial or time budget, or after STALL rounds without a
 * new candidate.
 *   4. The finalists (the automatic schedule and the FINALISTS fastest
 *      settings) are timed again side by side (confirm): the fastest of
 *      hundreds of trials on a busy machine is often one that ran in a
 *      quiet moment (a conv's best trial of 0.85 ms ran at the automatic
 *      schedule's 1.17 ms when bench/tune timed the two interleaved).
 * The result is a fresh schedule with the winner's text applied, so it is
 * the automatic one when nothing beat it there; the winner is logged as
 * the chosen line that tex_auto_schedule reuses.
 */
#include "tune/tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char CALL[] = "tex_tune";

enum {
    POOL = 48,
    TOP = 4,
    STALL = 8,
    MAX_MEASURED = 4096,
    FINALISTS = 4,
    CONFIRM_ROUNDS_MIN = 5,
    CONFIRM_ROUNDS_MAX = 64
};

/* Every setting tried so far, its time (< 0: refused) and trial number. */
typedef struct {
    int n;
    texi_tune_point *points;
    double *ms;
    int *trial;
} tune_history;

typedef struct {
    texi_tune_workload w;
    texi_tune_space space;
    tune_history hist;
    tex_tune_options opt;
    const char *target;
    const char *log_path;
    uint64_t rng;
    texi_tune_model model;
    int best;   /* index in hist of the fastest */
    int trials; /* timed */
    int rejected;
    int best_trial;
    double base_ms;    /* the automatic schedule's time */
    char *auto_text;   /* the automatic schedule's text */
    char *chosen_text; /* confirm's winner */
    double chosen_ms;
    double start; /* texi_tune_now_ms at the call */
    int overlap;  /* threads compiling the next batch while one is timed; 0: none */
    const texi_tune_candidate *pending; /* built, not yet timed */
    int n_pending;
} tuner;

static bool tried(const tuner *t, const texi_tune_point *p)
{
    for (int i = 0; i < t->hist.n; i++)
        if (texi_tune_point_equal(&t->space, &t->hist.points[i], p))
            return true;
    for (int i = 0; i < t->n_pending; i++)
        if (texi_tune_point_equal(&t->space, &t->pending[i].point, p))
            return true;
    return false;
}

static void remember(tuner *t, const texi_tune_point *p, double ms, int trial)
{
    if (t->hist.n == MAX_MEASURED)
        return;
    t->hist.points[t->hist.n] = *p;
    t->hist.trial[t->hist.n] = trial;
    t->hist.ms[t->hist.n++] = ms;
}

/* The indices in t->hist of the (at most) max fastest timed settings,
 * fastest first, into top[0 .. max]; their count. */
static int fastest(const tuner *t, int *top, int max)
{
    int n = 0;
    for (int i = 0; i < t->hist.n; i++) {
        if (t->hist.ms[i] < 0)
            continue;
        int k = n < max ? n++ : max;
        top[k] = i;
        for (; k > 0 && t->hist.ms[top[k]] < t->hist.ms[top[k - 1]]; k--) {
            int x = top[k];
            top[k] = top[k - 1];
            top[k - 1] = x;
        }
    }
    return n;
}

/* The index of a parent: one of the TOP fastest measured settings. */
static int pick_parent(tuner *t)
{
    int top[TOP + 1], n = fastest(t, top, TOP);
    int r = (int)(texi_tune_rand(&t->rng) % (uint64_t)(n + 1));
    return top[r >= n ? 0 : r]; /* the fastest: twice the chance */
}

/* Refits the cost model to every timed setting (log of the time). */
static void refit(tuner *t)
{
    int nf = 0, rows = 0;
    double *x = malloc(sizeof *x * TEXI_TUNE_MAX_FEATURES * (size_t)t->hist.n);
    double *y = malloc(sizeof *y * (size_t)t->hist.n);
    for (int i = 0; x && y && i < t->hist.n; i++) {
        if (t->hist.ms[i] <= 0)
            continue;
        nf = texi_tune_features(&t->space, &t->hist.points[i], x + rows * TEXI_TUNE_MAX_FEATURES);
        y[rows++] = log(t->hist.ms[i]);
    }
    /* rows were written with the maximal stride: compact them to nf */
    for (int r = 1; x && r < rows; r++)
        memmove(x + r * nf, x + r * TEXI_TUNE_MAX_FEATURES, sizeof *x * (size_t)nf);
    t->model.fitted = false;
    if (x && y && rows >= 8)
        texi_tune_model_fit(&t->model, rows, nf, x, y, 1.0);
    free(x);
    free(y);
}

static double predict(const tuner *t, const texi_tune_point *p)
{
    double x[TEXI_TUNE_MAX_FEATURES];
    texi_tune_features(&t->space, p, x);
    return texi_tune_model_predict(&t->model, x);
}

/* A batch of at most max new candidates that lower; their count. */
static int propose(tuner *t, texi_tune_candidate *c, int max)
{
    texi_tune_point pool[POOL];
    double score[POOL];
    int n_pool = 0;
    for (int tries = 0; tries < 4 * POOL && n_pool < POOL; tries++) {
        texi_tune_point p = t->hist.points[pick_parent(t)];
        texi_tune_space_mutate(&t->space, &p, &t->rng);
        bool dup = tried(t, &p);
        for (int i = 0; i < n_pool && !dup; i++)
            dup = texi_tune_point_equal(&t->space, &pool[i], &p);
        if (dup)
            continue;
        score[n_pool] = t->model.fitted && t->opt.search == TEX_TUNE_MODEL
                            ? predict(t, &p)
                            : (double)(texi_tune_rand(&t->rng) % 1000000);
        pool[n_pool++] = p;
    }
    /* best predicted first, but the last slot goes to a random one */
    int order[POOL];
    for (int i = 0; i < n_pool; i++) {
        int k = i;
        for (; k > 0 && score[i] < score[order[k - 1]]; k--)
            order[k] = order[k - 1];
        order[k] = i;
    }
    if (n_pool > max && max > 1) {
        int r = max - 1 + (int)(texi_tune_rand(&t->rng) % (uint64_t)(n_pool - max + 1));
        int x = order[max - 1];
        order[max - 1] = order[r];
        order[r] = x;
    }
    int n = 0;
    for (int i = 0; i < n_pool && n < max; i++) {
        texi_tune_candidate *cand = &c[n];
        memset(cand, 0, sizeof *cand);
        cand->point = pool[order[i]];
        cand->text = texi_tune_space_text(&t->space, &cand->point);
        if (cand->text && texi_tune_lower(&t->w, cand)) {
            n++;
        } else {
            remember(t, &cand->point, -1, 0); /* refused: never proposed again */
            t->rejected++;
            free(cand->text);
        }
    }
    return n;
}

/* Times a built batch, logs and remembers each candidate. */
static void measure_batch(tuner *t, texi_tune_candidate *c, int n)
{
    for (int i = 0; i < n; i++) {
        texi_tune_time(&t->w, &c[i], 100.0);
        if (c[i].ms < 0)
            t->rejected++;
        else
            t->trials++;
        if (t->log_path)
            texi_tune_log_append(t->log_path, t->w.key, t->target, c[i].ms, c[i].text, false);
        remember(t, &c[i].point, c[i].ms, c[i].ms < 0 ? 0 : t->trials);
        if (c[i].ms >= 0 && c[i].ms < t->hist.ms[t->best]) {
            t->best = t->hist.n - 1;
            t->best_trial = t->trials;
            if (t->opt.verbose)
                fprintf(stderr, "tex_tune: trial %d: %.4g ms (the automatic schedule: %.4g ms)\n",
                        t->trials, c[i].ms, t->base_ms);
        }
        tex_kernel_free(c[i].kernel);
        free(c[i].text);
    }
}

static bool out_of_budget(const tuner *t)
{
    return t->trials >= t->opt.max_trials ||
           texi_tune_now_ms() - t->start >= 1e3 * t->opt.time_budget_s;
}

/* Room for a batch of at most batch candidates, after `ahead` not yet timed. */
static int room(const tuner *t, int batch, int ahead)
{
    int left = t->opt.max_trials - t->trials - ahead;
    return left < batch ? (left > 0 ? left : 0) : batch;
}

/* Frees built candidates that will not be timed. */
static void discard(texi_tune_candidate *c, int n)
{
    for (int i = 0; i < n; i++) {
        tex_kernel_free(c[i].kernel);
        free(c[i].text);
    }
}

/* Rounds of propose / build / measure until a budget runs out. With
 * t->overlap threads, the next batch is proposed (by the model as fitted
 * before this batch's times) and compiled while this one is timed. */
static void search(tuner *t)
{
    int batch = t->opt.jobs < 2 ? 2 : t->opt.jobs > 16 ? 16 : t->opt.jobs;
    texi_tune_candidate c[2][16];
    int n[2] = {0, 0}, cur = 0;
    for (int idle = 0; idle < STALL && !out_of_budget(t); cur = !cur) {
        if (!n[cur]) { /* nothing built ahead */
            n[cur] = propose(t, c[cur], room(t, batch, 0));
            texi_tune_build(t->w.ctx, c[cur], n[cur], t->target, t->opt.jobs);
        }
        idle = n[cur] ? 0 : idle + 1;
        texi_tune_compiles *ahead = NULL;
        if (t->overlap > 0 && n[cur]) {
            t->pending = c[cur];
            t->n_pending = n[cur];
            n[!cur] = propose(t, c[!cur], room(t, batch, n[cur]));
            t->n_pending = 0;
            ahead = texi_tune_compile_start(c[!cur], n[!cur], t->target, t->overlap);
        }
        measure_batch(t, c[cur], n[cur]);
        n[cur] = 0;
        if (ahead) {
            texi_tune_compile_join(ahead);
            texi_tune_build(t->w.ctx, c[!cur], n[!cur], t->target, 1); /* from the cache */
        }
        if (t->opt.search == TEX_TUNE_MODEL)
            refit(t);
    }
    discard(c[cur], n[cur]); /* built ahead when a budget ran out */
}

/* Step 4: the automatic schedule (c[0]) and the FINALISTS fastest settings
 * rebuilt (from the kernel cache) and run in rounds, one run of each per
 * round, at least CONFIRM_ROUNDS_MIN rounds and until 5% of the time budget
 * (at most 3 s) has passed, at most CONFIRM_ROUNDS_MAX; the lowest median
 * wins: t->chosen_text, chosen_ms, best_trial, and base_ms becomes the
 * automatic schedule's median there. */
static void confirm(tuner *t)
{
    texi_tune_candidate c[FINALISTS + 1];
    int top[FINALISTS + 1], trial[FINALISTS + 1], n = 1;
    int nt = fastest(t, top, FINALISTS);
    c[0] = (texi_tune_candidate){.text = t->auto_text};
    trial[0] = 1;
    for (int i = 0; i < nt; i++) {
        char *text = texi_tune_space_text(&t->space, &t->hist.points[top[i]]);
        if (!text || strcmp(text, t->auto_text) == 0) {
            free(text);
            continue;
        }
        c[n] = (texi_tune_candidate){.point = t->hist.points[top[i]], .text = text};
        trial[n++] = t->hist.trial[top[i]];
    }
    for (int i = 0; i < n; i++)
        texi_tune_lower(&t->w, &c[i]);
    texi_tune_build(t->w.ctx, c, n, t->target, t->opt.jobs);
    double ms[FINALISTS + 1][CONFIRM_ROUNDS_MAX], start = texi_tune_now_ms();
    double span = 50.0 * t->opt.time_budget_s < 3000 ? 50.0 * t->opt.time_budget_s : 3000;
    int rounds = 0;
    while (rounds < CONFIRM_ROUNDS_MAX &&
           (rounds < CONFIRM_ROUNDS_MIN || texi_tune_now_ms() - start < span)) {
        for (int i = 0; i < n; i++) {
            double t0 = texi_tune_now_ms();
            if (c[i].kernel && tex_kernel_call_tensors(c[i].kernel, t->w.n_params, t->w.run) != 0)
                c[i].ms = -1; /* timed and checked before: not expected */
            ms[i][rounds] = texi_tune_now_ms() - t0;
        }
        rounds++;
    }
    int win = -1;
    for (int i = 0; i < n; i++) {
        c[i].ms = c[i].kernel && c[i].ms >= 0 ? texi_tune_median(ms[i], rounds) : -1;
        if (c[i].ms >= 0 && (win < 0 || c[i].ms < c[win].ms))
            win = i;
    }
    c[0].text = NULL; /* t->auto_text's */
    if (win >= 0 && (t->chosen_text = win ? c[win].text : strdup(t->auto_text)) != NULL) {
        c[win].text = NULL;
        t->chosen_ms = c[win].ms;
        t->best_trial = trial[win];
        if (c[0].ms >= 0)
            t->base_ms = c[0].ms;
        if (t->log_path)
            texi_tune_log_append(t->log_path, t->w.key, t->target, t->chosen_ms, t->chosen_text,
                                 true);
    }
    discard(c, n);
}

bool texi_tune_target_is_cpu(const char *target)
{
    const char *p = target + strspn(target, " ");
    size_t len = strcspn(p, " ");
    return (len == 3 && strncmp(p, "cpu", 3) == 0) || (len == 1 && *p == 'c');
}

/* Processors the kernels leave free for compiling ahead: the online ones
 * minus the kernels' threads (the target's -threads=N, else
 * TEX_NUM_THREADS, else all), at most jobs. */
static int overlap_threads(const tuner *t)
{
    const char *opt = strstr(t->target, "-threads=");
    const char *env = getenv("TEX_NUM_THREADS");
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    long used = opt ? atol(opt + 9) : env && atol(env) > 0 ? atol(env) : online;
    long spare = online - used;
    return spare < 1 ? 0 : spare > t->opt.jobs ? t->opt.jobs : (int)spare;
}

/* The automatic schedule for target `as_target`, as text, lowered and built
 * for the tuner's target into *c; 0 or an error (recorded). */
static int auto_candidate(tuner *t, int n, tex_tensor *const outputs[], const char *as_target,
                          texi_tune_candidate *c)
{
    tex_ctx *ctx = t->w.ctx;
    tex_schedule *s = tex_auto_schedule(ctx, n, outputs, as_target);
    *c = (texi_tune_candidate){.text = s ? tex_schedule_trace(s) : NULL};
    if (!c->text)
        return tex_errcode(ctx) ? tex_errcode(ctx) : TEX_ENOMEM;
    if (!texi_tune_lower(&t->w, c))
        return texi_error(ctx, TEX_EINTERNAL,
                          "%s: the automatic schedule's text does not lower: %s", CALL, c->why);
    texi_tune_build(ctx, c, 1, t->target, 1);
    return c->kernel ? 0 : texi_error(ctx, TEX_EUNAVAILABLE, "%s: %s", CALL, c->why);
}

/* On the CPU, the automatic schedule without the GEMM built-ins too (the
 * "tensorize on/off" knob): built into *alt when its text differs, else
 * alt->kernel stays NULL. Failures only leave it out. */
static void untensorized_candidate(tuner *t, int n, tex_tensor *const outputs[],
                                   const texi_tune_candidate *base, texi_tune_candidate *alt)
{
    char as_target[256];
    *alt = (texi_tune_candidate){0};
    if (!texi_tune_target_is_cpu(t->target) || strstr(t->target, "-no-tensorize") ||
        snprintf(as_target, sizeof as_target, "%s -no-tensorize", t->target) >=
            (int)sizeof as_target)
        return;
    if (auto_candidate(t, n, outputs, as_target, alt) != 0 || strcmp(alt->text, base->text) == 0) {
        tex_kernel_free(alt->kernel);
        alt->kernel = NULL;
    }
    texi_clear_error(t->w.ctx);
}

/* The base: the automatic schedule, its kernel (the first trial and, for
 * large workloads, the reference), and where its GEMMs are tensorized the
 * same schedule without the built-ins; the faster of the two is where the
 * search starts (t->space), the first one's time the baseline. */
static int start(tuner *t, int n, tex_tensor *const outputs[])
{
    tex_ctx *ctx = t->w.ctx;
    texi_tune_candidate c[2];
    memset(c, 0, sizeof c);
    int rc = auto_candidate(t, n, outputs, t->target, &c[0]);
    rc = rc ? rc : texi_tune_reference(&t->w, c[0].kernel);
    if (rc == 0)
        untensorized_candidate(t, n, outputs, &c[0], &c[1]);
    for (int k = 0; rc == 0 && k < 2 && c[k].kernel; k++) {
        texi_tune_time(&t->w, &c[k], 100.0);
        if (k == 0 && c[k].ms < 0)
            rc = texi_error(ctx, TEX_EINTERNAL, "%s: the automatic schedule's kernel fails: %s",
                            CALL, c[k].why);
        t->trials += c[k].ms >= 0;
        if (t->log_path && rc == 0)
            texi_tune_log_append(t->log_path, t->w.key, t->target, c[k].ms, c[k].text, false);
    }
    int pick = c[1].kernel && c[1].ms >= 0 && c[1].ms < c[0].ms;
    if (rc == 0)
        rc = texi_tune_space_init(&t->space, c[pick].text);
    if (rc == 0) {
        t->base_ms = c[0].ms;
        t->best_trial = pick + 1;
        texi_tune_space_base(&t->space, &c[pick].point);
        remember(t, &c[pick].point, c[pick].ms, pick + 1);
        t->auto_text = c[0].text;
        c[0].text = NULL;
    }
    for (int k = 0; k < 2; k++) {
        tex_kernel_free(c[k].kernel);
        free(c[k].text);
    }
    return rc;
}

/* The options with their defaults filled in. */
static tex_tune_options defaults(const tex_tune_options *opt)
{
    tex_tune_options o = opt ? *opt : (tex_tune_options){0};
    if (!(o.time_budget_s > 0))
        o.time_budget_s = 60;
    if (o.max_trials <= 0)
        o.max_trials = 200;
    if (o.jobs <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        o.jobs = cpus > 0 ? (int)cpus : 1;
    }
    if (!o.log_path && getenv("TEX_TUNE_LOG") && *getenv("TEX_TUNE_LOG"))
        o.log_path = getenv("TEX_TUNE_LOG");
    if (!o.seed)
        o.seed = 0x74756e65;
    return o;
}

int tex_tune(tex_ctx *ctx, int n, tex_tensor *const outputs[], const char *target,
             const tex_tune_options *opt, tex_schedule **best)
{
    if (best)
        *best = NULL;
    if (!ctx)
        return TEX_EMISUSE;
    if (!best || !target || !outputs)
        return texi_error(ctx, TEX_EMISUSE, "%s: the %s is NULL", CALL,
                          !best     ? "result pointer"
                          : !target ? "target"
                                    : "outputs array");
    if (n <= 0)
        return texi_error(ctx, TEX_EINVAL, "%s: %d outputs given (at least one is needed)", CALL,
                          n);
    tuner *t = calloc(1, sizeof *t);
    if (!t)
        return texi_error(ctx, TEX_ENOMEM, "%s: out of memory", CALL);
    t->opt = defaults(opt);
    t->target = target;
    t->overlap = texi_tune_target_is_cpu(target) ? overlap_threads(t) : 0;
    t->log_path = t->opt.log_path;
    t->rng = t->opt.seed;
    t->start = texi_tune_now_ms();
    t->hist.points = malloc(sizeof *t->hist.points * MAX_MEASURED);
    t->hist.ms = malloc(sizeof *t->hist.ms * MAX_MEASURED);
    t->hist.trial = malloc(sizeof *t->hist.trial * MAX_MEASURED);
    const char *word = target + strspn(target, " ");
    bool cuda = strncmp(word, "cuda", 4) == 0 && (word[4] == ' ' || word[4] == 0);
    int rc = !t->hist.points || !t->hist.ms || !t->hist.trial
                 ? texi_error(ctx, TEX_ENOMEM, "%s: out of memory", CALL)
             : cuda && !tex_target_available(target)
                 ? texi_error(ctx, TEX_EUNAVAILABLE,
                              "%s: target \"%s\" cannot run kernels here (no CUDA driver, "
                              "device or NVRTC), and every candidate is measured on it",
                              CALL, target)
                 : texi_tune_workload_init(&t->w, ctx, n, outputs, cuda, CALL);
    rc = rc ? rc : start(t, n, outputs);
    if (rc == 0) {
        search(t);
        confirm(t);
        const char *text = t->chosen_text ? t->chosen_text : t->auto_text;
        tex_schedule *s = text ? tex_schedule_new(ctx, n, outputs) : NULL;
        rc = s                  ? tex_schedule_apply_text(s, text)
             : tex_errcode(ctx) ? tex_errcode(ctx)
                                : TEX_ENOMEM;
        *best = rc == 0 ? s : NULL;
    }
    if (rc == 0 && t->opt.stats)
        *t->opt.stats = (tex_tune_stats){t->trials,
                                         t->best_trial,
                                         t->rejected,
                                         t->base_ms,
                                         t->chosen_text ? t->chosen_ms : t->base_ms,
                                         (texi_tune_now_ms() - t->start) / 1e3,
                                         t->w.want_from_oracle,
                                         t->w.sampled_points};
    texi_tune_space_free(&t->space);
    texi_tune_workload_free(&t->w);
    free(t->hist.points);
    free(t->hist.ms);
    free(t->hist.trial);
    free(t->auto_text);
    free(t->chosen_text);
    free(t);
    return rc;
}
