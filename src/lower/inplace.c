/*
 * Pass inplace: a temporary whose last reader is an elementwise store into
 * another buffer lives in that buffer's memory.
 *
 * ALLOCATE E { body } goes, and E's LOADs and STOREs become accesses of
 * buffer O at O_off + index, when body ends E's life with one consumer C:
 * a nest of FORs (min 0, constant extents) around one STORE
 * O[O_off + e] = f(..., E[e], ...), each loop's body possibly starting
 * with cache hints (tex_prefetch: they read and write nothing), where
 *   - e = sum c_k * v_k over the nest's variables numbers E's elements in
 *     mixed radix: sorted by c_k, c_1 = 1, c_{k+1} = c_k * extent_k, and
 *     the last c_k * extent_k is E's size; so C visits every element of E
 *     once and writes every element of O[O_off, O_off + size);
 *   - f reads E only at e, never O, and O_off depends on nothing bound
 *     inside the ALLOCATE;
 *   - C runs exactly once per ALLOCATE: on the way from the ALLOCATE to C
 *     there are only SEQs, LETs, ATTRs and ALLOCATEs (no loop, no IF);
 *   - inside the ALLOCATE only C reads or writes O (and O is not allocated
 *     there), and nothing after C in program order reads or writes E;
 *   - E is a global-scope temporary of O's dtype that no ATTR names, and the
 *     function binds no GPU threads and calls no intrinsic.
 * E's producers then write O's region and its readers read it back; C
 * reads E[e] = O[O_off + e] just before overwriting that element with its
 * result. No other statement of the ALLOCATE sees O's region, and the
 * original program writes all of it there anyway, so another iteration of
 * an enclosing parallel loop reading it would be a race in the original
 * too. What it buys: one buffer less streaming through the cache, and the
 * producer's stores of O's region overlap its computation, as in a softmax
 * whose exp pass writes Y and whose last pass rescales Y in place.
 * docs/passes.md lists the pass.
 */
#include "lower/lower.h"

#include <stdlib.h>

enum { MAX_NEST = 16 };

/* The consumer C of temporary E and what rewriting into O needs. */
typedef struct {
    tex_ctx *ctx;
    const texi_buffer *tmp; /* E */
    const tex_stmt *store;  /* C's STORE */
    texi_buffer *out;       /* O */
    tex_expr *offset;       /* O_off */
    bool after;             /* the scan has passed C */
    bool bad;               /* a condition above fails (or out of memory) */
} inplace;

/* Whether expression e is the storage variable of ud's buffer (an ATTR
 * naming it); names_storage: whether some expression of s is. */
typedef struct {
    const tex_expr *data;
    bool found;
} name_probe;

static bool probe_name(tex_expr *e, void *ud)
{
    name_probe *p = ud;
    p->found |= e == p->data;
    return !p->found;
}

static bool probe_stmt_names(const tex_stmt *s, void *ud)
{
    texi_stmt_visit_exprs(s, probe_name, ud);
    return !((name_probe *)ud)->found;
}

static bool names_storage(const tex_stmt *s, const texi_buffer *b)
{
    name_probe p = {b->data, false};
    texi_stmt_visit(s, probe_stmt_names, &p);
    return p.found;
}

/* ------------------------------------------------------------- the consumer */

typedef struct {
    const texi_buffer *tmp;
    tex_expr *index; /* the one index E is read at, NULL before the first */
    bool other;      /* E read at a second index */
} load_probe;

static bool probe_loads(tex_expr *e, void *ud)
{
    load_probe *p = ud;
    if (e->kind != TEXI_EXPR_LOAD || texi_buffer_key(e->u.load.buf) != texi_buffer_key(p->tmp))
        return true;
    if (!p->index)
        p->index = e->u.load.index;
    else if (!texi_expr_equal(p->index, e->u.load.index))
        p->other = true;
    return false;
}

static int by_coef(const void *a, const void *b)
{
    int64_t x = ((const int64_t *)a)[0], y = ((const int64_t *)b)[0];
    return (x > y) - (x < y);
}

/* Whether index e, over the loops nest[0 .. n), numbers `size` elements in
 * mixed radix (the top comment's first condition). */
static bool numbers_all(tex_ctx *ctx, tex_expr *e, const tex_stmt *const nest[], int n,
                        int64_t size)
{
    int64_t radix[MAX_NEST][2]; /* coefficient, extent */
    tex_expr *vars[MAX_NEST], *zeros[MAX_NEST];
    int m = 0;
    for (int k = 0; k < n; k++) {
        int64_t lo, ext, coef;
        const tex_stmt *f = nest[k];
        if (!texi_expr_is_int_const(f->u.loop.min, &lo) || lo != 0 ||
            !texi_expr_is_int_const(f->u.loop.extent, &ext) || ext < 1 ||
            !texi_linear_in(e, f->u.loop.var, &coef))
            return false;
        vars[k] = f->u.loop.var;
        zeros[k] = texi_int_imm(ctx, f->u.loop.var->dtype, 0);
        if (!zeros[k])
            return false;
        if (ext > 1) {
            radix[m][0] = coef;
            radix[m++][1] = ext;
        }
    }
    tex_expr *rest = texi_substitute(e, n, vars, zeros);
    int64_t k0;
    rest = rest ? texi_simplify(rest, 0, NULL) : NULL;
    if (!rest || !texi_expr_is_int_const(rest, &k0) || k0 != 0)
        return false;
    qsort(radix, (size_t)m, sizeof radix[0], by_coef);
    int64_t next = 1;
    for (int k = 0; k < m; k++) {
        if (radix[k][0] != next || next > INT64_MAX / radix[k][1])
            return false;
        next *= radix[k][1];
    }
    return next == size;
}

