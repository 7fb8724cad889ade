/*
 * Schedules and stages: creation, lookup, accessors, and the bookkeeping
 * helpers every primitive shares (primitive.h).
 *
 * tex_schedule_new walks the graph below the outputs once (producers before
 * consumers, texi_tensor_post_order) and makes one stage per operation,
 * placeholders included. A compute stage starts with root = leaf = the op's
 * axes followed by its reduce axes, every iter SERIAL, attached at ROOT in
 * GLOBAL scope. A placeholder's stage has no iters; primitives reject it
 * (it can only be the source of cache_read).
 *
 * Invariants kept by every file of this module:
 *   - s->stages lists producers before consumers (cache stages are inserted
 *     next to the stage they feed);
 *   - st->leaf is a subset of st->all, st->attr is parallel to st->all, and
 *     the arrays all/attr/leaf share the capacity cap_all;
 *   - stage handles are never freed or moved, only their fields change.
 *
 * Arrays live in the context's arena; growing one copies it into a larger
 * block (the old block is simply abandoned, as everything in the arena is).
 */
#include "schedule/primitive.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

tex_iter *texi_iter_new(tex_ctx *ctx, const char *name, enum texi_iter_kind kind, tex_dtype t,
                        tex_expr *extent)
{
    tex_iter *iv = texi_alloc(ctx, sizeof *iv, "an iteration variable");
    if (!iv || !(iv->name = texi_strdup(ctx, name)))
        return NULL;
    iv->ctx = ctx;
    iv->kind = kind;
    iv->extent = extent;
    iv->min = texi_int_imm(ctx, t, 0);
    iv->var = texi_var_new(ctx, name, t);
    if (!iv->min || !iv->var)
        return NULL;
    iv->var->u.var.iter = iv; // completes the node before anyone can see it
    return iv;
}

tex_stage *texi_stage_new(tex_schedule *s, tex_tensor *t, texi_op *op, bool is_output)
{
    tex_ctx *ctx = s->ctx;
    tex_stage *st = texi_alloc(ctx, sizeof *st, "a stage");
    if (!st)
        return NULL;
    st->sch = s;
    st->tensor = t;
    st->op = op;
    st->is_output = is_output;
    st->n_root = op->kind == TEXI_OP_COMPUTE ? op->n_axes + op->n_raxes : 0;
    st->cap_all = st->n_root + 8;
    st->cap_rel = 4;
    size_t cap = (size_t)st->cap_all, nd = (size_t)(t->ndim > 0 ? t->ndim : 1);
    st->root = texi_alloc(ctx, sizeof *st->root * (st->n_root ? (size_t)st->n_root : 1), "a stage");
    st->all = texi_alloc(ctx, sizeof *st->all * cap, "a stage");
    st->attr = texi_alloc(ctx, sizeof *st->attr * cap, "a stage");
    st->leaf = texi_alloc(ctx, sizeof *st->leaf * cap, "a stage");
    st->rel = texi_alloc(ctx, sizeof *st->rel * (size_t)st->cap_rel, "a stage");
    st->align_factor = texi_alloc(ctx, sizeof *st->align_factor * nd, "a stage");
    st->align_offset = texi_alloc(ctx, sizeof *st->align_offset * nd, "a stage");
    st->storage_order = texi_alloc(ctx, sizeof *st->storage_order * nd, "a stage");
    if (!st->root || !st->all || !st->attr || !st->leaf || !st->rel || !st->align_factor ||
        !st->align_offset || !st->storage_order)
        return NULL;
    for (int d = 0; d < (int)nd; d++)
        st->storage_order[d] = d;
    for (int i = 0; i < st->n_root; i++) {
        tex_iter *iv = i < op->n_axes ? op->axes[i] : op->raxes[i - op->n_axes];
        st->root[i] = st->all[i] = st->leaf[i] = iv;
        st->attr[i] = (texi_iter_attr){TEXI_FOR_SERIAL, -1};
    }
    for (int i = 0; op->leaf_order && i < st->n_root; i++)
        st->leaf[i] = op->leaf_order[i]; /* the same axes, in the order the op asks for */
    st->n_all = st->n_leaf = st->n_root;
    st->attach = TEXI_ATTACH_ROOT;
    st->scope = TEXI_SCOPE_GLOBAL;
    return st;
}

