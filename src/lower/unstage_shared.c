/*
 * Pass unstage_shared (CPU tail, first): shared-memory copies of read-only
 * inputs are dropped and their readers read the input itself. On a GPU a
 * block stages a tile of an input in shared memory so that its threads read
 * it from there; on the CPU the caches already stage it, so the copy is
 * pure overhead (a loop over a fused index, divided back into rows and
 * columns) unless it changes the layout the readers' vector loops need.
 *
 * A SHARED allocation of buffer S is unstaged when:
 *   - no thread loop encloses it: there, its barriers are what makes the
 *     block's threads run the loops inside the thread loop together
 *     (barrier fission); without them each thread would run those loops
 *     alone, losing the tile's reuse across threads;
 *   - its uses of S meet in one sequence Q, reached from the allocation
 *     through no loop and no condition (so every execution of Q writes S
 *     afresh): the items of Q that store S come before those that load it,
 *     no item does both, and S has no other use (no intrinsic argument);
 *   - every store is S[e] = G[g], G a global parameter buffer of S's dtype
 *     that the function never writes, and solving e = h for the copy's
 *     variables (those of loops inside the store items and of thread loops)
 *     turns g into F(h), simplified under the ranges at the store: solved
 *     for one variable of coefficient 1 (the others cancel, as in a fused
 *     and split fetch), else for all of them as the digits of a row-major
 *     tile (solve_digits). F must use no variable bound inside the store
 *     items, no thread-loop variable and no LET variable (only outer
 *     non-thread loops and free sizes), and all stores must give one F;
 *   - every load S[h] becomes G[F(h)], simplified under the ranges at the
 *     load, with no more divisions or remainders than h and, inside a thread
 *     loop, the innermost thread variable's coefficient unchanged (the
 *     readers' vector loops keep their stride: a transposing tile stays).
 * The stores then go (an empty statement), ATTR double_buffer of S too, and
 * remove_noops drops the emptied loops and the unused allocation. Anything
 * else leaves the allocation as it is. Correct reads are unchanged: a
 * reader of S[h] read the value G[F(h)] its writer stored in this execution
 * of Q, and G does not change.
 */
#include "lower/lower.h"

typedef struct {
    tex_ctx *ctx;
    texi_lower *lw;
    tex_stmt *root;  /* the function body */
    texi_range *env; /* enclosing loops, outermost first */
    bool *thread;    /* per env entry: a thread loop */
    int n_env, cap_env, cap_thread;
    bool changed, failed;
} unstager;

static int push(unstager *u, const tex_stmt *loop)
{
    texi_range *env = texi_grow(u->ctx, u->env, u->n_env, &u->cap_env, sizeof *env, "unstage");
    if (env)
        u->env = env;
    bool *th = texi_grow(u->ctx, u->thread, u->n_env, &u->cap_thread, sizeof *th, "unstage");
    if (th)
        u->thread = th;
    if (!env || !th)
        return TEX_ENOMEM;
    u->env[u->n_env] = (texi_range){loop->u.loop.var, loop->u.loop.min, loop->u.loop.extent};
    u->thread[u->n_env++] = texi_stmt_is_thread_loop(loop, true);
    return 0;
}

/* Loop s with its body rewritten by rec(ud, body) under the loop's range;
 * s itself on failure (u->failed). */
static tex_stmt *in_loop(unstager *u, tex_stmt *s, tex_stmt *(*rec)(void *, tex_stmt *), void *ud)
{
    int n0 = u->n_env;
    if (push(u, s) < 0) {
        u->failed = true;
        return s;
    }
    tex_stmt *body = rec(ud, s->u.loop.body);
    u->n_env = n0;
    return body ? texi_stmt_with_body(u->ctx, s, body) : s;
}

/* ------------------------------------------------------ who touches what */

typedef struct {
    const void *key;
    int loads, stores, other;
} use_count;

