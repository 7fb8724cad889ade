/*
 * Pass hoist_search: binary searches (SEARCH, docs/sparse.md) computed once
 * per iteration of the loop they depend on, not once per inner iteration.
 *
 * Input: the body after hfuse. For every loop L nested in another loop
 * (so no search becomes host code, which device_split forbids) and not
 * bound to a GPU index: each SEARCH of L's body evaluated unconditionally
 * there (not in an IF branch, a select arm, or the right operand of && or
 * ||) that names neither L's variable nor any variable bound inside L, and
 * reads (its array and the loads in its operands) no buffer L stores to,
 * is bound by a LET around L, and every equal search in L's body (in a
 * select arm too: the value is computed anyway) reads the LET variable:
 *
 *   for (p ..) for (k ..) O[p] += X[upper_bound(ip, 1, m + 1, p) - 1, k] * ..
 *   ->  for (p ..) let s = upper_bound(ip, 1, m + 1, p) in for (k ..) O[p] += X[s - 1, k] * ..
 *
 * and a coordinate search's existence test and value read share one
 * search. A store inside a loop is handled the same way (its searches
 * bound by a LET around it), so equal searches of one statement are one.
 * Loops are handled innermost first, so a search moves out as far as its
 * operands allow, one loop at a time. A search under a loop that
 * runs no iteration is evaluated anyway: it only reads a[lo .. hi), whose
 * bounds come from arrays the kernel checked at call time.
 */
#include "lower/lower.h"

enum { MAX_HOIST = 16 };

typedef struct {
    tex_ctx *ctx;
    int depth; /* enclosing loops of the statement being rewritten */
    bool failed;
} hoister;

/* The loop (or store) being hoisted from: what a candidate must not use. */
typedef struct {
    const tex_stmt *loop;
    int n_bound;
    const tex_expr *bound[64]; /* variables bound inside the loop (and its own) */
    bool overflow;
    int n;
    tex_expr *found[MAX_HOIST]; /* the candidates, distinct */
} scope;

static bool note_bound(const tex_stmt *s, void *ud)
{
    scope *sc = ud;
    const tex_expr *v = s->kind == TEXI_STMT_FOR   ? s->u.loop.var
                        : s->kind == TEXI_STMT_LET ? s->u.let.var
                                                   : NULL;
    if (v && sc->n_bound < 64)
        sc->bound[sc->n_bound++] = v;
    else if (v)
        sc->overflow = true;
    return true;
}

typedef struct {
    const scope *sc;
    bool ok;
} use_check;

/* Visitor: clears ok at a variable bound in the loop or a load of (or a
 * search of) storage the loop writes. */
static bool invariant_step(tex_expr *e, void *ud)
{
    use_check *u = ud;
    for (int i = 0; e->kind == TEXI_EXPR_VAR && i < u->sc->n_bound; i++)
        u->ok &= e != u->sc->bound[i];
    if (e->kind == TEXI_EXPR_LOAD)
        u->ok &= !texi_stmt_stores_to(u->sc->loop, e->u.load.buf);
    if (e->kind == TEXI_EXPR_SEARCH)
        u->ok &= e->u.search.buf && !texi_stmt_stores_to(u->sc->loop, e->u.search.buf);
    return u->ok;
}

/* Unconditionally evaluated searches of e that the loop does not change. */
static void find_in_expr(scope *sc, tex_expr *e)
{
    switch (e->kind) {
    case TEXI_EXPR_SELECT:
        find_in_expr(sc, e->u.sel.cond);
        return;
    case TEXI_EXPR_AND:
    case TEXI_EXPR_OR:
        find_in_expr(sc, e->u.bin.a);
        return;
    case TEXI_EXPR_SEARCH: {
        use_check u = {sc, e->lanes == 1};
        texi_expr_visit(e, invariant_step, &u);
        for (int i = 0; u.ok && i < sc->n; i++)
            u.ok = !texi_expr_equal(sc->found[i], e);
        if (u.ok && sc->n < MAX_HOIST)
            sc->found[sc->n++] = e;
        if (u.ok)
            return;
        break;
    }
    default:
        break;
    }
    if (texi_expr_is_binary(e)) {
        find_in_expr(sc, e->u.bin.a);
        find_in_expr(sc, e->u.bin.b);
    } else if (e->kind == TEXI_EXPR_NOT || e->kind == TEXI_EXPR_CAST) {
        find_in_expr(sc, e->u.un.a);
    } else if (e->kind == TEXI_EXPR_LOAD) {
        find_in_expr(sc, e->u.load.index);
    } else if (e->kind == TEXI_EXPR_CALL) {
        for (int i = 0; i < e->u.call.n_args; i++)
            find_in_expr(sc, e->u.call.args[i]);
    } else if (e->kind == TEXI_EXPR_SEARCH) {
        find_in_expr(sc, e->u.search.lo);
        find_in_expr(sc, e->u.search.hi);
        find_in_expr(sc, e->u.search.value);
    }
}

