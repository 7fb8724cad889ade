/*
 * Pass uneven_parallel (CPU tail, after loop_fuse): a parallel loop whose
 * iterations cost unevenly -- its body holds a loop whose extent reads
 * memory, such as a sparse row's non-zeros `indptr[i + 1] - indptr[i]` --
 * goes under ATTR "parallel_dynamic", so the C printer hands its
 * iterations out at run time in shares (`schedule(dynamic, tex_chunk)`)
 * instead of splitting the range evenly among the threads. On a power-law
 * matrix a static split leaves one thread with most of the non-zeros.
 * Loops already under the ATTR (gpu_blocks' tail tiles) are left alone.
 */
#include "lower/lower.h"

static bool ragged_loop(const tex_stmt *s, void *ud)
{
    bool *found = ud;
    if (s->kind == TEXI_STMT_FOR)
        *found |= texi_expr_reads_memory(s->u.loop.extent);
    return !*found;
}

/* Whether s holds a loop whose extent reads memory. */
static bool uneven(const tex_stmt *s)
{
    bool found = false;
    texi_stmt_visit(s, ragged_loop, &found);
    return found;
}

static tex_stmt *mark(tex_stmt *s, void *ud)
{
    tex_ctx *ctx = ud;
    if (texi_attr_is(s, TEXI_ATTR_PARALLEL_DYNAMIC))
        return s;
    if (s->kind != TEXI_STMT_FOR || s->u.loop.for_kind != TEXI_FOR_PARALLEL ||
        !uneven(s->u.loop.body))
        return NULL;
    tex_stmt *r = texi_attr_named(ctx, TEXI_ATTR_PARALLEL_DYNAMIC, NULL, s);
    return r ? r : s;
}

int texi_pass_uneven_parallel(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    *out = texi_stmt_mutate(lw->ctx, in, mark, NULL, lw->ctx);
    return *out ? 0 : TEX_ENOMEM;
}
