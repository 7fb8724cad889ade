/*
 * Pass simd (CPU tail, last; each CUDA kernel, simd_gpu.c): vectorized
 * loops become vector statements.
 *
 * Input: a function after the CPU tail, whose FOR_VECTORIZED loops are
 * innermost with a constant extent N (pass vectorize). Output: each such
 * loop whose iterations are independent (texi_simd_safe) and whose body is
 * straight-line (STORE, LET, SEQ) is replaced by that body over vectors:
 * the loop variable becomes RAMP(min + offset, 1, L), scalar operands of
 * vector nodes become BROADCASTs, and RAMP arithmetic folds (RAMP + s,
 * RAMP * s, integer widening of a RAMP stay RAMPs), so a unit-stride
 * access reads as one dense vector access (docs/passes.md).
 *
 * L is the target's vector width (texi_simd_rules; on the CPU the native
 * one, AVX-512: 64 bytes, AVX: 32, else 16) over the widest lane type of
 * the body's values that vary with the loop variable, not counting
 * integer arithmetic that only feeds addresses (simd_lanes.c; loads and
 * stores only under rules->data_lanes), at most N. N is cut into chunks:
 * N / L chunks of L lanes, one after the other
 * (up to MAX_UNROLLED_CHUNKS, otherwise a serial loop over them), then the
 * rest in power-of-two chunks, a single lane as scalar statements. Running
 * the body chunk after chunk, each statement for all lanes at once, is the
 * loop's result because no iteration reads what another writes.
 *
 * A loop whose only dependence is a reduction into one element (acc[I] =
 * acc[I] op g(v), I invariant) becomes vector partial accumulators and one
 * horizontal reduction (simd_reduce.c, which uses this file's chunks).
 *
 * Guarded bodies come from pass simd_tail (simd_tail.c), which cut the
 * loops it could into unguarded vector loops and serial per-lane ones.
 *
 * Not done here: any other loop that may carry a dependence becomes serial
 * under ATTR vectorize_failed("iterations may depend on each other"), as
 * does a float sum or product under -strict-float (its own reason); a body
 * with a guard simd_tail left or other control flow keeps its vectorized
 * loop (the C printer's `#pragma omp simd`) under ATTR vectorize_failed
 * with texi_simd_guard_reason's reason.
 */
#include "lower/lower.h"
#include "util/host.h"

enum { MAX_UNROLLED_CHUNKS = TEXI_SIMD_MAX_UNROLLED_CHUNKS, MAX_LETS = 32 };

/* One chunk's rewriting: the loop variable's value, the LET variables
 * that became vectors (the first one may be a caller's substitution). */
typedef struct {
    tex_ctx *ctx;
    const tex_expr *var;
    tex_expr *value;      /* RAMP of the chunk's lanes, or a scalar for one lane */
    tex_expr *mask;       /* predicate of the vector loads and stores, or NULL */
    const tex_expr *slot; /* accesses at this index are a reduction's partial: not masked */
    int n_lets;
    const tex_expr *old_lets[MAX_LETS];
    tex_expr *new_lets[MAX_LETS];
} widener;

/* ----------------------------------------------------------- expressions */

static tex_expr *widen(widener *w, tex_expr *e);

static tex_expr *broadcast(tex_expr *e, int lanes)
{
    return e && e->lanes < lanes ? texi_broadcast_new(e, lanes) : e;
}

/* RAMP op scalar (or scalar op RAMP for + and *), kept a RAMP; NULL when
 * the operation is not one of those. */
static tex_expr *fold_ramp(enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    bool ramp_a = a->kind == TEXI_EXPR_RAMP && b->lanes == 1;
    bool ramp_b = b->kind == TEXI_EXPR_RAMP && a->lanes == 1;
    if ((!ramp_a && !ramp_b) || texi_dtype_is_float(a->dtype))
        return NULL;
    tex_expr *r = ramp_a ? a : b, *s = ramp_a ? b : a;
    tex_expr *base, *stride = r->u.ramp.stride;
    switch (kind) {
    case TEXI_EXPR_ADD:
        base = texi_binary(kind, r->u.ramp.base, s);
        break;
    case TEXI_EXPR_SUB:
        if (!ramp_a)
            return NULL;
        base = texi_binary(kind, r->u.ramp.base, s);
        break;
    case TEXI_EXPR_MUL:
        base = texi_binary(kind, r->u.ramp.base, s);
        stride = texi_binary(kind, stride, s);
        break;
    default:
        return NULL;
    }
    base = base ? texi_simplify(base, 0, NULL) : NULL;
    stride = stride ? texi_simplify(stride, 0, NULL) : NULL;
    return base && stride ? texi_ramp_new(base, stride, r->lanes) : NULL;
}

