/*
 * Pass loop_unswitch (GPU tail, and CPU tail after simd_tail): a thread's
 * register tile runs without bounds checks when the whole tile is inside
 * them.
 *
 * The guards of a tile against symbolic sizes depend on the block and
 * thread indices (`if (by*64 + ty*4 + i < M)`), so loop_partition finds no
 * prefix of a loop where they hold for every thread. A serial or unrolled
 * loop whose body only writes local buffers (a register tile's update: no
 * barrier can fall inside it, so threads may take different copies) is
 * unswitched on the worst case of its guards over it and its inner loops:
 *
 *   for v { .. if (c && rest) S .. }
 *     ->  if (c at its worst) { for v { .. if (rest) S .. } }
 *         else                { for v { .. if (c && rest) S .. } }
 *
 * and then, in the first copy (or where there are no guards), on the
 * conditions of its selects (a padded read's bounds: `select(r >= 1,
 * X[r - 1], 0)` is `X[r - 1]` in a tile away from the border). So a tile
 * past the domain runs the guarded copy, one at the border the copy with
 * selects and no guards, the others neither.
 *
 * A condition is a conjunct that compares integers without loads or calls
 * (IFs without else, or a select's condition); its worst case is the upper
 * bound over the loops (texi_expr_bound) of lhs - rhs (< 0), which must name
 * none of those loops nor a LET between them. Copies that keep conditions are left as they
 * were; a test the simplifier decides keeps one copy (a false one leaves
 * the loop alone). Loops are visited outermost first, so the test runs as
 * rarely as possible. On the CPU it runs after gpu_threads (which
 * vectorizes a thread loop across the threads, and a branch per thread
 * would prevent that) and after simd_tail: there the guards are a vector
 * chunk's (`if (o*64 < w - 16)` around each of a tile's partial vectors),
 * the same at every step of the reduction loops around them; unswitched,
 * an NCHW conv's tiles over a symbolic row of 56 pixels (the tile is 64)
 * ran a quarter faster.
 */
#include "lower/scope_math.h"

enum { GUARDS, SELECTS }; /* what a scan collects */

/* The conditions of one loop's body. */
typedef struct {
    texi_scope *u;
    int what;
    texi_inner in;    /* the loop, then the inner loops and LETs around the statement */
    tex_expr **conds; /* conjuncts that hold in the first copy */
    int n_conds, cap_conds;
    tex_expr *test; /* conjunction of their worst cases, or NULL */
} scan;

/* Visitor: clears *ud at a node that reads memory or calls a function. */
static bool pure(tex_expr *e, void *ud)
{
    bool *ok = ud;
    if (e->kind == TEXI_EXPR_LOAD || e->kind == TEXI_EXPR_ACCESS || e->kind == TEXI_EXPR_CALL ||
        e->kind == TEXI_EXPR_SEARCH || e->kind == TEXI_EXPR_REDUCE)
        *ok = false;
    return *ok;
}

/* Records conjunct c when its worst case over the loops names none of them.
 * A conjunct that loads is left alone: the test, ahead of the loop and of
 * the other guards, might load where they would not. */
static void consider(tex_expr *c, void *ud)
{
    scan *sc = ud;
    texi_scope *u = sc->u;
    tex_expr *d = texi_scope_negative(u, c);
    bool ok = d != NULL;
    if (d)
        texi_expr_visit(d, pure, &ok);
    if (!ok)
        return;
    for (int i = 0; i < sc->in.n_lets; i++)
        if (texi_expr_uses_var(d, sc->in.lets[i]))
            return;
    tex_expr *hi = texi_expr_bound(u->ctx, d, sc->in.n_loops, sc->in.loops, true);
    if (!hi || texi_inner_mentions(&sc->in, hi))
        return;
    tex_expr *zero = texi_scope_note(u, texi_int_imm(u->ctx, hi->dtype, 0));
    tex_expr *holds = zero ? texi_scope_note(u, texi_binary(TEXI_EXPR_LT, hi, zero)) : NULL;
    tex_expr **conds =
        holds ? texi_scope_grow(u, sc->conds, sc->n_conds, &sc->cap_conds, sizeof *conds) : NULL;
    if (!conds)
        return;
    sc->conds = conds;
    sc->conds[sc->n_conds++] = c;
    sc->test = sc->test ? texi_scope_note(u, texi_binary(TEXI_EXPR_AND, sc->test, holds)) : holds;
}

