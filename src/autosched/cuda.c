/*
 * The kernel level of the automatic scheduler for CUDA: the block and
 * thread mapping of each kernel that partition.c chose, through the public
 * primitives only (AKG's auto mapping; tests/support/gpu_cases.h holds the
 * hand-written schedules it follows).
 *
 *   alone, elementwise  all dims fused and split by a block of 256 threads
 *          (blockIdx.x, threadIdx.x); when the innermost dim is a constant
 *          multiple of a 16-byte vector and the vectors fill whole blocks
 *          (of 256, 128, 64 or 32 threads: a vector loop must not be
 *          guarded), that vector is split off first and vectorized (float4,
 *          each thread loads and stores one vector).
 *   alone, reduction    along the last dim read (a row sum): one block per
 *          output element, the last reduce axis split by 128 threads and
 *          rfactor'ed into per-thread partials, then reduced across
 *          threadIdx.x (cross-thread reduction); short reductions (at most
 *          32 iterations in all), reductions along a data-parallel dim (a
 *          column sum) and every reduction under -strict-float: one thread
 *          per output element, the reduction serial in it (never
 *          reassociated).
 *   rows   (softmax, layernorm): the root's leading dims up to the kernel's
 *          depth on blockIdx.z/y/x (bind_rows), its remaining dims split over 128
 *          threads; each reduction member computed at the row in shared
 *          memory by the same cross-thread reduction. Elementwise members
 *          are inlined first (texi_as_cuda_refine): a row may be longer
 *          than shared memory, and a recomputed exp costs less than a
 *          round trip through memory.
 *   tiles  GEMM-like stages and their epilogues (cuda_gemm.c).
 */
#include "autosched/autosched.h"

#include <string.h>

enum { EW_THREADS = 256, ROW_THREADS = 128, SHORT_REDUCE = 32, VEC_BYTES = 16, WARP = 32 };
enum { SHARED_BYTES = 48 * 1024 }; /* shared memory a block may use without opting in */

static bool const_extent(const tex_iter *iv, int64_t *v)
{
    return texi_expr_is_int_const(iv->extent, v);
}

/* Fuses st's leaves [from, from + n) into one loop (*out); n >= 1. */
static int fuse_range(tex_stage *st, int from, int n, tex_iter **out)
{
    tex_iter *f = tex_stage_axis(st, from);
    for (int k = 1; k < n; k++)
        TEXI_TRY(tex_fuse(st, f, tex_stage_axis(st, from + 1), &f));
    *out = f;
    return 0;
}

/* Splits iv by `threads`, the inner part on threadIdx.x; the outer part on
 * blockIdx.x (`blocks`), else a serial loop inside the thread's (each
 * thread then handles elements t, t + threads, ...: coalesced). */
static int thread_split(texi_as_graph *g, tex_stage *st, tex_iter *iv, int threads, bool blocks)
{
    tex_iter *o, *in;
    TEXI_TRY(tex_split(st, iv, tex_int(g->ctx, threads), &o, &in));
    if (blocks)
        TEXI_TRY(tex_bind(st, o, TEX_BLOCK_X));
    else
        TEXI_TRY(tex_reorder(st, 2, (tex_iter *[]){in, o}));
    return tex_bind(st, in, TEX_THREAD_X);
}

/* Lanes of a 16-byte vector of st's dtype (32- and 64-bit types) when its
 * data-parallel dims are constants, the innermost a multiple of the lanes
 * and the vectors a multiple of a warp; 0 otherwise. A vector loop must be
 * free of guards, so *threads receives the block size that divides the
 * vectors: 256, 128, 64 or 32. */
static int vector_lanes(const tex_stage *st, int *threads)
{
    int bits = texi_dtype_bits(st->tensor->dtype), nax = st->op->n_axes;
    int64_t e, total = 1;
    if (nax == 0 || bits < 32)
        return 0;
    for (int a = 0; a < nax; a++) {
        if (!const_extent(st->op->axes[a], &e))
            return 0;
        total *= e;
    }
    int lanes = VEC_BYTES * 8 / bits;
    if (!const_extent(st->op->axes[nax - 1], &e) || e % lanes != 0)
        return 0;
    for (*threads = EW_THREADS; *threads >= WARP; *threads /= 2)
        if (total / lanes % *threads == 0)
            return lanes;
    return 0;
}

