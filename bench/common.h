/*
 * common.h: what every benchmark program shares (header-only, static inline).
 *
 * Timing (bench_interleave): tex and its anchors run in turn, tex, anchor,
 * tex, anchor, ..., so that a disturbance of the machine (another process,
 * the clock speed, the page cache) falls on both sides alike. Each side first
 * runs BENCH_WARMUP times untimed; then rounds of one timed run per side
 * follow, at least BENCH_MIN_RUNS of them and more while the time budget
 * lasts, up to BENCH_MAX_RUNS (so short cases get many runs). Times are
 * CLOCK_MONOTONIC milliseconds around each call, or the time a run measured
 * itself (bench_run.own_ms, e.g. inside a child process). Each side gets the
 * median and the 10th and 90th percentiles of its runs.
 *
 * Output: one line per measured case, in the format every bench program uses
 * and tools parse; the first six fields are fixed, the rest follow them:
 *   bench=NAME case=DESC tex_ms=T anchor=NAME anchor_ms=T speedup=X
 *   tex_p10=T tex_p90=T anchor_p10=T anchor_p90=T runs=N spread=S noisy=0|1
 * with tex_ms and anchor_ms medians, speedup = anchor_ms / tex_ms to 3
 * significant digits (above 1: tex is faster), runs the timed runs of each
 * side, spread the larger of the two sides' (p90 - p10) / median, and noisy=1
 * when spread exceeds BENCH_NOISY (the speedup is then not to be trusted).
 *
 * Correctness: a benchmark whose tex result is wrong is worthless, so each
 * program checks tex's result against the anchor's (bench_check_close); a
 * mismatch prints an `bench=NAME case=DESC error=...` line and exits with 1.
 */
#ifndef TEX_BENCH_COMMON_H
#define TEX_BENCH_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { BENCH_WARMUP = 2, BENCH_MIN_RUNS = 7, BENCH_MAX_RUNS = 101, BENCH_MAX_SIDES = 4 };

#define BENCH_NOISY 0.2 /* the spread above which a case is flagged noisy=1 */

/* One side of a comparison: fn(arg) runs it once and returns 0, or non-zero
 * when it failed. */
typedef struct {
    int (*fn)(void *arg);
    void *arg;
    const double *own_ms; /* NULL: the wall time around fn; else the time fn left here */
} bench_run;

/* One side's times, in ms. */
typedef struct {
    double median, p10, p90;
    int runs; /* timed runs */
} bench_stats;

static inline double bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile (0 <= q <= 1) of the sorted t[0..n), n > 0, interpolated
 * linearly between the two nearest ranks. */
static inline double bench_quantile(const double *t, int n, double q)
{
    double pos = q * (n - 1);
    int lo = (int)pos;
    int hi = lo + 1 < n ? lo + 1 : lo;
    return t[lo] + (pos - lo) * (t[hi] - t[lo]);
}

/* Sorts t[0..n) (n > 0) and summarizes it. */
static inline bench_stats bench_summarize(double *t, int n)
{
    qsort(t, (size_t)n, sizeof t[0], bench_cmp_double);
    return (bench_stats){bench_quantile(t, n, 0.5), bench_quantile(t, n, 0.1),
                         bench_quantile(t, n, 0.9), n};
}

/* One run of r; its time in ms, or -1 when it failed. */
static inline double bench_time_one(const bench_run *r)
{
    double t0 = bench_now_ms();
    if (r->fn(r->arg) != 0)
        return -1;
    double t = bench_now_ms() - t0;
    return r->own_ms ? *r->own_ms : t;
}

/* Times the n_sides (1 to BENCH_MAX_SIDES) runs interleaved, as the top
 * comment says: side[0] is tex, the others its anchors. A round stops the
 * timing when it ends with at least BENCH_MIN_RUNS rounds done and budget_ms
 * of timed runs spent (all sides together), or at BENCH_MAX_RUNS rounds.
 * Fills out[0..n_sides); 0, or -1 when a run failed. */
