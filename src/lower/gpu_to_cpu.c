/*
 * Pass gpu_to_cpu: GPU-style code with barriers made serial for the CPU
 * (Polygeist's barrier fission and loop interchange, on tex's loop AST).
 *
 * On a GPU the threads of a block run concurrently and meet at each
 * barrier; the CPU backend runs a thread-bound loop as an ordinary loop, one
 * thread after another, which is only right when no barrier is inside. This
 * pass rewrites every thread loop (THREAD_X/Y/Z) whose body has a BARRIER
 * so that the barriers disappear and each barrier-free segment runs for all
 * threads before the next segment starts, exactly the lock-step semantics
 * of the interpreter (src/interp); how each kind of statement is rewritten:
 * above split(). A barrier under thread-divergent control flow is
 * TEX_EUNAVAILABLE (it is undefined in CUDA too).
 * Blocks (BLOCK_* loops) are untouched here; pass gpu_blocks, next, runs
 * them in parallel (gpu_blocks.c).
 * Code without barriers is returned unchanged, so CPU builds of ordinary
 * schedules are not affected.
 */
#include "lower/lower.h"

#include <string.h>

#define MAX_THREAD_LOOPS 3

typedef struct {
    tex_ctx *ctx;
    const tex_stmt *loops[MAX_THREAD_LOOPS]; /* the thread nest L, outer first */
    int n_loops;
    int rc;
} fission;

static int fail(fission *fs, const char *what, const char *name)
{
    if (!fs->rc)
        fs->rc = texi_error(fs->ctx, TEX_EUNAVAILABLE,
                            "tex_build: the CPU backend cannot run %s '%s' around a barrier: it "
                            "depends on the thread index (a barrier under thread-divergent "
                            "control flow)",
                            what, name);
    return fs->rc;
}

/* Whether e mentions the variable of a loop of the thread nest. */
static bool thread_dependent(const fission *fs, tex_expr *e)
{
    for (int i = 0; e && i < fs->n_loops; i++)
        if (texi_expr_uses_var(e, fs->loops[i]->u.loop.var))
            return true;
    return false;
}

/* s inside copies of the thread nest's loops. */
static tex_stmt *wrap(fission *fs, tex_stmt *s)
{
    for (int i = fs->n_loops - 1; s && i >= 0; i--) {
        const tex_stmt *l = fs->loops[i];
        s = texi_for_new(fs->ctx, l->u.loop.var, l->u.loop.min, l->u.loop.extent, TEXI_FOR_THREAD,
                         l->u.loop.thread_tag, s);
    }
    return s;
}

static tex_stmt *split(fission *fs, tex_stmt *s);
static tex_stmt *expand_local(fission *fs, tex_stmt *s);

/* SEQ: barrier-free runs of items become one segment each. */
static tex_stmt *split_seq(fission *fs, tex_stmt *s)
{
    int n = s->u.seq.n, n_out = 0, run = 0;
    tex_stmt **out = texi_alloc(fs->ctx, sizeof *out * (size_t)(n + 1), "gpu_to_cpu");
    tex_stmt **pending = texi_alloc(fs->ctx, sizeof *pending * (size_t)(n + 1), "gpu_to_cpu");
    if (!out || !pending)
        return NULL;
    for (int i = 0; i <= n; i++) {
        tex_stmt *item = i < n ? s->u.seq.items[i] : NULL;
        if (item && !texi_stmt_has_barrier(item)) {
            pending[run++] = item;
            continue;
        }
        if (run && !(out[n_out++] = wrap(fs, texi_seq_new(fs->ctx, run, pending))))
            return NULL;
        run = 0;
        if (item && item->kind != TEXI_STMT_BARRIER && !(out[n_out++] = split(fs, item)))
            return NULL;
    }
    return texi_seq_new(fs->ctx, n_out, out);
}

enum { MAX_RANGES = 32 };

/* The ranges of the loops inside a per-thread buffer's scope, under which
 * its new indices are simplified. A variable bound by several loops (a
 * loop and its tail copy) gets the hull of their constant ranges, or none
 * (unbounded) when one is not constant. */
typedef struct {
    texi_range r[MAX_RANGES];
    int n;
} loop_ranges;

