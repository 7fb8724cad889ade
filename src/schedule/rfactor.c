/*
 * rfactor (TVM's Rfactor, docs/api.md, rule 4): turns one reduce axis k of a
 * reduction C into a data axis of a new tensor CF, so the partial results
 * along k can be computed in parallel, then reduces CF over k into C.
 *
 *   C[i..] = R_{r1..rm} body                       (R: sum, prod, max, min)
 * becomes
 *   CF[i.., k, i..] = R_{remaining reduce iters} body'   (k at position f)
 *   C[i..]          = R_{kv} CF[i.., kv, i..]
 *
 * Supported shapes of k (anything else is TEX_EINVAL, naming stage and axis):
 *   (a) k is a root reduce axis that was not split: body' is body with k
 *       replaced by CF's new data axis; the other reduce axes stay reduce
 *       axes of CF (if there are none, CF is a plain element-wise compute,
 *       masked by the reduction's condition if it had one).
 *   (b) k is the outer or the inner part of the only split of C's stage,
 *       made on a root reduce axis r: r is rewritten as
 *       outer * inner_extent + inner, one of them being CF's new data axis and
 *       the other a reduce axis of CF; when the split may not divide r's
 *       extent, CF's reduction gets the guard `outer * inner_extent + inner <
 *       extent(r)` (tex_reduce_where semantics), so padded points contribute
 *       the identity.
 * C's stage must carry no annotation, no stage attached inside it, and no
 * relation except that split; its loop order is discarded. Afterwards C's
 * stage starts over on fresh axes (fetch them with tex_op_axis /
 * tex_op_reduce_axis), and CF's stage is inserted right before it. Axes of CF
 * and C keep the names of the iters they stand for.
 */
#include "schedule/primitive.h"
#include "schedule/trace.h"

#include <stdio.h>

typedef struct {
    tex_stage *st;
    const tex_iter *k;
    const tex_iter *root;     /* the root reduce axis k is or comes from */
    const texi_relation *rel; /* (b): the split, else NULL */
} rf_plan;

static int check_shape(rf_plan *p, const char *call)
{
    tex_stage *st = p->st;
    tex_ctx *ctx = st->sch->ctx;
    const char *sn = st->tensor->name, *kn = p->k->name;
    for (int i = 0; i < st->n_all; i++)
        if (st->attr[i].for_kind != TEXI_FOR_SERIAL)
            return texi_error(ctx, TEX_EINVAL,
                              "%s: stage '%s', axis '%s': axis '%s' is already "
                              "%s; call %s before annotating",
                              call, sn, kn, st->all[i]->name, texi_iter_attr_name(&st->attr[i]),
                              call);
    const tex_stage *child = texi_schedule_attached_at(st->sch, st, NULL);
    if (child)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s', axis '%s': stage '%s' is attached "
                          "inside '%s'; call %s before compute_at",
                          call, sn, kn, child->tensor->name, sn, call);
    if (st->n_rel == 0) {
        p->root = p->k;
        return 0;
    }
    const texi_relation *r = &st->rel[0];
    if (st->n_rel == 1 && r->kind == TEXI_REL_SPLIT && r->parent->kind == TEXI_ITER_REDUCE &&
        (r->outer == p->k || r->inner == p->k)) {
        p->root = r->parent;
        p->rel = r;
        return 0;
    }
    return texi_error(ctx, TEX_EINVAL,
                      "%s: stage '%s', axis '%s': supported are a root reduce "
                      "axis of an unsplit stage, or the outer or inner part of the stage's only "
                      "split, made on a root reduce axis",
                      call, sn, kn);
}

static int check_args(rf_plan *p, int f, const char *call)
{
    tex_stage *st = p->st;
    tex_ctx *ctx = st->sch->ctx;
    TEXI_TRY(texi_stage_check(st, call, true));
    if (!texi_stage_has_reduce(st))
        return texi_error(ctx, TEX_EINVAL, "%s: stage '%s' is not a reduction", call,
                          st->tensor->name);
    if (st->atomic)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s' is atomic (tex_atomic); factor the reduction first", call,
                          st->tensor->name);
    TEXI_TRY(texi_stage_check_leaf(st, p->k, call));
    TEXI_TRY(texi_prefetch_check(st, NULL, NULL, call));
    if (p->k->kind != TEXI_ITER_REDUCE)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: axis '%s' of stage '%s' is a data-parallel axis, "
                          "not a reduce axis",
                          call, p->k->name, st->tensor->name);
    if (f < 0 || f > st->op->n_axes)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: stage '%s', axis '%s': factor_axis %d is not in "
                          "[0, %d]",
                          call, st->tensor->name, p->k->name, f, st->op->n_axes);
    if (st->op->n_axes >= 63 || st->op->n_raxes > 64)
        return texi_error(ctx, TEX_EINVAL, "%s: stage '%s' has too many axes", call,
                          st->tensor->name);
    return check_shape(p, call);
}

