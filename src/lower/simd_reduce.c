/*
 * Vectorized reductions of pass simd (simd.c calls texi_simd_reduce for a
 * vectorized loop whose iterations may depend on each other).
 *
 * Input: a vectorized loop `for (v, min, N)` of constant extent whose body
 * is LETs around one STORE B[I] = B[I] op g(v) (or g(v) op B[I]), where op
 * is + * min or max of B's dtype, I does not depend on v, and neither I,
 * g nor the LET values read B (the only buffer the loop writes). The lanes
 * must be plain (no f16/bf16/bool). The store may sit in `if (c)` (a
 * where-condition, or a split tail's guard under ATTR predicate, with
 * guarded_loads' LETs, one of which may bind B[I]) when g neither loads nor
 * divides integers: then g(v) becomes select(c, g(v), identity). Output,
 * with L =
 * texi_simd_lanes, the N / L main chunks and K = min(4, N / L) partial
 * accumulators:
 *
 *   allocate acc[K * L] (local) {
 *     acc[ramp(j L, 1, L)] = broadcast(identity, L)          for j < K
 *     acc[ramp(j L, 1, L)] = acc[...] op g(ramp(base, 1, L))  chunk c: j = c % K
 *     B[I] = B[I] op vreduce_op(acc[ramp(0, 1, L)] op ... acc[ramp((K-1) L, 1, L)])
 *   }
 *   the N % L last iterations: the scalar body (a serial loop for several)
 *
 * or, where the CPU has masked moves and the update may be predicated
 * (texi_simd_maskable), two or more last iterations are one predicated
 * chunk of L lanes into partial 0 before the final store (simd_mask.c):
 * the lanes past the end load nothing, and partial 0 keeps them
 * (acc = select(mask, acc op g, acc), its own accesses unmasked so that
 * the C compiler keeps it in registers).
 *
 * Up to TEXI_SIMD_MAX_UNROLLED_CHUNKS chunks are unrolled; more become a
 * serial loop whose iteration runs K chunks (one per accumulator, so they
 * do not wait on each other), then the rest of the chunks unrolled.
 *
 * A symbolic extent E (texi_simd_reduce_symbolic) gets K = 4 and, with
 * E' = max(E, 0): a serial loop of E' / (K L) groups of K chunks, a serial
 * loop of the (E' % (K L)) / L chunks left (into partial 0), the final
 * store, then the E' % L last iterations as a serial scalar loop (or, as
 * above, one predicated chunk before the final store).
 *
 * The result is the reduction in another order: exact for integers (they
 * wrap) and for min/max, a rounding difference for float + and *. Under
 * -strict-float those stay serial with ATTR vectorize_failed(STRICT_FLOAT);
 * every other dependent loop stays serial with DEPENDENCE (docs/passes.md).
 */
#include "lower/lower.h"

enum { MAX_PARTIALS = 4, MAX_VARS = 32 };

/* The recognized update B[I] = acc op delta (or delta op acc), acc being
 * B[I] or a LET variable bound to it, maybe under `if (cond)`. */
typedef struct {
    const tex_stmt *store;
    enum texi_expr_kind kind; /* ADD, MUL, MIN, MAX */
    enum texi_reduce_op op;
    bool acc_first;        /* acc is the left operand */
    tex_expr *delta;       /* g(v) */
    tex_expr *cond;        /* the guard, or NULL */
    const tex_expr *alias; /* the LET variable bound to B[I], or NULL */
    bool plain;            /* the body is only LETs around the STORE */
} reduction;

/* A walk that looks for reads of buffer buf (any buffer when NULL) and
 * for variables of vars; with `traps`, also for integer divisions. */
typedef struct {
    const texi_buffer *buf;
    const tex_expr *const *vars;
    int n_vars;
    bool traps;
    bool found;
} probe;

