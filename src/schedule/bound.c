/*
 * Bound inference (TVM's InferBound, in C): for every stage, the range of
 * each iteration variable and the region of its output that its consumers
 * need, at the point where it is computed.
 *
 * Variables (see bound.h): every call makes one fresh VAR per (stage, iter);
 * ranges and regions are expressions over those variables of the loops that
 * enclose a stage, plus the symbolic sizes. ScheduleOps loops over the same
 * variables, so the expressions can be used where the stage is emitted.
 * Values: a leaf loop runs over [0, extent); an iter's value is
 * range.min + offset, and only root iters have a non-zero min.
 *
 * Algorithm, stages from consumers to producers (reverse of s->stages):
 *   1. Root ranges. Outputs, function parameters (texi_infer_bounds_ex),
 *      inlined stages and stages nobody reads span their axes' domains; reduce
 *      axes always do. Any other compute gets, per data axis, the region of
 *      its tensor that its consumers read: for each consumer C, the loops of C
 *      (its leaves, inner to outer, then the loops around C) are walked; the
 *      loops inside the producer's attach point are relaxed over their ranges,
 *      those outside and including it stay symbolic (TVM's NeedRelax, with
 *      thread-bound loops relaxed for buffers shared by those threads); a
 *      consumer that does not run inside the attach loop is an error. C's
 *      root values (PassUp of its leaf variables) are bounded over the relaxed
 *      loops (a root all of whose loops are relaxed spans exactly its range,
 *      TVM's MatchRange) and clamped to what C's guards let through; every
 *      ACCESS of the tensor in C's body (inlined stages substituted) is
 *      bounded over those root intervals; the union over accesses and
 *      consumers is the region.
 *      Its min stays symbolic in the enclosing loops; its extent (hi - lo + 1,
 *      with min/max distributed over the subtraction) is maximized over them,
 *      so allocations and loop extents are loop-invariant (the last
 *      tile of a non-divisible split may then run past the producer's domain:
 *      ScheduleOps guards root values against the domain, as TVM does). In
 *      a stage computed inside a loop, an extent that is not a constant but
 *      has a constant upper bound (min(N, 64): a tile of a symbolic size)
 *      becomes that constant, as with constant sizes: a thread's tiles then
 *      stay in registers and tile indices free of divisions by sizes, and a
 *      CPU register tile's columns are vectorized and unrolled (a matmul
 *      with a symbolic N had run its tiles lane by lane, 150 times slower
 *      than with a constant N; one with a symbolic M 6 times).
 *      An index that cannot be bounded (data-dependent, A[B[i]]) makes that
 *      dimension the tensor's whole shape. Regions are not clamped to shapes
 *      (but see stages at root below).
 *      Bounds are texi_expr_bounds, retried where it gives up with every
 *      floordiv/floormod by a non-constant (fused and nested split axes of
 *      symbolic sizes) replaced by a fresh variable over its quotient's or
 *      remainder's range. A root value that still cannot be bounded spans its
 *      domain, or, on a round-up axis, its range's min plus the product of
 *      its leaves' extents; no result names a relaxed loop variable. An
 *      extent still symbolic in the enclosing loops is clamped to >= 0 (it is
 *      negative where a consumer's tail iteration lies past the domain: the
 *      producer then runs no iteration, the consumer's guard skips the use).
 *      A stage at root whose region still divides by a symbolic size (read
 *      through a reshape's flat index) takes its whole domain instead; one
 *      that provably reaches past the domain is cut to it (a concat or a pad
 *      reads its input past its shape; the proof may take every variable that
 *      is a whole dimension of a placeholder as >= 0). Root ranges are in the
 *      root axes' own index type.
 *   2. PassDown: split by factor f gives inner [0, f), outer
 *      [0, ceildiv(E, f)); by nparts p: outer [0, p), inner [0, ceildiv(E, p));
 *      fuse: [0, outer * inner).
 *   3. Tails. A split whose factor provably divides the extent needs nothing
 *      (GUARD is recorded, no guard is emitted). Otherwise GUARD, PREDICATE and
 *      SHIFT_INWARDS stay; ROUND_UP is kept when legal (rule 6: an
 *      intermediate, a data axis, and every read of the stage provably inside
 *      its tensor's declared shape over the rounded-up domain), else the split
 *      is recorded in bad_rel for ScheduleOps to reject. AUTO chooses ROUND_UP
 *      where that is legal and GUARD otherwise (reductions axes, outputs,
 *      parameters, reads that could leave their shapes). Nested splits of a
 *      data axis may round up too (extra iterations recompute equal values).
 *   4. Region: the data roots' ranges, enlarged on round-up axes to cover the
 *      rounded-up iterations.
 *
 * Errors: an attach point that is not a leaf, attach cycles, inlining a
 * reduction, a consumer outside its producer's attach loop, an output or
 * parameter computed at a loop (all TEX_EINVAL naming the stages). A region
 * that cannot be bounded is not an error (the whole shape is used).
 *
 * Not done here: loop construction, guards and error reporting of illegal
 * tails (ScheduleOps); cross-thread reduction; clamping regions to shapes.
 */
#include "ir/arith.h"
#include "schedule/bound.h"

#include <stdint.h>

typedef struct {
    int stage; /* index into s->stages */
    int leaf;  /* index into that stage's leaf */
} path_ent;

/* One inference run. */
typedef struct {
    tex_ctx *ctx;
    tex_schedule *s;
    texi_bounds *b;
    int total_leaves;  /* sum of n_leaf over the stages: capacity of loop lists */
    int n_sizes;       /* variables that are a whole dimension of a placeholder */
    texi_range *sizes; /* their ranges: [0, +inf) (size_ranges, texi_range) */
} binf;

/* ------------------------------------------------------------- helpers */

tex_expr *texi_bounds_arith(enum texi_expr_kind kind, tex_expr *a, tex_expr *b)
{
    if (!a || !b)
        return NULL;
    tex_dtype t = texi_dtype_promote(a->dtype, b->dtype);
    if (kind == TEXI_EXPR_AND || kind == TEXI_EXPR_OR)
        t = TEX_BOOL;
    a = texi_convert(a, t);
    b = texi_convert(b, t);
    return a && b ? texi_binary(kind, a, b) : NULL;
}

#define ARITH(k, a, b) texi_bounds_arith(TEXI_EXPR_##k, (a), (b))

static tex_expr *imm(tex_ctx *ctx, tex_dtype t, int64_t v)
{
    return texi_int_imm(ctx, t, v);
}

static tex_expr *ceildiv(tex_expr *a, tex_expr *b)
{
    if (!a || !b)
        return NULL;
    tex_expr *one = imm(a->ctx, b->dtype, 1);
    return ARITH(FLOORDIV, ARITH(SUB, ARITH(ADD, a, b), one), b);
}

int texi_bounds_stage_index(const texi_bounds *b, const tex_stage *st)
{
    for (int i = 0; i < b->sch->n_stages; i++)
        if (b->sch->stages[i] == st)
            return i;
    return -1;
}

int texi_bounds_iter_index(const tex_stage *st, const tex_iter *iv)
{
    for (int i = 0; i < st->n_all; i++)
        if (st->all[i] == iv)
            return i;
    return -1;
}

static int leaf_index(const tex_stage *st, const tex_iter *iv)
{
    for (int i = 0; i < st->n_leaf; i++)
        if (st->leaf[i] == iv)
            return i;
    return -1;
}

static int leaf_all(const tex_stage *st, int leaf)
{
    return texi_bounds_iter_index(st, st->leaf[leaf]);
}

static int stage_of_tensor(const tex_schedule *s, const tex_tensor *t)
{
    for (int i = 0; i < s->n_stages; i++)
        if (s->stages[i]->tensor == t)
            return i;
    return -1;
}

static bool is_compute(const tex_stage *st)
{
    return st->op && st->op->kind == TEXI_OP_COMPUTE;
}

