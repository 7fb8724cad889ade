/*
 * TEX_DUMP=fusion: the automatic scheduler's partition on stderr, one block
 * per kernel (root stage) in execution order, each stage with its class,
 * what happened to it and the cost rule that decided (partition.c):
 *
 *   # fusion (cpu): 1 kernel
 *   kernel 0 'Y' (elementwise): rows, depth 1 -- an output of the schedule
 *     'Y_sum' reduction: computed inside it -- read row by row by one kernel: ...
 *     'R' elementwise: inlined -- elementwise, each element read once
 *
 * Stages merged into another of the same definition (tex_merge) are listed
 * first. An inlined stage is listed under the kernel of its first reader that
 * is not inlined. Printing is the only effect; nothing is printed unless
 * TEX_DUMP lists "fusion" (or is "all").
 */
#include "autosched/autosched.h"
#include "schedule/intrin.h"
#include "util/dump.h"
#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>

static const char *kind_name(enum texi_as_kind k)
{
    switch (k) {
    case TEXI_AS_INPUT:
        return "input";
    case TEXI_AS_INJECTIVE:
        return "elementwise";
    case TEXI_AS_REDUCE:
        return "reduction";
    case TEXI_AS_GEMM:
        return "gemm-like";
    }
    return "?";
}

static const char *mode_name(enum texi_as_mode m)
{
    switch (m) {
    case TEXI_AS_MODE_ALONE:
        return "alone";
    case TEXI_AS_MODE_ROWS:
        return "rows";
    case TEXI_AS_MODE_TILES:
        return "register tiles";
    }
    return "?";
}

/* The kernel (root node) an inlined node i ends up in: its first reader's. */
static int kernel_of(const texi_as_graph *g, int i)
{
    for (int guard = 0; guard < g->n && g->nodes[i].fate == TEXI_AS_INLINED; guard++) {
        int nc = 0;
        tex_stage **cons = texi_schedule_consumers(g->sch, g->nodes[i].st->tensor, &nc);
        if (!cons || nc == 0)
            return -1;
        i = texi_schedule_stage_index(g->sch, cons[0]);
        if (i < 0 || i >= g->n)
            return -1;
    }
    return g->nodes[i].root;
}

/* For a GEMM-like node: whether its tiles are tensorized, and with what. */
static void dump_builtin(texi_sb *sb, const texi_as_graph *g, const texi_as_node *nd)
{
    if (nd->kind != TEXI_AS_GEMM || g->cuda)
        return;
    if (nd->tz_why)
        texi_sb_printf(sb, "; not tensorized: %s", nd->tz_why);
    else
        texi_sb_printf(sb, "; tensorized with %s (tiles of up to %lld x %lld)", g->tz_builtin,
                       (long long)texi_intrin_cpu_max_rows(g->tz_builtin), (long long)g->tz_nr);
}

static void dump_kernel(texi_sb *sb, const texi_as_graph *g, int r, int number)
{
    const texi_as_node *nd = &g->nodes[r];
    texi_sb_printf(sb, "kernel %d '%s' (%s): %s", number, nd->st->tensor->name, kind_name(nd->kind),
                   mode_name(nd->mode));
    if (nd->mode != TEXI_AS_MODE_ALONE)
        texi_sb_printf(sb, ", depth %d", nd->depth);
    texi_sb_printf(sb, " -- %s", nd->why);
    dump_builtin(sb, g, nd);
    texi_sb_printf(sb, "\n");
    for (int i = r - 1; i >= 0; i--) {
        const texi_as_node *m = &g->nodes[i];
        if (m->fate == TEXI_AS_ATTACHED && m->root == r) {
            texi_sb_printf(sb, "  '%s' %s: computed inside it -- %s", m->st->tensor->name,
                           kind_name(m->kind), m->why);
            dump_builtin(sb, g, m);
            texi_sb_printf(sb, "\n");
        } else if (m->fate == TEXI_AS_INLINED && kernel_of(g, i) == r)
            texi_sb_printf(sb, "  '%s' %s: inlined -- %s\n", m->st->tensor->name,
                           kind_name(m->kind), m->why);
    }
}

void texi_as_dump(const texi_as_graph *g, const char *target)
{
    if (!texi_dump_wanted("fusion"))
        return;
    int n_roots = 0;
    for (int i = 0; i < g->n; i++)
        n_roots += g->nodes[i].fate == TEXI_AS_ROOT;
    texi_sb sb;
    texi_sb_init(&sb);
    texi_sb_printf(&sb, "# fusion (%s): %d kernel%s\n", target, n_roots, n_roots == 1 ? "" : "s");
    for (int i = 0; i < g->n_merged; i++)
        texi_sb_printf(&sb, "'%s' merged into '%s' -- the same definition (tex_merge)\n",
                       g->merged[2 * i], g->merged[2 * i + 1]);
    for (int i = 0, k = 0; i < g->n; i++)
        if (g->nodes[i].fate == TEXI_AS_ROOT)
            dump_kernel(&sb, g, i, k++);
    char *text = texi_sb_take(&sb);
    fputs(text ? text : "# fusion: (out of memory)\n", stderr);
    free(text);
}

void texi_as_dump_plain(const texi_as_graph *g, const char *target, const char *why)
{
    if (!texi_dump_wanted("fusion"))
        return;
    int n = 0;
    for (int i = 0; i < g->sch->n_stages; i++)
        n += g->sch->stages[i]->op && g->sch->stages[i]->op->kind == TEXI_OP_COMPUTE;
    fprintf(stderr,
            "# fusion (%s): %d kernel%s, the plain schedule (every compute stage a kernel) -- %s\n",
            target, n, n == 1 ? "" : "s", why);
}