/* The hull of range r and [min, min + extent), or false when one is not constant. */
static bool hull(tex_ctx *ctx, texi_range *r, tex_expr *min, tex_expr *extent)
{
    int64_t m0, e0, m1, e1;
    if (!r->min || !texi_expr_is_int_const(r->min, &m0) ||
        !texi_expr_is_int_const(r->extent, &e0) || !texi_expr_is_int_const(min, &m1) ||
        !texi_expr_is_int_const(extent, &e1))
        return false;
    int64_t lo = m0 < m1 ? m0 : m1, hi = m0 + e0 > m1 + e1 ? m0 + e0 : m1 + e1;
    r->min = texi_int_imm(ctx, min->dtype, lo);
    r->extent = texi_int_imm(ctx, extent->dtype, hi - lo);
    return r->min && r->extent;
}

typedef struct {
    tex_ctx *ctx;
    loop_ranges *lr;
} range_walk;

/* lr without the ranges hull() dropped. */
static void compact(loop_ranges *lr)
{
    int n = 0;
    for (int i = 0; i < lr->n; i++)
        if (lr->r[i].min)
            lr->r[n++] = lr->r[i];
    lr->n = n;
}

static bool collect_range(const tex_stmt *s, void *ud)
{
    range_walk *w = ud;
    loop_ranges *lr = w->lr;
    if (s->kind != TEXI_STMT_FOR)
        return true;
    for (int i = 0; i < lr->n; i++)
        if (lr->r[i].var == s->u.loop.var) {
            if (!texi_expr_equal(lr->r[i].min, s->u.loop.min) ||
                !texi_expr_equal(lr->r[i].extent, s->u.loop.extent))
                if (!hull(w->ctx, &lr->r[i], s->u.loop.min, s->u.loop.extent))
                    lr->r[i].min = lr->r[i].extent = NULL; /* dropped by compact() */
            return true;
        }
    if (lr->n < MAX_RANGES) /* a variable left out is unbounded: merely less simplified */
        lr->r[lr->n++] = (texi_range){s->u.loop.var, s->u.loop.min, s->u.loop.extent};
    return true;
}

typedef struct {
    const void *key;
    texi_buffer *to;
    tex_expr *hi_base; /* linear id of the outer threads * (slice size / group) */
    tex_expr *tid;     /* the innermost thread's id: its variable - min */
    tex_expr *threads; /* the innermost thread loop's extent */
    int64_t group;     /* the buffer's last dimension when constant, else 1 */
    const loop_ranges *ranges;
    fission *fs;
} expansion;

/*
 * Element idx of the thread's slice in the array over the threads:
 *     ((hi_base + idx / group) * threads + tid) * group + idx % group
 * (floor division), in idx's dtype: the innermost thread's slices are
 * interleaved by rows of the buffer's last dimension, so that a thread's
 * row and its neighbours' rows are one contiguous run ([outer threads]
 * [leading dims][threadIdx.x][last dim]), the layout gpu_threads needs to
 * vectorize over the thread and the row together. floordiv/floormod keep
 * it exact for any idx; under the loop ranges they reduce to the leading
 * and last coordinates.
 */
static tex_expr *shifted(const expansion *x, tex_expr *idx)
{
    if (!idx)
        return NULL;
    tex_dtype t = idx->dtype;
    tex_expr *g = texi_int_imm(x->fs->ctx, t, x->group);
    tex_expr *hi = x->group > 1 ? texi_binary(TEXI_EXPR_FLOORDIV, idx, g) : idx;
    tex_expr *r = texi_binary(TEXI_EXPR_ADD, texi_convert(x->hi_base, t), hi);
    r = texi_binary(TEXI_EXPR_MUL, r, texi_convert(x->threads, t));
    r = texi_binary(TEXI_EXPR_ADD, r, texi_convert(x->tid, t));
    if (x->group > 1)
        r = texi_binary(TEXI_EXPR_ADD, texi_binary(TEXI_EXPR_MUL, r, g),
                        texi_binary(TEXI_EXPR_FLOORMOD, idx, g));
    const loop_ranges *lr = x->ranges;
    return r ? texi_simplify(r, lr->n, lr->r) : NULL;
}

