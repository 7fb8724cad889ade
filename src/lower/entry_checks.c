/*
 * Entry checks (texi_pass_entry_checks): every runtime check of the function
 * moves to the top of its body, so that a call whose arguments break one is
 * refused before anything runs: no allocation, no store, no kernel launch.
 * A refused call writes nothing. Left where schedule_ops puts it (around one
 * stage's nest), a failing check would stop only that stage: the others would
 * still run, read the temporaries it never wrote, and store the output.
 *
 * Input: schedule_ops' tensor-level AST (this pass runs first); the checks
 * are its ATTR "assert" statements (today only a SHIFT_INWARDS split of an
 * extent not provably >= its factor). Output form:
 *     attr assert = c1 { attr assert = c2 { ... the body without asserts } }
 * in body order, without duplicates and provably true checks; every
 * condition reads only parameters and size variables (a check under LETs,
 * IFs and loops is quantified over them: above quantify()). The verifier
 * keeps the checks at the top after every later pass, which the backends
 * rely on: the C emitter returns before the first statement, device_split
 * turns them into the launch plan's checks, the interpreter evaluates them
 * first.
 */
#include "lower/lower.h"
#include "schedule/bound.h"

#include <stdlib.h>

#define MAX_SCOPES 256
#define ARITH(k, a, b) texi_bounds_arith(TEXI_EXPR_##k, (a), (b))

/* A statement enclosing the walk: FOR, LET, or IF (then or else branch). */
typedef struct {
    const tex_stmt *s;
    bool in_else;
} scope;

typedef struct {
    texi_lower *lw;
    tex_ctx *ctx;
    int n_scopes;
    scope scopes[MAX_SCOPES];
    int n_checks, cap_checks;
    tex_expr **checks; /* quantified conditions, in body order */
    int n_found;       /* ATTR "assert" statements met */
    int rc;            /* the walk's error, 0 when none */
} hoister;

static bool is_check(const tex_stmt *s)
{
    return texi_attr_is(s, TEXI_ATTR_ASSERT) && s->u.attr.value;
}

/* TEX_EINVAL: check c reads loop variable v in a form that cannot be hoisted. */
static tex_expr *cannot_hoist(hoister *h, const tex_expr *c, const tex_expr *v)
{
    char *txt = tex_expr_str(c);
    texi_error(h->ctx, TEX_EINVAL,
               "tex_lower: function '%s': the runtime check %s depends on loop '%s' in a form "
               "that cannot be checked when the function is entered",
               h->lw->func ? h->lw->func->name : "?", txt ? txt : "?", v->u.var.name);
    free(txt);
    return NULL;
}

/* !e with the negation pushed into comparisons (De Morgan); NULL for other
 * forms (no error recorded) or on ENOMEM. */
static tex_expr *negate(tex_expr *e)
{
    static const enum texi_expr_kind flip[][2] = {
        {TEXI_EXPR_EQ, TEXI_EXPR_NE}, {TEXI_EXPR_NE, TEXI_EXPR_EQ}, {TEXI_EXPR_LT, TEXI_EXPR_GE},
        {TEXI_EXPR_GE, TEXI_EXPR_LT}, {TEXI_EXPR_GT, TEXI_EXPR_LE}, {TEXI_EXPR_LE, TEXI_EXPR_GT}};
    if (e->kind == TEXI_EXPR_NOT)
        return e->u.un.a;
    if (e->kind == TEXI_EXPR_AND || e->kind == TEXI_EXPR_OR) {
        tex_expr *a = negate(e->u.bin.a), *b = negate(e->u.bin.b);
        return a && b ? texi_binary(e->kind == TEXI_EXPR_AND ? TEXI_EXPR_OR : TEXI_EXPR_AND, a, b)
                      : NULL;
    }
    for (size_t k = 0; k < sizeof flip / sizeof *flip; k++)
        if (e->kind == flip[k][0])
            return texi_binary(flip[k][1], e->u.bin.a, e->u.bin.b);
    return NULL;
}

/* lower_bound(a - b) over the loop >= min_gap, in i64. */
static tex_expr *gap_at_least(hoister *h, const tex_stmt *loop, tex_expr *a, tex_expr *b,
                              int64_t min_gap, const tex_expr *c)
{
    texi_range r = {loop->u.loop.var, loop->u.loop.min, loop->u.loop.extent};
    tex_expr *d = texi_binary(TEXI_EXPR_SUB, texi_convert(a, TEX_I64), texi_convert(b, TEX_I64));
    tex_expr *lo = d ? texi_expr_bound(h->ctx, d, 1, &r, false) : NULL;
    if (!lo)
        return tex_errcode(h->ctx) ? NULL : cannot_hoist(h, c, loop->u.loop.var);
    return texi_binary(TEXI_EXPR_GE, lo, texi_int_imm(h->ctx, TEX_I64, min_gap));
}

