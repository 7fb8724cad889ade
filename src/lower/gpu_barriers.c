/*
 * Pass gpu_barriers (CPU tail, before gpu_to_cpu): barriers that separate
 * no cross-thread accesses are removed, and shared buffers each thread
 * touches only at its own element become per-thread scalars.
 *
 * For each outermost thread nest (a thread loop not inside another) with a
 * barrier inside, the buffers stored inside it, other than LOCAL ones, are
 * examined. Such a buffer is thread-owned when every LOAD and STORE of it
 * in the nest is at one and the same index E (structurally equal), E uses
 * no variable bound inside the nest other than the thread loops' own, and
 * E is injective in the threads: linear in every thread variable whose
 * loop has an extent other than 1, those extents constant, and, taken by
 * increasing |coefficient|, each coefficient at least the previous one
 * times the previous extent (so two threads never share an element).
 * When every stored buffer is thread-owned, no thread reads or overwrites
 * what another wrote, so every barrier of the nest is removed (unless one
 * is under thread-divergent control flow, which gpu_to_cpu refuses): barrier
 * fission has nothing to split, and the nest stays one loop nest that
 * gpu_threads may vectorize.
 *
 * Promotion: a SHARED allocation whose body is exactly one such nest and
 * whose buffer is thread-owned there is rewritten as a one-element LOCAL
 * buffer allocated inside the innermost thread loop, E becoming 0 (the
 * thread's own register; the C compiler keeps a local scalar in one).
 * Only buffers whose every access is inside the nest are promoted.
 * Read-only buffers never conflict; nothing else is changed.
 */
#include "lower/lower.h"

#define MAX_THREAD_VARS 3
#define MAX_BOUND 64

typedef struct {
    const tex_stmt *loops[MAX_THREAD_VARS]; /* the nest's thread loops */
    int n_loops;
    const tex_expr *bound[MAX_BOUND]; /* other variables bound inside the nest */
    int n_bound;
    bool overflow;
} nest_vars;

static bool is_thread(const tex_stmt *s)
{
    return texi_stmt_is_thread_loop(s, false);
}

/* Records the variables the nest binds. */
static bool collect_vars(const tex_stmt *s, void *ud)
{
    nest_vars *nv = ud;
    const tex_expr *v = NULL;
    if (is_thread(s)) {
        bool seen = false;
        for (int i = 0; i < nv->n_loops; i++)
            seen |= nv->loops[i]->u.loop.var == s->u.loop.var;
        if (!seen && nv->n_loops < MAX_THREAD_VARS)
            nv->loops[nv->n_loops++] = s;
        else if (!seen)
            nv->overflow = true;
        return true;
    }
    if (s->kind == TEXI_STMT_FOR)
        v = s->u.loop.var;
    else if (s->kind == TEXI_STMT_LET)
        v = s->u.let.var;
    if (v && nv->n_bound < MAX_BOUND)
        nv->bound[nv->n_bound++] = v;
    else if (v)
        nv->overflow = true;
    return true;
}

/* Whether E is injective in the nest's threads (file comment). */
static bool injective(const nest_vars *nv, tex_expr *e)
{
    int64_t coef[MAX_THREAD_VARS], ext[MAX_THREAD_VARS];
    int n = 0;
    for (int i = 0; i < nv->n_loops; i++) {
        const tex_stmt *l = nv->loops[i];
        int64_t c, x;
        if (!texi_linear_in(e, l->u.loop.var, &c) || !texi_expr_is_int_const(l->u.loop.extent, &x))
            return false;
        if (x == 1)
            continue;
        if (c == 0)
            return false;
        coef[n] = c < 0 ? -c : c;
        ext[n++] = x;
    }
    for (int i = 0; i < n; i++) /* selection sort by |coefficient| */
        for (int j = i + 1; j < n; j++)
            if (coef[j] < coef[i]) {
                int64_t t = coef[i], u = ext[i];
                coef[i] = coef[j], ext[i] = ext[j];
                coef[j] = t, ext[j] = u;
            }
    for (int i = 1; i < n; i++)
        if (coef[i] < coef[i - 1] * ext[i - 1])
            return false;
    return true;
}

typedef struct {
    const nest_vars *nv;
    const void *key; /* the buffer examined */
    tex_expr *index; /* its first index met */
    bool owned;
} ownership;