static tex_expr *expand_load(tex_expr *e, void *ud)
{
    expansion *x = ud;
    if (e->kind != TEXI_EXPR_LOAD || texi_buffer_key(e->u.load.buf) != x->key)
        return NULL;
    tex_expr *idx = texi_expr_mutate(e->u.load.index, expand_load, x);
    tex_expr *r = idx ? texi_load_new(x->to, shifted(x, idx)) : NULL;
    if (!r && !x->fs->rc)
        x->fs->rc = TEX_ENOMEM;
    return r ? r : e;
}

static tex_stmt *expand_store(tex_stmt *s, void *ud)
{
    expansion *x = ud;
    if (s->kind == TEXI_STMT_INTRIN) {
        for (int i = 0; i < s->u.intrin.n_args; i++)
            if (s->u.intrin.args[i].buf && texi_buffer_key(s->u.intrin.args[i].buf) == x->key)
                fail(x->fs, "a tensor intrinsic on the per-thread buffer", x->to->name);
        return NULL;
    }
    if (s->kind != TEXI_STMT_STORE || texi_buffer_key(s->u.store.buf) != x->key)
        return NULL;
    tex_expr *idx = texi_expr_mutate(s->u.store.index, expand_load, x);
    tex_expr *v = texi_expr_mutate(s->u.store.value, expand_load, x);
    tex_stmt *r = idx && v ? texi_store_new(x->fs->ctx, x->to, shifted(x, idx), v) : NULL;
    if (!r && !x->fs->rc)
        x->fs->rc = TEX_ENOMEM;
    return r ? r : s;
}

/* The product of b's dimensions [0, n) in type t. */
static tex_expr *dims_product(tex_ctx *ctx, const texi_buffer *b, int n, tex_dtype t)
{
    tex_expr *p = texi_int_imm(ctx, t, 1);
    for (int d = 0; p && d < n; d++)
        p = texi_binary(TEXI_EXPR_MUL, p, texi_convert(b->shape[d], t));
    return p;
}

/* A LOCAL buffer inside the thread nest: one slice per thread, laid out
 * as shifted() says, since its values live across segments. */
static tex_stmt *expand_local(fission *fs, tex_stmt *s)
{
    const texi_buffer *b = s->u.alloc.buf;
    tex_ctx *ctx = fs->ctx;
    const tex_stmt *inner = fs->loops[fs->n_loops - 1];
    tex_dtype t = fs->loops[0]->u.loop.var->dtype; /* the index type of thread code */
    expansion x = {.key = texi_buffer_key(b), .group = 1, .fs = fs};
    int lead = b->ndim;
    if (b->ndim && texi_expr_is_int_const(b->shape[b->ndim - 1], &x.group) && x.group >= 1)
        lead = b->ndim - 1;
    else
        x.group = 1;
    tex_expr *lin = texi_int_imm(ctx, t, 0), *outer = texi_int_imm(ctx, t, 1);
    for (int i = 0; lin && i < fs->n_loops - 1; i++) {
        const tex_stmt *l = fs->loops[i];
        tex_expr *ext = texi_convert(l->u.loop.extent, t);
        tex_expr *id = texi_binary(TEXI_EXPR_SUB, texi_convert(l->u.loop.var, t),
                                   texi_convert(l->u.loop.min, t));
        lin = texi_binary(TEXI_EXPR_ADD, texi_binary(TEXI_EXPR_MUL, lin, ext), id);
        outer = texi_binary(TEXI_EXPR_MUL, outer, ext);
    }
    tex_expr *hi_slice = dims_product(ctx, b, lead, t);
    x.threads = texi_convert(inner->u.loop.extent, t);
    x.tid = texi_binary(TEXI_EXPR_SUB, texi_convert(inner->u.loop.var, t),
                        texi_convert(inner->u.loop.min, t));
    tex_expr *size =
        texi_binary(TEXI_EXPR_MUL, texi_binary(TEXI_EXPR_MUL, outer, hi_slice),
                    texi_binary(TEXI_EXPR_MUL, x.threads, texi_int_imm(ctx, t, x.group)));
    size = size ? texi_simplify(size, 0, NULL) : NULL;
    x.to = size ? texi_buffer_new(ctx, b->name, b->dtype, TEXI_SCOPE_LOCAL, 1, &size) : NULL;
    x.hi_base =
        lin && hi_slice ? texi_simplify(texi_binary(TEXI_EXPR_MUL, lin, hi_slice), 0, NULL) : NULL;
    x.tid = x.tid ? texi_simplify(x.tid, 0, NULL) : NULL;
    if (!x.to || !x.hi_base || !x.tid || !x.threads)
        return NULL;
    loop_ranges lr = {.n = 0};
    range_walk w = {ctx, &lr};
    for (int i = 0; i < fs->n_loops; i++)
        collect_range(fs->loops[i], &w);
    texi_stmt_visit(s->u.alloc.body, collect_range, &w);
    compact(&lr);
    x.ranges = &lr;
    tex_stmt *body = texi_stmt_mutate(ctx, s->u.alloc.body, expand_store, expand_load, &x);
    body = body && !fs->rc ? split(fs, body) : NULL;
    return body ? texi_allocate_new(ctx, x.to, body) : NULL;
}

