/*
 * Pass guarded_loads: no load of the C backend's output is evaluated
 * conditionally. A LOAD in a select arm, in the right operand of && / ||, or
 * in a store under a guard (an IF without else around the STORE) becomes a
 * LET-bound variable; the LET, placed around the statement the expression
 * belongs to (around the IF for a guarded store), loads unconditionally:
 *
 *     P[i] = select(c, X[j], 0)   ->   let X_ld = X[max(min(j, n - 1), 0)]
 *                                       P[i] = select(c, X_ld, 0)
 * (Halide's boundary-condition form). Why: GCC 12 at -O3 with AVX2 if-converts
 * a conditional load in a vectorized loop into a masked load and gets the
 * mask wrong for some loop shapes (zero padding of a convolution gives wrong
 * values), even when the index is clamped, and its SLP vectorizer does the
 * same to a guarded accumulate (a predicated reduction); an unconditional
 * load followed by a select or a guarded store is vectorized as a plain load
 * (or a gather) and a blend or masked store, which every compiler tried gets
 * right.
 *
 * Not in the pipeline: the CPU backend runs it on every function it emits
 * (backend.c). The interpreter and the oracle evaluate selects lazily and
 * device_split treats top-level LETs as host values, so the rewrite belongs
 * to the C target only. Clamping: above safe_load(), and above clamp_base()
 * for a load in a vectorized loop whose conditions are the same for every
 * lane (the lanes' base is clamped, so the load stays one vector); the
 * positions handled: above rewrite_stmt().
 *
 * Also: a gather (a load whose lanes are not one run) that occurs more
 * than once in an unconditional expression is loaded once, into a LET
 * (note_gathers): the printer writes each copy lane by lane.
 */
#include "lower/lower.h"

#include <stdio.h>

typedef struct {
    tex_ctx *ctx;
    texi_range *env; /* enclosing loops and integer LETs */
    int n_env, cap_env;
    texi_let_list lets;   /* loads hoisted out of the current statement, outermost first */
    bool cond;            /* the expression being rewritten is evaluated conditionally */
    bool lane_free;       /* ...under conditions that use no lane_vars (all lanes alike) */
    tex_expr *vec;        /* the innermost enclosing vectorized loop's variable, or NULL */
    int64_t lanes;        /* its constant extent (its min is 0) */
    tex_expr **lane_vars; /* vec and every loop or LET variable inside its loop */
    int n_lane_vars, cap_lane_vars;
    int n_branches;   /* IFs and ATTRs between vec's loop and the statement */
    tex_expr **twice; /* gathers that occur more than once in the current expression */
    int n_twice, cap_twice;
    bool failed;
} guard;

static bool push_range(guard *g, tex_expr *var, tex_expr *min, tex_expr *extent)
{
    texi_range *env = min && extent ? texi_grow(g->ctx, g->env, g->n_env, &g->cap_env, sizeof *env,
                                                "guarded_loads")
                                    : NULL;
    if (!env)
        return false;
    g->env = env;
    g->env[g->n_env++] = (texi_range){var, min, extent};
    return true;
}

static tex_expr *imm(guard *g, tex_dtype t, int64_t v)
{
    return texi_int_imm(g->ctx, t, v);
}

/* The element count of buf (flattened buffers are compact over their shape)
 * in index type t. */
static tex_expr *buffer_size(guard *g, const texi_buffer *buf, tex_dtype t)
{
    tex_expr *n = imm(g, t, 1);
    for (int d = 0; d < buf->ndim && n; d++) {
        tex_expr *ext = texi_convert(buf->shape[d], t);
        n = ext ? (d ? texi_binary(TEXI_EXPR_MUL, n, ext) : ext) : NULL;
    }
    return n ? texi_simplify(n, 0, NULL) : NULL;
}

static bool proven(guard *g, enum texi_expr_kind k, tex_expr *a, tex_expr *b)
{
    tex_expr *c = a && b ? texi_binary(k, a, b) : NULL;
    if (!c)
        g->failed = true;
    return c && texi_prove(c, g->n_env, g->env);
}

