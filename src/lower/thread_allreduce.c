/*
 * thread_allreduce (device.h): turns every ATTR "cross_thread_reduction"
 * (schedule_ops.c: a reduce leaf bound to a thread) into an explicit
 * per-thread partial, a block-wide allreduce and one write of the result.
 *
 * Input (after the host pipeline): the ATTR around one threadIdx.x loop with
 * exactly one update `buf[idx] = op(buf[idx], v)` of a buffer allocated
 * outside it (the pattern in full: above match()).
 * Output: a local accumulator, the thread loop updating it, ATTR
 * "thread_allreduce" (every thread arrives; then each holds op over the
 * participants) and the write of the result, with a barrier where other
 * threads read it (the form in full: above rewrite()).
 *
 * Refused with TEX_EUNAVAILABLE (naming the buffer): a reduction along
 * another tag than threadIdx.x, an attribute body that is not one thread
 * loop, no or several update stores, other uses of buf in the loop, an
 * index that varies inside the loop, and a cross-thread reduction under an
 * IF whose condition depends on a thread index (the allreduce and the
 * barrier must be reached by every thread of the block).
 */
#include "lower/device.h"

#include <stdio.h>
#include <string.h>

#define MAX_BOUND 64 /* variables bound inside one reduction (loops, LETs) */
#define MAX_TVARS 32 /* enclosing thread-bound loops */

typedef struct {
    texi_lower *lw;
    int rc;
    tex_stmt *scope;            /* innermost enclosing block-bound loop, or the whole body */
    tex_expr *tvars[MAX_TVARS]; /* variables of the enclosing THREAD_* loops */
    int n_tvars;
    bool divergent; /* under an IF whose condition uses one of them */
} ar_pass;

/* What the analysis of one ATTR found. */
typedef struct {
    tex_expr *bound[MAX_BOUND]; /* variables bound inside the thread loop (and the loop's) */
    int n_bound;
    tex_stmt *update; /* the update STORE */
    tex_stmt *atomic; /* the ATTR "atomic" around it (tex_atomic), or NULL */
    int n_updates;
    enum texi_reduce_op op;
    tex_expr *v;     /* the contributed value */
    tex_expr *guard; /* invariant conjuncts of the IFs around the update, or NULL */
} ar_match;

static int fail(ar_pass *p, const char *buf, const char *why)
{
    if (!p->rc)
        p->rc = texi_error(p->lw->ctx, TEX_EUNAVAILABLE,
                           "tex_build: cross-thread reduction of '%s' %s", buf, why);
    return p->rc;
}

/* ------------------------------------------------------------ queries */

typedef struct {
    tex_expr *const *vars;
    int n;
    const void *key; /* LOAD counting: the buffer key */
    int count;
    bool found;
} expr_query;

static bool uses_var(tex_expr *e, void *ud)
{
    expr_query *q = ud;
    for (int i = 0; i < q->n && e->kind == TEXI_EXPR_VAR; i++)
        q->found |= e == q->vars[i];
    return !q->found;
}

static bool uses_any(tex_expr *e, tex_expr *const *vars, int n)
{
    expr_query q = {.vars = vars, .n = n};
    if (e)
        texi_expr_visit(e, uses_var, &q);
    return q.found;
}

static tex_expr *count_load(tex_expr *e, void *ud)
{
    expr_query *q = ud;
    if (e->kind == TEXI_EXPR_LOAD && texi_buffer_key(e->u.load.buf) == q->key)
        q->count++;
    return NULL;
}

/* LOADs of the storage `key` in s. */
static int loads_of(tex_ctx *ctx, tex_stmt *s, const void *key)
{
    expr_query q = {.key = key};
    texi_stmt_mutate(ctx, s, NULL, count_load, &q);
    return q.count;
}

static bool count_store(const tex_stmt *s, void *ud)
{
    expr_query *q = ud;
    if (s->kind == TEXI_STMT_STORE && texi_buffer_key(s->u.store.buf) == q->key)
        q->count++;
    return true;
}