/* A binary node over widened operands. */
static tex_expr *widen_binary(tex_expr *e, tex_expr *a, tex_expr *b)
{
    if (!a || !b)
        return NULL;
    if (a == e->u.bin.a && b == e->u.bin.b)
        return e;
    tex_expr *r = fold_ramp(e->kind, a, b);
    if (r)
        return r;
    int lanes = a->lanes > b->lanes ? a->lanes : b->lanes;
    a = broadcast(a, lanes);
    b = broadcast(b, lanes);
    return a && b ? texi_binary(e->kind, a, b) : NULL;
}

/* CAST of a widened operand: an integer RAMP widened to an integer type
 * stays a RAMP (index arithmetic does not overflow, cexpr.c). */
static tex_expr *widen_cast(tex_expr *e, tex_expr *a)
{
    if (!a || a == e->u.un.a)
        return a ? e : NULL;
    bool int_ramp = a->kind == TEXI_EXPR_RAMP && !texi_dtype_is_float(e->dtype) &&
                    e->dtype != TEX_BOOL && texi_dtype_bits(e->dtype) >= texi_dtype_bits(a->dtype);
    if (!int_ramp)
        return texi_unary(e->kind, e->dtype, a);
    tex_expr *base = texi_convert(a->u.ramp.base, e->dtype);
    tex_expr *stride = texi_convert(a->u.ramp.stride, e->dtype);
    return base && stride ? texi_ramp_new(base, stride, a->lanes) : NULL;
}

static tex_expr *widen_select(tex_expr *e, tex_expr *c, tex_expr *t, tex_expr *f)
{
    if (!c || !t || !f)
        return NULL;
    if (c == e->u.sel.cond && t == e->u.sel.t && f == e->u.sel.f)
        return e;
    int lanes = c->lanes > t->lanes ? c->lanes : t->lanes;
    lanes = f->lanes > lanes ? f->lanes : lanes;
    c = broadcast(c, lanes);
    t = broadcast(t, lanes);
    f = broadcast(f, lanes);
    return c && t && f ? texi_select_new(c, t, f) : NULL;
}

static tex_expr *widen_call(widener *w, tex_expr *e)
{
    tex_expr *args[3];
    int n = e->u.call.n_args, lanes = 1;
    bool changed = false;
    for (int i = 0; i < n; i++) {
        if (!(args[i] = widen(w, e->u.call.args[i])))
            return NULL;
        changed |= args[i] != e->u.call.args[i];
        lanes = args[i]->lanes > lanes ? args[i]->lanes : lanes;
    }
    if (!changed)
        return e;
    for (int i = 0; i < n; i++)
        if (!(args[i] = broadcast(args[i], lanes)))
            return NULL;
    return texi_call_new(e->u.call.op, e->dtype, n, args);
}

/* A search whose operands vary over the lanes is one search per lane. */
static tex_expr *widen_search(widener *w, tex_expr *e)
{
    tex_expr *ops[3] = {e->u.search.lo, e->u.search.hi, e->u.search.value};
    int lanes = 1;
    bool changed = false;
    for (int i = 0; i < 3; i++) {
        tex_expr *was = ops[i];
        if (!(ops[i] = widen(w, was)))
            return NULL;
        changed |= ops[i] != was;
        lanes = ops[i]->lanes > lanes ? ops[i]->lanes : lanes;
    }
    if (!changed)
        return e;
    for (int i = 0; i < 3; i++)
        if (!(ops[i] = broadcast(ops[i], lanes)))
            return NULL;
    return texi_search_new(e->u.search.op, NULL, e->u.search.buf, ops[0], ops[1], ops[2]);
}

/* e with the loop variable replaced by w->value, vector LET variables by
 * their new variables; vector operands make their parents vectors. */
