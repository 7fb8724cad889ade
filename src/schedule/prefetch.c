/*
 * The prefetch primitives (TVM's prefetch, Halide's Func::prefetch): record
 * that the loop of a leaf of a stage hints, at every iteration, the elements
 * of a tensor that a later iteration reads (or writes, for the stage's own
 * tensor): a later iteration of that loop (tex_prefetch), or of a loop
 * outside it (tex_prefetch_at). Only the request is kept here
 * (stage->prefetch); ScheduleOps builds the hints
 * (src/lower/schedule_prefetch.c). The primitives that would take the
 * request's loops or read away refuse instead
 * (texi_prefetch_check: split, fuse and vectorize of its axis, rfactor of
 * its stage, cache_read of its tensor for its stage; the same for the
 * outer loop of tex_prefetch_at); ScheduleOps checks the same again.
 */
#include "schedule/primitive.h"
#include "schedule/trace.h"

#define MAX_OFFSET (1 << 20)

/* Whether st's definition reads t, or a copy of t (texi_copy_source), or
 * produces t. */
static bool stage_touches(const tex_stage *st, const tex_tensor *t)
{
    if (t == st->tensor || t == st->op->scatter_into || texi_op_reads(st->op, t))
        return true;
    for (int i = 0; st->op->kind == TEXI_OP_COMPUTE && i < st->op->n_inputs; i++)
        if (texi_copy_source(st->op->inputs[i]) == t)
            return true;
    return false;
}

int texi_prefetch_check(const tex_stage *st, const tex_iter *iv, const tex_tensor *t,
                        const char *call)
{
    for (int k = 0; k < st->n_prefetch; k++) {
        const texi_prefetch *p = &st->prefetch[k];
        if ((iv && (p->iv == iv || p->from == iv)) || (!iv && !t) || (t && p->tensor == t))
            return texi_error(st->sch->ctx, TEX_EINVAL,
                              "%s: stage '%s' prefetches '%s' at axis '%s' (tex_prefetch); call "
                              "%s before tex_prefetch",
                              call, st->tensor->name, p->tensor->name, p->iv->name, call);
    }
    return 0;
}

/* The trace line: `prefetch S T AT OFFSET`, and FROM after it when it is
 * another leaf than AT. */
static void trace_request(const tex_stage *st, const texi_prefetch *p)
{
    const tex_stage *of_t = texi_schedule_find_stage(st->sch, p->tensor);
    texi_trace_rec tr;
    texi_trace_begin(&tr, st->sch, "prefetch");
    texi_trace_stage(&tr, st);
    if (of_t)
        texi_trace_stage(&tr, of_t);
    else
        texi_trace_gap(&tr, "the prefetched tensor has no stage in this schedule");
    texi_trace_iter(&tr, st, p->iv);
    texi_trace_int(&tr, p->offset);
    if (p->from != p->iv)
        texi_trace_iter(&tr, st, p->from);
    texi_trace_commit(&tr);
}

/* tex_prefetch_at's checks and its request, which replaces one for the same
 * tensor and leaf. */
static int add_request(tex_stage *st, tex_tensor *t, tex_iter *at, tex_iter *from, int offset,
                       const char *call)
{
    TEXI_TRY(texi_stage_check(st, call, true));
    tex_ctx *ctx = st->sch->ctx;
    const char *name = st->tensor->name;
    if (!t)
        return texi_error(ctx, TEX_EMISUSE, "%s: stage '%s': the tensor is NULL", call, name);
    TEXI_TRY(texi_stage_check_leaf(st, at, call));
    TEXI_TRY(texi_stage_check_leaf(st, from, call));
    if (!stage_touches(st, t))
        return texi_error(ctx, TEX_EINVAL, "%s: stage '%s' neither reads nor produces '%s'", call,
                          name, t->name);
    if (st->attr[texi_stage_iter_index(st, at)].for_kind == TEXI_FOR_VECTORIZED)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s', axis '%s' is vectorized; prefetch at a loop outside it",
                          call, name, at->name);
    if (texi_stage_leaf_index(st, from) > texi_stage_leaf_index(st, at))
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s', tensor '%s': axis '%s' is inside axis '%s'; the "
                          "iterations ahead must be of the hints' loop or of one outside it",
                          call, name, t->name, from->name, at->name);
    if (offset < 1 || offset > MAX_OFFSET)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s', tensor '%s', axis '%s': offset %d is outside [1, %d]",
                          call, name, t->name, from->name, offset, MAX_OFFSET);
    int k = 0;
    while (k < st->n_prefetch && (st->prefetch[k].tensor != t || st->prefetch[k].iv != at))
        k++;
    texi_prefetch *list = st->prefetch;
    if (k == st->n_prefetch) {
        list = texi_alloc(ctx, sizeof *list * (size_t)(k + 1), "a prefetch");
        if (!list)
            return TEX_ENOMEM;
        for (int i = 0; i < k; i++)
            list[i] = st->prefetch[i];
    }
    list[k] = (texi_prefetch){t, at, from, offset};
    trace_request(st, &list[k]);
    st->prefetch = list;
    st->n_prefetch = k == st->n_prefetch ? k + 1 : st->n_prefetch;
    return 0;
}

int tex_prefetch(tex_stage *st, tex_tensor *t, tex_iter *iv, int offset)
{
    return add_request(st, t, iv, iv, offset, "tex_prefetch");
}

int tex_prefetch_at(tex_stage *st, tex_tensor *t, tex_iter *at, tex_iter *from, int offset)
{
    return add_request(st, t, at, from, offset, "tex_prefetch_at");
}
