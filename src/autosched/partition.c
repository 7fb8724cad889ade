/*
 * The graph level of the automatic scheduler (AKG's graph-kernel fusion,
 * CINN's vertical fusion): decides for every compute stage whether it is
 * inlined into its consumers, computed inside the loops of another kernel,
 * or is a kernel (a root stage) itself. The cost rule, consumers first:
 *
 *   inline    an injective stage that is not an output nor an operand of a
 *             GEMM-like stage tensorized with a CPU built-in (nor, on the
 *             CPU, a choice among values read by register tiles:
 *             selects_for_tiles) whose value, inlined, would be copied
 *             into at most TEXI_AS_MAX_COPIES places: when it only moves
 *             data (pad, transpose, reshape, broadcast: recomputing is a
 *             load), or when no consumer would evaluate one of its
 *             elements twice (no reuse) and it is cheap or read by one
 *             kernel only;
 *   attach    a stage whose readers all end up in one kernel, each reading
 *             it at the kernel's leading (row) indices, and that does not
 *             feed a GEMM-like stage's reduction (it would be recomputed
 *             per tile);
 *   root      everything else: outputs, stages read by two kernels, inputs
 *             of a GEMM-like reduction, stages not read row by row, a sum
 *             of products that a row kernel would compute per row gathering
 *             an operand stored [N, K] (Q . K^T before a softmax: its own
 *             kernel packs K; per row it ran at 13 GFLOP/s).
 *
 * A kernel with a GEMM-like member indexed by all the root's dims is laid
 * out in register tiles (epilogue fusion); other kernels with members in
 * rows. The node's `why` records the rule that decided. Only
 * tex_compute_inline is applied here; cpu.c places the attached stages.
 */
#include "autosched/autosched.h"

/* Index of stage st among the graph's nodes. */
static int node_of(const texi_as_graph *g, const tex_stage *st)
{
    return texi_schedule_stage_index(g->sch, st);
}

/* Lead match of reader c's reads of t, followed through inlined readers:
 * the minimum along every path to a stage that is not inlined. */
static int path_lead(const tex_stage *c, const tex_tensor *t, int lead)
{
    int m = texi_as_lead_match(c, t);
    return m < lead ? m : lead;
}

typedef void (*eff_fn)(texi_as_graph *g, int reader, int lead, void *ud);

/* Calls fn on every non-inlined reader of node i's tensor, looking through
 * inlined readers, with the least lead match along the path. */
static void each_eff_reader(texi_as_graph *g, int i, int lead, eff_fn fn, void *ud)
{
    int nc = 0;
    tex_stage **cons = texi_schedule_consumers(g->sch, g->nodes[i].st->tensor, &nc);
    for (int k = 0; cons && k < nc; k++) {
        int c = node_of(g, cons[k]);
        int l = path_lead(cons[k], g->nodes[i].st->tensor, lead);
        if (g->nodes[c].fate == TEXI_AS_INLINED)
            each_eff_reader(g, c, l, fn, ud);
        else
            fn(g, c, l, ud);
    }
}

static void count_reader(texi_as_graph *g, int reader, int lead, void *ud)
{
    (void)g, (void)reader, (void)lead;
    ++*(int *)ud;
}

int texi_as_inline_copies(texi_as_graph *g, int i)
{
    int nc = 0, copies = 0;
    tex_stage **cons = texi_schedule_consumers(g->sch, g->nodes[i].st->tensor, &nc);
    for (int k = 0; cons && k < nc && copies <= TEXI_AS_MAX_COPIES; k++) {
        int c = node_of(g, cons[k]);
        int64_t n = (int64_t)texi_as_read_count(cons[k], g->nodes[i].st->tensor) *
                    (g->nodes[c].fate == TEXI_AS_INLINED ? texi_as_inline_copies(g, c) : 1);
        copies += n > TEXI_AS_MAX_COPIES ? TEXI_AS_MAX_COPIES + 1 : (int)n;
    }
    return copies <= TEXI_AS_MAX_COPIES ? copies : TEXI_AS_MAX_COPIES + 1;
}

