/*
 * Zero-padded loads through the JIT: the guarded_loads pass (a load in a
 * select arm or on the right of && / || becomes an unconditional load at a
 * clamped index, bound by a LET) and padded convolutions built with
 * tex_build(f, "cpu") under the default compiler and flags, compared with
 * the oracle.
 *
 * The convolutions are written as users write them, with the padded input as
 * an intermediate P = select(in bounds, X[c, y - ph, x - pw], 0) (no clamp of
 * their own, so the load is out of range where the condition is false) and
 * Out[o, h, w] = sum P[c, h*sh + r, w*sw + q] * Wt[o, c, r, q]. The first
 * case is a reported miscompilation: Ci=1, Co=2, KH=2, KW=1, ph=1, pw=0,
 * H=11, W=2 with only tex_parallel(Out, w), which GCC 12 at -O3 -march=native
 * turned into 8 wrong outputs of 48 when the load sat in the select arm.
 * Then padding on all sides, strides, symbolic sizes (from the shapes and
 * as VAR parameters) and a wide row, each under several schedules (none,
 * the reported one, P inlined, P vectorized at root, P computed at a row of Out).
 * Then a predicated reduction whose guarded update GCC's SLP vectorizer
 * miscompiled while its loads sat under the guard.
 * Every case runs with the default compiler and, when clang is installed,
 * again with TEX_CC=clang; the reported case ("issue") also on two threads.
 *
 * Every build goes through a fresh temporary TEX_CACHE_DIR.
 */
#include "tt.h"
#include "support/tmpdir.h"
#include "support/ops.h"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

static char cache_dir[] = "/tmp/tex-test-pad-XXXXXX";

/* ------------------------------------------------------------ workloads */

typedef struct {
    const char *name;
    int64_t ci, co, h, wd, kh, kw, ph, pw, sh, sw;
    bool sym;        /* H and W symbolic */
    bool var_params; /* ... and passed as VAR parameters */
} conv_cfg;

/* x >= lo && x < hi */
static tex_expr *within(tex_expr *x, tex_expr *lo, tex_expr *hi)
{
    return tex_and(tex_ge(x, lo), tex_lt(x, hi));
}

/* The padded convolution of cfg in w (see the file comment); conditions only
 * for the padded dimensions, as the reported case's P has none for pw = 0. */
static tex_tensor *pad_conv(ops_wl *w, tex_ctx *c, const conv_cfg *k)
{
    ops_init(w, c, k->name);
    w->var_params = k->var_params;
    tex_expr *H = ops_size(w, "H", k->h, k->sym), *W = ops_size(w, "W", k->wd, k->sym);
    tex_expr *PH = tex_int(c, k->ph), *PW = tex_int(c, k->pw);
    tex_tensor *X = ops_input(w, "X", 3, (tex_expr *[]){tex_int(c, k->ci), H, W});
    tex_tensor *Wt = ops_input(
        w, "Wt", 4,
        (tex_expr *[]){tex_int(c, k->co), tex_int(c, k->ci), tex_int(c, k->kh), tex_int(c, k->kw)});
    tex_iter *pc = tex_axis(c, "c", tex_int(c, k->ci));
    tex_iter *py = tex_axis(c, "y", tex_add(H, tex_int(c, 2 * k->ph)));
    tex_iter *px = tex_axis(c, "x", tex_add(W, tex_int(c, 2 * k->pw)));
    tex_expr *cond = k->ph ? within(tex_iv(py), PH, tex_add(H, PH)) : NULL;
    if (k->pw) {
        tex_expr *cx = within(tex_iv(px), PW, tex_add(W, PW));
        cond = cond ? tex_and(cond, cx) : cx;
    }
    tex_expr *val = TEX_AT(X, tex_iv(pc), k->ph ? tex_sub(tex_iv(py), PH) : tex_iv(py),
                           k->pw ? tex_sub(tex_iv(px), PW) : tex_iv(px));
    tex_tensor *P = ops_mid(w, tex_compute(c, "P", 3, (tex_iter *[]){pc, py, px},
                                           cond ? tex_select(cond, val, ops_f(w, 0)) : val));
    tex_expr *OH =
        tex_add(tex_floordiv(tex_sub(tex_add(H, tex_int(c, 2 * k->ph)), tex_int(c, k->kh)),
                             tex_int(c, k->sh)),
                tex_int(c, 1));
    tex_expr *OW =
        tex_add(tex_floordiv(tex_sub(tex_add(W, tex_int(c, 2 * k->pw)), tex_int(c, k->kw)),
                             tex_int(c, k->sw)),
                tex_int(c, 1));
    tex_iter *o = tex_axis(c, "o", tex_int(c, k->co)), *oh = tex_axis(c, "h", OH);
    tex_iter *ow = tex_axis(c, "w", OW);
    tex_iter *rc = tex_reduce_axis(c, "rc", tex_int(c, k->ci));
    tex_iter *r = tex_reduce_axis(c, "r", tex_int(c, k->kh));
    tex_iter *q = tex_reduce_axis(c, "q", tex_int(c, k->kw));
    tex_expr *body =
        tex_mul(TEX_AT(P, tex_iv(rc), tex_add(tex_mul(tex_iv(oh), tex_int(c, k->sh)), tex_iv(r)),
                       tex_add(tex_mul(tex_iv(ow), tex_int(c, k->sw)), tex_iv(q))),
                TEX_AT(Wt, tex_iv(o), tex_iv(rc), tex_iv(r), tex_iv(q)));
    w->out = tex_compute(c, "Out", 3, (tex_iter *[]){o, oh, ow},
                         tex_sum(body, 3, (tex_iter *[]){rc, r, q}));
    return w->out;
}