/*
 * buf[index] made safe to evaluate unconditionally.
 * The clamp keeps the now unconditional load inside the buffer: each side of
 * it is added only when the interval analysis cannot prove that side of
 * 0 <= j < n under the ranges of the enclosing loops and LETs, so in-range
 * loads stay affine. Size variables get no range of their own: texi_prove is
 * not sound with ranges as wide as a type's (products of such bounds
 * overflow), and a needless clamp costs less than a wrong proof. A buffer that
 * may be empty (n not provably >= 1) is read through select(n >= 1, load, 0),
 * whose condition is loop-invariant. Loads nested in a hoisted load's index
 * are hoisted first (outer LETs); equal loads of one statement share a LET.
 */
static tex_expr *safe_load(guard *g, texi_buffer *buf, tex_expr *index, tex_dtype t)
{
    tex_dtype it = index->dtype;
    tex_expr *n = buffer_size(g, buf, it), *zero = imm(g, it, 0), *one = imm(g, it, 1);
    bool lo = proven(g, TEXI_EXPR_GE, index, zero), hi = proven(g, TEXI_EXPR_LT, index, n);
    if (g->failed)
        return NULL;
    tex_expr *j = index;
    tex_expr *last = texi_binary(TEXI_EXPR_SUB, n, one);
    if (!hi)
        j = last ? texi_binary(TEXI_EXPR_MIN, j, texi_simplify(last, 0, NULL)) : NULL;
    if (!lo && j)
        j = texi_binary(TEXI_EXPR_MAX, j, zero);
    tex_expr *ld = j ? texi_load_new(buf, j) : NULL;
    if (!ld || (lo && hi) || proven(g, TEXI_EXPR_GE, n, one))
        return ld;
    tex_expr *z = texi_dtype_is_float(t) ? texi_float_imm(g->ctx, t, 0.0) : imm(g, t, 0);
    tex_expr *c = texi_binary(TEXI_EXPR_GE, n, one);
    return c && z ? texi_select_new(c, ld, z) : NULL;
}

/*
 * The clamped index of a load whose conditions hold for all lanes of the
 * enclosing vectorized loop v or for none (g->lane_free: a padding's
 * select tests the pixel, not the channel that v runs over) and whose
 * index is base + v, with no IF or ATTR between the loop and the load
 * (a guard there, such as a partial vector's, may depend on the lane
 * without the select showing it): max(min(base, n - lanes), 0) + v. Where the
 * conditions hold, every lane's index is in the buffer, so base lies in
 * [0, n - lanes] and the clamp changes nothing; elsewhere the lanes are
 * discarded, and the clamped lanes stay in the buffer. Unlike a clamp of
 * each lane, it keeps the index affine in v, so the C printer loads one
 * contiguous vector instead of one element per lane. NULL when the load
 * does not qualify (safe_load then clamps each lane).
 */
static tex_expr *clamp_base(guard *g, texi_buffer *buf, tex_expr *index)
{
    int64_t c = 0;
    if (!g->vec || !g->lane_free || g->n_branches || !texi_linear_in(index, g->vec, &c) || c != 1)
        return NULL;
    tex_dtype it = index->dtype;
    tex_expr *n = buffer_size(g, buf, it), *lanes = imm(g, it, g->lanes);
    if (!n || !proven(g, TEXI_EXPR_GE, n, lanes))
        return NULL;
    /* the index may be wider than v (i64 through a reshape): v converted */
    tex_expr *zero = imm(g, it, 0), *vzero = imm(g, g->vec->dtype, 0);
    tex_expr *base = texi_substitute(index, 1, &g->vec, &vzero);
    tex_expr *hi = base ? texi_simplify(texi_binary(TEXI_EXPR_SUB, n, lanes), 0, NULL) : NULL;
    tex_expr *j = hi ? texi_binary(TEXI_EXPR_MIN, texi_simplify(base, 0, NULL), hi) : NULL;
    j = j ? texi_binary(TEXI_EXPR_MAX, j, zero) : NULL;
    j = j ? texi_binary(TEXI_EXPR_ADD, j, texi_convert(g->vec, it)) : NULL;
    if (!j)
        g->failed = true;
    return j;
}

