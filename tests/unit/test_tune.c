/*
 * The measured tuner (docs/tuning.md): tex_tune on small workloads with a
 * tiny budget finds a schedule that lowers, compiles and matches the oracle,
 * never slower than the automatic one; every trial lands in the log, then
 * the chosen line of the schedule returned, which a later tex_auto_schedule
 * with $TEX_TUNE_LOG applies; a log
 * with malformed, foreign and stale lines is read without trusting them
 * (tex_warnmsg says what was skipped); concurrent appends never mix lines;
 * the search space, the cost model (on synthetic data) and every refusal;
 * compiling ahead on spare processors; CUDA (refused without a device).
 */
#include "tt.h"
#include "support/ops.h"
#include "support/tmpdir.h"

#include "autosched/tuning_log.h"
#include "tune/tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/tex-test-tune-XXXXXX";

/* Y = relu(A . B + bias) (m x n x k): a GEMM with an epilogue. */
static void gemm_relu(ops_wl *w, int64_t m, int64_t n, int64_t k)
{
    ops_init(w, tex_ctx_new(), "gemm_relu");
    tex_ctx *c = w->ctx;
    tex_tensor *A = tex_placeholder_c(c, "A", TEX_F32, 2, (int64_t[]){m, k});
    tex_tensor *B = tex_placeholder_c(c, "B", TEX_F32, 2, (int64_t[]){k, n});
    tex_tensor *bias = tex_placeholder_c(c, "bias", TEX_F32, 1, (int64_t[]){n});
    tex_tensor *C = tex_op_matmul(c, "C", A, B, 0, 0);
    w->in[w->n_in++] = A;
    w->in[w->n_in++] = B;
    w->in[w->n_in++] = bias;
    w->out = tex_op_relu(c, "Y", tex_op_add(c, "D", C, bias));
}

/* Y = softmax(X) over rows (r x c): a row-wise chain. */
static void softmax(ops_wl *w, int64_t r, int64_t c)
{
    ops_init(w, tex_ctx_new(), "softmax");
    w->in[w->n_in++] = tex_placeholder_c(w->ctx, "X", TEX_F32, 2, (int64_t[]){r, c});
    w->out = tex_op_softmax(w->ctx, "Y", w->in[0], 1);
}

/* Lines of path. */
static int count_lines(const char *path)
{
    FILE *fp = fopen(path, "r");
    int n = 0;
    for (int ch; fp && (ch = fgetc(fp)) != EOF;)
        n += ch == '\n';
    if (fp)
        fclose(fp);
    return n;
}

/* Tunes w with a tiny budget logging to log; checks the result against the
 * oracle through the JIT and returns its trace (malloc'ed) or NULL. */
static char *tune_and_check(ops_wl *w, const char *log, tex_tune_stats *st, tex_tune_search how,
                            const char *target)
{
    tex_tune_options o = {.time_budget_s = 60,
                          .max_trials = 6,
                          .jobs = 2,
                          .log_path = log,
                          .search = how,
                          .stats = st};
    tex_schedule *best = NULL;
    int rc = tex_tune(w->ctx, 1, &w->out, target, &o, &best);
    TT_EQ_INT(rc, 0);
    if (rc) {
        printf("  %s\n", tex_errmsg(w->ctx));
        return NULL;
    }
    TT_CHECK(st->trials >= 2 && st->trials <= 6);
    TT_CHECK(st->best_trial >= 1 && st->best_trial <= st->trials);
    TT_CHECK(st->best_ms > 0 && st->best_ms <= st->base_ms);
    TT_EQ_INT(st->oracle_checked, 1);
    char why[2048];
    tex_func *f = ops_lower(w, best, why, sizeof why);
    if (!f || ops_jit_compare(w, f, "cpu", 11, why, sizeof why) != 0)
        TT_FAILF("the tuned schedule: %s", why);
    return tex_schedule_trace(best);
}

/* The lines of the log at path whose time field starts with "chosen:"; the
 * text (escaped) of the last one into last. */
