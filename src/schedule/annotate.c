/*
 * Annotation primitives: bind, parallel, vectorize, unroll (per leaf iter,
 * recorded in stage->attr) and the storage primitives set_scope,
 * storage_align, reorder_storage and double_buffer (per stage).
 *
 * Legality decided here (docs/api.md, rule 5): a reduce axis may not be made
 * parallel or vectorized, nor bound to a block index or a virtual thread
 * (each would race on the reduction's output), unless tex_atomic made the
 * stage's updates atomic (then parallel and block indices are fine);
 * binding it to TEX_THREAD_* is a request for a cross-thread reduction and
 * is recorded. tex_vectorize_reduce vectorizes a reduce axis (and only
 * one, of a stage that is not atomic): the CPU's simd pass turns the loop
 * into vector partial results and one horizontal reduction
 * (src/lower/simd_reduce.c), other targets run it serially. A leaf carries at
 * most one annotation: repeating the same one is a no-op, a different one is
 * an error. Within one stage a block/thread tag is bound at most once (other
 * stages may reuse it; virtual threads may repeat). Outputs keep the global
 * scope and a compact layout, since they are the caller's arrays.
 *
 * What lowering checks instead: double_buffer on a stage that is not attached
 * with compute_at, vectorized loops with non-constant extents, thread extents
 * that disagree between stages.
 */
#include "schedule/primitive.h"
#include "schedule/trace.h"

#include <string.h>

static const char VECTORIZE_REDUCE[] = "tex_vectorize_reduce";

static const char *kind_word(const tex_iter *iv)
{
    return iv->kind == TEXI_ITER_REDUCE ? "reduce" : "data";
}

/* tex_vectorize_reduce's axis: a reduce axis of a stage that is not atomic
 * (its updates are atomic one at a time). */
static int check_vectorize_reduce(const tex_stage *st, const tex_iter *iv)
{
    if (iv->kind != TEXI_ITER_REDUCE)
        return texi_error(st->sch->ctx, TEX_EINVAL,
                          "%s: axis '%s' of stage '%s' is a data-parallel axis (use "
                          "tex_vectorize)",
                          VECTORIZE_REDUCE, iv->name, st->tensor->name);
    if (st->atomic)
        return texi_error(st->sch->ctx, TEX_EINVAL,
                          "%s: axis '%s' of stage '%s' is a reduction axis of an atomic stage "
                          "(tex_atomic): its updates are atomic one at a time and cannot be "
                          "vectorized",
                          VECTORIZE_REDUCE, iv->name, st->tensor->name);
    return 0;
}

/* Rule 5: which annotations a reduce axis refuses. An atomic stage
 * (tex_atomic) accepts parallel and block indices too: its updates do not
 * race. (tex_vectorize_reduce checks its axis with check_vectorize_reduce.) */
static int check_reduce_axis(const tex_stage *st, const tex_iter *iv, texi_iter_attr want,
                             const char *call)
{
    if (iv->kind != TEXI_ITER_REDUCE)
        return 0;
    bool block = want.for_kind == TEXI_FOR_THREAD && want.thread_tag >= (int)TEX_BLOCK_X &&
                 want.thread_tag <= (int)TEX_BLOCK_Z;
    bool bad = want.for_kind == TEXI_FOR_PARALLEL || want.for_kind == TEXI_FOR_VECTORIZED ||
               (want.for_kind == TEXI_FOR_THREAD &&
                (want.thread_tag < (int)TEX_THREAD_X || want.thread_tag > (int)TEX_THREAD_Z));
    if (st->atomic && (want.for_kind == TEXI_FOR_PARALLEL || block))
        bad = false;
    if (!bad)
        return 0;
    return texi_error(st->sch->ctx, TEX_EINVAL,
                      "%s: axis '%s' of stage '%s' is a reduction axis; making it %s would race "
                      "on the result (use rfactor first, bind it to threadIdx.* for a "
                      "cross-thread reduction, or make the stage's updates atomic with "
                      "tex_atomic)",
                      call, iv->name, st->tensor->name, texi_iter_attr_name(&want));
}

/* The same block/thread tag bound to another iter of st. */
static const tex_iter *tag_user(const tex_stage *st, const tex_iter *iv, int tag)
{
    if (tag == (int)TEX_VTHREAD)
        return NULL;
    for (int i = 0; i < st->n_all; i++)
        if (st->all[i] != iv && st->attr[i].for_kind == TEXI_FOR_THREAD &&
            st->attr[i].thread_tag == tag)
            return st->all[i];
    return NULL;
}

/* Records annotation `want` on leaf iv of st; vector_reduction: iv must be
 * a reduce axis (tex_vectorize_reduce) instead of passing rule 5. */