/* STOREs to the storage `key` in s. */
static int stores_of(const tex_stmt *s, const void *key)
{
    expr_query q = {.key = key};
    texi_stmt_visit(s, count_store, &q);
    return q.count;
}

/* ------------------------------------------------------------ matching */

static enum texi_reduce_op op_of(enum texi_expr_kind k, bool *ok)
{
    *ok = true;
    switch (k) {
    case TEXI_EXPR_ADD:
        return TEXI_REDUCE_SUM;
    case TEXI_EXPR_MUL:
        return TEXI_REDUCE_PROD;
    case TEXI_EXPR_MAX:
        return TEXI_REDUCE_MAX;
    case TEXI_EXPR_MIN:
        return TEXI_REDUCE_MIN;
    default:
        *ok = false;
        return TEXI_REDUCE_SUM;
    }
}

static enum texi_expr_kind kind_of(enum texi_reduce_op op)
{
    static const enum texi_expr_kind kinds[TEXI_REDUCE_COUNT] = {TEXI_EXPR_ADD, TEXI_EXPR_MUL,
                                                                 TEXI_EXPR_MAX, TEXI_EXPR_MIN};
    return kinds[op];
}

static bool same_load(const tex_expr *e, const tex_stmt *st)
{
    return e->kind == TEXI_EXPR_LOAD &&
           texi_buffer_key(e->u.load.buf) == texi_buffer_key(st->u.store.buf) &&
           texi_expr_equal(e->u.load.index, st->u.store.index);
}

/* Whether st is `buf[idx] = op(buf[idx], v)`; sets *op and *v. */
static bool is_update(const tex_stmt *st, enum texi_reduce_op *op, tex_expr **v)
{
    tex_expr *val = st->u.store.value;
    bool ok;
    *op = op_of(val->kind, &ok);
    if (!ok || val->dtype != st->u.store.buf->dtype)
        return false;
    if (same_load(val->u.bin.a, st))
        *v = val->u.bin.b;
    else if (same_load(val->u.bin.b, st))
        *v = val->u.bin.a;
    else
        return false;
    return true;
}

static int bind(ar_pass *p, ar_match *m, tex_expr *var)
{
    if (m->n_bound == MAX_BOUND)
        return fail(p, var->u.var.name, "binds too many variables inside its thread loop");
    m->bound[m->n_bound++] = var;
    return 0;
}

/* The invariant conjuncts of c (&& split), and-ed onto *g. */
static int add_guard(ar_pass *p, ar_match *m, tex_expr *c, tex_expr **g)
{
    if (c->kind == TEXI_EXPR_AND) {
        TEXI_TRY(add_guard(p, m, c->u.bin.a, g));
        return add_guard(p, m, c->u.bin.b, g);
    }
    if (uses_any(c, m->bound, m->n_bound))
        return 0;
    *g = *g ? texi_binary(TEXI_EXPR_AND, *g, c) : c;
    return *g ? 0 : (p->rc = TEX_ENOMEM);
}

/* Finds the update stores under s; `guard` is the invariant guard so far.
 * Buffers allocated inside are collected in `inner` (never reduction targets). */