/* The variable of a LET around the statement that binds value, read from
 * buf (one bound before to an equal value is reused), named after buf with
 * suffix; orig, g->failed set, on failure. */
static tex_expr *let_of(guard *g, const texi_buffer *buf, tex_expr *value, tex_dtype t,
                        const char *suffix, tex_expr *orig)
{
    for (int i = 0; value && i < g->lets.n; i++)
        if (texi_expr_equal(g->lets.items[i].value, value))
            return g->lets.items[i].var;
    char name[128];
    snprintf(name, sizeof name, "%s%s", buf->name, suffix);
    tex_expr *var = texi_let_list_add(g->ctx, &g->lets, name, t, value, "guarded_loads");
    if (!var) {
        g->failed = true;
        return orig;
    }
    return var;
}

/* The variable standing for the hoisted load buf[index] (an equal load
 * hoisted before from this statement is reused). */
static tex_expr *hoist_load(guard *g, tex_expr *load, tex_expr *index)
{
    texi_buffer *buf = load->u.load.buf;
    tex_expr *lane_index = clamp_base(g, buf, index);
    tex_expr *value = lane_index  ? texi_load_new(buf, lane_index)
                      : g->failed ? NULL
                                  : safe_load(g, buf, index, load->dtype);
    return let_of(g, buf, value, load->dtype, "_ld", load);
}

/* The variable standing for gather e, read unconditionally (note_gathers):
 * loaded once into a LET around the statement, shared by its copies. */
static tex_expr *share_gather(guard *g, tex_expr *e)
{
    return let_of(g, e->u.load.buf, e, e->dtype, "_g", e);
}

static tex_expr *rewrite(tex_expr *e, void *ud);

/* Whether e is a gather: a vector load whose lanes are not one run, or a
 * load in a vectorized loop (g->vec) whose index does not step by 0 or 1
 * with the loop's variable (pass simd makes it a gather). */
static bool is_gather(guard *g, tex_expr *e)
{
    tex_expr *i = e->kind == TEXI_EXPR_LOAD && !e->u.load.mask ? e->u.load.index : NULL;
    if (!i || e->lanes > 1)
        return i && i->kind != TEXI_EXPR_RAMP && i->kind != TEXI_EXPR_BROADCAST;
    if (!g->vec || !texi_expr_uses_var(i, g->vec))
        return false;
    tex_expr *next = texi_simd_plus(g->vec, 1);
    tex_expr *at_next = next ? texi_substitute(i, 1, &g->vec, &next) : NULL;
    tex_expr *step = at_next ? texi_binary(TEXI_EXPR_SUB, at_next, i) : NULL;
    int64_t k;
    return !(step = step ? texi_simplify(step, g->n_env, g->env) : NULL) ||
           !texi_expr_is_int_const(step, &k) || (k != 0 && k != 1);
}

/* The loads note_gathers met once (seen); the gathers among those met twice
 * or more go to g->twice. */
typedef struct {
    guard *g;
    tex_expr *seen[64];
    int n_seen;
} gather_count;

static bool listed(tex_expr *const list[], int n, const tex_expr *e)
{
    for (int i = 0; i < n; i++)
        if (texi_expr_equal(list[i], e))
            return true;
    return false;
}

static bool count_gather(tex_expr *e, void *ud)
{
    gather_count *c = ud;
    guard *g = c->g;
    if (e->kind != TEXI_EXPR_LOAD || listed(g->twice, g->n_twice, e))
        return true;
    if (!listed(c->seen, c->n_seen, e)) {
        if (c->n_seen < (int)(sizeof c->seen / sizeof c->seen[0]))
            c->seen[c->n_seen++] = e;
        return true;
    }
    if (!is_gather(g, e))
        return true;
    tex_expr **t =
        texi_grow(g->ctx, g->twice, g->n_twice, &g->cap_twice, sizeof *t, "guarded_loads");
    if (!t)
        return !(g->failed = true);
    g->twice = t;
    g->twice[g->n_twice++] = e;
    return true;
}

