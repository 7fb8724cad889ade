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
 * body that are integer comparisons d < 0 (texi_scope_negative) with
 * d = f*v + r (texi_scope_linear), f a nonzero constant, r bounded over the inner
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
#include "lower/scope_math.h"

enum { MAX_BODY = 64, MAX_SPLITS = 64 };

/* One candidate conjunct (file comment). */
typedef struct {
    tex_expr *c;
    bool rising;      /* f > 0: holds below T, fails from F on; else holds from T, fails below F */
    tex_expr *t, *f;  /* T and F */
    bool conflicting; /* met again with other points: never decided */
} cand;

typedef struct {
    texi_scope s;    /* the enclosing loops */
    tex_expr **used; /* the points the loop being split was cut at */
    int n_used, cap_used;
    int n_splits;
} selpart;

/* The candidates of one loop. */
typedef struct {
    selpart *sp;
    const tex_stmt *loop;
    tex_expr *v;
    texi_inner in; /* loops and lets between the candidate loop and the select */
    cand *cands;
    int n_cands, cap_cands;
    int n_stmts;
    bool unsplittable; /* an allocation, attribute, intrinsic or barrier */
} scan;

/* Whether e mentions a variable bound inside or around the candidate loop. */
static bool mentions_bound(const scan *sc, tex_expr *e)
{
    return texi_expr_uses_var(e, sc->v) || texi_inner_mentions(&sc->in, e) ||
           texi_scope_mentions(&sc->sp->s, e);
}

/* Records conjunct c when it is a candidate (file comment). */
static void consider(tex_expr *c, void *ud)
{
    scan *sc = ud;
    selpart *sp = sc->sp;
    int64_t f;
    tex_expr *d = texi_scope_negative(&sp->s, c);
    tex_expr *r;
    if (!d || !texi_scope_linear(&sp->s, d, sc->v, &f, &r) || f == 0)
        return;
    tex_expr *rlo = NULL, *rhi = NULL, *at_t = NULL, *at_f = NULL;
    if (texi_expr_bounds(sp->s.ctx, r, sc->in.n_loops, sc->in.loops, &rlo, &rhi) == 0 && rlo &&
        rhi && !mentions_bound(sc, rlo) && !mentions_bound(sc, rhi)) {
        tex_dtype t = rhi->dtype;
        tex_expr *g = texi_scope_imm(&sp->s, t, f > 0 ? f : -f),
                 *one = texi_scope_imm(&sp->s, t, 1);
        if (f > 0) {
            tex_expr *g1 = texi_scope_arith(&sp->s, TEXI_EXPR_SUB, g, one);
            at_t = texi_scope_arith(&sp->s, TEXI_EXPR_FLOORDIV,
                                    texi_scope_arith(&sp->s, TEXI_EXPR_SUB, g1, rhi), g);
            at_f = texi_scope_arith(&sp->s, TEXI_EXPR_FLOORDIV,
                                    texi_scope_arith(&sp->s, TEXI_EXPR_SUB, g1, rlo), g);
        } else {
            at_t = texi_scope_arith(&sp->s, TEXI_EXPR_ADD,
                                    texi_scope_arith(&sp->s, TEXI_EXPR_FLOORDIV, rhi, g), one);
            at_f = texi_scope_arith(&sp->s, TEXI_EXPR_ADD,
                                    texi_scope_arith(&sp->s, TEXI_EXPR_FLOORDIV, rlo, g), one);
        }
        at_t = texi_scope_simp(&sp->s, texi_scope_note(&sp->s, texi_convert(at_t, sc->v->dtype)));
        at_f = texi_scope_simp(&sp->s, texi_scope_note(&sp->s, texi_convert(at_f, sc->v->dtype)));
    }
    /* Where its points are not known (r unbounded here), c is met but not a
     * candidate: every occurrence of it conflicts. */
    bool known = at_t && at_f;
    for (int i = 0; i < sc->n_cands; i++)
        if (sc->cands[i].c == c) {
            cand *k = &sc->cands[i];
            k->conflicting = k->conflicting || !known || k->rising != (f > 0) ||
                             !texi_expr_equal(k->t, at_t) || !texi_expr_equal(k->f, at_f);
            return;
        }
    cand *cands = texi_scope_grow(&sp->s, sc->cands, sc->n_cands, &sc->cap_cands, sizeof *cands);
    if (!cands)
        return;
    sc->cands = cands;
    sc->cands[sc->n_cands++] = (cand){c, f > 0, at_t, at_f, !known};
}