static int find_update(ar_pass *p, ar_match *m, tex_stmt *s, tex_expr *guard, const void **inner,
                       int *n_inner)
{
    if (!s)
        return 0;
    switch (s->kind) {
    case TEXI_STMT_FOR:
        TEXI_TRY(bind(p, m, s->u.loop.var));
        return find_update(p, m, s->u.loop.body, guard, inner, n_inner);
    case TEXI_STMT_LET:
        TEXI_TRY(bind(p, m, s->u.let.var));
        return find_update(p, m, s->u.let.body, guard, inner, n_inner);
    case TEXI_STMT_ALLOCATE:
        if (*n_inner < MAX_BOUND)
            inner[(*n_inner)++] = texi_buffer_key(s->u.alloc.buf);
        return find_update(p, m, s->u.alloc.body, guard, inner, n_inner);
    case TEXI_STMT_ATTR:
        TEXI_TRY(find_update(p, m, s->u.attr.body, guard, inner, n_inner));
        if (s->u.attr.id == TEXI_ATTR_ATOMIC && m->update == s->u.attr.body)
            m->atomic = s;
        return 0;
    case TEXI_STMT_IF: {
        tex_expr *g = guard, *c = s->u.ifs.cond;
        TEXI_TRY(add_guard(p, m, c, &g));
        TEXI_TRY(find_update(p, m, s->u.ifs.then_s, g, inner, n_inner));
        g = guard;
        if (s->u.ifs.else_s && !uses_any(c, m->bound, m->n_bound) &&
            !(c = texi_unary(TEXI_EXPR_NOT, TEX_BOOL, c)))
            return p->rc = TEX_ENOMEM;
        if (s->u.ifs.else_s && c != s->u.ifs.cond)
            TEXI_TRY(add_guard(p, m, c, &g));
        return find_update(p, m, s->u.ifs.else_s, g, inner, n_inner);
    }
    case TEXI_STMT_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            TEXI_TRY(find_update(p, m, s->u.seq.items[i], guard, inner, n_inner));
        return 0;
    case TEXI_STMT_STORE: {
        const void *key = texi_buffer_key(s->u.store.buf);
        enum texi_reduce_op op;
        tex_expr *v;
        for (int i = 0; i < *n_inner; i++)
            if (inner[i] == key)
                return 0;
        if (!is_update(s, &op, &v))
            return 0;
        if (m->n_updates++ == 0) {
            m->update = s;
            m->op = op;
            m->v = v;
            m->guard = guard;
        }
        return 0;
    }
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_KIND_COUNT:
        return 0;
    }
    return 0;
}

/* Name of some buffer stored to in s (for messages), or NULL. */
static const char *some_store(const tex_stmt *s)
{
    if (!s)
        return NULL;
    switch (s->kind) {
    case TEXI_STMT_STORE:
        return s->u.store.buf->name;
    case TEXI_STMT_FOR:
        return some_store(s->u.loop.body);
    case TEXI_STMT_LET:
        return some_store(s->u.let.body);
    case TEXI_STMT_ALLOCATE:
        return some_store(s->u.alloc.body);
    case TEXI_STMT_ATTR:
        return some_store(s->u.attr.body);
    case TEXI_STMT_IF: {
        const char *n = some_store(s->u.ifs.then_s);
        return n ? n : some_store(s->u.ifs.else_s);
    }
    case TEXI_STMT_SEQ:
        for (int i = s->u.seq.n - 1; i >= 0; i--) /* the update comes last */
            if (some_store(s->u.seq.items[i]))
                return some_store(s->u.seq.items[i]);
        return NULL;
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_BARRIER:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_KIND_COUNT:
        return NULL;
    }
    return NULL;
}

/*
 * Input form (after the host pipeline):
 *   attr cross_thread_reduction {
 *     for (t, m, E) bind threadIdx.x {
 *       ... IF guards, LETs, serial loops, local allocations (the rfactor'ed
 *           partial and its own update) ...
 *           buf[idx] = op(buf[idx], v)      // THE update: op is + * max min
 *     }
 *   }
 * The update is the one STORE in the loop whose value is op(LOAD buf[idx], v)
 * (either operand order) for a buffer allocated outside the attribute, with
 * idx using no variable bound inside it (the thread variable, inner loops,
 * LETs). buf must not be read or written anywhere else in the loop, and v
 * must not read it.
 *
 * match checks this pattern on thread loop `loop`.
 */