static bool scan_select(tex_expr *e, void *ud)
{
    if (e->kind == TEXI_EXPR_SELECT && e->u.sel.cond->lanes == 1)
        texi_conjuncts(e->u.sel.cond, consider, ud);
    return true;
}

/* Visitor over the loop's body: the guards' or the selects' conditions;
 * inner loops and lets are scopes. */
static bool scan_stmt(const tex_stmt *s, void *ud)
{
    scan *sc = ud;
    if (sc->what == SELECTS)
        texi_stmt_visit_exprs(s, scan_select, sc);
    if (s->kind == TEXI_STMT_FOR || s->kind == TEXI_STMT_LET) {
        if (texi_inner_enter(sc->u, &sc->in, s)) {
            texi_stmt_visit(texi_stmt_body(s), scan_stmt, sc);
            texi_inner_leave(&sc->in, s);
        }
        return false;
    }
    if (sc->what == GUARDS && s->kind == TEXI_STMT_IF && !s->u.ifs.else_s)
        texi_conjuncts(s->u.ifs.cond, consider, sc);
    return true;
}

/* ------------------------------------------------------------ rewriting */

static bool dropped(const scan *sc, const tex_expr *c)
{
    for (int i = 0; i < sc->n_conds; i++)
        if (sc->conds[i] == c)
            return true;
    return false;
}

/* cond without the recorded conjuncts; NULL when none is left. */
static tex_expr *strip_cond(const scan *sc, tex_expr *cond)
{
    if (cond->kind != TEXI_EXPR_AND)
        return dropped(sc, cond) ? NULL : cond;
    tex_expr *a = strip_cond(sc, cond->u.bin.a), *b = strip_cond(sc, cond->u.bin.b);
    if (a && b)
        return a == cond->u.bin.a && b == cond->u.bin.b
                   ? cond
                   : texi_scope_note(sc->u, texi_binary(TEXI_EXPR_AND, a, b));
    return a ? a : b;
}

/* A select whose condition lost conjuncts: over the rest, or its true arm. */
static tex_expr *strip_select(tex_expr *e, void *ud)
{
    scan *sc = ud;
    if (e->kind != TEXI_EXPR_SELECT)
        return NULL;
    tex_expr *cond = strip_cond(sc, e->u.sel.cond);
    if (cond == e->u.sel.cond)
        return NULL;
    tex_expr *t = texi_scope_note(sc->u, texi_expr_mutate(e->u.sel.t, strip_select, sc));
    if (!cond || !t)
        return t ? t : e;
    tex_expr *f = texi_scope_note(sc->u, texi_expr_mutate(e->u.sel.f, strip_select, sc));
    return f ? texi_scope_note(sc->u, texi_select_new(cond, t, f)) : e;
}

/* A guard that lost conjuncts: over the rest, or its body. */
static tex_stmt *strip_if(tex_stmt *s, void *ud)
{
    scan *sc = ud;
    if (s->kind != TEXI_STMT_IF || s->u.ifs.else_s)
        return NULL;
    tex_stmt *then_s = texi_stmt_mutate(sc->u->ctx, s->u.ifs.then_s, strip_if, NULL, sc);
    tex_expr *cond = strip_cond(sc, s->u.ifs.cond);
    if (!then_s) {
        sc->u->failed = true;
        return s;
    }
    if (!cond)
        return then_s;
    return cond == s->u.ifs.cond && then_s == s->u.ifs.then_s
               ? s
               : texi_if_new(sc->u->ctx, cond, then_s, NULL);
}

/* Visitor: clears *ud at what may not run under a test that differs between
 * the threads of a block: a store to a non-local buffer (threads may read
 * it after a barrier), a barrier, an intrinsic call, an evaluated
 * expression, a thread loop, a shared allocation. */