/* One thread per element of st's data-parallel dims (a vector of them
 * when vector_lanes allows): fused, split by the block size. */
static int map_elements(texi_as_graph *g, tex_stage *st, bool vectorize)
{
    int nax = st->op->n_axes, threads = EW_THREADS;
    int lanes = vectorize ? vector_lanes(st, &threads) : 0;
    if (nax == 0)
        return 0;
    tex_iter *vo = NULL, *vi = NULL, *f;
    if (lanes)
        TEXI_TRY(tex_split(st, st->op->axes[nax - 1], tex_int(g->ctx, lanes), &vo, &vi));
    TEXI_TRY(fuse_range(st, 0, nax, &f));
    TEXI_TRY(thread_split(g, st, f, lanes ? threads : EW_THREADS, true));
    return lanes ? tex_vectorize(st, vi) : 0;
}

/* The root's leading `lead` dims (leaves 0 .. lead) on blocks: one each on
 * blockIdx.z/y/x, the outer ones fused when there are more than three (the
 * members' tiles then stay constant with symbolic sizes, which a fused
 * loop's div/mod would not give). *row is the innermost. */
static int bind_rows(tex_stage *st, int lead, tex_iter **row)
{
    static const tex_thread_tag tags[3] = {TEX_BLOCK_Z, TEX_BLOCK_Y, TEX_BLOCK_X};
    int first = lead > 3 ? lead - 2 : 1;
    tex_iter *f;
    if (first > 1)
        TEXI_TRY(fuse_range(st, 0, first, &f));
    int n = lead - first + 1;
    for (int k = 0; k < n; k++)
        TEXI_TRY(tex_bind(st, tex_stage_axis(st, k), tags[3 - n + k]));
    *row = tex_stage_axis(st, n - 1);
    return 0;
}

/* The cross-thread reduction of reduction stage st (gpu_cases.h's
 * gc_thread_reduce): its last reduce axis split by ROW_THREADS, the inner
 * part rfactor'ed into per-thread partials (local, computed at the thread
 * loop), st's remaining reduction bound to threadIdx.x. With `at`, st is
 * computed at (at, at_iv) in shared memory; else its data-parallel dims go
 * on blocks (bind_rows: one block per output element) and *row receives
 * the innermost block loop (NULL for a 0-d st). */
static int cross_thread(texi_as_graph *g, tex_stage *st, tex_stage *at, tex_iter *at_iv,
                        tex_iter **row)
{
    const texi_op *op = st->op;
    tex_iter *ko, *ki, *r = op->raxes[op->n_raxes - 1];
    /* a reduce axis of e < ROW_THREADS elements on e threads: split by 128,
     * its guarded tail would read 128 - e rows past its producer's, which a
     * member computed at the row then holds in shared memory for nothing
     * (a reduction over a dim of 3 made a member's 3840-byte row 160 KiB) */
    int64_t e, threads = const_extent(r, &e) && e >= 1 && e < ROW_THREADS ? e : ROW_THREADS;
    TEXI_TRY(tex_split(st, r, tex_int(g->ctx, threads), &ko, &ki));
    tex_tensor *rf = tex_rfactor(g->sch, st->tensor, ki, op->n_axes);
    if (!rf)
        return tex_errcode(g->ctx);
    tex_iter *tx = tex_op_reduce_axis(st, 0);
    TEXI_TRY(tex_bind(st, tx, TEX_THREAD_X));
    if (at) {
        TEXI_TRY(tex_compute_at(st, at, at_iv));
        TEXI_TRY(tex_set_scope(st, TEX_SCOPE_SHARED));
    } else if (st->op->n_axes > 0) {
        TEXI_TRY(bind_rows(st, st->op->n_axes, row));
    } else {
        *row = NULL;
    }
    tex_stage *sf = tex_stage_of(g->sch, rf);
    TEXI_TRY(tex_compute_at(sf, st, tx));
    return tex_set_scope(sf, TEX_SCOPE_LOCAL);
}

/* Whether reduction st is reduced across threads: not under -strict-float,
 * its innermost read runs along its last reduce axis, and it iterates more
 * than SHORT_REDUCE times in all (a symbolic extent counts as long). */