static const conv_cfg ISSUE = {"issue", 1, 2, 11, 2, 2, 1, 1, 0, 1, 1, false, false};

static const conv_cfg CONVS[] = {
    {"issue", 1, 2, 11, 2, 2, 1, 1, 0, 1, 1, false, false},
    {"all_sides", 2, 3, 9, 7, 3, 3, 1, 1, 1, 1, false, false},
    {"strided", 2, 2, 10, 13, 3, 2, 2, 1, 2, 3, false, false},
    {"symbolic", 2, 3, 9, 7, 3, 3, 1, 1, 1, 1, true, false},
    {"symbolic_vars", 2, 2, 10, 13, 3, 2, 2, 1, 2, 3, true, true},
    {"wide_row", 1, 2, 6, 37, 3, 3, 1, 1, 1, 1, false, false},
};

/* ------------------------------------------------------------ schedules */

enum { SCHED_NONE, SCHED_ISSUE, SCHED_INLINE, SCHED_VECTOR, SCHED_AT, SCHED_COUNT };
static const char *const sched_names[SCHED_COUNT] = {"none", "parallel(Out, w)", "P inlined",
                                                     "P vectorized at root", "P at Out's h"};

/* Applies schedule `which` to the padded convolution w; 0 or an error. */
static int apply_schedule(const ops_wl *w, tex_schedule *s, int which)
{
    tex_tensor *P = w->mid[0], *Out = w->out;
    tex_stage *sp = tex_stage_of(s, P), *so = tex_stage_of(s, Out);
    tex_iter *outer, *inner;
    switch (which) {
    case SCHED_NONE:
        return 0;
    case SCHED_ISSUE:
        return tex_parallel(so, tex_op_axis(so, 2));
    case SCHED_INLINE:
        TEXI_TRY(tex_compute_inline(sp));
        return tex_parallel(so, tex_op_axis(so, 0));
    case SCHED_VECTOR:
        TEXI_TRY(tex_split(sp, tex_op_axis(sp, 2), tex_int(w->ctx, 8), &outer, &inner));
        TEXI_TRY(tex_vectorize(sp, inner));
        TEXI_TRY(tex_parallel(so, tex_op_axis(so, 0)));
        TEXI_TRY(tex_split(so, tex_op_axis(so, 2), tex_int(w->ctx, 4), &outer, &inner));
        return tex_vectorize(so, inner);
    case SCHED_AT:
        return tex_compute_at(sp, so, tex_op_axis(so, 1));
    }
    return TEX_EINVAL;
}

/* One case: build, run on random inputs (output poisoned), compare with the
 * oracle. Prints a report on failure. */
static void check_case(const conv_cfg *k, int which, const char *target, const char *cc)
{
    tex_ctx *c = tex_ctx_new();
    ops_wl w;
    pad_conv(&w, c, k);
    tex_schedule *s = tex_schedule_new(c, 1, &w.out);
    char why[2048] = "";
    int rc = s ? apply_schedule(&w, s, which) : TEX_ENOMEM;
    tex_func *f = rc == 0 ? ops_lower(&w, s, why, sizeof why) : NULL;
    if (rc != 0)
        snprintf(why, sizeof why, "schedule failed (%d): %s", rc, tex_errmsg(c));
    if (!f || ops_jit_compare(&w, f, target, 17, why, sizeof why) != 0) {
        TT_FAILF("%s, schedule '%s', target \"%s\", compiler %s", k->name, sched_names[which],
                 target, cc ? cc : "(default)");
        ops_report(&w, 17, NULL, f, why);
    }
    tex_ctx_free(c);
}

