/*
 * Pass simd_tail (CPU tail, before guarded_loads): a vectorized loop whose
 * body is guards over straight-line code, `if (c) S` (nested guards without
 * an else branch are one conjunction; LETs may sit above them), is cut into
 * the chunks the simd pass will use (simd.c), each of which either runs
 * unguarded as vectors or runs its lanes one by one under the guard, so no
 * lane the guard excludes ever loads or stores.
 *
 * The conjuncts of c that do not read the loop variable v are hoisted: the
 * result sits in `if (invariant) ...`, and with no other conjunct it is the
 * unguarded vectorized loop. Every other conjunct must compare two integer
 * expressions whose difference is monotone in v (direction() below; i32 and
 * i64 arithmetic does not overflow, src/ir/arith.h). Such a conjunct holds
 * on every lane of a chunk when it holds on one end lane: the last one for
 * `<` and `<=` of a difference that grows with v, the first one for `>` and
 * `>=` (the other way round when it falls). Each chunk of L lanes from base
 * (the full ones in a serial loop over them when there are two or more, so
 * that the body is written twice, not twice per chunk) then reads
 *
 *   if (c at those end lanes) for (v, base, L) vectorized { S }
 *   else if (c at the other end lanes) for (v, base, L) { if (c) S }
 *
 * (the second check: no lane passes when some conjunct fails where it holds
 * if anywhere; a chunk of one lane is the serial loop alone; a check the
 * simplifier decides leaves one of the two loops, or none). simd turns the vectorized loop into
 * vector statements, and guarded_loads treats the serial loop's guarded
 * loads as in any serial loop. A conjunct that loads is refused: the check
 * and the hoisted test would load where c's && might not.
 *
 * Where the CPU has mask registers and every chunk's guard is its prefix
 * mask, each chunk is instead one predicated chunk under the test that
 * some lane passes (all_predicated, predicated_chunk).
 *
 * Loops whose iterations may depend on each other are left to simd. Any
 * other body (an else branch, a conjunct of another form or reading a LET
 * of the body, other control flow) keeps its loop, and simd gives the
 * reason (texi_simd_guard_reason, src/ir/vector_reasons.def) under ATTR
 * vectorize_failed: the C printer's `#pragma omp simd` loop.
 */
#include "lower/lower.h"
#include "util/host.h"

#define NO_PROBLEM TEXI_VECTOR_REASON_COUNT

enum { MAX_CONJUNCTS = 16, MAX_LETS = 32 };

/* How an integer expression moves as the loop variable grows. */
enum { FALLING = -1, FLAT = 0, RISING = 1, MIXED = 2 };

/* The parts of a guarded body. */
typedef struct {
    tex_stmt *body;               /* the loop's body: LETs, guards, straight-line code */
    int n_lets, n_inv, n_var;     /* of each kind: */
    tex_expr *lets[MAX_LETS];     /* variables of the LETs above the guards */
    tex_expr *inv[MAX_CONJUNCTS]; /* conjuncts not reading the loop variable: hoisted */
    tex_expr *var[MAX_CONJUNCTS]; /* monotone comparisons in the loop variable */
    bool at_last[MAX_CONJUNCTS];  /* var[i] holds on every lane iff on the last (else first) */
} guard;

static int combine(int a, int b)
{
    return a == FLAT ? b : b == FLAT || a == b ? a : MIXED;
}

static int flip(int d)
{
    return d == MIXED ? MIXED : -d;
}

/* The direction of integer e in v: sums, products by constants, floordiv
 * by a positive constant, min, max and widening casts of i32 / i64 values
 * that read v; MIXED for anything else that reads v. */
