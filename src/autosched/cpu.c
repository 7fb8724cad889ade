/*
 * The kernel level of the automatic scheduler on the CPU: the loops of each
 * kernel that partition.c chose, through the public primitives only.
 *
 *   tiles  (a GEMM-like stage and its epilogue; a lone GEMM-like output gets
 *          a local cache_write as its epilogue): the root's last two dims
 *          tiled MB x NB, a register tile (MB rows of NB / lanes vectors,
 *          the shape of bench/gemm's fastest loop nest); the column panels
 *          outermost when a K x NB panel of the right operand fits in half
 *          of L2 (it is then reused by every row tile) and, for a 2-d root,
 *          there are two panels a thread, else the row tiles;
 *          leading dims and that outer loop fused and parallel; the GEMM
 *          stage computed at the inner tile loop with loop order (other
 *          reduce axes, k / KF, k % KF, rows, columns), k % KF and the rows
 *          unrolled, the columns vectorized; the epilogue's columns
 *          vectorized. With the panels outermost, the right operand is
 *          packed per panel (pack_panel; transposed when stored [N, K]).
 *   tensorized tiles  (the GEMM-like stage fits a CPU GEMM built-in,
 *          tensorize.c): the root's columns split by the built-in's NR and
 *          its rows into strips that fit L1; the GEMM stage computed per
 *          strip in tiles of at most 6 rows (a row of 7 in one, with
 *          AVX-512) that call the built-in (two channel blocks' calls
 *          in a row where their weights fit L1: paired_axis), or once per
 *          panel when the panel's output is small (is_wide: a conv of a
 *          small image, its weights packed per L1-sized depth block)
 *          (schedule_tz_tiles); a lone output of few UPDATEs a tile runs
 *          them in its own memory, without the local copy
 *          (tiles_in_place); a 2-d GEMM of one row tile reads its right
 *          operand in place (no packing);
 *          weights read as they are but too large for L2 hinted one
 *          window position ahead (prefetch_operand).
 *   rows   (row-wise chains): the root's leading dims up to the kernel's
 *          depth (at most all but the last) fused into one parallel row
 *          loop, or for a 1-d root chunks sized to fit L1; every member
 *          computed at it with its own inner loop vectorized; the inputs
 *          read row by row hinted one row ahead (prefetch_next_rows), or
 *          the output when the last pass reads no such input.
 *   alone  an elementwise stage: all dims but the last fused and parallel,
 *          the last vectorized; a reduction: its data-parallel dims fused
 *          and parallel, the reduction vectorized when it runs along memory
 *          (tex_vectorize_reduce, not under -strict-float), else the last
 *          data-parallel dim moved inside the reduction and vectorized
 *          (kept out of the parallel loop when the reduction reads a window
 *          along it, as max pooling does; cut into one chunk a thread when
 *          there are too few rows: column_chunks); an elementwise stage that reads
 *          across its last axis (a transpose) in tiles (schedule_transpose),
 *          a plain f32 one tensorized with the CPU transpose built-in.
 */
#include "autosched/autosched.h"
#include "schedule/intrin.h"

#include <string.h>

enum {
    MAX_LEAVES = 64,
    TILE_ROWS = 6,
    ONE_VECTOR_ROWS = 8,
    MIN_TILE_ROWS = 4,
    SHORT_TAIL = 2,
    K_UNROLL = 4,
    TZ_DEPTH = 256
};

/* Elements of st's dtype in one vector register. */
static int lanes_of(const texi_as_graph *g, const tex_stage *st)
{
    int bytes = texi_dtype_bits(st->tensor->dtype) / 8;
    int lanes = g->mach.vbytes / (bytes > 0 ? bytes : 1);
    return lanes > 0 ? lanes : 1;
}

/* Whether iv's extent is a constant (folded: an output size such as
 * (7 + 2 - 3) / 1 + 1 is one), in *v. */
static bool const_extent(const tex_iter *iv, int64_t *v)
{
    return tex_expr_const_int(iv->extent, v);
}

/* Vectorizes iv of st: directly when its extent is a constant of at most
 * two vectors, not at all when it is 1, else split by two vectors. */
static int vectorize_axis(const texi_as_graph *g, tex_stage *st, tex_iter *iv)
{
    int64_t e;
    int vec = 2 * lanes_of(g, st);
    bool known = const_extent(iv, &e);
    if (known && e < 2)
        return 0;
    if (known && e <= vec)
        return tex_vectorize(st, iv);
    tex_iter *o, *in;
    TEXI_TRY(tex_split(st, iv, tex_int(g->ctx, vec), &o, &in));
    return tex_vectorize(st, in);
}

/* Fuses st's leaves [first, first + n) into one loop (*out); n >= 1. */
static int fuse_range(tex_stage *st, int first, int n, tex_iter **out)
{
    tex_iter *f = tex_stage_axis(st, first);
    for (int k = 1; k < n; k++)
        TEXI_TRY(tex_fuse(st, f, tex_stage_axis(st, first + 1), &f));
    *out = f;
    return 0;
}

/* Fuses st's leaves [0, n) into one loop (*out); n >= 1. */
static int fuse_leading(tex_stage *st, int n, tex_iter **out)
{
    return fuse_range(st, 0, n, out);
}

/* fuse_leading, stopping before the first leaf after the first whose
 * extent is not a constant: the fused loop's index is divided by the
 * extents of the leaves after the first, and a division by a symbolic one
 * keeps bound inference from seeing that a tile lies in one of the outer
 * leaf's iterations (a batched matmul with a symbolic N had run every
 * batch inside its tiles, guarded, at a sixtieth of its speed). Leading
 * leaves of extent 1 do not count as the first: an image batch of 1 was
 * the whole parallel loop of a conv over symbolic rows, on one thread. */
static int fuse_leading_const(tex_stage *st, int n, tex_iter **out)
{
    int k = 1;
    int64_t e;
    while (k < n && const_extent(tex_stage_axis(st, k - 1), &e) && e == 1)
        k++;
    while (k < n && const_extent(tex_stage_axis(st, k), &e))
        k++;
    return fuse_range(st, 0, k, out);
}

/* Reorders st's leaves so that iv comes last; the others keep their order. */
static int move_last(tex_stage *st, tex_iter *iv)
{
    tex_iter *order[MAX_LEAVES];
    int n = tex_stage_naxes(st), m = 0;
    if (n > MAX_LEAVES)
        return 0;
    for (int k = 0; k < n; k++)
        if (tex_stage_axis(st, k) != iv)
            order[m++] = tex_stage_axis(st, k);
    order[m++] = iv;
    return tex_reorder(st, m, order);
}

/* The inner loops of a reduction: the reduction vectorized when its
 * innermost read runs along the last reduce axis, else (or under
 * -strict-float, or for a GEMM-like stage, or a window along the last
 * axis) the last data-parallel axis moved inside and vectorized: its loop
 * `last` (the axis itself, or the inner loop of its chunks when the outer
 * loop split a 1-d stage). */
static int reduce_inner(const texi_as_graph *g, tex_stage *st, tex_iter *last, bool gemm,
                        bool window)
{
    const texi_op *op = st->op;
    tex_iter *inner = texi_as_inner_iter(st);
    tex_iter *last_r = op->raxes[op->n_raxes - 1];
    int64_t e;
    if (!gemm && inner == last_r) {
        if (g->strict_float || (const_extent(last_r, &e) && e < 4))
            return 0;
        return tex_vectorize_reduce(st, last_r);
    }
    if (op->n_axes == 0 || (inner != op->axes[op->n_axes - 1] && !gemm && !window))
        return 0;
    TEXI_TRY(move_last(st, last));
    return vectorize_axis(g, st, last);
}