static tex_expr *simp(tex_expr *e, int n, const texi_range *r)
{
    return e ? texi_simplify(e, n, r) : NULL;
}

static bool has_opaque(tex_expr *e, void *ud)
{
    bool *found = ud;
    if (e->kind == TEXI_EXPR_ACCESS || e->kind == TEXI_EXPR_LOAD || e->kind == TEXI_EXPR_CALL ||
        e->kind == TEXI_EXPR_SEARCH || e->kind == TEXI_EXPR_REDUCE)
        *found = true;
    return !*found;
}

static bool is_type_end(const tex_expr *e)
{
    int64_t v;
    return texi_expr_is_int_const(e, &v) &&
           (v == INT32_MIN || v == INT32_MAX || v == INT64_MIN || v == INT64_MAX);
}

/* Ranges extended with one fresh variable per abstracted division. */
typedef struct {
    tex_ctx *ctx;
    texi_range *r;
    int n, cap;
    int rc;
} div_abs;

typedef struct {
    int n;
    const texi_range *r;
    bool found;
} var_probe;

static bool uses_var_of(tex_expr *e, void *ud)
{
    var_probe *p = ud;
    for (int i = 0; e->kind == TEXI_EXPR_VAR && i < p->n; i++)
        p->found = p->found || p->r[i].var == e;
    return !p->found;
}

/* Whether e reads one of the variables of r[0..n). */
static bool ranged(tex_expr *e, int n, const texi_range *r)
{
    var_probe p = {n, r, false};
    texi_expr_visit(e, uses_var_of, &p);
    return p.found;
}

static int push_range(div_abs *d, tex_expr *v, tex_expr *min, tex_expr *extent)
{
    if (!v || !min || !extent)
        return TEX_ENOMEM;
    if (d->n == d->cap) {
        int cap = 2 * d->cap + 8;
        texi_range *r = texi_alloc(d->ctx, sizeof *r * (size_t)cap, "bound inference");
        if (!r)
            return TEX_ENOMEM;
        for (int i = 0; i < d->n; i++)
            r[i] = d->r[i];
        d->r = r;
        d->cap = cap;
    }
    d->r[d->n++] = (texi_range){v, min, extent};
    return 0;
}

/* floormod(x, E) -> a fresh variable in [0, E); floordiv(x, E) -> one in
 * [floordiv(lo, E), floordiv(hi, E)] for x in [lo, hi], where E is not a
 * constant and x varies over the ranges (texi_expr_bounds gives up there).
 * E is taken to be positive: in bound inference divisors are split factors
 * and loop extents, and a loop of extent <= 0 runs no iteration at all. */
static tex_expr *abstract_div(tex_expr *e, void *ud)
{
    div_abs *d = ud;
    if (d->rc || (e->kind != TEXI_EXPR_FLOORDIV && e->kind != TEXI_EXPR_FLOORMOD) ||
        texi_expr_is_int_const(e->u.bin.b, NULL) || !ranged(e->u.bin.a, d->n, d->r) ||
        ranged(e->u.bin.b, d->n, d->r))
        return NULL;
    tex_expr *den = e->u.bin.b, *v = texi_var_new(d->ctx, "div", e->dtype);
    if (e->kind == TEXI_EXPR_FLOORMOD) {
        d->rc = push_range(d, v, imm(d->ctx, e->dtype, 0), den);
        return d->rc ? NULL : v;
    }
    tex_expr *x = texi_expr_mutate(e->u.bin.a, abstract_div, d), *lo, *hi;
    if (!x || d->rc) {
        d->rc = d->rc ? d->rc : TEX_ENOMEM;
        return NULL;
    }
    if (texi_expr_bounds(d->ctx, x, d->n, d->r, &lo, &hi) < 0)
        return e; /* the caller's retry fails as well */
    lo = ARITH(FLOORDIV, lo, den);
    hi = ARITH(FLOORDIV, hi, den);
    d->rc = push_range(d, v, lo, ARITH(ADD, ARITH(SUB, hi, lo), imm(d->ctx, e->dtype, 1)));
    return d->rc ? NULL : v;
}

/* texi_expr_bounds, retried with symbolic divisions abstracted. */
static int bounds_abs(tex_ctx *ctx, tex_expr *e, int n, const texi_range *r, tex_expr **lo,
                      tex_expr **hi)
{
    int rc = texi_expr_bounds(ctx, e, n, r, lo, hi);
    if (rc != TEX_EINVAL)
        return rc;
    div_abs d = {ctx, NULL, 0, 0, 0};
    for (int i = 0; i < n; i++)
        TEXI_TRY(push_range(&d, r[i].var, r[i].min, r[i].extent));
    int n0 = d.n;
    tex_expr *a = texi_expr_mutate(e, abstract_div, &d);
    if (d.rc || !a)
        return d.rc < 0 ? d.rc : TEX_ENOMEM;
    if (d.n == n0)
        return rc;
    tex_clear_error(ctx);
    return texi_expr_bounds(ctx, a, d.n, d.r, lo, hi);
}

/* Closed bounds of e over ranges; *ok is false (and no error is left in the
 * context) when e cannot be bounded there. Only ENOMEM fails. */
static int try_bounds(tex_ctx *ctx, tex_expr *e, int n, const texi_range *r, tex_expr **lo,
                      tex_expr **hi, bool *ok)
{
    *ok = false;
    if (!e)
        return TEX_ENOMEM;
    bool opaque = false;
    texi_expr_visit(e, has_opaque, &opaque);
    if (opaque || !texi_dtype_is_int(e->dtype))
        return 0;
    int had = ctx->errcode;
    int rc = had ? texi_expr_bounds(ctx, e, n, r, lo, hi) : bounds_abs(ctx, e, n, r, lo, hi);
    if (rc == TEX_ENOMEM)
        return rc;
    if (rc < 0) {
        if (!had)
            tex_clear_error(ctx);
        return 0;
    }
    *ok = !is_type_end(*lo) && !is_type_end(*hi);
    return 0;
}

/* The upper bound of e over ranges, or e itself where it has none. */
static tex_expr *upper(tex_ctx *ctx, tex_expr *e, int n, const texi_range *r, int *rc)
{
    tex_expr *lo, *hi;
    bool ok;
    *rc = try_bounds(ctx, e, n, r, &lo, &hi, &ok);
    return ok ? hi : e;
}

/* ----------------------------------------------------------- relations */

/* The inner extent of a split of a parent with extent `ext`. */
static tex_expr *split_factor(const texi_relation *rel, tex_expr *ext)
{
    if (!ext)
        return NULL;
    if (rel->factor)
        return texi_convert(rel->factor, ext->dtype);
    return ceildiv(ext, texi_convert(rel->nparts, ext->dtype));
}

static texi_rng zero_based(tex_ctx *ctx, tex_expr *ext, const tex_iter *iv)
{
    tex_dtype t = iv->var->dtype;
    texi_rng r = {imm(ctx, t, 0), ext ? texi_simplify(texi_convert(ext, t), 0, NULL) : NULL};
    return r;
}

/* Ranges of the non-root iters of stage si from its root ranges. */
static int pass_down(binf *bi, tex_stage *st)
{
    for (int r = 0; r < st->n_rel; r++) {
        const texi_relation *rel = &st->rel[r];
        if (rel->kind == TEXI_REL_SPLIT) {
            int p = texi_bounds_iter_index(st, rel->parent);
            int o = texi_bounds_iter_index(st, rel->outer);
            int i = texi_bounds_iter_index(st, rel->inner);
            tex_expr *ext = st->range[p].extent, *f = split_factor(rel, ext);
            tex_expr *n_outer = rel->factor ? ceildiv(ext, f) : rel->nparts;
            st->range[o] = zero_based(bi->ctx, n_outer, rel->outer);
            st->range[i] = zero_based(bi->ctx, f, rel->inner);
            if (!st->range[o].extent || !st->range[i].extent)
                return TEX_ENOMEM;
        } else {
            int o = texi_bounds_iter_index(st, rel->outer);
            int i = texi_bounds_iter_index(st, rel->inner);
            int f = texi_bounds_iter_index(st, rel->fused);
            st->range[f] = zero_based(bi->ctx, ARITH(MUL, st->range[o].extent, st->range[i].extent),
                                      rel->fused);
            if (!st->range[f].extent)
                return TEX_ENOMEM;
        }
    }
    return 0;
}