/* Runs fn under each compiler: the default one, then clang when it works. */
static void each_compiler(void (*fn)(const char *cc))
{
    const char *old = getenv("TEX_CC");
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", old ? old : "");
    fn(NULL);
    setenv("TEX_CC", "clang", 1);
    if (getenv("TEX_SANITIZE_FLAGS")) /* see test_jit_random.c: second_cc_usable */
        printf("  note: sanitized run; the second compiler runs in the plain suite\n");
    else if (tex_target_available("cpu"))
        fn("clang");
    else
        printf("  note: clang is not installed; the second compiler is skipped\n");
    if (old)
        setenv("TEX_CC", saved, 1);
    else
        unsetenv("TEX_CC");
}

/* --------------------------------------------------------------- tests */

static void issue_case(const char *cc)
{
    check_case(&ISSUE, SCHED_ISSUE, "cpu", cc);
    check_case(&ISSUE, SCHED_ISSUE, "cpu -threads=2", cc);
}

/* The reported case, exactly. */
static void test_issue_conv(void)
{
    each_compiler(issue_case);
}

static void all_cases(const char *cc)
{
    for (size_t i = 0; i < sizeof CONVS / sizeof CONVS[0]; i++)
        for (int which = 0; which < SCHED_COUNT; which++)
            check_case(&CONVS[i], which, "cpu", cc);
}

/* Padding on all sides, strides, symbolic sizes, a wide row; five schedules. */
static void test_padded_convs(void)
{
    each_compiler(all_cases);
}

/* --------------------------------------- the source without the JIT's flags */

/* Compiles source with the JIT's flags (jit.c's FIXED_FLAGS, $TEX_CFLAGS,
 * $TEX_SANITIZE_FLAGS) but without the probe's workaround into DIR/NAME.so
 * through the shell; the loaded handle or NULL. */
static void *compile_plain(const char *source, const char *name)
{
    char src[256], so[256], cmd[4096];
    snprintf(src, sizeof src, "%s/%s.c", cache_dir, name);
    snprintf(so, sizeof so, "%s/%s.so", cache_dir, name);
    FILE *fp = fopen(src, "w");
    if (!fp)
        return NULL;
    fputs(source, fp);
    fclose(fp);
    const char *cc = getenv("TEX_CC"), *fl = getenv("TEX_CFLAGS");
    const char *san = getenv("TEX_SANITIZE_FLAGS");
    int n = snprintf(cmd, sizeof cmd,
                     "%s -std=c99 -O3 -march=native -fno-trapping-math -ffp-contract=fast -fopenmp "
                     "-fPIC -shared "
                     "%s %s -o '%s' '%s' -lm",
                     cc && *cc ? cc : "cc", fl ? fl : "", san ? san : "", so, src);
    if (n < 0 || (size_t)n >= sizeof cmd || system(cmd) != 0)
        return NULL;
    return dlopen(so, RTLD_NOW | RTLD_LOCAL);
}

/* The "c" target's source of a convolution under schedule `which`, compiled
 * without the probe's help, called directly (a symbolic H and W are the
 * entry point's last two arguments) and compared with the oracle: the
 * emitted code itself must be right. */
static void check_plain(const conv_cfg *k, int which)
{
    tex_ctx *c = tex_ctx_new();
    ops_wl w;
    pad_conv(&w, c, k);
    tex_schedule *s = tex_schedule_new(c, 1, &w.out);
    char why[512];
    tex_func *f = s && apply_schedule(&w, s, which) == 0 ? ops_lower(&w, s, why, sizeof why) : NULL;
    tex_kernel *kn = f ? tex_build(f, "c") : NULL;
    void *h = kn ? compile_plain(tex_kernel_source(kn), k->name) : NULL;
    void *sym = h ? dlsym(h, k->name) : NULL;
    int (*fn3)(void *, void *, void *) = NULL;
    int (*fn5)(void *, void *, void *, int64_t, int64_t) = NULL; /* then H, W */
    memcpy(k->sym ? (void *)&fn5 : (void *)&fn3, &sym, sizeof sym);
    TT_CHECK(sym != NULL);
    tex_tensor *ts[3] = {w.in[0], w.in[1], w.out};
    DLTensor *a[3], *ref = ops_array_for(&w, w.out);
    uint64_t rng = 5;
    for (int i = 0; i < 3; i++) {
        a[i] = ops_array_for(&w, ts[i]);
        if (i < 2)
            ops_fill_random(a[i], TEX_F32, &rng);
    }
    ops_poison(a[2], TEX_F32);
    int rc = fn5   ? fn5(a[0]->data, a[1]->data, a[2]->data, k->h, k->wd)
             : fn3 ? fn3(a[0]->data, a[1]->data, a[2]->data)
                   : -1;
    TT_EQ_INT(rc, 0);
    TT_EQ_INT(tex_eval_reference(c, 3, ts, (DLTensor *[]){a[0], a[1], ref}), 0);
    int64_t bad = ops_compare(a[2], ref, TEX_F32);
    if (bad >= 0)
        TT_FAILF("%s, schedule '%s': Out[%lld] = %.9g, oracle %.9g", k->name, sched_names[which],
                 (long long)bad, ops_get(a[2], TEX_F32, bad), ops_get(ref, TEX_F32, bad));
    for (int i = 0; i < 3; i++)
        tex_array_free(a[i]);
    tex_array_free(ref);
    if (h)
        dlclose(h);
    tex_kernel_free(kn);
    tex_ctx_free(c);
}