/* st's last data axis (NULL for a 0-d stage). */
static tex_iter *last_axis(const tex_stage *st)
{
    return st->op->n_axes ? st->op->axes[st->op->n_axes - 1] : NULL;
}

/* The inner loops of a stage computed inside another's loops. A reduction
 * over a window moving one element an output along its last axis (average
 * pooling's sum, stride 1) keeps that axis inside the window's loops,
 * vectorized, when an output row holds a vector: 3x3 pools of 56-pixel
 * rows 3.3x faster; 14-pixel rows (narrower than a vector) 30% slower. */
static int member_inner(const texi_as_graph *g, tex_stage *st, enum texi_as_kind kind)
{
    if (kind == TEXI_AS_INJECTIVE)
        return st->op->n_axes ? vectorize_axis(g, st, st->op->axes[st->op->n_axes - 1]) : 0;
    int64_t w;
    bool window = texi_as_window_along_last(st, true) &&
                  const_extent(st->op->axes[st->op->n_axes - 1], &w) && w >= lanes_of(g, st);
    return reduce_inner(g, st, last_axis(st), kind == TEXI_AS_GEMM, window);
}

/* Computes every member of root r except `skip` at iv of the root's stage. */
static int attach_members(texi_as_graph *g, int r, tex_iter *iv, int skip)
{
    tex_stage *root = g->nodes[r].st;
    for (int i = r - 1; i >= 0; i--) {
        texi_as_node *m = &g->nodes[i];
        if (m->fate != TEXI_AS_ATTACHED || m->root != r || i == skip)
            continue;
        TEXI_TRY(tex_compute_at(m->st, root, iv));
        TEXI_TRY(member_inner(g, m->st, m->kind));
    }
    return 0;
}

/* Elements of the L1 cache a 1-d kernel with n_arrays arrays processes per
 * chunk, and at most a quarter of a thread's share of a constant extent
 * (rounded up to two vectors): a 1-d kernel whose elements are reductions
 * (argmax or a mean over the last axis of 4096 x 1024) had 2 or 3 chunks
 * of L1's size, so one thread computed two thirds of it. */
static int64_t chunk_of(const texi_as_graph *g, const tex_stage *st, int n_arrays)
{
    int64_t bytes = texi_dtype_bits(st->tensor->dtype) / 8;
    int64_t vec = 2 * lanes_of(g, st), n;
    int64_t c = g->mach.l1 / (2 * (bytes > 0 ? bytes : 1) * (n_arrays > 0 ? n_arrays : 1));
    if (const_extent(st->op->axes[0], &n)) {
        int64_t share = (n + 4 * g->mach.threads - 1) / (4 * g->mach.threads);
        share += (vec - share % vec) % vec;
        c = share < c ? share : c;
    }
    c -= c % vec;
    return c > vec ? c : vec;
}

/* The outer loop of a kernel over its data-parallel dims [0, lead): fused
 * and parallel (lead >= 1), or for lead 0 on a 1-d stage chunks of
 * chunk_of (*rest receives the chunk's inner loop). *outer is NULL for a
 * 0-d stage. */
static int outer_loop(texi_as_graph *g, tex_stage *st, int lead, int n_arrays, tex_iter **outer,
                      tex_iter **rest)
{
    *outer = *rest = NULL;
    if (st->op->n_axes == 0)
        return 0;
    if (lead == 0) {
        TEXI_TRY(tex_split(st, st->op->axes[0], tex_int(g->ctx, chunk_of(g, st, n_arrays)), outer,
                           rest));
    } else {
        TEXI_TRY(fuse_leading(st, lead, outer));
    }
    return tex_parallel(st, *outer);
}

/* The innermost leaf of st that is not vectorized. */
static tex_iter *loop_outside_vectors(const tex_stage *st)
{
    for (int k = st->n_leaf - 1; k >= 0; k--)
        if (st->attr[texi_stage_iter_index(st, st->leaf[k])].for_kind != TEXI_FOR_VECTORIZED)
            return st->leaf[k];
    return NULL;
}

/* Hints tensor t, read or written by stage st, one step of st's loop
 * `from` ahead, at st's loop over the row's vectors when that has more than
 * one step and is inside `from`. */
static int hint_next_row(tex_stage *st, tex_tensor *t, tex_iter *from)
{
    tex_iter *at = loop_outside_vectors(st);
    int f = texi_stage_leaf_index(st, from);
    int64_t steps = 2;
    if (at && !(const_extent(at, &steps) && steps < 2) && f >= 0 &&
        texi_stage_leaf_index(st, at) > f)
        return tex_prefetch_at(st, t, at, from, 1);
    return 0;
}

/* Next-row hints of "rows" kernel r (row loop `outer` over its first `lead`
 * dims): each input the chain reads by those dims (a placeholder, or
 * another kernel's output) is hinted one row ahead by its last reader in
 * the chain, when that reader is elementwise, at its loop over the row's
 * vectors when that has more than one step (tex_prefetch_at): the next
 * row streams in while the row's last pass over it computes. The
 * hardware prefetcher stops at every 4 KiB page (a 1024-float row), and a
 * burst of hints at the row's start would wait on the few misses a core
 * keeps in flight; spread so, they took a third off bench/softmax and a
 * tenth off bench/layernorm. When the kernel's own last pass reads no
 * hinted input (softmax's rescaling of its exponentials), it hints its
 * output's next row for writing instead: that row's first pass then
 * stores into lines already owned (4% off bench/softmax). Beside the
 * input hints of the same pass (layernorm's) it was 3% slower. */
static int prefetch_next_rows(texi_as_graph *g, int r, tex_iter *outer, int lead)
{
    if (lead < 1)
        return 0;
    bool root_reads = false; /* an input is hinted in the kernel's last pass */
    for (int p = 0; p < g->n; p++) {
        const texi_as_node *in = &g->nodes[p];
        if (in->st->op->kind != TEXI_OP_PLACEHOLDER && (in->fate != TEXI_AS_ROOT || p == r))
            continue;
        int last = -1;
        for (int i = 0; i <= r; i++) {
            const texi_as_node *m = &g->nodes[i];
            bool member = i == r || (m->fate == TEXI_AS_ATTACHED && m->root == r);
            if (member && texi_op_reads(m->st->op, in->st->tensor))
                last = i;
        }
        if (last < 0 || g->nodes[last].kind != TEXI_AS_INJECTIVE ||
            texi_as_lead_match(g->nodes[last].st, in->st->tensor) < lead)
            continue;
        tex_stage *st = g->nodes[last].st;
        root_reads |= last == r;
        TEXI_TRY(hint_next_row(st, in->st->tensor, last == r ? outer : st->op->axes[lead - 1]));
    }
    return root_reads ? 0 : hint_next_row(g->nodes[r].st, g->nodes[r].st->tensor, outer);
}

/* Whether reduction st's dims before its last have fewer elements than
 * there are threads (a column reduction's one row of outputs), while its
 * last has at least a vector's worth for each thread. */
static bool few_rows(const texi_as_graph *g, const tex_stage *st)
{
    const texi_op *op = st->op;
    int64_t lead = 1, e, cols;
    for (int k = 0; k < op->n_axes - 1; k++) {
        if (!const_extent(op->axes[k], &e) || e >= g->mach.threads)
            return false;
        lead *= e; /* both below the thread count: no overflow */
        if (lead >= g->mach.threads)
            return false;
    }
    return const_extent(op->axes[op->n_axes - 1], &cols) &&
           cols >= 2 * lanes_of(g, st) * g->mach.threads;
}

