/*
 * Op classification for the automatic scheduler: what each stage's compute
 * is (injective, reduction, GEMM-like: a sum of products of two different
 * tensors) and the two cost facts the partition's rule needs (an expensive
 * body; a body that only moves data), plus the questions the partition asks
 * about one consumer's reads of one producer (reuse, leading dims indexed
 * by the consumer's own axes), and the read patterns the kernel level asks
 * about (a transposing read, a window, the panel operand's layout). Reads
 * the compute definitions (the stage's current op), never the schedule's
 * relations, except which producers it inlines (texi_as_transposed_axis
 * looks through them); only whether a GEMM stage's consumers need all of
 * it asks bound inference (partly_needed). A matrix-vector product of dot
 * products, and on the CPU a vector-matrix product, count as reductions
 * (is_reduction_like).
 */
#include "autosched/autosched.h"

enum { MAX_INLINED_DIMS = 16, MAX_INLINED_READS = 64 };

/* Math functions whose call costs far more than an add (libm or a vector
 * polynomial); abs, floor, ceil, round and fma are cheap. */
static bool math_is_expensive(enum texi_math op)
{
    switch (op) {
    case TEXI_MATH_ABS:
    case TEXI_MATH_FLOOR:
    case TEXI_MATH_CEIL:
    case TEXI_MATH_ROUND:
    case TEXI_MATH_FMA:
        return false;
    default:
        return true;
    }
}

typedef struct {
    bool expensive; /* a call of an expensive function */
    bool computes;  /* float arithmetic or a call */
} body_cost;

static bool cost_visit(tex_expr *e, void *ud)
{
    body_cost *c = ud;
    if (e->kind == TEXI_EXPR_CALL) {
        c->computes = true;
        c->expensive |= math_is_expensive(e->u.call.op);
    } else if (texi_expr_is_binary(e) && !texi_expr_is_compare(e) && e->kind != TEXI_EXPR_AND &&
               e->kind != TEXI_EXPR_OR && texi_dtype_is_float(e->dtype)) {
        c->computes = true;
    }
    return e->kind != TEXI_EXPR_ACCESS; /* indices are integer arithmetic */
}

/* Whether e (a multiplication's operand) reads a tensor; its first one in *t. */
static bool find_access(tex_expr *e, void *ud)
{
    tex_tensor **t = ud;
    if (e->kind == TEXI_EXPR_ACCESS && !*t)
        *t = e->u.access.tensor;
    return !*t;
}

/* A sum whose body (under casts) multiplies reads of two different tensors. */
static bool is_gemm_like(const texi_op *op)
{
    tex_expr *b = op->body;
    if (b->kind != TEXI_EXPR_REDUCE || b->u.red.op != TEXI_REDUCE_SUM)
        return false;
    b = b->u.red.body;
    while (b->kind == TEXI_EXPR_CAST)
        b = b->u.un.a;
    if (b->kind != TEXI_EXPR_MUL)
        return false;
    tex_tensor *ta = NULL, *tb = NULL;
    texi_expr_visit(b->u.bin.a, find_access, &ta);
    texi_expr_visit(b->u.bin.b, find_access, &tb);
    return ta && tb && ta != tb;
}

/* Whether tensor t's dim d is a constant 1 long. */
static bool unit_dim(const tex_tensor *t, int d)
{
    int64_t e;
    return d < t->ndim && texi_expr_is_int_const(t->shape[d], &e) && e == 1;
}

bool texi_as_access_uses(const tex_expr *acc, const tex_iter *iv)
{
    for (int k = 0; k < acc->u.access.n_idx; k++)
        if (texi_as_expr_uses(acc->u.access.idx[k], iv))
            return true;
    return false;
}

bool texi_as_product_reads(const texi_op *op, const tex_expr **vec, const tex_expr **other)
{
    const tex_expr *b = op->body->kind == TEXI_EXPR_REDUCE ? op->body->u.red.body : NULL;
    if (op->n_axes < 1 || !b || b->kind != TEXI_EXPR_MUL || b->u.bin.a->kind != TEXI_EXPR_ACCESS ||
        b->u.bin.b->kind != TEXI_EXPR_ACCESS)
        return false;
    bool swap = !texi_as_access_uses(b->u.bin.a, op->axes[op->n_axes - 1]);
    *vec = swap ? b->u.bin.b : b->u.bin.a;
    *other = swap ? b->u.bin.a : b->u.bin.b;
    return true;
}

