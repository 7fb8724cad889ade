/*
 * The register-fragment tensor-core GEMM of the automatic CUDA schedule
 * (cuda_gemm.c decides when it applies: f16 inputs, f32 accumulation,
 * constant M, N, K multiples of 16, sm_80 or newer, no -strict-float),
 * built the way a CUTLASS or TVM tensor-core GEMM is, through the public
 * primitives and the built-ins of src/schedule/intrin_cuda_frag.c:
 *
 *   block tile  BM x BN (128 x 128 down to 16 x 16: the largest power of two
 *               dividing the extent, halved while the grid has fewer than
 *               MIN_BLOCKS blocks; at most 64 x 64 with an epilogue), on
 *               blockIdx.y/x.
 *   warp tile   the block's warps (2 x 4, 2 x 2, ...; threadIdx.y, the lanes
 *               on threadIdx.x) each own a WM x WN tile (64 x 32 at most) of
 *               16 x 16 accumulator fragments ("cuda.mma_m16n16k16_f16f32_
 *               frag"): a local stage computed at the warp, its tile loops
 *               unrolled, so the fragments stay in registers across the
 *               whole K loop.
 *   K loop      k split by KT (32, or 16), then by 16: each KT step, the A
 *               (BM x KT) and B (KT x BN) tiles are fetched into shared
 *               memory by all threads of the block, double-buffered, rows
 *               padded by 8 elements (tex_storage_align) so that the
 *               fragment loads of neighbouring rows fall in distinct banks.
 *   write-back  once, after the K loop, by "cuda.mma_frag_store_f32": a lone
 *               GEMM straight into its output; with an epilogue (bias,
 *               activation, ...) into a BM x BN f32 tile in shared memory
 *               that the block's threads then read elementwise, computing
 *               the epilogue members per element in registers.
 */
#include "autosched/autosched.h"

enum {
    FRAG = 16,              /* the fragment tile's size */
    WARP = 32,              /* lanes of a warp */
    PAD = 8,                /* f16 elements added to each shared operand row */
    MIN_BLOCKS = 120,       /* the grid size below which the block tile shrinks */
    MAX_READERS = 16,       /* stages reading the GEMM's output (epilogue) */
    TILE_LONE = 128,        /* the largest block tile along a dim, no epilogue */
    TILE_EPILOGUE = 64,     /* the same with an epilogue (its f32 tile is shared) */
    MAX_WARP_ROWS = 2,      /* warps along M */
    MAX_WARP_COLS = 4,      /* warps along N */
    WARP_COLS_MIN_TILE = 32 /* the narrowest warp tile along N with several warps */
};

/* The shape of one mapping (file comment). */
typedef struct {
    int bm, bn; /* block tile */
    int wy, wx; /* warps along M and N */
    int kt;     /* the K step between shared tiles */
    tex_intrin *mma, *store;
} mma_shape;

/* The largest power of two <= cap dividing e (e a multiple of 16). */
static int pow2_tile(int64_t e, int cap)
{
    int t = cap;
    while (t > FRAG && e % t != 0)
        t /= 2;
    return t;
}

/* The block and warp tiles for an M x N x K GEMM (file comment). */
static mma_shape shape_for(int64_t m, int64_t n, int64_t k, bool epilogue)
{
    int cap = epilogue ? TILE_EPILOGUE : TILE_LONE;
    mma_shape s = {.bm = pow2_tile(m, cap), .bn = pow2_tile(n, cap)};
    while ((m / s.bm) * (n / s.bn) < MIN_BLOCKS && (s.bm > 64 || s.bn > 64)) {
        if (s.bm >= s.bn)
            s.bm /= 2;
        else
            s.bn /= 2;
    }
    s.wy = s.bm / FRAG >= MAX_WARP_ROWS ? MAX_WARP_ROWS : 1;
    s.wx = 1;
    while (s.wx < MAX_WARP_COLS && s.bn / (2 * s.wx) >= WARP_COLS_MIN_TILE)
        s.wx *= 2;
    s.kt = k % (2 * FRAG) == 0 ? 2 * FRAG : FRAG;
    return s;
}

/* Cooperative, double-buffered fetch of shared stage ss (a K step's operand
 * tile of gs, computed at gs's ko) by the block's warps: rows split over
 * the warps (threadIdx.y), columns over the lanes (threadIdx.x), so that
 * each thread's index stays affine in the thread indices (thread_sync then
 * proves the fetch's iterations disjoint); rows padded by PAD elements. */