/* c for every value of the loop's variable, assuming the loop runs at least
 * once (quantify() below: FOR); NULL with the error recorded. */
static tex_expr *for_every(hoister *h, tex_expr *c, const tex_stmt *loop)
{
    const tex_expr *v = loop->u.loop.var;
    if (!c || !texi_expr_uses_var(c, v))
        return c;
    tex_expr *a = texi_expr_is_binary(c) ? c->u.bin.a : NULL;
    tex_expr *b = texi_expr_is_binary(c) ? c->u.bin.b : NULL;
    bool ints = a && texi_dtype_is_int(a->dtype) && texi_dtype_is_int(b->dtype);
    switch (c->kind) {
    case TEXI_EXPR_AND:
        return ARITH(AND, for_every(h, a, loop), for_every(h, b, loop));
    case TEXI_EXPR_OR:
        if (!texi_expr_uses_var(a, v) || !texi_expr_uses_var(b, v))
            return ARITH(OR, for_every(h, a, loop), for_every(h, b, loop));
        return ARITH(AND, for_every(h, a, loop), for_every(h, b, loop));
    case TEXI_EXPR_NOT: {
        tex_expr *n = negate(c->u.un.a);
        return n ? for_every(h, n, loop) : cannot_hoist(h, c, v);
    }
    case TEXI_EXPR_GE:
    case TEXI_EXPR_GT:
        return ints ? gap_at_least(h, loop, a, b, c->kind == TEXI_EXPR_GT, c)
                    : cannot_hoist(h, c, v);
    case TEXI_EXPR_LE:
    case TEXI_EXPR_LT:
        return ints ? gap_at_least(h, loop, b, a, c->kind == TEXI_EXPR_LT, c)
                    : cannot_hoist(h, c, v);
    case TEXI_EXPR_EQ:
        return ints ? ARITH(AND, gap_at_least(h, loop, a, b, 0, c),
                            gap_at_least(h, loop, b, a, 0, c))
                    : cannot_hoist(h, c, v);
    default:
        return cannot_hoist(h, c, v);
    }
}

/*
 * c quantified over the enclosing statement scopes[k]. A check inside LETs,
 * IFs and loops is replaced by its quantified form, taking the enclosing
 * statements from the innermost out:
 *   LET v = e          v replaced by e;
 *   IF c               !c || check (c || check in the else branch);
 *   FOR v in [m, m+n)  "check holds for every v in the range", that is
 *       - a conjunction: each side; a disjunction: the side free of v ||
 *         the other side quantified, or (v in both) both sides quantified;
 *         a negation is pushed into the comparisons (De Morgan);
 *       - an integer comparison a >= b (>, <=, < likewise; == as >= and
 *         <=): lower_bound(a - b) >= 0 with the symbolic lower bound over
 *         the range (texi_expr_bound), exact where a - b is monotone in v.
 *         Bound inference makes extents loop-invariant, so a check that
 *         reads a loop variable at all is rare;
 *       - unless n >= 1 is provable over the loops around this one:
 *         n <= 0 || the above (an empty loop checks nothing).
 * A quantified check is never weaker than the checks it replaces (a call that
 * passes it passes all of them); it is stronger where a bound is not tight or
 * a disjunction reads v on both sides. A condition of another form (!=, a
 * non-integer comparison, ...) that reads a loop variable cannot be hoisted:
 * tex_lower fails with TEX_EINVAL naming the check and the loop.
 */
