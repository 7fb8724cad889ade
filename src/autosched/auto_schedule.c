/*
 * tex_auto_schedule: the public entry of the automatic scheduler. Checks the
 * arguments and the target string, makes an ordinary schedule of the
 * outputs, then runs the graph level (classify.c, partition.c), prints the
 * partition for TEX_DUMP=fusion (dump.c) and runs the kernel level of the
 * target (cpu.c); or, when $TEX_TUNE_LOG names a tuning log with trials of
 * this workload and target, applies the fastest of them instead (tex_tune,
 * docs/tuning.md). The result is what tex_schedule_new returns, edited only
 * by public primitives, so a caller may print, inspect and refine it.
 */
#include "autosched/autosched.h"
#include "autosched/tuning_log.h"

#include <stdlib.h>
#include <string.h>

static const char CALL[] = "tex_auto_schedule";

typedef struct {
    bool strict_float;
    int threads; /* 0: not given */
} as_options;

/* Parses "cpu [-strict-float] [-threads=N]"; 0 or TEX_EINVAL naming the
 * target or the option. */
static int parse_target(tex_ctx *ctx, const char *target, as_options *o)
{
    if (!target)
        return texi_error(ctx, TEX_EMISUSE, "%s: the target is NULL", CALL);
    const char *p = target + strspn(target, " ");
    size_t len = strcspn(p, " ");
    if (len != 3 || strncmp(p, "cpu", 3) != 0)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: unknown target \"%s\" (automatic schedules exist for \"cpu\")", CALL,
                          target);
    for (p += len; *(p += strspn(p, " "));) {
        len = strcspn(p, " ");
        char *end = NULL;
        if (len == 13 && strncmp(p, "-strict-float", 13) == 0) {
            o->strict_float = true;
        } else if (len > 9 && strncmp(p, "-threads=", 9) == 0 &&
                   (o->threads = (int)strtol(p + 9, &end, 10)) > 0 && end == p + len) {
            /* the thread count the kernels are sized for */
        } else {
            return texi_error(ctx, TEX_EINVAL, "%s: target \"%s\": unknown option \"%.*s\"", CALL,
                              target, (int)len, p);
        }
        p += len;
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

tex_schedule *tex_auto_schedule(tex_ctx *ctx, int n, tex_tensor *const outputs[],
                                const char *target)
{
    as_options o = {false, 0};
    if (!ctx || check_outputs(ctx, n, outputs) || parse_target(ctx, target, &o))
        return NULL;
    tex_schedule *s = tex_schedule_new(ctx, n, outputs);
    if (!s)
        return NULL;
    if (apply_tuned(s, n, outputs, target))
        return s;
    texi_as_graph g = {.sch = s, .ctx = ctx, .n = s->n_stages, .strict_float = o.strict_float};
    g.nodes = texi_alloc(ctx, sizeof *g.nodes * (size_t)g.n, "an automatic schedule");
    if (!g.nodes)
        return NULL;
    for (int i = 0; i < g.n; i++)
        g.nodes[i].st = s->stages[i];
    texi_as_machine_probe(&g.mach, o.threads);
    texi_as_classify(&g);
    if (texi_as_partition(&g) < 0)
        return NULL;
    texi_as_dump(&g, target);
    return texi_as_schedule_cpu(&g) < 0 ? NULL : s;
}