static bool scan_expr(tex_expr *e, void *ud)
{
    if (e->kind == TEXI_EXPR_SELECT)
        texi_conjuncts(e->u.sel.cond, consider, ud);
    return true;
}

/* Visitor over the candidate loop's body: selects' conditions considered,
 * inner loops and lets as scopes, statements counted. */
static bool scan_stmt(const tex_stmt *s, void *ud)
{
    scan *sc = ud;
    sc->n_stmts++;
    switch (s->kind) {
    case TEXI_STMT_ALLOCATE:
    case TEXI_STMT_ATTR:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_BARRIER:
        sc->unsplittable = true;
        return false;
    default:
        break;
    }
    texi_stmt_visit_exprs(s, scan_expr, sc);
    if (s->kind != TEXI_STMT_FOR && s->kind != TEXI_STMT_LET)
        return true;
    if (texi_inner_enter(&sc->sp->s, &sc->in, s)) {
        texi_stmt_visit(texi_stmt_body(s), scan_stmt, sc);
        texi_inner_leave(&sc->in, s);
    }
    return false;
}

/* ------------------------------------------------------------ rewriting */

/* The value a part [a, b) of the loop gives candidate k: 1 (holds for every
 * iteration), 0 (fails for every one) or -1 (undecided). */
static int decided(selpart *sp, const cand *k, tex_expr *a, tex_expr *b)
{
    if (k->conflicting)
        return -1;
    if (k->rising)
        return texi_scope_prove(&sp->s, TEXI_EXPR_LE, b, k->t)   ? 1
               : texi_scope_prove(&sp->s, TEXI_EXPR_GE, a, k->f) ? 0
                                                                 : -1;
    return texi_scope_prove(&sp->s, TEXI_EXPR_GE, a, k->t)   ? 1
           : texi_scope_prove(&sp->s, TEXI_EXPR_LE, b, k->f) ? 0
                                                             : -1;
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
            return texi_scope_note(&x->sp->s, texi_int_imm(x->sp->s.ctx, TEX_BOOL, x->values[i]));
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
        return texi_scope_note(&x->sp->s, NULL);
    return c == e->u.sel.cond && t == e->u.sel.t && f == e->u.sel.f
               ? e
               : texi_scope_note(&x->sp->s, texi_select_new(c, t, f));
}

