/*
 * GEMM-like kernels of the automatic CUDA schedule (cuda.c's "tiles"): a
 * matmul, dense or conv2d stage computed in register tiles of its
 * epilogue's root (a lone GEMM-like output gets a local cache_write as its
 * epilogue), through the public primitives only; gpu_cases.h's matmul is
 * the model.
 *
 *   block tile  the root's last two dims split by TM x TN (64, 32 or 16
 *               when one divides the extent, else 64, or the power of two
 *               covering a smaller extent; guarded tails), on blockIdx.y/x;
 *               leading (batch, image, filter) dims fused on blockIdx.z.
 *               128 x 128 where both dims are constants of at least 128
 *               and that still gives BIG_BLOCKS blocks or more (a GPU's
 *               multiprocessors each get one: 2048^2 does, 1024^2 not).
 *   thread tile each thread computes REG x REG outputs, 8 x 8 in a
 *               128 x 128 tile (split_nparts into TM / REG x TN / REG
 *               threads, 16 x 16 at most, on threadIdx.y/x): the GEMM
 *               stage in local memory computed at threadIdx.x, its loop
 *               order (k / K_TILE, k % K_TILE, other reduce axes, rows,
 *               columns) with the tile's rows and columns unrolled, and
 *               k % K_TILE too when k is the only reduce axis and the
 *               tiles cover the rows and columns exactly (a tile with
 *               bounds checks keeps the loop: loop_unswitch then gives it
 *               a copy without them); the epilogue (bias, activation,
 *               residual) applied as the tile is written back, other
 *               epilogue members computed per tile.
 *   shared      each operand read with plain axis indices (A, B of a
 *               matmul; a conv's filter) whose K_TILE slice fits is
 *               cache_read into shared memory at k / K_TILE, fetched
 *               cooperatively by the block's threads (cp.async on sm_80
 *               and newer: codegen_cuda_async.c), double-buffered; one
 *               read as t[.., m, k] (A of a matmul) stored k-major and
 *               padded (k_major below). An
 *               operand read through index arithmetic (a conv's padded
 *               input) is read from global memory.
 *   tensor cores  f16/bf16 inputs accumulated in f32 (sum of f32(A) f32(B))
 *               with constant M, N, K multiples of 16, sm_70 or newer (or
 *               no -arch) and no -strict-float. f16 on sm_80 or newer (or
 *               no -arch): cuda_mma.c's block tiles up to 128 x 128 of
 *               warp tiles whose accumulator fragments stay in registers,
 *               A and B K tiles double-buffered in shared memory. bf16, and
 *               f16 on sm_70 to sm_75: the wmma built-ins
 *               (cuda.wmma_m16n16k16_*), one warp per 16 x 16 accumulator
 *               tile in shared memory, up to 4 warps per block along M.
 */
#include "autosched/autosched.h"

enum {
    TILE_MAX = 64,  /* the largest block tile along a dim */
    REG = 4,        /* outputs per thread along each tile dim */
    BIG_TILE = 128, /* the block tile of large GEMMs, BIG_REG x BIG_REG per thread */
    BIG_REG = 8,
    BIG_BLOCKS = 128,        /* blocks a large GEMM's tiles must still give */
    K_TILE = 8,              /* the reduction's step between shared tiles */
    SMEM_BUDGET = 32 * 1024, /* bytes of shared operand tiles, double-buffered */
    BANKS = 32,              /* shared-memory banks of 4 bytes */
    K_MAJOR_PAD = 4,         /* elements after each k row of a k-major tile */
    MAX_OPERANDS = 8,        /* inputs of a GEMM-like stage considered for sharing */
    WMMA = 16,               /* the wmma tile's size */
    WARP = 32
};

static bool const_extent(const tex_iter *iv, int64_t *v)
{
    return texi_expr_is_int_const(iv->extent, v);
}

