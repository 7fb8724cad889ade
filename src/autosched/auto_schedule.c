/*
 * tex_auto_schedule: the public entry of the automatic scheduler. Checks the
 * arguments and the target string, makes an ordinary schedule of the
 * outputs, merges the computes that repeat another's definition
 * (merge_repeats), then runs the graph level (classify.c, partition.c), prints the
 * partition for TEX_DUMP=fusion (dump.c) and runs the kernel level of the
 * target (cpu.c, cuda.c); or, when $TEX_TUNE_LOG names a tuning log with trials of
 * this workload and target, applies the fastest of them instead (tex_tune,
 * docs/tuning.md). The result is what tex_schedule_new returns, edited only
 * by public primitives, so a caller may print, inspect and refine it.
 *
 * The schedule the rules made is checked: lowered (texi_lower_all) and put
 * through the target's build-time passes, as tex_lower and tex_build would.
 * One that fails there, or a primitive the rules apply that fails, is a bug
 * of the rules; rather than hand it to the caller, whose tex_lower or
 * tex_build would refuse it, tex_auto_schedule returns the plain schedule
 * (every compute stage a kernel of its own, the target option "-plain")
 * and says so in tex_warnmsg and TEX_DUMP=fusion.
 */
#include "autosched/autosched.h"
#include "autosched/tuning_log.h"
#include "lower/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char CALL[] = "tex_auto_schedule";

typedef struct {
    bool cuda;
    bool strict_float;
    int threads;       /* "cpu -threads=N": N; 0 when not given */
    int sm;            /* "cuda -arch=sm_NN": NN; 0 when not given */
    bool no_tensorize; /* "cpu -no-tensorize": no CPU GEMM built-ins */
    bool plain;        /* "-plain": texi_as_schedule_cpu_plain / _cuda_plain */
    long l1, l2;       /* "cpu -l1=B -l2=B": the cache sizes to size for; 0: the host's */
} as_options;

enum { MIN_CACHE = 1024, MAX_CACHE = 1 << 30 };

/* Whether the word p[0, len) is `name` followed by a byte count (decimal,
 * optionally with a K or M suffix) in [MIN_CACHE, MAX_CACHE]; it in *bytes. */
static bool parse_cache(const char *p, size_t len, const char *name, long *bytes)
{
    size_t plen = strlen(name), i = plen;
    if (len <= plen || strncmp(p, name, plen) != 0)
        return false;
    int64_t v = 0;
    for (; i < len && p[i] >= '0' && p[i] <= '9' && v <= MAX_CACHE; i++)
        v = v * 10 + (p[i] - '0');
    if (i == plen || len - i > 1)
        return false;
    v *= i == len ? 1 : p[i] == 'K' ? 1024 : p[i] == 'M' ? 1024 * 1024 : 0;
    *bytes = (long)v;
    return v >= MIN_CACHE && v <= MAX_CACHE;
}

/* Whether the word p[0, len) is "-arch=sm_NN" (two or three digits, NN >= 50);
 * NN in *sm. */
static bool parse_arch(const char *p, size_t len, int *sm)
{
    const size_t plen = strlen("-arch=sm_");
    if (len < plen + 2 || len > plen + 3 || strncmp(p, "-arch=sm_", plen) != 0)
        return false;
    int v = 0;
    for (size_t i = plen; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (p[i] - '0');
    }
    *sm = v;
    return v >= 50;
}

/* Whether the word p[0, len) is an option of the target family: both take
 * "-strict-float" and "-plain"; "cpu" "-threads=N" (N >= 1), "-no-tensorize",
 * "-l1=B" and "-l2=B"; "cuda" "-arch=sm_NN" and "-emit-only" (accepted so
 * that tex_build's target string may be given). */
static bool parse_option(const char *p, size_t len, as_options *o)
{
    char *end = NULL;
    if (len == 13 && strncmp(p, "-strict-float", 13) == 0)
        return o->strict_float = true;
    if (len == 6 && strncmp(p, "-plain", 6) == 0)
        return o->plain = true;
    if (o->cuda)
        return (len == 10 && strncmp(p, "-emit-only", 10) == 0) || parse_arch(p, len, &o->sm);
    if (len == 13 && strncmp(p, "-no-tensorize", 13) == 0)
        return o->no_tensorize = true;
    if (parse_cache(p, len, "-l1=", &o->l1) || parse_cache(p, len, "-l2=", &o->l2))
        return true;
    return len > 9 && strncmp(p, "-threads=", 9) == 0 &&
           (o->threads = (int)strtol(p + 9, &end, 10)) > 0 && end == p + len;
}