/* Every convolution's emitted C, compiled with -O3 -march=native and
 * nothing else, under every schedule. */
static void test_source_without_probe(void)
{
    for (size_t i = 0; i < sizeof CONVS / sizeof CONVS[0]; i++)
        for (int which = 0; which < SCHED_COUNT; which++)
            check_plain(&CONVS[i], which);
}

/* ------------------------------------------------------ compiler probe */

/* Writes an executable shell script; false on failure. */
static bool write_script(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    if (!fp)
        return false;
    fputs(text, fp);
    return fclose(fp) == 0 && chmod(path, 0700) == 0;
}

/* Lines of path containing part. */
static int count_lines(const char *path, const char *part)
{
    FILE *fp = fopen(path, "r");
    char line[4096];
    int n = 0;
    while (fp && fgets(line, sizeof line, fp))
        n += strstr(line, part) != NULL;
    if (fp)
        fclose(fp);
    return n;
}

/* The content of the one *.probe file in dir ("" when there is none or more);
 * dir is a cache's probe/ subdirectory. */
static void probe_file(const char *dir, char *text, size_t cap)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    text[0] = '\0';
    while (d && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        char path[512];
        if (len < 6 || strcmp(e->d_name + len - 6, ".probe") != 0 || n++)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *fp = fopen(path, "r");
        size_t got = fp ? fread(text, 1, cap - 1, fp) : 0;
        text[got] = '\0';
        if (fp)
            fclose(fp);
    }
    if (d)
        closedir(d);
    if (n != 1)
        text[0] = '\0';
}

/* Builds the reported case's convolution with TEX_CC=cc_path (in a fresh cache
 * directory `cache`); true when it matches the oracle. */
static bool build_issue(const char *cc_path, const char *cache)
{
    setenv("TEX_CC", cc_path, 1);
    setenv("TEX_CACHE_DIR", cache, 1);
    tex_ctx *c = tex_ctx_new();
    ops_wl w;
    pad_conv(&w, c, &ISSUE);
    tex_schedule *s = tex_schedule_new(c, 1, &w.out);
    char why[2048];
    tex_func *f = s ? ops_lower(&w, s, why, sizeof why) : NULL;
    bool ok = f && ops_jit_compare(&w, f, "cpu", 3, why, sizeof why) == 0;
    if (!ok)
        printf("  %s\n", why);
    tex_ctx_free(c);
    setenv("TEX_CACHE_DIR", cache_dir, 1);
    return ok;
}

/* A compiler that miscompiles the probe (a wrapper that breaks the probe's
 * loop unless it is given -fno-tree-loop-if-convert) gets that flag on every
 * kernel; a correct compiler (a wrapper that compiles at -O2 and fails when
 * given the flag) does not. The probe is compiled once per compiler and
 * flags, then remembered in the process and the cache. */
