/*
 * Pass select_partition (CPU tail): a vector loop, or a loop around one,
 * whose body chooses between values by a condition linear in the loop's
 * variable is split where a conjunct of that condition is decided:
 *
 *   for j in [0, 32) { for l in [0, 32) vectorized {      (a concat)
 *       Y[..] = select(j*32 + l < 512, A[..], B[..]) } }
 *     ->  for j in [0, 16)  { .. Y[..] = A[..] .. }         the conjunct holds
 *         for j in [16, 32) { .. Y[..] = B[..] .. }         it fails
 *
 * In a vector loop a select whose condition varies by lane loads every lane
 * on its own from a clamped index (guarded_loads) and blends; decided, the
 * arm left is one contiguous load. A padding's `select(0 <= w - 1 && w - 1 <
 * W, X[..], 0)` splits its row loop into its first element, the interior and
 * its last element.
 *
 * Candidates (consider()): the conjuncts of select conditions in the loop's
 * body that are integer comparisons d < 0 (normalized as loop_partition
 * does) with d = f*v + r, f a nonzero constant, r bounded over the inner
 * loops by [rlo, rhi] that mention neither the enclosing loops nor variables
 * bound inside the loop (sizes only). For f > 0 the conjunct holds for every
 * inner iteration while v < T = floordiv(f - 1 - rhi, f) and fails for every
 * one from v >= F = floordiv(f - 1 - rlo, f) on; for f < 0, with g = -f, it
 * holds from T = floordiv(rhi, g) + 1 on and fails while v < F =
 * floordiv(rlo, g) + 1.
 *
 * Splitting (try_split()): at the first of these points not provably
 * outside the loop's range (clamped into it: a symbolic part may be empty)
 * nor one the loop was already cut at; in each part every candidate the
 * part's range decides is replaced by true or false (candidates are
 * compared by identity; one met twice with other points is not decided),
 * and each part is tried again, so that several points in any order make
 * several parts.
 * A part of one iteration is its body at that value. A vector loop is split
 * only at a constant distance from its start, and its parts start at 0 (the
 * variable shifted), as simd and guarded_loads expect. Loops whose bodies
 * allocate, hold attributes, intrinsics or barriers, or have more than
 * MAX_BODY statements are left alone, and a function gets at most
 * MAX_SPLITS splits. Parallel and thread-bound loops are not split. When
 * anything was split, pass simplify runs on the result, which folds the
 * decided selects.
 */
#include "lower/lower.h"

enum { MAX_BODY = 64, MAX_SPLITS = 64 };

/* One candidate conjunct (file comment). */
typedef struct {
    tex_expr *c;
    bool rising;      /* f > 0: holds below T, fails from F on; else holds from T, fails below F */
    tex_expr *t, *f;  /* T and F */
    bool conflicting; /* met again with other points: never decided */
} cand;

typedef struct {
    tex_ctx *ctx;
    texi_range *env; /* enclosing loops, outermost first */
    int n_env, cap_env;
    tex_expr **used; /* the points the loop being split was cut at */
    int n_used, cap_used;
    int n_splits;
    bool failed;
} selpart;

/* The candidates of one loop. */
typedef struct {
    selpart *sp;
    const tex_stmt *loop;
    tex_expr *v;
    texi_range *inner; /* loops between the candidate loop and the select, outermost first */
    int n_inner, cap_inner;
    tex_expr **blocked; /* let variables bound inside the loop */
    int n_blocked, cap_blocked;
    cand *cands;
    int n_cands, cap_cands;
    int n_stmts;
    bool unsplittable; /* an allocation, attribute, intrinsic or barrier */
} scan;

static void *grow(selpart *sp, void *arr, int n, int *cap, size_t size)
{
    void *a = texi_grow(sp->ctx, arr, n, cap, size, "select_partition");
    if (!a)
        sp->failed = true;
    return a;
}

static tex_expr *note(selpart *sp, tex_expr *e)
{
    if (!e)
        sp->failed = true;
    return e;
}

static tex_expr *arith(selpart *sp, enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    if (!a || !b)
        return note(sp, NULL);
    tex_dtype t = texi_dtype_promote(a->dtype, b->dtype);
    a = texi_convert(a, t);
    b = texi_convert(b, t);
    return note(sp, a && b ? texi_binary(kind, a, b) : NULL);
}

static tex_expr *imm(selpart *sp, tex_dtype t, int64_t v)
{
    return note(sp, texi_int_imm(sp->ctx, t, v));
}