static int direction(const tex_expr *e, const tex_expr *v)
{
    int64_t k;
    if (!texi_expr_uses_var(e, v))
        return FLAT;
    if (e->dtype != TEX_I32 && e->dtype != TEX_I64)
        return MIXED;
    switch (e->kind) {
    case TEXI_EXPR_VAR:
        return RISING;
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_MIN:
    case TEXI_EXPR_MAX:
        return combine(direction(e->u.bin.a, v), direction(e->u.bin.b, v));
    case TEXI_EXPR_SUB:
        return combine(direction(e->u.bin.a, v), flip(direction(e->u.bin.b, v)));
    case TEXI_EXPR_MUL: {
        bool const_b = texi_expr_is_int_const(e->u.bin.b, &k);
        if (!const_b && !texi_expr_is_int_const(e->u.bin.a, &k))
            return MIXED;
        int d = direction(const_b ? e->u.bin.a : e->u.bin.b, v);
        return k > 0 ? d : k < 0 ? flip(d) : FLAT;
    }
    case TEXI_EXPR_FLOORDIV:
        return texi_expr_is_int_const(e->u.bin.b, &k) && k > 0 ? direction(e->u.bin.a, v) : MIXED;
    case TEXI_EXPR_CAST:
        return texi_dtype_bits(e->dtype) >= texi_dtype_bits(e->u.un.a->dtype)
                   ? direction(e->u.un.a, v)
                   : MIXED;
    default:
        return MIXED;
    }
}

static bool probe_load(tex_expr *e, void *ud)
{
    bool *found = ud;
    *found |= e->kind == TEXI_EXPR_LOAD;
    return !*found;
}

/* Files conjunct c (and the conjuncts of an &&) under g; false when one
 * loads (the chunk's check and the hoisted test would load where the
 * guard's && may not), reads a LET of the body, or reads v and is not a
 * monotone comparison, or there are too many. */
static bool add_conjunct(guard *g, tex_expr *c, const tex_expr *v)
{
    if (c->kind == TEXI_EXPR_AND)
        return add_conjunct(g, c->u.bin.a, v) && add_conjunct(g, c->u.bin.b, v);
    bool loads = false;
    texi_expr_visit(c, probe_load, &loads);
    for (int i = 0; i < g->n_lets; i++)
        loads |= texi_expr_uses_var(c, g->lets[i]);
    if (loads)
        return false;
    if (!texi_expr_uses_var(c, v)) {
        if (g->n_inv == MAX_CONJUNCTS)
            return false;
        g->inv[g->n_inv++] = c;
        return true;
    }
    bool below = c->kind == TEXI_EXPR_LT || c->kind == TEXI_EXPR_LE; // a - b bounded above
    if (!below && c->kind != TEXI_EXPR_GT && c->kind != TEXI_EXPR_GE)
        return false;
    int d = combine(direction(c->u.bin.a, v), flip(direction(c->u.bin.b, v)));
    if (d == MIXED || g->n_var == MAX_CONJUNCTS)
        return false;
    g->at_last[g->n_var] = below == (d == RISING);
    g->var[g->n_var++] = c;
    return true;
}

/* Peels the LETs and guards of loop body g->body into g; the reason when
 * it is not of the form above, else NO_PROBLEM. */
static enum texi_vector_reason peel(guard *g, const tex_expr *v)
{
    const tex_stmt *s = g->body;
    for (; s->kind == TEXI_STMT_LET; s = s->u.let.body) {
        if (g->n_lets == MAX_LETS)
            return TEXI_VECTOR_CONTROL;
        g->lets[g->n_lets++] = s->u.let.var;
    }
    if (s->kind != TEXI_STMT_IF)
        return TEXI_VECTOR_CONTROL;
    for (; s->kind == TEXI_STMT_IF; s = s->u.ifs.then_s) {
        if (s->u.ifs.else_s)
            return TEXI_VECTOR_GUARD_ELSE;
        if (!add_conjunct(g, s->u.ifs.cond, v))
            return TEXI_VECTOR_GUARD_FORM;
    }
    return texi_simd_straight_line(s) ? NO_PROBLEM : TEXI_VECTOR_CONTROL;
}

enum texi_vector_reason texi_simd_guard_reason(const tex_stmt *s)
{
    guard g = {.body = s->u.loop.body};
    enum texi_vector_reason why = peel(&g, s->u.loop.var);
    return why == NO_PROBLEM ? TEXI_VECTOR_CONTROL : why; // only without this pass
}

