/*
 * Pass gpu_blocks (CPU tail, after gpu_to_cpu): the blocks of a GPU
 * schedule run in parallel on the CPU's cores.
 *
 * A CUDA grid's blocks are independent: within one kernel they share only
 * global memory, written at block-disjoint places or through atomics. So
 * each outermost nest of block loops (BLOCK_X/Y/Z, directly nested, not
 * inside a PARALLEL loop) becomes one PARALLEL loop, which the CPU printer
 * turns into `#pragma omp parallel for`. Nested block loops are collapsed
 * into one loop over the product of their extents, their variables bound
 * by LETs from the linear block number (outer dimension slowest, as
 * `collapse` would number them):
 *     for (b, 0, ny*nx) parallel { let by = miny + b / nx
 *                                  let bx = minx + b % nx   body }
 * When the body holds an IF whose condition uses a block variable (tail
 * tiles of uneven work), the loop is wrapped in ATTR "parallel_dynamic" and
 * its blocks are handed out dynamically.
 *
 * In a function where some block nest became parallel, consecutive
 * parallel loops of one SEQ (the kernels of the function, one after the
 * other) are wrapped together in ATTR "parallel_region": one OpenMP
 * thread team runs them, each loop a worksharing loop whose implicit
 * barrier orders a kernel's writes before the next one's reads, instead
 * of one team per kernel.
 *
 * The body's shared and local buffers are allocated inside the block loop
 * (ScheduleOps attaches them at or below the block); a stack temporary
 * there is the OpenMP thread's own storage, reused by every block that
 * thread runs. A nest that stores to a shared or local buffer allocated
 * outside it (which no GPU schedule produces) is left serial, as are
 * block loops nested in a PARALLEL loop. Thread loops are gpu_threads'
 * (next).
 */
#include "lower/lower.h"

#define MAX_BLOCK_LOOPS 3

typedef struct {
    const void *allocated[64]; /* keys of buffers allocated inside the nest */
    int n_allocated;
    bool unsafe; /* stores to a shared/local buffer of an outer scope */
    const tex_stmt **loops;
    int n_loops;
    bool uneven; /* an IF's condition uses a block variable */
} nest_scan;

static bool is_block_loop(const tex_stmt *s)
{
    if (s->kind != TEXI_STMT_FOR || s->u.loop.for_kind != TEXI_FOR_THREAD)
        return false;
    int tag = s->u.loop.thread_tag;
    return tag >= (int)TEX_BLOCK_X && tag <= (int)TEX_BLOCK_Z;
}

static bool allocated_inside(const nest_scan *ns, const texi_buffer *b)
{
    for (int i = 0; i < ns->n_allocated; i++)
        if (ns->allocated[i] == texi_buffer_key(b))
            return true;
    return false;
}

/* Collects the nest's allocations (parents come first in program order,
 * so an allocation is recorded before the stores under it) and checks
 * stores and conditions. */
static bool scan(const tex_stmt *s, void *ud)
{
    nest_scan *ns = ud;
    const texi_buffer *b = NULL;
    if (s->kind == TEXI_STMT_ALLOCATE) {
        if (ns->n_allocated == (int)(sizeof ns->allocated / sizeof *ns->allocated))
            ns->unsafe = true;
        else
            ns->allocated[ns->n_allocated++] = texi_buffer_key(s->u.alloc.buf);
    } else if (s->kind == TEXI_STMT_STORE) {
        b = s->u.store.buf;
    } else if (s->kind == TEXI_STMT_INTRIN) {
        for (int i = 0; i < s->u.intrin.n_args; i++)
            if (s->u.intrin.args[i].buf && s->u.intrin.args[i].buf->scope != TEXI_SCOPE_GLOBAL &&
                !allocated_inside(ns, s->u.intrin.args[i].buf))
                ns->unsafe = true;
    } else if (s->kind == TEXI_STMT_IF) {
        for (int i = 0; i < ns->n_loops; i++)
            if (texi_expr_uses_var(s->u.ifs.cond, ns->loops[i]->u.loop.var))
                ns->uneven = true;
    }
    if (b && b->scope != TEXI_SCOPE_GLOBAL && !allocated_inside(ns, b))
        ns->unsafe = true;
    return true;
}

/* The LETs binding each loop variable of the nest from the linear block b. */
static tex_stmt *bind_vars(tex_ctx *ctx, const tex_stmt *const loops[], int n, tex_expr *b,
                           tex_stmt *body)
{
    tex_expr *stride = texi_int_imm(ctx, b->dtype, 1);
    for (int i = n - 1; body && stride && i >= 0; i--) {
        const tex_stmt *l = loops[i];
        tex_expr *v = l->u.loop.var, *ext = texi_convert(l->u.loop.extent, b->dtype);
        tex_expr *id = i == n - 1 ? b : texi_binary(TEXI_EXPR_FLOORDIV, b, stride);
        if (i > 0)
            id = texi_binary(TEXI_EXPR_FLOORMOD, id, ext);
        id = texi_binary(TEXI_EXPR_ADD, texi_convert(l->u.loop.min, b->dtype), id);
        id = id ? texi_simplify(texi_convert(id, v->dtype), 0, NULL) : NULL;
        body = id ? texi_let_new(ctx, v, id, body) : NULL;
        stride = texi_binary(TEXI_EXPR_MUL, stride, ext);
    }
    return body;
}