static bool count_load(tex_expr *e, void *ud)
{
    use_count *c = ud;
    if (e->kind == TEXI_EXPR_LOAD && texi_buffer_key(e->u.load.buf) == c->key)
        c->loads++;
    return true;
}

static bool count_stmt(const tex_stmt *s, void *ud)
{
    use_count *c = ud;
    if (s->kind == TEXI_STMT_STORE && texi_buffer_key(s->u.store.buf) == c->key)
        c->stores++;
    else if (s->kind == TEXI_STMT_INTRIN)
        for (int i = 0; i < s->u.intrin.n_args; i++)
            c->other +=
                s->u.intrin.args[i].buf && texi_buffer_key(s->u.intrin.args[i].buf) == c->key;
    texi_stmt_visit_exprs(s, count_load, c);
    return true;
}

/* The loads, stores and intrinsic arguments of buffer b in s. */
static use_count uses_of(const tex_stmt *s, const texi_buffer *b)
{
    use_count c = {texi_buffer_key(b), 0, 0, 0};
    texi_stmt_visit(s, count_stmt, &c);
    return c;
}

/* Whether G is a global parameter buffer the function never writes. */
static bool read_only_input(const unstager *u, const texi_buffer *g)
{
    const texi_lower *lw = u->lw;
    bool param = false;
    for (int i = 0; i < lw->func->n_params; i++)
        param |= lw->func->params[i].buf &&
                 texi_buffer_key(lw->func->params[i].buf) == texi_buffer_key(g);
    use_count c = uses_of(u->root, g);
    return param && g->scope == TEXI_SCOPE_GLOBAL && c.stores == 0 && c.other == 0;
}

typedef struct {
    const tex_expr **vars;
    int n, cap;
    tex_ctx *ctx;
    bool failed;
} var_list;

static bool collect_bound(const tex_stmt *s, void *ud)
{
    var_list *l = ud;
    const tex_expr *v = s->kind == TEXI_STMT_FOR   ? s->u.loop.var
                        : s->kind == TEXI_STMT_LET ? s->u.let.var
                                                   : NULL;
    if (!v || l->failed)
        return !l->failed;
    const tex_expr **vars = texi_grow(l->ctx, l->vars, l->n, &l->cap, sizeof *vars, "unstage");
    if (!vars) {
        l->failed = true;
        return false;
    }
    l->vars = vars;
    l->vars[l->n++] = v;
    return true;
}

/* ----------------------------------------------------- one shared buffer */

typedef struct {
    unstager *u;
    texi_buffer *s; /* the shared buffer */
    texi_buffer *g; /* the input it copies */
    tex_expr *h;    /* F's argument: an index of S */
    tex_expr *f;    /* G's index as a function of h */
    var_list bound; /* every variable a FOR or LET of the function binds */
    int env_at_q;   /* env entries enclosing Q */
    bool ok;
} staging;

/* Whether F may use variable v: a loop enclosing Q (none is a thread
 * loop: unstage refuses those), or a variable no loop or let of the
 * function binds. */
static bool allowed_var(tex_expr *e, void *ud)
{
    staging *st = ud;
    if (e->kind != TEXI_EXPR_VAR || e == st->h)
        return true;
    for (int i = 0; i < st->env_at_q; i++)
        if (st->u->env[i].var == e)
            return true;
    for (int i = 0; i < st->bound.n; i++)
        st->ok &= st->bound.vars[i] != e;
    return true;
}

/* NULL-propagating conversion and binary node. */
static tex_expr *as(tex_expr *e, tex_dtype t)
{
    return e ? texi_convert(e, t) : NULL;
}

static tex_expr *bin(enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    return a && b ? texi_binary(kind, a, b) : NULL;
}

/* Env entry i may be solved for when it is a loop inside the store items. */
static bool solvable(const staging *st, int i)
{
    return i >= st->env_at_q;
}

/* G's index g with vars[0 .. n) replaced by values (functions of h),
 * simplified; NULL when it still reads a variable F may not use. */
