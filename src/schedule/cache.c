/*
 * Dataflow rewrites that add a cache stage: cache_read and cache_write
 * (TVM's CacheRead / CacheWrite, docs/api.md, rule 4).
 *
 * cache_read(A, scope, readers) makes `A.<scope>` = a copy of A over fresh
 * axes ax0, ax1, ... with A's shape, and gives each reader's stage a new op
 * whose body reads the cache wherever it read A (indices unchanged). The
 * reader keeps its axes, so its iters, relations and annotations stay valid.
 * The cache's stage goes right after A's stage.
 *
 * cache_write(C, scope) makes `C.<scope>` = C's current definition over fresh
 * axes with C's axis names and extents (fresh reduce axes too), inserted right
 * before C's stage; C's stage gets the op `C[i..] = C.<scope>[i..]` over fresh
 * axes with C's names again, and its iters and relations start over. Like TVM
 * it must come before other primitives on C's loops: a stage that was split,
 * fused, reordered or annotated, or that has stages attached inside it, is
 * refused (those decisions would silently disappear).
 *
 * Tensors are never changed: a stage's current op (stage->op) is what
 * changes, and the new tensors' ops are their definitions, so
 * tex_eval_reference computes the same values for a cache as for its source.
 * Names are made unique within the schedule (A.shared, A.shared.1, ...).
 */
#include "schedule/primitive.h"
#include "schedule/trace.h"

#include <stdio.h>
#include <string.h>

int texi_iters_copy(tex_ctx *ctx, int n, tex_iter *const src[], tex_iter **dst)
{
    for (int i = 0; i < n; i++)
        if (!(dst[i] = texi_iter_new(ctx, src[i]->name, src[i]->kind, src[i]->var->dtype,
                                     src[i]->extent)))
            return TEX_ENOMEM;
    /* a ragged extent reads the copied axes: it reads their copies */
    tex_expr *vars[128], *vals[128];
    for (int i = 0; i < n && i < 128; i++) {
        vars[i] = src[i]->var;
        vals[i] = dst[i]->var;
    }
    for (int i = 0; i < n; i++) {
        if (!src[i]->ragged)
            continue;
        dst[i]->ragged = true;
        if (!(dst[i]->extent = texi_substitute(src[i]->extent, n < 128 ? n : 128, vars, vals)))
            return TEX_ENOMEM;
    }
    return 0;
}

texi_op *texi_op_new(tex_ctx *ctx, int n_axes, tex_iter *const axes[], tex_expr *body, int n_inputs,
                     tex_tensor *const inputs[])
{
    texi_op *op = texi_alloc(ctx, sizeof *op, "an operation");
    if (!op)
        return NULL;
    op->kind = TEXI_OP_COMPUTE;
    op->n_axes = n_axes;
    op->axes = texi_alloc(ctx, sizeof *op->axes * (size_t)(n_axes > 0 ? n_axes : 1), "axes");
    op->n_inputs = n_inputs;
    op->inputs =
        texi_alloc(ctx, sizeof *op->inputs * (size_t)(n_inputs > 0 ? n_inputs : 1), "inputs");
    if (!op->axes || !op->inputs)
        return NULL;
    for (int i = 0; i < n_axes; i++)
        op->axes[i] = axes[i];
    for (int i = 0; i < n_inputs; i++)
        op->inputs[i] = inputs[i];
    op->body = body;
    if (body->kind == TEXI_EXPR_REDUCE) {
        op->n_raxes = body->u.red.n_axes;
        op->raxes = body->u.red.axes;
    }
    return op;
}

static int check_scope(tex_schedule *s, const tex_tensor *t, tex_scope scope, const char *call)
{
    if ((int)scope < (int)TEX_SCOPE_GLOBAL || (int)scope > (int)TEX_SCOPE_LOCAL)
        return texi_error(s->ctx, TEX_EINVAL, "%s: tensor '%s': unknown scope %d", call, t->name,
                          (int)scope);
    return 0;
}