static tex_expr *widen(widener *w, tex_expr *e)
{
    tex_expr *a;
    switch (e->kind) {
    case TEXI_EXPR_VAR:
        if (e == w->var)
            return w->value;
        for (int i = 0; i < w->n_lets; i++)
            if (w->old_lets[i] == e)
                return w->new_lets[i];
        return e;
    TEXI_CASE_BINARY:
        a = widen(w, e->u.bin.a);
        return widen_binary(e, a, a ? widen(w, e->u.bin.b) : NULL);
    case TEXI_EXPR_NOT:
        a = widen(w, e->u.un.a);
        return !a || a == e->u.un.a ? a ? e : NULL : texi_unary(e->kind, e->dtype, a);
    case TEXI_EXPR_CAST:
        return widen_cast(e, widen(w, e->u.un.a));
    case TEXI_EXPR_SELECT: {
        tex_expr *c = widen(w, e->u.sel.cond), *t = c ? widen(w, e->u.sel.t) : NULL;
        return widen_select(e, c, t, t ? widen(w, e->u.sel.f) : NULL);
    }
    case TEXI_EXPR_CALL:
        return widen_call(w, e);
    case TEXI_EXPR_LOAD:
        a = widen(w, e->u.load.index);
        if (!a || a == e->u.load.index)
            return a ? e : NULL;
        return texi_masked_load_new(e->u.load.buf, a,
                                    a->lanes > 1 && e->u.load.index != w->slot ? w->mask : NULL);
    case TEXI_EXPR_SEARCH:
        return widen_search(w, e);
    default: /* constants; no other kind reaches the CPU tail's loop bodies */
        return e;
    }
}

/* ------------------------------------------------------------ statements */

bool texi_simd_straight_line(const tex_stmt *s)
{
    switch (s->kind) {
    case TEXI_STMT_STORE:
        return true;
    case TEXI_STMT_LET:
        return texi_simd_straight_line(s->u.let.body);
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            if (!texi_simd_straight_line(s->u.seq.items[i]))
                return false;
        return true;
    default:
        return false;
    }
}

static tex_stmt *widen_stmt(widener *w, const tex_stmt *s);

/* A LET whose value became a vector binds a new variable of its lanes. */
static tex_stmt *widen_let(widener *w, const tex_stmt *s)
{
    tex_expr *value = widen(w, s->u.let.value), *var = s->u.let.var;
    if (!value)
        return NULL;
    if (value->lanes > 1) {
        if (w->n_lets == MAX_LETS) {
            texi_error(w->ctx, TEX_EINTERNAL, "tex_lower: simd: more than %d LETs in a vector loop",
                       MAX_LETS);
            return NULL;
        }
        if (!(var = texi_var_new(w->ctx, var->u.var.name, var->dtype)))
            return NULL;
        var->lanes = value->lanes;
        w->old_lets[w->n_lets] = s->u.let.var;
        w->new_lets[w->n_lets++] = var;
    }
    tex_stmt *body = widen_stmt(w, s->u.let.body);
    w->n_lets -= var != s->u.let.var;
    return body ? texi_let_new(w->ctx, var, value, body) : NULL;
}

static tex_stmt *widen_stmt(widener *w, const tex_stmt *s)
{
    switch (s->kind) {
    case TEXI_STMT_STORE: {
        tex_expr *index = widen(w, s->u.store.index);
        tex_expr *value = index ? broadcast(widen(w, s->u.store.value), index->lanes) : NULL;
        tex_expr *mask = index && index->lanes > 1 ? w->mask : NULL;
        if (mask && s->u.store.index == w->slot) { /* the partial keeps its lanes off */
            tex_expr *old = value ? texi_load_new(s->u.store.buf, index) : NULL;
            value = old ? texi_select_new(mask, value, old) : NULL;
            mask = NULL;
        }
        return value ? texi_masked_store_new(w->ctx, s->u.store.buf, index, value, mask) : NULL;
    }
    case TEXI_STMT_LET:
        return widen_let(w, s);
    default: { /* SEQ (straight_line) */
        tex_stmt **items = texi_alloc(w->ctx, sizeof *items * (size_t)s->u.seq.n, "a sequence");
        for (int i = 0; items && i < s->u.seq.n; i++)
            if (!(items[i] = widen_stmt(w, s->u.seq.items[i])))
                return NULL;
        return items ? texi_seq_new(w->ctx, s->u.seq.n, items) : NULL;
    }
    }
}

tex_stmt *texi_simd_widen(tex_ctx *ctx, const tex_expr *var, const tex_stmt *body, tex_expr *base,
                          int lanes, tex_expr *mask, const tex_expr *slot, tex_expr *slot_value)
{
    tex_expr *one = texi_int_imm(ctx, base->dtype, 1);
    widener w = {.ctx = ctx, .var = var, .mask = mask};
    w.value = lanes == 1 ? base : one ? texi_ramp_new(base, one, lanes) : NULL;
    if (slot) {
        w.slot = slot;
        w.old_lets[0] = slot;
        w.new_lets[w.n_lets++] = slot_value;
    }
    return w.value ? widen_stmt(&w, body) : NULL;
}