static tex_expr *simp(selpart *sp, tex_expr *e)
{
    return e ? note(sp, texi_simplify(e, sp->n_env, sp->env)) : note(sp, NULL);
}

static bool prove(selpart *sp, enum texi_expr_kind cmp, tex_expr *a, tex_expr *b)
{
    tex_expr *c = arith(sp, cmp, a, b);
    return c && texi_prove(c, sp->n_env, sp->env);
}

/* A comparison as d < 0 (integers only), or NULL. */
static tex_expr *normalized(selpart *sp, tex_expr *c)
{
    if (!texi_expr_is_compare(c) || !texi_dtype_is_int(c->u.bin.a->dtype))
        return NULL;
    tex_expr *a = c->u.bin.a, *b = c->u.bin.b, *one = imm(sp, a->dtype, 1);
    switch (c->kind) {
    case TEXI_EXPR_LT:
        return arith(sp, TEXI_EXPR_SUB, a, b);
    case TEXI_EXPR_LE:
        return arith(sp, TEXI_EXPR_SUB, arith(sp, TEXI_EXPR_SUB, a, b), one);
    case TEXI_EXPR_GT:
        return arith(sp, TEXI_EXPR_SUB, b, a);
    case TEXI_EXPR_GE:
        return arith(sp, TEXI_EXPR_SUB, arith(sp, TEXI_EXPR_SUB, b, a), one);
    default:
        return NULL;
    }
}

/* Whether e mentions a variable bound inside or around the candidate loop. */
static bool mentions_bound(const scan *sc, tex_expr *e)
{
    const selpart *sp = sc->sp;
    bool found = texi_expr_uses_var(e, sc->v);
    for (int i = 0; i < sc->n_inner && !found; i++)
        found = texi_expr_uses_var(e, sc->inner[i].var);
    for (int i = 0; i < sc->n_blocked && !found; i++)
        found = texi_expr_uses_var(e, sc->blocked[i]);
    for (int i = 0; i < sp->n_env && !found; i++)
        found = texi_expr_uses_var(e, sp->env[i].var);
    return found;
}

static bool same(tex_expr *a, tex_expr *b)
{
    return texi_expr_equal(a, b);
}

/* Records conjunct c when it is a candidate (file comment). */
static void consider(scan *sc, tex_expr *c)
{
    selpart *sp = sc->sp;
    int64_t f;
    tex_expr *d = normalized(sp, c);
    if (!d || !texi_linear_in(d, sc->v, &f) || f == 0)
        return;
    tex_expr *r = note(
        sp, texi_simplify(texi_substitute(d, 1, &sc->v, &(tex_expr *){imm(sp, sc->v->dtype, 0)}), 0,
                          NULL));
    tex_expr *rlo = NULL, *rhi = NULL, *at_t = NULL, *at_f = NULL;
    if (r && texi_expr_bounds(sp->ctx, r, sc->n_inner, sc->inner, &rlo, &rhi) == 0 && rlo && rhi &&
        !mentions_bound(sc, rlo) && !mentions_bound(sc, rhi)) {
        tex_dtype t = rhi->dtype;
        tex_expr *g = imm(sp, t, f > 0 ? f : -f), *one = imm(sp, t, 1);
        if (f > 0) {
            tex_expr *g1 = arith(sp, TEXI_EXPR_SUB, g, one);
            at_t = arith(sp, TEXI_EXPR_FLOORDIV, arith(sp, TEXI_EXPR_SUB, g1, rhi), g);
            at_f = arith(sp, TEXI_EXPR_FLOORDIV, arith(sp, TEXI_EXPR_SUB, g1, rlo), g);
        } else {
            at_t = arith(sp, TEXI_EXPR_ADD, arith(sp, TEXI_EXPR_FLOORDIV, rhi, g), one);
            at_f = arith(sp, TEXI_EXPR_ADD, arith(sp, TEXI_EXPR_FLOORDIV, rlo, g), one);
        }
        at_t = simp(sp, note(sp, texi_convert(at_t, sc->v->dtype)));
        at_f = simp(sp, note(sp, texi_convert(at_f, sc->v->dtype)));
    }
    /* Where its points are not known (r unbounded here), c is met but not a
     * candidate: every occurrence of it conflicts. */
    bool known = at_t && at_f;
    for (int i = 0; i < sc->n_cands; i++)
        if (sc->cands[i].c == c) {
            cand *k = &sc->cands[i];
            k->conflicting = k->conflicting || !known || k->rising != (f > 0) ||
                             !same(k->t, at_t) || !same(k->f, at_f);
            return;
        }
    cand *cands = grow(sp, sc->cands, sc->n_cands, &sc->cap_cands, sizeof *cands);
    if (!cands)
        return;
    sc->cands = cands;
    sc->cands[sc->n_cands++] = (cand){c, f > 0, at_t, at_f, !known};
}

