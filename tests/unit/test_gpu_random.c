/*
 * Random GPU schedules: the standard workloads of tests/support/ops.h under
 * GPU-shaped schedules drawn the way a person writes them, each checked
 * against the oracle three ways:
 *   - after the thread_sync pass, in the interpreter (threads in lock-step
 *     between barriers: a missing barrier reads poison);
 *   - built for "cpu" (barriers inserted, then removed by barrier fission)
 *     and run as compiled C, for every other seed;
 *   - built for "cuda -emit-only": the device lowering and the CUDA emitter
 *     must accept it (a TEX_EUNAVAILABLE refusal naming the construct is
 *     counted, not failed).
 * The generator, per workload:
 *   - the output's data axes go to blocks and threads: all fused and split
 *     (blockIdx.x / threadIdx.x), or the first two split and bound 2-D;
 *   - a reduction output may instead reduce across threadIdx.x (split,
 *     rfactor into local partials, the rest bound to the threads, rows to
 *     blocks), or across blocks with atomic updates (tex_atomic: the outer
 *     part of the reduction on blockIdx.y);
 *   - maybe a local write cache at the innermost thread axis;
 *   - maybe a shared read cache of an input, computed at the thread axis,
 *     at the block axis (a tile per block, which the CPU reads in place:
 *     unstage_shared) or at the outer part of a split reduction axis (then
 *     maybe double buffered), fetched cooperatively by the consumer's
 *     threads;
 *   - intermediates inlined when they can be, else at root with their own
 *     1-D block/thread mapping.
 * Thread counts and split factors are random and rarely divide the
 * extents. Seeded; TEX_RANDOM_SEED=<n> reruns one seed.
 */
#include "tt.h"
#include "support/tmpdir.h"
#include "support/ops.h"
#include "support/schedgen.h"

#include <unistd.h>

static char cache_dir[] = "/tmp/tex-test-gpu-random-XXXXXX";
static long n_tried, n_failed, n_refused, n_cuda_unsupported;

typedef struct {
    ops_wl *w;
    tex_schedule *s;
    uint64_t rng;
    ops_log log;
    bool refused;   /* a primitive said TEX_EINVAL: the draw is dropped */
    bool broken;    /* a primitive failed otherwise: a failure */
    int64_t ty, tx; /* the output's thread extents (ty 1 for a 1-D mapping) */
} gen;

static int64_t rnd(gen *g, int64_t lo, int64_t hi)
{
    return ops_rand_range(&g->rng, lo, hi);
}

static bool chance(gen *g, int percent)
{
    return rnd(g, 0, 99) < percent;
}