void texi_stage_adopt(tex_stage *st, const tex_stage *fresh)
{
    st->op = fresh->op;
    st->n_root = fresh->n_root;
    st->root = fresh->root;
    st->n_all = fresh->n_all;
    st->cap_all = fresh->cap_all;
    st->all = fresh->all;
    st->attr = fresh->attr;
    st->n_leaf = fresh->n_leaf;
    st->leaf = fresh->leaf;
    st->n_rel = fresh->n_rel;
    st->cap_rel = fresh->cap_rel;
    st->rel = fresh->rel;
    st->range = NULL;
}

int texi_stage_reserve(tex_stage *st, int n_iters, int n_rels)
{
    tex_ctx *ctx = st->sch->ctx;
    if (st->n_all + n_iters > st->cap_all) {
        int cap = st->cap_all * 2 > st->n_all + n_iters ? st->cap_all * 2 : st->n_all + n_iters;
        tex_iter **all = texi_alloc(ctx, sizeof *all * (size_t)cap, "stage iters");
        texi_iter_attr *attr = texi_alloc(ctx, sizeof *attr * (size_t)cap, "stage iters");
        tex_iter **leaf = texi_alloc(ctx, sizeof *leaf * (size_t)cap, "stage iters");
        if (!all || !attr || !leaf)
            return TEX_ENOMEM;
        memcpy(all, st->all, sizeof *all * (size_t)st->n_all);
        memcpy(attr, st->attr, sizeof *attr * (size_t)st->n_all);
        memcpy(leaf, st->leaf, sizeof *leaf * (size_t)st->n_leaf);
        st->all = all;
        st->attr = attr;
        st->leaf = leaf;
        st->cap_all = cap;
    }
    if (st->n_rel + n_rels > st->cap_rel) {
        int cap = st->cap_rel * 2 > st->n_rel + n_rels ? st->cap_rel * 2 : st->n_rel + n_rels;
        texi_relation *rel = texi_alloc(ctx, sizeof *rel * (size_t)cap, "stage relations");
        if (!rel)
            return TEX_ENOMEM;
        memcpy(rel, st->rel, sizeof *rel * (size_t)st->n_rel);
        st->rel = rel;
        st->cap_rel = cap;
    }
    return 0;
}

int texi_schedule_reserve(tex_schedule *s, int n)
{
    if (s->n_stages + n <= s->cap_stages)
        return 0;
    int cap = s->cap_stages * 2 > s->n_stages + n ? s->cap_stages * 2 : s->n_stages + n;
    tex_stage **stages = texi_alloc(s->ctx, sizeof *stages * (size_t)cap, "the stage list");
    if (!stages)
        return TEX_ENOMEM;
    if (s->n_stages)
        memcpy(stages, s->stages, sizeof *stages * (size_t)s->n_stages);
    s->stages = stages;
    s->cap_stages = cap;
    return 0;
}

void texi_schedule_insert(tex_schedule *s, int pos, tex_stage *st)
{
    memmove(s->stages + pos + 1, s->stages + pos, sizeof *s->stages * (size_t)(s->n_stages - pos));
    s->stages[pos] = st;
    s->n_stages++;
}

void texi_schedule_remove(tex_schedule *s, int pos)
{
    memmove(s->stages + pos, s->stages + pos + 1,
            sizeof *s->stages * (size_t)(s->n_stages - pos - 1));
    s->n_stages--;
}

