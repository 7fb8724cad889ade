/*
 * Pass vectorize: checks the loops the schedule marked vectorized, so that
 * a backend may emit any FOR_VECTORIZED loop it receives as a vector loop
 * (OpenMP simd, or a CUDA-side unrolled vector access) without looking
 * further.
 *
 * A vectorized loop keeps its kind when
 *   - it is innermost (its body holds no loop),
 *   - its extent is an integer constant,
 *   - its body neither allocates (ALLOCATE / REALIZE), synchronizes
 *     (BARRIER), calls a tensor intrinsic nor updates atomically (ATTR
 *     "atomic", tex_atomic).
 * Guards in the body are allowed: the loop stays vectorized with a guarded
 * (masked) body; loop_partition has usually split a guarded vector loop
 * into a guard-free vector main part and a tail before this pass.
 * Otherwise the loop becomes SERIAL, wrapped in an ATTR whose key is
 * "vectorize_failed(REASON)", so the result is always correct and the dump
 * says why it is not vectorized. Backends match the "vectorize_failed"
 * prefix. Nothing else changes.
 */
#include "lower/lower.h"

#include <string.h>

/* Why the body of a vector loop disqualifies it, or NULL. */
static const char *body_problem(const tex_stmt *s)
{
    const char *why = NULL;
    switch (s->kind) {
    case TEXI_STMT_FOR:
        return "vectorize_failed(loop is not innermost)";
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_ALLOCATE:
        return "vectorize_failed(body allocates a buffer)";
    case TEXI_STMT_BARRIER:
        return "vectorize_failed(body has a barrier)";
    case TEXI_STMT_INTRIN:
        return "vectorize_failed(body calls a tensor intrinsic)";
    case TEXI_STMT_IF:
        why = body_problem(s->u.ifs.then_s);
        return why || !s->u.ifs.else_s ? why : body_problem(s->u.ifs.else_s);
    case TEXI_STMT_LET:
        return body_problem(s->u.let.body);
    case TEXI_STMT_ATTR:
        if (strcmp(s->u.attr.key, "atomic") == 0)
            return "vectorize_failed(body has an atomic update)";
        return body_problem(s->u.attr.body);
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n && !why; i++)
            why = body_problem(s->u.seq.items[i]);
        return why;
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_STORE:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_KIND_COUNT:
        return NULL;
    }
    return NULL;
}

static const char *loop_problem(const tex_stmt *s)
{
    if (!texi_expr_is_int_const(s->u.loop.extent, NULL))
        return "vectorize_failed(extent is not a constant)";
    return body_problem(s->u.loop.body);
}

typedef struct {
    tex_ctx *ctx;
    bool failed;
} vectorizer;

static tex_stmt *visit(tex_stmt *s, void *ud);

static tex_stmt *check_loop(vectorizer *vz, tex_stmt *s)
{
    tex_stmt *body = texi_stmt_mutate(vz->ctx, s->u.loop.body, visit, NULL, vz);
    if (!body)
        return NULL;
    const char *why = s->u.loop.for_kind == TEXI_FOR_VECTORIZED ? loop_problem(s) : NULL;
    if (!why && body == s->u.loop.body)
        return s;
    tex_stmt *loop = texi_for_new(vz->ctx, s->u.loop.var, s->u.loop.min, s->u.loop.extent,
                                  why ? TEXI_FOR_SERIAL : s->u.loop.for_kind,
                                  why ? -1 : s->u.loop.thread_tag, body);
    return loop && why ? texi_attr_new(vz->ctx, why, NULL, loop) : loop;
}

static tex_stmt *visit(tex_stmt *s, void *ud)
{
    vectorizer *vz = ud;
    if (s->kind != TEXI_STMT_FOR || vz->failed)
        return NULL;
    tex_stmt *r = check_loop(vz, s);
    if (!r)
        vz->failed = true;
    return r ? r : s;
}

int texi_pass_vectorize(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    vectorizer vz = {lw->ctx, false};
    tex_stmt *r = texi_stmt_mutate(lw->ctx, in, visit, NULL, &vz);
    if (!r || vz.failed)
        return tex_errcode(lw->ctx) ? tex_errcode(lw->ctx) : TEX_ENOMEM;
    *out = r;
    return 0;
}
