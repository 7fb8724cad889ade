/*
 * tex_schedule_str: the schedule as text, for people (and for tests that
 * check a failed primitive changed nothing).
 *
 * It runs bound inference first (texi_infer_bounds) so that every range a
 * user sees is the one lowering will use; the context's error state is the
 * same afterwards (an inference failure is printed instead).
 * One block per stage, in stage order (producers first):
 *
 *   stage B (cache): compute at axis i.outer of C, scope local
 *     region: [i.outer*8, i.outer*8 + 8), [0, 32)
 *     axis i.c       [0, 8)
 *     axis k         [0, 64)  reduce unrolled
 *     split i -> i.outer, i.inner by factor 8
 *     tensorize at i.inner with intrinsic gemm16   (tex_tensorize)
 *
 * Placeholders print their shape only; inlined stages print no loops. The
 * ranges are written over the loop variables bound inference makes (named
 * like the iters); without bounds the nominal extents are printed. The text
 * is stable: it depends only on the schedule.
 */
#include "schedule/primitive.h"

#include <string.h>

static void put_expr(texi_sb *sb, const tex_expr *e)
{
    if (e)
        texi_expr_print(sb, e);
    else
        texi_sb_puts(sb, "?");
}

/* "[min, min + extent)", simplified. */
static void put_range(texi_sb *sb, const texi_rng *r)
{
    tex_expr *end = NULL;
    if (r->min && r->extent) {
        tex_dtype t = texi_dtype_promote(r->min->dtype, r->extent->dtype);
        tex_expr *a = texi_convert(r->min, t), *b = a ? texi_convert(r->extent, t) : NULL;
        end = b ? texi_binary(TEXI_EXPR_ADD, a, b) : NULL;
        end = end ? texi_simplify(end, 0, NULL) : NULL;
    }
    texi_sb_putc(sb, '[');
    put_expr(sb, r->min);
    texi_sb_puts(sb, ", ");
    put_expr(sb, end);
    texi_sb_putc(sb, ')');
}

static void put_header(texi_sb *sb, const tex_stage *st)
{
    texi_sb_printf(sb, "stage %s%s%s: ", st->tensor->name, st->is_output ? " (output)" : "",
                   st->is_cache ? " (cache)" : "");
    if (st->op->kind == TEXI_OP_PLACEHOLDER) {
        texi_sb_puts(sb, "placeholder [");
        for (int d = 0; d < st->tensor->ndim; d++) {
            texi_sb_puts(sb, d ? ", " : "");
            put_expr(sb, st->tensor->shape[d]);
        }
        texi_sb_puts(sb, "]\n");
        return;
    }
    switch (st->attach) {
    case TEXI_ATTACH_ROOT:
        texi_sb_puts(sb, "compute at root");
        break;
    case TEXI_ATTACH_INLINE:
        texi_sb_puts(sb, "compute inline");
        break;
    case TEXI_ATTACH_AT:
        texi_sb_printf(sb, "compute at axis %s of %s", st->attach_iv->name,
                       st->attach_stage->tensor->name);
        break;
    }
    texi_sb_printf(sb, ", scope %s%s\n", texi_scope_name(st->scope),
                   st->double_buffer ? ", double buffer" : "");
}

static void put_axes(texi_sb *sb, const tex_stage *st, bool have_bounds)
{
    int w = 0;
    for (int i = 0; i < st->n_leaf; i++)
        w = (int)strlen(st->leaf[i]->name) > w ? (int)strlen(st->leaf[i]->name) : w;
    for (int i = 0; i < st->n_leaf; i++) {
        const tex_iter *iv = st->leaf[i];
        int a = texi_stage_iter_index(st, iv);
        texi_sb_printf(sb, "  axis %-*s ", w, iv->name);
        if (have_bounds) {
            put_range(sb, &st->range[a]);
        } else {
            texi_sb_puts(sb, "extent ");
            put_expr(sb, iv->extent);
        }
        if (iv->kind == TEXI_ITER_REDUCE)
            texi_sb_puts(sb, "  reduce");
        if (st->attr[a].for_kind != TEXI_FOR_SERIAL)
            texi_sb_printf(sb, "  %s", texi_iter_attr_name(&st->attr[a]));
        texi_sb_putc(sb, '\n');
    }
}