int texi_schedule_stage_index(const tex_schedule *s, const tex_stage *st)
{
    for (int i = 0; i < s->n_stages; i++)
        if (s->stages[i] == st)
            return i;
    return -1;
}

tex_stage *texi_schedule_iter_owner(const tex_schedule *s, const tex_iter *iv)
{
    for (int i = 0; i < s->n_stages; i++)
        if (texi_stage_iter_index(s->stages[i], iv) >= 0)
            return s->stages[i];
    return NULL;
}

tex_stage *texi_schedule_attached_at(const tex_schedule *s, const tex_stage *parent,
                                     const tex_iter *iv)
{
    for (int i = 0; i < s->n_stages; i++) {
        tex_stage *c = s->stages[i];
        if (c->attach == TEXI_ATTACH_AT && c->attach_stage == parent && (!iv || c->attach_iv == iv))
            return c;
    }
    return NULL;
}

int texi_stage_check(const tex_stage *st, const char *call, bool need_compute)
{
    if (!st)
        return TEX_EMISUSE;
    if (need_compute && st->op->kind != TEXI_OP_COMPUTE)
        return texi_error(st->sch->ctx, TEX_EINVAL,
                          "%s: stage '%s' is a placeholder (an input); it has no loops to "
                          "schedule",
                          call, st->tensor->name);
    return 0;
}

int texi_stages_same_schedule(const tex_stage *st, const tex_stage *other, const char *call)
{
    tex_ctx *ctx = st->sch->ctx;
    if (other->sch == st->sch)
        return 0;
    return texi_error(ctx, other->sch->ctx == ctx ? TEX_EINVAL : TEX_EMISUSE,
                      "%s: stages '%s' and '%s' belong to different schedules", call,
                      st->tensor->name, other->tensor->name);
}

int texi_stage_check_leaf(const tex_stage *st, const tex_iter *iv, const char *call)
{
    tex_ctx *ctx = st->sch->ctx;
    const char *name = st->tensor->name;
    if (!iv)
        return texi_error(ctx, TEX_EMISUSE, "%s: stage '%s': the axis is NULL", call, name);
    if (iv->ctx != ctx)
        return texi_error(ctx, TEX_EMISUSE, "%s: stage '%s': axis '%s' comes from another context",
                          call, name, iv->name);
    if (texi_stage_leaf_index(st, iv) >= 0)
        return 0;
    if (texi_stage_iter_index(st, iv) >= 0)
        return texi_error(ctx, TEX_EINVAL,
                          "%s: axis '%s' of stage '%s' is not a leaf axis (it was already split "
                          "or fused)",
                          call, iv->name, name);
    const tex_stage *owner = texi_schedule_iter_owner(st->sch, iv);
    if (owner)
        return texi_error(ctx, TEX_EINVAL, "%s: axis '%s' belongs to stage '%s', not to stage '%s'",
                          call, iv->name, owner->tensor->name, name);
    return texi_error(ctx, TEX_EINVAL, "%s: axis '%s' is not an axis of stage '%s'", call, iv->name,
                      name);
}

bool texi_stage_has_reduce(const tex_stage *st)
{
    return st->op->kind == TEXI_OP_COMPUTE && st->op->n_raxes > 0;
}

static bool name_taken(const tex_schedule *s, const char *name)
{
    for (int i = 0; i < s->n_stages; i++)
        if (strcmp(s->stages[i]->tensor->name, name) == 0)
            return true;
    return false;
}

const char *texi_schedule_unique_name(tex_schedule *s, const char *base)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", base);
    for (int k = 1; name_taken(s, buf); k++)
        snprintf(buf, sizeof buf, "%s.%d", base, k);
    return texi_strdup(s->ctx, buf);
}

const char *texi_scope_name(enum texi_scope scope)
{
    switch (scope) {
    case TEXI_SCOPE_GLOBAL:
        return "global";
    case TEXI_SCOPE_SHARED:
        return "shared";
    case TEXI_SCOPE_LOCAL:
        return "local";
    }
    return "?";
}

