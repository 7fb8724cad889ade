/*
 * Generic traversal of expressions and statements: the one place that knows
 * every node's children. Passes supply a callback for the kinds they care
 * about; everything else is rebuilt here only when a child changed, so
 * unchanged subtrees are shared between a pass's input and output.
 *
 * A NULL child result means an allocation failed (recorded in the context by
 * the constructors); it propagates as a NULL result. Rewritten child lists go
 * to a stack buffer (the arena only for long lists), because the constructors
 * copy them: a walk that changes nothing allocates nothing.
 */
#include "ir/ir.h"

#include <assert.h>
#include <stdint.h>

#include <string.h>

/* Child lists up to this length are rewritten into a stack buffer. */
#define SMALL_LIST 8

/* Room for n pointers of size elem: the stack buffer `small` when it is big
 * enough, else arena memory (NULL on ENOMEM, recorded). */
static void *list_space(tex_ctx *ctx, void *small, int n, size_t elem)
{
    return n <= SMALL_LIST ? small : texi_alloc(ctx, elem * (size_t)n, "a rewritten list");
}

/* Rewrites the n expressions of src into dst; true when any changed.
 * *failed is set when a rewrite failed. */
static bool mutate_list(tex_expr **dst, tex_expr *const *src, int n, texi_expr_rewrite_fn pre,
                        void *ud, bool *failed)
{
    bool changed = false;
    for (int i = 0; i < n; i++) {
        dst[i] = texi_expr_mutate(src[i], pre, ud);
        if (!dst[i])
            *failed = true;
        changed |= dst[i] != src[i];
    }
    return changed;
}

static tex_expr *mutate_children(tex_expr *e, texi_expr_rewrite_fn pre, void *ud)
{
    tex_expr *k[3];
    bool failed = false;
    switch (e->kind) {
    case TEXI_EXPR_INT:
    case TEXI_EXPR_FLOAT:
    case TEXI_EXPR_VAR:
        return e;
    TEXI_CASE_BINARY:
        if (!mutate_list(k, (tex_expr *[]){e->u.bin.a, e->u.bin.b}, 2, pre, ud, &failed))
            return e;
        return failed ? NULL : texi_binary(e->kind, k[0], k[1]);
    case TEXI_EXPR_NOT:
    case TEXI_EXPR_CAST:
        if (!mutate_list(k, &e->u.un.a, 1, pre, ud, &failed))
            return e;
        return failed ? NULL : texi_unary(e->kind, e->dtype, k[0]);
    case TEXI_EXPR_BROADCAST:
        if (!mutate_list(k, &e->u.un.a, 1, pre, ud, &failed))
            return e;
        return failed ? NULL : texi_broadcast_new(k[0], e->lanes);
    case TEXI_EXPR_VREDUCE:
        if (!mutate_list(k, &e->u.vred.a, 1, pre, ud, &failed))
            return e;
        return failed ? NULL : texi_vreduce_new(e->u.vred.op, k[0]);
    case TEXI_EXPR_RAMP:
        if (!mutate_list(k, (tex_expr *[]){e->u.ramp.base, e->u.ramp.stride}, 2, pre, ud, &failed))
            return e;
        return failed ? NULL : texi_ramp_new(k[0], k[1], e->lanes);
    case TEXI_EXPR_SELECT:
        if (!mutate_list(k, (tex_expr *[]){e->u.sel.cond, e->u.sel.t, e->u.sel.f}, 3, pre, ud,
                         &failed))
            return e;
        return failed ? NULL : texi_select_new(k[0], k[1], k[2]);
    case TEXI_EXPR_CALL:
        if (!mutate_list(k, e->u.call.args, e->u.call.n_args, pre, ud, &failed))
            return e;
        return failed ? NULL : texi_call_new(e->u.call.op, e->dtype, e->u.call.n_args, k);
    case TEXI_EXPR_ACCESS: {
        int n = e->u.access.n_idx;
        tex_expr *small[SMALL_LIST];
        tex_expr **idx = list_space(e->ctx, small, n, sizeof *idx);
        if (!idx)
            return NULL;
        if (!mutate_list(idx, e->u.access.idx, n, pre, ud, &failed))
            return e;
        return failed ? NULL : texi_access_new(e->u.access.tensor, n, idx);
    }
    case TEXI_EXPR_LOAD: {
        tex_expr *mask = e->u.load.mask;
        if (!mutate_list(k, (tex_expr *[]){e->u.load.index, mask}, mask ? 2 : 1, pre, ud, &failed))
            return e;
        return failed ? NULL : texi_masked_load_new(e->u.load.buf, k[0], mask ? k[1] : NULL);
    }
    case TEXI_EXPR_SEARCH:
        if (!mutate_list(k, (tex_expr *[]){e->u.search.lo, e->u.search.hi, e->u.search.value}, 3,
                         pre, ud, &failed))
            return e;
        return failed ? NULL
                      : texi_search_new(e->u.search.op, e->u.search.tensor, e->u.search.buf, k[0],
                                        k[1], k[2]);
    case TEXI_EXPR_REDUCE: {
        tex_expr *cond = e->u.red.cond;
        int n = cond ? 2 : 1;
        if (!mutate_list(k, (tex_expr *[]){e->u.red.body, cond}, n, pre, ud, &failed))
            return e;
        return failed ? NULL
                      : texi_reduce_new(e->u.red.op, k[0], e->u.red.n_axes, e->u.red.axes,
                                        cond ? k[1] : NULL);
    }
    case TEXI_EXPR_KIND_COUNT:
        break;
    }
    return e;
}