static tex_expr *map_of(staging *st, tex_expr *g, int n, tex_expr *const vars[],
                        tex_expr *const values[])
{
    unstager *u = st->u;
    tex_expr *r = texi_substitute(g, n, vars, values);
    r = r ? texi_simplify(r, u->n_env, u->env) : NULL;
    if (!r) {
        u->failed = true;
        return NULL;
    }
    st->ok = true;
    texi_expr_visit(r, allowed_var, st);
    return st->ok ? r : NULL;
}

/* e = h solved for one solvable variable of coefficient 1 (the others
 * must cancel out of G's index g, as in a fused-and-split copy). */
static tex_expr *solve_one(staging *st, tex_expr *e, tex_expr *g)
{
    unstager *u = st->u;
    for (int i = u->n_env - 1; i >= 0; i--) {
        int64_t c;
        tex_expr *var = u->env[i].var, *zero = texi_int_imm(u->ctx, var->dtype, 0);
        if (!zero || !solvable(st, i) || !texi_linear_in(e, var, &c) || c != 1)
            continue;
        tex_expr *rest = as(texi_substitute(e, 1, &var, &zero), st->h->dtype);
        tex_expr *solved = as(bin(TEXI_EXPR_SUB, st->h, rest), var->dtype);
        if (!solved) {
            u->failed = true;
            return NULL;
        }
        tex_expr *f = map_of(st, g, 1, &var, &solved);
        if (f || u->failed)
            return f;
    }
    return NULL;
}

enum { MAX_DIGITS = 8 };

/* e = h solved for all its solvable variables at once when their
 * coefficients are a mixed radix (a row-major tile, maybe padded): by
 * increasing coefficient c_k, each divides the next, c_{k+1} >= c_k *
 * extent_k, every loop from 0 with a constant extent; then v_k =
 * (h - base) / c_k % (c_{k+1} / c_k), the last without the remainder. */
static tex_expr *solve_digits(staging *st, tex_expr *e, tex_expr *g)
{
    unstager *u = st->u;
    tex_expr *vars[MAX_DIGITS], *values[MAX_DIGITS], *zeros[MAX_DIGITS];
    int64_t coef[MAX_DIGITS], ext[MAX_DIGITS];
    int n = 0;
    for (int i = 0; i < u->n_env; i++) {
        int64_t c, x, m;
        tex_expr *var = u->env[i].var;
        if (!solvable(st, i) || !texi_expr_uses_var(e, var))
            continue;
        if (n == MAX_DIGITS || !texi_linear_in(e, var, &c) || c <= 0 ||
            !texi_expr_is_int_const(u->env[i].extent, &x) ||
            !texi_expr_is_int_const(u->env[i].min, &m) || m != 0)
            return NULL;
        zeros[n] = texi_int_imm(u->ctx, var->dtype, 0);
        if (!zeros[n]) {
            u->failed = true;
            return NULL;
        }
        vars[n] = var, coef[n] = c, ext[n++] = x;
    }
    for (int i = 0; i < n; i++) /* insertion sort by coefficient */
        for (int j = i; j > 0 && coef[j] < coef[j - 1]; j--) {
            tex_expr *t = vars[j];
            int64_t c = coef[j], x = ext[j];
            vars[j] = vars[j - 1], coef[j] = coef[j - 1], ext[j] = ext[j - 1];
            vars[j - 1] = t, coef[j - 1] = c, ext[j - 1] = x;
        }
    tex_dtype t = st->h->dtype;
    tex_expr *rel = bin(TEXI_EXPR_SUB, st->h, as(texi_substitute(e, n, vars, zeros), t));
    for (int k = 0; k < n && rel; k++) {
        if (k + 1 < n && (coef[k + 1] % coef[k] != 0 || coef[k + 1] < coef[k] * ext[k]))
            return NULL;
        tex_expr *d = bin(TEXI_EXPR_FLOORDIV, rel, texi_int_imm(u->ctx, t, coef[k]));
        if (k + 1 < n)
            d = bin(TEXI_EXPR_FLOORMOD, d, texi_int_imm(u->ctx, t, coef[k + 1] / coef[k]));
        values[k] = as(d, vars[k]->dtype);
        if (!values[k])
            rel = NULL;
    }
    if (!rel) {
        u->failed = true;
        return NULL;
    }
    return n ? map_of(st, g, n, vars, values) : NULL;
}