/* Whether node i would be evaluated more than once per element if inlined. */
static bool would_recompute(texi_as_graph *g, int i)
{
    int nc = 0;
    tex_stage **cons = texi_schedule_consumers(g->sch, g->nodes[i].st->tensor, &nc);
    for (int k = 0; cons && k < nc; k++) {
        const texi_as_node *c = &g->nodes[node_of(g, cons[k])];
        if (texi_as_reads_with_reuse(cons[k], g->nodes[i].st->tensor) ||
            (c->fate == TEXI_AS_INLINED && c->recomputed))
            return true;
    }
    return false;
}

/* Whether a reader of node i is a GEMM-like stage that calls the CPU GEMM
 * built-in (builtin), or that is laid out in register tiles (!builtin). */
static bool read_by_gemm(const texi_as_graph *g, int i, bool builtin)
{
    int nc = 0;
    tex_stage **cons = texi_schedule_consumers(g->sch, g->nodes[i].st->tensor, &nc);
    for (int k = 0; cons && k < nc; k++) {
        const texi_as_node *c = &g->nodes[node_of(g, cons[k])];
        if (c->kind == TEXI_AS_GEMM && !c->tz_why == builtin)
            return true;
    }
    return false;
}

/* Whether a reader of node i is a GEMM-like stage whose tiles fit the CPU
 * GEMM built-in: the built-in reads its operands from buffers. */
static bool feeds_builtin(const texi_as_graph *g, int i)
{
    return read_by_gemm(g, i, true);
}

static bool is_select(tex_expr *e, void *ud)
{
    *(bool *)ud |= e->kind == TEXI_EXPR_SELECT;
    return !*(bool *)ud;
}

/* Whether node i chooses among values (a padding's border, a concat's
 * parts) and, on the CPU, a reader is a GEMM-like stage laid out in
 * register tiles (not the built-in): inlined there, the choice is made per
 * element of the tile's vectors, each lane loaded on its own from a
 * clamped index. Computed once into a buffer instead, the NCHW 64-channel
 * 3 x 3 conv of 56 x 56 pixels ran 4.8x faster, a 32-channel depthwise one
 * of 112 x 112 7-12x, the 7 x 7 / 2 stem on 224 x 224 3.4x. */
static bool selects_for_tiles(const texi_as_graph *g, int i)
{
    if (g->cuda)
        return false; /* its tiles stage their operands in shared memory */
    bool sel = false;
    texi_expr_visit(g->nodes[i].st->op->body, is_select, &sel);
    return sel && read_by_gemm(g, i, false);
}

/* The inline half of the cost rule for injective node i (file comment). */
static void decide_inline(texi_as_graph *g, int i)
{
    texi_as_node *nd = &g->nodes[i];
    nd->recomputed = would_recompute(g, i);
    nd->n_eff = 0;
    each_eff_reader(g, i, INT32_MAX, count_reader, &nd->n_eff);
    if (feeds_builtin(g, i)) {
        nd->why = "an operand of a tensorized GEMM: the built-in reads it from a buffer";
    } else if (texi_as_inline_copies(g, i) > TEXI_AS_MAX_COPIES) {
        nd->why = "its value read in too many places: inlined, the expressions would multiply";
    } else if (nd->movement && selects_for_tiles(g, i)) {
        nd->why = "a choice read by register tiles: inlined, each vector lane would load alone";
    } else if (nd->movement) {
        nd->fate = TEXI_AS_INLINED;
        nd->why = "moves data only: recomputing an element is a load";
    } else if (nd->recomputed) {
        nd->why = "a reader reuses its elements: inlining would recompute them";
    } else if (nd->expensive && nd->n_eff > 1) {
        nd->why = "expensive and read by several stages: computed once";
    } else {
        nd->fate = TEXI_AS_INLINED;
        nd->why = nd->n_eff > 1 ? "cheap elementwise: recomputed in each reader"
                                : "elementwise, each element read once";
    }
}

typedef struct {
    int root;      /* the readers' common root, -1 before the first, -2 when several */
    int lead;      /* the least lead match over every path */
    bool gemm_in;  /* a reader is GEMM-like (this feeds its reduction) */
    int gemm_name; /* that reader */
} reader_summary;

static void summarize_reader(texi_as_graph *g, int reader, int lead, void *ud)
{
    reader_summary *s = ud;
    int r = g->nodes[reader].root;
    s->root = s->root == -1 || s->root == r ? r : -2;
    if (lead < s->lead)
        s->lead = lead;
    if (g->nodes[reader].kind == TEXI_AS_GEMM) {
        s->gemm_in = true;
        s->gemm_name = reader;
    }
}

