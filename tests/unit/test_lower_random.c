/*
 * Differential testing of the whole lowering pipeline with random legal
 * schedules: for every standard workload of tests/support/ops.h and several
 * shapes (primes, 1, sizes no factor divides, symbolic sizes bound at call
 * time, passed through the arrays' shapes or as VAR parameters), a seeded
 * generator applies a random sequence of primitives:
 *   split (factor 1 .. extent+3, so factors above the extent occur), split by
 *   nparts, tile, fuse of adjacent leaves, reorder (a random permutation of
 *   all leaves: any order is legal for a single stage), parallel / vectorize
 *   / unroll, compute_inline, compute_at into a random leaf of a consumer,
 *   compute_root, cache_read / cache_write followed by compute_at, rfactor.
 * A primitive may refuse (TEX_EINVAL): then the schedule must be exactly as
 * before (checked on tex_schedule_str for every fourth schedule) and the
 * generator goes on. Every schedule is lowered, interpreted on random inputs
 * and compared with the reference evaluator. Each workload prints one
 * PASS/FAIL line; a summary gives schedules tried and primitives applied and
 * rejected. A failure prints its seed, the steps and the lowered AST;
 * TEX_RANDOM_SEED=<n> reruns one seed of every workload.
 *
 * Then hand-written schedules, one per workload family: GPU-style binding
 * (blocks and threads, local accumulator), conv2d with the padding inlined or
 * computed per output row (stride 2, symbolic sizes), softmax / layernorm
 * statistics per row, rfactor, cached transpose tiles, reduce loops
 * outermost, an inlined elementwise chain fused and vectorized, and the tail
 * strategies (SHIFT_INWARDS over a too short symbolic extent must fail at
 * call time).
 */
#include "tt.h"
#include "support/ops.h"
#include "support/schedgen.h"

enum prim {
    P_SPLIT,
    P_NPARTS,
    P_TILE,
    P_FUSE,
    P_REORDER,
    P_ANNOTATE,
    P_INLINE,
    P_AT,
    P_ROOT,
    P_CACHE_READ,
    P_CACHE_WRITE,
    P_RFACTOR,
    P_COUNT
};

static const char *const prim_names[P_COUNT] = {
    "split",          "split_nparts", "tile",         "fuse",       "reorder",     "annotate",
    "compute_inline", "compute_at",   "compute_root", "cache_read", "cache_write", "rfactor"};

/* What the generator returns when it does not call the primitive at all (no
 * candidate axis, or a request it knows to be illegal in composition). */
#define SKIP 1

static long n_tried[P_COUNT], n_applied[P_COUNT], n_rejected[P_COUNT], n_skipped[P_COUNT];
static long n_schedules, n_failed_total;

#define MAX_STAGES 24

/* The generator's state for one schedule. */
typedef struct {
    ops_wl *w;
    tex_schedule *s;
    uint64_t rng;
    ops_log log;
    int n_t;
    tex_tensor *t[MAX_STAGES]; /* computed tensors whose stages the generator schedules */
    bool check_unchanged;      /* compare tex_schedule_str around refused primitives */
    bool broken; /* a primitive failed other than with EINVAL, or changed on refusal */
    char why[512];
} gen;

static int64_t rnd(gen *g, int64_t lo, int64_t hi)
{
    return ops_rand_range(&g->rng, lo, hi);
}

static tex_stage *stage(gen *g, tex_tensor *t)
{
    return tex_stage_of(g->s, t);
}

static tex_tensor *pick_tensor(gen *g)
{
    return g->t[rnd(g, 0, g->n_t - 1)];
}

static tex_iter *pick_leaf(gen *g, tex_stage *st)
{
    int n = tex_stage_naxes(st);
    return n > 0 ? tex_stage_axis(st, (int)rnd(g, 0, n - 1)) : NULL;
}

static void add_tensor(gen *g, tex_tensor *t)
{
    if (t && g->n_t < MAX_STAGES)
        g->t[g->n_t++] = t;
}

/* ------------------------------------------------------------ primitives */