/* G's index for the store `s` as a function of S's index h; NULL when
 * the store does not have that form. */
static tex_expr *store_map(staging *st, const tex_stmt *s)
{
    tex_expr *v = s->u.store.value, *e = s->u.store.index;
    if (v->kind != TEXI_EXPR_LOAD || v->lanes != 1 || e->lanes != 1 ||
        v->u.load.buf->dtype != st->s->dtype)
        return NULL;
    if (st->g && texi_buffer_key(st->g) != texi_buffer_key(v->u.load.buf))
        return NULL;
    st->g = v->u.load.buf;
    if (!st->h)
        st->h = texi_var_new(st->u->ctx, "h", e->dtype);
    if (!st->h) {
        st->u->failed = true;
        return NULL;
    }
    tex_expr *f = solve_one(st, e, v->u.load.index);
    return f || st->u->failed ? f : solve_digits(st, e, v->u.load.index);
}

static tex_stmt *drop_stores(tex_stmt *s, void *ud);

/* A store item of Q with its stores of S gone; checks each store's map. */
static tex_stmt *unstage_stores(staging *st, tex_stmt *item)
{
    unstager *u = st->u;
    tex_stmt *r = texi_stmt_mutate(u->ctx, item, drop_stores, NULL, st);
    if (!r)
        u->failed = true;
    return r;
}

static tex_stmt *stores_rec(void *ud, tex_stmt *body)
{
    return unstage_stores(ud, body);
}

static tex_stmt *drop_stores(tex_stmt *s, void *ud)
{
    staging *st = ud;
    unstager *u = st->u;
    if (!st->ok || u->failed)
        return s;
    if (s->kind == TEXI_STMT_FOR)
        return in_loop(u, s, stores_rec, st);
    if (s->kind != TEXI_STMT_STORE || texi_buffer_key(s->u.store.buf) != texi_buffer_key(st->s))
        return NULL;
    tex_expr *f = store_map(st, s);
    if (!f || (st->f && !texi_expr_equal(st->f, f))) {
        st->ok = false;
        return s;
    }
    st->f = f;
    return texi_seq_new(u->ctx, 0, NULL);
}

static int count_divisions(tex_expr *e)
{
    int n = 0;
    if (!e)
        return 0;
    if (e->kind == TEXI_EXPR_FLOORDIV || e->kind == TEXI_EXPR_FLOORMOD)
        n++;
    if (texi_expr_is_binary(e))
        return n + count_divisions(e->u.bin.a) + count_divisions(e->u.bin.b);
    if (e->kind == TEXI_EXPR_CAST)
        return n + count_divisions(e->u.un.a);
    if (e->kind == TEXI_EXPR_SELECT)
        return n + count_divisions(e->u.sel.cond) + count_divisions(e->u.sel.t) +
               count_divisions(e->u.sel.f);
    return n + (e->kind == TEXI_EXPR_LOAD ? count_divisions(e->u.load.index) : 0);
}

/* Load S[h] as G[F(h)] under the current ranges; NULL (st->ok false) when
 * that costs the readers (file comment). */