static int match(ar_pass *p, tex_stmt *loop, ar_match *m)
{
    const void *inner[MAX_BOUND];
    int n_inner = 0;
    const char *name = some_store(loop);
    memset(m, 0, sizeof *m);
    m->bound[m->n_bound++] = loop->u.loop.var;
    TEXI_TRY(find_update(p, m, loop->u.loop.body, NULL, inner, &n_inner));
    if (m->n_updates == 0)
        return fail(p, name ? name : "?",
                    "has no update of the form buf[i] = op(buf[i], v) with op + * max min");
    const texi_buffer *buf = m->update->u.store.buf;
    if (m->n_updates > 1)
        return fail(p, buf->name, "updates more than one buffer element in its thread loop");
    if (uses_any(m->update->u.store.index, m->bound, m->n_bound))
        return fail(p, buf->name,
                    "writes an element that depends on the thread index or an "
                    "inner loop");
    if (loads_of(p->lw->ctx, loop, texi_buffer_key(buf)) != 1 ||
        stores_of(loop, texi_buffer_key(buf)) != 1)
        return fail(p, buf->name, "reads or writes the reduced buffer outside its update");
    return p->rc;
}

/* ------------------------------------------------------------ rewriting */

typedef struct {
    tex_stmt *from, *to;
} swap_stmt;

static tex_stmt *swap_pre(tex_stmt *s, void *ud)
{
    swap_stmt *w = ud;
    return s == w->from ? w->to : NULL;
}

static tex_expr *acc_load(tex_ctx *ctx, texi_buffer *acc)
{
    tex_expr *zero = texi_int_imm(ctx, TEX_I32, 0);
    return zero ? texi_load_new(acc, zero) : NULL;
}

static tex_stmt *acc_store(tex_ctx *ctx, texi_buffer *acc, tex_expr *value)
{
    tex_expr *zero = texi_int_imm(ctx, TEX_I32, 0);
    return zero && value ? texi_store_new(ctx, acc, zero, value) : NULL;
}

/* A copy of var, fresh (for a loop of its own). */
static tex_expr *fresh(tex_ctx *ctx, const tex_expr *var, const char *suffix)
{
    char name[128];
    snprintf(name, sizeof name, "%s.%s", var->u.var.name, suffix);
    return texi_var_new(ctx, name, var->dtype);
}

static tex_stmt *thread_loop(tex_ctx *ctx, const tex_stmt *like, const char *suffix,
                             tex_expr *extent, tex_stmt *body)
{
    tex_expr *var = fresh(ctx, like->u.loop.var, suffix);
    tex_expr *min = extent == like->u.loop.extent ? like->u.loop.min
                                                  : texi_int_imm(ctx, like->u.loop.var->dtype, 0);
    return var && min && extent && body
               ? texi_for_new(ctx, var, min, extent, TEXI_FOR_THREAD, like->u.loop.thread_tag, body)
               : NULL;
}

/* W of the output form (above rewrite()). */
static tex_stmt *result_write(ar_pass *p, const ar_match *m, texi_buffer *acc, tex_stmt *loop)
{
    tex_ctx *ctx = p->lw->ctx;
    const tex_stmt *u = m->update;
    texi_buffer *buf = u->u.store.buf;
    tex_expr *old = texi_load_new(buf, u->u.store.index), *a = acc_load(ctx, acc);
    tex_expr *val = old && a ? texi_binary(kind_of(m->op), old, a) : NULL;
    tex_stmt *w = val ? texi_store_new(ctx, buf, u->u.store.index, val) : NULL;
    if (w && m->atomic)
        w = texi_attr_named(ctx, TEXI_ATTR_ATOMIC, m->atomic->u.attr.value, w);
    if (w && m->guard)
        w = texi_if_new(ctx, m->guard, w, NULL);
    if (w && buf->scope != TEXI_SCOPE_LOCAL)
        w = thread_loop(ctx, loop, "w", texi_int_imm(ctx, loop->u.loop.var->dtype, 1), w);
    return w;
}

