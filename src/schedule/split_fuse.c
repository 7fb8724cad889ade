/*
 * The loop-structure primitives: split (by factor or by nparts, with a tail
 * strategy), tile, fuse and reorder.
 *
 * They only edit a stage's iteration-variable forest (schedule.h): split
 * replaces leaf `iv` by two new iters `iv.outer`, `iv.inner` (in that order,
 * at iv's position) and records a SPLIT relation; fuse replaces two adjacent
 * leaves by `outer.inner.fused` and records a FUSE relation; reorder permutes
 * the named leaves among the positions they occupy (TVM's semantics: leaves
 * not named stay where they are). New iters inherit the kind of their parent
 * (fusing a reduce axis with a data axis is refused) and get fresh VARs.
 *
 * Extents recorded on the new iters are nominal, for display and for the
 * legality checks made here: by factor f on extent e, inner = f and outer =
 * ceildiv(e, f); by nparts p, outer = p and inner = ceildiv(e, p); fused =
 * product. Bound inference (bound.c) computes the true ranges.
 *
 * Legality decided here (docs/api.md, rules 5 and 6): the axis must be a leaf of
 * this stage; a factor is a positive integer expression of constants and
 * symbolic sizes; SHIFT_INWARDS needs a stage without reduction and, for a
 * constant extent, extent >= factor; an axis that carries an annotation
 * (parallel, bind, ...) or is the attach point of another stage cannot be
 * split or fused (the annotation or attachment would silently be lost).
 * Everything is validated and allocated before the stage changes.
 */
#include "ir/arith.h"
#include "schedule/primitive.h"
#include "schedule/trace.h"

#include <stdio.h>

/* Visitor: flags nodes a factor may not contain. */
static bool factor_node_ok(tex_expr *e, void *ud)
{
    bool *bad = ud;
    if ((e->kind == TEXI_EXPR_VAR && e->u.var.iter) || e->kind == TEXI_EXPR_ACCESS ||
        e->kind == TEXI_EXPR_LOAD || e->kind == TEXI_EXPR_SEARCH || e->kind == TEXI_EXPR_REDUCE)
        *bad = true;
    return !*bad;
}

/* Whether a split of iv by the constant v (a factor or a number of parts)
 * keeps the lowering's index arithmetic within iv's index type: the outer
 * extent is (e + v - 1) / v and the rebuilt index below e + v - 1, with e
 * iv's constant extent, or 1 when it is symbolic (its value, bound at call
 * time, is the caller's to keep in range). */
static bool fits_index(const tex_iter *iv, int64_t v)
{
    int64_t max = texi_ival_type(iv->var->dtype).hi, e = 1;
    if (!texi_expr_is_int_const(iv->extent, &e) || e < 1)
        e = 1;
    return v <= max && e - 1 <= max - v;
}

static int check_factor(const tex_stage *st, const tex_iter *iv, tex_expr *f, const char *call,
                        const char *what)
{
    tex_ctx *ctx = st->sch->ctx;
    const char *sn = st->tensor->name;
    if (!f)
        return texi_error(ctx, TEX_EMISUSE, "%s: stage '%s', axis '%s': the %s is NULL", call, sn,
                          iv->name, what);
    if (f->ctx != ctx)
        return texi_error(ctx, TEX_EMISUSE,
                          "%s: stage '%s', axis '%s': the %s comes from another "
                          "context",
                          call, sn, iv->name, what);
    if (!texi_dtype_is_int(f->dtype))
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s', axis '%s': the %s is %s, expected an "
                          "integer",
                          call, sn, iv->name, what, tex_dtype_name(f->dtype));
    int64_t v;
    bool known = texi_expr_is_int_const(f, &v);
    if (known && (texi_dtype_is_signed(f->dtype) ? v <= 0 : v == 0))
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s', axis '%s': the %s must be positive "
                          "(got %lld)",
                          call, sn, iv->name, what, (long long)v);
    if (known && !fits_index(iv, v))
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s', axis '%s': the %s %lld is too large for the axis "
                          "(%s - 1 plus the axis's extent must fit its index type, %s)",
                          call, sn, iv->name, what, (long long)v, what,
                          tex_dtype_name(iv->var->dtype));
    bool bad = false;
    texi_expr_visit(f, factor_node_ok, &bad);
    if (bad)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s', axis '%s': the %s must be built from "
                          "constants and symbolic sizes only",
                          call, sn, iv->name, what);
    return 0;
}

