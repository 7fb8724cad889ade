/*
 * randsched.h: the seeded random-schedule generator of the differential
 * tests that run arbitrary primitive sequences (test_lower_random through
 * the interpreter, test_jit_random through the CPU JIT), and their
 * workloads. Header-only (static inline functions); include it after tt.h
 * and support/schedgen.h.
 *
 * rs_begin builds a shape variant of a workload in a new context and applies
 * 0 to 8 random primitives to a schedule of its output:
 *   split (factor 1 .. extent+3, so factors above the extent occur), split by
 *   nparts, tile, fuse of adjacent leaves, reorder (a random permutation of
 *   all leaves: any order is legal for a single stage), parallel / vectorize
 *   / unroll, compute_inline, compute_at into a random leaf of a consumer,
 *   compute_root, cache_read / cache_write followed by compute_at, rfactor,
 *   prefetch (of an input, or of the output by its own stage, 1 .. 40
 *   iterations ahead, at a random leaf), reorder_storage (a random order of
 *   the output dims, sometimes with a random storage_align).
 * A primitive may refuse (TEX_EINVAL): then the schedule must be exactly as
 * before (checked on tex_schedule_str for every fourth seed) and the
 * generator goes on; any other error marks the schedule broken. The steps go
 * to the generator's log. How a schedule is then checked (interpreter or
 * JIT, which targets) is the test's business.
 *
 * RS_WORKLOADS(X) lists the workloads with their shape variants (the last
 * n_sym symbolic) and the interpreter test's number of seeds, which the JIT
 * test scales.
 */
#ifndef TEX_TESTS_SUPPORT_RANDSCHED_H
#define TEX_TESTS_SUPPORT_RANDSCHED_H

#include "support/schedgen.h"

enum rs_prim {
    RS_SPLIT,
    RS_NPARTS,
    RS_TILE,
    RS_FUSE,
    RS_REORDER,
    RS_ANNOTATE,
    RS_INLINE,
    RS_AT,
    RS_ROOT,
    RS_CACHE_READ,
    RS_CACHE_WRITE,
    RS_RFACTOR,
    RS_PREFETCH,
    RS_STORAGE,
    RS_COUNT
};

static const char *const rs_prim_names[RS_COUNT] = {
    "split",       "split_nparts",   "tile",       "fuse",           "reorder",
    "annotate",    "compute_inline", "compute_at", "compute_root",   "cache_read",
    "cache_write", "rfactor",        "prefetch",   "reorder_storage"};

/* What the generator returns when it does not call the primitive at all (no
 * candidate axis, or a request it knows to be illegal in composition). */
#define RS_SKIP 1

/* Per program: what the generator did with each primitive (rs_print_summary). */
static long rs_n_tried[RS_COUNT], rs_n_applied[RS_COUNT], rs_n_rejected[RS_COUNT],
    rs_n_skipped[RS_COUNT];

#define RS_MAX_STAGES 24

/* The generator's state for one schedule. */
typedef struct {
    ops_wl *w;
    tex_schedule *s;
    uint64_t rng;
    ops_log log;
    int n_t;
    tex_tensor *t[RS_MAX_STAGES]; /* computed tensors whose stages the generator schedules */
    bool check_unchanged;         /* compare tex_schedule_str around refused primitives */
    bool broken; /* a primitive failed other than with EINVAL, or changed on refusal */
    char why[512];
} rs_gen;

static inline int64_t rs_rnd(rs_gen *g, int64_t lo, int64_t hi)
{
    return ops_rand_range(&g->rng, lo, hi);
}

static inline tex_stage *rs_stage(rs_gen *g, tex_tensor *t)
{
    return tex_stage_of(g->s, t);
}

static inline tex_tensor *rs_pick_tensor(rs_gen *g)
{
    return g->t[rs_rnd(g, 0, g->n_t - 1)];
}

static inline tex_iter *rs_pick_leaf(rs_gen *g, tex_stage *st)
{
    int n = tex_stage_naxes(st);
    return n > 0 ? tex_stage_axis(st, (int)rs_rnd(g, 0, n - 1)) : NULL;
}