/* The block tile along iv (file comment). */
static int block_tile(const tex_iter *iv)
{
    int64_t e;
    if (!const_extent(iv, &e))
        return TILE_MAX;
    for (int t = TILE_MAX; t >= 16; t /= 2)
        if (e % t == 0)
            return t;
    int t = REG;
    while (t < TILE_MAX && t < e)
        t *= 2;
    return t;
}

/* Whether the root's last two dims m, n (batch: the product of the
 * others, 1 when not constant) take BIG_TILE x BIG_TILE block tiles. */
static bool big_tiles(const texi_op *op)
{
    int64_t em, en, e, batch = 1;
    int nax = op->n_axes;
    if (!const_extent(op->axes[nax - 2], &em) || !const_extent(op->axes[nax - 1], &en) ||
        em < BIG_TILE || en < BIG_TILE)
        return false;
    for (int a = 0; a < nax - 2; a++)
        batch *= const_extent(op->axes[a], &e) && e > 0 ? e : 1;
    return batch * ((em + BIG_TILE - 1) / BIG_TILE) * ((en + BIG_TILE - 1) / BIG_TILE) >=
           BIG_BLOCKS;
}

/* The reduce axis split by K_TILE: the longest (a symbolic one first). */
static tex_iter *k_axis(const texi_op *op)
{
    tex_iter *best = op->raxes[0];
    int64_t be = 0, e;
    for (int k = 0; k < op->n_raxes; k++) {
        if (!const_extent(op->raxes[k], &e))
            return op->raxes[k];
        if (e > be) {
            be = e;
            best = op->raxes[k];
        }
    }
    return best;
}

typedef struct {
    const texi_op *op;
    const tex_tensor *t;
    const tex_iter *m, *n; /* the tile's row and column axes */
    tex_iter *k;           /* the reduce axis split by K_TILE */
    int tm, tn;
    int64_t elems; /* elements of t one K_TILE step reads; -1: not plain */
    bool k_last;   /* t's last index is k (t[.., m, k]: A of a matmul) */
} tile_walk;

/* Elements of the tile along iv, -1 when unknown. */
static int64_t tile_extent(const tile_walk *w, const tex_iter *iv)
{
    int64_t e;
    if (iv == w->m || iv == w->n)
        return iv == w->m ? w->tm : w->tn;
    if (iv == w->k)
        return K_TILE;
    for (int a = 0; a < w->op->n_axes; a++)
        if (w->op->axes[a] == iv)
            return 1;
    return const_extent(iv, &e) ? e : -1;
}

static bool tile_visit(tex_expr *e, void *ud)
{
    tile_walk *w = ud;
    if (w->elems < 0)
        return false;
    if (e->kind != TEXI_EXPR_ACCESS || e->u.access.tensor != w->t)
        return true;
    int64_t elems = 1;
    for (int k = 0; k < e->u.access.n_idx; k++) {
        const tex_expr *ix = e->u.access.idx[k];
        int64_t x =
            ix->kind == TEXI_EXPR_VAR && ix->u.var.iter ? tile_extent(w, ix->u.var.iter) : -1;
        if (x < 0) {
            w->elems = -1;
            return false;
        }
        elems *= x;
    }
    if (elems > w->elems)
        w->elems = elems;
    const tex_expr *last = e->u.access.idx[e->u.access.n_idx - 1];
    w->k_last |= e->u.access.n_idx >= 2 && last->u.var.iter == w->k;
    return false;
}

/* The shared copy ss of an operand read as t[.., m, k]: stored k-major (k
 * the outermost dimension, tex_reorder_storage), so that a thread's rows
 * of one k are contiguous (vector loads, one bank wavefront for the warp's
 * two row groups), its k rows padded by K_MAJOR_PAD elements
 * (tex_storage_align) so that the fetch's stores, k fastest, hit distinct
 * banks. */
static int k_major(tex_stage *ss)
{
    int n = ss->op->n_axes;
    tex_iter *order[32];
    if (n < 2 || n > 32)
        return 0;
    order[0] = tex_op_axis(ss, n - 1);
    for (int d = 0; d < n - 1; d++)
        order[d + 1] = tex_op_axis(ss, d);
    TEXI_TRY(tex_reorder_storage(ss, n, order));
    return tex_storage_align(ss, order[0], BANKS, K_MAJOR_PAD);
}