/* "T.scope", unique in s. */
static const char *cache_name(tex_schedule *s, const tex_tensor *t, tex_scope scope)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s.%s", t->name, texi_scope_name((enum texi_scope)scope));
    return texi_schedule_unique_name(s, buf);
}

/* ---------------------------------------------------------- cache_read */

typedef struct {
    tex_tensor *from, *to;
    bool failed;
} access_swap;

/* Rewrite callback: ACCESS of from -> ACCESS of to (indices rewritten too). */
static tex_expr *swap_access(tex_expr *e, void *ud)
{
    access_swap *w = ud;
    if (e->kind != TEXI_EXPR_ACCESS || e->u.access.tensor != w->from || w->failed)
        return NULL;
    tex_expr *idx[64];
    int n = e->u.access.n_idx;
    for (int i = 0; i < n && !w->failed; i++)
        if (!(idx[i] = texi_expr_mutate(e->u.access.idx[i], swap_access, w)))
            w->failed = true;
    tex_expr *out = w->failed ? NULL : texi_access_new(w->to, n, idx);
    w->failed |= !out;
    return out;
}

texi_op *texi_op_keep_scatter(texi_op *op, const texi_op *from)
{
    if (op) {
        op->scatter_rows = from->scatter_rows;
        op->scatter_into = from->scatter_into;
    }
    return op;
}

/* The reader's op with every read of from redirected to to (primitive.h). */
texi_op *texi_op_redirect(tex_ctx *ctx, const texi_op *op, tex_tensor *from, tex_tensor *to)
{
    access_swap w = {from, to, false};
    tex_expr *body = texi_expr_mutate(op->body, swap_access, &w);
    if (!body || w.failed)
        return NULL;
    texi_op *out = texi_op_keep_scatter(
        texi_op_new(ctx, op->n_axes, op->axes, body, op->n_inputs, op->inputs), op);
    if (!out)
        return NULL;
    for (int i = 0; i < out->n_inputs; i++)
        if (out->inputs[i] == from)
            out->inputs[i] = to;
    return out;
}

static int check_readers(tex_schedule *s, const tex_tensor *t, int n, tex_tensor *const readers[],
                         tex_stage **rs, const char *call)
{
    if (n < 1 || !readers || n > s->n_stages)
        return texi_error(s->ctx, TEX_EINVAL,
                          "%s: tensor '%s': needs 1 to %d distinct readers "
                          "(got %d%s)",
                          call, t->name, s->n_stages, n, readers ? "" : ", NULL array");
    for (int i = 0; i < n; i++) {
        if (!(rs[i] = texi_schedule_stage_for(s, readers[i], call)))
            return tex_errcode(s->ctx);
        if (!texi_op_reads(rs[i]->op, t))
            return texi_error(s->ctx, TEX_EINVAL,
                              "%s: stage '%s' does not read tensor '%s' "
                              "directly",
                              call, rs[i]->tensor->name, t->name);
        TEXI_TRY(texi_prefetch_check(rs[i], NULL, t, call));
        for (int j = 0; j < i; j++)
            if (rs[j] == rs[i])
                return texi_error(s->ctx, TEX_EINVAL,
                                  "%s: tensor '%s': reader '%s' is listed "
                                  "twice",
                                  call, t->name, readers[i]->name);
    }
    return 0;
}

/* The copy `name[ax..] = t[ax..]`. */
static tex_tensor *copy_tensor(tex_ctx *ctx, const char *name, tex_tensor *t)
{
    tex_iter *axes[64];
    tex_expr *idx[64];
    for (int i = 0; i < t->ndim; i++) {
        char an[32];
        snprintf(an, sizeof an, "ax%d", i);
        tex_dtype dt =
            t->shape[i]->dtype == TEX_I64 || t->shape[i]->dtype == TEX_U64 ? TEX_I64 : TEX_I32;
        tex_expr *ext = texi_convert(t->shape[i], dt);
        if (!ext || !(axes[i] = texi_iter_new(ctx, an, TEXI_ITER_DATA, dt, ext)))
            return NULL;
        idx[i] = axes[i]->var;
    }
    tex_expr *body = texi_access_new(t, t->ndim, idx);
    return body ? texi_compute_tensor_new(ctx, name, t->ndim, axes, body, 1, &t) : NULL;
}