static inline void rs_add_tensor(rs_gen *g, tex_tensor *t)
{
    if (t && g->n_t < RS_MAX_STAGES)
        g->t[g->n_t++] = t;
}

/* ------------------------------------------------------------ primitives */

static inline int rs_do_split(rs_gen *g, tex_stage *st, bool nparts)
{
    tex_iter *iv = rs_pick_leaf(g, st), *o, *i;
    if (!iv)
        return RS_SKIP;
    int64_t f = rs_rnd(g, 1, sg_extent_of(iv, 8) + 3);
    ops_logf(&g->log, "    %s(%s, %s, %lld)\n", nparts ? "split_nparts" : "split",
             tex_tensor_name(st->tensor), iv->name, (long long)f);
    tex_expr *fe = tex_int(g->w->ctx, f);
    return nparts ? tex_split_nparts(st, iv, fe, &o, &i) : tex_split(st, iv, fe, &o, &i);
}

static inline int rs_do_tile(rs_gen *g, tex_stage *st)
{
    int n = tex_stage_naxes(st);
    if (n < 2)
        return RS_SKIP;
    int a = (int)rs_rnd(g, 0, n - 2), b = (int)rs_rnd(g, a + 1, n - 1);
    tex_iter *x = tex_stage_axis(st, a), *y = tex_stage_axis(st, b), *r[4];
    int64_t fx = rs_rnd(g, 1, sg_extent_of(x, 8) + 2), fy = rs_rnd(g, 1, sg_extent_of(y, 8) + 2);
    ops_logf(&g->log, "    tile(%s, %s, %s, %lld, %lld)\n", tex_tensor_name(st->tensor), x->name,
             y->name, (long long)fx, (long long)fy);
    return tex_tile(st, x, y, tex_int(g->w->ctx, fx), tex_int(g->w->ctx, fy), &r[0], &r[1], &r[2],
                    &r[3]);
}

static inline int rs_do_fuse(rs_gen *g, tex_stage *st)
{
    int n = tex_stage_naxes(st);
    if (n < 2)
        return RS_SKIP;
    int a = (int)rs_rnd(g, 0, n - 2);
    tex_iter *o = tex_stage_axis(st, a), *i = tex_stage_axis(st, a + 1), *f;
    ops_logf(&g->log, "    fuse(%s, %s, %s)\n", tex_tensor_name(st->tensor), o->name, i->name);
    return tex_fuse(st, o, i, &f);
}