static int do_split(gen *g, tex_stage *st, bool nparts)
{
    tex_iter *iv = pick_leaf(g, st), *o, *i;
    if (!iv)
        return SKIP;
    int64_t f = rnd(g, 1, sg_extent_of(iv, 8) + 3);
    ops_logf(&g->log, "    %s(%s, %s, %lld)\n", nparts ? "split_nparts" : "split",
             tex_tensor_name(st->tensor), iv->name, (long long)f);
    tex_expr *fe = tex_int(g->w->ctx, f);
    return nparts ? tex_split_nparts(st, iv, fe, &o, &i) : tex_split(st, iv, fe, &o, &i);
}

static int do_tile(gen *g, tex_stage *st)
{
    int n = tex_stage_naxes(st);
    if (n < 2)
        return SKIP;
    int a = (int)rnd(g, 0, n - 2), b = (int)rnd(g, a + 1, n - 1);
    tex_iter *x = tex_stage_axis(st, a), *y = tex_stage_axis(st, b), *r[4];
    int64_t fx = rnd(g, 1, sg_extent_of(x, 8) + 2), fy = rnd(g, 1, sg_extent_of(y, 8) + 2);
    ops_logf(&g->log, "    tile(%s, %s, %s, %lld, %lld)\n", tex_tensor_name(st->tensor), x->name,
             y->name, (long long)fx, (long long)fy);
    return tex_tile(st, x, y, tex_int(g->w->ctx, fx), tex_int(g->w->ctx, fy), &r[0], &r[1], &r[2],
                    &r[3]);
}

static int do_fuse(gen *g, tex_stage *st)
{
    int n = tex_stage_naxes(st);
    if (n < 2)
        return SKIP;
    int a = (int)rnd(g, 0, n - 2);
    tex_iter *o = tex_stage_axis(st, a), *i = tex_stage_axis(st, a + 1), *f;
    ops_logf(&g->log, "    fuse(%s, %s, %s)\n", tex_tensor_name(st->tensor), o->name, i->name);
    return tex_fuse(st, o, i, &f);
}

