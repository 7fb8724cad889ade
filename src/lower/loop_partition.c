/*
 * Pass loop_partition: the main part of a guarded loop runs without guards.
 *
 * A non-divisible split leaves `if (v*f + w < e)` around the innermost body
 * of loop v (w: inner loop variables). Such a condition holds for a prefix
 * of v's iteration space, for every value of the inner variables, and this
 * pass splits the loop there:
 *
 *   for v in [lo, hi) { .. if (c && rest) S .. }
 *     ->  for v in [lo, m)  { .. if (rest) S .. }     main: c provably true
 *         for v in [m, hi)  { .. if (c && rest) S .. } tail: guard kept
 *
 * Which conditions qualify and where m lies: above consider(); what becomes
 * of the parts: above try_partition(). Thread-bound loops are never
 * partitioned.
 */
#include "lower/lower.h"

typedef struct {
    tex_ctx *ctx;
    texi_range *env; /* enclosing loops of the current statement, outermost first */
    int n_env, cap_env;
    bool failed;
} part;

/* The candidates of one loop. */
typedef struct {
    part *p;
    tex_expr *v;       /* the loop variable */
    texi_range *inner; /* loops between the candidate loop and the IF, outermost first */
    int n_inner, cap_inner;
    tex_expr **blocked; /* let variables between them */
    int n_blocked, cap_blocked;
    tex_expr **conds; /* conjuncts holding in the main part */
    int n_conds, cap_conds;
    tex_expr *bound; /* min of their bounds, or NULL */
} scan;

/* texi_grow for this pass: NULL sets p->failed. */
static void *grow(part *p, void *arr, int n, int *cap, size_t size)
{
    void *a = texi_grow(p->ctx, arr, n, cap, size, "loop_partition");
    if (!a)
        p->failed = true;
    return a;
}

static tex_expr *note(part *p, tex_expr *e)
{
    if (!e)
        p->failed = true;
    return e;
}

static tex_expr *arith(part *p, enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    if (!a || !b)
        return note(p, NULL);
    tex_dtype t = texi_dtype_promote(a->dtype, b->dtype);
    a = texi_convert(a, t);
    b = texi_convert(b, t);
    return note(p, a && b ? texi_binary(kind, a, b) : NULL);
}

static tex_expr *imm(part *p, tex_dtype t, int64_t v)
{
    return note(p, texi_int_imm(p->ctx, t, v));
}

static tex_expr *simp(part *p, tex_expr *e)
{
    return e ? note(p, texi_simplify(e, p->n_env, p->env)) : note(p, NULL);
}

static tex_expr *subst(part *p, tex_expr *e, tex_expr *var, tex_expr *value)
{
    if (!e || !value)
        return note(p, NULL);
    return note(p, texi_substitute(e, 1, &var, &(tex_expr *){texi_convert(value, var->dtype)}));
}

/* d = coef*var + *rest with an integer constant coef; false when d is not
 * linear in var (or on failure). */
static bool linear_in(part *p, tex_expr *d, tex_expr *var, int64_t *coef, tex_expr **rest)
{
    if (!texi_expr_uses_var(d, var)) {
        *coef = 0;
        *rest = d;
        return true;
    }
    tex_expr *next = subst(p, d, var, arith(p, TEXI_EXPR_ADD, var, imm(p, var->dtype, 1)));
    tex_expr *diff = note(p, texi_simplify(arith(p, TEXI_EXPR_SUB, next, d), 0, NULL));
    if (!diff || !texi_expr_is_int_const(diff, coef))
        return false;
    *rest = note(p, texi_simplify(subst(p, d, var, imm(p, var->dtype, 0)), 0, NULL));
    tex_expr *back =
        arith(p, TEXI_EXPR_ADD, arith(p, TEXI_EXPR_MUL, imm(p, d->dtype, *coef), var), *rest);
    tex_expr *zero = note(p, texi_simplify(arith(p, TEXI_EXPR_SUB, d, back), 0, NULL));
    int64_t z;
    return *rest && zero && texi_expr_is_int_const(zero, &z) && z == 0 &&
           !texi_expr_uses_var(*rest, var);
}