static void test_compiler_probe(void)
{
    const char *old = getenv("TEX_CC");
    char saved[1024], bad_cc[256], good_cc[256], log[256], cache[256], script[4096];
    snprintf(saved, sizeof saved, "%s", old ? old : "cc");
    snprintf(log, sizeof log, "%s/cc.log", cache_dir);
    snprintf(bad_cc, sizeof bad_cc, "%s/bad-cc", cache_dir);
    snprintf(good_cc, sizeof good_cc, "%s/good-cc", cache_dir);
    snprintf(script, sizeof script,
             "#!/bin/sh\necho \"bad $*\" >> '%s'\n"
             "case \"$*\" in *-fno-tree-loop-if-convert*|*--version*) exec %s \"$@\";; esac\n"
             "sed 's/py >= 1 \\&\\& py < 12 ? v/py >= 2 \\&\\& py < 12 ? v/' | exec %s \"$@\"\n",
             log, saved, saved);
    TT_CHECK(write_script(bad_cc, script));
    snprintf(script, sizeof script,
             "#!/bin/sh\necho \"good $*\" >> '%s'\n"
             "case \"$*\" in *-fno-tree-loop-if-convert*) exit 3;; esac\nexec %s \"$@\" -O2\n",
             log, saved);
    TT_CHECK(write_script(good_cc, script));
    snprintf(cache, sizeof cache, "%s/bad-cache", cache_dir);
    TT_CHECK(build_issue(bad_cc, cache));
    /* the probe and, beside it, the kernel without the workaround (then discarded); the
     * probe with the workaround; the kernel with it */
    TT_EQ_INT(count_lines(log, "bad -std=c99"), 4);
    TT_EQ_INT(count_lines(log, "-fno-tree-loop-if-convert -x c -"), 2); /* the flag comes last */
    TT_EQ_INT(tt_count_files(cache, ".so"), 1); /* the discarded kernel left no entry */
    TT_CHECK(build_issue(bad_cc, cache));       /* remembered: nothing compiled */
    TT_EQ_INT(count_lines(log, "bad -std=c99"), 4);
    char verdict[16];
    strcat(cache, "/probe");
    probe_file(cache, verdict, sizeof verdict);
    TT_EQ_STR(verdict, "fix\n");
    snprintf(cache, sizeof cache, "%s/good-cache", cache_dir);
    TT_CHECK(build_issue(good_cc, cache)); /* refuses the workaround, which it does not need */
    TT_EQ_INT(count_lines(log, "good -std=c99"), 2);
    strcat(cache, "/probe");
    probe_file(cache, verdict, sizeof verdict);
    TT_EQ_STR(verdict, "none\n");
    TT_EQ_INT(count_lines(log, "-fno-tree-loop-if-convert"), 2);
    if (old)
        setenv("TEX_CC", saved, 1);
    else
        unsetenv("TEX_CC");
}

/* ------------------------------------------------- the pass's output */

/* The AST of f's body after guarded_loads (malloc'ed). */
static char *guarded(tex_func *f)
{
    texi_lower lw = {f->ctx, NULL, f, false};
    tex_stmt *out = NULL;
    if (texi_lower_apply(&lw, "guarded_loads", texi_pass_guarded_loads, f->body, &out) != 0)
        return NULL;
    return texi_stmt_str(out);
}

static bool has(const char *text, const char *part)
{
    bool ok = text && strstr(text, part);
    if (!ok)
        printf("  missing \"%s\" in:\n%s\n", part, text ? text : "(null)");
    return ok;
}

/* A predicated reduction under the schedule that GCC 12's SLP vectorizer
 * miscompiled (2 of 7 sums wrong) while its update sat under a guard with
 * the loads inside: `if ((i + j) % 3 != 1) Sum[i] = Sum[i] + X[i, j]`. */
static void guarded_accumulate(const char *cc)
{
    tex_ctx *c = tex_ctx_new();
    ops_wl w;
    ops_init(&w, c, "sum_where");
    tex_tensor *S = ops_reduce(&w, 0, true, false, 7, 13, 1, false);
    tex_schedule *s = tex_schedule_new(c, 1, &S);
    tex_stage *st = tex_stage_of(s, S);
    tex_iter *io, *jo, *ii, *ji, *iio, *iii, *jio, *jii;
    TT_EQ_INT(tex_tile(st, tex_op_axis(st, 0), tex_op_reduce_axis(st, 0), tex_int(c, 7),
                       tex_int(c, 15), &io, &jo, &ii, &ji),
              0);
    TT_EQ_INT(tex_reorder(st, 4, (tex_iter *[]){jo, ii, ji, io}), 0);
    TT_EQ_INT(tex_split(st, ii, tex_int(c, 4), &iio, &iii), 0);
    TT_EQ_INT(tex_reorder(st, 5, (tex_iter *[]){ji, io, jo, iio, iii}), 0);
    TT_EQ_INT(tex_split(st, ji, tex_int(c, 5), &jio, &jii), 0);
    char why[2048];
    tex_func *f = ops_lower(&w, s, why, sizeof why);
    if (!f || ops_jit_compare(&w, f, "cpu", 465, why, sizeof why) != 0)
        TT_FAILF("%s: %s", cc ? cc : "default compiler", why);
    tex_ctx_free(c);
}

static void test_guarded_accumulate(void)
{
    each_compiler(guarded_accumulate);
}

/* The issue's P: the load leaves the select arm, clamped on both sides; the
 * lowered function itself keeps the select over the load (the interpreter
 * and CUDA see it unchanged). */