static int annotate(tex_stage *st, tex_iter *iv, texi_iter_attr want, const char *call,
                    bool vector_reduction)
{
    TEXI_TRY(texi_stage_check(st, call, true));
    TEXI_TRY(texi_stage_check_leaf(st, iv, call));
    TEXI_TRY(vector_reduction ? check_vectorize_reduce(st, iv)
                              : check_reduce_axis(st, iv, want, call));
    if (want.for_kind == TEXI_FOR_VECTORIZED)
        TEXI_TRY(texi_prefetch_check(st, iv, NULL, call));
    tex_ctx *ctx = st->sch->ctx;
    texi_trace_rec tr;
    texi_trace_begin(&tr, st->sch, call + strlen("tex_")); /* "parallel", "bind", ... */
    texi_trace_stage(&tr, st);
    texi_trace_iter(&tr, st, iv);
    if (want.for_kind == TEXI_FOR_THREAD)
        texi_trace_word(&tr, texi_trace_tags[want.thread_tag]);
    texi_iter_attr *attr = &st->attr[texi_stage_iter_index(st, iv)];
    if (attr->for_kind == want.for_kind && attr->thread_tag == want.thread_tag)
        return 0;
    if (attr->for_kind != TEXI_FOR_SERIAL)
        return texi_error(ctx, TEX_EINVAL, "%s: %s axis '%s' of stage '%s' is already %s", call,
                          kind_word(iv), iv->name, st->tensor->name, texi_iter_attr_name(attr));
    const tex_iter *other =
        want.for_kind == TEXI_FOR_THREAD ? tag_user(st, iv, want.thread_tag) : NULL;
    if (other)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s': cannot bind axis '%s' to %s, axis '%s' "
                          "of the same stage is already bound to it",
                          call, st->tensor->name, iv->name, texi_iter_attr_name(&want),
                          other->name);
    *attr = want;
    texi_trace_commit(&tr);
    return 0;
}

int tex_bind(tex_stage *st, tex_iter *iv, tex_thread_tag tag)
{
    if (st && ((int)tag < (int)TEX_BLOCK_X || (int)tag > (int)TEX_VTHREAD))
        return texi_error(st->sch->ctx, TEX_EINVAL,
                          "tex_bind: stage '%s', axis '%s': unknown "
                          "thread tag %d",
                          st->tensor->name, iv ? iv->name : "(null)", (int)tag);
    return annotate(st, iv, (texi_iter_attr){TEXI_FOR_THREAD, (int)tag}, "tex_bind", false);
}

int tex_parallel(tex_stage *st, tex_iter *iv)
{
    return annotate(st, iv, (texi_iter_attr){TEXI_FOR_PARALLEL, -1}, "tex_parallel", false);
}

int tex_vectorize(tex_stage *st, tex_iter *iv)
{
    return annotate(st, iv, (texi_iter_attr){TEXI_FOR_VECTORIZED, -1}, "tex_vectorize", false);
}

int tex_vectorize_reduce(tex_stage *st, tex_iter *iv)
{
    return annotate(st, iv, (texi_iter_attr){TEXI_FOR_VECTORIZED, -1}, VECTORIZE_REDUCE, true);
}

int tex_unroll(tex_stage *st, tex_iter *iv)
{
    return annotate(st, iv, (texi_iter_attr){TEXI_FOR_UNROLLED, -1}, "tex_unroll", false);
}

/* ------------------------------------------------------------- storage */

/* st is an intermediate compute stage (not an input, not an output). */
static int check_intermediate(const tex_stage *st, const char *call, const char *why)
{
    TEXI_TRY(texi_stage_check(st, call, true));
    if (st->is_output)
        return texi_error(st->sch->ctx, TEX_EINVAL,
                          "%s: stage '%s' is an output of the schedule; "
                          "%s",
                          call, st->tensor->name, why);
    return 0;
}

int tex_set_scope(tex_stage *st, tex_scope scope)
{
    static const char call[] = "tex_set_scope";
    TEXI_TRY(texi_stage_check(st, call, true));
    if ((int)scope < (int)TEX_SCOPE_GLOBAL || (int)scope > (int)TEX_SCOPE_LOCAL)
        return texi_error(st->sch->ctx, TEX_EINVAL, "%s: stage '%s': unknown scope %d", call,
                          st->tensor->name, (int)scope);
    if (scope != TEX_SCOPE_GLOBAL)
        TEXI_TRY(check_intermediate(st, call, "outputs live in global memory"));
    texi_trace_rec tr;
    texi_trace_begin(&tr, st->sch, "set_scope");
    texi_trace_stage(&tr, st);
    texi_trace_word(&tr, texi_trace_scopes[scope]);
    st->scope = (enum texi_scope)scope;
    texi_trace_commit(&tr);
    return 0;
}