static int chosen_lines(const char *path, char *last, size_t cap)
{
    FILE *fp = fopen(path, "r");
    char line[8192];
    int n = 0;
    while (fp && fgets(line, sizeof line, fp)) {
        char *f = line;
        for (int i = 0; i < 3 && f; i++)
            f = strchr(f, '\t') ? strchr(f, '\t') + 1 : NULL;
        if (f && strncmp(f, "chosen:", 7) == 0) {
            n++;
            snprintf(last, cap, "%s", strchr(f, '\t') ? strchr(f, '\t') + 1 : "");
        }
    }
    if (fp)
        fclose(fp);
    return n;
}

/* A tuned GEMM: the log holds its trials and one chosen line, the
 * schedule returned, which tex_auto_schedule with $TEX_TUNE_LOG gives back. */
static void test_tune_gemm_and_reuse(void)
{
    char log[600];
    snprintf(log, sizeof log, "%s/gemm.log", dir);
    ops_wl w;
    gemm_relu(&w, 37, 41, 29);
    tex_tune_stats st;
    char *best = tune_and_check(&w, log, &st, TEX_TUNE_MODEL, "cpu");
    int lines = count_lines(log); /* timed trials, those refused once built (not texts), chosen */
    TT_CHECK(lines >= st.trials + 1 && lines <= st.trials + st.rejected + 1);
    char last[8192] = "";
    TT_EQ_INT(chosen_lines(log, last, sizeof last), 1);
    TT_CHECK(last[0] != '\0');
    setenv("TEX_TUNE_LOG", log, 1);
    tex_schedule *again = tex_auto_schedule(w.ctx, 1, &w.out, "cpu");
    char *text = again ? tex_schedule_trace(again) : NULL;
    TT_EQ_STR(text ? text : "(none)", best ? best : "");
    TT_EQ_STR(tex_warnmsg(w.ctx), "");
    tex_schedule *other = tex_auto_schedule(w.ctx, 1, &w.out, "cpu -strict-float");
    char *other_text = other ? tex_schedule_trace(other) : NULL; /* another target: not tuned */
    unsetenv("TEX_TUNE_LOG");
    tex_schedule *plain = tex_auto_schedule(w.ctx, 1, &w.out, "cpu -strict-float");
    char *plain_text = plain ? tex_schedule_trace(plain) : NULL;
    TT_CHECK(other_text && plain_text && strcmp(other_text, plain_text) == 0);
    free(best), free(text), free(other_text), free(plain_text);
    tex_ctx_free(w.ctx);
}

/* Random search, on a row-wise chain. */
static void test_tune_softmax_random(void)
{
    ops_wl w;
    softmax(&w, 33, 70);
    tex_tune_stats st;
    free(tune_and_check(&w, NULL, &st, TEX_TUNE_RANDOM, "cpu"));
    tex_ctx_free(w.ctx);
}

/* Kernels on one thread leave processors to compile the next batch on while
 * one is timed (on a machine with more than one): the same checks, and no
 * setting is timed twice although the next batch is proposed before the
 * current one's times are known. */
static void test_tune_compiling_ahead(void)
{
    char log[600];
    snprintf(log, sizeof log, "%s/ahead.log", dir);
    ops_wl w;
    gemm_relu(&w, 23, 31, 19);
    tex_tune_stats st;
    free(tune_and_check(&w, log, &st, TEX_TUNE_MODEL, "cpu -threads=1"));
    FILE *fp = fopen(log, "r");
    char lines[16][4096];
    int n = 0;
    while (fp && n < 16 && fgets(lines[n], sizeof lines[n], fp)) {
        if (strstr(lines[n], "\tchosen:")) /* the result: a trial's text again */
            continue;
        char *text = strrchr(lines[n], '\t'); /* the schedule is the last field */
        for (int i = 0; text && i < n; i++)
            if (strcmp(strrchr(lines[i], '\t'), text) == 0)
                TT_FAILF("trial %d repeats trial %d", n + 1, i + 1);
        n++;
    }
    if (fp)
        fclose(fp);
    TT_CHECK(n >= st.trials);
    tex_ctx_free(w.ctx);
}

