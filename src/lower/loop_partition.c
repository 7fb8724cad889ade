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
#include "lower/scope_math.h"

/* The candidates of one loop. */
typedef struct {
    texi_scope *p;
    tex_expr *v;      /* the loop variable */
    texi_inner in;    /* loops and lets between the candidate loop and the IF */
    tex_expr **conds; /* conjuncts holding in the main part */
    int n_conds, cap_conds;
    tex_expr *bound; /* min of their bounds, or NULL */
} scan;

/* rhi: the worst (largest) value of r over the inner loops, or NULL. */
static tex_expr *worst_case(texi_scope *p, const scan *sc, tex_expr *r)
{
    for (int i = sc->in.n_loops - 1; i >= 0 && r; i--) {
        const texi_range *u = &sc->in.loops[i];
        int64_t g;
        tex_expr *rest;
        if (!texi_scope_linear(p, r, u->var, &g, &rest))
            return NULL;
        if (g == 0)
            continue;
        tex_expr *at = g > 0
                           ? texi_scope_arith(p, TEXI_EXPR_SUB,
                                              texi_scope_arith(p, TEXI_EXPR_ADD, u->min, u->extent),
                                              texi_scope_imm(p, u->min->dtype, 1))
                           : u->min;
        r = texi_scope_arith(
            p, TEXI_EXPR_ADD, rest,
            texi_scope_arith(p, TEXI_EXPR_MUL, texi_scope_imm(p, rest->dtype, g), at));
    }
    return r ? texi_scope_note(p, texi_simplify(r, 0, NULL)) : NULL;
}