int texi_bounds_pass_up(const texi_bounds *b, int si, tex_expr **val)
{
    tex_stage *st = b->sch->stages[si];
    for (int k = 0; k < st->n_leaf; k++) {
        int a = leaf_all(st, k);
        val[a] = ARITH(ADD, st->range[a].min, val[a]);
    }
    for (int r = st->n_rel - 1; r >= 0; r--) {
        const texi_relation *rel = &st->rel[r];
        int o = texi_bounds_iter_index(st, rel->outer), i = texi_bounds_iter_index(st, rel->inner);
        if (rel->kind == TEXI_REL_SPLIT) {
            int p = texi_bounds_iter_index(st, rel->parent);
            tex_expr *ext = st->range[p].extent, *f = split_factor(rel, ext);
            tex_expr *base = ARITH(MUL, val[o], f);
            if (b->st[si].tail[r] == TEX_TAIL_SHIFT_INWARDS)
                base = ARITH(MIN, base, ARITH(SUB, ext, f));
            val[p] = ARITH(ADD, ARITH(ADD, st->range[p].min, base), val[i]);
        } else {
            int fu = texi_bounds_iter_index(st, rel->fused);
            tex_expr *ext_i = st->range[i].extent;
            val[o] = ARITH(ADD, st->range[o].min, ARITH(FLOORDIV, val[fu], ext_i));
            val[i] = ARITH(ADD, st->range[i].min, ARITH(FLOORMOD, val[fu], ext_i));
        }
    }
    for (int k = 0; k < st->n_root; k++) {
        int a = texi_bounds_iter_index(st, st->root[k]);
        val[a] =
            val[a] ? texi_simplify(texi_convert(val[a], st->root[k]->var->dtype), 0, NULL) : NULL;
        if (!val[a])
            return TEX_ENOMEM;
    }
    return 0;
}

/* Whether iter a of st is root_a or is derived from it. */
static bool derives_from(const tex_stage *st, int a, int root_a, int depth)
{
    if (a == root_a)
        return true;
    if (a < 0 || depth > st->n_all)
        return false;
    for (int r = 0; r < st->n_rel; r++) {
        const texi_relation *rel = &st->rel[r];
        tex_iter *iv = st->all[a];
        if (rel->kind == TEXI_REL_SPLIT && (rel->outer == iv || rel->inner == iv))
            return derives_from(st, texi_bounds_iter_index(st, rel->parent), root_a, depth + 1);
        if (rel->kind == TEXI_REL_FUSE && rel->fused == iv)
            return derives_from(st, texi_bounds_iter_index(st, rel->outer), root_a, depth + 1) ||
                   derives_from(st, texi_bounds_iter_index(st, rel->inner), root_a, depth + 1);
    }
    return false;
}

bool texi_bounds_rounds_up(const texi_bounds *b, int si, int root_a)
{
    const tex_stage *st = b->sch->stages[si];
    for (int r = 0; r < st->n_rel; r++)
        if (st->rel[r].kind == TEXI_REL_SPLIT && b->st[si].tail[r] == TEX_TAIL_ROUND_UP &&
            derives_from(st, texi_bounds_iter_index(st, st->rel[r].parent), root_a, 0))
            return true;
    return false;
}

bool texi_bounds_derives_from(const tex_stage *st, int a, int root_a)
{
    return derives_from(st, a, root_a, 0);
}

/* Whether iter a of st derives from a reduce axis. */
static bool derives_from_reduce(const tex_stage *st, int a)
{
    for (int k = 0; k < st->n_root; k++)
        if (st->root[k]->kind == TEXI_ITER_REDUCE &&
            derives_from(st, a, texi_bounds_iter_index(st, st->root[k]), 0))
            return true;
    return false;
}

/* ------------------------------------------------------ inlined bodies */

typedef struct {
    binf *bi;
    int depth;
    int rc;
} inline_walk;

static tex_expr *stage_body(binf *bi, int si, int depth, int *rc);

/* ACCESS of an inlined tensor -> its body with the axes replaced by the
 * (rewritten) indices. */
static tex_expr *inline_access(tex_expr *e, void *ud)
{
    inline_walk *w = ud;
    if (w->rc || e->kind != TEXI_EXPR_ACCESS)
        return NULL;
    int ti = stage_of_tensor(w->bi->s, e->u.access.tensor);
    if (ti < 0 || w->bi->s->stages[ti]->attach != TEXI_ATTACH_INLINE ||
        !is_compute(w->bi->s->stages[ti]))
        return NULL;
    texi_op *op = w->bi->s->stages[ti]->op;
    tex_expr *body = stage_body(w->bi, ti, w->depth + 1, &w->rc);
    tex_expr **vars = texi_alloc(w->bi->ctx, sizeof *vars * (size_t)(op->n_axes + 1), "inline");
    tex_expr **idx = texi_alloc(w->bi->ctx, sizeof *idx * (size_t)(op->n_axes + 1), "inline");
    if (!body || !vars || !idx || op->n_axes != e->u.access.n_idx) {
        if (!w->rc)
            w->rc = vars && idx ? texi_error(w->bi->ctx, TEX_EINTERNAL,
                                             "bound inference: bad access of inlined '%s'",
                                             e->u.access.tensor->name)
                                : TEX_ENOMEM;
        return e;
    }
    for (int d = 0; d < op->n_axes; d++) {
        vars[d] = op->axes[d]->var;
        /* in the axis's type: a consumer may index in another (a reshape in i64) */
        tex_expr *ix = texi_expr_mutate(e->u.access.idx[d], inline_access, w);
        idx[d] = ix ? texi_convert(ix, vars[d]->dtype) : NULL;
        if (!idx[d] && !w->rc)
            w->rc = TEX_ENOMEM;
    }
    tex_expr *r = w->rc ? NULL : texi_substitute(body, op->n_axes, vars, idx);
    if (!r && !w->rc)
        w->rc = TEX_ENOMEM;
    return r ? r : e;
}

static tex_expr *inline_expr(inline_walk *w, tex_expr *e)
{
    if (!e)
        return NULL;
    tex_expr *r = texi_expr_mutate(e, inline_access, w);
    if (!r && !w->rc)
        w->rc = TEX_ENOMEM;
    return r;
}

/* Stage si's op body with every inlined stage substituted (memoized). */
static tex_expr *stage_body(binf *bi, int si, int depth, int *rc)
{
    texi_stage_bounds *sb = &bi->b->st[si];
    tex_stage *st = bi->s->stages[si];
    if (sb->body || !is_compute(st))
        return sb->body;
    if (depth > bi->s->n_stages) {
        *rc = texi_error(bi->ctx, TEX_EINVAL, "bound inference: stage '%s' is inlined into itself",
                         st->tensor->name);
        return NULL;
    }
    tex_expr *body = st->op->body;
    if (st->attach == TEXI_ATTACH_INLINE && body->kind == TEXI_EXPR_REDUCE) {
        *rc = texi_error(bi->ctx, TEX_EINVAL,
                         "bound inference: stage '%s' is a reduction and cannot be inlined",
                         st->tensor->name);
        return NULL;
    }
    inline_walk w = {bi, depth, 0};
    tex_expr *r;
    if (body->kind == TEXI_EXPR_REDUCE) {
        tex_expr *rb = inline_expr(&w, body->u.red.body), *rc2 = inline_expr(&w, body->u.red.cond);
        r = w.rc ? NULL
                 : texi_reduce_new(body->u.red.op, rb, body->u.red.n_axes, body->u.red.axes, rc2);
    } else {
        r = inline_expr(&w, body);
    }
    if (!r && !w.rc)
        w.rc = TEX_ENOMEM;
    *rc = w.rc;
    sb->body = r;
    return r;
}