/* A comparison as d < 0 (integers only), or NULL. */
static tex_expr *normalized(part *p, tex_expr *c)
{
    if (!texi_expr_is_compare(c) || !texi_dtype_is_int(c->u.bin.a->dtype))
        return NULL;
    tex_expr *a = c->u.bin.a, *b = c->u.bin.b, *one = imm(p, a->dtype, 1);
    switch (c->kind) {
    case TEXI_EXPR_LT:
        return arith(p, TEXI_EXPR_SUB, a, b);
    case TEXI_EXPR_LE:
        return arith(p, TEXI_EXPR_SUB, arith(p, TEXI_EXPR_SUB, a, b), one);
    case TEXI_EXPR_GT:
        return arith(p, TEXI_EXPR_SUB, b, a);
    case TEXI_EXPR_GE:
        return arith(p, TEXI_EXPR_SUB, arith(p, TEXI_EXPR_SUB, b, a), one);
    default:
        return NULL;
    }
}

/* rhi: the worst (largest) value of r over the inner loops, or NULL. */
static tex_expr *worst_case(part *p, const scan *sc, tex_expr *r)
{
    for (int i = sc->n_inner - 1; i >= 0 && r; i--) {
        const texi_range *u = &sc->inner[i];
        int64_t g;
        tex_expr *rest;
        if (!linear_in(p, r, u->var, &g, &rest))
            return NULL;
        if (g == 0)
            continue;
        tex_expr *at = g > 0 ? arith(p, TEXI_EXPR_SUB, arith(p, TEXI_EXPR_ADD, u->min, u->extent),
                                     imm(p, u->min->dtype, 1))
                             : u->min;
        r = arith(p, TEXI_EXPR_ADD, rest, arith(p, TEXI_EXPR_MUL, imm(p, rest->dtype, g), at));
    }
    return r ? note(p, texi_simplify(r, 0, NULL)) : NULL;
}

/* Whether e mentions a variable bound inside or around the candidate loop. */
static bool mentions_bound(const part *p, const scan *sc, tex_expr *e)
{
    if (texi_expr_uses_var(e, sc->v))
        return true;
    for (int i = 0; i < sc->n_inner; i++)
        if (texi_expr_uses_var(e, sc->inner[i].var))
            return true;
    for (int i = 0; i < sc->n_blocked; i++)
        if (texi_expr_uses_var(e, sc->blocked[i]))
            return true;
    for (int i = 0; i < p->n_env; i++)
        if (texi_expr_uses_var(e, p->env[i].var))
            return true;
    return false;
}

/*
 * Records conjunct c when it holds on a prefix of v's range.
 * Candidates: the conjuncts of IF conditions (IFs without else) anywhere in
 * the loop's body that are integer comparisons; each is normalized to d < 0
 * and must be linear in v with a positive constant coefficient f
 * (d = f*v + r, found by finite differences: f = d(v+1) - d(v)) and linear in
 * each inner loop variable with a constant coefficient, whose worst value is
 * then taken (its range's end or start). What remains, rhi, may only
 * mention symbolic sizes: a bound over enclosing loop variables would not
 * pay. Then c holds for all v < floordiv(f - 1 - rhi, f); m is the smallest
 * such bound over the candidates, clamped to [lo, hi].
 */
static void consider(part *p, scan *sc, tex_expr *c)
{
    int64_t f;
    tex_expr *r, *d = normalized(p, c);
    if (!d || !texi_expr_uses_var(d, sc->v) || !linear_in(p, d, sc->v, &f, &r) || f <= 0)
        return;
    tex_expr *rhi = worst_case(p, sc, r);
    if (!rhi || mentions_bound(p, sc, rhi))
        return;
    tex_expr *fe = imm(p, rhi->dtype, f);
    tex_expr *b =
        arith(p, TEXI_EXPR_FLOORDIV,
              arith(p, TEXI_EXPR_SUB, arith(p, TEXI_EXPR_SUB, fe, imm(p, rhi->dtype, 1)), rhi), fe);
    b = note(p, texi_convert(b, sc->v->dtype));
    tex_expr **conds = b ? grow(p, sc->conds, sc->n_conds, &sc->cap_conds, sizeof *conds) : NULL;
    if (!conds)
        return;
    sc->conds = conds;
    sc->conds[sc->n_conds++] = c;
    sc->bound = sc->bound ? arith(p, TEXI_EXPR_MIN, sc->bound, b) : b;
}

static void scan_conds(part *p, scan *sc, tex_expr *cond)
{
    if (cond->kind == TEXI_EXPR_AND) {
        scan_conds(p, sc, cond->u.bin.a);
        scan_conds(p, sc, cond->u.bin.b);
    } else {
        consider(p, sc, cond);
    }
}