static const char *tail_name(tex_tail t)
{
    switch (t) {
    case TEX_TAIL_AUTO:
        return "auto";
    case TEX_TAIL_GUARD:
        return "guard";
    case TEX_TAIL_ROUND_UP:
        return "round-up";
    case TEX_TAIL_SHIFT_INWARDS:
        return "shift-inwards";
    case TEX_TAIL_PREDICATE:
        return "predicate";
    }
    return "?";
}

static void put_relations(texi_sb *sb, const tex_stage *st)
{
    for (int r = 0; r < st->n_rel; r++) {
        const texi_relation *rel = &st->rel[r];
        switch (rel->kind) {
        case TEXI_REL_SPLIT:
            texi_sb_printf(sb, "  split %s -> %s, %s by %s ", rel->parent->name, rel->outer->name,
                           rel->inner->name, rel->factor ? "factor" : "nparts");
            put_expr(sb, rel->factor ? rel->factor : rel->nparts);
            if (rel->tail != TEX_TAIL_AUTO)
                texi_sb_printf(sb, ", tail %s", tail_name(rel->tail));
            texi_sb_putc(sb, '\n');
            break;
        case TEXI_REL_FUSE:
            texi_sb_printf(sb, "  fuse %s, %s -> %s\n", rel->outer->name, rel->inner->name,
                           rel->fused->name);
            break;
        }
    }
    for (int d = 0; d < st->op->n_axes; d++)
        if (st->storage_order[d] != d) {
            texi_sb_puts(sb, "  storage order");
            for (int k = 0; k < st->op->n_axes; k++)
                texi_sb_printf(sb, "%s %s", k ? "," : "", st->op->axes[st->storage_order[k]]->name);
            texi_sb_putc(sb, '\n');
            break;
        }
    for (int d = 0; d < st->op->n_axes; d++)
        if (st->align_factor[d])
            texi_sb_printf(sb, "  storage align %s: factor %d, offset %d\n", st->op->axes[d]->name,
                           st->align_factor[d], st->align_offset[d]);
    for (int k = 0; k < st->n_prefetch; k++) {
        const texi_prefetch *p = &st->prefetch[k];
        texi_sb_printf(sb, "  prefetch %s at axis %s, %d iterations of axis %s ahead\n",
                       p->tensor->name, p->iv->name, p->offset, p->from->name);
    }
}

static void put_stage(texi_sb *sb, const tex_stage *st, bool have_bounds)
{
    put_header(sb, st);
    if (st->op->kind == TEXI_OP_PLACEHOLDER || st->attach == TEXI_ATTACH_INLINE)
        return;
    if (have_bounds) {
        texi_sb_puts(sb, "  region: ");
        for (int d = 0; d < st->tensor->ndim; d++) {
            texi_sb_puts(sb, d ? ", " : "");
            put_range(sb, &st->region[d]);
        }
        texi_sb_putc(sb, '\n');
    }
    put_axes(sb, st, have_bounds);
    put_relations(sb, st);
    if (st->tensorize_iv)
        texi_sb_printf(sb, "  tensorize at %s with intrinsic %s\n", st->tensorize_iv->name,
                       st->intrin->name);
}

/* Bound inference with the context's error state saved around it (the
 * reason of a failure goes to sb instead). */
static bool infer_quietly(tex_schedule *s, texi_sb *sb)
{
    tex_ctx *ctx = s->ctx;
    int saved_code = ctx->errcode;
    char saved_msg[TEXI_ERRMSG_MAX];
    memcpy(saved_msg, ctx->errmsg, sizeof saved_msg);
    tex_clear_error(ctx);
    bool ok = texi_infer_bounds(s) == 0;
    if (!ok)
        texi_sb_printf(sb, "bounds: not available (%s)\n", ctx->errmsg);
    ctx->errcode = saved_code;
    memcpy(ctx->errmsg, saved_msg, sizeof saved_msg);
    return ok;
}

char *tex_schedule_str(tex_schedule *s)
{
    if (!s)
        return NULL;
    texi_sb sb;
    texi_sb_init(&sb);
    bool have_bounds = infer_quietly(s, &sb);
    for (int i = 0; i < s->n_stages; i++)
        put_stage(&sb, s->stages[i], have_bounds);
    return texi_sb_take(&sb);
}