/* ------------------------------------------------------ accesses */

typedef struct {
    tex_ctx *ctx;
    const tex_tensor *t; /* NULL: every tensor */
    int n, cap;
    tex_expr **acc;
    bool oom;
} access_walk;

static bool collect_access(tex_expr *e, void *ud)
{
    access_walk *w = ud;
    if (e->kind != TEXI_EXPR_ACCESS || (w->t && e->u.access.tensor != w->t))
        return true;
    tex_expr **a = texi_grow(w->ctx, w->acc, w->n, &w->cap, sizeof *a, "bound inference");
    if (!a) {
        w->oom = true;
        return false;
    }
    w->acc = a;
    w->acc[w->n++] = e;
    return true;
}

/* Every ACCESS of t (NULL: of any tensor) in body, REDUCE parts included. */
static int accesses(tex_ctx *ctx, tex_expr *body, const tex_tensor *t, access_walk *w)
{
    *w = (access_walk){ctx, t, 0, 0, NULL, false};
    if (!body)
        return 0;
    if (body->kind == TEXI_EXPR_REDUCE) {
        texi_expr_visit(body->u.red.body, collect_access, w);
        if (body->u.red.cond)
            texi_expr_visit(body->u.red.cond, collect_access, w);
    } else {
        texi_expr_visit(body, collect_access, w);
    }
    return w->oom ? TEX_ENOMEM : 0;
}

/* ------------------------------------------------------ loops and paths */

/* The loops around stage si, innermost first: its attach stage's leaves from
 * the attach iter outward, then that stage's attach path, and so on. */
static int attach_path(binf *bi, int si, path_ent *out, int *n)
{
    *n = 0;
    const tex_stage *st = bi->s->stages[si];
    for (int hops = 0; st->attach == TEXI_ATTACH_AT; hops++) {
        const tex_stage *a = st->attach_stage;
        int ai = a ? texi_bounds_stage_index(bi->b, a) : -1;
        int leaf = ai >= 0 ? leaf_index(a, st->attach_iv) : -1;
        if (leaf < 0)
            return texi_error(bi->ctx, TEX_EINVAL,
                              "bound inference: stage '%s' is computed at axis '%s', which is "
                              "not a leaf axis of stage '%s'",
                              st->tensor->name, st->attach_iv ? st->attach_iv->name : "?",
                              a ? a->tensor->name : "?");
        if (a->attach == TEXI_ATTACH_INLINE || hops >= bi->s->n_stages)
            return texi_error(bi->ctx, TEX_EINVAL,
                              "bound inference: stage '%s' is computed at stage '%s', which is %s",
                              st->tensor->name, a->tensor->name,
                              a->attach == TEXI_ATTACH_INLINE ? "inlined" : "computed inside it");
        for (int k = leaf; k >= 0 && *n < bi->total_leaves; k--)
            out[(*n)++] = (path_ent){ai, k};
        st = a;
    }
    return 0;
}

static bool in_path(const path_ent *p, int n, int stage, int leaf)
{
    for (int i = 0; i < n; i++)
        if (p[i].stage == stage && p[i].leaf == leaf)
            return true;
    return false;
}

static texi_range loop_range(binf *bi, int si, int leaf)
{
    const tex_stage *st = bi->s->stages[si];
    int a = leaf_all(st, leaf);
    tex_expr *v = bi->b->st[si].var[a];
    texi_range r = {v, imm(bi->ctx, v->dtype, 0), st->range[a].extent};
    return r;
}

static int scope_rank(enum texi_scope s)
{
    switch (s) {
    case TEXI_SCOPE_GLOBAL:
        return 0;
    case TEXI_SCOPE_SHARED:
        return 1;
    case TEXI_SCOPE_LOCAL:
        return 3;
    }
    return 0;
}

/* TVM's NeedRelax: loops inside the attach point are relaxed; outside it,
 * only loops bound to threads that share the buffer (a shared buffer is
 * shared by threadIdx, a global one by blocks and threads too). */
static bool relax_loop(const tex_stage *st, int leaf, bool found, enum texi_scope scope)
{
    if (!found)
        return true;
    const texi_iter_attr *at = &st->attr[leaf_all(st, leaf)];
    if (at->for_kind != TEXI_FOR_THREAD)
        return false;
    int rank = at->thread_tag <= (int)TEX_BLOCK_Z ? 0 : 1;
    return scope_rank(scope) <= rank;
}

/* The loops of consumer ci over which a producer whose loops are pp[0..np)
 * (innermost first) relaxes its region; *found tells whether the producer's
 * attach loop pp[0] encloses the consumer (is one of its loops). */
static int relax_set(binf *bi, int ci, const path_ent *pp, int np, enum texi_scope scope,
                     texi_range *out, int *n, bool *found)
{
    const tex_stage *c = bi->s->stages[ci];
    *found = false;
    *n = 0;
    for (int k = c->n_leaf - 1; k >= 0; k--) {
        *found = *found || in_path(pp, np > 0 ? 1 : 0, ci, k);
        if (relax_loop(c, k, *found, scope))
            out[(*n)++] = loop_range(bi, ci, k);
    }
    path_ent *cp = texi_alloc(bi->ctx, sizeof *cp * (size_t)bi->total_leaves, "bound inference");
    int ncp;
    if (!cp)
        return TEX_ENOMEM;
    TEXI_TRY(attach_path(bi, ci, cp, &ncp));
    for (int i = 0; i < ncp; i++) {
        *found = *found || in_path(pp, np > 0 ? 1 : 0, cp[i].stage, cp[i].leaf);
        if (relax_loop(bi->s->stages[cp[i].stage], cp[i].leaf, *found, scope))
            out[(*n)++] = loop_range(bi, cp[i].stage, cp[i].leaf);
    }
    return 0;
}

/* Ranges of the loops in p[0..n). */
static texi_range *path_ranges(binf *bi, const path_ent *p, int n)
{
    texi_range *r = texi_alloc(bi->ctx, sizeof *r * (size_t)(n + 1), "bound inference");
    for (int i = 0; r && i < n; i++)
        r[i] = loop_range(bi, p[i].stage, p[i].leaf);
    return r;
}

/* ------------------------------------------------------ root intervals */

/* lo/hi clamped to the range and domain of root k of stage ci, both bounded
 * over the relaxed loops (the stage's guards keep values inside them). */
static int clamp_root(binf *bi, int ci, int k, int n, const texi_range *relax, tex_expr **lo,
                      tex_expr **hi)
{
    const tex_stage *st = bi->s->stages[ci];
    const tex_iter *iv = st->root[k];
    const texi_rng *rg = &st->range[texi_bounds_iter_index(st, iv)];
    tex_expr *one = imm(bi->ctx, iv->var->dtype, 1), *l, *h, *l2, *h2;
    bool ok, ok2;
    TEXI_TRY(try_bounds(bi->ctx, rg->min, n, relax, &l, &h, &ok));
    TEXI_TRY(try_bounds(bi->ctx, ARITH(SUB, ARITH(ADD, rg->min, rg->extent), one), n, relax, &l2,
                        &h2, &ok2));
    if (ok)
        *lo = ARITH(MAX, *lo, l);
    if (ok2)
        *hi = ARITH(MIN, *hi, h2);
    *lo = ARITH(MAX, *lo, iv->min);
    *hi = ARITH(MIN, *hi, ARITH(SUB, ARITH(ADD, iv->min, iv->extent), one));
    return *lo && *hi ? 0 : TEX_ENOMEM;
}

/* Whether every leaf of stage ci derived from iter a is among relax[0..n). */
static bool fully_relaxed(binf *bi, int ci, int a, int n, const texi_range *relax)
{
    const tex_stage *st = bi->s->stages[ci];
    for (int k = 0; k < st->n_leaf; k++) {
        int l = leaf_all(st, k);
        bool in = false;
        for (int i = 0; i < n && !in; i++)
            in = relax[i].var == bi->b->st[ci].var[l];
        if (!in && derives_from(st, l, a, 0))
            return false;
    }
    return true;
}