static int do_reorder(gen *g, tex_stage *st)
{
    int n = tex_stage_naxes(st);
    if (n < 1 || n > 32)
        return SKIP;
    tex_iter *order[32];
    for (int k = 0; k < n; k++)
        order[k] = tex_stage_axis(st, k);
    for (int k = n - 1; k > 0; k--) {
        int j = (int)rnd(g, 0, k);
        tex_iter *t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    ops_logf(&g->log, "    reorder(%s:", tex_tensor_name(st->tensor));
    for (int k = 0; k < n; k++)
        ops_logf(&g->log, " %s", order[k]->name);
    ops_logf(&g->log, ")\n");
    return tex_reorder(st, n, order);
}

static int do_annotate(gen *g, tex_stage *st)
{
    tex_iter *iv = pick_leaf(g, st);
    if (!iv)
        return SKIP;
    int which = (int)rnd(g, 0, 2);
    static const char *const names[3] = {"parallel", "vectorize", "unroll"};
    ops_logf(&g->log, "    %s(%s, %s)\n", names[which], tex_tensor_name(st->tensor), iv->name);
    return which == 0   ? tex_parallel(st, iv)
           : which == 1 ? tex_vectorize(st, iv)
                        : tex_unroll(st, iv);
}

/* The only stage reading t directly, or NULL: computing t at a loop of its
 * sole consumer is always legal, at one of several consumers never (the
 * others would not run inside that loop). */
static tex_stage *sole_consumer(gen *g, tex_tensor *t)
{
    int n = 0;
    tex_stage **cs = texi_schedule_consumers(g->s, t, &n);
    tex_clear_error(g->w->ctx);
    return cs && n == 1 ? cs[0] : NULL;
}

/* Whether some stage is computed at a loop of st (st must keep its loops). */
static bool has_attached(gen *g, const tex_stage *st)
{
    for (int k = 0; k < g->s->n_stages; k++)
        if (g->s->stages[k]->attach == TEXI_ATTACH_AT && g->s->stages[k]->attach_stage == st)
            return true;
    return false;
}

static int attach(gen *g, tex_tensor *t, tex_stage *parent)
{
    tex_iter *iv = parent && parent->attach != TEXI_ATTACH_INLINE ? pick_leaf(g, parent) : NULL;
    if (!iv)
        return SKIP;
    ops_logf(&g->log, "    compute_at(%s, %s, %s)\n", tex_tensor_name(t),
             tex_tensor_name(parent->tensor), iv->name);
    return tex_compute_at(stage(g, t), parent, iv);
}

/* compute_at of a random tensor that has a sole consumer, at one of its leaves. */
static int do_at(gen *g)
{
    tex_tensor *cand[MAX_STAGES];
    tex_stage *cons[MAX_STAGES];
    int n = 0;
    for (int k = 0; k < g->n_t; k++) {
        tex_stage *c = g->t[k] != g->w->out ? sole_consumer(g, g->t[k]) : NULL;
        if (c && c->attach != TEXI_ATTACH_INLINE) {
            cand[n] = g->t[k];
            cons[n++] = c;
        }
    }
    if (n == 0)
        return SKIP;
    int k = (int)rnd(g, 0, n - 1);
    return attach(g, cand[k], cons[k]);
}

static int do_inline(gen *g, tex_tensor *t)
{
    if (has_attached(g, stage(g, t)))
        return SKIP; /* would strand the stages computed at its loops */
    ops_logf(&g->log, "    compute_inline(%s)\n", tex_tensor_name(t));
    return tex_compute_inline(stage(g, t));
}

static int do_root(gen *g, tex_tensor *t)
{
    ops_logf(&g->log, "    compute_root(%s)\n", tex_tensor_name(t));
    return tex_compute_root(stage(g, t));
}

/* Applies a follow-up primitive (after a cache stage was made): its refusal
 * is fine, any other error is not. */
static void follow_up(gen *g, int rc)
{
    if (rc < 0 && rc != TEX_EINVAL && !g->broken) {
        g->broken = true;
        snprintf(g->why, sizeof g->why, "a follow-up step returned %d: %s", rc,
                 tex_errmsg(g->w->ctx));
    }
    tex_clear_error(g->w->ctx);
}

static int do_cache_read(gen *g)
{
    int n_src = g->w->n_in + g->n_t, k = (int)rnd(g, 0, n_src - 1), n = 0;
    tex_tensor *t = k < g->w->n_in ? g->w->in[k] : g->t[k - g->w->n_in];
    if (t == g->w->out)
        t = g->w->in[rnd(g, 0, g->w->n_in - 1)];
    tex_stage *ts = k < g->w->n_in ? NULL : stage(g, t);
    if (ts && ts->attach == TEXI_ATTACH_AT)
        return SKIP; /* the cache stage, at root, would read t outside t's loop */
    tex_stage **cs = texi_schedule_consumers(g->s, t, &n);
    tex_clear_error(g->w->ctx);
    if (!cs || n == 0 || n > 8)
        return SKIP;
    tex_tensor *readers[8];
    int nr = (int)rnd(g, 1, n);
    for (int r = 0; r < nr; r++)
        readers[r] = cs[r]->tensor;
    tex_scope sc = rnd(g, 0, 1) ? TEX_SCOPE_LOCAL : TEX_SCOPE_GLOBAL;
    ops_logf(&g->log, "    %s.cache = cache_read(%s, %s, %d readers, first %s)\n",
             tex_tensor_name(t), tex_tensor_name(t), sc == TEX_SCOPE_LOCAL ? "local" : "global", nr,
             tex_tensor_name(readers[0]));
    tex_tensor *c = tex_cache_read(g->s, t, sc, nr, readers);
    if (!c)
        return tex_errcode(g->w->ctx) ? tex_errcode(g->w->ctx) : TEX_EINTERNAL;
    add_tensor(g, c);
    if (nr == 1 && rnd(g, 0, 9) < 7)
        follow_up(g, attach(g, c, stage(g, readers[0])));
    return 0;
}

static int do_cache_write(gen *g, tex_tensor *t)
{
    if (has_attached(g, stage(g, t)))
        return SKIP; /* its producers computed at its loops would lose them */
    ops_logf(&g->log, "    %s.local = cache_write(%s, local)\n", tex_tensor_name(t),
             tex_tensor_name(t));
    tex_tensor *c = tex_cache_write(g->s, t, TEX_SCOPE_LOCAL);
    if (!c)
        return tex_errcode(g->w->ctx) ? tex_errcode(g->w->ctx) : TEX_EINTERNAL;
    add_tensor(g, c);
    if (rnd(g, 0, 9) < 7)
        follow_up(g, attach(g, c, stage(g, t)));
    return 0;
}

static int do_rfactor(gen *g, tex_tensor *t)
{
    tex_stage *st = stage(g, t);
    if (has_attached(g, st))
        return SKIP; /* its producers would feed the factored stage instead */
    tex_iter *cand[32];
    int n = 0;
    for (int k = 0; k < tex_stage_naxes(st) && n < 32; k++)
        if (tex_stage_axis(st, k)->kind == TEXI_ITER_REDUCE)
            cand[n++] = tex_stage_axis(st, k);
    if (n == 0)
        return SKIP;
    tex_iter *iv = cand[rnd(g, 0, n - 1)];
    int fa = (int)rnd(g, 0, tex_tensor_ndim(t));
    ops_logf(&g->log, "    %s.rf = rfactor(%s, %s, %d)\n", tex_tensor_name(t), tex_tensor_name(t),
             iv->name, fa);
    tex_tensor *c = tex_rfactor(g->s, t, iv, fa);
    if (!c)
        return tex_errcode(g->w->ctx) ? tex_errcode(g->w->ctx) : TEX_EINTERNAL;
    add_tensor(g, c);
    return 0;
}

static int apply(gen *g, enum prim p)
{
    tex_tensor *t = pick_tensor(g);
    tex_stage *st = stage(g, t);
    switch (p) {
    case P_SPLIT:
        return do_split(g, st, false);
    case P_NPARTS:
        return do_split(g, st, true);
    case P_TILE:
        return do_tile(g, st);
    case P_FUSE:
        return do_fuse(g, st);
    case P_REORDER:
        return do_reorder(g, st);
    case P_ANNOTATE:
        return do_annotate(g, st);
    case P_INLINE:
        return do_inline(g, t);
    case P_AT:
        return do_at(g);
    case P_ROOT:
        return do_root(g, t);
    case P_CACHE_READ:
        return do_cache_read(g);
    case P_CACHE_WRITE:
        return do_cache_write(g, t);
    case P_RFACTOR:
        return do_rfactor(g, t);
    case P_COUNT:
        break;
    }
    return SKIP;
}

/* Weights of the primitives: loop transformations are the most frequent. */
static enum prim pick_prim(gen *g)
{
    static const int weight[P_COUNT] = {6, 2, 3, 3, 3, 3, 2, 4, 1, 2, 2, 2};
    int total = 0;
    for (int k = 0; k < P_COUNT; k++)
        total += weight[k];
    int r = (int)rnd(g, 0, total - 1);
    for (int k = 0; k < P_COUNT; k++) {
        if (r < weight[k])
            return (enum prim)k;
        r -= weight[k];
    }
    return P_SPLIT;
}

static void step(gen *g)
{
    enum prim p = pick_prim(g);
    char *before = g->check_unchanged ? tex_schedule_str(g->s) : NULL;
    tex_clear_error(g->w->ctx);
    n_tried[p]++;
    int rc = apply(g, p);
    if (rc == SKIP) {
        n_skipped[p]++;
    } else if (rc == 0) {
        n_applied[p]++;
    } else if (rc == TEX_EINVAL) {
        n_rejected[p]++;
        ops_logf(&g->log, "      -> refused: %s\n", tex_errmsg(g->w->ctx));
        char *after = before ? tex_schedule_str(g->s) : NULL;
        if (before && after && strcmp(before, after) != 0 && !g->broken) {
            g->broken = true;
            snprintf(g->why, sizeof g->why, "a refused %s changed the schedule", prim_names[p]);
        }
        free(after);
    } else if (!g->broken) {
        g->broken = true;
        snprintf(g->why, sizeof g->why, "%s returned %d: %s", prim_names[p], rc,
                 tex_errmsg(g->w->ctx));
    }
    tex_clear_error(g->w->ctx);
    free(before);
}

/* ------------------------------------------------------------- workloads */

static void b_matmul(ops_wl *w, int v)
{
    static const int64_t sh[][3] = {{7, 13, 5}, {1, 31, 3}, {13, 7, 1}, {6, 5, 7}};
    ops_matmul(w, sh[v][0], sh[v][1], sh[v][2], v == 3);
}

static void b_batch_matmul(ops_wl *w, int v)
{
    static const int64_t sh[][4] = {{2, 5, 7, 3}, {1, 1, 13, 7}, {3, 4, 5, 6}};
    ops_batch_matmul(w, sh[v][0], sh[v][1], sh[v][2], sh[v][3], v == 2);
}

static void b_conv2d(ops_wl *w, int v)
{
    static const int64_t sh[][9] = {{1, 2, 5, 5, 3, 3, 3, 1, 1},
                                    {1, 1, 7, 7, 2, 3, 3, 2, 1},
                                    {2, 1, 4, 3, 1, 1, 1, 1, 0},
                                    {1, 2, 6, 5, 2, 3, 2, 1, 1}};
    const int64_t *s = sh[v];
    ops_conv2d(w, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], v == 3);
}