const char *texi_iter_attr_name(const texi_iter_attr *attr)
{
    static const char *const tags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                       "threadIdx.y", "threadIdx.z", "vthread"};
    switch (attr->for_kind) {
    case TEXI_FOR_SERIAL:
        return "serial";
    case TEXI_FOR_PARALLEL:
        return "parallel";
    case TEXI_FOR_VECTORIZED:
        return "vectorized";
    case TEXI_FOR_UNROLLED:
        return "unrolled";
    case TEXI_FOR_THREAD:
        return attr->thread_tag >= 0 && attr->thread_tag <= (int)TEX_VTHREAD
                   ? tags[attr->thread_tag]
                   : "thread?";
    }
    return "?";
}

/* ------------------------------------------------------------ lookups */

int texi_stage_iter_index(const tex_stage *st, const tex_iter *iv)
{
    for (int i = 0; i < st->n_all; i++)
        if (st->all[i] == iv)
            return i;
    return -1;
}

int texi_stage_leaf_index(const tex_stage *st, const tex_iter *iv)
{
    for (int i = 0; i < st->n_leaf; i++)
        if (st->leaf[i] == iv)
            return i;
    return -1;
}

tex_stage *texi_schedule_find_stage(const tex_schedule *s, const tex_tensor *t)
{
    for (int i = 0; i < s->n_stages; i++)
        if (s->stages[i]->tensor == t)
            return s->stages[i];
    return NULL;
}

bool texi_op_reads(const texi_op *op, const tex_tensor *t)
{
    if (op->kind != TEXI_OP_COMPUTE)
        return false;
    for (int i = 0; i < op->n_inputs; i++)
        if (op->inputs[i] == t)
            return true;
    return false;
}

tex_tensor *texi_copy_source(const tex_tensor *c)
{
    const texi_op *op = c->op;
    if (op->kind != TEXI_OP_COMPUTE || op->n_raxes || op->scatter_into ||
        op->body->kind != TEXI_EXPR_ACCESS)
        return NULL;
    tex_tensor *t = op->body->u.access.tensor;
    if (op->body->u.access.n_idx != op->n_axes || t->ndim != op->n_axes)
        return NULL;
    for (int i = 0; i < op->n_axes; i++)
        if (op->body->u.access.idx[i] != op->axes[i]->var)
            return NULL;
    return t;
}

tex_stage **texi_schedule_consumers(tex_schedule *s, const tex_tensor *t, int *n)
{
    tex_stage **out = texi_alloc(s->ctx, sizeof *out * (size_t)(s->n_stages + 1), "a stage list");
    *n = 0;
    if (!out)
        return NULL;
    for (int i = 0; i < s->n_stages; i++)
        if (s->stages[i]->tensor != t && texi_op_reads(s->stages[i]->op, t))
            out[(*n)++] = s->stages[i];
    return out;
}

/* ---------------------------------------------------------- creation */

static int check_outputs(tex_ctx *ctx, int n, tex_tensor *const outputs[])
{
    static const char call[] = "tex_schedule_new";
    if (n < 1 || !outputs)
        return texi_error(ctx, TEX_EINVAL, "%s: needs at least one output tensor (got %d%s)", call,
                          n, outputs ? "" : ", NULL array");
    for (int i = 0; i < n; i++) {
        if (!outputs[i])
            return texi_error(ctx, TEX_EMISUSE, "%s: output %d is NULL", call, i);
        if (outputs[i]->ctx != ctx)
            return texi_error(ctx, TEX_EMISUSE, "%s: output '%s' comes from another context", call,
                              outputs[i]->name);
        if (outputs[i]->op->kind != TEXI_OP_COMPUTE)
            return texi_error(ctx, TEX_EINVAL,
                              "%s: output '%s' is a placeholder (an input), not a compute", call,
                              outputs[i]->name);
        for (int j = 0; j < i; j++)
            if (outputs[j] == outputs[i])
                return texi_error(ctx, TEX_EINVAL, "%s: output '%s' is listed twice", call,
                                  outputs[i]->name);
    }
    return 0;
}