/* Logs a primitive's outcome; false when it failed. */
static bool step(gen *g, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool step(gen *g, int rc, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    ops_logf(&g->log, "    %s -> %d\n", what, rc);
    if (rc == TEX_EINVAL)
        g->refused = true;
    else if (rc != 0)
        g->broken = true;
    if (rc != 0)
        ops_logf(&g->log, "      %s\n", tex_errmsg(g->w->ctx));
    return rc == 0;
}

static tex_expr *IMM(gen *g, int64_t v)
{
    return tex_int(g->w->ctx, v);
}

/* The stage's first reduction axis, or NULL (without recording an error). */
static tex_iter *first_raxis(tex_stage *st)
{
    return st->op->n_raxes > 0 ? tex_op_reduce_axis(st, 0) : NULL;
}

static int64_t draw_threads(gen *g)
{
    static const int64_t t[] = {1, 3, 4, 8, 16, 32, 33, 64};
    return t[rnd(g, 0, 7)];
}

/* The stage's data axes fused into one (its first data axis when it has
 * only one); NULL after a failure. */
static tex_iter *fused_data(gen *g, tex_stage *st)
{
    int nd = tex_tensor_ndim(st->tensor);
    tex_iter *fu = tex_op_axis(st, 0);
    for (int a = 1; a < nd && fu; a++)
        if (!step(g, tex_fuse(st, fu, tex_op_axis(st, a), &fu), "fuse(%s, axis %d)",
                  tex_tensor_name(st->tensor), a))
            return NULL;
    return fu;
}

/* 1-D mapping: data axes fused, split by t, bound to blockIdx.x / threadIdx.x.
 * The thread leaf (*block, when block is not NULL: the block leaf), or NULL. */
static tex_iter *map_1d(gen *g, tex_stage *st, int64_t t, tex_iter **block)
{
    const char *name = tex_tensor_name(st->tensor);
    tex_iter *fu = fused_data(g, st), *bo, *th;
    if (!fu || !step(g, tex_split(st, fu, IMM(g, t), &bo, &th), "split(%s, fused, %lld)", name,
                     (long long)t))
        return NULL;
    if (!step(g, tex_bind(st, bo, TEX_BLOCK_X), "bind(%s, %s, blockIdx.x)", name, bo->name) ||
        !step(g, tex_bind(st, th, TEX_THREAD_X), "bind(%s, %s, threadIdx.x)", name, th->name))
        return NULL;
    if (block)
        *block = bo;
    return th;
}

/* 2-D mapping of the first two data axes: (by, bx, ty, tx) outermost. */
static tex_iter *map_2d(gen *g, tex_stage *st, int64_t ty, int64_t tx, tex_iter **block)
{
    const char *name = tex_tensor_name(st->tensor);
    tex_iter *yo, *xo, *yi, *xi;
    if (!step(g,
              tex_tile(st, tex_op_axis(st, 0), tex_op_axis(st, 1), IMM(g, ty), IMM(g, tx), &yo, &xo,
                       &yi, &xi),
              "tile(%s, %lld, %lld)", name, (long long)ty, (long long)tx))
        return NULL;
    tex_iter *order[16] = {yo, xo, yi, xi};
    int n = 4;
    for (int k = 0; k < tex_stage_naxes(st) && n < 16; k++) {
        tex_iter *l = tex_stage_axis(st, k);
        if (l != yo && l != xo && l != yi && l != xi)
            order[n++] = l;
    }
    if (!step(g, tex_reorder(st, n, order), "reorder(%s, by bx ty tx ...)", name) ||
        !step(g, tex_bind(st, yo, TEX_BLOCK_Y), "bind(%s, by)", name) ||
        !step(g, tex_bind(st, xo, TEX_BLOCK_X), "bind(%s, bx)", name) ||
        !step(g, tex_bind(st, yi, TEX_THREAD_Y), "bind(%s, ty)", name) ||
        !step(g, tex_bind(st, xi, TEX_THREAD_X), "bind(%s, tx)", name))
        return NULL;
    *block = xo;
    return xi;
}

/* Cooperative fetch of shared stage sa by the consumer's ty x tx threads. */
static void coop_fetch(gen *g, tex_stage *sa)
{
    const char *name = tex_tensor_name(sa->tensor);
    tex_iter *fu = fused_data(g, sa), *fo, *fi, *fy, *fx;
    if (!fu ||
        !step(g, tex_split(sa, fu, IMM(g, g->ty * g->tx), &fo, &fi), "split(%s, fetch)", name))
        return;
    if (g->ty == 1) {
        step(g, tex_bind(sa, fi, TEX_THREAD_X), "bind(%s, fetch, threadIdx.x)", name);
        return;
    }
    if (step(g, tex_split(sa, fi, IMM(g, g->tx), &fy, &fx), "split(%s, fetch threads)", name) &&
        step(g, tex_bind(sa, fy, TEX_THREAD_Y), "bind(%s, fetch, threadIdx.y)", name))
        step(g, tex_bind(sa, fx, TEX_THREAD_X), "bind(%s, fetch, threadIdx.x)", name);
}

/* A shared cache of an input that `reader` reads directly (inputs tried in
 * a random order), or NULL. */
static tex_tensor *cache_some_input(gen *g, tex_stage *reader)
{
    ops_wl *w = g->w;
    int first = (int)rnd(g, 0, w->n_in - 1);
    for (int k = 0; k < w->n_in; k++) {
        tex_tensor *in = w->in[(first + k) % w->n_in];
        tex_tensor *sh = tex_cache_read(g->s, in, TEX_SCOPE_SHARED, 1, &reader->tensor);
        if (sh) {
            step(g, 0, "cache_read(%s, shared, %s)", tex_tensor_name(in),
                 tex_tensor_name(reader->tensor));
            return sh;
        }
        tex_clear_error(w->ctx); /* `in` is read through an intermediate */
    }
    return NULL;
}

/* Maybe a shared cache of an input read by stage `reader`, computed at the
 * thread leaf `at` or the block leaf `block` of stage `owner`, or at the
 * outer part of a split of reader's reduction. */
static void shared_cache(gen *g, tex_stage *reader, tex_stage *owner, tex_iter *at, tex_iter *block)
{
    if (!chance(g, 50) || g->w->n_in == 0)
        return;
    tex_tensor *sh = cache_some_input(g, reader);
    if (!sh)
        return;
    tex_stage *sa = tex_stage_of(g->s, sh);
    tex_iter *r = first_raxis(reader), *ko, *ki;
    bool in_k = r && chance(g, 60);
    if (in_k) {
        int64_t kt = rnd(g, 1, 9);
        if (!step(g, tex_split(reader, r, IMM(g, kt), &ko, &ki), "split(%s, %s, %lld)",
                  tex_tensor_name(reader->tensor), r->name, (long long)kt))
            return;
        owner = reader;
        at = ko;
    } else if (chance(g, 50)) {
        at = block;
    }
    if (!step(g, tex_compute_at(sa, owner, at), "compute_at(%s, %s, %s)", tex_tensor_name(sh),
              tex_tensor_name(owner->tensor), at->name))
        return;
    coop_fetch(g, sa);
    if (in_k && chance(g, 50))
        step(g, tex_double_buffer(sa), "double_buffer(%s)", tex_tensor_name(sh));
}

/* The output reduced across threadIdx.x: rows (data axes fused) to blocks. */
static void thread_reduce_output(gen *g)
{
    tex_stage *st = tex_stage_of(g->s, g->w->out);
    const char *name = tex_tensor_name(g->w->out);
    int64_t t = draw_threads(g);
    tex_iter *ko, *ki;
    if (!step(g, tex_split(st, tex_op_reduce_axis(st, 0), IMM(g, t), &ko, &ki),
              "split(%s, reduction, %lld)", name, (long long)t))
        return;
    tex_tensor *rf = tex_rfactor(g->s, g->w->out, ki, tex_tensor_ndim(g->w->out));
    if (!step(g, rf ? 0 : tex_errcode(g->w->ctx), "rfactor(%s, inner)", name))
        return;
    tex_iter *tx = tex_op_reduce_axis(st, 0), *rows = fused_data(g, st);
    tex_stage *sf = tex_stage_of(g->s, rf);
    if (rows && step(g, tex_bind(st, rows, TEX_BLOCK_X), "bind(%s, rows, blockIdx.x)", name) &&
        step(g, tex_bind(st, tx, TEX_THREAD_X), "bind(%s, %s, threadIdx.x)", name, tx->name) &&
        step(g, tex_compute_at(sf, st, tx), "compute_at(%s, %s, %s)", tex_tensor_name(rf), name,
             tx->name))
        step(g, tex_set_scope(sf, TEX_SCOPE_LOCAL), "set_scope(%s, local)", tex_tensor_name(rf));
}

/* The output's reduction split across blocks with atomic updates
 * (tex_atomic): the outer part of its first reduce axis on blockIdx.y, the
 * data axes 1-D on blockIdx.x / threadIdx.x. */
static void block_reduce_output(gen *g)
{
    tex_stage *st = tex_stage_of(g->s, g->w->out);
    const char *name = tex_tensor_name(g->w->out);
    int64_t chunk = rnd(g, 1, 12);
    tex_iter *ko, *ki;
    if (!step(g, tex_split(st, first_raxis(st), IMM(g, chunk), &ko, &ki),
              "split(%s, reduction, %lld)", name, (long long)chunk) ||
        !step(g, tex_atomic(st), "atomic(%s)", name))
        return;
    g->ty = 1;
    g->tx = draw_threads(g);
    if (map_1d(g, st, g->tx, NULL))
        step(g, tex_bind(st, ko, TEX_BLOCK_Y), "bind(%s, %s, blockIdx.y)", name, ko->name);
}

/* The output mapped to blocks and threads, maybe with caches. */
static void map_output(gen *g)
{
    ops_wl *w = g->w;
    tex_tensor *cl = NULL;
    if (chance(g, 35)) {
        cl = tex_cache_write(g->s, w->out, TEX_SCOPE_LOCAL);
        if (!step(g, cl ? 0 : tex_errcode(w->ctx), "cache_write(%s, local)", w->out->name))
            return;
    }
    tex_stage *st = tex_stage_of(g->s, w->out);
    bool two_d = tex_tensor_ndim(w->out) >= 2 && chance(g, 50);
    g->ty = two_d ? rnd(g, 1, 9) : 1;
    g->tx = two_d ? rnd(g, 1, 17) : draw_threads(g);
    tex_iter *bl = NULL;
    tex_iter *th = two_d ? map_2d(g, st, g->ty, g->tx, &bl) : map_1d(g, st, g->tx, &bl);
    if (!th)
        return;
    tex_stage *reader = st;
    if (cl) {
        reader = tex_stage_of(g->s, cl);
        if (!step(g, tex_compute_at(reader, st, th), "compute_at(%s, %s, %s)", cl->name,
                  w->out->name, th->name))
            return;
    }
    shared_cache(g, reader, st, th, bl);
}

/* An intermediate: inlined when it can be, else at root with a 1-D mapping. */
static void place_mid(gen *g, tex_tensor *t)
{
    tex_stage *st = tex_stage_of(g->s, t);
    if (!st || st->attach != TEXI_ATTACH_ROOT)
        return;
    if (chance(g, 50) && tex_compute_inline(st) == 0) {
        ops_logf(&g->log, "    compute_inline(%s) -> 0\n", tex_tensor_name(t));
        return;
    }
    tex_clear_error(g->w->ctx);
    map_1d(g, st, draw_threads(g), NULL);
}

/* The three checks of the file comment; 0 or -1 with the reason in why. */
static int check(gen *g, tex_func *f, uint64_t seed, char *why, size_t n)
{
    tex_func copy, *fs = ops_synced(f, &copy);
    if (!fs) {
        snprintf(why, n, "thread_sync failed: %s", tex_errmsg(g->w->ctx));
        return -1;
    }
    if (ops_run_and_compare(g->w, fs, NULL, "interpreted: ", seed, why, n) != 0)
        return -1;
    if (seed % 2 == 0 &&
        ops_jit_compare(g->w, f, seed % 4 ? "cpu" : "cpu -threads=2", seed, why, n) != 0)
        return -1;
    tex_kernel *k = tex_build(f, "cuda -emit-only");
    if (!k && tex_errcode(g->w->ctx) == TEX_EUNAVAILABLE) {
        n_cuda_unsupported++;
        ops_logf(&g->log, "  cuda: %s\n", tex_errmsg(g->w->ctx));
        return 0;
    }
    if (!k) {
        snprintf(why, n, "tex_build(\"cuda -emit-only\") failed (%d): %s", tex_errcode(g->w->ctx),
                 tex_errmsg(g->w->ctx));
        return -1;
    }
    tex_kernel_free(k);
    return 0;
}

static bool one_random(const sg_workload *wl, uint64_t seed, bool report)
{
    ops_wl w;
    ops_init(&w, tex_ctx_new(), wl->name);
    gen g = {.w = &w, .rng = sg_rng(seed, sg_name_hash(wl->name) ^ 0x6770)};
    int variant = sg_build(wl, &w, &g.rng, seed);
    g.s = tex_schedule_new(w.ctx, 1, &w.out);
    ops_logf(&g.log, "  shape variant %d\n", variant);
    for (int k = w.n_mid - 1; k >= 0 && !g.refused && !g.broken; k--)
        place_mid(&g, w.mid[k]);
    if (!g.refused && !g.broken) {
        tex_stage *st = tex_stage_of(g.s, w.out);
        int how = first_raxis(st) ? (int)rnd(&g, 0, 9) : 9;
        if (how < 4)
            thread_reduce_output(&g);
        else if (how < 6)
            block_reduce_output(&g);
        else
            map_output(&g);
    }
    bool ok = true;
    char why[2048] = "";
    tex_func *f = NULL;
    if (g.broken) {
        ok = false;
        snprintf(why, sizeof why, "a primitive failed with an error other than TEX_EINVAL");
    } else if (g.refused) {
        n_refused++;
    } else if (!(f = ops_lower(&w, g.s, why, sizeof why)) || check(&g, f, seed, why, sizeof why) ||
               sg_text_round_trip(&w, g.s, why, sizeof why)) {
        ok = false;
    }
    if (!ok && report)
        ops_report(&w, seed, &g.log, f, why);
    tex_ctx_free(w.ctx);
    return ok;
}

/* Under valgrind (make valgrind) a fifth of the trials: every schedule is
 * interpreted and JIT-built, which valgrind slows down a hundredfold. */
static int trials_here(int trials)
{
    const char *preload = getenv("LD_PRELOAD");
    return preload && strstr(preload, "vgpreload") ? (trials + 4) / 5 : trials;
}

#define RANDOM_TEST(fn, nv, trials)                                                                \
    static void test_random_##fn(void)                                                             \
    {                                                                                              \
        const sg_workload wl = {#fn, sg_##fn, nv, 1, trials_here(trials)};                         \
        sg_run(&wl, one_random, 2, &n_tried, &n_failed);                                           \
    }

RANDOM_TEST(matmul, 4, 40)
RANDOM_TEST(batch_matmul, 3, 20)
RANDOM_TEST(conv2d, 3, 20)
RANDOM_TEST(softmax, 3, 25)
RANDOM_TEST(layernorm, 3, 25)
RANDOM_TEST(transpose, 3, 20)
RANDOM_TEST(maxpool, 3, 15)
RANDOM_TEST(elemwise, 3, 15)
RANDOM_TEST(sum, 4, 25)
RANDOM_TEST(max_where, 4, 20)
RANDOM_TEST(min, 4, 15)

int main(void)
{
    if (!tt_private_cache(cache_dir, "test_gpu_random"))
        return 1;
    if (!tex_target_available("cpu")) {
        printf("SKIP gpu_random (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return 0;
    }
    TT_RUN(test_random_matmul);
    TT_RUN(test_random_batch_matmul);
    TT_RUN(test_random_conv2d);
    TT_RUN(test_random_softmax);
    TT_RUN(test_random_layernorm);
    TT_RUN(test_random_transpose);
    TT_RUN(test_random_maxpool);
    TT_RUN(test_random_elemwise);
    TT_RUN(test_random_sum);
    TT_RUN(test_random_max_where);
    TT_RUN(test_random_min);
    printf("random GPU schedules: %ld tried, %ld failed, %ld dropped (a primitive refused), "
           "%ld not emitted for CUDA (unsupported, TEX_EUNAVAILABLE)\n",
           n_tried, n_failed, n_refused, n_cuda_unsupported);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