/* Body s (peeled) without its guards: the LETs over the straight-line code. */
static tex_stmt *unguarded(tex_ctx *ctx, tex_stmt *s)
{
    if (s->kind == TEXI_STMT_IF)
        return unguarded(ctx, s->u.ifs.then_s);
    if (s->kind != TEXI_STMT_LET)
        return s;
    tex_stmt *body = unguarded(ctx, s->u.let.body);
    return body ? texi_let_new(ctx, s->u.let.var, s->u.let.value, body) : NULL;
}

/* *acc && c, where a NULL *acc stands for true; false on ENOMEM. */
static bool conjoin(tex_expr **acc, tex_expr *c)
{
    if (!c)
        return false;
    *acc = *acc ? texi_binary(TEXI_EXPR_AND, *acc, c) : c;
    return *acc != NULL;
}

/* Whether the varying conjuncts hold on every lane of [base, base + lanes)
 * (`every`: each at its end lane), or may hold on some lane (each at its
 * other end lane, where it holds if anywhere), simplified; NULL on ENOMEM. */
static tex_expr *lanes_check(const guard *g, tex_expr *v, tex_expr *base, int lanes, bool every)
{
    tex_expr *last = texi_simd_plus(base, lanes - 1), *check = NULL;
    for (int i = 0; last && i < g->n_var; i++) {
        tex_expr *at = texi_convert(g->at_last[i] == every ? last : base, v->dtype);
        if (!at || !conjoin(&check, texi_substitute(g->var[i], 1, &v, &at)))
            return NULL;
    }
    return check ? texi_simplify(check, 0, NULL) : NULL;
}

/* Loop s's variable over [base, base + lanes): a loop of that kind. */
static tex_stmt *lanes_loop(tex_ctx *ctx, const tex_stmt *s, tex_expr *base, int lanes,
                            enum texi_for_kind kind, tex_stmt *body)
{
    tex_expr *extent = texi_int_imm(ctx, base->dtype, lanes);
    return extent && body ? texi_for_new(ctx, s->u.loop.var, base, extent, kind, -1, body) : NULL;
}

/* Integer e at v = at, simplified; NULL on ENOMEM. */
static tex_expr *at_lane(tex_expr *e, tex_expr *v, tex_expr *at)
{
    tex_expr *x = at ? texi_convert(at, v->dtype) : NULL;
    x = x ? texi_substitute(e, 1, &v, &x) : NULL;
    return x ? texi_simplify(x, 0, NULL) : NULL;
}

/* For varying conjunct c (a comparison) whose passing lanes are the first
 * ones: how many of the lanes from base pass, when c's difference d (a - b
 * for < and <=, b - a for > and >=) is v plus something that does not
 * depend on v (d(v + 1) - d(v) simplifies to 1), so lane base + k passes
 * iff d(base) + k < 0 (<= 0); else NULL. */
static tex_expr *conjunct_count(tex_expr *c, tex_expr *v, tex_expr *base)
{
    bool below = c->kind == TEXI_EXPR_LT || c->kind == TEXI_EXPR_LE;
    bool strict = c->kind == TEXI_EXPR_LT || c->kind == TEXI_EXPR_GT;
    tex_expr *a = below ? c->u.bin.a : c->u.bin.b, *b = below ? c->u.bin.b : c->u.bin.a;
    tex_dtype t = a->dtype == TEX_I64 || b->dtype == TEX_I64 ? TEX_I64 : a->dtype;
    tex_expr *wa = texi_convert(a, t), *wb = texi_convert(b, t);
    tex_expr *d = wa && wb ? texi_binary(TEXI_EXPR_SUB, wa, wb) : NULL;
    tex_expr *next = d ? at_lane(d, v, texi_simd_plus(v, 1)) : NULL;
    tex_expr *slope = next ? texi_binary(TEXI_EXPR_SUB, next, d) : NULL;
    int64_t k;
    if (!slope || !texi_expr_is_int_const(texi_simplify(slope, 0, NULL), &k) || k != 1)
        return NULL;
    tex_expr *d0 = at_lane(d, v, base), *zero = texi_int_imm(base->ctx, t, strict ? 0 : 1);
    tex_expr *count = d0 && zero ? texi_binary(TEXI_EXPR_SUB, zero, d0) : NULL;
    return count ? texi_simplify(count, 0, NULL) : NULL;
}

