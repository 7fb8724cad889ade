/*
 * Pass share_values (CPU tail, after guarded_loads): a costly value that
 * occurs more than once in a stored value is computed once, into a LET
 * around the store:
 *
 *     Y[i] = g(g(X[i]))   with g(x) = x*0.5*(1 + tanh(c*(x + k*x*x*x)))
 *     ->   let Y_v = g(X[i])
 *          Y[i] = g(Y_v)
 *
 * Inlining substitutes a producer's value for each read of it, so a chain of
 * producers that each read their input k times (gelu: 3, silu: 2) holds
 * k^depth copies of the innermost value: six gelus made 1.6 MB of C that
 * took the compiler ten seconds. Equal values are found by hashing
 * (texi_expr_hash, texi_expr_equal: variables by identity). The count walk
 * does not enter a second copy of a value it has counted, so a value counts
 * twice only when it occurs twice outside the copies of one larger value.
 *
 * Shared: floating-point values (scalars, or the vectors of simd_tail's
 * chunks and register tiles) that call a math function or have eight nodes
 * or more. The LET evaluates a value unconditionally, which guarded_loads
 * made safe for every load (a predicated one reads only where its mask
 * holds); a value that divides integers by a non-constant is shared only
 * from an unconditional place (not a select's arm nor the right of && /
 * ||: a division by zero there was never evaluated). The LETs in
 * vectorized loops are vectorized with the store by pass simd.
 */
#include "lower/lower.h"

#include <stdio.h>
#include <stdlib.h>

/* MAX_LETS: bound per store, well under pass simd's limit on the LETs
 * nested in a vector loop (guarded_loads' come on top). */
enum { MIN_NODES = 8, MAX_LETS = 12 };

/* A class of equal values: its first member, how often it occurs, and the
 * LET variable that stands for it once bound. */
typedef struct {
    tex_expr *rep;
    uint64_t hash;
    int count;
    tex_expr *var;
} value_class;

typedef struct {
    tex_ctx *ctx;
    value_class *tab; /* the current store's (malloc'ed), open addressing, cap a power of two */
    tex_expr **cond;  /* its nodes in a select's arm or right of && / || (same capacity) */
    int cap;
    texi_let_list lets; /* for the current store, innermost values first (arena) */
    const char *name;   /* the stored buffer's, for the LETs' names */
    tex_expr *skip;     /* the value being bound: its children are rewritten */
    bool failed;
} sharer;

/* Whether e may be shared: a floating-point computation (not a leaf). */
static bool candidate(const tex_expr *e)
{
    switch (e->kind) {
    case TEXI_EXPR_LOAD:
    case TEXI_EXPR_VAR:
    case TEXI_EXPR_INT:
    case TEXI_EXPR_FLOAT:
    case TEXI_EXPR_BROADCAST:
    case TEXI_EXPR_RAMP:
        return false;
    default:
        return texi_dtype_is_float(e->dtype);
    }
}

/* What a walk of a value found: its nodes, whether it calls a math
 * function, and whether evaluating it anywhere would be unsafe. */
typedef struct {
    int nodes;
    bool calls, unsafe;
} cost_scan;

static bool scan_node(tex_expr *e, void *ud)
{
    cost_scan *c = ud;
    int64_t k;
    c->nodes++;
    c->calls |= e->kind == TEXI_EXPR_CALL;
    c->unsafe |= (e->kind == TEXI_EXPR_FLOORDIV || e->kind == TEXI_EXPR_FLOORMOD) &&
                 !texi_expr_is_int_const(e->u.bin.b, &k);
    return true;
}

/* Whether sharing e pays and is safe (file comment) where it is met,
 * conditionally or not. */
static bool worth_sharing(tex_expr *e, bool conditional)
{
    cost_scan c = {0};
    texi_expr_visit(e, scan_node, &c);
    return !(c.unsafe && conditional) && (c.calls || c.nodes >= MIN_NODES);
}

/* Slot of pointer e in the set sh->cond (its own or the empty one that
 * ends its probe sequence). */
static tex_expr **cond_slot(sharer *sh, const tex_expr *e)
{
    uint64_t h = (uint64_t)(uintptr_t)e * 0x9e3779b97f4a7c15u;
    int i = (int)(h >> 40) & (sh->cap - 1);
    while (sh->cond[i] && sh->cond[i] != e)
        i = (i + 1) & (sh->cap - 1);
    return &sh->cond[i];
}

static bool mark_conditional(tex_expr *e, void *ud)
{
    *cond_slot(ud, e) = e;
    return true;
}

/* Marks the nodes of a value evaluated only under a condition: a select's
 * arms, the right operand of && / ||. */