static void b_softmax(ops_wl *w, int v)
{
    static const int64_t sh[][2] = {{7, 13}, {1, 31}, {5, 7}};
    ops_softmax(w, sh[v][0], sh[v][1], v == 2);
}

static void b_layernorm(ops_wl *w, int v)
{
    static const int64_t sh[][2] = {{7, 13}, {3, 1}, {4, 9}};
    ops_layernorm(w, sh[v][0], sh[v][1], v == 2);
}

static void b_transpose(ops_wl *w, int v)
{
    static const int64_t sh[][2] = {{7, 13}, {1, 31}, {13, 7}};
    ops_transpose(w, sh[v][0], sh[v][1], v == 2);
}

static void b_maxpool(ops_wl *w, int v)
{
    static const int64_t sh[][6] = {{1, 2, 7, 7, 3, 2}, {1, 3, 5, 4, 2, 1}, {1, 2, 6, 7, 3, 2}};
    const int64_t *s = sh[v];
    ops_pool2d(w, s[0], s[1], s[2], s[3], s[4], s[5], true, v == 2);
}

static void b_avgpool(ops_wl *w, int v)
{
    static const int64_t sh[][6] = {{1, 2, 7, 7, 3, 2}, {1, 1, 3, 5, 1, 1}, {1, 3, 5, 6, 2, 2}};
    const int64_t *s = sh[v];
    ops_pool2d(w, s[0], s[1], s[2], s[3], s[4], s[5], false, v == 2);
}

