/*
 * test_text_fuzz: schedules as text from untrusted hands. A schedule text is
 * what a tuning log stores and what a user saves and edits, so
 * tex_schedule_apply_text meets texts that are damaged, truncated, edited
 * by hand or written for other computes. For every workload of
 * tests/support/randsched.h and several seeds, the text of a random legal
 * schedule (tex_schedule_trace) is damaged by one to three random edits:
 * a word replaced by another word of the text or by a hostile token
 * (numbers at and past the integer limits, zero, negatives, references by
 * index that do not exist, names with dots), a word or a line deleted,
 * duplicated or swapped, a control byte inserted, the text cut short. Each
 * damaged text is applied to a fresh schedule of the same computes, and:
 *   - the call returns 0 or a negative error code, with a message that
 *     names the call (never a crash: make asan runs this too);
 *   - a text it accepts gives a schedule that tex_lower either lowers or
 *     refuses with a message, and what it lowers computes what the oracle
 *     computes (interpreted on random inputs, tests/support/ops.h; not run
 *     when it holds a number past 2^16, has_huge_number);
 *   - every eighth text so run is also compiled (tex_build "cpu", in a
 *     private temporary cache) and the kernel checked the same way;
 *   - a refused text leaves no error behind once cleared, and the context
 *     goes on working.
 * TEX_RANDOM_SEED=<n> reruns one seed of every workload; a failure prints
 * the original and the damaged text.
 */
#include "tt.h"
#include "support/tmpdir.h"
#include "support/ops.h"
#include "support/randsched.h"
#include "support/schedgen.h"

enum { EDITS_PER_TEXT = 12, MAX_WORDS = 512, TEXT_CAP = 8192, JIT_EVERY = 8 };

static long n_texts, n_applied, n_refused, n_lower_refused, n_not_run, n_run, n_built;
static bool jit_ok; /* a C compiler for "cpu" is there */
static char cache_dir[] = "/tmp/tex_text_fuzz_XXXXXX";

/* Tokens that probe the parser's limits and the primitives' checks. */
static const char *const hostile[] = {
    "0",
    "-1",
    "1",
    "2",
    "3",
    "7",
    "64",
    "2147483647",
    "2147483648",
    "-2147483648",
    "4294967297",
    "9223372036854775807",
    "99999999999999999999",
    "1e9",
    "0x10",
    "@0",
    "@1",
    "@99",
    "@-1",
    "@",
    "x",
    "i.outer.inner",
    ".",
    "..",
    "i..outer",
    "threadIdx.x",
    "blockIdx.z",
    "local",
    "shared",
    "global",
    "split",
    "fuse",
    "reorder",
    "compute_at",
    "cache_read",
};

/* The words of a line-oriented text: [start, end) byte offsets. */
typedef struct {
    int n;
    int start[MAX_WORDS], end[MAX_WORDS];
} words;

static void split_words(const char *t, words *w)
{
    w->n = 0;
    for (int i = 0; t[i] && w->n < MAX_WORDS;) {
        while (t[i] == ' ' || t[i] == '\t' || t[i] == '\n')
            i++;
        if (!t[i])
            break;
        w->start[w->n] = i;
        while (t[i] && t[i] != ' ' && t[i] != '\t' && t[i] != '\n')
            i++;
        w->end[w->n++] = i;
    }
}

/* Replaces bytes [from, to) of t (NUL-terminated, capacity TEXT_CAP) with
 * the n bytes of s, when the result fits. */
static void splice(char *t, int from, int to, const char *s, int n)
{
    int len = (int)strlen(t);
    if (len - (to - from) + n >= TEXT_CAP)
        return;
    memmove(t + from + n, t + to, (size_t)(len - to + 1));
    memcpy(t + from, s, (size_t)n);
}

/* The line of t around byte i: [*from, *to), *to past its newline if any. */
static void line_at(const char *t, int i, int *from, int *to)
{
    int a = i, b = i;
    while (a > 0 && t[a - 1] != '\n')
        a--;
    while (t[b] && t[b] != '\n')
        b++;
    *from = a;
    *to = t[b] ? b + 1 : b;
}