static inline int bench_interleave(int n_sides, const bench_run side[], double budget_ms,
                                   bench_stats out[])
{
    double t[BENCH_MAX_SIDES][BENCH_MAX_RUNS];
    double spent = 0;
    int n = 0;
    if (n_sides < 1 || n_sides > BENCH_MAX_SIDES)
        return -1;
    for (int w = 0; w < BENCH_WARMUP; w++)
        for (int s = 0; s < n_sides; s++)
            if (side[s].fn(side[s].arg) != 0)
                return -1;
    while (n < BENCH_MAX_RUNS && (n < BENCH_MIN_RUNS || spent < budget_ms)) {
        for (int s = 0; s < n_sides; s++) {
            t[s][n] = bench_time_one(&side[s]);
            if (t[s][n] < 0)
                return -1;
            spent += t[s][n];
        }
        n++;
    }
    for (int s = 0; s < n_sides; s++)
        out[s] = bench_summarize(t[s], n);
    return 0;
}

/* (p90 - p10) / median of one side (0 for a zero median). */
static inline double bench_spread(const bench_stats *s)
{
    return s->median > 0 ? (s->p90 - s->p10) / s->median : 0;
}

/* Prints the line of one case: tex's times against those of the anchor. */
static inline void bench_report(const char *bench, const char *desc, const bench_stats *tex,
                                const char *anchor, const bench_stats *an)
{
    double speedup = an->median > 0 && tex->median > 0 ? an->median / tex->median : 0;
    double st = bench_spread(tex), sa = bench_spread(an), spread = st > sa ? st : sa;
    printf("bench=%s case=%s tex_ms=%.3f anchor=%s anchor_ms=%.3f speedup=%.3g tex_p10=%.3f "
           "tex_p90=%.3f anchor_p10=%.3f anchor_p90=%.3f runs=%d spread=%.3f noisy=%d\n",
           bench, desc, tex->median, anchor, an->median, speedup, tex->p10, tex->p90, an->p10,
           an->p90, tex->runs, spread, spread > BENCH_NOISY);
    fflush(stdout);
}

/* Prints the error line of a failed case and exits with status 1. */
static inline void bench_fail(const char *bench, const char *desc, const char *what)
{
    printf("bench=%s case=%s error=%s\n", bench, desc, what);
    fflush(stdout);
    exit(1);
}

/* bench_interleave of tex against one anchor, then bench_report; 0, or -1
 * when a run failed (nothing printed). */
static inline int bench_compare(const char *bench, const char *desc, bench_run tex,
                                const char *anchor, bench_run an, double budget_ms)
{
    bench_stats st[2];
    if (bench_interleave(2, (bench_run[]){tex, an}, budget_ms, st) != 0)
        return -1;
    bench_report(bench, desc, &st[0], anchor, &st[1]);
    return 0;
}

/* n floats, 64-byte aligned as tex_array_new's and a framework's tensors
 * are (free with free()): glibc's malloc starts a large array 16 bytes past
 * a page, which splits every 64-byte vector access over two cache lines, so
 * an anchor given such arrays would run slower than it should. */
static inline float *bench_floats(int64_t n)
{
    size_t bytes = sizeof(float) * (size_t)(n > 0 ? n : 1);
    return aligned_alloc(64, (bytes + 63) / 64 * 64);
}

/* Fills x[0..n) with uniform values in [-1, 1) from a fixed-seed generator. */
static inline void bench_fill_random(float *x, int64_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15u + 1;
    for (int64_t k = 0; k < n; k++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        x[k] = (float)((double)(s >> 40) / 8388608.0 - 1.0);
    }
}

/* Relative error of got against want: max |got - want| / max |want| (a NaN
 * anywhere gives INFINITY). */
static inline double bench_rel_error(const float *got, const float *want, int64_t n)
{
    double diff = 0, scale = 0;
    for (int64_t k = 0; k < n; k++) {
        double d = fabs((double)got[k] - (double)want[k]);
        if (d != d)
            return INFINITY;
        diff = d > diff ? d : diff;
        scale = fabs((double)want[k]) > scale ? fabs((double)want[k]) : scale;
    }
    return diff / (scale > 0 ? scale : 1);
}

/* Exits through bench_fail when tex's result got differs from the anchor's
 * by more than rtol (relative to the largest |want|). */
static inline void bench_check_close(const char *bench, const char *desc, const float *got,
                                     const float *want, int64_t n, double rtol)
{
    double err = bench_rel_error(got, want, n);
    if (!(err <= rtol)) {
        char what[96];
        snprintf(what, sizeof what, "wrong_result(rel_error=%.3g>%.3g)", err, rtol);
        bench_fail(bench, desc, what);
    }
}

#endif