static bool find_conditional(tex_expr *e, void *ud)
{
    switch (e->kind) {
    case TEXI_EXPR_SELECT:
        texi_expr_visit(e->u.sel.cond, find_conditional, ud);
        texi_expr_visit(e->u.sel.t, mark_conditional, ud);
        texi_expr_visit(e->u.sel.f, mark_conditional, ud);
        return false;
    case TEXI_EXPR_AND:
    case TEXI_EXPR_OR:
        texi_expr_visit(e->u.bin.a, find_conditional, ud);
        texi_expr_visit(e->u.bin.b, mark_conditional, ud);
        return false;
    default:
        return true;
    }
}

/* e's class, added with count 0 when new; NULL when the table is full. */
static value_class *class_of(sharer *sh, tex_expr *e)
{
    uint64_t h = texi_expr_hash(e);
    for (int i = (int)(h & (uint64_t)(sh->cap - 1)), n = 0; n < sh->cap;
         i = (i + 1) & (sh->cap - 1), n++) {
        value_class *c = &sh->tab[i];
        if (!c->rep) {
            *c = (value_class){e, h, 0, NULL};
            return c;
        }
        if (c->hash == h && texi_expr_equal(c->rep, e))
            return c;
    }
    return NULL;
}

static bool count_nodes(tex_expr *e, void *ud)
{
    (void)e;
    ++*(int *)ud;
    return true;
}

/* Counts the occurrences of every candidate; a second copy is not entered. */
static bool count_value(tex_expr *e, void *ud)
{
    sharer *sh = ud;
    if (!candidate(e))
        return true;
    value_class *c = class_of(sh, e);
    return c && ++c->count == 1;
}

/* The texi_expr_mutate callback: a shared value becomes its LET variable,
 * bound (its own shared values first) the first time it is met. */
static tex_expr *share(tex_expr *e, void *ud)
{
    sharer *sh = ud;
    if (e == sh->skip) {
        sh->skip = NULL;
        return NULL;
    }
    value_class *c = candidate(e) ? class_of(sh, e) : NULL;
    if (!c || c->count < 2 || (!c->var && sh->lets.n == MAX_LETS))
        return NULL;
    if (c->var)
        return c->var;
    if (!worth_sharing(e, *cond_slot(sh, e) == e))
        return NULL;
    sh->skip = e;
    tex_expr *value = texi_expr_mutate(e, share, sh);
    char name[128];
    snprintf(name, sizeof name, "%s_v", sh->name);
    tex_expr *var = texi_let_list_add(sh->ctx, &sh->lets, name, e->dtype, value, "share_values");
    if (!var) {
        sh->failed = true;
        return e;
    }
    var->lanes = value->lanes; /* a vector of simd_tail's chunks */
    return c->var = var;
}

/* The store s with its shared values bound by LETs around it; s itself
 * when none occurs twice. */
static tex_stmt *share_store(sharer *sh, tex_stmt *s)
{
    tex_expr *value = s->u.store.value;
    int n = 0;
    texi_expr_visit(value, count_nodes, &n);
    int cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    sh->tab = calloc((size_t)cap, sizeof *sh->tab);
    sh->cond = calloc((size_t)cap, sizeof *sh->cond);
    if (!sh->tab || !sh->cond) {
        free(sh->tab);
        free(sh->cond);
        sh->failed = true;
        texi_error(sh->ctx, TEX_ENOMEM, "tex_lower: pass share_values: out of memory");
        return s;
    }
    sh->cap = cap;
    sh->lets.n = 0;
    sh->name = s->u.store.buf->name;
    texi_expr_visit(value, find_conditional, sh);
    texi_expr_visit(value, count_value, sh);
    tex_expr *shared = texi_expr_mutate(value, share, sh);
    tex_stmt *r = s;
    if (!shared)
        sh->failed = true;
    else if (sh->lets.n)
        r = texi_store_at(sh->ctx, s, s->u.store.index, shared);
    r = r ? texi_let_list_wrap(sh->ctx, &sh->lets, r, 0) : NULL;
    free(sh->tab);
    free(sh->cond);
    sh->tab = NULL;
    sh->cond = NULL;
    sh->cap = 0;
    if (!r)
        sh->failed = true;
    return r ? r : s;
}

static tex_stmt *rewrite_stmt(tex_stmt *s, void *ud)
{
    sharer *sh = ud;
    if (sh->failed || s->kind != TEXI_STMT_STORE)
        return NULL;
    return share_store(sh, s);
}

int texi_pass_share_values(texi_lower *lw, tex_stmt *in, tex_stmt **out)
{
    sharer sh = {.ctx = lw->ctx};
    tex_stmt *r = texi_stmt_mutate(lw->ctx, in, rewrite_stmt, NULL, &sh);
    return texi_pass_result(lw, sh.failed ? NULL : r, out);
}