/* One random edit of t (file comment). */
static void damage(char *t, uint64_t *rng)
{
    words w;
    split_words(t, &w);
    int len = (int)strlen(t);
    if (w.n == 0 || len == 0)
        return;
    int k = (int)ops_rand_range(rng, 0, w.n - 1), kind = (int)ops_rand_range(rng, 0, 7);
    int a, b;
    char copy[TEXT_CAP];
    switch (kind) {
    case 0: { /* a word replaced by a hostile token */
        const char *h = hostile[ops_rand_range(rng, 0, sizeof hostile / sizeof hostile[0] - 1)];
        splice(t, w.start[k], w.end[k], h, (int)strlen(h));
        break;
    }
    case 1: { /* a word replaced by another word of the text */
        int j = (int)ops_rand_range(rng, 0, w.n - 1), n = w.end[j] - w.start[j];
        memcpy(copy, t + w.start[j], (size_t)n);
        splice(t, w.start[k], w.end[k], copy, n);
        break;
    }
    case 2: /* a word deleted */
        splice(t, w.start[k], w.end[k], "", 0);
        break;
    case 3: /* a line deleted */
        line_at(t, w.start[k], &a, &b);
        splice(t, a, b, "", 0);
        break;
    case 4: { /* a line duplicated in front of another */
        line_at(t, w.start[k], &a, &b);
        memcpy(copy, t + a, (size_t)(b - a));
        int at = 0, there;
        line_at(t, w.start[ops_rand_range(rng, 0, w.n - 1)], &at, &there);
        splice(t, at, at, copy, b - a);
        if (b == len) /* the last line has no newline of its own */
            splice(t, at + (b - a), at + (b - a), "\n", 1);
        break;
    }
    case 5: { /* a control byte or a stray character inserted */
        static const char bytes[] = "\t\r\x01\x7f;#\"\\@";
        char c = bytes[ops_rand_range(rng, 0, (int)sizeof bytes - 2)];
        int at = (int)ops_rand_range(rng, 0, len);
        splice(t, at, at, &c, 1);
        break;
    }
    case 6: /* cut short */
        t[ops_rand_range(rng, 0, len - 1)] = '\0';
        break;
    default: { /* two words of the text swapped */
        int j = (int)ops_rand_range(rng, 0, w.n - 1);
        if (j == k)
            break;
        int lo = j < k ? j : k, hi = j < k ? k : j;
        int nl = w.end[lo] - w.start[lo], nh = w.end[hi] - w.start[hi];
        char first[TEXT_CAP];
        memcpy(first, t + w.start[lo], (size_t)nl);
        memcpy(copy, t + w.start[hi], (size_t)nh);
        splice(t, w.start[hi], w.end[hi], first, nl);
        splice(t, w.start[lo], w.end[lo], copy, nh);
        break;
    }
    }
}

/* Prints the original and the damaged text of a failure. */
static void report(const char *name, uint64_t seed, int edit, const char *text, const char *damaged,
                   const char *why)
{
    printf("  %s seed %llu edit %d: %s\n  --- schedule text\n%s\n  --- damaged\n%s\n", name,
           (unsigned long long)seed, edit, why, text, damaged);
}

/* Whether t holds a number past 2^16. A split by such a factor makes a
 * guarded loop of that many iterations (correct, but too long to
 * interpret), so such a text is lowered and not run. */
static bool has_huge_number(const char *t)
{
    for (const char *p = t; *p; p++)
        if (*p >= '0' && *p <= '9' && (p == t || p[-1] < '0' || p[-1] > '9') &&
            strtoll(p, NULL, 10) > 65536)
            return true;
    return false;
}

/* Applies one damaged text to a fresh schedule and checks the outcome;
 * true when it checks out. */