enum { RECOMPUTE_MAX_NODES = 8 };

/* The size of a LET's value and whether it reads memory the nest writes. */
typedef struct {
    const fission *fs;
    int nodes;
    bool reads_written;
} value_cost;

static bool cost_step(tex_expr *e, void *ud)
{
    value_cost *c = ud;
    c->nodes++;
    if (e->kind == TEXI_EXPR_LOAD && texi_stmt_stores_to(c->fs->loops[0], e->u.load.buf))
        c->reads_written = true;
    return true;
}

/*
 * A LET whose value depends on the thread, around a barrier: its value is
 * live across segments, so each thread's value is either recomputed in
 * every segment that uses it or kept in an array over the threads
 * (Polygeist's min-cut choice, by a fixed rule): recomputed -- the value
 * substituted for the variable -- when it reads no buffer the thread nest
 * stores to (so it is the same after a barrier) and has at most
 * RECOMPUTE_MAX_NODES nodes (an index expression costs less than a store
 * and a load per thread); otherwise stored once into a one-element LOCAL
 * buffer, which expand_local turns into one slice per thread.
 */
static tex_stmt *split_let(fission *fs, tex_stmt *s)
{
    tex_ctx *ctx = fs->ctx;
    value_cost c = {fs, 0, false};
    texi_expr_visit(s->u.let.value, cost_step, &c);
    if (!c.reads_written && c.nodes <= RECOMPUTE_MAX_NODES) {
        tex_stmt *body = texi_stmt_substitute(ctx, s->u.let.body, s->u.let.var, s->u.let.value);
        return body ? split(fs, body) : NULL;
    }
    tex_expr *one = texi_int_imm(ctx, TEX_I32, 1), *zero = texi_int_imm(ctx, TEX_I32, 0);
    tex_expr *var = s->u.let.var;
    texi_buffer *b =
        one ? texi_buffer_new(ctx, var->u.var.name, var->dtype, TEXI_SCOPE_LOCAL, 1, &one) : NULL;
    tex_expr *slot = b && zero ? texi_load_new(b, zero) : NULL;
    tex_stmt *body = slot ? texi_stmt_substitute(ctx, s->u.let.body, var, slot) : NULL;
    tex_stmt *items[2] = {body ? texi_store_new(ctx, b, zero, s->u.let.value) : NULL, body};
    tex_stmt *seq = items[0] ? texi_seq_new(ctx, 2, items) : NULL;
    tex_stmt *alloc = seq ? texi_allocate_new(ctx, b, seq) : NULL;
    return alloc ? expand_local(fs, alloc) : NULL;
}

/*
 * s (inside the thread nest) rewritten without barriers:
 *   - the thread loops met on the way down form the "thread nest" L;
 *   - a statement without a barrier becomes L around it (one copy of the
 *     thread loops per segment, reusing the loop variables);
 *   - SEQ: consecutive barrier-free items form one segment; BARRIER items
 *     end a segment and vanish;
 *   - a serial/unrolled loop, IF or LET with a barrier inside moves outside
 *     L (interchange); a loop's bounds or an IF's condition must not depend
 *     on a thread variable (a barrier under thread-divergent control flow
 *     is undefined in CUDA too): otherwise TEX_EUNAVAILABLE naming the
 *     loop; a LET whose value does is recomputed or kept per thread
 *     (split_let);
 *   - ATTR stays around the rewritten body;
 *   - ALLOCATE of shared or global scope moves outside L (one buffer per
 *     block, as on the GPU); a LOCAL buffer is per thread, so it is
 *     expanded: one slice per thread of L, since its values live across
 *     segments (expand_local; layout: shifted());
 *   - a thread loop nested inside joins L.
 */