/* iv is a leaf of st that may be restructured (split or fused). */
static int check_restructurable(const tex_stage *st, const tex_iter *iv, const char *call)
{
    TEXI_TRY(texi_stage_check_leaf(st, iv, call));
    TEXI_TRY(texi_prefetch_check(st, iv, NULL, call));
    tex_ctx *ctx = st->sch->ctx;
    const texi_iter_attr *attr = &st->attr[texi_stage_iter_index(st, iv)];
    if (attr->for_kind != TEXI_FOR_SERIAL)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: axis '%s' of stage '%s' is already %s; split and "
                          "fuse axes before annotating them",
                          call, iv->name, st->tensor->name, texi_iter_attr_name(attr));
    const tex_stage *child = texi_schedule_attached_at(st->sch, st, iv);
    if (child)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: axis '%s' of stage '%s' is the attach point of "
                          "stage '%s' (compute_at); split and fuse axes before compute_at",
                          call, iv->name, st->tensor->name, child->tensor->name);
    return 0;
}

static int check_tail(const tex_stage *st, const tex_iter *iv, tex_expr *factor, tex_tail tail,
                      const char *call)
{
    tex_ctx *ctx = st->sch->ctx;
    if ((int)tail < (int)TEX_TAIL_AUTO || (int)tail > (int)TEX_TAIL_PREDICATE)
        return texi_error(ctx, TEX_EINVAL, "%s: stage '%s', axis '%s': unknown tail strategy %d",
                          call, st->tensor->name, iv->name, (int)tail);
    if (tail != TEX_TAIL_SHIFT_INWARDS)
        return 0;
    if (texi_stage_has_reduce(st))
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s', axis '%s': SHIFT_INWARDS needs a pure "
                          "data-parallel stage, and '%s' has reduction axis '%s' (recomputed "
                          "tiles would accumulate twice)",
                          call, st->tensor->name, iv->name, st->tensor->name,
                          st->op->raxes[0]->name);
    int64_t e, f;
    if (texi_expr_is_int_const(iv->extent, &e) && texi_expr_is_int_const(factor, &f) && e < f)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s', axis '%s': SHIFT_INWARDS needs extent "
                          ">= factor (extent %lld, factor %lld)",
                          call, st->tensor->name, iv->name, (long long)e, (long long)f);
    return 0;
}

/* ceildiv(e, d) simplified; operands of dtype t. */
static tex_expr *ceildiv(tex_expr *e, tex_expr *d, tex_dtype t)
{
    tex_ctx *ctx = e->ctx;
    tex_expr *one = texi_int_imm(ctx, t, 1);
    if (!one)
        return NULL;
    tex_expr *num = texi_binary(TEXI_EXPR_SUB, d, one);
    num = num ? texi_binary(TEXI_EXPR_ADD, e, num) : NULL;
    num = num ? texi_binary(TEXI_EXPR_FLOORDIV, num, d) : NULL;
    return num ? texi_simplify(num, 0, NULL) : NULL;
}

/* The relation and the two new iters of a split (nothing changes in st). */
static int make_split(tex_stage *st, tex_iter *iv, tex_expr *factor, tex_expr *nparts,
                      tex_tail tail, texi_relation *rel)
{
    tex_ctx *ctx = st->sch->ctx;
    tex_dtype t = iv->var->dtype;
    tex_expr *e = texi_convert(iv->extent, t);
    tex_expr *by = e ? texi_convert(factor ? factor : nparts, t) : NULL;
    tex_expr *other = by ? ceildiv(e, by, t) : NULL;
    if (!other)
        return TEX_ENOMEM;
    char name[300];
    snprintf(name, sizeof name, "%s.outer", iv->name);
    tex_iter *outer = texi_iter_new(ctx, name, iv->kind, t, factor ? other : by);
    snprintf(name, sizeof name, "%s.inner", iv->name);
    tex_iter *inner = outer ? texi_iter_new(ctx, name, iv->kind, t, factor ? by : other) : NULL;
    if (!inner)
        return TEX_ENOMEM;
    *rel = (texi_relation){TEXI_REL_SPLIT,     iv,  outer, inner, NULL, factor ? by : NULL,
                           factor ? NULL : by, tail};
    return 0;
}