static bool one_damaged(ops_wl *w, const char *text, const char *damaged, uint64_t seed, int edit)
{
    tex_ctx *ctx = w->ctx;
    char why[2048];
    tex_schedule *s = tex_schedule_new(ctx, 1, &w->out);
    if (!s) {
        report(w->name, seed, edit, text, damaged, "tex_schedule_new failed");
        return false;
    }
    int rc = tex_schedule_apply_text(s, damaged);
    if (rc != 0) {
        n_refused++;
        bool named = rc < 0 && strstr(tex_errmsg(ctx), "tex_schedule_apply_text") != NULL;
        snprintf(why, sizeof why, "refused with %d and message '%s'", rc, tex_errmsg(ctx));
        tex_clear_error(ctx);
        if (!named || tex_errcode(ctx) != 0)
            report(w->name, seed, edit, text, damaged, why);
        return named && tex_errcode(ctx) == 0;
    }
    n_applied++;
    tex_func *f = ops_lower(w, s, why, sizeof why);
    if (!f) { /* a legal refusal, with a message */
        n_lower_refused++;
        bool said = tex_errcode(ctx) < 0 && tex_errmsg(ctx)[0];
        tex_clear_error(ctx);
        if (!said)
            report(w->name, seed, edit, text, damaged, "tex_lower failed without a message");
        return said;
    }
    if (has_huge_number(damaged)) {
        n_not_run++;
        return true;
    }
    uint64_t input_seed = seed * 131 + (uint64_t)edit;
    if (ops_run_compare(w, f, input_seed, why, sizeof why) != 0) {
        report(w->name, seed, edit, text, damaged, why);
        return false;
    }
    if (!jit_ok || ++n_run % JIT_EVERY != 0)
        return true;
    n_built++;
    if (ops_jit_compare(w, f, "cpu", input_seed, why, sizeof why) != 0) {
        report(w->name, seed, edit, text, damaged, why);
        return false;
    }
    return true;
}

/* The damaged texts of one random schedule of wl; true when all check out. */
static bool one_schedule(const sg_workload *wl, uint64_t seed, bool report_failures)
{
    ops_wl w;
    rs_gen g;
    bool ok = rs_begin(&g, &w, wl, seed, report_failures);
    char *text = ok ? tex_schedule_trace(g.s) : NULL;
    tex_clear_error(w.ctx);
    uint64_t rng = sg_rng(seed, sg_name_hash(wl->name) ^ 0x7e57u);
    for (int e = 0; ok && text && e < EDITS_PER_TEXT; e++) {
        char damaged[TEXT_CAP];
        snprintf(damaged, sizeof damaged, "%s", text);
        for (int n = (int)ops_rand_range(&rng, 1, 3); n > 0; n--)
            damage(damaged, &rng);
        n_texts++;
        ok = one_damaged(&w, text, damaged, seed, e);
    }
    free(text);
    tex_ctx_free(w.ctx);
    return ok;
}

static long n_schedules, n_failed_total;

#define WORKLOAD(fn, nv, ns, tr)                                                                   \
    static void test_##fn(void)                                                                    \
    {                                                                                              \
        static const sg_workload wl = {#fn, rs_wl_##fn, nv, ns, (tr) / 8};                         \
        sg_run(&wl, one_schedule, 3, &n_schedules, &n_failed_total);                               \
    }

RS_WORKLOADS(WORKLOAD)

static void test_summary(void)
{
    printf("  %ld damaged texts of %ld schedules: %ld applied (%ld of them refused by "
           "tex_lower, %ld lowered but not run, %ld also compiled), %ld refused\n",
           n_texts, n_schedules, n_applied, n_lower_refused, n_not_run, n_built, n_refused);
    TT_CHECK(n_refused > 0 && n_applied > 0); /* both outcomes are exercised */
}

int main(void)
{
    /* Idle OpenMP workers sleep: the kernels are tiny, the compiler needs the cores. */
    setenv("OMP_WAIT_POLICY", "passive", 0);
    if (!tt_private_cache(cache_dir, "test_text_fuzz"))
        return 1;
    jit_ok = tex_target_available("cpu");
#define RUN(fn, nv, ns, tr) TT_RUN(test_##fn);
    RS_WORKLOADS(RUN)
    TT_RUN(test_summary);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