bool texi_as_columns_gathered(const tex_stage *gemm)
{
    const texi_op *op = gemm->op;
    const tex_expr *reads[2];
    if (!texi_as_product_reads(op, &reads[0], &reads[1]))
        return false;
    const tex_iter *col = op->axes[op->n_axes - 1];
    for (int r = 0; r < 2; r++) {
        const tex_expr *acc = reads[r];
        int n = acc->u.access.n_idx;
        int64_t c = 0;
        if (n == 0 || !texi_as_access_uses(acc, col))
            continue;
        bool last_only = texi_linear_in(acc->u.access.idx[n - 1], col->var, &c) && c == 1;
        for (int d = 0; d < n - 1 && last_only; d++)
            last_only = !texi_as_expr_uses(acc->u.access.idx[d], col);
        if (!last_only)
            return true;
    }
    return false;
}

/* Whether iv (a loop of the reader) runs more than one iteration. */
static bool iter_repeats(const tex_iter *iv)
{
    int64_t v;
    return !texi_expr_is_int_const(iv->extent, &v) || v > 1;
}

/* How a GEMM-like op's reads run: along its last reduce axis k, along its
 * last data axis n, or otherwise (by each read's last index past dims 1
 * long); and whether a read along n misses one of op's other data axes
 * that repeats (its tile reused across them, as a conv's weights are). */
typedef struct {
    const texi_op *op;
    const tex_iter *k, *n;
    int along_k, along_n, other;
    bool reused;
} axis_walk;

static bool axis_visit(tex_expr *e, void *ud)
{
    axis_walk *w = ud;
    if (e->kind != TEXI_EXPR_ACCESS)
        return true;
    int d = e->u.access.n_idx - 1;
    while (d > 0 && unit_dim(e->u.access.tensor, d))
        d--;
    const tex_expr *ix = d >= 0 ? e->u.access.idx[d] : NULL;
    const tex_iter *it = ix && ix->kind == TEXI_EXPR_VAR ? ix->u.var.iter : NULL;
    w->along_k += it && it == w->k;
    w->along_n += it && it == w->n;
    w->other += !it || (it != w->k && it != w->n);
    for (int a = 0; it && it == w->n && a < w->op->n_axes - 1; a++)
        w->reused |= iter_repeats(w->op->axes[a]) && !texi_as_access_uses(e, w->op->axes[a]);
    return false;
}

/*
 * Whether GEMM-like op is better scheduled as a reduction, its row or
 * column axis being 1 long:
 *   - dot products: every read runs along its last reduce axis (a batch-1
 *     dense layer, x [1, K] . W[N, K]^T; A [M, K] . x [K, 1]). Each output
 *     then reads contiguous rows, and the reduction's own schedule
 *     (parallel over the outputs, vectorized along K) streams the matrix
 *     once. As tiles, the dense layer's vectors gathered from 16 rows of
 *     W, on one thread (the tile rows were the parallel loop): 28 ms for a
 *     4096 x 4096 W on 2 cores, against 1.0 ms.
 *   - on the CPU, a vector-matrix product: 1 row, every read along the
 *     reduce axis or along the columns, one at least along the columns,
 *     and the matrix indexed by every other data axis (x [1, K] . B [K, N],
 *     batched; not a conv's weights, which every pixel row reuses, on an
 *     image one pixel wide). Its one row of outputs is cut into a chunk of
 *     columns a thread, each streaming its part of B's rows (cpu.c,
 *     column_chunks); as a one-row tile of the GEMM built-in, each 64-column
 *     panel walked B 16 KiB a step.
 */
static bool is_reduction_like(const texi_op *op, bool cuda)
{
    int64_t m = 0, n = 0;
    if (op->n_axes < 2 || op->n_raxes < 1)
        return false;
    texi_expr_is_int_const(op->axes[op->n_axes - 2]->extent, &m);
    texi_expr_is_int_const(op->axes[op->n_axes - 1]->extent, &n);
    axis_walk w = {op, op->raxes[op->n_raxes - 1], op->axes[op->n_axes - 1], 0, 0, 0, false};
    texi_expr_visit(op->body, axis_visit, &w);
    if (w.other)
        return false;
    if (w.along_n == 0)
        return m == 1 || n == 1;
    return !cuda && m == 1 && n != 1 && !w.reused;
}

/* Why GEMM stage st, which fits a built-in by its definition, still does
 * not: its consumers need only part of its rows or columns (a slice of its
 * output), so it is computed over a narrower range than the tiles its
 * schedule would assume. NULL when they need all of them. After bound
 * inference of the schedule as it is (every stage at root). */