static tex_expr *direct_load(staging *st, tex_expr *load)
{
    unstager *u = st->u;
    tex_expr *h = load->u.load.index;
    if (!st->f || load->lanes != 1 || h->lanes != 1 || texi_expr_uses_buffer(h, st->s))
        return NULL;
    tex_expr *hv = texi_convert(h, st->h->dtype);
    tex_expr *idx = hv ? texi_substitute(st->f, 1, &st->h, &hv) : NULL;
    idx = idx ? texi_simplify(idx, u->n_env, u->env) : NULL;
    if (!idx) {
        u->failed = true;
        return NULL;
    }
    if (count_divisions(idx) > count_divisions(h))
        return NULL;
    for (int i = u->n_env - 1; i >= st->env_at_q; i--)
        if (u->thread[i]) {
            int64_t before, after;
            if (!texi_linear_in(h, u->env[i].var, &before) ||
                !texi_linear_in(idx, u->env[i].var, &after) || before != after)
                return NULL;
            break;
        }
    return texi_load_new(st->g, idx);
}

static tex_expr *read_input(tex_expr *e, void *ud)
{
    staging *st = ud;
    if (!st->ok || st->u->failed || e->kind != TEXI_EXPR_LOAD ||
        texi_buffer_key(e->u.load.buf) != texi_buffer_key(st->s))
        return NULL;
    tex_expr *r = direct_load(st, e);
    if (!r)
        st->ok = false;
    return r ? r : e;
}

static tex_stmt *read_scoped(tex_stmt *s, void *ud);

/* A load item of Q with its loads of S reading G. */
static tex_stmt *unstage_loads(staging *st, tex_stmt *item)
{
    tex_stmt *r = texi_stmt_mutate(st->u->ctx, item, read_scoped, read_input, st);
    if (!r)
        st->u->failed = true;
    return r;
}

static tex_stmt *read_scoped(tex_stmt *s, void *ud)
{
    staging *st = ud;
    unstager *u = st->u;
    if (s->kind != TEXI_STMT_FOR || !st->ok || u->failed)
        return NULL;
    tex_expr *min = texi_expr_mutate(s->u.loop.min, read_input, st);
    tex_expr *ext = texi_expr_mutate(s->u.loop.extent, read_input, st);
    int n0 = u->n_env;
    if (!min || !ext || push(u, s) < 0) {
        u->failed = true;
        return s;
    }
    tex_stmt *body = unstage_loads(st, s->u.loop.body);
    u->n_env = n0;
    return body ? texi_for_new(u->ctx, s->u.loop.var, min, ext, s->u.loop.for_kind,
                               s->u.loop.thread_tag, body)
                : s;
}

/* Q (a SEQ) with S unstaged, or Q itself when it cannot be. */
static tex_stmt *unstage_seq(staging *st, tex_stmt *q)
{
    unstager *u = st->u;
    int n = q->u.seq.n, last_store = -1, first_load = n;
    for (int i = 0; i < n; i++) {
        use_count c = uses_of(q->u.seq.items[i], st->s);
        if (c.other || (c.loads && c.stores))
            return q;
        if (c.stores)
            last_store = i;
        if (c.loads && first_load == n)
            first_load = i;
    }
    if (last_store < 0 || first_load == n || last_store > first_load)
        return q;
    tex_stmt **items = texi_alloc(u->ctx, sizeof *items * (size_t)n, "unstage");
    if (!items) {
        u->failed = true;
        return q;
    }
    st->env_at_q = u->n_env;
    st->ok = true;
    for (int i = 0; i < n && st->ok && !u->failed; i++) {
        tex_stmt *item = q->u.seq.items[i];
        use_count c = uses_of(item, st->s);
        items[i] = c.stores ? unstage_stores(st, item) : c.loads ? unstage_loads(st, item) : item;
        if (i == last_store && st->ok && !read_only_input(u, st->g))
            st->ok = false;
    }
    if (!st->ok || u->failed)
        return q;
    tex_stmt *r = texi_seq_new(u->ctx, n, items);
    if (!r)
        u->failed = true;
    return r ? r : q;
}

/* The path from S's allocation down to Q: SEQs with one item using S,
 * ATTRs and allocations (ATTR double_buffer of S dropped); NULL when the
 * uses do not meet that way (nothing changes). */