/* Product of the extents of stage ci's leaves derived from iter a: every
 * offset of a (from its range's min) is below it, rounded-up tails included. */
static tex_expr *leaf_span(binf *bi, int ci, int a)
{
    const tex_stage *st = bi->s->stages[ci];
    tex_expr *p = imm(bi->ctx, st->all[a]->var->dtype, 1);
    for (int k = 0; p && k < st->n_leaf; k++)
        if (derives_from(st, leaf_all(st, k), a, 0))
            p = ARITH(MUL, p, st->range[leaf_all(st, k)].extent);
    return p;
}

/* Bounds over relax of root a of stage ci, whose values lie in
 * [range.min, range.min + ext - 1]; false when they cannot be bounded. */
static int hull_bounds(binf *bi, int ci, int a, tex_expr *ext, int n, const texi_range *relax,
                       tex_expr **lo, tex_expr **hi, bool *ok)
{
    const tex_stage *st = bi->s->stages[ci];
    tex_expr *min = st->range[a].min, *l2, *h2;
    bool ok2;
    TEXI_TRY(try_bounds(bi->ctx, min, n, relax, lo, hi, ok));
    TEXI_TRY(try_bounds(bi->ctx, ext, n, relax, &l2, &h2, &ok2));
    *ok = *ok && ok2;
    if (*ok)
        *hi = ARITH(SUB, ARITH(ADD, *hi, h2), imm(bi->ctx, h2->dtype, 1));
    return *ok && !*hi ? TEX_ENOMEM : 0;
}

/* The interval [lo[k], hi[k]] of each root value of stage ci when the loops in
 * relax[0..n) run over their ranges (the others stay symbolic). A root all of
 * whose loops are relaxed spans its range exactly (TVM's MatchRange), which
 * the bounds of its PassUp value would overestimate for non-divisible splits.
 * A value that cannot be bounded spans the axis's domain, or, when it rounds
 * up, [range.min, range.min + product of its leaves' extents). The results
 * never name a relaxed variable. */
static int root_intervals(binf *bi, int ci, int n, const texi_range *relax, tex_expr **lo,
                          tex_expr **hi)
{
    tex_stage *st = bi->s->stages[ci];
    texi_stage_bounds *sb = &bi->b->st[ci];
    tex_expr **val = texi_alloc(bi->ctx, sizeof *val * (size_t)(st->n_all + 1), "bound inference");
    if (!val)
        return TEX_ENOMEM;
    for (int k = 0; k < st->n_leaf; k++)
        val[leaf_all(st, k)] = sb->var[leaf_all(st, k)];
    TEXI_TRY(texi_bounds_pass_up(bi->b, ci, val));
    for (int k = 0; k < st->n_root; k++) {
        const tex_iter *iv = st->root[k];
        int a = texi_bounds_iter_index(st, iv);
        bool ok, ru = texi_bounds_rounds_up(bi->b, ci, a);
        if (!ru && fully_relaxed(bi, ci, a, n, relax))
            TEXI_TRY(hull_bounds(bi, ci, a, st->range[a].extent, n, relax, &lo[k], &hi[k], &ok));
        else
            TEXI_TRY(try_bounds(bi->ctx, val[a], n, relax, &lo[k], &hi[k], &ok));
        if (!ok && ru)
            TEXI_TRY(hull_bounds(bi, ci, a, leaf_span(bi, ci, a), n, relax, &lo[k], &hi[k], &ok));
        if (!ok) {
            lo[k] = iv->min;
            hi[k] = ARITH(SUB, ARITH(ADD, iv->min, iv->extent), imm(bi->ctx, iv->var->dtype, 1));
            if (ru) /* unknown: no read can be proven inside a shape */
                hi[k] = ARITH(ADD, hi[k], ARITH(MUL, leaf_span(bi, ci, a), iv->extent));
        }
        if (!ru)
            TEXI_TRY(clamp_root(bi, ci, k, n, relax, &lo[k], &hi[k]));
        lo[k] = simp(lo[k], 0, NULL);
        hi[k] = simp(hi[k], 0, NULL);
        if (!lo[k] || !hi[k])
            return TEX_ENOMEM;
    }
    return 0;
}

/* Ranges of the root variables (as the body names them) over the intervals. */
static texi_range *root_ranges(binf *bi, int ci, tex_expr **lo, tex_expr **hi)
{
    const tex_stage *st = bi->s->stages[ci];
    texi_range *r = texi_alloc(bi->ctx, sizeof *r * (size_t)(st->n_root + 1), "bound inference");
    for (int k = 0; r && k < st->n_root; k++) {
        tex_expr *one = imm(bi->ctx, hi[k]->dtype, 1);
        r[k] = (texi_range){st->root[k]->var, lo[k],
                            simp(ARITH(ADD, ARITH(SUB, hi[k], lo[k]), one), 0, NULL)};
        if (!r[k].extent)
            return NULL;
    }
    return r;
}

static bool is_min_max(const tex_expr *e)
{
    return e->kind == TEXI_EXPR_MIN || e->kind == TEXI_EXPR_MAX;
}

/* Whether e is min/max(...) + c with c an integer constant (the simplifier
 * takes a common constant out: min(o*4 + 3, n + 3) = min(o*4, n) + 3). */
static bool is_min_max_plus_const(const tex_expr *e)
{
    int64_t c;
    return e->kind == TEXI_EXPR_ADD && is_min_max(e->u.bin.a) &&
           texi_expr_is_int_const(e->u.bin.b, &c);
}

/* hi - lo + 1 with min/max distributed over the subtraction (hi - max(a, b)
 * = min(hi - a, hi - b), ...), also under an added constant, so that
 * maximizing it over the enclosing loops keeps the correlation between both
 * ends: min(o*4 + 3, 9) - o*4 + 1 becomes min(4, 10 - o*4), whose maximum is
 * 4, and so does min(o*4, n) + 3 - o*4 + 1 (min(4, n - o*4 + 4)). */
static tex_expr *span(tex_expr *hi, tex_expr *lo, int depth)
{
    if (!hi || !lo)
        return NULL;
    bool hi_mm = is_min_max(hi), lo_mm = is_min_max(lo);
    if (depth < 6 && is_min_max_plus_const(hi))
        return ARITH(ADD, span(hi->u.bin.a, lo, depth + 1), hi->u.bin.b);
    if (depth < 6 && is_min_max_plus_const(lo))
        return ARITH(SUB, span(hi, lo->u.bin.a, depth + 1), lo->u.bin.b);
    if (depth < 6 && hi_mm)
        return texi_bounds_arith(hi->kind, span(hi->u.bin.a, lo, depth + 1),
                                 span(hi->u.bin.b, lo, depth + 1));
    if (depth < 6 && lo_mm)
        return texi_bounds_arith(lo->kind == TEXI_EXPR_MAX ? TEXI_EXPR_MIN : TEXI_EXPR_MAX,
                                 span(hi, lo->u.bin.a, depth + 1),
                                 span(hi, lo->u.bin.b, depth + 1));
    return ARITH(ADD, ARITH(SUB, hi, lo), imm(hi->ctx, hi->dtype, 1));
}

/* ------------------------------------------------------ needed regions */

typedef struct {
    int nd;
    tex_expr **lo, **hi; /* per dimension: union so far, NULL when nothing read */
} region_acc;