tex_expr *texi_expr_mutate(tex_expr *e, texi_expr_rewrite_fn pre, void *ud)
{
    if (!e)
        return NULL;
    if (pre) {
        tex_expr *r = pre(e, ud);
        if (r)
            return r;
    }
    return mutate_children(e, pre, ud);
}

void texi_expr_visit(tex_expr *e, texi_expr_visit_fn fn, void *ud)
{
    if (!e || !fn(e, ud))
        return;
    switch (e->kind) {
    case TEXI_EXPR_INT:
    case TEXI_EXPR_FLOAT:
    case TEXI_EXPR_VAR:
        return;
    TEXI_CASE_BINARY:
        texi_expr_visit(e->u.bin.a, fn, ud);
        texi_expr_visit(e->u.bin.b, fn, ud);
        return;
    case TEXI_EXPR_NOT:
    case TEXI_EXPR_CAST:
    case TEXI_EXPR_BROADCAST:
        texi_expr_visit(e->u.un.a, fn, ud);
        return;
    case TEXI_EXPR_VREDUCE:
        texi_expr_visit(e->u.vred.a, fn, ud);
        return;
    case TEXI_EXPR_RAMP:
        texi_expr_visit(e->u.ramp.base, fn, ud);
        texi_expr_visit(e->u.ramp.stride, fn, ud);
        return;
    case TEXI_EXPR_SELECT:
        texi_expr_visit(e->u.sel.cond, fn, ud);
        texi_expr_visit(e->u.sel.t, fn, ud);
        texi_expr_visit(e->u.sel.f, fn, ud);
        return;
    case TEXI_EXPR_CALL:
        for (int i = 0; i < e->u.call.n_args; i++)
            texi_expr_visit(e->u.call.args[i], fn, ud);
        return;
    case TEXI_EXPR_ACCESS:
        for (int i = 0; i < e->u.access.n_idx; i++)
            texi_expr_visit(e->u.access.idx[i], fn, ud);
        return;
    case TEXI_EXPR_LOAD:
        texi_expr_visit(e->u.load.index, fn, ud);
        texi_expr_visit(e->u.load.mask, fn, ud);
        return;
    case TEXI_EXPR_SEARCH:
        texi_expr_visit(e->u.search.lo, fn, ud);
        texi_expr_visit(e->u.search.hi, fn, ud);
        texi_expr_visit(e->u.search.value, fn, ud);
        return;
    case TEXI_EXPR_REDUCE:
        texi_expr_visit(e->u.red.body, fn, ud);
        texi_expr_visit(e->u.red.cond, fn, ud);
        return;
    case TEXI_EXPR_KIND_COUNT:
        return;
    }
}

typedef struct {
    int n;
    tex_expr *const *vars;
    tex_expr *const *values;
} substitution;