/* The gathers that occur more than once in e into g->twice. The C printer
 * writes a gather lane by lane, and an inlined producer read k times puts k
 * copies of its loads in a reader, a chain of them k^depth (a gelu of a
 * gelu of a reshaped pooling: 25 gathers of 16 lanes, a 150 KB line GCC
 * compiled for minutes); each is loaded once, into a LET (rewrite). */
static void note_gathers(guard *g, tex_expr *e)
{
    gather_count c = {.g = g};
    g->n_twice = 0;
    texi_expr_visit(e, count_gather, &c);
}

/* Whether e uses a variable that may differ between the lanes of g->vec. */
static bool uses_lane(const guard *g, const tex_expr *e)
{
    for (int i = 0; i < g->n_lane_vars; i++)
        if (texi_expr_uses_var(e, g->lane_vars[i]))
            return true;
    return false;
}

/* Records var as one that may differ between lanes (inside g->vec's loop);
 * false on failure. */
static bool push_lane_var(guard *g, tex_expr *var)
{
    tex_expr **v = texi_grow(g->ctx, g->lane_vars, g->n_lane_vars, &g->cap_lane_vars, sizeof *v,
                             "guarded_loads");
    if (!v)
        return false;
    g->lane_vars = v;
    g->lane_vars[g->n_lane_vars++] = var;
    return true;
}

/* e rewritten with cond as the conditional flag; `test` the condition that
 * makes it conditional (NULL: none new), which may or may not use the
 * vector lane (lane_free). */
static tex_expr *sub(guard *g, tex_expr *e, bool cond, tex_expr *test)
{
    bool saved = g->cond, saved_free = g->lane_free;
    if (cond && !g->cond)
        g->lane_free = test && !uses_lane(g, test);
    else if (test && uses_lane(g, test))
        g->lane_free = false;
    g->cond = g->cond || cond;
    tex_expr *r = texi_expr_mutate(e, rewrite, g);
    g->cond = saved;
    g->lane_free = saved_free;
    if (!r)
        g->failed = true;
    return r ? r : e;
}

/* The texi_expr_mutate callback: selects, && / || and loads; NULL lets the
 * walk rebuild every other node from its rewritten children. */
static tex_expr *rewrite(tex_expr *e, void *ud)
{
    guard *g = ud;
    tex_expr *a, *b, *c;
    switch (e->kind) {
    case TEXI_EXPR_SELECT:
        c = sub(g, e->u.sel.cond, false, NULL);
        a = sub(g, e->u.sel.t, true, e->u.sel.cond);
        b = sub(g, e->u.sel.f, true, e->u.sel.cond);
        if (c == e->u.sel.cond && a == e->u.sel.t && b == e->u.sel.f)
            return e;
        return (c = texi_select_new(c, a, b)) ? c : (g->failed = true, e);
    case TEXI_EXPR_AND:
    case TEXI_EXPR_OR:
        a = sub(g, e->u.bin.a, false, NULL);
        b = sub(g, e->u.bin.b, true, e->u.bin.a);
        if (a == e->u.bin.a && b == e->u.bin.b)
            return e;
        return (c = texi_binary(e->kind, a, b)) ? c : (g->failed = true, e);
    case TEXI_EXPR_LOAD:
        a = sub(g, e->u.load.index, false, NULL);
        if (g->cond && !e->u.load.mask) // a predicated load reads only where it may
            return hoist_load(g, e, a);
        c = a == e->u.load.index ? e : texi_load_at(e, a);
        if (c && g->n_twice && listed(g->twice, g->n_twice, e))
            return share_gather(g, c);
        return c ? c : (g->failed = true, e);
    default:
        return NULL;
    }
}

/* e rewritten at the top of a statement (not conditional). */
static tex_expr *top(guard *g, tex_expr *e)
{
    if (e)
        note_gathers(g, e);
    return e ? sub(g, e, false, NULL) : NULL;
}