/* A reduction that reads along its last axis with too few rows to share
 * out (few_rows): the last axis cut into one chunk a thread (vectors of
 * it), the chunks fused with the leading dims into the parallel loop, the
 * reduce loops inside them and the chunk's vectors innermost. Its rows as
 * the parallel loop, a softmax over the columns of 4096 x 1024 reduced
 * each column's max and sum on one thread. */
static int column_chunks(texi_as_graph *g, tex_stage *st, tex_iter **par)
{
    const texi_op *op = st->op;
    int nax = op->n_axes, n = 0;
    int64_t cols = 0, vec = 2 * lanes_of(g, st);
    const_extent(op->axes[nax - 1], &cols);
    int64_t chunk = (cols + g->mach.threads - 1) / g->mach.threads;
    chunk += (vec - chunk % vec) % vec;
    tex_iter *co, *ci, *order[MAX_LEAVES];
    *par = NULL;
    if (nax + op->n_raxes + 1 > MAX_LEAVES)
        return 0;
    TEXI_TRY(tex_split(st, op->axes[nax - 1], tex_int(g->ctx, chunk), &co, &ci));
    for (int k = 0; k < nax - 1; k++)
        order[n++] = op->axes[k];
    order[n++] = co;
    for (int k = 0; k < op->n_raxes; k++)
        order[n++] = op->raxes[k];
    order[n++] = ci;
    TEXI_TRY(tex_reorder(st, n, order));
    TEXI_TRY(fuse_leading(st, nax, par));
    TEXI_TRY(tex_parallel(st, *par));
    return vectorize_axis(g, st, ci);
}

/* "rows": see the file comment. A reduction root along its last axis with
 * too few rows (argmax over axis 0: its max and index passes, one row of
 * outputs) is column_chunks with its members computed per chunk; the rows
 * split by its last axis could not be reordered inside the reduction, and
 * the kernel fell back to the plain schedule (12 ms for argmax over the
 * rows of 4096 x 1024). */
static int schedule_rows(texi_as_graph *g, int r)
{
    texi_as_node *nd = &g->nodes[r];
    tex_stage *st = nd->st;
    int nd_axes = st->op->n_axes;
    int lead = nd->depth < nd_axes - 1 ? nd->depth : nd_axes - 1;
    tex_iter *outer, *rest;
    if (nd->kind == TEXI_AS_REDUCE && nd_axes > 0 &&
        texi_as_inner_iter(st) == st->op->axes[nd_axes - 1] && few_rows(g, st)) {
        TEXI_TRY(column_chunks(g, st, &outer));
        return outer ? attach_members(g, r, outer, -1) : 0;
    }
    TEXI_TRY(outer_loop(g, st, lead > 0 ? lead : 0, nd->n_memb + 1, &outer, &rest));
    if (!outer)
        return 0;
    TEXI_TRY(attach_members(g, r, outer, -1));
    tex_iter *last = nd_axes > 1 ? st->op->axes[nd_axes - 1] : rest;
    if (nd->kind != TEXI_AS_INJECTIVE)
        return reduce_inner(g, st, last, nd->kind == TEXI_AS_GEMM, false);
    TEXI_TRY(vectorize_axis(g, st, last));
    return prefetch_next_rows(g, r, outer, lead);
}

/* The constant K x NB panel size in bytes of GEMM stage gs, or -1 if symbolic. */
static int64_t panel_bytes(const tex_stage *gs, int nb)
{
    int64_t k = 1, e;
    for (int i = 0; i < gs->op->n_raxes; i++) {
        if (!const_extent(gs->op->raxes[i], &e))
            return -1;
        k *= e;
    }
    return k * nb * (texi_dtype_bits(gs->tensor->dtype) / 8);
}

/* The data axis of GEMM-like stage gs whose register tile's rows share one
 * load of each vector: the innermost one but the columns (its last) that
 * the read along the columns does not use and the other read does (the
 * rows of a matmul; a conv's pixels along x in NHWC, its filters in NCHW,
 * where the pixels' rows would each load their own input vectors: the
 * NCHW 64-channel 56 x 56 conv ran twice as fast on filter rows). The
 * second-to-last axis when the body is not a product of two reads or no
 * axis qualifies. */
static int tile_row_axis(const tex_stage *gs)
{
    const texi_op *op = gs->op;
    int nax = op->n_axes;
    const tex_expr *vec, *other;
    if (nax < 2 || !texi_as_product_reads(op, &vec, &other))
        return nax - 2;
    for (int a = nax - 2; a >= 0; a--)
        if (!texi_as_access_uses(vec, op->axes[a]) && texi_as_access_uses(other, op->axes[a]))
            return a;
    return nax - 2;
}

/* The GEMM stage's loops inside its tile (file comment): its row axis ra
 * (tile_row_axis) unrolled, its columns vectorized. gs is computed in
 * the tile (a member or a local cache of the root): when its columns are
 * not whole vectors, its rows are padded to whole vectors
 * (tex_storage_align), so that each row's last, partial vector is a slot
 * of its own that the C compiler keeps in a register (the printer widens
 * a private buffer's masked accesses, see docs/passes.md): an NCHW conv's
 * 14-pixel rows had gone through memory at every step. */
static int gemm_tile_inner(texi_as_graph *g, tex_stage *gs, int ra)
{
    const texi_op *op = gs->op;
    tex_iter *order[MAX_LEAVES];
    int n = 0, nax = op->n_axes;
    if (nax + op->n_raxes + 1 > MAX_LEAVES)
        return 0;
    for (int k = 0; k < nax - 1; k++)
        if (k != ra)
            order[n++] = op->axes[k];
    for (int k = 0; k < op->n_raxes - 1; k++)
        order[n++] = op->raxes[k];
    tex_iter *kr = op->raxes[op->n_raxes - 1], *ko = NULL, *ki = NULL;
    int64_t e;
    if (!const_extent(kr, &e) || e >= 2 * K_UNROLL) {
        TEXI_TRY(tex_split(gs, kr, tex_int(g->ctx, K_UNROLL), &ko, &ki));
        order[n++] = ko;
        order[n++] = ki;
    } else {
        order[n++] = kr;
    }
    tex_iter *mc = op->axes[ra], *nc = op->axes[nax - 1];
    order[n++] = mc;
    order[n++] = nc;
    TEXI_TRY(tex_reorder(gs, n, order));
    if (ki)
        TEXI_TRY(tex_unroll(gs, ki));
    TEXI_TRY(tex_unroll(gs, mc));
    int64_t cols = 0;
    int lanes = lanes_of(g, gs);
    if (const_extent(nc, &cols) && cols % lanes != 0)
        TEXI_TRY(tex_storage_align(gs, mc, lanes, 0));
    return tex_vectorize(gs, nc);
}

/* Packing: the right operand of GEMM stage gs copied per column panel into a
 * contiguous K x NB buffer (cache_read, computed at loop `panel` of stage
 * `root`: the root's panel loop, or a wide tensorized panel's depth-block
 * loop of gs itself; with `panel` NULL, all panels once, a kernel of its
 * own with a parallel loop), so that the tiles of the panel read it with unit
 * stride instead of one cache line per row of the operand. Left alone when
 * that operand is inlined (there is no buffer to copy from). An operand
 * stored [N, K] (a transposed B, a dense layer's weights) is transposed as
 * it is packed: the copy's column dim goes last in its storage and its
 * loops, vectorized there (its reads gather along K, each row's cache
 * line reused over the next steps). Packed as stored, the tiles gathered
 * a vector from 16 rows of it at every step: a 1024^3 A . B^T ran at a
 * twentieth of A . B's speed. */