static void see_index(ownership *o, tex_expr *idx)
{
    if (!o->owned)
        return;
    if (o->index) {
        o->owned = texi_expr_equal(o->index, idx);
        return;
    }
    o->index = idx;
    for (int i = 0; i < o->nv->n_bound; i++)
        if (texi_expr_uses_var(idx, o->nv->bound[i]))
            o->owned = false;
    o->owned = o->owned && injective(o->nv, idx);
}

static bool see_load(tex_expr *e, void *ud)
{
    ownership *o = ud;
    if (e->kind == TEXI_EXPR_LOAD && texi_buffer_key(e->u.load.buf) == o->key)
        see_index(o, e->u.load.index);
    return o->owned;
}

static bool see_access(const tex_stmt *s, void *ud)
{
    ownership *o = ud;
    if (s->kind == TEXI_STMT_STORE && texi_buffer_key(s->u.store.buf) == o->key)
        see_index(o, s->u.store.index);
    if (s->kind == TEXI_STMT_INTRIN)
        o->owned = false;
    texi_stmt_visit_exprs(s, see_load, o);
    return o->owned;
}

/* Whether buffer b is thread-owned in nest s; *index: its one index. */
static bool owned(const nest_vars *nv, const tex_stmt *s, const texi_buffer *b, tex_expr **index)
{
    ownership o = {nv, texi_buffer_key(b), NULL, true};
    texi_stmt_visit(s, see_access, &o);
    *index = o.index;
    return o.owned;
}

typedef struct {
    const nest_vars *nv;
    const tex_stmt *nest;
    bool all_owned;
} store_check;

/* Whether e uses a thread variable of the nest. */
static bool thread_dependent(const nest_vars *nv, const tex_expr *e)
{
    for (int i = 0; i < nv->n_loops; i++)
        if (texi_expr_uses_var(e, nv->loops[i]->u.loop.var))
            return true;
    return false;
}

/* A barrier under thread-divergent control flow (undefined on a GPU) is
 * left for gpu_to_cpu to refuse. */
static bool divergent(const store_check *sc, const tex_stmt *s)
{
    if (s->kind == TEXI_STMT_IF)
        return thread_dependent(sc->nv, s->u.ifs.cond) && texi_stmt_has_barrier(s);
    if (s->kind == TEXI_STMT_FOR && !is_thread(s))
        return (thread_dependent(sc->nv, s->u.loop.min) ||
                thread_dependent(sc->nv, s->u.loop.extent)) &&
               texi_stmt_has_barrier(s);
    return false;
}

static bool check_store(const tex_stmt *s, void *ud)
{
    store_check *sc = ud;
    if (divergent(sc, s))
        sc->all_owned = false;
    tex_expr *idx;
    if (s->kind == TEXI_STMT_STORE && s->u.store.buf->scope != TEXI_SCOPE_LOCAL &&
        !owned(sc->nv, sc->nest, s->u.store.buf, &idx))
        sc->all_owned = false;
    if (s->kind == TEXI_STMT_INTRIN || texi_attr_is(s, TEXI_ATTR_ATOMIC))
        sc->all_owned = false;
    return sc->all_owned;
}

/* The variables of nest s; false when there are too many to track. */
static bool nest_vars_of(const tex_stmt *s, nest_vars *nv)
{
    *nv = (nest_vars){.n_loops = 0};
    texi_stmt_visit(s, collect_vars, nv);
    return !nv->overflow;
}

static bool barrier_free_nest(const tex_stmt *s)
{
    nest_vars nv;
    if (!nest_vars_of(s, &nv))
        return false;
    store_check sc = {&nv, s, true};
    texi_stmt_visit(s, check_store, &sc);
    return sc.all_owned;
}

static tex_stmt *drop_barrier(tex_stmt *s, void *ud)
{
    return s->kind == TEXI_STMT_BARRIER ? texi_seq_new(ud, 0, NULL) : NULL;
}

typedef struct {
    tex_ctx *ctx;
    int rc;
} walk;

typedef struct {
    walk *w;
    const void *key;
    texi_buffer *to;
    tex_expr *zero;
} promotion;

static tex_expr *promote_load(tex_expr *e, void *ud)
{
    promotion *p = ud;
    if (e->kind != TEXI_EXPR_LOAD || texi_buffer_key(e->u.load.buf) != p->key)
        return NULL;
    tex_expr *r = texi_load_new(p->to, p->zero);
    if (!r)
        p->w->rc = TEX_ENOMEM;
    return r ? r : e;
}