/* How many of the lanes from base pass every varying conjunct of g, when
 * each one's passing lanes are the first ones and conjunct_count knows
 * them (the guard is then the mask of a predicated chunk); else NULL. */
static tex_expr *prefix_count(const guard *g, tex_expr *v, tex_expr *base)
{
    tex_expr *count = NULL;
    for (int i = 0; i < g->n_var; i++) {
        tex_expr *c = g->at_last[i] ? conjunct_count(g->var[i], v, base) : NULL;
        if (c && count && c->dtype != count->dtype) {
            c = texi_convert(c, TEX_I64);
            count = texi_convert(count, TEX_I64);
        }
        count = !c ? NULL : count ? texi_binary(TEXI_EXPR_MIN, count, c) : c;
        if (!count)
            return NULL;
    }
    return count ? texi_simplify(count, 0, NULL) : NULL;
}

/* What a chunk needs: the guard, the unguarded body, and whether that body
 * may run as a predicated chunk (when some lane is on). */
typedef struct {
    const guard *g;
    tex_stmt *plain;
    bool maskable;
} chunker;

/* The chunk's lanes that may pass the guard when some lane may: one
 * predicated vector chunk when the guard is its mask, else the lanes one
 * by one under the guard. */
static tex_stmt *partial_chunk(tex_ctx *ctx, const chunker *ch, const tex_stmt *s, tex_expr *base,
                               int lanes)
{
    tex_expr *count = ch->maskable ? prefix_count(ch->g, s->u.loop.var, base) : NULL;
    if (count)
        return texi_simd_masked_chunk(ctx, s->u.loop.var, ch->plain, base, lanes, count);
    return lanes_loop(ctx, s, base, lanes, TEXI_FOR_SERIAL, ch->g->body);
}

/* The chunk's partial form (partial_chunk) under the test that some lane
 * passes the guard; nothing when no lane can, the form alone when every
 * lane may. NULL on ENOMEM. */
static tex_stmt *some_lanes(tex_ctx *ctx, const chunker *ch, const tex_stmt *s, tex_expr *base,
                            int lanes)
{
    tex_stmt *partial = partial_chunk(ctx, ch, s, base, lanes);
    tex_expr *some = lanes_check(ch->g, s->u.loop.var, base, lanes, false);
    int64_t known;
    if (!partial || !some)
        return NULL;
    if (texi_expr_is_int_const(some, &known))
        return known ? partial : texi_seq_new(ctx, 0, NULL);
    return texi_if_new(ctx, some, partial, NULL);
}

/* Chunk builder (texi_simd_chunk_fn): an unguarded vector loop when every
 * lane passes the guard, else when some lane may pass the partial chunk
 * (a chunk wholly outside the guard does nothing). */
static tex_stmt *guarded_chunk(tex_ctx *ctx, const tex_stmt *s, tex_expr *base, int lanes, void *ud)
{
    const chunker *ch = ud;
    base = texi_simplify(base, 0, NULL);
    if (base && lanes == 1)
        return lanes_loop(ctx, s, base, lanes, TEXI_FOR_SERIAL, ch->g->body);
    tex_stmt *partial = base ? some_lanes(ctx, ch, s, base, lanes) : NULL;
    tex_expr *check = partial ? lanes_check(ch->g, s->u.loop.var, base, lanes, true) : NULL;
    int64_t known;
    if (!check)
        return NULL;
    if (texi_expr_is_int_const(check, &known))
        return known ? lanes_loop(ctx, s, base, lanes, TEXI_FOR_VECTORIZED, ch->plain) : partial;
    tex_stmt *vector = lanes_loop(ctx, s, base, lanes, TEXI_FOR_VECTORIZED, ch->plain);
    return vector ? texi_if_new(ctx, check, vector, partial) : NULL;
}