static void scan_conds(scan *sc, tex_expr *cond)
{
    if (cond->kind == TEXI_EXPR_AND) {
        scan_conds(sc, cond->u.bin.a);
        scan_conds(sc, cond->u.bin.b);
    } else {
        consider(sc, cond);
    }
}

static bool scan_expr(tex_expr *e, void *ud)
{
    if (e->kind == TEXI_EXPR_SELECT)
        scan_conds(ud, e->u.sel.cond);
    return true;
}

/* Visitor over the candidate loop's body: selects' conditions considered,
 * inner loops and lets as scopes, statements counted. */
static bool scan_stmt(const tex_stmt *s, void *ud)
{
    scan *sc = ud;
    selpart *sp = sc->sp;
    sc->n_stmts++;
    switch (s->kind) {
    case TEXI_STMT_ALLOCATE:
    case TEXI_STMT_ATTR:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_BARRIER:
        sc->unsplittable = true;
        return false;
    case TEXI_STMT_FOR: {
        texi_range *inner = grow(sp, sc->inner, sc->n_inner, &sc->cap_inner, sizeof *inner);
        if (!inner)
            return false;
        sc->inner = inner;
        sc->inner[sc->n_inner++] = (texi_range){s->u.loop.var, s->u.loop.min, s->u.loop.extent};
        texi_stmt_visit(s->u.loop.body, scan_stmt, sc);
        sc->n_inner--;
        return false;
    }
    case TEXI_STMT_LET: {
        texi_stmt_visit_exprs(s, scan_expr, sc);
        tex_expr **blocked =
            grow(sp, sc->blocked, sc->n_blocked, &sc->cap_blocked, sizeof *blocked);
        if (!blocked)
            return false;
        sc->blocked = blocked;
        sc->blocked[sc->n_blocked++] = s->u.let.var;
        texi_stmt_visit(s->u.let.body, scan_stmt, sc);
        sc->n_blocked--;
        return false;
    }
    default:
        texi_stmt_visit_exprs(s, scan_expr, sc);
        return true;
    }
}

/* ------------------------------------------------------------ rewriting */

/* The value a part [a, b) of the loop gives candidate k: 1 (holds for every
 * iteration), 0 (fails for every one) or -1 (undecided). */
static int decided(selpart *sp, const cand *k, tex_expr *a, tex_expr *b)
{
    if (k->conflicting)
        return -1;
    if (k->rising)
        return prove(sp, TEXI_EXPR_LE, b, k->t) ? 1 : prove(sp, TEXI_EXPR_GE, a, k->f) ? 0 : -1;
    return prove(sp, TEXI_EXPR_GE, a, k->t) ? 1 : prove(sp, TEXI_EXPR_LE, b, k->f) ? 0 : -1;
}

typedef struct {
    selpart *sp;
    const scan *sc;
    const int *values; /* decided() of each candidate */
} decide_ctx;

/* Expression visitor over a select's condition: a decided candidate
 * becomes its constant. */
static tex_expr *replace_decided(tex_expr *e, void *ud)
{
    const decide_ctx *x = ud;
    for (int i = 0; i < x->sc->n_cands; i++)
        if (x->sc->cands[i].c == e && x->values[i] >= 0)
            return note(x->sp, texi_int_imm(x->sp->ctx, TEX_BOOL, x->values[i]));
    return NULL;
}

/* Expression visitor: the conditions of selects rewritten by
 * replace_decided (the candidates were found there only). */
static tex_expr *in_selects(tex_expr *e, void *ud)
{
    const decide_ctx *x = ud;
    if (e->kind != TEXI_EXPR_SELECT)
        return NULL;
    tex_expr *c = texi_expr_mutate(e->u.sel.cond, replace_decided, ud);
    tex_expr *t = c ? texi_expr_mutate(e->u.sel.t, in_selects, ud) : NULL;
    tex_expr *f = t ? texi_expr_mutate(e->u.sel.f, in_selects, ud) : NULL;
    if (!f)
        return note(x->sp, NULL);
    return c == e->u.sel.cond && t == e->u.sel.t && f == e->u.sel.f
               ? e
               : note(x->sp, texi_select_new(c, t, f));
}

