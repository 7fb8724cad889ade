/*
 * Pass storage_rewrite: where temporaries live, and sharing them.
 *
 * 1. Sinking. Each ALLOCATE moves down to the smallest scope that still
 *    covers every LOAD / STORE of its buffer:
 *      - in a SEQ, around the items from its first to its last use (into the
 *        item itself when only one uses it; dropped when none does);
 *      - into the body of a LET, ATTR or other ALLOCATE, and into the one
 *        branch of an IF that uses it, when the rest does not use it.
 *    It never moves into a FOR: that would make one allocation per
 *    iteration and drop values carried between iterations.
 * 2. Reuse. Within a SEQ, two items that are ALLOCATEs of buffers with the
 *    same dtype, scope and constant element count share the first buffer:
 *    the second's LOADs and STOREs are renamed and one ALLOCATE covers both
 *    (and the items between). This is safe because each was scoped to its
 *    own item, so its contents are dead when the next item starts. SHARED
 *    buffers are not merged (other threads may still read the first one
 *    when the second is written, without a barrier between them).
 * Scopes (global / shared / local) are the schedule's and never change.
 * Allocations are visited innermost first, so an inner buffer has settled
 * before an outer one moves past it.
 */
#include "lower/lower.h"

#include <string.h>

typedef struct {
    tex_ctx *ctx;
    bool failed;
} rewriter;

/* ---------------------------------------------------------------- sinking */

static tex_stmt *sink(rewriter *rw, texi_buffer *b, tex_stmt *s);

/* ALLOCATE b around items [first, last] of seq s. */
static tex_stmt *sink_seq(rewriter *rw, texi_buffer *b, tex_stmt *s)
{
    int n = s->u.seq.n, first = -1, last = -1;
    for (int i = 0; i < n; i++)
        if (texi_stmt_uses_buffer(s->u.seq.items[i], b)) {
            first = first < 0 ? i : first;
            last = i;
        }
    if (first < 0)
        return s; /* never used: dropped */
    tex_stmt *inner =
        first == last
            ? sink(rw, b, s->u.seq.items[first])
            : texi_allocate_new(rw->ctx, b,
                                texi_seq_new(rw->ctx, last - first + 1, s->u.seq.items + first));
    tex_stmt **items = texi_alloc(rw->ctx, sizeof *items * (size_t)(n + 1), "storage_rewrite");
    if (!inner || !items)
        return NULL;
    memcpy(items, s->u.seq.items, sizeof *items * (size_t)first);
    items[first] = inner;
    memcpy(items + first + 1, s->u.seq.items + last + 1, sizeof *items * (size_t)(n - last - 1));
    return texi_seq_new(rw->ctx, n - (last - first), items);
}

static tex_stmt *sink_if(rewriter *rw, texi_buffer *b, tex_stmt *s)
{
    bool in_then = texi_stmt_uses_buffer(s->u.ifs.then_s, b),
         in_else = texi_stmt_uses_buffer(s->u.ifs.else_s, b);
    if (texi_expr_uses_buffer(s->u.ifs.cond, b) || (in_then && in_else))
        return texi_allocate_new(rw->ctx, b, s);
    if (in_then) {
        tex_stmt *t = sink(rw, b, s->u.ifs.then_s);
        return t ? texi_if_new(rw->ctx, s->u.ifs.cond, t, s->u.ifs.else_s) : NULL;
    }
    if (in_else) {
        tex_stmt *f = sink(rw, b, s->u.ifs.else_s);
        return f ? texi_if_new(rw->ctx, s->u.ifs.cond, s->u.ifs.then_s, f) : NULL;
    }
    return s;
}