static const char *partly_needed(const tex_stage *st)
{
    const texi_op *op = st->op;
    for (int d = op->n_axes - 2; d < op->n_axes; d++) {
        const texi_rng *r = &st->range[texi_stage_iter_index(st, op->axes[d])];
        int64_t lo, e, full;
        if (!tex_expr_const_int(r->min, &lo) || lo != 0 || !tex_expr_const_int(r->extent, &e) ||
            !tex_expr_const_int(op->axes[d]->extent, &full) || e != full)
            return "its consumers need only part of its rows or columns";
    }
    return NULL;
}

int texi_as_classify(texi_as_graph *g)
{
    bool inferred = false;
    for (int i = 0; i < g->n; i++) {
        texi_as_node *nd = &g->nodes[i];
        const texi_op *op = nd->st->op;
        nd->fate = TEXI_AS_NONE;
        nd->root = -1;
        nd->gemm = -1;
        if (op->kind == TEXI_OP_PLACEHOLDER) {
            nd->kind = TEXI_AS_INPUT;
            continue;
        }
        nd->kind = op->n_raxes == 0                                      ? TEXI_AS_INJECTIVE
                   : is_gemm_like(op) && !is_reduction_like(op, g->cuda) ? TEXI_AS_GEMM
                                                                         : TEXI_AS_REDUCE;
        if (nd->kind == TEXI_AS_GEMM) {
            tex_iter *k;
            nd->tz_why = g->cuda ? "the CPU GEMM built-ins serve \"cpu\" only"
                         : g->no_tensorize
                             ? "the target says -no-tensorize"
                             : texi_as_tensorize_fit(g, nd->st, &k, &g->tz_builtin, &g->tz_nr);
            if (!nd->tz_why && !inferred) {
                TEXI_TRY(texi_infer_bounds(g->sch));
                inferred = true;
            }
            nd->tz_why = nd->tz_why ? nd->tz_why : partly_needed(nd->st);
        }
        body_cost c = {false, false};
        texi_expr_visit(op->body, cost_visit, &c);
        nd->expensive = c.expensive;
        nd->movement = !c.computes;
    }
    return 0;
}

/* ------------------------------------------------------------ read patterns */

typedef struct {
    const texi_op *op;   /* the reader's compute */
    const tex_tensor *t; /* the tensor read */
    bool reuse;          /* reuse: a loop variable missing from a read */
    int lead;            /* lead_match: the minimum over the reads so far */
    int count;           /* read_count: the reads so far */
} read_walk;

static bool var_used(tex_expr *e, void *ud)
{
    const tex_iter **iv = ud;
    if (*iv && e->kind == TEXI_EXPR_VAR && e->u.var.iter == *iv)
        *iv = NULL;
    return *iv != NULL;
}

bool texi_as_expr_uses(tex_expr *e, const tex_iter *iv)
{
    const tex_iter *left = iv;
    texi_expr_visit(e, var_used, &left);
    return left == NULL;
}

static bool reuse_visit(tex_expr *e, void *ud)
{
    read_walk *w = ud;
    if (e->kind != TEXI_EXPR_ACCESS || e->u.access.tensor != w->t)
        return true;
    for (int k = 0; k < w->op->n_axes + w->op->n_raxes && !w->reuse; k++) {
        const tex_iter *iv = k < w->op->n_axes ? w->op->axes[k] : w->op->raxes[k - w->op->n_axes];
        w->reuse = iter_repeats(iv) && !texi_as_access_uses(e, iv);
    }
    return false;
}

bool texi_as_reads_with_reuse(const tex_stage *c, const tex_tensor *t)
{
    read_walk w = {.op = c->op, .t = t};
    texi_expr_visit(c->op->body, reuse_visit, &w);
    return w.reuse;
}

/* Whether the access's index k is the reader's axis iv, or 0 where both the
 * tensor's dim and iv have size 1 (a broadcast read of a 1-sized dim). */
static bool same_index(const tex_expr *acc, int k, const tex_iter *iv)
{
    const tex_expr *ix = acc->u.access.idx[k];
    int64_t v;
    if (ix->kind == TEXI_EXPR_VAR)
        return ix->u.var.iter == iv;
    return texi_expr_is_int_const(ix, &v) && v == 0 && !iter_repeats(iv) &&
           texi_expr_is_int_const(acc->u.access.tensor->shape[k], &v) && v == 1;
}

static bool lead_visit(tex_expr *e, void *ud)
{
    read_walk *w = ud;
    if (e->kind != TEXI_EXPR_ACCESS || e->u.access.tensor != w->t)
        return true;
    int m = 0;
    while (m < e->u.access.n_idx && m < w->op->n_axes && same_index(e, m, w->op->axes[m]))
        m++;
    if (m < w->lead)
        w->lead = m;
    return false;
}