/* Visitor over the candidate loop's body: the conditions of IFs without
 * else are considered; inner loops and lets are scopes. */
static bool scan_stmt(const tex_stmt *s, void *ud)
{
    scan *sc = ud;
    part *p = sc->p;
    if (s->kind == TEXI_STMT_FOR) {
        texi_range *inner = grow(p, sc->inner, sc->n_inner, &sc->cap_inner, sizeof *inner);
        if (!inner)
            return false;
        sc->inner = inner;
        sc->inner[sc->n_inner++] = (texi_range){s->u.loop.var, s->u.loop.min, s->u.loop.extent};
        texi_stmt_visit(s->u.loop.body, scan_stmt, sc);
        sc->n_inner--;
        return false;
    }
    if (s->kind == TEXI_STMT_LET) {
        tex_expr **blocked = grow(p, sc->blocked, sc->n_blocked, &sc->cap_blocked, sizeof *blocked);
        if (!blocked)
            return false;
        sc->blocked = blocked;
        sc->blocked[sc->n_blocked++] = s->u.let.var;
        texi_stmt_visit(s->u.let.body, scan_stmt, sc);
        sc->n_blocked--;
        return false;
    }
    if (s->kind == TEXI_STMT_IF && !s->u.ifs.else_s)
        scan_conds(p, sc, s->u.ifs.cond);
    return true;
}

/* ------------------------------------------------------------ rewriting */

static bool is_dropped(const scan *sc, const tex_expr *c)
{
    for (int i = 0; i < sc->n_conds; i++)
        if (sc->conds[i] == c)
            return true;
    return false;
}

/* cond without the dropped conjuncts; NULL when none is left. */
static tex_expr *strip_cond(part *p, const scan *sc, tex_expr *cond)
{
    if (cond->kind != TEXI_EXPR_AND)
        return is_dropped(sc, cond) ? NULL : cond;
    tex_expr *a = strip_cond(p, sc, cond->u.bin.a), *b = strip_cond(p, sc, cond->u.bin.b);
    if (a && b)
        return a == cond->u.bin.a && b == cond->u.bin.b ? cond
                                                        : note(p, texi_binary(TEXI_EXPR_AND, a, b));
    return a ? a : b;
}

static tex_stmt *strip_if(tex_stmt *s, void *ud);

typedef struct {
    part *p;
    const scan *sc;
} strip_ctx;

static tex_stmt *strip_if(tex_stmt *s, void *ud)
{
    strip_ctx *x = ud;
    if (s->kind != TEXI_STMT_IF || s->u.ifs.else_s)
        return NULL;
    tex_stmt *then_s = texi_stmt_mutate(x->p->ctx, s->u.ifs.then_s, strip_if, NULL, x);
    tex_expr *cond = strip_cond(x->p, x->sc, s->u.ifs.cond);
    if (!then_s) {
        x->p->failed = true;
        return s;
    }
    if (!cond)
        return then_s;
    return cond == s->u.ifs.cond && then_s == s->u.ifs.then_s
               ? s
               : texi_if_new(x->p->ctx, cond, then_s, NULL);
}

static tex_stmt *process(part *p, tex_stmt *s);

static int push_env(part *p, tex_expr *var, tex_expr *min, tex_expr *extent)
{
    texi_range *env = grow(p, p->env, p->n_env, &p->cap_env, sizeof *env);
    if (!env)
        return TEX_ENOMEM;
    p->env = env;
    p->env[p->n_env++] = (texi_range){var, min, extent};
    return 0;
}

/* FOR var in [min, min + extent) of loop's kind around body, its body processed. */
static tex_stmt *part_loop(part *p, const tex_stmt *loop, tex_expr *min, tex_expr *extent,
                           tex_stmt *body)
{
    int n0 = p->n_env;
    if (!min || !extent || !body || push_env(p, loop->u.loop.var, min, extent) < 0)
        return NULL;
    tex_stmt *b = process(p, body);
    p->n_env = n0;
    return b ? texi_for_new(p->ctx, loop->u.loop.var, min, extent, loop->u.loop.for_kind,
                            loop->u.loop.thread_tag, b)
             : NULL;
}

typedef struct {
    tex_expr *var, *value;
} subst_ctx;

static tex_expr *subst_var(tex_expr *e, void *ud)
{
    const subst_ctx *x = ud;
    return e == x->var ? x->value : NULL;
}

