/*
 * Pass dead_stores (CPU tail, after zero_skip): a buffer allocated in the
 * function that nothing reads loses its STOREs, so that remove_noops, run
 * again after it, drops the loops left empty and the ALLOCATE itself:
 *
 *   ALLOCATE b { ... STORE b[i] = v ... }   (no LOAD of b, no call on it)
 *     ->  ALLOCATE b { ... }
 *
 * Such a buffer appears when every read of an intermediate has gone: a
 * padding stage whose tiles pad_bypass moved to its source, once zero_skip
 * has dropped the whole-tile calls kept for -strict-float (ATTR
 * strict_only) and simplify the ordinary nest for the tiles no call
 * covers, where the bounds show there are none. The IR has no side effects
 * but stores, and an ALLOCATE's buffer lives only inside it, so nothing
 * can observe the stores. "Reads" is texi_stmt_reads_buffer: loads and
 * searches, any intrinsic call's tile, a hint naming the buffer.
 */
#include "lower/lower.h"

typedef struct {
    tex_ctx *ctx;
    const texi_buffer *dead; /* the buffer whose stores go */
    bool failed;
} walker;

static tex_stmt *drop_store(tex_stmt *s, void *ud)
{
    walker *w = ud;
    if (s->kind != TEXI_STMT_STORE || texi_buffer_key(s->u.store.buf) != texi_buffer_key(w->dead))
        return NULL;
    tex_stmt *empty = texi_seq_new(w->ctx, 0, NULL);
    w->failed |= !empty;
    return empty ? empty : s;
}

static tex_stmt *visit_alloc(tex_stmt *s, void *ud)
{
    walker *w = ud;
    if (w->failed || s->kind != TEXI_STMT_ALLOCATE)
        return w->failed ? s : NULL;
    tex_stmt *body = texi_stmt_mutate(w->ctx, s->u.alloc.body, visit_alloc, NULL, w);
    if (body && !w->failed && !texi_stmt_reads_buffer(body, s->u.alloc.buf)) {
        walker dw = {w->ctx, s->u.alloc.buf, false};
        body = texi_stmt_mutate(w->ctx, body, drop_store, NULL, &dw);
        w->failed |= dw.failed;
    }
    tex_stmt *r = body && !w->failed ? texi_stmt_with_body(w->ctx, s, body) : NULL;
    w->failed |= !r;
    return r ? r : s;
}

int texi_pass_dead_stores(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    walker w = {lw->ctx, NULL, false};
    *out = texi_stmt_mutate(lw->ctx, in, visit_alloc, NULL, &w);
    if (*out && !w.failed)
        return 0;
    return tex_errcode(lw->ctx) ? tex_errcode(lw->ctx) : TEX_ENOMEM;
}