/* s with ALLOCATE b placed at the smallest scope covering b's uses. */
static tex_stmt *sink(rewriter *rw, texi_buffer *b, tex_stmt *s)
{
    switch (s->kind) {
    case TEXI_STMT_SEQ:
        return sink_seq(rw, b, s);
    case TEXI_STMT_IF:
        return sink_if(rw, b, s);
    case TEXI_STMT_LET:
    case TEXI_STMT_ATTR:
        if (texi_expr_uses_buffer(s->kind == TEXI_STMT_LET ? s->u.let.value : s->u.attr.value, b))
            break;
        return texi_stmt_with_body(rw->ctx, s, sink(rw, b, texi_stmt_body(s)));
    case TEXI_STMT_ALLOCATE:
        return texi_stmt_with_body(rw->ctx, s, sink(rw, b, s->u.alloc.body));
    case TEXI_STMT_FOR:
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_STORE:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    return texi_stmt_uses_buffer(s, b) ? texi_allocate_new(rw->ctx, b, s) : s;
}

/* ------------------------------------------------------------------ reuse */

/* The constant element count of b, or -1. */
static int64_t const_size(const texi_buffer *b)
{
    int64_t n = 1, d;
    for (int i = 0; i < b->ndim; i++) {
        if (!texi_expr_is_int_const(b->shape[i], &d) || d < 0)
            return -1;
        n *= d;
    }
    return n;
}

static bool can_share(const tex_stmt *a, const tex_stmt *b)
{
    if (a->kind != TEXI_STMT_ALLOCATE || b->kind != TEXI_STMT_ALLOCATE)
        return false;
    const texi_buffer *x = a->u.alloc.buf, *y = b->u.alloc.buf;
    int64_t n = const_size(x);
    return x != y && x->dtype == y->dtype && x->scope == y->scope &&
           x->scope != TEXI_SCOPE_SHARED && n >= 0 && n == const_size(y);
}

typedef struct {
    texi_buffer *from, *to;
    rewriter *rw;
} rename_ctx;

static tex_expr *rename_load(tex_expr *e, void *ud)
{
    rename_ctx *r = ud;
    if (e->kind != TEXI_EXPR_LOAD || e->u.load.buf != r->from)
        return NULL;
    tex_expr *idx = texi_expr_mutate(e->u.load.index, rename_load, r);
    tex_expr *load = idx ? texi_load_new(r->to, idx) : NULL;
    if (!load)
        r->rw->failed = true;
    return load ? load : e;
}

/* An INTRIN with its tiles of r->from moved to r->to (offsets renamed too). */
static tex_stmt *rename_intrin(rename_ctx *r, tex_stmt *s)
{
    int n = s->u.intrin.n_args;
    texi_intrin_arg *args = texi_alloc(r->rw->ctx, sizeof *args * (size_t)n, "storage_rewrite");
    for (int i = 0; args && i < n; i++) {
        args[i] = s->u.intrin.args[i];
        if (args[i].buf == r->from)
            args[i].buf = r->to;
        if (args[i].offset && !(args[i].offset = texi_expr_mutate(args[i].offset, rename_load, r)))
            args = NULL;
    }
    tex_stmt *st =
        args ? texi_intrin_new(r->rw->ctx, s->u.intrin.intrin, s->u.intrin.fn, n, args) : NULL;
    if (!st)
        r->rw->failed = true;
    return st ? st : s;
}

static tex_stmt *rename_store(tex_stmt *s, void *ud)
{
    rename_ctx *r = ud;
    if (s->kind == TEXI_STMT_INTRIN)
        return rename_intrin(r, s);
    if (s->kind != TEXI_STMT_STORE || s->u.store.buf != r->from)
        return NULL;
    tex_expr *idx = texi_expr_mutate(s->u.store.index, rename_load, r);
    tex_expr *v = texi_expr_mutate(s->u.store.value, rename_load, r);
    tex_stmt *st = idx && v ? texi_store_new(r->rw->ctx, r->to, idx, v) : NULL;
    if (!st)
        r->rw->failed = true;
    return st ? st : s;
}

/* Items [i, j] of items merged into ALLOCATE(items[i]'s buffer). */
static tex_stmt *merge(rewriter *rw, tex_stmt **items, int i, int j)
{
    rename_ctx r = {items[j]->u.alloc.buf, items[i]->u.alloc.buf, rw};
    tex_stmt *second =
        texi_stmt_mutate(rw->ctx, items[j]->u.alloc.body, rename_store, rename_load, &r);
    tex_stmt **body = texi_alloc(rw->ctx, sizeof *body * (size_t)(j - i + 2), "storage_rewrite");
    if (!second || !body || rw->failed)
        return NULL;
    body[0] = items[i]->u.alloc.body;
    for (int k = i + 1; k < j; k++)
        body[k - i] = items[k];
    body[j - i] = second;
    tex_stmt *seq = texi_seq_new(rw->ctx, j - i + 1, body);
    return seq ? texi_allocate_new(rw->ctx, r.to, seq) : NULL;
}

static tex_stmt *reuse(rewriter *rw, tex_stmt *s)
{
    if (s->kind != TEXI_STMT_SEQ)
        return s;
    int n = s->u.seq.n;
    tex_stmt **items = texi_alloc(rw->ctx, sizeof *items * (size_t)(n + 1), "storage_rewrite");
    if (!items)
        return NULL;
    memcpy(items, s->u.seq.items, sizeof *items * (size_t)n);
    bool changed = false;
    for (int j = 1; j < n; j++)
        for (int i = j - 1; i >= 0; i--) {
            if (!can_share(items[i], items[j]))
                continue;
            if (!(items[i] = merge(rw, items, i, j)))
                return NULL;
            memmove(items + i + 1, items + j + 1, sizeof *items * (size_t)(n - j - 1));
            n -= j - i;
            j = i;
            changed = true;
            break;
        }
    return changed ? texi_seq_new(rw->ctx, n, items) : s;
}

/* ------------------------------------------------------------------- walk */

static tex_stmt *visit(tex_stmt *s, void *ud);

static tex_stmt *rewrite(rewriter *rw, tex_stmt *s)
{
    tex_stmt *r = texi_stmt_mutate(rw->ctx, s, visit, NULL, rw);
    if (!r)
        rw->failed = true;
    return r;
}

/* ALLOCATEs sink (their bodies rewritten first); SEQs get reuse after their
 * items are rewritten. */
static tex_stmt *visit(tex_stmt *s, void *ud)
{
    rewriter *rw = ud;
    tex_stmt *r = NULL;
    if (rw->failed)
        return s;
    if (s->kind == TEXI_STMT_ALLOCATE) {
        tex_stmt *body = rewrite(rw, s->u.alloc.body);
        r = body ? sink(rw, s->u.alloc.buf, body) : NULL;
        r = r ? reuse(rw, r) : NULL;
    } else if (s->kind == TEXI_STMT_SEQ) {
        int n = s->u.seq.n;
        tex_stmt **items = texi_alloc(rw->ctx, sizeof *items * (size_t)(n + 1), "storage_rewrite");
        for (int i = 0; items && i < n; i++)
            if (!(items[i] = rewrite(rw, s->u.seq.items[i])))
                items = NULL;
        tex_stmt *seq = items ? texi_seq_new(rw->ctx, n, items) : NULL;
        r = seq ? reuse(rw, seq) : NULL;
    } else {
        return NULL;
    }
    if (!r)
        rw->failed = true;
    return r ? r : s;
}

int texi_pass_storage_rewrite(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    rewriter rw = {lw->ctx, false};
    tex_stmt *r = rewrite(&rw, in);
    return texi_pass_result(lw, rw.failed ? NULL : r, out);
}