static int fetch_operand(texi_as_graph *g, tex_stage *ss, tex_stage *gs, tex_iter *ko, int warps)
{
    tex_iter *ro, *ty, *co, *tx;
    TEXI_TRY(tex_compute_at(ss, gs, ko));
    TEXI_TRY(tex_storage_align(ss, ss->op->axes[0], 4 * PAD, PAD));
    TEXI_TRY(tex_split(ss, ss->op->axes[0], tex_int(g->ctx, warps), &ro, &ty));
    TEXI_TRY(tex_split(ss, ss->op->axes[1], tex_int(g->ctx, WARP), &co, &tx));
    TEXI_TRY(tex_reorder(ss, 4, (tex_iter *[]){ro, co, ty, tx}));
    if (warps > 1)
        TEXI_TRY(tex_bind(ss, ty, TEX_THREAD_Y));
    TEXI_TRY(tex_bind(ss, tx, TEX_THREAD_X));
    return tex_double_buffer(ss);
}

/* GEMM stage gs (local) computed at the warp loop w of stage r: its WM x WN
 * tile in 16 x 16 fragments (tile loops unrolled inside k / 16), k split
 * by kt then 16, operands A and B (ab) staged in shared memory at k / kt. */
static int warp_gemm(texi_as_graph *g, tex_stage *gs, tex_stage *r, tex_iter *w, const mma_shape *s,
                     tex_tensor *ab[2])
{
    tex_ctx *x = g->ctx;
    tex_tensor *sh[2];
    for (int k = 0; k < 2; k++)
        if (!(sh[k] = tex_cache_read(g->sch, ab[k], TEX_SCOPE_SHARED, 1, &gs->tensor)))
            return tex_errcode(x);
    TEXI_TRY(tex_compute_at(gs, r, w));
    TEXI_TRY(tex_set_scope(gs, TEX_SCOPE_LOCAL));
    tex_iter *io, *jo, *ii, *ji, *ko, *kr, *kio, *kii;
    TEXI_TRY(tex_tile(gs, gs->op->axes[0], gs->op->axes[1], tex_int(x, FRAG), tex_int(x, FRAG), &io,
                      &jo, &ii, &ji));
    TEXI_TRY(tex_split(gs, gs->op->raxes[0], tex_int(x, s->kt), &ko, &kr));
    TEXI_TRY(tex_split(gs, kr, tex_int(x, FRAG), &kio, &kii));
    TEXI_TRY(tex_reorder(gs, 7, (tex_iter *[]){ko, kio, io, jo, ii, ji, kii}));
    TEXI_TRY(tex_unroll(gs, kio));
    TEXI_TRY(tex_unroll(gs, io));
    TEXI_TRY(tex_unroll(gs, jo));
    TEXI_TRY(tex_tensorize(gs, ii, s->mma));
    for (int k = 0; k < 2; k++)
        TEXI_TRY(fetch_operand(g, tex_stage_of(g->sch, sh[k]), gs, ko, s->wy * s->wx));
    return 0;
}

/* Stage r receives the accumulators of gs: its rows i (yi) and columns j
 * (xi), a block tile's, split into the warps' tiles (the warp index fused
 * on threadIdx.y), each written back in 16 x 16 fragments by the store
 * built-in (tile loops unrolled); gs computed at the warp (warp_gemm). */
static int warp_tiles(texi_as_graph *g, tex_stage *r, tex_iter *yi, tex_iter *xi, tex_stage *gs,
                      const mma_shape *s, tex_tensor *ab[2])
{
    tex_ctx *x = g->ctx;
    tex_iter *wy, *wi, *wx, *wj, *w, *ti, *ii, *tj, *jj;
    TEXI_TRY(tex_split(r, yi, tex_int(x, s->bm / s->wy), &wy, &wi));
    TEXI_TRY(tex_split(r, xi, tex_int(x, s->bn / s->wx), &wx, &wj));
    TEXI_TRY(tex_split(r, wi, tex_int(x, FRAG), &ti, &ii));
    TEXI_TRY(tex_split(r, wj, tex_int(x, FRAG), &tj, &jj));
    TEXI_TRY(tex_reorder(r, 6, (tex_iter *[]){wy, wx, ti, tj, ii, jj}));
    TEXI_TRY(tex_fuse(r, wy, wx, &w));
    TEXI_TRY(tex_bind(r, w, TEX_THREAD_Y));
    TEXI_TRY(tex_unroll(r, ti));
    TEXI_TRY(tex_unroll(r, tj));
    TEXI_TRY(tex_tensorize(r, ii, s->store));
    return warp_gemm(g, gs, r, w, s, ab);
}

/* The block tile of root st on blockIdx.y/x: *yi, *xi its rows and columns
 * inside the block, *bx the block's innermost loop. */