/* s inside the LETs hoisted from it since mark; the list is cut back. */
static tex_stmt *wrap(guard *g, tex_stmt *s, int mark)
{
    s = texi_let_list_wrap(g->ctx, &g->lets, s, mark);
    if (!s)
        g->failed = true;
    return s;
}

static tex_stmt *walk(guard *g, tex_stmt *s);

/* body under var in [min, min + extent); NULL on failure. */
static tex_stmt *scoped(guard *g, tex_expr *var, tex_expr *min, tex_expr *extent, tex_stmt *body)
{
    int n0 = g->n_env;
    if (!push_range(g, var, min, extent))
        return NULL;
    tex_stmt *r = walk(g, body);
    g->n_env = n0;
    return r;
}

/* A vectorized loop from 0 over a constant extent becomes g->vec for its
 * body (clamp_base); a loop inside it adds its variable to the lane
 * variables. */
static tex_stmt *walk_for(guard *g, tex_stmt *s)
{
    tex_expr *saved_vec = g->vec;
    int64_t saved_lanes = g->lanes, lanes = 0, min = -1;
    int saved_n = g->n_lane_vars, saved_branches = g->n_branches;
    if (s->u.loop.for_kind == TEXI_FOR_VECTORIZED && texi_expr_is_int_const(s->u.loop.min, &min) &&
        min == 0 && texi_expr_is_int_const(s->u.loop.extent, &lanes) && lanes > 0) {
        g->vec = s->u.loop.var;
        g->lanes = lanes;
        g->n_branches = 0;
    }
    if (g->vec && !push_lane_var(g, s->u.loop.var))
        return NULL;
    tex_stmt *body = scoped(g, s->u.loop.var, s->u.loop.min, s->u.loop.extent, s->u.loop.body);
    g->vec = saved_vec;
    g->lanes = saved_lanes;
    g->n_lane_vars = saved_n;
    g->n_branches = saved_branches;
    return body ? texi_stmt_with_body(g->ctx, s, body) : NULL;
}

/* An integer LET variable ranges over its value (as the C emitter assumes). */
static tex_stmt *walk_let(guard *g, tex_stmt *s)
{
    int mark = g->lets.n, saved_n = g->n_lane_vars;
    tex_expr *var = s->u.let.var, *value = top(g, s->u.let.value);
    if (g->vec && !push_lane_var(g, var))
        return NULL;
    tex_stmt *body = texi_dtype_is_float(var->dtype)
                         ? walk(g, s->u.let.body)
                         : scoped(g, var, value, imm(g, var->dtype, 1), s->u.let.body);
    g->n_lane_vars = saved_n;
    if (!body)
        return NULL;
    if (value != s->u.let.value || body != s->u.let.body)
        s = texi_let_new(g->ctx, var, value, body);
    return wrap(g, s, mark);
}

static tex_stmt *guarded_store(guard *g, tex_stmt *s, tex_expr *test);

static tex_stmt *walk_if(guard *g, tex_stmt *s)
{
    int mark = g->lets.n;
    tex_expr *cond = top(g, s->u.ifs.cond);
    g->n_branches++;
    /* A guard around one store hoists that store's loads before the IF;
     * other branches' statements wrap what they hoist themselves. */
    bool guard_store = !s->u.ifs.else_s && s->u.ifs.then_s->kind == TEXI_STMT_STORE;
    tex_stmt *t =
        guard_store ? guarded_store(g, s->u.ifs.then_s, s->u.ifs.cond) : walk(g, s->u.ifs.then_s);
    tex_stmt *f = s->u.ifs.else_s ? walk(g, s->u.ifs.else_s) : NULL;
    g->n_branches--;
    if (!t || (s->u.ifs.else_s && !f))
        return NULL;
    if (cond != s->u.ifs.cond || t != s->u.ifs.then_s || f != s->u.ifs.else_s)
        s = texi_if_new(g->ctx, cond, t, f);
    return wrap(g, s, mark);
}