tex_tensor *tex_cache_read(tex_schedule *s, tex_tensor *t, tex_scope scope, int nreaders,
                           tex_tensor *const readers[])
{
    static const char call[] = "tex_cache_read";
    if (!s)
        return NULL;
    tex_stage *src = texi_schedule_stage_for(s, t, call);
    tex_stage **rs = texi_alloc(s->ctx, sizeof *rs * (size_t)(s->n_stages + 1), "a stage list");
    if (!src || !rs || check_scope(s, t, scope, call) < 0 ||
        check_readers(s, t, nreaders, readers, rs, call) < 0)
        return NULL;
    if (t->ndim > 64) {
        texi_error(s->ctx, TEX_EINVAL, "%s: tensor '%s' has more than 64 dimensions", call,
                   t->name);
        return NULL;
    }
    texi_op **ops = texi_alloc(s->ctx, sizeof *ops * (size_t)nreaders, "reader ops");
    const char *name = cache_name(s, t, scope);
    tex_tensor *cache = ops && name ? copy_tensor(s->ctx, name, t) : NULL;
    tex_stage *cst = cache ? texi_stage_new(s, cache, cache->op, false) : NULL;
    if (!cst || texi_schedule_reserve(s, 1) < 0)
        return NULL;
    for (int i = 0; i < nreaders; i++)
        if (!(ops[i] = texi_op_redirect(s->ctx, rs[i]->op, t, cache)))
            return NULL;
    // Everything is allocated: commit.
    texi_trace_rec tr;
    texi_trace_begin(&tr, s, "cache_read");
    texi_trace_stage(&tr, src);
    texi_trace_word(&tr, texi_trace_scopes[scope]);
    for (int i = 0; i < nreaders; i++)
        texi_trace_stage(&tr, rs[i]);
    cst->scope = (enum texi_scope)scope;
    cst->is_cache = true;
    for (int i = 0; i < nreaders; i++)
        rs[i]->op = ops[i];
    texi_schedule_insert(s, texi_schedule_stage_index(s, src) + 1, cst);
    texi_trace_commit(&tr);
    return cache;
}

/* --------------------------------------------------------- cache_write */

/* st has no primitive applied to its loops and nothing attached inside it. */
int texi_stage_check_untouched(const tex_stage *st, const char *call)
{
    tex_ctx *ctx = st->sch->ctx;
    const char *why = NULL, *axis = "";
    for (int i = 0; i < st->n_all && !why; i++)
        if (st->attr[i].for_kind != TEXI_FOR_SERIAL) {
            why = "is annotated";
            axis = st->all[i]->name;
        }
    for (int i = 0; i < st->n_leaf && !why; i++)
        if (st->n_leaf != st->n_root || st->leaf[i] != st->root[i]) {
            why = st->n_rel ? "was split or fused" : "was reordered";
            axis = st->leaf[i]->name;
        }
    const tex_stage *child = texi_schedule_attached_at(st->sch, st, NULL);
    if (!why && st->atomic) {
        why = "is atomic (tex_atomic)";
        axis = st->tensor->name;
    }
    if (!why && st->n_prefetch) {
        why = "prefetches (tex_prefetch)";
        axis = st->prefetch[0].iv->name;
    }
    if (!why && child) {
        why = "has a stage attached to it";
        axis = child->attach_iv->name;
    }
    if (!why)
        return 0;
    return texi_error(ctx, TEX_EINVAL,
                      "%s: stage '%s' already has schedule primitives applied "
                      "(axis '%s' %s); call %s before scheduling '%s'",
                      call, st->tensor->name, axis, why, call, st->tensor->name);
}