/* The statements of s run whenever s does (IF branches are not). */
static void find_in_stmt(scope *sc, const tex_stmt *s)
{
    switch (s->kind) {
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            find_in_stmt(sc, s->u.seq.items[i]);
        return;
    case TEXI_STMT_LET:
        find_in_expr(sc, s->u.let.value);
        find_in_stmt(sc, s->u.let.body);
        return;
    case TEXI_STMT_FOR:
        find_in_stmt(sc, s->u.loop.body);
        return;
    case TEXI_STMT_STORE:
        find_in_expr(sc, s->u.store.index);
        find_in_expr(sc, s->u.store.value);
        return;
    case TEXI_STMT_IF:
        find_in_expr(sc, s->u.ifs.cond);
        return;
    default:
        return;
    }
}

typedef struct {
    tex_ctx *ctx;
    const scope *sc;
    tex_expr **vars;
} replacer;

/* The variable standing for search e, or NULL. */
static tex_expr *replace_expr(tex_expr *e, void *ud)
{
    const replacer *r = ud;
    for (int i = 0; e->kind == TEXI_EXPR_SEARCH && i < r->sc->n; i++)
        if (texi_expr_equal(e, r->sc->found[i]))
            return r->vars[i];
    return NULL;
}

/* A LET of a hoisted search (an inner loop's or store's) is dropped, its
 * variable replaced by the hoisted one. */
static tex_stmt *drop_alias(tex_stmt *s, void *ud)
{
    const replacer *r = ud;
    tex_expr *v = s->kind == TEXI_STMT_LET ? replace_expr(s->u.let.value, ud) : NULL;
    if (!v)
        return NULL;
    tex_stmt *body = texi_stmt_mutate(r->ctx, s->u.let.body, drop_alias, replace_expr, ud);
    return body ? texi_stmt_substitute(r->ctx, body, s->u.let.var, v) : NULL;
}

/* Loop s (its body already rewritten), or store s, inside LETs of its
 * invariant searches. */
static tex_stmt *hoist(hoister *h, tex_stmt *s)
{
    scope sc = {.loop = s};
    if (s->kind == TEXI_STMT_FOR) {
        sc.bound[sc.n_bound++] = s->u.loop.var;
        texi_stmt_visit(s->u.loop.body, note_bound, &sc);
    }
    if (sc.overflow)
        return s;
    find_in_stmt(&sc, s->kind == TEXI_STMT_FOR ? s->u.loop.body : s);
    if (!sc.n)
        return s;
    tex_expr *vars[MAX_HOIST];
    for (int i = 0; i < sc.n; i++)
        if (!(vars[i] = texi_var_new(h->ctx, "srch", sc.found[i]->dtype)))
            return h->failed = true, s;
    replacer r = {h->ctx, &sc, vars};
    tex_stmt *out = texi_stmt_mutate(h->ctx, s, drop_alias, replace_expr, &r);
    for (int i = sc.n - 1; i >= 0 && out; i--)
        out = texi_let_new(h->ctx, vars[i], sc.found[i], out);
    h->failed |= !out;
    return out ? out : s;
}

static tex_stmt *rewrite(tex_stmt *s, void *ud)
{
    hoister *h = ud;
    if (!h->failed && s->kind == TEXI_STMT_STORE && h->depth > 0)
        return hoist(h, s);
    if (h->failed || s->kind != TEXI_STMT_FOR)
        return NULL;
    h->depth++;
    tex_stmt *body = texi_stmt_mutate(h->ctx, s->u.loop.body, rewrite, NULL, h);
    h->depth--;
    if (!body)
        return h->failed = true, s;
    tex_stmt *loop = body == s->u.loop.body
                         ? s
                         : texi_for_new(h->ctx, s->u.loop.var, s->u.loop.min, s->u.loop.extent,
                                        s->u.loop.for_kind, s->u.loop.thread_tag, body);
    if (!loop)
        return h->failed = true, s;
    return h->depth > 0 && loop->u.loop.for_kind != TEXI_FOR_THREAD ? hoist(h, loop) : loop;
}

int texi_pass_hoist_search(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    hoister h = {lw->ctx, 0, false};
    tex_stmt *r = texi_stmt_mutate(lw->ctx, in, rewrite, NULL, &h);
    if (!r || h.failed)
        return tex_errcode(lw->ctx) ? tex_errcode(lw->ctx) : TEX_ENOMEM;
    *out = r;
    return 0;
}