/* CUDA: every candidate runs on device copies of the arrays; without a
 * driver and a device the call is refused before anything is built. */
static void test_tune_cuda(void)
{
    ops_wl w;
    gemm_relu(&w, 37, 41, 29);
    tex_tune_stats st;
    tex_tune_options o = {.time_budget_s = 60, .max_trials = 4, .stats = &st};
    tex_schedule *best = NULL;
    int rc = tex_tune(w.ctx, 1, &w.out, "cuda", &o, &best);
    if (!tex_target_available("cuda")) {
        TT_EQ_INT(rc, TEX_EUNAVAILABLE);
        TT_CHECK(strstr(tex_errmsg(w.ctx), "\"cuda\"") != NULL);
        TT_CHECK(best == NULL);
    } else {
        TT_EQ_INT(rc, 0);
        TT_CHECK(best && st.best_ms > 0 && st.best_ms <= st.base_ms);
        char why[512];
        TT_CHECK(best && ops_lower(&w, best, why, sizeof why) != NULL);
    }
    tex_ctx_free(w.ctx);
}

/* An 8 x 16 softmax for the log tests: its key, and the path of log `name`. */
static void log_workload(ops_wl *w, const char *name, char log[600], char key[65])
{
    snprintf(log, 600, "%s/%s", dir, name);
    softmax(w, 8, 16);
    texi_tune_key(w->ctx, 1, &w->out, key);
}

/* Malformed lines are skipped with a warning; lines of another workload or
 * target are ignored; a line whose text does not apply is skipped with a
 * warning; the fastest valid line wins. */
static void test_log_is_not_trusted(void)
{
    char log[600], key[65];
    ops_wl w;
    log_workload(&w, "bad.log", log, key);
    FILE *fp = fopen(log, "w");
    TT_CHECK(fp != NULL);
    if (!fp)
        return;
    fprintf(fp, "garbage\n");
    fprintf(fp, "tex-tune-1\t%s\tcpu\t-3\tparallel Y i0\n", key);      /* negative time */
    fprintf(fp, "tex-tune-1\t%s\tcpu\t0.5\tsplit Y i1 4\\q\n", key);   /* unknown escape */
    fprintf(fp, "tex-tune-1\t%s\tcpu\t0.1\tsplit Y nothere 4\n", key); /* does not apply */
    fprintf(fp, "tex-tune-1\t%064d\tcpu\t0.01\tparallel Y i0\n", 7);   /* another workload */
    fprintf(fp, "tex-tune-1\t%s\tcpu -threads=1\t0.01\tparallel Y i0\n", key); /* another target */
    fprintf(fp, "tex-tune-1\t%s\tcpu\tfailed\tsplit Y i1 2\n", key);           /* a failed trial */
    fprintf(fp, "tex-tune-1\t%s\tcpu\t0.3\tsplit Y i1 8\\nparallel Y i1.outer\n", key);
    fprintf(fp, "tex-tune-1\t%s\tcpu\t0.2\tsplit Y i1 4\\nparallel Y i0\n", key);
    fclose(fp);
    char *best = texi_tune_log_best(w.ctx, log, key, "cpu", 1, &w.out);
    TT_EQ_STR(best ? best : "(none)", "split Y i1 4\nparallel Y i0");
    TT_CHECK(strstr(tex_warnmsg(w.ctx), "does not apply"));
    TT_EQ_INT(tex_errcode(w.ctx), 0);
    free(best);
    tex_clear_error(w.ctx);
    setenv("TEX_TUNE_LOG", log, 1);
    tex_schedule *s = tex_auto_schedule(w.ctx, 1, &w.out, "cpu");
    unsetenv("TEX_TUNE_LOG");
    char *text = s ? tex_schedule_trace(s) : NULL;
    TT_EQ_STR(text ? text : "(none)", "split Y i1 4\nparallel Y i0\n");
    free(text);
    /* only malformed lines: the first is named */
    fp = fopen(log, "w");
    if (fp) {
        fprintf(fp, "tex-tune-1\tshort\n");
        fclose(fp);
    }
    tex_clear_error(w.ctx);
    TT_CHECK(texi_tune_log_best(w.ctx, log, key, "cpu", 1, &w.out) == NULL);
    TT_CHECK(strstr(tex_warnmsg(w.ctx), "line 1 is malformed"));
    TT_CHECK(texi_tune_log_best(w.ctx, "/nonexistent/log", key, "cpu", 1, &w.out) == NULL);
    tex_ctx_free(w.ctx);
}