/* ---------------------------------------------------------------- build */

/* Everything the new definitions are made of. */
typedef struct {
    tex_iter *data[64]; /* CF's data axes, kv at position f */
    int n_data;
    tex_iter *red[64]; /* CF's reduce axes */
    int n_red;
    tex_expr *from[128]; /* substitution: old root vars ... */
    tex_expr *to[128];   /* ... and their values in CF */
    int n_map;
    tex_expr *guard; /* (b) with a possible tail, else NULL */
} rf_parts;

static int map(rf_parts *q, tex_expr *from, tex_expr *to)
{
    if (!to)
        return TEX_ENOMEM;
    q->from[q->n_map] = from;
    q->to[q->n_map++] = to;
    return 0;
}

/* a op b in dtype t. */
static tex_expr *arith(enum texi_expr_kind kind, tex_expr *a, tex_expr *b, tex_dtype t)
{
    a = a ? texi_convert(a, t) : NULL;
    b = b ? texi_convert(b, t) : NULL;
    return a && b ? texi_binary(kind, a, b) : NULL;
}

/* (b): the value of the split root in terms of CF's iters, and the guard. */
static int map_split_root(const rf_plan *p, rf_parts *q, tex_iter *kv, tex_iter *other)
{
    const texi_relation *r = p->rel;
    tex_dtype t = p->root->var->dtype;
    tex_iter *o = r->outer == p->k ? kv : other, *in = r->inner == p->k ? kv : other;
    tex_expr *val = arith(TEXI_EXPR_MUL, o->var, r->inner->extent, t);
    val = val ? arith(TEXI_EXPR_ADD, val, in->var, t) : NULL;
    TEXI_TRY(map(q, p->root->var, val));
    tex_expr *covered = arith(TEXI_EXPR_MUL, r->outer->extent, r->inner->extent, t);
    tex_expr *exact = covered ? arith(TEXI_EXPR_EQ, covered, p->root->extent, t) : NULL;
    if (!exact)
        return TEX_ENOMEM;
    if (!texi_prove(exact, 0, NULL) && !(q->guard = arith(TEXI_EXPR_LT, val, p->root->extent, t)))
        return TEX_ENOMEM;
    return 0;
}

static int plan_parts(const rf_plan *p, int f, rf_parts *q)
{
    tex_ctx *ctx = p->st->sch->ctx;
    const texi_op *op = p->st->op;
    tex_iter *d[64],
        *kv = texi_iter_new(ctx, p->k->name, TEXI_ITER_DATA, p->k->var->dtype, p->k->extent);
    if (!kv || texi_iters_copy(ctx, op->n_axes, op->axes, d) < 0)
        return TEX_ENOMEM;
    for (int i = 0; i < f; i++)
        q->data[q->n_data++] = d[i];
    q->data[q->n_data++] = kv;
    for (int i = f; i < op->n_axes; i++)
        q->data[q->n_data++] = d[i];
    for (int i = 0; i < op->n_axes; i++)
        TEXI_TRY(map(q, op->axes[i]->var, d[i]->var));
    for (int j = 0; j < op->n_raxes; j++) {
        tex_iter *r = op->raxes[j];
        if (r != p->root) {
            tex_iter *c = texi_iter_new(ctx, r->name, r->kind, r->var->dtype, r->extent);
            TEXI_TRY(map(q, r->var, c ? c->var : NULL));
            q->red[q->n_red++] = c;
        } else if (!p->rel) {
            TEXI_TRY(map(q, r->var, texi_convert(kv->var, r->var->dtype)));
        } else {
            const tex_iter *sib = p->rel->outer == p->k ? p->rel->inner : p->rel->outer;
            tex_iter *c =
                texi_iter_new(ctx, sib->name, TEXI_ITER_REDUCE, sib->var->dtype, sib->extent);
            if (!c)
                return TEX_ENOMEM;
            q->red[q->n_red++] = c;
            TEXI_TRY(map_split_root(p, q, kv, c));
        }
    }
    return 0;
}