static void test_pass_issue_form(void)
{
    tex_ctx *c = tex_ctx_new();
    ops_wl w;
    pad_conv(&w, c, &ISSUE);
    tex_schedule *s = tex_schedule_new(c, 1, &w.out);
    char why[512];
    tex_func *f = ops_lower(&w, s, why, sizeof why);
    TT_CHECK(f != NULL);
    char *after = f ? guarded(f) : NULL, *before = f ? tex_func_str(f) : NULL;
    TT_CHECK(has(after, "let X_ld = X[max(min(y*2 + x - 2, 21), 0)]\n"));
    TT_CHECK(has(after, "P[y*2 + x] = select(y >= 1 && y < 12, X_ld, 0.0f)\n"));
    TT_CHECK(has(after, "P[h*2 + w + r*2]*Wt[o*2 + r]")); /* unconditional: unchanged */
    TT_CHECK(has(before, "select(y >= 1 && y < 12, X[y*2 + x - 2], 0.0f)"));
    free(after);
    free(before);
    tex_ctx_free(c);
}

/* Q[i] = select(i < 5, A[i], 0) + select(i >= 2 && A[i - 2] > 0, 1, 0) + B[i]:
 * an in-range load is hoisted without a clamp, the right side of && gets the
 * one clamp it needs, a load outside any select stays where it is. */
static void test_pass_clamps_only_unproven_sides(void)
{
    tex_ctx *c = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(c, "A", TEX_F32, 1, (int64_t[]){8});
    tex_tensor *B = tex_placeholder_c(c, "B", TEX_F32, 1, (int64_t[]){8});
    tex_iter *i = tex_axis(c, "i", tex_int(c, 8));
    tex_expr *zero = tex_const(c, TEX_F32, 0), *one = tex_const(c, TEX_F32, 1);
    tex_expr *a = tex_select(tex_lt(tex_iv(i), tex_int(c, 5)), TEX_AT(A, tex_iv(i)), zero);
    tex_expr *cnd = tex_and(tex_ge(tex_iv(i), tex_int(c, 2)),
                            tex_gt(TEX_AT(A, tex_sub(tex_iv(i), tex_int(c, 2))), zero));
    tex_expr *body = tex_add(tex_add(a, tex_select(cnd, one, zero)), TEX_AT(B, tex_iv(i)));
    tex_tensor *Q = tex_compute(c, "Q", 1, &i, body);
    tex_schedule *s = tex_schedule_new(c, 1, &Q);
    tex_func *f = tex_lower_tensors(s, "q", 3, (tex_tensor *[]){A, B, Q});
    TT_CHECK(f != NULL);
    char *after = f ? guarded(f) : NULL;
    TT_CHECK(has(after, "let A_ld = A[i]\n"));
    TT_CHECK(has(after, "let A_ld = A[max(i - 2, 0)]\n"));
    TT_CHECK(has(after, "+ B[i]"));
    TT_CHECK(!strstr(after ? after : "", "select(i < 5, A["));
    free(after);
    tex_ctx_free(c);
}

/* G[i] = g(g(X[(i * 7) % 16])) with g(x) = x * x + x inlined, in a
 * vectorized loop: X's load repeats 9 times and steps by 7, so pass simd
 * makes it a gather the C printer writes lane by lane; it is loaded once
 * into a LET (an inlined chain multiplies the copies: a gelu of a gelu of
 * a reshaped pooling held 25 gathers and took GCC minutes). A repeated
 * load along the lanes (B[i] * B[i]) and one outside a vectorized loop
 * stay as they are. */
static void test_pass_shared_gathers(void)
{
    tex_ctx *c = tex_ctx_new();
    tex_tensor *X = tex_placeholder_c(c, "X", TEX_F32, 1, (int64_t[]){16});
    tex_tensor *B = tex_placeholder_c(c, "B", TEX_F32, 1, (int64_t[]){16});
    tex_iter *i = tex_axis(c, "i", tex_int(c, 16));
    tex_expr *x = TEX_AT(X, tex_floormod(tex_mul(tex_iv(i), tex_int(c, 7)), tex_int(c, 16)));
    tex_expr *g1 = tex_add(tex_mul(x, x), x), *b = TEX_AT(B, tex_iv(i));
    tex_expr *body = tex_add(tex_add(tex_mul(g1, g1), g1), tex_mul(b, b));
    tex_tensor *G = tex_compute(c, "G", 1, &i, body);
    for (int vec = 0; vec < 2; vec++) {
        tex_schedule *s = tex_schedule_new(c, 1, &G);
        tex_stage *st = tex_stage_of(s, G);
        TT_CHECK(!vec || tex_vectorize(st, tex_stage_axis(st, 0)) == 0);
        tex_func *f = tex_lower_tensors(s, "g", 3, (tex_tensor *[]){X, B, G});
        TT_CHECK(f != NULL);
        char *after = f ? guarded(f) : NULL;
        const char *t = after ? after : "";
        TT_CHECK(!strstr(t, "B_g"));
        if (vec) {
            TT_CHECK(has(after, "let X_g = X[i*7%16]\n"));
            TT_CHECK(strstr(t, "X_g*X_g") && !strstr(strstr(t, "X_g*X_g"), "X["));
        } else {
            TT_CHECK(!strstr(t, "X_g"));
        }
        free(after);
    }
    tex_ctx_free(c);
}