/* Chosen lines (what a tex_tune returned) win over faster trials: the last
 * one that applies; a chosen line without a number is malformed. */
static void test_log_chosen(void)
{
    char log[600], key[65];
    ops_wl w;
    log_workload(&w, "chosen.log", log, key);
    TT_EQ_INT(texi_tune_log_append(log, key, "cpu", 0.1, "split Y i1 4\nparallel Y i0", false), 0);
    char *best = texi_tune_log_best(w.ctx, log, key, "cpu", 1, &w.out);
    TT_EQ_STR(best ? best : "(none)", "split Y i1 4\nparallel Y i0");
    free(best);
    TT_EQ_INT(texi_tune_log_append(log, key, "cpu", 0.5, "split Y i1 8\nparallel Y i0", true), 0);
    TT_EQ_INT(texi_tune_log_append(log, key, "cpu", 0.3, "split Y i1 2\nparallel Y i0", true), 0);
    TT_EQ_INT(texi_tune_log_append(log, key, "cpu -threads=1", 0.2, "parallel Y i0", true), 0);
    TT_EQ_INT(texi_tune_log_append(log, key, "cpu", 0.01, "split Y i1 16\nparallel Y i0", false),
              0);
    best = texi_tune_log_best(w.ctx, log, key, "cpu", 1, &w.out);
    TT_EQ_STR(best ? best : "(none)", "split Y i1 2\nparallel Y i0"); /* the last chosen one */
    free(best);
    TT_EQ_INT(texi_tune_log_append(log, key, "cpu", 0.4, "split Y nothere 2", true), 0);
    best = texi_tune_log_best(w.ctx, log, key, "cpu", 1, &w.out);
    TT_EQ_STR(best ? best : "(none)", "split Y i1 2\nparallel Y i0"); /* it does not apply */
    TT_CHECK(strstr(tex_warnmsg(w.ctx), "does not apply"));
    free(best);
    FILE *fp = fopen(log, "w");
    if (fp) {
        fprintf(fp, "tex-tune-1\t%s\tcpu\tchosen:0.2\tsplit Y i1 4\\nparallel Y i0\n", key);
        fprintf(fp, "tex-tune-1\t%s\tcpu\tchosen:\tparallel Y i0\n", key);
        fclose(fp);
    }
    tex_clear_error(w.ctx);
    best = texi_tune_log_best(w.ctx, log, key, "cpu", 1, &w.out);
    TT_EQ_STR(best ? best : "(none)", "split Y i1 4\nparallel Y i0");
    TT_CHECK(strstr(tex_warnmsg(w.ctx), "line 2 is malformed"));
    free(best);
    tex_ctx_free(w.ctx);
}