/* Whether e mentions a variable bound inside or around the candidate loop. */
static bool mentions_bound(const texi_scope *p, const scan *sc, tex_expr *e)
{
    return texi_expr_uses_var(e, sc->v) || texi_inner_mentions(&sc->in, e) ||
           texi_scope_mentions(p, e);
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
static void consider(tex_expr *c, void *ud)
{
    scan *sc = ud;
    texi_scope *p = sc->p;
    int64_t f;
    tex_expr *r, *d = texi_scope_negative(p, c);
    if (!d || !texi_expr_uses_var(d, sc->v) || !texi_scope_linear(p, d, sc->v, &f, &r) || f <= 0)
        return;
    tex_expr *rhi = worst_case(p, sc, r);
    if (!rhi || mentions_bound(p, sc, rhi))
        return;
    tex_expr *fe = texi_scope_imm(p, rhi->dtype, f);
    tex_expr *b = texi_scope_arith(
        p, TEXI_EXPR_FLOORDIV,
        texi_scope_arith(p, TEXI_EXPR_SUB,
                         texi_scope_arith(p, TEXI_EXPR_SUB, fe, texi_scope_imm(p, rhi->dtype, 1)),
                         rhi),
        fe);
    b = texi_scope_note(p, texi_convert(b, sc->v->dtype));
    tex_expr **conds =
        b ? texi_scope_grow(p, sc->conds, sc->n_conds, &sc->cap_conds, sizeof *conds) : NULL;
    if (!conds)
        return;
    sc->conds = conds;
    sc->conds[sc->n_conds++] = c;
    sc->bound = sc->bound ? texi_scope_arith(p, TEXI_EXPR_MIN, sc->bound, b) : b;
}

/* Visitor over the candidate loop's body: the conditions of IFs without
 * else are considered; inner loops and lets are scopes. */
static bool scan_stmt(const tex_stmt *s, void *ud)
{
    scan *sc = ud;
    if (s->kind == TEXI_STMT_FOR || s->kind == TEXI_STMT_LET) {
        if (texi_inner_enter(sc->p, &sc->in, s)) {
            texi_stmt_visit(texi_stmt_body(s), scan_stmt, sc);
            texi_inner_leave(&sc->in, s);
        }
        return false;
    }
    if (s->kind == TEXI_STMT_IF && !s->u.ifs.else_s)
        texi_conjuncts(s->u.ifs.cond, consider, sc);
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
static tex_expr *strip_cond(texi_scope *p, const scan *sc, tex_expr *cond)
{
    if (cond->kind != TEXI_EXPR_AND)
        return is_dropped(sc, cond) ? NULL : cond;
    tex_expr *a = strip_cond(p, sc, cond->u.bin.a), *b = strip_cond(p, sc, cond->u.bin.b);
    if (a && b)
        return a == cond->u.bin.a && b == cond->u.bin.b
                   ? cond
                   : texi_scope_note(p, texi_binary(TEXI_EXPR_AND, a, b));
    return a ? a : b;
}

static tex_stmt *strip_if(tex_stmt *s, void *ud);

typedef struct {
    texi_scope *p;
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

static tex_stmt *process(texi_scope *p, tex_stmt *s);

/* FOR var in [min, min + extent) of loop's kind around body, its body processed. */
static tex_stmt *part_loop(texi_scope *p, const tex_stmt *loop, tex_expr *min, tex_expr *extent,
                           tex_stmt *body)
{
    int n0 = p->n_env;
    if (!min || !extent || !body || texi_scope_push(p, loop->u.loop.var, min, extent) < 0)
        return NULL;
    tex_stmt *b = process(p, body);
    p->n_env = n0;
    return b ? texi_for_new(p->ctx, loop->u.loop.var, min, extent, loop->u.loop.for_kind,
                            loop->u.loop.thread_tag, b)
             : NULL;
}

/* The main part and the tail of loop s split at m. A tail of extent 1 is
 * its body at v = m. */
static tex_stmt *split_at(texi_scope *p, tex_stmt *s, const scan *sc, tex_expr *m)
{
    tex_expr *v = s->u.loop.var, *lo = s->u.loop.min;
    tex_expr *hi = texi_scope_arith(p, TEXI_EXPR_ADD, lo, s->u.loop.extent);
    strip_ctx x = {p, sc};
    tex_stmt *main_body = texi_stmt_mutate(p->ctx, s->u.loop.body, strip_if, NULL, &x);
    tex_expr *main_ext = texi_scope_simp(p, texi_scope_arith(p, TEXI_EXPR_SUB, m, lo));
    tex_expr *tail_ext = texi_scope_simp(p, texi_scope_arith(p, TEXI_EXPR_SUB, hi, m));
    int64_t n;
    if (!main_body || !tail_ext || p->failed)
        return NULL;
    bool one = texi_expr_is_int_const(tail_ext, &n) && n == 1;
    tex_expr *at_m = one ? texi_scope_note(p, texi_convert(m, v->dtype)) : NULL;
    tex_stmt *tail = one ? (at_m ? texi_stmt_substitute(p->ctx, s->u.loop.body, v, at_m) : NULL)
                         : s->u.loop.body;
    if (!tail)
        return NULL;
    if (s->u.loop.for_kind == TEXI_FOR_PARALLEL) {
        /* one parallel loop: below m the main body, from m on the tail's */
        tex_expr *below = texi_scope_arith(p, TEXI_EXPR_LT, v, m);
        tex_stmt *pick = below ? texi_if_new(p->ctx, below, main_body, tail) : NULL;
        return pick ? part_loop(p, s, lo, s->u.loop.extent, pick) : NULL;
    }
    tex_stmt *items[2] = {part_loop(p, s, lo, main_ext, main_body),
                          one ? process(p, tail) : part_loop(p, s, m, tail_ext, tail)};
    return items[0] && items[1] ? texi_seq_new(p->ctx, 2, items) : NULL;
}

/*
 * Partitions loop s when its body has prefix guards; NULL when it has none.
 * When m provably equals hi the guards are just dropped; when it provably
 * equals lo nothing is done. A tail of extent 1 becomes its body with v
 * replaced by m, so that its own inner loops can be partitioned in turn
 * (the tail of a tile's tail, whose guard simplify then decides). A
 * parallel loop keeps its range and picks per iteration (IF v < m, ELSE
 * the tail's body): split, its tail ran after the parallel loop on one
 * thread (a 1-d kernel's last chunk, a GEMM's last row block). Loops are
 * visited outermost first; the parts' bodies are visited again (not the
 * parts themselves). Thread-bound loops are never partitioned. Variables and
 * buffers of the body appear in both parts, in sibling scopes.
 */
static tex_stmt *try_partition(texi_scope *p, tex_stmt *s)
{
    if (s->u.loop.for_kind == TEXI_FOR_THREAD)
        return NULL;
    scan sc = {.p = p, .v = s->u.loop.var};
    texi_stmt_visit(s->u.loop.body, scan_stmt, &sc);
    if (!sc.bound || p->failed)
        return NULL;
    tex_expr *lo = s->u.loop.min, *hi = texi_scope_arith(p, TEXI_EXPR_ADD, lo, s->u.loop.extent);
    tex_expr *m =
        texi_scope_simp(p, texi_scope_arith(p, TEXI_EXPR_MAX,
                                            texi_scope_arith(p, TEXI_EXPR_MIN, sc.bound, hi), lo));
    if (!m || texi_prove(texi_scope_arith(p, TEXI_EXPR_LE, m, lo), p->n_env, p->env))
        return NULL;
    if (texi_prove(texi_scope_arith(p, TEXI_EXPR_GE, m, hi), p->n_env, p->env)) {
        strip_ctx x = {p, &sc};
        tex_stmt *body = texi_stmt_mutate(p->ctx, s->u.loop.body, strip_if, NULL, &x);
        return part_loop(p, s, lo, s->u.loop.extent, body);
    }
    return split_at(p, s, &sc, m);
}

/* ------------------------------------------------------------ the walk */

static tex_stmt *process_children(tex_stmt *s, void *ud);

static tex_stmt *process(texi_scope *p, tex_stmt *s)
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
    texi_scope *p = ud;
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
    texi_scope p = {.ctx = lw->ctx, .pass = "loop_partition"};
    tex_stmt *r = process(&p, in);
    return texi_pass_result(lw, p.failed ? NULL : r, out);
}
