/*
 * Pass gpu_threads (CPU tail, after gpu_blocks): the threads of a block run
 * as the innermost, vectorized loop of each barrier-free segment.
 *
 * After gpu_to_cpu every thread nest is barrier-free: within it the
 * threads of a block do not communicate (thread_sync put a barrier wherever
 * one thread reads what another wrote; what is left are reductions of all
 * threads into one element, which commute). So the innermost thread loop L
 * (threadIdx.x, over `tx`) may be distributed over the statements of its
 * body and interchanged with the serial loops inside it: each thread still
 * runs its own statements in order. sink() rewrites L's body B:
 *   - a serial or unrolled loop whose bounds do not use tx, an IF whose
 *     condition does not use tx and a LET whose value does not use tx
 *     move outside L (thread-invariant code hoisted);
 *   - a SEQ is distributed: consecutive straight-line items (no loop,
 *     allocation, barrier, intrinsic or atomic) form one leaf, the others
 *     are sunk in turn;
 *   - a LOCAL buffer allocated inside L (a per-thread value that now lives
 *     across the leaves) becomes one array over the threads, thread index
 *     fastest: element e of thread tx is at e * extent(L) + tx - min(L),
 *     so that the leaves' accesses to it are unit-stride in tx (the
 *     per-thread array of a value live across segments; a thread-dependent
 *     LET or IF over more than straight-line code is not distributed, so
 *     register values are never stored this way);
 *   - a straight-line leaf S becomes `for (tx) S`, VECTORIZED when L's
 *     extent is a constant of at least MIN_LANES and every access of S is
 *     affine in tx, stores with a coefficient of 0 or 1 (a coefficient 0
 *     is a reduction of all threads into one element: pass simd makes it a
 *     vectorized reduction, simd_reduce.c), otherwise serial.
 * A nest with something else in L's body (a thread, parallel or vectorized
 * loop, a thread-dependent loop bound, a shared allocation), or in which no
 * leaf would be vectorized, is left as it is: its thread loops run
 * serially. Outer thread loops (threadIdx.y/z) stay around the result.
 */
#include "lower/lower.h"

enum { MIN_LANES = 4 };

typedef struct {
    tex_ctx *ctx;
    const tex_stmt *loop; /* L, the innermost thread loop */
    bool refused;         /* L's body holds something sink() does not move */
    int n_vector;         /* leaves made vectorized loops */
} sinker;

/* A statement that cannot be part of a vectorized loop's body. */
static bool not_straight(const tex_stmt *s)
{
    if (s->kind == TEXI_STMT_ATTR)
        return s->u.attr.id == TEXI_ATTR_ATOMIC;
    return s->kind == TEXI_STMT_FOR || s->kind == TEXI_STMT_ALLOCATE ||
           s->kind == TEXI_STMT_REALIZE || s->kind == TEXI_STMT_PROVIDE ||
           s->kind == TEXI_STMT_BARRIER || s->kind == TEXI_STMT_INTRIN;
}

static bool straight(const tex_stmt *s)
{
    return !texi_stmt_any(s, not_straight);
}

typedef struct {
    const tex_expr *var;
    bool affine;
} affinity;

/* Every LOAD index affine in the thread variable. */
static bool check_load(tex_expr *e, void *ud)
{
    affinity *a = ud;
    int64_t coef;
    if (e->kind == TEXI_EXPR_LOAD && !texi_linear_in(e->u.load.index, a->var, &coef))
        a->affine = false;
    return a->affine;
}

/* Every STORE index affine with a coefficient 0 or 1, every load affine. */
static bool check_access(const tex_stmt *s, void *ud)
{
    affinity *a = ud;
    int64_t coef;
    if (s->kind == TEXI_STMT_STORE &&
        (!texi_linear_in(s->u.store.index, a->var, &coef) || coef < 0 || coef > 1))
        a->affine = false;
    texi_stmt_visit_exprs(s, check_load, a);
    return a->affine;
}