/* Shuffles order[0..n) and logs `prim(stage: order...)`. */
static inline void rs_shuffle(rs_gen *g, const char *prim, const tex_stage *st, int n,
                              tex_iter *order[])
{
    for (int k = n - 1; k > 0; k--) {
        int j = (int)rs_rnd(g, 0, k);
        tex_iter *t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    ops_logf(&g->log, "    %s(%s:", prim, tex_tensor_name(st->tensor));
    for (int k = 0; k < n; k++)
        ops_logf(&g->log, " %s", order[k]->name);
    ops_logf(&g->log, ")\n");
}

static inline int rs_do_reorder(rs_gen *g, tex_stage *st)
{
    int n = tex_stage_naxes(st);
    if (n < 1 || n > 32)
        return RS_SKIP;
    tex_iter *order[32];
    for (int k = 0; k < n; k++)
        order[k] = tex_stage_axis(st, k);
    rs_shuffle(g, "reorder", st, n, order);
    return tex_reorder(st, n, order);
}

/* tex_reorder_storage of st's output dims in a random order, then, half
 * the time, tex_storage_align of a random one (factor 1 .. 9). */
static inline int rs_do_storage(rs_gen *g, tex_stage *st)
{
    int n = st->op->n_axes;
    if (n < 1 || n > 32)
        return RS_SKIP;
    tex_iter *order[32];
    for (int k = 0; k < n; k++)
        order[k] = st->op->axes[k];
    rs_shuffle(g, "reorder_storage", st, n, order);
    int rc = tex_reorder_storage(st, n, order);
    if (rc != 0 || rs_rnd(g, 0, 1) == 0)
        return rc;
    tex_iter *iv = order[rs_rnd(g, 0, n - 1)];
    int factor = (int)rs_rnd(g, 1, 9), offset = (int)rs_rnd(g, 0, factor - 1);
    ops_logf(&g->log, "    storage_align(%s, %s, %d, %d)\n", tex_tensor_name(st->tensor), iv->name,
             factor, offset);
    return tex_storage_align(st, iv, factor, offset);
}

static inline int rs_do_annotate(rs_gen *g, tex_stage *st)
{
    tex_iter *iv = rs_pick_leaf(g, st);
    if (!iv)
        return RS_SKIP;
    int which = (int)rs_rnd(g, 0, 2);
    bool reduce = iv->kind == TEXI_ITER_REDUCE; /* vectorized as a reduction */
    static const char *const names[3] = {"parallel", "vectorize", "unroll"};
    ops_logf(&g->log, "    %s%s(%s, %s)\n", names[which], which == 1 && reduce ? "_reduce" : "",
             tex_tensor_name(st->tensor), iv->name);
    return which == 0   ? tex_parallel(st, iv)
           : which == 1 ? (reduce ? tex_vectorize_reduce(st, iv) : tex_vectorize(st, iv))
                        : tex_unroll(st, iv);
}

/* The only stage reading t directly, or NULL: computing t at a loop of its
 * sole consumer is always legal, at one of several consumers never (the
 * others would not run inside that loop). */
static inline tex_stage *rs_sole_consumer(rs_gen *g, tex_tensor *t)
{
    int n = 0;
    tex_stage **cs = texi_schedule_consumers(g->s, t, &n);
    tex_clear_error(g->w->ctx);
    return cs && n == 1 ? cs[0] : NULL;
}

/* Whether some stage is computed at a loop of st (st must keep its loops). */
static inline bool rs_has_attached(rs_gen *g, const tex_stage *st)
{
    for (int k = 0; k < g->s->n_stages; k++)
        if (g->s->stages[k]->attach == TEXI_ATTACH_AT && g->s->stages[k]->attach_stage == st)
            return true;
    return false;
}

static inline int rs_attach(rs_gen *g, tex_tensor *t, tex_stage *parent)
{
    tex_iter *iv = parent && parent->attach != TEXI_ATTACH_INLINE ? rs_pick_leaf(g, parent) : NULL;
    if (!iv)
        return RS_SKIP;
    ops_logf(&g->log, "    compute_at(%s, %s, %s)\n", tex_tensor_name(t),
             tex_tensor_name(parent->tensor), iv->name);
    return tex_compute_at(rs_stage(g, t), parent, iv);
}

/* compute_at of a random tensor that has a sole consumer, at one of its leaves. */
static inline int rs_do_at(rs_gen *g)
{
    tex_tensor *cand[RS_MAX_STAGES];
    tex_stage *cons[RS_MAX_STAGES];
    int n = 0;
    for (int k = 0; k < g->n_t; k++) {
        tex_stage *c = g->t[k] != g->w->out ? rs_sole_consumer(g, g->t[k]) : NULL;
        if (c && c->attach != TEXI_ATTACH_INLINE) {
            cand[n] = g->t[k];
            cons[n++] = c;
        }
    }
    if (n == 0)
        return RS_SKIP;
    int k = (int)rs_rnd(g, 0, n - 1);
    return rs_attach(g, cand[k], cons[k]);
}

static inline int rs_do_inline(rs_gen *g, tex_tensor *t)
{
    if (rs_has_attached(g, rs_stage(g, t)))
        return RS_SKIP; /* would strand the stages computed at its loops */
    ops_logf(&g->log, "    compute_inline(%s)\n", tex_tensor_name(t));
    return tex_compute_inline(rs_stage(g, t));
}

static inline int rs_do_root(rs_gen *g, tex_tensor *t)
{
    ops_logf(&g->log, "    compute_root(%s)\n", tex_tensor_name(t));
    return tex_compute_root(rs_stage(g, t));
}

/* Applies a follow-up primitive (after a cache stage was made): its refusal
 * is fine, any other error is not. */
static inline void rs_follow_up(rs_gen *g, int rc)
{
    if (rc < 0 && rc != TEX_EINVAL && !g->broken) {
        g->broken = true;
        snprintf(g->why, sizeof g->why, "a follow-up step returned %d: %s", rc,
                 tex_errmsg(g->w->ctx));
    }
    tex_clear_error(g->w->ctx);
}

static inline int rs_do_cache_read(rs_gen *g)
{
    int n_src = g->w->n_in + g->n_t, k = (int)rs_rnd(g, 0, n_src - 1), n = 0;
    tex_tensor *t = k < g->w->n_in ? g->w->in[k] : g->t[k - g->w->n_in];
    if (t == g->w->out)
        t = g->w->in[rs_rnd(g, 0, g->w->n_in - 1)];
    tex_stage *ts = k < g->w->n_in ? NULL : rs_stage(g, t);
    if (ts && ts->attach == TEXI_ATTACH_AT)
        return RS_SKIP; /* the cache stage, at root, would read t outside t's loop */
    tex_stage **cs = texi_schedule_consumers(g->s, t, &n);
    tex_clear_error(g->w->ctx);
    if (!cs || n == 0 || n > 8)
        return RS_SKIP;
    tex_tensor *readers[8];
    int nr = (int)rs_rnd(g, 1, n);
    for (int r = 0; r < nr; r++)
        readers[r] = cs[r]->tensor;
    tex_scope sc = rs_rnd(g, 0, 1) ? TEX_SCOPE_LOCAL : TEX_SCOPE_GLOBAL;
    ops_logf(&g->log, "    %s.cache = cache_read(%s, %s, %d readers, first %s)\n",
             tex_tensor_name(t), tex_tensor_name(t), sc == TEX_SCOPE_LOCAL ? "local" : "global", nr,
             tex_tensor_name(readers[0]));
    tex_tensor *c = tex_cache_read(g->s, t, sc, nr, readers);
    if (!c)
        return tex_errcode(g->w->ctx) ? tex_errcode(g->w->ctx) : TEX_EINTERNAL;
    rs_add_tensor(g, c);
    if (nr == 1 && rs_rnd(g, 0, 9) < 7)
        rs_follow_up(g, rs_attach(g, c, rs_stage(g, readers[0])));
    return 0;
}

static inline int rs_do_cache_write(rs_gen *g, tex_tensor *t)
{
    if (rs_has_attached(g, rs_stage(g, t)))
        return RS_SKIP; /* its producers computed at its loops would lose them */
    ops_logf(&g->log, "    %s.local = cache_write(%s, local)\n", tex_tensor_name(t),
             tex_tensor_name(t));
    tex_tensor *c = tex_cache_write(g->s, t, TEX_SCOPE_LOCAL);
    if (!c)
        return tex_errcode(g->w->ctx) ? tex_errcode(g->w->ctx) : TEX_EINTERNAL;
    rs_add_tensor(g, c);
    if (rs_rnd(g, 0, 9) < 7)
        rs_follow_up(g, rs_attach(g, c, rs_stage(g, t)));
    return 0;
}

static inline int rs_do_rfactor(rs_gen *g, tex_tensor *t)
{
    tex_stage *st = rs_stage(g, t);
    if (rs_has_attached(g, st))
        return RS_SKIP; /* its producers would feed the factored stage instead */
    tex_iter *cand[32];
    int n = 0;
    for (int k = 0; k < tex_stage_naxes(st) && n < 32; k++)
        if (tex_stage_axis(st, k)->kind == TEXI_ITER_REDUCE)
            cand[n++] = tex_stage_axis(st, k);
    if (n == 0)
        return RS_SKIP;
    tex_iter *iv = cand[rs_rnd(g, 0, n - 1)];
    int fa = (int)rs_rnd(g, 0, tex_tensor_ndim(t));
    ops_logf(&g->log, "    %s.rf = rfactor(%s, %s, %d)\n", tex_tensor_name(t), tex_tensor_name(t),
             iv->name, fa);
    tex_tensor *c = tex_rfactor(g->s, t, iv, fa);
    if (!c)
        return tex_errcode(g->w->ctx) ? tex_errcode(g->w->ctx) : TEX_EINTERNAL;
    rs_add_tensor(g, c);
    return 0;
}

/* tex_prefetch of a random input (or of the output, by its own stage) at
 * a random leaf of st, or tex_prefetch_at of the iterations ahead of that
 * leaf or of one outside it; a stage that does not read it refuses. */
static inline int rs_do_prefetch(rs_gen *g, tex_stage *st, tex_tensor *t)
{
    tex_iter *iv = rs_pick_leaf(g, st);
    int k = (int)rs_rnd(g, 0, g->w->n_in);
    tex_tensor *of = k < g->w->n_in ? g->w->in[k] : t == g->w->out ? t : NULL;
    if (!iv || !of)
        return RS_SKIP;
    int offset = (int)rs_rnd(g, 1, 40), at = 0;
    while (tex_stage_axis(st, at) != iv)
        at++;
    tex_iter *from = rs_rnd(g, 0, 1) ? iv : tex_stage_axis(st, (int)rs_rnd(g, 0, at));
    ops_logf(&g->log, "    prefetch_at(%s, %s, %s, %s, %d)\n", tex_tensor_name(st->tensor),
             tex_tensor_name(of), iv->name, from->name, offset);
    return tex_prefetch_at(st, of, iv, from, offset);
}

static inline int rs_apply(rs_gen *g, enum rs_prim p)
{
    tex_tensor *t = rs_pick_tensor(g);
    tex_stage *st = rs_stage(g, t);
    switch (p) {
    case RS_SPLIT:
        return rs_do_split(g, st, false);
    case RS_NPARTS:
        return rs_do_split(g, st, true);
    case RS_TILE:
        return rs_do_tile(g, st);
    case RS_FUSE:
        return rs_do_fuse(g, st);
    case RS_REORDER:
        return rs_do_reorder(g, st);
    case RS_ANNOTATE:
        return rs_do_annotate(g, st);
    case RS_INLINE:
        return rs_do_inline(g, t);
    case RS_AT:
        return rs_do_at(g);
    case RS_ROOT:
        return rs_do_root(g, t);
    case RS_CACHE_READ:
        return rs_do_cache_read(g);
    case RS_CACHE_WRITE:
        return rs_do_cache_write(g, t);
    case RS_RFACTOR:
        return rs_do_rfactor(g, t);
    case RS_PREFETCH:
        return rs_do_prefetch(g, st, t);
    case RS_STORAGE:
        return rs_do_storage(g, st);
    case RS_COUNT:
        break;
    }
    return RS_SKIP;
}

/* Weights of the primitives: loop transformations are the most frequent. */
static inline enum rs_prim rs_pick_prim(rs_gen *g)
{
    static const int weight[RS_COUNT] = {6, 2, 3, 3, 3, 3, 2, 4, 1, 2, 2, 2, 2, 2};
    int total = 0;
    for (int k = 0; k < RS_COUNT; k++)
        total += weight[k];
    int r = (int)rs_rnd(g, 0, total - 1);
    for (int k = 0; k < RS_COUNT; k++) {
        if (r < weight[k])
            return (enum rs_prim)k;
        r -= weight[k];
    }
    return RS_SPLIT;
}

static inline void rs_step(rs_gen *g)
{
    enum rs_prim p = rs_pick_prim(g);
    char *before = g->check_unchanged ? tex_schedule_str(g->s) : NULL;
    tex_clear_error(g->w->ctx);
    rs_n_tried[p]++;
    int rc = rs_apply(g, p);
    if (rc == RS_SKIP) {
        rs_n_skipped[p]++;
    } else if (rc == 0) {
        rs_n_applied[p]++;
    } else if (rc == TEX_EINVAL) {
        rs_n_rejected[p]++;
        ops_logf(&g->log, "      -> refused: %s\n", tex_errmsg(g->w->ctx));
        char *after = before ? tex_schedule_str(g->s) : NULL;
        if (before && after && strcmp(before, after) != 0 && !g->broken) {
            g->broken = true;
            snprintf(g->why, sizeof g->why, "a refused %s changed the schedule", rs_prim_names[p]);
        }
        free(after);
    } else if (!g->broken) {
        g->broken = true;
        snprintf(g->why, sizeof g->why, "%s returned %d: %s", rs_prim_names[p], rc,
                 tex_errmsg(g->w->ctx));
    }
    tex_clear_error(g->w->ctx);
    free(before);
}

/* ------------------------------------------------------------- workloads */

/* Builders (sg_workload.build): shape variant v of each, the last one symbolic. */

static inline void rs_wl_matmul(ops_wl *w, int v)
{
    static const int64_t sh[][3] = {{7, 13, 5}, {1, 31, 3}, {13, 7, 1}, {6, 5, 7}};
    ops_matmul(w, sh[v][0], sh[v][1], sh[v][2], v == 3);
}

static inline void rs_wl_batch_matmul(ops_wl *w, int v)
{
    static const int64_t sh[][4] = {{2, 5, 7, 3}, {1, 1, 13, 7}, {3, 4, 5, 6}};
    ops_batch_matmul(w, sh[v][0], sh[v][1], sh[v][2], sh[v][3], v == 2);
}

static inline void rs_wl_conv2d(ops_wl *w, int v)
{
    static const int64_t sh[][9] = {{1, 2, 5, 5, 3, 3, 3, 1, 1},
                                    {1, 1, 7, 7, 2, 3, 3, 2, 1},
                                    {2, 1, 4, 3, 1, 1, 1, 1, 0},
                                    {1, 2, 6, 5, 2, 3, 2, 1, 1}};
    const int64_t *s = sh[v];
    ops_conv2d(w, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], v == 3);
}