/* Four processes appending 200 lines each: every line arrives whole. */
static void test_concurrent_appends(void)
{
    char log[600], key[65];
    snprintf(log, sizeof log, "%s/many.log", dir);
    memset(key, 'a', 64);
    key[64] = '\0';
    pid_t pids[4];
    for (int p = 0; p < 4; p++) {
        if ((pids[p] = fork()) == 0) {
            char text[300];
            for (int i = 0; i < 200; i++) {
                snprintf(text, sizeof text, "split Y i1 %d\nparallel Y i0\n; %0200d", p * 1000 + i,
                         i);
                if (texi_tune_log_append(log, key, "cpu", 1.0 + i, text, false) != 0)
                    _exit(1);
            }
            _exit(0);
        }
    }
    for (int p = 0; p < 4; p++) {
        int status = 1;
        TT_CHECK(pids[p] > 0 && waitpid(pids[p], &status, 0) == pids[p] && status == 0);
    }
    FILE *fp = fopen(log, "r");
    char line[1024];
    int n = 0, whole = 0;
    while (fp && fgets(line, sizeof line, fp)) {
        n++;
        whole += strncmp(line, "tex-tune-1\t", 11) == 0 && strlen(line) > 200 &&
                 line[strlen(line) - 1] == '\n';
    }
    if (fp)
        fclose(fp);
    TT_EQ_INT(n, 800);
    TT_EQ_INT(whole, 800);
}

/* Knobs of a text, the text of the base setting, mutations. */
static void test_space(void)
{
    const char *base = "tile C i j 6 16\nreorder C i.outer j.outer i.inner j.inner\n"
                       "parallel C i.outer\nsplit C.local k 4 guard\nunroll C.local k.inner\n"
                       "vectorize_reduce S r\n";
    texi_tune_space s;
    TT_EQ_INT(texi_tune_space_init(&s, base), 0);
    TT_EQ_INT(s.n_knobs, 6); /* two tile factors, the order, the split factor, two toggles */
    texi_tune_point p, q;
    texi_tune_space_base(&s, &p);
    char *text = texi_tune_space_text(&s, &p);
    TT_EQ_STR(text ? text : "", base);
    free(text);
    p.v[0] = 8; /* the tile's first factor */
    p.v[2] = 1; /* swap the first pair of the reorder */
    p.v[4] = 0; /* drop the unroll */
    text = texi_tune_space_text(&s, &p);
    TT_EQ_STR(text ? text : "", "tile C i j 8 16\nreorder C j.outer i.outer i.inner j.inner\n"
                                "parallel C i.outer\nsplit C.local k 4 guard\n"
                                "vectorize_reduce S r\n");
    free(text);
    uint64_t rng = 42;
    int changed = 0;
    for (int i = 0; i < 100; i++) {
        texi_tune_space_base(&s, &q);
        texi_tune_space_mutate(&s, &q, &rng);
        changed += !texi_tune_point_equal(&s, &q, &p);
        for (int k = 0; k < s.n_knobs; k++)
            if (s.knobs[k].kind == TEXI_KNOB_FACTOR && (q.v[k] < 1 || q.v[k] > 2048))
                TT_FAILF("knob %d mutated to %d", k, q.v[k]);
    }
    TT_CHECK(changed > 90);
    texi_tune_space_free(&s);
}

/* The model learns a parabola in log2 of a factor and ranks by it. */
static void test_model_on_synthetic_data(void)
{
    texi_tune_space s;
    TT_EQ_INT(texi_tune_space_init(&s, "split C i 8\nsplit C j 4\nunroll C j.inner\n"), 0);
    enum { ROWS = 40 };
    double x[ROWS * TEXI_TUNE_MAX_FEATURES], y[ROWS];
    uint64_t rng = 7;
    int nf = 0;
    texi_tune_point p;
    for (int r = 0; r < ROWS; r++) {
        texi_tune_space_base(&s, &p);
        for (int m = 0; m < 4; m++)
            texi_tune_space_mutate(&s, &p, &rng);
        nf = texi_tune_features(&s, &p, x + r * nf);
        double a = log2((double)p.v[0]), b = log2((double)p.v[1]);
        y[r] = (a - 4) * (a - 4) + 0.5 * b + (p.v[2] ? 0 : 0.3) + 1.0; /* best: 16, 1, unrolled */
    }
    TT_EQ_INT(nf, 6);
    texi_tune_model m;
    TT_CHECK(texi_tune_model_fit(&m, ROWS, nf, x, y, 1e-6));
    double err = 0;
    for (int r = 0; r < ROWS; r++)
        err = fmax(err, fabs(texi_tune_model_predict(&m, x + r * nf) - y[r]));
    TT_CHECK(err < 1e-3);
    double good[TEXI_TUNE_MAX_FEATURES], bad[TEXI_TUNE_MAX_FEATURES];
    p = (texi_tune_point){{16, 1, 1}};
    texi_tune_features(&s, &p, good);
    p = (texi_tune_point){{256, 64, 0}};
    texi_tune_features(&s, &p, bad);
    TT_CHECK(texi_tune_model_predict(&m, good) < texi_tune_model_predict(&m, bad));
    TT_CHECK(!texi_tune_model_fit(&m, 1, nf, x, y, 1.0)); /* too few rows */
    texi_tune_space_free(&s);
}

