/*
 * JIT differential test at scale: the seeded random schedules of
 * test_lower_random (same generator, workloads and seeds:
 * tests/support/randsched.h) lowered, built with tex_build for "cpu",
 * "cpu -threads=2" or "cpu -threads=3" (the seed picks), called on random
 * non-zero inputs with the output poisoned, and compared with the reference
 * evaluator (ops_jit_compare).
 *
 * Two compilers: every seed is built with the default one ($TEX_CC as the
 * program found it, else cc); every fourth seed also with clang when it is
 * installed and is not the default (TEX_CC set before that build), so a
 * second compiler checks the first on the same generated C. A failure prints
 * the seed, the target, the compiler, the sizes, the steps and the lowered
 * AST, then a diagnosis: the interpreter's verdict and the other compiler's
 * on the same schedule and inputs (lowering bug, emitter bug or compiler
 * bug). TEX_RANDOM_SEED=<n> reruns one seed of every workload.
 *
 * How many: TEX_JIT_TRIALS schedules in all (default 1000, 200 under make
 * asan, where a build and call takes about five times longer), shared among the
 * workloads in proportion to their interpreter seeds, rounding up. The run
 * goes seed by seed over all workloads, so a prefix of a long run covers
 * each of them; a progress line every 500 schedules. TEX_JIT_SHARD=k/n runs
 * only the seeds s with (s - 1) % n == k, so that n processes share one long
 * run (make test-long). Every build goes through a
 * private temporary TEX_CACHE_DIR, removed at the end: a run compiles for
 * real, and identical kernels within it (schedules the generator repeats)
 * are built once; the summary counts the distinct kernels and the time per
 * build and call.
 */
#include "tt.h"
#include "support/tmpdir.h"
#include "support/ops.h"
#include "support/schedgen.h"
#include "support/randsched.h"

#include <time.h>

#define DEFAULT_TRIALS 1000
#define SANITIZER_TRIALS 200
#define SECOND_CC "clang"
#define SECOND_CC_EVERY 4 /* seeds built with the second compiler too: one in this many */

static char cache_dir[] = "/tmp/tex-test-jitrand-XXXXXX";
static char first_cc[256];  /* the default compiler's TEX_CC ("" = unset: cc) */
static bool have_second_cc; /* SECOND_CC works and is not the default */
static long total_trials = DEFAULT_TRIALS, shard_k, shard_n = 1;

static long n_schedules, n_failed, n_builds[2], n_by_target[3];
static double build_secs[2];

static const char *const targets[3] = {"cpu", "cpu -threads=2", "cpu -threads=3"};

/* Makes cc (k = 0: the default, 1: SECOND_CC) the compiler of the next builds. */
static void use_cc(int k)
{
    if (k == 1)
        setenv("TEX_CC", SECOND_CC, 1);
    else if (first_cc[0])
        setenv("TEX_CC", first_cc, 1);
    else
        unsetenv("TEX_CC");
}