static bool listed(tex_tensor *const list[], int n, const tex_tensor *t)
{
    for (int i = 0; i < n; i++)
        if (list[i] == t)
            return true;
    return false;
}

tex_schedule *tex_schedule_new(tex_ctx *ctx, int n, tex_tensor *const outputs[])
{
    if (!ctx || check_outputs(ctx, n, outputs) < 0)
        return NULL;
    int n_ops = 0;
    tex_tensor **order = texi_tensor_post_order(ctx, n, outputs, &n_ops);
    tex_schedule *s = texi_alloc(ctx, sizeof *s, "a schedule");
    if (!order || !s)
        return NULL;
    s->ctx = ctx;
    s->n_outputs = n;
    s->trace_end = &s->trace;
    s->outputs = texi_alloc(ctx, sizeof *s->outputs * (size_t)n, "a schedule");
    if (!s->outputs || texi_schedule_reserve(s, n_ops + 4) < 0)
        return NULL;
    memcpy(s->outputs, outputs, sizeof *s->outputs * (size_t)n);
    for (int i = 0; i < n_ops; i++) {
        tex_stage *st = texi_stage_new(s, order[i], order[i]->op,
                                       listed(outputs, n, order[i]) || order[i]->op->scatter_into);
        if (!st)
            return NULL;
        s->stages[s->n_stages++] = st;
    }
    return s;
}

/* ---------------------------------------------------------- accessors */

tex_stage *texi_schedule_stage_for(tex_schedule *s, const tex_tensor *t, const char *call)
{
    if (!t) {
        texi_error(s->ctx, TEX_EMISUSE, "%s: the tensor is NULL", call);
        return NULL;
    }
    if (t->ctx != s->ctx) {
        texi_error(s->ctx, TEX_EMISUSE, "%s: tensor '%s' comes from another context", call,
                   t->name);
        return NULL;
    }
    tex_stage *st = texi_schedule_find_stage(s, t);
    if (!st)
        texi_error(s->ctx, TEX_EINVAL,
                   "%s: tensor '%s' has no stage in this schedule (it is not computed for the "
                   "schedule's outputs)",
                   call, t->name);
    return st;
}

tex_stage *tex_stage_of(tex_schedule *s, tex_tensor *t)
{
    return s ? texi_schedule_stage_for(s, t, "tex_stage_of") : NULL;
}

int tex_stage_naxes(tex_stage *st)
{
    return st ? st->n_leaf : -1;
}

/* The i-th of n iters, or NULL with an error naming what is indexed. */
static tex_iter *nth(const tex_stage *st, tex_iter **list, int n, int i, const char *call,
                     const char *what)
{
    if (i >= 0 && i < n)
        return list[i];
    texi_error(st->sch->ctx, TEX_EINVAL, "%s: stage '%s' has %d %s; index %d is out of range", call,
               st->tensor->name, n, what, i);
    return NULL;
}

tex_iter *tex_stage_axis(tex_stage *st, int i)
{
    if (!st)
        return NULL;
    return nth(st, st->leaf, st->n_leaf, i, "tex_stage_axis", "leaf axes");
}

tex_iter *tex_op_axis(tex_stage *st, int i)
{
    if (!st)
        return NULL;
    return nth(st, st->op->axes, st->op->kind == TEXI_OP_COMPUTE ? st->op->n_axes : 0, i,
               "tex_op_axis", "data-parallel axes");
}

tex_iter *tex_op_reduce_axis(tex_stage *st, int i)
{
    if (!st)
        return NULL;
    return nth(st, st->op->raxes, st->op->kind == TEXI_OP_COMPUTE ? st->op->n_raxes : 0, i,
               "tex_op_reduce_axis", "reduce axes");
}