static void add_iter(tex_stage *st, tex_iter *iv)
{
    st->all[st->n_all] = iv;
    st->attr[st->n_all] = (texi_iter_attr){TEXI_FOR_SERIAL, -1};
    st->n_all++;
}

/* Records a split made by make_split (room reserved beforehand). */
static void apply_split(tex_stage *st, const texi_relation *rel)
{
    int p = texi_stage_leaf_index(st, rel->parent);
    add_iter(st, rel->outer);
    add_iter(st, rel->inner);
    for (int i = st->n_leaf; i > p + 1; i--)
        st->leaf[i] = st->leaf[i - 1];
    st->leaf[p] = rel->outer;
    st->leaf[p + 1] = rel->inner;
    st->n_leaf++;
    st->rel[st->n_rel++] = *rel;
}

/* Split by `by`: a factor, or the number of outer parts when is_nparts. */
static int split_common(tex_stage *st, tex_iter *iv, tex_expr *by, bool is_nparts, tex_tail tail,
                        tex_iter **outer, tex_iter **inner, const char *call)
{
    TEXI_TRY(texi_stage_check(st, call, true));
    TEXI_TRY(check_restructurable(st, iv, call));
    TEXI_TRY(check_factor(st, iv, by, call, is_nparts ? "nparts" : "factor"));
    TEXI_TRY(check_tail(st, iv, by, tail, call));
    texi_trace_rec tr;
    texi_trace_begin(&tr, st->sch, is_nparts ? "split_nparts" : "split");
    texi_trace_stage(&tr, st);
    texi_trace_iter(&tr, st, iv);
    texi_trace_factor(&tr, st, iv, by);
    if (tail != TEX_TAIL_AUTO)
        texi_trace_word(&tr, texi_trace_tails[tail]);
    texi_relation rel;
    TEXI_TRY(texi_stage_reserve(st, 2, 1));
    TEXI_TRY(make_split(st, iv, is_nparts ? NULL : by, is_nparts ? by : NULL, tail, &rel));
    apply_split(st, &rel);
    texi_trace_commit(&tr);
    if (outer)
        *outer = rel.outer;
    if (inner)
        *inner = rel.inner;
    return 0;
}

int tex_split(tex_stage *st, tex_iter *iv, tex_expr *factor, tex_iter **outer, tex_iter **inner)
{
    return split_common(st, iv, factor, false, TEX_TAIL_AUTO, outer, inner, "tex_split");
}

int tex_split_tail(tex_stage *st, tex_iter *iv, tex_expr *factor, tex_tail tail, tex_iter **outer,
                   tex_iter **inner)
{
    return split_common(st, iv, factor, false, tail, outer, inner, "tex_split_tail");
}

int tex_split_nparts(tex_stage *st, tex_iter *iv, tex_expr *nparts, tex_iter **outer,
                     tex_iter **inner)
{
    return split_common(st, iv, nparts, true, TEX_TAIL_AUTO, outer, inner, "tex_split_nparts");
}

/* ---------------------------------------------------------------- reorder */

/* Moves the listed leaves into the positions they occupy, in the given order. */
static void permute_leaves(tex_stage *st, int n, tex_iter *const order[])
{
    int pos[64];
    for (int i = 0; i < n; i++)
        pos[i] = texi_stage_leaf_index(st, order[i]);
    for (int i = 1; i < n; i++) // insertion sort of the occupied positions
        for (int j = i; j > 0 && pos[j - 1] > pos[j]; j--) {
            int tmp = pos[j];
            pos[j] = pos[j - 1];
            pos[j - 1] = tmp;
        }
    for (int i = 0; i < n; i++)
        st->leaf[pos[i]] = order[i];
}