int texi_as_lead_match(const tex_stage *c, const tex_tensor *t)
{
    read_walk w = {.op = c->op, .t = t, .lead = t->ndim};
    texi_expr_visit(c->op->body, lead_visit, &w);
    return w.lead;
}

static bool count_visit(tex_expr *e, void *ud)
{
    read_walk *w = ud;
    if (e->kind != TEXI_EXPR_ACCESS || e->u.access.tensor != w->t)
        return true;
    w->count++;
    return false;
}

int texi_as_read_count(const tex_stage *c, const tex_tensor *t)
{
    read_walk w = {.op = c->op, .t = t};
    texi_expr_visit(c->op->body, count_visit, &w);
    return w.count;
}

/* texi_expr_visit callback: the last index of the first read with indices,
 * in *ud. */
static bool first_read_visit(tex_expr *e, void *ud)
{
    tex_expr **last = ud;
    if (*last)
        return false;
    if (e->kind != TEXI_EXPR_ACCESS || e->u.access.n_idx == 0)
        return true;
    *last = e->u.access.idx[e->u.access.n_idx - 1];
    return false;
}

/* The last index of the first multi-dimensional read of st's body, or NULL. */
static tex_expr *first_last_index(const tex_stage *st)
{
    tex_expr *last = NULL;
    texi_expr_visit(st->op->body, first_read_visit, &last);
    return last;
}

bool texi_as_window_along_last(const tex_stage *st, bool unit_stride)
{
    tex_expr *last = st->op->n_axes > 0 ? first_last_index(st) : NULL;
    int64_t c;
    const tex_iter *x = st->op->n_axes > 0 ? st->op->axes[st->op->n_axes - 1] : NULL;
    if (!last || last->kind == TEXI_EXPR_VAR || !texi_as_expr_uses(last, x))
        return false;
    return !unit_stride || (texi_linear_in(last, x->var, &c) && c == 1);
}

/* The largest read with indices so far (elements, a symbolic dim counting
 * 2^20) and its last index. */
typedef struct {
    int64_t size;
    tex_expr *last;
} largest_walk;

static bool largest_visit(tex_expr *e, void *ud)
{
    largest_walk *w = ud;
    if (e->kind != TEXI_EXPR_ACCESS || e->u.access.n_idx == 0)
        return true;
    const tex_tensor *t = e->u.access.tensor;
    int64_t size = 1, d;
    for (int k = 0; k < t->ndim && size < INT64_MAX / (1 << 21); k++)
        size *=
            texi_expr_is_int_const(t->shape[k], &d) && d < (1 << 20) ? (d > 0 ? d : 1) : (1 << 20);
    if (!w->last || size > w->size)
        *w = (largest_walk){size, e->u.access.idx[e->u.access.n_idx - 1]};
    return false;
}

tex_iter *texi_as_inner_iter(const tex_stage *st)
{
    largest_walk w = {0, NULL};
    texi_expr_visit(st->op->body, largest_visit, &w);
    tex_expr *last = w.last;
    const tex_iter *inner = last && last->kind == TEXI_EXPR_VAR ? last->u.var.iter : NULL;
    for (int k = 0; inner && k < st->op->n_axes; k++)
        if (st->op->axes[k] == inner)
            return st->op->axes[k];
    for (int k = 0; inner && k < st->op->n_raxes; k++)
        if (st->op->raxes[k] == inner)
            return st->op->raxes[k];
    return NULL;
}

typedef struct {
    const tex_tensor *t;
    const tex_iter *m, *n; /* the GEMM's row and column axes */
    bool uses_m, uses_n;
} panel_walk;

static bool panel_visit(tex_expr *e, void *ud)
{
    panel_walk *w = ud;
    if (e->kind != TEXI_EXPR_ACCESS || e->u.access.tensor != w->t)
        return true;
    w->uses_m |= texi_as_access_uses(e, w->m);
    w->uses_n |= texi_as_access_uses(e, w->n);
    return false;
}

tex_tensor *texi_as_panel_operand(const tex_stage *gemm)
{
    const texi_op *op = gemm->op;
    if (op->n_axes < 2)
        return NULL;
    for (int i = 0; i < op->n_inputs; i++) {
        panel_walk w = {op->inputs[i], op->axes[op->n_axes - 2], op->axes[op->n_axes - 1], false,
                        false};
        texi_expr_visit(op->body, panel_visit, &w);
        if (w.uses_n && !w.uses_m)
            return op->inputs[i];
    }
    return NULL;
}

