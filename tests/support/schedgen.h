/*
 * schedgen.h: the pieces the random-schedule tests share (test_lower_random,
 * test_cpu_schedules). Header-only (static inline functions); include it
 * after tt.h and support/ops.h.
 *
 * - Hand-written schedules: a `hand` holds one workload, its schedule and
 *   the log of steps; OK(call) applies one primitive that must succeed
 *   (logged, a failure is a test failure and clears the error). hand_end
 *   checks the schedule against the oracle: with the interpreter when the
 *   target is NULL, else JIT-compiled for that target.
 * - Random schedules: a workload (sg_workload) names a builder with shape
 *   variants, the last n_sym of them symbolic. sg_rng seeds a generator's
 *   stream, sg_build picks and builds a variant from it, and sg_run tries
 *   `trials` consecutive seeds (or the one in TEX_RANDOM_SEED) and fails the
 *   test when any schedule fails, reporting only the first few.
 *
 * - sg_text_round_trip: a schedule written as text and applied to a fresh
 *   schedule of the same computes lowers to the same loop AST.
 *
 * What each test's generator does with the schedule (which primitives, how
 * often) stays in that test: the two generators differ on purpose.
 */
#ifndef TEX_TESTS_SUPPORT_SCHEDGEN_H
#define TEX_TESTS_SUPPORT_SCHEDGEN_H

#include "support/ops.h"

/* ------------------------------------------------- schedules as text */

/* The schedule written as text (tex_schedule_trace) and applied to a fresh
 * schedule of the same computes (tex_schedule_apply_text) lowers to the
 * same loop AST. 0, or -1 with the reason in why. */
static inline int sg_text_round_trip(ops_wl *w, tex_schedule *s, char *why, size_t cap)
{
    char *text = tex_schedule_trace(s), *a = NULL, *b = NULL;
    tex_schedule *again = text ? tex_schedule_new(w->ctx, 1, &w->out) : NULL;
    int rc = again ? tex_schedule_apply_text(again, text) : -1;
    tex_func *f = rc == 0 ? ops_lower(w, s, why, cap) : NULL;
    tex_func *g = f ? ops_lower(w, again, why, cap) : NULL;
    if (rc != 0)
        snprintf(why, cap, "text round trip: %s\n%s", tex_errmsg(w->ctx), text ? text : "");
    else if (g && strcmp(a = tex_func_str(f), b = tex_func_str(g)) != 0)
        snprintf(why, cap, "the schedule applied from its text lowers differently:\n%s\n%s", text,
                 b);
    rc = rc == 0 && g && strcmp(a, b) == 0 ? 0 : -1;
    free(text);
    free(a);
    free(b);
    return rc;
}

/* ------------------------------------------------- hand-written schedules */

/* One hand-written schedule: every primitive must succeed. */
typedef struct {
    ops_wl w;
    tex_schedule *s;
    ops_log log;
    const char *target; /* NULL: check with the interpreter, else JIT for it */
} hand;

