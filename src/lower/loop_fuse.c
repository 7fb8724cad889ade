/*
 * Pass loop_fuse (CPU tail, after gpu_threads): horizontal fusion. Two
 * loops that follow each other in a sequence become one when they are
 * both parallel or both serial, run over the same range and are
 * independent:
 *
 *   for (i, m, e) parallel { A }           for (i, m, e) parallel {
 *   for (j, m, e) parallel { B }    ->         A
 *                                              B[j := i]
 *                                          }
 *
 * Independent: no buffer (storage, as texi_buffer_key identifies it) that
 * one of them stores to is loaded, stored or passed by the other, and
 * neither holds a barrier, an intrinsic call, an atomic update or a
 * thread-team region. Then each iteration of the fused loop runs the
 * statements of one iteration of A and one of B, which touch disjoint
 * memory, so any interleaving of A's and B's iterations computes the same
 * thing; the fused loop runs A's iteration first.
 *
 * Why: stages at the same level of a kernel that do not feed each other
 * (several outputs of one function, projections of one input, independent
 * reductions of one row) run in one parallel region instead of one each,
 * and read their shared inputs while they are in cache. The fused body is
 * fused again, so inner loops of A and B over equal ranges merge too.
 * Vectorized, unrolled and thread loops are left to their own passes.
 */
#include "lower/lower.h"

typedef struct {
    tex_ctx *ctx;
    bool failed;
} fuser;

/* What a loop body does that fusion must see. */
typedef struct {
    int n, cap;
    texi_buffer **stored;
    bool blocked; /* a barrier, intrinsic, atomic update or thread-team region */
    tex_ctx *ctx;
    bool failed;
} effects;

static bool see_effect(const tex_stmt *s, void *ud)
{
    effects *fx = ud;
    if (s->kind == TEXI_STMT_BARRIER || s->kind == TEXI_STMT_INTRIN ||
        texi_attr_is(s, TEXI_ATTR_ATOMIC) || texi_attr_is(s, TEXI_ATTR_PARALLEL_REGION) ||
        texi_attr_is(s, TEXI_ATTR_THREAD_ALLREDUCE))
        fx->blocked = true;
    if (s->kind != TEXI_STMT_STORE || fx->blocked)
        return !fx->blocked;
    texi_buffer **grown =
        texi_grow(fx->ctx, fx->stored, fx->n, &fx->cap, sizeof *fx->stored, "loop_fuse");
    if (!grown) {
        fx->failed = true;
        return false;
    }
    fx->stored = grown;
    fx->stored[fx->n++] = s->u.store.buf;
    return true;
}

/* Whether loop b touches nothing loop a stores to (fx: a's effects). */
static bool untouched_by(const effects *fx, const tex_stmt *b)
{
    for (int i = 0; i < fx->n; i++)
        if (texi_stmt_uses_buffer(b, fx->stored[i]))
            return false;
    return true;
}

static bool fusible_kind(const tex_stmt *s)
{
    return s->kind == TEXI_STMT_FOR &&
           (s->u.loop.for_kind == TEXI_FOR_SERIAL || s->u.loop.for_kind == TEXI_FOR_PARALLEL);
}

typedef struct {
    const tex_expr *var;
    bool found;
} binder;

static bool see_binder(const tex_stmt *s, void *ud)
{
    binder *b = ud;
    b->found |= (s->kind == TEXI_STMT_FOR && s->u.loop.var == b->var) ||
                (s->kind == TEXI_STMT_LET && s->u.let.var == b->var);
    return !b->found;
}

/* Whether a loop or LET in s binds var. */
static bool binds(const tex_stmt *s, const tex_expr *var)
{
    binder b = {var, false};
    texi_stmt_visit(s, see_binder, &b);
    return b.found;
}

/* Whether loops a and b (in this order) may run as one: b's body, which
 * merge renames to a's variable, must not bind that variable itself (a
 * loop partition's tail of an inner loop of a next to a loop of b). */
static bool independent(fuser *f, const tex_stmt *a, const tex_stmt *b)
{
    if (!fusible_kind(a) || !fusible_kind(b) || a->u.loop.for_kind != b->u.loop.for_kind ||
        !texi_expr_equal(a->u.loop.min, b->u.loop.min) ||
        !texi_expr_equal(a->u.loop.extent, b->u.loop.extent) ||
        binds(b->u.loop.body, a->u.loop.var))
        return false;
    effects fa = {.ctx = f->ctx}, fb = {.ctx = f->ctx};
    texi_stmt_visit(a, see_effect, &fa);
    texi_stmt_visit(b, see_effect, &fb);
    f->failed |= fa.failed || fb.failed;
    return !fa.blocked && !fb.blocked && !f->failed && untouched_by(&fa, b) && untouched_by(&fb, a);
}

static tex_stmt *fuse(fuser *f, tex_stmt *s);

/* Loops a and b as one loop over a's variable, its body fused again. */
static tex_stmt *merge(fuser *f, tex_stmt *a, tex_stmt *b)
{
    tex_stmt *bb = texi_stmt_substitute(f->ctx, b->u.loop.body, b->u.loop.var, a->u.loop.var);
    tex_stmt *body = bb ? texi_seq_new(f->ctx, 2, (tex_stmt *[]){a->u.loop.body, bb}) : NULL;
    body = body ? fuse(f, body) : NULL;
    if (!body) {
        f->failed = true;
        return NULL;
    }
    return texi_for_new(f->ctx, a->u.loop.var, a->u.loop.min, a->u.loop.extent, a->u.loop.for_kind,
                        a->u.loop.thread_tag, body);
}

/* A sequence with its items fused inside, then adjacent items fused. */
static tex_stmt *fuse_seq(fuser *f, tex_stmt *s)
{
    int n = s->u.seq.n, m = 0;
    tex_stmt **items = texi_alloc(f->ctx, sizeof *items * (size_t)(n + 1), "loop_fuse");
    if (!items) {
        f->failed = true;
        return NULL;
    }
    bool changed = false;
    for (int i = 0; i < n && !f->failed; i++) {
        tex_stmt *item = fuse(f, s->u.seq.items[i]);
        changed |= item != s->u.seq.items[i];
        if (m > 0 && item && independent(f, items[m - 1], item)) {
            items[m - 1] = merge(f, items[m - 1], item);
            changed = true;
        } else {
            items[m++] = item;
        }
    }
    if (f->failed)
        return NULL;
    return changed ? texi_seq_new(f->ctx, m, items) : s;
}

static tex_stmt *fuse(fuser *f, tex_stmt *s)
{
    if (!s || f->failed)
        return NULL;
    switch (s->kind) {
    case TEXI_STMT_SEQ:
        return fuse_seq(f, s);
    case TEXI_STMT_IF: {
        tex_stmt *t = fuse(f, s->u.ifs.then_s);
        tex_stmt *e = s->u.ifs.else_s ? fuse(f, s->u.ifs.else_s) : NULL;
        if (f->failed)
            return NULL;
        return t == s->u.ifs.then_s && e == s->u.ifs.else_s
                   ? s
                   : texi_if_new(f->ctx, s->u.ifs.cond, t, e);
    }
    default: {
        tex_stmt *body = texi_stmt_body(s);
        if (!body)
            return s;
        tex_stmt *nb = fuse(f, body);
        return nb ? texi_stmt_with_body(f->ctx, s, nb) : NULL;
    }
    }
}

int texi_pass_loop_fuse(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    fuser f = {lw->ctx, false};
    tex_stmt *r = fuse(&f, in);
    return texi_pass_result(lw, f.failed ? NULL : r, out);
}