/* CF's body from C's reduction and the plan. */
static tex_expr *factored_body(const texi_op *op, const rf_parts *q)
{
    const tex_expr *red = op->body;
    tex_expr *body = texi_substitute(red->u.red.body, q->n_map, q->from, q->to);
    tex_expr *cond =
        red->u.red.cond ? texi_substitute(red->u.red.cond, q->n_map, q->from, q->to) : NULL;
    if (!body || (red->u.red.cond && !cond))
        return NULL;
    if (q->guard && !(cond = cond ? texi_binary(TEXI_EXPR_AND, cond, q->guard) : q->guard))
        return NULL;
    if (q->n_red > 0)
        return texi_reduce_new(red->u.red.op, body, q->n_red, q->red, cond);
    if (!cond)
        return body;
    tex_expr *id = texi_reduce_identity(body->ctx, red->u.red.op, body->dtype);
    return id ? texi_select_new(cond, body, id) : NULL;
}

/* C's new op: C[i..] = R_{kv} CF[i.., kv, i..] over fresh axes. */
static texi_op *final_op(const rf_plan *p, int f, tex_tensor *cf)
{
    tex_ctx *ctx = p->st->sch->ctx;
    const texi_op *op = p->st->op;
    tex_iter *d[64];
    tex_expr *idx[64];
    tex_iter *rv = texi_iter_new(ctx, p->k->name, TEXI_ITER_REDUCE, p->k->var->dtype, p->k->extent);
    if (!rv || texi_iters_copy(ctx, op->n_axes, op->axes, d) < 0)
        return NULL;
    for (int i = 0, j = 0; i <= op->n_axes; i++)
        idx[i] = i == f ? rv->var : d[j++]->var;
    tex_expr *acc = texi_access_new(cf, op->n_axes + 1, idx);
    tex_expr *body = acc ? texi_reduce_new(op->body->u.red.op, acc, 1, &rv, NULL) : NULL;
    return body ? texi_op_new(ctx, op->n_axes, d, body, 1, &cf) : NULL;
}

tex_tensor *tex_rfactor(tex_schedule *s, tex_tensor *t, tex_iter *raxis, int factor_axis)
{
    static const char call[] = "tex_rfactor";
    if (!s)
        return NULL;
    rf_plan p = {texi_schedule_stage_for(s, t, call), raxis, NULL, NULL};
    if (!p.st || check_args(&p, factor_axis, call) < 0)
        return NULL;
    tex_ctx *ctx = s->ctx;
    rf_parts q = {0};
    char buf[512];
    snprintf(buf, sizeof buf, "%s.rf", t->name);
    const char *name = texi_schedule_unique_name(s, buf);
    if (!name || plan_parts(&p, factor_axis, &q) < 0)
        return NULL;
    tex_expr *body = factored_body(p.st->op, &q);
    tex_tensor *cf = body ? texi_compute_tensor_new(ctx, name, q.n_data, q.data, body,
                                                    p.st->op->n_inputs, p.st->op->inputs)
                          : NULL;
    tex_stage *cst = cf ? texi_stage_new(s, cf, cf->op, false) : NULL;
    texi_op *op = cst ? texi_op_keep_scatter(final_op(&p, factor_axis, cf), p.st->op) : NULL;
    tex_stage *fresh = op ? texi_stage_new(s, t, op, p.st->is_output) : NULL;
    if (!fresh || texi_schedule_reserve(s, 1) < 0)
        return NULL;
    // Everything is allocated: commit.
    texi_trace_rec tr;
    texi_trace_begin(&tr, s, "rfactor");
    texi_trace_stage(&tr, p.st);
    texi_trace_iter(&tr, p.st, raxis);
    texi_trace_int(&tr, factor_axis);
    cst->is_cache = true;
    texi_stage_adopt(p.st, fresh);
    texi_schedule_insert(s, texi_schedule_stage_index(s, p.st), cst);
    texi_trace_commit(&tr);
    return cf;
}