static void b_elemwise(ops_wl *w, int v)
{
    static const int64_t sh[][2] = {{7, 13}, {1, 1}, {5, 11}};
    ops_elemwise(w, sh[v][0], sh[v][1], v == 2);
}

/* variant: shape (7x13, 13x1, 3x5x7 over two axes, symbolic 5x11) */
static void reduce_variant(ops_wl *w, int op, bool where, int v)
{
    static const int64_t sh[][3] = {{7, 13, 1}, {13, 1, 1}, {3, 5, 7}, {5, 11, 1}};
    ops_reduce(w, op, where, v == 2, sh[v][0], sh[v][1], sh[v][2], v == 3);
}

static void b_sum(ops_wl *w, int v)
{
    reduce_variant(w, 0, false, v);
}

static void b_prod(ops_wl *w, int v)
{
    reduce_variant(w, 1, false, v);
}

static void b_max(ops_wl *w, int v)
{
    reduce_variant(w, 2, false, v);
}

static void b_min(ops_wl *w, int v)
{
    reduce_variant(w, 3, false, v);
}

static void b_sum_where(ops_wl *w, int v)
{
    reduce_variant(w, 0, true, v);
}

static void b_max_where(ops_wl *w, int v)
{
    reduce_variant(w, 2, true, v);
}

/* One random schedule of the workload; true when it checks out. */
static bool one_schedule(const sg_workload *wl, uint64_t seed, bool report)
{
    tex_ctx *ctx = tex_ctx_new();
    ops_wl w;
    ops_init(&w, ctx, wl->name);
    gen g = {.w = &w, .rng = sg_rng(seed, 12345)};
    sg_build(wl, &w, &g.rng, seed);
    g.s = tex_schedule_new(ctx, 1, &w.out);
    for (int k = 0; k < w.n_mid; k++)
        add_tensor(&g, w.mid[k]);
    add_tensor(&g, w.out);
    g.check_unchanged = seed % 4 == 0;
    int n_steps = (int)rnd(&g, 0, 8);
    for (int k = 0; k < n_steps; k++)
        step(&g);
    bool ok = !g.broken;
    if (g.broken && report)
        ops_report(&w, seed, &g.log, NULL, g.why);
    if (ok)
        ok = ops_check(&w, g.s, seed, &g.log, report) == 0;
    tex_ctx_free(ctx);
    return ok;
}