static void test_refusals(void)
{
    ops_wl w;
    softmax(&w, 4, 4);
    tex_schedule *best = (tex_schedule *)&w;
    TT_EQ_INT(tex_tune(NULL, 1, &w.out, "cpu", NULL, &best), TEX_EMISUSE);
    TT_EQ_INT(tex_tune(w.ctx, 1, &w.out, "cpu", NULL, NULL), TEX_EMISUSE);
    TT_EQ_INT(tex_tune(w.ctx, 1, NULL, "cpu", NULL, &best), TEX_EMISUSE);
    TT_CHECK(best == NULL);
    tex_clear_error(w.ctx);
    TT_EQ_INT(tex_tune(w.ctx, 1, &w.out, NULL, NULL, &best), TEX_EMISUSE);
    tex_clear_error(w.ctx);
    TT_EQ_INT(tex_tune(w.ctx, 0, &w.out, "cpu", NULL, &best), TEX_EINVAL);
    tex_clear_error(w.ctx);
    TT_EQ_INT(tex_tune(w.ctx, 1, &w.out, "gpu", NULL, &best), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(w.ctx), "gpu"));
    tex_clear_error(w.ctx);
    tex_ctx_free(w.ctx);
    /* a symbolic shape */
    tex_ctx *c = tex_ctx_new();
    tex_expr *n = tex_var(c, "n", TEX_I32);
    tex_tensor *X = tex_placeholder(c, "X", TEX_F32, 2, (tex_expr *[]){n, tex_int(c, 8)});
    tex_tensor *Y = tex_op_relu(c, "Y", X);
    TT_EQ_INT(tex_tune(c, 1, &Y, "cpu", NULL, &best), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(c), "tensor 'X' has a symbolic shape"));
    tex_clear_error(c);
    /* a scalar parameter */
    tex_expr *alpha = tex_var(c, "alpha", TEX_F32);
    tex_tensor *Z = tex_placeholder_c(c, "Z", TEX_F32, 1, (int64_t[]){8});
    tex_iter *i = tex_axis(c, "i", tex_int(c, 8));
    tex_tensor *S = tex_compute(c, "S", 1, &i, tex_mul(TEX_AT(Z, tex_iv(i)), alpha));
    TT_EQ_INT(tex_tune(c, 1, &S, "cpu", NULL, &best), TEX_EINVAL);
    TT_CHECK(strstr(tex_errmsg(c), "scalar parameter 'alpha'"));
    tex_ctx_free(c);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    TT_RUN(test_space);
    TT_RUN(test_model_on_synthetic_data);
    TT_RUN(test_concurrent_appends);
    TT_RUN(test_log_is_not_trusted);
    TT_RUN(test_log_chosen);
    TT_RUN(test_refusals);
    TT_RUN(test_tune_gemm_and_reuse);
    TT_RUN(test_tune_softmax_random);
    TT_RUN(test_tune_compiling_ahead);
    TT_RUN(test_tune_cuda);
    tt_remove_tree(dir);
    return tt_finish();
}