/* op's body over the iters `to` instead of `from` (n of them; reduce axes among
 * them are the REDUCE node's). */
static tex_expr *rebase_body(const texi_op *op, int n, tex_iter *const from[], tex_iter *const to[])
{
    tex_expr *vars[128], *vals[128];
    for (int i = 0; i < n; i++) {
        vars[i] = from[i]->var;
        vals[i] = to[i]->var;
    }
    tex_expr *b = op->body;
    if (b->kind != TEXI_EXPR_REDUCE)
        return texi_substitute(b, n, vars, vals);
    tex_expr *body = texi_substitute(b->u.red.body, n, vars, vals);
    tex_expr *cond = b->u.red.cond ? texi_substitute(b->u.red.cond, n, vars, vals) : NULL;
    if (!body || (b->u.red.cond && !cond))
        return NULL;
    return texi_reduce_new(b->u.red.op, body, op->n_raxes, to + op->n_axes, cond);
}

/* `t[i..] = src[i..]` over fresh copies of axes as C's stage's new op. */
static texi_op *identity_op(tex_ctx *ctx, int n, tex_iter *const axes[], tex_tensor *src)
{
    tex_iter *fresh[64];
    tex_expr *idx[64];
    if (texi_iters_copy(ctx, n, axes, fresh) < 0)
        return NULL;
    for (int i = 0; i < n; i++)
        idx[i] = fresh[i]->var;
    tex_expr *body = texi_access_new(src, n, idx);
    return body ? texi_op_new(ctx, n, fresh, body, 1, &src) : NULL;
}

tex_tensor *tex_cache_write(tex_schedule *s, tex_tensor *t, tex_scope scope)
{
    static const char call[] = "tex_cache_write";
    if (!s)
        return NULL;
    tex_stage *st = texi_schedule_stage_for(s, t, call);
    if (!st || texi_stage_check(st, call, true) < 0 || check_scope(s, t, scope, call) < 0 ||
        texi_stage_check_untouched(st, call) < 0)
        return NULL;
    tex_ctx *ctx = s->ctx;
    const texi_op *op = st->op;
    if (st->n_root > 128 || op->n_axes > 64) {
        texi_error(ctx, TEX_EINVAL, "%s: stage '%s' has too many axes", call, t->name);
        return NULL;
    }
    tex_iter *fresh[128];
    const char *name = cache_name(s, t, scope);
    if (!name || texi_iters_copy(ctx, st->n_root, st->root, fresh) < 0)
        return NULL;
    tex_expr *body = rebase_body(op, st->n_root, st->root, fresh);
    tex_tensor *cl =
        body ? texi_compute_tensor_new(ctx, name, op->n_axes, fresh, body, op->n_inputs, op->inputs)
             : NULL;
    tex_stage *cst = cl ? texi_stage_new(s, cl, cl->op, false) : NULL;
    texi_op *copy =
        cst ? texi_op_keep_scatter(identity_op(ctx, op->n_axes, op->axes, cl), op) : NULL;
    tex_stage *fresh_st = copy ? texi_stage_new(s, t, copy, st->is_output) : NULL;
    if (!fresh_st || texi_schedule_reserve(s, 1) < 0)
        return NULL;
    // Everything is allocated: commit.
    texi_trace_rec tr;
    texi_trace_begin(&tr, s, "cache_write");
    texi_trace_stage(&tr, st);
    texi_trace_word(&tr, texi_trace_scopes[scope]);
    cst->scope = (enum texi_scope)scope;
    cst->is_cache = true;
    texi_stage_adopt(st, fresh_st);
    texi_schedule_insert(s, texi_schedule_stage_index(s, st), cst);
    texi_trace_commit(&tr);
    return cl;
}