/* Applies one primitive of the hand-written schedule `h` (a local). */
#define OK(call)                                                                                   \
    do {                                                                                           \
        int ok_rc_ = (call);                                                                       \
        ops_logf(&h->log, "    %s -> %d\n", #call, ok_rc_);                                        \
        if (ok_rc_ != 0) {                                                                         \
            TT_FAILF("%s: %s failed (%d): %s", h->w.name, #call, ok_rc_, tex_errmsg(h->w.ctx));    \
            tex_clear_error(h->w.ctx);                                                             \
        }                                                                                          \
    } while (0)

static inline void hand_begin(hand *h, const char *name, const char *target)
{
    memset(h, 0, sizeof *h);
    ops_init(&h->w, tex_ctx_new(), name);
    h->target = target;
}

static inline void hand_schedule(hand *h)
{
    h->s = tex_schedule_new(h->w.ctx, 1, &h->w.out);
}

static inline tex_stage *S(hand *h, tex_tensor *t)
{
    return tex_stage_of(h->s, t);
}

static inline tex_iter *AX(hand *h, tex_tensor *t, int i)
{
    return tex_op_axis(S(h, t), i);
}

static inline tex_iter *RAX(hand *h, tex_tensor *t, int i)
{
    return tex_op_reduce_axis(S(h, t), i);
}

static inline tex_expr *I(hand *h, int64_t v)
{
    return tex_int(h->w.ctx, v);
}

static inline void hand_end(hand *h)
{
    if (h->target)
        TT_CHECK(ops_check_jit(&h->w, h->s, h->target, 0, &h->log, true) == 0);
    else
        TT_CHECK(ops_check(&h->w, h->s, 0, &h->log, true) == 0);
    tex_ctx_free(h->w.ctx);
}

/* ------------------------------------------------------ random schedules */

typedef void (*sg_build_fn)(ops_wl *w, int variant);

typedef struct {
    const char *name;
    sg_build_fn build;
    int n_variants; /* shapes; the symbolic ones last */
    int n_sym;      /* how many of them are symbolic */
    int trials;
} sg_workload;

/* One random schedule of wl with this seed; true when it checks out. */
typedef bool (*sg_one_fn)(const sg_workload *wl, uint64_t seed, bool report);

/* The generator state for a seed, offset by salt (per test or workload). The
 * seed goes through the generator's mixing function: ops_rand steps its state
 * by the same constant, so a plain seed * 0x9E37... + salt would make the
 * stream of seed s + 1 that of seed s shifted by one draw. */
static inline uint64_t sg_rng(uint64_t seed, uint64_t salt)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15u + salt;
    return ops_rand(&s);
}

/* FNV-1a of a name, a salt that makes each workload draw differently. */
static inline uint64_t sg_name_hash(const char *name)
{
    uint64_t h = 14695981039346656037u;
    for (const char *c = name; *c; c++)
        h = (h ^ (uint8_t)*c) * 1099511628211u;
    return h;
}

/* Draws a shape variant of wl from rng and builds it into w; symbolic
 * variants become VAR parameters for odd seeds. Returns the variant. */
static inline int sg_build(const sg_workload *wl, ops_wl *w, uint64_t *rng, uint64_t seed)
{
    int variant = (int)ops_rand_range(rng, 0, wl->n_variants - 1);
    wl->build(w, variant);
    w->var_params = variant >= wl->n_variants - wl->n_sym && (seed & 1);
    return variant;
}

/* The constant extent of iv, or `symbolic` when it has none. */
static inline int64_t sg_extent_of(const tex_iter *iv, int64_t symbolic)
{
    int64_t v;
    return iv && iv->extent && texi_expr_is_int_const(iv->extent, &v) ? v : symbolic;
}

/* Runs wl->trials schedules from seed 1 (one, from TEX_RANDOM_SEED when set),
 * reporting the first max_reports failures; counts into *n_tried and
 * *n_failed. */
static inline void sg_run(const sg_workload *wl, sg_one_fn one, int max_reports, long *n_tried,
                          long *n_failed)
{
    const char *env = getenv("TEX_RANDOM_SEED");
    uint64_t first = env ? strtoull(env, NULL, 10) : 1;
    int trials = env ? 1 : wl->trials, failed = 0;
    for (int t = 0; t < trials; t++) {
        (*n_tried)++;
        if (!one(wl, first + (uint64_t)t, failed < max_reports)) {
            failed++;
            (*n_failed)++;
        }
    }
    if (failed)
        TT_FAILF("%s: %d of %d random schedules failed (the first %d reported above)", wl->name,
                 failed, trials, max_reports);
}

/* ------------------------------------------- the standard workloads' shapes */

/* Builders of the random tests' workloads (sg_workload.build): shape
 * variant v of each, the last one symbolic. Extents are primes, ones and
 * numbers no split factor divides. */
static inline void sg_matmul(ops_wl *w, int v)
{
    static const int64_t sh[][3] = {{17, 33, 9}, {1, 23, 4}, {31, 1, 11}, {10, 19, 6}};
    ops_matmul(w, sh[v][0], sh[v][1], sh[v][2], v == 3);
}

static inline void sg_batch_matmul(ops_wl *w, int v)
{
    static const int64_t sh[][4] = {{2, 7, 17, 5}, {1, 3, 1, 9}, {3, 5, 11, 4}};
    ops_batch_matmul(w, sh[v][0], sh[v][1], sh[v][2], sh[v][3], v == 2);
}

static inline void sg_conv2d(ops_wl *w, int v)
{
    static const int64_t sh[][9] = {
        {1, 2, 9, 7, 3, 3, 3, 1, 1}, {2, 1, 5, 5, 2, 1, 1, 1, 0}, {1, 2, 8, 7, 2, 3, 3, 2, 1}};
    const int64_t *s = sh[v];
    ops_conv2d(w, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], v == 2);
}

