/*
 * tex_merge: common-subexpression elimination of computes. A stage whose
 * definition repeats another's (the same dtype and shape, and a body equal
 * up to the names of its axes and reduce axes: texi_expr_alpha_equal) is
 * dropped, and every stage that read it reads the other instead, so the
 * repeated elements are computed once.
 *
 * Legality (docs/api.md, rule 5):
 *   - both are compute stages of one schedule, distinct, neither a scatter
 *     part (ir/scatter.c), with equal definitions;
 *   - dup is not an output (an output must be computed where it is stored)
 *     and has no schedule primitive applied (its loops would be lost): it is
 *     computed at the root, untouched, and nothing is attached inside it;
 *   - kept is not computed at another stage's loops (compute_at): there it
 *     covers only what that stage reads, not what dup's readers need. kept
 *     may be scheduled otherwise; dup's readers see its elements as they are.
 * kept then takes dup's place in the stage order when it came later, so that
 * it is computed before every former reader of dup (its inputs, dup's, all
 * come before dup).
 */
#include "schedule/primitive.h"
#include "schedule/trace.h"

bool texi_stage_same_definition(const tex_stage *st, const tex_stage *kept)
{
    const texi_op *a = st->op, *b = kept->op;
    const tex_tensor *ta = st->tensor, *tb = kept->tensor;
    if (ta->dtype != tb->dtype || ta->ndim != tb->ndim || a->n_axes != b->n_axes ||
        a->n_axes > TEXI_ALPHA_MAX || a->scatter_rows || b->scatter_rows)
        return false;
    tex_expr *av[TEXI_ALPHA_MAX], *bv[TEXI_ALPHA_MAX];
    for (int i = 0; i < ta->ndim; i++)
        if (!texi_expr_equal(ta->shape[i], tb->shape[i]))
            return false;
    for (int i = 0; i < a->n_axes; i++) {
        if (!texi_expr_alpha_equal(a->axes[i]->min, b->axes[i]->min, i, av, bv) ||
            !texi_expr_alpha_equal(a->axes[i]->extent, b->axes[i]->extent, i, av, bv))
            return false;
        av[i] = a->axes[i]->var;
        bv[i] = b->axes[i]->var;
    }
    return texi_expr_alpha_equal(a->body, b->body, a->n_axes, av, bv);
}

/* The checks of the top comment; 0 or the error recorded. */
static int check_merge(const tex_stage *dup, const tex_stage *kept, const char *call)
{
    TEXI_TRY(texi_stage_check(dup, call, true));
    TEXI_TRY(texi_stage_check(kept, call, true));
    tex_ctx *ctx = dup->sch->ctx;
    const char *dn = dup->tensor->name, *kn = kept->tensor->name;
    TEXI_TRY(texi_stages_same_schedule(dup, kept, call));
    if (dup == kept)
        return texi_error(ctx, TEX_EINVAL, "%s: stage '%s' cannot be merged into itself", call, dn);
    if (dup->is_output)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s' is an output of the schedule; merge '%s' into it "
                          "instead",
                          call, dn, kn);
    if (dup->attach != TEXI_ATTACH_ROOT)
        return texi_error(ctx, TEX_EINVAL, "%s: stage '%s' is %s; merge it before that", call, dn,
                          dup->attach == TEXI_ATTACH_INLINE ? "inlined" : "computed at another");
    TEXI_TRY(texi_stage_check_untouched(dup, call));
    if (kept->attach == TEXI_ATTACH_AT)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s' is computed at axis '%s' of stage '%s', where it covers "
                          "only what '%s' reads; merge before tex_compute_at",
                          call, kn, kept->attach_iv->name, kept->attach_stage->tensor->name,
                          kept->attach_stage->tensor->name);
    if (!texi_stage_same_definition(dup, kept))
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stages '%s' and '%s' have different definitions (dtype, shape or "
                          "body)",
                          call, dn, kn);
    return 0;
}

int tex_merge(tex_stage *dup, tex_stage *kept)
{
    static const char call[] = "tex_merge";
    TEXI_TRY(check_merge(dup, kept, call));
    tex_schedule *s = dup->sch;
    int n = 0;
    tex_stage **readers = texi_schedule_consumers(s, dup->tensor, &n);
    if (!readers && n > 0)
        return tex_errcode(s->ctx);
    texi_op **ops = texi_alloc(s->ctx, sizeof *ops * (size_t)(n + 1), "reader ops");
    if (!ops)
        return TEX_ENOMEM;
    for (int i = 0; i < n; i++)
        if (!(ops[i] = texi_op_redirect(s->ctx, readers[i]->op, dup->tensor, kept->tensor)))
            return texi_error(s->ctx, TEX_ENOMEM, "%s: out of memory (reader ops)", call);
    // Everything is allocated: commit.
    texi_trace_rec tr;
    texi_trace_begin(&tr, s, "merge");
    texi_trace_stage(&tr, dup);
    texi_trace_stage(&tr, kept);
    for (int i = 0; i < n; i++)
        readers[i]->op = ops[i];
    int at = texi_schedule_stage_index(s, dup);
    texi_schedule_remove(s, at);
    int k = texi_schedule_stage_index(s, kept);
    if (k > at) {
        texi_schedule_remove(s, k);
        texi_schedule_insert(s, at, kept);
    }
    texi_trace_commit(&tr);
    return 0;
}
