/*
 * Pass drop_hints (first in the CUDA tail): removes tex_prefetch's cache
 * hints (ATTR "prefetch" / "prefetch_write", src/lower/schedule_prefetch.c)
 * and the loops that only enumerated them, so a GPU kernel is the same with
 * or without them: GPUs stage data through shared memory (cache_read)
 * instead, and the passes after need not know the hints. The CPU tail keeps
 * them (the C printer emits __builtin_prefetch).
 */
#include "lower/lower.h"

static tex_stmt *drop(tex_stmt *s, void *ud)
{
    tex_ctx *ctx = ud;
    return texi_is_prefetch(s) ? texi_seq_new(ctx, 0, NULL) : NULL;
}

int texi_pass_drop_hints(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    tex_ctx *ctx = lw->ctx;
    if (!texi_stmt_any(in, texi_is_prefetch)) {
        *out = in;
        return 0;
    }
    tex_stmt *s = texi_stmt_mutate(ctx, in, drop, NULL, ctx);
    return s ? texi_pass_remove_noops(lw, s, out) : TEX_ENOMEM;
}