#define WORKLOAD(fn, nv, ns, tr)                                                                   \
    static void test_##fn(void)                                                                    \
    {                                                                                              \
        static const sg_workload wl = {#fn, b_##fn, nv, ns, tr};                                   \
        sg_run(&wl, one_schedule, 3, &n_schedules, &n_failed_total);                               \
    }

WORKLOAD(matmul, 4, 1, 300)
WORKLOAD(batch_matmul, 3, 1, 200)
WORKLOAD(conv2d, 4, 1, 240)
WORKLOAD(softmax, 3, 1, 240)
WORKLOAD(layernorm, 3, 1, 240)
WORKLOAD(transpose, 3, 1, 160)
WORKLOAD(maxpool, 3, 1, 160)
WORKLOAD(avgpool, 3, 1, 160)
WORKLOAD(elemwise, 3, 1, 240)
WORKLOAD(sum, 4, 1, 160)
WORKLOAD(prod, 4, 1, 160)
WORKLOAD(max, 4, 1, 160)
WORKLOAD(min, 4, 1, 160)
WORKLOAD(sum_where, 4, 1, 160)
WORKLOAD(max_where, 4, 1, 160)

/* ------------------------------------------------- hand-written schedules */

/* GPU-style matmul without shared memory: blocks and threads over tiles of
 * C, the accumulator in a local cache computed at the thread level. */
static void test_hand_matmul_gpu(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "matmul_gpu", NULL);
    tex_tensor *C = ops_matmul(&h->w, 13, 7, 5, false);
    hand_schedule(h);
    tex_tensor *CL = tex_cache_write(h->s, C, TEX_SCOPE_LOCAL);
    TT_CHECK(CL != NULL);
    tex_iter *io, *ii, *jo, *ji;
    OK(tex_split(S(h, C), tex_op_axis(S(h, C), 0), I(h, 4), &io, &ii));
    OK(tex_split(S(h, C), tex_op_axis(S(h, C), 1), I(h, 4), &jo, &ji));
    OK(tex_reorder(S(h, C), 4, (tex_iter *[]){io, jo, ii, ji}));
    OK(tex_compute_at(S(h, CL), S(h, C), ji));
    OK(tex_bind(S(h, C), io, TEX_BLOCK_X));
    OK(tex_bind(S(h, C), jo, TEX_BLOCK_Y));
    OK(tex_bind(S(h, C), ii, TEX_THREAD_X));
    OK(tex_bind(S(h, C), ji, TEX_THREAD_Y));
    hand_end(h);
}

/* Conv2d with the padding inlined, output tiled, inner axis vectorized. */
static void test_hand_conv_inline(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "conv_inline", NULL);
    tex_tensor *Out = ops_conv2d(&h->w, 1, 2, 7, 7, 3, 3, 3, 1, 1, false);
    hand_schedule(h);
    tex_iter *yo, *xo, *yi, *xi;
    OK(tex_compute_inline(S(h, h->w.mid[0])));
    OK(tex_tile(S(h, Out), tex_op_axis(S(h, Out), 2), tex_op_axis(S(h, Out), 3), I(h, 4), I(h, 4),
                &yo, &xo, &yi, &xi));
    OK(tex_vectorize(S(h, Out), xi));
    OK(tex_parallel(S(h, Out), tex_op_axis(S(h, Out), 1)));
    hand_end(h);
}

/* Conv2d (stride 2, symbolic H, W) with the padded rows computed per output row. */
static void test_hand_conv_pad_at(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "conv_pad_at", NULL);
    tex_tensor *Out = ops_conv2d(&h->w, 1, 2, 9, 6, 2, 3, 3, 2, 1, true);
    hand_schedule(h);
    OK(tex_compute_at(S(h, h->w.mid[0]), S(h, Out), tex_op_axis(S(h, Out), 2)));
    hand_end(h);
}

