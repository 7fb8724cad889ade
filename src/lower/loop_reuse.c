/*
 * Pass loop_reuse (CPU tail, after loop_fuse): a costly value that a later
 * loop nest recomputes at the points an earlier nest computed it is
 * stored by the earlier nest and read back by the later one.
 *
 *   for (k.o, 0, 8)                           allocate exp.val: f32[1024] {
 *     for (k.i, 0, 128) vectorized              for (k.o, 0, 8)
 *       S[k.i] = S[k.i] + exp(X[k.o*128+k.i])     for (k.i, 0, 128) vectorized
 *   ...                                             let v = exp(X[k.o*128+k.i])
 *   for (j.o, 0, 8)                     ->          exp.val[k.o*128 + k.i] = v
 *     for (j.i, 0, 128) vectorized                  S[k.i] = S[k.i] + v
 *       Y[j.o*128+j.i] =                        ...
 *         exp(X[j.o*128+j.i]) / s               for (j.o, 0, 8)
 *                                                 for (j.i, 0, 128) vectorized
 *                                                   Y[j.o*128+j.i] =
 *                                                     exp.val[j.o*128 + j.i] / s
 *                                             }
 *
 * (a GPU schedule's sum of exp and its output, each a thread loop, after
 * gpu_threads). Within one sequence whose items run in order (not under
 * ATTR disjoint_nests or parallel_region), the producer A is a nest
 * reached from an item through ALLOCATEs, SEQs and ATTRs whose bodies run
 * once in order (not a thread team's, an atomic update's, ...), the
 * consumer B one reached the same way from a later item, so each runs
 * once, A first. Both
 * are perfect nests of serial, unrolled or vectorized loops of the same
 * constant bounds level by level around one STORE or a sequence of
 * STOREs, guarded or not by one IF without else; when A has a guard, B has
 * the same once A's loop variables are renamed to B's, and it loads
 * nothing the items from A's to B's store to. The value e is a
 * subexpression of a value A stores (the largest such, outermost first)
 * that
 *   - calls exp, log, tanh, sigmoid, erf, sin, cos or pow (costly to
 *     recompute; an L1 load is not), is an f32 or f64 scalar and uses A's
 *     innermost loop variable;
 *   - loads no buffer that a statement of the items from A's to B's
 *     stores to or allocates (so it has the same value at A and at B,
 *     wherever A computes it), and those items call no intrinsic;
 * and that, renamed, equals a subexpression of a value B stores (both
 * simplified). A body of one store must store at an index that uses the
 * innermost loop variable: a reduction into one element stays the one
 * store that simd vectorizes as a reduction. The buffer, one element per
 * point of the nest (row-major, innermost fastest, at most 16 KiB so that
 * it stays on the stack and in cache), is allocated around the items from
 * A's to B's; A binds e in a LET under its guard and stores it there, B
 * loads it where it computed it. Every point at which B reads ran A's
 * body, so the result is the same, with e computed once instead of twice.
 * Sizes that are not constant leave the nests as they are.
 */
#include "lower/lower.h"

#include <stdio.h>
#include <string.h>

enum { MAX_DEPTH = 8, MAX_NESTS = 16, MAX_BYTES = 16384, MAX_RANGES = 32 };

/* A perfect nest: its loops outermost first and its (guarded) stores. */
typedef struct {
    tex_stmt *top; /* the outermost loop, as it is in the tree */
    tex_stmt *loops[MAX_DEPTH];
    int depth;
    tex_stmt *guard; /* the IF around the stores, or NULL */
    tex_stmt *body;  /* one STORE or a SEQ of STOREs */
} nest;

typedef struct {
    tex_ctx *ctx;
    texi_range ranges[MAX_RANGES]; /* of the loops around the sequence */
    int n_ranges;
    bool failed;
} reuser;

static bool reusable_loop(const tex_stmt *s)
{
    return s->kind == TEXI_STMT_FOR && texi_expr_is_int_const(s->u.loop.min, NULL) &&
           texi_expr_is_int_const(s->u.loop.extent, NULL) && s->u.loop.thread_tag < 0 &&
           (s->u.loop.for_kind == TEXI_FOR_SERIAL || s->u.loop.for_kind == TEXI_FOR_UNROLLED ||
            s->u.loop.for_kind == TEXI_FOR_VECTORIZED);
}