static bool local_only(const tex_stmt *s, void *ud)
{
    bool *ok = ud;
    switch (s->kind) {
    case TEXI_STMT_STORE:
        *ok = *ok && s->u.store.buf->scope == TEXI_SCOPE_LOCAL;
        break;
    case TEXI_STMT_ALLOCATE:
        *ok = *ok && s->u.alloc.buf->scope == TEXI_SCOPE_LOCAL;
        break;
    case TEXI_STMT_FOR:
        *ok = *ok && s->u.loop.for_kind != TEXI_FOR_THREAD;
        break;
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_EVALUATE:
        *ok = false;
        break;
    case TEXI_STMT_IF:
    case TEXI_STMT_LET:
    case TEXI_STMT_SEQ:
    case TEXI_STMT_ATTR:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    return *ok;
}

static tex_stmt *process(texi_scope *u, tex_stmt *s);

/* Loop s over `body` (processed). */
static tex_stmt *with_body(texi_scope *u, const tex_stmt *s, tex_stmt *body)
{
    tex_stmt *b = body ? process(u, body) : NULL;
    return b ? texi_for_new(u->ctx, s->u.loop.var, s->u.loop.min, s->u.loop.extent,
                            s->u.loop.for_kind, s->u.loop.thread_tag, b)
             : NULL;
}

/* Loop s unswitched on what (file comment); NULL when there is nothing to
 * unswitch on, the loop is not serial or unrolled, or its body writes more
 * than local buffers. */
static tex_stmt *try_unswitch(texi_scope *u, tex_stmt *s, int what)
{
    bool ok = s->u.loop.for_kind == TEXI_FOR_SERIAL || s->u.loop.for_kind == TEXI_FOR_UNROLLED;
    if (ok)
        texi_stmt_visit(s->u.loop.body, local_only, &ok);
    if (!ok)
        return NULL;
    scan sc = {.u = u, .what = what};
    if (!texi_inner_enter(u, &sc.in, s))
        return NULL;
    texi_stmt_visit(s->u.loop.body, scan_stmt, &sc);
    tex_expr *test = sc.test ? texi_scope_note(u, texi_simplify(sc.test, 0, NULL)) : NULL;
    int64_t known;
    bool decided = test && texi_expr_is_int_const(test, &known);
    if (u->failed || !test || (decided && !known))
        return what == GUARDS && !u->failed ? try_unswitch(u, s, SELECTS) : NULL;
    tex_stmt *body = what == GUARDS
                         ? texi_stmt_mutate(u->ctx, s->u.loop.body, strip_if, NULL, &sc)
                         : texi_stmt_mutate(u->ctx, s->u.loop.body, NULL, strip_select, &sc);
    tex_stmt *fast = NULL;
    if (body && what == GUARDS)
        fast = try_unswitch(u,
                            texi_for_new(u->ctx, s->u.loop.var, s->u.loop.min, s->u.loop.extent,
                                         s->u.loop.for_kind, s->u.loop.thread_tag, body),
                            SELECTS);
    if (body && !fast && !u->failed)
        fast = with_body(u, s, body);
    if (!fast || decided)
        return fast;
    return texi_if_new(u->ctx, test, fast, s);
}

/* ------------------------------------------------------------ the walk */

static tex_stmt *visit_loop(tex_stmt *s, void *ud)
{
    texi_scope *u = ud;
    if (u->failed || s->kind != TEXI_STMT_FOR)
        return u->failed ? s : NULL;
    tex_stmt *r = try_unswitch(u, s, GUARDS);
    if (!r && !u->failed)
        r = with_body(u, s, s->u.loop.body);
    if (!r)
        u->failed = true;
    return r ? r : s;
}

static tex_stmt *process(texi_scope *u, tex_stmt *s)
{
    tex_stmt *r = texi_stmt_mutate(u->ctx, s, visit_loop, NULL, u);
    if (!r)
        u->failed = true;
    return r;
}

int texi_pass_loop_unswitch(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    texi_scope u = {.ctx = lw->ctx, .pass = "loop_unswitch"};
    tex_stmt *r = process(&u, in);
    return texi_pass_result(lw, u.failed ? NULL : r, out);
}