static tex_stmt *try_split(selpart *sp, tex_stmt *s);
static tex_stmt *process(selpart *sp, tex_stmt *s);

static int push_env(selpart *sp, tex_expr *var, tex_expr *min, tex_expr *extent)
{
    texi_range *env = grow(sp, sp->env, sp->n_env, &sp->cap_env, sizeof *env);
    if (!env)
        return TEX_ENOMEM;
    sp->env = env;
    sp->env[sp->n_env++] = (texi_range){var, min, extent};
    return 0;
}

/* A loop's body processed: its loops are others, with no points used yet. */
static tex_stmt *process_body(selpart *sp, tex_stmt *body)
{
    tex_expr **used = sp->used;
    int n_used = sp->n_used, cap_used = sp->cap_used;
    sp->used = NULL;
    sp->n_used = sp->cap_used = 0;
    tex_stmt *r = process(sp, body);
    sp->used = used;
    sp->n_used = n_used;
    sp->cap_used = cap_used;
    return r;
}

/* Loop s's body processed under its range, the loop rebuilt around it. */
static tex_stmt *visit_loop(selpart *sp, const tex_stmt *s, tex_expr *min, tex_expr *extent,
                            tex_stmt *body)
{
    int n0 = sp->n_env;
    if (!min || !extent || !body || push_env(sp, s->u.loop.var, min, extent) < 0)
        return NULL;
    tex_stmt *b = process_body(sp, body);
    sp->n_env = n0;
    return b ? texi_for_new(sp->ctx, s->u.loop.var, min, extent, s->u.loop.for_kind,
                            s->u.loop.thread_tag, b)
             : NULL;
}

/* The part [a, b) of loop s, its decided candidates replaced, tried again.
 * Every iteration of it is at least at_lo and below at_hi (the unclamped
 * points, which decide the candidates). One iteration: the body at a; a
 * vector loop's part starts at 0. */
static tex_stmt *part(selpart *sp, tex_stmt *s, const scan *sc, tex_expr *a, tex_expr *b,
                      tex_expr *at_lo, tex_expr *at_hi)
{
    int *values =
        texi_alloc(sp->ctx, sizeof *values * (size_t)(sc->n_cands + 1), "select_partition");
    tex_expr *extent = simp(sp, arith(sp, TEXI_EXPR_SUB, b, a));
    if (!values || !extent) {
        sp->failed = true;
        return NULL;
    }
    for (int i = 0; i < sc->n_cands; i++)
        values[i] = decided(sp, &sc->cands[i], at_lo, at_hi);
    decide_ctx x = {sp, sc, values};
    tex_stmt *body = texi_stmt_mutate(sp->ctx, s->u.loop.body, NULL, in_selects, &x);
    tex_expr *v = s->u.loop.var;
    int64_t n;
    if (body && texi_expr_is_int_const(extent, &n) && n == 1) {
        body = texi_stmt_substitute(sp->ctx, body, v, note(sp, texi_convert(a, v->dtype)));
        return body ? process_body(sp, body) : NULL;
    }
    if (body && s->u.loop.for_kind == TEXI_FOR_VECTORIZED) {
        body = texi_stmt_substitute(sp->ctx, body, v, arith(sp, TEXI_EXPR_ADD, v, a));
        a = imm(sp, v->dtype, 0);
    }
    tex_stmt *loop = body && a ? texi_for_new(sp->ctx, v, a, extent, s->u.loop.for_kind,
                                              s->u.loop.thread_tag, body)
                               : NULL;
    if (!loop) {
        sp->failed = true;
        return NULL;
    }
    tex_stmt *r = try_split(sp, loop);
    return r || sp->failed ? r : visit_loop(sp, loop, a, extent, body);
}

/* Whether loop s holds a vectorized loop or is one. */
static bool is_vector_loop(const tex_stmt *s)
{
    return s->kind == TEXI_STMT_FOR && s->u.loop.for_kind == TEXI_FOR_VECTORIZED;
}

/* Whether p is one of the points the loop being split was cut at. */
static bool used_point(const selpart *sp, tex_expr *p)
{
    for (int i = 0; i < sp->n_used; i++)
        if (same(sp->used[i], p))
            return true;
    return false;
}