static bool all_stores(const tex_stmt *s)
{
    if (s->kind != TEXI_STMT_SEQ)
        return s->kind == TEXI_STMT_STORE;
    for (int i = 0; i < s->u.seq.n; i++)
        if (s->u.seq.items[i]->kind != TEXI_STMT_STORE)
            return false;
    return true;
}

/* Whether s is a perfect nest around (guarded) stores; fills n. */
static bool nest_of(tex_stmt *s, nest *n)
{
    n->top = s;
    n->depth = 0;
    while (reusable_loop(s) && n->depth < MAX_DEPTH) {
        n->loops[n->depth++] = s;
        s = s->u.loop.body;
    }
    n->guard = NULL;
    if (s->kind == TEXI_STMT_IF && !s->u.ifs.else_s) {
        n->guard = s;
        s = s->u.ifs.then_s;
    }
    n->body = s;
    return n->depth > 0 && all_stores(s);
}

/* Whether the statements under ATTR s run once each, in order, on one
 * thread (not a thread team's region, unordered nests, an atomic update,
 * a GPU allreduce or double buffering). */
static bool ordered(const tex_stmt *s)
{
    return !texi_attr_is(s, TEXI_ATTR_PARALLEL_REGION) &&
           !texi_attr_is(s, TEXI_ATTR_DISJOINT_NESTS) && !texi_attr_is(s, TEXI_ATTR_ATOMIC) &&
           !texi_attr_is(s, TEXI_ATTR_THREAD_ALLREDUCE) &&
           !texi_attr_is(s, TEXI_ATTR_DOUBLE_BUFFER) &&
           !texi_attr_is(s, TEXI_ATTR_DOUBLE_BUFFER_WRITE);
}

/* The nests reached from s through ATTRs, ALLOCATEs and SEQs, in order. */
static void nests_in(tex_stmt *s, nest *out, int *n)
{
    if (*n == MAX_NESTS)
        return;
    switch (s->kind) {
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            nests_in(s->u.seq.items[i], out, n);
        return;
    case TEXI_STMT_ATTR:
        if (!ordered(s))
            return;
        nests_in(texi_stmt_body(s), out, n);
        return;
    case TEXI_STMT_ALLOCATE:
        nests_in(texi_stmt_body(s), out, n);
        return;
    case TEXI_STMT_FOR:
        *n += nest_of(s, &out[*n]);
        return;
    default:
        return;
    }
}

static int64_t int_of(const tex_expr *e)
{
    int64_t v = 0;
    texi_expr_is_int_const(e, &v);
    return v;
}

/* Whether b's loops have a's bounds, level by level; the points. */
static int64_t same_points(const nest *a, const nest *b)
{
    int64_t points = 1;
    if (a->depth != b->depth)
        return 0;
    for (int d = 0; d < a->depth; d++) {
        const tex_stmt *la = a->loops[d], *lb = b->loops[d];
        if (int_of(la->u.loop.min) != int_of(lb->u.loop.min) ||
            int_of(la->u.loop.extent) != int_of(lb->u.loop.extent) ||
            int_of(la->u.loop.extent) <= 0)
            return 0;
        points *= int_of(la->u.loop.extent);
        if (points > MAX_BYTES)
            return 0;
    }
    return points;
}

/* The first costly math call of an expression (TEXI_MATH_COUNT: none). */
static bool is_costly(tex_expr *e, void *ud)
{
    enum texi_math *found = ud;
    if (e->kind == TEXI_EXPR_CALL) {
        switch (e->u.call.op) {
        case TEXI_MATH_EXP:
        case TEXI_MATH_LOG:
        case TEXI_MATH_TANH:
        case TEXI_MATH_SIGMOID:
        case TEXI_MATH_ERF:
        case TEXI_MATH_SIN:
        case TEXI_MATH_COS:
        case TEXI_MATH_POW:
            *found = e->u.call.op;
            break;
        default:
            break;
        }
    }
    return *found == TEXI_MATH_COUNT;
}

static enum texi_math costly_call(tex_expr *e)
{
    enum texi_math op = TEXI_MATH_COUNT;
    texi_expr_visit(e, is_costly, &op);
    return op;
}

/* What the items from A's to B's do that e must not depend on. */
typedef struct {
    tex_stmt *const *items;
    int n_items;
    tex_expr *e;
    bool ok;
} region_check;