/* Block nest s as one PARALLEL loop, or NULL to leave it (and look inside). */
static tex_stmt *parallelize(tex_ctx *ctx, tex_stmt *s)
{
    const tex_stmt *loops[MAX_BLOCK_LOOPS];
    int n = 0;
    const tex_stmt *l = s;
    for (; n < MAX_BLOCK_LOOPS && is_block_loop(l); l = l->u.loop.body)
        loops[n++] = l;
    nest_scan ns = {.loops = loops, .n_loops = n};
    texi_stmt_visit(loops[n - 1]->u.loop.body, scan, &ns);
    if (ns.unsafe)
        return NULL;
    tex_stmt *body = loops[n - 1]->u.loop.body, *r;
    if (n == 1) {
        r = texi_for_new(ctx, s->u.loop.var, s->u.loop.min, s->u.loop.extent, TEXI_FOR_PARALLEL,
                         s->u.loop.thread_tag, body);
    } else {
        tex_dtype t = s->u.loop.var->dtype == TEX_I64 ? TEX_I64 : TEX_I32;
        for (int i = 0; i < n; i++)
            if (loops[i]->u.loop.var->dtype == TEX_I64)
                t = TEX_I64;
        tex_expr *total = texi_int_imm(ctx, t, 1);
        for (int i = 0; total && i < n; i++)
            total = texi_binary(TEXI_EXPR_MUL, total, texi_convert(loops[i]->u.loop.extent, t));
        tex_expr *b = texi_var_new(ctx, "blocks", t);
        body = b ? bind_vars(ctx, loops, n, b, body) : NULL;
        total = total ? texi_simplify(total, 0, NULL) : NULL;
        r = body && total ? texi_for_new(ctx, b, texi_int_imm(ctx, t, 0), total, TEXI_FOR_PARALLEL,
                                         s->u.loop.thread_tag, body)
                          : NULL;
    }
    if (r && ns.uneven)
        r = texi_attr_named(ctx, TEXI_ATTR_PARALLEL_DYNAMIC, NULL, r);
    return r;
}

typedef struct {
    tex_ctx *ctx;
    int rc;
    int n_parallel; /* block nests made parallel */
} walk;

/* A parallel loop, maybe under "parallel_dynamic". */
static bool is_parallel(const tex_stmt *s)
{
    if (texi_attr_is(s, TEXI_ATTR_PARALLEL_DYNAMIC))
        s = s->u.attr.body;
    return s->kind == TEXI_STMT_FOR && s->u.loop.for_kind == TEXI_FOR_PARALLEL;
}

/* SEQ s with each run of two or more block loops in one parallel region. */
static tex_stmt *fuse_regions(tex_ctx *ctx, tex_stmt *s)
{
    int n = s->u.seq.n, n_out = 0;
    tex_stmt **out = texi_alloc(ctx, sizeof *out * (size_t)n, "gpu_blocks");
    if (!out)
        return NULL;
    for (int i = 0; i < n;) {
        int run = 0;
        while (i + run < n && is_parallel(s->u.seq.items[i + run]))
            run++;
        if (run < 2) {
            out[n_out++] = s->u.seq.items[i++];
            continue;
        }
        tex_stmt *seq = texi_seq_new(ctx, run, s->u.seq.items + i);
        out[n_out++] = seq ? texi_attr_named(ctx, TEXI_ATTR_PARALLEL_REGION, NULL, seq) : NULL;
        if (!out[n_out - 1])
            return NULL;
        i += run;
    }
    return n_out == n ? s : texi_seq_new(ctx, n_out, out);
}

/* Outermost block nests, outside PARALLEL loops. */
static tex_stmt *visit(tex_stmt *s, void *ud)
{
    walk *w = ud;
    if (w->rc || s->kind != TEXI_STMT_FOR)
        return NULL;
    if (s->u.loop.for_kind == TEXI_FOR_PARALLEL)
        return s; /* blocks inside run serially in the enclosing region */
    if (!is_block_loop(s))
        return NULL;
    tex_stmt *r = parallelize(w->ctx, s);
    w->n_parallel += r != NULL;
    if (!r && tex_errcode(w->ctx))
        w->rc = tex_errcode(w->ctx);
    return r ? r : s;
}

/* Every SEQ's runs of block loops fused (after visit made them). */
static tex_stmt *visit_seq(tex_stmt *s, void *ud)
{
    walk *w = ud;
    if (w->rc || s->kind != TEXI_STMT_SEQ)
        return NULL;
    tex_stmt **items = texi_alloc(w->ctx, sizeof *items * (size_t)(s->u.seq.n + 1), "gpu_blocks");
    bool changed = false;
    for (int i = 0; items && i < s->u.seq.n; i++) {
        items[i] = texi_stmt_mutate(w->ctx, s->u.seq.items[i], visit_seq, NULL, w);
        changed |= items[i] != s->u.seq.items[i];
        if (!items[i])
            items = NULL;
    }
    tex_stmt *r = items ? (changed ? texi_seq_new(w->ctx, s->u.seq.n, items) : s) : NULL;
    r = r && r->kind == TEXI_STMT_SEQ ? fuse_regions(w->ctx, r) : r;
    if (!r)
        w->rc = tex_errcode(w->ctx) ? tex_errcode(w->ctx) : TEX_ENOMEM;
    return r ? r : s;
}

int texi_pass_gpu_blocks(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    walk w = {lw->ctx, 0, 0};
    tex_stmt *r = texi_stmt_mutate(lw->ctx, in, visit, NULL, &w);
    r = r && !w.rc && w.n_parallel ? texi_stmt_mutate(lw->ctx, r, visit_seq, NULL, &w) : r;
    if (w.rc)
        return w.rc;
    return texi_pass_result(lw, r, out);
}