/* The output dimension of st that axis iv is, -1 when it is none. */
static int output_dim(const tex_stage *st, const tex_iter *iv)
{
    for (int d = 0; iv && d < st->op->n_axes; d++)
        if (st->op->axes[d] == iv)
            return d;
    return -1;
}

int tex_storage_align(tex_stage *st, tex_iter *iv, int factor, int offset)
{
    static const char call[] = "tex_storage_align";
    TEXI_TRY(check_intermediate(st, call, "outputs are the caller's compact arrays"));
    tex_ctx *ctx = st->sch->ctx;
    if (!iv)
        return texi_error(ctx, TEX_EMISUSE, "%s: stage '%s': the axis is NULL", call,
                          st->tensor->name);
    int d = output_dim(st, iv);
    if (d < 0)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: axis '%s' is not a data-parallel axis of the "
                          "operation of stage '%s' (use tex_op_axis)",
                          call, iv->name, st->tensor->name);
    if (factor <= 0 || offset < 0 || offset >= factor)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s', axis '%s': needs factor > 0 and 0 <= "
                          "offset < factor (got factor %d, offset %d)",
                          call, st->tensor->name, iv->name, factor, offset);
    texi_trace_rec tr;
    texi_trace_begin(&tr, st->sch, "storage_align");
    texi_trace_stage(&tr, st);
    texi_trace_iter(&tr, st, iv);
    texi_trace_int(&tr, factor);
    texi_trace_int(&tr, offset);
    texi_trace_commit(&tr);
    st->align_factor[d] = factor;
    st->align_offset[d] = offset;
    return 0;
}

int tex_reorder_storage(tex_stage *st, int n, tex_iter *const axes[])
{
    static const char call[] = "tex_reorder_storage";
    TEXI_TRY(check_intermediate(st, call, "outputs are the caller's compact arrays"));
    tex_ctx *ctx = st->sch->ctx;
    int nax = st->op->n_axes;
    if (n != nax || !axes)
        return texi_error(ctx, axes ? TEX_EINVAL : TEX_EMISUSE,
                          "%s: stage '%s' has %d data-parallel axes; the order must list each "
                          "once (got %d%s)",
                          call, st->tensor->name, nax, n, axes ? "" : ", NULL");
    for (int i = 0; i < n; i++) {
        if (output_dim(st, axes[i]) < 0)
            return texi_error(ctx, axes[i] ? TEX_EINVAL : TEX_EMISUSE,
                              "%s: stage '%s': entry %d, '%s', is not a data-parallel axis of "
                              "its operation (use tex_op_axis)",
                              call, st->tensor->name, i, axes[i] ? axes[i]->name : "NULL");
        for (int j = 0; j < i; j++)
            if (axes[j] == axes[i])
                return texi_error(ctx, TEX_EINVAL, "%s: stage '%s': axis '%s' is listed twice",
                                  call, st->tensor->name, axes[i]->name);
    }
    texi_trace_rec tr;
    texi_trace_begin(&tr, st->sch, "reorder_storage");
    texi_trace_stage(&tr, st);
    for (int i = 0; i < n; i++) {
        texi_trace_iter(&tr, st, axes[i]);
        st->storage_order[i] = output_dim(st, axes[i]);
    }
    texi_trace_commit(&tr);
    return 0;
}

/* Records primitive prim of st, which takes no other argument (it succeeds). */
static void trace_stage_only(tex_stage *st, const char *prim)
{
    texi_trace_rec tr;
    texi_trace_begin(&tr, st->sch, prim);
    texi_trace_stage(&tr, st);
    texi_trace_commit(&tr);
}

int tex_double_buffer(tex_stage *st)
{
    TEXI_TRY(check_intermediate(st, "tex_double_buffer",
                                "only intermediates attached with "
                                "compute_at can be double-buffered"));
    trace_stage_only(st, "double_buffer");
    st->double_buffer = true;
    return 0;
}

int tex_atomic(tex_stage *st)
{
    static const char call[] = "tex_atomic";
    TEXI_TRY(texi_stage_check(st, call, true));
    if (!texi_stage_has_reduce(st))
        return texi_error(st->sch->ctx, TEX_EINVAL,
                          "%s: stage '%s' is not a reduction (only reduction updates can be "
                          "atomic)",
                          call, st->tensor->name);
    if (st->tensorize_iv)
        return texi_error(st->sch->ctx, TEX_EINVAL,
                          "%s: stage '%s' is tensorized; its updates are the intrinsic's", call,
                          st->tensor->name);
    trace_stage_only(st, "atomic");
    st->atomic = true;
    return 0;
}