/* Node i becomes a root for reason why. */
static void make_root(texi_as_graph *g, int i, const char *why)
{
    texi_as_node *nd = &g->nodes[i];
    nd->fate = TEXI_AS_ROOT;
    nd->root = i;
    nd->why = why;
    nd->depth = nd->st->tensor->ndim;
    nd->n_memb = 0;
    nd->gemm = -1;
}

/* The attach half of the cost rule for node i (not inlined, not an input). */
static void decide_attach(texi_as_graph *g, int i)
{
    texi_as_node *nd = &g->nodes[i];
    if (nd->st->is_output) {
        make_root(g, i, "an output of the schedule");
        return;
    }
    reader_summary s = {.root = -1, .lead = INT32_MAX, .gemm_name = -1};
    each_eff_reader(g, i, INT32_MAX, summarize_reader, &s);
    if (s.root < 0) {
        make_root(g, i, "read by several kernels");
    } else if (s.gemm_in && nd->movement && feeds_builtin(g, i)) {
        make_root(g, i,
                  "an operand of a tensorized GEMM, read from a buffer (a padding whose zeros "
                  "the tiles skip is not computed: lowering reads its source, pass pad_bypass)");
    } else if (s.gemm_in) {
        make_root(g, i, "feeds a GEMM-like reduction: attached, it would be recomputed per tile");
    } else if (s.lead < 1) {
        make_root(g, i, "its kernel's reader does not read it row by row");
    } else if (s.lead < g->nodes[s.root].st->tensor->ndim && texi_as_columns_gathered(nd->st)) {
        make_root(g, i,
                  "a sum of products reading an operand stored [N, K]: computed per row it would "
                  "gather that operand's columns; a kernel of its own packs it or reduces along "
                  "it");
    } else {
        texi_as_node *r = &g->nodes[s.root];
        nd->fate = TEXI_AS_ATTACHED;
        nd->root = s.root;
        nd->why = nd->kind == TEXI_AS_GEMM && s.lead >= r->st->tensor->ndim
                      ? "GEMM-like: its epilogue's tiles compute it"
                      : "read row by row by one kernel: computed per row";
        r->n_memb++;
        if (s.lead < r->depth)
            r->depth = s.lead;
        if (nd->kind == TEXI_AS_GEMM && r->gemm < 0)
            r->gemm = i;
    }
}

/* eff_fn for texi_as_read_only_by: *ud, a root, becomes -1 when reader is
 * in another kernel. */
static void check_reader_kernel(texi_as_graph *g, int reader, int lead, void *ud)
{
    (void)lead;
    const texi_as_node *c = &g->nodes[reader];
    int *r = ud;
    if ((c->fate == TEXI_AS_ROOT ? reader : c->root) != *r)
        *r = -1;
}

bool texi_as_read_only_by(texi_as_graph *g, int i, int r)
{
    int kernel = r;
    each_eff_reader(g, i, INT32_MAX, check_reader_kernel, &kernel);
    return kernel == r;
}

/* A root's loop layout once its members are known. */
static void decide_mode(texi_as_graph *g, texi_as_node *r)
{
    int nd = r->st->tensor->ndim;
    if (r->n_memb == 0)
        r->mode = TEXI_AS_MODE_ALONE;
    else if (r->gemm >= 0 && r->depth == nd && nd >= 2 && g->nodes[r->gemm].st->tensor->ndim == nd)
        r->mode = TEXI_AS_MODE_TILES;
    else
        r->mode = TEXI_AS_MODE_ROWS;
}

int texi_as_partition(texi_as_graph *g)
{
    for (int i = g->n - 1; i >= 0; i--) {
        texi_as_node *nd = &g->nodes[i];
        if (nd->kind == TEXI_AS_INJECTIVE && !nd->st->is_output)
            decide_inline(g, i);
    }
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i].fate == TEXI_AS_INLINED)
            TEXI_TRY(tex_compute_inline(g->nodes[i].st));
    for (int i = g->n - 1; i >= 0; i--) {
        texi_as_node *nd = &g->nodes[i];
        if (nd->kind != TEXI_AS_INPUT && nd->fate != TEXI_AS_INLINED)
            decide_attach(g, i);
    }
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i].fate == TEXI_AS_ROOT)
            decide_mode(g, &g->nodes[i]);
    return 0;
}