static bool across_threads(const texi_as_graph *g, const tex_stage *st)
{
    const texi_op *op = st->op;
    if (g->strict_float || op->n_raxes == 0 || texi_as_inner_iter(st) != op->raxes[op->n_raxes - 1])
        return false;
    int64_t total = 1, e;
    for (int k = 0; k < op->n_raxes; k++) {
        if (!const_extent(op->raxes[k], &e))
            return true;
        total *= e;
    }
    return total > SHORT_REDUCE;
}

/* "alone": a kernel with nothing attached (also a stage left at the root by
 * texi_as_cuda_refine). */
static int schedule_alone(texi_as_graph *g, tex_stage *st, enum texi_as_kind kind)
{
    if (kind == TEXI_AS_GEMM && st->op->n_axes >= 2)
        return texi_as_cuda_gemm_alone(g, st);
    if (kind == TEXI_AS_INJECTIVE)
        return map_elements(g, st, true);
    tex_iter *row;
    if (across_threads(g, st) || st->op->n_axes == 0)
        return cross_thread(g, st, NULL, NULL, &row);
    return map_elements(g, st, false);
}

/* Computes the members of root r at its row loop `row`, each reduced
 * across the block's threads in shared memory (texi_as_cuda_refine left
 * only reductions there). */
static int attach_row_members(texi_as_graph *g, int r, tex_iter *row)
{
    for (int i = r - 1; i >= 0; i--) {
        texi_as_node *m = &g->nodes[i];
        if (m->fate == TEXI_AS_ATTACHED && m->root == r)
            TEXI_TRY(cross_thread(g, m->st, g->nodes[r].st, row, NULL));
    }
    return 0;
}

/* The row dims of row kernel nd: its leading dims that every member is
 * indexed by (an elementwise root keeps its last dim for the threads), which
 * schedule_rows puts on blocks. */
static int row_dims(const texi_as_node *nd)
{
    int nax = nd->st->op->n_axes, lead = nd->depth < nax ? nd->depth : nax;
    return nd->st->op->n_raxes == 0 && lead == nax && nax > 1 ? nax - 1 : lead;
}

/* "rows": see the file comment. */
static int schedule_rows(texi_as_graph *g, int r)
{
    texi_as_node *nd = &g->nodes[r];
    tex_stage *st = nd->st;
    int nax = st->op->n_axes, lead = row_dims(nd);
    bool reduce = st->op->n_raxes > 0;
    tex_iter *row, *rest;
    if (reduce) {
        TEXI_TRY(cross_thread(g, st, NULL, NULL, &row));
    } else {
        TEXI_TRY(bind_rows(st, lead, &row));
        if (lead < nax) {
            int first = lead > 3 ? 3 : lead;
            TEXI_TRY(fuse_range(st, first, nax - lead, &rest));
            TEXI_TRY(thread_split(g, st, rest, ROW_THREADS, false));
        }
    }
    return attach_row_members(g, r, row);
}

/* An upper bound of the bytes of member m's tile per row of a kernel whose
 * rows are its leading `lead` dims: its other dims whole, each of more than
 * ROW_THREADS elements rounded up to a multiple of ROW_THREADS (a consumer
 * reducing along it across the threads reads that far, past its guarded
 * tail: bound inference does not see the guard); -1 when one of them is
 * symbolic. */
static int64_t row_tile_bytes(const texi_as_node *m, int lead)
{
    const texi_op *op = m->st->op;
    int64_t bytes = texi_dtype_bits(m->st->tensor->dtype) / 8, e;
    for (int d = lead; d < op->n_axes; d++) {
        if (!const_extent(op->axes[d], &e))
            return -1;
        bytes *= e > ROW_THREADS ? (e + ROW_THREADS - 1) / ROW_THREADS * ROW_THREADS : e;
    }
    return bytes;
}

/* Member i of root r becomes a kernel of its own. */
static void detach(texi_as_graph *g, int r, int i, const char *why)
{
    texi_as_node *m = &g->nodes[i];
    m->fate = TEXI_AS_ROOT;
    m->root = i;
    m->mode = TEXI_AS_MODE_ALONE;
    m->why = why;
    g->nodes[r].n_memb--;
}