static inline void sg_softmax(ops_wl *w, int v)
{
    static const int64_t sh[][2] = {{5, 37}, {1, 1}, {6, 19}};
    ops_softmax(w, sh[v][0], sh[v][1], v == 2);
}

static inline void sg_layernorm(ops_wl *w, int v)
{
    static const int64_t sh[][2] = {{7, 29}, {2, 1}, {3, 17}};
    ops_layernorm(w, sh[v][0], sh[v][1], v == 2);
}

static inline void sg_transpose(ops_wl *w, int v)
{
    static const int64_t sh[][2] = {{23, 17}, {1, 41}, {13, 9}};
    ops_transpose(w, sh[v][0], sh[v][1], v == 2);
}

static inline void sg_maxpool(ops_wl *w, int v)
{
    static const int64_t sh[][6] = {{1, 3, 9, 11, 3, 2}, {1, 1, 2, 2, 1, 1}, {1, 2, 8, 9, 2, 2}};
    const int64_t *s = sh[v];
    ops_pool2d(w, s[0], s[1], s[2], s[3], s[4], s[5], true, v == 2);
}

static inline void sg_avgpool(ops_wl *w, int v)
{
    static const int64_t sh[][6] = {{2, 2, 7, 7, 3, 1}, {1, 3, 5, 9, 2, 2}, {1, 2, 9, 6, 3, 3}};
    const int64_t *s = sh[v];
    ops_pool2d(w, s[0], s[1], s[2], s[3], s[4], s[5], false, v == 2);
}

static inline void sg_elemwise(ops_wl *w, int v)
{
    static const int64_t sh[][2] = {{7, 43}, {1, 1}, {5, 23}};
    ops_elemwise(w, sh[v][0], sh[v][1], v == 2);
}

/* op: 0 sum, 1 prod, 2 max, 3 min; +4: with a where-condition. */
static inline void sg_reduce_variant(ops_wl *w, int op, int v)
{
    static const int64_t sh[][3] = {{7, 29, 1}, {13, 1, 1}, {3, 5, 7}, {5, 17, 1}};
    ops_reduce(w, op & 3, op >= 4, v == 2, sh[v][0], sh[v][1], sh[v][2], v == 3);
}

#define SG_REDUCE_BUILDER(name, op)                                                                \
    static inline void sg_##name(ops_wl *w, int v)                                                 \
    {                                                                                              \
        sg_reduce_variant(w, op, v);                                                               \
    }

SG_REDUCE_BUILDER(sum, 0)
SG_REDUCE_BUILDER(prod, 1)
SG_REDUCE_BUILDER(max, 2)
SG_REDUCE_BUILDER(min, 3)
SG_REDUCE_BUILDER(sum_where, 4)
SG_REDUCE_BUILDER(max_where, 6)

#endif