/* Cooperative fetch of shared stage st by the ty x tx threads it is nested
 * in (gpu_cases.h's gc_coop_fetch): its axes fused, split by the block
 * size, the inner part on threadIdx.y/x. */
static int coop_fetch(texi_as_graph *g, tex_stage *st, int ty, int tx)
{
    tex_iter *fu = tex_stage_axis(st, 0), *fo, *fi, *fy, *fx;
    int n = tex_stage_naxes(st);
    for (int a = 1; a < n; a++)
        TEXI_TRY(tex_fuse(st, fu, tex_stage_axis(st, 1), &fu));
    TEXI_TRY(tex_split(st, fu, tex_int(g->ctx, (int64_t)ty * tx), &fo, &fi));
    TEXI_TRY(tex_split(st, fi, tex_int(g->ctx, tx), &fy, &fx));
    if (ty > 1)
        TEXI_TRY(tex_bind(st, fy, TEX_THREAD_Y));
    return tex_bind(st, fx, TEX_THREAD_X);
}

/* Stages each plain operand of gs whose double-buffered K_TILE slice fits
 * the shared-memory budget into shared memory at ko (file comment); the
 * first MAX_OPERANDS inputs are considered. */
static int share_operands(texi_as_graph *g, tex_stage *gs, tile_walk w, tex_iter *ko, int ty,
                          int tx)
{
    int64_t used = 0;
    int n_in = gs->op->n_inputs < MAX_OPERANDS ? gs->op->n_inputs : MAX_OPERANDS;
    tex_tensor *ins[MAX_OPERANDS];
    /* each cache_read gives gs a new op reading the copy: list the inputs first */
    for (int i = 0; i < n_in; i++)
        ins[i] = gs->op->inputs[i];
    for (int i = 0; i < n_in; i++) {
        tex_stage *src = texi_schedule_find_stage(g->sch, ins[i]);
        if (!src || src->attach == TEXI_ATTACH_INLINE)
            continue;
        w.t = ins[i];
        w.elems = 0;
        w.k_last = false;
        texi_expr_visit(gs->op->body, tile_visit, &w);
        int64_t bytes = 2 * w.elems * (texi_dtype_bits(ins[i]->dtype) / 8);
        if (w.elems <= 0 || used + bytes > SMEM_BUDGET)
            continue;
        used += bytes;
        tex_tensor *sh = tex_cache_read(g->sch, ins[i], TEX_SCOPE_SHARED, 1, &gs->tensor);
        if (!sh)
            return tex_errcode(g->ctx);
        tex_stage *ss = tex_stage_of(g->sch, sh);
        TEXI_TRY(tex_compute_at(ss, gs, ko));
        TEXI_TRY(coop_fetch(g, ss, ty, tx));
        TEXI_TRY(tex_double_buffer(ss));
        if (w.k_last)
            TEXI_TRY(k_major(ss));
    }
    return 0;
}

/* Whether tiles of t cover the constant extent of iv exactly: no tile
 * needs bounds checks. */
static bool tiles_exactly(const tex_iter *iv, int t)
{
    int64_t e;
    return const_extent(iv, &e) && e % t == 0;
}

/* The GEMM stage's loops inside its thread tile (file comment). */
static int gemm_thread_tile(texi_as_graph *g, tex_stage *gs, tile_walk w, int ty, int tx)
{
    const texi_op *op = gs->op;
    tex_iter *order[32], *ko, *ki;
    int nax = op->n_axes, n = 0;
    if (nax + op->n_raxes + 1 > 32)
        return 0;
    TEXI_TRY(tex_split(gs, w.k, tex_int(g->ctx, K_TILE), &ko, &ki));
    order[n++] = ko;
    order[n++] = ki;
    for (int k = 0; k < op->n_raxes; k++)
        if (op->raxes[k] != w.k)
            order[n++] = op->raxes[k];
    for (int a = 0; a < nax; a++)
        order[n++] = op->axes[a];
    TEXI_TRY(tex_reorder(gs, n, order));
    if (op->n_raxes == 1 && tiles_exactly(w.m, w.tm) && tiles_exactly(w.n, w.tn))
        TEXI_TRY(tex_unroll(gs, ki));
    /* a conv's window axes stay loops: unrolled too, with 16 outputs per
     * tap, the body is too large for ptxas to keep spill-free once loop
     * partitioning gives it a copy without bounds checks */
    TEXI_TRY(tex_unroll(gs, op->axes[nax - 2]));
    TEXI_TRY(tex_unroll(gs, op->axes[nax - 1]));
    return share_operands(g, gs, w, ko, ty, tx);
}