static int pack_panel(texi_as_graph *g, tex_stage *gs, tex_stage *root, tex_iter *panel)
{
    tex_tensor *b = texi_as_panel_operand(gs);
    tex_stage *sb = b ? texi_schedule_find_stage(g->sch, b) : NULL;
    if (!sb || sb->attach == TEXI_ATTACH_INLINE)
        return 0;
    int col = texi_as_panel_dim(gs);
    tex_tensor *packed =
        tex_cache_read(g->sch, b, panel ? TEX_SCOPE_LOCAL : TEX_SCOPE_GLOBAL, 1, &gs->tensor);
    if (!packed)
        return tex_errcode(g->ctx);
    tex_stage *sp = tex_stage_of(g->sch, packed);
    if (panel)
        TEXI_TRY(tex_compute_at(sp, root, panel));
    int nd = tex_stage_naxes(sp);
    tex_iter *order[MAX_LEAVES];
    int n = 0;
    if (nd > MAX_LEAVES)
        return 0;
    for (int d = 0; d < nd; d++)
        if (d != col)
            order[n++] = tex_op_axis(sp, d);
    if (col >= 0 && col < nd)
        order[n++] = tex_op_axis(sp, col);
    if (col >= 0 && col < nd - 1) {
        TEXI_TRY(tex_reorder_storage(sp, n, order));
        TEXI_TRY(tex_reorder(sp, n, order));
    }
    if (!panel && nd > 1) { /* a kernel of its own: its leading loops shared out */
        tex_iter *par;
        TEXI_TRY(fuse_leading_const(sp, nd - 1, &par));
        TEXI_TRY(tex_parallel(sp, par));
    }
    return vectorize_axis(g, sp, order[n - 1]);
}

/* Whether a leading axis of the root (not the tile's rows or columns) with
 * more than one iteration does not pick GEMM stage gs's panel: the parallel
 * loop over the leading axes and the panels would pack the same panel once
 * per index of that axis (an NHWC conv's output rows: its whole weights
 * once a row). */
static bool panel_shared_by_rows(const tex_stage *st, const tex_stage *gs, int ra)
{
    int nax = st->op->n_axes;
    int64_t e;
    for (int a = 0; a < nax - 1 && gs->op->n_axes == nax; a++)
        if (a != ra && !(const_extent(st->op->axes[a], &e) && e == 1) &&
            (a >= nax - 2 || !texi_as_panel_axis(gs, a)))
            return true;
    return false;
}

/* The rows of the register tiles of GEMM-like stage gs (row axis ra):
 * TILE_ROWS, or ONE_VECTOR_ROWS when its columns fit one
 * vector, which a tile of TILE_ROWS rows leaves with too few accumulators
 * to cover the FMAs' latency. Measured on NCHW convs (2 threads): rows of
 * 14 pixels ran 2.1x faster in tiles of 8 filters than of 6, 7 pixels
 * 1.4x; 12 and 16 rows ran slower than 8, and rows of two vectors (28
 * pixels) slower in 8 than in 6. */
static int64_t tile_rows_for(const texi_as_graph *g, const tex_stage *gs, int ra)
{
    int64_t cols = 0, rows = 0;
    if (!const_extent(gs->op->axes[gs->op->n_axes - 1], &cols) || cols <= 0 ||
        cols > lanes_of(g, gs) || !const_extent(gs->op->axes[ra], &rows) || rows < ONE_VECTOR_ROWS)
        return TILE_ROWS;
    return ONE_VECTOR_ROWS;
}

/* "tiles": root r with GEMM-like stage gs (its member, or its own local cache). */
static int schedule_tiles(texi_as_graph *g, int r, tex_stage *gs, int gemm_node)
{
    tex_stage *st = g->nodes[r].st;
    const texi_op *op = st->op;
    int nax = op->n_axes;
    int nb = (g->mach.vbytes >= 64 ? 4 : 2) * lanes_of(g, gs);
    int ra = gs->op->n_axes == nax ? tile_row_axis(gs) : nax - 2;
    int64_t rows = gs->op->n_axes == nax ? tile_rows_for(g, gs, ra) : TILE_ROWS;
    tex_iter *mo, *no, *mi, *ni, *order[MAX_LEAVES];
    if (nax + op->n_raxes + 2 > MAX_LEAVES)
        return 0;
    TEXI_TRY(tex_tile(st, op->axes[ra], op->axes[nax - 1], tex_int(g->ctx, rows),
                      tex_int(g->ctx, nb), &mo, &no, &mi, &ni));
    int64_t pb = panel_bytes(gs, nb), cols = 0;
    /* a 2-d root's outer loop is its parallel loop: panels outermost only
     * when there are at least two a thread */
    bool enough = nax > 2 || !const_extent(op->axes[nax - 1], &cols) ||
                  (cols + nb - 1) / nb >= 2 * (int64_t)g->mach.threads;
    bool rows_last = ra == nax - 2;
    bool panel_outer = pb >= 0 && pb <= g->mach.l2 / 2 && enough && rows_last;
    int n = 0;
    /* rows on another axis than the second-to-last (an NCHW conv's
     * filters): their tile loop stays where that axis is, so that the tile
     * of the operand they pick (a block of filters' weights) serves the
     * axes after it (all the output rows) */
    for (int k = 0; k < nax - 1; k++) {
        if (k != ra)
            order[n++] = op->axes[k];
        else if (!rows_last)
            order[n++] = mo;
    }
    if (rows_last)
        order[n++] = panel_outer ? no : mo;
    order[n++] = panel_outer ? mo : no;
    order[n++] = mi;
    order[n++] = ni;
    for (int k = 0; k < op->n_raxes; k++)
        order[n++] = op->raxes[k];
    TEXI_TRY(tex_reorder(st, n, order));
    tex_iter *par;
    TEXI_TRY(fuse_leading_const(st, nax - 1, &par));
    TEXI_TRY(tex_parallel(st, par));
    tex_iter *tile = panel_outer ? mo : no;
    TEXI_TRY(tex_compute_at(gs, st, tile));
    if (panel_outer)
        TEXI_TRY(pack_panel(g, gs, st, panel_shared_by_rows(st, gs, ra) ? NULL : par));
    TEXI_TRY(gemm_tile_inner(g, gs, gs->op->n_axes == nax ? ra : gs->op->n_axes - 2));
    TEXI_TRY(attach_members(g, r, tile, gemm_node));
    return op->n_raxes ? 0 : tex_vectorize(st, ni);
}

/* The depth of one UPDATE of the tensorized GEMM stage (tz_strip_inner)
 * for a reduction of extent k: k in as few blocks as keep a depth x NR
 * block of the packed operand (f32) within `share` bytes of L1, as equal as
 * a multiple of 16 allows, so that every row tile reads the block from L1
 * (a tile of a row's last pixels has too few FMAs per loaded vector to
 * stream it from L2). A wide panel gives the block a third of L1 (the rest
 * holds the input rows and the accumulators of the panel's many tiles: with
 * two thirds, the 512-channel 7 x 7 conv ran 5% slower), a strip two thirds
 * (the 1 x 1 conv, K = 256, ran 3-6% faster at depth 128 than at 256, whose
 * 64 KiB block spilled out of a 48 KiB L1). */