static bool probe_node(tex_expr *e, void *ud)
{
    probe *p = ud;
    if (e->kind == TEXI_EXPR_LOAD &&
        (!p->buf || texi_buffer_key(e->u.load.buf) == texi_buffer_key(p->buf)))
        p->found = true;
    p->found |= p->traps && (e->kind == TEXI_EXPR_FLOORDIV || e->kind == TEXI_EXPR_FLOORMOD);
    for (int i = 0; e->kind == TEXI_EXPR_VAR && i < p->n_vars; i++)
        p->found |= e == p->vars[i];
    return !p->found;
}

/* Whether e reads buf or mentions one of vars. */
static bool touches(tex_expr *e, const texi_buffer *buf, const tex_expr *const *vars, int n_vars)
{
    probe p = {buf, vars, n_vars, false, false};
    texi_expr_visit(e, probe_node, &p);
    return p.found;
}

/* Whether e may not be evaluated where its guard is false: it loads (the
 * load may be out of bounds there) or divides integers (by zero). */
static bool unsafe_unguarded(tex_expr *e)
{
    probe p = {NULL, NULL, 0, true, false};
    texi_expr_visit(e, probe_node, &p);
    return p.found;
}

static bool reduce_op_of(enum texi_expr_kind kind, enum texi_reduce_op *op)
{
    switch (kind) {
    case TEXI_EXPR_ADD:
        *op = TEXI_REDUCE_SUM;
        return true;
    case TEXI_EXPR_MUL:
        *op = TEXI_REDUCE_PROD;
        return true;
    case TEXI_EXPR_MAX:
        *op = TEXI_REDUCE_MAX;
        return true;
    case TEXI_EXPR_MIN:
        *op = TEXI_REDUCE_MIN;
        return true;
    default:
        return false;
    }
}

/* Whether e is the accumulator B[index] (a load, or r's alias). */
static bool is_acc(const reduction *r, const tex_expr *e, const texi_buffer *b,
                   const tex_expr *index)
{
    if (r->alias && e == r->alias)
        return true;
    return e->kind == TEXI_EXPR_LOAD && texi_buffer_key(e->u.load.buf) == texi_buffer_key(b) &&
           texi_expr_equal(e->u.load.index, index);
}

/* Whether the update s (the STORE under the LETs, whose variables are
 * vars) is a reduction into one element (file comment); fills r. */
static bool match_store(const tex_stmt *s, const tex_expr *const *vars, int n_vars, reduction *r)
{
    const texi_buffer *b = s->u.store.buf;
    tex_expr *value = s->u.store.value, *index = s->u.store.index;
    if (value->dtype != b->dtype || texi_dtype_lane(b->dtype) != b->dtype ||
        !reduce_op_of(value->kind, &r->op) || touches(index, b, vars, n_vars))
        return false;
    r->acc_first = is_acc(r, value->u.bin.a, b, index);
    tex_expr *acc = r->acc_first ? value->u.bin.a : value->u.bin.b;
    r->delta = r->acc_first ? value->u.bin.b : value->u.bin.a;
    if (!is_acc(r, acc, b, index) || touches(r->delta, b, &r->alias, r->alias != NULL) ||
        (r->cond && unsafe_unguarded(r->delta)))
        return false;
    r->store = s;
    r->kind = value->kind;
    return true;
}

/* The statement after s in a reduction body's chain of LETs and ATTR
 * predicate (the mark of a predicated split tail, whose guard is the IF
 * inside it), or NULL when s is neither. */
static const tex_stmt *chain_next(const tex_stmt *s)
{
    if (s->kind == TEXI_STMT_LET)
        return s->u.let.body;
    return texi_attr_is(s, TEXI_ATTR_PREDICATE) ? s->u.attr.body : NULL;
}

/* Whether loop s is a reduction into one element; fills r. The LETs may
 * bind B[I] once (the guarded_loads form of a guarded update). */