/* With a symbolic H the input may be empty: the hoisted load is read only
 * when it has an element (a loop-invariant condition). */
static void test_pass_symbolic_size(void)
{
    tex_ctx *c = tex_ctx_new();
    static const conv_cfg k = {"sym", 1, 1, 5, 3, 2, 1, 1, 0, 1, 1, true, false};
    ops_wl w;
    pad_conv(&w, c, &k);
    tex_schedule *s = tex_schedule_new(c, 1, &w.out);
    char why[512];
    tex_func *f = ops_lower(&w, s, why, sizeof why);
    TT_CHECK(f != NULL);
    char *after = f ? guarded(f) : NULL;
    TT_CHECK(has(after, "let X_ld = select(H*W >= 1, X[max(min(W*y + x - W, H*W - 1), 0)], 0.0f)"));
    free(after);
    tex_ctx_free(c);
}

/* P = pad(X [h, w, c]) by one pixel on each side, its channels vectorized
 * (split by vec when vec < c), and
 * Q[i, j] = select(j < 3, X[i, w - 1, j + c - 3], 0) with its j (c channels)
 * vectorized, in w. */
static tex_schedule *lane_cases(ops_wl *w, tex_ctx *c, int64_t h, int64_t wd, int64_t ch,
                                int64_t vec)
{
    ops_init(w, c, "lane_free");
    tex_tensor *X =
        ops_input(w, "X", 3, (tex_expr *[]){tex_int(c, h), tex_int(c, wd), tex_int(c, ch)});
    tex_tensor *P = tex_op_pad(c, "P", X, (int64_t[]){1, 1, 0}, (int64_t[]){1, 1, 0}, 0.0);
    tex_iter *i = tex_axis(c, "i", tex_int(c, h)), *j = tex_axis(c, "j", tex_int(c, ch));
    tex_expr *in = tex_lt(tex_iv(j), tex_int(c, 3));
    tex_expr *sel = tex_select(
        in, TEX_AT(X, tex_iv(i), tex_int(c, wd - 1), tex_add(tex_iv(j), tex_int(c, ch - 3))),
        tex_const(c, TEX_F32, 0));
    tex_tensor *Q = tex_compute(c, "Q", 2, (tex_iter *[]){i, j}, sel);
    /* one output: Out[y, x, k] = P[y, x, k] + Q[y % h, k] */
    tex_iter *y = tex_axis(c, "y", tex_int(c, h + 2)), *x = tex_axis(c, "x", tex_int(c, wd + 2));
    tex_iter *k = tex_axis(c, "k", tex_int(c, ch));
    tex_expr *sum = tex_add(TEX_AT(P, tex_iv(y), tex_iv(x), tex_iv(k)),
                            TEX_AT(Q, tex_floormod(tex_iv(y), tex_int(c, h)), tex_iv(k)));
    w->out = tex_compute(c, "Out", 3, (tex_iter *[]){y, x, k}, sum);
    tex_schedule *s = tex_schedule_new(c, 1, &w->out);
    tex_stage *sp = tex_stage_of(s, P), *sq = tex_stage_of(s, Q);
    tex_iter *o, *v;
    int rc = tex_compute_root(sp);
    rc = rc ? rc : tex_compute_root(sq);
    if (vec < ch) {
        rc = rc ? rc : tex_split(sp, tex_op_axis(sp, 2), tex_int(c, vec), &o, &v);
        rc = rc ? rc : tex_vectorize(sp, v);
    } else {
        rc = rc ? rc : tex_vectorize(sp, tex_op_axis(sp, 2));
    }
    rc = rc ? rc : tex_vectorize(sq, tex_op_axis(sq, 1));
    return rc == 0 ? s : NULL;
}

/* A select whose condition holds for all lanes of the vectorized loop or
 * for none (the padding tests the pixel, not the channel) clamps the lanes'
 * base, so the load stays one contiguous vector; a condition on the lane
 * (Q's j < 3) keeps the clamp of each lane. */
static void test_pass_lane_free_base(void)
{
    tex_ctx *c = tex_ctx_new();
    ops_wl w;
    tex_schedule *s = lane_cases(&w, c, 5, 6, 16, 16);
    char why[512];
    tex_func *f = s ? ops_lower(&w, s, why, sizeof why) : NULL;
    TT_CHECK(f != NULL);
    char *after = f ? guarded(f) : NULL;
    TT_CHECK(has(after, "let X_ld = X[max(min(i0*96 + i1*16 - 112, 464), 0) + i2]\n"));
    TT_CHECK(has(after, "let X_ld = X[min(i*96 + j + 93, 479)]\n"));
    free(after);
    tex_ctx_free(c);
}