/* Straight-line s inside its own copy of L. */
static tex_stmt *leaf(sinker *sk, tex_stmt *s)
{
    const tex_stmt *l = sk->loop;
    int64_t n;
    affinity a = {l->u.loop.var, true};
    texi_stmt_visit(s, check_access, &a);
    bool vec = a.affine && texi_expr_is_int_const(l->u.loop.extent, &n) && n >= MIN_LANES;
    sk->n_vector += vec;
    return texi_for_new(sk->ctx, l->u.loop.var, l->u.loop.min, l->u.loop.extent,
                        vec ? TEXI_FOR_VECTORIZED : TEXI_FOR_SERIAL, -1, s);
}

typedef struct {
    sinker *sk;
    const void *key;
    texi_buffer *to;
} expansion;

/* idx * extent(L) + tx - min(L), in idx's dtype. */
static tex_expr *thread_index(const expansion *x, tex_expr *idx)
{
    const tex_stmt *l = x->sk->loop;
    tex_dtype t = idx->dtype;
    tex_expr *tid =
        texi_binary(TEXI_EXPR_SUB, texi_convert(l->u.loop.var, t), texi_convert(l->u.loop.min, t));
    tex_expr *r = texi_binary(
        TEXI_EXPR_ADD, texi_binary(TEXI_EXPR_MUL, idx, texi_convert(l->u.loop.extent, t)), tid);
    return r ? texi_simplify(r, 0, NULL) : NULL;
}

static tex_expr *expand_load(tex_expr *e, void *ud)
{
    expansion *x = ud;
    if (e->kind != TEXI_EXPR_LOAD || texi_buffer_key(e->u.load.buf) != x->key)
        return NULL;
    tex_expr *idx = texi_expr_mutate(e->u.load.index, expand_load, x);
    tex_expr *r = idx ? texi_load_new(x->to, thread_index(x, idx)) : NULL;
    x->sk->refused |= !r;
    return r ? r : e;
}

static tex_stmt *expand_store(tex_stmt *s, void *ud)
{
    expansion *x = ud;
    if (s->kind != TEXI_STMT_STORE || texi_buffer_key(s->u.store.buf) != x->key)
        return NULL;
    tex_expr *idx = texi_expr_mutate(s->u.store.index, expand_load, x);
    tex_expr *v = texi_expr_mutate(s->u.store.value, expand_load, x);
    tex_expr *at = idx ? thread_index(x, idx) : NULL;
    tex_stmt *r = at && v ? texi_store_new(x->sk->ctx, x->to, at, v) : NULL;
    x->sk->refused |= !r;
    return r ? r : s;
}

static tex_stmt *sink(sinker *sk, tex_stmt *s);

/* A LOCAL buffer of L's body as one array over L's threads. */
static tex_stmt *sink_local(sinker *sk, tex_stmt *s)
{
    const texi_buffer *b = s->u.alloc.buf;
    tex_ctx *ctx = sk->ctx;
    tex_expr *size = texi_convert(sk->loop->u.loop.extent, TEX_I64);
    for (int d = 0; size && d < b->ndim; d++)
        size = texi_binary(TEXI_EXPR_MUL, size, texi_convert(b->shape[d], TEX_I64));
    size = size ? texi_simplify(size, 0, NULL) : NULL;
    texi_buffer *to =
        size ? texi_buffer_new(ctx, b->name, b->dtype, TEXI_SCOPE_LOCAL, 1, &size) : NULL;
    if (!to)
        return NULL;
    expansion x = {sk, texi_buffer_key(b), to};
    tex_stmt *body = texi_stmt_mutate(ctx, s->u.alloc.body, expand_store, expand_load, &x);
    body = body && !sk->refused ? sink(sk, body) : NULL;
    return body ? texi_allocate_new(ctx, to, body) : NULL;
}