/* Register tiles of root st (injective, >= 2 dims) computing GEMM stage gs
 * (node gemm_node, -1 for a cache_write of the root) and the kernel's other
 * members (node r's). */
static int register_tiles(texi_as_graph *g, int r, tex_stage *st, tex_stage *gs, int gemm_node)
{
    const texi_op *op = st->op;
    int nax = op->n_axes;
    tex_iter *m = op->axes[nax - 2], *nn = op->axes[nax - 1];
    bool big = big_tiles(op);
    int tm = big ? BIG_TILE : block_tile(m), tn = big ? BIG_TILE : block_tile(nn);
    int reg = big ? BIG_REG : REG, ty = tm / reg, tx = tn / reg;
    tex_iter *by, *yi, *bx, *xi, *tyi, *yii, *txi, *xii, *bz;
    TEXI_TRY(tex_split(st, m, tex_int(g->ctx, tm), &by, &yi));
    TEXI_TRY(tex_split(st, nn, tex_int(g->ctx, tn), &bx, &xi));
    TEXI_TRY(tex_split_nparts(st, yi, tex_int(g->ctx, ty), &tyi, &yii));
    TEXI_TRY(tex_split_nparts(st, xi, tex_int(g->ctx, tx), &txi, &xii));
    tex_iter *order[32];
    int n = 0;
    if (nax + 4 > 32)
        return 0;
    for (int a = 0; a < nax - 2; a++)
        order[n++] = op->axes[a];
    tex_iter *inner[6] = {by, bx, tyi, txi, yii, xii};
    for (int k = 0; k < 6; k++)
        order[n++] = inner[k];
    TEXI_TRY(tex_reorder(st, n, order));
    if (nax > 2) {
        bz = op->axes[0];
        for (int a = 1; a < nax - 2; a++)
            TEXI_TRY(tex_fuse(st, bz, tex_stage_axis(st, 1), &bz));
        TEXI_TRY(tex_bind(st, bz, TEX_BLOCK_Z));
    }
    TEXI_TRY(tex_bind(st, by, TEX_BLOCK_Y));
    TEXI_TRY(tex_bind(st, bx, TEX_BLOCK_X));
    TEXI_TRY(tex_bind(st, tyi, TEX_THREAD_Y));
    TEXI_TRY(tex_bind(st, txi, TEX_THREAD_X));
    TEXI_TRY(tex_unroll(st, yii));
    TEXI_TRY(tex_unroll(st, xii));
    for (int i = r - 1; i >= 0; i--) {
        texi_as_node *mb = &g->nodes[i];
        if (mb->fate != TEXI_AS_ATTACHED || mb->root != r)
            continue;
        TEXI_TRY(tex_compute_at(mb->st, st, txi));
        TEXI_TRY(tex_set_scope(mb->st, TEX_SCOPE_LOCAL));
    }
    if (gemm_node < 0) {
        TEXI_TRY(tex_compute_at(gs, st, txi));
        TEXI_TRY(tex_set_scope(gs, TEX_SCOPE_LOCAL));
    }
    const texi_op *gop = gs->op;
    tile_walk w = {
        gop, NULL, gop->axes[gop->n_axes - 2], gop->axes[gop->n_axes - 1], k_axis(gop), tm, tn,
        0,   false};
    return gemm_thread_tile(g, gs, w, ty, tx);
}