static inline void rs_wl_softmax(ops_wl *w, int v)
{
    static const int64_t sh[][2] = {{7, 13}, {1, 31}, {5, 7}};
    ops_softmax(w, sh[v][0], sh[v][1], v == 2);
}

static inline void rs_wl_layernorm(ops_wl *w, int v)
{
    static const int64_t sh[][2] = {{7, 13}, {3, 1}, {4, 9}};
    ops_layernorm(w, sh[v][0], sh[v][1], v == 2);
}

static inline void rs_wl_transpose(ops_wl *w, int v)
{
    static const int64_t sh[][2] = {{7, 13}, {1, 31}, {13, 7}};
    ops_transpose(w, sh[v][0], sh[v][1], v == 2);
}

static inline void rs_wl_maxpool(ops_wl *w, int v)
{
    static const int64_t sh[][6] = {{1, 2, 7, 7, 3, 2}, {1, 3, 5, 4, 2, 1}, {1, 2, 6, 7, 3, 2}};
    const int64_t *s = sh[v];
    ops_pool2d(w, s[0], s[1], s[2], s[3], s[4], s[5], true, v == 2);
}

static inline void rs_wl_avgpool(ops_wl *w, int v)
{
    static const int64_t sh[][6] = {{1, 2, 7, 7, 3, 2}, {1, 1, 3, 5, 1, 1}, {1, 3, 5, 6, 2, 2}};
    const int64_t *s = sh[v];
    ops_pool2d(w, s[0], s[1], s[2], s[3], s[4], s[5], false, v == 2);
}

