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
 * Otherwise the loop becomes SERIAL, wrapped in ATTR "vectorize_failed"
 * whose value is the reason (texi_vector_reason, printed as
 * "vectorize_failed(REASON)"), so the result is always correct and the dump
 * says why it is not vectorized. Nothing else changes.
 */
#include "lower/lower.h"

#define NO_PROBLEM TEXI_VECTOR_REASON_COUNT

/* Why statement s itself (not its children) disqualifies the body of a
 * vector loop, or NO_PROBLEM. */
static enum texi_vector_reason own_problem(const tex_stmt *s)
{
    switch (s->kind) {
    case TEXI_STMT_FOR:
        return TEXI_VECTOR_NOT_INNERMOST;
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_ALLOCATE:
        return TEXI_VECTOR_ALLOCATES;
    case TEXI_STMT_BARRIER:
        return TEXI_VECTOR_BARRIER;
    case TEXI_STMT_INTRIN:
        return TEXI_VECTOR_INTRINSIC;
    case TEXI_STMT_ATTR:
        return s->u.attr.id == TEXI_ATTR_ATOMIC ? TEXI_VECTOR_ATOMIC : NO_PROBLEM;
    default:
        return NO_PROBLEM;
    }
}

/* Visitor: keeps the first problem met in program order. */
static bool problem_step(const tex_stmt *s, void *ud)
{
    enum texi_vector_reason *why = ud;
    if (*why == NO_PROBLEM)
        *why = own_problem(s);
    return *why == NO_PROBLEM;
}

/* Why the body of a vector loop disqualifies it, or NO_PROBLEM. */
static enum texi_vector_reason body_problem(const tex_stmt *s)
{
    enum texi_vector_reason why = NO_PROBLEM;
    texi_stmt_visit(s, problem_step, &why);
    return why;
}

static enum texi_vector_reason loop_problem(const tex_stmt *s)
{
    if (!texi_expr_is_int_const(s->u.loop.extent, NULL) && !texi_simd_is_reduction(s))
        return TEXI_VECTOR_EXTENT; /* a reduction's partial sums need no constant extent */
    return body_problem(s->u.loop.body);
}

/* Loop s with its body already checked (texi_stmt_map_loops). */
static tex_stmt *check_loop(tex_ctx *ctx, tex_stmt *s, tex_stmt *body, void *ud)
{
    (void)ud;
    enum texi_vector_reason why =
        s->u.loop.for_kind == TEXI_FOR_VECTORIZED ? loop_problem(s) : NO_PROBLEM;
    if (why == NO_PROBLEM)
        return texi_stmt_with_body(ctx, s, body);
    tex_stmt *loop = texi_for_new(ctx, s->u.loop.var, s->u.loop.min, s->u.loop.extent,
                                  TEXI_FOR_SERIAL, -1, body);
    return loop ? texi_attr_vector_failed(ctx, why, loop) : NULL;
}

int texi_pass_vectorize(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    return texi_pass_result(lw, texi_stmt_map_loops(lw->ctx, in, check_loop, NULL), out);
}
