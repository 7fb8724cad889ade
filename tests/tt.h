/*
 * tt: the tiny test harness of tex's test programs.
 *
 * A test program defines `static void test_NAME(void)` functions and runs them
 * from main with TT_RUN(test_NAME); it returns tt_finish(). Each test prints
 * one line, "PASS name", "FAIL name" (after the failed checks' lines) or
 * "SKIP name"; tests/run_tests.sh adds the lines of every program and ends with
 * "N passed, N failed, N skipped". Checks record failures and go on, so one run
 * shows every broken expectation of a test.
 */
#ifndef TEX_TESTS_TT_H
#define TEX_TESTS_TT_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tt_failed_checks;  /* failed checks in the current test */
static int tt_skip_requested; /* TT_SKIP called in the current test */
static int tt_n_pass, tt_n_fail, tt_n_skip;

#define TT_FAILF(...)                                                                              \
    do {                                                                                           \
        printf("  %s:%d: ", __FILE__, __LINE__);                                                   \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        tt_failed_checks++;                                                                        \
    } while (0)

#define TT_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond))                                                                               \
            TT_FAILF("check failed: %s", #cond);                                                   \
    } while (0)

#define TT_EQ_INT(a, b)                                                                            \
    do {                                                                                           \
        long long tt_a_ = (long long)(a), tt_b_ = (long long)(b);                                  \
        if (tt_a_ != tt_b_)                                                                        \
            TT_FAILF("%s == %s: %lld != %lld", #a, #b, tt_a_, tt_b_);                              \
    } while (0)

#define TT_EQ_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *tt_a_ = (a), *tt_b_ = (b);                                                     \
        if (!tt_a_ || !tt_b_ || strcmp(tt_a_, tt_b_) != 0)                                         \
            TT_FAILF("%s == %s:\n    got:      \"%s\"\n    expected: \"%s\"", #a, #b,              \
                     tt_a_ ? tt_a_ : "(null)", tt_b_ ? tt_b_ : "(null)");                          \
    } while (0)

/* |a - b| <= tol * max(1, |b|): relative error with an absolute floor. */
#define TT_NEAR(a, b, tol)                                                                         \
    do {                                                                                           \
        double tt_a_ = (double)(a), tt_b_ = (double)(b);                                           \
        double tt_s_ = fabs(tt_b_) > 1.0 ? fabs(tt_b_) : 1.0;                                      \
        if (!(fabs(tt_a_ - tt_b_) <= (tol)*tt_s_))                                                 \
            TT_FAILF("%s ~ %s: %.9g vs %.9g (tol %g)", #a, #b, tt_a_, tt_b_, (double)(tol));       \
    } while (0)

/* Marks the current test skipped (the reason is printed) and returns from it. */
#define TT_SKIP(...)                                                                               \
    do {                                                                                           \
        printf("  skip: ");                                                                        \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        tt_skip_requested = 1;                                                                     \
        return;                                                                                    \
    } while (0)

#define TT_RUN(fn) tt_run(fn, #fn)

static void tt_run(void (*fn)(void), const char *name)
{
    if (strncmp(name, "test_", 5) == 0)
        name += 5;
    tt_failed_checks = 0;
    tt_skip_requested = 0;
    fn();
    if (tt_failed_checks) {
        printf("FAIL %s\n", name);
        tt_n_fail++;
    } else if (tt_skip_requested) {
        printf("SKIP %s\n", name);
        tt_n_skip++;
    } else {
        printf("PASS %s\n", name);
        tt_n_pass++;
    }
    fflush(stdout);
}

/* Exit status of the program: 1 when any test failed. */
static int tt_finish(void)
{
    printf("%d passed, %d failed, %d skipped\n", tt_n_pass, tt_n_fail, tt_n_skip);
    return tt_n_fail ? 1 : 0;
}

#endif