static inline void rs_wl_elemwise(ops_wl *w, int v)
{
    static const int64_t sh[][2] = {{7, 13}, {1, 1}, {5, 11}};
    ops_elemwise(w, sh[v][0], sh[v][1], v == 2);
}

/* variant: shape (7x13, 13x1, 3x5x7 over two axes, symbolic 5x11) */
static inline void rs_reduce_variant(ops_wl *w, int op, bool where, int v)
{
    static const int64_t sh[][3] = {{7, 13, 1}, {13, 1, 1}, {3, 5, 7}, {5, 11, 1}};
    ops_reduce(w, op, where, v == 2, sh[v][0], sh[v][1], sh[v][2], v == 3);
}

static inline void rs_wl_sum(ops_wl *w, int v)
{
    rs_reduce_variant(w, 0, false, v);
}

static inline void rs_wl_prod(ops_wl *w, int v)
{
    rs_reduce_variant(w, 1, false, v);
}

static inline void rs_wl_max(ops_wl *w, int v)
{
    rs_reduce_variant(w, 2, false, v);
}

static inline void rs_wl_min(ops_wl *w, int v)
{
    rs_reduce_variant(w, 3, false, v);
}

static inline void rs_wl_sum_where(ops_wl *w, int v)
{
    rs_reduce_variant(w, 0, true, v);
}

