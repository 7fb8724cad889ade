/*
 * Pass remove_noops: drops statements that do nothing, bottom-up, so that a
 * statement emptied by its children goes too:
 *   - EVALUATE of a constant or a variable;
 *   - FOR with an empty body or a constant extent <= 0;
 *   - IF with both branches empty (an empty then with an else becomes
 *     IF(!cond) else-branch; an empty else is dropped);
 *   - LET, ATTR, REALIZE, ALLOCATE with an empty body;
 *   - ALLOCATE whose buffer the body never reads nor writes (the body stays);
 *   - empty items of a SEQ, and a SEQ of one item (texi_seq_new does this).
 * "Empty" is an empty SEQ. Conditions and values are side-effect free in
 * tex's IR (no calls with effects), so dropping them is safe. An ATTR
 * "assert" goes with its body: it guards nothing once the body is gone.
 * An ATTR "prefetch" / "prefetch_write" stays: its body is always empty,
 * the hint is the statement itself.
 */
#include "lower/lower.h"

typedef struct {
    tex_ctx *ctx;
    bool failed;
} cleaner;

static bool is_empty(const tex_stmt *s)
{
    return !s || (s->kind == TEXI_STMT_SEQ && s->u.seq.n == 0);
}

static tex_stmt *empty(cleaner *c)
{
    return texi_seq_new(c->ctx, 0, NULL);
}

static tex_stmt *clean(cleaner *c, tex_stmt *s);

static tex_stmt *clean_if(cleaner *c, tex_stmt *s)
{
    tex_stmt *t = clean(c, s->u.ifs.then_s);
    tex_stmt *f = s->u.ifs.else_s ? clean(c, s->u.ifs.else_s) : NULL;
    if (c->failed)
        return NULL;
    if (is_empty(t) && is_empty(f))
        return empty(c);
    if (is_empty(t)) {
        tex_expr *not = texi_unary(TEXI_EXPR_NOT, TEX_BOOL, s->u.ifs.cond);
        return not ? texi_if_new(c->ctx, not, f, NULL) : NULL;
    }
    if (t == s->u.ifs.then_s && f == s->u.ifs.else_s)
        return s;
    return texi_if_new(c->ctx, s->u.ifs.cond, t, is_empty(f) ? NULL : f);
}

static tex_stmt *clean_seq(cleaner *c, tex_stmt *s)
{
    int n = s->u.seq.n, m = 0;
    tex_stmt **items = texi_alloc(c->ctx, sizeof *items * (size_t)(n + 1), "remove_noops");
    if (!items)
        return NULL;
    bool changed = false;
    for (int i = 0; i < n; i++) {
        tex_stmt *r = clean(c, s->u.seq.items[i]);
        if (!r)
            return NULL;
        changed |= r != s->u.seq.items[i];
        if (!is_empty(r))
            items[m++] = r;
        else
            changed = true;
    }
    return changed ? texi_seq_new(c->ctx, m, items) : s;
}

/* The kinds with a body (texi_stmt_body): dropped with an empty body (a FOR
 * also with a constant extent <= 0), else rebuilt; an ALLOCATE whose body
 * does not use its buffer becomes the body. */
static tex_stmt *clean_scoped(cleaner *c, tex_stmt *s)
{
    int64_t ext;
    if (s->kind == TEXI_STMT_FOR && texi_expr_is_int_const(s->u.loop.extent, &ext) && ext <= 0)
        return empty(c);
    if (texi_is_prefetch(s))
        return s;
    tex_stmt *b = clean(c, texi_stmt_body(s));
    if (!b || is_empty(b))
        return b ? empty(c) : NULL;
    if (s->kind == TEXI_STMT_ALLOCATE && !texi_stmt_uses_buffer(b, s->u.alloc.buf))
        return b;
    return texi_stmt_with_body(c->ctx, s, b);
}

static tex_stmt *clean(cleaner *c, tex_stmt *s)
{
    tex_stmt *r = s;
    switch (s->kind) {
    case TEXI_STMT_FOR:
    case TEXI_STMT_LET:
    case TEXI_STMT_ATTR:
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_ALLOCATE:
        r = clean_scoped(c, s);
        break;
    case TEXI_STMT_IF:
        r = clean_if(c, s);
        break;
    case TEXI_STMT_SEQ:
        r = clean_seq(c, s);
        break;
    case TEXI_STMT_EVALUATE:
        if (texi_expr_is_const(s->u.eval.value) || s->u.eval.value->kind == TEXI_EXPR_VAR)
            r = empty(c);
        break;
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_STORE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    if (!r)
        c->failed = true;
    return r;
}

int texi_pass_remove_noops(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    cleaner c = {lw->ctx, false};
    tex_stmt *r = clean(&c, in);
    return texi_pass_result(lw, c.failed ? NULL : r, out);
}
