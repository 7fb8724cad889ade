/*
 * Attach points: compute_at, compute_inline, compute_root.
 *
 * A stage is computed at the top level (ROOT), inside a leaf loop of another
 * stage (AT), or substituted into its consumers (INLINE). Only the attach
 * fields change; the region computed at an attach point is bound
 * inference's business (bound.c).
 *
 * Legality decided here (docs/api.md, rule 5; TVM's rules where it has them):
 *   compute_at: neither stage is a placeholder, st is not an output (outputs
 *     are computed over their whole domain), st != parent, the parent is not
 *     inlined, parent_iv is a leaf of the parent, the parent reads st's tensor
 *     directly or through other stages, and the attach chain stays acyclic;
 *   compute_inline: not a placeholder, an output or a reduction, and no
 *     stage is attached inside st's loops (they would have nowhere to go);
 *   compute_root: not a placeholder.
 * Decided by lowering instead: whether every consumer of st can reach it from
 * where it is attached (e.g. st at C while B, also reading st, is at root).
 */
#include "schedule/primitive.h"
#include "schedule/trace.h"

/* consumer's current op reads t, directly or through the ops of other stages. */
static bool reads_transitively(const tex_schedule *s, const tex_stage *consumer,
                               const tex_tensor *t, int depth)
{
    const texi_op *op = consumer->op;
    if (op->kind != TEXI_OP_COMPUTE || depth > s->n_stages)
        return false;
    for (int i = 0; i < op->n_inputs; i++) {
        if (op->inputs[i] == t)
            return true;
        const tex_stage *p = texi_schedule_find_stage(s, op->inputs[i]);
        if (p && p != consumer && reads_transitively(s, p, t, depth + 1))
            return true;
    }
    return false;
}

static int check_at_target(const tex_stage *st, const tex_stage *parent, const tex_iter *iv,
                           const char *call)
{
    tex_ctx *ctx = st->sch->ctx;
    const char *sn = st->tensor->name, *pn = parent->tensor->name;
    if (parent->attach == TEXI_ATTACH_INLINE)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s' cannot be computed at stage '%s', "
                          "which is inlined (it has no loops)",
                          call, sn, pn);
    if (!iv)
        return texi_error(ctx, TEX_EMISUSE, "%s: stage '%s' at stage '%s': the axis is NULL", call,
                          sn, pn);
    if (iv->ctx != ctx)
        return texi_error(ctx, TEX_EMISUSE,
                          "%s: stage '%s' at stage '%s': axis '%s' comes from "
                          "another context",
                          call, sn, pn, iv->name);
    if (texi_stage_leaf_index(parent, iv) < 0)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s' at stage '%s': axis '%s' is not a leaf "
                          "axis of stage '%s'%s",
                          call, sn, pn, iv->name, pn,
                          texi_stage_iter_index(parent, iv) >= 0 ? " (it was split or fused)" : "");
    if (!reads_transitively(st->sch, parent, st->tensor, 0))
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s' at stage '%s', axis '%s': '%s' does not "
                          "consume '%s', directly or transitively",
                          call, sn, pn, iv->name, pn, sn);
    for (const tex_stage *a = parent; a->attach == TEXI_ATTACH_AT; a = a->attach_stage)
        if (a->attach_stage == st)
            return texi_error(ctx, TEX_EINVAL,
                              "%s: stage '%s' at stage '%s', axis '%s' would make "
                              "a cycle of attach points",
                              call, sn, pn, iv->name);
    return 0;
}

/* Records compute_inline / compute_root of st (which succeed). */
static void trace_attach(tex_stage *st, const char *prim)
{
    texi_trace_rec tr;
    texi_trace_begin(&tr, st->sch, prim);
    texi_trace_stage(&tr, st);
    texi_trace_commit(&tr);
}

int tex_compute_at(tex_stage *st, tex_stage *parent, tex_iter *parent_iv)
{
    static const char call[] = "tex_compute_at";
    TEXI_TRY(texi_stage_check(st, call, true));
    tex_ctx *ctx = st->sch->ctx;
    const char *sn = st->tensor->name;
    if (!parent)
        return texi_error(ctx, TEX_EMISUSE, "%s: stage '%s': the parent stage is NULL", call, sn);
    TEXI_TRY(texi_stages_same_schedule(st, parent, call));
    TEXI_TRY(texi_stage_check(parent, call, true));
    if (st == parent)
        return texi_error(ctx, TEX_EINVAL, "%s: stage '%s' cannot be computed at itself", call, sn);
    if (st->is_output)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s' is an output of the schedule; outputs "
                          "are computed at root",
                          call, sn);
    TEXI_TRY(check_at_target(st, parent, parent_iv, call));
    texi_trace_rec tr;
    texi_trace_begin(&tr, st->sch, "compute_at");
    texi_trace_stage(&tr, st);
    texi_trace_stage(&tr, parent);
    texi_trace_iter(&tr, parent, parent_iv);
    texi_trace_commit(&tr);
    st->attach = TEXI_ATTACH_AT;
    st->attach_stage = parent;
    st->attach_iv = parent_iv;
    return 0;
}

int tex_compute_inline(tex_stage *st)
{
    static const char call[] = "tex_compute_inline";
    TEXI_TRY(texi_stage_check(st, call, true));
    tex_ctx *ctx = st->sch->ctx;
    const char *sn = st->tensor->name;
    if (st->is_output)
        return texi_error(ctx, TEX_EINVAL, "%s: stage '%s' is an output of the schedule", call, sn);
    if (texi_stage_has_reduce(st))
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s' is a reduction (over axis '%s'); only "
                          "element-wise stages can be inlined",
                          call, sn, st->op->raxes[0]->name);
    const tex_stage *child = texi_schedule_attached_at(st->sch, st, NULL);
    if (child)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s' is computed at axis '%s' of stage '%s'; "
                          "move it before inlining '%s'",
                          call, child->tensor->name, child->attach_iv->name, sn, sn);
    trace_attach(st, "compute_inline");
    st->attach = TEXI_ATTACH_INLINE;
    st->attach_stage = NULL;
    st->attach_iv = NULL;
    return 0;
}

int tex_compute_root(tex_stage *st)
{
    TEXI_TRY(texi_stage_check(st, "tex_compute_root", true));
    trace_attach(st, "compute_root");
    st->attach = TEXI_ATTACH_ROOT;
    st->attach_stage = NULL;
    st->attach_iv = NULL;
    return 0;
}