static tex_stmt *try_split(selpart *sp, tex_stmt *s);
static tex_stmt *process(selpart *sp, tex_stmt *s);

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
    int n0 = sp->s.n_env;
    if (!min || !extent || !body || texi_scope_push(&sp->s, s->u.loop.var, min, extent) < 0)
        return NULL;
    tex_stmt *b = process_body(sp, body);
    sp->s.n_env = n0;
    return b ? texi_for_new(sp->s.ctx, s->u.loop.var, min, extent, s->u.loop.for_kind,
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
        texi_alloc(sp->s.ctx, sizeof *values * (size_t)(sc->n_cands + 1), "select_partition");
    tex_expr *extent = texi_scope_simp(&sp->s, texi_scope_arith(&sp->s, TEXI_EXPR_SUB, b, a));
    if (!values || !extent) {
        sp->s.failed = true;
        return NULL;
    }
    for (int i = 0; i < sc->n_cands; i++)
        values[i] = decided(sp, &sc->cands[i], at_lo, at_hi);
    decide_ctx x = {sp, sc, values};
    tex_stmt *body = texi_stmt_mutate(sp->s.ctx, s->u.loop.body, NULL, in_selects, &x);
    tex_expr *v = s->u.loop.var;
    int64_t n;
    if (body && texi_expr_is_int_const(extent, &n) && n == 1) {
        body = texi_stmt_substitute(sp->s.ctx, body, v,
                                    texi_scope_note(&sp->s, texi_convert(a, v->dtype)));
        return body ? process_body(sp, body) : NULL;
    }
    if (body && s->u.loop.for_kind == TEXI_FOR_VECTORIZED) {
        body =
            texi_stmt_substitute(sp->s.ctx, body, v, texi_scope_arith(&sp->s, TEXI_EXPR_ADD, v, a));
        a = texi_scope_imm(&sp->s, v->dtype, 0);
    }
    tex_stmt *loop = body && a ? texi_for_new(sp->s.ctx, v, a, extent, s->u.loop.for_kind,
                                              s->u.loop.thread_tag, body)
                               : NULL;
    if (!loop) {
        sp->s.failed = true;
        return NULL;
    }
    tex_stmt *r = try_split(sp, loop);
    return r || sp->s.failed ? r : visit_loop(sp, loop, a, extent, body);
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
        if (texi_expr_equal(sp->used[i], p))
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
            tex_expr *from_lo =
                texi_scope_simp(&sp->s, texi_scope_arith(&sp->s, TEXI_EXPR_SUB, p, lo));
            int64_t n;
            if (!from_lo || (vector && !texi_expr_is_int_const(from_lo, &n)) || used_point(sp, p) ||
                texi_scope_prove(&sp->s, TEXI_EXPR_LE, p, lo) ||
                texi_scope_prove(&sp->s, TEXI_EXPR_GE, p, hi))
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
    if (sc.unsplittable || sc.n_stmts > MAX_BODY || sp->s.failed)
        return NULL;
    tex_expr *lo = s->u.loop.min,
             *hi = texi_scope_arith(&sp->s, TEXI_EXPR_ADD, lo, s->u.loop.extent);
    tex_expr *p = split_point(sp, &sc, lo, hi);
    tex_expr **used =
        p ? texi_scope_grow(&sp->s, sp->used, sp->n_used, &sp->cap_used, sizeof *used) : NULL;
    if (!used)
        return NULL;
    sp->used = used;
    sp->used[sp->n_used++] = p;
    sp->n_splits++;
    tex_expr *at = texi_scope_simp(
        &sp->s, texi_scope_arith(&sp->s, TEXI_EXPR_MAX,
                                 texi_scope_arith(&sp->s, TEXI_EXPR_MIN, p, hi), lo));
    tex_stmt *first = at ? part(sp, s, &sc, lo, at, lo, p) : NULL;
    tex_stmt *second = first ? part(sp, s, &sc, at, hi, p, hi) : NULL;
    sp->n_used--;
    tex_stmt *r = second ? texi_seq_new(sp->s.ctx, 2, (tex_stmt *[]){first, second}) : NULL;
    if (!r)
        sp->s.failed = true;
    return r;
}

/* ------------------------------------------------------------ the walk */

static tex_stmt *process_children(tex_stmt *s, void *ud);

static tex_stmt *process(selpart *sp, tex_stmt *s)
{
    tex_stmt *r = texi_stmt_mutate(sp->s.ctx, s, process_children, NULL, sp);
    if (!r)
        sp->s.failed = true;
    return r;
}

/* Loops: split, or their bodies processed under their range; other
 * statements: the traversal goes on into their children. */
static tex_stmt *process_children(tex_stmt *s, void *ud)
{
    selpart *sp = ud;
    if (sp->s.failed)
        return s;
    if (s->kind != TEXI_STMT_FOR)
        return NULL;
    tex_stmt *r = try_split(sp, s);
    if (!r && !sp->s.failed)
        r = visit_loop(sp, s, s->u.loop.min, s->u.loop.extent, s->u.loop.body);
    if (!r)
        sp->s.failed = true;
    return r ? r : s;
}

int texi_pass_select_partition(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    selpart sp = {.s = {.ctx = lw->ctx, .pass = "select_partition"}};
    tex_stmt *r = process(&sp, in);
    if (sp.s.failed || !r || sp.n_splits == 0)
        return texi_pass_result(lw, sp.s.failed ? NULL : r, out);
    return texi_pass_simplify(lw, r, out);
}