static int64_t l1_depth(const texi_as_graph *g, int64_t k, int64_t share)
{
    int64_t most = share / (g->tz_nr * 4);
    most = most > 16 ? most - most % 16 : 16;
    int64_t blocks = (k + most - 1) / most, d = (k + blocks - 1) / blocks;
    d += (16 - d % 16) % 16;
    return d < k ? d : k;
}

/* The rows of the built-in's tiles over `rows` rows (a conv's output row):
 * one tile when the built-in's instances take that many rows (AVX-512: a
 * 7-pixel row as one 7-row tile ran 4-6% faster than as 4 + 3 in the
 * 512-channel 7 x 7 conv), else the fewest tiles of at most 6 rows, as even
 * as one split factor makes them (13 rows are 5 + 5 + 3, not 6 + 6 + 1,
 * whose one-row tile's four FMA chains would wait on their latency). When
 * that leaves a last tile of at most SHORT_TAIL rows, the largest factor of
 * at least MIN_TILE_ROWS that does not is taken: 56 pixels are 14 tiles of
 * 4, not 9 of 6 and one of 2, whose tile took 4.5% of the 1 x 1 conv's time
 * for 3.6% of its work (the 64-channel 3 x 3 and the 1 x 1 convs ran 1.5-2.5%
 * faster). 7-row tiles of longer rows measured no better (14 and 28 pixels,
 * 3 x 3) or 3-4% slower (56 pixels, the 1 x 1 conv, which streams its
 * input): their 28 accumulators leave no register for the broadcast, so one
 * of them lives in L1. */
static int64_t tile_rows(const texi_as_graph *g, int64_t rows)
{
    if (rows <= 0)
        return TILE_ROWS;
    if (rows <= texi_intrin_cpu_max_rows(g->tz_builtin))
        return rows;
    int64_t tiles = (rows + TILE_ROWS - 1) / TILE_ROWS, even = (rows + tiles - 1) / tiles;
    for (int64_t f = even; f >= MIN_TILE_ROWS; f--)
        if (rows % f == 0 || rows % f > SHORT_TAIL)
            return f;
    return even;
}

/* The reduce axis of tensorized GEMM stage gs other than its depth k whose
 * iterations tz_strip_inner runs in pairs around each row tile, or NULL:
 * the first of constant, even extent, when two depth blocks of kc x NR f32
 * fit in `share` (what l1_depth gives one block: two thirds of L1, a third
 * when wide). The two UPDATEs of a tile then follow each other, and the C
 * compiler, which inlines the built-in, keeps the tile's accumulators in
 * registers across both: one load and store of the tile per 2 kc steps.
 * The blocked 1 x 1 conv of bench/conv2d (4 channel blocks of 64) ran 2%
 * faster paired on its generated C, 1% against oneDNN; four blocks at a
 * time (64 KiB of weights, past L1) 1-2.5% slower than none; pairs in a
 * wide panel made the 512-channel 7 x 7 conv 3-10% slower. */
static tex_iter *paired_axis(const texi_as_graph *g, const tex_stage *gs, const tex_iter *k,
                             int64_t kc, int64_t share)
{
    const texi_op *op = gs->op;
    int64_t e;
    if (2 * kc * g->tz_nr * 4 > share)
        return NULL;
    for (int r = 0; r < op->n_raxes; r++)
        if (op->raxes[r] != k && const_extent(op->raxes[r], &e) && e >= 2 && e % 2 == 0)
            return op->raxes[r];
    return NULL;
}

/* The tensorized GEMM stage's loops inside its row strip: (lead, other
 * reduce axes, k / KC, rows / MR, pair, rows % MR, k % KC, columns), MR
 * the tile_rows of the rows, the rows % MR tensorized with the built-in: the strip's tiles RESET
 * first, then one UPDATE per tile and iteration of the loops outside the row tiles (a conv's window
 * positions, the depth blocks), so that each block of the right operand is reused by every tile of
 * the strip. KC = l1_depth (the depth of a block within two thirds of L1, a third when wide); the
 * last partial k tile and the strip's last partial row tile run built-in instances of smaller depth
 * or fewer rows; pair is the inner 2 of paired_axis, unrolled; the columns are vectorized for the
 * edge tiles that run the ordinary nest. The k
 * split is there even when KC = K, so that tex_tune (which mutates the split factors of the
 * schedule's trace) can block the depth. `lead` are gs's data loops outside its rows m and columns
 * c: its leading axes, or, when gs is the root itself (schedule_tz_tiles), the root's loops around
 * the strip. With `wide` the stage covers the whole panel: the leading axes move inside k / KC,
 * so each block of the operand stays in L1 while all of the panel's row tiles use it. *kblock
 * receives the k / KC loop, *tile the tensorized one, *pair the pair loop (NULL when there is
 * none). */
static int tz_strip_inner(texi_as_graph *g, tex_stage *gs, bool wide, int n_lead,
                          tex_iter *const lead[], tex_iter *m, tex_iter *c, tex_iter **kblock,
                          tex_iter **tile, tex_iter **pair)
{
    const texi_op *op = gs->op;
    tex_iter *order[MAX_LEAVES], *k, *ko, *ki, *mo, *mi, *po = NULL;
    const char *name;
    int64_t nr, e = 0;
    int n = 0;
    if (texi_as_tensorize_fit(g, gs, &k, &name, &nr) || n_lead + op->n_raxes + 6 > MAX_LEAVES)
        return texi_error(g->ctx, TEX_EINTERNAL, "tex_auto_schedule: stage '%s' no longer fits %s",
                          gs->tensor->name, g->tz_builtin);
    int64_t rows = 0;
    const_extent(m, &rows);
    TEXI_TRY(tex_split(gs, m, tex_int(g->ctx, tile_rows(g, rows)), &mo, &mi));
    const_extent(k, &e);
    int64_t share = (wide ? 1 : 2) * g->mach.l1 / 3;
    int64_t kc = e <= 0 ? TZ_DEPTH : l1_depth(g, e, share);
    tex_iter *paired = paired_axis(g, gs, k, kc, share);
    *pair = NULL;
    if (paired)
        TEXI_TRY(tex_split(gs, paired, tex_int(g->ctx, 2), &po, pair));
    for (int a = 0; a < n_lead && !wide; a++)
        order[n++] = lead[a];
    for (int r = 0; r < op->n_raxes; r++)
        if (op->raxes[r] != k)
            order[n++] = op->raxes[r] == paired ? po : op->raxes[r];
    TEXI_TRY(tex_split(gs, k, tex_int(g->ctx, kc), &ko, &ki));
    *kblock = ko;
    *tile = mi;
    order[n++] = ko;
    for (int a = 0; a < n_lead && wide; a++)
        order[n++] = lead[a];
    order[n++] = mo;
    if (*pair)
        order[n++] = *pair;
    order[n++] = mi;
    order[n++] = ki;
    order[n++] = c;
    TEXI_TRY(tex_reorder(gs, n, order));
    TEXI_TRY(tex_vectorize(gs, c));
    if (*pair)
        TEXI_TRY(tex_unroll(gs, *pair));
    tex_intrin *in = tex_intrin_builtin(g->ctx, name);
    return in ? tex_tensorize(gs, mi, in) : tex_errcode(g->ctx);
}

/* The rows of a strip: all of them when a rows x NR strip of the output
 * fits in half of L1 (a conv's output row), else the most multiple of 6
 * rows that does. */