/* lane_cases through the JIT against the oracle: whole vectors, a split
 * with a partial last vector (a guard on the lane), odd sizes. */
static void lane_free_jit(const char *cc)
{
    static const int64_t shapes[][4] = {
        {5, 6, 16, 16}, {3, 7, 37, 16}, {1, 1, 5, 5}, {4, 3, 40, 8}};
    for (size_t n = 0; n < sizeof shapes / sizeof shapes[0]; n++) {
        tex_ctx *c = tex_ctx_new();
        ops_wl w;
        const int64_t *d = shapes[n];
        tex_schedule *s = lane_cases(&w, c, d[0], d[1], d[2], d[3]);
        char why[2048] = "schedule failed";
        tex_func *f = s ? ops_lower(&w, s, why, sizeof why) : NULL;
        if (!f || ops_jit_compare(&w, f, "cpu", 11 + n, why, sizeof why) != 0)
            TT_FAILF("%s, shape %zu: %s", cc ? cc : "default compiler", n, why);
        tex_ctx_free(c);
    }
}

static void test_lane_free_jit(void)
{
    each_compiler(lane_free_jit);
}

/* Normalized rows of tanh of a zero-padded input, auto-scheduled for "cuda"
 * and run on the CPU: each block sums its row in a thread loop whose padding
 * test names that loop (r3 >= 1) around a serial loop of 7 (the "threads"
 * of an rfactor). GCC 12 at -O3 on AVX-512 unswitched that loop on the
 * test, if-converted the subtraction of the mean into a masked subtraction
 * (it may trap, for all GCC knows) and kept the mask of the other version:
 * two of the seven squared differences became 0. Kernels are compiled with
 * -fno-trapping-math (jit.c). */
static void invariant_test_case(const char *cc)
{
    tex_ctx *c = tex_ctx_new();
    ops_wl w;
    ops_init(&w, c, "pad_tanh_layernorm");
    tex_expr *two = tex_int(c, 2), *five = tex_int(c, 5), *one = tex_int(c, 1);
    tex_tensor *A = ops_input(&w, "A", 4, (tex_expr *[]){two, five, one, one});
    tex_tensor *B = ops_input(&w, "B", 4, (tex_expr *[]){two, five, two, one});
    tex_tensor *Bias = ops_input(&w, "Bias", 1, (tex_expr *[]){tex_int(c, 3)});
    tex_tensor *AB = tex_op_concat(c, "AB", 2, (tex_tensor *[]){A, B}, 2);
    tex_tensor *X = AB ? tex_op_bias_add(c, "X", AB, Bias, 2) : NULL;
    tex_tensor *P =
        X ? tex_op_pad(c, "P", X, (const int64_t[]){1, 0, 2, 1}, (const int64_t[]){0, 2, 2, 0}, 0.0)
          : NULL;
    tex_tensor *T = P ? tex_op_tanh(c, "T", P) : NULL;
    w.out = T ? tex_op_layernorm(c, "LN", T, NULL, NULL, 2, 0.1) : NULL;
    tex_schedule *s = w.out ? tex_auto_schedule(c, 1, &w.out, "cuda") : NULL;
    char why[2048] = "auto-schedule failed";
    tex_func *f = s ? ops_lower(&w, s, why, sizeof why) : NULL;
    int rc = f ? 0 : -1;
    for (int threads = 1; rc == 0 && threads <= 2; threads++)
        rc = ops_jit_compare(&w, f, threads == 1 ? "cpu" : "cpu -threads=2", 7, why, sizeof why);
    if (rc != 0)
        TT_FAILF("%s: %s", cc ? cc : "default compiler", why);
    tex_ctx_free(c);
}

static void test_invariant_test_in_reduction(void)
{
    each_compiler(invariant_test_case);
}

int main(void)
{
    TT_RUN(test_pass_issue_form);
    TT_RUN(test_pass_clamps_only_unproven_sides);
    TT_RUN(test_pass_symbolic_size);
    TT_RUN(test_pass_shared_gathers);
    TT_RUN(test_pass_lane_free_base);
    if (!tt_private_cache(cache_dir, "test_jit_padding"))
        return 1;
    if (tex_target_available("cpu")) {
        TT_RUN(test_issue_conv);
        TT_RUN(test_padded_convs);
        TT_RUN(test_guarded_accumulate);
        TT_RUN(test_lane_free_jit);
        TT_RUN(test_invariant_test_in_reduction);
        TT_RUN(test_source_without_probe);
        TT_RUN(test_compiler_probe);
    } else {
        printf("SKIP jit_padding (no working C compiler for target \"cpu\")\n");
    }
    tt_remove_tree(cache_dir);
    return tt_finish();
}