static bool load_untouched(tex_expr *e, void *ud)
{
    region_check *rc = ud;
    if (e->kind != TEXI_EXPR_LOAD)
        return rc->ok;
    for (int i = 0; i < rc->n_items && rc->ok; i++)
        rc->ok = !texi_stmt_stores_to(rc->items[i], e->u.load.buf);
    return rc->ok;
}

static bool allocates_or_calls(const tex_stmt *s, void *ud)
{
    region_check *rc = ud;
    if (s->kind == TEXI_STMT_INTRIN ||
        (s->kind == TEXI_STMT_ALLOCATE && texi_expr_uses_buffer(rc->e, s->u.alloc.buf)))
        rc->ok = false;
    return rc->ok;
}

/* Whether e has the same value wherever the items evaluate it. */
static bool stable(tex_stmt *const *items, int n_items, tex_expr *e)
{
    region_check rc = {items, n_items, e, true};
    texi_expr_visit(e, load_untouched, &rc);
    for (int i = 0; i < n_items && rc.ok; i++)
        texi_stmt_visit(items[i], allocates_or_calls, &rc);
    return rc.ok;
}

/* A producer-consumer pair under test, and what the search found. */
typedef struct {
    tex_ctx *ctx;
    const reuser *r; /* the ranges of the enclosing loops */
    const nest *a, *b;
    tex_expr *vars_a[MAX_DEPTH], *vars_b[MAX_DEPTH];
    tex_stmt *const *items; /* from A's item to B's */
    int n_items;
    int64_t points; /* of the nests */
    tex_expr *e;    /* the value in A's terms */
    tex_expr *want; /* e renamed to B's variables, simplified */
    tex_expr *load; /* the buffer's element in B's terms */
    tex_expr *v;    /* the LET's variable in A */
    int n_replaced; /* subexpressions of B's value replaced by load */
    bool failed;
} pair;

/* e simplified under the enclosing loops' ranges, the variable of a loop
 * of extent 1 replaced by its minimum; NULL on ENOMEM. */
static tex_expr *simplified(const reuser *r, tex_expr *e)
{
    tex_expr *vars[MAX_RANGES], *mins[MAX_RANGES];
    int n = 0;
    for (int i = 0; i < r->n_ranges; i++)
        if (texi_expr_is_int_const(r->ranges[i].extent, NULL) && int_of(r->ranges[i].extent) == 1) {
            vars[n] = r->ranges[i].var;
            mins[n++] = r->ranges[i].min;
        }
    e = n ? texi_substitute(e, n, vars, mins) : e;
    return e ? texi_simplify(e, r->n_ranges, r->ranges) : NULL;
}

/* e with A's loop variables renamed to B's, simplified; NULL on ENOMEM. */
static tex_expr *in_b(pair *p, tex_expr *e)
{
    tex_expr *r = texi_substitute(e, p->a->depth, p->vars_a, p->vars_b);
    return r ? simplified(p->r, r) : NULL;
}

/* Rewriter of B's value: each subexpression equal to p->want becomes p->load. */
static tex_expr *replace_want(tex_expr *e, void *ud)
{
    pair *p = ud;
    if (p->failed || e->kind != p->want->kind || e->dtype != p->want->dtype || e->lanes != 1)
        return NULL;
    tex_expr *s = simplified(p->r, e);
    if (!s) {
        p->failed = true;
        return NULL;
    }
    if (!texi_expr_equal(s, p->want))
        return NULL;
    p->n_replaced++;
    return p->load;
}

/* Whether B's stored value holds candidate e (A's terms); sets p->want. */
static bool b_holds(pair *p, tex_expr *e)
{
    p->want = in_b(p, e);
    if (!p->want) {
        p->failed = true;
        return false;
    }
    p->n_replaced = 0;
    p->load = e; /* any non-NULL node: only counting here */
    texi_stmt_mutate(p->ctx, p->b->body, NULL, replace_want, p);
    return !p->failed && p->n_replaced > 0;
}