/* Parses "cpu [-strict-float] [-plain] [-threads=N] [-no-tensorize] [-l1=B] [-l2=B]"
 * or "cuda [-strict-float] [-plain] [-arch=sm_NN] [-emit-only]"; 0 or TEX_EINVAL
 * naming the target or the option. */
static int parse_target(tex_ctx *ctx, const char *target, as_options *o)
{
    if (!target)
        return texi_error(ctx, TEX_EMISUSE, "%s: the target is NULL", CALL);
    const char *p = target + strspn(target, " ");
    size_t len = strcspn(p, " ");
    o->cuda = len == 4 && strncmp(p, "cuda", 4) == 0;
    if (!o->cuda && (len != 3 || strncmp(p, "cpu", 3) != 0))
        return texi_error(ctx, TEX_EINVAL,
                          "%s: unknown target \"%s\" (automatic schedules exist for \"cpu\" and "
                          "\"cuda\")",
                          CALL, target);
    for (p += len; *(p += strspn(p, " ")); p += len) {
        len = strcspn(p, " ");
        if (!parse_option(p, len, o))
            return texi_error(
                ctx, TEX_EINVAL, "%s: target \"%s\": unknown option \"%.*s\" (expected %s)", CALL,
                target, (int)len, p,
                o->cuda ? "\"-arch=sm_NN\" with NN >= 50, \"-strict-float\", "
                          "\"-plain\" or \"-emit-only\""
                        : "\"-threads=N\" with N >= 1, \"-strict-float\", \"-plain\", "
                          "\"-no-tensorize\", \"-l1=B\" or \"-l2=B\" (B bytes, "
                          "1K to 1024M)");
    }
    return 0;
}

/* The argument checks of API rule 1, named for this call. */
static int check_outputs(tex_ctx *ctx, int n, tex_tensor *const outputs[])
{
    if (n <= 0)
        return texi_error(ctx, TEX_EINVAL, "%s: %d outputs given (at least one is needed)", CALL,
                          n);
    if (!outputs)
        return texi_error(ctx, TEX_EMISUSE, "%s: the outputs array is NULL", CALL);
    for (int i = 0; i < n; i++)
        if (!outputs[i]) {
            texi_error_null_operand(ctx, CALL, "outputs[i]");
            return TEX_EMISUSE;
        }
    return 0;
}

/* When $TEX_TUNE_LOG names a tuning log holding trials of this workload and
 * target (tex_tune), applies the fastest that still applies to s; whether
 * it did. */
static bool apply_tuned(tex_schedule *s, int n, tex_tensor *const outputs[], const char *target)
{
    const char *path = getenv("TEX_TUNE_LOG");
    if (!path || !*path)
        return false;
    char key[65];
    texi_tune_key(s->ctx, n, outputs, key);
    char *text = texi_tune_log_best(s->ctx, path, key, target, n, outputs);
    bool applied = text && tex_schedule_apply_text(s, text) == 0;
    free(text);
    return applied;
}

/* Common subexpressions first (tex_merge): a compute stage that repeats an
 * earlier one's definition is merged into it, or, when it is an output and
 * the earlier one is not, the earlier one into it (two outputs both stay).
 * The pairs go to g for TEX_DUMP=fusion. 0 or an error (recorded). */
static int merge_repeats(texi_as_graph *g)
{
    tex_schedule *s = g->sch;
    int n = s->n_stages;
    tex_stage **st = texi_alloc(g->ctx, sizeof *st * (size_t)n, "an automatic schedule");
    g->merged = texi_alloc(g->ctx, sizeof *g->merged * (size_t)(2 * n), "an automatic schedule");
    if (!st || !g->merged)
        return TEX_ENOMEM;
    memcpy(st, s->stages, sizeof *st * (size_t)n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < j && st[j]; i++) {
            if (!st[i] || st[i]->op->kind != TEXI_OP_COMPUTE ||
                st[j]->op->kind != TEXI_OP_COMPUTE || (st[i]->is_output && st[j]->is_output) ||
                !texi_stage_same_definition(st[i], st[j]))
                continue;
            int dup = st[j]->is_output ? i : j, kept = i + j - dup;
            TEXI_TRY(tex_merge(st[dup], st[kept]));
            g->merged[2 * g->n_merged] = st[dup]->tensor->name;
            g->merged[2 * g->n_merged++ + 1] = st[kept]->tensor->name;
            st[dup] = NULL;
        }
    return 0;
}

/* The schedule of the rules (the two levels of the file comment) in s. 0,
 * or the error recorded. */
