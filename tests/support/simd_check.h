/*
 * simd_check.h: what the tests of vector code (test_simd, test_simd_tail)
 * share. Header-only (static inline functions); include it after tt.h.
 *
 * - simd_split_vectorize: the schedule that splits the output's last axis
 *   and vectorizes the inner part;
 * - simd_have_clang, simd_cc_use / simd_cc_restore: build with clang too
 *   (not in sanitized runs, whose flags are the default compiler's);
 * - simd_source_of: the generated C of a schedule;
 * - simd_tail_of: the CPU tail of a schedule's lowering (what the simd pass
 *   made of it), and simd_interpret_tail, which runs it in the interpreter
 *   (vector statements lane by lane) against the oracle;
 * - simd_run_sizes: a kernel (or the interpreter) at each value of a
 *   symbolic size, against the oracle; simd_run_compilers: the interpreter
 *   and the kernels of both compilers so.
 */
#ifndef TEX_TESTS_SUPPORT_SIMD_CHECK_H
#define TEX_TESTS_SUPPORT_SIMD_CHECK_H

#include "support/ops.h"

#include <unistd.h>

/* Splits the output's last axis by factor and vectorizes the inner part. */
static inline tex_schedule *simd_split_vectorize(ops_wl *w, int factor)
{
    tex_schedule *s = tex_schedule_new(w->ctx, 1, &w->out);
    tex_stage *st = tex_stage_of(s, w->out);
    int nd = tex_stage_naxes(st);
    tex_iter *o, *i;
    if (!s || tex_split(st, tex_stage_axis(st, nd - 1), tex_int(w->ctx, factor), &o, &i) != 0 ||
        tex_vectorize(st, i) != 0)
        return NULL;
    return s;
}

/* Whether clang is on PATH and the run is not sanitized. */
static inline bool simd_have_clang(void)
{
    const char *path = getenv("PATH"), *san = getenv("TEX_SANITIZE_FLAGS");
    if (!path || (san && *san))
        return false;
    char dir[4096];
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(dir, sizeof dir, "%.*s/clang", (int)n, p);
        if (access(dir, X_OK) == 0)
            return true;
        p += n + (p[n] == ':');
    }
    return false;
}

/* TEX_CC as it was before simd_cc_use. */
typedef struct {
    bool set;
    char value[256];
} simd_cc;

/* Sets TEX_CC to cc (NULL: leaves it), keeping the old value in saved. */
static inline void simd_cc_use(simd_cc *saved, const char *cc)
{
    const char *old = getenv("TEX_CC");
    saved->set = old != NULL;
    snprintf(saved->value, sizeof saved->value, "%s", old ? old : "");
    if (cc)
        setenv("TEX_CC", cc, 1);
}

static inline void simd_cc_restore(const simd_cc *saved)
{
    if (saved->set)
        setenv("TEX_CC", saved->value, 1);
    else
        unsetenv("TEX_CC");
}

/* The generated C of w's schedule for target ("c", "c -strict-float").
 * malloc'ed, or NULL. */
static inline char *simd_source_of(ops_wl *w, tex_schedule *s, const char *target)
{
    char why[2048];
    tex_func *f = ops_lower(w, s, why, sizeof why);
    tex_kernel *k = f ? tex_build(f, target) : NULL;
    char *src = k ? strdup(tex_kernel_source(k)) : NULL;
    tex_kernel_free(k);
    return src;
}

/* The CPU tail of f's lowering in *tail; 0, or -1 with a printed reason. */
static inline int simd_tail_of(ops_wl *w, tex_func *f, tex_func *tail)
{
    if (!f || texi_lower_tail(f, TEXI_TAIL_CPU, false, tail, NULL) != 0) {
        printf("  %s: lowering failed: %s\n", w->name, tex_errmsg(w->ctx));
        return -1;
    }
    return 0;
}

/* Runs the interpreter on the CPU tail of f (vector statements included,
 * lane by lane) and compares with the oracle; 0, or -1 with a printed reason. */
static inline int simd_interpret_tail(ops_wl *w, tex_func *f, uint64_t seed)
{
    char why[2048];
    tex_func tail;
    if (simd_tail_of(w, f, &tail) != 0)
        return -1;
    if (ops_run_and_compare(w, &tail, NULL, "interpreter on the CPU tail: ", seed, why,
                            sizeof why) != 0) {
        printf("  %s: %s\n", w->name, why);
        return -1;
    }
    return 0;
}

/* Runs kernel k (or the interpreter on f's CPU tail when k is NULL) at
 * each size, the value of w's first symbolic size, against the oracle;
 * a failure is a test failure (reported with log). */
static inline void simd_run_sizes(ops_wl *w, tex_func *f, tex_kernel *k, const ops_log *log,
                                  int n_sizes, const int64_t *sizes)
{
    for (int z = 0; z < n_sizes; z++) {
        char why[2048];
        w->vals[0] = sizes[z];
        int rc = k ? ops_run_and_compare(w, f, k, "cpu: ", (uint64_t)z + 1, why, sizeof why)
                   : simd_interpret_tail(w, f, (uint64_t)z + 1);
        if (rc != 0 && k)
            ops_report(w, (uint64_t)z + 1, log, f, why);
        if (rc != 0)
            TT_FAILF("%s: n = %lld fails", w->name, (long long)sizes[z]);
    }
}

/* f at each size: in the interpreter, then built for "cpu" with the default
 * C compiler and (with `clang`) with clang, each against the oracle. */
static inline void simd_run_compilers(ops_wl *w, tex_func *f, const ops_log *log, int n_sizes,
                                      const int64_t *sizes, bool clang)
{
    simd_run_sizes(w, f, NULL, log, n_sizes, sizes);
    for (int cc = 0; cc < 1 + clang; cc++) {
        simd_cc saved;
        simd_cc_use(&saved, cc ? "clang" : NULL);
        tex_kernel *k = tex_build(f, "cpu");
        simd_cc_restore(&saved);
        if (!k)
            TT_FAILF("%s: tex_build failed: %s", w->name, tex_errmsg(w->ctx));
        else
            simd_run_sizes(w, f, k, log, n_sizes, sizes);
        tex_kernel_free(k);
    }
}

#endif