static int check_reorder(const tex_stage *st, int n, tex_iter *const order[], const char *call)
{
    tex_ctx *ctx = st->sch->ctx;
    if (n < 1 || !order)
        return texi_error(ctx, TEX_EINVAL, "%s: stage '%s': needs at least one axis (got %d%s)",
                          call, st->tensor->name, n, order ? "" : ", NULL array");
    if (n > st->n_leaf || n > 64)
        return texi_error(ctx, TEX_EINVAL, "%s: stage '%s' has %d leaf axes; %d were given", call,
                          st->tensor->name, st->n_leaf, n);
    for (int i = 0; i < n; i++) {
        TEXI_TRY(texi_stage_check_leaf(st, order[i], call));
        for (int j = 0; j < i; j++)
            if (order[j] == order[i])
                return texi_error(ctx, TEX_EINVAL, "%s: stage '%s': axis '%s' is named twice", call,
                                  st->tensor->name, order[i]->name);
    }
    return 0;
}

/* The leaf index iv has after permute_leaves(st, n, order): order[i]
 * takes the i-th smallest of their positions. */
static int index_after(const tex_stage *st, int n, tex_iter *const order[], const tex_iter *iv)
{
    int i = 0;
    while (i < n && order[i] != iv)
        i++;
    if (i == n)
        return texi_stage_leaf_index(st, iv);
    for (int j = 0; j < n; j++) {
        int pj = texi_stage_leaf_index(st, order[j]), below = 0;
        for (int k = 0; k < n; k++)
            below += texi_stage_leaf_index(st, order[k]) < pj;
        if (below == i)
            return pj;
    }
    return -1;
}

/* A reorder that would put the outer axis of a tex_prefetch_at request
 * inside the loop of its hints refuses. */
static int check_prefetch_order(const tex_stage *st, int n, tex_iter *const order[],
                                const char *call)
{
    for (int k = 0; k < st->n_prefetch; k++) {
        const texi_prefetch *p = &st->prefetch[k];
        if (index_after(st, n, order, p->from) > index_after(st, n, order, p->iv))
            return texi_error(st->sch->ctx, TEX_EINVAL,
                              "%s: stage '%s' prefetches '%s' at axis '%s' for the iterations "
                              "ahead of axis '%s' (tex_prefetch_at), which would be inside it",
                              call, st->tensor->name, p->tensor->name, p->iv->name, p->from->name);
    }
    return 0;
}

int tex_reorder(tex_stage *st, int n, tex_iter *const order[])
{
    static const char call[] = "tex_reorder";
    TEXI_TRY(texi_stage_check(st, call, true));
    TEXI_TRY(check_reorder(st, n, order, call));
    TEXI_TRY(check_prefetch_order(st, n, order, call));
    texi_trace_rec tr;
    texi_trace_begin(&tr, st->sch, "reorder");
    texi_trace_stage(&tr, st);
    for (int i = 0; i < n; i++)
        texi_trace_iter(&tr, st, order[i]);
    permute_leaves(st, n, order);
    texi_trace_commit(&tr);
    return 0;
}

/* ------------------------------------------------------------------- tile */

int tex_tile(tex_stage *st, tex_iter *x, tex_iter *y, tex_expr *fx, tex_expr *fy, tex_iter **xo,
             tex_iter **yo, tex_iter **xi, tex_iter **yi)
{
    static const char call[] = "tex_tile";
    TEXI_TRY(texi_stage_check(st, call, true));
    TEXI_TRY(check_restructurable(st, x, call));
    TEXI_TRY(check_restructurable(st, y, call));
    if (x == y)
        return texi_error(st->sch->ctx, TEX_EINVAL,
                          "%s: stage '%s': axis '%s' is given as both x "
                          "and y",
                          call, st->tensor->name, x->name);
    TEXI_TRY(check_factor(st, x, fx, call, "x factor"));
    TEXI_TRY(check_factor(st, y, fy, call, "y factor"));
    texi_trace_rec tr;
    texi_trace_begin(&tr, st->sch, "tile");
    texi_trace_stage(&tr, st);
    texi_trace_iter(&tr, st, x);
    texi_trace_iter(&tr, st, y);
    texi_trace_factor(&tr, st, x, fx);
    texi_trace_factor(&tr, st, y, fy);
    texi_relation rx, ry;
    TEXI_TRY(texi_stage_reserve(st, 4, 2));
    TEXI_TRY(make_split(st, x, fx, NULL, TEX_TAIL_AUTO, &rx));
    TEXI_TRY(make_split(st, y, fy, NULL, TEX_TAIL_AUTO, &ry));
    apply_split(st, &rx);
    apply_split(st, &ry);
    tex_iter *order[4] = {rx.outer, ry.outer, rx.inner, ry.inner};
    permute_leaves(st, 4, order);
    texi_trace_commit(&tr);
    if (xo)
        *xo = rx.outer;
    if (yo)
        *yo = ry.outer;
    if (xi)
        *xi = rx.inner;
    if (yi)
        *yi = ry.inner;
    return 0;
}