static inline void rs_wl_max_where(ops_wl *w, int v)
{
    rs_reduce_variant(w, 2, true, v);
}

/* ------------------------------------------------------------ the driver */

/* Workloads: X(name, shape variants, symbolic ones, interpreter seeds). */
#define RS_WORKLOADS(X)                                                                            \
    X(matmul, 4, 1, 300)                                                                           \
    X(batch_matmul, 3, 1, 200)                                                                     \
    X(conv2d, 4, 1, 240)                                                                           \
    X(softmax, 3, 1, 240)                                                                          \
    X(layernorm, 3, 1, 240)                                                                        \
    X(transpose, 3, 1, 160)                                                                        \
    X(maxpool, 3, 1, 160)                                                                          \
    X(avgpool, 3, 1, 160)                                                                          \
    X(elemwise, 3, 1, 240)                                                                         \
    X(sum, 4, 1, 160)                                                                              \
    X(prod, 4, 1, 160)                                                                             \
    X(max, 4, 1, 160)                                                                              \
    X(min, 4, 1, 160)                                                                              \
    X(sum_where, 4, 1, 160)                                                                        \
    X(max_where, 4, 1, 160)

/* Builds a variant of wl in a new context (w->ctx, freed by the caller) and
 * a random schedule of it into g. false when a primitive broke the schedule
 * (reported when `report`). */