static tex_expr *quantify(hoister *h, tex_expr *c, int k)
{
    const scope *sc = &h->scopes[k];
    const tex_stmt *s = sc->s;
    switch (s->kind) {
    case TEXI_STMT_LET:
        return texi_substitute(c, 1, (tex_expr *const[]){s->u.let.var}, &s->u.let.value);
    case TEXI_STMT_IF: {
        tex_expr *taken =
            sc->in_else ? texi_unary(TEXI_EXPR_NOT, TEX_BOOL, s->u.ifs.cond) : s->u.ifs.cond;
        return taken ? ARITH(OR, texi_unary(TEXI_EXPR_NOT, TEX_BOOL, taken), c) : NULL;
    }
    default:
        break;
    }
    /* the loops around this one, for proving that it is never empty */
    texi_range outer[MAX_SCOPES];
    int n_outer = 0;
    for (int i = 0; i < k; i++)
        if (h->scopes[i].s->kind == TEXI_STMT_FOR)
            outer[n_outer++] = (texi_range){h->scopes[i].s->u.loop.var, h->scopes[i].s->u.loop.min,
                                            h->scopes[i].s->u.loop.extent};
    tex_expr *n = s->u.loop.extent, *q = for_every(h, c, s);
    tex_expr *nonempty = ARITH(GE, n, texi_int_imm(h->ctx, n->dtype, 1));
    if (!q || !nonempty || texi_prove(nonempty, n_outer, outer))
        return q;
    return ARITH(OR, ARITH(LE, n, texi_int_imm(h->ctx, n->dtype, 0)), q);
}

/* Appends check c (met inside the current scopes) in its quantified form. */
static int add_check(hoister *h, tex_expr *c)
{
    h->n_found++;
    for (int i = h->n_scopes - 1; i >= 0 && c; i--)
        c = quantify(h, c, i);
    c = c ? texi_simplify(c, 0, NULL) : NULL;
    if (!c)
        return tex_errcode(h->ctx) ? tex_errcode(h->ctx) : TEX_ENOMEM;
    if (texi_prove(c, 0, NULL))
        return 0;
    for (int i = 0; i < h->n_checks; i++)
        if (texi_expr_equal(h->checks[i], c))
            return 0;
    tex_expr **a =
        texi_grow(h->ctx, h->checks, h->n_checks, &h->cap_checks, sizeof *a, "entry_checks");
    if (!a)
        return TEX_ENOMEM;
    h->checks = a;
    h->checks[h->n_checks++] = c;
    return 0;
}

static bool collect(const tex_stmt *s, void *ud);

/* Collects the checks of body inside scope s (a FOR, LET or IF). */
static void collect_in(hoister *h, const tex_stmt *s, bool in_else, const tex_stmt *body)
{
    if (!body || h->rc)
        return;
    if (h->n_scopes == MAX_SCOPES) {
        h->rc = texi_error(h->ctx, TEX_EINVAL,
                           "tex_lower: a runtime check is nested in more than %d loops, lets "
                           "and conditions",
                           MAX_SCOPES);
        return;
    }
    h->scopes[h->n_scopes++] = (scope){s, in_else};
    texi_stmt_visit(body, collect, h);
    h->n_scopes--;
}

/* Visitor: collects the checks in body order (the first error in h->rc). */
static bool collect(const tex_stmt *s, void *ud)
{
    hoister *h = ud;
    if (h->rc)
        return false;
    if (s->kind == TEXI_STMT_FOR || s->kind == TEXI_STMT_LET) {
        collect_in(h, s, false, texi_stmt_body(s));
        return false;
    }
    if (s->kind == TEXI_STMT_IF) {
        collect_in(h, s, false, s->u.ifs.then_s);
        collect_in(h, s, true, s->u.ifs.else_s);
        return false;
    }
    if (is_check(s))
        h->rc = add_check(h, s->u.attr.value);
    return h->rc == 0;
}

/* Rewrite callback: an assert becomes its body (with its own asserts gone). */
static tex_stmt *strip(tex_stmt *s, void *ud)
{
    hoister *h = ud;
    if (!is_check(s))
        return NULL;
    tex_stmt *body = texi_stmt_mutate(h->ctx, s->u.attr.body, strip, NULL, h);
    return body ? body : s; /* NULL: failed (recorded in ctx), checked by the caller */
}

int texi_pass_entry_checks(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    hoister h = {.lw = lw, .ctx = lw->ctx};
    texi_stmt_visit(in, collect, &h);
    TEXI_TRY(h.rc);
    if (h.n_found == 0) {
        *out = in;
        return 0;
    }
    tex_stmt *body = texi_stmt_mutate(lw->ctx, in, strip, NULL, &h);
    if (tex_errcode(lw->ctx))
        return tex_errcode(lw->ctx);
    for (int i = h.n_checks - 1; i >= 0 && body; i--)
        body = texi_attr_named(lw->ctx, TEXI_ATTR_ASSERT, h.checks[i], body);
    *out = body;
    return body ? 0 : TEX_ENOMEM;
}
