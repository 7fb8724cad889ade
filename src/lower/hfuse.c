/*
 * Pass hfuse: horizontal fusion of disjoint block-bound nests into one
 * GPU kernel (SparseTIR's horizontal fusion of hyb SpMM's parts).
 *
 * Input: the body after remove_noops. An ATTR "disjoint_nests" (nests that
 * write disjoint memory and may run in any order, schedule_ops.c: the parts
 * of a scatter group such as hyb SpMM) whose nests are all loops bound to
 * blockIdx.x, none holding a barrier or an allocation:
 *
 *     attr disjoint_nests { for (I0, m0, e0) bind blockIdx.x { B0 }
 *                           for (I1, m1, e1) bind blockIdx.x { B1 } ... }
 * becomes one loop over the blocks of all of them, each part taking a range:
 *     for (blk, 0, e0 + e1 + ...) bind blockIdx.x {
 *         if (blk < e0) B0[I0 := m0 + blk]
 *         else if (blk < e0 + e1) B1[I1 := m1 + blk - e0] ... else B_last[...] }
 * so device_split makes it one kernel, one launch, whose block size is the
 * largest of the parts' (their thread loops keep their extents; the CUDA
 * printer guards the smaller ones), and gpu_to_cpu runs it as one parallel
 * loop over the blocks. A branch depends on the block index only, so every
 * thread of a block takes the same one.
 *
 * Not fused (left as they are): nests not all bound to blockIdx.x at their
 * top, or holding a barrier (a part's threads could wait at different
 * barriers under other extents) or an allocation (shared memory would be
 * the sum of the parts').
 */
#include "lower/lower.h"

/* Statement visitor: clears *ud at a barrier or an allocation. */
static bool fusable_step(const tex_stmt *s, void *ud)
{
    bool *ok = ud;
    if (s->kind == TEXI_STMT_BARRIER || s->kind == TEXI_STMT_ALLOCATE)
        *ok = false;
    return *ok;
}

/* Whether s is a loop bound to blockIdx.x without barriers or allocations. */
static bool block_nest(const tex_stmt *s)
{
    bool ok = s->kind == TEXI_STMT_FOR && s->u.loop.for_kind == TEXI_FOR_THREAD &&
              s->u.loop.thread_tag == TEX_BLOCK_X;
    if (ok)
        texi_stmt_visit(s->u.loop.body, fusable_step, &ok);
    return ok;
}

/* a kind b in i64, simplified. */
static tex_expr *i64_op(enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    a = a ? texi_convert(a, TEX_I64) : NULL;
    b = b ? texi_convert(b, TEX_I64) : NULL;
    tex_expr *r = a && b ? texi_binary(kind, a, b) : NULL;
    return r ? texi_simplify(r, 0, NULL) : NULL;
}

/* The nests of seq fused over block variable blk: the if-chain from part
 * i on, parts before it starting at block `first`; *total receives the
 * blocks of parts i.. added to first. */
static tex_stmt *chain(tex_ctx *ctx, const tex_stmt *seq, int i, tex_expr *blk, tex_expr *first,
                       tex_expr **total)
{
    const tex_stmt *s = seq->u.seq.items[i];
    tex_expr *end = i64_op(TEXI_EXPR_ADD, first, s->u.loop.extent);
    tex_expr *at = i64_op(TEXI_EXPR_ADD, s->u.loop.min, i64_op(TEXI_EXPR_SUB, blk, first));
    tex_expr *var = s->u.loop.var, *value = at ? texi_convert(at, var->dtype) : NULL;
    tex_stmt *body = value ? texi_stmt_substitute(ctx, s->u.loop.body, var, value) : NULL;
    if (!body || !end)
        return NULL;
    if (i + 1 == seq->u.seq.n) {
        *total = end;
        return body;
    }
    tex_stmt *rest = chain(ctx, seq, i + 1, blk, end, total);
    tex_expr *cond = rest ? i64_op(TEXI_EXPR_LT, blk, end) : NULL;
    return cond ? texi_if_new(ctx, cond, body, rest) : NULL;
}

/* The ATTR disjoint_nests s as one block loop, or NULL when it does not
 * qualify (*failed on ENOMEM). */
static tex_stmt *fuse(tex_ctx *ctx, const tex_stmt *s, bool *failed)
{
    const tex_stmt *seq = s->u.attr.body;
    if (seq->kind != TEXI_STMT_SEQ || seq->u.seq.n < 2)
        return NULL;
    for (int i = 0; i < seq->u.seq.n; i++)
        if (!block_nest(seq->u.seq.items[i]))
            return NULL;
    tex_expr *blk = texi_var_new(ctx, "blk", TEX_I64), *total = NULL;
    tex_stmt *body = blk ? chain(ctx, seq, 0, blk, texi_int_imm(ctx, TEX_I64, 0), &total) : NULL;
    tex_stmt *loop = body ? texi_for_new(ctx, blk, texi_int_imm(ctx, TEX_I64, 0), total,
                                         TEXI_FOR_THREAD, TEX_BLOCK_X, body)
                          : NULL;
    *failed = !loop;
    return loop;
}

typedef struct {
    tex_ctx *ctx;
    bool failed;
} hfuser;

static tex_stmt *rewrite(tex_stmt *s, void *ud)
{
    hfuser *h = ud;
    if (h->failed || !texi_attr_is(s, TEXI_ATTR_DISJOINT_NESTS))
        return NULL;
    tex_stmt *r = fuse(h->ctx, s, &h->failed);
    return r ? r : s;
}

int texi_pass_hfuse(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    hfuser h = {lw->ctx, false};
    tex_stmt *r = texi_stmt_mutate(lw->ctx, in, rewrite, NULL, &h);
    if (!r || h.failed)
        return tex_errcode(lw->ctx) ? tex_errcode(lw->ctx) : TEX_ENOMEM;
    *out = r;
    return 0;
}