/* ------------------------------------------------------------------- fuse */

static int check_fuse(const tex_stage *st, tex_iter *outer, tex_iter *inner, const char *call)
{
    tex_ctx *ctx = st->sch->ctx;
    const char *sn = st->tensor->name;
    TEXI_TRY(check_restructurable(st, outer, call));
    TEXI_TRY(check_restructurable(st, inner, call));
    if (outer == inner)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s': axis '%s' is given as both outer and "
                          "inner",
                          call, sn, outer->name);
    if (outer->kind != inner->kind)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s': cannot fuse %s axis '%s' with %s axis "
                          "'%s'",
                          call, sn, outer->kind == TEXI_ITER_REDUCE ? "reduce" : "data",
                          outer->name, inner->kind == TEXI_ITER_REDUCE ? "reduce" : "data",
                          inner->name);
    int po = texi_stage_leaf_index(st, outer), pi = texi_stage_leaf_index(st, inner);
    if (pi != po + 1)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s': axis '%s' must come immediately before "
                          "axis '%s' in loop order to fuse them (%s)",
                          call, sn, outer->name, inner->name,
                          pi < po ? "they are reversed" : "they are not adjacent");
    return 0;
}

int tex_fuse(tex_stage *st, tex_iter *outer, tex_iter *inner, tex_iter **fused)
{
    static const char call[] = "tex_fuse";
    TEXI_TRY(texi_stage_check(st, call, true));
    TEXI_TRY(check_fuse(st, outer, inner, call));
    texi_trace_rec tr;
    texi_trace_begin(&tr, st->sch, "fuse");
    texi_trace_stage(&tr, st);
    texi_trace_iter(&tr, st, outer);
    texi_trace_iter(&tr, st, inner);
    tex_ctx *ctx = st->sch->ctx;
    tex_dtype t = outer->var->dtype == TEX_I64 || inner->var->dtype == TEX_I64 ? TEX_I64 : TEX_I32;
    TEXI_TRY(texi_stage_reserve(st, 1, 1));
    tex_expr *a = texi_convert(outer->extent, t), *b = a ? texi_convert(inner->extent, t) : NULL;
    tex_expr *ext = b ? texi_binary(TEXI_EXPR_MUL, a, b) : NULL;
    if (!ext || !(ext = texi_simplify(ext, 0, NULL)))
        return TEX_ENOMEM;
    char name[600];
    snprintf(name, sizeof name, "%s.%s.fused", outer->name, inner->name);
    tex_iter *f = texi_iter_new(ctx, name, outer->kind, t, ext);
    if (!f)
        return TEX_ENOMEM;
    int p = texi_stage_leaf_index(st, outer);
    add_iter(st, f);
    st->leaf[p] = f;
    for (int i = p + 1; i + 1 < st->n_leaf; i++)
        st->leaf[i] = st->leaf[i + 1];
    st->n_leaf--;
    st->rel[st->n_rel++] =
        (texi_relation){TEXI_REL_FUSE, NULL, outer, inner, f, NULL, NULL, TEX_TAIL_AUTO};
    texi_trace_commit(&tr);
    if (fused)
        *fused = f;
    return 0;
}