/* Softmax with the row max and the row sum computed per row of the output. */
static void test_hand_softmax_rows(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "softmax_rows", NULL);
    tex_tensor *Y = ops_softmax(&h->w, 7, 13, false);
    hand_schedule(h);
    tex_iter *jo, *ji;
    OK(tex_compute_at(S(h, h->w.mid[0]), S(h, Y), tex_op_axis(S(h, Y), 0)));
    OK(tex_compute_at(S(h, h->w.mid[1]), S(h, Y), tex_op_axis(S(h, Y), 0)));
    OK(tex_parallel(S(h, Y), tex_op_axis(S(h, Y), 0)));
    OK(tex_split(S(h, Y), tex_op_axis(S(h, Y), 1), I(h, 4), &jo, &ji));
    OK(tex_vectorize(S(h, Y), ji));
    hand_end(h);
}

/* Layernorm over symbolic sizes, statistics per row, passed as VAR parameters. */
static void test_hand_layernorm_rows(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "layernorm_rows", NULL);
    tex_tensor *Y = ops_layernorm(&h->w, 5, 11, true);
    h->w.var_params = true;
    hand_schedule(h);
    OK(tex_compute_at(S(h, h->w.mid[0]), S(h, Y), tex_op_axis(S(h, Y), 0)));
    OK(tex_compute_at(S(h, h->w.mid[1]), S(h, Y), tex_op_axis(S(h, Y), 0)));
    hand_end(h);
}

/* Sum with rfactor: the factored partial sums vectorized over their new axis. */
static void test_hand_sum_rfactor(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "sum_rfactor", NULL);
    tex_tensor *R = ops_reduce(&h->w, 0, false, false, 7, 13, 1, false);
    hand_schedule(h);
    tex_iter *ko, *ki;
    OK(tex_split(S(h, R), tex_op_reduce_axis(S(h, R), 0), I(h, 4), &ko, &ki));
    tex_tensor *RF = tex_rfactor(h->s, R, ki, 1);
    TT_CHECK(RF != NULL);
    if (RF) {
        OK(tex_vectorize(S(h, RF), tex_op_axis(S(h, RF), 1)));
        OK(tex_parallel(S(h, R), tex_op_axis(S(h, R), 0)));
    }
    hand_end(h);
}

/* Transpose by 4x4 tiles read through a local cache of each input tile. */
static void test_hand_transpose_tiles(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "transpose_tiles", NULL);
    tex_tensor *B = ops_transpose(&h->w, 13, 7, false);
    hand_schedule(h);
    tex_tensor *AA = tex_cache_read(h->s, h->w.in[0], TEX_SCOPE_LOCAL, 1, &B);
    TT_CHECK(AA != NULL);
    tex_iter *jo, *io, *ji, *ii;
    OK(tex_tile(S(h, B), tex_op_axis(S(h, B), 0), tex_op_axis(S(h, B), 1), I(h, 4), I(h, 4), &jo,
                &io, &ji, &ii));
    if (AA)
        OK(tex_compute_at(S(h, AA), S(h, B), io));
    hand_end(h);
}

/* Max pooling with the reduce loops outermost and the window unrolled. */
static void test_hand_pool_reorder(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "pool_reorder", NULL);
    tex_tensor *P = ops_pool2d(&h->w, 1, 2, 7, 7, 3, 2, true, false);
    hand_schedule(h);
    tex_stage *st = S(h, P);
    tex_iter *ry = tex_op_reduce_axis(st, 0), *rx = tex_op_reduce_axis(st, 1);
    OK(tex_reorder(st, 6,
                   (tex_iter *[]){ry, tex_op_axis(st, 0), tex_op_axis(st, 1), rx,
                                  tex_op_axis(st, 2), tex_op_axis(st, 3)}));
    OK(tex_unroll(st, rx));
    hand_end(h);
}

/* The elementwise chain inlined, fused, split and vectorized. */
static void test_hand_elemwise_fused(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "elemwise_fused", NULL);
    tex_tensor *Out = ops_elemwise(&h->w, 7, 13, false);
    hand_schedule(h);
    tex_iter *f, *o, *i;
    OK(tex_compute_inline(S(h, h->w.mid[0])));
    OK(tex_compute_inline(S(h, h->w.mid[1])));
    OK(tex_fuse(S(h, Out), tex_op_axis(S(h, Out), 0), tex_op_axis(S(h, Out), 1), &f));
    OK(tex_split(S(h, Out), f, I(h, 8), &o, &i));
    OK(tex_vectorize(S(h, Out), i));
    OK(tex_parallel(S(h, Out), o));
    hand_end(h);
}