/* The input of gs read at [row, k] (row: 0) or [k, column] (row: 1) under
 * a cast to f32, or NULL. */
static tex_tensor *wmma_operand(const texi_op *op, tex_expr *e, int which)
{
    if (e->kind != TEXI_EXPR_CAST || e->dtype != TEX_F32)
        return NULL;
    e = e->u.un.a;
    if (e->kind != TEXI_EXPR_ACCESS || e->u.access.n_idx != 2)
        return NULL;
    const tex_iter *want[2] = {which == 0 ? op->axes[0] : op->raxes[0],
                               which == 0 ? op->raxes[0] : op->axes[1]};
    for (int k = 0; k < 2; k++) {
        const tex_expr *ix = e->u.access.idx[k];
        if (ix->kind != TEXI_EXPR_VAR || ix->u.var.iter != want[k])
            return NULL;
    }
    tex_tensor *t = e->u.access.tensor;
    return t->dtype == TEX_F16 || t->dtype == TEX_BF16 ? t : NULL;
}

/* Whether GEMM stage gs, computed in root's tiles, fits the tensor-core
 * path (file comment); its operands in ab. */
static bool wmma_fits(const texi_as_graph *g, const tex_stage *root, const tex_stage *gs,
                      tex_tensor *ab[2])
{
    const texi_op *op = gs->op;
    if (g->strict_float || (g->sm && g->sm < 70) || gs->tensor->dtype != TEX_F32 ||
        op->n_axes != 2 || op->n_raxes != 1 || root->op->n_axes != 2)
        return false;
    tex_expr *b = op->body;
    if (b->kind != TEXI_EXPR_REDUCE || b->u.red.op != TEXI_REDUCE_SUM ||
        b->u.red.body->kind != TEXI_EXPR_MUL)
        return false;
    ab[0] = wmma_operand(op, b->u.red.body->u.bin.a, 0);
    ab[1] = wmma_operand(op, b->u.red.body->u.bin.b, 1);
    if (!ab[0] || !ab[1] || ab[0]->dtype != ab[1]->dtype)
        return false;
    const tex_iter *dims[3] = {op->axes[0], op->axes[1], op->raxes[0]};
    for (int k = 0; k < 3; k++) {
        int64_t e;
        if (!const_extent(dims[k], &e) || e % WMMA != 0)
            return false;
    }
    for (int k = 0; k < 2; k++) {
        tex_stage *src = texi_schedule_find_stage(g->sch, ab[k]);
        if (!src || src->attach == TEXI_ATTACH_INLINE)
            return false;
    }
    return true;
}

/* The tensor-core mapping (test_tensorize_cuda.c's recipe): root st in
 * blocks of 16 * warps x 16 outputs, 32 threads per warp on threadIdx.x and
 * the warps on threadIdx.y; the accumulator stage cs in shared memory at
 * the block, one 16 x 16 wmma tile per warp, k split by 16, the operands'
 * 16 x 16 tiles cache_read into shared memory at k / 16. */