static int block_tiles(texi_as_graph *g, tex_stage *st, const mma_shape *s, tex_iter **yi,
                       tex_iter **xi, tex_iter **bx)
{
    tex_iter *by;
    TEXI_TRY(tex_tile(st, st->op->axes[0], st->op->axes[1], tex_int(g->ctx, s->bm),
                      tex_int(g->ctx, s->bn), &by, bx, yi, xi));
    TEXI_TRY(tex_bind(st, by, TEX_BLOCK_Y));
    return tex_bind(st, *bx, TEX_BLOCK_X);
}

/* Whether the shape's built-ins could be made (errors recorded). */
static bool shape_intrins(tex_ctx *x, mma_shape *s)
{
    s->mma = tex_intrin_builtin(x, "cuda.mma_m16n16k16_f16f32_frag");
    s->store = tex_intrin_builtin(x, "cuda.mma_frag_store_f32");
    return s->mma && s->store;
}

/* The M x N x K extents of GEMM stage gs (constant: cuda_gemm.c checked). */
static mma_shape gemm_shape(const tex_stage *gs, bool epilogue)
{
    int64_t e[3];
    const tex_iter *dims[3] = {gs->op->axes[0], gs->op->axes[1], gs->op->raxes[0]};
    for (int k = 0; k < 3; k++)
        texi_expr_is_int_const(dims[k]->extent, &e[k]);
    return shape_for(e[0], e[1], e[2], epilogue);
}

int texi_as_cuda_mma_alone(texi_as_graph *g, tex_stage *st, tex_tensor *ab[2])
{
    mma_shape s = gemm_shape(st, false);
    tex_tensor *c = tex_cache_write(g->sch, st->tensor, TEX_SCOPE_LOCAL);
    if (!c || !shape_intrins(g->ctx, &s))
        return tex_errcode(g->ctx);
    tex_iter *yi, *xi, *bx;
    TEXI_TRY(block_tiles(g, st, &s, &yi, &xi, &bx));
    return warp_tiles(g, st, yi, xi, tex_stage_of(g->sch, c), &s, ab);
}

/* The stages of the schedule that read tensor t (inlined ones included:
 * cache_read redirects their reads before they are substituted), into rd;
 * their count. */
static int readers_of(const texi_as_graph *g, const tex_tensor *t, tex_tensor **rd)
{
    int n = 0;
    for (int i = 0; i < g->sch->n_stages && n < MAX_READERS; i++) {
        const tex_stage *st = g->sch->stages[i];
        for (int k = 0; k < st->op->n_inputs; k++)
            if (st->op->inputs[k] == t) {
                rd[n++] = st->tensor;
                break;
            }
    }
    return n;
}

int texi_as_cuda_mma_tiles(texi_as_graph *g, int r, tex_stage *gs, tex_tensor *ab[2])
{
    tex_ctx *x = g->ctx;
    tex_stage *st = g->nodes[r].st;
    mma_shape s = gemm_shape(gs, true);
    tex_tensor *rd[MAX_READERS];
    int nrd = readers_of(g, gs->tensor, rd);
    tex_tensor *acc = nrd ? tex_cache_read(g->sch, gs->tensor, TEX_SCOPE_SHARED, nrd, rd) : NULL;
    if (!acc || !shape_intrins(x, &s))
        return nrd ? tex_errcode(x) : texi_error(x, TEX_EINTERNAL, "no reader of the GEMM");
    tex_iter *yi, *xi, *bx, *fu, *o, *l, *wy, *lane;
    TEXI_TRY(block_tiles(g, st, &s, &yi, &xi, &bx));
    TEXI_TRY(tex_fuse(st, yi, xi, &fu));
    TEXI_TRY(tex_split(st, fu, tex_int(x, (int64_t)s.wy * s.wx * WARP), &o, &l));
    TEXI_TRY(tex_split(st, l, tex_int(x, WARP), &wy, &lane));
    TEXI_TRY(tex_bind(st, wy, TEX_THREAD_Y));
    TEXI_TRY(tex_bind(st, lane, TEX_THREAD_X));
    for (int i = r - 1; i >= 0; i--) {
        texi_as_node *mb = &g->nodes[i];
        if (mb->fate != TEXI_AS_ATTACHED || mb->root != r || mb->st == gs)
            continue;
        TEXI_TRY(tex_compute_at(mb->st, st, lane));
        TEXI_TRY(tex_set_scope(mb->st, TEX_SCOPE_LOCAL));
    }
    tex_stage *as = tex_stage_of(g->sch, acc);
    TEXI_TRY(tex_compute_at(as, st, bx));
    return warp_tiles(g, as, as->op->axes[0], as->op->axes[1], gs, &s, ab);
}