static int64_t strip_rows(const texi_as_graph *g, const tex_stage *st)
{
    int64_t rows = 0, bytes = texi_dtype_bits(st->tensor->dtype) / 8;
    int64_t fit = g->mach.l1 / 2 / (g->tz_nr * (bytes > 0 ? bytes : 1));
    const_extent(st->op->axes[st->op->n_axes - 2], &rows);
    if (rows <= fit)
        return rows;
    fit -= fit % TILE_ROWS;
    return fit > TILE_ROWS ? fit : TILE_ROWS;
}

/* Whether tensorized GEMM stage gs computes a whole column panel at once
 * (tz_strip_inner's `wide`): it has leading dims that do not pick the panel
 * (texi_as_panel_axis: one panel of its operand serves them all, as a
 * conv's weights serve every output row) and the panel's output, each of
 * those leading indices and row by NR f32 columns, fits in an eighth of L2
 * (a conv's output of 7 x 7 to 28 x 28 pixels). Each depth block of the
 * panel is then reused by all of the panel's row tiles instead of the few
 * of one output row. */
static bool is_wide(const texi_as_graph *g, const tex_stage *gs)
{
    const texi_op *op = gs->op;
    int64_t bytes = g->tz_nr * 4, e;
    int shared = 0;
    if (!texi_as_panel_operand(gs))
        return false;
    for (int a = 0; a < op->n_axes - 1; a++) {
        if (a < op->n_axes - 2 && texi_as_panel_axis(gs, a))
            continue;
        shared += a < op->n_axes - 2;
        if (!const_extent(op->axes[a], &e) || e > g->mach.l2)
            return false;
        bytes *= e;
        if (bytes > g->mach.l2 / 8)
            return false;
    }
    return shared > 0;
}

/* Root st's leading axes (all but its last two) in loop order into ax:
 * first those that pick GEMM stage gs's panel (texi_as_panel_axis; gs and
 * st of the same rank), then the others. The count of the first, and the
 * product of their constant extents in *ext (0 when one is not constant). */
static int panel_axes(const tex_stage *st, const tex_stage *gs, tex_iter **ax, int64_t *ext)
{
    int np = 0, n_other = 0, nax = st->op->n_axes;
    tex_iter *other[MAX_LEAVES];
    int64_t e = 0;
    *ext = 1;
    for (int a = 0; a < nax - 2; a++) {
        if (gs->op->n_axes != nax || !texi_as_panel_axis(gs, a)) {
            other[n_other++] = st->op->axes[a];
            continue;
        }
        ax[np++] = st->op->axes[a];
        *ext = const_extent(st->op->axes[a], &e) ? *ext * e : 0;
    }
    memcpy(ax + np, other, sizeof *other * (size_t)n_other);
    return np;
}

/* Whether leaf iv is one of the reduce loops outside the row tiles (a
 * reduce axis or a part of one, not the pair loop between the tiles). */
static bool is_reduce_leaf(const tex_iter *iv, const tex_iter *pair)
{
    return iv->kind == TEXI_ITER_REDUCE && iv != pair;
}

/* Whether leaf iv of st has one iteration where st is computed (its
 * inferred range: texi_infer_bounds first), so no loop of its own. */
static bool one_step(const tex_stage *st, const tex_iter *iv)
{
    int64_t e = 0;
    return tex_expr_const_int(st->range[texi_stage_iter_index(st, iv)].extent, &e) && e <= 1;
}

/* Bytes of tensor t, 0 when a dim is not constant. */
static int64_t tensor_bytes(const tex_tensor *t)
{
    int64_t bytes = texi_dtype_bits(t->dtype) / 8, e;
    for (int d = 0; d < t->ndim; d++)
        bytes = tex_expr_const_int(t->shape[d], &e) ? bytes * e : 0;
    return bytes;
}

/* Hints of tensorized GEMM stage gs's right operand, read as it is or
 * packed per depth block inside gs (a wide panel), when it is an input too
 * large to stay in the threads' L2 caches
 * from one call to the next (the 9.4 MB of a 512-channel 3 x 3 conv's
 * weights, read once per call): the block of it that the next step of the
 * reduce loops outside the row tiles reads (the depth blocks when they
 * step, else the window positions, fused into one loop so that the step
 * after a row's last position is the next row's first) is asked for over
 * the first loop inside them that steps (tex_prefetch_at, which shares the
 * block's lines out over that loop's steps: the rows of a wide panel, the
 * row tiles; tz_strip_inner's pair loop is one of the loops inside), so
 * the next block streams in while this one's tiles compute instead of each
 * tile waiting on memory. On the 512-channel 7 x 7 conv, alternated in one
 * process with another copy of its weights (as bench/conv2d alternates tex
 * and oneDNN): 0.77x the time on one thread, 0.81-0.87x on two (the hints
 * all at the loop's start: 0.88x); on the 128-channel conv, whose weights
 * stay in L2, hints cost 3-6%. Packed, the hints are of the input itself
 * (gs reads only the copy): what the next block's copy will read. On the
 * NHWC 512-channel 7 x 7 conv against oneDNN: 0.92-0.94 -> 1.03-1.1 on one
 * thread, 0.81 -> 0.87 on two. */
static int prefetch_operand(texi_as_graph *g, tex_stage *gs, const tex_iter *kb,
                            const tex_iter *tile, const tex_iter *pair)
{
    tex_tensor *b = texi_as_panel_operand(gs), *packed_from = b ? texi_copy_source(b) : NULL;
    b = packed_from ? packed_from : b;
    if (!b || b->op->kind != TEXI_OP_PLACEHOLDER ||
        tensor_bytes(b) <= (int64_t)g->mach.threads * g->mach.l2)
        return 0;
    TEXI_TRY(texi_infer_bounds(g->sch)); /* the leaves' extents where gs is computed */
    /* at: the outermost loop that steps between the reduce loops and the tile */
    int from = texi_stage_leaf_index(gs, tile) - 1, at = -1;
    for (; from >= 0 && !is_reduce_leaf(gs->leaf[from], pair); from--)
        at = one_step(gs, gs->leaf[from]) ? at : from;
    /* from: the depth blocks when they step, else the window loops [first, from] */
    if (from >= 0 && gs->leaf[from] == kb && one_step(gs, kb))
        from--;
    if (from < 0 || !is_reduce_leaf(gs->leaf[from], pair))
        return 0;
    int first = from;
    while (gs->leaf[from] != kb && first > 0 && is_reduce_leaf(gs->leaf[first - 1], pair))
        first--;
    bool steps = false;
    for (int k = first; k <= from; k++)
        steps |= !one_step(gs, gs->leaf[k]);
    if (!steps)
        return 0;
    tex_iter *at_iv = at >= 0 ? gs->leaf[at] : NULL, *from_iv = gs->leaf[from];
    if (from > first)
        TEXI_TRY(fuse_range(gs, first, from - first + 1, &from_iv));
    return tex_prefetch_at(gs, b, at_iv ? at_iv : from_iv, from_iv, 1);
}

/* Whether the parallel loop of a root's tensorized tiles is its column
 * panels alone (with the leading dims that pick them: `picks` of them per
 * panel, of `cols` columns): at least two panels a thread. */
static bool panels_alone(const texi_as_graph *g, int64_t cols, int64_t picks)
{
    int64_t panels = (cols + g->tz_nr - 1) / g->tz_nr * picks;
    return panels >= 2 * (int64_t)g->mach.threads;
}