/* Each tail strategy that is legal for a pure data-parallel output: GUARD,
 * SHIFT_INWARDS, PREDICATE on a vectorized inner loop; T1 computed inside. */
static void test_hand_tails(void)
{
    static const tex_tail tails[3] = {TEX_TAIL_GUARD, TEX_TAIL_SHIFT_INWARDS, TEX_TAIL_PREDICATE};
    for (int k = 0; k < 3; k++) {
        for (int sym = 0; sym < 2; sym++) {
            hand hh, *h = &hh;
            hand_begin(h, "tails", NULL);
            tex_tensor *Out = ops_elemwise(&h->w, 5, 13, sym);
            hand_schedule(h);
            tex_iter *o, *i;
            OK(tex_split_tail(S(h, Out), tex_op_axis(S(h, Out), 1), I(h, 4), tails[k], &o, &i));
            if (tails[k] == TEX_TAIL_PREDICATE)
                OK(tex_vectorize(S(h, Out), i));
            OK(tex_compute_at(S(h, h->w.mid[1]), S(h, Out), o));
            hand_end(h);
        }
    }
}

/* SHIFT_INWARDS over a symbolic extent: 3 < factor 4 fails at call time. */
static void test_hand_shift_inwards_too_short(void)
{
    hand hh, *h = &hh;
    hand_begin(h, "shift_short", NULL);
    tex_tensor *B = ops_transpose(&h->w, 3, 5, true); /* B[j, i], extents N = 5, M = 3 */
    hand_schedule(h);
    tex_iter *o, *i;
    OK(tex_split_tail(S(h, B), tex_op_axis(S(h, B), 1), I(h, 4), TEX_TAIL_SHIFT_INWARDS, &o, &i));
    char why[1024];
    tex_func *f = ops_lower(&h->w, h->s, why, sizeof why);
    TT_CHECK(f != NULL);
    if (f) {
        TT_CHECK(ops_run_compare(&h->w, f, 0, why, sizeof why) != 0);
        TT_CHECK(strstr(why, "assertion failed") != NULL);
    }
    h->w.vals[0] = 4; /* M = 4 >= 4: fine */
    TT_CHECK(f && ops_run_compare(&h->w, f, 0, why, sizeof why) == 0);
    tex_ctx_free(h->w.ctx);
}

static void print_summary(void)
{
    long applied = 0, rejected = 0;
    printf("random schedules: %ld tried, %ld failed\n", n_schedules, n_failed_total);
    for (int p = 0; p < P_COUNT; p++) {
        printf("  %-14s tried %6ld  applied %6ld  refused %6ld  skipped %6ld\n", prim_names[p],
               n_tried[p], n_applied[p], n_rejected[p], n_skipped[p]);
        applied += n_applied[p];
        rejected += n_rejected[p];
    }
    printf("  primitives applied %ld, refused %ld\n", applied, rejected);
}

int main(void)
{
    TT_RUN(test_matmul);
    TT_RUN(test_batch_matmul);
    TT_RUN(test_conv2d);
    TT_RUN(test_softmax);
    TT_RUN(test_layernorm);
    TT_RUN(test_transpose);
    TT_RUN(test_maxpool);
    TT_RUN(test_avgpool);
    TT_RUN(test_elemwise);
    TT_RUN(test_sum);
    TT_RUN(test_prod);
    TT_RUN(test_max);
    TT_RUN(test_min);
    TT_RUN(test_sum_where);
    TT_RUN(test_max_where);
    print_summary();
    TT_RUN(test_hand_matmul_gpu);
    TT_RUN(test_hand_conv_inline);
    TT_RUN(test_hand_conv_pad_at);
    TT_RUN(test_hand_softmax_rows);
    TT_RUN(test_hand_layernorm_rows);
    TT_RUN(test_hand_sum_rfactor);
    TT_RUN(test_hand_transpose_tiles);
    TT_RUN(test_hand_pool_reorder);
    TT_RUN(test_hand_elemwise_fused);
    TT_RUN(test_hand_tails);
    TT_RUN(test_hand_shift_inwards_too_short);
    return tt_finish();
}