static const char *cc_name(int k)
{
    return k == 1 ? SECOND_CC : first_cc[0] ? first_cc : "cc";
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Builds f with compiler k for target, runs it and compares: 0, or -1 with
 * the reason (naming the compiler) in why. */
static int jit_with(ops_wl *w, tex_func *f, int k, const char *target, uint64_t seed, char *why,
                    size_t why_size)
{
    char inner[2048];
    use_cc(k);
    double t0 = now();
    int rc = ops_jit_compare(w, f, target, seed, inner, sizeof inner);
    build_secs[k] += now() - t0;
    n_builds[k]++;
    use_cc(0);
    if (rc != 0)
        snprintf(why, why_size, "TEX_CC=%.200s: %.1500s", cc_name(k), inner);
    return rc;
}

/* After a failure of compiler k: what the interpreter and the other compiler
 * say about the same schedule and inputs. */
static void diagnose(ops_wl *w, tex_func *f, int k, const char *target, uint64_t seed)
{
    char why[2048];
    int interp = ops_run_compare(w, f, seed, why, sizeof why);
    printf("  diagnosis: the interpreter %s%s\n", interp ? "fails too: " : "gets it right",
           interp ? why : "");
    if (k == 1 || have_second_cc) {
        int other = jit_with(w, f, 1 - k, target, seed, why, sizeof why);
        printf("  diagnosis: %s%s%s\n",
               other ? "fails too: " : "TEX_CC=", other ? why : cc_name(1 - k),
               other ? "" : " gets it right");
    }
}

/* One random schedule through the JIT: the default compiler, and on every
 * SECOND_CC_EVERY-th seed the second one. true when every build checks out. */
static bool one_jit(const sg_workload *wl, uint64_t seed, bool report)
{
    ops_wl w;
    rs_gen g;
    bool ok = rs_begin(&g, &w, wl, seed, report);
    const char *target = targets[seed % 3];
    char why[2048];
    tex_func *f = ok ? ops_lower(&w, g.s, why, sizeof why) : NULL;
    if (ok && !f) {
        ok = false;
        if (report)
            ops_report(&w, seed, &g.log, NULL, why);
    }
    n_by_target[seed % 3]++;
    for (int k = 0; f && k < 2; k++) {
        if (k == 1 && (!have_second_cc || seed % SECOND_CC_EVERY != 0))
            break;
        if (jit_with(&w, f, k, target, seed, why, sizeof why) != 0) {
            ok = false;
            if (report) {
                ops_report(&w, seed, &g.log, f, why);
                diagnose(&w, f, k, target, seed);
            }
            break;
        }
    }
    tex_ctx_free(w.ctx);
    return ok;
}

/* The workloads, their seeds (trials: this run's share) and results. */
#define WL_ENTRY(fn, nv, ns, tr) {#fn, rs_wl_##fn, nv, ns, tr},
static sg_workload workloads[] = {RS_WORKLOADS(WL_ENTRY)};
#define WL_INDEX(fn, nv, ns, tr) WL_##fn,
enum { RS_WORKLOADS(WL_INDEX) N_WL };
static long wl_tried[N_WL], wl_failed[N_WL];

#define MAX_REPORTS 3      /* failures reported in full per workload */
#define PROGRESS_EVERY 500 /* schedules between progress lines */

static void run_one(int w, uint64_t seed)
{
    n_schedules++;
    wl_tried[w]++;
    if (!one_jit(&workloads[w], seed, wl_failed[w] < MAX_REPORTS)) {
        n_failed++;
        wl_failed[w]++;
        fflush(stdout);
    }
}

/* Seed by seed, every workload that still has seeds left (so that any prefix of a
 * long run covers them all): this shard's seeds, or the TEX_RANDOM_SEED one. */
static void run_all(void)
{
    const char *env = getenv("TEX_RANDOM_SEED");
    long next_progress = PROGRESS_EVERY;
    for (int w = 0; env && w < N_WL; w++)
        run_one(w, strtoull(env, NULL, 10));
    for (uint64_t seed = 1 + (uint64_t)shard_k; !env; seed += (uint64_t)shard_n) {
        bool any = false;
        for (int w = 0; w < N_WL; w++)
            if (seed <= (uint64_t)workloads[w].trials) {
                run_one(w, seed);
                any = true;
            }
        if (!any)
            break;
        if (n_schedules >= next_progress) {
            printf("  progress: %ld schedules, %ld failed\n", n_schedules, n_failed);
            fflush(stdout);
            next_progress += PROGRESS_EVERY;
        }
    }
}

/* Each workload's share of total_trials in proportion to its interpreter
 * seeds, rounded up so that the shares add up to at least total_trials. */
static void share_trials(void)
{
    long all = 0;
    for (int w = 0; w < N_WL; w++)
        all += workloads[w].trials;
    for (int w = 0; w < N_WL; w++)
        workloads[w].trials = (int)((total_trials * workloads[w].trials + all - 1) / all);
}

/* One PASS/FAIL line per workload. */
#define WORKLOAD(fn, nv, ns, tr)                                                                   \
    static void test_##fn(void)                                                                    \
    {                                                                                              \
        if (wl_failed[WL_##fn])                                                                    \
            TT_FAILF("%s: %ld of %ld random schedules failed (the first %d reported above)", #fn,  \
                     wl_failed[WL_##fn], wl_tried[WL_##fn], MAX_REPORTS);                          \
    }

RS_WORKLOADS(WORKLOAD)

#define RUN_WORKLOAD(fn, nv, ns, tr) TT_RUN(test_##fn);

/* Reads TEX_JIT_TRIALS and TEX_JIT_SHARD; false on a malformed value. */
static bool read_counts(void)
{
    const char *san = getenv("TEX_SANITIZE_FLAGS"), *trials = getenv("TEX_JIT_TRIALS");
    const char *shard = getenv("TEX_JIT_SHARD");
    if (san && *san)
        total_trials = SANITIZER_TRIALS;
    if (trials && (total_trials = strtol(trials, NULL, 10)) <= 0)
        return false;
    if (shard && (sscanf(shard, "%ld/%ld", &shard_k, &shard_n) != 2 || shard_n <= 0 ||
                  shard_k < 0 || shard_k >= shard_n))
        return false;
    return true;
}

/* Number of compiled kernels (*.so) in the cache directory. */
static long count_kernels(void)
{
    long n = 0;
    DIR *d = opendir(cache_dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        n += len > 3 && strcmp(e->d_name + len - 3, ".so") == 0;
    }
    if (d)
        closedir(d);
    return n;
}

static void print_summary(void)
{
    printf("random JIT schedules: %ld tried, %ld failed (shard %ld/%ld of %ld; by target: "
           "cpu %ld, -threads=2 %ld, -threads=3 %ld)\n",
           n_schedules, n_failed, shard_k, shard_n, total_trials, n_by_target[0], n_by_target[1],
           n_by_target[2]);
    for (int k = 0; k < 2; k++)
        if (n_builds[k])
            printf("  TEX_CC=%s: %ld builds and calls, %.3f s each\n", cc_name(k), n_builds[k],
                   build_secs[k] / (double)n_builds[k]);
    if (!have_second_cc)
        printf("  no second compiler (%s is the default, cannot build, or the run is "
               "sanitized)\n",
               SECOND_CC);
    printf("  distinct kernels compiled: %ld\n", count_kernels());
    rs_print_summary();
}

/* Whether SECOND_CC can check the default compiler: not the default, not a
 * sanitized run, and it builds a small OpenMP kernel (clang may lack its
 * OpenMP runtime). Under make asan the kernels clang builds load clang's
 * OpenMP runtime (libomp) into a process sanitized with gcc's runtime, whose
 * leak checker then crashes scanning libomp's thread-local storage at exit;
 * the plain suite runs the second compiler. */
static bool second_cc_usable(void)
{
    if (strcmp(cc_name(0), SECOND_CC) == 0 || getenv("TEX_SANITIZE_FLAGS"))
        return false;
    ops_wl w;
    char why[512];
    ops_init(&w, tex_ctx_new(), "probe");
    ops_transpose(&w, 2, 3, false);
    tex_func *f = ops_lower(&w, tex_schedule_new(w.ctx, 1, &w.out), why, sizeof why);
    use_cc(1);
    tex_kernel *k = f ? tex_build(f, "cpu -threads=2") : NULL;
    use_cc(0);
    if (!k)
        printf("  note: TEX_CC=%s cannot build a kernel: %s\n", SECOND_CC,
               f ? tex_errmsg(w.ctx) : why);
    tex_kernel_free(k);
    tex_ctx_free(w.ctx);
    return k != NULL;
}

int main(void)
{
    const char *cc = getenv("TEX_CC");
    snprintf(first_cc, sizeof first_cc, "%s", cc ? cc : "");
    /* Idle OpenMP workers sleep instead of spinning (clang's libomp spins 200 ms after
     * every parallel region): the kernels are tiny, the compilers need the cores. */
    setenv("OMP_WAIT_POLICY", "passive", 0);
    if (!read_counts()) {
        printf("test_jit_random: TEX_JIT_TRIALS must be a positive count and TEX_JIT_SHARD k/n "
               "with 0 <= k < n\n");
        return 1;
    }
    if (!tt_private_cache(cache_dir, "test_jit_random"))
        return 1;
    if (!tex_target_available("cpu")) {
        printf("SKIP jit_random (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return 0;
    }
    have_second_cc = second_cc_usable();
    share_trials();
    run_all();
    RS_WORKLOADS(RUN_WORKLOAD)
    print_summary();
    tt_remove_tree(cache_dir);
    return tt_finish();
}