/* The first candidate point of loop s over [lo, hi) at which it splits:
 * not provably outside (lo, hi), not a point it was already cut at, and a
 * constant distance from lo in a vector loop; NULL when none. */
static tex_expr *split_point(selpart *sp, const scan *sc, tex_expr *lo, tex_expr *hi)
{
    bool vector = sc->loop->u.loop.for_kind == TEXI_FOR_VECTORIZED;
    for (int i = 0; i < sc->n_cands; i++) {
        for (int side = 0; side < 2 && !sc->cands[i].conflicting; side++) {
            tex_expr *p = side ? sc->cands[i].f : sc->cands[i].t;
            tex_expr *from_lo = simp(sp, arith(sp, TEXI_EXPR_SUB, p, lo));
            int64_t n;
            if (!from_lo || (vector && !texi_expr_is_int_const(from_lo, &n)) || used_point(sp, p) ||
                prove(sp, TEXI_EXPR_LE, p, lo) || prove(sp, TEXI_EXPR_GE, p, hi))
                continue;
            return p;
        }
    }
    return NULL;
}

/*
 * Loop s split at its first candidate point p (file comment), or NULL when
 * it has none: [lo, p') and [p', hi) with p' = p clamped into [lo, hi], a
 * symbolic p possibly outside (either part may be empty). The iterations
 * of the first part are below p, those of the second at least p, which
 * decides the candidates.
 */
static tex_stmt *try_split(selpart *sp, tex_stmt *s)
{
    enum texi_for_kind kind = s->u.loop.for_kind;
    if (kind == TEXI_FOR_PARALLEL || kind == TEXI_FOR_THREAD || sp->n_splits >= MAX_SPLITS ||
        (kind != TEXI_FOR_VECTORIZED && !texi_stmt_any(s->u.loop.body, is_vector_loop)))
        return NULL;
    scan sc = {.sp = sp, .loop = s, .v = s->u.loop.var};
    texi_stmt_visit(s->u.loop.body, scan_stmt, &sc);
    if (sc.unsplittable || sc.n_stmts > MAX_BODY || sp->failed)
        return NULL;
    tex_expr *lo = s->u.loop.min, *hi = arith(sp, TEXI_EXPR_ADD, lo, s->u.loop.extent);
    tex_expr *p = split_point(sp, &sc, lo, hi);
    tex_expr **used = p ? grow(sp, sp->used, sp->n_used, &sp->cap_used, sizeof *used) : NULL;
    if (!used)
        return NULL;
    sp->used = used;
    sp->used[sp->n_used++] = p;
    sp->n_splits++;
    tex_expr *at = simp(sp, arith(sp, TEXI_EXPR_MAX, arith(sp, TEXI_EXPR_MIN, p, hi), lo));
    tex_stmt *first = at ? part(sp, s, &sc, lo, at, lo, p) : NULL;
    tex_stmt *second = first ? part(sp, s, &sc, at, hi, p, hi) : NULL;
    sp->n_used--;
    tex_stmt *r = second ? texi_seq_new(sp->ctx, 2, (tex_stmt *[]){first, second}) : NULL;
    if (!r)
        sp->failed = true;
    return r;
}

/* ------------------------------------------------------------ the walk */

static tex_stmt *process_children(tex_stmt *s, void *ud);

static tex_stmt *process(selpart *sp, tex_stmt *s)
{
    tex_stmt *r = texi_stmt_mutate(sp->ctx, s, process_children, NULL, sp);
    if (!r)
        sp->failed = true;
    return r;
}

/* Loops: split, or their bodies processed under their range; other
 * statements: the traversal goes on into their children. */
static tex_stmt *process_children(tex_stmt *s, void *ud)
{
    selpart *sp = ud;
    if (sp->failed)
        return s;
    if (s->kind != TEXI_STMT_FOR)
        return NULL;
    tex_stmt *r = try_split(sp, s);
    if (!r && !sp->failed)
        r = visit_loop(sp, s, s->u.loop.min, s->u.loop.extent, s->u.loop.body);
    if (!r)
        sp->failed = true;
    return r ? r : s;
}

int texi_pass_select_partition(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    selpart sp = {.ctx = lw->ctx};
    tex_stmt *r = process(&sp, in);
    if (sp.failed || !r || sp.n_splits == 0)
        return texi_pass_result(lw, sp.failed ? NULL : r, out);
    return texi_pass_simplify(lw, r, out);
}