/* "tiles" on the CPU GEMM built-in: the root's columns split by NR (the
 * built-in's tile) and its rows into strips (strip_rows), loop order
 * (column panels, the leading dims that pick the panel (panel_axes: a
 * blocked conv's filter block), the other leading dims, row strips, rows,
 * columns); the panels (the column panels and those leading dims, fused)
 * parallel when there are at least two per thread, else serial around the
 * leading dims fused and parallel, so that each panel is still packed
 * once, not once per leading index, or, for a 2-d root (no leading dims),
 * fused with the strips into the parallel loop;
 * the right operand packed per panel when it has more columns than one
 * panel (with exactly NR its rows already are the packed panel: the copy
 * would only cost time); the GEMM stage computed per strip, or with a
 * parallel panel loop and a small output per panel once per panel
 * (is_wide, and then packed per depth block, just before the tiles read
 * the block from L1: the copy's loads from memory then alternate with the
 * tiles' FMAs instead of running as one phase), and tensorized
 * (tz_strip_inner), so the built-in handles the strip's last rows; the
 * epilogue computed per strip, while the strip is in L1. With gs the root
 * itself (tiles_in_place), there are no strips: the root's rows are
 * tensorized in its own loop nest, inside the panels. */
static int schedule_tz_tiles(texi_as_graph *g, int r, tex_stage *gs, int gemm_node)
{
    tex_stage *st = g->nodes[r].st;
    const texi_op *op = st->op;
    int nax = op->n_axes, n = 0;
    tex_iter *mo, *mi, *no, *ni, *order[MAX_LEAVES];
    if (nax + op->n_raxes + 2 > MAX_LEAVES)
        return 0;
    int64_t cols = 0, picks = 1;
    int np = panel_axes(st, gs, order + 1, &picks);
    bool in_place = gs == st; /* tiles_in_place: one strip of all the rows */
    TEXI_TRY(tex_split(st, op->axes[nax - 1], tex_int(g->ctx, g->tz_nr), &no, &ni));
    mo = NULL;
    mi = op->axes[nax - 2];
    if (!in_place)
        TEXI_TRY(tex_split(st, mi, tex_int(g->ctx, strip_rows(g, st)), &mo, &mi));
    order[n++] = no;
    n += nax - 2;
    if (mo)
        order[n++] = mo;
    order[n++] = mi;
    order[n++] = ni;
    for (int k = 0; k < op->n_raxes; k++)
        order[n++] = op->raxes[k];
    TEXI_TRY(tex_reorder(st, n, order));
    const_extent(op->axes[nax - 1], &cols);
    bool alone = panels_alone(g, cols, picks);
    tex_iter *par = no, *panel = no, *strip = mo;
    if (alone && np) {
        TEXI_TRY(fuse_range(st, 0, 1 + np, &par));
        panel = par;
    } else if (!alone && nax > 2) {
        TEXI_TRY(fuse_range(st, 1, nax - 2, &par));
    } else if (!alone && mo) { /* 2-d: the few panels and their strips, together */
        TEXI_TRY(fuse_range(st, 0, 2, &par));
        panel = strip = par;
    }
    TEXI_TRY(tex_parallel(st, par));
    bool wide = !in_place && alone && is_wide(g, gs);
    tex_iter *kb = NULL, *tile = NULL, *pair = NULL;
    if (in_place) { /* the loops around the strip stay outermost (a copy: splits move leaves) */
        int n_lead = texi_stage_leaf_index(st, mi);
        memcpy(order, st->leaf, sizeof *order * (size_t)n_lead);
        TEXI_TRY(tz_strip_inner(g, st, false, n_lead, order, mi, ni, &kb, &tile, &pair));
    } else {
        TEXI_TRY(tex_compute_at(gs, st, wide ? par : strip));
        TEXI_TRY(tz_strip_inner(g, gs, wide, nax - 2, gs->op->axes, gs->op->axes[nax - 2],
                                gs->op->axes[nax - 1], &kb, &tile, &pair));
    }
    /* a 2-d GEMM of one row tile (a matrix-vector product, batch 1) reads
     * each element of the panel once: its copy would only double the
     * traffic (1 x 4096 x 4096: 1.1-1.5x faster read in place) */
    int64_t rows = 0;
    bool once = nax == 2 && const_extent(op->axes[0], &rows) &&
                rows <= texi_intrin_cpu_max_rows(g->tz_builtin);
    bool pack = cols > g->tz_nr && !once;
    if (pack)
        TEXI_TRY(wide ? pack_panel(g, gs, gs, kb) : pack_panel(g, gs, st, panel));
    if (!pack || wide)
        TEXI_TRY(prefetch_operand(g, gs, kb, tile, pair));
    TEXI_TRY(attach_members(g, r, strip ? strip : par, gemm_node));
    return op->n_raxes ? 0 : vectorize_axis(g, st, ni);
}

/* "tiles", tensorized when the GEMM-like node fits the built-in. */
static int schedule_gemm_tiles(texi_as_graph *g, int r, tex_stage *gs, int gemm_node)
{
    return g->nodes[gemm_node].tz_why ? schedule_tiles(g, r, gs, gemm_node)
                                      : schedule_tz_tiles(g, r, gs, gemm_node);
}

/* Whether lone GEMM-like root r runs the built-in's tiles in its own
 * memory, with no local cache_write and copy-out: it is tensorized, has
 * exactly NR columns (its rows of NR are then contiguous, as in the local
 * tile: rows of a wider output, a row stride of 4 KiB and more, fall on
 * the same few sets of L1), all its rows make one strip (constant, and
 * the row tiles split the row axis itself, so that the last partial tile
 * runs the built-in's fewer-row instance), and its whole reduction is at
 * most TZ_DEPTH deep: a tile takes few UPDATEs, and the copy-out is a
 * large part of its traffic; and it is not a wide panel (whose tiles
 * share L1 with the depth blocks of all of the panel). On the generated C
 * of bench/conv2d, the blocked 1 x 1 conv (256 channels) ran 1.1-1.5%
 * faster in place; the 3 x 3 convs, with 9 or 18 UPDATEs a tile, as fast
 * (64 channels) or 1.1% slower (128). */
static bool tiles_in_place(const texi_as_graph *g, int r)
{
    tex_stage *st = g->nodes[r].st;
    const texi_op *op = st->op;
    int64_t cols = 0, rows = 0, depth = 1, e;
    for (int k = 0; k < op->n_raxes; k++)
        depth = const_extent(op->raxes[k], &e) ? depth * e : TZ_DEPTH + 1;
    if (g->nodes[r].tz_why || !const_extent(op->axes[op->n_axes - 1], &cols) || cols != g->tz_nr ||
        !const_extent(op->axes[op->n_axes - 2], &rows) || strip_rows(g, st) < rows ||
        depth > TZ_DEPTH)
        return false;
    tex_iter *ax[MAX_LEAVES];
    int64_t picks = 1;
    panel_axes(st, st, ax, &picks);
    return !(panels_alone(g, cols, picks) && is_wide(g, st));
}

/* The CPU transpose built-in that tiles st (its side in *side), or NULL:
 * a copy in f32 (the body one read of a tensor that is a buffer: an input
 * or a kernel's output) whose two tiled axes are not constants below the
 * built-in's side, on a host with AVX2 or AVX-512, not -no-tensorize. Of
 * symbolic sizes, the whole tiles call it and the partial ones run the
 * loops (tensorize's fallback): 2048 x 1024, one thread, 5.2 -> 0.54 ms. */