/* Whether s is only cache hints: a hint, or a SEQ or loop of them. */
static bool only_hints(const tex_stmt *s)
{
    if (s->kind == TEXI_STMT_FOR)
        return only_hints(s->u.loop.body);
    if (s->kind != TEXI_STMT_SEQ)
        return texi_is_prefetch(s);
    for (int i = 0; i < s->u.seq.n; i++)
        if (!only_hints(s->u.seq.items[i]))
            return false;
    return true;
}

/* Loop body s past the cache hints it starts with: the SEQ's last item
 * when all the others are hints, else s. */
static const tex_stmt *past_hints(const tex_stmt *s)
{
    if (s->kind != TEXI_STMT_SEQ || s->u.seq.n < 1)
        return s;
    for (int i = 0; i < s->u.seq.n - 1; i++)
        if (!only_hints(s->u.seq.items[i]))
            return s;
    return s->u.seq.items[s->u.seq.n - 1];
}

/* Records in ip the consumer whose nest starts at loop s, when s is one:
 * see the top comment. */
static void try_consumer(inplace *ip, const tex_stmt *s, int64_t size)
{
    const tex_stmt *nest[MAX_NEST];
    int n = 0;
    while (s->kind == TEXI_STMT_FOR && n < MAX_NEST) {
        nest[n++] = s;
        s = past_hints(s->u.loop.body);
    }
    if (s->kind != TEXI_STMT_STORE)
        return;
    texi_buffer *o = s->u.store.buf;
    load_probe p = {ip->tmp, NULL, false};
    texi_expr_visit(s->u.store.value, probe_loads, &p);
    if (!p.index || p.other || texi_expr_uses_buffer(s->u.store.index, ip->tmp) ||
        texi_expr_uses_buffer(s->u.store.value, o) ||
        texi_buffer_key(o) == texi_buffer_key(ip->tmp) || o->dtype != ip->tmp->dtype ||
        p.index->dtype != s->u.store.index->dtype || !numbers_all(ip->ctx, p.index, nest, n, size))
        return;
    tex_expr *off = texi_binary(TEXI_EXPR_SUB, s->u.store.index, p.index);
    off = off ? texi_simplify(off, 0, NULL) : NULL;
    if (!off) {
        ip->bad = true;
        return;
    }
    for (int k = 0; k < n; k++)
        if (texi_expr_uses_var(off, nest[k]->u.loop.var))
            return;
    ip->store = s;
    ip->out = o;
    ip->offset = off;
}

/* The first consumer on the loop-free spine of s (SEQ items in order,
 * bodies of LET, ATTR and ALLOCATE). */
static void find_consumer(inplace *ip, tex_stmt *s, int64_t size)
{
    switch (s->kind) {
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n && !ip->store && !ip->bad; i++)
            find_consumer(ip, s->u.seq.items[i], size);
        break;
    case TEXI_STMT_LET:
    case TEXI_STMT_ATTR:
    case TEXI_STMT_ALLOCATE:
        find_consumer(ip, texi_stmt_body(s), size);
        break;
    case TEXI_STMT_FOR:
        try_consumer(ip, s, size);
        break;
    default:
        break;
    }
}

/* ---------------------------------------------------------- the other uses */

/* Checks the spine of s again, now that C and O are known: only C touches
 * O, nothing after C touches E, O's offset uses nothing bound in s. */
static void check_uses(inplace *ip, const tex_stmt *s)
{
    if (ip->bad)
        return;
    switch (s->kind) {
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            check_uses(ip, s->u.seq.items[i]);
        return;
    case TEXI_STMT_LET:
    case TEXI_STMT_ATTR:
    case TEXI_STMT_ALLOCATE: {
        tex_expr *own = s->kind == TEXI_STMT_LET ? s->u.let.value
                        : s->kind == TEXI_STMT_ATTR
                            ? s->u.attr.value
                            : NULL; /* an ALLOCATE's shape reads no buffer */
        const void *allocated =
            s->kind == TEXI_STMT_ALLOCATE ? texi_buffer_key(s->u.alloc.buf) : NULL;
        tex_expr *bound = s->kind == TEXI_STMT_LET ? s->u.let.var : NULL;
        if (texi_expr_uses_buffer(own, ip->out) ||
            (ip->after && texi_expr_uses_buffer(own, ip->tmp)) ||
            allocated == texi_buffer_key(ip->out) ||
            (bound && texi_expr_uses_var(ip->offset, bound)))
            ip->bad = true;
        check_uses(ip, texi_stmt_body(s));
        return;
    }
    default:
        break;
    }
    const tex_stmt *inner = s;
    while (inner->kind == TEXI_STMT_FOR)
        inner = past_hints(inner->u.loop.body);
    if (inner == ip->store) {
        ip->after = true; /* C itself: checked by try_consumer */
        return;
    }
    if (texi_stmt_uses_buffer(s, ip->out) || (ip->after && texi_stmt_uses_buffer(s, ip->tmp)))
        ip->bad = true;
}