static tex_expr *substitute_var(tex_expr *e, void *ud)
{
    const substitution *s = ud;
    if (e->kind != TEXI_EXPR_VAR)
        return NULL;
    for (int i = 0; i < s->n; i++)
        if (s->vars[i] == e)
            return s->values[i];
    return e; /* a variable has no children: stop here */
}

tex_expr *texi_substitute(tex_expr *e, int n, tex_expr *const vars[], tex_expr *const values[])
{
    substitution s = {n, vars, values};
    return n ? texi_expr_mutate(e, substitute_var, &s) : e;
}

/* ----------------------------------------------------------- statements */

typedef struct {
    tex_ctx *ctx;
    texi_stmt_rewrite_fn stmt_pre;
    texi_expr_rewrite_fn expr_pre;
    void *ud;
    bool failed;
} stmt_walk;

static tex_expr *walk_expr(stmt_walk *w, tex_expr *e)
{
    if (!e || !w->expr_pre)
        return e;
    tex_expr *r = texi_expr_mutate(e, w->expr_pre, w->ud);
    if (!r)
        w->failed = true;
    return r;
}

/* Rewrites the n expressions of src into dst; true when one changed. */
static bool walk_exprs(stmt_walk *w, tex_expr **dst, tex_expr *const *src, int n)
{
    bool changed = false;
    for (int i = 0; i < n; i++) {
        dst[i] = walk_expr(w, src[i]);
        changed |= dst[i] != src[i];
    }
    return changed;
}

static tex_stmt *walk_stmt(stmt_walk *w, tex_stmt *s);

/* Rewrites the expressions of one intrinsic argument into *out; true when one changed. */
static bool walk_intrin_arg(stmt_walk *w, const texi_intrin_arg *a, texi_intrin_arg *out)
{
    *out = *a;
    bool changed = false;
    tex_expr **lists[2] = {a->mins, a->strides}, **copies[2] = {NULL, NULL};
    int lens[2] = {a->mins ? a->tensor_ndim : 0, a->strides ? a->ndim : 0};
    for (int l = 0; l < 2; l++) {
        if (!lens[l])
            continue;
        copies[l] = texi_alloc(w->ctx, (size_t)lens[l] * sizeof **copies, "intrinsic argument");
        if (!copies[l]) {
            w->failed = true;
            return false;
        }
        changed |= walk_exprs(w, copies[l], lists[l], lens[l]);
    }
    out->mins = a->mins ? copies[0] : NULL;
    out->strides = a->strides ? copies[1] : NULL;
    out->offset = walk_expr(w, a->offset);
    return changed || out->offset != a->offset;
}

static tex_stmt *walk_intrin(stmt_walk *w, tex_stmt *s)
{
    int n = s->u.intrin.n_args;
    texi_intrin_arg *args = texi_alloc(w->ctx, (size_t)n * sizeof *args, "intrinsic arguments");
    if (!args)
        return NULL;
    bool changed = false;
    for (int i = 0; i < n && !w->failed; i++)
        changed |= walk_intrin_arg(w, &s->u.intrin.args[i], &args[i]);
    if (w->failed)
        return NULL;
    return changed ? texi_intrin_new(w->ctx, s->u.intrin.intrin, s->u.intrin.fn, n, args) : s;
}