typedef struct {
    const tex_schedule *sch;
    int left; /* substitutions still allowed: chains that read a producer
                 several times would grow exponentially */
} inline_walk;

/* texi_expr_mutate callback: a read of a producer that the schedule
 * inlines (an injective compute) becomes that producer's body at the read's
 * indices, its own reads rewritten the same way (at most MAX_INLINED_READS
 * in all; the reads past them stay reads). */
static tex_expr *inline_read(tex_expr *e, void *ud)
{
    inline_walk *w = ud;
    if (e->kind != TEXI_EXPR_ACCESS)
        return NULL;
    const tex_stage *ps = texi_schedule_find_stage(w->sch, e->u.access.tensor);
    const texi_op *pop = ps ? ps->op : NULL;
    int n = e->u.access.n_idx;
    if (!pop || ps->attach != TEXI_ATTACH_INLINE || pop->kind != TEXI_OP_COMPUTE ||
        pop->n_raxes > 0 || pop->n_axes != n || n > MAX_INLINED_DIMS || w->left <= 0)
        return NULL;
    w->left--;
    tex_expr *vars[MAX_INLINED_DIMS], *vals[MAX_INLINED_DIMS];
    for (int d = 0; d < n; d++) {
        vars[d] = pop->axes[d]->var;
        vals[d] = texi_expr_mutate(e->u.access.idx[d], inline_read, w);
        if (!vals[d])
            return e; /* out of memory: the read as it is */
    }
    tex_expr *body = texi_substitute(pop->body, n, vars, vals);
    body = body ? texi_expr_mutate(body, inline_read, w) : NULL;
    return body ? body : e;
}

typedef struct {
    const texi_op *op;
    tex_iter *axis; /* found: the axis a transposing read runs along */
} transpose_walk;

static bool transpose_visit(tex_expr *e, void *ud)
{
    transpose_walk *w = ud;
    if (w->axis || e->kind != TEXI_EXPR_ACCESS || e->u.access.n_idx < 2)
        return !w->axis;
    const tex_expr *last = e->u.access.idx[e->u.access.n_idx - 1];
    const tex_iter *col = w->op->axes[w->op->n_axes - 1];
    if (last->kind != TEXI_EXPR_VAR || last->u.var.iter == col)
        return true;
    for (int a = 0; a < w->op->n_axes - 1; a++)
        if (w->op->axes[a] == last->u.var.iter)
            for (int d = 0; d < e->u.access.n_idx - 1; d++)
                if (texi_as_expr_uses(e->u.access.idx[d], col))
                    w->axis = w->op->axes[a];
    return true;
}

tex_iter *texi_as_transposed_axis(const tex_schedule *sch, const tex_stage *st)
{
    transpose_walk w = {st->op, NULL};
    inline_walk iw = {sch, MAX_INLINED_READS};
    tex_expr *body = st->op->n_axes >= 2 ? texi_expr_mutate(st->op->body, inline_read, &iw) : NULL;
    if (body)
        texi_expr_visit(body, transpose_visit, &w);
    return w.axis;
}

typedef struct {
    const tex_tensor *t;
    const tex_iter *n;
    int dim; /* -1 before the first read of t */
} panel_dim_walk;

static bool panel_dim_visit(tex_expr *e, void *ud)
{
    panel_dim_walk *w = ud;
    if (w->dim >= 0 || e->kind != TEXI_EXPR_ACCESS || e->u.access.tensor != w->t)
        return w->dim < 0;
    for (int d = 0; d < e->u.access.n_idx && w->dim < 0; d++)
        if (texi_as_expr_uses(e->u.access.idx[d], w->n))
            w->dim = d;
    return false;
}

int texi_as_panel_dim(const tex_stage *gemm)
{
    const texi_op *op = gemm->op;
    tex_tensor *b = texi_as_panel_operand(gemm);
    if (!b)
        return -1;
    panel_dim_walk w = {b, op->axes[op->n_axes - 1], -1};
    texi_expr_visit(op->body, panel_dim_visit, &w);
    return w.dim;
}

bool texi_as_panel_axis(const tex_stage *gemm, int a)
{
    const texi_op *op = gemm->op;
    tex_tensor *b = texi_as_panel_operand(gemm);
    if (!b || a < 0 || a >= op->n_axes - 2)
        return false;
    panel_walk w = {b, op->axes[a], op->axes[op->n_axes - 1], false, false};
    texi_expr_visit(op->body, panel_visit, &w);
    return w.uses_m;
}