/* ----------------------------------------------------------------- rewrite */

static tex_expr *moved_index(inplace *ip, tex_expr *index)
{
    if (index->dtype != ip->offset->dtype) {
        ip->bad = true;
        return NULL;
    }
    tex_expr *r = texi_binary(TEXI_EXPR_ADD, ip->offset, index);
    r = r ? texi_simplify(r, 0, NULL) : NULL;
    ip->bad |= !r;
    return r;
}

static tex_expr *move_load(tex_expr *e, void *ud)
{
    inplace *ip = ud;
    if (ip->bad || e->kind != TEXI_EXPR_LOAD ||
        texi_buffer_key(e->u.load.buf) != texi_buffer_key(ip->tmp))
        return NULL;
    tex_expr *index = texi_expr_mutate(e->u.load.index, move_load, ip);
    index = index ? moved_index(ip, index) : NULL;
    tex_expr *r = index ? texi_load_new(ip->out, index) : NULL;
    ip->bad |= !r;
    return r ? r : e;
}

static tex_stmt *move_store(tex_stmt *s, void *ud)
{
    inplace *ip = ud;
    if (ip->bad || s->kind != TEXI_STMT_STORE ||
        texi_buffer_key(s->u.store.buf) != texi_buffer_key(ip->tmp))
        return NULL;
    tex_expr *index = texi_expr_mutate(s->u.store.index, move_load, ip);
    tex_expr *value = texi_expr_mutate(s->u.store.value, move_load, ip);
    index = index ? moved_index(ip, index) : NULL;
    tex_stmt *r = index && value ? texi_store_new(ip->ctx, ip->out, index, value) : NULL;
    ip->bad |= !r;
    return r ? r : s;
}

/* The body of ALLOCATE a with its buffer moved into its consumer's output,
 * or NULL when a does not qualify (or on ENOMEM, recorded in ctx). */
static tex_stmt *move_into_output(tex_ctx *ctx, tex_stmt *a)
{
    const texi_buffer *b = a->u.alloc.buf;
    int64_t size = 1, ext;
    for (int d = 0; d < b->ndim; d++) {
        if (!texi_expr_is_int_const(b->shape[d], &ext) || ext < 1 || size > INT64_MAX / ext)
            return NULL;
        size *= ext;
    }
    if (b->scope != TEXI_SCOPE_GLOBAL || names_storage(a->u.alloc.body, b))
        return NULL;
    inplace ip = {.ctx = ctx, .tmp = b};
    find_consumer(&ip, a->u.alloc.body, size);
    if (!ip.store || ip.bad)
        return NULL;
    check_uses(&ip, a->u.alloc.body);
    if (ip.bad)
        return NULL;
    tex_stmt *r = texi_stmt_mutate(ctx, a->u.alloc.body, move_store, move_load, &ip);
    return ip.bad ? NULL : r;
}

typedef struct {
    tex_ctx *ctx;
    bool failed;
} walker;

/* texi_stmt_mutate callback: ALLOCATEs innermost first, each moved into
 * its consumer's output where it qualifies. */
static tex_stmt *visit_alloc(tex_stmt *s, void *ud)
{
    walker *w = ud;
    if (w->failed || s->kind != TEXI_STMT_ALLOCATE)
        return NULL;
    tex_stmt *body = texi_stmt_mutate(w->ctx, s->u.alloc.body, visit_alloc, NULL, w);
    tex_stmt *a = body ? texi_stmt_with_body(w->ctx, s, body) : NULL;
    if (!a) {
        w->failed = true;
        return s;
    }
    tex_stmt *moved = move_into_output(w->ctx, a);
    return moved ? moved : a;
}

static bool is_thread_loop(const tex_stmt *s)
{
    return s->kind == TEXI_STMT_FOR && s->u.loop.for_kind == TEXI_FOR_THREAD;
}

static bool is_intrin(const tex_stmt *s)
{
    return s->kind == TEXI_STMT_INTRIN;
}

int texi_pass_inplace(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    if (texi_stmt_any(in, is_thread_loop) || texi_stmt_any(in, is_intrin)) {
        *out = in;
        return 0;
    }
    walker w = {lw->ctx, false};
    tex_stmt *r = texi_stmt_mutate(lw->ctx, in, visit_alloc, NULL, &w);
    return texi_pass_result(lw, w.failed ? NULL : r, out);
}