static bool match(const tex_stmt *s, reduction *r)
{
    const tex_expr *vars[MAX_VARS];
    int n = 0;
    vars[n++] = s->u.loop.var;
    *r = (reduction){.plain = true};
    const tex_stmt *b = s->u.loop.body, *update, *next;
    for (; (next = chain_next(b)); b = next) {
        r->plain &= b->kind == TEXI_STMT_LET;
        if (b->kind == TEXI_STMT_LET && n == MAX_VARS)
            return false;
        if (b->kind == TEXI_STMT_LET)
            vars[n++] = b->u.let.var;
    }
    if (b->kind == TEXI_STMT_IF && !b->u.ifs.else_s) {
        r->cond = b->u.ifs.cond;
        r->plain = false;
        b = b->u.ifs.then_s;
    }
    if (b->kind != TEXI_STMT_STORE)
        return false;
    update = b;
    for (const tex_stmt *l = s->u.loop.body; (next = chain_next(l)); l = next) {
        if (l->kind != TEXI_STMT_LET)
            continue;
        tex_expr *v = l->u.let.value;
        if (!touches(v, update->u.store.buf, &r->alias, r->alias != NULL))
            continue;
        if (r->alias || !is_acc(r, v, update->u.store.buf, update->u.store.index))
            return false;
        r->alias = l->u.let.var;
    }
    if (r->cond && touches(r->cond, update->u.store.buf, &r->alias, r->alias != NULL))
        return false;
    return match_store(update, vars, n, r);
}

/* ---------------------------------------------------------------- rewrite */

typedef struct {
    tex_ctx *ctx;
    const tex_stmt *loop;
    const reduction *r;
    texi_buffer *acc;
    tex_expr *slot;         /* the template's accumulator index variable */
    const tex_stmt *update; /* the loop body with acc[slot] = acc[slot] op delta */
    int lanes;
} rewriter;

/* ramp(j * L, 1, L): partial accumulator j's lanes. */
static tex_expr *partial_index(const rewriter *w, int j)
{
    tex_dtype t = w->slot->dtype;
    tex_expr *base = texi_int_imm(w->ctx, t, (int64_t)j * w->lanes);
    tex_expr *one = base ? texi_int_imm(w->ctx, t, 1) : NULL;
    return one ? texi_ramp_new(base, one, w->lanes) : NULL;
}

static tex_expr *partial(const rewriter *w, int j)
{
    tex_expr *index = partial_index(w, j);
    return index ? texi_load_new(w->acc, index) : NULL;
}

/* acc op delta, the operands in the order of the original update. */
static tex_expr *combine(const rewriter *w, tex_expr *acc, tex_expr *delta)
{
    return w->r->acc_first ? texi_binary(w->r->kind, acc, delta)
                           : texi_binary(w->r->kind, delta, acc);
}

/* The loop body with its update redirected to acc[slot] (a guarded update
 * adds the identity where its guard is false); the LET of B[I] dropped. */
static tex_stmt *update_template(rewriter *w, const tex_stmt *s)
{
    if (s->kind == TEXI_STMT_LET) {
        tex_stmt *body = update_template(w, s->u.let.body);
        if (!body || s->u.let.var == w->r->alias)
            return body;
        return texi_let_new(w->ctx, s->u.let.var, s->u.let.value, body);
    }
    if (s->kind == TEXI_STMT_ATTR)
        return update_template(w, s->u.attr.body);
    tex_expr *delta = w->r->delta, *cond = w->r->cond;
    if (cond) {
        tex_expr *identity = texi_reduce_identity(w->ctx, w->r->op, delta->dtype);
        delta = identity ? texi_select_new(cond, delta, identity) : NULL;
    }
    tex_expr *load = delta ? texi_load_new(w->acc, w->slot) : NULL;
    tex_expr *sum = load ? combine(w, load, delta) : NULL;
    return sum ? texi_store_new(w->ctx, w->acc, w->slot, sum) : NULL;
}

/* Chunk c (its first lane at base) accumulating into partial j. */
static tex_stmt *accumulate(const rewriter *w, tex_expr *base, int j)
{
    tex_expr *index = partial_index(w, j);
    return index ? texi_simd_widen(w->ctx, w->loop->u.loop.var, w->update, base, w->lanes, NULL,
                                   w->slot, index)
                 : NULL;
}