static int wmma_tiles(texi_as_graph *g, int r, tex_stage *st, tex_stage *cs, tex_tensor *ab[2])
{
    tex_ctx *x = g->ctx;
    int64_t m;
    const_extent(st->op->axes[0], &m);
    int warps = m % (4 * WMMA) == 0 ? 4 : m % (2 * WMMA) == 0 ? 2 : 1;
    tex_intrin *in = tex_intrin_builtin(x, ab[0]->dtype == TEX_F16 ? "cuda.wmma_m16n16k16_f16f32"
                                                                   : "cuda.wmma_m16n16k16_bf16f32");
    tex_tensor *sh[2];
    for (int k = 0; k < 2; k++)
        if (!(sh[k] = tex_cache_read(g->sch, ab[k], TEX_SCOPE_SHARED, 1, &cs->tensor)))
            return tex_errcode(x);
    if (!in)
        return tex_errcode(x);
    tex_iter *io, *jo, *ii, *ji, *fu, *o, *l, *wy, *rest;
    TEXI_TRY(tex_tile(st, st->op->axes[0], st->op->axes[1], tex_int(x, WMMA * warps),
                      tex_int(x, WMMA), &io, &jo, &ii, &ji));
    TEXI_TRY(tex_bind(st, io, TEX_BLOCK_Y));
    TEXI_TRY(tex_bind(st, jo, TEX_BLOCK_X));
    TEXI_TRY(tex_fuse(st, ii, ji, &fu));
    TEXI_TRY(tex_split(st, fu, tex_int(x, WARP), &o, &l));
    TEXI_TRY(tex_bind(st, l, TEX_THREAD_X));
    TEXI_TRY(tex_split(st, o, tex_int(x, WMMA * WMMA / WARP), &wy, &rest));
    TEXI_TRY(tex_bind(st, wy, TEX_THREAD_Y));
    for (int i = r - 1; i >= 0; i--) {
        texi_as_node *mb = &g->nodes[i];
        if (mb->fate != TEXI_AS_ATTACHED || mb->root != r || mb->st == cs)
            continue;
        TEXI_TRY(tex_compute_at(mb->st, st, l));
        TEXI_TRY(tex_set_scope(mb->st, TEX_SCOPE_LOCAL));
    }
    TEXI_TRY(tex_compute_at(cs, st, jo));
    TEXI_TRY(tex_set_scope(cs, TEX_SCOPE_SHARED));
    tex_iter *cio, *cjo, *cii, *cji, *ko, *ki;
    TEXI_TRY(tex_tile(cs, cs->op->axes[0], cs->op->axes[1], tex_int(x, WMMA), tex_int(x, WMMA),
                      &cio, &cjo, &cii, &cji));
    TEXI_TRY(tex_split(cs, cs->op->raxes[0], tex_int(x, WMMA), &ko, &ki));
    TEXI_TRY(tex_reorder(cs, 6, (tex_iter *[]){cio, cjo, ko, cii, cji, ki}));
    TEXI_TRY(tex_bind(cs, cio, TEX_THREAD_Y));
    for (int k = 0; k < 2; k++) {
        tex_stage *ss = tex_stage_of(g->sch, sh[k]);
        TEXI_TRY(tex_compute_at(ss, cs, ko));
        TEXI_TRY(coop_fetch(g, ss, 1, WARP));
    }
    return tex_tensorize(cs, cii, in);
}

/* Whether a tensor-core GEMM of operands ab (wmma_fits) takes the
 * register-fragment form (cuda_mma.c): f16, sm_80 or newer (or no -arch). */
static bool mma_fits(const texi_as_graph *g, tex_tensor *ab[2])
{
    return ab[0]->dtype == TEX_F16 && (g->sm == 0 || g->sm >= 80);
}

int texi_as_cuda_gemm_tiles(texi_as_graph *g, int r)
{
    texi_as_node *nd = &g->nodes[r];
    tex_stage *gs = g->nodes[nd->gemm].st;
    tex_tensor *ab[2];
    if (wmma_fits(g, nd->st, gs, ab))
        return mma_fits(g, ab) ? texi_as_cuda_mma_tiles(g, r, gs, ab)
                               : wmma_tiles(g, r, nd->st, gs, ab);
    return register_tiles(g, r, nd->st, gs, nd->gemm);
}

int texi_as_cuda_gemm_alone(texi_as_graph *g, tex_stage *st)
{
    tex_tensor *ab[2];
    bool tc = wmma_fits(g, st, st, ab);
    if (tc && mma_fits(g, ab))
        return texi_as_cuda_mma_alone(g, st, ab);
    tex_tensor *c = tex_cache_write(g->sch, st->tensor, tc ? TEX_SCOPE_SHARED : TEX_SCOPE_LOCAL);
    if (!c)
        return tex_errcode(g->ctx);
    tex_stage *cs = tex_stage_of(g->sch, c);
    return tc ? wmma_tiles(g, -1, st, cs, ab) : register_tiles(g, -1, st, cs, -1);
}