/*
 * Output form:
 *   allocate buf.red: T[1] local {             // T = buf's dtype
 *     buf.red[0] = identity(op)                // outside every thread loop: all threads
 *     for (t, m, E) bind threadIdx.x {         // the same loop, the update replaced by
 *       ...  buf.red[0] = op(buf.red[0], v)    // the per-thread partial
 *     }
 *     attr thread_allreduce = OP {             // OP: enum texi_reduce_op as an i32 INT
 *       for (t.red, m, E) bind threadIdx.x {   // names the tag and the participants
 *         buf.red[0] = buf.red[0]
 *       }
 *     }
 *     W                                        // the write of the result
 *     barrier(shared)                          // see below
 *   }
 * The ATTR means: every thread of the block arrives; afterwards buf.red[0] of
 * each thread holds op over buf.red[0] of the threads of the loop (the
 * threads with the same other thread indices and threadIdx.x in [0, E);
 * threads outside it contribute nothing, their partials are the identity
 * anyway), and, like a barrier, every memory access before it is visible
 * after it. The inner FOR carries the tag and the extent and is otherwise
 * inert (a thread loop over a no-op store), so passes, the verifier, the
 * interpreter and the CPU backend may treat the ATTR as transparent.
 * W is `buf[idx] = op(buf[idx], buf.red[0])` (in ATTR "atomic" when the
 * update was: tex_atomic, e.g. the reduction is split across blocks too;
 * the per-thread partial is then a plain local update) under the update's
 * guards that
 * use no variable bound inside the attribute (conjuncts of && split; the
 * others only decided whether a thread contributed). When buf is LOCAL
 * every thread runs W (each owns its copy); otherwise W sits in
 * `for (t.w, 0, 1) bind threadIdx.x` so only thread 0 of the tag writes.
 * The BARRIER follows when buf is SHARED or GLOBAL and is read anywhere
 * else in the innermost enclosing block-bound loop (the whole body when
 * there is none): other threads may read what thread 0 wrote.
 *
 * Why the interpreter still computes the right value: it runs the thread
 * loop's iterations one after another and the local accumulator allocated
 * outside the loop is one storage for all of them, so the partial loop
 * already accumulates over every thread and the (transparent) allreduce
 * changes nothing. On a GPU each thread has its own accumulator and the
 * ATTR is the shuffle/shared-memory allreduce (codegen_cuda_allreduce.c).
 *
 * rewrite builds this output form for thread loop `loop`.
 */
static tex_stmt *rewrite(ar_pass *p, const ar_match *m, tex_stmt *attr, tex_stmt *loop)
{
    tex_ctx *ctx = p->lw->ctx;
    texi_buffer *buf = m->update->u.store.buf;
    char name[128];
    snprintf(name, sizeof name, "%s.red", buf->name);
    tex_expr *one = texi_int_imm(ctx, TEX_I32, 1);
    texi_buffer *acc =
        one ? texi_buffer_new(ctx, name, buf->dtype, TEXI_SCOPE_LOCAL, 1, &one) : NULL;
    if (!acc)
        return NULL;
    tex_expr *a = acc_load(ctx, acc);
    /* the partial is local: an ATTR "atomic" goes with the update to W */
    swap_stmt sw = {m->atomic ? m->atomic : m->update,
                    acc_store(ctx, acc, a ? texi_binary(kind_of(m->op), a, m->v) : NULL)};
    tex_expr *opv = texi_int_imm(ctx, TEX_I32, (int64_t)m->op);
    tex_stmt *items[5];
    int n = 0;
    items[n++] = acc_store(ctx, acc, texi_reduce_identity(ctx, m->op, buf->dtype));
    items[n++] = sw.to ? texi_stmt_mutate(ctx, loop, swap_pre, NULL, &sw) : NULL;
    tex_stmt *red = thread_loop(ctx, loop, "red", loop->u.loop.extent, acc_store(ctx, acc, a));
    items[n++] = red && opv ? texi_attr_named(ctx, TEXI_ATTR_THREAD_ALLREDUCE, opv, red) : NULL;
    items[n++] = result_write(p, m, acc, loop);
    int reads =
        loads_of(ctx, p->scope, texi_buffer_key(buf)) - loads_of(ctx, attr, texi_buffer_key(buf));
    if (buf->scope != TEXI_SCOPE_LOCAL && reads > 0)
        items[n++] = texi_barrier_new(ctx, TEXI_SCOPE_SHARED);
    for (int i = 0; i < n; i++)
        if (!items[i])
            return NULL;
    tex_stmt *seq = texi_seq_new(ctx, n, items);
    return seq ? texi_allocate_new(ctx, acc, seq) : NULL;
}