static tex_stmt *split(fission *fs, tex_stmt *s)
{
    if (fs->rc)
        return NULL;
    if (!texi_stmt_has_barrier(s))
        return wrap(fs, s);
    tex_ctx *ctx = fs->ctx;
    tex_stmt *a, *b;
    switch (s->kind) {
    case TEXI_STMT_SEQ:
        return split_seq(fs, s);
    case TEXI_STMT_BARRIER:
        return texi_seq_new(ctx, 0, NULL);
    case TEXI_STMT_FOR:
        if (texi_stmt_is_thread_loop(s, false)) {
            if (fs->n_loops == MAX_THREAD_LOOPS)
                return fail(fs, "a fourth nested thread loop", s->u.loop.var->u.var.name), NULL;
            fs->loops[fs->n_loops++] = s;
            a = split(fs, s->u.loop.body);
            fs->n_loops--;
            return a;
        }
        if (thread_dependent(fs, s->u.loop.min) || thread_dependent(fs, s->u.loop.extent))
            return fail(fs, "loop", s->u.loop.var->u.var.name), NULL;
        a = split(fs, s->u.loop.body);
        return a ? texi_for_new(ctx, s->u.loop.var, s->u.loop.min, s->u.loop.extent,
                                s->u.loop.for_kind == TEXI_FOR_PARALLEL ? TEXI_FOR_SERIAL
                                                                        : s->u.loop.for_kind,
                                s->u.loop.thread_tag, a)
                 : NULL;
    case TEXI_STMT_IF:
        if (thread_dependent(fs, s->u.ifs.cond))
            return fail(fs, "a condition", "if"), NULL;
        a = split(fs, s->u.ifs.then_s);
        b = s->u.ifs.else_s ? split(fs, s->u.ifs.else_s) : NULL;
        return a && (b || !s->u.ifs.else_s) ? texi_if_new(ctx, s->u.ifs.cond, a, b) : NULL;
    case TEXI_STMT_LET:
        if (thread_dependent(fs, s->u.let.value))
            return split_let(fs, s);
        return texi_stmt_with_body(ctx, s, split(fs, s->u.let.body));
    case TEXI_STMT_ATTR:
        return texi_stmt_with_body(ctx, s, split(fs, s->u.attr.body));
    case TEXI_STMT_ALLOCATE:
        if (s->u.alloc.buf->scope == TEXI_SCOPE_LOCAL && fs->n_loops)
            return expand_local(fs, s);
        return texi_stmt_with_body(ctx, s, split(fs, s->u.alloc.body));
    case TEXI_STMT_REALIZE:
    case TEXI_STMT_PROVIDE:
    case TEXI_STMT_STORE:
    case TEXI_STMT_EVALUATE:
    case TEXI_STMT_INTRIN:
    case TEXI_STMT_KIND_COUNT:
        break;
    }
    fail(fs, "a tensor-level statement", texi_stmt_kind_names[s->kind]);
    return NULL;
}

/* Thread loops with a barrier inside start a thread nest; a barrier outside
 * every thread loop (between two thread nests of a block) is a no-op when
 * the nests run one after another; others stay. */
static tex_stmt *visit(tex_stmt *s, void *ud)
{
    fission *fs = ud;
    if (!fs->rc && s->kind == TEXI_STMT_BARRIER)
        return texi_seq_new(fs->ctx, 0, NULL);
    if (fs->rc || !texi_stmt_is_thread_loop(s, false) || !texi_stmt_has_barrier(s))
        return NULL;
    tex_stmt *r = split(fs, s);
    if (!r && !fs->rc)
        fs->rc = tex_errcode(fs->ctx) ? tex_errcode(fs->ctx) : TEX_ENOMEM;
    return r ? r : s;
}

int texi_pass_gpu_to_cpu(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    fission fs = {.ctx = lw->ctx};
    tex_stmt *r = texi_stmt_has_barrier(in) ? texi_stmt_mutate(lw->ctx, in, visit, NULL, &fs) : in;
    if (fs.rc)
        return fs.rc;
    return texi_pass_result(lw, r, out);
}