/* The chunk builder of the loop's body: lanes [base, base + lanes) of it
 * as vector statements; base is the first lane's variable value (min +
 * offset, or an expression of a chunk loop's variable). */
static tex_stmt *chunk(tex_ctx *ctx, const tex_stmt *s, tex_expr *base, int lanes, void *ud)
{
    (void)ud;
    return texi_simd_widen(ctx, s->u.loop.var, s->u.loop.body, base, lanes, NULL, NULL, NULL);
}

tex_expr *texi_simd_plus(tex_expr *a, int64_t k)
{
    tex_expr *c = texi_int_imm(a->ctx, a->dtype, k);
    tex_expr *sum = c && k ? texi_binary(TEXI_EXPR_ADD, a, c) : c ? a : NULL;
    return sum ? texi_simplify(sum, 0, NULL) : NULL;
}

tex_expr *texi_simd_chunk_base(tex_expr *min, tex_expr *cv, int64_t width)
{
    tex_expr *w = texi_int_imm(min->ctx, min->dtype, width);
    tex_expr *step = w ? texi_binary(TEXI_EXPR_MUL, cv, w) : NULL;
    return step ? texi_binary(TEXI_EXPR_ADD, min, step) : NULL;
}

/* Chunks of L lanes over [0, n_main * L): unrolled (up to max_unrolled),
 * or a serial loop. */
static int main_chunks(tex_ctx *ctx, const tex_stmt *s, int64_t n_main, int lanes, int max_unrolled,
                       texi_simd_chunk_fn fn, void *ud, tex_stmt **items, int n)
{
    tex_expr *min = s->u.loop.min;
    if (n_main <= max_unrolled) {
        for (int64_t c = 0; c < n_main; c++) {
            tex_expr *base = texi_simd_plus(min, c * lanes);
            if (!base || !(items[n++] = fn(ctx, s, base, lanes, ud)))
                return -1;
        }
        return n;
    }
    tex_expr *cv = texi_var_new(ctx, "chunk", min->dtype);
    tex_expr *base = cv ? texi_simd_chunk_base(min, cv, lanes) : NULL;
    tex_expr *zero = base ? texi_int_imm(ctx, min->dtype, 0) : NULL;
    tex_expr *count = zero ? texi_int_imm(ctx, min->dtype, n_main) : NULL;
    tex_stmt *body = count ? fn(ctx, s, base, lanes, ud) : NULL;
    items[n] = body ? texi_for_new(ctx, cv, zero, count, TEXI_FOR_SERIAL, -1, body) : NULL;
    return items[n] ? n + 1 : -1;
}

/* The vector width under rules for vectorized loop s of extent n: the
 * widest vector over its body's widest lane type (texi_simd_lane_bytes),
 * halved until at most n. */
static int lanes_for(const tex_stmt *s, int64_t n, const texi_simd_rules *rules)
{
    int bytes = texi_simd_lane_bytes(s, rules->data_lanes);
    int lanes = (rules->max_bytes ? rules->max_bytes : texi_host_vector_bytes()) / bytes;
    while (lanes > n)
        lanes /= 2;
    return lanes;
}

/* The host CPU's rules: its native width, reductions allowed (predicated
 * chunks where it has masked moves: texi_pass_simd). */
static const texi_simd_rules HOST_RULES = {0, false, true, false};

int texi_simd_lanes(const tex_stmt *loop, int64_t n)
{
    return lanes_for(loop, n, &HOST_RULES);
}

/* Loop s of extent n cut into chunks of `lanes` lanes, each built by fn:
 * the full ones one after the other (at most max_unrolled of them, else a
 * serial loop over them), then the rest in power-of-two chunks. */
static tex_stmt *chunks_of(tex_ctx *ctx, const tex_stmt *s, int64_t n, int lanes, int max_unrolled,
                           texi_simd_chunk_fn fn, void *ud)
{
    max_unrolled = max_unrolled < MAX_UNROLLED_CHUNKS ? max_unrolled : MAX_UNROLLED_CHUNKS;
    int64_t n_main = n / lanes;
    tex_stmt *items[MAX_UNROLLED_CHUNKS + 8];
    int k = main_chunks(ctx, s, n_main, lanes, max_unrolled, fn, ud, items, 0);
    for (int64_t done = n_main * lanes; k >= 0 && done < n; done += lanes) {
        while (done + lanes > n)
            lanes /= 2;
        tex_expr *base = texi_simd_plus(s->u.loop.min, done);
        if (!base || !(items[k++] = fn(ctx, s, base, lanes, ud)))
            k = -1;
    }
    return k < 0 ? NULL : k == 1 ? items[0] : texi_seq_new(ctx, k, items);
}