static const char *transpose_builtin(const texi_as_graph *g, const tex_stage *st,
                                     const tex_iter *across, int64_t *side)
{
    const texi_op *op = st->op;
    const tex_expr *body = op->body;
    const char *name = g->mach.vbytes >= 64   ? "cpu.transpose_f32_avx512"
                       : g->mach.vbytes >= 32 ? "cpu.transpose_f32_avx2"
                                              : NULL;
    if (!name || g->no_tensorize || st->tensor->dtype != TEX_F32 || body->kind != TEXI_EXPR_ACCESS)
        return NULL;
    const tex_stage *src = tex_stage_of(g->sch, body->u.access.tensor);
    int i = src ? texi_schedule_stage_index(g->sch, src) : -1;
    if (i < 0 || (g->nodes[i].fate != TEXI_AS_NONE && g->nodes[i].fate != TEXI_AS_ROOT))
        return NULL;
    int64_t a, b;
    *side = texi_intrin_cpu_transpose_side(name);
    bool short_a = const_extent(across, &a) && a < *side;
    return short_a || (const_extent(op->axes[op->n_axes - 1], &b) && b < *side) ? NULL : name;
}

/* A lone elementwise stage that reads along its axis `across` rather than
 * its last (a transpose, texi_as_transposed_axis): tiles of 32 bytes of
 * elements along `across` by two vectors along the last axis, the tile
 * loops last among the stage's loops and fused with them into the
 * parallel loop, the tile's columns vectorized. Each vector gathers from
 * 2 x lanes rows of the input, whose cache lines the tile's other rows
 * then read on; row by row, a 4096 x 1024 f32 transpose read one element
 * per line, on lines 4 KiB apart that share a few cache sets, and ran at
 * 2 GB/s: tiled, 6x faster (64 x 256 x 256 swapping its last two dims, 5x).
 * Tiles of a whole line (16 f32) by two vectors, or by one, or of two
 * lines by one vector, measured 10-60% slower on some of 4096 x 1024,
 * 1024 x 4096, 1000 x 3000 and that 3-d swap. A plain transpose the CPU
 * transpose built-in fits (transpose_builtin) has square tiles of its side
 * instead, tensorized: 3.4x faster on 4096 x 1024 (one thread). */
static int schedule_transpose(texi_as_graph *g, tex_stage *st, tex_iter *across)
{
    const texi_op *op = st->op;
    int nax = op->n_axes, n = 0;
    int64_t bytes = texi_dtype_bits(st->tensor->dtype) / 8;
    int64_t rows = 32 / (bytes > 0 && bytes <= 32 ? bytes : 32), cols = 2 * lanes_of(g, st);
    tex_iter *last = op->axes[nax - 1], *ao, *lo, *ai, *li, *order[MAX_LEAVES], *par;
    if (nax + 2 > MAX_LEAVES)
        return 0;
    const char *builtin = transpose_builtin(g, st, across, &rows);
    if (builtin)
        cols = rows;
    TEXI_TRY(tex_tile(st, across, last, tex_int(g->ctx, rows), tex_int(g->ctx, cols), &ao, &lo, &ai,
                      &li));
    for (int k = 0; k < nax - 1; k++)
        if (op->axes[k] != across)
            order[n++] = op->axes[k];
    order[n++] = ao;
    order[n++] = lo;
    order[n++] = ai;
    order[n++] = li;
    TEXI_TRY(tex_reorder(st, n, order));
    TEXI_TRY(fuse_leading(st, n - 2, &par));
    TEXI_TRY(tex_parallel(st, par));
    if (!builtin)
        return tex_vectorize(st, li);
    tex_intrin *in = tex_intrin_builtin(g->ctx, builtin);
    return in ? tex_tensorize(st, ai, in) : tex_errcode(g->ctx);
}

/* "alone": a kernel with nothing attached. */
static int schedule_alone(texi_as_graph *g, int r)
{
    texi_as_node *nd = &g->nodes[r];
    tex_stage *st = nd->st;
    int nax = st->op->n_axes;
    if (nd->kind == TEXI_AS_GEMM && nax >= 2) {
        if (tiles_in_place(g, r))
            return schedule_tz_tiles(g, r, st, r);
        tex_tensor *local = tex_cache_write(g->sch, st->tensor, TEX_SCOPE_LOCAL);
        if (!local)
            return tex_errcode(g->ctx);
        return schedule_gemm_tiles(g, r, tex_stage_of(g->sch, local), r);
    }
    tex_iter *across = nd->kind == TEXI_AS_INJECTIVE ? texi_as_transposed_axis(g->sch, st) : NULL;
    if (across)
        return schedule_transpose(g, st, across);
    if (nd->kind == TEXI_AS_INJECTIVE) {
        /* the leading dims fused as far as their extents are constants: a
         * padding of symbolic rows and columns fused whole divided its
         * index by both at every vector, which then gathered its lanes one
         * by one (a conv's padding took longer than the conv) */
        tex_iter *outer, *rest = NULL;
        if (nax > 1) {
            TEXI_TRY(fuse_leading_const(st, nax - 1, &outer));
            TEXI_TRY(tex_parallel(st, outer));
        } else {
            TEXI_TRY(outer_loop(g, st, nax - 1, 2, &outer, &rest));
        }
        tex_iter *last = nax > 1 ? st->op->axes[nax - 1] : rest;
        return last ? vectorize_axis(g, st, last) : 0;
    }
    /* a window along the last axis (max pooling alone): rows of it, the
     * last axis vectorized inside the window's loops; all dims fused, each
     * element divided its fused index and ran the window scalar: 5-20x
     * slower on pools of 56-222 pixel rows */
    tex_iter *inner = texi_as_inner_iter(st);
    bool window = nax > 0 && texi_as_window_along_last(st, false);
    bool column = nax > 0 && (inner == st->op->axes[nax - 1] || window);
    tex_iter *par;
    if (column && nd->kind != TEXI_AS_GEMM && few_rows(g, st))
        return column_chunks(g, st, &par);
    if (column && nax == 1)
        return reduce_inner(g, st, last_axis(st), nd->kind == TEXI_AS_GEMM, window);
    tex_iter *outer, *rest;
    TEXI_TRY(outer_loop(g, st, column ? nax - 1 : nax, 2, &outer, &rest));
    return reduce_inner(g, st, last_axis(st), nd->kind == TEXI_AS_GEMM, window);
}

int texi_as_schedule_cpu(texi_as_graph *g)
{
    for (int r = g->n - 1; r >= 0; r--) {
        texi_as_node *nd = &g->nodes[r];
        if (nd->fate != TEXI_AS_ROOT)
            continue;
        switch (nd->mode) {
        case TEXI_AS_MODE_ALONE:
            TEXI_TRY(schedule_alone(g, r));
            break;
        case TEXI_AS_MODE_ROWS:
            TEXI_TRY(schedule_rows(g, r));
            break;
        case TEXI_AS_MODE_TILES:
            TEXI_TRY(schedule_gemm_tiles(g, r, g->nodes[nd->gemm].st, nd->gemm));
            break;
        }
    }
    return 0;
}

int texi_as_schedule_cpu_plain(texi_as_graph *g)
{
    int n = g->sch->n_stages;
    for (int i = 0; i < n; i++) {
        tex_stage *st = g->sch->stages[i];
        tex_iter *outer, *rest;
        if (!st->op || st->op->kind != TEXI_OP_COMPUTE)
            continue;
        int nax = st->op->n_axes;
        TEXI_TRY(outer_loop(g, st, nax > 1 ? nax - 1 : nax, 1, &outer, &rest));
    }
    return 0;
}
