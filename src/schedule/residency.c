/*
 * The residency check: a reduction kept on chip (scope local or shared)
 * must not be recomputed.
 *
 * A reduction stage P computed at a loop of its consumer (compute_at) with a
 * local or shared buffer holds one tile of P: the region bound inference gave
 * it (stage->region, over the variables of the loops around it). When a loop
 * around P's attach point leaves that tile where it is (no min or extent of
 * the region uses its variable) and may run more than once, every iteration
 * computes the same tile again: the whole reduction is repeated, which is
 * never what such a schedule means (back-to-back GEMM: the first GEMM's row
 * panel computed inside the second GEMM's column-tile loop). tex_lower then
 * fails with TEX_EINVAL naming the stage, its tile, the loop and how often it
 * would repeat (docs/api.md, rule 5), instead of silently recomputing.
 *
 * The loops checked are those around P up to the first global stage on its
 * attach path (P's consumer's loops from the attach axis outward, then those
 * around that consumer when it is local or shared too, and so on). Loops
 * bound to threadIdx or a vthread are exempt (the threads of a block share a
 * shared tile, and each keeps its own local one); loops bound to a block
 * index are not. Global stages, data-parallel or not, are not checked, nor
 * the loops around them: recomputing them is an ordinary trade-off (TVM's
 * compute_at).
 *
 * Input: a schedule after texi_infer_bounds_ex. Output: 0 or TEX_EINVAL.
 */
#include "schedule/bound.h"

#include <stdio.h>
#include <stdlib.h>

/* Whether leaf loop k of st may repeat a tile it does not index. */
static bool counts(const tex_stage *st, int k)
{
    const texi_iter_attr *at = &st->attr[texi_bounds_iter_index(st, st->leaf[k])];
    return at->for_kind != TEXI_FOR_THREAD || at->thread_tag <= (int)TEX_BLOCK_Z;
}

/* Whether the region of stage p uses variable v. */
static bool region_uses(const tex_stage *p, const tex_expr *v)
{
    for (int d = 0; d < p->tensor->ndim; d++)
        if (texi_expr_uses_var(p->region[d].min, v) || texi_expr_uses_var(p->region[d].extent, v))
            return true;
    return false;
}

/* Writes e into buf: its value when constant, else its text. */
static void expr_text(tex_expr *e, char *buf, size_t size)
{
    int64_t v;
    if (tex_expr_const_int(e, &v)) {
        snprintf(buf, size, "%lld", (long long)v);
        return;
    }
    char *s = tex_expr_str(e);
    snprintf(buf, size, "%s", s ? s : "?");
    free(s);
}

/* The TEX_EINVAL of stage p, whose tile loop k of stage c does not move. */
static int refuse(tex_ctx *ctx, const tex_stage *p, const tex_stage *c, int k, tex_expr *ext)
{
    char tile[256] = "", times[64], part[64];
    size_t len = 0;
    for (int d = 0; d < p->tensor->ndim && len < sizeof tile; d++) {
        expr_text(p->region[d].extent, part, sizeof part);
        len += (size_t)snprintf(tile + len, sizeof tile - len, "%s%s", d ? ", " : "", part);
    }
    expr_text(ext, times, sizeof times);
    return texi_error(ctx, TEX_EINVAL,
                      "tex_lower: stage '%s' (scope %s) is computed at axis '%s' of stage '%s' "
                      "into a tile %s[%s], which loop '%s' of stage '%s' around it does not move: "
                      "the reduction would be recomputed %s times; compute it outside that loop, "
                      "at a tile of its consumer that covers the whole extent the tile needs",
                      p->tensor->name, p->scope == TEXI_SCOPE_LOCAL ? "local" : "shared",
                      p->attach_iv->name, p->attach_stage->tensor->name, p->tensor->name, tile,
                      c->leaf[k]->name, c->tensor->name, times);
}

/* Checks stage si (see the file comment). */
static int check_stage(const texi_bounds *b, int si)
{
    const tex_stage *p = b->sch->stages[si];
    if (p->attach != TEXI_ATTACH_AT || p->scope == TEXI_SCOPE_GLOBAL || p->op->n_raxes == 0)
        return 0;
    const tex_stage *st = p;
    for (int hops = 0; st->attach == TEXI_ATTACH_AT && hops < b->sch->n_stages; hops++) {
        const tex_stage *c = st->attach_stage;
        int ci = texi_bounds_stage_index(b, c), k = c->n_leaf - 1;
        while (k >= 0 && c->leaf[k] != st->attach_iv)
            k--;
        for (; ci >= 0 && k >= 0; k--) {
            int a = texi_bounds_iter_index(c, c->leaf[k]);
            tex_expr *ext = c->range[a].extent;
            int64_t n;
            if (counts(c, k) && !(tex_expr_const_int(ext, &n) && n <= 1) &&
                !region_uses(p, b->st[ci].var[a]))
                return refuse(b->sch->ctx, p, c, k, ext);
        }
        if (c->scope == TEXI_SCOPE_GLOBAL)
            break; /* c's own repetitions are a global stage's, not checked */
        st = c;
    }
    return 0;
}

int texi_check_residency(const texi_bounds *b)
{
    for (int si = 0; si < b->sch->n_stages; si++)
        TEXI_TRY(check_stage(b, si));
    return 0;
}