static tex_stmt *walk_store(guard *g, tex_stmt *s)
{
    tex_expr *index = top(g, s->u.store.index), *value = top(g, s->u.store.value);
    if (index == s->u.store.index && value == s->u.store.value)
        return s;
    return texi_store_at(g->ctx, s, index, value);
}

/* The store under a guard (IF without else): every load of its index and
 * value is conditional, so it is hoisted like a select arm's (the LETs go
 * around the IF). GCC 12's SLP vectorizer miscompiles a guarded accumulate
 * `if (c) S[i] = S[i] + X[j]` (a predicated reduction), also without
 * -march; an unconditional load then a guarded store it gets right.
 * test is the guard's condition. */
static tex_stmt *guarded_store(guard *g, tex_stmt *s, tex_expr *test)
{
    tex_expr *index = sub(g, s->u.store.index, true, test);
    tex_expr *value = sub(g, s->u.store.value, true, test);
    if (index == s->u.store.index && value == s->u.store.value)
        return s;
    return texi_store_at(g->ctx, s, index, value);
}

static tex_stmt *walk_attr(guard *g, tex_stmt *s)
{
    int mark = g->lets.n;
    bool atomic = s->u.attr.id == TEXI_ATTR_ATOMIC && s->u.attr.body->kind == TEXI_STMT_STORE;
    g->n_branches++;
    tex_stmt *body = atomic ? walk_store(g, s->u.attr.body) : walk(g, s->u.attr.body);
    g->n_branches--;
    return body ? wrap(g, texi_stmt_with_body(g->ctx, s, body), mark) : NULL;
}

/*
 * Statement callback of walk(): s rewritten (s itself once g->failed, the
 * error recorded in ctx), or NULL for SEQ and ALLOCATE, which the traversal
 * rebuilds around their rewritten statements.
 * Positions handled: the values and indices of STORE, the condition of IF,
 * the value of LET and EVALUATE; an "atomic" ATTR keeps its STORE as its
 * body (the LETs go around the ATTR). Loop bounds, ATTR values and tensor
 * intrinsics' offsets are left alone (evaluated outside the hot loop).
 * A guard (IF without else) around one STORE: that store's loads are
 * conditional too and are hoisted before the IF (guarded_store). A guard
 * around anything else (a loop nest, several statements) is walked as it is:
 * the compiler does not if-convert across a loop. The JIT's compiler probe
 * (jit.c) is the second line of defence.
 */
static tex_stmt *rewrite_stmt(tex_stmt *s, void *ud)
{
    guard *g = ud;
    int mark = g->lets.n;
    tex_stmt *r = s;
    if (g->failed)
        return s;
    switch (s->kind) {
    case TEXI_STMT_FOR:
        r = walk_for(g, s);
        break;
    case TEXI_STMT_LET:
        r = walk_let(g, s);
        break;
    case TEXI_STMT_IF:
        r = walk_if(g, s);
        break;
    case TEXI_STMT_STORE:
        r = wrap(g, walk_store(g, s), mark);
        break;
    case TEXI_STMT_EVALUATE: {
        tex_expr *v = top(g, s->u.eval.value);
        r = wrap(g, v == s->u.eval.value ? s : texi_evaluate_new(g->ctx, v), mark);
        break;
    }
    case TEXI_STMT_ATTR:
        r = walk_attr(g, s);
        break;
    case TEXI_STMT_SEQ:
    case TEXI_STMT_ALLOCATE:
        return NULL;
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    if (!r)
        g->failed = true;
    return r ? r : s;
}

/* s rewritten; NULL on failure (g->failed, the error recorded in ctx). */
static tex_stmt *walk(guard *g, tex_stmt *s)
{
    tex_stmt *r = texi_stmt_mutate(g->ctx, s, rewrite_stmt, NULL, g);
    if (!r)
        g->failed = true;
    return g->failed ? NULL : r;
}

int texi_pass_guarded_loads(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    guard g = {.ctx = lw->ctx};
    return texi_pass_result(lw, walk(&g, in), out);
}
