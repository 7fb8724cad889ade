/*
 * Pass unroll: loops the schedule marked unrolled.
 *
 * A FOR_UNROLLED loop with a constant extent n <= MAX_UNROLL whose body is
 * small enough (n * statements of the body <= MAX_UNROLLED_STMTS) becomes
 * the sequence of its n bodies, the variable replaced by min + i in each
 * copy (variables bound inside the body are reused by every copy, in
 * sibling scopes). Any other unrolled loop becomes a SERIAL loop wrapped in
 * ATTR "pragma_unroll" (value: the extent) so that a backend can ask its
 * compiler to unroll it. Inner loops are handled first, so nested unrolled
 * loops multiply out (within the size limit, counted after the inner ones).
 * Other loop kinds are left alone. Every expression of a copy is folded
 * (texi_simplify without ranges) after the substitution, since simplify
 * runs before this pass.
 */
#include "lower/lower.h"

#define MAX_UNROLL 64
#define MAX_UNROLLED_STMTS 4096

/* Statements in s (a size estimate for the unroll limit). */
static bool count_step(const tex_stmt *s, void *ud)
{
    *(int64_t *)ud += s->kind != TEXI_STMT_SEQ;
    return true;
}

static int64_t stmt_count(const tex_stmt *s)
{
    int64_t n = 0;
    texi_stmt_visit(s, count_step, &n);
    return n;
}

typedef struct {
    tex_expr *var, *value;
    bool *failed;
} subst;

/* Called on the root of every expression of a copy: substituted and folded. */
static tex_expr *subst_root(tex_expr *e, void *ud)
{
    const subst *sb = ud;
    tex_expr *r = texi_substitute(e, 1, &sb->var, &sb->value);
    r = r ? texi_simplify(r, 0, NULL) : NULL;
    if (!r)
        *sb->failed = true;
    return r ? r : e;
}

/* The n copies of body, var = min + i in copy i. */
static tex_stmt *replicate(tex_ctx *ctx, const tex_stmt *loop, tex_stmt *body, int64_t n)
{
    tex_expr *var = loop->u.loop.var, *min = texi_convert(loop->u.loop.min, var->dtype);
    tex_stmt **items = texi_alloc(ctx, sizeof *items * (size_t)(n + 1), "unroll");
    if (!items || !min)
        return NULL;
    bool failed = false;
    for (int64_t i = 0; i < n; i++) {
        tex_expr *off = texi_int_imm(ctx, var->dtype, i);
        subst sb = {var, off ? texi_simplify(texi_binary(TEXI_EXPR_ADD, min, off), 0, NULL) : NULL,
                    &failed};
        if (!sb.value || !(items[i] = texi_stmt_mutate(ctx, body, NULL, subst_root, &sb)) || failed)
            return NULL;
    }
    return texi_seq_new(ctx, (int)n, items);
}

/* Loop s with its body already unrolled (texi_stmt_map_loops). */
static tex_stmt *unroll_loop(tex_ctx *ctx, tex_stmt *s, tex_stmt *body, void *ud)
{
    (void)ud;
    int64_t n;
    bool constant = texi_expr_is_int_const(s->u.loop.extent, &n);
    if (s->u.loop.for_kind != TEXI_FOR_UNROLLED)
        return texi_stmt_with_body(ctx, s, body);
    if (constant && n >= 0 && n <= MAX_UNROLL && n * stmt_count(body) <= MAX_UNROLLED_STMTS)
        return replicate(ctx, s, body, n);
    tex_stmt *loop = texi_for_new(ctx, s->u.loop.var, s->u.loop.min, s->u.loop.extent,
                                  TEXI_FOR_SERIAL, -1, body);
    return loop ? texi_attr_named(ctx, TEXI_ATTR_PRAGMA_UNROLL, s->u.loop.extent, loop) : NULL;
}

int texi_pass_unroll(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    return texi_pass_result(lw, texi_stmt_map_loops(lw->ctx, in, unroll_loop, NULL), out);
}