/* Chunks c0 .. c1 - 1 unrolled, chunk c into partial c % k; 0 or -1. */
static int unrolled(const rewriter *w, int64_t c0, int64_t c1, int k, tex_stmt **items, int *n)
{
    for (int64_t c = c0; c < c1; c++) {
        tex_expr *base = texi_simd_plus(w->loop->u.loop.min, c * w->lanes);
        if (!base || !(items[(*n)++] = accumulate(w, base, (int)(c % k))))
            return -1;
    }
    return 0;
}

/* a op b for integer expressions of one dtype, simplified (NULL propagates). */
static tex_expr *arith(enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    tex_expr *e = a && b ? texi_binary(kind, a, b) : NULL;
    return e ? texi_simplify(e, 0, NULL) : NULL;
}

/* A serial loop of `count` iterations, iteration c running `group` chunks
 * from start + c * width, chunk j into partial j. */
static tex_stmt *chunk_loop(const rewriter *w, tex_expr *start, tex_expr *count, int width,
                            int group)
{
    tex_ctx *ctx = w->ctx;
    tex_expr *cv = count ? texi_var_new(ctx, "chunk", count->dtype) : NULL;
    tex_stmt *items[MAX_PARTIALS];
    for (int j = 0; j < group; j++) {
        tex_expr *first = cv ? texi_simd_chunk_base(start, cv, width) : NULL;
        tex_expr *base = first ? texi_simd_plus(first, (int64_t)j * w->lanes) : NULL;
        if (!base || !(items[j] = accumulate(w, base, j)))
            return NULL;
    }
    tex_stmt *body = group == 1 ? items[0] : texi_seq_new(ctx, group, items);
    tex_expr *zero = body ? texi_int_imm(ctx, count->dtype, 0) : NULL;
    return zero ? texi_for_new(ctx, cv, zero, count, TEXI_FOR_SERIAL, -1, body) : NULL;
}

/* n_main chunks: unrolled, or a serial loop of k chunks per iteration and
 * the rest unrolled; 0 or -1. */
static int main_chunks(const rewriter *w, int64_t n_main, int k, tex_stmt **items, int *n)
{
    if (n_main <= TEXI_SIMD_MAX_UNROLLED_CHUNKS)
        return unrolled(w, 0, n_main, k, items, n);
    tex_expr *min = w->loop->u.loop.min;
    tex_expr *count = texi_int_imm(w->ctx, min->dtype, n_main / k);
    if (!(items[(*n)++] = chunk_loop(w, min, count, k * w->lanes, k)))
        return -1;
    return unrolled(w, n_main / k * k, n_main, k, items, n);
}

/* B[I] = B[I] op vreduce(partial 0 op ... op partial k-1). */
static tex_stmt *final_store(const rewriter *w, int k)
{
    const tex_stmt *s = w->r->store;
    tex_expr *v = partial(w, 0);
    for (int j = 1; v && j < k; j++) {
        tex_expr *pj = partial(w, j);
        v = pj ? texi_binary(w->r->kind, v, pj) : NULL;
    }
    tex_expr *red = v ? texi_vreduce_new(w->r->op, v) : NULL;
    tex_expr *load = red ? texi_load_new(s->u.store.buf, s->u.store.index) : NULL;
    tex_expr *value = load ? combine(w, load, red) : NULL;
    return value ? texi_store_new(w->ctx, s->u.store.buf, s->u.store.index, value) : NULL;
}

/* Iterations [done, n) of loop s as scalar statements: the plain body at
 * that variable value, or a serial loop for several or a guarded body. */
static tex_stmt *rest(tex_ctx *ctx, const tex_stmt *s, bool plain, int64_t done, int64_t n)
{
    tex_expr *min = texi_simd_plus(s->u.loop.min, done);
    if (!min || (plain && n - done == 1))
        return min ? texi_simd_widen(ctx, s->u.loop.var, s->u.loop.body, min, 1, NULL, NULL, NULL)
                   : NULL;
    tex_expr *extent = texi_int_imm(ctx, min->dtype, n - done);
    return extent
               ? texi_for_new(ctx, s->u.loop.var, min, extent, TEXI_FOR_SERIAL, -1, s->u.loop.body)
               : NULL;
}