/* Adds the accesses in w, evaluated over consumer ci's root ranges rr. */
static int add_accesses(binf *bi, const tex_tensor *t, const access_walk *w, const texi_range *rr,
                        int nr, region_acc *ra)
{
    for (int i = 0; i < w->n; i++) {
        for (int d = 0; d < ra->nd; d++) {
            tex_expr *l, *h;
            bool ok;
            TEXI_TRY(try_bounds(bi->ctx, w->acc[i]->u.access.idx[d], nr, rr, &l, &h, &ok));
            if (!ok) {
                l = imm(bi->ctx, t->shape[d]->dtype, 0);
                h = ARITH(SUB, t->shape[d], imm(bi->ctx, t->shape[d]->dtype, 1));
            }
            ra->lo[d] = ra->lo[d] ? ARITH(MIN, ra->lo[d], l) : l;
            ra->hi[d] = ra->hi[d] ? ARITH(MAX, ra->hi[d], h) : h;
            if (!ra->lo[d] || !ra->hi[d])
                return TEX_ENOMEM;
        }
    }
    return 0;
}

/* max(e, 0) where e names a loop of pr[0..np) and e >= 0 is not provable
 * there: an extent that stays symbolic in the enclosing loops may be negative
 * where a consumer's tail iteration lies past the domain (the consumer's
 * guard skips every use there); the producer's loops then run no iteration.
 * Loop-invariant extents are sizes, non-negative for any valid call. */
static tex_expr *nonneg(tex_expr *e, int np, const texi_range *pr)
{
    if (!e || !ranged(e, np, pr))
        return e;
    tex_expr *zero = imm(e->ctx, e->dtype, 0), *ge = ARITH(GE, e, zero);
    if (!ge)
        return NULL;
    return texi_prove(ge, np, pr) ? e : simp(ARITH(MAX, e, zero), 0, NULL);
}

/* What consumer ci reads of producer pi (whose loops are pp[0..np)). */
static int consumer_region(binf *bi, int pi, int ci, const path_ent *pp, int np, region_acc *ra)
{
    const tex_stage *p = bi->s->stages[pi], *c = bi->s->stages[ci];
    access_walk w;
    TEXI_TRY(accesses(bi->ctx, bi->b->st[ci].body, p->tensor, &w));
    if (w.n == 0)
        return 0;
    texi_range *relax =
        texi_alloc(bi->ctx, sizeof *relax * (size_t)(bi->total_leaves + 1), "bound inference");
    tex_expr **lo = texi_alloc(bi->ctx, sizeof *lo * (size_t)(c->n_root + 1), "bound inference");
    tex_expr **hi = texi_alloc(bi->ctx, sizeof *hi * (size_t)(c->n_root + 1), "bound inference");
    int n;
    bool found;
    if (!relax || !lo || !hi)
        return TEX_ENOMEM;
    TEXI_TRY(relax_set(bi, ci, pp, np, p->scope, relax, &n, &found));
    if (p->attach == TEXI_ATTACH_AT && !found)
        return texi_error(bi->ctx, TEX_EINVAL,
                          "bound inference: stage '%s' is computed at axis '%s' of stage '%s', "
                          "but its consumer '%s' does not run inside that loop",
                          p->tensor->name, p->attach_iv->name, p->attach_stage->tensor->name,
                          c->tensor->name);
    TEXI_TRY(root_intervals(bi, ci, n, relax, lo, hi));
    texi_range *rr = root_ranges(bi, ci, lo, hi);
    if (!rr)
        return TEX_ENOMEM;
    return add_accesses(bi, p->tensor, &w, rr, c->n_root, ra);
}

/* Whether e has a constant upper bound over pr[0..np), into *hi. An added
 * constant is taken apart first (min(n - o, 0) + 4 is at most 4): the
 * interval of the sum gives up when an operand is unbounded below, an i32
 * size being unbounded in the intervals. */
static bool const_upper(const tex_expr *e, int np, const texi_range *pr, int64_t *hi)
{
    int64_t c;
    if (e->kind == TEXI_EXPR_ADD && texi_expr_is_int_const(e->u.bin.b, &c) &&
        const_upper(e->u.bin.a, np, pr, hi)) {
        *hi = texi_arith_sat_add(*hi, c);
        return *hi != TEXI_POS_INF;
    }
    texi_interval iv = texi_const_interval(e, np, pr);
    *hi = iv.hi;
    return !iv.hi_inf;
}

/* e, or the constant it cannot exceed over pr[0..np) where e is not a
 * constant itself: a tile of a symbolic size, min(M, 4), becomes 4. The
 * extra rows lie past the domain (ScheduleOps guards them), and constant
 * extents keep per-thread tiles in registers, shared tiles' indices free of
 * divisions by sizes and loops unrollable. */
static tex_expr *const_cap(tex_expr *e, int np, const texi_range *pr)
{
    int64_t v, hi;
    if (!e || texi_expr_is_int_const(e, &v))
        return e;
    return const_upper(e, np, pr, &hi) && hi >= 0 ? imm(e->ctx, e->dtype, hi) : e;
}

static bool symbolic_division(tex_expr *e, void *ud)
{
    bool *found = ud;
    int64_t c;
    *found = *found || ((e->kind == TEXI_EXPR_FLOORDIV || e->kind == TEXI_EXPR_FLOORMOD) &&
                        !texi_expr_is_int_const(e->u.bin.b, &c));
    return !*found;
}

/* Whether e divides by a non-constant: a region of a root stage read
 * through such an index (a reshape's flat index of symbolic sizes) is, in
 * practice, its whole domain, which bound inference cannot prove;
 * fit_root_region takes the domain instead, whose plain extents later
 * passes (and the CUDA backend's buffer bounds) can use. */
static bool divides_by_symbol(tex_expr *e)
{
    bool found = false;
    texi_expr_visit(e, symbolic_division, &found);
    return found;
}

/* Whether the region's end `end` provably reaches the domain's end `dend`
 * (upper: end >= dend, else end <= dend) and is not provably the same: a
 * region that may stop exactly at the domain's edge is cut too (a concat of
 * n rows with itself reads [-n, 2n), n >= 0), one that is the domain stays
 * as it is. */
static bool passes(const binf *bi, tex_expr *end, tex_expr *dend, bool upper)
{
    tex_expr *reach = upper ? ARITH(GE, end, dend) : ARITH(LE, end, dend);
    tex_expr *same = ARITH(EQ, end, dend);
    return reach && same && texi_prove(reach, bi->n_sizes, bi->sizes) &&
           !texi_prove(same, bi->n_sizes, bi->sizes);
}

/* A root stage's region r of axis ax fitted to ax's domain: the whole
 * domain when r divides by a symbolic size (divides_by_symbol), else r cut
 * to the domain on each side where it provably passes it: a consumer that
 * selects between tensors (a concat, a pad) reads them past their shapes,
 * and the reads past them are never used; computing the producer there
 * would be work for nothing, and on CUDA would repeat its per-row members. */
static int fit_root_region(const binf *bi, const tex_iter *ax, texi_rng *r)
{
    if (divides_by_symbol(r->min) || divides_by_symbol(r->extent)) {
        *r = (texi_rng){ax->min, ax->extent};
        return 0;
    }
    tex_expr *hi = ARITH(ADD, r->min, r->extent), *dhi = ARITH(ADD, ax->min, ax->extent);
    int n = bi->n_sizes;
    bool cut_lo = passes(bi, r->min, ax->min, false), cut_hi = passes(bi, hi, dhi, true);
    if (!cut_lo && !cut_hi)
        return 0;
    tex_expr *lo = cut_lo ? ax->min : r->min;
    r->min = simp(texi_convert(lo, r->min->dtype), n, bi->sizes);
    tex_expr *ext = ARITH(SUB, cut_hi ? dhi : hi, lo); /* < 0: it lies past the domain */
    r->extent = ext ? simp(ARITH(MAX, ext, imm(ext->ctx, ext->dtype, 0)), n, bi->sizes) : NULL;
    return r->min && r->extent ? 0 : TEX_ENOMEM;
}

/* The region of stage pi's tensor its consumers need: mins over the loops
 * around pi, extents maximized over them. *any is false when nobody reads it. */