static tex_stmt *walk_children(stmt_walk *w, tex_stmt *s)
{
    tex_ctx *ctx = w->ctx;
    switch (s->kind) {
    case TEXI_STMT_FOR: {
        tex_expr *min = walk_expr(w, s->u.loop.min), *ext = walk_expr(w, s->u.loop.extent);
        tex_stmt *body = walk_stmt(w, s->u.loop.body);
        if (w->failed)
            return NULL;
        if (min == s->u.loop.min && ext == s->u.loop.extent && body == s->u.loop.body)
            return s;
        return texi_for_new(ctx, s->u.loop.var, min, ext, s->u.loop.for_kind, s->u.loop.thread_tag,
                            body);
    }
    case TEXI_STMT_PROVIDE: {
        int n = s->u.provide.n_idx;
        tex_expr *small[SMALL_LIST];
        tex_expr **idx = list_space(ctx, small, n, sizeof *idx);
        if (!idx)
            return NULL;
        bool changed = walk_exprs(w, idx, s->u.provide.idx, n);
        tex_expr *value = walk_expr(w, s->u.provide.value);
        if (w->failed)
            return NULL;
        if (!changed && value == s->u.provide.value)
            return s;
        return texi_provide_new(ctx, s->u.provide.tensor, n, idx, value);
    }
    case TEXI_STMT_REALIZE: {
        int n = s->u.realize.ndim;
        tex_expr *small[SMALL_LIST];
        tex_expr **mins = list_space(ctx, small, 2 * n, sizeof *mins);
        if (!mins)
            return NULL;
        tex_expr **exts = mins + n;
        bool changed = false;
        for (int i = 0; i < n; i++) {
            mins[i] = walk_expr(w, s->u.realize.mins[i]);
            exts[i] = walk_expr(w, s->u.realize.extents[i]);
            changed |= mins[i] != s->u.realize.mins[i] || exts[i] != s->u.realize.extents[i];
        }
        tex_stmt *body = walk_stmt(w, s->u.realize.body);
        if (w->failed)
            return NULL;
        if (!changed && body == s->u.realize.body)
            return s;
        return texi_realize_new(ctx, s->u.realize.tensor, n, mins, exts, s->u.realize.scope, body);
    }
    case TEXI_STMT_STORE: {
        tex_expr *index = walk_expr(w, s->u.store.index), *value = walk_expr(w, s->u.store.value);
        tex_expr *mask = walk_expr(w, s->u.store.mask);
        if (w->failed)
            return NULL;
        if (index == s->u.store.index && value == s->u.store.value && mask == s->u.store.mask)
            return s;
        return texi_masked_store_new(ctx, s->u.store.buf, index, value, mask);
    }
    case TEXI_STMT_ALLOCATE: {
        tex_stmt *body = walk_stmt(w, s->u.alloc.body);
        if (w->failed)
            return NULL;
        return body == s->u.alloc.body ? s : texi_allocate_new(ctx, s->u.alloc.buf, body);
    }
    case TEXI_STMT_IF: {
        tex_expr *cond = walk_expr(w, s->u.ifs.cond);
        tex_stmt *t = walk_stmt(w, s->u.ifs.then_s);
        tex_stmt *f = s->u.ifs.else_s ? walk_stmt(w, s->u.ifs.else_s) : NULL;
        if (w->failed)
            return NULL;
        if (cond == s->u.ifs.cond && t == s->u.ifs.then_s && f == s->u.ifs.else_s)
            return s;
        return texi_if_new(ctx, cond, t, f);
    }
    case TEXI_STMT_LET: {
        tex_expr *value = walk_expr(w, s->u.let.value);
        tex_stmt *body = walk_stmt(w, s->u.let.body);
        if (w->failed)
            return NULL;
        if (value == s->u.let.value && body == s->u.let.body)
            return s;
        return texi_let_new(ctx, s->u.let.var, value, body);
    }
    case TEXI_STMT_SEQ: {
        int n = s->u.seq.n;
        tex_stmt *small[SMALL_LIST];
        tex_stmt **items = list_space(ctx, small, n, sizeof *items);
        if (!items)
            return NULL;
        bool changed = false;
        for (int i = 0; i < n; i++) {
            items[i] = walk_stmt(w, s->u.seq.items[i]);
            changed |= items[i] != s->u.seq.items[i];
        }
        if (w->failed)
            return NULL;
        return changed ? texi_seq_new(ctx, n, items) : s;
    }
    case TEXI_STMT_EVALUATE: {
        tex_expr *value = walk_expr(w, s->u.eval.value);
        if (w->failed)
            return NULL;
        return value == s->u.eval.value ? s : texi_evaluate_new(ctx, value);
    }
    case TEXI_STMT_BARRIER:
        return s;
    case TEXI_STMT_ATTR: {
        tex_expr *value = walk_expr(w, s->u.attr.value);
        tex_stmt *body = walk_stmt(w, s->u.attr.body);
        if (w->failed)
            return NULL;
        if (value == s->u.attr.value && body == s->u.attr.body)
            return s;
        return texi_attr_new(ctx, s->u.attr.key, value, body);
    }
    case TEXI_STMT_INTRIN:
        return walk_intrin(w, s);
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    return s;
}

static tex_stmt *walk_stmt(stmt_walk *w, tex_stmt *s)
{
    if (!s || w->failed)
        return s;
    if (w->stmt_pre) {
        tex_stmt *r = w->stmt_pre(s, w->ud);
        if (r)
            return r;
    }
    tex_stmt *r = walk_children(w, s);
    if (!r)
        w->failed = true;
    return r;
}

tex_stmt *texi_stmt_mutate(tex_ctx *ctx, tex_stmt *s, texi_stmt_rewrite_fn stmt_pre,
                           texi_expr_rewrite_fn expr_pre, void *ud)
{
    stmt_walk w = {ctx, stmt_pre, expr_pre, ud, false};
    tex_stmt *r = walk_stmt(&w, s);
    return w.failed ? NULL : r;
}

typedef struct {
    tex_ctx *ctx;
    texi_loop_rewrite_fn fn;
    void *ud;
    bool failed;
} loop_map;

/* Statement callback of texi_stmt_map_loops: a loop's body first, then the loop. */
static tex_stmt *map_loop(tex_stmt *s, void *ud)
{
    loop_map *m = ud;
    if (s->kind != TEXI_STMT_FOR || m->failed)
        return NULL;
    tex_stmt *body = texi_stmt_mutate(m->ctx, s->u.loop.body, map_loop, NULL, m);
    tex_stmt *r = body && !m->failed ? m->fn(m->ctx, s, body, m->ud) : NULL;
    if (!r)
        m->failed = true;
    return r ? r : s;
}

tex_stmt *texi_stmt_map_loops(tex_ctx *ctx, tex_stmt *s, texi_loop_rewrite_fn fn, void *ud)
{
    loop_map m = {ctx, fn, ud, false};
    tex_stmt *r = texi_stmt_mutate(ctx, s, map_loop, NULL, &m);
    return m.failed ? NULL : r;
}

typedef struct {
    const tex_expr *var;
    bool found;
} var_probe;

static bool probe_var(tex_expr *e, void *ud)
{
    var_probe *p = ud;
    p->found |= e == p->var;
    return !p->found;
}

/* Statement visitor of texi_stmt_uses_var. */
static bool scan_var(const tex_stmt *s, void *ud)
{
    var_probe *p = ud;
    texi_stmt_visit_exprs(s, probe_var, p);
    return !p->found;
}

bool texi_expr_uses_var(const tex_expr *e, const tex_expr *var)
{
    var_probe p = {var, false};
    texi_expr_visit((tex_expr *)(uintptr_t)e, probe_var, &p); /* the visit changes nothing */
    return p.found;
}

static bool probe_memory(tex_expr *e, void *ud)
{
    bool *found = ud;
    *found |= e->kind == TEXI_EXPR_LOAD || e->kind == TEXI_EXPR_SEARCH;
    return !*found;
}

bool texi_expr_reads_memory(const tex_expr *e)
{
    bool found = false;
    texi_expr_visit((tex_expr *)(uintptr_t)e, probe_memory, &found); /* changes nothing */
    return found;
}

int texi_stmt_straight_stores(const tex_stmt *s)
{
    if (s->kind == TEXI_STMT_STORE)
        return 1;
    if (s->kind != TEXI_STMT_SEQ)
        return 0;
    for (int i = 0; i < s->u.seq.n; i++)
        if (s->u.seq.items[i]->kind != TEXI_STMT_STORE)
            return 0;
    return s->u.seq.n;
}

bool texi_linear_in(tex_expr *e, const tex_expr *v, int64_t *coef)
{
    int64_t a, b, k;
    *coef = 0;
    switch (e->kind) {
    case TEXI_EXPR_VAR:
        *coef = e == v;
        return true;
    case TEXI_EXPR_ADD:
    case TEXI_EXPR_SUB:
        if (!texi_linear_in(e->u.bin.a, v, &a) || !texi_linear_in(e->u.bin.b, v, &b))
            return false;
        *coef = e->kind == TEXI_EXPR_ADD ? a + b : a - b;
        return true;
    case TEXI_EXPR_MUL:
        if (texi_expr_is_int_const(e->u.bin.b, &k) && texi_linear_in(e->u.bin.a, v, &a)) {
            *coef = a * k;
            return true;
        }
        if (texi_expr_is_int_const(e->u.bin.a, &k) && texi_linear_in(e->u.bin.b, v, &b)) {
            *coef = b * k;
            return true;
        }
        break;
    case TEXI_EXPR_CAST:
        if (!texi_dtype_is_float(e->dtype))
            return texi_linear_in(e->u.un.a, v, coef);
        break;
    default:
        break;
    }
    return !texi_expr_uses_var(e, v);
}

bool texi_stmt_uses_var(tex_ctx *ctx, const tex_stmt *s, const tex_expr *var)
{
    (void)ctx;
    var_probe p = {var, false};
    texi_stmt_visit(s, scan_var, &p);
    return p.found;
}

tex_stmt *texi_stmt_body(const tex_stmt *s)
{
    switch (s->kind) {
    case TEXI_STMT_FOR:
        return s->u.loop.body;
    case TEXI_STMT_REALIZE:
        return s->u.realize.body;
    case TEXI_STMT_ALLOCATE:
        return s->u.alloc.body;
    case TEXI_STMT_LET:
        return s->u.let.body;
    case TEXI_STMT_ATTR:
        return s->u.attr.body;
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_STORE:
    case TEXI_STMT_IF:
    case TEXI_STMT_SEQ:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    return NULL;
}

tex_stmt *texi_stmt_with_body(tex_ctx *ctx, tex_stmt *s, tex_stmt *body)
{
    assert(texi_stmt_body(s) && "texi_stmt_with_body: a statement without a body");
    if (!body || body == texi_stmt_body(s))
        return body ? s : NULL;
    if (s->kind == TEXI_STMT_FOR)
        return texi_for_new(ctx, s->u.loop.var, s->u.loop.min, s->u.loop.extent, s->u.loop.for_kind,
                            s->u.loop.thread_tag, body);
    if (s->kind == TEXI_STMT_REALIZE)
        return texi_realize_new(ctx, s->u.realize.tensor, s->u.realize.ndim, s->u.realize.mins,
                                s->u.realize.extents, s->u.realize.scope, body);
    if (s->kind == TEXI_STMT_ALLOCATE)
        return texi_allocate_new(ctx, s->u.alloc.buf, body);
    if (s->kind == TEXI_STMT_LET)
        return texi_let_new(ctx, s->u.let.var, s->u.let.value, body);
    return texi_attr_new(ctx, s->u.attr.key, s->u.attr.value, body); /* the last kind with a body */
}

void texi_stmt_visit(const tex_stmt *s, texi_stmt_visit_fn fn, void *ud)
{
    if (!s || !fn(s, ud))
        return;
    if (s->kind == TEXI_STMT_IF) {
        texi_stmt_visit(s->u.ifs.then_s, fn, ud);
        texi_stmt_visit(s->u.ifs.else_s, fn, ud);
    } else if (s->kind == TEXI_STMT_SEQ) {
        for (int i = 0; i < s->u.seq.n; i++)
            texi_stmt_visit(s->u.seq.items[i], fn, ud);
    } else {
        texi_stmt_visit(texi_stmt_body(s), fn, ud);
    }
}

static void visit_list(tex_expr *const *es, int n, texi_expr_visit_fn fn, void *ud)
{
    for (int i = 0; es && i < n; i++)
        texi_expr_visit(es[i], fn, ud);
}

void texi_stmt_visit_exprs(const tex_stmt *s, texi_expr_visit_fn fn, void *ud)
{
    switch (s->kind) {
    case TEXI_STMT_FOR:
        texi_expr_visit(s->u.loop.min, fn, ud);
        texi_expr_visit(s->u.loop.extent, fn, ud);
        return;
    case TEXI_STMT_PROVIDE:
        visit_list(s->u.provide.idx, s->u.provide.n_idx, fn, ud);
        texi_expr_visit(s->u.provide.value, fn, ud);
        return;
    case TEXI_STMT_REALIZE:
        for (int i = 0; i < s->u.realize.ndim; i++) {
            texi_expr_visit(s->u.realize.mins[i], fn, ud);
            texi_expr_visit(s->u.realize.extents[i], fn, ud);
        }
        return;
    case TEXI_STMT_STORE:
        texi_expr_visit(s->u.store.index, fn, ud);
        texi_expr_visit(s->u.store.value, fn, ud);
        texi_expr_visit(s->u.store.mask, fn, ud);
        return;
    case TEXI_STMT_IF:
        texi_expr_visit(s->u.ifs.cond, fn, ud);
        return;
    case TEXI_STMT_LET:
        texi_expr_visit(s->u.let.value, fn, ud);
        return;
    case TEXI_STMT_EVALUATE:
        texi_expr_visit(s->u.eval.value, fn, ud);
        return;
    case TEXI_STMT_ATTR:
        texi_expr_visit(s->u.attr.value, fn, ud);
        return;
    case TEXI_STMT_INTRIN:
        for (int i = 0; i < s->u.intrin.n_args; i++) {
            const texi_intrin_arg *a = &s->u.intrin.args[i];
            visit_list(a->mins, a->tensor_ndim, fn, ud);
            visit_list(a->strides, a->ndim, fn, ud);
            texi_expr_visit(a->offset, fn, ud);
        }
        return;
    case TEXI_STMT_ALLOCATE:
    case TEXI_STMT_SEQ:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_KIND_COUNT:
        return;
    }
}

typedef struct {
    const tex_intrin **list;
    int n, cap;
    bool full;
} intrin_list;

/* Whether a and b are one intrinsic: the same handle, or handles of one
 * instance of a CPU built-in (same name, same C source). */
static bool same_intrin(const tex_intrin *a, const tex_intrin *b)
{
    return a == b || (a->builtin && b->builtin && a->c_source && b->c_source &&
                      strcmp(a->name, b->name) == 0 && strcmp(a->c_source, b->c_source) == 0);
}

/* Visitor of texi_stmt_intrins: adds each INTRIN's intrinsic once. */
static bool add_intrin(const tex_stmt *s, void *ud)
{
    intrin_list *l = ud;
    if (l->full || s->kind != TEXI_STMT_INTRIN)
        return !l->full;
    for (int i = 0; i < l->n; i++)
        if (same_intrin(l->list[i], s->u.intrin.intrin))
            return true;
    if (l->n == l->cap)
        l->full = true;
    else
        l->list[l->n++] = s->u.intrin.intrin;
    return !l->full;
}

int texi_stmt_intrins(const tex_stmt *s, const tex_intrin **list, int cap)
{
    intrin_list l = {list, 0, cap, false};
    texi_stmt_visit(s, add_intrin, &l);
    return l.full ? -1 : l.n;
}

typedef struct {
    texi_stmt_pred pred;
    bool found;
} any_search;

/* Visitor of texi_stmt_any: stops descending everywhere once found. */
static bool any_step(const tex_stmt *s, void *ud)
{
    any_search *a = ud;
    a->found = a->found || a->pred(s);
    return !a->found;
}

bool texi_stmt_any(const tex_stmt *s, texi_stmt_pred pred)
{
    any_search a = {pred, false};
    texi_stmt_visit(s, any_step, &a);
    return a.found;
}

static bool is_barrier(const tex_stmt *s)
{
    return s->kind == TEXI_STMT_BARRIER;
}

bool texi_stmt_has_barrier(const tex_stmt *s)
{
    return texi_stmt_any(s, is_barrier);
}

bool texi_stmt_is_sync(const tex_stmt *s)
{
    return s->kind == TEXI_STMT_BARRIER || texi_attr_is(s, TEXI_ATTR_THREAD_ALLREDUCE);
}

bool texi_stmt_has_sync(const tex_stmt *s)
{
    return texi_stmt_any(s, texi_stmt_is_sync);
}

bool texi_stmt_is_thread_loop(const tex_stmt *s, bool vthread)
{
    if (s->kind != TEXI_STMT_FOR || s->u.loop.for_kind != TEXI_FOR_THREAD)
        return false;
    int tag = s->u.loop.thread_tag;
    return tag >= (int)TEX_THREAD_X && tag <= (int)(vthread ? TEX_VTHREAD : TEX_THREAD_Z);
}

tex_stmt *texi_stmt_substitute(tex_ctx *ctx, tex_stmt *s, tex_expr *var, tex_expr *value)
{
    substitution x = {1, &var, &value};
    return texi_stmt_mutate(ctx, s, NULL, substitute_var, &x);
}
