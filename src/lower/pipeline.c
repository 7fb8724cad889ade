/*
 * The lowering pipeline: the one place that lists the passes, in order.
 *
 *   schedule + params
 *        |
 *   schedule_ops      loop nest of every stage: REALIZE / PROVIDE / ACCESS, guards, ATTRs
 *        |
 *   entry_checks      runtime checks ("assert") hoisted to the top, quantified over loops
 *        |
 *   flatten           REALIZE -> ALLOCATE, PROVIDE -> STORE, ACCESS -> LOAD (flat, strided)
 *        |
 *   loop_partition    loops with prefix guards -> guard-free main part + guarded tail
 *        |
 *   simplify          expressions under loop ranges; decided IFs; loops of extent 0 / 1
 *        |
 *   unroll            small unrolled loops replicated; others: serial + "pragma_unroll"
 *        |
 *   vectorize         vector loops checked (innermost, constant extent) or made serial
 *        |
 *   storage_rewrite   allocations sunk to their uses; equal-size temporaries reused
 *        |
 *   remove_noops      empty loops / branches / sequences, unused allocations dropped
 *        |
 *   tex_func body
 *
 * After ScheduleOps and after each pass the verifier (verify.c) runs in
 * debug builds (NDEBUG undefined) or when TEX_VERIFY=1; a failure is
 * TEX_EINTERNAL naming the pass. TEX_DUMP=all, or a comma-separated list of
 * names from the table (schedule_ops included), prints "# after NAME" and the
 * AST to stderr after those passes. This file is the only one in src/lower
 * that reads the environment or prints; the passes only see texi_lower.
 */
#include "lower/lower.h"
#include "lower/verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    texi_pass_fn fn;
} passes[] = {
    {"entry_checks", texi_pass_entry_checks},
    {"flatten", texi_pass_flatten},
    {"loop_partition", texi_pass_loop_partition},
    {"simplify", texi_pass_simplify},
    {"unroll", texi_pass_unroll},
    {"vectorize", texi_pass_vectorize},
    {"storage_rewrite", texi_pass_storage_rewrite},
    {"remove_noops", texi_pass_remove_noops},
};

/* Whether `name` is listed in the comma-separated TEX_DUMP (or it is "all"). */
static bool dump_wanted(const char *name)
{
    const char *list = getenv("TEX_DUMP");
    size_t len = strlen(name);
    while (list && *list) {
        size_t n = strcspn(list, ",");
        if ((n == 3 && strncmp(list, "all", 3) == 0) || (n == len && strncmp(list, name, n) == 0))
            return true;
        list += n + (list[n] == ',');
    }
    return false;
}

static bool verify_wanted(void)
{
#ifdef NDEBUG
    const char *v = getenv("TEX_VERIFY");
    return v && strcmp(v, "1") == 0;
#else
    return true;
#endif
}

static int after_pass(texi_lower *lw, const char *name, tex_stmt *s)
{
    if (verify_wanted())
        TEXI_TRY(texi_verify(lw, s, name));
    if (dump_wanted(name)) {
        char *text = texi_stmt_str(s);
        fprintf(stderr, "# after %s\n%s", name, text ? text : "(out of memory)\n");
        free(text);
    }
    return 0;
}

/* A failing step must leave a message in the context. */
static int failed(texi_lower *lw, const char *name, int rc)
{
    if (tex_errcode(lw->ctx) == 0)
        texi_error(lw->ctx, rc, "tex_lower: pass %s failed", name);
    return rc;
}

int texi_lower_run(texi_lower *lw, tex_stmt **out)
{
    tex_stmt *s = NULL;
    int rc = texi_schedule_ops(lw, &s);
    if (rc < 0 || !s)
        return failed(lw, "schedule_ops", rc < 0 ? rc : TEX_EINTERNAL);
    TEXI_TRY(after_pass(lw, "schedule_ops", s));
    for (size_t i = 0; i < sizeof passes / sizeof *passes; i++)
        TEXI_TRY(texi_lower_apply(lw, passes[i].name, passes[i].fn, s, &s));
    *out = s;
    return 0;
}

int texi_lower_apply(texi_lower *lw, const char *name, texi_pass_fn fn, tex_stmt *in,
                     tex_stmt **out)
{
    tex_stmt *next = NULL;
    int rc = fn(lw, in, &next);
    if (rc < 0 || !next)
        return failed(lw, name, rc < 0 ? rc : TEX_EINTERNAL);
    TEXI_TRY(after_pass(lw, name, next));
    *out = next;
    return 0;
}