static tex_stmt *reduction(ar_pass *p, tex_stmt *attr)
{
    tex_stmt *loop = attr->u.attr.body;
    const char *name = some_store(loop);
    if (!loop || loop->kind != TEXI_STMT_FOR || loop->u.loop.for_kind != TEXI_FOR_THREAD) {
        fail(p, name ? name : "?", "is not one thread-bound loop");
        return attr;
    }
    if (loop->u.loop.thread_tag != (int)TEX_THREAD_X) {
        fail(p, name ? name : "?",
             "is bound to another thread index than threadIdx.x: bind the reduce axis to "
             "TEX_THREAD_X");
        return attr;
    }
    if (p->divergent) {
        fail(p, name ? name : "?",
             "lies under a condition on a thread index: every thread of the block must reach it");
        return attr;
    }
    ar_match m;
    if (match(p, loop, &m) < 0)
        return attr;
    tex_stmt *out = rewrite(p, &m, attr, loop);
    if (!out && !p->rc)
        p->rc = TEX_ENOMEM;
    return out ? out : attr;
}

/* ------------------------------------------------------------ the walk */

static tex_stmt *walk_pre(tex_stmt *s, void *ud);

static tex_stmt *walk_body(ar_pass *p, tex_stmt *s)
{
    tex_stmt *r = texi_stmt_mutate(p->lw->ctx, s, walk_pre, NULL, p);
    if (!r && !p->rc)
        p->rc = TEX_ENOMEM;
    return r ? r : s;
}

static tex_stmt *walk_for(ar_pass *p, tex_stmt *s)
{
    int tag = s->u.loop.thread_tag;
    tex_stmt *saved = p->scope;
    int n0 = p->n_tvars;
    bool block = tag >= (int)TEX_BLOCK_X && tag <= (int)TEX_BLOCK_Z;
    if (block)
        p->scope = s;
    else if (tag >= (int)TEX_THREAD_X && tag <= (int)TEX_THREAD_Z && p->n_tvars < MAX_TVARS)
        p->tvars[p->n_tvars++] = s->u.loop.var;
    tex_stmt *body = walk_body(p, s->u.loop.body);
    p->scope = saved;
    p->n_tvars = n0;
    if (body == s->u.loop.body)
        return s;
    tex_stmt *r = texi_for_new(p->lw->ctx, s->u.loop.var, s->u.loop.min, s->u.loop.extent,
                               s->u.loop.for_kind, tag, body);
    return r ? r : s;
}

static tex_stmt *walk_if(ar_pass *p, tex_stmt *s)
{
    bool saved = p->divergent;
    p->divergent |= uses_any(s->u.ifs.cond, p->tvars, p->n_tvars);
    tex_stmt *t = walk_body(p, s->u.ifs.then_s);
    tex_stmt *f = s->u.ifs.else_s ? walk_body(p, s->u.ifs.else_s) : NULL;
    p->divergent = saved;
    if (t == s->u.ifs.then_s && f == s->u.ifs.else_s)
        return s;
    tex_stmt *r = texi_if_new(p->lw->ctx, s->u.ifs.cond, t, f);
    return r ? r : s;
}

static tex_stmt *walk_pre(tex_stmt *s, void *ud)
{
    ar_pass *p = ud;
    if (p->rc)
        return s;
    if (s->kind == TEXI_STMT_FOR && s->u.loop.for_kind == TEXI_FOR_THREAD)
        return walk_for(p, s);
    if (s->kind == TEXI_STMT_IF)
        return walk_if(p, s);
    if (texi_attr_is(s, TEXI_ATTR_CROSS_THREAD_REDUCTION))
        return reduction(p, s);
    return NULL;
}

int texi_pass_thread_allreduce(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    ar_pass p = {.lw = lw, .scope = in};
    tex_stmt *r = walk_body(&p, in);
    if (p.rc)
        return p.rc;
    *out = r;
    return 0;
}