tex_stmt *texi_simd_chunks(tex_ctx *ctx, const tex_stmt *s, int64_t n, int max_unrolled,
                           texi_simd_chunk_fn fn, void *ud)
{
    return chunks_of(ctx, s, n, texi_simd_lanes(s, n), max_unrolled, fn, ud);
}

tex_stmt *texi_simd_serial(tex_ctx *ctx, const tex_stmt *s, enum texi_vector_reason why)
{
    tex_stmt *loop = texi_for_new(ctx, s->u.loop.var, s->u.loop.min, s->u.loop.extent,
                                  TEXI_FOR_SERIAL, -1, s->u.loop.body);
    return loop ? texi_attr_vector_failed(ctx, why, loop) : NULL;
}

/* Safe straight-line vectorized loop s of extent n as vector chunks: those
 * of chunks_of, or, when the rest after the full chunks of the native width
 * would take two or more (it is not a power of two; fewer than n lanes
 * count as a rest too) and the rules and the body allow it, the full
 * chunks and then one predicated chunk of the native width. */
static tex_stmt *vector_chunks(tex_ctx *ctx, const tex_stmt *s, int64_t n,
                               const texi_simd_rules *rules)
{
    int full = lanes_for(s, INT64_MAX, rules);
    int64_t rest = n % full;
    if (!rules->masked || rest < 2 || (rest & (rest - 1)) == 0 ||
        !texi_simd_maskable(s->u.loop.var, s->u.loop.body, true))
        return chunks_of(ctx, s, n, lanes_for(s, n, rules), MAX_UNROLLED_CHUNKS, chunk, NULL);
    tex_stmt *items[2] = {NULL, NULL};
    int k = 0;
    if (n > rest &&
        !(items[k++] = chunks_of(ctx, s, n - rest, full, MAX_UNROLLED_CHUNKS, chunk, NULL)))
        return NULL;
    tex_expr *base = texi_simd_plus(s->u.loop.min, n - rest);
    tex_expr *count = base ? texi_int_imm(ctx, base->dtype, rest) : NULL;
    items[k] = count ? texi_simd_masked_chunk(ctx, s->u.loop.var, s->u.loop.body, base, full, count)
                     : NULL;
    return !items[k] ? NULL : k ? texi_seq_new(ctx, 2, items) : items[0];
}

/* What the loop walk carries: the pass's context and the target's rules. */
typedef struct {
    const texi_lower *lw;
    texi_simd_rules rules;
} simd_walk;

/* Loop s with its (already rewritten) body; ud: the simd_walk. */
static tex_stmt *simd_loop(tex_ctx *ctx, tex_stmt *s, tex_stmt *body, void *ud)
{
    const simd_walk *sw = ud;
    int64_t n;
    if (s->u.loop.for_kind != TEXI_FOR_VECTORIZED)
        return texi_stmt_with_body(ctx, s, body);
    if (!(s = texi_stmt_with_body(ctx, s, body)))
        return NULL;
    if (!texi_expr_is_int_const(s->u.loop.extent, &n)) /* a reduction (pass vectorize) */
        return sw->rules.reductions ? texi_simd_reduce_symbolic(ctx, s, sw->lw->strict_float)
                                    : texi_simd_serial(ctx, s, TEXI_VECTOR_EXTENT);
    if (!texi_simd_safe(s))
        return sw->rules.reductions ? texi_simd_reduce(ctx, s, n, sw->lw->strict_float)
                                    : texi_simd_serial(ctx, s, TEXI_VECTOR_DEPENDENCE);
    if (!texi_simd_straight_line(body))
        return texi_attr_vector_failed(ctx, texi_simd_guard_reason(s), s);
    return vector_chunks(ctx, s, n, &sw->rules);
}

int texi_simd_rewrite(texi_lower *lw, const texi_simd_rules *rules, tex_stmt *in, tex_stmt **out)
{
    simd_walk sw = {lw, *rules};
    return texi_pass_result(lw, texi_stmt_map_loops(lw->ctx, in, simd_loop, &sw), out);
}

int texi_pass_simd(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    texi_simd_rules rules = HOST_RULES;
    rules.masked = texi_simd_host_masks();
    return texi_simd_rewrite(lw, &rules, in, out);
}