/* Search of A's value, outermost first, for a subexpression to reuse. */
static bool find_value(tex_expr *e, void *ud)
{
    pair *p = ud;
    if (p->e || p->failed)
        return false;
    if (costly_call(e) == TEXI_MATH_COUNT)
        return false;
    const tex_expr *inner = p->a->loops[p->a->depth - 1]->u.loop.var;
    if (e->lanes == 1 && (e->dtype == TEX_F32 || e->dtype == TEX_F64) &&
        p->points * tex_dtype_bytes(e->dtype) <= MAX_BYTES && texi_expr_uses_var(e, inner) &&
        stable(p->items, p->n_items, e) && b_holds(p, e)) {
        p->e = e;
        return false;
    }
    return true;
}

/* Rewriter of A's value: e becomes the LET's variable (p->load's value). */
static tex_expr *replace_e(tex_expr *e, void *ud)
{
    pair *p = ud;
    return e == p->e ? p->v : NULL;
}

/* The buffer's element at the nest point of vars (row-major), in the
 * innermost variable's type, or i64 when a variable is. */
static tex_expr *element(tex_ctx *ctx, const nest *n, tex_expr *const vars[])
{
    tex_dtype t = vars[n->depth - 1]->dtype;
    for (int d = 0; d < n->depth; d++)
        t = vars[d]->dtype == TEX_I64 ? TEX_I64 : t;
    tex_expr *idx = texi_int_imm(ctx, t, 0);
    for (int d = 0; d < n->depth && idx; d++) {
        const tex_stmt *l = n->loops[d];
        tex_expr *v = texi_convert(vars[d], t);
        tex_expr *ext = texi_int_imm(ctx, t, int_of(l->u.loop.extent));
        tex_expr *min = texi_int_imm(ctx, t, int_of(l->u.loop.min));
        tex_expr *off = v && min ? texi_binary(TEXI_EXPR_SUB, v, min) : NULL;
        idx = off && ext ? texi_binary(TEXI_EXPR_ADD, texi_binary(TEXI_EXPR_MUL, idx, ext), off)
                         : NULL;
    }
    return idx ? texi_simplify(idx, 0, NULL) : NULL;
}

/* Nest n with its stores (and guard) replaced by `body`. */
static tex_stmt *rebuild_nest(tex_ctx *ctx, const nest *n, tex_stmt *body)
{
    if (n->guard)
        body = body ? texi_if_new(ctx, n->guard->u.ifs.cond, body, NULL) : NULL;
    for (int d = n->depth - 1; d >= 0 && body; d--)
        body = texi_stmt_with_body(ctx, n->loops[d], body);
    return body;
}

/* What the rewrite puts where the two nests were. */
typedef struct {
    const tex_stmt *old[2];
    tex_stmt *new[2];
} swap;

static tex_stmt *swap_nests(tex_stmt *s, void *ud)
{
    swap *w = ud;
    for (int i = 0; i < 2; i++)
        if (s == w->old[i])
            return w->new[i];
    return s->kind == TEXI_STMT_FOR ? s : NULL; /* nests are reached outside loops */
}

/* The items of p with e stored by A and read back by B, under the buffer's
 * allocation; NULL on ENOMEM. */
static tex_stmt *reuse(reuser *r, pair *p)
{
    tex_ctx *ctx = r->ctx;
    tex_expr *size = texi_int_imm(ctx, TEX_I64, p->points);
    char name[64];
    snprintf(name, sizeof name, "%s.val", texi_math_names[costly_call(p->e)]);
    texi_buffer *buf =
        size ? texi_buffer_new(ctx, name, p->e->dtype, TEXI_SCOPE_LOCAL, 1, &size) : NULL;
    tex_expr *at_a = buf ? element(ctx, p->a, p->vars_a) : NULL;
    tex_expr *at_b = at_a ? element(ctx, p->b, p->vars_b) : NULL;
    name[strlen(name) - 2] = 0; /* the variable: "exp.v" */
    tex_expr *v = at_b ? texi_var_new(ctx, name, p->e->dtype) : NULL;
    p->v = v;
    p->load = v ? texi_load_new(buf, at_b) : NULL;
    if (!p->load)
        return NULL;
    /* A: let v = e { buf[at] = v; the stores with e read as v } */
    tex_stmt *keep = texi_stmt_mutate(ctx, p->a->body, NULL, replace_e, p);
    tex_stmt *put = keep ? texi_store_new(ctx, buf, at_a, v) : NULL;
    tex_stmt *seq = put ? texi_seq_new(ctx, 2, (tex_stmt *[]){put, keep}) : NULL;
    tex_stmt *let = seq ? texi_let_new(ctx, v, p->e, seq) : NULL;
    /* B: the stores with e read from buf */
    tex_stmt *nb = texi_stmt_mutate(ctx, p->b->body, NULL, replace_want, p);
    nb = p->failed ? NULL : nb;
    swap w = {{p->a->top, p->b->top},
              {let ? rebuild_nest(ctx, p->a, let) : NULL, nb ? rebuild_nest(ctx, p->b, nb) : NULL}};
    if (!w.new[0] || !w.new[1])
        return NULL;
    tex_stmt **items = texi_alloc(ctx, sizeof *items * (size_t)p->n_items, "loop_reuse");
    for (int i = 0; items && i < p->n_items; i++)
        items[i] = texi_stmt_mutate(ctx, p->items[i], swap_nests, NULL, &w);
    for (int i = 0; items && i < p->n_items; i++)
        if (!items[i])
            return NULL;
    tex_stmt *body = items ? texi_seq_new(ctx, p->n_items, items) : NULL;
    return body ? texi_allocate_new(ctx, buf, body) : NULL;
}