static inline bool rs_begin(rs_gen *g, ops_wl *w, const sg_workload *wl, uint64_t seed, bool report)
{
    ops_init(w, tex_ctx_new(), wl->name);
    *g = (rs_gen){.w = w, .rng = sg_rng(seed, 12345)};
    sg_build(wl, w, &g->rng, seed);
    g->s = tex_schedule_new(w->ctx, 1, &w->out);
    for (int k = 0; k < w->n_mid; k++)
        rs_add_tensor(g, w->mid[k]);
    rs_add_tensor(g, w->out);
    g->check_unchanged = seed % 4 == 0;
    int n_steps = (int)rs_rnd(g, 0, 8);
    for (int k = 0; k < n_steps; k++)
        rs_step(g);
    if (g->broken && report)
        ops_report(w, seed, &g->log, NULL, g->why);
    return !g->broken;
}

/* Prints what the generator did with each primitive in this program. */
static inline void rs_print_summary(void)
{
    long applied = 0, rejected = 0;
    for (int p = 0; p < RS_COUNT; p++) {
        printf("  %-14s tried %6ld  applied %6ld  refused %6ld  skipped %6ld\n", rs_prim_names[p],
               rs_n_tried[p], rs_n_applied[p], rs_n_rejected[p], rs_n_skipped[p]);
        applied += rs_n_applied[p];
        rejected += rs_n_rejected[p];
    }
    printf("  primitives applied %ld, refused %ld\n", applied, rejected);
}

#endif