static int needed_region(binf *bi, int pi, texi_rng *out, bool *any)
{
    const tex_stage *p = bi->s->stages[pi];
    int nd = p->tensor->ndim, np;
    region_acc ra = {nd, texi_alloc(bi->ctx, sizeof(tex_expr *) * (size_t)(nd + 1), "region"),
                     texi_alloc(bi->ctx, sizeof(tex_expr *) * (size_t)(nd + 1), "region")};
    path_ent *pp = texi_alloc(bi->ctx, sizeof *pp * (size_t)(bi->total_leaves + 1), "region");
    if (!ra.lo || !ra.hi || !pp)
        return TEX_ENOMEM;
    TEXI_TRY(attach_path(bi, pi, pp, &np));
    for (int ci = 0; ci < bi->s->n_stages; ci++) {
        const tex_stage *c = bi->s->stages[ci];
        if (ci != pi && is_compute(c) && c->attach != TEXI_ATTACH_INLINE)
            TEXI_TRY(consumer_region(bi, pi, ci, pp, np, &ra));
    }
    *any = nd > 0 && ra.lo[0];
    if (!*any)
        return 0;
    texi_range *pr = path_ranges(bi, pp, np);
    if (!pr)
        return TEX_ENOMEM;
    for (int d = 0; d < nd; d++) {
        int rc;
        out[d].min = simp(ra.lo[d], np, pr);
        out[d].extent = simp(span(simp(ra.hi[d], np, pr), out[d].min, 0), np, pr);
        out[d].extent = nonneg(simp(upper(bi->ctx, out[d].extent, np, pr, &rc), 0, NULL), np, pr);
        if (np > 0)
            out[d].extent = const_cap(out[d].extent, np, pr);
        if (rc < 0 || !out[d].min || !out[d].extent)
            return rc < 0 ? rc : TEX_ENOMEM;
        if (np == 0)
            TEXI_TRY(fit_root_region(bi, p->op->axes[d], &out[d]));
    }
    return 0;
}

/* ------------------------------------------------------ tails */

/* Whether every read of stage si stays inside the declared shapes when its
 * loops run over their whole ranges (round-up axes unguarded). */
static int reads_in_shapes(binf *bi, int si, bool *legal)
{
    tex_stage *st = bi->s->stages[si];
    int np, n = st->n_leaf;
    path_ent *pp = texi_alloc(bi->ctx, sizeof *pp * (size_t)(bi->total_leaves + 1), "tail");
    texi_range *relax = texi_alloc(bi->ctx, sizeof *relax * (size_t)(n + 1), "tail");
    tex_expr **lo = texi_alloc(bi->ctx, sizeof *lo * (size_t)(st->n_root + 1), "tail");
    tex_expr **hi = texi_alloc(bi->ctx, sizeof *hi * (size_t)(st->n_root + 1), "tail");
    access_walk w;
    if (!pp || !relax || !lo || !hi)
        return TEX_ENOMEM;
    TEXI_TRY(attach_path(bi, si, pp, &np));
    for (int k = 0; k < n; k++)
        relax[k] = loop_range(bi, si, k);
    TEXI_TRY(root_intervals(bi, si, n, relax, lo, hi));
    texi_range *rr = root_ranges(bi, si, lo, hi), *pr = path_ranges(bi, pp, np);
    if (!rr || !pr)
        return TEX_ENOMEM;
    TEXI_TRY(accesses(bi->ctx, bi->b->st[si].body, NULL, &w));
    *legal = true;
    for (int i = 0; i < w.n && *legal; i++) {
        const tex_tensor *t = w.acc[i]->u.access.tensor;
        for (int d = 0; d < t->ndim && *legal; d++) {
            tex_expr *l, *h;
            bool ok;
            TEXI_TRY(try_bounds(bi->ctx, w.acc[i]->u.access.idx[d], st->n_root, rr, &l, &h, &ok));
            tex_expr *in =
                ok ? ARITH(AND, ARITH(GE, l, imm(bi->ctx, l->dtype, 0)), ARITH(LT, h, t->shape[d]))
                   : NULL;
            *legal = in && texi_prove(in, np, pr);
        }
    }
    return 0;
}

/* Sets tail[r] of every split of stage si whose factor may not divide the
 * extent to the requested strategy; marks ROUND_UP/AUTO candidates. */
static int request_tails(binf *bi, int si, bool *cand, bool *explicit_ru)
{
    tex_stage *st = bi->s->stages[si];
    texi_stage_bounds *sb = &bi->b->st[si];
    for (int r = 0; r < st->n_rel; r++) {
        const texi_relation *rel = &st->rel[r];
        cand[r] = explicit_ru[r] = false;
        sb->tail[r] = TEX_TAIL_GUARD;
        if (rel->kind != TEXI_REL_SPLIT)
            continue;
        int p = texi_bounds_iter_index(st, rel->parent);
        tex_expr *ext = st->range[p].extent, *d = rel->factor ? rel->factor : rel->nparts;
        tex_expr *rem = ARITH(FLOORMOD, ext, d);
        if (!rem)
            return TEX_ENOMEM;
        if (texi_prove(ARITH(EQ, rem, imm(bi->ctx, rem->dtype, 0)), 0, NULL))
            continue;
        bool ru_ok = !sb->full && !derives_from_reduce(st, p);
        switch (rel->tail) {
        case TEX_TAIL_GUARD:
        case TEX_TAIL_PREDICATE:
        case TEX_TAIL_SHIFT_INWARDS:
            sb->tail[r] = rel->tail;
            break;
        case TEX_TAIL_ROUND_UP:
            explicit_ru[r] = true;
            if (!ru_ok && sb->bad_rel < 0)
                sb->bad_rel = r;
            cand[r] = ru_ok;
            break;
        case TEX_TAIL_AUTO:
            cand[r] = ru_ok;
            break;
        }
    }
    return 0;
}

/* Applies ROUND_UP to the candidates where legal (explicit requests first
 * together with AUTO ones, then alone); an illegal explicit one is bad_rel. */
static int resolve_tails(binf *bi, int si)
{
    tex_stage *st = bi->s->stages[si];
    texi_stage_bounds *sb = &bi->b->st[si];
    bool *cand = texi_alloc(bi->ctx, sizeof *cand * (size_t)(st->n_rel + 1), "tail");
    bool *expl = texi_alloc(bi->ctx, sizeof *expl * (size_t)(st->n_rel + 1), "tail");
    if (!cand || !expl)
        return TEX_ENOMEM;
    TEXI_TRY(request_tails(bi, si, cand, expl));
    for (int pass = 0; pass < 2; pass++) {
        bool any = false, legal = false;
        for (int r = 0; r < st->n_rel; r++) {
            bool use = cand[r] && (pass == 0 || expl[r]);
            sb->tail[r] = use ? TEX_TAIL_ROUND_UP
                              : (sb->tail[r] == TEX_TAIL_ROUND_UP ? TEX_TAIL_GUARD : sb->tail[r]);
            any = any || use;
        }
        if (!any)
            return 0;
        TEXI_TRY(reads_in_shapes(bi, si, &legal));
        if (legal)
            return 0;
    }
    for (int r = 0; r < st->n_rel; r++) {
        if (sb->tail[r] == TEX_TAIL_ROUND_UP)
            sb->tail[r] = TEX_TAIL_GUARD;
        if (expl[r] && sb->bad_rel < 0)
            sb->bad_rel = r;
    }
    return 0;
}

/* ------------------------------------------------------ stages */

