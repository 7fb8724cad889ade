/*
 * common.h: what every benchmark program shares (header-only, static inline).
 *
 * Timing: CLOCK_MONOTONIC in milliseconds; bench_median_ms runs a callback
 * BENCH_WARMUP times untimed, then at least BENCH_MIN_RUNS timed runs (more
 * while the time budget lasts, up to BENCH_MAX_RUNS), and returns the median.
 *
 * Output: one line per measured case, in the format every bench program uses
 * and tools parse:
 *   bench=NAME case=DESC tex_ms=T anchor=NAME anchor_ms=T speedup=X
 * with speedup = anchor_ms / tex_ms to 3 significant digits (above 1: tex is
 * faster). A case without an anchor prints anchor=none anchor_ms=0 speedup=0.
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

enum { BENCH_WARMUP = 2, BENCH_MIN_RUNS = 5, BENCH_MAX_RUNS = 21 };

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

/* The median of an array of n > 0 times (sorted in place). */
static inline double bench_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof t[0], bench_cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Median time of fn(arg) in ms: BENCH_WARMUP untimed runs, then BENCH_MIN_RUNS
 * timed ones and more until budget_ms of timed runs or BENCH_MAX_RUNS. A
 * failing fn (non-zero) makes the result negative. */
static inline double bench_median_ms(int (*fn)(void *), void *arg, double budget_ms)
{
    double t[BENCH_MAX_RUNS], spent = 0;
    int n = 0;
    for (int w = 0; w < BENCH_WARMUP; w++)
        if (fn(arg) != 0)
            return -1;
    while (n < BENCH_MAX_RUNS && (n < BENCH_MIN_RUNS || spent < budget_ms)) {
        double t0 = bench_now_ms();
        if (fn(arg) != 0)
            return -1;
        t[n] = bench_now_ms() - t0;
        spent += t[n++];
    }
    return bench_median(t, n);
}

static inline void bench_print(const char *bench, const char *desc, double tex_ms,
                               const char *anchor, double anchor_ms)
{
    double speedup = anchor_ms > 0 && tex_ms > 0 ? anchor_ms / tex_ms : 0;
    printf("bench=%s case=%s tex_ms=%.3f anchor=%s anchor_ms=%.3f speedup=%.3g\n", bench, desc,
           tex_ms, anchor ? anchor : "none", anchor ? anchor_ms : 0.0, speedup);
    fflush(stdout);
}

/* Prints the error line of a failed case and exits with status 1. */
static inline void bench_fail(const char *bench, const char *desc, const char *what)
{
    printf("bench=%s case=%s error=%s\n", bench, desc, what);
    fflush(stdout);
    exit(1);
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