/* The k partial accumulators of w (w->lanes set): w's buffer, slot and
 * update template, and items[0 .. k) set to the identity; 0 or -1. */
static int start_partials(rewriter *w, int k, tex_stmt **items)
{
    tex_ctx *ctx = w->ctx;
    tex_expr *size = texi_int_imm(ctx, TEX_I64, (int64_t)k * w->lanes);
    const texi_buffer *b = w->r->store->u.store.buf;
    w->acc = size ? texi_buffer_new(ctx, "vacc", b->dtype, TEXI_SCOPE_LOCAL, 1, &size) : NULL;
    w->slot = w->acc ? texi_var_new(ctx, "lane", w->loop->u.loop.var->dtype) : NULL;
    w->update = w->slot ? update_template(w, w->loop->u.loop.body) : NULL;
    tex_expr *identity = w->update ? texi_reduce_identity(ctx, w->r->op, b->dtype) : NULL;
    for (int j = 0; j < k; j++) {
        tex_expr *index = identity ? partial_index(w, j) : NULL;
        tex_expr *all = index ? texi_broadcast_new(identity, w->lanes) : NULL;
        if (!all || !(items[j] = texi_store_new(ctx, w->acc, index, all)))
            return -1;
    }
    return identity ? 0 : -1;
}

/* Whether the last iterations may be one predicated chunk (simd_mask.c):
 * the host has masked moves and the update template may be predicated. */
static bool maskable_rest(const rewriter *w)
{
    return texi_simd_host_masks() && texi_simd_maskable(NULL, w->update, false);
}

/* The iterations [base, base + count), count < lanes, as one predicated
 * chunk into partial 0: the lanes past count neither load nor update it. */
static tex_stmt *masked_rest(const rewriter *w, tex_expr *base, tex_expr *count)
{
    tex_expr *mask = base && count ? texi_simd_prefix_mask(w->ctx, w->lanes, count) : NULL;
    tex_expr *index = mask ? partial_index(w, 0) : NULL;
    return index ? texi_simd_widen(w->ctx, w->loop->u.loop.var, w->update, base, w->lanes, mask,
                                   w->slot, index)
                 : NULL;
}

/* The rewriting of the file comment. */
static tex_stmt *vector_reduction(tex_ctx *ctx, const tex_stmt *s, const reduction *r, int64_t n)
{
    rewriter w = {.ctx = ctx, .loop = s, .r = r, .lanes = texi_simd_lanes(s, n)};
    int64_t n_main = n / w.lanes, done = n_main * w.lanes;
    int k = n_main < MAX_PARTIALS ? (int)n_main : MAX_PARTIALS;
    tex_stmt *items[2 * MAX_PARTIALS + TEXI_SIMD_MAX_UNROLLED_CHUNKS + 3];
    int m = k;
    if (start_partials(&w, k, items) != 0 || main_chunks(&w, n_main, k, items, &m) != 0)
        return NULL;
    bool masked = n - done >= 2 && maskable_rest(&w);
    tex_expr *base = masked ? texi_simd_plus(s->u.loop.min, done) : NULL;
    if ((masked &&
         !(items[m++] = masked_rest(&w, base, texi_int_imm(ctx, base->dtype, n - done)))) ||
        !(items[m++] = final_store(&w, k)))
        return NULL;
    tex_stmt *body = texi_seq_new(ctx, m, items);
    tex_stmt *vec = body ? texi_allocate_new(ctx, w.acc, body) : NULL;
    if (!vec || done == n || masked)
        return vec;
    tex_stmt *tail = rest(ctx, s, r->plain, n_main * w.lanes, n);
    return tail ? texi_seq_new(ctx, 2, (tex_stmt *[]){vec, tail}) : NULL;
}

/* ---------------------------------------------------- symbolic extents */