/* The written region: the data roots' ranges, enlarged on round-up axes. */
static int written_region(binf *bi, int si)
{
    tex_stage *st = bi->s->stages[si];
    int nd = st->op->n_axes, np, n = st->n_leaf;
    path_ent *pp = texi_alloc(bi->ctx, sizeof *pp * (size_t)(bi->total_leaves + 1), "region");
    texi_range *relax = texi_alloc(bi->ctx, sizeof *relax * (size_t)(n + 1), "region");
    tex_expr **lo = texi_alloc(bi->ctx, sizeof *lo * (size_t)(st->n_root + 1), "region");
    tex_expr **hi = texi_alloc(bi->ctx, sizeof *hi * (size_t)(st->n_root + 1), "region");
    if (!pp || !relax || !lo || !hi)
        return TEX_ENOMEM;
    bool any = false;
    for (int d = 0; d < nd; d++) {
        int a = texi_bounds_iter_index(st, st->root[d]);
        st->region[d] = st->range[a];
        any = any || texi_bounds_rounds_up(bi->b, si, a);
    }
    if (!any)
        return 0;
    TEXI_TRY(attach_path(bi, si, pp, &np));
    for (int k = 0; k < n; k++)
        relax[k] = loop_range(bi, si, k);
    TEXI_TRY(root_intervals(bi, si, n, relax, lo, hi));
    texi_range *pr = path_ranges(bi, pp, np);
    if (!pr)
        return TEX_ENOMEM;
    for (int d = 0; d < nd; d++) {
        int rc;
        tex_expr *ext = simp(span(hi[d], st->region[d].min, 0), np, pr);
        st->region[d].extent = nonneg(simp(upper(bi->ctx, ext, np, pr, &rc), 0, NULL), np, pr);
        if (rc < 0 || !st->region[d].extent)
            return rc < 0 ? rc : TEX_ENOMEM;
    }
    return 0;
}

/* Root ranges of stage si (step 1 of the file comment). */
static int root_ranges_of_stage(binf *bi, int si)
{
    tex_stage *st = bi->s->stages[si];
    texi_stage_bounds *sb = &bi->b->st[si];
    for (int k = 0; k < st->n_root; k++) {
        int a = texi_bounds_iter_index(st, st->root[k]);
        st->range[a] = (texi_rng){st->root[k]->min, st->root[k]->extent};
    }
    if (sb->full && st->attach == TEXI_ATTACH_AT)
        return texi_error(bi->ctx, TEX_EINVAL,
                          "bound inference: stage '%s' is %s and must be computed at root, not at "
                          "axis '%s' of stage '%s'",
                          st->tensor->name, st->is_output ? "an output" : "a function parameter",
                          st->attach_iv->name, st->attach_stage->tensor->name);
    if (sb->full || st->attach == TEXI_ATTACH_INLINE)
        return 0;
    int nd = st->op->n_axes;
    texi_rng *need = texi_alloc(bi->ctx, sizeof *need * (size_t)(nd + 1), "region");
    bool any;
    if (!need)
        return TEX_ENOMEM;
    TEXI_TRY(needed_region(bi, si, need, &any));
    for (int d = 0; any && d < nd; d++) {
        tex_dtype t = st->root[d]->var->dtype; /* the consumers may index in another type */
        texi_rng r = {texi_simplify(texi_convert(need[d].min, t), 0, NULL),
                      texi_simplify(texi_convert(need[d].extent, t), 0, NULL)};
        if (!r.min || !r.extent)
            return TEX_ENOMEM;
        st->range[texi_bounds_iter_index(st, st->root[d])] = r;
    }
    return 0;
}

static int infer_stage(binf *bi, int si)
{
    tex_stage *st = bi->s->stages[si];
    if (!is_compute(st)) {
        for (int d = 0; d < st->tensor->ndim; d++)
            st->region[d] =
                (texi_rng){imm(bi->ctx, st->tensor->shape[d]->dtype, 0), st->tensor->shape[d]};
        return 0;
    }
    TEXI_TRY(root_ranges_of_stage(bi, si));
    TEXI_TRY(pass_down(bi, st));
    if (st->attach != TEXI_ATTACH_INLINE)
        TEXI_TRY(resolve_tails(bi, si));
    return written_region(bi, si);
}

static bool listed(int n, tex_tensor *const ts[], const tex_tensor *t)
{
    for (int i = 0; i < n; i++)
        if (ts[i] == t)
            return true;
    return false;
}

/* Per-stage arrays and fresh variables. */
static int init_stage(binf *bi, int si, int n_full, tex_tensor *const full[])
{
    tex_stage *st = bi->s->stages[si];
    texi_stage_bounds *sb = &bi->b->st[si];
    tex_ctx *ctx = bi->ctx;
    sb->bad_rel = -1;
    sb->full = st->is_output || listed(n_full, full, st->tensor);
    sb->var = texi_alloc(ctx, sizeof *sb->var * (size_t)(st->n_all + 1), "bound inference");
    sb->tail = texi_alloc(ctx, sizeof *sb->tail * (size_t)(st->n_rel + 1), "bound inference");
    st->range = texi_alloc(ctx, sizeof *st->range * (size_t)(st->n_all + 1), "bound inference");
    st->region = texi_alloc(ctx, sizeof *st->region * (size_t)(st->tensor->ndim + 1), "region");
    if (!sb->var || !sb->tail || !st->range || !st->region)
        return TEX_ENOMEM;
    for (int a = 0; a < st->n_all; a++) {
        sb->var[a] = texi_var_new(ctx, st->all[a]->name, st->all[a]->var->dtype);
        if (!sb->var[a])
            return TEX_ENOMEM;
    }
    for (int r = 0; r < st->n_rel; r++)
        sb->tail[r] = TEX_TAIL_GUARD;
    bi->total_leaves += st->n_leaf;
    return 0;
}

/* The variables that are a whole dimension of a placeholder of the
 * schedule (A[n, 4]: n): a call binds them from an array's shape, so they
 * are never negative, which fit_root_region's proofs may use (a concat of
 * a tensor of n rows with itself reads it up to 2n: past its n rows only
 * because n >= 0). Their ranges go to bi->sizes. */
static int size_ranges(binf *bi)
{
    int cap = 0;
    for (int si = 0; si < bi->s->n_stages; si++)
        cap += bi->s->stages[si]->tensor->ndim;
    bi->sizes = texi_alloc(bi->ctx, sizeof *bi->sizes * (size_t)(cap + 1), "bound inference");
    if (!bi->sizes)
        return TEX_ENOMEM;
    for (int si = 0; si < bi->s->n_stages; si++) {
        const tex_stage *st = bi->s->stages[si];
        const tex_tensor *t = st->tensor;
        for (int d = 0; st->op && st->op->kind == TEXI_OP_PLACEHOLDER && d < t->ndim; d++) {
            tex_expr *v = t->shape[d];
            int k = 0;
            while (k < bi->n_sizes && bi->sizes[k].var != v)
                k++;
            if (v->kind != TEXI_EXPR_VAR || v->u.var.iter || k < bi->n_sizes ||
                !texi_dtype_is_int(v->dtype))
                continue;
            tex_expr *max = imm(bi->ctx, v->dtype, texi_ival_type(v->dtype).hi);
            if (!max)
                return TEX_ENOMEM;
            bi->sizes[bi->n_sizes++] = (texi_range){v, imm(bi->ctx, v->dtype, 0), max};
        }
    }
    return 0;
}

int texi_infer_bounds_ex(tex_schedule *s, int n_full, tex_tensor *const full[], texi_bounds *out)
{
    if (!s || !out)
        return TEX_EMISUSE;
    binf bi = {s->ctx, s, out, 0, 0, NULL};
    TEXI_TRY(size_ranges(&bi));
    out->sch = s;
    out->st = texi_alloc(s->ctx, sizeof *out->st * (size_t)(s->n_stages + 1), "bound inference");
    if (!out->st)
        return TEX_ENOMEM;
    for (int si = 0; si < s->n_stages; si++)
        TEXI_TRY(init_stage(&bi, si, n_full, full));
    for (int si = 0; si < s->n_stages; si++) {
        int rc = 0;
        if (!stage_body(&bi, si, 0, &rc) && rc < 0)
            return rc;
    }
    for (int si = s->n_stages - 1; si >= 0; si--)
        TEXI_TRY(infer_stage(&bi, si));
    out->n_sizes = bi.n_sizes;
    out->sizes = bi.sizes;
    return 0;
}

int texi_infer_bounds(tex_schedule *s)
{
    texi_bounds b;
    return texi_infer_bounds_ex(s, 0, NULL, &b);
}