typedef struct {
    const tex_stmt *s;
    int n;
} occurrences;

static bool count_stmt(const tex_stmt *s, void *ud)
{
    occurrences *o = ud;
    o->n += s == o->s;
    return true;
}

/* Whether nest n's statement occurs once in the items (a subtree may be
 * shared: a second copy elsewhere would be rewritten too). */
static bool occurs_once(tex_stmt *const *items, int n_items, const nest *n)
{
    occurrences o = {n->top, 0};
    for (int i = 0; i < n_items; i++)
        texi_stmt_visit(items[i], count_stmt, &o);
    return o.n == 1;
}

/* Whether A's and B's guards agree (none in A, or equal once renamed). */
static bool guards_agree(pair *p)
{
    if (!p->a->guard)
        return true;
    if (!p->b->guard || !stable(p->items, p->n_items, p->a->guard->u.ifs.cond))
        return false;
    tex_expr *ga = in_b(p, p->a->guard->u.ifs.cond);
    tex_expr *gb = simplified(p->r, p->b->guard->u.ifs.cond);
    p->failed |= !ga || !gb;
    return !p->failed && texi_expr_equal(ga, gb);
}

/* Whether nest a's body is not one store into one element across its
 * innermost loop (a reduction simd vectorizes only as the body's one store). */
static bool elementwise(const nest *a)
{
    int64_t coef;
    const tex_expr *inner = a->loops[a->depth - 1]->u.loop.var;
    return a->body->kind == TEXI_STMT_SEQ ||
           (texi_linear_in(a->body->u.store.index, inner, &coef) && coef != 0);
}

/* Search of A's stored values for a value to reuse (find_value). */
static void search(pair *p)
{
    const tex_stmt *b = p->a->body;
    int n = b->kind == TEXI_STMT_SEQ ? b->u.seq.n : 1;
    for (int i = 0; i < n && !p->e && !p->failed; i++) {
        const tex_stmt *st = b->kind == TEXI_STMT_SEQ ? b->u.seq.items[i] : b;
        texi_expr_visit(st->u.store.value, find_value, p);
    }
}

/* Items [i, j] of a sequence with one value of a nest in item i reused by
 * a nest in item j; NULL when there is none (or on failure). */
static tex_stmt *try_items(reuser *r, tex_stmt *const *items, int i, int j)
{
    nest na[MAX_NESTS], nb[MAX_NESTS];
    int n_a = 0, n_b = 0;
    nests_in(items[i], na, &n_a);
    nests_in(items[j], nb, &n_b);
    for (int x = 0; x < n_a; x++) {
        if (!elementwise(&na[x]))
            continue;
        for (int y = 0; y < n_b; y++) {
            int64_t points = same_points(&na[x], &nb[y]);
            if (!points)
                continue;
            pair p = {.ctx = r->ctx,
                      .r = r,
                      .a = &na[x],
                      .b = &nb[y],
                      .items = items + i,
                      .n_items = j - i + 1,
                      .points = points};
            for (int d = 0; d < na[x].depth; d++) {
                p.vars_a[d] = na[x].loops[d]->u.loop.var;
                p.vars_b[d] = nb[y].loops[d]->u.loop.var;
            }
            if (occurs_once(p.items, p.n_items, p.a) && occurs_once(p.items, p.n_items, p.b) &&
                guards_agree(&p))
                search(&p);
            tex_stmt *done = p.e && !p.failed ? reuse(r, &p) : NULL;
            r->failed |= p.failed || (p.e && !done);
            if (done || r->failed)
                return done;
        }
    }
    return NULL;
}