/* Chunk builder of a guard that is every chunk's prefix mask (tail_loop):
 * the predicated chunk alone, under the test that some lane passes (a
 * chunk wholly past the guard forms no address past a stack array's end),
 * without guarded_chunk's vector version; a chunk of one lane, or one whose
 * guard is not its prefix mask, as guarded_chunk's. */
static tex_stmt *predicated_chunk(tex_ctx *ctx, const tex_stmt *s, tex_expr *base, int lanes,
                                  void *ud)
{
    const chunker *ch = ud;
    tex_expr *b = texi_simplify(base, 0, NULL);
    if (b && lanes > 1 && prefix_count(ch->g, s->u.loop.var, b))
        return some_lanes(ctx, ch, s, b, lanes);
    return guarded_chunk(ctx, s, base, lanes, ud);
}

/* Whether the chunks of s (extent n) run predicated, not checked for
 * whole vectors: where the CPU has mask registers (AVX-512: a masked move
 * costs what a plain one does), the guard is each chunk's prefix mask and
 * the chunks fit unrolled. One version of each chunk, not the checked
 * form's two (a vector one and a masked or lane-by-lane one), unrolled. */
static bool all_predicated(const chunker *ch, const tex_stmt *s, int64_t n)
{
    return ch->maskable && texi_host_vector_bytes() >= 64 &&
           n <= (int64_t)texi_simd_lanes(s, n) * TEXI_SIMD_MAX_UNROLLED_CHUNKS &&
           prefix_count(ch->g, s->u.loop.var, s->u.loop.min) != NULL;
}

/* Vectorized loop s (safe, constant extent n): chunks when its body is
 * of the form above, else s itself. */
static tex_stmt *tail_loop(tex_ctx *ctx, tex_stmt *s, int64_t n)
{
    guard g = {.body = s->u.loop.body};
    if (peel(&g, s->u.loop.var) != NO_PROBLEM)
        return s;
    chunker ch = {&g, unguarded(ctx, g.body), false};
    if (!ch.plain)
        return NULL;
    ch.maskable = texi_simd_host_masks() && texi_simd_maskable(s->u.loop.var, ch.plain, true);
    bool predicated = g.n_var && all_predicated(&ch, s, n);
    // checked chunks: one copy in a loop, as each copy holds both versions
    tex_stmt *r = !g.n_var     ? texi_stmt_with_body(ctx, s, ch.plain)
                  : predicated ? texi_simd_chunks(ctx, s, n, TEXI_SIMD_MAX_UNROLLED_CHUNKS,
                                                  predicated_chunk, &ch)
                               : texi_simd_chunks(ctx, s, n, 1, guarded_chunk, &ch);
    tex_expr *invariant = NULL;
    for (int i = 0; r && i < g.n_inv; i++)
        if (!conjoin(&invariant, g.inv[i]))
            return NULL;
    return r && invariant ? texi_if_new(ctx, invariant, r, NULL) : r;
}

/* texi_stmt_map_loops callback: the vectorized loops with guarded bodies. */
static tex_stmt *map_loop(tex_ctx *ctx, tex_stmt *s, tex_stmt *body, void *ud)
{
    (void)ud;
    int64_t n;
    if (s->u.loop.for_kind != TEXI_FOR_VECTORIZED ||
        !texi_expr_is_int_const(s->u.loop.extent, &n) || n < 1 || texi_simd_straight_line(body) ||
        !texi_simd_safe(s))
        return texi_stmt_with_body(ctx, s, body);
    return tail_loop(ctx, s, n);
}

int texi_pass_simd_tail(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    return texi_pass_result(lw, texi_stmt_map_loops(lw->ctx, in, map_loop, NULL), out);
}