static int schedule_by_rules(tex_schedule *s, const as_options *o, const char *target)
{
    texi_as_graph g = {.sch = s,
                       .ctx = s->ctx,
                       .strict_float = o->strict_float,
                       .cuda = o->cuda,
                       .sm = o->sm,
                       .no_tensorize = o->no_tensorize};
    TEXI_TRY(merge_repeats(&g));
    g.n = s->n_stages;
    g.nodes = texi_alloc(s->ctx, sizeof *g.nodes * (size_t)g.n, "an automatic schedule");
    if (!g.nodes)
        return TEX_ENOMEM;
    for (int i = 0; i < g.n; i++)
        g.nodes[i].st = s->stages[i];
    texi_as_machine_probe(&g.mach, o->threads);
    g.mach.l1 = o->l1 ? o->l1 : g.mach.l1;
    g.mach.l2 = o->l2 ? o->l2 : g.mach.l2;
    TEXI_TRY(texi_as_classify(&g));
    TEXI_TRY(texi_as_partition(&g));
    if (o->cuda)
        TEXI_TRY(texi_as_cuda_refine(&g));
    texi_as_dump(&g, target);
    return o->cuda ? texi_as_schedule_cuda(&g) : texi_as_schedule_cpu(&g);
}

/* The plain schedule (texi_as_schedule_cpu_plain) in s; `why` it was
 * chosen goes to TEX_DUMP=fusion. 0, or the error recorded. */
static int schedule_plain(tex_schedule *s, const as_options *o, const char *target, const char *why)
{
    texi_as_graph g = {.sch = s, .ctx = s->ctx, .strict_float = o->strict_float, .cuda = o->cuda};
    texi_as_machine_probe(&g.mach, o->threads);
    texi_as_dump_plain(&g, target, why);
    return o->cuda ? texi_as_schedule_cuda_plain(&g) : texi_as_schedule_cpu_plain(&g);
}

/* Whether s lowers and passes the target's build-time passes (what tex_build
 * runs before it prints the code); when not, the reason goes to why (when
 * not NULL) and the error is forgotten (the caller handles it). */
static bool lowers(tex_schedule *s, const as_options *o, char *why, size_t why_size)
{
    tex_func *f = texi_lower_all(s, CALL, "auto_schedule_check");
    tex_func copy;
    texi_device_module module;
    if (f && texi_lower_tail(f, o->cuda ? TEXI_TAIL_GPU : TEXI_TAIL_CPU, o->strict_float, &copy,
                             o->cuda ? &module : NULL) == 0)
        return true;
    if (why)
        snprintf(why, why_size, "%s", tex_errmsg(s->ctx));
    texi_clear_error(s->ctx);
    return false;
}

tex_schedule *tex_auto_schedule(tex_ctx *ctx, int n, tex_tensor *const outputs[],
                                const char *target)
{
    as_options o = {0};
    if (!ctx || check_outputs(ctx, n, outputs) || parse_target(ctx, target, &o))
        return NULL;
    tex_schedule *s = tex_schedule_new(ctx, n, outputs);
    if (!s)
        return NULL;
    if (apply_tuned(s, n, outputs, target))
        return s;
    if (o.plain)
        return schedule_plain(s, &o, target, "the target's option -plain") < 0 ? NULL : s;
    /* with an error already recorded, a failing check would not be told
     * from it: the schedule is returned unchecked */
    bool check = tex_errcode(ctx) == 0;
    int rc = schedule_by_rules(s, &o, target);
    char why[TEXI_ERRMSG_MAX];
    if (!check || rc == TEX_ENOMEM || (rc == 0 && lowers(s, &o, why, sizeof why)))
        return rc < 0 ? NULL : s;
    if (rc < 0) {
        snprintf(why, sizeof why, "%s", tex_errmsg(ctx));
        texi_clear_error(ctx);
    }
    /* a bug of the rules: the plain schedule instead, when it lowers */
    const char *what = rc < 0 ? "could not be made" : "does not lower";
    char reason[TEXI_ERRMSG_MAX + 64];
    snprintf(reason, sizeof reason, "the rules' schedule %s: %s", what, why);
    tex_schedule *p = tex_schedule_new(ctx, n, outputs);
    if (!p || schedule_plain(p, &o, target, reason) < 0 || !lowers(p, &o, NULL, 0)) {
        texi_clear_error(ctx);
        if (rc < 0) /* the rules' own error, as before */
            texi_error(ctx, rc, "%s", why);
        return rc < 0 ? NULL : s;
    }
    texi_warn(ctx,
              "%s: the schedule made for '%s' %s (%s); every compute stage is a kernel of its "
              "own instead (as with -plain)",
              CALL, outputs[0]->name, what, why);
    return p;
}