/* The main part and the tail of loop s split at m. A tail of extent 1 is
 * its body at v = m. */
static tex_stmt *split_at(part *p, tex_stmt *s, const scan *sc, tex_expr *m)
{
    tex_expr *lo = s->u.loop.min, *hi = arith(p, TEXI_EXPR_ADD, lo, s->u.loop.extent);
    strip_ctx x = {p, sc};
    tex_stmt *main_body = texi_stmt_mutate(p->ctx, s->u.loop.body, strip_if, NULL, &x);
    tex_expr *main_ext = simp(p, arith(p, TEXI_EXPR_SUB, m, lo));
    tex_expr *tail_ext = simp(p, arith(p, TEXI_EXPR_SUB, hi, m));
    int64_t n;
    if (!main_body || !tail_ext || p->failed)
        return NULL;
    tex_stmt *items[2] = {part_loop(p, s, lo, main_ext, main_body), NULL};
    if (texi_expr_is_int_const(tail_ext, &n) && n == 1) {
        subst_ctx sb = {s->u.loop.var, note(p, texi_convert(m, s->u.loop.var->dtype))};
        tex_stmt *tail =
            sb.value ? texi_stmt_mutate(p->ctx, s->u.loop.body, NULL, subst_var, &sb) : NULL;
        items[1] = tail ? process(p, tail) : NULL;
    } else {
        items[1] = part_loop(p, s, m, tail_ext, s->u.loop.body);
    }
    return items[0] && items[1] ? texi_seq_new(p->ctx, 2, items) : NULL;
}

/*
 * Partitions loop s when its body has prefix guards; NULL when it has none.
 * When m provably equals hi the guards are just dropped; when it provably
 * equals lo nothing is done. A tail of extent 1 becomes its body with v
 * replaced by m, so that its own inner loops can be partitioned in turn
 * (the tail of a tile's tail, whose guard simplify then decides). Loops are
 * visited outermost first; the parts' bodies are visited again (not the
 * parts themselves). Thread-bound loops are never partitioned. Variables and
 * buffers of the body appear in both parts, in sibling scopes.
 */
static tex_stmt *try_partition(part *p, tex_stmt *s)
{
    if (s->u.loop.for_kind == TEXI_FOR_THREAD)
        return NULL;
    scan sc = {.p = p, .v = s->u.loop.var};
    texi_stmt_visit(s->u.loop.body, scan_stmt, &sc);
    if (!sc.bound || p->failed)
        return NULL;
    tex_expr *lo = s->u.loop.min, *hi = arith(p, TEXI_EXPR_ADD, lo, s->u.loop.extent);
    tex_expr *m = simp(p, arith(p, TEXI_EXPR_MAX, arith(p, TEXI_EXPR_MIN, sc.bound, hi), lo));
    if (!m || texi_prove(arith(p, TEXI_EXPR_LE, m, lo), p->n_env, p->env))
        return NULL;
    if (texi_prove(arith(p, TEXI_EXPR_GE, m, hi), p->n_env, p->env)) {
        strip_ctx x = {p, &sc};
        tex_stmt *body = texi_stmt_mutate(p->ctx, s->u.loop.body, strip_if, NULL, &x);
        return part_loop(p, s, lo, s->u.loop.extent, body);
    }
    return split_at(p, s, &sc, m);
}

/* ------------------------------------------------------------ the walk */

static tex_stmt *process_children(tex_stmt *s, void *ud);

static tex_stmt *process(part *p, tex_stmt *s)
{
    tex_stmt *r = texi_stmt_mutate(p->ctx, s, process_children, NULL, p);
    if (!r)
        p->failed = true;
    return r;
}

/* Loops: partitioned, or their bodies processed under their range; other
 * statements: the traversal goes on into their children. */
static tex_stmt *process_children(tex_stmt *s, void *ud)
{
    part *p = ud;
    if (p->failed)
        return s;
    if (s->kind != TEXI_STMT_FOR)
        return NULL;
    tex_stmt *r = try_partition(p, s);
    if (!r && !p->failed)
        r = part_loop(p, s, s->u.loop.min, s->u.loop.extent, s->u.loop.body);
    if (!r)
        p->failed = true;
    return r ? r : s;
}

int texi_pass_loop_partition(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    part p = {lw->ctx, NULL, 0, 0, false};
    tex_stmt *r = process(&p, in);
    return texi_pass_result(lw, p.failed ? NULL : r, out);
}