int texi_as_cuda_refine(texi_as_graph *g)
{
    for (int r = 0; r < g->n; r++) {
        texi_as_node *nd = &g->nodes[r];
        if (nd->fate != TEXI_AS_ROOT || nd->mode == TEXI_AS_MODE_ALONE)
            continue;
        bool no_row = nd->st->op->n_axes == 0;
        bool no_tiles = nd->mode == TEXI_AS_MODE_TILES &&
                        (nd->kind != TEXI_AS_INJECTIVE || nd->st->op->n_axes < 2);
        /* a reduction root puts every data dim on blocks (cross_thread): a
         * member indexed by fewer of them would be recomputed per block */
        bool finer_blocks = nd->mode == TEXI_AS_MODE_ROWS && nd->st->op->n_raxes > 0 &&
                            row_dims(nd) < nd->st->op->n_axes;
        int64_t shared = 0; /* bytes of the row's members in shared memory so far */
        for (int i = r - 1; i >= 0; i--) {
            texi_as_node *m = &g->nodes[i];
            if (m->fate != TEXI_AS_ATTACHED || m->root != r)
                continue;
            int64_t tile = nd->mode == TEXI_AS_MODE_ROWS && m->kind != TEXI_AS_INJECTIVE
                               ? row_tile_bytes(m, row_dims(nd))
                               : 0;
            if (no_row || no_tiles) {
                detach(g, r, i, "CUDA: no row or tile loop of its kernel to compute it in");
            } else if (!texi_as_read_only_by(g, i, r)) {
                /* members are visited consumers first: a reader detached */
                detach(g, r, i, "CUDA: read by a member that became a kernel of its own");
            } else if (finer_blocks && m->kind != TEXI_AS_INJECTIVE) {
                detach(g, r, i, "CUDA: its kernel's blocks are finer than its rows");
            } else if (nd->mode == TEXI_AS_MODE_ROWS && m->kind == TEXI_AS_GEMM) {
                detach(g, r, i, "CUDA: GEMM-like: block tiles of its own, not a row's reduction");
            } else if (tile < 0 || shared + tile > SHARED_BYTES) {
                detach(g, r, i,
                       "CUDA: its tile per row is symbolic or too large for shared memory");
            } else if (m->kind == TEXI_AS_INJECTIVE &&
                       texi_as_inline_copies(g, i) > TEXI_AS_MAX_COPIES) {
                detach(g, r, i, "CUDA: elementwise, read in too many places to inline");
            } else if (nd->mode == TEXI_AS_MODE_ROWS && m->kind == TEXI_AS_INJECTIVE) {
                TEXI_TRY(tex_compute_inline(m->st));
                m->fate = TEXI_AS_INLINED;
                m->root = -1;
                m->why = "CUDA: elementwise in a row kernel, recomputed by each reader";
                nd->n_memb--;
            } else {
                shared += tile;
            }
        }
        if (nd->n_memb == 0)
            nd->mode = TEXI_AS_MODE_ALONE;
    }
    return 0;
}

int texi_as_schedule_cuda(texi_as_graph *g)
{
    for (int r = g->n - 1; r >= 0; r--) {
        texi_as_node *nd = &g->nodes[r];
        if (nd->fate != TEXI_AS_ROOT)
            continue;
        switch (nd->mode) {
        case TEXI_AS_MODE_ALONE:
            TEXI_TRY(schedule_alone(g, nd->st, nd->kind));
            break;
        case TEXI_AS_MODE_ROWS:
            TEXI_TRY(schedule_rows(g, r));
            break;
        case TEXI_AS_MODE_TILES:
            TEXI_TRY(texi_as_cuda_gemm_tiles(g, r));
            break;
        }
    }
    return 0;
}

int texi_as_schedule_cuda_plain(texi_as_graph *g)
{
    int n = g->sch->n_stages;
    tex_stage **stages = texi_alloc(g->ctx, sizeof *stages * (size_t)(n > 0 ? n : 1), "stages");
    if (!stages)
        return TEX_ENOMEM;
    memcpy(stages, g->sch->stages, sizeof *stages * (size_t)n); /* rfactor adds stages */
    for (int i = 0; i < n; i++) {
        tex_stage *st = stages[i];
        tex_iter *row;
        if (!st->op || st->op->kind != TEXI_OP_COMPUTE)
            continue;
        if (st->op->n_axes > 0)
            TEXI_TRY(map_elements(g, st, false));
        else if (st->op->n_raxes > 0)
            TEXI_TRY(cross_thread(g, st, NULL, NULL, &row));
    }
    return 0;
}