/* SEQ: runs of straight-line items as one leaf each, other items sunk. */
static tex_stmt *sink_seq(sinker *sk, tex_stmt *s)
{
    int n = s->u.seq.n, n_out = 0, run = 0;
    tex_stmt **out = texi_alloc(sk->ctx, sizeof *out * (size_t)(n + 1), "gpu_threads");
    tex_stmt **pending = texi_alloc(sk->ctx, sizeof *pending * (size_t)(n + 1), "gpu_threads");
    if (!out || !pending)
        return NULL;
    for (int i = 0; i <= n; i++) {
        tex_stmt *item = i < n ? s->u.seq.items[i] : NULL;
        if (item && straight(item)) {
            pending[run++] = item;
            continue;
        }
        if (run && !(out[n_out++] = leaf(sk, texi_seq_new(sk->ctx, run, pending))))
            return NULL;
        run = 0;
        if (item && !(out[n_out++] = sink(sk, item)))
            return NULL;
    }
    return texi_seq_new(sk->ctx, n_out, out);
}

/* IF with a thread-invariant condition: outside L. */
static tex_stmt *sink_if(sinker *sk, tex_stmt *s)
{
    tex_stmt *a = sink(sk, s->u.ifs.then_s);
    tex_stmt *b = s->u.ifs.else_s ? sink(sk, s->u.ifs.else_s) : NULL;
    return a && (b || !s->u.ifs.else_s) ? texi_if_new(sk->ctx, s->u.ifs.cond, a, b) : NULL;
}

/* L's body s with L moved inside (the file comment's rules); NULL when
 * refused (sk->refused) or on ENOMEM. */
static tex_stmt *sink(sinker *sk, tex_stmt *s)
{
    const tex_expr *tx = sk->loop->u.loop.var;
    if (sk->refused)
        return NULL;
    if (straight(s))
        return leaf(sk, s);
    switch (s->kind) {
    case TEXI_STMT_FOR:
        if ((s->u.loop.for_kind != TEXI_FOR_SERIAL && s->u.loop.for_kind != TEXI_FOR_UNROLLED) ||
            texi_expr_uses_var(s->u.loop.min, tx) || texi_expr_uses_var(s->u.loop.extent, tx))
            break;
        return texi_stmt_with_body(sk->ctx, s, sink(sk, s->u.loop.body));
    case TEXI_STMT_SEQ:
        return sink_seq(sk, s);
    case TEXI_STMT_IF:
        if (!texi_expr_uses_var(s->u.ifs.cond, tx))
            return sink_if(sk, s);
        break;
    case TEXI_STMT_LET:
        if (texi_expr_uses_var(s->u.let.value, tx))
            break;
        return texi_stmt_with_body(sk->ctx, s, sink(sk, s->u.let.body));
    case TEXI_STMT_ATTR:
        if (s->u.attr.id == TEXI_ATTR_ATOMIC)
            break;
        return texi_stmt_with_body(sk->ctx, s, sink(sk, s->u.attr.body));
    case TEXI_STMT_ALLOCATE:
        if (s->u.alloc.buf->scope != TEXI_SCOPE_LOCAL)
            break;
        return sink_local(sk, s);
    case TEXI_STMT_REALIZE: /* straight-line kinds are leaves (above); others refused */
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_STORE:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    sk->refused = true;
    return NULL;
}

static bool is_thread(const tex_stmt *s)
{
    return texi_stmt_is_thread_loop(s, false);
}

typedef struct {
    tex_ctx *ctx;
    int rc;
} walk;

/* Innermost thread loops, rewritten when sink() moves them inward and
 * vectorizes some leaf. */
static tex_stmt *visit(tex_stmt *s, void *ud)
{
    walk *w = ud;
    if (w->rc || !is_thread(s) || texi_stmt_any(s->u.loop.body, is_thread))
        return NULL;
    sinker sk = {.ctx = w->ctx, .loop = s};
    tex_stmt *r = sink(&sk, s->u.loop.body);
    if (!r && !sk.refused)
        w->rc = tex_errcode(w->ctx) ? tex_errcode(w->ctx) : TEX_ENOMEM;
    return r && sk.n_vector ? r : s;
}

int texi_pass_gpu_threads(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    walk w = {lw->ctx, 0};
    tex_stmt *r = texi_stmt_mutate(lw->ctx, in, visit, NULL, &w);
    if (w.rc)
        return w.rc;
    return texi_pass_result(lw, r, out);
}