static tex_stmt *reuse_in(reuser *r, tex_stmt *s);

/* A sequence with its items rewritten, then values reused between them. */
static tex_stmt *reuse_seq(reuser *r, tex_stmt *s)
{
    int n = s->u.seq.n;
    tex_stmt **items = texi_alloc(r->ctx, sizeof *items * (size_t)n, "loop_reuse");
    bool changed = false;
    for (int i = 0; items && i < n && !r->failed; i++) {
        items[i] = reuse_in(r, s->u.seq.items[i]);
        changed |= items[i] != s->u.seq.items[i];
    }
    if (!items || r->failed)
        return NULL;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            tex_stmt *done = try_items(r, items, i, j);
            if (r->failed)
                return NULL;
            if (!done)
                continue;
            /* items [i, j] become one; look again from the start */
            items[i] = done;
            memmove(items + i + 1, items + j + 1, sizeof *items * (size_t)(n - j - 1));
            n -= j - i;
            changed = true;
            i = -1;
            break;
        }
    return changed ? texi_seq_new(r->ctx, n, items) : s;
}

/* ATTR s over a sequence whose items run in no set order: each item on
 * its own. */
static tex_stmt *unordered_items(reuser *r, tex_stmt *s)
{
    const tex_stmt *seq = s->u.attr.body;
    tex_stmt **items = texi_alloc(r->ctx, sizeof *items * (size_t)seq->u.seq.n, "loop_reuse");
    for (int i = 0; items && i < seq->u.seq.n; i++)
        if (!(items[i] = reuse_in(r, seq->u.seq.items[i])))
            return NULL;
    tex_stmt *body = items ? texi_seq_new(r->ctx, seq->u.seq.n, items) : NULL;
    return body ? texi_stmt_with_body(r->ctx, s, body) : NULL;
}

/* s with values reused in every sequence, inner ones first; the ranges of
 * the loops around each sequence let the simplifier see, for example, that
 * a loop of extent 1 has its variable at its minimum. */
static tex_stmt *reuse_in(reuser *r, tex_stmt *s)
{
    if (!s || r->failed)
        return NULL;
    switch (s->kind) {
    case TEXI_STMT_SEQ:
        return reuse_seq(r, s);
    case TEXI_STMT_ATTR:
        if (!ordered(s) && s->u.attr.body->kind == TEXI_STMT_SEQ)
            return unordered_items(r, s);
        return texi_stmt_with_body(r->ctx, s, reuse_in(r, s->u.attr.body));
    case TEXI_STMT_IF: {
        tex_stmt *t = reuse_in(r, s->u.ifs.then_s);
        tex_stmt *e = s->u.ifs.else_s ? reuse_in(r, s->u.ifs.else_s) : NULL;
        if (r->failed)
            return NULL;
        return t == s->u.ifs.then_s && e == s->u.ifs.else_s
                   ? s
                   : texi_if_new(r->ctx, s->u.ifs.cond, t, e);
    }
    case TEXI_STMT_FOR: {
        bool ranged = r->n_ranges < MAX_RANGES;
        if (ranged)
            r->ranges[r->n_ranges++] = (texi_range){s->u.loop.var, s->u.loop.min, s->u.loop.extent};
        tex_stmt *body = reuse_in(r, s->u.loop.body);
        r->n_ranges -= ranged;
        return body ? texi_stmt_with_body(r->ctx, s, body) : NULL;
    }
    default: {
        tex_stmt *body = texi_stmt_body(s);
        if (!body)
            return s;
        tex_stmt *nb = reuse_in(r, body);
        return nb ? texi_stmt_with_body(r->ctx, s, nb) : NULL;
    }
    }
}

int texi_pass_loop_reuse(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    reuser r = {.ctx = lw->ctx};
    tex_stmt *res = reuse_in(&r, in);
    return texi_pass_result(lw, r.failed ? NULL : res, out);
}