static tex_stmt *promote_store(tex_stmt *s, void *ud)
{
    promotion *p = ud;
    if (s->kind != TEXI_STMT_STORE || texi_buffer_key(s->u.store.buf) != p->key)
        return NULL;
    tex_expr *v = texi_expr_mutate(s->u.store.value, promote_load, p);
    tex_stmt *r = v ? texi_store_new(p->w->ctx, p->to, p->zero, v) : NULL;
    if (!r)
        p->w->rc = TEX_ENOMEM;
    return r ? r : s;
}

/* The innermost thread loop of chain s with its body under ALLOCATE to. */
static tex_stmt *alloc_inside(tex_ctx *ctx, tex_stmt *s, texi_buffer *to)
{
    tex_stmt *body = s->u.loop.body;
    if (is_thread(body))
        return texi_stmt_with_body(ctx, s, alloc_inside(ctx, body, to));
    return texi_stmt_with_body(ctx, s, texi_allocate_new(ctx, to, body));
}

/* Whether s is a chain of directly nested thread loops around a body
 * without thread loops (so a buffer allocated in that body is per thread). */
static bool thread_chain(const tex_stmt *s)
{
    while (is_thread(s->u.loop.body))
        s = s->u.loop.body;
    return !texi_stmt_any(s->u.loop.body, is_thread);
}

/* SHARED allocation s around a barrier-free nest, as a per-thread scalar
 * when its buffer is thread-owned there; NULL to leave it. */
static tex_stmt *promote(walk *w, tex_stmt *s)
{
    tex_stmt *nest = s->u.alloc.body;
    nest_vars nv;
    tex_expr *idx;
    if (s->u.alloc.buf->scope != TEXI_SCOPE_SHARED || !is_thread(nest) || !thread_chain(nest) ||
        !nest_vars_of(nest, &nv) || !owned(&nv, nest, s->u.alloc.buf, &idx) || !idx)
        return NULL;
    const texi_buffer *b = s->u.alloc.buf;
    tex_expr *one = texi_int_imm(w->ctx, TEX_I32, 1);
    texi_buffer *to =
        one ? texi_buffer_new(w->ctx, b->name, b->dtype, TEXI_SCOPE_LOCAL, 1, &one) : NULL;
    promotion p = {w, texi_buffer_key(b), to, texi_int_imm(w->ctx, idx->dtype, 0)};
    if (!to || !p.zero)
        return NULL;
    tex_stmt *body = texi_stmt_mutate(w->ctx, nest, promote_store, promote_load, &p);
    return body && !w->rc ? alloc_inside(w->ctx, body, to) : NULL;
}

/* Outermost thread nests: barriers dropped when every stored buffer is
 * thread-owned; shared allocations around such nests promoted. */
static tex_stmt *visit(tex_stmt *s, void *ud)
{
    walk *w = ud;
    if (w->rc)
        return NULL;
    if (s->kind == TEXI_STMT_ALLOCATE && is_thread(s->u.alloc.body) &&
        texi_stmt_has_barrier(s->u.alloc.body) && barrier_free_nest(s->u.alloc.body)) {
        tex_stmt *nest = texi_stmt_mutate(w->ctx, s->u.alloc.body, drop_barrier, NULL, w->ctx);
        tex_stmt *kept = nest ? texi_stmt_with_body(w->ctx, s, nest) : NULL;
        tex_stmt *r = kept ? promote(w, kept) : NULL;
        if (!kept)
            w->rc = TEX_ENOMEM;
        return r ? r : kept;
    }
    if (!is_thread(s))
        return NULL;
    if (!texi_stmt_has_barrier(s) || !barrier_free_nest(s))
        return s;
    tex_stmt *r = texi_stmt_mutate(w->ctx, s, drop_barrier, NULL, w->ctx);
    if (!r)
        w->rc = TEX_ENOMEM;
    return r ? r : s;
}

int texi_pass_gpu_barriers(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    walk w = {lw->ctx, 0};
    tex_stmt *r = texi_stmt_has_barrier(in) ? texi_stmt_mutate(lw->ctx, in, visit, NULL, &w) : in;
    if (w.rc)
        return w.rc;
    return texi_pass_result(lw, r, out);
}