static tex_stmt *unstage_path(staging *st, tex_stmt *s)
{
    if (s->kind == TEXI_STMT_SEQ) {
        int only = -1, n = s->u.seq.n;
        for (int i = 0; i < n; i++)
            if (texi_stmt_uses_buffer(s->u.seq.items[i], st->s)) {
                if (only >= 0)
                    return unstage_seq(st, s);
                only = i;
            }
        tex_stmt *inner = only >= 0 ? unstage_path(st, s->u.seq.items[only]) : NULL;
        if (!inner || inner == s->u.seq.items[only])
            return s;
        tex_stmt **items = texi_alloc(st->u->ctx, sizeof *items * (size_t)n, "unstage");
        if (!items)
            return NULL;
        for (int i = 0; i < n; i++)
            items[i] = i == only ? inner : s->u.seq.items[i];
        return texi_seq_new(st->u->ctx, n, items);
    }
    bool own_attr = texi_attr_is(s, TEXI_ATTR_DOUBLE_BUFFER) && s->u.attr.value == st->s->data;
    if (s->kind != TEXI_STMT_ALLOCATE && s->kind != TEXI_STMT_ATTR)
        return s;
    if (s->kind == TEXI_STMT_ATTR && !own_attr && s->u.attr.value &&
        texi_expr_uses_buffer(s->u.attr.value, st->s))
        return s;
    tex_stmt *body = texi_stmt_body(s), *inner = unstage_path(st, body);
    if (!inner || inner == body)
        return inner ? s : NULL;
    return own_attr ? inner : texi_stmt_with_body(st->u->ctx, s, inner);
}

/* ------------------------------------------------------------ the walk */

/* Allocation a of a shared buffer with its staging removed, or a. */
static tex_stmt *unstage(unstager *u, tex_stmt *a)
{
    staging st = {.u = u, .s = a->u.alloc.buf, .bound = {.ctx = u->ctx}};
    for (int i = 0; i < u->n_env; i++)
        if (u->thread[i])
            return a;
    texi_stmt_visit(u->root, collect_bound, &st.bound);
    tex_stmt *body = st.bound.failed ? NULL : unstage_path(&st, a->u.alloc.body);
    if (!body)
        u->failed = true;
    if (!body || body == a->u.alloc.body)
        return a;
    u->changed = true;
    return texi_stmt_with_body(u->ctx, a, body);
}

static tex_stmt *walk_pre(tex_stmt *s, void *ud);

static tex_stmt *walk(unstager *u, tex_stmt *s)
{
    tex_stmt *r = u->failed ? NULL : texi_stmt_mutate(u->ctx, s, walk_pre, NULL, u);
    if (!r)
        u->failed = true;
    return r;
}

static tex_stmt *walk_rec(void *ud, tex_stmt *body)
{
    return walk(ud, body);
}

/* Shared allocations tried in program order, the outer first; loops give
 * the ranges. */
static tex_stmt *walk_pre(tex_stmt *s, void *ud)
{
    unstager *u = ud;
    if (u->failed)
        return s;
    if (s->kind == TEXI_STMT_FOR)
        return in_loop(u, s, walk_rec, u);
    if (s->kind != TEXI_STMT_ALLOCATE || s->u.alloc.buf->scope != TEXI_SCOPE_SHARED)
        return NULL;
    tex_stmt *a = unstage(u, s);
    tex_stmt *body = u->failed ? NULL : walk(u, a->u.alloc.body);
    return body ? texi_stmt_with_body(u->ctx, a, body) : s;
}

int texi_pass_unstage_shared(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    unstager u = {.ctx = lw->ctx, .lw = lw, .root = in};
    tex_stmt *r = walk(&u, in);
    if (r && !u.failed && u.changed)
        return texi_pass_remove_noops(lw, r, out);
    return texi_pass_result(lw, u.failed ? NULL : r, out);
}