/* The rewriting of a symbolic extent (file comment). */
static tex_stmt *symbolic_reduction(tex_ctx *ctx, const tex_stmt *s, const reduction *r)
{
    rewriter w = {.ctx = ctx, .loop = s, .r = r, .lanes = texi_simd_lanes(s, INT64_MAX)};
    tex_expr *min = s->u.loop.min;
    tex_dtype t = min->dtype;
    int k = MAX_PARTIALS, group = k * w.lanes;
    tex_expr *n = arith(TEXI_EXPR_MAX, s->u.loop.extent, texi_int_imm(ctx, t, 0));
    tex_expr *imm_group = texi_int_imm(ctx, t, group), *imm_lanes = texi_int_imm(ctx, t, w.lanes);
    tex_expr *groups = arith(TEXI_EXPR_FLOORDIV, n, imm_group);
    tex_expr *grouped = arith(TEXI_EXPR_MUL, groups, imm_group);
    tex_expr *singles = arith(TEXI_EXPR_FLOORDIV, arith(TEXI_EXPR_SUB, n, grouped), imm_lanes);
    tex_expr *vectored = arith(TEXI_EXPR_MUL, arith(TEXI_EXPR_FLOORDIV, n, imm_lanes), imm_lanes);
    tex_stmt *items[MAX_PARTIALS + 4];
    if (!singles || !vectored || start_partials(&w, k, items) != 0)
        return NULL;
    tex_expr *tail_min = arith(TEXI_EXPR_ADD, min, vectored);
    tex_expr *tail_n = arith(TEXI_EXPR_SUB, n, vectored);
    bool masked = maskable_rest(&w);
    int m = k;
    items[m++] = chunk_loop(&w, min, groups, group, k);
    items[m++] = chunk_loop(&w, arith(TEXI_EXPR_ADD, min, grouped), singles, w.lanes, 1);
    if (masked) /* the last iterations: one predicated chunk */
        items[m++] = masked_rest(&w, tail_min, tail_n);
    items[m++] = final_store(&w, k);
    bool all = true;
    for (int i = k; i < m; i++)
        all &= items[i] != NULL;
    tex_stmt *body = all ? texi_seq_new(ctx, m, items) : NULL;
    tex_stmt *vec = body ? texi_allocate_new(ctx, w.acc, body) : NULL;
    if (!vec || masked)
        return vec;
    tex_stmt *tail = tail_min && tail_n ? texi_for_new(ctx, s->u.loop.var, tail_min, tail_n,
                                                       TEXI_FOR_SERIAL, -1, s->u.loop.body)
                                        : NULL;
    return tail ? texi_seq_new(ctx, 2, (tex_stmt *[]){vec, tail}) : NULL;
}

/* The recognized reduction of s: TEXI_VECTOR_REASON_COUNT, or the reason
 * it stays serial. */
static enum texi_vector_reason reducible(const tex_stmt *s, bool strict_float, reduction *r)
{
    if (!match(s, r))
        return TEXI_VECTOR_DEPENDENCE;
    bool reassociates = r->op == TEXI_REDUCE_SUM || r->op == TEXI_REDUCE_PROD;
    if (strict_float && reassociates && texi_dtype_is_float(r->store->u.store.buf->dtype))
        return TEXI_VECTOR_STRICT_FLOAT;
    return TEXI_VECTOR_REASON_COUNT;
}

tex_stmt *texi_simd_reduce(tex_ctx *ctx, const tex_stmt *s, int64_t n, bool strict_float)
{
    reduction r;
    enum texi_vector_reason why = n < 1 ? TEXI_VECTOR_DEPENDENCE : reducible(s, strict_float, &r);
    return why != TEXI_VECTOR_REASON_COUNT ? texi_simd_serial(ctx, s, why)
                                           : vector_reduction(ctx, s, &r, n);
}

bool texi_simd_is_reduction(const tex_stmt *s)
{
    reduction r;
    return !texi_simd_safe(s) && match(s, &r);
}

tex_stmt *texi_simd_reduce_symbolic(tex_ctx *ctx, const tex_stmt *s, bool strict_float)
{
    reduction r;
    enum texi_vector_reason why = reducible(s, strict_float, &r);
    return why != TEXI_VECTOR_REASON_COUNT ? texi_simd_serial(ctx, s, why)
                                           : symbolic_reduction(ctx, s, &r);
}
